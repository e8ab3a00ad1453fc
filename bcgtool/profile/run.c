/*
 * run.c - read a profile, join it to its plan, write what was asked.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "nsys-run.h"
#include "nsys.h"
#include "report.h"
#include "run.h"
#include "util.h"

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

char *report_sqlite_path(const char *rep)
{
	size_t n = strlen(rep);

	if (ends_with(rep, ".nsys-rep"))
		n -= strlen(".nsys-rep");
	return xasprintf("%.*s.sqlite", (int)n, rep);
}

/* An .nsys-rep is exported next to itself, unless an export newer than it
 * is already there. */
static int export_report(const struct report_opts *o, const char *rep, char **out)
{
	struct stat a, b;
	char msg[512];
	char *nsys, *sqlite = report_sqlite_path(rep);
	int rc;

	if (stat(rep, &a) != 0) {
		bcg_error("%s: cannot read: %s", rep, strerror(errno));
		free(sqlite);
		return BCG_EXIT_USAGE;
	}
	if (stat(sqlite, &b) == 0 && b.st_mtime >= a.st_mtime) {
		*out = sqlite;
		return 0;
	}
	if ((nsys = nsys_locate(o->nsys, msg, sizeof msg)) == NULL) {
		bcg_error("%s: an Nsight Systems report; exporting it needs nsys (%s), or give its "
		          "SQLite export (nsys export --type sqlite)", rep, msg);
		free(sqlite);
		return BCG_EXIT_USAGE;
	}
	rc = nsys_export(nsys, rep, sqlite, msg, sizeof msg);
	free(nsys);
	if (rc != 0) {
		bcg_error("%s: %s", rep, msg);
		free(sqlite);
		return rc;
	}
	*out = sqlite;
	return 0;
}

int report_run(const struct report_opts *o, const char *report, const char *plan_path)
{
	struct report_names names = { .report = report, .plan = plan_path };
	struct nsys_trace trace = { 0 };
	struct profile prof = { 0 };
	plan_t *plan = NULL;
	char *sqlite = NULL;
	char msg[1024];
	int rc;

	if (!nsys_have_sqlite()) {
		bcg_error("%s", NSYS_NO_SQLITE_MSG);
		return BCG_EXIT_USAGE;
	}
	if ((rc = cmd_read_plan(plan_path, &plan)) != BCG_EXIT_OK)
		return rc;
	if (plan_get_dist(plan)->world > 1) {
		bcg_error("%s: a plan of %u ranks takes one report per rank, rank 0's first: 1 "
		          "given", plan_path, plan_get_dist(plan)->world);
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	if (ends_with(report, ".nsys-rep")) {
		if ((rc = export_report(o, report, &sqlite)) != 0)
			goto out;
		names.report = sqlite;
	}
	if ((rc = nsys_read(names.report, &trace, msg, sizeof msg)) != 0) {
		bcg_error("%s: %s", names.report, msg);
		goto out;
	}
	if ((rc = profile_build(plan, &trace, o->tokens, &prof, msg, sizeof msg)) != 0) {
		bcg_error("%s: %s", names.report, msg);
		goto out;
	}
	if (o->step >= (int64_t)prof.nsteps) {
		bcg_error("%s: --step %lld: the report has %u steps of the plan (0 to %u)",
		          names.report, (long long)o->step, prof.nsteps, prof.nsteps - 1);
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	if (o->svg != NULL &&
	    report_svg(o->svg, &prof, o->step < 0 ? profile_typical_step(&prof) : (uint32_t)o->step,
	               msg, sizeof msg) != 0) {
		bcg_error("%s: %s", o->svg, msg);
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (o->trace != NULL && report_trace(o->trace, &prof, msg, sizeof msg) != 0) {
		bcg_error("%s: %s", o->trace, msg);
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (o->json)
		report_json(stdout, &prof, &names);
	else
		report_text(stdout, &prof, &names, o->top);
	rc = fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
out:
	profile_release(&prof);
	nsys_release(&trace);
	plan_free(plan);
	free(sqlite);
	return rc;
}

int report_run_ranks(const struct report_opts *o, char *const *reports, uint32_t nreports,
                     const char *plan_path)
{
	struct nsys_trace *traces = NULL;
	struct profile *profs = NULL;
	struct report_names *names = NULL;
	char **sqlite = NULL;
	plan_t *plan = NULL;
	uint32_t world, r, built = 0;
	char msg[1024];
	int rc;

	if (!nsys_have_sqlite()) {
		bcg_error("%s", NSYS_NO_SQLITE_MSG);
		return BCG_EXIT_USAGE;
	}
	if ((rc = cmd_read_plan(plan_path, &plan)) != BCG_EXIT_OK)
		return rc;
	world = plan_get_dist(plan)->world;
	if (world < 2) {
		bcg_error("%s: a plan of one rank takes one report, not %u (several reports are "
		          "the ranks of a tensor-parallel plan)", plan_path, nreports);
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	if (nreports != world) {
		bcg_error("%s: a plan of %u ranks takes one report per rank, rank 0's first: %u "
		          "given", plan_path, world, nreports);
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	traces = xcalloc(world, sizeof *traces);
	profs = xcalloc(world, sizeof *profs);
	names = xcalloc(world, sizeof *names);
	sqlite = xcalloc(world, sizeof *sqlite);
	for (r = 0; r < world; r++) {
		const plan_t *rp = plan_get_rank(plan, r);
		names[r].report = reports[r];
		names[r].plan = plan_path;
		if (rp == NULL) {
			bcg_error("%s: the plan holds no rank %u", plan_path, r);
			rc = BCG_EXIT_USAGE;
			goto out;
		}
		if (ends_with(reports[r], ".nsys-rep")) {
			if ((rc = export_report(o, reports[r], &sqlite[r])) != 0)
				goto out;
			names[r].report = sqlite[r];
		}
		if ((rc = nsys_read(names[r].report, &traces[r], msg, sizeof msg)) != 0) {
			bcg_error("%s: %s", names[r].report, msg);
			goto out;
		}
		if ((rc = profile_build_rank(rp, &traces[r], o->tokens, (int)r, &profs[r], msg,
		                             sizeof msg)) != 0) {
			bcg_error("%s: rank %u of %s: %s", names[r].report, r, plan_path, msg);
			goto out;
		}
		built = r + 1;
	}
	if (o->json)
		report_json_ranks(stdout, profs, names, world);
	else
		report_text_ranks(stdout, profs, names, world, o->top);
	rc = fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
out:
	for (r = 0; r < built; r++)
		profile_release(&profs[r]);
	for (r = 0; traces != NULL && r < world; r++) {
		nsys_release(&traces[r]);
		free(sqlite[r]);
	}
	free(traces);
	free(profs);
	free(names);
	free(sqlite);
	plan_free(plan);
	return rc;
}
