/*
 * describe.c - short texts for people about the records of a plan: a
 * tensor's shape, an op's label, an initializer, a feed, a version.
 *
 * bcgtool's tables, the DOT dump and the diff all use them, so that one
 * thing is written the same way everywhere.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"

/* Append to BUF (LEN bytes, holding *AT characters); truncates silently. */
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*at >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *at, len - *at, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	*at = (size_t)n >= len - *at ? len : *at + (size_t)n;
}

static char *empty(char *buf, size_t len)
{
	if (len > 0)
		buf[0] = '\0';
	return buf;
}

const char *plan_shape_text(const plan_t *plan, const struct plan_tensor *t, char *buf,
                            size_t len)
{
	size_t at = 0;

	empty(buf, len);
	put(buf, len, &at, "[");
	for (uint32_t i = 0; i < t->rank && i < PLAN_MAX_RANK; i++) {
		const struct plan_dim *d = t->shape[i].dim != PLAN_NONE ?
			plan_get_dim(plan, t->shape[i].dim) : NULL;
		if (d != NULL)
			put(buf, len, &at, "%s%s", i ? ", " : "", d->name);
		else
			put(buf, len, &at, "%s%lld", i ? ", " : "", (long long)t->shape[i].size);
	}
	put(buf, len, &at, "]");
	return buf;
}

const char *plan_op_label(const plan_t *plan, uint32_t op, char *buf, size_t len)
{
	const struct plan_op *o = plan_get_op(plan, op);

	empty(buf, len);
	if (o == NULL)
		snprintf(buf, len, "op#%u", op);
	else if (o->name[0] != '\0')
		snprintf(buf, len, "%s", o->name);
	else
		snprintf(buf, len, "%s#%u", o->kind, op);
	return buf;
}

const char *plan_init_text(const struct plan_tensor *t, char *buf, size_t len)
{
	const struct plan_init *in = &t->init;

	empty(buf, len);
	switch (in->kind) {
	case PLAN_INIT_NONE:
		snprintf(buf, len, "none");
		break;
	case PLAN_INIT_ZEROS:
	case PLAN_INIT_ONES:
		snprintf(buf, len, "%s", plan_init_name(in->kind));
		break;
	case PLAN_INIT_CONST:
		snprintf(buf, len, "const value %g", in->value);
		break;
	case PLAN_INIT_RANDOM:
		snprintf(buf, len, "random scale %g seed %llu", in->scale,
		         (unsigned long long)in->seed);
		break;
	case PLAN_INIT_ARANGE:
		snprintf(buf, len, "arange value %g scale %g", in->value, in->scale);
		break;
	case PLAN_INIT_SAFETENSORS:
		snprintf(buf, len, "safetensors");
		break;
	default:
		snprintf(buf, len, "unknown %d", in->kind);
		break;
	}
	return buf;
}

const char *plan_feed_text(const plan_t *plan, const struct plan_tensor *t, char *buf,
                           size_t len)
{
	const struct plan_feed *f = &t->feed;
	const struct plan_var *v = f->var != PLAN_NONE ? plan_get_var(plan, f->var) : NULL;

	empty(buf, len);
	switch (f->kind) {
	case PLAN_FEED_NONE:
		snprintf(buf, len, "none");
		break;
	case PLAN_FEED_POSITIONS:
		if (v != NULL)
			snprintf(buf, len, "positions var %s", v->name);
		else
			snprintf(buf, len, "positions");
		break;
	case PLAN_FEED_TOKENS:
		snprintf(buf, len, "tokens range %lld seed %llu", (long long)f->range,
		         (unsigned long long)f->seed);
		break;
	case PLAN_FEED_RANDOM:
		snprintf(buf, len, "random scale %g seed %llu", f->scale,
		         (unsigned long long)f->seed);
		break;
	case PLAN_FEED_PROMPT: {
		const struct plan_tensor *from = plan_get_tensor(plan, f->from);
		snprintf(buf, len, "prompt range %lld seed %llu feedback %s", (long long)f->range,
		         (unsigned long long)f->seed, from != NULL ? from->name : "?");
		break;
	}
	case PLAN_FEED_SEQ_LENS:
		if (v != NULL)
			snprintf(buf, len, "seq_lens var %s", v->name);
		else
			snprintf(buf, len, "seq_lens");
		break;
	case PLAN_FEED_QUERY_START:
	case PLAN_FEED_BLOCK_TABLE:
	case PLAN_FEED_SLOTS:
	case PLAN_FEED_SEQ_POSITIONS:
		snprintf(buf, len, "%s", plan_feed_name(f->kind));
		break;
	default:
		snprintf(buf, len, "unknown %d", f->kind);
		break;
	}
	return buf;
}

const char *plan_source_text(const plan_t *plan, const struct plan_tensor *t, char *buf,
                             size_t len)
{
	char sub[128];

	empty(buf, len);
	if (t->feed.kind != PLAN_FEED_NONE)
		snprintf(buf, len, "feed %s", plan_feed_text(plan, t, sub, sizeof sub));
	else if (t->init.kind != PLAN_INIT_NONE)
		snprintf(buf, len, "init %s", plan_init_text(t, sub, sizeof sub));
	else
		snprintf(buf, len, "-");
	return buf;
}

const char *plan_attr_text(const plan_t *plan, const struct plan_attr *a, char *buf,
                           size_t len)
{
	const struct plan_var *v;

	empty(buf, len);
	switch (a->type) {
	case PLAN_ATTR_INT:
		snprintf(buf, len, "%s=%lld", a->key, (long long)a->i);
		break;
	case PLAN_ATTR_FLOAT:
		snprintf(buf, len, "%s=%g", a->key, a->f);
		break;
	case PLAN_ATTR_BOOL:
		snprintf(buf, len, "%s=%s", a->key, a->i ? "true" : "false");
		break;
	case PLAN_ATTR_VAR:
		v = a->i >= 0 && a->i < (int64_t)plan_count_vars(plan) ?
			plan_get_var(plan, (uint32_t)a->i) : NULL;
		if (v != NULL)
			snprintf(buf, len, "%s=%s", a->key, v->name);
		else
			snprintf(buf, len, "%s=var#%lld", a->key, (long long)a->i);
		break;
	case PLAN_ATTR_STR:
		snprintf(buf, len, "%s=\"%s\"", a->key, a->s);
		break;
	default:
		snprintf(buf, len, "%s=?", a->key);
		break;
	}
	return buf;
}

const char *plan_tensor_list_text(const plan_t *plan, const uint32_t *list, uint32_t n,
                                  char *buf, size_t len)
{
	size_t at = 0;

	empty(buf, len);
	for (uint32_t i = 0; i < n; i++) {
		const struct plan_tensor *t = plan_get_tensor(plan, list[i]);
		if (t != NULL)
			put(buf, len, &at, "%s%s", i ? ", " : "", t->name);
		else
			put(buf, len, &at, "%stensor#%u", i ? ", " : "", list[i]);
	}
	if (n == 0)
		put(buf, len, &at, "-");
	return buf;
}

/* cudaRuntimeGetVersion and cudaDriverGetVersion give 1000 * major + 10 *
 * minor; cublasGetVersion gives 10000 * major + 100 * minor + patch. */
const char *plan_version_text(int32_t version, int cublas, char *buf, size_t len)
{
	empty(buf, len);
	if (version <= 0)
		snprintf(buf, len, "-");
	else if (cublas)
		snprintf(buf, len, "%d.%d.%d", version / 10000, version % 10000 / 100, version % 100);
	else
		snprintf(buf, len, "%d.%d", version / 1000, version % 1000 / 10);
	return buf;
}

const char *plan_dispatch_text(const plan_t *plan, const struct plan_dispatch *d, char *buf,
                               size_t len)
{
	const struct plan_variant *v = d->variant != PLAN_NONE ? plan_get_variant(plan, d->variant) : NULL;
	char range[96], req[24] = "";

	empty(buf, len);
	if (d->requests_max != 0)
		snprintf(req, sizeof req, " x%u", d->requests_max);
	if (d->tokens_min == d->tokens_max)
		snprintf(range, sizeof range, "%lld%s%s", (long long)d->tokens_min, req,
		         (d->flags & PLAN_DISPATCH_UNIFORM) ? " uniform" : "");
	else
		snprintf(range, sizeof range, "%lld-%lld%s%s", (long long)d->tokens_min,
		         (long long)d->tokens_max, req,
		         (d->flags & PLAN_DISPATCH_UNIFORM) ? " uniform" : "");
	if (v != NULL)
		snprintf(buf, len, "%s -> %lld", range, (long long)v->tokens);
	else
		snprintf(buf, len, "%s -> eager", range);
	return buf;
}

const char *plan_key_text(const struct plan_variant *v, char *buf, size_t len)
{
	char req[24] = "";

	empty(buf, len);
	if (v->requests != 0)
		snprintf(req, sizeof req, " x%u", v->requests);
	snprintf(buf, len, "%lld%s%s", (long long)v->tokens, req,
	         (v->key_flags & PLAN_KEY_UNIFORM) ? " uniform" : "");
	return buf;
}

/* An edge's type is written when any of its data is not the default; a
 * port only when it is not the one its type normally leaves from or
 * arrives at (a programmatic edge leaves from the programmatic port). */
const char *plan_edge_text(const struct plan_edge *e, char *buf, size_t len)
{
	int usual_out = e->type == PLAN_EDGE_PROGRAMMATIC ? PLAN_PORT_PROGRAMMATIC : PLAN_PORT_DEFAULT;
	size_t at = 0;

	empty(buf, len);
	put(buf, len, &at, "%u->%u", e->from, e->to);
	if (e->type == PLAN_EDGE_DEFAULT && e->from_port == PLAN_PORT_DEFAULT &&
	    e->to_port == PLAN_PORT_DEFAULT)
		return buf;
	put(buf, len, &at, " %s", plan_edge_type_name(e->type));
	if (e->from_port != usual_out)
		put(buf, len, &at, " out=%s", plan_edge_port_name(e->from_port));
	if (e->to_port != PLAN_PORT_DEFAULT)
		put(buf, len, &at, " in=%s", plan_edge_port_name(e->to_port));
	return buf;
}

const char *plan_features_text(uint32_t features, char *buf, size_t len)
{
	size_t at = 0;

	empty(buf, len);
	if (features & PLAN_FEATURE_PDL)
		put(buf, len, &at, "pdl");
	if (features & ~PLAN_FEATURE_PDL)
		put(buf, len, &at, "%s0x%x", at ? "," : "", (unsigned)(features & ~PLAN_FEATURE_PDL));
	if (features == 0)
		put(buf, len, &at, "-");
	return buf;
}

/* ---------------------------------------------------------------------- */
/* Recorded plans (1.4).                                                   */

const char *plan_addr_text(const struct plan_addr *a, char *buf, size_t len)
{
	if (a->alloc == PLAN_NONE)
		snprintf(buf, len, "0x%llx", (unsigned long long)a->offset);
	else
		snprintf(buf, len, "a%u+%llu", a->alloc, (unsigned long long)a->offset);
	return buf;
}

const char *plan_launch_text(const plan_t *plan, uint32_t launch, const char *name_text,
                             char *buf, size_t len)
{
	const struct plan_launch *l = plan_get_launch(plan, launch);
	char dst[40], src[40];
	size_t at = 0;

	if (l == NULL)
		return empty(buf, len);
	empty(buf, len);
	switch (l->type) {
	case PLAN_NODE_KERNEL: {
		const struct plan_function *f = plan_get_function(plan, l->function);
		put(buf, len, &at, "kernel %s <<<(%u,%u,%u), (%u,%u,%u)",
		    name_text != NULL ? name_text : f != NULL ? f->name : "?", l->grid[0], l->grid[1],
		    l->grid[2], l->block[0], l->block[1], l->block[2]);
		if (l->shmem > 0)
			put(buf, len, &at, ", %u", l->shmem);
		put(buf, len, &at, ">>>");
		if (l->cluster[0] != 0)
			put(buf, len, &at, " cluster (%u,%u,%u)", l->cluster[0], l->cluster[1],
			    l->cluster[2]);
		if (l->flags & PLAN_LAUNCH_PDL)
			put(buf, len, &at, " pdl");
		if (l->flags & PLAN_LAUNCH_COOP)
			put(buf, len, &at, " cooperative");
		break;
	}
	case PLAN_NODE_MEMCPY:
		put(buf, len, &at, "memcpy %llu B %s -> %s%s", (unsigned long long)l->bytes,
		    plan_addr_text(&l->src, src, sizeof src), plan_addr_text(&l->dst, dst, sizeof dst),
		    l->ndata ? " (host bytes kept)" : "");
		break;
	case PLAN_NODE_MEMSET:
		put(buf, len, &at, "memset %llu x %u B = 0x%x -> %s", (unsigned long long)l->width,
		    l->element, l->value, plan_addr_text(&l->dst, dst, sizeof dst));
		if (l->height > 1)
			put(buf, len, &at, " (%llu rows, pitch %llu)", (unsigned long long)l->height,
			    (unsigned long long)l->pitch);
		break;
	default:
		put(buf, len, &at, "%s", plan_node_type_name(l->type));
		break;
	}
	return buf;
}

const char *plan_ns_text(uint64_t ns, char *buf, size_t len)
{
	if (ns == 0)
		snprintf(buf, len, "-");
	else if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	return buf;
}

const char *plan_split_text(const struct plan_tensor *t, char *buf, size_t len)
{
	const struct plan_split *sp = &t->split;
	size_t at = 0;

	empty(buf, len);
	if (sp->nblocks == 0) {
		put(buf, len, &at, "-");
		return buf;
	}
	put(buf, len, &at, "axis %u", sp->axis);
	for (uint32_t k = 0; k < sp->nblocks && k < PLAN_MAX_SPLIT_BLOCKS; k++) {
		const struct plan_split_block *b = &sp->block[k];
		put(buf, len, &at, "%s[%lld, %lld) of %lld", k ? " | " : " ", (long long)b->start,
		    (long long)(b->start + b->len), (long long)b->full);
	}
	if (sp->unit != 1)
		put(buf, len, &at, ", unit %lld", (long long)sp->unit);
	return buf;
}

const char *plan_slice_text(const struct plan_weight_source *w, char *buf, size_t len)
{
	if (w->slice_len == 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "[%llu, %llu) of [%llu, %llu, %llu]",
		         (unsigned long long)w->slice_start,
		         (unsigned long long)(w->slice_start + w->slice_len),
		         (unsigned long long)w->slice_outer, (unsigned long long)w->slice_full,
		         (unsigned long long)w->slice_inner);
	return buf;
}

const char *plan_dist_text(const plan_t *plan, char *buf, size_t len)
{
	const struct plan_dist *d = plan_get_dist(plan);
	int v = d->nccl_version;

	if (d->world == 1)
		snprintf(buf, len, "1 rank");
	else if (v == 0)
		snprintf(buf, len, "rank %u of %u, no NCCL", d->rank, d->world);
	else if (v >= 20900)
		/* NCCL 2.9 and later: major * 10000 + minor * 100 + patch */
		snprintf(buf, len, "rank %u of %u, NCCL %d.%d.%d", d->rank, d->world, v / 10000,
		         v / 100 % 100, v % 100);
	else
		snprintf(buf, len, "rank %u of %u, NCCL %d.%d.%d", d->rank, d->world, v / 1000,
		         v / 100 % 10, v % 100);
	if (d->nccl_mem == PLAN_NCCL_MEM_SYMMETRIC) {
		size_t n = strlen(buf);
		snprintf(buf + n, len - n, ", symmetric memory");
	}
	return buf;
}
