/*
 * model.c - the plan in memory: storage, building and read-only access.
 *
 * Records live in growable arrays; the strings and small arrays they point
 * to live in a pool freed with the plan, so a record, once added, is a
 * self-contained deep copy of what the caller passed.
 */
#include "config.h"

#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---------------------------------------------------------------------- */
/* Pool and vectors.                                                       */

#define POOL_CHUNK_MIN (64u * 1024u)

struct plan_pool_chunk {
	struct plan_pool_chunk *next;
	size_t                  used;
	size_t                  size;
	alignas(max_align_t) unsigned char data[];
};

void *plan__pool_alloc(plan_t *plan, size_t bytes)
{
	const size_t align = alignof(max_align_t);
	struct plan_pool_chunk *c = plan->pool;
	size_t need = (bytes + align - 1) & ~(align - 1);

	if (need < bytes)
		return NULL;
	if (c == NULL || c->size - c->used < need) {
		size_t size = need > POOL_CHUNK_MIN ? need : POOL_CHUNK_MIN;
		if (size > SIZE_MAX - sizeof *c)
			return NULL;
		c = malloc(sizeof *c + size);
		if (c == NULL)
			return NULL;
		c->used = 0;
		c->size = size;
		/* A large request gets a chunk of its own behind the current
		 * one, so the current chunk's free space is not abandoned. */
		if (plan->pool != NULL && need > POOL_CHUNK_MIN) {
			c->next = plan->pool->next;
			plan->pool->next = c;
		} else {
			c->next = plan->pool;
			plan->pool = c;
		}
	}
	void *p = c->data + c->used;
	c->used += need;
	memset(p, 0, bytes);
	return p;
}

const char *plan__pool_strdup(plan_t *plan, const char *s)
{
	if (s == NULL || s[0] == '\0')
		return "";
	size_t n = strlen(s) + 1;
	char *d = plan__pool_alloc(plan, n);
	return d ? memcpy(d, s, n) : NULL;
}

void *plan__pool_memdup(plan_t *plan, const void *src, size_t n, size_t size)
{
	if (n == 0)
		return NULL;
	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	void *d = plan__pool_alloc(plan, n * size);
	return d ? memcpy(d, src, n * size) : NULL;
}

void *plan__vec_push(struct plan_vec *vec, size_t size)
{
	if (vec->count == vec->cap) {
		uint32_t cap = vec->cap ? vec->cap : 8;
		if (vec->cap >= UINT32_MAX / 2)
			return NULL;
		if (vec->cap)
			cap = vec->cap * 2;
		if ((size_t)cap > SIZE_MAX / size)
			return NULL;
		void *d = realloc(vec->data, (size_t)cap * size);
		if (d == NULL)
			return NULL;
		vec->data = d;
		vec->cap = cap;
	}
	if (vec->count == UINT32_MAX - 1)
		return NULL;
	void *p = (unsigned char *)vec->data + (size_t)vec->count * size;
	memset(p, 0, size);
	vec->count++;
	return p;
}

int plan__fail(struct plan_diag *diag, int code, const char *fmt, ...)
{
	if (diag != NULL) {
		va_list ap;
		diag->code = code;
		va_start(ap, fmt);
		vsnprintf(diag->message, sizeof diag->message, fmt, ap);
		va_end(ap);
	}
	return code;
}

#define NOMEM(diag) plan__fail(diag, PLAN_ERR_NOMEM, "out of memory")
#define AT(vec, type, i) (&((type *)(vec).data)[i])

/* ---------------------------------------------------------------------- */
/* Life cycle.                                                             */

plan_t *plan_new(void)
{
	plan_t *plan = calloc(1, sizeof *plan);

	if (plan == NULL)
		return NULL;
	plan->meta.tool = "";
	plan->meta.script = "";
	plan->meta.device = "";
	plan->layout.alignment = 256;
	plan->format_major = PLAN_FORMAT_MAJOR;
	plan->format_minor = PLAN_FORMAT_MINOR;
	return plan;
}

void plan_free(plan_t *plan)
{
	if (plan == NULL)
		return;
	for (uint32_t i = 0; i < plan->variants.count; i++)
		free(AT(plan->variants, struct plan_variant_rec, i)->items.data);
	free(plan->dims.data);
	free(plan->vars.data);
	free(plan->tensors.data);
	free(plan->ops.data);
	free(plan->variants.data);
	free(plan->segments.data);
	free(plan->breakpoints.data);
	free(plan->checks.data);
	free(plan->dispatch.data);
	free(plan->choices.data);
	free(plan->wsrc.data);
	while (plan->pool != NULL) {
		struct plan_pool_chunk *next = plan->pool->next;
		free(plan->pool);
		plan->pool = next;
	}
	free(plan);
}

plan_t *plan_clone_program(const plan_t *src)
{
	plan_t *plan = plan_new();
	uint32_t i;

	if (plan == NULL)
		return NULL;
	if (plan_set_meta(plan, &src->meta, NULL) != 0 ||
	    plan_set_layout(plan, &src->layout, NULL) != 0)
		goto fail;
	for (i = 0; i < src->dims.count; i++)
		if (plan_add_dim(plan, AT(src->dims, struct plan_dim, i), NULL, NULL) != 0)
			goto fail;
	for (i = 0; i < src->vars.count; i++)
		if (plan_add_var(plan, AT(src->vars, struct plan_var, i), NULL, NULL) != 0)
			goto fail;
	for (i = 0; i < src->tensors.count; i++)
		if (plan_add_tensor(plan, AT(src->tensors, struct plan_tensor, i), NULL, NULL) != 0)
			goto fail;
	for (i = 0; i < src->ops.count; i++)
		if (plan_add_op(plan, AT(src->ops, struct plan_op, i), NULL, NULL) != 0)
			goto fail;
	for (i = 0; i < src->wsrc.count; i++)
		if (plan_add_weight_source(plan, AT(src->wsrc, struct plan_weight_source, i),
		                           NULL, NULL) != 0)
			goto fail;
	return plan;
fail:
	plan_free(plan);
	return NULL;
}

int plan_add_weight_source(plan_t *plan, const struct plan_weight_source *src, uint32_t *index,
                           struct plan_diag *diag)
{
	struct plan_weight_source w = *src;
	struct plan_weight_source *slot;

	if (w.tensor >= plan->tensors.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "weight source: tensor %u of %u",
		                  w.tensor, plan->tensors.count);
	if ((w.file = plan__pool_strdup(plan, src->file)) == NULL ||
	    (w.name = plan__pool_strdup(plan, src->name)) == NULL)
		return plan__fail(diag, PLAN_ERR_NOMEM, "out of memory");
	if ((slot = plan__vec_push(&plan->wsrc, sizeof *slot)) == NULL)
		return plan__fail(diag, PLAN_ERR_NOMEM, "out of memory");
	*slot = w;
	if (index != NULL)
		*index = plan->wsrc.count - 1;
	return PLAN_OK;
}

int plan_set_weight_hash(plan_t *plan, uint32_t index, uint64_t hash, struct plan_diag *diag)
{
	struct plan_weight_source *w;

	if (index >= plan->wsrc.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "weight source %u of %u", index,
		                  plan->wsrc.count);
	w = AT(plan->wsrc, struct plan_weight_source, index);
	w->hash = hash;
	w->flags |= PLAN_WSRC_HASHED;
	return PLAN_OK;
}

/* ---------------------------------------------------------------------- */
/* Setting the plan-wide records.                                          */

int plan_set_meta(plan_t *plan, const struct plan_meta *meta, struct plan_diag *diag)
{
	struct plan_meta m = *meta;

	if (meta->backend != 0 && (meta->backend < PLAN_BACKEND_HOST || meta->backend > PLAN_BACKEND_CUDA))
		return plan__fail(diag, PLAN_ERR_INVALID, "meta: unknown backend %d", meta->backend);
	m.tool = plan__pool_strdup(plan, meta->tool);
	m.script = plan__pool_strdup(plan, meta->script);
	m.device = plan__pool_strdup(plan, meta->device);
	if (m.tool == NULL || m.script == NULL || m.device == NULL)
		return NOMEM(diag);
	plan->meta = m;
	return PLAN_OK;
}

int plan_set_layout(plan_t *plan, const struct plan_layout *layout, struct plan_diag *diag)
{
	uint32_t a = layout->alignment;

	if (a == 0 || (a & (a - 1)) != 0)
		return plan__fail(diag, PLAN_ERR_INVALID,
		                  "layout: alignment %u is not a power of two", a);
	plan->layout = *layout;
	return PLAN_OK;
}

int plan_set_stats(plan_t *plan, const struct plan_stats *stats, struct plan_diag *diag)
{
	(void)diag;
	plan->stats = *stats;
	return PLAN_OK;
}

/* ---------------------------------------------------------------------- */
/* Adding records.                                                         */

static int check_tensor_list(const plan_t *plan, const uint32_t *list, uint32_t n,
                             const char *what, struct plan_diag *diag)
{
	if (n > 0 && list == NULL)
		return plan__fail(diag, PLAN_ERR_INVALID, "%s: %u tensors but no list", what, n);
	for (uint32_t i = 0; i < n; i++)
		if (list[i] >= plan->tensors.count)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "%s: tensor index %u out of range (%u tensors)",
			                  what, list[i], plan->tensors.count);
	return PLAN_OK;
}

int plan_add_dim(plan_t *plan, const struct plan_dim *dim, uint32_t *index, struct plan_diag *diag)
{
	struct plan_dim d = *dim;

	d.name = plan__pool_strdup(plan, dim->name);
	d.expr = plan__pool_strdup(plan, dim->expr);
	if (d.name == NULL || d.expr == NULL)
		return NOMEM(diag);
	struct plan_dim *slot = plan__vec_push(&plan->dims, sizeof d);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = d;
	if (index != NULL)
		*index = plan->dims.count - 1;
	return PLAN_OK;
}

int plan_add_var(plan_t *plan, const struct plan_var *var, uint32_t *index, struct plan_diag *diag)
{
	struct plan_var v = *var;

	if (var->step < 0 || var->limit < var->start)
		return plan__fail(diag, PLAN_ERR_INVALID,
		                  "var %s: needs step >= 0 and limit >= start", var->name ? var->name : "");
	v.name = plan__pool_strdup(plan, var->name);
	if (v.name == NULL)
		return NOMEM(diag);
	struct plan_var *slot = plan__vec_push(&plan->vars, sizeof v);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = v;
	if (index != NULL)
		*index = plan->vars.count - 1;
	return PLAN_OK;
}

int plan_add_tensor(plan_t *plan, const struct plan_tensor *tensor, uint32_t *index,
                    struct plan_diag *diag)
{
	struct plan_tensor t = *tensor;
	const char *name = tensor->name ? tensor->name : "";

	if (plan_dtype_size(t.dtype) == 0)
		return plan__fail(diag, PLAN_ERR_INVALID, "tensor %s: unknown dtype %d", name, t.dtype);
	if (t.role < PLAN_ROLE_WEIGHT || t.role > PLAN_ROLE_ACTIVATION)
		return plan__fail(diag, PLAN_ERR_INVALID, "tensor %s: unknown role %d", name, t.role);
	if (t.rank < 1 || t.rank > PLAN_MAX_RANK)
		return plan__fail(diag, PLAN_ERR_INVALID, "tensor %s: rank %u not in 1..%d",
		                  name, t.rank, PLAN_MAX_RANK);
	for (uint32_t i = 0; i < t.rank; i++)
		if (t.shape[i].dim != PLAN_NONE && t.shape[i].dim >= plan->dims.count)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "tensor %s: axis %u names dim %u of %u", name, i,
			                  t.shape[i].dim, plan->dims.count);
	for (uint32_t i = t.rank; i < PLAN_MAX_RANK; i++) {
		t.shape[i].dim = PLAN_NONE;
		t.shape[i].size = 0;
	}
	if (t.feed.kind != PLAN_FEED_NONE && t.feed.var != PLAN_NONE && t.feed.var >= plan->vars.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "tensor %s: feed names var %u of %u",
		                  name, t.feed.var, plan->vars.count);
	t.name = plan__pool_strdup(plan, name);
	if (t.name == NULL)
		return NOMEM(diag);
	struct plan_tensor *slot = plan__vec_push(&plan->tensors, sizeof t);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = t;
	if (index != NULL)
		*index = plan->tensors.count - 1;
	return PLAN_OK;
}

int plan_add_op(plan_t *plan, const struct plan_op *op, uint32_t *index, struct plan_diag *diag)
{
	struct plan_op o = *op;
	struct plan_attr *attrs = NULL;
	int err;

	if ((err = check_tensor_list(plan, op->in, op->nin, "op inputs", diag)) != 0 ||
	    (err = check_tensor_list(plan, op->out, op->nout, "op outputs", diag)) != 0)
		return err;
	if (op->nattr > 0 && op->attr == NULL)
		return plan__fail(diag, PLAN_ERR_INVALID, "op: %u attributes but no list", op->nattr);
	o.kind = plan__pool_strdup(plan, op->kind);
	o.name = plan__pool_strdup(plan, op->name);
	o.in = plan__pool_memdup(plan, op->in, op->nin, sizeof *op->in);
	o.out = plan__pool_memdup(plan, op->out, op->nout, sizeof *op->out);
	if (op->nattr > 0) {
		attrs = plan__pool_memdup(plan, op->attr, op->nattr, sizeof *op->attr);
		if (attrs == NULL)
			return NOMEM(diag);
		for (uint32_t i = 0; i < op->nattr; i++) {
			const struct plan_attr *a = &op->attr[i];
			if (a->type < PLAN_ATTR_INT || a->type > PLAN_ATTR_STR)
				return plan__fail(diag, PLAN_ERR_INVALID, "op %s: attribute %s has type %d",
				                  o.name ? o.name : "", a->key ? a->key : "", a->type);
			if (a->type == PLAN_ATTR_VAR && (a->i < 0 || (uint64_t)a->i >= plan->vars.count))
				return plan__fail(diag, PLAN_ERR_INVALID, "op %s: attribute %s names var %lld of %u",
				                  o.name ? o.name : "", a->key ? a->key : "",
				                  (long long)a->i, plan->vars.count);
			attrs[i].key = plan__pool_strdup(plan, a->key);
			attrs[i].s = plan__pool_strdup(plan, a->type == PLAN_ATTR_STR ? a->s : "");
			if (attrs[i].key == NULL || attrs[i].s == NULL)
				return NOMEM(diag);
		}
	}
	o.attr = attrs;
	if (o.kind == NULL || o.name == NULL || (op->nin && o.in == NULL) || (op->nout && o.out == NULL))
		return NOMEM(diag);
	struct plan_op *slot = plan__vec_push(&plan->ops, sizeof o);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = o;
	if (index != NULL)
		*index = plan->ops.count - 1;
	return PLAN_OK;
}

int plan_add_variant(plan_t *plan, const struct plan_variant *variant, uint32_t *index,
                     struct plan_diag *diag)
{
	if (variant->mode < PLAN_MODE_BREAKABLE || variant->mode > PLAN_MODE_EAGER)
		return plan__fail(diag, PLAN_ERR_INVALID, "variant %lld: unknown mode %d",
		                  (long long)variant->tokens, variant->mode);
	if (variant->tokens < 1)
		return plan__fail(diag, PLAN_ERR_INVALID, "variant: token count %lld is below 1",
		                  (long long)variant->tokens);
	if (plan_find_variant(plan, variant->tokens) != PLAN_NONE)
		return plan__fail(diag, PLAN_ERR_INVALID, "variant %lld: added twice",
		                  (long long)variant->tokens);
	struct plan_variant_rec *slot = plan__vec_push(&plan->variants, sizeof *slot);
	if (slot == NULL)
		return NOMEM(diag);
	slot->pub = *variant;
	slot->pub.nitems = 0;
	slot->pub.items = NULL;
	if (index != NULL)
		*index = plan->variants.count - 1;
	return PLAN_OK;
}

int plan__variant_push_item(plan_t *plan, uint32_t variant, int kind, uint32_t index,
                            struct plan_diag *diag)
{
	struct plan_variant_rec *v;
	struct plan_item *item;

	if (variant >= plan->variants.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "item: variant %u of %u",
		                  variant, plan->variants.count);
	v = AT(plan->variants, struct plan_variant_rec, variant);
	item = plan__vec_push(&v->items, sizeof *item);
	if (item == NULL)
		return NOMEM(diag);
	item->kind = kind;
	item->index = index;
	v->pub.items = v->items.data;
	v->pub.nitems = v->items.count;
	return PLAN_OK;
}

int plan__variant_set_items(plan_t *plan, uint32_t variant, const struct plan_item *items,
                            uint32_t n, struct plan_diag *diag)
{
	struct plan_variant_rec *v;
	int err;

	if (variant >= plan->variants.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "items: variant %u of %u",
		                  variant, plan->variants.count);
	v = AT(plan->variants, struct plan_variant_rec, variant);
	v->items.count = 0;
	v->pub.nitems = 0;
	for (uint32_t i = 0; i < n; i++)
		if ((err = plan__variant_push_item(plan, variant, items[i].kind, items[i].index,
		                                   diag)) != 0)
			return err;
	return PLAN_OK;
}

int plan_add_segment(plan_t *plan, const struct plan_segment *segment, uint32_t *index,
                     struct plan_diag *diag)
{
	struct plan_segment s = *segment;
	struct plan_node *nodes = NULL;
	int err;

	if (s.variant >= plan->variants.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "segment: variant %u of %u",
		                  s.variant, plan->variants.count);
	if (s.op_count == 0 || s.op_first >= plan->ops.count ||
	    s.op_count > plan->ops.count - s.op_first)
		return plan__fail(diag, PLAN_ERR_INVALID, "segment: ops [%u, +%u) outside the %u ops",
		                  s.op_first, s.op_count, plan->ops.count);
	if ((s.nnodes && s.nodes == NULL) || (s.nedges && s.edges == NULL))
		return plan__fail(diag, PLAN_ERR_INVALID, "segment: counts without arrays");
	for (uint32_t i = 0; i < s.nedges; i++)
		if (s.edges[i].from >= s.nnodes || s.edges[i].to >= s.nnodes)
			return plan__fail(diag, PLAN_ERR_INVALID, "segment: edge %u names node %u/%u of %u",
			                  i, s.edges[i].from, s.edges[i].to, s.nnodes);
	if (s.nnodes > 0) {
		nodes = plan__pool_memdup(plan, s.nodes, s.nnodes, sizeof *s.nodes);
		if (nodes == NULL)
			return NOMEM(diag);
		for (uint32_t i = 0; i < s.nnodes; i++) {
			const struct plan_node *n = &segment->nodes[i];
			if (n->nparams && n->params == NULL)
				return plan__fail(diag, PLAN_ERR_INVALID, "segment: node %u params missing", i);
			nodes[i].kernel = plan__pool_strdup(plan, n->kernel);
			nodes[i].params = plan__pool_memdup(plan, n->params, n->nparams, sizeof *n->params);
			if (nodes[i].kernel == NULL || (n->nparams && nodes[i].params == NULL))
				return NOMEM(diag);
		}
	}
	s.nodes = nodes;
	s.edges = plan__pool_memdup(plan, segment->edges, s.nedges, sizeof *s.edges);
	if (s.nedges && s.edges == NULL)
		return NOMEM(diag);
	struct plan_segment *slot = plan__vec_push(&plan->segments, sizeof s);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = s;
	if ((err = plan__variant_push_item(plan, s.variant, PLAN_ITEM_SEGMENT,
	                                   plan->segments.count - 1, diag)) != 0) {
		plan->segments.count--;
		return err;
	}
	if (index != NULL)
		*index = plan->segments.count - 1;
	return PLAN_OK;
}

int plan_add_breakpoint(plan_t *plan, const struct plan_breakpoint *bp, uint32_t *index,
                        struct plan_diag *diag)
{
	struct plan_breakpoint b = *bp;
	int err;

	if (b.variant >= plan->variants.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "breakpoint: variant %u of %u",
		                  b.variant, plan->variants.count);
	if (b.op >= plan->ops.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "breakpoint: op %u of %u",
		                  b.op, plan->ops.count);
	if (b.reason < PLAN_BREAK_KIND || b.reason > PLAN_BREAK_MODE)
		return plan__fail(diag, PLAN_ERR_INVALID, "breakpoint: unknown reason %d", b.reason);
	if ((err = check_tensor_list(plan, bp->reads, bp->nreads, "breakpoint reads", diag)) != 0 ||
	    (err = check_tensor_list(plan, bp->writes, bp->nwrites, "breakpoint writes", diag)) != 0)
		return err;
	b.name = plan__pool_strdup(plan, bp->name);
	b.detail = plan__pool_strdup(plan, bp->detail);
	b.reads = plan__pool_memdup(plan, bp->reads, bp->nreads, sizeof *bp->reads);
	b.writes = plan__pool_memdup(plan, bp->writes, bp->nwrites, sizeof *bp->writes);
	if (b.name == NULL || b.detail == NULL || (b.nreads && b.reads == NULL) ||
	    (b.nwrites && b.writes == NULL))
		return NOMEM(diag);
	struct plan_breakpoint *slot = plan__vec_push(&plan->breakpoints, sizeof b);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = b;
	if ((err = plan__variant_push_item(plan, b.variant, PLAN_ITEM_BREAK,
	                                   plan->breakpoints.count - 1, diag)) != 0) {
		plan->breakpoints.count--;
		return err;
	}
	if (index != NULL)
		*index = plan->breakpoints.count - 1;
	return PLAN_OK;
}

int plan_add_check(plan_t *plan, const struct plan_check *check, uint32_t *index,
                   struct plan_diag *diag)
{
	if (check->variant >= plan->variants.count || check->tensor >= plan->tensors.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "check: variant %u / tensor %u out of range",
		                  check->variant, check->tensor);
	struct plan_check *slot = plan__vec_push(&plan->checks, sizeof *slot);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = *check;
	if (index != NULL)
		*index = plan->checks.count - 1;
	return PLAN_OK;
}

int plan_add_dispatch(plan_t *plan, const struct plan_dispatch *entry, uint32_t *index,
                      struct plan_diag *diag)
{
	if (entry->tokens_min < 1 || entry->tokens_max < entry->tokens_min)
		return plan__fail(diag, PLAN_ERR_INVALID, "dispatch: empty range [%lld, %lld]",
		                  (long long)entry->tokens_min, (long long)entry->tokens_max);
	if (entry->variant != PLAN_NONE && entry->variant >= plan->variants.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "dispatch: variant %u of %u",
		                  entry->variant, plan->variants.count);
	struct plan_dispatch *slot = plan__vec_push(&plan->dispatch, sizeof *slot);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = *entry;
	if (index != NULL)
		*index = plan->dispatch.count - 1;
	return PLAN_OK;
}

int plan_add_choice(plan_t *plan, const struct plan_choice *choice, uint32_t *index,
                    struct plan_diag *diag)
{
	struct plan_choice c = *choice;
	struct plan_candidate *cand = NULL;

	if (c.variant >= plan->variants.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "choice: variant %u of %u",
		                  c.variant, plan->variants.count);
	if (c.op >= plan->ops.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "choice: op %u of %u", c.op, plan->ops.count);
	if (c.ncand > 0 && c.cand == NULL)
		return plan__fail(diag, PLAN_ERR_INVALID, "choice: %u candidates but no list", c.ncand);
	if (c.ncand > 0) {
		cand = plan__pool_memdup(plan, choice->cand, c.ncand, sizeof *cand);
		if (cand == NULL)
			return NOMEM(diag);
		for (uint32_t i = 0; i < c.ncand; i++)
			if ((cand[i].impl = plan__pool_strdup(plan, choice->cand[i].impl)) == NULL)
				return NOMEM(diag);
	}
	c.cand = cand;
	if ((c.impl = plan__pool_strdup(plan, choice->impl)) == NULL)
		return NOMEM(diag);
	struct plan_choice *slot = plan__vec_push(&plan->choices, sizeof *slot);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = c;
	if (index != NULL)
		*index = plan->choices.count - 1;
	return PLAN_OK;
}

/* ---------------------------------------------------------------------- */
/* Placement and timing.                                                   */

int plan_set_tensor_feed(plan_t *plan, uint32_t tensor, const struct plan_feed *feed,
                         struct plan_diag *diag)
{
	if (tensor >= plan->tensors.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "tensor %u of %u", tensor,
		                  plan->tensors.count);
	AT(plan->tensors, struct plan_tensor, tensor)->feed = *feed;
	return PLAN_OK;
}

int plan_set_tensor_placement(plan_t *plan, uint32_t tensor, uint64_t offset, uint64_t bytes,
                              struct plan_diag *diag)
{
	if (tensor >= plan->tensors.count)
		return plan__fail(diag, PLAN_ERR_NOT_FOUND, "tensor %u of %u", tensor, plan->tensors.count);
	struct plan_tensor *t = AT(plan->tensors, struct plan_tensor, tensor);
	t->offset = offset;
	t->bytes = bytes;
	return PLAN_OK;
}

int plan_set_var_offset(plan_t *plan, uint32_t var, uint64_t offset, struct plan_diag *diag)
{
	if (var >= plan->vars.count)
		return plan__fail(diag, PLAN_ERR_NOT_FOUND, "var %u of %u", var, plan->vars.count);
	AT(plan->vars, struct plan_var, var)->offset = offset;
	return PLAN_OK;
}

int plan_set_variant_peak(plan_t *plan, uint32_t variant, uint64_t peak_bytes,
                          struct plan_diag *diag)
{
	if (variant >= plan->variants.count)
		return plan__fail(diag, PLAN_ERR_NOT_FOUND, "variant %u of %u",
		                  variant, plan->variants.count);
	AT(plan->variants, struct plan_variant_rec, variant)->pub.peak_bytes = peak_bytes;
	return PLAN_OK;
}

int plan_set_segment_times(plan_t *plan, uint32_t segment, uint64_t capture_ns,
                           uint64_t instantiate_ns, struct plan_diag *diag)
{
	if (segment >= plan->segments.count)
		return plan__fail(diag, PLAN_ERR_NOT_FOUND, "segment %u of %u",
		                  segment, plan->segments.count);
	struct plan_segment *s = AT(plan->segments, struct plan_segment, segment);
	s->capture_ns = capture_ns;
	s->instantiate_ns = instantiate_ns;
	return PLAN_OK;
}

/* ---------------------------------------------------------------------- */
/* Reading.                                                                */

const struct plan_meta *plan_get_meta(const plan_t *plan) { return &plan->meta; }
const struct plan_layout *plan_get_layout(const plan_t *plan) { return &plan->layout; }
const struct plan_stats *plan_get_stats(const plan_t *plan) { return &plan->stats; }

void plan_get_format_version(const plan_t *plan, unsigned *major, unsigned *minor)
{
	if (major != NULL)
		*major = plan->format_major;
	if (minor != NULL)
		*minor = plan->format_minor;
}

#define COUNT_AND_GET(name, field, type)                                        \
	uint32_t plan_count_##field(const plan_t *plan)                         \
	{                                                                       \
		return plan->field.count;                                       \
	}                                                                       \
	const type *plan_get_##name(const plan_t *plan, uint32_t index)         \
	{                                                                       \
		return index < plan->field.count ? AT(plan->field, type, index) : NULL; \
	}

COUNT_AND_GET(dim, dims, struct plan_dim)
COUNT_AND_GET(var, vars, struct plan_var)
COUNT_AND_GET(tensor, tensors, struct plan_tensor)
COUNT_AND_GET(op, ops, struct plan_op)
COUNT_AND_GET(segment, segments, struct plan_segment)
COUNT_AND_GET(breakpoint, breakpoints, struct plan_breakpoint)
COUNT_AND_GET(check, checks, struct plan_check)
COUNT_AND_GET(dispatch, dispatch, struct plan_dispatch)
COUNT_AND_GET(choice, choices, struct plan_choice)
uint32_t plan_count_weight_sources(const plan_t *plan)
{
	return plan->wsrc.count;
}

const struct plan_weight_source *plan_get_weight_source(const plan_t *plan, uint32_t index)
{
	return index < plan->wsrc.count ? AT(plan->wsrc, struct plan_weight_source, index) : NULL;
}

const struct plan_choice *plan_find_choice(const plan_t *plan, uint32_t variant, uint32_t op)
{
	for (uint32_t i = 0; i < plan->choices.count; i++) {
		const struct plan_choice *c = AT(plan->choices, struct plan_choice, i);
		if (c->variant == variant && c->op == op)
			return c;
	}
	return NULL;
}

uint32_t plan_count_variants(const plan_t *plan)
{
	return plan->variants.count;
}

const struct plan_variant *plan_get_variant(const plan_t *plan, uint32_t index)
{
	if (index >= plan->variants.count)
		return NULL;
	return &AT(plan->variants, struct plan_variant_rec, index)->pub;
}

uint32_t plan_find_dim(const plan_t *plan, const char *name)
{
	for (uint32_t i = 0; i < plan->dims.count; i++)
		if (strcmp(AT(plan->dims, struct plan_dim, i)->name, name) == 0)
			return i;
	return PLAN_NONE;
}

uint32_t plan_find_var(const plan_t *plan, const char *name)
{
	for (uint32_t i = 0; i < plan->vars.count; i++)
		if (strcmp(AT(plan->vars, struct plan_var, i)->name, name) == 0)
			return i;
	return PLAN_NONE;
}

uint32_t plan_find_tensor(const plan_t *plan, const char *name)
{
	for (uint32_t i = 0; i < plan->tensors.count; i++)
		if (strcmp(AT(plan->tensors, struct plan_tensor, i)->name, name) == 0)
			return i;
	return PLAN_NONE;
}

uint32_t plan_find_variant(const plan_t *plan, int64_t tokens)
{
	for (uint32_t i = 0; i < plan->variants.count; i++)
		if (AT(plan->variants, struct plan_variant_rec, i)->pub.tokens == tokens)
			return i;
	return PLAN_NONE;
}

uint32_t plan_token_dim(const plan_t *plan)
{
	for (uint32_t i = 0; i < plan->dims.count; i++)
		if (AT(plan->dims, struct plan_dim, i)->flags & PLAN_DIM_TOKENS)
			return i;
	return PLAN_NONE;
}

uint32_t plan_dispatch_lookup_key(const plan_t *plan, int64_t tokens, uint32_t requests,
                                  int uniform)
{
	for (uint32_t i = 0; i < plan->dispatch.count; i++) {
		const struct plan_dispatch *d = AT(plan->dispatch, struct plan_dispatch, i);
		if (tokens >= d->tokens_min && tokens <= d->tokens_max &&
		    (d->requests_max == 0 || requests <= d->requests_max) &&
		    (!(d->flags & PLAN_DISPATCH_UNIFORM) || uniform))
			return d->variant;
	}
	return PLAN_NONE;
}

int64_t plan_request_dim(const plan_t *plan)
{
	for (uint32_t i = 0; i < plan->tensors.count; i++) {
		const struct plan_tensor *t = AT(plan->tensors, struct plan_tensor, i);
		if (t->feed.kind == PLAN_FEED_SEQ_LENS && t->rank >= 1)
			return plan_axis_size(plan, &t->shape[0], 1);
	}
	return 0;
}

int plan_has_keys(const plan_t *plan)
{
	for (uint32_t i = 0; i < plan->variants.count; i++) {
		const struct plan_variant *v = plan_get_variant(plan, i);
		if (v->requests != 0 || v->key_flags != 0)
			return 1;
	}
	for (uint32_t i = 0; i < plan->dispatch.count; i++) {
		const struct plan_dispatch *d = AT(plan->dispatch, struct plan_dispatch, i);
		if (d->requests_max != 0 || d->flags != 0)
			return 1;
	}
	return 0;
}

uint32_t plan_dispatch_lookup(const plan_t *plan, int64_t tokens)
{
	int64_t rdim = plan_request_dim(plan);
	uint32_t requests;
	int uniform;

	if (tokens < 1)
		return PLAN_NONE;
	/* The default batch: one token a request while the requests last. */
	if (rdim < 1 || tokens <= rdim) {
		requests = tokens > UINT32_MAX ? UINT32_MAX : (uint32_t)tokens;
		uniform = 1;
	} else {
		requests = rdim > UINT32_MAX ? UINT32_MAX : (uint32_t)rdim;
		uniform = 0;
	}
	return plan_dispatch_lookup_key(plan, tokens, requests, uniform);
}

/* (a * b) mod m without overflow, for a, b < m. */
static uint64_t mulmod(uint64_t a, uint64_t b, uint64_t m)
{
	uint64_t r = 0;

	while (b > 0) {
		if (b & 1)
			r = r >= m - a ? r - (m - a) : r + a;
		a = a >= m - a ? a - (m - a) : a + a;
		b >>= 1;
	}
	return r;
}

int64_t plan_var_value(const struct plan_var *var, uint64_t step)
{
	uint64_t span = (uint64_t)var->limit - (uint64_t)var->start + 1u;

	if (var->step <= 0 || var->limit < var->start)
		return var->start;
	if (span == 0)          /* the whole int64 range: no wrap */
		return (int64_t)((uint64_t)var->start + (uint64_t)var->step * step);
	return (int64_t)((uint64_t)var->start +
	                 mulmod((uint64_t)var->step % span, step % span, span));
}

int64_t plan_axis_size(const plan_t *plan, const struct plan_axis *axis, int64_t tokens)
{
	if (axis->dim == PLAN_NONE)
		return axis->size;
	if (axis->dim >= plan->dims.count)
		return 0;
	const struct plan_dim *d = AT(plan->dims, struct plan_dim, axis->dim);
	return (d->flags & PLAN_DIM_TOKENS) ? tokens : d->value;
}

uint64_t plan_tensor_numel(const plan_t *plan, uint32_t tensor, int64_t tokens)
{
	const struct plan_tensor *t = plan_get_tensor(plan, tensor);
	uint64_t n = 1;

	if (t == NULL)
		return 0;
	for (uint32_t i = 0; i < t->rank; i++) {
		int64_t s = plan_axis_size(plan, &t->shape[i], tokens);
		if (s <= 0)
			return 0;
		if (n > UINT64_MAX / (uint64_t)s)
			return UINT64_MAX;
		n *= (uint64_t)s;
	}
	return n;
}

uint64_t plan_tensor_bytes(const plan_t *plan, uint32_t tensor, int64_t tokens)
{
	const struct plan_tensor *t = plan_get_tensor(plan, tensor);
	uint64_t n = plan_tensor_numel(plan, tensor, tokens);
	size_t es = t ? plan_dtype_size(t->dtype) : 0;

	if (es == 0 || n > UINT64_MAX / es)
		return n == 0 ? 0 : UINT64_MAX;
	return n * es;
}
