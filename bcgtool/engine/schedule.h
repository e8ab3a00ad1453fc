/*
 * schedule.h - which ops run in a graph and which break it.
 *
 * For a variant's mode, every op is either captured (into the current
 * segment) or a breakpoint run eagerly between segments:
 *  - eager mode: every op is a breakpoint;
 *  - an op marked `eager: true` is a breakpoint in breakable mode, and an
 *    error in full mode (a full graph has no breaks);
 *  - an op kind that is OP_CAPTURE_ALWAYS is captured;
 *  - OP_CAPTURE_SAFE_FORM: a breakpoint in breakable mode (its launch shape
 *    follows host state), its graph-safe form captured in full mode;
 *  - OP_CAPTURE_NEVER: a breakpoint; an error in full mode.
 * The result is the variant's item list: maximal runs of captured ops as
 * segments, breakpoints between them, in op order. A breakpoint is named
 * after its op (plan_op_label: the op's name, or "<kind>#<index>").
 */
#ifndef BCG_ENGINE_SCHEDULE_H
#define BCG_ENGINE_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

struct sched_item {
	int      kind;          /* PLAN_ITEM_SEGMENT or PLAN_ITEM_BREAK */
	uint32_t op_first;      /* a breakpoint's op is op_first */
	uint32_t op_count;      /* 1 for a breakpoint */
	int      reason;        /* breakpoints: enum plan_break_reason */
	char     detail[160];   /* breakpoints: why, in words */
};

struct schedule {
	int                mode;
	uint32_t           nitems;
	struct sched_item *items;
};

/* Schedule PROGRAM's ops in MODE. Returns 0, or -1 with a sentence in MSG
 * naming the first op that cannot run in MODE and why (its script
 * position in *OP_OUT when OP_OUT is not NULL). */
int schedule_build(const plan_t *program, int mode, struct schedule *out,
                   uint32_t *op_out, char *msg, size_t len);

void schedule_release(struct schedule *sched);

/* Whether op OP is launched in its graph-safe form in MODE. */
int schedule_graph_safe(const plan_t *program, uint32_t op, int mode);

#endif /* BCG_ENGINE_SCHEDULE_H */
