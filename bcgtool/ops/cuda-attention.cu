/*
 * cuda-attention.cu - decode attention of T query tokens over one
 * contiguous KV cache, split along the cache ("flash decoding"), on the
 * core of cuda-attention-core.h (lane groups, online softmax, split plan
 * and merge, shared with paged attention).
 *
 * Token t, head h attends to the first L = min(kv_len, S) cache rows
 * (causal: L - (T - 1 - t)); head h reads kv head h * kv_heads / heads.
 *
 * Two implementations merge the splits (cuda-attention-core.h): "split"
 * (the last block of each (t, h), up to CUDA_SCRATCH_COUNTERS pairs) and
 * "twopass" (a second kernel; any size). The two forms share the kernels
 * and differ in the launch:
 *  - eager (graph_safe 0): the split follows L, from the host's kv_len;
 *    the launch shape changes as the cache fills.
 *  - graph-safe (graph_safe 1): the number of splits follows S alone,
 *    and every block reads kv_len from device memory
 *    (attr_dev[ATTN_KV_LEN]) and cuts its row into chunks for that length
 *    (attn_core_chunk_for): a short row spreads over as many splits as
 *    chunks of 64 positions give, and the blocks of the splits past it
 *    exit at once. One captured launch is then right for every kv_len.
 */
#include "config.h"

#include <limits.h>
#include <string.h>

#include "cuda-attention-core.h"

/* --- device side ---------------------------------------------------------- */

/* Position j of a contiguous cache: row j of k and of v. */
template <typename T>
struct attn_rows {
	const T *k, *v;                 /* the kv head's first row */
	int64_t stride;                 /* elements from one row to the next */

	__device__ __forceinline__ bool at(int64_t j, const T *&kp, const T *&vp) const
	{
		kp = k + j * stride;
		vp = v + j * stride;
		return true;
	}
};

/* Block (t, h, split) = blockIdx.x as (t * H + h) * nsplit + split, over
 * keys [split * chunk, min(split * chunk + chunk, L)). KV_LEN_DEV, when not
 * NULL, gives kv_len; else KV_LEN does. */
template <typename T, int LPR, int EPL, bool VEC>
__global__ void __launch_bounds__(ATTN_CORE_THREADS)
bcg_attention_split_kernel(const T *q, const T *k, const T *v, T *out,
                           struct attn_core_scratch sc, unsigned *counters, int64_t H,
                           int64_t KVH, int D, int64_t S, int64_t kv_len,
                           const int32_t *kv_len_dev, int nsplit,
                           int64_t chunk, float scale, int64_t causal_rows)
{
	const int64_t bid = blockIdx.x;
	const int split = (int)(bid % nsplit);
	const int64_t th = bid / nsplit;                /* t * H + h */
	const int64_t g = (th % H) * KVH / H;
	const struct attn_rows<T> src = { k + g * D, v + g * D, KVH * D };

	cuda_pdl_begin();
	int64_t L = kv_len_dev ? (int64_t)*kv_len_dev : kv_len;
	L = L < 0 ? 0 : L > S ? S : L;
	if (causal_rows > 0) {          /* token t of T sees L - (T - 1 - t) keys */
		L -= causal_rows - 1 - th / H;
		L = L < 0 ? 0 : L;
	}
	if (kv_len_dev != NULL)
		chunk = attn_core_chunk_for(L, nsplit);
	attn_core_block<T, LPR, EPL, VEC>(src, q + th * D, L, chunk, split, nsplit, th, D, scale, out,
	                                  sc, counters);
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
	struct attn_core_scratch sc;
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
	if (sh->D > ATTN_CORE_MAX_HEAD_DIM)
		return cuda_fail(msg, len, "attention: head_dim %lld above the CUDA kernel's %d",
		                 (long long)sh->D, ATTN_CORE_MAX_HEAD_DIM);
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
	if (sh->th > INT_MAX / ATTN_CORE_MAX_SPLITS)
		return cuda_fail(msg, len, "attention: %lld tokens x %lld heads is too many",
		                 (long long)sh->T, (long long)sh->H);
	return 0;
}

extern "C" size_t cuda_attention_scratch_bytes(const struct op_call *call)
{
	struct attn_shape sh = {};

	if (cuda_attention_shape(call, &sh, NULL, 0) != 0 || sh.th < 1)
		return 0;
	return cuda_scratch_with_counters(attn_core_scratch_for(sh.th,
	                                  attn_core_splits_bound(sh.S, sh.th), sh.D));
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

/* One launch at the lane geometry attn_core_dispatch picks. */
template <typename T>
struct attn_launcher {
	const struct attn_launch *al;
	char *msg;
	size_t len;

	template <int LPR, int EPL, bool VEC>
	int run() const
	{
		const struct attn_shape *sh = &al->sh;
		T *out = static_cast<T *>(al->out);
		int rc = cuda_launch(al->ctx, "bcg_attention_split_kernel",
		                     bcg_attention_split_kernel<T, LPR, EPL, VEC>,
		                     dim3((unsigned)(sh->th * al->nsplit)), dim3(ATTN_CORE_THREADS),
		                     msg, len, static_cast<const T *>(al->q),
		                     static_cast<const T *>(al->k), static_cast<const T *>(al->v), out,
		                     al->sc, al->counters, sh->H, sh->KVH,
		                     (int)sh->D, sh->S, al->kv_len, al->kv_len_dev, al->nsplit,
		                     al->chunk, al->scale, al->causal_rows);
		return rc ? rc : attn_core_launch_merge<T>(al->ctx, al->sc, al->counters, out, sh->th,
		                                          al->nsplit, sh->D, msg, len);
	}
};

template <typename T>
static int attn_launch_typed(const struct attn_launch *al, char *msg, size_t len)
{
	const attn_launcher<T> l = { al, msg, len };

	return attn_core_dispatch<T>(al->sh.D, attn_core_aligned(al->sh.D, sizeof(T), al->q, al->k,
	                                                         al->v), l);
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
		attn_core_plan(al.sh.S, al.sh.th, attn_core_target(ctx->sm_count), &al.nsplit, &al.chunk);
	} else {
		int64_t L = al.kv_len < 0 ? 0 : al.kv_len > al.sh.S ? al.sh.S : al.kv_len;
		attn_core_plan(L, al.sh.th, attn_core_target(ctx->sm_count), &al.nsplit, &al.chunk);
	}

	need = cuda_scratch_with_counters(attn_core_scratch_for(al.sh.th, al.nsplit, al.sh.D));
	if (need > 0) {
		if (!ctx->scratch || ctx->scratch_bytes < need)
			return cuda_fail(msg, len, "attention: needs %zu bytes of scratch, the context "
			                 "has %zu", need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
		if ((uintptr_t)ctx->scratch % 16 != 0)
			return cuda_fail(msg, len, "attention: scratch is not 16-byte aligned");
		char *data = static_cast<char *>(cuda_scratch_data(ctx));
		al.sc = attn_core_scratch_at(data, al.sh.th, al.nsplit);
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
