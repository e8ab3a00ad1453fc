/*
 * tune.c - choose each op's implementation by measurement (tune.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "exec.h"
#include "replay.h"
#include "tune.h"
#include "util.h"

/* The most implementations of one kind the tuner weighs (attention has 9);
 * a kind with more is an error, never a silent cut (tune_variant). Its
 * usable set is a bit mask of unsigned. */
#define TUNE_MAX_IMPLS 16

/* One signature's result. */
struct tune_entry {
	char     *key;
	int       chosen;                 /* index into impl[] */
	uint32_t  flags;                  /* PLAN_CHOICE_* */
	int       n;
	int       impl[TUNE_MAX_IMPLS];   /* backend implementation indexes */
	double    us[TUNE_MAX_IMPLS];     /* median times; 0 untimed */
};

void tune_cache_release(struct tune_cache *cache)
{
	for (uint32_t i = 0; i < cache->n; i++)
		free(cache->entries[i].key);
	free(cache->entries);
	free(cache->op_entry);
	memset(cache, 0, sizeof *cache);
}

/* What decides an op's timing: its kind, form, operand shapes and dtypes,
 * attribute values, and which implementations can run it. */
static void tune_key(const struct op_call *c, unsigned usable_mask, char *buf, size_t len)
{
	size_t at = 0;

#define PUT(...) do { if (at < len) at += (size_t)snprintf(buf + at, len - at, __VA_ARGS__); } while (0)
	PUT("%s/%d/%x", c->kind->name, c->graph_safe, usable_mask);
	for (int side = 0; side < 2; side++) {
		const struct op_tensor *t = side ? c->out : c->in;
		int n = side ? c->nout : c->nin;
		for (int i = 0; i < n; i++) {
			PUT("|%d:", t[i].dtype);
			for (int d = 0; d < t[i].rank; d++)
				PUT("%lldx", (long long)t[i].dim[d]);
		}
	}
	for (int p = 0; c->kind->attrs[p].name != NULL; p++) {
		if (c->kind->attrs[p].type == OP_ATTR_FLOAT)
			PUT("|%.17g", c->attr[p].f);
		else
			PUT("|%lld", (long long)c->attr[p].i);
	}
	/* Aliasing changes what a kernel reads and writes. */
	PUT("|%d", c->nin > 0 && c->nout > 0 && c->in[0].data == c->out[0].data);
#undef PUT
}

static struct tune_entry *tune_find(struct tune_cache *cache, const char *key)
{
	for (uint32_t i = 0; i < cache->n; i++)
		if (strcmp(cache->entries[i].key, key) == 0)
			return &cache->entries[i];
	return NULL;
}

static struct tune_entry *tune_add(struct tune_cache *cache, const char *key)
{
	struct tune_entry *t;

	if (cache->n == cache->cap) {
		uint32_t cap = cache->cap ? cache->cap * 2 : 16;
		struct tune_entry *n = realloc(cache->entries, cap * sizeof *n);
		if (n == NULL)
			return NULL;
		cache->entries = n;
		cache->cap = cap;
	}
	t = &cache->entries[cache->n];
	memset(t, 0, sizeof *t);
	if ((t->key = strdup(key)) == NULL)
		return NULL;
	cache->n++;
	return t;
}

/* The rule of tune.h over measured times: the default (candidate 0)
 * unless another leads it by more than the margin; CLOSE when a
 * candidate other than the chosen one is within the margin of it. */
static void tune_decide(struct tune_entry *t, double margin)
{
	int best = 0;

	for (int k = 1; k < t->n; k++)
		if (t->us[k] < t->us[best])
			best = k;
	t->chosen = t->us[best] < t->us[0] * (1.0 - margin) ? best : 0;
	t->flags = PLAN_CHOICE_TUNED;
	for (int k = 0; k < t->n; k++)
		if (k != t->chosen && t->us[k] <= t->us[t->chosen] * (1.0 + margin))
			t->flags |= PLAN_CHOICE_CLOSE;
}

/* Time every candidate of T on call C (op OP). */
static int tune_measure(struct engine *e, struct engine_variant *v, uint32_t op,
                        struct tune_entry *t, const struct tune_opts *o,
                        struct engine_error *err)
{
	struct op_call *c = &v->calls[op];
	int keep = c->impl;

	for (int k = 0; k < t->n; k++) {
		c->impl = t->impl[k];
		/* A first launch outside the timing: module loading and library
		 * set-up are not the kernel's time. An interrupt is seen between
		 * candidates (and the host's timing stops early for it). */
		if (engine_interrupted(err) != 0 || engine_prepare_call(e, op, c, 0, err) != 0 ||
		    engine_launch(e, v, op, err) != 0)
			goto fail;
		if (e->be->sync(e->b, err->msg, sizeof err->msg) != 0 ||
		    e->be->time_call(e->b, c, o->reps, &t->us[k], err->msg, sizeof err->msg) != 0) {
			char label[128], why[sizeof err->msg];
			snprintf(why, sizeof why, "%s", err->msg);
			engine_op_label(e->plan, op, label, sizeof label);
			engine_fail(err, BCG_EXIT_RUNTIME, op, "timing implementation %s of op %s: %s",
			            e->be->impl_name(c->kind->id, c->impl), label, why);
			goto fail;
		}
	}
	c->impl = keep;
	if (engine_interrupted(err) != 0)
		return -1;
	tune_decide(t, o->margin);
	return 0;
fail:
	c->impl = keep;
	return -1;
}

static int tune_record(plan_t *plan, uint32_t vi, uint32_t op, const struct engine *e, int untimed,
                       const struct op_call *c, const struct tune_entry *t,
                       struct engine_error *err)
{
	struct plan_candidate cand[TUNE_MAX_IMPLS];
	struct plan_diag diag = { 0 };
	struct plan_choice ch = {
		.variant = vi,
		.op = op,
		.impl = e->be->impl_name(c->kind->id, t->impl[t->chosen]),
		.flags = t->flags,
		.ncand = (uint32_t)t->n,
		.cand = cand,
	};

	for (int k = 0; k < t->n; k++) {
		cand[k].impl = e->be->impl_name(c->kind->id, t->impl[k]);
		cand[k].us = untimed ? 0.0 : t->us[k];
	}
	if (plan_add_choice(plan, &ch, NULL, &diag) != 0)
		return engine_fail(err, BCG_EXIT_RUNTIME, op, "recording a choice: %s", diag.message);
	return 0;
}

/* --choices-from: the choice O->from made for op OP's namesake (same
 * label, same kind) at the same token count, recorded as it was made.
 * 1 recorded, 0 the plan has none (the caller measures), -1 error: a
 * choice this backend cannot run. */
static int tune_take(struct engine *e, plan_t *plan, uint32_t vi, uint32_t op,
                     const struct tune_opts *o, const struct op_call *c, const int *usable,
                     int nu, struct engine_error *err)
{
	const plan_t *src = o->from;
	int64_t tokens = plan_get_variant(plan, vi)->tokens;
	uint32_t sv = plan_find_variant(src, tokens), sop = PLAN_NONE;
	struct plan_candidate cand[TUNE_MAX_IMPLS];
	const struct plan_choice *sc;
	struct plan_diag diag = { 0 };
	char want[160], have[160];

	if (sv == PLAN_NONE)
		return 0;
	plan_op_label(plan, op, want, sizeof want);
	for (uint32_t k = 0; k < plan_count_ops(src) && sop == PLAN_NONE; k++)
		if (strcmp(plan_op_label(src, k, have, sizeof have), want) == 0 &&
		    strcmp(plan_get_op(src, k)->kind, c->kind->name) == 0)
			sop = k;
	if (sop == PLAN_NONE || (sc = plan_find_choice(src, sv, sop)) == NULL)
		return 0;
	for (int k = 0; k < nu; k++) {
		if (strcmp(e->be->impl_name(c->kind->id, usable[k]), sc->impl) != 0)
			continue;
		struct plan_choice ch = {
			.variant = vi, .op = op, .impl = sc->impl, .flags = sc->flags,
			.ncand = sc->ncand < TUNE_MAX_IMPLS ? sc->ncand : TUNE_MAX_IMPLS, .cand = cand,
		};
		for (uint32_t q = 0; q < ch.ncand; q++) {
			cand[q].impl = sc->cand[q].impl;
			cand[q].us = o->untimed ? 0.0 : sc->cand[q].us;
		}
		if (plan_add_choice(plan, &ch, NULL, &diag) != 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, op, "recording a choice: %s",
			                   diag.message);
		return 1;
	}
	return engine_fail(err, BCG_EXIT_USAGE, op, "--choices-from: op %s at %lld tokens chose "
	                   "'%s', which the %s backend cannot run for it", want, (long long)tokens,
	                   sc->impl, e->be->name);
}

/* The vars as the tuner times with them (capture --tune-var): each range
 * of O whole, a stride apart (tune_var_stride), or (MIDDLE) pinned to its
 * middle value. Nothing without ranges. */
static int tune_vars(struct engine *e, const struct tune_opts *o, int middle,
                     struct engine_error *err)
{
	struct engine_var_range r[ENGINE_VAR_RANGES_MAX];

	if (o->nvars == 0)
		return 0;
	if (o->nvars > ENGINE_VAR_RANGES_MAX)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "--tune-var: at most %d",
		                   ENGINE_VAR_RANGES_MAX);
	for (uint32_t k = 0; k < o->nvars; k++) {
		r[k] = o->vars[k];
		if (middle) {
			r[k].start = r[k].limit = tune_var_alone(&o->vars[k]);
		} else {
			/* a var the plan lacks: engine_set_vars says so */
			const uint32_t i = plan_find_var(e->plan, r[k].name);
			if (i != PLAN_NONE)
				r[k].step = tune_var_stride(&r[k], plan_get_var(e->plan, i)->step);
		}
	}
	return engine_set_vars(e, r, o->nvars, err);
}

int tune_variant(struct engine *e, plan_t *plan, uint32_t vi, const struct tune_opts *o,
                 struct tune_cache *cache, uint32_t *ops_tuned, struct engine_error *err)
{
	const struct plan_variant *pv = plan_get_variant(plan, vi);
	struct tune_opts opts = *o;
	struct engine_variant v;
	uint32_t tuned = 0;
	int rc = -1;

	if (opts.reps == 0)
		opts.reps = e->be->kind == PLAN_BACKEND_CUDA ? TUNE_REPS_CUDA : TUNE_REPS_HOST;
	o = &opts;

	if (cache->nops < e->nops) {
		int32_t *m = realloc(cache->op_entry, e->nops * sizeof *m);
		if (m == NULL)
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		cache->op_entry = m;
		cache->nops = e->nops;
	}
	for (uint32_t op = 0; op < cache->nops; op++)
		cache->op_entry[op] = -1;
	if (tune_vars(e, o, 1, err) != 0)
		return -1;
	if (engine_variant_init(e, pv->tokens, pv->mode, &v, err) != 0) {
		if (o->nvars > 0)
			engine_reset_vars(e);
		return -1;
	}
	if (engine_step_begin(e, &v, 0, err) != 0)
		goto out;
	for (uint32_t op = 0; op < e->nops; op++) {
		struct op_call *c = &v.calls[op];
		int n = e->be->impl_count(c->kind->id), usable[TUNE_MAX_IMPLS], nu = 0;
		unsigned mask = 0;
		struct tune_entry *t;
		char key[512];

		if (n > TUNE_MAX_IMPLS) {
			engine_fail(err, BCG_EXIT_RUNTIME, op, "%s has %d implementations on the %s "
			            "backend, more than the tuner's %d", c->kind->name, n,
			            e->be->name, TUNE_MAX_IMPLS);
			goto out;
		}

		/* The default first: the incumbent a candidate must beat by
		 * the margin, and what --no-tune records. */
		int d = engine_impl_default(e, c);
		if (d >= 0) {
			usable[nu++] = d;
			mask |= 1u << d;
		}
		for (int k = 0; k < n; k++)
			if (k != d && e->be->impl_usable(c, k)) {
				usable[nu++] = k;
				mask |= 1u << k;
			}
		if (nu < 2)
			continue;
		if (engine_interrupted(err) != 0)
			goto out;
		if (o->from != NULL) {
			int took = tune_take(e, plan, vi, op, o, c, usable, nu, err);
			if (took < 0)
				goto out;
			if (took > 0) {
				tuned++;
				continue;
			}
		}
		/* One fast only at the lengths it is timed at is weighed only
		 * where capture --tune-var gives those of the replay (a choice
		 * taken from --choices-from above stays whatever it is) */
		if (o->nvars == 0 && e->be->impl_windowed != NULL) {
			int kept = 0;
			for (int k = 0; k < nu; k++) {
				if (usable[k] != d && e->be->impl_windowed(c->kind->id, usable[k]))
					mask &= ~(1u << usable[k]);
				else
					usable[kept++] = usable[k];
			}
			nu = kept;
			if (nu < 2)
				continue;
		}
		tune_key(c, mask, key, sizeof key);
		if ((t = tune_find(cache, key)) == NULL) {
			if ((t = tune_add(cache, key)) == NULL) {
				engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
				goto out;
			}
			t->n = nu;
			memcpy(t->impl, usable, sizeof usable);
			if (o->measure && tune_measure(e, &v, op, t, o, err) != 0)
				goto out;
		}
		if (tune_record(plan, vi, op, e, o->untimed, c, t, err) != 0)
			goto out;
		cache->op_entry[op] = (int32_t)(t - cache->entries);
		/* What the choice needs stays made; what only losing candidates
		 * needed (a packed weight's copy) is freed at once. A choice the
		 * step may yet change keeps nothing: tune_step_variant keeps
		 * what the final ones need. */
		if (e->be->trim != NULL) {
			if (!o->step) {
				int incumbent = c->impl, made;
				c->impl = t->impl[t->chosen];
				made = engine_prepare_call(e, op, c, 1, err);
				c->impl = incumbent;
				if (made != 0)
					goto out;
			}
			e->be->trim(e->b);
		}
		tuned++;
	}
	rc = 0;
out:
	engine_variant_release(&v);
	if (o->nvars > 0)
		engine_reset_vars(e);
	if (ops_tuned != NULL)
		*ops_tuned = tuned;
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Confirmation in the step (capture --tune-step).                        */

/* Every op of variant VI in CACHE's entry G gets implementation K of it,
 * with FLAGS. */
static int step_set(struct engine *e, plan_t *plan, uint32_t vi, const struct tune_cache *cache,
                    uint32_t g, int k, uint32_t flags, struct engine_error *err)
{
	const struct tune_entry *t = &cache->entries[g];
	struct plan_diag diag = { 0 };

	for (uint32_t op = 0; op < e->nops; op++) {
		if (cache->op_entry[op] != (int32_t)g)
			continue;
		const char *impl = e->be->impl_name(e->kinds[op]->id, t->impl[k]);
		if (plan_set_choice(plan, vi, op, impl, flags, &diag) != 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, op, "recording a choice: %s",
			                   diag.message);
	}
	return 0;
}

/* The median step of X, TUNE_STEP_STEPS of them after TUNE_STEP_WARMUP. */
static int step_time(struct engine *e, struct exec_variant *x, double *ms,
                     struct engine_error *err)
{
	struct replay_stats st;

	if (replay_measure(e, x, TUNE_STEP_WARMUP, TUNE_STEP_STEPS, 1, &st, err) != 0)
		return -1;
	free(st.item_busy);
	replay_trace_release(&st.trace);
	if (st.partial || st.step_median <= 0.0)
		return engine_interrupted(err) != 0 ? -1 :
		       engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "timing the step: no step "
		                   "measured");
	*ms = st.step_median;
	return 0;
}

/* How the arrangement of X compares with that of BASE: the median over
 * TUNE_STEP_ROUNDS turns of X's step over BASE's, the two timed one after
 * the other in each, so that a drift of the clocks between turns cancels.
 * A first turn that puts X behind by more than TUNE_STEP_DROP ends it:
 * the turns left could not give X the lead. *TURNS: how many ran. */
static int step_ratio(struct engine *e, struct exec_variant *base, struct exec_variant *x,
                      double *ratio, uint32_t *turns, struct engine_error *err)
{
	double r[TUNE_STEP_ROUNDS];
	int n = 0;

	while (n < TUNE_STEP_ROUNDS) {
		double b, a;
		if (step_time(e, base, &b, err) != 0 || step_time(e, x, &a, err) != 0)
			return -1;
		r[n++] = a / b;
		if (n == 1 && r[0] > 1.0 + TUNE_STEP_DROP)
			break;
	}
	*ratio = bcg_percentile(r, (uint64_t)n, 50);
	*turns += (uint32_t)n;
	return 0;
}

/* Whether candidate K of entry T is tried in the step: another than the
 * one measurement chose (CHOSEN), within WINDOW of it alone. */
static int step_contested(const struct tune_entry *t, int chosen, int k, double window)
{
	double best = t->us[chosen];

	return k != chosen && best > 0.0 && t->us[k] > 0.0 && t->us[k] <= best * (1.0 + window);
}

static int step_confirm(struct engine *e, plan_t *plan, uint32_t vi,
                        const struct sched_item *items, uint32_t nitems, double window,
                        struct tune_cache *cache, struct tune_step_report *r,
                        struct engine_error *err)
{
	const struct plan_variant *pv = plan_get_variant(plan, vi);
	struct exec_variant base = { 0 }, alt = { 0 };
	int rc = -1;

	for (uint32_t op = 0; op < e->nops; op++) {
		int32_t g = cache->op_entry[op];
		struct tune_entry *t;
		uint32_t flags;
		int first = 1, close = 0;

		if (g < 0)
			continue;
		/* Each entry once, at its first op. */
		for (uint32_t q = 0; q < op && first; q++)
			first = cache->op_entry[q] != g;
		t = &cache->entries[g];
		if (!first)
			continue;
		const int incumbent = t->chosen;
		int contested = 0;
		for (int k = 0; k < t->n; k++)
			contested |= step_contested(t, incumbent, k, window);
		if (!contested)
			continue;
		flags = t->flags & PLAN_CHOICE_TUNED;
		r->groups++;
		if (base.items == NULL &&
		    exec_capture(e, pv->tokens, pv->mode, items, nitems, 0, &base, NULL, err) != 0)
			goto out;
		for (int k = 0; k < t->n; k++) {
			double ratio;
			if (!step_contested(t, incumbent, k, window))
				continue;
			if (engine_interrupted(err) != 0 ||
			    step_set(e, plan, vi, cache, (uint32_t)g, k, flags, err) != 0 ||
			    exec_capture(e, pv->tokens, pv->mode, items, nitems, 0, &alt, NULL, err) != 0 ||
			    step_set(e, plan, vi, cache, (uint32_t)g, t->chosen, flags, err) != 0 ||
			    step_ratio(e, &base, &alt, &ratio, &r->turns, err) != 0)
				goto out;
			r->trials++;
			if (ratio < 1.0 - TUNE_STEP_MARGIN) {
				t->chosen = k;
				exec_release(e, &base);
				base = alt;
				memset(&alt, 0, sizeof alt);
			} else {
				exec_release(e, &alt);
			}
			close |= ratio >= 1.0 - TUNE_STEP_MARGIN && ratio <= 1.0 + TUNE_STEP_MARGIN;
		}
		r->changed += t->chosen != incumbent;
		t->flags = PLAN_CHOICE_TUNED | PLAN_CHOICE_STEP | (close ? PLAN_CHOICE_CLOSE : 0);
		if (step_set(e, plan, vi, cache, (uint32_t)g, t->chosen, t->flags, err) != 0)
			goto out;
	}
	rc = 0;
out:
	if (alt.items != NULL)
		exec_release(e, &alt);
	if (base.items != NULL)
		exec_release(e, &base);
	return rc;
}

int tune_step_variant(struct engine *e, plan_t *plan, uint32_t vi, const struct sched_item *items,
                      uint32_t nitems, const struct tune_opts *o, struct tune_cache *cache,
                      struct tune_step_report *r, struct engine_error *err)
{
	const struct plan_variant *pv = plan_get_variant(plan, vi);
	struct share_pool *share = e->share;
	struct tune_step_report mine = { 0 };
	const char *label = e->progress_label;
	uint64_t t0 = bcg_now_ns();
	struct engine_variant v;
	int rc;

	if (r == NULL)
		r = &mine;
	memset(r, 0, sizeof *r);
	if (!o->step || !o->measure || cache->op_entry == NULL)
		return 0;
	/* Trial arrangements: no executable joins the capture's, and what
	 * their kernels need made is a trial's, freed unless kept below. */
	if (share != NULL)
		exec_share_end(e);
	e->prepare_trial = 1;
	e->progress_label = "capture: tune-step";
	rc = tune_vars(e, o, 0, err);
	if (rc == 0)
		rc = step_confirm(e, plan, vi, items, nitems, o->step_window, cache, r, err);
	if (o->nvars > 0)
		engine_reset_vars(e);
	e->progress_label = label;
	e->prepare_trial = 0;
	if (share != NULL)
		exec_share_begin(e, share);
	/* What the choices made need stays made; the rest goes. */
	if (rc == 0 && e->be->trim != NULL) {
		if (engine_variant_init(e, pv->tokens, pv->mode, &v, err) != 0)
			rc = -1;
		else
			engine_variant_release(&v);
		e->be->trim(e->b);
	}
	r->ns = bcg_now_ns() - t0;
	return rc;
}
