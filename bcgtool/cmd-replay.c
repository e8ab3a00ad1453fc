/*
 * cmd-replay.c - bcgtool replay: instantiate a plan and replay N steps,
 * with NVTX ranges naming every step, segment and breakpoint.
 *
 * The token count is dispatched to its padded variant (or run eagerly
 * above the largest capture size); feeds and vars advance every step. The
 * report gives the step time against the GPU's own busy time: a replay
 * that leaves the GPU idle between segments shows a gap.
 *
 * With --trace or --synthetic, replay serves requests instead
 * (serve/cli.h): a scheduler forms each step's batch, and the dispatch
 * policy runs it on a variant or eagerly.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "engine/replay.h"
#include "serve/cli.h"
#include "util.h"

static int cmd_replay_exec(int argc, char **argv);

const struct cmd_entry cmd_replay_entry = {
	.name = "replay",
	.usage = "[--backend B] [--steps N] [--warmup W] [--tokens T] [--check] [--no-nvtx] "
	         "[--json] [--trace FILE | --synthetic SPEC] [--policy P] [--sched SPEC] PLAN",
	.summary = "replay a plan for a number of steps",
	.options =
		"  -b, --backend B  host, cuda or auto (default: $BCG_BACKEND, else auto:\n"
		"                   cuda when a GPU can be used, else host)\n"
		"  -n, --steps N    timed steps (default 100)\n"
		"  -w, --warmup W   untimed steps first (default 10)\n"
		"  -t, --tokens T   tokens per step, padded up to a captured size\n"
		"                   (default: the largest capture size)\n"
		"      --check      compare the outputs and state with eager steps run\n"
		"                   from the same initial state; exit 1 on a mismatch\n"
		"      --no-nvtx    emit no NVTX ranges\n"
		"      --json       print JSON instead of tables\n"
		"      --trace FILE serve the requests of a JSON Lines trace\n"
		"      --synthetic SPEC\n"
		"                   serve a synthetic trace (requests=N,rate=R,prompt=D,\n"
		"                   output=D,seed=S)\n"
		"      --policy P   full_and_breakable (default), breakable, full or eager\n"
		"      --sched SPEC scheduler limits (budget=N,requests=N,chunk=N,blocks=N,\n"
		"                   block-size=N,step-us=N)\n"
		"  -h, --help       show this help\n",
	.exec = cmd_replay_exec,
};

static void print_text(const plan_t *plan, const char *path, const struct replay_opts *o,
                       const struct replay_result *r, const char *backend, const char *device)
{
	const struct replay_stats *st = &r->stats;

	printf("plan         %s\n", path);
	printf("backend      %s%s%s%s\n", backend, device[0] ? " (" : "", device, device[0] ? ")" : "");
	if (r->variant == PLAN_NONE)
		printf("tokens       %lld: above every capture size, run eagerly (%u ops)\n",
		       (long long)r->tokens, r->breakpoints);
	else
		printf("tokens       %lld -> variant %lld (%s: %u segments, %u breakpoints)\n",
		       (long long)r->tokens, (long long)r->run_tokens, plan_mode_name(r->mode),
		       r->segments, r->breakpoints);
	if (r->variant != PLAN_NONE)
		printf("instantiate  %u match, %u drift, %u unchecked\n", r->inst.matched,
		       r->inst.drifted, r->inst.unchecked);
	printf("steps        %llu (after %llu warm-up)\n\n", (unsigned long long)o->steps,
	       (unsigned long long)o->warmup);
	printf("%-12s %10s %10s %10s\n", "", "median", "p90", "p99");
	printf("%-12s %7.3f ms %7.3f ms %7.3f ms\n", "step", st->step_median, st->step_p90,
	       st->step_p99);
	/* On the host backend the "device" is the CPU that also issues. */
	printf("%-12s %7.3f ms\n", strcmp(backend, "cuda") == 0 ? "gpu busy" : "cpu busy",
	       st->busy_median);
	printf("%-12s %7.3f ms\n", "host issue", st->host_median);
	printf("%-12s %7.3f ms (%.1f%% of the step)\n", "idle gap", st->gap_median,
	       st->step_median > 0 ? 100.0 * st->gap_median / st->step_median : 0.0);
	printf("%-12s %7.3f\n", "step/busy",
	       st->busy_median > 0 ? st->step_median / st->busy_median : 0.0);
	if (r->checked) {
		if (!r->check_pass)
			printf("check        FAILED: %s\n", r->check_detail);
		else if (r->check_exact)
			printf("check        bit-exact with eager\n");
		else
			printf("check        within bounds of eager (relative error %.2g)\n",
			       r->check_error);
	}
	(void)plan;
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
	plan_json_key(j, "steps");
	plan_json_uint(j, o->steps);
	plan_json_key(j, "warmup");
	plan_json_uint(j, o->warmup);
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
			plan_json_string(j, pv->items[i].kind == PLAN_ITEM_SEGMENT ? "segment" : "break");
			plan_json_key(j, "index");
			plan_json_uint(j, pv->items[i].index);
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
		plan_json_object_begin(j);
		plan_json_key(j, "pass");
		plan_json_bool(j, r->check_pass);
		plan_json_key(j, "bit_exact");
		plan_json_bool(j, r->check_exact);
		plan_json_key(j, "rel_error");
		plan_json_double(j, r->check_error);
		plan_json_key(j, "detail");
		plan_json_string(j, r->check_detail);
		plan_json_object_end(j);
	}
	plan_json_object_end(j);
	plan_json_free(j);
}

static int cmd_replay_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "steps", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "tokens", required_argument, NULL, 't' },
		{ "check", no_argument, NULL, 'C' },
		{ "no-nvtx", no_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		SERVE_CLI_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_replay_entry;
	struct serve_cli serve;
	int fixed = 0;   /* --steps or --tokens: a fixed batch */
	struct replay_opts o = {
		.backend = cmd_default_backend(), .steps = 100, .warmup = 10, .nvtx = 1,
	};
	struct replay_result res = { 0 };
	struct engine_error err = { .op = PLAN_NONE };
	plan_t *plan = NULL;
	long long v;
	int json = 0, c, rc;

	serve_cli_init(&serve);
	while ((c = cmd_getopt(self, argc, argv, "b:n:w:t:h", longopts)) != -1) {
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
			break;
		case 't':
			if (cmd_parse_int(self, "--tokens", optarg, 1, 1 << 20, &v) != 0)
				return BCG_EXIT_USAGE;
			o.tokens = v;
			fixed = 1;
			break;
		case 'C': o.check = 1; break;
		case 'N': o.nvtx = 0; break;
		case 'J': json = 1; break;
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
		if ((rc = cmd_read_plan(argv[optind], &plan)) != BCG_EXIT_OK)
			return rc;
		rc = serve_cmd_replay(self, plan, argv[optind], &serve, &so);
		plan_free(plan);
		return rc;
	}
	o.busy_steps = o.steps < 10 ? (uint32_t)o.steps : 10;

	if ((rc = cmd_read_plan(argv[optind], &plan)) != BCG_EXIT_OK)
		return rc;
	if (replay_plan(plan, &o, &res, &err) != 0) {
		engine_report(&err, plan, NULL);
		rc = err.exit;
		goto out;
	}
	if (res.note[0] != '\0')
		bcg_note("%s", res.note);
	if (res.variant == PLAN_NONE)
		bcg_note("%lld tokens is above every capture size: running eagerly",
		         (long long)res.tokens);
	if (json)
		print_json(plan, argv[optind], &o, &res, res.backend, res.device);
	else
		print_text(plan, argv[optind], &o, &res, res.backend, res.device);
	rc = res.checked && !res.check_pass ? BCG_EXIT_NEGATIVE : BCG_EXIT_OK;
	if (fflush(stdout) != 0)
		rc = BCG_EXIT_RUNTIME;
out:
	replay_result_release(&res);
	plan_free(plan);
	return rc;
}
