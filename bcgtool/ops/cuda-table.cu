/*
 * cuda-table.cu - the table of CUDA launchers, indexed by enum op_id, and
 * the scratch each op kind needs.
 */
#include "config.h"

#include "cuda-internal.h"

static const cuda_kernel_fn cuda_kernels[OP_COUNT] = {
	cuda_run_fill,          /* OP_FILL */
	cuda_run_copy,          /* OP_COPY */
	cuda_run_add,           /* OP_ADD */
	cuda_run_mul,           /* OP_MUL */
	cuda_run_scale,         /* OP_SCALE */
	cuda_run_matmul,        /* OP_MATMUL */
	cuda_run_rmsnorm,       /* OP_RMSNORM */
	cuda_run_layernorm,     /* OP_LAYERNORM */
	cuda_run_silu_mul,      /* OP_SILU_MUL */
	cuda_run_gelu,          /* OP_GELU */
	cuda_run_softmax,       /* OP_SOFTMAX */
	cuda_run_rope,          /* OP_ROPE */
	cuda_run_embedding,     /* OP_EMBEDDING */
	cuda_run_kv_write,      /* OP_KV_WRITE */
	cuda_run_attention,     /* OP_ATTENTION */
	cuda_run_argmax,        /* OP_ARGMAX */
	NULL,                   /* OP_ADD_RMSNORM: not yet on CUDA */
	NULL,                   /* OP_MATMUL_ADD */
	NULL,                   /* OP_MATMUL_SILU_MUL */
	NULL,                   /* OP_ROPE_KV_WRITE */
	NULL,                   /* OP_SLICE */
};

/* C++ has no designated array initializers: the order above must follow
 * enum op_id, which these pin. */
static_assert(OP_FILL == 0 && OP_COPY == 1 && OP_ADD == 2 && OP_MUL == 3 && OP_SCALE == 4 &&
              OP_MATMUL == 5 && OP_RMSNORM == 6 && OP_LAYERNORM == 7 && OP_SILU_MUL == 8 &&
              OP_GELU == 9 && OP_SOFTMAX == 10 && OP_ROPE == 11 && OP_EMBEDDING == 12 &&
              OP_KV_WRITE == 13 && OP_ATTENTION == 14 && OP_ARGMAX == 15 && OP_ADD_RMSNORM == 16 &&
              OP_MATMUL_ADD == 17 && OP_MATMUL_SILU_MUL == 18 && OP_ROPE_KV_WRITE == 19 &&
              OP_SLICE == 20 && OP_COUNT == 21,
              "cuda_kernels[] follows enum op_id");

extern "C" cuda_kernel_fn cuda_kernel(enum op_id id)
{
	if ((int)id < 0 || (int)id >= OP_COUNT)
		return NULL;
	return cuda_kernels[id];
}

extern "C" size_t cuda_op_scratch_bytes(const struct op_call *call)
{
	if (!call->kind)
		return 0;
	switch (call->kind->id) {
	case OP_ATTENTION:
		return cuda_attention_scratch_bytes(call);
	default:
		return 0;
	}
}
