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
	plan->dist.world = 1;
	plan->format_major = PLAN_FORMAT_MAJOR;
	plan->format_minor = PLAN_FORMAT_MINOR_SCRIPT;
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
	free(plan->shares.data);
	free(plan->modules.data);
	free(plan->functions.data);
	free(plan->launches.data);
	free(plan->allocs.data);
	free(plan->alloc_order.data);
	for (uint32_t r = 0; r < plan->nranks; r++)
		plan_free(plan->ranks[r]);
	free(plan->ranks);
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
	plan->dist = src->dist;    /* the rank it is; other ranks stay behind */
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
	/* A recorded plan's program: the recording and what it recorded. */
	if (src->recorded && plan_set_recording(plan, &src->recording, NULL) != 0)
		goto fail;
	for (i = 0; i < src->modules.count; i++)
		if (plan_add_module(plan, AT(src->modules, struct plan_module, i), NULL, NULL) != 0)
			goto fail;
	for (i = 0; i < src->functions.count; i++)
		if (plan_add_function(plan, AT(src->functions, struct plan_function, i),
		                      NULL, NULL) != 0)
			goto fail;
	for (i = 0; i < src->allocs.count; i++)
		if (plan_add_alloc(plan, AT(src->allocs, struct plan_alloc, i), NULL, NULL) != 0)
			goto fail;
	for (i = 0; i < src->launches.count; i++)
		if (plan_add_launch(plan, AT(src->launches, struct plan_launch, i), NULL, NULL) != 0)
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
	const char *label = plan__pool_strdup(plan, variant->label);
	if (label == NULL)
		return NOMEM(diag);
	if (!plan->recorded && (label[0] != '\0' || variant->seen || variant->recorded_ns ||
	                        variant->device))
		return plan__fail(diag, PLAN_ERR_INVALID,
		                  "variant %lld: a label, steps seen, time or device in a script plan",
		                  (long long)variant->tokens);
	struct plan_variant_rec *slot = plan__vec_push(&plan->variants, sizeof *slot);
	if (slot == NULL)
		return NOMEM(diag);
	slot->pub = *variant;
	slot->pub.label = label;
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
	if (plan->recorded) {
		if (s.op_first != 0 || s.op_count != 0)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "segment: ops [%u, +%u) in a recorded plan", s.op_first,
			                  s.op_count);
	} else if (s.op_count == 0 || s.op_first >= plan->ops.count ||
	           s.op_count > plan->ops.count - s.op_first) {
		return plan__fail(diag, PLAN_ERR_INVALID, "segment: ops [%u, +%u) outside the %u ops",
		                  s.op_first, s.op_count, plan->ops.count);
	}
	if (!plan->recorded && (s.recorded_ns != 0 || s.start_ns != 0 || s.issue_ns != 0))
		return plan__fail(diag, PLAN_ERR_INVALID, "segment: a recorded time in a script plan");
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
			if (plan->recorded && (n->nparams != 0 || n->op != PLAN_NONE))
				return plan__fail(diag, PLAN_ERR_INVALID,
				                  "segment: node %u of a recorded plan has an op or "
				                  "arena parameters", i);
			if (!plan->recorded) {
				nodes[i].launch = PLAN_NONE;
			} else if (n->type == PLAN_NODE_KERNEL || n->type == PLAN_NODE_MEMCPY ||
			           n->type == PLAN_NODE_MEMSET) {
				if (n->launch >= plan->launches.count)
					return plan__fail(diag, PLAN_ERR_INVALID,
					                  "segment: node %u names launch %u of %u", i,
					                  n->launch, plan->launches.count);
				const struct plan_launch *l = AT(plan->launches, struct plan_launch,
				                                 n->launch);
				if (l->type != n->type)
					return plan__fail(diag, PLAN_ERR_INVALID,
					                  "segment: node %u (%s) names launch %u, a %s", i,
					                  plan_node_type_name(n->type), n->launch,
					                  plan_node_type_name(l->type));
			} else if (n->launch != PLAN_NONE) {
				return plan__fail(diag, PLAN_ERR_INVALID,
				                  "segment: node %u (%s) names a launch", i,
				                  plan_node_type_name(n->type));
			}
			if (plan->recorded && n->type == PLAN_NODE_KERNEL) {
				/* The node shows what its launch runs. */
				const struct plan_launch *l = AT(plan->launches, struct plan_launch,
				                                 n->launch);
				nodes[i].kernel = AT(plan->functions, struct plan_function,
				                     l->function)->name;
				memcpy(nodes[i].grid, l->grid, sizeof l->grid);
				memcpy(nodes[i].block, l->block, sizeof l->block);
				nodes[i].shmem = l->shmem;
				nodes[i].params = NULL;
				continue;
			}
			if (plan->recorded) {
				/* Other nodes of a recorded plan carry no kernel. */
				nodes[i].kernel = "";
				memset(nodes[i].grid, 0, sizeof nodes[i].grid);
				memset(nodes[i].block, 0, sizeof nodes[i].block);
				nodes[i].shmem = 0;
				nodes[i].params = NULL;
				continue;
			}
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
	if (plan->recorded) {
		if (b.op != PLAN_NONE || b.reason != PLAN_BREAK_RECORDED || b.nreads || b.nwrites)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "breakpoint: a recorded plan's breakpoint has op PLAN_NONE, "
			                  "reason recorded and no reads or writes");
		if (b.launch_first > plan->launches.count ||
		    b.launch_count > plan->launches.count - b.launch_first)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "breakpoint: launches [%u, +%u) outside the %u launches",
			                  b.launch_first, b.launch_count, plan->launches.count);
	} else {
		if (b.op >= plan->ops.count)
			return plan__fail(diag, PLAN_ERR_INVALID, "breakpoint: op %u of %u",
			                  b.op, plan->ops.count);
		if (b.reason < PLAN_BREAK_KIND || b.reason > PLAN_BREAK_MODE)
			return plan__fail(diag, PLAN_ERR_INVALID, "breakpoint: unknown reason %d",
			                  b.reason);
		if (b.launch_first || b.launch_count || b.recorded_ns || b.start_ns || b.issue_ns)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "breakpoint: launches or a recorded time in a script plan");
	}
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

/* The choice recorded for OP in VARIANT, or NULL. */
static struct plan_choice *choice_find(const plan_t *plan, uint32_t variant, uint32_t op)
{
	for (uint32_t i = 0; i < plan->choices.count; i++) {
		struct plan_choice *c = AT(plan->choices, struct plan_choice, i);
		if (c->variant == variant && c->op == op)
			return c;
	}
	return NULL;
}

int plan__choice_flags_bad(uint32_t flags, const char **mark)
{
	if (flags & ~PLAN__CHOICE_FLAGS)
		return 1;
	if (!(flags & PLAN_CHOICE_TUNED) && (flags & (PLAN_CHOICE_CLOSE | PLAN_CHOICE_STEP))) {
		*mark = flags & PLAN_CHOICE_CLOSE ? "close" : "step";
		return 2;
	}
	return 0;
}

int plan_set_choice(plan_t *plan, uint32_t variant, uint32_t op, const char *impl,
                    uint32_t flags, struct plan_diag *diag)
{
	struct plan_choice *c = choice_find(plan, variant, op);
	const char *name = NULL, *mark = NULL;
	int bad;

	if (c == NULL)
		return plan__fail(diag, PLAN_ERR_NOT_FOUND, "choice: none recorded for op %u in "
		                  "variant %u", op, variant);
	if (impl == NULL || impl[0] == '\0')
		return plan__fail(diag, PLAN_ERR_INVALID, "choice for op %u in variant %u: an empty "
		                  "implementation name", op, variant);
	if ((bad = plan__choice_flags_bad(flags, &mark)) == 1)
		return plan__fail(diag, PLAN_ERR_INVALID, "choice for op %u in variant %u: unknown "
		                  "flags 0x%x", op, variant, flags & ~PLAN__CHOICE_FLAGS);
	if (bad == 2)
		return plan__fail(diag, PLAN_ERR_INVALID, "choice for op %u in variant %u: marked "
		                  "%s but not tuned", op, variant, mark);
	/* A candidate's name is in the pool already: no allocation, so that a
	 * tuner switching between candidates never fails for memory. */
	for (uint32_t k = 0; k < c->ncand && name == NULL; k++)
		if (strcmp(c->cand[k].impl, impl) == 0)
			name = c->cand[k].impl;
	if (c->ncand > 0 && name == NULL)
		return plan__fail(diag, PLAN_ERR_INVALID, "choice for op %u in variant %u: '%.64s' "
		                  "is none of its %u candidates", op, variant, impl, c->ncand);
	if (name == NULL && (name = plan__pool_strdup(plan, impl)) == NULL)
		return NOMEM(diag);
	c->impl = name;
	c->flags = flags;
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
COUNT_AND_GET(share, shares, struct plan_share)

void plan_item_offsets(const plan_t *plan, const struct plan_item *it, uint64_t *start_ns,
                       uint64_t *issue_ns)
{
	uint64_t s = 0, h = 0;

	if (it->kind == PLAN_ITEM_SEGMENT && it->index < plan->segments.count) {
		const struct plan_segment *g = AT(plan->segments, struct plan_segment, it->index);
		s = g->start_ns;
		h = g->issue_ns;
	} else if (it->kind == PLAN_ITEM_BREAK && it->index < plan->breakpoints.count) {
		const struct plan_breakpoint *b = AT(plan->breakpoints, struct plan_breakpoint, it->index);
		s = b->start_ns;
		h = b->issue_ns;
	}
	if (start_ns != NULL)
		*start_ns = s;
	if (issue_ns != NULL)
		*issue_ns = h;
}

unsigned plan_variant_offsets(const plan_t *plan, uint32_t variant, uint32_t *missing)
{
	unsigned have = PLAN_OFFSETS_START | PLAN_OFFSETS_ISSUE;
	uint32_t first = PLAN_NONE;

	if (variant >= plan->variants.count)
		return 0;
	const struct plan_variant *v = &AT(plan->variants, struct plan_variant_rec, variant)->pub;
	if (!plan->recorded || v->nitems == 0)
		return 0;
	/* The first item starts the step: its offsets are 0 by definition. */
	for (uint32_t k = 1; k < v->nitems; k++) {
		uint64_t s, h;
		plan_item_offsets(plan, &v->items[k], &s, &h);
		if (s == 0 && (have & PLAN_OFFSETS_START)) {
			have &= ~PLAN_OFFSETS_START;
			if (first == PLAN_NONE)
				first = k;
		}
		if (h == 0)
			have &= ~PLAN_OFFSETS_ISSUE;
	}
	if (missing != NULL)
		*missing = first;
	return have;
}

const struct plan_share *plan_find_share(const plan_t *plan, uint32_t segment)
{
	uint32_t lo = 0, hi = plan->shares.count;

	/* Ascending by segment (plan_add_share). */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct plan_share *s = AT(plan->shares, struct plan_share, mid);
		if (s->segment == segment)
			return s;
		if (s->segment < segment)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int plan_add_share(plan_t *plan, const struct plan_share *share, uint32_t *index,
                   struct plan_diag *diag)
{
	struct plan_share *slot;

	if (share->segment >= plan->segments.count || share->exec >= plan->segments.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "share: segment %u / executable %u of %u",
		                  share->segment, share->exec, plan->segments.count);
	if (plan->shares.count > 0 &&
	    AT(plan->shares, struct plan_share, plan->shares.count - 1)->segment >= share->segment)
		return plan__fail(diag, PLAN_ERR_INVALID,
		                  "share: segment %u after segment %u (ascending, once each)",
		                  share->segment,
		                  AT(plan->shares, struct plan_share, plan->shares.count - 1)->segment);
	if ((slot = plan__vec_push(&plan->shares, sizeof *slot)) == NULL)
		return NOMEM(diag);
	*slot = *share;
	if (index != NULL)
		*index = plan->shares.count - 1;
	return PLAN_OK;
}
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
	return choice_find(plan, variant, op);
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

int plan_variant_verified(const plan_t *plan, uint32_t variant)
{
	int outputs = 0;

	if (variant >= plan->variants.count || plan_get_origin(plan) == PLAN_ORIGIN_RECORDED)
		return 0;
	for (uint32_t i = 0; i < plan->checks.count; i++)
		if (AT(plan->checks, struct plan_check, i)->variant == variant)
			return 1;
	for (uint32_t t = 0; t < plan->tensors.count; t++)
		outputs |= AT(plan->tensors, struct plan_tensor, t)->role == PLAN_ROLE_OUTPUT;
	return !outputs;
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

/* ---------------------------------------------------------------------- */
/* Recorded plans (format 1.4).                                            */

int plan_get_origin(const plan_t *plan)
{
	return plan->recorded ? PLAN_ORIGIN_RECORDED : PLAN_ORIGIN_SCRIPT;
}

const struct plan_recording *plan_get_recording(const plan_t *plan)
{
	return plan->recorded ? &plan->recording : NULL;
}

int plan_set_recording(plan_t *plan, const struct plan_recording *rec, struct plan_diag *diag)
{
	struct plan_recording r = *rec;

	if (plan->dims.count || plan->vars.count || plan->tensors.count || plan->ops.count ||
	    plan->checks.count || plan->dispatch.count || plan->choices.count || plan->wsrc.count)
		return plan__fail(diag, PLAN_ERR_INVALID,
		                  "recording: the plan already holds a script's program");
	if (!plan->recorded && (plan->segments.count || plan->breakpoints.count))
		return plan__fail(diag, PLAN_ERR_INVALID,
		                  "recording: set before the first segment or breakpoint");
	r.command = plan__pool_strdup(plan, rec->command);
	r.step_rule = plan__pool_strdup(plan, rec->step_rule);
	r.libraries = plan__pool_strdup(plan, rec->libraries);
	if (r.command == NULL || r.step_rule == NULL || r.libraries == NULL)
		return NOMEM(diag);
	plan->recording = r;
	plan->recorded = 1;
	/* a plan read from a newer file keeps the file's version */
	if (plan->format_minor < PLAN_FORMAT_MINOR_RECORDED)
		plan->format_minor = PLAN_FORMAT_MINOR_RECORDED;
	return PLAN_OK;
}

#define NEED_RECORDING(plan, diag, what)                                        \
	do {                                                                    \
		if (!(plan)->recorded)                                          \
			return plan__fail(diag, PLAN_ERR_INVALID,               \
			                  "%s: only a recorded plan has one "   \
			                  "(plan_set_recording first)", what);  \
	} while (0)

int plan_add_module(plan_t *plan, const struct plan_module *module, uint32_t *index,
                    struct plan_diag *diag)
{
	struct plan_module m = *module;
	int has_image = (m.flags & PLAN_MODULE_IMAGE) != 0;

	NEED_RECORDING(plan, diag, "module");
	if (m.flags & ~PLAN_MODULE_IMAGE)
		return plan__fail(diag, PLAN_ERR_INVALID, "module: unknown flags 0x%x", m.flags);
	if (has_image && (m.bytes == 0 || m.image == NULL))
		return plan__fail(diag, PLAN_ERR_INVALID, "module: IMAGE without %s",
		                  m.bytes == 0 ? "bytes" : "an image");
	if (has_image && m.bytes > SIZE_MAX)
		return NOMEM(diag);
	/* A module already there (same hash and size) is reused; it takes
	 * the new image when it had none. */
	for (uint32_t i = 0; i < plan->modules.count; i++) {
		struct plan_module *o = AT(plan->modules, struct plan_module, i);
		if (o->hash != m.hash || o->bytes != m.bytes)
			continue;
		if (has_image && !(o->flags & PLAN_MODULE_IMAGE)) {
			const void *img = plan__pool_memdup(plan, m.image, (size_t)m.bytes, 1);
			if (img == NULL)
				return NOMEM(diag);
			o->image = img;
			o->flags |= PLAN_MODULE_IMAGE;
			o->note = "";
			if (o->name[0] == '\0' &&
			    (o->name = plan__pool_strdup(plan, m.name)) == NULL)
				return NOMEM(diag);
		}
		if (index != NULL)
			*index = i;
		return PLAN_OK;
	}
	m.name = plan__pool_strdup(plan, module->name);
	m.note = plan__pool_strdup(plan, has_image ? "" : module->note);
	m.image = has_image ? plan__pool_memdup(plan, module->image, (size_t)m.bytes, 1) : NULL;
	if (m.name == NULL || m.note == NULL || (has_image && m.image == NULL))
		return NOMEM(diag);
	struct plan_module *slot = plan__vec_push(&plan->modules, sizeof m);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = m;
	if (index != NULL)
		*index = plan->modules.count - 1;
	return PLAN_OK;
}

int plan_add_function(plan_t *plan, const struct plan_function *function, uint32_t *index,
                      struct plan_diag *diag)
{
	struct plan_function f = *function;

	NEED_RECORDING(plan, diag, "function");
	if (f.module >= plan->modules.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "function %s: module %u of %u",
		                  f.name ? f.name : "", f.module, plan->modules.count);
	if (f.name == NULL || f.name[0] == '\0')
		return plan__fail(diag, PLAN_ERR_INVALID, "function: no name");
	if (f.nparams > 0 && f.params == NULL)
		return plan__fail(diag, PLAN_ERR_INVALID, "function %s: %u params but no list",
		                  f.name, f.nparams);
	for (uint32_t i = 0; i < f.nparams; i++) {
		const struct plan_param_info *p = &f.params[i];
		if ((uint64_t)p->offset + p->size > UINT32_MAX)
			return plan__fail(diag, PLAN_ERR_INVALID, "function %s: param %u past 4 GiB",
			                  f.name, i);
		if (i > 0 && p->offset < (uint64_t)f.params[i - 1].offset + f.params[i - 1].size)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "function %s: param %u at %u overlaps or precedes param %u",
			                  f.name, i, p->offset, i - 1);
	}
	f.name = plan__pool_strdup(plan, function->name);
	f.params = plan__pool_memdup(plan, function->params, f.nparams, sizeof *f.params);
	if (f.name == NULL || (f.nparams && f.params == NULL))
		return NOMEM(diag);
	struct plan_function *slot = plan__vec_push(&plan->functions, sizeof f);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = f;
	if (index != NULL)
		*index = plan->functions.count - 1;
	return PLAN_OK;
}

/* Whether ADDR names an allocation of the plan (or none) and, inside it,
 * the bytes [offset, offset + span); span 0: an address word, which may
 * also point one past the end (an end pointer). */
static int check_addr(const plan_t *plan, const struct plan_addr *addr, uint64_t span,
                      const char *what, uint32_t n, struct plan_diag *diag)
{
	if (addr->alloc == PLAN_NONE)
		return PLAN_OK;
	if (addr->alloc >= plan->allocs.count)
		return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: %s names allocation %u of %u",
		                  n, what, addr->alloc, plan->allocs.count);
	const struct plan_alloc *a = AT(plan->allocs, struct plan_alloc, addr->alloc);
	if (addr->offset > a->bytes || (span > 0 && addr->offset == a->bytes) ||
	    span > a->bytes - addr->offset)
		return plan__fail(diag, PLAN_ERR_INVALID,
		                  "launch %u: %s at offset %llu (+%llu) outside allocation %u "
		                  "(%llu bytes)", n, what, (unsigned long long)addr->offset,
		                  (unsigned long long)span, addr->alloc,
		                  (unsigned long long)a->bytes);
	return PLAN_OK;
}

int plan__check_launch(const plan_t *plan, const struct plan_launch *l, uint32_t n,
                       struct plan_diag *diag)
{
	int err;

	switch (l->type) {
	case PLAN_NODE_KERNEL: {
		if (l->function >= plan->functions.count)
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: function %u of %u",
			                  n, l->function, plan->functions.count);
		const struct plan_function *f = AT(plan->functions, struct plan_function,
		                                   l->function);
		if (l->flags & ~(PLAN_LAUNCH_PDL | PLAN_LAUNCH_COOP))
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: unknown flags 0x%x",
			                  n, l->flags);
		for (int d = 0; d < 3; d++)
			if (l->grid[d] == 0 || l->block[d] == 0)
				return plan__fail(diag, PLAN_ERR_INVALID,
				                  "launch %u: grid or block has a 0 dimension", n);
		if ((l->cluster[0] == 0) != (l->cluster[1] == 0) ||
		    (l->cluster[0] == 0) != (l->cluster[2] == 0))
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "launch %u: cluster is neither 0 0 0 nor whole", n);
		if (l->nargs > 0 && l->args == NULL)
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: %u argument bytes "
			                  "but no buffer", n, l->nargs);
		if (f->nparams > 0 &&
		    (uint64_t)f->params[f->nparams - 1].offset + f->params[f->nparams - 1].size >
		    l->nargs)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "launch %u: %u argument bytes do not hold %s's parameters",
			                  n, l->nargs, f->name);
		if (l->npatches > 0 && l->patches == NULL)
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: %u patches but no list",
			                  n, l->npatches);
		for (uint32_t i = 0; i < l->npatches; i++) {
			const struct plan_patch *p = &l->patches[i];
			if (p->byte % 8 != 0 || (uint64_t)p->byte + 8 > l->nargs)
				return plan__fail(diag, PLAN_ERR_INVALID,
				                  "launch %u: patch %u at byte %u is not an aligned word "
				                  "of the %u argument bytes", n, i, p->byte, l->nargs);
			if (i > 0 && p->byte <= l->patches[i - 1].byte)
				return plan__fail(diag, PLAN_ERR_INVALID,
				                  "launch %u: patches not ascending at %u", n, i);
			if ((err = check_addr(plan, &p->addr, 0, "a patch", n, diag)) != 0)
				return err;
		}
		if (l->ndata != 0)
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: a kernel with data", n);
		return PLAN_OK;
	}
	case PLAN_NODE_MEMCPY:
		if (l->bytes == 0)
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: a copy of 0 bytes", n);
		if ((err = check_addr(plan, &l->dst, l->bytes, "the destination", n, diag)) != 0 ||
		    (err = check_addr(plan, &l->src, l->bytes, "the source", n, diag)) != 0)
			return err;
		if (l->ndata != 0 && (l->ndata != l->bytes || l->data == NULL ||
		                      l->src.alloc != PLAN_NONE))
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "launch %u: kept %u host bytes for a copy of %llu bytes%s", n,
			                  l->ndata, (unsigned long long)l->bytes,
			                  l->src.alloc != PLAN_NONE ? " from device memory" : "");
		break;
	case PLAN_NODE_MEMSET: {
		if (l->element != 1 && l->element != 2 && l->element != 4)
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: memset element of %u bytes",
			                  n, l->element);
		if (l->width == 0 || l->height == 0)
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: an empty memset", n);
		if (l->width > UINT64_MAX / l->element)
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: memset too wide", n);
		uint64_t row = l->width * l->element;
		if (l->height > 1 && l->pitch < row)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "launch %u: memset pitch %llu below its row of %llu bytes", n,
			                  (unsigned long long)l->pitch, (unsigned long long)row);
		if (l->height > 1 && (l->height - 1) > (UINT64_MAX - row) / l->pitch)
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: memset too large", n);
		uint64_t span = l->height > 1 ? (l->height - 1) * l->pitch + row : row;
		if (l->element < 4 && (l->value >> (8 * l->element)) != 0)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "launch %u: value 0x%x wider than %u bytes", n, l->value,
			                  l->element);
		if ((err = check_addr(plan, &l->dst, span, "the destination", n, diag)) != 0)
			return err;
		if (l->ndata != 0)
			return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: a memset with data", n);
		break;
	}
	default:
		return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: type %d is not a kernel, a "
		                  "copy or a memset", n, l->type);
	}
	if (l->nargs != 0 || l->npatches != 0)
		return plan__fail(diag, PLAN_ERR_INVALID, "launch %u: a %s with parameters", n,
		                  plan_node_type_name(l->type));
	return PLAN_OK;
}

int plan_add_launch(plan_t *plan, const struct plan_launch *launch, uint32_t *index,
                    struct plan_diag *diag)
{
	struct plan_launch l = *launch;
	int err;

	NEED_RECORDING(plan, diag, "launch");
	if ((err = plan__check_launch(plan, &l, plan->launches.count, diag)) != 0)
		return err;
	/* Fields the type does not use are cleared, so that a launch has one
	 * form in memory and in a file. */
	if (l.type != PLAN_NODE_KERNEL) {
		l.function = PLAN_NONE;
		memset(l.grid, 0, sizeof l.grid);
		memset(l.block, 0, sizeof l.block);
		memset(l.cluster, 0, sizeof l.cluster);
		l.shmem = 0;
		l.flags = 0;
	} else {
		l.dst = (struct plan_addr){ PLAN_NONE, 0 };
		l.bytes = 0;
	}
	if (l.type != PLAN_NODE_MEMCPY)
		l.src = (struct plan_addr){ PLAN_NONE, 0 };
	if (l.type != PLAN_NODE_MEMSET) {
		l.value = 0;
		l.element = 0;
		l.width = 0;
		l.height = 0;
		l.pitch = 0;
	} else {
		l.bytes = 0;
	}
	l.args = plan__pool_memdup(plan, launch->args, l.nargs, 1);
	l.patches = plan__pool_memdup(plan, launch->patches, l.npatches, sizeof *l.patches);
	l.data = plan__pool_memdup(plan, launch->data, l.ndata, 1);
	if ((l.nargs && l.args == NULL) || (l.npatches && l.patches == NULL) ||
	    (l.ndata && l.data == NULL))
		return NOMEM(diag);
	struct plan_launch *slot = plan__vec_push(&plan->launches, sizeof l);
	if (slot == NULL)
		return NOMEM(diag);
	*slot = l;
	if (index != NULL)
		*index = plan->launches.count - 1;
	return PLAN_OK;
}

static int alloc_before(const struct plan_alloc *a, uint32_t device, uint64_t address)
{
	return a->device < device || (a->device == device && a->address < address);
}

/* The first position in alloc_order whose allocation is not before
 * (DEVICE, ADDRESS). */
static uint32_t alloc_lower_bound(const plan_t *plan, uint32_t device, uint64_t address)
{
	const uint32_t *order = plan->alloc_order.data;
	uint32_t lo = 0, hi = plan->alloc_order.count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (alloc_before(AT(plan->allocs, struct plan_alloc, order[mid]), device, address))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int plan_add_alloc(plan_t *plan, const struct plan_alloc *alloc, uint32_t *index,
                   struct plan_diag *diag)
{
	struct plan_alloc a = *alloc;
	uint32_t at, *order;

	NEED_RECORDING(plan, diag, "allocation");
	if (a.flags & ~(PLAN_ALLOC_SNAPSHOT | PLAN_ALLOC_VMM))
		return plan__fail(diag, PLAN_ERR_INVALID, "allocation: unknown flags 0x%x", a.flags);
	if (a.bytes == 0 || a.address > UINT64_MAX - a.bytes)
		return plan__fail(diag, PLAN_ERR_INVALID,
		                  "allocation at 0x%llx: %llu bytes do not make a range",
		                  (unsigned long long)a.address, (unsigned long long)a.bytes);
	if ((a.flags & PLAN_ALLOC_SNAPSHOT) && a.data == NULL)
		return plan__fail(diag, PLAN_ERR_INVALID, "allocation at 0x%llx: SNAPSHOT without data",
		                  (unsigned long long)a.address);
	if ((a.flags & PLAN_ALLOC_SNAPSHOT) && a.bytes > SIZE_MAX)
		return NOMEM(diag);
	/* Allocations of one device do not overlap. */
	at = alloc_lower_bound(plan, a.device, a.address);
	order = plan->alloc_order.data;
	if (at < plan->alloc_order.count) {
		const struct plan_alloc *n = AT(plan->allocs, struct plan_alloc, order[at]);
		if (n->device == a.device && n->address < a.address + a.bytes)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "allocation at 0x%llx overlaps allocation %u at 0x%llx",
			                  (unsigned long long)a.address, order[at],
			                  (unsigned long long)n->address);
	}
	if (at > 0) {
		const struct plan_alloc *p = AT(plan->allocs, struct plan_alloc, order[at - 1]);
		if (p->device == a.device && p->address + p->bytes > a.address)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "allocation at 0x%llx overlaps allocation %u at 0x%llx",
			                  (unsigned long long)a.address, order[at - 1],
			                  (unsigned long long)p->address);
	}
	a.data = (a.flags & PLAN_ALLOC_SNAPSHOT) ? plan__pool_memdup(plan, alloc->data,
	                                                             (size_t)a.bytes, 1) : NULL;
	if ((a.flags & PLAN_ALLOC_SNAPSHOT) && a.data == NULL)
		return NOMEM(diag);
	if (plan__vec_push(&plan->alloc_order, sizeof *order) == NULL)
		return NOMEM(diag);
	struct plan_alloc *slot = plan__vec_push(&plan->allocs, sizeof a);
	if (slot == NULL) {
		plan->alloc_order.count--;
		return NOMEM(diag);
	}
	*slot = a;
	order = plan->alloc_order.data;
	memmove(order + at + 1, order + at, (size_t)(plan->alloc_order.count - 1 - at) * sizeof *order);
	order[at] = plan->allocs.count - 1;
	if (index != NULL)
		*index = plan->allocs.count - 1;
	return PLAN_OK;
}

uint32_t plan_find_alloc(const plan_t *plan, uint32_t device, uint64_t address, uint64_t *offset)
{
	const uint32_t *order = plan->alloc_order.data;
	/* The last allocation starting at or before ADDRESS. */
	uint32_t at = alloc_lower_bound(plan, device, address);

	if (at < plan->alloc_order.count) {
		const struct plan_alloc *a = AT(plan->allocs, struct plan_alloc, order[at]);
		if (a->device == device && a->address == address) {
			if (offset != NULL)
				*offset = 0;
			return order[at];
		}
	}
	if (at > 0) {
		const struct plan_alloc *a = AT(plan->allocs, struct plan_alloc, order[at - 1]);
		/* Inside it, or, when no allocation holds ADDRESS, one past its
		 * end: an end pointer, relocated with its allocation. */
		if (a->device == device && address - a->address <= a->bytes) {
			if (offset != NULL)
				*offset = address - a->address;
			return order[at - 1];
		}
	}
	return PLAN_NONE;
}

COUNT_AND_GET(module, modules, struct plan_module)
COUNT_AND_GET(function, functions, struct plan_function)
COUNT_AND_GET(launch, launches, struct plan_launch)
COUNT_AND_GET(alloc, allocs, struct plan_alloc)

/* ---------------------------------------------------------------------- */
/* Tensor parallelism.                                                     */

int plan_set_dist(plan_t *plan, const struct plan_dist *dist, struct plan_diag *diag)
{
	if (dist->world == 0 || dist->rank >= dist->world)
		return plan__fail(diag, PLAN_ERR_INVALID, "rank %u of a world of %u", dist->rank,
		                  dist->world);
	if (dist->flags != 0)
		return plan__fail(diag, PLAN_ERR_INVALID, "dist flags 0x%x: none is defined",
		                  dist->flags);
	if (dist->nccl_mem > PLAN_NCCL_MEM_SYMMETRIC)
		return plan__fail(diag, PLAN_ERR_INVALID, "NCCL memory %u: 0 (default) or 1 "
		                  "(symmetric)", dist->nccl_mem);
	for (uint32_t r = 0; r < plan->nranks; r++)
		if (plan->ranks[r] != NULL && dist->world != plan->dist.world)
			return plan__fail(diag, PLAN_ERR_INVALID,
			                  "a world of %u, but ranks of a world of %u are attached",
			                  dist->world, plan->dist.world);
	plan->dist = *dist;
	return 0;
}

const struct plan_dist *plan_get_dist(const plan_t *plan)
{
	return &plan->dist;
}

int plan_add_rank(plan_t *plan, plan_t *rank_plan, struct plan_diag *diag)
{
	const struct plan_dist *d = &rank_plan->dist;
	int rc;

	if (plan->dist.rank != 0 || plan->dist.world < 2) {
		rc = plan__fail(diag, PLAN_ERR_INVALID,
		                "ranks attach to rank 0 of a world of two or more (this is rank %u of %u)",
		                plan->dist.rank, plan->dist.world);
		goto fail;
	}
	if (d->world != plan->dist.world || d->rank == 0 || d->rank >= d->world) {
		rc = plan__fail(diag, PLAN_ERR_INVALID,
		                "rank %u of a world of %u does not attach to a world of %u",
		                d->rank, d->world, plan->dist.world);
		goto fail;
	}
	if (rank_plan->nranks != 0) {
		rc = plan__fail(diag, PLAN_ERR_INVALID, "rank %u has ranks of its own", d->rank);
		goto fail;
	}
	if (plan->ranks == NULL) {
		plan->ranks = calloc(plan->dist.world - 1, sizeof *plan->ranks);
		if (plan->ranks == NULL) {
			rc = NOMEM(diag);
			goto fail;
		}
		plan->nranks = plan->dist.world - 1;
	}
	if (plan->ranks[d->rank - 1] != NULL) {
		rc = plan__fail(diag, PLAN_ERR_INVALID, "rank %u is attached twice", d->rank);
		goto fail;
	}
	plan->ranks[d->rank - 1] = rank_plan;
	return 0;
fail:
	plan_free(rank_plan);
	return rc;
}

const plan_t *plan_get_rank(const plan_t *plan, uint32_t r)
{
	if (r >= plan->dist.world)
		return NULL;
	if (r == plan->dist.rank)
		return plan;
	if (plan->dist.rank != 0 || r == 0 || r - 1 >= plan->nranks)
		return NULL;
	return plan->ranks[r - 1];
}

uint32_t plan_count_ranks(const plan_t *plan)
{
	uint32_t n = 0;

	for (uint32_t r = 0; r < plan->nranks; r++)
		n += plan->ranks[r] != NULL;
	return n;
}
