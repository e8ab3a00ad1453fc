/*
 * engine.c - materialize a program on a backend and drive its ops.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "batch.h"
#include "cmd.h"
#include "dist/dist.h"
#include "engine.h"
#include "memplan.h"
#include "model/safetensors.h"
#include "nvtx.h"
#include "ops/kernel-shape.h"
#include "ops/numeric.h"
#include "util.h"

int engine_fail(struct engine_error *err, int exit, uint32_t op, const char *fmt, ...)
{
	char msg[sizeof err->msg];
	va_list ap;

	if (err != NULL) {
		/* Formatted aside first: callers pass err->msg itself (a backend's
		 * sentence) as an argument to wrap it. */
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
		memcpy(err->msg, msg, sizeof msg);
		err->exit = exit;
		err->op = op;
	}
	return -1;
}

int engine_interrupted(struct engine_error *err)
{
	int sig = bcg_interrupted();

	if (sig == 0)
		return 0;
	return engine_fail(err, bcg_signal_status(sig), PLAN_NONE, "interrupted by %s",
	                   sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal");
}

int engine_fail_backend(struct engine_error *err, const char *what)
{
	return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s: %s", what, err->msg);
}

void engine_report(const struct engine_error *err, const plan_t *plan, const char *script)
{
	const struct plan_op *o = err->op != PLAN_NONE ? plan_get_op(plan, err->op) : NULL;

	if (script == NULL)
		script = plan_get_meta(plan)->script;
	/* A kernel's fault shows at a later call, maybe a later op's. */
	const char *hint = err->exit == BCG_EXIT_RUNTIME && strstr(err->msg, "kernel fault") &&
	                   engine_sync_mode() != 1
	                           ? "; CUDA reports a kernel's fault at a later wait, maybe "
	                             "after other ops: BCG_SYNC=1 names the op or segment at fault"
	                           : "";

	if (o != NULL && o->line > 0 && script[0] != '\0')
		bcg_error_at(script, o->line, o->col, "%s%s", err->msg, hint);
	else
		bcg_error("%s%s", err->msg, hint);
}

void engine_op_label(const plan_t *plan, uint32_t op, char *buf, size_t len)
{
	const struct plan_op *o = plan_get_op(plan, op);

	if (o == NULL)
		snprintf(buf, len, "op #%u", op);
	else if (o->name[0] != '\0')
		snprintf(buf, len, "'%s' (%s)", o->name, o->kind);
	else
		snprintf(buf, len, "%s#%u", o->kind, op);
}

/* ---------------------------------------------------------------------- */
/* Launch descriptions.                                                    */

static void engine_fill_operand(const struct engine *e, uint32_t t, int64_t tokens,
                                struct op_tensor *ot)
{
	const struct plan_tensor *pt = plan_get_tensor(e->plan, t);

	ot->dtype = pt->dtype;
	ot->rank = (int)pt->rank;
	for (uint32_t i = 0; i < pt->rank; i++)
		ot->dim[i] = plan_axis_size(e->plan, &pt->shape[i], tokens);
	ot->data = engine_tensor_at(e, t, tokens);
}

void *engine_tensor_at(const struct engine *e, uint32_t t, int64_t tokens)
{
	if (e->coll_offset != NULL && e->coll_offset[t] != UINT64_MAX)
		return backend_at(e->coll_base, e->coll_offset[t]);
	if (tokens > e->max_tokens && e->above_offset != NULL &&
	    e->above_offset[t] != UINT64_MAX)
		return backend_at(e->base, e->above_offset[t]);
	return backend_at(e->base, plan_get_tensor(e->plan, t)->offset);
}

/* Fill CALL's attributes from the plan's, by name, in the kind's order. */
static int engine_fill_attrs(const struct engine *e, uint32_t op, struct op_call *call,
                             struct engine_error *err)
{
	const struct plan_op *o = plan_get_op(e->plan, op);
	const struct op_kind *k = call->kind;

	for (int p = 0; k->attrs[p].name != NULL; p++) {
		const struct op_attr_spec *spec = &k->attrs[p];
		const struct plan_attr *a = NULL;

		for (uint32_t i = 0; i < o->nattr; i++)
			if (strcmp(o->attr[i].key, spec->name) == 0)
				a = &o->attr[i];
		if (a == NULL) {
			if (spec->required)
				return engine_fail(err, BCG_EXIT_USAGE, op,
				                   "op %u (%s) lacks its attribute %s", op, k->name, spec->name);
			if (spec->type == OP_ATTR_FLOAT)
				call->attr[p].f = spec->dflt;
			else
				call->attr[p].i = (int64_t)spec->dflt;
			continue;
		}
		switch (a->type) {
		case PLAN_ATTR_FLOAT:
			call->attr[p].f = a->f;
			break;
		case PLAN_ATTR_STR:
			/* an enum attribute: its index among the spec's choices */
			call->attr[p].i = op_attr_choice(spec, a->s);
			if (call->attr[p].i < 0)
				return engine_fail(err, BCG_EXIT_USAGE, op, "op %u (%s): attribute %s "
				                   "is '%.64s', which this build does not know", op,
				                   k->name, spec->name, a->s);
			break;
		case PLAN_ATTR_VAR:
			/* value bound per step; the mirror's address now */
			call->attr[p].i = engine_var(e, (uint32_t)a->i)->start;
			call->attr_dev[p] = backend_at(e->base, engine_var(e, (uint32_t)a->i)->offset);
			break;
		default:
			call->attr[p].i = a->i;
			break;
		}
		if (spec->type == OP_ATTR_FLOAT && a->type != PLAN_ATTR_FLOAT)
			call->attr[p].f = (double)a->i;
	}
	return 0;
}

/* "mma, gemv or cublas": the implementations of KIND on E's backend. */
static void engine_impl_list(const struct engine *e, enum op_id id, char *buf, size_t len)
{
	int n = e->be->impl_count(id);
	size_t at = 0;

	buf[0] = '\0';
	for (int k = 0; k < n && at < len; k++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", k == 0 ? "" : k + 1 == n ? " or " : ", ",
		                       e->be->impl_name(id, k));
}

/* The variant whose tuned choices a token count without a variant of its
 * own borrows: the smallest holding it (the one a batch of that size is
 * padded to), else the largest. PLAN_NONE when the plan has no variant. */
static uint32_t engine_nearest_variant(const plan_t *plan, int64_t tokens)
{
	uint32_t best = PLAN_NONE, largest = PLAN_NONE;

	for (uint32_t i = 0; i < plan_count_variants(plan); i++) {
		int64_t t = plan_get_variant(plan, i)->tokens;
		if (t >= tokens && (best == PLAN_NONE || t < plan_get_variant(plan, best)->tokens))
			best = i;
		if (largest == PLAN_NONE || t > plan_get_variant(plan, largest)->tokens)
			largest = i;
	}
	return best != PLAN_NONE ? best : largest;
}

/* Whether IMPL names an implementation of C's kind that can run C. */
static int engine_impl_usable(const struct engine *e, const struct op_call *c, int impl)
{
	return impl >= 0 && impl < e->be->impl_count(c->kind->id) && e->be->impl_usable(c, impl);
}

int engine_impl_default(const struct engine *e, const struct op_call *c)
{
	int n = e->be->impl_count(c->kind->id);
	int d = e->be->impl_default ? e->be->impl_default(c) : -1;

	if (!engine_impl_usable(e, c, d)) {
		d = -1;
		for (int k = 0; k < n && d < 0; k++)
			if (e->be->impl_usable(c, k))
				d = k;
		if (d < 0)
			return -1;
	}
	if (e->share_impl && e->be->impl_shared) {
		int s = e->be->impl_shared(c, d);
		if (engine_impl_usable(e, c, s))
			return s;
	}
	return d;
}

/* Set C->impl for op OP at TOKENS tokens (engine_variant_init's rule). A
 * recorded choice this backend cannot honour is an error, never a silent
 * substitute: the plan promises those kernels. A token count captured by
 * no variant (an eager step of a served batch, a step above the largest
 * size) takes the choice of the nearest variant (engine_nearest_variant)
 * where that implementation can run it: measured kernels, not defaults
 * never timed at that size; else the default. */
static int engine_choose_impl(const struct engine *e, int64_t tokens, uint32_t op,
                              struct op_call *c, struct engine_error *err)
{
	const struct plan_choice *ch = NULL;
	enum op_id id = c->kind->id;
	int n = e->be->impl_count(id), borrowed = 0;
	uint32_t vi = PLAN_NONE;
	char label[128], list[160];

	if (e->use_choices) {
		vi = plan_find_variant(e->plan, tokens);
		if (vi == PLAN_NONE) {
			vi = engine_nearest_variant(e->plan, tokens);
			borrowed = 1;
		}
	}
	if (vi != PLAN_NONE)
		ch = plan_find_choice(e->plan, vi, op);
	if (ch != NULL) {
		int k = 0;
		while (k < n && strcmp(e->be->impl_name(id, k), ch->impl) != 0)
			k++;
		if (k < n && e->be->impl_usable(c, k)) {
			c->impl = k;
			return 0;
		}
		if (!borrowed) {
			engine_op_label(e->plan, op, label, sizeof label);
			if (k < n)
				return engine_fail(err, BCG_EXIT_USAGE, op, "op %s at %lld tokens: the plan "
				                   "chose implementation '%s', which cannot run it here",
				                   label, (long long)tokens, ch->impl);
			engine_impl_list(e, id, list, sizeof list);
			return engine_fail(err, BCG_EXIT_USAGE, op, "op %s at %lld tokens: the plan "
			                   "chose implementation '%s', which the %s backend lacks (it "
			                   "has %s)", label, (long long)tokens, ch->impl, e->be->name,
			                   list);
		}
	}
	if ((c->impl = engine_impl_default(e, c)) >= 0)
		return 0;
	engine_op_label(e->plan, op, label, sizeof label);
	engine_impl_list(e, id, list, sizeof list);
	return engine_fail(err, BCG_EXIT_USAGE, op, "op %s at %lld tokens: none of the %s "
	                   "backend's implementations (%s) can run it", label, (long long)tokens,
	                   e->be->name, list);
}

int engine_prepare_call(struct engine *e, uint32_t op, const struct op_call *c, int keep,
                        struct engine_error *err)
{
	const struct plan_op *o = plan_get_op(e->plan, op);
	char label[128], why[sizeof err->msg], names[160] = "";
	size_t at = 0;

	if (e->be->prepare == NULL || e->base == NULL)
		return 0;
	if (e->be->prepare(e->b, c, keep, err->msg, sizeof err->msg) == 0)
		return 0;
	snprintf(why, sizeof why, "%s", err->msg);
	for (uint32_t k = 0; k < o->nin && at < sizeof names; k++)
		if ((c->const_in >> k) & 1u)
			at += (size_t)snprintf(names + at, sizeof names - at, "%s'%s'", at ? ", " : "",
			                       plan_get_tensor(e->plan, o->in[k])->name);
	engine_op_label(e->plan, op, label, sizeof label);
	return engine_fail(err, BCG_EXIT_RUNTIME, op, "op %s, implementation %s, weight %s: %s",
	                   label, e->be->impl_name(c->kind->id, c->impl), names[0] ? names : "-",
	                   why);
}

int engine_variant_init(struct engine *e, int64_t tokens, int mode,
                        struct engine_variant *v, struct engine_error *err)
{
	memset(v, 0, sizeof *v);
	if (tokens < 1 || tokens > e->eager_tokens)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE,
		                   "%lld tokens is outside this arena's range 1..%lld",
		                   (long long)tokens, (long long)e->eager_tokens);
	if (tokens > e->max_tokens && mode != PLAN_MODE_EAGER)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE,
		                   "%lld tokens is above the %lld the arena is planned for: only "
		                   "eager steps run there", (long long)tokens,
		                   (long long)e->max_tokens);
	v->tokens = tokens;
	v->mode = mode;
	v->calls = calloc(e->nops ? e->nops : 1, sizeof *v->calls);
	if (v->calls == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (uint32_t i = 0; i < e->nops; i++) {
		const struct plan_op *o = plan_get_op(e->plan, i);
		struct op_call *c = &v->calls[i];

		c->kind = e->kinds[i];
		c->nin = (int)o->nin;
		c->nout = (int)o->nout;
		for (uint32_t k = 0; k < o->nin; k++) {
			engine_fill_operand(e, o->in[k], tokens, &c->in[k]);
			if (plan_get_tensor(e->plan, o->in[k])->role == PLAN_ROLE_WEIGHT)
				c->const_in |= 1u << k;
		}
		c->ready_in = e->ready_in[i];
		for (uint32_t k = 0; k < o->nout; k++)
			engine_fill_operand(e, o->out[k], tokens, &c->out[k]);
		if (engine_fill_attrs(e, i, c, err) != 0) {
			engine_variant_release(v);
			return -1;
		}
		c->graph_safe = mode == PLAN_MODE_FULL && c->kind->capture == OP_CAPTURE_SAFE_FORM;
		c->batch = &e->batch;
		c->comm = e->comm;
		c->name = o->name;
		if (c->kind->check(c, err->msg, sizeof err->msg) != 0) {
			char label[128];
			engine_op_label(e->plan, i, label, sizeof label);
			engine_variant_release(v);
			return engine_fail(err, BCG_EXIT_USAGE, i, "op %s at %lld tokens: %s",
			                   label, (long long)tokens, err->msg);
		}
		if (engine_choose_impl(e, tokens, i, c, err) != 0 ||
		    engine_prepare_call(e, i, c, !e->prepare_trial, err) != 0) {
			engine_variant_release(v);
			return -1;
		}
	}
	return 0;
}

void engine_variant_release(struct engine_variant *v)
{
	free(v->calls);
	memset(v, 0, sizeof *v);
}

/* ---------------------------------------------------------------------- */
/* Opening: kinds, bindings, scratch, arena.                               */

/* Per op, its op_call.ready_in: the inputs that are weights, or feeds
 * (copied before the step's first kernel) that no op writes. */
static int engine_mark_ready(struct engine *e, struct engine_error *err)
{
	unsigned char *written = calloc(plan_count_tensors(e->plan) + 1, 1);

	e->ready_in = calloc(e->nops ? e->nops : 1, sizeof *e->ready_in);
	if (written == NULL || e->ready_in == NULL) {
		free(written);
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	}
	for (uint32_t i = 0; i < e->nops; i++) {
		const struct plan_op *o = plan_get_op(e->plan, i);
		for (uint32_t k = 0; k < o->nout; k++)
			written[o->out[k]] = 1;
	}
	for (uint32_t i = 0; i < e->nops; i++) {
		const struct plan_op *o = plan_get_op(e->plan, i);
		for (uint32_t k = 0; k < o->nin; k++) {
			const int role = plan_get_tensor(e->plan, o->in[k])->role;
			if (role == PLAN_ROLE_WEIGHT || (role == PLAN_ROLE_INPUT && !written[o->in[k]]))
				e->ready_in[i] |= 1u << k;
		}
	}
	free(written);
	return 0;
}

static int engine_resolve(struct engine *e, struct engine_error *err)
{
	uint32_t nb = 0;

	e->kinds = calloc(e->nops ? e->nops : 1, sizeof *e->kinds);
	if (e->kinds == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (uint32_t i = 0; i < e->nops; i++) {
		const struct plan_op *o = plan_get_op(e->plan, i);
		e->kinds[i] = op_kind_find(o->kind);
		if (e->kinds[i] == NULL)
			return engine_fail(err, BCG_EXIT_USAGE, i,
			                   "op %u has kind '%s', which this bcgtool does not know",
			                   i, o->kind);
		if (((int)o->nin != op_kind_count_inputs(e->kinds[i]) &&
		     (int)o->nin != op_kind_min_inputs(e->kinds[i])) ||
		    (int)o->nout != op_kind_count_outputs(e->kinds[i]))
			return engine_fail(err, BCG_EXIT_USAGE, i,
			                   "op %u (%s) has %u inputs and %u outputs, not %d and %d",
			                   i, o->kind, o->nin, o->nout,
			                   op_kind_count_inputs(e->kinds[i]),
			                   op_kind_count_outputs(e->kinds[i]));
		for (uint32_t a = 0; a < o->nattr; a++)
			if (o->attr[a].type == PLAN_ATTR_VAR)
				nb++;
	}
	e->binds = calloc(nb ? nb : 1, sizeof *e->binds);
	if (e->binds == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (uint32_t i = 0; i < e->nops; i++) {
		const struct plan_op *o = plan_get_op(e->plan, i);
		for (uint32_t a = 0; a < o->nattr; a++) {
			int pos;
			if (o->attr[a].type != PLAN_ATTR_VAR)
				continue;
			pos = op_kind_attr_index(e->kinds[i], o->attr[a].key);
			if (pos < 0 || e->kinds[i]->attrs[pos].type != OP_ATTR_INTVAR)
				return engine_fail(err, BCG_EXIT_USAGE, i,
				                   "op %u (%s): attribute %s cannot take a var",
				                   i, o->kind, o->attr[a].key);
			e->binds[e->nbinds].op = i;
			e->binds[e->nbinds].pos = pos;
			e->binds[e->nbinds].var = (uint32_t)o->attr[a].i;
			e->nbinds++;
		}
	}
	return engine_mark_ready(e, err);
}

/* The most scratch any op needs at any token count up to eager_tokens, in
 * either launch form: backends promise needs that never shrink as the
 * token count grows (backend.h), so the largest count decides. */
static int engine_size_scratch(struct engine *e, struct engine_error *err)
{
	struct engine_variant v;
	uint64_t need = 0;

	e->base = NULL;  /* shapes only; addresses unused */
	/* Eager mode: the host-shaped form at the most tokens of all. */
	for (int mode = PLAN_MODE_BREAKABLE; mode <= PLAN_MODE_EAGER; mode++) {
		if (engine_variant_init(e, mode == PLAN_MODE_EAGER ? e->eager_tokens : e->max_tokens,
		                        mode, &v, err) != 0)
			return -1;
		/* Every usable implementation: capture may time each. */
		for (uint32_t i = 0; i < e->nops; i++) {
			struct op_call c = v.calls[i];
			for (c.impl = 0; c.impl < e->be->impl_count(c.kind->id); c.impl++) {
				size_t s = e->be->impl_usable(&c, c.impl) ? e->be->scratch_bytes(&c) : 0;
				if (s > need)
					need = s;
			}
		}
		engine_variant_release(&v);
	}
	e->scratch_bytes = (need + 255) & ~(uint64_t)255;
	return 0;
}

/* The largest buffer a feed needs, for the staging area. */
static size_t engine_staging_size(const struct engine *e)
{
	size_t need = (size_t)plan_count_vars(e->plan) * sizeof(int32_t);

	for (uint32_t t = 0; t < plan_count_tensors(e->plan); t++) {
		const struct plan_tensor *pt = plan_get_tensor(e->plan, t);
		if (pt->feed.kind != PLAN_FEED_NONE) {
			uint64_t b = plan_tensor_bytes(e->plan, t, e->eager_tokens);
			if (b > need)
				need = (size_t)b;
		}
	}
	return need ? need : 16;
}

/* Initialize the tensors. A tensor with no initializer starts as zeros
 * (state, outputs, activations alike), so that every run from a reset sees
 * the same bytes: verification compares runs bit for bit. */
/* The share of a split tensor whose initializer depends on the element's
 * index (random, arange): where each of its elements lies in the whole
 * (numeric.h). 0 when there is nothing to map: not split, or an
 * initializer alike everywhere. */
static int engine_init_slice(const plan_t *plan, const struct plan_tensor *pt,
                             const struct plan_init *init, struct bcg_slice *s)
{
	const struct plan_split *sp = &pt->split;
	uint64_t at = 0, from = 0;

	if (sp->nblocks == 0 || (init->kind != PLAN_INIT_RANDOM && init->kind != PLAN_INIT_ARANGE))
		return 0;
	memset(s, 0, sizeof *s);
	s->inner = 1;
	for (uint32_t a = sp->axis + 1; a < pt->rank; a++)
		s->inner *= (uint64_t)plan_axis_size(plan, &pt->shape[a], 1);
	s->share = (uint64_t)plan_axis_size(plan, &pt->shape[sp->axis], 1);
	s->nblocks = sp->nblocks;
	for (uint32_t b = 0; b < sp->nblocks && b < BCG_SLICE_MAX_BLOCKS; b++) {
		s->at[b] = at;
		s->from[b] = from + (uint64_t)sp->block[b].start;
		at += (uint64_t)sp->block[b].len;
		from += (uint64_t)sp->block[b].full;
	}
	s->full = from;
	return 1;
}

static int engine_init_tensors(struct engine *e, int include_weights, struct engine_error *err)
{
	static const struct plan_init zeros = { .kind = PLAN_INIT_ZEROS };

	for (uint32_t t = 0; t < plan_count_tensors(e->plan); t++) {
		const struct plan_tensor *pt = plan_get_tensor(e->plan, t);
		/* safetensors weights: zeros here, their sources read afterwards */
		const struct plan_init *init = pt->init.kind == PLAN_INIT_NONE ||
		                               pt->init.kind == PLAN_INIT_SAFETENSORS ? &zeros : &pt->init;
		uint64_t count;
		struct bcg_slice slice;
		const struct bcg_slice *sl = engine_init_slice(e->plan, pt, init, &slice) ? &slice : NULL;

		if (pt->role == PLAN_ROLE_WEIGHT && !include_weights)
			continue;
		/* Random weights of a large program take seconds on the host: an
		 * interrupt is seen between tensors. */
		if (engine_interrupted(err) != 0)
			return -1;
		/* A collective's operand in symmetric memory: only there. */
		if (e->coll_offset != NULL && e->coll_offset[t] != UINT64_MAX) {
			count = plan_tensor_numel(e->plan, t, e->coll_tokens);
			if (count != 0 &&
			    e->be->init(e->b, backend_at(e->coll_base, e->coll_offset[t]), pt->dtype,
			                count, init, sl, err->msg, sizeof err->msg) != 0)
				return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE,
				                   "initializing tensor '%s' in symmetric memory: %s",
				                   pt->name, err->msg);
			continue;
		}
		/* Its reserved space, not its shape: a tensor no op touches has
		 * none, and must not spill into its neighbours'. */
		count = pt->bytes / plan_dtype_size(pt->dtype);
		if (count == 0)
			continue;
		if (e->be->init(e->b, backend_at(e->base, pt->offset), pt->dtype, count,
		                init, sl, err->msg, sizeof err->msg) != 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE,
			                   "initializing tensor '%s': %s", pt->name, err->msg);
		/* Its second place, for eager steps above the arena's tokens. */
		if (e->above_offset == NULL || e->above_offset[t] == UINT64_MAX)
			continue;
		count = plan_tensor_numel(e->plan, t, e->eager_tokens);
		if (e->be->init(e->b, backend_at(e->base, e->above_offset[t]), pt->dtype, count,
		                init, sl, err->msg, sizeof err->msg) != 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE,
			                   "initializing tensor '%s' above %lld tokens: %s", pt->name,
			                   (long long)e->max_tokens, err->msg);
	}
	return engine_interrupted(err);
}

/* BCG_TEST_FAULT (engine.h); a malformed value is a usage error, so that a
 * test cannot pass by staging nothing. */
static int engine_test_fault(struct engine_fault *f, struct engine_error *err)
{
	const char *v = getenv("BCG_TEST_FAULT");
	char *end;

	memset(f, 0, sizeof *f);
	if (v == NULL || v[0] == '\0')
		return 0;
	if (strncmp(v, "oom:", 4) == 0) {
		errno = 0;
		f->limit = strtoull(v + 4, &end, 10);
		if (v[4] != '\0' && *end == '\0' && errno == 0) {
			f->kind = ENGINE_FAULT_OOM;
			return 0;
		}
	} else if (strncmp(v, "kernel:", 7) == 0 && v[7] != '\0') {
		f->kind = ENGINE_FAULT_KERNEL;
		snprintf(f->op, sizeof f->op, "%s", v + 7);
		return 0;
	} else if (strncmp(v, "break:", 6) == 0 && v[6] != '\0') {
		f->kind = ENGINE_FAULT_BREAK;
		snprintf(f->op, sizeof f->op, "%s", v + 6);
		return 0;
	} else if (strncmp(v, "eager:", 6) == 0 && v[6] != '\0') {
		f->kind = ENGINE_FAULT_EAGER;
		snprintf(f->op, sizeof f->op, "%s", v + 6);
		return 0;
	}
	return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE,
	                   "BCG_TEST_FAULT: '%s' is not oom:BYTES, kernel:OP, break:OP or eager:OP",
	                   v);
}

int engine_sync_mode(void)
{
	const char *v = getenv("BCG_SYNC");

	if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0)
		return 0;
	return strcmp(v, "1") == 0 ? 1 : -1;
}

int engine_weight_changed(const struct engine *e, uint32_t i)
{
	const struct plan_weight_source *w = plan_get_weight_source(e->plan, i);

	return e->weight_hash != NULL && w != NULL && (w->flags & PLAN_WSRC_HASHED) &&
	       w->hash != e->weight_hash[i];
}

void engine_warn_weights(const struct engine *e)
{
	for (uint32_t i = 0; i < plan_count_weight_sources(e->plan); i++) {
		const struct plan_weight_source *w = plan_get_weight_source(e->plan, i);
		if (!engine_weight_changed(e, i))
			continue;
		bcg_warn("weight drift: %s: tensor '%s' (weight '%s') changed since the capture "
		         "(xxh64 %016llx, now %016llx)", w->file, w->name,
		         plan_get_tensor(e->plan, w->tensor)->name, (unsigned long long)w->hash,
		         (unsigned long long)e->weight_hash[i]);
	}
}

/* The files of the weight sources, each opened once. */
struct engine_files {
	uint32_t         n;
	struct st_file **f;
};

static int engine_file(struct engine_files *fs, const char *path, struct st_file **out,
                       struct engine_error *err)
{
	struct st_file **grown;

	for (uint32_t i = 0; i < fs->n; i++)
		if (strcmp(fs->f[i]->path, path) == 0) {
			*out = fs->f[i];
			return 0;
		}
	if ((grown = realloc(fs->f, (fs->n + 1) * sizeof *grown)) == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	fs->f = grown;
	if (st_open(path, &fs->f[fs->n], err->msg, sizeof err->msg) != 0)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s", err->msg);
	*out = fs->f[fs->n++];
	return 0;
}

/* Upload BYTES of SRC (dtype SDT) to DST (dtype DDT), converting through a
 * bounded buffer when the dtypes differ. */
static int engine_upload(struct engine *e, void *dst, int ddt, const unsigned char *src, int sdt,
                         uint64_t bytes, struct engine_error *err)
{
	enum { CHUNK = 1 << 22 };   /* elements per conversion */
	size_t ss = plan_dtype_size(sdt), ds = plan_dtype_size(ddt);
	uint64_t n = bytes / ss;
	void *buf;

	if (sdt == ddt)
		return e->be->write(e->b, dst, src, (size_t)bytes, err->msg, sizeof err->msg);
	if ((buf = malloc((size_t)CHUNK * ds)) == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (uint64_t i = 0; i < n; i += CHUNK) {
		uint64_t k = n - i < CHUNK ? n - i : CHUNK;
		st_convert(buf, ddt, src + i * ss, sdt, k);
		if (e->be->write(e->b, (unsigned char *)dst + i * ds, buf, (size_t)(k * ds),
		                 err->msg, sizeof err->msg) != 0) {
			free(buf);
			return -1;
		}
	}
	free(buf);
	return 0;
}

/* Upload a rank's slice of checkpoint tensor SRC (W's slice_*: viewed as
 * [outer, full, inner], elements [start, start + len) of the middle axis)
 * to DST, contiguous: the rows gathered into a bounded buffer first, so
 * that a slice of many short rows is a few writes, not one a row. */
static int engine_upload_slice(struct engine *e, void *dst, int ddt, const unsigned char *src,
                               const struct plan_weight_source *w, struct engine_error *err)
{
	enum { CHUNK = 1 << 24 };   /* bytes gathered at a time, at least one row */
	size_t ss = plan_dtype_size(w->dtype), ds = plan_dtype_size(ddt);
	uint64_t row = w->slice_len * w->slice_inner * ss;        /* one outer row of the slice */
	uint64_t per = row >= CHUNK ? 1 : CHUNK / row, o = 0;
	unsigned char *buf;
	int rc = 0;

	if (w->slice_outer * w->slice_full * w->slice_inner * ss != w->bytes ||
	    w->slice_start + w->slice_len > w->slice_full)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s: tensor '%s': a slice of "
		                   "[%llu, %llu, %llu] rows %llu..%llu does not fit its %llu bytes",
		                   w->file, w->name, (unsigned long long)w->slice_outer,
		                   (unsigned long long)w->slice_full, (unsigned long long)w->slice_inner,
		                   (unsigned long long)w->slice_start,
		                   (unsigned long long)(w->slice_start + w->slice_len),
		                   (unsigned long long)w->bytes);
	if (per > w->slice_outer)
		per = w->slice_outer;
	if ((buf = malloc((size_t)(per * row))) == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (; o < w->slice_outer && rc == 0; o += per) {
		uint64_t n = w->slice_outer - o < per ? w->slice_outer - o : per;
		for (uint64_t k = 0; k < n; k++)
			memcpy(buf + k * row, src + ((o + k) * w->slice_full + w->slice_start) *
			                            w->slice_inner * ss, (size_t)row);
		rc = engine_upload(e, (unsigned char *)dst + o * (row / ss) * ds, ddt, buf, w->dtype,
		                   n * row, err);
	}
	free(buf);
	return rc;
}

/* Read every weight source into its place: each file mapped, each tensor
 * hashed and uploaded where it lies (converted on the way when its dtype
 * is not the tensor's). A file whose tensor is gone, or has another dtype
 * or size, cannot be loaded (exit 2); one whose content changed loads, and
 * counts in e->weights_changed. */
static int engine_load_weights(struct engine *e, struct engine_error *err)
{
	uint32_t n = plan_count_weight_sources(e->plan);
	struct engine_files fs = { 0 };
	int rc = -1;

	if (n == 0)
		return 0;
	if ((e->weight_hash = calloc(n, sizeof *e->weight_hash)) == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		const struct plan_weight_source *w = plan_get_weight_source(e->plan, i);
		const struct plan_tensor *t = plan_get_tensor(e->plan, w->tensor);
		const struct st_tensor *st;
		struct st_file *f = NULL;
		uint64_t t0;

		if (engine_interrupted(err) != 0 || engine_file(&fs, w->file, &f, err) != 0)
			goto out;
		if ((st = st_find(f, w->name)) == NULL) {
			engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s: no tensor '%s' (weight '%s')",
			            w->file, w->name, t->name);
			goto out;
		}
		if (st->dtype != w->dtype || st->end - st->begin != w->bytes) {
			engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s: tensor '%s' is now %s of %llu "
			            "bytes; the plan read it as %s of %llu bytes", w->file, w->name,
			            st->dtype_name, (unsigned long long)(st->end - st->begin),
			            plan_dtype_name(w->dtype), (unsigned long long)w->bytes);
			goto out;
		}
		t0 = bcg_now_ns();
		e->weight_hash[i] = XXH64(st_data(f, st), (size_t)w->bytes, 0);
		e->weight_hash_ns += bcg_now_ns() - t0;
		e->weight_bytes += w->bytes;
		if (engine_weight_changed(e, i))
			e->weights_changed++;
		if (t->bytes == 0)      /* no op reads it: no place in the arena */
			continue;
		if ((w->slice_len != 0
		     ? engine_upload_slice(e, backend_at(e->base, t->offset + w->offset), t->dtype,
		                           st_data(f, st), w, err)
		     : engine_upload(e, backend_at(e->base, t->offset + w->offset), t->dtype,
		                     st_data(f, st), w->dtype, w->bytes, err)) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "loading '%s' from %s: %s",
			            w->name, w->file, err->msg);
			goto out;
		}
	}
	rc = 0;
out:
	for (uint32_t i = 0; i < fs.n; i++)
		st_close(fs.f[i]);
	free(fs.f);
	return rc;
}

/* The room after the arena for eager steps of up to e->eager_tokens. */
static int engine_place_above(struct engine *e, struct engine_error *err)
{
	uint64_t at = (e->arena_bytes + MEMPLAN_ALIGNMENT - 1) & ~(uint64_t)(MEMPLAN_ALIGNMENT - 1);
	uint64_t end = at;

	if (e->eager_tokens <= e->max_tokens)
		return 0;
	e->above_offset = calloc(plan_count_tensors(e->plan) ? plan_count_tensors(e->plan) : 1,
	                         sizeof *e->above_offset);
	if (e->above_offset == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	if (memplan_place_above(e->plan, e->max_tokens, e->eager_tokens, at, e->above_offset, &end,
	                        err->msg, sizeof err->msg) != 0)
		return engine_fail(err, strstr(err->msg, "out of memory") ? BCG_EXIT_RUNTIME
		                                                           : BCG_EXIT_USAGE,
		                   PLAN_NONE, "eager steps of up to %lld tokens: %s",
		                   (long long)e->eager_tokens, err->msg);
	e->above_bytes = end - e->arena_bytes;
	return 0;
}

/*
 * --nccl-mem symmetric: the collectives' operands in symmetric memory.
 *
 * Why a region of their own, and not the whole arena from ncclMemAlloc:
 * NCCL's symmetric kernels find a peer's operand at the offset of this
 * rank's within its window, so every rank must register a window of the
 * same size and hold each collective's operands at the same offset. The
 * arena's layout is each rank's own (its shares of the weights, the
 * vocabulary's last rows), it is as large as the model (registering it
 * would map every rank's weights into every peer), and plans record it.
 * The region is laid out from the collectives' operands alone
 * (memplan_place_subset), which the ranks agree in, so the layout is the
 * same on every rank (the transport checks it before registering); it
 * takes kilobytes to a few megabytes; and the arena, its offsets and the
 * plans' records of it stay as they are: those tensors keep their (now
 * unused) places there. Weights stay in the arena even when a collective
 * reads one (the weights' loading writes there).
 */
static int engine_place_collectives(struct engine *e, struct engine_error *err)
{
	uint32_t nt = plan_count_tensors(e->plan), marked = 0;
	unsigned char *in = NULL;
	uint64_t end = 0;
	XXH64_state_t *h = NULL;
	uint64_t layout;
	char msg[512];
	int rc = -1;

	if (e->comm == NULL || e->comm->nccl_mem != DIST_NCCL_MEM_SYMMETRIC ||
	    e->comm->ops->sym_alloc == NULL)
		return 0;        /* the host transport: a no-op (cmd-tp.c says so) */
	if ((in = calloc(nt ? nt : 1, 1)) == NULL ||
	    (e->coll_offset = calloc(nt ? nt : 1, sizeof *e->coll_offset)) == NULL ||
	    (h = XXH64_createState()) == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	for (uint32_t op = 0; op < e->nops; op++) {
		const struct plan_op *o = plan_get_op(e->plan, op);

		if (!op_is_collective(e->plan, op))
			continue;
		for (uint32_t k = 0; k < o->nin + o->nout; k++) {
			uint32_t t = k < o->nin ? o->in[k] : o->out[k - o->nin];
			if (plan_get_tensor(e->plan, t)->role != PLAN_ROLE_WEIGHT && !in[t]) {
				in[t] = 1;
				marked++;
			}
		}
	}
	e->coll_tokens = e->eager_tokens > e->max_tokens ? e->eager_tokens : e->max_tokens;
	if (memplan_place_subset(e->plan, e->coll_tokens, in, e->coll_offset, &end, msg,
	                         sizeof msg) != 0) {
		engine_fail(err, strstr(msg, "out of memory") ? BCG_EXIT_RUNTIME : BCG_EXIT_USAGE,
		            PLAN_NONE, "symmetric memory: %s", msg);
		goto out;
	}
	if (marked == 0) {        /* no collective: nothing to place */
		rc = 0;
		goto out;
	}
	(void)XXH64_reset(h, 0);
	for (uint32_t t = 0; t < nt; t++) {
		uint64_t rec[3];
		if (!in[t])
			continue;
		rec[0] = t;
		rec[1] = e->coll_offset[t];
		rec[2] = plan_tensor_bytes(e->plan, t, e->coll_tokens);
		(void)XXH64_update(h, rec, sizeof rec);
	}
	layout = XXH64_digest(h);
	if (e->comm->ops->sym_alloc(e->comm, end, layout, &e->coll_base, msg, sizeof msg) != 0) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s", msg);
		goto out;
	}
	e->coll_bytes = end;
	e->nccl_mem = DIST_NCCL_MEM_SYMMETRIC;
	rc = 0;
out:
	if (rc != 0 || e->coll_base == NULL) {
		free(e->coll_offset);
		e->coll_offset = NULL;
	}
	if (h != NULL)
		XXH64_freeState(h);
	free(in);
	return rc;
}

int engine_open(const plan_t *program, const char *backend, int64_t max_tokens,
                struct engine **out, struct engine_error *err)
{
	return engine_open_above(program, backend, max_tokens, 0, out, err);
}

int engine_open_above(const plan_t *program, const char *backend, int64_t max_tokens,
                      int64_t eager_tokens, struct engine **out, struct engine_error *err)
{
	struct engine *e;
	const struct plan_layout *layout = plan_get_layout(program);
	char room[96] = "";

	*out = NULL;
	if ((e = calloc(1, sizeof *e)) == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	e->plan = program;
	e->comm = dist_self();      /* a rank's engine: its communicator */
	e->nops = plan_count_ops(program);
	e->max_tokens = max_tokens;
	e->eager_tokens = eager_tokens > max_tokens ? eager_tokens : max_tokens;
	e->arena_bytes = layout->arena_bytes;
	uint32_t nv = plan_count_vars(program);
	if (nv != 0) {
		if ((e->vars = calloc(nv, sizeof *e->vars)) == NULL) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
			goto fail;
		}
		for (uint32_t i = 0; i < nv; i++)
			e->vars[i] = *plan_get_var(program, i);
	}
	if (engine_place_above(e, err) != 0)
		goto fail;
	if (e->above_bytes != 0) {
		char h[32];
		snprintf(room, sizeof room, " (with %s of room for eager steps of up to %lld tokens)",
		         bcg_human_bytes(e->above_bytes, h, sizeof h), (long long)e->eager_tokens);
	}
	if (engine_test_fault(&e->fault, err) != 0)
		goto fail;
	if (engine_sync_mode() < 0) {
		engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "BCG_SYNC: '%s' is not 1 (on) or 0 (off)",
		            getenv("BCG_SYNC"));
		goto fail;
	}
	/* The kernels' shapes, read again by the CUDA backend: checked here on
	 * every backend, so that a bad one is a usage error, never a device's. */
	{
		struct kernel_shape gemv, moe_gu;
		char why[256];
		if (kernel_shapes_from_env(&gemv, &moe_gu, why, sizeof why) != 0) {
			engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s", why);
			goto fail;
		}
	}
	e->be = backend_find(strcmp(backend, "auto") == 0 ? "cuda" : backend);
	if (e->be == NULL && strcmp(backend, "auto") == 0) {
		e->be = backend_find("host");
		snprintf(e->note, sizeof e->note,
		         "this bcgtool was built without CUDA: using the host backend");
	}
	if (e->be == NULL) {
		engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE,
		            "backend '%s' is not in this build (try host%s)", backend,
		            backend_find("cuda") ? " or cuda" : "");
		goto fail;
	}
	if (engine_resolve(e, err) != 0 || engine_size_scratch(e, err) != 0 ||
	    engine_batch_open(e, err) != 0)
		goto fail;
	e->staging_bytes = engine_staging_size(e);
	if ((e->staging = malloc(e->staging_bytes)) == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto fail;
	}
	if (e->be->open(&e->b, &e->info, err->msg, sizeof err->msg) != 0) {
		if (strcmp(backend, "auto") == 0 && e->be->kind == PLAN_BACKEND_CUDA) {
			/* No usable GPU: the host backend computes the same. */
			if (e->info.no_gpu)
				snprintf(e->note, sizeof e->note, "no GPU found; using the host backend");
			else
				snprintf(e->note, sizeof e->note,
				         "no usable GPU (%.200s): using the host backend", err->msg);
			e->b = NULL;
			e->be = backend_find("host");
			if (engine_size_scratch(e, err) != 0)
				goto fail;
		}
		if (e->b == NULL && e->be->open(&e->b, &e->info, err->msg, sizeof err->msg) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s backend: %s",
			            e->be->name, err->msg);
			goto fail;
		}
	}
	/* Said now, not after the work: an interrupted run still shows it. */
	if (e->note[0] != '\0') {
		bcg_note("%s", e->note);
		e->note[0] = '\0';
	}
	if (e->fault.kind == ENGINE_FAULT_OOM &&
	    e->arena_bytes + e->above_bytes + e->scratch_bytes > e->fault.limit) {
		char want[32], have[32];
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE,
		            "cannot allocate the %s arena%s on the %s backend (%s free; BCG_TEST_FAULT)",
		            bcg_human_bytes(e->arena_bytes + e->above_bytes + e->scratch_bytes, want,
		                            sizeof want), room,
		            e->be->name, bcg_human_bytes(e->fault.limit, have, sizeof have));
		goto fail;
	}
	if (e->be->alloc(e->b, e->arena_bytes + e->above_bytes, e->scratch_bytes, &e->base,
	                 err->msg, sizeof err->msg) != 0) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s%s", err->msg, room);
		goto fail;
	}
	if (engine_place_collectives(e, err) != 0)
		goto fail;
	e->sync_in_capture = getenv("BCG_TEST_SYNC_IN_CAPTURE");
	e->sync_each = engine_sync_mode() == 1;
	/* Choices and features belong to the backend that captured them. */
	e->use_choices = plan_get_meta(program)->backend == e->be->kind;
	engine_set_features(e, e->use_choices ? plan_get_meta(program)->features : 0);
	if (engine_init_tensors(e, 1, err) != 0 || engine_load_weights(e, err) != 0)
		goto fail;
	*out = e;
	return 0;
fail:
	engine_close(e);
	return -1;
}

uint64_t engine_prepared_bytes(const struct engine *e)
{
	return e->be->prepared_bytes != NULL ? e->be->prepared_bytes(e->b) : 0;
}

int engine_open_at(plan_t *program, const char *backend, int64_t tokens, int64_t eager_tokens,
                   struct engine **out, struct engine_error *err)
{
	struct memplan mp;

	*out = NULL;
	if (memplan_place(program, &tokens, 1, &mp, err->msg, sizeof err->msg) != 0)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s", err->msg);
	memplan_release(&mp);
	return engine_open_above(program, backend, tokens, eager_tokens, out, err);
}

void engine_close(struct engine *e)
{
	if (e == NULL)
		return;
	if (e->coll_base != NULL)
		e->comm->ops->sym_free(e->comm, e->coll_base);
	free(e->coll_offset);
	if (e->b != NULL) {
		if (e->base != NULL)
			e->be->free(e->b, e->base);
		e->be->close(e->b);
	}
	free(e->staging);
	free(e->above_offset);
	free(e->weight_hash);
	free(e->batch_buf);
	free(e->binds);
	free(e->kinds);
	free(e->ready_in);
	free(e->vars);
	free(e);
}

const struct plan_var *engine_var(const struct engine *e, uint32_t i)
{
	return &e->vars[i];
}

int engine_check_vars(const plan_t *plan, const char *what, const struct engine_var_range *r,
                      uint32_t n, char *msg, size_t len)
{
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = plan_find_var(plan, r[k].name);
		const struct plan_var *pv;
		if (i == PLAN_NONE) {
			snprintf(msg, len, "the %s has no var '%s'", what, r[k].name);
			return -1;
		}
		pv = plan_get_var(plan, i);
		if (r[k].start > r[k].limit || r[k].start < pv->start || r[k].limit > pv->limit) {
			snprintf(msg, len, "var '%s' from %lld to %lld: the %s's values run from "
			         "%lld to %lld, and the range must lie within them", r[k].name,
			         (long long)r[k].start, (long long)r[k].limit, what,
			         (long long)pv->start, (long long)pv->limit);
			return -1;
		}
	}
	return 0;
}

int engine_set_vars(struct engine *e, const struct engine_var_range *r, uint32_t n,
                    struct engine_error *err)
{
	if (engine_check_vars(e->plan, "plan", r, n, err->msg, sizeof err->msg) != 0)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s", err->msg);
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = plan_find_var(e->plan, r[k].name);
		e->vars[i].start = r[k].start;
		e->vars[i].limit = r[k].limit;
		e->vars[i].step = r[k].step > 0 ? r[k].step : plan_get_var(e->plan, i)->step;
	}
	return 0;
}

void engine_reset_vars(struct engine *e)
{
	for (uint32_t i = 0; i < plan_count_vars(e->plan); i++)
		e->vars[i] = *plan_get_var(e->plan, i);
}

void engine_set_features(struct engine *e, uint32_t features)
{
	e->features = e->be->set_features(e->b, features);
}

int engine_reset(struct engine *e, struct engine_error *err)
{
	return engine_init_tensors(e, 0, err);
}

/* ---------------------------------------------------------------------- */
/* Steps.                                                                  */

/* Compute a feed's values for STEP at TOKENS tokens into e->staging. */
static size_t engine_feed_values(struct engine *e, uint32_t t, int64_t tokens, uint64_t step)
{
	const struct plan_tensor *pt = plan_get_tensor(e->plan, t);
	uint64_t n = plan_tensor_numel(e->plan, t, tokens);
	const struct plan_feed *f = &pt->feed;
	int32_t *i32 = (int32_t *)e->staging;

	switch (f->kind) {
	case PLAN_FEED_POSITIONS: {
		int64_t last = e->gen != NULL ? e->gen->consumed + tokens
			: f->var != PLAN_NONE
			? plan_var_value(engine_var(e, f->var), step)
			: (int64_t)(step + 1) * tokens;
		/* positions of the newest tokens: last - T + i, along the first axis;
		 * a wider tensor repeats the pattern */
		for (uint64_t i = 0; i < n; i++)
			i32[i] = (int32_t)(last - tokens + (int64_t)(i % (uint64_t)tokens));
		break;
	}
	case PLAN_FEED_PROMPT:
		if (e->gen != NULL) {
			/* the generation's tokens, padded with id 0 */
			for (uint64_t i = 0; i < n; i++)
				i32[i] = (int64_t)i < e->gen->real ? e->gen->ids[i] : 0;
			break;
		}
		/* outside a generation, ids as the tokens feed makes them */
		/* fall through */
	case PLAN_FEED_TOKENS:
		for (uint64_t i = 0; i < n; i++)
			i32[i] = (int32_t)(bcg_mix64(f->seed, bcg_feed_counter(step, i)) %
			                   (uint64_t)(f->range > 0 ? f->range : 1));
		break;
	case PLAN_FEED_RANDOM:
		for (uint64_t i = 0; i < n; i++) {
			float v = bcg_uniform(f->seed, bcg_feed_counter(step, i)) * (float)f->scale;
			switch (pt->dtype) {
			case PLAN_DTYPE_F16:
				((uint16_t *)e->staging)[i] = bcg_f32_to_f16(v);
				break;
			case PLAN_DTYPE_BF16:
				((uint16_t *)e->staging)[i] = bcg_f32_to_bf16(v);
				break;
			case PLAN_DTYPE_I32:
				i32[i] = (int32_t)v;
				break;
			default:
				((float *)e->staging)[i] = v;
				break;
			}
		}
		break;
	default:
		return 0;
	}
	return (size_t)plan_tensor_bytes(e->plan, t, tokens);
}

/* A var's value at STEP; in a generation, the tokens seen so far, this
 * step's (padded) ones included. */
static int64_t engine_var_value(const struct engine *e, const struct engine_variant *v,
                                const struct plan_var *pv, uint64_t step)
{
	if (e->gen != NULL)
		return e->gen->consumed + v->tokens;
	return plan_var_value(pv, step);
}

/* The step's feeds and vars to the backend, one queued operation where
 * the backend batches them (feeds_begin). */
static int engine_step_feeds(struct engine *e, struct engine_variant *v, uint64_t step,
                             struct engine_error *err)
{
	uint32_t nv = plan_count_vars(e->plan);

	for (uint32_t t = 0; t < plan_count_tensors(e->plan); t++) {
		const struct plan_tensor *pt = plan_get_tensor(e->plan, t);
		size_t bytes;
		if (pt->feed.kind == PLAN_FEED_NONE || engine_batch_feed(pt->feed.kind))
			continue;
		bytes = engine_feed_values(e, t, v->tokens, step);
		if (e->be->write(e->b, engine_tensor_at(e, t, v->tokens), e->staging, bytes,
		                 err->msg, sizeof err->msg) != 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "feeding '%s': %s",
			                   pt->name, err->msg);
	}
	for (uint32_t i = 0; i < nv; i++) {
		const struct plan_var *pv = plan_get_var(e->plan, i);
		int32_t value = (int32_t)engine_var_value(e, v, engine_var(e, i), step);
		if (e->be->write(e->b, backend_at(e->base, pv->offset), &value, sizeof value,
		                 err->msg, sizeof err->msg) != 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "writing var '%s': %s",
			                   pv->name, err->msg);
	}
	return 0;
}

int engine_step_begin(struct engine *e, struct engine_variant *v, uint64_t step,
                      struct engine_error *err)
{
	return engine_step_begin_before(e, v, step, NULL, err);
}

int engine_step_begin_before(struct engine *e, struct engine_variant *v, uint64_t step,
                             struct backend_graph *next, struct engine_error *err)
{
	int rc;

	if (e->be->feeds_begin == NULL) {
		rc = engine_step_feeds(e, v, step, err);
	} else {
		char msg[sizeof err->msg];
		e->be->feeds_begin(e->b);
		rc = engine_step_feeds(e, v, step, err);
		/* after a failed write too; its message is the one kept */
		if (e->be->feeds_end(e->b, rc == 0 ? next : NULL, msg, sizeof msg) != 0 && rc == 0)
			rc = engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "feeding the step: %s", msg);
	}
	if (rc != 0)
		return rc;
	for (uint32_t i = 0; i < e->nbinds; i++) {
		const struct engine_bind *bd = &e->binds[i];
		v->calls[bd->op].attr[bd->pos].i =
			engine_var_value(e, v, engine_var(e, bd->var), step);
	}
	return engine_batch_step(e, v->tokens, step, err);
}

/* The test hook's fault in place of op OP's launch, where it applies. */
static int engine_launch_fault(struct engine *e, uint32_t op, int *faulted,
                               struct engine_error *err)
{
	char name[128];

	*faulted = 0;
	if (e->fault.kind == ENGINE_FAULT_KERNEL ? !e->capturing :
	    e->fault.kind == ENGINE_FAULT_BREAK ? !e->in_break :
	    e->fault.kind == ENGINE_FAULT_EAGER ? e->capturing || e->in_break : 1)
		return 0;
	plan_op_label(e->plan, op, name, sizeof name);
	if (strcmp(name, e->fault.op) != 0)
		return 0;
	*faulted = 1;
	if (e->be->fault == NULL)
		snprintf(err->msg, sizeof err->msg, "the %s backend cannot stage a fault", e->be->name);
	else if (e->be->fault(e->b, e->in_break, err->msg, sizeof err->msg) == 0)
		return 0;
	return -1;
}

int engine_launch(struct engine *e, struct engine_variant *v, uint32_t op,
                  struct engine_error *err)
{
	int faulted = 0;

	if (e->fault.kind != ENGINE_FAULT_NONE && e->fault.kind != ENGINE_FAULT_OOM &&
	    engine_launch_fault(e, op, &faulted, err) != 0) {
		char label[128];
		engine_op_label(e->plan, op, label, sizeof label);
		return engine_fail(err, BCG_EXIT_RUNTIME, op, "op %s: %s", label, err->msg);
	}
	if (!faulted && e->be->launch(e->b, &v->calls[op], err->msg, sizeof err->msg) != 0) {
		char label[128];
		engine_op_label(e->plan, op, label, sizeof label);
		return engine_fail(err, BCG_EXIT_RUNTIME, op, "op %s: %s", label, err->msg);
	}
	/* BCG_SYNC: a fault of this launch is reported as this op's. */
	if (e->sync_each && !e->capturing &&
	    e->be->sync(e->b, err->msg, sizeof err->msg) != 0) {
		char label[128];
		engine_op_label(e->plan, op, label, sizeof label);
		return engine_fail(err, BCG_EXIT_RUNTIME, op,
		                   "op %s, waited for after its launch (BCG_SYNC=1): %s", label,
		                   err->msg);
	}
	return 0;
}

int engine_eager_step(struct engine *e, struct engine_variant *v, uint64_t step,
                      struct engine_error *err)
{
	if (engine_step_begin(e, v, step, err) != 0)
		return -1;
	for (uint32_t i = 0; i < e->nops; i++) {
		int safe = v->calls[i].graph_safe;
		v->calls[i].graph_safe = 0;   /* eager: the host-shaped form */
		int rc = engine_launch(e, v, i, err);
		v->calls[i].graph_safe = safe;
		if (rc != 0)
			return -1;
	}
	return 0;
}

int engine_launch_step(struct engine *e, struct engine_variant *v, uint64_t step,
                       struct engine_error *err)
{
	if (engine_step_begin(e, v, step, err) != 0)
		return -1;
	for (uint32_t i = 0; i < e->nops; i++)
		if (engine_launch(e, v, i, err) != 0)
			return -1;
	return 0;
}

int engine_read_tensor(struct engine *e, uint32_t t, int64_t tokens, void *dst,
                       struct engine_error *err)
{
	const struct plan_tensor *pt = plan_get_tensor(e->plan, t);
	uint64_t bytes = plan_tensor_bytes(e->plan, t, tokens);

	if (e->be->read(e->b, dst, engine_tensor_at(e, t, tokens), (size_t)bytes,
	                err->msg, sizeof err->msg) != 0)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "reading '%s': %s",
		                   pt->name, err->msg);
	return 0;
}
