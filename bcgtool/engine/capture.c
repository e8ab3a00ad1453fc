/*
 * capture.c - the capture loop: reference, breakable capture, verification.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "dist/comm.h"
#include "cmd.h"
#include "exec.h"
#include "memplan.h"
#include "serve/dispatch.h"
#include "stash.h"
#include "util.h"
#include "verify.h"

/*
 * Host buffers for the outputs read after a reference's last step, given
 * back once their checksums are taken and handed out again, the smallest
 * that holds what is asked: the largest variant comes first, and a buffer
 * used again has its pages mapped already, where a new one of that size
 * (a step's logits) would fault in every page as the copy fills it.
 */
struct host_bufs {
	uint32_t  n, cap;
	void    **p;
	uint64_t *bytes;
};

/* A buffer of at least BYTES into *P (its size into *GOT), or -1. */
static int host_bufs_get(struct host_bufs *h, uint64_t bytes, void **p, uint64_t *got)
{
	uint32_t best = UINT32_MAX;

	for (uint32_t i = 0; h != NULL && i < h->n; i++)
		if (h->bytes[i] >= bytes && (best == UINT32_MAX || h->bytes[i] < h->bytes[best]))
			best = i;
	if (best != UINT32_MAX) {
		*p = h->p[best];
		*got = h->bytes[best];
		h->n--;
		h->p[best] = h->p[h->n];
		h->bytes[best] = h->bytes[h->n];
		return 0;
	}
	if (bytes > SIZE_MAX || (*p = malloc(bytes ? (size_t)bytes : 1)) == NULL)
		return -1;
	*got = bytes;
	return 0;
}

/* Give P (of BYTES) back to H, or free it when H has no room for it. */
static void host_bufs_put(struct host_bufs *h, void *p, uint64_t bytes)
{
	if (p == NULL)
		return;
	if (h != NULL && h->n == h->cap) {
		uint32_t cap = h->cap ? 2 * h->cap : 8;
		void **np = realloc(h->p, cap * sizeof *np);
		if (np != NULL)
			h->p = np;
		uint64_t *nb = realloc(h->bytes, cap * sizeof *nb);
		if (nb != NULL)
			h->bytes = nb;
		if (np != NULL && nb != NULL)
			h->cap = cap;
	}
	if (h == NULL || h->n == h->cap) {
		free(p);
		return;
	}
	h->p[h->n] = p;
	h->bytes[h->n++] = bytes;
}

static void host_bufs_release(struct host_bufs *h)
{
	for (uint32_t i = 0; i < h->n; i++)
		free(h->p[i]);
	free(h->p);
	free(h->bytes);
	memset(h, 0, sizeof *h);
}

/* The tensors a step's result lies in: outputs after every step and the
 * state after the last, kept where the backend has room for them and
 * compared there (stash.h): a step's logits, or a KV cache, need not
 * cross to the host and back. The outputs after the last step are also
 * read to the host, once: the checksums are taken from them. */
struct capture_snapshot {
	uint32_t      nout;
	uint32_t     *out;          /* tensor indexes of the outputs */
	struct stash *out_steps;    /* [step]: the outputs after it */
	void        **last;         /* [k]: output k after the last step */
	uint64_t     *last_bytes;   /* [k]: the size of its buffer */
	struct host_bufs *bufs;     /* where those buffers come from, or NULL */
	uint32_t      nstate;
	uint32_t     *state;
	struct stash  state_data;
	struct stash_pool *pool;    /* where they are kept first, or NULL */
};

static void snapshot_release(struct engine *e, struct capture_snapshot *s, uint32_t steps)
{
	if (s->out_steps != NULL)
		for (uint32_t i = 0; i < steps; i++)
			stash_release(e, &s->out_steps[i]);
	if (s->last != NULL)
		for (uint32_t k = 0; k < s->nout; k++)
			host_bufs_put(s->bufs, s->last[k], s->last_bytes[k]);
	stash_release(e, &s->state_data);
	free(s->out);
	free(s->out_steps);
	free(s->last);
	free(s->last_bytes);
	free(s->state);
	memset(s, 0, sizeof *s);
}

/* S for STEPS steps, kept in POOL (may be NULL) first: POOL is emptied,
 * no stash may use it. */
static int snapshot_init(struct engine *e, uint32_t steps, struct stash_pool *pool,
                         struct host_bufs *bufs, struct capture_snapshot *s,
                         struct engine_error *err)
{
	const plan_t *plan = e->plan;
	uint32_t nt = plan_count_tensors(plan);

	memset(s, 0, sizeof *s);
	s->pool = pool;
	s->bufs = bufs;
	if (pool != NULL)
		pool->used = 0;
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
	s->out_steps = calloc(steps, sizeof *s->out_steps);
	s->last = calloc(s->nout + 1, sizeof *s->last);
	s->last_bytes = calloc(s->nout + 1, sizeof *s->last_bytes);
	if (s->out_steps == NULL || s->last == NULL || s->last_bytes == NULL)
		goto nomem;
	return 0;
nomem:
	snapshot_release(e, s, steps);
	return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
}

/* Bytes a reset writes: every tensor but the weights, whole. */
static uint64_t reset_bytes(const plan_t *plan)
{
	uint64_t n = 0;

	for (uint32_t t = 0; t < plan_count_tensors(plan); t++)
		if (plan_get_tensor(plan, t)->role != PLAN_ROLE_WEIGHT)
			n += plan_get_tensor(plan, t)->bytes;
	return n;
}

/* Wait for the backend, so that what was queued counts in its phase. */
static int capture_wait(struct engine *e, struct engine_error *err)
{
	if (e->be->sync(e->b, err->msg, sizeof err->msg) != 0)
		return engine_fail_backend(err, "waiting for the device");
	return 0;
}

/* Every tensor but the weights back to its initial content: a state copy. */
static int capture_reset(struct engine *e, struct capture_phases *ph, struct engine_error *err)
{
	uint64_t t0 = bcg_now_ns();

	if (engine_reset(e, err) != 0 || capture_wait(e, err) != 0)
		return -1;
	ph->state_ns += bcg_now_ns() - t0;
	ph->state_bytes += reset_bytes(e->plan);
	ph->state_copies++;
	return 0;
}

/* Keep the outputs after STEP (and when LAST, read them to the host, and
 * keep the state, timed in PH as a state copy) in S. */
static int snapshot_take(struct engine *e, int64_t tokens, uint32_t step, int last,
                         struct capture_snapshot *s, struct capture_phases *ph,
                         struct engine_error *err)
{
	uint64_t t0;

	if (stash_take_pooled(e, s->out, s->nout, tokens, s->pool, &s->out_steps[step], err) != 0)
		return -1;
	if (!last)
		return 0;
	for (uint32_t k = 0; k < s->nout; k++) {
		uint32_t t = s->out[k];
		uint64_t bytes = plan_tensor_bytes(e->plan, t, tokens);
		char h[32];
		if (host_bufs_get(s->bufs, bytes, &s->last[k], &s->last_bytes[k]) != 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE,
			                   "out of memory reading '%s' (%s)",
			                   plan_get_tensor(e->plan, t)->name,
			                   bcg_human_bytes(bytes, h, sizeof h));
		if (engine_read_tensor(e, t, tokens, s->last[k], err) != 0)
			return -1;
	}
	if (s->nstate == 0)
		return 0;
	t0 = bcg_now_ns();
	if (stash_take_pooled(e, s->state, s->nstate, tokens, s->pool, &s->state_data, err) != 0 ||
	    capture_wait(e, err) != 0)
		return -1;
	ph->state_ns += bcg_now_ns() - t0;
	for (uint32_t k = 0; k < s->nstate; k++)
		ph->state_bytes += plan_tensor_bytes(e->plan, s->state[k], tokens);
	ph->state_copies++;
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
	vr->ties += r->ties;
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
                             struct capture_snapshot *ref, struct capture_phases *ph,
                             struct engine_error *err)
{
	struct engine_variant v;
	int rc = -1;

	if (engine_variant_init(e, tokens, mode, &v, err) != 0)
		return -1;
	if (capture_reset(e, ph, err) != 0)
		goto out;
	for (uint32_t s = 0; s < steps; s++)
		if (engine_interrupted(err) != 0 || engine_eager_step(e, &v, s, err) != 0 ||
		    snapshot_take(e, tokens, s, s + 1 == steps, ref, ph, err) != 0)
			goto out;
	rc = 0;
out:
	engine_variant_release(&v);
	return rc;
}

static int capture_verify(struct engine *e, struct exec_variant *x, uint32_t steps,
                          const struct capture_snapshot *ref, struct capture_phases *ph,
                          struct capture_variant_report *vr, struct engine_error *err)
{
	int64_t tokens = x->ev.tokens;
	int tolerant = x->ev.mode == PLAN_MODE_FULL;
	struct verify_result r;
	char when[64];

	vr->exact = 1;
	vr->rel_error = 0.0;
	vr->ties = 0;
	if (capture_reset(e, ph, err) != 0)
		return -1;
	for (uint32_t s = 0; s < steps; s++) {
		if (engine_interrupted(err) != 0 || exec_step(e, x, s, NULL, err) != 0)
			return -1;
		for (uint32_t k = 0; k < ref->nout; k++) {
			snprintf(when, sizeof when, "after step %u", s);
			if (stash_compare(e, &ref->out_steps[s], k, 1, tolerant, &r, err) != 0 ||
			    judge_tensor(e, ref->out[k], tokens, &r, tolerant, when, vr, err) != 0)
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

/*
 * The checksums of a variant's outputs: an FNV-1a hash, a byte at a time,
 * and a sum in double, an element at a time, both sequential by their
 * definition (plan-format.md, CHKS). Over a step's logits of hundreds of
 * tokens they take longer than the variant's whole capture on the GPU,
 * so each variant's are taken on a thread of their own while the capture
 * goes on to the next variant; the threads touch only the outputs' bytes
 * and the checks they fill, never the plan or the device.
 */
struct checksum_job {
	uint32_t           n;
	struct plan_check *checks;     /* tensor and steps set; hash and sum filled */
	void             **data;       /* [k]: output k's bytes, owned */
	uint64_t          *cap;        /* [k]: the size of its buffer */
	struct host_bufs  *bufs;       /* where the buffers go back, or NULL */
	uint64_t          *bytes;
	uint64_t          *count;
	int               *dtype;
	pthread_t          thread;
	int                running;    /* THREAD runs it (joined by checksum_wait) */
};

static void *checksum_run(void *arg)
{
	struct checksum_job *j = arg;

	for (uint32_t k = 0; k < j->n; k++) {
		j->checks[k].hash = plan_hash64(j->data[k], (size_t)j->bytes[k], PLAN_HASH64_INIT);
		j->checks[k].sum = verify_sum(j->dtype[k], j->data[k], j->count[k]);
	}
	return NULL;
}

/* Wait for J's checksums; its buffers go back. */
static void checksum_wait(struct checksum_job *j)
{
	if (j->running)
		pthread_join(j->thread, NULL);
	j->running = 0;
	for (uint32_t k = 0; j->data != NULL && k < j->n; k++) {
		host_bufs_put(j->bufs, j->data[k], j->cap[k]);
		j->data[k] = NULL;
	}
}

static void checksum_release(struct checksum_job *j)
{
	checksum_wait(j);
	free(j->data);
	free(j->cap);
	free(j->bytes);
	free(j->count);
	free(j->dtype);
	memset(j, 0, sizeof *j);
}

/* What one variant's capture produced, kept until every variant verified
 * and the plan is written in variant order. */
struct captured {
	struct schedule         sched;    /* items, with breakpoint reasons */
	struct backend_capture *recs;     /* per item: nodes, timings */
	struct exec_variant     x;        /* its executables, held to the end */
	uint32_t               *segidx;   /* per item: the plan's segment */
	uint32_t                nout;
	struct plan_check      *checks;   /* the reference checksums */
	struct checksum_job     job;      /* taking them */
};

static void captured_release(struct engine *e, struct captured *c)
{
	if (e != NULL && c->x.items != NULL)
		exec_release(e, &c->x);
	free(c->segidx);
	checksum_release(&c->job);
	if (c->recs != NULL)
		for (uint32_t i = 0; i < c->sched.nitems; i++)
			backend_capture_release(&c->recs[i]);
	free(c->recs);
	free(c->checks);
	schedule_release(&c->sched);
	memset(c, 0, sizeof *c);
}

/* Record variant VI's items, nodes, breakpoints and checksums in PLAN. */
static int capture_record(plan_t *plan, uint32_t vi, struct captured *c, int with_nodes,
                          int untimed, struct capture_variant_report *vr,
                          struct engine_error *err)
{
	const struct schedule *sched = &c->sched;
	struct backend_capture *recs = c->recs;
	struct plan_diag diag = { 0 };
	uint32_t si;

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
			if (plan_add_segment(plan, &seg, &si, &diag) != 0)
				goto fail;
			c->segidx[i] = si;
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

static int by_segment(const void *a, const void *b)
{
	const struct plan_share *x = a, *y = b;
	return (x->segment > y->segment) - (x->segment < y->segment);
}

/* Which segments of the N variants CAPS ran on a shared executable:
 * the first of each group of two or more, those that joined it, and
 * those refused the update. */
static int capture_record_shares(plan_t *plan, struct captured *caps, uint32_t n,
                                 struct share_pool *pool, struct capture_report *rep,
                                 struct engine_error *err)
{
	struct plan_share *sh = NULL;
	struct plan_diag diag = { 0 };
	uint32_t ns = 0, cap = 0;
	int rc = -1;

	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < caps[k].x.nitems; i++)
			if (caps[k].x.items[i].share == SHARE_FIRST)
				pool->groups[caps[k].x.items[i].share_group].first = caps[k].segidx[i];
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t i = 0; i < caps[k].x.nitems; i++) {
			const struct exec_item *it = &caps[k].x.items[i];
			const struct share_group *g;
			if (it->kind != PLAN_ITEM_SEGMENT || it->share_group < 0)
				continue;
			g = &pool->groups[it->share_group];
			if (it->share == SHARE_FIRST && g->segments < 2 && g->refusals == 0)
				continue;
			if (ns == cap) {
				uint32_t c2 = cap ? 2 * cap : 64;
				struct plan_share *m = realloc(sh, c2 * sizeof *m);
				if (m == NULL) {
					engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
					goto out;
				}
				sh = m;
				cap = c2;
			}
			sh[ns++] = (struct plan_share){
				.segment = caps[k].segidx[i],
				.exec = g->first,
				.flags = it->share == SHARE_REFUSED ? PLAN_SHARE_REFUSED : 0,
				.result = it->share == SHARE_REFUSED ? (uint32_t)it->refused : 0,
			};
			rep->groups += it->share == SHARE_FIRST;
			rep->refused += it->share == SHARE_REFUSED;
		}
	if (ns > 0)
		qsort(sh, ns, sizeof *sh, by_segment);
	for (uint32_t i = 0; i < ns; i++)
		if (plan_add_share(plan, &sh[i], NULL, &diag) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "recording the plan: %s",
			            diag.message);
			goto out;
		}
	rc = 0;
out:
	free(sh);
	return rc;
}

/* The checksum threads that may run at once: the processors but the one
 * driving the capture, at least 1 and at most 8. */
static uint32_t checksum_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN) - 1;

	return n < 1 ? 1 : n > 8 ? 8 : (uint32_t)n;
}

/* Start taking the reference's checksums after its last step (REF's
 * outputs on the host, taken over) into C, on a thread when one can be
 * started, else here. The caller waits for C's job before reading C's
 * checks (checksum_wait). */
static int capture_checksums(const plan_t *plan, int64_t tokens, uint32_t steps,
                             struct capture_snapshot *ref, struct captured *c,
                             struct engine_error *err)
{
	struct checksum_job *j = &c->job;

	c->checks = calloc(ref->nout + 1, sizeof *c->checks);
	j->data = calloc(ref->nout + 1, sizeof *j->data);
	j->cap = calloc(ref->nout + 1, sizeof *j->cap);
	j->bytes = calloc(ref->nout + 1, sizeof *j->bytes);
	j->count = calloc(ref->nout + 1, sizeof *j->count);
	j->dtype = calloc(ref->nout + 1, sizeof *j->dtype);
	if (c->checks == NULL || j->data == NULL || j->cap == NULL || j->bytes == NULL ||
	    j->count == NULL || j->dtype == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	for (uint32_t k = 0; k < ref->nout; k++) {
		uint32_t t = ref->out[k];
		c->checks[k].tensor = t;
		c->checks[k].steps = steps;
		j->data[k] = ref->last[k];
		j->cap[k] = ref->last_bytes[k];
		ref->last[k] = NULL;
		j->bytes[k] = plan_tensor_bytes(plan, t, tokens);
		j->count[k] = plan_tensor_numel(plan, t, tokens);
		j->dtype[k] = plan_get_tensor(plan, t)->dtype;
	}
	j->n = ref->nout;
	j->bufs = ref->bufs;
	j->checks = c->checks;
	c->nout = ref->nout;
	j->running = bcg_thread_start(&j->thread, checksum_run, j) == 0;
	if (!j->running)
		checksum_run(j);
	return 0;
}

/* One variant: choices, reference, capture, verify; the result kept in C.
 * Without VERIFY only the choices and the capture: no reference, no
 * checksums. */
static int capture_variant(struct engine *e, plan_t *plan, uint32_t vi,
                           const struct capture_opts *o, int verify, struct stash_pool *pool,
                           struct host_bufs *bufs, struct tune_cache *tc,
                           struct captured *c, struct capture_variant_report *vr,
                           struct plan_stats *st, struct capture_phases *ph,
                           struct engine_error *err)
{
	uint32_t steps = o->steps;
	const struct plan_variant *pv = plan_get_variant(plan, vi);
	struct capture_snapshot ref;
	struct exec_variant *x = &c->x;
	uint32_t bad_op = PLAN_NONE;
	uint64_t t0, copies, wall;
	int rc = -1;

	memset(c, 0, sizeof *c);
	vr->tokens = pv->tokens;
	vr->mode = pv->mode;
	if (schedule_build(plan, pv->mode, &c->sched, &bad_op, err->msg, sizeof err->msg) != 0)
		return engine_fail(err, BCG_EXIT_USAGE, bad_op, "%lld tokens: %s",
		                   (long long)pv->tokens, err->msg);
	if (snapshot_init(e, steps, pool, bufs, &ref, err) != 0)
		return -1;
	c->recs = calloc(c->sched.nitems ? c->sched.nitems : 1, sizeof *c->recs);
	c->segidx = calloc(c->sched.nitems ? c->sched.nitems : 1, sizeof *c->segidx);
	if (c->recs == NULL || c->segidx == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}

	bcg_progress("capture: variant %u of %u (%lld tokens): tune", o->progress_at,
	             o->progress_of, (long long)pv->tokens);
	t0 = bcg_now_ns();
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
		if (rc == 0 && to.step && to.measure) {
			bcg_progress("capture: variant %u of %u (%lld tokens): tune in the step",
			             o->progress_at, o->progress_of, (long long)pv->tokens);
			rc = tune_step_variant(e, plan, vi, c->sched.items, c->sched.nitems, &to, tc,
			                       &vr->step, err);
			ph->tune_step_ns += vr->step.ns;
		}
	}
	nvtx_pop(e->nvtx);
	ph->tune_ns += bcg_now_ns() - t0;
	if (rc != 0)
		goto out;

	if (verify) {
		if ((rc = engine_interrupted(err)) != 0)
			goto out;
		bcg_progress("capture: variant %u of %u (%lld tokens): reference", o->progress_at,
		             o->progress_of, (long long)pv->tokens);
		t0 = bcg_now_ns();
		copies = ph->state_ns;
		nvtx_push(e->nvtx, NVTX_KIND_PHASE, "reference");
		rc = capture_reference(e, pv->tokens, pv->mode, steps, &ref, ph, err);
		nvtx_pop(e->nvtx);
		st->reference_ns += bcg_now_ns() - t0 - (ph->state_ns - copies);
		if (rc != 0)
			goto out;
	}

	if ((rc = engine_interrupted(err)) != 0)
		goto out;
	bcg_progress("capture: variant %u of %u (%lld tokens): capture", o->progress_at,
	             o->progress_of, (long long)pv->tokens);
	t0 = bcg_now_ns();
	rc = exec_capture(e, pv->tokens, pv->mode, c->sched.items, c->sched.nitems, 0, x,
	                  c->recs, err);
	if (rc != 0)
		goto out;
	/* The phases: all of it but instantiation is the capture's, its
	 * warm-up and breakpoints included; the plan's statistics sum the
	 * segments' own times. */
	wall = bcg_now_ns() - t0;
	for (uint32_t i = 0; i < c->sched.nitems; i++) {
		uint64_t inst = c->recs[i].instantiate_ns + c->recs[i].upload_ns +
		                c->recs[i].update_ns;
		if (x->items[i].kind == PLAN_ITEM_SEGMENT) {
			vr->exec_bytes += c->recs[i].exec_bytes;
			if (x->items[i].share == SHARE_JOINED)
				vr->joined++;
			else
				vr->execs++;
		}
		st->capture_ns += c->recs[i].capture_ns;
		st->instantiate_ns += inst;
		ph->instantiate_ns += inst;
		wall -= inst < wall ? inst : wall;
	}
	ph->capture_ns += wall;
	if (!verify) {
		vr->done = 1;
		goto out;
	}

	if ((rc = engine_interrupted(err)) != 0)
		goto out;
	bcg_progress("capture: variant %u of %u (%lld tokens): verify", o->progress_at,
	             o->progress_of, (long long)pv->tokens);
	t0 = bcg_now_ns();
	copies = ph->state_ns;
	nvtx_push(e->nvtx, NVTX_KIND_PHASE, "verify");
	rc = capture_verify(e, x, steps, &ref, ph, vr, err);
	nvtx_pop(e->nvtx);
	st->verify_ns += bcg_now_ns() - t0 - (ph->state_ns - copies);
	if (rc != 0)
		goto out;
	if (!vr->exact)
		st->verify_exact = 0;
	if (vr->rel_error > st->verify_max_error)
		st->verify_max_error = vr->rel_error;
	rc = capture_checksums(plan, pv->tokens, steps, &ref, c, err);
	vr->done = vr->verified = rc == 0;
	ph->verified += rc == 0;
out:
	/* Held until the plan is written (capture_report): released here
	 * only on failure. */
	if (rc != 0 && x->items != NULL)
		exec_release(e, x);
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
			char sizes[320];
			int64_t *all = calloc(script->nvariants + 1, sizeof *all);
			free(v);
			if (all == NULL)
				return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
			for (uint32_t i = 0; i < script->nvariants; i++)
				all[i] = script->variants[i].tokens;
			bcg_list_sizes(all, script->nvariants, sizes, sizeof sizes);
			free(all);
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

static const char *const verify_names[] = {
	[CAPTURE_VERIFY_ALL] = "all",
	[CAPTURE_VERIFY_ENDS] = "first-and-largest",
	[CAPTURE_VERIFY_NONE] = "none",
};

const char *capture_verify_name(int verify)
{
	if (verify < 0 || verify > CAPTURE_VERIFY_NONE)
		return "?";
	return verify_names[verify];
}

int capture_verify_from_name(const char *name)
{
	for (int i = 0; i <= CAPTURE_VERIFY_NONE; i++)
		if (strcmp(name, verify_names[i]) == 0)
			return i;
	return -1;
}

/* The room a reference at TOKENS keeps on the backend: the outputs after
 * each of STEPS steps and the state, each at a multiple of 256 bytes. */
static uint64_t capture_kept_bytes(const plan_t *plan, int64_t tokens, uint32_t steps)
{
	uint64_t n = 0;

	for (uint32_t t = 0; t < plan_count_tensors(plan); t++) {
		int role = plan_get_tensor(plan, t)->role;
		uint64_t room = (plan_tensor_bytes(plan, t, tokens) + 255) / 256 * 256;
		if (role == PLAN_ROLE_OUTPUT)
			n += steps * room;
		else if (role == PLAN_ROLE_STATE)
			n += room;
	}
	return n;
}

/* Whether each of the N variants SEL (ascending) gets the reference and
 * the verification, into WANT. */
static int capture_which_verify(const plan_t *plan, const struct script_variant *sel,
                                uint32_t n, int verify, unsigned char *want,
                                struct engine_error *err)
{
	int outputs = 0;

	for (uint32_t t = 0; t < plan_count_tensors(plan); t++)
		outputs |= plan_get_tensor(plan, t)->role == PLAN_ROLE_OUTPUT;
	/* The plan tells a variant verified by its output checksums: with
	 * no output it could not tell. */
	if (verify != CAPTURE_VERIFY_ALL && !outputs)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE,
		                   "--verify %s needs an output tensor: the plan tells the "
		                   "variants verified by their outputs' checksums, and this "
		                   "program has none (use --verify all)",
		                   capture_verify_name(verify));
	for (uint32_t i = 0; i < n; i++) {
		int first = 1, last = 1;
		for (uint32_t j = 0; j < n; j++) {
			if (sel[j].mode != sel[i].mode)
				continue;
			first &= j >= i;
			last &= j <= i;
		}
		want[i] = verify == CAPTURE_VERIFY_ALL ||
		          (verify == CAPTURE_VERIFY_ENDS && (first || last));
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
	struct stash_pool pool = { 0 };
	struct host_bufs bufs = { 0 };
	struct share_pool shares = { 0 };
	int64_t *tokens = NULL;
	unsigned char *verify = NULL;
	uint32_t n = 0;
	uint64_t t0, start = bcg_now_ns();
	int rc = -1;

	*out = NULL;
	memset(rep, 0, sizeof *rep);
	rep->verify = capture_verify_name(o->verify);
	if (capture_select(script, o, &sel, &n, err) != 0)
		return -1;
	tokens = calloc(n, sizeof *tokens);
	verify = calloc(n, sizeof *verify);
	rep->variants = calloc(n, sizeof *rep->variants);
	if (tokens == NULL || verify == NULL || rep->variants == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	if (capture_which_verify(plan, sel, n, o->verify, verify, err) != 0)
		goto out;
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
	rep->phases.materialize_ns = st.materialize_ns;
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
	rep->share = o->share_exec;
	rep->tune_step = o->tune.step && o->tune.measure;
	rep->tune_vars = o->tune.measure && o->tune.nvars > 0 ? o->tune.vars : NULL;
	rep->ntune_vars = rep->tune_vars != NULL ? o->tune.nvars : 0;
	e->share_impl = o->share_exec;
	if (o->share_exec)
		exec_share_begin(e, &shares);

	/* One place on the backend for what the references keep, made for
	 * the largest verified. */
	for (uint32_t k = n; k-- > 0;)
		if (verify[k]) {
			if (stash_pool_init(e, capture_kept_bytes(plan, tokens[k], o->steps), &pool,
			                    err) != 0)
				goto out;
			break;
		}

	/* Largest first: it needs the most of everything, so a failure to
	 * fit shows at once. The plan gets them in variant order. */
	if ((caps = calloc(n, sizeof *caps)) == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	for (uint32_t k = n; k-- > 0;) {
		struct capture_opts vo = *o;
		uint32_t running = 0, oldest = k;
		vo.progress_at = n - k;
		vo.progress_of = n;
		/* At most so many checksum threads: wait for the oldest. */
		for (uint32_t i = k + 1; i < n; i++)
			if (caps[i].job.running) {
				running++;
				oldest = i;
			}
		if (running >= checksum_threads()) {
			t0 = bcg_now_ns();
			checksum_wait(&caps[oldest].job);
			rep->phases.checksum_ns += bcg_now_ns() - t0;
		}
		if (engine_interrupted(err) != 0 ||
		    capture_variant(e, plan, k, &vo, verify[k], &pool, &bufs, &tc, &caps[k],
		                    &rep->variants[k],
		                    &st, &rep->phases, err) != 0)
			goto out;
	}
	t0 = bcg_now_ns();
	for (uint32_t k = 0; k < n; k++)
		checksum_wait(&caps[k].job);
	rep->phases.checksum_ns += bcg_now_ns() - t0;
	bcg_progress_clear();
	for (uint32_t k = 0; k < n; k++)
		if (capture_record(plan, k, &caps[k], e->be->kind == PLAN_BACKEND_CUDA, o->untimed,
		                   &rep->variants[k], err) != 0)
			goto out;
	rep->prepared_bytes = engine_prepared_bytes(e);
	for (uint32_t k = 0; k < n; k++) {
		rep->exec_bytes += rep->variants[k].exec_bytes;
		rep->execs += rep->variants[k].execs;
		rep->segments += rep->variants[k].segments;
	}
	/* A rank of several records none: the ranks' plans are written
	 * each at the file's version, and sharing stays out of 1.5's. */
	if (o->share_exec && (e->comm == NULL || e->comm->world <= 1) &&
	    capture_record_shares(plan, caps, n, &shares, rep, err) != 0)
		goto out;
	rep->opaque = shares.opaque;
	snprintf(rep->opaque_why, sizeof rep->opaque_why, "%s", shares.opaque_why);
	/* No variant verified: no reference ran, no replay matched. */
	st.reference_steps = rep->phases.verified > 0 ? o->steps : 0;
	if (rep->phases.verified == 0)
		st.verify_exact = 0;
	rep->phases.reference_ns = st.reference_ns;
	rep->phases.verify_ns = st.verify_ns;
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
	if (caps != NULL)
		for (uint32_t k = 0; k < n; k++)
			captured_release(e, &caps[k]);
	if (e != NULL && o->share_exec) {
		share_pool_release(&shares, e->be, e->b);
		exec_share_end(e);
	}
	host_bufs_release(&bufs);
	if (e != NULL) {
		stash_pool_release(e, &pool);
		nvtx_close(e->nvtx);
		engine_close(e);
	}
	free(caps);
	tune_cache_release(&tc);
	memplan_release(&mp);
	free(tokens);
	free(verify);
	free(sel);
	bcg_progress_clear();
	rep->phases.total_ns = bcg_now_ns() - start;
	/* Interrupted: what was done is the partial report. */
	if (rc != 0 && err->exit < 128)
		capture_report_release(rep);
	return rc;
}
