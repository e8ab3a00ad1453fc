/*
 * cmd-run.c - bcgtool run: run eager forward steps of a script.
 *
 * Placeholder entry: the command is being written.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"

static int cmd_run_exec(int argc, char **argv);

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.usage = "SCRIPT",
	.summary = "run eager forward steps of a script",
	.options = "",
	.exec = cmd_run_exec,
};

static int cmd_run_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = cmd_getopt(&cmd_run_entry, argc, argv, "h", longopts)) != -1) {
		if (c == CMD_HELP)
			return BCG_EXIT_OK;
		return BCG_EXIT_USAGE;
	}
	fprintf(stderr, "bcgtool run: not built yet\n");
	return BCG_EXIT_RUNTIME;
}
