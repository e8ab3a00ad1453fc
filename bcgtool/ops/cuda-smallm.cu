/*
 * cuda-smallm.cu - the products at decode sizes: a few tokens (M <= 32)
 * times a weight stored [N, K] (trans_b), the layout checkpoints use. The
 * launchers of matmul, matmul_add and matmul_silu_mul live here and run
 * the implementation call->impl names:
 *
 *  - "mma": tensor cores (mma.sync m16n8k16, f16 or bf16 in, f32
 *    accumulate), the weights as the A operand (16 output columns a
 *    tile), the tokens as B (8 a tile, 1 to 4 tiles). f16/bf16, M <= 32,
 *    K % 8 == 0, a and b 16-byte aligned.
 *  - "gemv": plain FMA in f32, any float dtype, M <= 8; 16-byte loads when
 *    K and the operands allow, else element by element.
 *  - "cublas": cuda-matmul.cu, every shape.
 *
 * Both kernels here read each weight row with 16-byte loads straight from
 * global memory, never staged through shared memory: the weights are read
 * once, so nothing is gained by staging them, and the tokens' rows (a few
 * KiB) stay in L1 and L2 for every block. A block of SM_WARPS warps owns a
 * group of output columns and a range of K; its warps (mma) or threads
 * (gemv) share that range out and their sums meet in shared memory, in a
 * fixed order. When there are too few column groups to fill the device,
 * K is also split across blocks (blockIdx.y): each block stores its f32
 * partial sums in the scratch and the last block of a group to finish
 * adds the parts in split order (cuda_last_block), so the result does not
 * depend on which block finishes last. No atomics touch results.
 *
 * The mma fragments. For m16n8k16 the thread of lane l, g = l / 4 and
 * q = l % 4, holds A elements (rows g and g + 8; k 2q, 2q+1, 2q+8, 2q+9)
 * and B elements (column g; the same four k). The order of k in a dot
 * product is free, so on each 32 consecutive k (two k16 steps) the thread
 * loads 16 bytes, k 8q .. 8q+7, of weight rows g and g + 8 and of token
 * g, and gives k 8q .. 8q+3 to the slots of the first step and 8q+4 ..
 * 8q+7 to those of the second. A and B use the same assignment, and the
 * four lanes of a group cover all 32 k of the two steps once, so the
 * products summed are exactly the dot product's. Every load stays one
 * 16-byte load; no ldmatrix, no shuffles.
 *
 * Epilogues, on the block's complete f32 sums (the only place results are
 * written): matmul stores the sum; matmul_add stores x + the sum rounded to
 * out's dtype (what matmul would store); matmul_silu_mul has each block
 * own columns j of the gate (b's rows j) and of the up half (rows N + j),
 * both rounded to out's dtype, and stores silu(g) * u as silu_mul does.
 * Each out element is read (x) and written by the same thread: out may be
 * x.
 *
 * PDL: before cuda_pdl_begin() a block only asks L2 for the first bytes of
 * its weight rows; it waits before reading the tokens.
 */
#include "config.h"

#include <limits.h>

#include <type_traits>

#include "cuda-internal.h"

#define SM_WARPS        4
#define SM_THREADS      (SM_WARPS * 32)
#define SM_MAX_SPLITS   32
#define SM_SM_CAP       256     /* multiprocessors assumed at most (scratch bound) */
#define SM_PREFETCH     256     /* 128-byte lines a block prefetches at most */
#define SM_MMA_MAX_M    32
#define SM_GEMV_MAX_M   8
/* Units of 32 k an mma split gets at least. On an H100 in a graph, a
 * split's merge costs about what 768 k of one block's streaming saves:
 * 1024 x 1024 runs best whole, 1024 x 2816 in three. */
#define SM_MMA_MIN_SPLIT 24

enum { EPI_NONE = 0, EPI_ADD = 1, EPI_SILU = 2 };

/* What a kernel is given; plain data, passed by value. */
struct smallm_args {
	const void *a, *b, *x;
	void       *out;
	int         dtx, dto;
	int         M;
	int64_t     N, K;
	int64_t     nblocks;        /* column groups: gridDim.x */
	int64_t     units;          /* K in the kernel's units (32 k, or a vector) */
	int64_t     per;            /* units of one split */
	int         ksplit;         /* gridDim.y */
	float      *part;           /* ksplit > 1: [ksplit][nblocks][slots * MT] */
	unsigned   *counters;       /* ksplit > 1: one per column group */
};

/* Slot S of a block owning output columns [c0, c0 + G) reads b's row
 * c0 + S for S < G and, for matmul_silu_mul, row N + c0 + S - G (the up
 * half). Columns past N read row N - 1 (or its up twin): their sums are
 * never stored, and every address stays inside b. */
__device__ __forceinline__ int64_t smallm_row(int s, int G, int64_t c0, int64_t N)
{
	int64_t col = c0 + (s % G);
	if (col > N - 1)
		col = N - 1;
	return s >= G ? N + col : col;
}

/* The rest of a block's work once SACC ([slots][MT] in shared memory)
 * holds its sums over its K range, behind a barrier: the split-K
 * combination when there is one, then the epilogue and the trigger. */
template <int EPI, int G, int MT>
__device__ void smallm_finish(float *sacc, const smallm_args &p, int64_t c0, int *flag)
{
	constexpr int S = EPI == EPI_SILU ? 2 * G : G;
	constexpr int E = S * MT;

	if (p.ksplit > 1) {
		const int64_t bx = blockIdx.x;
		float *mine = p.part + ((int64_t)blockIdx.y * p.nblocks + bx) * E;
		for (int e = threadIdx.x; e < E; e += blockDim.x)
			mine[e] = sacc[e];
		if (!cuda_last_block(&p.counters[bx], (unsigned)p.ksplit, flag))
			return;
		for (int e = threadIdx.x; e < E; e += blockDim.x) {
			float s = 0.0f;
			for (int k = 0; k < p.ksplit; k++)
				s += __ldcg(p.part + ((int64_t)k * p.nblocks + bx) * E + e);
			sacc[e] = s;
		}
		__syncthreads();
	}
	for (int e = threadIdx.x; e < G * MT; e += blockDim.x) {
		const int s = e / MT, m = e % MT;
		const int64_t j = c0 + s;
		if (m >= p.M || j >= p.N)
			continue;
		const int64_t o = (int64_t)m * p.N + j;
		const float v = sacc[s * MT + m];
		if constexpr (EPI == EPI_NONE) {
			cuda_st(p.out, p.dto, o, v);
		} else if constexpr (EPI == EPI_ADD) {
			cuda_st(p.out, p.dto, o, cuda_ld(p.x, p.dtx, o) + cuda_round_to(p.dto, v));
		} else {
			float g = cuda_round_to(p.dto, v);
			float u = cuda_round_to(p.dto, sacc[(s + G) * MT + m]);
			float silu = g / (1.0f + expf(-g));
			cuda_st(p.out, p.dto, o, silu * u);
		}
	}
}

/* Once every warp has stored its E sums in RED[warp], add them in warp
 * order into RED[0] (a fixed order: the result is the same every run). */
template <int E>
__device__ __forceinline__ void smallm_merge_warps(float (*red)[E])
{
	__syncthreads();
	for (int e = threadIdx.x; e < E; e += blockDim.x) {
		float v = 0.0f;
#pragma unroll
		for (int w = 0; w < SM_WARPS; w++)
			v += red[w][e];
		red[0][e] = v;
	}
	__syncthreads();
}

/* Ask L2 for the block's weight bytes [k0, k1) of its SLOTS rows, at most
 * SM_PREFETCH lines: the only global access allowed before the wait. */
__device__ __forceinline__ void smallm_prefetch(const char *b, int64_t row_bytes, int slots,
                                                int G, int64_t c0, int64_t N, int64_t k0_bytes,
                                                int64_t k1_bytes)
{
	const int64_t lines = (k1_bytes - k0_bytes + 127) / 128;

	for (int64_t i = threadIdx.x; i < (int64_t)slots * lines && i < SM_PREFETCH;
	     i += blockDim.x) {
		int s = (int)(i / lines);
		int64_t l = i - (int64_t)s * lines;
		cuda_prefetch_l2(b + smallm_row(s, G, c0, N) * row_bytes + k0_bytes + l * 128);
	}
}

/* --- mma ------------------------------------------------------------------- */

template <typename T>
__device__ __forceinline__ void smallm_mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                           uint32_t a3, uint32_t b0, uint32_t b1)
{
	if constexpr (sizeof(T) == 2 && std::is_same<T, __half>::value)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
		             "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
		             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		             : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
	else
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		             "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
		             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		             : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* Units of 32 k. Grid (nblocks, ksplit); each block owns 16 output columns
 * (RT = 2 row tiles for silu_mul: gate and up) and the units [u0, u1);
 * warp w takes units u0 + w, u0 + w + SM_WARPS, ..., U of them at a time
 * with every load of the U issued before the first mma. */
template <typename T, int NT, int EPI>
__global__ void __launch_bounds__(SM_THREADS)
bcg_smallm_mma_kernel(smallm_args p)
{
	constexpr int G = 16;
	constexpr int RT = EPI == EPI_SILU ? 2 : 1;
	constexpr int S = RT * 16;
	constexpr int MT = NT * 8;
	constexpr int U = NT <= 2 ? 4 : 2;
	__shared__ float red[SM_WARPS][S * MT];
	__shared__ int flag;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane >> 2, q = lane & 3;
	const int64_t c0 = (int64_t)blockIdx.x * G;
	const int64_t u0 = (int64_t)blockIdx.y * p.per;
	const int64_t u1 = u0 + p.per < p.units ? u0 + p.per : p.units;
	const T *b = static_cast<const T *>(p.b), *a = static_cast<const T *>(p.a);

	const T *wrow[RT][2];
#pragma unroll
	for (int rt = 0; rt < RT; rt++)
#pragma unroll
		for (int h = 0; h < 2; h++)
			wrow[rt][h] = b + smallm_row(rt * 16 + h * 8 + g, G, c0, p.N) * p.K + q * 8;
	const T *xrow[NT];
#pragma unroll
	for (int nt = 0; nt < NT; nt++) {
		int m = nt * 8 + g < p.M ? nt * 8 + g : p.M - 1;   /* past M: never stored */
		xrow[nt] = a + (int64_t)m * p.K + q * 8;
	}

	smallm_prefetch(static_cast<const char *>(p.b), p.K * (int64_t)sizeof(T), S, G, c0, p.N,
	                u0 * 32 * (int64_t)sizeof(T),
	                (u1 * 32 < p.K ? u1 * 32 : p.K) * (int64_t)sizeof(T));
	cuda_pdl_begin();

	float acc[RT][NT][4];
#pragma unroll
	for (int rt = 0; rt < RT; rt++)
#pragma unroll
		for (int nt = 0; nt < NT; nt++)
#pragma unroll
			for (int c = 0; c < 4; c++)
				acc[rt][nt][c] = 0.0f;

	const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
	for (int64_t u = u0 + warp; u < u1; u += (int64_t)SM_WARPS * U) {
		uint4 wv[U][RT][2], xv[U][NT];
#pragma unroll
		for (int i = 0; i < U; i++) {
			const int64_t ui = u + (int64_t)i * SM_WARPS;
			const int64_t k = ui * 32;          /* + q * 8, in the row pointers */
			const bool in = ui < u1 && k + q * 8 < p.K;
#pragma unroll
			for (int rt = 0; rt < RT; rt++)
#pragma unroll
				for (int h = 0; h < 2; h++)
					wv[i][rt][h] = in ? cuda_ld_stream(wrow[rt][h] + k) : zero;
		}
#pragma unroll
		for (int i = 0; i < U; i++) {
			const int64_t ui = u + (int64_t)i * SM_WARPS;
			const int64_t k = ui * 32;
			const bool in = ui < u1 && k + q * 8 < p.K;
#pragma unroll
			for (int nt = 0; nt < NT; nt++)
				xv[i][nt] = in ? *reinterpret_cast<const uint4 *>(xrow[nt] + k) : zero;
		}
#pragma unroll
		for (int i = 0; i < U; i++) {
#pragma unroll
			for (int st = 0; st < 2; st++) {
#pragma unroll
				for (int rt = 0; rt < RT; rt++) {
					/* words 2st, 2st+1 hold k 8q+4st .. 8q+4st+3 */
					uint32_t lo0 = st ? wv[i][rt][0].z : wv[i][rt][0].x;
					uint32_t hi0 = st ? wv[i][rt][0].w : wv[i][rt][0].y;
					uint32_t lo1 = st ? wv[i][rt][1].z : wv[i][rt][1].x;
					uint32_t hi1 = st ? wv[i][rt][1].w : wv[i][rt][1].y;
#pragma unroll
					for (int nt = 0; nt < NT; nt++) {
						uint32_t b0 = st ? xv[i][nt].z : xv[i][nt].x;
						uint32_t b1 = st ? xv[i][nt].w : xv[i][nt].y;
						smallm_mma<T>(acc[rt][nt], lo0, lo1, hi0, hi1, b0, b1);
					}
				}
			}
		}
	}

	/* c0, c1: row g, tokens 2q, 2q+1; c2, c3: row g + 8. */
#pragma unroll
	for (int rt = 0; rt < RT; rt++)
#pragma unroll
		for (int nt = 0; nt < NT; nt++)
#pragma unroll
			for (int c = 0; c < 4; c++) {
				int s = rt * 16 + g + (c >> 1) * 8, m = nt * 8 + 2 * q + (c & 1);
				red[warp][s * MT + m] = acc[rt][nt][c];
			}
	smallm_merge_warps<S * MT>(red);
	smallm_finish<EPI, G, MT>(red[0], p, c0, &flag);
}

/* --- gemv ------------------------------------------------------------------ */

/* Units: 16-byte vectors (VEC) or elements. Grid (nblocks, ksplit); each
 * block owns G output columns (4, or 2 of gate and 2 of up for silu_mul);
 * thread t takes units u0 + t, u0 + t + SM_THREADS, ..., two at a time,
 * for all its rows and up to MAXM tokens. Sums meet by warp butterflies,
 * then across warps in shared memory. */
template <typename T, int MAXM, bool VEC, int EPI>
__global__ void __launch_bounds__(SM_THREADS)
bcg_smallm_gemv_kernel(smallm_args p)
{
	constexpr int G = EPI == EPI_SILU ? 2 : 4;
	constexpr int S = EPI == EPI_SILU ? 2 * G : G;
	constexpr int MT = MAXM;
	constexpr int V = VEC ? 16 / (int)sizeof(T) : 1;
	constexpr int UN = MAXM >= 8 ? 1 : 2;      /* registers: no spills at 8 tokens */
	__shared__ float red[SM_WARPS][S * MT];
	__shared__ int flag;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int64_t c0 = (int64_t)blockIdx.x * G;
	const int64_t u0 = (int64_t)blockIdx.y * p.per;
	const int64_t u1 = u0 + p.per < p.units ? u0 + p.per : p.units;
	const T *b = static_cast<const T *>(p.b), *a = static_cast<const T *>(p.a);

	const T *wrow[S];
#pragma unroll
	for (int s = 0; s < S; s++)
		wrow[s] = b + smallm_row(s, G, c0, p.N) * p.K;
	const T *xrow[MT];
#pragma unroll
	for (int m = 0; m < MT; m++)
		xrow[m] = a + (int64_t)(m < p.M ? m : p.M - 1) * p.K;

	smallm_prefetch(static_cast<const char *>(p.b), p.K * (int64_t)sizeof(T), S, G, c0, p.N,
	                u0 * V * (int64_t)sizeof(T), u1 * V * (int64_t)sizeof(T));
	cuda_pdl_begin();

	float acc[S][MT];
#pragma unroll
	for (int s = 0; s < S; s++)
#pragma unroll
		for (int m = 0; m < MT; m++)
			acc[s][m] = 0.0f;

	if constexpr (VEC) {
		cuda_dot16_rows<T, S, MT, UN, SM_THREADS>(wrow, xrow, u0, u1, acc);
	} else {
		for (int64_t u = u0 + threadIdx.x; u < u1; u += (int64_t)SM_THREADS * UN) {
#pragma unroll
			for (int i = 0; i < UN; i++) {
				const int64_t ui = u + (int64_t)i * SM_THREADS;
				if (ui >= u1)
					break;
				float xf[MT];
#pragma unroll
				for (int m = 0; m < MT; m++)
					xf[m] = cuda_to_f32(xrow[m][ui]);
#pragma unroll
				for (int s = 0; s < S; s++) {
					float w = cuda_to_f32(wrow[s][ui]);
#pragma unroll
					for (int m = 0; m < MT; m++)
						acc[s][m] = fmaf(w, xf[m], acc[s][m]);
				}
			}
		}
	}

#pragma unroll
	for (int s = 0; s < S; s++)
#pragma unroll
		for (int m = 0; m < MT; m++) {
			float v = cuda_warp_sum(acc[s][m]);
			if (lane == 0)
				red[warp][s * MT + m] = v;
		}
	smallm_merge_warps<S * MT>(red);
	smallm_finish<EPI, G, MT>(red[0], p, c0, &flag);
}

/* --- host side --------------------------------------------------------------- */

static const char *smallm_kind_name(enum op_id id)
{
	switch (id) {
	case OP_MATMUL_ADD:
		return "matmul_add";
	case OP_MATMUL_SILU_MUL:
		return "matmul_silu_mul";
	default:
		return "matmul";
	}
}

int cuda_product_shape(enum op_id id, const struct op_call *call,
                                  struct cuda_product *p, char *msg, size_t len)
{
	const char *who = smallm_kind_name(id);
	const int base = id == OP_MATMUL_ADD ? 1 : 0;

	memset(p, 0, sizeof *p);
	if (id != OP_MATMUL && id != OP_MATMUL_ADD && id != OP_MATMUL_SILU_MUL)
		return cuda_fail(msg, len, "op %d is not a product", (int)id);
	p->x = id == OP_MATMUL_ADD ? &call->in[0] : NULL;
	p->a = &call->in[base];
	p->b = &call->in[base + 1];
	p->out = &call->out[0];
	p->trans_a = call->attr[MATMUL_TRANS_A].i != 0;
	p->trans_b = call->attr[MATMUL_TRANS_B].i != 0;
	if (p->a->rank != 2 || p->b->rank != 2 || p->out->rank != 2)
		return cuda_fail(msg, len, "%s: a, b and out must have rank 2", who);
	p->M = p->out->dim[0];
	p->N = p->out->dim[1];
	p->NB = id == OP_MATMUL_SILU_MUL ? 2 * p->N : p->N;
	p->K = p->trans_a ? p->a->dim[0] : p->a->dim[1];
	int64_t a_m = p->trans_a ? p->a->dim[1] : p->a->dim[0];
	int64_t b_k = p->trans_b ? p->b->dim[1] : p->b->dim[0];
	int64_t b_n = p->trans_b ? p->b->dim[0] : p->b->dim[1];
	if (a_m != p->M || b_k != p->K || b_n != p->NB)
		return cuda_fail(msg, len, "%s: shapes do not agree (M %lld, N %lld, K %lld, op(b) "
		                 "[%lld, %lld])", who, (long long)p->M, (long long)p->N,
		                 (long long)p->K, (long long)b_k, (long long)b_n);
	if (!cuda_is_float_dtype(p->a->dtype) || p->b->dtype != p->a->dtype ||
	    (p->out->dtype != p->a->dtype && p->out->dtype != PLAN_DTYPE_F32))
		return cuda_fail(msg, len, "%s: dtypes %s, %s -> %s not supported (a and b alike, out "
		                 "alike or f32)", who, cuda_dtype_name(p->a->dtype),
		                 cuda_dtype_name(p->b->dtype), cuda_dtype_name(p->out->dtype));
	if (p->x && (!cuda_is_float_dtype(p->x->dtype) || cuda_numel(p->x) != p->M * p->N))
		return cuda_fail(msg, len, "%s: x must be a float [%lld, %lld]", who,
		                 (long long)p->M, (long long)p->N);
	return 0;
}

static int smallm_aligned(const struct op_tensor *t)
{
	return t->data == NULL || (uintptr_t)t->data % 16 == 0;
}

/* The small-M kernels' shared conditions: [N, K] weights, a [M, K]. */
static int smallm_layout_ok(const struct cuda_product *p)
{
	return p->trans_b && !p->trans_a && p->M >= 0 && p->N < INT_MAX && p->K < INT_MAX;
}

int cuda_product_usable(enum op_id id, const struct op_call *call, int impl)
{
	struct cuda_product p;

	if (cuda_product_shape(id, call, &p, NULL, 0))
		return 0;
	switch (impl) {
	case CUDA_IMPL_MMA:
		return smallm_layout_ok(&p) && p.M <= SM_MMA_MAX_M && p.K % 8 == 0 &&
		       (p.a->dtype == PLAN_DTYPE_F16 || p.a->dtype == PLAN_DTYPE_BF16) &&
		       smallm_aligned(p.a) && smallm_aligned(p.b);
	case CUDA_IMPL_GEMV:
		return smallm_layout_ok(&p) && p.M <= SM_GEMV_MAX_M;
	case CUDA_IMPL_CUBLAS:
		return cuda_product_cublas_usable(id, call);
	}
	return 0;
}

/* One launch, planned. */
struct smallm_plan {
	int     mt;             /* tokens a block holds: NT * 8, or MAXM */
	int     slots;          /* b rows a block reads */
	bool    vec;            /* gemv: 16-byte units */
	int64_t nblocks, units, per;
	int     ksplit;
};

static int64_t smallm_ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static int smallm_gemv_maxm(int64_t M)
{
	return M <= 1 ? 1 : M <= 2 ? 2 : M <= 4 ? 4 : 8;
}

/* Plan IMPL (mma or gemv) of P for M tokens on SM_COUNT multiprocessors
 * (<= 0: the most the scratch bound assumes). The split grows with the
 * device's size and never past what that bound assumes. */
static void smallm_plan_for(int impl, enum op_id id, const struct cuda_product *p, int64_t M,
                            bool vec, int sm_count, struct smallm_plan *pl)
{
	const bool silu = id == OP_MATMUL_SILU_MUL;
	int G, min_units;

	memset(pl, 0, sizeof *pl);
	if (impl == CUDA_IMPL_MMA) {
		G = 16;
		pl->mt = (int)smallm_ceil_div(M < 1 ? 1 : M, 8) * 8;
		pl->units = smallm_ceil_div(p->K, 32);
		min_units = SM_MMA_MIN_SPLIT;
	} else {
		G = silu ? 2 : 4;
		pl->vec = vec;
		pl->mt = vec ? smallm_gemv_maxm(M) : SM_GEMV_MAX_M;
		pl->units = vec ? p->K / (16 / (int64_t)cuda_dtype_size(p->a->dtype)) : p->K;
		min_units = 2 * SM_THREADS;
	}
	pl->slots = silu ? 2 * G : G;
	pl->nblocks = smallm_ceil_div(p->N, G);

	int64_t sms = sm_count > 0 && sm_count < SM_SM_CAP ? sm_count : SM_SM_CAP;
	int64_t target = 2 * sms, ks = 1;
	if (pl->nblocks < target) {
		ks = smallm_ceil_div(target, pl->nblocks);
		if (ks > pl->units / min_units)
			ks = pl->units / min_units;
		if (ks > SM_MAX_SPLITS)
			ks = SM_MAX_SPLITS;
		if (ks < 1)
			ks = 1;
	}
	pl->per = smallm_ceil_div(pl->units, ks);
	pl->ksplit = pl->per > 0 ? (int)smallm_ceil_div(pl->units, pl->per) : 1;
	if (pl->per == 0)
		pl->per = 1;
}

static size_t smallm_plan_scratch(const struct smallm_plan *pl)
{
	if (pl->ksplit <= 1)
		return 0;
	return (size_t)pl->ksplit * (size_t)pl->nblocks * (size_t)pl->slots * (size_t)pl->mt *
	       sizeof(float);
}

/* The most scratch any M the kernels take can need, so that the bound does
 * not shrink as the engine's token count grows past a kernel's limit. */
size_t cuda_product_scratch_bytes(enum op_id id, const struct op_call *call)
{
	struct cuda_product p;
	struct smallm_plan pl;
	size_t most = 0, b;

	if (cuda_product_shape(id, call, &p, NULL, 0))
		return 0;
	if (smallm_layout_ok(&p) && p.K % 8 == 0 &&
	    (p.a->dtype == PLAN_DTYPE_F16 || p.a->dtype == PLAN_DTYPE_BF16)) {
		smallm_plan_for(CUDA_IMPL_MMA, id, &p, SM_MMA_MAX_M, false, 0, &pl);
		most = smallm_plan_scratch(&pl);
	}
	if (smallm_layout_ok(&p)) {
		for (int v = 0; v < 2; v++) {
			smallm_plan_for(CUDA_IMPL_GEMV, id, &p, SM_GEMV_MAX_M, v != 0, 0, &pl);
			b = smallm_plan_scratch(&pl);
			most = b > most ? b : most;
		}
	}
	most = cuda_scratch_with_counters(most);
	b = cuda_product_cublas_scratch(id, call);
	return b > most ? b : most;
}

template <int EPI, typename T, int NT>
static int smallm_launch_mma_nt(const struct cuda_op_ctx *ctx, const smallm_args &args,
                                dim3 grid, char *msg, size_t len)
{
	return cuda_launch(ctx, "bcg_smallm_mma_kernel", bcg_smallm_mma_kernel<T, NT, EPI>, grid,
	                   dim3(SM_THREADS), msg, len, args);
}

template <int EPI, typename T>
static int smallm_launch_mma(const struct cuda_op_ctx *ctx, const smallm_args &args,
                             int nt, dim3 grid, char *msg, size_t len)
{
	switch (nt) {
	case 1:
		return smallm_launch_mma_nt<EPI, T, 1>(ctx, args, grid, msg, len);
	case 2:
		return smallm_launch_mma_nt<EPI, T, 2>(ctx, args, grid, msg, len);
	case 3:
		return smallm_launch_mma_nt<EPI, T, 3>(ctx, args, grid, msg, len);
	default:
		return smallm_launch_mma_nt<EPI, T, 4>(ctx, args, grid, msg, len);
	}
}

template <int EPI, typename T>
static int smallm_launch_gemv(const struct cuda_op_ctx *ctx, const smallm_args &args,
                              const struct smallm_plan *pl, dim3 grid, char *msg, size_t len)
{
	const char *name = "bcg_smallm_gemv_kernel";

	if (!pl->vec)
		return cuda_launch(ctx, name, bcg_smallm_gemv_kernel<T, SM_GEMV_MAX_M, false, EPI>,
		                   grid, dim3(SM_THREADS), msg, len, args);
	switch (pl->mt) {
	case 1:
		return cuda_launch(ctx, name, bcg_smallm_gemv_kernel<T, 1, true, EPI>, grid,
		                   dim3(SM_THREADS), msg, len, args);
	case 2:
		return cuda_launch(ctx, name, bcg_smallm_gemv_kernel<T, 2, true, EPI>, grid,
		                   dim3(SM_THREADS), msg, len, args);
	case 4:
		return cuda_launch(ctx, name, bcg_smallm_gemv_kernel<T, 4, true, EPI>, grid,
		                   dim3(SM_THREADS), msg, len, args);
	default:
		return cuda_launch(ctx, name, bcg_smallm_gemv_kernel<T, 8, true, EPI>, grid,
		                   dim3(SM_THREADS), msg, len, args);
	}
}

template <int EPI>
static int smallm_launch(const struct cuda_op_ctx *ctx, int impl, int dtype,
                         const smallm_args &args, const struct smallm_plan *pl, char *msg,
                         size_t len)
{
	dim3 grid((unsigned)pl->nblocks, (unsigned)pl->ksplit);

	if (impl == CUDA_IMPL_MMA) {
		if (dtype == PLAN_DTYPE_F16)
			return smallm_launch_mma<EPI, __half>(ctx, args, pl->mt / 8, grid, msg, len);
		return smallm_launch_mma<EPI, __nv_bfloat16>(ctx, args, pl->mt / 8, grid, msg, len);
	}
	switch (dtype) {
	case PLAN_DTYPE_F16:
		return smallm_launch_gemv<EPI, __half>(ctx, args, pl, grid, msg, len);
	case PLAN_DTYPE_BF16:
		return smallm_launch_gemv<EPI, __nv_bfloat16>(ctx, args, pl, grid, msg, len);
	default:
		return smallm_launch_gemv<EPI, float>(ctx, args, pl, grid, msg, len);
	}
}

static const char *const smallm_impl_names[] = { "mma", "gemv", "cublas" };

static int cuda_run_product(enum op_id id, const struct op_call *call,
                            const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	const char *who = smallm_kind_name(id);
	const int impl = call->impl;
	struct cuda_product p;
	struct smallm_plan pl;
	smallm_args args;

	if (cuda_product_shape(id, call, &p, msg, len))
		return -1;
	if (impl < 0 || impl > CUDA_IMPL_CUBLAS)
		return cuda_fail(msg, len, "%s: no implementation %d on CUDA", who, impl);
	if (!cuda_product_usable(id, call, impl))
		return cuda_fail(msg, len, "%s: implementation %s cannot run M %lld, N %lld, K %lld "
		                 "%s (trans_a %d, trans_b %d)", who, smallm_impl_names[impl],
		                 (long long)p.M, (long long)p.N, (long long)p.K,
		                 cuda_dtype_name(p.a->dtype), p.trans_a, p.trans_b);
	if (impl == CUDA_IMPL_CUBLAS)
		return cuda_product_cublas(id, call, ctx, msg, len);
	if (p.M <= 0 || p.N <= 0)
		return 0;

	const int64_t V = 16 / (int64_t)cuda_dtype_size(p.a->dtype);
	const bool vec = p.K % V == 0 && (uintptr_t)p.a->data % 16 == 0 &&
	                 (uintptr_t)p.b->data % 16 == 0;
	smallm_plan_for(impl, id, &p, p.M, vec, ctx->sm_count, &pl);

	memset(&args, 0, sizeof args);
	args.a = p.a->data;
	args.b = p.b->data;
	args.x = p.x ? p.x->data : NULL;
	args.dtx = p.x ? p.x->dtype : PLAN_DTYPE_F32;
	args.out = p.out->data;
	args.dto = p.out->dtype;
	args.M = (int)p.M;
	args.N = p.N;
	args.K = p.K;
	args.nblocks = pl.nblocks;
	args.units = pl.units;
	args.per = pl.per;
	args.ksplit = pl.ksplit;
	if (pl.ksplit > 1) {
		size_t need = cuda_scratch_with_counters(smallm_plan_scratch(&pl));
		if (!ctx->scratch || ctx->scratch_bytes < need)
			return cuda_fail(msg, len, "%s: needs %zu bytes of scratch, the context has %zu",
			                 who, need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
		if ((uintptr_t)ctx->scratch % 16 != 0)
			return cuda_fail(msg, len, "%s: scratch is not 16-byte aligned", who);
		if (pl.nblocks > CUDA_SCRATCH_COUNTERS)
			return cuda_fail(msg, len, "%s: %lld column groups split along K exceed the %lld "
			                 "scratch counters", who, (long long)pl.nblocks,
			                 (long long)CUDA_SCRATCH_COUNTERS);
		args.counters = cuda_scratch_counters(ctx);
		args.part = static_cast<float *>(cuda_scratch_data(ctx));
	}
	if (pl.nblocks > INT_MAX)
		return cuda_fail(msg, len, "%s: N %lld is too large for one grid", who,
		                 (long long)p.N);

	switch (id) {
	case OP_MATMUL_ADD:
		return smallm_launch<EPI_ADD>(ctx, impl, p.a->dtype, args, &pl, msg, len);
	case OP_MATMUL_SILU_MUL:
		return smallm_launch<EPI_SILU>(ctx, impl, p.a->dtype, args, &pl, msg, len);
	default:
		return smallm_launch<EPI_NONE>(ctx, impl, p.a->dtype, args, &pl, msg, len);
	}
}

extern "C" int cuda_run_matmul(const struct op_call *call, const struct cuda_op_ctx *ctx,
                               char *msg, size_t len)
{
	return cuda_run_product(OP_MATMUL, call, ctx, msg, len);
}

extern "C" int cuda_run_matmul_add(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                   char *msg, size_t len)
{
	return cuda_run_product(OP_MATMUL_ADD, call, ctx, msg, len);
}

extern "C" int cuda_run_matmul_silu_mul(const struct op_call *call,
                                        const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	return cuda_run_product(OP_MATMUL_SILU_MUL, call, ctx, msg, len);
}
