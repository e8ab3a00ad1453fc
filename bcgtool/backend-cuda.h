/*
 * backend-cuda.h - what the CUDA backend needs from its own kernels.
 */
#ifndef BCG_BACKEND_CUDA_H
#define BCG_BACKEND_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Make STREAM wait about US microseconds: one thread spins on the GPU's
 * global timer. Work queued behind it starts only when it ends, so the
 * host can queue a whole step first. */
int cuda_hold_stream(cudaStream_t stream, double us, char *msg, size_t len);
/* Make STREAM idle about NS nanoseconds at this point (one thread spins
 * on the global timer, touching no memory): replay --pace recorded. */
int cuda_gap_stream(cudaStream_t stream, uint64_t ns, char *msg, size_t len);
/* Test hook: launch one kernel that writes to an invalid address. */
int cuda_fault_kernel(cudaStream_t stream, char *msg, size_t len);

/* A step's feeds written by its first segment's graph (backend-cuda-
 * feed.cu): at most this many 32-bit words, the most one batch of the
 * stream's writes takes too (cuStreamBatchMemOp: fewer than 256). */
#define CUDA_FEED_NODE_WORDS 255
/* Add to GRAPH a kernel node, in *NODE, that every root of GRAPH waits
 * for (plain edges) and that writes nothing until it is given words. */
int cuda_feed_node_add(cudaGraph_t graph, cudaGraphNode_t *node, char *msg, size_t len);
/* Have NODE (of the graph EXEC was instantiated from) write the N words
 * VALUE[i] to ADDR[i] in EXEC's next launches; N 0: nothing. */
int cuda_feed_node_set(cudaGraphExec_t exec, cudaGraphNode_t node, const uint64_t *addr,
                       const uint32_t *value, unsigned n, char *msg, size_t len);

/* Read BYTES of BUF (zeros, 16-byte aligned) on STREAM: with BYTES twice
 * the L2 cache, whatever a kernel left there is gone, so the launch timed
 * next reads its weights from memory as it does in a step. */
int cuda_scrub_cache(cudaStream_t stream, const void *buf, size_t bytes, int sm_count,
                     char *msg, size_t len);

/* The bytes a buffer must have so that going over it leaves nothing of
 * other work in L2: twice L2_BYTES (cudaDevAttrL2CacheSize; the H100's
 * L2 is two halves, and a line may be held in both), 128 MiB when the
 * device does not say. The scrub above and replay --flush-l2 use it. */
static inline size_t cuda_l2_flush_bytes(int l2_bytes)
{
	return 2 * (size_t)(l2_bytes > 0 ? l2_bytes : (64 << 20));
}

/* Load and store back the 16-byte-aligned part of BYTES at BUF on STREAM,
 * a kernel that lets its dependents launch at once (PDL): the bytes stay
 * as they are, in L2 and dirty, as the kernel producing them would leave
 * them before the next one starts. */
int cuda_touch(cudaStream_t stream, void *buf, size_t bytes, int sm_count, char *msg,
               size_t len);

/* Device memory cuda_verify_sums needs for COUNT elements of DTYPE. */
size_t cuda_verify_work_bytes(int dtype, uint64_t count);
/* Queue on STREAM the sums of comparing COUNT elements of DTYPE at GOT
 * with WANT (engine/verify.h's order); they land at the start of WORK
 * (cuda_verify_work_bytes() bytes) as a struct verify_sums. */
int cuda_verify_sums(cudaStream_t stream, int dtype, const void *got, const void *want,
                     uint64_t count, void *work, int sm_count, char *msg, size_t len);

/* The driver API's SYMBOL, as this runtime's version knows it, or NULL:
 * reached through the runtime so that bcgtool never links the driver
 * library itself and starts on machines without a GPU. */
static inline void *cuda_driver_entry(const char *symbol)
{
	void *fn = NULL;
	enum cudaDriverEntryPointQueryResult q;

	if (cudaGetDriverEntryPointByVersion(symbol, &fn, CUDART_VERSION, cudaEnableDefault, &q) !=
	    cudaSuccess || q != cudaDriverEntryPointSuccess)
		return NULL;
	return fn;
}

#ifdef __cplusplus
}
#endif

#endif /* BCG_BACKEND_CUDA_H */
