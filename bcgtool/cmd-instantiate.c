/*
 * cmd-instantiate.c - bcgtool instantiate: rebuild a plan's graphs and check they match.
 *
 * Placeholder entry: the command is being written.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"

static int cmd_instantiate_exec(int argc, char **argv);

const struct cmd_entry cmd_instantiate_entry = {
	.name = "instantiate",
	.usage = "PLAN",
	.summary = "rebuild a plan's graphs and check they match",
	.options = "",
	.exec = cmd_instantiate_exec,
};

static int cmd_instantiate_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = cmd_getopt(&cmd_instantiate_entry, argc, argv, "h", longopts)) != -1) {
		if (c == CMD_HELP)
			return BCG_EXIT_OK;
		return BCG_EXIT_USAGE;
	}
	fprintf(stderr, "bcgtool instantiate: not built yet\n");
	return BCG_EXIT_RUNTIME;
}
