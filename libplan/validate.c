/*
 * validate.c - plan_validate(): the semantic rules a plan must follow
 * beyond the file format's structure (plan-format.md, "Semantic rules").
 *
 * The reader runs it on every plan it builds and the writer on every plan
 * it writes, so a plan file always holds a plan that passes it. Every rule
 * costs O(n log n) at most: a crafted file of millions of records must not
 * make the reader spin.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define AT(vec, type, i) (&((const type *)(vec).data)[i])
#define FAIL(...) plan__fail(diag, PLAN_ERR_INVALID, __VA_ARGS__)
#define NOMEM() plan__fail(diag, PLAN_ERR_NOMEM, "out of memory validating the plan")

/* ---------------------------------------------------------------------- */
/* Unique names.                                                           */

struct named {
	const char *name;
	uint32_t    index;
};

static int by_name(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* NAMES[i] is the name of record i of SECTION; each must be non-empty and
 * unlike every other. */
static int check_names(const char *const *names, uint32_t n, const char *section,
                       const char *what, struct plan_diag *diag)
{
	struct named *v;
	int err = PLAN_OK;

	for (uint32_t i = 0; i < n; i++)
		if (names[i][0] == '\0')
			return FAIL("section %s: %s %u has an empty name", section, what, i);
	if (n < 2)
		return PLAN_OK;
	if ((v = malloc((size_t)n * sizeof *v)) == NULL)
		return NOMEM();
	for (uint32_t i = 0; i < n; i++) {
		v[i].name = names[i];
		v[i].index = i;
	}
	qsort(v, n, sizeof *v, by_name);
	for (uint32_t i = 1; i < n; i++)
		if (strcmp(v[i - 1].name, v[i].name) == 0) {
			err = FAIL("section %s: %ss %u and %u are both named '%.64s'", section,
			           what, v[i - 1].index, v[i].index, v[i].name);
			break;
		}
	free(v);
	return err;
}

/* Collects the name pointers of a vector of records whose first member is
 * the name, then checks them. */
static int check_vec_names(const struct plan_vec *vec, size_t size, size_t name_at,
                           const char *section, const char *what, struct plan_diag *diag)
{
	const char **names;
	int err;

	if (vec->count == 0)
		return PLAN_OK;
	if ((names = malloc((size_t)vec->count * sizeof *names)) == NULL)
		return NOMEM();
	for (uint32_t i = 0; i < vec->count; i++) {
		const unsigned char *rec = (const unsigned char *)vec->data + (size_t)i * size;
		memcpy(&names[i], rec + name_at, sizeof names[i]);
	}
	err = check_names(names, vec->count, section, what, diag);
	free(names);
	return err;
}

/* ---------------------------------------------------------------------- */
/* The program: meta, layout, dims, vars, tensors, ops.                    */

static int validate_meta(const plan_t *plan, struct plan_diag *diag)
{
	const struct plan_layout *l = &plan->layout;
	uint32_t a = l->alignment;

	if (plan->meta.backend != 0 && plan->meta.backend != PLAN_BACKEND_HOST &&
	    plan->meta.backend != PLAN_BACKEND_CUDA)
		return FAIL("section META: unknown backend %d", plan->meta.backend);
	if (a == 0 || (a & (a - 1)) != 0)
		return FAIL("section META: alignment %u is not a power of two", a);
	if (plan->meta.features & ~(uint32_t)PLAN_FEATURE_PDL)
		return FAIL("section META: unknown features 0x%x", plan->meta.features);
	if (plan->stats.verify_exact > 1)
		return FAIL("section STAT: verify_exact is %u, not 0 or 1", plan->stats.verify_exact);
	return PLAN_OK;
}

static int validate_dims(const plan_t *plan, struct plan_diag *diag)
{
	uint32_t token = PLAN_NONE;

	for (uint32_t i = 0; i < plan->dims.count; i++) {
		const struct plan_dim *d = AT(plan->dims, struct plan_dim, i);
		if (d->flags & ~(uint32_t)PLAN_DIM_TOKENS)
			return FAIL("section DIMS: dim %u has unknown flags 0x%x", i, d->flags);
		if (d->flags & PLAN_DIM_TOKENS) {
			if (token != PLAN_NONE)
				return FAIL("section DIMS: dims %u and %u are both the token dim", token, i);
			token = i;
			if (d->value < 1)
				return FAIL("section DIMS: token dim %u has value %lld, below 1", i,
				            (long long)d->value);
		} else if (d->value < 0) {
			return FAIL("section DIMS: dim %u has negative value %lld", i, (long long)d->value);
		}
	}
	return check_vec_names(&plan->dims, sizeof(struct plan_dim),
	                       offsetof(struct plan_dim, name), "DIMS", "dim", diag);
}

/* Whether [off, off + len) lies inside the arena. */
static int in_arena(const plan_t *plan, uint64_t off, uint64_t len)
{
	return off <= plan->layout.arena_bytes && len <= plan->layout.arena_bytes - off;
}

static int validate_vars(const plan_t *plan, struct plan_diag *diag)
{
	for (uint32_t i = 0; i < plan->vars.count; i++) {
		const struct plan_var *v = AT(plan->vars, struct plan_var, i);
		if (v->step < 0 || v->limit < v->start)
			return FAIL("section VARS: var %u (%.64s) needs step >= 0 and limit >= start",
			            i, v->name);
		if (v->offset % 4 != 0 || !in_arena(plan, v->offset, 4))
			return FAIL("section VARS: var %u (%.64s): mirror at offset %llu is not a "
			            "4-byte slot inside the %llu-byte arena", i, v->name,
			            (unsigned long long)v->offset,
			            (unsigned long long)plan->layout.arena_bytes);
	}
	return check_vec_names(&plan->vars, sizeof(struct plan_var),
	                       offsetof(struct plan_var, name), "VARS", "var", diag);
}

/*
 * Tensor I's split (1.5): along an axis of the tensor other than the
 * token dim, 1 to PLAN_MAX_SPLIT_BLOCKS blocks of whole units, each share
 * [start, start + len) inside its block, and the tensor's size on the
 * axis the sum of the shares.
 */
static int validate_split(const plan_t *plan, uint32_t i, struct plan_diag *diag)
{
	const struct plan_tensor *t = AT(plan->tensors, struct plan_tensor, i);
	const struct plan_split *sp = &t->split;
	const struct plan_axis *a;
	int64_t sum = 0, size;

	if (sp->nblocks == 0)
		return PLAN_OK;
	if (sp->nblocks > PLAN_MAX_SPLIT_BLOCKS)
		return FAIL("section TENS: tensor %u (%.64s): a split of %u blocks, not 1..%d", i,
		            t->name, sp->nblocks, PLAN_MAX_SPLIT_BLOCKS);
	if (sp->axis >= t->rank)
		return FAIL("section TENS: tensor %u (%.64s): split axis %u of a tensor of rank %u",
		            i, t->name, sp->axis, t->rank);
	a = &t->shape[sp->axis];
	if (a->dim != PLAN_NONE &&
	    (AT(plan->dims, struct plan_dim, a->dim)->flags & PLAN_DIM_TOKENS))
		return FAIL("section TENS: tensor %u (%.64s): split axis %u is the token dim %.64s, "
		            "which never splits", i, t->name, sp->axis,
		            AT(plan->dims, struct plan_dim, a->dim)->name);
	if (sp->unit < 1)
		return FAIL("section TENS: tensor %u (%.64s): split unit %lld, below 1", i, t->name,
		            (long long)sp->unit);
	for (uint32_t k = 0; k < sp->nblocks; k++) {
		const struct plan_split_block *b = &sp->block[k];
		if (b->full < 1 || b->start < 0 || b->len < 1 || b->start > b->full ||
		    b->len > b->full - b->start)
			return FAIL("section SBLK: tensor %u (%.64s) block %u: [%lld, +%lld) is not a "
			            "share inside its %lld elements", i, t->name, k,
			            (long long)b->start, (long long)b->len, (long long)b->full);
		if (b->full % sp->unit != 0 || b->start % sp->unit != 0 || b->len % sp->unit != 0)
			return FAIL("section SBLK: tensor %u (%.64s) block %u: [%lld, +%lld) of %lld "
			            "is not made of whole units of %lld", i, t->name, k,
			            (long long)b->start, (long long)b->len, (long long)b->full,
			            (long long)sp->unit);
		if (b->len > INT64_MAX - sum)
			return FAIL("section SBLK: tensor %u (%.64s): the shares overflow", i, t->name);
		sum += b->len;
	}
	size = a->dim != PLAN_NONE ? AT(plan->dims, struct plan_dim, a->dim)->value : a->size;
	if (size != sum)
		return FAIL("section TENS: tensor %u (%.64s): axis %u holds %lld elements, but the "
		            "split's shares add up to %lld", i, t->name, sp->axis, (long long)size,
		            (long long)sum);
	return PLAN_OK;
}

static int validate_tensor(const plan_t *plan, uint32_t i, struct plan_diag *diag)
{
	const struct plan_tensor *t = AT(plan->tensors, struct plan_tensor, i);

	if (plan_dtype_size(t->dtype) == 0)
		return FAIL("section TENS: tensor %u (%.64s) has unknown dtype %d", i, t->name, t->dtype);
	if (t->role < PLAN_ROLE_WEIGHT || t->role > PLAN_ROLE_ACTIVATION)
		return FAIL("section TENS: tensor %u (%.64s) has unknown role %d", i, t->name, t->role);
	if (t->rank < 1 || t->rank > PLAN_MAX_RANK)
		return FAIL("section TENS: tensor %u (%.64s) has rank %u, not 1..%d", i, t->name,
		            t->rank, PLAN_MAX_RANK);
	for (uint32_t k = 0; k < PLAN_MAX_RANK; k++) {
		const struct plan_axis *a = &t->shape[k];
		if (k >= t->rank) {
			if (a->dim != PLAN_NONE || a->size != 0)
				return FAIL("section TENS: tensor %u (%.64s): axis %u beyond rank %u is set",
				            i, t->name, k, t->rank);
		} else if (a->dim != PLAN_NONE && a->dim >= plan->dims.count) {
			return FAIL("section TENS: tensor %u (%.64s): axis %u names dim %u of %u",
			            i, t->name, k, a->dim, plan->dims.count);
		} else if (a->dim == PLAN_NONE && a->size < 0) {
			return FAIL("section TENS: tensor %u (%.64s): axis %u has negative size %lld",
			            i, t->name, k, (long long)a->size);
		}
	}
	if (t->offset % plan->layout.alignment != 0)
		return FAIL("section TENS: tensor %u (%.64s): offset %llu is not a multiple of "
		            "the alignment %u", i, t->name, (unsigned long long)t->offset,
		            plan->layout.alignment);
	if (!in_arena(plan, t->offset, t->bytes))
		return FAIL("section TENS: tensor %u (%.64s): [%llu, +%llu) lies outside the "
		            "%llu-byte arena", i, t->name, (unsigned long long)t->offset,
		            (unsigned long long)t->bytes, (unsigned long long)plan->layout.arena_bytes);
	if (t->init.kind < PLAN_INIT_NONE || t->init.kind > PLAN_INIT_SAFETENSORS)
		return FAIL("section TENS: tensor %u (%.64s) has unknown initializer %d", i,
		            t->name, t->init.kind);
	if (t->feed.kind < PLAN_FEED_NONE || t->feed.kind > PLAN_FEED_SEQ_POSITIONS)
		return FAIL("section TENS: tensor %u (%.64s) has unknown feed %d", i, t->name,
		            t->feed.kind);
	if (t->feed.kind != PLAN_FEED_NONE && t->feed.var != PLAN_NONE &&
	    t->feed.var >= plan->vars.count)
		return FAIL("section TENS: tensor %u (%.64s): feed names var %u of %u", i, t->name,
		            t->feed.var, plan->vars.count);
	if (t->feed.kind == PLAN_FEED_PROMPT) {
		const struct plan_tensor *from = t->feed.from < plan->tensors.count
			? AT(plan->tensors, struct plan_tensor, t->feed.from) : NULL;
		if (from == NULL)
			return FAIL("section TENS: tensor %u (%.64s): its prompt feed names tensor %u "
			            "of %u", i, t->name, t->feed.from, plan->tensors.count);
		if (from->dtype != PLAN_DTYPE_I32 || t->dtype != PLAN_DTYPE_I32)
			return FAIL("section TENS: tensor %u (%.64s): a prompt feed and the tensor it "
			            "feeds back (%.64s) must be i32", i, t->name, from->name);
	}
	return validate_split(plan, i, diag);
}

/* Weight source I's slice (1.5): none (all zero), or [start, start + len)
 * of the middle axis of the checkpoint tensor seen as [outer, full,
 * inner] elements of SZ bytes, which make its BYTES. */
static int validate_slice(const struct plan_weight_source *w, uint32_t i, uint64_t sz,
                          struct plan_diag *diag)
{
	uint64_t whole;

	if (w->slice_len == 0) {
		if (w->slice_outer || w->slice_full || w->slice_inner || w->slice_start)
			return FAIL("section WSRC: source %u (%.64s) has no slice (length 0) but a "
			            "slice's outer, full, inner or start", i, w->name);
		return PLAN_OK;
	}
	if (w->slice_outer == 0 || w->slice_inner == 0 || w->slice_full == 0 ||
	    w->slice_start > w->slice_full || w->slice_len > w->slice_full - w->slice_start)
		return FAIL("section WSRC: source %u (%.64s): slice [%llu, +%llu) of [%llu, %llu, "
		            "%llu] is empty or outside the checkpoint tensor", i, w->name,
		            (unsigned long long)w->slice_start, (unsigned long long)w->slice_len,
		            (unsigned long long)w->slice_outer, (unsigned long long)w->slice_full,
		            (unsigned long long)w->slice_inner);
	/* outer * full * inner * sz == bytes, by divisions that cannot
	 * overflow. */
	whole = w->bytes / sz;
	if (w->bytes % sz != 0 || whole % w->slice_outer != 0 ||
	    whole / w->slice_outer % w->slice_full != 0 ||
	    whole / w->slice_outer / w->slice_full != w->slice_inner)
		return FAIL("section WSRC: source %u (%.64s): slice view [%llu, %llu, %llu] of "
		            "%llu-byte elements is not its %llu bytes", i, w->name,
		            (unsigned long long)w->slice_outer, (unsigned long long)w->slice_full,
		            (unsigned long long)w->slice_inner, (unsigned long long)sz,
		            (unsigned long long)w->bytes);
	return PLAN_OK;
}

/* Weight sources (1.2): each fills a part of a tensor initialized from
 * safetensors files, within its reserved bytes. */
static int validate_weight_sources(const plan_t *plan, struct plan_diag *diag)
{
	int err;

	for (uint32_t i = 0; i < plan->wsrc.count; i++) {
		const struct plan_weight_source *w = AT(plan->wsrc, struct plan_weight_source, i);
		const struct plan_tensor *t;
		uint64_t sz = plan_dtype_size(w->dtype), conv;

		if (w->tensor >= plan->tensors.count)
			return FAIL("section WSRC: source %u names tensor %u of %u", i, w->tensor,
			            plan->tensors.count);
		t = AT(plan->tensors, struct plan_tensor, w->tensor);
		if (t->init.kind != PLAN_INIT_SAFETENSORS)
			return FAIL("section WSRC: source %u fills tensor %u (%.64s), whose initializer "
			            "is not safetensors", i, w->tensor, t->name);
		if (w->dtype == PLAN_DTYPE_I32 || sz == 0 || w->bytes % sz != 0)
			return FAIL("section WSRC: source %u (%.64s) has dtype %d and %llu bytes", i,
			            w->name, w->dtype, (unsigned long long)w->bytes);
		if (w->file[0] == '\0' || w->name[0] == '\0')
			return FAIL("section WSRC: source %u has an empty file or tensor name", i);
		if (w->flags & ~PLAN_WSRC_HASHED)
			return FAIL("section WSRC: source %u has unknown flags 0x%x", i, w->flags);
		if ((err = validate_slice(w, i, sz, diag)) != 0)
			return err;
		conv = w->bytes / sz * plan_dtype_size(t->dtype);
		if (w->slice_len != 0)
			conv = w->slice_outer * w->slice_len * w->slice_inner * plan_dtype_size(t->dtype);
		if (t->bytes != 0 && (w->offset > t->bytes || conv > t->bytes - w->offset))
			return FAIL("section WSRC: source %u (%.64s) of %llu bytes at offset %llu "
			            "overflows tensor %u (%.64s) of %llu bytes", i, w->name,
			            (unsigned long long)conv, (unsigned long long)w->offset, w->tensor,
			            t->name, (unsigned long long)t->bytes);
	}
	for (uint32_t i = 0; i < plan->tensors.count; i++) {
		const struct plan_tensor *t = AT(plan->tensors, struct plan_tensor, i);
		uint32_t k;
		if (t->init.kind != PLAN_INIT_SAFETENSORS)
			continue;
		for (k = 0; k < plan->wsrc.count; k++)
			if (AT(plan->wsrc, struct plan_weight_source, k)->tensor == i)
				break;
		if (k == plan->wsrc.count)
			return FAIL("section TENS: tensor %u (%.64s) is initialized from safetensors "
			            "but has no weight source", i, t->name);
	}
	return PLAN_OK;
}

/* A span of the arena: a tensor or a var mirror. */
struct span {
	uint64_t start;
	uint64_t end;
	uint32_t index;
	int      is_var;
	int      persistent;
};

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	if (x->is_var != y->is_var)
		return x->is_var - y->is_var;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int span_conflict(const plan_t *plan, const struct span *a, const struct span *b,
                         struct plan_diag *diag)
{
	const char *na = a->is_var ? AT(plan->vars, struct plan_var, a->index)->name
	                           : AT(plan->tensors, struct plan_tensor, a->index)->name;
	const char *nb = b->is_var ? AT(plan->vars, struct plan_var, b->index)->name
	                           : AT(plan->tensors, struct plan_tensor, b->index)->name;

	return FAIL("section TENS: %s %u (%.48s) and %s %u (%.48s) overlap in the arena, "
	            "and %s persistent", a->is_var ? "var" : "tensor", a->index, na,
	            b->is_var ? "var" : "tensor", b->index, nb,
	            a->persistent && b->persistent ? "both are" : "one is");
}

/* Persistent tensors and var mirrors own their bytes for the whole step:
 * none may overlap anything else. Activations may share space with each
 * other (the planner reuses it between disjoint lifetimes). */
static int validate_overlaps(const plan_t *plan, struct plan_diag *diag)
{
	uint32_t nt = plan->tensors.count, nv = plan->vars.count, n = 0;
	struct span *s, *all = NULL, *pers = NULL;
	uint64_t all_end = 0, pers_end = 0;
	int err = PLAN_OK;

	if ((size_t)nt + nv == 0)
		return PLAN_OK;
	if ((s = malloc(((size_t)nt + nv) * sizeof *s)) == NULL)
		return NOMEM();
	for (uint32_t i = 0; i < nt; i++) {
		const struct plan_tensor *t = AT(plan->tensors, struct plan_tensor, i);
		if (t->bytes == 0)
			continue;
		s[n++] = (struct span){ t->offset, t->offset + t->bytes, i, 0,
		                        t->role != PLAN_ROLE_ACTIVATION };
	}
	for (uint32_t i = 0; i < nv; i++) {
		const struct plan_var *v = AT(plan->vars, struct plan_var, i);
		s[n++] = (struct span){ v->offset, v->offset + 4, i, 1, 1 };
	}
	qsort(s, n, sizeof *s, by_start);
	/* Each pair is judged when its later member comes: a persistent span
	 * against every earlier one, an activation against earlier persistent
	 * ones. The earlier span reaching furthest is the one to test. */
	for (uint32_t i = 0; i < n; i++) {
		if (s[i].persistent && all != NULL && all_end > s[i].start) {
			err = span_conflict(plan, all, &s[i], diag);
			break;
		}
		if (!s[i].persistent && pers != NULL && pers_end > s[i].start) {
			err = span_conflict(plan, pers, &s[i], diag);
			break;
		}
		if (all == NULL || s[i].end > all_end) {
			all = &s[i];
			all_end = s[i].end;
		}
		if (s[i].persistent && (pers == NULL || s[i].end > pers_end)) {
			pers = &s[i];
			pers_end = s[i].end;
		}
	}
	free(s);
	return err;
}

static int validate_tensors(const plan_t *plan, struct plan_diag *diag)
{
	int err;

	for (uint32_t i = 0; i < plan->tensors.count; i++)
		if ((err = validate_tensor(plan, i, diag)) != 0)
			return err;
	if ((err = check_vec_names(&plan->tensors, sizeof(struct plan_tensor),
	                           offsetof(struct plan_tensor, name), "TENS", "tensor", diag)) != 0)
		return err;
	return validate_overlaps(plan, diag);
}

static int check_list(const plan_t *plan, const uint32_t *list, uint32_t n, const char *section,
                      const char *owner, uint32_t index, const char *what,
                      struct plan_diag *diag)
{
	if (n > 0 && list == NULL)
		return FAIL("section %s: %s %u: %u %s but no list", section, owner, index, n, what);
	for (uint32_t k = 0; k < n; k++)
		if (list[k] >= plan->tensors.count)
			return FAIL("section %s: %s %u: %s %u is tensor %u of %u", section, owner,
			            index, what, k, list[k], plan->tensors.count);
	return PLAN_OK;
}

static int validate_ops(const plan_t *plan, struct plan_diag *diag)
{
	int err;

	for (uint32_t i = 0; i < plan->ops.count; i++) {
		const struct plan_op *o = AT(plan->ops, struct plan_op, i);
		if (o->kind[0] == '\0')
			return FAIL("section OPER: op %u has an empty kind", i);
		if (o->flags & ~(uint32_t)PLAN_OP_EAGER)
			return FAIL("section OPER: op %u has unknown flags 0x%x", i, o->flags);
		if ((err = check_list(plan, o->in, o->nin, "OPER", "op", i, "input", diag)) != 0 ||
		    (err = check_list(plan, o->out, o->nout, "OPER", "op", i, "output", diag)) != 0)
			return err;
		if (o->nattr > 0 && o->attr == NULL)
			return FAIL("section OPER: op %u: %u attributes but no list", i, o->nattr);
		for (uint32_t k = 0; k < o->nattr; k++) {
			const struct plan_attr *a = &o->attr[k];
			if (a->key[0] == '\0')
				return FAIL("section ATTR: op %u attribute %u has an empty key", i, k);
			switch (a->type) {
			case PLAN_ATTR_INT:
			case PLAN_ATTR_FLOAT:
			case PLAN_ATTR_STR:
				break;
			case PLAN_ATTR_BOOL:
				if (a->i != 0 && a->i != 1)
					return FAIL("section ATTR: op %u attribute %.64s: bool %lld is not 0 or 1",
					            i, a->key, (long long)a->i);
				break;
			case PLAN_ATTR_VAR:
				if (a->i < 0 || (uint64_t)a->i >= plan->vars.count)
					return FAIL("section ATTR: op %u attribute %.64s names var %lld of %u",
					            i, a->key, (long long)a->i, plan->vars.count);
				break;
			default:
				return FAIL("section ATTR: op %u attribute %.64s has unknown type %d",
				            i, a->key, a->type);
			}
			if (a->type != PLAN_ATTR_STR && a->s[0] != '\0')
				return FAIL("section ATTR: op %u attribute %.64s is not a string but has text",
				            i, a->key);
		}
	}
	return PLAN_OK;
}

/* ---------------------------------------------------------------------- */
/* The captures: variants, segments, breakpoints, items.                   */

static int by_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static const struct plan_variant *variant_at(const plan_t *plan, uint32_t i)
{
	return &AT(plan->variants, struct plan_variant_rec, i)->pub;
}

/* A variant's capture-size key (1.3). */
static int validate_key(const plan_t *plan, uint32_t i, const struct plan_variant *v,
                        struct plan_diag *diag)
{
	int64_t rdim = plan_request_dim(plan);

	if (v->key_flags & ~(uint32_t)PLAN_KEY_UNIFORM)
		return FAIL("section VKEY: variant %u has reserved flags 0x%08x", i,
		            v->key_flags & ~(uint32_t)PLAN_KEY_UNIFORM);
	if ((int64_t)v->requests > v->tokens)
		return FAIL("section VKEY: variant %u holds %u requests of %lld tokens (each request "
		            "has a token)", i, v->requests, (long long)v->tokens);
	if ((v->key_flags & PLAN_KEY_UNIFORM) && (int64_t)v->requests != v->tokens)
		return FAIL("section VKEY: variant %u is for uniform decode: its %lld tokens make "
		            "%lld requests, not %u", i, (long long)v->tokens, (long long)v->tokens,
		            v->requests);
	if (rdim > 0 && (int64_t)v->requests > rdim)
		return FAIL("section VKEY: variant %u holds %u requests, above the request dim's %lld",
		            i, v->requests, (long long)rdim);
	return PLAN_OK;
}

static int validate_variants(const plan_t *plan, struct plan_diag *diag)
{
	uint32_t n = plan->variants.count, td = plan_token_dim(plan);
	int64_t *tokens;
	int err = PLAN_OK;

	if (n == 0)
		return PLAN_OK;
	if (td == PLAN_NONE)
		return FAIL("section VARI: %u variants but no token dim", n);
	for (uint32_t i = 0; i < n; i++) {
		const struct plan_variant *v = variant_at(plan, i);
		const struct plan_dim *d = AT(plan->dims, struct plan_dim, td);
		if (v->mode < PLAN_MODE_BREAKABLE || v->mode > PLAN_MODE_EAGER)
			return FAIL("section VARI: variant %u has unknown mode %d", i, v->mode);
		if (v->tokens < 1 || v->tokens > d->value)
			return FAIL("section VARI: variant %u has %lld tokens, not in 1..%lld (dim %.64s)",
			            i, (long long)v->tokens, (long long)d->value, d->name);
		if (v->nitems > 0 && v->items == NULL)
			return FAIL("section VARI: variant %u: %u items but no list", i, v->nitems);
		if ((err = validate_key(plan, i, v, diag)) != 0)
			return err;
	}
	if ((tokens = malloc((size_t)n * sizeof *tokens)) == NULL)
		return NOMEM();
	for (uint32_t i = 0; i < n; i++)
		tokens[i] = variant_at(plan, i)->tokens;
	qsort(tokens, n, sizeof *tokens, by_i64);
	for (uint32_t i = 1; i < n; i++)
		if (tokens[i] == tokens[i - 1]) {
			err = FAIL("section VARI: two variants have %lld tokens", (long long)tokens[i]);
			break;
		}
	free(tokens);
	return err;
}

static int valid_node_type(int type)
{
	return (type >= PLAN_NODE_KERNEL && type <= PLAN_NODE_EVENT_WAIT) || type == PLAN_NODE_OTHER;
}

static int validate_node(const plan_t *plan, const struct plan_segment *s, uint32_t si,
                         uint32_t ni, struct plan_diag *diag)
{
	const struct plan_node *n = &s->nodes[ni];

	if (!valid_node_type(n->type))
		return FAIL("section NODE: segment %u node %u has unknown type %d", si, ni, n->type);
	if (n->op != PLAN_NONE && (n->op < s->op_first || n->op - s->op_first >= s->op_count))
		return FAIL("section NODE: segment %u node %u names op %u, outside the segment's "
		            "ops [%u, +%u)", si, ni, n->op, s->op_first, s->op_count);
	if (n->nparams > 0 && n->params == NULL)
		return FAIL("section NODE: segment %u node %u: %u params but no list", si, ni, n->nparams);
	for (uint32_t k = 0; k < n->nparams; k++) {
		const struct plan_param *p = &n->params[k];
		if (k > 0 && p->index <= n->params[k - 1].index)
			return FAIL("section PARM: segment %u node %u: parameter numbers are not "
			            "increasing (%u after %u)", si, ni, p->index, n->params[k - 1].index);
		if (p->offset >= plan->layout.arena_bytes)
			return FAIL("section PARM: segment %u node %u parameter %u points at offset "
			            "%llu, outside the %llu-byte arena", si, ni, p->index,
			            (unsigned long long)p->offset,
			            (unsigned long long)plan->layout.arena_bytes);
	}
	return PLAN_OK;
}

static int validate_segments(const plan_t *plan, struct plan_diag *diag)
{
	int err;

	for (uint32_t i = 0; i < plan->segments.count; i++) {
		const struct plan_segment *s = AT(plan->segments, struct plan_segment, i);
		if (s->variant >= plan->variants.count)
			return FAIL("section SEGS: segment %u names variant %u of %u", i, s->variant,
			            plan->variants.count);
		if (s->op_count == 0 || s->op_first >= plan->ops.count ||
		    s->op_count > plan->ops.count - s->op_first)
			return FAIL("section SEGS: segment %u: ops [%u, +%u) are empty or outside the %u ops",
			            i, s->op_first, s->op_count, plan->ops.count);
		if (s->flags & ~(uint32_t)PLAN_SEG_NODES)
			return FAIL("section SEGS: segment %u has unknown flags 0x%x", i, s->flags);
		if ((s->nnodes > 0 && s->nodes == NULL) || (s->nedges > 0 && s->edges == NULL))
			return FAIL("section SEGS: segment %u: counts without arrays", i);
		if (!(s->flags & PLAN_SEG_NODES)) {
			if (s->nnodes != 0 || s->nedges != 0 || s->fingerprint != 0)
				return FAIL("section SEGS: segment %u has nodes, edges or a fingerprint "
				            "but not the nodes flag", i);
			continue;
		}
		for (uint32_t k = 0; k < s->nnodes; k++)
			if ((err = validate_node(plan, s, i, k, diag)) != 0)
				return err;
		for (uint32_t k = 0; k < s->nedges; k++) {
			const struct plan_edge *e = &s->edges[k];
			if (e->from >= s->nnodes || e->to >= s->nnodes || e->from == e->to)
				return FAIL("section EDGE: segment %u edge %u (%u -> %u) is not between two "
				            "of its %u nodes", i, k, e->from, e->to, s->nnodes);
			if (e->type > PLAN_EDGE_PROGRAMMATIC)
				return FAIL("section EDGE: segment %u edge %u has unknown type %u", i, k,
				            e->type);
			if (e->from_port > PLAN_PORT_LAUNCH_COMPLETION ||
			    e->to_port > PLAN_PORT_LAUNCH_COMPLETION)
				return FAIL("section EDGE: segment %u edge %u has unknown port %u",
				            i, k, e->from_port > PLAN_PORT_LAUNCH_COMPLETION ?
				            e->from_port : e->to_port);
		}
		uint64_t fp = plan_fingerprint(s);
		if (fp != s->fingerprint)
			return FAIL("section SEGS: segment %u: fingerprint 0x%016llx does not match its "
			            "nodes and edges (0x%016llx)", i, (unsigned long long)s->fingerprint,
			            (unsigned long long)fp);
	}
	return PLAN_OK;
}

static int validate_breakpoints(const plan_t *plan, struct plan_diag *diag)
{
	int err;

	for (uint32_t i = 0; i < plan->breakpoints.count; i++) {
		const struct plan_breakpoint *b = AT(plan->breakpoints, struct plan_breakpoint, i);
		if (b->variant >= plan->variants.count)
			return FAIL("section BRKP: breakpoint %u names variant %u of %u", i, b->variant,
			            plan->variants.count);
		if (b->op >= plan->ops.count)
			return FAIL("section BRKP: breakpoint %u names op %u of %u", i, b->op,
			            plan->ops.count);
		if (b->name[0] == '\0')
			return FAIL("section BRKP: breakpoint %u has an empty name", i);
		if (b->reason < PLAN_BREAK_KIND || b->reason > PLAN_BREAK_MODE)
			return FAIL("section BRKP: breakpoint %u has unknown reason %d", i, b->reason);
		if ((b->reason == PLAN_BREAK_MODE) != (variant_at(plan, b->variant)->mode == PLAN_MODE_EAGER))
			return FAIL("section BRKP: breakpoint %u has reason %s in a %s variant", i,
			            plan_break_reason_name(b->reason),
			            plan_mode_name(variant_at(plan, b->variant)->mode));
		if ((err = check_list(plan, b->reads, b->nreads, "BRKP", "breakpoint", i, "read", diag)) != 0 ||
		    (err = check_list(plan, b->writes, b->nwrites, "BRKP", "breakpoint", i, "write", diag)) != 0)
			return err;
	}
	return PLAN_OK;
}

/* Each variant's items run its ops in order, each exactly once: segments
 * as op ranges, breakpoints as single ops. Every segment and breakpoint is
 * an item of its own variant exactly once. */
static int validate_items(const plan_t *plan, uint32_t *seg_refs, uint32_t *bp_refs,
                          struct plan_diag *diag)
{
	uint32_t nops = plan->ops.count;

	for (uint32_t v = 0; v < plan->variants.count; v++) {
		const struct plan_variant *var = variant_at(plan, v);
		uint32_t next = 0;

		for (uint32_t k = 0; k < var->nitems; k++) {
			const struct plan_item *it = &var->items[k];
			uint32_t first, count;

			if (it->kind == PLAN_ITEM_SEGMENT) {
				if (it->index >= plan->segments.count)
					return FAIL("section ITEM: variant %u item %u names segment %u of %u",
					            v, k, it->index, plan->segments.count);
				const struct plan_segment *s = AT(plan->segments, struct plan_segment, it->index);
				if (s->variant != v)
					return FAIL("section ITEM: variant %u item %u names segment %u of "
					            "variant %u", v, k, it->index, s->variant);
				if (var->mode == PLAN_MODE_EAGER)
					return FAIL("section ITEM: variant %u is eager but item %u is a segment", v, k);
				if (seg_refs[it->index]++ != 0)
					return FAIL("section ITEM: segment %u is an item twice", it->index);
				first = s->op_first;
				count = s->op_count;
			} else if (it->kind == PLAN_ITEM_BREAK) {
				if (it->index >= plan->breakpoints.count)
					return FAIL("section ITEM: variant %u item %u names breakpoint %u of %u",
					            v, k, it->index, plan->breakpoints.count);
				const struct plan_breakpoint *b =
					AT(plan->breakpoints, struct plan_breakpoint, it->index);
				if (b->variant != v)
					return FAIL("section ITEM: variant %u item %u names breakpoint %u of "
					            "variant %u", v, k, it->index, b->variant);
				if (var->mode == PLAN_MODE_FULL)
					return FAIL("section ITEM: variant %u is full but item %u is a breakpoint",
					            v, k);
				if (bp_refs[it->index]++ != 0)
					return FAIL("section ITEM: breakpoint %u is an item twice", it->index);
				first = b->op;
				count = 1;
			} else {
				return FAIL("section ITEM: variant %u item %u has unknown kind %d", v, k, it->kind);
			}
			if (first != next)
				return FAIL("section ITEM: variant %u item %u starts at op %u where op %u "
				            "was due (%s)", v, k, first, next,
				            first > next ? "a gap" : "an overlap");
			next = first + count;   /* <= nops: checked with the segment */
		}
		if (next != nops)
			return FAIL("section ITEM: variant %u runs ops up to %u of %u", v, next, nops);
	}
	for (uint32_t i = 0; i < plan->segments.count; i++)
		if (seg_refs[i] == 0)
			return FAIL("section ITEM: segment %u is no item of its variant", i);
	for (uint32_t i = 0; i < plan->breakpoints.count; i++)
		if (bp_refs[i] == 0)
			return FAIL("section ITEM: breakpoint %u is no item of its variant", i);
	return PLAN_OK;
}

static int validate_captures(const plan_t *plan, struct plan_diag *diag)
{
	uint32_t *seg_refs = NULL, *bp_refs = NULL;
	int err;

	if ((err = validate_variants(plan, diag)) != 0 ||
	    (err = validate_segments(plan, diag)) != 0 ||
	    (err = validate_breakpoints(plan, diag)) != 0)
		return err;
	seg_refs = calloc((size_t)plan->segments.count + 1, sizeof *seg_refs);
	bp_refs = calloc((size_t)plan->breakpoints.count + 1, sizeof *bp_refs);
	if (seg_refs == NULL || bp_refs == NULL)
		err = NOMEM();
	else
		err = validate_items(plan, seg_refs, bp_refs, diag);
	free(seg_refs);
	free(bp_refs);
	return err;
}

static int check_key_cmp(const void *x, const void *y)
{
	const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* One check per variant and tensor: diff and replay's --check find a
 * check by the two, so a second one would never be compared. */
static int validate_checks(const plan_t *plan, struct plan_diag *diag)
{
	uint64_t *keys;
	int err = PLAN_OK;

	for (uint32_t i = 0; i < plan->checks.count; i++) {
		const struct plan_check *c = AT(plan->checks, struct plan_check, i);
		if (c->variant >= plan->variants.count)
			return FAIL("section CHKS: check %u names variant %u of %u", i, c->variant,
			            plan->variants.count);
		if (c->tensor >= plan->tensors.count)
			return FAIL("section CHKS: check %u names tensor %u of %u", i, c->tensor,
			            plan->tensors.count);
	}
	if (plan->checks.count < 2)
		return PLAN_OK;
	if ((keys = malloc(plan->checks.count * sizeof *keys)) == NULL)
		return plan__fail(diag, PLAN_ERR_NOMEM, "out of memory checking %u checks",
		                  plan->checks.count);
	for (uint32_t i = 0; i < plan->checks.count; i++) {
		const struct plan_check *c = AT(plan->checks, struct plan_check, i);
		keys[i] = (uint64_t)c->variant << 32 | c->tensor;
	}
	qsort(keys, plan->checks.count, sizeof *keys, check_key_cmp);
	for (uint32_t i = 1; i < plan->checks.count; i++)
		if (keys[i] == keys[i - 1]) {
			err = FAIL("section CHKS: two checks of tensor %u in variant %u",
			           (uint32_t)keys[i], (uint32_t)(keys[i] >> 32));
			break;
		}
	free(keys);
	return err;
}

/* The most requests a batch that dispatch entry D holds can have; 0 any. */
static int64_t entry_requests(const struct plan_dispatch *d)
{
	if (d->requests_max != 0)
		return d->requests_max;
	return (d->flags & PLAN_DISPATCH_UNIFORM) ? d->tokens_max : 0;
}

/* Entry I against its variant. */
static int validate_entry_variant(const plan_t *plan, uint32_t i, const struct plan_dispatch *d,
                                  struct plan_diag *diag)
{
	const struct plan_variant *v;
	int64_t most = entry_requests(d);

	if (d->variant == PLAN_NONE)
		return PLAN_OK;
	if (d->variant >= plan->variants.count)
		return FAIL("section DISP: entry %u names variant %u of %u", i, d->variant,
		            plan->variants.count);
	v = variant_at(plan, d->variant);
	if (v->tokens < d->tokens_max)
		return FAIL("section DISP: entry %u sends up to %lld tokens to variant %u of %lld",
		            i, (long long)d->tokens_max, d->variant, (long long)v->tokens);
	if ((v->key_flags & PLAN_KEY_UNIFORM) && !(d->flags & PLAN_DISPATCH_UNIFORM))
		return FAIL("section DKEY: entry %u sends mixed batches to variant %u, which holds "
		            "uniform decode batches only", i, d->variant);
	if (v->requests != 0 && most == 0)
		return FAIL("section DKEY: entry %u sends any number of requests to variant %u, "
		            "which holds at most %u", i, d->variant, v->requests);
	if (v->requests != 0 && most > v->requests)
		return FAIL("section DKEY: entry %u sends up to %lld requests to variant %u, which "
		            "holds at most %u", i, (long long)most, d->variant, v->requests);
	return PLAN_OK;
}

/*
 * The table is looked up in order, the first entry that holds a batch
 * winning: the uniform decode entries first, then the general ones; in
 * each, ascending by Tokens_Max, then by Requests_Max (0, any, last); no
 * two of a class with one key; entries of a class with the same
 * Requests_Max disjoint. A table without keys (1.2 and older) is one
 * class of disjoint ranges, ascending, as before.
 */
static int validate_dispatch(const plan_t *plan, struct plan_diag *diag)
{
	int64_t rdim = plan_request_dim(plan);
	int err;

	for (uint32_t i = 0; i < plan->dispatch.count; i++) {
		const struct plan_dispatch *d = AT(plan->dispatch, struct plan_dispatch, i);
		const struct plan_dispatch *p = i > 0 ? d - 1 : NULL;
		int uni = (d->flags & PLAN_DISPATCH_UNIFORM) != 0;
		if (d->tokens_min < 1 || d->tokens_max < d->tokens_min)
			return FAIL("section DISP: entry %u has an empty range [%lld, %lld]", i,
			            (long long)d->tokens_min, (long long)d->tokens_max);
		if (d->flags & ~(uint32_t)PLAN_DISPATCH_UNIFORM)
			return FAIL("section DKEY: entry %u has reserved flags 0x%08x", i,
			            d->flags & ~(uint32_t)PLAN_DISPATCH_UNIFORM);
		if ((int64_t)d->requests_max > d->tokens_max)
			return FAIL("section DKEY: entry %u holds %u requests of at most %lld tokens "
			            "(each request has a token)", i, d->requests_max,
			            (long long)d->tokens_max);
		if (rdim > 0 && (int64_t)d->requests_max > rdim)
			return FAIL("section DKEY: entry %u holds %u requests, above the request dim's "
			            "%lld", i, d->requests_max, (long long)rdim);
		if (p != NULL) {
			int puni = (p->flags & PLAN_DISPATCH_UNIFORM) != 0;
			uint64_t r = d->requests_max ? d->requests_max : UINT64_MAX;
			uint64_t pr = p->requests_max ? p->requests_max : UINT64_MAX;
			if (uni && !puni)
				return FAIL("section DKEY: entry %u, for uniform decode, comes after entry "
				            "%u, for any batch", i, i - 1);
			int keyed = d->flags || d->requests_max || p->flags || p->requests_max;
			if (keyed && uni == puni && d->tokens_max == p->tokens_max && r == pr)
				return FAIL("section DKEY: entries %u and %u have the same key (%lld "
				            "tokens, %s%u requests%s)", i - 1, i, (long long)d->tokens_max,
				            d->requests_max ? "" : "any: ", d->requests_max,
				            uni ? ", uniform decode" : "");
			if (uni == puni && r == pr && d->tokens_min <= p->tokens_max)
				return FAIL("section DISP: entry %u does not start above entry %u", i, i - 1);
			if (uni == puni && (d->tokens_max < p->tokens_max ||
			                    (d->tokens_max == p->tokens_max && r < pr)))
				return FAIL("section DKEY: entry %u comes before entry %u in the order of "
				            "tokens, then requests", i, i - 1);
		}
		if ((err = validate_entry_variant(plan, i, d, diag)) != 0)
			return err;
	}
	return PLAN_OK;
}

/* ---------------------------------------------------------------------- */
/* Implementation choices.                                                 */

struct choice_key {
	uint32_t variant;
	uint32_t op;
	uint32_t index;
};

static int by_variant_op(const void *a, const void *b)
{
	const struct choice_key *x = a, *y = b;

	if (x->variant != y->variant)
		return x->variant < y->variant ? -1 : 1;
	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int validate_choice(const plan_t *plan, uint32_t i, struct plan_diag *diag)
{
	const struct plan_choice *c = AT(plan->choices, struct plan_choice, i);
	const char *mark = NULL;
	int found = 0, err, bad;

	if (c->variant >= plan->variants.count)
		return FAIL("section CHOI: choice %u names variant %u of %u", i, c->variant,
		            plan->variants.count);
	if (c->op >= plan->ops.count)
		return FAIL("section CHOI: choice %u names op %u of %u", i, c->op, plan->ops.count);
	if (c->impl[0] == '\0')
		return FAIL("section CHOI: choice %u has an empty implementation name", i);
	if ((bad = plan__choice_flags_bad(c->flags, &mark)) == 1)
		return FAIL("section CHOI: choice %u has unknown flags 0x%x", i, c->flags);
	if (bad == 2)
		return FAIL("section CHOI: choice %u is marked %s but was not tuned", i, mark);
	if (c->ncand > 0 && c->cand == NULL)
		return FAIL("section CHOI: choice %u: %u candidates but no list", i, c->ncand);
	for (uint32_t k = 0; k < c->ncand; k++) {
		const struct plan_candidate *d = &c->cand[k];
		if (!isfinite(d->us) || d->us < 0)
			return FAIL("section CAND: choice %u candidate %u (%.64s) has time %g, not a "
			            "finite number >= 0", i, k, d->impl, d->us);
		if (strcmp(d->impl, c->impl) == 0)
			found = 1;
	}
	if (c->ncand > 0 && !found)
		return FAIL("section CHOI: choice %u chose '%.64s', which is none of its %u candidates",
		            i, c->impl, c->ncand);
	if (c->ncand > 0) {
		const char **names = malloc((size_t)c->ncand * sizeof *names);
		char what[64];
		if (names == NULL)
			return NOMEM();
		for (uint32_t k = 0; k < c->ncand; k++)
			names[k] = c->cand[k].impl;
		snprintf(what, sizeof what, "choice %u candidate", i);
		err = check_names(names, c->ncand, "CAND", what, diag);
		free(names);
		if (err != 0)
			return err;
	}
	return PLAN_OK;
}

/* Every choice names a variant and op of the plan, at most one per pair,
 * and chooses one of the implementations it lists. */
static int validate_choices(const plan_t *plan, struct plan_diag *diag)
{
	uint32_t n = plan->choices.count;
	struct choice_key *k;
	int err = PLAN_OK;

	for (uint32_t i = 0; i < n; i++)
		if ((err = validate_choice(plan, i, diag)) != 0)
			return err;
	if (n < 2)
		return PLAN_OK;
	if ((k = malloc((size_t)n * sizeof *k)) == NULL)
		return NOMEM();
	for (uint32_t i = 0; i < n; i++) {
		const struct plan_choice *c = AT(plan->choices, struct plan_choice, i);
		k[i] = (struct choice_key){ c->variant, c->op, i };
	}
	qsort(k, n, sizeof *k, by_variant_op);
	for (uint32_t i = 1; i < n; i++)
		if (k[i].variant == k[i - 1].variant && k[i].op == k[i - 1].op) {
			err = FAIL("section CHOI: choices %u and %u are both for op %u of variant %u",
			           k[i - 1].index, k[i].index, k[i].op, k[i].variant);
			break;
		}
	free(k);
	return err;
}

/* ---------------------------------------------------------------------- */
/* Recorded plans (1.4).                                                   */

static int validate_recording(const plan_t *plan, struct plan_diag *diag)
{
	const struct plan_recording *r = &plan->recording;
	uint64_t seen = 0;

	if (plan->dims.count || plan->vars.count || plan->tensors.count || plan->ops.count ||
	    plan->checks.count || plan->dispatch.count || plan->choices.count || plan->wsrc.count)
		return FAIL("section RECD: a recorded plan has dims, vars, tensors, ops, checks, "
		            "a dispatch table, choices or weight sources");
	if (plan->layout.arena_bytes != 0 || plan->layout.unshared_bytes != 0)
		return FAIL("section META: a recorded plan has an arena of %llu bytes",
		            (unsigned long long)plan->layout.arena_bytes);
	if (r->flags & ~(uint32_t)(PLAN_RECORD_SNAPSHOT | PLAN_RECORD_NVTX_STEP))
		return FAIL("section RECD: unknown flags 0x%x", r->flags);
	if (r->command[0] == '\0')
		return FAIL("section RECD: the command is empty");
	if (strcmp(r->step_rule, "repeat") != 0 &&
	    (strncmp(r->step_rule, "nvtx:", 5) != 0 || r->step_rule[5] == '\0'))
		return FAIL("section RECD: step rule \"%.64s\" is neither \"nvtx:NAME\" nor "
		            "\"repeat\"", r->step_rule);
	if (((r->flags & PLAN_RECORD_NVTX_STEP) != 0) != (r->step_rule[0] == 'n'))
		return FAIL("section RECD: the NVTX flag and step rule \"%.64s\" disagree",
		            r->step_rule);
	for (uint32_t i = 0; i < plan->variants.count; i++) {
		seen += variant_at(plan, i)->seen;
		if (seen < variant_at(plan, i)->seen)
			return FAIL("section VREC: the steps seen overflow");
	}
	if (seen > r->steps)
		return FAIL("section RECD: the variants saw %llu steps, more than the %llu recorded",
		            (unsigned long long)seen, (unsigned long long)r->steps);
	return PLAN_OK;
}

static int validate_recorded_program(const plan_t *plan, struct plan_diag *diag)
{
	const uint32_t *order = plan->alloc_order.data;
	int err;

	for (uint32_t i = 0; i < plan->modules.count; i++) {
		const struct plan_module *m = AT(plan->modules, struct plan_module, i);
		if (m->flags & ~(uint32_t)PLAN_MODULE_IMAGE)
			return FAIL("section MODS: module %u has unknown flags 0x%x", i, m->flags);
		if ((m->flags & PLAN_MODULE_IMAGE) ? (m->image == NULL || m->bytes == 0 ||
		                                      m->note[0] != '\0') :
		                                     (m->image != NULL || m->note[0] == '\0'))
			return FAIL("section MODS: module %u: a kept image has bytes and no note; one "
			            "not kept, a note saying why", i);
		for (uint32_t k = 0; k < i; k++) {
			const struct plan_module *o = AT(plan->modules, struct plan_module, k);
			if (o->hash == m->hash && o->bytes == m->bytes)
				return FAIL("section MODS: modules %u and %u are one image", k, i);
			if (k > 64)
				break;   /* the builder keeps them unique; bound the cost */
		}
	}
	for (uint32_t i = 0; i < plan->functions.count; i++) {
		const struct plan_function *f = AT(plan->functions, struct plan_function, i);
		if (f->module >= plan->modules.count)
			return FAIL("section FUNC: function %u names module %u of %u", i, f->module,
			            plan->modules.count);
		if (f->name[0] == '\0')
			return FAIL("section FUNC: function %u has no name", i);
		for (uint32_t k = 1; k < f->nparams; k++)
			if (f->params[k].offset < (uint64_t)f->params[k - 1].offset + f->params[k - 1].size)
				return FAIL("section PINF: function %u: parameter %u overlaps or precedes "
				            "the one before", i, k);
	}
	/* Allocations: ORDER sorts them by device and address; neighbours of
	 * one device do not overlap. */
	for (uint32_t i = 1; i < plan->alloc_order.count; i++) {
		const struct plan_alloc *a = AT(plan->allocs, struct plan_alloc, order[i - 1]);
		const struct plan_alloc *b = AT(plan->allocs, struct plan_alloc, order[i]);
		if (a->device == b->device && a->address + a->bytes > b->address)
			return FAIL("section ALOC: allocations %u and %u overlap", order[i - 1], order[i]);
	}
	for (uint32_t i = 0; i < plan->allocs.count; i++) {
		const struct plan_alloc *a = AT(plan->allocs, struct plan_alloc, i);
		if (a->flags & ~(uint32_t)(PLAN_ALLOC_SNAPSHOT | PLAN_ALLOC_VMM))
			return FAIL("section ALOC: allocation %u has unknown flags 0x%x", i, a->flags);
		if (((a->flags & PLAN_ALLOC_SNAPSHOT) != 0) != (a->data != NULL))
			return FAIL("section ALOC: allocation %u: contents and the snapshot flag "
			            "disagree", i);
	}
	for (uint32_t i = 0; i < plan->launches.count; i++) {
		struct plan_diag d;
		if ((err = plan__check_launch(plan, AT(plan->launches, struct plan_launch, i), i,
		                              &d)) != 0)
			return FAIL("section LNCH: %s", d.message);
	}
	return PLAN_OK;
}

static int validate_recorded_node(const plan_t *plan, const struct plan_node *n, uint32_t si,
                                  uint32_t ni, struct plan_diag *diag)
{
	int launched = n->type == PLAN_NODE_KERNEL || n->type == PLAN_NODE_MEMCPY ||
	               n->type == PLAN_NODE_MEMSET;
	const struct plan_launch *l;

	if (!valid_node_type(n->type))
		return FAIL("section NODE: segment %u node %u has unknown type %d", si, ni, n->type);
	if (n->op != PLAN_NONE || n->nparams != 0)
		return FAIL("section NODE: segment %u node %u of a recorded plan has an op or arena "
		            "parameters", si, ni);
	if (!launched) {
		if (n->launch != PLAN_NONE || n->kernel[0] != '\0')
			return FAIL("section NLCH: segment %u node %u (%s) names a launch or kernel",
			            si, ni, plan_node_type_name(n->type));
		return PLAN_OK;
	}
	if (n->launch >= plan->launches.count)
		return FAIL("section NLCH: segment %u node %u names launch %u of %u", si, ni,
		            n->launch, plan->launches.count);
	l = AT(plan->launches, struct plan_launch, n->launch);
	if (l->type != n->type)
		return FAIL("section NLCH: segment %u node %u (%s) names launch %u, a %s", si, ni,
		            plan_node_type_name(n->type), n->launch, plan_node_type_name(l->type));
	if (n->type == PLAN_NODE_KERNEL &&
	    (strcmp(n->kernel, AT(plan->functions, struct plan_function, l->function)->name) != 0 ||
	     memcmp(n->grid, l->grid, sizeof l->grid) != 0 ||
	     memcmp(n->block, l->block, sizeof l->block) != 0 || n->shmem != l->shmem))
		return FAIL("section NODE: segment %u node %u is not what launch %u runs", si, ni,
		            n->launch);
	return PLAN_OK;
}

/* (1.7) A variant's start offsets: its first item's are 0; every later
 * item's are recorded (above 0) or none is, of each kind; and they never
 * decrease along the items (the items of a step ran in order on one
 * stream, and were launched in order). */
static int validate_offsets(const plan_t *plan, uint32_t v, struct plan_diag *diag)
{
	const struct plan_variant *var = variant_at(plan, v);
	uint64_t prev_s = 0, prev_h = 0;
	uint32_t known_s = 0, known_h = 0;

	if (var->nitems == 0)
		return PLAN_OK;
	for (uint32_t k = 0; k < var->nitems; k++) {
		uint64_t s, h;
		plan_item_offsets(plan, &var->items[k], &s, &h);
		if (k == 0) {
			if (s != 0 || h != 0)
				return FAIL("section %s: variant %u item 0: start offsets %llu and %llu ns; "
				            "the first item starts its step (0)",
				            var->items[0].kind == PLAN_ITEM_SEGMENT ? "SREC" : "BLCH", v,
				            (unsigned long long)s, (unsigned long long)h);
			continue;
		}
		if ((s != 0 && s < prev_s) || (h != 0 && h < prev_h))
			return FAIL("section %s: variant %u item %u starts before the item before it "
			            "(%llu ns after the step's start, against %llu; launched %llu ns "
			            "after, against %llu)",
			            var->items[k].kind == PLAN_ITEM_SEGMENT ? "SREC" : "BLCH", v, k,
			            (unsigned long long)s, (unsigned long long)prev_s,
			            (unsigned long long)h, (unsigned long long)prev_h);
		known_s += s != 0;
		known_h += h != 0;
		prev_s = s;
		prev_h = h;
	}
	if ((known_s != 0 && known_s != var->nitems - 1) ||
	    (known_h != 0 && known_h != var->nitems - 1))
		return FAIL("section SREC, BLCH: variant %u: %u of its %u items past the first have a "
		            "start offset and %u a launch offset; all or none must", v, known_s,
		            var->nitems - 1, known_h);
	return PLAN_OK;
}

static int validate_recorded_segment(const plan_t *plan, uint32_t i, struct plan_diag *diag)
{
	const struct plan_segment *s = AT(plan->segments, struct plan_segment, i);
	int err;

	if (s->variant >= plan->variants.count)
		return FAIL("section SEGS: segment %u names variant %u of %u", i, s->variant,
		            plan->variants.count);
	if (s->op_first != 0 || s->op_count != 0)
		return FAIL("section SEGS: recorded segment %u has ops [%u, +%u)", i, s->op_first,
		            s->op_count);
	if (s->flags != PLAN_SEG_NODES || s->nnodes == 0)
		return FAIL("section SEGS: recorded segment %u has no nodes", i);
	if ((s->nnodes > 0 && s->nodes == NULL) || (s->nedges > 0 && s->edges == NULL))
		return FAIL("section SEGS: segment %u: counts without arrays", i);
	for (uint32_t k = 0; k < s->nnodes; k++)
		if ((err = validate_recorded_node(plan, &s->nodes[k], i, k, diag)) != 0)
			return err;
	for (uint32_t k = 0; k < s->nedges; k++) {
		const struct plan_edge *e = &s->edges[k];
		if (e->from >= s->nnodes || e->to >= s->nnodes || e->from == e->to)
			return FAIL("section EDGE: segment %u edge %u (%u -> %u) is not between two "
			            "of its %u nodes", i, k, e->from, e->to, s->nnodes);
		if (e->type > PLAN_EDGE_PROGRAMMATIC || e->from_port > PLAN_PORT_LAUNCH_COMPLETION ||
		    e->to_port > PLAN_PORT_LAUNCH_COMPLETION)
			return FAIL("section EDGE: segment %u edge %u has an unknown type or port", i, k);
	}
	uint64_t fp = plan_fingerprint_recorded(plan, s);
	if (fp != s->fingerprint)
		return FAIL("section SEGS: segment %u: fingerprint 0x%016llx does not match its "
		            "recorded nodes and edges (0x%016llx)", i,
		            (unsigned long long)s->fingerprint, (unsigned long long)fp);
	return PLAN_OK;
}

static int validate_recorded_captures(const plan_t *plan, struct plan_diag *diag)
{
	uint32_t *seg_refs = NULL, *bp_refs = NULL;
	int err = PLAN_OK;

	for (uint32_t i = 0; i < plan->variants.count; i++) {
		const struct plan_variant *v = variant_at(plan, i);
		if (v->tokens != (int64_t)i + 1)
			return FAIL("section VARI: recorded variant %u is numbered %lld, not %u", i,
			            (long long)v->tokens, i + 1);
		if (v->requests != 0 || v->key_flags != 0)
			return FAIL("section VKEY: recorded variant %u has a capture-size key", i);
		if (v->nitems == 0)
			return FAIL("section VARI: variant %u has no items", i);
		if (v->nitems > 0 && v->items == NULL)
			return FAIL("section VARI: variant %u: %u items but no list", i, v->nitems);
		/* A step with no break is a full-graph step; any other is
		 * breakable. */
		uint32_t nbreaks = 0;
		for (uint32_t k = 0; k < v->nitems; k++)
			nbreaks += v->items[k].kind == PLAN_ITEM_BREAK;
		int want = nbreaks == 0 ? PLAN_MODE_FULL : PLAN_MODE_BREAKABLE;
		if (v->mode != want)
			return FAIL("section VARI: recorded variant %u is %s, not %s (%u breakpoint%s)",
			            i, plan_mode_name(v->mode), plan_mode_name(want), nbreaks,
			            nbreaks == 1 ? "" : "s");
	}
	for (uint32_t i = 0; i < plan->segments.count; i++)
		if ((err = validate_recorded_segment(plan, i, diag)) != 0)
			return err;
	for (uint32_t i = 0; i < plan->breakpoints.count; i++) {
		const struct plan_breakpoint *b = AT(plan->breakpoints, struct plan_breakpoint, i);
		if (b->variant >= plan->variants.count)
			return FAIL("section BRKP: breakpoint %u names variant %u of %u", i, b->variant,
			            plan->variants.count);
		if (b->op != PLAN_NONE || b->reason != PLAN_BREAK_RECORDED || b->nreads || b->nwrites)
			return FAIL("section BRKP: recorded breakpoint %u has an op, reads or writes, "
			            "or a reason other than recorded", i);
		if (b->name[0] == '\0')
			return FAIL("section BRKP: breakpoint %u has an empty name", i);
		if (b->launch_count == 0 || b->launch_first >= plan->launches.count ||
		    b->launch_count > plan->launches.count - b->launch_first)
			return FAIL("section BLCH: breakpoint %u: launches [%u, +%u) are empty or "
			            "outside the %u launches", i, b->launch_first, b->launch_count,
			            plan->launches.count);
	}
	seg_refs = calloc((size_t)plan->segments.count + 1, sizeof *seg_refs);
	bp_refs = calloc((size_t)plan->breakpoints.count + 1, sizeof *bp_refs);
	if (seg_refs == NULL || bp_refs == NULL) {
		err = NOMEM();
		goto out;
	}
	/* Each segment and breakpoint is an item of its variant once; a
	 * variant's breakpoints run launches in the order they were issued. */
	for (uint32_t v = 0; v < plan->variants.count && err == PLAN_OK; v++) {
		const struct plan_variant *var = variant_at(plan, v);
		uint64_t next = 0;
		for (uint32_t k = 0; k < var->nitems; k++) {
			const struct plan_item *it = &var->items[k];
			uint32_t nrec = it->kind == PLAN_ITEM_SEGMENT ? plan->segments.count :
			                it->kind == PLAN_ITEM_BREAK ? plan->breakpoints.count : 0;
			uint32_t *refs = it->kind == PLAN_ITEM_SEGMENT ? seg_refs : bp_refs;
			if (it->kind != PLAN_ITEM_SEGMENT && it->kind != PLAN_ITEM_BREAK) {
				err = FAIL("section ITEM: variant %u item %u has unknown kind %d", v, k,
				           it->kind);
				break;
			}
			if (it->index >= nrec) {
				err = FAIL("section ITEM: variant %u item %u names %s %u of %u", v, k,
				           it->kind == PLAN_ITEM_SEGMENT ? "segment" : "breakpoint",
				           it->index, nrec);
				break;
			}
			uint32_t owner = it->kind == PLAN_ITEM_SEGMENT ?
				AT(plan->segments, struct plan_segment, it->index)->variant :
				AT(plan->breakpoints, struct plan_breakpoint, it->index)->variant;
			if (owner != v) {
				err = FAIL("section ITEM: variant %u item %u names an item of variant %u",
				           v, k, owner);
				break;
			}
			if (refs[it->index]++ != 0) {
				err = FAIL("section ITEM: %s %u is an item twice",
				           it->kind == PLAN_ITEM_SEGMENT ? "segment" : "breakpoint",
				           it->index);
				break;
			}
			if (it->kind == PLAN_ITEM_BREAK) {
				const struct plan_breakpoint *b =
					AT(plan->breakpoints, struct plan_breakpoint, it->index);
				if (b->launch_first < next) {
					err = FAIL("section BLCH: variant %u item %u: breakpoint %u's launches "
					           "start at %u, before the end (%llu) of the breakpoint "
					           "before it", v, k, it->index, b->launch_first,
					           (unsigned long long)next);
					break;
				}
				next = (uint64_t)b->launch_first + b->launch_count;
			}
		}
	}
	for (uint32_t v = 0; v < plan->variants.count && err == PLAN_OK; v++)
		err = validate_offsets(plan, v, diag);
	for (uint32_t i = 0; err == PLAN_OK && i < plan->segments.count; i++)
		if (seg_refs[i] == 0)
			err = FAIL("section ITEM: segment %u is no item of its variant", i);
	for (uint32_t i = 0; err == PLAN_OK && i < plan->breakpoints.count; i++)
		if (bp_refs[i] == 0)
			err = FAIL("section ITEM: breakpoint %u is no item of its variant", i);
out:
	free(seg_refs);
	free(bp_refs);
	return err;
}

static int validate_dist(const plan_t *plan, struct plan_diag *diag);

/* One plan, whatever rank it is. */
/* Executables shared (1.6): each record names a segment and the group's
 * first, which names itself; a group holds one segment of a variant at
 * most, all of one topology. */
static int validate_shares(const plan_t *plan, struct plan_diag *diag)
{
	uint32_t n = plan->shares.count, nseg = plan->segments.count;

	if (n > 0 && (plan->recorded || plan->dist.world > 1))
		return FAIL("section SHAR: a %s plan has shared executables",
		            plan->recorded ? "recorded" : "tensor-parallel");
	for (uint32_t i = 0; i < n; i++) {
		const struct plan_share *s = AT(plan->shares, struct plan_share, i);
		const struct plan_share *x;
		const struct plan_segment *a, *b;

		if (s->flags & ~(uint32_t)PLAN_SHARE_REFUSED)
			return FAIL("section SHAR: record %u has reserved flags 0x%08x", i,
			            s->flags & ~(uint32_t)PLAN_SHARE_REFUSED);
		if (s->segment >= nseg || s->exec >= nseg)
			return FAIL("section SHAR: record %u names segment %u and executable %u of %u "
			            "segments", i, s->segment, s->exec, nseg);
		if (i > 0 && AT(plan->shares, struct plan_share, i - 1)->segment >= s->segment)
			return FAIL("section SHAR: record %u (segment %u) is not in ascending order of "
			            "segment", i, s->segment);
		if ((s->flags & PLAN_SHARE_REFUSED) ? s->result == 0 : s->result != 0)
			return FAIL("section SHAR: segment %u has update result %u %s", s->segment,
			            s->result, s->result ? "but was not refused" : "but was refused");
		if ((s->flags & PLAN_SHARE_REFUSED) && s->exec == s->segment)
			return FAIL("section SHAR: segment %u was refused its own executable",
			            s->segment);
		x = plan_find_share(plan, s->exec);
		if (x == NULL || x->exec != s->exec || x->flags != 0)
			return FAIL("section SHAR: segment %u runs on segment %u's executable, which "
			            "is not the first of a group", s->segment, s->exec);
		if (s->exec == s->segment || (s->flags & PLAN_SHARE_REFUSED))
			continue;
		a = AT(plan->segments, struct plan_segment, s->segment);
		b = AT(plan->segments, struct plan_segment, s->exec);
		if (a->variant == b->variant)
			return FAIL("section SHAR: segments %u and %u of variant %u share an "
			            "executable", s->exec, s->segment, a->variant);
		for (uint32_t k = 0; k < i; k++) {
			const struct plan_share *o = AT(plan->shares, struct plan_share, k);
			if (o->exec == s->exec && !(o->flags & PLAN_SHARE_REFUSED) &&
			    o->segment != s->exec &&
			    AT(plan->segments, struct plan_segment, o->segment)->variant == a->variant)
				return FAIL("section SHAR: segments %u and %u of variant %u share an "
				            "executable", o->segment, s->segment, a->variant);
		}
		if ((a->flags & PLAN_SEG_NODES) != (b->flags & PLAN_SEG_NODES) ||
		    a->nnodes != b->nnodes || a->nedges != b->nedges)
			return FAIL("section SHAR: segment %u (%u nodes) shares the executable of "
			            "segment %u (%u nodes)", s->segment, a->nnodes, s->exec, b->nnodes);
		for (uint32_t k = 0; k < a->nnodes; k++)
			if (a->nodes[k].type != b->nodes[k].type)
				return FAIL("section SHAR: segment %u's node %u is not of the type of "
				            "segment %u's, whose executable it shares", s->segment, k,
				            s->exec);
	}
	return PLAN_OK;
}

static int validate_one(const plan_t *plan, struct plan_diag *diag)
{
	int err;

	if ((err = validate_dist(plan, diag)) != 0 || (err = validate_shares(plan, diag)) != 0)
		return err;
	if (plan->recorded) {
		if ((err = validate_meta(plan, diag)) != 0 ||
		    (err = validate_recording(plan, diag)) != 0 ||
		    (err = validate_recorded_program(plan, diag)) != 0 ||
		    (err = validate_recorded_captures(plan, diag)) != 0)
			return err;
		return PLAN_OK;
	}
	if (plan->modules.count || plan->functions.count || plan->launches.count ||
	    plan->allocs.count)
		return FAIL("section RECD: a plan without a recording has modules, functions, "
		            "launches or allocations");
	if ((err = validate_meta(plan, diag)) != 0 ||
	    (err = validate_dims(plan, diag)) != 0 ||
	    (err = validate_vars(plan, diag)) != 0 ||
	    (err = validate_tensors(plan, diag)) != 0 ||
	    (err = validate_weight_sources(plan, diag)) != 0 ||
	    (err = validate_ops(plan, diag)) != 0 ||
	    (err = validate_captures(plan, diag)) != 0 ||
	    (err = validate_checks(plan, diag)) != 0 ||
	    (err = validate_dispatch(plan, diag)) != 0 ||
	    (err = validate_choices(plan, diag)) != 0)
		return err;
	return PLAN_OK;
}

/* ---------------------------------------------------------------------- */
/* Tensor parallelism (1.5).                                               */

static int validate_dist(const plan_t *plan, struct plan_diag *diag)
{
	const struct plan_dist *d = &plan->dist;

	if (d->world == 0 || d->rank >= d->world)
		return FAIL("section DIST: rank %u of a world of %u", d->rank, d->world);
	if (d->flags != 0)
		return FAIL("section DIST: unknown flags 0x%x", d->flags);
	return PLAN_OK;
}

/* What every rank of a world agrees on, rank R against rank 0 (P0): the
 * world, NCCL, backend, dims and vars, the tensors by name, dtype, role
 * and split (axis, unit, blocks' full sizes), the variants' keys in order,
 * and the ops in count and kinds (every rank launches the same
 * collectives in the same order, or the world hangs). */
static int validate_rank_agrees(const plan_t *p0, const plan_t *p, uint32_t r,
                                struct plan_diag *diag)
{
	const struct plan_dist *d0 = &p0->dist, *d = &p->dist;

	if (d->world != d0->world || d->rank != r)
		return FAIL("rank %u: the plan says rank %u of a world of %u", r, d->rank, d->world);
	if (d->nccl_version != d0->nccl_version)
		return FAIL("rank %u: NCCL version %d, rank 0's is %d", r, (int)d->nccl_version,
		            (int)d0->nccl_version);
	if (d->nccl_mem != d0->nccl_mem)
		return FAIL("rank %u: collectives in %s memory, rank 0's in %s memory", r,
		            d->nccl_mem ? "symmetric" : "default",
		            d0->nccl_mem ? "symmetric" : "default");
	if (p->meta.backend != p0->meta.backend || p->recorded != p0->recorded)
		return FAIL("rank %u: a %s %s plan, rank 0's a %s %s plan", r,
		            plan_backend_name(p->meta.backend), p->recorded ? "recorded" : "script",
		            plan_backend_name(p0->meta.backend), p0->recorded ? "recorded" : "script");
	if (p->dims.count != p0->dims.count)
		return FAIL("rank %u: %u dims, rank 0 has %u", r, p->dims.count, p0->dims.count);
	for (uint32_t i = 0; i < p->dims.count; i++) {
		const struct plan_dim *x = AT(p0->dims, struct plan_dim, i);
		const struct plan_dim *y = AT(p->dims, struct plan_dim, i);
		if (strcmp(x->name, y->name) != 0 || x->value != y->value || x->flags != y->flags)
			return FAIL("rank %u: dim %u is %.64s = %lld, rank 0's %.64s = %lld", r, i,
			            y->name, (long long)y->value, x->name, (long long)x->value);
	}
	if (p->vars.count != p0->vars.count)
		return FAIL("rank %u: %u vars, rank 0 has %u", r, p->vars.count, p0->vars.count);
	for (uint32_t i = 0; i < p->vars.count; i++) {
		const struct plan_var *x = AT(p0->vars, struct plan_var, i);
		const struct plan_var *y = AT(p->vars, struct plan_var, i);
		if (strcmp(x->name, y->name) != 0 || x->start != y->start || x->step != y->step ||
		    x->limit != y->limit)
			return FAIL("rank %u: var %u (%.64s) is not rank 0's (%.64s)", r, i, y->name,
			            x->name);
	}
	if (p->tensors.count != p0->tensors.count)
		return FAIL("rank %u: %u tensors, rank 0 has %u", r, p->tensors.count,
		            p0->tensors.count);
	for (uint32_t i = 0; i < p->tensors.count; i++) {
		const struct plan_tensor *x = AT(p0->tensors, struct plan_tensor, i);
		const struct plan_tensor *y = AT(p->tensors, struct plan_tensor, i);
		const struct plan_split *sx = &x->split, *sy = &y->split;
		int same = strcmp(x->name, y->name) == 0 && x->dtype == y->dtype &&
		           x->role == y->role && x->rank == y->rank && sx->nblocks == sy->nblocks;
		if (same && sx->nblocks != 0) {
			same = sx->axis == sy->axis && sx->unit == sy->unit;
			for (uint32_t k = 0; same && k < sx->nblocks; k++)
				same = sx->block[k].full == sy->block[k].full;
		}
		if (!same)
			return FAIL("rank %u: tensor %u (%.64s) is not rank 0's (%.64s) in name, dtype, "
			            "role, rank or split", r, i, y->name, x->name);
	}
	if (p->variants.count != p0->variants.count)
		return FAIL("rank %u: %u variants, rank 0 has %u", r, p->variants.count,
		            p0->variants.count);
	for (uint32_t i = 0; i < p->variants.count; i++) {
		const struct plan_variant *x = variant_at(p0, i), *y = variant_at(p, i);
		if (x->tokens != y->tokens || x->requests != y->requests ||
		    x->key_flags != y->key_flags)
			return FAIL("rank %u: variant %u has key %lld x%u%s, rank 0's %lld x%u%s", r, i,
			            (long long)y->tokens, y->requests,
			            (y->key_flags & PLAN_KEY_UNIFORM) ? " uniform" : "",
			            (long long)x->tokens, x->requests,
			            (x->key_flags & PLAN_KEY_UNIFORM) ? " uniform" : "");
	}
	if (p->ops.count != p0->ops.count)
		return FAIL("rank %u: %u ops, rank 0 has %u", r, p->ops.count, p0->ops.count);
	for (uint32_t i = 0; i < p->ops.count; i++) {
		const struct plan_op *x = AT(p0->ops, struct plan_op, i);
		const struct plan_op *y = AT(p->ops, struct plan_op, i);
		if (strcmp(x->kind, y->kind) != 0)
			return FAIL("rank %u: op %u is a %.64s, rank 0's a %.64s", r, i, y->kind, x->kind);
	}
	return PLAN_OK;
}

/*
 * A plan and, for rank 0 of a world of two or more, every other rank:
 * each attached once (the model sees to that), each valid alone and
 * agreeing with rank 0. A plan of another rank, alone, is checked alone:
 * it is what a RANK section holds.
 */
int plan_validate(const plan_t *plan, struct plan_diag *diag)
{
	struct plan_diag d;
	int err;

	if (plan == NULL)
		return FAIL("no plan");
	if ((err = validate_one(plan, diag)) != 0)
		return err;
	if (plan->dist.rank != 0 || plan->dist.world == 1) {
		if (plan->nranks != 0 && plan_count_ranks(plan) != 0)
			return FAIL("section RANK: rank %u of a world of %u holds other ranks",
			            plan->dist.rank, plan->dist.world);
		return PLAN_OK;
	}
	for (uint32_t r = 1; r < plan->dist.world; r++) {
		const plan_t *p = r - 1 < plan->nranks ? plan->ranks[r - 1] : NULL;
		if (p == NULL)
			return FAIL("section RANK: rank %u of a world of %u is not attached", r,
			            plan->dist.world);
		if (p->nranks != 0 && plan_count_ranks(p) != 0)
			return FAIL("section RANK: rank %u holds ranks of its own", r);
		if ((err = validate_one(p, &d)) != 0)
			return plan__fail(diag, err, "rank %u: %s", r, d.message);
		if ((err = validate_rank_agrees(plan, p, r, diag)) != 0)
			return err;
	}
	return PLAN_OK;
}
