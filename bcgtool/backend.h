/*
 * backend.h - what the engine needs from a backend.
 *
 * The engine (engine/) is written once; a backend supplies memory, kernel
 * launches, segment capture and timing. Two exist:
 *  - cuda (backend-cuda.c): one stream, cuBLAS, CUDA graphs from stream
 *    capture, CUDA events;
 *  - host (backend-host.c): the reference kernels on host memory; a
 *    "captured" segment is a snapshot of its op calls, replayed in order.
 * Every function returns 0, or -1 with one sentence in MSG.
 */
#ifndef BCG_BACKEND_H
#define BCG_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "ops/op.h"
#include "plan.h"

struct backend;         /* one open backend: device, stream, handles */
struct verify_result;   /* engine/verify.h */
struct backend_graph;   /* a captured, instantiated segment */
struct backend_exec;    /* an executable several segments share */
struct bcg_slice;       /* ops/numeric.h: a rank's share of a split tensor */

/* What a backend reports about itself; becomes the plan's meta. */
struct backend_info {
	char     device[256];     /* "" on host */
	int32_t  cc_major;
	int32_t  cc_minor;
	int32_t  cuda_runtime;
	int32_t  cuda_driver;
	int32_t  cublas;
	int32_t  sm_count;
	uint64_t mem_total;
	uint64_t mem_free;
	int      no_gpu;          /* open failed: no GPU or no driver at all */
};

/* What decides whether two segments may share an executable
 * (engine/share.h), one per node in creation order: its type, the
 * function a kernel node launches (its identity in this process: the
 * CUfunction or CUkernel on cuda, the op kind and implementation on the
 * host) and a hash of the launch attributes read back from it (cluster
 * dims, priority, cooperative launch, memory sync domain, ...). Launch
 * shapes and parameters are not part of it: an update changes those. */
struct backend_node_key {
	int32_t  type;        /* enum plan_node_type */
	uint32_t reserved;
	uint64_t func;
	uint64_t attrs;
};

/* A node of a captured segment as the backend read it back, with the op
 * whose launch created it. The engine turns these into plan nodes. */
struct backend_capture {
	uint32_t           nnodes;
	struct plan_node  *nodes;     /* kernel strings and params owned here */
	uint32_t           nedges;
	struct plan_edge  *edges;
	uint64_t           capture_ns;
	uint64_t           instantiate_ns;
	uint64_t           upload_ns;
	/* Sharing (engine/share.h): the nodes' keys (the host gives them
	 * without nodes); OPAQUE when some node could not be read back whole
	 * (an attribute the driver would not give, a collective): such a
	 * segment never shares. */
	uint32_t                 nkeys;
	struct backend_node_key *keys;
	int                      opaque;
	char                     opaque_why[96];   /* the first reason */
	/* Device memory the segment's executable took: free memory before
	 * its instantiation less free memory after its upload (0 on the host,
	 * and for a segment that runs on another's executable). */
	uint64_t           exec_bytes;
	uint64_t           update_ns;   /* joining a shared executable */
};

void backend_capture_release(struct backend_capture *cap);

/* The kernel a step's first segment runs before its captured nodes to
 * write the step's feeds (the CUDA backend, backend-cuda-feed.cu): a
 * node the graph gains after its capture was read back, so the last in
 * its creation order and in no plan's node records. A profile credits it
 * to the step and the segment (profile/attrib.c). */
#define BACKEND_FEED_KERNEL "bcg_feed_kernel"

/* Time stamps on the backend's timeline (CUDA events; the host clock). */
#define BACKEND_MAX_MARKS 4096

struct backend_ops {
	const char *name;
	int         kind;                       /* enum plan_backend */

	int  (*open)(struct backend **out, struct backend_info *info, char *msg, size_t len);
	void (*close)(struct backend *b);

	/* One allocation for the arena and the backend's extra areas
	 * (scratch, library workspace), which follow the arena. */
	int  (*alloc)(struct backend *b, uint64_t arena_bytes, uint64_t scratch_bytes,
	              void **base, char *msg, size_t len);
	void (*free)(struct backend *b, void *base);

	/* Bytes of scratch CALL needs (0 for most ops). It must not shrink as
	 * the token count of CALL's operands grows: the engine asks at the
	 * largest count it will run and gives every launch that much. */
	size_t (*scratch_bytes)(const struct op_call *call);

	/* Fill COUNT elements at DST per INIT, ordered on the stream. SLICE
	 * (numeric.h; NULL: none): DST is a rank's share of a split tensor,
	 * element i computed as element bcg_slice_index(SLICE, i) of the
	 * whole. */
	int  (*init)(struct backend *b, void *dst, int dtype, uint64_t count,
	             const struct plan_init *init, const struct bcg_slice *slice,
	             char *msg, size_t len);
	/* Host memory to the arena, ordered on the stream; SRC may be reused
	 * as soon as the call returns. */
	int  (*write)(struct backend *b, void *dst, const void *src, size_t bytes,
	              char *msg, size_t len);
	/* Optional: the writes between feeds_begin and feeds_end are a
	 * step's feeds, which the backend may queue as one operation (the
	 * CUDA backend: small ones as one batch of the stream's own writes,
	 * bench/RESULTS.md, twenty-eighth session). Each write's SRC may still
	 * be reused at once; the order of the writes and of anything queued
	 * after feeds_end is kept. feeds_end is called after every
	 * feeds_begin, after a failed write too. NEXT (may be NULL): the
	 * graph the caller launches next, a segment captured with STEP_START
	 * (capture_begin), with nothing read from the fed tensors before it;
	 * the backend may leave the feeds to NEXT's next launch to write (the
	 * CUDA backend: its feed node, backend-cuda-feed.cu). */
	void (*feeds_begin)(struct backend *b);
	int  (*feeds_end)(struct backend *b, struct backend_graph *next, char *msg, size_t len);
	/* The arena to host memory; waits for all earlier work. */
	int  (*read)(struct backend *b, void *dst, const void *src, size_t bytes,
	             char *msg, size_t len);
	/* Keeping tensors where they lie, to compare them there later
	 * (engine/stash.h). spare_alloc: BYTES of the backend's memory apart
	 * from the arena, or *P NULL (and 0 returned) when that much is not
	 * free with room to spare for the work still to come. */
	int  (*spare_alloc)(struct backend *b, uint64_t bytes, void **p, char *msg, size_t len);
	void (*spare_free)(struct backend *b, void *p);
	/* BYTES from SRC to DST, both the backend's memory, ordered on the
	 * stream. */
	int  (*copy)(struct backend *b, void *dst, const void *src, size_t bytes,
	             char *msg, size_t len);
	/* What verify_compare() gives for COUNT elements of DTYPE at GOT and
	 * WANT, both the backend's memory, computed there; waits for all
	 * earlier work. */
	int  (*compare)(struct backend *b, int dtype, const void *got, const void *want,
	                uint64_t count, int tolerant, struct verify_result *res,
	                char *msg, size_t len);
	/* Launch one op (eagerly, or into the capture in progress), running
	 * the implementation call->impl names. */
	int  (*launch)(struct backend *b, const struct op_call *call, char *msg, size_t len);
	/* What implementation call->impl needs made before CALL's first
	 * launch: on cuda, the packed copy of its weight that mma_packed,
	 * wgmma and wgmma_whole read (ops/cuda.h, cuda_op_prepare), made once
	 * for every call of that weight and kept until close. Called outside any capture, once the weights hold
	 * their bytes (the engine writes them at open; no op writes one).
	 * KEEP 0: a trial, the tuner timing a candidate; trim frees what only
	 * trials asked for. prepared_bytes: the memory such copies hold. NULL
	 * (all three): the backend needs nothing made. */
	int      (*prepare)(struct backend *b, const struct op_call *call, int keep, char *msg,
	                    size_t len);
	void     (*trim)(struct backend *b);
	uint64_t (*prepared_bytes)(struct backend *b);

	/* The implementations of op kind ID (at least one), each by the name
	 * plans store; whether implementation IMPL can run CALL (shapes,
	 * dtypes, alignment); the one CALL runs untuned (capture --no-tune,
	 * the ranks of --tp, the tuner's incumbent): impl_default's answer
	 * when it is usable, else the first usable one (impl_default may be
	 * NULL, or answer -1). These need no open backend. */
	int         (*impl_count)(enum op_id id);
	const char *(*impl_name)(enum op_id id, int impl);
	int         (*impl_usable)(const struct op_call *call, int impl);
	int         (*impl_default)(const struct op_call *call);
	/* Whether implementation IMPL of op kind ID is fast only at lengths
	 * like those it is timed at (attention's dsplit forms, for rows of one
	 * round): the tuner weighs it only where capture --tune-var gives the
	 * values the replay will see, never at the script's first ones. NULL:
	 * none is. */
	int         (*impl_windowed)(enum op_id id, int impl);
	/* In a plan that shares executables across capture sizes (capture
	 * --share-exec): what CALL runs untuned instead of IMPL, the one it
	 * would run otherwise: one whose kernels are the same at more sizes,
	 * or IMPL. NULL: IMPL always. */
	int         (*impl_shared)(const struct op_call *call, int impl);
	/* The median time of CALL over REPS launches, each started with cold
	 * caches (as in a step, where every product streams weights that no
	 * earlier op left in cache), in microseconds: GPU time on cuda, host
	 * time on host. CALL's operands are overwritten. */
	int  (*time_call)(struct backend *b, const struct op_call *call, unsigned reps,
	                  double *us, char *msg, size_t len);
	/* Capture features (PLAN_FEATURE_*) for every launch from now on.
	 * Returns the ones the backend honours: features it lacks are
	 * dropped, so that a plan never records what did not happen. */
	uint32_t (*set_features)(struct backend *b, uint32_t features);

	/* Segment capture: begin; after each op's launch, op_done(op) so nodes
	 * can be attributed; end gives the instantiated, uploaded segment and
	 * (when REC is not NULL) its nodes. STEP_START: the segment is the
	 * first thing a step runs, and may carry the step's feeds (feeds_end);
	 * whatever the backend adds for that is not among REC's nodes. */
	int  (*capture_begin)(struct backend *b, int step_start, char *msg, size_t len);
	int  (*capture_op_done)(struct backend *b, uint32_t op, char *msg, size_t len);
	int  (*capture_end)(struct backend *b, struct backend_graph **graph,
	                    struct backend_capture *rec, char *msg, size_t len);
	int  (*graph_launch)(struct backend *b, struct backend_graph *graph, char *msg, size_t len);
	void (*graph_free)(struct backend *b, struct backend_graph *graph);

	/* Executables shared between segments of different sizes
	 * (engine/share.h). After share(b, 1), capture_end keeps each graph
	 * as a template and gives it no executable; graph_instantiate then
	 * gives it one:
	 *  - SHARED NULL: its own;
	 *  - *SHARED NULL: a new executable that others may share, from G;
	 *    *SHARED gets the caller's reference (exec_put drops it);
	 *  - else: G runs on *SHARED, which is updated to G at once (and again
	 *    before a launch of G whenever another graph had it since). When
	 *    the update is refused, *REFUSED gets the backend's reason (on
	 *    cuda a cudaGraphExecUpdateResult, > 0) and G gets its own
	 *    executable instead; else *REFUSED is 0.
	 * REC (may be NULL) gets the times and exec_bytes. A graph freed
	 * leaves a shared executable to its other users. */
	void (*share)(struct backend *b, int on);
	int  (*graph_instantiate)(struct backend *b, struct backend_graph *g,
	                          struct backend_exec **shared, struct backend_capture *rec,
	                          int *refused, char *msg, size_t len);
	void (*exec_put)(struct backend *b, struct backend_exec *x);

	/* Hold the stream for about US microseconds (the GPU waits, the host
	 * goes on queueing): lets timings of queued work exclude host gaps.
	 * May be NULL (the host backend has no separate timeline). */
	int  (*hold)(struct backend *b, double us, char *msg, size_t len);
	/* Record time stamp SLOT (< BACKEND_MAX_MARKS) on the stream. */
	int  (*mark)(struct backend *b, unsigned slot, char *msg, size_t len);
	/* Wait for all work; then elapsed milliseconds between two marks. */
	int  (*sync)(struct backend *b, char *msg, size_t len);
	int  (*elapsed)(struct backend *b, unsigned from, unsigned to, double *ms,
	                char *msg, size_t len);

	/* Test hook (BCG_TEST_FAULT, engine.h): in place of an op's launch,
	 * work that faults as a broken kernel does -- on cuda a kernel that
	 * writes to an invalid address, captured like any launch. With WAIT
	 * (never while capturing) it is waited for, so that the error is the
	 * op's; else CUDA reports it at a later call, as a real fault. The
	 * host backend fails at once. */
	int  (*fault)(struct backend *b, int wait, char *msg, size_t len);
};

/* The backend called NAME ("host", "cuda"), or NULL when this build lacks
 * it. */
const struct backend_ops *backend_find(const char *name);

/* Names of the backends in this build, "cuda" first when built. */
extern const struct backend_ops *const backend_table[];

/* Address arithmetic on an arena base that may be a device address. */
static inline void *backend_at(void *base, uint64_t offset)
{
	return (void *)((uintptr_t)base + (uintptr_t)offset);
}

#endif /* BCG_BACKEND_H */
