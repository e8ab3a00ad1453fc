/*
 * host-softmax.c - the host references of the ops that scan a row for its
 * largest element: softmax and argmax.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "host-kernels.h"

/* softmax (x) -> out: per row, out[j] = exp(x[j] - max) / sum_k exp(x[k] -
 * max). The exponentials are computed again in the last pass rather than
 * kept, so the kernel needs no scratch and works in place. */
void host_run_softmax(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = host_rows(x), cols = host_cols(x);

	for (int64_t r = 0; r < rows; r++) {
		int64_t base = r * cols;
		float max = -INFINITY;
		for (int64_t j = 0; j < cols; j++) {
			float v = host_get(x, base + j);
			if (v > max)
				max = v;
		}
		float sum = 0.0f;
		for (int64_t j = 0; j < cols; j++)
			sum += expf(host_get(x, base + j) - max);
		for (int64_t j = 0; j < cols; j++)
			host_put(out, base + j, expf(host_get(x, base + j) - max) / sum);
	}
}

/* argmax (x) -> out: out (i32) [rows] = index of each row's largest element;
 * on ties the first. A NaN counts as larger than any number (the first NaN
 * wins), so that a broken row shows where it broke. An empty row gives 0. */
void host_run_argmax(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *out = &call->out[0];
	int64_t rows = host_rows(x), cols = host_cols(x);

	for (int64_t r = 0; r < rows; r++) {
		int64_t base = r * cols, best = 0;
		float max = cols > 0 ? host_get(x, base) : 0.0f;
		for (int64_t j = 1; j < cols && !isnan(max); j++) {
			float v = host_get(x, base + j);
			if (v > max || isnan(v)) {
				max = v;
				best = j;
			}
		}
		((int32_t *)out->data)[r] = (int32_t)best;
	}
}
