/*
 * serve/run.h - run a trace on an engine: schedule, dispatch, step, time.
 *
 * The caller brings the engine and its executable variants (replay
 * instantiates a plan's; bench captures a script's) with the size each
 * was captured at. Every step the scheduler forms a batch, the dispatch
 * policy picks the variant (or eager) and the size to pad to, the batch is
 * padded and handed to the engine, and the step runs. A time stamp before
 * each step gives the step time, start to start, the scheduler's own host
 * time included, as a server would see it. Eager steps run on variants of
 * every op as a breakpoint, built the first time a token count needs one.
 *
 * With check set, the same schedule runs again from a reset with every
 * step eager at the same padded size, and the outputs and state are
 * compared: bit for bit unless a step ran a full graph (whose graph-safe
 * kernels may round differently), then within the dtype's bounds.
 */
#ifndef BCG_SERVE_RUN_H
#define BCG_SERVE_RUN_H

#include <stdint.h>

#include "engine/exec.h"
#include "engine/stash.h"
#include "serve/dispatch.h"
#include "serve/scheduler.h"
#include "serve/trace.h"

struct serve_run_opts {
	int                     policy;    /* enum serve_policy */
	struct serve_sched_opts sched;
	uint64_t                warmup;    /* untimed steps of each variant first */
	int                     check;
};

struct serve_result {
	struct serve_dispatch    disp;       /* the statistics table */
	struct serve_sched_stats sched;
	uint32_t                 requests;
	uint64_t                 prompt_tokens;   /* of the trace */
	uint64_t                 output_tokens;
	double                   total_ms;        /* the steps' times, summed */
	double                   step_median;     /* ms */
	double                   step_p90;
	double                   step_p99;
	double                   step_mean;
	double                   step_max;
	double                   mode_ms[4];      /* summed, per PLAN_MODE_* */
	double                   output_per_s;    /* output tokens / total time */
	double                   tokens_per_s;    /* batch tokens (unpadded) / total time */
	int                      checked;
	struct stash_verdict     check;           /* when CHECKED */
};

/* Run trace T on E over the N variants X, captured at SIZES (SIZES[i] is
 * X[i]'s; its variant field is ignored: X is indexed by position), per O. A
 * failed check is not an error: see res->check.pass. */
int serve_run(struct engine *e, const struct serve_size *sizes, struct exec_variant *x,
              uint32_t n, const struct serve_trace *t, const struct serve_run_opts *o,
              struct serve_result *res, struct engine_error *err);

void serve_result_release(struct serve_result *res);

#endif /* BCG_SERVE_RUN_H */
