/*
 * plan-sample.c - the plans libplan's unit tests share, and a deep
 * comparison of plans that looks at every field (kept here, out of the
 * library, so that the library's own code does not judge itself).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "plan-sample.h"

#define CHECK(call)                                                             \
	do {                                                                    \
		struct plan_diag d_ = { 0 };                                    \
		d_.code = (call) ;                                              \
		if (d_.code != 0) {                                             \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__,  \
			        #call, plan_strerror(d_.code));                 \
			goto fail;                                              \
		}                                                               \
	} while (0)

#define N(a) (uint32_t)(sizeof(a) / sizeof((a)[0]))

static uint64_t align256(uint64_t x)
{
	return (x + 255) & ~(uint64_t)255;
}

/* ---------------------------------------------------------------------- */
/* The rich plan.                                                          */

plan_t *sample_rich(void)
{
	plan_t *p = plan_new();
	uint32_t T, H, F, kv_len, pos_var, x, w, pos, ids, h, g, out, kv, ar, ones;
	uint32_t v0, v1, v2, seg;
	uint64_t off = 0;

	if (p == NULL)
		return NULL;
	struct plan_meta meta = {
		.tool = "bcgtool 0.1.0-test", .script = "samples/rich.yaml",
		.script_hash = UINT64_C(0x0123456789abcdef), .created = 1700000123,
		.backend = PLAN_BACKEND_CUDA, .device = "NVIDIA H100 80GB HBM3",
		.cc_major = 9, .cc_minor = 0, .cuda_runtime = 13000, .cuda_driver = 13010,
		.cublas = 130001, .features = PLAN_FEATURE_PDL,
	};
	CHECK(plan_set_meta(p, &meta, NULL));
	struct plan_stats stats = {
		.materialize_ns = 1111, .reference_ns = 2222, .capture_ns = 3333,
		.instantiate_ns = 4444, .verify_ns = 5555, .reference_steps = 7,
		.verify_exact = 1, .verify_max_error = 1.5e-7,
	};
	CHECK(plan_set_stats(p, &stats, NULL));

	CHECK(plan_add_dim(p, &(struct plan_dim){ "T", "", 16, PLAN_DIM_TOKENS }, &T, NULL));
	CHECK(plan_add_dim(p, &(struct plan_dim){ "H", "64", 64, 0 }, &H, NULL));
	CHECK(plan_add_dim(p, &(struct plan_dim){ "F", "4*H", 256, 0 }, &F, NULL));
	CHECK(plan_add_var(p, &(struct plan_var){ "kv_len", 5, 1, 1000, 0 }, &kv_len, NULL));
	CHECK(plan_add_var(p, &(struct plan_var){ "step", -3, 2, 99, 0 }, &pos_var, NULL));

	/* Tensors, each placed after the previous one, except g, an
	 * activation sharing h's space. */
	struct plan_tensor t;
#define AXIS_D(d) { (d), 0 }
#define AXIS_N(n) { PLAN_NONE, (n) }
#define TENSOR(idx, nm, dt, rl, rk, ...)                                        \
	memset(&t, 0, sizeof t);                                                \
	t.name = nm; t.dtype = dt; t.role = rl; t.rank = rk;                   \
	{ struct plan_axis ax_[] = { __VA_ARGS__ }; memcpy(t.shape, ax_, sizeof ax_); } \
	t.feed.var = PLAN_NONE;

	TENSOR(ids, "ids", PLAN_DTYPE_I32, PLAN_ROLE_INPUT, 1, AXIS_D(0));
	t.feed = (struct plan_feed){ PLAN_FEED_TOKENS, PLAN_NONE, 9, 32000, 0, PLAN_NONE };
	CHECK(plan_add_tensor(p, &t, &ids, NULL));
	TENSOR(w, "w", PLAN_DTYPE_BF16, PLAN_ROLE_WEIGHT, 2, AXIS_D(1), AXIS_D(2));
	t.init = (struct plan_init){ PLAN_INIT_RANDOM, 7, 0.02, 0 };
	CHECK(plan_add_tensor(p, &t, &w, NULL));
	TENSOR(x, "x", PLAN_DTYPE_F16, PLAN_ROLE_INPUT, 2, AXIS_D(0), AXIS_D(1));
	t.feed = (struct plan_feed){ PLAN_FEED_RANDOM, PLAN_NONE, 42, 0, 0.5, PLAN_NONE };
	CHECK(plan_add_tensor(p, &t, &x, NULL));
	TENSOR(pos, "pos", PLAN_DTYPE_I32, PLAN_ROLE_INPUT, 1, AXIS_D(0));
	t.feed = (struct plan_feed){ PLAN_FEED_POSITIONS, 0, 0, 0, 0, PLAN_NONE };
	CHECK(plan_add_tensor(p, &t, &pos, NULL));
	TENSOR(h, "h", PLAN_DTYPE_F32, PLAN_ROLE_ACTIVATION, 2, AXIS_D(0), AXIS_D(2));
	CHECK(plan_add_tensor(p, &t, &h, NULL));
	TENSOR(g, "g", PLAN_DTYPE_F32, PLAN_ROLE_ACTIVATION, 2, AXIS_D(0), AXIS_D(2));
	CHECK(plan_add_tensor(p, &t, &g, NULL));
	TENSOR(out, "out", PLAN_DTYPE_F32, PLAN_ROLE_OUTPUT, 2, AXIS_D(0), AXIS_D(1));
	t.init = (struct plan_init){ PLAN_INIT_ZEROS, 0, 0, 0 };
	CHECK(plan_add_tensor(p, &t, &out, NULL));
	TENSOR(kv, "kv", PLAN_DTYPE_F16, PLAN_ROLE_STATE, 3, AXIS_N(4), AXIS_N(1024), AXIS_D(1));
	t.init = (struct plan_init){ PLAN_INIT_CONST, 0, 0, 0.25 };
	CHECK(plan_add_tensor(p, &t, &kv, NULL));
	TENSOR(ar, "ar", PLAN_DTYPE_F32, PLAN_ROLE_WEIGHT, 4, AXIS_N(2), AXIS_N(3), AXIS_N(4), AXIS_N(5));
	t.init = (struct plan_init){ PLAN_INIT_ARANGE, 3, 0.5, 1.0 };
	CHECK(plan_add_tensor(p, &t, &ar, NULL));
	TENSOR(ones, "ones", PLAN_DTYPE_F32, PLAN_ROLE_WEIGHT, 1, AXIS_D(1));
	t.init = (struct plan_init){ PLAN_INIT_ONES, 0, 0, 0 };
	CHECK(plan_add_tensor(p, &t, &ones, NULL));
#undef TENSOR
	for (uint32_t i = 0; i < plan_count_tensors(p); i++) {
		uint64_t bytes = plan_tensor_bytes(p, i, 16);
		if (i == g) {
			CHECK(plan_set_tensor_placement(p, i, plan_get_tensor(p, h)->offset, bytes, NULL));
			continue;
		}
		CHECK(plan_set_tensor_placement(p, i, off, bytes, NULL));
		off = align256(off + bytes);
	}
	CHECK(plan_set_var_offset(p, kv_len, off, NULL));
	off = align256(off + 4);
	CHECK(plan_set_var_offset(p, pos_var, off, NULL));
	off = align256(off + 4);
	struct plan_layout layout = { .arena_bytes = off + 4096, .unshared_bytes = 3 * off,
	                              .alignment = 256 };
	CHECK(plan_set_layout(p, &layout, NULL));

	/* Ops: attributes of every type, one op without a name, one eager. */
	uint32_t in0[] = { ids, w }, out0[] = { x };
	struct plan_attr at0[] = { { "dim", PLAN_ATTR_INT, 64, 0, "" } };
	CHECK(plan_add_op(p, &(struct plan_op){ "embedding", "embed", 0, 3, 5, 2, 1, 1, in0, out0, at0 },
	                  NULL, NULL));
	uint32_t in1[] = { x, w }, out1[] = { h };
	struct plan_attr at1[] = {
		{ "alpha", PLAN_ATTR_FLOAT, 0, 1.5, "" },
		{ "trans_b", PLAN_ATTR_BOOL, 1, 0, "" },
		{ "algo", PLAN_ATTR_STR, 0, 0, "tf32 na\xc3\xafve" },
	};
	CHECK(plan_add_op(p, &(struct plan_op){ "matmul", "mm.0", 0, 4, 7, 2, 1, 3, in1, out1, at1 },
	                  NULL, NULL));
	uint32_t in2[] = { h }, out2[] = { g };
	CHECK(plan_add_op(p, &(struct plan_op){ "silu_mul", "", 0, 5, 9, 1, 1, 0, in2, out2, NULL },
	                  NULL, NULL));
	uint32_t in3[] = { g, kv, pos }, out3[] = { out };
	struct plan_attr at3[] = {
		{ "kv_len", PLAN_ATTR_VAR, 0, 0, "" },
		{ "heads", PLAN_ATTR_INT, -8, 0, "" },
		{ "scale", PLAN_ATTR_FLOAT, 0, -0.125, "" },
	};
	CHECK(plan_add_op(p, &(struct plan_op){ "attention", "attn.0", PLAN_OP_EAGER, 6, 11, 3, 1, 3,
	                                        in3, out3, at3 }, NULL, NULL));
	uint32_t in4[] = { out, x, ones }, out4[] = { out, ar };
	struct plan_attr at4[] = { { "note", PLAN_ATTR_STR, 0, 0, "" } };
	CHECK(plan_add_op(p, &(struct plan_op){ "add", "res", 0, 7, 13, 3, 2, 1, in4, out4, at4 },
	                  NULL, NULL));

	/* Variants, added out of token order. */
	CHECK(plan_add_variant(p, &(struct plan_variant){ .tokens = 16, .mode = PLAN_MODE_BREAKABLE, .peak_bytes = 0 }, &v0, NULL));
	CHECK(plan_add_variant(p, &(struct plan_variant){ .tokens = 4, .mode = PLAN_MODE_FULL, .peak_bytes = 0 }, &v1, NULL));
	CHECK(plan_add_variant(p, &(struct plan_variant){ .tokens = 1, .mode = PLAN_MODE_EAGER, .peak_bytes = 0 }, &v2, NULL));
	CHECK(plan_set_variant_peak(p, v0, off + 4096, NULL));
	CHECK(plan_set_variant_peak(p, v1, off + 1024, NULL));
	CHECK(plan_set_variant_peak(p, v2, off + 512, NULL));

	const struct plan_tensor *T_ids = plan_get_tensor(p, ids), *T_w = plan_get_tensor(p, w);
	const struct plan_tensor *T_x = plan_get_tensor(p, x), *T_h = plan_get_tensor(p, h);
	const struct plan_tensor *T_g = plan_get_tensor(p, g), *T_out = plan_get_tensor(p, out);
	struct plan_param pr0[] = { { 0, T_ids->offset }, { 1, T_w->offset }, { 2, T_x->offset } };
	struct plan_param pr1[] = { { 0, T_x->offset }, { 3, T_h->offset + 64 } };
	struct plan_param pr2[] = { { 5, T_g->offset } };
	struct plan_node nodes0[] = {
		{ PLAN_NODE_KERNEL, 0, "embedding_kernel<__half>", { 16, 1, 1 }, { 256, 1, 1 }, 0, 3, pr0, PLAN_NONE },
		{ PLAN_NODE_KERNEL, 1, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", { 4, 2, 1 },
		  { 128, 1, 1 }, 49152, 2, pr1, PLAN_NONE },
		{ PLAN_NODE_MEMSET, PLAN_NONE, "", { 0, 0, 0 }, { 0, 0, 0 }, 0, 0, NULL, PLAN_NONE },
		{ PLAN_NODE_KERNEL, 2, "silu_mul_kernel", { 8, 1, 1 }, { 64, 2, 1 }, 128, 1, pr2, PLAN_NONE },
	};
	/* A programmatic edge, one leaving from the launch-completion port,
	 * and default ones. */
	struct plan_edge edges0[] = {
		{ 0, 1, PLAN_EDGE_PROGRAMMATIC, PLAN_PORT_PROGRAMMATIC, PLAN_PORT_DEFAULT },
		{ 1, 2, PLAN_EDGE_DEFAULT, PLAN_PORT_DEFAULT, PLAN_PORT_DEFAULT },
		{ 0, 2, PLAN_EDGE_PROGRAMMATIC, PLAN_PORT_LAUNCH_COMPLETION, PLAN_PORT_DEFAULT },
		{ 2, 3, PLAN_EDGE_DEFAULT, PLAN_PORT_DEFAULT, PLAN_PORT_DEFAULT },
	};
	struct plan_segment s0 = { .variant = v0, .op_first = 0, .op_count = 3,
	                           .flags = PLAN_SEG_NODES, .nnodes = N(nodes0), .nodes = nodes0,
	                           .nedges = N(edges0), .edges = edges0,
	                           .capture_ns = 12345, .instantiate_ns = 67890 };
	s0.fingerprint = plan_fingerprint(&s0);

	struct plan_param pr3[] = { { 0, T_out->offset }, { 1, 0 }, { 2, layout.arena_bytes - 1 } };
	struct plan_node nodes1[] = {
		{ PLAN_NODE_EVENT_RECORD, PLAN_NONE, "", { 1, 1, 1 }, { 1, 1, 1 }, 0, 0, NULL, PLAN_NONE },
		{ PLAN_NODE_KERNEL, 3, "attention_decode_graphsafe", { 32, 8, 2 }, { 128, 1, 1 }, 65536, 3, pr3, PLAN_NONE },
		{ PLAN_NODE_GRAPH, 4, "", { 0, 0, 0 }, { 0, 0, 0 }, 0, 0, NULL, PLAN_NONE },
		{ PLAN_NODE_OTHER, PLAN_NONE, "", { 0, 0, 0 }, { 0, 0, 0 }, 0, 0, NULL, PLAN_NONE },
	};
	struct plan_edge edges1[] = {
		{ .from = 1, .to = 0 }, { .from = 2, .to = 1 }, { .from = 3, .to = 2 },
	};
	struct plan_segment s1 = { .variant = v1, .op_first = 0, .op_count = 5,
	                           .flags = PLAN_SEG_NODES, .nnodes = N(nodes1), .nodes = nodes1,
	                           .nedges = N(edges1), .edges = edges1,
	                           .capture_ns = 99, .instantiate_ns = 100 };
	s1.fingerprint = plan_fingerprint(&s1);

	/* Interleaved across variants: v1's segment first, then v0's items,
	 * then v2's breakpoints. */
	CHECK(plan_add_segment(p, &s1, NULL, NULL));
	CHECK(plan_add_segment(p, &s0, NULL, NULL));
	uint32_t rd[] = { g, kv, pos }, wr[] = { out, kv };
	CHECK(plan_add_breakpoint(p, &(struct plan_breakpoint){ v0, 3, "attn.0", PLAN_BREAK_FORCED,
	                          "marked eager: true in the script", 3, 2, rd, wr, 0, 0, 0, 0, 0 }, NULL, NULL));
	/* A host-style segment: no nodes. */
	CHECK(plan_add_segment(p, &(struct plan_segment){ .variant = v0, .op_first = 4, .op_count = 1 },
	                       &seg, NULL));
	CHECK(plan_set_segment_times(p, seg, 31, 41, NULL));
	const char *names[] = { "embed", "mm.0", "silu_mul#2", "attn.0", "res" };
	for (uint32_t i = 0; i < 5; i++) {
		const struct plan_op *o = plan_get_op(p, i);
		CHECK(plan_add_breakpoint(p, &(struct plan_breakpoint){ v2, i, names[i], PLAN_BREAK_MODE,
		                          "the variant's mode is eager", o->nin, o->nout, o->in, o->out, 0, 0, 0, 0, 0 },
		                          NULL, NULL));
	}
	CHECK(plan_add_check(p, &(struct plan_check){ v0, out, 3, UINT64_C(0xdeadbeefcafef00d), -12.5 },
	                     NULL, NULL));
	CHECK(plan_add_check(p, &(struct plan_check){ v2, kv, 1, UINT64_C(0x0102030405060708), 3.25e10 },
	                     NULL, NULL));
	CHECK(plan_add_check(p, &(struct plan_check){ v1, ar, 0, 0, -0.0 }, NULL, NULL));
	CHECK(plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 1, .tokens_max = 1, .variant = v2 }, NULL, NULL));
	CHECK(plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 2, .tokens_max = 4, .variant = v1 }, NULL, NULL));
	CHECK(plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 5, .tokens_max = 16, .variant = v0 }, NULL, NULL));
	CHECK(plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 17, .tokens_max = 64, .variant = PLAN_NONE }, NULL, NULL));

	/* Choices for the matmul mm.0 in each variant, added out of variant
	 * order: tuned with a close runner-up, tuned, and the default with no
	 * candidates measured; and one for the unnamed silu_mul. */
	struct plan_candidate c1[] = { { "cublas", 2.0 }, { "mma", 2.5 } };
	CHECK(plan_add_choice(p, &(struct plan_choice){ v1, 1, "cublas", PLAN_CHOICE_TUNED, 2, c1 },
	                      NULL, NULL));
	struct plan_candidate c0[] = { { "mma", 3.25 }, { "cublas", 3.5 }, { "cublaslt", 9.75 } };
	CHECK(plan_add_choice(p, &(struct plan_choice){ v0, 1, "mma",
	                      PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE, 3, c0 }, NULL, NULL));
	CHECK(plan_add_choice(p, &(struct plan_choice){ v2, 1, "cublas", 0, 0, NULL }, NULL, NULL));
	struct plan_candidate c2[] = { { "fused", 0 } };
	CHECK(plan_add_choice(p, &(struct plan_choice){ v0, 2, "fused", 0, 1, c2 }, NULL, NULL));
	return p;
fail:
	plan_free(p);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The spec's test vector.                                                 */

/* Format 1.1's vector adds to 1.0's a second node, a programmatic edge to
 * it, the PDL feature and a choice for the matmul. */
static plan_t *vector(unsigned minor)
{
	plan_t *p = plan_new();
	uint32_t T, H, x, w, y, v;

	if (p == NULL)
		return NULL;
	struct plan_meta meta = {
		.tool = "bcgtool 0.1.0", .script = "vector.yaml",
		.script_hash = UINT64_C(0x1122334455667788), .created = 1700000000,
		.backend = PLAN_BACKEND_CUDA, .device = "NVIDIA H100 80GB HBM3",
		.cc_major = 9, .cc_minor = 0, .cuda_runtime = 13000, .cuda_driver = 13000,
		.cublas = 130000, .features = minor >= 1 ? PLAN_FEATURE_PDL : 0,
	};
	CHECK(plan_set_meta(p, &meta, NULL));
	CHECK(plan_set_layout(p, &(struct plan_layout){ 1024, 1024, 256 }, NULL));
	CHECK(plan_set_stats(p, &(struct plan_stats){ .reference_steps = 1, .verify_exact = 1 }, NULL));
	CHECK(plan_add_dim(p, &(struct plan_dim){ "T", "", 2, PLAN_DIM_TOKENS }, &T, NULL));
	CHECK(plan_add_dim(p, &(struct plan_dim){ "H", "4", 4, 0 }, &H, NULL));
	CHECK(plan_add_var(p, &(struct plan_var){ "pos", 0, 1, 15, 768 }, NULL, NULL));
	CHECK(plan_add_tensor(p, &(struct plan_tensor){
		.name = "x", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_INPUT, .rank = 2,
		.shape = { { T, 2 }, { H, 4 } }, .offset = 0, .bytes = 32,
		.feed = { PLAN_FEED_RANDOM, PLAN_NONE, 1, 0, 1.0 } }, &x, NULL));
	CHECK(plan_add_tensor(p, &(struct plan_tensor){
		.name = "w", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_WEIGHT, .rank = 2,
		.shape = { { H, 4 }, { H, 4 } }, .offset = 256, .bytes = 64,
		.init = { PLAN_INIT_RANDOM, 2, 0.5, 0 }, .feed = { .var = PLAN_NONE } }, &w, NULL));
	CHECK(plan_add_tensor(p, &(struct plan_tensor){
		.name = "y", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_OUTPUT, .rank = 2,
		.shape = { { T, 2 }, { H, 4 } }, .offset = 512, .bytes = 32,
		.init = { PLAN_INIT_ZEROS, 0, 0, 0 }, .feed = { .var = PLAN_NONE } }, &y, NULL));
	uint32_t in0[] = { x, w }, out0[] = { y }, in1[] = { y }, out1[] = { y };
	CHECK(plan_add_op(p, &(struct plan_op){ "matmul", "mm", 0, 7, 5, 2, 1, 0, in0, out0, NULL },
	                  NULL, NULL));
	struct plan_attr at1[] = { { "factor", PLAN_ATTR_FLOAT, 0, 0.5, "" } };
	CHECK(plan_add_op(p, &(struct plan_op){ "scale", "s", PLAN_OP_EAGER, 8, 5, 1, 1, 1, in1, out1, at1 },
	                  NULL, NULL));
	CHECK(plan_add_variant(p, &(struct plan_variant){ .tokens = 2, .mode = PLAN_MODE_BREAKABLE, .peak_bytes = 1024 }, &v, NULL));
	struct plan_param pr[] = { { 0, 0 }, { 1, 256 }, { 2, 512 } }, pr1[] = { { 0, 512 } };
	struct plan_node nodes[] = {
		{ PLAN_NODE_KERNEL, 0, "matmul_f32", { 1, 1, 1 }, { 32, 1, 1 }, 0, 3, pr, PLAN_NONE },
		{ PLAN_NODE_KERNEL, 0, "splitk_reduce_f32", { 1, 1, 1 }, { 32, 1, 1 }, 0, 1, pr1, PLAN_NONE },
	};
	struct plan_edge edge = { 0, 1, PLAN_EDGE_PROGRAMMATIC, PLAN_PORT_PROGRAMMATIC,
	                          PLAN_PORT_DEFAULT };
	struct plan_segment s = { .variant = v, .op_first = 0, .op_count = 1, .flags = PLAN_SEG_NODES,
	                          .nnodes = minor >= 1 ? 2 : 1, .nodes = nodes,
	                          .nedges = minor >= 1 ? 1 : 0, .edges = &edge };
	s.fingerprint = plan_fingerprint(&s);
	CHECK(plan_add_segment(p, &s, NULL, NULL));
	CHECK(plan_add_breakpoint(p, &(struct plan_breakpoint){ v, 1, "s", PLAN_BREAK_FORCED,
	                          "eager: true", 1, 1, in1, out1, 0, 0, 0, 0, 0 }, NULL, NULL));
	CHECK(plan_add_check(p, &(struct plan_check){ v, y, 1, UINT64_C(0xa5a5a5a55a5a5a5a), 1.5 },
	                     NULL, NULL));
	CHECK(plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 1, .tokens_max = 2, .variant = v }, NULL, NULL));
	if (minor >= 1) {
		struct plan_candidate cand[] = { { "mma", 3.5 }, { "cublas", 3.75 } };
		CHECK(plan_add_choice(p, &(struct plan_choice){ v, 0, "mma",
		                      PLAN_CHOICE_TUNED | PLAN_CHOICE_CLOSE, 2, cand }, NULL, NULL));
	}
	return p;
fail:
	plan_free(p);
	return NULL;
}

plan_t *sample_vector(void)
{
	return vector(1);
}

plan_t *sample_vector_1_0(void)
{
	return vector(0);
}

/* ---------------------------------------------------------------------- */
/* A large plan.                                                           */

plan_t *sample_large(unsigned nseg, unsigned nodes)
{
	plan_t *p = plan_new();
	struct plan_node *nd = NULL;
	struct plan_edge *ed = NULL;
	struct plan_param *pr = NULL;
	uint32_t nops = nseg * (nodes + 1), v, t[2];
	char name[64];

	if (p == NULL)
		return NULL;
	nd = calloc(nodes, sizeof *nd);
	ed = calloc(nodes, sizeof *ed);
	pr = calloc((size_t)nodes * 2, sizeof *pr);
	if (nd == NULL || ed == NULL || pr == NULL)
		goto fail;
	CHECK(plan_set_meta(p, &(struct plan_meta){ .tool = "bcgtool", .backend = PLAN_BACKEND_CUDA,
	                                            .device = "NVIDIA H100 80GB HBM3" }, NULL));
	CHECK(plan_set_layout(p, &(struct plan_layout){ 1 << 20, 1 << 21, 256 }, NULL));
	CHECK(plan_add_dim(p, &(struct plan_dim){ "T", "", 8, PLAN_DIM_TOKENS }, NULL, NULL));
	CHECK(plan_add_tensor(p, &(struct plan_tensor){ .name = "a", .dtype = PLAN_DTYPE_F16,
		.role = PLAN_ROLE_ACTIVATION, .rank = 1, .shape = { { 0, 8 } }, .offset = 0,
		.bytes = 16, .feed = { .var = PLAN_NONE } }, &t[0], NULL));
	CHECK(plan_add_tensor(p, &(struct plan_tensor){ .name = "b", .dtype = PLAN_DTYPE_F16,
		.role = PLAN_ROLE_ACTIVATION, .rank = 1, .shape = { { 0, 8 } }, .offset = 256,
		.bytes = 16, .feed = { .var = PLAN_NONE } }, &t[1], NULL));
	for (uint32_t i = 0; i < nops; i++) {
		snprintf(name, sizeof name, "layer%u.op%u", i / (nodes + 1), i % (nodes + 1));
		CHECK(plan_add_op(p, &(struct plan_op){ "matmul", name, 0, i + 1, 3, 1, 1, 0,
		                                        &t[i % 2], &t[(i + 1) % 2], NULL }, NULL, NULL));
	}
	CHECK(plan_add_variant(p, &(struct plan_variant){ .tokens = 8, .mode = PLAN_MODE_BREAKABLE, .peak_bytes = 0 }, &v, NULL));
	for (uint32_t s = 0; s < nseg; s++) {
		uint32_t first = s * (nodes + 1);
		for (uint32_t k = 0; k < nodes; k++) {
			pr[2 * k] = (struct plan_param){ 0, (k % 2) * 256 };
			pr[2 * k + 1] = (struct plan_param){ 1, ((k + 1) % 2) * 256 };
			nd[k] = (struct plan_node){ PLAN_NODE_KERNEL, first + k,
				k % 3 ? "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64"
				      : "rmsnorm_kernel<__half, 1024>",
				{ 64 + k % 7, 1, 1 }, { 128, 1, 1 }, (k % 4) * 1024, 2, &pr[2 * k], PLAN_NONE };
			ed[k] = (struct plan_edge){ .from = k ? k - 1 : 0, .to = k };
		}
		struct plan_segment seg = { .variant = v, .op_first = first, .op_count = nodes,
		                            .flags = PLAN_SEG_NODES, .nnodes = nodes, .nodes = nd,
		                            .nedges = nodes - 1, .edges = ed + 1,
		                            .capture_ns = 1000 + s, .instantiate_ns = 2000 + s };
		seg.fingerprint = plan_fingerprint(&seg);
		CHECK(plan_add_segment(p, &seg, NULL, NULL));
		snprintf(name, sizeof name, "layer%u.op%u", s, nodes);
		CHECK(plan_add_breakpoint(p, &(struct plan_breakpoint){ v, first + nodes, name,
		                          PLAN_BREAK_KIND, "attention follows the host's kv_len",
		                          1, 1, &t[0], &t[1], 0, 0, 0, 0, 0 }, NULL, NULL));
	}
	CHECK(plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 1, .tokens_max = 8, .variant = v }, NULL, NULL));
	free(nd);
	free(ed);
	free(pr);
	return p;
fail:
	free(nd);
	free(ed);
	free(pr);
	plan_free(p);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The recorded plan (format 1.4).                                         */

static const uint8_t rec_image[24] = {
	0x7f, 'E', 'L', 'F', 2, 1, 1, 0x33, 7, 0, 0, 0, 0, 0, 0, 0,
	2, 0, 0xbe, 0, 1, 0, 0, 0,
};

plan_t *sample_recorded(unsigned layers)
{
	return sample_recorded_ex(&(struct sample_rec_opts){ .layers = layers });
}

plan_t *sample_recorded_ex(const struct sample_rec_opts *o)
{
	unsigned layers = o->layers;
	uint8_t image[sizeof rec_image];
	plan_t *p = plan_new();
	uint32_t m0, m1, f0, f1, f2, a0, a1, v0, v1, l[64];
	uint8_t snap[64], host[16], args[40];
	struct plan_node nodes[2 + 2 * 16];
	struct plan_edge edges[2 * 16];
	uint32_t nl = 0;

	if (p == NULL || layers < 1 || layers > 16)
		goto fail;
	memcpy(image, rec_image, sizeof image);
	if (o->module_changed)
		image[23] ^= 0x40;
	for (unsigned i = 0; i < sizeof snap; i++)
		snap[i] = (uint8_t)(i * 7 + 1);
	for (unsigned i = 0; i < sizeof host; i++)
		host[i] = (uint8_t)(0xf0 + i);
	for (unsigned i = 0; i < sizeof args; i++)
		args[i] = (uint8_t)(0x10 + i);
	CHECK(plan_set_meta(p, &(struct plan_meta){ "bcgtool 0.1.0", "", 0, 1767225600,
	                    PLAN_BACKEND_CUDA, "NVIDIA H100 80GB HBM3", 9, 0, 13000, 13000, 0, 0 },
	                    NULL));
	CHECK(plan_set_recording(p, &(struct plan_recording){ "python3 serve.py --steps 8",
	                         "nvtx:decode_step", "libcudart 13.0.48; libcublas 13.0.0", 4242,
	                         PLAN_RECORD_SNAPSHOT | PLAN_RECORD_NVTX_STEP, 2500000000u, 8 },
	                         NULL));
	CHECK(plan_add_module(p, &(struct plan_module){ "serve_kernels.cubin",
	                      XXH64(image, sizeof image, 0), sizeof image,
	                      PLAN_MODULE_IMAGE, "", image }, &m0, NULL));
	CHECK(plan_add_module(p, &(struct plan_module){ "libcublasLt.so.13",
	                      UINT64_C(0x9e3779b97f4a7c15), 1048576, 0,
	                      "a library's module: --keep-libraries keeps it", NULL }, &m1, NULL));
	struct plan_param_info pi0[] = { { 0, 8 }, { 8, 8 }, { 16, 4 }, { 20, 4 } };
	struct plan_param_info pi1[] = { { 0, 8 }, { 8, 8 }, { 16, 8 }, { 24, 4 }, { 28, 4 }, { 32, 4 } };
	struct plan_param_info pi2[] = { { 0, 8 }, { 8, 8 } };
	CHECK(plan_add_function(p, &(struct plan_function){ m0, "_Z11rmsnorm_f16PK6__halfPS_if",
	                        N(pi0), pi0 }, &f0, NULL));
	CHECK(plan_add_function(p, &(struct plan_function){ m0, o->rename ?
	                        "_Z6matmulIfLi256EEvPKT_S2_PS0_iii" :
	                        "_Z6matmulIfLi128EEvPKT_S2_PS0_iii", N(pi1), pi1 }, &f1, NULL));
	CHECK(plan_add_function(p, &(struct plan_function){ m1,
	                        "sm90_xmma_gemm_f16f16_f32_tn_n_tilesize128x128x64", N(pi2), pi2 },
	                        &f2, NULL));
	CHECK(plan_add_alloc(p, &(struct plan_alloc){ UINT64_C(0x7f0000000000), sizeof snap, 0,
	                     PLAN_ALLOC_SNAPSHOT, snap }, &a0, NULL));
	CHECK(plan_add_alloc(p, &(struct plan_alloc){ UINT64_C(0x7f0000200000), 1u << 20, 0,
	                     PLAN_ALLOC_VMM, NULL }, &a1, NULL));

	/* Variant 1: a copy in from the host, one graph, a library GEMM. */
	CHECK(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_MEMCPY,
	                      .dst = { a0, 0 }, .src = { PLAN_NONE, UINT64_C(0x560000001000) },
	                      .bytes = sizeof host, .ndata = sizeof host, .data = host },
	                      &l[nl++], NULL));
	struct plan_patch pa0[] = { { 0, { a0, 0 } }, { 8, { a1, 0x100 } } };
	struct plan_patch pa1[] = { { 0, { a1, 0 } }, { 8, { a1, 4096 } }, { 16, { a0, 32 } } };
	CHECK(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_KERNEL, .function = f0,
	                      .grid = { o->grid ? 32 : 16, 1, 1 }, .block = { 256, 1, 1 }, .nargs = 24,
	                      .args = args, .npatches = N(pa0), .patches = pa0 }, &l[nl++], NULL));
	CHECK(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_KERNEL, .function = f1,
	                      .grid = { 8, 4, 1 }, .block = { 128, 1, 1 }, .cluster = { 2, 1, 1 },
	                      .shmem = 49152, .flags = PLAN_LAUNCH_PDL, .nargs = 40, .args = args,
	                      .npatches = N(pa1), .patches = pa1 }, &l[nl++], NULL));
	CHECK(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_MEMSET,
	                      .dst = { a1, 8192 }, .value = 0, .element = 4, .width = 256,
	                      .height = 1 }, &l[nl++], NULL));
	struct plan_patch pa2[] = { { 0, { a1, 0 } }, { 8, { PLAN_NONE, UINT64_C(0x7f5500000000) } } };
	CHECK(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_KERNEL, .function = f2,
	                      .grid = { 132, 1, 1 }, .block = { 384, 1, 1 }, .nargs = 16,
	                      .args = args, .npatches = N(pa2), .patches = pa2 }, &l[nl++], NULL));
	CHECK(plan_add_variant(p, &(struct plan_variant){ .tokens = 1, .mode = PLAN_MODE_BREAKABLE,
	                       .label = "decode_step", .seen = 6, .recorded_ns = 1200000 }, &v0,
	                       NULL));

	CHECK(plan_add_breakpoint(p, &(struct plan_breakpoint){ .variant = v0, .op = PLAN_NONE,
	                          .name = "memcpy", .reason = PLAN_BREAK_RECORDED,
	                          .detail = "a copy from pageable host memory",
	                          .launch_first = l[0], .launch_count = 1, .recorded_ns = 9000,
	                          .start_ns = o->offsets == 4 ? 100 : 0 },
	                          NULL, NULL));
	/* the paced vector: memcpy at +0; the graph 15 us after it starts (9
	 * us of copy, then 6 us idle), launched 11 us after; cublasLt at +730
	 * us (the graph's 700 us, then 15 us idle), launched at +26 us */
	int off = o->offsets && !o->move_break;
	if (o->move_break)
		CHECK(plan_add_breakpoint(p, &(struct plan_breakpoint){ .variant = v0,
		                          .op = PLAN_NONE, .name = "cublasLt",
		                          .reason = PLAN_BREAK_RECORDED,
		                          .detail = "a kernel of a library module outside the graphs",
		                          .launch_first = l[4], .launch_count = 1,
		                          .recorded_ns = 41000 }, NULL, NULL));
	nodes[0] = (struct plan_node){ .type = PLAN_NODE_KERNEL, .op = PLAN_NONE, .launch = l[1] };
	nodes[1] = (struct plan_node){ .type = PLAN_NODE_KERNEL, .op = PLAN_NONE, .launch = l[2] };
	nodes[2] = (struct plan_node){ .type = PLAN_NODE_MEMSET, .op = PLAN_NONE, .launch = l[3] };
	nodes[3] = (struct plan_node){ .type = PLAN_NODE_EMPTY, .op = PLAN_NONE, .launch = PLAN_NONE };
	edges[0] = (struct plan_edge){ 0, 1, PLAN_EDGE_PROGRAMMATIC, PLAN_PORT_PROGRAMMATIC, 0 };
	edges[1] = (struct plan_edge){ 2, 3, 0, 0, 0 };
	edges[2] = (struct plan_edge){ 1, 3, 0, 0, 0 };
	struct plan_segment s = { .variant = v0, .flags = PLAN_SEG_NODES, .nnodes = 4,
	                          .nodes = nodes, .nedges = 3, .edges = edges,
	                          .recorded_ns = 700000, .start_ns = off ? 15000 : 0,
	                          .issue_ns = off ? 11000 : 0 };
	s.fingerprint = plan_fingerprint_recorded(p, &s);
	CHECK(plan_add_segment(p, &s, NULL, NULL));
	if (!o->move_break)
		CHECK(plan_add_breakpoint(p, &(struct plan_breakpoint){ .variant = v0,
		                          .op = PLAN_NONE, .name = "cublasLt",
		                          .reason = PLAN_BREAK_RECORDED,
		                          .detail = "a kernel of a library module outside the graphs",
		                          .launch_first = l[4], .launch_count = 1,
		                          .recorded_ns = 41000,
		                          .start_ns = o->offsets == 2 ? 10000 : o->offsets == 3 ? 0 :
		                                      off ? 730000 : 0,
		                          .issue_ns = off ? 26000 : 0 }, NULL, NULL));

	/* Variant 2: LAYERS layers of rmsnorm then matmul in one graph, then
	 * a device-to-device copy. */
	if (o->one_variant)
		return p;
	CHECK(plan_add_variant(p, &(struct plan_variant){ .tokens = 2, .mode = PLAN_MODE_BREAKABLE,
	                       .label = "prefill_step", .seen = 2, .recorded_ns = 5400000 }, &v1,
	                       NULL));
	uint32_t first = nl;
	for (unsigned k = 0; k < layers; k++) {
		CHECK(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_KERNEL,
		                      .function = f0, .grid = { 64, 1, 1 }, .block = { 256, 1, 1 },
		                      .nargs = 24, .args = args, .npatches = N(pa0), .patches = pa0 },
		                      &l[nl++], NULL));
		CHECK(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_KERNEL,
		                      .function = f1, .grid = { 32, 4, 1 }, .block = { 128, 1, 1 },
		                      .shmem = 49152, .nargs = 40, .args = args,
		                      .npatches = N(pa1), .patches = pa1 }, &l[nl++], NULL));
	}
	for (uint32_t k = 0; k < 2 * layers; k++) {
		nodes[k] = (struct plan_node){ .type = PLAN_NODE_KERNEL, .op = PLAN_NONE,
		                               .launch = l[first + k] };
		if (k > 0)
			edges[k - 1] = (struct plan_edge){ k - 1, k, 0, 0, 0 };
	}
	s = (struct plan_segment){ .variant = v1, .flags = PLAN_SEG_NODES, .nnodes = 2 * layers,
	                           .nodes = nodes, .nedges = 2 * layers - 1, .edges = edges,
	                           .recorded_ns = 5100000 };
	s.fingerprint = plan_fingerprint_recorded(p, &s);
	CHECK(plan_add_segment(p, &s, NULL, NULL));
	CHECK(plan_add_launch(p, &(struct plan_launch){ .type = PLAN_NODE_MEMCPY,
	                      .dst = { a1, 65536 }, .src = { a1, 0 }, .bytes = 4096 },
	                      &l[nl++], NULL));
	CHECK(plan_add_breakpoint(p, &(struct plan_breakpoint){ .variant = v1, .op = PLAN_NONE,
	                          .name = "memcpy", .reason = PLAN_BREAK_RECORDED,
	                          .detail = "a copy outside the graphs",
	                          .launch_first = l[nl - 1], .launch_count = 1,
	                          .recorded_ns = 12000,
	                          /* the paced vector: 50 us idle after the
	                             graph's 5.1 ms; launched 40 us after it */
	                          .start_ns = off ? 5150000 : 0, .issue_ns = off ? 40000 : 0 },
	                          NULL, NULL));
	return p;
fail:
	plan_free(p);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Files and comparison.                                                   */

unsigned char *sample_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    (buf = malloc((size_t)n + 1)) == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

struct cmp {
	char  *why;
	size_t len;
	int    differ;
};

__attribute__((format(printf, 2, 3)))
static void differ(struct cmp *c, const char *fmt, ...)
{
	va_list ap;

	if (c->differ++)
		return;
	va_start(ap, fmt);
	vsnprintf(c->why, c->len, fmt, ap);
	va_end(ap);
}

#define EQ_INT(what, a, b) \
	do { if ((a) != (b)) differ(c, "%s: %lld != %lld", what, (long long)(a), (long long)(b)); } while (0)
#define EQ_U64(what, a, b) \
	do { if ((a) != (b)) differ(c, "%s: %llu != %llu", what, (unsigned long long)(a), \
	                            (unsigned long long)(b)); } while (0)
#define EQ_STR(what, a, b) \
	do { if ((a) == NULL || (b) == NULL || strcmp((a), (b)) != 0) \
		differ(c, "%s: \"%s\" != \"%s\"", what, (a) ? (a) : "(null)", (b) ? (b) : "(null)"); } while (0)
/* Doubles compare by bit pattern: -0.0 and NaN payloads must survive. */
#define EQ_F64(what, a, b) \
	do { double a_ = (a), b_ = (b); if (memcmp(&a_, &b_, sizeof a_) != 0) \
		differ(c, "%s: %.17g != %.17g", what, a_, b_); } while (0)

static void cmp_u32_list(struct cmp *c, const char *what, const uint32_t *a, uint32_t na,
                         const uint32_t *b, uint32_t nb)
{
	EQ_INT(what, na, nb);
	for (uint32_t i = 0; i < na && i < nb; i++)
		EQ_INT(what, a[i], b[i]);
}

static void cmp_program(struct cmp *c, const plan_t *a, const plan_t *b)
{
	const struct plan_meta *ma = plan_get_meta(a), *mb = plan_get_meta(b);
	const struct plan_layout *la = plan_get_layout(a), *lb = plan_get_layout(b);
	const struct plan_stats *sa = plan_get_stats(a), *sb = plan_get_stats(b);
	char w[96];

	EQ_STR("meta.tool", ma->tool, mb->tool);
	EQ_STR("meta.script", ma->script, mb->script);
	EQ_U64("meta.script_hash", ma->script_hash, mb->script_hash);
	EQ_INT("meta.created", ma->created, mb->created);
	EQ_INT("meta.backend", ma->backend, mb->backend);
	EQ_STR("meta.device", ma->device, mb->device);
	EQ_INT("meta.cc_major", ma->cc_major, mb->cc_major);
	EQ_INT("meta.cc_minor", ma->cc_minor, mb->cc_minor);
	EQ_INT("meta.cuda_runtime", ma->cuda_runtime, mb->cuda_runtime);
	EQ_INT("meta.cuda_driver", ma->cuda_driver, mb->cuda_driver);
	EQ_INT("meta.cublas", ma->cublas, mb->cublas);
	EQ_INT("meta.features", ma->features, mb->features);
	EQ_U64("layout.arena_bytes", la->arena_bytes, lb->arena_bytes);
	EQ_U64("layout.unshared_bytes", la->unshared_bytes, lb->unshared_bytes);
	EQ_INT("layout.alignment", la->alignment, lb->alignment);
	EQ_U64("stats.materialize_ns", sa->materialize_ns, sb->materialize_ns);
	EQ_U64("stats.reference_ns", sa->reference_ns, sb->reference_ns);
	EQ_U64("stats.capture_ns", sa->capture_ns, sb->capture_ns);
	EQ_U64("stats.instantiate_ns", sa->instantiate_ns, sb->instantiate_ns);
	EQ_U64("stats.verify_ns", sa->verify_ns, sb->verify_ns);
	EQ_INT("stats.reference_steps", sa->reference_steps, sb->reference_steps);
	EQ_INT("stats.verify_exact", sa->verify_exact, sb->verify_exact);
	EQ_F64("stats.verify_max_error", sa->verify_max_error, sb->verify_max_error);

	EQ_INT("dim count", plan_count_dims(a), plan_count_dims(b));
	for (uint32_t i = 0; i < plan_count_dims(a) && i < plan_count_dims(b); i++) {
		const struct plan_dim *x = plan_get_dim(a, i), *y = plan_get_dim(b, i);
		snprintf(w, sizeof w, "dim %u", i);
		EQ_STR(w, x->name, y->name);
		EQ_STR(w, x->expr, y->expr);
		EQ_INT(w, x->value, y->value);
		EQ_INT(w, x->flags, y->flags);
	}
	EQ_INT("var count", plan_count_vars(a), plan_count_vars(b));
	for (uint32_t i = 0; i < plan_count_vars(a) && i < plan_count_vars(b); i++) {
		const struct plan_var *x = plan_get_var(a, i), *y = plan_get_var(b, i);
		snprintf(w, sizeof w, "var %u", i);
		EQ_STR(w, x->name, y->name);
		EQ_INT(w, x->start, y->start);
		EQ_INT(w, x->step, y->step);
		EQ_INT(w, x->limit, y->limit);
		EQ_U64(w, x->offset, y->offset);
	}
	EQ_INT("tensor count", plan_count_tensors(a), plan_count_tensors(b));
	for (uint32_t i = 0; i < plan_count_tensors(a) && i < plan_count_tensors(b); i++) {
		const struct plan_tensor *x = plan_get_tensor(a, i), *y = plan_get_tensor(b, i);
		snprintf(w, sizeof w, "tensor %u", i);
		EQ_STR(w, x->name, y->name);
		EQ_INT(w, x->dtype, y->dtype);
		EQ_INT(w, x->role, y->role);
		EQ_INT(w, x->rank, y->rank);
		for (int k = 0; k < PLAN_MAX_RANK; k++) {
			EQ_INT(w, x->shape[k].dim, y->shape[k].dim);
			EQ_INT(w, x->shape[k].size, y->shape[k].size);
		}
		EQ_U64(w, x->offset, y->offset);
		EQ_U64(w, x->bytes, y->bytes);
		EQ_INT(w, x->init.kind, y->init.kind);
		EQ_U64(w, x->init.seed, y->init.seed);
		EQ_F64(w, x->init.scale, y->init.scale);
		EQ_F64(w, x->init.value, y->init.value);
		EQ_INT(w, x->feed.kind, y->feed.kind);
		EQ_INT(w, x->feed.var, y->feed.var);
		EQ_U64(w, x->feed.seed, y->feed.seed);
		EQ_INT(w, x->feed.range, y->feed.range);
		EQ_F64(w, x->feed.scale, y->feed.scale);
	}
	EQ_INT("op count", plan_count_ops(a), plan_count_ops(b));
	for (uint32_t i = 0; i < plan_count_ops(a) && i < plan_count_ops(b); i++) {
		const struct plan_op *x = plan_get_op(a, i), *y = plan_get_op(b, i);
		snprintf(w, sizeof w, "op %u", i);
		EQ_STR(w, x->kind, y->kind);
		EQ_STR(w, x->name, y->name);
		EQ_INT(w, x->flags, y->flags);
		EQ_INT(w, x->line, y->line);
		EQ_INT(w, x->col, y->col);
		cmp_u32_list(c, w, x->in, x->nin, y->in, y->nin);
		cmp_u32_list(c, w, x->out, x->nout, y->out, y->nout);
		EQ_INT(w, x->nattr, y->nattr);
		for (uint32_t k = 0; k < x->nattr && k < y->nattr; k++) {
			EQ_STR(w, x->attr[k].key, y->attr[k].key);
			EQ_INT(w, x->attr[k].type, y->attr[k].type);
			EQ_INT(w, x->attr[k].i, y->attr[k].i);
			EQ_F64(w, x->attr[k].f, y->attr[k].f);
			EQ_STR(w, x->attr[k].s, y->attr[k].s);
		}
	}
}

static void cmp_captures(struct cmp *c, const plan_t *a, const plan_t *b)
{
	char w[96];

	EQ_INT("variant count", plan_count_variants(a), plan_count_variants(b));
	for (uint32_t i = 0; i < plan_count_variants(a) && i < plan_count_variants(b); i++) {
		const struct plan_variant *x = plan_get_variant(a, i), *y = plan_get_variant(b, i);
		snprintf(w, sizeof w, "variant %u", i);
		EQ_INT(w, x->tokens, y->tokens);
		EQ_INT(w, x->mode, y->mode);
		EQ_U64(w, x->peak_bytes, y->peak_bytes);
		EQ_INT(w, x->nitems, y->nitems);
		for (uint32_t k = 0; k < x->nitems && k < y->nitems; k++) {
			EQ_INT(w, x->items[k].kind, y->items[k].kind);
			EQ_INT(w, x->items[k].index, y->items[k].index);
		}
	}
	EQ_INT("segment count", plan_count_segments(a), plan_count_segments(b));
	for (uint32_t i = 0; i < plan_count_segments(a) && i < plan_count_segments(b); i++) {
		const struct plan_segment *x = plan_get_segment(a, i), *y = plan_get_segment(b, i);
		snprintf(w, sizeof w, "segment %u", i);
		EQ_INT(w, x->variant, y->variant);
		EQ_INT(w, x->op_first, y->op_first);
		EQ_INT(w, x->op_count, y->op_count);
		EQ_INT(w, x->flags, y->flags);
		EQ_U64(w, x->fingerprint, y->fingerprint);
		EQ_U64(w, x->capture_ns, y->capture_ns);
		EQ_U64(w, x->instantiate_ns, y->instantiate_ns);
		EQ_INT(w, x->nnodes, y->nnodes);
		for (uint32_t k = 0; k < x->nnodes && k < y->nnodes; k++) {
			const struct plan_node *n = &x->nodes[k], *m = &y->nodes[k];
			snprintf(w, sizeof w, "segment %u node %u", i, k);
			EQ_INT(w, n->type, m->type);
			EQ_INT(w, n->op, m->op);
			EQ_STR(w, n->kernel, m->kernel);
			for (int d = 0; d < 3; d++) {
				EQ_INT(w, n->grid[d], m->grid[d]);
				EQ_INT(w, n->block[d], m->block[d]);
			}
			EQ_INT(w, n->shmem, m->shmem);
			EQ_INT(w, n->nparams, m->nparams);
			for (uint32_t j = 0; j < n->nparams && j < m->nparams; j++) {
				EQ_INT(w, n->params[j].index, m->params[j].index);
				EQ_U64(w, n->params[j].offset, m->params[j].offset);
			}
		}
		snprintf(w, sizeof w, "segment %u edges", i);
		EQ_INT(w, x->nedges, y->nedges);
		for (uint32_t k = 0; k < x->nedges && k < y->nedges; k++) {
			EQ_INT(w, x->edges[k].from, y->edges[k].from);
			EQ_INT(w, x->edges[k].to, y->edges[k].to);
			EQ_INT(w, x->edges[k].type, y->edges[k].type);
			EQ_INT(w, x->edges[k].from_port, y->edges[k].from_port);
			EQ_INT(w, x->edges[k].to_port, y->edges[k].to_port);
		}
	}
	EQ_INT("breakpoint count", plan_count_breakpoints(a), plan_count_breakpoints(b));
	for (uint32_t i = 0; i < plan_count_breakpoints(a) && i < plan_count_breakpoints(b); i++) {
		const struct plan_breakpoint *x = plan_get_breakpoint(a, i), *y = plan_get_breakpoint(b, i);
		snprintf(w, sizeof w, "breakpoint %u", i);
		EQ_INT(w, x->variant, y->variant);
		EQ_INT(w, x->op, y->op);
		EQ_STR(w, x->name, y->name);
		EQ_INT(w, x->reason, y->reason);
		EQ_STR(w, x->detail, y->detail);
		cmp_u32_list(c, w, x->reads, x->nreads, y->reads, y->nreads);
		cmp_u32_list(c, w, x->writes, x->nwrites, y->writes, y->nwrites);
	}
	EQ_INT("check count", plan_count_checks(a), plan_count_checks(b));
	for (uint32_t i = 0; i < plan_count_checks(a) && i < plan_count_checks(b); i++) {
		const struct plan_check *x = plan_get_check(a, i), *y = plan_get_check(b, i);
		snprintf(w, sizeof w, "check %u", i);
		EQ_INT(w, x->variant, y->variant);
		EQ_INT(w, x->tensor, y->tensor);
		EQ_INT(w, x->steps, y->steps);
		EQ_U64(w, x->hash, y->hash);
		EQ_F64(w, x->sum, y->sum);
	}
	EQ_INT("dispatch count", plan_count_dispatch(a), plan_count_dispatch(b));
	for (uint32_t i = 0; i < plan_count_dispatch(a) && i < plan_count_dispatch(b); i++) {
		const struct plan_dispatch *x = plan_get_dispatch(a, i), *y = plan_get_dispatch(b, i);
		snprintf(w, sizeof w, "dispatch %u", i);
		EQ_INT(w, x->tokens_min, y->tokens_min);
		EQ_INT(w, x->tokens_max, y->tokens_max);
		EQ_INT(w, x->variant, y->variant);
	}
	EQ_INT("choice count", plan_count_choices(a), plan_count_choices(b));
	for (uint32_t i = 0; i < plan_count_choices(a) && i < plan_count_choices(b); i++) {
		const struct plan_choice *x = plan_get_choice(a, i), *y = plan_get_choice(b, i);
		snprintf(w, sizeof w, "choice %u", i);
		EQ_INT(w, x->variant, y->variant);
		EQ_INT(w, x->op, y->op);
		EQ_STR(w, x->impl, y->impl);
		EQ_INT(w, x->flags, y->flags);
		EQ_INT(w, x->ncand, y->ncand);
		for (uint32_t k = 0; k < x->ncand && k < y->ncand; k++) {
			EQ_STR(w, x->cand[k].impl, y->cand[k].impl);
			EQ_F64(w, x->cand[k].us, y->cand[k].us);
		}
	}
}

static void cmp_addr(struct cmp *c, const char *w, const struct plan_addr *x,
                     const struct plan_addr *y)
{
	EQ_INT(w, x->alloc, y->alloc);
	EQ_U64(w, x->offset, y->offset);
}

static void cmp_bytes(struct cmp *c, const char *w, const void *x, const void *y, uint64_t n)
{
	if (n > 0 && (x == NULL || y == NULL || memcmp(x, y, (size_t)n) != 0))
		differ(c, "%s: the bytes differ", w);
}

static void cmp_recorded(struct cmp *c, const plan_t *a, const plan_t *b)
{
	const struct plan_recording *ra = plan_get_recording(a), *rb = plan_get_recording(b);
	char w[96];

	EQ_INT("origin", plan_get_origin(a), plan_get_origin(b));
	if (ra != NULL && rb != NULL) {
		EQ_STR("recording.command", ra->command, rb->command);
		EQ_STR("recording.step_rule", ra->step_rule, rb->step_rule);
		EQ_STR("recording.libraries", ra->libraries, rb->libraries);
		EQ_INT("recording.pid", ra->pid, rb->pid);
		EQ_INT("recording.flags", ra->flags, rb->flags);
		EQ_U64("recording.wall_ns", ra->wall_ns, rb->wall_ns);
		EQ_U64("recording.steps", ra->steps, rb->steps);
	}
	EQ_INT("module count", plan_count_modules(a), plan_count_modules(b));
	for (uint32_t i = 0; i < plan_count_modules(a) && i < plan_count_modules(b); i++) {
		const struct plan_module *x = plan_get_module(a, i), *y = plan_get_module(b, i);
		snprintf(w, sizeof w, "module %u", i);
		EQ_STR(w, x->name, y->name);
		EQ_U64(w, x->hash, y->hash);
		EQ_U64(w, x->bytes, y->bytes);
		EQ_INT(w, x->flags, y->flags);
		EQ_STR(w, x->note, y->note);
		EQ_INT(w, x->image != NULL, y->image != NULL);
		if (x->image != NULL && y->image != NULL)
			cmp_bytes(c, w, x->image, y->image, x->bytes);
	}
	EQ_INT("function count", plan_count_functions(a), plan_count_functions(b));
	for (uint32_t i = 0; i < plan_count_functions(a) && i < plan_count_functions(b); i++) {
		const struct plan_function *x = plan_get_function(a, i), *y = plan_get_function(b, i);
		snprintf(w, sizeof w, "function %u", i);
		EQ_INT(w, x->module, y->module);
		EQ_STR(w, x->name, y->name);
		EQ_INT(w, x->nparams, y->nparams);
		for (uint32_t k = 0; k < x->nparams && k < y->nparams; k++) {
			EQ_INT(w, x->params[k].offset, y->params[k].offset);
			EQ_INT(w, x->params[k].size, y->params[k].size);
		}
	}
	EQ_INT("alloc count", plan_count_allocs(a), plan_count_allocs(b));
	for (uint32_t i = 0; i < plan_count_allocs(a) && i < plan_count_allocs(b); i++) {
		const struct plan_alloc *x = plan_get_alloc(a, i), *y = plan_get_alloc(b, i);
		snprintf(w, sizeof w, "alloc %u", i);
		EQ_U64(w, x->address, y->address);
		EQ_U64(w, x->bytes, y->bytes);
		EQ_INT(w, x->device, y->device);
		EQ_INT(w, x->flags, y->flags);
		EQ_INT(w, x->data != NULL, y->data != NULL);
		if (x->data != NULL && y->data != NULL)
			cmp_bytes(c, w, x->data, y->data, x->bytes);
	}
	EQ_INT("launch count", plan_count_launches(a), plan_count_launches(b));
	for (uint32_t i = 0; i < plan_count_launches(a) && i < plan_count_launches(b); i++) {
		const struct plan_launch *x = plan_get_launch(a, i), *y = plan_get_launch(b, i);
		snprintf(w, sizeof w, "launch %u", i);
		EQ_INT(w, x->type, y->type);
		EQ_INT(w, x->function, y->function);
		for (int d = 0; d < 3; d++) {
			EQ_INT(w, x->grid[d], y->grid[d]);
			EQ_INT(w, x->block[d], y->block[d]);
			EQ_INT(w, x->cluster[d], y->cluster[d]);
		}
		EQ_INT(w, x->shmem, y->shmem);
		EQ_INT(w, x->flags, y->flags);
		EQ_INT(w, x->nargs, y->nargs);
		if (x->nargs == y->nargs)
			cmp_bytes(c, w, x->args, y->args, x->nargs);
		EQ_INT(w, x->npatches, y->npatches);
		for (uint32_t k = 0; k < x->npatches && k < y->npatches; k++) {
			EQ_INT(w, x->patches[k].byte, y->patches[k].byte);
			cmp_addr(c, w, &x->patches[k].addr, &y->patches[k].addr);
		}
		cmp_addr(c, w, &x->dst, &y->dst);
		cmp_addr(c, w, &x->src, &y->src);
		EQ_U64(w, x->bytes, y->bytes);
		EQ_INT(w, x->value, y->value);
		EQ_INT(w, x->element, y->element);
		EQ_U64(w, x->width, y->width);
		EQ_U64(w, x->height, y->height);
		EQ_U64(w, x->pitch, y->pitch);
		EQ_INT(w, x->ndata, y->ndata);
		if (x->ndata == y->ndata)
			cmp_bytes(c, w, x->data, y->data, x->ndata);
	}
	for (uint32_t i = 0; i < plan_count_variants(a) && i < plan_count_variants(b); i++) {
		const struct plan_variant *x = plan_get_variant(a, i), *y = plan_get_variant(b, i);
		snprintf(w, sizeof w, "variant %u", i);
		EQ_STR(w, x->label, y->label);
		EQ_U64(w, x->seen, y->seen);
		EQ_U64(w, x->recorded_ns, y->recorded_ns);
		EQ_INT(w, x->device, y->device);
	}
	for (uint32_t i = 0; i < plan_count_segments(a) && i < plan_count_segments(b); i++) {
		const struct plan_segment *x = plan_get_segment(a, i), *y = plan_get_segment(b, i);
		snprintf(w, sizeof w, "segment %u", i);
		EQ_U64(w, x->recorded_ns, y->recorded_ns);
		for (uint32_t k = 0; k < x->nnodes && k < y->nnodes; k++)
			EQ_INT(w, x->nodes[k].launch, y->nodes[k].launch);
	}
	for (uint32_t i = 0; i < plan_count_breakpoints(a) && i < plan_count_breakpoints(b); i++) {
		const struct plan_breakpoint *x = plan_get_breakpoint(a, i), *y = plan_get_breakpoint(b, i);
		snprintf(w, sizeof w, "breakpoint %u", i);
		EQ_INT(w, x->launch_first, y->launch_first);
		EQ_INT(w, x->launch_count, y->launch_count);
		EQ_U64(w, x->recorded_ns, y->recorded_ns);
	}
}

int sample_plans_equal(const plan_t *a, const plan_t *b, char *why, size_t len)
{
	struct cmp c = { why, len, 0 };

	if (len > 0)
		why[0] = '\0';
	cmp_program(&c, a, b);
	cmp_captures(&c, a, b);
	cmp_recorded(&c, a, b);
	return c.differ == 0;
}
