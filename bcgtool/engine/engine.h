/*
 * engine.h - a program made real on a backend: the arena allocated and
 * initialized, every op's launch prepared per token count, feeds and vars
 * written before each step.
 *
 * The capture loop (capture.c), replay (replay.c) and instantiate
 * (instantiate.c) are built on this; so are `run` and `bench`.
 */
#ifndef BCG_ENGINE_ENGINE_H
#define BCG_ENGINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "ops/op.h"
#include "plan.h"
#include "serve/batch.h"

struct nvtx;
struct dist_comm;

/* Why an engine call failed: a sentence, the op it concerns (PLAN_NONE when
 * none) and the exit status it deserves (BCG_EXIT_*). */
struct engine_error {
	uint32_t op;
	int      exit;
	char     msg[512];
};

/* Fill ERR and return -1. */
int engine_fail(struct engine_error *err, int exit, uint32_t op, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* At a step boundary: when SIGINT or SIGTERM came (util.h), fill ERR
 * ("interrupted", exit 128 + the signal) and return -1; else 0. */
int engine_interrupted(struct engine_error *err);

/* After a backend call failed with its sentence in err->msg: prefix it
 * with WHAT ("waiting for the step: ..."), exit status 3. Returns -1. */
int engine_fail_backend(struct engine_error *err, const char *what);

/*
 * Test hook: BCG_TEST_FAULT stages failures that cannot be staged for real
 * in a test (bcgtool(1), ENVIRONMENT; never for users):
 *   oom:BYTES    the arena's allocation fails when it needs more than BYTES;
 *   kernel:OP    op OP faults where it is captured into a segment;
 *   break:OP     op OP faults where it runs as a breakpoint (waited for:
 *                the error is the op's);
 *   eager:OP     op OP faults where it runs eagerly and not as a
 *                breakpoint (reference steps, warm-up, run), not waited
 *                for: CUDA reports it later, as a real fault.
 * OP is the op's name as plan_op_label() writes it.
 */
enum { ENGINE_FAULT_NONE, ENGINE_FAULT_OOM, ENGINE_FAULT_KERNEL, ENGINE_FAULT_BREAK,
       ENGINE_FAULT_EAGER };

/*
 * BCG_SYNC=1 (bcgtool(1), ENVIRONMENT), for finding a faulting kernel:
 * CUDA reports a kernel's fault at the next synchronisation, so without
 * it the error may be blamed on a later op. With it the engine waits for
 * the device after every eager launch (reference steps, the warm-up before
 * each capture, breakpoints, run) and after every segment launch, and a
 * fault is reported with that op or segment. Off: "0" or empty or unset.
 * Returns 1 or 0, or -1 for another value.
 */
int engine_sync_mode(void);
struct engine_fault {
	int      kind;
	char     op[128];
	uint64_t limit;          /* oom: bytes */
};

/* A var-bound attribute: before each step, call[op].attr[pos] gets the
 * var's value (its mirror in the arena is written too). */
struct engine_bind {
	uint32_t op;
	int      pos;
	uint32_t var;
};

/*
 * The serving geometry of a program (formats/op-script.md, "Batch feeds"):
 * the tensors that carry the batch, the request dim, and the paged cache.
 * R is the rows of the seq_lens feed; MB the columns of the block_table
 * feed (else of the first paged_attention's block_table, else 1); NB and
 * BS the first two axes of the first paged op's cache (else R * MB and 1).
 */
enum {
	ENGINE_FEED_SEQ_LENS, ENGINE_FEED_QUERY_START, ENGINE_FEED_BLOCK_TABLE,
	ENGINE_FEED_SLOTS, ENGINE_FEED_SEQ_POSITIONS, ENGINE_FEEDS
};

struct engine_batch_geometry {
	int      present;            /* the program has batch feeds */
	uint32_t max_requests;       /* R */
	uint32_t max_blocks;         /* MB: block ids a request can hold */
	uint32_t block_size;         /* BS: positions a block */
	uint32_t num_blocks;         /* NB: blocks of each cache */
	uint32_t feed[ENGINE_FEEDS]; /* the tensor of each batch feed; PLAN_NONE */
	uint32_t seq_var;            /* seq_lens' var (the default batch); PLAN_NONE */
};

/* The paged caches op O reads or writes, k's first: paged_attention's
 * and rope_paged_kv_write's two, paged_kv_write's one. Returns how many
 * (0 for any other op), the rest of CACHE PLAN_NONE. */
int engine_paged_caches(const struct plan_op *o, uint32_t cache[2]);

/* The geometry of PROGRAM (any plan: a script's program or a plan read
 * from a file). Returns 0, or -1 with a sentence in MSG when a dimension
 * passes 2^31 - 1. G->present is 0 for a program without batch feeds. */
int engine_batch_geometry(const plan_t *program, struct engine_batch_geometry *g,
                          char *msg, size_t len);

/* Every op's launch at one token count. */
struct engine_variant {
	int64_t         tokens;
	int             mode;       /* enum plan_mode: decides graph-safe forms */
	struct op_call *calls;      /* one per op */
};

struct engine {
	const plan_t             *plan;      /* the program; not owned */
	const struct backend_ops *be;
	struct backend           *b;
	struct backend_info       info;
	void                     *base;      /* arena base (device or host address) */
	uint64_t                  arena_bytes;
	uint64_t                  scratch_bytes; /* given to the backend's alloc */
	int64_t                   max_tokens;
	/* Eager steps above max_tokens (a serving token budget above the
	 * largest capture size): up to eager_tokens (max_tokens when none),
	 * each tensor that grows with the token count at above_offset[t]
	 * (UINT64_MAX: its place in the arena) in above_bytes of room after
	 * the arena (memplan_place_above). */
	int64_t                   eager_tokens;
	uint64_t                 *above_offset;
	uint64_t                  above_bytes;
	uint32_t                  nops;
	const struct op_kind    **kinds;     /* per op */
	unsigned                 *ready_in;  /* per op: its calls' op_call.ready_in */
	uint32_t                  nbinds;
	struct engine_bind       *binds;
	unsigned char            *staging;   /* host buffer for feeds */
	size_t                    staging_bytes;
	struct nvtx              *nvtx;      /* NULL: no ranges */
	int                       use_choices; /* run the implementations the
	                                          plan records (it was captured
	                                          on this backend) */
	uint32_t                  features;  /* PLAN_FEATURE_* of every launch */
	int                       share_impl; /* capture --share-exec: untuned
	                                         ops run impl_shared's choice */
	int                       prepare_trial; /* engine_variant_init makes
	                                            what launches need as the
	                                            tuner's trials (tune.h) */
	char                      note[320]; /* why "auto" fell back to host;
	                                        printed by engine_open, then
	                                        emptied */
	const char               *sync_in_capture; /* test hook, see exec.c */
	const char               *progress_label;  /* what replay_measure's
	                                              progress line says */
	struct engine_fault       fault;     /* test hook, see above */
	int                       sync_each; /* BCG_SYNC, see above */
	int                       capturing; /* launches go into a segment */
	int                       in_break;  /* the launch is a breakpoint's */
	/* Weights read from checkpoints (the plan's weight sources): the
	 * content hash of each source as read now, and how many differ from
	 * the hash the plan recorded. */
	uint64_t                 *weight_hash;
	uint32_t                  weights_changed;
	uint64_t                  weight_bytes;  /* bytes read from files */
	uint64_t                  weight_hash_ns;/* of which hashing took */
	/* A generation in progress (generate.h), or NULL: the prompt feed
	 * writes its tokens and every var is the tokens seen so far. */
	const struct engine_gen  *gen;
	struct engine_batch_geometry geo;    /* the serving batch's geometry */
	struct op_batch           batch;     /* the step's batch, as launches see it */
	int                       batch_set; /* engine_set_batch gave the batch:
	                                        steps no longer write the default */
	int32_t                  *batch_buf; /* host staging of the batch feeds */
	/* The rank's communicator (dist/comm.h), put in every launch's
	 * op_call.comm; NULL for one rank. Set by the command that runs the
	 * rank, after engine_open, before any variant is prepared. */
	struct dist_comm         *comm;
	/* Executables shared between sizes (share.h, exec_share_begin);
	 * NULL: each segment its own. */
	struct share_pool        *share;
	/* --nccl-mem symmetric (comm->nccl_mem, dist/comm.h): the operands of
	 * the collectives lie in a region of symmetric memory apart from the
	 * arena (engine.c says why), planned at coll_tokens, tensor T at
	 * coll_offset[T] (UINT64_MAX: in the arena). nccl_mem is what this
	 * engine's collectives use (enum dist_nccl_mem), for the plan. */
	int                       nccl_mem;
	void                     *coll_base;
	uint64_t                  coll_bytes;
	uint64_t                 *coll_offset;
	int64_t                   coll_tokens;
	/* The vars' schedules the steps follow: the plan's, copied by
	 * engine_open, unless engine_set_vars narrowed some (replay and run
	 * --var). */
	struct plan_var          *vars;
};

/* One step of a generation: REAL tokens (IDS) after CONSUMED earlier ones;
 * the step runs at its variant's token count T >= REAL, padded with id 0,
 * and every var is CONSUMED + T (positions CONSUMED .. CONSUMED + T - 1). */
struct engine_gen {
	const int32_t *ids;
	int64_t        real;
	int64_t        consumed;
};

/* Whether weight source I changed since the plan recorded its hash. */
int engine_weight_changed(const struct engine *e, uint32_t i);

/* One warning on stderr per weight source whose content changed since the
 * capture: "weight drift: FILE: tensor 'NAME' (weight 'W') changed since
 * the capture (xxh64 A, now B)". */
void engine_warn_weights(const struct engine *e);

/* Open BACKEND ("host", "cuda", or "auto": cuda when a device opens, else
 * host with the reason in e->note) for PROGRAM, whose tensors are placed
 * (plan_get_layout()->arena_bytes set) and whose token counts go up to
 * MAX_TOKENS; allocate the arena and initialize every tensor. */
int engine_open(const plan_t *program, const char *backend, int64_t max_tokens,
                struct engine **out, struct engine_error *err);
/* engine_open with room for eager steps of up to EAGER_TOKENS tokens
 * (above MAX_TOKENS; else none): the arena keeps its layout, which plans
 * record, and the tensors that grow get places after it (eager_tokens in
 * struct engine). A weight or state tensor that grows, exit 2; no memory
 * for the arena and the room together, exit 3. */
int engine_open_above(const plan_t *program, const char *backend, int64_t max_tokens,
                      int64_t eager_tokens, struct engine **out, struct engine_error *err);
void engine_close(struct engine *e);

/* Place PROGRAM's tensors for TOKENS tokens alone (memplan.h), then open it
 * as engine_open_above does with EAGER_TOKENS: for running a program at
 * one token count outside any plan (run, bench, replay's eager fallback). */
int engine_open_at(plan_t *program, const char *backend, int64_t tokens, int64_t eager_tokens,
                   struct engine **out, struct engine_error *err);

/* Where tensor T lies at TOKENS tokens: its place in the arena, or for an
 * eager step above max_tokens, its place in the room after it. */
void *engine_tensor_at(const struct engine *e, uint32_t t, int64_t tokens);

/* The implementation C runs untuned: the backend's impl_default when
 * usable, else its first usable one; with e->share_impl, what impl_shared
 * makes of that when usable. -1 when none can run it. */
int engine_impl_default(const struct engine *e, const struct op_call *c);

/* Launch with FEATURES (PLAN_FEATURE_*) from now on; e->features keeps
 * the ones the backend honours. */
void engine_set_features(struct engine *e, uint32_t features);

/* Var I's schedule as the steps follow it (engine.vars). */
const struct plan_var *engine_var(const struct engine *e, uint32_t i);

/* A var stepped from START to LIMIT (then back to START) by the plan's
 * step, instead of over the plan's range (replay and run --var). */
struct engine_var_range {
	const char *name;
	int64_t     start, limit;
	int64_t     step;       /* from one step's value to the next; 0: the
	                           plan's var's */
};
#define ENGINE_VAR_RANGES_MAX 16

/* Follow the N ranges R in the steps from now on. Each must lie within
 * its var's range in the plan: the graphs were captured for those values,
 * and a cache holds only so many positions. BCG_EXIT_USAGE, naming the
 * plan's range, when one does not, or when the plan has no such var. */
int engine_set_vars(struct engine *e, const struct engine_var_range *r, uint32_t n,
                    struct engine_error *err);

/* Whether the N ranges R lie within PLAN's vars, as engine_set_vars asks:
 * 0, or -1 with why in MSG, PLAN called WHAT there ("plan", "script"):
 * for a command to refuse them before it opens an engine. */
int engine_check_vars(const plan_t *plan, const char *what, const struct engine_var_range *r,
                      uint32_t n, char *msg, size_t len);

/* Every var back to the plan's schedule (undoing engine_set_vars). */
void engine_reset_vars(struct engine *e);

/* Put every tensor but the weights back in its initial state. */
int engine_reset(struct engine *e, struct engine_error *err);

/* Prepare the launches of all ops at TOKENS tokens in MODE. Each op runs
 * the implementation the plan records for it at TOKENS when e->use_choices
 * is set and there is a record, else its default (engine_impl_default);
 * what that implementation needs made first (engine_prepare_call) is made
 * here, kept (a trial's while e->prepare_trial is set). */
int engine_variant_init(struct engine *e, int64_t tokens, int mode,
                        struct engine_variant *v, struct engine_error *err);
void engine_variant_release(struct engine_variant *v);

/* Before step STEP (0-based since the last reset): write the feeds and var
 * mirrors, and bind var attributes in V's calls. The batch feeds get the
 * default batch of V's token count at STEP (op-script.md) unless
 * engine_set_batch gave one. */
int engine_step_begin(struct engine *e, struct engine_variant *v, uint64_t step,
                      struct engine_error *err);
/* The same, where NEXT (a segment captured as the start of V's steps) is
 * what the caller launches next, before anything else: the backend may
 * have NEXT write the feeds (backend.h, feeds_end). */
int engine_step_begin_before(struct engine *e, struct engine_variant *v, uint64_t step,
                             struct backend_graph *next, struct engine_error *err);

/*
 * Write BATCH (serve/batch.h) into the program's batch feeds for the next
 * step, padded to PADDED_TOKENS token rows (the token count of the variant
 * that runs it) and PADDED_REQUESTS requests: rows past batch->key.tokens
 * get the pad slot and position 0, requests past batch->key.requests
 * seq_len 0, no tokens (query_start = key.tokens) and block ids 0. The
 * arrays reach the arena, where the graph-safe kernels read them, and
 * e->batch, which the eager launches read. From then on steps leave the
 * batch feeds alone (the caller gives a batch before each step); BATCH
 * NULL returns to the default batch. Errors, exit status 2: the program
 * has no batch feeds; a count outside the geometry or the padding; a block
 * size other than the program's; query_start not ascending from 0 to
 * key.tokens; a seq_len below its request's tokens or above MB * BS; a
 * block id outside [0, NB); a slot outside [0, NB * BS) other than the pad.
 */
int engine_set_batch(struct engine *e, const struct serve_batch *batch,
                     uint32_t padded_tokens, uint32_t padded_requests,
                     struct engine_error *err);

/* What op OP's call C needs made before its first launch, by the
 * backend's prepare hook (backend.h): on cuda the packed copy of an
 * mma_packed, wgmma or wgmma_whole product's weight. KEEP 0 for a trial (the tuner's
 * candidates). Nothing while the arena is not placed (e->base NULL: shapes
 * only). An error (out of device memory) names the op, the implementation
 * and its weights, exit status 3. engine_prepared_bytes: the device
 * memory such copies hold now. */
int      engine_prepare_call(struct engine *e, uint32_t op, const struct op_call *c, int keep,
                             struct engine_error *err);
uint64_t engine_prepared_bytes(const struct engine *e);

/* Launch op OP of V (eagerly, or into the capture in progress). */
int engine_launch(struct engine *e, struct engine_variant *v, uint32_t op,
                  struct engine_error *err);

/* One whole eager step: engine_step_begin then every op, each in its
 * host-shaped form (the reference a capture is verified against). */
int engine_eager_step(struct engine *e, struct engine_variant *v, uint64_t step,
                      struct engine_error *err);

/* One whole step launched op by op, each op in the form V gives it: the
 * graph-safe form where V is a full graph's variant. Such a step computes
 * what a replay of V's graphs computes, bit for bit (replay --check). */
int engine_launch_step(struct engine *e, struct engine_variant *v, uint64_t step,
                       struct engine_error *err);

/* Copy tensor T's contents at TOKENS tokens into host memory (plan_tensor_bytes
 * bytes); waits for the work before it. */
int engine_read_tensor(struct engine *e, uint32_t t, int64_t tokens, void *dst,
                       struct engine_error *err);

/* Print ERR on stderr: "bcgtool: SCRIPT:LINE:COL: message" when it
 * concerns an op with a known position in SCRIPT (the plan's script when
 * SCRIPT is NULL), else "bcgtool: message". */
void engine_report(const struct engine_error *err, const plan_t *plan, const char *script);

/* The op's position for messages: "attn.3 (matmul)" style name. */
void engine_op_label(const plan_t *plan, uint32_t op, char *buf, size_t len);

#endif /* BCG_ENGINE_ENGINE_H */
