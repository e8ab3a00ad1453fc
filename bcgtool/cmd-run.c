/*
 * cmd-run.c - bcgtool run: eager forward steps of a script, the baseline.
 *
 * Every op is launched one by one, feeds and vars advancing per step, and
 * the outputs' checksums are printed after the last step: the numbers a
 * capture's reference run records, and what a replay must reproduce.
 * --dump-outputs also writes the outputs' values, for comparing two runs
 * (of two backends, or of a fused script and its unfused twin) within a
 * tolerance.
 *
 * With --prompt, it generates greedily instead (engine/generate.h): the
 * prompt as one chunk, then --generate N tokens one by one, and prints the
 * token ids.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "cmd-tp.h"
#include "engine/engine.h"
#include "engine/generate.h"
#include "engine/replay.h"
#include "engine/verify.h"
#include "script/script.h"
#include "util.h"

static int cmd_run_exec(int argc, char **argv);

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.usage = "[--backend B] [--steps N] [--tokens T] [--var NAME=START:LIMIT]... [--json] "
	         "[--dump-outputs DIR] "
	         "[--prompt IDS] [--generate N] [--logits FILE] [--tp N [--timeout S] [--nccl-mem M]] "
	         "SCRIPT",
	.summary = "run eager forward steps of a script",
	.options =
		"  -b, --backend B  host, cuda or auto (default: $BCG_BACKEND, else auto:\n"
		"                   cuda when a GPU can be used, else host)\n"
		"  -n, --steps N    steps to run (default 1)\n"
		"  -t, --tokens T   tokens per step (default: the largest capture size)\n"
		"      --var NAME=START:LIMIT\n"
		"                   step the var NAME from START to LIMIT, then back to\n"
		"                   START, instead of over the script's range (which must\n"
		"                   hold it); NAME=V keeps it at V (repeatable)\n"
		"      --json       print JSON instead of tables\n"
		"      --dump-outputs DIR\n"
		"                   write each output's values after the last step to\n"
		"                   DIR/NAME.bin (raw, little-endian) and list them in\n"
		"                   DIR/outputs.json\n"
		"  -p, --prompt IDS generate greedily from the prompt IDS (\"1,2,3\", or\n"
		"                   @FILE: ids separated by commas or spaces); the\n"
		"                   script needs a prompt feed\n"
		"  -g, --generate N tokens to generate (default 1)\n"
		"      --logits FILE\n"
		"                   write the last step's scores (the argmax's input or\n"
		"                   rmsnorm_matmul_argmax's out, the last prompt or\n"
		"                   generated row) to FILE as f32\n"
		"      --tp N       tensor parallelism: shard the script over N ranks (1 to\n"
		"                   64; threads on the host backend, one process a GPU on\n"
		"                   cuda) and run them together; rank 0 prints\n"
		"      --timeout S  a rank silent this long in a collective fails the run\n"
		"                   (seconds; default 60)\n"
		"      --nccl-mem M default or symmetric: the collectives' operands in the\n"
		"                   arena, or in NCCL symmetric memory (ncclMemAlloc, one\n"
		"                   window a rank; NCCL 2.27 or later) for NCCL's\n"
		"                   low-latency kernels; a no-op on the host backend\n"
		"  -h, --help       show this help\n",
	.exec = cmd_run_exec,
};

struct run_output {
	uint32_t tensor;
	uint64_t hash;
	double   sum;
};

static void run_shape(const plan_t *plan, uint32_t t, int64_t tokens, char *buf, size_t len)
{
	const struct plan_tensor *pt = plan_get_tensor(plan, t);
	size_t n = 0;

	n += (size_t)snprintf(buf + n, len - n, "[");
	for (uint32_t i = 0; i < pt->rank && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? ", " : "",
		                      (long long)plan_axis_size(plan, &pt->shape[i], tokens));
	if (n < len)
		snprintf(buf + n, len - n, "]");
}

/* STEPS of ASKED ran: fewer when a signal stopped them (partial). */
static void run_print_text(const struct script *s, const char *path, const struct engine *e,
                           int64_t tokens, const double *step_ms, uint64_t steps,
                           uint64_t asked, const struct run_output *outs, uint32_t nout)
{
	const plan_t *plan = s->program;
	char shape[96];

	printf("script   %s\n", path);
	printf("backend  %s%s%s%s\n", e->be->name, e->info.device[0] ? " (" : "", e->info.device,
	       e->info.device[0] ? ")" : "");
	printf("tokens   %lld\n", (long long)tokens);
	if (steps < asked)
		printf("steps    %llu of %llu (partial: interrupted; the outputs are after "
		       "step %llu)\n\n", (unsigned long long)steps, (unsigned long long)asked,
		       (unsigned long long)steps);
	else
		printf("steps    %llu\n\n", (unsigned long long)steps);
	printf("%6s  %12s\n", "step", "time");
	for (uint64_t i = 0; i < steps; i++)
		printf("%6llu  %9.3f ms\n", (unsigned long long)i, step_ms[i]);
	printf("\n%-20s %-5s %-16s %16s  %s\n", "output", "dtype", "shape", "sum", "fnv1a64");
	for (uint32_t k = 0; k < nout; k++) {
		const struct plan_tensor *pt = plan_get_tensor(plan, outs[k].tensor);
		run_shape(plan, outs[k].tensor, tokens, shape, sizeof shape);
		printf("%-20s %-5s %-16s %16.9g  %016" PRIx64 "\n", pt->name, plan_dtype_name(pt->dtype),
		       shape, outs[k].sum, outs[k].hash);
	}
}

static void run_print_json(const struct script *s, const char *path, const struct engine *e,
                           int64_t tokens, double *step_ms, uint64_t steps, uint64_t asked,
                           const struct run_output *outs, uint32_t nout)
{
	struct plan_json *j = plan_json_new(stdout);
	char hash[24];

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
	plan_json_key(j, "steps");
	plan_json_uint(j, steps);
	plan_json_key(j, "partial");
	plan_json_bool(j, steps < asked);
	plan_json_key(j, "step_ms");
	plan_json_array_begin(j);
	for (uint64_t i = 0; i < steps; i++)
		plan_json_double(j, step_ms[i]);
	plan_json_array_end(j);
	plan_json_key(j, "step_ms_median");
	plan_json_double(j, bcg_percentile(step_ms, steps, 50));
	plan_json_key(j, "outputs");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < nout; k++) {
		const struct plan_tensor *pt = plan_get_tensor(s->program, outs[k].tensor);
		plan_json_object_begin(j);
		plan_json_key(j, "name");
		plan_json_string(j, pt->name);
		plan_json_key(j, "dtype");
		plan_json_string(j, plan_dtype_name(pt->dtype));
		plan_json_key(j, "sum");
		plan_json_double(j, outs[k].sum);
		plan_json_key(j, "fnv1a64");
		snprintf(hash, sizeof hash, "0x%016" PRIx64, outs[k].hash);
		plan_json_string(j, hash);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_object_end(j);
	plan_json_free(j);
}

/* The file of output NAME under --dump-outputs: NAME.bin, any character
 * but letters, digits, '.', '-' and '_' made '_' ("x[3]" is "x_3_.bin"). */
static void run_dump_file(const char *name, char *buf, size_t len)
{
	size_t n = 0;

	for (; *name != '\0' && n + 5 < len; name++, n++) {
		char c = *name;
		int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		            (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
		buf[n] = plain && !(n == 0 && c == '.') ? c : '_';
	}
	snprintf(buf + n, len - n, ".bin");
}

/* Write BYTES of BUF (elements of ESIZE bytes) to DIR/FILE, little-endian
 * whatever the host's order; on failure say why in ERR. */
static int run_dump_write(const char *dir, const char *file, unsigned char *buf, size_t bytes,
                          size_t esize, struct engine_error *err)
{
	const uint16_t one = 1;
	char *path = xasprintf("%s/%s", dir, file);
	FILE *f;
	int rc = -1;

	if (*(const unsigned char *)&one != 1)
		for (size_t i = 0; i + esize <= bytes; i += esize)
			for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
				unsigned char t = buf[i + a];
				buf[i + a] = buf[i + b];
				buf[i + b] = t;
			}
	if ((f = fopen(path, "wb")) == NULL ||
	    (bytes > 0 && fwrite(buf, 1, bytes, f) != bytes) | (fclose(f) != 0)) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "cannot write %s: %s", path,
		            strerror(errno));
		goto out;
	}
	rc = 0;
out:
	free(path);
	return rc;
}

/* DIR/outputs.json: what each dumped file holds. */
static int run_dump_manifest(const char *dir, const struct script *s, int64_t tokens,
                             uint64_t steps, const struct run_output *outs, uint32_t nout)
{
	const plan_t *plan = s->program;
	char *path = xasprintf("%s/outputs.json", dir);
	FILE *f = fopen(path, "w");
	struct plan_json *j;
	int rc = -1;

	if (f == NULL || (j = plan_json_new(f)) == NULL) {
		bcg_error("%s: cannot write: %s", path, f ? "out of memory" : strerror(errno));
		if (f != NULL)
			fclose(f);
		free(path);
		return -1;
	}
	plan_json_object_begin(j);
	plan_json_key(j, "tokens");
	plan_json_int(j, tokens);
	plan_json_key(j, "steps");
	plan_json_uint(j, steps);
	plan_json_key(j, "outputs");
	plan_json_array_begin(j);
	for (uint32_t k = 0; k < nout; k++) {
		const struct plan_tensor *pt = plan_get_tensor(plan, outs[k].tensor);
		char file[160];
		run_dump_file(pt->name, file, sizeof file);
		plan_json_object_begin(j);
		plan_json_key(j, "name");
		plan_json_string(j, pt->name);
		plan_json_key(j, "dtype");
		plan_json_string(j, plan_dtype_name(pt->dtype));
		plan_json_key(j, "shape");
		plan_json_array_begin(j);
		for (uint32_t i = 0; i < pt->rank; i++)
			plan_json_int(j, plan_axis_size(plan, &pt->shape[i], tokens));
		plan_json_array_end(j);
		plan_json_key(j, "file");
		plan_json_string(j, file);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
	plan_json_object_end(j);
	plan_json_free(j);
	if (ferror(f) | fclose(f))
		bcg_error("%s: cannot write: %s", path, strerror(errno));
	else
		rc = 0;
	free(path);
	return rc;
}

/* Run STEPS eager steps at TOKENS, timing each on the backend's clock,
 * then take the outputs' checksums. A signal stops the steps at the next
 * one: *DONE says how many ran, and the checksums are after those. */
static int run_steps(struct engine *e, int64_t tokens, uint64_t steps, double *step_ms,
                     uint64_t *done, struct run_output *outs, uint32_t *nout, const char *dump,
                     struct engine_error *err)
{
	const plan_t *plan = e->plan;
	struct engine_variant v;
	struct bcg_steps progress;
	int rc = -1;

	*done = 0;
	if (engine_variant_init(e, tokens, PLAN_MODE_EAGER, &v, err) != 0)
		return -1;
	if (engine_reset(e, err) != 0)
		goto out;
	bcg_steps_begin(&progress, "run", steps);
	for (uint64_t s = 0; s < steps && !bcg_interrupted(); s++, *done = s) {
		bcg_steps_update(&progress, s);
		if (e->be->mark(e->b, 0, err->msg, sizeof err->msg) != 0) {
			engine_fail_backend(err, "time stamp");
			goto out;
		}
		if (engine_eager_step(e, &v, s, err) != 0)
			goto out;
		if (e->be->mark(e->b, 1, err->msg, sizeof err->msg) != 0 ||
		    e->be->sync(e->b, err->msg, sizeof err->msg) != 0 ||
		    e->be->elapsed(e->b, 0, 1, &step_ms[s], err->msg, sizeof err->msg) != 0) {
			engine_fail_backend(err, "timing the step");
			goto out;
		}
	}
	bcg_progress_clear();
	*nout = 0;
	for (uint32_t t = 0; t < plan_count_tensors(plan); t++) {
		const struct plan_tensor *pt = plan_get_tensor(plan, t);
		uint64_t bytes = plan_tensor_bytes(plan, t, tokens);
		void *buf;
		if (pt->role != PLAN_ROLE_OUTPUT)
			continue;
		if ((buf = malloc(bytes ? (size_t)bytes : 1)) == NULL) {
			engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
			goto out;
		}
		if (engine_read_tensor(e, t, tokens, buf, err) != 0) {
			free(buf);
			goto out;
		}
		outs[*nout].tensor = t;
		outs[*nout].hash = plan_hash64(buf, (size_t)bytes, PLAN_HASH64_INIT);
		outs[*nout].sum = verify_sum(pt->dtype, buf, plan_tensor_numel(plan, t, tokens));
		(*nout)++;
		if (dump != NULL) {
			char file[160];
			run_dump_file(pt->name, file, sizeof file);
			if (run_dump_write(dump, file, buf, (size_t)bytes,
			                   (size_t)plan_dtype_size(pt->dtype), err) != 0) {
				free(buf);
				goto out;
			}
		}
		free(buf);
	}
	rc = 0;
out:
	bcg_progress_clear();
	engine_variant_release(&v);
	return rc;
}

/* Generation's step, eagerly: a launch description per token count. */
struct run_gen {
	struct engine_variant v[2];     /* the prompt's count, and 1 */
	int                   have[2];
};

static int run_gen_step(void *ctx, struct engine *e, int64_t real, uint64_t step, int64_t *ran,
                        uint64_t *setup_ns, struct engine_error *err)
{
	struct run_gen *g = ctx;
	int k = real == 1 ? 1 : 0;

	if (g->have[k] && g->v[k].tokens != real) {
		engine_variant_release(&g->v[k]);
		g->have[k] = 0;
	}
	if (!g->have[k]) {
		uint64_t t0 = bcg_now_ns();
		if (engine_variant_init(e, real, PLAN_MODE_EAGER, &g->v[k], err) != 0)
			return -1;
		*setup_ns = bcg_now_ns() - t0;
		g->have[k] = 1;
	}
	*ran = real;
	return engine_eager_step(e, &g->v[k], step, err);
}

/* What every rank of a run needs: the command line, and the script. */
struct run_ctx {
	struct script *s;
	const char    *path, *backend, *dump, *prompt, *logits;
	long long      steps, tokens, ngen;
	int            json, world;
	struct engine_var_range vars[ENGINE_VAR_RANGES_MAX];   /* --var */
	uint32_t       nvars;
};

/* Open PROGRAM for a rank: the engine, holding the rank's communicator. */
static int run_open(const struct run_ctx *c, plan_t *program, int64_t tokens,
                    struct dist_comm *comm, struct engine **e, struct engine_error *err)
{
	if (engine_open_at(program, c->backend, tokens, 0, e, err) != 0 ||
	    engine_set_vars(*e, c->vars, c->nvars, err) != 0)
		return -1;
	(*e)->comm = comm;
	if ((*e)->note[0] != '\0' && (comm == NULL || comm->rank == 0))
		bcg_note("%s", (*e)->note);
	return 0;
}

static int run_generate(const struct run_ctx *c, plan_t *program, struct dist_comm *comm)
{
	int lead = comm == NULL || comm->rank == 0;
	struct gen_opts o = { .ntokens = c->ngen ? (uint64_t)c->ngen : 1,
	                      .logits = lead ? c->logits : NULL };
	struct gen_result r = { 0 };
	struct run_gen g = { 0 };
	struct gen_driver d = { run_gen_step, &g };
	struct engine *e = NULL;
	struct engine_error err = { .op = PLAN_NONE };
	int32_t *ids = NULL;
	uint32_t scores;
	int rc;

	if (gen_parse_prompt(c->prompt, &ids, &o.nprompt, err.msg, sizeof err.msg) != 0) {
		if (lead)
			bcg_error("--prompt: %s", err.msg);
		return BCG_EXIT_USAGE;
	}
	o.prompt = ids;
	if (gen_find_feed(program, &scores) == PLAN_NONE) {
		if (lead)
			bcg_error("%s: the script has no prompt feed: generation needs one "
			          "(feed: {kind: prompt, ...})", c->path);
		free(ids);
		return BCG_EXIT_USAGE;
	}
	if (run_open(c, program, o.nprompt, comm, &e, &err) != 0 ||
	    generate(e, &o, &d, &r, &err) != 0) {
		cmd_tp_report(&err, program, c->path, comm);
		rc = err.exit;
		goto out;
	}
	if (lead)
		gen_print(stdout, &o, &r, c->json, "script", c->path, e->be->name, e->info.device);
	rc = !lead || fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
out:
	for (int k = 0; k < 2; k++)
		if (g.have[k])
			engine_variant_release(&g.v[k]);
	gen_result_release(&r);
	engine_close(e);
	free(ids);
	return rc;
}

/* Eager steps, then the outputs' checksums (rank 0 prints them and writes
 * --dump-outputs: the outputs a script declares whole are whole on every
 * rank). */
static int run_plain(const struct run_ctx *c, plan_t *program, struct dist_comm *comm)
{
	int lead = comm == NULL || comm->rank == 0;
	struct engine *e = NULL;
	struct engine_error err = { .op = PLAN_NONE };
	double *step_ms = NULL;
	struct run_output *outs = NULL;
	uint32_t nout = 0;
	uint64_t done = 0;
	int64_t t64 = c->tokens ? c->tokens : c->s->variants[c->s->nvariants - 1].tokens;
	int rc = BCG_EXIT_RUNTIME;

	step_ms = calloc((size_t)c->steps, sizeof *step_ms);
	outs = calloc(plan_count_tensors(program) + 1, sizeof *outs);
	if (step_ms == NULL || outs == NULL) {
		bcg_error("out of memory");
		goto out;
	}
	if (run_open(c, program, t64, comm, &e, &err) != 0 ||
	    run_steps(e, t64, (uint64_t)c->steps, step_ms, &done, outs, &nout,
	              lead ? c->dump : NULL, &err) != 0) {
		cmd_tp_report(&err, program, c->path, comm);
		rc = err.exit;
		goto out;
	}
	if (!lead) {
		rc = BCG_EXIT_OK;
		goto out;
	}
	/* the script's outputs only: a rank's own tensors come after them */
	while (nout > 0 && outs[nout - 1].tensor >= plan_count_tensors(c->s->program))
		nout--;
	if (c->dump != NULL && run_dump_manifest(c->dump, c->s, t64, done, outs, nout) != 0)
		goto out;
	if (c->json)
		run_print_json(c->s, c->path, e, t64, step_ms, done, (uint64_t)c->steps, outs, nout);
	else
		run_print_text(c->s, c->path, e, t64, step_ms, done, (uint64_t)c->steps, outs, nout);
	rc = fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
	if (done < (uint64_t)c->steps)
		rc = bcg_signal_status(bcg_interrupted());
out:
	engine_close(e);
	free(step_ms);
	free(outs);
	return rc;
}

/* One rank: its shard of the script (the script itself for one rank). */
static int run_rank(struct dist_comm *comm, void *arg)
{
	const struct run_ctx *c = arg;
	plan_t *program = c->s->program, *own = NULL;
	int rc;

	if (c->world > 1) {
		if ((rc = cmd_tp_shard(c->s, c->path, c->world, comm->rank, &own)) != BCG_EXIT_OK)
			return rc;
		program = own;
	}
	rc = c->prompt != NULL ? run_generate(c, program, comm) : run_plain(c, program, comm);
	plan_free(own);
	return rc;
}

static int cmd_run_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "steps", required_argument, NULL, 'n' },
		{ "tokens", required_argument, NULL, 't' },
		{ "var", required_argument, NULL, 'A' + 256 },
		{ "json", no_argument, NULL, 'J' },
		{ "dump-outputs", required_argument, NULL, 'D' },
		{ "prompt", required_argument, NULL, 'p' },
		{ "generate", required_argument, NULL, 'g' },
		{ "logits", required_argument, NULL, 'L' },
		{ "tp", required_argument, NULL, 'P' },
		{ "timeout", required_argument, NULL, 'W' },
		{ "nccl-mem", required_argument, NULL, 'M' + 256 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_run_entry;
	struct run_ctx ctx = { .backend = cmd_default_backend(), .steps = 1, .world = 1 };
	double timeout_s = CMD_TP_TIMEOUT;
	struct dist_opts dopts;
	int c, rc, nccl_mem = DIST_NCCL_MEM_DEFAULT;

	while ((c = cmd_getopt(self, argc, argv, "b:n:t:p:g:h", longopts)) != -1) {
		switch (c) {
		case 'b': ctx.backend = optarg; break;
		case 'n':
			if (cmd_parse_int(self, "--steps", optarg, 1, 1000000, &ctx.steps) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 't':
			if (cmd_parse_int(self, "--tokens", optarg, 1, 1 << 20, &ctx.tokens) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 'A' + 256:
			if (cmd_parse_var(self, "--var", optarg, ctx.vars, &ctx.nvars) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 'J': ctx.json = 1; break;
		case 'D': ctx.dump = optarg; break;
		case 'p': ctx.prompt = optarg; break;
		case 'g':
			if (cmd_parse_int(self, "--generate", optarg, 1, 1 << 20, &ctx.ngen) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 'L': ctx.logits = optarg; break;
		case 'P':
			if (cmd_tp_parse(self, optarg, &ctx.world) != 0)
				return BCG_EXIT_USAGE;
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
		default: return BCG_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc)
		return cmd_usage_error(self, optind == argc ? "no script given" : "one script only");
	if (cmd_check_backend(self, ctx.backend) != 0)
		return BCG_EXIT_USAGE;
	if (ctx.prompt == NULL && (ctx.ngen != 0 || ctx.logits != NULL))
		return cmd_usage_error(self, "%s needs --prompt", ctx.ngen ? "--generate" : "--logits");
	if (ctx.prompt != NULL && (ctx.dump != NULL || ctx.tokens != 0 || ctx.steps != 1))
		return cmd_usage_error(self, "--prompt takes neither --steps, --tokens nor "
		                       "--dump-outputs");
	if (ctx.prompt != NULL && ctx.nvars)
		return cmd_usage_error(self, "--prompt takes no --var: a generation's vars are "
		                       "the tokens it has seen");
	ctx.path = argv[optind];
	if ((rc = cmd_tp_nccl_mem(self, nccl_mem, ctx.world, NULL, NULL)) != BCG_EXIT_OK)
		return rc;

	if ((rc = cmd_read_script(ctx.path, &ctx.s)) != BCG_EXIT_OK)
		return rc;
	/* Every rank's shard first: a script that cannot split fails once,
	 * before any work. */
	if (ctx.world > 1 && (rc = cmd_tp_check(ctx.s, ctx.path, ctx.world)) != BCG_EXIT_OK)
		goto out;
	if (ctx.prompt == NULL && ctx.dump != NULL && mkdir(ctx.dump, 0777) != 0 &&
	    errno != EEXIST) {
		bcg_error("%s: cannot make the directory: %s", ctx.dump, strerror(errno));
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	ctx.backend = cmd_tp_opts(&dopts, "run", ctx.backend, ctx.world, timeout_s);
	if ((rc = cmd_tp_nccl_mem(self, nccl_mem, ctx.world, ctx.backend, &dopts)) != BCG_EXIT_OK)
		goto out;
	rc = dist_run(&dopts, run_rank, &ctx);
out:
	script_free(ctx.s);
	return rc;
}
