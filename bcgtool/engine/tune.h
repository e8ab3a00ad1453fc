/*
 * tune.h - choosing each op's implementation by measurement, at capture.
 *
 * Where the backend has more than one implementation that can run an op
 * (for a product: tensor-core, FMA and cuBLAS kernels), capture times each
 * on the op's real shapes and operands, with cold caches, and records the
 * choice in the plan (plan_add_choice) before the variant's reference run:
 * the reference, the capture and every later instantiate and replay run
 * the recorded kernels, never choose again.
 *
 * The rule, so that noise does not flip a choice unseen:
 *  - the default is the backend's (engine_impl_default: its impl_default
 *    when usable, else the first usable implementation, the backend
 *    listing them in order of preference);
 *  - another replaces it only when its median is faster by more than the
 *    margin;
 *  - when a candidate other than the chosen one is within the margin of
 *    it, the choice is marked PLAN_CHOICE_CLOSE: another capture may go
 *    the other way, and inspect and diff show it.
 * Ops of equal signature (kind, operand shapes and dtypes, attributes,
 * form) are timed once per capture and share the result: the 32 layers of
 * a model take one measurement per product shape.
 *
 * Timed alone, a kernel is not timed as the step runs it: beside its
 * neighbours (programmatic launches overlap their prologues, the caches
 * hold what the op before left) a candidate that loses alone can win in
 * the step, and the reverse. With capture --tune-step the choices are
 * then confirmed in the step (tune_step_variant): for each signature with
 * a candidate within the step window (step_window) of the chosen one
 * alone, the variant is captured with that signature's ops switched to
 * the candidate, and whole replayed steps of both arrangements are timed
 * in turns (one turn only when the candidate's first is behind by more
 * than TUNE_STEP_DROP); the candidate replaces the choice when its step
 * is faster by more than TUNE_STEP_MARGIN. The signatures are confirmed
 * one after the other, in the order of their first op, each against the
 * arrangement the ones before it left. The choices so confirmed are
 * marked PLAN_CHOICE_STEP.
 */
#ifndef BCG_ENGINE_TUNE_H
#define BCG_ENGINE_TUNE_H

#include <stdint.h>

#include "engine.h"
#include "schedule.h"

struct tune_opts {
	int      measure;   /* 0: record the defaults, untimed (--no-tune) */
	unsigned reps;      /* launches timed per candidate, the median counts;
	                       0: TUNE_REPS_CUDA or TUNE_REPS_HOST */
	double   margin;    /* relative lead needed to leave the default */
	int      untimed;   /* record the candidates' times as 0: the plan's
	                       bytes then do not depend on them */
	const plan_t *from; /* capture --choices-from: take the choice this
	                       plan made for the op of the same name (and kind)
	                       at the same token count, where it has one,
	                       instead of measuring; NULL: none */
	int      step;      /* capture --tune-step: the measured choices are
	                       confirmed in the step (tune_step_variant); what
	                       they need made (packed weights) is then kept only
	                       once confirmed */
	double   step_window; /* with step: the candidates tried are those this
	                         much slower alone than the chosen one, or less
	                         (capture's default TUNE_STEP_WINDOW) */
	const struct engine_var_range *vars; /* capture --tune-var: the values
	                         the vars take while the tuner times, each range
	                         inside the plan's (engine_check_vars): alone at
	                         its middle value, in the step over the whole of
	                         it, a stride apart (tune_var_stride); the
	                         plan's again after. NULL (NVARS 0): the plan's
	                         schedules throughout */
	uint32_t nvars;
};

#define TUNE_REPS_CUDA  15
#define TUNE_REPS_HOST  5
#define TUNE_MARGIN     0.03

#define TUNE_STEP_WINDOW 0.25   /* a candidate this much slower alone, or
                                   less, is tried in the step */
#define TUNE_STEP_MARGIN 0.005  /* the lead a step needs to change a choice */
#define TUNE_STEP_ROUNDS 3      /* turns of each arrangement; the median
                                   ratio of the turns decides */
#define TUNE_STEP_DROP   0.02   /* a candidate this much slower in its first
                                   turn takes no more */
#define TUNE_STEP_WARMUP 10     /* untimed steps before each turn's */
#define TUNE_STEP_STEPS  50     /* timed steps a turn (their median) */

struct tune_entry;

/* Results shared across the variants of one capture. */
struct tune_cache {
	uint32_t           n;
	uint32_t           cap;
	struct tune_entry *entries;
	int32_t           *op_entry;  /* the entry of each op of the variant
	                                 tuned last, -1 none (a default or a
	                                 choice --choices-from took) */
	uint32_t           nops;
};

/* What tune_step_variant did to one variant. */
struct tune_step_report {
	uint32_t groups;    /* signatures with a candidate tried in the step */
	uint32_t trials;    /* arrangements captured and timed against the
	                       incumbent */
	uint32_t changed;   /* signatures whose choice the step changed */
	uint32_t turns;     /* turns timed (TUNE_STEP_ROUNDS an arrangement,
	                       one for those dropped after it) */
	uint64_t ns;        /* wall time it took */
};

void tune_cache_release(struct tune_cache *cache);

/* The value a --tune-var range R holds while ops are timed alone: its
 * middle (rounded down). */
static inline int64_t tune_var_alone(const struct engine_var_range *r)
{
	return r->start + (r->limit - r->start) / 2;
}

/* The stride of a --tune-var range R in the steps of --tune-step, for a
 * var whose plan steps by PLAN_STEP (0, a constant: by 1): the multiple of
 * it, at least one, that spreads a turn's TUNE_STEP_STEPS timed steps
 * over the whole range, rounded up so that they reach both its ends (the
 * values wrap after its limit, as plan_var_value wraps them). A var
 * stepping by its plan's step would be timed at its first
 * TUNE_STEP_WARMUP + TUNE_STEP_STEPS values only: of kv_len 108..1108,
 * 108 to 167, where attention's rows are one round of its loads and a
 * form that differs past it (dsplit_early) differs in nothing. */
static inline int64_t tune_var_stride(const struct engine_var_range *r, int64_t plan_step)
{
	const int64_t unit = plan_step > 0 ? plan_step : 1;
	const int64_t per = unit * TUNE_STEP_STEPS;
	const int64_t k = (r->limit - r->start + per) / per;   /* ceil(span / per) */

	return unit * (k > 1 ? k : 1);
}

/* Choose for every op of variant VI of e->plan (which must be the plan
 * being captured, with e->use_choices set) that has two or more usable
 * implementations, and record the choices in the plan. Leaves the
 * tensors it ran over in any state: reset before the reference. OPS_TUNED,
 * when not NULL, receives how many ops got a choice. */
int tune_variant(struct engine *e, plan_t *plan, uint32_t vi, const struct tune_opts *o,
                 struct tune_cache *cache, uint32_t *ops_tuned, struct engine_error *err);

/* Confirm in the step the choices tune_variant just made for variant VI
 * (CACHE's op_entry; see above): ITEMS are the variant's schedule, in its
 * mode. Segments captured here share no executable (capture --share-exec)
 * and are released before it returns; the packed copies the final choices
 * need are kept, the others freed. Leaves the tensors in any state: reset
 * before the reference. R (may be NULL) gets what was done. */
int tune_step_variant(struct engine *e, plan_t *plan, uint32_t vi, const struct sched_item *items,
                      uint32_t nitems, const struct tune_opts *o, struct tune_cache *cache,
                      struct tune_step_report *r, struct engine_error *err);

#endif /* BCG_ENGINE_TUNE_H */
