/*
 * backend-cuda-feed.cu - a step's feeds written by its own graph.
 *
 * A replayed step's feeds (token ids, positions, vars: a few 32-bit words)
 * must land before its first kernel reads them. Queued on the stream
 * between two graph launches, as copies or as the stream's own writes,
 * they wait for the stream to drain and cost the step 3.3 us or more
 * (bench/step-boundary.cu, bench/RESULTS.md, twenty-eighth session). Here
 * the graph of a step's first segment gets one more node, a kernel at its
 * root that writes the words it is given as parameters; the host sets
 * them on the executable before each launch
 * (cudaGraphExecKernelNodeSetParams: a launch already queued keeps the
 * parameters it was launched with), and the launch carries them.
 *
 * The node is added after the capture has been read back, so no plan
 * records it, and its edges to the graph's roots are full dependencies:
 * a root starts once the words are written and visible, whatever it reads
 * before its PDL wait. Measured on an H200 between graph launches
 * (bench/RESULTS.md, twenty-ninth session): 0.9 us a step with such a
 * node whose successor waits programmatically, 1.0 with plain edges,
 * against 3.4 for one batch of the stream's writes; in the 1B's step,
 * 2.1 us less than the batch (BCG_FEED_NODE=0).
 *
 * Not while executables are shared (capture --share-exec, and replays of
 * plans that share): an executable is then updated to other sizes'
 * graphs, and the parameters would be set on the node of the graph it
 * was made from. Those steps, and steps that start with a breakpoint,
 * keep the batch.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend-cuda.h"
#include "ops/cuda.h"

/* What the node writes: N words, VALUE[i] to ADDR[i]. The whole struct is
 * the kernel's parameter, within the 4 KiB every device takes. */
struct cuda_feed_args {
	unsigned long long addr[CUDA_FEED_NODE_WORDS];
	uint32_t           value[CUDA_FEED_NODE_WORDS];
	uint32_t           n;
};

static_assert(sizeof(struct cuda_feed_args) <= 4096, "a kernel's parameters fit in 4 KiB");

#define CUDA_FEED_THREADS 256

/* Named as backend.h's BACKEND_FEED_KERNEL, unmangled, for profiles. */
extern "C" __global__ void __launch_bounds__(CUDA_FEED_THREADS)
bcg_feed_kernel(struct cuda_feed_args a)
{
	for (uint32_t i = threadIdx.x; i < a.n; i += CUDA_FEED_THREADS)
		*reinterpret_cast<uint32_t *>(a.addr[i]) = a.value[i];
}

static int feed_fail(cudaError_t e, const char *what, char *msg, size_t len)
{
	snprintf(msg, len, "%s: %s%s", what, cuda_fault_tag(e), cudaGetErrorString(e));
	cudaGetLastError();
	return -1;
}

/* The node's parameters for the words at ADDR and VALUE (N of them). */
static void feed_params(cudaKernelNodeParams *p, struct cuda_feed_args *a, void **args,
                        const uint64_t *addr, const uint32_t *value, unsigned n)
{
	memset(a, 0, sizeof *a);
	for (unsigned i = 0; i < n; i++) {
		a->addr[i] = addr[i];
		a->value[i] = value[i];
	}
	a->n = n;
	args[0] = a;
	*p = cudaKernelNodeParams{};
	p->func = reinterpret_cast<void *>(bcg_feed_kernel);
	p->gridDim = dim3(1);
	p->blockDim = dim3(CUDA_FEED_THREADS);
	p->kernelParams = args;
}

extern "C" int cuda_feed_node_add(cudaGraph_t graph, cudaGraphNode_t *node, char *msg, size_t len)
{
	struct cuda_feed_args a;
	cudaKernelNodeParams p;
	void *args[1];
	cudaGraphNode_t *roots = NULL, *from = NULL;
	size_t nroots = 0;
	cudaError_t e;

	*node = NULL;
	if ((e = cudaGraphGetRootNodes(graph, NULL, &nroots)) != cudaSuccess)
		return feed_fail(e, "cudaGraphGetRootNodes", msg, len);
	if (nroots > 0) {
		roots = static_cast<cudaGraphNode_t *>(malloc(nroots * sizeof *roots));
		from = static_cast<cudaGraphNode_t *>(malloc(nroots * sizeof *from));
		if (roots == NULL || from == NULL) {
			free(roots);
			free(from);
			snprintf(msg, len, "out of memory");
			return -1;
		}
		if ((e = cudaGraphGetRootNodes(graph, roots, &nroots)) != cudaSuccess)
			goto fail;
	}
	feed_params(&p, &a, args, NULL, NULL, 0);
	if ((e = cudaGraphAddKernelNode(node, graph, NULL, 0, &p)) != cudaSuccess)
		goto fail;
	for (size_t i = 0; i < nroots; i++)
		from[i] = *node;
	/* plain edges: each root waits for the node's completion */
	if (nroots > 0 &&
	    (e = cudaGraphAddDependencies(graph, from, roots, NULL, nroots)) != cudaSuccess)
		goto fail;
	free(roots);
	free(from);
	return 0;
fail:
	free(roots);
	free(from);
	return feed_fail(e, "adding the feed node", msg, len);
}

extern "C" int cuda_feed_node_set(cudaGraphExec_t exec, cudaGraphNode_t node, const uint64_t *addr,
                                  const uint32_t *value, unsigned n, char *msg, size_t len)
{
	struct cuda_feed_args a;
	cudaKernelNodeParams p;
	void *args[1];
	cudaError_t e;

	if (n > CUDA_FEED_NODE_WORDS) {
		snprintf(msg, len, "%u feed words, more than the feed node's %d", n,
		         CUDA_FEED_NODE_WORDS);
		return -1;
	}
	feed_params(&p, &a, args, addr, value, n);
	if ((e = cudaGraphExecKernelNodeSetParams(exec, node, &p)) != cudaSuccess)
		return feed_fail(e, "setting the feed node's words", msg, len);
	return 0;
}
