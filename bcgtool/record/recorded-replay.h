/*
 * recorded-replay.h - `bcgtool instantiate` and `bcgtool replay` of a
 * recorded plan (plan_get_origin() PLAN_ORIGIN_RECORDED): the commands
 * parse their options, then hand a recorded plan to these.
 *
 * Before any GPU work the plan is checked for what replay cannot do: a
 * kernel whose module has no image, a node type replay does not rebuild
 * (host, child graph, event, conditional...), an address in a launch that
 * lies in no recorded allocation. Each is named and refused with exit 2
 * (an input bcgtool cannot replay). A recorded plan runs only on a GPU:
 * the host backend, a build without CUDA or a machine without a usable
 * device exit 3 with a sentence saying which.
 */
#ifndef BCG_RECORD_RECORDED_REPLAY_H
#define BCG_RECORD_RECORDED_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

struct recorded_opts {
	const char *backend;      /* as given: "auto", "cuda" or "host" */
	int         json;
	int         allow_drift;  /* instantiate: exit 0 on drift */
	int         fill;         /* enum rr_fill */
	uint64_t    seed;         /* --fill random */
	unsigned    flags;        /* RR_REBASE */
	int         nvtx;
	uint64_t    steps;        /* replay: timed steps per variant */
	uint64_t    warmup;
	const char *variant;      /* replay: a number or a label; NULL every one */
	int         pace;         /* replay: enum rr_pace */
	int         flush_l2;     /* replay: flush L2 before every step */
	uint32_t    busy_steps;   /* replay: held steps after the timed ones */
};

/* "snapshot", "zeros" or "random" to enum rr_fill; -1 when unknown. */
int recorded_fill_from_name(const char *name);

/* "step", "none" or "recorded" to enum rr_pace; -1 when unknown. */
int recorded_pace_from_name(const char *name);

/* The recorded GPU busy time of variant PV's step: its items' recorded
 * times summed; 0 when an item has none. */
uint64_t recorded_busy_ns(const plan_t *plan, const struct plan_variant *pv);

/* The variant SPEC names: its number (the variant's tokens field, 1, 2,
 * ... in a recorded plan) or its label. PLAN_NONE with a sentence in MSG
 * when none does, or when a label names several. */
uint32_t recorded_find_variant(const plan_t *plan, const char *spec, char *msg, size_t len);

/* Whether every item of variant VI can be replayed; else a sentence
 * naming the first thing that cannot, and -1. */
int recorded_check_variant(const plan_t *plan, uint32_t vi, char *msg, size_t len);

/* The commands; they print and return the exit status. LOAD_NS: the
 * time reading the plan took. */
int recorded_instantiate(const plan_t *plan, const char *path, const struct recorded_opts *o,
                         uint64_t load_ns);
int recorded_replay(const plan_t *plan, const char *path, const struct recorded_opts *o);

#endif /* BCG_RECORD_RECORDED_REPLAY_H */
