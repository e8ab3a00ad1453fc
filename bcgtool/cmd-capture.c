/*
 * cmd-capture.c - bcgtool capture: record every variant of a script as
 * graph segments and eager breakpoints, verify the replays against eager
 * runs, and write the plan.
 *
 * The plan is written only when every variant verified; it is written
 * atomically, so an existing file at the output path is either replaced
 * whole or left alone. The temporary file is made before the work, so an
 * output that cannot be written fails at once. "-o -" writes the plan to
 * standard output, and the report to standard error.
 *
 * With SOURCE_DATE_EPOCH set the plan is reproducible: it records that
 * time and none of the times measured (unless --stats asks for them), so
 * the same script, options and machine give the same bytes, choices by
 * measurement aside (--no-tune fixes those too).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "cmd-tp.h"
#include "engine/capture.h"
#include "engine/schedule.h"
#include "script/script.h"
#include "util.h"

static int cmd_capture_exec(int argc, char **argv);

const struct cmd_entry cmd_capture_entry = {
	.name = "capture",
	.usage = "[--backend B] [--mode M] [--tokens LIST] [--steps N] [--verify WHICH] "
	         "[--no-tune | --choices-from PLAN] [--tune-step[=PCT]] [--tune-var NAME=A[:B]]... "
	         "[--no-pdl] [--share-exec] "
	         "[--no-nvtx] [--stats] "
	         "[--json] "
	         "[--tp N [--timeout S] [--nccl-mem M]] -o PLAN SCRIPT",
	.summary = "capture every variant of a script into a plan",
	.options =
		"  -o, --output PLAN  write the plan here (replaced atomically); - is\n"
		"                     standard output (the report then goes to stderr)\n"
		"  -b, --backend B    host, cuda or auto (default: $BCG_BACKEND, else auto:\n"
		"                     cuda when a GPU can be used, else host)\n"
		"  -m, --mode M       capture every variant in mode M (breakable, full or\n"
		"                     eager) instead of the script's modes; or\n"
		"                     full_and_breakable: full for the uniform decode sizes\n"
		"                     when every op is graph-safe, breakable otherwise\n"
		"  -t, --tokens LIST  capture only these capture sizes (comma-separated)\n"
		"  -n, --steps N      eager reference and verification steps (default 2)\n"
		"      --verify WHICH the variants given an eager reference and verified:\n"
		"                     all (default), first-and-largest (the smallest and\n"
		"                     the largest size of each mode) or none; the others\n"
		"                     are captured unchecked (replay --check checks them)\n"
		"      --no-tune      take each op's default implementation instead of\n"
		"                     timing the candidates (the plan records it either way)\n"
		"      --choices-from PLAN\n"
		"                     take the implementation PLAN chose for each op (by\n"
		"                     name, at the same token count) instead of timing;\n"
		"                     ops it has no choice for are timed\n"
		"      --tune-step[=PCT]\n"
		"                     confirm the measured choices in the step: each\n"
		"                     candidate within PCT% (default 25) of the chosen one\n"
		"                     alone is captured in its ops' place, and whole\n"
		"                     replayed steps decide (the plan marks such choices\n"
		"                     step; format 1.9)\n"
		"      --tune-var NAME=A[:B]\n"
		"                     time the candidates with var NAME at the values a\n"
		"                     replay will see (A to B within the script's range,\n"
		"                     as replay --var takes them): alone at the range's\n"
		"                     middle, in the step (--tune-step) spread over all\n"
		"                     of it, a stride apart; the\n"
		"                     reference and verification keep the script's\n"
		"                     values (repeatable, one var each)\n"
		"      --no-pdl       launch kernels without programmatic dependent launch\n"
		"      --share-exec   segments of different sizes with one topology (kernel\n"
		"                     functions, launch attributes, edges) share one\n"
		"                     executable, updated to the size before its launch;\n"
		"                     the plan records which (format 1.6)\n"
		"      --no-nvtx      emit no NVTX ranges\n"
		"      --stats        record the times measured in the plan even when\n"
		"                     SOURCE_DATE_EPOCH is set (they make it irreproducible)\n"
		"      --json         print JSON instead of tables\n"
		"      --tp N         tensor parallelism: shard the script over N ranks (1 to\n"
		"                     64; threads on the host backend, one process a GPU on\n"
		"                     cuda); each rank captures its plan, and the file holds\n"
		"                     them all (rank 0's, the others attached)\n"
		"      --timeout S    a rank silent this long in a collective fails the\n"
		"                     capture (seconds; default 60)\n"
		"      --nccl-mem M   default or symmetric: the collectives' operands in the\n"
		"                     arena, or in NCCL symmetric memory (ncclMemAlloc, one\n"
		"                     window a rank; NCCL 2.27 or later) for NCCL's\n"
		"                     low-latency kernels; a no-op on the host backend\n"
		"  -h, --help         show this help\n",
	.exec = cmd_capture_exec,
};

static int parse_tokens(const char *arg, int64_t **out, uint32_t *n)
{
	const char *p = arg;
	int64_t *v = NULL;
	uint32_t k = 0;

	while (*p != '\0') {
		char *end;
		long long x;
		errno = 0;
		x = strtoll(p, &end, 10);
		if (end == p || errno != 0 || x < 1 || (*end != ',' && *end != '\0'))
			goto bad;
		int64_t *nv = realloc(v, (k + 1) * sizeof *nv);
		if (nv == NULL)
			goto bad;
		v = nv;
		v[k++] = x;
		p = *end == ',' ? end + 1 : end;
		if (*end == ',' && *p == '\0')
			goto bad;
	}
	if (k == 0)
		goto bad;
	*out = v;
	*n = k;
	return 0;
bad:
	free(v);
	return -1;
}

/*
 * --mode full_and_breakable, a server's policy for what it captures: the
 * sizes for uniform decode batches as full graphs, when the program has a
 * full form (every op graph-safe), every other size breakable.
 */
static void capture_full_and_breakable(struct script *s)
{
	struct schedule sched;
	char why[256];
	int full = schedule_build(s->program, PLAN_MODE_FULL, &sched, NULL, why, sizeof why) == 0;

	if (full)
		schedule_release(&sched);
	for (uint32_t i = 0; i < s->nvariants; i++)
		s->variants[i].mode = full && s->variants[i].uniform ? PLAN_MODE_FULL
		                                                     : PLAN_MODE_BREAKABLE;
}

/* Where the time went, for people. */
static void capture_print_phases(FILE *f, const struct capture_report *rep)
{
	const struct capture_phases *p = &rep->phases;
	char h[32];

	fprintf(f, "verified %u of %u variant%s; %.3f s: materialize %.3f, tune %.3f, "
	        "reference %.3f, capture %.3f, instantiate %.3f, verify %.3f, checksums %.3f, "
	        "state copies %.3f (%u, %s)\n", p->verified, rep->nvariants,
	        BCG_S(rep->nvariants), (double)p->total_ns / 1e9,
	        (double)p->materialize_ns / 1e9, (double)p->tune_ns / 1e9,
	        (double)p->reference_ns / 1e9, (double)p->capture_ns / 1e9,
	        (double)p->instantiate_ns / 1e9, (double)p->verify_ns / 1e9,
	        (double)p->checksum_ns / 1e9, (double)p->state_ns / 1e9, p->state_copies,
	        bcg_human_bytes(p->state_bytes, h, sizeof h));
	if (rep->tune_step) {
		uint32_t groups = 0, trials = 0, changed = 0;
		for (uint32_t i = 0; i < rep->nvariants; i++) {
			groups += rep->variants[i].step.groups;
			trials += rep->variants[i].step.trials;
			changed += rep->variants[i].step.changed;
		}
		fprintf(f, "tune in the step %.3f s: %u signature%s contested, %u arrangement%s "
		        "timed, %u choice%s changed\n", (double)p->tune_step_ns / 1e9, groups,
		        BCG_S(groups), trials, BCG_S(trials), changed, BCG_S(changed));
	}
	for (uint32_t k = 0; k < rep->ntune_vars; k++) {
		const struct engine_var_range *r = &rep->tune_vars[k];
		fprintf(f, "tuned with %s from %lld to %lld (--tune-var): alone at %lld\n", r->name,
		        (long long)r->start, (long long)r->limit, (long long)tune_var_alone(r));
	}
	fprintf(f, "executables %u for %u segment%s%s, graph memory %s", rep->execs, rep->segments,
	        BCG_S(rep->segments), rep->share ? " (--share-exec)" : "",
	        bcg_human_bytes(rep->exec_bytes, h, sizeof h));
	if (rep->share)
		fprintf(f, "; %u shared by several variants, %u update%s refused", rep->groups,
		        rep->refused, BCG_S(rep->refused));
	if (rep->opaque > 0)
		fprintf(f, "; %u segment%s could not share (%s)", rep->opaque, BCG_S(rep->opaque),
		        rep->opaque_why);
	if (rep->prepared_bytes > 0)
		fprintf(f, "; packed weight copies %s",
		        bcg_human_bytes(rep->prepared_bytes, h, sizeof h));
	fprintf(f, "\n");
}

/* The report; PLAN NULL: interrupted, only the variants done, no plan. */
static void capture_print_text(FILE *f, const plan_t *plan, const struct capture_report *rep,
                               const char *path, size_t bytes)
{
	char h[32];

	fprintf(f, "%8s  %-9s  %8s  %11s  %6s  %7s  %11s  %14s  %s\n", "tokens", "mode", "segments",
	       "breakpoints", "nodes", "choices", "capture", "instantiate", "verified");
	for (uint32_t i = 0; i < rep->nvariants; i++) {
		const struct capture_variant_report *v = &rep->variants[i];
		char verified[64];
		if (!v->done)
			continue;
		if (!v->verified)
			snprintf(verified, sizeof verified, "not verified");
		else if (v->exact)
			snprintf(verified, sizeof verified, "bit-exact");
		else if (v->ties > 0)
			snprintf(verified, sizeof verified, "rel. error %.2g, %llu argmax tie%s",
			         v->rel_error, (unsigned long long)v->ties, v->ties == 1 ? "" : "s");
		else
			snprintf(verified, sizeof verified, "rel. error %.2g", v->rel_error);
		fprintf(f, "%8lld  %-9s  %8u  %11u  %6u  %7u  %8.2f ms  %11.2f ms  %s\n",
		       (long long)v->tokens, plan_mode_name(v->mode), v->segments, v->breakpoints,
		       v->nodes, v->choices,
		       (double)v->capture_ns / 1e6, (double)v->instantiate_ns / 1e6, verified);
	}
	if (plan == NULL) {
		fprintf(f, "\npartial: interrupted; no plan written\n");
		return;
	}
	fprintf(f, "\nwrote %s (%s): %u variant%s, %u segment%s, %u breakpoint%s, backend %s%s%s%s\n",
	       path, bcg_human_bytes(bytes, h, sizeof h), plan_count_variants(plan),
	       BCG_S(plan_count_variants(plan)), plan_count_segments(plan),
	       BCG_S(plan_count_segments(plan)), plan_count_breakpoints(plan),
	       BCG_S(plan_count_breakpoints(plan)),
	       plan_backend_name(plan_get_meta(plan)->backend),
	       rep->info.device[0] ? " (" : "", rep->info.device, rep->info.device[0] ? ")" : "");
	capture_print_phases(f, rep);
}

/* The phases' times in milliseconds, and the state copies. */
static void capture_json_phases(struct plan_json *j, const struct capture_report *rep)
{
	const struct capture_phases *p = &rep->phases;
	const struct { const char *key; uint64_t ns; } ms[] = {
		{ "total_ms", p->total_ns }, { "materialize_ms", p->materialize_ns },
		{ "tune_ms", p->tune_ns }, { "tune_step_ms", p->tune_step_ns },
		{ "reference_ms", p->reference_ns },
		{ "capture_ms", p->capture_ns }, { "instantiate_ms", p->instantiate_ns },
		{ "verify_ms", p->verify_ns }, { "checksum_ms", p->checksum_ns },
		{ "state_copy_ms", p->state_ns },
	};

	plan_json_key(j, "verify");
	plan_json_string(j, rep->verify);
	plan_json_key(j, "verified");
	plan_json_uint(j, p->verified);
	plan_json_key(j, "phases");
	plan_json_object_begin(j);
	for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
		plan_json_key(j, ms[i].key);
		plan_json_double(j, (double)ms[i].ns / 1e6);
	}
	plan_json_key(j, "state_copies");
	plan_json_uint(j, p->state_copies);
	plan_json_key(j, "state_copy_bytes");
	plan_json_uint(j, p->state_bytes);
	plan_json_object_end(j);
	plan_json_key(j, "tune_vars");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < rep->ntune_vars; k++) {
		const struct engine_var_range *r = &rep->tune_vars[k];
		plan_json_object_begin(j);
		plan_json_key(j, "name");
		plan_json_string(j, r->name);
		plan_json_key(j, "start");
		plan_json_int(j, r->start);
		plan_json_key(j, "limit");
		plan_json_int(j, r->limit);
		plan_json_key(j, "alone");
		plan_json_int(j, tune_var_alone(r));
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
}

static void capture_print_json(FILE *f, const plan_t *plan, const struct capture_report *rep,
                               const char *path, size_t bytes)
{
	struct plan_json *j = plan_json_new(f);

	if (j == NULL)
		return;
	plan_json_object_begin(j);
	plan_json_key(j, "plan");
	if (plan != NULL)
		plan_json_string(j, path);
	else
		plan_json_null(j);
	plan_json_key(j, "bytes");
	plan_json_uint(j, bytes);
	plan_json_key(j, "partial");
	plan_json_bool(j, plan == NULL);
	plan_json_key(j, "backend");
	plan_json_string(j, rep->backend);
	plan_json_key(j, "device");
	plan_json_string(j, rep->info.device);
	plan_json_key(j, "variants");
	plan_json_array_begin(j);
	for (uint32_t i = 0; i < rep->nvariants; i++) {
		const struct capture_variant_report *v = &rep->variants[i];
		if (!v->done)
			continue;
		plan_json_object_begin(j);
		plan_json_key(j, "tokens");
		plan_json_int(j, v->tokens);
		plan_json_key(j, "mode");
		plan_json_string(j, plan_mode_name(v->mode));
		plan_json_key(j, "segments");
		plan_json_uint(j, v->segments);
		plan_json_key(j, "breakpoints");
		plan_json_uint(j, v->breakpoints);
		plan_json_key(j, "nodes");
		plan_json_uint(j, v->nodes);
		plan_json_key(j, "choices");
		plan_json_uint(j, v->choices);
		plan_json_key(j, "capture_ms");
		plan_json_double(j, (double)v->capture_ns / 1e6);
		plan_json_key(j, "instantiate_ms");
		plan_json_double(j, (double)v->instantiate_ns / 1e6);
		plan_json_key(j, "executables");
		plan_json_uint(j, v->execs);
		plan_json_key(j, "joined");
		plan_json_uint(j, v->joined);
		plan_json_key(j, "exec_bytes");
		plan_json_uint(j, v->exec_bytes);
		plan_json_key(j, "verified");
		plan_json_bool(j, v->verified);
		plan_json_key(j, "bit_exact");
		if (v->verified)
			plan_json_bool(j, v->exact);
		else
			plan_json_null(j);
		plan_json_key(j, "rel_error");
		if (v->verified)
			plan_json_double(j, v->rel_error);
		else
			plan_json_null(j);
		plan_json_key(j, "argmax_ties");
		if (v->verified)
			plan_json_uint(j, v->ties);
		else
			plan_json_null(j);
		plan_json_key(j, "tune_step");
		if (rep->tune_step) {
			plan_json_object_begin(j);
			plan_json_key(j, "contested");
			plan_json_uint(j, v->step.groups);
			plan_json_key(j, "timed");
			plan_json_uint(j, v->step.trials);
			plan_json_key(j, "changed");
			plan_json_uint(j, v->step.changed);
			plan_json_key(j, "turns");
			plan_json_uint(j, v->step.turns);
			plan_json_key(j, "ms");
			plan_json_double(j, (double)v->step.ns / 1e6);
			plan_json_object_end(j);
		} else {
			plan_json_null(j);
		}
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	capture_json_phases(j, rep);
	plan_json_key(j, "graph_memory");
	plan_json_object_begin(j);
	plan_json_key(j, "share_exec");
	plan_json_bool(j, rep->share);
	plan_json_key(j, "segments");
	plan_json_uint(j, rep->segments);
	plan_json_key(j, "executables");
	plan_json_uint(j, rep->execs);
	plan_json_key(j, "groups");
	plan_json_uint(j, rep->groups);
	plan_json_key(j, "refused");
	plan_json_uint(j, rep->refused);
	plan_json_key(j, "bytes");
	plan_json_uint(j, rep->exec_bytes);
	plan_json_key(j, "unshareable");
	plan_json_uint(j, rep->opaque);
	plan_json_key(j, "unshareable_reason");
	plan_json_string(j, rep->opaque_why);
	plan_json_object_end(j);
	plan_json_key(j, "packed_weight_bytes");
	plan_json_uint(j, rep->prepared_bytes);
	plan_json_object_end(j);
	plan_json_free(j);
}

/* ------------------------------------------------------------------ */
/* --tp N: each rank captures its shard and writes it beside the output;
 * once every rank has, rank 0 reads the others back, attaches them to its
 * own plan and writes the whole atomically. The rank files are removed on
 * every path: by their rank when the others fail, by rank 0 after it. */

struct cap_tp {
	struct script        *s;
	const char           *path, *output;
	struct capture_opts   o;
	int                   world, json;
	FILE                 *report;
};

/* Rank R's file beside OUTPUT: ".BASE.rankR.tmp" (standard output: in
 * the working directory). */
static char *cap_rank_file(const char *output, int r)
{
	const char *slash = strrchr(output, '/');

	if (strcmp(output, "-") == 0)
		return xasprintf(".stdout.rank%d.tmp", r);
	if (slash == NULL)
		return xasprintf(".%s.rank%d.tmp", output, r);
	return xasprintf("%.*s/.%s.rank%d.tmp", (int)(slash - output), output, slash + 1, r);
}

static void cap_remove(const char *output, int r)
{
	char *f = cap_rank_file(output, r);
	(void)unlink(f);
	free(f);
}

/* Rank 0, every rank's file written: the plan of all ranks to OUT. */
static int cap_tp_join(const struct cap_tp *c, plan_t *plan, struct bcg_output *out,
                       const struct capture_report *rep)
{
	struct plan_limits lim;
	struct plan_diag diag = { 0 };
	void *bytes = NULL;
	size_t nbytes = 0;
	int rc = BCG_EXIT_RUNTIME;

	plan_limits_default(&lim);
	for (int r = 1; r < c->world; r++) {
		char *f = cap_rank_file(c->output, r);
		plan_t *rp = NULL;
		const struct plan_dist *d;
		if (plan_read_file(f, &lim, &rp, &diag) != 0) {
			bcg_error("%s: rank %d's plan: %s", f, r, diag.message);
			free(f);
			goto out;
		}
		/* written alone, as a world of one (cap_tp_rank): now rank R */
		d = plan_get_dist(plan);
		struct plan_dist rd = { .world = d->world, .rank = (uint32_t)r,
		                        .nccl_version = d->nccl_version,
		                        .nccl_mem = d->nccl_mem };
		if (plan_set_dist(rp, &rd, &diag) != 0) {
			bcg_error("%s: rank %d's plan: %s", f, r, diag.message);
			plan_free(rp);
			free(f);
			goto out;
		}
		free(f);
		if (plan_add_rank(plan, rp, &diag) != 0) {
			bcg_error("rank %d: %s", r, diag.message);
			goto out;
		}
	}
	if (plan_write_memory(plan, &bytes, &nbytes, &diag) != 0) {
		bcg_error("%s: %s: %s", c->output, plan_strerror(diag.code), diag.message);
		rc = diag.code == PLAN_ERR_NOMEM ? BCG_EXIT_RUNTIME : BCG_EXIT_USAGE;
		goto out;
	}
	if (bcg_output_commit(out, bytes, nbytes) != 0)
		goto out;
	if (c->json)
		capture_print_json(c->report, plan, rep, c->output, nbytes);
	else
		capture_print_text(c->report, plan, rep, c->output, nbytes);
	rc = fflush(c->report) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
out:
	free(bytes);
	return rc;
}

static int cap_tp_rank(struct dist_comm *comm, void *arg)
{
	const struct cap_tp *c = arg;
	struct script rs = *c->s;
	struct capture_opts o = c->o;
	struct capture_report rep = { 0 };
	struct engine_error err = { .op = PLAN_NONE };
	struct bcg_output out = { .fd = -1 };
	struct plan_diag diag = { 0 };
	plan_t *own = NULL, *plan = NULL;
	char *file = NULL, msg[256];
	int r = comm->rank, rc, wrote = 0;

	if ((rc = cmd_tp_shard(c->s, c->path, c->world, r, &own)) != BCG_EXIT_OK)
		return rc;
	rs.program = own;
	o.comm = comm;
	/* Before the work: an output that cannot be written fails now. */
	if (r == 0 && bcg_output_open(&out, c->output) != 0) {
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	if (capture_script(&rs, &o, &plan, &rep, &err) != 0) {
		char m[sizeof err.msg];
		memcpy(m, err.msg, sizeof m);
		snprintf(err.msg, sizeof err.msg, "rank %d: %.490s", r, m);
		engine_report(&err, rs.program, c->path);
		rc = err.exit;
		goto out;
	}
#if PLAN_FORMAT_MINOR < PLAN_FORMAT_MINOR_RANKS
	/* Captured, verified, and nowhere to go: this libplan's writer knows
	 * no ranks (format 1.5) and would drop the splits and slices. */
	if (r == 0)
		bcg_error("%s: the ranks captured and verified, but this bcgtool writes plan "
		          "format %d.%d, which cannot hold tensor-parallel ranks (%d.%d)", c->output,
		          PLAN_FORMAT_MAJOR, PLAN_FORMAT_MINOR, PLAN_FORMAT_MAJOR,
		          PLAN_FORMAT_MINOR_RANKS);
	rc = BCG_EXIT_RUNTIME;
	goto out;
#endif
	{
		/* the communicator's NCCL (0 on host ranks), in every rank's
		 * plan; and where the collectives' operands lay: symmetric
		 * memory when asked for and the transport has it (the engine
		 * failed otherwise) */
		struct plan_dist d = *plan_get_dist(plan);
		d.nccl_version = comm->nccl_version;
		d.nccl_mem = comm->nccl_mem == DIST_NCCL_MEM_SYMMETRIC && comm->ops->sym_alloc != NULL
		             ? PLAN_NCCL_MEM_SYMMETRIC : PLAN_NCCL_MEM_DEFAULT;
		if (plan_set_dist(plan, &d, &diag) != 0) {
			bcg_error("rank %d: %s", r, diag.message);
			rc = BCG_EXIT_RUNTIME;
			goto out;
		}
	}
	if (r != 0) {
		/* A rank's plan alone is a world of one to the writer: rank 0
		 * makes it rank R again when it attaches it. */
		struct plan_dist d = *plan_get_dist(plan), alone = { .world = 1 };
		file = cap_rank_file(c->output, r);
		if (plan_set_dist(plan, &alone, &diag) != 0 ||
		    plan_write_file(plan, file, &diag) != 0) {
			bcg_error("%s: rank %d's plan: %s", file, r, diag.message);
			rc = BCG_EXIT_RUNTIME;
			goto out;
		}
		wrote = 1;
		(void)plan_set_dist(plan, &d, NULL);
	}
	/* Every rank's plan written (or the group gave up) */
	if (dist_barrier(comm, msg, sizeof msg) != 0) {
		bcg_error("%s", msg);
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	wrote = 0;    /* rank 0's now */
	rc = r == 0 ? cap_tp_join(c, plan, &out, &rep) : BCG_EXIT_OK;
out:
	if (wrote)
		(void)unlink(file);
	if (r == 0)
		for (int k = 1; k < c->world; k++)
			cap_remove(c->output, k);
	bcg_output_abort(&out);
	free(file);
	plan_free(plan);
	plan_free(rs.program);
	capture_report_release(&rep);
	return rc;
}

static int cmd_capture_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "backend", required_argument, NULL, 'b' },
		{ "mode", required_argument, NULL, 'm' },
		{ "tokens", required_argument, NULL, 't' },
		{ "steps", required_argument, NULL, 'n' },
		{ "verify", required_argument, NULL, 'Y' },
		{ "no-nvtx", no_argument, NULL, 'N' },
		{ "no-tune", no_argument, NULL, 'T' },
		{ "choices-from", required_argument, NULL, 'F' },
		{ "tune-step", optional_argument, NULL, 'U' },
		{ "tune-var", required_argument, NULL, 'V' + 256 },
		{ "no-pdl", no_argument, NULL, 'P' },
		{ "share-exec", no_argument, NULL, 'E' },
		{ "stats", no_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'J' },
		{ "tp", required_argument, NULL, 'X' },
		{ "timeout", required_argument, NULL, 'W' },
		{ "nccl-mem", required_argument, NULL, 'M' + 256 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_capture_entry;
	const char *epoch = getenv("SOURCE_DATE_EPOCH");
	struct engine_var_range tune_vars[ENGINE_VAR_RANGES_MAX];
	struct capture_opts o = {
		.backend = cmd_default_backend(), .steps = 2, .nvtx = 1,
		.tune = { .measure = 1, .margin = TUNE_MARGIN },
		.features = PLAN_FEATURE_PDL,
	};
	const char *output = NULL, *from_path = NULL;
	plan_t *from = NULL;
	int64_t *tokens = NULL;
	long long steps;
	int json = 0, stats = 0, fab = 0, c, rc = BCG_EXIT_RUNTIME;
	struct script *s = NULL;
	struct capture_report rep = { 0 };
	struct engine_error err = { .op = PLAN_NONE };
	struct plan_diag diag = { 0 };
	plan_t *plan = NULL;
	void *bytes = NULL;
	size_t nbytes = 0;
	struct bcg_output out = { .fd = -1 };
	FILE *report = stdout;
	int world = 1, nccl_mem = DIST_NCCL_MEM_DEFAULT;
	double timeout_s = CMD_TP_TIMEOUT;

	while ((c = cmd_getopt(self, argc, argv, "o:b:m:t:n:h", longopts)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case 'b': o.backend = optarg; break;
		case 'm':
			fab = strcmp(optarg, "full_and_breakable") == 0;
			if (!fab && (o.mode = plan_mode_from_name(optarg)) == 0) {
				rc = cmd_usage_error(self, "unknown mode '%s' (breakable, full, eager, "
				                     "full_and_breakable)", optarg);
				goto out;
			}
			if (fab)
				o.mode = 0;
			break;
		case 't':
			free(tokens);
			tokens = NULL;
			if (parse_tokens(optarg, &tokens, &o.ntokens) != 0) {
				rc = cmd_usage_error(self, "--tokens takes whole numbers >= 1 separated "
				                     "by commas, not '%s'", optarg);
				goto out;
			}
			o.tokens = tokens;
			break;
		case 'n':
			if (cmd_parse_int(self, "--steps", optarg, 1, 10000, &steps) != 0) {
				rc = BCG_EXIT_USAGE;
				goto out;
			}
			o.steps = (uint32_t)steps;
			break;
		case 'Y':
			if ((o.verify = capture_verify_from_name(optarg)) < 0) {
				rc = cmd_usage_error(self, "--verify takes all, first-and-largest or "
				                     "none, not '%s'", optarg);
				goto out;
			}
			break;
		case 'N': o.nvtx = 0; break;
		case 'T': o.tune.measure = 0; break;
		case 'F': from_path = optarg; break;
		case 'U':
			o.tune.step = 1;
			o.tune.step_window = TUNE_STEP_WINDOW;
			if (optarg != NULL) {
				char *end;
				errno = 0;
				double pct = strtod(optarg, &end);
				if (end == optarg || *end != '\0' || errno != 0 || !(pct >= 0.0) ||
				    pct > 1e6) {
					rc = cmd_usage_error(self, "--tune-step takes a percentage from 0 "
					                     "to 1e6, not '%s'", optarg);
					goto out;
				}
				o.tune.step_window = pct / 100.0;
			}
			break;
		case 'V' + 256:
			if (cmd_parse_var(self, "--tune-var", optarg, tune_vars, &o.tune.nvars) != 0) {
				rc = BCG_EXIT_USAGE;
				goto out;
			}
			o.tune.vars = tune_vars;
			break;
		case 'P': o.features &= ~PLAN_FEATURE_PDL; break;
		case 'E': o.share_exec = 1; break;
		case 'S': stats = 1; break;
		case 'J': json = 1; break;
		case 'X':
			if (cmd_tp_parse(self, optarg, &world) != 0) {
				rc = BCG_EXIT_USAGE;
				goto out;
			}
			break;
		case 'W':
			if (cmd_tp_parse_timeout(self, optarg, &timeout_s) != 0) {
				rc = BCG_EXIT_USAGE;
				goto out;
			}
			break;
		case 'M' + 256:
			if (cmd_tp_parse_nccl_mem(self, optarg, &nccl_mem) != 0) {
				rc = BCG_EXIT_USAGE;
				goto out;
			}
			break;
		case CMD_HELP: rc = BCG_EXIT_OK; goto out;
		default: rc = BCG_EXIT_USAGE; goto out;
		}
	}
	if (optind + 1 != argc) {
		rc = cmd_usage_error(self, optind == argc ? "no script given" : "one script only");
		goto out;
	}
	if (output == NULL) {
		rc = cmd_usage_error(self, "no output given (-o PLAN)");
		goto out;
	}
	if (cmd_check_backend(self, o.backend) != 0) {
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	if ((rc = cmd_tp_nccl_mem(self, nccl_mem, world, NULL, NULL)) != BCG_EXIT_OK)
		goto out;
	if (from_path != NULL && !o.tune.measure) {
		rc = cmd_usage_error(self, "--choices-from and --no-tune exclude each other");
		goto out;
	}
	if (o.tune.step && !o.tune.measure) {
		rc = cmd_usage_error(self, "--tune-step and --no-tune exclude each other");
		goto out;
	}
	if (o.tune.nvars > 0 && !o.tune.measure) {
		rc = cmd_usage_error(self, "--tune-var and --no-tune exclude each other");
		goto out;
	}
	if (o.tune.nvars > 0 && world > 1) {
		rc = cmd_usage_error(self, "--tune-var with --tp %d: the ranks of a plan keep "
		                     "the default implementations (nothing is measured)", world);
		goto out;
	}
	if (o.tune.step && world > 1) {
		rc = cmd_usage_error(self, "--tune-step with --tp %d: the ranks of a plan keep "
		                     "the default implementations (nothing is measured)", world);
		goto out;
	}
	if (from_path != NULL) {
		if ((rc = cmd_read_plan(from_path, &from)) != BCG_EXIT_OK)
			goto out;
		o.tune.from = from;
	}
	/* Asked for reproducible output: the measured times stay out. */
	o.untimed = epoch != NULL && epoch[0] != '\0' && !stats;
	if (strcmp(output, "-") == 0) {
		if (isatty(STDOUT_FILENO)) {
			rc = cmd_usage_error(self, "will not write a plan to a terminal "
			                     "(redirect standard output, or -o FILE)");
			goto out;
		}
		report = stderr;
	}
	if ((rc = cmd_read_script(argv[optind], &s)) != BCG_EXIT_OK)
		goto out;
	if (o.tune.nvars > 0 && engine_check_vars(s->program, "script", o.tune.vars, o.tune.nvars,
	                                          err.msg, sizeof err.msg) != 0) {
		rc = cmd_usage_error(self, "--tune-var: %s", err.msg);
		goto out;
	}
	if (fab)
		capture_full_and_breakable(s);
	if (world > 1) {
		struct cap_tp tp = { .s = s, .path = argv[optind], .output = output, .o = o,
		                     .world = world, .json = json, .report = report };
		struct dist_opts dopts;
		if ((rc = cmd_tp_check(s, argv[optind], world)) != BCG_EXIT_OK)
			goto out;
		tp.o.backend = cmd_tp_opts(&dopts, "capture", o.backend, world, timeout_s);
		if ((rc = cmd_tp_nccl_mem(self, nccl_mem, world, tp.o.backend, &dopts)) !=
		    BCG_EXIT_OK)
			goto out;
		rc = dist_run(&dopts, cap_tp_rank, &tp);
		goto out;
	}
	/* Before the work: an output that cannot be written fails now. */
	if (bcg_output_open(&out, output) != 0) {
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	if (capture_script(s, &o, &plan, &rep, &err) != 0) {
		engine_report(&err, s->program, argv[optind]);
		rc = err.exit;
		if (rc >= 128 && json)
			capture_print_json(report, NULL, &rep, output, 0);
		else if (rc >= 128)
			capture_print_text(report, NULL, &rep, output, 0);
		goto out;
	}
	if (rep.note[0] != '\0')
		bcg_note("%s", rep.note);
	if (plan_write_memory(plan, &bytes, &nbytes, &diag) != 0) {
		bcg_error("%s: %s: %s", output, plan_strerror(diag.code), diag.message);
		rc = diag.code == PLAN_ERR_NOMEM ? BCG_EXIT_RUNTIME : BCG_EXIT_USAGE;
		goto out;
	}
	if (bcg_output_commit(&out, bytes, nbytes) != 0) {
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (json)
		capture_print_json(report, plan, &rep, output, nbytes);
	else
		capture_print_text(report, plan, &rep, output, nbytes);
	rc = fflush(report) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
out:
	bcg_output_abort(&out);
	free(bytes);
	free(tokens);
	plan_free(plan);
	plan_free(from);
	capture_report_release(&rep);
	script_free(s);
	return rc;
}
