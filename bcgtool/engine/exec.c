/*
 * exec.c - capture a variant's segments and run its steps.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "dist/comm.h"
#include "exec.h"
#include "util.h"

static void exec_label(const plan_t *plan, struct exec_item *it, uint32_t seg_no)
{
	char first[64], last[64];

	if (it->kind == PLAN_ITEM_BREAK) {
		plan_op_label(plan, it->op_first, first, sizeof first);
		snprintf(it->label, sizeof it->label, "break %s", first);
		return;
	}
	plan_op_label(plan, it->op_first, first, sizeof first);
	plan_op_label(plan, it->op_first + it->op_count - 1, last, sizeof last);
	snprintf(it->label, sizeof it->label, "seg %u %s..%s", seg_no, first, last);
}

/* Test hook: with BCG_TEST_SYNC_IN_CAPTURE naming an op, that op also
 * synchronizes the stream while it is captured -- the illegal work a real
 * op might do -- so that the tests can see it caught and named. */
static int exec_test_sync(struct engine *e, uint32_t op, struct engine_error *err)
{
	char name[128];

	if (e->sync_in_capture == NULL)
		return 0;
	plan_op_label(e->plan, op, name, sizeof name);
	if (strcmp(name, e->sync_in_capture) != 0)
		return 0;
	return e->be->sync(e->b, err->msg, sizeof err->msg);
}

/* BCG_SYNC (engine.h): wait for segment IT after its launch, so that a
 * fault in it is reported as its own, with the ops it holds. */
static int exec_sync_segment(struct engine *e, const struct exec_item *it,
                             struct engine_error *err)
{
	if (!e->sync_each || e->be->sync(e->b, err->msg, sizeof err->msg) == 0)
		return 0;
	return engine_fail(err, BCG_EXIT_RUNTIME, it->op_first,
	                   "%s (ops %u to %u), waited for after its launch (BCG_SYNC=1): %s",
	                   it->label, it->op_first, it->op_first + it->op_count - 1, err->msg);
}

/* Launch, outside any capture, exactly what the capture will record:
 * lazily loaded modules, cuBLAS's choices for these shapes and graph-safe
 * forms all meet the GPU here first, never inside a capture (a new
 * process -- instantiate, replay -- has run nothing before). */
static int exec_warmup(struct engine *e, struct exec_variant *v, const struct sched_item *items,
                       uint32_t nitems, struct engine_error *err)
{
	nvtx_push(e->nvtx, NVTX_KIND_PHASE, "warm-up");
	for (uint32_t i = 0; i < nitems; i++) {
		if (items[i].kind != PLAN_ITEM_SEGMENT)
			continue;
		/* A step of a large program on the host takes seconds: an
		 * interrupt is seen between its segments. */
		if (engine_interrupted(err) != 0) {
			nvtx_pop(e->nvtx);
			return -1;
		}
		for (uint32_t op = items[i].op_first; op < items[i].op_first + items[i].op_count; op++)
			if (engine_launch(e, &v->ev, op, err) != 0) {
				nvtx_pop(e->nvtx);
				return -1;
			}
	}
	nvtx_pop(e->nvtx);
	if (e->be->sync(e->b, err->msg, sizeof err->msg) != 0)
		return engine_fail_backend(err, "warming up");
	return 0;
}

void exec_share_begin(struct engine *e, struct share_pool *pool)
{
	e->share = pool;
	e->be->share(e->b, 1);
}

void exec_share_end(struct engine *e)
{
	e->share = NULL;
	e->be->share(e->b, 0);
}

/* Give IT's graph, captured while sharing, its executable: the one of
 * the group with its key, a new group's, or its own. */
static int exec_share(struct engine *e, struct exec_item *it, struct backend_capture *rec,
                      struct engine_error *err)
{
	struct share_pool *p = e->share;
	int gi = share_find(p, rec), first = 0, refused = 0, rc;

	if (gi < 0 && share_capturable(rec)) {
		if ((gi = share_add(p, rec)) < 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		first = 1;
	}
	it->share_group = gi;
	if (rec->opaque && p->opaque++ == 0)
		snprintf(p->opaque_why, sizeof p->opaque_why, "%s", rec->opaque_why);
	if (gi < 0)
		rc = e->be->graph_instantiate(e->b, it->graph, NULL, rec, &refused, err->msg,
		                              sizeof err->msg);
	else
		rc = e->be->graph_instantiate(e->b, it->graph, &p->groups[gi].exec, rec, &refused,
		                              err->msg, sizeof err->msg);
	if (rc != 0)
		return engine_fail(err, BCG_EXIT_RUNTIME, it->op_first, "instantiating %s: %s",
		                   it->label, err->msg);
	it->refused = refused;
	it->share = gi < 0 ? SHARE_OWN : refused ? SHARE_REFUSED : first ? SHARE_FIRST
	                                                                 : SHARE_JOINED;
	if (gi >= 0)
		share_take(p, gi);
	if (gi >= 0 && !refused)
		p->groups[gi].segments++;
	else if (gi >= 0)
		p->groups[gi].refusals++;
	return 0;
}

int exec_capture(struct engine *e, int64_t tokens, int mode, const struct sched_item *items,
                 uint32_t nitems, uint64_t step, struct exec_variant *v,
                 struct backend_capture *recs, struct engine_error *err)
{
	uint32_t seg_no = 0;
	char label[64];

	memset(v, 0, sizeof *v);
	if (engine_variant_init(e, tokens, mode, &v->ev, err) != 0)
		return -1;
	v->items = calloc(nitems ? nitems : 1, sizeof *v->items);
	if (v->items == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto fail;
	}
	v->nitems = nitems;
	if (e->share != NULL)
		share_next_variant(e->share);
	if (engine_step_begin(e, &v->ev, step, err) != 0 || exec_warmup(e, v, items, nitems, err) != 0)
		goto fail;
	snprintf(label, sizeof label, "capture %lld", (long long)tokens);
	nvtx_push(e->nvtx, NVTX_KIND_CAPTURE, label);
	for (uint32_t i = 0; i < nitems; i++) {
		struct exec_item *it = &v->items[i];
		struct backend_capture own = { 0 };
		/* Sharing needs the keys even where the caller wants no record. */
		struct backend_capture *rec = recs ? &recs[i] : e->share != NULL ? &own : NULL;

		if (engine_interrupted(err) != 0)
			goto fail_pop;
		it->kind = items[i].kind;
		it->op_first = items[i].op_first;
		it->op_count = items[i].op_count;
		exec_label(e->plan, it, seg_no);
		it->share_group = -1;
		it->nvtx_name = nvtx_register(e->nvtx, it->label);
		if (rec != NULL)
			memset(rec, 0, sizeof *rec);
		if (it->kind == PLAN_ITEM_BREAK) {
			/* Run it eagerly, as a step would between the segments. */
			nvtx_push_registered(e->nvtx, NVTX_KIND_BREAK, it->nvtx_name, 0);
			e->in_break = 1;
			int rc = engine_launch(e, &v->ev, it->op_first, err);
			e->in_break = 0;
			nvtx_pop(e->nvtx);
			if (rc != 0)
				goto fail_pop;
			continue;
		}
		seg_no++;
		nvtx_push_registered(e->nvtx, NVTX_KIND_SEGMENT, it->nvtx_name, it->op_count);
		if (e->be->capture_begin(e->b, i == 0, err->msg, sizeof err->msg) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, it->op_first, "beginning the capture of %s: %s",
			            it->label, err->msg);
			goto fail_seg;
		}
		for (uint32_t op = it->op_first; op < it->op_first + it->op_count; op++) {
			e->capturing = 1;
			int rc = engine_launch(e, &v->ev, op, err);
			e->capturing = 0;
			if (rc != 0 ||
			    exec_test_sync(e, op, err) != 0 ||
			    e->be->capture_op_done(e->b, op, err->msg, sizeof err->msg) != 0) {
				char why[sizeof err->msg], name[128];
				struct backend_graph *junk = NULL;
				/* Kept aside: ending the broken capture (so the stream
				 * is usable again) reuses err->msg. */
				snprintf(why, sizeof why, "%s", err->msg);
				engine_op_label(e->plan, op, name, sizeof name);
				if (e->be->capture_end(e->b, &junk, NULL, err->msg, sizeof err->msg) == 0)
					e->be->graph_free(e->b, junk);
				/* A failed launch names its op already. */
				if (rc != 0)
					engine_fail(err, BCG_EXIT_RUNTIME, op, "capturing: %s", why);
				else
					engine_fail(err, BCG_EXIT_RUNTIME, op,
					            "capturing op %s: %s", name, why);
				goto fail_seg;
			}
		}
		if (e->be->capture_end(e->b, &it->graph, rec, err->msg, sizeof err->msg) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, it->op_first, "ending the capture of %s: %s",
			            it->label, err->msg);
			backend_capture_release(&own);
			goto fail_seg;
		}
		if (e->share != NULL && exec_share(e, it, rec, err) != 0) {
			backend_capture_release(&own);
			goto fail_seg;
		}
		it->nodes = rec != NULL && rec->nnodes ? rec->nnodes : it->op_count;
		backend_capture_release(&own);
		nvtx_pop(e->nvtx);
	}
	nvtx_pop(e->nvtx);
	return 0;
fail_seg:
	nvtx_pop(e->nvtx);
fail_pop:
	nvtx_pop(e->nvtx);
fail:
	exec_release(e, v);
	return -1;
}

void exec_release(struct engine *e, struct exec_variant *v)
{
	for (uint32_t i = 0; i < v->nitems; i++)
		if (v->items[i].graph != NULL)
			e->be->graph_free(e->b, v->items[i].graph);
	free(v->items);
	engine_variant_release(&v->ev);
	memset(v, 0, sizeof *v);
}

int exec_step(struct engine *e, struct exec_variant *v, uint64_t step,
              const struct exec_marks *marks, struct engine_error *err)
{
	char label[48];

	/* A rank of a tensor-parallel run names itself: its ranges sit beside
	 * the other ranks' in one Nsight Systems timeline. */
	if (e->comm != NULL && e->comm->world > 1)
		snprintf(label, sizeof label, "rank %d step %llu", e->comm->rank,
		         (unsigned long long)step);
	else
		snprintf(label, sizeof label, "step %llu", (unsigned long long)step);
	nvtx_push(e->nvtx, NVTX_KIND_STEP, label);
	if (marks != NULL && marks->host_ns != NULL)
		marks->host_ns[0] = bcg_now_ns();
	if (marks != NULL && e->be->mark(e->b, marks->first, err->msg, sizeof err->msg) != 0)
		goto fail_mark;
	/* A step that starts with a segment: its graph may write the feeds. */
	if (engine_step_begin_before(e, &v->ev, step,
	                             v->nitems > 0 && v->items[0].kind == PLAN_ITEM_SEGMENT ?
	                             v->items[0].graph : NULL, err) != 0)
		goto fail;
	for (uint32_t i = 0; i < v->nitems; i++) {
		struct exec_item *it = &v->items[i];
		int rc;

		if (it->kind == PLAN_ITEM_SEGMENT) {
			nvtx_push_registered(e->nvtx, NVTX_KIND_SEGMENT, it->nvtx_name, it->nodes);
			rc = e->be->graph_launch(e->b, it->graph, err->msg, sizeof err->msg);
			nvtx_pop(e->nvtx);
			if (rc != 0) {
				engine_fail(err, BCG_EXIT_RUNTIME, it->op_first, "launching %s: %s",
				            it->label, err->msg);
				goto fail;
			}
			if (exec_sync_segment(e, it, err) != 0)
				goto fail;
		} else {
			nvtx_push_registered(e->nvtx, NVTX_KIND_BREAK, it->nvtx_name, 0);
			e->in_break = 1;
			rc = engine_launch(e, &v->ev, it->op_first, err);
			e->in_break = 0;
			nvtx_pop(e->nvtx);
			if (rc != 0)
				goto fail;
		}
		if (marks != NULL && marks->host_ns != NULL)
			marks->host_ns[i + 1] = bcg_now_ns();
		if (marks != NULL &&
		    e->be->mark(e->b, marks->first + 1 + i, err->msg, sizeof err->msg) != 0)
			goto fail_mark;
	}
	nvtx_pop(e->nvtx);
	return 0;
fail_mark:
	engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "time stamp: %s", err->msg);
fail:
	nvtx_pop(e->nvtx);
	return -1;
}
