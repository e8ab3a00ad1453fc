/*
 * cmd-profile.c - bcgtool profile: replay a plan under Nsight Systems with
 * CUDA, NVTX and per-node graph tracing, export the report to SQLite and
 * report on it as `bcgtool report` does.
 *
 * Some installations of nsys leave only a raw .qdstrm capture whose import
 * needs libraries they lack: profile then runs the importer that comes
 * with nsys, and says what to do when that fails too. A site's own wrapper
 * (--wrapper CMD: run as CMD REPORT COMMAND..., leaving REPORT.nsys-rep)
 * can replace `nsys profile` altogether.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "plan.h"
#include "profile/nsys-run.h"
#include "profile/nsys.h"
#include "profile/run.h"
#include "util.h"

static int cmd_profile_exec(int argc, char **argv);

const struct cmd_entry cmd_profile_entry = {
	.name = "profile",
	.usage = "[--nsys PATH] [--wrapper CMD] [-o REPORT] [report options] PLAN "
	         "[replay options]",
	.summary = "replay a plan under Nsight Systems and report per op",
	.options =
		"  -o, --output REPORT  write REPORT.nsys-rep and its export REPORT.sqlite\n"
		"                       (default: the plan's name without .plan, here)\n"
		"      --nsys PATH      the nsys to run (default: $BCG_NSYS, PATH,\n"
		"                       /opt/nvidia, /usr/local/cuda*)\n"
		"      --wrapper CMD    profile with CMD REPORT COMMAND... instead of nsys\n"
		"                       profile (default: $BCG_NSYS_WRAPPER); CMD must trace\n"
		"                       cuda,nvtx with --cuda-graph-trace=node and leave\n"
		"                       REPORT.nsys-rep\n"
		"  -t, --tokens T       (report) the variant replayed; also passed to replay\n"
		"      --top N          (report) rows of the op, step and unattributed tables\n"
		"      --json           (report) print JSON instead of tables\n"
		"      --svg FILE       (report) an SVG timeline of one step\n"
		"      --step K         (report) the step of --svg\n"
		"      --trace-json FILE  (report) the steps as a Chrome trace\n"
		"  -h, --help           show this help\n"
		"Options after PLAN go to `bcgtool replay` (see bcgtool-replay(1)).\n",
	.exec = cmd_profile_exec,
};

static int exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* "dir/model.plan" -> "model"; "x.nsys-rep" -> "x". */
static char *report_base(const char *output, const char *plan)
{
	const char *name = output;
	size_t n;

	if (name == NULL) {
		const char *slash = strrchr(plan, '/');
		name = slash ? slash + 1 : plan;
		n = strlen(name);
		if (n > 5 && strcmp(name + n - 5, ".plan") == 0)
			n -= 5;
		return xasprintf("%.*s", (int)n, name);
	}
	n = strlen(name);
	if (n > 9 && strcmp(name + n - 9, ".nsys-rep") == 0)
		n -= 9;
	return xasprintf("%.*s", (int)n, name);
}

/* The profiled run: nsys profile (or the wrapper) around bcgtool replay. */
static int run_profiler(const char *nsys, const char *wrapper, const char *base, const char *self,
                        char **replay_args, int nreplay, const char *plan, int64_t tokens)
{
	char **argv = xcalloc((size_t)nreplay + 20, sizeof *argv);
	char tokens_arg[32];
	int n = 0, rc;

	if (wrapper != NULL) {
		argv[n++] = (char *)wrapper;
		argv[n++] = (char *)base;
	} else {
		argv[n++] = (char *)nsys;
		argv[n++] = (char *)"profile";
		argv[n++] = (char *)"--trace=cuda,nvtx";
		argv[n++] = (char *)"--cuda-graph-trace=node";
		argv[n++] = (char *)"--force-overwrite";
		argv[n++] = (char *)"true";
		argv[n++] = (char *)"-o";
		argv[n++] = (char *)base;
	}
	argv[n++] = (char *)self;
	argv[n++] = (char *)"replay";
	if (tokens != 0) {
		snprintf(tokens_arg, sizeof tokens_arg, "--tokens=%lld", (long long)tokens);
		argv[n++] = tokens_arg;
	}
	for (int i = 0; i < nreplay; i++)
		argv[n++] = replay_args[i];
	argv[n++] = (char *)plan;
	argv[n] = NULL;
	rc = nsys_spawn(argv);
	free(argv);
	return rc;
}

/* Turn a raw capture into a report with the importer beside nsys. */
static int import_qdstrm(const char *nsys, const char *qdstrm, const char *rep)
{
	char *importer = nsys_find_importer(nsys);
	int rc = -1;

	if (importer != NULL) {
		char *argv[] = { importer, (char *)"-i", (char *)qdstrm, NULL };
		rc = nsys_spawn(argv);
		free(importer);
	}
	if (rc == 0 && exists(rep)) {
		unlink(qdstrm);
		return 0;
	}
	bcg_error("nsys left only %s, a raw capture, and %s; import it where Nsight Systems "
	          "is complete (QdstrmImporter -i %s), or profile through a wrapper that does "
	          "(--wrapper CMD)", qdstrm,
	          rc < 0 ? "no QdstrmImporter comes with it"
	                 : "its QdstrmImporter failed (libraries it needs may be missing here)",
	          qdstrm);
	return -1;
}

static int cmd_profile_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "wrapper", required_argument, NULL, 'W' },
		{ "tokens", required_argument, NULL, 't' },
		{ "top", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'J' },
		{ "svg", required_argument, NULL, 'S' },
		{ "step", required_argument, NULL, 'K' },
		{ "trace-json", required_argument, NULL, 'R' },
		{ "nsys", required_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_profile_entry;
	struct report_opts o = { .top = 10, .step = -1 };
	const char *output = NULL, *wrapper = getenv("BCG_NSYS_WRAPPER"), *plan_path;
	char *nsys = NULL, *base = NULL, *rep = NULL, *qdstrm = NULL, *sqlite = NULL;
	char exe[PATH_MAX], msg[512];
	plan_t *plan = NULL;
	ssize_t n;
	int c, rc;

	if (wrapper != NULL && wrapper[0] == '\0')
		wrapper = NULL;
	while ((c = cmd_getopt(self, argc, argv, "+o:t:h", longopts)) != -1) {
		if (c == CMD_HELP)
			return BCG_EXIT_OK;
		if (c == CMD_BAD)
			return BCG_EXIT_USAGE;
		if (c == 'o')
			output = optarg;
		else if (c == 'W')
			wrapper = optarg;
		else if (cmd_report_option(self, c, &o) != 0)
			return BCG_EXIT_USAGE;
	}
	if (optind >= argc)
		return cmd_usage_error(self, "no plan given");
	if (o.step >= 0 && o.svg == NULL)
		return cmd_usage_error(self, "--step picks the step of --svg: give --svg FILE");
	plan_path = argv[optind];
	if (!nsys_have_sqlite()) {
		bcg_error("%s", NSYS_NO_SQLITE_MSG);
		return BCG_EXIT_USAGE;
	}
	if ((rc = cmd_read_plan(plan_path, &plan)) != BCG_EXIT_OK)
		return rc;
	plan_free(plan);
	/* nsys exports the report even when a wrapper profiles. */
	if ((nsys = nsys_locate(o.nsys, msg, sizeof msg)) == NULL) {
		if (wrapper != NULL)
			bcg_error("the wrapper %s profiles, but nsys is still needed to export its "
			          "report to SQLite: %s", wrapper, msg);
		else
			bcg_error("%s", msg);
		return BCG_EXIT_USAGE;
	}
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) < 0) {
		bcg_error("cannot find this program's path: %s", strerror(errno));
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	exe[n] = '\0';
	base = report_base(output, plan_path);
	rep = xasprintf("%s.nsys-rep", base);
	qdstrm = xasprintf("%s.qdstrm", base);
	sqlite = xasprintf("%s.sqlite", base);
	/* Nothing stale may pass for this run's report. */
	unlink(rep);
	unlink(qdstrm);
	unlink(sqlite);

	rc = run_profiler(nsys, wrapper, base, exe, argv + optind + 1, argc - optind - 1, plan_path,
	                  o.tokens);
	if (!exists(rep) && exists(qdstrm) && import_qdstrm(nsys, qdstrm, rep) != 0) {
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (!exists(rep)) {
		bcg_error("%s wrote no %s (exit status %d)", wrapper ? wrapper : nsys, rep, rc);
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (rc != 0)
		bcg_warn("the profiled replay exited with status %d; reporting what it left", rc);
	if ((rc = nsys_export(nsys, rep, sqlite, msg, sizeof msg)) != 0) {
		bcg_error("%s: %s", rep, msg);
		goto out;
	}
	bcg_note("profile in %s, its SQLite export in %s", rep, sqlite);
	rc = report_run(&o, sqlite, plan_path);
out:
	free(nsys);
	free(base);
	free(rep);
	free(qdstrm);
	free(sqlite);
	return rc;
}
