/*
 * bench/attn-o.cu - whether the o projection is worth folding into
 * attention: a llama-decode-shaped step (32 layers, hidden 1024, 16 heads
 * of 64, FFN 2816, f16, one token, caches of 2048 positions) chained in one
 * CUDA graph under programmatic dependent launch, in two forms:
 *
 *   apart  q|k|v -> attention -> o (+ the residual) -> gate|up -> down,
 *          five kernels a layer, as bcgtool's fused samples run them
 *   fused  q|k|v -> attention with o -> gate|up -> down, four: o's kernel
 *          boundary (its wait, its token's read, its drain) is gone
 *
 * Attention is one thread block cluster of ATT_C blocks a head; each block
 * takes a chunk of the row (its cache rows asked of L2 before the PDL
 * wait), and the cluster's first block merges the blocks' (max, sum, acc)
 * from their shared memory, in rank order. In the fused form each block
 * also loads, before the wait, its share of the head's 64 columns of W_o
 * (1024 / ATT_C rows of them) into registers; once the merge is done it
 * copies the head's 64 outputs from the first block's shared memory and
 * makes its rows' part of o from that head; the parts go to a scratch of
 * [heads][hidden] f32, and of the 16 blocks that make the parts of one
 * range of rows (one a head), the last to count sums the 16 in head order,
 * adds them to the residual and stores it. No grid barrier, one order of
 * sums.
 *
 * The products are one kernel shape: a warp a row (gate and up: a warp a
 * pair), every piece of the row loaded into registers before the wait, the
 * token after it. q|k|v, gate|up and down trigger their successor before
 * their wait, attention and o after it, as bcgtool's kernels do (the
 * thirty-second and thirty-third sessions' measures). No norms: they are
 * folded into the products in bcgtool and cost nothing apart here.
 *
 * Build and run on the GPU machine (it is not part of the build):
 *   nvcc -O3 -arch=sm_90a -std=c++17 -o /tmp/attn-o bench/attn-o.cu
 *   /tmp/attn-o [STEPS [KV...]]      (default 300; kv_len 128 608 1108)
 * Per kv_len: the median step of 5 rounds of STEPS graph launches for each
 * form (apart timed before and after fused, the lower of the two kept, so
 * that drift never favours fused), their ratio, and the largest
 * difference of the residual after one step between the forms (o's sums
 * are ordered otherwise: per head, then over heads), relative to its
 * largest value.
 */
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace cg = cooperative_groups;

#include "bench-cuda.h"            /* CHECK, bench_fill, bench_capture, bench_graph_us */

#define HID    1024             /* hidden */
#define NH     16               /* heads, one kv head each */
#define HD     64               /* head_dim */
#define QKV    (3 * HID)
#define FFN    2816
#define SEQ    2048             /* cache positions */
#define LAYERS 32
#define ATT_C  8                /* blocks a head: a cluster */
#define ATT_T  128              /* attention threads */
#define ORB    (HID / ATT_C)    /* o's rows a block of the fused form */
#define GV_ROWS 4               /* product rows (warps) a block */

static_assert(ORB == ATT_T, "the fused form: one of o's rows a thread");

__device__ __forceinline__ void pdl_wait(void) { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger(void) { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

__device__ __forceinline__ uint4 ld_stream(const void *p)
{
	uint4 v;
	asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return v;
}

__device__ __forceinline__ void widen8(uint4 u, float (&f)[8])
{
	const __half2 *h = reinterpret_cast<const __half2 *>(&u);
#pragma unroll
	for (int i = 0; i < 4; i++) {
		const float2 t = __half22float2(h[i]);
		f[2 * i] = t.x;
		f[2 * i + 1] = t.y;
	}
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
	for (int off = 16; off > 0; off >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, off);
	return v;
}

/* --- the products ----------------------------------------------------------- */

enum { GV_QKV = 0, GV_ADD = 1, GV_SILU = 2 };

struct gv_args {
	const __half *w, *x;    /* weight [N (2N for SILU)][K], token [K] */
	__half *y;              /* ADD: the residual; SILU: the product [N] */
	__half *q, *kc, *vc;    /* QKV: q [HID], the caches [SEQ][HID] */
	int pos, n, k;
};

/* A warp a row (SILU: a pair, gate row r and up row r + N), NP pieces of 8
 * a lane: the row whole in registers before the wait. */
template <int NP, int MODE, bool FIRST>
__global__ void __launch_bounds__(32 * GV_ROWS) gv_kernel(gv_args a)
{
	constexpr int NR = MODE == GV_SILU ? 2 : 1;
	const int lane = threadIdx.x & 31;
	const int row = blockIdx.x * GV_ROWS + (threadIdx.x >> 5);
	const int pieces = a.k / 8;
	const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
	uint4 w[NR][NP];

	if (FIRST)
		pdl_trigger();
#pragma unroll
	for (int s = 0; s < NR; s++)
#pragma unroll
		for (int i = 0; i < NP; i++) {
			const int j = lane + 32 * i;
			w[s][i] = j < pieces ? ld_stream(a.w + ((int64_t)row + s * a.n) * a.k + j * 8)
			                     : zero;
		}
	pdl_wait();
	if (!FIRST)
		pdl_trigger();
	float acc[NR] = {};
#pragma unroll
	for (int i = 0; i < NP; i++) {
		const int j = lane + 32 * i;
		if (j >= pieces)
			break;
		float xf[8];
		widen8(*reinterpret_cast<const uint4 *>(a.x + j * 8), xf);
#pragma unroll
		for (int s = 0; s < NR; s++) {
			float wf[8];
			widen8(w[s][i], wf);
#pragma unroll
			for (int e = 0; e < 8; e++)
				acc[s] = fmaf(wf[e], xf[e], acc[s]);
		}
	}
#pragma unroll
	for (int s = 0; s < NR; s++)
		acc[s] = warp_sum(acc[s]);
	if (lane != 0)
		return;
	if (MODE == GV_QKV) {
		const __half v = __float2half(acc[0]);
		if (row < HID)
			a.q[row] = v;
		else if (row < 2 * HID)
			a.kc[(int64_t)a.pos * HID + row - HID] = v;
		else
			a.vc[(int64_t)a.pos * HID + row - 2 * HID] = v;
	} else if (MODE == GV_ADD) {
		a.y[row] = __float2half(__half2float(a.y[row]) + acc[0]);
	} else {
		const float g = __half2float(__float2half(acc[0]));
		const float u = __half2float(__float2half(acc[1]));
		a.y[row] = __float2half(g / (1.0f + __expf(-g)) * u);
	}
}

/* --- attention, and attention with o ------------------------------------- */

struct at_args {
	const __half *q, *kc, *vc;
	__half *out;            /* apart: the heads' outputs [HID] */
	const __half *wo;       /* fused: W_o [HID][HID] */
	float *part;            /* fused: [NH][HID] */
	unsigned *count;        /* fused: ATT_C counters, zero between launches */
	__half *x;              /* fused: the residual */
	int len;                /* positions attended: kv_len */
};

/* Head blockIdx.x / ATT_C, rank r of its cluster: positions [r c, r c + c)
 * of the row, c = ceil(len / ATT_C), 8 lanes a position (8 dims a lane). */
template <bool FUSED>
__global__ void __launch_bounds__(ATT_T) at_kernel(at_args a)
{
	cg::cluster_group cl = cg::this_cluster();
	const int rank = (int)cl.block_rank();
	const int h = blockIdx.x / ATT_C;
	const int grp = threadIdx.x / 8, sub = threadIdx.x % 8;
	const int chunk = (a.len + ATT_C - 1) / ATT_C;
	const int j0 = rank * chunk, j1 = min(j0 + chunk, a.len);
	__shared__ float gm[ATT_T / 8], gl[ATT_T / 8], gacc[ATT_T / 8][HD];
	__shared__ float bm, bl, bacc[HD];
	__shared__ float hv[HD];        /* the head's outputs, as stored (fused) */
	__shared__ int last;

	/* before the wait: the chunk's rows that earlier steps wrote into L2
	 * (the step's own row, len - 1, is written by q|k|v) */
	for (int j = j0 + threadIdx.x; j < min(j1, a.len - 1); j += ATT_T) {
		asm volatile("prefetch.global.L2 [%0];" ::"l"(a.kc + (int64_t)j * HID + h * HD));
		asm volatile("prefetch.global.L2 [%0];" ::"l"(a.vc + (int64_t)j * HID + h * HD));
	}
	uint4 wo[FUSED ? HD / 8 : 1];
	if (FUSED)   /* row rank * ORB + threadIdx.x of W_o, the head's 64 columns */
#pragma unroll
		for (int i = 0; i < HD / 8; i++)
			wo[i] = ld_stream(a.wo + (int64_t)(rank * ORB + threadIdx.x) * HID + h * HD + i * 8);
	pdl_wait();
	pdl_trigger();

	float qf[8], acc[8] = {}, m = -INFINITY, l = 0.0f;
	widen8(*reinterpret_cast<const uint4 *>(a.q + h * HD + sub * 8), qf);
	const float scale2 = 0.125f * 1.4426950408889634f;
	/* the same trip count for every lane of the block, so that the
	 * shuffles run with whole warps; a group past the chunk reads the
	 * chunk's first row and keeps nothing */
	for (int jb = j0; jb < j1; jb += ATT_T / 8) {
		const int j = jb + grp < j1 ? jb + grp : j0;
		float kf[8], vf[8], s = 0.0f;
		widen8(*reinterpret_cast<const uint4 *>(a.kc + (int64_t)j * HID + h * HD + sub * 8), kf);
		widen8(*reinterpret_cast<const uint4 *>(a.vc + (int64_t)j * HID + h * HD + sub * 8), vf);
#pragma unroll
		for (int e = 0; e < 8; e++)
			s = fmaf(qf[e], kf[e], s);
		s += __shfl_xor_sync(0xffffffffu, s, 4);
		s += __shfl_xor_sync(0xffffffffu, s, 2);
		s += __shfl_xor_sync(0xffffffffu, s, 1);
		if (jb + grp >= j1)
			continue;
		s *= scale2;
		const float mn = fmaxf(m, s), corr = exp2f(m - mn), p = exp2f(s - mn);
		l = l * corr + p;
#pragma unroll
		for (int e = 0; e < 8; e++)
			acc[e] = acc[e] * corr + p * vf[e];
		m = mn;
	}
	if (sub == 0) {
		gm[grp] = m;
		gl[grp] = l;
	}
#pragma unroll
	for (int e = 0; e < 8; e++)
		gacc[grp][sub * 8 + e] = acc[e];
	__syncthreads();
	if (threadIdx.x < HD) {         /* the block's groups, in order */
		float M = -INFINITY, ls = 0.0f, s = 0.0f;
		for (int g = 0; g < ATT_T / 8; g++)
			M = fmaxf(M, gm[g]);
		for (int g = 0; g < ATT_T / 8; g++) {
			const float wg = gm[g] == -INFINITY ? 0.0f : exp2f(gm[g] - M);
			ls += wg * gl[g];
			s += wg * gacc[g][threadIdx.x];
		}
		bacc[threadIdx.x] = s;
		if (threadIdx.x == 0) {
			bm = M;
			bl = ls;
		}
	}
	cl.sync();
	if (rank == 0 && threadIdx.x < HD) {    /* the cluster's blocks, in rank order */
		float M = -INFINITY, ls = 0.0f, s = 0.0f;
		for (int r = 0; r < ATT_C; r++)
			M = fmaxf(M, *cl.map_shared_rank(&bm, r));
		for (int r = 0; r < ATT_C; r++) {
			const float mr = *cl.map_shared_rank(&bm, r);
			const float wr = mr == -INFINITY ? 0.0f : exp2f(mr - M);
			ls += wr * *cl.map_shared_rank(&bl, r);
			s += wr * cl.map_shared_rank(bacc, r)[threadIdx.x];
		}
		const __half o = __float2half(ls > 0.0f ? s / ls : 0.0f);
		if (FUSED)
			hv[threadIdx.x] = __half2float(o);
		else
			a.out[h * HD + threadIdx.x] = o;
	}
	cl.sync();                      /* rank 0's reads done; hv set */
	if (!FUSED)
		return;
	__shared__ float lh[HD];
	if (threadIdx.x < HD)
		lh[threadIdx.x] = cl.map_shared_rank(hv, 0)[threadIdx.x];
	cl.sync();                      /* every block has its copy: rank 0 may leave */
	float s = 0.0f;
#pragma unroll
	for (int i = 0; i < HD / 8; i++) {
		float wf[8];
		widen8(wo[i], wf);
#pragma unroll
		for (int e = 0; e < 8; e++)
			s = fmaf(wf[e], lh[i * 8 + e], s);
	}
	const int row = rank * ORB + threadIdx.x;
	a.part[h * HID + row] = s;
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0)
		last = atomicAdd(&a.count[rank], 1u) == NH - 1;
	__syncthreads();
	if (!last)
		return;
	__threadfence();
	float t = 0.0f;
	for (int g = 0; g < NH; g++)    /* the heads' parts, in head order */
		t += __ldcg(a.part + g * HID + row);
	a.x[row] = __float2half(__half2float(a.x[row]) + t);
	if (threadIdx.x == 0)
		a.count[rank] = 0u;
}

/* --- the step ------------------------------------------------------------- */

struct layer {
	__half *wqkv, *wo, *wgu, *wd, *kc, *vc;
};

struct bufs {
	__half *x, *q, *att, *g;
	float *part;
	unsigned *count;
};

static void launch(cudaStream_t s, const void *fn, int grid, int block, void *arg, bool cluster)
{
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute at[2];
	int n = 0;
	void *args[] = { arg };

	cfg.gridDim = dim3((unsigned)grid);
	cfg.blockDim = dim3((unsigned)block);
	cfg.stream = s;
	at[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at[n++].val.programmaticStreamSerializationAllowed = 1;
	if (cluster) {
		at[n].id = cudaLaunchAttributeClusterDimension;
		at[n].val.clusterDim.x = ATT_C;
		at[n].val.clusterDim.y = 1;
		at[n++].val.clusterDim.z = 1;
	}
	cfg.attrs = at;
	cfg.numAttrs = n;
	CHECK(cudaLaunchKernelExC(&cfg, fn, args));
}

/* One step's launches: FUSED or apart, attention over LEN positions (the
 * step's token at LEN - 1). */
static void step(cudaStream_t s, const std::vector<layer> &ls, const bufs &b, int len, bool fused)
{
	for (const layer &y : ls) {
		gv_args qkv = { y.wqkv, b.x, nullptr, b.q, y.kc, y.vc, len - 1, QKV, HID };
		launch(s, (const void *)gv_kernel<4, GV_QKV, true>, QKV / GV_ROWS, 32 * GV_ROWS, &qkv,
		       false);
		at_args at = { b.q, y.kc, y.vc, b.att, y.wo, b.part, b.count, b.x, len };
		if (fused) {
			launch(s, (const void *)at_kernel<true>, NH * ATT_C, ATT_T, &at, true);
		} else {
			launch(s, (const void *)at_kernel<false>, NH * ATT_C, ATT_T, &at, true);
			gv_args o = { y.wo, b.att, b.x, nullptr, nullptr, nullptr, 0, HID, HID };
			launch(s, (const void *)gv_kernel<4, GV_ADD, false>, HID / GV_ROWS, 32 * GV_ROWS,
			       &o, false);
		}
		gv_args gu = { y.wgu, b.x, b.g, nullptr, nullptr, nullptr, 0, FFN, HID };
		launch(s, (const void *)gv_kernel<4, GV_SILU, true>, FFN / GV_ROWS, 32 * GV_ROWS, &gu,
		       false);
		gv_args d = { y.wd, b.g, b.x, nullptr, nullptr, nullptr, 0, HID, FFN };
		launch(s, (const void *)gv_kernel<11, GV_ADD, true>, HID / GV_ROWS, 32 * GV_ROWS, &d,
		       false);
	}
}

static __half *alloc_fill(int64_t n, uint32_t seed, float scale)
{
	__half *p;
	CHECK(cudaMalloc(&p, n * sizeof(__half)));
	bench_fill<__half><<<1024, 256>>>(p, n, seed, 2.0f * scale);   /* [-scale, scale) */
	CHECK(cudaGetLastError());
	return p;
}

static cudaGraphExec_t capture(cudaStream_t s, const std::vector<layer> &ls, const bufs &b,
                               int len, bool fused)
{
	return bench_capture(s, cudaStreamCaptureModeGlobal,
	                     [&](cudaStream_t c) { step(c, ls, b, len, fused); });
}

/* The residual after one step of each form from the same start: the
 * largest difference, relative to the largest value. */
static double compare(cudaStream_t s, const bufs &b, const __half *x0, cudaGraphExec_t apart,
                      cudaGraphExec_t fused)
{
	std::vector<__half> xa(HID), xf(HID);
	double d = 0.0, big = 0.0;

	/* on S: a device-to-device cudaMemcpy is ordered with the legacy
	 * stream only, and S does not wait for that one */
	CHECK(cudaMemcpyAsync(b.x, x0, HID * sizeof(__half), cudaMemcpyDeviceToDevice, s));
	CHECK(cudaGraphLaunch(apart, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaMemcpy(xa.data(), b.x, HID * sizeof(__half), cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpyAsync(b.x, x0, HID * sizeof(__half), cudaMemcpyDeviceToDevice, s));
	CHECK(cudaGraphLaunch(fused, s));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaMemcpy(xf.data(), b.x, HID * sizeof(__half), cudaMemcpyDeviceToHost));
	for (int i = 0; i < HID; i++) {
		const double va = __half2float(xa[i]), vf = __half2float(xf[i]);
		if (!std::isfinite(va) || !std::isfinite(vf))
			return INFINITY;
		d = std::max(d, std::fabs(va - vf));
		big = std::max(big, std::fabs(va));
	}
	return big > 0.0 ? d / big : d;
}

int main(int argc, char **argv)
{
	const int steps = argc > 1 ? atoi(argv[1]) : 300;
	std::vector<int> lens;
	for (int i = 2; i < argc; i++)
		lens.push_back(atoi(argv[i]));
	if (lens.empty())
		lens = { 128, 608, 1108 };
	for (int len : lens)
		if (len < 1 || len > SEQ) {
			fprintf(stderr, "attn-o: kv_len %d: not in [1, %d]\n", len, SEQ);
			return 2;
		}
	if (steps < 1) {
		fprintf(stderr, "attn-o: steps %d: at least 1\n", steps);
		return 2;
	}

	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	std::vector<layer> ls(LAYERS);
	for (int l = 0; l < LAYERS; l++) {
		ls[l].wqkv = alloc_fill((int64_t)QKV * HID, 100 + l, 0.03125f);
		ls[l].wo = alloc_fill((int64_t)HID * HID, 400 + l, 0.03125f);
		ls[l].wgu = alloc_fill((int64_t)2 * FFN * HID, 500 + l, 0.03125f);
		ls[l].wd = alloc_fill((int64_t)HID * FFN, 600 + l, 0.0188f);
		ls[l].kc = alloc_fill((int64_t)SEQ * HID, 700 + l, 1.0f);
		ls[l].vc = alloc_fill((int64_t)SEQ * HID, 800 + l, 1.0f);
	}
	bufs b;
	__half *x0 = alloc_fill(HID, 7, 1.0f);
	b.x = alloc_fill(HID, 7, 1.0f);
	CHECK(cudaMalloc(&b.q, HID * sizeof(__half)));
	CHECK(cudaMalloc(&b.att, HID * sizeof(__half)));
	CHECK(cudaMalloc(&b.g, FFN * sizeof(__half)));
	CHECK(cudaMalloc(&b.part, (size_t)NH * HID * sizeof(float)));
	CHECK(cudaMalloc(&b.count, ATT_C * sizeof(unsigned)));
	CHECK(cudaMemset(b.count, 0, ATT_C * sizeof(unsigned)));
	CHECK(cudaDeviceSynchronize());

	printf("%-8s %12s %12s %8s %14s\n", "kv_len", "apart us", "fused us", "ratio", "max diff");
	for (int len : lens) {
		cudaGraphExec_t ea = capture(s, ls, b, len, false);
		cudaGraphExec_t ef = capture(s, ls, b, len, true);
		const double diff = compare(s, b, x0, ea, ef);
		const double ta = bench_graph_us(s, ea, steps, 10);
		const double tf = bench_graph_us(s, ef, steps, 10);
		const double ta2 = bench_graph_us(s, ea, steps, 10);
		printf("%-8d %12.2f %12.2f %8.4f %14.3g%s\n", len, std::min(ta, ta2), tf,
		       tf / std::min(ta, ta2), diff, diff > 0.05 ? "  WRONG" : "");
		CHECK(cudaGraphExecDestroy(ea));
		CHECK(cudaGraphExecDestroy(ef));
	}
	return 0;
}
