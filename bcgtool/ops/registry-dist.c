/*
 * registry-dist.c - the checks of the tensor-parallel kinds: all_reduce,
 * all_gather and vocab_embedding (op.h; their entries are in registry.c's
 * table). The world size is not an operand: all_gather's is the ratio of
 * its shapes, and the launch checks it against the communicator.
 */
#include "config.h"

#include <stdio.h>

#include "op.h"
#include "registry-check.h"

int op_check_all_reduce(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_same_dtype(&out, &x, msg, len));
	return want_shape_like(&out, &x, msg, len);
}

int op_check_all_gather(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;
	char a[96], b[96];
	int64_t cols;

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_same_dtype(&out, &x, msg, len));
	TRY(want_rank(&out, x.t->rank, msg, len));
	cols = op_tensor_cols(x.t);
	for (int i = 0; i + 1 < x.t->rank; i++)
		if (out.t->dim[i] != x.t->dim[i])
			return check_fail(msg, len, "output out has shape %s; its rows must be those "
			                  "of input x (%s)", shape_str(out.t, a, sizeof a),
			                  shape_str(x.t, b, sizeof b));
	if (cols < 1 || op_tensor_cols(out.t) % cols != 0)
		return check_fail(msg, len, "output out has %lld columns, not a multiple of input "
		                  "x's %lld (one share a rank)", (long long)op_tensor_cols(out.t),
		                  (long long)cols);
	return 0;
}

int op_check_vocab_embedding(const struct op_call *c, char *msg, size_t len)
{
	struct operand table, ids, out;
	int64_t want[2];

	TRY(want_counts(c, msg, len));
	table = operand_in(c, 0);
	ids = operand_in(c, 1);
	out = operand_out(c, 0);
	TRY(want_dtypes(&table, c->kind->dtypes, msg, len));
	TRY(want_rank(&table, 2, msg, len));
	TRY(want_dtypes(&ids, OP_DTYPE_BIT(PLAN_DTYPE_I32), msg, len));
	TRY(want_rank(&ids, 1, msg, len));
	TRY(want_same_dtype(&out, &table, msg, len));
	if (c->attr[VEMB_VOCAB_START].i < 0 || c->attr[VEMB_VOCAB_START].i > INT32_MAX)
		return check_fail(msg, len, "attribute vocab_start is %lld; it must be 0 to %d",
		                  (long long)c->attr[VEMB_VOCAB_START].i, INT32_MAX);
	want[0] = ids.t->dim[0];
	want[1] = table.t->dim[1];
	return want_shape(&out, want, 2, "one row of input table per element of input ids",
	                  msg, len);
}

int op_is_collective(const plan_t *plan, uint32_t op)
{
	const struct plan_op *o = plan_get_op(plan, op);
	const struct op_kind *k = o != NULL ? op_kind_find(o->kind) : NULL;

	return k != NULL && (k->id == OP_ALL_REDUCE || k->id == OP_ALL_GATHER);
}
