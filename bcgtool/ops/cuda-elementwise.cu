/*
 * cuda-elementwise.cu - the CUDA kernels of the element-by-element ops:
 * fill, copy, add, mul, scale, silu_mul, gelu, and slice (a column range,
 * moved as bits when the dtypes agree; PDL-aware: it waits before reading
 * and triggers after its stores).
 *
 * Grid-stride loops over 64-bit indexes; each thread reads the inputs of
 * an element just before writing it, so every op here works in place.
 * Operands may mix float dtypes: elements are widened to f32, computed,
 * and stored rounded to nearest even, exactly as the host does, so fill,
 * copy, add, mul and scale give the host's bytes.
 */
#include "config.h"

#include "cuda-internal.h"

/* --- kernels -------------------------------------------------------------- */

__global__ void bcg_fill_kernel(void *out, int dt, int64_t n, float v)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		cuda_st(out, dt, i, v);
}

/* Same-dtype copies move the bits, so NaN payloads survive as on the host. */
template <typename U>
__global__ void bcg_copy_bits_kernel(const U *x, U *out, int64_t n)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		out[i] = x[i];
}

__global__ void bcg_convert_kernel(const void *x, int dtx, void *out, int dto, int64_t n)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		cuda_st(out, dto, i, cuda_ld(x, dtx, i));
}

/* out[i] = a[i] (+ or *) b[i mod nb]: b broadcast over a's leading axes. */
template <bool MUL>
__global__ void bcg_binary_kernel(const void *a, int dta, const void *b, int dtb,
                                  void *out, int dto, int64_t n, int64_t nb)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t j = nb == n ? i : i % nb;
		float x = cuda_ld(a, dta, i), y = cuda_ld(b, dtb, j);
		cuda_st(out, dto, i, MUL ? x * y : x + y);
	}
}

__global__ void bcg_scale_kernel(const void *x, int dtx, void *out, int dto, int64_t n,
                                 float alpha)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		cuda_st(out, dto, i, alpha * cuda_ld(x, dtx, i));
}

/* x [rows, 2N] (gate, then up), out [rows, N]. */
__global__ void bcg_silu_mul_kernel(const void *x, int dtx, void *out, int dto,
                                    int64_t rows, int64_t ncols)
{
	int64_t total = rows * ncols;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = i / ncols, j = i - r * ncols;
		float g = cuda_ld(x, dtx, r * 2 * ncols + j);
		float u = cuda_ld(x, dtx, r * 2 * ncols + ncols + j);
		float silu = g / (1.0f + expf(-g));
		cuda_st(out, dto, i, silu * u);
	}
}

/* The exact gelu, written in the host's order of operations. */
__global__ void bcg_gelu_kernel(const void *x, int dtx, void *out, int dto, int64_t n)
{
	const float sqrt2 = 1.41421356237309515f;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x) {
		float v = cuda_ld(x, dtx, i);
		float half = 0.5f * v;
		cuda_st(out, dto, i, half * (1.0f + erff(v / sqrt2)));
	}
}

/* --- launchers ------------------------------------------------------------ */

extern "C" int cuda_run_fill(const struct op_call *call, const struct cuda_op_ctx *ctx,
                             char *msg, size_t len)
{
	const struct op_tensor *out = &call->out[0];
	int64_t n = cuda_numel(out);
	float v = (float)call->attr[FILL_VALUE].f;

	if (!cuda_is_known_dtype(out->dtype))
		return cuda_fail(msg, len, "fill: unsupported dtype %d", out->dtype);
	if (n <= 0)
		return 0;
	bcg_fill_kernel<<<cuda_ew_blocks(n, ctx->sm_count), CUDA_EW_THREADS, 0, ctx->stream>>>(
		out->data, out->dtype, n, v);
	return cuda_check_launch("bcg_fill_kernel", msg, len);
}

extern "C" int cuda_run_copy(const struct op_call *call, const struct cuda_op_ctx *ctx,
                             char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t n = cuda_numel(out);
	unsigned blocks = cuda_ew_blocks(n, ctx->sm_count);

	if (cuda_numel(x) != n)
		return cuda_fail(msg, len, "copy: x has %lld elements, out %lld",
		                 (long long)cuda_numel(x), (long long)n);
	if (!cuda_is_known_dtype(x->dtype) || !cuda_is_known_dtype(out->dtype))
		return cuda_fail(msg, len, "copy: unsupported dtypes %d -> %d", x->dtype, out->dtype);
	if (n <= 0 || (x->data == out->data && x->dtype == out->dtype))
		return 0;               /* a copy onto itself changes nothing */
	if (x->dtype == out->dtype) {
		if (cuda_dtype_size(x->dtype) == 2) {
			bcg_copy_bits_kernel<uint16_t><<<blocks, CUDA_EW_THREADS, 0, ctx->stream>>>(
				static_cast<const uint16_t *>(x->data),
				static_cast<uint16_t *>(out->data), n);
		} else {
			bcg_copy_bits_kernel<uint32_t><<<blocks, CUDA_EW_THREADS, 0, ctx->stream>>>(
				static_cast<const uint32_t *>(x->data),
				static_cast<uint32_t *>(out->data), n);
		}
		return cuda_check_launch("bcg_copy_bits_kernel", msg, len);
	}
	if (!cuda_is_float_dtype(x->dtype) || !cuda_is_float_dtype(out->dtype))
		return cuda_fail(msg, len, "copy: cannot convert dtype %d to %d", x->dtype,
		                 out->dtype);
	bcg_convert_kernel<<<blocks, CUDA_EW_THREADS, 0, ctx->stream>>>(
		x->data, x->dtype, out->data, out->dtype, n);
	return cuda_check_launch("bcg_convert_kernel", msg, len);
}

static int cuda_run_binary(const struct op_call *call, const struct cuda_op_ctx *ctx,
                           char *msg, size_t len, bool mul)
{
	const char *name = mul ? "mul" : "add";
	const struct op_tensor *a = &call->in[0], *b = &call->in[1], *out = &call->out[0];
	int64_t n = cuda_numel(a), nb = cuda_numel(b);
	unsigned blocks = cuda_ew_blocks(n, ctx->sm_count);

	if (!cuda_is_float_dtype(a->dtype) || !cuda_is_float_dtype(b->dtype) ||
	    !cuda_is_float_dtype(out->dtype))
		return cuda_fail(msg, len, "%s: unsupported dtypes", name);
	if (cuda_numel(out) != n)
		return cuda_fail(msg, len, "%s: out has %lld elements, a %lld", name,
		                 (long long)cuda_numel(out), (long long)n);
	if (n <= 0)
		return 0;
	if (nb <= 0 || n % nb != 0)
		return cuda_fail(msg, len, "%s: b's %lld elements do not tile a's %lld", name,
		                 (long long)nb, (long long)n);
	if (mul)
		bcg_binary_kernel<true><<<blocks, CUDA_EW_THREADS, 0, ctx->stream>>>(
			a->data, a->dtype, b->data, b->dtype, out->data, out->dtype, n, nb);
	else
		bcg_binary_kernel<false><<<blocks, CUDA_EW_THREADS, 0, ctx->stream>>>(
			a->data, a->dtype, b->data, b->dtype, out->data, out->dtype, n, nb);
	return cuda_check_launch(mul ? "bcg_binary_kernel<mul>" : "bcg_binary_kernel<add>",
	                         msg, len);
}

extern "C" int cuda_run_add(const struct op_call *call, const struct cuda_op_ctx *ctx,
                            char *msg, size_t len)
{
	return cuda_run_binary(call, ctx, msg, len, false);
}

extern "C" int cuda_run_mul(const struct op_call *call, const struct cuda_op_ctx *ctx,
                            char *msg, size_t len)
{
	return cuda_run_binary(call, ctx, msg, len, true);
}

extern "C" int cuda_run_scale(const struct op_call *call, const struct cuda_op_ctx *ctx,
                              char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t n = cuda_numel(x);
	float alpha = (float)call->attr[SCALE_ALPHA].f;

	if (!cuda_is_float_dtype(x->dtype) || !cuda_is_float_dtype(out->dtype))
		return cuda_fail(msg, len, "scale: unsupported dtypes");
	if (cuda_numel(out) != n)
		return cuda_fail(msg, len, "scale: out has %lld elements, x %lld",
		                 (long long)cuda_numel(out), (long long)n);
	if (n <= 0)
		return 0;
	bcg_scale_kernel<<<cuda_ew_blocks(n, ctx->sm_count), CUDA_EW_THREADS, 0, ctx->stream>>>(
		x->data, x->dtype, out->data, out->dtype, n, alpha);
	return cuda_check_launch("bcg_scale_kernel", msg, len);
}

extern "C" int cuda_run_silu_mul(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                 char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = cuda_rows(out), ncols = cuda_cols(out);

	if (!cuda_is_float_dtype(x->dtype) || !cuda_is_float_dtype(out->dtype))
		return cuda_fail(msg, len, "silu_mul: unsupported dtypes");
	if (cuda_rows(x) != rows || cuda_cols(x) != 2 * ncols)
		return cuda_fail(msg, len, "silu_mul: x is not [rows, 2N] for out [rows, N]");
	if (rows * ncols <= 0)
		return 0;
	bcg_silu_mul_kernel<<<cuda_ew_blocks(rows * ncols, ctx->sm_count), CUDA_EW_THREADS, 0,
	                      ctx->stream>>>(x->data, x->dtype, out->data, out->dtype, rows,
	                                     ncols);
	return cuda_check_launch("bcg_silu_mul_kernel", msg, len);
}

extern "C" int cuda_run_gelu(const struct op_call *call, const struct cuda_op_ctx *ctx,
                             char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t n = cuda_numel(x);

	if (!cuda_is_float_dtype(x->dtype) || !cuda_is_float_dtype(out->dtype))
		return cuda_fail(msg, len, "gelu: unsupported dtypes");
	if (cuda_numel(out) != n)
		return cuda_fail(msg, len, "gelu: out has %lld elements, x %lld",
		                 (long long)cuda_numel(out), (long long)n);
	if (n <= 0)
		return 0;
	bcg_gelu_kernel<<<cuda_ew_blocks(n, ctx->sm_count), CUDA_EW_THREADS, 0, ctx->stream>>>(
		x->data, x->dtype, out->data, out->dtype, n);
	return cuda_check_launch("bcg_gelu_kernel", msg, len);
}

/* out[r, j] = x[r, start + j] for x [rows, C], out [rows, W]. U is the
 * element's storage when the dtypes agree; the converting form passes
 * char. */
template <typename U>
__global__ void bcg_slice_kernel(const void *x, int dtx, void *out, int dto, int64_t rows,
                                 int64_t C, int64_t W, int64_t start)
{
	const int64_t total = rows * W;

	cuda_pdl_begin();
	for (int64_t n = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; n < total;
	     n += (int64_t)gridDim.x * blockDim.x) {
		int64_t r = n / W, j = n - r * W, src = r * C + start + j;
		if constexpr (sizeof(U) == 1)
			cuda_st(out, dto, n, cuda_ld(x, dtx, src));
		else
			static_cast<U *>(out)[n] = static_cast<const U *>(x)[src];
	}
}

extern "C" int cuda_run_slice(const struct op_call *call, const struct cuda_op_ctx *ctx,
                              char *msg, size_t len)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = cuda_rows(x), C = cuda_cols(x), W = cuda_cols(out);
	int64_t start = call->attr[SLICE_START].i;
	const char *name = "bcg_slice_kernel";
	dim3 grid, block(CUDA_EW_THREADS);

	if (!cuda_is_known_dtype(x->dtype) || !cuda_is_known_dtype(out->dtype) ||
	    (x->dtype != out->dtype &&
	     (!cuda_is_float_dtype(x->dtype) || !cuda_is_float_dtype(out->dtype))))
		return cuda_fail(msg, len, "slice: dtypes %s -> %s not supported",
		                 cuda_dtype_name(x->dtype), cuda_dtype_name(out->dtype));
	if (start < 0 || W < 0 || start + W > C || cuda_numel(out) != rows * W)
		return cuda_fail(msg, len, "slice: columns [%lld, %lld) of x [%lld, %lld] do not "
		                 "give out's %lld elements", (long long)start, (long long)(start + W),
		                 (long long)rows, (long long)C, (long long)cuda_numel(out));
	if (rows * W <= 0)
		return 0;
	grid = dim3(cuda_ew_blocks(rows * W, ctx->sm_count));
	if (x->dtype != out->dtype)
		return cuda_launch(ctx, name, bcg_slice_kernel<char>, grid, block, msg, len,
		                   (const void *)x->data, x->dtype, out->data, out->dtype, rows, C, W,
		                   start);
	if (cuda_dtype_size(x->dtype) == 2)
		return cuda_launch(ctx, name, bcg_slice_kernel<uint16_t>, grid, block, msg, len,
		                   (const void *)x->data, x->dtype, out->data, out->dtype, rows, C, W,
		                   start);
	return cuda_launch(ctx, name, bcg_slice_kernel<uint32_t>, grid, block, msg, len,
	                   (const void *)x->data, x->dtype, out->data, out->dtype, rows, C, W,
	                   start);
}
