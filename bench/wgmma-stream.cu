/*
 * bench/wgmma-stream.cu - a product for 16 to 64 tokens on Hopper's
 * warpgroup tensor-core instruction (wgmma), tokens and weights brought
 * into shared memory by the copy engine, against cuBLAS (issue 22, target
 * 8: the serving step's products at 64 requests run on cuBLAS at about
 * 1 TB/s). The design bcgtool's "wgmma" implementation took
 * (bcgtool/ops/cuda-wgmma.cu, one tile shape of it); this file keeps the
 * shapes and the diagnostics that chose it (bench/RESULTS.md, seventeenth
 * session).
 *
 * out [M, N] = a [M, K] . w^T, w [N, K] as checkpoints store it, M <= 64.
 * The tokens are wgmma's A (its M is 64: one warpgroup, warp w rows 16w ..
 * 16w + 15), the weights its B; both are read by the instruction from
 * shared memory through descriptors.
 *
 * The tokens come by a tensor map (cuTensorMapEncodeTiled): boxes of 64 k
 * and M rounded up to 8 rows, 128-byte swizzle, rows past M zeros. The
 * weights come from a packed copy: tiles of NB rows and KS k, each
 * NB * KS * 2 bytes contiguous, in the order wgmma reads shared memory
 * without swizzle (for each k16 step, each group of 8 rows, the two 8x8
 * core matrices, k 0-7 then 8-15, each 8 rows of 16 bytes): one bulk copy
 * a chunk; core matrices adjacent in K are 128 bytes apart (the
 * descriptor's leading offset), groups of rows 256 (its stride offset).
 *
 * A block: warps 0-3 (one warpgroup) compute, warp 4's first lane copies.
 * The copier fills a ring of stages (as many as fit the blocks aimed at a
 * multiprocessor, at most NSMAX), each on a "full" mbarrier, the weights
 * of the first stages before the PDL wait; the warpgroup waits for a
 * stage, issues its KS / 16 wgmmas, commits, and once the stage before has
 * completed (wgmma.wait_group 1) gives it back on its "empty" mbarrier.
 * Where the tiles are too few for the blocks aimed at, K is split over a
 * thread block cluster of up to 8 (WG_KSMAX caps it): each block writes
 * its f32 sums to its shared memory and pushes every output unit's (8
 * columns of a row) to the unit's owner by st.async; the owner adds the
 * ranks' sums in rank order and stores 16 bytes a unit.
 *
 * Epilogues: none, add (out = x + round(sum)), silu (gate|up: a tile's
 * first NB / 2 rows are gate rows j, the rest the up rows N + j, so one
 * thread holds both sums of a column).
 *
 * Timed: a model's products chained in one CUDA graph under PDL (32
 * layers of the serving sample's q|k|v, o (+x), gate|up (SwiGLU), down
 * (+x), then the lm-head; f16; or 16 layers of the 1B's, bf16), or each
 * alone; cuBLAS (cublasGemmEx, default algorithm) on the unpacked weights
 * the same way, with beta 1 for the adds and the plain product for
 * gate|up (its SwiGLU not counted). Each product is first checked against
 * a plain f32 reference kernel. WG_MODE=1 times the kernels without their
 * merge and stores, WG_MODE=3 with the merge but no stores, WG_MODE=5
 * with each split storing its own sums (timing only, wrong results).
 *
 * Build and run on the GPU machine (not part of the build):
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
 *        -o /tmp/wgs bench/wgmma-stream.cu -lcublas
 *   [WG_MODE=M] [WG_KSMAX=S] /tmp/wgs [serve|1b] [STEPS]
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "bench-cuda.h"            /* CHECK, bench_capture, bench_graph_us */

enum { EPI_NONE = 0, EPI_ADD = 1, EPI_SILU = 2 };

/* --- device helpers ---------------------------------------------------------- */

__device__ __forceinline__ unsigned smem_addr(const void *p)
{
	return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void bar_init(uint64_t *b, unsigned count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(b)), "r"(count)
	             : "memory");
}

__device__ __forceinline__ void bar_expect(uint64_t *b, unsigned bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
	             :: "r"(smem_addr(b)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void bar_arrive(uint64_t *b)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(b)) : "memory");
}

__device__ __forceinline__ void bar_wait(uint64_t *b, unsigned parity)
{
	asm volatile("{\n\t.reg .pred done;\n"
	             "wait_%=:\n\t"
	             "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
	             "@!done bra wait_%=;\n}"
	             :: "r"(smem_addr(b)), "r"(parity) : "memory");
}

__device__ __forceinline__ void bulk_copy(void *dst, const void *src, unsigned bytes, uint64_t *b)
{
	uint64_t pol;
	asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
	             ".L2::cache_hint [%0], [%1], %2, [%3], %4;"
	             :: "r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(b)), "l"(pol)
	             : "memory");
}


/* The box at (K0, ROW0) of tensor map MAP into DST (1024-byte aligned,
 * 128-byte swizzle), counted on B. */
__device__ __forceinline__ void tma_2d(void *dst, const CUtensorMap *map, int k0, int row0,
                                      uint64_t *b)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
	             " [%0], [%1, {%2, %3}], [%4];"
	             :: "r"(smem_addr(dst)), "l"(map), "r"(k0), "r"(row0), "r"(smem_addr(b))
	             : "memory");
}

__device__ __forceinline__ void pdl_wait(void)
{
	asm volatile("griddepcontrol.wait;" ::: "memory");
}

__device__ __forceinline__ void pdl_trigger(void)
{
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

__device__ __forceinline__ void wg_fence(void)
{
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

__device__ __forceinline__ void wg_commit(void)
{
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

template <int N>
__device__ __forceinline__ void wg_wait(void)
{
	asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}

/* Shared-memory matrix descriptor, no swizzle: start, leading (K) and
 * stride (N) byte offsets, each in 16-byte units. */
__device__ __forceinline__ uint64_t wg_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
	return (uint64_t)((addr >> 4) & 0x3fff) | (uint64_t)((lbo >> 4) & 0x3fff) << 16 |
	       (uint64_t)((sbo >> 4) & 0x3fff) << 32;
}


/* D[64, 32] += A . B, both by descriptor; TY the inputs' type. */
#define WG_MMA32_ASM(TY)                                                                         \
	asm volatile("wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY " "                 \
	             "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "                  \
	             "%13, %14, %15}, %16, %17, 1, 1, 1, 0, 0;"                                  \
	             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),   \
	               "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
	               "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])                        \
	             : "l"(adesc), "l"(bdesc))

template <typename T>
__device__ __forceinline__ void wg_mma32(float (&d)[16], uint64_t adesc, uint64_t bdesc)
{
	if constexpr (std::is_same<T, __half>::value)
		WG_MMA32_ASM("f16");
	else
		WG_MMA32_ASM("bf16");
}

#undef WG_MMA32_ASM

/* D[64, 64] += A . B, both by descriptor; TY the inputs' type. */
#define WG_MMA64_ASM(TY)                                                                         \
	asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " "                 \
	             "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "                  \
	             "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, "              \
	             "%25, %26, %27, %28, %29, %30, %31}, %32, %33, 1, 1, 1, 0, 0;"              \
	             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),   \
	               "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
	               "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),          \
	               "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),          \
	               "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]),          \
	               "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])           \
	             : "l"(adesc), "l"(bdesc))

template <typename T>
__device__ __forceinline__ void wg_mma64(float (&d)[32], uint64_t adesc, uint64_t bdesc)
{
	if constexpr (std::is_same<T, __half>::value)
		WG_MMA64_ASM("f16");
	else
		WG_MMA64_ASM("bf16");
}

#undef WG_MMA64_ASM

/* D[64, 128] += A . B, both by descriptor; TY the inputs' type. */
#define WG_MMA128_ASM(TY)                                                                        \
	asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " "                \
	             "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "                  \
	             "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, "              \
	             "%25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, "              \
	             "%37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, "              \
	             "%49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, "              \
	             "%61, %62, %63}, %64, %65, 1, 1, 1, 0, 0;"                                  \
	             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),   \
	               "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
	               "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),          \
	               "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),          \
	               "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]),          \
	               "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),          \
	               "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),          \
	               "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),          \
	               "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]),          \
	               "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]),          \
	               "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),          \
	               "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),          \
	               "+f"(d[62]), "+f"(d[63])                                                  \
	             : "l"(adesc), "l"(bdesc))

template <typename T>
__device__ __forceinline__ void wg_mma128(float (&d)[64], uint64_t adesc, uint64_t bdesc)
{
	if constexpr (std::is_same<T, __half>::value)
		WG_MMA128_ASM("f16");
	else
		WG_MMA128_ASM("bf16");
}

#undef WG_MMA128_ASM

/* wgmma of the tile width NB. */
template <typename T, int NB>
__device__ __forceinline__ void wg_mma(float (&d)[NB / 2], uint64_t adesc, uint64_t bdesc)
{
	if constexpr (NB == 32)
		wg_mma32<T>(d, adesc, bdesc);
	else if constexpr (NB == 64)
		wg_mma64<T>(d, adesc, bdesc);
	else
		wg_mma128<T>(d, adesc, bdesc);
}

/* The source k (within its 32-k unit) of element E of core matrix J (k
 * half) of k16 step T (0 or 1 within the unit): natural order, as the
 * tokens' ldmatrix fragments have it. */
__host__ __device__ __forceinline__ int pack_k(int t, int j, int e)
{
	return 16 * t + 8 * j + e;
}

struct wg_args {
	const void *a, *w, *x;
	void       *out;
	int         M;
	int64_t     N, K;          /* N: output columns (silu: gate's) */
	int         tiles, chunks; /* gridDim.x; K / KS */
	int         per, ksplit;   /* chunks a split; gridDim.y */
	float      *part;          /* [ksplit][tiles][64 * NB] */
	unsigned   *counters;      /* one a tile */
	int         box_rows;      /* the token map's box: M rounded up to 8 */
	int         ns;            /* stages, at most the kernel's NSMAX */
	int         mode;          /* diagnostics (WG_MODE): 0 all, 1 no merge or stores, 3 the
	                              merge without stores, 5 no merge, every split stores */
};

template <typename T>
__device__ __forceinline__ float to_f(T v)
{
	if constexpr (std::is_same<T, __half>::value)
		return __half2float(v);
	else
		return __bfloat162float(v);
}

template <typename T>
__device__ __forceinline__ T from_f(float v)
{
	if constexpr (std::is_same<T, __half>::value)
		return __float2half_rn(v);
	else
		return __float2bfloat16_rn(v);
}


/* The merge's rows of f32 sums: NB + 8 floats, so that the rows a warp's
 * store covers start on different banks. */
template <int NB>
__host__ __device__ constexpr int sum_row()
{
	return NB + 8;
}

/* Grid (tiles, ksplit) with clusters of (1, ksplit), ksplit <= 8; 160
 * threads; p.ns stages, the receive buffer and 1024 bytes of alignment of
 * dynamic shared memory (wg_launch). K % KS == 0, M <= 64; the packed w
 * 16-byte aligned; TOK maps the tokens [M, K] with boxes of 64 k and
 * p.box_rows rows. */
template <typename T, int NB, int KS, int NSMAX, int EPI>
__global__ void __launch_bounds__(160) wg_kernel(const __grid_constant__ CUtensorMap tok, wg_args p)
{
	constexpr int STEPS = KS / 16;
	constexpr unsigned WB = NB * KS * 2;
	/* A stage: the tokens, KS / 64 atoms of box_rows rows of 128 bytes
	 * (1024-byte aligned: box_rows is a multiple of 8), then the weights. */
	const unsigned ATOM = (unsigned)p.box_rows * 128, TBMAX = KS / 64 * ATOM;
	const unsigned STAGE = TBMAX + WB;
	const int NS = p.ns;
	constexpr int R = NB / 2;                       /* accumulators a thread */
	extern __shared__ unsigned char dyn[];
	__shared__ uint64_t full[NSMAX], empty[NSMAX], recv_bar;
	unsigned char *ring = reinterpret_cast<unsigned char *>(
		(reinterpret_cast<uintptr_t>(dyn) + 1023) & ~(uintptr_t)1023);
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int c0 = blockIdx.y * p.per;
	const int nc = min(p.per, p.chunks - c0);
	const int M = p.M;

	if (threadIdx.x == 0) {
		for (int s = 0; s < NS; s++) {
			bar_init(&full[s], 1);
			bar_init(&empty[s], 4);
		}
		bar_init(&recv_bar, 1);
		asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
	}
	__syncthreads();
	/* The merge's units (a row's 8 output columns of the tile): block r of
	 * the cluster owns [e0, e1) and receives every block's sums of them. */
	constexpr int COLS = EPI == EPI_SILU ? NB / 2 : NB;    /* output columns a tile */
	constexpr int CH = COLS / 8;
	constexpr int P = EPI == EPI_SILU ? 16 : 8;            /* floats a unit */
	const int ks = p.mode == 5 ? 1 : p.ksplit, r = p.mode == 5 ? 0 : blockIdx.y;
	const int units = M * CH;
	const int e0 = (int)((int64_t)units * r / ks), e1 = (int)((int64_t)units * (r + 1) / ks);
	float *recv = reinterpret_cast<float *>(ring + NS * STAGE);
	if (ks > 1) {
		if (threadIdx.x == 0)
			bar_expect(&recv_bar, (unsigned)(ks * (e1 - e0) * P * 4));
		/* Peers push into this block only after its barrier is set up. */
		asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
	}

	float d[R];
#pragma unroll
	for (int i = 0; i < R; i++)
		d[i] = 0.0f;

	/* The copier's lane asks for the weights of the first stages before the
	 * PDL wait (nothing writes them). */
	const unsigned char *w = static_cast<const unsigned char *>(p.w) +
	                         ((int64_t)blockIdx.x * p.chunks + c0) * WB;
	const int pre = nc < NS ? nc : NS;
	if (warp == 4 && lane == 0) {
		asm volatile("prefetch.tensormap [%0];" :: "l"(&tok) : "memory");
		for (int c = 0; c < pre; c++) {
			bar_expect(&full[c], WB + TBMAX);
			bulk_copy(ring + c * STAGE + TBMAX, w + (int64_t)c * WB, WB, &full[c]);
		}
	}

	/* Every thread waits for the kernel before, then (add) loads the
	 * residual of its first XP units of the epilogue (below) now, so that
	 * the epilogue does not wait for it. */
	pdl_wait();
	constexpr int XP = 2;
	uint4 xpre[XP];
	if constexpr (EPI == EPI_ADD) {
#pragma unroll
		for (int i = 0; i < XP; i++) {
			const int e = e0 + threadIdx.x + i * (int)blockDim.x;
			const int64_t n = (int64_t)blockIdx.x * NB + 8 * (e % CH);
			xpre[i] = e < e1 && n < p.N
				? *reinterpret_cast<const uint4 *>(static_cast<const T *>(p.x) +
				                                   (int64_t)(e / CH) * p.N + n)
				: make_uint4(0u, 0u, 0u, 0u);
		}
	}
	if (threadIdx.x == 0)
		pdl_trigger();

	if (warp == 4) {
		/* The copier, one lane: the tokens, and the weights of the later
		 * stages. */
		if (lane == 0) {
			for (int c = 0; c < nc; c++) {
				const int s = c % NS;
				if (c >= NS) {
					bar_wait(&empty[s], ((c / NS) - 1) & 1);
					bar_expect(&full[s], WB + TBMAX);
					bulk_copy(ring + s * STAGE + TBMAX, w + (int64_t)c * WB, WB,
					          &full[s]);
				}
#pragma unroll
				for (int at = 0; at < KS / 64; at++)
					tma_2d(ring + s * STAGE + at * ATOM, &tok, (c0 + c) * KS + at * 64,
					       0, &full[s]);
			}
		}
	} else {
		int s = 0, prev = NS - 1;
		unsigned phase = 0;
		for (int c = 0; c < nc; c++) {
			bar_wait(&full[s], phase);
			const unsigned base = smem_addr(ring + s * STAGE);
			wg_fence();
#pragma unroll
			for (int st = 0; st < STEPS; st++) {
				/* A: atom st / 4, k16 step st % 4 within its 128-byte
				 * rows; 128-byte swizzle, 8-row groups 1024 bytes apart. */
				const uint64_t ad = wg_desc(base + (st / 4) * ATOM + (st % 4) * 32, 16,
				                            1024) | (uint64_t)1 << 62;
				const uint64_t bd = wg_desc(base + TBMAX + st * NB * 32, 128, 256);
				wg_mma<T, NB>(d, ad, bd);
			}
			wg_commit();
			if (c > 0) {
				/* chunk c - 1's wgmmas have completed: its stage is free */
				wg_wait<1>();
				if (lane == 0)
					bar_arrive(&empty[prev]);
			}
			prev = s;
			if (++s == NS)
				s = 0, phase ^= 1u;
		}
		wg_wait<0>();
	}

	/* Thread (warp, g, q) of the warpgroup holds rows m0 = 16 warp + g and
	 * m0 + 8 and, for each 8-column group j, columns 8j + 2q, 8j + 2q + 1. */
	const int g = lane >> 2, q = lane & 3;
	const int m0 = 16 * warp + g, m1 = m0 + 8;
	if (p.mode == 1) {
		if (d[0] == 12345.0f && d[R - 1] == 54321.0f)    /* keeps the sums live */
			static_cast<T *>(p.out)[threadIdx.x] = from_f<T>(d[1]);
		return;
	}

	/* The block's own sums [64][SR] into its ring (every stage consumed). */
	constexpr int SR = sum_row<NB>();
	float *sums = reinterpret_cast<float *>(ring);
	if (warp < 4) {
#pragma unroll
		for (int j = 0; j < NB / 8; j++) {
			*reinterpret_cast<float2 *>(sums + m0 * SR + 8 * j + 2 * q) =
				make_float2(d[4 * j], d[4 * j + 1]);
			*reinterpret_cast<float2 *>(sums + m1 * SR + 8 * j + 2 * q) =
				make_float2(d[4 * j + 2], d[4 * j + 3]);
		}
	}
	__syncthreads();
	if (ks > 1) {
		/* Push: every unit's sums to its owner, slot (this rank, unit),
		 * by st.async on the owner's barrier. */
		asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
		const unsigned rl = smem_addr(recv), bl = smem_addr(&recv_bar);
		for (int e = threadIdx.x; e < units; e += blockDim.x) {
			const int m = e / CH, col = 8 * (e % CH);
			const int owner = (int)(((int64_t)(e + 1) * ks - 1) / units);
			const int oe0 = (int)((int64_t)units * owner / ks);
			const int oe1 = (int)((int64_t)units * (owner + 1) / ks);
			const unsigned off = (unsigned)((r * (oe1 - oe0) + (e - oe0)) * P * 4);
			unsigned ra, ba;
			asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(rl + off),
			             "r"(owner));
			asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ba) : "r"(bl),
			             "r"(owner));
#pragma unroll
			for (int i = 0; i < P / 4; i++) {
				const float4 v = *reinterpret_cast<const float4 *>(
					sums + m * SR + col + (i / 2) * (NB / 2) + (i % 2) * 4);
				asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes"
				             ".v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
				             :: "r"(ra + i * 16), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w),
				                "r"(ba) : "memory");
			}
		}
		bar_wait(&recv_bar, 0);
	}
	const int64_t n0 = (int64_t)blockIdx.x * COLS;
	int it = 0;
	for (int e = e0 + threadIdx.x; e < e1; e += blockDim.x, it++) {
		const int m = e / CH, col = 8 * (e % CH);
		float v[8] = {}, u[8] = {};
		if (ks > 1) {
			for (int k = 0; k < ks; k++) {
				const float *pk = recv + (k * (e1 - e0) + (e - e0)) * P;
				const float4 a0 = *reinterpret_cast<const float4 *>(pk);
				const float4 a1 = *reinterpret_cast<const float4 *>(pk + 4);
				v[0] += a0.x, v[1] += a0.y, v[2] += a0.z, v[3] += a0.w;
				v[4] += a1.x, v[5] += a1.y, v[6] += a1.z, v[7] += a1.w;
				if constexpr (EPI == EPI_SILU) {
					const float4 b0 = *reinterpret_cast<const float4 *>(pk + 8);
					const float4 b1 = *reinterpret_cast<const float4 *>(pk + 12);
					u[0] += b0.x, u[1] += b0.y, u[2] += b0.z, u[3] += b0.w;
					u[4] += b1.x, u[5] += b1.y, u[6] += b1.z, u[7] += b1.w;
				}
			}
		} else {
			const float *pk = reinterpret_cast<const float *>(ring) + m * sum_row<NB>() + col;
#pragma unroll
			for (int i = 0; i < 8; i++) {
				v[i] = pk[i];
				if constexpr (EPI == EPI_SILU)
					u[i] = pk[NB / 2 + i];
			}
		}
		if (p.mode == 3) {
			if (v[0] == 12345.0f && u[7] == 54321.0f)
				static_cast<T *>(p.out)[threadIdx.x] = from_f<T>(v[1]);
			continue;
		}
		const int64_t n = n0 + col;
		if (n >= p.N)
			continue;
		const int64_t o = (int64_t)m * p.N + n;
		T res[8];
		uint4 xr;
		if constexpr (EPI == EPI_ADD)
			xr = it == 0 ? xpre[0] : it == 1 ? xpre[1]
			                 : *reinterpret_cast<const uint4 *>(static_cast<const T *>(p.x) + o);
		const T *xs = reinterpret_cast<const T *>(&xr);
#pragma unroll
		for (int i = 0; i < 8; i++) {
			if constexpr (EPI == EPI_NONE) {
				res[i] = from_f<T>(v[i]);
			} else if constexpr (EPI == EPI_ADD) {
				res[i] = from_f<T>(to_f(xs[i]) + to_f(from_f<T>(v[i])));
			} else {
				const float gg = to_f(from_f<T>(v[i]));
				res[i] = from_f<T>(gg / (1.0f + expf(-gg)) * to_f(from_f<T>(u[i])));
			}
		}
		*reinterpret_cast<uint4 *>(static_cast<T *>(p.out) + o) =
			*reinterpret_cast<const uint4 *>(res);
	}
}

/* The packed copy of w [rows, K] (silu: rows = 2N, gate then up) for
 * tiles of NB rows and chunks of KS k: element i of the copy. Rows past
 * the weight's are zeros. */
template <typename T>
__global__ void wg_pack_kernel(const T *w, T *dst, int64_t N, int64_t K, int NB, int KS,
                               bool silu, int64_t total)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
	     i += (int64_t)gridDim.x * blockDim.x) {
		const int e = (int)(i % 8), r = (int)(i / 8 % 8), j = (int)(i / 64 % 2);
		const int64_t rest = i / 128;
		const int64_t gi = rest % (NB / 8), rest2 = rest / (NB / 8);
		const int st = (int)(rest2 % (KS / 16));
		const int64_t chunk = rest2 / (KS / 16);
		const int64_t kc = chunk % (K / KS), tile = chunk / (K / KS);
		const int rr = (int)(gi * 8 + r);
		int64_t row;
		bool ok;
		if (silu) {
			const int64_t col = tile * (NB / 2) + (rr < NB / 2 ? rr : rr - NB / 2);
			ok = col < N;
			row = rr < NB / 2 ? col : N + col;
		} else {
			row = tile * NB + rr;
			ok = row < N;
		}
		const int64_t k = kc * KS + 32 * (st / 2) + pack_k(st % 2, j, e);
		dst[i] = ok ? w[row * K + k] : from_f<T>(0.0f);
	}
}

/* --- the reference ----------------------------------------------------------- */

/* sums [M, rows] f32 = a [M, K] . w [rows, K]^T, one thread an output. */
template <typename T>
__global__ void ref_kernel(const T *a, const T *w, float *sums, int M, int64_t rows, int64_t K)
{
	const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i >= (int64_t)M * rows)
		return;
	const int64_t m = i / rows, n = i % rows;
	float s = 0.0f;
	for (int64_t k = 0; k < K; k++)
		s += to_f(a[m * K + k]) * to_f(w[n * K + k]);
	sums[i] = s;
}

template <typename T>
__global__ void fill_kernel(T *p, int64_t n, uint32_t seed, float scale)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		uint32_t h = (uint32_t)i * 2654435761u ^ seed * 40503u;
		h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
		p[i] = from_f<T>(((float)(h & 0xffff) / 65535.0f - 0.5f) * 2.0f * scale);
	}
}

/* --- the products of a model ------------------------------------------------- */

struct product {
	const char *name;
	int64_t     n, k;       /* silu: n is the gate's columns (the weight has 2n rows) */
	int         epi;
};

struct model {
	const char *name;
	bool        bf16;
	int         layers;
	product     p[5];       /* q|k|v, o, gate|up, down, lm-head */
};

static const model models[] = {
	{ "serve", false, 32,
	  { { "q|k|v", 3072, 1024, EPI_NONE }, { "o", 1024, 1024, EPI_ADD },
	    { "gate|up", 2816, 1024, EPI_SILU }, { "down", 1024, 2816, EPI_ADD },
	    { "lm-head", 32000, 1024, EPI_NONE } } },
	{ "1b", true, 16,
	  { { "q|k|v", 3072, 2048, EPI_NONE }, { "o", 2048, 2048, EPI_ADD },
	    { "gate|up", 8192, 2048, EPI_SILU }, { "down", 2048, 8192, EPI_ADD },
	    { "lm-head", 128256, 2048, EPI_NONE } } },
};

static int64_t weight_rows(const product &p)
{
	return p.epi == EPI_SILU ? 2 * p.n : p.n;
}

/* One launch: the kernel of a config on product P's weight W (packed for
 * the config) at M tokens. */
struct launch {
	const void *a, *w, *x;
	void       *out;
	int         pi;         /* which product */
	int64_t     layer;
};

struct config {
	const char *name;
	int         nb, ks, ns;
	int         bps;        /* blocks a multiprocessor aimed at */
	/* the kernels for none, add, silu */
	const void *fn[3];
	bool        f16;
	size_t      smem;
};

template <typename T, int NB, int KS, int NS>
static config make_config(const char *name, int bps)
{
	config c;
	c.name = name, c.nb = NB, c.ks = KS, c.ns = NS, c.bps = bps;
	c.fn[0] = (const void *)wg_kernel<T, NB, KS, NS, EPI_NONE>;
	c.fn[1] = (const void *)wg_kernel<T, NB, KS, NS, EPI_ADD>;
	c.fn[2] = (const void *)wg_kernel<T, NB, KS, NS, EPI_SILU>;
	c.f16 = std::is_same<T, __half>::value;
	c.smem = 0;
	for (int e = 0; e < 3; e++)
		CHECK(cudaFuncSetAttribute(c.fn[e], cudaFuncAttributeMaxDynamicSharedMemorySize,
		                           220 * 1024));
	return c;
}

static int g_sms, g_mode, g_ksmax = 8;
static PFN_cuTensorMapEncodeTiled_v12000 g_encode;

/* The tokens a [M, K] as boxes of 64 k and BOX rows, 128-byte swizzle;
 * rows past M read as zeros. */
static CUtensorMap token_map(const void *a, bool bf16, int M, int64_t K, int box)
{
	CUtensorMap map;
	const cuuint64_t dims[2] = { (cuuint64_t)K, (cuuint64_t)M };
	const cuuint64_t strides[1] = { (cuuint64_t)K * 2 };
	const cuuint32_t boxd[2] = { 64, (cuuint32_t)box }, es[2] = { 1, 1 };
	CUresult r = g_encode(&map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
	                                 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
	                      2, const_cast<void *>(a), dims, strides, boxd, es,
	                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
	                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
	                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "wgmma-stream: cuTensorMapEncodeTiled: %d\n", (int)r);
		exit(1);
	}
	return map;
}
static float *g_part;
static unsigned *g_counters;

static void wg_launch(const config &c, const product &pr, const void *a, const void *w,
                      const void *x, void *out, int M, cudaStream_t st, bool pdl)
{
	wg_args p;
	const int64_t cols = pr.epi == EPI_SILU ? c.nb / 2 : c.nb;
	p.a = a, p.w = w, p.x = x, p.out = out, p.M = M, p.N = pr.n, p.K = pr.k;
	p.tiles = (int)((pr.n + cols - 1) / cols);
	p.chunks = (int)(pr.k / c.ks);
	int ks = (g_sms * c.bps + p.tiles / 2) / p.tiles;
	ks = std::max(1, std::min(std::min(ks, p.chunks), g_ksmax));
	p.per = (p.chunks + ks - 1) / ks;
	p.ksplit = (p.chunks + p.per - 1) / p.per;
	p.part = g_part, p.counters = g_counters;
	p.mode = g_mode;
	p.box_rows = (M + 7) / 8 * 8;
	/* Stages: as many as fit c.bps blocks a multiprocessor (228 KiB
	 * each, 1 KiB of it the system's a block), at most c.ns. */
	const size_t stage = (size_t)c.ks / 64 * p.box_rows * 128 + (size_t)c.nb * c.ks * 2;
	const size_t units = (size_t)M * cols / 8;
	const size_t recv = p.ksplit > 1 ? (units + p.ksplit) * (pr.epi == EPI_SILU ? 64 : 32) : 0;
	const size_t budget = std::min<size_t>(228 * 1024 / c.bps - 2048, 219 * 1024);
	p.ns = (int)std::min<size_t>(c.ns, (budget - recv) / stage);
	/* The epilogue puts the block's sums [64][nb + 8] f32 in the ring. */
	const size_t sums = (size_t)64 * (c.nb + 8) * 4;
	if ((size_t)p.ns * stage < sums)
		p.ns = (int)((sums + stage - 1) / stage);
	if (p.ns < 2) {
		fprintf(stderr, "wgmma-stream: %s: no room for two stages\n", c.name);
		exit(1);
	}
	const size_t smem = p.ns * stage + recv + 1024;
	CUtensorMap map = token_map(a, !c.f16, M, pr.k, p.box_rows);

	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute at[2];
	cfg.gridDim = dim3(p.tiles, p.ksplit);
	cfg.blockDim = dim3(160);
	cfg.dynamicSmemBytes = smem;
	cfg.stream = st;
	at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at[0].val.programmaticStreamSerializationAllowed = pdl ? 1 : 0;
	at[1].id = cudaLaunchAttributeClusterDimension;
	at[1].val.clusterDim.x = 1;
	at[1].val.clusterDim.y = p.ksplit;
	at[1].val.clusterDim.z = 1;
	cfg.attrs = at, cfg.numAttrs = 2;
	void *args[] = { &map, &p };
	CHECK(cudaLaunchKernelExC(&cfg, c.fn[pr.epi], args));
}

static cublasHandle_t g_cublas;

static void cublas_launch(bool bf16, const product &pr, const void *a, const void *w, void *out,
                          int M, bool add)
{
	const float one = 1.0f, zero = 0.0f;
	const cudaDataType_t dt = bf16 ? CUDA_R_16BF : CUDA_R_16F;
	const int64_t rows = weight_rows(pr);
	cublasStatus_t s = cublasGemmEx(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, M,
	                                (int)pr.k, &one, w, dt, (int)pr.k, a, dt, (int)pr.k,
	                                add ? &one : &zero, out, dt, (int)rows,
	                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (s != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "wgmma-stream: cublasGemmEx: %d\n", (int)s);
		exit(1);
	}
}

template <typename T>
static float host_f(T v);
template <>
float host_f<__half>(__half v) { return __half2float(v); }
template <>
float host_f<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
static float host_round(float v)
{
	if constexpr (std::is_same<T, __half>::value)
		return __half2float(__float2half_rn(v));
	else
		return __bfloat162float(__float2bfloat16_rn(v));
}

/* --- the run ------------------------------------------------------------------ */

template <typename T>
struct weights {
	std::vector<T *> w[5];  /* [product][layer] */
};

template <typename T>
static weights<T> make_weights(const model &md, const config *c, const weights<T> *src)
{
	weights<T> r;
	for (int pi = 0; pi < 5; pi++) {
		const product &pr = md.p[pi];
		const int layers = pi == 4 ? 1 : md.layers;
		for (int l = 0; l < layers; l++) {
			T *p;
			if (!c) {
				const int64_t n = weight_rows(pr) * pr.k;
				CHECK(cudaMalloc(&p, n * sizeof(T)));
				fill_kernel<T><<<1024, 256>>>(p, n, 1000u * pi + l + 1,
				                              1.0f / sqrtf((float)pr.k));
			} else {
				const int64_t cols = pr.epi == EPI_SILU ? c->nb / 2 : c->nb;
				const int64_t tiles = (pr.n + cols - 1) / cols;
				const int64_t total = tiles * c->nb * pr.k;
				CHECK(cudaMalloc(&p, total * sizeof(T)));
				wg_pack_kernel<T><<<1024, 256>>>(src->w[pi][l], p, pr.n, pr.k, c->nb,
				                                  c->ks, pr.epi == EPI_SILU, total);
			}
			CHECK(cudaGetLastError());
			r.w[pi].push_back(p);
		}
	}
	CHECK(cudaDeviceSynchronize());
	return r;
}

template <typename T>
static void free_weights(weights<T> &w)
{
	for (int pi = 0; pi < 5; pi++)
		for (T *p : w.w[pi])
			CHECK(cudaFree(p));
}

/* Config C's product PI (layer 0) at M tokens against the reference: the
 * count of elements off by more than the tolerance. */
template <typename T>
static long check(const model &md, const config &c, const weights<T> &plain,
                  const weights<T> &packed, int pi, int M, const T *a, const T *x, T *out,
                  float *sums)
{
	const product &pr = md.p[pi];
	const int64_t rows = weight_rows(pr);
	CHECK(cudaMemset(out, 0xff, (size_t)64 * pr.n * sizeof(T)));
	wg_launch(c, pr, a, packed.w[pi][0], x, out, M, 0, false);
	CHECK(cudaGetLastError());
	const int64_t outs = (int64_t)M * rows;
	ref_kernel<T><<<(unsigned)((outs + 255) / 256), 256>>>(a, plain.w[pi][0], sums, M, rows,
	                                                        pr.k);
	CHECK(cudaDeviceSynchronize());
	std::vector<float> s((size_t)outs);
	std::vector<T> o((size_t)M * pr.n), xv((size_t)M * pr.n);
	CHECK(cudaMemcpy(s.data(), sums, s.size() * 4, cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpy(o.data(), out, o.size() * sizeof(T), cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpy(xv.data(), x, xv.size() * sizeof(T), cudaMemcpyDeviceToHost));
	long bad = 0;
	for (int m = 0; m < M; m++)
		for (int64_t n = 0; n < pr.n; n++) {
			const float v = s[(size_t)m * rows + n];
			float e;
			if (pr.epi == EPI_NONE) {
				e = host_round<T>(v);
			} else if (pr.epi == EPI_ADD) {
				e = host_round<T>(host_f(xv[(size_t)m * pr.n + n]) + host_round<T>(v));
			} else {
				const float g = host_round<T>(v);
				const float u = host_round<T>(s[(size_t)m * rows + pr.n + n]);
				e = host_round<T>(g / (1.0f + expf(-g)) * u);
			}
			const float got = host_f(o[(size_t)m * pr.n + n]);
			if (!(fabsf(got - e) <= 2e-2f * fabsf(e) + 2e-2f)) {
				if (bad < 3)
					fprintf(stderr, "  %s %s M=%d [%d, %lld]: %g, expected %g\n", c.name,
					        pr.name, M, m, (long long)n, got, e);
				bad++;
			}
		}
	return bad;
}

struct bufs {
	void *h, *att, *x, *qkv, *act, *logits;
};

/* The chain's launches (or product PI's alone, 16 layers of it). */
template <typename T>
static void enqueue(const model &md, const config *c, const weights<T> &w, const bufs &b, int M,
                    cudaStream_t st, int only)
{
	for (int l = 0; l < md.layers; l++) {
		const void *ins[4] = { b.h, b.att, b.h, b.act };
		void *outs[4] = { b.qkv, b.x, b.act, b.x };
		for (int pi = 0; pi < 4; pi++) {
			if (only >= 0 && (pi != only || l >= 16))
				continue;
			const product &pr = md.p[pi];
			if (c)
				wg_launch(*c, pr, ins[pi], w.w[pi][l], b.x, outs[pi], M, st, true);
			else
				cublas_launch(md.bf16, pr, ins[pi], w.w[pi][l], outs[pi], M,
				              pr.epi == EPI_ADD);
		}
	}
	if (only < 0 || only == 4) {
		const int reps = only == 4 ? 4 : 1;
		for (int r = 0; r < reps; r++) {
			if (c)
				wg_launch(*c, md.p[4], b.h, w.w[4][0], nullptr, b.logits, M, st, true);
			else
				cublas_launch(md.bf16, md.p[4], b.h, w.w[4][0], b.logits, M, false);
		}
	}
}

/* Median over 5 rounds of STEPS graph launches: us a launch. */
template <typename T>
static double timed(const model &md, const config *c, const weights<T> &w, const bufs &b, int M,
                    int steps, int only)
{
	cudaStream_t st;
	CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	cublasSetStream(g_cublas, st);
	cudaGraphExec_t ge = bench_capture(st, cudaStreamCaptureModeThreadLocal,
	                                   [&](cudaStream_t s) { enqueue(md, c, w, b, M, s, only); });
	const double us = bench_graph_us(st, ge, steps, 10);
	CHECK(cudaGraphExecDestroy(ge));
	CHECK(cudaStreamDestroy(st));
	return us;
}

template <typename T>
static int run(const model &md, int steps)
{
	std::vector<config> cs;
	cs.push_back(make_config<T, 64, 64, 8>("64x64 b2", 2));
	cs.push_back(make_config<T, 64, 128, 8>("64x128 b2", 2));
	cs.push_back(make_config<T, 128, 64, 8>("128x64 b2", 2));
	cs.push_back(make_config<T, 128, 128, 8>("128x128 b1", 1));
	cs.push_back(make_config<T, 64, 128, 8>("64x128 b1", 1));

	weights<T> plain = make_weights<T>(md, nullptr, nullptr);
	std::vector<weights<T>> packed;
	for (const config &c : cs)
		packed.push_back(make_weights<T>(md, &c, &plain));

	int64_t widest = 0, deepest = 0;
	for (int pi = 0; pi < 5; pi++) {
		widest = std::max(widest, weight_rows(md.p[pi]));
		deepest = std::max(deepest, md.p[pi].k);
	}
	bufs b;
	void **all[] = { &b.h, &b.att, &b.x, &b.qkv, &b.act, &b.logits };
	for (void **p : all) {
		CHECK(cudaMalloc(p, (size_t)64 * std::max(widest, deepest) * sizeof(T)));
		fill_kernel<T><<<256, 256>>>(static_cast<T *>(*p), 64 * std::max(widest, deepest),
		                             77u + (uint32_t)(p - all[0]), 1.0f);
	}
	float *sums;
	CHECK(cudaMalloc(&sums, (size_t)64 * widest * 4));
	CHECK(cudaDeviceSynchronize());

	printf("model %s (%s), %d layers; %d multiprocessors\n", md.name,
	       md.bf16 ? "bf16" : "f16", md.layers, g_sms);
	long bad = 0;
	const int mode = g_mode;
	g_mode = 0;
	const int ms_checked[] = { 1, 16, 37, 64 };
	for (size_t ci = 0; ci < cs.size(); ci++)
		for (int pi = 0; pi < 5; pi++)
			for (int M : ms_checked)
				bad += check(md, cs[ci], plain, packed[ci], pi, M,
				             static_cast<T *>(b.h), static_cast<T *>(b.x),
				             static_cast<T *>(b.logits), sums);
	printf("check: %ld elements off (%zu configs x 5 products x 4 token counts)\n", bad,
	       cs.size());
	if (bad)
		return 1;
	g_mode = mode;
	if (g_mode)
		printf("WG_MODE=%d: %s\n", g_mode,
		       g_mode == 1 ? "no merge, no stores" :
		       g_mode == 3 ? "the merge without its stores" :
		       "no merge, each split stores its own sums (timing only)");

	const int Ms[] = { 16, 32, 64 };
	printf("\nchain (%d layers + lm-head), us a step, median of 5 rounds of %d:\n", md.layers,
	       steps);
	printf("%-14s", "tokens");
	for (int M : Ms)
		printf(" %16d", M);
	printf("\n%-14s", "cuBLAS");
	std::vector<double> base;
	for (int M : Ms) {
		base.push_back(timed(md, nullptr, plain, b, M, steps, -1));
		printf(" %16.1f", base.back());
	}
	printf("\n");
	for (size_t ci = 0; ci < cs.size(); ci++) {
		printf("%-14s", cs[ci].name);
		for (size_t mi = 0; mi < 3; mi++) {
			const double t = timed(md, &cs[ci], packed[ci], b, Ms[mi], steps, -1);
			printf(" %8.1f (%5.3f)", t, t / base[mi]);
		}
		printf("\n");
	}

	printf("\neach product alone (16 layers of it in a graph; the lm-head 4 times), us a "
	       "launch:\n");
	for (int M : Ms) {
		printf("M=%d\n%-14s", M, "");
		for (int pi = 0; pi < 5; pi++)
			printf(" %10s", md.p[pi].name);
		printf("\n%-14s", "cuBLAS");
		for (int pi = 0; pi < 5; pi++)
			printf(" %10.2f", timed(md, nullptr, plain, b, M, steps, pi) / (pi == 4 ? 4 : 16));
		printf("\n");
		for (size_t ci = 0; ci < cs.size(); ci++) {
			printf("%-14s", cs[ci].name);
			for (int pi = 0; pi < 5; pi++)
				printf(" %10.2f",
				       timed(md, &cs[ci], packed[ci], b, M, steps, pi) / (pi == 4 ? 4 : 16));
			printf("\n");
		}
	}
	for (auto &p : packed)
		free_weights(p);
	free_weights(plain);
	return 0;
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "serve";
	const int steps = argc > 2 ? atoi(argv[2]) : 100;
	const model *md = nullptr;
	for (const model &m : models)
		if (!strcmp(m.name, which))
			md = &m;
	if (!md || steps < 1) {
		fprintf(stderr, "usage: wgmma-stream [serve|1b] [STEPS]\n");
		return 2;
	}
	g_mode = getenv("WG_MODE") ? atoi(getenv("WG_MODE")) : 0;
	if (getenv("WG_KSMAX"))
		g_ksmax = std::max(1, std::min(8, atoi(getenv("WG_KSMAX"))));
	printf("K split at most %d\n", g_ksmax);
	cudaDriverEntryPointQueryResult q;
	CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&g_encode, 12000,
	                                       cudaEnableDefault, &q));
	if (q != cudaDriverEntryPointSuccess || !g_encode) {
		fprintf(stderr, "wgmma-stream: no cuTensorMapEncodeTiled\n");
		return 1;
	}
	CHECK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, 0));
	CHECK(cudaMalloc(&g_part, (size_t)256 << 20));
	CHECK(cudaMalloc(&g_counters, 65536 * sizeof(unsigned)));
	CHECK(cudaMemset(g_counters, 0, 65536 * sizeof(unsigned)));
	if (cublasCreate(&g_cublas) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "wgmma-stream: cublasCreate failed\n");
		return 1;
	}
	void *ws;
	CHECK(cudaMalloc(&ws, (size_t)64 << 20));
	cublasSetWorkspace(g_cublas, ws, (size_t)64 << 20);
	return md->bf16 ? run<__nv_bfloat16>(*md, steps) : run<__half>(*md, steps);
}
