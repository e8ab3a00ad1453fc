/*
 * script.c - unit test of the op-script parser: integer expressions
 * (precedence, overflow, nesting), dims in any order and their cycles,
 * repeat expansion with name templates and indexed families, attributes
 * with their defaults, variants and modes, and that no prefix or mangling
 * of a good script makes the parser crash or leak.
 */
#include "config.h"

#include <stdlib.h>

#include "tap.h"
#include "ops/op.h"
#include "script/expr.h"
#include "script/script.h"
#include "util.h"

/* ---------------------------------------------------------------------- */
/* Expressions.                                                            */

/* Names for expressions: a = 10, big = 2^62; others undefined. */
static int test_lookup(void *ctx, const char *name, size_t len, int64_t *value,
                       char *msg, size_t msglen)
{
	(void)ctx;
	if (len == 1 && name[0] == 'a') {
		*value = 10;
		return 0;
	}
	if (len == 3 && memcmp(name, "big", 3) == 0) {
		*value = INT64_C(1) << 62;
		return 0;
	}
	snprintf(msg, msglen, "no '%.*s'", (int)len, name);
	return -1;
}

static char emsg[512];

static int64_t eval_ok(const char *text)
{
	int64_t v = -12345;

	emsg[0] = '\0';
	if (expr_eval(text, test_lookup, NULL, &v, emsg, sizeof emsg) != 0)
		diag("'%s' failed: %s", text, emsg);
	return v;
}

static const char *eval_err(const char *text)
{
	int64_t v;

	emsg[0] = '\0';
	if (expr_eval(text, test_lookup, NULL, &v, emsg, sizeof emsg) == 0)
		return "(no error)";
	return emsg;
}

static void test_expr(void)
{
	char deep[256];

	is_int(eval_ok("64"), 64, "a literal");
	is_int(eval_ok(" 2 + 3 * 4 "), 14, "* binds tighter than +");
	is_int(eval_ok("(2 + 3) * 4"), 20, "parentheses first");
	is_int(eval_ok("10 - 4 - 3"), 3, "- groups from the left");
	is_int(eval_ok("64 / 4 / 2"), 8, "/ groups from the left");
	is_int(eval_ok("2 * 3 / 6"), 1, "* and / are one group, from the left");
	is_int(eval_ok("-3 + 5"), 2, "unary minus");
	is_int(eval_ok("2*-a"), -20, "unary minus after an operator");
	is_int(eval_ok("--4"), 4, "unary minus twice");
	is_int(eval_ok("a*a-a/2"), 95, "names");
	is_int(eval_ok("\t(a)\t"), 10, "tabs are spaces");
	is_int(eval_ok("9223372036854775807"), INT64_MAX, "the largest literal");
	is_int(eval_ok("-9223372036854775807-1"), INT64_MIN, "the smallest value");
	is_int(eval_ok("big - 1 + big"), INT64_MAX, "2^63 - 1 as a sum");
	is_str(eval_err("9223372036854775808"), "'9223372036854775808' overflows 64-bit integers",
	       "a literal past 2^63 - 1");
	is_str(eval_err("big + big"), "'big + big' overflows 64-bit integers", "a sum past 2^63 - 1");
	is_str(eval_err("-big * 2 - 1"), "'-big * 2 - 1' overflows 64-bit integers",
	       "a difference below -2^63");
	is_str(eval_err("big * 2"), "'big * 2' overflows 64-bit integers", "a product");
	is_str(eval_err("(-big*2)/-1"), "'(-big*2)/-1' overflows 64-bit integers",
	       "the one overflowing division");
	is_str(eval_err("-(-big*2)"), "'-(-big*2)' overflows 64-bit integers", "negating -2^63");
	is_str(eval_err("7 / 2"), "'7 / 2' does not divide exactly: 7 / 2", "inexact division");
	is_str(eval_err("a / (a - 10)"), "division by zero in 'a / (a - 10)'", "division by zero");
	is_str(eval_err("2 +"), "bad expression '2 +': it ends too soon", "a missing operand");
	is_str(eval_err("(2"), "bad expression '(2': it ends too soon", "an unclosed parenthesis");
	is_str(eval_err("2)"), "bad expression '2)': unexpected ')'", "a stray parenthesis");
	is_str(eval_err("2 a"), "bad expression '2 a': unexpected 'a'", "two operands in a row");
	is_str(eval_err("2a"), "bad expression '2a': unexpected 'a'", "a name glued to a number");
	is_str(eval_err("2 ^ 3"), "bad expression '2 ^ 3': unexpected '^'", "an unknown operator");
	is_str(eval_err("1.5"), "bad expression '1.5': unexpected '.'", "not an integer");
	is_str(eval_err("\xc3\xa9"), "bad expression '\xc3\xa9': unexpected byte 0xc3", "a non-ASCII byte");
	is_str(eval_err(""), "expected an integer or an expression, found nothing", "nothing");
	is_str(eval_err("b + 1"), "no 'b'", "the lookup's own error");
	memset(deep, 0, sizeof deep);
	memset(deep, '(', 64);
	deep[64] = '1';
	memset(deep + 65, ')', 64);
	is_int(eval_ok(deep), 1, "64 nested parentheses");
	memset(deep, 0, sizeof deep);
	memset(deep, '(', 65);
	deep[65] = '1';
	memset(deep + 66, ')', 65);
	ok(strstr(eval_err(deep), "is nested too deeply (more than 64 levels)") != NULL,
	   "65 nested parentheses");
	memset(deep, 0, sizeof deep);
	memset(deep, '-', 65);
	deep[65] = '1';
	ok(strstr(eval_err(deep), "is nested too deeply") != NULL, "65 unary minuses");
	ok(expr_is_name("_a9") && expr_is_name("H") && !expr_is_name("9a") &&
	   !expr_is_name("") && !expr_is_name("a-b"), "expr_is_name");
}

/* ---------------------------------------------------------------------- */
/* Scripts.                                                                */

static struct script_error err;

static struct script *load(const char *text)
{
	struct script *s = NULL;

	if (script_load_memory("test.yaml", text, strlen(text), &s, &err) != 0) {
		diag("load failed at %u:%u: %s", err.line, err.col, err.message);
		return NULL;
	}
	return s;
}

static const char *load_err(const char *text)
{
	struct script *s = NULL;

	if (script_load_memory("test.yaml", text, strlen(text), &s, &err) == 0) {
		script_free(s);
		return "(no error)";
	}
	ok(s == NULL, "a failed load returns no script");
	return err.message;
}

static const char *HEAD =
	"bcg: 1\n"
	"dims:\n"
	"  T: {tokens: [1, 2, 4]}\n"
	"  H: 64\n";

static void test_dims(void)
{
	char buf[1024];
	struct script *s;
	const plan_t *p;

	snprintf(buf, sizeof buf,
	         "bcg: 1\n"
	         "dims:\n"
	         "  A: B * 2 + C\n"       /* declared before what it uses */
	         "  T: {tokens: [A / 20, 2 * 4, 16], mode: eager, modes: {A - 19: full, 16: breakable}}\n"
	         "  B: (C + 1) * 3\n"
	         "  C: 2\n"
	         "  D: A - B * C - 1\n"
	         "tensors:\n"
	         "  x: {dtype: f32, shape: [T, A], role: input, feed: {kind: random, seed: 1}}\n"
	         "  y: {dtype: f32, shape: [T, A], role: output}\n"
	         "ops:\n"
	         "  - {op: copy, in: [x], out: [y]}\n");
	s = load(buf);
	ok(s != NULL, "dims in any order load");
	if (s == NULL)
		return;
	p = s->program;
	is_int(plan_count_dims(p), 5, "five dims");
	is_str(plan_get_dim(p, 0)->name, "A", "dims keep their order");
	is_int(plan_get_dim(p, 0)->value, 20, "A = B*2 + C = 9*2 + 2");
	is_str(plan_get_dim(p, 0)->expr, "B * 2 + C", "the expression is kept as written");
	is_int(plan_get_dim(p, 2)->value, 9, "B = (C+1)*3");
	is_str(plan_get_dim(p, 3)->expr, "", "a number has no expression");
	is_int(plan_get_dim(p, 4)->value, 1, "D = A - B*C - 1 = 20 - 18 - 1");
	ok(plan_get_dim(p, 1)->flags & PLAN_DIM_TOKENS, "T is the token dim");
	is_int(plan_get_dim(p, 1)->value, 16, "the token dim's value is its largest size");
	is_int(plan_token_dim(p), 1, "plan_token_dim finds it");
	is_int(s->nvariants, 3, "three capture sizes");
	ok(s->variants[0].tokens == 1 && s->variants[1].tokens == 8 && s->variants[2].tokens == 16,
	   "capture sizes from expressions, ascending");
	ok(s->variants[0].mode == PLAN_MODE_FULL && s->variants[1].mode == PLAN_MODE_EAGER &&
	   s->variants[2].mode == PLAN_MODE_BREAKABLE, "mode for all, overrides per size");
	is_str(s->description, "", "no description");
	script_free(s);

	snprintf(buf, sizeof buf, "%s  A: B\n  B: C\n  C: D + 1\n  D: B\n"
	         "tensors: {}\nops: []\n", HEAD);
	is_str(load_err(buf), "cycle in dim expressions: B -> C -> D -> B",
	       "a cycle entered through A names only the cycle");
	is_int(err.line, 6, "reported at the dim where the cycle starts");
	is_int(err.col, 6, "at its expression");
	snprintf(buf, sizeof buf, "%s  G: 3037000500\n  X: G * G\ntensors: {}\nops: []\n", HEAD);
	is_str(load_err(buf), "'G * G' overflows 64-bit integers", "dim overflow");
	snprintf(buf, sizeof buf, "%s  G: 3037000499\n  X: G * G\n"
	         "tensors:\n  x: {dtype: i32, shape: [X], role: state}\nops: []\n", HEAD);
	is_str(load_err(buf), "tensor 'x' is too large: 9223372030926249001 elements of i32; "
	       "a tensor may take at most 2^48 bytes", "the largest dim below overflow, as a shape");
}

static const char *FAMILY_SCRIPT =
	"bcg: 1\n"
	"description: families\n"
	"dims:\n"
	"  T: {tokens: [1, 2]}\n"
	"  L: 3\n"
	"  J: 2\n"
	"  H: 8\n"
	"  NH: 2\n"
	"vars:\n"
	"  n: {start: 5, step: 2, limit: 40}\n"
	"tensors:\n"
	"  x: {dtype: f16, shape: [T, H], role: input, feed: {kind: random, seed: 40, scale: 0.5}}\n"
	"  w: {dtype: f16, shape: [H, H], role: weight, count: L * J, init: {kind: random, scale: 0.25, seed: 10}}\n"
	"  ids: {dtype: i32, shape: [T], role: input, count: 2, feed: {kind: tokens, range: 100, seed: 7}}\n"
	"  c: {dtype: f16, shape: [4, H], role: state, count: L}\n"
	"  y: {dtype: f16, shape: [T, H], role: output}\n"
	"  z: {dtype: f16, shape: [T, H], role: output}\n"
	"ops:\n"
	"  - repeat: L\n"
	"    as: i\n"
	"    ops:\n"
	"      - repeat: J\n"
	"        as: j\n"
	"        ops:\n"
	"          - {op: matmul, name: \"blk.{i}.{j}\", in: [x, \"w[i * J + j]\"], out: [y]}\n"
	"      - op: attention\n"
	"        name: \"attn{2*i+1}\"\n"
	"        in: [y, \"c[i]\", \"c[L - 1 - i]\"]\n"
	"        out: [z]\n"
	"        eager: true\n"
	"        attrs: {heads: NH, head_dim: H / NH, kv_len: n}\n"
	"  - {op: scale, in: [y], out: [y], attrs: {alpha: 0.5}}\n"
	"  - {op: attention, in: [y, \"c[0]\", \"c[0]\"], out: [z], attrs: {heads: 1, kv_heads: 1, head_dim: H, kv_len: 3, scale: 2}}\n";

static void test_families_and_repeats(void)
{
	struct script *s = load(FAMILY_SCRIPT);
	const plan_t *p;
	static const char *const names[] = { "blk.0.0", "blk.0.1", "attn1", "blk.1.0", "blk.1.1",
	                                     "attn3", "blk.2.0", "blk.2.1", "attn5", "", "" };
	const struct plan_op *o;

	ok(s != NULL, "the family script loads");
	if (s == NULL)
		return;
	p = s->program;
	is_str(s->description, "families", "the description is kept");
	is_int(plan_count_tensors(p), 1 + 6 + 2 + 3 + 2, "families expand into their members");
	is_str(plan_get_tensor(p, 1)->name, "w[0]", "member 0 is w[0]");
	is_str(plan_get_tensor(p, 6)->name, "w[5]", "member 5 is w[5]");
	is_int(plan_get_tensor(p, 1)->init.seed, 10, "member 0 draws from the seed");
	is_int(plan_get_tensor(p, 6)->init.seed, 15, "member 5 from seed + 5");
	ok(plan_get_tensor(p, 6)->init.kind == PLAN_INIT_RANDOM && plan_get_tensor(p, 6)->init.scale == 0.25,
	   "members share the rest of the init");
	is_int(plan_get_tensor(p, 8)->feed.seed, 8, "feed seeds follow the member too");
	is_int(plan_get_tensor(p, 8)->feed.range, 100, "and the range is shared");
	ok(plan_get_tensor(p, 0)->feed.kind == PLAN_FEED_RANDOM && plan_get_tensor(p, 0)->feed.scale == 0.5 &&
	   plan_get_tensor(p, 0)->feed.seed == 40, "a random feed");
	is_int(plan_get_tensor(p, 9)->init.kind, PLAN_INIT_ZEROS, "state defaults to zeros");
	is_int(plan_get_tensor(p, 0)->shape[0].dim, 0, "axes name their dim");
	ok(plan_get_tensor(p, 9)->shape[0].dim == PLAN_NONE && plan_get_tensor(p, 9)->shape[0].size == 4,
	   "a literal axis");

	is_int(plan_count_ops(p), 11, "3 x (2 + 1) ops from the repeats, then 2");
	for (uint32_t i = 0; i < 11 && i < plan_count_ops(p); i++)
		is_str(plan_get_op(p, i)->name, names[i], "op %u is named '%s'", i, names[i]);
	o = plan_get_op(p, 4);
	is_str(plan_get_tensor(p, o->in[1])->name, "w[3]", "blk.1.1 reads w[1*2+1]");
	o = plan_get_op(p, 8);
	is_str(plan_get_tensor(p, o->in[1])->name, "c[2]", "attn5 reads c[i]");
	is_str(plan_get_tensor(p, o->in[2])->name, "c[0]", "and c[L-1-i]");
	ok(o->flags & PLAN_OP_EAGER, "eager: true is kept");
	is_int(o->line, 26, "the op's line is its template's");
	is_int(o->col, 9, "and its column");
	is_int(o->nattr, 5, "attention stores all 5 attributes");
	is_str(o->attr[ATTN_HEADS].key, "heads", "in the registry's order");
	ok(o->attr[ATTN_HEADS].type == PLAN_ATTR_INT && o->attr[ATTN_HEADS].i == 2,
	   "heads from a dim expression");
	ok(o->attr[ATTN_KV_HEADS].type == PLAN_ATTR_INT && o->attr[ATTN_KV_HEADS].i == 2,
	   "kv_heads defaults to heads");
	ok(o->attr[ATTN_HEAD_DIM].i == 4, "head_dim = H / NH");
	ok(o->attr[ATTN_KV_LEN].type == PLAN_ATTR_VAR && o->attr[ATTN_KV_LEN].i == 0,
	   "kv_len bound to var 0");
	ok(o->attr[ATTN_SCALE].type == PLAN_ATTR_FLOAT && o->attr[ATTN_SCALE].f == 0.0,
	   "scale defaults to 0");
	o = plan_get_op(p, 9);
	ok(o->nattr == 1 && o->attr[0].type == PLAN_ATTR_FLOAT && o->attr[0].f == 0.5, "alpha 0.5");
	is_str(o->kind, "scale", "the op keeps its kind");
	o = plan_get_op(p, 10);
	ok(o->attr[ATTN_KV_LEN].type == PLAN_ATTR_INT && o->attr[ATTN_KV_LEN].i == 3,
	   "kv_len given as a number");
	ok(o->attr[ATTN_KV_HEADS].i == 1 && o->attr[ATTN_SCALE].f == 2.0, "given values win");
	o = plan_get_op(p, 0);
	ok(o->nattr == 2 && o->attr[MATMUL_TRANS_A].type == PLAN_ATTR_BOOL &&
	   o->attr[MATMUL_TRANS_A].i == 0 && o->attr[MATMUL_TRANS_B].i == 0,
	   "matmul's flags default to false");
	ok(plan_get_var(p, 0)->start == 5 && plan_get_var(p, 0)->step == 2 &&
	   plan_get_var(p, 0)->limit == 40, "the var");
	is_str(plan_get_meta(p)->script, "test.yaml", "the meta names the script");
	{
		uint64_t h = UINT64_C(0xcbf29ce484222325);
		for (const char *c = FAMILY_SCRIPT; *c != '\0'; c++)
			h = (h ^ (unsigned char)*c) * UINT64_C(0x100000001b3);
		is_u64(plan_get_meta(p)->script_hash, h, "the script hash is FNV-1a 64 of its bytes");
	}
	script_free(s);
}

static void test_errors(void)
{
	char buf[1024];

	snprintf(buf, sizeof buf, "%stensors:\n  w: {dtype: f32, shape: [H], role: weight, count: 4, init: ones}\n"
	         "  y: {dtype: f32, shape: [H], role: output}\nops:\n"
	         "  - repeat: 2\n    as: l\n    ops:\n      - repeat: 3\n        as: k\n        ops:\n"
	         "          - {op: copy, in: [\"w[l * 3 + k]\"], out: [y]}\n", HEAD);
	is_str(load_err(buf), "index 4 is out of range for 'w' (4 members: 0 to 3)",
	       "the index is checked at each expansion: l=1, k=1");
	is_int(err.line, 15, "at the reference's line");
	snprintf(buf, sizeof buf, "%stensors:\n  y: {dtype: f32, shape: [H], role: output}\nops:\n"
	         "  - repeat: 2\n    as: l\n    ops:\n      - {op: fill, name: \"f{l / 2}\", out: [y]}\n", HEAD);
	is_str(load_err(buf), "'l / 2' does not divide exactly: 1 / 2", "name templates are expressions");
	snprintf(buf, sizeof buf, "%stensors:\n  y: {dtype: f32, shape: [H], role: output}\nops:\n"
	         "  - repeat: 2\n    as: l\n    ops:\n      - {op: fill, name: \"f{x}\", out: [y]}\n", HEAD);
	is_str(load_err(buf), "undefined dim or repeat variable 'x'", "inside a repeat, names may be its variable");
	snprintf(buf, sizeof buf, "%stensors:\n  y: {dtype: f32, shape: [H], role: output}\nops:\n"
	         "  - repeat: 2\n    as: layer\n    ops:\n      - {op: fill, name: \"f{layr}\", out: [y]}\n", HEAD);
	is_str(load_err(buf), "undefined dim or repeat variable 'layr' (did you mean 'layer'?)",
	       "a misspelt repeat variable is suggested");
	snprintf(buf, sizeof buf, "%stensors:\n  y: {dtype: f32, shape: [H], role: output}\nops:\n"
	         "  - repeat: 70000\n    ops:\n      - {op: fill, out: [y]}\n", HEAD);
	is_str(load_err(buf), "the repeat count must be from 1 to 65536, not 70000", "repeat count limit");
	snprintf(buf, sizeof buf, "%stensors:\n  y: {dtype: f32, shape: [H], role: output}\nops:\n"
	         "  - repeat: 300\n    ops:\n      - repeat: 300\n        ops:\n          - {op: fill, out: [y]}\n", HEAD);
	is_str(load_err(buf), "the script has more than 65536 ops once its repeat blocks are expanded",
	       "the expanded op count is limited");
}

/* ---------------------------------------------------------------------- */
/* Robustness: every prefix and many mangled copies of a real script.      */

static void test_mangled(void)
{
	const char *src = getenv("BCG_SRC_DIR");
	char *path, *data, *copy;
	size_t len;
	unsigned loaded = 0, failed = 0, bad = 0;
	static const char subst[] = { '\0', ':', '[', '{', '-', ' ', '\n', '"', '*', '9' };

	path = xasprintf("%s/samples/llama-decode-small.yaml", src ? src : ".");
	if (bcg_read_file(path, &data, &len) != 0) {
		ok(0, "read %s", path);
		free(path);
		return;
	}
	copy = xmalloc(len + 1);
	for (size_t n = 0; n <= len; n++) {
		struct script *s = NULL;
		if (script_load_memory("p.yaml", data, n, &s, &err) == 0) {
			loaded++;
			script_free(s);
		} else {
			failed++;
			if (err.message[0] == '\0' || s != NULL)
				bad++;
		}
	}
	ok(bad == 0, "every prefix either loads or fails with a message (%u loaded, %u failed)",
	   loaded, failed);
	ok(failed > 0 && loaded > 0, "prefixes cut before the ops fail; the whole loads");
	bad = 0;
	for (size_t i = 0; i < len; i += 3) {
		for (size_t k = 0; k < sizeof subst; k++) {
			struct script *s = NULL;
			memcpy(copy, data, len);
			copy[i] = subst[k];
			if (script_load_memory("m.yaml", copy, len, &s, &err) == 0)
				script_free(s);
			else if (err.message[0] == '\0' || s != NULL)
				bad++;
		}
	}
	ok(bad == 0, "mangled copies either load or fail with a message");
	free(copy);
	free(data);
	free(path);
}

int main(void)
{
	test_expr();
	test_dims();
	test_families_and_repeats();
	test_errors();
	test_mangled();
	return tap_done();
}
