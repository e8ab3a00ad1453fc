/*
 * host-norm.c - the host references of the row normalizations: rmsnorm and
 * layernorm.
 *
 * Each row is read whole for its statistics before any of it is written,
 * and the last pass reads x[j] just before writing out[j]: both work in
 * place.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "host-kernels.h"

/* rmsnorm (x, w) -> out: out = x / sqrt(mean(x^2) + eps) * w per row; w is
 * [cols]. */
void host_run_rmsnorm(const struct op_call *call)
{
	int64_t rows = host_rows(&call->in[0]);
	float eps = (float)call->attr[NORM_EPS].f;

	for (int64_t r = 0; r < rows; r++)
		host_rmsnorm_row(&call->in[0], &call->in[1], &call->out[0], r, eps);
}

void host_rmsnorm_row(const struct op_tensor *x, const struct op_tensor *w,
                      const struct op_tensor *out, int64_t row, float eps)
{
	int64_t cols = host_cols(x);

	host_rmsnorm_span(x, w, out, row * cols, cols, eps);
}

void host_rmsnorm_span(const struct op_tensor *x, const struct op_tensor *w,
                       const struct op_tensor *out, int64_t base, int64_t n, float eps)
{
	float sum = 0.0f;

	for (int64_t j = 0; j < n; j++) {
		float v = host_get(x, base + j);
		sum += v * v;
	}
	float rms = sqrtf(sum / (float)n + eps);
	for (int64_t j = 0; j < n; j++)
		host_put(out, base + j, host_get(x, base + j) / rms * host_get(w, j));
}

/* qk_norm (x, q_w, k_w) -> out: x [rows, C]. In each row, the HEADS heads
 * of head_dim elements from column 0 are normalized as rmsnorm rows with
 * q_w, the KV_HEADS heads after them with k_w; the columns after the q
 * and k parts are copied. Every element is read before the same element
 * is written, so it works in place (the copy then moves nothing). */
void host_run_qk_norm(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *qw = &call->in[1], *kw = &call->in[2];
	const struct op_tensor *out = &call->out[0];
	int64_t heads = call->attr[QKN_HEADS].i, kvh = call->attr[QKN_KV_HEADS].i;
	int64_t hd = call->attr[QKN_HEAD_DIM].i;
	int64_t rows = host_rows(x), cols = host_cols(x), normed = (heads + kvh) * hd;
	float eps = (float)call->attr[QKN_EPS].f;

	for (int64_t r = 0; r < rows; r++) {
		for (int64_t h = 0; h < heads + kvh; h++)
			host_rmsnorm_span(x, h < heads ? qw : kw, out, r * cols + h * hd, hd, eps);
		if (out->data != x->data && cols > normed)
			host_copy_elems(out, r * cols + normed, x, r * cols + normed, cols - normed);
	}
}

/* layernorm (x, w, b) -> out: out = (x - mean) / sqrt(var + eps) * w + b per
 * row, var the biased variance, computed in a second pass around the
 * mean; w and b are [cols]. */
void host_run_layernorm(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *w = &call->in[1], *b = &call->in[2];
	const struct op_tensor *out = &call->out[0];
	int64_t rows = host_rows(x), cols = host_cols(x);
	float eps = (float)call->attr[NORM_EPS].f;

	for (int64_t r = 0; r < rows; r++) {
		int64_t base = r * cols;
		float sum = 0.0f;
		for (int64_t j = 0; j < cols; j++)
			sum += host_get(x, base + j);
		float mean = sum / (float)cols;
		float sq = 0.0f;
		for (int64_t j = 0; j < cols; j++) {
			float d = host_get(x, base + j) - mean;
			sq += d * d;
		}
		float sd = sqrtf(sq / (float)cols + eps);
		for (int64_t j = 0; j < cols; j++) {
			float y = (host_get(x, base + j) - mean) / sd * host_get(w, j);
			host_put(out, base + j, y + host_get(b, j));
		}
	}
}
