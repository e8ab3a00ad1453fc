/*
 * plan-recorded.c - libplan's model of recorded plans (format 1.4): the
 * builder's checks, plan_validate's rules, the layer folding of the DOT
 * dump, the texts and plan_diff of two recordings. The recordings are
 * plan-sample.c's sample_recorded_ex(), whose content
 * formats/plan-format.md describes ("The recorded vector"); expected
 * values are read off that description.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan-sample.h"
#include "plan.h"
#include "tap.h"

/* A recorded plan with a module, a function of two 8-byte parameters, an
 * allocation of 4096 bytes and one variant: the base of the builder's
 * checks. */
static plan_t *base(void)
{
	plan_t *p = plan_new();
	static const uint8_t img[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct plan_param_info pi[] = { { 0, 8 }, { 8, 8 } };

	if (p == NULL ||
	    plan_set_recording(p, &(struct plan_recording){ .command = "prog", .step_rule = "repeat",
	                       .steps = 1 }, NULL) != 0 ||
	    plan_add_module(p, &(struct plan_module){ "m", 7, sizeof img, PLAN_MODULE_IMAGE, "", img },
	                    NULL, NULL) != 0 ||
	    plan_add_function(p, &(struct plan_function){ 0, "_Z1kPfS_", 2, pi }, NULL, NULL) != 0 ||
	    plan_add_alloc(p, &(struct plan_alloc){ 0x10000, 4096, 0, 0, NULL }, NULL, NULL) != 0 ||
	    plan_add_variant(p, &(struct plan_variant){ .tokens = 1, .mode = PLAN_MODE_BREAKABLE,
	                     .label = "step", .seen = 1 }, NULL, NULL) != 0) {
		plan_free(p);
		return NULL;
	}
	return p;
}

static uint8_t args16[16];

static struct plan_launch kernel(void)
{
	static struct plan_patch pa[] = { { 0, { 0, 0 } }, { 8, { 0, 4095 } } };

	return (struct plan_launch){ .type = PLAN_NODE_KERNEL, .function = 0, .grid = { 1, 1, 1 },
	                             .block = { 32, 1, 1 }, .nargs = 16, .args = args16,
	                             .npatches = 2, .patches = pa };
}

#define REFUSED(call, what)                                                     \
	do {                                                                    \
		int e_ = (call);                                                \
		if (!ok(e_ == PLAN_ERR_INVALID, "the builder refuses %s", what))  \
			diag("    got %d", e_);                                 \
	} while (0)

static void test_builder(void)
{
	plan_t *p = base(), *s = plan_new();
	uint32_t idx = 9, launch = 0;
	struct plan_launch l;
	struct plan_patch bad[] = { { 4, { 0, 0 } } }, past[] = { { 16, { 0, 0 } } };
	struct plan_patch outside[] = { { 0, { 0, 4097 } } }, endp[] = { { 0, { 0, 4096 } } }, back[] = { { 8, { 0, 0 } }, { 0, { 0, 0 } } };
	static const uint8_t img[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint64_t off = 0;

	if (!ok(p != NULL && s != NULL, "a recorded plan is built"))
		return;
	is_int(plan_get_origin(s), PLAN_ORIGIN_SCRIPT, "a new plan is a script plan");
	ok(plan_get_recording(s) == NULL, "and has no recording");
	REFUSED(plan_add_module(s, &(struct plan_module){ "m", 1, 1, 0, "why", NULL }, NULL, NULL),
	        "a module in a script plan");
	{
		unsigned major, minor;
		plan_get_format_version(p, &major, &minor);
		ok(major == 1 && minor == PLAN_FORMAT_MINOR_RECORDED, "a recorded plan is format 1.4");
		plan_get_format_version(s, &major, &minor);
		ok(major == 1 && minor == PLAN_FORMAT_MINOR_SCRIPT, "a script plan 1.3 at most");
	}

	/* Modules once. */
	is_int(plan_add_module(p, &(struct plan_module){ "again", 7, sizeof img, 0, "not kept", NULL },
	                       &idx, NULL), 0, "a module of the same hash and size is added");
	ok(idx == 0 && plan_count_modules(p) == 1, "as the one already there");
	is_int(plan_add_module(p, &(struct plan_module){ "other", 7, 9, 0, "too big", NULL }, &idx,
	                       NULL), 0, "another size is another module");
	ok(idx == 1 && plan_count_modules(p) == 2, "module 1");
	is_int(plan_add_module(p, &(struct plan_module){ "", 8, 4, PLAN_MODULE_IMAGE, "", img }, NULL,
	                       NULL), 0, "a kept image");
	REFUSED(plan_add_module(p, &(struct plan_module){ "x", 9, 0, PLAN_MODULE_IMAGE, "", img }, NULL,
	                        NULL), "a kept image of 0 bytes");

	/* Functions. */
	REFUSED(plan_add_function(p, &(struct plan_function){ 9, "f", 0, NULL }, NULL, NULL),
	        "a function of module 9");
	REFUSED(plan_add_function(p, &(struct plan_function){ 0, "", 0, NULL }, NULL, NULL),
	        "a function without a name");
	REFUSED(plan_add_function(p, &(struct plan_function){ 0, "f", 2,
	                          (struct plan_param_info[]){ { 0, 8 }, { 4, 8 } } }, NULL, NULL),
	        "parameters that overlap");

	/* Allocations: none overlap on a device; plan_find_alloc. */
	REFUSED(plan_add_alloc(p, &(struct plan_alloc){ 0x10800, 16, 0, 0, NULL }, NULL, NULL),
	        "an allocation inside another of its device");
	REFUSED(plan_add_alloc(p, &(struct plan_alloc){ 0xF000, 0x1001, 0, 0, NULL }, NULL, NULL),
	        "an allocation ending inside another");
	is_int(plan_add_alloc(p, &(struct plan_alloc){ 0x10800, 16, 1, 0, NULL }, &idx, NULL), 0,
	       "the same addresses on another device");
	is_int(plan_add_alloc(p, &(struct plan_alloc){ 0x8000, 0x8000, 0, 0, NULL }, NULL, NULL), 0,
	       "an allocation ending where another starts");
	REFUSED(plan_add_alloc(p, &(struct plan_alloc){ 0x40000, 8, 0, PLAN_ALLOC_SNAPSHOT, NULL },
	                       NULL, NULL), "a snapshot without contents");
	is_int(plan_find_alloc(p, 0, 0x10000 + 4095, &off), 0, "find: the last byte of allocation 0");
	ok(off == 4095, "at offset 4095");
	is_int(plan_find_alloc(p, 0, 0x10000 + 4096, &off), 0, "find: one past its end, its end pointer");
	ok(off == 4096, "at offset 4096");
	is_int(plan_find_alloc(p, 0, 0x10000 + 4097, &off), PLAN_NONE, "find: two past its end, none");
	is_int(plan_find_alloc(p, 0, 0x10000, &off), 0,
	       "find: where allocation 2 ends and 0 starts, allocation 0");
	is_int(plan_find_alloc(p, 0, 0x8000, &off), 2, "find: the start of allocation 2");
	is_int(plan_find_alloc(p, 1, 0x10808, &off), 1, "find: allocation 1 on device 1");
	is_int(plan_find_alloc(p, 2, 0x10808, &off), PLAN_NONE, "find: nothing on device 2");

	/* Launches. */
	l = kernel();
	is_int(plan_add_launch(p, &l, &launch, NULL), 0, "a kernel launch with two patches");
	l = kernel(); l.patches = bad; l.npatches = 1;
	REFUSED(plan_add_launch(p, &l, NULL, NULL), "a patch at an unaligned byte");
	l = kernel(); l.patches = past; l.npatches = 1;
	REFUSED(plan_add_launch(p, &l, NULL, NULL), "a patch past the arguments");
	l = kernel(); l.patches = outside; l.npatches = 1;
	REFUSED(plan_add_launch(p, &l, NULL, NULL), "a patch past its allocation's end");
	l = kernel(); l.patches = endp; l.npatches = 1;
	is_int(plan_add_launch(p, &l, NULL, NULL), 0, "a patch at its allocation's end (an end pointer)");
	l = kernel(); l.patches = back; l.npatches = 2;
	REFUSED(plan_add_launch(p, &l, NULL, NULL), "patches out of order");
	l = kernel(); l.nargs = 8;
	l.npatches = 1;
	REFUSED(plan_add_launch(p, &l, NULL, NULL), "arguments shorter than the parameters");
	l = kernel(); l.cluster[0] = 2;
	REFUSED(plan_add_launch(p, &l, NULL, NULL), "a cluster of one dimension");
	REFUSED(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_MEMCPY,
	                        .dst = { 0, 4000 }, .src = { PLAN_NONE, 1 }, .bytes = 97 }, NULL, NULL),
	        "a copy past its destination's end");
	is_int(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_MEMCPY, .function = 5,
	                       .grid = { 3, 3, 3 }, .dst = { 0, 4000 }, .src = { PLAN_NONE, 1 },
	                       .bytes = 96, .value = 7 }, &idx, NULL), 0,
	       "a copy to the end of its destination");
	{
		const struct plan_launch *c = plan_get_launch(p, idx);
		ok(c->function == PLAN_NONE && c->grid[0] == 0 && c->value == 0,
		   "what a copy does not use is cleared");
	}
	REFUSED(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_MEMSET,
	                        .dst = { 0, 0 }, .element = 2, .width = 8, .height = 2,
	                        .pitch = 8 }, NULL, NULL), "a memset whose pitch is below its row");
	REFUSED(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_MEMSET,
	                        .dst = { 0, 0 }, .element = 1, .width = 8, .height = 1,
	                        .value = 256 }, NULL, NULL), "a memset value wider than its element");
	REFUSED(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_HOST }, NULL, NULL),
	        "a host node as a launch");

	/* Segments and breakpoints of a recorded plan. */
	struct plan_node n = { .type = PLAN_NODE_KERNEL, .op = PLAN_NONE, .launch = launch };
	struct plan_segment seg = { .variant = 0, .flags = PLAN_SEG_NODES, .nnodes = 1, .nodes = &n };
	seg.fingerprint = plan_fingerprint_recorded(p, &seg);
	REFUSED(plan_add_segment(p, &(struct plan_segment){ .variant = 0, .op_count = 1,
	                         .flags = PLAN_SEG_NODES, .nnodes = 1, .nodes = &n }, NULL, NULL),
	        "a recorded segment with ops");
	n.launch = 99;
	REFUSED(plan_add_segment(p, &seg, NULL, NULL), "a node of launch 99");
	n.launch = idx;
	REFUSED(plan_add_segment(p, &seg, NULL, NULL), "a kernel node naming a copy");
	n.launch = launch;
	is_int(plan_add_segment(p, &seg, NULL, NULL), 0, "a recorded segment");
	ok(strcmp(plan_get_segment(p, 0)->nodes[0].kernel, "_Z1kPfS_") == 0 &&
	   plan_get_segment(p, 0)->nodes[0].block[0] == 32, "its kernel node shows its launch");
	REFUSED(plan_add_breakpoint(p, &(struct plan_breakpoint){ .variant = 0, .op = 0,
	                            .name = "b", .reason = PLAN_BREAK_RECORDED, .launch_first = idx,
	                            .launch_count = 1 }, NULL, NULL), "a recorded break of op 0");
	REFUSED(plan_add_breakpoint(p, &(struct plan_breakpoint){ .variant = 0, .op = PLAN_NONE,
	                            .name = "b", .reason = PLAN_BREAK_KIND, .launch_first = idx,
	                            .launch_count = 1 }, NULL, NULL), "a recorded break of reason kind");
	REFUSED(plan_add_breakpoint(p, &(struct plan_breakpoint){ .variant = 0, .op = PLAN_NONE,
	                            .name = "b", .reason = PLAN_BREAK_RECORDED, .launch_first = idx,
	                            .launch_count = 2 }, NULL, NULL), "launches past the last");
	is_int(plan_add_breakpoint(p, &(struct plan_breakpoint){ .variant = 0, .op = PLAN_NONE,
	                           .name = "copy", .reason = PLAN_BREAK_RECORDED,
	                           .detail = "host memory", .launch_first = idx, .launch_count = 1 },
	                           NULL, NULL), 0, "a recorded break");
	{
		struct plan_diag d = { 0 };
		is_int(plan_validate(p, &d), 0, "the plan built is valid (%s)", d.message);
	}
	{
		plan_t *q = plan_new();
		ok(q != NULL && plan_set_recording(q, &(struct plan_recording){ .command = "x" },
		                                   NULL) == 0, "a recording on a new plan");
		REFUSED(plan_add_segment(s, &seg, NULL, NULL), "a recorded segment in a script plan");
		plan_free(q);
	}
	{
		plan_t *q = sample_vector();
		REFUSED(plan_set_recording(q, &(struct plan_recording){ .command = "x" }, NULL),
		        "a recording on a plan with a program");
		plan_free(q);
	}
	{
		plan_t *c = plan_clone_program(p);
		ok(c != NULL && plan_get_origin(c) == PLAN_ORIGIN_RECORDED &&
		   plan_count_modules(c) == 3 && plan_count_allocs(c) == 3 &&
		   plan_count_launches(c) == plan_count_launches(p) && plan_count_variants(c) == 0,
		   "plan_clone_program keeps the recording and what it recorded, not the variants");
		ok(c != NULL && plan_find_alloc(c, 0, 0x10010, &off) == 0 && off == 16,
		   "and finds addresses in its allocations");
		plan_free(c);
	}
	plan_free(p);
	plan_free(s);
}

/* A recorded plan of one variant of MODE: one graph a step, and with
 * BREAK a recorded break after it. */
static plan_t *one_graph(int mode, int with_break)
{
	plan_t *p = plan_new();
	static const uint8_t img[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct plan_param_info pi[] = { { 0, 8 }, { 8, 8 } };
	struct plan_launch l = kernel();
	uint32_t li = 0, lb = 0;

	if (p == NULL ||
	    plan_set_recording(p, &(struct plan_recording){ .command = "prog", .step_rule = "repeat",
	                       .steps = 3 }, NULL) != 0 ||
	    plan_add_module(p, &(struct plan_module){ "m", 7, sizeof img, PLAN_MODULE_IMAGE, "", img },
	                    NULL, NULL) != 0 ||
	    plan_add_function(p, &(struct plan_function){ 0, "_Z1kPfS_", 2, pi }, NULL, NULL) != 0 ||
	    plan_add_alloc(p, &(struct plan_alloc){ 0x10000, 4096, 0, 0, NULL }, NULL, NULL) != 0 ||
	    plan_add_variant(p, &(struct plan_variant){ .tokens = 1, .mode = mode,
	                     .label = "repeat", .seen = 3 }, NULL, NULL) != 0 ||
	    plan_add_launch(p, &l, &li, NULL) != 0 ||
	    (with_break && plan_add_launch(p, &l, &lb, NULL) != 0)) {
		plan_free(p);
		return NULL;
	}
	struct plan_node n = { .type = PLAN_NODE_KERNEL, .op = PLAN_NONE, .launch = li };
	struct plan_segment seg = { .variant = 0, .flags = PLAN_SEG_NODES, .nnodes = 1, .nodes = &n };
	seg.fingerprint = plan_fingerprint_recorded(p, &seg);
	if (plan_add_segment(p, &seg, NULL, NULL) != 0 ||
	    (with_break &&
	     plan_add_breakpoint(p, &(struct plan_breakpoint){ .variant = 0, .op = PLAN_NONE,
	                         .name = "eager.0", .reason = PLAN_BREAK_RECORDED,
	                         .launch_first = lb, .launch_count = 1 }, NULL, NULL) != 0)) {
		plan_free(p);
		return NULL;
	}
	return p;
}

/* A recorded step of graph launches only is a full-graph variant: full
 * exactly when no item is a breakpoint, breakable otherwise. */
static void test_full_variants(void)
{
	struct plan_diag d = { 0 };
	plan_t *p = one_graph(PLAN_MODE_FULL, 0), *q = NULL;
	void *buf = NULL;
	size_t len = 0;

	if (!ok(p != NULL, "full: a recorded full-graph variant is built"))
		return;
	is_int(plan_validate(p, &d), 0, "full: a step of one graph, no break, is valid (%s)",
	       d.message);
	is_int(plan_write_memory(p, &buf, &len, &d), 0, "full: it is written (%s)", d.message);
	is_int(plan_read_memory(buf, len, NULL, &q, &d), 0, "full: and read back (%s)", d.message);
	ok(q != NULL && plan_get_variant(q, 0)->mode == PLAN_MODE_FULL &&
	   plan_get_variant(q, 0)->nitems == 1, "full: mode full, one segment");
	plan_free(q);
	free(buf);
	plan_free(p);

	p = one_graph(PLAN_MODE_BREAKABLE, 0);
	is_int(p != NULL ? plan_validate(p, &d) : -1, PLAN_ERR_INVALID,
	       "full: a breakable variant without a break is refused");
	ok(strstr(d.message, "is breakable, not full (0 breakpoints)") != NULL, "saying so (%s)",
	   d.message);
	plan_free(p);

	p = one_graph(PLAN_MODE_BREAKABLE, 1);
	is_int(p != NULL ? plan_validate(p, &d) : -1, 0,
	       "full: a breakable variant with a break is valid (%s)", d.message);
	plan_free(p);

	p = one_graph(PLAN_MODE_FULL, 1);
	is_int(p != NULL ? plan_validate(p, &d) : -1, PLAN_ERR_INVALID,
	       "full: a full variant with a break is refused");
	ok(strstr(d.message, "is full, not breakable (1 breakpoint)") != NULL, "saying so (%s)",
	   d.message);
	plan_free(p);

	p = one_graph(PLAN_MODE_EAGER, 0);
	is_int(p != NULL ? plan_validate(p, &d) : -1, PLAN_ERR_INVALID,
	       "full: an eager recorded variant is refused");
	ok(strstr(d.message, "is eager, not full") != NULL, "saying so (%s)", d.message);
	plan_free(p);
}

/* plan_validate's rules, broken one by one on copies of the sample (the
 * builder checks records one at a time; these need the whole plan). */
static void test_validate(void)
{
	plan_t *p = sample_recorded(2);
	struct plan_diag d = { 0 };

	if (!ok(p != NULL, "the recorded sample is built"))
		return;
	is_int(plan_validate(p, &d), 0, "the recorded sample is valid (%s)", d.message);
	plan_free(p);

	p = base();
	{
		/* A variant of no items. */
		is_int(plan_validate(p, &d), PLAN_ERR_INVALID, "a variant without items is refused");
		ok(strstr(d.message, "no items") != NULL, "saying so (%s)", d.message);
	}
	plan_free(p);

	p = base();
	{
		/* A recording whose step rule is unknown. */
		plan_set_recording(p, &(struct plan_recording){ .command = "prog", .step_rule = "steps",
		                   .steps = 1 }, NULL);
		struct plan_launch l = kernel();
		uint32_t li;
		plan_add_launch(p, &l, &li, NULL);
		struct plan_node n = { .type = PLAN_NODE_KERNEL, .op = PLAN_NONE, .launch = li };
		struct plan_segment seg = { .variant = 0, .flags = PLAN_SEG_NODES, .nnodes = 1, .nodes = &n };
		seg.fingerprint = plan_fingerprint_recorded(p, &seg) ^ 1;
		plan_add_segment(p, &seg, NULL, NULL);
		/* A break after it: the variant is breakable. */
		plan_add_launch(p, &l, &li, NULL);
		plan_add_breakpoint(p, &(struct plan_breakpoint){ .variant = 0, .op = PLAN_NONE,
		                    .name = "eager.0", .reason = PLAN_BREAK_RECORDED,
		                    .launch_first = li, .launch_count = 1 }, NULL, NULL);
		is_int(plan_validate(p, &d), PLAN_ERR_INVALID, "an unknown step rule is refused");
		ok(strstr(d.message, "step rule") != NULL, "saying so (%s)", d.message);
		plan_set_recording(p, &(struct plan_recording){ .command = "prog", .step_rule = "repeat",
		                   .steps = 1 }, NULL);
		is_int(plan_validate(p, &d), PLAN_ERR_INVALID, "a wrong recorded fingerprint is refused");
		ok(strstr(d.message, "fingerprint") != NULL, "saying so (%s)", d.message);
		plan_set_recording(p, &(struct plan_recording){ .command = "prog", .step_rule = "repeat",
		                   .steps = 0 }, NULL);
		is_int(plan_validate(p, &d), PLAN_ERR_INVALID, "more steps seen than recorded");
	}
	plan_free(p);
	test_full_variants();
}

static void test_fingerprint(void)
{
	plan_t *a = sample_recorded(2), *b = sample_recorded_ex(&(struct sample_rec_opts){
		.layers = 2, .grid = 1 });
	plan_t *c = sample_recorded_ex(&(struct sample_rec_opts){ .layers = 2, .rename = 1 });

	if (!ok(a && b && c, "three recordings"))
		goto out;
	ok(plan_get_segment(a, 1)->fingerprint == plan_get_segment(b, 1)->fingerprint,
	   "a graph the change does not touch keeps its fingerprint");
	ok(plan_get_segment(a, 0)->fingerprint != plan_get_segment(b, 0)->fingerprint,
	   "a grid enters the recorded fingerprint");
	ok(plan_get_segment(a, 0)->fingerprint != plan_get_segment(c, 0)->fingerprint,
	   "a kernel's name enters it");
	ok(plan_get_segment(a, 0)->fingerprint != plan_fingerprint(plan_get_segment(a, 0)),
	   "it is not the script fingerprint of the same nodes (it has clusters and patches)");
out:
	plan_free(a);
	plan_free(b);
	plan_free(c);
}

static char *dump_dot(const plan_t *plan, const struct plan_dump_opts *opts)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return NULL;
	plan_dump_dot(plan, f, opts, NULL);
	fclose(f);
	return buf;
}

static const char *upper(const char *raw, char *buf, size_t len, void *ctx)
{
	(void)ctx;
	snprintf(buf, len, "<%s>", raw);
	return buf;
}

static void test_fold(void)
{
	plan_t *p = sample_recorded(7);
	uint32_t first, period, count;
	char *dot;

	if (!ok(p != NULL, "a recording of 7 layers"))
		return;
	ok(plan_segment_fold(p, plan_get_segment(p, 1), &first, &period, &count) == 1 &&
	   first == 0 && period == 2 && count == 7, "its graph folds: 2 nodes from 0, x 7");
	ok(plan_segment_fold(p, plan_get_segment(p, 0), &first, &period, &count) == 0 && count == 0,
	   "a graph of no repeat does not fold");
	dot = dump_dot(p, &(struct plan_dump_opts){ .variant = 1, .kernel_text = upper });
	ok(dot != NULL && strstr(dot, "label=\"x 7\"") != NULL, "DOT labels the layer x 7");
	ok(dot != NULL && strstr(dot, "\"s1_n2\"") == NULL && strstr(dot, "\"s1_n1\" -> \"s1_n0\"") != NULL,
	   "draws the layer once, with an edge back for the repeat");
	ok(dot != NULL && strstr(dot, "<_Z6matmulIfLi128EEvPKT_S2_PS0_iii>") != NULL,
	   "and shows kernels as the callback gives them");
	free(dot);
	dot = dump_dot(p, &(struct plan_dump_opts){ .variant = 1, .nodes = 1 });
	ok(dot != NULL && strstr(dot, "label=\"x 7\"") == NULL && strstr(dot, "\"s1_n13\" [") != NULL,
	   "with nodes asked for, every node of the 7 layers, nothing folded");
	free(dot);
	ok(plan_variant_fold(p, 1, &first, &period, &count) == 0 && count == 0,
	   "plan_variant_fold leaves a recorded plan to plan_segment_fold");
	plan_free(p);
}

static void test_texts(void)
{
	plan_t *p = sample_recorded(2);
	char buf[256];

	if (p == NULL)
		return;
	ok(strcmp(plan_launch_text(p, 2, NULL, buf, sizeof buf),
	          "kernel _Z6matmulIfLi128EEvPKT_S2_PS0_iii <<<(8,4,1), (128,1,1), 49152>>> "
	          "cluster (2,1,1) pdl") == 0, "a kernel launch's text (%s)", buf);
	ok(strcmp(plan_launch_text(p, 0, NULL, buf, sizeof buf),
	          "memcpy 16 B 0x560000001000 -> a0+0 (host bytes kept)") == 0,
	   "a copy's (%s)", buf);
	ok(strcmp(plan_launch_text(p, 3, NULL, buf, sizeof buf),
	          "memset 256 x 4 B = 0x0 -> a1+8192") == 0, "a memset's (%s)", buf);
	ok(strcmp(plan_ns_text(0, buf, sizeof buf), "-") == 0 &&
	   strcmp(plan_ns_text(999, buf, sizeof buf), "999 ns") == 0 &&
	   strcmp(plan_ns_text(41000, buf, sizeof buf), "41.0 us") == 0 &&
	   strcmp(plan_ns_text(1200000, buf, sizeof buf), "1.20 ms") == 0 &&
	   strcmp(plan_ns_text(2500000000u, buf, sizeof buf), "2.50 s") == 0, "times");
	plan_free(p);
}

static uint32_t find_entry(const struct plan_diff *d, int area, int change, const char *a,
                           const char *b)
{
	for (uint32_t i = 0; i < plan_diff_length(d); i++) {
		const struct plan_diff_entry *e = plan_diff_get(d, i);
		if (e->area == area && e->change == change && (a == NULL || strstr(e->a, a)) &&
		    (b == NULL || strstr(e->b, b)))
			return i;
	}
	return PLAN_NONE;
}

static void test_diff(void)
{
	plan_t *a = sample_recorded(2);
	plan_t *b = sample_recorded_ex(&(struct sample_rec_opts){ .layers = 2, .rename = 1,
	                                                        .move_break = 1, .module_changed = 1 });
	plan_t *one = sample_recorded_ex(&(struct sample_rec_opts){ .layers = 2, .one_variant = 1 });
	struct plan_diff *d;

	if (!ok(a && b && one, "recordings to compare"))
		goto out;
	d = plan_diff(a, a, 0);
	ok(d != NULL && plan_diff_count(d) == 0, "a recording against itself: no difference");
	plan_diff_free(d);

	d = plan_diff(a, b, 0);
	if (ok(d != NULL, "a recording against a changed one")) {
		ok(find_entry(d, PLAN_DIFF_KERNELS, PLAN_DIFF_RENAMED, "_Z6matmulIfLi128E",
		              "_Z6matmulIfLi256E") != PLAN_NONE, "matmul renamed: 128 -> 256");
		ok(find_entry(d, PLAN_DIFF_ITEMS, PLAN_DIFF_MOVED, "item 2: break cublasLt",
		              "item 1: break cublasLt") != PLAN_NONE, "the library GEMM's break moved");
		ok(find_entry(d, PLAN_DIFF_MODULES, PLAN_DIFF_CHANGED, "0x6115ad41a682bb54", NULL) !=
		   PLAN_NONE, "module 0's hash changed");
		ok(find_entry(d, PLAN_DIFF_KERNELS, PLAN_DIFF_ADDED, NULL, NULL) == PLAN_NONE &&
		   find_entry(d, PLAN_DIFF_KERNELS, PLAN_DIFF_REMOVED, NULL, NULL) == PLAN_NONE,
		   "no kernel added or removed");
		ok(strcmp(plan_diff_area_name(PLAN_DIFF_MODULES), "modules") == 0 &&
		   strcmp(plan_diff_area_name(PLAN_DIFF_KERNELS), "kernels") == 0, "the new areas' names");
		plan_diff_free(d);
	}
	d = plan_diff(a, one, 0);
	ok(d != NULL && find_entry(d, PLAN_DIFF_VARIANTS, PLAN_DIFF_REMOVED, "prefill_step", NULL) !=
	   PLAN_NONE, "a variant gone, by label");
	plan_diff_free(d);
	{
		plan_t *s = sample_vector();
		d = plan_diff(s, a, PLAN_DIFF_IGNORE_ENV);
		ok(d != NULL && find_entry(d, PLAN_DIFF_META, PLAN_DIFF_CHANGED, "script", "recorded") !=
		   PLAN_NONE, "a script plan against a recording: the origin differs");
		plan_diff_free(d);
		plan_free(s);
	}
out:
	plan_free(a);
	plan_free(b);
	plan_free(one);
}

/* Format 1.7: the items' start offsets, their rules and their version. */
/* Whether P, written to memory and read back, reads as format MAJOR.MINOR
 * (a failure to write or read says why, as a diagnostic, and is false). */
static int written_as(const plan_t *p, unsigned major, unsigned minor)
{
	struct plan_diag d = { 0 };
	void *buf = NULL;
	size_t len = 0;
	plan_t *q = NULL;
	unsigned got_major = 0, got_minor = 0;

	if (plan_write_memory(p, &buf, &len, &d) != 0 ||
	    plan_read_memory(buf, len, NULL, &q, &d) != 0) {
		diag("written and read back: %s", d.message);
		free(buf);
		return 0;
	}
	plan_get_format_version(q, &got_major, &got_minor);
	plan_free(q);
	free(buf);
	if (got_major != major || got_minor != minor)
		diag("read back as %u.%u", got_major, got_minor);
	return got_major == major && got_minor == minor;
}

static void test_offsets(void)
{
	plan_t *p = sample_recorded_ex(&(struct sample_rec_opts){ .layers = 2, .offsets = 1 });
	plan_t *old = sample_recorded(2);
	struct plan_diag d = { 0 };
	uint32_t missing = 0;
	void *buf = NULL;
	size_t len = 0;

	if (p == NULL || old == NULL) {
		tap_skip(1, "the sample plans cannot be built");
		goto out;
	}
	is_int(plan_validate(p, &d), 0, "offsets that start at 0 and grow are valid (%s)", d.message);
	is_int(plan_variant_offsets(p, 0, &missing), PLAN_OFFSETS_START | PLAN_OFFSETS_ISSUE,
	       "decode_step has start and launch offsets");
	is_int(missing, PLAN_NONE, "and none is missing");
	is_int(plan_variant_offsets(old, 0, &missing), 0, "a plan without offsets has none");
	is_int(missing, 1, "the first item without one is item 1 (item 0 starts the step)");
	ok(written_as(old, 1, 4), "a recorded plan without offsets is still written as 1.4");
	ok(written_as(p, 1, PLAN_FORMAT_MINOR_OFFSETS), "one with offsets as 1.%u",
	   PLAN_FORMAT_MINOR_OFFSETS);
	static const struct { int mode; const char *why; const char *what; } bad[] = {
		{ 2, "variant 0 item 2 starts before the item before it", "an item before its predecessor" },
		{ 3, "variant 0: 1 of its 2 items past the first have a start offset and 2 a launch offset",
		  "some items with a start offset, some without" },
		{ 4, "variant 0 item 0: start offsets 100 and 0 ns", "a first item not at 0" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		plan_t *b = sample_recorded_ex(&(struct sample_rec_opts){ .layers = 2,
		                                                          .offsets = bad[i].mode });
		memset(&d, 0, sizeof d);
		is_int(b != NULL ? plan_validate(b, &d) : -1, PLAN_ERR_INVALID, "%s: invalid",
		       bad[i].what);
		if (!ok(strstr(d.message, bad[i].why) != NULL, "  named: %s", bad[i].why))
			diag("    got: %s", d.message);
		/* and the writer refuses what plan_validate refuses */
		free(buf);
		buf = NULL;
		ok(b != NULL && plan_write_memory(b, &buf, &len, &d) != 0, "  and is not written");
		plan_free(b);
	}
	/* a script plan has no recorded times: the builder refuses them */
	plan_t *sp = plan_new();
	uint32_t v = 0;
	memset(&d, 0, sizeof d);
	if (sp != NULL && plan_add_variant(sp, &(struct plan_variant){ .tokens = 1,
	                                   .mode = PLAN_MODE_BREAKABLE }, &v, &d) == 0)
		is_int(plan_add_segment(sp, &(struct plan_segment){ .variant = v, .start_ns = 5 }, NULL,
		                        &d), PLAN_ERR_INVALID, "a start offset in a script plan: refused");
	else
		ok(0, "a script plan's variant is added (%s)", d.message);
	plan_free(sp);
out:
	free(buf);
	plan_free(p);
	plan_free(old);
}

int main(void)
{
	test_builder();
	test_validate();
	test_fingerprint();
	test_fold();
	test_texts();
	test_diff();
	test_offsets();
	return tap_done();
}
