/*
 * cmd-inspect.c - bcgtool inspect: show what a plan holds.
 *
 * Placeholder entry: the command is being written.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"

static int cmd_inspect_exec(int argc, char **argv);

const struct cmd_entry cmd_inspect_entry = {
	.name = "inspect",
	.usage = "PLAN",
	.summary = "show what a plan holds",
	.options = "",
	.exec = cmd_inspect_exec,
};

static int cmd_inspect_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = cmd_getopt(&cmd_inspect_entry, argc, argv, "h", longopts)) != -1) {
		if (c == CMD_HELP)
			return BCG_EXIT_OK;
		return BCG_EXIT_USAGE;
	}
	fprintf(stderr, "bcgtool inspect: not built yet\n");
	return BCG_EXIT_RUNTIME;
}
