/*
 * replay.h - run a plan's steps and measure them.
 *
 * A measurement has two passes over an executable variant:
 *  - timed: warm-up then N steps issued back to back, as a serving loop
 *    would; a time stamp on the backend's timeline at each step start gives
 *    the step time (start to start);
 *  - busy: a few steps issued while the stream is held, so the GPU finds
 *    the whole step queued and never waits for the host; time stamps around
 *    every item give the GPU's own busy time per step and per item.
 * The host clock times the issue of every step in both passes. Each can
 * only overstate it -- the timed pass when the host runs ahead and waits on
 * a full launch queue, the busy pass when one step alone overflows the
 * queue behind the hold -- so the smaller median is the host's issue time.
 * The idle gap is step time minus busy time: what the host costs the GPU.
 *
 * Asked for (replay --stream), a stream pass follows the timed one: the
 * same warm-up and steps from a reset, with one time stamp before the
 * first timed step and one after the last, and none between; the mean
 * step is their interval over N. That is the figure public CUDA-graph
 * benchmarks report. The timed pass's stamps are work on the GPU's
 * timeline themselves: a CUDA event between two graph launches costs
 * about 1.7 us a step in a standalone benchmark, which the timed step
 * holds and the stream mean does not.
 */
#ifndef BCG_ENGINE_REPLAY_H
#define BCG_ENGINE_REPLAY_H

#include <stdint.h>

#include "exec.h"
#include "stash.h"
#include "instantiate.h"

/* The most sizes a replay alternates. */
#define REPLAY_CYCLE_MAX 64

struct replay_opts {
	const char *backend;
	uint64_t    steps;        /* timed steps, >= 1 */
	uint64_t    warmup;       /* untimed steps before them */
	uint32_t    busy_steps;   /* steps of the busy pass, >= 1 */
	int64_t     tokens;       /* 0: the largest capture size */
	int         check;        /* compare with eager steps from the same state */
	int         nvtx;
	int         trace;        /* keep every item's times of the busy pass */
	int         stream;       /* the stream pass too (replay_stats.stream_mean) */
	/* Step S at CYCLE[S % NCYCLE] tokens (NCYCLE >= 2; else TOKENS every
	 * step), each padded to its variant: the sizes alternate, as a
	 * server's batches do. */
	const int64_t *cycle;
	uint32_t    ncycle;
	int         share;        /* every variant instantiated, sharing
	                             executables (share.h), before the steps */
	/* Vars stepped over these ranges instead of the plan's (--var). */
	const struct engine_var_range *vars;
	uint32_t    nvars;
};

/* The busy pass's steps item by item (replay --trace-json): the host clock
 * as each item's issue ended, and the backend's time stamps (CUDA events
 * on cuda) after each item, from the step's first. */
struct replay_trace {
	uint32_t   nsteps;
	uint32_t   nitems;
	uint64_t  *host_ns;      /* nsteps x (nitems + 1); [0] the step's start */
	double    *dev_ms;       /* nsteps x (nitems + 1); [0] is 0 */
	uint64_t  *step;         /* nsteps: the step number */
	char     (*labels)[160]; /* nitems: "seg 0 a..b", "break c" */
	int       *kinds;        /* nitems: PLAN_ITEM_* */
};

struct replay_stats {
	int      partial;         /* a signal stopped the measurement: STEPS
	                             is how many timed steps were measured,
	                             and only the step and host times are set
	                             (and the stream time, if its pass ended
	                             before the signal) */
	uint64_t steps;
	double   step_median;     /* ms */
	double   step_p90;
	double   step_p99;
	double   step_mean;
	double   host_median;     /* ms the host needs to issue a step */
	double   busy_median;     /* ms of GPU work per step, never waiting */
	double   gap_median;      /* step_median - busy_median, at least 0 */
	double   stream_mean;     /* ms a step of the stream pass; 0 when not
	                             measured (not asked for, or interrupted) */
	uint64_t stream_steps;    /* the steps of that mean; 0 when not measured */
	uint32_t nitems;
	double  *item_busy;       /* per item, median ms; NULL when not measured */
	struct replay_trace trace;   /* nsteps 0 unless asked for and measured */
};

struct replay_result {
	char                backend[16];     /* the backend that ran */
	char                device[256];
	char                note[320];       /* why "auto" used the host */
	int64_t             tokens;          /* asked for */
	int64_t             run_tokens;      /* the variant's (padded) count */
	uint32_t            variant;         /* PLAN_NONE: ran eagerly */
	int                 mode;
	uint32_t            segments;
	uint32_t            breakpoints;
	struct inst_report  inst;
	uint32_t            weights;         /* weight sources read */
	uint32_t            weights_changed; /* of which changed since the capture */
	struct replay_stats stats;
	uint32_t            ncycle;          /* the sizes alternated; 0: one */
	int                 share;           /* executables shared (opts.share) */
	int                 checked;
	struct stash_verdict check;          /* when CHECKED */
};

void replay_result_release(struct replay_result *res);

/* Replay PLAN per OPTS. A failed --check is not an error: see
 * res->check.pass. */
int replay_plan(const plan_t *plan, const struct replay_opts *opts,
                struct replay_result *res, struct engine_error *err);

/* Measure X on E: reset, WARMUP + STEPS timed steps, then BUSY_STEPS held
 * steps (after a reset). The building block of replay and bench. The
 * timed steps show their progress (e->progress_label, "replay" when NULL:
 * step k of N, time left); a signal ends them at the next step, and the
 * result is what was measured, marked partial (st->partial). */
int replay_measure(struct engine *e, struct exec_variant *x, uint64_t warmup, uint64_t steps,
                   uint32_t busy_steps, struct replay_stats *st, struct engine_error *err);

void replay_trace_release(struct replay_trace *t);

/* Compare X's state after NSTEPS steps from a reset, bit for bit, with the
 * same steps launched op by op in the forms X's graphs hold
 * (engine_launch_step). */
int replay_check(struct engine *e, struct exec_variant *x, uint64_t nsteps,
                 struct replay_result *res, struct engine_error *err);
/* The same for steps that alternate over the NX variants XS (step S on
 * XS[S % NX]): the eager steps alternate alike. */
int replay_check_cycle(struct engine *e, struct exec_variant **xs, uint32_t nx, uint64_t nsteps,
                       struct replay_result *res, struct engine_error *err);


#endif /* BCG_ENGINE_REPLAY_H */
