/*
 * registry-check.h - private to the op registry (registry.c and its
 * kinds' files, registry-*.c): the helpers every kind's check is written
 * with, and the checks kept beside their kinds' concept.
 *
 * A check speaks of operands by the names the registry declares ("input
 * b", "output out") and starts its message with that phrase when one
 * operand is at fault, so that the script parser can add which tensor it
 * was.
 */
#ifndef BCG_OPS_REGISTRY_CHECK_H
#define BCG_OPS_REGISTRY_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "op.h"

/* ---------------------------------------------------------------------- */
/* Message helpers.                                                        */

__attribute__((format(printf, 3, 4)))
static inline int check_fail(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (msg != NULL && len > 0) {
		va_start(ap, fmt);
		vsnprintf(msg, len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* "[4, 64]" */
static inline const char *shape_str(const struct op_tensor *t, char *buf, size_t len)
{
	size_t n = 0;

	n += (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < t->rank && i < PLAN_MAX_RANK && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "",
		                      (long long)t->dim[i]);
	if (n < len)
		snprintf(buf + n, len - n, "]");
	return buf;
}

/* "f32, f16 or bf16" */
static inline const char *dtypes_str(unsigned mask, char *buf, size_t len)
{
	static const int order[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16, PLAN_DTYPE_I32 };
	int total = 0, seen = 0;
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
		if (mask & OP_DTYPE_BIT(order[i]))
			total++;
	for (size_t i = 0; i < sizeof order / sizeof order[0] && n < len; i++) {
		if (!(mask & OP_DTYPE_BIT(order[i])))
			continue;
		seen++;
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
		                      seen == 1 ? "" : seen == total ? " or " : ", ",
		                      plan_dtype_name(order[i]));
	}
	return buf;
}

/* The operand being checked: "input b" or "output out". */
struct operand {
	char                    what[48];
	const struct op_tensor *t;
};

static inline struct operand operand_in(const struct op_call *c, int i)
{
	struct operand o;
	snprintf(o.what, sizeof o.what, "input %s", c->kind->inputs[i]);
	o.t = &c->in[i];
	return o;
}

static inline struct operand operand_out(const struct op_call *c, int i)
{
	struct operand o;
	snprintf(o.what, sizeof o.what, "output %s", c->kind->outputs[i]);
	o.t = &c->out[i];
	return o;
}

static inline int want_dtypes(const struct operand *o, unsigned mask, char *msg, size_t len)
{
	char buf[64];

	if (o->t->dtype > 0 && o->t->dtype < 32 && (mask & OP_DTYPE_BIT(o->t->dtype)))
		return 0;
	return check_fail(msg, len, "%s is %s, expected %s", o->what,
	                  plan_dtype_name(o->t->dtype), dtypes_str(mask, buf, sizeof buf));
}

static inline int want_same_dtype(const struct operand *o, const struct operand *ref,
                           char *msg, size_t len)
{
	if (o->t->dtype == ref->t->dtype)
		return 0;
	return check_fail(msg, len, "%s is %s, expected %s like %s", o->what,
	                  plan_dtype_name(o->t->dtype), plan_dtype_name(ref->t->dtype),
	                  ref->what);
}

static inline int want_rank(const struct operand *o, int rank, char *msg, size_t len)
{
	char buf[96];

	if (o->t->rank == rank)
		return 0;
	return check_fail(msg, len, "%s has rank %d (%s), expected rank %d", o->what,
	                  o->t->rank, shape_str(o->t, buf, sizeof buf), rank);
}

/* O must have exactly the shape WANT (rank RANK); WHY, when not NULL, says
 * where the expectation comes from. */
static inline int want_shape(const struct operand *o, const int64_t *want, int rank, const char *why,
                      char *msg, size_t len)
{
	struct op_tensor w = { .rank = rank };
	char got[96], exp[96];
	int same = o->t->rank == rank;

	for (int i = 0; i < rank && i < PLAN_MAX_RANK; i++) {
		w.dim[i] = want[i];
		if (same && o->t->dim[i] != want[i])
			same = 0;
	}
	if (same)
		return 0;
	return check_fail(msg, len, "%s has shape %s, expected %s%s%s%s", o->what,
	                  shape_str(o->t, got, sizeof got), shape_str(&w, exp, sizeof exp),
	                  why ? " (" : "", why ? why : "", why ? ")" : "");
}

static inline int want_shape_like(const struct operand *o, const struct operand *ref,
                           char *msg, size_t len)
{
	char why[64];

	snprintf(why, sizeof why, "the shape of %s", ref->what);
	return want_shape(o, ref->t->dim, ref->t->rank, why, msg, len);
}

static inline int want_counts(const struct op_call *c, char *msg, size_t len)
{
	int nin = op_kind_count_inputs(c->kind), nout = op_kind_count_outputs(c->kind);

	if (c->nin != nin && !((c->kind->flags & OP_RESIDUAL_LAST) && c->nin == nin - 1))
		return check_fail(msg, len, "%s takes %d input%s%s, not %d", c->kind->name, nin,
		                  nin == 1 ? "" : "s",
		                  c->kind->flags & OP_RESIDUAL_LAST ? " (the last optional)" : "",
		                  c->nin);
	if (c->nout != nout)
		return check_fail(msg, len, "%s takes %d output%s, not %d", c->kind->name, nout,
		                  nout == 1 ? "" : "s", c->nout);
	for (int i = 0; i < c->nin; i++)
		if (c->in[i].rank < 1 || c->in[i].rank > PLAN_MAX_RANK)
			return check_fail(msg, len, "input %s has rank %d, expected 1 to %d",
			                  c->kind->inputs[i], c->in[i].rank, PLAN_MAX_RANK);
	for (int i = 0; i < c->nout; i++)
		if (c->out[i].rank < 1 || c->out[i].rank > PLAN_MAX_RANK)
			return check_fail(msg, len, "output %s has rank %d, expected 1 to %d",
			                  c->kind->outputs[i], c->out[i].rank, PLAN_MAX_RANK);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The checks, one per kind.                                               */

#define TRY(expr) do { if ((expr) != 0) return -1; } while (0)

/* The one-position-per-row operand of rope and kv_write. */
static inline int want_positions(const struct op_call *c, int i, const struct operand *rows,
                          char *msg, size_t len)
{
	struct operand pos = operand_in(c, i);
	char why[64];

	TRY(want_dtypes(&pos, OP_DTYPE_BIT(PLAN_DTYPE_I32), msg, len));
	snprintf(why, sizeof why, "one per row of %s", rows->what);
	return want_shape(&pos, &rows->t->dim[0], 1, why, msg, len);
}

/* registry-moe.c: the mixture-of-experts kinds (op.h) */
int op_check_moe_router(const struct op_call *c, char *msg, size_t len);
int op_check_moe_experts(const struct op_call *c, char *msg, size_t len);
int op_check_gated_add(const struct op_call *c, char *msg, size_t len);

/* registry-dist.c: the tensor-parallel kinds (op.h) */
int op_check_all_reduce(const struct op_call *c, char *msg, size_t len);
int op_check_all_gather(const struct op_call *c, char *msg, size_t len);
int op_check_vocab_embedding(const struct op_call *c, char *msg, size_t len);

#endif /* BCG_OPS_REGISTRY_CHECK_H */
