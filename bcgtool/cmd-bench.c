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
 *
 * With --tp N the script is sharded over N ranks (cmd-tp.h: threads on the
 * host backend, one process a GPU on cuda) and every rank benches its
 * shard, the modes in step: in breakable mode each collective is a
 * breakpoint, in full mode it is captured. Each rank leaves its figures in
 * a file (beside $BCG_DIST_STORE under an external launcher, else in a
 * directory this process makes); rank 0 reads them all after a barrier and
 * prints its own table, every rank's figures and their maximum.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "cmd-tp.h"
#include "engine/replay.h"
#include "engine/tune.h"
#include "ops/op.h"
#include "script/script.h"
#include "serve/cli.h"
#include "util.h"

static int cmd_bench_exec(int argc, char **argv);

const struct cmd_entry cmd_bench_entry = {
	.name = "bench",
	.usage = "[--backend B] [--tokens T] [--steps N] [--warmup W] [--no-tune] [--no-pdl] "
	         "[--json] [--trace FILE | --synthetic SPEC] [--policy P] [--sched SPEC] [--check] "
	         "[--tp N [--timeout S] [--nccl-mem M]] SCRIPT",
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
		"      --tp N       tensor parallelism: shard the script over N ranks (1 to\n"
		"                   64; threads on the host backend, one process a GPU on\n"
		"                   cuda); every rank benches its shard, collectives as\n"
		"                   breakpoints (breakable) or captured (full); rank 0\n"
		"                   prints its table and every rank's figures\n"
		"      --timeout S  a rank silent this long in a collective fails the run\n"
		"                   (seconds; default 60)\n"
		"      --nccl-mem M default or symmetric: the collectives' operands in the\n"
		"                   arena, or in NCCL symmetric memory (ncclMemAlloc, one\n"
		"                   window a rank; NCCL 2.27 or later) for NCCL's\n"
		"                   low-latency kernels; a no-op on the host backend\n"
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
	uint32_t            coll_breaks; /* breakpoints that are collectives */
	double              coll_busy;   /* median GPU busy ms of one of them;
	                                    NAN when none or not measured */
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

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int bench_mode(struct engine *e, int64_t tokens, int mode, uint64_t warmup, uint64_t steps,
                      struct bench_row *row, struct engine_error *err)
{
	struct schedule sched;
	struct exec_variant x;
	double *busy = NULL;
	uint32_t nbusy = 0;
	int rc;

	row->coll_busy = NAN;
	if (schedule_build(e->plan, mode, &sched, NULL, row->why, sizeof row->why) != 0)
		return 0;   /* not possible in this mode: reported, not an error */
	for (uint32_t i = 0; i < sched.nitems; i++) {
		if (sched.items[i].kind == PLAN_ITEM_SEGMENT) {
			row->segments++;
		} else {
			row->breakpoints++;
			row->coll_breaks += op_is_collective(e->plan, sched.items[i].op_first);
			bench_count_why(row, &sched.items[i]);
		}
	}
	rc = exec_capture(e, tokens, mode, sched.items, sched.nitems, 0, &x, NULL, err);
	if (rc != 0) {
		schedule_release(&sched);
		return -1;
	}
	char label[32];
	snprintf(label, sizeof label, "bench: %s", plan_mode_name(mode));
	e->progress_label = label;
	rc = replay_measure(e, &x, warmup, steps, steps < 10 ? (uint32_t)steps : 10, &row->st, err);
	e->progress_label = NULL;
	exec_release(e, &x);
	row->ran = rc == 0;
	/* One collective break's GPU busy time: the median over them. */
	if (rc == 0 && row->coll_breaks > 0 && row->st.item_busy != NULL && !row->st.partial &&
	    (busy = calloc(row->coll_breaks, sizeof *busy)) != NULL) {
		for (uint32_t i = 0; i < sched.nitems && i < row->st.nitems; i++)
			if (sched.items[i].kind != PLAN_ITEM_SEGMENT &&
			    op_is_collective(e->plan, sched.items[i].op_first) &&
			    nbusy < row->coll_breaks)
				busy[nbusy++] = row->st.item_busy[i];
		if (nbusy > 0) {
			qsort(busy, nbusy, sizeof *busy, bench_cmp_double);
			row->coll_busy = nbusy % 2 ? busy[nbusy / 2]
			                           : (busy[nbusy / 2 - 1] + busy[nbusy / 2]) / 2;
		}
		free(busy);
	}
	schedule_release(&sched);
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
	if (e->comm != NULL && e->comm->world > 1) {
		printf("ranks    %d (tensor-parallel; ", e->comm->world);
		if (e->comm->nccl_version > 0)
			printf("NCCL %d.%d.%d", e->comm->nccl_version / 10000,
			       e->comm->nccl_version / 100 % 100, e->comm->nccl_version % 100);
		else
			printf("threads");
		printf("); this table is rank 0's\n");
	}
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

/*
 * --tp N: every rank's figures, gathered by rank 0.
 */

#define BENCH_FIG_MAGIC 0x46474342u     /* "BCGF" */

/* What one rank measured, as it travels to rank 0 (the same binary on
 * every rank of one run, so it is written as it lies in memory). */
struct bench_fig {
	uint32_t magic, size;
	int32_t  rank;
	struct {
		int32_t  ran, partial;
		uint32_t segments, breakpoints, coll_breaks;
		double   step, p90, busy, host;
		double   coll_busy;      /* ms; NAN: none or not measured */
	} m[NMODES];
	uint32_t ncoll;                  /* collectives a step */
	uint64_t coll_bytes;             /* the bytes their outputs hold a step */
	int32_t  have_cost;
	double   cost_busy_us, cost_step_us;
};

/* The collectives of PLAN (a rank's program): how many, and the bytes
 * their outputs hold at TOKENS (what each rank receives a step). */
static uint32_t bench_collectives(const plan_t *plan, int64_t tokens, uint64_t *bytes)
{
	uint32_t n = 0;

	*bytes = 0;
	for (uint32_t op = 0; op < plan_count_ops(plan); op++)
		if (op_is_collective(plan, op)) {
			n++;
			*bytes += plan_tensor_bytes(plan, plan_get_op(plan, op)->out[0], tokens);
		}
	return n;
}

static void bench_fill_fig(struct bench_fig *f, int rank, const plan_t *plan, int64_t tokens,
                           const struct bench_row *rows)
{
	memset(f, 0, sizeof *f);
	f->magic = BENCH_FIG_MAGIC;
	f->size = (uint32_t)sizeof *f;
	f->rank = rank;
	for (int m = 0; m < NMODES; m++) {
		const struct bench_row *r = &rows[m];
		f->m[m].ran = r->ran;
		f->m[m].partial = r->ran && r->st.partial;
		f->m[m].segments = r->segments;
		f->m[m].breakpoints = r->breakpoints;
		f->m[m].coll_breaks = r->coll_breaks;
		f->m[m].step = r->st.step_median;
		f->m[m].p90 = r->st.step_p90;
		f->m[m].busy = r->st.busy_median;
		f->m[m].host = r->st.host_median;
		f->m[m].coll_busy = r->ran ? r->coll_busy : NAN;
	}
	f->ncoll = bench_collectives(plan, tokens, &f->coll_bytes);
	f->have_cost = bench_break_cost(rows, &f->cost_busy_us, &f->cost_step_us);
}

/* Rank R's file: PREFIX followed by R. */
static char *bench_fig_path(const char *prefix, int r)
{
	return xasprintf("%s%d", prefix, r);
}

static int bench_fig_write(const char *prefix, const struct bench_fig *f)
{
	char *path = bench_fig_path(prefix, f->rank);
	struct bcg_output o;
	char why[512];
	int rc = -1;

	if (bcg_output_try_open(&o, path, 0, why, sizeof why) != 0 ||
	    bcg_output_try_commit(&o, f, sizeof *f, why, sizeof why) != 0)
		bcg_error("rank %d: %s: its figures: %s", f->rank, path, why);
	else
		rc = 0;
	free(path);
	return rc;
}

/* Read rank R's figures; rank 0 removes the file. */
static int bench_fig_read(const char *prefix, int r, struct bench_fig *f)
{
	char *path = bench_fig_path(prefix, r);
	FILE *in = fopen(path, "rb");
	size_t got = 0;
	int rc = -1;

	if (in != NULL) {
		got = fread(f, 1, sizeof *f, in);
		fclose(in);
	}
	if (in == NULL)
		bcg_error("rank 0: %s: rank %d's figures: %s", path, r, strerror(errno));
	else if (got != sizeof *f || f->magic != BENCH_FIG_MAGIC || f->size != sizeof *f ||
	         f->rank != r)
		bcg_error("rank 0: %s: rank %d's figures: not what this bcgtool writes (%zu bytes)",
		          path, r, got);
	else
		rc = 0;
	unlink(path);
	free(path);
	return rc;
}

/* The largest of every rank's figure: what a step of the group costs. */
static void bench_fig_max(const struct bench_fig *figs, int world, struct bench_fig *mx)
{
	*mx = figs[0];
	mx->rank = -1;
	for (int r = 1; r < world; r++) {
		const struct bench_fig *f = &figs[r];
		for (int m = 0; m < NMODES; m++) {
			mx->m[m].ran &= f->m[m].ran;
			mx->m[m].partial |= f->m[m].partial;
			mx->m[m].step = fmax(mx->m[m].step, f->m[m].step);
			mx->m[m].p90 = fmax(mx->m[m].p90, f->m[m].p90);
			mx->m[m].busy = fmax(mx->m[m].busy, f->m[m].busy);
			mx->m[m].host = fmax(mx->m[m].host, f->m[m].host);
			if (!isnan(f->m[m].coll_busy))
				mx->m[m].coll_busy = isnan(mx->m[m].coll_busy) ? f->m[m].coll_busy
				                     : fmax(mx->m[m].coll_busy, f->m[m].coll_busy);
		}
		mx->ncoll = f->ncoll > mx->ncoll ? f->ncoll : mx->ncoll;
		mx->coll_bytes = f->coll_bytes > mx->coll_bytes ? f->coll_bytes : mx->coll_bytes;
		if (f->have_cost && mx->have_cost) {
			mx->cost_busy_us = fmax(mx->cost_busy_us, f->cost_busy_us);
			mx->cost_step_us = fmax(mx->cost_step_us, f->cost_step_us);
		}
		mx->have_cost &= f->have_cost;
	}
}

static void bench_ms(char *buf, size_t len, int ran, double ms)
{
	if (ran)
		snprintf(buf, len, "%.3f ms", ms);
	else
		snprintf(buf, len, "-");
}

static void bench_ranks_row(const struct bench_fig *f, const char *who, int cuda)
{
	char a[NMODES][32], b[32], c[32], d[32], e[32];

	for (int m = 0; m < NMODES; m++)
		bench_ms(a[m], sizeof a[m], f->m[m].ran, f->m[m].step);
	printf("  %-5s %11s %11s %11s %11u %12s", who, a[0], a[1], a[2], f->ncoll,
	       bcg_human_bytes(f->coll_bytes, b, sizeof b));
	if (cuda) {
		if (isnan(f->m[1].coll_busy))
			snprintf(c, sizeof c, "-");
		else
			snprintf(c, sizeof c, "%.2f us", f->m[1].coll_busy * 1e3);
		if (f->have_cost) {
			snprintf(d, sizeof d, "%+.2f us", f->cost_busy_us);
			snprintf(e, sizeof e, "%+.2f us", f->cost_step_us);
		} else {
			snprintf(d, sizeof d, "-");
			snprintf(e, sizeof e, "-");
		}
		printf(" %16s %12s %12s", c, d, e);
	}
	printf("\n");
}

/* The collectives of rank 0's program as the plan names them, grouped by
 * kind and size: "2 all_reduce of 512 B: down.all_reduce, ...". */
static void bench_print_collectives(const plan_t *plan, int64_t tokens)
{
	uint32_t nops = plan_count_ops(plan);
	char *done = xcalloc(nops + 1, 1), label[64], b[32];

	for (uint32_t op = 0; op < nops; op++) {
		const struct plan_op *o = plan_get_op(plan, op);
		uint64_t bytes;
		uint32_t n = 0, shown = 0;
		if (done[op] || !op_is_collective(plan, op))
			continue;
		bytes = plan_tensor_bytes(plan, o->out[0], tokens);
		for (uint32_t k = op; k < nops; k++)
			if (!done[k] && op_is_collective(plan, k) &&
			    strcmp(plan_get_op(plan, k)->kind, o->kind) == 0 &&
			    plan_tensor_bytes(plan, plan_get_op(plan, k)->out[0], tokens) == bytes)
				n++;
		printf("  %u %s of %s:", n, o->kind, bcg_human_bytes(bytes, b, sizeof b));
		for (uint32_t k = op; k < nops; k++) {
			if (done[k] || !op_is_collective(plan, k) ||
			    strcmp(plan_get_op(plan, k)->kind, o->kind) != 0 ||
			    plan_tensor_bytes(plan, plan_get_op(plan, k)->out[0], tokens) != bytes)
				continue;
			done[k] = 1;
			if (shown < 4 || shown + 1 == n)
				printf("%s %s", shown ? "," : "", plan_op_label(plan, k, label, sizeof label));
			else if (shown == 4)
				printf(", ...");
			shown++;
		}
		printf("\n");
	}
	free(done);
}

static void print_text_ranks(const struct engine *e, int64_t tokens, const struct bench_fig *figs,
                             int world)
{
	int cuda = e->be->kind == PLAN_BACKEND_CUDA;
	struct bench_fig mx;
	char who[16];

	bench_fig_max(figs, world, &mx);
	printf("\nranks (median step time of each mode; collectives a step%s)\n",
	       cuda ? "; a collective break's GPU busy time (median) and what a break "
	              "adds over the full step" : "");
	printf("  %-5s %11s %11s %11s %11s %12s", "rank", "eager", "breakable", "full",
	       "collectives", "bytes");
	if (cuda)
		printf(" %16s %12s %12s", "coll. break busy", "break: busy", "break: step");
	printf("\n");
	for (int r = 0; r < world; r++) {
		snprintf(who, sizeof who, "%d", r);
		bench_ranks_row(&figs[r], who, cuda);
	}
	bench_ranks_row(&mx, "max", cuda);
	printf("\ncollectives of rank 0, as its plan names them (%u a step, in breakable mode "
	       "%u breakpoints, in full mode captured)\n", figs[0].ncoll, figs[0].m[1].coll_breaks);
	bench_print_collectives(e->plan, tokens);
}

static void json_fig(struct plan_json *j, const struct bench_fig *f)
{
	if (f->rank >= 0) {
		plan_json_key(j, "rank");
		plan_json_int(j, f->rank);
	}
	plan_json_key(j, "modes");
	plan_json_array_begin(j);
	for (int m = 0; m < NMODES; m++) {
		plan_json_object_begin(j);
		plan_json_key(j, "mode");
		plan_json_string(j, plan_mode_name(bench_modes[m]));
		plan_json_key(j, "ran");
		plan_json_bool(j, f->m[m].ran);
		plan_json_key(j, "partial");
		plan_json_bool(j, f->m[m].partial);
		if (f->m[m].ran) {
			plan_json_key(j, "segments");
			plan_json_uint(j, f->m[m].segments);
			plan_json_key(j, "breakpoints");
			plan_json_uint(j, f->m[m].breakpoints);
			plan_json_key(j, "collective_breaks");
			plan_json_uint(j, f->m[m].coll_breaks);
			plan_json_key(j, "step_ms");
			plan_json_double(j, f->m[m].step);
			plan_json_key(j, "step_p90_ms");
			plan_json_double(j, f->m[m].p90);
			plan_json_key(j, "busy_ms");
			plan_json_double(j, f->m[m].busy);
			plan_json_key(j, "host_ms");
			plan_json_double(j, f->m[m].host);
			plan_json_key(j, "collective_break_busy_ms");
			if (isnan(f->m[m].coll_busy))
				plan_json_null(j);
			else
				plan_json_double(j, f->m[m].coll_busy);
		}
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_key(j, "collectives");
	plan_json_uint(j, f->ncoll);
	plan_json_key(j, "collective_bytes");
	plan_json_uint(j, f->coll_bytes);
	plan_json_key(j, "break_cost");
	if (f->have_cost) {
		plan_json_object_begin(j);
		plan_json_key(j, "busy_us");
		plan_json_double(j, f->cost_busy_us);
		plan_json_key(j, "step_us");
		plan_json_double(j, f->cost_step_us);
		plan_json_object_end(j);
	} else {
		plan_json_null(j);
	}
}

/* The keys --tp N adds to bench --json (formats/json/bench.schema.json). */
static void json_ranks(struct plan_json *j, const struct engine *e, int64_t tokens,
                       const struct bench_fig *figs, int world)
{
	struct bench_fig mx;
	char label[64];

	bench_fig_max(figs, world, &mx);
	plan_json_key(j, "world");
	plan_json_int(j, world);
	plan_json_key(j, "nccl_version");
	plan_json_int(j, e->comm != NULL ? e->comm->nccl_version : 0);
	plan_json_key(j, "ranks");
	plan_json_array_begin(j);
	for (int r = 0; r < world; r++) {
		plan_json_object_begin(j);
		json_fig(j, &figs[r]);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_key(j, "max");
	plan_json_object_begin(j);
	json_fig(j, &mx);
	plan_json_object_end(j);
	plan_json_key(j, "collectives");
	plan_json_array_begin(j);
	for (uint32_t op = 0; op < plan_count_ops(e->plan); op++) {
		if (!op_is_collective(e->plan, op))
			continue;
		plan_json_object_begin(j);
		plan_json_key(j, "name");
		plan_json_string(j, plan_op_label(e->plan, op, label, sizeof label));
		plan_json_key(j, "kind");
		plan_json_string(j, plan_get_op(e->plan, op)->kind);
		plan_json_key(j, "bytes");
		plan_json_uint(j, plan_tensor_bytes(e->plan, plan_get_op(e->plan, op)->out[0], tokens));
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
}

static void print_json(const char *path, const struct engine *e, int64_t tokens,
                       const struct bench_row *rows, const struct bench_fig *figs, int world)
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
	if (world > 1)
		json_ranks(j, e, tokens, figs, world);
	plan_json_object_end(j);
	plan_json_free(j);
}

/* What every rank of a bench needs: the command line, and the script. */
struct bench_ctx {
	struct script   *s;
	const char      *path, *backend;
	int64_t          tokens;
	uint64_t         steps, warmup;
	uint32_t         features;
	struct tune_opts tune;
	int              json, world;
	const char      *fig_prefix;   /* --tp N: rank R's figures at this + R */
};

/* One rank (the only one without --tp): its shard, every mode, then, with
 * several ranks, the figures to rank 0, which prints. */
static int bench_rank(struct dist_comm *comm, void *arg)
{
	const struct bench_ctx *c = arg;
	int lead = comm == NULL || comm->rank == 0, world = comm != NULL ? comm->world : 1;
	plan_t *program = c->s->program, *own = NULL;
	struct tune_opts tune = c->tune;
	struct engine *e = NULL;
	struct engine_error err = { .op = PLAN_NONE };
	struct bench_row rows[NMODES];
	struct bench_fig *figs = NULL;
	char msg[512];
	int rc = BCG_EXIT_RUNTIME;

	memset(rows, 0, sizeof rows);
	if (world > 1) {
		if ((rc = cmd_tp_shard(c->s, c->path, c->world, comm->rank, &own)) != BCG_EXIT_OK)
			return rc;
		program = own;
		/* The ranks run the same kernels: each op's default, as capture
		 * --tp keeps them (each rank would measure its own noise). */
		tune.measure = 0;
		rc = BCG_EXIT_RUNTIME;
	}
	if (engine_open_at(program, c->backend, c->tokens, 0, &e, &err) != 0)
		goto fail;
	e->comm = comm;
	if (e->note[0] != '\0' && lead)
		bcg_note("%s", e->note);
	engine_set_features(e, c->features);
	if (bench_tune(e, program, c->tokens, &tune, &err) != 0)
		goto fail;
	e->nvtx = nvtx_open();
	for (int m = 0; m < NMODES && !bcg_interrupted(); m++) {
		/* the ranks start each mode together */
		if (world > 1 && dist_barrier(comm, msg, sizeof msg) != 0) {
			bcg_error("bench: %s", msg);
			goto out;
		}
		if (bench_mode(e, c->tokens, bench_modes[m], c->warmup, c->steps, &rows[m], &err) != 0)
			goto fail;
	}
	for (int m = 0; m < NMODES; m++)
		if (bcg_interrupted() && !rows[m].ran && rows[m].why[0] == '\0')
			snprintf(rows[m].why, sizeof rows[m].why, "interrupted");
	if (world > 1) {
		struct bench_fig mine;
		int bad = 0;
		bench_fill_fig(&mine, comm->rank, program, c->tokens, rows);
		if (bench_fig_write(c->fig_prefix, &mine) != 0)
			goto out;      /* the others fail at the barrier, naming this rank */
		if (dist_barrier(comm, msg, sizeof msg) != 0) {
			bcg_error("bench: %s", msg);
			goto out;
		}
		if (!lead) {
			rc = BCG_EXIT_OK;
			goto out;
		}
		figs = xcalloc((size_t)world, sizeof *figs);
		for (int r = 0; r < world; r++)
			bad |= bench_fig_read(c->fig_prefix, r, &figs[r]) != 0;
		if (bad)
			goto out;
	}
	if (c->json) {
		print_json(c->path, e, c->tokens, rows, figs, world);
	} else {
		if (e->be->kind != PLAN_BACKEND_CUDA)
			cmd_note_host_timings();
		print_text(c->path, e, c->tokens, rows);
		if (world > 1)
			print_text_ranks(e, c->tokens, figs, world);
	}
	rc = fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
	if (bcg_interrupted())
		rc = bcg_signal_status(bcg_interrupted());
	goto out;
fail:
	cmd_tp_report(&err, program, c->path, comm);
	rc = err.exit;
out:
	for (int m = 0; m < NMODES; m++)
		free(rows[m].st.item_busy);
	free(figs);
	if (e != NULL)
		nvtx_close(e->nvtx);
	engine_close(e);
	plan_free(own);
	return rc;
}

/* Where the ranks of --tp N leave their figures for rank 0: under an
 * external launcher, beside its store file (every rank sees it); else a
 * directory made here, before the ranks start (*DIR, removed after). */
static char *bench_fig_prefix(char **dir)
{
	const char *store = getenv("BCG_DIST_STORE"), *tmp = getenv("TMPDIR");
	int world, rank;
	char msg[256];

	*dir = NULL;
	if (dist_external(&world, &rank, msg, sizeof msg) == 1 && store != NULL && *store != '\0')
		return xasprintf("%s.bench.rank", store);
	*dir = xasprintf("%s/bcgtool-bench.XXXXXX", tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	if (mkdtemp(*dir) == NULL) {
		bcg_error("%s: cannot make a directory for the ranks' figures: %s", *dir,
		          strerror(errno));
		free(*dir);
		*dir = NULL;
		return NULL;
	}
	return xasprintf("%s/rank", *dir);
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
		{ "tp", required_argument, NULL, 'X' },
		{ "timeout", required_argument, NULL, 'W' },
		{ "nccl-mem", required_argument, NULL, 'M' + 256 },
		SERVE_CLI_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_bench_entry;
	struct serve_cli serve;
	int fixed = 0, check = 0, tp_given = 0;   /* fixed: --tokens or --steps */
	const char *backend = cmd_default_backend();
	long long tokens = 0, steps = 100, warmup = 10;
	int json = 0, c, rc = BCG_EXIT_RUNTIME, world = 1, nccl_mem = DIST_NCCL_MEM_DEFAULT;
	double timeout_s = CMD_TP_TIMEOUT;
	uint32_t features = PLAN_FEATURE_PDL;
	struct tune_opts tune = { .measure = 1, .margin = TUNE_MARGIN };
	struct bench_ctx ctx;
	struct dist_opts dopts;
	char *dir = NULL, *prefix = NULL;

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
		case 'X':
			if (cmd_tp_parse(self, optarg, &world) != 0)
				return BCG_EXIT_USAGE;
			tp_given = 1;
			break;
		case 'W':
			if (cmd_tp_parse_timeout(self, optarg, &timeout_s) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 'M' + 256:
			if (cmd_tp_parse_nccl_mem(self, optarg, &nccl_mem) != 0)
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
		if (tp_given)
			return cmd_usage_error(self, "--tp does not apply to a trace: capture --tp N "
			                       "and replay --trace serve a tensor-parallel plan");
		return serve_cmd_bench(self, argv[optind], &serve, &so);
	}
	if (check)
		return cmd_usage_error(self, "--check needs --trace or --synthetic");
	if ((rc = cmd_tp_nccl_mem(self, nccl_mem, world, NULL, NULL)) != BCG_EXIT_OK)
		return rc;
	memset(&ctx, 0, sizeof ctx);
	ctx.path = argv[optind];
	ctx.steps = (uint64_t)steps;
	ctx.warmup = (uint64_t)warmup;
	ctx.features = features;
	ctx.tune = tune;
	ctx.json = json;
	ctx.world = world;
	if ((rc = cmd_read_script(ctx.path, &ctx.s)) != BCG_EXIT_OK)
		return rc;
	ctx.tokens = tokens ? tokens : ctx.s->variants[ctx.s->nvariants - 1].tokens;
	/* Every rank's shard first: a script that cannot split fails once,
	 * before any work. */
	if (world > 1) {
		if ((rc = cmd_tp_check(ctx.s, ctx.path, world)) != BCG_EXIT_OK)
			goto out;
		if ((prefix = bench_fig_prefix(&dir)) == NULL) {
			rc = BCG_EXIT_RUNTIME;
			goto out;
		}
		ctx.fig_prefix = prefix;
	}
	ctx.backend = cmd_tp_opts(&dopts, "bench", backend, world, timeout_s);
	if ((rc = cmd_tp_nccl_mem(self, nccl_mem, world, ctx.backend, &dopts)) != BCG_EXIT_OK)
		goto out;
	rc = dist_run(&dopts, bench_rank, &ctx);
out:
	if (dir != NULL) {
		/* what a failed rank left behind */
		for (int r = 0; r < world; r++) {
			char *f = bench_fig_path(prefix, r);
			unlink(f);
			free(f);
		}
		rmdir(dir);
	}
	free(prefix);
	free(dir);
	script_free(ctx.s);
	return rc;
}
