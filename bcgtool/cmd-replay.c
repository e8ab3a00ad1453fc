/*
 * cmd-replay.c - bcgtool replay: instantiate a plan and replay N steps,
 * with NVTX ranges naming every step, segment and breakpoint.
 *
 * The token count is dispatched to its padded variant (or run eagerly
 * above the largest capture size); feeds and vars advance every step. The
 * report gives the step time against the GPU's own busy time: a replay
 * that leaves the GPU idle between segments shows a gap. With --stream it
 * also gives the mean step of the same steps issued again with no time
 * stamp between them (engine/replay.h says why the two differ).
 *
 * With --prompt it generates greedily instead (engine/generate.h): the
 * prompt's chunk on the variant its length dispatches to, then every
 * token on the variant for one token, and prints the token ids. Both
 * variants are instantiated and run --warmup times first, so that the
 * timed prefill is a step like the others, not the graphs' first build.
 * With --trace or --synthetic, replay serves requests instead
 * (serve/cli.h): a scheduler forms each step's batch, and the dispatch
 * policy runs it on a variant or eagerly.
 * A tensor-parallel plan (several ranks in one file) replays on as many
 * ranks (dist/dist.h: threads on the host, one process a GPU on cuda),
 * each rank its own plan, every step together; rank 0 prints.
 * A recorded plan goes to record/recorded-replay.c: every variant in turn
 * (or --variant), its breaks' launches as recorded, step times against
 * the recorded run's.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd-tp.h"
#include "dist/dist.h"
#include "engine/generate.h"
#include "engine/replay.h"
#include "profile/replay-trace.h"
#include "record/rebuild.h"
#include "record/recorded-replay.h"
#include "serve/cli.h"
#include "util.h"

static int cmd_replay_exec(int argc, char **argv);

const struct cmd_entry cmd_replay_entry = {
	.name = "replay",
	.usage = "[--backend B] [--steps N] [--warmup W] [--tokens T[,T...]] [--share-exec] "
	         "[--check] [--stream] [--var NAME=START:LIMIT]... [--no-nvtx] "
	         "[--json] [--trace-json FILE] [--prompt IDS] [--generate N] [--logits FILE] "
	         "[--trace FILE | --synthetic SPEC] [--policy P] [--sched SPEC] "
	         "[--variant V] [--fill F] [--seed S] [--rebase] [--pace P] [--flush-l2] "
	         "[--timeout S] [--nccl-mem M] PLAN",
	.summary = "replay a plan for a number of steps",
	.options =
		"  -b, --backend B  host, cuda or auto (default: $BCG_BACKEND, else auto:\n"
		"                   cuda when a GPU can be used, else host)\n"
		"  -n, --steps N    timed steps (default 100)\n"
		"  -w, --warmup W   untimed steps first (default 10; with --prompt, on\n"
		"                   each token count the generation runs at, before it\n"
		"                   starts from a reset state: default 1)\n"
		"  -t, --tokens T   tokens per step, padded up to a captured size\n"
		"                   (default: the largest capture size); a list T1,T2,...\n"
		"                   alternates: step S at the (S mod N)th size\n"
		"      --share-exec instantiate every variant, segments of one topology\n"
		"                   sharing an executable, updated to the size before\n"
		"                   its launch whenever another size ran on it since\n"
		"      --check      compare the outputs and state with eager steps run\n"
		"                   from the same initial state; exit 1 on a mismatch\n"
		"      --stream     then the same steps again with no time stamp between\n"
		"                   them, one before and one after: the mean step, as\n"
		"                   CUDA-graph benchmarks report it\n"
		"      --var NAME=START:LIMIT\n"
		"                   step the var NAME from START to LIMIT, then back to\n"
		"                   START, instead of over the plan's range (which must\n"
		"                   hold it); NAME=V keeps it at V (repeatable)\n"
		"      --no-nvtx    emit no NVTX ranges\n"
		"      --json       print JSON instead of tables\n"
		"      --trace-json FILE\n"
		"                   write the busy pass's steps, item by item, as a Chrome\n"
		"                   trace (ui.perfetto.dev): a host and a device track\n"
		"  -p, --prompt IDS generate greedily from the prompt IDS (\"1,2,3\", or\n"
		"                   @FILE) instead of timing steps: its chunk on the\n"
		"                   variant it dispatches to, each token after on the\n"
		"                   variant for one token\n"
		"  -g, --generate N tokens to generate (default 1)\n"
		"      --logits FILE\n"
		"                   write the last step's scores to FILE as f32\n"
		"      --trace FILE serve the requests of a JSON Lines trace\n"
		"      --synthetic SPEC\n"
		"                   serve a synthetic trace (requests=N,rate=R,prompt=D,\n"
		"                   output=D,seed=S)\n"
		"      --policy P   full_and_breakable (default), breakable, full or eager\n"
		"      --sched SPEC scheduler limits (budget=N,requests=N,chunk=N,blocks=N,\n"
		"                   block-size=N,step-us=N)\n"
		"      --variant V  recorded plans: replay only variant V (its number or\n"
		"                   label; default: every variant in turn)\n"
		"      --fill F     recorded plans: fill memory from the snapshot (default;\n"
		"                   zeros where none was kept), with zeros, or random\n"
		"      --seed S     the seed of --fill random (default 1)\n"
		"      --rebase     recorded plans: make every allocation anywhere, not at\n"
		"                   its recorded address, and patch the addresses\n"
		"      --pace P     recorded plans: step (default: each step waited for\n"
		"                   before the next), none (back to back, the host\n"
		"                   running ahead) or recorded (as step, with the GPU\n"
		"                   idle between items as long as it was recorded)\n"
		"      --flush-l2   recorded plans: write over twice the L2's size before\n"
		"                   each step, outside its timed range\n"
		"      --timeout S  tensor-parallel plans: a rank silent this long in a\n"
		"                   collective fails the replay (default 60)\n"
		"      --nccl-mem M tensor-parallel plans: default or symmetric, the memory\n"
		"                   of the collectives' operands (default: the plan's; see\n"
		"                   capture)\n"
		"  -h, --help       show this help\n",
	.exec = cmd_replay_exec,
};

/* Var I of PLAN as the steps followed it: the plan's, or --var's range. */
static struct plan_var replay_var(const plan_t *plan, const struct replay_opts *o, uint32_t i)
{
	struct plan_var v = *plan_get_var(plan, i);

	for (uint32_t k = 0; k < o->nvars; k++)
		if (strcmp(o->vars[k].name, v.name) == 0) {
			v.start = o->vars[k].start;
			v.limit = o->vars[k].limit;
		}
	return v;
}

static void print_text(const plan_t *plan, const char *path, const struct replay_opts *o,
                       const struct replay_result *r, const char *backend, const char *device)
{
	const struct replay_stats *st = &r->stats;

	printf("plan         %s\n", path);
	printf("backend      %s%s%s%s\n", backend, device[0] ? " (" : "", device, device[0] ? ")" : "");
	if (plan_get_dist(plan)->world > 1)
		printf("ranks        %u, every step on all of them together (rank 0's figures)\n",
		       plan_get_dist(plan)->world);
	if (r->variant == PLAN_NONE)
		printf("tokens       %lld: above every capture size, run eagerly (%u op%s)\n",
		       (long long)r->tokens, r->breakpoints, BCG_S(r->breakpoints));
	else
		printf("tokens       %lld -> variant %lld (%s: %u segment%s, %u breakpoint%s)\n",
		       (long long)r->tokens, (long long)r->run_tokens, plan_mode_name(r->mode),
		       r->segments, BCG_S(r->segments), r->breakpoints, BCG_S(r->breakpoints));
	for (uint32_t k = 0; k < o->nvars; k++)
		printf("var          %s from %lld to %lld (--var), +%lld a step\n", o->vars[k].name,
		       (long long)o->vars[k].start, (long long)o->vars[k].limit,
		       (long long)plan_get_var(plan, plan_find_var(plan, o->vars[k].name))->step);
	if (r->ncycle > 0) {
		printf("alternating  %u sizes:", r->ncycle);
		for (uint32_t k = 0; k < r->ncycle; k++)
			printf("%s%lld", k ? "," : " ", (long long)o->cycle[k]);
		printf(", one a step\n");
	}
	if (r->variant != PLAN_NONE)
		printf("instantiate  %u match, %u drift, %u unchecked\n", r->inst.matched,
		       r->inst.drifted, r->inst.unchecked);
	if (r->variant != PLAN_NONE) {
		char mem[32];
		printf("executables  %u for %u segment%s%s, graph memory %s\n", r->inst.execs,
		       r->inst.nsegments, BCG_S(r->inst.nsegments),
		       r->share ? " of every variant (--share-exec)" : "",
		       bcg_human_bytes(r->inst.exec_bytes, mem, sizeof mem));
	}
	if (r->weights > 0)
		printf("weights      %u sources, %u changed since the capture\n", r->weights,
		       r->weights_changed);
	if (st->partial) {
		printf("steps        %llu of %llu (after %llu warm-up)\n",
		       (unsigned long long)st->steps, (unsigned long long)o->steps,
		       (unsigned long long)o->warmup);
		printf("partial      interrupted: the steps measured so far; no busy time%s%s\n\n",
		       o->check ? ", no check" : "",
		       o->stream && st->stream_steps == 0 ? ", no stream time" : "");
	} else {
		printf("steps        %llu (after %llu warm-up)\n\n", (unsigned long long)o->steps,
		       (unsigned long long)o->warmup);
	}
	printf("%-12s %10s %10s %10s\n", "", "median", "p90", "p99");
	printf("%-12s %7.3f ms %7.3f ms %7.3f ms\n", "step", st->step_median, st->step_p90,
	       st->step_p99);
	if (st->stream_steps > 0)
		printf("%-12s %7.3f ms a step, the mean of %llu steps issued back to back with no "
		       "time stamp between them\n", "stream", st->stream_mean,
		       (unsigned long long)st->stream_steps);
	if (st->partial || strcmp(backend, "cuda") != 0) {
		/* On the host backend the "device" is the CPU that also issues:
		 * its busy time and gaps say nothing of graphs. */
		printf("%-12s %7.3f ms\n", "host issue", st->host_median);
		if (st->partial)
			return;
	} else {
		printf("%-12s %7.3f ms\n", "gpu busy", st->busy_median);
		printf("%-12s %7.3f ms\n", "host issue", st->host_median);
		printf("%-12s %7.3f ms (%.1f%% of the step)\n", "idle gap", st->gap_median,
		       st->step_median > 0 ? 100.0 * st->gap_median / st->step_median : 0.0);
		printf("%-12s %7.3f\n", "step/busy",
		       st->busy_median > 0 ? st->step_median / st->busy_median : 0.0);
	}
	if (r->checked) {
		char text[320];
		stash_verdict_text(&r->check, text, sizeof text);
		printf("check        %s\n", text);
	}
}

static void print_json(const plan_t *plan, const char *path, const struct replay_opts *o,
                       const struct replay_result *r, const char *backend, const char *device)
{
	const struct replay_stats *st = &r->stats;
	struct plan_json *j = plan_json_new(stdout);

	if (j == NULL)
		return;
	plan_json_object_begin(j);
	plan_json_key(j, "plan");
	plan_json_string(j, path);
	plan_json_key(j, "backend");
	plan_json_string(j, backend);
	plan_json_key(j, "device");
	plan_json_string(j, device);
	plan_json_key(j, "tokens");
	plan_json_int(j, r->tokens);
	plan_json_key(j, "tokens_cycle");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < r->ncycle; k++)
		plan_json_int(j, o->cycle[k]);
	plan_json_array_end(j);
	plan_json_key(j, "share_exec");
	plan_json_bool(j, r->share);
	plan_json_key(j, "executables");
	plan_json_uint(j, r->inst.execs);
	plan_json_key(j, "exec_bytes");
	plan_json_uint(j, r->inst.exec_bytes);
	plan_json_key(j, "variant_tokens");
	if (r->variant == PLAN_NONE)
		plan_json_null(j);
	else
		plan_json_int(j, r->run_tokens);
	plan_json_key(j, "mode");
	plan_json_string(j, plan_mode_name(r->mode));
	plan_json_key(j, "segments");
	plan_json_uint(j, r->segments);
	plan_json_key(j, "breakpoints");
	plan_json_uint(j, r->breakpoints);
	plan_json_key(j, "instantiate");
	plan_json_object_begin(j);
	plan_json_key(j, "matched");
	plan_json_uint(j, r->inst.matched);
	plan_json_key(j, "drifted");
	plan_json_uint(j, r->inst.drifted);
	plan_json_key(j, "unchecked");
	plan_json_uint(j, r->inst.unchecked);
	plan_json_object_end(j);
	plan_json_key(j, "partial");
	plan_json_bool(j, st->partial);
	plan_json_key(j, "weights");
	plan_json_uint(j, r->weights);
	plan_json_key(j, "weights_changed");
	plan_json_uint(j, r->weights_changed);
	plan_json_key(j, "steps");
	plan_json_uint(j, st->partial ? st->steps : o->steps);
	plan_json_key(j, "warmup");
	plan_json_uint(j, o->warmup);
	plan_json_key(j, "vars");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < plan_count_vars(plan); i++) {
		struct plan_var v = replay_var(plan, o, i);
		plan_json_object_begin(j);
		plan_json_key(j, "name");
		plan_json_string(j, v.name);
		plan_json_key(j, "start");
		plan_json_int(j, v.start);
		plan_json_key(j, "step");
		plan_json_int(j, v.step);
		plan_json_key(j, "limit");
		plan_json_int(j, v.limit);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_key(j, "step_ms");
	plan_json_object_begin(j);
	plan_json_key(j, "median");
	plan_json_double(j, st->step_median);
	plan_json_key(j, "p90");
	plan_json_double(j, st->step_p90);
	plan_json_key(j, "p99");
	plan_json_double(j, st->step_p99);
	plan_json_key(j, "mean");
	plan_json_double(j, st->step_mean);
	plan_json_object_end(j);
	plan_json_key(j, "stream");
	if (st->stream_steps == 0) {
		plan_json_null(j);
	} else {
		plan_json_object_begin(j);
		plan_json_key(j, "steps");
		plan_json_uint(j, st->stream_steps);
		plan_json_key(j, "mean_ms");
		plan_json_double(j, st->stream_mean);
		plan_json_object_end(j);
	}
	plan_json_key(j, "busy_ms");
	plan_json_double(j, st->busy_median);
	plan_json_key(j, "host_ms");
	plan_json_double(j, st->host_median);
	plan_json_key(j, "gap_ms");
	plan_json_double(j, st->gap_median);
	plan_json_key(j, "items");
	plan_json_array_begin(j);
	if (st->item_busy != NULL && r->variant != PLAN_NONE) {
		const struct plan_variant *pv = plan_get_variant(plan, r->variant);
		for (uint32_t i = 0; i < pv->nitems && i < st->nitems; i++) {
			plan_json_object_begin(j);
			plan_json_key(j, "kind");
			plan_json_string(j, pv->items[i].kind == PLAN_ITEM_SEGMENT ? "segment" : "breakpoint");
			plan_json_key(j, "index");
			plan_json_uint(j, pv->items[i].index);
			plan_json_key(j, "name");
			plan_json_string(j, pv->items[i].kind == PLAN_ITEM_SEGMENT ? "" :
			                 plan_get_breakpoint(plan, pv->items[i].index)->name);
			plan_json_key(j, "busy_ms");
			plan_json_double(j, st->item_busy[i]);
			plan_json_object_end(j);
		}
	}
	plan_json_array_end(j);
	plan_json_key(j, "check");
	if (!r->checked) {
		plan_json_null(j);
	} else {
		stash_verdict_json(j, &r->check);
	}
	plan_json_object_end(j);
	plan_json_free(j);
}

/* Generation's step on the plan's variants, each instantiated once. */
struct replay_gen {
	uint32_t              nv;
	struct exec_variant  *x;
	int                  *have;
};

static int replay_gen_step(void *ctx, struct engine *e, int64_t real, uint64_t step, int64_t *ran,
                           uint64_t *setup_ns, struct engine_error *err)
{
	struct replay_gen *g = ctx;
	uint32_t vi = plan_dispatch_lookup(e->plan, real);

	if (vi == PLAN_NONE)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "a step of %lld tokens is above "
		                   "every capture size of the plan", (long long)real);
	if (!g->have[vi]) {
		/* its eager warm-up, the captures, instantiation and upload */
		uint64_t t0 = bcg_now_ns();
		if (instantiate_variant(e, vi, &g->x[vi], NULL, err) != 0)
			return -1;
		g->have[vi] = 1;
		if (e->be->sync(e->b, err->msg, sizeof err->msg) != 0)
			return engine_fail_backend(err, "waiting for the graphs' upload");
		*setup_ns = bcg_now_ns() - t0;
	}
	*ran = plan_get_variant(e->plan, vi)->tokens;
	if (exec_step(e, &g->x[vi], step, NULL, err) != 0)
		return -1;
	return e->be->sync(e->b, err->msg, sizeof err->msg) != 0
		? engine_fail_backend(err, "waiting for the step") : 0;
}

static int replay_generate(const plan_t *plan, const char *path, const char *backend,
                           const char *prompt, uint64_t n, uint64_t warmup, const char *logits,
                           int json, int lead)
{
	struct gen_opts o = { .ntokens = n, .logits = logits, .warmup = warmup };
	struct gen_result r = { 0 };
	struct replay_gen g = { .nv = plan_count_variants(plan) };
	struct gen_driver d = { replay_gen_step, &g };
	struct engine *e = NULL;
	struct engine_error err = { .op = PLAN_NONE };
	int32_t *ids = NULL;
	int64_t max_tokens = 0;
	uint32_t scores;
	int rc;

	if (gen_parse_prompt(prompt, &ids, &o.nprompt, err.msg, sizeof err.msg) != 0) {
		bcg_error("--prompt: %s", err.msg);
		return BCG_EXIT_USAGE;
	}
	o.prompt = ids;
	if (gen_find_feed(plan, &scores) == PLAN_NONE) {
		bcg_error("%s: the plan has no prompt feed: generation needs one", path);
		free(ids);
		return BCG_EXIT_USAGE;
	}
	g.x = calloc(g.nv + 1, sizeof *g.x);
	g.have = calloc(g.nv + 1, sizeof *g.have);
	if (g.x == NULL || g.have == NULL) {
		bcg_error("out of memory");
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	for (uint32_t i = 0; i < g.nv; i++)
		if (plan_get_variant(plan, i)->tokens > max_tokens)
			max_tokens = plan_get_variant(plan, i)->tokens;
	if (engine_open(plan, backend, max_tokens, &e, &err) != 0)
		goto fail;
	if (e->note[0] != '\0' && lead)
		bcg_note("%s", e->note);
	engine_warn_weights(e);
	if (generate(e, &o, &d, &r, &err) != 0)
		goto fail;
	if (lead)
		gen_print(stdout, &o, &r, json, "plan", path, e->be->name, e->info.device);
	rc = fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
	goto out;
fail:
	engine_report(&err, plan, NULL);
	rc = err.exit;
out:
	for (uint32_t i = 0; i < g.nv && g.have; i++)
		if (g.have[i])
			exec_release(e, &g.x[i]);
	free(g.x);
	free(g.have);
	gen_result_release(&r);
	engine_close(e);
	free(ids);
	return rc;
}

/* What every rank of a replay needs (one rank: the plan's only one). */
struct replay_ctx {
	const struct cmd_entry *self;
	const plan_t           *plan;       /* rank 0's, holding the others */
	const char             *path, *prompt, *logits, *trace;
	uint64_t                ngen, gen_warmup;
	int                     json;
	struct replay_opts      o;
	const struct serve_cli *serve;      /* non-NULL: serve a trace */
	struct serve_cmd_opts   so;
	int                     nccl_mem;   /* --nccl-mem; -1: the plan's */
};

/* One rank's replay: its plan; rank 0 (or the only rank) prints. */
static int replay_rank(struct dist_comm *comm, void *arg)
{
	struct replay_ctx *c = arg;
	int lead = comm == NULL || comm->rank == 0;
	const plan_t *plan = comm != NULL ? plan_get_rank(c->plan, (uint32_t)comm->rank) : c->plan;
	struct replay_result res = { 0 };
	struct engine_error err = { .op = PLAN_NONE };
	int rc;

	if (plan == NULL) {
		bcg_error("%s: rank %d is not in the plan", c->path, comm->rank);
		return BCG_EXIT_USAGE;
	}
	if (c->serve != NULL) {
		struct serve_cmd_opts so = c->so;
		so.quiet = !lead;
		return serve_cmd_replay(c->self, plan, c->path, c->serve, &so);
	}
	if (c->prompt != NULL)
		return replay_generate(plan, c->path, c->o.backend, c->prompt, c->ngen,
		                       c->gen_warmup, lead ? c->logits : NULL, c->json, lead);
	if (replay_plan(plan, &c->o, &res, &err) != 0) {
		cmd_tp_report(&err, plan, NULL, comm);
		rc = err.exit;
		goto out;
	}
	rc = res.checked && !res.check.pass ? BCG_EXIT_NEGATIVE : BCG_EXIT_OK;
	if (res.stats.partial)
		rc = bcg_signal_status(bcg_interrupted());
	if (!lead)
		goto out;
	if (res.note[0] != '\0')
		bcg_note("%s", res.note);
	if (res.variant == PLAN_NONE)
		bcg_note("%lld tokens is above every capture size: running eagerly",
		         (long long)res.tokens);
	if (c->trace != NULL) {
		char msg[512];
		if (replay_write_trace(c->trace, &res, msg, sizeof msg) != 0) {
			bcg_error("%s: %s", c->trace, msg);
			rc = BCG_EXIT_RUNTIME;
			goto out;
		}
	}
	if (c->json) {
		print_json(plan, c->path, &c->o, &res, res.backend, res.device);
	} else {
		if (strcmp(res.backend, "cuda") != 0)
			cmd_note_host_timings();
		print_text(plan, c->path, &c->o, &res, res.backend, res.device);
	}
	if (fflush(stdout) != 0)
		rc = BCG_EXIT_RUNTIME;
out:
	replay_result_release(&res);
	return rc;
}

/* The ranks of CTX's plan: one replays in place; several run together. */
static int replay_ranks(struct replay_ctx *c, double timeout_s)
{
	uint32_t world = plan_get_dist(c->plan)->world;
	struct dist_opts dopts;

	int mem = c->nccl_mem >= 0 ? c->nccl_mem : (int)plan_get_dist(c->plan)->nccl_mem;
	int rc;

	if ((rc = cmd_tp_nccl_mem(c->self, c->nccl_mem, (int)world, NULL, NULL)) != BCG_EXIT_OK)
		return rc;
	if (world <= 1)
		return replay_rank(NULL, c);
	c->o.backend = cmd_tp_opts(&dopts, "replay", c->o.backend, (int)world, timeout_s);
	c->so.backend = c->o.backend;
	/* the plan's memory unless --nccl-mem says otherwise */
	if ((rc = cmd_tp_nccl_mem(c->self, mem, (int)world, c->o.backend, &dopts)) != BCG_EXIT_OK)
		return rc;
	return dist_run(&dopts, replay_rank, c);
}

/* --tokens: one count, or up to REPLAY_CYCLE_MAX separated by commas. */
static int replay_parse_tokens(const struct cmd_entry *self, const char *arg, int64_t *out,
                               uint32_t *n)
{
	const char *p = arg;

	*n = 0;
	for (;;) {
		char *end;
		long long x;
		errno = 0;
		x = strtoll(p, &end, 10);
		if (end == p || errno != 0 || x < 1 || x > (1 << 20) ||
		    (*end != ',' && *end != '\0') || *n == REPLAY_CYCLE_MAX) {
			cmd_usage_error(self, "--tokens takes whole numbers from 1 to %d, at most %d "
			                "separated by commas, not '%s'", 1 << 20, REPLAY_CYCLE_MAX,
			                arg);
			return -1;
		}
		out[(*n)++] = x;
		if (*end == '\0')
			return 0;
		p = end + 1;
	}
}

static int cmd_replay_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "steps", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "tokens", required_argument, NULL, 't' },
		{ "share-exec", no_argument, NULL, 'E' + 256 },
		{ "check", no_argument, NULL, 'C' },
		{ "stream", no_argument, NULL, 's' + 256 },
		{ "var", required_argument, NULL, 'A' + 256 },
		{ "no-nvtx", no_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'J' },
		{ "trace-json", required_argument, NULL, 'R' },
		{ "prompt", required_argument, NULL, 'p' },
		{ "generate", required_argument, NULL, 'g' },
		{ "logits", required_argument, NULL, 'L' },
		{ "variant", required_argument, NULL, 'V' + 256 },
		{ "fill", required_argument, NULL, 'F' + 256 },
		{ "seed", required_argument, NULL, 'S' + 256 },
		{ "rebase", no_argument, NULL, 'r' + 256 },
		{ "pace", required_argument, NULL, 'P' + 256 },
		{ "flush-l2", no_argument, NULL, 'l' + 256 },
		{ "timeout", required_argument, NULL, 'T' + 256 },
		{ "nccl-mem", required_argument, NULL, 'M' + 256 },
		{ "help", no_argument, NULL, 'h' },
		SERVE_CLI_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_replay_entry;
	const char *prompt = NULL, *logits = NULL;
	long long ngen = 0;
	struct serve_cli serve;
	int fixed = 0;   /* --steps or --tokens: a fixed batch */
	int warmup_given = 0;
	struct replay_opts o = {
		.backend = cmd_default_backend(), .steps = 100, .warmup = 10, .nvtx = 1,
	};
	struct replay_ctx ctx = { .self = &cmd_replay_entry, .nccl_mem = -1 };
	double timeout_s = CMD_TP_TIMEOUT;
	plan_t *plan = NULL;
	const char *trace = NULL;
	long long v;
	int64_t cycle[REPLAY_CYCLE_MAX];
	struct engine_var_range vars[ENGINE_VAR_RANGES_MAX];
	int json = 0, c, rc;
	struct recorded_opts ro = { .fill = RR_FILL_SNAPSHOT, .seed = 1 };
	int recorded_only = 0;   /* an option only recorded plans take */
	int script_only = 0;     /* one only script plans take */

	serve_cli_init(&serve);
	while ((c = cmd_getopt(self, argc, argv, "b:n:w:t:p:g:h", longopts)) != -1) {
		switch (c) {
		case 'b': o.backend = optarg; break;
		case 'n':
			if (cmd_parse_int(self, "--steps", optarg, 1, 10000000, &v) != 0)
				return BCG_EXIT_USAGE;
			o.steps = (uint64_t)v;
			fixed = 1;
			break;
		case 'w':
			if (cmd_parse_int(self, "--warmup", optarg, 0, 10000000, &v) != 0)
				return BCG_EXIT_USAGE;
			o.warmup = (uint64_t)v;
			warmup_given = 1;
			break;
		case 't':
			if (replay_parse_tokens(self, optarg, cycle, &o.ncycle) != 0)
				return BCG_EXIT_USAGE;
			o.tokens = cycle[0];
			o.cycle = o.ncycle > 1 ? cycle : NULL;
			if (o.ncycle < 2)
				o.ncycle = 0;
			fixed = 1;
			break;
		case 'E' + 256: o.share = 1; break;
		case 'C': o.check = 1; break;
		case 's' + 256: o.stream = 1; break;
		case 'A' + 256:
			if (cmd_parse_var(self, "--var", optarg, vars, &o.nvars) != 0)
				return BCG_EXIT_USAGE;
			o.vars = vars;
			break;
		case 'N': o.nvtx = 0; break;
		case 'J': json = 1; break;
		case 'R': trace = optarg; o.trace = 1; break;
		case 'p': prompt = optarg; break;
		case 'g':
			if (cmd_parse_int(self, "--generate", optarg, 1, 1 << 20, &ngen) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 'L': logits = optarg; break;
		case 'V' + 256: ro.variant = optarg; recorded_only = 1; break;
		case 'F' + 256:
			if ((ro.fill = recorded_fill_from_name(optarg)) < 0)
				return cmd_usage_error(self, "--fill: %s: snapshot, zeros or random",
				                       optarg);
			recorded_only = 1;
			break;
		case 'S' + 256:
			if (cmd_parse_int(self, "--seed", optarg, 0, INT64_MAX, &v) != 0)
				return BCG_EXIT_USAGE;
			ro.seed = (uint64_t)v;
			recorded_only = 1;
			break;
		case 'r' + 256: ro.flags |= RR_REBASE; recorded_only = 1; break;
		case 'P' + 256:
			if ((ro.pace = recorded_pace_from_name(optarg)) < 0)
				return cmd_usage_error(self, "--pace: %s: step, none or recorded",
				                       optarg);
			recorded_only = 1;
			break;
		case 'l' + 256: ro.flush_l2 = 1; recorded_only = 1; break;
		case 'T' + 256:
			if (cmd_tp_parse_timeout(self, optarg, &timeout_s) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 'M' + 256:
			if (cmd_tp_parse_nccl_mem(self, optarg, &ctx.nccl_mem) != 0)
				return BCG_EXIT_USAGE;
			break;
		case CMD_HELP: return BCG_EXIT_OK;
		default:
			if (serve_cli_option(self, &serve, c, optarg) != 1)
				return BCG_EXIT_USAGE;
			break;
		}
	}
	if (optind + 1 != argc)
		return cmd_usage_error(self, optind == argc ? "no plan given" : "one plan only");
	if (cmd_check_backend(self, o.backend) != 0)
		return BCG_EXIT_USAGE;
	if ((rc = serve_cli_active(self, &serve)) != 0) {
		struct serve_cmd_opts so = { .backend = o.backend, .warmup = o.warmup,
		                             .check = o.check, .nvtx = o.nvtx, .json = json };
		if (rc < 0)
			return BCG_EXIT_USAGE;
		if (fixed)
			return cmd_usage_error(self, "--steps and --tokens do not apply to a trace");
		if (o.nvars)
			return cmd_usage_error(self, "--var does not apply to a trace: its requests' "
			                       "lengths are the vars");
		if (o.share)
			return cmd_usage_error(self, "--share-exec does not apply to a trace");
		if (o.stream)
			return cmd_usage_error(self, "--stream does not apply to a trace");
		if ((rc = cmd_read_plan(argv[optind], &plan)) != BCG_EXIT_OK)
			return rc;
		if (plan_get_origin(plan) == PLAN_ORIGIN_RECORDED || recorded_only) {
			plan_free(plan);
			return cmd_usage_error(self, "a recorded plan replays its recorded steps: it "
			                       "serves no trace");
		}
		ctx.plan = plan;
		ctx.path = argv[optind];
		ctx.serve = &serve;
		ctx.so = so;
		ctx.o = o;
		rc = replay_ranks(&ctx, timeout_s);
		plan_free(plan);
		return rc;
	}
	o.busy_steps = o.steps < 10 ? (uint32_t)o.steps : 10;
	if (prompt == NULL && (ngen != 0 || logits != NULL))
		return cmd_usage_error(self, "%s needs --prompt", ngen ? "--generate" : "--logits");
	if (prompt != NULL && (o.check || o.tokens != 0))
		return cmd_usage_error(self, "--prompt takes neither --check nor --tokens");
	if (prompt != NULL && o.share)
		return cmd_usage_error(self, "--prompt takes no --share-exec");
	if (prompt != NULL && o.stream)
		return cmd_usage_error(self, "--prompt takes no --stream: a generation times "
		                       "each token's step");
	if (prompt != NULL && o.nvars)
		return cmd_usage_error(self, "--prompt takes no --var: a generation's vars are "
		                       "the tokens it has seen");
	if (trace != NULL && o.ncycle > 1)
		return cmd_usage_error(self, "--trace-json takes one size of --tokens");

	if ((rc = cmd_read_plan(argv[optind], &plan)) != BCG_EXIT_OK)
		return rc;
	script_only = o.tokens != 0 || o.check || o.stream || prompt != NULL || trace != NULL ||
		o.share || o.nvars;
	if (plan_get_origin(plan) == PLAN_ORIGIN_RECORDED) {
		if (script_only) {
			plan_free(plan);
			return cmd_usage_error(self, "--tokens, --check, --stream, --var, --prompt, "
			                       "--share-exec and --trace-json apply to script plans "
			                       "only");
		}
		ro.backend = o.backend;
		ro.json = json;
		ro.nvtx = o.nvtx;
		ro.steps = o.steps;
		ro.warmup = o.warmup;
		ro.busy_steps = o.busy_steps;
		rc = recorded_replay(plan, argv[optind], &ro);
		plan_free(plan);
		return rc;
	}
	if (recorded_only) {
		plan_free(plan);
		return cmd_usage_error(self, "--variant, --fill, --seed, --rebase, --pace and "
		                       "--flush-l2 apply to recorded plans only");
	}
	ctx.plan = plan;
	ctx.path = argv[optind];
	ctx.prompt = prompt;
	ctx.logits = logits;
	ctx.trace = trace;
	ctx.ngen = ngen ? (uint64_t)ngen : 1;
	ctx.gen_warmup = warmup_given ? o.warmup : 1;
	ctx.json = json;
	ctx.o = o;
	rc = replay_ranks(&ctx, timeout_s);
	plan_free(plan);
	return rc;
}
