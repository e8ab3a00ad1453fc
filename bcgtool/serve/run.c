/*
 * serve/run.c - a trace on an engine: the serving loop of replay and bench.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "engine/replay.h"
#include "engine/stash.h"
#include "serve/run.h"
#include "util.h"

struct run_ctx {
	struct engine       *e;
	struct exec_variant *x;          /* the caller's, by size index */
	uint32_t             n;
	struct exec_variant *eager;      /* by token count, built when needed */
	unsigned char       *built;      /* by token count, up to e->eager_tokens */
};

void serve_result_release(struct serve_result *res)
{
	serve_dispatch_release(&res->disp);
	memset(res, 0, sizeof *res);
}

static int be_call(int rc, const char *what, struct engine_error *err)
{
	return rc == 0 ? 0 : engine_fail_backend(err, what);
}

/* The variant running every op eagerly at TOKENS tokens. */
static struct exec_variant *eager_at(struct run_ctx *c, int64_t tokens, struct engine_error *err)
{
	struct schedule sched;
	int rc;

	if (c->built[tokens])
		return &c->eager[tokens];
	if (schedule_build(c->e->plan, PLAN_MODE_EAGER, &sched, NULL, err->msg, sizeof err->msg) != 0) {
		engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s", err->msg);
		return NULL;
	}
	rc = exec_capture(c->e, tokens, PLAN_MODE_EAGER, sched.items, sched.nitems, 0,
	                  &c->eager[tokens], NULL, err);
	schedule_release(&sched);
	if (rc != 0)
		return NULL;
	c->built[tokens] = 1;
	return &c->eager[tokens];
}

/* Build every eager variant the schedule of T will need under D's policy
 * (every step's, with ALL_EAGER) before it runs: building one runs its ops
 * once, which in the middle of a run would be a step of its own. */
static int prebuild_eager(struct run_ctx *c, const struct serve_trace *t,
                          const struct serve_run_opts *o, const struct serve_dispatch *d,
                          int all_eager, struct engine_error *err)
{
	struct serve_sched s;
	struct serve_diag why;
	int rc = 0;

	if (serve_sched_init(&s, t, &o->sched, &why) != 0)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s", why.msg);
	while (rc == 0 && serve_sched_next(&s) == 0) {
		struct serve_pick pick;
		serve_dispatch_pick(d, &s.batch.key, &pick);
		if ((all_eager || pick.variant == PLAN_NONE) && eager_at(c, pick.padded.tokens, err) == NULL)
			rc = -1;
		serve_sched_finish(&s);
	}
	serve_sched_release(&s);
	return rc;
}

/* Grow *V (capacity *CAP) to hold index I. */
static int grow_times(double **v, uint64_t *cap, uint64_t i)
{
	double *p;
	uint64_t n;

	if (i < *cap)
		return 0;
	n = *cap ? 2 * *cap : 1024;
	if ((p = realloc(*v, n * sizeof *p)) == NULL)
		return -1;
	*v = p;
	*cap = n;
	return 0;
}

/* Grow *M (capacity *CAP) to hold N. */
static int grow_modes(int **m, uint64_t *cap, uint64_t n)
{
	int *p;

	if (n <= *cap)
		return 0;
	if ((p = realloc(*m, n * sizeof *p)) == NULL)
		return -1;
	*m = p;
	*cap = n;
	return 0;
}

/*
 * Run the whole schedule of T from a reset. Dispatch per D's policy, or
 * with ALL_EAGER every step eagerly at the size D would pad it to. With
 * TIMES, a time stamp before every step: (*TIMES)[i] is step i's time and
 * (*MODES)[i] its mode. RECORD counts the steps in D.
 */
static int run_trace(struct run_ctx *c, const struct serve_trace *t,
                     const struct serve_run_opts *o, struct serve_dispatch *d, int all_eager,
                     int record, double **times, int **modes, uint64_t *nsteps,
                     int64_t *last_tokens, int *any_full, struct serve_sched_stats *stats,
                     struct engine_error *err)
{
	const unsigned batch = BACKEND_MAX_MARKS - 2;
	struct engine *e = c->e;
	struct serve_sched s;
	struct serve_diag why;
	uint64_t step = 0, cap = 0, mcap = 0;
	unsigned j = 0;
	int rc = -1, done = 0;

	if (serve_sched_init(&s, t, &o->sched, &why) != 0)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s", why.msg);
	if (engine_reset(e, err) != 0)
		goto out;
	nvtx_push(e->nvtx, NVTX_KIND_PHASE, all_eager ? "serve check" : "serve");
	while (!done) {
		struct serve_pick pick;
		struct exec_variant *x;

		done = serve_sched_next(&s) != 0;
		if (!done) {
			serve_dispatch_pick(d, &s.batch.key, &pick);
			serve_sched_pad(&s, pick.padded.tokens, pick.padded.requests);
			if (all_eager || pick.variant == PLAN_NONE)
				x = eager_at(c, pick.padded.tokens, err);
			else
				x = &c->x[pick.variant];
			if (x == NULL)
				goto out_pop;
			if (times != NULL &&
			    be_call(e->be->mark(e->b, j, err->msg, sizeof err->msg), "time stamp", err) != 0)
				goto out_pop;
			/* A program with batch feeds reads the scheduler's batch, padded
			 * to the variant's tokens and the request dim. */
			if (e->geo.present &&
			    engine_set_batch(e, &s.batch, pick.padded.tokens, e->geo.max_requests,
			                     err) != 0)
				goto out_pop;
			if (exec_step(e, x, step, NULL, err) != 0)
				goto out_pop;
			serve_sched_finish(&s);
			if (record && serve_dispatch_record(d, &s.batch.key, &pick) != 0) {
				engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
				goto out_pop;
			}
			if (times != NULL) {
				if (grow_times(times, &cap, step) != 0 ||
				    grow_modes(modes, &mcap, cap) != 0) {
					engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
					goto out_pop;
				}
				(*modes)[step] = pick.mode;
			}
			if (pick.mode == PLAN_MODE_FULL && any_full != NULL)
				*any_full = 1;
			*last_tokens = pick.padded.tokens;
			step++;
			j++;
		}
		/* Every BATCH steps, and at the end: read the time stamps. */
		if (times != NULL && j > 0 && (j == batch || done)) {
			if (be_call(e->be->mark(e->b, j, err->msg, sizeof err->msg), "time stamp", err) != 0 ||
			    be_call(e->be->sync(e->b, err->msg, sizeof err->msg), "waiting for the steps",
			            err) != 0)
				goto out_pop;
			for (unsigned k = 0; k < j; k++)
				if (be_call(e->be->elapsed(e->b, k, k + 1, &(*times)[step - j + k], err->msg,
				                           sizeof err->msg), "reading time stamps", err) != 0)
					goto out_pop;
			j = 0;
		}
	}
	if (be_call(e->be->sync(e->b, err->msg, sizeof err->msg), "waiting for the steps", err) != 0)
		goto out_pop;
	*nsteps = step;
	if (stats != NULL)
		*stats = s.stats;
	rc = 0;
out_pop:
	nvtx_pop(e->nvtx);
out:
	serve_sched_release(&s);
	return rc;
}

static void run_stats(const double *times_in, const int *modes, uint64_t n,
                      const struct serve_trace *t, struct serve_result *res, double *sorted)
{
	res->total_ms = 0.0;
	res->step_max = 0.0;
	for (uint64_t i = 0; i < n; i++) {
		res->total_ms += times_in[i];
		if (modes[i] >= 0 && modes[i] < 4)
			res->mode_ms[modes[i]] += times_in[i];
		if (times_in[i] > res->step_max)
			res->step_max = times_in[i];
		sorted[i] = times_in[i];
	}
	res->step_mean = n ? res->total_ms / (double)n : 0.0;
	res->step_median = bcg_percentile(sorted, n, 50);
	res->step_p90 = bcg_percentile(sorted, n, 90);
	res->step_p99 = bcg_percentile(sorted, n, 99);
	res->requests = t->n;
	for (uint32_t i = 0; i < t->n; i++) {
		res->prompt_tokens += t->req[i].prompt_len;
		res->output_tokens += t->req[i].output_len;
	}
	if (res->total_ms > 0) {
		res->output_per_s = (double)res->sched.generated / (res->total_ms / 1e3);
		res->tokens_per_s = (double)res->disp.unpadded_tokens / (res->total_ms / 1e3);
	}
}

int serve_run(struct engine *e, const struct serve_size *sizes, struct exec_variant *x,
              uint32_t n, const struct serve_trace *t, const struct serve_run_opts *o,
              struct serve_result *res, struct engine_error *err)
{
	struct run_ctx c = { .e = e, .x = x, .n = n };
	struct serve_size *sz = NULL;
	struct serve_run_opts ro = *o;
	struct serve_dispatch dcheck = { 0 };
	double *times = NULL, *sorted = NULL;
	int *modes = NULL, any_full = 0;
	struct stash got = { 0 };
	struct stash_verdict v;
	uint64_t nsteps = 0, ncheck = 0;
	int64_t last = 0, last_check = 0;
	int rc = -1;

	memset(res, 0, sizeof *res);
	/* Steps above the largest size run eagerly in the engine's room
	 * after the arena, opened for the budget (engine_open_above). */
	if (o->sched.token_budget > (uint64_t)e->eager_tokens)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE,
		                   "a token budget of %u is above the %lld tokens the engine was "
		                   "opened for", o->sched.token_budget, (long long)e->eager_tokens);
	ro.sched.pad_tokens = (uint32_t)e->max_tokens;
	for (uint32_t i = 0; i < n; i++)
		if (sizes[i].key.requests > ro.sched.pad_reqs)
			ro.sched.pad_reqs = sizes[i].key.requests;
	sz = calloc(n ? n : 1, sizeof *sz);
	c.eager = calloc((size_t)e->eager_tokens + 1, sizeof *c.eager);
	c.built = calloc((size_t)e->eager_tokens + 1, 1);
	if (sz == NULL || c.eager == NULL || c.built == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		sz[i] = sizes[i];
		sz[i].variant = i;
	}
	if (serve_dispatch_init(&res->disp, sz, n, o->policy) != 0) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}

	/* Warm every variant up, outside the measurement. */
	for (uint32_t i = 0; i < n; i++)
		for (uint64_t s = 0; s < o->warmup; s++)
			if (exec_step(e, &x[i], s, NULL, err) != 0)
				goto out;
	if (prebuild_eager(&c, t, &ro, &res->disp, 0, err) != 0 ||
	    (o->check && prebuild_eager(&c, t, &ro, &res->disp, 1, err) != 0))
		goto out;
	if (run_trace(&c, t, &ro, &res->disp, 0, 1, &times, &modes, &nsteps, &last, &any_full,
	              &res->sched, err) != 0)
		goto out;
	if ((sorted = calloc(nsteps ? nsteps : 1, sizeof *sorted)) == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	run_stats(times, modes, nsteps, t, res, sorted);

	if (o->check) {
		/* The served run's results stay where they lie while the
		 * eager run takes the arena. */
		if (stash_take_results(e, last, &got, err) != 0)
			goto out;
		if (serve_dispatch_init(&dcheck, sz, n, o->policy) != 0) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
			goto out;
		}
		if (run_trace(&c, t, &ro, &dcheck, 1, 0, NULL, NULL, &ncheck, &last_check, NULL, NULL,
		              err) != 0)
			goto out;
		if (last_check != last) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE,
			            "the eager run of the trace ended at %lld tokens, the served "
			            "run at %lld", (long long)last_check, (long long)last);
			goto out;
		}
		if (stash_check(e, &got, any_full, &v, err) != 0)
			goto out;
		res->checked = 1;
		res->check = v;
	}
	rc = 0;
out:
	if (c.eager != NULL && c.built != NULL)
		for (int64_t k = 0; k <= e->eager_tokens; k++)
			if (c.built[k])
				exec_release(e, &c.eager[k]);
	stash_release(e, &got);
	serve_dispatch_release(&dcheck);
	free(c.eager);
	free(c.built);
	free(sz);
	free(times);
	free(sorted);
	free(modes);
	return rc;
}
