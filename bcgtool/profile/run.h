/*
 * run.h - one report from a profile and a plan, as `bcgtool report` and
 * `bcgtool profile` both write it.
 */
#ifndef BCG_PROFILE_RUN_H
#define BCG_PROFILE_RUN_H

#include <stdint.h>

struct report_opts {
	int64_t     tokens;      /* 0: the variant that fits best */
	unsigned    top;         /* rows of the op, step and unattributed tables */
	int         json;
	const char *svg;         /* NULL: none */
	int64_t     step;        /* for the SVG; -1: a typical step */
	const char *trace;       /* Chrome trace; NULL: none */
	const char *nsys;        /* --nsys, to export an .nsys-rep; NULL: look */
};

/* Report on REPORT (a .sqlite export, or an .nsys-rep exported first) for
 * the plan at PLAN_PATH. Prints errors; returns the exit status. */
int report_run(const struct report_opts *o, const char *report, const char *plan_path);

/* Report on REPORTS, one per rank of the tensor-parallel plan at
 * PLAN_PATH, rank 0's first: each rank's kernels attributed to its own
 * plan, then the collectives side by side. A plan of one rank, another
 * count of reports, or a report whose steps are not its rank's is refused
 * (exit 2) with the reason. */
int report_run_ranks(const struct report_opts *o, char *const *reports, uint32_t nreports,
                     const char *plan_path);

/* The SQLite export that belongs to the Nsight Systems report REP:
 * "x.nsys-rep" -> "x.sqlite". Malloc'd. */
char *report_sqlite_path(const char *rep);

/* The options report and profile share (cmd-report.c): parse option C of
 * getopt_long. 0 when C was one of them, 1 when not, -1 on a bad value
 * (reported as a usage error of SELF). */
struct cmd_entry;
int cmd_report_option(const struct cmd_entry *self, int c, struct report_opts *o);

#endif /* BCG_PROFILE_RUN_H */
