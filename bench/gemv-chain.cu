/*
 * bench/gemv-chain.cu - what the block design of a one-token product is
 * worth in a whole decode step: the products of a Llama-3.2-1B-shaped
 * step (16 layers of q|k|v, o, gate|up with SiLU, down, then the lm-head;
 * bf16, weights [out, in]) chained in one CUDA graph with programmatic
 * dependent launch, an attention stand-in between q|k|v and o, in several
 * designs, each timed over the same 2.47 GB of weights:
 *
 *   stream  R rows a block; before its wait a block asks L2 for its rows'
 *           bytes (prefetch.global.L2); after the wait it triggers its
 *           successor, then loads its 16-byte pieces and multiplies. This
 *           is the shape of bcgtool's gemv (cuda-smallm.cu).
 *   preload R rows a block; the block triggers its successor first, loads
 *           every piece of its rows into registers, and only then waits;
 *           after the wait it reads the token and multiplies. The loads are
 *           volatile asm, so the compiler cannot sink them past the wait.
 *
 * Every block owns R whole rows: no split of K, no loop, one round of
 * loads. q|k|v, gate|up and the lm-head fold the rms norm of their input
 * into their prologue (each block reduces the token itself, after the
 * wait), as bcgtool's rmsnorm_matmul does; o and down add into the
 * residual.
 *
 * Build and run on the GPU machine (it is not part of the build):
 *   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/gemv-chain bench/gemv-chain.cu
 *   /tmp/gemv-chain [STEPS [DESIGN...]]
 * (DESIGN: indices into the table in main; default all).
 * It prints one line a design: the median step of 5 rounds of STEPS graph
 * launches, the rate over the weights' bytes, and the largest difference
 * of its logits from the first design's (the sums' order differs only
 * within a row, so they agree to bf16 rounding).
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

typedef __nv_bfloat16 bf16;

#define CHECK(call)                                                               \
	do {                                                                      \
		cudaError_t e_ = (call);                                          \
		if (e_ != cudaSuccess) {                                          \
			fprintf(stderr, "gemv-chain: %s:%d: %s: %s\n", __FILE__,  \
			        __LINE__, #call, cudaGetErrorString(e_));         \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

enum { L = 16, H = 2048, QKV = 3072, F = 8192, V = 128256 };
enum { EPI_STORE = 0, EPI_ADD = 1, EPI_SILU = 2, EPI_F32 = 3 };

__device__ __forceinline__ uint4 ld_stream(const void *p)
{
	uint4 v;
	asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return v;
}

__device__ __forceinline__ void pdl_wait(void) { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger(void) { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

__device__ __forceinline__ void widen(const uint4 &v, float (&f)[8])
{
	const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
#pragma unroll
	for (int i = 0; i < 4; i++) {
		float2 t = __bfloat1622float2(h[i]);
		f[2 * i] = t.x;
		f[2 * i + 1] = t.y;
	}
}

/* One token times R rows of w [N or 2N, K], NT threads: NT / R threads a
 * row (whole warps), each with VPT 16-byte pieces of its row (and, for
 * SiLU, of the up row N + j). */
template <int K, int R, int NT, int EPI, bool NORM, bool PRE, bool EARLY>
__global__ void __launch_bounds__(NT) chain_gemv(const bf16 *x, const bf16 *nw, const bf16 *w,
                                                 void *out, int N)
{
	constexpr int TPR = NT / R, VPT = K / 8 / TPR, WPR = TPR / 32, NW = EPI == EPI_SILU ? 2 : 1;
	static_assert(TPR % 32 == 0 && VPT * TPR * 8 == K, "shape");
	const int r = threadIdx.x / TPR, l = threadIdx.x % TPR;
	const int row = blockIdx.x * R + r;
	const bf16 *wr[NW];
	wr[0] = w + (size_t)row * K;
	if (NW == 2)
		wr[NW - 1] = w + (size_t)(N + row) * K;

	uint4 wv[NW][VPT];
	if (EARLY)
		pdl_trigger();
	if (PRE) {
#pragma unroll
		for (int s = 0; s < NW; s++)
#pragma unroll
			for (int i = 0; i < VPT; i++)
				wv[s][i] = ld_stream(wr[s] + (size_t)(l + i * TPR) * 8);
		pdl_wait();
	} else {
		/* the block's rows are contiguous: R * K * 2 bytes a matrix */
		const char *base[NW];
		base[0] = reinterpret_cast<const char *>(w + (size_t)blockIdx.x * R * K);
		if (NW == 2)
			base[NW - 1] = reinterpret_cast<const char *>(w + ((size_t)N + blockIdx.x * R) * K);
		constexpr int LINES = R * K * 2 / 128;
		for (int s = 0; s < NW; s++)
			for (int i = threadIdx.x; i < LINES && i < 256; i += NT)
				asm volatile("prefetch.global.L2 [%0];" :: "l"(base[s] + (size_t)i * 128));
		pdl_wait();
		if (!EARLY)
			pdl_trigger();
#pragma unroll
		for (int s = 0; s < NW; s++)
#pragma unroll
			for (int i = 0; i < VPT; i++)
				wv[s][i] = ld_stream(wr[s] + (size_t)(l + i * TPR) * 8);
	}

	__shared__ float red[NW][R][WPR];
	__shared__ float scale_s;
	uint4 xv[VPT];
#pragma unroll
	for (int i = 0; i < VPT; i++)
		xv[i] = *reinterpret_cast<const uint4 *>(x + (size_t)(l + i * TPR) * 8);
	float sc = 1.0f;
	if (NORM) {
		/* every row's threads hold the whole token: the first row's
		 * threads reduce it for the block */
		float ss = 0.0f;
#pragma unroll
		for (int i = 0; i < VPT; i++) {
			float f[8];
			widen(xv[i], f);
#pragma unroll
			for (int e = 0; e < 8; e++)
				ss = fmaf(f[e], f[e], ss);
		}
#pragma unroll
		for (int o = 16; o > 0; o >>= 1)
			ss += __shfl_xor_sync(0xffffffffu, ss, o);
		if (r == 0 && l % 32 == 0)
			red[0][0][l / 32] = ss;
		__syncthreads();
		if (threadIdx.x == 0) {
			float t = 0.0f;
			for (int i = 0; i < WPR; i++)
				t += red[0][0][i];
			scale_s = rsqrtf(t / K + 1e-5f);
		}
		__syncthreads();
		sc = scale_s;
		__syncthreads();         /* red is the sums' below */
	}

	float acc[NW];
#pragma unroll
	for (int s = 0; s < NW; s++) {
		acc[s] = 0.0f;
#pragma unroll
		for (int i = 0; i < VPT; i++) {
			float wf[8], xf[8];
			widen(wv[s][i], wf);
			widen(xv[i], xf);
			if (NORM) {
				float nf[8];
				widen(*reinterpret_cast<const uint4 *>(nw + (size_t)(l + i * TPR) * 8), nf);
#pragma unroll
				for (int e = 0; e < 8; e++)
					xf[e] = __bfloat162float(__float2bfloat16_rn(xf[e] * sc * nf[e]));
			}
#pragma unroll
			for (int e = 0; e < 8; e++)
				acc[s] = fmaf(wf[e], xf[e], acc[s]);
		}
#pragma unroll
		for (int o = 16; o > 0; o >>= 1)
			acc[s] += __shfl_xor_sync(0xffffffffu, acc[s], o);
		if (l % 32 == 0)
			red[s][r][l / 32] = acc[s];
	}
	__syncthreads();
	if (threadIdx.x < R) {
		const int rr = threadIdx.x, orow = blockIdx.x * R + rr;
		float v[NW];
		for (int s = 0; s < NW; s++) {
			v[s] = 0.0f;
			for (int i = 0; i < WPR; i++)
				v[s] += red[s][rr][i];
		}
		if (EPI == EPI_STORE) {
			static_cast<bf16 *>(out)[orow] = __float2bfloat16_rn(v[0]);
		} else if (EPI == EPI_ADD) {
			bf16 *o = static_cast<bf16 *>(out);
			o[orow] = __float2bfloat16_rn(__bfloat162float(o[orow]) +
			                              __bfloat162float(__float2bfloat16_rn(v[0])));
		} else if (EPI == EPI_SILU) {
			float g = __bfloat162float(__float2bfloat16_rn(v[0]));
			float u = __bfloat162float(__float2bfloat16_rn(v[NW - 1]));
			static_cast<bf16 *>(out)[orow] = __float2bfloat16_rn(g / (1.0f + __expf(-g)) * u);
		} else {
			static_cast<float *>(out)[orow] = v[0];
		}
	}
}

/* The attention stand-in: 32 blocks hold their multiprocessor for about
 * the time bcgtool's T=1 attention takes (5 us), after the wait. */
template <bool EARLY>
__global__ void chain_attention(unsigned long long cycles, bf16 *out)
{
	if (EARLY)
		pdl_trigger();
	pdl_wait();
	if (!EARLY)
		pdl_trigger();
	unsigned long long t0 = clock64();
	while (clock64() - t0 < cycles) {
	}
	if (threadIdx.x == 0)
		out[blockIdx.x] = __float2bfloat16_rn((float)blockIdx.x * 1e-3f);
}

__global__ void fill(bf16 *p, size_t n, unsigned seed, float scale)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		unsigned h = (unsigned)i * 2654435761u ^ seed * 40503u;
		h ^= h >> 15;
		h *= 2246822519u;
		h ^= h >> 13;
		p[i] = __float2bfloat16_rn(((float)(h & 0xffff) / 32768.0f - 1.0f) * scale);
	}
}

struct model {
	bf16 *qkv[L], *o[L], *gu[L], *down[L], *lm, *ones;
	bf16 *h, *q, *attn, *act;
	float *logits;
};

/* One design: the kernels of each product and how they are launched. */
struct design {
	const char *name;
	void (*qkv)(const void *), (*o)(const void *), (*gu)(const void *), (*down)(const void *),
		(*lm)(const void *), (*att)(const void *);
	int r_qkv, r_o, r_gu, r_down, r_lm;
	int nt_qkv, nt_o, nt_gu, nt_down, nt_lm;
	bool pdl;
};

static void launch(cudaStream_t s, bool pdl, const void *fn, int grid, int block, void **args)
{
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute at[1];
	cfg.gridDim = dim3(grid);
	cfg.blockDim = dim3(block);
	cfg.stream = s;
	at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at[0].val.programmaticStreamSerializationAllowed = 1;
	cfg.attrs = at;
	cfg.numAttrs = pdl ? 1 : 0;
	CHECK(cudaLaunchKernelExC(&cfg, fn, args));
}

static void record_step(cudaStream_t s, const design &d, model &m, unsigned long long att_cycles)
{
	int n;
	for (int l = 0; l < L; l++) {
		const bf16 *ones = m.ones;
		n = QKV;
		void *a1[] = {&m.h, (void *)&ones, &m.qkv[l], &m.q, &n};
		launch(s, d.pdl, (const void *)d.qkv, QKV / d.r_qkv, d.nt_qkv, a1);
		void *a2[] = {&att_cycles, &m.attn};
		launch(s, d.pdl, (const void *)d.att, 32, 128, a2);
		n = H;
		void *a3[] = {&m.attn, (void *)&ones, &m.o[l], &m.h, &n};
		launch(s, d.pdl, (const void *)d.o, H / d.r_o, d.nt_o, a3);
		n = F;
		void *a4[] = {&m.h, (void *)&ones, &m.gu[l], &m.act, &n};
		launch(s, d.pdl, (const void *)d.gu, F / d.r_gu, d.nt_gu, a4);
		n = H;
		void *a5[] = {&m.act, (void *)&ones, &m.down[l], &m.h, &n};
		launch(s, d.pdl, (const void *)d.down, H / d.r_down, d.nt_down, a5);
	}
	const bf16 *ones = m.ones;
	n = V;
	void *a6[] = {&m.h, (void *)&ones, &m.lm, &m.logits, &n};
	launch(s, d.pdl, (const void *)d.lm, V / d.r_lm, d.nt_lm, a6);
}

#define K2(tmpl, R, NT, EPI, NORM, PRE, EARLY) \
	((void (*)(const void *))(chain_gemv<tmpl, R, NT, EPI, NORM, PRE, EARLY>))

#define DESIGN(name, R, NT, RD, NTD, PRE, EARLY, PDL)                                          \
	{ name,                                                                                  \
	  K2(H, R, NT, EPI_STORE, true, PRE, EARLY), K2(H, R, NT, EPI_ADD, false, PRE, EARLY),    \
	  K2(H, R, NT, EPI_SILU, true, PRE, EARLY), K2(F, RD, NTD, EPI_ADD, false, PRE, EARLY),   \
	  K2(H, R, NT, EPI_F32, true, PRE, EARLY),                                                \
	  (void (*)(const void *))(chain_attention<EARLY>),                                       \
	  R, R, R, RD, R, NT, NT, NT, NTD, NT, PDL }

int main(int argc, char **argv)
{
	const int steps = argc > 1 ? atoi(argv[1]) : 200;
	cudaDeviceProp prop;
	CHECK(cudaGetDeviceProperties(&prop, 0));
	int clock_khz = 0;
	CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
	const unsigned long long att_cycles = (unsigned long long)clock_khz * 5 / 1000; /* 5 us */

	model m;
	size_t bytes = 0;
	auto alloc = [&](bf16 **p, size_t n, unsigned seed, float scale, bool weight) {
		CHECK(cudaMalloc(p, n * sizeof(bf16)));
		fill<<<1024, 256>>>(*p, n, seed, scale);
		CHECK(cudaGetLastError());
		if (weight)
			bytes += n * sizeof(bf16);
	};
	for (int l = 0; l < L; l++) {
		alloc(&m.qkv[l], (size_t)QKV * H, 100 + l, 0.0221f, true);
		alloc(&m.o[l], (size_t)H * H, 400 + l, 0.0221f, true);
		alloc(&m.gu[l], (size_t)2 * F * H, 500 + l, 0.0221f, true);
		alloc(&m.down[l], (size_t)H * F, 600 + l, 0.011f, true);
	}
	alloc(&m.lm, (size_t)V * H, 1, 1.0f, true);
	alloc(&m.ones, H, 0, 0.0f, false);
	{
		std::vector<bf16> one(H, __float2bfloat16_rn(1.0f));
		CHECK(cudaMemcpy(m.ones, one.data(), H * sizeof(bf16), cudaMemcpyHostToDevice));
	}
	alloc(&m.h, H, 7, 1.0f, false);
	alloc(&m.q, QKV, 8, 0.0f, false);
	alloc(&m.attn, H, 9, 1.0f, false);
	alloc(&m.act, F, 10, 0.0f, false);
	CHECK(cudaMalloc(&m.logits, V * sizeof(float)));
	bf16 *h0;
	CHECK(cudaMalloc(&h0, H * sizeof(bf16)));
	CHECK(cudaMemcpy(h0, m.h, H * sizeof(bf16), cudaMemcpyDeviceToDevice));
	CHECK(cudaDeviceSynchronize());

	static const design designs[] = {
		DESIGN("stream r4 (bcgtool's shape), trigger after wait, pdl", 4, 128, 4, 256, false, false, true),
		DESIGN("stream r4, no pdl", 4, 128, 4, 256, false, false, false),
		DESIGN("stream r2, trigger after wait, pdl", 2, 128, 2, 256, false, false, true),
		DESIGN("preload r2, trigger first, pdl", 2, 128, 2, 256, true, true, true),
		DESIGN("preload r2, trigger after wait, pdl", 2, 128, 2, 256, true, false, true),
		DESIGN("preload r2, no pdl", 2, 128, 2, 256, true, true, false),
		DESIGN("preload r4, trigger first, pdl", 4, 128, 2, 256, true, true, true),
		DESIGN("preload r2 down r1, trigger first, pdl", 2, 128, 1, 128, true, true, true),
		DESIGN("preload r1 nt64, trigger first, pdl", 1, 64, 1, 128, true, true, true),
	};
	const int nd = sizeof designs / sizeof designs[0];
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaEvent_t e0, e1;
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	std::vector<float> ref(V), got(V);

	printf("device: %s, %d SMs; weights %.1f MB; attention stand-in %llu cycles\n", prop.name,
	       prop.multiProcessorCount, bytes / 1e6, att_cycles);
	std::vector<int> pick;
	for (int i = 2; i < argc; i++)
		pick.push_back(atoi(argv[i]));
	if (pick.empty())
		for (int i = 0; i < nd; i++)
			pick.push_back(i);
	for (size_t pi = 0; pi < pick.size(); pi++) {
		const int di = pick[pi];
		if (di < 0 || di >= nd) {
			fprintf(stderr, "gemv-chain: no design %d (0 to %d)\n", di, nd - 1);
			return 2;
		}
		const design &d = designs[di];
		cudaGraph_t g;
		cudaGraphExec_t ge;
		CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
		record_step(s, d, m, att_cycles);
		CHECK(cudaStreamEndCapture(s, &g));
		CHECK(cudaGraphInstantiate(&ge, g, 0));
		/* one step from the same residual, for the logits */
		CHECK(cudaMemcpyAsync(m.h, h0, H * sizeof(bf16), cudaMemcpyDeviceToDevice, s));
		CHECK(cudaGraphLaunch(ge, s));
		CHECK(cudaMemcpyAsync(got.data(), m.logits, V * sizeof(float), cudaMemcpyDeviceToHost, s));
		CHECK(cudaStreamSynchronize(s));
		if (pi == 0)
			ref = got;
		double maxd = 0.0, maxr = 0.0;
		for (int i = 0; i < V; i++) {
			maxd = std::max(maxd, (double)std::fabs(got[i] - ref[i]));
			maxr = std::max(maxr, (double)std::fabs(ref[i]));
		}
		std::vector<float> med;
		for (int round = 0; round < 5; round++) {
			for (int i = 0; i < 20; i++)
				CHECK(cudaGraphLaunch(ge, s));
			CHECK(cudaEventRecord(e0, s));
			for (int i = 0; i < steps; i++)
				CHECK(cudaGraphLaunch(ge, s));
			CHECK(cudaEventRecord(e1, s));
			CHECK(cudaEventSynchronize(e1));
			float ms;
			CHECK(cudaEventElapsedTime(&ms, e0, e1));
			med.push_back(ms * 1000.0f / steps);
		}
		std::sort(med.begin(), med.end());
		printf("%-48s step %8.2f us  (%.2f TB/s)  logits max diff %.3g of %.3g\n", d.name, med[2],
		       bytes / (med[2] * 1e-6) / 1e12, maxd, maxr);
		fflush(stdout);
		CHECK(cudaGraphExecDestroy(ge));
		CHECK(cudaGraphDestroy(g));
	}
	return 0;
}
