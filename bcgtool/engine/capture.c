/*
 * capture.c - the capture loop: reference, breakable capture, verification.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "dist/comm.h"
#include "cmd.h"
#include "exec.h"
#include "memplan.h"
#include "serve/dispatch.h"
#include "stash.h"
#include "util.h"
#include "verify.h"

/* The tensors a step's result lies in: outputs after every step, read to
 * the host (the checksums are taken from them); state after the last,
 * which can be large (a KV cache), kept where the backend has room for it
 * and compared there (stash.h). */
struct capture_snapshot {
	uint32_t      nout;
	uint32_t     *out;          /* tensor indexes of the outputs */
	void        **out_data;     /* [step * nout + k] */
	uint32_t      nstate;
	uint32_t     *state;
	struct stash  state_data;
};

static void snapshot_release(struct engine *e, struct capture_snapshot *s, uint32_t steps)
{
	if (s->out_data != NULL)
		for (uint32_t i = 0; i < steps * s->nout; i++)
			free(s->out_data[i]);
	stash_release(e, &s->state_data);
	free(s->out);
	free(s->out_data);
	free(s->state);
	memset(s, 0, sizeof *s);
}

static int snapshot_init(struct engine *e, uint32_t steps, struct capture_snapshot *s,
                         struct engine_error *err)
{
	const plan_t *plan = e->plan;
	uint32_t nt = plan_count_tensors(plan);

	memset(s, 0, sizeof *s);
	s->out = calloc(nt ? nt : 1, sizeof *s->out);
	s->state = calloc(nt ? nt : 1, sizeof *s->state);
	if (s->out == NULL || s->state == NULL)
		goto nomem;
	for (uint32_t t = 0; t < nt; t++) {
		int role = plan_get_tensor(plan, t)->role;
		if (role == PLAN_ROLE_OUTPUT)
			s->out[s->nout++] = t;
		else if (role == PLAN_ROLE_STATE)
			s->state[s->nstate++] = t;
	}
	s->out_data = calloc((size_t)steps * s->nout + 1, sizeof *s->out_data);
	if (s->out_data == NULL)
		goto nomem;
	return 0;
nomem:
	snapshot_release(e, s, steps);
	return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
}

static void *read_copy(struct engine *e, uint32_t t, int64_t tokens, struct engine_error *err)
{
	uint64_t bytes = plan_tensor_bytes(e->plan, t, tokens);
	void *buf = malloc(bytes ? (size_t)bytes : 1);

	if (buf == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory reading '%s'",
		            plan_get_tensor(e->plan, t)->name);
		return NULL;
	}
	if (engine_read_tensor(e, t, tokens, buf, err) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Read the outputs after STEP (and the state when LAST) into S. */
static int snapshot_take(struct engine *e, int64_t tokens, uint32_t step, int last,
                         struct capture_snapshot *s, struct engine_error *err)
{
	for (uint32_t k = 0; k < s->nout; k++)
		if ((s->out_data[step * s->nout + k] = read_copy(e, s->out[k], tokens, err)) == NULL)
			return -1;
	if (last)
		return stash_take(e, s->state, s->nstate, tokens, &s->state_data, err);
	return 0;
}

/* Judge R, the comparison of tensor T of a replay with the reference; fail
 * the capture on a mismatch beyond what the mode allows. */
static int judge_tensor(struct engine *e, uint32_t t, int64_t tokens,
                        const struct verify_result *r, int tolerant, const char *when,
                        struct capture_variant_report *vr, struct engine_error *err)
{
	const struct plan_tensor *pt = plan_get_tensor(e->plan, t);

	if (!r->exact)
		vr->exact = 0;
	if (r->rel_error > vr->rel_error || r->rel_error != r->rel_error)
		vr->rel_error = r->rel_error;
	if (!r->pass)
		return engine_fail(err, BCG_EXIT_NEGATIVE, PLAN_NONE,
		                   "verification failed at %lld tokens (%s mode): '%s' %s differs "
		                   "from the eager reference in %llu of %llu elements "
		                   "(relative error %.3g%s)",
		                   (long long)tokens, plan_mode_name(vr->mode), pt->name,
		                   when, (unsigned long long)r->mismatches,
		                   (unsigned long long)r->count, r->rel_error,
		                   tolerant ? "" : "; this mode must match bit for bit");
	return 0;
}

static int capture_reference(struct engine *e, int64_t tokens, int mode, uint32_t steps,
                             struct capture_snapshot *ref, struct engine_error *err)
{
	struct engine_variant v;
	int rc = -1;

	if (engine_variant_init(e, tokens, mode, &v, err) != 0)
		return -1;
	if (engine_reset(e, err) != 0)
		goto out;
	for (uint32_t s = 0; s < steps; s++)
		if (engine_interrupted(err) != 0 || engine_eager_step(e, &v, s, err) != 0 ||
		    snapshot_take(e, tokens, s, s + 1 == steps, ref, err) != 0)
			goto out;
	rc = 0;
out:
	engine_variant_release(&v);
	return rc;
}

static int capture_verify(struct engine *e, struct exec_variant *x, uint32_t steps,
                          const struct capture_snapshot *ref,
                          struct capture_variant_report *vr, struct engine_error *err)
{
	int64_t tokens = x->ev.tokens;
	int tolerant = x->ev.mode == PLAN_MODE_FULL;
	struct verify_result r;
	char when[64];

	vr->exact = 1;
	vr->rel_error = 0.0;
	if (engine_reset(e, err) != 0)
		return -1;
	for (uint32_t s = 0; s < steps; s++) {
		if (engine_interrupted(err) != 0 || exec_step(e, x, s, NULL, err) != 0)
			return -1;
		for (uint32_t k = 0; k < ref->nout; k++) {
			uint32_t t = ref->out[k];
			void *got = read_copy(e, t, tokens, err);
			if (got == NULL)
				return -1;
			verify_compare(plan_get_tensor(e->plan, t)->dtype, got,
			               ref->out_data[s * ref->nout + k],
			               plan_tensor_numel(e->plan, t, tokens), tolerant, &r);
			free(got);
			snprintf(when, sizeof when, "after step %u", s);
			if (judge_tensor(e, t, tokens, &r, tolerant, when, vr, err) != 0)
				return -1;
		}
	}
	for (uint32_t k = 0; k < ref->nstate; k++) {
		snprintf(when, sizeof when, "(state) after step %u", steps - 1);
		if (stash_compare(e, &ref->state_data, k, 1, tolerant, &r, err) != 0 ||
		    judge_tensor(e, ref->state[k], tokens, &r, tolerant, when, vr, err) != 0)
			return -1;
	}
	return 0;
}

/* What one variant's capture produced, kept until every variant verified
 * and the plan is written in variant order. */
struct captured {
	struct schedule         sched;    /* items, with breakpoint reasons */
	struct backend_capture *recs;     /* per item: nodes, timings */
	uint32_t                nout;
	struct plan_check      *checks;   /* the reference checksums */
};

static void captured_release(struct captured *c)
{
	if (c->recs != NULL)
		for (uint32_t i = 0; i < c->sched.nitems; i++)
			backend_capture_release(&c->recs[i]);
	free(c->recs);
	free(c->checks);
	schedule_release(&c->sched);
	memset(c, 0, sizeof *c);
}

/* Record variant VI's items, nodes, breakpoints and checksums in PLAN. */
static int capture_record(plan_t *plan, uint32_t vi, const struct captured *c, int with_nodes,
                          int untimed, struct capture_variant_report *vr,
                          struct engine_error *err)
{
	const struct schedule *sched = &c->sched;
	struct backend_capture *recs = c->recs;
	struct plan_diag diag = { 0 };

	for (uint32_t i = 0; i < sched->nitems; i++) {
		const struct sched_item *it = &sched->items[i];
		const struct plan_op *op = plan_get_op(plan, it->op_first);

		if (it->kind == PLAN_ITEM_SEGMENT) {
			struct plan_segment seg = {
				.variant = vi,
				.op_first = it->op_first,
				.op_count = it->op_count,
				.flags = with_nodes ? PLAN_SEG_NODES : 0,
				.capture_ns = recs[i].capture_ns,
				.instantiate_ns = recs[i].instantiate_ns + recs[i].upload_ns,
				.nnodes = recs[i].nnodes,
				.nodes = recs[i].nodes,
				.nedges = recs[i].nedges,
				.edges = recs[i].edges,
			};
			seg.fingerprint = with_nodes ? plan_fingerprint(&seg) : 0;
			vr->segments++;
			vr->nodes += seg.nnodes;
			vr->capture_ns += seg.capture_ns;
			vr->instantiate_ns += seg.instantiate_ns;
			if (untimed)
				seg.capture_ns = seg.instantiate_ns = 0;
			if (plan_add_segment(plan, &seg, NULL, &diag) != 0)
				goto fail;
		} else {
			char name[128];
			struct plan_breakpoint bp = {
				.variant = vi,
				.op = it->op_first,
				.name = name,
				.reason = it->reason,
				.detail = it->detail,
				.nreads = op->nin,
				.reads = op->in,
				.nwrites = op->nout,
				.writes = op->out,
			};
			plan_op_label(plan, it->op_first, name, sizeof name);
			if (plan_add_breakpoint(plan, &bp, NULL, &diag) != 0)
				goto fail;
			vr->breakpoints++;
		}
	}
	for (uint32_t k = 0; k < c->nout; k++) {
		struct plan_check check = c->checks[k];
		check.variant = vi;
		if (plan_add_check(plan, &check, NULL, &diag) != 0)
			goto fail;
	}
	return 0;
fail:
	return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "recording the plan: %s", diag.message);
}

/* The reference's checksums after its last step. */
static int capture_checksums(const plan_t *plan, int64_t tokens, uint32_t steps,
                             const struct capture_snapshot *ref, struct captured *c,
                             struct engine_error *err)
{
	c->checks = calloc(ref->nout + 1, sizeof *c->checks);
	if (c->checks == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (uint32_t k = 0; k < ref->nout; k++) {
		uint32_t t = ref->out[k];
		const void *data = ref->out_data[(steps - 1) * ref->nout + k];
		c->checks[k].tensor = t;
		c->checks[k].steps = steps;
		c->checks[k].hash = plan_hash64(data, (size_t)plan_tensor_bytes(plan, t, tokens),
		                                PLAN_HASH64_INIT);
		c->checks[k].sum = verify_sum(plan_get_tensor(plan, t)->dtype, data,
		                              plan_tensor_numel(plan, t, tokens));
	}
	c->nout = ref->nout;
	return 0;
}

/* One variant: choices, reference, capture, verify; the result kept in C. */
static int capture_variant(struct engine *e, plan_t *plan, uint32_t vi,
                           const struct capture_opts *o, struct tune_cache *tc,
                           struct captured *c, struct capture_variant_report *vr,
                           struct plan_stats *st, struct engine_error *err)
{
	uint32_t steps = o->steps;
	const struct plan_variant *pv = plan_get_variant(plan, vi);
	struct capture_snapshot ref;
	struct exec_variant x = { 0 };
	uint32_t bad_op = PLAN_NONE;
	uint64_t t0;
	int rc = -1;

	memset(c, 0, sizeof *c);
	vr->tokens = pv->tokens;
	vr->mode = pv->mode;
	if (schedule_build(plan, pv->mode, &c->sched, &bad_op, err->msg, sizeof err->msg) != 0)
		return engine_fail(err, BCG_EXIT_USAGE, bad_op, "%lld tokens: %s",
		                   (long long)pv->tokens, err->msg);
	if (snapshot_init(e, steps, &ref, err) != 0)
		return -1;
	c->recs = calloc(c->sched.nitems ? c->sched.nitems : 1, sizeof *c->recs);
	if (c->recs == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}

	bcg_progress("capture: variant %u of %u (%lld tokens): tune", o->progress_at,
	             o->progress_of, (long long)pv->tokens);
	nvtx_push(e->nvtx, NVTX_KIND_PHASE, "tune");
	{
		struct tune_opts to = o->tune;
		to.untimed = o->untimed;
		/* The host's timings are noise at the scale of its choices: a
		 * reproducible capture there (SOURCE_DATE_EPOCH) measures none
		 * and keeps the defaults, so that two give the same bytes. */
		if (o->untimed && e->be->kind != PLAN_BACKEND_CUDA)
			to.measure = 0;
		/* Several ranks keep the defaults: each would measure its own
		 * noise and choose differently, and the ranks of one plan run
		 * the same kernels. Collectives have one implementation and are
		 * never timed. */
		if (e->comm != NULL && e->comm->world > 1)
			to.measure = 0;
		rc = tune_variant(e, plan, vi, &to, tc, &vr->choices, err);
	}
	nvtx_pop(e->nvtx);
	if (rc != 0)
		goto out;

	if ((rc = engine_interrupted(err)) != 0)
		goto out;
	bcg_progress("capture: variant %u of %u (%lld tokens): reference", o->progress_at,
	             o->progress_of, (long long)pv->tokens);
	t0 = bcg_now_ns();
	nvtx_push(e->nvtx, NVTX_KIND_PHASE, "reference");
	rc = capture_reference(e, pv->tokens, pv->mode, steps, &ref, err);
	nvtx_pop(e->nvtx);
	st->reference_ns += bcg_now_ns() - t0;
	if (rc != 0)
		goto out;

	if ((rc = engine_interrupted(err)) != 0)
		goto out;
	bcg_progress("capture: variant %u of %u (%lld tokens): capture", o->progress_at,
	             o->progress_of, (long long)pv->tokens);
	rc = exec_capture(e, pv->tokens, pv->mode, c->sched.items, c->sched.nitems, 0, &x,
	                  c->recs, err);
	if (rc != 0)
		goto out;
	for (uint32_t i = 0; i < c->sched.nitems; i++) {
		st->capture_ns += c->recs[i].capture_ns;
		st->instantiate_ns += c->recs[i].instantiate_ns + c->recs[i].upload_ns;
	}

	if ((rc = engine_interrupted(err)) != 0)
		goto out;
	bcg_progress("capture: variant %u of %u (%lld tokens): verify", o->progress_at,
	             o->progress_of, (long long)pv->tokens);
	t0 = bcg_now_ns();
	nvtx_push(e->nvtx, NVTX_KIND_PHASE, "verify");
	rc = capture_verify(e, &x, steps, &ref, vr, err);
	nvtx_pop(e->nvtx);
	st->verify_ns += bcg_now_ns() - t0;
	if (rc != 0)
		goto out;
	if (!vr->exact)
		st->verify_exact = 0;
	if (vr->rel_error > st->verify_max_error)
		st->verify_max_error = vr->rel_error;
	rc = capture_checksums(plan, pv->tokens, steps, &ref, c, err);
	vr->done = rc == 0;
out:
	exec_release(e, &x);
	snapshot_release(e, &ref, steps);
	return rc;
}

/* The key of capture size SV (the script's `sizes`): its requests, at
 * most the request dim (a batch never has more), and whether it is for
 * uniform decode. A size of `tokens` has no key. */
static void capture_key(const plan_t *plan, const struct script_variant *sv,
                        struct plan_variant *pv)
{
	int64_t rdim = plan_request_dim(plan);
	int64_t req = sv->uniform ? sv->tokens : sv->requests;

	if (rdim > 0 && req > rdim && !sv->uniform)
		req = rdim;
	pv->requests = (uint32_t)req;
	pv->key_flags = sv->uniform ? PLAN_KEY_UNIFORM : 0;
}

static int by_tokens(const void *a, const void *b)
{
	const struct script_variant *x = a, *y = b;
	return (x->tokens > y->tokens) - (x->tokens < y->tokens);
}

/* The variants to capture, ascending by tokens. */
static int capture_select(const struct script *script, const struct capture_opts *o,
                          struct script_variant **sel, uint32_t *n, struct engine_error *err)
{
	struct script_variant *v = calloc(script->nvariants + 1, sizeof *v);
	uint32_t k = 0;

	if (v == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (uint32_t i = 0; i < script->nvariants; i++) {
		int want = o->tokens == NULL;
		for (uint32_t j = 0; j < o->ntokens; j++)
			if (o->tokens[j] == script->variants[i].tokens)
				want = 1;
		if (!want)
			continue;
		v[k] = script->variants[i];
		if (o->mode != 0)
			v[k].mode = o->mode;
		k++;
	}
	for (uint32_t j = 0; j < o->ntokens; j++) {
		int found = 0;
		for (uint32_t i = 0; i < script->nvariants; i++)
			found |= script->variants[i].tokens == o->tokens[j];
		if (!found) {
			char sizes[256];
			size_t at = 0;
			sizes[0] = '\0';
			for (uint32_t i = 0; i < script->nvariants && at < sizeof sizes; i++) {
				int w = snprintf(sizes + at, sizeof sizes - at, "%s%lld", i ? ", " : "",
				                 (long long)script->variants[i].tokens);
				at = w > 0 ? at + (size_t)w : sizeof sizes;
			}
			free(v);
			return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE,
			                   "%lld is not a capture size of the script's token dim "
			                   "(its sizes: %s)", (long long)o->tokens[j], sizes);
		}
	}
	if (k == 0) {
		free(v);
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "no capture sizes to capture");
	}
	qsort(v, k, sizeof *v, by_tokens);
	*sel = v;
	*n = k;
	return 0;
}

/* A plan with capture-size keys: the table a server's dispatcher
 * follows, full for uniform decode where a full variant holds the batch,
 * breakable otherwise (serve/dispatch.h). */
static int capture_dispatch_keyed(plan_t *plan, struct engine_error *err)
{
	uint32_t n = plan_count_variants(plan), nt = 0;
	struct serve_size *sizes = calloc(n ? n : 1, sizeof *sizes);
	struct serve_dispatch d = { 0 };
	struct plan_dispatch *t = NULL;
	struct plan_diag diag = { 0 };
	int rc = -1;

	if (sizes == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		const struct plan_variant *v = plan_get_variant(plan, i);
		sizes[i] = (struct serve_size){ { (uint32_t)v->tokens, v->requests,
		                                  (v->key_flags & PLAN_KEY_UNIFORM) != 0 },
		                                v->mode, i };
	}
	if (serve_dispatch_init(&d, sizes, n, SERVE_POLICY_FULL_AND_BREAKABLE) != 0 ||
	    serve_dispatch_table(&d, &t, &nt) != 0) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < nt; i++)
		if (plan_add_dispatch(plan, &t[i], NULL, &diag) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "dispatch table: %s", diag.message);
			goto out;
		}
	rc = 0;
out:
	serve_dispatch_release(&d);
	free(sizes);
	free(t);
	return rc;
}

static int capture_dispatch(plan_t *plan, struct engine_error *err)
{
	struct plan_diag diag = { 0 };
	uint32_t n = plan_count_variants(plan);
	int64_t lo = 1;

	if (plan_has_keys(plan))
		return capture_dispatch_keyed(plan, err);

	/* Variants were added ascending: each takes the counts above the
	 * previous one's, padding up to its own. */
	for (uint32_t i = 0; i < n; i++) {
		const struct plan_variant *v = plan_get_variant(plan, i);
		struct plan_dispatch d = { .tokens_min = lo, .tokens_max = v->tokens, .variant = i };
		if (plan_add_dispatch(plan, &d, NULL, &diag) != 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "dispatch table: %s",
			                   diag.message);
		lo = v->tokens + 1;
	}
	return 0;
}

void capture_report_release(struct capture_report *rep)
{
	free(rep->variants);
	memset(rep, 0, sizeof *rep);
}

int capture_script(struct script *script, const struct capture_opts *o, plan_t **out,
                   struct capture_report *rep, struct engine_error *err)
{
	plan_t *plan = script->program;
	struct script_variant *sel = NULL;
	struct engine *e = NULL;
	struct memplan mp = { 0 };
	struct plan_stats st = { .verify_exact = 1 };
	struct plan_diag diag = { 0 };
	struct captured *caps = NULL;
	struct tune_cache tc = { 0 };
	int64_t *tokens = NULL;
	uint32_t n = 0;
	uint64_t t0;
	int rc = -1;

	*out = NULL;
	memset(rep, 0, sizeof *rep);
	if (capture_select(script, o, &sel, &n, err) != 0)
		return -1;
	tokens = calloc(n, sizeof *tokens);
	rep->variants = calloc(n, sizeof *rep->variants);
	if (tokens == NULL || rep->variants == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	rep->nvariants = n;
	for (uint32_t i = 0; i < n; i++)
		tokens[i] = sel[i].tokens;
	if (memplan_place(plan, tokens, n, &mp, err->msg, sizeof err->msg) != 0) {
		engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s", err->msg);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct plan_variant pv = { .tokens = sel[i].tokens, .mode = sel[i].mode };
		uint32_t vi;
		capture_key(plan, &sel[i], &pv);
		if (plan_add_variant(plan, &pv, &vi, &diag) != 0 ||
		    plan_set_variant_peak(plan, vi, mp.peak_bytes[i], &diag) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s", diag.message);
			goto out;
		}
	}

	t0 = bcg_now_ns();
	bcg_progress("capture: the arena and its tensors");
	if (engine_open(plan, o->backend, tokens[n - 1], &e, err) != 0)
		goto out;
	st.materialize_ns = bcg_now_ns() - t0;
	e->comm = o->comm;
	/* The content the weights had when captured: instantiate and replay
	 * compare what they read with it. */
	for (uint32_t i = 0; i < plan_count_weight_sources(plan); i++)
		if (plan_set_weight_hash(plan, i, e->weight_hash[i], &diag) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s", diag.message);
			goto out;
		}
	rep->info = e->info;
	snprintf(rep->backend, sizeof rep->backend, "%s", e->be->name);
	snprintf(rep->note, sizeof rep->note, "%s", e->note);
	if (o->nvtx)
		e->nvtx = nvtx_open();
	/* The plan being made: its choices, as they are recorded, are what
	 * every run below uses. */
	e->use_choices = 1;
	engine_set_features(e, o->features);

	/* Largest first: it needs the most of everything, so a failure to
	 * fit shows at once. The plan gets them in variant order. */
	if ((caps = calloc(n, sizeof *caps)) == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	for (uint32_t k = n; k-- > 0;) {
		struct capture_opts vo = *o;
		vo.progress_at = n - k;
		vo.progress_of = n;
		if (engine_interrupted(err) != 0 ||
		    capture_variant(e, plan, k, &vo, &tc, &caps[k], &rep->variants[k], &st, err) != 0)
			goto out;
	}
	bcg_progress_clear();
	for (uint32_t k = 0; k < n; k++)
		if (capture_record(plan, k, &caps[k], e->be->kind == PLAN_BACKEND_CUDA, o->untimed,
		                   &rep->variants[k], err) != 0)
			goto out;
	st.reference_steps = o->steps;
	if (o->untimed)
		st.materialize_ns = st.reference_ns = st.capture_ns = st.instantiate_ns =
			st.verify_ns = 0;

	if (capture_dispatch(plan, err) != 0)
		goto out;
	{
		const struct plan_meta *old = plan_get_meta(plan);
		struct plan_meta m = *old;
		m.tool = "bcgtool " PACKAGE_VERSION;
		m.created = plan_now();
		m.backend = e->be->kind;
		m.device = e->info.device;
		m.cc_major = e->info.cc_major;
		m.cc_minor = e->info.cc_minor;
		m.cuda_runtime = e->info.cuda_runtime;
		m.cuda_driver = e->info.cuda_driver;
		m.cublas = e->info.cublas;
		m.features = e->features;
		if (plan_set_meta(plan, &m, &diag) != 0 || plan_set_stats(plan, &st, &diag) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s", diag.message);
			goto out;
		}
	}
	{
		/* A rank of several is checked alone: rank 0 gets the others
		 * attached only once they have all captured (cmd-capture.c). */
		struct plan_dist d = *plan_get_dist(plan), alone = { .world = 1 };
		int bad;
		if (d.world > 1 && plan_set_dist(plan, &alone, &diag) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s", diag.message);
			goto out;
		}
		bad = plan_validate(plan, &diag) != 0;
		if (bad)
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "the captured plan is "
			            "inconsistent: %s", diag.message);
		if (d.world > 1 && plan_set_dist(plan, &d, bad ? NULL : &diag) != 0 && !bad) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s", diag.message);
			goto out;
		}
		if (bad)
			goto out;
	}
	*out = plan;
	script->program = NULL;
	rc = 0;
out:
	if (e != NULL) {
		nvtx_close(e->nvtx);
		engine_close(e);
	}
	if (caps != NULL)
		for (uint32_t k = 0; k < n; k++)
			captured_release(&caps[k]);
	free(caps);
	tune_cache_release(&tc);
	memplan_release(&mp);
	free(tokens);
	free(sel);
	bcg_progress_clear();
	/* Interrupted: what was done is the partial report. */
	if (rc != 0 && err->exit < 128)
		capture_report_release(rep);
	return rc;
}
