/*
 * bench/step-boundary.cu - what the boundary between two decode steps
 * costs: a step's CUDA graph launched back to back, and with what a replay
 * puts between two launches (a time stamp, the step's feeds: token ids,
 * positions, vars).
 *
 * The step is a graph of 100 kernels of about 7 us each (132 blocks of
 * 128 threads spinning), chained by programmatic dependent launch as
 * bcgtool's are: about 750 us a step, the size of the 1B's. Each variant
 * launches it STEPS times and divides the time between two events around
 * them; the line gives that and the difference from the first variant's.
 * The ways of feeding three 4-byte values a step:
 *
 *   memops    the stream's own writes (cuStreamBatchMemOp), in one batch or
 *             three; with the default memory barrier, and without
 *             (CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER: the write need
 *             not wait for the work before it, so a step still running
 *             may read the next one's values: timed, never to be used)
 *   copies    cudaMemcpyAsync from pinned memory, three of them
 *   node      a kernel at the graph's root writes the values, which are
 *             its parameters, set before each launch with
 *             cudaGraphExecKernelNodeSetParams (a launch already queued
 *             keeps the parameters it was launched with); its successor
 *             waits for it as the others do (a programmatic edge), or
 *             starts once it has completed (a full edge)
 *
 * Every kernel of the step adds the first value to a sum; the fed
 * variants check the sum against the values fed ("sums right"), so a
 * feed that lands while an earlier step still reads shows as "WRONG".
 *
 * Build and run on the GPU machine (it is not part of the build):
 *   nvcc -O2 -arch=sm_90a -o /tmp/step-boundary bench/step-boundary.cu
 *   /tmp/step-boundary [STEPS]
 * bench/RESULTS.md (twenty-eighth session) has what it measured.
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench-cuda.h"            /* CHECK */

#define KERNELS 100
#define BLOCKS  132
#define SPIN_NS 7000
/* Pinned slots the copies cycle through: more steps than the launch queue
 * holds, so that no slot is written while its copy still waits. */
#define COPY_SLOTS 4096

__global__ void feed_kernel(int *d, int a, int b, int c)
{
	d[0] = a;
	d[1] = b;
	d[2] = c;
#if __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;");
#endif
}

__global__ void step_kernel(long long cycles, unsigned long long *sum, const int *fed)
{
#if __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
	asm volatile("griddepcontrol.launch_dependents;");
#endif
	const long long t0 = clock64();
	while (clock64() - t0 < cycles) {
	}
	if (threadIdx.x == 0 && blockIdx.x == 0)
		atomicAdd(sum, (unsigned long long)fed[0]);
}

typedef CUresult (*pfn_batch)(CUstream, unsigned, CUstreamBatchMemOpParams *, unsigned);

/* The step's graph, with the feed kernel at its root when FEED (its node
 * in *NODE). */
static cudaGraphExec_t step_graph(cudaStream_t s, bool feed, bool feed_pdl, int *d,
                                  unsigned long long *sum, long long cycles, cudaGraphNode_t *node)
{
	cudaGraph_t g;
	cudaGraphExec_t x;

	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	if (feed)
		feed_kernel<<<1, 32, 0, s>>>(d, 0, 0, 0);
	for (int k = 0; k < KERNELS; k++) {
		cudaLaunchConfig_t cfg = {};
		cudaLaunchAttribute at[1] = {};
		cfg.gridDim = dim3(BLOCKS);
		cfg.blockDim = dim3(128);
		cfg.stream = s;
		at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
		at[0].val.programmaticStreamSerializationAllowed = 1;
		cfg.attrs = at;
		cfg.numAttrs = k > 0 || (feed && feed_pdl) ? 1 : 0;
		CHECK(cudaLaunchKernelEx(&cfg, step_kernel, cycles, sum, (const int *)d));
	}
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphInstantiate(&x, g, 0));
	if (feed) {
		size_t n = 1;
		CHECK(cudaGraphGetRootNodes(g, node, &n));
	}
	return x;
}

enum { BACK, EVENT, MEMOPS3, MEMOPS1, COPIES, EVENT_MEMOPS1, EVENT_COPIES, MEMOPS1_EVENT,
       MEMOPS1_NOBAR, NODE, NODE_FULL, NVARIANTS };

static const char *const names[NVARIANTS] = {
	"graphs back to back", "+ an event", "+ 3 memops, 3 batches", "+ 3 memops, 1 batch",
	"+ 3 pinned copies", "+ an event, then 3 memops in 1 batch",
	"+ an event, then 3 pinned copies", "+ 3 memops in 1 batch, then an event",
	"+ 3 memops, 1 batch, no barrier", "+ feed node, parameters set each launch",
	"+ feed node, its successor a full edge",
};

int main(int argc, char **argv)
{
	const int steps = argc > 1 ? atoi(argv[1]) : 2000;
	cudaStream_t s;
	int *d, *pinned;
	unsigned long long *sum;
	int clock_khz = 0, dev = 0;
	void *fn = NULL;
	cudaDriverEntryPointQueryResult q;
	cudaEvent_t e0, e1, mark[8];
	cudaGraphNode_t node, node_full;
	cudaKernelNodeParams kp;

	if (steps < 1) {
		fprintf(stderr, "usage: step-boundary [STEPS]\n");
		return 2;
	}
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CHECK(cudaMalloc(&d, 64));
	CHECK(cudaMemset(d, 0, 64));
	CHECK(cudaMalloc(&sum, sizeof *sum));
	CHECK(cudaMallocHost(&pinned, COPY_SLOTS * 4 * sizeof(int)));
	CHECK(cudaGetDevice(&dev));
	CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
	CHECK(cudaGetDriverEntryPointByVersion("cuStreamBatchMemOp", &fn, CUDART_VERSION,
	                                       cudaEnableDefault, &q));
	if (fn == NULL || q != cudaDriverEntryPointSuccess) {
		fprintf(stderr, "step-boundary: the driver has no cuStreamBatchMemOp\n");
		return 1;
	}
	const pfn_batch batch = (pfn_batch)fn;
	const long long cycles = (long long)SPIN_NS * clock_khz / 1000000;
	cudaGraphExec_t plain = step_graph(s, false, false, d, sum, cycles, NULL);
	cudaGraphExec_t fed = step_graph(s, true, true, d, sum, cycles, &node);
	cudaGraphExec_t fed_full = step_graph(s, true, false, d, sum, cycles, &node_full);
	CHECK(cudaGraphKernelNodeGetParams(node, &kp));
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	for (int i = 0; i < 8; i++)
		CHECK(cudaEventCreate(&mark[i]));

	double base = 0.0;
	for (int v = 0; v < NVARIANTS; v++) {
		unsigned long long want = 0, got = 0;
		bool refused = false;
		const bool feeds = v != BACK && v != EVENT;
		for (int i = 0; i < 20; i++)
			CHECK(cudaGraphLaunch(plain, s));
		CHECK(cudaMemsetAsync(d, 0, 64, s));
		CHECK(cudaMemsetAsync(sum, 0, sizeof *sum, s));
		CHECK(cudaEventRecord(e0, s));
		for (int i = 1; i <= steps; i++) {
			CUstreamBatchMemOpParams op[3];
			if (v == EVENT || v == EVENT_MEMOPS1 || v == EVENT_COPIES)
				CHECK(cudaEventRecord(mark[i % 8], s));
			memset(op, 0, sizeof op);
			for (int w = 0; w < 3; w++) {
				op[w].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
				op[w].writeValue.address = (CUdeviceptr)(d + w);
				op[w].writeValue.value = (cuuint32_t)i;
				op[w].writeValue.flags = v == MEMOPS1_NOBAR ?
					CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER : CU_STREAM_WRITE_VALUE_DEFAULT;
			}
			if (v == MEMOPS3)
				for (int w = 0; w < 3; w++)
					if (batch((CUstream)s, 1, &op[w], 0) != CUDA_SUCCESS)
						return fprintf(stderr, "step-boundary: a memop refused\n"), 1;
			if ((v == MEMOPS1 || v == EVENT_MEMOPS1 || v == MEMOPS1_EVENT ||
			     v == MEMOPS1_NOBAR) && batch((CUstream)s, 3, op, 0) != CUDA_SUCCESS) {
				/* the driver may refuse the flag: the variant only */
				refused = true;
				break;
			}
			if (v == COPIES || v == EVENT_COPIES) {
				/* a slot a step, reused COPY_SLOTS steps later (a
				 * copy still queued then would show in the sums) */
				int *slot = pinned + (i % COPY_SLOTS) * 4;
				for (int w = 0; w < 3; w++) {
					slot[w] = i;
					CHECK(cudaMemcpyAsync(d + w, slot + w, sizeof(int),
					                      cudaMemcpyHostToDevice, s));
				}
			}
			if (v == MEMOPS1_EVENT)
				CHECK(cudaEventRecord(mark[i % 8], s));
			if (v == NODE || v == NODE_FULL) {
				void *args[4] = { &d, &i, &i, &i };
				kp.kernelParams = args;
				CHECK(cudaGraphExecKernelNodeSetParams(v == NODE ? fed : fed_full,
				                                       v == NODE ? node : node_full, &kp));
			}
			CHECK(cudaGraphLaunch(v == NODE ? fed : v == NODE_FULL ? fed_full : plain, s));
			want += (unsigned long long)KERNELS * (unsigned long long)i;
		}
		CHECK(cudaEventRecord(e1, s));
		CHECK(cudaEventSynchronize(e1));
		if (refused) {
			printf("%-42s refused by the driver\n", names[v]);
			continue;
		}
		float ms = 0.0f;
		CHECK(cudaEventElapsedTime(&ms, e0, e1));
		CHECK(cudaMemcpy(&got, sum, sizeof got, cudaMemcpyDeviceToHost));
		const double per = ms * 1000.0 / steps;
		if (v == BACK)
			base = per;
		printf("%-42s %9.2f us a step, %+6.2f us%s\n", names[v], per, per - base,
		       !feeds ? "" : got == want ? ", sums right" : ", sums WRONG");
	}
	CHECK(cudaGetLastError());
	return 0;
}
