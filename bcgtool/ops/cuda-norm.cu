/*
 * cuda-norm.cu - the CUDA kernels of the ops that reduce each row: rmsnorm,
 * layernorm, softmax and argmax.
 *
 * One block per row (a row loop beyond 65535 rows), each thread striding
 * over the columns, block reductions from cuda-internal.h. A row's
 * statistics are complete, behind the reduction's barrier, before any of
 * it is written, and the last pass reads each x[j] just before the same
 * thread writes out[j]: the ops work in place. The arithmetic follows the
 * host's formulas; only the order of the sums differs.
 */
#include "config.h"

#include "cuda-internal.h"

__global__ void bcg_rmsnorm_kernel(const void *x, int dtx, const void *w, int dtw,
                                   void *out, int dto, int64_t rows, int64_t cols, float eps)
{
	__shared__ float red[32];

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t base = r * cols;
		float sum = 0.0f;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
			float v = cuda_ld(x, dtx, base + j);
			sum += v * v;
		}
		sum = cuda_block_sum(sum, red);
		float rms = sqrtf(sum / (float)cols + eps);
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			cuda_st(out, dto, base + j, cuda_ld(x, dtx, base + j) / rms * cuda_ld(w, dtw, j));
	}
}

__global__ void bcg_layernorm_kernel(const void *x, int dtx, const void *w, int dtw,
                                     const void *b, int dtb, void *out, int dto,
                                     int64_t rows, int64_t cols, float eps)
{
	__shared__ float red[32];

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t base = r * cols;
		float sum = 0.0f;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			sum += cuda_ld(x, dtx, base + j);
		float mean = cuda_block_sum(sum, red) / (float)cols;
		float sq = 0.0f;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
			float d = cuda_ld(x, dtx, base + j) - mean;
			sq += d * d;
		}
		sq = cuda_block_sum(sq, red);
		float sd = sqrtf(sq / (float)cols + eps);
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
			/* __fmul_rn: rounded before the add, as on the host, not fused. */
			float y = __fmul_rn((cuda_ld(x, dtx, base + j) - mean) / sd, cuda_ld(w, dtw, j));
			cuda_st(out, dto, base + j, y + cuda_ld(b, dtb, j));
		}
	}
}

/* The exponentials are computed again in the last pass, as on the host:
 * nothing is written before the sum is known. */
__global__ void bcg_softmax_kernel(const void *x, int dtx, void *out, int dto,
                                   int64_t rows, int64_t cols)
{
	__shared__ float red[32];

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t base = r * cols;
		float max = -INFINITY;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			max = fmaxf(max, cuda_ld(x, dtx, base + j));
		max = cuda_block_max(max, red);
		float sum = 0.0f;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			sum += expf(cuda_ld(x, dtx, base + j) - max);
		sum = cuda_block_sum(sum, red);
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
			cuda_st(out, dto, base + j, expf(cuda_ld(x, dtx, base + j) - max) / sum);
	}
}

/* Whether candidate (V, I) beats the current best (BV, BI) under the
 * host's rule: larger wins, ties go to the smaller index, a NaN beats
 * every number and the first NaN wins. The relation is the same seen
 * from either side, so every lane of a butterfly agrees. */
__device__ __forceinline__ bool cuda_argmax_better(float v, int64_t i, float bv, int64_t bi)
{
	bool vn = isnan(v), bn = isnan(bv);

	if (vn || bn)
		return vn && (!bn || i < bi);
	return v > bv || (v == bv && i < bi);
}

__global__ void bcg_argmax_kernel(const void *x, int dtx, int32_t *out, int64_t rows,
                                  int64_t cols)
{
	__shared__ float red_v[32];
	__shared__ int64_t red_i[32];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

	for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
		int64_t base = r * cols;
		/* -inf at an impossible index: loses every tie to a real element. */
		float bv = -INFINITY;
		int64_t bi = INT64_MAX;
		for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
			float v = cuda_ld(x, dtx, base + j);
			if (cuda_argmax_better(v, j, bv, bi)) {
				bv = v;
				bi = j;
			}
		}
		for (int off = 16; off > 0; off >>= 1) {
			float ov = __shfl_xor_sync(0xffffffffu, bv, off);
			int64_t oi = __shfl_xor_sync(0xffffffffu, bi, off);
			if (cuda_argmax_better(ov, oi, bv, bi)) {
				bv = ov;
				bi = oi;
			}
		}
		__syncthreads();        /* the previous row's readers are done */
		if (lane == 0) {
			red_v[warp] = bv;
			red_i[warp] = bi;
		}
		__syncthreads();
		if (threadIdx.x == 0) {
			int nw = (int)(blockDim.x >> 5);
			for (int k = 0; k < nw; k++) {
				if (cuda_argmax_better(red_v[k], red_i[k], bv, bi)) {
					bv = red_v[k];
					bi = red_i[k];
				}
			}
			out[r] = bi == INT64_MAX ? 0 : (int32_t)bi;     /* empty row: 0 */
		}
	}
}

/* --- launchers ------------------------------------------------------------ */

/* The checks every row op shares: float dtypes, out shaped like x. */
static int cuda_row_check(const char *name, const struct op_tensor *x,
                          const struct op_tensor *out, char *msg, size_t len)
{
	if (!cuda_is_float_dtype(x->dtype) || !cuda_is_float_dtype(out->dtype))
		return cuda_fail(msg, len, "%s: unsupported dtypes %s -> %s", name,
		                 cuda_dtype_name(x->dtype), cuda_dtype_name(out->dtype));
	if (cuda_numel(out) != cuda_numel(x))
		return cuda_fail(msg, len, "%s: out has %lld elements, x %lld", name,
		                 (long long)cuda_numel(out), (long long)cuda_numel(x));
	return 0;
}

static int cuda_vec_check(const char *name, const char *what, const struct op_tensor *v,
                          int64_t cols, char *msg, size_t len)
{
	if (!cuda_is_float_dtype(v->dtype))
		return cuda_fail(msg, len, "%s: %s has unsupported dtype %s", name, what,
		                 cuda_dtype_name(v->dtype));
	if (cuda_numel(v) < cols)
		return cuda_fail(msg, len, "%s: %s has %lld elements, fewer than the %lld cols",
		                 name, what, (long long)cuda_numel(v), (long long)cols);
	return 0;
}

extern "C" int cuda_run_rmsnorm(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *w = &call->in[1], *out = &call->out[0];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);
	float eps = (float)call->attr[NORM_EPS].f;

	if (cuda_row_check("rmsnorm", x, out, msg, len) ||
	    cuda_vec_check("rmsnorm", "w", w, cols, msg, len))
		return -1;
	if (rows <= 0 || cols <= 0)
		return 0;
	bcg_rmsnorm_kernel<<<cuda_row_blocks(rows), cuda_row_threads(cols), 0, ctx->stream>>>(
		x->data, x->dtype, w->data, w->dtype, out->data, out->dtype, rows, cols, eps);
	return cuda_check_launch("bcg_rmsnorm_kernel", msg, len);
}

extern "C" int cuda_run_layernorm(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                  char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *w = &call->in[1], *b = &call->in[2];
	const struct op_tensor *out = &call->out[0];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);
	float eps = (float)call->attr[NORM_EPS].f;

	if (cuda_row_check("layernorm", x, out, msg, len) ||
	    cuda_vec_check("layernorm", "w", w, cols, msg, len) ||
	    cuda_vec_check("layernorm", "b", b, cols, msg, len))
		return -1;
	if (rows <= 0 || cols <= 0)
		return 0;
	bcg_layernorm_kernel<<<cuda_row_blocks(rows), cuda_row_threads(cols), 0, ctx->stream>>>(
		x->data, x->dtype, w->data, w->dtype, b->data, b->dtype, out->data, out->dtype,
		rows, cols, eps);
	return cuda_check_launch("bcg_layernorm_kernel", msg, len);
}

extern "C" int cuda_run_softmax(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);

	if (cuda_row_check("softmax", x, out, msg, len))
		return -1;
	if (rows <= 0 || cols <= 0)
		return 0;
	bcg_softmax_kernel<<<cuda_row_blocks(rows), cuda_row_threads(cols), 0, ctx->stream>>>(
		x->data, x->dtype, out->data, out->dtype, rows, cols);
	return cuda_check_launch("bcg_softmax_kernel", msg, len);
}

extern "C" int cuda_run_argmax(const struct op_call *call, const struct cuda_op_ctx *ctx,
                               char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = cuda_rows(x), cols = cuda_cols(x);

	if (!cuda_is_float_dtype(x->dtype) || out->dtype != PLAN_DTYPE_I32)
		return cuda_fail(msg, len, "argmax: dtypes %s -> %s, want a float -> i32",
		                 cuda_dtype_name(x->dtype), cuda_dtype_name(out->dtype));
	if (cuda_numel(out) != rows)
		return cuda_fail(msg, len, "argmax: out has %lld elements for %lld rows",
		                 (long long)cuda_numel(out), (long long)rows);
	if (rows <= 0)
		return 0;
	/* An empty row still gets its 0: the kernel runs for cols = 0 too. */
	bcg_argmax_kernel<<<cuda_row_blocks(rows), cuda_row_threads(cols), 0, ctx->stream>>>(
		x->data, x->dtype, static_cast<int32_t *>(out->data), rows, cols);
	return cuda_check_launch("bcg_argmax_kernel", msg, len);
}
