/*
 * cmd-capture.c - bcgtool capture: capture every variant of a script into a plan.
 *
 * Placeholder entry: the command is being written.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"

static int cmd_capture_exec(int argc, char **argv);

const struct cmd_entry cmd_capture_entry = {
	.name = "capture",
	.usage = "-o PLAN SCRIPT",
	.summary = "capture every variant of a script into a plan",
	.options = "",
	.exec = cmd_capture_exec,
};

static int cmd_capture_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = cmd_getopt(&cmd_capture_entry, argc, argv, "h", longopts)) != -1) {
		if (c == CMD_HELP)
			return BCG_EXIT_OK;
		return BCG_EXIT_USAGE;
	}
	fprintf(stderr, "bcgtool capture: not built yet\n");
	return BCG_EXIT_RUNTIME;
}
