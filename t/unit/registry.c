/*
 * registry.c - unit test of the op registry: the table itself (names,
 * operands, attribute positions, capture, in-place), the tensor helpers,
 * and each kind's check accepting a valid call and rejecting each kind of
 * mismatch with its message.
 */
#include "config.h"

#include "tap.h"
#include "ops/op.h"
#include "ops/rope-scaling.h"

#define F32  PLAN_DTYPE_F32
#define F16  PLAN_DTYPE_F16
#define BF16 PLAN_DTYPE_BF16
#define I32  PLAN_DTYPE_I32

static struct op_tensor ten1(int dtype, int64_t a)
{
	struct op_tensor t = { .dtype = dtype, .rank = 1, .dim = { a } };
	return t;
}

static struct op_tensor ten2(int dtype, int64_t a, int64_t b)
{
	struct op_tensor t = { .dtype = dtype, .rank = 2, .dim = { a, b } };
	return t;
}

static struct op_tensor ten3(int dtype, int64_t a, int64_t b, int64_t c)
{
	struct op_tensor t = { .dtype = dtype, .rank = 3, .dim = { a, b, c } };
	return t;
}

/* A call of kind NAME with its attribute defaults, operands to be set. */
static struct op_call call_of(const char *name)
{
	struct op_call c;
	const struct op_kind *k = op_kind_find(name);

	memset(&c, 0, sizeof c);
	c.kind = k;
	c.nin = op_kind_min_inputs(k);               /* the optional ones left out */
	c.nout = op_kind_count_outputs(k);
	for (int i = 0; k->attrs[i].name != NULL; i++) {
		if (k->attrs[i].type == OP_ATTR_FLOAT)
			c.attr[i].f = k->attrs[i].dflt;
		else
			c.attr[i].i = (int64_t)k->attrs[i].dflt;
	}
	return c;
}

static char msg[512];

/* "" when the check accepts, else its message. */
static const char *check(const struct op_call *c)
{
	msg[0] = '\0';
	if (c->kind->check(c, msg, sizeof msg) == 0)
		return "";
	return msg[0] != '\0' ? msg : "(empty message)";
}

/* Kind ID's bit in a mask of kinds (more than 32 of them). */
#define BIT(id) ((uint64_t)1 << (id))

static void test_table(void)
{
	static const char *const names[OP_COUNT] = {
		"fill", "copy", "add", "mul", "scale", "matmul", "rmsnorm", "layernorm",
		"silu_mul", "gelu", "softmax", "rope", "embedding", "kv_write", "attention", "argmax",
		"add_rmsnorm", "matmul_add", "matmul_silu_mul", "rope_kv_write", "slice",
		"paged_kv_write", "rope_paged_kv_write", "paged_attention", "qk_norm",
		"moe_router", "moe_router_paged", "moe_experts", "gated_add",
		"all_reduce", "all_gather", "vocab_embedding", "rmsnorm_matmul",
		"rmsnorm_matmul_rope_kv_write", "decoder_layer", "rmsnorm_matmul_argmax",
	};
	static const int nin[OP_COUNT] = { 0, 1, 2, 2, 1, 2, 2, 3, 1, 1, 1, 2, 2, 2, 3, 1,
	                                   3, 3, 2, 4, 1, 2, 5, 6, 3, 1, 2, 6, 3, 1, 1, 2, 3, 4, 8,
	                                   3 };
	static const int nout[OP_COUNT] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	                                    2, 1, 1, 3, 1, 1, 3, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1, 3, 3,
	                                    2 };
	uint64_t inplace = 0;

	for (int i = 0; i < OP_COUNT; i++) {
		const struct op_kind *k = op_kind_get((enum op_id)i);
		ok(k != NULL && (int)k->id == i, "op_kind_get(%d) has id %d", i, i);
		is_str(k->name, names[i], "kind %d is %s", i, names[i]);
		ok(op_kind_find(names[i]) == k, "op_kind_find(\"%s\") finds it", names[i]);
		is_int(op_kind_count_inputs(k), nin[i], "%s has %d inputs", names[i], nin[i]);
		is_int(op_kind_count_outputs(k), nout[i], "%s has %d output%s", names[i], nout[i],
		       nout[i] == 1 ? "" : "s");
		ok(k->check != NULL && k->summary != NULL && k->summary[0] != '\0',
		   "%s has a check and a summary", names[i]);
		if (i == OP_ATTENTION) {
			is_int(k->capture, OP_CAPTURE_SAFE_FORM, "attention has a graph-safe form");
			is_str(k->capture_why, "its launch shape follows the host var kv_len",
			       "attention says why it breaks graphs");
		} else if (i == OP_DECODER_LAYER) {
			is_int(k->capture, OP_CAPTURE_SAFE_FORM, "decoder_layer has a graph-safe form");
			is_str(k->capture_why, "its attention's launch shape follows the host var kv_len",
			       "decoder_layer says why it breaks graphs: its attention");
		} else if (i == OP_PAGED_ATTENTION) {
			is_int(k->capture, OP_CAPTURE_SAFE_FORM, "paged_attention has a graph-safe form");
			is_str(k->capture_why, "its launch shape follows the host's batch (the longest "
			       "sequence)", "paged_attention says why it breaks graphs");
		} else if (i == OP_MOE_EXPERTS) {
			is_int(k->capture, OP_CAPTURE_SAFE_FORM, "moe_experts has a graph-safe form");
			is_str(k->capture_why, "launch follows per-expert token counts",
			       "moe_experts says why it breaks graphs");
			ok(k->flags == OP_RESIDUAL_LAST, "moe_experts' last input (residual) is "
			   "optional, and out may be it; it works in place on nothing else");
		} else if (i == OP_ALL_REDUCE || i == OP_ALL_GATHER) {
			is_int(k->capture, OP_CAPTURE_SAFE_FORM, "%s breaks, or is captured in full mode",
			       names[i]);
			is_str(k->capture_why, "a collective: every rank must launch it at once",
			       "%s says why it breaks graphs", names[i]);
		} else {
			ok(k->capture == OP_CAPTURE_ALWAYS && k->capture_why == NULL,
			   "%s is always capturable", names[i]);
		}
		if (k->flags & OP_INPLACE)
			inplace |= BIT(i);
	}
	is_u64(inplace, BIT(OP_COPY) | BIT(OP_ADD) | BIT(OP_MUL) | BIT(OP_SCALE) | BIT(OP_RMSNORM) |
	       BIT(OP_LAYERNORM) | BIT(OP_GELU) | BIT(OP_SOFTMAX) | BIT(OP_ROPE) |
	       BIT(OP_ADD_RMSNORM) | BIT(OP_MATMUL_ADD) | BIT(OP_QK_NORM) | BIT(OP_GATED_ADD) |
	       BIT(OP_ALL_REDUCE) | BIT(OP_DECODER_LAYER),
	       "exactly the in-place kinds of op.h work in place");
	is_str(op_kind_get(OP_ADD_RMSNORM)->outputs[0], "sum",
	       "add_rmsnorm's first output, the one that may be x, is sum");
	is_str(op_kind_get(OP_MATMUL_ADD)->inputs[0], "x",
	       "matmul_add's first input, the one out may be, is the residual x");
	ok(op_kind_find("matmull") == NULL && op_kind_find("") == NULL, "unknown names are not found");
	ok(op_kind_get(OP_COUNT) == NULL, "op_kind_get(OP_COUNT) is NULL");
	is_str(op_kind_get(OP_KV_WRITE)->outputs[0], "cache", "kv_write writes its cache");
	is_int(op_kind_get(OP_FILL)->dtypes, OP_DTYPES_ALL, "fill takes every dtype");
	is_int(op_kind_get(OP_COPY)->dtypes, OP_DTYPES_ALL, "copy takes every dtype");
	is_int(op_kind_get(OP_MATMUL)->dtypes, OP_DTYPES_FLOAT, "matmul takes float dtypes");
}

static void test_attrs(void)
{
	const struct op_kind *k;

	k = op_kind_get(OP_FILL);
	is_int(op_kind_attr_index(k, "value"), FILL_VALUE, "fill: value at FILL_VALUE");
	k = op_kind_get(OP_SCALE);
	is_int(op_kind_attr_index(k, "alpha"), SCALE_ALPHA, "scale: alpha at SCALE_ALPHA");
	ok(k->attrs[SCALE_ALPHA].dflt == 1.0, "scale: alpha defaults to 1");
	k = op_kind_get(OP_MATMUL);
	is_int(op_kind_attr_index(k, "trans_a"), MATMUL_TRANS_A, "matmul: trans_a position");
	is_int(op_kind_attr_index(k, "trans_b"), MATMUL_TRANS_B, "matmul: trans_b position");
	ok(k->attrs[MATMUL_TRANS_A].type == OP_ATTR_BOOL && !k->attrs[MATMUL_TRANS_A].required,
	   "matmul: trans_a is an optional bool");
	k = op_kind_get(OP_RMSNORM);
	ok(op_kind_attr_index(k, "eps") == NORM_EPS && k->attrs[NORM_EPS].dflt == 1e-6,
	   "rmsnorm: eps at NORM_EPS, default 1e-6");
	k = op_kind_get(OP_LAYERNORM);
	ok(op_kind_attr_index(k, "eps") == NORM_EPS && k->attrs[NORM_EPS].dflt == 1e-5,
	   "layernorm: eps at NORM_EPS, default 1e-5");
	k = op_kind_get(OP_ROPE);
	is_int(op_kind_attr_index(k, "heads"), ROPE_HEADS, "rope: heads position");
	is_int(op_kind_attr_index(k, "head_dim"), ROPE_HEAD_DIM, "rope: head_dim position");
	is_int(op_kind_attr_index(k, "theta"), ROPE_THETA, "rope: theta position");
	ok(k->attrs[ROPE_HEADS].required && k->attrs[ROPE_HEAD_DIM].required &&
	   !k->attrs[ROPE_THETA].required && k->attrs[ROPE_THETA].dflt == 10000.0,
	   "rope: heads and head_dim required, theta 10000");
	k = op_kind_get(OP_ATTENTION);
	is_int(op_kind_count_attrs(k), 6, "attention has 6 attributes");
	is_int(op_kind_attr_index(k, "heads"), ATTN_HEADS, "attention: heads position");
	is_int(op_kind_attr_index(k, "kv_heads"), ATTN_KV_HEADS, "attention: kv_heads position");
	is_int(op_kind_attr_index(k, "head_dim"), ATTN_HEAD_DIM, "attention: head_dim position");
	is_int(op_kind_attr_index(k, "kv_len"), ATTN_KV_LEN, "attention: kv_len position");
	is_int(op_kind_attr_index(k, "scale"), ATTN_SCALE, "attention: scale position");
	is_int(op_kind_attr_index(k, "causal"), ATTN_CAUSAL, "attention: causal position");
	ok(k->attrs[ATTN_CAUSAL].type == OP_ATTR_BOOL && !k->attrs[ATTN_CAUSAL].required &&
	   k->attrs[ATTN_CAUSAL].dflt == 0.0, "attention: causal is a bool, false by default");
	is_int(k->attrs[ATTN_KV_LEN].type, OP_ATTR_INTVAR, "attention: kv_len takes a var");
	ok(!k->attrs[ATTN_KV_HEADS].required && !k->attrs[ATTN_SCALE].required,
	   "attention: kv_heads and scale are optional");
	is_int(op_kind_attr_index(k, "kv_len "), -1, "an unknown attribute has no position");
	k = op_kind_get(OP_ADD_RMSNORM);
	ok(op_kind_count_attrs(k) == 1 && op_kind_attr_index(k, "eps") == NORM_EPS &&
	   k->attrs[NORM_EPS].dflt == 1e-6, "add_rmsnorm: eps at NORM_EPS, default 1e-6 as rmsnorm");
	for (int id = OP_MATMUL_ADD; id <= OP_MATMUL_SILU_MUL; id++) {
		k = op_kind_get((enum op_id)id);
		ok(op_kind_count_attrs(k) == 2 && op_kind_attr_index(k, "trans_a") == MATMUL_TRANS_A &&
		   op_kind_attr_index(k, "trans_b") == MATMUL_TRANS_B &&
		   k->attrs[MATMUL_TRANS_B].type == OP_ATTR_BOOL && k->attrs[MATMUL_TRANS_B].dflt == 0,
		   "%s: trans_a and trans_b as matmul's, false by default", k->name);
	}
	k = op_kind_get(OP_ROPE_KV_WRITE);
	is_int(op_kind_count_attrs(k), RKV_SCALING + RS_COUNT + 1,
	       "rope_kv_write has 4 attributes, rope_type's 9 and eps");
	ok(op_kind_attr_index(k, "eps") == RKV_EPS && !k->attrs[RKV_EPS].required &&
	   k->attrs[RKV_EPS].type == OP_ATTR_FLOAT && k->attrs[RKV_EPS].dflt == 1e-6 &&
	   op_kind_get(OP_QK_NORM)->attrs[QKN_EPS].dflt == 1e-6,
	   "rope_kv_write: eps last, a float, 1e-6 by default as qk_norm's");
	ok(op_kind_count_inputs(k) == 4 && op_kind_min_inputs(k) == 2 &&
	   strcmp(k->inputs[RKV_Q_W], "q_w") == 0 && strcmp(k->inputs[RKV_K_W], "k_w") == 0,
	   "rope_kv_write: qkv, pos, then the optional q_w and k_w");
	k = op_kind_get(OP_ROPE_PAGED_KV_WRITE);
	ok(op_kind_count_inputs(k) == 5 && op_kind_min_inputs(k) == 3 &&
	   strcmp(k->inputs[RPKV_SLOTS], "slots") == 0 && strcmp(k->inputs[RPKV_Q_W], "q_w") == 0 &&
	   strcmp(k->inputs[RPKV_K_W], "k_w") == 0,
	   "rope_paged_kv_write: qkv, pos, slots, then the optional q_w and k_w");
	{
		int all = 1;
		for (int i = 0; i < OP_COUNT; i++)
			if (i != OP_ROPE_KV_WRITE && i != OP_ROPE_PAGED_KV_WRITE && i != OP_MOE_EXPERTS)
				all &= op_kind_min_inputs(op_kind_get((enum op_id)i)) ==
				       op_kind_count_inputs(op_kind_get((enum op_id)i));
		ok(all, "every other kind takes all its inputs");
		ok(op_kind_min_inputs(op_kind_get(OP_MOE_EXPERTS)) == 5 &&
		   op_kind_count_inputs(op_kind_get(OP_MOE_EXPERTS)) == 6,
		   "moe_experts: 5 inputs, then the optional residual");
	}
	k = op_kind_get(OP_ROPE_KV_WRITE);
	is_int(op_kind_count_attrs(op_kind_get(OP_ROPE)), ROPE_SCALING + RS_COUNT,
	       "rope has 3 attributes and rope_type's 9");
	ok(op_kind_attr_index(k, "heads") == RKV_HEADS && op_kind_attr_index(k, "kv_heads") == RKV_KV_HEADS &&
	   op_kind_attr_index(k, "head_dim") == RKV_HEAD_DIM && op_kind_attr_index(k, "theta") == RKV_THETA,
	   "rope_kv_write: attributes at RKV_*");
	ok(k->attrs[RKV_HEADS].required && !k->attrs[RKV_KV_HEADS].required &&
	   k->attrs[RKV_HEAD_DIM].required && k->attrs[RKV_THETA].dflt == 10000.0,
	   "rope_kv_write: heads and head_dim required, kv_heads optional, theta 10000");
	{
		/* The kinds whose kv_heads defaults to heads, at their positions. */
		int want[OP_COUNT], wheads[OP_COUNT], all = 1;
		for (int i = 0; i < OP_COUNT; i++)
			want[i] = wheads[i] = -1;
		want[OP_ATTENTION] = ATTN_KV_HEADS, wheads[OP_ATTENTION] = ATTN_HEADS;
		want[OP_PAGED_ATTENTION] = PATTN_KV_HEADS, wheads[OP_PAGED_ATTENTION] = PATTN_HEADS;
		want[OP_QK_NORM] = QKN_KV_HEADS, wheads[OP_QK_NORM] = QKN_HEADS;
		want[OP_ROPE_KV_WRITE] = want[OP_ROPE_PAGED_KV_WRITE] = RKV_KV_HEADS;
		want[OP_RMSNORM_MATMUL_ROPE_KV_WRITE] = want[OP_DECODER_LAYER] = RKV_KV_HEADS;
		wheads[OP_ROPE_KV_WRITE] = wheads[OP_ROPE_PAGED_KV_WRITE] = RKV_HEADS;
		wheads[OP_RMSNORM_MATMUL_ROPE_KV_WRITE] = wheads[OP_DECODER_LAYER] = RKV_HEADS;
		for (int i = 0; i < OP_COUNT; i++) {
			int h = -1, kvh = op_kind_kv_heads_attr(op_kind_get((enum op_id)i), &h);
			if (kvh != want[i] || (kvh >= 0 && h != wheads[i])) {
				diag("%s: kv_heads at %d, heads at %d", op_kind_get((enum op_id)i)->name,
				     kvh, h);
				all = 0;
			}
		}
		ok(all, "op_kind_kv_heads_attr: kv_heads and heads of the seven kinds that have "
		   "them, -1 for the others");
	}
	k = op_kind_get(OP_SLICE);
	ok(op_kind_count_attrs(k) == 1 && op_kind_attr_index(k, "start") == SLICE_START &&
	   k->attrs[SLICE_START].required && k->attrs[SLICE_START].type == OP_ATTR_INT,
	   "slice: start at SLICE_START, a required int");
	is_int(op_kind_count_attrs(op_kind_get(OP_ADD)), 0, "add has no attributes");
	for (int i = 0; i < OP_COUNT; i++)
		ok(op_kind_count_attrs(op_kind_get((enum op_id)i)) <= OP_MAX_ATTRS &&
		   op_kind_count_inputs(op_kind_get((enum op_id)i)) <= OP_MAX_IN &&
		   op_kind_count_outputs(op_kind_get((enum op_id)i)) <= OP_MAX_OUT,
		   "%s fits op_call", op_kind_get((enum op_id)i)->name);
}

static void test_tensor_helpers(void)
{
	struct op_tensor t = ten3(F32, 2, 3, 5), v = ten1(F32, 7);

	is_int(op_tensor_numel(&t), 30, "numel of [2, 3, 5]");
	is_int(op_tensor_rows(&t), 6, "rows of [2, 3, 5]");
	is_int(op_tensor_cols(&t), 5, "cols of [2, 3, 5]");
	is_int(op_tensor_rows(&v), 1, "a vector is one row");
	is_int(op_tensor_cols(&v), 7, "of its length");
}

static void test_elementwise(void)
{
	struct op_call c;

	c = call_of("fill");
	c.out[0] = ten2(I32, 4, 8);
	is_str(check(&c), "", "fill: any dtype, any shape");

	c = call_of("copy");
	c.in[0] = ten2(F32, 4, 8);
	c.out[0] = ten1(BF16, 32);
	is_str(check(&c), "", "copy: f32 to bf16, same element count");
	c.out[0] = ten1(BF16, 30);
	is_str(check(&c), "output out has 30 elements ([30]), expected 32 like input x ([4, 8])",
	       "copy: element counts differ");
	c.out[0] = ten1(I32, 32);
	is_str(check(&c), "output out is i32, expected f32, f16 or bf16", "copy: float to i32");
	c.in[0] = ten1(I32, 32);
	c.out[0] = ten1(F16, 32);
	is_str(check(&c), "output out is f16, expected i32 like input x", "copy: i32 to float");

	c = call_of("add");
	c.in[0] = ten2(F16, 4, 8);
	c.in[1] = ten1(F16, 8);
	c.out[0] = ten2(F16, 4, 8);
	is_str(check(&c), "", "add: b broadcast over a's rows");
	c.in[1] = ten2(F16, 4, 8);
	is_str(check(&c), "", "add: b of a's shape");
	c.in[1] = ten1(F16, 4);
	is_str(check(&c), "input b has shape [4], expected input a's shape [4, 8] or a trailing part of it",
	       "add: b not a trailing part of a");
	c.in[1] = ten3(F16, 1, 4, 8);
	is_str(check(&c), "input b has shape [1, 4, 8], expected input a's shape [4, 8] or a trailing part of it",
	       "add: b of higher rank");
	c.in[1] = ten1(F32, 8);
	is_str(check(&c), "input b is f32, expected f16 like input a", "add: dtypes differ");
	c.in[1] = ten1(F16, 8);
	c.out[0] = ten2(F16, 8, 4);
	is_str(check(&c), "output out has shape [8, 4], expected [4, 8] (the shape of input a)",
	       "add: output shape");
	c.in[0] = ten2(I32, 4, 8);
	is_str(check(&c), "input a is i32, expected f32, f16 or bf16", "add: floats only");

	c = call_of("mul");
	c.in[0] = ten2(BF16, 2, 3);
	c.in[1] = ten2(BF16, 2, 3);
	c.out[0] = ten2(BF16, 2, 3);
	is_str(check(&c), "", "mul: same shapes");
	c.out[0] = ten2(F32, 2, 3);
	is_str(check(&c), "output out is f32, expected bf16 like input a", "mul: output dtype");

	c = call_of("scale");
	c.in[0] = ten2(F32, 2, 3);
	c.out[0] = ten2(F32, 2, 3);
	is_str(check(&c), "", "scale");
	c.out[0] = ten2(F32, 3, 2);
	is_str(check(&c), "output out has shape [3, 2], expected [2, 3] (the shape of input x)",
	       "scale: output shape");

	c = call_of("gelu");
	c.in[0] = ten3(F16, 2, 3, 4);
	c.out[0] = ten3(F16, 2, 3, 4);
	is_str(check(&c), "", "gelu: rank 3");
	c = call_of("softmax");
	c.in[0] = ten2(F32, 2, 3);
	c.out[0] = ten2(F16, 2, 3);
	is_str(check(&c), "output out is f16, expected f32 like input x", "softmax: output dtype");
	c.nin = 2;
	is_str(check(&c), "softmax takes 1 input, not 2", "softmax: operand count");
	c.nin = 1;
	c.nout = 0;
	is_str(check(&c), "softmax takes 1 output, not 0", "softmax: output count");
}

static void test_matmul(void)
{
	struct op_call c = call_of("matmul");

	c.in[0] = ten2(F16, 4, 64);
	c.in[1] = ten2(F16, 64, 128);
	c.out[0] = ten2(F16, 4, 128);
	is_str(check(&c), "", "matmul [4,64] @ [64,128]");
	c.in[1] = ten2(F16, 32, 128);
	is_str(check(&c), "input b has shape [32, 128], expected [64, N] (K = 64 from input a [4, 64])",
	       "matmul: K differs");
	c.attr[MATMUL_TRANS_B].i = 1;
	c.in[1] = ten2(F16, 128, 64);
	is_str(check(&c), "", "matmul with trans_b: b is [N, K]");
	c.in[1] = ten2(F16, 128, 32);
	is_str(check(&c), "input b has shape [128, 32], expected [N, 64] (K = 64 from input a [4, 64])",
	       "matmul with trans_b: K differs");
	c.attr[MATMUL_TRANS_B].i = 0;
	c.attr[MATMUL_TRANS_A].i = 1;
	c.in[0] = ten2(F16, 64, 4);
	c.in[1] = ten2(F16, 32, 128);
	is_str(check(&c), "input b has shape [32, 128], expected [64, N] (K = 64 from input a [64, 4], transposed)",
	       "matmul with trans_a: K from a's rows");
	c.in[1] = ten2(F16, 64, 128);
	is_str(check(&c), "", "matmul with trans_a: a is [K, M]");
	c.out[0] = ten2(F16, 64, 128);
	is_str(check(&c), "output out has shape [64, 128], expected [4, 128] (M = 4 from input a, N = 128 from input b)",
	       "matmul: output shape");
	c.attr[MATMUL_TRANS_A].i = 0;
	c.in[0] = ten3(F16, 1, 4, 64);
	is_str(check(&c), "input a has rank 3 ([1, 4, 64]), expected rank 2", "matmul: rank");
	c.in[0] = ten2(F16, 4, 64);
	c.in[1] = ten2(BF16, 64, 128);
	is_str(check(&c), "input b is bf16, expected f16 like input a", "matmul: dtypes differ");
}

static void test_norms(void)
{
	struct op_call c = call_of("rmsnorm");

	c.in[0] = ten2(F32, 4, 64);
	c.in[1] = ten1(F32, 64);
	c.out[0] = ten2(F32, 4, 64);
	is_str(check(&c), "", "rmsnorm");
	c.in[1] = ten1(F32, 32);
	is_str(check(&c), "input w has shape [32], expected [64] (the columns of input x)",
	       "rmsnorm: weight length");
	c.in[1] = ten2(F32, 1, 64);
	is_str(check(&c), "input w has shape [1, 64], expected [64] (the columns of input x)",
	       "rmsnorm: weight rank");
	c.in[1] = ten1(F32, 64);
	c.attr[NORM_EPS].f = -1.0;
	is_str(check(&c), "attribute eps is -1; it must not be negative", "rmsnorm: negative eps");

	c = call_of("layernorm");
	c.in[0] = ten2(BF16, 4, 64);
	c.in[1] = ten1(BF16, 64);
	c.in[2] = ten1(BF16, 64);
	c.out[0] = ten2(BF16, 4, 64);
	is_str(check(&c), "", "layernorm");
	c.in[2] = ten1(BF16, 63);
	is_str(check(&c), "input b has shape [63], expected [64] (the columns of input x)",
	       "layernorm: bias length");
	c.in[2] = ten1(F16, 64);
	is_str(check(&c), "input b is f16, expected bf16 like input x", "layernorm: bias dtype");
}

static void test_silu_mul(void)
{
	struct op_call c = call_of("silu_mul");

	c.in[0] = ten2(F16, 4, 352);
	c.out[0] = ten2(F16, 4, 176);
	is_str(check(&c), "", "silu_mul halves the columns");
	c.out[0] = ten2(F16, 4, 352);
	is_str(check(&c), "output out has shape [4, 352], expected [4, 176] (input x with half its columns)",
	       "silu_mul: output not halved");
	c.in[0] = ten2(F16, 4, 35);
	is_str(check(&c), "input x has 35 columns, expected an even number (gate and up halves)",
	       "silu_mul: odd columns");
}

static void test_rope(void)
{
	struct op_call c = call_of("rope");

	c.in[0] = ten2(F16, 4, 64);
	c.in[1] = ten1(I32, 4);
	c.out[0] = ten2(F16, 4, 64);
	c.attr[ROPE_HEADS].i = 4;
	c.attr[ROPE_HEAD_DIM].i = 16;
	is_str(check(&c), "", "rope 4 heads of 16");
	c.in[1] = ten1(F32, 4);
	is_str(check(&c), "input pos is f32, expected i32", "rope: positions dtype");
	c.in[1] = ten1(I32, 8);
	is_str(check(&c), "input pos has shape [8], expected [4] (one per row of input x)",
	       "rope: one position per row");
	c.in[1] = ten1(I32, 4);
	c.attr[ROPE_HEAD_DIM].i = 15;
	is_str(check(&c), "attribute head_dim is 15; rope needs an even head_dim from 2 to 512",
	       "rope: odd head_dim");
	c.attr[ROPE_HEAD_DIM].i = 514;
	is_str(check(&c), "attribute head_dim is 514; rope needs an even head_dim from 2 to 512",
	       "rope: head_dim above what the CUDA kernel takes");
	c.attr[ROPE_HEAD_DIM].i = 8;
	is_str(check(&c), "input x has 64 columns, expected heads x head_dim = 4 x 8",
	       "rope: heads x head_dim differs from the columns");
	c.attr[ROPE_HEAD_DIM].i = 16;
	c.attr[ROPE_HEADS].i = 0;
	is_str(check(&c), "attribute heads is 0; it must be at least 1", "rope: no heads");
	c.attr[ROPE_HEADS].i = 4;
	c.attr[ROPE_THETA].f = 0.0;
	is_str(check(&c), "attribute theta is 0; it must be positive", "rope: theta 0");
}

static void test_embedding(void)
{
	struct op_call c = call_of("embedding");

	c.in[0] = ten2(F16, 256, 64);
	c.in[1] = ten1(I32, 4);
	c.out[0] = ten2(F16, 4, 64);
	is_str(check(&c), "", "embedding");
	c.in[1] = ten1(F16, 4);
	is_str(check(&c), "input ids is f16, expected i32", "embedding: ids dtype");
	c.in[1] = ten2(I32, 4, 1);
	is_str(check(&c), "input ids has rank 2 ([4, 1]), expected rank 1", "embedding: ids rank");
	c.in[1] = ten1(I32, 4);
	c.out[0] = ten2(F16, 4, 32);
	is_str(check(&c), "output out has shape [4, 32], expected [4, 64] (one row of input table per element of input ids)",
	       "embedding: output shape");
	c.in[0] = ten2(I32, 256, 64);
	is_str(check(&c), "input table is i32, expected f32, f16 or bf16", "embedding: table dtype");
}

static void test_kv_write(void)
{
	struct op_call c = call_of("kv_write");

	c.in[0] = ten2(BF16, 4, 32);
	c.in[1] = ten1(I32, 4);
	c.out[0] = ten2(BF16, 64, 32);
	is_str(check(&c), "", "kv_write into a cache of 64 rows");
	c.out[0] = ten2(BF16, 64, 16);
	is_str(check(&c), "output cache has shape [64, 16], expected [S, 32] (the columns of input x)",
	       "kv_write: cache row width");
	c.out[0] = ten2(F32, 64, 32);
	is_str(check(&c), "output cache is f32, expected bf16 like input x", "kv_write: cache dtype");
	c.out[0] = ten2(BF16, 64, 32);
	c.in[1] = ten1(I32, 2);
	is_str(check(&c), "input pos has shape [2], expected [4] (one per row of input x)",
	       "kv_write: one position per row");
}

static void test_attention(void)
{
	struct op_call c = call_of("attention");

	c.in[0] = ten2(F16, 4, 64);
	c.in[1] = ten2(F16, 128, 32);
	c.in[2] = ten2(F16, 128, 32);
	c.out[0] = ten2(F16, 4, 64);
	c.attr[ATTN_HEADS].i = 4;
	c.attr[ATTN_KV_HEADS].i = 2;
	c.attr[ATTN_HEAD_DIM].i = 16;
	c.attr[ATTN_KV_LEN].i = 9;
	is_str(check(&c), "", "attention with grouped-query heads 4/2");
	c.attr[ATTN_KV_LEN].i = -3;
	is_str(check(&c), "", "any kv_len is valid (below 1 gives zeros)");
	c.attr[ATTN_KV_HEADS].i = 3;
	is_str(check(&c), "attribute heads (4) is not a multiple of kv_heads (3)",
	       "attention: heads not a multiple of kv_heads");
	c.attr[ATTN_KV_HEADS].i = 0;
	is_str(check(&c), "attribute kv_heads is 0; it must be at least 1", "attention: kv_heads 0");
	c.attr[ATTN_KV_HEADS].i = 4;
	is_str(check(&c), "input k has shape [128, 32], expected [S, 64] (kv_heads x head_dim = 4 x 16)",
	       "attention: cache width follows kv_heads");
	c.attr[ATTN_KV_HEADS].i = 2;
	c.attr[ATTN_HEAD_DIM].i = 8;
	is_str(check(&c), "input q has 64 columns, expected heads x head_dim = 4 x 8",
	       "attention: q width");
	c.attr[ATTN_HEAD_DIM].i = 1024;
	is_str(check(&c), "attribute head_dim is 1024; it must be from 1 to 512",
	       "attention: head_dim above what the CUDA kernel takes");
	c.attr[ATTN_HEAD_DIM].i = 16;
	c.in[2] = ten2(F16, 64, 32);
	is_str(check(&c), "input v has shape [64, 32], expected [128, 32] (the shape of input k)",
	       "attention: v unlike k");
	c.in[2] = ten2(F32, 128, 32);
	is_str(check(&c), "input v is f32, expected f16 like input q", "attention: v dtype");
	c.in[2] = ten2(F16, 128, 32);
	c.out[0] = ten2(F16, 4, 32);
	is_str(check(&c), "output out has shape [4, 32], expected [4, 64] (the shape of input q)",
	       "attention: output shape");
}

static void test_argmax(void)
{
	struct op_call c = call_of("argmax");

	c.in[0] = ten2(F32, 4, 256);
	c.out[0] = ten1(I32, 4);
	is_str(check(&c), "", "argmax of [4, 256] into [4]");
	c.out[0] = ten2(I32, 4, 1);
	is_str(check(&c), "output out has shape [4, 1], expected [4] (one index per row of input x)",
	       "argmax: output rank");
	c.out[0] = ten1(F32, 4);
	is_str(check(&c), "output out is f32, expected i32", "argmax: output dtype");
	c.in[0] = ten1(F32, 256);
	c.out[0] = ten1(I32, 1);
	is_str(check(&c), "", "argmax of a vector is one index");
}

static void test_add_rmsnorm(void)
{
	struct op_call c = call_of("add_rmsnorm");

	c.in[0] = ten2(F16, 4, 64);
	c.in[1] = ten2(F16, 4, 64);
	c.in[2] = ten1(F16, 64);
	c.out[0] = ten2(F16, 4, 64);
	c.out[1] = ten2(F16, 4, 64);
	is_str(check(&c), "", "add_rmsnorm");
	c.in[1] = ten1(F16, 64);
	is_str(check(&c), "input r has shape [64], expected [4, 64] (the shape of input x)",
	       "add_rmsnorm: r is not broadcast");
	c.in[1] = ten2(BF16, 4, 64);
	is_str(check(&c), "input r is bf16, expected f16 like input x", "add_rmsnorm: r dtype");
	c.in[1] = ten2(F16, 4, 64);
	c.in[2] = ten1(F16, 32);
	is_str(check(&c), "input w has shape [32], expected [64] (the columns of input x)",
	       "add_rmsnorm: weight length");
	c.in[2] = ten1(F16, 64);
	c.attr[NORM_EPS].f = -0.5;
	is_str(check(&c), "attribute eps is -0.5; it must not be negative", "add_rmsnorm: negative eps");
	c.attr[NORM_EPS].f = 1e-5;
	c.out[0] = ten2(F16, 2, 64);
	is_str(check(&c), "output sum has shape [2, 64], expected [4, 64] (the shape of input x)",
	       "add_rmsnorm: sum shape");
	c.out[0] = ten2(F32, 4, 64);
	is_str(check(&c), "output sum is f32, expected f16 like input x", "add_rmsnorm: sum dtype");
	c.out[0] = ten2(F16, 4, 64);
	c.out[1] = ten3(F16, 1, 4, 64);
	is_str(check(&c), "output out has shape [1, 4, 64], expected [4, 64] (the shape of input x)",
	       "add_rmsnorm: out shape");
	c.out[1] = ten2(F16, 4, 64);
	c.nout = 1;
	is_str(check(&c), "add_rmsnorm takes 2 outputs, not 1", "add_rmsnorm: output count");
	c.nout = 2;
	c.in[0] = ten2(I32, 4, 64);
	is_str(check(&c), "input x is i32, expected f32, f16 or bf16", "add_rmsnorm: floats only");
}

static void test_matmul_add(void)
{
	struct op_call c = call_of("matmul_add");

	c.in[0] = ten2(F16, 4, 128);
	c.in[1] = ten2(F16, 4, 64);
	c.in[2] = ten2(F16, 128, 64);
	c.out[0] = ten2(F16, 4, 128);
	c.attr[MATMUL_TRANS_B].i = 1;
	is_str(check(&c), "", "matmul_add: x + [4,64] @ [128,64]^T");
	c.in[2] = ten2(F16, 128, 32);
	is_str(check(&c), "input b has shape [128, 32], expected [N, 64] (K = 64 from input a [4, 64])",
	       "matmul_add: K differs");
	c.in[2] = ten2(F16, 128, 64);
	c.in[1] = ten2(BF16, 4, 64);
	is_str(check(&c), "input a is bf16, expected f16 like input x", "matmul_add: a's dtype");
	c.in[1] = ten2(F16, 4, 64);
	c.in[0] = ten2(F16, 4, 64);
	is_str(check(&c), "input x has shape [4, 64], expected [4, 128] (M = 4 from input a, "
	       "N = 128 from input b: the residual of the product)", "matmul_add: residual shape");
	c.in[0] = ten1(F16, 128);
	is_str(check(&c), "input x has shape [128], expected [4, 128] (M = 4 from input a, "
	       "N = 128 from input b: the residual of the product)", "matmul_add: no broadcast");
	c.in[0] = ten2(F16, 4, 128);
	c.out[0] = ten2(F32, 4, 128);
	is_str(check(&c), "output out is f32, expected f16 like input x", "matmul_add: out dtype");
	c.out[0] = ten2(F16, 128, 4);
	is_str(check(&c), "output out has shape [128, 4], expected [4, 128] (the shape of input x)",
	       "matmul_add: out shape");
	c.out[0] = ten2(F16, 4, 128);
	c.attr[MATMUL_TRANS_B].i = 0;
	is_str(check(&c), "input b has shape [128, 64], expected [64, N] (K = 64 from input a [4, 64])",
	       "matmul_add: b not transposed");
	c.in[2] = ten3(F16, 1, 64, 128);
	is_str(check(&c), "input b has rank 3 ([1, 64, 128]), expected rank 2", "matmul_add: b's rank");
}

static void test_matmul_silu_mul(void)
{
	struct op_call c = call_of("matmul_silu_mul");

	c.in[0] = ten2(BF16, 2, 64);
	c.in[1] = ten2(BF16, 352, 64);
	c.out[0] = ten2(BF16, 2, 176);
	c.attr[MATMUL_TRANS_B].i = 1;
	is_str(check(&c), "", "matmul_silu_mul: [2,64] @ [352,64]^T halves to 176");
	c.out[0] = ten2(BF16, 2, 352);
	is_str(check(&c), "output out has shape [2, 352], expected [2, 176] (M = 2 from input a, "
	       "half the N = 352 of input b)", "matmul_silu_mul: out not halved");
	c.out[0] = ten2(BF16, 2, 176);
	c.in[1] = ten2(BF16, 351, 64);
	is_str(check(&c), "input b gives the product 351 columns, expected an even number "
	       "(gate and up halves)", "matmul_silu_mul: odd product columns");
	c.in[1] = ten2(BF16, 352, 63);
	is_str(check(&c), "input b has shape [352, 63], expected [N, 64] (K = 64 from input a [2, 64])",
	       "matmul_silu_mul: K differs");
	c.in[1] = ten2(BF16, 352, 64);
	c.out[0] = ten2(F16, 2, 176);
	is_str(check(&c), "output out is f16, expected bf16 like input a", "matmul_silu_mul: out dtype");
	c.out[0] = ten2(BF16, 2, 176);
	c.in[0] = ten2(I32, 2, 64);
	is_str(check(&c), "input a is i32, expected f32, f16 or bf16", "matmul_silu_mul: floats only");
}

/* 4 tokens of 4 query and 2 key/value heads of 16: q|k|v is 128 wide. */
static struct op_call rkv_call(void)
{
	struct op_call c = call_of("rope_kv_write");

	c.in[0] = ten2(F16, 4, 128);
	c.in[1] = ten1(I32, 4);
	c.out[0] = ten2(F16, 4, 64);
	c.out[1] = ten2(F16, 256, 32);
	c.out[2] = ten2(F16, 256, 32);
	c.attr[RKV_HEADS].i = 4;
	c.attr[RKV_KV_HEADS].i = 2;
	c.attr[RKV_HEAD_DIM].i = 16;
	return c;
}

static void test_rope_kv_write(void)
{
	struct op_call c = rkv_call();

	is_str(check(&c), "", "rope_kv_write: 4 query, 2 kv heads of 16");
	c.in[0] = ten2(F16, 4, 192);
	c.out[1] = ten2(F16, 256, 64);
	c.out[2] = ten2(F16, 256, 64);
	c.attr[RKV_KV_HEADS].i = 4;
	is_str(check(&c), "", "rope_kv_write: as many kv heads as query heads");
	c = rkv_call();
	c.in[0] = ten2(F16, 4, 192);
	is_str(check(&c), "input qkv has 192 columns, expected (heads + 2 x kv_heads) x head_dim "
	       "= (4 + 2 x 2) x 16 (q, k and v parts)", "rope_kv_write: qkv width");
	c.in[0] = ten1(F16, 128);
	is_str(check(&c), "input qkv has rank 1 ([128]), expected rank 2", "rope_kv_write: qkv rank");
	c.in[0] = ten2(F16, 4, 128);
	c.in[1] = ten1(I32, 3);
	is_str(check(&c), "input pos has shape [3], expected [4] (one per row of input qkv)",
	       "rope_kv_write: one position per token");
	c.in[1] = ten1(F32, 4);
	is_str(check(&c), "input pos is f32, expected i32", "rope_kv_write: positions dtype");
	c.in[1] = ten1(I32, 4);
	c.attr[RKV_HEAD_DIM].i = 15;
	is_str(check(&c), "attribute head_dim is 15; rope needs an even head_dim from 2 to 512",
	       "rope_kv_write: odd head_dim");
	c.attr[RKV_HEAD_DIM].i = 16;
	c.attr[RKV_HEADS].i = 0;
	is_str(check(&c), "attribute heads is 0; it must be at least 1", "rope_kv_write: no heads");
	c.attr[RKV_HEADS].i = 4;
	c.attr[RKV_KV_HEADS].i = -1;
	is_str(check(&c), "attribute kv_heads is -1; it must be at least 1",
	       "rope_kv_write: no kv heads");
	c.attr[RKV_KV_HEADS].i = INT64_MAX / 2;
	is_str(check(&c), "input qkv has 128 columns, expected (heads + 2 x kv_heads) x head_dim "
	       "= (4 + 2 x 4611686018427387903) x 16 (q, k and v parts)",
	       "rope_kv_write: a huge kv_heads is refused, not overflowed");
	c.attr[RKV_KV_HEADS].i = 2;
	c.attr[RKV_THETA].f = -1.0;
	is_str(check(&c), "attribute theta is -1; it must be positive", "rope_kv_write: theta");
	c.attr[RKV_THETA].f = 500000.0;
	c.out[0] = ten2(F16, 4, 128);
	is_str(check(&c), "output q has shape [4, 128], expected [4, 64] (the rows of input qkv, "
	       "heads x head_dim columns)", "rope_kv_write: q is the q part only");
	c.out[0] = ten2(BF16, 4, 64);
	is_str(check(&c), "output q is bf16, expected f16 like input qkv", "rope_kv_write: q dtype");
	c.out[0] = ten2(F16, 4, 64);
	c.out[1] = ten2(F16, 256, 64);
	is_str(check(&c), "output k_cache has shape [256, 64], expected [S, 32] (kv_heads x "
	       "head_dim = 2 x 16)", "rope_kv_write: k_cache width");
	c.out[1] = ten2(F32, 256, 32);
	is_str(check(&c), "output k_cache is f32, expected f16 like input qkv",
	       "rope_kv_write: k_cache dtype");
	c.out[1] = ten2(F16, 256, 32);
	c.out[2] = ten2(F16, 128, 32);
	is_str(check(&c), "output v_cache has shape [128, 32], expected [256, 32] (the shape of "
	       "output k_cache)", "rope_kv_write: v_cache unlike k_cache");
	c.out[2] = ten2(F16, 256, 32);
	c.nout = 2;
	is_str(check(&c), "rope_kv_write takes 3 outputs, not 2", "rope_kv_write: output count");

	/* qk_norm's weights, [head_dim] of qkv's dtype, both or neither */
	c = rkv_call();
	c.nin = 4;
	c.in[RKV_Q_W] = ten1(F16, 16);
	c.in[RKV_K_W] = ten1(F16, 16);
	c.attr[RKV_EPS].f = 1e-6;
	is_str(check(&c), "", "rope_kv_write: with q_w and k_w");
	c.nin = 3;
	is_str(check(&c), "rope_kv_write takes 2 or 4 inputs, not 3",
	       "rope_kv_write: q_w without k_w");
	c.nin = 5;
	is_str(check(&c), "rope_kv_write takes 2 or 4 inputs, not 5", "rope_kv_write: 5 inputs");
	c.nin = 4;
	c.in[RKV_Q_W] = ten1(F16, 32);
	is_str(check(&c), "input q_w has shape [32], expected [16] (head_dim)",
	       "rope_kv_write: q_w of head_dim");
	c.in[RKV_Q_W] = ten1(F16, 16);
	c.in[RKV_K_W] = ten2(F16, 2, 16);
	is_str(check(&c), "input k_w has shape [2, 16], expected [16] (head_dim)",
	       "rope_kv_write: k_w one head's");
	c.in[RKV_K_W] = ten1(BF16, 16);
	is_str(check(&c), "input k_w is bf16, expected f16 like input qkv",
	       "rope_kv_write: k_w of qkv's dtype");
	c.in[RKV_K_W] = ten1(F16, 16);
	c.attr[RKV_EPS].f = -1e-6;
	is_str(check(&c), "attribute eps is -1e-06; it must not be negative",
	       "rope_kv_write: eps");

	/* rope_paged_kv_write's, after slots */
	c = call_of("rope_paged_kv_write");
	c.in[0] = ten2(F16, 4, 128);
	c.in[1] = ten1(I32, 4);
	c.in[RPKV_SLOTS] = ten1(I32, 4);
	c.out[0] = ten2(F16, 4, 64);
	c.out[1] = ten3(F16, 8, 16, 32);
	c.out[2] = ten3(F16, 8, 16, 32);
	c.attr[RKV_HEADS].i = 4;
	c.attr[RKV_KV_HEADS].i = 2;
	c.attr[RKV_HEAD_DIM].i = 16;
	c.attr[RKV_THETA].f = 10000.0;
	is_str(check(&c), "", "rope_paged_kv_write: without the weights");
	c.nin = 5;
	c.in[RPKV_Q_W] = ten1(F16, 16);
	c.in[RPKV_K_W] = ten1(F16, 16);
	c.attr[RKV_EPS].f = 1e-6;
	is_str(check(&c), "", "rope_paged_kv_write: with q_w and k_w");
	c.in[RPKV_Q_W] = ten1(F32, 16);
	is_str(check(&c), "input q_w is f32, expected f16 like input qkv",
	       "rope_paged_kv_write: q_w of qkv's dtype");
	c.in[RPKV_Q_W] = ten1(F16, 16);
	c.nin = 4;
	is_str(check(&c), "rope_paged_kv_write takes 3 or 5 inputs, not 4",
	       "rope_paged_kv_write: q_w without k_w");
}

static void test_slice(void)
{
	struct op_call c = call_of("slice");

	c.in[0] = ten2(F16, 4, 192);
	c.out[0] = ten2(F16, 4, 64);
	c.attr[SLICE_START].i = 128;
	is_str(check(&c), "", "slice: the last 64 of 192 columns");
	c.attr[SLICE_START].i = 129;
	is_str(check(&c), "attribute start is 129: the 64 columns of output out from there pass "
	       "the 192 columns of input x", "slice: past the end");
	c.attr[SLICE_START].i = INT64_MAX;
	is_str(check(&c), "attribute start is 9223372036854775807: the 64 columns of output out "
	       "from there pass the 192 columns of input x", "slice: a huge start, no overflow");
	c.attr[SLICE_START].i = -1;
	is_str(check(&c), "attribute start is -1; it must not be negative", "slice: negative start");
	c.attr[SLICE_START].i = 0;
	c.out[0] = ten2(F16, 2, 64);
	is_str(check(&c), "output out has shape [2, 64], expected [4, W] (the rows of input x, "
	       "W of its columns)", "slice: rows differ");
	c.out[0] = ten1(F16, 64);
	is_str(check(&c), "output out has shape [64], expected [4, W] (the rows of input x, "
	       "W of its columns)", "slice: rank differs");
	c.in[0] = ten3(F32, 2, 3, 10);
	c.out[0] = ten3(F32, 2, 3, 4);
	c.attr[SLICE_START].i = 6;
	is_str(check(&c), "", "slice: rank 3, the last 4 columns");
	c.out[0] = ten3(F32, 2, 4, 4);
	is_str(check(&c), "output out has shape [2, 4, 4], expected [2, 3, W] (the rows of "
	       "input x, W of its columns)", "slice: rank 3, rows differ");
	c.out[0] = ten3(F16, 2, 3, 4);
	is_str(check(&c), "output out is f16, expected f32 like input x", "slice: dtype");
}

/* The rope_type attributes, refused by name and value where the
 * frequencies would not be what transformers computes. */
static void test_rope_scaling(void)
{
	struct op_call c = call_of("rope");
	union op_value *a = &c.attr[ROPE_SCALING];
	const struct op_kind *k = c.kind;

	c.in[0] = ten2(F32, 4, 64);
	c.in[1] = ten1(I32, 4);
	c.out[0] = ten2(F32, 4, 64);
	c.attr[ROPE_HEADS].i = 4;
	c.attr[ROPE_HEAD_DIM].i = 16;
	is_str(k->attrs[ROPE_SCALING + RS_TYPE].name, "rope_type", "rope: rope_type follows theta");
	is_int(op_attr_choice(&k->attrs[ROPE_SCALING + RS_TYPE], "llama3"), ROPE_TYPE_LLAMA3,
	       "rope_type llama3 is known");
	is_int(op_attr_choice(&k->attrs[ROPE_SCALING + RS_TYPE], "longrope"), -1,
	       "rope_type longrope is not");
	is_str(op_kind_get(OP_ROPE_KV_WRITE)->attrs[RKV_SCALING + RS_TRUNCATE].name, "truncate",
	       "rope_kv_write: truncate is the last scaling attribute");
	a[RS_TYPE].i = ROPE_TYPE_LLAMA3;
	a[RS_FACTOR].f = 32;
	a[RS_ORIGINAL_MAX].i = 8192;
	is_str(check(&c), "", "rope: llama3 with its parameters");
	a[RS_FACTOR].f = 0.5;
	is_str(check(&c), "attribute factor is 0.5; rope_type llama3 needs a finite factor of at "
	       "least 1", "rope: llama3 factor below 1");
	a[RS_FACTOR].f = 32;
	a[RS_HIGH_FREQ_FACTOR].f = 1;
	is_str(check(&c), "attribute high_freq_factor is 1; llama3 needs it above low_freq_factor",
	       "rope: llama3 bands in the wrong order");
	a[RS_HIGH_FREQ_FACTOR].f = 4;
	a[RS_LOW_FREQ_FACTOR].f = 0;
	is_str(check(&c), "attribute low_freq_factor is 0; llama3 needs it positive",
	       "rope: llama3 low_freq_factor 0");
	a[RS_LOW_FREQ_FACTOR].f = 1;
	a[RS_ORIGINAL_MAX].i = 0;
	is_str(check(&c), "attribute original_max_position_embeddings is 0; rope_type llama3 "
	       "needs it in [1, 2^31)", "rope: llama3 without its original context");
	a[RS_TYPE].i = ROPE_TYPE_YARN;
	a[RS_ORIGINAL_MAX].i = 4096;
	a[RS_FACTOR].f = 4;
	is_str(check(&c), "", "rope: yarn");
	a[RS_BETA_FAST].f = -1;
	is_str(check(&c), "attribute beta_fast is -1; yarn needs it positive", "rope: yarn beta_fast");
	a[RS_BETA_FAST].f = 32;
	a[RS_ATTENTION_FACTOR].f = -2;
	is_str(check(&c), "attribute attention_factor is -2; yarn needs it in [0, 1000] (0: from "
	       "factor)", "rope: yarn attention_factor");
	a[RS_ATTENTION_FACTOR].f = 0;
	a[RS_TYPE].i = ROPE_TYPE_LINEAR;
	a[RS_FACTOR].f = 1.0 / 0.0;
	is_str(check(&c), "attribute factor is inf; rope_type linear needs a finite factor of at "
	       "least 1", "rope: linear factor infinite");
	a[RS_FACTOR].f = 2;
	is_str(check(&c), "", "rope: linear");
	a[RS_TYPE].i = ROPE_TYPE_DYNAMIC;
	a[RS_ORIGINAL_MAX].i = 2048;
	is_str(check(&c), "", "rope: dynamic");
	c.attr[ROPE_HEAD_DIM].i = 2;
	c.attr[ROPE_HEADS].i = 32;
	is_str(check(&c), "attribute head_dim is 2; rope_type dynamic needs it above 2",
	       "rope: dynamic's base exponent dim / (dim - 2) needs dim above 2");
	a[RS_TYPE].i = 7;
	is_str(check(&c), "attribute rope_type is 7, not a rope type", "rope: rope_type out of range");
}

/* rmsnorm_matmul: rmsnorm's operands and eps, then a product with
 * matmul's trans_b and the epilogue none or silu_mul. */
static void test_rmsnorm_matmul(void)
{
	const struct op_kind *k = op_kind_find("rmsnorm_matmul");
	struct op_call c = call_of("rmsnorm_matmul");

	ok(k != NULL && k->id == OP_RMSNORM_MATMUL, "rmsnorm_matmul is OP_RMSNORM_MATMUL");
	is_str(k->inputs[0], "x", "rmsnorm_matmul: x first");
	is_str(k->inputs[1], "w", "rmsnorm_matmul: then the norm's w");
	is_str(k->inputs[2], "b", "rmsnorm_matmul: then the product's b");
	is_int(op_kind_count_attrs(k), 3, "rmsnorm_matmul has 3 attributes");
	ok(op_kind_attr_index(k, "eps") == RNM_EPS && k->attrs[RNM_EPS].required &&
	   k->attrs[RNM_EPS].type == OP_ATTR_FLOAT, "rmsnorm_matmul: eps at RNM_EPS, required");
	ok(op_kind_attr_index(k, "trans_b") == RNM_TRANS_B && !k->attrs[RNM_TRANS_B].required &&
	   k->attrs[RNM_TRANS_B].type == OP_ATTR_BOOL && k->attrs[RNM_TRANS_B].dflt == 0.0,
	   "rmsnorm_matmul: trans_b at RNM_TRANS_B, false by default");
	is_int(op_kind_attr_index(k, "trans_a"), -1, "rmsnorm_matmul: no trans_a");
	ok(op_kind_attr_index(k, "epilogue") == RNM_EPILOGUE &&
	   k->attrs[RNM_EPILOGUE].type == OP_ATTR_ENUM && !k->attrs[RNM_EPILOGUE].required &&
	   k->attrs[RNM_EPILOGUE].dflt == RNM_EPI_NONE,
	   "rmsnorm_matmul: epilogue at RNM_EPILOGUE, an enum, none by default");
	is_int(op_attr_choice(&k->attrs[RNM_EPILOGUE], "none"), RNM_EPI_NONE, "epilogue none");
	is_int(op_attr_choice(&k->attrs[RNM_EPILOGUE], "silu_mul"), RNM_EPI_SILU_MUL,
	       "epilogue silu_mul");
	is_int(op_attr_choice(&k->attrs[RNM_EPILOGUE], "gelu"), -1, "no epilogue gelu");
	ok(k->capture == OP_CAPTURE_ALWAYS && !(k->flags & OP_INPLACE),
	   "rmsnorm_matmul: always captured, not in place");

	c.attr[RNM_EPS].f = 1e-5;
	c.attr[RNM_TRANS_B].i = 1;
	c.in[0] = ten2(BF16, 2, 64);
	c.in[1] = ten1(BF16, 64);
	c.in[2] = ten2(BF16, 96, 64);
	c.out[0] = ten2(BF16, 2, 96);
	is_str(check(&c), "", "rmsnorm_matmul: [2,64] normed @ [96,64]^T");
	c.attr[RNM_TRANS_B].i = 0;
	is_str(check(&c), "input b has shape [96, 64], expected [64, N] (K = 64 from input x [2, 64])",
	       "rmsnorm_matmul: b not transposed");
	c.in[2] = ten2(BF16, 64, 96);
	is_str(check(&c), "", "rmsnorm_matmul: [2,64] normed @ [64,96]");
	c.attr[RNM_TRANS_B].i = 1;
	c.in[2] = ten2(BF16, 96, 64);
	c.in[1] = ten1(BF16, 96);
	is_str(check(&c), "input w has shape [96], expected [64] (the columns of input x)",
	       "rmsnorm_matmul: w is x's columns");
	c.in[1] = ten1(F32, 64);
	is_str(check(&c), "input w is f32, expected bf16 like input x", "rmsnorm_matmul: w dtype");
	c.in[1] = ten1(BF16, 64);
	c.in[2] = ten2(F16, 96, 64);
	is_str(check(&c), "input b is f16, expected bf16 like input x", "rmsnorm_matmul: b dtype");
	c.in[2] = ten3(BF16, 1, 96, 64);
	is_str(check(&c), "input b has rank 3 ([1, 96, 64]), expected rank 2",
	       "rmsnorm_matmul: b's rank");
	c.in[2] = ten2(BF16, 96, 64);
	c.in[0] = ten3(BF16, 1, 2, 64);
	is_str(check(&c), "input x has rank 3 ([1, 2, 64]), expected rank 2",
	       "rmsnorm_matmul: x's rank");
	c.in[0] = ten2(I32, 2, 64);
	is_str(check(&c), "input x is i32, expected f32, f16 or bf16", "rmsnorm_matmul: floats only");
	c.in[0] = ten2(BF16, 2, 64);
	c.attr[RNM_EPS].f = -1.0;
	is_str(check(&c), "attribute eps is -1; it must not be negative", "rmsnorm_matmul: eps");
	c.attr[RNM_EPS].f = 1e-5;
	c.out[0] = ten2(BF16, 3, 96);
	is_str(check(&c), "output out has shape [3, 96], expected [2, 96] (M = 2 from input x, "
	       "N = 96 from input b)", "rmsnorm_matmul: out's M");
	c.out[0] = ten2(F32, 2, 96);
	is_str(check(&c), "output out is f32, expected bf16 like input x", "rmsnorm_matmul: out dtype");

	c.attr[RNM_EPILOGUE].i = RNM_EPI_SILU_MUL;
	c.out[0] = ten2(BF16, 2, 48);
	is_str(check(&c), "", "rmsnorm_matmul silu_mul: 96 product columns halve to 48");
	c.out[0] = ten2(BF16, 2, 96);
	is_str(check(&c), "output out has shape [2, 96], expected [2, 48] (M = 2 from input x, "
	       "half the N = 96 of input b)", "rmsnorm_matmul silu_mul: out not halved");
	c.out[0] = ten2(BF16, 2, 47);
	c.in[2] = ten2(BF16, 95, 64);
	is_str(check(&c), "input b gives the product 95 columns, expected an even number (gate and "
	       "up halves, epilogue silu_mul)", "rmsnorm_matmul silu_mul: odd product columns");
	c.in[2] = ten2(BF16, 96, 64);
	c.attr[RNM_EPILOGUE].i = 2;
	is_str(check(&c), "attribute epilogue is 2; it must be none or silu_mul",
	       "rmsnorm_matmul: an epilogue out of range");
}

/* rmsnorm_matmul_argmax: rmsnorm_matmul's operands, eps and trans_b at
 * their positions (no epilogue), its checks on out, then index: i32 [M]. */
static void test_rmsnorm_matmul_argmax(void)
{
	const struct op_kind *k = op_kind_find("rmsnorm_matmul_argmax");
	struct op_call c = call_of("rmsnorm_matmul_argmax");

	ok(k != NULL && k->id == OP_RMSNORM_MATMUL_ARGMAX,
	   "rmsnorm_matmul_argmax is OP_RMSNORM_MATMUL_ARGMAX");
	is_str(k->inputs[0], "x", "rna: x first");
	is_str(k->inputs[1], "w", "rna: the norm's w");
	is_str(k->inputs[2], "b", "rna: the product's b");
	is_str(k->outputs[0], "out", "rna: out, the product");
	is_str(k->outputs[1], "index", "rna: then index");
	is_int(op_kind_count_attrs(k), 2, "rna has 2 attributes");
	ok(op_kind_attr_index(k, "eps") == RNA_EPS && (int)RNA_EPS == (int)RNM_EPS &&
	   k->attrs[RNA_EPS].required && k->attrs[RNA_EPS].type == OP_ATTR_FLOAT,
	   "rna: eps where rmsnorm_matmul has it, required");
	ok(op_kind_attr_index(k, "trans_b") == RNA_TRANS_B && (int)RNA_TRANS_B == (int)RNM_TRANS_B &&
	   !k->attrs[RNA_TRANS_B].required && k->attrs[RNA_TRANS_B].dflt == 0.0,
	   "rna: trans_b where rmsnorm_matmul has it, false by default");
	is_int(op_kind_attr_index(k, "epilogue"), -1, "rna: no epilogue");
	ok(k->capture == OP_CAPTURE_ALWAYS && !(k->flags & OP_INPLACE),
	   "rna: always captured, not in place");

	c.attr[RNA_EPS].f = 1e-5;
	c.attr[RNA_TRANS_B].i = 1;
	c.in[0] = ten2(BF16, 2, 64);
	c.in[1] = ten1(BF16, 64);
	c.in[2] = ten2(BF16, 96, 64);
	c.out[0] = ten2(BF16, 2, 96);
	c.out[1] = ten1(I32, 2);
	is_str(check(&c), "", "rna: [2,64] normed @ [96,64]^T, 2 indexes");
	c.in[2] = ten2(BF16, 96, 32);
	is_str(check(&c), "input b has shape [96, 32], expected [N, 64] (K = 64 from input x [2, 64])",
	       "rna: rmsnorm_matmul's checks on b");
	c.in[2] = ten2(BF16, 96, 64);
	c.out[0] = ten2(BF16, 2, 95);
	is_str(check(&c), "output out has shape [2, 95], expected [2, 96] (M = 2 from input x, "
	       "N = 96 from input b)", "rna: out's N");
	c.out[0] = ten2(BF16, 2, 96);
	c.attr[RNA_EPS].f = -1.0;
	is_str(check(&c), "attribute eps is -1; it must not be negative", "rna: eps");
	c.attr[RNA_EPS].f = 1e-5;
	c.out[1] = ten1(F32, 2);
	is_str(check(&c), "output index is f32, expected i32", "rna: index is i32");
	c.out[1] = ten1(I32, 3);
	is_str(check(&c), "output index has shape [3], expected [2] (M, the rows of input x)",
	       "rna: an index a row");
	c.out[1] = ten2(I32, 2, 1);
	is_str(check(&c), "output index has shape [2, 1], expected [2] (M, the rows of input x)",
	       "rna: index's rank");
	c.out[1] = ten1(I32, 2);
	c.nout = 1;
	ok(check(&c)[0] != '\0', "rna: index is not optional");
}

/* rmsnorm_matmul_rope_kv_write: rmsnorm_matmul's x, w, b (no epilogue),
 * then rope_kv_write's pos, outputs and attributes (eps and trans_b after
 * them), its checks made on the product's q|k|v columns. */
static void test_rmsnorm_matmul_rope_kv_write(void)
{
	const struct op_kind *k = op_kind_find("rmsnorm_matmul_rope_kv_write");
	const struct op_kind *rkv = op_kind_find("rope_kv_write");
	struct op_call c = call_of("rmsnorm_matmul_rope_kv_write");
	int same = 1;

	ok(k != NULL && k->id == OP_RMSNORM_MATMUL_ROPE_KV_WRITE,
	   "rmsnorm_matmul_rope_kv_write is OP_RMSNORM_MATMUL_ROPE_KV_WRITE");
	is_str(k->inputs[0], "x", "rrk: x first");
	is_str(k->inputs[1], "w", "rrk: the norm's w");
	is_str(k->inputs[2], "b", "rrk: the product's b");
	is_str(k->inputs[3], "pos", "rrk: then pos");
	ok(k->inputs[4] == NULL, "rrk: four inputs");
	is_str(k->outputs[0], "q", "rrk: q");
	is_str(k->outputs[1], "k_cache", "rrk: k_cache");
	is_str(k->outputs[2], "v_cache", "rrk: v_cache");
	is_int(op_kind_count_attrs(k), RKV_EPS + 2,
	       "rrk: rope_kv_write's attributes but its eps, and two more");
	for (int i = 0; i < RKV_EPS; i++)
		same = same && strcmp(k->attrs[i].name, rkv->attrs[i].name) == 0 &&
		       k->attrs[i].type == rkv->attrs[i].type &&
		       k->attrs[i].required == rkv->attrs[i].required &&
		       k->attrs[i].dflt == rkv->attrs[i].dflt;
	ok(same, "rrk: rope_kv_write's attributes at its positions, with its defaults");
	ok(op_kind_attr_index(k, "eps") == RRK_EPS && k->attrs[RRK_EPS].required &&
	   k->attrs[RRK_EPS].type == OP_ATTR_FLOAT, "rrk: eps at RRK_EPS, required");
	ok(op_kind_attr_index(k, "trans_b") == RRK_TRANS_B && !k->attrs[RRK_TRANS_B].required &&
	   k->attrs[RRK_TRANS_B].dflt == 0.0, "rrk: trans_b at RRK_TRANS_B, false by default");
	is_int(op_kind_attr_index(k, "epilogue"), -1, "rrk: no epilogue");
	ok(k->capture == OP_CAPTURE_ALWAYS && !(k->flags & OP_INPLACE),
	   "rrk: always captured, not in place");

	/* heads 4, kv_heads 2, head_dim 16: QKV = (4 + 4) x 16 = 128 */
	c.attr[RKV_HEADS].i = 4;
	c.attr[RKV_KV_HEADS].i = 2;
	c.attr[RKV_HEAD_DIM].i = 16;
	c.attr[RKV_THETA].f = 10000.0;
	c.attr[RKV_SCALING + RS_FACTOR].f = 1.0;
	c.attr[RRK_EPS].f = 1e-5;
	c.attr[RRK_TRANS_B].i = 1;
	c.in[0] = ten2(BF16, 2, 64);
	c.in[1] = ten1(BF16, 64);
	c.in[2] = ten2(BF16, 128, 64);
	c.in[3] = ten1(I32, 2);
	c.out[0] = ten2(BF16, 2, 64);
	c.out[1] = ten2(BF16, 32, 32);
	c.out[2] = ten2(BF16, 32, 32);
	is_str(check(&c), "", "rrk: [2,64] normed @ [128,64]^T, 4 + 2 x 2 heads of 16");
	c.attr[RRK_TRANS_B].i = 0;
	is_str(check(&c), "input b has shape [128, 64], expected [64, QKV] (K = 64 from input x "
	       "[2, 64])", "rrk: b not transposed");
	c.in[2] = ten2(BF16, 64, 128);
	is_str(check(&c), "", "rrk: b [K, QKV] without trans_b");
	c.attr[RRK_TRANS_B].i = 1;
	c.in[2] = ten2(BF16, 112, 64);
	is_str(check(&c), "input b gives the product 112 columns, expected (heads + 2 x kv_heads) "
	       "x head_dim = (4 + 2 x 2) x 16 (q, k and v parts)", "rrk: b's columns");
	c.in[2] = ten2(BF16, 128, 64);
	c.in[1] = ten1(BF16, 32);
	is_str(check(&c), "input w has shape [32], expected [64] (the columns of input x)",
	       "rrk: w is x's columns");
	c.in[1] = ten1(F32, 64);
	is_str(check(&c), "input w is f32, expected bf16 like input x", "rrk: w's dtype");
	c.in[1] = ten1(BF16, 64);
	c.in[2] = ten2(F16, 128, 64);
	is_str(check(&c), "input b is f16, expected bf16 like input x", "rrk: b's dtype");
	c.in[2] = ten2(BF16, 128, 64);
	c.in[0] = ten2(I32, 2, 64);
	is_str(check(&c), "input x is i32, expected f32, f16 or bf16", "rrk: floats only");
	c.in[0] = ten2(BF16, 2, 64);
	c.attr[RRK_EPS].f = -1.0;
	is_str(check(&c), "attribute eps is -1; it must not be negative", "rrk: eps");
	c.attr[RRK_EPS].f = 1e-5;
	c.attr[RKV_HEAD_DIM].i = 15;
	is_str(check(&c), "attribute head_dim is 15; rope needs an even head_dim from 2 to 512",
	       "rrk: an odd head_dim");
	c.attr[RKV_HEAD_DIM].i = 16;
	/* rope_kv_write's own checks, by the same names */
	c.in[3] = ten1(I32, 3);
	ok(strstr(check(&c), "input pos") != NULL, "rrk: pos has x's rows (%s)", check(&c));
	c.in[3] = ten1(I32, 2);
	c.out[0] = ten2(BF16, 2, 32);
	is_str(check(&c), "output q has shape [2, 32], expected [2, 64] (the rows of the product "
	       "of input x and b, heads x head_dim columns)", "rrk: q is heads x head_dim");
	c.out[0] = ten2(BF16, 2, 64);
	c.out[1] = ten2(BF16, 32, 16);
	ok(strstr(check(&c), "output k_cache has shape [32, 16], expected [S, 32]") != NULL,
	   "rrk: k_cache's columns (%s)", check(&c));
	c.out[1] = ten2(BF16, 32, 32);
	c.attr[RKV_THETA].f = 0.0;
	is_str(check(&c), "attribute theta is 0; it must be positive", "rrk: theta");
}

/* decoder_layer: eight inputs, three outputs, rope_kv_write's rope
 * attributes then eps, kv_len, scale, causal (op.h's DL_*); every
 * operand checked against H from x, F from w_gate_up and the heads. */
static void test_decoder_layer(void)
{
	const struct op_kind *k = op_kind_find("decoder_layer");
	const struct op_kind *rkv = op_kind_find("rope_kv_write");
	static const char *const in[] = { "x", "attn_norm", "w_qkv", "w_o", "ffn_norm",
	                                  "w_gate_up", "w_down", "pos" };
	struct op_call c = call_of("decoder_layer");
	int same = 1;

	ok(k != NULL && k->id == OP_DECODER_LAYER, "decoder_layer is OP_DECODER_LAYER");
	for (int i = 0; i < 8; i++)
		same = same && strcmp(k->inputs[i], in[i]) == 0;
	ok(same && k->inputs[8] == NULL && strcmp(k->inputs[DL_POS], "pos") == 0 &&
	   strcmp(k->inputs[DL_W_DOWN], "w_down") == 0,
	   "decoder_layer: x, attn_norm, w_qkv, w_o, ffn_norm, w_gate_up, w_down, pos (DL_*)");
	ok(strcmp(k->outputs[DL_OUT], "out") == 0 && strcmp(k->outputs[DL_K_CACHE], "k_cache") == 0 &&
	   strcmp(k->outputs[DL_V_CACHE], "v_cache") == 0 && k->outputs[3] == NULL,
	   "decoder_layer: out, k_cache, v_cache");
	is_int(op_kind_count_attrs(k), RKV_EPS + 4,
	       "decoder_layer: rope_kv_write's attributes but its eps, and four more");
	same = 1;
	for (int i = 0; i < RKV_EPS; i++)
		same = same && strcmp(k->attrs[i].name, rkv->attrs[i].name) == 0 &&
		       k->attrs[i].type == rkv->attrs[i].type &&
		       k->attrs[i].required == rkv->attrs[i].required &&
		       k->attrs[i].dflt == rkv->attrs[i].dflt;
	ok(same, "decoder_layer: rope_kv_write's attributes at its positions, with its defaults");
	ok(op_kind_attr_index(k, "eps") == DL_EPS && k->attrs[DL_EPS].required &&
	   k->attrs[DL_EPS].type == OP_ATTR_FLOAT, "decoder_layer: eps at DL_EPS, required");
	ok(op_kind_attr_index(k, "kv_len") == DL_KV_LEN && k->attrs[DL_KV_LEN].required &&
	   k->attrs[DL_KV_LEN].type == OP_ATTR_INTVAR,
	   "decoder_layer: kv_len at DL_KV_LEN, required, an int or a var");
	ok(op_kind_attr_index(k, "scale") == DL_SCALE && !k->attrs[DL_SCALE].required &&
	   k->attrs[DL_SCALE].dflt == 0.0, "decoder_layer: scale at DL_SCALE, 0 by default");
	ok(op_kind_attr_index(k, "causal") == DL_CAUSAL && k->attrs[DL_CAUSAL].type == OP_ATTR_BOOL &&
	   k->attrs[DL_CAUSAL].dflt == 0.0, "decoder_layer: causal at DL_CAUSAL, false by default");
	is_int(op_kind_attr_index(k, "trans_b"), -1, "decoder_layer: no trans_b (weights [out, in])");
	ok(k->flags == OP_INPLACE && strcmp(k->inputs[0], "x") == 0,
	   "decoder_layer: out may be x");

	/* H 64, heads 4, kv_heads 2, head_dim 16 (QKV 128), F 96, T 3, S 32 */
	c.attr[RKV_HEADS].i = 4;
	c.attr[RKV_KV_HEADS].i = 2;
	c.attr[RKV_HEAD_DIM].i = 16;
	c.attr[RKV_THETA].f = 10000.0;
	c.attr[RKV_SCALING + RS_FACTOR].f = 1.0;
	c.attr[DL_EPS].f = 1e-5;
	c.attr[DL_KV_LEN].i = 8;
	c.in[DL_X] = ten2(BF16, 3, 64);
	c.in[DL_ATTN_NORM] = ten1(BF16, 64);
	c.in[DL_W_QKV] = ten2(BF16, 128, 64);
	c.in[DL_W_O] = ten2(BF16, 64, 64);
	c.in[DL_FFN_NORM] = ten1(BF16, 64);
	c.in[DL_W_GATE_UP] = ten2(BF16, 192, 64);
	c.in[DL_W_DOWN] = ten2(BF16, 64, 96);
	c.in[DL_POS] = ten1(I32, 3);
	c.out[DL_OUT] = ten2(BF16, 3, 64);
	c.out[DL_K_CACHE] = ten2(BF16, 32, 32);
	c.out[DL_V_CACHE] = ten2(BF16, 32, 32);
	is_str(check(&c), "", "decoder_layer: H 64, 4 + 2 x 2 heads of 16, F 96");
	c.in[DL_W_DOWN] = ten2(BF16, 96, 64);
	is_str(check(&c), "input w_down has shape [96, 64], expected [64, 96] ([H, F]: H = 64 "
	       "from input x, F = 96 from input w_gate_up)", "decoder_layer: w_down is [H, F]");
	c.in[DL_W_DOWN] = ten2(F16, 64, 96);
	is_str(check(&c), "input w_down is f16, expected bf16 like input x",
	       "decoder_layer: w_down's dtype");
	c.in[DL_W_DOWN] = ten2(BF16, 64, 96);
	c.in[DL_W_GATE_UP] = ten2(BF16, 191, 64);
	is_str(check(&c), "input w_gate_up has shape [191, 64], expected [2F, 64] (gate rows, "
	       "then up rows, of H = 64)", "decoder_layer: w_gate_up's rows even");
	c.in[DL_W_GATE_UP] = ten2(BF16, 192, 32);
	is_str(check(&c), "input w_gate_up has shape [192, 32], expected [2F, 64] (gate rows, "
	       "then up rows, of H = 64)", "decoder_layer: w_gate_up's columns are H");
	c.in[DL_W_GATE_UP] = ten2(BF16, 192, 64);
	c.in[DL_W_QKV] = ten2(BF16, 112, 64);
	is_str(check(&c), "input w_qkv has shape [112, 64], expected [(heads + 2 x kv_heads) x "
	       "head_dim, H] = [(4 + 2 x 2) x 16, 64] (q, k and v rows of H = 64)",
	       "decoder_layer: w_qkv's rows");
	c.in[DL_W_QKV] = ten2(BF16, 128, 63);
	ok(strstr(check(&c), "input w_qkv has shape [128, 63]") != NULL,
	   "decoder_layer: w_qkv's columns (%s)", check(&c));
	c.in[DL_W_QKV] = ten2(BF16, 128, 64);
	c.in[DL_W_O] = ten2(BF16, 64, 32);
	is_str(check(&c), "input w_o has shape [64, 32], expected [64, 64] ([H, heads x "
	       "head_dim] = [64, 4 x 16])", "decoder_layer: w_o is [H, heads x head_dim]");
	c.in[DL_W_O] = ten2(BF16, 64, 64);
	c.in[DL_ATTN_NORM] = ten1(BF16, 32);
	is_str(check(&c), "input attn_norm has shape [32], expected [64] (the columns of input x)",
	       "decoder_layer: attn_norm is [H]");
	c.in[DL_ATTN_NORM] = ten1(BF16, 64);
	c.in[DL_FFN_NORM] = ten1(F32, 64);
	is_str(check(&c), "input ffn_norm is f32, expected bf16 like input x",
	       "decoder_layer: ffn_norm's dtype");
	c.in[DL_FFN_NORM] = ten1(BF16, 64);
	c.in[DL_POS] = ten1(I32, 2);
	is_str(check(&c), "input pos has shape [2], expected [3] (one per row of input x)",
	       "decoder_layer: pos [T]");
	c.in[DL_POS] = ten1(I32, 3);
	c.attr[RKV_KV_HEADS].i = 3;
	is_str(check(&c), "attribute heads (4) is not a multiple of kv_heads (3)",
	       "decoder_layer: kv_heads divides heads");
	c.attr[RKV_KV_HEADS].i = 2;
	c.attr[RKV_HEAD_DIM].i = 15;
	is_str(check(&c), "attribute head_dim is 15; rope needs an even head_dim from 2 to 512",
	       "decoder_layer: an odd head_dim");
	c.attr[RKV_HEAD_DIM].i = 16;
	c.attr[DL_EPS].f = -1.0;
	is_str(check(&c), "attribute eps is -1; it must not be negative", "decoder_layer: eps");
	c.attr[DL_EPS].f = 1e-5;
	c.attr[RKV_THETA].f = 0.0;
	is_str(check(&c), "attribute theta is 0; it must be positive", "decoder_layer: theta");
	c.attr[RKV_THETA].f = 10000.0;
	c.out[DL_K_CACHE] = ten2(BF16, 32, 16);
	is_str(check(&c), "output k_cache has shape [32, 16], expected [S, 32] (kv_heads x "
	       "head_dim = 2 x 16)", "decoder_layer: k_cache's columns");
	c.out[DL_K_CACHE] = ten2(BF16, 32, 32);
	c.out[DL_V_CACHE] = ten2(BF16, 16, 32);
	is_str(check(&c), "output v_cache has shape [16, 32], expected [32, 32] (the shape of "
	       "output k_cache)", "decoder_layer: the caches alike");
	c.out[DL_V_CACHE] = ten2(BF16, 32, 32);
	c.out[DL_OUT] = ten2(BF16, 3, 32);
	is_str(check(&c), "output out has shape [3, 32], expected [3, 64] (the shape of input x)",
	       "decoder_layer: out is x's shape");
	c.out[DL_OUT] = ten2(BF16, 3, 64);
	c.in[DL_X] = ten2(I32, 3, 64);
	is_str(check(&c), "input x is i32, expected f32, f16 or bf16", "decoder_layer: floats only");
	c.in[DL_X] = ten2(F16, 3, 64);
	is_str(check(&c), "input attn_norm is bf16, expected f16 like input x",
	       "decoder_layer: every float operand has x's dtype");
	c.nin = 7;
	is_str(check(&c), "decoder_layer takes 8 inputs, not 7", "decoder_layer: eight inputs");
}

static void test_qk_norm(void)
{
	struct op_call c = call_of("qk_norm");

	c.in[0] = ten2(BF16, 3, 128);
	c.in[1] = ten1(BF16, 16);
	c.in[2] = ten1(BF16, 16);
	c.out[0] = ten2(BF16, 3, 128);
	c.attr[QKN_HEADS].i = 4;
	c.attr[QKN_KV_HEADS].i = 2;
	c.attr[QKN_HEAD_DIM].i = 16;
	is_str(check(&c), "", "qk_norm over a q|k|v row (v copied)");
	c.attr[QKN_KV_HEADS].i = 4;
	is_str(check(&c), "", "qk_norm over a q|k row");
	c.attr[QKN_KV_HEADS].i = 5;
	is_str(check(&c), "input x has 128 columns, fewer than (heads + kv_heads) x head_dim = "
	       "(4 + 5) x 16 (the q and k parts)", "qk_norm: heads past the row");
	c.attr[QKN_KV_HEADS].i = 2;
	c.in[2] = ten1(BF16, 32);
	is_str(check(&c), "input k_w has shape [32], expected [16] (head_dim)",
	       "qk_norm: k_w is one head's weights");
	c.in[2] = ten1(F32, 16);
	is_str(check(&c), "input k_w is f32, expected bf16 like input x", "qk_norm: k_w dtype");
	c.in[2] = ten1(BF16, 16);
	c.attr[QKN_EPS].f = -1;
	is_str(check(&c), "attribute eps is -1; it must not be negative", "qk_norm: eps");
	c.attr[QKN_EPS].f = 1e-6;
	c.attr[QKN_HEAD_DIM].i = 0;
	is_str(check(&c), "attribute head_dim is 0; it must be at least 1", "qk_norm: head_dim 0");
	c.attr[QKN_HEAD_DIM].i = 16;
	c.out[0] = ten2(BF16, 3, 96);
	is_str(check(&c), "output out has shape [3, 96], expected [3, 128] (the shape of input x)",
	       "qk_norm: out is x's shape");
}

int main(void)
{
	test_table();
	test_attrs();
	test_tensor_helpers();
	test_elementwise();
	test_matmul();
	test_norms();
	test_silu_mul();
	test_rope();
	test_embedding();
	test_kv_write();
	test_attention();
	test_argmax();
	test_add_rmsnorm();
	test_matmul_add();
	test_matmul_silu_mul();
	test_rope_kv_write();
	test_slice();
	test_rope_scaling();
	test_qk_norm();
	test_rmsnorm_matmul();
	test_rmsnorm_matmul_argmax();
	test_rmsnorm_matmul_rope_kv_write();
	test_decoder_layer();
	return tap_done();
}
