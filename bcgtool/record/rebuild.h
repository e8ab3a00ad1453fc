/*
 * rebuild.h - a recorded plan made live again in this process: its modules
 * loaded, its allocations made again, its segments rebuilt as CUDA graphs
 * from their nodes and compared with the recording, its breakpoints'
 * launches run eagerly with their recorded parameters.
 *
 * Allocations are made with CUDA's virtual memory management. The
 * virtual address range an allocation had in the recorded process is
 * asked for (cuMemAddressReserve takes it as a hint), so that addresses the
 * program stored inside device memory (pointer tables, a snapshot's
 * contents) stay valid where the driver gives it; rr_info's UNPLACED says
 * which allocation it did not give and why, rr_alloc_placement each
 * allocation's place.
 *
 * The order matters: the driver keeps large ranges of the address space
 * for itself when CUDA starts, and honours a hint only outside them. So
 * the recorded ranges are held first (rr_hold_ranges: this process's own
 * mappings without access, made before any CUDA call), then CUDA starts
 * and each session, before it loads a module or allocates anything else,
 * lets each held range go and reserves it at once.
 * Otherwise (or with RR_REBASE) the allocation goes anywhere and every
 * recorded address in it is rebased: each launch's patched parameter
 * words and each copy's and memset's addresses are moved by the
 * allocation's displacement. Addresses held inside device memory are then
 * stale; the session says how many allocations moved.
 *
 * Only in a build with CUDA. The driver API is reached through
 * cudaGetDriverEntryPointByVersion, as the CUDA backend reaches it, so that
 * bcgtool never links the driver library and starts without a GPU.
 * Functions return 0, or -1 with ERR filled (exit status and a sentence).
 */
#ifndef BCG_RECORD_REBUILD_H
#define BCG_RECORD_REBUILD_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

struct rr_error {
	int  exit;          /* BCG_EXIT_* */
	int  no_device;     /* rr_open: this machine lacks the device asked for */
	char msg[512];
};

/* How allocations are filled before the first step. */
enum rr_fill {
	RR_FILL_SNAPSHOT = 0,  /* the recorded contents where kept, else zeros */
	RR_FILL_ZEROS    = 1,
	RR_FILL_RANDOM   = 2,  /* pseudo-random bytes from the seed */
};

#define RR_REBASE 0x1u   /* allocate anywhere, even where the recorded
                            address is free (tests, and to compare) */

struct rr_hold;

struct rr_opts {
	int      fill;     /* enum rr_fill */
	uint64_t seed;     /* RR_FILL_RANDOM */
	unsigned flags;    /* RR_* */
	int      nvtx;     /* push NVTX ranges while replaying */
	int      device;   /* the CUDA device; the session makes the
	                      allocations recorded on this device only */
	struct rr_hold *hold;  /* rr_hold_ranges' ranges, or NULL */
};

/*
 * Hold the address ranges of PLAN's allocations (rounded out to 2 MiB, the
 * granularity of device memory on the GPUs CUDA 12 and 13 run on) as
 * mappings of this process without access, each where nothing is mapped
 * yet. Call it before anything starts CUDA. Never fails: what it cannot
 * hold (a range this process maps already, no memory) is left, and the
 * reservation then tries without it. NULL with nothing held. A session
 * given the hold lets each range go just before reserving it;
 * rr_hold_release lets the rest go (after the sessions are closed).
 */
struct rr_hold *rr_hold_ranges(const plan_t *plan);
void rr_hold_release(struct rr_hold *h);
/* Bytes held, and ranges that could not be held. */
uint64_t rr_hold_bytes(const struct rr_hold *h);
uint32_t rr_hold_missed(const struct rr_hold *h);

/* What the session found and did. */
struct rr_info {
	int      ordinal;       /* the CUDA device */
	char     device[256];
	int32_t  cc_major;
	int32_t  cc_minor;
	int32_t  cuda_driver;
	uint32_t allocs;        /* recreated (those of this device) */
	uint64_t alloc_bytes;   /* recorded bytes */
	uint32_t fixed;         /* at their recorded address */
	uint32_t rebased;       /* elsewhere: patches rebased */
	uint32_t snapshots;     /* filled from the snapshot */
	uint64_t granularity;   /* of the reservations */
	char     unplaced[512]; /* without RR_REBASE: the first allocation not
	                           at its recorded address and why, or "" */
	uint64_t memory_ns;     /* reserving, mapping, filling */
};

/* Whether a rebuilt segment matches its recording (as instantiate.h). */
enum rr_status {
	RR_MATCH = 0,
	RR_DRIFT = 1,
};

struct rr_segment_report {
	uint32_t segment;
	int      status;            /* enum rr_status */
	char     reason[256];       /* drift: why */
	uint32_t plan_nodes;
	uint32_t nodes;             /* rebuilt, read back */
	uint64_t plan_fingerprint;
	uint64_t fingerprint;       /* of the rebuilt graph, read back */
	uint64_t build_ns;          /* building the graph from the nodes */
	uint64_t instantiate_ns;
	uint64_t upload_ns;
};

struct rr_session;

/* Open device OPTS->DEVICE (exit 3 with a sentence naming it when this
 * machine has no such device), reserve and map its recorded allocations
 * before anything else, fill them. */
int rr_open(const plan_t *plan, const struct rr_opts *opts, struct rr_session **out,
            struct rr_error *err);
void rr_close(struct rr_session *s);
const struct rr_info *rr_get_info(const struct rr_session *s);

/* Rebuild SEGMENT's graph, instantiate and upload it, read it back and
 * compare it with the recording into REP. A module this device cannot
 * load (no code for its architecture) or a function whose parameters the
 * driver lays out otherwise is a drift with its reason, not an error;
 * the segment is then not replayable (rr_segment_ready gives 0). */
int rr_instantiate_segment(struct rr_session *s, uint32_t segment,
                           struct rr_segment_report *rep, struct rr_error *err);
int rr_segment_ready(const struct rr_session *s, uint32_t segment);

/* Make every launch of breakpoint BP ready to run (its functions loaded,
 * parameters patched). */
int rr_prepare_break(struct rr_session *s, uint32_t bp, struct rr_error *err);

/* How a replay issues its timed steps (replay --pace). */
enum rr_pace {
	RR_PACE_STEP = 0,  /* each step waited for before the next is issued:
	                      the GPU idles while the host turns round */
	RR_PACE_NONE = 1,  /* back to back: the host issues step after step
	                      without waiting, as a program whose host runs
	                      ahead of the GPU does; the GPU never idles but
	                      when the host is slower than the GPU */
	RR_PACE_RECORDED = 2, /* each step waited for, as STEP; within it the
	                      GPU idles before each item as long as it idled
	                      there in the recorded run (from the items'
	                      recorded start offsets, format 1.7): a gap
	                      kernel on the stream (rebuild.c, rr_pace_gaps) */
};

/* What a replay runs and how (rr_replay_variant). */
struct rr_replay {
	uint64_t warmup;      /* untimed steps */
	uint64_t steps;       /* timed steps */
	int      pace;        /* enum rr_pace */
	int      flush_l2;    /* before every step, outside its timed range:
	                         write over a buffer twice the L2's size, so
	                         the step starts with nothing of its own in L2 */
	uint32_t busy_steps;  /* held steps after the timed ones (0: none) */
};

/* Timings of one variant's replay. Times in milliseconds, per step and,
 * item by item in the variant's order, medians over the steps. */
struct rr_run {
	uint64_t steps;
	double   step_median;
	double   step_p90;
	double   step_p99;
	double   step_mean;
	double   host_median;       /* issuing one step, host clock */
	uint32_t nitems;
	double  *item_median;       /* NITEMS; from each item's start to the
	                               next's, on the GPU's timeline */
	/* The busy pass: BUSY_STEPS steps each issued whole behind a hold
	 * kernel, so that the GPU finds the step queued and never waits for
	 * the host: the GPU's own time per step and per item, the figure
	 * to hold against the recorded items' GPU times. */
	uint32_t busy_steps;        /* 0: not measured */
	double   busy_median;
	double  *item_busy;         /* NITEMS medians, NULL when not measured */
	uint64_t l2_bytes;          /* flush_l2: the buffer written, else 0 */
	/* Paced "recorded": the recorded idle gaps reproduced before items,
	 * their recorded total, and what one gap kernel costs the GPU here
	 * (taken off each gap; a gap no longer than it is left out). */
	uint32_t paced_gaps;
	double   paced_ms;
	double   gap_cost_us;
};

void rr_run_release(struct rr_run *r);

/* Replay R->WARMUP untimed, then R->STEPS timed steps of VARIANT (every
 * segment instantiated and every breakpoint prepared first) paced as
 * R->PACE says, then R->BUSY_STEPS held ones, with NVTX ranges "step N" >
 * "seg K ..." and "break NAME" when the session has them. */
int rr_replay_variant(struct rr_session *s, uint32_t variant, const struct rr_replay *r,
                      struct rr_run *run, struct rr_error *err);

/* Copy BYTES at OFFSET of recorded allocation ALLOC to host memory (after
 * all queued work), and the address it has here. */
int rr_read(struct rr_session *s, uint32_t alloc, uint64_t offset, void *dst, size_t bytes,
            struct rr_error *err);
uint64_t rr_alloc_address(const struct rr_session *s, uint32_t alloc);

/* Where recorded allocation ALLOC is in this session. */
enum rr_place {
	RR_PLACE_OTHER_DEVICE = 0,  /* not this session's device */
	RR_PLACE_RECORDED     = 1,  /* at its recorded address */
	RR_PLACE_REBASED      = 2,  /* elsewhere; *WHY says why ("" with --rebase) */
};
int rr_alloc_placement(const struct rr_session *s, uint32_t alloc, const char **why);

#endif /* BCG_RECORD_REBUILD_H */
