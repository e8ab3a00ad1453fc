/*
 * host-layer.c - the host reference of decoder_layer: a whole Llama
 * decoder layer, run as its unfused sequence (op.h) through the kernels
 * of that sequence, each intermediate stored in x's dtype where the
 * sequence stores it:
 *
 *   h    = rmsnorm(x, attn_norm)                     host_rmsnorm_row
 *   qkv  = h @ w_qkv^T                               host_product_run
 *   q, k_cache, v_cache = rope_kv_write(qkv, pos)    host_run_rope_kv_write
 *   att  = attention(q, k_cache, v_cache)            host_attention_run
 *   x1   = x + att @ w_o^T                           host_product_run (add)
 *   h    = rmsnorm(x1, ffn_norm)                     host_rmsnorm_row
 *   act  = silu_mul(h @ w_gate_up^T)                 host_product_run (silu_mul)
 *   out  = x1 + act @ w_down^T                       host_product_run (add)
 *
 * so its bytes are the sequence's. Unlike the other fused kinds it has no
 * path without memory: x1 must outlive the attention of every token, and
 * att the norm of its whole row. So it can fail (out of memory), as the
 * collectives can: host_decoder_layer_run says so, and the backend reports
 * it as a fault of the step.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-kernels.h"

/* A [ROWS, COLS] tensor of DTYPE at DATA. */
static struct op_tensor dl_tensor(int dtype, int64_t rows, int64_t cols, void *data)
{
	struct op_tensor t = { .dtype = dtype, .rank = 2, .dim = { rows, cols }, .data = data };

	return t;
}

/* The product (a, b) -> out with trans_b, or (x, a, b) with EPILOGUE
 * HOST_EPI_ADD: the weights are [out, in]. */
static void dl_product(const struct op_tensor *x, const struct op_tensor *a,
                       const struct op_tensor *b, const struct op_tensor *out, int epilogue,
                       int blocked)
{
	struct op_call p;
	int first = epilogue == HOST_EPI_ADD ? 1 : 0;

	memset(&p, 0, sizeof p);
	p.nin = 2 + first;
	p.nout = 1;
	if (first)
		p.in[0] = *x;
	p.in[first] = *a;
	p.in[first + 1] = *b;
	p.out[0] = *out;
	p.attr[MATMUL_TRANS_A].i = 0;
	p.attr[MATMUL_TRANS_B].i = 1;
	host_product_run(&p, epilogue, blocked, 1);
}

int host_decoder_layer_run(const struct op_call *call, int blocked, char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[DL_X], *out = &call->out[DL_OUT];
	const struct op_tensor *kc = &call->out[DL_K_CACHE], *vc = &call->out[DL_V_CACHE];
	int64_t T = host_rows(x), H = host_cols(x), QKV = host_rows(&call->in[DL_W_QKV]);
	int64_t QW = call->attr[RKV_HEADS].i * call->attr[RKV_HEAD_DIM].i;
	int64_t F = host_rows(&call->in[DL_W_GATE_UP]) / 2, per_row = 2 * H + QKV + 2 * QW + F;
	float eps = (float)call->attr[DL_EPS].f;
	size_t es = host_dtype_size(x->dtype);
	struct op_tensor h, qkv, q, att, x1, act;
	struct op_call rkv, attn;
	char *buf;

	if (T <= 0)
		return 0;
	/* Every operand is in memory, so no count of elements overflows; the
	 * bytes could on 32 bits. */
	if ((uint64_t)T > SIZE_MAX / es / (uint64_t)per_row ||
	    (buf = malloc((size_t)T * (size_t)per_row * es)) == NULL) {
		snprintf(msg, len, "decoder_layer: out of memory (its intermediates need %llu "
		         "bytes)", (unsigned long long)T * (unsigned long long)per_row *
		         (unsigned long long)es);
		return -1;
	}
	h = dl_tensor(x->dtype, T, H, buf);
	qkv = dl_tensor(x->dtype, T, QKV, (char *)h.data + (size_t)(T * H) * es);
	q = dl_tensor(x->dtype, T, QW, (char *)qkv.data + (size_t)(T * QKV) * es);
	att = dl_tensor(x->dtype, T, QW, (char *)q.data + (size_t)(T * QW) * es);
	x1 = dl_tensor(x->dtype, T, H, (char *)att.data + (size_t)(T * QW) * es);
	act = dl_tensor(x->dtype, T, F, (char *)x1.data + (size_t)(T * H) * es);

	for (int64_t r = 0; r < T; r++)
		host_rmsnorm_row(x, &call->in[DL_ATTN_NORM], &h, r, eps);
	dl_product(NULL, &h, &call->in[DL_W_QKV], &qkv, HOST_EPI_NONE, blocked);

	/* rope_kv_write's attributes are the layer's first (RKV_*); without
	 * q_w and k_w its eps is not read. */
	rkv = *call;
	rkv.nin = 2;
	rkv.nout = 3;
	rkv.in[0] = qkv;
	rkv.in[1] = call->in[DL_POS];
	rkv.out[0] = q;
	rkv.out[1] = *kc;
	rkv.out[2] = *vc;
	host_run_rope_kv_write(&rkv);

	memset(&attn, 0, sizeof attn);
	attn.nin = 3;
	attn.nout = 1;
	attn.in[0] = q;
	attn.in[1] = *kc;
	attn.in[2] = *vc;
	attn.out[0] = att;
	attn.attr[ATTN_HEADS] = call->attr[RKV_HEADS];
	attn.attr[ATTN_KV_HEADS] = call->attr[RKV_KV_HEADS];
	attn.attr[ATTN_HEAD_DIM] = call->attr[RKV_HEAD_DIM];
	attn.attr[ATTN_KV_LEN] = call->attr[DL_KV_LEN];
	attn.attr[ATTN_SCALE] = call->attr[DL_SCALE];
	attn.attr[ATTN_CAUSAL] = call->attr[DL_CAUSAL];
	host_attention_run(&attn, 1);

	dl_product(x, &att, &call->in[DL_W_O], &x1, HOST_EPI_ADD, blocked);
	for (int64_t r = 0; r < T; r++)
		host_rmsnorm_row(&x1, &call->in[DL_FFN_NORM], &h, r, eps);
	dl_product(NULL, &h, &call->in[DL_W_GATE_UP], &act, HOST_EPI_SILU_MUL, blocked);
	/* x was last read by the o product: out may be x. */
	dl_product(&x1, &act, &call->in[DL_W_DOWN], out, HOST_EPI_ADD, blocked);
	free(buf);
	return 0;
}

/* Through the table a layer that found no memory leaves NaN in out (the
 * host backend calls host_decoder_layer_run, which reports it). */
static void dl_run(const struct op_call *call, int blocked)
{
	const struct op_tensor *out = &call->out[DL_OUT];
	char msg[160];

	if (host_decoder_layer_run(call, blocked, msg, sizeof msg) != 0)
		for (int64_t i = 0; i < host_numel(out); i++)
			host_put(out, i, NAN);
}

void host_run_decoder_layer(const struct op_call *call)
{
	dl_run(call, 0);
}

void host_run_decoder_layer_blocked(const struct op_call *call)
{
	dl_run(call, 1);
}
