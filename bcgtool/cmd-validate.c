/*
 * cmd-validate.c - bcgtool validate: check a script and show its summary.
 *
 * Placeholder entry: the command is being written.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"

static int cmd_validate_exec(int argc, char **argv);

const struct cmd_entry cmd_validate_entry = {
	.name = "validate",
	.usage = "SCRIPT",
	.summary = "check a script and show its summary",
	.options = "",
	.exec = cmd_validate_exec,
};

static int cmd_validate_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = cmd_getopt(&cmd_validate_entry, argc, argv, "h", longopts)) != -1) {
		if (c == CMD_HELP)
			return BCG_EXIT_OK;
		return BCG_EXIT_USAGE;
	}
	fprintf(stderr, "bcgtool validate: not built yet\n");
	return BCG_EXIT_RUNTIME;
}
