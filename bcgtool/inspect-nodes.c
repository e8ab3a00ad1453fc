/*
 * inspect-nodes.c - bcgtool inspect's sections of graph nodes: each
 * segment's nodes (kernel names demangled, arena operands named), and the
 * capture statistics with a histogram of kernels.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "inspect.h"

/* What an arena offset points at, for a node of op OP: a tensor the op
 * uses, else any tensor or var mirror that holds it ("x", "k_cache+64"),
 * else the bare offset. Activations share space, so the op's own tensors
 * are the best guess. */
static void inspect_operand(const plan_t *plan, uint32_t op, uint64_t off, char *buf, size_t len)
{
	const struct plan_op *o = op != PLAN_NONE ? plan_get_op(plan, op) : NULL;
	uint32_t found = PLAN_NONE;

	for (uint32_t k = 0; o != NULL && k < o->nin + o->nout && found == PLAN_NONE; k++) {
		uint32_t ti = k < o->nin ? o->in[k] : o->out[k - o->nin];
		const struct plan_tensor *t = plan_get_tensor(plan, ti);
		if (t != NULL && off >= t->offset && off - t->offset < t->bytes)
			found = ti;
	}
	for (uint32_t ti = 0; ti < plan_count_tensors(plan) && found == PLAN_NONE; ti++) {
		const struct plan_tensor *t = plan_get_tensor(plan, ti);
		if (off >= t->offset && off - t->offset < t->bytes)
			found = ti;
	}
	if (found != PLAN_NONE) {
		const struct plan_tensor *t = plan_get_tensor(plan, found);
		if (off == t->offset)
			snprintf(buf, len, "%s", t->name);
		else
			snprintf(buf, len, "%s+%llu", t->name, (unsigned long long)(off - t->offset));
		return;
	}
	for (uint32_t vi = 0; vi < plan_count_vars(plan); vi++) {
		const struct plan_var *v = plan_get_var(plan, vi);
		if (off >= v->offset && off - v->offset < 4) {
			snprintf(buf, len, "var %s", v->name);
			return;
		}
	}
	snprintf(buf, len, "@%llu", (unsigned long long)off);
}

/* Node N's arena operands into BUF: "[0]=x [2]=h", each operand once
 * with every parameter word that points at it ("[22,54]=w_q[0]"): a
 * library kernel's parameters hold one pointer several times. */
static void inspect_operands(const plan_t *plan, const struct plan_node *n, char *buf, size_t len)
{
	char (*text)[192] = xcalloc((size_t)n->nparams + 1, sizeof *text);
	unsigned char *done = xcalloc((size_t)n->nparams + 1, 1);
	size_t at = 0;

	snprintf(buf, len, "-");
	for (uint32_t p = 0; p < n->nparams; p++)
		inspect_operand(plan, n->op, n->params[p].offset, text[p], sizeof text[p]);
	for (uint32_t p = 0; p < n->nparams && at < len; p++) {
		int w;
		if (done[p])
			continue;
		w = snprintf(buf + at, len - at, "%s[%u", at ? " " : "", n->params[p].index);
		at += w > 0 ? (size_t)w : 0;
		for (uint32_t q = p + 1; q < n->nparams && at < len; q++)
			if (!done[q] && strcmp(text[q], text[p]) == 0) {
				done[q] = 1;
				w = snprintf(buf + at, len - at, ",%u", n->params[q].index);
				at += w > 0 ? (size_t)w : 0;
			}
		if (at < len) {
			w = snprintf(buf + at, len - at, "]=%s", text[p]);
			at += w > 0 ? (size_t)w : 0;
		}
	}
	free(text);
	free(done);
}

static void inspect_segment_nodes(struct inspect *in, uint32_t si, uint32_t item)
{
	const plan_t *plan = in->plan;
	const struct plan_segment *s = plan_get_segment(plan, si);
	const struct plan_variant *var = plan_get_variant(plan, s->variant);
	char range[32], span[320], label[160], operands[1024], name[256], h[32];
	struct table *tb;

	inspect_range(s->op_first, s->op_count, range, sizeof range);
	inspect_span(plan, s->op_first, s->op_count, span, sizeof span);
	inspect_title(in, "nodes of segment %u (variant %lld, item %u, ops %s %s)", si,
	              (long long)var->tokens, item, range, span);
	if (!(s->flags & PLAN_SEG_NODES)) {
		printf("  none recorded (the %s backend records segments as ops)\n",
		       plan_backend_name(plan_get_meta(plan)->backend));
		return;
	}
	if (s->nnodes == 0) {
		printf("  none: an empty graph\n");
		return;
	}
	tb = table_new("rlllrrll");
	table_cell(tb, "#");
	table_cell(tb, "type");
	table_cell(tb, "kernel");
	table_cell(tb, "grid");
	table_cell(tb, "block");
	table_cell(tb, "shared");
	table_cell(tb, "op");
	table_cell(tb, "arena operands");
	table_end_row(tb, NULL);
	for (uint32_t k = 0; k < s->nnodes; k++) {
		const struct plan_node *n = &s->nodes[k];
		table_cell(tb, "%u", k);
		table_cell(tb, "%s", plan_node_type_name(n->type));
		table_cell(tb, "%s", n->kernel[0] ? bcg_demangle_short(n->kernel, name, sizeof name) : "-");
		if (n->type == PLAN_NODE_KERNEL) {
			table_cell(tb, "%u,%u,%u", n->grid[0], n->grid[1], n->grid[2]);
			table_cell(tb, "%u,%u,%u", n->block[0], n->block[1], n->block[2]);
			table_cell(tb, "%s", bcg_human_bytes(n->shmem, h, sizeof h));
		} else {
			table_cell(tb, "-");
			table_cell(tb, "-");
			table_cell(tb, "-");
		}
		if (n->op != PLAN_NONE)
			table_cell(tb, "%u %s", n->op, plan_op_label(plan, n->op, label, sizeof label));
		else
			table_cell(tb, "-");
		inspect_operands(plan, n, operands, sizeof operands);
		table_cell(tb, "%s", n->nparams ? operands : "-");
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);
	if (s->nedges > 0) {
		/* "0->1 1->2 (programmatic)": an edge's type and ports after it
		 * where they are not the default. */
		printf("  edges:");
		for (uint32_t k = 0; k < s->nedges; k++) {
			char e[96];
			char *sp = strchr(plan_edge_text(&s->edges[k], e, sizeof e), ' ');
			if (sp != NULL) {
				*sp = '\0';
				printf(" %s (%s)", e, sp + 1);
			} else {
				printf(" %s", e);
			}
		}
		printf("\n");
	}
}

void inspect_nodes(struct inspect *in)
{
	const plan_t *plan = in->plan;
	int any = 0;

	for (uint32_t v = 0; v < plan_count_variants(plan); v++) {
		const struct plan_variant *var = plan_get_variant(plan, v);
		if (!inspect_wanted(in, v))
			continue;
		for (uint32_t k = 0; k < var->nitems; k++)
			if (var->items[k].kind == PLAN_ITEM_SEGMENT) {
				inspect_segment_nodes(in, var->items[k].index, k);
				any = 1;
			}
	}
	if (!any) {
		inspect_title(in, "nodes");
		printf("  none: no segments\n");
	}
}

/* ---------------------------------------------------------------------- */
/* Statistics.                                                             */

struct histo_entry {
	const char *name;
	uint32_t    count;
};

static int histo_by_count(const void *x, const void *y)
{
	const struct histo_entry *a = x, *b = y;

	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return strcmp(a->name, b->name);
}

static void histo_add(struct histo_entry **h, uint32_t *n, const char *name)
{
	for (uint32_t i = 0; i < *n; i++)
		if (strcmp((*h)[i].name, name) == 0) {
			(*h)[i].count++;
			return;
		}
	*h = xreallocarray(*h, *n + 1, sizeof **h);
	(*h)[*n].name = name;
	(*h)[*n].count = 1;
	(*n)++;
}

void inspect_stats(struct inspect *in)
{
	const plan_t *plan = in->plan;
	const struct plan_stats *st = plan_get_stats(plan);
	struct histo_entry *h = NULL;
	uint32_t nh = 0, total = 0, nodes = 0;
	struct table *tb;
	char a[32], b[32], name[256];

	inspect_title(in, "capture statistics");
	printf("  materialize  %s\n", bcg_human_ns(st->materialize_ns, a, sizeof a));
	printf("  reference    %s (%u step%s)\n", bcg_human_ns(st->reference_ns, a, sizeof a),
	       st->reference_steps, st->reference_steps == 1 ? "" : "s");
	printf("  capture      %s\n", bcg_human_ns(st->capture_ns, a, sizeof a));
	printf("  instantiate  %s\n", bcg_human_ns(st->instantiate_ns, a, sizeof a));
	{
		uint32_t nv = plan_count_variants(plan), ok = 0;
		char part[64] = "";
		for (uint32_t v = 0; v < nv; v++)
			ok += plan_variant_verified(plan, v) != 0;
		/* Some captured without (capture --verify): how many were. */
		if (ok < nv)
			snprintf(part, sizeof part, ", %u of %u variant%s", ok, nv, nv == 1 ? "" : "s");
		if (ok == 0)
			printf("  verify       none (no variant verified at capture)\n");
		else if (st->verify_exact)
			printf("  verify       %s (bit-exact%s)\n", bcg_human_ns(st->verify_ns, a, sizeof a),
			       part);
		else
			printf("  verify       %s (largest relative error %.3g%s)\n",
			       bcg_human_ns(st->verify_ns, a, sizeof a), st->verify_max_error, part);
	}

	inspect_title(in, "segments");
	tb = table_new("rrrrrrr");
	table_cell(tb, "seg");
	table_cell(tb, "tokens");
	table_cell(tb, "ops");
	table_cell(tb, "nodes");
	table_cell(tb, "capture");
	table_cell(tb, "instantiate");
	table_cell(tb, "per node");
	table_end_row(tb, NULL);
	for (uint32_t v = 0; v < plan_count_variants(plan); v++) {
		const struct plan_variant *var = plan_get_variant(plan, v);
		if (!inspect_wanted(in, v))
			continue;
		for (uint32_t k = 0; k < var->nitems; k++) {
			const struct plan_segment *s;
			if (var->items[k].kind != PLAN_ITEM_SEGMENT)
				continue;
			s = plan_get_segment(plan, var->items[k].index);
			table_cell(tb, "%u", var->items[k].index);
			table_cell(tb, "%lld", (long long)var->tokens);
			table_cell(tb, "%u", s->op_count);
			if (s->flags & PLAN_SEG_NODES)
				table_cell(tb, "%u", s->nnodes);
			else
				table_cell(tb, "-");
			table_cell(tb, "%s", bcg_human_ns(s->capture_ns, a, sizeof a));
			table_cell(tb, "%s", bcg_human_ns(s->instantiate_ns, b, sizeof b));
			if (s->nnodes > 0)
				table_cell(tb, "%s", bcg_human_ns((s->capture_ns + s->instantiate_ns) / s->nnodes,
				                                  a, sizeof a));
			else
				table_cell(tb, "-");
			table_end_row(tb, NULL);
			for (uint32_t n = 0; n < s->nnodes; n++)
				histo_add(&h, &nh, s->nodes[n].kernel[0] ? s->nodes[n].kernel :
				          plan_node_type_name(s->nodes[n].type));
			if (!(s->flags & PLAN_SEG_NODES))
				for (uint32_t o = 0; o < s->op_count; o++)
					histo_add(&h, &nh, plan_get_op(plan, s->op_first + o)->kind);
			nodes += s->nnodes;
		}
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);

	for (uint32_t i = 0; i < nh; i++)
		total += h[i].count;
	if (nodes > 0)
		inspect_title(in, "kernels (%u node%s)", total, total == 1 ? "" : "s");
	else
		inspect_title(in, "ops in segments by kind (no nodes recorded)");
	if (nh == 0) {
		printf("  none\n");
		free(h);
		return;
	}
	qsort(h, nh, sizeof *h, histo_by_count);
	tb = table_new("rll");
	table_cell(tb, "count");
	table_cell(tb, "%s", nodes > 0 ? "kernel" : "kind");
	table_cell(tb, "%s", "");
	table_end_row(tb, NULL);
	for (uint32_t i = 0; i < nh; i++) {
		/* Bars of at most 40 marks, at least one per entry. */
		uint32_t w = (uint32_t)((uint64_t)h[i].count * 40 / h[0].count);
		char bar[41];
		memset(bar, '#', w ? w : 1);
		bar[w ? w : 1] = '\0';
		table_cell(tb, "%u", h[i].count);
		table_cell(tb, "%s", nodes > 0 ? bcg_demangle_short(h[i].name, name, sizeof name) :
		           h[i].name);
		table_cell(tb, "%s", bar);
		table_end_row(tb, NULL);
	}
	table_print(tb, stdout, "  ", &in->st);
	table_free(tb);
	free(h);
}

