/*
 * host-kernels.h - private to the host reference kernels (host*.c): the
 * kernel of each op kind, which host.c's table points at, and the inline
 * element access and shape helpers they share. The rest of the program
 * uses host.h.
 */
#ifndef BCG_OPS_HOST_KERNELS_H
#define BCG_OPS_HOST_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "host.h"
#include "numeric.h"
#include "rope-scaling.h"

/* The references round every operation: a * b + c must not become one
 * fused multiply-add. GCC does not fuse in ISO C mode (-std=c11); clang
 * fuses within an expression unless told not to. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

/* host-elementwise.c */
void host_run_fill(const struct op_call *call);
void host_run_copy(const struct op_call *call);
void host_run_add(const struct op_call *call);
void host_run_mul(const struct op_call *call);
void host_run_scale(const struct op_call *call);
void host_run_silu_mul(const struct op_call *call);
void host_run_gelu(const struct op_call *call);
void host_run_slice(const struct op_call *call);
/* host-matmul.c: the products, reference and blocked (same bytes) */
void host_run_matmul(const struct op_call *call);
void host_run_matmul_add(const struct op_call *call);
void host_run_matmul_silu_mul(const struct op_call *call);
void host_run_matmul_blocked(const struct op_call *call);
void host_run_matmul_add_blocked(const struct op_call *call);
void host_run_matmul_silu_mul_blocked(const struct op_call *call);
void host_run_rmsnorm_matmul(const struct op_call *call);
void host_run_rmsnorm_matmul_blocked(const struct op_call *call);
/* host-fused.c */
void host_run_rmsnorm_matmul_rope_kv_write(const struct op_call *call);
void host_run_rmsnorm_matmul_rope_kv_write_blocked(const struct op_call *call);
void host_run_rmsnorm_matmul_argmax(const struct op_call *call);
void host_run_rmsnorm_matmul_argmax_blocked(const struct op_call *call);
/* host-norm.c */
void host_run_rmsnorm(const struct op_call *call);
void host_run_layernorm(const struct op_call *call);
/* host-fused.c */
void host_run_add_rmsnorm(const struct op_call *call);
void host_run_rope_kv_write(const struct op_call *call);
/* host-softmax.c */
void host_run_softmax(const struct op_call *call);
void host_run_argmax(const struct op_call *call);
/* host-position.c */
void host_run_rope(const struct op_call *call);
void host_run_embedding(const struct op_call *call);
void host_run_kv_write(const struct op_call *call);
/* host-attention.c */
void host_run_attention(const struct op_call *call);
/* host-layer.c (host.h: host_decoder_layer_run, which says why it failed) */
void host_run_decoder_layer(const struct op_call *call);
void host_run_decoder_layer_blocked(const struct op_call *call);
/* host-paged.c */
void host_run_paged_kv_write(const struct op_call *call);
void host_run_rope_paged_kv_write(const struct op_call *call);
void host_run_paged_attention(const struct op_call *call);
void host_run_qk_norm(const struct op_call *call);
/* host-moe.c */
void host_run_moe_router(const struct op_call *call);
void host_run_moe_experts(const struct op_call *call);
void host_run_gated_add(const struct op_call *call);
/* host-dist.c (through the table a failed collective leaves NaN: the
 * backend calls host_collective, which reports it) */
void host_run_all_reduce(const struct op_call *call);
void host_run_all_gather(const struct op_call *call);
void host_run_vocab_embedding(const struct op_call *call);

/* The kernels that allocate scratch, with that choice made by the caller:
 * USE_SCRATCH 0 takes the allocation-free path they fall back to when
 * malloc fails. Both paths give the same bytes; the unit tests check it. */
void host_matmul_run(const struct op_call *call, int use_scratch);
void host_attention_run(const struct op_call *call, int use_scratch);
/* rmsnorm_matmul, BLOCKED picking the product's loop order */
void host_rmsnorm_matmul_run(const struct op_call *call, int blocked, int use_scratch);
/* rmsnorm_matmul_rope_kv_write, the same choices (host-fused.c) */
void host_rmsnorm_matmul_rope_kv_write_run(const struct op_call *call, int blocked,
                                           int use_scratch);

/* The products (host-matmul.c): what follows the product. */
enum host_epilogue {
	HOST_EPI_NONE,                 /* matmul: out = P */
	HOST_EPI_ADD,                  /* matmul_add (x, a, b): out = x + P */
	HOST_EPI_SILU_MUL,             /* matmul_silu_mul: out = silu_mul(P) */
};

/* The product kernel of EPILOGUE; BLOCKED picks the blocked loop order,
 * USE_SCRATCH 0 the allocation-free path of the reference. Every choice
 * gives the same bytes. */
void host_product_run(const struct op_call *call, int epilogue, int blocked, int use_scratch);

/* Row ROW of rmsnorm (x, w) -> out (host-norm.c), for add_rmsnorm to
 * normalize exactly as rmsnorm does. */
void host_rmsnorm_row(const struct op_tensor *x, const struct op_tensor *w,
                      const struct op_tensor *out, int64_t row, float eps);
/* The same arithmetic on the N elements of X from element BASE, into OUT
 * at BASE, with w[0 .. N) (qk_norm's heads). */
void host_rmsnorm_span(const struct op_tensor *x, const struct op_tensor *w,
                       const struct op_tensor *out, int64_t base, int64_t n, float eps);

/* rope (host-position.c) on part of a row: for each token t < numel(pos),
 * the HEADS heads of HEAD_DIM elements from column X_COL of row t of X
 * (X_COLS columns a row) are rotated by pos[t] into OUT from column
 * OUT_COL (OUT_COLS columns a row), at row t or, when AT is not NULL,
 * at row at[t] (pos itself for kv_write, the slots for the paged write),
 * skipped outside [0, rows of OUT) as kv_write skips it. */
void host_rope_part(const struct op_tensor *x, int64_t x_cols, int64_t x_col,
                    const struct op_tensor *pos, const struct op_tensor *out,
                    int64_t out_cols, int64_t out_col, const struct op_tensor *at,
                    int64_t heads, int64_t head_dim, const struct rope_scaling *rs);

/* rope_kv_write's and rope_paged_kv_write's q and k with the weights QW
 * and KW (host-fused.c): each head of CALL's qkv normalized as qk_norm
 * does it (eps RKV_EPS) and stored in qkv's dtype, then rotated by RS as
 * host_rope_part rotates it, into q and into KC's row AT[t] (pos or the
 * slots; KC seen as [rows, kv_heads * head_dim]), skipped outside KC.
 * The bytes of qk_norm then the unnormed kind. head_dim is at most
 * HOST_RKV_MAX_HEAD_DIM (the registry's rope bound). */
#define HOST_RKV_MAX_HEAD_DIM 512
void host_rope_kv_normed(const struct op_call *call, const struct op_tensor *qw,
                         const struct op_tensor *kw, const struct op_tensor *kc,
                         const struct op_tensor *at, const struct rope_scaling *rs);

/* Inline forms of host_load and host_store, for the kernels' inner loops. */
static inline float host_get(const struct op_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case PLAN_DTYPE_F32:
		return ((const float *)t->data)[i];
	case PLAN_DTYPE_F16:
		return bcg_f16_to_f32(((const uint16_t *)t->data)[i]);
	case PLAN_DTYPE_BF16:
		return bcg_bf16_to_f32(((const uint16_t *)t->data)[i]);
	case PLAN_DTYPE_I32:
		return (float)((const int32_t *)t->data)[i];
	}
	return 0.0f;
}

static inline void host_put(const struct op_tensor *t, int64_t i, float v)
{
	switch (t->dtype) {
	case PLAN_DTYPE_F32:
		((float *)t->data)[i] = v;
		break;
	case PLAN_DTYPE_F16:
		((uint16_t *)t->data)[i] = bcg_f32_to_f16(v);
		break;
	case PLAN_DTYPE_BF16:
		((uint16_t *)t->data)[i] = bcg_f32_to_bf16(v);
		break;
	case PLAN_DTYPE_I32:
		((int32_t *)t->data)[i] = host_f32_to_i32(v);
		break;
	}
}

/* V rounded to DTYPE and widened back: what a store to a tensor of DTYPE
 * and a load from it give (f32 is unchanged). */
static inline float host_round(int dtype, float v)
{
	switch (dtype) {
	case PLAN_DTYPE_F16:
		return bcg_f16_to_f32(bcg_f32_to_f16(v));
	case PLAN_DTYPE_BF16:
		return bcg_bf16_to_f32(bcg_f32_to_bf16(v));
	}
	return v;
}

/* Element I of an i32 operand (ids, positions). */
static inline int32_t host_get_i32(const struct op_tensor *t, int64_t i)
{
	return ((const int32_t *)t->data)[i];
}

/* Bytes per element (plan_dtype_size without linking libplan). */
static inline size_t host_dtype_size(int dtype)
{
	return dtype == PLAN_DTYPE_F16 || dtype == PLAN_DTYPE_BF16 ? 2 : 4;
}

/* Copy N elements from SRC at SOFF to DST at DOFF: the bytes when the
 * dtypes agree, else converted through f32. */
static inline void host_copy_elems(const struct op_tensor *dst, int64_t doff,
                                   const struct op_tensor *src, int64_t soff, int64_t n)
{
	if (dst->dtype == src->dtype) {
		size_t size = host_dtype_size(dst->dtype);
		if (n > 0)
			memmove((char *)dst->data + (size_t)doff * size,
			        (const char *)src->data + (size_t)soff * size, (size_t)n * size);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		host_put(dst, doff + i, host_get(src, soff + i));
}

/* Shapes, as op.h defines them (computed here rather than through the
 * registry's op_tensor_* so that the kernels stand alone). */
static inline int64_t host_numel(const struct op_tensor *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= t->dim[d];
	return n;
}

static inline int64_t host_cols(const struct op_tensor *t)
{
	return t->rank > 0 ? t->dim[t->rank - 1] : 1;
}

static inline int64_t host_rows(const struct op_tensor *t)
{
	int64_t n = 1;
	for (int d = 0; d + 1 < t->rank; d++)
		n *= t->dim[d];
	return n;
}

#endif /* BCG_OPS_HOST_KERNELS_H */
