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
	struct plan_dispatch eager = { .tokens_min = 3, .tokens_max = 3, .variant = PLAN_NONE };
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
	ok(strstr(all, "\"features\": [\n      \"pdl\"\n    ]") != NULL, "the features, by name");
	is_int(count(all, "\"type\": \"programmatic\""), 2, "the programmatic edges");
	is_int(count(all, "\"from_port\": \"launch-completion\""), 1, "an edge's port");
	is_int(count(all, "\"impl\": \"mma\""), 3, "the choices and their candidates");
	ok(strstr(all, "\"op_label\": \"silu_mul#2\",\n      \"impl\": \"fused\",\n"
	           "      \"tuned\": false,\n      \"close\": false") != NULL,
	   "a choice made by default");
	ok(strstr(all, "\"impl\": \"cublaslt\",\n          \"us\": 9.75\n") != NULL,
	   "a candidate's time");
	is_int(count(all, "\"step\": false"), plan_count_choices(rich),
	       "every choice says whether it was confirmed in the step: none was");
	free(all);

	/* (1.9) v1's choice confirmed in the step. */
	plan_t *stepped = sample_rich();
	ok(stepped != NULL && plan_set_choice(stepped, 1, 1, "mma", PLAN_CHOICE_TUNED |
	   PLAN_CHOICE_STEP, NULL) == 0, "a choice set to one confirmed in the step");
	char *st = stepped != NULL ? dump(plan_dump_json, stepped, &one, &rc) : NULL;
	ok(rc == PLAN_OK && st != NULL &&
	   strstr(st, "\"impl\": \"mma\",\n      \"tuned\": true,\n      \"close\": false,\n"
	              "      \"step\": true,\n") != NULL, "its JSON says \"step\": true");
	free(st);
	plan_free(stepped);

	char *part = dump(plan_dump_json, rich, &one, &rc);
	is_int(rc, PLAN_OK, "the JSON dump of one variant");
	is_int(count(part, "\"peak_bytes\": "), 1, "one variant");
	is_int(count(part, "\"tuned\": "), 1, "its one choice alone");
	free(part);

	char *bad = dump(plan_dump_json, rich, &none, &rc);
	is_int(rc, PLAN_ERR_NOT_FOUND, "a variant out of range");
	ok(bad != NULL && bad[0] == '\0', "nothing written for it");
	free(bad);

	char *vec = dump(plan_dump_json, v, NULL, &rc);
	ok(rc == PLAN_OK && strstr(vec, "\"script_hash\": \"0x1122334455667788\"") != NULL &&
	   strstr(vec, "\"created_utc\": \"2023-11-14T22:13:20Z\"") != NULL &&
	   strstr(vec, "\"fingerprint\": \"0x6bed0ed1d5ce4aaf\"") != NULL,
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
	ok(strstr(dot, "\"s1_n0\" -> \"s1_n1\" [style=dashed, label=\"programmatic\"];\n") != NULL,
	   "a programmatic edge, dashed");
	ok(strstr(dot, "\"s1_n0\" -> \"s1_n2\" [style=dashed, label=\"programmatic "
	           "out=launch-completion\"];\n") != NULL, "one from the launch-completion port, named");
	ok(strstr(dot, "\"s1_n1\" -> \"s1_n2\";\n") != NULL, "a default edge, plain");
	ok(strstr(dot, ", features pdl\"];\n") != NULL, "the features in the title");
	free(dot);
}

/* RICH with a choice changed, one removed, one added, an edge made
 * default, and no features: a copy through the API, edited. */
static plan_t *rich_edited(const plan_t *rich)
{
	plan_t *p = plan_clone_program(rich);
	struct plan_meta m = *plan_get_meta(rich);
	int bad = p == NULL;

	m.features = 0;
	bad = bad || plan_set_meta(p, &m, NULL) != 0 || plan_set_stats(p, plan_get_stats(rich), NULL);
	for (uint32_t v = 0; !bad && v < plan_count_variants(rich); v++) {
		const struct plan_variant *var = plan_get_variant(rich, v);
		bad = plan_add_variant(p, var, NULL, NULL) != 0;
		for (uint32_t k = 0; !bad && k < var->nitems; k++) {
			const struct plan_item *it = &var->items[k];
			if (it->kind == PLAN_ITEM_BREAK) {
				bad = plan_add_breakpoint(p, plan_get_breakpoint(rich, it->index), NULL, NULL);
				continue;
			}
			struct plan_segment s = *plan_get_segment(rich, it->index);
			struct plan_edge e[8];
			if (s.nedges > 0)
				memcpy(e, s.edges, s.nedges * sizeof *e);
			for (uint32_t j = 0; j < s.nedges; j++)
				if (e[j].from_port == PLAN_PORT_PROGRAMMATIC)
					e[j].type = e[j].from_port = PLAN_PORT_DEFAULT;
			s.edges = s.nedges ? e : NULL;
			if (s.flags & PLAN_SEG_NODES)
				s.fingerprint = plan_fingerprint(&s);
			bad = plan_add_segment(p, &s, NULL, NULL) != 0;
		}
	}
	for (uint32_t i = 0; !bad && i < plan_count_checks(rich); i++)
		bad = plan_add_check(p, plan_get_check(rich, i), NULL, NULL) != 0;
	for (uint32_t i = 0; !bad && i < plan_count_dispatch(rich); i++)
		bad = plan_add_dispatch(p, plan_get_dispatch(rich, i), NULL, NULL) != 0;
	for (uint32_t i = 0; !bad && i < plan_count_choices(rich); i++) {
		struct plan_choice c = *plan_get_choice(rich, i);
		struct plan_candidate cand[4];
		if (c.op == 2)
			continue;                   /* silu_mul's: removed */
		if (c.ncand > 0)
			memcpy(cand, c.cand, c.ncand * sizeof *cand);
		for (uint32_t k = 0; k < c.ncand; k++)
			cand[k].us *= 3;            /* timings: no difference */
		c.cand = c.ncand ? cand : NULL;
		if (c.variant == 0)
			c.impl = "cublas";          /* changed: mma -> cublas */
		bad = plan_add_choice(p, &c, NULL, NULL) != 0;
	}
	bad = bad || plan_add_choice(p, &(struct plan_choice){ 1, 4, "vec4", 0, 0, NULL }, NULL, NULL);
	if (bad) {
		plan_free(p);
		return NULL;
	}
	return p;
}

static void test_diff_choices(const plan_t *rich)
{
	plan_t *b = rich_edited(rich);
	struct plan_diff *d = b != NULL ? plan_diff(rich, b, 0) : NULL;
	char all[4096] = "";
	size_t at = 0;

	if (!ok(d != NULL, "the rich plan against an edit of its choices, edges and features")) {
		plan_free(b);
		return;
	}
	for (uint32_t i = 0; i < plan_diff_length(d); i++) {
		const struct plan_diff_entry *e = plan_diff_get(d, i);
		if (e->change == PLAN_DIFF_SAME)
			continue;
		int w = snprintf(all + at, sizeof all - at, "%s %s %lld [%s] [%s] [%s] [%s]\n",
		                 plan_diff_area_name(e->area), plan_diff_change_name(e->change),
		                 (long long)e->tokens, e->subject, e->field, e->a, e->b);
		at += w > 0 && (size_t)w < sizeof all - at ? (size_t)w : 0;
	}
	ok(strstr(all, "meta changed 0 [] [features] [pdl] [-]\n") != NULL, "the features");
	ok(strstr(all, "[edges] [0->1 (programmatic) 1->2 0->2 (programmatic out=launch-completion) "
	           "2->3] [0->1 1->2 0->2 (programmatic out=launch-completion) 2->3]") != NULL,
	   "the edge that is no longer programmatic");
	ok(strstr(all, "choices changed 16 [op mm.0 at 16 tokens] [impl (close)] [mma] [cublas]\n") != NULL,
	   "the choice changed, per variant and op");
	ok(strstr(all, "choices removed 16 [op silu_mul#2 at 16 tokens: fused, default from fused] [] "
	           "[op silu_mul#2 at 16 tokens: fused, default from fused] []\n") != NULL,
	   "the choice removed");
	ok(strstr(all, "choices added 4 [op res at 4 tokens: vec4, default] [] [] "
	           "[op res at 4 tokens: vec4, default]\n") != NULL, "the choice added");
	is_int(count(all, "\nchoices "), 3, "and no other choice, though every time changed");
	is_int(count(all, "\n"), 6, "nothing else");
	plan_diff_free(d);
	plan_free(b);
}

/* Every entry of RICH against B that is not context, one a line. */
static void diff_lines(const plan_t *rich, const plan_t *b, char *all, size_t len)
{
	struct plan_diff *d = plan_diff(rich, b, 0);
	size_t at = 0;

	all[0] = '\0';
	for (uint32_t i = 0; d != NULL && i < plan_diff_length(d); i++) {
		const struct plan_diff_entry *e = plan_diff_get(d, i);
		if (e->change == PLAN_DIFF_SAME)
			continue;
		int w = snprintf(all + at, len - at, "%s %s %lld [%s] [%s] [%s] [%s]\n",
		                 plan_diff_area_name(e->area), plan_diff_change_name(e->change),
		                 (long long)e->tokens, e->subject, e->field, e->a, e->b);
		at += w > 0 && (size_t)w < len - at ? (size_t)w : 0;
	}
	plan_diff_free(d);
}

/* (1.9) How a choice was made is a difference: alone or in the step. Two
 * close choices that went different ways are noise only when both were
 * made the same way. */
static void test_diff_step(const plan_t *rich)
{
	plan_t *b = sample_rich();
	char all[2048];

	if (!ok(b != NULL, "diff: a second rich plan"))
		return;
	plan_set_choice(b, 1, 1, "cublas", PLAN_CHOICE_TUNED | PLAN_CHOICE_STEP, NULL);
	diff_lines(rich, b, all, sizeof all);
	is_str(all, "choices changed 4 [op mm.0 at 4 tokens] [chosen] [tuned] [tuned in the step]\n",
	       "diff: only the step flag differs: one difference, how it was chosen");
	plan_set_choice(b, 0, 1, "cublas", PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE | PLAN_CHOICE_STEP,
	                NULL);
	plan_set_choice(b, 1, 1, "cublas", PLAN_CHOICE_TUNED, NULL);
	diff_lines(rich, b, all, sizeof all);
	is_str(all, "choices changed 16 [op mm.0 at 16 tokens] [impl] [mma] [cublas]\n"
	       "choices changed 16 [op mm.0 at 16 tokens] [chosen] [tuned] [tuned in the step]\n",
	       "diff: close both, one alone and one in the step: the impl is a difference");
	plan_free(b);
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

	test_diff_choices(rich);

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

/* The rich plan's variants repeat no run of ops four times: drawn whole,
 * as with nodes asked for. */
static void test_fold(const plan_t *rich)
{
	uint32_t first = 9, period = 9, count = 9;
	char *a, *b;
	int rc = 0;

	ok(plan_variant_fold(rich, plan_count_variants(rich), &first, &period, &count) == 0 &&
	   first == 0 && period == 0 && count == 0, "plan_variant_fold: a variant out of range, 0");
	for (uint32_t v = 0; v < plan_count_variants(rich); v++)
		if (plan_variant_fold(rich, v, &first, &period, &count) == 1)
			ok(count < PLAN_DOT_FOLD_MIN && period > 0, "variant %u: %u repeats of %u", v,
			   count, period);
	a = dump(plan_dump_dot, rich, NULL, &rc);
	b = dump(plan_dump_dot, rich, &(struct plan_dump_opts){ .variant = PLAN_NONE, .nodes = 1 }, &rc);
	ok(a != NULL && b != NULL && strcmp(a, b) == 0 && strstr(a, "repeat") == NULL,
	   "no fold: the DOT the same with and without nodes asked for");
	free(a);
	free(b);
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
	test_fold(rich);
	test_diff(rich, v);
	test_diff_step(rich);
	test_stream_error(v);
	plan_free(rich);
	plan_free(v);
	return tap_done();
}
