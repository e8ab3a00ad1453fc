/*
 * graph-update.cu - small CUDA programs for `bcgtool record` to record on
 * a GPU (t/t6520-record-update-devices.sh), doing what serving engines do
 * that the PyTorch stand-ins (t/record/) do not:
 *
 *   graph-update update STEPS    one executable graph, y = 2x + 1 into A,
 *                                launched STEPS times; cudaGraphExecUpdate
 *                                with a capture of the same shape, y = 3x + 5
 *                                into B, STEPS times; then its kernel node
 *                                set (cudaGraphExecKernelNodeSetParams) to
 *                                y = 4x into A with 128 threads a block,
 *                                STEPS times
 *   graph-update devices STEPS   a graph on device 0 (y = 2x) and one on
 *                                device 1 (y = 3x), launched in turn STEPS
 *                                times each
 *
 * Each checks its results against values worked on the host and prints
 * one line "graph-update MODE: ok". Exit 0, 1 when a result is wrong, 2
 * for usage, 3 for a CUDA error or fewer than two devices (devices).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#define N 1024

__global__ void axpb(float *y, const float *x, float a, float b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = a * x[i] + b;
}

#define TRY(call)                                                                   \
	do {                                                                        \
		cudaError_t e_ = (call);                                            \
		if (e_ != cudaSuccess) {                                            \
			fprintf(stderr, "graph-update: %s: %s\n", #call,           \
			        cudaGetErrorString(e_));                            \
			exit(3);                                                    \
		}                                                                   \
	} while (0)

/* X with x[i] = i, on the current device. */
static float *make_x(void)
{
	float host[N], *x = NULL;

	for (int i = 0; i < N; i++)
		host[i] = (float)i;
	TRY(cudaMalloc(&x, N * sizeof *x));
	TRY(cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice));
	return x;
}

/* A graph of one axpb on STREAM, captured. */
static cudaGraph_t capture(cudaStream_t st, float *y, const float *x, float a, float b)
{
	cudaGraph_t g = NULL;

	TRY(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
	axpb<<<N / 256, 256, 0, st>>>(y, x, a, b, N);
	TRY(cudaGetLastError());
	TRY(cudaStreamEndCapture(st, &g));
	return g;
}

/* Whether Y (on the device) is a x[i] + b for every i. */
static int check(const float *y, float a, float b, const char *what)
{
	float host[N];

	TRY(cudaMemcpy(host, y, sizeof host, cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		if (host[i] != a * (float)i + b) {
			fprintf(stderr, "graph-update: %s: element %d is %g, not %g\n", what, i,
			        (double)host[i], (double)(a * (float)i + b));
			return 0;
		}
	return 1;
}

static int update(int steps)
{
	cudaStream_t st;
	cudaGraph_t g1, g2;
	cudaGraphExec_t e;
	cudaGraphExecUpdateResultInfo info;
	cudaGraphNode_t node;
	cudaKernelNodeParams p = {};
	size_t nn = 1;
	float *x, *a = NULL, *b = NULL, four = 4, zero = 0;
	int n = N, ok = 1;
	void *args[5];

	TRY(cudaSetDevice(0));
	TRY(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	x = make_x();
	TRY(cudaMalloc(&a, N * sizeof *a));
	TRY(cudaMalloc(&b, N * sizeof *b));
	g1 = capture(st, a, x, 2, 1);
	TRY(cudaGraphInstantiate(&e, g1, 0));
	for (int s = 0; s < steps; s++)
		TRY(cudaGraphLaunch(e, st));
	TRY(cudaStreamSynchronize(st));
	ok &= check(a, 2, 1, "before the update");
	/* Another capture of the same shape: the executable runs it now. */
	g2 = capture(st, b, x, 3, 5);
	memset(&info, 0, sizeof info);
	TRY(cudaGraphExecUpdate(e, g2, &info));
	for (int s = 0; s < steps; s++)
		TRY(cudaGraphLaunch(e, st));
	TRY(cudaStreamSynchronize(st));
	ok &= check(b, 3, 5, "after cudaGraphExecUpdate");
	/* The kernel node set anew, named by the node of the first graph. */
	TRY(cudaGraphGetNodes(g1, &node, &nn));
	TRY(cudaGraphKernelNodeGetParams(node, &p));
	args[0] = &a;
	args[1] = &x;
	args[2] = &four;
	args[3] = &zero;
	args[4] = &n;
	p.kernelParams = args;
	p.extra = NULL;
	p.gridDim = dim3(N / 128);
	p.blockDim = dim3(128);
	TRY(cudaGraphExecKernelNodeSetParams(e, node, &p));
	for (int s = 0; s < steps; s++)
		TRY(cudaGraphLaunch(e, st));
	TRY(cudaStreamSynchronize(st));
	ok &= check(a, 4, 0, "after cudaGraphExecKernelNodeSetParams");
	ok &= check(b, 3, 5, "B after the node set");
	TRY(cudaGraphExecDestroy(e));
	TRY(cudaGraphDestroy(g1));
	TRY(cudaGraphDestroy(g2));
	TRY(cudaFree(x));
	TRY(cudaFree(a));
	TRY(cudaFree(b));
	TRY(cudaStreamDestroy(st));
	return ok;
}

static int devices(int steps)
{
	cudaStream_t st[2];
	cudaGraph_t g[2];
	cudaGraphExec_t e[2];
	float *x[2], *y[2];
	int count = 0, ok = 1;

	TRY(cudaGetDeviceCount(&count));
	if (count < 2) {
		fprintf(stderr, "graph-update: devices needs two CUDA devices, this machine has "
		        "%d\n", count);
		exit(3);
	}
	for (int d = 0; d < 2; d++) {
		TRY(cudaSetDevice(d));
		TRY(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
		x[d] = make_x();
		TRY(cudaMalloc(&y[d], N * sizeof *y[d]));
		g[d] = capture(st[d], y[d], x[d], (float)(2 + d), 0);
		TRY(cudaGraphInstantiate(&e[d], g[d], 0));
	}
	for (int s = 0; s < steps; s++)
		for (int d = 0; d < 2; d++) {
			TRY(cudaSetDevice(d));
			TRY(cudaGraphLaunch(e[d], st[d]));
		}
	for (int d = 0; d < 2; d++) {
		TRY(cudaSetDevice(d));
		TRY(cudaStreamSynchronize(st[d]));
		ok &= check(y[d], (float)(2 + d), 0, d ? "device 1" : "device 0");
		TRY(cudaGraphExecDestroy(e[d]));
		TRY(cudaGraphDestroy(g[d]));
		TRY(cudaFree(x[d]));
		TRY(cudaFree(y[d]));
		TRY(cudaStreamDestroy(st[d]));
	}
	return ok;
}

int main(int argc, char **argv)
{
	int steps = argc > 2 ? atoi(argv[2]) : 0, ok;

	if (argc != 3 || steps < 1) {
		fprintf(stderr, "usage: graph-update update|devices STEPS\n");
		return 2;
	}
	if (strcmp(argv[1], "update") == 0)
		ok = update(steps);
	else if (strcmp(argv[1], "devices") == 0)
		ok = devices(steps);
	else {
		fprintf(stderr, "usage: graph-update update|devices STEPS\n");
		return 2;
	}
	printf("graph-update %s: %s\n", argv[1], ok ? "ok" : "wrong results");
	return ok ? 0 : 1;
}
