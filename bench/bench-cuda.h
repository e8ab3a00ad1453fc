/*
 * bench/bench-cuda.h - what the standalone CUDA benches (bench/*.cu) share.
 *
 * CHECK(call): a CUDA runtime call that must succeed; when it fails, the
 * program says where (the bench's file and line), which call and CUDA's
 * reason, and ends with status 1.
 */
#ifndef BENCH_CUDA_H
#define BENCH_CUDA_H

#include <cuda_runtime.h>

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

#endif
