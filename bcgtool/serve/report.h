/*
 * serve/report.h - a trace run for people (aligned text) and for programs
 * (JSON keys), shared by replay and bench.
 */
#ifndef BCG_SERVE_REPORT_H
#define BCG_SERVE_REPORT_H

#include <stdio.h>

#include "serve/run.h"

struct plan_json;

/* "trace ..." and "scheduler ..." lines: what ran. */
void serve_report_setup(FILE *f, const char *trace_name, const struct serve_trace *t,
                        const struct serve_sched_opts *o);

/* Policy, steps, step-time percentiles, throughput, padding, the steps
 * per mode and the dispatch table; the check line when checked. */
void serve_report_text(FILE *f, const struct serve_result *r, int policy);

/* The same as keys of the JSON object being written. */
void serve_report_json(struct plan_json *j, const struct serve_result *r, int policy);

/* The "trace" and "scheduler" keys. */
void serve_report_json_setup(struct plan_json *j, const char *trace_name,
                             const struct serve_trace *t, const struct serve_sched_opts *o);

#endif /* BCG_SERVE_REPORT_H */
