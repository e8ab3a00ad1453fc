/*
 * generate.c - greedy generation over an engine (see generate.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "engine/generate.h"
#include "ops/numeric.h"
#include "util.h"

void gen_result_release(struct gen_result *r)
{
	free(r->tokens);
	free(r->steps);
	free(r->warm);
	memset(r, 0, sizeof *r);
}

uint32_t gen_find_feed(const plan_t *plan, uint32_t *scores)
{
	*scores = PLAN_NONE;
	for (uint32_t t = 0; t < plan_count_tensors(plan); t++) {
		const struct plan_tensor *pt = plan_get_tensor(plan, t);
		if (pt->feed.kind != PLAN_FEED_PROMPT)
			continue;
		/* the scores: the input of the argmax that writes the feedback,
		 * or the product of the rmsnorm_matmul_argmax that does */
		for (uint32_t i = 0; i < plan_count_ops(plan); i++) {
			const struct plan_op *o = plan_get_op(plan, i);
			if (strcmp(o->kind, "argmax") == 0 && o->nout == 1 && o->out[0] == pt->feed.from)
				*scores = o->in[0];
			if (strcmp(o->kind, "rmsnorm_matmul_argmax") == 0 && o->nout == 2 &&
			    o->out[1] == pt->feed.from)
				*scores = o->out[0];
		}
		return t;
	}
	return PLAN_NONE;
}

int gen_parse_prompt(const char *text, int32_t **ids, int64_t *n, char *msg, size_t len)
{
	char *data = NULL, *p, *end;
	size_t dlen, cap = 16;
	int32_t *v = NULL;
	int rc = -1;

	*ids = NULL;
	*n = 0;
	if (text[0] == '@') {
		if (bcg_read_file(text + 1, &data, &dlen) != 0) {
			snprintf(msg, len, "%s: cannot read: %s", text + 1, strerror(errno));
			return -1;
		}
	} else if ((data = strdup(text)) == NULL) {
		snprintf(msg, len, "out of memory");
		return -1;
	}
	if ((v = malloc(cap * sizeof *v)) == NULL) {
		snprintf(msg, len, "out of memory");
		goto out;
	}
	for (p = data;;) {
		long long x;
		while (*p == ',' || isspace((unsigned char)*p))
			p++;
		if (*p == '\0')
			break;
		errno = 0;
		x = strtoll(p, &end, 10);
		if (end == p || errno != 0 || x < 0 || x > INT32_MAX ||
		    (*end != '\0' && *end != ',' && !isspace((unsigned char)*end))) {
			snprintf(msg, len, "the prompt holds '%.20s', which is not a token id (0 to %d)",
			         p, INT32_MAX);
			goto out;
		}
		if ((size_t)*n == cap) {
			int32_t *g = realloc(v, 2 * cap * sizeof *v);
			if (g == NULL) {
				snprintf(msg, len, "out of memory");
				goto out;
			}
			v = g;
			cap *= 2;
		}
		v[(*n)++] = (int32_t)x;
		p = end;
	}
	if (*n == 0) {
		snprintf(msg, len, "the prompt is empty");
		goto out;
	}
	*ids = v;
	v = NULL;
	rc = 0;
out:
	free(v);
	free(data);
	return rc;
}

/* Row ROW of the scores tensor at RAN tokens, as f32, to PATH (written
 * atomically, util.h). */
static int gen_write_scores(struct engine *e, uint32_t t, int64_t ran, int64_t row,
                            const char *path, struct engine_error *err)
{
	const struct plan_tensor *pt = plan_get_tensor(e->plan, t);
	uint64_t bytes = plan_tensor_bytes(e->plan, t, ran);
	int64_t cols = plan_axis_size(e->plan, &pt->shape[pt->rank - 1], ran);
	size_t es = plan_dtype_size(pt->dtype);
	unsigned char *buf = malloc(bytes ? (size_t)bytes : 1);
	float *row_f = malloc((size_t)cols * sizeof *row_f);
	struct bcg_output out;
	char msg[256];
	int rc = -1;

	if (buf == NULL || row_f == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	if (engine_read_tensor(e, t, ran, buf, err) != 0)
		goto out;
	for (int64_t j = 0; j < cols; j++) {
		const unsigned char *x = buf + ((size_t)(row * cols + j)) * es;
		uint16_t h;
		switch (pt->dtype) {
		case PLAN_DTYPE_F16:
			memcpy(&h, x, 2);
			row_f[j] = bcg_f16_to_f32(h);
			break;
		case PLAN_DTYPE_BF16:
			memcpy(&h, x, 2);
			row_f[j] = bcg_bf16_to_f32(h);
			break;
		default:
			memcpy(&row_f[j], x, 4);
			break;
		}
	}
	if (bcg_output_try_open(&out, path, 0, msg, sizeof msg) != 0 ||
	    bcg_output_try_commit(&out, row_f, (size_t)cols * sizeof *row_f, msg,
	                          sizeof msg) != 0) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "%s: %s", path, msg);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	free(row_f);
	return rc;
}

/* Every var must hold the sequence so far: past a var's limit the caches
 * would wrap or clamp, and the tokens would be wrong without a word. */
static int gen_check_vars(const plan_t *plan, int64_t need, struct engine_error *err)
{
	for (uint32_t i = 0; i < plan_count_vars(plan); i++) {
		const struct plan_var *v = plan_get_var(plan, i);
		if (need > v->limit)
			return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "the generation needs %lld "
			                   "positions, past the limit of var '%s' (%lld)",
			                   (long long)need, v->name, (long long)v->limit);
	}
	return 0;
}

/* One step of the generation G on the driver: REAL tokens of IDS after
 * CONSUMED ones, as step STEP; its record in *REC and its feedback in FB. */
static int gen_step(struct engine *e, const struct gen_driver *d, struct engine_gen *g,
                    const int32_t *ids, int64_t real, uint64_t step, uint32_t from, int32_t *fb,
                    struct gen_step *rec, struct engine_error *err)
{
	uint64_t t0 = bcg_now_ns(), setup_ns = 0;
	int64_t ran = 0;

	g->ids = ids;
	g->real = real;
	if (gen_check_vars(e->plan, g->consumed + real, err) != 0 ||
	    d->step(d->ctx, e, real, step, &ran, &setup_ns, err) != 0 ||
	    gen_check_vars(e->plan, g->consumed + ran, err) != 0 ||
	    engine_read_tensor(e, from, ran, fb, err) != 0)
		return -1;
	rec->ms = (double)(bcg_now_ns() - t0) / 1e6;
	rec->setup_ms = (double)setup_ns / 1e6;
	rec->tokens = real;
	rec->ran = ran;
	return 0;
}

/* The warm-up: O->warmup steps of the prefill, then as many of the first
 * decode step, each as the generation will run it (the same tokens where
 * they are known, the same positions); the caller resets the state. */
static int gen_warm(struct engine *e, const struct gen_opts *o, const struct gen_driver *d,
                    uint32_t from, int32_t *fb, struct gen_result *r, struct engine_error *err)
{
	struct engine_gen g = { 0 };
	int counts = o->ntokens > 1 && o->nprompt != 1 ? 2 : 1;
	int rc = -1;

	if (o->warmup == 0)
		return 0;
	if ((r->warm = calloc((size_t)o->warmup * (size_t)counts, sizeof *r->warm)) == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	e->gen = &g;
	for (int k = 0; k < counts; k++) {
		/* the decode step's token is not known yet: the last prompt one */
		const int32_t *ids = k == 0 ? o->prompt : &o->prompt[o->nprompt - 1];
		g.consumed = k == 0 ? 0 : o->nprompt;
		for (uint64_t w = 0; w < o->warmup; w++) {
			if (gen_step(e, d, &g, ids, k == 0 ? o->nprompt : 1, (uint64_t)k, from, fb,
			             &r->warm[r->nwarm], err) != 0)
				goto out;
			r->nwarm++;
		}
	}
	rc = 0;
out:
	e->gen = NULL;
	return rc;
}

int generate(struct engine *e, const struct gen_opts *o, const struct gen_driver *d,
             struct gen_result *r, struct engine_error *err)
{
	const plan_t *plan = e->plan;
	uint32_t from;
	struct engine_gen g = { 0 };
	int32_t *fb = NULL, last = 0;
	int rc = -1;

	memset(r, 0, sizeof *r);
	if ((r->feed = gen_find_feed(plan, &r->scores)) == PLAN_NONE)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "the script has no prompt feed: "
		                   "generation needs one (feed: {kind: prompt, ...})");
	if (o->logits != NULL && r->scores == PLAN_NONE)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "no argmax writes the prompt "
		                   "feed's feedback: there are no scores to write");
	from = plan_get_tensor(plan, r->feed)->feed.from;
	for (int64_t i = 0; i < o->nprompt; i++) {
		int64_t range = plan_get_tensor(plan, r->feed)->feed.range;
		if (o->prompt[i] >= range)
			return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "prompt token %lld is %d, "
			                   "outside the feed's range 0..%lld", (long long)i,
			                   o->prompt[i], (long long)range - 1);
	}
	/* Said before any step, with the whole generation's count: each
	 * step's own check below would name only where it stopped. */
	for (uint32_t i = 0; i < plan_count_vars(plan); i++) {
		const struct plan_var *v = plan_get_var(plan, i);
		int64_t need = o->nprompt + (int64_t)o->ntokens - 1;
		if (need > v->limit)
			return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "the generation needs %lld "
			                   "positions (%lld of prompt and %llu generated, the last not "
			                   "written back), past the limit of var '%s' (%lld)",
			                   (long long)need, (long long)o->nprompt,
			                   (unsigned long long)o->ntokens, v->name, (long long)v->limit);
	}
	r->tokens = calloc(o->ntokens, sizeof *r->tokens);
	r->steps = calloc(o->ntokens, sizeof *r->steps);
	fb = malloc((size_t)plan_tensor_bytes(plan, from, e->max_tokens) + 4);
	if (r->tokens == NULL || r->steps == NULL || fb == NULL) {
		engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
		goto out;
	}
	if (gen_warm(e, o, d, from, fb, r, err) != 0 || engine_reset(e, err) != 0)
		goto out;
	e->gen = &g;
	for (uint64_t s = 0; s < o->ntokens; s++) {
		int64_t real = s == 0 ? o->nprompt : 1;
		if (gen_step(e, d, &g, s == 0 ? o->prompt : &last, real, s, from, fb, &r->steps[s],
		             err) != 0)
			goto out;
		last = fb[real - 1];
		r->tokens[s] = last;
		r->ntokens = s + 1;
		if (s + 1 == o->ntokens && o->logits != NULL &&
		    gen_write_scores(e, r->scores, r->steps[s].ran, real - 1, o->logits, err) != 0)
			goto out;
		g.consumed += real;
	}
	rc = 0;
out:
	e->gen = NULL;
	free(fb);
	return rc;
}

/* STEPS as a JSON array of step objects. */
static void gen_print_steps(struct plan_json *j, const struct gen_step *steps, uint64_t n)
{
	plan_json_array_begin(j);
	for (uint64_t i = 0; i < n; i++) {
		plan_json_object_begin(j);
		plan_json_key(j, "tokens");
		plan_json_int(j, steps[i].tokens);
		plan_json_key(j, "ran");
		plan_json_int(j, steps[i].ran);
		plan_json_key(j, "ms");
		plan_json_double(j, steps[i].ms);
		plan_json_key(j, "setup_ms");
		plan_json_double(j, steps[i].setup_ms);
		plan_json_object_end(j);
	}
	plan_json_array_end(j);
}

static void gen_print_row(FILE *f, const char *name, const struct gen_step *st, const char *id)
{
	fprintf(f, "%6s  %6lld  %6lld  %6s  %9.3f ms  %9.3f ms\n", name, (long long)st->tokens,
	        (long long)st->ran, id, st->ms, st->setup_ms);
}

void gen_print(FILE *f, const struct gen_opts *o, const struct gen_result *r, int json,
               const char *what, const char *path, const char *backend, const char *device)
{
	if (json) {
		struct plan_json *j = plan_json_new(f);
		double *ms;
		if (j == NULL)
			return;
		plan_json_object_begin(j);
		plan_json_key(j, what);
		plan_json_string(j, path);
		plan_json_key(j, "backend");
		plan_json_string(j, backend);
		plan_json_key(j, "device");
		plan_json_string(j, device);
		plan_json_key(j, "prompt");
		plan_json_array_begin(j);
		for (int64_t i = 0; i < o->nprompt; i++)
			plan_json_int(j, o->prompt[i]);
		plan_json_array_end(j);
		plan_json_key(j, "tokens");
		plan_json_array_begin(j);
		for (uint64_t i = 0; i < r->ntokens; i++)
			plan_json_int(j, r->tokens[i]);
		plan_json_array_end(j);
		plan_json_key(j, "warmup");
		gen_print_steps(j, r->warm, r->nwarm);
		plan_json_key(j, "steps");
		gen_print_steps(j, r->steps, r->ntokens);
		/* decode steps only: the prefill is another kind of step */
		if ((ms = malloc((r->ntokens + 1) * sizeof *ms)) != NULL) {
			for (uint64_t i = 1; i < r->ntokens; i++)
				ms[i - 1] = r->steps[i].ms;
			plan_json_key(j, "decode_ms_median");
			plan_json_double(j, bcg_percentile(ms, r->ntokens - 1, 50));
			free(ms);
		}
		plan_json_object_end(j);
		plan_json_free(j);
		return;
	}
	fprintf(f, "%-9s%s\n", what, path);
	fprintf(f, "backend  %s%s%s%s\n", backend, device[0] ? " (" : "", device, device[0] ? ")" : "");
	fprintf(f, "prompt  ");
	for (int64_t i = 0; i < o->nprompt; i++)
		fprintf(f, " %d", o->prompt[i]);
	fprintf(f, "\ntokens  ");
	for (uint64_t i = 0; i < r->ntokens; i++)
		fprintf(f, " %d", r->tokens[i]);
	fprintf(f, "\n\n%6s  %6s  %6s  %6s  %12s  %12s\n", "step", "tokens", "ran", "id", "time",
	        "setup");
	for (uint64_t i = 0; i < r->nwarm; i++)
		gen_print_row(f, "warm", &r->warm[i], "-");
	for (uint64_t i = 0; i < r->ntokens; i++) {
		char step[24], id[24];
		snprintf(step, sizeof step, "%llu", (unsigned long long)i);
		snprintf(id, sizeof id, "%d", r->tokens[i]);
		gen_print_row(f, step, &r->steps[i], id);
	}
}
