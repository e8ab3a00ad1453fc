/*
 * backend-cuda-hold.cu - the stream hold used to time queued work.
 */
#include <stdio.h>

#include "backend-cuda.h"

static __device__ __forceinline__ unsigned long long global_ns(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

static __global__ void hold_kernel(unsigned long long ns)
{
	unsigned long long start = global_ns();
	while (global_ns() - start < ns)
		__nanosleep(1000);
}

extern "C" int cuda_hold_stream(cudaStream_t stream, double us, char *msg, size_t len)
{
	hold_kernel<<<1, 1, 0, stream>>>((unsigned long long)(us * 1000.0));
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess) {
		snprintf(msg, len, "hold kernel: %s", cudaGetErrorString(e));
		return -1;
	}
	return 0;
}
