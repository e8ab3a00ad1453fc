/*
 * bench/bench-cuda.h - what the standalone CUDA benches (bench/*.cu) share.
 *
 * CHECK(call): a CUDA runtime call that must succeed; when it fails, the
 * program says where (the bench's file and line), which call and CUDA's
 * reason, and ends with status 1. bench_fill: reproducible inputs.
 */
#ifndef BENCH_CUDA_H
#define BENCH_CUDA_H

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

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

#endif
