/*
 * bench/bench-cuda.h - what the standalone CUDA benches (the .cu files of
 * bench/) share.
 *
 * CHECK(call): a CUDA runtime call that must succeed; when it fails, the
 * program says where (the bench's file and line), which call and CUDA's
 * reason, and ends with status 1. bench_fill: reproducible inputs.
 * bench_capture: a stream's work as an executable graph. bench_graph_us:
 * a graph's time a launch.
 */
#ifndef BENCH_CUDA_H
#define BENCH_CUDA_H

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                               \
	do {                                                                      \
		cudaError_t e_ = (call);                                          \
		if (e_ != cudaSuccess) {                                          \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__,    \
			        #call, cudaGetErrorString(e_));                   \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

/* Fill P[0, N) with values spread over [-SCALE / 2, SCALE / 2), from a
 * hash of each index and SEED: the same bytes on every run and device. T
 * converts from float (__half, __nv_bfloat16, float). */
template <typename T>
__global__ void bench_fill(T *p, int64_t n, uint32_t seed, float scale)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		uint32_t h = (uint32_t)i * 2654435761u ^ seed;
		h ^= h >> 15;
		h *= 2246822519u;
		h ^= h >> 13;
		p[i] = T(((float)(h & 0xffff) / 65536.0f - 0.5f) * scale);
	}
}

/* The executable graph of what RECORD(S) enqueues on S, captured in MODE
 * (the graph itself destroyed once instantiated). */
template <typename F>
static inline cudaGraphExec_t bench_capture(cudaStream_t s, cudaStreamCaptureMode mode,
                                            F record)
{
	cudaGraph_t g;
	cudaGraphExec_t e;

	CHECK(cudaStreamBeginCapture(s, mode));
	record(s);
	CHECK(cudaStreamEndCapture(s, &g));
	CHECK(cudaGraphInstantiate(&e, g, 0));
	CHECK(cudaGraphDestroy(g));
	return e;
}

/* The median over 5 rounds of STEPS launches of E on S, after WARMUP
 * launches: microseconds a launch, from events around each round. */
static inline double bench_graph_us(cudaStream_t s, cudaGraphExec_t e, int steps, int warmup)
{
	cudaEvent_t a, z;
	std::vector<double> r;

	CHECK(cudaEventCreate(&a));
	CHECK(cudaEventCreate(&z));
	for (int i = 0; i < warmup; i++)
		CHECK(cudaGraphLaunch(e, s));
	for (int round = 0; round < 5; round++) {
		float ms = 0.0f;
		CHECK(cudaEventRecord(a, s));
		for (int i = 0; i < steps; i++)
			CHECK(cudaGraphLaunch(e, s));
		CHECK(cudaEventRecord(z, s));
		CHECK(cudaEventSynchronize(z));
		CHECK(cudaEventElapsedTime(&ms, a, z));
		r.push_back((double)ms * 1e3 / steps);
	}
	std::sort(r.begin(), r.end());
	CHECK(cudaEventDestroy(a));
	CHECK(cudaEventDestroy(z));
	return r[2];
}

#endif
