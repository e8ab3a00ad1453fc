/*
 * cuda-dist.cu - the tensor-parallel kinds on CUDA: all_reduce and
 * all_gather through the rank's communicator (dist/comm.h: NCCL, ordered
 * on the op's stream, so that a capture takes the collective into the
 * graph), and vocab_embedding.
 *
 * The kernels here are launched the plain way: a collective is not a
 * kernel of ours, and the work around it waits for all before it.
 */
#include "config.h"

#include "cuda-internal.h"
#include "dist/comm.h"

/* out[r, k*C + j] = all[k, r, j]: the gathered shares side by side. */
__global__ void bcg_gather_cols_kernel(const char *all, char *out, int64_t rows, int64_t C,
                                       int world, int es)
{
	int64_t total = (int64_t)world * rows * C;

	for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < total;
	     n += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = n / ((int64_t)world * C), rem = n - r * world * C;
		int64_t k = rem / C, j = rem - k * C;
		const char *src = all + ((k * rows + r) * C + j) * es;
		char *dst = out + n * es;
		for (int b = 0; b < es; b++)
			dst[b] = src[b];
	}
}

static int cuda_copy_operand(void *dst, const void *src, size_t bytes, cudaStream_t stream,
                             const char *what, char *msg, size_t len)
{
	cudaError_t e;

	if (dst == src || bytes == 0)
		return 0;
	e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
	if (e != cudaSuccess)
		return cuda_fail(msg, len, "%s: cudaMemcpyAsync: %s", what, cudaGetErrorString(e));
	return 0;
}

extern "C" int cuda_run_all_reduce(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                   char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t n = cuda_numel(out);

	if (cuda_copy_operand(out->data, x->data, (size_t)n * cuda_dtype_size(out->dtype),
	                      ctx->stream, "all_reduce", msg, len) != 0)
		return -1;
	if (call->comm == NULL || call->comm->world == 1 || n == 0)
		return 0;
	call->comm->current = call->name;
	return dist_all_reduce(call->comm, out->data, (uint64_t)n, out->dtype, ctx->stream, msg,
	                       len);
}

extern "C" size_t cuda_all_gather_scratch_bytes(const struct op_call *call)
{
	const struct op_tensor *out = &call->out[0];

	/* Room for the shares before they are laid side by side (none is
	 * needed for one row, but the bound must not shrink with T), behind
	 * the scratch counters, which other kernels need zero. */
	return cuda_scratch_with_counters((size_t)cuda_numel(out) * cuda_dtype_size(out->dtype));
}

extern "C" int cuda_run_all_gather(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                   char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = cuda_rows(x), C = cuda_cols(x);
	int world = call->comm != NULL ? call->comm->world : 1;
	size_t es = cuda_dtype_size(x->dtype), need = (size_t)(world * rows * C) * es;

	if (cuda_cols(out) != world * C || cuda_rows(out) != rows)
		return cuda_fail(msg, len, "all_gather: out is [%lld, %lld]; %d ranks of [%lld, %lld] "
		                 "need [%lld, %lld]", (long long)cuda_rows(out),
		                 (long long)cuda_cols(out), world, (long long)rows, (long long)C,
		                 (long long)rows, (long long)(world * C));
	if (world == 1)
		return cuda_copy_operand(out->data, x->data, need, ctx->stream, "all_gather", msg,
		                         len);
	if (rows * C == 0)
		return 0;
	call->comm->current = call->name;
	if (rows == 1)
		return dist_all_gather(call->comm, x->data, out->data, (uint64_t)C, x->dtype,
		                       ctx->stream, msg, len);
	if (ctx->scratch == NULL || ctx->scratch_bytes < cuda_scratch_with_counters(need))
		return cuda_fail(msg, len, "all_gather: %zu bytes of scratch given, %zu needed",
		                 ctx->scratch ? ctx->scratch_bytes : 0, cuda_scratch_with_counters(need));
	/* The data scratch, behind the counters: a gather over them (as the
	 * first version did) left the next argmax and attention counting
	 * from garbage. */
	if (dist_all_gather(call->comm, x->data, cuda_scratch_data(ctx), (uint64_t)(rows * C),
	                    x->dtype, ctx->stream, msg, len) != 0)
		return -1;
	bcg_gather_cols_kernel<<<cuda_ew_blocks(world * rows * C, ctx->sm_count), CUDA_EW_THREADS,
	                         0, ctx->stream>>>(static_cast<const char *>(cuda_scratch_data(ctx)),
	                                           static_cast<char *>(out->data), rows, C, world,
	                                           (int)es);
	return cuda_check_launch("bcg_gather_cols_kernel", msg, len);
}
