/*
 * dump.c - a whole plan as JSON (the schema of formats/inspect-json.md) or
 * as a Graphviz DOT graph, written to a caller's stream.
 *
 * The JSON dump reaches every field of the model; bcgtool inspect --json
 * is this dump. The DOT dump draws each variant's step: one cluster per
 * segment holding its node graph (or its ops, as a chain, where no nodes
 * were recorded), the breakpoints as octagons between the clusters, and
 * bold edges through the items in execution order.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define DUMP_JSON_SCHEMA 1

static int dump_wanted(const struct plan_dump_opts *opts, uint32_t variant)
{
	return opts == NULL || opts->variant == PLAN_NONE || opts->variant == variant;
}

static int dump_finish(FILE *f, struct plan_diag *diag)
{
	if (ferror(f)) {
		if (diag != NULL) {
			diag->code = PLAN_ERR_IO;
			snprintf(diag->message, sizeof diag->message, "writing the dump failed");
		}
		return PLAN_ERR_IO;
	}
	return PLAN_OK;
}

static int dump_check_opts(const plan_t *plan, const struct plan_dump_opts *opts,
                           struct plan_diag *diag)
{
	if (opts != NULL && opts->variant != PLAN_NONE &&
	    opts->variant >= plan_count_variants(plan)) {
		if (diag != NULL) {
			diag->code = PLAN_ERR_NOT_FOUND;
			snprintf(diag->message, sizeof diag->message, "no variant %u (the plan has %u)",
			         opts->variant, plan_count_variants(plan));
		}
		return PLAN_ERR_NOT_FOUND;
	}
	return PLAN_OK;
}

/* ---------------------------------------------------------------------- */
/* JSON.                                                                   */

static void json_hex(struct plan_json *j, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
	plan_json_string(j, buf);
}

static void json_index(struct plan_json *j, uint32_t v)
{
	if (v == PLAN_NONE)
		plan_json_null(j);
	else
		plan_json_uint(j, v);
}

static void json_index_list(struct plan_json *j, const uint32_t *list, uint32_t n)
{
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < n; i++)
		plan_json_uint(j, list[i]);
	plan_json_array_end(j);
}

static void json_triple(struct plan_json *j, const uint32_t *v)
{
	plan_json_array_begin(j);
	for (int i = 0; i < 3; i++)
		plan_json_uint(j, v[i]);
	plan_json_array_end(j);
}

static void json_meta(struct plan_json *j, const plan_t *plan)
{
	const struct plan_meta *m = plan_get_meta(plan);
	char utc[32] = "";
	time_t t = (time_t)m->created;
	struct tm tm;

	if ((int64_t)t == m->created && gmtime_r(&t, &tm) != NULL)
		strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
	plan_json_key(j, "meta");
	plan_json_object_begin(j);
	plan_json_key(j, "tool");
	plan_json_string(j, m->tool);
	plan_json_key(j, "script");
	plan_json_string(j, m->script);
	plan_json_key(j, "script_hash");
	json_hex(j, m->script_hash);
	plan_json_key(j, "created");
	plan_json_int(j, m->created);
	plan_json_key(j, "created_utc");
	plan_json_string(j, utc);
	plan_json_key(j, "backend");
	plan_json_string(j, plan_backend_name(m->backend));
	plan_json_key(j, "device");
	plan_json_string(j, m->device);
	plan_json_key(j, "cc_major");
	plan_json_int(j, m->cc_major);
	plan_json_key(j, "cc_minor");
	plan_json_int(j, m->cc_minor);
	plan_json_key(j, "cuda_runtime");
	plan_json_int(j, m->cuda_runtime);
	plan_json_key(j, "cuda_driver");
	plan_json_int(j, m->cuda_driver);
	plan_json_key(j, "cublas");
	plan_json_int(j, m->cublas);
	plan_json_key(j, "features");
	plan_json_array_begin(j);
	if (m->features & PLAN_FEATURE_PDL)
		plan_json_string(j, "pdl");
	plan_json_array_end(j);
	plan_json_object_end(j);
}

static void json_layout_stats(struct plan_json *j, const plan_t *plan)
{
	const struct plan_layout *l = plan_get_layout(plan);
	const struct plan_stats *s = plan_get_stats(plan);

	plan_json_key(j, "layout");
	plan_json_object_begin(j);
	plan_json_key(j, "arena_bytes");
	plan_json_uint(j, l->arena_bytes);
	plan_json_key(j, "unshared_bytes");
	plan_json_uint(j, l->unshared_bytes);
	plan_json_key(j, "alignment");
	plan_json_uint(j, l->alignment);
	plan_json_object_end(j);

	plan_json_key(j, "stats");
	plan_json_object_begin(j);
	plan_json_key(j, "materialize_ns");
	plan_json_uint(j, s->materialize_ns);
	plan_json_key(j, "reference_ns");
	plan_json_uint(j, s->reference_ns);
	plan_json_key(j, "capture_ns");
	plan_json_uint(j, s->capture_ns);
	plan_json_key(j, "instantiate_ns");
	plan_json_uint(j, s->instantiate_ns);
	plan_json_key(j, "verify_ns");
	plan_json_uint(j, s->verify_ns);
	plan_json_key(j, "reference_steps");
	plan_json_uint(j, s->reference_steps);
	plan_json_key(j, "verify_exact");
	plan_json_bool(j, s->verify_exact != 0);
	plan_json_key(j, "verify_max_error");
	plan_json_double(j, s->verify_max_error);
	plan_json_object_end(j);
}

static void json_dims_vars(struct plan_json *j, const plan_t *plan)
{
	plan_json_key(j, "dims");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_dims(plan); i++) {
		const struct plan_dim *d = plan_get_dim(plan, i);
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, i);
		plan_json_key(j, "name");
		plan_json_string(j, d->name);
		plan_json_key(j, "expr");
		plan_json_string(j, d->expr);
		plan_json_key(j, "value");
		plan_json_int(j, d->value);
		plan_json_key(j, "tokens");
		plan_json_bool(j, (d->flags & PLAN_DIM_TOKENS) != 0);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);

	plan_json_key(j, "vars");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_vars(plan); i++) {
		const struct plan_var *v = plan_get_var(plan, i);
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, i);
		plan_json_key(j, "name");
		plan_json_string(j, v->name);
		plan_json_key(j, "start");
		plan_json_int(j, v->start);
		plan_json_key(j, "step");
		plan_json_int(j, v->step);
		plan_json_key(j, "limit");
		plan_json_int(j, v->limit);
		plan_json_key(j, "offset");
		plan_json_uint(j, v->offset);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
}

static void json_tensor(struct plan_json *j, const plan_t *plan, uint32_t i)
{
	const struct plan_tensor *t = plan_get_tensor(plan, i);
	char shape[160];

	plan_json_object_begin(j);
	plan_json_key(j, "index");
	plan_json_uint(j, i);
	plan_json_key(j, "name");
	plan_json_string(j, t->name);
	plan_json_key(j, "dtype");
	plan_json_string(j, plan_dtype_name(t->dtype));
	plan_json_key(j, "role");
	plan_json_string(j, plan_role_name(t->role));
	plan_json_key(j, "shape_text");
	plan_json_string(j, plan_shape_text(plan, t, shape, sizeof shape));
	plan_json_key(j, "shape");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < t->rank && k < PLAN_MAX_RANK; k++) {
		const struct plan_dim *d = t->shape[k].dim != PLAN_NONE ?
			plan_get_dim(plan, t->shape[k].dim) : NULL;
		plan_json_object_begin(j);
		plan_json_key(j, "dim");
		json_index(j, t->shape[k].dim);
		plan_json_key(j, "dim_name");
		if (d != NULL)
			plan_json_string(j, d->name);
		else
			plan_json_null(j);
		plan_json_key(j, "size");
		plan_json_int(j, t->shape[k].size);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_key(j, "offset");
	plan_json_uint(j, t->offset);
	plan_json_key(j, "bytes");
	plan_json_uint(j, t->bytes);
	plan_json_key(j, "init");
	plan_json_object_begin(j);
	plan_json_key(j, "kind");
	plan_json_string(j, plan_init_name(t->init.kind));
	plan_json_key(j, "seed");
	plan_json_uint(j, t->init.seed);
	plan_json_key(j, "scale");
	plan_json_double(j, t->init.scale);
	plan_json_key(j, "value");
	plan_json_double(j, t->init.value);
	plan_json_object_end(j);
	plan_json_key(j, "feed");
	plan_json_object_begin(j);
	plan_json_key(j, "kind");
	plan_json_string(j, plan_feed_name(t->feed.kind));
	plan_json_key(j, "var");
	json_index(j, t->feed.var);
	plan_json_key(j, "seed");
	plan_json_uint(j, t->feed.seed);
	plan_json_key(j, "range");
	plan_json_int(j, t->feed.range);
	plan_json_key(j, "scale");
	plan_json_double(j, t->feed.scale);
	plan_json_object_end(j);
	if (plan__uses_ranks(plan)) {
		const struct plan_split *sp = &t->split;
		plan_json_key(j, "split");
		if (sp->nblocks == 0) {
			plan_json_null(j);
		} else {
			plan_json_object_begin(j);
			plan_json_key(j, "axis");
			plan_json_uint(j, sp->axis);
			plan_json_key(j, "unit");
			plan_json_int(j, sp->unit);
			plan_json_key(j, "blocks");
			plan_json_array_begin(j);
			for (uint32_t k = 0; k < sp->nblocks && k < PLAN_MAX_SPLIT_BLOCKS; k++) {
				plan_json_object_begin(j);
				plan_json_key(j, "full");
				plan_json_int(j, sp->block[k].full);
				plan_json_key(j, "start");
				plan_json_int(j, sp->block[k].start);
				plan_json_key(j, "len");
				plan_json_int(j, sp->block[k].len);
				plan_json_object_end(j);
			}
			plan_json_array_end(j);
			plan_json_object_end(j);
		}
	}
	plan_json_object_end(j);
}

static void json_attr(struct plan_json *j, const struct plan_attr *a)
{
	plan_json_object_begin(j);
	plan_json_key(j, "key");
	plan_json_string(j, a->key);
	plan_json_key(j, "type");
	plan_json_string(j, plan_attr_type_name(a->type));
	plan_json_key(j, "value");
	switch (a->type) {
	case PLAN_ATTR_FLOAT: plan_json_double(j, a->f); break;
	case PLAN_ATTR_BOOL:  plan_json_bool(j, a->i != 0); break;
	case PLAN_ATTR_STR:   plan_json_string(j, a->s); break;
	default:              plan_json_int(j, a->i); break;   /* int, var index */
	}
	plan_json_object_end(j);
}

static void json_op(struct plan_json *j, const plan_t *plan, uint32_t i)
{
	const struct plan_op *o = plan_get_op(plan, i);
	char label[160];

	plan_json_object_begin(j);
	plan_json_key(j, "index");
	plan_json_uint(j, i);
	plan_json_key(j, "kind");
	plan_json_string(j, o->kind);
	plan_json_key(j, "name");
	plan_json_string(j, o->name);
	plan_json_key(j, "label");
	plan_json_string(j, plan_op_label(plan, i, label, sizeof label));
	plan_json_key(j, "eager");
	plan_json_bool(j, (o->flags & PLAN_OP_EAGER) != 0);
	plan_json_key(j, "line");
	plan_json_uint(j, o->line);
	plan_json_key(j, "col");
	plan_json_uint(j, o->col);
	plan_json_key(j, "in");
	json_index_list(j, o->in, o->nin);
	plan_json_key(j, "out");
	json_index_list(j, o->out, o->nout);
	plan_json_key(j, "attrs");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < o->nattr; k++)
		json_attr(j, &o->attr[k]);
	plan_json_array_end(j);
	plan_json_object_end(j);
}

static void json_variant(struct plan_json *j, const plan_t *plan, uint32_t i)
{
	const struct plan_variant *v = plan_get_variant(plan, i);
	uint32_t nseg = 0, nbp = 0, nnodes = 0;

	for (uint32_t k = 0; k < v->nitems; k++) {
		if (v->items[k].kind == PLAN_ITEM_SEGMENT) {
			const struct plan_segment *s = plan_get_segment(plan, v->items[k].index);
			nseg++;
			nnodes += s != NULL ? s->nnodes : 0;
		} else {
			nbp++;
		}
	}
	plan_json_object_begin(j);
	plan_json_key(j, "index");
	plan_json_uint(j, i);
	plan_json_key(j, "tokens");
	plan_json_int(j, v->tokens);
	plan_json_key(j, "mode");
	plan_json_string(j, plan_mode_name(v->mode));
	plan_json_key(j, "requests");
	plan_json_uint(j, v->requests);
	plan_json_key(j, "uniform");
	plan_json_bool(j, (v->key_flags & PLAN_KEY_UNIFORM) != 0);
	plan_json_key(j, "peak_bytes");
	plan_json_uint(j, v->peak_bytes);
	plan_json_key(j, "segments");
	plan_json_uint(j, nseg);
	plan_json_key(j, "breakpoints");
	plan_json_uint(j, nbp);
	plan_json_key(j, "nodes");
	plan_json_uint(j, nnodes);
	if (plan_get_origin(plan) != PLAN_ORIGIN_RECORDED) {
		plan_json_key(j, "verified");
		plan_json_bool(j, plan_variant_verified(plan, i));
	}
	if (plan_get_origin(plan) == PLAN_ORIGIN_RECORDED) {
		plan_json_key(j, "label");
		plan_json_string(j, v->label);
		plan_json_key(j, "seen");
		plan_json_uint(j, v->seen);
		plan_json_key(j, "recorded_ns");
		plan_json_uint(j, v->recorded_ns);
		plan_json_key(j, "device");
		plan_json_uint(j, v->device);
	}
	plan_json_key(j, "items");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < v->nitems; k++) {
		plan_json_object_begin(j);
		plan_json_key(j, "kind");
		plan_json_string(j, v->items[k].kind == PLAN_ITEM_SEGMENT ? "segment" : "breakpoint");
		plan_json_key(j, "index");
		plan_json_uint(j, v->items[k].index);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_object_end(j);
}

static void json_node(struct plan_json *j, const plan_t *plan, const struct plan_node *n,
                      uint32_t i)
{
	plan_json_object_begin(j);
	plan_json_key(j, "index");
	plan_json_uint(j, i);
	plan_json_key(j, "type");
	plan_json_string(j, plan_node_type_name(n->type));
	plan_json_key(j, "op");
	json_index(j, n->op);
	plan_json_key(j, "kernel");
	plan_json_string(j, n->kernel);
	plan_json_key(j, "grid");
	json_triple(j, n->grid);
	plan_json_key(j, "block");
	json_triple(j, n->block);
	plan_json_key(j, "shmem");
	plan_json_uint(j, n->shmem);
	plan_json_key(j, "params");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < n->nparams; k++) {
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, n->params[k].index);
		plan_json_key(j, "offset");
		plan_json_uint(j, n->params[k].offset);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	if (plan_get_origin(plan) == PLAN_ORIGIN_RECORDED) {
		plan_json_key(j, "launch");
		json_index(j, n->launch);
	}
	plan_json_object_end(j);
}

/* (1.7) A recorded item's start offsets, each only where its variant
 * has them (plan_variant_offsets): "start_ns" on the GPU, "issue_ns" on
 * the host, from the step's first item. */
static void json_offsets(struct plan_json *j, const plan_t *plan, uint32_t variant,
                         const struct plan_item *it)
{
	const struct plan_variant *v = plan_get_variant(plan, variant);
	unsigned have = plan_variant_offsets(plan, variant, NULL);
	uint64_t start, issue;

	/* a variant of one item has nothing to say */
	if (v == NULL || v->nitems < 2)
		return;
	plan_item_offsets(plan, it, &start, &issue);
	if (have & PLAN_OFFSETS_START) {
		plan_json_key(j, "start_ns");
		plan_json_uint(j, start);
	}
	if (have & PLAN_OFFSETS_ISSUE) {
		plan_json_key(j, "issue_ns");
		plan_json_uint(j, issue);
	}
}

static void json_segment(struct plan_json *j, const plan_t *plan, uint32_t i)
{
	const struct plan_segment *s = plan_get_segment(plan, i);

	plan_json_object_begin(j);
	plan_json_key(j, "index");
	plan_json_uint(j, i);
	plan_json_key(j, "variant");
	plan_json_uint(j, s->variant);
	plan_json_key(j, "op_first");
	plan_json_uint(j, s->op_first);
	plan_json_key(j, "op_count");
	plan_json_uint(j, s->op_count);
	plan_json_key(j, "nodes_recorded");
	plan_json_bool(j, (s->flags & PLAN_SEG_NODES) != 0);
	plan_json_key(j, "fingerprint");
	json_hex(j, s->fingerprint);
	plan_json_key(j, "capture_ns");
	plan_json_uint(j, s->capture_ns);
	plan_json_key(j, "instantiate_ns");
	plan_json_uint(j, s->instantiate_ns);
	if (plan_get_origin(plan) == PLAN_ORIGIN_RECORDED) {
		struct plan_item it = { PLAN_ITEM_SEGMENT, i };
		plan_json_key(j, "recorded_ns");
		plan_json_uint(j, s->recorded_ns);
		json_offsets(j, plan, s->variant, &it);
	}
	/* 1.6: only in a plan whose segments share executables. */
	if (plan_count_shares(plan) > 0) {
		const struct plan_share *sh = plan_find_share(plan, i);
		plan_json_key(j, "exec");
		if (sh == NULL) {
			plan_json_object_begin(j);
			plan_json_key(j, "share");
			plan_json_string(j, "own");
			plan_json_key(j, "segment");
			plan_json_uint(j, i);
		} else {
			plan_json_object_begin(j);
			plan_json_key(j, "share");
			plan_json_string(j, (sh->flags & PLAN_SHARE_REFUSED) ? "refused" :
			                    sh->exec == i ? "first" : "joined");
			plan_json_key(j, "segment");
			plan_json_uint(j, (sh->flags & PLAN_SHARE_REFUSED) ? i : sh->exec);
			if (sh->flags & PLAN_SHARE_REFUSED) {
				plan_json_key(j, "matched");
				plan_json_uint(j, sh->exec);
				plan_json_key(j, "update_result");
				plan_json_uint(j, sh->result);
			}
		}
		plan_json_object_end(j);
	}
	plan_json_key(j, "nodes");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < s->nnodes; k++)
		json_node(j, plan, &s->nodes[k], k);
	plan_json_array_end(j);
	plan_json_key(j, "edges");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < s->nedges; k++) {
		plan_json_object_begin(j);
		plan_json_key(j, "from");
		plan_json_uint(j, s->edges[k].from);
		plan_json_key(j, "to");
		plan_json_uint(j, s->edges[k].to);
		plan_json_key(j, "type");
		plan_json_string(j, plan_edge_type_name(s->edges[k].type));
		plan_json_key(j, "from_port");
		plan_json_string(j, plan_edge_port_name(s->edges[k].from_port));
		plan_json_key(j, "to_port");
		plan_json_string(j, plan_edge_port_name(s->edges[k].to_port));
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_object_end(j);
}

static void json_breakpoint(struct plan_json *j, const plan_t *plan, uint32_t i)
{
	const struct plan_breakpoint *b = plan_get_breakpoint(plan, i);
	struct plan_item it = { PLAN_ITEM_BREAK, i };

	plan_json_object_begin(j);
	plan_json_key(j, "index");
	plan_json_uint(j, i);
	plan_json_key(j, "variant");
	plan_json_uint(j, b->variant);
	plan_json_key(j, "op");
	json_index(j, b->op);
	plan_json_key(j, "name");
	plan_json_string(j, b->name);
	plan_json_key(j, "reason");
	plan_json_string(j, plan_break_reason_name(b->reason));
	plan_json_key(j, "detail");
	plan_json_string(j, b->detail);
	plan_json_key(j, "reads");
	json_index_list(j, b->reads, b->nreads);
	plan_json_key(j, "writes");
	json_index_list(j, b->writes, b->nwrites);
	if (plan_get_origin(plan) == PLAN_ORIGIN_RECORDED) {
		plan_json_key(j, "launch_first");
		plan_json_uint(j, b->launch_first);
		plan_json_key(j, "launch_count");
		plan_json_uint(j, b->launch_count);
		plan_json_key(j, "recorded_ns");
		plan_json_uint(j, b->recorded_ns);
		json_offsets(j, plan, b->variant, &it);
	}
	plan_json_object_end(j);
}

static void json_checks_dispatch(struct plan_json *j, const plan_t *plan,
                                 const struct plan_dump_opts *opts)
{
	plan_json_key(j, "checks");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_checks(plan); i++) {
		const struct plan_check *c = plan_get_check(plan, i);
		if (!dump_wanted(opts, c->variant))
			continue;
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, i);
		plan_json_key(j, "variant");
		plan_json_uint(j, c->variant);
		plan_json_key(j, "tensor");
		plan_json_uint(j, c->tensor);
		plan_json_key(j, "steps");
		plan_json_uint(j, c->steps);
		plan_json_key(j, "hash");
		json_hex(j, c->hash);
		plan_json_key(j, "sum");
		plan_json_double(j, c->sum);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);

	plan_json_key(j, "dispatch");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_dispatch(plan); i++) {
		const struct plan_dispatch *d = plan_get_dispatch(plan, i);
		if (opts != NULL && opts->variant != PLAN_NONE && d->variant != opts->variant)
			continue;
		plan_json_object_begin(j);
		plan_json_key(j, "tokens_min");
		plan_json_int(j, d->tokens_min);
		plan_json_key(j, "tokens_max");
		plan_json_int(j, d->tokens_max);
		plan_json_key(j, "requests_max");
		plan_json_uint(j, d->requests_max);
		plan_json_key(j, "uniform");
		plan_json_bool(j, (d->flags & PLAN_DISPATCH_UNIFORM) != 0);
		plan_json_key(j, "variant");
		json_index(j, d->variant);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
}

/* Weight sources, only in plans that have them (format 1.2). */
static void json_weights(struct plan_json *j, const plan_t *plan)
{
	char hash[24];

	if (plan_count_weight_sources(plan) == 0)
		return;
	plan_json_key(j, "weights");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_weight_sources(plan); i++) {
		const struct plan_weight_source *w = plan_get_weight_source(plan, i);
		plan_json_object_begin(j);
		plan_json_key(j, "tensor");
		plan_json_string(j, plan_get_tensor(plan, w->tensor)->name);
		plan_json_key(j, "offset");
		plan_json_uint(j, w->offset);
		plan_json_key(j, "file");
		plan_json_string(j, w->file);
		plan_json_key(j, "name");
		plan_json_string(j, w->name);
		plan_json_key(j, "dtype");
		plan_json_string(j, plan_dtype_name(w->dtype));
		plan_json_key(j, "bytes");
		plan_json_uint(j, w->bytes);
		plan_json_key(j, "xxh64");
		if (w->flags & PLAN_WSRC_HASHED) {
			snprintf(hash, sizeof hash, "%016llx", (unsigned long long)w->hash);
			plan_json_string(j, hash);
		} else {
			plan_json_null(j);
		}
		if (plan__uses_ranks(plan)) {
			plan_json_key(j, "slice");
			if (w->slice_len == 0) {
				plan_json_null(j);
			} else {
				plan_json_object_begin(j);
				plan_json_key(j, "outer");
				plan_json_uint(j, w->slice_outer);
				plan_json_key(j, "full");
				plan_json_uint(j, w->slice_full);
				plan_json_key(j, "inner");
				plan_json_uint(j, w->slice_inner);
				plan_json_key(j, "start");
				plan_json_uint(j, w->slice_start);
				plan_json_key(j, "len");
				plan_json_uint(j, w->slice_len);
				plan_json_object_end(j);
			}
		}
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
}

/* Recorded plans (1.4): the recording and what it recorded. */
static void json_addr(struct plan_json *j, const char *key, const struct plan_addr *a)
{
	plan_json_key(j, key);
	plan_json_object_begin(j);
	plan_json_key(j, "alloc");
	json_index(j, a->alloc);
	plan_json_key(j, "offset");
	plan_json_uint(j, a->offset);
	plan_json_object_end(j);
}

static void json_launch(struct plan_json *j, const plan_t *plan, uint32_t i)
{
	const struct plan_launch *l = plan_get_launch(plan, i);

	plan_json_object_begin(j);
	plan_json_key(j, "index");
	plan_json_uint(j, i);
	plan_json_key(j, "type");
	plan_json_string(j, plan_node_type_name(l->type));
	if (l->type == PLAN_NODE_KERNEL) {
		plan_json_key(j, "function");
		plan_json_uint(j, l->function);
		plan_json_key(j, "kernel");
		plan_json_string(j, plan_get_function(plan, l->function)->name);
		plan_json_key(j, "grid");
		json_triple(j, l->grid);
		plan_json_key(j, "block");
		json_triple(j, l->block);
		plan_json_key(j, "cluster");
		json_triple(j, l->cluster);
		plan_json_key(j, "shmem");
		plan_json_uint(j, l->shmem);
		plan_json_key(j, "pdl");
		plan_json_bool(j, (l->flags & PLAN_LAUNCH_PDL) != 0);
		plan_json_key(j, "cooperative");
		plan_json_bool(j, (l->flags & PLAN_LAUNCH_COOP) != 0);
		plan_json_key(j, "args_bytes");
		plan_json_uint(j, l->nargs);
		plan_json_key(j, "patches");
		plan_json_array_begin(j);
		for (uint32_t k = 0; k < l->npatches; k++) {
			plan_json_object_begin(j);
			plan_json_key(j, "byte");
			plan_json_uint(j, l->patches[k].byte);
			plan_json_key(j, "alloc");
			json_index(j, l->patches[k].addr.alloc);
			plan_json_key(j, "offset");
			plan_json_uint(j, l->patches[k].addr.offset);
			plan_json_object_end(j);
		}
		plan_json_array_end(j);
	} else {
		json_addr(j, "dst", &l->dst);
		if (l->type == PLAN_NODE_MEMCPY) {
			json_addr(j, "src", &l->src);
			plan_json_key(j, "bytes");
			plan_json_uint(j, l->bytes);
			plan_json_key(j, "data_kept");
			plan_json_bool(j, l->ndata != 0);
		} else {
			plan_json_key(j, "value");
			plan_json_uint(j, l->value);
			plan_json_key(j, "element");
			plan_json_uint(j, l->element);
			plan_json_key(j, "width");
			plan_json_uint(j, l->width);
			plan_json_key(j, "height");
			plan_json_uint(j, l->height);
			plan_json_key(j, "pitch");
			plan_json_uint(j, l->pitch);
		}
	}
	plan_json_object_end(j);
}

static void json_recorded(struct plan_json *j, const plan_t *plan)
{
	const struct plan_recording *r = plan_get_recording(plan);

	if (r == NULL)
		return;
	plan_json_key(j, "origin");
	plan_json_string(j, plan_origin_name(plan_get_origin(plan)));
	plan_json_key(j, "recording");
	plan_json_object_begin(j);
	plan_json_key(j, "command");
	plan_json_string(j, r->command);
	plan_json_key(j, "step_rule");
	plan_json_string(j, r->step_rule);
	plan_json_key(j, "libraries");
	plan_json_string(j, r->libraries);
	plan_json_key(j, "pid");
	plan_json_uint(j, r->pid);
	plan_json_key(j, "snapshot");
	plan_json_bool(j, (r->flags & PLAN_RECORD_SNAPSHOT) != 0);
	plan_json_key(j, "nvtx_step");
	plan_json_bool(j, (r->flags & PLAN_RECORD_NVTX_STEP) != 0);
	plan_json_key(j, "wall_ns");
	plan_json_uint(j, r->wall_ns);
	plan_json_key(j, "steps");
	plan_json_uint(j, r->steps);
	plan_json_object_end(j);

	plan_json_key(j, "modules");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_modules(plan); i++) {
		const struct plan_module *m = plan_get_module(plan, i);
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, i);
		plan_json_key(j, "name");
		plan_json_string(j, m->name);
		plan_json_key(j, "xxh64");
		json_hex(j, m->hash);
		plan_json_key(j, "bytes");
		plan_json_uint(j, m->bytes);
		plan_json_key(j, "kept");
		plan_json_bool(j, (m->flags & PLAN_MODULE_IMAGE) != 0);
		plan_json_key(j, "note");
		plan_json_string(j, m->note);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);

	plan_json_key(j, "functions");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_functions(plan); i++) {
		const struct plan_function *fn = plan_get_function(plan, i);
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, i);
		plan_json_key(j, "module");
		plan_json_uint(j, fn->module);
		plan_json_key(j, "name");
		plan_json_string(j, fn->name);
		plan_json_key(j, "params");
		plan_json_array_begin(j);
		for (uint32_t k = 0; k < fn->nparams; k++) {
			plan_json_object_begin(j);
			plan_json_key(j, "offset");
			plan_json_uint(j, fn->params[k].offset);
			plan_json_key(j, "size");
			plan_json_uint(j, fn->params[k].size);
			plan_json_object_end(j);
		}
		plan_json_array_end(j);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);

	plan_json_key(j, "allocations");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_allocs(plan); i++) {
		const struct plan_alloc *a = plan_get_alloc(plan, i);
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, i);
		plan_json_key(j, "address");
		json_hex(j, a->address);
		plan_json_key(j, "bytes");
		plan_json_uint(j, a->bytes);
		plan_json_key(j, "device");
		plan_json_uint(j, a->device);
		plan_json_key(j, "snapshot");
		plan_json_bool(j, (a->flags & PLAN_ALLOC_SNAPSHOT) != 0);
		plan_json_key(j, "vmm");
		plan_json_bool(j, (a->flags & PLAN_ALLOC_VMM) != 0);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);

	plan_json_key(j, "launches");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_launches(plan); i++)
		json_launch(j, plan, i);
	plan_json_array_end(j);
}

static void json_choices(struct plan_json *j, const plan_t *plan, const struct plan_dump_opts *opts)
{
	char label[160];

	plan_json_key(j, "choices");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_choices(plan); i++) {
		const struct plan_choice *c = plan_get_choice(plan, i);
		if (!dump_wanted(opts, c->variant))
			continue;
		plan_json_object_begin(j);
		plan_json_key(j, "index");
		plan_json_uint(j, i);
		plan_json_key(j, "variant");
		plan_json_uint(j, c->variant);
		plan_json_key(j, "op");
		plan_json_uint(j, c->op);
		plan_json_key(j, "op_label");
		plan_json_string(j, plan_op_label(plan, c->op, label, sizeof label));
		plan_json_key(j, "impl");
		plan_json_string(j, c->impl);
		plan_json_key(j, "tuned");
		plan_json_bool(j, (c->flags & PLAN_CHOICE_TUNED) != 0);
		plan_json_key(j, "close");
		plan_json_bool(j, (c->flags & PLAN_CHOICE_CLOSE) != 0);
		plan_json_key(j, "step");
		plan_json_bool(j, (c->flags & PLAN_CHOICE_STEP) != 0);
		plan_json_key(j, "candidates");
		plan_json_array_begin(j);
		for (uint32_t k = 0; k < c->ncand; k++) {
			plan_json_object_begin(j);
			plan_json_key(j, "impl");
			plan_json_string(j, c->cand[k].impl);
			plan_json_key(j, "us");
			plan_json_double(j, c->cand[k].us);
			plan_json_object_end(j);
		}
		plan_json_array_end(j);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
}

/* PLAN as one JSON object (formats/inspect-json.md). */
static void json_plan(struct plan_json *j, const plan_t *plan, const struct plan_dump_opts *opts)
{
	unsigned major, minor;
	char version[32];

	plan_get_format_version(plan, &major, &minor);
	snprintf(version, sizeof version, "%u.%u", major, minor);

	plan_json_object_begin(j);
	plan_json_key(j, "schema");
	plan_json_uint(j, DUMP_JSON_SCHEMA);
	plan_json_key(j, "format");
	plan_json_string(j, version);
	if (plan__uses_ranks(plan)) {
		const struct plan_dist *d = plan_get_dist(plan);
		plan_json_key(j, "dist");
		plan_json_object_begin(j);
		plan_json_key(j, "world");
		plan_json_uint(j, d->world);
		plan_json_key(j, "rank");
		plan_json_uint(j, d->rank);
		plan_json_key(j, "nccl_version");
		plan_json_int(j, d->nccl_version);
		if (d->nccl_mem != PLAN_NCCL_MEM_DEFAULT) {   /* 1.8 */
			plan_json_key(j, "nccl_mem");
			plan_json_string(j, "symmetric");
		}
		plan_json_object_end(j);
	}
	json_meta(j, plan);
	json_layout_stats(j, plan);
	json_dims_vars(j, plan);
	plan_json_key(j, "tensors");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_tensors(plan); i++)
		json_tensor(j, plan, i);
	plan_json_array_end(j);
	plan_json_key(j, "ops");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_ops(plan); i++)
		json_op(j, plan, i);
	plan_json_array_end(j);
	plan_json_key(j, "variants");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_variants(plan); i++)
		if (dump_wanted(opts, i))
			json_variant(j, plan, i);
	plan_json_array_end(j);
	plan_json_key(j, "segments");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_segments(plan); i++)
		if (dump_wanted(opts, plan_get_segment(plan, i)->variant))
			json_segment(j, plan, i);
	plan_json_array_end(j);
	plan_json_key(j, "breakpoints");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_breakpoints(plan); i++)
		if (dump_wanted(opts, plan_get_breakpoint(plan, i)->variant))
			json_breakpoint(j, plan, i);
	plan_json_array_end(j);
	json_checks_dispatch(j, plan, opts);
	json_choices(j, plan, opts);
	json_weights(j, plan);
	json_recorded(j, plan);
	/* Rank 0 of a tensor-parallel plan: every other rank's plan, as
	 * this one is written. */
	if (plan_count_ranks(plan) > 0) {
		plan_json_key(j, "ranks");
		plan_json_array_begin(j);
		for (uint32_t r = 1; r < plan_get_dist(plan)->world; r++)
			if (plan_get_rank(plan, r) != NULL)
				json_plan(j, plan_get_rank(plan, r), opts);
		plan_json_array_end(j);
	}
	plan_json_object_end(j);
}

int plan_dump_json(const plan_t *plan, FILE *f, const struct plan_dump_opts *opts,
                   struct plan_diag *diag)
{
	struct plan_json *j;
	int err;

	if ((err = dump_check_opts(plan, opts, diag)) != 0)
		return err;
	if ((j = plan_json_new(f)) == NULL) {
		if (diag != NULL) {
			diag->code = PLAN_ERR_NOMEM;
			snprintf(diag->message, sizeof diag->message, "out of memory");
		}
		return PLAN_ERR_NOMEM;
	}
	json_plan(j, plan, opts);
	plan_json_free(j);
	return dump_finish(f, diag);
}

/* ---------------------------------------------------------------------- */
/* DOT.                                                                    */

/* A DOT string's contents: quotes and backslashes escaped, control
 * characters (which the file format allows in strings) shown as '?'. */
static void dot_text(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', f);
		fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
	}
}

static void dot_op_line(FILE *f, const plan_t *plan, uint32_t op)
{
	char label[160];

	plan_op_label(plan, op, label, sizeof label);
	fprintf(f, "op %u ", op);
	dot_text(f, label);
}

/* The ids of the entry and exit nodes of a segment, for the edges that
 * join the items. Entry: the first node no edge leads to; exit: the last
 * node no edge leaves. */
static void dot_segment_ends(const struct plan_segment *s, uint32_t *entry, uint32_t *exit)
{
	*entry = 0;
	*exit = s->nnodes > 0 ? s->nnodes - 1 : 0;
	for (uint32_t n = 0; n < s->nnodes; n++) {
		uint32_t k;
		for (k = 0; k < s->nedges && s->edges[k].to != n; k++)
			;
		if (k == s->nedges) {
			*entry = n;
			break;
		}
	}
	for (uint32_t n = s->nnodes; n-- > 0;) {
		uint32_t k;
		for (k = 0; k < s->nedges && s->edges[k].from != n; k++)
			;
		if (k == s->nedges) {
			*exit = n;
			break;
		}
	}
}

static const char *dot_node_shape(int type)
{
	switch (type) {
	case PLAN_NODE_KERNEL: return "box";
	case PLAN_NODE_MEMCPY:
	case PLAN_NODE_MEMSET: return "ellipse";
	case PLAN_NODE_GRAPH:  return "box3d";
	case PLAN_NODE_EVENT_RECORD:
	case PLAN_NODE_EVENT_WAIT: return "cds";
	default:               return "diamond";
	}
}

static void dot_segment(FILE *f, const plan_t *plan, const struct plan_dump_opts *opts,
                        uint32_t si, uint32_t item)
{
	const struct plan_segment *s = plan_get_segment(plan, si);
	char first[160], last[160];

	plan_op_label(plan, s->op_first, first, sizeof first);
	plan_op_label(plan, s->op_first + s->op_count - 1, last, sizeof last);
	fprintf(f, "\t\tsubgraph \"cluster_s%u\" {\n", si);
	fprintf(f, "\t\t\tlabel=\"item %u: segment %u\\nops %u-%u (", item, si, s->op_first,
	        s->op_first + s->op_count - 1);
	dot_text(f, first);
	if (s->op_count > 1) {
		fputs("..", f);
		dot_text(f, last);
	}
	if (s->flags & PLAN_SEG_NODES)
		fprintf(f, ")\\n%u nodes, fingerprint %016" PRIx64 "\";\n", s->nnodes, s->fingerprint);
	else
		fprintf(f, ")\\nno nodes recorded\";\n");
	fputs("\t\t\tstyle=\"rounded,filled\"; color=\"#3b6ea8\"; fillcolor=\"#eaf1fb\";\n", f);
	if (!(s->flags & PLAN_SEG_NODES)) {
		/* The host backend records ops, not nodes: draw them as a chain. */
		for (uint32_t k = 0; k < s->op_count; k++) {
			uint32_t op = s->op_first + k;
			fprintf(f, "\t\t\t\"s%u_o%u\" [shape=box, style=\"rounded,filled\", "
			        "fillcolor=white, label=\"", si, op);
			dot_op_line(f, plan, op);
			fputs("\\n", f);
			dot_text(f, plan_get_op(plan, op)->kind);
			fputs("\"];\n", f);
		}
		for (uint32_t k = 1; k < s->op_count; k++)
			fprintf(f, "\t\t\t\"s%u_o%u\" -> \"s%u_o%u\";\n", si, s->op_first + k - 1, si,
			        s->op_first + k);
	} else if (s->nnodes == 0) {
		fprintf(f, "\t\t\t\"s%u_n0\" [shape=plaintext, label=\"(empty graph)\"];\n", si);
	} else {
		for (uint32_t k = 0; k < s->nnodes; k++) {
			const struct plan_node *n = &s->nodes[k];
			fprintf(f, "\t\t\t\"s%u_n%u\" [shape=%s, style=filled, fillcolor=white, "
			        "label=\"", si, k, dot_node_shape(n->type));
			if (n->type == PLAN_NODE_KERNEL) {
				char name[256];
				const char *shown = NULL;
				if (opts != NULL && opts->kernel_text != NULL)
					shown = opts->kernel_text(n->kernel, name, sizeof name, opts->kernel_ctx);
				dot_text(f, shown != NULL ? shown : n->kernel);
				fprintf(f, "\\n<<<(%u,%u,%u), (%u,%u,%u)", n->grid[0], n->grid[1],
				        n->grid[2], n->block[0], n->block[1], n->block[2]);
				if (n->shmem > 0)
					fprintf(f, ", %u", n->shmem);
				fputs(">>>", f);
			} else {
				fputs(plan_node_type_name(n->type), f);
			}
			if (n->op != PLAN_NONE) {
				fputs("\\n", f);
				dot_op_line(f, plan, n->op);
			}
			fputs("\"];\n", f);
		}
		/* Programmatic edges dashed: the next kernel may start early. */
		for (uint32_t k = 0; k < s->nedges; k++) {
			const struct plan_edge *e = &s->edges[k];
			char text[96];
			fprintf(f, "\t\t\t\"s%u_n%u\" -> \"s%u_n%u\"", si, e->from, si, e->to);
			if (e->type != PLAN_EDGE_DEFAULT || e->from_port != PLAN_PORT_DEFAULT ||
			    e->to_port != PLAN_PORT_DEFAULT) {
				/* The label: the edge's text without its "from->to". */
				const char *t = strchr(plan_edge_text(e, text, sizeof text), ' ');
				fprintf(f, " [style=%s, label=\"%s\"]",
				        e->type == PLAN_EDGE_PROGRAMMATIC ? "dashed" : "solid",
				        t != NULL ? t + 1 : "");
			}
			fputs(";\n", f);
		}
	}
	fputs("\t\t}\n", f);
}

/* ---------------------------------------------------------------------- */
/* Recorded segments (1.4): repeated layers folded.                        */

/* Whether nodes A and B of a recorded segment are alike for folding: the
 * same type and, for kernels, the same function, grid and block. */
static int fold_alike(const plan_t *plan, const struct plan_node *a, const struct plan_node *b)
{
	const struct plan_launch *x, *y;

	if (a->type != b->type)
		return 0;
	if (a->type != PLAN_NODE_KERNEL)
		return 1;
	x = plan_get_launch(plan, a->launch);
	y = plan_get_launch(plan, b->launch);
	if (x == NULL || y == NULL)
		return x == y;
	return x->function == y->function && memcmp(x->grid, y->grid, sizeof x->grid) == 0 &&
	       memcmp(x->block, y->block, sizeof x->block) == 0;
}

#define FOLD_MAX_PERIOD 1024

/* The folding of recorded segments and of script variants alike: over N
 * positions, for each period P, a run of positions i with ALIKE(i, i + P),
 * of length L >= P, starting at S, is floor(L / P) + 1 repeats of the P
 * positions from S: n comparisons per period, periods up to
 * FOLD_MAX_PERIOD. The run that covers the most positions wins (then the
 * shortest period, then the first). */
static int fold_find(uint32_t n, int (*alike)(const void *ctx, uint32_t a, uint32_t b),
                     const void *ctx, uint32_t *first, uint32_t *period, uint32_t *count)
{
	uint32_t best_cover = 0;

	*first = 0;
	*period = 0;
	*count = 0;
	for (uint32_t p = 1; p <= n / 2 && p <= FOLD_MAX_PERIOD; p++) {
		uint32_t run = 0;
		for (uint32_t i = 0; i + p <= n; i++) {
			if (i + p < n && alike(ctx, i, i + p)) {
				run++;
				continue;
			}
			if (run >= p) {
				uint32_t start = i - run, reps = run / p + 1;
				uint32_t cover = reps * p;
				if (cover > best_cover) {
					best_cover = cover;
					*first = start;
					*period = p;
					*count = reps;
				}
			}
			run = 0;
		}
	}
	return *count >= 2;
}

struct fold_nodes {
	const plan_t              *plan;
	const struct plan_segment *segment;
};

static int fold_nodes_alike(const void *ctx, uint32_t a, uint32_t b)
{
	const struct fold_nodes *c = ctx;

	return fold_alike(c->plan, &c->segment->nodes[a], &c->segment->nodes[b]);
}

int plan_segment_fold(const plan_t *plan, const struct plan_segment *segment, uint32_t *first,
                      uint32_t *period, uint32_t *count)
{
	struct fold_nodes c = { plan, segment };

	return fold_find(segment->nnodes, fold_nodes_alike, &c, first, period, count);
}

/* A script variant's step, op by op, for folding: each op the step runs
 * with what makes two repeats of it the same. */
struct fold_op {
	uint32_t    op;
	uint32_t    item;       /* the variant's item that runs it */
	int         brk;        /* run as a breakpoint */
	int         starts;     /* the first op of its item */
	const char *impl;       /* the implementation chosen; NULL for none */
	uint64_t    nodes;      /* its nodes (type, kernel, grid, block), hashed */
};

struct fold_step {
	const plan_t         *plan;
	const struct fold_op *ops;
};

static int fold_op_alike(const void *ctx, uint32_t a, uint32_t b)
{
	const struct fold_step *c = ctx;
	const struct fold_op *x = &c->ops[a], *y = &c->ops[b];
	const struct plan_op *p = plan_get_op(c->plan, x->op), *q = plan_get_op(c->plan, y->op);
	/* The same op of the script (its kind, where it is written), run
	 * the same way: in a segment or as a break, starting an item or not.
	 * Its implementation and nodes may differ: a tuner picks between
	 * close candidates op by op, and a library's candidates launch one
	 * kernel or two. */
	if (strcmp(p->kind, q->kind) != 0 || p->line != q->line || p->col != q->col ||
	    p->nin != q->nin || p->nout != q->nout || (p->flags ^ q->flags) & PLAN_OP_EAGER)
		return 0;
	return x->brk == y->brk && x->starts == y->starts;
}

/* Whether ops A and B of a step, alike, run by other implementations or
 * kernels (a tuner's choice between close candidates). */
static int fold_op_differs(const struct fold_op *a, const struct fold_op *b)
{
	if (a->nodes != b->nodes || (a->impl == NULL) != (b->impl == NULL))
		return 1;
	return a->impl != NULL && strcmp(a->impl, b->impl) != 0;
}

/* The ops of variant VI's step in the order it runs them, into a new
 * array of *N; NULL when out of memory. */
static struct fold_op *fold_step_ops(const plan_t *plan, uint32_t vi, uint32_t *n)
{
	const struct plan_variant *v = plan_get_variant(plan, vi);
	struct fold_op *ops;
	uint32_t total = 0, at = 0;

	for (uint32_t k = 0; k < v->nitems; k++)
		total += v->items[k].kind == PLAN_ITEM_SEGMENT ?
			plan_get_segment(plan, v->items[k].index)->op_count : 1;
	ops = calloc((size_t)total + 1, sizeof *ops);
	if (ops == NULL)
		return NULL;
	for (uint32_t k = 0; k < v->nitems; k++) {
		const struct plan_item *it = &v->items[k];
		uint32_t base = at;
		if (it->kind != PLAN_ITEM_SEGMENT) {
			ops[at].op = plan_get_breakpoint(plan, it->index)->op;
			ops[at].item = k;
			ops[at].brk = 1;
			ops[at++].starts = 1;
			continue;
		}
		const struct plan_segment *s = plan_get_segment(plan, it->index);
		for (uint32_t o = 0; o < s->op_count; o++) {
			ops[at].op = s->op_first + o;
			ops[at].item = k;
			ops[at].starts = o == 0;
			ops[at++].nodes = 0x9e3779b97f4a7c15ULL;
		}
		/* Each node into the hash of its op. */
		for (uint32_t d = 0; d < s->nnodes; d++) {
			const struct plan_node *nd = &s->nodes[d];
			uint64_t h;
			if (nd->op == PLAN_NONE || nd->op < s->op_first ||
			    nd->op - s->op_first >= s->op_count)
				continue;
			h = ops[base + nd->op - s->op_first].nodes;
			h = plan_hash64(&nd->type, sizeof nd->type, h);
			h = plan_hash64(nd->kernel, strlen(nd->kernel), h);
			h = plan_hash64(nd->grid, sizeof nd->grid, h);
			h = plan_hash64(nd->block, sizeof nd->block, h);
			ops[base + nd->op - s->op_first].nodes = h;
		}
	}
	for (uint32_t k = 0; k < at; k++) {
		const struct plan_choice *c = plan_find_choice(plan, vi, ops[k].op);
		ops[k].impl = c != NULL ? c->impl : NULL;
	}
	*n = at;
	return ops;
}

int plan_variant_fold(const plan_t *plan, uint32_t variant, uint32_t *first, uint32_t *period,
                      uint32_t *count)
{
	struct fold_step c = { plan, NULL };
	struct fold_op *ops;
	uint32_t n = 0;
	int r;

	*first = *period = *count = 0;
	if (variant >= plan_count_variants(plan) || plan_get_origin(plan) == PLAN_ORIGIN_RECORDED)
		return 0;
	if ((ops = fold_step_ops(plan, variant, &n)) == NULL)
		return -1;
	c.ops = ops;
	r = fold_find(n, fold_op_alike, &c, first, period, count);
	free(ops);
	return r;
}

/* The node a folded segment draws for node K: itself, or the node of the
 * first repeat that stands for it. */
static uint32_t fold_map(uint32_t k, uint32_t first, uint32_t period, uint32_t count)
{
	if (count < 2 || k < first + period || k >= first + period * count)
		return k;
	return first + (k - first) % period;
}

struct fold_edge {
	uint32_t from, to;
	uint32_t edge;   /* the first edge of the segment that maps to it */
};

static int by_fold_edge(const void *a, const void *b)
{
	const struct fold_edge *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return x->edge < y->edge ? -1 : x->edge > y->edge;
}

static void dot_recorded_node(FILE *f, const plan_t *plan, const struct plan_dump_opts *opts,
                              uint32_t si, uint32_t k, const char *indent)
{
	const struct plan_segment *s = plan_get_segment(plan, si);
	const struct plan_node *n = &s->nodes[k];
	char text[512], name[256];

	fprintf(f, "%s\"s%u_n%u\" [shape=%s, style=filled, fillcolor=white, label=\"", indent, si,
	        k, dot_node_shape(n->type));
	if (n->type == PLAN_NODE_KERNEL) {
		const char *shown = NULL;
		if (opts != NULL && opts->kernel_text != NULL)
			shown = opts->kernel_text(n->kernel, name, sizeof name, opts->kernel_ctx);
		dot_text(f, shown != NULL ? shown : n->kernel);
		fprintf(f, "\\n<<<(%u,%u,%u), (%u,%u,%u)", n->grid[0], n->grid[1], n->grid[2],
		        n->block[0], n->block[1], n->block[2]);
		if (n->shmem > 0)
			fprintf(f, ", %u", n->shmem);
		fputs(">>>", f);
	} else if (n->launch != PLAN_NONE) {
		dot_text(f, plan_launch_text(plan, n->launch, NULL, text, sizeof text));
	} else {
		fputs(plan_node_type_name(n->type), f);
	}
	fputs("\"];\n", f);
}

static void dot_recorded_segment(FILE *f, const plan_t *plan, const struct plan_dump_opts *opts,
                                 uint32_t si, uint32_t item)
{
	const struct plan_segment *s = plan_get_segment(plan, si);
	uint32_t first, period, count, ne = 0;
	struct fold_edge *edges;
	char t[32];

	if (opts == NULL || !opts->nodes)
		plan_segment_fold(plan, s, &first, &period, &count);
	else
		first = period = count = 0;
	fprintf(f, "\t\tsubgraph \"cluster_s%u\" {\n", si);
	fprintf(f, "\t\t\tlabel=\"item %u: segment %u\\n%u nodes, fingerprint %016" PRIx64,
	        item, si, s->nnodes, s->fingerprint);
	if (s->recorded_ns != 0)
		fprintf(f, "\\nrecorded %s", plan_ns_text(s->recorded_ns, t, sizeof t));
	fputs("\";\n", f);
	fputs("\t\t\tstyle=\"rounded,filled\"; color=\"#3b6ea8\"; fillcolor=\"#eaf1fb\";\n", f);
	for (uint32_t k = 0; k < s->nnodes; k++) {
		if (count >= 2 && k == first) {
			fprintf(f, "\t\t\tsubgraph \"cluster_s%u_layer\" {\n", si);
			fprintf(f, "\t\t\t\tlabel=\"x %u\"; style=\"dashed,filled\"; "
			        "color=\"#3b6ea8\"; fillcolor=\"#d5e3f5\";\n", count);
			for (uint32_t r = 0; r < period; r++)
				dot_recorded_node(f, plan, opts, si, first + r, "\t\t\t\t");
			fputs("\t\t\t}\n", f);
		}
		if (fold_map(k, first, period, count) != k ||
		    (count >= 2 && k >= first && k < first + period))
			continue;
		dot_recorded_node(f, plan, opts, si, k, "\t\t\t");
	}
	/* Edges between drawn nodes, each pair once; an edge from a layer's
	 * last node back to its first shows the repeat. */
	edges = malloc(((size_t)s->nedges + 1) * sizeof *edges);
	if (edges == NULL) {
		fputs("\t\t}\n", f);
		return;
	}
	for (uint32_t k = 0; k < s->nedges; k++) {
		uint32_t a = fold_map(s->edges[k].from, first, period, count);
		uint32_t b = fold_map(s->edges[k].to, first, period, count);
		if (a != b)
			edges[ne++] = (struct fold_edge){ a, b, k };
	}
	qsort(edges, ne, sizeof *edges, by_fold_edge);
	for (uint32_t k = 0; k < ne; k++) {
		const struct plan_edge *e = &s->edges[edges[k].edge];
		char text[96];
		if (k > 0 && edges[k].from == edges[k - 1].from && edges[k].to == edges[k - 1].to)
			continue;
		fprintf(f, "\t\t\t\"s%u_n%u\" -> \"s%u_n%u\"", si, edges[k].from, si, edges[k].to);
		if (e->type != PLAN_EDGE_DEFAULT || e->from_port != PLAN_PORT_DEFAULT ||
		    e->to_port != PLAN_PORT_DEFAULT) {
			const char *tt = strchr(plan_edge_text(e, text, sizeof text), ' ');
			fprintf(f, " [style=%s, label=\"%s\"]",
			        e->type == PLAN_EDGE_PROGRAMMATIC ? "dashed" : "solid",
			        tt != NULL ? tt + 1 : "");
		}
		fputs(";\n", f);
	}
	free(edges);
	fputs("\t\t}\n", f);
}

/* The DOT id of an item's entry or exit node, and the cluster to clip an
 * edge at ("" for a breakpoint). */
static void dot_item_end(const plan_t *plan, const struct plan_dump_opts *opts,
                         const struct plan_item *it, int exit, char *id, size_t len,
                         char *cluster, size_t clen)
{
	if (it->kind == PLAN_ITEM_BREAK) {
		snprintf(id, len, "b%u", it->index);
		snprintf(cluster, clen, "%s", "");
		return;
	}
	const struct plan_segment *s = plan_get_segment(plan, it->index);
	snprintf(cluster, clen, "cluster_s%u", it->index);
	if (!(s->flags & PLAN_SEG_NODES)) {
		snprintf(id, len, "s%u_o%u", it->index, exit ? s->op_first + s->op_count - 1 : s->op_first);
	} else {
		uint32_t entry, last, first = 0, period = 0, count = 0;
		dot_segment_ends(s, &entry, &last);
		if (plan_get_origin(plan) == PLAN_ORIGIN_RECORDED && (opts == NULL || !opts->nodes))
			plan_segment_fold(plan, s, &first, &period, &count);
		snprintf(id, len, "s%u_n%u", it->index,
		         fold_map(exit ? last : entry, first, period, count));
	}
}

/* ---------------------------------------------------------------------- */
/* Script variants folded: segments and breaks, the repeated run once.      */

/* "rmsnorm, 3 matmul, 2 rope": the kinds of OPS[A..B), in the order they
 * first come, a line break after every fourth. */
static void dot_kinds(FILE *f, const plan_t *plan, const struct fold_op *ops, uint32_t a,
                      uint32_t b)
{
	uint32_t shown = 0;

	for (uint32_t k = a; k < b; k++) {
		const char *kind = plan_get_op(plan, ops[k].op)->kind;
		uint32_t n = 0, seen = 0;
		for (uint32_t q = a; q < k && !seen; q++)
			seen = strcmp(plan_get_op(plan, ops[q].op)->kind, kind) == 0;
		if (seen)
			continue;
		for (uint32_t q = k; q < b; q++)
			n += strcmp(plan_get_op(plan, ops[q].op)->kind, kind) == 0;
		fputs(shown == 0 ? "" : shown % 4 == 0 ? ",\\n" : ", ", f);
		if (n > 1)
			fprintf(f, "%u ", n);
		dot_text(f, kind);
		shown++;
	}
}

/* One piece of a folded step: OPS[A..B), run by one item, drawn as one
 * shape with id ID. REPS > 1: a piece of the repeated run, standing for
 * REPS pieces PERIOD ops apart. */
static void dot_piece(FILE *f, const plan_t *plan, uint32_t vi, const struct fold_op *ops,
                      uint32_t n, uint32_t a, uint32_t b, uint32_t reps, uint32_t period,
                      const char *id, const char *indent)
{
	const struct plan_variant *v = plan_get_variant(plan, vi);
	const struct plan_item *it = &v->items[ops[a].item];
	const struct plan_item *last = &v->items[ops[a + (reps - 1) * period].item];
	char x[160], y[160];

	if (it->kind == PLAN_ITEM_BREAK) {
		const struct plan_breakpoint *bp = plan_get_breakpoint(plan, it->index);
		const struct plan_breakpoint *bl = plan_get_breakpoint(plan, last->index);
		fprintf(f, "%s\"%s\" [shape=octagon, style=filled, fillcolor=\"%s\", "
		        "color=\"#b85c00\", label=\"break ", indent, id,
		        bp->reason == PLAN_BREAK_MODE ? "#fff1dc" : "#ffcf99");
		dot_text(f, bp->name);
		if (reps > 1) {
			fputs(" .. ", f);
			dot_text(f, bl->name);
		}
		fputs("\\n", f);
		dot_text(f, plan_get_op(plan, bp->op)->kind);
		fprintf(f, " (%s)\"];\n", plan_break_reason_name(bp->reason));
		return;
	}
	const struct plan_segment *s = plan_get_segment(plan, it->index);
	int whole = ops[a].starts && (b == n || ops[b].item != ops[a].item), differs = 0;
	uint32_t nodes = 0, o0 = ops[a].op, o1 = ops[b - 1].op;
	for (uint32_t d = 0; d < s->nnodes; d++)
		nodes += s->nodes[d].op >= o0 && s->nodes[d].op <= o1;
	fprintf(f, "%s\"%s\" [shape=box, style=\"rounded,filled\", color=\"#3b6ea8\", "
	        "fillcolor=\"#eaf1fb\", label=\"", indent, id);
	if (reps > 1 && last->index != it->index)
		fprintf(f, "segments %u-%u%s", it->index, last->index, whole ? "" : " (a part of each)");
	else
		fprintf(f, "segment %u%s", it->index, whole ? "" : " (a part)");
	plan_op_label(plan, o0, x, sizeof x);
	plan_op_label(plan, o1, y, sizeof y);
	fprintf(f, "\\nop%s %u", o1 > o0 ? "s" : "", o0);
	if (o1 > o0)
		fprintf(f, "-%u", o1);
	fputs(" ", f);
	dot_text(f, x);
	if (o1 > o0) {
		fputs("..", f);
		dot_text(f, y);
	}
	fputs("\\n", f);
	dot_kinds(f, plan, ops, a, b);
	if (s->flags & PLAN_SEG_NODES)
		fprintf(f, "\\n%u node%s", nodes, nodes == 1 ? "" : "s");
	for (uint32_t k = a; k < b && !differs; k++)
		for (uint32_t r = 1; r < reps && !differs; r++)
			differs = fold_op_differs(&ops[k], &ops[k + r * period]);
	if (differs)
		fprintf(f, "\\nkernels differ between repeats");
	fputs("\"];\n", f);
}

/* Variant VI drawn folded: the pieces before the repeated run, the run's
 * first repeat in a cluster "x COUNT", the pieces after it; a dashed edge
 * from the run's end back to its start. Returns 0 when it could not
 * (out of memory): the caller draws the variant whole. */
static int dot_folded_steps(FILE *f, const plan_t *plan, uint32_t vi, uint32_t first,
                            uint32_t period, uint32_t count)
{
	uint32_t n = 0, end = first + period * count, loop_b = 0;
	struct fold_op *ops = fold_step_ops(plan, vi, &n);
	uint32_t *piece = ops != NULL ? malloc(((size_t)n + 1) * sizeof *piece) : NULL;
	uint32_t npieces = 0;
	char id[48], x[160], y[160];

	if (piece == NULL) {
		free(ops);
		return 0;
	}
	for (uint32_t a = 0; a < n;) {
		int in_run;
		uint32_t limit, b;
		if (a == first + period)
			a = end;       /* the other repeats are not drawn */
		if (a >= n)
			break;
		/* Regions: before the run, its first repeat, after it. */
		in_run = a >= first && a < first + period;
		limit = a < first ? first : in_run ? first + period : n;
		if (a == first) {
			plan_op_label(plan, ops[first].op, x, sizeof x);
			plan_op_label(plan, ops[end - 1].op, y, sizeof y);
			fprintf(f, "\t\tsubgraph \"cluster_v%u_repeat\" {\n", vi);
			fprintf(f, "\t\t\tlabel=\"x %u: ops %u-%u, %u a repeat (", count, ops[first].op,
			        ops[end - 1].op, period);
			dot_text(f, x);
			fputs("..", f);
			dot_text(f, y);
			fputs(")\"; labeljust=l; style=\"dashed,filled\"; color=\"#3b6ea8\"; fillcolor=\"#f5f8fc\";\n", f);
		}
		b = a + 1;
		while (b < limit && ops[b].item == ops[a].item)
			b++;
		snprintf(id, sizeof id, "v%u_p%u", vi, a);
		dot_piece(f, plan, vi, ops, n, a, b, in_run ? count : 1, period, id,
		          in_run ? "\t\t\t" : "\t\t");
		if (in_run)
			loop_b = a;
		if (in_run && b == first + period)
			fputs("\t\t}\n", f);
		piece[npieces++] = a;
		a = b;
	}
	/* The step, outside the cluster (an edge inside one would pull its
	 * ends into it). */
	fprintf(f, "\t\t\"v%u_start\" -> \"v%u_p0\" [style=bold, color=\"#b85c00\"];\n", vi, vi);
	for (uint32_t k = 1; k < npieces; k++)
		fprintf(f, "\t\t\"v%u_p%u\" -> \"v%u_p%u\" [style=bold, color=\"#b85c00\"];\n", vi,
		        piece[k - 1], vi, piece[k]);
	fprintf(f, "\t\t\"v%u_p%u\" -> \"v%u_end\" [style=bold, color=\"#b85c00\"];\n", vi,
	        piece[npieces - 1], vi);
	/* The next repeat: the same segment goes on, or the next item. */
	fprintf(f, "\t\t\"v%u_p%u\" -> \"v%u_p%u\" [style=dashed, color=\"#3b6ea8\", "
	        "constraint=false, label=\"next repeat%s\"];\n", vi, loop_b, vi, first,
	        ops[first + period].starts ? "" : " (the same segment)");
	free(piece);
	free(ops);
	return 1;
}

static void dot_variant(FILE *f, const plan_t *plan, const struct plan_dump_opts *opts,
                        uint32_t vi)
{
	const struct plan_variant *v = plan_get_variant(plan, vi);
	int recorded = plan_get_origin(plan) == PLAN_ORIGIN_RECORDED;
	char from[48], to[48], ltail[48], lhead[48], t[32];
	uint32_t ffirst = 0, fperiod = 0, fcount = 0;
	int folded = !recorded && (opts == NULL || !opts->nodes) &&
	             plan_variant_fold(plan, vi, &ffirst, &fperiod, &fcount) == 1 &&
	             fcount >= PLAN_DOT_FOLD_MIN;

	fprintf(f, "\tsubgraph \"cluster_v%u\" {\n", vi);
	if (recorded) {
		fprintf(f, "\t\tlabel=\"variant %lld \\\"", (long long)v->tokens);
		dot_text(f, v->label);
		fprintf(f, "\\\", %u item%s, seen %llu, median %s\";\n", v->nitems,
		        v->nitems == 1 ? "" : "s", (unsigned long long)v->seen,
		        plan_ns_text(v->recorded_ns, t, sizeof t));
	} else {
		fprintf(f, "\t\tlabel=\"variant %lld (%s), %u item%s", (long long)v->tokens,
		        plan_mode_name(v->mode), v->nitems, v->nitems == 1 ? "" : "s");
		if (folded)
			fprintf(f, "; %u repeats of %u ops drawn once", fcount, fperiod);
		fputs("\";\n", f);
	}
	fputs("\t\tstyle=dashed; color=\"#777777\";\n", f);
	fprintf(f, "\t\t\"v%u_start\" [shape=circle, style=filled, fillcolor=black, "
	        "fontcolor=white, label=\"%lld\"];\n", vi, (long long)v->tokens);
	fprintf(f, "\t\t\"v%u_end\" [shape=doublecircle, label=\"end\"];\n", vi);
	if (folded && dot_folded_steps(f, plan, vi, ffirst, fperiod, fcount)) {
		fputs("\t}\n", f);
		return;
	}
	for (uint32_t k = 0; k < v->nitems; k++) {
		const struct plan_item *it = &v->items[k];
		if (it->kind == PLAN_ITEM_SEGMENT) {
			if (recorded)
				dot_recorded_segment(f, plan, opts, it->index, k);
			else
				dot_segment(f, plan, opts, it->index, k);
			continue;
		}
		const struct plan_breakpoint *b = plan_get_breakpoint(plan, it->index);
		if (recorded) {
			char text[512], name[256];
			fprintf(f, "\t\t\"b%u\" [shape=octagon, style=filled, fillcolor=\"#ffcf99\", "
			        "color=\"#b85c00\", label=\"item %u: break ", it->index, k);
			dot_text(f, b->name);
			fprintf(f, " (%u launch%s, %s)", b->launch_count,
			        b->launch_count == 1 ? "" : "es",
			        plan_ns_text(b->recorded_ns, t, sizeof t));
			for (uint32_t l = 0; l < b->launch_count && l < 4; l++) {
				const struct plan_launch *la = plan_get_launch(plan, b->launch_first + l);
				const char *shown = NULL;
				if (la != NULL && la->type == PLAN_NODE_KERNEL && opts != NULL &&
				    opts->kernel_text != NULL)
					shown = opts->kernel_text(plan_get_function(plan, la->function)->name,
					                          name, sizeof name, opts->kernel_ctx);
				fputs("\\n", f);
				dot_text(f, plan_launch_text(plan, b->launch_first + l, shown, text,
				                             sizeof text));
			}
			if (b->launch_count > 4)
				fprintf(f, "\\n... %u more", b->launch_count - 4);
			fputs("\"];\n", f);
			continue;
		}
		fprintf(f, "\t\t\"b%u\" [shape=octagon, style=filled, fillcolor=\"%s\", "
		        "color=\"#b85c00\", label=\"item %u: break ", it->index,
		        b->reason == PLAN_BREAK_MODE ? "#fff1dc" : "#ffcf99", k);
		dot_text(f, b->name);
		fprintf(f, "\\nop %u ", b->op);
		dot_text(f, plan_get_op(plan, b->op)->kind);
		fprintf(f, " (%s)\"];\n", plan_break_reason_name(b->reason));
	}
	/* The step: start, every item in order, end. */
	snprintf(from, sizeof from, "v%u_start", vi);
	ltail[0] = '\0';
	for (uint32_t k = 0; k <= v->nitems; k++) {
		if (k < v->nitems)
			dot_item_end(plan, opts, &v->items[k], 0, to, sizeof to, lhead, sizeof lhead);
		else {
			snprintf(to, sizeof to, "v%u_end", vi);
			lhead[0] = '\0';
		}
		fprintf(f, "\t\t\"%s\" -> \"%s\" [style=bold, color=\"#b85c00\"", from, to);
		if (ltail[0] != '\0')
			fprintf(f, ", ltail=\"%s\"", ltail);
		if (lhead[0] != '\0')
			fprintf(f, ", lhead=\"%s\"", lhead);
		fputs("];\n", f);
		if (k < v->nitems)
			dot_item_end(plan, opts, &v->items[k], 1, from, sizeof from, ltail, sizeof ltail);
	}
	fputs("\t}\n", f);
}

int plan_dump_dot(const plan_t *plan, FILE *f, const struct plan_dump_opts *opts,
                  struct plan_diag *diag)
{
	const struct plan_meta *m = plan_get_meta(plan);
	int err;

	if ((err = dump_check_opts(plan, opts, diag)) != 0)
		return err;
	fputs("digraph \"plan\" {\n", f);
	fputs("\tgraph [compound=true, newrank=true, fontname=\"Helvetica\", fontsize=11, "
	      "labelloc=t, label=\"", f);
	dot_text(f, opts != NULL && opts->title != NULL ? opts->title :
	         plan_get_recording(plan) != NULL ? plan_get_recording(plan)->command : m->script);
	fprintf(f, "\\n%s", plan_backend_name(m->backend));
	if (m->device[0] != '\0') {
		fputs(", ", f);
		dot_text(f, m->device);
	}
	if (m->features != 0) {
		char feat[64];
		fprintf(f, ", features %s", plan_features_text(m->features, feat, sizeof feat));
	}
	if (plan_get_dist(plan)->world > 1) {
		char dist[64];
		fprintf(f, ", %s", plan_dist_text(plan, dist, sizeof dist));
	}
	fputs("\"];\n", f);
	fputs("\tnode [fontname=\"Helvetica\", fontsize=10];\n", f);
	fputs("\tedge [fontname=\"Helvetica\", fontsize=9];\n", f);
	for (uint32_t i = 0; i < plan_count_variants(plan); i++)
		if (dump_wanted(opts, i))
			dot_variant(f, plan, opts, i);
	fputs("}\n", f);
	return dump_finish(f, diag);
}
