/*
 * serve/trace.c - request traces from JSON Lines files and from the
 * synthetic generator (formats/trace.md).
 *
 * Every line is parsed on its own with jansson, so an error names its line;
 * the column is jansson's for syntax errors and the key's for bad values.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve/rng.h"
#include "serve/trace.h"
#include "util.h"

/* Arrivals at most this many seconds after the start (about 115 days):
 * microseconds of it fit any integer type used on the way. */
#define SERVE_MAX_ARRIVAL_S 1e7

__attribute__((format(printf, 4, 5)))
static int trace_fail(struct serve_diag *d, unsigned line, unsigned col, const char *fmt, ...)
{
	va_list ap;

	d->line = line;
	d->col = col;
	va_start(ap, fmt);
	vsnprintf(d->msg, sizeof d->msg, fmt, ap);
	va_end(ap);
	return -1;
}

void serve_trace_release(struct serve_trace *t)
{
	free(t->req);
	t->req = NULL;
	t->n = 0;
}

/* The column of KEY's quoted name in the line, or 1 when not found. */
static unsigned key_column(const char *line, size_t len, const char *key)
{
	size_t kl = strlen(key);

	for (size_t i = 0; i + kl + 2 <= len; i++)
		if (line[i] == '"' && memcmp(line + i + 1, key, kl) == 0 && line[i + kl + 1] == '"')
			return (unsigned)i + 1;
	return 1;
}

/* KEY's value as a whole number in [MIN, MAX]. */
static int field_uint(json_t *obj, const char *key, uint64_t min, uint64_t max, uint64_t *out,
                      const char *line, size_t len, unsigned lineno, struct serve_diag *d)
{
	json_t *v = json_object_get(obj, key);
	json_int_t x;

	if (v == NULL)
		return trace_fail(d, lineno, 1, "missing key '%s'", key);
	x = json_is_integer(v) ? json_integer_value(v) : -1;
	if (!json_is_integer(v) || x < 0 || (uint64_t)x < min || (uint64_t)x > max)
		return trace_fail(d, lineno, key_column(line, len, key),
		                  "'%s' must be a whole number from %" PRIu64 " to %" PRIu64, key, min,
		                  max);
	*out = (uint64_t)x;
	return 0;
}

static int parse_line(const char *line, size_t len, unsigned lineno, struct serve_request *r,
                      struct serve_diag *d)
{
	static const char *const keys[] = { "id", "arrival", "prompt_len", "output_len" };
	json_error_t je;
	json_t *obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je), *v;
	const char *key;
	uint64_t x;
	double arrival;
	int rc = -1;

	if (obj == NULL)
		return trace_fail(d, lineno, je.column > 0 ? (unsigned)je.column : 1, "%s", je.text);
	if (!json_is_object(obj)) {
		trace_fail(d, lineno, 1, "expected a JSON object");
		goto out;
	}
	json_object_foreach(obj, key, v) {
		size_t k = 0;
		while (k < sizeof keys / sizeof keys[0] && strcmp(key, keys[k]) != 0)
			k++;
		if (k == sizeof keys / sizeof keys[0]) {
			trace_fail(d, lineno, key_column(line, len, key), "unknown key '%s'", key);
			goto out;
		}
	}
	if (field_uint(obj, "id", 0, INT64_MAX, &r->id, line, len, lineno, d) != 0)
		goto out;
	if ((v = json_object_get(obj, "arrival")) == NULL) {
		trace_fail(d, lineno, 1, "missing key 'arrival'");
		goto out;
	}
	arrival = json_is_number(v) ? json_number_value(v) : -1.0;
	if (!json_is_number(v) || !(arrival >= 0.0 && arrival <= SERVE_MAX_ARRIVAL_S)) {
		trace_fail(d, lineno, key_column(line, len, "arrival"),
		           "'arrival' must be a number of seconds from 0 to %.0f", SERVE_MAX_ARRIVAL_S);
		goto out;
	}
	r->arrival_us = (uint64_t)llround(arrival * 1e6);
	if (field_uint(obj, "prompt_len", 1, SERVE_MAX_LEN, &x, line, len, lineno, d) != 0)
		goto out;
	r->prompt_len = (uint32_t)x;
	if (field_uint(obj, "output_len", 1, SERVE_MAX_LEN, &x, line, len, lineno, d) != 0)
		goto out;
	r->output_len = (uint32_t)x;
	rc = 0;
out:
	json_decref(obj);
	return rc;
}

/* For sorting: a request with the line it came from. */
struct trace_entry {
	struct serve_request r;
	unsigned             line;
};

static int by_arrival(const void *a, const void *b)
{
	const struct trace_entry *x = a, *y = b;

	if (x->r.arrival_us != y->r.arrival_us)
		return x->r.arrival_us < y->r.arrival_us ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int by_id(const void *a, const void *b)
{
	const struct trace_entry *x = a, *y = b;

	if (x->r.id != y->r.id)
		return x->r.id < y->r.id ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static int is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

int serve_trace_parse(const char *data, size_t len, struct serve_trace *t,
                      struct serve_diag *d)
{
	struct trace_entry *e = NULL, *tmp;
	size_t n = 0, cap = 0, pos = 0;
	unsigned lineno = 0;
	int rc = -1;

	memset(t, 0, sizeof *t);
	memset(d, 0, sizeof *d);
	while (pos < len) {
		const char *line = data + pos, *nl = memchr(line, '\n', len - pos);
		size_t ll = nl != NULL ? (size_t)(nl - line) : len - pos;

		pos += ll + (nl != NULL);
		lineno++;
		if (is_blank(line, ll))
			continue;
		if (n == UINT32_MAX) {
			trace_fail(d, lineno, 1, "more than %u requests", UINT32_MAX - 1);
			goto out;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			if ((tmp = realloc(e, cap * sizeof *e)) == NULL) {
				trace_fail(d, 0, 0, "out of memory");
				goto out;
			}
			e = tmp;
		}
		if (parse_line(line, ll, lineno, &e[n].r, d) != 0)
			goto out;
		e[n++].line = lineno;
	}
	if (n == 0) {
		trace_fail(d, 0, 0, "no requests");
		goto out;
	}
	qsort(e, n, sizeof *e, by_id);
	for (size_t i = 1; i < n; i++)
		if (e[i].r.id == e[i - 1].r.id) {
			trace_fail(d, e[i].line, 1,
			           "duplicate id %" PRIu64 " (first on line %u)", e[i].r.id, e[i - 1].line);
			goto out;
		}
	qsort(e, n, sizeof *e, by_arrival);
	if ((t->req = malloc(n * sizeof *t->req)) == NULL) {
		trace_fail(d, 0, 0, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		t->req[i] = e[i].r;
	t->n = (uint32_t)n;
	rc = 0;
out:
	free(e);
	return rc;
}

int serve_trace_read(const char *path, struct serve_trace *t, struct serve_diag *d)
{
	char *data = NULL;
	size_t len;
	int rc;

	memset(t, 0, sizeof *t);
	if (bcg_read_file(path, &data, &len) != 0) {
		trace_fail(d, 0, 0, "cannot read: %s", strerror(errno));
		return -1;
	}
	rc = serve_trace_parse(data, len, t, d);
	free(data);
	return rc;
}

/* --- the synthetic generator ---------------------------------------------- */

void serve_synth_defaults(struct serve_synth *s)
{
	memset(s, 0, sizeof *s);
	s->requests = 256;
	s->rate = 0.0;
	s->prompt = (struct serve_dist){ SERVE_DIST_UNIFORM, 16, 256 };
	s->output = (struct serve_dist){ SERVE_DIST_UNIFORM, 16, 256 };
	s->seed = 0;
}

/* A whole number in [MIN, MAX] that is all of S[0..N). */
static int parse_count(const char *s, size_t n, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 20)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* "N", "uniform:LO:HI" or "exp:MEAN[:MAX]". */
static int parse_dist(const char *s, size_t n, struct serve_dist *d)
{
	const char *c1 = memchr(s, ':', n), *c2;
	uint64_t a, b = 0;

	if (c1 == NULL) {
		if (parse_count(s, n, 1, SERVE_MAX_LEN, &a) != 0)
			return -1;
		*d = (struct serve_dist){ SERVE_DIST_FIXED, (uint32_t)a, (uint32_t)a };
		return 0;
	}
	c2 = memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - s));
	if (c2 != NULL && parse_count(c2 + 1, n - (size_t)(c2 + 1 - s), 1, SERVE_MAX_LEN, &b) != 0)
		return -1;
	if (parse_count(c1 + 1, (size_t)((c2 ? c2 : s + n) - c1 - 1), 1, SERVE_MAX_LEN, &a) != 0)
		return -1;
	if ((size_t)(c1 - s) == 7 && memcmp(s, "uniform", 7) == 0) {
		if (c2 == NULL || b < a)
			return -1;
		*d = (struct serve_dist){ SERVE_DIST_UNIFORM, (uint32_t)a, (uint32_t)b };
		return 0;
	}
	if ((size_t)(c1 - s) == 3 && memcmp(s, "exp", 3) == 0) {
		if (c2 == NULL)
			b = a * 8 < SERVE_MAX_LEN ? a * 8 : SERVE_MAX_LEN;
		if (b < a)
			return -1;
		*d = (struct serve_dist){ SERVE_DIST_EXP, (uint32_t)a, (uint32_t)b };
		return 0;
	}
	return -1;
}

/* A rate: a decimal number of requests per second, or "inf". */
static int parse_rate(const char *s, size_t n, double *out)
{
	char buf[32], *end;
	double v;

	if (n == 3 && memcmp(s, "inf", 3) == 0) {
		*out = 0.0;
		return 0;
	}
	if (n == 0 || n >= sizeof buf || s[0] < '0' || s[0] > '9')
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (*end != '\0' || errno != 0 || !(v > 0.0 && v <= 1e6))
		return -1;
	*out = v;
	return 0;
}

int serve_synth_parse(const char *spec, struct serve_synth *s, char *why, size_t whylen)
{
	const char *p = spec;

	if (*p == '\0') {
		snprintf(why, whylen, "empty synthetic trace spec");
		return -1;
	}
	while (*p != '\0') {
		const char *end = strchr(p, ','), *eq;
		size_t n = end ? (size_t)(end - p) : strlen(p), kl, vl;
		const char *val;
		uint64_t v;
		int bad = 0;

		eq = memchr(p, '=', n);
		if (eq == NULL) {
			snprintf(why, whylen, "'%.*s' is not KEY=VALUE", (int)n, p);
			return -1;
		}
		kl = (size_t)(eq - p);
		val = eq + 1;
		vl = n - kl - 1;
		if (kl == 8 && memcmp(p, "requests", 8) == 0) {
			bad = parse_count(val, vl, 1, 1000000, &v) != 0;
			if (!bad)
				s->requests = (uint32_t)v;
			if (bad)
				snprintf(why, whylen, "requests takes a whole number from 1 to 1000000");
		} else if (kl == 4 && memcmp(p, "rate", 4) == 0) {
			bad = parse_rate(val, vl, &s->rate) != 0;
			if (bad)
				snprintf(why, whylen,
				         "rate takes requests per second (above 0, at most 1e6) or inf");
		} else if (kl == 4 && memcmp(p, "seed", 4) == 0) {
			bad = parse_count(val, vl, 0, UINT64_MAX, &s->seed) != 0;
			if (bad)
				snprintf(why, whylen, "seed takes a whole number");
		} else if ((kl == 6 && memcmp(p, "prompt", 6) == 0) ||
		           (kl == 6 && memcmp(p, "output", 6) == 0)) {
			bad = parse_dist(val, vl, p[0] == 'p' ? &s->prompt : &s->output) != 0;
			if (bad)
				snprintf(why, whylen,
				         "%.*s takes N, uniform:LO:HI or exp:MEAN[:MAX] (lengths 1 to %u, "
				         "LO <= HI, MEAN <= MAX)", (int)kl, p, SERVE_MAX_LEN);
		} else {
			snprintf(why, whylen, "unknown key '%.*s' (requests, rate, prompt, output, seed)",
			         (int)kl, p);
			return -1;
		}
		if (bad)
			return -1;
		p += n + (end != NULL);
		if (end != NULL && *p == '\0') {
			snprintf(why, whylen, "a comma ends the spec");
			return -1;
		}
	}
	return 0;
}

static uint32_t draw(struct serve_rng *r, const struct serve_dist *d)
{
	double x;

	switch (d->kind) {
	case SERVE_DIST_UNIFORM:
		return d->a + (uint32_t)serve_rng_below(r, (uint64_t)d->b - d->a + 1);
	case SERVE_DIST_EXP:
		x = 1.0 + serve_rng_neglog(serve_rng_unit(r)) * (double)(d->a - 1);
		return x >= (double)d->b ? d->b : (uint32_t)x;
	default:
		return d->a;
	}
}

int serve_trace_synthesize(const struct serve_synth *s, struct serve_trace *t)
{
	struct serve_rng rng;
	double clock = 0.0;   /* microseconds */

	memset(t, 0, sizeof *t);
	if ((t->req = calloc(s->requests ? s->requests : 1, sizeof *t->req)) == NULL)
		return -1;
	t->n = s->requests;
	serve_rng_seed(&rng, s->seed);
	for (uint32_t i = 0; i < s->requests; i++) {
		struct serve_request *r = &t->req[i];
		/* Poisson arrivals: exponential gaps of mean 1/rate. Three draws
		 * a request whatever the rate, so that changing the rate keeps
		 * the lengths. */
		double gap = serve_rng_neglog(serve_rng_unit(&rng));
		if (s->rate > 0.0 && i > 0)
			clock += gap * 1e6 / s->rate;
		r->id = i;
		r->arrival_us = (uint64_t)(clock + 0.5);
		r->prompt_len = draw(&rng, &s->prompt);
		r->output_len = draw(&rng, &s->output);
	}
	return 0;
}

int serve_trace_write(FILE *f, const struct serve_trace *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct serve_request *r = &t->req[i];
		if (fprintf(f,
		            "{\"id\": %" PRIu64 ", \"arrival\": %" PRIu64 ".%06" PRIu64
		            ", \"prompt_len\": %" PRIu32 ", \"output_len\": %" PRIu32 "}\n",
		            r->id, r->arrival_us / 1000000, r->arrival_us % 1000000, r->prompt_len,
		            r->output_len) < 0)
			return -1;
	}
	return 0;
}
