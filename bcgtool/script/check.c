/*
 * check.c - what an op may do with its tensors, and whether its shapes and
 * dtypes fit its kind at every capture size; whether full-mode variants
 * can be captured without breaks.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "engine/schedule.h"
#include "internal.h"

static const char *check_tensor_name(struct sp *p, uint32_t t)
{
	return plan_get_tensor(p->plan, t)->name;
}

/* Ops write outputs, state and activations; activations are read only
 * after some op wrote them; an output is its input only where the kind
 * works in place. */
static int check_roles(struct sp *p, const struct plan_op *op, const struct op_kind *kind,
                       const char *desc, yaml_node_t *const *in_nodes,
                       yaml_node_t *const *out_nodes)
{
	for (uint32_t k = 0; k < op->nout; k++) {
		const struct plan_tensor *t = plan_get_tensor(p->plan, op->out[k]);
		if (t->role == PLAN_ROLE_WEIGHT || t->role == PLAN_ROLE_INPUT)
			return sp_error(p, out_nodes[k], "%s writes '%s', %s %s; ops may write only "
			                "outputs, state and activations", desc, t->name,
			                t->role == PLAN_ROLE_INPUT ? "an" : "a", plan_role_name(t->role));
		for (uint32_t k2 = 0; k2 < k; k2++)
			if (op->out[k2] == op->out[k])
				return sp_error(p, out_nodes[k], "%s writes '%s' twice", desc, t->name);
		for (uint32_t j = 0; j < op->nin; j++) {
			if (op->in[j] != op->out[k])
				continue;
			/* the optional residual, given (the last input): out may be it */
			if ((kind->flags & OP_RESIDUAL_LAST) && k == 0 &&
			    j + 1 == (uint32_t)op_kind_count_inputs(kind))
				continue;
			if (!(kind->flags & OP_INPLACE))
				return sp_error(p, out_nodes[k], "%s cannot work in place: output %s "
				                "is also input %s ('%s')", desc, kind->outputs[k],
				                kind->inputs[j], t->name);
			if ((k != 0 || j != 0) && kind->outputs[1] != NULL)
				return sp_error(p, out_nodes[k], "%s works in place from input %s into "
				                "output %s only: output %s is also input %s ('%s')", desc,
				                kind->inputs[0], kind->outputs[0], kind->outputs[k],
				                kind->inputs[j], t->name);
			if (k != 0 || j != 0)
				return sp_error(p, out_nodes[k], "%s works in place on input %s only: "
				                "output %s is also input %s ('%s')", desc, kind->inputs[0],
				                kind->outputs[k], kind->inputs[j], t->name);
		}
	}
	for (uint32_t j = 0; j < op->nin; j++) {
		const struct plan_tensor *t = plan_get_tensor(p->plan, op->in[j]);
		if (t->role == PLAN_ROLE_ACTIVATION && !p->written[op->in[j]])
			return sp_error(p, in_nodes[j], "%s reads activation '%s' before any op "
			                "writes it", desc, t->name);
	}
	return 0;
}

static void check_fill_tensor(struct sp *p, uint32_t index, int64_t tokens, struct op_tensor *t)
{
	const struct plan_tensor *pt = plan_get_tensor(p->plan, index);

	memset(t, 0, sizeof *t);
	t->dtype = pt->dtype;
	t->rank = (int)pt->rank;
	for (uint32_t i = 0; i < pt->rank; i++)
		t->dim[i] = plan_axis_size(p->plan, &pt->shape[i], tokens);
}

/* MSG from the registry starts with "input NAME " or "output NAME " when
 * it is about one operand: say which tensor that is. */
static void check_name_operand(struct sp *p, const struct plan_op *op,
                               const struct op_kind *kind, const char *msg,
                               char *out, size_t len)
{
	for (int side = 0; side < 2; side++) {
		const char *const *names = side ? kind->outputs : kind->inputs;
		const uint32_t *list = side ? op->out : op->in;
		uint32_t n = side ? op->nout : op->nin;
		for (uint32_t i = 0; i < n && names[i] != NULL; i++) {
			char prefix[48];
			int m = snprintf(prefix, sizeof prefix, "%s %s ", side ? "output" : "input",
			                 names[i]);
			if (m > 0 && strncmp(msg, prefix, (size_t)m) == 0) {
				snprintf(out, len, "%.*s('%s') %s", m, msg,
				         check_tensor_name(p, list[i]), msg + m);
				return;
			}
		}
	}
	snprintf(out, len, "%s", msg);
}

static int check_shapes(struct sp *p, const struct plan_op *op, const struct op_kind *kind,
                        const char *desc, yaml_node_t *op_node)
{
	const struct plan_dim *td = plan_get_dim(p->plan, p->token_dim);

	for (uint32_t v = 0; v < p->nsizes; v++) {
		struct op_call c;
		char msg[256], named[400];

		memset(&c, 0, sizeof c);
		c.kind = kind;
		c.nin = (int)op->nin;
		c.nout = (int)op->nout;
		for (uint32_t i = 0; i < op->nin; i++)
			check_fill_tensor(p, op->in[i], p->sizes[v], &c.in[i]);
		for (uint32_t i = 0; i < op->nout; i++)
			check_fill_tensor(p, op->out[i], p->sizes[v], &c.out[i]);
		for (uint32_t i = 0; i < op->nattr && i < OP_MAX_ATTRS; i++) {
			const struct plan_attr *a = &op->attr[i];
			if (a->type == PLAN_ATTR_FLOAT)
				c.attr[i].f = a->f;
			else if (a->type == PLAN_ATTR_VAR)
				c.attr[i].i = plan_var_value(plan_get_var(p->plan, (uint32_t)a->i), 0);
			else if (a->type == PLAN_ATTR_STR)
				c.attr[i].i = op_attr_choice(&kind->attrs[i], a->s);
			else
				c.attr[i].i = a->i;
		}
		if (kind->check(&c, msg, sizeof msg) != 0) {
			check_name_operand(p, op, kind, msg, named, sizeof named);
			return sp_error(p, op_node, "%s at %s=%lld: %s", desc, td->name,
			                (long long)p->sizes[v], named);
		}
	}
	return 0;
}

int check_op(struct sp *p, const struct plan_op *op, const struct op_kind *kind,
             yaml_node_t *op_node, yaml_node_t *const *in_nodes,
             yaml_node_t *const *out_nodes)
{
	char desc[192];

	sp_op_desc(op->name, kind->name, plan_count_ops(p->plan), desc, sizeof desc);
	if (check_roles(p, op, kind, desc, in_nodes, out_nodes) != 0)
		return -1;
	return check_shapes(p, op, kind, desc, op_node);
}

int check_schedule(struct sp *p)
{
	const struct plan_dim *td = plan_get_dim(p->plan, p->token_dim);

	for (uint32_t v = 0; v < p->nsizes; v++) {
		struct schedule sched;
		uint32_t bad = PLAN_NONE;

		if (p->modes[v] != PLAN_MODE_FULL)
			continue;
		if (schedule_build(p->plan, PLAN_MODE_FULL, &sched, &bad, p->scratch,
		                   sizeof p->scratch) != 0) {
			const struct plan_op *o = plan_get_op(p->plan, bad);
			return sp_error_at(p, o ? o->line : 0, o ? o->col : 0,
			                   "%s (%s=%lld is captured in full mode)", p->scratch,
			                   td->name, (long long)p->sizes[v]);
		}
		schedule_release(&sched);
		/* Every full variant schedules alike. */
		return 0;
	}
	return 0;
}
