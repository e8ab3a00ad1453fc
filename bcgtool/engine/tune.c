/*
 * tune.c - choose each op's implementation by measurement (tune.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "tune.h"

#define TUNE_MAX_IMPLS 8

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

	if (engine_variant_init(e, pv->tokens, pv->mode, &v, err) != 0)
		return -1;
	if (engine_step_begin(e, &v, 0, err) != 0)
		goto out;
	for (uint32_t op = 0; op < e->nops; op++) {
		struct op_call *c = &v.calls[op];
		int n = e->be->impl_count(c->kind->id), usable[TUNE_MAX_IMPLS], nu = 0;
		unsigned mask = 0;
		struct tune_entry *t;
		char key[512];

		/* The default first: the incumbent a candidate must beat by
		 * the margin, and what --no-tune records. */
		int d = engine_impl_default(e, c);
		if (d >= 0) {
			usable[nu++] = d;
			mask |= 1u << d;
		}
		for (int k = 0; k < n && nu < TUNE_MAX_IMPLS; k++)
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
		/* What the choice needs stays made; what only losing candidates
		 * needed (a packed weight's copy) is freed at once. */
		if (e->be->trim != NULL) {
			int incumbent = c->impl, made;
			c->impl = t->impl[t->chosen];
			made = engine_prepare_call(e, op, c, 1, err);
			c->impl = incumbent;
			if (made != 0)
				goto out;
			e->be->trim(e->b);
		}
		tuned++;
	}
	rc = 0;
out:
	engine_variant_release(&v);
	if (ops_tuned != NULL)
		*ops_tuned = tuned;
	return rc;
}
