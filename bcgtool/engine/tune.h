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
 */
#ifndef BCG_ENGINE_TUNE_H
#define BCG_ENGINE_TUNE_H

#include <stdint.h>

#include "engine.h"

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
};

#define TUNE_REPS_CUDA  15
#define TUNE_REPS_HOST  5
#define TUNE_MARGIN     0.03

struct tune_entry;

/* Results shared across the variants of one capture. */
struct tune_cache {
	uint32_t           n;
	uint32_t           cap;
	struct tune_entry *entries;
};

void tune_cache_release(struct tune_cache *cache);

/* Choose for every op of variant VI of e->plan (which must be the plan
 * being captured, with e->use_choices set) that has two or more usable
 * implementations, and record the choices in the plan. Leaves the
 * tensors it ran over in any state: reset before the reference. OPS_TUNED,
 * when not NULL, receives how many ops got a choice. */
int tune_variant(struct engine *e, plan_t *plan, uint32_t vi, const struct tune_opts *o,
                 struct tune_cache *cache, uint32_t *ops_tuned, struct engine_error *err);

#endif /* BCG_ENGINE_TUNE_H */
