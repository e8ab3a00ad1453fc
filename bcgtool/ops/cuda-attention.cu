/*
 * cuda-attention.cu - decode attention of T query tokens over a KV cache,
 * split along the cache (split-K, "flash decoding").
 *
 * For each (token t, head h) the L = min(kv_len, S) cache rows are cut
 * into NS chunks. One block of ATTN_WARPS warps computes one (t, h, split):
 * its warps take the chunk's keys KB at a time, in turn, and keep the
 * online-softmax state of their keys (running max m, sum l of exp(s - m),
 * and acc = sum of exp(s - m) v) in registers, each lane holding EPL
 * consecutive elements of the head dimension; the block then merges its
 * warps. With NS = 1 the block writes out = acc / l itself; otherwise it
 * writes (m, l, acc) to scratch, and the NS partials of each (t, h) are
 * merged in split order. Merging rescales each part by exp(m_part - max m);
 * a part with no keys has m = -inf and weight 0. Every sum is in f32.
 *
 * Two implementations merge the partials:
 *  - "split" (one launch): the last block of each (t, h) to finish -- a
 *    counter per (t, h) in the scratch counters (cuda.h), which that block
 *    resets -- merges them itself. The merge always runs in split order
 *    over values read back from the scratch, so whichever block is last
 *    the bits are the same. Up to CUDA_SCRATCH_COUNTERS (t, h) pairs.
 *  - "twopass": a second kernel merges them; any size.
 * Both kernels are PDL-aware: they wait before reading q or the caches and
 * trigger after their stores.
 *
 * The two forms share both kernels and differ in the launch:
 *  - eager (graph_safe 0): NS and the chunk follow L, from the host's
 *    kv_len; the launch shape changes as the cache fills.
 *  - graph-safe (graph_safe 1): NS and the chunk follow S alone, and every
 *    block reads kv_len from device memory (attr_dev[ATTN_KV_LEN]); blocks
 *    whose chunk lies past L write a neutral part. One captured launch is
 *    then right for every kv_len.
 *
 * NS aims at about four blocks per multiprocessor over all (t, h), with at
 * least ATTN_MIN_CHUNK keys per split and at most ATTN_MAX_SPLITS splits;
 * the scratch bound (cuda_attention_scratch_bytes) uses ATTN_BLOCKS_CAP in
 * place of the device's size, so it holds on any device.
 *
 * Head h reads kv head h * kv_heads / heads (h / (heads / kv_heads) for
 * the divisible counts the check accepts). head_dim up to 512; loads are
 * vectorized (up to 16 bytes a lane) when head_dim is 32 * EPL and q, k, v
 * are aligned for it, else element by element.
 */
#include "config.h"

#include <limits.h>
#include <string.h>

#include "cuda-internal.h"

#define ATTN_WARPS          4
#define ATTN_THREADS        (ATTN_WARPS * 32)
#define ATTN_COMBINE_THREADS 128
#define ATTN_MAX_SPLITS     128
#define ATTN_MIN_CHUNK      64
#define ATTN_CHUNK_ROUND    16      /* ATTN_WARPS * KB, whole batches per warp */
#define ATTN_BLOCKS_CAP     1024
#define ATTN_MAX_HEAD_DIM   512

/* --- device side ---------------------------------------------------------- */

/* Lane LANE's EPL elements [lane*EPL, lane*EPL + EPL) of ROW, widened; past
 * D they read as 0. VEC: D == 32 * EPL and ROW aligned to the chunk size. */
template <typename T, int EPL, bool VEC>
__device__ __forceinline__ void attn_load(const T *row, int lane, int D, float (&r)[EPL])
{
	const int d0 = lane * EPL;

	if constexpr (VEC) {
		constexpr int BYTES = EPL * (int)sizeof(T);
		constexpr int CH = BYTES >= 16 ? 16 : BYTES;
		constexpr int PER = CH / (int)sizeof(T);
		static_assert(CH == 16 || CH == 8 || CH == 4, "vector chunk of 4, 8 or 16 bytes");
#pragma unroll
		for (int c = 0; c < BYTES / CH; c++) {
			T tmp[PER];
			const T *p = row + d0 + c * PER;
			if constexpr (CH == 16) {
				uint4 u = *reinterpret_cast<const uint4 *>(p);
				memcpy(tmp, &u, sizeof u);
			} else if constexpr (CH == 8) {
				uint2 u = *reinterpret_cast<const uint2 *>(p);
				memcpy(tmp, &u, sizeof u);
			} else {
				uint32_t u = *reinterpret_cast<const uint32_t *>(p);
				memcpy(tmp, &u, sizeof u);
			}
#pragma unroll
			for (int i = 0; i < PER; i++)
				r[c * PER + i] = cuda_to_f32(tmp[i]);
		}
	} else {
#pragma unroll
		for (int e = 0; e < EPL; e++)
			r[e] = d0 + e < D ? cuda_to_f32(row[d0 + e]) : 0.0f;
	}
}

template <typename T>
__device__ void attn_combine(const float *part_acc, const float2 *part_ml, T *out, int64_t th,
                             int nsplit, int D, float *sm, float *sl, float *sw);

/* Block (t, h, split) = blockIdx.x as (t * H + h) * nsplit + split. Keys
 * [split * chunk, min(split * chunk + chunk, L)). KV_LEN_DEV, when not
 * NULL, gives kv_len; else KV_LEN does. */
template <typename T, int EPL, bool VEC>
__global__ void __launch_bounds__(ATTN_THREADS)
bcg_attention_split_kernel(const T *q, const T *k, const T *v, T *out, float *part_acc,
                           float2 *part_ml, unsigned *counters, int64_t H, int64_t KVH, int D,
                           int64_t S, int64_t kv_len, const int32_t *kv_len_dev, int nsplit,
                           int64_t chunk, float scale, int64_t causal_rows)
{
	constexpr int KB = EPL <= 8 ? 4 : 2;    /* keys in flight per warp */
	__shared__ float sh_m[ATTN_WARPS], sh_l[ATTN_WARPS];
	__shared__ float sh_acc[ATTN_WARPS][32 * EPL];
	__shared__ float sh_cm[ATTN_MAX_SPLITS], sh_cl[ATTN_MAX_SPLITS], sh_cw[ATTN_MAX_SPLITS];
	__shared__ int flag;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int64_t bid = blockIdx.x;
	const int split = (int)(bid % nsplit);
	const int64_t th = bid / nsplit;                /* t * H + h */
	const int64_t h = th % H;
	const int64_t g = h * KVH / H;
	const int64_t kstride = KVH * D;

	cuda_pdl_wait();
	int64_t L = kv_len_dev ? (int64_t)*kv_len_dev : kv_len;
	L = L < 0 ? 0 : L > S ? S : L;
	if (causal_rows > 0) {          /* token t of T sees L - (T - 1 - t) keys */
		L -= causal_rows - 1 - th / H;
		L = L < 0 ? 0 : L;
	}
	const int64_t start = (int64_t)split * chunk;
	const int64_t end = start + chunk < L ? start + chunk : L;

	float qr[EPL], acc[EPL];
	attn_load<T, EPL, VEC>(q + th * D, lane, D, qr);
#pragma unroll
	for (int e = 0; e < EPL; e++)
		acc[e] = 0.0f;
	float m = -INFINITY, l = 0.0f;

	const T *kg = k + g * D, *vg = v + g * D;
	/* j0 and end are the same for the whole warp: the shuffles below run
	 * with every lane present. */
	for (int64_t j0 = start + (int64_t)warp * KB; j0 < end; j0 += (int64_t)ATTN_WARPS * KB) {
		float kr[KB][EPL], vr[KB][EPL], s[KB];
#pragma unroll
		for (int b = 0; b < KB; b++) {
			if (j0 + b < end) {
				attn_load<T, EPL, VEC>(kg + (j0 + b) * kstride, lane, D, kr[b]);
				attn_load<T, EPL, VEC>(vg + (j0 + b) * kstride, lane, D, vr[b]);
			} else {
#pragma unroll
				for (int e = 0; e < EPL; e++)
					kr[b][e] = vr[b][e] = 0.0f;
			}
		}
#pragma unroll
		for (int b = 0; b < KB; b++) {
			float d = 0.0f;
#pragma unroll
			for (int e = 0; e < EPL; e++)
				d += qr[e] * kr[b][e];
			s[b] = d;
		}
#pragma unroll
		for (int off = 16; off > 0; off >>= 1)
#pragma unroll
			for (int b = 0; b < KB; b++)
				s[b] += __shfl_xor_sync(0xffffffffu, s[b], off);
		float mb = -INFINITY;
#pragma unroll
		for (int b = 0; b < KB; b++) {
			s[b] *= scale;
			if (j0 + b < end)
				mb = fmaxf(mb, s[b]);
		}
		/* j0 < end, so mb and mn are finite: exp(-inf - mn) is 0. */
		float mn = fmaxf(m, mb);
		float corr = expf(m - mn);
		l *= corr;
#pragma unroll
		for (int e = 0; e < EPL; e++)
			acc[e] *= corr;
#pragma unroll
		for (int b = 0; b < KB; b++) {
			if (j0 + b < end) {
				float p = expf(s[b] - mn);
				l += p;
#pragma unroll
				for (int e = 0; e < EPL; e++)
					acc[e] += p * vr[b][e];
			}
		}
		m = mn;
	}

	/* Merge the warps. */
	if (lane == 0) {
		sh_m[warp] = m;
		sh_l[warp] = l;
	}
#pragma unroll
	for (int e = 0; e < EPL; e++)
		sh_acc[warp][lane * EPL + e] = acc[e];
	__syncthreads();

	float M = -INFINITY, wt[ATTN_WARPS], lsum = 0.0f;
#pragma unroll
	for (int w = 0; w < ATTN_WARPS; w++)
		M = fmaxf(M, sh_m[w]);
#pragma unroll
	for (int w = 0; w < ATTN_WARPS; w++) {
		wt[w] = sh_m[w] == -INFINITY ? 0.0f : expf(sh_m[w] - M);
		lsum += wt[w] * sh_l[w];
	}
	for (int d = threadIdx.x; d < D; d += ATTN_THREADS) {
		float a = 0.0f;
#pragma unroll
		for (int w = 0; w < ATTN_WARPS; w++)
			a += wt[w] * sh_acc[w][d];
		if (nsplit == 1)
			out[th * D + d] = cuda_from_f32<T>(lsum > 0.0f ? a / lsum : 0.0f);
		else
			part_acc[(th * nsplit + split) * D + d] = a;
	}
	if (nsplit > 1 && threadIdx.x == 0)
		part_ml[th * nsplit + split] = make_float2(M, lsum);
	if (nsplit > 1 && counters) {
		if (!cuda_last_block(&counters[th], (unsigned)nsplit, &flag))
			return;
		attn_combine<T>(part_acc, part_ml, out, th, nsplit, D, sh_cm, sh_cl, sh_cw);
	}
	cuda_pdl_trigger();
}

/* Merge the NSPLIT parts of (t, h) = TH into out[t, h], in split order,
 * reading the parts past L1 (other blocks wrote them). SM, SL, SW are
 * shared arrays of ATTN_MAX_SPLITS floats. Every thread of the block calls
 * it. */
template <typename T>
__device__ void attn_combine(const float *part_acc, const float2 *part_ml, T *out, int64_t th,
                             int nsplit, int D, float *sm, float *sl, float *sw)
{
	const float2 *ml = part_ml + th * nsplit;
	const float *acc = part_acc + th * nsplit * D;

	for (int s = threadIdx.x; s < nsplit; s += blockDim.x) {
		float2 p = __ldcg(ml + s);
		sm[s] = p.x;
		sl[s] = p.y;
	}
	__syncthreads();
	float M = -INFINITY;
	for (int s = 0; s < nsplit; s++)
		M = fmaxf(M, sm[s]);
	for (int s = threadIdx.x; s < nsplit; s += blockDim.x)
		sw[s] = sm[s] == -INFINITY ? 0.0f : expf(sm[s] - M);
	__syncthreads();
	float lsum = 0.0f;
	for (int s = 0; s < nsplit; s++)
		lsum += sw[s] * sl[s];
	for (int d = threadIdx.x; d < D; d += blockDim.x) {
		float a = 0.0f;
		for (int s = 0; s < nsplit; s++)
			a += sw[s] * __ldcg(acc + (int64_t)s * D + d);
		out[th * D + d] = cuda_from_f32<T>(lsum > 0.0f ? a / lsum : 0.0f);
	}
}

/* "twopass": block th = t * H + h merges its NSPLIT parts into out[t, h]. */
template <typename T>
__global__ void __launch_bounds__(ATTN_COMBINE_THREADS)
bcg_attention_combine_kernel(const float *part_acc, const float2 *part_ml, T *out,
                             int nsplit, int D)
{
	__shared__ float sm[ATTN_MAX_SPLITS], sl[ATTN_MAX_SPLITS], sw[ATTN_MAX_SPLITS];

	cuda_pdl_wait();
	attn_combine<T>(part_acc, part_ml, out, (int64_t)blockIdx.x, nsplit, D, sm, sl, sw);
	cuda_pdl_trigger();
}

/* --- host side ------------------------------------------------------------ */

struct attn_shape {
	int64_t T, H, KVH, D, S;
	int64_t th;                     /* T * H: (token, head) pairs */
};

/* One launch, planned. */
struct attn_launch {
	struct attn_shape sh;
	const void *q, *k, *v;
	void *out;
	int dtype;
	int64_t kv_len;                 /* the host's value */
	int64_t causal_rows;            /* causal: T; else 0 */
	const int32_t *kv_len_dev;      /* graph-safe: the device's, or NULL */
	int nsplit;
	int64_t chunk;
	float scale;
	float *part_acc;
	float2 *part_ml;
	unsigned *counters;             /* "split": one per (t, h); NULL: "twopass" */
	const struct cuda_op_ctx *ctx;
};

static int cuda_attention_shape(const struct op_call *call, struct attn_shape *sh,
                                char *msg, size_t len)
{
	const struct op_tensor *q = &call->in[0], *k = &call->in[1], *v = &call->in[2];
	const struct op_tensor *out = &call->out[0];

	sh->H = call->attr[ATTN_HEADS].i;
	sh->KVH = call->attr[ATTN_KV_HEADS].i;
	sh->D = call->attr[ATTN_HEAD_DIM].i;
	if (sh->H < 1 || sh->KVH < 1 || sh->D < 1 || sh->H > INT_MAX || sh->KVH > INT_MAX)
		return cuda_fail(msg, len, "attention: heads %lld, kv_heads %lld, head_dim %lld "
		                 "must be positive", (long long)sh->H, (long long)sh->KVH,
		                 (long long)sh->D);
	if (sh->D > ATTN_MAX_HEAD_DIM)
		return cuda_fail(msg, len, "attention: head_dim %lld above the CUDA kernel's %d",
		                 (long long)sh->D, ATTN_MAX_HEAD_DIM);
	if (!cuda_is_float_dtype(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype ||
	    out->dtype != q->dtype)
		return cuda_fail(msg, len, "attention: q, k, v, out must share one float dtype "
		                 "(%s, %s, %s, %s)", cuda_dtype_name(q->dtype),
		                 cuda_dtype_name(k->dtype), cuda_dtype_name(v->dtype),
		                 cuda_dtype_name(out->dtype));
	sh->T = cuda_rows(q);
	sh->S = cuda_rows(k);
	if (cuda_cols(q) != sh->H * sh->D || cuda_numel(out) != cuda_numel(q) ||
	    cuda_cols(out) != cuda_cols(q))
		return cuda_fail(msg, len, "attention: q and out must be [T, %lld]",
		                 (long long)(sh->H * sh->D));
	if (cuda_cols(k) != sh->KVH * sh->D || cuda_rows(v) != sh->S ||
	    cuda_cols(v) != cuda_cols(k))
		return cuda_fail(msg, len, "attention: k and v must be [S, %lld]",
		                 (long long)(sh->KVH * sh->D));
	sh->th = sh->T * sh->H;
	if (sh->th > INT_MAX / ATTN_MAX_SPLITS)
		return cuda_fail(msg, len, "attention: %lld tokens x %lld heads is too many",
		                 (long long)sh->T, (long long)sh->H);
	return 0;
}

static int64_t attn_ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* Splits for L keys over TH (token, head) pairs aiming at TARGET blocks. */
static int64_t attn_splits_for(int64_t L, int64_t th, int64_t target)
{
	int64_t ns = attn_ceil_div(target, th);
	int64_t by_len = attn_ceil_div(L, ATTN_MIN_CHUNK);

	if (ns > by_len)
		ns = by_len;
	if (ns > ATTN_MAX_SPLITS)
		ns = ATTN_MAX_SPLITS;
	return ns < 1 ? 1 : ns;
}

/* The most splits any launch for at most L keys can use, on any device:
 * the device's target is at most ATTN_BLOCKS_CAP and the count grows with
 * L, and the chunk rounding of attn_plan only lowers it. */
static int64_t attn_splits_bound(int64_t L, int64_t th)
{
	return attn_splits_for(L, th, ATTN_BLOCKS_CAP);
}

/* Splits and chunk for a launch over L keys (L = kv_len eager, S
 * graph-safe). L < 1 gives one split of no keys: zeros. */
static void attn_plan(int64_t L, int64_t th, int sm_count, int *nsplit, int64_t *chunk)
{
	int64_t target = sm_count > 0 ? 4 * (int64_t)sm_count : ATTN_BLOCKS_CAP;

	if (target > ATTN_BLOCKS_CAP)
		target = ATTN_BLOCKS_CAP;
	if (L < 1) {
		*nsplit = 1;
		*chunk = 0;
		return;
	}
	int64_t ns = attn_splits_for(L, th, target);
	int64_t c = attn_ceil_div(L, ns);
	c = attn_ceil_div(c, ATTN_CHUNK_ROUND) * ATTN_CHUNK_ROUND;
	*chunk = c;
	*nsplit = (int)attn_ceil_div(L, c);
}

/* Scratch layout for NSPLIT parts: (m, l) pairs first, then the f32
 * accumulators from a 256-byte boundary. */
static size_t attn_ml_bytes(int64_t th, int64_t nsplit)
{
	size_t b = (size_t)(th * nsplit) * sizeof(float2);
	return (b + 255) & ~(size_t)255;
}

static size_t attn_scratch_for(const struct attn_shape *sh, int64_t nsplit)
{
	if (nsplit <= 1)
		return 0;
	return attn_ml_bytes(sh->th, nsplit) + (size_t)(sh->th * nsplit * sh->D) * sizeof(float);
}

extern "C" size_t cuda_attention_scratch_bytes(const struct op_call *call)
{
	struct attn_shape sh = {};

	if (cuda_attention_shape(call, &sh, NULL, 0) != 0 || sh.th < 1)
		return 0;
	return cuda_scratch_with_counters(attn_scratch_for(&sh, attn_splits_bound(sh.S, sh.th)));
}

int cuda_attention_usable(const struct op_call *call, int impl)
{
	struct attn_shape sh = {};

	if (cuda_attention_shape(call, &sh, NULL, 0) != 0)
		return 0;
	switch (impl) {
	case CUDA_IMPL_ATTN_SPLIT:
		return sh.th <= CUDA_SCRATCH_COUNTERS;
	case CUDA_IMPL_ATTN_TWOPASS:
		return 1;
	}
	return 0;
}

template <typename T, int EPL>
static int attn_launch_epl(const struct attn_launch *al, char *msg, size_t len)
{
	const struct attn_shape *sh = &al->sh;
	const T *q = static_cast<const T *>(al->q), *k = static_cast<const T *>(al->k);
	const T *v = static_cast<const T *>(al->v);
	T *out = static_cast<T *>(al->out);
	const size_t vec_bytes = EPL * sizeof(T) < 16 ? EPL * sizeof(T) : 16;
	bool vec = sh->D == 32 * EPL && (uintptr_t)al->q % vec_bytes == 0 &&
	           (uintptr_t)al->k % vec_bytes == 0 && (uintptr_t)al->v % vec_bytes == 0;
	unsigned blocks = (unsigned)(sh->th * al->nsplit);
	const char *name = "bcg_attention_split_kernel";
	int rc;

	if (vec)
		rc = cuda_launch(al->ctx, name, bcg_attention_split_kernel<T, EPL, true>, dim3(blocks),
		                 dim3(ATTN_THREADS), msg, len, q, k, v, out, al->part_acc, al->part_ml,
		                 al->counters, sh->H, sh->KVH, (int)sh->D, sh->S, al->kv_len,
		                 al->kv_len_dev, al->nsplit, al->chunk, al->scale, al->causal_rows);
	else
		rc = cuda_launch(al->ctx, name, bcg_attention_split_kernel<T, EPL, false>, dim3(blocks),
		                 dim3(ATTN_THREADS), msg, len, q, k, v, out, al->part_acc, al->part_ml,
		                 al->counters, sh->H, sh->KVH, (int)sh->D, sh->S, al->kv_len,
		                 al->kv_len_dev, al->nsplit, al->chunk, al->scale, al->causal_rows);
	if (rc || al->nsplit == 1 || al->counters)
		return rc;
	return cuda_launch(al->ctx, "bcg_attention_combine_kernel", bcg_attention_combine_kernel<T>,
	                   dim3((unsigned)sh->th), dim3(ATTN_COMBINE_THREADS), msg, len,
	                   (const float *)al->part_acc, (const float2 *)al->part_ml, out, al->nsplit,
	                   (int)sh->D);
}

template <typename T>
static int attn_launch_typed(const struct attn_launch *al, char *msg, size_t len)
{
	int64_t D = al->sh.D;

	if (D <= 64)
		return attn_launch_epl<T, 2>(al, msg, len);
	if (D <= 128)
		return attn_launch_epl<T, 4>(al, msg, len);
	if (D <= 256)
		return attn_launch_epl<T, 8>(al, msg, len);
	return attn_launch_epl<T, 16>(al, msg, len);
}

extern "C" int cuda_run_attention(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                  char *msg, size_t len)
{
	struct attn_launch al;
	double scale = call->attr[ATTN_SCALE].f;
	size_t need;

	memset(&al, 0, sizeof al);
	if (cuda_attention_shape(call, &al.sh, msg, len))
		return -1;
	if (al.sh.th < 1)
		return 0;
	al.q = call->in[0].data;
	al.k = call->in[1].data;
	al.v = call->in[2].data;
	al.out = call->out[0].data;
	al.dtype = call->in[0].dtype;
	al.kv_len = call->attr[ATTN_KV_LEN].i;
	al.causal_rows = call->attr[ATTN_CAUSAL].i ? al.sh.T : 0;
	al.ctx = ctx;
	if (call->impl != CUDA_IMPL_ATTN_SPLIT && call->impl != CUDA_IMPL_ATTN_TWOPASS)
		return cuda_fail(msg, len, "attention: no implementation %d on CUDA", call->impl);
	if (!cuda_attention_usable(call, call->impl))
		return cuda_fail(msg, len, "attention: implementation split cannot run %lld (token, "
		                 "head) pairs, above the %lld scratch counters", (long long)al.sh.th,
		                 (long long)CUDA_SCRATCH_COUNTERS);
	al.scale = scale == 0.0 ? 1.0f / sqrtf((float)al.sh.D) : (float)scale;
	if (call->graph_safe) {
		/* A literal kv_len has no device mirror; it is the same every
		 * step, so the host value serves. */
		al.kv_len_dev = call->attr_dev[ATTN_KV_LEN];
		attn_plan(al.sh.S, al.sh.th, ctx->sm_count, &al.nsplit, &al.chunk);
	} else {
		int64_t L = al.kv_len < 0 ? 0 : al.kv_len > al.sh.S ? al.sh.S : al.kv_len;
		attn_plan(L, al.sh.th, ctx->sm_count, &al.nsplit, &al.chunk);
	}

	need = cuda_scratch_with_counters(attn_scratch_for(&al.sh, al.nsplit));
	if (need > 0) {
		if (!ctx->scratch || ctx->scratch_bytes < need)
			return cuda_fail(msg, len, "attention: needs %zu bytes of scratch, the context "
			                 "has %zu", need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
		if ((uintptr_t)ctx->scratch % 16 != 0)
			return cuda_fail(msg, len, "attention: scratch is not 16-byte aligned");
		char *data = static_cast<char *>(cuda_scratch_data(ctx));
		al.part_ml = reinterpret_cast<float2 *>(data);
		al.part_acc = reinterpret_cast<float *>(data + attn_ml_bytes(al.sh.th, al.nsplit));
		if (call->impl == CUDA_IMPL_ATTN_SPLIT)
			al.counters = cuda_scratch_counters(ctx);
	}

	switch (al.dtype) {
	case PLAN_DTYPE_F16:
		return attn_launch_typed<__half>(&al, msg, len);
	case PLAN_DTYPE_BF16:
		return attn_launch_typed<__nv_bfloat16>(&al, msg, len);
	default:
		return attn_launch_typed<float>(&al, msg, len);
	}
}
