/*
 * engine/shard.c - the sharding pass of tensor parallelism (shard.h;
 * TP-DESIGN: "Sharding pass").
 *
 * The script says which tensors split and how; the pass gives each its
 * share, checks that every op can run on the shares as declared, and
 * inserts the collectives the splits need. It never infers a split: an op
 * whose operands split in a way it cannot run is an error at the op's
 * script position, naming the operand.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "shard.h"

/* An op of the rank program, before it is added. */
struct sh_op {
	struct plan_op   op;
	uint32_t         in[OP_MAX_IN];
	uint32_t         out[OP_MAX_OUT];
	struct plan_attr attr[OP_MAX_ATTRS];
	char             name[160];
	const char      *kind;
};

/* A tensor the pass adds ("<op>.partial", "<out>.shard"). */
struct sh_tensor {
	struct plan_tensor t;
	char               name[192];
};

struct sh {
	const plan_t       *src;
	uint32_t            world, rank;
	struct plan_tensor *tensors;     /* the shares, by the script's index */
	struct sh_op       *ops;
	uint32_t            nops, capops;
	struct sh_tensor   *extra;
	uint32_t            nextra, capextra;
	struct shard_error *err;
};

static int sh_fail(struct sh *s, uint32_t op, uint32_t tensor, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int sh_fail(struct sh *s, uint32_t op, uint32_t tensor, const char *fmt, ...)
{
	va_list ap;

	s->err->op = op;
	s->err->tensor = tensor;
	s->err->line = s->err->col = 0;
	if (op != PLAN_NONE) {
		const struct plan_op *o = plan_get_op(s->src, op);
		s->err->line = o->line;
		s->err->col = o->col;
	}
	va_start(ap, fmt);
	vsnprintf(s->err->msg, sizeof s->err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

int shard_block(int64_t full, int64_t unit, uint32_t world, uint32_t rank, int64_t *start,
                int64_t *len)
{
	int64_t units;

	if (unit < 1 || full % unit != 0 || world < 1 || rank >= world)
		return -1;
	units = full / unit;
	if (units % world == 0) {
		*len = units / world * unit;
		*start = (int64_t)rank * *len;
		return 0;
	}
	if ((int64_t)world % units == 0) {      /* held alike by world/units ranks */
		*start = (int64_t)rank / ((int64_t)world / units) * unit;
		*len = unit;
		return 0;
	}
	return -1;
}

/* ---------------------------------------------------------------------- */
/* Tensors.                                                                */

static int sh_share_tensors(struct sh *s)
{
	uint32_t nt = plan_count_tensors(s->src);

	if ((s->tensors = calloc(nt ? nt : 1, sizeof *s->tensors)) == NULL)
		return sh_fail(s, PLAN_NONE, PLAN_NONE, "out of memory");
	for (uint32_t i = 0; i < nt; i++) {
		struct plan_tensor *t = &s->tensors[i];
		struct plan_split *sp = &t->split;
		int64_t sum = 0;

		*t = *plan_get_tensor(s->src, i);
		if (sp->nblocks == 0)
			continue;
		for (uint32_t b = 0; b < sp->nblocks; b++) {
			struct plan_split_block *bl = &sp->block[b];
			if (shard_block(bl->full, sp->unit, s->world, s->rank, &bl->start, &bl->len) != 0)
				return sh_fail(s, PLAN_NONE, i, "tensor '%s' cannot split %u ways: its split "
				               "block %u has %lld units of %lld (%lld elements); the ranks "
				               "must divide the units, or the units the ranks", t->name,
				               s->world, b, (long long)(bl->full / sp->unit),
				               (long long)sp->unit, (long long)bl->full);
			sum += bl->len;
		}
		t->shape[sp->axis].dim = PLAN_NONE;
		t->shape[sp->axis].size = sum;
	}
	return 0;
}

static const struct plan_split *sh_split(const struct sh *s, uint32_t t)
{
	return s->tensors[t].split.nblocks ? &s->tensors[t].split : NULL;
}

/* Whether tensor T splits along axis AXIS (counted from 0). */
static int sh_split_on(const struct sh *s, uint32_t t, uint32_t axis)
{
	const struct plan_split *sp = sh_split(s, t);
	return sp != NULL && sp->axis == axis;
}

/* Whether two splits cut alike: the same blocks, unit and shares, on the
 * same axis counted from the last (a bias [C] splits as a row [T, C]). */
static int sh_same_split(const struct sh *s, uint32_t a, uint32_t b)
{
	const struct plan_split *x = sh_split(s, a), *y = sh_split(s, b);

	if (x == NULL || y == NULL)
		return x == y;
	if (s->tensors[a].rank - x->axis != s->tensors[b].rank - y->axis ||
	    x->nblocks != y->nblocks || x->unit != y->unit)
		return 0;
	for (uint32_t i = 0; i < x->nblocks; i++)
		if (x->block[i].full != y->block[i].full || x->block[i].start != y->block[i].start ||
		    x->block[i].len != y->block[i].len)
			return 0;
	return 1;
}

/* Whether any block of T's split is held alike by several ranks. */
static int sh_replicated(const struct sh *s, uint32_t t)
{
	const struct plan_split *sp = sh_split(s, t);

	if (sp == NULL)
		return 0;
	for (uint32_t b = 0; b < sp->nblocks; b++)
		if (sp->block[b].len * (int64_t)s->world != sp->block[b].full)
			return 1;
	return 0;
}

static const char *sh_tname(const struct sh *s, uint32_t t)
{
	if (t < plan_count_tensors(s->src))
		return s->tensors[t].name;
	return s->extra[t - plan_count_tensors(s->src)].name;
}

/* A new activation like tensor LIKE, its last axis LAST elements. */
static int sh_add_tensor(struct sh *s, uint32_t like, const char *name, int64_t last,
                         uint32_t *index)
{
	struct sh_tensor *x;

	if (s->nextra == s->capextra) {
		uint32_t cap = s->capextra ? s->capextra * 2 : 16;
		struct sh_tensor *n = realloc(s->extra, cap * sizeof *n);
		if (n == NULL)
			return sh_fail(s, PLAN_NONE, PLAN_NONE, "out of memory");
		s->extra = n;
		s->capextra = cap;
	}
	x = &s->extra[s->nextra];
	memset(x, 0, sizeof *x);
	x->t = s->tensors[like];
	snprintf(x->name, sizeof x->name, "%s", name);
	x->t.name = x->name;
	x->t.role = PLAN_ROLE_ACTIVATION;
	memset(&x->t.init, 0, sizeof x->t.init);
	memset(&x->t.feed, 0, sizeof x->t.feed);
	x->t.feed.var = PLAN_NONE;
	x->t.feed.from = PLAN_NONE;
	memset(&x->t.split, 0, sizeof x->t.split);
	x->t.shape[x->t.rank - 1].dim = PLAN_NONE;
	x->t.shape[x->t.rank - 1].size = last;
	*index = plan_count_tensors(s->src) + s->nextra++;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Ops.                                                                    */

static struct sh_op *sh_emit(struct sh *s, const struct plan_op *like)
{
	struct sh_op *o;

	if (s->nops == s->capops) {
		uint32_t cap = s->capops ? s->capops * 2 : 64;
		struct sh_op *n = realloc(s->ops, cap * sizeof *n);
		if (n == NULL)
			return NULL;
		s->ops = n;
		s->capops = cap;
	}
	o = &s->ops[s->nops++];
	memset(o, 0, sizeof *o);
	o->op.line = like->line;
	o->op.col = like->col;
	o->op.flags = like->flags;
	return o;
}

/* An op of kind KIND the pass adds for SRC, named "SRC.SUFFIX" (SRC's
 * kind when it has no name); NULL when out of memory. */
static struct sh_op *sh_emit_part(struct sh *s, const struct plan_op *src, const char *kind,
                                  const char *suffix)
{
	struct sh_op *o = sh_emit(s, src);

	if (o == NULL)
		return NULL;
	o->kind = kind;
	snprintf(o->name, sizeof o->name, "%.150s.%.8s", src->name[0] ? src->name : src->kind,
	         suffix);
	return o;
}

/* The op as the script has it. */
static int sh_copy(struct sh *s, const struct plan_op *src)
{
	struct sh_op *o = sh_emit(s, src);

	if (o == NULL)
		return sh_fail(s, PLAN_NONE, PLAN_NONE, "out of memory");
	if (src->nin > OP_MAX_IN || src->nout > OP_MAX_OUT || src->nattr > OP_MAX_ATTRS)
		return sh_fail(s, PLAN_NONE, PLAN_NONE, "op '%s': too many operands", src->name);
	o->kind = src->kind;
	snprintf(o->name, sizeof o->name, "%s", src->name);
	o->op.nin = src->nin;
	o->op.nout = src->nout;
	o->op.nattr = src->nattr;
	memcpy(o->in, src->in, src->nin * sizeof *src->in);
	memcpy(o->out, src->out, src->nout * sizeof *src->out);
	if (src->nattr > 0)
		memcpy(o->attr, src->attr, src->nattr * sizeof *src->attr);
	return 0;
}

/* A collective KIND ("all_reduce", "all_gather") after SRC: X -> OUT. */
static int sh_collective(struct sh *s, const struct plan_op *src, uint32_t op, const char *kind,
                         uint32_t x, uint32_t out)
{
	struct sh_op *o = sh_emit(s, src);

	if (o == NULL)
		return sh_fail(s, PLAN_NONE, PLAN_NONE, "out of memory");
	o->kind = kind;
	snprintf(o->name, sizeof o->name, "%s.%s", src->name[0] ? src->name : src->kind, kind);
	if (src->name[0] == '\0')
		snprintf(o->name, sizeof o->name, "%s.%u.%s", src->kind, op, kind);
	o->op.flags = 0;
	o->op.nin = 1;
	o->op.nout = 1;
	o->in[0] = x;
	o->out[0] = out;
	return 0;
}

static struct plan_attr *sh_attr(struct sh_op *o, const char *key)
{
	for (uint32_t i = 0; i < o->op.nattr; i++)
		if (strcmp(o->attr[i].key, key) == 0)
			return &o->attr[i];
	return NULL;
}

static int64_t sh_attr_int(const struct plan_op *o, const char *key, int64_t dflt)
{
	for (uint32_t i = 0; i < o->nattr; i++)
		if (strcmp(o->attr[i].key, key) == 0)
			return o->attr[i].i;
	return dflt;
}

/* Whether O's enum (or string) attribute KEY is VALUE. */
static int sh_attr_is(const struct plan_op *o, const char *key, const char *value)
{
	for (uint32_t i = 0; i < o->nattr; i++)
		if (strcmp(o->attr[i].key, key) == 0)
			return o->attr[i].s != NULL && strcmp(o->attr[i].s, value) == 0;
	return 0;
}

/* "op 'o.3' (matmul_add)" */
static void sh_desc(const struct plan_op *o, char *buf, size_t len)
{
	if (o->name[0] != '\0')
		snprintf(buf, len, "op '%s' (%s)", o->name, o->kind);
	else
		snprintf(buf, len, "op %s", o->kind);
}

/* An operand's role and name for messages: "input b ('w_o[0]')". */
static void sh_operand(const struct sh *s, const struct op_kind *k, const struct plan_op *o,
                       int out, uint32_t i, char *buf, size_t len)
{
	const char *const *names = out ? k->outputs : k->inputs;
	snprintf(buf, len, "%s %s ('%.120s')", out ? "output" : "input", names[i],
	         sh_tname(s, out ? o->out[i] : o->in[i]));
}

/* No operand of O may split: the kinds that reduce along an axis, and
 * every kind the pass does not know how to share. */
static int sh_unsplit(struct sh *s, const struct op_kind *k, const struct plan_op *o, uint32_t op,
                      const char *why)
{
	char desc[192], opnd[200];

	sh_desc(o, desc, sizeof desc);
	for (int side = 0; side < 2; side++) {
		uint32_t n = side ? o->nout : o->nin;
		for (uint32_t i = 0; i < n; i++)
			if (sh_split(s, side ? o->out[i] : o->in[i]) != NULL) {
				sh_operand(s, k, o, side, i, opnd, sizeof opnd);
				return sh_fail(s, op, PLAN_NONE, "%s cannot take a split operand: %s "
				               "splits, and %s", desc, opnd, why);
			}
	}
	return sh_copy(s, o);
}

/* Elementwise kinds: every float operand that splits cuts as the output
 * does; an input that splits needs an output that splits. */
static int sh_elementwise(struct sh *s, const struct op_kind *k, const struct plan_op *o,
                          uint32_t op)
{
	char desc[192], opnd[200], ref[200];
	uint32_t out = o->out[0];

	sh_desc(o, desc, sizeof desc);
	sh_operand(s, k, o, 1, 0, ref, sizeof ref);
	for (uint32_t i = 0; i < o->nin; i++) {
		uint32_t t = o->in[i];
		if (s->tensors[t].dtype == PLAN_DTYPE_I32 || sh_split(s, t) == NULL)
			continue;
		sh_operand(s, k, o, 0, i, opnd, sizeof opnd);
		if (sh_split(s, out) == NULL)
			return sh_fail(s, op, PLAN_NONE, "%s: %s splits, and %s does not", desc, opnd,
			               ref);
		if (!sh_same_split(s, t, out))
			return sh_fail(s, op, PLAN_NONE, "%s: %s splits otherwise than %s (axis, "
			               "blocks or unit differ)", desc, opnd, ref);
	}
	for (uint32_t i = 1; i < o->nout; i++)
		if (!sh_same_split(s, o->out[i], out)) {
			sh_operand(s, k, o, 1, i, opnd, sizeof opnd);
			return sh_fail(s, op, PLAN_NONE, "%s: %s splits otherwise than %s", desc, opnd,
			               ref);
		}
	return sh_copy(s, o);
}

/* silu_mul (x) -> out: x's two halves (two blocks) each split as out. */
static int sh_silu_mul(struct sh *s, const struct op_kind *k, const struct plan_op *o,
                       uint32_t op)
{
	const struct plan_split *x = sh_split(s, o->in[0]), *y = sh_split(s, o->out[0]);
	char desc[192];

	if (x == NULL && y == NULL)
		return sh_copy(s, o);
	sh_desc(o, desc, sizeof desc);
	if (x == NULL || y == NULL || x->nblocks != 2 || y->nblocks != 1 ||
	    x->axis != s->tensors[o->in[0]].rank - 1 || y->axis != s->tensors[o->out[0]].rank - 1 ||
	    x->unit != y->unit || x->block[0].full != y->block[0].full ||
	    x->block[1].full != y->block[0].full || x->block[0].start != y->block[0].start ||
	    x->block[0].len != y->block[0].len)
		return sh_fail(s, op, PLAN_NONE, "%s: input x ('%s') must split in two blocks "
		               "(gate, up) on its last axis, each as output out ('%s')", desc,
		               sh_tname(s, o->in[0]), sh_tname(s, o->out[0]));
	(void)k;
	return sh_copy(s, o);
}

/* The rank's heads of HEADS over the ranks; kv heads fewer than the ranks
 * are replicated (one each). */
static int sh_heads(struct sh *s, uint32_t op, const char *desc, const char *what,
                    int64_t heads, int kv, int64_t *out)
{
	if (heads % (int64_t)s->world == 0) {
		*out = heads / (int64_t)s->world;
		return 0;
	}
	if (kv && (int64_t)s->world % heads == 0) {
		*out = 1;
		return 0;
	}
	return sh_fail(s, op, PLAN_NONE, "%s: %s %lld cannot split %u ways", desc, what,
	               (long long)heads, s->world);
}

/* Copy O into the rank's ops; where its operands split (LEAD), its heads
 * and kv_heads become the rank's share. */
static int sh_copy_heads(struct sh *s, const struct plan_op *o, uint32_t op, const char *desc,
                         int lead)
{
	struct sh_op *e;
	struct plan_attr *a;

	if (sh_copy(s, o) != 0)
		return -1;
	if (!lead)
		return 0;
	e = &s->ops[s->nops - 1];
	if ((a = sh_attr(e, "heads")) != NULL &&
	    sh_heads(s, op, desc, "heads", a->i, 0, &a->i) != 0)
		return -1;
	if ((a = sh_attr(e, "kv_heads")) != NULL &&
	    sh_heads(s, op, desc, "kv_heads", a->i, 1, &a->i) != 0)
		return -1;
	return 0;
}

/* Ops that name heads: when the first operand splits, every float
 * operand does, and each rank runs its heads. */
static int sh_heads_op(struct sh *s, const struct op_kind *k, const struct plan_op *o,
                       uint32_t op)
{
	char desc[192], opnd[200];
	int lead = sh_split(s, o->in[0]) != NULL;

	sh_desc(o, desc, sizeof desc);
	for (int side = 0; side < 2; side++) {
		uint32_t n = side ? o->nout : o->nin;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t t = side ? o->out[i] : o->in[i];
			if (s->tensors[t].dtype == PLAN_DTYPE_I32 || (side == 0 && i == 0))
				continue;
			if ((sh_split(s, t) != NULL) == lead)
				continue;
			if (k->id == OP_QK_NORM && side == 0)   /* the norms' weights [head_dim] */
				continue;
			if (side == 0 && ((k->id == OP_ROPE_KV_WRITE && i >= RKV_Q_W) ||
			                  (k->id == OP_ROPE_PAGED_KV_WRITE && i >= RPKV_Q_W)))
				continue;                       /* q_w, k_w: the same */
			sh_operand(s, k, o, side, i, opnd, sizeof opnd);
			return sh_fail(s, op, PLAN_NONE, "%s: %s %s, and input %s ('%s') %s", desc, opnd,
			               lead ? "does not split" : "splits", k->inputs[0],
			               sh_tname(s, o->in[0]), lead ? "does" : "does not");
		}
	}
	return sh_copy_heads(s, o, op, desc, lead);
}

/* rmsnorm_matmul_rope_kv_write (x, w, b, pos) -> q, k_cache, v_cache: the
 * norm reads x and w whole; b splits along its product columns (by blocks
 * [H, KVW, KVW] of unit head_dim, as rope_kv_write's qkv does) exactly
 * when the outputs split by head; heads and kv_heads then become the
 * rank's (sh_copy_heads). */
static int sh_norm_product_heads(struct sh *s, const struct op_kind *k, const struct plan_op *o,
                                 uint32_t op)
{
	uint32_t b = o->in[RRK_B];
	int tb = sh_attr_int(o, "trans_b", 0) != 0, lead = sh_split(s, b) != NULL;
	char desc[192], opnd[200];

	sh_desc(o, desc, sizeof desc);
	for (uint32_t i = 0; i < 2; i++)
		if (sh_split(s, o->in[i]) != NULL)
			return sh_fail(s, op, PLAN_NONE, "%s: input %s ('%s') splits; the norm reads "
			               "whole rows of x and all of w (only b may split, along its "
			               "q|k|v columns)", desc, k->inputs[i], s->tensors[o->in[i]].name);
	if (lead && !sh_split_on(s, b, tb ? 0 : 1))
		return sh_fail(s, op, PLAN_NONE, "%s: input b ('%s') splits along K; the norm "
		               "reads whole rows of x (split b along its q|k|v columns)", desc,
		               s->tensors[b].name);
	for (uint32_t i = 0; i < o->nout; i++) {
		if ((sh_split(s, o->out[i]) != NULL) == lead)
			continue;
		sh_operand(s, k, o, 1, i, opnd, sizeof opnd);
		return sh_fail(s, op, PLAN_NONE, "%s: %s %s, and input b ('%s') %s", desc, opnd,
		               lead ? "does not split" : "splits", sh_tname(s, b),
		               lead ? "does" : "does not");
	}
	return sh_copy_heads(s, o, op, desc, lead);
}

static int sh_gather_target(struct sh *s, const char *desc, uint32_t op, uint32_t b,
                            uint32_t out)
{
	const struct plan_split *sp = sh_split(s, b);

	if (sp->nblocks != 1 || sh_replicated(s, b) ||
	    s->tensors[out].shape[s->tensors[out].rank - 1].size != sp->block[0].full)
		return sh_fail(s, op, PLAN_NONE, "%s: output '%s' is whole and '%s' splits in "
		               "blocks or replicates: the ranks' columns cannot be gathered into "
		               "it (split the output)", desc, s->tensors[out].name,
		               s->tensors[b].name);
	return 0;
}

/* matmul, matmul_add, matmul_silu_mul; and rmsnorm_matmul (x, w, b), whose
 * x and w the norm reads whole: only its b may split, along N (w is
 * replicated, as every whole tensor is). */
static int sh_product(struct sh *s, const struct op_kind *k, const struct plan_op *o,
                      uint32_t op)
{
	int fused_add = k->id == OP_MATMUL_ADD, rnm = k->id == OP_RMSNORM_MATMUL;
	int swiglu = k->id == OP_MATMUL_SILU_MUL || (rnm && sh_attr_is(o, "epilogue", "silu_mul"));
	uint32_t ia = fused_add ? 1 : 0, a = o->in[ia], b = o->in[rnm ? 2 : ia + 1], out = o->out[0];
	int ta = sh_attr_int(o, "trans_a", 0) != 0, tb = sh_attr_int(o, "trans_b", 0) != 0;
	uint32_t a_k = ta ? 0 : 1, b_k = tb ? 1 : 0, b_n = tb ? 0 : 1;
	int bN = sh_split_on(s, b, b_n), bK = sh_split_on(s, b, b_k), aK = sh_split_on(s, a, a_k);
	char desc[192];

	sh_desc(o, desc, sizeof desc);
	for (uint32_t i = 0; rnm && i < 2; i++)
		if (sh_split(s, o->in[i]) != NULL)
			return sh_fail(s, op, PLAN_NONE, "%s: input %s ('%s') splits; the norm reads "
			               "whole rows of x and all of w (only b may split, along N)", desc,
			               k->inputs[i], s->tensors[o->in[i]].name);
	if (rnm && bK)
		return sh_fail(s, op, PLAN_NONE, "%s: input b ('%s') splits along K; the norm "
		               "reads whole rows of x (split b along N)", desc, s->tensors[b].name);
	if (sh_split(s, a) != NULL && !aK)
		return sh_fail(s, op, PLAN_NONE, "%s: input a ('%s') splits along M; only K (the "
		               "axis the product sums) may split", desc, s->tensors[a].name);
	if (aK != bK)
		return sh_fail(s, op, PLAN_NONE, "%s: input a ('%s') %s along K and input b "
		               "('%s') %s", desc, s->tensors[a].name, aK ? "splits" : "does not split",
		               s->tensors[b].name, bK ? "does" : "does not");
	if (aK) {
		/* row-parallel: partial sums, added up over the ranks */
		const struct plan_split *x = sh_split(s, a), *y = sh_split(s, b);
		int same = x->nblocks == y->nblocks && x->unit == y->unit;
		for (uint32_t i = 0; same && i < x->nblocks; i++)
			same = x->block[i].full == y->block[i].full &&
			       x->block[i].start == y->block[i].start && x->block[i].len == y->block[i].len;
		if (!same || sh_replicated(s, b))
			return sh_fail(s, op, PLAN_NONE, "%s: inputs a ('%s') and b ('%s') split K "
			               "otherwise (blocks, unit or replication differ)", desc,
			               s->tensors[a].name, s->tensors[b].name);
		if (swiglu)
			return sh_fail(s, op, PLAN_NONE, "%s: input b ('%s') splits along K: the "
			               "product's partial sums cannot go through silu_mul (split it "
			               "along N)", desc, s->tensors[b].name);
		if (sh_split(s, out) != NULL || (fused_add && sh_split(s, o->in[0]) != NULL))
			return sh_fail(s, op, PLAN_NONE, "%s: a product split along K gives partial "
			               "sums of the whole output; output out ('%s') must not split",
			               desc, s->tensors[out].name);
		if (!fused_add)
			return sh_copy(s, o) != 0 ? -1 : sh_collective(s, o, op, "all_reduce", out, out);
		/* matmul_add (x, a, b) -> out: matmul(a, b) -> P, all_reduce(P), add(x, P) */
		char pname[192];
		uint32_t part;
		struct sh_op *e;
		snprintf(pname, sizeof pname, "%s.partial", o->name[0] ? o->name : o->kind);
		if (sh_add_tensor(s, out, pname, s->tensors[out].shape[s->tensors[out].rank - 1].size,
		                  &part) != 0)
			return -1;
		s->extra[part - plan_count_tensors(s->src)].t.shape[s->tensors[out].rank - 1] =
			s->tensors[out].shape[s->tensors[out].rank - 1];
		if ((e = sh_emit(s, o)) == NULL)
			return sh_fail(s, PLAN_NONE, PLAN_NONE, "out of memory");
		e->kind = "matmul";
		snprintf(e->name, sizeof e->name, "%s", o->name);
		e->op.nin = 2;
		e->op.nout = 1;
		e->in[0] = a;
		e->in[1] = b;
		e->out[0] = part;
		for (uint32_t i = 0; i < o->nattr && e->op.nattr < OP_MAX_ATTRS; i++)
			if (strcmp(o->attr[i].key, "trans_a") == 0 || strcmp(o->attr[i].key, "trans_b") == 0)
				e->attr[e->op.nattr++] = o->attr[i];
		if (sh_collective(s, o, op, "all_reduce", part, part) != 0)
			return -1;
		if ((e = sh_emit_part(s, o, "add", "add")) == NULL)
			return sh_fail(s, PLAN_NONE, PLAN_NONE, "out of memory");
		e->op.flags = 0;
		e->op.nin = 2;
		e->op.nout = 1;
		e->in[0] = o->in[0];
		e->in[1] = part;
		e->out[0] = out;
		return 0;
	}
	if (bN) {
		/* column-parallel: each rank computes its columns of the output */
		const struct plan_split *y = sh_split(s, b);
		if (sh_split(s, out) == NULL) {
			char sname[192];
			uint32_t shard;
			int64_t last;
			struct sh_op *e;
			if (fused_add)
				return sh_fail(s, op, PLAN_NONE, "%s: input b ('%s') splits along N, so the "
				               "sum is split: output out ('%s') and input x must split "
				               "as b", desc, s->tensors[b].name, s->tensors[out].name);
			if (swiglu) {
				/* gate | up blocks give one block of out */
				if (y->nblocks != 2 || sh_replicated(s, b) ||
				    s->tensors[out].shape[s->tensors[out].rank - 1].size != y->block[0].full)
					return sh_fail(s, op, PLAN_NONE, "%s: output '%s' is whole and input b "
					               "('%s') does not split as gate | up blocks: split the "
					               "output", desc, s->tensors[out].name, s->tensors[b].name);
				last = y->block[0].len;
			} else {
				if (sh_gather_target(s, desc, op, b, out) != 0)
					return -1;
				last = y->block[0].len;
			}
			snprintf(sname, sizeof sname, "%s.shard", s->tensors[out].name);
			if (sh_add_tensor(s, out, sname, last, &shard) != 0 || sh_copy(s, o) != 0)
				return -1;
			e = &s->ops[s->nops - 1];
			e->out[0] = shard;
			return sh_collective(s, o, op, "all_gather", shard, out);
		}
		/* the output splits: its blocks are b's (gate | up: one block) */
		const struct plan_split *z = sh_split(s, out);
		int ok = z->axis == s->tensors[out].rank - 1 && z->unit == y->unit;
		if (swiglu)
			ok = ok && y->nblocks == 2 && z->nblocks == 1 &&
			     y->block[0].full == z->block[0].full && y->block[1].full == z->block[0].full &&
			     y->block[0].start == z->block[0].start && y->block[0].len == z->block[0].len;
		else
			ok = ok && y->nblocks == z->nblocks;
		for (uint32_t i = 0; ok && !swiglu && i < y->nblocks; i++)
			ok = y->block[i].full == z->block[i].full && y->block[i].start == z->block[i].start &&
			     y->block[i].len == z->block[i].len;
		if (!ok)
			return sh_fail(s, op, PLAN_NONE, "%s: output out ('%s') splits otherwise than "
			               "input b ('%s') along N%s", desc, s->tensors[out].name,
			               s->tensors[b].name, swiglu ? " (gate | up: out is one block of "
			               "each half)" : "");
		if (fused_add && !sh_same_split(s, o->in[0], out))
			return sh_fail(s, op, PLAN_NONE, "%s: input x ('%s') splits otherwise than "
			               "output out ('%s')", desc, s->tensors[o->in[0]].name,
			               s->tensors[out].name);
		return sh_copy(s, o);
	}
	if (sh_split(s, out) != NULL)
		return sh_fail(s, op, PLAN_NONE, "%s: output out ('%s') splits, and input b ('%s') "
		               "does not split along N", desc, s->tensors[out].name,
		               s->tensors[b].name);
	if (fused_add && sh_split(s, o->in[0]) != NULL)
		return sh_fail(s, op, PLAN_NONE, "%s: input x ('%s') splits, and the product does "
		               "not", desc, s->tensors[o->in[0]].name);
	return sh_copy(s, o);
}

/* rmsnorm_matmul_argmax (x, w, b) -> out, index: whole on every rank when
 * nothing splits; with b split along N (a vocabulary-parallel lm-head), its
 * two kinds: rmsnorm_matmul as sh_product gives it (each rank's columns,
 * gathered into the whole out), then argmax (out) -> index, which needs
 * out's whole rows. */
static int sh_norm_product_argmax(struct sh *s, const struct plan_op *o, uint32_t op)
{
	struct plan_op rnm = *o;
	struct plan_attr attr[OP_MAX_ATTRS];
	uint32_t b = o->in[2], out = o->out[0], index = o->out[1];
	char desc[192];
	struct sh_op *e;

	sh_desc(o, desc, sizeof desc);
	if (sh_split(s, index) != NULL)
		return sh_fail(s, op, PLAN_NONE, "%s: output index ('%s') splits; each rank picks "
		               "from whole rows", desc, s->tensors[index].name);
	if (sh_split(s, b) == NULL && sh_split(s, o->in[0]) == NULL &&
	    sh_split(s, o->in[1]) == NULL && sh_split(s, out) == NULL)
		return sh_copy(s, o);
	if (sh_split(s, out) != NULL)
		return sh_fail(s, op, PLAN_NONE, "%s: output out ('%s') splits; the pick reads whole "
		               "rows of it (leave it whole: the ranks' columns are gathered)", desc,
		               s->tensors[out].name);
	if (o->nattr + 1 > OP_MAX_ATTRS)
		return sh_fail(s, PLAN_NONE, PLAN_NONE, "op '%s': too many operands", o->name);
	/* rmsnorm_matmul's attributes: these, and its epilogue none */
	memcpy(attr, o->attr, o->nattr * sizeof *attr);
	attr[o->nattr] = (struct plan_attr){ .key = "epilogue", .type = PLAN_ATTR_STR, .s = "none" };
	rnm.kind = "rmsnorm_matmul";
	rnm.nout = 1;
	rnm.attr = attr;
	rnm.nattr = o->nattr + 1;
	if (sh_product(s, op_kind_get(OP_RMSNORM_MATMUL), &rnm, op) != 0)
		return -1;
	if ((e = sh_emit_part(s, o, "argmax", "argmax")) == NULL)
		return sh_fail(s, PLAN_NONE, PLAN_NONE, "out of memory");
	e->op.nin = 1;
	e->op.nout = 1;
	e->in[0] = out;
	e->out[0] = index;
	return 0;
}

/* embedding (table, ids) -> out: a table split by rows (the vocabulary)
 * gives vocab_embedding and an all_reduce; one split by columns gives the
 * output's columns. */
static int sh_embedding(struct sh *s, const struct op_kind *k, const struct plan_op *o,
                        uint32_t op)
{
	uint32_t table = o->in[0], out = o->out[0];
	const struct plan_split *sp = sh_split(s, table);
	char desc[192];
	struct sh_op *e;

	(void)k;
	sh_desc(o, desc, sizeof desc);
	if (sp == NULL) {
		if (sh_split(s, out) != NULL)
			return sh_fail(s, op, PLAN_NONE, "%s: output out ('%s') splits, and input table "
			               "('%s') does not", desc, s->tensors[out].name, s->tensors[table].name);
		return sh_copy(s, o);
	}
	if (sp->axis == 1) {
		if (!sh_same_split(s, table, out))
			return sh_fail(s, op, PLAN_NONE, "%s: input table ('%s') splits by columns, "
			               "and output out ('%s') does not split as it", desc,
			               s->tensors[table].name, s->tensors[out].name);
		return sh_copy(s, o);
	}
	if (sp->nblocks != 1 || sh_replicated(s, table))
		return sh_fail(s, op, PLAN_NONE, "%s: input table ('%s') splits its rows in blocks "
		               "or replicates them: a vocabulary-parallel table splits in one block, "
		               "each row on one rank", desc, s->tensors[table].name);
	if (sh_split(s, out) != NULL)
		return sh_fail(s, op, PLAN_NONE, "%s: a vocabulary-parallel embedding sums the "
		               "ranks' rows: output out ('%s') must not split", desc,
		               s->tensors[out].name);
	if ((e = sh_emit(s, o)) == NULL)
		return sh_fail(s, PLAN_NONE, PLAN_NONE, "out of memory");
	e->kind = "vocab_embedding";
	snprintf(e->name, sizeof e->name, "%s", o->name);
	e->op.nin = 2;
	e->op.nout = 1;
	e->in[0] = table;
	e->in[1] = o->in[1];
	e->out[0] = out;
	e->op.nattr = 1;
	e->attr[0] = (struct plan_attr){ .key = "vocab_start", .type = PLAN_ATTR_INT,
	                                 .i = sp->block[0].start, .s = "" };
	return sh_collective(s, o, op, "all_reduce", out, out);
}

static int sh_op(struct sh *s, uint32_t op)
{
	const struct plan_op *o = plan_get_op(s->src, op);
	const struct op_kind *k = op_kind_find(o->kind);
	char desc[192];

	if (k == NULL) {
		sh_desc(o, desc, sizeof desc);
		return sh_fail(s, op, PLAN_NONE, "%s: unknown kind", desc);
	}
	switch (k->id) {
	case OP_MATMUL:
	case OP_MATMUL_ADD:
	case OP_MATMUL_SILU_MUL:
	case OP_RMSNORM_MATMUL:
		return sh_product(s, k, o, op);
	case OP_EMBEDDING:
		return sh_embedding(s, k, o, op);
	case OP_ROPE:
	case OP_ATTENTION:
	case OP_ROPE_KV_WRITE:
	case OP_ROPE_PAGED_KV_WRITE:
	case OP_PAGED_ATTENTION:
	case OP_QK_NORM:
		return sh_heads_op(s, k, o, op);
	case OP_RMSNORM_MATMUL_ROPE_KV_WRITE:
		return sh_norm_product_heads(s, k, o, op);
	case OP_RMSNORM_MATMUL_ARGMAX:
		return sh_norm_product_argmax(s, o, op);
	case OP_DECODER_LAYER:
		/* Each rank running the whole layer on whole weights would be
		 * correct but no parallelism; a layer split by heads needs an
		 * all_reduce after o and after down, inside the op. */
		sh_desc(o, desc, sizeof desc);
		return sh_fail(s, op, PLAN_NONE, "%s: a whole decoder layer in one op cannot "
		               "run over ranks (its o and down products would need an all_reduce "
		               "inside it); write the layer as its unfused ops, as "
		               "samples/llama-3.2-1b-fuse.yaml does", desc);
	case OP_FILL:
	case OP_COPY:
	case OP_ADD:
	case OP_MUL:
	case OP_SCALE:
	case OP_GELU:
	case OP_GATED_ADD:
	case OP_KV_WRITE:
	case OP_PAGED_KV_WRITE:
		return sh_elementwise(s, k, o, op);
	case OP_SILU_MUL:
		return sh_silu_mul(s, k, o, op);
	case OP_ALL_REDUCE:
	case OP_ALL_GATHER:
	case OP_VOCAB_EMBEDDING:
		return sh_unsplit(s, k, o, op, "the pass inserts the collectives itself");
	default:
		return sh_unsplit(s, k, o, op, "the kind reduces along an axis (or reads it whole)");
	}
}

/* ---------------------------------------------------------------------- */
/* Weight sources: the rank's slice of each checkpoint tensor.             */

static int sh_weights(struct sh *s, plan_t *dst)
{
	struct plan_diag diag;

	for (uint32_t i = 0; i < plan_count_weight_sources(s->src); i++) {
		struct plan_weight_source w = *plan_get_weight_source(s->src, i);
		const struct plan_tensor *full = plan_get_tensor(s->src, w.tensor);
		const struct plan_tensor *t = &s->tensors[w.tensor];
		const struct plan_split *sp = sh_split(s, w.tensor);
		uint64_t es = plan_dtype_size(t->dtype), row = 1, srow = 1, s0, rows;

		if (sp == NULL) {
			if (plan_add_weight_source(dst, &w, NULL, &diag) != 0)
				return sh_fail(s, PLAN_NONE, w.tensor, "%s", diag.message);
			continue;
		}
		for (uint32_t a = 1; a < full->rank; a++) {
			row *= (uint64_t)full->shape[a].size;
			srow *= (uint64_t)t->shape[a].size;
		}
		s0 = w.offset / es / row;                            /* first row it fills */
		rows = w.bytes / plan_dtype_size(w.dtype) / row;     /* rows it fills */
		if (sp->axis > 0) {
			uint64_t outer = rows, inner = 1;
			if (sp->nblocks != 1)
				return sh_fail(s, PLAN_NONE, w.tensor, "tensor '%s' reads checkpoint tensor "
				               "'%s' and splits axis %u in %u blocks: a checkpoint tensor "
				               "splits along axis 0, or in one block", t->name, w.name,
				               sp->axis, sp->nblocks);
			for (uint32_t a = 1; a < sp->axis; a++)
				outer *= (uint64_t)full->shape[a].size;
			for (uint32_t a = sp->axis + 1; a < full->rank; a++)
				inner *= (uint64_t)full->shape[a].size;
			w.offset = s0 * srow * es;
			w.slice_outer = outer;
			w.slice_full = (uint64_t)full->shape[sp->axis].size;
			w.slice_inner = inner;
			w.slice_start = (uint64_t)sp->block[0].start;
			w.slice_len = (uint64_t)sp->block[0].len;
			if (plan_add_weight_source(dst, &w, NULL, &diag) != 0)
				return sh_fail(s, PLAN_NONE, w.tensor, "%s", diag.message);
			continue;
		}
		/* axis 0: each block's share of rows, where this source lies */
		uint64_t bfull = 0, bshare = 0;
		for (uint32_t b = 0; b < sp->nblocks; b++) {
			uint64_t lo = bfull + (uint64_t)sp->block[b].start;
			uint64_t hi = lo + (uint64_t)sp->block[b].len;
			uint64_t i0 = lo > s0 ? lo : s0, i1 = hi < s0 + rows ? hi : s0 + rows;
			if (i0 < i1) {
				struct plan_weight_source c = w;
				c.offset = (bshare + (i0 - lo)) * srow * es;
				c.slice_outer = 1;
				c.slice_full = rows;
				c.slice_inner = row;
				c.slice_start = i0 - s0;
				c.slice_len = i1 - i0;
				if (plan_add_weight_source(dst, &c, NULL, &diag) != 0)
					return sh_fail(s, PLAN_NONE, w.tensor, "%s", diag.message);
			}
			bfull += (uint64_t)sp->block[b].full;
			bshare += (uint64_t)sp->block[b].len;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The registry's checks, again, on the rank's shapes.                     */

static int sh_check(struct sh *s, plan_t *dst, const int64_t *tokens, uint32_t ntokens)
{
	for (uint32_t i = 0; i < plan_count_ops(dst); i++) {
		const struct plan_op *o = plan_get_op(dst, i);
		const struct op_kind *k = op_kind_find(o->kind);
		for (uint32_t v = 0; v < ntokens; v++) {
			struct op_call c;
			char msg[256], desc[192];
			memset(&c, 0, sizeof c);
			c.kind = k;
			c.nin = (int)o->nin;
			c.nout = (int)o->nout;
			for (int side = 0; side < 2; side++) {
				uint32_t n = side ? o->nout : o->nin;
				for (uint32_t j = 0; j < n; j++) {
					uint32_t ti = side ? o->out[j] : o->in[j];
					const struct plan_tensor *pt = plan_get_tensor(dst, ti);
					struct op_tensor *ot = side ? &c.out[j] : &c.in[j];
					ot->dtype = pt->dtype;
					ot->rank = (int)pt->rank;
					for (uint32_t a = 0; a < pt->rank; a++)
						ot->dim[a] = plan_axis_size(dst, &pt->shape[a], tokens[v]);
				}
			}
			for (int p = 0; k->attrs[p].name != NULL && p < OP_MAX_ATTRS; p++) {
				const struct op_attr_spec *spec = &k->attrs[p];
				const struct plan_attr *a = NULL;
				for (uint32_t j = 0; j < o->nattr; j++)
					if (strcmp(o->attr[j].key, spec->name) == 0)
						a = &o->attr[j];
				if (a == NULL) {
					if (spec->type == OP_ATTR_FLOAT)
						c.attr[p].f = spec->dflt;
					else
						c.attr[p].i = (int64_t)spec->dflt;
				} else if (a->type == PLAN_ATTR_FLOAT) {
					c.attr[p].f = a->f;
				} else if (a->type == PLAN_ATTR_VAR) {
					c.attr[p].i = plan_var_value(plan_get_var(dst, (uint32_t)a->i), 0);
				} else if (a->type == PLAN_ATTR_STR) {
					c.attr[p].i = op_attr_choice(spec, a->s);
				} else {
					c.attr[p].i = a->i;
					if (spec->type == OP_ATTR_FLOAT)
						c.attr[p].f = (double)a->i;
				}
			}
			if (k->check(&c, msg, sizeof msg) != 0) {
				/* the script's op it came from: the one at its position */
				uint32_t from = PLAN_NONE;
				for (uint32_t j = 0; j < plan_count_ops(s->src) && from == PLAN_NONE; j++)
					if (plan_get_op(s->src, j)->line == o->line &&
					    plan_get_op(s->src, j)->col == o->col)
						from = j;
				sh_desc(o, desc, sizeof desc);
				sh_fail(s, from, PLAN_NONE, "%s on rank %u of %u, at %lld tokens: %s", desc,
				        s->rank, s->world, (long long)tokens[v], msg);
				s->err->line = o->line;
				s->err->col = o->col;
				return -1;
			}
		}
	}
	return 0;
}

/* ---------------------------------------------------------------------- */

static int sh_build(struct sh *s, plan_t *dst)
{
	uint32_t nt = plan_count_tensors(s->src);
	struct plan_diag diag;

	if (plan_set_meta(dst, plan_get_meta(s->src), &diag) != 0 ||
	    plan_set_layout(dst, plan_get_layout(s->src), &diag) != 0)
		return sh_fail(s, PLAN_NONE, PLAN_NONE, "%s", diag.message);
	for (uint32_t i = 0; i < plan_count_dims(s->src); i++)
		if (plan_add_dim(dst, plan_get_dim(s->src, i), NULL, &diag) != 0)
			return sh_fail(s, PLAN_NONE, PLAN_NONE, "%s", diag.message);
	for (uint32_t i = 0; i < plan_count_vars(s->src); i++)
		if (plan_add_var(dst, plan_get_var(s->src, i), NULL, &diag) != 0)
			return sh_fail(s, PLAN_NONE, PLAN_NONE, "%s", diag.message);
	for (uint32_t i = 0; i < nt; i++)
		if (plan_add_tensor(dst, &s->tensors[i], NULL, &diag) != 0)
			return sh_fail(s, PLAN_NONE, i, "%s", diag.message);
	for (uint32_t i = 0; i < s->nextra; i++) {
		/* a name the script already took gets the index after it */
		struct sh_tensor *x = &s->extra[i];
		if (plan_find_tensor(dst, x->name) != PLAN_NONE) {
			size_t n = strlen(x->name);
			snprintf(x->name + n, sizeof x->name - n, ".%u", nt + i);
		}
		/* its name lives in the array, which growing may have moved */
		x->t.name = x->name;
		if (plan_add_tensor(dst, &x->t, NULL, &diag) != 0)
			return sh_fail(s, PLAN_NONE, PLAN_NONE, "%s", diag.message);
	}
	for (uint32_t i = 0; i < s->nops; i++) {
		struct sh_op *o = &s->ops[i];
		o->op.kind = o->kind;
		o->op.name = o->name;
		o->op.in = o->in;
		o->op.out = o->out;
		o->op.attr = o->attr;
		if (plan_add_op(dst, &o->op, NULL, &diag) != 0)
			return sh_fail(s, PLAN_NONE, PLAN_NONE, "%s", diag.message);
	}
	if (sh_weights(s, dst) != 0)
		return -1;
	struct plan_dist d = { .world = s->world, .rank = s->rank };
	if (plan_set_dist(dst, &d, &diag) != 0)
		return sh_fail(s, PLAN_NONE, PLAN_NONE, "%s", diag.message);
	return 0;
}

int shard_plan(const plan_t *script, uint32_t world, uint32_t rank, const int64_t *tokens,
               uint32_t ntokens, plan_t **out, struct shard_error *err)
{
	struct sh s = { .src = script, .world = world, .rank = rank, .err = err };
	plan_t *dst = NULL;
	int rc = -1;

	*out = NULL;
	memset(err, 0, sizeof *err);
	err->op = err->tensor = PLAN_NONE;
	if (world < 1 || rank >= world) {
		sh_fail(&s, PLAN_NONE, PLAN_NONE, "rank %u of a world of %u", rank, world);
		return -1;
	}
	if (world == 1) {
		if ((dst = plan_clone_program(script)) == NULL) {
			sh_fail(&s, PLAN_NONE, PLAN_NONE, "out of memory");
			return -1;
		}
		*out = dst;
		return 0;
	}
	if (sh_share_tensors(&s) != 0)
		goto out;
	for (uint32_t i = 0; i < plan_count_ops(script); i++)
		if (sh_op(&s, i) != 0)
			goto out;
	if ((dst = plan_new()) == NULL) {
		sh_fail(&s, PLAN_NONE, PLAN_NONE, "out of memory");
		goto out;
	}
	if (sh_build(&s, dst) != 0 || sh_check(&s, dst, tokens, ntokens) != 0)
		goto out;
	*out = dst;
	dst = NULL;
	rc = 0;
out:
	plan_free(dst);
	free(s.tensors);
	free(s.ops);
	free(s.extra);
	return rc;
}
