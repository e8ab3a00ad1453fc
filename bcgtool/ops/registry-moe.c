/*
 * registry-moe.c - the checks of the mixture-of-experts kinds: moe_router,
 * moe_router_paged, moe_experts and gated_add (op.h; their entries are in
 * registry.c's table).
 */
#include "config.h"

#include <stdio.h>

#include "op.h"
#include "registry-check.h"

/* moe_router, moe_router_paged. */
int op_check_moe_router(const struct op_call *c, char *msg, size_t len)
{
	struct operand lg, ids, w;
	int64_t k = c->attr[MOE_TOP_K].i, want[2];

	TRY(want_counts(c, msg, len));
	lg = operand_in(c, 0);
	ids = operand_out(c, 0);
	w = operand_out(c, 1);
	TRY(want_dtypes(&lg, c->kind->dtypes, msg, len));
	TRY(want_rank(&lg, 2, msg, len));
	if (lg.t->dim[1] < 1 || lg.t->dim[1] > OP_MOE_MAX_EXPERTS)
		return check_fail(msg, len, "input logits has %lld columns (experts); the kernels "
		                  "take 1 to %d", (long long)lg.t->dim[1], OP_MOE_MAX_EXPERTS);
	if (k < 1 || k > OP_MOE_MAX_TOP_K || k > lg.t->dim[1])
		return check_fail(msg, len, "attribute top_k is %lld; it must be 1 to %lld (the "
		                  "experts, at most %d)", (long long)k,
		                  (long long)(lg.t->dim[1] < OP_MOE_MAX_TOP_K ? lg.t->dim[1] :
		                              OP_MOE_MAX_TOP_K), OP_MOE_MAX_TOP_K);
	if (c->nin > 1)
		TRY(want_positions(c, 1, &lg, msg, len));
	want[0] = lg.t->dim[0];
	want[1] = k;
	TRY(want_dtypes(&ids, OP_DTYPE_BIT(PLAN_DTYPE_I32), msg, len));
	TRY(want_shape(&ids, want, 2, "rows of input logits, top_k columns", msg, len));
	TRY(want_dtypes(&w, OP_DTYPES_FLOAT, msg, len));
	return want_shape(&w, want, 2, "rows of input logits, top_k columns", msg, len);
}

int op_check_moe_experts(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, ids, w, gu, dn, out;
	int64_t e = c->attr[MOE_EXPERTS].i, h, inter, want[2];
	char why[96];

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	ids = operand_in(c, 1);
	w = operand_in(c, 2);
	gu = operand_in(c, 3);
	dn = operand_in(c, 4);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_rank(&x, 2, msg, len));
	if (e < 1 || e > OP_MOE_MAX_EXPERTS)
		return check_fail(msg, len, "attribute experts is %lld; the kernels take 1 to %d",
		                  (long long)e, OP_MOE_MAX_EXPERTS);
	h = x.t->dim[1];
	TRY(want_dtypes(&ids, OP_DTYPE_BIT(PLAN_DTYPE_I32), msg, len));
	TRY(want_rank(&ids, 2, msg, len));
	if (ids.t->dim[0] != x.t->dim[0] || ids.t->dim[1] < 1 ||
	    ids.t->dim[1] > OP_MOE_MAX_TOP_K) {
		want[0] = x.t->dim[0];
		want[1] = ids.t->dim[1] < 1 ? 1 : ids.t->dim[1] > OP_MOE_MAX_TOP_K ?
		          OP_MOE_MAX_TOP_K : ids.t->dim[1];
		snprintf(why, sizeof why, "one row per row of input x, 1 to %d columns",
		         OP_MOE_MAX_TOP_K);
		return want_shape(&ids, want, 2, why, msg, len);
	}
	TRY(want_dtypes(&w, OP_DTYPES_FLOAT, msg, len));
	TRY(want_shape_like(&w, &ids, msg, len));
	TRY(want_same_dtype(&gu, &x, msg, len));
	TRY(want_rank(&gu, 2, msg, len));
	if (gu.t->dim[1] != h || gu.t->dim[0] % (2 * e) != 0 || gu.t->dim[0] == 0)
		return check_fail(msg, len, "input gate_up has shape [%lld, %lld], expected "
		                  "[experts*2I, %lld]: %lld blocks of gate and up rows, each I "
		                  "rows of input x's %lld columns", (long long)gu.t->dim[0],
		                  (long long)gu.t->dim[1], (long long)h, (long long)e, (long long)h);
	inter = gu.t->dim[0] / (2 * e);
	TRY(want_same_dtype(&dn, &x, msg, len));
	want[0] = e * h;
	want[1] = inter;
	snprintf(why, sizeof why, "experts*H rows, the I = %lld columns of gate_up's blocks",
	         (long long)inter);
	TRY(want_shape(&dn, want, 2, why, msg, len));
	TRY(want_same_dtype(&out, &x, msg, len));
	TRY(want_shape_like(&out, &x, msg, len));
	if (c->nin > 5) {
		struct operand res = operand_in(c, 5);
		TRY(want_same_dtype(&res, &out, msg, len));
		TRY(want_shape_like(&res, &out, msg, len));
	}
	return 0;
}

int op_check_gated_add(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, y, g, out;
	int64_t want[2];

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	y = operand_in(c, 1);
	g = operand_in(c, 2);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_rank(&x, 2, msg, len));
	TRY(want_same_dtype(&y, &x, msg, len));
	TRY(want_shape_like(&y, &x, msg, len));
	TRY(want_same_dtype(&g, &x, msg, len));
	want[0] = x.t->dim[0];
	want[1] = 1;
	TRY(want_shape(&g, want, 2, "one gate per row of input x", msg, len));
	TRY(want_same_dtype(&out, &x, msg, len));
	return want_shape_like(&out, &x, msg, len);
}
