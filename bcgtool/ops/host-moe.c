/*
 * host-moe.c - the host references of the mixture-of-experts kinds:
 * moe_router, moe_router_paged, moe_experts and gated_add (op.h).
 *
 * moe_experts (with its optional residual) runs as the eager form on the GPU does: rows are grouped by
 * expert (counts, then offsets, then each expert's rows in row order) and
 * each expert's products run over its rows only. Each (row, k) pair's
 * arithmetic does not depend on the grouping, and the weighted sum back
 * into a row runs in k order, so the bytes are those op.h defines.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "host-kernels.h"

/* Whether A (expert IA) goes before B (expert IB) in the router's order:
 * larger first, NaN above every number, equal values by lower index. */
static int moe_before(float a, int64_t ia, float b, int64_t ib)
{
	if (isnan(a) || isnan(b)) {
		if (isnan(a) && isnan(b))
			return ia < ib;
		return isnan(a);
	}
	if (a != b)
		return a > b;
	return ia < ib;
}

/* The K experts of row R of LG (E columns) in the router's order, into
 * CHOSEN; VAL holds the value each was chosen by, indexed by expert. */
static void moe_top_k(const float *val, int64_t e, int64_t k, int64_t *chosen)
{
	for (int64_t i = 0; i < k; i++) {
		int64_t best = -1;
		for (int64_t j = 0; j < e; j++) {
			int taken = 0;
			for (int64_t q = 0; q < i && !taken; q++)
				taken = chosen[q] == j;
			if (taken)
				continue;
			if (best < 0 || moe_before(val[j], j, val[best], best))
				best = j;
		}
		chosen[i] = best;
	}
}

/* moe_router (logits) -> (ids, weights); moe_router_paged (logits, slots):
 * see op.h. */
void host_run_moe_router(const struct op_call *call)
{
	const struct op_tensor *lg = &call->in[0], *ids = &call->out[0], *w = &call->out[1];
	const struct op_tensor *slots = call->nin > 1 ? &call->in[1] : NULL;
	int64_t rows = host_rows(lg), e = host_cols(lg), k = call->attr[MOE_TOP_K].i;
	int renorm = call->attr[MOE_RENORM].i != 0, topk_first = call->attr[MOE_TOPK_FIRST].i != 0;
	float val[OP_MOE_MAX_EXPERTS], p[OP_MOE_MAX_TOP_K];
	int64_t chosen[OP_MOE_MAX_TOP_K];

	for (int64_t r = 0; r < rows; r++) {
		if (slots != NULL && host_get_i32(slots, r) < 0) {
			for (int64_t i = 0; i < k; i++) {
				((int32_t *)ids->data)[r * k + i] = -1;
				host_put(w, r * k + i, 0.0f);
			}
			continue;
		}
		float max = -INFINITY, sum = 0.0f;
		for (int64_t j = 0; j < e; j++)
			val[j] = host_get(lg, r * e + j);
		if (!topk_first) {
			/* softmax over all E, as host_run_softmax computes it */
			for (int64_t j = 0; j < e; j++)
				if (val[j] > max)
					max = val[j];
			for (int64_t j = 0; j < e; j++)
				sum += expf(val[j] - max);
			for (int64_t j = 0; j < e; j++)
				val[j] = expf(val[j] - max) / sum;
			moe_top_k(val, e, k, chosen);
			for (int64_t i = 0; i < k; i++)
				p[i] = val[chosen[i]];
		} else {
			moe_top_k(val, e, k, chosen);
			for (int64_t i = 0; i < k; i++)
				if (val[chosen[i]] > max)
					max = val[chosen[i]];
			for (int64_t i = 0; i < k; i++)
				sum += expf(val[chosen[i]] - max);
			for (int64_t i = 0; i < k; i++)
				p[i] = expf(val[chosen[i]] - max) / sum;
		}
		if (renorm) {
			float s = 0.0f;
			for (int64_t i = 0; i < k; i++)
				s += p[i];
			for (int64_t i = 0; i < k; i++)
				p[i] = p[i] / s;
		}
		for (int64_t i = 0; i < k; i++) {
			((int32_t *)ids->data)[r * k + i] = (int32_t)chosen[i];
			host_put(w, r * k + i, p[i]);
		}
	}
}

int64_t host_moe_router_nan_row(const struct op_call *call)
{
	const struct op_tensor *w = &call->out[1];
	int64_t rows = host_rows(w), k = host_cols(w);

	for (int64_t r = 0; r < rows; r++)
		for (int64_t i = 0; i < k; i++)
			if (isnan(host_get(w, r * k + i)))
				return r;
	return -1;
}

/* Element J of expert EX's activation for row T: silu(g) * u, each product
 * rounded to the dtype first, the result rounded too (matmul_silu_mul). */
static float moe_act(const struct op_call *call, int64_t t, int64_t ex, int64_t inter,
                     int64_t j)
{
	const struct op_tensor *x = &call->in[0], *gu = &call->in[3];
	int64_t h = host_cols(x);
	int64_t grow = (ex * 2 * inter + j) * h, urow = (ex * 2 * inter + inter + j) * h;
	float g = 0.0f, u = 0.0f;

	for (int64_t c = 0; c < h; c++)
		g += host_get(x, t * h + c) * host_get(gu, grow + c);
	for (int64_t c = 0; c < h; c++)
		u += host_get(x, t * h + c) * host_get(gu, urow + c);
	g = host_round(x->dtype, g);
	u = host_round(x->dtype, u);
	float silu = g / (1.0f + expf(-g));
	return host_round(x->dtype, silu * u);
}

/* Element I of expert EX's output for the activation ACT. */
static float moe_down(const struct op_call *call, const float *act, int64_t ex,
                      int64_t inter, int64_t i)
{
	const struct op_tensor *dn = &call->in[4];
	int64_t h = host_cols(&call->in[0]);
	float s = 0.0f;

	for (int64_t j = 0; j < inter; j++)
		s += act[j] * host_get(dn, (ex * h + i) * inter + j);
	return host_round(call->in[0].dtype, s);
}

/* Store element I of out: ACC, the experts' sum; with the residual r
 * (the optional last input), add(r, moe)'s bytes: ACC rounded to out's
 * dtype first (moe_experts stores it), then r + it, rounded on store. r's
 * element is read before out's is written (out may be r). */
static void moe_store(const struct op_call *call, int64_t i, float acc)
{
	const struct op_tensor *out = &call->out[0];

	if (call->nin > 5)
		host_put(out, i, host_get(&call->in[5], i) + host_round(out->dtype, acc));
	else
		host_put(out, i, acc);
}

/* The path without scratch: every element computed on its own, activation
 * element by element again (slow, the same bytes). */
static void moe_experts_unbuffered(const struct op_call *call, int64_t inter)
{
	const struct op_tensor *ids = &call->in[1], *w = &call->in[2];
	const struct op_tensor *dn = &call->in[4];
	int64_t rows = host_rows(&call->in[0]), h = host_cols(&call->in[0]), k = host_cols(ids);
	int64_t e = call->attr[MOE_EXPERTS].i;

	for (int64_t t = 0; t < rows; t++)
		for (int64_t i = 0; i < h; i++) {
			float acc = 0.0f;
			for (int64_t q = 0; q < k; q++) {
				int32_t ex = host_get_i32(ids, t * k + q);
				if (ex < 0 || ex >= e)
					continue;
				float s = 0.0f;
				for (int64_t j = 0; j < inter; j++)
					s += moe_act(call, t, ex, inter, j) *
					     host_get(dn, (ex * h + i) * inter + j);
				acc += host_get(w, t * k + q) * host_round(call->in[0].dtype, s);
			}
			moe_store(call, t * h + i, acc);
		}
}

/* moe_experts (x, ids, weights, gate_up, down) -> out: rows grouped by
 * expert, the products expert by expert, then the sum back in k order. */
void host_run_moe_experts(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *ids = &call->in[1], *w = &call->in[2];
	int64_t rows = host_rows(x), h = host_cols(x), k = host_cols(ids);
	int64_t e = call->attr[MOE_EXPERTS].i, inter = host_rows(&call->in[3]) / (2 * e);
	int64_t pairs = rows * k, off[OP_MOE_MAX_EXPERTS + 1] = { 0 };
	int64_t fill[OP_MOE_MAX_EXPERTS];
	size_t np = (size_t)(pairs > 0 ? pairs : 1);
	float *act = malloc((size_t)inter * sizeof *act);
	float *y = malloc(np * (size_t)h * sizeof *y);
	int64_t *order = malloc(np * sizeof *order);

	if (act == NULL || y == NULL || order == NULL) {
		moe_experts_unbuffered(call, inter);
		goto out;
	}
	/* counts, offsets, then each expert's pairs in pair order */
	for (int64_t p = 0; p < pairs; p++) {
		int32_t ex = host_get_i32(ids, p);
		if (ex >= 0 && ex < e)
			off[ex + 1]++;
	}
	for (int64_t ex = 0; ex < e; ex++) {
		off[ex + 1] += off[ex];
		fill[ex] = off[ex];
	}
	for (int64_t p = 0; p < pairs; p++) {
		int32_t ex = host_get_i32(ids, p);
		if (ex >= 0 && ex < e)
			order[fill[ex]++] = p;
	}
	/* the products, expert by expert over its pairs; y indexed by pair */
	for (int64_t ex = 0; ex < e; ex++)
		for (int64_t n = off[ex]; n < off[ex + 1]; n++) {
			int64_t p = order[n];
			for (int64_t j = 0; j < inter; j++)
				act[j] = moe_act(call, p / k, ex, inter, j);
			for (int64_t i = 0; i < h; i++)
				y[p * h + i] = moe_down(call, act, ex, inter, i);
		}
	/* the weighted sum back into each row, k in order */
	for (int64_t t = 0; t < rows; t++)
		for (int64_t i = 0; i < h; i++) {
			float acc = 0.0f;
			for (int64_t q = 0; q < k; q++) {
				int32_t ex = host_get_i32(ids, t * k + q);
				if (ex >= 0 && ex < e)
					acc += host_get(w, t * k + q) * y[(t * k + q) * h + i];
			}
			moe_store(call, t * h + i, acc);
		}
out:
	free(act);
	free(y);
	free(order);
}

/* gated_add (x, y, g) -> out: out = x + sigmoid(g[r]) * y. */
void host_run_gated_add(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *y = &call->in[1], *g = &call->in[2];
	const struct op_tensor *out = &call->out[0];
	int64_t rows = host_rows(x), cols = host_cols(x);

	for (int64_t r = 0; r < rows; r++) {
		float s = 1.0f / (1.0f + expf(-host_get(g, r)));
		for (int64_t c = 0; c < cols; c++) {
			float m = s * host_get(y, r * cols + c);
			host_put(out, r * cols + c, host_get(x, r * cols + c) + m);
		}
	}
}
