/*
 * cuda-table.cu - the table of CUDA launchers, indexed by enum op_id, the
 * implementations of each kind, and the scratch each kind needs.
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
	cuda_run_add_rmsnorm,   /* OP_ADD_RMSNORM */
	cuda_run_matmul_add,    /* OP_MATMUL_ADD */
	cuda_run_matmul_silu_mul, /* OP_MATMUL_SILU_MUL */
	cuda_run_rope_kv_write, /* OP_ROPE_KV_WRITE */
	cuda_run_slice,         /* OP_SLICE */
	cuda_run_kv_write,      /* OP_PAGED_KV_WRITE: kv_write over NB * BS rows */
	cuda_run_rope_paged_kv_write, /* OP_ROPE_PAGED_KV_WRITE */
	cuda_run_paged_attention, /* OP_PAGED_ATTENTION */
	cuda_run_qk_norm,       /* OP_QK_NORM */
	cuda_run_moe_router,    /* OP_MOE_ROUTER */
	cuda_run_moe_router,    /* OP_MOE_ROUTER_PAGED: the same kernel, with slots */
	cuda_run_moe_experts,   /* OP_MOE_EXPERTS */
	cuda_run_gated_add,     /* OP_GATED_ADD */
	cuda_run_all_reduce,    /* OP_ALL_REDUCE */
	cuda_run_all_gather,    /* OP_ALL_GATHER */
	cuda_run_vocab_embedding, /* OP_VOCAB_EMBEDDING */
	cuda_run_rmsnorm_matmul, /* OP_RMSNORM_MATMUL */
	cuda_run_rmsnorm_matmul_rope_kv_write, /* OP_RMSNORM_MATMUL_ROPE_KV_WRITE */
	cuda_run_decoder_layer, /* OP_DECODER_LAYER */
	cuda_run_rmsnorm_matmul_argmax, /* OP_RMSNORM_MATMUL_ARGMAX */
};

/* C++ has no designated array initializers: the order above must follow
 * enum op_id, which these pin. */
static_assert(OP_FILL == 0 && OP_COPY == 1 && OP_ADD == 2 && OP_MUL == 3 && OP_SCALE == 4 &&
              OP_MATMUL == 5 && OP_RMSNORM == 6 && OP_LAYERNORM == 7 && OP_SILU_MUL == 8 &&
              OP_GELU == 9 && OP_SOFTMAX == 10 && OP_ROPE == 11 && OP_EMBEDDING == 12 &&
              OP_KV_WRITE == 13 && OP_ATTENTION == 14 && OP_ARGMAX == 15 &&
              OP_ADD_RMSNORM == 16 && OP_MATMUL_ADD == 17 && OP_MATMUL_SILU_MUL == 18 &&
              OP_ROPE_KV_WRITE == 19 && OP_SLICE == 20 && OP_PAGED_KV_WRITE == 21 &&
              OP_ROPE_PAGED_KV_WRITE == 22 && OP_PAGED_ATTENTION == 23 && OP_QK_NORM == 24 &&
              OP_MOE_ROUTER == 25 && OP_MOE_ROUTER_PAGED == 26 && OP_MOE_EXPERTS == 27 &&
              OP_GATED_ADD == 28 && OP_ALL_REDUCE == 29 && OP_ALL_GATHER == 30 &&
              OP_VOCAB_EMBEDDING == 31 && OP_RMSNORM_MATMUL == 32 &&
              OP_RMSNORM_MATMUL_ROPE_KV_WRITE == 33 && OP_DECODER_LAYER == 34 &&
              OP_RMSNORM_MATMUL_ARGMAX == 35 && OP_COUNT == 36,
              "cuda_kernels[] follows enum op_id");

extern "C" cuda_kernel_fn cuda_kernel(enum op_id id)
{
	if ((int)id < 0 || (int)id >= OP_COUNT)
		return NULL;
	return cuda_kernels[id];
}

/* The implementations' names, stored in plans: never rename one, never
 * reuse one. The kinds with one kernel call it "std". The index order is
 * the enums' of cuda-internal.h. */
static const char *const impl_products[] = { "mma", "gemv", "cublas", "cublas_class",
	                                      "mma_packed", "wgmma", "wgmma_whole", "rows",
	                                      NULL };
static const char *const impl_attention[] = { "split", "twopass", "cluster", "split_early",
	                                       "cluster_early", "cluster4", "cluster2", "cluster8",
	                                       "dsplit", "dsplit_early", NULL };
static const char *const impl_argmax[] = { "split", "row", NULL };
static const char *const impl_rmsnorm_matmul[] = { "gemv", "split", "rows", "rows_scaled",
                                                   NULL };
static const char *const impl_rmsnorm_matmul_rope_kv_write[] = { "gemv", "split", "rows_scaled",
                                                                 NULL };
static const char *const impl_decoder_layer[] = { "persistent", "split", NULL };
static const char *const impl_rmsnorm_matmul_argmax[] = { "gemv", "gemv_apart", "split", NULL };
static const char *const impl_one[] = { "std", NULL };

static const char *const *cuda_impl_names(enum op_id id)
{
	switch (id) {
	case OP_MATMUL:
	case OP_MATMUL_ADD:
	case OP_MATMUL_SILU_MUL:
		return impl_products;
	case OP_ATTENTION:
	case OP_PAGED_ATTENTION:
		return impl_attention;
	case OP_ARGMAX:
		return impl_argmax;
	case OP_RMSNORM_MATMUL:
		return impl_rmsnorm_matmul;
	case OP_RMSNORM_MATMUL_ROPE_KV_WRITE:
		return impl_rmsnorm_matmul_rope_kv_write;
	case OP_DECODER_LAYER:
		return impl_decoder_layer;
	case OP_RMSNORM_MATMUL_ARGMAX:
		return impl_rmsnorm_matmul_argmax;
	default:
		return impl_one;
	}
}

extern "C" int cuda_impl_count(enum op_id id)
{
	int n = 0;

	if ((int)id < 0 || (int)id >= OP_COUNT)
		return 0;
	for (const char *const *p = cuda_impl_names(id); *p; p++)
		n++;
	return n;
}

extern "C" const char *cuda_impl_name(enum op_id id, int impl)
{
	if (impl < 0 || impl >= cuda_impl_count(id))
		return NULL;
	return cuda_impl_names(id)[impl];
}

int cuda_impl_usable_id(enum op_id id, const struct op_call *call, int impl)
{
	if (impl < 0 || impl >= cuda_impl_count(id))
		return 0;
	switch (id) {
	case OP_MATMUL:
	case OP_MATMUL_ADD:
	case OP_MATMUL_SILU_MUL:
		return cuda_product_usable(id, call, impl);
	case OP_ATTENTION:
		return cuda_attention_usable(call, impl);
	case OP_PAGED_ATTENTION:
		return cuda_paged_attention_usable(call, impl);
	case OP_ARGMAX:
		return cuda_argmax_usable(call, impl);
	case OP_RMSNORM_MATMUL:
		return cuda_rmsnorm_matmul_usable(call, impl);
	case OP_RMSNORM_MATMUL_ROPE_KV_WRITE:
		return cuda_rmsnorm_matmul_rope_kv_write_usable(call, impl);
	case OP_DECODER_LAYER:
		return cuda_decoder_layer_usable(call, impl);
	case OP_RMSNORM_MATMUL_ARGMAX:
		return cuda_rmsnorm_matmul_argmax_usable(call, impl);
	default:
		/* The single kernels check their operands when launched. */
		return 1;
	}
}

extern "C" int cuda_impl_usable(const struct op_call *call, int impl)
{
	if (!call->kind)
		return 0;
	return cuda_impl_usable_id(call->kind->id, call, impl);
}

extern "C" int cuda_impl_default(const struct op_call *call)
{
	if (!call->kind)
		return -1;
	switch (call->kind->id) {
	case OP_MATMUL:
	case OP_MATMUL_ADD:
	case OP_MATMUL_SILU_MUL:
		return call->nout > 0 && call->out[0].rank == 2 && call->out[0].dim[0] == 1 &&
		       cuda_impl_usable(call, CUDA_IMPL_GEMV) ? CUDA_IMPL_GEMV : -1;
	case OP_DECODER_LAYER:
		/* split: the 1B-shaped and llama-decode steps ran 1.35 and 1.57
		 * times as long with persistent (bench/RESULTS.md, seventh
		 * session); the tuner still times both. */
		return cuda_impl_usable(call, CUDA_IMPL_DL_SPLIT) ? CUDA_IMPL_DL_SPLIT : -1;
	default:
		return -1;
	}
}

extern "C" int cuda_impl_windowed(enum op_id id, int impl)
{
	return id == OP_ATTENTION &&
	       (impl == CUDA_IMPL_ATTN_DSPLIT || impl == CUDA_IMPL_ATTN_DSPLIT_EARLY);
}

extern "C" int cuda_impl_shared(const struct op_call *call, int impl)
{
	return call->kind && cuda_impl_names(call->kind->id) == impl_products &&
	               impl == CUDA_IMPL_CUBLAS
	               ? CUDA_IMPL_CUBLAS_CLASS
	               : impl;
}

extern "C" size_t cuda_op_scratch_bytes(const struct op_call *call)
{
	if (!call->kind)
		return 0;
	switch (call->kind->id) {
	case OP_ATTENTION:
		return cuda_attention_scratch_bytes(call);
	case OP_PAGED_ATTENTION:
		return cuda_paged_attention_scratch_bytes(call);
	case OP_MATMUL:
	case OP_MATMUL_ADD:
	case OP_MATMUL_SILU_MUL:
		return cuda_product_scratch_bytes(call->kind->id, call);
	case OP_ARGMAX:
		return cuda_argmax_scratch_bytes(call);
	case OP_MOE_EXPERTS:
		return cuda_moe_experts_scratch_bytes(call);
	case OP_RMSNORM_MATMUL:
		return cuda_rmsnorm_matmul_scratch_bytes(call);
	case OP_RMSNORM_MATMUL_ROPE_KV_WRITE:
		return cuda_rmsnorm_matmul_rope_kv_write_scratch_bytes(call);
	case OP_DECODER_LAYER:
		return cuda_decoder_layer_scratch_bytes(call);
	case OP_RMSNORM_MATMUL_ARGMAX:
		return cuda_rmsnorm_matmul_argmax_scratch_bytes(call);
	case OP_ALL_GATHER:
		return cuda_all_gather_scratch_bytes(call);
	default:
		return 0;
	}
}
