/*
 * cuda-init.cu - tensor initializers (plan.h's struct plan_init) computed
 * on the device, bit for bit as host_init_tensor() computes them.
 *
 * Element i is computed in f32 by the same operations as on the host, each
 * rounded to nearest even and none fused (hence __fmul_rn and __fadd_rn,
 * which nvcc never contracts into an FMA):
 *
 *   ZEROS 0, ONES 1, CONST (float)value,
 *   RANDOM bcg_uniform(seed, i) * (float)scale,
 *   ARANGE (float)value + (float)i * (float)scale,
 *
 * then stored as f32, as f16 or bf16 rounded to nearest even, or as i32
 * truncated toward zero (NaN 0, saturating). The double-to-float roundings
 * of value and scale happen once, on the host; (float)i of a 64-bit
 * unsigned rounds to nearest even on both sides (__ull2float_rn here).
 */
#include "config.h"

#include "cuda-internal.h"

/* Element G of the whole tensor INIT describes, before the store. */
__device__ __forceinline__ float bcg_init_value(int kind, uint64_t seed, float scale,
                                                float value, uint64_t g)
{
	switch (kind) {
	case PLAN_INIT_ONES:
		return 1.0f;
	case PLAN_INIT_CONST:
		return value;
	case PLAN_INIT_RANDOM:
		return __fmul_rn(bcg_uniform(seed, g), scale);
	case PLAN_INIT_ARANGE:
		return __fadd_rn(value, __fmul_rn(__ull2float_rn(g), scale));
	default:
		return 0.0f;
	}
}

__global__ void bcg_init_kernel(void *dst, int dt, uint64_t count, int kind, uint64_t seed,
                                float scale, float value)
{
	for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
	     i += (uint64_t)gridDim.x * blockDim.x)
		cuda_st(dst, dt, (int64_t)i, bcg_init_value(kind, seed, scale, value, i));
}

/* The checks both launchers make, and their grid: 0 with *BLOCKS set (0:
 * nothing to launch), or -1 with MSG. No device query here (the caller
 * gives no context): a fixed grid, the grid-stride loop doing the rest. */
static int cuda_init_grid(int dtype, uint64_t count, const struct plan_init *init,
                          unsigned *blocks, char *msg, size_t len)
{
	*blocks = 0;
	if (init->kind == PLAN_INIT_NONE)
		return 0;
	if (init->kind < PLAN_INIT_ZEROS || init->kind > PLAN_INIT_ARANGE)
		return cuda_fail(msg, len, "init: unknown initializer kind %d", init->kind);
	if (!cuda_is_known_dtype(dtype))
		return cuda_fail(msg, len, "init: unknown dtype %d", dtype);
	if (count == 0)
		return 0;
	if (count > (uint64_t)INT64_MAX / 4)
		return cuda_fail(msg, len, "init: %llu elements is too many",
		                 (unsigned long long)count);
	uint64_t want = (count + CUDA_EW_THREADS - 1) / CUDA_EW_THREADS;
	*blocks = want > 4096 ? 4096u : (unsigned)want;
	return 0;
}

extern "C" int cuda_init_tensor(void *dst, int dtype, uint64_t count,
                                const struct plan_init *init, cudaStream_t stream,
                                char *msg, size_t len)
{
	unsigned blocks;

	if (cuda_init_grid(dtype, count, init, &blocks, msg, len) != 0)
		return -1;
	if (blocks == 0)
		return 0;
	bcg_init_kernel<<<blocks, CUDA_EW_THREADS, 0, stream>>>(
		dst, dtype, count, init->kind, init->seed, (float)init->scale, (float)init->value);
	return cuda_check_launch("bcg_init_kernel", msg, len);
}

/* A rank's share of a split tensor: element i is element
 * bcg_slice_index(slice, i) of the whole, computed as above. Unsplit
 * tensors keep the kernel above. */
__global__ void bcg_init_slice_kernel(void *dst, int dt, uint64_t count, int kind,
                                      uint64_t seed, float scale, float value,
                                      struct bcg_slice slice)
{
	for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
	     i += (uint64_t)gridDim.x * blockDim.x)
		cuda_st(dst, dt, (int64_t)i,
		        bcg_init_value(kind, seed, scale, value, bcg_slice_index(&slice, i)));
}

extern "C" int cuda_init_slice(void *dst, int dtype, uint64_t count,
                               const struct plan_init *init, const struct bcg_slice *slice,
                               cudaStream_t stream, char *msg, size_t len)
{
	unsigned blocks;

	if (init->kind == PLAN_INIT_NONE)
		return 0;
	if (slice->inner == 0 || slice->share == 0 || slice->nblocks == 0 ||
	    slice->nblocks > BCG_SLICE_MAX_BLOCKS)
		return cuda_fail(msg, len, "init: a share of %llu x %llu in %u blocks",
		                 (unsigned long long)slice->share, (unsigned long long)slice->inner,
		                 slice->nblocks);
	if (cuda_init_grid(dtype, count, init, &blocks, msg, len) != 0)
		return -1;
	if (blocks == 0)
		return 0;
	bcg_init_slice_kernel<<<blocks, CUDA_EW_THREADS, 0, stream>>>(
		dst, dtype, count, init->kind, init->seed, (float)init->scale, (float)init->value,
		*slice);
	return cuda_check_launch("bcg_init_slice_kernel", msg, len);
}
