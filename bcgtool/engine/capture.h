/*
 * capture.h - the breakable capture of a script into a plan.
 *
 * For each variant, largest first:
 *   0. the choice of each op's implementation, by measurement (tune.h),
 *      recorded in the plan: everything after runs the chosen kernels;
 *   1. the eager reference: from the initial state, STEPS eager steps,
 *      keeping every output after each step and the state after the last;
 *   2. the capture: one stream capture per segment; at each breakpoint the
 *      capture ends, the op runs eagerly, and a new capture begins; every
 *      segment is instantiated and uploaded, its nodes read back;
 *   3. the verification: from the initial state again, STEPS replayed
 *      steps, compared with the reference (verify.h). A mismatch fails the
 *      capture and no plan is written.
 * The plan gets the variants, their items, the nodes, the breakpoints, the
 * reference checksums, the dispatch table and the timings.
 */
#ifndef BCG_ENGINE_CAPTURE_H
#define BCG_ENGINE_CAPTURE_H

#include <stdint.h>

#include "engine.h"
#include "script/script.h"
#include "tune.h"

struct capture_opts {
	const char    *backend;     /* "host" or "cuda" */
	uint32_t       steps;       /* reference and verification steps, >= 1 */
	int            mode;        /* 0: each variant's mode from the script */
	const int64_t *tokens;      /* only these capture sizes; NULL: all */
	uint32_t       ntokens;
	int            nvtx;        /* emit NVTX ranges */
	struct tune_opts tune;      /* how implementations are chosen */
	uint32_t       features;    /* PLAN_FEATURE_*: PDL launches (cuda only) */
	int            untimed;     /* record no measured time in the plan (all 0),
	                               so that its bytes do not depend on them */
	struct dist_comm *comm;     /* the rank's communicator (engine.h); NULL:
	                               one rank */
	uint32_t       progress_at; /* set by capture_script: the variant being */
	uint32_t       progress_of; /* captured (1-based) of how many */
};

/* What happened to one variant, for the command's report. */
struct capture_variant_report {
	int64_t  tokens;
	int      mode;
	uint32_t segments;
	uint32_t breakpoints;
	uint32_t nodes;
	uint32_t choices;        /* ops with an implementation choice recorded */
	uint64_t capture_ns;
	uint64_t instantiate_ns;
	int      done;           /* captured and verified (all are, on success) */
	int      exact;          /* replay matched the reference bit for bit */
	double   rel_error;      /* largest normwise relative error seen */
};

struct capture_report {
	uint32_t                       nvariants;
	struct capture_variant_report *variants;   /* in plan order */
	struct backend_info            info;
	char                           backend[16]; /* the backend that ran */
	char                           note[320];  /* why "auto" used the host */
};

void capture_report_release(struct capture_report *rep);

/* Capture SCRIPT per OPTS. On success *OUT is the plan (SCRIPT's program,
 * taken over: script->program becomes NULL). Progress (variant i of n and
 * its phase) goes to the terminal (util.h). Interrupted by a signal, it
 * stops at the next phase and fails with ERR's exit 130 or 143, REP
 * keeping the variants done so far. */
int capture_script(struct script *script, const struct capture_opts *opts, plan_t **out,
                   struct capture_report *rep, struct engine_error *err);

#endif /* BCG_ENGINE_CAPTURE_H */
