/*
 * backend-cuda.c - the CUDA backend: one non-blocking stream, cuBLAS bound
 * to it, one device allocation, segments captured from the stream into
 * CUDA graphs and read back node by node.
 *
 * The device allocation holds, from its base: the plan's arena, the
 * kernels' scratch, then cuBLAS's workspace.
 * Every address a graph holds is therefore base + offset, and a plan can
 * record operands relocatably.
 *
 * Graph nodes are read through the driver API (kernel names and parameter
 * layouts of library kernels are not visible through the runtime), reached
 * with cudaGetDriverEntryPointByVersion so that bcgtool never links the
 * driver library itself and starts on machines without a GPU.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "backend.h"
#include "backend-cuda.h"
#include "dist/comm.h"
#include "dist/dist.h"
#include "engine/verify.h"
#include "ops/cuda.h"
#include "util.h"

/* cuBLAS's workspace: its guidance for Hopper is 32 MiB. */
#define CUDA_WORKSPACE_BYTES (32u << 20)

/* Free device memory a spare allocation leaves at least: the larger of
 * this and a twentieth of the device, for graphs instantiated later,
 * cuBLAS and other processes. */
#define CUDA_SPARE_HEADROOM (1ull << 30)

/* The most repetitions one time_call measures. */
#define CUDA_TIME_REPS_MAX 64

/* Feeds travel through pinned staging slots, so a copy never waits for
 * the stream (a pageable copy may) and the host can run ahead. */
#define CUDA_STAGING_SLOTS     64
#define CUDA_STAGING_SLOT_SIZE (256u << 10)

/* Feeds of at most this many 32-bit words (a step's token ids, positions
 * and vars at small sizes) are the stream's own writes, in one batch of
 * memory operations (cuStreamBatchMemOp: fewer than 256 a batch). The
 * stream's front end stores them in order, with no copy engine to hand
 * over to and back from, no staging slot and no event. Between
 * feeds_begin and feeds_end the words of all the step's feeds wait in
 * one batch of at most CUDA_FEED_WORDS_MAX. On an H200 (bench/step-
 * boundary.cu; bench/RESULTS.md, twenty-eighth session) three 4-byte
 * feeds between graph launches cost about 6.1 us a step as pinned copies,
 * 5.7 as three batches, 3.3 as one: the 1B's step 0.32% faster with one.
 * Each write keeps its memory barrier, the wait for the work before it:
 * without (CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) a batch cost nothing
 * there, but a step still running could read the next step's values.
 * Where the step's first segment is a graph of its own, its feed node
 * writes the batch's words instead (backend-cuda-feed.cu; feeds_end): 1.0
 * us a step there, against 3.4 for the batch. */
#define CUDA_WRITE_WORDS_MAX 64
#define CUDA_FEED_WORDS_MAX  CUDA_FEED_NODE_WORDS

typedef CUresult (*pfn_node_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2 *);
typedef CUresult (*pfn_func_name)(const char **, CUfunction);
typedef CUresult (*pfn_func_param)(CUfunction, size_t, size_t *, size_t *);
typedef CUresult (*pfn_kernel_name)(const char **, CUkernel);
typedef CUresult (*pfn_kernel_param)(CUkernel, size_t, size_t *, size_t *);
typedef CUresult (*pfn_batch_memop)(CUstream, unsigned, CUstreamBatchMemOpParams *, unsigned);

struct seen_node {
	cudaGraphNode_t node;
	uint32_t        op;
};

/* A kernel's parameter layout. The driver offers no count: parameters are
 * enumerated until cuFuncGetParamInfo refuses the index, so each kernel is
 * enumerated once and remembered. */
#define CUDA_MAX_PARAMS 64
struct param_layout {
	const void *fn;                    /* CUfunction or CUkernel */
	uint32_t    n;
	uint32_t    offset[CUDA_MAX_PARAMS];
	uint32_t    size[CUDA_MAX_PARAMS];
};

struct backend {
	int                device;
	cudaStream_t       stream;
	struct cuda_lt    *lt;
	struct cuda_op_ctx ctx;

	void              *base;
	uint64_t           arena_bytes;           /* the plan's arena, from base */
	uint64_t           total_bytes;

	cudaEvent_t        marks[BACKEND_MAX_MARKS];

	/* Timing single launches (time_call): a pair of events per
	 * repetition and a buffer of zeros twice the L2 cache, read between
	 * repetitions to empty it. */
	cudaEvent_t        tick[2 * CUDA_TIME_REPS_MAX];
	void              *scrub;
	size_t             scrub_bytes;
	int                tune_in_context;       /* BCG_TUNE_CONTEXT=pdl */

	void              *verify_work;           /* compare's sums */
	size_t             verify_bytes;

	unsigned char     *staging;               /* pinned */
	cudaEvent_t        staging_done[CUDA_STAGING_SLOTS];
	int                staging_used[CUDA_STAGING_SLOTS];
	unsigned           staging_next;

	/* Whether a router was launched, eagerly or into a graph: the
	 * waits then read the routers' NaN check (cuda.h). */
	int                routed;
	int                capture_collectives;   /* a collective went into the
	                                             capture in progress */

	/* Executables shared (backend.h, share): graphs are kept as
	 * templates and instantiated on the engine's word. */
	int                share;

	/* The capture in progress: nodes in creation order with their op. */
	int                capturing;
	uint64_t           capture_t0;
	struct seen_node  *seen;
	uint32_t           nseen;
	uint32_t           capseen;

	struct param_layout *layouts;
	uint32_t           nlayouts;
	uint32_t           caplayouts;

	pfn_node_params    node_params;
	pfn_func_name      func_name;
	pfn_func_param     func_param;
	pfn_kernel_name    kernel_name;
	pfn_kernel_param   kernel_param;
	pfn_batch_memop    batch_memop;           /* NULL: feeds are copies */
	/* Between feeds_begin and feeds_end: the words queued so far, and
	 * whether other writes went to the stream meanwhile (the words then
	 * go there too, in order). */
	int                feeding;
	int                feed_mixed;
	unsigned           nfeed;
	CUstreamBatchMemOpParams feed[CUDA_FEED_WORDS_MAX];
	/* The capture in progress begins a step (capture_begin); whether
	 * such a capture gets a feed node (BCG_FEED_NODE). */
	int                capture_fed;
	int                feed_node;
};

/* An executable several graphs share: CURRENT is the graph it was last
 * updated to (NULL: none known, the next launch updates). */
struct backend_exec {
	cudaGraphExec_t       exec;
	unsigned              refs;
	struct backend_graph *current;
};

struct backend_graph {
	cudaGraphExec_t      exec;        /* its own; NULL when it runs on SHARED */
	cudaGraph_t          tmpl;        /* kept when sharing: what updates apply */
	struct backend_exec *shared;
	int                  collectives; /* holds a rank's collectives: its launches
	                                     are followed by the rank's watchdog */
	/* A step's first segment with its own executable: the feed node
	 * (backend-cuda-feed.cu) and the graph it is a node of, kept for
	 * cudaGraphExecKernelNodeSetParams; FEED_ARMED: words set for the
	 * next launch; FEED_LIVE: the node's words are not none. */
	cudaGraph_t          fed_graph;
	cudaGraphNode_t      feed;
	int                  feed_armed;
	int                  feed_live;
};

#define CUDA_TRY(call, what)                                                    \
	do {                                                                    \
		cudaError_t e_ = (call);                                        \
		if (e_ != cudaSuccess) {                                        \
			snprintf(msg, len, "%s: %s%s (%s)", what,               \
			         cuda_fault_tag(e_), cudaGetErrorString(e_),     \
			         cudaGetErrorName(e_));                          \
			goto fail;                                              \
		}                                                               \
	} while (0)

static void cuda_close(struct backend *b);

static int cuda_open(struct backend **out, struct backend_info *info, char *msg, size_t len)
{
	struct backend *b = calloc(1, sizeof *b);
	struct cudaDeviceProp prop;
	size_t mfree = 0, mtotal = 0;
	int n = 0, v = 0;

	if (b == NULL) {
		snprintf(msg, len, "out of memory");
		return -1;
	}
	memset(info, 0, sizeof *info);
	/* How the tuner times an op (cuda_time_call): isolated, or in context. */
	const char *tc = getenv("BCG_TUNE_CONTEXT");
	if (tc != NULL && strcmp(tc, "pdl") == 0) {
		b->tune_in_context = 1;
	} else if (tc != NULL && *tc != '\0' && strcmp(tc, "isolated") != 0) {
		snprintf(msg, len, "BCG_TUNE_CONTEXT is '%s': isolated or pdl", tc);
		free(b);
		return -1;
	}
	/* Whether a step's first segment writes its feeds (backend-cuda-
	 * feed.cu): on unless BCG_FEED_NODE is 0, to compare the two. */
	const char *fn = getenv("BCG_FEED_NODE");
	if (fn != NULL && *fn != '\0' && strcmp(fn, "0") != 0 && strcmp(fn, "1") != 0) {
		snprintf(msg, len, "BCG_FEED_NODE is '%s': 0 or 1", fn);
		free(b);
		return -1;
	}
	b->feed_node = fn == NULL || strcmp(fn, "0") != 0;
	/* No device, or no driver at all (the runtime then calls the driver
	 * "insufficient" and reports version 0): a machine without a GPU, not
	 * a broken one. */
	cudaError_t ce = cudaGetDeviceCount(&n);
	if (ce == cudaErrorNoDevice || (ce == cudaSuccess && n < 1) ||
	    (ce == cudaErrorInsufficientDriver && cudaDriverGetVersion(&v) == cudaSuccess &&
	     v == 0)) {
		info->no_gpu = 1;
		snprintf(msg, len, "no GPU found");
		goto fail;
	}
	CUDA_TRY(ce, "no usable CUDA device");
	/* The thread's current device: 0, unless a tensor-parallel rank's
	 * communicator made its GPU current (dist/nccl.c: rank r, GPU r). */
	CUDA_TRY(cudaGetDevice(&b->device), "cudaGetDevice");
	CUDA_TRY(cudaSetDevice(b->device), "cudaSetDevice");
	CUDA_TRY(cudaGetDeviceProperties(&prop, b->device), "cudaGetDeviceProperties");
	snprintf(info->device, sizeof info->device, "%s", prop.name);
	info->cc_major = prop.major;
	info->cc_minor = prop.minor;
	info->sm_count = prop.multiProcessorCount;
	CUDA_TRY(cudaRuntimeGetVersion(&v), "cudaRuntimeGetVersion");
	info->cuda_runtime = v;
	CUDA_TRY(cudaDriverGetVersion(&v), "cudaDriverGetVersion");
	info->cuda_driver = v;
	CUDA_TRY(cudaMemGetInfo(&mfree, &mtotal), "cudaMemGetInfo");
	info->mem_free = mfree;
	info->mem_total = mtotal;

	CUDA_TRY(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking), "cudaStreamCreate");
	if (cuda_lt_open(&b->lt, msg, len) != 0)
		goto fail;
	info->cublas = cuda_lt_version();

	CUDA_TRY(cudaMallocHost((void **)&b->staging,
	                        (size_t)CUDA_STAGING_SLOTS * CUDA_STAGING_SLOT_SIZE),
	         "allocating pinned staging memory");
	for (unsigned i = 0; i < CUDA_STAGING_SLOTS; i++)
		CUDA_TRY(cudaEventCreateWithFlags(&b->staging_done[i], cudaEventDisableTiming),
		         "cudaEventCreate");

	b->node_params = (pfn_node_params)cuda_driver_entry("cuGraphKernelNodeGetParams");
	b->func_name = (pfn_func_name)cuda_driver_entry("cuFuncGetName");
	b->func_param = (pfn_func_param)cuda_driver_entry("cuFuncGetParamInfo");
	b->kernel_name = (pfn_kernel_name)cuda_driver_entry("cuKernelGetName");
	b->kernel_param = (pfn_kernel_param)cuda_driver_entry("cuKernelGetParamInfo");
	b->batch_memop = (pfn_batch_memop)cuda_driver_entry("cuStreamBatchMemOp");
	if (b->node_params == NULL) {
		snprintf(msg, len, "the driver lacks cuGraphKernelNodeGetParams");
		goto fail;
	}

	b->ctx.stream = b->stream;
	b->ctx.lt = b->lt;
	if ((b->ctx.packs = cuda_packs_new()) == NULL) {
		snprintf(msg, len, "out of memory");
		goto fail;
	}
	b->ctx.sm_count = prop.multiProcessorCount;
	/* the engine refused a bad value before opening the backend */
	if (kernel_shapes_from_env(&b->ctx.gemv_shape, &b->ctx.moe_gu_shape, msg, len) != 0)
		goto fail;
	*out = b;
	return 0;
fail:
	cuda_close(b);
	return -1;
}

static void cuda_close(struct backend *b)
{
	if (b == NULL)
		return;
	if (b->stream != NULL)
		cudaStreamSynchronize(b->stream);
	for (unsigned i = 0; i < BACKEND_MAX_MARKS; i++)
		if (b->marks[i] != NULL)
			cudaEventDestroy(b->marks[i]);
	for (unsigned i = 0; i < CUDA_STAGING_SLOTS; i++)
		if (b->staging_done[i] != NULL)
			cudaEventDestroy(b->staging_done[i]);
	for (unsigned i = 0; i < 2 * CUDA_TIME_REPS_MAX; i++)
		if (b->tick[i] != NULL)
			cudaEventDestroy(b->tick[i]);
	if (b->scrub != NULL)
		cudaFree(b->scrub);
	if (b->verify_work != NULL)
		cudaFree(b->verify_work);
	if (b->staging != NULL)
		cudaFreeHost(b->staging);
	cuda_packs_free(b->ctx.packs);
	cuda_lt_close(b->lt);
	if (b->stream != NULL)
		cudaStreamDestroy(b->stream);
	free(b->seen);
	free(b->layouts);
	free(b);
}

static uint64_t cuda_extra_bytes(struct backend *b, uint64_t scratch_bytes)
{
	(void)b;
	return ((scratch_bytes + 255) & ~(uint64_t)255) + CUDA_WORKSPACE_BYTES;
}

static void cuda_free(struct backend *b, void *base);

static int cuda_alloc(struct backend *b, uint64_t arena_bytes, uint64_t scratch_bytes,
                      void **base, char *msg, size_t len)
{
	uint64_t arena = (arena_bytes + 255) & ~(uint64_t)255;
	uint64_t scratch = (scratch_bytes + 255) & ~(uint64_t)255;
	uint64_t total = arena + cuda_extra_bytes(b, scratch_bytes);
	cudaError_t e;

	e = cudaMalloc(base, (size_t)total);
	if (e != cudaSuccess) {
		char want[32], have[32];
		size_t mfree = 0, mtotal = 0;
		cudaGetLastError();
		cudaMemGetInfo(&mfree, &mtotal);
		snprintf(msg, len, "cannot allocate %s on the device (%s free): %s",
		         bcg_human_bytes(total, want, sizeof want),
		         bcg_human_bytes(mfree, have, sizeof have), cudaGetErrorString(e));
		*base = NULL;
		return -1;
	}
	b->base = *base;
	b->arena_bytes = arena_bytes;
	b->total_bytes = total;
	b->ctx.scratch = backend_at(*base, arena);
	b->ctx.scratch_bytes = (size_t)scratch;
	CUDA_TRY(cudaMemsetAsync(*base, 0, (size_t)total, b->stream), "clearing the arena");
	cuda_lt_workspace(b->lt, backend_at(*base, arena + scratch), CUDA_WORKSPACE_BYTES);
	return 0;
fail:
	cuda_free(b, *base);
	*base = NULL;
	return -1;
}

static void cuda_free(struct backend *b, void *base)
{
	if (b->stream != NULL)
		cudaStreamSynchronize(b->stream);
	cudaFree(base);
	b->base = NULL;
}

static size_t cuda_scratch(const struct op_call *call)
{
	return cuda_op_scratch_bytes(call);
}

static int cuda_init(struct backend *b, void *dst, int dtype, uint64_t count,
                     const struct plan_init *init, const struct bcg_slice *slice, char *msg,
                     size_t len)
{
	if (slice != NULL)
		return cuda_init_slice(dst, dtype, count, init, slice, b->stream, msg, len);
	return cuda_init_tensor(dst, dtype, count, init, b->stream, msg, len);
}

/* Queue the N word writes of OPS on the stream, one batch. 0: queued;
 * 1: the driver refused (nothing queued), and is not asked again. */
static int cuda_memops(struct backend *b, CUstreamBatchMemOpParams *ops, unsigned n)
{
	if (n == 0)
		return 0;
	if (b->batch_memop((CUstream)b->stream, n, ops, 0) != CUDA_SUCCESS) {
		b->batch_memop = NULL;
		return 1;
	}
	return 0;
}

/* The words of BYTES at SRC for DST, as writes at OPS[0..]. */
static void cuda_words(CUstreamBatchMemOpParams *ops, void *dst, const void *src, size_t bytes)
{
	const size_t n = bytes / sizeof(uint32_t);

	memset(ops, 0, n * sizeof ops[0]);
	for (size_t i = 0; i < n; i++) {
		uint32_t w;
		memcpy(&w, (const unsigned char *)src + i * sizeof w, sizeof w);
		ops[i].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
		ops[i].writeValue.address = (CUdeviceptr)(uintptr_t)dst + i * sizeof w;
		ops[i].writeValue.value = w;
		ops[i].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
	}
}

static int cuda_write_copy(struct backend *b, void *dst, const void *src, size_t bytes,
                           char *msg, size_t len);

/* The feeds queued since feeds_begin, to the stream, in their order: one
 * batch, or copies where the driver refuses it. */
static int cuda_feeds_flush(struct backend *b, char *msg, size_t len)
{
	unsigned n = b->nfeed;

	b->nfeed = 0;
	if (n == 0 || (b->batch_memop != NULL && cuda_memops(b, b->feed, n) == 0))
		return 0;
	for (unsigned i = 0; i < n; i++) {
		const uint32_t w = b->feed[i].writeValue.value;
		if (cuda_write_copy(b, (void *)(uintptr_t)b->feed[i].writeValue.address, &w,
		                    sizeof w, msg, len) != 0)
			return -1;
	}
	return 0;
}

static void cuda_feeds_begin(struct backend *b)
{
	b->feeding = 1;
	b->feed_mixed = 0;
	b->nfeed = 0;
}

/* The words queued, as NEXT's feed node's words for its next launch. */
static int cuda_feeds_arm(struct backend *b, struct backend_graph *next, char *msg, size_t len)
{
	uint64_t addr[CUDA_FEED_WORDS_MAX];
	uint32_t value[CUDA_FEED_WORDS_MAX];

	for (unsigned i = 0; i < b->nfeed; i++) {
		addr[i] = (uint64_t)b->feed[i].writeValue.address;
		value[i] = b->feed[i].writeValue.value;
	}
	if (cuda_feed_node_set(next->exec, next->feed, addr, value, b->nfeed, msg, len) != 0)
		return -1;
	next->feed_armed = 1;
	next->feed_live = 1;
	b->nfeed = 0;
	return 0;
}

static int cuda_feeds_end(struct backend *b, struct backend_graph *next, char *msg, size_t len)
{
	b->feeding = 0;
	/* NEXT writes them, unless other writes went to the stream between
	 * them: those stay in the stream's order. */
	if (next != NULL && next->feed != NULL && b->nfeed > 0 && !b->feed_mixed)
		return cuda_feeds_arm(b, next, msg, len);
	return cuda_feeds_flush(b, msg, len);
}

/* Whether BYTES for DST can be the stream's writes of 32-bit words: whole
 * aligned words, few enough, a driver that has not refused them, and not
 * in a capture (a capture would take them in as a node of a kind the plan
 * does not read back). */
static int cuda_words_ok(struct backend *b, const void *dst, size_t bytes)
{
	enum cudaStreamCaptureStatus cs;

	return b->batch_memop != NULL && !b->capturing && bytes >= sizeof(uint32_t) &&
	       bytes <= CUDA_WRITE_WORDS_MAX * sizeof(uint32_t) && bytes % sizeof(uint32_t) == 0 &&
	       (uintptr_t)dst % sizeof(uint32_t) == 0 &&
	       cudaStreamIsCapturing(b->stream, &cs) == cudaSuccess &&
	       cs == cudaStreamCaptureStatusNone;
}

/* BYTES at SRC to DST as a copy, ordered on the stream; SRC may be
 * reused as soon as the call returns. */
static int cuda_write_copy(struct backend *b, void *dst, const void *src, size_t bytes,
                           char *msg, size_t len)
{
	unsigned slot = b->staging_next;
	unsigned char *stage = b->staging + (size_t)slot * CUDA_STAGING_SLOT_SIZE;

	if (bytes > CUDA_STAGING_SLOT_SIZE) {
		/* Rare and large: a copy from the caller's memory, ordered on the
		 * stream and finished before the caller may reuse SRC. Not
		 * cudaMemcpy: it runs on the legacy stream, which our non-blocking
		 * stream does not wait for, and from pageable memory it may
		 * return before the data has landed, so a kernel queued next on
		 * the stream could read the old bytes. */
		CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, b->stream),
		         "cudaMemcpyAsync");
		CUDA_TRY(cudaStreamSynchronize(b->stream), "cudaStreamSynchronize");
		return 0;
	}
	b->staging_next = (slot + 1) % CUDA_STAGING_SLOTS;
	/* The slot's last copy was queued CUDA_STAGING_SLOTS writes ago. */
	if (b->staging_used[slot])
		CUDA_TRY(cudaEventSynchronize(b->staging_done[slot]), "waiting for a staging slot");
	memcpy(stage, src, bytes);
	CUDA_TRY(cudaMemcpyAsync(dst, stage, bytes, cudaMemcpyHostToDevice, b->stream),
	         "cudaMemcpyAsync");
	CUDA_TRY(cudaEventRecord(b->staging_done[slot], b->stream), "cudaEventRecord");
	b->staging_used[slot] = 1;
	return 0;
fail:
	return -1;
}

static int cuda_write(struct backend *b, void *dst, const void *src, size_t bytes,
                      char *msg, size_t len)
{
	const int words = cuda_words_ok(b, dst, bytes);
	const unsigned n = (unsigned)(bytes / sizeof(uint32_t));

	if (words && b->feeding && b->nfeed + n <= CUDA_FEED_WORDS_MAX) {
		cuda_words(b->feed + b->nfeed, dst, src, bytes);
		b->nfeed += n;
		return 0;
	}
	/* anything else goes after the feeds queued */
	if (b->feeding)
		b->feed_mixed = 1;
	if (b->feeding && b->nfeed > 0 && cuda_feeds_flush(b, msg, len) != 0)
		return -1;
	if (words) {
		CUstreamBatchMemOpParams ops[CUDA_WRITE_WORDS_MAX];
		cuda_words(ops, dst, src, bytes);
		if (cuda_memops(b, ops, n) == 0)
			return 0;
	}
	return cuda_write_copy(b, dst, src, bytes, msg, len);
}

static int cuda_read(struct backend *b, void *dst, const void *src, size_t bytes,
                     char *msg, size_t len)
{
	CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, b->stream),
	         "cudaMemcpyAsync");
	CUDA_TRY(cudaStreamSynchronize(b->stream), "cudaStreamSynchronize");
	return 0;
fail:
	return -1;
}

static int cuda_spare_alloc(struct backend *b, uint64_t bytes, void **p, char *msg, size_t len)
{
	size_t mfree = 0, mtotal = 0;
	uint64_t headroom;

	(void)b;
	*p = NULL;
	CUDA_TRY(cudaMemGetInfo(&mfree, &mtotal), "cudaMemGetInfo");
	headroom = mtotal / 20 > CUDA_SPARE_HEADROOM ? mtotal / 20 : CUDA_SPARE_HEADROOM;
	if (bytes + headroom > mfree)
		return 0;
	if (cudaMalloc(p, bytes ? (size_t)bytes : 1) != cudaSuccess) {
		/* Taken meanwhile by another process: no room after all. */
		cudaGetLastError();
		*p = NULL;
	}
	return 0;
fail:
	return -1;
}

static void cuda_spare_free(struct backend *b, void *p)
{
	if (b->stream != NULL)
		cudaStreamSynchronize(b->stream);
	cudaFree(p);
}

static int cuda_copy(struct backend *b, void *dst, const void *src, size_t bytes,
                     char *msg, size_t len)
{
	CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, b->stream),
	         "cudaMemcpyAsync");
	return 0;
fail:
	return -1;
}

static int cuda_compare(struct backend *b, int dtype, const void *got, const void *want,
                        uint64_t count, int tolerant, struct verify_result *res,
                        char *msg, size_t len)
{
	size_t need = cuda_verify_work_bytes(dtype, count);
	struct verify_sums s;

	if (need > b->verify_bytes) {
		CUDA_TRY(cudaStreamSynchronize(b->stream), "cudaStreamSynchronize");
		cudaFree(b->verify_work);
		b->verify_work = NULL;
		b->verify_bytes = 0;
		CUDA_TRY(cudaMalloc(&b->verify_work, need), "allocating the comparison's sums");
		b->verify_bytes = need;
	}
	if (cuda_verify_sums(b->stream, dtype, got, want, count, b->verify_work, b->ctx.sm_count,
	                     msg, len) != 0)
		return -1;
	CUDA_TRY(cudaMemcpyAsync(&s, b->verify_work, sizeof s, cudaMemcpyDeviceToHost, b->stream),
	         "cudaMemcpyAsync");
	CUDA_TRY(cudaStreamSynchronize(b->stream), "comparing tensors");
	verify_finish(dtype, count, tolerant, &s, res);
	return 0;
fail:
	return -1;
}

static int cuda_launch(struct backend *b, const struct op_call *call, char *msg, size_t len)
{
	cuda_kernel_fn fn = cuda_kernel(call->kind->id);

	if (fn == NULL) {
		snprintf(msg, len, "no CUDA kernel for %s", call->kind->name);
		return -1;
	}
	if (call->kind->id == OP_MOE_ROUTER || call->kind->id == OP_MOE_ROUTER_PAGED)
		b->routed = 1;
	if (b->capturing && (call->kind->id == OP_ALL_REDUCE || call->kind->id == OP_ALL_GATHER))
		b->capture_collectives = 1;
	return fn(call, &b->ctx, msg, len);
}

/* Weights in other layouts (backend.h, prepare): the ops' copies
 * (cuda.h, cuda_op_prepare), kept in the launch context. */
static int cuda_prepare(struct backend *b, const struct op_call *call, int keep, char *msg,
                        size_t len)
{
	return cuda_op_prepare(call, &b->ctx, keep, msg, len);
}

static void cuda_trim(struct backend *b)
{
	cuda_packs_trim(b->ctx.packs);
}

static uint64_t cuda_prepared_bytes(struct backend *b)
{
	return cuda_packs_bytes(b->ctx.packs);
}

/* ---------------------------------------------------------------------- */
/* Capture.                                                                */

static int cuda_capture_begin(struct backend *b, int step_start, char *msg, size_t len)
{
	b->capture_fed = step_start && b->feed_node;
	b->nseen = 0;
	b->capture_collectives = 0;
	b->capture_t0 = bcg_now_ns();
	/* Thread-local mode: a sync or an allocation from this thread while
	 * capturing fails (and names the op that did it) instead of being
	 * silently left out of the graph. */
	CUDA_TRY(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal),
	         "cudaStreamBeginCapture");
	b->capturing = 1;
	return 0;
fail:
	return -1;
}

static int seen_push(struct backend *b, cudaGraphNode_t node, uint32_t op)
{
	if (b->nseen == b->capseen) {
		uint32_t cap = b->capseen ? b->capseen * 2 : 256;
		struct seen_node *s = realloc(b->seen, cap * sizeof *s);
		if (s == NULL)
			return -1;
		b->seen = s;
		b->capseen = cap;
	}
	b->seen[b->nseen].node = node;
	b->seen[b->nseen].op = op;
	b->nseen++;
	return 0;
}

static int seen_has(const struct backend *b, cudaGraphNode_t node)
{
	for (uint32_t i = b->nseen; i-- > 0;)
		if (b->seen[i].node == node)
			return 1;
	return 0;
}

/* Attribute the nodes the capture gained since the last op to OP. */
static int cuda_capture_op_done(struct backend *b, uint32_t op, char *msg, size_t len)
{
	enum cudaStreamCaptureStatus status;
	cudaGraph_t graph = NULL;
	cudaGraphNode_t *nodes = NULL;
	size_t n = 0;
	int fast;

	CUDA_TRY(cudaStreamGetCaptureInfo(b->stream, &status, NULL, &graph, NULL, NULL, NULL),
	         "cudaStreamGetCaptureInfo");
	if (status != cudaStreamCaptureStatusActive) {
		snprintf(msg, len, "the stream capture was invalidated: the op did work that "
		         "cannot be captured (a synchronization or an allocation?)");
		return -1;
	}
	CUDA_TRY(cudaGraphGetNodes(graph, NULL, &n), "cudaGraphGetNodes");
	if (n == b->nseen)
		return 0;
	if ((nodes = malloc(n * sizeof *nodes)) == NULL) {
		snprintf(msg, len, "out of memory");
		return -1;
	}
	CUDA_TRY(cudaGraphGetNodes(graph, nodes, &n), "cudaGraphGetNodes");
	/* Nodes come back in creation order in practice; check it, and fall
	 * back to a search when it does not hold. */
	fast = n >= b->nseen;
	for (uint32_t i = 0; fast && i < b->nseen; i++)
		fast = nodes[i] == b->seen[i].node;
	for (size_t i = fast ? b->nseen : 0; i < n; i++)
		if ((fast || !seen_has(b, nodes[i])) && seen_push(b, nodes[i], op) != 0) {
			snprintf(msg, len, "out of memory");
			goto fail;
		}
	free(nodes);
	return 0;
fail:
	free(nodes);
	return -1;
}

static int node_type(enum cudaGraphNodeType t)
{
	switch (t) {
	case cudaGraphNodeTypeKernel:      return PLAN_NODE_KERNEL;
	case cudaGraphNodeTypeMemcpy:      return PLAN_NODE_MEMCPY;
	case cudaGraphNodeTypeMemset:      return PLAN_NODE_MEMSET;
	case cudaGraphNodeTypeHost:        return PLAN_NODE_HOST;
	case cudaGraphNodeTypeGraph:       return PLAN_NODE_GRAPH;
	case cudaGraphNodeTypeEmpty:       return PLAN_NODE_EMPTY;
	case cudaGraphNodeTypeWaitEvent:   return PLAN_NODE_EVENT_WAIT;
	case cudaGraphNodeTypeEventRecord: return PLAN_NODE_EVENT_RECORD;
	default:                           return PLAN_NODE_OTHER;
	}
}

/* Record every 8-byte word of BUF (BYTES long, starting at byte AT of the
 * parameter buffer) that points into the plan's arena. Pointers to the
 * scratch and workspace behind it are the backend's own business and stay
 * out of the plan. */
static int scan_words(struct backend *b, const unsigned char *buf, size_t at, size_t bytes,
                      struct plan_param **params, uint32_t *n, uint32_t *cap)
{
	uintptr_t lo = (uintptr_t)b->base, hi = lo + (uintptr_t)b->arena_bytes;

	for (size_t k = (8 - at % 8) % 8; k + 8 <= bytes; k += 8) {
		uint64_t w;
		memcpy(&w, buf + k, sizeof w);
		if (w < lo || w >= hi)
			continue;
		if (*n == *cap) {
			uint32_t c = *cap ? *cap * 2 : 8;
			struct plan_param *p = realloc(*params, c * sizeof *p);
			if (p == NULL)
				return -1;
			*params = p;
			*cap = c;
		}
		(*params)[*n].index = (uint32_t)((at + k) / 8);
		(*params)[*n].offset = w - lo;
		(*n)++;
	}
	return 0;
}

/* The parameter layout of the kernel a node launches; NULL when the
 * driver cannot say (or out of memory: the node then records no
 * operands). */
static const struct param_layout *param_layout(struct backend *b, CUfunction func, CUkernel kern)
{
	const void *fn = func != NULL ? (const void *)func : (const void *)kern;
	struct param_layout *l;

	for (uint32_t i = 0; i < b->nlayouts; i++)
		if (b->layouts[i].fn == fn)
			return &b->layouts[i];
	if (b->nlayouts == b->caplayouts) {
		uint32_t cap = b->caplayouts ? b->caplayouts * 2 : 32;
		struct param_layout *nl = realloc(b->layouts, cap * sizeof *nl);
		if (nl == NULL)
			return NULL;
		b->layouts = nl;
		b->caplayouts = cap;
	}
	l = &b->layouts[b->nlayouts];
	memset(l, 0, sizeof *l);
	l->fn = fn;
	for (size_t i = 0; i < CUDA_MAX_PARAMS; i++) {
		size_t off = 0, size = 0;
		CUresult r;
		if (func != NULL && b->func_param != NULL)
			r = b->func_param(func, i, &off, &size);
		else if (kern != NULL && b->kernel_param != NULL)
			r = b->kernel_param(kern, i, &off, &size);
		else
			break;
		if (r != CUDA_SUCCESS)
			break;   /* past the last parameter */
		l->offset[i] = (uint32_t)off;
		l->size[i] = (uint32_t)size;
		l->n = (uint32_t)i + 1;
	}
	b->nlayouts++;
	return l;
}

/* The launch attributes a kernel node can carry, as the driver reads
 * them back, hashed into KEY; an attribute the driver would not give
 * (other than as not applicable) makes the segment opaque: an update might
 * not carry it (share.h). */
static void kernel_node_attrs(cudaGraphNode_t node, struct backend_node_key *key,
                              struct backend_capture *rec)
{
	static const int ids[] = {
		cudaLaunchAttributeAccessPolicyWindow, cudaLaunchAttributeCooperative,
		cudaLaunchAttributeClusterDimension,
		cudaLaunchAttributeClusterSchedulingPolicyPreference, cudaLaunchAttributePriority,
		cudaLaunchAttributeMemSyncDomainMap, cudaLaunchAttributeMemSyncDomain,
		cudaLaunchAttributePreferredClusterDimension,
		cudaLaunchAttributeDeviceUpdatableKernelNode,
	};
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		cudaKernelNodeAttrValue v;
		unsigned char bytes[sizeof v];
		cudaError_t e;

		memset(&v, 0, sizeof v);
		e = cudaGraphKernelNodeGetAttribute(node, (cudaKernelNodeAttrID)ids[i], &v);
		if (e == cudaErrorInvalidValue || e == cudaErrorNotSupported) {
			cudaGetLastError();
			memset(&v, 0xff, sizeof v);    /* absent: its own value */
		} else if (e != cudaSuccess) {
			cudaGetLastError();
			if (!rec->opaque)
				snprintf(rec->opaque_why, sizeof rec->opaque_why,
				         "launch attribute %d not read back: %s", ids[i],
				         cudaGetErrorName(e));
			rec->opaque = 1;
		} else if (ids[i] == cudaLaunchAttributeDeviceUpdatableKernelNode) {
			/* An update refuses such nodes; the handle is the node's own,
			 * so only the flag is part of the key. */
			int updatable = v.deviceUpdatableKernelNode.deviceUpdatable;
			if (updatable && !rec->opaque)
				snprintf(rec->opaque_why, sizeof rec->opaque_why,
				         "a device-updatable kernel node");
			rec->opaque |= updatable != 0;
			memset(&v, 0, sizeof v);
			v.deviceUpdatableKernelNode.deviceUpdatable = updatable;
		}
		memcpy(bytes, &v, sizeof v);
		h = (h ^ (uint64_t)ids[i]) * 0x100000001b3ull;
		for (size_t k = 0; k < sizeof bytes; k++)
			h = (h ^ bytes[k]) * 0x100000001b3ull;
	}
	key->attrs = h;
}

static int read_kernel_node(struct backend *b, cudaGraphNode_t node, struct plan_node *out,
                            struct backend_node_key *key, char *msg, size_t len)
{
	CUDA_KERNEL_NODE_PARAMS_v2 p;
	const char *name = NULL;
	struct plan_param *params = NULL;
	uint32_t n = 0, cap = 0;
	CUresult r;

	memset(&p, 0, sizeof p);
	if ((r = b->node_params((CUgraphNode)node, &p)) != CUDA_SUCCESS) {
		snprintf(msg, len, "cuGraphKernelNodeGetParams failed (CUresult %d)", (int)r);
		return -1;
	}
	if (p.func != NULL && b->func_name != NULL)
		b->func_name(&name, p.func);
	else if (p.kern != NULL && b->kernel_name != NULL)
		b->kernel_name(&name, p.kern);
	out->kernel = strdup(name != NULL ? name : "?");
	/* The function's identity, not its name; with its context. */
	key->func = (uint64_t)(uintptr_t)(p.func != NULL ? (const void *)p.func
	                                                 : (const void *)p.kern) ^
	            ((uint64_t)(uintptr_t)p.ctx << 1);
	out->grid[0] = p.gridDimX;
	out->grid[1] = p.gridDimY;
	out->grid[2] = p.gridDimZ;
	out->block[0] = p.blockDimX;
	out->block[1] = p.blockDimY;
	out->block[2] = p.blockDimZ;
	out->shmem = p.sharedMemBytes;

	if (p.kernelParams != NULL) {
		const struct param_layout *l = param_layout(b, p.func, p.kern);
		for (uint32_t i = 0; l != NULL && i < l->n; i++)
			if (scan_words(b, p.kernelParams[i], l->offset[i], l->size[i],
			               &params, &n, &cap) != 0)
				goto nomem;
	} else if (p.extra != NULL) {
		void *buf = NULL;
		size_t size = 0;
		for (size_t i = 0; p.extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
			if (p.extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = p.extra[i + 1];
			else if (p.extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
				size = *(size_t *)p.extra[i + 1];
		}
		if (buf != NULL && scan_words(b, buf, 0, size, &params, &n, &cap) != 0)
			goto nomem;
	}
	out->params = params;
	out->nparams = n;
	if (out->kernel == NULL)
		goto nomem;
	return 0;
nomem:
	free(params);
	snprintf(msg, len, "out of memory");
	return -1;
}

static int cuda_read_graph(struct backend *b, cudaGraph_t graph, struct backend_capture *rec,
                           char *msg, size_t len)
{
	cudaGraphNode_t *from = NULL, *to = NULL;
	cudaGraphEdgeData *data = NULL;
	size_t nedges = 0;

	rec->nodes = calloc(b->nseen + 1, sizeof *rec->nodes);
	rec->keys = calloc(b->nseen + 1, sizeof *rec->keys);
	if (rec->nodes == NULL || rec->keys == NULL)
		goto nomem;
	for (uint32_t i = 0; i < b->nseen; i++) {
		enum cudaGraphNodeType t;
		struct plan_node *pn = &rec->nodes[i];
		CUDA_TRY(cudaGraphNodeGetType(b->seen[i].node, &t), "cudaGraphNodeGetType");
		pn->type = node_type(t);
		pn->op = b->seen[i].op;
		rec->nnodes = i + 1;
		rec->nkeys = i + 1;
		rec->keys[i].type = pn->type;
		/* Kinds an update may not carry, or that hold host state. */
		if (pn->type != PLAN_NODE_KERNEL && pn->type != PLAN_NODE_MEMCPY &&
		    pn->type != PLAN_NODE_MEMSET && pn->type != PLAN_NODE_EMPTY && !rec->opaque) {
			snprintf(rec->opaque_why, sizeof rec->opaque_why, "a %s node",
			         plan_node_type_name(pn->type));
			rec->opaque = 1;
		}
		if (pn->type == PLAN_NODE_KERNEL) {
			if (read_kernel_node(b, b->seen[i].node, pn, &rec->keys[i], msg, len) != 0)
				return -1;
			kernel_node_attrs(b->seen[i].node, &rec->keys[i], rec);
		} else if ((pn->kernel = strdup("")) == NULL) {
			goto nomem;
		}
	}
	/* Edge data must be asked for: kernels launched with programmatic
	 * stream serialization (ours, and cuBLAS's on Hopper) make edges that
	 * are not plain dependencies, and a query without it fails as lossy.
	 * The plan records each edge with its type and ports, so that a
	 * rebuilt graph is compared on them too. */
	CUDA_TRY(cudaGraphGetEdges(graph, NULL, NULL, NULL, &nedges), "cudaGraphGetEdges");
	if (nedges > 0) {
		from = malloc(nedges * sizeof *from);
		to = malloc(nedges * sizeof *to);
		data = calloc(nedges, sizeof *data);
		rec->edges = calloc(nedges, sizeof *rec->edges);
		if (from == NULL || to == NULL || data == NULL || rec->edges == NULL)
			goto nomem;
		CUDA_TRY(cudaGraphGetEdges(graph, from, to, data, &nedges), "cudaGraphGetEdges");
		for (size_t i = 0; i < nedges; i++) {
			uint32_t f = UINT32_MAX, t = UINT32_MAX;
			for (uint32_t k = 0; k < b->nseen; k++) {
				if (b->seen[k].node == from[i])
					f = k;
				if (b->seen[k].node == to[i])
					t = k;
			}
			if (f == UINT32_MAX || t == UINT32_MAX) {
				snprintf(msg, len, "an edge of the graph names a node the capture did not see");
				goto fail;
			}
			rec->edges[i].from = f;
			rec->edges[i].to = t;
			rec->edges[i].type = data[i].type;
			rec->edges[i].from_port = data[i].from_port;
			rec->edges[i].to_port = data[i].to_port;
		}
		rec->nedges = (uint32_t)nedges;
	}
	free(from);
	free(to);
	free(data);
	return 0;
nomem:
	snprintf(msg, len, "out of memory");
fail:
	free(from);
	free(to);
	free(data);
	return -1;
}

/* Instantiate GRAPH into *EXEC and upload it; REC (may be NULL) gets the
 * times and the device memory the executable took. */
static int cuda_exec_build(struct backend *b, cudaGraph_t graph, cudaGraphExec_t *exec,
                           struct backend_capture *rec, char *msg, size_t len)
{
	size_t free0 = 0, free1 = 0, total = 0;
	uint64_t t0;

	*exec = NULL;
	CUDA_TRY(cudaMemGetInfo(&free0, &total), "cudaMemGetInfo");
	t0 = bcg_now_ns();
	CUDA_TRY(cudaGraphInstantiate(exec, graph, 0), "cudaGraphInstantiate");
	if (rec != NULL)
		rec->instantiate_ns += bcg_now_ns() - t0;
	t0 = bcg_now_ns();
	CUDA_TRY(cudaGraphUpload(*exec, b->stream), "cudaGraphUpload");
	CUDA_TRY(cudaStreamSynchronize(b->stream), "cudaStreamSynchronize");
	if (rec != NULL)
		rec->upload_ns += bcg_now_ns() - t0;
	CUDA_TRY(cudaMemGetInfo(&free1, &total), "cudaMemGetInfo");
	if (rec != NULL && free1 < free0)
		rec->exec_bytes += free0 - free1;
	return 0;
fail:
	if (*exec != NULL)
		cudaGraphExecDestroy(*exec);
	*exec = NULL;
	return -1;
}

static int cuda_capture_end(struct backend *b, struct backend_graph **out,
                            struct backend_capture *rec, char *msg, size_t len)
{
	cudaGraph_t graph = NULL;
	struct backend_graph *g = NULL;
	cudaError_t e;

	*out = NULL;
	b->capturing = 0;
	e = cudaStreamEndCapture(b->stream, &graph);
	if (e != cudaSuccess) {
		snprintf(msg, len, "cudaStreamEndCapture: %s%s (%s)%s", cuda_fault_tag(e),
		         cudaGetErrorString(e), cudaGetErrorName(e),
		         e == cudaErrorStreamCaptureInvalidated
		                 ? ": work that cannot be captured ran during the capture" : "");
		cudaGetLastError();
		return -1;
	}
	if (rec != NULL) {
		memset(rec, 0, sizeof *rec);
		rec->capture_ns = bcg_now_ns() - b->capture_t0;
		if (cuda_read_graph(b, graph, rec, msg, len) != 0)
			goto fail;
		/* A rank's collectives hold communicator state an update
		 * would not be seen to carry. */
		if (b->capture_collectives && !rec->opaque) {
			snprintf(rec->opaque_why, sizeof rec->opaque_why, "a rank's collectives");
			rec->opaque = 1;
		}
	}
	if ((g = calloc(1, sizeof *g)) == NULL) {
		snprintf(msg, len, "out of memory");
		goto fail;
	}
	g->collectives = b->capture_collectives;
	b->capture_collectives = 0;
	if (b->share) {
		/* The engine instantiates it (graph_instantiate). */
		g->tmpl = graph;
		*out = g;
		return 0;
	}
	/* A step's first segment writes the step's feeds itself (the node
	 * is not among REC's, read above); not where an update may swap the
	 * executable, whose node the parameters are set on. */
	if (b->capture_fed && cuda_feed_node_add(graph, &g->feed, msg, len) != 0)
		goto fail;
	if (cuda_exec_build(b, graph, &g->exec, rec, msg, len) != 0)
		goto fail;
	if (g->feed != NULL)
		g->fed_graph = graph;
	else
		cudaGraphDestroy(graph);
	*out = g;
	return 0;
fail:
	free(g);
	if (graph != NULL)
		cudaGraphDestroy(graph);
	return -1;
}

static void cuda_share(struct backend *b, int on)
{
	b->share = on;
}

static void cuda_exec_put(struct backend *b, struct backend_exec *x)
{
	(void)b;
	if (x == NULL || --x->refs > 0)
		return;
	cudaGraphExecDestroy(x->exec);
	free(x);
}

/* Update X to G's template; 0, or the update's refusal (> 0). */
static int cuda_exec_update(struct backend_exec *x, struct backend_graph *g)
{
	cudaGraphExecUpdateResultInfo info;
	cudaError_t e;

	memset(&info, 0, sizeof info);
	e = cudaGraphExecUpdate(x->exec, g->tmpl, &info);
	if (e == cudaSuccess) {
		x->current = g;
		return 0;
	}
	cudaGetLastError();
	/* Whatever it holds now, no graph is known to be in it. */
	x->current = NULL;
	return info.result != cudaGraphExecUpdateSuccess ? (int)info.result
	                                                 : (int)cudaGraphExecUpdateError;
}

static int cuda_graph_instantiate(struct backend *b, struct backend_graph *g,
                                  struct backend_exec **shared, struct backend_capture *rec,
                                  int *refused, char *msg, size_t len)
{
	struct backend_exec *x;
	uint64_t t0;

	*refused = 0;
	if (g->tmpl == NULL) {
		snprintf(msg, len, "the graph was not kept for instantiation");
		return -1;
	}
	if (shared == NULL)
		return cuda_exec_build(b, g->tmpl, &g->exec, rec, msg, len);
	if (*shared == NULL) {
		if ((x = calloc(1, sizeof *x)) == NULL) {
			snprintf(msg, len, "out of memory");
			return -1;
		}
		if (cuda_exec_build(b, g->tmpl, &x->exec, rec, msg, len) != 0) {
			free(x);
			return -1;
		}
		x->refs = 2;          /* the caller's and G's */
		x->current = g;
		g->shared = x;
		*shared = x;
		return 0;
	}
	x = *shared;
	t0 = bcg_now_ns();
	*refused = cuda_exec_update(x, g);
	if (rec != NULL)
		rec->update_ns += bcg_now_ns() - t0;
	if (*refused != 0)
		return cuda_exec_build(b, g->tmpl, &g->exec, rec, msg, len);
	x->refs++;
	g->shared = x;
	return 0;
}

static int cuda_graph_launch(struct backend *b, struct backend_graph *g, char *msg, size_t len)
{
	struct backend_exec *x = g->shared;

	/* Another size ran on the executable since: bring it back to G. An
	 * update that succeeded when G joined is not expected to be refused
	 * now; if it is, G gets its own executable rather than launch what
	 * another graph left there. */
	int refused;
	if (x != NULL && x->current != g && (refused = cuda_exec_update(x, g)) != 0) {
		bcg_warn("a shared executable refused the update back to a graph it took when "
		         "instantiated (cudaGraphExecUpdateResult %d): that graph runs on an "
		         "executable of its own from now on", refused);
		if (cuda_exec_build(b, g->tmpl, &g->exec, NULL, msg, len) != 0)
			return -1;
		g->shared = NULL;
		cuda_exec_put(b, x);
		x = NULL;
	}
	/* Launched without the words of its step (feeds_end did not arm
	 * it): its node must not write an earlier step's again. */
	if (g->feed != NULL && !g->feed_armed && g->feed_live) {
		if (cuda_feed_node_set(g->exec, g->feed, NULL, NULL, 0, msg, len) != 0)
			return -1;
		g->feed_live = 0;
	}
	g->feed_armed = 0;
	CUDA_TRY(cudaGraphLaunch(x != NULL ? x->exec : g->exec, b->stream), "cudaGraphLaunch");
	/* A graph holding collectives: the rank's watchdog follows it, so
	 * that a peer gone while it waits inside is named at once. */
	if (g->collectives && dist_watch(dist_self(), b->stream, "a graph's collectives", msg,
	                                 len) != 0)
		return -1;
	return 0;
fail:
	return -1;
}

static void cuda_graph_free(struct backend *b, struct backend_graph *g)
{
	if (g == NULL)
		return;
	if (g->shared != NULL) {
		if (g->shared->current == g)
			g->shared->current = NULL;
		cuda_exec_put(b, g->shared);
	}
	if (g->exec != NULL)
		cudaGraphExecDestroy(g->exec);
	if (g->tmpl != NULL)
		cudaGraphDestroy(g->tmpl);
	if (g->fed_graph != NULL)
		cudaGraphDestroy(g->fed_graph);
	free(g);
}

/* ---------------------------------------------------------------------- */
/* Timing.                                                                 */

static int cuda_hold(struct backend *b, double us, char *msg, size_t len)
{
	return cuda_hold_stream(b->stream, us, msg, len);
}

static int cuda_mark(struct backend *b, unsigned slot, char *msg, size_t len)
{
	if (slot >= BACKEND_MAX_MARKS) {
		snprintf(msg, len, "time stamp %u out of range", slot);
		return -1;
	}
	if (b->marks[slot] == NULL)
		CUDA_TRY(cudaEventCreate(&b->marks[slot]), "cudaEventCreate");
	CUDA_TRY(cudaEventRecord(b->marks[slot], b->stream), "cudaEventRecord");
	return 0;
fail:
	return -1;
}

static int cuda_sync(struct backend *b, char *msg, size_t len)
{
	CUDA_TRY(cudaStreamSynchronize(b->stream), "cudaStreamSynchronize");
	/* A router's NaN weights are a fault of the work waited for. */
	if (b->routed && cuda_moe_router_fault(b->stream, msg, len) != 0)
		return -1;
	return 0;
fail:
	return -1;
}

static int cuda_elapsed(struct backend *b, unsigned from, unsigned to, double *ms,
                        char *msg, size_t len)
{
	float f = 0.0f;

	if (from >= BACKEND_MAX_MARKS || to >= BACKEND_MAX_MARKS ||
	    b->marks[from] == NULL || b->marks[to] == NULL) {
		snprintf(msg, len, "time stamp %u or %u was never recorded", from, to);
		return -1;
	}
	CUDA_TRY(cudaEventElapsedTime(&f, b->marks[from], b->marks[to]), "cudaEventElapsedTime");
	*ms = f;
	return 0;
fail:
	return -1;
}

/* ---------------------------------------------------------------------- */
/* Implementations and their timing.                                       */

static int cuda_usable(const struct op_call *call, int impl)
{
	return cuda_impl_usable(call, impl);
}

/* Lazily: the events, and the scrub buffer sized from the device's L2. */
static int cuda_time_setup(struct backend *b, char *msg, size_t len)
{
	int l2 = 0;

	for (unsigned i = 0; i < 2 * CUDA_TIME_REPS_MAX; i++)
		if (b->tick[i] == NULL)
			CUDA_TRY(cudaEventCreate(&b->tick[i]), "cudaEventCreate");
	if (b->scrub != NULL)
		return 0;
	CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, b->device),
	         "cudaDeviceGetAttribute(L2 cache size)");
	b->scrub_bytes = cuda_l2_flush_bytes(l2);
	CUDA_TRY(cudaMalloc(&b->scrub, b->scrub_bytes), "allocating the cache scrub buffer");
	CUDA_TRY(cudaMemsetAsync(b->scrub, 0, b->scrub_bytes, b->stream), "cudaMemsetAsync");
	return 0;
fail:
	cudaGetLastError();
	return -1;
}

/* Each repetition: scrub the cache, then the launch between two events.
 * A hold first lets the host queue every repetition before the GPU
 * starts, so that no event waits on the host's launch overhead: the
 * difference between a pair is the launch's GPU time alone. */
/* The most bytes of an op's first input the in-context timing touches:
 * an activation, not a table. */
#define CUDA_TOUCH_MAX (8u << 20)

/* T's bytes, at most CUDA_TOUCH_MAX. */
static size_t cuda_touch_bytes(const struct op_tensor *t)
{
	size_t n = plan_dtype_size(t->dtype);

	for (int d = 0; d < t->rank; d++) {
		if (t->dim[d] <= 0)
			return 0;
		if ((uint64_t)t->dim[d] > CUDA_TOUCH_MAX / (n > 0 ? n : 1))
			return CUDA_TOUCH_MAX;
		n *= (size_t)t->dim[d];
	}
	return n < CUDA_TOUCH_MAX ? n : CUDA_TOUCH_MAX;
}

/* REPS timed repetitions on the held stream, each after a cache scrub:
 * the touch of TOUCH (when not NULL), then CALL (when not NULL), between
 * one pair of events; the median into *US. */
static int cuda_time_reps(struct backend *b, const struct op_call *call,
                          const struct op_tensor *touch, unsigned reps, double *us, char *msg,
                          size_t len)
{
	double t[CUDA_TIME_REPS_MAX];

	if (cuda_hold_stream(b->stream, 40.0 * reps + 200.0, msg, len) != 0)
		return -1;
	for (unsigned r = 0; r < reps; r++) {
		if (cuda_scrub_cache(b->stream, b->scrub, b->scrub_bytes, b->ctx.sm_count,
		                     msg, len) != 0)
			return -1;
		CUDA_TRY(cudaEventRecord(b->tick[2 * r], b->stream), "cudaEventRecord");
		if (touch != NULL && cuda_touch(b->stream, touch->data, cuda_touch_bytes(touch),
		                                b->ctx.sm_count, msg, len) != 0)
			return -1;
		if (call != NULL && cuda_launch(b, call, msg, len) != 0)
			return -1;
		CUDA_TRY(cudaEventRecord(b->tick[2 * r + 1], b->stream), "cudaEventRecord");
	}
	CUDA_TRY(cudaStreamSynchronize(b->stream), "cudaStreamSynchronize");
	for (unsigned r = 0; r < reps; r++) {
		float ms = 0.0f;
		CUDA_TRY(cudaEventElapsedTime(&ms, b->tick[2 * r], b->tick[2 * r + 1]),
		         "cudaEventElapsedTime");
		t[r] = (double)ms * 1e3;
	}
	*us = bcg_percentile(t, reps, 50);
	return 0;
fail:
	return -1;
}

/* An op's time, as the tuner ranks implementations by it: REPS launches,
 * each starting with L2 emptied, the median. Isolated (the default), each
 * launch is timed alone. In context (BCG_TUNE_CONTEXT=pdl, with PDL on),
 * each follows a kernel that leaves the op's first input in L2 as the op
 * before it in a step would and lets it launch early, as a step's graph
 * does; the time is that pair's median less the touch's own. A kernel
 * whose prologue reads its input before the weights (rmsnorm folded into
 * a product) pays for a cold input alone, but not in a graph. */
static int cuda_time_call(struct backend *b, const struct op_call *call, unsigned reps,
                          double *us, char *msg, size_t len)
{
	const struct op_tensor *touch = NULL;
	double pair, alone;

	if (reps < 1 || reps > CUDA_TIME_REPS_MAX) {
		snprintf(msg, len, "%u repetitions: from 1 to %d can be timed", reps,
		         CUDA_TIME_REPS_MAX);
		return -1;
	}
	if (cuda_time_setup(b, msg, len) != 0)
		return -1;
	if (b->tune_in_context && b->ctx.pdl && call->nin > 0 && call->in[0].data != NULL)
		touch = &call->in[0];
	if (cuda_time_reps(b, call, touch, reps, &pair, msg, len) != 0)
		return -1;
	if (touch == NULL) {
		*us = pair;
		return 0;
	}
	if (cuda_time_reps(b, NULL, touch, reps, &alone, msg, len) != 0)
		return -1;
	*us = pair > alone ? pair - alone : 0.0;
	return 0;
}

static uint32_t cuda_set_features(struct backend *b, uint32_t features)
{
	b->ctx.pdl = (features & PLAN_FEATURE_PDL) != 0;
	return features & PLAN_FEATURE_PDL;
}

/* The test hook's fault (backend.h). With WAIT it is waited for, so that
 * the error is reported as the op's; else it faults where the work runs
 * and CUDA reports it at the next synchronisation, as a real kernel's. */
static int cuda_fault(struct backend *b, int wait, char *msg, size_t len)
{
	cudaError_t e;

	if (cuda_fault_kernel(b->stream, msg, len) != 0)
		return -1;
	if (!wait)
		return 0;
	if ((e = cudaStreamSynchronize(b->stream)) != cudaSuccess) {
		snprintf(msg, len, "kernel fault: %s (BCG_TEST_FAULT)", cudaGetErrorString(e));
		return -1;
	}
	return 0;
}

const struct backend_ops backend_cuda = {
	.name = "cuda",
	.kind = PLAN_BACKEND_CUDA,
	.open = cuda_open,
	.close = cuda_close,
	.alloc = cuda_alloc,
	.free = cuda_free,
	.scratch_bytes = cuda_scratch,
	.init = cuda_init,
	.write = cuda_write,
	.feeds_begin = cuda_feeds_begin,
	.feeds_end = cuda_feeds_end,
	.read = cuda_read,
	.spare_alloc = cuda_spare_alloc,
	.spare_free = cuda_spare_free,
	.copy = cuda_copy,
	.compare = cuda_compare,
	.launch = cuda_launch,
	.prepare = cuda_prepare,
	.trim = cuda_trim,
	.prepared_bytes = cuda_prepared_bytes,
	.impl_count = cuda_impl_count,
	.impl_name = cuda_impl_name,
	.impl_usable = cuda_usable,
	.impl_default = cuda_impl_default,
	.impl_windowed = cuda_impl_windowed,
	.impl_shared  = cuda_impl_shared,
	.time_call = cuda_time_call,
	.set_features = cuda_set_features,
	.capture_begin = cuda_capture_begin,
	.capture_op_done = cuda_capture_op_done,
	.capture_end = cuda_capture_end,
	.graph_launch = cuda_graph_launch,
	.graph_free = cuda_graph_free,
	.share = cuda_share,
	.graph_instantiate = cuda_graph_instantiate,
	.exec_put = cuda_exec_put,
	.hold = cuda_hold,
	.mark = cuda_mark,
	.sync = cuda_sync,
	.elapsed = cuda_elapsed,
	.fault = cuda_fault,
};
