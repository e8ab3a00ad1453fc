/*
 * serve/cli.c - replay --trace and bench --trace: the trace, the
 * scheduler's settings, the variants, the run and its report.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/instantiate.h"
#include "engine/nvtx.h"
#include "engine/tune.h"
#include "script/script.h"
#include "serve/cli.h"
#include "serve/report.h"
#include "serve/run.h"
#include "util.h"

/* Defaults of the scheduler where neither the plan nor --sched says. */
#define SERVE_DEFAULT_BLOCK_SIZE 16
#define SERVE_DEFAULT_BLOCKS     4096
#define SERVE_DEFAULT_STEP_US    5000

void serve_cli_init(struct serve_cli *c)
{
	memset(c, 0, sizeof *c);
	c->policy = -1;
}

int serve_cli_option(const struct cmd_entry *self, struct serve_cli *c, int opt,
                     const char *arg)
{
	switch (opt) {
	case SERVE_OPT_TRACE:
		c->trace = arg;
		return 1;
	case SERVE_OPT_SYNTHETIC:
		c->synthetic = arg;
		return 1;
	case SERVE_OPT_POLICY:
		if ((c->policy = serve_policy_parse(arg)) < 0) {
			cmd_usage_error(self, "--policy takes full_and_breakable, breakable, full or "
			                "eager, not '%s'", arg);
			return -1;
		}
		return 1;
	case SERVE_OPT_SCHED:
		c->sched = arg;
		return 1;
	default:
		return 0;
	}
}

int serve_cli_active(const struct cmd_entry *self, const struct serve_cli *c)
{
	if (c->trace != NULL && c->synthetic != NULL) {
		cmd_usage_error(self, "--trace and --synthetic cannot be given together");
		return -1;
	}
	if (c->trace == NULL && c->synthetic == NULL) {
		if (c->policy >= 0 || c->sched != NULL) {
			cmd_usage_error(self, "--policy and --sched need --trace or --synthetic");
			return -1;
		}
		return 0;
	}
	return 1;
}

/* The trace asked for, and its name for reports. */
static int serve_cli_trace(const struct cmd_entry *self, const struct serve_cli *c,
                           struct serve_trace *t, char *name, size_t len)
{
	struct serve_diag d;

	if (c->trace != NULL) {
		if (serve_trace_read(c->trace, t, &d) != 0) {
			bcg_error_at(c->trace, d.line, d.col, "%s", d.msg);
			return strcmp(d.msg, "out of memory") == 0 ? BCG_EXIT_RUNTIME : BCG_EXIT_USAGE;
		}
		snprintf(name, len, "%s", c->trace);
	} else {
		struct serve_synth s;
		char why[256];
		serve_synth_defaults(&s);
		if (serve_synth_parse(c->synthetic, &s, why, sizeof why) != 0)
			return cmd_usage_error(self, "--synthetic: %s", why);
		if (serve_trace_synthesize(&s, t) != 0) {
			bcg_error("out of memory");
			return BCG_EXIT_RUNTIME;
		}
		snprintf(name, len, "synthetic %s", c->synthetic);
	}
	return BCG_EXIT_OK;
}

/* The scheduler's settings: --sched over the defaults, which follow the
 * sizes (the largest is the token budget and the request limit) and the
 * trace (a block table holds its longest request). A program without
 * batch feeds cannot serve the requests: its steps run at the batches'
 * token counts and the cache is only the scheduler's (O->modelled). */
static int serve_cli_sched(const struct cmd_entry *self, const struct serve_cli *c,
                           const plan_t *program, const struct serve_size *sizes, uint32_t n,
                           int64_t max_tokens, const struct serve_trace *t,
                           struct serve_sched_opts *o)
{
	struct engine_batch_geometry g;
	uint64_t longest = 1;
	char why[256];

	memset(o, 0, sizeof *o);
	o->step_us = SERVE_DEFAULT_STEP_US;
	if (c->sched != NULL && serve_sched_parse(c->sched, o, why, sizeof why) != 0)
		return cmd_usage_error(self, "--sched: %s", why);
	if (engine_batch_geometry(program, &g, why, sizeof why) != 0) {
		bcg_error("%s", why);
		return BCG_EXIT_USAGE;
	}
	if (g.present) {
		/* The program's paged cache is the scheduler's. */
		if ((o->num_blocks != 0 && o->num_blocks != g.num_blocks) ||
		    (o->block_size != 0 && o->block_size != g.block_size))
			return cmd_usage_error(self, "--sched: the program's KV cache has %u blocks "
			                       "of %u positions", g.num_blocks, g.block_size);
		if (o->max_reqs > g.max_requests)
			return cmd_usage_error(self, "--sched: the program's batches hold at most %u "
			                       "requests", g.max_requests);
		o->num_blocks = g.num_blocks;
		o->block_size = g.block_size;
		if (o->max_reqs == 0)
			o->max_reqs = g.max_requests;
	}
	if (o->token_budget == 0)
		o->token_budget = (uint32_t)max_tokens;
	if (o->max_reqs == 0) {
		for (uint32_t i = 0; i < n; i++)
			if (sizes[i].key.requests > o->max_reqs)
				o->max_reqs = sizes[i].key.requests;
		if (o->max_reqs == 0)
			o->max_reqs = o->token_budget;
	}
	if (o->block_size == 0)
		o->block_size = SERVE_DEFAULT_BLOCK_SIZE;
	for (uint32_t i = 0; i < t->n; i++) {
		uint64_t need = (uint64_t)t->req[i].prompt_len + t->req[i].output_len - 1;
		if (need > longest)
			longest = need;
	}
	o->max_blocks = g.present ? g.max_blocks
	                          : (uint32_t)((longest + o->block_size - 1) / o->block_size);
	if (o->num_blocks == 0)
		o->num_blocks = o->max_blocks > SERVE_DEFAULT_BLOCKS ? o->max_blocks
		                                                     : SERVE_DEFAULT_BLOCKS;
	o->modelled = !g.present;
return BCG_EXIT_OK;
}

/* Whether every request of T fits the cache of O, before any device work:
 * "bcgtool: TRACE: request ID needs ...". */
static int serve_cli_fits(const char *name, const struct serve_trace *t,
                          const struct serve_sched_opts *o)
{
	struct serve_sched s;
	struct serve_diag d;

	if (serve_sched_init(&s, t, o, &d) != 0) {
		bcg_error("%s: %s", name, d.msg);
		return strcmp(d.msg, "out of memory") == 0 ? BCG_EXIT_RUNTIME : BCG_EXIT_USAGE;
	}
	serve_sched_release(&s);
	return BCG_EXIT_OK;
}

/* Every run of a program that cannot serve the trace says so, once the
 * run is sure to start ("modelled" in the report too). */
static void serve_cli_warn_modelled(const char *name, const struct serve_sched_opts *o)
{
	if (o->modelled)
		bcg_warn("%s has no batch feeds (op-script.md, \"Batch feeds\"): it serves no "
		         "request; each step runs it at the batch's token count, and the cache of "
		         "%u blocks of %u is only the scheduler's model", name, o->num_blocks,
		         o->block_size);
}

static void print_backend(FILE *f, const struct engine *e)
{
	fprintf(f, "backend      %s%s%s%s\n", e->be->name, e->info.device[0] ? " (" : "",
	        e->info.device, e->info.device[0] ? ")" : "");
}

int serve_cmd_replay(const struct cmd_entry *self, const plan_t *plan, const char *path,
                     const struct serve_cli *c, const struct serve_cmd_opts *o)
{
	uint32_t nv = plan_count_variants(plan), built = 0;
	struct engine_error err = { .op = PLAN_NONE };
	struct serve_trace t = { 0 };
	struct serve_run_opts ro = { .warmup = o->warmup, .check = o->check };
	struct serve_result res = { 0 };
	struct serve_size *sizes = NULL;
	struct exec_variant *x = NULL;
	struct engine *e = NULL;
	int64_t max_tokens = 0;
	char name[512];
	int rc;

	ro.policy = c->policy >= 0 ? c->policy : SERVE_POLICY_FULL_AND_BREAKABLE;
	if ((rc = serve_cli_trace(self, c, &t, name, sizeof name)) != BCG_EXIT_OK)
		return rc;
	for (uint32_t i = 0; i < nv; i++)
		if (plan_get_variant(plan, i)->tokens > max_tokens)
			max_tokens = plan_get_variant(plan, i)->tokens;
	if (nv == 0) {
		bcg_error("%s: the plan has no variants", path);
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	sizes = calloc(nv, sizeof *sizes);
	x = calloc(nv, sizeof *x);
	if (sizes == NULL || x == NULL) {
		bcg_error("out of memory");
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	for (uint32_t i = 0; i < nv; i++) {
		/* The plan's keys (format 1.3), as bench takes the script's;
		 * a plan without them holds any batch of up to its tokens. */
		const struct plan_variant *pv = plan_get_variant(plan, i);
		sizes[i].key.tokens = (uint32_t)pv->tokens;
		sizes[i].key.requests = pv->requests;
		sizes[i].key.uniform_decode = (pv->key_flags & PLAN_KEY_UNIFORM) != 0;
		sizes[i].mode = pv->mode;
		sizes[i].variant = i;
	}
	if ((rc = serve_cli_sched(self, c, plan, sizes, nv, max_tokens, &t, &ro.sched)) !=
	    BCG_EXIT_OK ||
	    (rc = serve_cli_fits(name, &t, &ro.sched)) != BCG_EXIT_OK)
		goto out;
	rc = BCG_EXIT_RUNTIME;
	if (engine_open_above(plan, o->backend, max_tokens, ro.sched.token_budget, &e, &err) != 0)
		goto fail;
	if (e->note[0] != '\0' && !o->quiet)
		bcg_note("%s", e->note);
	if (!o->quiet)
		serve_cli_warn_modelled(path, &ro.sched);
	if (o->nvtx)
		e->nvtx = nvtx_open();
	for (built = 0; built < nv; built++)
		if (instantiate_variant(e, built, &x[built], NULL, &err) != 0)
			goto fail;
	if (serve_run(e, sizes, x, nv, &t, &ro, &res, &err) != 0)
		goto fail;
	if (o->quiet) {
		rc = res.checked && !res.check.pass ? BCG_EXIT_NEGATIVE : BCG_EXIT_OK;
		goto out;
	}
	if (o->json) {
		struct plan_json *j = plan_json_new(stdout);
		if (j == NULL) {
			bcg_error("out of memory");
			goto out;
		}
		plan_json_object_begin(j);
		plan_json_key(j, "plan");
		plan_json_string(j, path);
		plan_json_key(j, "backend");
		plan_json_string(j, e->be->name);
		plan_json_key(j, "device");
		plan_json_string(j, e->info.device);
		serve_report_json_setup(j, name, &t, &ro.sched);
		serve_report_json(j, &res, ro.policy);
		plan_json_object_end(j);
		plan_json_free(j);
	} else {
		printf("plan         %s\n", path);
		print_backend(stdout, e);
		serve_report_setup(stdout, name, &t, &ro.sched);
		serve_report_text(stdout, &res, ro.policy);
	}
	rc = res.checked && !res.check.pass ? BCG_EXIT_NEGATIVE : BCG_EXIT_OK;
	if (fflush(stdout) != 0)
		rc = BCG_EXIT_RUNTIME;
	goto out;
fail:
	engine_report(&err, plan, NULL);
	rc = err.exit;
out:
	if (e != NULL) {
		for (uint32_t i = 0; i < built && x != NULL; i++)
			exec_release(e, &x[i]);
		nvtx_close(e->nvtx);
		engine_close(e);
	}
	serve_result_release(&res);
	serve_trace_release(&t);
	free(sizes);
	free(x);
	return rc;
}

/* --- bench --trace ------------------------------------------------------- */

/* The policies bench compares, in the order of its table. */
static const int bench_policies[] = { SERVE_POLICY_EAGER, SERVE_POLICY_BREAKABLE,
                                      SERVE_POLICY_FULL, SERVE_POLICY_FULL_AND_BREAKABLE };
#define NPOLICIES 4

struct bench_policy_row {
	int                 asked;
	int                 ran;
	char                why[256];
	struct serve_result res;
};

/* Choose each op's implementation at every capture size, as capture
 * does: the program gets a variant per size, whose choices the launches
 * at that size take. */
static int serve_bench_tune(struct engine *e, struct script *s, struct engine_error *err)
{
	struct tune_opts to = { .measure = 1, .margin = TUNE_MARGIN };
	struct tune_cache tc = { 0 };
	int rc = 0;

	e->use_choices = 1;
	for (uint32_t i = 0; i < s->nvariants && rc == 0; i++) {
		struct plan_variant pv = { .tokens = s->variants[i].tokens,
		                           .mode = PLAN_MODE_BREAKABLE };
		struct plan_diag diag = { 0 };
		uint32_t vi;
		if (plan_add_variant(s->program, &pv, &vi, &diag) != 0)
			rc = engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s", diag.message);
		else
			rc = tune_variant(e, s->program, vi, &to, &tc, NULL, err);
	}
	tune_cache_release(&tc);
	return rc;
}

static void bench_print_text(const char *script, const struct engine *e, const char *name,
                             const struct serve_trace *t, const struct serve_sched_opts *so,
                             const struct bench_policy_row *rows)
{
	const struct serve_result *first = NULL;
	double eager_tps = 0.0;

	for (int p = 0; p < NPOLICIES; p++) {
		if (rows[p].ran && first == NULL)
			first = &rows[p].res;
		if (rows[p].ran && bench_policies[p] == SERVE_POLICY_EAGER)
			eager_tps = rows[p].res.output_per_s;
	}
	printf("script       %s\n", script);
	print_backend(stdout, e);
	serve_report_setup(stdout, name, t, so);
	if (first != NULL)
		printf("steps        %llu (%llu preemptions; at most %u requests, %u tokens a batch)\n",
		       (unsigned long long)first->sched.steps,
		       (unsigned long long)first->sched.preemptions, first->sched.max_reqs,
		       first->sched.max_tokens);
	printf("\n%-18s %10s %8s %10s %10s %10s %8s %6s %9s %6s\n", "policy", "tokens/s",
	       "/eager", "step p50", "p90", "p99", "padding", "full", "breakable", "eager");
	for (int p = 0; p < NPOLICIES; p++) {
		const struct bench_policy_row *w = &rows[p];
		const struct serve_result *r = &w->res;
		const struct serve_dispatch *d = &r->disp;
		double steps = d->steps ? (double)d->steps : 1.0;
		if (!w->asked)
			continue;
		if (!w->ran) {
			printf("%-18s not run: %s\n", serve_policy_name(bench_policies[p]), w->why);
			continue;
		}
		printf("%-18s %10.1f %7.2fx %7.3f ms %7.3f ms %7.3f ms %7.1f%% %5.1f%% %8.1f%% %5.1f%%\n",
		       serve_policy_name(bench_policies[p]), r->output_per_s,
		       eager_tps > 0 ? r->output_per_s / eager_tps : 0.0, r->step_median, r->step_p90,
		       r->step_p99, 100.0 * serve_dispatch_waste(d),
		       100.0 * (double)d->mode_steps[PLAN_MODE_FULL] / steps,
		       100.0 * (double)d->mode_steps[PLAN_MODE_BREAKABLE] / steps,
		       100.0 * (double)d->mode_steps[PLAN_MODE_EAGER] / steps);
	}
	for (int p = 0; p < NPOLICIES; p++) {
		const struct serve_result *r = &rows[p].res;
		const char *pname = serve_policy_name(bench_policies[p]);
		if (!rows[p].ran || !r->checked)
			continue;
		char text[320];
		stash_verdict_text(&r->check, text, sizeof text);
		printf("check        %s: %s\n", pname, text);
	}
}

static void bench_print_json(const char *script, const struct engine *e, const char *name,
                             const struct serve_trace *t, const struct serve_sched_opts *so,
                             const struct bench_policy_row *rows)
{
	struct plan_json *j = plan_json_new(stdout);

	if (j == NULL)
		return;
	plan_json_object_begin(j);
	plan_json_key(j, "script");
	plan_json_string(j, script);
	plan_json_key(j, "backend");
	plan_json_string(j, e->be->name);
	plan_json_key(j, "device");
	plan_json_string(j, e->info.device);
	serve_report_json_setup(j, name, t, so);
	plan_json_key(j, "policies");
	plan_json_array_begin(j);
	for (int p = 0; p < NPOLICIES; p++) {
		if (!rows[p].asked)
			continue;
		plan_json_object_begin(j);
		if (!rows[p].ran) {
			plan_json_key(j, "policy");
			plan_json_string(j, serve_policy_name(bench_policies[p]));
			plan_json_key(j, "ran");
			plan_json_bool(j, 0);
			plan_json_key(j, "why");
			plan_json_string(j, rows[p].why);
		} else {
			plan_json_key(j, "ran");
			plan_json_bool(j, 1);
			serve_report_json(j, &rows[p].res, bench_policies[p]);
		}
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_object_end(j);
	plan_json_free(j);
}

/* Capture TOKENS in MODE into X; 1 when MODE cannot run the program (WHY
 * says why), 0 captured, -1 error. */
static int bench_capture(struct engine *e, int64_t tokens, int mode, struct exec_variant *x,
                         char *why, size_t whylen, struct engine_error *err)
{
	struct schedule sched;
	int rc;

	if (schedule_build(e->plan, mode, &sched, NULL, why, whylen) != 0)
		return 1;
	rc = exec_capture(e, tokens, mode, sched.items, sched.nitems, 0, x, NULL, err);
	schedule_release(&sched);
	return rc == 0 ? 0 : -1;
}

int serve_cmd_bench(const struct cmd_entry *self, const char *path, const struct serve_cli *c,
                    const struct serve_cmd_opts *o)
{
	struct engine_error err = { .op = PLAN_NONE };
	struct bench_policy_row rows[NPOLICIES];
	struct serve_trace t = { 0 };
	struct serve_run_opts ro = { .warmup = o->warmup, .check = o->check };
	struct serve_size *sizes = NULL;
	struct exec_variant *x = NULL;
	struct script *s = NULL;
	struct engine *e = NULL;
	uint32_t n = 0;
	char name[512], full_why[256] = "";
	int rc, any_full = 0;

	memset(rows, 0, sizeof rows);
	if ((rc = serve_cli_trace(self, c, &t, name, sizeof name)) != BCG_EXIT_OK)
		return rc;
	if ((rc = cmd_read_script(path, &s)) != BCG_EXIT_OK)
		goto out;
	sizes = calloc(2 * (size_t)s->nvariants, sizeof *sizes);
	x = calloc(2 * (size_t)s->nvariants, sizeof *x);
	if (sizes == NULL || x == NULL) {
		bcg_error("out of memory");
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	for (uint32_t i = 0; i < s->nvariants; i++) {
		sizes[i].key.tokens = (uint32_t)s->variants[i].tokens;
		sizes[i].key.requests = (uint32_t)s->variants[i].requests;
	}
	if ((rc = serve_cli_sched(self, c, s->program, sizes, s->nvariants,
	                          s->variants[s->nvariants - 1].tokens, &t, &ro.sched)) != BCG_EXIT_OK ||
	    (rc = serve_cli_fits(name, &t, &ro.sched)) != BCG_EXIT_OK)
		goto out;
	if (engine_open_at(s->program, o->backend, s->variants[s->nvariants - 1].tokens,
	                   ro.sched.token_budget, &e, &err) != 0)
		goto fail;
	if (e->note[0] != '\0')
		bcg_note("%s", e->note);
	serve_cli_warn_modelled(path, &ro.sched);
	engine_set_features(e, o->features);
	if (o->tune && serve_bench_tune(e, s, &err) != 0)
		goto fail;
	if (o->nvtx)
		e->nvtx = nvtx_open();

	/* Every size in breakable mode, then in full mode where it can run. */
	for (int mode = PLAN_MODE_BREAKABLE; mode <= PLAN_MODE_FULL; mode++)
		for (uint32_t i = 0; i < s->nvariants; i++) {
			int64_t tokens = s->variants[i].tokens;
			int got = bench_capture(e, tokens, mode, &x[n], full_why, sizeof full_why, &err);
			if (got < 0)
				goto fail;
			if (got > 0)
				break;   /* the program has no full form: no size has */
			/* The script's keys: a uniform size holds uniform decode
			 * batches of as many requests as tokens. */
			sizes[n] = (struct serve_size){
				{ (uint32_t)tokens,
				  s->variants[i].uniform ? (uint32_t)tokens
				                         : (uint32_t)s->variants[i].requests,
				  s->variants[i].uniform != 0 }, mode, n };
			any_full |= mode == PLAN_MODE_FULL;
			n++;
		}

	for (int p = 0; p < NPOLICIES; p++) {
		struct bench_policy_row *w = &rows[p];
		w->asked = c->policy < 0 || c->policy == bench_policies[p];
		if (!w->asked)
			continue;
		if (bench_policies[p] == SERVE_POLICY_FULL && !any_full) {
			snprintf(w->why, sizeof w->why, "%s", full_why);
			continue;
		}
		ro.policy = bench_policies[p];
		if (serve_run(e, sizes, x, n, &t, &ro, &w->res, &err) != 0)
			goto fail;
		w->ran = 1;
	}
	if (o->json)
		bench_print_json(path, e, name, &t, &ro.sched, rows);
	else
		bench_print_text(path, e, name, &t, &ro.sched, rows);
	rc = BCG_EXIT_OK;
	for (int p = 0; p < NPOLICIES; p++)
		if (rows[p].ran && rows[p].res.checked && !rows[p].res.check.pass)
			rc = BCG_EXIT_NEGATIVE;
	if (fflush(stdout) != 0)
		rc = BCG_EXIT_RUNTIME;
	goto out;
fail:
	engine_report(&err, s->program, path);
	rc = err.exit;
out:
	if (e != NULL) {
		for (uint32_t i = 0; i < n; i++)
			exec_release(e, &x[i]);
		nvtx_close(e->nvtx);
		engine_close(e);
	}
	for (int p = 0; p < NPOLICIES; p++)
		serve_result_release(&rows[p].res);
	serve_trace_release(&t);
	script_free(s);
	free(sizes);
	free(x);
	return rc;
}
