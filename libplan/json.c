/*
 * json.c - a small streaming JSON writer.
 *
 * libplan's dumps use it, and bcgtool uses it for every --json output, so
 * that all of the project's JSON has one escaping, one number format and
 * one layout: two-space indentation, one member per line.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define JSON_MAX_DEPTH 64

struct plan_json {
	FILE    *f;
	int      depth;
	int      first[JSON_MAX_DEPTH];   /* nothing written yet at this depth */
	int      after_key;
};

struct plan_json *plan_json_new(FILE *f)
{
	struct plan_json *j = calloc(1, sizeof *j);

	if (j != NULL) {
		j->f = f;
		j->first[0] = 1;
	}
	return j;
}

void plan_json_free(struct plan_json *j)
{
	if (j != NULL && j->depth == 0 && !j->first[0])
		fputc('\n', j->f);
	free(j);
}

static void json_indent(struct plan_json *j)
{
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

/* Separator and indentation before a value or a key. */
static void json_prefix(struct plan_json *j)
{
	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (!j->first[j->depth])
		fputc(',', j->f);
	if (j->depth > 0)
		json_indent(j);
	j->first[j->depth] = 0;
}

static void json_open(struct plan_json *j, char c)
{
	json_prefix(j);
	fputc(c, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = 1;
}

static void json_close(struct plan_json *j, char c)
{
	int empty = j->first[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (!empty)
		json_indent(j);
	fputc(c, j->f);
}

void plan_json_object_begin(struct plan_json *j) { json_open(j, '{'); }
void plan_json_object_end(struct plan_json *j) { json_close(j, '}'); }
void plan_json_array_begin(struct plan_json *j) { json_open(j, '['); }
void plan_json_array_end(struct plan_json *j) { json_close(j, ']'); }

static void json_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		switch (*p) {
		case '"':  fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		case '\b': fputs("\\b", f); break;
		case '\f': fputs("\\f", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void plan_json_key(struct plan_json *j, const char *key)
{
	json_prefix(j);
	json_quoted(j->f, key);
	fputs(": ", j->f);
	j->after_key = 1;
}

void plan_json_string(struct plan_json *j, const char *s)
{
	json_prefix(j);
	json_quoted(j->f, s != NULL ? s : "");
}

void plan_json_int(struct plan_json *j, int64_t v)
{
	json_prefix(j);
	fprintf(j->f, "%" PRId64, v);
}

void plan_json_uint(struct plan_json *j, uint64_t v)
{
	json_prefix(j);
	fprintf(j->f, "%" PRIu64, v);
}

void plan_json_double(struct plan_json *j, double v)
{
	json_prefix(j);
	if (isnan(v) || isinf(v))
		fputs("null", j->f);   /* JSON has no NaN or infinity */
	else
		fprintf(j->f, "%.9g", v);
}

void plan_json_bool(struct plan_json *j, int v)
{
	json_prefix(j);
	fputs(v ? "true" : "false", j->f);
}

void plan_json_null(struct plan_json *j)
{
	json_prefix(j);
	fputs("null", j->f);
}
