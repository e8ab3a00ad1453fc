/*
 * main.c - bcgtool: breakable CUDA graphs, captured into segment plans that
 * can be inspected, diffed, instantiated and replayed.
 *
 * main() checks the library, handles the global options and hands the rest
 * of the command line to one subcommand from the table in cmd.c.
 */
#include "config.h"

#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "plan.h"
#include "util.h"

static void usage(FILE *f)
{
	const struct cmd_entry *const *e;

	fprintf(f, "usage: bcgtool [--version] [--help] [--quiet] COMMAND [ARGS...]\n\n"
	           "Capture a forward step as CUDA-graph segments and eager breakpoints,\n"
	           "and inspect, compare, instantiate and replay the resulting plans.\n\n"
	           "commands:\n");
	for (e = cmd_table; *e != NULL; e++)
		fprintf(f, "  %-12s %s\n", (*e)->name, (*e)->summary);
	fprintf(f, "\nRun 'bcgtool COMMAND --help' for a command's options; "
	           "see bcgtool(1).\n");
}

int main(int argc, char **argv)
{
	const struct cmd_entry *entry;

	/* Numbers in output and scripts use '.' whatever the environment. */
	setlocale(LC_ALL, "C");
	/* Notes and errors appear when they happen, whatever stderr is. */
	setvbuf(stderr, NULL, _IONBF, 0);
	bcg_signals_install();

	if (plan_version_number() != PLAN_VERSION_NUMBER) {
		fprintf(stderr, "bcgtool: libplan %u does not match the %u bcgtool was built with\n",
		        plan_version_number(), (unsigned)PLAN_VERSION_NUMBER);
		return BCG_EXIT_RUNTIME;
	}
	if (bcg_progress_check_env() != NULL) {
		fprintf(stderr, "bcgtool: environment: BCG_PROGRESS='%s' is not always, plain or "
		        "never\n", bcg_progress_check_env());
		return BCG_EXIT_USAGE;
	}
	while (argc >= 2 && (strcmp(argv[1], "-q") == 0 || strcmp(argv[1], "--quiet") == 0)) {
		bcg_set_quiet(1);
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	if (argc < 2) {
		usage(stderr);
		return BCG_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return BCG_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		cmd_print_version(stdout);
		return BCG_EXIT_OK;
	}
	if (strcmp(argv[1], "help") == 0) {
		if (argc < 3) {
			usage(stdout);
			return BCG_EXIT_OK;
		}
		if ((entry = cmd_find(argv[2])) == NULL)
			return BCG_EXIT_USAGE;
		cmd_print_help(entry, stdout);
		return BCG_EXIT_OK;
	}
	if (argv[1][0] == '-') {
		fprintf(stderr, "bcgtool: unknown option %s\n", argv[1]);
		usage(stderr);
		return BCG_EXIT_USAGE;
	}
	if ((entry = cmd_find(argv[1])) == NULL)
		return BCG_EXIT_USAGE;
	return entry->exec(argc - 1, argv + 1);
}
