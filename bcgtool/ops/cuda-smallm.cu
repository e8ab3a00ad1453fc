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
 *    K and the operands allow, else element by element. Its block shape
 *    (weight rows a block, units a thread loads a round) is 4 rows and 2
 *    units unless BCG_GEMV_SHAPE names another (kernel-shape.h), or auto
 *    (smallm_shape_auto); rmsnorm_matmul's forms keep 4 rows. At one
 *    token of f16 or bf16 with 16-byte loads it runs the rows kernel
 *    instead (bcg_smallm_rows_kernel: whole rows a block, every weight
 *    byte loaded before the PDL wait), in every form, whatever the shape
 *    names; and for matmul_add and rmsnorm_matmul, where b is a weight
 *    and a stage holds its rows, the bulk kernel (bcg_smallm_bulk_kernel:
 *    two blocks a multiprocessor, the rows brought into shared memory by
 *    the copy engine).
 *  - "rows": matmul_add of one token of f16 or bf16 on a weight only: the
 *    rows kernel where gemv takes the bulk kernel, K split across blocks
 *    in pieces of at most SM_ROWS_SPLIT_UNITS (2048 elements), the
 *    parts merged by a second kernel. A choice for the tuner:
 *    on an H200 --tune-step takes it for the o projection (the 1B's and
 *    llama-decode-fuse's steps 0.8 and 0.9% faster than on gemv) and
 *    keeps the bulk kernel for the 1B's down: faster alone on rows
 *    (14.40 us against 15.10), but the step 0.9% slower, its early loads
 *    taken from the gate|up kernel before it.
 *  - "mma_packed": mma's kernel on a packed copy of the weight
 *    (cuda-pack.cu), made by cuda_op_prepare before the first launch,
 *    with 8 warps a block (SM_MMA_PACKED_WARPS): mma's conditions, and b
 *    must be a weight (op_call.const_in).
 *  - "cublas" and "cublas_class": cuda-matmul.cu, every shape; the second
 *    on the cuBLAS algorithm of the token count's class, so that capture
 *    sizes of one class share executables (--share-exec).
 *
 * The looping, mma and rows kernels read each weight row with 16-byte
 * loads straight from global memory: the weights are read once, and the
 * tokens' rows (a few KiB) stay in L1 and L2 for every block. The bulk
 * kernel stages them in shared memory for another reason: the copy
 * engine keeps 96 KiB a block in flight from before the PDL wait on,
 * which registers cannot. A block of SM_WARPS warps owns a
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
 * rmsnorm_matmul_rope_kv_write's "gemv" is the gemv body with
 * rmsnorm_matmul's norm prologue and a rope epilogue
 * (bcg_smallm_gemv_rope_kernel): in the q and k columns a block's four
 * slots are the two members of two rope pairs of one head (smallm_col),
 * so the block that finishes a group rotates them as
 * bcg_rope_kv_write_kernel does (cuda-rope.h's frequencies and angle),
 * stores q and writes k and v into the caches at row pos[m]; the product
 * itself is never stored.
 *
 * PDL: before cuda_pdl_begin() a block of the looping kernels only asks
 * L2 for the first bytes of its weight rows; a block of the rows kernel
 * loads all of them when they are weights (op_call.const_in); a block of
 * the bulk kernel starts the copies of its first stages. All wait before
 * reading the tokens. Most trigger their successor right after the wait;
 * the rows kernel's gate|up and q|k|v, and the bulk kernel's down
 * (smallm_trigger_first), trigger it before.
 */
#include "config.h"

#include <limits.h>

#include <type_traits>

#include "cuda-internal.h"
#include "cuda-rope.h"

#define SM_WARPS        4
#define SM_THREADS      (SM_WARPS * 32)
#define SM_MAX_SPLITS   32
#define SM_SM_CAP       256     /* multiprocessors assumed at most (scratch bound) */
#define SM_PREFETCH     256     /* 128-byte lines a block prefetches at most */
#define SM_MMA_MAX_M    32
/* mma_packed's warps a block: twice mma's. On the packed layout a warp's
 * load is one 512-byte run, and more warps keep more of them in flight
 * without splitting K further: bench/prepack-mma.cu on the 1B step's
 * products ran 5, 9 and 11% faster at 8, 16 and 32 tokens with 8 warps
 * than with 4 (bench/RESULTS.md, fourteenth session). mma keeps 4: its
 * plans' kernels stay what they were. */
#define SM_MMA_PACKED_WARPS 8
#define SM_GEMV_MAX_M   8
/* rmsnorm_matmul's gemv: the normalized tokens a block holds, in 16-byte
 * vectors, for MT tokens: 16 KiB up to two tokens (K <= 8192 bf16 at
 * one), 32 KiB beyond, so that one token keeps the plain gemv's blocks
 * per multiprocessor (registers bound them first). */
#define RNM_XS_VECS(mt) ((mt) <= 2 ? 1024 : 2048)
/* Units of 32 k an mma split gets at least. On an H100 in a graph, a
 * split's merge costs about what 768 k of one block's streaming saves:
 * 1024 x 1024 runs best whole, 1024 x 2816 in three. */
#define SM_MMA_MIN_SPLIT 24

enum { EPI_NONE = 0, EPI_ADD = 1, EPI_SILU = 2, EPI_ROPE = 3 };

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
	const void *w;              /* rmsnorm_matmul: the norm's weights [K] */
	float       eps;            /* and its eps */
	int64_t     rope_qk;        /* EPI_ROPE: the q and k columns, (H + KVH) D */
	int64_t     rope_d;         /* and head_dim (a multiple of 4) */
	bool        b_const;        /* b is a weight (op_call.const_in): the rows
	                               kernel loads it before the PDL wait */
	bool        w_const;        /* and w, the norm's weights, likewise */
	bool        trigger_first;  /* bulk: trigger the successor before the
	                               PDL wait (smallm_trigger_first) */
	int         rps;            /* bulk: output rows a stage */
	/* AMAX (rmsnorm_matmul_argmax, the bulk and the gemv kernel): the
	 * best key so far and the blocks' count (smallm_amax_finish), the
	 * index out. */
	unsigned long long *amax_key;
	unsigned   *amax_counter;
	int32_t    *amax_out;
};

/* What EPI_ROPE's epilogue writes (rmsnorm_matmul_rope_kv_write): q [M, H
 * D], the caches [S, KVH D] at rows pos[m], rotated by FREQS as
 * bcg_rope_kv_write_kernel rotates. Other epilogues take smallm_none. */
struct smallm_rope {
	const int32_t    *pos;
	void             *q, *kc, *vc;
	int               dtq, dtk, dtv;
	int               H, KVH;
	int64_t           S;
	struct rope_freqs freqs;
};
struct smallm_none {};

/* The output column of slot S (S < G) of the block whose first column is
 * C0. Columns follow the slots, except with EPI_ROPE in the q and k parts:
 * there block c0 (4 columns, within one head as D % 4 == 0) owns the rope
 * pairs i0, i0 + 1 of its head, i0 = (c0 - head start) / 2, slots 0, 1
 * their first members and 2, 3 their second (+ D / 2); the blocks of a
 * head cover its pairs once. */
template <int EPI>
__device__ __forceinline__ int64_t smallm_col(int s, int G, int64_t c0, const smallm_args &p)
{
	if constexpr (EPI == EPI_ROPE) {
		if (c0 < p.rope_qk) {
			const int64_t hs = c0 - c0 % p.rope_d;
			return hs + (c0 - hs) / 2 + (s & 1) + (s >> 1) * (p.rope_d / 2);
		}
	}
	return c0 + s;
}

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

/* smallm_row with EPI's columns (smallm_col). */
template <int EPI>
__device__ __forceinline__ int64_t smallm_row_of(int s, int G, int64_t c0, const smallm_args &p)
{
	if constexpr (EPI == EPI_ROPE) {
		int64_t col = smallm_col<EPI>(s, G, c0, p);
		return col > p.N - 1 ? p.N - 1 : col;
	} else {
		return smallm_row(s, G, c0, p.N);
	}
}

/* EPI_ROPE's epilogue on SACC [4][MT] (smallm_col's slots): each pair
 * rounded to the product's dtype as storing qkv rounds it, rotated in f32
 * as bcg_rope_kv_write_kernel rotates (rope_angle, the products rounded
 * before the sums), q stored, k written at cache row pos[m] when that row
 * is in [0, S); v blocks write their 4 columns to v_cache's row. */
template <int MT>
__device__ void smallm_rope_epilogue(const float *sacc, const smallm_args &p, int64_t c0,
                                     const smallm_rope &r)
{
	const int64_t D = p.rope_d, half = D / 2, kvw = (int64_t)r.KVH * D;

	if (c0 < p.rope_qk) {
		const int64_t h = c0 / D, i0 = (c0 - h * D) / 2;
		for (int e = threadIdx.x; e < 2 * MT; e += blockDim.x) {
			const int pi = e / MT, m = e % MT;
			if (m >= p.M)
				continue;
			const int32_t pt = r.pos[m];
			const int64_t i = i0 + pi;
			const bool is_k = h >= r.H;
			if (is_k && !((int64_t)pt >= 0 && (int64_t)pt < r.S))
				continue;
			float c, s;
			rope_angle(r.freqs, pt, (int)i, &c, &s);
			const float x1 = cuda_round_to(p.dto, sacc[pi * MT + m]);
			const float x2 = cuda_round_to(p.dto, sacc[(pi + 2) * MT + m]);
			const float y1 = __fmul_rn(x1, c) - __fmul_rn(x2, s);
			const float y2 = __fmul_rn(x2, c) + __fmul_rn(x1, s);
			if (is_k) {
				const int64_t o = (int64_t)pt * kvw + (h - r.H) * D + i;
				cuda_st(r.kc, r.dtk, o, y1);
				cuda_st(r.kc, r.dtk, o + half, y2);
			} else {
				const int64_t o = (int64_t)m * r.H * D + h * D + i;
				cuda_st(r.q, r.dtq, o, y1);
				cuda_st(r.q, r.dtq, o + half, y2);
			}
		}
		return;
	}
	for (int e = threadIdx.x; e < 4 * MT; e += blockDim.x) {
		const int s = e / MT, m = e % MT;
		const int64_t j = c0 + s;
		if (m >= p.M || j >= p.N)
			continue;
		const int32_t pt = r.pos[m];
		if (!((int64_t)pt >= 0 && (int64_t)pt < r.S))
			continue;
		cuda_st(r.vc, r.dtv, (int64_t)pt * kvw + (j - p.rope_qk),
		        cuda_round_to(p.dto, sacc[s * MT + m]));
	}
}

/* Out element O from the complete f32 sum V (and, for EPI_SILU, the up
 * half's sum U): the epilogues of the top of this file. */
template <int EPI>
__device__ __forceinline__ void smallm_store(const smallm_args &p, int64_t o, float v, float u)
{
	if constexpr (EPI == EPI_NONE) {
		cuda_st(p.out, p.dto, o, v);
	} else if constexpr (EPI == EPI_ADD) {
		cuda_st(p.out, p.dto, o, cuda_ld(p.x, p.dtx, o) + cuda_round_to(p.dto, v));
	} else {
		float g = cuda_round_to(p.dto, v);
		float silu = g / (1.0f + expf(-g));
		cuda_st(p.out, p.dto, o, silu * cuda_round_to(p.dto, u));
	}
}

/* The rest of column group BX's work once SACC ([slots][MT] in shared
 * memory) holds its sums over the block's K range, behind a barrier: the split-K
 * combination when there is one, then the epilogue and the trigger. */
template <int EPI, int G, int MT, typename R = smallm_none>
__device__ void smallm_finish(float *sacc, const smallm_args &p, int64_t bx, int *flag,
                              const R &r = R())
{
	constexpr int S = EPI == EPI_SILU ? 2 * G : G;
	constexpr int E = S * MT;
	const int64_t c0 = bx * G;

	if (p.ksplit > 1) {
		float *mine = p.part + ((int64_t)blockIdx.y * p.nblocks + bx) * E;
		for (int e = threadIdx.x; e < E; e += blockDim.x)
			mine[e] = sacc[e];
		/* no counters: bcg_smallm_merge_kernel merges after the grid */
		if (p.counters == NULL ||
		    !cuda_last_block(&p.counters[bx], (unsigned)p.ksplit, flag))
			return;
		for (int e = threadIdx.x; e < E; e += blockDim.x) {
			float s = 0.0f;
			for (int k = 0; k < p.ksplit; k++)
				s += __ldcg(p.part + ((int64_t)k * p.nblocks + bx) * E + e);
			sacc[e] = s;
		}
		__syncthreads();
	}
	if constexpr (EPI == EPI_ROPE) {
		smallm_rope_epilogue<MT>(sacc, p, c0, r);
	} else {
		for (int e = threadIdx.x; e < G * MT; e += blockDim.x) {
			const int s = e / MT, m = e % MT;
			const int64_t j = c0 + s;
			if (m >= p.M || j >= p.N)
				continue;
			smallm_store<EPI>(p, (int64_t)m * p.N + j, sacc[s * MT + m],
			                  EPI == EPI_SILU ? sacc[(s + G) * MT + m] : 0.0f);
		}
	}
}

/* Once each of the block's W warps has stored its E sums in RED[warp],
 * add them in warp order into RED[0] (a fixed order: the result is the
 * same every run). */
template <int E, int W = SM_WARPS>
__device__ __forceinline__ void smallm_merge_warps(float (*red)[E])
{
	__syncthreads();
	for (int e = threadIdx.x; e < E; e += blockDim.x) {
		float v = 0.0f;
#pragma unroll
		for (int w = 0; w < W; w++)
			v += red[w][e];
		red[0][e] = v;
	}
	__syncthreads();
}

/* Ask L2 for the block's weight bytes [k0, k1) of its SLOTS rows, at most
 * SM_PREFETCH lines: the only global access allowed before the wait. */
template <int EPI = EPI_NONE>
__device__ __forceinline__ void smallm_prefetch(const char *b, int64_t row_bytes, int slots,
                                                int G, int64_t c0, const smallm_args &p,
                                                int64_t k0_bytes, int64_t k1_bytes)
{
	const int64_t lines = (k1_bytes - k0_bytes + 127) / 128;

	for (int64_t i = threadIdx.x; i < (int64_t)slots * lines && i < SM_PREFETCH;
	     i += blockDim.x) {
		int s = (int)(i / lines);
		int64_t l = i - (int64_t)s * lines;
		cuda_prefetch_l2(b + smallm_row_of<EPI>(s, G, c0, p) * row_bytes + k0_bytes +
		                 l * 128);
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

/* Units of 32 k. Grid (nblocks, ksplit); each block of W warps owns 16
 * output columns (RT = 2 row tiles for silu_mul: gate and up) and the
 * units [u0, u1); warp w takes units u0 + w, u0 + w + W, ..., U of them at
 * a time with every load of the U issued before the first mma. PACKED
 * ("mma_packed"): p.b is the weight's packed copy (cuda-pack.cu), where a
 * lane's 16 bytes of a tile and unit are the ones it loads here from
 * [N, K] rows; the tile of rows c0 of half rt starts at element
 * (rt T + blockIdx.x) units 512, T = ceil(N / 16), and its units follow
 * 512 elements apart; and W is SM_MMA_PACKED_WARPS, not SM_WARPS. */
template <typename T, int NT, int EPI, bool PACKED>
__global__ void __launch_bounds__((PACKED ? SM_MMA_PACKED_WARPS : SM_WARPS) * 32)
bcg_smallm_mma_kernel(smallm_args p)
{
	constexpr int W = PACKED ? SM_MMA_PACKED_WARPS : SM_WARPS;
	constexpr int G = 16;
	constexpr int RT = EPI == EPI_SILU ? 2 : 1;
	constexpr int S = RT * 16;
	constexpr int MT = NT * 8;
	constexpr int U = NT <= 2 ? 4 : 2;
	__shared__ float red[W][S * MT];
	__shared__ int flag;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane >> 2, q = lane & 3;
	const int64_t c0 = (int64_t)blockIdx.x * G;
	const int64_t u0 = (int64_t)blockIdx.y * p.per;
	const int64_t u1 = u0 + p.per < p.units ? u0 + p.per : p.units;
	const T *b = static_cast<const T *>(p.b), *a = static_cast<const T *>(p.a);

	const int64_t tiles = (p.N + 15) / 16;
	const int64_t step = PACKED ? 512 : 32;         /* elements from a unit to the next */
	const T *wrow[RT][2];
#pragma unroll
	for (int rt = 0; rt < RT; rt++)
#pragma unroll
		for (int h = 0; h < 2; h++)
			wrow[rt][h] = PACKED ? b + ((rt * tiles + blockIdx.x) * p.units * 2 + h) * 256 +
			                               lane * 8
			                     : b + smallm_row(rt * 16 + h * 8 + g, G, c0, p.N) * p.K + q * 8;
	const T *xrow[NT];
#pragma unroll
	for (int nt = 0; nt < NT; nt++) {
		int m = nt * 8 + g < p.M ? nt * 8 + g : p.M - 1;   /* past M: never stored */
		xrow[nt] = a + (int64_t)m * p.K + q * 8;
	}

	if constexpr (PACKED) {
		/* Each half's tile: the units [u0, u1) in one run of 1 KiB each. */
		const int64_t lines = (u1 - u0) * 8;
		for (int64_t i = threadIdx.x; i < RT * lines && i < SM_PREFETCH; i += blockDim.x) {
			const int64_t rt = i / lines;
			cuda_prefetch_l2(b + ((rt * tiles + blockIdx.x) * p.units + u0) * 512 +
			                 (i - rt * lines) * 64);
		}
	} else {
		smallm_prefetch(static_cast<const char *>(p.b), p.K * (int64_t)sizeof(T), S, G, c0,
		                p, u0 * 32 * (int64_t)sizeof(T),
		                (u1 * 32 < p.K ? u1 * 32 : p.K) * (int64_t)sizeof(T));
	}
	cuda_pdl_begin();

	float acc[RT][NT][4] = {};

	const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
	for (int64_t u = u0 + warp; u < u1; u += (int64_t)W * U) {
		uint4 wv[U][RT][2], xv[U][NT];
#pragma unroll
		for (int i = 0; i < U; i++) {
			const int64_t ui = u + (int64_t)i * W;
			const int64_t k = ui * 32;          /* + q * 8, in the row pointers */
			const bool in = ui < u1 && k + q * 8 < p.K;
#pragma unroll
			for (int rt = 0; rt < RT; rt++)
#pragma unroll
				for (int h = 0; h < 2; h++)
					wv[i][rt][h] = in ? cuda_ld_stream(wrow[rt][h] + ui * step) : zero;
		}
#pragma unroll
		for (int i = 0; i < U; i++) {
			const int64_t ui = u + (int64_t)i * W;
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
	smallm_merge_warps<S * MT, W>(red);
	smallm_finish<EPI, G, MT>(red[0], p, blockIdx.x, &flag);
}

/* --- rmsnorm_matmul_argmax's pick ---------------------------------------------- */

/* The end of a kernel whose warp 0 holds the block's candidates for the
 * largest column (BV, BI: each lane its best so far, by argmax's rule;
 * the other warps' are not read). Lane 0 takes the block's pick into
 * *p.amax_key by atomicMax of its key (bcg_argmax_key, numeric.h), makes it
 * visible and counts the block on *p.amax_counter; the last block to
 * count reads the key, stores its column and returns key and counter to
 * zero for the next launch (both live in the scratch counters). The key
 * is a total order, so neither the order of the blocks nor which one
 * comes last changes the winner, and a grid of any size picks in one
 * read: a first form kept each block's pick in the scratch and had the
 * last block read them all, which bounded the grid to what the scratch
 * held (the resident grid), and made the last block's reads the kernel's
 * tail. Every thread of the block must call it. */
__device__ __forceinline__ void smallm_amax_finish(const smallm_args &p, float bv, int64_t bi)
{
	if (threadIdx.x >= 32)
		return;
	for (int off = 16; off > 0; off >>= 1) {
		const float ov = __shfl_xor_sync(0xffffffffu, bv, off);
		const int64_t oi = __shfl_xor_sync(0xffffffffu, bi, off);
		if (cuda_argmax_better(ov, oi, bv, bi)) {
			bv = ov;
			bi = oi;
		}
	}
	if (threadIdx.x != 0)
		return;
	atomicMax(p.amax_key, (unsigned long long)bcg_argmax_key(bv, bi));
	__threadfence();
	if (atomicAdd(p.amax_counter, 1u) != gridDim.x * gridDim.y - 1)
		return;
	__threadfence();                        /* every block's key before the read */
	const unsigned long long k = atomicExch(p.amax_key, 0ull);
	*p.amax_counter = 0u;                   /* every block has counted */
	p.amax_out[0] = bcg_argmax_key_column(k);
}

/* --- gemv ------------------------------------------------------------------ */

/* The weight pieces of one round of the column group whose first column
 * is C0 into W: thread t's units u0 + t + i * SM_THREADS of each of the
 * group's S rows (zero past U1). */
template <typename T, int EPI, int S, int UN>
__device__ __forceinline__ void smallm_load_group(uint4 (&w)[UN][S], const T *b, int64_t c0,
                                                  int G, int64_t u0, int64_t u1,
                                                  const smallm_args &p)
{
	constexpr int V = 16 / (int)sizeof(T);
	const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
	for (int s = 0; s < S; s++) {
		const T *row = b + smallm_row_of<EPI>(s, G, c0, p) * p.K;
#pragma unroll
		for (int i = 0; i < UN; i++) {
			const int64_t ui = u0 + threadIdx.x + (int64_t)i * SM_THREADS;
			w[i][s] = ui < u1 ? cuda_ld_stream(row + ui * V) : zero;
		}
	}
}

/* Units: 16-byte vectors (VEC) or elements. Grid (nblocks, ksplit); each
 * block reads ROWS weight rows: ROWS output columns, or ROWS / 2 of gate
 * and as many of up for silu_mul (the default shape: 4 rows); thread t
 * takes units u0 + t, u0 + t + SM_THREADS, ..., UN at a time (the default:
 * 2, 1 at 8 tokens), for all its rows and up to MAXM tokens. Sums meet by
 * warp butterflies, then across warps in shared memory. A column's sum
 * does not depend on ROWS or UN: each thread adds its units in unit
 * order, and the butterflies and the warps' merge are the same
 * (kernel-shape.h: BCG_GEMV_SHAPE picks them).
 *
 * NORM (rmsnorm_matmul, VEC only): a is x, and the token operand is
 * rmsnorm(x, w) rounded to T, formed once per block in shared memory
 * before the product's loop. After the wait every block sums the squares
 * of each of its token rows over all of K (16-byte loads, thread t taking
 * vectors t, t + SM_THREADS, ..., then the warp butterflies and the warps
 * in order: the same order in every block, so all blocks and all K splits
 * use the same rms), keeping its own K range's vectors in xs as it reads
 * them; then each element there becomes x / rms * w as bcg_rmsnorm_kernel
 * computes it, rounded to T as that kernel's store rounds it. The loop
 * then reads the tokens from xs, so its registers are the plain gemv's:
 * forming the tokens inside the loop (the first form) took 93 registers
 * a thread for bf16 at one token, against the plain kernel's 48, and ran
 * the 1B q|k|v product in 17.1 us against 11.7 us for the rmsnorm kernel
 * and the product apart (H100). xs holds at most RNM_XS_VECS(MT) vectors:
 * (u1 - u0) * MT <= units * MT, which cuda_rmsnorm_matmul_usable bounds. */
template <typename T, int MAXM, bool VEC, int EPI, bool NORM, int ROWS, int UN, typename R,
          bool AMAX = false, bool PIPE = false>
__device__ __forceinline__ void smallm_gemv_body(const smallm_args &p, const R &r)
{
	static_assert(!AMAX || (VEC && EPI == EPI_NONE && MAXM == 1 && ROWS <= 32),
	              "the pick: one token's product, its columns within warp 0");
	static_assert(!PIPE || NORM, "the next group's loads: the resident grid's loop");
	static_assert(!NORM || VEC, "the norm prologue reads 16-byte vectors");
	static_assert(EPI != EPI_ROPE || (NORM && std::is_same<R, smallm_rope>::value),
	              "the rope epilogue is rmsnorm_matmul_rope_kv_write's");
	static_assert(ROWS == 4 || (!NORM && EPI != EPI_ROPE),
	              "the norm and rope forms keep the default shape");
	static_assert(ROWS % 2 == 0 && UN >= 1, "a shape of whole gate|up pairs");
	constexpr int G = EPI == EPI_SILU ? ROWS / 2 : ROWS;
	constexpr int S = ROWS;
	constexpr int MT = MAXM;
	constexpr int V = VEC ? 16 / (int)sizeof(T) : 1;
	__shared__ float red[SM_WARPS][S * MT];
	__shared__ int flag;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int64_t u0 = (int64_t)blockIdx.y * p.per;
	const int64_t u1 = u0 + p.per < p.units ? u0 + p.per : p.units;
	const T *b = static_cast<const T *>(p.b), *a = static_cast<const T *>(p.a);

	const T *xrow[MT];
#pragma unroll
	for (int m = 0; m < MT; m++)
		xrow[m] = a + (int64_t)(m < p.M ? m : p.M - 1) * p.K;

	smallm_prefetch<EPI>(static_cast<const char *>(p.b), p.K * (int64_t)sizeof(T), S, G,
	                     (int64_t)blockIdx.x * G, p, u0 * V * (int64_t)sizeof(T),
	                     u1 * V * (int64_t)sizeof(T));
	cuda_pdl_begin();

	/* PIPE: the block's whole K range is one round (u1 - u0 <= SM_THREADS
	 * * UN, as the launch checks), and group bx + gridDim.x's weights are
	 * loaded into NEXT before group bx's sums, so that the block's loads
	 * stay in flight through its sums, stores and barriers (the first
	 * group's after the wait, before the prologue's reads of x). The
	 * resident grid of a 525 MB lm-head streamed it 1.5% faster so
	 * (bench/lm-head.cu, persist4db against persist4), and the 1B's step
	 * took 0.9973 of its time (H200, bench/RESULTS.md, thirtieth
	 * session). */
	uint4 next[PIPE ? UN : 1][S];
	(void)next;
	if constexpr (PIPE) {
		if (blockIdx.x < p.nblocks)
			smallm_load_group<T, EPI, S, UN>(next, b, blockIdx.x * G, G, u0, u1, p);
	}

	/* NORM: the block's normalized tokens, [u - u0][m] (one vector
	 * otherwise, unused). */
	__shared__ uint4 xs[NORM ? RNM_XS_VECS(MT) : 1];
	(void)xs;
	if constexpr (NORM) {
		float ss[MT], rms[MT];
#pragma unroll
		for (int m = 0; m < MT; m++)
			ss[m] = 0.0f;
		for (int64_t u = threadIdx.x; u < p.units; u += SM_THREADS) {
			const bool mine = u >= u0 && u < u1;
#pragma unroll
			for (int m = 0; m < MT; m++) {
				const uint4 v = *reinterpret_cast<const uint4 *>(xrow[m] + u * V);
				float f[V];
				cuda_widen16<T>(v, f);
#pragma unroll
				for (int e = 0; e < V; e++)
					ss[m] += f[e] * f[e];
				if (mine)
					xs[(u - u0) * MT + m] = v;
			}
		}
#pragma unroll
		for (int m = 0; m < MT; m++) {
			float v = cuda_warp_sum(ss[m]);
			if (lane == 0)
				red[warp][m] = v;
		}
		__syncthreads();
#pragma unroll
		for (int m = 0; m < MT; m++) {
			float sum = 0.0f;
#pragma unroll
			for (int w = 0; w < SM_WARPS; w++)
				sum += red[w][m];
			rms[m] = sqrtf(sum / (float)p.K + p.eps);
		}
		/* Each thread its own vectors now: t, t + SM_THREADS, ... of the
		 * block's range, stored above by other threads (the barrier
		 * before the rms orders them). */
		const T *nw = static_cast<const T *>(p.w);
		for (int64_t u = u0 + threadIdx.x; u < u1; u += SM_THREADS) {
			float wf[V];
			cuda_widen16<T>(*reinterpret_cast<const uint4 *>(nw + u * V), wf);
#pragma unroll
			for (int m = 0; m < MT; m++) {
				float f[V];
				cuda_widen16<T>(xs[(u - u0) * MT + m], f);
#pragma unroll
				for (int e = 0; e < V; e++)
					f[e] = f[e] / rms[m] * wf[e];
				xs[(u - u0) * MT + m] = cuda_narrow16<T>(f);
			}
		}
		__syncthreads();                 /* xs is whole; red is the sums' again below */
	}

	/* AMAX: this thread's best column so far (threads below G hold one
	 * column of each group), by argmax's rule; the launch keeps K whole */
	float bv = -INFINITY;
	int64_t bi = INT64_MAX;
	(void)bv;
	(void)bi;

	/* Column groups: the block's own, and with NORM every gridDim.x-th
	 * after it (the grid is then what fits on the device at once, so
	 * that the prologue runs once a block, not once a group). */
	for (int64_t bx = blockIdx.x; bx < p.nblocks; bx += NORM ? gridDim.x : p.nblocks) {
		const int64_t c0 = bx * G;
		const T *wrow[S];
#pragma unroll
		for (int s = 0; s < S; s++)
			wrow[s] = b + smallm_row_of<EPI>(s, G, c0, p) * p.K;

		float acc[S][MT] = {};

		if constexpr (PIPE) {
			uint4 wv[UN][S], xv[UN][MT];
			const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
			for (int i = 0; i < UN; i++)
#pragma unroll
				for (int s = 0; s < S; s++)
					wv[i][s] = next[i][s];
			if (bx + gridDim.x < p.nblocks)
				smallm_load_group<T, EPI, S, UN>(next, b, (bx + gridDim.x) * G, G, u0,
				                                 u1, p);
#pragma unroll
			for (int i = 0; i < UN; i++) {
				const int64_t ui = u0 + threadIdx.x + (int64_t)i * SM_THREADS;
#pragma unroll
				for (int m = 0; m < MT; m++)
					xv[i][m] = ui < u1 ? xs[(ui - u0) * MT + m] : zero;
			}
			cuda_dot16_round<T, S, MT, UN>(wv, xv, acc);
		}
		for (int64_t u = u0 + threadIdx.x; !PIPE && u < u1; u += (int64_t)SM_THREADS * UN) {
			if constexpr (VEC) {
				uint4 wv[UN][S], xv[UN][MT];
				const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
				for (int i = 0; i < UN; i++) {
					const int64_t ui = u + (int64_t)i * SM_THREADS;
#pragma unroll
					for (int s = 0; s < S; s++)
						wv[i][s] = ui < u1 ? cuda_ld_stream(wrow[s] + ui * V) : zero;
				}
#pragma unroll
				for (int i = 0; i < UN; i++) {
					const int64_t ui = u + (int64_t)i * SM_THREADS;
#pragma unroll
					for (int m = 0; m < MT; m++) {
						if constexpr (NORM)
							xv[i][m] = ui < u1 ? xs[(ui - u0) * MT + m] : zero;
						else
							xv[i][m] = ui < u1 ? *reinterpret_cast<const uint4 *>(
								xrow[m] + ui * V) : zero;
					}
				}
				cuda_dot16_round<T, S, MT, UN>(wv, xv, acc);
			} else {
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
		smallm_finish<EPI, G, MT>(red[0], p, bx, &flag, r);
		if constexpr (AMAX) {
			/* the value as stored, as argmax would read it */
			const int64_t j = bx * G + threadIdx.x;
			if (threadIdx.x < G && j < p.N) {
				const float sv = cuda_round_to(p.dto, red[0][threadIdx.x]);
				if (cuda_argmax_better(sv, j, bv, bi)) {
					bv = sv;
					bi = j;
				}
			}
		}
		if constexpr (NORM)
			__syncthreads();         /* red and flag are the next group's */
	}
	if constexpr (AMAX)
		smallm_amax_finish(p, bv, bi);
}

/* The default shape: 4 rows, 2 units a round (1 at 8 tokens: registers,
 * no spills). */
#define SM_GEMV_UN(maxm) ((maxm) >= 8 ? 1 : 2)
/* The blocks a multiprocessor a gemv kernel is compiled for: 0 (ptxas's
 * own register budget, as before shapes) in the default shape, 1 (every
 * register a thread needs, up to 255) in another. ptxas's budget is low:
 * bf16 g4u4 at one token got 48 registers, which cannot hold a round's 16
 * loads (64 registers), so it issued them in parts, and g16u1 spilled;
 * with 1 they take 123 and 140 and every load of a round is in flight. */
#define SM_GEMV_MINB(maxm, rows, un) ((rows) == 4 && (un) == SM_GEMV_UN(maxm) ? 0 : 1)

template <typename T, int MAXM, bool VEC, int EPI, bool NORM = false, int ROWS = 4,
          int UN = SM_GEMV_UN(MAXM), bool AMAX = false, bool PIPE = false>
__global__ void __launch_bounds__(SM_THREADS, SM_GEMV_MINB(MAXM, ROWS, UN))
bcg_smallm_gemv_kernel(smallm_args p)
{
	smallm_gemv_body<T, MAXM, VEC, EPI, NORM, ROWS, UN, smallm_none, AMAX, PIPE>(
		p, smallm_none());
}

/* rmsnorm_matmul_rope_kv_write's "gemv": the same body with the norm
 * prologue and the rope epilogue (R passed by value, its frequency table
 * read from the parameter space). */
template <typename T, int MAXM>
__global__ void __launch_bounds__(SM_THREADS)
bcg_smallm_gemv_rope_kernel(smallm_args p, smallm_rope r)
{
	smallm_gemv_body<T, MAXM, true, EPI_ROPE, true, 4, SM_GEMV_UN(MAXM)>(p, r);
}

/* --- rows: one token, whole rows a block ----------------------------------- */

/* gemv's kernel for one token with 16-byte loads of f16 or bf16, when
 * smallm_rows_takes it (K <= SM_ROWS_MAX_UNITS vectors, and few
 * enough column groups). A block owns G output columns, S weight rows (G;
 * for gate|up 2 G, its G gate rows and G up rows) and TPR threads a row
 * (whole warps), each holding VPT 16-byte pieces of its row: u = l, l +
 * TPR, ... There is no loop over K: a block reads its rows in one round.
 * Products "rows" names (matmul_add on a weight) split K across blocks
 * (blockIdx.y, pieces [u0, u1) of at most SM_ROWS_SPLIT_UNITS), their
 * parts merged by bcg_smallm_merge_kernel after the grid: the 1B's down (K
 * 8192) is then 4 blocks of 2 rows by 2048 k, 64 bytes a thread, instead
 * of 2 rows of 8192 at 128 a thread, and four times the blocks share out
 * over the multiprocessors. NORM never splits: a row's sum of squares
 * needs the whole token.
 *
 * That round is what PDL is for. When b is a weight (smallm_args.b_const)
 * every piece is loaded into registers before cuda_pdl_begin(), so the
 * block's whole share of the product is in flight while the kernel before
 * it still runs; the token, which that kernel may write, is read after
 * the wait. Otherwise the same loads follow the wait, and the bytes are
 * the same either way.
 *
 * NORM (rmsnorm_matmul's fold): nothing waits for the norm. A row's
 * threads hold the whole token between them, so the row's sum of the
 * token's squares falls out of the same reduction as its product: each
 * thread sums w * (x * nw) and x * x over its pieces, and the row's total
 * is divided by sqrt(sum / K + eps) once, before the epilogue. The norm's
 * weights load before the wait too when marked (up to VPT 8), and through
 * L1 (cuda_ld_keep), since every row's threads read the same ones:
 * streamed past L1, each row fetched them from L2 again, 64 MB for the 1B
 * gate|up's 4096 blocks of 4 rows, as much as its weights (36.5 us against
 * 29.3 through L1, H100, tuner). The normalized token is never rounded to
 * T, as bcg_rmsnorm_kernel's output is: the fold and the split differ by
 * that rounding (within 2^-8 of an element). A fold that first reduced the
 * token and normalized it into shared memory (three barriers a block
 * after the wait, in every wave) took 37.7 us for the 1B gate|up against
 * 29.3 for rmsnorm then the product (H100, tuner, 2026-11-26).
 *
 * The sums: each thread's pieces in order, the warp's butterfly, then the
 * row's warps in order into SACC, and smallm_finish's epilogues (matmul,
 * matmul_add, silu_mul, rope) on SACC as the other kernels give them. */
#define SM_ROWS_MAX_UNITS 2048          /* K <= 16384 at 2 bytes */
#define SM_ROWS_SPLIT_UNITS 256         /* a split's pieces at most (2048 k) */
#define SM_ROWS_MAX_THREADS 512
/* NORM's blocks a multiprocessor at SM_ROWS_MAX_THREADS threads where a
 * thread holds 4 pieces of its row: 3, that is at most 42 registers, and
 * 6 blocks of 256 threads (the 1B's gate|up and q|k|v) a multiprocessor,
 * as the plain kernel fits. Left to itself the compiler kept every piece
 * of the token and of the norm's weights live beside the row's: 64
 * registers against the plain kernel's 40 (ptxas, sm_90), 4 such blocks,
 * a third fewer weight bytes in flight a multiprocessor. Longer rows
 * keep no bound: at VPT 8, 64 registers spilled 448 bytes a thread. */
#define SM_ROWS_NORM_MINB(VPT) ((VPT) <= 4 ? 3 : 1)

/* The rows kernel's NORM: none; the norm's weights loaded beside the
 * token (rmsnorm_matmul's "gemv" and "rows"); or
 * already in the weight (rmsnorm_matmul's "rows_scaled": b is a copy of
 * the weight with column k times the norm's weight k, CUDA_PACK_SCALED),
 * so that only the token's squares are summed beside the product, in the
 * plain kernel's registers and loads. On an H200 (bench/RESULTS.md,
 * twenty-fifth session) --tune-step took the scaled fold for every gate|up
 * and q|k|v of the 1B, whose step at positions 32..159 ran 1.2 to 1.6%
 * faster than with the norm's own kernel before gate|up. */
enum { SM_NORM_NONE = 0, SM_NORM_WEIGHTS = 1, SM_NORM_SCALED = 2 };

/* The rows kernel's block: S * TPR threads, S its weight rows (two a
 * column with silu_mul). */
#define SM_ROWS_BLOCK(EPI, G, TPR) (((EPI) == EPI_SILU ? 2 * (G) : (G)) * (TPR))
/* SM_NORM_SCALED's launch bounds where a thread holds 4 pieces: the plain
 * kernel's occupancy, 1280 threads a multiprocessor (48 registers: 5
 * blocks of 256). Left to itself ptxas gave the fold 60 registers (sm_90;
 * the squares' sum and its reduction beside the product's), 4 such
 * blocks, a fifth fewer weight bytes in flight. */
#define SM_ROWS_SCALED_THREADS 1280
/* The thin shape, 8 pieces a thread and 32 threads a row (shape 1) or 16
 * (shape 0), taken where a column has two weight rows (smallm_rows_geom):
 * blocks of 128 threads for the 1B's gate|up, 8 of them a multiprocessor
 * (64 registers), where 64 threads a row made blocks of 256, 5 a
 * multiprocessor: more rows in flight at the same bytes; at shape 0
 * blocks of 64, 16 a multiprocessor. Its pieces of the token are taken 4
 * at a time, so that 16 pieces never sit beside the row's 8 within the
 * bound. Not with the norm's weights loaded (NORM 1): that bound spilled
 * (20 bytes a thread even at one piece of the token at a time, ptxas
 * sm_90a), and unbounded it took 112 registers, 4 blocks a
 * multiprocessor. */
#define SM_ROWS_THIN(TPR, VPT) ((TPR) <= 32 && (VPT) == 8)
#define SM_ROWS_THIN_THREADS 1024
#define SM_ROWS_BOUND_THREADS(EPI, NORM, G, TPR, VPT) \
	(SM_ROWS_THIN(TPR, VPT) || ((NORM) == SM_NORM_SCALED && (VPT) <= 4) ? \
	 SM_ROWS_BLOCK(EPI, G, TPR) : SM_ROWS_MAX_THREADS)
#define SM_ROWS_BOUND_MINB(EPI, NORM, G, TPR, VPT) \
	(SM_ROWS_THIN(TPR, VPT) ? SM_ROWS_THIN_THREADS / SM_ROWS_BLOCK(EPI, G, TPR) \
	 : (NORM) == SM_NORM_WEIGHTS ? SM_ROWS_NORM_MINB(VPT) \
	 : (NORM) == SM_NORM_SCALED && (VPT) <= 4 ? \
	   SM_ROWS_SCALED_THREADS / SM_ROWS_BLOCK(EPI, G, TPR) : 1)

template <typename T, int EPI, int NORM, int G, int TPR, int VPT, typename R>
__global__ void __launch_bounds__(SM_ROWS_BOUND_THREADS(EPI, NORM, G, TPR, VPT),
                                  SM_ROWS_BOUND_MINB(EPI, NORM, G, TPR, VPT))
bcg_smallm_rows_kernel(smallm_args p, R r)
{
	static_assert(sizeof(T) == 2 && (TPR == 16 || TPR % 32 == 0),
	              "16-byte pieces of 2-byte elements, a half warp or whole warps a row");
	static_assert(EPI != EPI_ROPE || (NORM && G == 4), "rope: the norm and two pairs a block");
	constexpr int S = EPI == EPI_SILU ? 2 * G : G;
	/* a row's lanes of one warp (16: two rows a warp) and its warps */
	constexpr int LPW = TPR < 32 ? TPR : 32, WPR = TPR / LPW, V = 8;
	static_assert(S * TPR <= SM_ROWS_MAX_THREADS, "block size");
	__shared__ float red[S][WPR];
	__shared__ float ssr[NORM ? S : 1][NORM ? WPR : 1];
	__shared__ float sacc[S];
	__shared__ int flag;
	const int s = threadIdx.x / TPR, l = threadIdx.x % TPR, w = l / 32;
	const int64_t c0 = (int64_t)blockIdx.x * G;
	/* this block's pieces of K: [u0, u1), all of them without a split */
	const int64_t u0 = (int64_t)blockIdx.y * p.per;
	const int64_t u1 = u0 + p.per < p.units ? u0 + p.per : p.units;
	const T *row = static_cast<const T *>(p.b) + smallm_row_of<EPI>(s, G, c0, p) * p.K;
	const T *x = static_cast<const T *>(p.a);
	const uint4 zero = make_uint4(0u, 0u, 0u, 0u);

	/* NORM: the norm's weights of this thread's pieces, loaded here,
	 * before the wait, when marked and at VPT 8; else with the token's
	 * pieces below (at VPT 4 one at a time, so that SM_ROWS_NORM_MINB's
	 * blocks fit; at 16 they do not fit beside the row's). */
	constexpr bool NW = NORM == SM_NORM_WEIGHTS;   /* the norm's weights loaded */
	constexpr int NV = NW ? VPT : 1;
	const T *nw = static_cast<const T *>(p.w);
	const bool nw_early = NW && VPT <= 8 && VPT > 4 && p.w_const;
	uint4 nwv[NV];
	if constexpr (NW)
		if (nw_early)
#pragma unroll
			for (int i = 0; i < NV; i++) {
				const int64_t u = u0 + l + (int64_t)i * TPR;
				nwv[i] = u < u1 ? cuda_ld_keep(nw + u * V) : zero;
			}
	/* gate|up (silu_mul) and q|k|v (rope) trigger their successor here,
	 * before the wait, where cuda_pdl_begin() triggers after it: down's
	 * blocks, or attention's, then take the room this grid leaves and
	 * load while it runs (cuda-internal.h, PDL). On an H200, one plan
	 * replayed with the trigger here and after the wait (bench/RESULTS.md,
	 * thirty-second session): both families 0.9847 of llama-decode-fuse's
	 * step and 0.9935 of the 1B's; gate|up alone 0.9906 to 0.9914 and
	 * 0.9963 to 0.9974, q|k|v alone 0.9914 to 0.9923 and 0.9961 to 0.9973.
	 * matmul_add's rows lost (the 1B's o and down, 1.0032; down alone,
	 * smallm_trigger_first's figures, 1.0009 to 1.0063). */
	constexpr bool FIRST = EPI == EPI_SILU || EPI == EPI_ROPE;
	if constexpr (FIRST)
		cuda_pdl_trigger();
	uint4 wv[VPT];                  /* this thread's pieces of its row */
	auto load_w = [&] {
#pragma unroll
		for (int i = 0; i < VPT; i++) {
			const int64_t u = u0 + l + (int64_t)i * TPR;
			wv[i] = u < u1 ? cuda_ld_stream(row + u * V) : zero;
		}
	};
	if (p.b_const)
		load_w();
	if constexpr (FIRST)
		cuda_pdl_wait();
	else
		cuda_pdl_begin();
	if (!p.b_const)
		load_w();

	/* The token's pieces of this thread (the whole token over a row's
	 * threads); with NORM their squares too, and each piece times the
	 * norm's weights: the row's sum is divided by the rms at the end.
	 * NORM takes them 8 pieces at a time, so that a thread never holds
	 * 16 pieces of the token and of the norm beside its row's 16; and at
	 * VPT 4 one at a time, with the norm's loaded beside them, so that
	 * SM_ROWS_NORM_MINB's blocks fit; the thin shape 4 at a time. */
	constexpr int CH = NW && VPT > 8 ? 8 : NW && VPT <= 4 ? 1 : SM_ROWS_THIN(TPR, VPT) ? 4 : VPT;
	float acc = 0.0f, ss = 0.0f;
#pragma unroll
	for (int i0 = 0; i0 < VPT; i0 += CH) {
		uint4 xv[CH];
#pragma unroll
		for (int i = 0; i < CH; i++) {
			const int64_t u = u0 + l + (int64_t)(i0 + i) * TPR;
			xv[i] = u < u1 ? *reinterpret_cast<const uint4 *>(x + u * V) : zero;
			if constexpr (NW)
				if (!nw_early)
					nwv[i0 + i] = u < u1 ? cuda_ld_keep(nw + u * V) : zero;
		}
#pragma unroll
		for (int i = 0; i < CH; i++) {
			float wf[V], xf[V];
			cuda_widen16<T>(wv[i0 + i], wf);
			cuda_widen16<T>(xv[i], xf);
			if constexpr (NW) {
				float nf[V];
				cuda_widen16<T>(nwv[i0 + i], nf);
#pragma unroll
				for (int e = 0; e < V; e++) {
					ss = fmaf(xf[e], xf[e], ss);
					acc = fmaf(wf[e], __fmul_rn(xf[e], nf[e]), acc);
				}
			} else if constexpr (NORM == SM_NORM_SCALED) {
#pragma unroll
				for (int e = 0; e < V; e++) {
					ss = fmaf(xf[e], xf[e], ss);
					acc = fmaf(wf[e], xf[e], acc);
				}
			} else {
#pragma unroll
				for (int e = 0; e < V; e++)
					acc = fmaf(wf[e], xf[e], acc);
			}
		}
	}
	acc = cuda_lanes_sum<LPW>(acc);
	if constexpr (NORM)
		ss = cuda_lanes_sum<LPW>(ss);
	if ((l & (LPW - 1)) == 0) {
		red[s][w] = acc;
		if constexpr (NORM)
			ssr[s][w] = ss;
	}
	__syncthreads();
	if (threadIdx.x < S) {
		float v = 0.0f, q = 0.0f;
#pragma unroll
		for (int k = 0; k < WPR; k++) {
			v += red[threadIdx.x][k];
			if constexpr (NORM)
				q += ssr[threadIdx.x][k];
		}
		if constexpr (NORM)
			v /= sqrtf(q / (float)p.K + p.eps);
		sacc[threadIdx.x] = v;
	}
	__syncthreads();
	smallm_finish<EPI, G, 1>(sacc, p, blockIdx.x, &flag, r);
}

/* The rows kernel's split parts of matmul_add at one token, merged by a
 * kernel of their own instead of the last block of each column group
 * (smallm_finish without counters): output column j = thread, its parts
 * summed in split order from 0 as smallm_finish sums them, then the
 * epilogue. The same bits; no block of the product waits on a fence and
 * a counter before it leaves, at the cost of a launch, which PDL
 * overlaps with the product. */
#define SM_MERGE_THREADS 256

__global__ void __launch_bounds__(SM_MERGE_THREADS) bcg_smallm_merge_kernel(smallm_args p, int G)
{
	cuda_pdl_begin();
	const int64_t j = (int64_t)blockIdx.x * SM_MERGE_THREADS + threadIdx.x;
	if (j >= p.N)
		return;
	float v = 0.0f;                 /* part [k][column group][slot]: k's column j */
	for (int k = 0; k < p.ksplit; k++)
		v += __ldcg(p.part + (int64_t)k * p.nblocks * G + j);
	smallm_store<EPI_ADD>(p, j, v, 0.0f);
}

/* --- bulk: one token, two blocks a multiprocessor, the copy engine ------- */

/* gemv's kernel for one token of f16 or bf16 when b is a weight, the
 * rows kernel would take the product, and it is matmul_add's or one of
 * rmsnorm_matmul's (smallm_bulk_fits). The grid holds SM_BULK_PER_SM
 * blocks a multiprocessor, and block i owns the contiguous output rows
 * [i N / grid, (i + 1) N / grid): its weight rows are one run of bytes (two
 * for the SiLU epilogue: gate and up). Thread 0 has the copy engine bring
 * them into shared memory by stages of p.rps rows (cp.async.bulk, counted
 * on a stage's mbarrier) and keeps SM_BULK_STAGES stages in flight: each
 * stage, once multiplied, is refilled with the next. Before its PDL wait a
 * block starts its first stages and asks L2 for SM_BULK_L2 more bytes of
 * its rows: 96 KiB a block in flight while the kernel before still runs,
 * which registers cannot hold. The copies are marked evict-first in L2:
 * each weight byte is read once a step, and the activations stay.
 *
 * What it is worth, measured on an H100 (bench/RESULTS.md, 2026-11-27):
 *  - bench/gemv-chain.cu, the 1B step's products chained under PDL: 970
 *    us a step, against 1044 for the rows kernel's design, with one block
 *    a multiprocessor that triggers its successor before its wait;
 *  - in the 1B steps that design lost (1.29 ms against 1.13 for the fused
 *    sample): a grid of one block a multiprocessor assumes every
 *    multiprocessor takes one, and where the kernel before still holds
 *    some, two blocks share one and the kernel takes twice as long. Two
 *    blocks a multiprocessor, each half the rows, and the trigger after
 *    the wait as every kernel here, took the fused sample from 1.126 to
 *    1.082 ms (-3.9%);
 *  - by kind, in the same runs: matmul_add (o, down) -1.7% in the fused
 *    sample and 0.0% in the unfolded one; rmsnorm_matmul (gate|up) -2.2%;
 *    but the unfolded sample's q|k|v (matmul) +1.3% and gate|up
 *    (matmul_silu_mul, after a separate rmsnorm) +2.8%. So those two keep
 *    the rows kernel.
 *
 * After the wait each thread reads its pieces of the token (j = t, t +
 * SM_BULK_THREADS, ...: PPT of them) into registers, once; NORM multiplies
 * them by the norm's weights and sums their squares as the rows kernel
 * does, and the row's sum is divided by the rms at the end. The sums:
 * each thread's pieces in order, the warp's butterfly, then the warps in
 * order, then smallm_store's epilogue; a row's sum does not depend on the
 * block that makes it. */
#define SM_BULK_THREADS 256
#define SM_BULK_WARPS   (SM_BULK_THREADS / 32)
#define SM_BULK_PER_SM  2               /* blocks a multiprocessor in the grid */
#define SM_BULK_STAGES  2
#define SM_BULK_STAGE   (48 * 1024)     /* bytes a stage holds at most */
#define SM_BULK_ROWS    16              /* output rows a stage at most */
#define SM_BULK_L2      (64 * 1024)     /* bytes a block asks L2 for before its wait */
#define SM_BULK_PPT     8               /* pieces of the token a thread at most */
/* A stage's barrier after the stages, 8-byte aligned; then the warps' sums. */
#define SM_BULK_SMEM    (SM_BULK_STAGES * SM_BULK_STAGE + SM_BULK_STAGES * 8 + \
	                 SM_BULK_WARPS * 2 * SM_BULK_ROWS * 4)

template <typename T, int EPI, bool NORM, int PPT, bool AMAX = false>
__global__ void __launch_bounds__(SM_BULK_THREADS, SM_BULK_PER_SM) bcg_smallm_bulk_kernel(smallm_args p)
{
	static_assert(!AMAX || (EPI == EPI_NONE && SM_BULK_ROWS <= 32),
	              "the pick: the product's own columns, a chunk's within warp 0");
	static_assert(sizeof(T) == 2 && PPT <= SM_BULK_PPT, "16-byte pieces of 2-byte elements");
	constexpr int NW = EPI == EPI_SILU ? 2 : 1, V = 8;
	extern __shared__ __align__(128) unsigned char smallm_bulk_smem[];
	__shared__ float ssw[SM_BULK_WARPS];
	T *stage = reinterpret_cast<T *>(smallm_bulk_smem);
	uint64_t *full = reinterpret_cast<uint64_t *>(smallm_bulk_smem +
	                                              SM_BULK_STAGES * SM_BULK_STAGE);
	float *red = reinterpret_cast<float *>(full + SM_BULK_STAGES);  /* [2 ROWS][WARPS] */
	const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, rps = p.rps;
	const int64_t K = p.K, N = p.N, P = K / V;
	const int64_t r0 = (int64_t)blockIdx.x * N / gridDim.x;
	const int64_t r1 = (int64_t)(blockIdx.x + 1) * N / gridDim.x;
	const int chunks = (int)((r1 - r0 + rps - 1) / rps);
	const T *b = static_cast<const T *>(p.b);
	const int64_t stage_elems = SM_BULK_STAGE / (int64_t)sizeof(T);

	/* smallm_trigger_first's answer; EPI tested here too, so that the
	 * other epilogues' kernels keep one path */
	const bool first = EPI == EPI_ADD && p.trigger_first;
	if (first)
		cuda_pdl_trigger();

	/* chunk C (rows r0 + C rps ...) into stage C % SM_BULK_STAGES */
	auto issue = [&](int c) {
		const int st = c % SM_BULK_STAGES;
		const int64_t row = r0 + (int64_t)c * rps;
		const int64_t n = r1 - row < rps ? r1 - row : rps;
		const unsigned bytes = (unsigned)(n * K * (int64_t)sizeof(T));
		cuda_bar_expect(&full[st], NW * bytes);
		for (int s = 0; s < NW; s++)
			cuda_bulk_copy(stage + st * stage_elems + (int64_t)s * rps * K,
			                 b + ((int64_t)s * N + row) * K, bytes, &full[st]);
	};

	if (tid == 0) {
		for (int st = 0; st < SM_BULK_STAGES; st++)
			cuda_bar_init(&full[st]);
		cuda_bar_init_fence();
		for (int c = 0; c < SM_BULK_STAGES && c < chunks; c++)
			issue(c);
		/* the next rows into L2, by pieces of at most 64 KiB */
		const int64_t row_bytes = K * (int64_t)sizeof(T);
		const int64_t pr0 = r0 + (int64_t)SM_BULK_STAGES * rps;
		int64_t pr1 = pr0 + SM_BULK_L2 / (NW * row_bytes);
		pr1 = pr1 < r1 ? pr1 : r1;
		const int64_t step = row_bytes >= 65536 ? 1 : 65536 / row_bytes;
		for (int s = 0; s < NW; s++)
			for (int64_t r = pr0; r < pr1; r += step)
				asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;"
				             :: "l"(b + ((int64_t)s * N + r) * K),
				                "r"((unsigned)((pr1 - r < step ? pr1 - r : step) * row_bytes))
				             : "memory");
	}
	/* the norm's weights of this thread's pieces, before the wait when
	 * marked */
	const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
	const T *nw = static_cast<const T *>(p.w);
	uint4 nwv[NORM ? PPT : 1];
	if constexpr (NORM)
		if (p.w_const)
#pragma unroll
			for (int i = 0; i < PPT; i++) {
				const int64_t j = tid + (int64_t)i * SM_BULK_THREADS;
				nwv[i] = j < P ? cuda_ld_keep(nw + j * V) : zero;
			}
	cuda_pdl_wait();
	if (!first)
		cuda_pdl_trigger();

	/* this thread's pieces of the token (times the norm's weights) */
	const T *x = static_cast<const T *>(p.a);
	float xf[PPT][V];
	float ss = 0.0f;
#pragma unroll
	for (int i = 0; i < PPT; i++) {
		const int64_t j = tid + (int64_t)i * SM_BULK_THREADS;
		const uint4 xv = j < P ? *reinterpret_cast<const uint4 *>(x + j * V) : zero;
		cuda_widen16<T>(xv, xf[i]);
		if constexpr (NORM) {
			if (!p.w_const)
				nwv[i] = j < P ? cuda_ld_keep(nw + j * V) : zero;
			float nf[V];
			cuda_widen16<T>(nwv[i], nf);
#pragma unroll
			for (int e = 0; e < V; e++) {
				ss = fmaf(xf[i][e], xf[i][e], ss);
				xf[i][e] = __fmul_rn(xf[i][e], nf[e]);
			}
		}
	}
	if constexpr (NORM) {
		ss = cuda_warp_sum(ss);
		if (lane == 0)
			ssw[warp] = ss;
	}
	__syncthreads();                /* ssw, and the barriers' init */
	float rms = 1.0f;
	if constexpr (NORM) {
		float q = 0.0f;
#pragma unroll
		for (int w = 0; w < SM_BULK_WARPS; w++)
			q += ssw[w];
		rms = sqrtf(q / (float)K + p.eps);
	}

	/* AMAX: this thread's best column so far, by argmax's rule */
	float bv = -INFINITY;
	int64_t bi = INT64_MAX;
	for (int c = 0; c < chunks; c++) {
		const int st = c % SM_BULK_STAGES;
		const int64_t row = r0 + (int64_t)c * rps;
		const int n = (int)(r1 - row < rps ? r1 - row : rps);
		cuda_bar_wait(&full[st], (unsigned)(c / SM_BULK_STAGES) & 1u);
		const T *sw = stage + st * stage_elems;
		float acc[NW][SM_BULK_ROWS] = {};
#pragma unroll
		for (int i = 0; i < PPT; i++) {
			const int64_t j = tid + (int64_t)i * SM_BULK_THREADS;
			if (j >= P)
				break;
#pragma unroll
			for (int s = 0; s < NW; s++)
#pragma unroll
				for (int r = 0; r < SM_BULK_ROWS; r++) {
					if (r >= n)
						break;
					float wf[V];
					cuda_widen16<T>(reinterpret_cast<const uint4 *>(
						sw + ((int64_t)s * rps + r) * K)[j], wf);
#pragma unroll
					for (int e = 0; e < V; e++)
						acc[s][r] = fmaf(wf[e], xf[i][e], acc[s][r]);
				}
		}
#pragma unroll
		for (int s = 0; s < NW; s++)
#pragma unroll
			for (int r = 0; r < SM_BULK_ROWS; r++) {
				if (r >= n)
					break;
				const float v = cuda_warp_sum(acc[s][r]);
				if (lane == 0)
					red[(s * SM_BULK_ROWS + r) * SM_BULK_WARPS + warp] = v;
			}
		__syncthreads();        /* the stage is read: refill it */
		if (tid == 0 && c + SM_BULK_STAGES < chunks)
			issue(c + SM_BULK_STAGES);
		if (tid < n) {
			float v[NW];
#pragma unroll
			for (int s = 0; s < NW; s++) {
				v[s] = 0.0f;
#pragma unroll
				for (int w = 0; w < SM_BULK_WARPS; w++)
					v[s] += red[(s * SM_BULK_ROWS + tid) * SM_BULK_WARPS + w];
				if constexpr (NORM)
					v[s] /= rms;
			}
			smallm_store<EPI>(p, row + tid, v[0], v[NW - 1]);
			if constexpr (AMAX) {
				/* the value as stored, as argmax would read it */
				const float sv = cuda_round_to(p.dto, v[0]);
				if (cuda_argmax_better(sv, row + tid, bv, bi)) {
					bv = sv;
					bi = row + tid;
				}
			}
		}
		__syncthreads();        /* red is the next chunk's */
	}
	if constexpr (AMAX)
		smallm_amax_finish(p, bv, bi);
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

/* The small-M kernels' shared conditions: [N, K] weights, a [M, K]. */
static int smallm_layout_ok(const struct cuda_product *p)
{
	return p->trans_b && !p->trans_a && p->M >= 0 && p->N < INT_MAX && p->K < INT_MAX;
}

/* Whether product P's b is one of CALL's weights (its const_in bit): what
 * mma_packed needs, and what lets a kernel read b ahead of the PDL wait. */
static bool smallm_b_is_weight(const struct op_call *call, const struct cuda_product *p)
{
	return cuda_const_bit(call, (int)(p->b - call->in), 0) != 0;
}

/* The halves of product ID's packed weight: gate|up's two, else one. */
static int smallm_pack_halves(enum op_id id)
{
	return id == OP_MATMUL_SILU_MUL ? 2 : 1;
}

/* Whether product implementation IMPL reads a packed copy of its weight. */
static bool smallm_packs(int impl)
{
	return impl == CUDA_IMPL_MMA_PACKED || impl == CUDA_IMPL_WGMMA ||
	       impl == CUDA_IMPL_WGMMA_WHOLE;
}

/* The error of implementation IMPL launched before its weight's copy. */
static int smallm_no_copy(const char *who, int impl, enum op_id id, const struct cuda_product *p,
                          char *msg, size_t len)
{
	return cuda_fail(msg, len, "%s: %s has no packed copy of its weight [%lld, %lld] "
	                 "(cuda_op_prepare makes it before the first launch)", who,
	                 cuda_impl_name(id, impl), (long long)p->NB, (long long)p->K);
}

/* rows_scaled's weight (rmsnorm_matmul's and rmsnorm_matmul_rope_kv_write's):
 * in *B, P's b scaled by SCALE, the copy cuda_op_prepare made
 * (CUDA_PACK_SCALED), for the rows kernel (ROWS: it takes P, as usable
 * found). 0, or -1 with one sentence in MSG. */
static int smallm_scaled_copy(const struct cuda_op_ctx *ctx, const struct cuda_product *p,
                              const struct op_tensor *scale, bool rows, const char *who,
                              const void **b, char *msg, size_t len)
{
	if (!rows)
		return cuda_fail(msg, len, "%s: rows_scaled needs the rows kernel", who);
	if ((*b = cuda_pack_find(ctx->packs, p->b, scale, 1, CUDA_PACK_SCALED)) == NULL)
		return cuda_fail(msg, len, "%s: rows_scaled has no scaled copy of its weight "
		                 "[%lld, %lld] (cuda_op_prepare makes it before the first launch)",
		                 who, (long long)p->NB, (long long)p->K);
	return 0;
}

/* One launch, planned. */
struct smallm_plan {
	int     mt;             /* tokens a block holds: NT * 8, or MAXM */
	int     slots;          /* b rows a block reads */
	int     un;             /* gemv: units a thread loads a round */
	bool    vec;            /* gemv: 16-byte units */
	int64_t nblocks, units, per;
	int     ksplit;
};

static bool smallm_rows_takes(const struct cuda_product *p, int G, bool vec);
static void smallm_rows_plan(const struct cuda_product *p, int G, bool split,
                             struct smallm_plan *pl, int *shape);

int cuda_product_usable(enum op_id id, const struct op_call *call, int impl)
{
	struct cuda_product p;

	if (cuda_product_shape(id, call, &p, NULL, 0))
		return 0;
	switch (impl) {
	case CUDA_IMPL_MMA:
		return smallm_layout_ok(&p) && p.M <= SM_MMA_MAX_M && p.K % 8 == 0 &&
		       (p.a->dtype == PLAN_DTYPE_F16 || p.a->dtype == PLAN_DTYPE_BF16) &&
		       cuda_aligned16(p.a) && cuda_aligned16(p.b);
	case CUDA_IMPL_MMA_PACKED:
		/* mma's, on a weight: its copy is made once and never remade. */
		return cuda_product_usable(id, call, CUDA_IMPL_MMA) && smallm_b_is_weight(call, &p);
	case CUDA_IMPL_GEMV:
		return smallm_layout_ok(&p) && p.M <= SM_GEMV_MAX_M;
	case CUDA_IMPL_CUBLAS:
	case CUDA_IMPL_CUBLAS_CLASS:
		return cuda_product_cublas_usable(id, call);
	case CUDA_IMPL_WGMMA:
	case CUDA_IMPL_WGMMA_WHOLE:
		return cuda_wgmma_usable(id, &p, smallm_b_is_weight(call, &p));
	case CUDA_IMPL_ROWS: {
		/* only where gemv takes the bulk kernel: elsewhere it is gemv;
		 * a split's column groups within the scratch's counters */
		struct smallm_plan pl;
		int shape;
		if (!(id == OP_MATMUL_ADD && smallm_layout_ok(&p) && p.K % 8 == 0 &&
		      smallm_rows_takes(&p, 2, true) && smallm_b_is_weight(call, &p) &&
		      cuda_aligned16(p.a) && cuda_aligned16(p.b)))
			return 0;
		smallm_rows_plan(&p, 2, true, &pl, &shape);
		return pl.ksplit == 1 || pl.nblocks <= CUDA_SCRATCH_COUNTERS;
	}
	}
	return 0;
}

/* The shape of the norm and rope forms, and BCG_GEMV_SHAPE's unset. */
static const struct kernel_shape smallm_default_shape = { 0, 0 };

static int64_t smallm_ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

static int smallm_gemv_maxm(int64_t M)
{
	return M <= 1 ? 1 : M <= 2 ? 2 : M <= 4 ? 4 : 8;
}

/* The K split of a plan with PL's column groups and units: enough blocks
 * for two a multiprocessor when there are fewer groups, each split at
 * least MIN_UNITS units. */
static void smallm_plan_split(struct smallm_plan *pl, int64_t sms, int min_units)
{
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

/* BCG_GEMV_SHAPE=auto: units a round enough for a thread's share of a
 * row in one round (up to 4), so that a block waits for memory once; then
 * the most rows a block (16, 8, 4) whose loads stay within 16 a round
 * while the column groups still give two blocks a multiprocessor without
 * a split (fewer blocks: fewer merges and fewer partial waves, but no
 * split that the default would not make). */
static struct kernel_shape smallm_shape_auto(const struct cuda_product *p, int64_t units,
                                             int64_t sms)
{
	const int silu = p->NB != p->N;
	const int64_t share = smallm_ceil_div(units, SM_THREADS);
	struct kernel_shape sh = { 4, share <= 1 ? 1 : share <= 2 ? 2 : 4 };

	for (int rows = 16; rows > 4; rows /= 2) {
		if (rows * sh.u > 16)
			continue;
		if (smallm_ceil_div(p->N, silu ? rows / 2 : rows) >= 2 * sms) {
			sh.g = rows;
			break;
		}
	}
	return sh;
}

/* Plan IMPL (mma or gemv) of P for M tokens on SM_COUNT multiprocessors
 * (<= 0: the most the scratch bound assumes), gemv in SHAPE (kernel-
 * shape.h; zero: the default). The split grows with the device's size and
 * never past what that bound assumes. At 8 tokens a gemv shape keeps at
 * most 8 rows and one unit a round, as the default: its registers. */
static void smallm_plan_for(int impl, enum op_id id, const struct cuda_product *p, int64_t M,
                            bool vec, int sm_count, struct kernel_shape shape,
                            struct smallm_plan *pl)
{
	const bool silu = id == OP_MATMUL_SILU_MUL;
	const int64_t sms = sm_count > 0 && sm_count < SM_SM_CAP ? sm_count : SM_SM_CAP;
	int G, min_units;

	memset(pl, 0, sizeof *pl);
	if (impl == CUDA_IMPL_MMA) {
		G = 16;
		pl->slots = silu ? 2 * G : G;
		pl->mt = (int)smallm_ceil_div(M < 1 ? 1 : M, 8) * 8;
		pl->units = smallm_ceil_div(p->K, 32);
		min_units = SM_MMA_MIN_SPLIT;
	} else {
		pl->vec = vec;
		pl->mt = vec ? smallm_gemv_maxm(M) : SM_GEMV_MAX_M;
		pl->units = vec ? p->K / (16 / (int64_t)cuda_dtype_size(p->a->dtype)) : p->K;
		min_units = 2 * SM_THREADS;
		if (shape.g == KERNEL_SHAPE_AUTO)
			shape = smallm_shape_auto(p, pl->units, sms);
		if (shape.g <= 0) {
			shape.g = 4;
			shape.u = SM_GEMV_UN(pl->mt);
		} else if (pl->mt >= 8) {
			shape.g = shape.g > 8 ? 8 : shape.g;
			shape.u = 1;
		}
		pl->slots = shape.g;
		pl->un = shape.u;
		G = silu ? shape.g / 2 : shape.g;
	}
	pl->nblocks = smallm_ceil_div(p->N, G);
	smallm_plan_split(pl, sms, min_units);
}

static size_t smallm_plan_scratch(const struct smallm_plan *pl)
{
	if (pl->ksplit <= 1)
		return 0;
	return (size_t)pl->ksplit * (size_t)pl->nblocks * (size_t)pl->slots * (size_t)pl->mt *
	       sizeof(float);
}

/* The most scratch any M the kernels take can need, so that the bound does
 * not shrink as the engine's token count grows past a kernel's limit; for
 * gemv, in every shape BCG_GEMV_SHAPE may name (auto picks one of them),
 * so that the bound does not depend on the environment. */
size_t cuda_product_scratch_bytes(enum op_id id, const struct op_call *call)
{
	static const int gs[] = { 4, 8, 16 }, us[] = { 1, 2, 4 };
	struct cuda_product p;
	struct smallm_plan pl;
	size_t most = 0, b;

	if (cuda_product_shape(id, call, &p, NULL, 0))
		return 0;
	if (smallm_layout_ok(&p) && p.K % 8 == 0 &&
	    (p.a->dtype == PLAN_DTYPE_F16 || p.a->dtype == PLAN_DTYPE_BF16)) {
		smallm_plan_for(CUDA_IMPL_MMA, id, &p, SM_MMA_MAX_M, false, 0, smallm_default_shape,
		                &pl);
		most = smallm_plan_scratch(&pl);
	}
	if (smallm_layout_ok(&p)) {
		for (int v = 0; v < 2; v++)
			for (int64_t m = 1; m <= SM_GEMV_MAX_M; m *= 2)
				for (int sh = -1; sh < 9; sh++) {
					struct kernel_shape want = smallm_default_shape;
					if (sh >= 0) {
						want.g = gs[sh / 3];
						want.u = us[sh % 3];
						if (!kernel_shape_valid(KERNEL_SHAPE_GEMV, want.g, want.u))
							continue;
					}
					smallm_plan_for(CUDA_IMPL_GEMV, id, &p, m, v != 0, 0, want, &pl);
					b = smallm_plan_scratch(&pl);
					most = b > most ? b : most;
				}
	}
	/* rows: matmul_add of one token, K split (whatever M is now) */
	if (id == OP_MATMUL_ADD && smallm_layout_ok(&p) && p.K % 8 == 0 &&
	    p.K / 8 <= SM_ROWS_MAX_UNITS &&
	    (p.a->dtype == PLAN_DTYPE_F16 || p.a->dtype == PLAN_DTYPE_BF16)) {
		int shape;
		smallm_rows_plan(&p, 2, true, &pl, &shape);
		b = smallm_plan_scratch(&pl);
		most = b > most ? b : most;
	}
	most = cuda_scratch_with_counters(most);
	b = cuda_product_cublas_scratch(id, call);
	return b > most ? b : most;
}

template <int EPI, typename T, int NT, bool PACKED>
static int smallm_launch_mma_nt(const struct cuda_op_ctx *ctx, const smallm_args &args,
                                dim3 grid, char *msg, size_t len)
{
	return cuda_launch(ctx, "bcg_smallm_mma_kernel", bcg_smallm_mma_kernel<T, NT, EPI, PACKED>,
	                   grid, dim3((PACKED ? SM_MMA_PACKED_WARPS : SM_WARPS) * 32), msg, len,
	                   args);
}

template <int EPI, typename T, bool PACKED>
static int smallm_launch_mma_layout(const struct cuda_op_ctx *ctx, const smallm_args &args,
                                    int nt, dim3 grid, char *msg, size_t len)
{
	switch (nt) {
	case 1:
		return smallm_launch_mma_nt<EPI, T, 1, PACKED>(ctx, args, grid, msg, len);
	case 2:
		return smallm_launch_mma_nt<EPI, T, 2, PACKED>(ctx, args, grid, msg, len);
	case 3:
		return smallm_launch_mma_nt<EPI, T, 3, PACKED>(ctx, args, grid, msg, len);
	default:
		return smallm_launch_mma_nt<EPI, T, 4, PACKED>(ctx, args, grid, msg, len);
	}
}

/* mma (PACKED false) or mma_packed for NT token tiles. */
template <int EPI, typename T>
static int smallm_launch_mma(const struct cuda_op_ctx *ctx, const smallm_args &args, int nt,
                             bool packed, dim3 grid, char *msg, size_t len)
{
	return packed ? smallm_launch_mma_layout<EPI, T, true>(ctx, args, nt, grid, msg, len)
	              : smallm_launch_mma_layout<EPI, T, false>(ctx, args, nt, grid, msg, len);
}

/* The gemv kernel of MAXM tokens in PL's shape (smallm_plan_for keeps
 * only these: at 8 tokens, rows <= 8 and one unit); NULL for another. */
template <int EPI, typename T, int MAXM, bool VEC>
static void (*smallm_gemv_pick(const struct smallm_plan *pl))(smallm_args)
{
	switch (pl->slots * 10 + pl->un) {
	case 41:
		return bcg_smallm_gemv_kernel<T, MAXM, VEC, EPI, false, 4, 1>;
	case 81:
		return bcg_smallm_gemv_kernel<T, MAXM, VEC, EPI, false, 8, 1>;
	}
	if constexpr (MAXM < 8) {
		switch (pl->slots * 10 + pl->un) {
		case 42:
			return bcg_smallm_gemv_kernel<T, MAXM, VEC, EPI, false, 4, 2>;
		case 44:
			return bcg_smallm_gemv_kernel<T, MAXM, VEC, EPI, false, 4, 4>;
		case 82:
			return bcg_smallm_gemv_kernel<T, MAXM, VEC, EPI, false, 8, 2>;
		case 161:
			return bcg_smallm_gemv_kernel<T, MAXM, VEC, EPI, false, 16, 1>;
		}
	}
	return NULL;
}

template <int EPI, typename T>
static int smallm_launch_gemv(const struct cuda_op_ctx *ctx, const smallm_args &args,
                              const struct smallm_plan *pl, dim3 grid, char *msg, size_t len)
{
	void (*kernel)(smallm_args) =
		!pl->vec ? smallm_gemv_pick<EPI, T, SM_GEMV_MAX_M, false>(pl)
		: pl->mt == 1 ? smallm_gemv_pick<EPI, T, 1, true>(pl)
		: pl->mt == 2 ? smallm_gemv_pick<EPI, T, 2, true>(pl)
		: pl->mt == 4 ? smallm_gemv_pick<EPI, T, 4, true>(pl)
		: smallm_gemv_pick<EPI, T, 8, true>(pl);

	if (kernel == NULL)
		return cuda_fail(msg, len, "gemv: no kernel of %d rows and %d units a round at %d "
		                 "tokens", pl->slots, pl->un, pl->mt);
	return cuda_launch(ctx, "bcg_smallm_gemv_kernel", kernel, grid, dim3(SM_THREADS), msg, len,
	                   args);
}

template <int EPI>
static int smallm_launch(const struct cuda_op_ctx *ctx, int impl, int dtype,
                         const smallm_args &args, const struct smallm_plan *pl, char *msg,
                         size_t len)
{
	dim3 grid((unsigned)pl->nblocks, (unsigned)pl->ksplit);

	if (impl == CUDA_IMPL_MMA || impl == CUDA_IMPL_MMA_PACKED) {
		const bool packed = impl == CUDA_IMPL_MMA_PACKED;
		if (dtype == PLAN_DTYPE_F16)
			return smallm_launch_mma<EPI, __half>(ctx, args, pl->mt / 8, packed, grid, msg,
			                                      len);
		return smallm_launch_mma<EPI, __nv_bfloat16>(ctx, args, pl->mt / 8, packed, grid, msg,
		                                             len);
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

/* The rows kernel's shapes (bcg_smallm_rows_kernel), by index: TPR threads
 * a row and VPT 16-byte pieces a thread, for rows of up to TPR * VPT
 * pieces. smallm_rows_launch_t's table instantiates them in this order,
 * each as smallm_rows_geom gives it. */
static constexpr struct smallm_rows {
	int tpr, vpt;
} smallm_rows_shapes[] = { { 32, 4 }, { 64, 4 }, { 128, 4 }, { 128, 8 }, { 128, 16 } };
/* Shapes 0 and 1 (rows of up to 128 and 256 pieces) where a column has
 * two weight rows (silu_mul) and the norm's weights are not loaded: the
 * thin shape (SM_ROWS_THIN), half the threads a row and twice the pieces
 * a thread (8), the same pieces a row.
 * Shape 1's (32 threads a row): the 1B's step ran 0.9846 of the one with
 * 64 threads a row, its gate|up 17.73 us exposed a layer (18.86 in the
 * profile before; H200, bench/RESULTS.md, thirty-first session), where
 * the thin shape for every rows launch had lost (o and down slower:
 * 1.0494). Shape 0's (16 threads a row, two rows a warp): hidden 1024's
 * gate|up (llama-decode) in blocks of 64 threads, 16 a multiprocessor,
 * 2112 resident for its 1408 where 32 threads a row made blocks of 128,
 * 10 a multiprocessor: 1320, a second wave of 88. llama-decode-fuse's
 * step ran 0.9693 of the old shape's with the same choices (H200,
 * bench/RESULTS.md, thirty-second session). */
static constexpr struct smallm_rows smallm_rows_geom(int epi, int norm, int shape)
{
	return shape <= 1 && epi == EPI_SILU && norm != SM_NORM_WEIGHTS ?
	       smallm_rows{ smallm_rows_shapes[shape].tpr / 2, smallm_rows_shapes[shape].vpt * 2 } :
	       smallm_rows_shapes[shape];
}

/* The rows kernel of shape I for EPI and NORM (smallm_rows_geom). */
template <typename T, int EPI, int NORM, int G, typename R, int I>
static constexpr void (*smallm_rows_kernel_of)(smallm_args, R) =
	bcg_smallm_rows_kernel<T, EPI, NORM, G, smallm_rows_geom(EPI, NORM, I).tpr,
	                       smallm_rows_geom(EPI, NORM, I).vpt, R>;

/* Beyond this many column groups (about 60 waves of two-row blocks for
 * the 1B lm-head) the rows kernel's per-block prologue costs more than
 * loading before the wait saves: that head took 177.7 us against 169.7
 * with four-row blocks streaming (H100, bench/gemv-chain.cu). */
#define SM_ROWS_MAX_GROUPS 16384

/* Whether gemv runs P (G columns a block) with the rows kernel: one token,
 * 16-byte loads (VEC) of f16 or bf16, K within SM_ROWS_MAX_UNITS pieces
 * (the last shape holds them), at most SM_ROWS_MAX_GROUPS column groups. */
static bool smallm_rows_takes(const struct cuda_product *p, int G, bool vec)
{
	const int dt = p->a->dtype;
	const int64_t units = p->K / 8;

	return p->M == 1 && vec && (dt == PLAN_DTYPE_F16 || dt == PLAN_DTYPE_BF16) &&
	       units >= 1 && units <= SM_ROWS_MAX_UNITS &&
	       smallm_ceil_div(p->N, G) <= SM_ROWS_MAX_GROUPS;
}

/* The plan of a rows launch, G columns a group: one split, or with SPLIT
 * (not for NORM) K's pieces shared into splits of at most
 * SM_ROWS_SPLIT_UNITS; the shape that holds a split in *SHAPE. */
static void smallm_rows_plan(const struct cuda_product *p, int G, bool split,
                             struct smallm_plan *pl, int *shape)
{
	memset(pl, 0, sizeof *pl);
	pl->mt = 1;
	pl->slots = G;
	pl->vec = true;
	pl->units = p->K / 8;
	pl->ksplit = split && pl->units > SM_ROWS_SPLIT_UNITS ?
	             (int)smallm_ceil_div(pl->units, SM_ROWS_SPLIT_UNITS) : 1;
	pl->per = smallm_ceil_div(pl->units, pl->ksplit);
	pl->nblocks = smallm_ceil_div(p->N, G);
	*shape = 0;
	while ((int64_t)smallm_rows_shapes[*shape].tpr * smallm_rows_shapes[*shape].vpt < pl->per)
		++*shape;
}

/* gemv's plan of P for enum op_id ID: the rows kernel's (G columns a
 * group; true, its shape in *SHAPE) where it takes P, else the looping
 * kernel's in SH on SM_COUNT multiprocessors. */
static bool smallm_plan_gemv(enum op_id id, const struct cuda_product *p, int G, bool vec,
                             int sm_count, struct kernel_shape sh, struct smallm_plan *pl,
                             int *shape)
{
	if (smallm_rows_takes(p, G, vec)) {
		smallm_rows_plan(p, G, false, pl, shape);
		return true;
	}
	smallm_plan_for(CUDA_IMPL_GEMV, id, p, p->M, vec, sm_count, sh, pl);
	return false;
}

template <typename T, int EPI, int NORM, int G, typename R>
static int smallm_rows_launch_t(const struct cuda_op_ctx *ctx, const smallm_args &args,
                                int shape, const R &r, char *msg, size_t len)
{
	constexpr int S = EPI == EPI_SILU ? 2 * G : G;
	static void (*const kernels[])(smallm_args, R) = {
		smallm_rows_kernel_of<T, EPI, NORM, G, R, 0>,
		smallm_rows_kernel_of<T, EPI, NORM, G, R, 1>,
		smallm_rows_kernel_of<T, EPI, NORM, G, R, 2>,
		smallm_rows_kernel_of<T, EPI, NORM, G, R, 3>,
		smallm_rows_kernel_of<T, EPI, NORM, G, R, 4>,
	};
	static_assert(sizeof kernels / sizeof kernels[0] ==
	              sizeof smallm_rows_shapes / sizeof smallm_rows_shapes[0], "a kernel a shape");

	return cuda_launch(ctx, "bcg_smallm_rows_kernel", kernels[shape],
	                   dim3((unsigned)args.nblocks, (unsigned)args.ksplit),
	                   dim3(S * smallm_rows_geom(EPI, NORM, shape).tpr),
	                   msg, len, args, r);
}

/* The rows kernel of EPI (NORM: rmsnorm_matmul's fold, SM_NORM_*) for
 * DTYPE. */
template <int EPI, int NORM, int G, typename R = smallm_none>
static int smallm_rows_launch(const struct cuda_op_ctx *ctx, int dtype, const smallm_args &args,
                              int shape, char *msg, size_t len, const R &r = R())
{
	if (dtype == PLAN_DTYPE_F16)
		return smallm_rows_launch_t<__half, EPI, NORM, G>(ctx, args, shape, r, msg, len);
	return smallm_rows_launch_t<__nv_bfloat16, EPI, NORM, G>(ctx, args, shape, r, msg, len);
}

/* Whether gemv's rows-kernel product P (matmul_silu_mul when SILU) of
 * rmsnorm_matmul (NORM) or matmul_add (P->x) runs the bulk kernel
 * instead: b a weight (B_CONST), the device's size known, a stage holding
 * at least one output row's weight rows, and the token within
 * SM_BULK_PPT pieces a thread. Plain matmul and matmul_silu_mul keep the
 * rows kernel: measured by kind in the 1B step (the top of the bulk
 * kernel), they lost there. */
static bool smallm_bulk_fits(const struct cuda_product *p, bool silu, bool norm, bool b_const,
                             const struct cuda_op_ctx *ctx)
{
	const int64_t nw = silu ? 2 : 1;

	return (norm || p->x != NULL) && b_const && ctx->sm_count > 0 && p->K % 8 == 0 &&
	       p->K / 8 <= (int64_t)SM_BULK_PPT * SM_BULK_THREADS &&
	       nw * p->K * 2 <= SM_BULK_STAGE;
}

/* Whether the bulk kernel of epilogue EPI on ARGS triggers its successor
 * before its PDL wait, where cuda_pdl_begin() triggers after it: matmul_add
 * (EPI_ADD) where K > N, down. Its successor is the next layer's q|k|v,
 * whose blocks then load their weights while down streams its own. On
 * an H200 (bench/RESULTS.md, thirty-third session), one plan replayed
 * with the trigger before and after the wait: llama-decode-fuse's step
 * (down on this kernel) 0.9514; this form against the tree before it,
 * one plan: 0.9520 (the 1B, whose down is the rows kernel's, 1.0004).
 * o (K <= N) triggering first as well lost, 1.0023: gate|up's 11.5 MB
 * would load beside o's own 2 MB (o and down both, the thirty-second
 * session, 1.0736). The rows kernel's down (the 1B's, split along K)
 * gained nothing, 1.0009 by the switch and 1.0063 between two builds,
 * so it keeps the trigger after the wait. */
static bool smallm_trigger_first(int epi, const smallm_args &args)
{
	return epi == EPI_ADD && args.K > args.N;
}

template <typename T, int EPI, bool NORM, bool AMAX>
static int smallm_bulk_launch_t(const struct cuda_op_ctx *ctx, const smallm_args &args,
                                char *msg, size_t len)
{
	static void (*const kernels[])(smallm_args) = {
		bcg_smallm_bulk_kernel<T, EPI, NORM, 1, AMAX>,
		bcg_smallm_bulk_kernel<T, EPI, NORM, 2, AMAX>,
		bcg_smallm_bulk_kernel<T, EPI, NORM, 4, AMAX>,
		bcg_smallm_bulk_kernel<T, EPI, NORM, 8, AMAX>,
	};
	const int64_t pieces = args.K / 8;
	const int k = pieces <= SM_BULK_THREADS ? 0 : pieces <= 2 * SM_BULK_THREADS ? 1
	              : pieces <= 4 * SM_BULK_THREADS ? 2 : 3;
	static unsigned long long smem_set[4];  /* devices whose kernels[k] has the ceiling */
	const int64_t want = (int64_t)SM_BULK_PER_SM * ctx->sm_count;
	const int64_t grid = args.N < want ? args.N : want;
	cudaError_t err = cuda_smem_ceiling(kernels[k], SM_BULK_SMEM, &smem_set[k]);

	if (err != cudaSuccess)
		return cuda_fail(msg, len, "bcg_smallm_bulk_kernel: %d bytes of shared memory refused: "
		                 "%s (%s)", SM_BULK_SMEM, cudaGetErrorString(err), cudaGetErrorName(err));
	return cuda_launch_smem(ctx, "bcg_smallm_bulk_kernel", kernels[k], dim3((unsigned)grid),
	                        dim3(SM_BULK_THREADS), SM_BULK_SMEM, msg, len, args);
}

/* The bulk kernel of EPI (NORM: rmsnorm_matmul's fold; AMAX:
 * rmsnorm_matmul_argmax's pick, args.amax_* set) for DTYPE, on ARGS as the
 * rows kernel's plan fills them. */
template <int EPI, bool NORM, bool AMAX = false>
static int smallm_bulk_launch(const struct cuda_op_ctx *ctx, int dtype, smallm_args args,
                              char *msg, size_t len)
{
	const int64_t nw = EPI == EPI_SILU ? 2 : 1, fit = SM_BULK_STAGE / (nw * args.K * 2);

	args.rps = (int)(fit < SM_BULK_ROWS ? fit : SM_BULK_ROWS);
	args.trigger_first = smallm_trigger_first(EPI, args);
	if (dtype == PLAN_DTYPE_F16)
		return smallm_bulk_launch_t<__half, EPI, NORM, AMAX>(ctx, args, msg, len);
	return smallm_bulk_launch_t<__nv_bfloat16, EPI, NORM, AMAX>(ctx, args, msg, len);
}

static int smallm_args_fill(const char *who, const struct cuda_product *pp,
                            const struct smallm_plan *plp, const struct cuda_op_ctx *ctx,
                            smallm_args *argsp, char *msg, size_t len);

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
	if (impl < 0 || impl >= cuda_impl_count(id))
		return cuda_fail(msg, len, "%s: no implementation %d on CUDA", who, impl);
	if (!cuda_product_usable(id, call, impl))
		return cuda_fail(msg, len, "%s: implementation %s cannot run M %lld, N %lld, K %lld "
		                 "%s (trans_a %d, trans_b %d%s)", who, cuda_impl_name(id, impl),
		                 (long long)p.M, (long long)p.N, (long long)p.K,
		                 cuda_dtype_name(p.a->dtype), p.trans_a, p.trans_b,
		                 smallm_packs(impl) && !smallm_b_is_weight(call, &p)
		                 ? "; b is not a weight" : "");
	if (impl == CUDA_IMPL_CUBLAS || impl == CUDA_IMPL_CUBLAS_CLASS)
		return cuda_product_cublas(id, call, impl == CUDA_IMPL_CUBLAS_CLASS, ctx, msg, len);
	if (impl == CUDA_IMPL_WGMMA || impl == CUDA_IMPL_WGMMA_WHOLE) {
		const void *packed = cuda_pack_find(ctx->packs, p.b, NULL, smallm_pack_halves(id),
		                                    CUDA_PACK_WGMMA);
		if (packed == NULL)
			return smallm_no_copy(who, impl, id, &p, msg, len);
		return cuda_wgmma_run(id, &p, packed, impl == CUDA_IMPL_WGMMA_WHOLE, ctx, msg, len);
	}
	if (p.M <= 0 || p.N <= 0)
		return 0;

	const int64_t V = 16 / (int64_t)cuda_dtype_size(p.a->dtype);
	const bool vec = p.K % V == 0 && (uintptr_t)p.a->data % 16 == 0 &&
	                 (uintptr_t)p.b->data % 16 == 0;
	int shape = 0;
	if ((impl == CUDA_IMPL_GEMV || impl == CUDA_IMPL_ROWS) && smallm_rows_takes(&p, 2, vec)) {
		smallm_rows_plan(&p, 2, impl == CUDA_IMPL_ROWS, &pl, &shape);
		if (smallm_args_fill(who, &p, &pl, ctx, &args, msg, len))
			return -1;
		args.b_const = smallm_b_is_weight(call, &p);
		if (id == OP_MATMUL_ADD && impl == CUDA_IMPL_GEMV &&
		    smallm_bulk_fits(&p, false, false, args.b_const, ctx))
			return smallm_bulk_launch<EPI_ADD, false>(ctx, p.a->dtype, args, msg, len);
		if (pl.ksplit > 1) {    /* rows: matmul_add, merged by a kernel */
			args.counters = NULL;
			if (smallm_rows_launch<EPI_ADD, SM_NORM_NONE, 2>(ctx, p.a->dtype, args, shape,
			                                                 msg, len))
				return -1;
			return cuda_launch(ctx, "bcg_smallm_merge_kernel", bcg_smallm_merge_kernel,
			                   dim3((unsigned)smallm_ceil_div(p.N, SM_MERGE_THREADS)),
			                   dim3(SM_MERGE_THREADS), msg, len, args, 2);
		}
		switch (id) {
		case OP_MATMUL_ADD:
			return smallm_rows_launch<EPI_ADD, SM_NORM_NONE, 2>(ctx, p.a->dtype, args,
			                                                 shape, msg, len);
		case OP_MATMUL_SILU_MUL:
			return smallm_rows_launch<EPI_SILU, SM_NORM_NONE, 2>(ctx, p.a->dtype, args,
			                                                  shape, msg, len);
		default:
			return smallm_rows_launch<EPI_NONE, SM_NORM_NONE, 2>(ctx, p.a->dtype, args,
			                                                  shape, msg, len);
		}
	}
	/* mma_packed: mma's plan, on the weight's copy. */
	smallm_plan_for(impl == CUDA_IMPL_MMA_PACKED ? CUDA_IMPL_MMA : impl, id, &p, p.M, vec,
	                ctx->sm_count, ctx->gemv_shape, &pl);
	if (smallm_args_fill(who, &p, &pl, ctx, &args, msg, len))
		return -1;
	if (impl == CUDA_IMPL_MMA_PACKED &&
	    (args.b = cuda_pack_find(ctx->packs, p.b, NULL, smallm_pack_halves(id),
	                             CUDA_PACK_MMA)) ==
	    NULL)
		return smallm_no_copy(who, impl, id, &p, msg, len);

	switch (id) {
	case OP_MATMUL_ADD:
		return smallm_launch<EPI_ADD>(ctx, impl, p.a->dtype, args, &pl, msg, len);
	case OP_MATMUL_SILU_MUL:
		return smallm_launch<EPI_SILU>(ctx, impl, p.a->dtype, args, &pl, msg, len);
	default:
		return smallm_launch<EPI_NONE>(ctx, impl, p.a->dtype, args, &pl, msg, len);
	}
}

int cuda_product_prepare(enum op_id id, const struct op_call *call,
                         const struct cuda_op_ctx *ctx, int keep, char *msg, size_t len)
{
	const int impl = call->impl;
	const char *name = cuda_impl_name(id, impl);
	struct cuda_product p;

	if (!smallm_packs(impl))
		return 0;
	if (cuda_product_shape(id, call, &p, msg, len))
		return -1;
	if (!cuda_product_usable(id, call, impl))
		return cuda_fail(msg, len, "%s: %s cannot run M %lld, N %lld, K %lld %s",
		                 smallm_kind_name(id), name, (long long)p.M, (long long)p.N,
		                 (long long)p.K, cuda_dtype_name(p.a->dtype));
	if (ctx->packs == NULL)
		return cuda_fail(msg, len, "%s: %s needs a context that keeps packed weights",
		                 smallm_kind_name(id), name);
	return cuda_pack_make(ctx->packs, p.b, NULL, smallm_pack_halves(id),
	                      impl == CUDA_IMPL_MMA_PACKED ? CUDA_PACK_MMA : CUDA_PACK_WGMMA, keep,
	                      ctx->stream, msg, len);
}

/* ARGS for product P planned as PL, the split's scratch taken from CTX;
 * 0, or -1 with one sentence in MSG. */
static int smallm_args_fill(const char *who, const struct cuda_product *pp,
                            const struct smallm_plan *plp, const struct cuda_op_ctx *ctx,
                            smallm_args *argsp, char *msg, size_t len)
{
	const struct cuda_product &p = *pp;
	const struct smallm_plan &pl = *plp;
	smallm_args &args = *argsp;

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
	return 0;
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

/* --- rmsnorm_matmul ---------------------------------------------------------- */

/* The product of rmsnorm_matmul CALL with A as its first operand: matmul
 * (a, b) or matmul_silu_mul (a, b) by the epilogue; its kind in *ID. */
static void rnm_product_call(const struct op_call *call, const struct op_tensor *a,
                             struct op_call *prod, enum op_id *id)
{
	memset(prod, 0, sizeof *prod);
	prod->nin = 2;
	prod->nout = 1;
	prod->in[0] = *a;
	prod->in[1] = call->in[2];
	prod->out[0] = call->out[0];
	prod->attr[MATMUL_TRANS_A].i = 0;
	prod->attr[MATMUL_TRANS_B].i = call->attr[RNM_TRANS_B].i;
	prod->const_in = cuda_const_bit(call, 2, 1);    /* b; a is x or h */
	prod->graph_safe = call->graph_safe;
	prod->batch = call->batch;
	prod->name = call->name;
	*id = call->attr[RNM_EPILOGUE].i == RNM_EPI_SILU_MUL ? OP_MATMUL_SILU_MUL : OP_MATMUL;
}

/* x and w of CALL: x [M, K] float, w of x's dtype with K elements. */
static int rnm_norm_ok(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *w = &call->in[1];

	return call->nin == 3 && call->nout == 1 && x->rank == 2 &&
	       cuda_is_float_dtype(x->dtype) && w->dtype == x->dtype &&
	       cuda_numel(w) == x->dim[1];
}

/* h's bytes: x's shape and dtype. */
static size_t rnm_h_bytes(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0];

	return (size_t)(x->dim[0] > 0 ? x->dim[0] : 0) * (size_t)(x->dim[1] > 0 ? x->dim[1] : 0) *
	       cuda_dtype_size(x->dtype);
}

int cuda_product_pick(enum op_id id, const struct op_call *prod)
{
	if (prod->out[0].rank == 2 && prod->out[0].dim[0] == 1 &&
	    cuda_product_usable(id, prod, CUDA_IMPL_GEMV))
		return CUDA_IMPL_GEMV;
	for (int impl = CUDA_IMPL_MMA; impl <= CUDA_IMPL_CUBLAS; impl++)
		if (cuda_product_usable(id, prod, impl))
			return impl;
	return -1;
}

int cuda_rmsnorm_matmul_usable(const struct op_call *call, int impl)
{
	struct op_call prod;
	struct cuda_product p;
	enum op_id id;

	if (!rnm_norm_ok(call))
		return 0;
	rnm_product_call(call, &call->in[0], &prod, &id);
	if (cuda_product_shape(id, &prod, &p, NULL, 0))
		return 0;
	switch (impl) {
	case CUDA_IMPL_RNM_GEMV: {
		const int64_t V = 16 / (int64_t)cuda_dtype_size(p.a->dtype);
		const int mt = smallm_gemv_maxm(p.M);
		return smallm_layout_ok(&p) && p.M <= SM_GEMV_MAX_M && p.K % V == 0 &&
		       mt * (p.K / V) <= RNM_XS_VECS(mt) && cuda_aligned16(p.a) &&
		       cuda_aligned16(p.b) && cuda_aligned16(&call->in[1]);
	}
	case CUDA_IMPL_RNM_SPLIT:
		return cuda_product_pick(id, &prod) >= 0;
	case CUDA_IMPL_RNM_ROWS:
		return smallm_layout_ok(&p) && smallm_rows_takes(&p, 2, true) &&
		       p.K % 8 == 0 && cuda_aligned16(p.a) && cuda_aligned16(p.b) &&
		       cuda_aligned16(&call->in[1]);
	case CUDA_IMPL_RNM_ROWS_SCALED:
		/* rows on a copy of b scaled by w, made once: both weights */
		return cuda_rmsnorm_matmul_usable(call, CUDA_IMPL_RNM_ROWS) &&
		       smallm_b_is_weight(&prod, &p) && cuda_const_bit(call, 1, 0) != 0;
	}
	return 0;
}

int cuda_rmsnorm_matmul_prepare(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                int keep, char *msg, size_t len)
{
	const char *who = "rmsnorm_matmul";

	if (call->impl != CUDA_IMPL_RNM_ROWS_SCALED)
		return 0;
	if (!cuda_rmsnorm_matmul_usable(call, call->impl))
		return cuda_fail(msg, len, "%s: rows_scaled cannot run this call (one token "
		                 "of f16 or bf16, b [N, K] and w both weights)", who);
	if (ctx->packs == NULL)
		return cuda_fail(msg, len, "%s: rows_scaled needs a context that keeps packed "
		                 "weights", who);
	return cuda_pack_make(ctx->packs, &call->in[2], &call->in[1], 1, CUDA_PACK_SCALED, keep,
	                      ctx->stream, msg, len);
}

/* Where h starts in the scratch: behind the product's scratch (counters
 * included) rounded to 256, and never over the counters. */
static size_t rnm_h_offset(enum op_id id, const struct op_call *prod)
{
	size_t b = (cuda_product_scratch_bytes(id, prod) + 255) & ~(size_t)255;

	return b > CUDA_OP_SCRATCH_COUNTER_BYTES ? b : CUDA_OP_SCRATCH_COUNTER_BYTES;
}

size_t cuda_rmsnorm_matmul_scratch_bytes(const struct op_call *call)
{
	struct op_call prod;
	enum op_id id;

	if (!rnm_norm_ok(call))
		return 0;
	rnm_product_call(call, &call->in[0], &prod, &id);
	return rnm_h_offset(id, &prod) + rnm_h_bytes(call);
}

/* The norm kernels' grid: GRID with its column groups cut to what fits on
 * the device at once (KERNEL's blocks a multiprocessor, times the
 * multiprocessors, over the K splits), so that each block forms the
 * normalized tokens once and then takes every gridDim.x-th group. */
template <typename... P>
static dim3 rnm_resident_grid(void (*kernel)(P...), const struct cuda_op_ctx *ctx, dim3 grid)
{
	int per_sm = 0;

	if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, SM_THREADS, 0) !=
	    cudaSuccess) {
		(void)cudaGetLastError();        /* the whole grid is still right */
		return grid;
	}
	const int64_t most = (int64_t)(per_sm > 0 ? per_sm : 1) *
	                     (ctx->sm_count > 0 ? ctx->sm_count : 1) / (int64_t)grid.y;
	if (most >= 1 && (int64_t)grid.x > most)
		grid.x = (unsigned)most;
	return grid;
}

/* Whether the norm's gemv kernel at one token runs ARGS with PIPE (the
 * next group's loads before this one's sums): where a block's K range is
 * one round of the default shape. */
static bool rnm_pipes(const smallm_args &args)
{
	return args.per <= (int64_t)SM_THREADS * SM_GEMV_UN(1);
}

/* rmsnorm_matmul_argmax's pick folded into the product's kernel: the
 * key and the count (in the scratch counters, smallm_amax_finish) and the
 * index out. */
struct rnm_amax {
	unsigned long long *key;
	unsigned           *counter;
	int32_t            *out;
};

static void rnm_amax_args(smallm_args *args, const struct rnm_amax *amax)
{
	args->amax_key = amax->key;
	args->amax_counter = amax->counter;
	args->amax_out = amax->out;
}

/* rmsnorm_matmul_argmax's pick in the norm's gemv kernel of one token, K
 * not split (ARGS' amax_* set), on its resident grid (PIPE where a
 * block's K is one round). A first form also picked in split's product
 * (the plain kernel on the norm's h, a block a column group): the two
 * atomics of each of its 32064 blocks on two words made that kernel
 * 181.5 us a launch in the 1B's step, against 122 for this one
 * (bench/RESULTS.md, thirtieth session). */
template <typename T>
static int rnm_launch_gemv_amax(const struct cuda_op_ctx *ctx, const smallm_args &args,
                                dim3 grid, char *msg, size_t len)
{
	void (*kernel)(smallm_args) =
		rnm_pipes(args) ?
			bcg_smallm_gemv_kernel<T, 1, true, EPI_NONE, true, 4, SM_GEMV_UN(1), true, true>
		: bcg_smallm_gemv_kernel<T, 1, true, EPI_NONE, true, 4, SM_GEMV_UN(1), true>;

	return cuda_launch(ctx, "bcg_smallm_gemv_kernel", kernel,
	                   rnm_resident_grid(kernel, ctx, grid), dim3(SM_THREADS), msg, len, args);
}

template <int EPI, typename T>
static int rnm_launch_gemv(const struct cuda_op_ctx *ctx, const smallm_args &args, int mt,
                           dim3 grid, char *msg, size_t len)
{
	void (*kernel)(smallm_args) =
		mt == 1 && rnm_pipes(args) ?
			bcg_smallm_gemv_kernel<T, 1, true, EPI, true, 4, SM_GEMV_UN(1), false, true>
		: mt == 1 ? bcg_smallm_gemv_kernel<T, 1, true, EPI, true>
		: mt == 2 ? bcg_smallm_gemv_kernel<T, 2, true, EPI, true>
		: mt == 4 ? bcg_smallm_gemv_kernel<T, 4, true, EPI, true>
		: bcg_smallm_gemv_kernel<T, 8, true, EPI, true>;

	return cuda_launch(ctx, "bcg_smallm_gemv_kernel", kernel,
	                   rnm_resident_grid(kernel, ctx, grid), dim3(SM_THREADS), msg, len, args);
}

template <int EPI>
static int rnm_launch(const struct cuda_op_ctx *ctx, int dtype, const smallm_args &args,
                      const struct smallm_plan *pl, char *msg, size_t len)
{
	dim3 grid((unsigned)pl->nblocks, (unsigned)pl->ksplit);

	switch (dtype) {
	case PLAN_DTYPE_F16:
		return rnm_launch_gemv<EPI, __half>(ctx, args, pl->mt, grid, msg, len);
	case PLAN_DTYPE_BF16:
		return rnm_launch_gemv<EPI, __nv_bfloat16>(ctx, args, pl->mt, grid, msg, len);
	default:
		return rnm_launch_gemv<EPI, float>(ctx, args, pl->mt, grid, msg, len);
	}
}

/* rmsnorm_matmul_argmax's pick in the norm's looping gemv kernel planned
 * as PL, where it can run: AMAX, one token, 16-byte units, K not split
 * (the 1B's lm-head: more column groups than the rows kernel takes). 0
 * launched, -1, or 1: not here (nothing launched). */
static int rnm_pick_gemv(const struct cuda_op_ctx *ctx, int dtype, smallm_args args,
                         const struct smallm_plan *pl, const struct rnm_amax *amax, char *msg,
                         size_t len)
{
	if (amax == NULL || args.M != 1 || pl->mt != 1 || pl->ksplit != 1 || !pl->vec)
		return 1;
	const dim3 grid((unsigned)pl->nblocks, 1u);
	rnm_amax_args(&args, amax);
	switch (dtype) {
	case PLAN_DTYPE_F16:
		return rnm_launch_gemv_amax<__half>(ctx, args, grid, msg, len);
	case PLAN_DTYPE_BF16:
		return rnm_launch_gemv_amax<__nv_bfloat16>(ctx, args, grid, msg, len);
	default:
		return rnm_launch_gemv_amax<float>(ctx, args, grid, msg, len);
	}
}

/* rmsnorm_matmul (x, w, b) -> out: "gemv" folds the norm into the gemv
 * kernel's token loads (one kernel; at one token the bulk kernel where
 * it fits, else the rows kernel); "rows" is that fold on the rows kernel
 * alone, one token only: small blocks that load their weight rows into
 * registers before the PDL wait, as gemv did before the bulk kernel,
 * which in some steps the tuner prefers; "rows_scaled" is "rows" on a
 * copy of b with column k times w[k] (CUDA_PACK_SCALED, made by
 * cuda_op_prepare), so that the kernel loads and holds only what the
 * plain product does, and sums the token's squares beside it: the
 * twenty-second session's "rows" lost to "split" by its norm's
 * registers (64 against 40: fewer blocks) or, held to 42, by loading the
 * token and the norm's weights one piece at a time after the wait; "split"
 * runs bcg_rmsnorm_kernel into h in the scratch, behind the product's own
 * scratch, then the product on h (two kernels, any M). rows_scaled's
 * result differs from "rows" by the copy's rounding of w[k] * b[n, k] to
 * b's dtype (2^-9 of it in bf16). */
/* rmsnorm_matmul of CALL as cuda_run_rmsnorm_matmul gives it; with AMAX
 * (not NULL), where one token's product runs on the bulk kernel, or on
 * the looping gemv kernel with K whole, that kernel also picks the
 * largest column into AMAX->out, and *FUSED is set. */
static int rnm_run(const struct op_call *call, const struct cuda_op_ctx *ctx,
                   const struct rnm_amax *amax, bool *fused, char *msg, size_t len)
{
	const char *who = "rmsnorm_matmul";
	const struct op_tensor *x = &call->in[0], *w = &call->in[1];
	struct op_call prod;
	struct cuda_product p;
	enum op_id id;

	if (!rnm_norm_ok(call))
		return cuda_fail(msg, len, "%s: x must be a float [M, K] and w of its dtype with K "
		                 "elements", who);
	rnm_product_call(call, x, &prod, &id);
	if (cuda_product_shape(id, &prod, &p, msg, len))
		return -1;
	if (call->impl < 0 || call->impl >= cuda_impl_count(OP_RMSNORM_MATMUL))
		return cuda_fail(msg, len, "%s: no implementation %d on CUDA", who, call->impl);
	if (!cuda_rmsnorm_matmul_usable(call, call->impl))
		return cuda_fail(msg, len, "%s: implementation %s cannot run M %lld, N %lld, K %lld "
		                 "%s (trans_b %d)", who, cuda_impl_name(OP_RMSNORM_MATMUL, call->impl),
		                 (long long)p.M, (long long)p.N, (long long)p.K,
		                 cuda_dtype_name(x->dtype), p.trans_b);
	if (p.M <= 0 || p.N <= 0)
		return 0;

	if (call->impl == CUDA_IMPL_RNM_GEMV || call->impl == CUDA_IMPL_RNM_ROWS ||
	    call->impl == CUDA_IMPL_RNM_ROWS_SCALED) {
		struct smallm_plan pl;
		int shape = 0;
		smallm_args args;
		const bool rows = smallm_plan_gemv(id, &p, 2, true, ctx->sm_count,
		                                   smallm_default_shape, &pl, &shape);
		if (smallm_args_fill(who, &p, &pl, ctx, &args, msg, len))
			return -1;
		args.w = w->data;
		args.eps = (float)call->attr[RNM_EPS].f;
		args.b_const = cuda_const_bit(&prod, 1, 0) != 0;
		args.w_const = cuda_const_bit(call, 1, 0) != 0;
		const bool silu = id == OP_MATMUL_SILU_MUL;
		if (call->impl == CUDA_IMPL_RNM_ROWS_SCALED) {
			if (smallm_scaled_copy(ctx, &p, w, rows, who, &args.b, msg, len))
				return -1;
			if (silu)
				return smallm_rows_launch<EPI_SILU, SM_NORM_SCALED, 2>(
					ctx, x->dtype, args, shape, msg, len);
			return smallm_rows_launch<EPI_NONE, SM_NORM_SCALED, 2>(ctx, x->dtype, args,
			                                                       shape, msg, len);
		}
		if (rows && call->impl == CUDA_IMPL_RNM_GEMV &&
		    smallm_bulk_fits(&p, silu, true, args.b_const, ctx)) {
			if (amax != NULL && !silu && p.M == 1) {
				rnm_amax_args(&args, amax);
				*fused = true;
				return smallm_bulk_launch<EPI_NONE, true, true>(ctx, x->dtype, args, msg,
				                                                len);
			}
			return silu ? smallm_bulk_launch<EPI_SILU, true>(ctx, x->dtype, args, msg, len)
			            : smallm_bulk_launch<EPI_NONE, true>(ctx, x->dtype, args, msg, len);
		}
		if (rows && silu)
			return smallm_rows_launch<EPI_SILU, SM_NORM_WEIGHTS, 2>(ctx, x->dtype, args,
			                                                        shape, msg, len);
		if (rows)
			return smallm_rows_launch<EPI_NONE, SM_NORM_WEIGHTS, 2>(ctx, x->dtype, args,
			                                                        shape, msg, len);
		if (id == OP_MATMUL_SILU_MUL)
			return rnm_launch<EPI_SILU>(ctx, x->dtype, args, &pl, msg, len);
		const int rc = rnm_pick_gemv(ctx, x->dtype, args, &pl, amax, msg, len);
		if (rc != 1) {
			*fused = rc == 0;
			return rc;
		}
		return rnm_launch<EPI_NONE>(ctx, x->dtype, args, &pl, msg, len);
	}

	/* split: h behind the product's scratch, as the scratch bytes lay out */
	size_t off = rnm_h_offset(id, &prod);
	size_t hb = rnm_h_bytes(call);
	if (!ctx->scratch || ctx->scratch_bytes < off + hb)
		return cuda_fail(msg, len, "%s: needs %zu bytes of scratch, the context has %zu", who,
		                 off + hb, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
	if ((uintptr_t)ctx->scratch % 16 != 0)
		return cuda_fail(msg, len, "%s: scratch is not 16-byte aligned", who);
	struct op_tensor h = *x;
	h.data = static_cast<char *>(ctx->scratch) + off;
	struct op_call norm;
	memset(&norm, 0, sizeof norm);
	norm.nin = 2;
	norm.nout = 1;
	norm.in[0] = *x;
	norm.in[1] = *w;
	norm.out[0] = h;
	norm.attr[NORM_EPS].f = call->attr[RNM_EPS].f;
	norm.graph_safe = call->graph_safe;
	norm.name = call->name;
	if (cuda_run_rmsnorm(&norm, ctx, msg, len))
		return -1;
	rnm_product_call(call, &h, &prod, &id);
	struct cuda_op_ctx pctx = *ctx;
	pctx.scratch_bytes = off;          /* h is not the product's */
	prod.impl = cuda_product_pick(id, &prod);
	if (prod.impl < 0)
		return cuda_fail(msg, len, "%s: no product implementation can run M %lld, N %lld, "
		                 "K %lld", who, (long long)p.M, (long long)p.N, (long long)p.K);
	return cuda_run_product(id, &prod, &pctx, msg, len);
}

extern "C" int cuda_run_rmsnorm_matmul(const struct op_call *call,
                                       const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	bool fused = false;

	return rnm_run(call, ctx, NULL, &fused, msg, len);
}

/* --- rmsnorm_matmul_argmax -------------------------------------------------- */

/* The rmsnorm_matmul (x, w, b) -> out and the argmax (out) -> index of
 * CALL, with implementations RNM and AM. */
static void rna_calls(const struct op_call *call, int rnm_impl, int am_impl,
                      struct op_call *rnm, struct op_call *am)
{
	op_rna_parts(call, rnm, am);           /* the launchers do not read kind */
	rnm->impl = rnm_impl;
	am->impl = am_impl;
}

/* The argmax implementation of the kinds' own kernels that runs AM:
 * split where it can, else row. */
static int rna_argmax_impl(const struct op_call *am)
{
	return cuda_argmax_usable(am, CUDA_IMPL_ARGMAX_SPLIT) ? CUDA_IMPL_ARGMAX_SPLIT
	                                                      : CUDA_IMPL_ARGMAX_ROW;
}

/* IMPL's rmsnorm_matmul implementation: gemv, or split. */
static int rna_rnm_impl(int impl)
{
	return impl == CUDA_IMPL_RNA_SPLIT ? CUDA_IMPL_RNM_SPLIT : CUDA_IMPL_RNM_GEMV;
}

int cuda_rmsnorm_matmul_argmax_usable(const struct op_call *call, int impl)
{
	struct op_call rnm, am;

	if (call->nin != 3 || call->nout != 2 || impl < 0 || impl > CUDA_IMPL_RNA_SPLIT)
		return 0;
	rna_calls(call, rna_rnm_impl(impl), CUDA_IMPL_ARGMAX_ROW, &rnm, &am);
	return cuda_rmsnorm_matmul_usable(&rnm, rnm.impl) && cuda_argmax_usable(&am, am.impl);
}

/* The scratch of the two kinds' launches, one after the other, and of the
 * picking kernels' key and count (the scratch counters): the largest. */
size_t cuda_rmsnorm_matmul_argmax_scratch_bytes(const struct op_call *call)
{
	struct op_call rnm, am;
	size_t a, b, picks = CUDA_OP_SCRATCH_COUNTER_BYTES;

	if (call->nin != 3 || call->nout != 2)
		return 0;
	rna_calls(call, CUDA_IMPL_RNM_GEMV, CUDA_IMPL_ARGMAX_SPLIT, &rnm, &am);
	a = cuda_rmsnorm_matmul_scratch_bytes(&rnm);
	b = cuda_argmax_scratch_bytes(&am);
	return a > b ? (a > picks ? a : picks) : (b > picks ? b : picks);
}

/* rmsnorm_matmul_argmax (x, w, b) -> out, index: "gemv" runs rmsnorm_matmul's
 * gemv, and at one token, where that is the bulk kernel (f16 or bf16, b a
 * weight, few enough column groups) or the looping gemv kernel with K
 * whole (the 1B's lm-head), the kernel's blocks also pick the largest of
 * their columns as stored, by argmax's rule, and the last block to finish
 * stores the pick (smallm_amax_finish): no argmax kernel, which in the
 * 1B's step started after the lm-head's last block and read its 128256
 * logits back (4.63 us exposed a step, bench/RESULTS.md, twenty-eighth
 * session). Elsewhere (the rows kernel, tokens past one, a split K), and
 * in "gemv_apart", the argmax kernel follows; "split" is rmsnorm_matmul's
 * split, then the argmax kernel. The index is argmax's on out either way:
 * the same bits. */
extern "C" int cuda_run_rmsnorm_matmul_argmax(const struct op_call *call,
                                              const struct cuda_op_ctx *ctx, char *msg,
                                              size_t len)
{
	const char *who = "rmsnorm_matmul_argmax";
	struct op_call rnm, am;
	bool fused = false;

	if (call->impl < 0 || call->impl >= cuda_impl_count(OP_RMSNORM_MATMUL_ARGMAX))
		return cuda_fail(msg, len, "%s: no implementation %d on CUDA", who, call->impl);
	if (!cuda_rmsnorm_matmul_argmax_usable(call, call->impl))
		return cuda_fail(msg, len, "%s: implementation %s cannot run these operands", who,
		                 cuda_impl_name(OP_RMSNORM_MATMUL_ARGMAX, call->impl));
	rna_calls(call, rna_rnm_impl(call->impl), CUDA_IMPL_ARGMAX_ROW, &rnm, &am);
	am.impl = rna_argmax_impl(&am);
	if (call->impl == CUDA_IMPL_RNA_GEMV && ctx->scratch != NULL &&
	    ctx->scratch_bytes >= cuda_rmsnorm_matmul_argmax_scratch_bytes(call)) {
		struct rnm_amax amax;
		amax.counter = cuda_scratch_counters(ctx);
		/* the key: 8-byte aligned in the counters, past the count */
		amax.key = reinterpret_cast<unsigned long long *>(amax.counter + 2);
		amax.out = static_cast<int32_t *>(call->out[1].data);
		if (rnm_run(&rnm, ctx, &amax, &fused, msg, len) != 0)
			return -1;
	} else if (rnm_run(&rnm, ctx, NULL, &fused, msg, len) != 0) {
		return -1;
	}
	return fused ? 0 : cuda_run_argmax(&am, ctx, msg, len);
}

/* --- rmsnorm_matmul_rope_kv_write ------------------------------------------- */

/* The rmsnorm_matmul (x, w, b) -> qkv of CALL: qkv [M, QKV] of x's dtype
 * at QKV_DATA (NULL when only its shape matters). */
static void rrk_norm_call(const struct op_call *call, void *qkv_data, struct op_call *rnm)
{
	const struct op_tensor *x = &call->in[RRK_X], *b = &call->in[RRK_B];
	const int tb = call->attr[RRK_TRANS_B].i != 0;

	memset(rnm, 0, sizeof *rnm);
	rnm->kind = NULL;                      /* the launchers do not read it */
	rnm->nin = 3;
	rnm->nout = 1;
	rnm->in[0] = *x;
	rnm->in[1] = call->in[RRK_W];
	rnm->in[2] = *b;
	memset(&rnm->out[0], 0, sizeof rnm->out[0]);
	rnm->out[0].dtype = x->dtype;
	rnm->out[0].rank = 2;
	rnm->out[0].dim[0] = x->rank == 2 ? x->dim[0] : 0;
	rnm->out[0].dim[1] = b->rank == 2 ? (tb ? b->dim[0] : b->dim[1]) : 0;
	rnm->out[0].data = qkv_data;
	rnm->attr[RNM_EPS].f = call->attr[RRK_EPS].f;
	rnm->attr[RNM_TRANS_B].i = tb;
	rnm->attr[RNM_EPILOGUE].i = RNM_EPI_NONE;
	rnm->const_in = cuda_const_bit(call, RRK_W, 1) | cuda_const_bit(call, RRK_B, 2);
	rnm->graph_safe = call->graph_safe;
	rnm->batch = call->batch;
	rnm->name = call->name;
	rnm->impl = CUDA_IMPL_RNM_SPLIT;
}

/* The rope_kv_write (qkv, pos) -> q, k_cache, v_cache of CALL. */
static void rrk_rope_call(const struct op_call *call, const struct op_tensor *qkv,
                          struct op_call *rkv)
{
	*rkv = *call;
	rkv->kind = NULL;
	rkv->ready_in = 0;              /* its bits name CALL's inputs, not these */
	rkv->nin = 2;
	rkv->in[0] = *qkv;
	rkv->in[1] = call->in[RRK_POS];
	memset(&rkv->in[2], 0, sizeof rkv->in[2]);
	memset(&rkv->in[3], 0, sizeof rkv->in[3]);
	rkv->impl = 0;
}

/* The rope side, as rope_kv_write's launch takes it: positions i32 [M],
 * heads, kv_heads >= 1, head_dim within the frequency table and QKV =
 * (H + 2 KVH) D, q [M, H D], caches [S, KVH D] alike, all float. */
static int rrk_rope_ok(const struct op_call *call, int64_t M, int64_t QKV)
{
	const struct op_tensor *pos = &call->in[RRK_POS];
	const struct op_tensor *q = &call->out[0], *kc = &call->out[1], *vc = &call->out[2];
	const int64_t H = call->attr[RKV_HEADS].i, KVH = call->attr[RKV_KV_HEADS].i;
	const int64_t D = call->attr[RKV_HEAD_DIM].i;

	return call->nin == 4 && call->nout == 3 && pos->dtype == PLAN_DTYPE_I32 &&
	       cuda_numel(pos) == M && H >= 1 && KVH >= 1 && D >= 2 && D % 2 == 0 &&
	       D / 2 <= ROPE_MAX_PAIRS && H <= INT_MAX / D && KVH <= INT_MAX / D &&
	       (H + 2 * KVH) * D == QKV && QKV <= INT_MAX / 2 && cuda_is_float_dtype(q->dtype) &&
	       cuda_is_float_dtype(kc->dtype) && cuda_is_float_dtype(vc->dtype) &&
	       cuda_numel(q) == M * H * D && kc->rank == 2 && vc->rank == 2 &&
	       cuda_cols(kc) == KVH * D && cuda_cols(vc) == KVH * D && cuda_rows(vc) == cuda_rows(kc);
}

int cuda_rmsnorm_matmul_rope_kv_write_usable(const struct op_call *call, int impl)
{
	struct op_call rnm;

	if (call->nin != 4 || call->in[RRK_X].rank != 2 || call->in[RRK_B].rank != 2)
		return 0;
	rrk_norm_call(call, NULL, &rnm);
	if (!rrk_rope_ok(call, rnm.out[0].dim[0], rnm.out[0].dim[1]))
		return 0;
	switch (impl) {
	case CUDA_IMPL_RRK_GEMV:
		return call->attr[RKV_HEAD_DIM].i % 4 == 0 &&
		       cuda_rmsnorm_matmul_usable(&rnm, CUDA_IMPL_RNM_GEMV);
	case CUDA_IMPL_RRK_SPLIT:
		return cuda_rmsnorm_matmul_usable(&rnm, CUDA_IMPL_RNM_SPLIT);
	case CUDA_IMPL_RRK_ROWS_SCALED:
		/* gemv's rows kernel on rmsnorm_matmul's rows_scaled copy */
		return call->attr[RKV_HEAD_DIM].i % 4 == 0 &&
		       cuda_rmsnorm_matmul_usable(&rnm, CUDA_IMPL_RNM_ROWS_SCALED);
	}
	return 0;
}

int cuda_rmsnorm_matmul_rope_kv_write_prepare(const struct op_call *call,
                                              const struct cuda_op_ctx *ctx, int keep,
                                              char *msg, size_t len)
{
	struct op_call rnm;

	if (call->impl != CUDA_IMPL_RRK_ROWS_SCALED)
		return 0;
	if (!cuda_rmsnorm_matmul_rope_kv_write_usable(call, call->impl))
		return cuda_fail(msg, len, "rmsnorm_matmul_rope_kv_write: rows_scaled cannot run "
		                 "this call (one token of f16 or bf16, head_dim a multiple of 4, b "
		                 "[QKV, K] and w both weights)");
	rrk_norm_call(call, NULL, &rnm);
	rnm.impl = CUDA_IMPL_RNM_ROWS_SCALED;
	return cuda_rmsnorm_matmul_prepare(&rnm, ctx, keep, msg, len);
}

/* Where qkv starts in the scratch: behind what rmsnorm_matmul's either
 * implementation needs (the product's split sums and counters, h), so
 * that the gemv's split sums and the split's h never meet qkv. */
static size_t rrk_qkv_offset(const struct op_call *rnm)
{
	return (cuda_rmsnorm_matmul_scratch_bytes(rnm) + 255) & ~(size_t)255;
}

size_t cuda_rmsnorm_matmul_rope_kv_write_scratch_bytes(const struct op_call *call)
{
	struct op_call rnm;

	if (call->nin != 4 || call->in[RRK_X].rank != 2 || call->in[RRK_B].rank != 2)
		return 0;
	rrk_norm_call(call, NULL, &rnm);
	const struct op_tensor *qkv = &rnm.out[0];
	return rrk_qkv_offset(&rnm) + (size_t)(qkv->dim[0] > 0 ? qkv->dim[0] : 0) *
	       (size_t)(qkv->dim[1] > 0 ? qkv->dim[1] : 0) * cuda_dtype_size(qkv->dtype);
}

template <typename T>
static int rrk_launch_gemv(const struct cuda_op_ctx *ctx, const smallm_args &args,
                           const smallm_rope &r, int mt, dim3 grid, char *msg, size_t len)
{
	void (*kernel)(smallm_args, smallm_rope) = mt == 1 ? bcg_smallm_gemv_rope_kernel<T, 1>
	                                           : mt == 2 ? bcg_smallm_gemv_rope_kernel<T, 2>
	                                           : mt == 4 ? bcg_smallm_gemv_rope_kernel<T, 4>
	                                           : bcg_smallm_gemv_rope_kernel<T, 8>;

	return cuda_launch(ctx, "bcg_smallm_gemv_rope_kernel", kernel,
	                   rnm_resident_grid(kernel, ctx, grid), dim3(SM_THREADS), msg, len, args,
	                   r);
}

/* rmsnorm_matmul_rope_kv_write (x, w, b, pos) -> q, k_cache, v_cache:
 * "gemv" is one bcg_smallm_gemv_rope_kernel (the norm prologue, the
 * product, the rope epilogue; M <= 8, head_dim % 4 == 0); "split" runs
 * rmsnorm_matmul's split (rmsnorm, then the product) into qkv in the
 * scratch, then rope_kv_write from it (three kernels, any M). */
extern "C" int cuda_run_rmsnorm_matmul_rope_kv_write(const struct op_call *call,
                                                     const struct cuda_op_ctx *ctx, char *msg,
                                                     size_t len)
{
	const char *who = "rmsnorm_matmul_rope_kv_write";
	struct op_call rnm;

	const bool scaled = call->impl == CUDA_IMPL_RRK_ROWS_SCALED;

	if (call->impl != CUDA_IMPL_RRK_GEMV && call->impl != CUDA_IMPL_RRK_SPLIT && !scaled)
		return cuda_fail(msg, len, "%s: no implementation %d on CUDA", who, call->impl);
	if (!cuda_rmsnorm_matmul_rope_kv_write_usable(call, call->impl))
		return cuda_fail(msg, len, "%s: implementation %s cannot run these operands (x [M, "
		                 "K] with M %s, w [K], b [QKV, K], pos i32 [M], q and the caches of "
		                 "heads, kv_heads and head_dim%s)", who,
		                 cuda_impl_name(OP_RMSNORM_MATMUL_ROPE_KV_WRITE, call->impl),
		                 call->impl == CUDA_IMPL_RRK_SPLIT ? "any"
		                 : scaled ? "1 of f16 or bf16 (w and b weights)" : "<= 8",
		                 call->impl == CUDA_IMPL_RRK_SPLIT ? "" : " a multiple of 4");
	rrk_norm_call(call, NULL, &rnm);
	const int64_t M = rnm.out[0].dim[0], QKV = rnm.out[0].dim[1];
	if (M <= 0 || QKV <= 0)
		return 0;
	const size_t off = rrk_qkv_offset(&rnm);

	if (call->impl == CUDA_IMPL_RRK_GEMV || scaled) {
		const struct op_tensor *x = &call->in[RRK_X];
		const int64_t D = call->attr[RKV_HEAD_DIM].i;
		struct op_call prod;
		struct cuda_product p;
		struct smallm_plan pl;
		enum op_id id;
		smallm_args args;
		smallm_rope r;

		rnm_product_call(&rnm, x, &prod, &id);
		if (cuda_product_shape(id, &prod, &p, msg, len))
			return -1;
		int shape = 0;
		const bool rows = smallm_plan_gemv(id, &p, 4, true, ctx->sm_count,
		                                   smallm_default_shape, &pl, &shape);
		if (smallm_args_fill(who, &p, &pl, ctx, &args, msg, len))
			return -1;
		args.b_const = cuda_const_bit(&prod, 1, 0) != 0;
		args.w_const = cuda_const_bit(&rnm, 1, 0) != 0;
		args.out = NULL;                       /* qkv is never stored */
		args.w = call->in[RRK_W].data;
		args.eps = (float)call->attr[RRK_EPS].f;
		args.rope_qk = (call->attr[RKV_HEADS].i + call->attr[RKV_KV_HEADS].i) * D;
		args.rope_d = D;
		memset(&r, 0, sizeof r);
		r.pos = static_cast<const int32_t *>(call->in[RRK_POS].data);
		r.q = call->out[0].data;
		r.kc = call->out[1].data;
		r.vc = call->out[2].data;
		r.dtq = call->out[0].dtype;
		r.dtk = call->out[1].dtype;
		r.dtv = call->out[2].dtype;
		r.H = (int)call->attr[RKV_HEADS].i;
		r.KVH = (int)call->attr[RKV_KV_HEADS].i;
		r.S = cuda_rows(&call->out[1]);
		rope_freqs_fill(&r.freqs, call->attr[RKV_THETA].f, D, &call->attr[RKV_SCALING]);
		if (scaled) {
			if (smallm_scaled_copy(ctx, &p, &call->in[RRK_W], rows, who, &args.b, msg,
			                       len))
				return -1;
			return smallm_rows_launch<EPI_ROPE, SM_NORM_SCALED, 4>(ctx, x->dtype, args,
			                                                       shape, msg, len, r);
		}
		if (rows)
			return smallm_rows_launch<EPI_ROPE, SM_NORM_WEIGHTS, 4>(ctx, x->dtype, args,
			                                                        shape, msg, len, r);
		dim3 grid((unsigned)pl.nblocks, (unsigned)pl.ksplit);
		switch (x->dtype) {
		case PLAN_DTYPE_F16:
			return rrk_launch_gemv<__half>(ctx, args, r, pl.mt, grid, msg, len);
		case PLAN_DTYPE_BF16:
			return rrk_launch_gemv<__nv_bfloat16>(ctx, args, r, pl.mt, grid, msg, len);
		default:
			return rrk_launch_gemv<float>(ctx, args, r, pl.mt, grid, msg, len);
		}
	}

	/* split: qkv behind rmsnorm_matmul's scratch, as the scratch bytes
	 * lay out; rmsnorm_matmul sees only the part before it. */
	const size_t need = cuda_rmsnorm_matmul_rope_kv_write_scratch_bytes(call);
	if (!ctx->scratch || ctx->scratch_bytes < need)
		return cuda_fail(msg, len, "%s: needs %zu bytes of scratch, the context has %zu", who,
		                 need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
	if ((uintptr_t)ctx->scratch % 16 != 0)
		return cuda_fail(msg, len, "%s: scratch is not 16-byte aligned", who);
	rrk_norm_call(call, static_cast<char *>(ctx->scratch) + off, &rnm);
	struct cuda_op_ctx nctx = *ctx;
	nctx.scratch_bytes = off;
	if (cuda_run_rmsnorm_matmul(&rnm, &nctx, msg, len))
		return -1;
	struct op_call rkv;
	rrk_rope_call(call, &rnm.out[0], &rkv);
	return cuda_run_rope_kv_write(&rkv, ctx, msg, len);
}
