/*
 * plan-validate.c - plan_validate() rejects each inconsistency it claims to
 * (plan-format.md, "Semantic rules"), the writer refuses an invalid plan,
 * and the builder of model.c refuses bad arguments with PLAN_ERR_INVALID
 * and a message.
 */
#include "config.h"

#include <string.h>

#include "internal.h"
#include "plan-sample.h"
#include "tap.h"

/* A plan of 3 ops on 2 tensors, one breakable variant of 4 tokens and no
 * items yet: the base of the item tests. */
static plan_t *program_plan(void)
{
	plan_t *p = plan_new();
	uint32_t a = 0, b = 1;

	plan_set_layout(p, &(struct plan_layout){ 1024, 1024, 256 }, NULL);
	plan_add_dim(p, &(struct plan_dim){ "T", "", 4, PLAN_DIM_TOKENS }, NULL, NULL);
	plan_add_tensor(p, &(struct plan_tensor){ .name = "a", .dtype = PLAN_DTYPE_F32,
		.role = PLAN_ROLE_INPUT, .rank = 1, .shape = { { 0, 4 } }, .offset = 0, .bytes = 16,
		.feed = { .var = PLAN_NONE } }, NULL, NULL);
	plan_add_tensor(p, &(struct plan_tensor){ .name = "b", .dtype = PLAN_DTYPE_F32,
		.role = PLAN_ROLE_OUTPUT, .rank = 1, .shape = { { 0, 4 } }, .offset = 256, .bytes = 16,
		.feed = { .var = PLAN_NONE } }, NULL, NULL);
	for (int i = 0; i < 3; i++)
		plan_add_op(p, &(struct plan_op){ "add", "", 0, 0, 0, 1, 1, 0, &a, &b, NULL }, NULL, NULL);
	return p;
}

static plan_t *small_plan(void)
{
	plan_t *p = program_plan();

	plan_add_variant(p, &(struct plan_variant){ .tokens = 4, .mode = PLAN_MODE_BREAKABLE, .peak_bytes = 0 }, NULL, NULL);
	return p;
}

static int add_seg(plan_t *p, uint32_t variant, uint32_t first, uint32_t count)
{
	return plan_add_segment(p, &(struct plan_segment){ .variant = variant, .op_first = first,
	                                                   .op_count = count }, NULL, NULL);
}

static int add_bp(plan_t *p, uint32_t variant, uint32_t op, int reason)
{
	return plan_add_breakpoint(p, &(struct plan_breakpoint){ variant, op, "bp", reason, "",
	                                                         0, 0, NULL, NULL, 0, 0, 0, 0, 0 }, NULL, NULL);
}

/* PLAN must fail validation with PLAN_ERR_INVALID and a message holding
 * WANT; then it is freed. */
static void expect_invalid(plan_t *p, const char *want, const char *what)
{
	struct plan_diag d = { 0 };
	int err = plan_validate(p, &d);

	if (!ok(err == PLAN_ERR_INVALID && strstr(d.message, want) != NULL, "rejected: %s", what))
		diag("    code %d, message \"%s\", wanted \"%s\"", err, d.message, want);
	plan_free(p);
}

static void test_valid(void)
{
	plan_t *p = sample_rich();
	struct plan_diag d = { 0 };
	void *data;
	size_t len;

	is_int(plan_validate(p, &d), 0, "the rich sample plan is valid");
	plan_free(p);
	p = sample_vector();
	is_int(plan_validate(p, &d), 0, "the vector plan is valid");
	plan_free(p);
	p = plan_new();
	is_int(plan_validate(p, &d), 0, "an empty plan is valid");
	plan_free(p);

	p = small_plan();
	add_seg(p, 0, 0, 2);
	add_bp(p, 0, 2, PLAN_BREAK_KIND);
	is_int(plan_validate(p, &d), 0, "a segment then a breakpoint covering every op is valid");
	plan_free(p);

	p = sample_rich();
	plan_set_tensor_placement(p, plan_find_tensor(p, "w"), 0, 16, NULL);
	d.message[0] = '\0';
	is_int(plan_write_memory(p, &data, &len, &d), PLAN_ERR_INVALID, "the writer refuses an invalid plan");
	ok(data == NULL && len == 0 && strstr(d.message, "overlap") != NULL,
	   "and says why, writing nothing (%s)", d.message);
	plan_free(p);
}

static void test_program(void)
{
	plan_t *p;

	p = sample_rich();
	plan_set_tensor_placement(p, 1, plan_get_layout(p)->arena_bytes - 256, 512, NULL);
	expect_invalid(p, "lies outside the", "a tensor past the arena's end");
	p = sample_rich();
	plan_set_tensor_placement(p, 1, UINT64_MAX - 255, 512, NULL);
	expect_invalid(p, "lies outside the", "a tensor whose end overflows");
	p = sample_rich();
	plan_set_tensor_placement(p, 1, 8, 16, NULL);
	expect_invalid(p, "not a multiple of the alignment", "a misaligned tensor");
	p = sample_rich();
	plan_set_tensor_placement(p, plan_find_tensor(p, "w"), plan_get_tensor(p, 0)->offset, 16, NULL);
	expect_invalid(p, "overlap in the arena", "two persistent tensors overlapping");
	p = sample_rich();
	plan_set_tensor_placement(p, plan_find_tensor(p, "h"), plan_get_tensor(p, 0)->offset, 16, NULL);
	expect_invalid(p, "one is persistent", "an activation overlapping a weight");
	p = sample_rich();
	plan_set_var_offset(p, 0, plan_get_tensor(p, plan_find_tensor(p, "w"))->offset + 4, NULL);
	expect_invalid(p, "overlap in the arena", "a var mirror inside a tensor");
	p = sample_rich();
	plan_set_var_offset(p, 1, plan_get_layout(p)->arena_bytes - 2, NULL);
	expect_invalid(p, "4-byte slot", "a var mirror past the arena's end");
	p = sample_rich();
	plan_add_dim(p, &(struct plan_dim){ "H", "", 3, 0 }, NULL, NULL);
	expect_invalid(p, "both named 'H'", "two dims of one name");
	p = sample_rich();
	plan_add_dim(p, &(struct plan_dim){ "T2", "", 3, PLAN_DIM_TOKENS }, NULL, NULL);
	expect_invalid(p, "both the token dim", "two token dims");
	p = sample_rich();
	plan_add_dim(p, &(struct plan_dim){ "", "", 3, 0 }, NULL, NULL);
	expect_invalid(p, "empty name", "a dim without a name");
	p = sample_rich();
	plan_add_dim(p, &(struct plan_dim){ "Z", "", -1, 0 }, NULL, NULL);
	expect_invalid(p, "negative value", "a negative dim");
	p = sample_rich();
	plan_add_var(p, &(struct plan_var){ "kv_len", 0, 1, 5, 0 }, NULL, NULL);
	expect_invalid(p, "both named 'kv_len'", "two vars of one name");
	p = sample_rich();
	plan_add_tensor(p, &(struct plan_tensor){ .name = "w", .dtype = PLAN_DTYPE_F32,
		.role = PLAN_ROLE_ACTIVATION, .rank = 1, .shape = { { PLAN_NONE, 1 } },
		.feed = { .var = PLAN_NONE } }, NULL, NULL);
	expect_invalid(p, "both named 'w'", "two tensors of one name");
	p = sample_rich();
	plan_add_tensor(p, &(struct plan_tensor){ .name = "q", .dtype = PLAN_DTYPE_F32,
		.role = PLAN_ROLE_ACTIVATION, .rank = 1, .shape = { { PLAN_NONE, 1 } },
		.init = { .kind = 9 }, .feed = { .var = PLAN_NONE } }, NULL, NULL);
	expect_invalid(p, "unknown initializer 9", "an unknown initializer");
	p = sample_rich();
	plan_add_tensor(p, &(struct plan_tensor){ .name = "q", .dtype = PLAN_DTYPE_F32,
		.role = PLAN_ROLE_ACTIVATION, .rank = 1, .shape = { { PLAN_NONE, 1 } },
		.feed = { .kind = 10, .var = PLAN_NONE } }, NULL, NULL);
	expect_invalid(p, "unknown feed 10", "an unknown feed");
	p = sample_rich();
	plan_add_tensor(p, &(struct plan_tensor){ .name = "q", .dtype = PLAN_DTYPE_F32,
		.role = PLAN_ROLE_ACTIVATION, .rank = 1, .shape = { { PLAN_NONE, -2 } },
		.feed = { .var = PLAN_NONE } }, NULL, NULL);
	expect_invalid(p, "negative size", "a negative literal axis");
	p = sample_rich();
	uint32_t t0 = 0;
	struct plan_attr bad_bool[] = { { "flag", PLAN_ATTR_BOOL, 2, 0, "" } };
	plan_add_op(p, &(struct plan_op){ "add", "", 0, 0, 0, 1, 1, 1, &t0, &t0, bad_bool }, NULL, NULL);
	expect_invalid(p, "not 0 or 1", "a bool attribute of 2");
	p = sample_rich();
	struct plan_attr no_key[] = { { "", PLAN_ATTR_INT, 2, 0, "" } };
	plan_add_op(p, &(struct plan_op){ "add", "", 0, 0, 0, 1, 1, 1, &t0, &t0, no_key }, NULL, NULL);
	expect_invalid(p, "empty key", "an attribute without a key");
	p = sample_rich();
	plan_add_op(p, &(struct plan_op){ "", "", 0, 0, 0, 1, 1, 0, &t0, &t0, NULL }, NULL, NULL);
	expect_invalid(p, "empty kind", "an op without a kind");
	p = sample_rich();
	plan_set_stats(p, &(struct plan_stats){ .verify_exact = 2 }, NULL);
	expect_invalid(p, "verify_exact", "verify_exact of 2");
}

static void test_items(void)
{
	plan_t *p;

	p = small_plan();
	add_seg(p, 0, 0, 1);
	add_bp(p, 0, 2, PLAN_BREAK_KIND);
	expect_invalid(p, "a gap", "items with a gap (op 1 runs nowhere)");
	p = small_plan();
	add_seg(p, 0, 0, 2);
	add_bp(p, 0, 1, PLAN_BREAK_KIND);
	add_seg(p, 0, 2, 1);
	expect_invalid(p, "an overlap", "items overlapping (op 1 twice)");
	p = small_plan();
	add_seg(p, 0, 0, 2);
	expect_invalid(p, "runs ops up to 2 of 3", "items stopping before the last op");
	p = small_plan();
	add_bp(p, 0, 1, PLAN_BREAK_KIND);
	add_bp(p, 0, 0, PLAN_BREAK_KIND);
	add_seg(p, 0, 2, 1);
	expect_invalid(p, "was due", "items out of op order");
	p = small_plan();
	expect_invalid(p, "runs ops up to 0 of 3", "a variant without items");

	p = small_plan();
	plan_add_variant(p, &(struct plan_variant){ .tokens = 2, .mode = PLAN_MODE_BREAKABLE, .peak_bytes = 0 }, NULL, NULL);
	add_seg(p, 0, 0, 3);
	add_seg(p, 1, 0, 3);
	plan__variant_set_items(p, 0, (struct plan_item[]){ { PLAN_ITEM_SEGMENT, 1 } }, 1, NULL);
	plan__variant_set_items(p, 1, (struct plan_item[]){ { PLAN_ITEM_SEGMENT, 0 } }, 1, NULL);
	expect_invalid(p, "of variant 1", "an item naming another variant's segment");
	p = small_plan();
	add_seg(p, 0, 0, 3);
	plan__variant_set_items(p, 0, (struct plan_item[]){ { PLAN_ITEM_SEGMENT, 0 },
	                                                    { PLAN_ITEM_SEGMENT, 0 } }, 2, NULL);
	expect_invalid(p, "an item twice", "a segment that is an item twice");
	p = small_plan();
	add_seg(p, 0, 0, 3);
	add_seg(p, 0, 0, 3);
	plan__variant_set_items(p, 0, (struct plan_item[]){ { PLAN_ITEM_SEGMENT, 0 } }, 1, NULL);
	expect_invalid(p, "is no item", "a segment that is no item");
	p = small_plan();
	add_seg(p, 0, 0, 3);
	plan__variant_set_items(p, 0, (struct plan_item[]){ { 3, 0 } }, 1, NULL);
	expect_invalid(p, "unknown kind 3", "an item of unknown kind");
	p = small_plan();
	add_seg(p, 0, 0, 3);
	plan__variant_set_items(p, 0, (struct plan_item[]){ { PLAN_ITEM_BREAK, 5 } }, 1, NULL);
	expect_invalid(p, "breakpoint 5 of 0", "an item naming a breakpoint out of range");

	p = small_plan();
	plan_add_variant(p, &(struct plan_variant){ .tokens = 1, .mode = PLAN_MODE_FULL, .peak_bytes = 0 }, NULL, NULL);
	add_seg(p, 0, 0, 3);
	add_seg(p, 1, 0, 2);
	add_bp(p, 1, 2, PLAN_BREAK_KIND);
	expect_invalid(p, "is full but", "a breakpoint in a full variant");
	p = small_plan();
	plan_add_variant(p, &(struct plan_variant){ .tokens = 1, .mode = PLAN_MODE_EAGER, .peak_bytes = 0 }, NULL, NULL);
	add_seg(p, 0, 0, 3);
	add_seg(p, 1, 0, 3);
	expect_invalid(p, "is eager but", "a segment in an eager variant");
	p = small_plan();
	add_seg(p, 0, 0, 2);
	add_bp(p, 0, 2, PLAN_BREAK_MODE);
	expect_invalid(p, "reason mode in a breakable", "reason 'mode' outside an eager variant");
	p = small_plan();
	add_seg(p, 0, 0, 2);
	plan_add_breakpoint(p, &(struct plan_breakpoint){ 0, 2, "", PLAN_BREAK_KIND, "", 0, 0, NULL, NULL, 0, 0, 0, 0, 0 },
	                    NULL, NULL);
	expect_invalid(p, "empty name", "a breakpoint without a name");
}

static void test_captures(void)
{
	plan_t *p;
	struct plan_node n = { PLAN_NODE_KERNEL, 0, "k", { 1, 1, 1 }, { 1, 1, 1 }, 0, 0, NULL, PLAN_NONE };

	p = small_plan();
	plan_add_segment(p, &(struct plan_segment){ .variant = 0, .op_first = 0, .op_count = 3,
		.flags = PLAN_SEG_NODES, .nnodes = 1, .nodes = &n, .fingerprint = 1 }, NULL, NULL);
	expect_invalid(p, "does not match its nodes", "a wrong fingerprint");
	p = small_plan();
	plan_add_segment(p, &(struct plan_segment){ .variant = 0, .op_first = 0, .op_count = 3,
		.nnodes = 1, .nodes = &n }, NULL, NULL);
	expect_invalid(p, "not the nodes flag", "nodes without the nodes flag");
	p = small_plan();
	plan_add_segment(p, &(struct plan_segment){ .variant = 0, .op_first = 0, .op_count = 3,
		.flags = 0x10 }, NULL, NULL);
	expect_invalid(p, "unknown flags 0x10", "a segment with an unknown flag");

	struct plan_node n2[2] = { n, n };
	struct plan_edge self = { .from = 1, .to = 1 };
	struct plan_segment s = { .variant = 0, .op_first = 0, .op_count = 3, .flags = PLAN_SEG_NODES,
	                          .nnodes = 2, .nodes = n2, .nedges = 1, .edges = &self };
	s.fingerprint = plan_fingerprint(&s);
	p = small_plan();
	plan_add_segment(p, &s, NULL, NULL);
	expect_invalid(p, "is not between two", "an edge from a node to itself");

	n2[1].op = 5;
	s.nedges = 0;
	s.fingerprint = plan_fingerprint(&s);
	p = small_plan();
	plan_add_segment(p, &s, NULL, NULL);
	expect_invalid(p, "outside the segment's ops", "a node of an op outside its segment");
	n2[1].op = PLAN_NONE;
	n2[1].type = 12;
	s.fingerprint = plan_fingerprint(&s);
	p = small_plan();
	plan_add_segment(p, &s, NULL, NULL);
	expect_invalid(p, "unknown type 12", "a node of unknown type");
	n2[1].type = PLAN_NODE_KERNEL;

	struct plan_param far[] = { { 0, 4096 } };
	n2[1].nparams = 1;
	n2[1].params = far;
	s.fingerprint = plan_fingerprint(&s);
	p = small_plan();
	plan_add_segment(p, &s, NULL, NULL);
	expect_invalid(p, "outside the 1024-byte arena", "a parameter pointing past the arena");
	struct plan_param unordered[] = { { 3, 0 }, { 3, 256 } };
	n2[1].nparams = 2;
	n2[1].params = unordered;
	s.fingerprint = plan_fingerprint(&s);
	p = small_plan();
	plan_add_segment(p, &s, NULL, NULL);
	expect_invalid(p, "not increasing", "parameters numbered twice");

	p = small_plan();
	add_seg(p, 0, 0, 3);
	plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 1, .tokens_max = 8, .variant = 0 }, NULL, NULL);
	expect_invalid(p, "to variant 0 of 4", "dispatch sending 8 tokens to a 4-token variant");
	p = small_plan();
	add_seg(p, 0, 0, 3);
	plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 2, .tokens_max = 4, .variant = 0 }, NULL, NULL);
	plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 1, .tokens_max = 1, .variant = 0 }, NULL, NULL);
	expect_invalid(p, "does not start above", "dispatch entries out of order");
	p = small_plan();
	add_seg(p, 0, 0, 3);
	plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 1, .tokens_max = 3, .variant = 0 }, NULL, NULL);
	plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 3, .tokens_max = 4, .variant = 0 }, NULL, NULL);
	expect_invalid(p, "does not start above", "dispatch entries overlapping");

	p = small_plan();
	add_seg(p, 0, 0, 3);
	plan_add_variant(p, &(struct plan_variant){ .tokens = 9, .mode = PLAN_MODE_BREAKABLE, .peak_bytes = 0 }, NULL, NULL);
	add_seg(p, 1, 0, 3);
	expect_invalid(p, "not in 1..4", "a variant above the token dim's value");
	p = plan_new();
	plan_add_variant(p, &(struct plan_variant){ .tokens = 1, .mode = PLAN_MODE_EAGER, .peak_bytes = 0 }, NULL, NULL);
	expect_invalid(p, "no token dim", "variants without a token dim");
}

/* The builder of model.c: each refusal is PLAN_ERR_INVALID (or NOT_FOUND
 * for a setter's index) with a message. */
static void builder_case(int err, int want, const struct plan_diag *d, const char *what)
{
	if (!ok(err == want && d->code == want && d->message[0] != '\0', "builder refuses %s", what))
		diag("    code %d, diag code %d, message \"%s\"", err, d->code, d->message);
}

static void test_builder(void)
{
	plan_t *p = small_plan();
	struct plan_diag d;
	uint32_t bad = 7;

#define TRY(call, want, what) do { memset(&d, 0, sizeof d); builder_case((call), want, &d, what); } while (0)
	TRY(plan_add_tensor(p, &(struct plan_tensor){ .name = "z", .dtype = 9, .role = 1, .rank = 1 },
	                    NULL, &d), PLAN_ERR_INVALID, "an unknown dtype");
	TRY(plan_add_tensor(p, &(struct plan_tensor){ .name = "z", .dtype = 1, .role = 0, .rank = 1 },
	                    NULL, &d), PLAN_ERR_INVALID, "an unknown role");
	TRY(plan_add_tensor(p, &(struct plan_tensor){ .name = "z", .dtype = 1, .role = 1, .rank = 5 },
	                    NULL, &d), PLAN_ERR_INVALID, "rank 5");
	TRY(plan_add_tensor(p, &(struct plan_tensor){ .name = "z", .dtype = 1, .role = 1, .rank = 1,
	                    .shape = { { 3, 0 } } }, NULL, &d), PLAN_ERR_INVALID, "an axis naming no dim");
	TRY(plan_add_op(p, &(struct plan_op){ "add", "", 0, 0, 0, 1, 0, 0, &bad, NULL, NULL }, NULL, &d),
	    PLAN_ERR_INVALID, "an op input out of range");
	TRY(plan_add_op(p, &(struct plan_op){ "add", "", 0, 0, 0, 0, 0, 1, NULL, NULL,
	                (struct plan_attr[]){ { "v", PLAN_ATTR_VAR, 3, 0, "" } } }, NULL, &d),
	    PLAN_ERR_INVALID, "a var attribute naming no var");
	TRY(plan_add_op(p, &(struct plan_op){ "add", "", 0, 0, 0, 0, 0, 1, NULL, NULL,
	                (struct plan_attr[]){ { "v", 17, 3, 0, "" } } }, NULL, &d),
	    PLAN_ERR_INVALID, "an attribute of unknown type");
	TRY(plan_add_variant(p, &(struct plan_variant){ .tokens = 2, .mode = 0, .peak_bytes = 0 }, NULL, &d),
	    PLAN_ERR_INVALID, "an unknown mode");
	TRY(plan_add_variant(p, &(struct plan_variant){ .tokens = 0, .mode = 1, .peak_bytes = 0 }, NULL, &d),
	    PLAN_ERR_INVALID, "zero tokens");
	TRY(plan_add_variant(p, &(struct plan_variant){ .tokens = 4, .mode = 1, .peak_bytes = 0 }, NULL, &d),
	    PLAN_ERR_INVALID, "a second variant of 4 tokens");
	TRY(plan_add_segment(p, &(struct plan_segment){ .variant = 5, .op_first = 0, .op_count = 1 },
	                     NULL, &d), PLAN_ERR_INVALID, "a segment of variant 5");
	TRY(plan_add_segment(p, &(struct plan_segment){ .variant = 0, .op_first = 2, .op_count = 2 },
	                     NULL, &d), PLAN_ERR_INVALID, "a segment past the last op");
	TRY(plan_add_breakpoint(p, &(struct plan_breakpoint){ 0, 9, "b", 1, "", 0, 0, NULL, NULL, 0, 0, 0, 0, 0 },
	                        NULL, &d), PLAN_ERR_INVALID, "a breakpoint of op 9");
	TRY(plan_add_breakpoint(p, &(struct plan_breakpoint){ 0, 0, "b", 1, "", 1, 0, &bad, NULL, 0, 0, 0, 0, 0 },
	                        NULL, &d), PLAN_ERR_INVALID, "a breakpoint reading tensor 7");
	TRY(plan_add_breakpoint(p, &(struct plan_breakpoint){ 0, 0, "b", 8, "", 0, 0, NULL, NULL, 0, 0, 0, 0, 0 },
	                        NULL, &d), PLAN_ERR_INVALID, "a breakpoint of unknown reason");
	TRY(plan_add_check(p, &(struct plan_check){ 0, 7, 0, 0, 0 }, NULL, &d),
	    PLAN_ERR_INVALID, "a check of tensor 7");
	TRY(plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 5, .tokens_max = 4, .variant = 0 }, NULL, &d),
	    PLAN_ERR_INVALID, "an empty dispatch range");
	TRY(plan_set_layout(p, &(struct plan_layout){ 0, 0, 24 }, &d),
	    PLAN_ERR_INVALID, "an alignment of 24");
	TRY(plan_add_var(p, &(struct plan_var){ "v", 5, -1, 9, 0 }, NULL, &d),
	    PLAN_ERR_INVALID, "a var of negative step");
	TRY(plan_set_meta(p, &(struct plan_meta){ .backend = 3 }, &d),
	    PLAN_ERR_INVALID, "an unknown backend");
	TRY(plan_set_tensor_placement(p, 9, 0, 0, &d), PLAN_ERR_NOT_FOUND, "placing tensor 9");
	TRY(plan_set_var_offset(p, 0, 0, &d), PLAN_ERR_NOT_FOUND, "placing a var that does not exist");
#undef TRY
	plan_free(p);
}

/* Edges' types and ports, the features, and implementation choices
 * (format 1.1). */
static void test_choices(void)
{
	struct plan_node n = { PLAN_NODE_KERNEL, 0, "k", { 1, 1, 1 }, { 1, 1, 1 }, 0, 0, NULL, PLAN_NONE };
	struct plan_node n2[2] = { n, n };
	struct plan_edge e = { 0, 1, PLAN_EDGE_PROGRAMMATIC, PLAN_PORT_LAUNCH_COMPLETION, 0 };
	struct plan_segment s = { .variant = 0, .op_first = 0, .op_count = 3, .flags = PLAN_SEG_NODES,
	                          .nnodes = 2, .nodes = n2, .nedges = 1, .edges = &e };
	struct plan_diag d = { 0 };
	plan_t *p;

	s.fingerprint = plan_fingerprint(&s);
	p = small_plan();
	plan_add_segment(p, &s, NULL, NULL);
	is_int(plan_validate(p, &d), 0, "a programmatic edge from the launch-completion port is valid");
	plan_free(p);
	e.type = 2;
	s.fingerprint = plan_fingerprint(&s);
	p = small_plan();
	plan_add_segment(p, &s, NULL, NULL);
	expect_invalid(p, "segment 0 edge 0 has unknown type 2", "an edge of type 2");
	e.type = PLAN_EDGE_PROGRAMMATIC;
	e.from_port = 3;
	s.fingerprint = plan_fingerprint(&s);
	p = small_plan();
	plan_add_segment(p, &s, NULL, NULL);
	expect_invalid(p, "unknown port 3", "an edge from port 3");
	e.from_port = PLAN_PORT_PROGRAMMATIC;
	e.to_port = 200;
	s.fingerprint = plan_fingerprint(&s);
	p = small_plan();
	plan_add_segment(p, &s, NULL, NULL);
	expect_invalid(p, "unknown port 200", "an edge to port 200");
	e.to_port = 0;
	p = small_plan();
	plan_add_segment(p, &s, NULL, NULL);
	expect_invalid(p, "does not match its nodes", "a fingerprint that leaves out the edge's type");

	p = small_plan();
	plan_set_meta(p, &(struct plan_meta){ .features = PLAN_FEATURE_PDL | 0x8 }, NULL);
	expect_invalid(p, "unknown features 0x9", "an unknown feature bit");

	struct plan_candidate two[] = { { "mma", 1.5 }, { "cublas", 2.0 } };
#define CHOICE_PLAN(...)                                                        \
	p = small_plan();                                                       \
	add_seg(p, 0, 0, 3);                                                    \
	plan_add_choice(p, &(struct plan_choice){ __VA_ARGS__ }, NULL, NULL)
	CHOICE_PLAN(0, 1, "mma", PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE, 2, two);
	is_int(plan_validate(p, &d), 0, "a tuned, close choice among two candidates is valid");
	ok(plan_find_choice(p, 0, 1) == plan_get_choice(p, 0) && plan_find_choice(p, 0, 2) == NULL &&
	   plan_count_choices(p) == 1, "plan_find_choice finds it by variant and op, and nothing else");
	plan_add_choice(p, &(struct plan_choice){ 0, 2, "mma", 0, 0, NULL }, NULL, NULL);
	plan_add_choice(p, &(struct plan_choice){ 0, 1, "cublas", 0, 0, NULL }, NULL, NULL);
	expect_invalid(p, "choices 0 and 2 are both for op 1 of variant 0", "two choices for one op");
	CHOICE_PLAN(0, 1, "", 0, 0, NULL);
	expect_invalid(p, "choice 0 has an empty implementation name", "an empty implementation");
	CHOICE_PLAN(0, 1, "tiled", PLAN_CHOICE_TUNED, 2, two);
	expect_invalid(p, "chose 'tiled', which is none of its 2 candidates", "a choice of no candidate");
	CHOICE_PLAN(0, 1, "mma", PLAN_CHOICE_CLOSE, 2, two);
	expect_invalid(p, "close but was not tuned", "close without tuned");
	CHOICE_PLAN(0, 1, "mma", PLAN_CHOICE_STEP, 2, two);
	expect_invalid(p, "choice 0 is marked step but was not tuned", "step without tuned");
	CHOICE_PLAN(0, 1, "cublas", PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE | PLAN_CHOICE_STEP, 2, two);
	is_int(plan_validate(p, &d), 0, "a tuned, close choice confirmed in the step is valid");
	plan_free(p);
	CHOICE_PLAN(0, 1, "mma", PLAN_CHOICE_TUNED | 0x8, 2, two);
	expect_invalid(p, "choice 0 has unknown flags 0x9", "an unknown choice flag");
	struct plan_candidate dup[] = { { "mma", 1.5 }, { "cublas", 2.0 }, { "mma", 1.0 } };
	CHOICE_PLAN(0, 1, "mma", PLAN_CHOICE_TUNED, 3, dup);
	expect_invalid(p, "choice 0 candidates 0 and 2 are both named 'mma'", "a candidate twice");
	struct plan_candidate unnamed[] = { { "mma", 1.5 }, { "", 2.0 } };
	CHOICE_PLAN(0, 1, "mma", PLAN_CHOICE_TUNED, 2, unnamed);
	expect_invalid(p, "choice 0 candidate 1 has an empty name", "a candidate without a name");
	static const double bad_us[] = { -0.5, 1.0 / 0.0, -1.0 / 0.0 };
	for (unsigned k = 0; k < 3; k++) {
		struct plan_candidate t[] = { { "mma", 1.5 }, { "cublas", bad_us[k] } };
		CHOICE_PLAN(0, 1, "mma", PLAN_CHOICE_TUNED, 2, t);
		expect_invalid(p, "not a finite number >= 0", "a negative or infinite candidate time");
	}
	struct plan_candidate nan[] = { { "mma", 0.0 / 0.0 } };
	CHOICE_PLAN(0, 1, "mma", PLAN_CHOICE_TUNED, 1, nan);
	expect_invalid(p, "candidate 0 (mma) has time", "a candidate time of NaN");
	struct plan_candidate untimed[] = { { "mma", 0 } };
	CHOICE_PLAN(0, 1, "mma", 0, 1, untimed);
	is_int(plan_validate(p, &d), 0, "an untimed default among one candidate is valid");
	plan_free(p);
#undef CHOICE_PLAN

	/* The builder's own checks. */
	p = small_plan();
	is_int(plan_add_choice(p, &(struct plan_choice){ 1, 0, "mma", 0, 0, NULL }, NULL, &d),
	       PLAN_ERR_INVALID, "the builder refuses a choice of variant 1 of 1");
	ok(strstr(d.message, "choice: variant 1 of 1") != NULL, "saying so: %s", d.message);
	is_int(plan_add_choice(p, &(struct plan_choice){ 0, 3, "mma", 0, 0, NULL }, NULL, &d),
	       PLAN_ERR_INVALID, "a choice of op 3 of 3");
	is_int(plan_add_choice(p, &(struct plan_choice){ 0, 0, "mma", 0, 2, NULL }, NULL, &d),
	       PLAN_ERR_INVALID, "a choice of 2 candidates without a list");
	is_int(plan_count_choices(p), 0, "none of them was added");
	plan_free(p);

	/* The builder copies: the caller's strings and arrays may go. */
	char impl[8] = "mma", name[8] = "mma";
	struct plan_candidate mine[] = { { name, 4.5 } };
	uint32_t idx = 9;
	p = small_plan();
	add_seg(p, 0, 0, 3);
	is_int(plan_add_choice(p, &(struct plan_choice){ 0, 2, impl, PLAN_CHOICE_TUNED, 1, mine },
	                       &idx, &d), 0, "a choice is added");
	memset(impl, 'x', sizeof impl - 1);
	memset(name, 'y', sizeof name - 1);
	mine[0].us = 99;
	const struct plan_choice *c = plan_get_choice(p, idx);
	ok(idx == 0 && c != NULL && strcmp(c->impl, "mma") == 0 && c->ncand == 1 &&
	   strcmp(c->cand[0].impl, "mma") == 0 && c->cand[0].us == 4.5,
	   "and keeps its own copy of what it was given");
	ok(plan_get_choice(p, 1) == NULL, "no choice 1");
	plan_free(p);
}

/* plan_set_choice: another candidate and flags for a recorded choice, or
 * PLAN_ERR_INVALID / PLAN_ERR_NOT_FOUND with the choice left as it was. */
static void test_set_choice(void)
{
	struct plan_candidate two[] = { { "mma", 1.5 }, { "cublas", 2.0 } };
	const uint32_t step = PLAN_CHOICE_TUNED | PLAN_CHOICE_STEP;
	struct plan_diag d = { 0 };
	const struct plan_choice *c;
	plan_t *p = small_plan();

	add_seg(p, 0, 0, 3);
	plan_add_choice(p, &(struct plan_choice){ 0, 1, "mma", PLAN_CHOICE_TUNED, 2, two }, NULL, NULL);
	plan_add_choice(p, &(struct plan_choice){ 0, 2, "fma", 0, 0, NULL }, NULL, NULL);
	c = plan_get_choice(p, 0);

	is_int(plan_set_choice(p, 0, 1, "cublas", step, &d), 0, "set: another candidate, in the step");
	ok(plan_find_choice(p, 0, 1) == c && strcmp(c->impl, "cublas") == 0 && c->flags == step &&
	   c->ncand == 2 && strcmp(c->cand[0].impl, "mma") == 0 && c->cand[1].us == 2.0,
	   "plan_find_choice gives the new impl and flags, the candidates kept");
	ok(c->impl == c->cand[1].impl, "the impl is the candidate's own string (no copy)");
	is_int(plan_validate(p, &d), 0, "the plan is valid (%s)", d.message);

	is_int(plan_set_choice(p, 0, 1, "tiled", PLAN_CHOICE_TUNED, &d), PLAN_ERR_INVALID,
	       "set: an impl that is none of the candidates");
	ok(strstr(d.message, "'tiled' is none of its 2 candidates") != NULL, "saying so: %s",
	   d.message);
	is_int(plan_set_choice(p, 0, 1, "mma", PLAN_CHOICE_TUNED | 0x10, &d), PLAN_ERR_INVALID,
	       "set: an unknown flag");
	ok(strstr(d.message, "unknown flags 0x10") != NULL, "saying so: %s", d.message);
	is_int(plan_set_choice(p, 0, 1, "mma", PLAN_CHOICE_STEP, &d), PLAN_ERR_INVALID,
	       "set: step without tuned");
	ok(strstr(d.message, "marked step but not tuned") != NULL, "saying so: %s", d.message);
	is_int(plan_set_choice(p, 0, 1, "mma", PLAN_CHOICE_CLOSE, &d), PLAN_ERR_INVALID,
	       "set: close without tuned");
	ok(strstr(d.message, "marked close but not tuned") != NULL, "saying so: %s", d.message);
	is_int(plan_set_choice(p, 0, 1, "", PLAN_CHOICE_TUNED, &d), PLAN_ERR_INVALID,
	       "set: an empty impl");
	is_int(plan_set_choice(p, 0, 0, "mma", PLAN_CHOICE_TUNED, &d), PLAN_ERR_NOT_FOUND,
	       "set: an op without a choice");
	ok(strstr(d.message, "none recorded for op 0 in variant 0") != NULL, "saying so: %s",
	   d.message);
	is_int(plan_set_choice(p, 1, 1, "mma", PLAN_CHOICE_TUNED, &d), PLAN_ERR_NOT_FOUND,
	       "set: a variant without it");
	ok(strcmp(c->impl, "cublas") == 0 && c->flags == step, "none of them changed the choice");

	/* Back and forth, as a tuner trying candidates in the step does. */
	is_int(plan_set_choice(p, 0, 1, "mma", PLAN_CHOICE_TUNED, &d), 0, "set: back to mma");
	ok(strcmp(plan_find_choice(p, 0, 1)->impl, "mma") == 0 &&
	   plan_find_choice(p, 0, 1)->flags == PLAN_CHOICE_TUNED, "mma, tuned");

	/* Without candidates, any name, copied. */
	char name[8] = "mma";
	is_int(plan_set_choice(p, 0, 2, name, PLAN_CHOICE_TUNED, &d), 0,
	       "set: a choice without candidates takes any name");
	memset(name, 'x', sizeof name - 1);
	ok(strcmp(plan_find_choice(p, 0, 2)->impl, "mma") == 0, "and keeps its own copy");
	is_int(plan_validate(p, &d), 0, "the plan is still valid (%s)", d.message);
	plan_free(p);
}

/* The plan of small_plan() with a request dim R of 2 (a tensor fed
 * seq_lens of [R]) and its variant of 4 tokens keyed REQUESTS, FLAGS
 * (format 1.3); its one segment covers the ops. */
static plan_t *keyed_plan(uint32_t requests, uint32_t flags)
{
	plan_t *p = program_plan();
	uint32_t r;

	plan_add_dim(p, &(struct plan_dim){ "R", "", 2, 0 }, &r, NULL);
	plan_add_tensor(p, &(struct plan_tensor){ .name = "lens", .dtype = PLAN_DTYPE_I32,
		.role = PLAN_ROLE_INPUT, .rank = 1, .shape = { { r, 2 } }, .offset = 512, .bytes = 8,
		.feed = { .kind = PLAN_FEED_SEQ_LENS, .var = PLAN_NONE, .from = PLAN_NONE } }, NULL, NULL);
	plan_add_variant(p, &(struct plan_variant){ .tokens = 4, .mode = PLAN_MODE_BREAKABLE,
		.requests = requests, .key_flags = flags }, NULL, NULL);
	add_seg(p, 0, 0, 3);
	return p;
}

static void add_entry(plan_t *p, int64_t lo, int64_t hi, uint32_t req, uint32_t flags)
{
	plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = lo, .tokens_max = hi,
		.variant = 0, .requests_max = req, .flags = flags }, NULL, NULL);
}

static void test_keys(void)
{
	struct plan_diag d = { 0 };
	plan_t *p;

	p = keyed_plan(2, 0);
	add_entry(p, 1, 2, 0, PLAN_DISPATCH_UNIFORM);
	add_entry(p, 1, 4, 2, 0);
	if (!ok(plan_validate(p, &d) == 0, "a keyed plan: a general variant of 4 tokens over 2 requests"))
		diag("    %s", d.message);
	ok(plan_has_keys(p), "plan_has_keys");
	ok(plan_request_dim(p) == 2, "the request dim is the seq_lens tensor's length");
	ok(plan_dispatch_lookup_key(p, 2, 2, 1) == 0 && plan_dispatch_lookup_key(p, 3, 2, 0) == 0 &&
	   plan_dispatch_lookup_key(p, 3, 3, 0) == PLAN_NONE &&
	   plan_dispatch_lookup_key(p, 5, 1, 0) == PLAN_NONE,
	   "lookup by key: requests above the entry's run eagerly");
	ok(plan_dispatch_lookup(p, 2) == 0 && plan_dispatch_lookup(p, 4) == 0,
	   "lookup of the default batch: 2 tokens uniform, 4 tokens over 2 requests");
	plan_free(p);

	expect_invalid(keyed_plan(0, 0x2), "variant 0 has reserved flags 0x00000002",
	               "a variant key with a bad uniform flag");
	expect_invalid(keyed_plan(3, 0), "variant 0 holds 3 requests, above the request dim's 2",
	               "a variant holding more requests than the request dim");
	expect_invalid(keyed_plan(2, PLAN_KEY_UNIFORM), "is for uniform decode: its 4 tokens make "
	               "4 requests, not 2", "a uniform decode key with fewer requests than tokens");
	p = keyed_plan(2, 0);
	add_entry(p, 1, 4, 2, 0x4);
	expect_invalid(p, "entry 0 has reserved flags 0x00000004", "a dispatch entry with a bad flag");
	p = keyed_plan(2, 0);
	add_entry(p, 1, 2, 3, 0);
	expect_invalid(p, "entry 0 holds 3 requests of at most 2 tokens", "more requests than tokens");
	p = keyed_plan(0, 0);
	add_entry(p, 3, 4, 3, 0);
	expect_invalid(p, "entry 0 holds 3 requests, above the request dim's 2",
	               "an entry holding more requests than the request dim");
	p = keyed_plan(2, 0);
	add_entry(p, 1, 4, 2, 0);
	add_entry(p, 1, 4, 2, 0);
	expect_invalid(p, "entries 0 and 1 have the same key (4 tokens, 2 requests)", "duplicate keys");
	p = keyed_plan(2, 0);
	add_entry(p, 1, 4, 2, 0);
	add_entry(p, 1, 2, 0, PLAN_DISPATCH_UNIFORM);
	expect_invalid(p, "entry 1, for uniform decode, comes after entry 0",
	               "a uniform decode entry after a general one");
	p = keyed_plan(0, 0);
	add_entry(p, 1, 4, 0, 0);
	add_entry(p, 1, 3, 1, 0);
	expect_invalid(p, "entry 1 comes before entry 0 in the order of tokens",
	               "entries out of order");
	p = keyed_plan(2, 0);
	add_entry(p, 1, 4, 0, 0);
	expect_invalid(p, "entry 0 sends any number of requests to variant 0, which holds at most 2",
	               "an entry sending any number of requests to a keyed variant");
	p = keyed_plan(1, 0);
	add_entry(p, 1, 4, 2, 0);
	expect_invalid(p, "entry 0 sends up to 2 requests to variant 0, which holds at most 1",
	               "an entry sending more requests than its variant holds");
	p = keyed_plan(4, PLAN_KEY_UNIFORM);
	add_entry(p, 1, 4, 0, 0);
	expect_invalid(p, "above the request dim", "a uniform variant above the request dim");
}

/* A variant is verified when it has a check, or the program has no
 * output: capture --verify records it so (plan-format.md, CHKS). */
static void test_verified(void)
{
	plan_t *p = program_plan();
	plan_t *r;

	plan_add_variant(p, &(struct plan_variant){ .tokens = 2, .mode = PLAN_MODE_BREAKABLE }, NULL, NULL);
	plan_add_variant(p, &(struct plan_variant){ .tokens = 4, .mode = PLAN_MODE_BREAKABLE }, NULL, NULL);
	plan_add_check(p, &(struct plan_check){ .variant = 1, .tensor = 1, .steps = 2 }, NULL, NULL);
	ok(!plan_variant_verified(p, 0) && plan_variant_verified(p, 1),
	   "an output and a check of variant 1 only: 1 verified, 0 not");
	ok(!plan_variant_verified(p, 2), "no such variant: not verified");
	plan_free(p);

	p = plan_new();
	plan_add_dim(p, &(struct plan_dim){ "T", "", 4, PLAN_DIM_TOKENS }, NULL, NULL);
	plan_add_tensor(p, &(struct plan_tensor){ .name = "s", .dtype = PLAN_DTYPE_F32,
		.role = PLAN_ROLE_STATE, .rank = 1, .shape = { { 0, 4 } }, .bytes = 16,
		.feed = { .var = PLAN_NONE } }, NULL, NULL);
	plan_add_variant(p, &(struct plan_variant){ .tokens = 4, .mode = PLAN_MODE_BREAKABLE }, NULL, NULL);
	ok(plan_variant_verified(p, 0), "no output, no check: verified (nothing to check)");
	plan_free(p);

	r = sample_recorded(1);
	ok(r != NULL && !plan_variant_verified(r, 0), "a recorded plan: never");
	plan_free(r);
}

/* Two variants (4 and 2 tokens), each of two segments: 0 and 1 of the
 * first, 2 and 3 of the second, split at op 1. */
static plan_t *shared_plan(void)
{
	plan_t *p = small_plan();

	plan_add_variant(p, &(struct plan_variant){ .tokens = 2, .mode = PLAN_MODE_BREAKABLE }, NULL, NULL);
	add_seg(p, 0, 0, 1);
	add_seg(p, 0, 1, 2);
	add_seg(p, 1, 0, 1);
	add_seg(p, 1, 1, 2);
	return p;
}

static void add_share(plan_t *p, uint32_t seg, uint32_t exec, uint32_t flags, uint32_t result)
{
	struct plan_diag d = { 0 };

	if (plan_add_share(p, &(struct plan_share){ seg, exec, flags, result }, NULL, &d) != 0)
		diag("    plan_add_share: %s", d.message);
}

/* Executables shared (1.6, SHAR): each rule of plan-format.md broken. */
static void test_shares(void)
{
	struct plan_diag d = { 0 };
	plan_t *p, *q;
	void *data = NULL;
	size_t len = 0;
	unsigned major, minor;

	p = shared_plan();
	add_share(p, 0, 0, 0, 0);
	add_share(p, 1, 1, 0, 0);
	add_share(p, 2, 0, 0, 0);
	add_share(p, 3, 1, PLAN_SHARE_REFUSED, 2);
	is_int(plan_validate(p, &d), 0, "two groups, one joined and one refused, are valid");
	is_int(plan_write_memory(p, &data, &len, &d), 0, "and written");
	q = NULL;
	is_int(plan_read_memory(data, len, NULL, &q, &d), 0, "and read back");
	if (q != NULL) {
		plan_get_format_version(q, &major, &minor);
		ok(major == 1 && minor == PLAN_FORMAT_MINOR_SHARES, "as format 1.%u", minor);
		ok(plan_count_shares(q) == 4 && plan_find_share(q, 3) != NULL &&
		   plan_find_share(q, 3)->exec == 1 && plan_find_share(q, 3)->result == 2 &&
		   plan_find_share(q, 2)->exec == 0, "with its records");
		plan_free(q);
	}
	free(data);
	plan_free(p);

	/* Written without shares, the same program is an older version. */
	p = shared_plan();
	data = NULL;
	plan_write_memory(p, &data, &len, NULL);
	q = NULL;
	plan_read_memory(data, len, NULL, &q, NULL);
	if (q != NULL) {
		plan_get_format_version(q, &major, &minor);
		ok(minor < PLAN_FORMAT_MINOR_SHARES, "a plan without shares is written as 1.%u", minor);
		plan_free(q);
	}
	free(data);
	plan_free(p);

	p = shared_plan();
	is_int(plan_add_share(p, &(struct plan_share){ 4, 0, 0, 0 }, NULL, &d), PLAN_ERR_INVALID,
	       "the builder refuses a segment out of range");
	add_share(p, 2, 0, 0, 0);
	is_int(plan_add_share(p, &(struct plan_share){ 2, 0, 0, 0 }, NULL, &d), PLAN_ERR_INVALID,
	       "and a segment twice");
	plan_free(p);

	p = shared_plan();
	add_share(p, 2, 0, 0, 0);
	expect_invalid(p, "not the first of a group", "a segment on an executable with no record");
	p = shared_plan();
	add_share(p, 0, 0, 0, 0);
	add_share(p, 1, 0, 0, 0);
	expect_invalid(p, "of variant 0 share an executable", "two segments of one variant on one");
	p = shared_plan();
	add_share(p, 0, 0, 0, 0);
	add_share(p, 2, 0, 0, 7);
	expect_invalid(p, "but was not refused", "an update result without a refusal");
	p = shared_plan();
	add_share(p, 0, 0, 0, 0);
	add_share(p, 2, 0, PLAN_SHARE_REFUSED, 0);
	expect_invalid(p, "but was refused", "a refusal without a result");
	p = shared_plan();
	add_share(p, 0, 0, PLAN_SHARE_REFUSED, 1);
	expect_invalid(p, "refused its own executable", "a segment refused its own");
	p = shared_plan();
	add_share(p, 0, 0, 0, 0);
	add_share(p, 2, 0, 0x4, 0);
	expect_invalid(p, "reserved flags", "a reserved flag");
	p = shared_plan();
	add_share(p, 0, 2, 0, 0);
	add_share(p, 2, 2, PLAN_SHARE_REFUSED, 1);
	expect_invalid(p, "not the first of a group", "a group's first refused");
}

int main(void)
{
	test_shares();
	test_verified();
	test_valid();
	test_keys();
	test_program();
	test_items();
	test_captures();
	test_builder();
	test_choices();
	test_set_choice();
	return tap_done();
}
