/*
 * ops.c - the ops section: the ordered op list, repeat blocks expanded in
 * place (each iteration binds the block's variable), name templates,
 * tensor references into families, and attributes with their defaults.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "internal.h"

#define OPS_MAX_TEMPLATE 1024   /* bytes in a name template */
#define OPS_MAX_OPNAME   128    /* bytes in an expanded op name, with the NUL */

struct op_build {
	yaml_node_t          *node;
	const struct op_kind *kind;
	uint32_t              index;             /* the op's index once added */
	char                  name[OPS_MAX_OPNAME];
	char                  desc[OPS_MAX_OPNAME + 32];
	uint32_t              nin, nout;
	uint32_t              in[OP_MAX_IN], out[OP_MAX_OUT];
	yaml_node_t          *in_nodes[OP_MAX_IN], *out_nodes[OP_MAX_OUT];
	struct plan_attr      attr[OP_MAX_ATTRS];
	int                   given[OP_MAX_ATTRS];
	int                   eager;
};

static int ops_list(struct sp *p, yaml_node_t *seq);

/* ---------------------------------------------------------------------- */
/* Tensor references: NAME or NAME[INDEX].                                 */

static int ops_undefined_tensor(struct sp *p, yaml_node_t *node, const char *name)
{
	const char **cand = malloc(sizeof *cand * (p->ntensors ? p->ntensors : 1));
	const char *best = NULL;

	if (cand != NULL) {
		for (uint32_t i = 0; i < p->ntensors; i++)
			cand[i] = p->tensors[i].name;
		best = suggest_name(name, cand, p->ntensors);
	}
	sp_error(p, node, "undefined tensor '%s'%s%s%s", name, best ? " (did you mean '" : "",
	         best ? best : "", best ? "'?)" : "");
	free(cand);
	return -1;
}

static int ops_tensor_ref(struct sp *p, yaml_node_t *node, uint32_t *tensor)
{
	const char *s = walk_scalar(p, node, "a tensor reference");
	char name[SCRIPT_MAX_NAME], index[OPS_MAX_TEMPLATE];
	const char *lb;
	const struct sym *sym;
	const struct tensor_decl *d;
	size_t n;
	int64_t i = 0;

	if (s == NULL)
		return -1;
	lb = strchr(s, '[');
	n = lb ? (size_t)(lb - s) : strlen(s);
	if (n == 0 || n >= sizeof name ||
	    (lb != NULL && (s[strlen(s) - 1] != ']' || strlen(lb) - 2 >= sizeof index)))
		goto bad;
	memcpy(name, s, n);
	name[n] = '\0';
	if (!expr_is_name(name))
		goto bad;
	if ((sym = symtab_find(&p->names, name)) == NULL)
		return ops_undefined_tensor(p, node, name);
	if (sym->kind != SYM_TENSOR)
		return sp_error(p, node, "'%s' is %s, not a tensor", name,
		                sym->kind == SYM_DIM ? "a dim" : "a var");
	d = &p->tensors[sym->index];
	if (lb == NULL && d->family)
		return sp_error(p, node, "'%s' is a family of %u tensors: pick one, as in %s[0]",
		                name, d->count, name);
	if (lb != NULL && !d->family)
		return sp_error(p, node, "tensor '%s' is not a family; it takes no index", name);
	if (lb != NULL) {
		n = strlen(lb) - 2;
		memcpy(index, lb + 1, n);
		index[n] = '\0';
		if (sp_eval(p, index, node, &i) != 0)
			return -1;
		if (i < 0 || i >= d->count)
			return sp_error(p, node, "index %lld is out of range for '%s' (%u members: "
			                "0 to %u)", (long long)i, name, d->count, d->count - 1);
	}
	*tensor = d->first + (uint32_t)i;
	return 0;
bad:
	return sp_error(p, node, "bad tensor reference '%.64s': expected NAME or NAME[INDEX]", s);
}

/* IN or OUT: a sequence of references, as many as the kind's operands
 * (inputs: or as many as its required ones, op_kind_min_inputs). */
static int ops_operands(struct sp *p, yaml_node_t *seq, struct op_build *o, int out)
{
	const char *const *names = out ? o->kind->outputs : o->kind->inputs;
	int want = out ? op_kind_count_outputs(o->kind) : op_kind_count_inputs(o->kind);
	int least = out ? want : op_kind_min_inputs(o->kind);
	size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);

	if (n != (size_t)want && n != (size_t)least) {
		char list[128];
		size_t m = 0;
		list[0] = '\0';
		for (int i = 0; i < want && m < sizeof list; i++)
			m += (size_t)snprintf(list + m, sizeof list - m, "%s%s%s",
			                      i == least && least < want ? "[" : "", i ? ", " : "",
			                      names[i]);
		if (least < want && m < sizeof list)
			snprintf(list + m, sizeof list - m, "]");
		if (want == 0)
			return sp_error(p, seq, "%s takes no %s, not %zu", o->desc,
			                out ? "outputs" : "inputs", n);
		if (least + 1 == want)
			return sp_error(p, seq, "%s takes %d or %d inputs (%s), not %zu", o->desc,
			                least, want, list, n);
		if (least < want)
			return sp_error(p, seq, "%s takes %d or %d inputs (%s: the last %d all or "
			                "none), not %zu", o->desc, least, want, list, want - least, n);
		return sp_error(p, seq, "%s takes %d %s%s (%s), not %zu", o->desc, want,
		                out ? "output" : "input", want == 1 ? "" : "s", list, n);
	}
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = walk_node(p, seq->data.sequence.items.start[i]);
		uint32_t t = PLAN_NONE;
		if (ops_tensor_ref(p, e, &t) != 0)
			return -1;
		if (out) {
			o->out[i] = t;
			o->out_nodes[i] = e;
		} else {
			o->in[i] = t;
			o->in_nodes[i] = e;
		}
	}
	if (out)
		o->nout = (uint32_t)n;
	else
		o->nin = (uint32_t)n;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Names: templates with {EXPR} in them.                                   */

static int ops_name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-' || c == ':' || c == '/';
}

static int ops_expand_name(struct sp *p, yaml_node_t *node, const char *tmpl, char *out)
{
	char expr[OPS_MAX_TEMPLATE + 1];
	size_t n = 0;

	if (strlen(tmpl) > OPS_MAX_TEMPLATE)
		return sp_error(p, node, "op name template is longer than %d bytes", OPS_MAX_TEMPLATE);
	for (const char *s = tmpl; *s != '\0';) {
		char piece[32];
		size_t len;

		if (*s == '{') {
			const char *close = strchr(s, '}');
			int64_t v;
			if (close == NULL)
				return sp_error(p, node, "unclosed '{' in op name '%.64s'", tmpl);
			memcpy(expr, s + 1, (size_t)(close - s - 1));
			expr[close - s - 1] = '\0';
			if (sp_eval(p, expr, node, &v) != 0)
				return -1;
			snprintf(piece, sizeof piece, "%lld", (long long)v);
			s = close + 1;
		} else if (*s == '}') {
			return sp_error(p, node, "'}' without '{' in op name '%.64s'", tmpl);
		} else {
			if (!ops_name_char((unsigned char)*s)) {
				unsigned char c = (unsigned char)*s;
				if (c >= 0x20 && c < 0x7f)
					return sp_error(p, node, "op name '%.64s' holds '%c': names take "
					                "letters, digits and _ . - : /", tmpl, c);
				return sp_error(p, node, "op name '%.64s' holds byte 0x%02x: names take "
				                "letters, digits and _ . - : /", tmpl, c);
			}
			piece[0] = *s++;
			piece[1] = '\0';
		}
		len = strlen(piece);
		if (n + len >= OPS_MAX_OPNAME)
			return sp_error(p, node, "op name is longer than %d bytes", OPS_MAX_OPNAME - 1);
		memcpy(out + n, piece, len + 1);
		n += len;
	}
	if (n == 0)
		return sp_error(p, node, "op name is empty");
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Attributes.                                                             */

/* An integer attribute written as a float or a bool: a clearer message
 * than the expression parser's. */
static int ops_looks_float(const char *s)
{
	return strcmp(s, "true") == 0 || strcmp(s, "false") == 0 ||
	       (s[0] != '\0' && strpbrk(s, ".eE") != NULL &&
	        strspn(s, "0123456789+-.eE") == strlen(s));
}

static int ops_attr_value(struct sp *p, struct op_build *o, int idx, yaml_node_t *node)
{
	const struct op_attr_spec *spec = &o->kind->attrs[idx];
	struct plan_attr *a = &o->attr[idx];
	char what[64];
	const char *s;
	const struct sym *sym;

	snprintf(what, sizeof what, "attribute '%s'", spec->name);
	if ((s = walk_scalar(p, node, what)) == NULL)
		return -1;
	switch (spec->type) {
	case OP_ATTR_BOOL: {
		int b;
		if (walk_bool(p, node, what, &b) != 0)
			return -1;
		a->type = PLAN_ATTR_BOOL;
		a->i = b;
		return 0;
	}
	case OP_ATTR_FLOAT:
		a->type = PLAN_ATTR_FLOAT;
		return walk_float(p, node, what, &a->f);
	case OP_ATTR_ENUM: {
		const char *const *choices = op_attr_choices(spec);
		char list[160];
		size_t n = 0;
		for (int i = 0; choices[i] != NULL; i++) {
			if (strcmp(s, choices[i]) == 0) {
				a->type = PLAN_ATTR_STR;
				a->s = choices[i];
				return 0;
			}
			n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
			                      choices[i]);
			if (n >= sizeof list)
				n = sizeof list - 1;
		}
		return sp_error(p, node, "%s is '%.64s', expected one of %s", what, s, list);
	}
	case OP_ATTR_INTVAR:
		if (expr_is_name(s) && (sym = symtab_find(&p->names, s)) != NULL &&
		    sym->kind == SYM_VAR) {
			a->type = PLAN_ATTR_VAR;
			a->i = sym->index;
			return 0;
		}
		if (ops_looks_float(s))
			return sp_error(p, node, "%s takes an integer or a var, not '%.64s'", what, s);
		a->type = PLAN_ATTR_INT;
		return walk_int(p, node, what, &a->i);
	default:
		if (ops_looks_float(s))
			return sp_error(p, node, "%s takes an integer, not '%.64s'", what, s);
		a->type = PLAN_ATTR_INT;
		return walk_int(p, node, what, &a->i);
	}
}

static int ops_attrs(struct sp *p, yaml_node_t *map, void *obj)
{
	struct op_build *o = obj;

	for (yaml_node_pair_t *pair = map->data.mapping.pairs.start;
	     pair < map->data.mapping.pairs.top; pair++) {
		yaml_node_t *key = walk_node(p, pair->key), *value = walk_node(p, pair->value);
		const char *k = walk_scalar(p, key, "an attribute name");
		int idx;

		if (k == NULL)
			return -1;
		if ((idx = op_kind_attr_index(o->kind, k)) < 0) {
			int total = op_kind_count_attrs(o->kind);
			char list[160];
			size_t n = 0;
			if (total == 0)
				return sp_error(p, key, "unknown attribute '%.64s': %s takes none", k,
				                o->kind->name);
			for (int i = 0; i < total && n < sizeof list; i++)
				n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
				                      i == 0 ? "" : i + 1 == total ? " or " : ", ",
				                      o->kind->attrs[i].name);
			return sp_error(p, key, "unknown attribute '%.64s' for %s (expected %s)", k,
			                o->kind->name, list);
		}
		if (o->given[idx])
			return sp_error(p, key, "duplicate attribute '%s'", k);
		o->given[idx] = 1;
		if (ops_attr_value(p, o, idx, value) != 0)
			return -1;
	}
	return 0;
}

/* Every attribute explicitly, in the kind's order, defaults filled in. */
static int ops_attr_defaults(struct sp *p, struct op_build *o)
{
	int n = op_kind_count_attrs(o->kind);

	for (int i = 0; i < n; i++) {
		const struct op_attr_spec *spec = &o->kind->attrs[i];
		struct plan_attr *a = &o->attr[i];

		a->key = spec->name;
		if (a->type != PLAN_ATTR_STR)
			a->s = "";
		if (o->given[i])
			continue;
		if (spec->required)
			return sp_error(p, o->node, "%s needs the attribute '%s'", o->desc, spec->name);
		switch (spec->type) {
		case OP_ATTR_FLOAT:
			a->type = PLAN_ATTR_FLOAT;
			a->f = spec->dflt;
			break;
		case OP_ATTR_BOOL:
			a->type = PLAN_ATTR_BOOL;
			a->i = spec->dflt != 0.0;
			break;
		case OP_ATTR_ENUM:
			a->type = PLAN_ATTR_STR;
			a->s = op_attr_choices(spec)[(int)spec->dflt];
			break;
		default:
			a->type = PLAN_ATTR_INT;
			a->i = (int64_t)spec->dflt;
			break;
		}
	}
	/* kv_heads defaults to heads: no fixed number can say that. */
	int heads, kvh = op_kind_kv_heads_attr(o->kind, &heads);
	if (kvh >= 0 && !o->given[kvh])
		o->attr[kvh].i = o->attr[heads].i;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* One op.                                                                 */

static int ops_kind(struct sp *p, yaml_node_t *node, void *obj)
{
	struct op_build *o = obj;
	const char *s = walk_scalar(p, node, "an op kind");

	if (s == NULL)
		return -1;
	if ((o->kind = op_kind_find(s)) == NULL) {
		const char *names[OP_COUNT];
		const char *best;
		for (int i = 0; i < OP_COUNT; i++)
			names[i] = op_kind_get((enum op_id)i)->name;
		best = suggest_name(s, names, OP_COUNT);
		if (best != NULL)
			return sp_error(p, node, "unknown op kind '%.64s' (did you mean '%s'?)", s, best);
		return sp_error(p, node, "unknown op kind '%.64s' (see bcgtool ops)", s);
	}
	sp_op_desc(NULL, o->kind->name, o->index, o->desc, sizeof o->desc);
	return 0;
}

static int ops_name(struct sp *p, yaml_node_t *node, void *obj)
{
	struct op_build *o = obj;
	const char *s = walk_scalar(p, node, "an op name");
	const struct sym *old;

	if (s == NULL || ops_expand_name(p, node, s, o->name) != 0)
		return -1;
	if ((old = symtab_find(&p->opnames, o->name)) != NULL)
		return sp_error(p, node, "duplicate op name '%s' (first used by the op at %u:%u)",
		                o->name, old->line, old->col);
	sp_op_desc(o->name, o->kind->name, o->index, o->desc, sizeof o->desc);
	return 0;
}

static int ops_in(struct sp *p, yaml_node_t *node, void *obj)
{
	return ops_operands(p, node, obj, 0);
}

static int ops_out(struct sp *p, yaml_node_t *node, void *obj)
{
	return ops_operands(p, node, obj, 1);
}

static int ops_eager(struct sp *p, yaml_node_t *node, void *obj)
{
	struct op_build *o = obj;
	return walk_bool(p, node, "'eager'", &o->eager);
}

static const struct walk_field op_fields[] = {
	{ "op", YAML_SCALAR_NODE, WALK_REQUIRED, ops_kind },
	{ "name", YAML_SCALAR_NODE, 0, ops_name },
	{ "in", YAML_SEQUENCE_NODE, 0, ops_in },
	{ "out", YAML_SEQUENCE_NODE, WALK_REQUIRED, ops_out },
	{ "attrs", YAML_MAPPING_NODE, 0, ops_attrs },
	{ "eager", YAML_SCALAR_NODE, 0, ops_eager },
	{ NULL, YAML_NO_NODE, 0, NULL }
};

static int ops_one(struct sp *p, yaml_node_t *node)
{
	struct op_build o = { .node = node, .index = plan_count_ops(p->plan) };
	struct plan_op op;
	uint32_t nattr;
	struct plan_diag diag;
	uint32_t index;

	if (o.index >= SCRIPT_MAX_OPS)
		return sp_error(p, node, "the script has more than %d ops once its repeat blocks "
		                "are expanded", SCRIPT_MAX_OPS);
	if (walk_mapping(p, node, op_fields, &o, "an op") != 0)
		return -1;
	if (o.nin != (uint32_t)op_kind_count_inputs(o.kind) &&
	    o.nin != (uint32_t)op_kind_min_inputs(o.kind)) {
		yaml_node_t empty = { .type = YAML_SEQUENCE_NODE, .start_mark = node->start_mark };
		if (ops_operands(p, &empty, &o, 0) != 0)
			return -1;
	}
	if (ops_attr_defaults(p, &o) != 0)
		return -1;
	/* attention's causal, its last attribute, is stored only when true:
	 * plans of scripts that never say it stay as they were. */
	nattr = (uint32_t)op_kind_count_attrs(o.kind);
	if (o.kind->id == OP_ATTENTION && o.attr[ATTN_CAUSAL].i == 0)
		nattr = ATTN_CAUSAL;
	/* rope_kv_write's eps, its last, only with the weights it is for. */
	if ((o.kind->id == OP_ROPE_KV_WRITE || o.kind->id == OP_ROPE_PAGED_KV_WRITE) &&
	    o.nin == (uint32_t)op_kind_min_inputs(o.kind)) {
		if (o.given[RKV_EPS])
			return sp_error(p, node, "%s: attribute eps is for the inputs q_w and k_w, "
			                "which it lacks", o.desc);
		nattr = RKV_EPS;
	}
	op = (struct plan_op){
		.kind = o.kind->name, .name = o.name, .flags = o.eager ? PLAN_OP_EAGER : 0,
		.line = sp_line(node), .col = sp_col(node),
		.nin = o.nin, .nout = o.nout,
		.nattr = nattr,
		.in = o.in, .out = o.out, .attr = o.attr,
	};
	if (check_op(p, &op, o.kind, node, o.in_nodes, o.out_nodes) != 0)
		return -1;
	if (plan_add_op(p->plan, &op, &index, &diag) != 0)
		return sp_error(p, node, "%s", diag.message);
	for (uint32_t i = 0; i < o.nout; i++)
		p->written[o.out[i]] = 1;
	if (o.name[0] != '\0') {
		struct sym s = {
			.name = plan_get_op(p->plan, index)->name, .kind = SYM_OP, .index = index,
			.line = sp_line(node), .col = sp_col(node),
		};
		if (symtab_add(&p->opnames, &s) != 0)
			return sp_error(p, NULL, "out of memory");
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Repeat blocks.                                                          */

struct repeat_build {
	yaml_node_t *count;
	yaml_node_t *as;
	yaml_node_t *ops;
};

static int repeat_count(struct sp *p, yaml_node_t *node, void *obj)
{
	((struct repeat_build *)obj)->count = node;
	(void)p;
	return 0;
}

static int repeat_as(struct sp *p, yaml_node_t *node, void *obj)
{
	((struct repeat_build *)obj)->as = node;
	(void)p;
	return 0;
}

static int repeat_ops(struct sp *p, yaml_node_t *node, void *obj)
{
	((struct repeat_build *)obj)->ops = node;
	(void)p;
	return 0;
}

static const struct walk_field repeat_fields[] = {
	{ "repeat", YAML_SCALAR_NODE, WALK_REQUIRED, repeat_count },
	{ "as", YAML_SCALAR_NODE, 0, repeat_as },
	{ "ops", YAML_SEQUENCE_NODE, WALK_REQUIRED, repeat_ops },
	{ NULL, YAML_NO_NODE, 0, NULL }
};

static int ops_repeat(struct sp *p, yaml_node_t *node)
{
	struct repeat_build r = { NULL, NULL, NULL };
	const char *var = "";
	int64_t count;

	if (walk_mapping(p, node, repeat_fields, &r, "a repeat block") != 0)
		return -1;
	if (p->depth >= SCRIPT_MAX_DEPTH)
		return sp_error(p, node, "repeat blocks nest more than %d deep", SCRIPT_MAX_DEPTH);
	if (walk_int_range(p, r.count, "the repeat count", 1, SCRIPT_MAX_OPS, &count) != 0)
		return -1;
	if (r.as != NULL) {
		const struct sym *old;
		if ((var = walk_name(p, r.as, "repeat variable")) == NULL)
			return -1;
		if ((old = symtab_find(&p->names, var)) != NULL)
			return sp_error(p, r.as, "'%s' is already declared (%s, at %u:%u)", var,
			                old->kind == SYM_DIM ? "a dim" :
			                old->kind == SYM_VAR ? "a var" : "a tensor", old->line, old->col);
		for (unsigned i = 0; i < p->depth; i++)
			if (strcmp(p->scope[i].name, var) == 0)
				return sp_error(p, r.as, "repeat variable '%s' is already the variable "
				                "of an enclosing repeat block", var);
	}
	if (r.ops->data.sequence.items.top == r.ops->data.sequence.items.start)
		return sp_error(p, r.ops, "a repeat block needs at least one op");
	for (int64_t i = 0; i < count; i++) {
		int rc;
		p->scope[p->depth].name = var;
		p->scope[p->depth].value = i;
		p->depth++;
		rc = ops_list(p, r.ops);
		p->depth--;
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The list.                                                               */

static int ops_list(struct sp *p, yaml_node_t *seq)
{
	for (yaml_node_item_t *it = seq->data.sequence.items.start;
	     it < seq->data.sequence.items.top; it++) {
		yaml_node_t *e = walk_node(p, *it);
		int rc;

		if (walk_expect(p, e, YAML_MAPPING_NODE, "an op") != 0)
			return -1;
		if (walk_find(p, e, "repeat") != NULL)
			rc = ops_repeat(p, e);
		else if (walk_find(p, e, "op") != NULL)
			rc = ops_one(p, e);
		else
			rc = sp_error(p, e, "an entry of 'ops' needs a key 'op' or 'repeat'");
		if (rc != 0)
			return -1;
	}
	return 0;
}

int ops_parse(struct sp *p, yaml_node_t *seq)
{
	uint32_t nt = plan_count_tensors(p->plan);

	if (seq->data.sequence.items.top == seq->data.sequence.items.start)
		return sp_error(p, seq, "the script has no ops");
	if ((p->written = calloc(nt ? nt : 1, 1)) == NULL)
		return sp_error(p, NULL, "out of memory");
	return ops_list(p, seq);
}
