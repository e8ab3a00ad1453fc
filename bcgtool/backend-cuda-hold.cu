/*
 * backend-cuda-hold.cu - the stream hold used to time queued work, the
 * cache scrub that makes a timed launch start cold, and the touch that
 * puts its input back in L2 as the kernel before it would leave it.
 */
#include <stdint.h>
#include <stdio.h>

#include "backend-cuda.h"
#include "ops/cuda.h"

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
		snprintf(msg, len, "hold kernel: %s%s", cuda_fault_tag(e), cudaGetErrorString(e));
		return -1;
	}
	return 0;
}

/* The idle gap of a paced replay (replay --pace recorded): one thread
 * spins on the global timer, without the hold's sleeps, whose 1 us steps
 * would make a gap of a few microseconds up to twice as long. It reads
 * and writes no memory, so the caches hold what the step left there, as
 * they did while the recorded GPU idled. */
static __global__ void gap_kernel(unsigned long long ns)
{
	unsigned long long start = global_ns();
	while (global_ns() - start < ns)
		;
}

extern "C" int cuda_gap_stream(cudaStream_t stream, uint64_t ns, char *msg, size_t len)
{
	gap_kernel<<<1, 1, 0, stream>>>((unsigned long long)ns);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess) {
		snprintf(msg, len, "gap kernel: %s%s", cuda_fault_tag(e), cudaGetErrorString(e));
		return -1;
	}
	return 0;
}

/* BCG_TEST_FAULT's broken kernel: a store to an address no allocation
 * has, as an out-of-bounds index in a real kernel would make. */
static __global__ void fault_kernel(unsigned *bad)
{
	*bad = 0xdeadu;
}

extern "C" int cuda_fault_kernel(cudaStream_t stream, char *msg, size_t len)
{
	fault_kernel<<<1, 1, 0, stream>>>((unsigned *)(uintptr_t)0x10);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess) {
		snprintf(msg, len, "fault kernel: %s%s", cuda_fault_tag(e), cudaGetErrorString(e));
		return -1;
	}
	return 0;
}

/* Read every 16 bytes of BUF once. The store that keeps the loads alive
 * never happens for a buffer of zeros (cudaMalloc'd and memset by the
 * caller): the sum of zeros is zero. */
static __global__ void scrub_kernel(const uint4 *buf, size_t n, unsigned *sink)
{
	unsigned acc = 0;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint4 v = buf[i];
		acc |= v.x | v.y | v.z | v.w;
	}
	if (acc == 0xFFFFFFFFu)
		*sink = acc;
}

extern "C" int cuda_scrub_cache(cudaStream_t stream, const void *buf, size_t bytes, int sm_count,
                                char *msg, size_t len)
{
	size_t n = bytes / sizeof(uint4);
	unsigned blocks = (unsigned)(sm_count > 0 ? sm_count * 4 : 512);

	scrub_kernel<<<blocks, 512, 0, stream>>>(static_cast<const uint4 *>(buf), n,
	                                          (unsigned *)buf);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess) {
		snprintf(msg, len, "cache scrub kernel: %s%s", cuda_fault_tag(e), cudaGetErrorString(e));
		return -1;
	}
	return 0;
}

/* Load and store back every 16 bytes of BUF (N of them): the bytes are
 * unchanged, now in L2 and dirty, as a kernel that has just written them
 * leaves them. It lets its dependents launch at once (PDL), as the
 * project's kernels do right after their own wait; their wait still
 * waits for its stores. The store is written in PTX so that the compiler
 * cannot drop it as storing what was just loaded. */
static __global__ void touch_kernel(uint4 *buf, size_t n)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint4 v = buf[i];
		asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};"
		             :: "l"(buf + i), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
	}
}

extern "C" int cuda_touch(cudaStream_t stream, void *buf, size_t bytes, int sm_count, char *msg,
                          size_t len)
{
	uintptr_t a = ((uintptr_t)buf + 15) & ~(uintptr_t)15;
	uintptr_t end = ((uintptr_t)buf + bytes) & ~(uintptr_t)15;
	unsigned blocks = (unsigned)(sm_count > 0 ? sm_count * 2 : 256);

	if (end <= a)
		return 0;
	touch_kernel<<<blocks, 256, 0, stream>>>(reinterpret_cast<uint4 *>(a), (end - a) / 16);
	cudaError_t e = cudaGetLastError();
	if (e != cudaSuccess) {
		snprintf(msg, len, "touch kernel: %s%s", cuda_fault_tag(e), cudaGetErrorString(e));
		return -1;
	}
	return 0;
}
