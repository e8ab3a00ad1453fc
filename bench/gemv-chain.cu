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
 *   bulk    one block a multiprocessor, a contiguous share of the rows a
 *           block: thread 0 keeps NS stages of STAGE bytes in flight by
 *           cp.async.bulk into shared memory (the first before the wait;
 *           optionally the next KiB into L2 by cp.async.bulk.prefetch, and
 *           the copies marked evict-first), triggering first or after the
 *           wait. This is the design bcgtool's bulk kernel started from
 *           (cuda-smallm.cu), which in the real steps runs two blocks a
 *           multiprocessor and triggers after the wait.
 *
 * Every stream or preload block owns R whole rows: no split of K, no
 * loop, one round of loads. q|k|v, gate|up and the lm-head fold the rms
 * norm of their input into their prologue (each block reduces the token
 * itself, after the wait), as bcgtool's rmsnorm_matmul does; o and down
 * add into the residual.
 *
 * The weight stream's prefetch (any design): the step's weights in the
 * order the products read them are a stream, and launches ask L2 for
 * slices of it ahead of the reads, by cp.async.bulk.prefetch.L2 from one
 * thread a block (a bulk block spreads its share over its stages):
 *   PF_MODE=1  the attention stand-in asks for the next PF_ATT MiB;
 *   PF_MODE=2  every launch asks for the stream up to PF_AHEAD MiB past
 *              the end of its own reads (the stand-in PF_ATT MiB more).
 *
 * Build and run on the GPU machine (it is not part of the build):
 *   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/gemv-chain bench/gemv-chain.cu
 *   [SOLO=1] [PF_MODE=M PF_AHEAD=MiB PF_ATT=MiB] /tmp/gemv-chain [STEPS [DESIGN...]]
 * (DESIGN: indices into the table in main; default all; SOLO also times
 * each product alone, 16 launches of it in one graph).
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
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

typedef __nv_bfloat16 bf16;

#include "bench-cuda.h"            /* CHECK, bench_capture */

enum { L = 16, H = 2048, QKV = 3072, F = 8192, V = 128256 };
enum { EPI_STORE = 0, EPI_ADD = 1, EPI_SILU = 2, EPI_F32 = 3 };

__device__ __forceinline__ uint4 ld_stream(const void *p)
{
	uint4 v;
	asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return v;
}

/* Ask L2 for BYTES from SRC by the copy engine: a hint, nothing owed. */
__device__ __forceinline__ void bulk_prefetch(const void *src, unsigned bytes)
{
	asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(src), "r"(bytes) : "memory");
}

/* A slice of the weight stream (the step's weights in the order the
 * products read them) that one launch asks L2 for, in up to three pieces
 * (it may cross from one weight into the next). */
struct pf_slice {
	const char *p[3];
	unsigned long long n[3];
};

/* Part PART of NPARTS of block B's share (of NB blocks) of slice S, asked
 * of L2 by the calling thread in requests of at most 64 KiB. Shares and
 * parts are whole 256-byte units, so every request is 16-byte aligned. */
__device__ __forceinline__ void pf_issue(const pf_slice &s, unsigned long long b,
                                         unsigned long long nb, unsigned long long part,
                                         unsigned long long nparts)
{
	const unsigned long long tot = s.n[0] + s.n[1] + s.n[2];
	if (tot == 0)
		return;
	const unsigned long long share = ((tot + nb - 1) / nb + 255) & ~255ull;
	const unsigned long long lo = b * share, hi = min(tot, lo + share);
	if (lo >= hi)
		return;
	const unsigned long long plen = ((hi - lo + nparts - 1) / nparts + 255) & ~255ull;
	const unsigned long long a = lo + part * plen, e = min(hi, a + plen);
	unsigned long long base = 0;
	for (int i = 0; i < 3; i++) {
		const unsigned long long x0 = max(a, base), x1 = min(e, base + s.n[i]);
		for (unsigned long long o = x0; o < x1; o += 65536)
			bulk_prefetch(s.p[i] + (o - base), (unsigned)min(65536ull, x1 - o));
		base += s.n[i];
	}
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

/* Out row OROW from the row's sum V (and, for SiLU, the up row's U). */
template <int EPI>
__device__ __forceinline__ void chain_store(void *out, int orow, float v, float u)
{
	if (EPI == EPI_STORE) {
		static_cast<bf16 *>(out)[orow] = __float2bfloat16_rn(v);
	} else if (EPI == EPI_ADD) {
		bf16 *o = static_cast<bf16 *>(out);
		o[orow] = __float2bfloat16_rn(__bfloat162float(o[orow]) +
		                              __bfloat162float(__float2bfloat16_rn(v)));
	} else if (EPI == EPI_SILU) {
		float g = __bfloat162float(__float2bfloat16_rn(v));
		float w = __bfloat162float(__float2bfloat16_rn(u));
		static_cast<bf16 *>(out)[orow] = __float2bfloat16_rn(g / (1.0f + __expf(-g)) * w);
	} else {
		static_cast<float *>(out)[orow] = v;
	}
}

/* One token times R rows of w [N or 2N, K], NT threads: NT / R threads a
 * row (whole warps), each with VPT 16-byte pieces of its row (and, for
 * SiLU, of the up row N + j). */
template <int K, int R, int NT, int EPI, bool NORM, bool PRE, bool EARLY>
__global__ void __launch_bounds__(NT) chain_gemv(const bf16 *x, const bf16 *nw, const bf16 *w,
                                                 void *out, int N, pf_slice pf)
{
	if (threadIdx.x == 0)
		pf_issue(pf, blockIdx.x, gridDim.x, 0, 1);
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
		chain_store<EPI>(out, orow, v[0], v[NW - 1]);
	}
}

/* --- bulk: whole multiprocessors, weights copied to shared memory ------- */

__device__ __forceinline__ unsigned smem_addr(const void *p)
{
	return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void bar_init(unsigned long long *b)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(b)) : "memory");
}

/* Thread 0 arrives on B, owed BYTES by the copies it then starts. */
__device__ __forceinline__ void bar_expect(unsigned long long *b, unsigned bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
	             :: "r"(smem_addr(b)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void bar_wait(unsigned long long *b, unsigned parity)
{
	asm volatile("{\n\t.reg .pred done;\n"
	             "again:\n\t"
	             "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
	             "@!done bra again;\n}"
	             :: "r"(smem_addr(b)), "r"(parity) : "memory");
}

/* BYTES from global SRC to shared DST by the copy engine, counted on B;
 * with FIRST, marked in L2 to be evicted first (the weights are read once
 * a step). */
template <bool FIRST>
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, unsigned bytes,
                                          unsigned long long *b)
{
	if (FIRST) {
		unsigned long long pol;
		asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
		asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
		             ".L2::cache_hint [%0], [%1], %2, [%3], %4;"
		             :: "r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(b)),
		                "l"(pol) : "memory");
	} else {
		asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
		             " [%0], [%1], %2, [%3];"
		             :: "r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(b))
		             : "memory");
	}
}

template <int K, int EPI, int STAGE>
struct bulk_shape {
	static constexpr int NW = EPI == EPI_SILU ? 2 : 1;
	/* output rows a stage: NW weight rows each */
	static constexpr int RPS = STAGE / (NW * K * 2) > 0 ? STAGE / (NW * K * 2) : 1;
	static constexpr int SLOT = NW * RPS * K; /* elements */
};

template <int K, int EPI, int STAGE, int NS, int NT>
constexpr size_t bulk_smem(void)
{
	typedef bulk_shape<K, EPI, STAGE> S;
	return (size_t)NS * S::SLOT * 2 + K * 2 + (NT / 32) * S::NW * S::RPS * 4 + 8 * NS + 8;
}

/* One token times a contiguous share of w's rows, gridDim.x blocks (one a
 * multiprocessor). Thread 0 keeps NS stages of RPS rows in flight by bulk
 * copies into shared memory, the first NS before the wait; every thread
 * multiplies its 16-byte pieces of each row of a stage, and the block
 * sums each row. */
template <int K, int EPI, bool NORM, int STAGE, int NS, int NT, bool EARLY, bool FIRST, int PF>
__global__ void __launch_bounds__(NT, 1) chain_bulk(const bf16 *x, const bf16 *nw, const bf16 *w,
                                                    void *out, int N, pf_slice pf)
{
	typedef bulk_shape<K, EPI, STAGE> S;
	constexpr int NW = S::NW, RPS = S::RPS, P = K / 8, PPT = (P + NT - 1) / NT, WARPS = NT / 32;
	extern __shared__ __align__(128) unsigned char smem[];
	bf16 *ws = reinterpret_cast<bf16 *>(smem);
	bf16 *xs = ws + (size_t)NS * S::SLOT;
	float *red = reinterpret_cast<float *>(xs + K);
	unsigned long long *full = reinterpret_cast<unsigned long long *>(
		(reinterpret_cast<uintptr_t>(red + WARPS * NW * RPS) + 7) & ~(uintptr_t)7);
	__shared__ float scale_s;
	const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
	const int r0 = (int)((long long)blockIdx.x * N / gridDim.x);
	const int r1 = (int)((long long)(blockIdx.x + 1) * N / gridDim.x);
	const int chunks = (r1 - r0 + RPS - 1) / RPS;

	auto issue = [&](int c) {
		const int slot = c % NS, n = min(RPS, r1 - r0 - c * RPS);
		const unsigned bytes = (unsigned)n * K * 2;
		bar_expect(&full[slot], NW * bytes);
		for (int s = 0; s < NW; s++)
			bulk_copy<FIRST>(ws + (size_t)slot * S::SLOT + (size_t)s * RPS * K,
			          w + ((size_t)s * N + r0 + (size_t)c * RPS) * K, bytes, &full[slot]);
	};
	if (EARLY)
		pdl_trigger();
	if (tid == 0) {
		for (int s = 0; s < NS; s++)
			bar_init(&full[s]);
		asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
		for (int c = 0; c < NS && c < chunks; c++) {
			issue(c);
			pf_issue(pf, blockIdx.x, gridDim.x, c, chunks);
		}
		/* and up to PF KiB more of the block's rows into L2 */
		const int pr0 = r0 + NS * RPS, pr1 = min(r1, pr0 + (int)(PF * 1024 / (NW * K * 2)));
		for (int s = 0; s < NW; s++)
			for (int r = pr0; r < pr1; r += 8)
				bulk_prefetch(w + ((size_t)s * N + r) * K, (unsigned)min(8, pr1 - r) * K * 2);
	}
	pdl_wait();
	if (!EARLY)
		pdl_trigger();

	/* the token, normalized where NORM, into shared memory */
	uint4 xv[PPT];
	float ss = 0.0f;
#pragma unroll
	for (int i = 0; i < PPT; i++) {
		const int j = tid + i * NT;
		if (j < P) {
			xv[i] = *reinterpret_cast<const uint4 *>(x + (size_t)j * 8);
			float f[8];
			widen(xv[i], f);
#pragma unroll
			for (int e = 0; e < 8; e++)
				ss = fmaf(f[e], f[e], ss);
		}
	}
	float sc = 1.0f;
	if (NORM) {
#pragma unroll
		for (int o = 16; o > 0; o >>= 1)
			ss += __shfl_xor_sync(0xffffffffu, ss, o);
		if (lane == 0)
			red[warp] = ss;
		__syncthreads();
		if (tid == 0) {
			float t = 0.0f;
			for (int i = 0; i < WARPS; i++)
				t += red[i];
			scale_s = rsqrtf(t / K + 1e-5f);
		}
		__syncthreads();
		sc = scale_s;
	}
#pragma unroll
	for (int i = 0; i < PPT; i++) {
		const int j = tid + i * NT;
		if (j < P) {
			uint4 v = xv[i];
			if (NORM) {
				float f[8], nf[8];
				widen(v, f);
				widen(*reinterpret_cast<const uint4 *>(nw + (size_t)j * 8), nf);
				__nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&v);
#pragma unroll
				for (int e = 0; e < 4; e++)
					h[e] = __floats2bfloat162_rn(f[2 * e] * sc * nf[2 * e],
					                             f[2 * e + 1] * sc * nf[2 * e + 1]);
			}
			reinterpret_cast<uint4 *>(xs)[j] = v;
		}
	}
	__syncthreads();

	for (int c = 0; c < chunks; c++) {
		const int slot = c % NS, n = min(RPS, r1 - r0 - c * RPS);
		bar_wait(&full[slot], (unsigned)(c / NS) & 1u);
		const bf16 *sw = ws + (size_t)slot * S::SLOT;
		float acc[NW][RPS];
#pragma unroll
		for (int s = 0; s < NW; s++)
#pragma unroll
			for (int r = 0; r < RPS; r++)
				acc[s][r] = 0.0f;
#pragma unroll
		for (int i = 0; i < PPT; i++) {
			const int j = tid + i * NT;
			if (j < P) {
				float xf[8];
				widen(reinterpret_cast<const uint4 *>(xs)[j], xf);
#pragma unroll
				for (int s = 0; s < NW; s++)
#pragma unroll
					for (int r = 0; r < RPS; r++) {
						if (r < n) {
							float wf[8];
							widen(reinterpret_cast<const uint4 *>(
								sw + ((size_t)s * RPS + r) * K)[j], wf);
#pragma unroll
							for (int e = 0; e < 8; e++)
								acc[s][r] = fmaf(wf[e], xf[e], acc[s][r]);
						}
					}
			}
		}
#pragma unroll
		for (int s = 0; s < NW; s++)
#pragma unroll
			for (int r = 0; r < RPS; r++) {
				float a = acc[s][r];
#pragma unroll
				for (int o = 16; o > 0; o >>= 1)
					a += __shfl_xor_sync(0xffffffffu, a, o);
				if (lane == 0)
					red[(s * RPS + r) * WARPS + warp] = a;
			}
		__syncthreads();
		/* every thread is done with the slot: refill it */
		if (tid == 0 && c + NS < chunks) {
			issue(c + NS);
			pf_issue(pf, blockIdx.x, gridDim.x, c + NS, chunks);
		}
		if (tid < n) {
			const int orow = r0 + c * RPS + tid;
			float v[NW];
			for (int s = 0; s < NW; s++) {
				v[s] = 0.0f;
				for (int i = 0; i < WARPS; i++)
					v[s] += red[(s * RPS + tid) * WARPS + i];
			}
			chain_store<EPI>(out, orow, v[0], v[NW - 1]);
		}
		__syncthreads();
	}
}

/* The attention stand-in: 32 blocks hold their multiprocessor for about
 * the time bcgtool's T=1 attention takes (5 us), after the wait. */
template <bool EARLY>
__global__ void chain_attention(unsigned long long cycles, bf16 *out, pf_slice pf)
{
	if (threadIdx.x == 0)
		pf_issue(pf, blockIdx.x, gridDim.x, 0, 1);
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
	/* bulk designs: one block a multiprocessor, this much shared memory */
	size_t sm_qkv, sm_o, sm_gu, sm_down, sm_lm;
};

static int n_sm;

static void launch(cudaStream_t s, bool pdl, const void *fn, int grid, int block, void **args,
                   size_t smem = 0)
{
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute at[1];
	if (smem) {
		CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
		grid = n_sm;
	}
	cfg.gridDim = dim3(grid);
	cfg.blockDim = dim3(block);
	cfg.dynamicSmemBytes = smem;
	cfg.stream = s;
	at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
	at[0].val.programmaticStreamSerializationAllowed = 1;
	cfg.attrs = at;
	cfg.numAttrs = pdl ? 1 : 0;
	CHECK(cudaLaunchKernelExC(&cfg, fn, args));
}

/* The weight stream's prefetch (environment): PF_MODE 0 asks L2 for
 * nothing; 1 has the attention stand-in ask for the next PF_ATT MiB of the
 * stream; 2 has every launch ask for the stream up to PF_AHEAD MiB past
 * what it reads itself (the stand-in PF_ATT MiB past that). */
static int pf_mode;
static size_t pf_ahead, pf_att;

/* The weights in the order the products read them. */
struct wstream {
	const char *p[5 * L];
	size_t n[5 * L], total;
	int count;
};

static pf_slice stream_slice(const wstream &ws, size_t a, size_t e)
{
	pf_slice s = {};
	int k = 0;
	size_t base = 0;
	for (int i = 0; i < ws.count && k < 3; base += ws.n[i], i++) {
		const size_t x0 = std::max(a, base), x1 = std::min(e, base + ws.n[i]);
		if (x0 < x1) {
			s.p[k] = ws.p[i] + (x0 - base);
			s.n[k++] = x1 - x0;
		}
	}
	return s;
}

static void record_step(cudaStream_t s, const design &d, model &m, unsigned long long att_cycles)
{
	int n;
	wstream ws = {};
	auto add = [&](const bf16 *p, size_t elems) {
		ws.p[ws.count] = reinterpret_cast<const char *>(p);
		ws.n[ws.count++] = elems * sizeof(bf16);
		ws.total += elems * sizeof(bf16);
	};
	for (int l = 0; l < L; l++) {
		add(m.qkv[l], (size_t)QKV * H);
		add(m.o[l], (size_t)H * H);
		add(m.gu[l], (size_t)2 * F * H);
		add(m.down[l], (size_t)H * F);
	}
	add(m.lm, (size_t)V * H);
	size_t c = 0, f = 0; /* read so far; asked of L2 so far */
	auto next = [&](size_t reads, bool att) {
		size_t target = f;
		if (pf_mode == 1 && att)
			target = std::max(f, c) + pf_att;
		else if (pf_mode == 2)
			target = c + reads + pf_ahead + (att ? pf_att : 0);
		target = std::min(std::max(target, f), ws.total);
		pf_slice sl = stream_slice(ws, std::max(f, pf_mode == 1 ? c : f), target);
		f = target;
		c += reads;
		return sl;
	};
	for (int l = 0; l < L; l++) {
		const bf16 *ones = m.ones;
		pf_slice p1 = next((size_t)QKV * H * 2, false);
		n = QKV;
		void *a1[] = {&m.h, (void *)&ones, &m.qkv[l], &m.q, &n, &p1};
		launch(s, d.pdl, (const void *)d.qkv, QKV / d.r_qkv, d.nt_qkv, a1, d.sm_qkv);
		pf_slice p2 = next(0, true);
		void *a2[] = {&att_cycles, &m.attn, &p2};
		launch(s, d.pdl, (const void *)d.att, 32, 128, a2);
		pf_slice p3 = next((size_t)H * H * 2, false);
		n = H;
		void *a3[] = {&m.attn, (void *)&ones, &m.o[l], &m.h, &n, &p3};
		launch(s, d.pdl, (const void *)d.o, H / d.r_o, d.nt_o, a3, d.sm_o);
		pf_slice p4 = next((size_t)2 * F * H * 2, false);
		n = F;
		void *a4[] = {&m.h, (void *)&ones, &m.gu[l], &m.act, &n, &p4};
		launch(s, d.pdl, (const void *)d.gu, F / d.r_gu, d.nt_gu, a4, d.sm_gu);
		pf_slice p5 = next((size_t)H * F * 2, false);
		n = H;
		void *a5[] = {&m.act, (void *)&ones, &m.down[l], &m.h, &n, &p5};
		launch(s, d.pdl, (const void *)d.down, H / d.r_down, d.nt_down, a5, d.sm_down);
	}
	const bf16 *ones = m.ones;
	pf_slice p6 = next((size_t)V * H * 2, false);
	n = V;
	void *a6[] = {&m.h, (void *)&ones, &m.lm, &m.logits, &n, &p6};
	launch(s, d.pdl, (const void *)d.lm, V / d.r_lm, d.nt_lm, a6, d.sm_lm);
}

/* Each product of design D alone: 16 launches in one graph (the 16
 * layers' weights, or the lm-head 4 times), with D's launch; prints the
 * time a launch and the rate over its weights. */
static void solo(cudaStream_t s, const design &d, model &m, cudaEvent_t e0, cudaEvent_t e1)
{
	static const char *const names[] = {"qkv", "o", "gate_up", "down", "lm_head"};
	for (int k = 0; k < 5; k++) {
		const int reps = k == 4 ? 4 : L;
		size_t wbytes = 0;
		cudaGraph_t g;
		cudaGraphExec_t ge;
		CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
		for (int l = 0; l < reps; l++) {
			const bf16 *ones = m.ones;
			pf_slice np = {};
			int n;
			if (k == 0) {
				n = QKV;
				void *a[] = {&m.h, (void *)&ones, &m.qkv[l], &m.q, &n, &np};
				launch(s, d.pdl, (const void *)d.qkv, QKV / d.r_qkv, d.nt_qkv, a, d.sm_qkv);
				wbytes += (size_t)QKV * H * 2;
			} else if (k == 1) {
				n = H;
				void *a[] = {&m.attn, (void *)&ones, &m.o[l], &m.h, &n, &np};
				launch(s, d.pdl, (const void *)d.o, H / d.r_o, d.nt_o, a, d.sm_o);
				wbytes += (size_t)H * H * 2;
			} else if (k == 2) {
				n = F;
				void *a[] = {&m.h, (void *)&ones, &m.gu[l], &m.act, &n, &np};
				launch(s, d.pdl, (const void *)d.gu, F / d.r_gu, d.nt_gu, a, d.sm_gu);
				wbytes += (size_t)2 * F * H * 2;
			} else if (k == 3) {
				n = H;
				void *a[] = {&m.act, (void *)&ones, &m.down[l], &m.h, &n, &np};
				launch(s, d.pdl, (const void *)d.down, H / d.r_down, d.nt_down, a, d.sm_down);
				wbytes += (size_t)H * F * 2;
			} else {
				n = V;
				void *a[] = {&m.h, (void *)&ones, &m.lm, &m.logits, &n, &np};
				launch(s, d.pdl, (const void *)d.lm, V / d.r_lm, d.nt_lm, a, d.sm_lm);
				wbytes += (size_t)V * H * 2;
			}
		}
		CHECK(cudaStreamEndCapture(s, &g));
		CHECK(cudaGraphInstantiate(&ge, g, 0));
		std::vector<float> med;
		for (int round = 0; round < 5; round++) {
			for (int i = 0; i < 5; i++)
				CHECK(cudaGraphLaunch(ge, s));
			CHECK(cudaEventRecord(e0, s));
			for (int i = 0; i < 50; i++)
				CHECK(cudaGraphLaunch(ge, s));
			CHECK(cudaEventRecord(e1, s));
			CHECK(cudaEventSynchronize(e1));
			float ms;
			CHECK(cudaEventElapsedTime(&ms, e0, e1));
			med.push_back(ms * 1000.0f / 50);
		}
		std::sort(med.begin(), med.end());
		printf("    %-8s %8.2f us a launch  %.2f TB/s\n", names[k], med[2] / reps,
		       wbytes / (med[2] * 1e-6) / 1e12);
		CHECK(cudaGraphExecDestroy(ge));
		CHECK(cudaGraphDestroy(g));
	}
}

#define K2(tmpl, R, NT, EPI, NORM, PRE, EARLY) \
	((void (*)(const void *))(chain_gemv<tmpl, R, NT, EPI, NORM, PRE, EARLY>))

#define DESIGN(name, R, NT, RD, NTD, PRE, EARLY, PDL)                                          \
	{ name,                                                                                  \
	  K2(H, R, NT, EPI_STORE, true, PRE, EARLY), K2(H, R, NT, EPI_ADD, false, PRE, EARLY),    \
	  K2(H, R, NT, EPI_SILU, true, PRE, EARLY), K2(F, RD, NTD, EPI_ADD, false, PRE, EARLY),   \
	  K2(H, R, NT, EPI_F32, true, PRE, EARLY),                                                \
	  (void (*)(const void *))(chain_attention<EARLY>),                                       \
	  R, R, R, RD, R, NT, NT, NT, NTD, NT, PDL, 0, 0, 0, 0, 0 }

#define KB(tmpl, EPI, NORM, ST, NS, NT, EARLY)                                               \
	((void (*)(const void *))(chain_bulk<tmpl, EPI, NORM, ST, NS, NT, ((EARLY) & 1),            \
	                                     ((((EARLY) >> 1) & 1) != 0), ((EARLY) >> 2)>))

/* STAGE bytes a stage, NS stages, NT threads, one block a multiprocessor;
 * EARLY: bit 0 triggers before the wait, bit 1 marks the weights
 * evict-first in L2, the bits above are the KiB a block asks L2 for
 * beyond its first NS stages, before the wait */
#define BULK(name, ST, NS, NT, EARLY)                                                          \
	{ name,                                                                                  \
	  KB(H, EPI_STORE, true, ST, NS, NT, EARLY), KB(H, EPI_ADD, false, ST, NS, NT, EARLY),    \
	  KB(H, EPI_SILU, true, ST, NS, NT, EARLY), KB(F, EPI_ADD, false, ST, NS, NT, EARLY),     \
	  KB(H, EPI_F32, true, ST, NS, NT, EARLY),                                                \
	  (void (*)(const void *))(chain_attention<(EARLY) & 1>),                                 \
	  1, 1, 1, 1, 1, NT, NT, NT, NT, NT, true,                                                \
	  bulk_smem<H, EPI_STORE, ST, NS, NT>(), bulk_smem<H, EPI_ADD, ST, NS, NT>(),             \
	  bulk_smem<H, EPI_SILU, ST, NS, NT>(), bulk_smem<F, EPI_ADD, ST, NS, NT>(),              \
	  bulk_smem<H, EPI_F32, ST, NS, NT>() }

int main(int argc, char **argv)
{
	const int steps = argc > 1 ? atoi(argv[1]) : 200;
	pf_mode = getenv("PF_MODE") ? atoi(getenv("PF_MODE")) : 0;
	pf_ahead = (size_t)((getenv("PF_AHEAD") ? atof(getenv("PF_AHEAD")) : 0.0) * 1048576);
	pf_att = (size_t)((getenv("PF_ATT") ? atof(getenv("PF_ATT")) : 0.0) * 1048576);
	cudaDeviceProp prop;
	CHECK(cudaGetDeviceProperties(&prop, 0));
	n_sm = prop.multiProcessorCount;
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
		BULK("bulk 32K x3, 256 thr, trigger after wait", 32768, 3, 256, 0),
		BULK("bulk 32K x3, 256 thr, trigger first", 32768, 3, 256, 1),
		BULK("bulk 24K x4, 256 thr, trigger first", 24576, 4, 256, 1),
		BULK("bulk 16K x4, 256 thr, trigger first", 16384, 4, 256, 1),
		BULK("bulk 48K x2, 256 thr, trigger first", 49152, 2, 256, 1),
		BULK("bulk 32K x3, 128 thr, trigger first", 32768, 3, 128, 1),
		BULK("bulk 32K x3, 256 thr, trigger first, evict first", 32768, 3, 256, 3),
		BULK("bulk 16K x6, 256 thr, trigger first", 16384, 6, 256, 1),
		BULK("bulk 48K x2, trigger first, L2 64K", 49152, 2, 256, 1 | 64 << 2),
		BULK("bulk 48K x2, trigger first, L2 128K", 49152, 2, 256, 1 | 128 << 2),
		BULK("bulk 48K x2, trigger first, L2 256K", 49152, 2, 256, 1 | 256 << 2),
		BULK("bulk 32K x3, trigger first, L2 128K", 32768, 3, 256, 1 | 128 << 2),
		BULK("bulk 32K x3, trigger first, L2 256K", 32768, 3, 256, 1 | 256 << 2),
		BULK("bulk 48K x2, trigger first, evict first, L2 128K", 49152, 2, 256, 3 | 128 << 2),
		BULK("bulk 48K x2, trigger after wait, L2 128K", 49152, 2, 256, 0 | 128 << 2),
		BULK("bulk 48K x2, trigger first, evict first", 49152, 2, 256, 3),
		BULK("bulk 48K x2, trigger first, evict first, L2 64K", 49152, 2, 256, 3 | 64 << 2),
		BULK("bulk 48K x2, trigger first, evict first, L2 192K", 49152, 2, 256, 3 | 192 << 2),
		BULK("bulk 24K x4, trigger first, evict first, L2 128K", 24576, 4, 256, 3 | 128 << 2),
		BULK("bulk 32K x3, trigger first, evict first, L2 128K", 32768, 3, 256, 3 | 128 << 2),
	};
	const int nd = sizeof designs / sizeof designs[0];
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaEvent_t e0, e1;
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	std::vector<float> ref(V), got(V);

	printf("device: %s, %d SMs; weights %.1f MB; attention stand-in %llu cycles; "
	       "PF_MODE %d, PF_AHEAD %.1f MiB, PF_ATT %.1f MiB\n", prop.name,
	       prop.multiProcessorCount, bytes / 1e6, att_cycles, pf_mode, pf_ahead / 1048576.0,
	       pf_att / 1048576.0);
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
		cudaGraphExec_t ge = bench_capture(s, cudaStreamCaptureModeThreadLocal,
		                                   [&](cudaStream_t r) { record_step(r, d, m, att_cycles); });
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
		if (getenv("SOLO"))
			solo(s, d, m, e0, e1);
		fflush(stdout);
		CHECK(cudaGraphExecDestroy(ge));
	}
	return 0;
}
