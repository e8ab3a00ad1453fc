/*
 * attrib.h - join a profile's kernels to the plan that was replayed.
 *
 * Every "step N" NVTX range of the report is a step (of a rank of a
 * tensor-parallel replay: "rank R step N", R the rank asked for); the "seg K a..b" and
 * "break NAME" ranges inside it, in order, are its items, and must be the
 * items of one of the plan's variants (the one whose kernels' launch shapes
 * agree best with the plan's node records, unless the token count is
 * given). A kernel belongs to the item whose range holds the runtime call
 * that launched it (joined by correlation id):
 *  - in a segment, the graph node it ran as -- the node it was cloned from
 *    at instantiation, numbered in creation order, which is the plan's
 *    node record order -- names the plan node, hence the op; the kernel's
 *    name must be the one the plan records there;
 *  - in a breakpoint, it belongs to the breakpoint's op;
 *  - the kernel that writes a step's feeds (backend.h, BACKEND_FEED_KERNEL),
 *    the node after the last one recorded in the step's first segment,
 *    belongs to the step and that segment, to no op.
 * In a recorded plan (format 1.4), which has no ops, a kernel is credited
 * to its item and graph node only (op PLAN_NONE, why NULL): the per-op
 * tables stay empty, the step and item times hold.
 * Every other kernel stays in the report as unattributed, with the reason.
 */
#ifndef BCG_PROFILE_ATTRIB_H
#define BCG_PROFILE_ATTRIB_H

#include <stdint.h>

#include "nsys.h"
#include "plan.h"

/* The longest NVTX item name compared (a recorded segment's holds two
 * kernel names of up to 140 bytes). */
#define PROF_ITEM_NAME_MAX 320

struct prof_kattr {
	uint32_t    step;     /* index into profile.steps; PLAN_NONE outside */
	uint32_t    item;     /* item of the variant; PLAN_NONE */
	uint32_t    op;       /* PLAN_NONE: unattributed */
	uint32_t    node;     /* node record in the segment; PLAN_NONE */
	const char *why;      /* unattributed: why (NULL when attributed) */
	const char *where;    /* the innermost NVTX range around the launch, "" */
};

struct prof_span {             /* the GPU time of a set of kernels */
	int64_t  first;        /* first start; -1 when no kernel */
	int64_t  last;         /* last end */
	int64_t  ksum;         /* sum of kernel durations */
	int64_t  busy;         /* length of the union of the kernels' intervals */
	uint32_t n;
};

/* G's span, from its first kernel's start to its last one's end; 0 for
 * no kernel. */
static inline int64_t prof_span_ns(const struct prof_span *g)
{
	return g->n > 0 ? g->last - g->first : 0;
}

struct prof_step {
	const struct nsys_range  *range;     /* "step N" */
	const char               *phase;     /* the range around it ("timed"), "" */
	int64_t                   number;    /* N */
	const struct nsys_range **items;     /* the item ranges, nitems */
	struct prof_span          gpu;       /* every attributed kernel of the step */
	struct prof_span         *item_gpu;  /* per item */
};

struct prof_op {
	uint64_t kernels;
	int64_t  total;        /* ns over every step */
	int64_t  exposed;      /* ns over every step that its kernels added to
	                        * their step's busy time: of each kernel, the
	                        * part past every earlier kernel's end (the
	                        * step's kernels in start order). Over the ops
	                        * it sums to the steps' busy time; under
	                        * programmatic dependent launch, where kernels
	                        * overlap, it is what an op costs the step. */
	int64_t  bytes;        /* per step; -1 unknown */
};

struct profile {
	const plan_t             *plan;      /* the rank's plan */
	const struct nsys_trace  *trace;
	int                       rank;      /* whose steps; -1: a replay of one rank */
	uint32_t                  variant;
	int64_t                   tokens;
	uint32_t                  nitems;
	char                    (*item_names)[PROF_ITEM_NAME_MAX];
	struct prof_step         *steps;     /* steps that match the variant */
	uint32_t                  nsteps;
	uint32_t                  unmatched_steps;
	struct prof_kattr        *kattr;     /* per trace kernel */
	struct prof_op           *ops;       /* per plan op */
	uint64_t                  graph_kernels, break_kernels;
	uint64_t                  feed_kernels;    /* a step's feed node (backend.h) */
	uint64_t                  unattributed;    /* launched inside a step */
	uint64_t                  outside;         /* launched outside every step */
	uint64_t                  grid_mismatch;   /* attributed, launch shape differs */
	char                    **strings;
	uint32_t                  nstrings;
};

/* Join T to PLAN. TOKENS picks the variant (0: the one that fits best).
 * Returns 0, or an exit status with the reason in MSG: 2 when the report
 * and the plan do not belong together. */
int profile_build(const plan_t *plan, const struct nsys_trace *t, int64_t tokens,
                  struct profile *p, char *msg, size_t len);
/* The same for rank RANK of a tensor-parallel replay (PLAN that rank's
 * plan): its steps are the "rank RANK step N" ranges; a report whose steps
 * are another rank's, or name no rank, is refused (2) saying so. RANK -1
 * is profile_build. */
int profile_build_rank(const plan_t *plan, const struct nsys_trace *t, int64_t tokens, int rank,
                       struct profile *p, char *msg, size_t len);
void profile_release(struct profile *p);

/* Bytes an op moves per step at TOKENS tokens (a moe_experts op: of its
 * expert weights only the routed experts', min(E, T * top_k) of the E);
 * -1 when not known from the plan alone (attention reads as much of its
 * caches as the host var says). */
int64_t profile_op_bytes(const plan_t *plan, uint32_t op, int64_t tokens);

/* Mean over the steps of one item's figures, and of the break costs. */
struct prof_item_mean {
	double   kernels;      /* per step */
	double   ksum, span, busy;     /* ns */
	double   gap_before;   /* previous item's end to this one's start; NAN first */
	double   gap_after;    /* this one's end to the next one's start; NAN last */
};
void profile_item_mean(const struct profile *p, uint32_t item, struct prof_item_mean *m);

/* The step whose GPU span is the median: a typical step. */
uint32_t profile_typical_step(const struct profile *p);

#endif /* BCG_PROFILE_ATTRIB_H */
