/*
 * cmd.c - the command table and its lookup, help and option parsing.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cmd.h"
#include "plan.h"
#include "script/script.h"
#include "util.h"

extern const struct cmd_entry cmd_bench_entry;
extern const struct cmd_entry cmd_capture_entry;
extern const struct cmd_entry cmd_diff_entry;
extern const struct cmd_entry cmd_import_entry;
extern const struct cmd_entry cmd_inspect_entry;
extern const struct cmd_entry cmd_instantiate_entry;
extern const struct cmd_entry cmd_ops_entry;
extern const struct cmd_entry cmd_replay_entry;
extern const struct cmd_entry cmd_run_entry;
extern const struct cmd_entry cmd_validate_entry;

const struct cmd_entry *const cmd_table[] = {
	&cmd_bench_entry,
	&cmd_capture_entry,
	&cmd_diff_entry,
	&cmd_import_entry,
	&cmd_inspect_entry,
	&cmd_instantiate_entry,
	&cmd_ops_entry,
	&cmd_replay_entry,
	&cmd_run_entry,
	&cmd_validate_entry,
	NULL
};

const struct cmd_entry *cmd_find(const char *name)
{
	const struct cmd_entry *const *e, *found = NULL;
	size_t n = strlen(name);
	int matches = 0;

	for (e = cmd_table; *e != NULL; e++) {
		if (strcmp((*e)->name, name) == 0)
			return *e;
		if ((*e)->alias != NULL && strcmp((*e)->alias, name) == 0)
			return *e;
	}
	for (e = cmd_table; *e != NULL; e++) {
		if (n > 0 && strncmp((*e)->name, name, n) == 0) {
			found = *e;
			matches++;
		}
	}
	if (matches == 1)
		return found;
	if (matches == 0) {
		fprintf(stderr, "bcgtool: unknown command: %s (see 'bcgtool --help')\n", name);
		return NULL;
	}
	fprintf(stderr, "bcgtool: ambiguous command: %s, could be:", name);
	for (e = cmd_table; *e != NULL; e++)
		if (strncmp((*e)->name, name, n) == 0)
			fprintf(stderr, " %s", (*e)->name);
	fputc('\n', stderr);
	return NULL;
}

void cmd_print_help(const struct cmd_entry *entry, FILE *f)
{
	fprintf(f, "usage: bcgtool %s %s\n\n%s\n", entry->name, entry->usage, entry->summary);
	if (entry->options != NULL && entry->options[0] != '\0')
		fprintf(f, "\noptions:\n%s", entry->options);
}

int cmd_usage_error(const struct cmd_entry *entry, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bcgtool %s: ", entry->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: bcgtool %s %s\n", entry->name, entry->usage);
	return BCG_EXIT_USAGE;
}

int cmd_getopt(const struct cmd_entry *entry, int argc, char **argv,
               const char *shortopts, const struct option *longopts)
{
	int c, prev = optind;

	opterr = 0;
	c = getopt_long(argc, argv, shortopts, longopts, NULL);
	if (c == 'h') {
		cmd_print_help(entry, stdout);
		return CMD_HELP;
	}
	if (c == '?' || c == ':') {
		const char *arg = prev < argc ? argv[prev] : "";
		if (optopt != 0 && arg[0] == '-' && arg[1] != '-') {
			if (c == ':' || strchr(shortopts, optopt) != NULL)
				cmd_usage_error(entry, "option -%c needs an argument", optopt);
			else
				cmd_usage_error(entry, "unknown option -%c", optopt);
		} else if (optopt != 0) {
			cmd_usage_error(entry, "option %s needs an argument", arg);
		} else {
			/* an unknown or ambiguous long option, or an argument
			 * given to one that takes none */
			const char *eq = strchr(arg, '=');
			const struct option *o;
			for (o = longopts; eq != NULL && o->name != NULL; o++)
				if (strncmp(arg + 2, o->name, (size_t)(eq - arg - 2)) == 0 &&
				    o->has_arg == no_argument)
					break;
			if (eq != NULL && o->name != NULL)
				cmd_usage_error(entry, "option --%s takes no argument", o->name);
			else
				cmd_usage_error(entry, "unknown option %s", arg);
		}
		return CMD_BAD;
	}
	return c;
}

int cmd_parse_int(const struct cmd_entry *entry, const char *opt, const char *arg,
                  long long min, long long max, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (arg[0] == '\0' || *end != '\0' || errno == ERANGE || v < min || v > max) {
		cmd_usage_error(entry, "%s takes a whole number from %lld to %lld, not '%s'",
		                opt, min, max, arg);
		return -1;
	}
	*out = v;
	return 0;
}

const char *cmd_default_backend(void)
{
	const char *b = getenv("BCG_BACKEND");
	return b != NULL && b[0] != '\0' ? b : "auto";
}

int cmd_check_backend(const struct cmd_entry *entry, const char *name)
{
	if (strcmp(name, "auto") == 0 || backend_find(name) != NULL)
		return 0;
	if (strcmp(name, "cuda") == 0)
		cmd_usage_error(entry, "this bcgtool was built without CUDA: use --backend host");
	else
		cmd_usage_error(entry, "unknown backend '%s' (auto, host%s)", name,
		                backend_find("cuda") ? ", cuda" : "");
	return -1;
}

int cmd_read_plan(const char *path, plan_t **out)
{
	struct plan_diag diag = { 0 };
	int rc = plan_read_file(path, NULL, out, &diag);

	if (rc == PLAN_OK)
		return BCG_EXIT_OK;
	if (diag.message[0] != '\0')
		fprintf(stderr, "bcgtool: %s: %s: %s\n", path, plan_strerror(rc), diag.message);
	else
		fprintf(stderr, "bcgtool: %s: %s\n", path, plan_strerror(rc));
	return rc == PLAN_ERR_NOMEM ? BCG_EXIT_RUNTIME : BCG_EXIT_USAGE;
}

int cmd_read_script(const char *path, struct script **out)
{
	struct script_error err;

	if (script_load(path, out, &err) == 0)
		return BCG_EXIT_OK;
	bcg_error_at(path, err.line, err.col, "%s", err.message);
	return BCG_EXIT_USAGE;
}
