/*
 * capture.h - the breakable capture of a script into a plan.
 *
 * For each variant, largest first:
 *   0. the choice of each op's implementation, by measurement (tune.h),
 *      recorded in the plan: everything after runs the chosen kernels;
 *      with the tune options' step, the choices then confirmed in whole
 *      replayed steps (tune_step_variant);
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
 *
 * Steps 1 and 3 are the costly part of a capture of many sizes. OPTS'
 * verify may skip them for some variants (CAPTURE_VERIFY_ENDS: all but
 * the smallest and the largest size of each mode; CAPTURE_VERIFY_NONE:
 * all). A variant so skipped has no reference, hence no checksums in the
 * plan: that is how the plan tells it (plan_variant_verified), so a
 * program without outputs, which has no checksums to keep, is always
 * verified whole.
 */
#ifndef BCG_ENGINE_CAPTURE_H
#define BCG_ENGINE_CAPTURE_H

#include <stdint.h>

#include "engine.h"
#include "script/script.h"
#include "tune.h"

/* Which variants get the eager reference and the verification. */
enum capture_verify {
	CAPTURE_VERIFY_ALL = 0,     /* every one (the default) */
	CAPTURE_VERIFY_ENDS,        /* the smallest and largest of each mode */
	CAPTURE_VERIFY_NONE         /* none */
};

/* all, first-and-largest, none; and back (-1: none of those). */
const char *capture_verify_name(int verify);
int capture_verify_from_name(const char *name);

struct capture_opts {
	const char    *backend;     /* "host" or "cuda" */
	int            verify;      /* enum capture_verify */
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
	int            share_exec;  /* segments of different sizes with one
	                               topology share an executable (share.h),
	                               recorded in the plan (SHAR) */
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
	struct tune_step_report step; /* the confirmation in the step (zero
	                                 without --tune-step) */
	uint64_t capture_ns;
	uint64_t instantiate_ns;
	uint64_t exec_bytes;     /* device memory its executables took */
	uint32_t execs;          /* executables it instantiated */
	uint32_t joined;         /* segments that run on another's (share.h) */
	int      done;           /* captured, and verified where asked (all
	                            are, on success) */
	int      verified;       /* the reference ran and the replay matched */
	int      exact;          /* replay matched the reference bit for bit */
	double   rel_error;      /* largest normwise relative error seen */
	uint64_t ties;           /* argmax rows passed as near-ties, over the
	                            verified steps (verify.h) */
};

/* Where the time of a capture went, wall clock, each phase apart from the
 * others: the reference and the verification exclude the state copies,
 * which are the resets of every tensor but the weights to their initial
 * content before the reference and before the verification, and the
 * reference's final state kept for the verification (stash.h). */
struct capture_phases {
	uint64_t total_ns;        /* capture_script from start to end */
	uint64_t materialize_ns;  /* the arena, its tensors and weights */
	uint64_t tune_ns;         /* implementation choices, their
	                             confirmation in the step included */
	uint64_t tune_step_ns;    /* of which the confirmation in the step */
	uint64_t reference_ns;    /* eager reference steps, outputs read */
	uint64_t capture_ns;      /* the captures with their warm-up launches
	                             and breakpoints (the plan's statistics
	                             count the stream captures alone) */
	uint64_t instantiate_ns;  /* graph instantiation and upload */
	uint64_t verify_ns;       /* replayed steps compared */
	uint64_t checksum_ns;     /* waiting for the reference's checksums,
	                             taken on the host by threads of their own
	                             while the capture goes on */
	uint64_t state_ns;        /* the state copies */
	uint64_t state_bytes;     /* bytes the state copies wrote */
	uint32_t state_copies;    /* resets and keeps of the state */
	uint32_t verified;        /* variants verified */
};

struct capture_report {
	uint32_t                       nvariants;
	struct capture_variant_report *variants;   /* in plan order */
	struct backend_info            info;
	char                           backend[16]; /* the backend that ran */
	char                           note[320];  /* why "auto" used the host */
	struct capture_phases          phases;
	const char                    *verify;     /* capture_verify_name() */
	/* Graph memory: every variant's executables are held until the plan
	 * is written, as a server holds them, so that these add up to what
	 * they take together. */
	int                            share;      /* --share-exec */
	int                            tune_step;  /* --tune-step: the choices
	                                              confirmed in the step */
	const struct engine_var_range *tune_vars;  /* --tune-var: the values the
	                                              tuner timed with (the
	                                              options'); NULL: none */
	uint32_t                       ntune_vars;
	uint64_t                       exec_bytes; /* device memory, all variants */
	uint32_t                       execs;      /* executables instantiated */
	uint32_t                       segments;
	uint32_t                       groups;     /* executables shared by two
	                                              segments or more */
	uint32_t                       refused;    /* updates refused: the
	                                              segment got its own */
	uint32_t                       opaque;     /* segments that could not
	                                              share (share.h) */
	char                           opaque_why[96]; /* the first's reason */
	/* Weights copied into another layout for the implementations chosen
	 * (backend.h, prepare: packed weights), device bytes. */
	uint64_t                       prepared_bytes;
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
