/*
 * cmd-bench.c - bcgtool bench: eager, breakable and full replay of one
 * script side by side, on one arena, in one process.
 *
 * Each mode is captured at the same token count and measured the same way
 * (engine/replay.h): step time, the GPU's busy time, the host's issue time.
 * Full mode is skipped, with the reason, when an op has no graph-safe form.
 * Before the modes run, each op's implementation is chosen by measurement
 * at T tokens, as capture chooses it (engine/tune.h), unless --no-tune:
 * every mode runs the same kernels.
 * When both breakable and full ran, the difference between them divided by
 * the breakpoints is what one break costs: the GPU time it adds (the eager
 * kernel's own launch, the graph ending and the next one starting, minus
 * what the graph-safe form of the op costs inside the full graph) and the
 * step time it adds.
 *
 * With --trace or --synthetic, bench serves requests under each dispatch
 * policy instead (serve/cli.h): eager, breakable, full, full_and_breakable.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "engine/replay.h"
#include "engine/tune.h"
#include "script/script.h"
#include "serve/cli.h"
#include "util.h"

static int cmd_bench_exec(int argc, char **argv);

const struct cmd_entry cmd_bench_entry = {
	.name = "bench",
	.usage = "[--backend B] [--tokens T] [--steps N] [--warmup W] [--no-tune] [--no-pdl] "
	         "[--json] [--trace FILE | --synthetic SPEC] [--policy P] [--sched SPEC] [--check] "
	         "SCRIPT",
	.summary = "compare eager, breakable and full replay of a script",
	.options =
		"  -b, --backend B  host, cuda or auto (default: $BCG_BACKEND, else auto:\n"
		"                   cuda when a GPU can be used, else host)\n"
		"  -t, --tokens T   tokens per step (default: the largest capture size)\n"
		"  -n, --steps N    timed steps per mode (default 100)\n"
		"  -w, --warmup W   untimed steps first (default 10)\n"
		"      --no-tune    run each op's default implementation instead of the\n"
		"                   fastest measured one\n"
		"      --no-pdl     launch kernels without programmatic dependent launch\n"
		"      --json       print JSON instead of a table\n"
		"      --trace FILE serve the requests of a JSON Lines trace under each\n"
		"                   dispatch policy\n"
		"      --synthetic SPEC\n"
		"                   the same with a synthetic trace (requests=N,rate=R,\n"
		"                   prompt=D,output=D,seed=S)\n"
		"      --policy P   only this policy: full_and_breakable, breakable, full\n"
		"                   or eager\n"
		"      --sched SPEC scheduler limits (budget=N,requests=N,chunk=N,blocks=N,\n"
		"                   block-size=N,step-us=N)\n"
		"      --check      with a trace: compare each policy's outputs with eager\n"
		"                   steps; exit 1 on a mismatch\n"
		"  -h, --help       show this help\n",
	.exec = cmd_bench_exec,
};

static const int bench_modes[] = { PLAN_MODE_EAGER, PLAN_MODE_BREAKABLE, PLAN_MODE_FULL };
#define NMODES 3

struct bench_row {
	int                 ran;
	char                why[256];    /* why it did not run */
	uint32_t            segments;
	uint32_t            breakpoints;
	struct replay_stats st;
	/* the breaks by why their op breaks the graph, in order of first
	 * appearance (attention's host length, the experts' counts, ...) */
	uint32_t            nwhy;
	struct {
		char     detail[160];
		uint32_t breaks;
	} why_break[8];
};

/* Count break I of ROW under its reason. */
static void bench_count_why(struct bench_row *row, const struct sched_item *it)
{
	uint32_t w;

	for (w = 0; w < row->nwhy; w++)
		if (strcmp(row->why_break[w].detail, it->detail) == 0)
			break;
	if (w == row->nwhy) {
		if (row->nwhy == sizeof row->why_break / sizeof row->why_break[0])
			return;
		snprintf(row->why_break[w].detail, sizeof row->why_break[w].detail, "%s", it->detail);
		row->nwhy++;
	}
	row->why_break[w].breaks++;
}

static int bench_mode(struct engine *e, int64_t tokens, int mode, uint64_t warmup, uint64_t steps,
                      struct bench_row *row, struct engine_error *err)
{
	struct schedule sched;
	struct exec_variant x;
	int rc;

	if (schedule_build(e->plan, mode, &sched, NULL, row->why, sizeof row->why) != 0)
		return 0;   /* not possible in this mode: reported, not an error */
	for (uint32_t i = 0; i < sched.nitems; i++) {
		if (sched.items[i].kind == PLAN_ITEM_SEGMENT) {
			row->segments++;
		} else {
			row->breakpoints++;
			bench_count_why(row, &sched.items[i]);
		}
	}
	rc = exec_capture(e, tokens, mode, sched.items, sched.nitems, 0, &x, NULL, err);
	schedule_release(&sched);
	if (rc != 0)
		return -1;
	char label[32];
	snprintf(label, sizeof label, "bench: %s", plan_mode_name(mode));
	e->progress_label = label;
	rc = replay_measure(e, &x, warmup, steps, steps < 10 ? (uint32_t)steps : 10, &row->st, err);
	e->progress_label = NULL;
	exec_release(e, &x);
	row->ran = rc == 0;
	return rc;
}

/* Choose each op's implementation at TOKENS tokens: the program gets a
 * variant for them, whose choices every mode's launches then take. */
static int bench_tune(struct engine *e, plan_t *program, int64_t tokens,
                      const struct tune_opts *o, struct engine_error *err)
{
	struct plan_variant pv = { .tokens = tokens, .mode = PLAN_MODE_BREAKABLE };
	struct tune_cache tc = { 0 };
	struct plan_diag diag = { 0 };
	uint32_t vi;
	int rc;

	if (plan_add_variant(program, &pv, &vi, &diag) != 0)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s", diag.message);
	e->use_choices = 1;
	rc = tune_variant(e, program, vi, o, &tc, NULL, err);
	tune_cache_release(&tc);
	return rc;
}

/* What one break adds over the full step, in microseconds: GPU busy time
 * and step time. 0 when breakable or full did not run or there are no
 * breaks. */
static int bench_break_cost(const struct bench_row *rows, double *busy_us, double *step_us)
{
	const struct bench_row *br = &rows[1], *full = &rows[2];

	*busy_us = *step_us = 0.0;
	if (!br->ran || !full->ran || br->st.partial || full->st.partial || br->breakpoints == 0)
		return 0;
	*busy_us = (br->st.busy_median - full->st.busy_median) * 1e3 / br->breakpoints;
	*step_us = (br->st.step_median - full->st.step_median) * 1e3 / br->breakpoints;
	return 1;
}

/* The host backend's table: the CPU both issues and computes, so its busy
 * time, the graphs' savings and a break's cost are not shown. */
static void print_text_host(const struct bench_row *rows)
{
	const struct bench_row *eager = &rows[0];

	printf("%-9s  %8s  %11s  %11s  %11s  %10s\n", "mode", "segments", "breakpoints", "step",
	       "host issue", "step/eager");
	for (int m = 0; m < NMODES; m++) {
		const struct bench_row *r = &rows[m];
		if (!r->ran) {
			printf("%-9s  not run: %s\n", plan_mode_name(bench_modes[m]), r->why);
			continue;
		}
		printf("%-9s  %8u  %11u  %8.3f ms  %8.3f ms  ", plan_mode_name(bench_modes[m]),
		       r->segments, r->breakpoints, r->st.step_median, r->st.host_median);
		if (r->st.partial)
			printf("%10s  partial: %llu steps, interrupted\n", "-",
			       (unsigned long long)r->st.steps);
		else
			printf("%10.3f\n", eager->ran && eager->st.step_median > 0
			                           ? r->st.step_median / eager->st.step_median : 0.0);
	}
}

/* The breakable run's breaks by why their op breaks the graph: what the
 * script is, not a timing, so every backend prints it. */
static void bench_print_why(const struct bench_row *rows)
{
	for (uint32_t w = 0; rows[1].ran && w < rows[1].nwhy; w++)
		printf("  %u break%s: %s\n", rows[1].why_break[w].breaks,
		       rows[1].why_break[w].breaks == 1 ? "" : "s", rows[1].why_break[w].detail);
}

static void print_text(const char *path, const struct engine *e, int64_t tokens,
                       const struct bench_row *rows)
{
	const struct bench_row *eager = &rows[0];

	printf("script   %s\n", path);
	printf("backend  %s%s%s%s\n", e->be->name, e->info.device[0] ? " (" : "", e->info.device,
	       e->info.device[0] ? ")" : "");
	printf("tokens   %lld\n\n", (long long)tokens);
	if (e->be->kind != PLAN_BACKEND_CUDA) {
		print_text_host(rows);
		bench_print_why(rows);
		return;
	}
	printf("%-9s  %8s  %11s  %11s  %11s  %11s  %10s  %9s\n", "mode", "segments", "breakpoints",
	       "step", "gpu busy", "host issue", "step/eager", "step/busy");
	for (int m = 0; m < NMODES; m++) {
		const struct bench_row *r = &rows[m];
		if (!r->ran) {
			printf("%-9s  not run: %s\n", plan_mode_name(bench_modes[m]), r->why);
			continue;
		}
		if (r->st.partial) {
			printf("%-9s  %8u  %11u  %8.3f ms  %11s  %8.3f ms  %10s  %9s  partial: %llu "
			       "steps, interrupted\n", plan_mode_name(bench_modes[m]), r->segments,
			       r->breakpoints, r->st.step_median, "-", r->st.host_median, "-", "-",
			       (unsigned long long)r->st.steps);
			continue;
		}
		printf("%-9s  %8u  %11u  %8.3f ms  %8.3f ms  %8.3f ms  %10.3f  %9.3f\n",
		       plan_mode_name(bench_modes[m]), r->segments, r->breakpoints, r->st.step_median,
		       r->st.busy_median, r->st.host_median,
		       eager->ran && eager->st.step_median > 0 ? r->st.step_median / eager->st.step_median : 0.0,
		       r->st.busy_median > 0 ? r->st.step_median / r->st.busy_median : 0.0);
	}
	if (eager->ran)
		printf("\neager host submission: %.3f ms per step (what the graphs remove)\n",
		       eager->st.host_median);
	double busy_us, step_us;
	if (bench_break_cost(rows, &busy_us, &step_us))
		printf("a break over the full step: %+.2f us of gpu busy time, %+.2f us of step time "
		       "(%u breaks)\n", busy_us, step_us, rows[1].breakpoints);
	bench_print_why(rows);
}

static void print_json(const char *path, const struct engine *e, int64_t tokens,
                       const struct bench_row *rows)
{
	struct plan_json *j = plan_json_new(stdout);

	if (j == NULL)
		return;
	plan_json_object_begin(j);
	plan_json_key(j, "script");
	plan_json_string(j, path);
	plan_json_key(j, "backend");
	plan_json_string(j, e->be->name);
	plan_json_key(j, "device");
	plan_json_string(j, e->info.device);
	plan_json_key(j, "tokens");
	plan_json_int(j, tokens);
	plan_json_key(j, "modes");
	plan_json_array_begin(j);
	for (int m = 0; m < NMODES; m++) {
		const struct bench_row *r = &rows[m];
		plan_json_object_begin(j);
		plan_json_key(j, "mode");
		plan_json_string(j, plan_mode_name(bench_modes[m]));
		plan_json_key(j, "ran");
		plan_json_bool(j, r->ran);
		plan_json_key(j, "partial");
		plan_json_bool(j, r->ran && r->st.partial);
		if (!r->ran) {
			plan_json_key(j, "why");
			plan_json_string(j, r->why);
		} else {
			plan_json_key(j, "segments");
			plan_json_uint(j, r->segments);
			plan_json_key(j, "breakpoints");
			plan_json_uint(j, r->breakpoints);
			plan_json_key(j, "step_ms");
			plan_json_double(j, r->st.step_median);
			plan_json_key(j, "step_p90_ms");
			plan_json_double(j, r->st.step_p90);
			plan_json_key(j, "busy_ms");
			plan_json_double(j, r->st.busy_median);
			plan_json_key(j, "host_ms");
			plan_json_double(j, r->st.host_median);
			plan_json_key(j, "gap_ms");
			plan_json_double(j, r->st.gap_median);
		}
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	double busy_us, step_us;
	if (bench_break_cost(rows, &busy_us, &step_us)) {
		plan_json_key(j, "break_cost");
		plan_json_object_begin(j);
		plan_json_key(j, "breaks");
		plan_json_uint(j, rows[1].breakpoints);
		plan_json_key(j, "busy_us");
		plan_json_double(j, busy_us);
		plan_json_key(j, "step_us");
		plan_json_double(j, step_us);
		plan_json_key(j, "why");
		plan_json_array_begin(j);
		for (uint32_t w = 0; w < rows[1].nwhy; w++) {
			plan_json_object_begin(j);
			plan_json_key(j, "breaks");
			plan_json_uint(j, rows[1].why_break[w].breaks);
			plan_json_key(j, "detail");
			plan_json_string(j, rows[1].why_break[w].detail);
			plan_json_object_end(j);
		}
		plan_json_array_end(j);
		plan_json_object_end(j);
	}
	plan_json_object_end(j);
	plan_json_free(j);
}

static int cmd_bench_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "tokens", required_argument, NULL, 't' },
		{ "steps", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "no-pdl", no_argument, NULL, 'P' },
		{ "no-tune", no_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'J' },
		{ "help", no_argument, NULL, 'h' },
		{ "check", no_argument, NULL, 'C' },
		SERVE_CLI_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_bench_entry;
	struct serve_cli serve;
	int fixed = 0, check = 0;   /* fixed: --tokens or --steps */
	const char *backend = cmd_default_backend();
	long long tokens = 0, steps = 100, warmup = 10;
	int json = 0, c, rc = BCG_EXIT_RUNTIME;
	uint32_t features = PLAN_FEATURE_PDL;
	struct tune_opts tune = { .measure = 1, .margin = TUNE_MARGIN };
	struct script *s = NULL;
	struct engine *e = NULL;
	struct engine_error err = { .op = PLAN_NONE };
	struct bench_row rows[NMODES];
	int64_t t64;

	memset(rows, 0, sizeof rows);
	serve_cli_init(&serve);
	while ((c = cmd_getopt(self, argc, argv, "b:t:n:w:h", longopts)) != -1) {
		switch (c) {
		case 'b': backend = optarg; break;
		case 't':
			if (cmd_parse_int(self, "--tokens", optarg, 1, 1 << 20, &tokens) != 0)
				return BCG_EXIT_USAGE;
			fixed = 1;
			break;
		case 'n':
			if (cmd_parse_int(self, "--steps", optarg, 1, 1000000, &steps) != 0)
				return BCG_EXIT_USAGE;
			fixed = 1;
			break;
		case 'w':
			if (cmd_parse_int(self, "--warmup", optarg, 0, 1000000, &warmup) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 'P': features &= ~PLAN_FEATURE_PDL; break;
		case 'T': tune.measure = 0; break;
		case 'J': json = 1; break;
		case 'C': check = 1; break;
		case CMD_HELP: return BCG_EXIT_OK;
		default:
			if (serve_cli_option(self, &serve, c, optarg) != 1)
				return BCG_EXIT_USAGE;
			break;
		}
	}
	if (optind + 1 != argc)
		return cmd_usage_error(self, optind == argc ? "no script given" : "one script only");
	if (cmd_check_backend(self, backend) != 0)
		return BCG_EXIT_USAGE;
	if ((rc = serve_cli_active(self, &serve)) != 0) {
		struct serve_cmd_opts so = { .backend = backend, .warmup = (uint64_t)warmup,
		                             .check = check, .nvtx = 1, .json = json,
		                             .tune = tune.measure, .features = features };
		if (rc < 0)
			return BCG_EXIT_USAGE;
		if (fixed)
			return cmd_usage_error(self, "--steps and --tokens do not apply to a trace");
		return serve_cmd_bench(self, argv[optind], &serve, &so);
	}
	if (check)
		return cmd_usage_error(self, "--check needs --trace or --synthetic");
	if ((rc = cmd_read_script(argv[optind], &s)) != BCG_EXIT_OK)
		return rc;
	t64 = tokens ? tokens : s->variants[s->nvariants - 1].tokens;
	if (engine_open_at(s->program, backend, t64, 0, &e, &err) != 0)
		goto fail;
	if (e->note[0] != '\0')
		bcg_note("%s", e->note);
	engine_set_features(e, features);
	if (bench_tune(e, s->program, t64, &tune, &err) != 0)
		goto fail;
	e->nvtx = nvtx_open();
	for (int m = 0; m < NMODES && !bcg_interrupted(); m++)
		if (bench_mode(e, t64, bench_modes[m], (uint64_t)warmup, (uint64_t)steps, &rows[m], &err) != 0)
			goto fail;
	for (int m = 0; m < NMODES; m++)
		if (bcg_interrupted() && !rows[m].ran && rows[m].why[0] == '\0')
			snprintf(rows[m].why, sizeof rows[m].why, "interrupted");
	if (json) {
		print_json(argv[optind], e, t64, rows);
	} else {
		if (e->be->kind != PLAN_BACKEND_CUDA)
			cmd_note_host_timings();
		print_text(argv[optind], e, t64, rows);
	}
	for (int m = 0; m < NMODES; m++)
		free(rows[m].st.item_busy);
	rc = fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
	if (bcg_interrupted())
		rc = bcg_signal_status(bcg_interrupted());
	goto out;
fail:
	for (int m = 0; m < NMODES; m++)
		free(rows[m].st.item_busy);
	engine_report(&err, s->program, argv[optind]);
	rc = err.exit;
out:
	if (e != NULL)
		nvtx_close(e->nvtx);
	engine_close(e);
	script_free(s);
	return rc;
}
