/*
 * cuda-moe.cu - the mixture-of-experts kinds on the GPU: moe_router,
 * moe_router_paged, moe_experts and gated_add (op.h; host-moe.c is the
 * reference).
 *
 * moe_experts at T * K <= MOE_SMALL_PAIRS runs in two kernels, gate|up
 * and down with the weighted sum folded in ("decode" below). Above it, in
 * four kernels over the scratch:
 *   route     one block per expert: how many (row, k) pairs chose it, how
 *             many chose a lower expert (its offset), and its pairs in
 *             pair order into order[], with each pair's place in inv[];
 *   gate_up   per expert group and tile of I columns, one warp a column:
 *             act[place] = silu(round(g)) * round(u), rounded;
 *   down      per expert group and block of H rows, each row's pieces
 *             over the block (one warp a row where I is not a multiple
 *             of the vector): y[place] = round(act[place] . down_e[row]);
 *   combine   per row and tile of columns: out[t] = sum over k in order
 *             of weights * y (plus the residual, when given: the sum
 *             rounded to the dtype, then added as add adds it).
 * Only the chosen experts' weights are read: a block of an expert with no
 * pairs exits before it loads any.
 *
 * The two forms differ in how the product kernels find their groups. The
 * eager form copies the counts back to the host (a wait) and launches the
 * products for the experts that have pairs, their offsets and counts
 * passed by value. The graph-safe form launches a block row for each of
 * the most groups there can be, min(E, T*K), each finding its expert (the
 * n-th with pairs) in the counts on the device, the rows past the experts
 * chosen exiting at once; the launch never changes and can be captured. A
 * pair's arithmetic is the same in both, so are the bytes.
 */
#include "config.h"

#include <math.h>

#include "cuda-internal.h"

#define MOE_THREADS 256
#define MOE_WARPS   (MOE_THREADS / 32)
#define MOE_TOKENS  8               /* pairs a warp carries at once */
#define MOE_UNROLL  4               /* weight pieces a lane loads before using them */

/* --- router -------------------------------------------------------------- */

/* The router's order as one unsigned key, larger first: a float's bits
 * made monotone, -0 taken as +0 (they compare equal in host-moe.c's
 * moe_before, so the lower index wins), every NaN above every number
 * (0xffffffff; a number's key is at most +inf's, 0xff800000). No number
 * has key 0: 0 is "no candidate". */
__device__ __forceinline__ unsigned moe_key(float v)
{
	unsigned u;

	if (isnan(v))
		return 0xffffffffu;
	u = v == 0.0f ? 0u : __float_as_uint(v);
	return u & 0x80000000u ? ~u : u | 0x80000000u;
}

/* The warp's largest (moe_warp_max) and smallest (moe_warp_min) of V:
 * redux.sync on sm_80 and later, butterflies before. The router takes
 * the largest key with the first and, among the lanes holding it, the
 * lowest expert with the second. */
__device__ __forceinline__ unsigned moe_warp_max(unsigned v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	return __reduce_max_sync(0xffffffffu, v);
#else
	for (int off = 16; off > 0; off >>= 1) {
		unsigned o = __shfl_xor_sync(0xffffffffu, v, off);
		v = o > v ? o : v;
	}
	return v;
#endif
}

__device__ __forceinline__ unsigned moe_warp_min(unsigned v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	return __reduce_min_sync(0xffffffffu, v);
#else
	for (int off = 16; off > 0; off >>= 1) {
		unsigned o = __shfl_xor_sync(0xffffffffu, v, off);
		v = o < v ? o : v;
	}
	return v;
#endif
}

/* The router's NaN check: MOE_NO_FAULT, or the lowest row whose weights
 * came out NaN since the last read, as row << 1 | (1 for moe_router_paged).
 * A word in device memory, named by no launch parameter, so that captured
 * routers set it as eager ones do; cuda_moe_router_fault reads it. */
#define MOE_NO_FAULT (~0ull)
__device__ unsigned long long bcg_moe_router_nan = MOE_NO_FAULT;

/* One warp a row; lane l holds experts l, l+32, ... (E <= 256). */
__global__ void bcg_moe_router_kernel(const void *lg, int dtl, const int32_t *slots,
                                      int32_t *ids, void *w, int dtw, int64_t rows, int e,
                                      int k, int renorm, int topk_first)
{
	int lane = threadIdx.x & 31;
	int64_t r = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	float v[OP_MOE_MAX_EXPERTS / 32];
	float p_k = 0.0f;
	int id_k = -1;
	unsigned taken = 0;             /* bit s: expert lane + 32 s already chosen */

	cuda_pdl_begin();               /* the logits are the previous kernel's */
	if (r >= rows)
		return;
	if (slots != NULL && slots[r] < 0) {
		if (lane < k) {
			ids[r * k + lane] = -1;
			cuda_st(w, dtw, r * k + lane, 0.0f);
		}
		return;
	}
#pragma unroll
	for (int s = 0; s < OP_MOE_MAX_EXPERTS / 32; s++) {
		int j = lane + 32 * s;
		v[s] = j < e ? cuda_ld(lg, dtl, r * e + j) : -INFINITY;
	}
	if (!topk_first) {
		float max = -INFINITY, sum = 0.0f;
#pragma unroll
		for (int s = 0; s < OP_MOE_MAX_EXPERTS / 32; s++)
			if (lane + 32 * s < e && v[s] > max)
				max = v[s];
		max = cuda_warp_max(max);
#pragma unroll
		for (int s = 0; s < OP_MOE_MAX_EXPERTS / 32; s++)
			if (lane + 32 * s < e)
				sum += expf(v[s] - max);
		sum = cuda_warp_sum(sum);
#pragma unroll
		for (int s = 0; s < OP_MOE_MAX_EXPERTS / 32; s++)
			if (lane + 32 * s < e)
				v[s] = expf(v[s] - max) / sum;
	}
	/* K rounds of a warp-wide argmax on the keys: the largest key by one
	 * reduction, the lowest expert holding it by a second; the winner
	 * leaves the race. (A first version compared (value, index) pairs
	 * through five rounds of shuffles a pick: 8.4 us for a row of 128 on
	 * the H200.) */
	unsigned key[OP_MOE_MAX_EXPERTS / 32];
#pragma unroll
	for (int s = 0; s < OP_MOE_MAX_EXPERTS / 32; s++)
		key[s] = lane + 32 * s < e ? moe_key(v[s]) : 0u;
	for (int i = 0; i < k; i++) {
		unsigned bk = 0u, bi = 0xffffffffu;
		float bv = 0.0f;
#pragma unroll
		for (int s = 0; s < OP_MOE_MAX_EXPERTS / 32; s++)
			if (!(taken >> s & 1u) && key[s] > bk) {
				bk = key[s];
				bi = (unsigned)(lane + 32 * s);
				bv = v[s];
			}
		unsigned top = moe_warp_max(bk);
		unsigned win = moe_warp_min(bk == top ? bi : 0xffffffffu);
		float wv = __shfl_sync(0xffffffffu, bv, (int)(win & 31u));
		if (lane == i) {
			p_k = wv;
			id_k = (int)win;
		}
		if ((int)(win & 31u) == lane)
			taken |= 1u << (win >> 5);
	}
	if (topk_first) {
		/* softmax over the K chosen logits; the first is the largest */
		float max = __shfl_sync(0xffffffffu, p_k, 0);
		float ex = lane < k ? expf(p_k - max) : 0.0f;
		float sum = 0.0f;
		for (int i = 0; i < k; i++)
			sum += __shfl_sync(0xffffffffu, ex, i);
		p_k = ex / sum;
	}
	if (renorm) {
		float s = 0.0f;
		for (int i = 0; i < k; i++)
			s += __shfl_sync(0xffffffffu, p_k, i);
		p_k = p_k / s;
	}
	if (lane < k) {
		ids[r * k + lane] = id_k;
		cuda_st(w, dtw, r * k + lane, p_k);
	}
	/* NaN logits give NaN weights (NaN goes first, and poisons the
	 * softmax): the row is a fault of the step, never a silent output */
	if (__any_sync(0xffffffffu, lane < k && isnan(p_k)) && lane == 0)
		atomicMin(&bcg_moe_router_nan,
		          (unsigned long long)r << 1 | (slots != NULL ? 1ull : 0ull));
}

extern "C" int cuda_moe_router_fault(cudaStream_t stream, char *msg, size_t len)
{
	unsigned long long word = MOE_NO_FAULT;
	const unsigned long long none = MOE_NO_FAULT;
	cudaError_t err;

	if ((err = cudaMemcpyFromSymbolAsync(&word, bcg_moe_router_nan, sizeof word, 0,
	                                     cudaMemcpyDeviceToHost, stream)) != cudaSuccess ||
	    (err = cudaStreamSynchronize(stream)) != cudaSuccess)
		goto fail;
	if (word == MOE_NO_FAULT)
		return 0;
	if ((err = cudaMemcpyToSymbolAsync(bcg_moe_router_nan, &none, sizeof none, 0,
	                                   cudaMemcpyHostToDevice, stream)) != cudaSuccess ||
	    (err = cudaStreamSynchronize(stream)) != cudaSuccess)
		goto fail;
	return cuda_fail(msg, len, "kernel fault: %s: the logits of row %llu give NaN weights "
	                 "(no expert can be chosen)", word & 1 ? "moe_router_paged" : "moe_router",
	                 word >> 1);
fail:
	return cuda_fail(msg, len, "the router's NaN check: %s%s", cuda_fault_tag(err),
	                 cudaGetErrorString(err));
}

extern "C" int cuda_run_moe_router(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                   char *msg, size_t len)
{
	const struct op_tensor *lg = &call->in[0], *ids = &call->out[0], *w = &call->out[1];
	int64_t rows = cuda_rows(lg), e = cuda_cols(lg), k = call->attr[MOE_TOP_K].i;
	const int32_t *slots = call->nin > 1 ? static_cast<const int32_t *>(call->in[1].data) : NULL;
	/* a warp a row; a block of fewer warps when there are fewer rows */
	unsigned rows_a_block = rows < MOE_WARPS ? (unsigned)(rows > 0 ? rows : 1) : MOE_WARPS;

	if (e < 1 || e > OP_MOE_MAX_EXPERTS || k < 1 || k > OP_MOE_MAX_TOP_K || k > e)
		return cuda_fail(msg, len, "moe_router: %lld experts, top_k %lld: the kernel takes "
		                 "1 to %d experts and top_k 1 to %d", (long long)e, (long long)k,
		                 OP_MOE_MAX_EXPERTS, OP_MOE_MAX_TOP_K);
	if (rows < 1)
		return 0;
	return cuda_launch(ctx, "bcg_moe_router_kernel", bcg_moe_router_kernel,
	                   dim3((unsigned)((rows + rows_a_block - 1) / rows_a_block)),
	                   dim3(32 * rows_a_block), msg, len, lg->data, (int)lg->dtype, slots,
	                   static_cast<int32_t *>(ids->data), w->data, (int)w->dtype, rows, (int)e,
	                   (int)k, (int)(call->attr[MOE_RENORM].i != 0),
	                   (int)(call->attr[MOE_TOPK_FIRST].i != 0));
}

/* --- experts ------------------------------------------------------------- */

/* The scratch of one launch, carved from the data scratch. */
struct moe_scratch {
	int   *count;                   /* [E] pairs of each expert */
	int   *offset;                  /* [E] pairs of the experts before */
	int   *order;                   /* [pairs] pair ids, by expert, in order */
	int   *inv;                     /* [pairs] each pair's place in order */
	float *act;                     /* [pairs, I] by place */
	float *y;                       /* [pairs, H] by place */
};

static size_t moe_align(size_t n)
{
	return (n + 255) & ~(size_t)255;
}

static size_t moe_scratch_data(int64_t pairs, int64_t e, int64_t inter, int64_t h)
{
	return moe_align((size_t)e * sizeof(int)) * 2 + moe_align((size_t)pairs * sizeof(int)) * 2 +
	       moe_align((size_t)(pairs * inter) * sizeof(float)) +
	       moe_align((size_t)(pairs * h) * sizeof(float));
}

static struct moe_scratch moe_scratch_carve(void *base, int64_t pairs, int64_t e,
                                            int64_t inter)
{
	char *p = static_cast<char *>(base);
	struct moe_scratch s;

	s.count = reinterpret_cast<int *>(p);
	p += moe_align((size_t)e * sizeof(int));
	s.offset = reinterpret_cast<int *>(p);
	p += moe_align((size_t)e * sizeof(int));
	s.order = reinterpret_cast<int *>(p);
	p += moe_align((size_t)pairs * sizeof(int));
	s.inv = reinterpret_cast<int *>(p);
	p += moe_align((size_t)pairs * sizeof(int));
	s.act = reinterpret_cast<float *>(p);
	p += moe_align((size_t)(pairs * inter) * sizeof(float));
	s.y = reinterpret_cast<float *>(p);
	return s;
}

extern "C" size_t cuda_moe_experts_scratch_bytes(const struct op_call *call)
{
	int64_t pairs = cuda_rows(&call->in[1]) * cuda_cols(&call->in[1]);
	int64_t e = call->attr[MOE_EXPERTS].i, h = cuda_cols(&call->in[0]);
	int64_t inter = e > 0 ? cuda_rows(&call->in[3]) / (2 * e) : 0;

	if (e < 1)
		return 0;
	return cuda_scratch_with_counters(moe_scratch_data(pairs, e, inter, h));
}

/* Block e: count, offset, then its pairs in pair order. */
__global__ void bcg_moe_route_kernel(const int32_t *ids, int64_t pairs, int e,
                                     struct moe_scratch s)
{
	__shared__ int warp_n[MOE_WARPS];
	__shared__ int total;
	int ex = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x / 32;
	int lt = 0, eq = 0;

	for (int64_t p = threadIdx.x; p < pairs; p += blockDim.x) {
		int id = ids[p];
		lt += id >= 0 && id < ex;
		eq += id == ex;
	}
	for (int o = 16; o > 0; o >>= 1) {
		lt += __shfl_xor_sync(0xffffffffu, lt, o);
		eq += __shfl_xor_sync(0xffffffffu, eq, o);
	}
	__shared__ int sl[MOE_WARPS], se[MOE_WARPS];
	if (lane == 0) {
		sl[warp] = lt;
		se[warp] = eq;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		int a = 0, b = 0;
		for (int i = 0; i < MOE_WARPS; i++) {
			a += sl[i];
			b += se[i];
		}
		s.offset[ex] = a;
		s.count[ex] = b;
		total = a;
	}
	__syncthreads();
	/* the pairs of expert ex, in pair order: a chunk of blockDim pairs at a
	 * time, places by a ballot within each warp and a scan over warps */
	int base = total;
	for (int64_t p0 = 0; p0 < pairs; p0 += blockDim.x) {
		int64_t p = p0 + threadIdx.x;
		bool mine = p < pairs && ids[p] == ex;
		unsigned ball = __ballot_sync(0xffffffffu, mine);
		if (lane == 0)
			warp_n[warp] = __popc(ball);
		__syncthreads();
		int before = base;
		for (int i = 0; i < warp; i++)
			before += warp_n[i];
		if (mine) {
			int place = before + __popc(ball & ((1u << lane) - 1u));
			s.order[place] = (int)p;
			s.inv[p] = place;
		}
		int chunk = 0;
		for (int i = 0; i < MOE_WARPS; i++)
			chunk += warp_n[i];
		base += chunk;
		__syncthreads();
	}
}

/* The groups of the eager form, passed by value (under 4 KB). */
struct moe_groups {
	int   n;
	short expert[OP_MOE_MAX_EXPERTS];
	int   offset[OP_MOE_MAX_EXPERTS];
	int   count[OP_MOE_MAX_EXPERTS];
};

/* Group blockIdx.x's expert, offset and count: from G when it is given
 * (the eager form), else the blockIdx.x-th expert that has pairs, found in
 * the counts on the device (the graph-safe form, launched for min(E,
 * pairs) groups: the most there can be). False when there is no such
 * group. Every thread of the block must call it. */
__device__ __forceinline__ bool moe_group(const struct moe_groups *g, struct moe_scratch s,
                                          int e, int *ex, int *off, int *cnt)
{
	__shared__ int sh_ex;

	if (g != NULL) {
		*ex = g->expert[blockIdx.x];
		*off = g->offset[blockIdx.x];
		*cnt = g->count[blockIdx.x];
		return true;
	}
	if (threadIdx.x < 32) {
		int want = (int)blockIdx.x, found = -1, lane = threadIdx.x;
		for (int base = 0; base < e && found < 0; base += 32) {
			int j = base + lane;
			unsigned b = __ballot_sync(0xffffffffu, j < e && s.count[j] > 0);
			int n = __popc(b);
			if (want < n) {
				for (int q = 0; q < want; q++)
					b &= b - 1;
				found = base + __ffs(b) - 1;
			} else {
				want -= n;
			}
		}
		if (lane == 0)
			sh_ex = found;
	}
	__syncthreads();
	if (sh_ex < 0)
		return false;
	*ex = sh_ex;
	*off = s.offset[sh_ex];
	*cnt = s.count[sh_ex];
	return true;
}

/* Element types and their 16-byte vectors: VEC elements a load. */
template <typename T> struct moe_elem;
template <> struct moe_elem<float> {
	static constexpr int VEC = 4;
	__device__ static float get(const float *p, int64_t i) { return p[i]; }
};
template <> struct moe_elem<__half> {
	static constexpr int VEC = 8;
	__device__ static float get(const __half *p, int64_t i) { return __half2float(p[i]); }
};
template <> struct moe_elem<__nv_bfloat16> {
	static constexpr int VEC = 8;
	__device__ static float get(const __nv_bfloat16 *p, int64_t i)
	{
		return __bfloat162float(p[i]);
	}
};

/* VEC elements from P + I (16-byte aligned), widened to f32. */
template <typename T>
__device__ __forceinline__ void moe_load(const T *p, int64_t i, float *v)
{
	constexpr int VEC = moe_elem<T>::VEC;
	uint4 raw = __ldg(reinterpret_cast<const uint4 *>(p + i));
	const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
	for (int q = 0; q < VEC; q++)
		v[q] = moe_elem<T>::get(e, q);
}

/* act[place, j] for the expert's pairs; warp w of block (g, tile) takes
 * column j = tile * MOE_WARPS + w. VECTOR: rows of H elements load 16
 * bytes a lane (H a multiple of the vector), else one element. */
template <typename T, bool EAGER, bool VECTOR>
__global__ void bcg_moe_gate_up_kernel(const T *x, const T *gu, int dt, int64_t h,
                                       int64_t inter, int64_t k, int e, struct moe_scratch s,
                                       struct moe_groups g)
{
	constexpr int VEC = VECTOR ? moe_elem<T>::VEC : 1;
	int ex, off, cnt, lane = threadIdx.x & 31;
	int64_t j = (int64_t)blockIdx.y * MOE_WARPS + threadIdx.x / 32;

	if (!moe_group(EAGER ? &g : NULL, s, e, &ex, &off, &cnt) || cnt == 0 || j >= inter)
		return;
	int64_t grow = ((int64_t)ex * 2 * inter + j) * h, urow = grow + inter * h;
	for (int c0 = 0; c0 < cnt; c0 += MOE_TOKENS) {
		int n = cnt - c0 < MOE_TOKENS ? cnt - c0 : MOE_TOKENS;
		int64_t xrow[MOE_TOKENS];
		float ag[MOE_TOKENS], au[MOE_TOKENS];
#pragma unroll
		for (int i = 0; i < MOE_TOKENS; i++) {
			xrow[i] = i < n ? (int64_t)(s.order[off + c0 + i] / k) * h : 0;
			ag[i] = au[i] = 0.0f;
		}
		/* MOE_UNROLL pieces a lane: every weight load of a round is issued
		 * before the first product, so that a warp keeps 2 * MOE_UNROLL
		 * 16-byte loads in flight (one at a time left HBM idle). */
		for (int64_t c0w = (int64_t)lane * VEC; c0w < h; c0w += 32 * VEC * MOE_UNROLL) {
			float wg[MOE_UNROLL][VEC], wu[MOE_UNROLL][VEC];
#pragma unroll
			for (int u = 0; u < MOE_UNROLL; u++) {
				int64_t c = c0w + (int64_t)u * 32 * VEC;
				if (c >= h)
					break;
				if (VECTOR) {
					moe_load(gu, grow + c, wg[u]);
					moe_load(gu, urow + c, wu[u]);
				} else {
					wg[u][0] = moe_elem<T>::get(gu, grow + c);
					wu[u][0] = moe_elem<T>::get(gu, urow + c);
				}
			}
#pragma unroll
			for (int u = 0; u < MOE_UNROLL; u++) {
				int64_t c = c0w + (int64_t)u * 32 * VEC;
				if (c >= h)
					break;
#pragma unroll
				for (int i = 0; i < MOE_TOKENS; i++)
					if (i < n) {
						float xv[VEC];
						if (VECTOR)
							moe_load(x, xrow[i] + c, xv);
						else
							xv[0] = moe_elem<T>::get(x, xrow[i] + c);
#pragma unroll
						for (int q = 0; q < VEC; q++) {
							ag[i] += xv[q] * wg[u][q];
							au[i] += xv[q] * wu[u][q];
						}
					}
			}
		}
#pragma unroll
		for (int i = 0; i < MOE_TOKENS; i++) {
			float gs = cuda_warp_sum(ag[i]), us = cuda_warp_sum(au[i]);
			if (lane == 0 && i < n) {
				float gg = cuda_round_to(dt, gs), uu = cuda_round_to(dt, us);
				float silu = gg / (1.0f + expf(-gg));
				s.act[(int64_t)(off + c0 + i) * inter + j] = cuda_round_to(dt, silu * uu);
			}
		}
	}
}

/* y[place, i] for the expert's pairs; warp w of block (g, tile) takes
 * output row i = tile * MOE_WARPS + w. VECTOR: rows of I elements load
 * 16 bytes of weights a lane (I a multiple of the vector). */
template <typename T, bool EAGER, bool VECTOR>
__global__ void bcg_moe_down_kernel(const T *dn, int dt, int64_t h, int64_t inter, int e,
                                    struct moe_scratch s, struct moe_groups g)
{
	constexpr int VEC = VECTOR ? moe_elem<T>::VEC : 1;
	int ex, off, cnt, lane = threadIdx.x & 31;
	int64_t i = (int64_t)blockIdx.y * MOE_WARPS + threadIdx.x / 32;

	if (!moe_group(EAGER ? &g : NULL, s, e, &ex, &off, &cnt) || cnt == 0 || i >= h)
		return;
	int64_t row = ((int64_t)ex * h + i) * inter;
	for (int c0 = 0; c0 < cnt; c0 += MOE_TOKENS) {
		int n = cnt - c0 < MOE_TOKENS ? cnt - c0 : MOE_TOKENS;
		float acc[MOE_TOKENS] = {};
		for (int64_t c0w = (int64_t)lane * VEC; c0w < inter; c0w += 32 * VEC * MOE_UNROLL) {
			float wd[MOE_UNROLL][VEC];
#pragma unroll
			for (int u = 0; u < MOE_UNROLL; u++) {
				int64_t c = c0w + (int64_t)u * 32 * VEC;
				if (c >= inter)
					break;
				if (VECTOR)
					moe_load(dn, row + c, wd[u]);
				else
					wd[u][0] = moe_elem<T>::get(dn, row + c);
			}
#pragma unroll
			for (int u = 0; u < MOE_UNROLL; u++) {
				int64_t c = c0w + (int64_t)u * 32 * VEC;
				if (c >= inter)
					break;
#pragma unroll
				for (int t = 0; t < MOE_TOKENS; t++)
					if (t < n) {
						const float *a = s.act + (int64_t)(off + c0 + t) * inter + c;
#pragma unroll
						for (int q = 0; q < VEC; q++)
							acc[t] += a[q] * wd[u][q];
					}
			}
		}
#pragma unroll
		for (int t = 0; t < MOE_TOKENS; t++) {
			float v = cuda_warp_sum(acc[t]);
			if (lane == 0 && t < n)
				s.y[(int64_t)(off + c0 + t) * h + i] = cuda_round_to(dt, v);
		}
	}
}

/* --- the down product by row blocks (16-byte rows) ----------------------
 *
 * bcg_moe_down_kernel gives a row a warp; at decode, when a group holds
 * one or two pairs, a warp then has a few 16-byte loads in flight on a
 * row of I elements and HBM idles (H200, T=1 of the Qwen3-30B-A3B-shaped
 * sample: 48 us a layer for 25 MB). This one gives a block 2 *
 * MOE_RB_ROWS rows of one expert and spreads each row's 16-byte pieces
 * over the block's threads, as the small-M products of cuda-smallm.cu do:
 * every thread loads its piece of every row before the first product, and
 * the sums of the group's pairs meet by warp butterflies, then across
 * warps in shared memory (25.6 us there). The same layout for gate|up
 * (rows of H) measured 53.6 us against the warp kernel's 28.9, so gate|up
 * keeps a column a warp. Rows whose length is not a multiple of the vector
 * go to the warp kernels. */
#define MOE_RB_ROWS 4               /* down: a block takes twice this many rows */

/* A's piece of VEC elements at I, widened (16-byte aligned). */
template <typename T>
__device__ __forceinline__ void moe_widen(const uint4 &raw, float *v)
{
	const T *e = reinterpret_cast<const T *>(&raw);
#pragma unroll
	for (int q = 0; q < moe_elem<T>::VEC; q++)
		v[q] = moe_elem<T>::get(e, q);
}

/* Sum ACC[R][MOE_TOKENS] over the block, for the first N pairs only (N is
 * the same in every thread): FIN[r * MOE_TOKENS + t] gets row r, pair t's
 * sum. RED holds MOE_WARPS * R * MOE_TOKENS floats. Every thread calls it. */
template <int R>
__device__ __forceinline__ void moe_block_sum(float (&acc)[R][MOE_TOKENS], int n, float *red,
                                              float *fin)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
	for (int r = 0; r < R; r++)
#pragma unroll
		for (int t = 0; t < MOE_TOKENS; t++) {
			if (t >= n)
				break;
			float v = cuda_warp_sum(acc[r][t]);
			if (lane == 0)
				red[(warp * R + r) * MOE_TOKENS + t] = v;
		}
	__syncthreads();
	for (int i = threadIdx.x; i < R * MOE_TOKENS; i += blockDim.x) {
		if (i % MOE_TOKENS >= n)
			continue;
		float v = 0.0f;
		for (int w = 0; w < nw; w++)
			v += red[w * R * MOE_TOKENS + i];
		fin[i] = v;
	}
	__syncthreads();
}

template <typename T, bool EAGER>
__global__ void __launch_bounds__(MOE_THREADS)
bcg_moe_down_rows_kernel(const T *dn, int dt, int64_t h, int64_t inter, int e,
                         struct moe_scratch s, struct moe_groups g)
{
	constexpr int VEC = moe_elem<T>::VEC, R = 2 * MOE_RB_ROWS;
	__shared__ float red[MOE_WARPS * R * MOE_TOKENS], fin[R * MOE_TOKENS];
	int ex, off, cnt;
	const int64_t i0 = (int64_t)blockIdx.y * R, units = inter / VEC;

	if (!moe_group(EAGER ? &g : NULL, s, e, &ex, &off, &cnt) || cnt == 0)
		return;
	const T *wrow[R];
#pragma unroll
	for (int r = 0; r < R; r++)
		wrow[r] = dn + ((int64_t)ex * h + (i0 + r < h ? i0 + r : h - 1)) * inter;
	for (int c0 = 0; c0 < cnt; c0 += MOE_TOKENS) {
		const int n = cnt - c0 < MOE_TOKENS ? cnt - c0 : MOE_TOKENS;
		float acc[R][MOE_TOKENS] = {};
		for (int64_t u = threadIdx.x; u < units; u += blockDim.x) {
			uint4 wv[R];
#pragma unroll
			for (int r = 0; r < R; r++)
				wv[r] = __ldg(reinterpret_cast<const uint4 *>(wrow[r] + u * VEC));
#pragma unroll
			for (int t = 0; t < MOE_TOKENS; t++) {
				if (t >= n)
					break;
				const float *a = s.act + (int64_t)(off + c0 + t) * inter + u * VEC;
				float af[VEC];
#pragma unroll
				for (int q = 0; q < VEC; q += 4) {
					float4 f = *reinterpret_cast<const float4 *>(a + q);
					af[q] = f.x;
					af[q + 1] = f.y;
					af[q + 2] = f.z;
					af[q + 3] = f.w;
				}
#pragma unroll
				for (int r = 0; r < R; r++) {
					float wf[VEC];
					moe_widen<T>(wv[r], wf);
#pragma unroll
					for (int q = 0; q < VEC; q++)
						acc[r][t] = fmaf(af[q], wf[q], acc[r][t]);
				}
			}
		}
		moe_block_sum<R>(acc, n, red, fin);
		for (int q = threadIdx.x; q < R * MOE_TOKENS; q += blockDim.x) {
			int r = q / MOE_TOKENS, t = q % MOE_TOKENS;
			if (t < n && i0 + r < h)
				s.y[(int64_t)(off + c0 + t) * h + i0 + r] = cuda_round_to(dt, fin[q]);
		}
		__syncthreads();
	}
}

/* Threads for a row of UNITS 16-byte pieces: a piece a thread, in whole
 * warps, at most MOE_THREADS. */
static unsigned moe_rows_threads(int64_t units)
{
	int64_t t = (units + 31) / 32 * 32;
	return (unsigned)(t < 32 ? 32 : t > MOE_THREADS ? MOE_THREADS : t);
}

/* Launch the two products for GROUPS blocks (the groups of G in the eager
 * form, every expert in the graph-safe one), in element type T. */
template <typename T, bool EAGER>
static int moe_products(const struct op_call *call, const struct cuda_op_ctx *ctx,
                        unsigned groups, const struct moe_scratch &s,
                        const struct moe_groups &g, char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *gu = &call->in[3], *dn = &call->in[4];
	int64_t h = cuda_cols(x), k = cuda_cols(&call->in[1]);
	int64_t e = call->attr[MOE_EXPERTS].i, inter = cuda_rows(gu) / (2 * e);
	constexpr int VEC = moe_elem<T>::VEC;
	dim3 ggrid(groups, (unsigned)((inter + MOE_WARPS - 1) / MOE_WARPS));
	dim3 dgrid(groups, (unsigned)((h + MOE_WARPS - 1) / MOE_WARPS));
	const T *xp = static_cast<const T *>(x->data), *gp = static_cast<const T *>(gu->data);
	const T *dp = static_cast<const T *>(dn->data);
	const bool xa = (uintptr_t)xp % 16 == 0 && (uintptr_t)gp % 16 == 0;   /* 16-byte loads */
	const bool da = (uintptr_t)dp % 16 == 0;

	if (h % VEC == 0 && xa)
		bcg_moe_gate_up_kernel<T, EAGER, true><<<ggrid, MOE_THREADS, 0, ctx->stream>>>(
			xp, gp, x->dtype, h, inter, k, (int)e, s, g);
	else
		bcg_moe_gate_up_kernel<T, EAGER, false><<<ggrid, MOE_THREADS, 0, ctx->stream>>>(
			xp, gp, x->dtype, h, inter, k, (int)e, s, g);
	if (cuda_check_launch("the moe_experts gate|up product", msg, len) != 0)
		return -1;
	if (inter % VEC == 0 && da)
		bcg_moe_down_rows_kernel<T, EAGER>
			<<<dim3(groups, (unsigned)((h + 2 * MOE_RB_ROWS - 1) / (2 * MOE_RB_ROWS))),
			   moe_rows_threads(inter / VEC), 0, ctx->stream>>>(dp, x->dtype, h, inter,
			                                                    (int)e, s, g);
	else
		bcg_moe_down_kernel<T, EAGER, false><<<dgrid, MOE_THREADS, 0, ctx->stream>>>(
			dp, x->dtype, h, inter, (int)e, s, g);
	return cuda_check_launch("the moe_experts down product", msg, len);
}

template <bool EAGER>
static int moe_products_dt(const struct op_call *call, const struct cuda_op_ctx *ctx,
                           unsigned groups, const struct moe_scratch &s,
                           const struct moe_groups &g, char *msg, size_t len)
{
	switch (call->in[0].dtype) {
	case PLAN_DTYPE_F16:
		return moe_products<__half, EAGER>(call, ctx, groups, s, g, msg, len);
	case PLAN_DTYPE_BF16:
		return moe_products<__nv_bfloat16, EAGER>(call, ctx, groups, s, g, msg, len);
	default:
		return moe_products<float, EAGER>(call, ctx, groups, s, g, msg, len);
	}
}

/* out[t] = sum over k in order of weights[t,k] * y[inv[t*K+k]]. */
/* Block (row t, tile of columns): the row's k weights and places read
 * once into shared memory (a pair routed nowhere gets place -1), then a
 * column a thread, the pairs summed in k order. A thread of the first
 * launch version walked the ids, weights and places for each of its
 * columns, one dependent load after another (11.8 us for one row of 2048
 * on the H200). */
#define MOE_COMBINE_THREADS 256

__global__ void __launch_bounds__(MOE_COMBINE_THREADS)
bcg_moe_combine_kernel(const int32_t *ids, const void *w, int dtw, int64_t k, int e,
                       struct moe_scratch s, const void *res, void *out, int dt, int64_t rows,
                       int64_t h)
{
	__shared__ float wq[OP_MOE_MAX_TOP_K];
	__shared__ int place[OP_MOE_MAX_TOP_K];
	const int64_t t = blockIdx.x, c = (int64_t)blockIdx.y * blockDim.x + threadIdx.x;

	if (threadIdx.x < k) {
		int64_t p = t * k + threadIdx.x;
		int id = ids[p];
		bool routed = id >= 0 && id < e;
		wq[threadIdx.x] = routed ? cuda_ld(w, dtw, p) : 0.0f;
		place[threadIdx.x] = routed ? s.inv[p] : -1;
	}
	__syncthreads();
	if (t >= rows || c >= h)
		return;
	float acc = 0.0f;
	for (int64_t q = 0; q < k; q++)
		if (place[q] >= 0)
			acc += wq[q] * s.y[(int64_t)place[q] * h + c];
	/* the residual as down_small adds it (out may be res: read first) */
	if (res != NULL)
		acc = cuda_ld(res, dt, t * h + c) + cuda_round_to(dt, acc);
	cuda_st(out, dt, t * h + c, acc);
}

/* --- decode: the experts over a few pairs ----------------------------------
 *
 * At T * K <= MOE_SMALL_PAIRS (T <= 8 at top 8) the experts run in two
 * kernels laid out as the gemv of cuda-smallm.cu lays out a decode
 * product, and neither route nor combine runs:
 *
 *   gate_up_small  grid (group, column blocks): a block owns C columns
 *                  j0 .. j0 + C - 1 of one expert (the default C:
 *                  MOE_SG_COLS), their gate and up rows (2C rows of H),
 *                  each row's 16-byte pieces spread over the block's
 *                  threads, U of them a thread and round (the default 2;
 *                  1 at 8 pairs a chunk, and 8 columns take at most 4
 *                  pairs a chunk: registers), every load of a round issued
 *                  before the first product (BCG_MOE_GU_SHAPE picks C and
 *                  U: kernel-shape.h; a column's arithmetic is the same in
 *                  every shape); each piece meets every pair of the group
 *                  (8 at a time); sums meet by butterflies, then over warps in
 *                  shared memory in warp order, and the epilogue stores
 *                  act[pair, j] = silu(round(g)) * round(u) in the element
 *                  type (the value is rounded to it: nothing is lost);
 *   down_small     grid (token, MOE_SD_ROWS rows of H): warp q takes pair
 *                  (t, q), its expert's rows against act[pair], the rows'
 *                  pieces over the warp's lanes; y = round(sum) a pair,
 *                  then out[t, i] = sum over q in order of weight * y,
 *                  rounded once: host-moe.c's arithmetic, the sum over the
 *                  top k folded in.
 *
 * A group is an expert with its pairs in pair order: tokens that chose the
 * same expert share its gate|up rows in one block. down reads an expert's
 * rows once for each of its tokens; the blocks of one row block (every
 * token, blockIdx.x fastest) run side by side, so a repeat comes from L2.
 * The eager form copies the ids (T*K of them) to the host and passes each
 * group by value, exactly as many block rows as groups; the graph-safe
 * form launches min(E, T*K) block rows whose blocks find their group, the
 * n-th expert chosen in expert order, from the ids in device memory. A
 * pair's arithmetic does not depend on the grouping or on how many pairs
 * a chunk holds, so both forms give the same bytes. Both kernels wait
 * (PDL) before they read anything: which weights they read follows the
 * ids the router wrote.
 *
 * Above MOE_SMALL_PAIRS the kernels above run (route, grouped products,
 * combine): there an expert serves several tokens and its weights are
 * read once for all of them, which down_small's token rows would repeat.
 */
#define MOE_SMALL_PAIRS 64
#define MOE_SG_COLS     2           /* gate_up_small: columns a block (the default) */
#define MOE_SG_UNITS    2           /* and units a thread and round (the default) */
#define MOE_SG_THREADS  128
#define MOE_SG_WARPS    (MOE_SG_THREADS / 32)
#define MOE_SG_MAXM     8           /* pairs a chunk */
#define MOE_SD_ROWS     4           /* down_small: rows of H a block */

/* The eager form's groups, by value: group n is expert[n] with pairs
 * pair[start[n]] .. pair[start[n + 1] - 1]. */
struct moe_small_groups {
	int           n;
	short         expert[MOE_SMALL_PAIRS];
	unsigned char start[MOE_SMALL_PAIRS + 1];
	unsigned char pair[MOE_SMALL_PAIRS];
};

/* Group WANT of the graph-safe form: the WANT-th expert, in expert order,
 * that pairs [0, PAIRS) of IDS chose, into SH[0] (-1: there is none), its
 * pairs in pair order into LIST, their number into SH[1]. Every thread of
 * the block calls it; the results are in shared memory behind a barrier. */
__device__ void moe_small_find(const int32_t *ids, int pairs, int e, int want, int *list,
                               int *sh)
{
	__shared__ unsigned mask[OP_MOE_MAX_EXPERTS / 32];
	const int lane = threadIdx.x & 31;

	if (threadIdx.x < OP_MOE_MAX_EXPERTS / 32)
		mask[threadIdx.x] = 0u;
	__syncthreads();
	for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
		int id = ids[p];
		if (id >= 0 && id < e)
			atomicOr(&mask[id >> 5], 1u << (id & 31));
	}
	__syncthreads();
	if (threadIdx.x < 32) {
		unsigned m = lane < OP_MOE_MAX_EXPERTS / 32 ? mask[lane] : 0u;
		int c = __popc(m), incl = c, ex = -1, cnt = 0;
		for (int off = 1; off < 32; off <<= 1) {
			int o = __shfl_up_sync(0xffffffffu, incl, off);
			if (lane >= off)
				incl += o;
		}
		unsigned b = __ballot_sync(0xffffffffu, want >= incl - c && want < incl);
		if (b != 0u) {
			int src = __ffs((int)b) - 1;
			if (lane == src) {
				for (int q = incl - c; q < want; q++)
					m &= m - 1u;
				ex = lane * 32 + __ffs((int)m) - 1;
			}
			ex = __shfl_sync(0xffffffffu, ex, src);
			for (int base = 0; base < pairs; base += 32) {
				int p = base + lane;
				bool hit = p < pairs && ids[p] == ex;
				unsigned hb = __ballot_sync(0xffffffffu, hit);
				if (hit)
					list[cnt + __popc(hb & ((1u << lane) - 1u))] = p;
				cnt += __popc(hb);
			}
		}
		if (lane == 0) {
			sh[0] = ex;
			sh[1] = cnt;
		}
	}
	__syncthreads();
}

/* One chunk of M (1, 2, 4 or 8) pairs, LIST[0 .. N), against the block's
 * 2C rows WROW, U pieces a round (1 at 8 pairs: registers, as gemv at 8
 * tokens): each thread's partial sums over its pieces, summed
 * over the warp into RED[warp][s * MOE_SG_MAXM + m]. A pair's sums do not
 * depend on M, C or U: the pieces meet it in the same order whatever the
 * chunk and the shape. */
template <typename T, int M, int C, int U>
__device__ __forceinline__ void moe_sg_chunk(const T *const (&wrow)[2 * C], const T *x,
                                             const int *list, int n, int k, int64_t h,
                                             float (*red)[2 * C * MOE_SG_MAXM])
{
	constexpr int S = 2 * C, V = 16 / (int)sizeof(T);
	constexpr int UN = M >= 8 ? 1 : U;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int64_t units = h / V;
	const T *xrow[M];
	float acc[S][M];

#pragma unroll
	for (int m = 0; m < M; m++)
		xrow[m] = x + (int64_t)(list[m < n ? m : 0] / k) * h;
#pragma unroll
	for (int s = 0; s < S; s++)
#pragma unroll
		for (int m = 0; m < M; m++)
			acc[s][m] = 0.0f;
	cuda_dot16_rows<T, S, M, UN, MOE_SG_THREADS>(wrow, xrow, 0, units, acc);
#pragma unroll
	for (int s = 0; s < S; s++)
#pragma unroll
		for (int m = 0; m < M; m++) {
			float v = cuda_warp_sum(acc[s][m]);
			if (lane == 0)
				red[warp][s * MOE_SG_MAXM + m] = v;
		}
}

/* Compiled for 1 block a multiprocessor (every register a thread needs)
 * in a shape other than the default, whose registers stay ptxas's own
 * choice (0): as cuda-smallm.cu's SM_GEMV_MINB, so that a round's loads
 * are all in flight and nothing spills. */
template <typename T, int MT, bool EAGER, int C = MOE_SG_COLS, int U = MOE_SG_UNITS>
__global__ void __launch_bounds__(MOE_SG_THREADS, C == MOE_SG_COLS && U == MOE_SG_UNITS ? 0 : 1)
bcg_moe_gate_up_small_kernel(const T *x, const T *gu, const int32_t *ids, int pairs,
                             int64_t h, int64_t inter, int k, int e, T *act,
                             struct moe_small_groups g)
{
	constexpr int S = 2 * C;
	__shared__ float red[MOE_SG_WARPS][S * MOE_SG_MAXM];
	__shared__ int list[MOE_SMALL_PAIRS];
	__shared__ int sh[2];
	const int64_t j0 = (int64_t)blockIdx.y * C;
	int ex, cnt;

	cuda_pdl_begin();
	if (EAGER) {
		const int st = g.start[blockIdx.x];
		ex = g.expert[blockIdx.x];
		cnt = g.start[blockIdx.x + 1] - st;
		for (int q = threadIdx.x; q < cnt; q += blockDim.x)
			list[q] = g.pair[st + q];
		__syncthreads();
	} else {
		moe_small_find(ids, pairs, e, (int)blockIdx.x, list, sh);
		ex = sh[0];
		cnt = sh[1];
	}
	if (ex < 0)
		return;
	/* slot s: gate row j0 + s, then up rows; columns past I read row I - 1
	 * (never stored), so every address stays inside the expert */
	const T *wrow[S];
#pragma unroll
	for (int s = 0; s < S; s++) {
		int64_t col = j0 + s % C < inter ? j0 + s % C : inter - 1;
		wrow[s] = gu + ((int64_t)ex * 2 * inter + (s >= C ? inter : 0) + col) * h;
	}
	for (int c0 = 0; c0 < cnt; c0 += MT) {
		const int n = cnt - c0 < MT ? cnt - c0 : MT;
		if (MT == 1 || n == 1)
			moe_sg_chunk<T, 1, C, U>(wrow, x, list + c0, n, k, h, red);
		else if (MT == 2 || n == 2)
			moe_sg_chunk<T, MT < 2 ? MT : 2, C, U>(wrow, x, list + c0, n, k, h, red);
		else if (MT == 4 || n <= 4)
			moe_sg_chunk<T, MT < 4 ? MT : 4, C, U>(wrow, x, list + c0, n, k, h, red);
		else
			moe_sg_chunk<T, MT, C, U>(wrow, x, list + c0, n, k, h, red);
		__syncthreads();
		for (int q = threadIdx.x; q < C * MOE_SG_MAXM; q += blockDim.x) {
			const int s = q / MOE_SG_MAXM, m = q % MOE_SG_MAXM;
			const int64_t j = j0 + s;
			if (m >= n || j >= inter)
				continue;
			float gs = 0.0f, us = 0.0f;
#pragma unroll
			for (int w = 0; w < MOE_SG_WARPS; w++) {
				gs += red[w][s * MOE_SG_MAXM + m];
				us += red[w][(s + C) * MOE_SG_MAXM + m];
			}
			float gg = cuda_to_f32(cuda_from_f32<T>(gs)), uu = cuda_to_f32(cuda_from_f32<T>(us));
			float silu = gg / (1.0f + expf(-gg));
			act[(int64_t)list[c0 + m] * inter + j] = cuda_from_f32<T>(silu * uu);
		}
		__syncthreads();
	}
}

template <typename T>
__global__ void __launch_bounds__(32 * OP_MOE_MAX_TOP_K)
bcg_moe_down_small_kernel(const T *dn, const int32_t *ids, const void *w, int dtw,
                          const T *act, const T *res, T *out, int64_t h, int64_t inter, int k,
                          int e)
{
	constexpr int R = MOE_SD_ROWS, V = 16 / (int)sizeof(T), U = 2;
	__shared__ float yv[OP_MOE_MAX_TOP_K][R];
	__shared__ float wq[OP_MOE_MAX_TOP_K];
	__shared__ int routed[OP_MOE_MAX_TOP_K];
	const int lane = threadIdx.x & 31, q = threadIdx.x >> 5;
	const int64_t t = blockIdx.x, i0 = (int64_t)blockIdx.y * R, units = inter / V;
	const int64_t p = t * k + q;

	cuda_pdl_begin();
	const int ex = ids[p];
	if (ex >= 0 && ex < e) {
		const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
		const T *wrow[R], *arow = act + p * inter;
		float acc[R][1];
#pragma unroll
		for (int r = 0; r < R; r++) {
			wrow[r] = dn + ((int64_t)ex * h + (i0 + r < h ? i0 + r : h - 1)) * inter;
			acc[r][0] = 0.0f;
		}
		/* one token's row against R weight rows: the gemv's round with
		 * M = 1, so the sums run in its order */
		for (int64_t u = lane; u < units; u += 32 * U) {
			uint4 wv[U][R], av[U][1];
#pragma unroll
			for (int i = 0; i < U; i++) {
				const int64_t ui = u + 32 * i;
#pragma unroll
				for (int r = 0; r < R; r++)
					wv[i][r] = ui < units ? cuda_ld_stream(wrow[r] + ui * V) : zero;
			}
#pragma unroll
			for (int i = 0; i < U; i++) {
				const int64_t ui = u + 32 * i;
				av[i][0] = ui < units ? *reinterpret_cast<const uint4 *>(arow + ui * V)
				                      : zero;
			}
			cuda_dot16_round<T, R, 1, U>(wv, av, acc);
		}
#pragma unroll
		for (int r = 0; r < R; r++) {
			float y = cuda_warp_sum(acc[r][0]);
			if (lane == 0)
				yv[q][r] = cuda_to_f32(cuda_from_f32<T>(y));
		}
		if (lane == 0) {
			wq[q] = cuda_ld(w, dtw, p);
			routed[q] = 1;
		}
	} else if (lane == 0) {
		routed[q] = 0;
	}
	__syncthreads();
	if (threadIdx.x < R && i0 + threadIdx.x < h) {
		float a = 0.0f;
		for (int qq = 0; qq < k; qq++)
			if (routed[qq])
				a += wq[qq] * yv[qq][threadIdx.x];
		/* the residual: add(res, moe)'s bytes, the sum rounded first;
		 * this thread reads the element it then writes (out may be res) */
		if (res != NULL)
			a = cuda_to_f32(res[t * h + i0 + threadIdx.x]) +
			    cuda_to_f32(cuda_from_f32<T>(a));
		out[t * h + i0 + threadIdx.x] = cuda_from_f32<T>(a);
	}
}

/* Whether the small path runs CALL: few pairs, rows of whole 16-byte
 * pieces, aligned operands, block rows within a grid's y. */
static bool moe_small_ok(const struct op_call *call, int64_t pairs, int64_t h, int64_t inter)
{
	const int64_t v = 16 / (int64_t)cuda_dtype_size(call->in[0].dtype);

	for (int i = 0; i < 5; i++)
		if (i != 1 && i != 2 && (uintptr_t)call->in[i].data % 16 != 0)
			return false;
	return pairs <= MOE_SMALL_PAIRS && h % v == 0 && inter % v == 0 &&
	       (inter + MOE_SG_COLS - 1) / MOE_SG_COLS <= 65535 &&
	       (h + MOE_SD_ROWS - 1) / MOE_SD_ROWS <= 65535;
}

/* gate_up_small with chunks of MT pairs, C columns a block and U pieces a
 * round, in the eager form (G the groups) or the graph-safe one, on
 * GROUPS block rows. */
template <typename T, int MT, int C, int U>
static int moe_sg_launch(const struct cuda_op_ctx *ctx, bool eager, unsigned groups, char *msg,
                         size_t len, const T *x, const T *gu, const int32_t *ids, int64_t pairs,
                         int64_t h, int64_t inter, int64_t k, int64_t e, T *act,
                         const struct moe_small_groups &g)
{
	dim3 grid(groups, (unsigned)((inter + C - 1) / C));

	if (eager)
		return cuda_launch(ctx, "bcg_moe_gate_up_small_kernel",
		                   bcg_moe_gate_up_small_kernel<T, MT, true, C, U>, grid,
		                   dim3(MOE_SG_THREADS), msg, len, x, gu, ids, (int)pairs, h, inter,
		                   (int)k, (int)e, act, g);
	return cuda_launch(ctx, "bcg_moe_gate_up_small_kernel",
	                   bcg_moe_gate_up_small_kernel<T, MT, false, C, U>, grid,
	                   dim3(MOE_SG_THREADS), msg, len, x, gu, ids, (int)pairs, h, inter,
	                   (int)k, (int)e, act, g);
}

/* gate_up_small in the shape CTX names (BCG_MOE_GU_SHAPE; zero: the
 * default) for chunks of up to MT pairs (4 at 8 columns: a chunk of 8
 * would spill; a pair's arithmetic does not depend on its chunk). */
template <typename T, int MT>
static int moe_sg_shaped(const struct cuda_op_ctx *ctx, bool eager, unsigned groups, char *msg,
                         size_t len, const T *x, const T *gu, const int32_t *ids, int64_t pairs,
                         int64_t h, int64_t inter, int64_t k, int64_t e, T *act,
                         const struct moe_small_groups &g)
{
	const struct kernel_shape sh = ctx->moe_gu_shape;

#define MOE_SG_AS(c, u) moe_sg_launch<T, MT, c, u>(ctx, eager, groups, msg, len, x, gu, ids, \
		                                           pairs, h, inter, k, e, act, g)
	/* The default: 4 columns, one unit a round where a block holds one
	 * pair a chunk (one token: on the H100 the Qwen3-30B-A3B sample's
	 * gate|up took 19.45 us against 21.66 us in g2u2, its step 0.988 of
	 * g2u2's), g2u2 above (not measured there otherwise). */
	switch (sh.g == 0 ? (MT == 1 ? 41 : 22) : sh.g * 10 + sh.u) {
	case 22:
		return MOE_SG_AS(2, 2);
	case 21:
		return MOE_SG_AS(2, 1);
	case 24:
		return MOE_SG_AS(2, 4);
	case 41:
		return MOE_SG_AS(4, 1);
	case 42:
		return MOE_SG_AS(4, 2);
	case 81:
		return moe_sg_launch<T, MT < 4 ? MT : 4, 8, 1>(ctx, eager, groups, msg, len, x, gu, ids,
		                                              pairs, h, inter, k, e, act, g);
	}
#undef MOE_SG_AS
	return cuda_fail(msg, len, "moe_experts: no gate_up kernel of %d columns and %d units a "
	                 "round", sh.g, sh.u);
}

/* The two kernels of the small path in element type T; G the eager form's
 * groups, NULL for the graph-safe form. */
template <typename T>
static int moe_small(const struct op_call *call, const struct cuda_op_ctx *ctx, T *act,
                     const struct moe_small_groups *g, char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *ids = &call->in[1], *w = &call->in[2];
	int64_t rows = cuda_rows(x), h = cuda_cols(x), k = cuda_cols(ids);
	int64_t e = call->attr[MOE_EXPERTS].i, inter = cuda_rows(&call->in[3]) / (2 * e);
	int64_t pairs = rows * k;
	const T *xp = static_cast<const T *>(x->data), *gp = static_cast<const T *>(call->in[3].data);
	const int32_t *ip = static_cast<const int32_t *>(ids->data);
	struct moe_small_groups none;
	unsigned groups = g ? (unsigned)g->n : (unsigned)(pairs < e ? pairs : e);
	dim3 dgrid((unsigned)rows, (unsigned)((h + MOE_SD_ROWS - 1) / MOE_SD_ROWS));
	int rc;

	if (g == NULL)
		memset(&none, 0, sizeof none);
	if (groups > 0) {
		const struct moe_small_groups &gv = g ? *g : none;
		const int mt = rows <= 1 ? 1 : rows <= 2 ? 2 : rows <= 4 ? 4 : MOE_SG_MAXM;
		rc = mt == 1 ? moe_sg_shaped<T, 1>(ctx, g != NULL, groups, msg, len, xp, gp, ip, pairs,
		                                   h, inter, k, e, act, gv)
		   : mt == 2 ? moe_sg_shaped<T, 2>(ctx, g != NULL, groups, msg, len, xp, gp, ip, pairs,
		                                   h, inter, k, e, act, gv)
		   : mt == 4 ? moe_sg_shaped<T, 4>(ctx, g != NULL, groups, msg, len, xp, gp, ip, pairs,
		                                   h, inter, k, e, act, gv)
		   : moe_sg_shaped<T, MOE_SG_MAXM>(ctx, g != NULL, groups, msg, len, xp, gp, ip, pairs,
		                                   h, inter, k, e, act, gv);
		if (rc != 0)
			return -1;
	}
	return cuda_launch(ctx, "bcg_moe_down_small_kernel", bcg_moe_down_small_kernel<T>, dgrid,
	                   dim3((unsigned)(32 * k)), msg, len,
	                   static_cast<const T *>(call->in[4].data), ip, (const void *)w->data,
	                   (int)w->dtype, (const T *)act,
	                   call->nin > 5 ? static_cast<const T *>(call->in[5].data) : (const T *)NULL,
	                   static_cast<T *>(call->out[0].data), h, inter, (int)k, (int)e);
}

/* The eager form reads the ids or counts on the host: refused on a stream
 * being captured. 0, or -1 with MSG. */
static int moe_eager_not_captured(const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
	cudaError_t err = cudaStreamIsCapturing(ctx->stream, &cap);

	if (err != cudaSuccess)
		return cuda_fail(msg, len, "moe_experts: cudaStreamIsCapturing: %s%s",
		                 cuda_fault_tag(err), cudaGetErrorString(err));
	if (cap != cudaStreamCaptureStatusNone)
		return cuda_fail(msg, len, "moe_experts: the eager form reads the per-expert "
		                 "counts on the host and cannot be captured");
	return 0;
}

/* The small path: the eager form reads the ids on the host (a wait) and
 * groups the pairs by expert there; the graph-safe form leaves that to
 * the blocks. */
static int moe_small_run(const struct op_call *call, const struct cuda_op_ctx *ctx, void *act,
                         char *msg, size_t len)
{
	const struct op_tensor *ids = &call->in[1];
	int64_t pairs = cuda_rows(ids) * cuda_cols(ids), e = call->attr[MOE_EXPERTS].i;
	struct moe_small_groups g, *gp = NULL;
	cudaError_t err;

	if (!call->graph_safe) {
		int32_t id[MOE_SMALL_PAIRS];
		unsigned char seen[OP_MOE_MAX_EXPERTS];

		if (moe_eager_not_captured(ctx, msg, len))
			return -1;
		if ((err = cudaMemcpyAsync(id, ids->data, (size_t)pairs * sizeof(int32_t),
		                           cudaMemcpyDeviceToHost, ctx->stream)) != cudaSuccess ||
		    (err = cudaStreamSynchronize(ctx->stream)) != cudaSuccess)
			return cuda_fail(msg, len, "moe_experts: reading the expert ids: %s%s",
			                 cuda_fault_tag(err), cudaGetErrorString(err));
		memset(&g, 0, sizeof g);
		memset(seen, 0, sizeof seen);
		for (int64_t p = 0; p < pairs; p++)
			if (id[p] >= 0 && id[p] < e)
				seen[id[p]] = 1;
		for (int64_t ex = 0, fill = 0; ex < e; ex++) {
			if (!seen[ex])
				continue;
			g.expert[g.n] = (short)ex;
			g.start[g.n] = (unsigned char)fill;
			for (int64_t p = 0; p < pairs; p++)
				if (id[p] == ex)
					g.pair[fill++] = (unsigned char)p;
			g.start[++g.n] = (unsigned char)fill;
		}
		gp = &g;
	}
	switch (call->in[0].dtype) {
	case PLAN_DTYPE_F16:
		return moe_small<__half>(call, ctx, static_cast<__half *>(act), gp, msg, len);
	case PLAN_DTYPE_BF16:
		return moe_small<__nv_bfloat16>(call, ctx, static_cast<__nv_bfloat16 *>(act), gp, msg,
		                                len);
	default:
		return moe_small<float>(call, ctx, static_cast<float *>(act), gp, msg, len);
	}
}

extern "C" int cuda_run_moe_experts(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                    char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *ids = &call->in[1], *w = &call->in[2];
	const struct op_tensor *gu = &call->in[3], *dn = &call->in[4], *out = &call->out[0];
	int64_t rows = cuda_rows(x), h = cuda_cols(x), k = cuda_cols(ids);
	int64_t e = call->attr[MOE_EXPERTS].i, pairs = rows * k, inter;
	struct moe_scratch s;
	struct moe_groups g;
	size_t need;
	cudaError_t err;

	if (e < 1 || e > OP_MOE_MAX_EXPERTS || k < 1 || k > OP_MOE_MAX_TOP_K)
		return cuda_fail(msg, len, "moe_experts: %lld experts, %lld a row: the kernels take "
		                 "1 to %d and 1 to %d", (long long)e, (long long)k,
		                 OP_MOE_MAX_EXPERTS, OP_MOE_MAX_TOP_K);
	if (!cuda_is_float_dtype(x->dtype) || gu->dtype != x->dtype || dn->dtype != x->dtype ||
	    out->dtype != x->dtype || !cuda_is_float_dtype(w->dtype) ||
	    (call->nin > 5 && call->in[5].dtype != x->dtype))
		return cuda_fail(msg, len, "moe_experts: unsupported dtypes");
	inter = cuda_rows(gu) / (2 * e);
	if (rows < 1 || inter < 1)
		return 0;
	need = cuda_moe_experts_scratch_bytes(call);
	if (ctx->scratch == NULL || ctx->scratch_bytes < need)
		return cuda_fail(msg, len, "moe_experts: %zu bytes of scratch given, %zu needed",
		                 ctx->scratch ? ctx->scratch_bytes : (size_t)0, need);
	s = moe_scratch_carve(cuda_scratch_data(ctx), pairs, e, inter);
	if (moe_small_ok(call, pairs, h, inter))
		return moe_small_run(call, ctx, s.act, msg, len);
	memset(&g, 0, sizeof g);

	bcg_moe_route_kernel<<<(unsigned)e, MOE_THREADS, 0, ctx->stream>>>(
		static_cast<const int32_t *>(ids->data), pairs, (int)e, s);
	if (cuda_check_launch("bcg_moe_route_kernel", msg, len) != 0)
		return -1;

	if (!call->graph_safe) {
		/* eager: the counts on the host, the products for the experts that
		 * have pairs only */
		int count[OP_MOE_MAX_EXPERTS], offset[OP_MOE_MAX_EXPERTS];

		if (moe_eager_not_captured(ctx, msg, len))
			return -1;
		if ((err = cudaMemcpyAsync(count, s.count, (size_t)e * sizeof(int),
		                           cudaMemcpyDeviceToHost, ctx->stream)) != cudaSuccess ||
		    (err = cudaMemcpyAsync(offset, s.offset, (size_t)e * sizeof(int),
		                           cudaMemcpyDeviceToHost, ctx->stream)) != cudaSuccess ||
		    (err = cudaStreamSynchronize(ctx->stream)) != cudaSuccess)
			return cuda_fail(msg, len, "moe_experts: reading the per-expert counts: %s%s",
			                 cuda_fault_tag(err), cudaGetErrorString(err));
		for (int64_t ex = 0; ex < e; ex++)
			if (count[ex] > 0) {
				g.expert[g.n] = (short)ex;
				g.offset[g.n] = offset[ex];
				g.count[g.n] = count[ex];
				g.n++;
			}
		if (g.n > 0 && moe_products_dt<true>(call, ctx, (unsigned)g.n, s, g, msg, len) != 0)
			return -1;
	} else if (moe_products_dt<false>(call, ctx, (unsigned)(pairs < e ? pairs : e), s, g, msg,
	                                  len) != 0) {
		return -1;
	}
	bcg_moe_combine_kernel<<<dim3((unsigned)rows, (unsigned)((h + MOE_COMBINE_THREADS - 1) /
	                                                         MOE_COMBINE_THREADS)),
	                         MOE_COMBINE_THREADS, 0, ctx->stream>>>(
		static_cast<const int32_t *>(ids->data), w->data, w->dtype, k, (int)e, s,
		call->nin > 5 ? call->in[5].data : NULL, out->data, out->dtype, rows, h);
	return cuda_check_launch("bcg_moe_combine_kernel", msg, len);
}

/* --- gated_add ------------------------------------------------------------ */

__global__ void bcg_gated_add_kernel(const void *x, const void *y, const void *gt, int dt,
                                     void *out, int64_t rows, int64_t cols)
{
	int64_t n = rows * cols;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		float sg = 1.0f / (1.0f + expf(-cuda_ld(gt, dt, i / cols)));
		float m = sg * cuda_ld(y, dt, i);
		cuda_st(out, dt, i, cuda_ld(x, dt, i) + m);
	}
}

extern "C" int cuda_run_gated_add(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                  char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);

	if (!cuda_is_float_dtype(x->dtype) || call->in[1].dtype != x->dtype ||
	    call->in[2].dtype != x->dtype || out->dtype != x->dtype)
		return cuda_fail(msg, len, "gated_add: unsupported dtypes");
	if (rows * cols <= 0)
		return 0;
	bcg_gated_add_kernel<<<cuda_ew_blocks(rows * cols, ctx->sm_count), CUDA_EW_THREADS, 0,
	                       ctx->stream>>>(x->data, call->in[1].data, call->in[2].data,
	                                      x->dtype, out->data, rows, cols);
	return cuda_check_launch("bcg_gated_add_kernel", msg, len);
}
