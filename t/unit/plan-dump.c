/*
 * plan-dump.c - libplan's texts for people, its JSON and DOT dumps and its
 * diff, on the plans built in code (plan-sample.c): exact texts, the
 * structure of the dumps, a plan against itself and against another,
 * errors of the stream.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan-sample.h"
#include "plan.h"
#include "tap.h"

/* The dump of PLAN by FN into a malloc'd string; *RC its result. */
static char *dump(int (*fn)(const plan_t *, FILE *, const struct plan_dump_opts *,
                            struct plan_diag *),
                  const plan_t *plan, const struct plan_dump_opts *opts, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct plan_diag diag = { 0 };

	if (f == NULL)
		return NULL;
	*rc = fn(plan, f, opts, &diag);
	fclose(f);
	return buf;
}

static unsigned count(const char *text, const char *what)
{
	unsigned n = 0;

	for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
		n++;
	return n;
}

static void test_texts(const plan_t *v)
{
	char buf[64], tiny[4];

	is_str(plan_shape_text(v, plan_get_tensor(v, 0), buf, sizeof buf), "[T, H]", "shape of x");
	is_str(plan_shape_text(v, plan_get_tensor(v, 0), tiny, sizeof tiny), "[T,",
	       "a shape truncated to its buffer");
	is_str(plan_op_label(v, 0, buf, sizeof buf), "mm", "an op's label is its name");
	is_str(plan_op_label(v, 7, buf, sizeof buf), "op#7", "an op out of range");
	is_str(plan_init_text(plan_get_tensor(v, 1), buf, sizeof buf), "random scale 0.5 seed 2",
	       "a random initializer");
	is_str(plan_feed_text(v, plan_get_tensor(v, 0), buf, sizeof buf), "random scale 1 seed 1",
	       "a random feed");
	is_str(plan_source_text(v, plan_get_tensor(v, 2), buf, sizeof buf), "init zeros",
	       "contents: the initializer");
	is_str(plan_source_text(v, plan_get_tensor(v, 0), buf, sizeof buf),
	       "feed random scale 1 seed 1", "contents: the feed first");
	is_str(plan_attr_text(v, &plan_get_op(v, 1)->attr[0], buf, sizeof buf), "factor=0.5",
	       "a float attribute");
	is_str(plan_tensor_list_text(v, plan_get_op(v, 0)->in, 2, buf, sizeof buf), "x, w",
	       "a list of tensors");
	is_str(plan_tensor_list_text(v, NULL, 0, buf, sizeof buf), "-", "an empty list");
	is_str(plan_version_text(13000, 0, buf, sizeof buf), "13.0", "a CUDA version");
	is_str(plan_version_text(130100, 1, buf, sizeof buf), "13.1.0", "a cuBLAS version");
	is_str(plan_version_text(0, 0, buf, sizeof buf), "-", "no version");
	is_str(plan_dispatch_text(v, plan_get_dispatch(v, 0), buf, sizeof buf), "1-2 -> 2",
	       "a dispatch entry");
	struct plan_dispatch eager = { 3, 3, PLAN_NONE };
	is_str(plan_dispatch_text(v, &eager, buf, sizeof buf), "3 -> eager", "an eager entry");
}

static void test_json(const plan_t *rich, const plan_t *v)
{
	struct plan_dump_opts one = { .variant = 1 }, none = { .variant = 9 };
	int rc = -1;
	char *all = dump(plan_dump_json, rich, NULL, &rc);

	is_int(rc, PLAN_OK, "the JSON dump of the rich plan");
	ok(all != NULL && all[0] == '{' && strcmp(all + strlen(all) - 2, "}\n") == 0,
	   "one object, ending the line");
	is_int(count(all, "\"peak_bytes\": "), plan_count_variants(rich), "every variant");
	is_int(count(all, "\"fingerprint\": \"0x"), plan_count_segments(rich), "every segment");
	ok(strstr(all, "\"value\": \"tf32 na\xc3\xafve\"") != NULL, "a string attribute, as UTF-8");
	ok(strstr(all, "\"type\": \"bool\",\n") != NULL && strstr(all, "\"value\": true") != NULL,
	   "a bool attribute");
	free(all);

	char *part = dump(plan_dump_json, rich, &one, &rc);
	is_int(rc, PLAN_OK, "the JSON dump of one variant");
	is_int(count(part, "\"peak_bytes\": "), 1, "one variant");
	free(part);

	char *bad = dump(plan_dump_json, rich, &none, &rc);
	is_int(rc, PLAN_ERR_NOT_FOUND, "a variant out of range");
	ok(bad != NULL && bad[0] == '\0', "nothing written for it");
	free(bad);

	char *vec = dump(plan_dump_json, v, NULL, &rc);
	ok(rc == PLAN_OK && strstr(vec, "\"script_hash\": \"0x1122334455667788\"") != NULL &&
	   strstr(vec, "\"created_utc\": \"2023-11-14T22:13:20Z\"") != NULL &&
	   strstr(vec, "\"fingerprint\": \"0x07f75855dd81e7e7\"") != NULL,
	   "the vector's hashes and time, as plan-format.md gives them");
	free(vec);
}

static void test_dot(const plan_t *rich)
{
	int rc = -1;
	char *dot = dump(plan_dump_dot, rich, NULL, &rc);

	is_int(rc, PLAN_OK, "the DOT dump of the rich plan");
	ok(dot != NULL && strncmp(dot, "digraph \"plan\" {\n", 17) == 0 &&
	   strcmp(dot + strlen(dot) - 2, "}\n") == 0, "one digraph");
	is_int(count(dot, "subgraph \"cluster_v"), plan_count_variants(rich), "a cluster per variant");
	is_int(count(dot, "subgraph \"cluster_s"), plan_count_segments(rich), "a cluster per segment");
	is_int(count(dot, "shape=octagon"), plan_count_breakpoints(rich), "an octagon per breakpoint");
	free(dot);
}

static void test_diff(const plan_t *rich, const plan_t *v)
{
	struct plan_diff *d = plan_diff(rich, rich, 0);
	uint32_t same = 0;

	ok(d != NULL, "a plan against itself");
	is_int(plan_diff_count(d), 0, "no difference");
	for (uint32_t i = 0; i < plan_diff_length(d); i++)
		same += plan_diff_get(d, i)->change == PLAN_DIFF_SAME;
	ok(same > 0 && same == plan_diff_length(d), "only context entries (%u)", same);
	ok(plan_diff_get(d, plan_diff_length(d)) == NULL, "past the end: NULL");
	plan_diff_free(d);

	d = plan_diff(rich, v, 0);
	ok(d != NULL && plan_diff_count(d) > 0, "two different plans differ");
	int meta = 0, tensors = 0;
	for (uint32_t i = 0; i < plan_diff_length(d); i++) {
		const struct plan_diff_entry *e = plan_diff_get(d, i);
		meta += e->area == PLAN_DIFF_META && strcmp(e->field, "tool") == 0;
		tensors += e->area == PLAN_DIFF_TENSORS;
		ok(e->subject != NULL && e->field != NULL && e->a != NULL && e->b != NULL,
		   "entry %u has every text", i);
	}
	is_int(meta, 1, "the tool differs");
	ok(tensors > 0, "the tensors differ");
	plan_diff_free(d);

	d = plan_diff(rich, v, PLAN_DIFF_IGNORE_ENV);
	meta = 0;
	for (uint32_t i = 0; i < plan_diff_length(d); i++)
		meta += plan_diff_get(d, i)->area == PLAN_DIFF_META &&
		        strcmp(plan_diff_get(d, i)->field, "tool") == 0;
	is_int(meta, 0, "--ignore-env: the tool is not compared");
	plan_diff_free(d);

	is_int(plan_diff_count(NULL), 0, "no diff: no difference");
	plan_diff_free(NULL);
	is_str(plan_diff_area_name(PLAN_DIFF_ITEMS), "items", "an area's name");
	is_str(plan_diff_area_name(99), "?", "an unknown area");
	is_str(plan_diff_change_name(PLAN_DIFF_MOVED), "moved", "a change's name");
	is_str(plan_diff_change_name(-1), "?", "an unknown change");
}

static void test_stream_error(const plan_t *v)
{
	FILE *f = fopen("/dev/full", "w");
	struct plan_diag diag = { 0 };

	if (f == NULL) {
		tap_skip(2, "no /dev/full");
		return;
	}
	setvbuf(f, NULL, _IONBF, 0);
	is_int(plan_dump_json(v, f, NULL, &diag), PLAN_ERR_IO, "a stream that fails: JSON");
	clearerr(f);
	is_int(plan_dump_dot(v, f, NULL, &diag), PLAN_ERR_IO, "a stream that fails: DOT");
	fclose(f);
}

int main(void)
{
	plan_t *rich = sample_rich(), *v = sample_vector();

	if (rich == NULL || v == NULL) {
		printf("Bail out! cannot build the sample plans\n");
		return 1;
	}
	test_texts(v);
	test_json(rich, v);
	test_dot(rich);
	test_diff(rich, v);
	test_stream_error(v);
	plan_free(rich);
	plan_free(v);
	return tap_done();
}
