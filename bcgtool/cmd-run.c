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
#include "engine/engine.h"
#include "engine/generate.h"
#include "engine/replay.h"
#include "engine/verify.h"
#include "script/script.h"
#include "util.h"

static int cmd_run_exec(int argc, char **argv);

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.usage = "[--backend B] [--steps N] [--tokens T] [--json] [--dump-outputs DIR] "
	         "[--prompt IDS] [--generate N] [--logits FILE] SCRIPT",
	.summary = "run eager forward steps of a script",
	.options =
		"  -b, --backend B  host, cuda or auto (default: $BCG_BACKEND, else auto:\n"
		"                   cuda when a GPU can be used, else host)\n"
		"  -n, --steps N    steps to run (default 1)\n"
		"  -t, --tokens T   tokens per step (default: the largest capture size)\n"
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
		"                   write the last step's scores (the argmax's input, the\n"
		"                   last prompt or generated row) to FILE as f32\n"
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

static int run_generate(struct script *s, const char *path, const char *backend,
                        const char *prompt, uint64_t n, const char *logits, int json)
{
	struct gen_opts o = { .ntokens = n, .logits = logits };
	struct gen_result r = { 0 };
	struct run_gen g = { 0 };
	struct gen_driver d = { run_gen_step, &g };
	struct engine *e = NULL;
	struct engine_error err = { .op = PLAN_NONE };
	int32_t *ids = NULL;
	uint32_t scores;
	int rc;

	if (gen_parse_prompt(prompt, &ids, &o.nprompt, err.msg, sizeof err.msg) != 0) {
		bcg_error("--prompt: %s", err.msg);
		return BCG_EXIT_USAGE;
	}
	o.prompt = ids;
	if (gen_find_feed(s->program, &scores) == PLAN_NONE) {
		bcg_error("%s: the script has no prompt feed: generation needs one "
		          "(feed: {kind: prompt, ...})", path);
		free(ids);
		return BCG_EXIT_USAGE;
	}
	if (engine_open_at(s->program, backend, o.nprompt, 0, &e, &err) != 0 ||
	    generate(e, &o, &d, &r, &err) != 0) {
		engine_report(&err, s->program, path);
		rc = err.exit;
		goto out;
	}
	if (e->note[0] != '\0')
		bcg_note("%s", e->note);
	gen_print(stdout, &o, &r, json, "script", path, e->be->name, e->info.device);
	rc = fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
out:
	for (int k = 0; k < 2; k++)
		if (g.have[k])
			engine_variant_release(&g.v[k]);
	gen_result_release(&r);
	engine_close(e);
	free(ids);
	return rc;
}

static int cmd_run_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "steps", required_argument, NULL, 'n' },
		{ "tokens", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'J' },
		{ "dump-outputs", required_argument, NULL, 'D' },
		{ "prompt", required_argument, NULL, 'p' },
		{ "generate", required_argument, NULL, 'g' },
		{ "logits", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_run_entry;
	const char *backend = cmd_default_backend();
	const char *dump = NULL, *prompt = NULL, *logits = NULL;
	long long steps = 1, tokens = 0, ngen = 0;
	int json = 0, c, rc = BCG_EXIT_RUNTIME;
	struct script *s = NULL;
	struct engine *e = NULL;
	struct engine_error err = { .op = PLAN_NONE };
	double *step_ms = NULL;
	struct run_output *outs = NULL;
	uint32_t nout = 0;
	uint64_t done = 0;
	int64_t t64;

	while ((c = cmd_getopt(self, argc, argv, "b:n:t:p:g:h", longopts)) != -1) {
		switch (c) {
		case 'b': backend = optarg; break;
		case 'n':
			if (cmd_parse_int(self, "--steps", optarg, 1, 1000000, &steps) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 't':
			if (cmd_parse_int(self, "--tokens", optarg, 1, 1 << 20, &tokens) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 'J': json = 1; break;
		case 'D': dump = optarg; break;
		case 'p': prompt = optarg; break;
		case 'g':
			if (cmd_parse_int(self, "--generate", optarg, 1, 1 << 20, &ngen) != 0)
				return BCG_EXIT_USAGE;
			break;
		case 'L': logits = optarg; break;
		case CMD_HELP: return BCG_EXIT_OK;
		default: return BCG_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc)
		return cmd_usage_error(self, optind == argc ? "no script given" : "one script only");
	if (cmd_check_backend(self, backend) != 0)
		return BCG_EXIT_USAGE;
	if (prompt == NULL && (ngen != 0 || logits != NULL))
		return cmd_usage_error(self, "%s needs --prompt", ngen ? "--generate" : "--logits");
	if (prompt != NULL && (dump != NULL || tokens != 0 || steps != 1))
		return cmd_usage_error(self, "--prompt takes neither --steps, --tokens nor "
		                       "--dump-outputs");

	if ((rc = cmd_read_script(argv[optind], &s)) != BCG_EXIT_OK)
		return rc;
	if (prompt != NULL) {
		rc = run_generate(s, argv[optind], backend, prompt, ngen ? (uint64_t)ngen : 1,
		                  logits, json);
		script_free(s);
		return rc;
	}
	if (dump != NULL && mkdir(dump, 0777) != 0 && errno != EEXIST) {
		bcg_error("%s: cannot make the directory: %s", dump, strerror(errno));
		script_free(s);
		return BCG_EXIT_RUNTIME;
	}
	t64 = tokens ? tokens : s->variants[s->nvariants - 1].tokens;
	step_ms = calloc((size_t)steps, sizeof *step_ms);
	outs = calloc(plan_count_tensors(s->program) + 1, sizeof *outs);
	if (step_ms == NULL || outs == NULL) {
		bcg_error("out of memory");
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (engine_open_at(s->program, backend, t64, 0, &e, &err) != 0) {
		engine_report(&err, s->program, argv[optind]);
		rc = err.exit;
		goto out;
	}
	if (e->note[0] != '\0')
		bcg_note("%s", e->note);
	if (run_steps(e, t64, (uint64_t)steps, step_ms, &done, outs, &nout, dump, &err) != 0) {
		engine_report(&err, s->program, argv[optind]);
		rc = err.exit;
		goto out;
	}
	if (dump != NULL && run_dump_manifest(dump, s, t64, done, outs, nout) != 0) {
		rc = BCG_EXIT_RUNTIME;
		goto out;
	}
	if (json)
		run_print_json(s, argv[optind], e, t64, step_ms, done, (uint64_t)steps, outs, nout);
	else
		run_print_text(s, argv[optind], e, t64, step_ms, done, (uint64_t)steps, outs, nout);
	rc = fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
	if (done < (uint64_t)steps)
		rc = bcg_signal_status(bcg_interrupted());
out:
	engine_close(e);
	script_free(s);
	free(step_ms);
	free(outs);
	return rc;
}
