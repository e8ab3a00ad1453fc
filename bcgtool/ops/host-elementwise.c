/*
 * host-elementwise.c - the host references of the element-by-element ops:
 * fill, copy, slice, add, mul, scale, silu_mul, gelu.
 *
 * Each output element depends only on the input elements at its own index
 * (or its own row and column for silu_mul), read before it is written, so
 * every one of them also works in place.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "host-kernels.h"

/* fill () -> out: out = value, in any dtype (i32 truncates toward zero). */
void host_run_fill(const struct op_call *call)
{
	const struct op_tensor *out = &call->out[0];
	float v = (float)call->attr[FILL_VALUE].f;
	int64_t n = host_numel(out);

	for (int64_t i = 0; i < n; i++)
		host_put(out, i, v);
}

/* copy (x) -> out: out = x converted to out's dtype. The same dtype copies
 * the bytes, so NaN payloads survive and a copy onto itself is harmless. */
void host_run_copy(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t n = host_numel(out);

	if (x->dtype == out->dtype) {
		if (n > 0 && x->data != out->data)
			memmove(out->data, x->data, (size_t)n * host_dtype_size(out->dtype));
		return;
	}
	if (x->dtype == PLAN_DTYPE_I32 || out->dtype == PLAN_DTYPE_I32)
		return;         /* the check accepts float<->float and i32->i32 only */
	for (int64_t i = 0; i < n; i++)
		host_put(out, i, host_get(x, i));
}

/* slice (x) -> out: x [rows, C], out [rows, W] of x's dtype: out[r, j] =
 * x[r, start + j], the bytes. */
void host_run_slice(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = host_rows(out), w = host_cols(out), c = host_cols(x);
	int64_t start = call->attr[SLICE_START].i;

	for (int64_t r = 0; r < rows; r++)
		host_copy_elems(out, r * w, x, r * c + start, w);
}

/* add and mul: b has a's shape or a trailing part of it, so b's element
 * for a's element i is i modulo b's size. */
static void host_binary(const struct op_call *call, int multiply)
{
	const struct op_tensor *a = &call->in[0], *b = &call->in[1], *out = &call->out[0];
	int64_t n = host_numel(a), nb = host_numel(b);

	if (nb <= 0)
		return;         /* then a is empty too */
	for (int64_t i = 0, j = 0; i < n; i++) {
		float x = host_get(a, i), y = host_get(b, j);
		host_put(out, i, multiply ? x * y : x + y);
		if (++j == nb)
			j = 0;
	}
}

/* add (a, b) -> out: out = a + b, b broadcast over a's leading axes. */
void host_run_add(const struct op_call *call)
{
	host_binary(call, 0);
}

/* mul (a, b) -> out: out = a * b, b broadcast over a's leading axes. */
void host_run_mul(const struct op_call *call)
{
	host_binary(call, 1);
}

/* scale (x) -> out: out = alpha * x. */
void host_run_scale(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	float alpha = (float)call->attr[SCALE_ALPHA].f;
	int64_t n = host_numel(x);

	for (int64_t i = 0; i < n; i++)
		host_put(out, i, alpha * host_get(x, i));
}

/* silu_mul (x) -> out: x [rows, 2N] holds gate then up; out [rows, N]:
 * out[r,j] = silu(x[r,j]) * x[r,N+j], silu(g) = g / (1 + exp(-g)). */
void host_run_silu_mul(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = host_rows(out), n = host_cols(out);

	for (int64_t r = 0; r < rows; r++) {
		for (int64_t j = 0; j < n; j++) {
			float g = host_get(x, r * 2 * n + j);
			float u = host_get(x, r * 2 * n + n + j);
			float silu = g / (1.0f + expf(-g));
			host_put(out, r * n + j, silu * u);
		}
	}
}

/* gelu (x) -> out: out = 0.5 x (1 + erf(x / sqrt 2)), the exact form (not
 * the tanh approximation). */
void host_run_gelu(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	const float sqrt2 = 1.41421356237309515f;    /* sqrtf(2.0f) */
	int64_t n = host_numel(x);

	for (int64_t i = 0; i < n; i++) {
		float v = host_get(x, i);
		float half = 0.5f * v;
		host_put(out, i, half * (1.0f + erff(v / sqrt2)));
	}
}
