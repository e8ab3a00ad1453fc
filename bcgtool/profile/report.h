/*
 * report.h - what `bcgtool report` writes from a joined profile: text
 * tables, JSON (formats/report-json.md), an SVG timeline of one step and
 * a Chrome trace.
 */
#ifndef BCG_PROFILE_REPORT_H
#define BCG_PROFILE_REPORT_H

#include <stdio.h>

#include "attrib.h"

#define REPORT_JSON_SCHEMA 1

struct report_names {
	const char *report;   /* the export read */
	const char *plan;
};

void report_text(FILE *f, const struct profile *p, const struct report_names *n, unsigned top);
void report_json(FILE *f, const struct profile *p, const struct report_names *n);

/* A tensor-parallel plan's WORLD ranks, PS[r] and NS[r] rank r's: each
 * rank's tables, then every collective of rank 0's plan with its form
 * (eager: a breakpoint; captured: in a graph) and each rank's kernel time
 * a step; the JSON holds each rank's report object under "ranks". */
void report_text_ranks(FILE *f, const struct profile *ps, const struct report_names *ns,
                       uint32_t world, unsigned top);
void report_json_ranks(FILE *f, const struct profile *ps, const struct report_names *ns,
                       uint32_t world);

/* One step (an index into p->steps) as an SVG timeline at PATH, written
 * atomically. Returns 0, or -1 with the reason in MSG. */
int report_svg(const char *path, const struct profile *p, uint32_t step, char *msg, size_t len);

/* Every matched step as a Chrome trace at PATH: a GPU process with the
 * items and kernels, a host process with the NVTX ranges. */
int report_trace(const char *path, const struct profile *p, char *msg, size_t len);

#endif /* BCG_PROFILE_REPORT_H */
