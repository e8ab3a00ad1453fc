/*
 * host-fused.c - the host references of the fused kinds that are not
 * products: add_rmsnorm and rope_kv_write (the products matmul_add and
 * matmul_silu_mul live in host-matmul.c).
 *
 * Each runs the arithmetic of its unfused sequence through the same code
 * (host_rmsnorm_row, host_rope_part, host_copy_elems), storing the
 * intermediates where the sequence stores them, so that the bytes are the
 * sequence's. Rows are independent in every kind here, so doing one row
 * of each step before the next row changes nothing.
 */
#include "config.h"

#include <stdint.h>

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

/* rope_kv_write (qkv, pos) -> (q, k_cache, v_cache): row t of qkv is
 * q | k | v, of heads, kv_heads and kv_heads heads. q = rope(q part);
 * rope(k part) goes to k_cache row pos[t], the v part to v_cache row
 * pos[t], positions outside the caches skipped. Tokens go in order, so of
 * two equal positions the later wins, as in kv_write. */
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
	host_rope_part(qkv, cols, 0, pos, q, qw, 0, NULL, heads, hd, &rs);
	host_rope_part(qkv, cols, qw, pos, kc, kw, 0, pos, kvh, hd, &rs);
	for (int64_t t = 0; t < T; t++) {
		int64_t p = host_get_i32(pos, t);
		if (p >= 0 && p < S)
			host_copy_elems(vc, p * kw, qkv, t * cols + qw + kw, kw);
	}
}
