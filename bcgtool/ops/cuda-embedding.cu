/*
 * cuda-embedding.cu - the CUDA kernels that move rows by an index held in
 * device memory: embedding (gather rows of a table by token id) and
 * kv_write (scatter rows into a cache at positions).
 *
 * Ids and positions are data, never trusted: an id outside [0, V) gives a
 * row of zeros, a position outside [0, S) is skipped. Rows move as bits
 * when the dtypes agree (as the host's memmove), else through f32. Two
 * tokens writing one position race; op.h leaves the winner unspecified.
 *
 * vocab_embedding is embedding over a rank's share of the table.
 *
 * embedding is PDL-aware (it waits before reading the ids, which a step
 * writes, and triggers after its stores); kv_write is launched the plain
 * way.
 */
#include "config.h"

#include "cuda-internal.h"

/* out[t, j] = table[ids[t] - start, j], or 0 for an id outside the V rows
 * from START. U is the element's storage when the dtypes agree; the
 * converting form passes char. */
template <typename U>
__device__ void bcg_embedding_rows(const void *table, int dtt, const int32_t *ids,
                                   void *out, int dto, int64_t T, int64_t V, int64_t H,
                                   int64_t start)
{
	int64_t total = T * H;

	cuda_pdl_begin();
	for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < total;
	     n += (int64_t)gridDim.x * blockDim.x) {
		int64_t t = n / H, j = n - t * H;
		int64_t id = (int64_t)ids[t] - start;
		if (id < 0 || id >= V) {
			cuda_st(out, dto, n, 0.0f);
			continue;
		}
		if constexpr (sizeof(U) == 1)
			cuda_st(out, dto, n, cuda_ld(table, dtt, id * H + j));
		else
			static_cast<U *>(out)[n] = static_cast<const U *>(table)[id * H + j];
	}
}

template <typename U>
__global__ void bcg_embedding_kernel(const void *table, int dtt, const int32_t *ids,
                                     void *out, int dto, int64_t T, int64_t V, int64_t H)
{
	bcg_embedding_rows<U>(table, dtt, ids, out, dto, T, V, H, 0);
}

/* vocab_embedding: a rank's share of the table, rows START .. START+V-1. */
template <typename U>
__global__ void bcg_vocab_embedding_kernel(const void *table, int dtt, const int32_t *ids,
                                           void *out, int dto, int64_t T, int64_t V,
                                           int64_t H, int64_t start)
{
	bcg_embedding_rows<U>(table, dtt, ids, out, dto, T, V, H, start);
}

/* cache[pos[t], j] = x[t, j] for pos[t] in [0, S). */
template <typename U>
__global__ void bcg_kv_write_kernel(const void *x, int dtx, const int32_t *pos, void *cache,
                                    int dtc, int64_t T, int64_t S, int64_t W)
{
	int64_t total = T * W;

	for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < total;
	     n += (int64_t)gridDim.x * blockDim.x) {
		int64_t t = n / W, j = n - t * W;
		int64_t p = pos[t];
		if (p < 0 || p >= S)
			continue;
		if constexpr (sizeof(U) == 1)
			cuda_st(cache, dtc, p * W + j, cuda_ld(x, dtx, n));
		else
			static_cast<U *>(cache)[p * W + j] = static_cast<const U *>(x)[n];
	}
}

extern "C" int cuda_run_embedding(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                  char *msg, size_t len)
{
	const struct op_tensor *table = &call->in[0], *ids = &call->in[1];
	const struct op_tensor *out = &call->out[0];
	int64_t V = cuda_rows(table), H = cuda_cols(table), T = cuda_numel(ids);
	const int32_t *idp = static_cast<const int32_t *>(ids->data);

	if (!cuda_is_float_dtype(table->dtype) || !cuda_is_float_dtype(out->dtype) ||
	    ids->dtype != PLAN_DTYPE_I32)
		return cuda_fail(msg, len, "embedding: dtypes table %s, ids %s, out %s not supported",
		                 cuda_dtype_name(table->dtype), cuda_dtype_name(ids->dtype),
		                 cuda_dtype_name(out->dtype));
	if (cuda_cols(out) != H || cuda_numel(out) != T * H)
		return cuda_fail(msg, len, "embedding: out must be [%lld, %lld]", (long long)T,
		                 (long long)H);
	if (T * H <= 0)
		return 0;
	dim3 grid(cuda_ew_blocks(T * H, ctx->sm_count)), block(CUDA_EW_THREADS);
	const char *name = "bcg_embedding_kernel";
	if (table->dtype != out->dtype)
		return cuda_launch(ctx, name, bcg_embedding_kernel<char>, grid, block, msg, len,
		                   (const void *)table->data, table->dtype, idp, out->data,
		                   out->dtype, T, V, H);
	if (cuda_dtype_size(out->dtype) == 2)
		return cuda_launch(ctx, name, bcg_embedding_kernel<uint16_t>, grid, block, msg, len,
		                   (const void *)table->data, table->dtype, idp, out->data,
		                   out->dtype, T, V, H);
	return cuda_launch(ctx, name, bcg_embedding_kernel<uint32_t>, grid, block, msg, len,
	                   (const void *)table->data, table->dtype, idp, out->data, out->dtype,
	                   T, V, H);
}

extern "C" int cuda_run_vocab_embedding(const struct op_call *call,
                                        const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	const struct op_tensor *table = &call->in[0], *ids = &call->in[1];
	const struct op_tensor *out = &call->out[0];
	int64_t V = cuda_rows(table), H = cuda_cols(table), T = cuda_numel(ids);
	int64_t start = call->attr[VEMB_VOCAB_START].i;
	const int32_t *idp = static_cast<const int32_t *>(ids->data);

	if (!cuda_is_float_dtype(table->dtype) || !cuda_is_float_dtype(out->dtype) ||
	    ids->dtype != PLAN_DTYPE_I32)
		return cuda_fail(msg, len, "vocab_embedding: dtypes table %s, ids %s, out %s not "
		                 "supported", cuda_dtype_name(table->dtype),
		                 cuda_dtype_name(ids->dtype), cuda_dtype_name(out->dtype));
	if (cuda_cols(out) != H || cuda_numel(out) != T * H)
		return cuda_fail(msg, len, "vocab_embedding: out must be [%lld, %lld]",
		                 (long long)T, (long long)H);
	if (T * H <= 0)
		return 0;
	dim3 grid(cuda_ew_blocks(T * H, ctx->sm_count)), block(CUDA_EW_THREADS);
	const char *name = "bcg_vocab_embedding_kernel";
	if (table->dtype != out->dtype)
		return cuda_launch(ctx, name, bcg_vocab_embedding_kernel<char>, grid, block, msg, len,
		                   (const void *)table->data, table->dtype, idp, out->data,
		                   out->dtype, T, V, H, start);
	if (cuda_dtype_size(out->dtype) == 2)
		return cuda_launch(ctx, name, bcg_vocab_embedding_kernel<uint16_t>, grid, block, msg,
		                   len, (const void *)table->data, table->dtype, idp, out->data,
		                   out->dtype, T, V, H, start);
	return cuda_launch(ctx, name, bcg_vocab_embedding_kernel<uint32_t>, grid, block, msg, len,
	                   (const void *)table->data, table->dtype, idp, out->data, out->dtype,
	                   T, V, H, start);
}

extern "C" int cuda_run_kv_write(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                 char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *pos = &call->in[1];
	const struct op_tensor *cache = &call->out[0];
	int64_t S = cuda_rows(cache), W = cuda_cols(cache), T = cuda_numel(pos);
	const int32_t *pp = static_cast<const int32_t *>(pos->data);

	if (!cuda_is_float_dtype(x->dtype) || !cuda_is_float_dtype(cache->dtype) ||
	    pos->dtype != PLAN_DTYPE_I32)
		return cuda_fail(msg, len, "kv_write: dtypes x %s, pos %s, cache %s not supported",
		                 cuda_dtype_name(x->dtype), cuda_dtype_name(pos->dtype),
		                 cuda_dtype_name(cache->dtype));
	if (cuda_numel(x) != T * W)
		return cuda_fail(msg, len, "kv_write: x must be [%lld, %lld]", (long long)T,
		                 (long long)W);
	if (T * W <= 0 || S <= 0)
		return 0;
	unsigned blocks = cuda_ew_blocks(T * W, ctx->sm_count);
	if (x->dtype != cache->dtype)
		bcg_kv_write_kernel<char><<<blocks, CUDA_EW_THREADS, 0, ctx->stream>>>(
			x->data, x->dtype, pp, cache->data, cache->dtype, T, S, W);
	else if (cuda_dtype_size(x->dtype) == 2)
		bcg_kv_write_kernel<uint16_t><<<blocks, CUDA_EW_THREADS, 0, ctx->stream>>>(
			x->data, x->dtype, pp, cache->data, cache->dtype, T, S, W);
	else
		bcg_kv_write_kernel<uint32_t><<<blocks, CUDA_EW_THREADS, 0, ctx->stream>>>(
			x->data, x->dtype, pp, cache->data, cache->dtype, T, S, W);
	return cuda_check_launch("bcg_kv_write_kernel", msg, len);
}
