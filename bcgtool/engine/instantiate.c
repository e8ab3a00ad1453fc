/*
 * instantiate.c - rebuild a plan's segments and compare them with it.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "instantiate.h"

void inst_report_release(struct inst_report *rep)
{
	free(rep->segments);
	memset(rep, 0, sizeof *rep);
}

uint32_t inst_exec_segment(const struct inst_report *rep, uint32_t i)
{
	const struct inst_segment *is = &rep->segments[i];

	if (is->share != SHARE_JOINED)
		return is->segment;
	for (uint32_t k = 0; k < rep->nsegments; k++)
		if (rep->segments[k].group == is->group && rep->segments[k].share == SHARE_FIRST)
			return rep->segments[k].segment;
	return is->segment;
}

static void instantiate_judge(const plan_t *plan, uint32_t si, const struct backend_capture *rec,
                              int with_nodes, struct inst_segment *out)
{
	const struct plan_segment *want = plan_get_segment(plan, si);
	struct plan_segment got = *want;

	memset(out, 0, sizeof *out);
	out->segment = si;
	out->plan_nodes = want->nnodes;
	out->plan_fingerprint = want->fingerprint;
	out->nodes = rec->nnodes;
	out->capture_ns = rec->capture_ns;
	out->instantiate_ns = rec->instantiate_ns;
	out->upload_ns = rec->upload_ns;
	out->update_ns = rec->update_ns;
	out->exec_bytes = rec->exec_bytes;
	if (!(want->flags & PLAN_SEG_NODES)) {
		out->status = INST_UNCHECKED;
		snprintf(out->reason, sizeof out->reason,
		         "the plan has no nodes for it (captured on the host backend)");
		return;
	}
	if (!with_nodes) {
		out->status = INST_UNCHECKED;
		snprintf(out->reason, sizeof out->reason,
		         "the host backend records no nodes to compare");
		return;
	}
	got.nnodes = rec->nnodes;
	got.nodes = rec->nodes;
	got.nedges = rec->nedges;
	got.edges = rec->edges;
	got.fingerprint = plan_fingerprint(&got);
	out->fingerprint = got.fingerprint;
	instantiate_explain(want, &got, out->reason, sizeof out->reason);
	out->status = out->reason[0] == '\0' ? INST_MATCH : INST_DRIFT;
}

int instantiate_variant(struct engine *e, uint32_t vi, struct exec_variant *x,
                        struct inst_report *rep, struct engine_error *err)
{
	const plan_t *plan = e->plan;
	const struct plan_variant *pv = plan_get_variant(plan, vi);
	struct sched_item *items;
	struct backend_capture *recs;
	int rc = -1;

	if (pv == NULL)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "no variant %u", vi);
	items = calloc(pv->nitems ? pv->nitems : 1, sizeof *items);
	recs = calloc(pv->nitems ? pv->nitems : 1, sizeof *recs);
	if (items == NULL || recs == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < pv->nitems; i++) {
		items[i].kind = pv->items[i].kind;
		if (items[i].kind == PLAN_ITEM_SEGMENT) {
			const struct plan_segment *s = plan_get_segment(plan, pv->items[i].index);
			items[i].op_first = s->op_first;
			items[i].op_count = s->op_count;
		} else {
			const struct plan_breakpoint *b = plan_get_breakpoint(plan, pv->items[i].index);
			items[i].op_first = b->op;
			items[i].op_count = 1;
			items[i].reason = b->reason;
		}
	}
	if (exec_capture(e, pv->tokens, pv->mode, items, pv->nitems, 0, x, recs, err) != 0)
		goto out;
	if (rep != NULL) {
		uint32_t nseg = 0;
		for (uint32_t i = 0; i < pv->nitems; i++)
			nseg += pv->items[i].kind == PLAN_ITEM_SEGMENT;
		struct inst_segment *s = realloc(rep->segments,
		                                 (rep->nsegments + nseg + 1) * sizeof *s);
		if (s == NULL) {
			exec_release(e, x);
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
			goto out;
		}
		rep->segments = s;
		for (uint32_t i = 0; i < pv->nitems; i++) {
			if (pv->items[i].kind != PLAN_ITEM_SEGMENT)
				continue;
			struct inst_segment *is = &rep->segments[rep->nsegments++];
			instantiate_judge(plan, pv->items[i].index, &recs[i],
			                  e->be->kind == PLAN_BACKEND_CUDA, is);
			is->share = x->items[i].share;
			is->group = x->items[i].share_group;
			is->refused = x->items[i].refused;
			rep->capture_ns += is->capture_ns;
			rep->instantiate_ns += is->instantiate_ns;
			rep->upload_ns += is->upload_ns;
			rep->update_ns += is->update_ns;
			rep->exec_bytes += is->exec_bytes;
			rep->joined += is->share == SHARE_JOINED;
			rep->execs += is->share != SHARE_JOINED;
			rep->refused += is->share == SHARE_REFUSED;
			if (is->status == INST_MATCH)
				rep->matched++;
			else if (is->status == INST_DRIFT)
				rep->drifted++;
			else
				rep->unchecked++;
		}
	}
	rc = 0;
out:
	if (recs != NULL && pv != NULL)
		for (uint32_t i = 0; i < pv->nitems; i++)
			backend_capture_release(&recs[i]);
	free(recs);
	free(items);
	return rc;
}
