/*
 * host-fused.c - the host references of the fused kinds that are not
 * products: add_rmsnorm and rope_kv_write (the products matmul_add and
 * matmul_silu_mul live in host-matmul.c); rmsnorm_matmul_rope_kv_write,
 * which runs rmsnorm, the product and rope_kv_write's own code in turn;
 * and rmsnorm_matmul_argmax, rmsnorm_matmul's then argmax's.
 *
 * Each runs the arithmetic of its unfused sequence through the same code
 * (host_rmsnorm_row, host_rope_part, host_copy_elems), storing the
 * intermediates where the sequence stores them, so that the bytes are the
 * sequence's. Rows are independent in every kind here, so doing one row
 * of each step before the next row changes nothing.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host-kernels.h"

/* add_rmsnorm (x, r, w) -> (sum, out): sum = x + r, stored; out =
 * rmsnorm(sum, w) from the stored sum. Each element of x is read before
 * sum's is written, so sum may be x. */
void host_run_add_rmsnorm(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *r = &call->in[1], *w = &call->in[2];
	const struct op_tensor *sum = &call->out[0], *out = &call->out[1];
	int64_t rows = host_rows(x), cols = host_cols(x);
	float eps = (float)call->attr[NORM_EPS].f;

	for (int64_t row = 0; row < rows; row++) {
		int64_t base = row * cols;
		for (int64_t j = 0; j < cols; j++)
			host_put(sum, base + j, host_get(x, base + j) + host_get(r, base + j));
		host_rmsnorm_row(sum, w, out, row, eps);
	}
}

/* host-kernels.h. Head by head: the head normalized into a buffer of
 * qkv's dtype by qk_norm's arithmetic (host_rmsnorm_span, its store
 * rounding), then rotated from there by host_rope_part, one token (pos1)
 * and one head at a time, into q's row t or the cache row AT[t]. */
void host_rope_kv_normed(const struct op_call *call, const struct op_tensor *qw,
                         const struct op_tensor *kw, const struct op_tensor *kc,
                         const struct op_tensor *at, const struct rope_scaling *rs)
{
	const struct op_tensor *qkv = &call->in[0], *pos = &call->in[1], *q = &call->out[0];
	int64_t heads = call->attr[RKV_HEADS].i, kvh = call->attr[RKV_KV_HEADS].i;
	int64_t hd = call->attr[RKV_HEAD_DIM].i, cols = host_cols(qkv), T = host_numel(pos);
	float eps = (float)call->attr[RKV_EPS].f;
	size_t size = host_dtype_size(qkv->dtype);
	union { float f[HOST_RKV_MAX_HEAD_DIM]; uint16_t h[HOST_RKV_MAX_HEAD_DIM]; } buf;
	int32_t pt, row;
	struct op_tensor head = { .dtype = qkv->dtype, .rank = 2, .dim = { 1, hd }, .data = &buf };
	struct op_tensor pos1 = { .dtype = PLAN_DTYPE_I32, .rank = 1, .dim = { 1 }, .data = &pt };
	struct op_tensor row1 = { .dtype = PLAN_DTYPE_I32, .rank = 1, .dim = { 1 }, .data = &row };

	if (hd > HOST_RKV_MAX_HEAD_DIM)        /* the registry's bound; never here */
		return;
	for (int64_t t = 0; t < T; t++) {
		pt = host_get_i32(pos, t);
		row = host_get_i32(at, t);
		for (int64_t h = 0; h < heads + kvh; h++) {
			struct op_tensor x = *qkv;
			x.data = (char *)qkv->data + (size_t)(t * cols + h * hd) * size;
			host_rmsnorm_span(&x, h < heads ? qw : kw, &head, 0, hd, eps);
			if (h < heads)
				host_rope_part(&head, hd, 0, &pos1, q, heads * hd, t * heads * hd + h * hd,
				               NULL, 1, hd, rs);
			else
				host_rope_part(&head, hd, 0, &pos1, kc, kvh * hd, (h - heads) * hd, &row1,
				               1, hd, rs);
		}
	}
}

/* rope_kv_write (qkv, pos[, q_w, k_w]) -> (q, k_cache, v_cache): row t of
 * qkv is q | k | v, of heads, kv_heads and kv_heads heads. q = rope(q
 * part); rope(k part) goes to k_cache row pos[t], the v part to v_cache
 * row pos[t], positions outside the caches skipped. Tokens go in order, so
 * of two equal positions the later wins, as in kv_write. With q_w and k_w,
 * each q and k head is first qk_norm's (host_rope_kv_normed). */
void host_run_rope_kv_write(const struct op_call *call)
{
	const struct op_tensor *qkv = &call->in[0], *pos = &call->in[1];
	const struct op_tensor *q = &call->out[0], *kc = &call->out[1], *vc = &call->out[2];
	int64_t heads = call->attr[RKV_HEADS].i, kvh = call->attr[RKV_KV_HEADS].i;
	int64_t hd = call->attr[RKV_HEAD_DIM].i;
	struct rope_scaling rs;
	int64_t qw = heads * hd, kw = kvh * hd, cols = host_cols(qkv);
	int64_t T = host_numel(pos), S = host_rows(vc);

	rope_scaling_init(&rs, call->attr[RKV_THETA].f, hd, &call->attr[RKV_SCALING]);
	if (call->nin > RKV_Q_W) {
		host_rope_kv_normed(call, &call->in[RKV_Q_W], &call->in[RKV_K_W], kc, pos, &rs);
	} else {
		host_rope_part(qkv, cols, 0, pos, q, qw, 0, NULL, heads, hd, &rs);
		host_rope_part(qkv, cols, qw, pos, kc, kw, 0, pos, kvh, hd, &rs);
	}
	for (int64_t t = 0; t < T; t++) {
		int64_t p = host_get_i32(pos, t);
		if (p >= 0 && p < S)
			host_copy_elems(vc, p * kw, qkv, t * cols + qw + kw, kw);
	}
}

/* Element N of the q|k|v product's row M, as rmsnorm then matmul store
 * it, for the path without memory: h's elements formed where they are
 * used (host_rmsnorm_span's arithmetic, the store's rounding), summed in
 * k order as the reference product sums them, rounded to x's dtype. RMS
 * is row M's. */
static float rrk_qkv_elem(const struct op_call *call, int64_t m, int64_t n, float rms)
{
	const struct op_tensor *x = &call->in[RRK_X], *w = &call->in[RRK_W];
	const struct op_tensor *b = &call->in[RRK_B];
	int64_t K = host_cols(x), N = call->attr[RRK_TRANS_B].i ? host_rows(b) : host_cols(b);
	int64_t bk = call->attr[RRK_TRANS_B].i ? 1 : N, bn = call->attr[RRK_TRANS_B].i ? K : 1;
	float p = 0.0f;

	for (int64_t k = 0; k < K; k++) {
		float hv = host_round(x->dtype, host_get(x, m * K + k) / rms * host_get(w, k));
		p += hv * host_get(b, k * bk + n * bn);
	}
	return host_round(x->dtype, p);
}

/* rmsnorm_matmul_rope_kv_write without memory for h and qkv: each q|k|v
 * element computed where rope_kv_write reads it, rotated by
 * host_rope_part's arithmetic (the same bytes, at many times the cost). */
static void rrk_unbuffered(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[RRK_X], *pos = &call->in[RRK_POS];
	const struct op_tensor *q = &call->out[0], *kc = &call->out[1], *vc = &call->out[2];
	int64_t heads = call->attr[RKV_HEADS].i, kvh = call->attr[RKV_KV_HEADS].i;
	int64_t hd = call->attr[RKV_HEAD_DIM].i, half = hd / 2, K = host_cols(x);
	int64_t qw = heads * hd, kw = kvh * hd, T = host_numel(pos), S = host_rows(vc);
	float eps = (float)call->attr[RRK_EPS].f;
	struct rope_scaling rs;

	rope_scaling_init(&rs, call->attr[RKV_THETA].f, hd, &call->attr[RKV_SCALING]);
	int64_t limit = rope_pos_limit(&rs);
	float ms = rope_mscale(&rs);
	for (int64_t t = 0; t < T; t++) {
		int32_t pt = host_get_i32(pos, t);
		int in_cache = pt >= 0 && pt < S;
		float sum = 0.0f;
		for (int64_t k = 0; k < K; k++) {
			float v = host_get(x, t * K + k);
			sum += v * v;
		}
		float rms = sqrtf(sum / (float)K + eps);
		for (int64_t i = 0; i < half; i++) {
			float a = (float)pt * rope_inv_freq(&rs, i);
			float c = cosf(a) * ms, s = sinf(a) * ms;
			if (pt >= limit)
				c = s = NAN;
			for (int64_t h = 0; h < heads + kvh; h++) {
				int is_k = h >= heads;
				const struct op_tensor *out = is_k ? kc : q;
				int64_t ok = is_k ? (int64_t)pt * kw + (h - heads) * hd + i
				                  : t * qw + h * hd + i;
				if (is_k && !in_cache)
					continue;
				float x1 = rrk_qkv_elem(call, t, h * hd + i, rms);
				float x2 = rrk_qkv_elem(call, t, h * hd + i + half, rms);
				host_put(out, ok, x1 * c - x2 * s);
				host_put(out, ok + half, x2 * c + x1 * s);
			}
		}
		if (in_cache)
			for (int64_t j = 0; j < kw; j++)
				host_put(vc, (int64_t)pt * kw + j, rrk_qkv_elem(call, t, qw + kw + j, rms));
	}
}

/* rmsnorm_matmul_rope_kv_write (x, w, b, pos) -> (q, k_cache, v_cache):
 * h = rmsnorm(x, w) stored in x's dtype (host_rmsnorm_row), qkv = h @
 * op(b) stored in x's dtype (host_product_run, BLOCKED picking its loop
 * order), then host_run_rope_kv_write on qkv: the three kinds' bytes.
 * USE_SCRATCH 0, or a failed malloc, takes rrk_unbuffered. */
void host_rmsnorm_matmul_rope_kv_write_run(const struct op_call *call, int blocked,
                                           int use_scratch)
{
	const struct op_tensor *x = &call->in[RRK_X], *b = &call->in[RRK_B];
	int64_t rows = host_rows(x), K = host_cols(x);
	int64_t N = call->attr[RRK_TRANS_B].i ? host_rows(b) : host_cols(b);
	size_t es = host_dtype_size(x->dtype);
	struct op_call prod, rkv;
	void *hbuf = NULL, *qbuf = NULL;

	if (rows <= 0)
		return;
	if (use_scratch && K > 0 && N > 0 && (uint64_t)rows <= SIZE_MAX / es / (uint64_t)K &&
	    (uint64_t)rows <= SIZE_MAX / es / (uint64_t)N) {
		hbuf = malloc((size_t)rows * (size_t)K * es);
		qbuf = malloc((size_t)rows * (size_t)N * es);
	}
	if (hbuf == NULL || qbuf == NULL) {
		free(hbuf);
		free(qbuf);
		rrk_unbuffered(call);
		return;
	}
	memset(&prod, 0, sizeof prod);
	prod.nin = 2;
	prod.nout = 1;
	prod.in[0] = *x;
	prod.in[0].data = hbuf;
	prod.in[1] = *b;
	prod.out[0] = *x;
	prod.out[0].dim[1] = N;
	prod.out[0].data = qbuf;
	prod.attr[MATMUL_TRANS_A].i = 0;
	prod.attr[MATMUL_TRANS_B].i = call->attr[RRK_TRANS_B].i;
	for (int64_t r = 0; r < rows; r++)
		host_rmsnorm_row(x, &call->in[RRK_W], &prod.in[0], r, (float)call->attr[RRK_EPS].f);
	host_product_run(&prod, HOST_EPI_NONE, blocked, 1);
	rkv = *call;
	rkv.nin = 2;
	rkv.in[0] = prod.out[0];
	rkv.in[1] = call->in[RRK_POS];
	host_run_rope_kv_write(&rkv);
	free(hbuf);
	free(qbuf);
}

void host_run_rmsnorm_matmul_rope_kv_write(const struct op_call *call)
{
	host_rmsnorm_matmul_rope_kv_write_run(call, 0, 1);
}

void host_run_rmsnorm_matmul_rope_kv_write_blocked(const struct op_call *call)
{
	host_rmsnorm_matmul_rope_kv_write_run(call, 1, 1);
}

/* rmsnorm_matmul_argmax (x, w, b) -> (out, index): rmsnorm_matmul (x, w,
 * b) -> out with epilogue none (BLOCKED picking the product's loop
 * order), then argmax (out) -> index on out as stored: the two kinds'
 * bytes. */
static void rna_run(const struct op_call *call, int blocked)
{
	struct op_call rnm, am;

	op_rna_parts(call, &rnm, &am);
	host_rmsnorm_matmul_run(&rnm, blocked, 1);
	host_run_argmax(&am);
}

void host_run_rmsnorm_matmul_argmax(const struct op_call *call)
{
	rna_run(call, 0);
}

void host_run_rmsnorm_matmul_argmax_blocked(const struct op_call *call)
{
	rna_run(call, 1);
}
