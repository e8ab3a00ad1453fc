/*
 * cmd-ops.c - bcgtool ops: list the op kinds.
 *
 * Placeholder entry: the command is being written.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"

static int cmd_ops_exec(int argc, char **argv);

const struct cmd_entry cmd_ops_entry = {
	.name = "ops",
	.usage = "",
	.summary = "list the op kinds",
	.options = "",
	.exec = cmd_ops_exec,
};

static int cmd_ops_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = cmd_getopt(&cmd_ops_entry, argc, argv, "h", longopts)) != -1) {
		if (c == CMD_HELP)
			return BCG_EXIT_OK;
		return BCG_EXIT_USAGE;
	}
	fprintf(stderr, "bcgtool ops: not built yet\n");
	return BCG_EXIT_RUNTIME;
}
