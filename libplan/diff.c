/*
 * diff.c - the structural differences between two plans, as a list.
 *
 * Records with names (dims, vars, tensors) are matched by name; sequences
 * (ops, each variant's items, a segment's nodes, the dispatch table) are
 * aligned by a longest common subsequence, then what is left over between
 * two matched elements is paired where it is plainly the same thing
 * changed: an op or breakpoint renamed, a segment whose span changed, a
 * node running another kernel. A breakpoint is "moved" when the ops before
 * it, counting only ops both plans have, are not the same in both.
 *
 * Timestamps and timings are never compared: two captures of one script
 * differ only in them, and must compare equal. Nor is the file's format
 * version: a plan read from a 1.0 file and the same plan written as 1.1
 * are one plan, and the fields 1.1 added (features, edge types, choices)
 * are compared themselves. A choice's measured times are timings too.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define TEXT_MAX 512

/* Past this many cells the alignment gives up optimality for memory. */
#define LCS_MAX_CELLS (4u * 1024u * 1024u)
#define LCS_WINDOW 64u

struct plan_diff {
	struct plan_diff_entry *e;
	uint32_t                n;
	uint32_t                cap;
	uint32_t                count;    /* entries other than SAME */
	int                     failed;   /* out of memory on the way */
};

struct diff_ctx {
	struct plan_diff *d;
	const plan_t     *a;
	const plan_t     *b;
	unsigned          flags;
	uint32_t         *opmap_a;        /* A's op -> B's op, or PLAN_NONE */
	uint32_t         *opmap_b;
	unsigned char    *op_moved;       /* A's op is out of order with another */
};

/* ---------------------------------------------------------------------- */
/* The list.                                                               */

static char *diff_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	return p != NULL ? memcpy(p, s, n) : NULL;
}

static void diff_add(struct plan_diff *d, int area, int change, int64_t tokens,
                     const char *subject, const char *field, const char *a, const char *b,
                     uint32_t ai, uint32_t bi)
{
	struct plan_diff_entry *e;

	if (d->failed)
		return;
	if (d->n == d->cap) {
		uint32_t cap = d->cap ? d->cap * 2 : 32;
		struct plan_diff_entry *ne = cap > d->cap ? realloc(d->e, cap * sizeof *ne) : NULL;
		if (ne == NULL) {
			d->failed = 1;
			return;
		}
		d->e = ne;
		d->cap = cap;
	}
	e = &d->e[d->n];
	e->area = area;
	e->change = change;
	e->tokens = tokens;
	e->a_index = ai;
	e->b_index = bi;
	e->subject = diff_strdup(subject);
	e->field = diff_strdup(field);
	e->a = diff_strdup(a);
	e->b = diff_strdup(b);
	if (e->subject == NULL || e->field == NULL || e->a == NULL || e->b == NULL) {
		free((char *)e->subject);
		free((char *)e->field);
		free((char *)e->a);
		free((char *)e->b);
		d->failed = 1;
		return;
	}
	d->n++;
	if (change != PLAN_DIFF_SAME)
		d->count++;
}

/* A field of record SUBJECT differs: A's value is X, B's is Y. An empty
 * value is shown as "-": in an entry, "" means "absent". */
static void diff_field(struct diff_ctx *c, int area, int64_t tokens, const char *subject,
                       const char *field, const char *x, const char *y, uint32_t ai,
                       uint32_t bi)
{
	if (strcmp(x, y) != 0)
		diff_add(c->d, area, PLAN_DIFF_CHANGED, tokens, subject, field, x[0] ? x : "-",
		         y[0] ? y : "-", ai, bi);
}

static void diff_field_i64(struct diff_ctx *c, int area, int64_t tokens, const char *subject,
                           const char *field, int64_t x, int64_t y, uint32_t ai, uint32_t bi)
{
	char sx[32], sy[32];

	if (x == y)
		return;
	snprintf(sx, sizeof sx, "%" PRId64, x);
	snprintf(sy, sizeof sy, "%" PRId64, y);
	diff_add(c->d, area, PLAN_DIFF_CHANGED, tokens, subject, field, sx, sy, ai, bi);
}

static void diff_field_u64(struct diff_ctx *c, int area, int64_t tokens, const char *subject,
                           const char *field, uint64_t x, uint64_t y, uint32_t ai, uint32_t bi)
{
	char sx[32], sy[32];

	if (x == y)
		return;
	snprintf(sx, sizeof sx, "%" PRIu64, x);
	snprintf(sy, sizeof sy, "%" PRIu64, y);
	diff_add(c->d, area, PLAN_DIFF_CHANGED, tokens, subject, field, sx, sy, ai, bi);
}

static void diff_field_hex(struct diff_ctx *c, int area, int64_t tokens, const char *subject,
                           const char *field, uint64_t x, uint64_t y, uint32_t ai, uint32_t bi)
{
	char sx[32], sy[32];

	if (x == y)
		return;
	snprintf(sx, sizeof sx, "0x%016" PRIx64, x);
	snprintf(sy, sizeof sy, "0x%016" PRIx64, y);
	diff_add(c->d, area, PLAN_DIFF_CHANGED, tokens, subject, field, sx, sy, ai, bi);
}

/* ---------------------------------------------------------------------- */
/* Sequence alignment.                                                     */

typedef int (*diff_eq_fn)(const struct diff_ctx *c, uint32_t i, uint32_t j, const void *arg);

/*
 * Align A[0..na) with B[0..nb): MA[i] is the j matched with i, or
 * PLAN_NONE, and MB the reverse. Common ends are matched first; the rest
 * by a longest common subsequence (ties: A's element is dropped first,
 * which lists removals before additions), or, when that table would be
 * too large, by matching each element with the next equal one within a
 * window. Returns -1 when out of memory.
 */
static int diff_align(const struct diff_ctx *c, uint32_t na, uint32_t nb, diff_eq_fn eq,
                      const void *arg, uint32_t *ma, uint32_t *mb)
{
	uint32_t lo = 0, ha = na, hb = nb;

	for (uint32_t i = 0; i < na; i++)
		ma[i] = PLAN_NONE;
	for (uint32_t j = 0; j < nb; j++)
		mb[j] = PLAN_NONE;
	while (lo < ha && lo < hb && eq(c, lo, lo, arg)) {
		ma[lo] = lo;
		mb[lo] = lo;
		lo++;
	}
	while (ha > lo && hb > lo && eq(c, ha - 1, hb - 1, arg)) {
		ma[ha - 1] = hb - 1;
		mb[hb - 1] = ha - 1;
		ha--;
		hb--;
	}
	uint64_t rows = (uint64_t)(ha - lo) + 1, cols = (uint64_t)(hb - lo) + 1;
	if (rows * cols > LCS_MAX_CELLS) {
		uint32_t j = lo;
		for (uint32_t i = lo; i < ha && j < hb; i++) {
			for (uint32_t k = j; k < hb && k - j < LCS_WINDOW; k++) {
				if (eq(c, i, k, arg)) {
					ma[i] = k;
					mb[k] = i;
					j = k + 1;
					break;
				}
			}
		}
		return 0;
	}
	uint32_t *len = calloc(rows * cols, sizeof *len);
	if (len == NULL)
		return -1;
#define L(i, j) len[(uint64_t)((i) - lo) * cols + ((j) - lo)]
	for (uint32_t i = ha; i-- > lo;)
		for (uint32_t j = hb; j-- > lo;) {
			if (eq(c, i, j, arg))
				L(i, j) = 1 + (i + 1 < ha && j + 1 < hb ? L(i + 1, j + 1) : 0);
			else {
				uint32_t down = i + 1 < ha ? L(i + 1, j) : 0;
				uint32_t right = j + 1 < hb ? L(i, j + 1) : 0;
				L(i, j) = down > right ? down : right;
			}
		}
	for (uint32_t i = lo, j = lo; i < ha && j < hb;) {
		uint32_t down = i + 1 < ha ? L(i + 1, j) : 0;
		uint32_t right = j + 1 < hb ? L(i, j + 1) : 0;
		if (eq(c, i, j, arg) && L(i, j) == 1 + (i + 1 < ha && j + 1 < hb ? L(i + 1, j + 1) : 0)) {
			ma[i] = j;
			mb[j] = i;
			i++;
			j++;
		} else if (down >= right) {
			i++;
		} else {
			j++;
		}
	}
#undef L
	free(len);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Meta and layout.                                                        */

/* "model.yaml" of "./samples/model.yaml". */
static const char *diff_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash != NULL ? slash + 1 : path;
}

static void diff_meta(struct diff_ctx *c)
{
	const struct plan_meta *x = plan_get_meta(c->a), *y = plan_get_meta(c->b);
	const int area = PLAN_DIFF_META;
	char sx[64], sy[64];

	if (c->flags & PLAN_DIFF_IGNORE_ENV)
		/* Where the script was and how its path was spelled are the
		 * environment: its name and its content hash identify it. */
		diff_field(c, area, 0, "", "script", diff_basename(x->script),
		           diff_basename(y->script), 0, 0);
	else
		diff_field(c, area, 0, "", "script", x->script, y->script, 0, 0);
	diff_field_hex(c, area, 0, "", "script hash", x->script_hash, y->script_hash, 0, 0);
	diff_field(c, area, 0, "", "backend", plan_backend_name(x->backend),
	           plan_backend_name(y->backend), 0, 0);
	diff_field(c, area, 0, "", "features", plan_features_text(x->features, sx, sizeof sx),
	           plan_features_text(y->features, sy, sizeof sy), 0, 0);
	if (c->flags & PLAN_DIFF_IGNORE_ENV)
		return;
	diff_field(c, area, 0, "", "tool", x->tool, y->tool, 0, 0);
	diff_field(c, area, 0, "", "device", x->device, y->device, 0, 0);
	snprintf(sx, sizeof sx, x->cc_major || x->cc_minor ? "%d.%d" : "-", (int)x->cc_major,
	         (int)x->cc_minor);
	snprintf(sy, sizeof sy, y->cc_major || y->cc_minor ? "%d.%d" : "-", (int)y->cc_major,
	         (int)y->cc_minor);
	diff_field(c, area, 0, "", "compute capability", sx, sy, 0, 0);
	diff_field(c, area, 0, "", "cuda runtime", plan_version_text(x->cuda_runtime, 0, sx, sizeof sx),
	           plan_version_text(y->cuda_runtime, 0, sy, sizeof sy), 0, 0);
	diff_field(c, area, 0, "", "cuda driver", plan_version_text(x->cuda_driver, 0, sx, sizeof sx),
	           plan_version_text(y->cuda_driver, 0, sy, sizeof sy), 0, 0);
	diff_field(c, area, 0, "", "cublas", plan_version_text(x->cublas, 1, sx, sizeof sx),
	           plan_version_text(y->cublas, 1, sy, sizeof sy), 0, 0);
}

static void diff_layout(struct diff_ctx *c)
{
	const struct plan_layout *x = plan_get_layout(c->a), *y = plan_get_layout(c->b);
	const int area = PLAN_DIFF_LAYOUT;

	diff_field_u64(c, area, 0, "", "arena bytes", x->arena_bytes, y->arena_bytes, 0, 0);
	diff_field_u64(c, area, 0, "", "unshared bytes", x->unshared_bytes, y->unshared_bytes, 0, 0);
	diff_field_u64(c, area, 0, "", "alignment", x->alignment, y->alignment, 0, 0);
	diff_field_u64(c, area, 0, "", "reference steps", plan_get_stats(c->a)->reference_steps,
	               plan_get_stats(c->b)->reference_steps, 0, 0);
}

/* ---------------------------------------------------------------------- */
/* Records matched by name: dims, vars, tensors.                           */

static void dim_text(const struct plan_dim *d, char *buf, size_t len)
{
	if (d->flags & PLAN_DIM_TOKENS)
		snprintf(buf, len, "dim %s = %lld (the token dim)", d->name, (long long)d->value);
	else if (d->expr[0] != '\0')
		snprintf(buf, len, "dim %s = %s = %lld", d->name, d->expr, (long long)d->value);
	else
		snprintf(buf, len, "dim %s = %lld", d->name, (long long)d->value);
}

static void diff_dims(struct diff_ctx *c)
{
	const int area = PLAN_DIFF_DIMS;
	char text[TEXT_MAX], subject[TEXT_MAX];

	for (uint32_t i = 0; i < plan_count_dims(c->a); i++) {
		const struct plan_dim *x = plan_get_dim(c->a, i);
		uint32_t k = plan_find_dim(c->b, x->name);
		if (k == PLAN_NONE) {
			dim_text(x, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_REMOVED, 0, text, "", text, "", i, PLAN_NONE);
			continue;
		}
		const struct plan_dim *y = plan_get_dim(c->b, k);
		snprintf(subject, sizeof subject, "dim %s", x->name);
		diff_field(c, area, 0, subject, "token dim", x->flags & PLAN_DIM_TOKENS ? "yes" : "no",
		           y->flags & PLAN_DIM_TOKENS ? "yes" : "no", i, k);
		diff_field(c, area, 0, subject, "expr", x->expr, y->expr, i, k);
		diff_field_i64(c, area, 0, subject, "value", x->value, y->value, i, k);
	}
	for (uint32_t k = 0; k < plan_count_dims(c->b); k++) {
		const struct plan_dim *y = plan_get_dim(c->b, k);
		if (plan_find_dim(c->a, y->name) == PLAN_NONE) {
			dim_text(y, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_ADDED, 0, text, "", "", text, PLAN_NONE, k);
		}
	}
}

static void var_text(const struct plan_var *v, char *buf, size_t len)
{
	snprintf(buf, len, "var %s: start %lld, step %lld, limit %lld, offset %llu", v->name,
	         (long long)v->start, (long long)v->step, (long long)v->limit,
	         (unsigned long long)v->offset);
}

static void diff_vars(struct diff_ctx *c)
{
	const int area = PLAN_DIFF_VARS;
	char text[TEXT_MAX], subject[TEXT_MAX];

	for (uint32_t i = 0; i < plan_count_vars(c->a); i++) {
		const struct plan_var *x = plan_get_var(c->a, i);
		uint32_t k = plan_find_var(c->b, x->name);
		if (k == PLAN_NONE) {
			var_text(x, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_REMOVED, 0, text, "", text, "", i, PLAN_NONE);
			continue;
		}
		const struct plan_var *y = plan_get_var(c->b, k);
		snprintf(subject, sizeof subject, "var %s", x->name);
		diff_field_i64(c, area, 0, subject, "start", x->start, y->start, i, k);
		diff_field_i64(c, area, 0, subject, "step", x->step, y->step, i, k);
		diff_field_i64(c, area, 0, subject, "limit", x->limit, y->limit, i, k);
		diff_field_u64(c, area, 0, subject, "offset", x->offset, y->offset, i, k);
	}
	for (uint32_t k = 0; k < plan_count_vars(c->b); k++) {
		const struct plan_var *y = plan_get_var(c->b, k);
		if (plan_find_var(c->a, y->name) == PLAN_NONE) {
			var_text(y, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_ADDED, 0, text, "", "", text, PLAN_NONE, k);
		}
	}
}

static void tensor_text(const plan_t *p, const struct plan_tensor *t, char *buf, size_t len)
{
	char shape[160], source[160], split[200] = "";

	plan_source_text(p, t, source, sizeof source);
	if (t->split.nblocks != 0) {
		char sp[180];
		snprintf(split, sizeof split, ", split %s", plan_split_text(t, sp, sizeof sp));
	}
	snprintf(buf, len, "tensor %s: %s %s %s, offset %llu, %llu bytes%s%s%s", t->name,
	         plan_dtype_name(t->dtype), plan_shape_text(p, t, shape, sizeof shape),
	         plan_role_name(t->role), (unsigned long long)t->offset,
	         (unsigned long long)t->bytes, strcmp(source, "-") != 0 ? ", " : "",
	         strcmp(source, "-") != 0 ? source : "", split);
}

static void diff_tensors(struct diff_ctx *c)
{
	const int area = PLAN_DIFF_TENSORS;
	char text[TEXT_MAX], subject[TEXT_MAX], sx[TEXT_MAX], sy[TEXT_MAX];

	for (uint32_t i = 0; i < plan_count_tensors(c->a); i++) {
		const struct plan_tensor *x = plan_get_tensor(c->a, i);
		uint32_t k = plan_find_tensor(c->b, x->name);
		if (k == PLAN_NONE) {
			tensor_text(c->a, x, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_REMOVED, 0, text, "", text, "", i, PLAN_NONE);
			continue;
		}
		const struct plan_tensor *y = plan_get_tensor(c->b, k);
		snprintf(subject, sizeof subject, "tensor %s", x->name);
		diff_field(c, area, 0, subject, "dtype", plan_dtype_name(x->dtype),
		           plan_dtype_name(y->dtype), i, k);
		diff_field(c, area, 0, subject, "shape", plan_shape_text(c->a, x, sx, sizeof sx),
		           plan_shape_text(c->b, y, sy, sizeof sy), i, k);
		diff_field(c, area, 0, subject, "role", plan_role_name(x->role),
		           plan_role_name(y->role), i, k);
		diff_field_u64(c, area, 0, subject, "offset", x->offset, y->offset, i, k);
		diff_field_u64(c, area, 0, subject, "bytes", x->bytes, y->bytes, i, k);
		diff_field(c, area, 0, subject, "init", plan_init_text(x, sx, sizeof sx),
		           plan_init_text(y, sy, sizeof sy), i, k);
		diff_field(c, area, 0, subject, "feed", plan_feed_text(c->a, x, sx, sizeof sx),
		           plan_feed_text(c->b, y, sy, sizeof sy), i, k);
		diff_field(c, area, 0, subject, "split", plan_split_text(x, sx, sizeof sx),
		           plan_split_text(y, sy, sizeof sy), i, k);
	}
	for (uint32_t k = 0; k < plan_count_tensors(c->b); k++) {
		const struct plan_tensor *y = plan_get_tensor(c->b, k);
		if (plan_find_tensor(c->a, y->name) == PLAN_NONE) {
			tensor_text(c->b, y, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_ADDED, 0, text, "", "", text, PLAN_NONE, k);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Ops.                                                                    */

static int op_same_key(const struct plan_op *x, const struct plan_op *y)
{
	return strcmp(x->kind, y->kind) == 0 && strcmp(x->name, y->name) == 0;
}

static int op_eq(const struct diff_ctx *c, uint32_t i, uint32_t j, const void *arg)
{
	(void)arg;
	return op_same_key(plan_get_op(c->a, i), plan_get_op(c->b, j));
}

static void op_text(const plan_t *p, uint32_t i, char *buf, size_t len)
{
	const struct plan_op *o = plan_get_op(p, i);
	char label[160], in[TEXT_MAX / 2 - 64], out[TEXT_MAX / 4];

	snprintf(buf, len, "op %u %s (%s): %s -> %s%s", i, plan_op_label(p, i, label, sizeof label),
	         o->kind, plan_tensor_list_text(p, o->in, o->nin, in, sizeof in),
	         plan_tensor_list_text(p, o->out, o->nout, out, sizeof out),
	         o->flags & PLAN_OP_EAGER ? ", eager" : "");
}

static void attrs_text(const plan_t *p, const struct plan_op *o, char *buf, size_t len)
{
	size_t at = 0;
	char one[160];

	buf[0] = '\0';
	for (uint32_t k = 0; k < o->nattr && at < len; k++) {
		int n = snprintf(buf + at, len - at, "%s%s", k ? ", " : "",
		                 plan_attr_text(p, &o->attr[k], one, sizeof one));
		if (n < 0)
			break;
		at += (size_t)n;
	}
	if (o->nattr == 0)
		snprintf(buf, len, "-");
}

static void diff_op_fields(struct diff_ctx *c, uint32_t i, uint32_t j)
{
	const struct plan_op *x = plan_get_op(c->a, i), *y = plan_get_op(c->b, j);
	const int area = PLAN_DIFF_OPS;
	char subject[TEXT_MAX], label[160], sx[TEXT_MAX], sy[TEXT_MAX];

	snprintf(subject, sizeof subject, "op %u %s (%s)", i, plan_op_label(c->a, i, label, sizeof label),
	         x->kind);
	diff_field(c, area, 0, subject, "kind", x->kind, y->kind, i, j);
	diff_field(c, area, 0, subject, "inputs", plan_tensor_list_text(c->a, x->in, x->nin, sx, sizeof sx),
	           plan_tensor_list_text(c->b, y->in, y->nin, sy, sizeof sy), i, j);
	diff_field(c, area, 0, subject, "outputs",
	           plan_tensor_list_text(c->a, x->out, x->nout, sx, sizeof sx),
	           plan_tensor_list_text(c->b, y->out, y->nout, sy, sizeof sy), i, j);
	attrs_text(c->a, x, sx, sizeof sx);
	attrs_text(c->b, y, sy, sizeof sy);
	diff_field(c, area, 0, subject, "attrs", sx, sy, i, j);
	diff_field(c, area, 0, subject, "eager", x->flags & PLAN_OP_EAGER ? "yes" : "no",
	           y->flags & PLAN_OP_EAGER ? "yes" : "no", i, j);
}

/* Pair what the alignment left over: the same op elsewhere (moved), or,
 * between the same two matched ops, one of the same kind (renamed). */
static void ops_pair(struct diff_ctx *c, uint32_t na, uint32_t nb, uint32_t *pair_a,
                     uint32_t *pair_b, int *how)
{
	for (uint32_t i = 0; i < na; i++) {
		pair_a[i] = PLAN_NONE;
		if (c->opmap_a[i] != PLAN_NONE)
			continue;
		for (uint32_t j = 0; j < nb; j++)
			if (c->opmap_b[j] == PLAN_NONE && pair_b[j] == PLAN_NONE &&
			    op_same_key(plan_get_op(c->a, i), plan_get_op(c->b, j))) {
				pair_a[i] = j;
				pair_b[j] = i;
				how[i] = PLAN_DIFF_MOVED;
				break;
			}
	}
	/* Gaps: walk both lists between matched ops. */
	uint32_t i = 0, j = 0;
	while (i < na || j < nb) {
		uint32_t ei = i, ej = j;
		while (ei < na && c->opmap_a[ei] == PLAN_NONE)
			ei++;
		while (ej < nb && c->opmap_b[ej] == PLAN_NONE)
			ej++;
		uint32_t k = j;
		for (uint32_t x = i; x < ei; x++) {
			if (pair_a[x] != PLAN_NONE)
				continue;
			while (k < ej && pair_b[k] != PLAN_NONE)
				k++;
			if (k < ej && strcmp(plan_get_op(c->a, x)->kind, plan_get_op(c->b, k)->kind) == 0) {
				pair_a[x] = k;
				pair_b[k] = x;
				how[x] = PLAN_DIFF_RENAMED;
				k++;
			}
		}
		i = ei + 1;
		j = ej + 1;
	}
}

static int diff_ops(struct diff_ctx *c)
{
	const int area = PLAN_DIFF_OPS;
	uint32_t na = plan_count_ops(c->a), nb = plan_count_ops(c->b);
	uint32_t *pair_a = calloc((size_t)na + 1, sizeof *pair_a);
	uint32_t *pair_b = malloc(((size_t)nb + 1) * sizeof *pair_b);
	int *how = calloc((size_t)na + 1, sizeof *how);
	char ta[TEXT_MAX], tb[TEXT_MAX];
	int rc = -1;

	if (pair_a == NULL || pair_b == NULL || how == NULL ||
	    diff_align(c, na, nb, op_eq, NULL, c->opmap_a, c->opmap_b) != 0)
		goto out;
	for (uint32_t j = 0; j < nb; j++)
		pair_b[j] = PLAN_NONE;
	ops_pair(c, na, nb, pair_a, pair_b, how);

	/* Paired ops count as the same op from here on; an op is moved when
	 * the ops both plans have are not all on the same side of it in
	 * both: some op before it in A comes after it in B, or the reverse. */
	for (uint32_t i = 0; i < na; i++)
		if (pair_a[i] != PLAN_NONE) {
			c->opmap_a[i] = pair_a[i];
			c->opmap_b[pair_a[i]] = i;
		}
	uint32_t top = 0, low = UINT32_MAX;
	int seen = 0;
	for (uint32_t i = 0; i < na; i++) {
		uint32_t j = c->opmap_a[i];
		if (j == PLAN_NONE)
			continue;
		if (seen && top > j)
			c->op_moved[i] = 1;
		if (!seen || j > top)
			top = j;
		seen = 1;
	}
	for (uint32_t i = na; i-- > 0;) {
		uint32_t j = c->opmap_a[i];
		if (j == PLAN_NONE)
			continue;
		if (low < j)
			c->op_moved[i] = 1;
		if (j < low)
			low = j;
	}

	/* In order: A's ops, each with its partner; B's unpaired additions
	 * where they fall, after the matched op before them. */
	uint32_t j = 0;
	for (uint32_t i = 0; i <= na; i++) {
		uint32_t until = i < na && pair_a[i] == PLAN_NONE && c->opmap_a[i] != PLAN_NONE ?
		                 c->opmap_a[i] : (i == na ? nb : j);
		for (; j < until; j++) {
			if (c->opmap_b[j] != PLAN_NONE)
				continue;
			op_text(c->b, j, tb, sizeof tb);
			diff_add(c->d, area, PLAN_DIFF_ADDED, 0, tb, "", "", tb, PLAN_NONE, j);
		}
		if (i == na)
			break;
		if (pair_a[i] != PLAN_NONE) {
			op_text(c->a, i, ta, sizeof ta);
			op_text(c->b, pair_a[i], tb, sizeof tb);
			diff_add(c->d, area, how[i], 0, ta, "", ta, tb, i, pair_a[i]);
			/* The rest of it may have changed too. */
			diff_op_fields(c, i, pair_a[i]);
		} else if (c->opmap_a[i] != PLAN_NONE) {
			if (c->op_moved[i]) {
				op_text(c->a, i, ta, sizeof ta);
				op_text(c->b, c->opmap_a[i], tb, sizeof tb);
				diff_add(c->d, area, PLAN_DIFF_MOVED, 0, ta, "", ta, tb, i, c->opmap_a[i]);
			}
			diff_op_fields(c, i, c->opmap_a[i]);
			j = c->opmap_a[i] + 1;
		} else {
			op_text(c->a, i, ta, sizeof ta);
			diff_add(c->d, area, PLAN_DIFF_REMOVED, 0, ta, "", ta, "", i, PLAN_NONE);
		}
	}
	rc = 0;
out:
	free(pair_a);
	free(pair_b);
	free(how);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Variants: capture sizes.                                                */

static void variant_text(const plan_t *p, uint32_t v, char *buf, size_t len)
{
	const struct plan_variant *x = plan_get_variant(p, v);

	snprintf(buf, len, "variant %lld: %s, %u item%s, peak %llu bytes", (long long)x->tokens,
	         plan_mode_name(x->mode), x->nitems, x->nitems == 1 ? "" : "s",
	         (unsigned long long)x->peak_bytes);
}

static void diff_variants(struct diff_ctx *c)
{
	const int area = PLAN_DIFF_VARIANTS;
	char text[TEXT_MAX], subject[64];

	for (uint32_t i = 0; i < plan_count_variants(c->a); i++) {
		const struct plan_variant *x = plan_get_variant(c->a, i);
		uint32_t k = plan_find_variant(c->b, x->tokens);
		if (k == PLAN_NONE) {
			variant_text(c->a, i, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_REMOVED, x->tokens, text, "", text, "", i, PLAN_NONE);
			continue;
		}
		const struct plan_variant *y = plan_get_variant(c->b, k);
		snprintf(subject, sizeof subject, "variant %lld", (long long)x->tokens);
		diff_field(c, area, x->tokens, subject, "mode", plan_mode_name(x->mode),
		           plan_mode_name(y->mode), i, k);
		{
			char ka[64], kb[64];
			diff_field(c, area, x->tokens, subject, "key", plan_key_text(x, ka, sizeof ka),
			           plan_key_text(y, kb, sizeof kb), i, k);
		}
		diff_field_u64(c, area, x->tokens, subject, "peak bytes", x->peak_bytes, y->peak_bytes,
		               i, k);
	}
	for (uint32_t k = 0; k < plan_count_variants(c->b); k++) {
		const struct plan_variant *y = plan_get_variant(c->b, k);
		if (plan_find_variant(c->a, y->tokens) == PLAN_NONE) {
			variant_text(c->b, k, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_ADDED, y->tokens, text, "", "", text, PLAN_NONE, k);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Items of one variant.                                                   */

struct items_arg {
	const struct plan_variant *va;
	const struct plan_variant *vb;
};

static int item_eq(const struct diff_ctx *c, uint32_t i, uint32_t j, const void *arg)
{
	const struct items_arg *ia = arg;
	const struct plan_item *x = &ia->va->items[i], *y = &ia->vb->items[j];

	if (x->kind != y->kind)
		return 0;
	if (x->kind == PLAN_ITEM_BREAK)
		return strcmp(plan_get_breakpoint(c->a, x->index)->name,
		              plan_get_breakpoint(c->b, y->index)->name) == 0;
	const struct plan_segment *s = plan_get_segment(c->a, x->index);
	const struct plan_segment *t = plan_get_segment(c->b, y->index);
	if (s->op_count != t->op_count)
		return 0;
	for (uint32_t k = 0; k < s->op_count; k++)
		if (c->opmap_a[s->op_first + k] != t->op_first + k)
			return 0;
	return 1;
}

static void item_text(const plan_t *p, const struct plan_item *it, char *buf, size_t len)
{
	char first[160], last[160];

	if (it->kind == PLAN_ITEM_BREAK) {
		const struct plan_breakpoint *b = plan_get_breakpoint(p, it->index);
		snprintf(buf, len, "break %s at op %u", b->name, b->op);
		return;
	}
	const struct plan_segment *s = plan_get_segment(p, it->index);
	plan_op_label(p, s->op_first, first, sizeof first);
	if (s->op_count == 1) {
		snprintf(buf, len, "segment op %u %s", s->op_first, first);
		return;
	}
	plan_op_label(p, s->op_first + s->op_count - 1, last, sizeof last);
	snprintf(buf, len, "segment ops %u-%u %s..%s", s->op_first, s->op_first + s->op_count - 1,
	         first, last);
}

/* Is the breakpoint at A's op X, matched with one at B's op Y, elsewhere:
 * on another op, or on one whose order among the ops both plans have
 * changed? */
static int break_moved(const struct diff_ctx *c, uint32_t x, uint32_t y)
{
	return c->opmap_a[x] != y || c->op_moved[x];
}

static void launch_text(const struct plan_node *n, char *buf, size_t len)
{
	snprintf(buf, len, "<<<(%u,%u,%u), (%u,%u,%u), %u>>>", n->grid[0], n->grid[1], n->grid[2],
	         n->block[0], n->block[1], n->block[2], n->shmem);
}

static void node_text(const struct plan_node *n, char *buf, size_t len)
{
	char launch[96];

	if (n->type == PLAN_NODE_KERNEL) {
		launch_text(n, launch, sizeof launch);
		snprintf(buf, len, "%s %s", n->kernel, launch);
	} else {
		snprintf(buf, len, "%s", plan_node_type_name(n->type));
	}
}

static void params_text(const struct plan_node *n, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (uint32_t k = 0; k < n->nparams && at < len; k++) {
		int w = snprintf(buf + at, len - at, "%s[%u]@%llu", k ? " " : "", n->params[k].index,
		                 (unsigned long long)n->params[k].offset);
		if (w < 0)
			break;
		at += (size_t)w;
	}
	if (n->nparams == 0)
		snprintf(buf, len, "-");
}

/* "0->1 1->2": an edge whose type or ports are not the default shows them,
 * "0->1 (programmatic)", so a changed type reads as a changed edge. */
static void edges_text(const struct plan_segment *s, char *buf, size_t len)
{
	size_t at = 0;
	char one[96];

	buf[0] = '\0';
	for (uint32_t k = 0; k < s->nedges && at < len; k++) {
		const char *t = strchr(plan_edge_text(&s->edges[k], one, sizeof one), ' ');
		int w;
		if (t != NULL) {
			one[t - one] = '\0';
			w = snprintf(buf + at, len - at, "%s%s (%s)", k ? " " : "", one, t + 1);
		} else {
			w = snprintf(buf + at, len - at, "%s%s", k ? " " : "", one);
		}
		if (w < 0)
			break;
		at += (size_t)w;
	}
	if (s->nedges == 0)
		snprintf(buf, len, "-");
}

struct nodes_arg {
	const struct plan_segment *s;
	const struct plan_segment *t;
};

static int node_eq(const struct diff_ctx *c, uint32_t i, uint32_t j, const void *arg)
{
	const struct nodes_arg *na = arg;
	const struct plan_node *x = &na->s->nodes[i], *y = &na->t->nodes[j];

	(void)c;
	return x->type == y->type && strcmp(x->kernel, y->kernel) == 0;
}

/* The nodes of two matched segments. */
static int diff_nodes(struct diff_ctx *c, int64_t tokens, const char *subject,
                      const struct plan_segment *s, const struct plan_segment *t, uint32_t ai,
                      uint32_t bi)
{
	const int area = PLAN_DIFF_ITEMS;
	struct nodes_arg arg = { s, t };
	uint32_t *ma = malloc(((size_t)s->nnodes + 1) * sizeof *ma);
	uint32_t *mb = malloc(((size_t)t->nnodes + 1) * sizeof *mb);
	char field[64], sx[TEXT_MAX], sy[TEXT_MAX];
	int rc = -1;

	if (ma == NULL || mb == NULL || diff_align(c, s->nnodes, t->nnodes, node_eq, &arg, ma, mb) != 0)
		goto out;
	diff_field_u64(c, area, tokens, subject, "nodes", s->nnodes, t->nnodes, ai, bi);
	uint32_t j = 0;
	for (uint32_t i = 0; i <= s->nnodes; i++) {
		/* The gap before the next matched node: pair A's and B's
		 * leftovers in order, then list what remains. */
		uint32_t ei = i, ej;
		while (ei < s->nnodes && ma[ei] == PLAN_NONE)
			ei++;
		ej = ei < s->nnodes ? ma[ei] : t->nnodes;
		for (; i < ei || j < ej; i++, j++) {
			if (i < ei && j < ej && s->nodes[i].type == t->nodes[j].type) {
				snprintf(field, sizeof field, "node %u kernel", i);
				diff_field(c, area, tokens, subject, field, s->nodes[i].kernel,
				           t->nodes[j].kernel, ai, bi);
				continue;
			}
			if (i < ei) {
				snprintf(field, sizeof field, "node %u", i);
				node_text(&s->nodes[i], sx, sizeof sx);
				diff_add(c->d, area, PLAN_DIFF_CHANGED, tokens, subject, field, sx, "", ai, bi);
			}
			if (j < ej) {
				snprintf(field, sizeof field, "node %u", j);
				node_text(&t->nodes[j], sy, sizeof sy);
				diff_add(c->d, area, PLAN_DIFF_CHANGED, tokens, subject, field, "", sy, ai, bi);
			}
		}
		if (ei == s->nnodes)
			break;
		i = ei;
		j = ma[ei];
		snprintf(field, sizeof field, "node %u launch", i);
		launch_text(&s->nodes[i], sx, sizeof sx);
		launch_text(&t->nodes[j], sy, sizeof sy);
		diff_field(c, area, tokens, subject, field, sx, sy, ai, bi);
		snprintf(field, sizeof field, "node %u params", i);
		params_text(&s->nodes[i], sx, sizeof sx);
		params_text(&t->nodes[j], sy, sizeof sy);
		diff_field(c, area, tokens, subject, field, sx, sy, ai, bi);
		j++;
	}
	edges_text(s, sx, sizeof sx);
	edges_text(t, sy, sizeof sy);
	diff_field(c, area, tokens, subject, "edges", sx, sy, ai, bi);
	diff_field_hex(c, area, tokens, subject, "fingerprint", s->fingerprint, t->fingerprint, ai, bi);
	rc = 0;
out:
	free(ma);
	free(mb);
	return rc;
}

/* Two items the alignment matched: a segment's nodes, or a breakpoint's
 * place and fields. */
static int diff_matched_item(struct diff_ctx *c, int64_t tokens, const struct plan_item *x,
                             const struct plan_item *y, uint32_t ai, uint32_t bi)
{
	const int area = PLAN_DIFF_ITEMS;
	char subject[TEXT_MAX], tb[TEXT_MAX], sx[TEXT_MAX], sy[TEXT_MAX];
	uint32_t before = c->d->count;

	item_text(c->a, x, subject, sizeof subject);
	item_text(c->b, y, tb, sizeof tb);
	if (x->kind == PLAN_ITEM_SEGMENT) {
		const struct plan_segment *s = plan_get_segment(c->a, x->index);
		const struct plan_segment *t = plan_get_segment(c->b, y->index);
		int ns = (s->flags & PLAN_SEG_NODES) != 0, nt = (t->flags & PLAN_SEG_NODES) != 0;
		diff_field(c, area, tokens, subject, "nodes recorded", ns ? "yes" : "no",
		           nt ? "yes" : "no", ai, bi);
		if (ns && nt && diff_nodes(c, tokens, subject, s, t, ai, bi) != 0)
			return -1;
	} else {
		const struct plan_breakpoint *p = plan_get_breakpoint(c->a, x->index);
		const struct plan_breakpoint *q = plan_get_breakpoint(c->b, y->index);
		if (break_moved(c, p->op, q->op))
			diff_add(c->d, area, PLAN_DIFF_MOVED, tokens, subject, "", subject, tb, ai, bi);
		diff_field(c, area, tokens, subject, "reason", plan_break_reason_name(p->reason),
		           plan_break_reason_name(q->reason), ai, bi);
		diff_field(c, area, tokens, subject, "detail", p->detail, q->detail, ai, bi);
		diff_field(c, area, tokens, subject, "reads",
		           plan_tensor_list_text(c->a, p->reads, p->nreads, sx, sizeof sx),
		           plan_tensor_list_text(c->b, q->reads, q->nreads, sy, sizeof sy), ai, bi);
		diff_field(c, area, tokens, subject, "writes",
		           plan_tensor_list_text(c->a, p->writes, p->nwrites, sx, sizeof sx),
		           plan_tensor_list_text(c->b, q->writes, q->nwrites, sy, sizeof sy), ai, bi);
	}
	if (c->d->count == before)
		diff_add(c->d, area, PLAN_DIFF_SAME, tokens, subject, "", subject, tb, ai, bi);
	return 0;
}

/* Pair leftover items: a breakpoint of the same name elsewhere (moved);
 * between the same two matched items, a breakpoint on the same op under
 * another name (renamed) or a segment in place of a segment (changed). */
static void items_pair(const struct diff_ctx *c, const struct plan_variant *va,
                       const struct plan_variant *vb, const uint32_t *ma, const uint32_t *mb,
                       uint32_t *pa, uint32_t *pb, int *how)
{
	for (uint32_t i = 0; i < va->nitems; i++)
		pa[i] = PLAN_NONE;
	for (uint32_t j = 0; j < vb->nitems; j++)
		pb[j] = PLAN_NONE;
	for (uint32_t i = 0; i < va->nitems; i++) {
		const struct plan_item *x = &va->items[i];
		if (ma[i] != PLAN_NONE || x->kind != PLAN_ITEM_BREAK)
			continue;
		for (uint32_t j = 0; j < vb->nitems; j++) {
			const struct plan_item *y = &vb->items[j];
			if (mb[j] == PLAN_NONE && pb[j] == PLAN_NONE && y->kind == PLAN_ITEM_BREAK &&
			    strcmp(plan_get_breakpoint(c->a, x->index)->name,
			           plan_get_breakpoint(c->b, y->index)->name) == 0) {
				pa[i] = j;
				pb[j] = i;
				how[i] = PLAN_DIFF_MOVED;
				break;
			}
		}
	}
	uint32_t i = 0, j = 0;
	while (i < va->nitems || j < vb->nitems) {
		uint32_t ei = i, ej = j;
		while (ei < va->nitems && ma[ei] == PLAN_NONE)
			ei++;
		while (ej < vb->nitems && mb[ej] == PLAN_NONE)
			ej++;
		for (uint32_t x = i; x < ei; x++) {
			const struct plan_item *ix = &va->items[x];
			if (pa[x] != PLAN_NONE)
				continue;
			for (uint32_t y = j; y < ej; y++) {
				const struct plan_item *iy = &vb->items[y];
				if (pb[y] != PLAN_NONE || ix->kind != iy->kind)
					continue;
				if (ix->kind == PLAN_ITEM_BREAK &&
				    c->opmap_a[plan_get_breakpoint(c->a, ix->index)->op] !=
				    plan_get_breakpoint(c->b, iy->index)->op)
					continue;
				pa[x] = y;
				pb[y] = x;
				how[x] = ix->kind == PLAN_ITEM_BREAK ? PLAN_DIFF_RENAMED : PLAN_DIFF_CHANGED;
				break;
			}
		}
		i = ei + 1;
		j = ej + 1;
	}
}

static int diff_items(struct diff_ctx *c, uint32_t iva, uint32_t ivb)
{
	const int area = PLAN_DIFF_ITEMS;
	const struct plan_variant *va = plan_get_variant(c->a, iva), *vb = plan_get_variant(c->b, ivb);
	struct items_arg arg = { va, vb };
	uint32_t na = va->nitems, nb = vb->nitems;
	uint32_t *ma = malloc(((size_t)na + 1) * sizeof *ma), *mb = malloc(((size_t)nb + 1) * sizeof *mb);
	uint32_t *pa = malloc(((size_t)na + 1) * sizeof *pa), *pb = malloc(((size_t)nb + 1) * sizeof *pb);
	int *how = calloc((size_t)na + 1, sizeof *how);
	char ta[TEXT_MAX], tb[TEXT_MAX];
	int64_t tokens = va->tokens;
	int rc = -1;

	if (ma == NULL || mb == NULL || pa == NULL || pb == NULL || how == NULL ||
	    diff_align(c, na, nb, item_eq, &arg, ma, mb) != 0)
		goto out;
	items_pair(c, va, vb, ma, mb, pa, pb, how);

	/* In B's order: each of B's items where it is now, A's removals
	 * before the next item matched. A moved breakpoint shows at its new
	 * place. */
	uint32_t i = 0;
	for (uint32_t j = 0; j <= nb; j++) {
		uint32_t until = i;
		if (j == nb)
			until = na;
		else if (mb[j] != PLAN_NONE)
			until = mb[j];
		else if (pb[j] != PLAN_NONE && how[pb[j]] != PLAN_DIFF_MOVED && pb[j] >= i)
			until = pb[j] + 1;   /* its pair shows with A's leftovers */
		for (; i < until; i++) {
			if (ma[i] != PLAN_NONE)
				continue;
			if (pa[i] != PLAN_NONE && how[i] != PLAN_DIFF_MOVED) {
				item_text(c->a, &va->items[i], ta, sizeof ta);
				item_text(c->b, &vb->items[pa[i]], tb, sizeof tb);
				diff_add(c->d, area, how[i], tokens, ta, "", ta, tb, i, pa[i]);
			} else if (pa[i] == PLAN_NONE) {
				item_text(c->a, &va->items[i], ta, sizeof ta);
				diff_add(c->d, area, PLAN_DIFF_REMOVED, tokens, ta, "", ta, "", i, PLAN_NONE);
			}
		}
		if (j == nb)
			break;
		if (mb[j] != PLAN_NONE) {
			if (diff_matched_item(c, tokens, &va->items[mb[j]], &vb->items[j], mb[j], j) != 0)
				goto out;
			i = mb[j] + 1;
		} else if (pb[j] != PLAN_NONE && how[pb[j]] == PLAN_DIFF_MOVED) {
			item_text(c->a, &va->items[pb[j]], ta, sizeof ta);
			item_text(c->b, &vb->items[j], tb, sizeof tb);
			diff_add(c->d, area, PLAN_DIFF_MOVED, tokens, ta, "", ta, tb, pb[j], j);
		} else if (pb[j] == PLAN_NONE) {
			item_text(c->b, &vb->items[j], tb, sizeof tb);
			diff_add(c->d, area, PLAN_DIFF_ADDED, tokens, tb, "", "", tb, PLAN_NONE, j);
		}
	}
	rc = 0;
out:
	free(ma);
	free(mb);
	free(pa);
	free(pb);
	free(how);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Checks and dispatch.                                                    */

static uint32_t find_check(const plan_t *p, uint32_t variant, const char *tensor)
{
	for (uint32_t i = 0; i < plan_count_checks(p); i++) {
		const struct plan_check *k = plan_get_check(p, i);
		const struct plan_tensor *t = plan_get_tensor(p, k->tensor);
		if (k->variant == variant && t != NULL && strcmp(t->name, tensor) == 0)
			return i;
	}
	return PLAN_NONE;
}

static void check_text(const plan_t *p, const struct plan_check *k, char *buf, size_t len)
{
	snprintf(buf, len, "check %s at %lld: hash 0x%016" PRIx64 ", sum %.9g after %u step%s",
	         plan_get_tensor(p, k->tensor)->name, (long long)plan_get_variant(p, k->variant)->tokens,
	         k->hash, k->sum, k->steps, k->steps == 1 ? "" : "s");
}

static void diff_checks(struct diff_ctx *c)
{
	const int area = PLAN_DIFF_CHECKS;
	char text[TEXT_MAX], subject[TEXT_MAX], sx[64], sy[64];

	for (uint32_t i = 0; i < plan_count_checks(c->a); i++) {
		const struct plan_check *x = plan_get_check(c->a, i);
		int64_t tokens = plan_get_variant(c->a, x->variant)->tokens;
		uint32_t vb = plan_find_variant(c->b, tokens);
		if (vb == PLAN_NONE)
			continue;   /* the variant's removal says it all */
		uint32_t k = find_check(c->b, vb, plan_get_tensor(c->a, x->tensor)->name);
		if (k == PLAN_NONE) {
			check_text(c->a, x, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_REMOVED, tokens, text, "", text, "", i, PLAN_NONE);
			continue;
		}
		const struct plan_check *y = plan_get_check(c->b, k);
		snprintf(subject, sizeof subject, "check %s at %lld", plan_get_tensor(c->a, x->tensor)->name,
		         (long long)tokens);
		diff_field_hex(c, area, tokens, subject, "hash", x->hash, y->hash, i, k);
		snprintf(sx, sizeof sx, "%.9g", x->sum);
		snprintf(sy, sizeof sy, "%.9g", y->sum);
		diff_field(c, area, tokens, subject, "sum", sx, sy, i, k);
		diff_field_u64(c, area, tokens, subject, "steps", x->steps, y->steps, i, k);
	}
	for (uint32_t k = 0; k < plan_count_checks(c->b); k++) {
		const struct plan_check *y = plan_get_check(c->b, k);
		int64_t tokens = plan_get_variant(c->b, y->variant)->tokens;
		uint32_t va = plan_find_variant(c->a, tokens);
		if (va == PLAN_NONE || find_check(c->a, va, plan_get_tensor(c->b, y->tensor)->name) != PLAN_NONE)
			continue;
		check_text(c->b, y, text, sizeof text);
		diff_add(c->d, area, PLAN_DIFF_ADDED, tokens, text, "", "", text, PLAN_NONE, k);
	}
}

static int dispatch_eq(const struct diff_ctx *c, uint32_t i, uint32_t j, const void *arg)
{
	char x[96], y[96];

	(void)arg;
	plan_dispatch_text(c->a, plan_get_dispatch(c->a, i), x, sizeof x);
	plan_dispatch_text(c->b, plan_get_dispatch(c->b, j), y, sizeof y);
	return strcmp(x, y) == 0;
}

static int diff_dispatch(struct diff_ctx *c)
{
	uint32_t na = plan_count_dispatch(c->a), nb = plan_count_dispatch(c->b);
	uint32_t *ma = malloc(((size_t)na + 1) * sizeof *ma), *mb = malloc(((size_t)nb + 1) * sizeof *mb);
	char text[96];
	int rc = -1;

	if (ma == NULL || mb == NULL || diff_align(c, na, nb, dispatch_eq, NULL, ma, mb) != 0)
		goto out;
	for (uint32_t i = 0; i < na; i++)
		if (ma[i] == PLAN_NONE) {
			plan_dispatch_text(c->a, plan_get_dispatch(c->a, i), text, sizeof text);
			diff_add(c->d, PLAN_DIFF_DISPATCH, PLAN_DIFF_REMOVED, 0, text, "", text, "", i,
			         PLAN_NONE);
		}
	for (uint32_t j = 0; j < nb; j++)
		if (mb[j] == PLAN_NONE) {
			plan_dispatch_text(c->b, plan_get_dispatch(c->b, j), text, sizeof text);
			diff_add(c->d, PLAN_DIFF_DISPATCH, PLAN_DIFF_ADDED, 0, text, "", "", text,
			         PLAN_NONE, j);
		}
	rc = 0;
out:
	free(ma);
	free(mb);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Implementation choices.                                                 */

/* How a choice was made: "default", "tuned" (its op timed alone) or
 * "tuned in the step" (1.9: confirmed by timing whole steps). */
static const char *choice_how(const struct plan_choice *ch)
{
	if (!(ch->flags & PLAN_CHOICE_TUNED))
		return "default";
	return ch->flags & PLAN_CHOICE_STEP ? "tuned in the step" : "tuned";
}

/* "op q.3 at 8 tokens: mma, tuned from mma, cublas": what was chosen and
 * how, never the times it was measured in. */
static void choice_text(const char *subject, const struct plan_choice *ch, char *buf, size_t len)
{
	size_t at = 0;
	int w;

	w = snprintf(buf, len, "%s: %s, %s", subject, ch->impl, choice_how(ch));
	at = w > 0 && (size_t)w < len ? (size_t)w : len;
	for (uint32_t k = 0; k < ch->ncand && at < len; k++) {
		w = snprintf(buf + at, len - at, "%s%s", k ? ", " : " from ", ch->cand[k].impl);
		at = w > 0 && (size_t)w < len - at ? at + (size_t)w : len;
	}
}

/* The candidates' names in name order: the order they were measured in is
 * no part of the plan's structure. */
static void candidates_text(const struct plan_choice *ch, char *buf, size_t len)
{
	const char *prev = NULL;
	size_t at = 0;

	snprintf(buf, len, "-");
	for (uint32_t n = 0; n < ch->ncand && at < len; n++) {
		const char *next = NULL;
		for (uint32_t k = 0; k < ch->ncand; k++) {
			const char *x = ch->cand[k].impl;
			if ((prev == NULL || strcmp(x, prev) > 0) && (next == NULL || strcmp(x, next) < 0))
				next = x;
		}
		if (next == NULL)
			break;
		int w = snprintf(buf + at, len - at, "%s%s", n ? ", " : "", next);
		at = w > 0 && (size_t)w < len - at ? at + (size_t)w : len;
		prev = next;
	}
}

static void choice_subject(const plan_t *p, const struct plan_choice *ch, char *buf, size_t len)
{
	char label[160];

	int64_t tokens = plan_get_variant(p, ch->variant)->tokens;

	snprintf(buf, len, "op %s at %lld token%s", plan_op_label(p, ch->op, label, sizeof label),
	         (long long)tokens, tokens == 1 ? "" : "s");
}

/* Choices are matched by variant (token count) and op (as the ops were
 * aligned). One whose variant or op the other plan lacks is left to that
 * removal or addition. Two choices measured the same way (alone, or in
 * the step) that went different ways between the same candidates, each
 * marked close (its runner-up within the tuner's margin), differ in field
 * "impl (close)": noise picked, and a reader may hold them equal (bcgtool
 * diff does, unless --strict). How a choice was made ("chosen") is a
 * difference; whether its runner-up was close, a timing, is not. */
static void diff_choices(struct diff_ctx *c)
{
	const int area = PLAN_DIFF_CHOICES;
	char subject[TEXT_MAX], text[TEXT_MAX], sx[TEXT_MAX], sy[TEXT_MAX];

	for (uint32_t i = 0; i < plan_count_choices(c->a); i++) {
		const struct plan_choice *x = plan_get_choice(c->a, i);
		int64_t tokens = plan_get_variant(c->a, x->variant)->tokens;
		uint32_t vb = plan_find_variant(c->b, tokens), ob = c->opmap_a[x->op];
		if (vb == PLAN_NONE || ob == PLAN_NONE)
			continue;
		const struct plan_choice *y = plan_find_choice(c->b, vb, ob);
		choice_subject(c->a, x, subject, sizeof subject);
		if (y == NULL) {
			choice_text(subject, x, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_REMOVED, tokens, text, "", text, "", i, PLAN_NONE);
			continue;
		}
		uint32_t k = (uint32_t)(y - plan_get_choice(c->b, 0));
		const unsigned both = PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE;
		candidates_text(x, sx, sizeof sx);
		candidates_text(y, sy, sizeof sy);
		int close = (x->flags & both) == both && (y->flags & both) == both &&
		            (x->flags & PLAN_CHOICE_STEP) == (y->flags & PLAN_CHOICE_STEP) &&
		            strcmp(sx, sy) == 0;
		diff_field(c, area, tokens, subject, close ? "impl (close)" : "impl", x->impl, y->impl,
		           i, k);
		diff_field(c, area, tokens, subject, "chosen", choice_how(x), choice_how(y), i, k);
		diff_field(c, area, tokens, subject, "candidates", sx, sy, i, k);
	}
	for (uint32_t k = 0; k < plan_count_choices(c->b); k++) {
		const struct plan_choice *y = plan_get_choice(c->b, k);
		int64_t tokens = plan_get_variant(c->b, y->variant)->tokens;
		uint32_t va = plan_find_variant(c->a, tokens), oa = c->opmap_b[y->op];
		if (va == PLAN_NONE || oa == PLAN_NONE || plan_find_choice(c->a, va, oa) != NULL)
			continue;
		choice_subject(c->b, y, subject, sizeof subject);
		choice_text(subject, y, text, sizeof text);
		diff_add(c->d, area, PLAN_DIFF_ADDED, tokens, text, "", "", text, PLAN_NONE, k);
	}
}

/* ---------------------------------------------------------------------- */
/* Weight sources.                                                         */

static void weight_subject(const plan_t *p, const struct plan_weight_source *w, char *buf,
                           size_t len)
{
	snprintf(buf, len, "weight %.64s at byte %llu", plan_get_tensor(p, w->tensor)->name,
	         (unsigned long long)w->offset);
}

static void weight_text(const struct plan_weight_source *w, char *buf, size_t len)
{
	snprintf(buf, len, "%.200s: %.200s %s %llu bytes", w->file, w->name,
	         plan_dtype_name(w->dtype), (unsigned long long)w->bytes);
}

static void weight_hash_text(const struct plan_weight_source *w, char *buf, size_t len)
{
	if (w->flags & PLAN_WSRC_HASHED)
		snprintf(buf, len, "xxh64 %016llx", (unsigned long long)w->hash);
	else
		snprintf(buf, len, "-");
}

static const struct plan_weight_source *weight_find(const plan_t *p, const char *tensor,
                                                    uint64_t offset, uint32_t *index)
{
	for (uint32_t k = 0; k < plan_count_weight_sources(p); k++) {
		const struct plan_weight_source *w = plan_get_weight_source(p, k);
		if (w->offset == offset && strcmp(plan_get_tensor(p, w->tensor)->name, tensor) == 0) {
			*index = k;
			return w;
		}
	}
	return NULL;
}

/* Sources are matched by the tensor's name and the block's offset in it:
 * a changed file, checkpoint name, dtype, size or content is a change of
 * that block's source. */
static void diff_weights(struct diff_ctx *c)
{
	const int area = PLAN_DIFF_WEIGHTS;
	char subject[TEXT_MAX], text[TEXT_MAX], sx[TEXT_MAX], sy[TEXT_MAX];

	for (uint32_t i = 0; i < plan_count_weight_sources(c->a); i++) {
		const struct plan_weight_source *x = plan_get_weight_source(c->a, i), *y;
		uint32_t k = PLAN_NONE;
		weight_subject(c->a, x, subject, sizeof subject);
		y = weight_find(c->b, plan_get_tensor(c->a, x->tensor)->name, x->offset, &k);
		if (y == NULL) {
			weight_text(x, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_REMOVED, 0, subject, "", text, "", i, PLAN_NONE);
			continue;
		}
		diff_field(c, area, 0, subject, "file", x->file, y->file, i, k);
		diff_field(c, area, 0, subject, "tensor", x->name, y->name, i, k);
		diff_field(c, area, 0, subject, "dtype", plan_dtype_name(x->dtype),
		           plan_dtype_name(y->dtype), i, k);
		snprintf(sx, sizeof sx, "%llu", (unsigned long long)x->bytes);
		snprintf(sy, sizeof sy, "%llu", (unsigned long long)y->bytes);
		diff_field(c, area, 0, subject, "bytes", sx, sy, i, k);
		weight_hash_text(x, sx, sizeof sx);
		weight_hash_text(y, sy, sizeof sy);
		diff_field(c, area, 0, subject, "content", sx, sy, i, k);
		diff_field(c, area, 0, subject, "slice", plan_slice_text(x, sx, sizeof sx),
		           plan_slice_text(y, sy, sizeof sy), i, k);
	}
	for (uint32_t k = 0; k < plan_count_weight_sources(c->b); k++) {
		const struct plan_weight_source *y = plan_get_weight_source(c->b, k);
		uint32_t i;
		if (weight_find(c->a, plan_get_tensor(c->b, y->tensor)->name, y->offset, &i) != NULL)
			continue;
		weight_subject(c->b, y, subject, sizeof subject);
		weight_text(y, text, sizeof text);
		diff_add(c->d, area, PLAN_DIFF_ADDED, 0, subject, "", "", text, PLAN_NONE, k);
	}
}

/* ---------------------------------------------------------------------- */

/* ---------------------------------------------------------------------- */
/* Recorded plans (1.4).                                                   */

/*
 * A kernel's base name, for telling a kernel renamed from one added: the
 * qualified name of an Itanium-mangled function without its template
 * arguments or parameter types ("_ZN4vllm6matmulILi128EEEvPf" ->
 * "vllm::matmul"), read from the <source-name>s of its <nested-name>; any
 * other name is its own base. This is not a demangler: it reads the
 * length-prefixed identifiers only, and gives up (the whole name) on
 * anything else (substitutions, operators, constructors).
 */
static void kernel_base(const char *name, char *buf, size_t len)
{
	const char *p = name;
	size_t at = 0;
	int nested;

	snprintf(buf, len, "%s", name);
	if (strncmp(p, "_Z", 2) != 0)
		return;
	p += 2;
	if (*p == 'L')
		p++;
	nested = *p == 'N';
	if (nested)
		p++;
	while (*p == 'r' || *p == 'V' || *p == 'K')   /* CV-qualifiers of a method */
		p++;
	buf[0] = '\0';
	do {
		unsigned long n = 0;
		if (*p < '1' || *p > '9') {
			snprintf(buf, len, "%s", name);
			return;
		}
		while (*p >= '0' && *p <= '9' && n < 4096)
			n = n * 10 + (unsigned long)(*p++ - '0');
		if (strnlen(p, n) < n) {
			snprintf(buf, len, "%s", name);
			return;
		}
		if (at > 0 && at + 2 < len) {
			memcpy(buf + at, "::", 2);
			at += 2;
		}
		if (at + n < len) {
			memcpy(buf + at, p, n);
			at += n;
		}
		buf[at < len ? at : len - 1] = '\0';
		p += n;
		if (*p == 'I')   /* template arguments: the base ends here */
			break;
	} while (nested && *p != 'E');
}

static const char *launch_kernel(const plan_t *p, uint32_t launch)
{
	const struct plan_launch *l = plan_get_launch(p, launch);
	const struct plan_function *f;

	if (l == NULL || l->type != PLAN_NODE_KERNEL ||
	    (f = plan_get_function(p, l->function)) == NULL)
		return "";
	return f->name;
}

/* Whether kernel names X and Y have one base. */
static int same_base(const char *x, const char *y)
{
	char bx[TEXT_MAX], by[TEXT_MAX];

	kernel_base(x, bx, sizeof bx);
	kernel_base(y, by, sizeof by);
	return strcmp(bx, by) == 0;
}

static void recorded_meta(struct diff_ctx *c)
{
	const struct plan_recording *x = plan_get_recording(c->a), *y = plan_get_recording(c->b);
	const int area = PLAN_DIFF_META;

	diff_field(c, area, 0, "", "origin", plan_origin_name(plan_get_origin(c->a)),
	           plan_origin_name(plan_get_origin(c->b)), 0, 0);
	if (x == NULL || y == NULL)
		return;
	diff_field(c, area, 0, "", "command", x->command, y->command, 0, 0);
	diff_field(c, area, 0, "", "step rule", x->step_rule, y->step_rule, 0, 0);
	if (!(c->flags & PLAN_DIFF_IGNORE_ENV))
		diff_field(c, area, 0, "", "libraries", x->libraries, y->libraries, 0, 0);
}

static void module_text(const struct plan_module *m, char *buf, size_t len)
{
	snprintf(buf, len, "module %s: %llu bytes, xxh64 0x%016llx, %s%s%s",
	         m->name[0] ? m->name : "(unnamed)", (unsigned long long)m->bytes,
	         (unsigned long long)m->hash, (m->flags & PLAN_MODULE_IMAGE) ? "kept" : "not kept",
	         m->note[0] ? ": " : "", m->note);
}

/* Modules: matched by name, then by content (a module renamed). */
static void recorded_modules(struct diff_ctx *c)
{
	const int area = PLAN_DIFF_MODULES;
	uint32_t na = plan_count_modules(c->a), nb = plan_count_modules(c->b);
	unsigned char *used = calloc((size_t)nb + 1, 1);
	char ta[TEXT_MAX], tb[TEXT_MAX], subject[TEXT_MAX];

	if (used == NULL) {
		c->d->failed = 1;
		return;
	}
	for (uint32_t i = 0; i < na; i++) {
		const struct plan_module *x = plan_get_module(c->a, i);
		uint32_t k = PLAN_NONE;
		for (uint32_t j = 0; j < nb && k == PLAN_NONE && x->name[0]; j++)
			if (!used[j] && strcmp(plan_get_module(c->b, j)->name, x->name) == 0)
				k = j;
		if (k != PLAN_NONE) {
			const struct plan_module *y = plan_get_module(c->b, k);
			used[k] = 1;
			snprintf(subject, sizeof subject, "module %s", x->name);
			diff_field_hex(c, area, 0, subject, "xxh64", x->hash, y->hash, i, k);
			diff_field_u64(c, area, 0, subject, "bytes", x->bytes, y->bytes, i, k);
			diff_field(c, area, 0, subject, "kept",
			           (x->flags & PLAN_MODULE_IMAGE) ? "yes" : "no",
			           (y->flags & PLAN_MODULE_IMAGE) ? "yes" : "no", i, k);
			continue;
		}
		for (uint32_t j = 0; j < nb && k == PLAN_NONE; j++) {
			const struct plan_module *y = plan_get_module(c->b, j);
			if (!used[j] && y->hash == x->hash && y->bytes == x->bytes)
				k = j;
		}
		module_text(x, ta, sizeof ta);
		if (k != PLAN_NONE) {
			const struct plan_module *y = plan_get_module(c->b, k);
			used[k] = 1;
			module_text(y, tb, sizeof tb);
			/* Two unnamed modules of one content are the same module. */
			if (strcmp(x->name, y->name) != 0)
				diff_add(c->d, area, PLAN_DIFF_RENAMED, 0, ta, "", ta, tb, i, k);
			else
				diff_field(c, area, 0, ta, "kept",
				           (x->flags & PLAN_MODULE_IMAGE) ? "yes" : "no",
				           (y->flags & PLAN_MODULE_IMAGE) ? "yes" : "no", i, k);
		} else {
			diff_add(c->d, area, PLAN_DIFF_REMOVED, 0, ta, "", ta, "", i, PLAN_NONE);
		}
	}
	for (uint32_t j = 0; j < nb; j++)
		if (!used[j]) {
			module_text(plan_get_module(c->b, j), tb, sizeof tb);
			diff_add(c->d, area, PLAN_DIFF_ADDED, 0, tb, "", "", tb, PLAN_NONE, j);
		}
	free(used);
}

/* USED[f]: some launch of P runs function f. */
static unsigned char *functions_launched(const plan_t *p)
{
	unsigned char *used = calloc((size_t)plan_count_functions(p) + 1, 1);

	if (used == NULL)
		return NULL;
	for (uint32_t i = 0; i < plan_count_launches(p); i++) {
		const struct plan_launch *l = plan_get_launch(p, i);
		if (l->type == PLAN_NODE_KERNEL && l->function < plan_count_functions(p))
			used[l->function] = 1;
	}
	return used;
}

/* Whether a launched function of P (USED) is named NAME. */
static int launches_kernel(const plan_t *p, const unsigned char *used, const char *name)
{
	for (uint32_t f = 0; f < plan_count_functions(p); f++)
		if (used[f] && strcmp(plan_get_function(p, f)->name, name) == 0)
			return 1;
	return 0;
}

/* The kernels each plan launches, by function: the ones only one plan
 * launches, a kernel of A and one of B with one base name being the same
 * kernel renamed (its template arguments changed). */
static void recorded_kernels(struct diff_ctx *c)
{
	const int area = PLAN_DIFF_KERNELS;
	uint32_t na = plan_count_functions(c->a), nb = plan_count_functions(c->b);
	unsigned char *gone = calloc((size_t)na + 1, 1), *new = calloc((size_t)nb + 1, 1);
	unsigned char *ua = functions_launched(c->a), *ub = functions_launched(c->b);
	char subject[TEXT_MAX];

	if (gone == NULL || new == NULL || ua == NULL || ub == NULL) {
		c->d->failed = 1;
		goto out;
	}
	for (uint32_t i = 0; i < na; i++) {
		const char *x = plan_get_function(c->a, i)->name;
		gone[i] = ua[i] && !launches_kernel(c->b, ub, x);
		for (uint32_t k = 0; k < i && gone[i]; k++)   /* one entry a name */
			if (strcmp(plan_get_function(c->a, k)->name, x) == 0)
				gone[i] = 0;
	}
	for (uint32_t j = 0; j < nb; j++) {
		const char *y = plan_get_function(c->b, j)->name;
		new[j] = ub[j] && !launches_kernel(c->a, ua, y);
		for (uint32_t k = 0; k < j && new[j]; k++)
			if (strcmp(plan_get_function(c->b, k)->name, y) == 0)
				new[j] = 0;
	}
	for (uint32_t i = 0; i < na; i++) {
		const char *x = plan_get_function(c->a, i)->name;
		if (!gone[i])
			continue;
		snprintf(subject, sizeof subject, "kernel %s", x);
		for (uint32_t j = 0; j < nb; j++) {
			const char *y = plan_get_function(c->b, j)->name;
			if (new[j] && same_base(x, y)) {
				diff_add(c->d, area, PLAN_DIFF_RENAMED, 0, subject, "", x, y, i, j);
				gone[i] = new[j] = 0;
				break;
			}
		}
		if (gone[i])
			diff_add(c->d, area, PLAN_DIFF_REMOVED, 0, subject, "", x, "", i, PLAN_NONE);
	}
	for (uint32_t j = 0; j < nb; j++)
		if (new[j]) {
			const char *y = plan_get_function(c->b, j)->name;
			snprintf(subject, sizeof subject, "kernel %s", y);
			diff_add(c->d, area, PLAN_DIFF_ADDED, 0, subject, "", "", y, PLAN_NONE, j);
		}
out:
	free(gone);
	free(new);
	free(ua);
	free(ub);
}

/* Variants of two recordings: matched by label (the K-th of a label in A
 * with the K-th in B), then the rest by number. */
static void recorded_pair_variants(const struct diff_ctx *c, uint32_t *ma, uint32_t *mb)
{
	uint32_t na = plan_count_variants(c->a), nb = plan_count_variants(c->b);

	for (uint32_t i = 0; i < na; i++)
		ma[i] = PLAN_NONE;
	for (uint32_t j = 0; j < nb; j++)
		mb[j] = PLAN_NONE;
	for (uint32_t i = 0; i < na; i++) {
		const char *l = plan_get_variant(c->a, i)->label;
		if (l[0] == '\0')
			continue;
		for (uint32_t j = 0; j < nb; j++)
			if (mb[j] == PLAN_NONE && strcmp(plan_get_variant(c->b, j)->label, l) == 0) {
				ma[i] = j;
				mb[j] = i;
				break;
			}
	}
	for (uint32_t i = 0; i < na; i++) {
		uint32_t j;
		if (ma[i] != PLAN_NONE)
			continue;
		j = plan_find_variant(c->b, plan_get_variant(c->a, i)->tokens);
		if (j != PLAN_NONE && mb[j] == PLAN_NONE &&
		    (plan_get_variant(c->a, i)->label[0] == '\0' ||
		     plan_get_variant(c->b, j)->label[0] == '\0' ||
		     strcmp(plan_get_variant(c->a, i)->label, plan_get_variant(c->b, j)->label) == 0)) {
			ma[i] = j;
			mb[j] = i;
		}
	}
}

static void recorded_variant_text(const plan_t *p, uint32_t v, char *buf, size_t len)
{
	const struct plan_variant *x = plan_get_variant(p, v);
	uint32_t nseg = 0, nbp = 0;

	for (uint32_t k = 0; k < x->nitems; k++) {
		nseg += x->items[k].kind == PLAN_ITEM_SEGMENT;
		nbp += x->items[k].kind == PLAN_ITEM_BREAK;
	}
	snprintf(buf, len, "variant %lld \"%s\": %u segment%s, %u break%s, seen %llu",
	         (long long)x->tokens, x->label, nseg, nseg == 1 ? "" : "s", nbp,
	         nbp == 1 ? "" : "s", (unsigned long long)x->seen);
}

/* An item's signature: a segment by its nodes' types and kernel base
 * names, a breakpoint by its launches' (so a kernel renamed is the same
 * item). */
static uint64_t item_signature(const plan_t *p, const struct plan_item *it)
{
	uint64_t h = plan_hash64(it->kind == PLAN_ITEM_SEGMENT ? "S" : "B", 1, PLAN_HASH64_INIT);
	char base[TEXT_MAX];

	if (it->kind == PLAN_ITEM_SEGMENT) {
		const struct plan_segment *s = plan_get_segment(p, it->index);
		for (uint32_t k = 0; k < s->nnodes; k++) {
			kernel_base(s->nodes[k].kernel, base, sizeof base);
			h = plan_hash64(&s->nodes[k].type, sizeof s->nodes[k].type, h);
			h = plan_hash64(base, strlen(base) + 1, h);
		}
	} else {
		const struct plan_breakpoint *b = plan_get_breakpoint(p, it->index);
		for (uint32_t k = 0; k < b->launch_count; k++) {
			const struct plan_launch *l = plan_get_launch(p, b->launch_first + k);
			kernel_base(launch_kernel(p, b->launch_first + k), base, sizeof base);
			h = plan_hash64(&l->type, sizeof l->type, h);
			h = plan_hash64(base, strlen(base) + 1, h);
		}
	}
	return h;
}

struct sig_arg {
	const uint64_t *sa, *sb;
};

static int sig_eq(const struct diff_ctx *c, uint32_t i, uint32_t j, const void *arg)
{
	const struct sig_arg *s = arg;

	(void)c;
	return s->sa[i] == s->sb[j];
}

static void recorded_item_text(const plan_t *p, const struct plan_variant *v, uint32_t k,
                               char *buf, size_t len)
{
	const struct plan_item *it = &v->items[k];
	char t[TEXT_MAX];

	if (it->kind == PLAN_ITEM_SEGMENT) {
		const struct plan_segment *s = plan_get_segment(p, it->index);
		uint32_t nk = 0;
		for (uint32_t n = 0; n < s->nnodes; n++)
			nk += s->nodes[n].type == PLAN_NODE_KERNEL;
		snprintf(buf, len, "item %u: segment %u, %u nodes (%u kernels)", k, it->index,
		         s->nnodes, nk);
	} else {
		const struct plan_breakpoint *b = plan_get_breakpoint(p, it->index);
		plan_launch_text(p, b->launch_first, NULL, t, sizeof t);
		snprintf(buf, len, "item %u: break %.64s, %u launch%s: %.300s%s", k, b->name,
		         b->launch_count, b->launch_count == 1 ? "" : "es", t,
		         b->launch_count > 1 ? ", ..." : "");
	}
}

struct node_arg {
	const struct plan_segment *x, *y;
};

static int rnode_eq(const struct diff_ctx *c, uint32_t i, uint32_t j, const void *arg)
{
	const struct node_arg *n = arg;

	(void)c;
	return n->x->nodes[i].type == n->y->nodes[j].type &&
	       same_base(n->x->nodes[i].kernel, n->y->nodes[j].kernel);
}

static void shape_text(const plan_t *p, uint32_t launch, char *buf, size_t len)
{
	const struct plan_launch *l = plan_get_launch(p, launch);

	if (l == NULL || l->type != PLAN_NODE_KERNEL) {
		plan_launch_text(p, launch, "", buf, len);
		return;
	}
	snprintf(buf, len, "<<<(%u,%u,%u), (%u,%u,%u), %u>>> cluster (%u,%u,%u)%s", l->grid[0],
	         l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->shmem,
	         l->cluster[0], l->cluster[1], l->cluster[2],
	         (l->flags & PLAN_LAUNCH_PDL) ? " pdl" : "");
}

/* Two segments taken for the same graph: their nodes aligned by kernel
 * base name; kernels added, removed, renamed, and launch shapes changed. */
static int recorded_nodes(struct diff_ctx *c, int64_t tokens, const char *subject,
                          const struct plan_segment *x, const struct plan_segment *y,
                          uint32_t ia, uint32_t ib)
{
	const int area = PLAN_DIFF_ITEMS;
	uint32_t *ma = malloc(((size_t)x->nnodes + 1) * sizeof *ma);
	uint32_t *mb = malloc(((size_t)y->nnodes + 1) * sizeof *mb);
	struct node_arg arg = { x, y };
	char field[64], ta[TEXT_MAX], tb[TEXT_MAX];

	if (ma == NULL || mb == NULL || diff_align(c, x->nnodes, y->nnodes, rnode_eq, &arg, ma, mb)) {
		free(ma);
		free(mb);
		return -1;
	}
	for (uint32_t i = 0; i < x->nnodes; i++) {
		const struct plan_node *n = &x->nodes[i];
		if (ma[i] == PLAN_NONE) {
			snprintf(field, sizeof field, "node %u", i);
			plan_launch_text(c->a, n->launch, NULL, ta, sizeof ta);
			diff_add(c->d, area, PLAN_DIFF_CHANGED, tokens, subject, field,
			         n->launch != PLAN_NONE ? ta : plan_node_type_name(n->type), "", ia, ib);
			continue;
		}
		const struct plan_node *m = &y->nodes[ma[i]];
		snprintf(field, sizeof field, "node %u kernel", i);
		if (strcmp(n->kernel, m->kernel) != 0)
			diff_add(c->d, area, PLAN_DIFF_RENAMED, tokens, subject, field, n->kernel,
			         m->kernel, ia, ib);
		if (n->launch != PLAN_NONE && m->launch != PLAN_NONE) {
			shape_text(c->a, n->launch, ta, sizeof ta);
			shape_text(c->b, m->launch, tb, sizeof tb);
			snprintf(field, sizeof field, "node %u launch", i);
			diff_field(c, area, tokens, subject, field, ta, tb, ia, ib);
		}
	}
	for (uint32_t j = 0; j < y->nnodes; j++) {
		const struct plan_node *m = &y->nodes[j];
		if (mb[j] != PLAN_NONE)
			continue;
		snprintf(field, sizeof field, "node %u", j);
		plan_launch_text(c->b, m->launch, NULL, tb, sizeof tb);
		diff_add(c->d, area, PLAN_DIFF_CHANGED, tokens, subject, field, "",
		         m->launch != PLAN_NONE ? tb : plan_node_type_name(m->type), ia, ib);
	}
	free(ma);
	free(mb);
	return 0;
}

/* The position of item K of V among its segments: the number of
 * segments before it. */
static uint32_t segments_before(const struct plan_variant *v, uint32_t k)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < k; i++)
		n += v->items[i].kind == PLAN_ITEM_SEGMENT;
	return n;
}

/*
 * One matched pair of variants. The segments are aligned by signature
 * (those that do not align are paired in order and compared node by
 * node); a breakpoint is in place when B has one of its signature after
 * the segment matched with the one A's follows, moved when B has one
 * elsewhere, else removed (or added). TOKENS of the entries: A's
 * variant's number.
 */
static int recorded_items(struct diff_ctx *c, uint32_t iva, uint32_t ivb)
{
	const struct plan_variant *va = plan_get_variant(c->a, iva), *vb = plan_get_variant(c->b, ivb);
	const int area = PLAN_DIFF_ITEMS;
	uint32_t na = va->nitems, nb = vb->nitems, nsa = 0, nsb = 0;
	uint64_t *sa = malloc(((size_t)na + 1) * sizeof *sa), *sb = malloc(((size_t)nb + 1) * sizeof *sb);
	uint32_t *ia = malloc(((size_t)na + 1) * sizeof *ia), *ib = malloc(((size_t)nb + 1) * sizeof *ib);
	uint32_t *ma = malloc(((size_t)na + 1) * sizeof *ma), *mb = malloc(((size_t)nb + 1) * sizeof *mb);
	uint32_t *pa = malloc(((size_t)na + 1) * sizeof *pa), *pb = malloc(((size_t)nb + 1) * sizeof *pb);
	int64_t tokens = va->tokens;
	char ta[TEXT_MAX], tb[TEXT_MAX], tc[TEXT_MAX];
	int err = -1;

	if (sa == NULL || sb == NULL || ia == NULL || ib == NULL || ma == NULL || mb == NULL ||
	    pa == NULL || pb == NULL)
		goto out;
	/* Segment signatures, in item order: SA[K] of A's K-th segment, item IA[K]. */
	for (uint32_t i = 0; i < na; i++)
		if (va->items[i].kind == PLAN_ITEM_SEGMENT) {
			ia[nsa] = i;
			sa[nsa++] = item_signature(c->a, &va->items[i]);
		}
	for (uint32_t j = 0; j < nb; j++)
		if (vb->items[j].kind == PLAN_ITEM_SEGMENT) {
			ib[nsb] = j;
			sb[nsb++] = item_signature(c->b, &vb->items[j]);
		}
	{
		struct sig_arg arg = { sa, sb };
		if (diff_align(c, nsa, nsb, sig_eq, &arg, ma, mb) != 0)
			goto out;
	}
	/* Unaligned segments: the K-th such of A with the K-th of B. */
	for (uint32_t i = 0, j = 0; i < nsa; i++) {
		if (ma[i] != PLAN_NONE)
			continue;
		while (j < nsb && mb[j] != PLAN_NONE)
			j++;
		if (j == nsb)
			break;
		ma[i] = j | 0x80000000u;
		mb[j] = i | 0x80000000u;
		j++;
	}
	/* Item pairs: PA[i] is B's item for A's item i, or PLAN_NONE. */
	for (uint32_t i = 0; i < na; i++)
		pa[i] = PLAN_NONE;
	for (uint32_t j = 0; j < nb; j++)
		pb[j] = PLAN_NONE;
	for (uint32_t k = 0; k < nsa; k++)
		if (ma[k] != PLAN_NONE) {
			pa[ia[k]] = ib[ma[k] & 0x7FFFFFFFu];
			pb[ib[ma[k] & 0x7FFFFFFFu]] = ia[k];
		}
	/* Breakpoints in place: same signature, after matched segments. */
	for (uint32_t i = 0; i < na; i++) {
		uint32_t before, want;
		uint64_t sig;
		if (va->items[i].kind != PLAN_ITEM_BREAK)
			continue;
		sig = item_signature(c->a, &va->items[i]);
		before = segments_before(va, i);
		/* the B segment B's break must follow: the match of A's segment */
		want = before == 0 ? 0 : ma[before - 1] == PLAN_NONE ? PLAN_NONE :
		       (ma[before - 1] & 0x7FFFFFFFu) + 1;
		for (uint32_t j = 0; j < nb && want != PLAN_NONE; j++)
			if (pb[j] == PLAN_NONE && vb->items[j].kind == PLAN_ITEM_BREAK &&
			    segments_before(vb, j) == want && item_signature(c->b, &vb->items[j]) == sig) {
				pa[i] = j;
				pb[j] = i;
				break;
			}
	}
	/* The rest of A's items, in order. */
	for (uint32_t i = 0; i < na; i++) {
		const struct plan_item *x = &va->items[i];
		uint32_t k = pa[i];
		uint32_t before = c->d->count;

		recorded_item_text(c->a, va, i, ta, sizeof ta);
		if (k == PLAN_NONE && x->kind == PLAN_ITEM_BREAK) {
			uint64_t sig = item_signature(c->a, x);
			for (uint32_t j = 0; j < nb; j++)
				if (pb[j] == PLAN_NONE && vb->items[j].kind == PLAN_ITEM_BREAK &&
				    item_signature(c->b, &vb->items[j]) == sig) {
					recorded_item_text(c->b, vb, j, tb, sizeof tb);
					diff_add(c->d, area, PLAN_DIFF_MOVED, tokens, ta, "", ta, tb, i, j);
					pb[j] = i;
					k = j;
					break;
				}
			if (k != PLAN_NONE)
				continue;
		}
		if (k == PLAN_NONE) {
			diff_add(c->d, area, PLAN_DIFF_REMOVED, tokens, ta, "", ta, "", i, PLAN_NONE);
			continue;
		}
		const struct plan_item *y = &vb->items[k];
		if (x->kind == PLAN_ITEM_SEGMENT) {
			if (recorded_nodes(c, tokens, ta, plan_get_segment(c->a, x->index),
			                   plan_get_segment(c->b, y->index), i, k) != 0)
				goto out;
		} else {
			const struct plan_breakpoint *bx = plan_get_breakpoint(c->a, x->index);
			const struct plan_breakpoint *by = plan_get_breakpoint(c->b, y->index);
			for (uint32_t l = 0; l < bx->launch_count && l < by->launch_count; l++) {
				char field[48];
				snprintf(field, sizeof field, "launch %u", l);
				diff_field(c, area, tokens, ta, field,
				           plan_launch_text(c->a, bx->launch_first + l, NULL, tc, sizeof tc),
				           plan_launch_text(c->b, by->launch_first + l, NULL, tb, sizeof tb),
				           i, k);
			}
		}
		if (c->d->count == before)
			diff_add(c->d, area, PLAN_DIFF_SAME, tokens, ta, "", ta, ta, i, k);
	}
	for (uint32_t j = 0; j < nb; j++)
		if (pb[j] == PLAN_NONE) {
			recorded_item_text(c->b, vb, j, tb, sizeof tb);
			diff_add(c->d, area, PLAN_DIFF_ADDED, tokens, tb, "", "", tb, PLAN_NONE, j);
		}
	err = 0;
out:
	free(sa);
	free(sb);
	free(ia);
	free(ib);
	free(ma);
	free(mb);
	free(pa);
	free(pb);
	return err;
}

static int diff_recorded(struct diff_ctx *c)
{
	uint32_t na = plan_count_variants(c->a), nb = plan_count_variants(c->b);
	uint32_t *ma = malloc(((size_t)na + 1) * sizeof *ma), *mb = malloc(((size_t)nb + 1) * sizeof *mb);
	const int area = PLAN_DIFF_VARIANTS;
	char text[TEXT_MAX], subject[TEXT_MAX];
	int err = -1;

	recorded_meta(c);
	if (ma == NULL || mb == NULL)
		goto out;
	recorded_modules(c);
	recorded_kernels(c);
	recorded_pair_variants(c, ma, mb);
	for (uint32_t i = 0; i < na; i++) {
		const struct plan_variant *x = plan_get_variant(c->a, i);
		if (ma[i] == PLAN_NONE) {
			recorded_variant_text(c->a, i, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_REMOVED, x->tokens, text, "", text, "", i, PLAN_NONE);
			continue;
		}
		const struct plan_variant *y = plan_get_variant(c->b, ma[i]);
		uint32_t sx = 0, sy = 0, bx = 0, by = 0;
		for (uint32_t k = 0; k < x->nitems; k++) {
			sx += x->items[k].kind == PLAN_ITEM_SEGMENT;
			bx += x->items[k].kind == PLAN_ITEM_BREAK;
		}
		for (uint32_t k = 0; k < y->nitems; k++) {
			sy += y->items[k].kind == PLAN_ITEM_SEGMENT;
			by += y->items[k].kind == PLAN_ITEM_BREAK;
		}
		snprintf(subject, sizeof subject, "variant %lld \"%s\"", (long long)x->tokens, x->label);
		diff_field_i64(c, area, x->tokens, subject, "number", x->tokens, y->tokens, i, ma[i]);
		diff_field(c, area, x->tokens, subject, "label", x->label, y->label, i, ma[i]);
		diff_field_u64(c, area, x->tokens, subject, "segments", sx, sy, i, ma[i]);
		diff_field_u64(c, area, x->tokens, subject, "breaks", bx, by, i, ma[i]);
	}
	for (uint32_t j = 0; j < nb; j++)
		if (mb[j] == PLAN_NONE) {
			recorded_variant_text(c->b, j, text, sizeof text);
			diff_add(c->d, area, PLAN_DIFF_ADDED, plan_get_variant(c->b, j)->tokens, text, "",
			         "", text, PLAN_NONE, j);
		}
	for (uint32_t i = 0; i < na; i++)
		if (ma[i] != PLAN_NONE && recorded_items(c, i, ma[i]) != 0)
			goto out;
	err = 0;
out:
	free(ma);
	free(mb);
	return err;
}

/* The differences of two plans of one rank each, appended to D; -1 when
 * out of memory. */
static int diff_one(struct plan_diff *d, const plan_t *a, const plan_t *b, unsigned flags)
{
	struct diff_ctx c = { .d = d, .a = a, .b = b, .flags = flags };
	int err = -1;

	c.opmap_a = malloc(((size_t)plan_count_ops(a) + 1) * sizeof *c.opmap_a);
	c.opmap_b = malloc(((size_t)plan_count_ops(b) + 1) * sizeof *c.opmap_b);
	c.op_moved = calloc((size_t)plan_count_ops(a) + 1, 1);
	if (c.opmap_a == NULL || c.opmap_b == NULL || c.op_moved == NULL)
		goto out;
	if (plan_get_origin(a) == PLAN_ORIGIN_RECORDED || plan_get_origin(b) == PLAN_ORIGIN_RECORDED) {
		/* Recordings: what they ran, not a program. A recording and a
		 * script plan differ in their origin, and in all they hold. */
		diff_meta(&c);
		if (diff_recorded(&c) != 0 || d->failed)
			goto out;
		err = 0;
		goto out;
	}
	diff_meta(&c);
	diff_layout(&c);
	diff_dims(&c);
	diff_vars(&c);
	diff_tensors(&c);
	if (diff_ops(&c) != 0)
		goto out;
	diff_variants(&c);
	for (uint32_t i = 0; i < plan_count_variants(a); i++) {
		uint32_t k = plan_find_variant(b, plan_get_variant(a, i)->tokens);
		if (k != PLAN_NONE && diff_items(&c, i, k) != 0)
			goto out;
	}
	diff_checks(&c);
	if (diff_dispatch(&c) != 0)
		goto out;
	diff_choices(&c);
	diff_weights(&c);
	if (!d->failed)
		err = 0;
out:
	free(c.opmap_a);
	free(c.opmap_b);
	free(c.op_moved);
	return err;
}

/* Entries FROM .. the end name rank R: "rank R" before the subject, and
 * before a whole record's texts, which is what a reader sees of them. */
static int diff_name_rank(struct plan_diff *d, uint32_t from, uint32_t r)
{
	char prefix[32];
	size_t plen = (size_t)snprintf(prefix, sizeof prefix, "rank %u", r);

	for (uint32_t i = from; i < d->n; i++) {
		struct plan_diff_entry *e = &d->e[i];
		const char **texts[3] = { &e->subject, &e->a, &e->b };
		for (int k = 0; k < 3; k++) {
			const char *t = *texts[k];
			char *n;
			/* a field's values stay as they are; an absent text too */
			if (k > 0 && (e->field[0] != '\0' || t[0] == '\0'))
				continue;
			if ((n = malloc(plen + 2 + strlen(t) + 1)) == NULL)
				return -1;
			if (t[0] != '\0')
				sprintf(n, "%s: %s", prefix, t);
			else
				memcpy(n, prefix, plen + 1);
			free((char *)t);
			*texts[k] = n;
		}
	}
	return 0;
}

/*
 * Tensor-parallel plans (1.5): two plans of different worlds differ in
 * their world, and in their metadata; nothing else is compared, each rank
 * of one being another share of the model than any of the other's. Two of
 * one world are compared rank by rank, each entry naming its rank.
 */
struct plan_diff *plan_diff(const plan_t *a, const plan_t *b, unsigned flags)
{
	struct plan_diff *d = calloc(1, sizeof *d);
	uint32_t wa = plan_get_dist(a)->world, wb = plan_get_dist(b)->world;

	if (d == NULL)
		return NULL;
	if (wa == 1 && wb == 1) {
		if (diff_one(d, a, b, flags) != 0)
			goto fail;
		return d;
	}
	if (wa != wb) {
		struct diff_ctx c = { .d = d, .a = a, .b = b, .flags = flags };
		diff_field_u64(&c, PLAN_DIFF_META, 0, "", "world", wa, wb, 0, 0);
		diff_meta(&c);
		if (d->failed)
			goto fail;
		return d;
	}
	for (uint32_t r = 0; r < wa; r++) {
		const plan_t *x = plan_get_rank(a, r), *y = plan_get_rank(b, r);
		uint32_t from = d->n;
		char name[32];
		snprintf(name, sizeof name, "rank %u", r);
		/* A plan not validated may lack a rank: the rank is the
		 * difference. */
		if (x == NULL || y == NULL) {
			if (x != y)
				diff_add(d, PLAN_DIFF_META, x ? PLAN_DIFF_REMOVED : PLAN_DIFF_ADDED, 0, name,
				         "", x ? name : "", y ? name : "", 0, 0);
			continue;
		}
		if (diff_one(d, x, y, flags) != 0 || diff_name_rank(d, from, r) != 0)
			goto fail;
	}
	if (d->failed)
		goto fail;
	return d;
fail:
	plan_diff_free(d);
	return NULL;
}

void plan_diff_free(struct plan_diff *d)
{
	if (d == NULL)
		return;
	for (uint32_t i = 0; i < d->n; i++) {
		free((char *)d->e[i].subject);
		free((char *)d->e[i].field);
		free((char *)d->e[i].a);
		free((char *)d->e[i].b);
	}
	free(d->e);
	free(d);
}

uint32_t plan_diff_count(const struct plan_diff *d)
{
	return d != NULL ? d->count : 0;
}

uint32_t plan_diff_length(const struct plan_diff *d)
{
	return d != NULL ? d->n : 0;
}

const struct plan_diff_entry *plan_diff_get(const struct plan_diff *d, uint32_t i)
{
	return d != NULL && i < d->n ? &d->e[i] : NULL;
}

const char *plan_diff_area_name(int area)
{
	static const char *const names[] = {
		[PLAN_DIFF_META] = "meta", [PLAN_DIFF_LAYOUT] = "layout",
		[PLAN_DIFF_DIMS] = "dims", [PLAN_DIFF_VARS] = "vars",
		[PLAN_DIFF_TENSORS] = "tensors", [PLAN_DIFF_OPS] = "ops",
		[PLAN_DIFF_VARIANTS] = "variants", [PLAN_DIFF_ITEMS] = "items",
		[PLAN_DIFF_CHECKS] = "checks", [PLAN_DIFF_DISPATCH] = "dispatch",
		[PLAN_DIFF_CHOICES] = "choices",
		[PLAN_DIFF_WEIGHTS] = "weights",
		[PLAN_DIFF_MODULES] = "modules", [PLAN_DIFF_KERNELS] = "kernels",
	};
	return area > 0 && (size_t)area < sizeof names / sizeof names[0] && names[area] ? names[area] : "?";
}

const char *plan_diff_change_name(int change)
{
	static const char *const names[] = {
		[PLAN_DIFF_SAME] = "same", [PLAN_DIFF_ADDED] = "added",
		[PLAN_DIFF_REMOVED] = "removed", [PLAN_DIFF_CHANGED] = "changed",
		[PLAN_DIFF_RENAMED] = "renamed", [PLAN_DIFF_MOVED] = "moved",
	};
	return change >= 0 && (size_t)change < sizeof names / sizeof names[0] && names[change] ? names[change] : "?";
}
