/*
 * cuda-rope.cu - the CUDA kernels of rope (rotary position embedding with
 * positions read from device memory) and of rope_kv_write (rope of the q
 * and k parts of one q|k|v row, k and v written into the caches).
 *
 * One thread per (token, head, pair): it reads both elements of its pair
 * before writing either, so rope works in place. The angle is computed as
 * the host does: the f32 frequency of the op's rope_type, computed once on
 * the host (rope-scaling.c: a libm's powf may differ by an ulp, which at
 * position 4096 would move the angle by 1e-4), then a = pos * f in f32 and
 * the accurate sine and cosine (sincosf, one range reduction for both;
 * not the __ intrinsics), which agree with the host's within an ulp or
 * two, times the rope type's factor (yarn's attention factor). The
 * frequencies, of any rope_type, are computed on the host (rope-scaling.c),
 * once per launch: a double pow per element cost the kernel half its time.
 *
 * rope_kv_write does in one launch what slice, rope and kv_write do in
 * five: one work item per rotated pair of q and k and per element of v.
 * Rotated k is rounded once, to the cache's dtype; v moves as bits when
 * the dtypes agree. Positions outside [0, S) rotate q but write no cache
 * row, as kv_write. It is PDL-aware: it waits before reading qkv and
 * triggers after its stores. rope_paged_kv_write is the same kernel with
 * the cache row of each token read from its slot.
 *
 * With q_w and k_w (the "norm" kernels) each q and k head is first
 * normalized as qk_norm's kernel (cuda-norm.cu) does it: one warp a head,
 * each lane summing the squares of elements lane, lane + 32, ... in that
 * order, then cuda_warp_sum and x / rms * w, rounded to qkv's dtype as
 * qk_norm's store rounds it. The warp then rotates its head's pairs from
 * those rounded values: the bytes of qk_norm's kernel then this one's.
 */
#include "config.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cuda-internal.h"
#include "cuda-rope.h"
#include "rope-scaling.h"

/* Copy element I of X to element I of OUT: the bits when the dtypes
 * agree (as the host's memmove), else through f32. */
__device__ __forceinline__ void cuda_rope_copy(const void *x, int dtx, void *out, int dto,
                                               int64_t i)
{
	if (dtx == dto && cuda_dtype_size(dtx) == 2)
		static_cast<uint16_t *>(out)[i] = static_cast<const uint16_t *>(x)[i];
	else if (dtx == dto)
		static_cast<uint32_t *>(out)[i] = static_cast<const uint32_t *>(x)[i];
	else
		cuda_st(out, dto, i, cuda_ld(x, dtx, i));
}

/* cuda-rope.h */
void rope_freqs_fill(struct rope_freqs *freqs, double theta, int64_t d, const union op_value *a)
{
	struct rope_scaling rs;

	memset(freqs, 0, sizeof *freqs);
	rope_scaling_init(&rs, theta, d, a);
	for (int64_t i = 0; i < d / 2; i++)
		freqs->f[i] = rope_inv_freq(&rs, i);
	freqs->mscale = rope_mscale(&rs);
	freqs->limit = rope_pos_limit(&rs);
}

/* x, out [T, heads*head_dim]. Work item (t, h, i) for i < per_head, where
 * per_head is head_dim/2 pairs plus, for an odd head_dim, one more item
 * that copies the head's last element unrotated. */
__global__ void bcg_rope_kernel(const void *x, int dtx, const int32_t *pos, void *out,
                                int dto, int64_t T, int64_t heads, int64_t head_dim,
                                struct rope_freqs freqs)
{
	int64_t half = head_dim / 2, per_head = half + (head_dim & 1);
	int64_t total = T * heads * per_head, width = heads * head_dim;

	for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < total;
	     n += (int64_t)gridDim.x * blockDim.x) {
		int64_t i = n % per_head, th = n / per_head;
		int64_t h = th % heads, t = th / heads;
		int64_t k = t * width + h * head_dim + i;
		if (i >= half) {
			/* odd head_dim: the head's last element stays as it is */
			cuda_rope_copy(x, dtx, out, dto, t * width + h * head_dim + head_dim - 1);
			continue;
		}
		float c, s;
		rope_angle(freqs, pos[t], (int)i, &c, &s);
		float x1 = cuda_ld(x, dtx, k), x2 = cuda_ld(x, dtx, k + half);
		/* Products rounded before the sums, as on the host, not fused. */
		cuda_st(out, dto, k, __fmul_rn(x1, c) - __fmul_rn(x2, s));
		cuda_st(out, dto, k + half, __fmul_rn(x2, c) + __fmul_rn(x1, s));
	}
}

extern "C" int cuda_run_rope(const struct op_call *call, const struct cuda_op_ctx *ctx,
                             char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *pos = &call->in[1], *out = &call->out[0];
	int64_t heads = call->attr[ROPE_HEADS].i, head_dim = call->attr[ROPE_HEAD_DIM].i;
	double theta = call->attr[ROPE_THETA].f;
	int64_t T = cuda_numel(pos);
	struct rope_freqs freqs;

	if (!cuda_is_float_dtype(x->dtype) || !cuda_is_float_dtype(out->dtype) ||
	    pos->dtype != PLAN_DTYPE_I32)
		return cuda_fail(msg, len, "rope: dtypes x %s, pos %s, out %s not supported",
		                 cuda_dtype_name(x->dtype), cuda_dtype_name(pos->dtype),
		                 cuda_dtype_name(out->dtype));
	if (heads < 1 || head_dim < 1)
		return cuda_fail(msg, len, "rope: heads %lld and head_dim %lld must be positive",
		                 (long long)heads, (long long)head_dim);
	if (head_dim / 2 > ROPE_MAX_PAIRS)
		return cuda_fail(msg, len, "rope: head_dim %lld is above the %d this kernel takes",
		                 (long long)head_dim, 2 * ROPE_MAX_PAIRS);
	if (cuda_numel(x) != T * heads * head_dim || cuda_numel(out) != cuda_numel(x))
		return cuda_fail(msg, len, "rope: x and out must be [%lld, %lld]", (long long)T,
		                 (long long)(heads * head_dim));
	int64_t total = T * heads * (head_dim / 2 + (head_dim & 1));
	if (total <= 0)
		return 0;
	rope_freqs_fill(&freqs, theta, head_dim, &call->attr[ROPE_SCALING]);
	bcg_rope_kernel<<<cuda_ew_blocks(total, ctx->sm_count), CUDA_EW_THREADS, 0, ctx->stream>>>(
		x->data, x->dtype, static_cast<const int32_t *>(pos->data), out->data, out->dtype,
		T, heads, head_dim, freqs);
	return cuda_check_launch("bcg_rope_kernel", msg, len);
}

/* qkv [T, (H + 2 KVH) * D]; q [T, H * D]; caches [S, KVH * D]. Per token:
 * H * PH items of q, KVH * PH of k (PH = D / 2 pairs, plus one that copies
 * the last element of an odd head), and the v part: KVH * D items of one
 * element, or, with V16 (qkv and v_cache of one dtype, the v part of every
 * row and every cache row 16-byte aligned), KVH * D * size / 16 items of 16
 * bytes. The cache row of token t is its position pos[t] (rope_kv_write)
 * or, PAGED, its slot slots[t] (rope_paged_kv_write: a slot in [0, S), S =
 * NB * BS rows, while pos[t] still gives the rotation); a row outside [0,
 * S) -- a position past the cache, the pad slot -- is not written.
 *
 * Grid rows are tokens and grid columns a token's items, so a thread reads
 * its token's position and slot once and its indexes within a token are
 * 32-bit (the launch checks that a token's items fit). The two kernels
 * below are this one body, so that their names stay those that plans
 * record. */
/* NORM (the weights qw, kw given; D even): a token's q and k items are
 * instead one warp's 32 lanes per head, (H + KVH) * 32 of them, whole
 * warps since the block and the stride are multiples of 32 and they come
 * first; a warp's head, and whether it writes, is the same for its lanes,
 * so all 32 reach the reduction's shuffles together. */
template <bool PAGED, bool NORM>
__device__ __forceinline__ void rope_kv_write_body(const void *qkv, int dtx, const int32_t *pos,
                                                   const int32_t *slots, const void *qw,
                                                   const void *kw, float eps, void *q, int dtq,
                                                   void *kc, int dtk, void *vc, int dtv,
                                                   int64_t T, int H, int KVH, int D, int64_t S,
                                                   bool v16, const struct rope_freqs &freqs)
{
	const int half = D / 2, ph = half + (D & 1);
	const int width = (H + 2 * KVH) * D, kvw = KVH * D;
	const int nq = NORM ? H * 32 : H * ph, nk = NORM ? KVH * 32 : KVH * ph;
	const int xs = (int)cuda_dtype_size(dtx), vs = (int)cuda_dtype_size(dtv);
	const int nv = v16 ? kvw * xs / 16 : kvw;
	const int per_tok = nq + nk + nv;

	cuda_pdl_begin();
	for (int64_t t = blockIdx.y; t < T; t += gridDim.y) {
		const int64_t p = pos[t], row = PAGED ? (int64_t)slots[t] : p;
		const bool in_cache = row >= 0 && row < S;
		const char *src_row = static_cast<const char *>(qkv) + t * width * (int64_t)xs;
		for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < per_tok;
		     r += gridDim.x * blockDim.x) {
			if (r >= nq + nk) {                     /* v: moved as it is */
				const int j = r - nq - nk;
				const char *vsrc = src_row + (int64_t)(H + KVH) * D * xs;
				char *vdst = static_cast<char *>(vc) + row * kvw * (int64_t)vs;
				if (!in_cache)
					continue;
				if (v16)
					reinterpret_cast<uint4 *>(vdst)[j] =
						reinterpret_cast<const uint4 *>(vsrc)[j];
				else
					cuda_rope_copy(vsrc, dtx, vdst, dtv, j);
				continue;
			}
			if (NORM) {
				const int hh = r >> 5, lane = r & 31;
				const bool is_k = hh >= H;
				if (is_k && !in_cache)          /* the same for the warp */
					continue;
				const int h = is_k ? hh - H : hh;
				const int64_t src = t * width + (int64_t)hh * D;
				const void *w = is_k ? kw : qw;
				void *dst = is_k ? kc : q;
				const int dtd = is_k ? dtk : dtq;
				const int64_t dbase = is_k ? row * kvw + h * D : t * H * D + h * D;
				float sum = 0.0f;
				for (int j = lane; j < D; j += 32) {
					float v = cuda_ld(qkv, dtx, src + j);
					sum += v * v;
				}
				sum = cuda_warp_sum(sum);
				float rms = sqrtf(sum / (float)D + eps);
				for (int i = lane; i < half; i += 32) {
					float c, s;
					rope_angle(freqs, (int32_t)p, i, &c, &s);
					float x1 = cuda_round_to(dtx, cuda_ld(qkv, dtx, src + i) / rms *
					                              cuda_ld(w, dtx, i));
					float x2 = cuda_round_to(dtx, cuda_ld(qkv, dtx, src + i + half) / rms *
					                              cuda_ld(w, dtx, i + half));
					cuda_st(dst, dtd, dbase + i, __fmul_rn(x1, c) - __fmul_rn(x2, s));
					cuda_st(dst, dtd, dbase + i + half, __fmul_rn(x2, c) + __fmul_rn(x1, s));
				}
				continue;
			}
			const bool is_k = r >= nq;
			const int rr = is_k ? r - nq : r, h = rr / ph, i = rr - h * ph;
			if (is_k && !in_cache)
				continue;
			const int64_t src = t * width + (is_k ? H * D : 0) + h * D;
			void *dst = is_k ? kc : q;
			const int dtd = is_k ? dtk : dtq;
			const int64_t dbase = is_k ? row * kvw + h * D : t * H * D + h * D;
			if (i >= half) {
				/* odd head_dim: the head's last element stays as it is */
				const size_t ds = cuda_dtype_size(dtd);
				cuda_rope_copy(static_cast<const char *>(qkv) + src * (int64_t)xs, dtx,
				               static_cast<char *>(dst) + dbase * (int64_t)ds, dtd, D - 1);
				continue;
			}
			float c, s;
			rope_angle(freqs, (int32_t)p, i, &c, &s);
			float x1 = cuda_ld(qkv, dtx, src + i), x2 = cuda_ld(qkv, dtx, src + i + half);
			/* Products rounded before the sums, as on the host, not fused. */
			cuda_st(dst, dtd, dbase + i, __fmul_rn(x1, c) - __fmul_rn(x2, s));
			cuda_st(dst, dtd, dbase + i + half, __fmul_rn(x2, c) + __fmul_rn(x1, s));
		}
	}
}

__global__ void bcg_rope_kv_write_kernel(const void *qkv, int dtx, const int32_t *pos,
                                         void *q, int dtq, void *kc, int dtk, void *vc,
                                         int dtv, int64_t T, int H, int KVH, int D, int64_t S,
                                         bool v16, struct rope_freqs freqs)
{
	rope_kv_write_body<false, false>(qkv, dtx, pos, NULL, NULL, NULL, 0.0f, q, dtq, kc, dtk,
	                                 vc, dtv, T, H, KVH, D, S, v16, freqs);
}

__global__ void bcg_rope_paged_kv_write_kernel(const void *qkv, int dtx, const int32_t *pos,
                                               const int32_t *slots, void *q, int dtq, void *kc,
                                               int dtk, void *vc, int dtv, int64_t T, int H,
                                               int KVH, int D, int64_t S, bool v16,
                                               struct rope_freqs freqs)
{
	rope_kv_write_body<true, false>(qkv, dtx, pos, slots, NULL, NULL, 0.0f, q, dtq, kc, dtk,
	                                vc, dtv, T, H, KVH, D, S, v16, freqs);
}

/* The same with q_w and k_w (of qkv's dtype): qk_norm folded in. */
__global__ void bcg_rope_kv_write_norm_kernel(const void *qkv, int dtx, const int32_t *pos,
                                              const void *qw, const void *kw, float eps,
                                              void *q, int dtq, void *kc, int dtk, void *vc,
                                              int dtv, int64_t T, int H, int KVH, int D,
                                              int64_t S, bool v16, struct rope_freqs freqs)
{
	rope_kv_write_body<false, true>(qkv, dtx, pos, NULL, qw, kw, eps, q, dtq, kc, dtk, vc, dtv,
	                                T, H, KVH, D, S, v16, freqs);
}

__global__ void bcg_rope_paged_kv_write_norm_kernel(const void *qkv, int dtx,
                                                    const int32_t *pos, const int32_t *slots,
                                                    const void *qw, const void *kw, float eps,
                                                    void *q, int dtq, void *kc, int dtk,
                                                    void *vc, int dtv, int64_t T, int H,
                                                    int KVH, int D, int64_t S, bool v16,
                                                    struct rope_freqs freqs)
{
	rope_kv_write_body<true, true>(qkv, dtx, pos, slots, qw, kw, eps, q, dtq, kc, dtk, vc, dtv,
	                               T, H, KVH, D, S, v16, freqs);
}

/* The launch of rope_kv_write (SLOTS NULL) or rope_paged_kv_write, with
 * their weights q_w, k_w when the call has them: the operands checked,
 * the frequencies computed, one kernel launched. */
static int rope_kv_write_launch(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                const struct op_tensor *slots, char *msg, size_t len)
{
	const char *what = slots ? "rope_paged_kv_write" : "rope_kv_write";
	const struct op_tensor *qkv = &call->in[0], *pos = &call->in[1];
	const struct op_tensor *q = &call->out[0], *kc = &call->out[1], *vc = &call->out[2];
	const int wi = slots ? (int)RPKV_Q_W : (int)RKV_Q_W;
	const struct op_tensor *qw = call->nin > wi ? &call->in[wi] : NULL;
	const struct op_tensor *kw = call->nin > wi ? &call->in[wi + 1] : NULL;
	int64_t H = call->attr[RKV_HEADS].i, KVH = call->attr[RKV_KV_HEADS].i;
	int64_t D = call->attr[RKV_HEAD_DIM].i;
	double theta = call->attr[RKV_THETA].f;
	float eps = qw ? (float)call->attr[RKV_EPS].f : 0.0f;
	int64_t T = cuda_numel(pos), S = cuda_rows(kc);
	struct rope_freqs freqs;

	if (!cuda_is_float_dtype(qkv->dtype) || pos->dtype != PLAN_DTYPE_I32 ||
	    (slots && slots->dtype != PLAN_DTYPE_I32) || !cuda_is_float_dtype(q->dtype) ||
	    !cuda_is_float_dtype(kc->dtype) || !cuda_is_float_dtype(vc->dtype))
		return cuda_fail(msg, len, "%s: dtypes qkv %s, pos %s%s%s, q %s, k_cache %s, "
		                 "v_cache %s not supported", what, cuda_dtype_name(qkv->dtype),
		                 cuda_dtype_name(pos->dtype), slots ? ", slots " : "",
		                 slots ? cuda_dtype_name(slots->dtype) : "", cuda_dtype_name(q->dtype),
		                 cuda_dtype_name(kc->dtype), cuda_dtype_name(vc->dtype));
	if (H < 1 || KVH < 1 || D < 1)
		return cuda_fail(msg, len, "%s: heads %lld, kv_heads %lld and head_dim %lld "
		                 "must be positive", what, (long long)H, (long long)KVH, (long long)D);
	if (D / 2 > ROPE_MAX_PAIRS)
		return cuda_fail(msg, len, "%s: head_dim %lld is above the %d this kernel takes", what,
		                 (long long)D, 2 * ROPE_MAX_PAIRS);
	if (cuda_numel(qkv) != T * (H + 2 * KVH) * D || cuda_cols(qkv) != (H + 2 * KVH) * D)
		return cuda_fail(msg, len, "%s: qkv must be [%lld, %lld]", what, (long long)T,
		                 (long long)((H + 2 * KVH) * D));
	if (slots && cuda_numel(slots) != T)
		return cuda_fail(msg, len, "%s: slots must be [%lld]", what, (long long)T);
	if (qw && (qw->dtype != qkv->dtype || kw->dtype != qkv->dtype || cuda_numel(qw) != D ||
	           cuda_numel(kw) != D || D % 2 != 0))
		return cuda_fail(msg, len, "%s: q_w and k_w must be [%lld] of qkv's dtype %s, "
		                 "head_dim even", what, (long long)D, cuda_dtype_name(qkv->dtype));
	if (cuda_numel(q) != T * H * D)
		return cuda_fail(msg, len, "%s: q must be [%lld, %lld]", what, (long long)T,
		                 (long long)(H * D));
	if (cuda_cols(kc) != KVH * D || cuda_cols(vc) != KVH * D || cuda_rows(vc) != S)
		return cuda_fail(msg, len, "%s: k_cache and v_cache must be [%s, %lld] alike", what,
		                 slots ? "NB, BS" : "S", (long long)(KVH * D));
	/* A token's items, with v element by element (the most), must fit
	 * the body's 32-bit indexes. */
	if ((H + 2 * KVH) * D > INT_MAX / 2)
		return cuda_fail(msg, len, "%s: %lld heads and %lld kv_heads of %lld are above "
		                 "the kernel's %d elements a token", what, (long long)H,
		                 (long long)KVH, (long long)D, INT_MAX / 2);
	const int64_t per_tok = (H + KVH) * (qw ? 32 : D / 2 + (D & 1)) + KVH * D;
	if (T <= 0 || per_tok <= 0)
		return 0;
	const size_t xs = cuda_dtype_size(qkv->dtype);
	const bool v16 = qkv->dtype == vc->dtype && (KVH * D * (int64_t)xs) % 16 == 0 &&
	                 ((H + 2 * KVH) * D * (int64_t)xs) % 16 == 0 &&
	                 ((H + KVH) * D * (int64_t)xs) % 16 == 0 &&
	                 (uintptr_t)qkv->data % 16 == 0 && (uintptr_t)vc->data % 16 == 0;
	rope_freqs_fill(&freqs, theta, D, &call->attr[RKV_SCALING]);
	/* Columns: a token's items (at most enough to fill the device with
	 * the rows), rows: tokens, at most 65535 (the rest strided). */
	const int64_t cols = (per_tok + CUDA_EW_THREADS - 1) / CUDA_EW_THREADS;
	const int64_t rows = T < 65535 ? T : 65535;
	dim3 grid((unsigned)(cols < 1024 ? cols : 1024), (unsigned)rows), block(CUDA_EW_THREADS);
	static_assert(CUDA_EW_THREADS % 32 == 0, "the norm kernels' warps are whole");
	if (qw && slots == NULL)
		return cuda_launch(ctx, "bcg_rope_kv_write_norm_kernel", bcg_rope_kv_write_norm_kernel,
		                   grid, block, msg, len, (const void *)qkv->data, qkv->dtype,
		                   static_cast<const int32_t *>(pos->data), (const void *)qw->data,
		                   (const void *)kw->data, eps, q->data, q->dtype, kc->data,
		                   kc->dtype, vc->data, vc->dtype, T, (int)H, (int)KVH, (int)D, S,
		                   v16, freqs);
	if (qw)
		return cuda_launch(ctx, "bcg_rope_paged_kv_write_norm_kernel",
		                   bcg_rope_paged_kv_write_norm_kernel, grid, block, msg, len,
		                   (const void *)qkv->data, qkv->dtype,
		                   static_cast<const int32_t *>(pos->data),
		                   static_cast<const int32_t *>(slots->data), (const void *)qw->data,
		                   (const void *)kw->data, eps, q->data, q->dtype, kc->data,
		                   kc->dtype, vc->data, vc->dtype, T, (int)H, (int)KVH, (int)D, S,
		                   v16, freqs);
	if (slots == NULL)
		return cuda_launch(ctx, "bcg_rope_kv_write_kernel", bcg_rope_kv_write_kernel, grid,
		                   block, msg, len, (const void *)qkv->data, qkv->dtype,
		                   static_cast<const int32_t *>(pos->data), q->data, q->dtype,
		                   kc->data, kc->dtype, vc->data, vc->dtype, T, (int)H, (int)KVH,
		                   (int)D, S, v16, freqs);
	return cuda_launch(ctx, "bcg_rope_paged_kv_write_kernel", bcg_rope_paged_kv_write_kernel,
	                   grid, block, msg, len, (const void *)qkv->data, qkv->dtype,
	                   static_cast<const int32_t *>(pos->data),
	                   static_cast<const int32_t *>(slots->data), q->data, q->dtype, kc->data,
	                   kc->dtype, vc->data, vc->dtype, T, (int)H, (int)KVH, (int)D, S, v16,
	                   freqs);
}

extern "C" int cuda_run_rope_kv_write(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                      char *msg, size_t len)
{
	return rope_kv_write_launch(call, ctx, NULL, msg, len);
}

extern "C" int cuda_run_rope_paged_kv_write(const struct op_call *call,
                                            const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	return rope_kv_write_launch(call, ctx, &call->in[RPKV_SLOTS], msg, len);
}
