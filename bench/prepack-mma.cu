/*
 * bench/prepack-mma.cu - whether a prepacked weight layout makes the
 * small-M tensor-core product faster (issue 22 asks for weights
 * "prepacked at load where that wins").
 *
 * bcgtool's mma kernel (cuda-smallm.cu) reads the weights as checkpoints
 * store them, [N, K] row-major. It permutes k alike in both operands, so
 * that one 16-byte load a lane is a whole fragment pair: one warp load
 * instruction reads 64 bytes from each of 8 rows (rows g of a 16-row
 * tile, then rows g + 8), every byte used. The packed layout stores those
 * 512 bytes next to each other in lane order: for each 16-row tile and
 * 32-k unit, 1 KiB contiguous, rows g first, then rows g + 8; one load
 * instruction reads one contiguous 512-byte run. The lanes get the same
 * elements in both layouts, so the two kernels compute the same sums in
 * the same order: their outputs must agree bit for bit.
 *
 * The kernels are otherwise bcgtool's mma kernel without its epilogues:
 * 16 output columns a block of WARPS warps, the warps' 32-k units
 * interleaved, U units' loads issued before the first mma (bcgtool's U:
 * 4 up to 16 tokens, else 2), the warps' sums added in shared memory, f32
 * out, K split for PER_SM blocks a multiprocessor by bcgtool's rule and
 * the splits merged in split order by the last block of a column group,
 * as bcgtool merges them. The configs (configs[]): bcgtool's mma
 * (row-major, 4 warps, 2 blocks a multiprocessor) and mma_packed (the
 * same, packed), then packed with K whole, 8 warps, 8 units in flight, 4
 * blocks a multiprocessor; and cuBLAS (cublasGemmEx, its default
 * algorithm, f32 out) on the row-major weights. Configs of the same
 * warps and split give the same bits; the others are compared within
 * 1e-3.
 *
 * Timed: the products of a Llama-3.2-1B-shaped step (16 layers of q|k|v
 * 3072 x 2048, o 2048 x 2048, gate|up 16384 x 2048, down 2048 x 8192, then
 * the lm-head 128256 x 2048; bf16; 2.47 GB) at M tokens, chained in one
 * CUDA graph (plain launches), and each product alone (16 launches of it
 * in one graph). Each line: the median over 5 rounds of STEPS graph
 * launches, a launch's time, and the rate over the weights' bytes.
 *
 * Build and run on the GPU machine (it is not part of the build):
 *   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/prepack-mma bench/prepack-mma.cu -lcublas
 *   /tmp/prepack-mma [STEPS]
 */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <vector>

typedef __nv_bfloat16 bf16;

#include "bench-cuda.h"            /* CHECK, bench_fill, bench_capture, bench_graph_us */

#define LAYERS  16
#define HIDDEN  2048
#define VOCAB   128256

struct product {
	const char *name;
	int         n, k;
};

static const product products[] = {
	{ "q|k|v", 3072, HIDDEN }, { "o", HIDDEN, HIDDEN }, { "gate|up", 16384, HIDDEN },
	{ "down", HIDDEN, 8192 },
};

__device__ __forceinline__ uint4 ld_stream(const void *p)
{
	uint4 v;
	asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return v;
}

__device__ __forceinline__ void mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                    uint32_t a3, uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
	             "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
	             : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
	             : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* out [M, N] f32 = x [M, K] . w^T, w [N, K] (PACKED: packed as above).
 * N % 16 == 0, K % 32 == 0. Block (bx, by) takes the 32-k units [by PER,
 * (by + 1) PER): with gridDim.y > 1 each split stores its sums in PART and
 * the last block of a column group to finish (COUNTERS) adds them in
 * split order, as bcgtool's merge does. WARPS warps a block, U units a
 * warp in flight (0: bcgtool's, 4 up to 16 tokens, else 2). */
template <int NT, bool PACKED, int WARPS, int UU>
__global__ void __launch_bounds__(WARPS * 32)
mma_kernel(const bf16 *w, const bf16 *x, float *out, int M, int N, int K, int per, float *part,
           unsigned *counters)
{
	constexpr int THREADS = WARPS * 32;
	constexpr int MT = NT * 8, U = UU ? UU : NT <= 2 ? 4 : 2;
	__shared__ float red[WARPS][16 * MT];
	__shared__ bool last;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int g = lane >> 2, q = lane & 3;
	const int64_t c0 = (int64_t)blockIdx.x * 16, units = K / 32;
	const int64_t step = PACKED ? 512 : 32;         /* elements from one unit to the next */
	const bf16 *wp[2];

#pragma unroll
	for (int h = 0; h < 2; h++)
		wp[h] = PACKED ? w + (int64_t)blockIdx.x * units * 512 + h * 256 + lane * 8
		               : w + (c0 + h * 8 + g) * K + q * 8;
	const bf16 *xrow[NT];
#pragma unroll
	for (int nt = 0; nt < NT; nt++)
		xrow[nt] = x + (int64_t)(nt * 8 + g < M ? nt * 8 + g : M - 1) * K + q * 8;

	float acc[NT][4];
#pragma unroll
	for (int nt = 0; nt < NT; nt++)
#pragma unroll
		for (int c = 0; c < 4; c++)
			acc[nt][c] = 0.0f;
	const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
	const int64_t u0 = (int64_t)blockIdx.y * per;
	const int64_t u1 = u0 + per < units ? u0 + per : units;
	for (int64_t u = u0 + warp; u < u1; u += (int64_t)WARPS * U) {
		uint4 wv[U][2], xv[U][NT];
#pragma unroll
		for (int i = 0; i < U; i++) {
			const int64_t ui = u + (int64_t)i * WARPS;
#pragma unroll
			for (int h = 0; h < 2; h++)
				wv[i][h] = ui < u1 ? ld_stream(wp[h] + ui * step) : zero;
		}
#pragma unroll
		for (int i = 0; i < U; i++) {
			const int64_t ui = u + (int64_t)i * WARPS;
#pragma unroll
			for (int nt = 0; nt < NT; nt++)
				xv[i][nt] = ui < u1 ? *reinterpret_cast<const uint4 *>(xrow[nt] + ui * 32)
				                    : zero;
		}
#pragma unroll
		for (int i = 0; i < U; i++)
#pragma unroll
			for (int st = 0; st < 2; st++)
#pragma unroll
				for (int nt = 0; nt < NT; nt++)
					mma(acc[nt], st ? wv[i][0].z : wv[i][0].x, st ? wv[i][1].z : wv[i][1].x,
					    st ? wv[i][0].w : wv[i][0].y, st ? wv[i][1].w : wv[i][1].y,
					    st ? xv[i][nt].z : xv[i][nt].x, st ? xv[i][nt].w : xv[i][nt].y);
	}
#pragma unroll
	for (int nt = 0; nt < NT; nt++)
#pragma unroll
		for (int c = 0; c < 4; c++)
			red[warp][(g + (c >> 1) * 8) * MT + nt * 8 + 2 * q + (c & 1)] = acc[nt][c];
	__syncthreads();
	for (int e = threadIdx.x; e < 16 * MT; e += THREADS) {
		float v = 0.0f;
#pragma unroll
		for (int k = 0; k < WARPS; k++)
			v += red[k][e];
		red[0][e] = v;
	}
	__syncthreads();
	if (gridDim.y > 1) {
		float *mine = part + ((int64_t)blockIdx.y * gridDim.x + blockIdx.x) * 16 * MT;
		for (int e = threadIdx.x; e < 16 * MT; e += THREADS)
			mine[e] = red[0][e];
		__threadfence();
		__syncthreads();
		if (threadIdx.x == 0)
			last = atomicAdd(&counters[blockIdx.x], 1u) == gridDim.y - 1;
		__syncthreads();
		if (!last)
			return;
		__threadfence();
		for (int e = threadIdx.x; e < 16 * MT; e += THREADS) {
			float v = 0.0f;
			for (unsigned y = 0; y < gridDim.y; y++)
				v += __ldcg(part + ((int64_t)y * gridDim.x + blockIdx.x) * 16 * MT + e);
			red[0][e] = v;
		}
		if (threadIdx.x == 0)
			counters[blockIdx.x] = 0;
		__syncthreads();
	}
	for (int e = threadIdx.x; e < 16 * MT; e += THREADS) {
		const int s = e / MT, m = e % MT;
		if (m < M)
			out[(int64_t)m * N + c0 + s] = red[0][e];
	}
}

/* dst = src [N, K] packed: element j of lane (g, q)'s 16 bytes for half h
 * of unit u of tile t is src row 16 t + 8 h + g, k 32 u + 8 q + j. */
__global__ void pack_kernel(const bf16 *src, bf16 *dst, int N, int K)
{
	const int64_t units = K / 32, total = (int64_t)N * K;

	for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < total;
	     o += (int64_t)gridDim.x * blockDim.x) {
		const int64_t j = o % 8, lane = (o / 8) % 32, h = (o / 256) % 2;
		const int64_t u = (o / 512) % units, t = o / (512 * units);
		const int64_t row = 16 * t + 8 * h + lane / 4, k = 32 * u + 8 * (lane % 4) + j;
		dst[o] = src[row * K + k];
	}
}

struct launch {
	const bf16 *w;          /* row-major */
	const bf16 *wp;         /* packed */
	float      *out;
	int         n, k;
};

/* One way to run the products: the mma kernel in a layout, block shape
 * and split target, or cuBLAS. */
struct config {
	const char *name;
	bool        packed, cublas;
	int         warps, u;           /* u 0: bcgtool's */
	int         per_sm;             /* split K for this many blocks a
	                                   multiprocessor; 0: no split */
};

static const config configs[] = {
	{ "row-major w4", false, false, 4, 0, 2 },   /* bcgtool's mma */
	{ "packed w4", true, false, 4, 0, 2 },       /* bcgtool's mma_packed */
	{ "packed w4 whole", true, false, 4, 0, 0 },
	{ "packed w8", true, false, 8, 0, 2 },
	{ "packed w8 1/sm", true, false, 8, 0, 1 },
	{ "packed w4 u8", true, false, 4, 8, 2 },
	{ "packed w8 u8", true, false, 8, 8, 2 },
	{ "packed w4 4/sm", true, false, 4, 0, 4 },
	{ "cublas", false, true, 0, 0, 0 },
};
#define NCONFIGS ((int)(sizeof configs / sizeof configs[0]))

static int sm_count = 132;
static cublasHandle_t blas;
static float *part;
static unsigned *counters;

/* bcgtool's rule (smallm_plan_split) for PER_SM blocks a multiprocessor:
 * enough splits, each at least 24 units, at most 32. */
static int splits(const launch &l, int per_sm)
{
	const int groups = l.n / 16, units = l.k / 32;
	int ks = per_sm && groups < per_sm * sm_count ? (per_sm * sm_count + groups - 1) / groups : 1;

	ks = std::min(ks, std::max(units / 24, 1));
	return std::max(std::min(ks, 32), 1);
}

template <int NT, bool PACKED, int WARPS, int U>
static void run_t(cudaStream_t s, const std::vector<launch> &ls, const bf16 *x, int M,
                  int per_sm)
{
	for (const launch &l : ls) {
		const int ks = splits(l, per_sm), units = l.k / 32, per = (units + ks - 1) / ks;
		mma_kernel<NT, PACKED, WARPS, U><<<dim3(l.n / 16, (units + per - 1) / per), WARPS * 32,
		                                   0, s>>>(PACKED ? l.wp : l.w, x, l.out, M, l.n, l.k,
		                                           per, part, counters);
	}
}

template <int NT>
static void run_nt(cudaStream_t s, const std::vector<launch> &ls, const bf16 *x, int M,
                   const config &c)
{
	if (!c.packed)
		run_t<NT, false, 4, 0>(s, ls, x, M, c.per_sm);
	else if (c.warps == 4 && c.u == 0)
		run_t<NT, true, 4, 0>(s, ls, x, M, c.per_sm);
	else if (c.warps == 8 && c.u == 0)
		run_t<NT, true, 8, 0>(s, ls, x, M, c.per_sm);
	else if (c.warps == 4)
		run_t<NT, true, 4, 8>(s, ls, x, M, c.per_sm);
	else
		run_t<NT, true, 8, 8>(s, ls, x, M, c.per_sm);
}

static void run_any(cudaStream_t s, const std::vector<launch> &ls, const bf16 *x, int M,
                    const config &c)
{
	if (c.cublas) {
		const float one = 1.0f, zero = 0.0f;
		for (const launch &l : ls)
			if (cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, l.n, M, l.k, &one, l.w,
			                 CUDA_R_16BF, l.k, x, CUDA_R_16BF, l.k, &zero, l.out, CUDA_R_32F,
			                 l.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) !=
			    CUBLAS_STATUS_SUCCESS) {
				fprintf(stderr, "prepack-mma: cublasGemmEx failed\n");
				exit(1);
			}
	} else if (M <= 8) {
		run_nt<1>(s, ls, x, M, c);
	} else if (M <= 16) {
		run_nt<2>(s, ls, x, M, c);
	} else {
		run_nt<4>(s, ls, x, M, c);
	}
}

/* The median over 5 rounds of STEPS launches of the graph of LS: us a launch. */
static double time_graph(cudaStream_t s, const std::vector<launch> &ls, const bf16 *x, int M,
                         const config &c, int steps)
{
	cudaGraphExec_t ge = bench_capture(s, cudaStreamCaptureModeThreadLocal,
	                                   [&](cudaStream_t r) { run_any(r, ls, x, M, c); });
	const double us = bench_graph_us(s, ge, steps, 20);
	CHECK(cudaGraphExecDestroy(ge));
	return us;
}

/* The outputs of LS as host floats, in order. */
static std::vector<float> outputs(const std::vector<launch> &ls, int M)
{
	std::vector<float> r;

	for (const launch &l : ls) {
		std::vector<float> h((size_t)M * l.n);
		CHECK(cudaMemcpy(h.data(), l.out, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
		r.insert(r.end(), h.begin(), h.end());
	}
	return r;
}

int main(int argc, char **argv)
{
	const int steps = argc > 1 ? atoi(argv[1]) : 100;
	const int ms[] = { 8, 16, 32 };
	cudaStream_t s;
	bf16 *x;
	void *ws;
	std::vector<launch> chain;
	std::vector<launch> solo[5];
	std::vector<float *> outs;
	std::vector<bf16 *> weights;
	double bytes = 0.0;

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
	if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS)
		return fprintf(stderr, "prepack-mma: cublasCreate failed\n"), 1;
	CHECK(cudaMalloc(&ws, 32u << 20));
	cublasSetStream(blas, s);
	cublasSetWorkspace(blas, ws, 32u << 20);
	CHECK(cudaMalloc(&part, (size_t)32 * 8192 * 32 * sizeof(float)));
	CHECK(cudaMalloc(&counters, 65536 * sizeof(unsigned)));
	CHECK(cudaMemset(counters, 0, 65536 * sizeof(unsigned)));
	CHECK(cudaMalloc(&x, (size_t)32 * 8192 * sizeof(bf16)));
	bench_fill<bf16><<<1024, 256, 0, s>>>(x, (int64_t)32 * 8192, 7u, 2.0f);
	for (int l = 0; l <= LAYERS; l++) {
		for (int p = 0; p < 4; p++) {
			const product pr = l < LAYERS ? products[p] : product{ "lm_head", VOCAB, HIDDEN };
			if (l == LAYERS && p > 0)
				break;
			const int64_t n = (int64_t)pr.n * pr.k;
			bf16 *w, *wp;
			float *out;
			CHECK(cudaMalloc(&w, n * sizeof(bf16)));
			CHECK(cudaMalloc(&wp, n * sizeof(bf16)));
			CHECK(cudaMalloc(&out, (size_t)32 * pr.n * sizeof(float)));
			bench_fill<bf16><<<4096, 256, 0, s>>>(w, n, 100u + 7u * (uint32_t)(l * 4 + p), 0.06f);
			pack_kernel<<<4096, 256, 0, s>>>(w, wp, pr.n, pr.k);
			CHECK(cudaGetLastError());
			outs.push_back(out);
			weights.push_back(w);
			weights.push_back(wp);
			bytes += (double)n * sizeof(bf16);
			const launch ln = { w, wp, out, pr.n, pr.k };
			chain.push_back(ln);
			std::vector<launch> &so = solo[l < LAYERS ? p : 4];
			if (so.size() < 16)
				so.push_back(ln);
		}
	}
	CHECK(cudaStreamSynchronize(s));
	printf("prepack-mma: %zu products, %.1f MB of bf16 weights a step, %d multiprocessors\n",
	       chain.size(), bytes / 1e6, sm_count);

	for (int mi = 0; mi < 3; mi++) {
		const int M = ms[mi];
		/* Every mma config gives the first one's bits (the sums and the
		 * merge run in one order); cuBLAS is compared loosely. */
		std::vector<float> want;
		for (int ci = 0; ci < NCONFIGS; ci++) {
			run_any(s, chain, x, M, configs[ci]);
			CHECK(cudaStreamSynchronize(s));
			std::vector<float> got = outputs(chain, M);
			if (ci == 0) {
				want = got;
				continue;
			}
			size_t same = 0, close = 0;
			for (size_t i = 0; i < got.size(); i++) {
				same += memcmp(&got[i], &want[i], sizeof(float)) == 0;
				close += fabsf(got[i] - want[i]) <= 1e-3f * (1.0f + fabsf(want[i]));
			}
			printf("M %2d %-16s agrees with row-major on %zu of %zu bit for bit, %zu within "
			       "1e-3\n", M, configs[ci].name, same, got.size(), close);
		}
		for (int ci = 0; ci < NCONFIGS; ci++) {
			const double us = time_graph(s, chain, x, M, configs[ci], steps);
			printf("M %2d %-16s step %8.1f us  %.2f TB/s\n", M, configs[ci].name, us,
			       bytes / us / 1e6);
		}
		for (int p = 0; p < 5; p++) {
			const char *name = p < 4 ? products[p].name : "lm_head";
			const double b = (double)solo[p][0].n * solo[p][0].k * sizeof(bf16) * solo[p].size();
			printf("M %2d %-8s alone:", M, name);
			for (int ci = 0; ci < NCONFIGS; ci++) {
				const double us = time_graph(s, solo[p], x, M, configs[ci], steps);
				printf(" %s %.2f (%.2f TB/s)%s", configs[ci].name, us / solo[p].size(),
				       b / us / 1e6, ci + 1 < NCONFIGS ? "," : "\n");
			}
		}
	}
	for (float *o : outs)
		CHECK(cudaFree(o));
	for (bf16 *w : weights)
		CHECK(cudaFree(w));
	CHECK(cudaFree(x));
	CHECK(cudaFree(part));
	CHECK(cudaFree(counters));
	CHECK(cudaFree(ws));
	cublasDestroy(blas);
	CHECK(cudaStreamDestroy(s));
	return 0;
}
