/*
 * host.c - the table of host reference kernels, element load and store,
 * and the tensor initializers of plan.h computed on the host.
 *
 * The kernels themselves live in host-*.c, grouped as host.h lists.
 */
#include "config.h"

#include <stdint.h>

#include "host-kernels.h"
#include "host.h"
#include "numeric.h"

static const host_kernel_fn host_kernels[OP_COUNT] = {
	[OP_FILL]      = host_run_fill,
	[OP_COPY]      = host_run_copy,
	[OP_ADD]       = host_run_add,
	[OP_MUL]       = host_run_mul,
	[OP_SCALE]     = host_run_scale,
	[OP_MATMUL]    = host_run_matmul,
	[OP_RMSNORM]   = host_run_rmsnorm,
	[OP_LAYERNORM] = host_run_layernorm,
	[OP_SILU_MUL]  = host_run_silu_mul,
	[OP_GELU]      = host_run_gelu,
	[OP_SOFTMAX]   = host_run_softmax,
	[OP_ROPE]      = host_run_rope,
	[OP_EMBEDDING] = host_run_embedding,
	[OP_KV_WRITE]  = host_run_kv_write,
	[OP_ATTENTION] = host_run_attention,
	[OP_ARGMAX]    = host_run_argmax,
	[OP_ADD_RMSNORM]     = host_run_add_rmsnorm,
	[OP_MATMUL_ADD]      = host_run_matmul_add,
	[OP_MATMUL_SILU_MUL] = host_run_matmul_silu_mul,
	[OP_ROPE_KV_WRITE]   = host_run_rope_kv_write,
	[OP_SLICE]           = host_run_slice,
	[OP_PAGED_KV_WRITE]      = host_run_paged_kv_write,
	[OP_ROPE_PAGED_KV_WRITE] = host_run_rope_paged_kv_write,
	[OP_PAGED_ATTENTION]     = host_run_paged_attention,
	[OP_QK_NORM]             = host_run_qk_norm,
	[OP_MOE_ROUTER]          = host_run_moe_router,
	[OP_MOE_ROUTER_PAGED]    = host_run_moe_router,
	[OP_MOE_EXPERTS]         = host_run_moe_experts,
	[OP_GATED_ADD]           = host_run_gated_add,
	[OP_ALL_REDUCE]          = host_run_all_reduce,
	[OP_ALL_GATHER]          = host_run_all_gather,
	[OP_VOCAB_EMBEDDING]     = host_run_vocab_embedding,
	[OP_RMSNORM_MATMUL]      = host_run_rmsnorm_matmul,
	[OP_RMSNORM_MATMUL_ROPE_KV_WRITE] = host_run_rmsnorm_matmul_rope_kv_write,
	[OP_DECODER_LAYER]       = host_run_decoder_layer,
	[OP_RMSNORM_MATMUL_ARGMAX] = host_run_rmsnorm_matmul_argmax,
};

/* The second implementation of the products (host-matmul.c), and of the
 * kinds that run products (host-fused.c, host-layer.c). */
static const host_kernel_fn host_blocked[OP_COUNT] = {
	[OP_MATMUL]          = host_run_matmul_blocked,
	[OP_MATMUL_ADD]      = host_run_matmul_add_blocked,
	[OP_MATMUL_SILU_MUL] = host_run_matmul_silu_mul_blocked,
	[OP_RMSNORM_MATMUL]  = host_run_rmsnorm_matmul_blocked,
	[OP_RMSNORM_MATMUL_ROPE_KV_WRITE] = host_run_rmsnorm_matmul_rope_kv_write_blocked,
	[OP_DECODER_LAYER]                = host_run_decoder_layer_blocked,
	[OP_RMSNORM_MATMUL_ARGMAX]        = host_run_rmsnorm_matmul_argmax_blocked,
};

/* Stored in plans: never rename one. */
static const char *const host_impl_names[] = { "reference", "blocked" };

host_kernel_fn host_kernel(enum op_id id)
{
	if ((int)id < 0 || id >= OP_COUNT)
		return NULL;
	return host_kernels[id];
}

int host_impl_count(enum op_id id)
{
	if ((int)id < 0 || id >= OP_COUNT)
		return 0;
	return host_blocked[id] != NULL ? 2 : 1;
}

const char *host_impl_name(enum op_id id, int impl)
{
	if (impl < 0 || impl >= host_impl_count(id))
		return NULL;
	return host_impl_names[impl];
}

host_kernel_fn host_impl_kernel(enum op_id id, int impl)
{
	if (impl < 0 || impl >= host_impl_count(id))
		return NULL;
	return impl == 0 ? host_kernels[id] : host_blocked[id];
}

float host_load(const struct op_tensor *t, int64_t i)
{
	return host_get(t, i);
}

void host_store(const struct op_tensor *t, int64_t i, float v)
{
	host_put(t, i, v);
}

int32_t host_f32_to_i32(float v)
{
	if (v != v)
		return 0;
	/* 2^31 is exact in f32; a plain cast of anything beyond is undefined. */
	if (v >= 2147483648.0f)
		return INT32_MAX;
	if (v <= -2147483648.0f)
		return INT32_MIN;
	return (int32_t)v;
}

/* Element I of INIT, before conversion to the tensor's dtype. */
static float host_init_value(const struct plan_init *init, uint64_t i)
{
	switch (init->kind) {
	case PLAN_INIT_ONES:
		return 1.0f;
	case PLAN_INIT_CONST:
		return (float)init->value;
	case PLAN_INIT_RANDOM:
		return bcg_uniform(init->seed, i) * (float)init->scale;
	case PLAN_INIT_ARANGE: {
		/* Two statements so that no compiler fuses them. */
		float step = (float)i * (float)init->scale;
		return (float)init->value + step;
	}
	}
	return 0.0f;
}

void host_init_range_slice(void *dst, int dtype, uint64_t first, uint64_t count,
                           const struct plan_init *init, const struct bcg_slice *slice)
{
	struct op_tensor t = { .dtype = dtype, .data = dst };

	if (init->kind < PLAN_INIT_ZEROS || init->kind > PLAN_INIT_ARANGE)
		return;
	if (dtype < PLAN_DTYPE_F32 || dtype > PLAN_DTYPE_I32)
		return;
	for (uint64_t i = first; i < first + count; i++)
		host_put(&t, (int64_t)i,
		         host_init_value(init, slice != NULL ? bcg_slice_index(slice, i) : i));
}

void host_init_range(void *dst, int dtype, uint64_t first, uint64_t count,
                     const struct plan_init *init)
{
	host_init_range_slice(dst, dtype, first, count, init, NULL);
}

void host_init_tensor(void *dst, int dtype, uint64_t count, const struct plan_init *init)
{
	host_init_range(dst, dtype, 0, count, init);
}
