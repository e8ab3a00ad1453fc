/*
 * cuda-matmul-small.cu - matmul for decode-sized M: out[M,N] = a[M,K] @ b[K,N]
 * with M <= 16 and b row-major [K,N] in f16 or bf16.
 *
 * A decode step multiplies a handful of token rows by weight matrices of a
 * few megabytes: the work is reading b once. cuBLAS tiles such shapes 64
 * columns by 8 rows and runs 16 blocks for a 1024x1024 matrix, reaching a
 * sixth of the H100's bandwidth (4.5 us for 2 MB, measured on the H100).
 *
 * Here a block owns 16 columns and all of K: two threads share a row of b
 * (8 columns, one 16-byte load each), 128 rows are read at once, and each
 * thread keeps eight loads in flight while it accumulates M x 8 sums. A
 * tile is a whole 32-byte sector of every row it reads. a is staged in
 * shared memory a chunk at a time, transposed to [k][m], from 16-byte
 * loads all issued at once. One warp-shuffle
 * tree and one pass over shared memory add the partial sums, always in the
 * same order, so the result is the same bits on every launch, eager or
 * replayed. Measured on the H100 on the way here: a split-K design with a
 * ticketed last-block reduction ran 9.8 us for 2 MB (each block read too
 * little to hide its chain of latencies); reading a straight from global
 * memory, uncoalesced, 20.8 us; staging a with one 2-byte load after
 * another, 11 us.
 */
#include "config.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda-internal.h"

#define SMALL_M_MAX   16
#define SMALL_TILE_N  16                        /* columns per block */
#define SMALL_THREADS 256
#define SMALL_GROUPS  (SMALL_TILE_N / 8)         /* threads per row of b */
#define SMALL_ROWS    (SMALL_THREADS / SMALL_GROUPS)   /* rows of b at once: 128 */
#define SMALL_WARPS   (SMALL_THREADS / 32)

/* Eight consecutive elements of a row of b, as floats, from its 16-byte load. */
__device__ __forceinline__ void small_unpack8(const uint4 &u, const __half *, float *f)
{
	const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
	for (int j = 0; j < 4; j++) {
		float2 v = __half22float2(h[j]);
		f[2 * j] = v.x;
		f[2 * j + 1] = v.y;
	}
}

__device__ __forceinline__ void small_unpack8(const uint4 &u, const __nv_bfloat16 *, float *f)
{
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

/* The MT values of one staged row of a, as floats, in one shared-memory
 * load where the row is 16 bytes or a multiple of them. */
template <typename T, int MT>
__device__ __forceinline__ void small_row(const T *p, float *av)
{
	if constexpr (MT % 8 == 0) {
#pragma unroll
		for (int q = 0; q < MT / 8; q++)
			small_unpack8(reinterpret_cast<const uint4 *>(p)[q], p, av + 8 * q);
	} else {
#pragma unroll
		for (int m = 0; m < MT; m++)
			av[m] = small_to_float(p[m]);
	}
}

/* Rows of b each thread loads ahead per chunk: eight, or four where the
 * accumulators of 16 rows of a leave too few registers. */
template <int MT> struct small_batch { enum { n = MT >= 16 ? 4 : 8 }; };

/* a [M,K] is staged in shared memory a chunk of K at a time, as [k][m] and
 * in its own dtype (exact), so that a thread reads all M values of its
 * k-row at once while the loads of a stay 16 bytes wide along k. */
template <typename T, int MT>
__global__ void __launch_bounds__(SMALL_THREADS)
bcg_matmul_small_kernel(const T *a, const T *b, void *out, int out_dt, int M, int N, int K)
{
	enum { NB = small_batch<MT>::n, CHUNK = SMALL_ROWS * NB };
	__shared__ __align__(16) T as[CHUNK][MT];
	__shared__ float red[SMALL_WARPS][MT][SMALL_TILE_N];
	const int tid = threadIdx.x, group = tid % SMALL_GROUPS, row = tid / SMALL_GROUPS;
	const int warp = tid / 32, lane = tid % 32;
	const int n0 = blockIdx.x * SMALL_TILE_N + group * 8;
	float acc[MT][8];

#pragma unroll
	for (int m = 0; m < MT; m++)
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[m][j] = 0.0f;

	for (int c0 = 0; c0 < K; c0 += CHUNK) {
		uint4 braw[NB];

		/* This chunk's rows of b first: their latency then overlaps the
		 * staging of a below. */
#pragma unroll
		for (int i = 0; i < NB; i++) {
			int k = c0 + row + i * SMALL_ROWS;
			braw[i] = n0 < N && k < K
				? __ldg(reinterpret_cast<const uint4 *>(b + (int64_t)k * N + n0))
				: make_uint4(0, 0, 0, 0);
		}
		/* The chunk of a: all of this thread's 16-byte loads at once (K is
		 * a multiple of 8, so a vector is wholly inside a row or past it),
		 * then scattered to [k][m]. */
		enum { NVEC = MT * CHUNK / 8, VECS = (NVEC + SMALL_THREADS - 1) / SMALL_THREADS };
		uint4 araw[VECS];
#pragma unroll
		for (int i = 0; i < VECS; i++) {
			int v = tid + i * SMALL_THREADS;
			int m = v / (CHUNK / 8), k = c0 + v % (CHUNK / 8) * 8;
			araw[i] = v < NVEC && m < M && k < K
				? __ldg(reinterpret_cast<const uint4 *>(a + (int64_t)m * K + k))
				: make_uint4(0, 0, 0, 0);
		}
		__syncthreads();   /* the last chunk's readers are done with as */
#pragma unroll
		for (int i = 0; i < VECS; i++) {
			int v = tid + i * SMALL_THREADS;
			int m = v / (CHUNK / 8), kk = v % (CHUNK / 8) * 8;
			const T *e = reinterpret_cast<const T *>(&araw[i]);
			if (v >= NVEC)
				break;
#pragma unroll
			for (int j = 0; j < 8; j++)
				as[kk + j][m] = e[j];
		}
		__syncthreads();
#pragma unroll
		for (int i = 0; i < NB; i++) {
			int kk = row + i * SMALL_ROWS;
			float w[8], av[MT];
			small_unpack8(braw[i], b, w);
			small_row<T, MT>(as[kk], av);
#pragma unroll
			for (int m = 0; m < MT; m++)
#pragma unroll
				for (int j = 0; j < 8; j++)
					acc[m][j] = fmaf(av[m], w[j], acc[m][j]);
		}
	}

	/* Lanes with the same column group (lane % 2) add up in a fixed tree.
	 * x + y == y + x exactly, so partners hold identical sums. */
#pragma unroll
	for (int m = 0; m < MT; m++)
#pragma unroll
		for (int j = 0; j < 8; j++) {
			float v = acc[m][j];
#pragma unroll
			for (int d = SMALL_GROUPS; d < 32; d *= 2)
				v += __shfl_xor_sync(0xffffffffu, v, d);
			acc[m][j] = v;
		}
	if (lane < SMALL_GROUPS) {
#pragma unroll
		for (int m = 0; m < MT; m++)
#pragma unroll
			for (int j = 0; j < 8; j++)
				red[warp][m][lane * 8 + j] = acc[m][j];
	}
	__syncthreads();
	/* The warps' sums, in warp order. */
	for (int e = tid; e < MT * SMALL_TILE_N; e += SMALL_THREADS) {
		int m = e / SMALL_TILE_N, c = e % SMALL_TILE_N, n = blockIdx.x * SMALL_TILE_N + c;
		float s = 0.0f;
		if (m >= M || n >= N)
			continue;
		for (int w = 0; w < SMALL_WARPS; w++)
			s += red[w][m][c];
		cuda_st(out, out_dt, (int64_t)m * N + n, s);
	}
}

/* Whether CALL takes this path. */
static int small_applies(const struct op_call *call)
{
	const struct op_tensor *a = &call->in[0], *b = &call->in[1], *out = &call->out[0];
	int64_t M = out->dim[0], N = out->dim[1];
	int64_t K = call->attr[MATMUL_TRANS_A].i ? a->dim[0] : a->dim[1];

	if (call->attr[MATMUL_TRANS_A].i != 0 || call->attr[MATMUL_TRANS_B].i != 0 ||
	    a->rank != 2 || b->rank != 2 || out->rank != 2)
		return 0;
	if ((a->dtype != PLAN_DTYPE_F16 && a->dtype != PLAN_DTYPE_BF16) || b->dtype != a->dtype ||
	    (out->dtype != a->dtype && out->dtype != PLAN_DTYPE_F32))
		return 0;
	if (M < 1 || M > SMALL_M_MAX || N < 8 || N % 8 != 0 || K < 8 || K % 8 != 0 ||
	    K > INT32_MAX || a->dim[0] != M ||
	    N > INT32_MAX || b->dim[0] != K || b->dim[1] != N ||
	    (N + SMALL_TILE_N - 1) / SMALL_TILE_N > INT32_MAX)
		return 0;
	return ((uintptr_t)a->data & 15) == 0 && ((uintptr_t)b->data & 15) == 0;
}

template <typename T, int MT>
static void small_launch(const struct op_call *call, const struct cuda_op_ctx *ctx)
{
	const struct op_tensor *a = &call->in[0], *b = &call->in[1], *out = &call->out[0];
	int64_t M = out->dim[0], N = out->dim[1], K = a->dim[1];
	unsigned blocks = (unsigned)((N + SMALL_TILE_N - 1) / SMALL_TILE_N);

	bcg_matmul_small_kernel<T, MT><<<blocks, SMALL_THREADS, 0, ctx->stream>>>(
		static_cast<const T *>(a->data), static_cast<const T *>(b->data), out->data,
		out->dtype, (int)M, (int)N, (int)K);
}

template <typename T>
static void small_dispatch(const struct op_call *call, const struct cuda_op_ctx *ctx)
{
	int64_t M = call->out[0].dim[0];

	if (M <= 1)
		small_launch<T, 1>(call, ctx);
	else if (M <= 2)
		small_launch<T, 2>(call, ctx);
	else if (M <= 4)
		small_launch<T, 4>(call, ctx);
	else if (M <= 8)
		small_launch<T, 8>(call, ctx);
	else
		small_launch<T, 16>(call, ctx);
}

extern "C" int cuda_matmul_small(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                 char *msg, size_t len)
{
	if (!small_applies(call))
		return 1;
	if (call->in[0].dtype == PLAN_DTYPE_F16)
		small_dispatch<__half>(call, ctx);
	else
		small_dispatch<__nv_bfloat16>(call, ctx);
	return cuda_check_launch("bcg_matmul_small_kernel", msg, len);
}
