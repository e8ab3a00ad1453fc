/*
 * cmd.c - the command table and its lookup, help and option parsing.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "backend.h"
#include "cmd.h"
#include "engine/engine.h"
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
extern const struct cmd_entry cmd_profile_entry;
extern const struct cmd_entry cmd_record_entry;
extern const struct cmd_entry cmd_replay_entry;
extern const struct cmd_entry cmd_report_entry;
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
	&cmd_profile_entry,
	&cmd_record_entry,
	&cmd_replay_entry,
	&cmd_report_entry,
	&cmd_run_entry,
	&cmd_validate_entry,
	NULL
};

/* script/suggest.c's "did you mean" (declared in script/internal.h, which
 * brings the parser's headers): the closest of CANDIDATES, or NULL. */
const char *suggest_name(const char *name, const char *const *candidates, size_t n);

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
		const char *names[64], *best;
		size_t k = 0;
		for (e = cmd_table; *e != NULL && k < 64; e++)
			names[k++] = (*e)->name;
		if ((best = suggest_name(name, names, k)) != NULL)
			fprintf(stderr, "bcgtool: unknown command: %s (did you mean '%s'? see "
			        "'bcgtool --help')\n", name, best);
		else
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

/* The options every command takes, handled here (bcgtool(1), COMMON
 * OPTIONS). */
static const char common_options[] =
	"  -q, --quiet        print no notes and no progress\n"
	"  -V, --version      print the version\n";

void cmd_print_help(const struct cmd_entry *entry, FILE *f)
{
	fprintf(f, "usage: bcgtool %s %s\n\n%s\n", entry->name, entry->usage, entry->summary);
	if (entry->options != NULL && entry->options[0] != '\0')
		fprintf(f, "\noptions:\n%s", entry->options);
	fprintf(f, "\ncommon options (bcgtool(1)):\n%s", common_options);
}

void cmd_print_version(FILE *f)
{
	/* inspect shows the version a file was written in: the oldest that
	 * holds its plan, so often below this one. */
	fprintf(f, "bcgtool %s (plan format %d.%d: reads any %d.x, writes each plan in the oldest "
	        "version that holds it)\n", PACKAGE_VERSION, PLAN_FORMAT_MAJOR, PLAN_FORMAT_MINOR,
	        PLAN_FORMAT_MAJOR);
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

/* The long option ARG ("--name" or "--name=value") names, exactly or as
 * an unambiguous prefix; NULL when none or several. */
static const struct option *long_option(const char *arg, const struct option *longopts)
{
	const struct option *o, *found = NULL;
	size_t n = strcspn(arg + 2, "=");
	int matches = 0;

	for (o = longopts; o->name != NULL; o++) {
		if (strncmp(arg + 2, o->name, n) != 0)
			continue;
		if (strlen(o->name) == n)
			return o;
		found = o;
		matches++;
	}
	return matches == 1 ? found : NULL;
}

/* "unknown option --stpes (did you mean '--steps'?)". */
static void getopt_unknown_long(const struct cmd_entry *entry, const char *arg,
                                const struct option *longopts)
{
	const char *names[128], *best;
	char given[64];
	size_t k = 0, n = strcspn(arg + 2, "=");

	snprintf(given, sizeof given, "%.*s", (int)n, arg + 2);
	for (const struct option *o = longopts; o->name != NULL && k < 128; o++)
		names[k++] = o->name;
	if ((best = suggest_name(given, names, k)) != NULL)
		cmd_usage_error(entry, "unknown option %.*s (did you mean '--%s'?)", (int)(n + 2), arg,
		                best);
	else
		cmd_usage_error(entry, "unknown option %.*s", (int)(n + 2), arg);
}

static void getopt_error(const struct cmd_entry *entry, int c, const char *arg,
                         const char *shortopts, const struct option *longopts)
{
	if (arg[0] == '-' && arg[1] == '-') {
		const struct option *o = long_option(arg, longopts);
		if (o != NULL && strchr(arg, '=') != NULL && o->has_arg == no_argument)
			cmd_usage_error(entry, "option --%s takes no argument", o->name);
		else if (o != NULL && o->has_arg == required_argument)
			cmd_usage_error(entry, "option --%s needs an argument", o->name);
		else
			getopt_unknown_long(entry, arg, longopts);
	} else if (optopt != 0 && (c == ':' || strchr(shortopts, optopt) != NULL)) {
		cmd_usage_error(entry, "option -%c needs an argument", optopt);
	} else if (optopt != 0) {
		cmd_usage_error(entry, "unknown option -%c", optopt);
	} else {
		cmd_usage_error(entry, "unknown option %s", arg);
	}
}

int cmd_getopt(const struct cmd_entry *entry, int argc, char **argv,
               const char *shortopts, const struct option *longopts)
{
	/* The command's options and the common ones, -q and -V. */
	enum { OPT_QUIET = 'q', OPT_VERSION = 'V' };
	size_t nlong = 0, nshort = strlen(shortopts);
	struct option *all;
	char *sall;
	int c, prev;

	while (longopts[nlong].name != NULL)
		nlong++;
	all = xcalloc(nlong + 3, sizeof *all);
	memcpy(all, longopts, nlong * sizeof *all);
	all[nlong] = (struct option){ "quiet", no_argument, NULL, OPT_QUIET };
	all[nlong + 1] = (struct option){ "version", no_argument, NULL, OPT_VERSION };
	sall = xmalloc(nshort + 3);
	memcpy(sall, shortopts, nshort);
	memcpy(sall + nshort, "qV", 3);

	opterr = 0;
	for (;;) {
		prev = optind;
		c = getopt_long(argc, argv, sall, all, NULL);
		if (c == OPT_QUIET) {
			bcg_set_quiet(1);
			continue;
		}
		if (c == OPT_VERSION) {
			cmd_print_version(stdout);
			c = CMD_HELP;
		} else if (c == 'h') {
			cmd_print_help(entry, stdout);
			c = CMD_HELP;
		} else if (c == '?' || c == ':') {
			getopt_error(entry, c, prev < argc ? argv[prev] : "", shortopts, all);
			c = CMD_BAD;
		}
		break;
	}
	free(all);
	free(sall);
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

int cmd_parse_var(const struct cmd_entry *entry, const char *opt, char *arg,
                  struct engine_var_range *r, uint32_t *n)
{
	char *eq = strchr(arg, '='), *end;
	long long v[2];
	const char *p;
	int k = 0;

	if (eq == NULL || eq == arg)
		goto bad;
	for (p = eq + 1;; p = end + 1) {
		errno = 0;
		v[k] = strtoll(p, &end, 10);
		if (end == p || errno == ERANGE || v[k] < 0 || v[k] > INT32_MAX)
			goto bad;
		k++;
		if (*end == '\0')
			break;
		if (*end != ':' || k == 2)
			goto bad;
	}
	if (k == 1)
		v[1] = v[0];
	if (v[0] > v[1]) {
		cmd_usage_error(entry, "%s %s: the start is above the limit", opt, arg);
		return -1;
	}
	if (*n == ENGINE_VAR_RANGES_MAX) {
		cmd_usage_error(entry, "%s: at most %d", opt, ENGINE_VAR_RANGES_MAX);
		return -1;
	}
	*eq = '\0';
	for (uint32_t i = 0; i < *n; i++)
		if (strcmp(r[i].name, arg) == 0) {
			cmd_usage_error(entry, "%s: '%s' given twice", opt, arg);
			return -1;
		}
	r[*n].name = arg;
	r[*n].start = v[0];
	r[*n].limit = v[1];
	r[*n].step = 0;
	(*n)++;
	return 0;
bad:
	cmd_usage_error(entry, "%s takes NAME=START:LIMIT or NAME=VALUE, whole numbers from 0 "
	                "to %d, not '%s'", opt, INT32_MAX, arg);
	return -1;
}

const char *cmd_default_backend(void)
{
	const char *b = getenv("BCG_BACKEND");
	return b != NULL && b[0] != '\0' ? b : "auto";
}

void cmd_note_host_timings(void)
{
	bcg_note("host timings do not model CUDA graphs: every op runs on the CPU, so figures "
	         "about graphs (busy time, idle gaps, break costs) are left out");
}

int cmd_check_backend(const struct cmd_entry *entry, const char *name)
{
	const char *env = getenv("BCG_BACKEND");

	if (strcmp(name, "auto") == 0 || backend_find(name) != NULL)
		return 0;
	if (env != NULL && name == env) {
		/* Not the command line's fault: no usage line. */
		if (strcmp(name, "cuda") == 0)
			bcg_error("environment: BCG_BACKEND='cuda', but this bcgtool was built "
			          "without CUDA");
		else
			bcg_error("environment: BCG_BACKEND='%s' is not auto, host%s", name,
			          backend_find("cuda") ? " or cuda" : "");
		return -1;
	}
	if (strcmp(name, "cuda") == 0)
		cmd_usage_error(entry, "this bcgtool was built without CUDA: use --backend host");
	else
		cmd_usage_error(entry, "unknown backend '%s' (auto, host%s)", name,
		                backend_find("cuda") ? ", cuda" : "");
	return -1;
}

/* A file that would not read and is named as the temporary file of a
 * write: say whose it is, so that nobody takes it for a broken plan. */
static void cmd_note_temp(const char *path)
{
	const char *slash = strrchr(path, '/');
	long pid;

	if (!bcg_temp_owner(slash ? slash + 1 : path, &pid))
		return;
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		bcg_note("%s is the temporary file of a write by process %ld, which ended before "
		         "it finished; the next write into its directory removes it", path, pid);
	else
		bcg_note("%s is the temporary file of a write by process %ld, still running", path,
		         pid);
}

int cmd_read_plan(const char *path, plan_t **out)
{
	struct plan_diag diag = { 0 };
	int rc;

	if (strcmp(path, "-") == 0) {
		char *data;
		size_t len;
		if (bcg_read_input(path, &data, &len) != 0)
			return BCG_EXIT_USAGE;
		rc = plan_read_memory(data, len, NULL, out, &diag);
		free(data);
		path = "standard input";
	} else {
		rc = plan_read_file(path, NULL, out, &diag);
	}
	if (rc == PLAN_OK)
		return BCG_EXIT_OK;
	if (rc == PLAN_ERR_IO && strncmp(diag.message, path, strlen(path)) == 0 &&
	    strncmp(diag.message + strlen(path), ": open failed: ", 15) == 0)
		/* A file that cannot be opened is worded as every input's is. */
		fprintf(stderr, "bcgtool: %s: cannot read: %s\n", path,
		        diag.message + strlen(path) + 15);
	else if (rc == PLAN_ERR_IO && strncmp(diag.message, path, strlen(path)) == 0)
		/* libplan's sentence names the file and what failed: "PATH:
		 * is a directory". */
		fprintf(stderr, "bcgtool: %s\n", diag.message);
	else if (diag.message[0] != '\0')
		fprintf(stderr, "bcgtool: %s: %s: %s\n", path, plan_strerror(rc), diag.message);
	else
		fprintf(stderr, "bcgtool: %s: %s\n", path, plan_strerror(rc));
	cmd_note_temp(path);
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
