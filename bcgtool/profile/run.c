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
