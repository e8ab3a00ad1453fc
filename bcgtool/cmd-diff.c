/*
 * cmd-diff.c - bcgtool diff: show the structural differences between two plans.
 *
 * Placeholder entry: the command is being written.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"

static int cmd_diff_exec(int argc, char **argv);

const struct cmd_entry cmd_diff_entry = {
	.name = "diff",
	.usage = "A B",
	.summary = "show the structural differences between two plans",
	.options = "",
	.exec = cmd_diff_exec,
};

static int cmd_diff_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = cmd_getopt(&cmd_diff_entry, argc, argv, "h", longopts)) != -1) {
		if (c == CMD_HELP)
			return BCG_EXIT_OK;
		return BCG_EXIT_USAGE;
	}
	fprintf(stderr, "bcgtool diff: not built yet\n");
	return BCG_EXIT_RUNTIME;
}
