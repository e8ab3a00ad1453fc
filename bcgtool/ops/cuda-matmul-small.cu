/*
 * cuda-matmul-small.cu - matmul for decode-sized M: out[M,N] = a[M,K] @ b[K,N]
 * with M <= 16 and b row-major [K,N] in f16 or bf16.
 *
 * A decode step multiplies a handful of token rows by weight matrices of a
 * few megabytes: the work is reading b once. cuBLAS tiles such shapes 64
 * columns by 8 rows and runs 16 blocks for a 1024x1024 matrix, reaching a
 * sixth of the H100's bandwidth (4.5 us for 2 MB, measured). Here each
 * block takes 64 columns and a slice of K, so about 256 blocks stream b
 * with 16-byte loads; every thread keeps M x 8 accumulators.
 *
 * The slices are summed in one kernel and deterministically: each block
 * writes its partial sums to scratch, and the last block of a column tile
 * to arrive (a ticket from a per-tile counter) adds the partials in slice
 * order and stores the result, then resets the counter for the next
 * launch. The order of every addition is fixed, so replays match eager
 * runs bit for bit.
 */
#include "config.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda-internal.h"

#define SMALL_M_MAX      16
#define SMALL_TILE_N     64                     /* columns per block */
#define SMALL_THREADS    256
#define SMALL_GROUPS     (SMALL_TILE_N / 8)     /* threads per k-row: 8 columns each */
#define SMALL_ROWS       (SMALL_THREADS / SMALL_GROUPS)   /* k-rows per pass: 32 */
#define SMALL_KSLICE_MAX 512                    /* a slice's rows of a in shared memory */
#define SMALL_BLOCKS     256                    /* blocks to aim for: two per SM */

/* Eight consecutive elements of a row of b, as floats, from one 16-byte load. */
__device__ __forceinline__ void small_load8(const __half *p, float *f)
{
	uint4 u = *reinterpret_cast<const uint4 *>(p);
	const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
	for (int j = 0; j < 4; j++) {
		float2 v = __half22float2(h[j]);
		f[2 * j] = v.x;
		f[2 * j + 1] = v.y;
	}
}

__device__ __forceinline__ void small_load8(const __nv_bfloat16 *p, float *f)
{
	uint4 u = *reinterpret_cast<const uint4 *>(p);
	const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
#pragma unroll
	for (int j = 0; j < 4; j++) {
		float2 v = __bfloat1622float2(h[j]);
		f[2 * j] = v.x;
		f[2 * j + 1] = v.y;
	}
}

__device__ __forceinline__ float small_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float small_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/* a is read as a[m * a_m + k * a_k], which covers both of its layouts. */
template <typename T, int MT>
__global__ void __launch_bounds__(SMALL_THREADS)
bcg_matmul_small_kernel(const T *a, int64_t a_m, int64_t a_k, const T *b, void *out,
                        int out_dt, int M, int N, int K, int kslice, float *partials,
                        unsigned *counters)
{
	/* The slice of a, then (reused) the per-warp sums. */
	__shared__ float smem[MT * SMALL_KSLICE_MAX];
	__shared__ unsigned ticket;
	const int tile = blockIdx.x, slice = blockIdx.y, nslices = gridDim.y;
	const int tid = threadIdx.x, group = tid % SMALL_GROUPS, row = tid / SMALL_GROUPS;
	const int k0 = slice * kslice, k1 = min(K, k0 + kslice);
	const int n0 = tile * SMALL_TILE_N + group * 8;
	float acc[MT][8];

	for (int i = tid; i < MT * kslice; i += SMALL_THREADS) {
		int m = i / kslice, k = k0 + i % kslice;
		smem[i] = m < M && k < k1 ? small_to_float(a[m * a_m + k * a_k]) : 0.0f;
	}
	__syncthreads();

#pragma unroll
	for (int m = 0; m < MT; m++)
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[m][j] = 0.0f;
	if (n0 < N) {
#pragma unroll 4
		for (int k = k0 + row; k < k1; k += SMALL_ROWS) {
			float w[8];
			small_load8(b + (int64_t)k * N + n0, w);
			const float *ak = &smem[k - k0];
#pragma unroll
			for (int m = 0; m < MT; m++) {
				float av = ak[m * kslice];
#pragma unroll
				for (int j = 0; j < 8; j++)
					acc[m][j] = fmaf(av, w[j], acc[m][j]);
			}
		}
	}

	/* The four k-rows a warp covers share columns: lanes 8 and 16 apart.
	 * x + y == y + x exactly, so both lanes of a pair hold the same sum. */
#pragma unroll
	for (int m = 0; m < MT; m++)
#pragma unroll
		for (int j = 0; j < 8; j++) {
			float v = acc[m][j];
			v += __shfl_xor_sync(0xffffffffu, v, 8);
			v += __shfl_xor_sync(0xffffffffu, v, 16);
			acc[m][j] = v;
		}
	__syncthreads();   /* the slice of a is no longer needed */
	const int warp = tid / 32, lane = tid % 32;
	if (lane < SMALL_GROUPS) {
#pragma unroll
		for (int m = 0; m < MT; m++)
#pragma unroll
			for (int j = 0; j < 8; j++)
				smem[(warp * MT + m) * SMALL_TILE_N + lane * 8 + j] = acc[m][j];
	}
	__syncthreads();

	/* The warps' sums in warp order: this block's result for the slice. */
	for (int e = tid; e < MT * SMALL_TILE_N; e += SMALL_THREADS) {
		int m = e / SMALL_TILE_N, n = tile * SMALL_TILE_N + e % SMALL_TILE_N;
		float s = 0.0f;
		for (int w = 0; w < SMALL_THREADS / 32; w++)
			s += smem[(w * MT + m) * SMALL_TILE_N + e % SMALL_TILE_N];
		if (m >= M || n >= N)
			continue;
		if (nslices == 1)
			cuda_st(out, out_dt, (int64_t)m * N + n, s);
		else
			partials[((int64_t)slice * M + m) * N + n] = s;
	}
	if (nslices == 1)
		return;

	/* Publish the partials, take a ticket; the last block sums them all. */
	__threadfence();
	__syncthreads();
	if (tid == 0)
		ticket = atomicAdd(&counters[tile], 1u);
	__syncthreads();
	if (ticket != (unsigned)nslices - 1)
		return;
	__threadfence();
	for (int e = tid; e < M * SMALL_TILE_N; e += SMALL_THREADS) {
		int m = e / SMALL_TILE_N, n = tile * SMALL_TILE_N + e % SMALL_TILE_N;
		float s = 0.0f;
		if (n >= N)
			continue;
		for (int y = 0; y < nslices; y++)
			s += __ldcg(&partials[((int64_t)y * M + m) * N + n]);
		cuda_st(out, out_dt, (int64_t)m * N + n, s);
	}
	if (tid == 0)
		counters[tile] = 0;   /* ready for the next launch */
}

/* How a call is split: the K rows per slice and the number of slices. It
 * depends on the shapes alone (not on the device), so the scratch a call
 * needs is known before any launch. */
static void small_split(int64_t N, int64_t K, int *kslice, int *nslices)
{
	int64_t tiles = (N + SMALL_TILE_N - 1) / SMALL_TILE_N;
	int64_t want = (SMALL_BLOCKS + tiles - 1) / tiles;
	int64_t least = (K + SMALL_KSLICE_MAX - 1) / SMALL_KSLICE_MAX;
	int64_t n = want > least ? want : least, ks;

	if (n > (K + SMALL_ROWS - 1) / SMALL_ROWS)
		n = (K + SMALL_ROWS - 1) / SMALL_ROWS;
	if (n < 1)
		n = 1;
	/* Whole passes of SMALL_ROWS rows per slice. */
	ks = (K + n - 1) / n;
	ks = (ks + SMALL_ROWS - 1) / SMALL_ROWS * SMALL_ROWS;
	if (ks > SMALL_KSLICE_MAX)
		ks = SMALL_KSLICE_MAX;
	*kslice = (int)ks;
	*nslices = (int)((K + ks - 1) / ks);
}

/* Whether CALL takes this path. */
static int small_applies(const struct op_call *call, const struct cuda_op_ctx *ctx)
{
	const struct op_tensor *a = &call->in[0], *b = &call->in[1], *out = &call->out[0];
	int64_t M = out->dim[0], N = out->dim[1];
	int64_t K = call->attr[MATMUL_TRANS_A].i ? a->dim[0] : a->dim[1];

	if (call->attr[MATMUL_TRANS_B].i != 0 || a->rank != 2 || b->rank != 2 || out->rank != 2)
		return 0;
	if ((a->dtype != PLAN_DTYPE_F16 && a->dtype != PLAN_DTYPE_BF16) || b->dtype != a->dtype ||
	    (out->dtype != a->dtype && out->dtype != PLAN_DTYPE_F32))
		return 0;
	if (M < 1 || M > SMALL_M_MAX || N < 8 || N % 8 != 0 || K < 1 || K > INT32_MAX / 2 ||
	    N > INT32_MAX / SMALL_M_MAX || b->dim[0] != K || b->dim[1] != N)
		return 0;
	if (((uintptr_t)b->data & 15) != 0)
		return 0;
	if (ctx != NULL && (uint64_t)(N + SMALL_TILE_N - 1) / SMALL_TILE_N > ctx->ncounters)
		return 0;
	return 1;
}

extern "C" size_t cuda_matmul_scratch_bytes(const struct op_call *call)
{
	const struct op_tensor *a = &call->in[0], *out = &call->out[0];
	int kslice, nslices;

	if (call->nin < 2 || call->nout < 1 || !small_applies(call, NULL))
		return 0;
	small_split(out->dim[1], call->attr[MATMUL_TRANS_A].i ? a->dim[0] : a->dim[1],
	            &kslice, &nslices);
	return nslices > 1 ? (size_t)nslices * (size_t)out->dim[0] * (size_t)out->dim[1] * sizeof(float)
	                   : 0;
}

template <typename T, int MT>
static void small_launch(const struct op_call *call, const struct cuda_op_ctx *ctx, dim3 grid,
                         int kslice)
{
	const struct op_tensor *a = &call->in[0], *b = &call->in[1], *out = &call->out[0];
	int trans_a = call->attr[MATMUL_TRANS_A].i != 0;
	int64_t M = out->dim[0], N = out->dim[1], K = trans_a ? a->dim[0] : a->dim[1];
	/* a is [M,K] (row m at m*K), or [K,M] when transposed (row m at m). */
	int64_t a_m = trans_a ? 1 : K, a_k = trans_a ? M : 1;

	bcg_matmul_small_kernel<T, MT><<<grid, SMALL_THREADS, 0, ctx->stream>>>(
		static_cast<const T *>(a->data), a_m, a_k, static_cast<const T *>(b->data),
		out->data, out->dtype, (int)M, (int)N, (int)K, kslice,
		static_cast<float *>(ctx->scratch), ctx->counters);
}

template <typename T>
static void small_dispatch(const struct op_call *call, const struct cuda_op_ctx *ctx, dim3 grid,
                           int kslice)
{
	int64_t M = call->out[0].dim[0];

	if (M <= 1)
		small_launch<T, 1>(call, ctx, grid, kslice);
	else if (M <= 2)
		small_launch<T, 2>(call, ctx, grid, kslice);
	else if (M <= 4)
		small_launch<T, 4>(call, ctx, grid, kslice);
	else if (M <= 8)
		small_launch<T, 8>(call, ctx, grid, kslice);
	else
		small_launch<T, 16>(call, ctx, grid, kslice);
}

extern "C" int cuda_matmul_small(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                 char *msg, size_t len)
{
	const struct op_tensor *a = &call->in[0], *out = &call->out[0];
	int64_t N = out->dim[1], K = call->attr[MATMUL_TRANS_A].i ? a->dim[0] : a->dim[1];
	int kslice, nslices;

	if (!small_applies(call, ctx))
		return 1;
	small_split(N, K, &kslice, &nslices);
	if (nslices > 1 && cuda_matmul_scratch_bytes(call) > ctx->scratch_bytes)
		return cuda_fail(msg, len, "matmul: %zu bytes of scratch needed, %zu given",
		                 cuda_matmul_scratch_bytes(call), ctx->scratch_bytes);
	dim3 grid((unsigned)((N + SMALL_TILE_N - 1) / SMALL_TILE_N), (unsigned)nslices);
	if (a->dtype == PLAN_DTYPE_F16)
		small_dispatch<__half>(call, ctx, grid, kslice);
	else
		small_dispatch<__nv_bfloat16>(call, ctx, grid, kslice);
	return cuda_check_launch("bcg_matmul_small_kernel", msg, len);
}
