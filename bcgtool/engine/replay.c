/*
 * replay.c - replay steps of a plan, timed, checked against eager.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "replay.h"
#include "stash.h"
#include "util.h"

/* Items above this many get no time stamps of their own in the busy pass:
 * two queue entries per item would crowd the launch queue and let the host
 * fall behind, which the pass exists to avoid. */
#define REPLAY_ITEM_MARKS_MAX 256

void replay_trace_release(struct replay_trace *t)
{
	free(t->host_ns);
	free(t->dev_ms);
	free(t->step);
	free(t->labels);
	free(t->kinds);
	memset(t, 0, sizeof *t);
}

void replay_result_release(struct replay_result *res)
{
	inst_report_release(&res->inst);
	replay_trace_release(&res->stats.trace);
	free(res->stats.item_busy);
	memset(res, 0, sizeof *res);
}

/* A backend call's result: 0, or the error prefixed with WHAT. */
static int be_call(int rc, const char *what, struct engine_error *err)
{
	return rc == 0 ? 0 : engine_fail_backend(err, what);
}

/* The end of a pass that showed progress in an NVTX range: RC. */
static int replay_pass_end(struct engine *e, int rc)
{
	bcg_progress_clear();
	nvtx_pop(e->nvtx);
	return rc;
}

/* The timed pass: WARMUP + STEPS steps from a reset, back to back. */
static int replay_timed(struct engine *e, struct exec_variant **xs, uint32_t nx, uint64_t warmup,
                        uint64_t steps, double *step_ms, double *host_ms, double *host_max,
                        uint64_t *done, struct engine_error *err)
{
	const unsigned batch = BACKEND_MAX_MARKS - 2;
	uint64_t total = warmup + steps, s = 0;
	struct bcg_steps progress;

	*host_max = 0.0;
	*done = 0;
	if (engine_reset(e, err) != 0)
		return -1;
	bcg_steps_begin(&progress, e->progress_label ? e->progress_label : "replay", total);
	nvtx_push(e->nvtx, NVTX_KIND_PHASE, "timed");
	while (s < total && !bcg_interrupted()) {
		unsigned k = total - s < batch ? (unsigned)(total - s) : batch;
		for (unsigned j = 0; j < k; j++) {
			uint64_t t0 = bcg_now_ns();
			/* A signal: this batch ends here, its steps measured. */
			if (bcg_interrupted()) {
				k = j;
				break;
			}
			bcg_steps_update(&progress, s + j);
			if (be_call(e->be->mark(e->b, j, err->msg, sizeof err->msg), "time stamp", err) != 0 ||
			    exec_step(e, xs[(s + j) % nx], s + j, NULL, err) != 0)
				goto fail;
			double h = (double)(bcg_now_ns() - t0) / 1e6;
			if (s + j >= warmup)
				host_ms[s + j - warmup] = h;
			if (h > *host_max)
				*host_max = h;
		}
		if (be_call(e->be->mark(e->b, k, err->msg, sizeof err->msg), "time stamp", err) != 0 ||
		    be_call(e->be->sync(e->b, err->msg, sizeof err->msg), "waiting for the steps", err) != 0)
			goto fail;
		for (unsigned j = 0; j < k; j++) {
			double ms;
			if (s + j < warmup)
				continue;
			if (be_call(e->be->elapsed(e->b, j, j + 1, &ms, err->msg, sizeof err->msg),
			            "reading time stamps", err) != 0)
				goto fail;
			step_ms[s + j - warmup] = ms;
		}
		s += k;
	}
	bcg_steps_update(&progress, s);
	*done = s > warmup ? s - warmup : 0;
	return replay_pass_end(e, 0);
fail:
	return replay_pass_end(e, -1);
}

/* The stream pass: WARMUP + STEPS steps from a reset, numbered and sized
 * as in the timed pass, with a time stamp before the first timed step and
 * one after the last. *MEAN is the mean timed step and *DONE is STEPS; a
 * signal ends the steps with both 0, as a mean over fewer steps than the
 * stamps span would be wrong. */
static int replay_stream(struct engine *e, struct exec_variant **xs, uint32_t nx, uint64_t warmup,
                         uint64_t steps, double *mean, uint64_t *done, struct engine_error *err)
{
	uint64_t total = warmup + steps, s;
	struct bcg_steps progress;
	double ms;

	*mean = 0.0;
	*done = 0;
	if (engine_reset(e, err) != 0)
		return -1;
	bcg_steps_begin(&progress, "stream", total);
	nvtx_push(e->nvtx, NVTX_KIND_PHASE, "stream");
	for (s = 0; s < total && !bcg_interrupted(); s++) {
		bcg_steps_update(&progress, s);
		if (s == warmup &&
		    be_call(e->be->mark(e->b, 0, err->msg, sizeof err->msg), "time stamp", err) != 0)
			goto fail;
		if (exec_step(e, xs[s % nx], s, NULL, err) != 0)
			goto fail;
	}
	bcg_steps_update(&progress, s);
	/* Interrupted, the steps queued are still waited for, so that the
	 * passes after this one find the stream idle. */
	if (s == total &&
	    be_call(e->be->mark(e->b, 1, err->msg, sizeof err->msg), "time stamp", err) != 0)
		goto fail;
	if (be_call(e->be->sync(e->b, err->msg, sizeof err->msg), "waiting for the steps", err) != 0)
		goto fail;
	if (s == total) {
		if (be_call(e->be->elapsed(e->b, 0, 1, &ms, err->msg, sizeof err->msg),
		            "reading time stamps", err) != 0)
			goto fail;
		*mean = ms / (double)steps;
		*done = steps;
	}
	return replay_pass_end(e, 0);
fail:
	return replay_pass_end(e, -1);
}

/* The busy pass: steps issued behind a hold, sampled evenly over the timed
 * range so they see the same var values (kv_len) as the timed steps. */
static int replay_busy(struct engine *e, struct exec_variant **xs, uint32_t nx, uint64_t warmup,
                       uint64_t steps, uint32_t nbusy, double host_max, double *busy_ms,
                       double *item_ms, double *issue_ms, struct replay_trace *trace,
                       struct engine_error *err)
{
	struct exec_variant *x = xs[0];
	/* Steps of alternating sizes have items of different counts: only
	 * the step's whole time is kept. */
	int per_item = nx == 1 && x->nitems <= REPLAY_ITEM_MARKS_MAX && item_ms != NULL;
	struct exec_marks marks = { .first = 0 };

	if (!per_item)
		trace = NULL;
	double hold_us = 3.0 * host_max * 1000.0 + 500.0;

	if (hold_us > 2e6)
		hold_us = 2e6;
	nvtx_push(e->nvtx, NVTX_KIND_PHASE, "busy");
	for (uint32_t b = 0; b < nbusy; b++) {
		uint64_t step = warmup + steps * b / nbusy;
		unsigned last;

		x = xs[step % nx];
		last = per_item ? x->nitems : 1;
		double ms;

		uint64_t t0;

		if (engine_interrupted(err) != 0)
			goto fail;
		if (e->be->hold != NULL &&
		    be_call(e->be->hold(e->b, hold_us, err->msg, sizeof err->msg), "holding the stream", err) != 0)
			goto fail;
		/* The host's issue time is taken here too, with the queue drained:
		 * in the timed pass a host ahead of the GPU ends up waiting on a
		 * full launch queue, and its time per step becomes the GPU's. */
		t0 = bcg_now_ns();
		if (trace != NULL) {
			marks.host_ns = &trace->host_ns[(size_t)b * (x->nitems + 1)];
			trace->step[b] = step;
		}
		if (per_item) {
			if (exec_step(e, x, step, &marks, err) != 0)
				goto fail;
		} else if (be_call(e->be->mark(e->b, 0, err->msg, sizeof err->msg), "time stamp", err) != 0 ||
		           exec_step(e, x, step, NULL, err) != 0 ||
		           be_call(e->be->mark(e->b, 1, err->msg, sizeof err->msg), "time stamp", err) != 0) {
			goto fail;
		}
		issue_ms[b] = (double)(bcg_now_ns() - t0) / 1e6;
		if (be_call(e->be->sync(e->b, err->msg, sizeof err->msg), "waiting for the step", err) != 0 ||
		    be_call(e->be->elapsed(e->b, 0, last, &ms, err->msg, sizeof err->msg),
		            "reading time stamps", err) != 0)
			goto fail;
		busy_ms[b] = ms;
		for (uint32_t i = 0; per_item && i < x->nitems; i++) {
			if (be_call(e->be->elapsed(e->b, i, i + 1, &ms, err->msg, sizeof err->msg),
			            "reading time stamps", err) != 0)
				goto fail;
			/* The first item's interval also holds the feeds. */
			item_ms[(size_t)i * nbusy + b] = ms;
			if (trace != NULL &&
			    be_call(e->be->elapsed(e->b, 0, i + 1, &trace->dev_ms[(size_t)b *
			                           (x->nitems + 1) + i + 1], err->msg, sizeof err->msg),
			            "reading time stamps", err) != 0)
				goto fail;
		}
	}
	if (trace != NULL)
		trace->nsteps = nbusy;
	nvtx_pop(e->nvtx);
	return 0;
fail:
	nvtx_pop(e->nvtx);
	return -1;
}

int replay_check(struct engine *e, struct exec_variant *x, uint64_t nsteps,
                 struct replay_result *res, struct engine_error *err)
{
	return replay_check_cycle(e, &x, 1, nsteps, res, err);
}

int replay_check_cycle(struct engine *e, struct exec_variant **xs, uint32_t nx, uint64_t nsteps,
                       struct replay_result *res, struct engine_error *err)
{
	struct stash got = { 0 };
	struct stash_verdict v;
	struct engine_variant ev[REPLAY_CYCLE_MAX] = { { 0 } };
	/* The last step's size: its outputs are the ones kept. */
	struct exec_variant *last = xs[(nsteps + nx - 1) % nx];
	int rc = -1;

	if (nx < 1 || nx > REPLAY_CYCLE_MAX)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%u sizes: from 1 to %d alternate",
		                   nx, REPLAY_CYCLE_MAX);
	/* The state now is after NSTEPS steps from a reset: kept where it
	 * lies while the eager run takes the arena. */
	if (stash_take_results(e, last->ev.tokens, &got, err) != 0)
		goto out;
	nvtx_push(e->nvtx, NVTX_KIND_PHASE, "check");
	/* The reference steps launch the replay's ops one by one in the forms
	 * its graphs hold (a full graph's graph-safe forms, which capture
	 * verified against the host-shaped ones), so the two agree bit for
	 * bit: a long replay whose rounding differs from the host-shaped forms
	 * (an attention split by the cache's size, not the length) would
	 * otherwise drift past any bound once routing amplifies it. */
	for (uint32_t k = 0; k < nx; k++)
		if (engine_variant_init(e, xs[k]->ev.tokens, xs[k]->ev.mode, &ev[k], err) != 0)
			goto out_pop;
	if (engine_reset(e, err) != 0)
		goto out_pop;
	for (uint64_t s = 0; s < nsteps; s++) {
		bcg_progress("check: eager step %llu of %llu", (unsigned long long)s + 1,
		             (unsigned long long)nsteps);
		if (engine_interrupted(err) != 0 || engine_launch_step(e, &ev[s % nx], s, err) != 0)
			goto out_pop;
	}
	bcg_progress_clear();
	if (stash_check(e, &got, 0, &v, err) != 0)
		goto out_pop;
	res->checked = 1;
	res->check = v;
	rc = 0;
out_pop:
	nvtx_pop(e->nvtx);
out:
	for (uint32_t k = 0; k < nx && k < REPLAY_CYCLE_MAX; k++)
		engine_variant_release(&ev[k]);
	stash_release(e, &got);
	return rc;
}

/* Room for the busy pass's item times, with the items' names. */
static void replay_trace_init(struct replay_trace *t, const struct exec_variant *x,
                              uint32_t nbusy)
{
	size_t n = (size_t)nbusy * (x->nitems + 1);

	memset(t, 0, sizeof *t);
	t->nitems = x->nitems;
	t->host_ns = xcalloc(n, sizeof *t->host_ns);
	t->dev_ms = xcalloc(n, sizeof *t->dev_ms);
	t->step = xcalloc(nbusy, sizeof *t->step);
	t->labels = xcalloc(x->nitems + 1, sizeof *t->labels);
	t->kinds = xcalloc(x->nitems + 1, sizeof *t->kinds);
	for (uint32_t i = 0; i < x->nitems; i++) {
		snprintf(t->labels[i], sizeof t->labels[i], "%s", x->items[i].label);
		t->kinds[i] = x->items[i].kind;
	}
}

static int replay_measure_impl(struct engine *e, struct exec_variant **xs, uint32_t nx,
                               uint64_t warmup, uint64_t steps, uint32_t busy_steps, int trace,
                               int stream, struct replay_stats *st, struct replay_result *check,
                               struct engine_error *err)
{
	struct exec_variant *x = xs[0];
	double *step_ms = calloc(steps, sizeof *step_ms);
	double *host_ms = calloc(steps, sizeof *host_ms);
	double *busy_ms = calloc(busy_steps, sizeof *busy_ms);
	double *item_ms = calloc((size_t)x->nitems * busy_steps + 1, sizeof *item_ms);
	double *issue_ms = calloc(busy_steps, sizeof *issue_ms);
	double host_max, sum = 0.0;
	uint64_t done;
	int rc = -1;

	memset(st, 0, sizeof *st);
	if (trace && nx == 1)
		replay_trace_init(&st->trace, x, busy_steps);
	if (step_ms == NULL || host_ms == NULL || busy_ms == NULL || item_ms == NULL ||
	    issue_ms == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	if (replay_timed(e, xs, nx, warmup, steps, step_ms, host_ms, &host_max, &done, err) != 0)
		goto out;
	/* Interrupted: the steps measured so far are the result. */
	st->partial = done < steps;
	st->steps = steps = done;
	if (steps > 0) {
		for (uint64_t i = 0; i < steps; i++)
			sum += step_ms[i];
		st->step_mean = sum / (double)steps;
		st->step_median = bcg_percentile(step_ms, steps, 50);
		st->step_p90 = bcg_percentile(step_ms, steps, 90);
		st->step_p99 = bcg_percentile(step_ms, steps, 99);
		st->host_median = bcg_percentile(host_ms, steps, 50);
	}
	/* The stream pass runs the timed pass's steps from the same reset, so
	 * the state the check compares is the same after either. */
	if (!st->partial && stream) {
		if (replay_stream(e, xs, nx, warmup, steps, &st->stream_mean, &st->stream_steps,
		                  err) != 0)
			goto out;
		/* A signal: the timed steps stand, with no stream time, no check
		 * and no busy time. */
		st->partial = st->stream_steps == 0;
	}
	if (!st->partial && check != NULL &&
	    replay_check_cycle(e, xs, nx, warmup + steps, check, err) != 0)
		goto interrupted;
	if (!st->partial && replay_busy(e, xs, nx, warmup, steps, busy_steps, host_max, busy_ms,
	                                item_ms, issue_ms, trace && nx == 1 ? &st->trace : NULL,
	                                err) != 0)
		goto interrupted;
	if (st->partial) {
		rc = 0;
		goto out;
	}
	/* Each pass can only overstate the host's issue time: the timed one
	 * when the GPU is the bottleneck (the host waits on a full launch
	 * queue), the held one when a step alone overflows the queue (the
	 * host waits for the hold to end). The smaller is the estimate. */
	{
		double held = bcg_percentile(issue_ms, busy_steps, 50);
		if (held < st->host_median)
			st->host_median = held;
	}
	st->busy_median = bcg_percentile(busy_ms, busy_steps, 50);
	st->gap_median = st->step_median > st->busy_median ? st->step_median - st->busy_median : 0.0;
	st->nitems = nx == 1 ? x->nitems : 0;
	if (nx == 1 && x->nitems <= REPLAY_ITEM_MARKS_MAX) {
		st->item_busy = calloc(x->nitems + 1, sizeof *st->item_busy);
		if (st->item_busy == NULL) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
			goto out;
		}
		for (uint32_t i = 0; i < x->nitems; i++)
			st->item_busy[i] = bcg_percentile(&item_ms[(size_t)i * busy_steps], busy_steps, 50);
	}
	rc = 0;
	goto out;
interrupted:
	if (err->exit >= 128) {
		/* A signal during the check or the busy pass: the timed steps
		 * stand, unchecked, without busy times. */
		st->partial = 1;
		if (check != NULL)
			check->checked = 0;
		rc = 0;
	}
out:
	free(step_ms);
	free(host_ms);
	free(busy_ms);
	free(item_ms);
	free(issue_ms);
	return rc;
}

int replay_measure(struct engine *e, struct exec_variant *x, uint64_t warmup, uint64_t steps,
                   uint32_t busy_steps, struct replay_stats *st, struct engine_error *err)
{
	return replay_measure_impl(e, &x, 1, warmup, steps, busy_steps, 0, 0, st, NULL, err);
}

/* Build an executable variant of only breakpoints: every op eager. */
static int replay_eager_variant(struct engine *e, int64_t tokens, struct exec_variant *x,
                                struct engine_error *err)
{
	struct schedule sched;
	int rc;

	if (schedule_build(e->plan, PLAN_MODE_EAGER, &sched, NULL, err->msg, sizeof err->msg) != 0)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s", err->msg);
	rc = exec_capture(e, tokens, PLAN_MODE_EAGER, sched.items, sched.nitems, 0, x, NULL, err);
	schedule_release(&sched);
	return rc;
}

/* The variants of a replay with a plan variant for every step: those of
 * the sizes asked for (X, one a size), and with OPTS' share every
 * variant of the plan, in order, sharing executables as a server's would
 * (ALL, NV of them; X's then point into it). */
static int replay_build(struct engine *e, const struct replay_opts *o, const uint32_t *vis,
                        uint32_t nc, struct exec_variant *all, uint32_t nv, uint32_t *built,
                        struct exec_variant **x, struct replay_result *res,
                        struct engine_error *err)
{
	*built = 0;
	for (uint32_t i = 0; i < nv; i++) {
		int want = o->share;
		for (uint32_t k = 0; k < nc; k++)
			want |= vis[k] == i;
		if (!want)
			continue;
		if (instantiate_variant(e, i, &all[i], &res->inst, err) != 0)
			return -1;
		(*built)++;
	}
	for (uint32_t k = 0; k < nc; k++)
		x[k] = &all[vis[k]];
	return 0;
}

int replay_plan(const plan_t *plan, const struct replay_opts *o, struct replay_result *res,
                struct engine_error *err)
{
	struct engine *e = NULL;
	struct exec_variant x = { 0 };
	struct exec_variant *all = NULL, *xs[REPLAY_CYCLE_MAX];
	struct share_pool pool = { 0 };
	uint32_t vis[REPLAY_CYCLE_MAX];
	plan_t *eager_program = NULL;
	uint32_t nv = plan_count_variants(plan), nc = o->ncycle > 1 ? o->ncycle : 1;
	int64_t max_tokens = 0;
	int rc = -1;

	memset(res, 0, sizeof *res);
	for (uint32_t i = 0; i < nv; i++)
		if (plan_get_variant(plan, i)->tokens > max_tokens)
			max_tokens = plan_get_variant(plan, i)->tokens;
	if (nc > REPLAY_CYCLE_MAX)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%u sizes: at most %d alternate",
		                   nc, REPLAY_CYCLE_MAX);
	res->tokens = nc > 1 ? o->cycle[0] : o->tokens ? o->tokens : max_tokens;
	if (res->tokens < 1)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "the plan has no variants");
	res->variant = plan_dispatch_lookup(plan, res->tokens);
	res->ncycle = nc > 1 ? nc : 0;
	for (uint32_t k = 0; k < nc; k++) {
		vis[k] = nc > 1 ? plan_dispatch_lookup(plan, o->cycle[k]) : res->variant;
		if (nc > 1 && vis[k] == PLAN_NONE)
			return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%lld tokens is above every "
			                   "capture size: sizes that alternate must each have a "
			                   "variant", (long long)o->cycle[k]);
	}

	if (res->variant == PLAN_NONE) {
		/* Above every capture size: its own arena, every op eager. */
		res->run_tokens = res->tokens;
		res->mode = PLAN_MODE_EAGER;
		if ((eager_program = plan_clone_program(plan)) == NULL) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
			goto out;
		}
		if (engine_open_at(eager_program, o->backend, res->tokens, 0, &e, err) != 0 ||
		    engine_set_vars(e, o->vars, o->nvars, err) != 0)
			goto out;
		engine_warn_weights(e);
		res->weights = plan_count_weight_sources(plan);
		res->weights_changed = e->weights_changed;
		if (o->nvtx)
			e->nvtx = nvtx_open();
		if (replay_eager_variant(e, res->tokens, &x, err) != 0)
			goto out;
		res->breakpoints = x.nitems;
		xs[0] = &x;
	} else {
		const struct plan_variant *pv = plan_get_variant(plan, res->variant);
		uint32_t built;
		res->run_tokens = pv->tokens;
		res->mode = pv->mode;
		if (engine_open(plan, o->backend, max_tokens, &e, err) != 0 ||
		    engine_set_vars(e, o->vars, o->nvars, err) != 0)
			goto out;
		engine_warn_weights(e);
		res->weights = plan_count_weight_sources(plan);
		res->weights_changed = e->weights_changed;
		if (o->nvtx)
			e->nvtx = nvtx_open();
		if ((all = calloc(nv + 1, sizeof *all)) == NULL) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
			goto out;
		}
		res->share = o->share;
		if (o->share)
			exec_share_begin(e, &pool);
		if (replay_build(e, o, vis, nc, all, nv, &built, xs, res, err) != 0)
			goto out;
		for (uint32_t i = 0; i < xs[0]->nitems; i++) {
			if (xs[0]->items[i].kind == PLAN_ITEM_SEGMENT)
				res->segments++;
			else
				res->breakpoints++;
		}
	}
	snprintf(res->backend, sizeof res->backend, "%s", e->be->name);
	snprintf(res->device, sizeof res->device, "%s", e->info.device);
	snprintf(res->note, sizeof res->note, "%s", e->note);
	if (engine_interrupted(err) != 0)
		goto out;
	rc = replay_measure_impl(e, xs, nc, o->warmup, o->steps, o->busy_steps, o->trace,
	                         o->stream, &res->stats, o->check ? res : NULL, err);
out:
	if (e != NULL) {
		exec_release(e, &x);
		for (uint32_t i = 0; all != NULL && i < nv; i++)
			if (all[i].items != NULL)
				exec_release(e, &all[i]);
		if (e->share != NULL) {
			share_pool_release(&pool, e->be, e->b);
			exec_share_end(e);
		}
		nvtx_close(e->nvtx);
		engine_close(e);
	}
	free(all);
	plan_free(eager_program);
	return rc;
}
