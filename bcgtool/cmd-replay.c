/*
 * cmd-replay.c - bcgtool replay: replay a plan for a number of steps.
 *
 * Placeholder entry: the command is being written.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"

static int cmd_replay_exec(int argc, char **argv);

const struct cmd_entry cmd_replay_entry = {
	.name = "replay",
	.usage = "PLAN",
	.summary = "replay a plan for a number of steps",
	.options = "",
	.exec = cmd_replay_exec,
};

static int cmd_replay_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = cmd_getopt(&cmd_replay_entry, argc, argv, "h", longopts)) != -1) {
		if (c == CMD_HELP)
			return BCG_EXIT_OK;
		return BCG_EXIT_USAGE;
	}
	fprintf(stderr, "bcgtool replay: not built yet\n");
	return BCG_EXIT_RUNTIME;
}
