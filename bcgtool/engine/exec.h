/*
 * exec.h - an executable variant: its segments captured and instantiated,
 * its breakpoints ready to run, and one step of it run in order.
 *
 * Capture (from the scheduler's items), instantiate (from a plan's items)
 * and replay share this. Running a step:
 *   feeds and vars -> [seg 0 graph] -> break a -> [seg 1 graph] -> ...
 * with NVTX ranges around every item and optional time stamps between
 * items.
 */
#ifndef BCG_ENGINE_EXEC_H
#define BCG_ENGINE_EXEC_H

#include "engine.h"
#include "nvtx.h"
#include "schedule.h"
#include "share.h"

struct exec_item {
	int                   kind;       /* PLAN_ITEM_SEGMENT or PLAN_ITEM_BREAK */
	uint32_t              op_first;
	uint32_t              op_count;
	struct backend_graph *graph;      /* segments */
	char                  label[160]; /* "seg 2 o.1..v.2" or "break attn.1" */
	nvtx_string           nvtx_name;
	uint64_t              nodes;      /* segments: node count (NVTX payload) */
	int                   share;      /* enum share_status */
	int                   share_group;/* the group it matched in e->share; -1 */
	int                   refused;    /* SHARE_REFUSED: the backend's reason */
};

struct exec_variant {
	struct engine_variant ev;
	uint32_t              nitems;
	struct exec_item     *items;
};

/* Build V at TOKENS tokens in MODE from ITEMS: capture every segment
 * (instantiating and uploading it), and run every breakpoint eagerly in
 * between as the capture reaches it. When RECS is not NULL it receives one
 * record per item (nodes and timings; empty for breakpoints). Var
 * attributes are bound for STEP. */
int exec_capture(struct engine *e, int64_t tokens, int mode, const struct sched_item *items,
                 uint32_t nitems, uint64_t step, struct exec_variant *v,
                 struct backend_capture *recs, struct engine_error *err);

void exec_release(struct engine *e, struct exec_variant *v);

/* From now on, segments captured on E share executables through POOL
 * (share.h; the caller's, released with share_pool_release after
 * exec_share_end), until exec_share_end. */
void exec_share_begin(struct engine *e, struct share_pool *pool);
void exec_share_end(struct engine *e);

/* Time stamps for one step: mark[0] before the feeds, mark[i + 1] after
 * item i. */
struct exec_marks {
	unsigned  first;    /* first slot; the step uses first .. first + nitems + 1 */
	uint64_t *host_ns;  /* NULL, or nitems + 1 host clock readings taken as
	                       each mark is issued (replay --trace-json) */
};

/* Run step STEP of V: feeds and vars, then every item in order. MARKS may
 * be NULL (no time stamps between items). */
int exec_step(struct engine *e, struct exec_variant *v, uint64_t step,
              const struct exec_marks *marks, struct engine_error *err);

#endif /* BCG_ENGINE_EXEC_H */
