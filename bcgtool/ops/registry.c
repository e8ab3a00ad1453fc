/*
 * registry.c - the op kinds: operands, attributes, dtypes, capturability
 * and the shape and dtype check of each (semantics in op.h).
 *
 * A check speaks of operands by the names declared here ("input b",
 * "output out") and starts its message with that phrase when one operand is
 * at fault, so that the script parser can add which tensor it was.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "op.h"
#include "registry-check.h"
#include "rope-scaling.h"


static int check_fill(const struct op_call *c, char *msg, size_t len)
{
	struct operand out;

	TRY(want_counts(c, msg, len));
	out = operand_out(c, 0);
	return want_dtypes(&out, c->kind->dtypes, msg, len);
}

static int check_copy(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;
	char a[96], b[96];

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	if (x.t->dtype == PLAN_DTYPE_I32)
		TRY(want_same_dtype(&out, &x, msg, len));
	else
		TRY(want_dtypes(&out, OP_DTYPES_FLOAT, msg, len));
	if (op_tensor_numel(out.t) != op_tensor_numel(x.t))
		return check_fail(msg, len, "output out has %lld elements (%s), expected %lld like input x (%s)",
		                  (long long)op_tensor_numel(out.t), shape_str(out.t, a, sizeof a),
		                  (long long)op_tensor_numel(x.t), shape_str(x.t, b, sizeof b));
	return 0;
}

/* add, mul: b is a's shape or a trailing part of it. */
static int check_binary(const struct op_call *c, char *msg, size_t len)
{
	struct operand a, b, out;
	char sa[96], sb[96];
	int tail = 1;

	TRY(want_counts(c, msg, len));
	a = operand_in(c, 0);
	b = operand_in(c, 1);
	out = operand_out(c, 0);
	TRY(want_dtypes(&a, c->kind->dtypes, msg, len));
	TRY(want_same_dtype(&b, &a, msg, len));
	if (b.t->rank > a.t->rank)
		tail = 0;
	for (int i = 0; tail && i < b.t->rank; i++)
		if (b.t->dim[i] != a.t->dim[a.t->rank - b.t->rank + i])
			tail = 0;
	if (!tail)
		return check_fail(msg, len, "input b has shape %s, expected input a's shape %s "
		                  "or a trailing part of it", shape_str(b.t, sb, sizeof sb),
		                  shape_str(a.t, sa, sizeof sa));
	TRY(want_same_dtype(&out, &a, msg, len));
	return want_shape_like(&out, &a, msg, len);
}

/* scale, gelu, softmax: out is x's shape and dtype. */
static int check_unary(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_same_dtype(&out, &x, msg, len));
	return want_shape_like(&out, &x, msg, len);
}

/* The product op(a) @ op(b) of inputs IA and IB (a and b by name): ranks,
 * dtypes and the shared K; its M and N. A's dtype is checked against the
 * kind's dtypes when REF is NULL, else against REF's. */
static int check_product(const struct op_call *c, int ia, int ib, const struct operand *ref,
                         int64_t *m, int64_t *n, char *msg, size_t len)
{
	struct operand a = operand_in(c, ia), b = operand_in(c, ib);
	int ta = c->attr[MATMUL_TRANS_A].i != 0, tb = c->attr[MATMUL_TRANS_B].i != 0;
	int64_t k, bk;
	char sa[96], sb[96];

	if (ref == NULL)
		TRY(want_dtypes(&a, c->kind->dtypes, msg, len));
	else
		TRY(want_same_dtype(&a, ref, msg, len));
	TRY(want_rank(&a, 2, msg, len));
	TRY(want_same_dtype(&b, &a, msg, len));
	TRY(want_rank(&b, 2, msg, len));
	*m = ta ? a.t->dim[1] : a.t->dim[0];
	k = ta ? a.t->dim[0] : a.t->dim[1];
	bk = tb ? b.t->dim[1] : b.t->dim[0];
	*n = tb ? b.t->dim[0] : b.t->dim[1];
	if (bk != k)
		return check_fail(msg, len, "input b has shape %s, expected %s%lld%s "
		                  "(K = %lld from input a %s%s)", shape_str(b.t, sb, sizeof sb),
		                  tb ? "[N, " : "[", (long long)k, tb ? "]" : ", N]", (long long)k,
		                  shape_str(a.t, sa, sizeof sa), ta ? ", transposed" : "");
	return 0;
}

static int check_matmul(const struct op_call *c, char *msg, size_t len)
{
	struct operand a, out;
	int64_t want[2];
	char why[128];

	TRY(want_counts(c, msg, len));
	TRY(check_product(c, 0, 1, NULL, &want[0], &want[1], msg, len));
	a = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_same_dtype(&out, &a, msg, len));
	snprintf(why, sizeof why, "M = %lld from input a, N = %lld from input b",
	         (long long)want[0], (long long)want[1]);
	return want_shape(&out, want, 2, why, msg, len);
}

/* matmul_add (x, a, b) -> out: the product's [M, N] is x's and out's. */
static int check_matmul_add(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;
	int64_t want[2];
	char why[128];

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(check_product(c, 1, 2, &x, &want[0], &want[1], msg, len));
	snprintf(why, sizeof why, "M = %lld from input a, N = %lld from input b: "
	         "the residual of the product", (long long)want[0], (long long)want[1]);
	TRY(want_shape(&x, want, 2, why, msg, len));
	TRY(want_same_dtype(&out, &x, msg, len));
	return want_shape_like(&out, &x, msg, len);
}

/* matmul_silu_mul (a, b) -> out: the product's 2N columns are gate then
 * up; out is [M, N]. */
static int check_matmul_silu_mul(const struct op_call *c, char *msg, size_t len)
{
	struct operand a, out;
	int64_t want[2], n2;
	char why[128];

	TRY(want_counts(c, msg, len));
	TRY(check_product(c, 0, 1, NULL, &want[0], &n2, msg, len));
	if (n2 % 2 != 0)
		return check_fail(msg, len, "input b gives the product %lld columns, expected an "
		                  "even number (gate and up halves)", (long long)n2);
	a = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_same_dtype(&out, &a, msg, len));
	want[1] = n2 / 2;
	snprintf(why, sizeof why, "M = %lld from input a, half the N = %lld of input b",
	         (long long)want[0], (long long)n2);
	return want_shape(&out, want, 2, why, msg, len);
}

/* rmsnorm (x, w), layernorm (x, w, b): per-row weights of x's columns. */
static int check_norm(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;
	int64_t cols;

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	cols = op_tensor_cols(x.t);
	for (int i = 1; i < c->nin; i++) {
		struct operand w = operand_in(c, i);
		TRY(want_same_dtype(&w, &x, msg, len));
		TRY(want_shape(&w, &cols, 1, "the columns of input x", msg, len));
	}
	if (!(c->attr[NORM_EPS].f >= 0.0))
		return check_fail(msg, len, "attribute eps is %g; it must not be negative",
		                  c->attr[NORM_EPS].f);
	TRY(want_same_dtype(&out, &x, msg, len));
	return want_shape_like(&out, &x, msg, len);
}

static int check_silu_mul(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;
	int64_t want[PLAN_MAX_RANK];

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	if (op_tensor_cols(x.t) % 2 != 0)
		return check_fail(msg, len, "input x has %lld columns, expected an even number "
		                  "(gate and up halves)", (long long)op_tensor_cols(x.t));
	TRY(want_same_dtype(&out, &x, msg, len));
	for (int i = 0; i < x.t->rank; i++)
		want[i] = x.t->dim[i];
	want[x.t->rank - 1] /= 2;
	return want_shape(&out, want, x.t->rank, "input x with half its columns", msg, len);
}

/* An attribute that counts heads: at least 1. */
static int want_heads(const char *attr, int64_t v, char *msg, size_t len)
{
	if (v >= 1)
		return 0;
	return check_fail(msg, len, "attribute %s is %lld; it must be at least 1", attr,
	                  (long long)v);
}

/* Rope's head_dim and theta (rope and rope_kv_write). */
static int want_rope_head_dim(int64_t hd, char *msg, size_t len)
{
	if (hd >= 2 && hd % 2 == 0 && hd <= 512)
		return 0;
	return check_fail(msg, len, "attribute head_dim is %lld; rope needs an even "
	                  "head_dim from 2 to 512", (long long)hd);
}

static int want_rope_theta(double theta, char *msg, size_t len)
{
	if (theta > 0.0)
		return 0;
	return check_fail(msg, len, "attribute theta is %g; it must be positive", theta);
}

/* The rope_type attributes from A (rope-scaling.h) for head_dim HD. */
static int want_rope_scaling(const union op_value *a, double theta, int64_t hd, char *msg,
                             size_t len)
{
	struct rope_scaling s;

	rope_scaling_init(&s, theta, hd, a);
	return rope_scaling_check(&s, msg, len);
}

static int check_rope(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;
	int64_t heads = c->attr[ROPE_HEADS].i, hd = c->attr[ROPE_HEAD_DIM].i;
	double theta = c->attr[ROPE_THETA].f;

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_rank(&x, 2, msg, len));
	TRY(want_positions(c, 1, &x, msg, len));
	TRY(want_heads("heads", heads, msg, len));
	TRY(want_rope_head_dim(hd, msg, len));
	if (heads > x.t->dim[1] / hd || heads * hd != x.t->dim[1])
		return check_fail(msg, len, "input x has %lld columns, expected heads x head_dim "
		                  "= %lld x %lld", (long long)x.t->dim[1], (long long)heads,
		                  (long long)hd);
	TRY(want_rope_theta(theta, msg, len));
	TRY(want_rope_scaling(&c->attr[ROPE_SCALING], theta, hd, msg, len));
	TRY(want_same_dtype(&out, &x, msg, len));
	return want_shape_like(&out, &x, msg, len);
}

static int check_embedding(const struct op_call *c, char *msg, size_t len)
{
	struct operand table, ids, out;
	int64_t want[2];

	TRY(want_counts(c, msg, len));
	table = operand_in(c, 0);
	ids = operand_in(c, 1);
	out = operand_out(c, 0);
	TRY(want_dtypes(&table, c->kind->dtypes, msg, len));
	TRY(want_rank(&table, 2, msg, len));
	TRY(want_dtypes(&ids, OP_DTYPE_BIT(PLAN_DTYPE_I32), msg, len));
	TRY(want_rank(&ids, 1, msg, len));
	TRY(want_same_dtype(&out, &table, msg, len));
	want[0] = ids.t->dim[0];
	want[1] = table.t->dim[1];
	return want_shape(&out, want, 2, "one row of input table per element of input ids",
	                  msg, len);
}

static int check_kv_write(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, cache;
	char got[96];

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	cache = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_rank(&x, 2, msg, len));
	TRY(want_positions(c, 1, &x, msg, len));
	TRY(want_same_dtype(&cache, &x, msg, len));
	TRY(want_rank(&cache, 2, msg, len));
	if (cache.t->dim[1] != x.t->dim[1])
		return check_fail(msg, len, "output cache has shape %s, expected [S, %lld] "
		                  "(the columns of input x)", shape_str(cache.t, got, sizeof got),
		                  (long long)x.t->dim[1]);
	return 0;
}

static int check_attention(const struct op_call *c, char *msg, size_t len)
{
	struct operand q, k, v, out;
	int64_t heads = c->attr[ATTN_HEADS].i, kvh = c->attr[ATTN_KV_HEADS].i;
	int64_t hd = c->attr[ATTN_HEAD_DIM].i;
	char got[96];

	TRY(want_counts(c, msg, len));
	q = operand_in(c, 0);
	k = operand_in(c, 1);
	v = operand_in(c, 2);
	out = operand_out(c, 0);
	TRY(want_dtypes(&q, c->kind->dtypes, msg, len));
	TRY(want_rank(&q, 2, msg, len));
	TRY(want_heads("heads", heads, msg, len));
	TRY(want_heads("kv_heads", kvh, msg, len));
	if (hd < 1 || hd > 512)
		return check_fail(msg, len, "attribute head_dim is %lld; it must be from 1 to 512",
		                  (long long)hd);
	if (heads % kvh != 0)
		return check_fail(msg, len, "attribute heads (%lld) is not a multiple of "
		                  "kv_heads (%lld)", (long long)heads, (long long)kvh);
	if (heads > q.t->dim[1] / hd || heads * hd != q.t->dim[1])
		return check_fail(msg, len, "input q has %lld columns, expected heads x head_dim "
		                  "= %lld x %lld", (long long)q.t->dim[1], (long long)heads,
		                  (long long)hd);
	TRY(want_same_dtype(&k, &q, msg, len));
	TRY(want_rank(&k, 2, msg, len));
	if (kvh > k.t->dim[1] / hd || kvh * hd != k.t->dim[1])
		return check_fail(msg, len, "input k has shape %s, expected [S, %lld] "
		                  "(kv_heads x head_dim = %lld x %lld)", shape_str(k.t, got, sizeof got),
		                  (long long)(kvh <= INT64_MAX / hd ? kvh * hd : -1),
		                  (long long)kvh, (long long)hd);
	TRY(want_same_dtype(&v, &q, msg, len));
	TRY(want_shape_like(&v, &k, msg, len));
	TRY(want_same_dtype(&out, &q, msg, len));
	return want_shape_like(&out, &q, msg, len);
}

static int check_argmax(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;
	int64_t want[PLAN_MAX_RANK];
	int rank;

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_dtypes(&out, OP_DTYPE_BIT(PLAN_DTYPE_I32), msg, len));
	if (x.t->rank == 1) {
		want[0] = 1;
		rank = 1;
	} else {
		for (int i = 0; i + 1 < x.t->rank; i++)
			want[i] = x.t->dim[i];
		rank = x.t->rank - 1;
	}
	return want_shape(&out, want, rank, "one index per row of input x", msg, len);
}

/* add_rmsnorm (x, r, w) -> (sum, out): x, r, sum and out share a shape; w
 * is per column. */
static int check_add_rmsnorm(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, r, w, sum, out;
	int64_t cols;

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	r = operand_in(c, 1);
	w = operand_in(c, 2);
	sum = operand_out(c, 0);
	out = operand_out(c, 1);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_same_dtype(&r, &x, msg, len));
	TRY(want_shape_like(&r, &x, msg, len));
	cols = op_tensor_cols(x.t);
	TRY(want_same_dtype(&w, &x, msg, len));
	TRY(want_shape(&w, &cols, 1, "the columns of input x", msg, len));
	if (!(c->attr[NORM_EPS].f >= 0.0))
		return check_fail(msg, len, "attribute eps is %g; it must not be negative",
		                  c->attr[NORM_EPS].f);
	TRY(want_same_dtype(&sum, &x, msg, len));
	TRY(want_shape_like(&sum, &x, msg, len));
	TRY(want_same_dtype(&out, &x, msg, len));
	return want_shape_like(&out, &x, msg, len);
}

/* rope_kv_write's and rope_paged_kv_write's optional weights from input
 * FIRST (q_w, then k_w), when C has them: [head_dim] of QKV's dtype, as
 * qk_norm's; and eps, which only they use. */
static int want_rope_norm_weights(const struct op_call *c, int first, const struct operand *qkv,
                                  int64_t hd, char *msg, size_t len)
{
	if (c->nin <= first)
		return 0;
	for (int i = first; i < first + 2; i++) {
		struct operand w = operand_in(c, i);
		TRY(want_same_dtype(&w, qkv, msg, len));
		TRY(want_shape(&w, &hd, 1, "head_dim", msg, len));
	}
	if (!(c->attr[RKV_EPS].f >= 0.0))
		return check_fail(msg, len, "attribute eps is %g; it must not be negative",
		                  c->attr[RKV_EPS].f);
	return 0;
}

/* rope_kv_write's checks of C, its qkv named QKV_WHAT when not NULL
 * (rmsnorm_matmul_rope_kv_write's qkv is its product, not an input). */
static int check_rope_kv_write_of(const struct op_call *c, const char *qkv_what, char *msg,
                                  size_t len)
{
	struct operand qkv, q, kc, vc;
	int64_t heads = c->attr[RKV_HEADS].i, kvh = c->attr[RKV_KV_HEADS].i;
	int64_t hd = c->attr[RKV_HEAD_DIM].i, cols, want[2];
	double theta = c->attr[RKV_THETA].f;
	char got[96];

	TRY(want_counts(c, msg, len));
	qkv = operand_in(c, 0);
	if (qkv_what != NULL)
		snprintf(qkv.what, sizeof qkv.what, "%s", qkv_what);
	q = operand_out(c, 0);
	kc = operand_out(c, 1);
	vc = operand_out(c, 2);
	TRY(want_dtypes(&qkv, c->kind->dtypes, msg, len));
	TRY(want_rank(&qkv, 2, msg, len));
	TRY(want_positions(c, 1, &qkv, msg, len));
	TRY(want_heads("heads", heads, msg, len));
	TRY(want_heads("kv_heads", kvh, msg, len));
	TRY(want_rope_head_dim(hd, msg, len));
	TRY(want_rope_theta(theta, msg, len));
	TRY(want_rope_scaling(&c->attr[RKV_SCALING], theta, hd, msg, len));
	/* Bounded before multiplying, so that no product overflows. */
	cols = qkv.t->dim[1];
	if (heads > cols / hd || kvh > cols / hd || (heads + 2 * kvh) * hd != cols)
		return check_fail(msg, len, "%s has %lld columns, expected (heads + 2 x "
		                  "kv_heads) x head_dim = (%lld + 2 x %lld) x %lld (q, k and v "
		                  "parts)", qkv.what, (long long)cols, (long long)heads,
		                  (long long)kvh, (long long)hd);
	TRY(want_rope_norm_weights(c, RKV_Q_W, &qkv, hd, msg, len));
	TRY(want_same_dtype(&q, &qkv, msg, len));
	want[0] = qkv.t->dim[0];
	want[1] = heads * hd;
	snprintf(got, sizeof got, "the rows of %s, heads x head_dim columns", qkv.what);
	TRY(want_shape(&q, want, 2, got, msg, len));
	TRY(want_same_dtype(&kc, &qkv, msg, len));
	TRY(want_rank(&kc, 2, msg, len));
	if (kc.t->dim[1] != kvh * hd)
		return check_fail(msg, len, "output k_cache has shape %s, expected [S, %lld] "
		                  "(kv_heads x head_dim = %lld x %lld)", shape_str(kc.t, got, sizeof got),
		                  (long long)(kvh * hd), (long long)kvh, (long long)hd);
	TRY(want_same_dtype(&vc, &qkv, msg, len));
	return want_shape_like(&vc, &kc, msg, len);
}

static int check_rope_kv_write(const struct op_call *c, char *msg, size_t len)
{
	return check_rope_kv_write_of(c, NULL, msg, len);
}

/* slice (x) -> out: out has x's rows and a range of its columns. */
static int check_slice(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;
	int64_t start = c->attr[SLICE_START].i, cols, width;
	char got[96], rows[96];
	int same;

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_same_dtype(&out, &x, msg, len));
	same = out.t->rank == x.t->rank;
	for (int i = 0; same && i + 1 < x.t->rank; i++)
		same = out.t->dim[i] == x.t->dim[i];
	if (!same) {
		size_t n = (size_t)snprintf(rows, sizeof rows, "[");
		for (int i = 0; i + 1 < x.t->rank && n < sizeof rows; i++)
			n += (size_t)snprintf(rows + n, sizeof rows - n, "%lld, ",
			                      (long long)x.t->dim[i]);
		if (n < sizeof rows)
			snprintf(rows + n, sizeof rows - n, "W]");
		return check_fail(msg, len, "output out has shape %s, expected %s (the rows of "
		                  "input x, W of its columns)", shape_str(out.t, got, sizeof got), rows);
	}
	cols = op_tensor_cols(x.t);
	width = op_tensor_cols(out.t);
	if (start < 0)
		return check_fail(msg, len, "attribute start is %lld; it must not be negative",
		                  (long long)start);
	if (start > cols || width > cols - start)
		return check_fail(msg, len, "attribute start is %lld: the %lld columns of output "
		                  "out from there pass the %lld columns of input x", (long long)start,
		                  (long long)width, (long long)cols);
	return 0;
}

/* qk_norm (x, q_w, k_w) -> out: x [rows, C], C at least (heads +
 * kv_heads) x head_dim; the weights [head_dim]. */
static int check_qk_norm(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, out;
	int64_t heads = c->attr[QKN_HEADS].i, kvh = c->attr[QKN_KV_HEADS].i;
	int64_t hd = c->attr[QKN_HEAD_DIM].i, cols;

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_rank(&x, 2, msg, len));
	TRY(want_heads("heads", heads, msg, len));
	TRY(want_heads("kv_heads", kvh, msg, len));
	if (hd < 1)
		return check_fail(msg, len, "attribute head_dim is %lld; it must be at least 1",
		                  (long long)hd);
	cols = x.t->dim[1];
	if (heads > cols / hd || kvh > cols / hd || (heads + kvh) * hd > cols)
		return check_fail(msg, len, "input x has %lld columns, fewer than (heads + "
		                  "kv_heads) x head_dim = (%lld + %lld) x %lld (the q and k parts)",
		                  (long long)cols, (long long)heads, (long long)kvh, (long long)hd);
	for (int i = 1; i < 3; i++) {
		struct operand w = operand_in(c, i);
		TRY(want_same_dtype(&w, &x, msg, len));
		TRY(want_shape(&w, &hd, 1, "head_dim", msg, len));
	}
	if (!(c->attr[QKN_EPS].f >= 0.0))
		return check_fail(msg, len, "attribute eps is %g; it must not be negative",
		                  c->attr[QKN_EPS].f);
	TRY(want_same_dtype(&out, &x, msg, len));
	return want_shape_like(&out, &x, msg, len);
}

/* rmsnorm_matmul (x, w, b) -> out: x [M, K], w [K] (rmsnorm's), op(b)
 * [K, N]; out [M, N], or [M, N/2] with epilogue silu_mul (N even). */
static int check_rmsnorm_matmul(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, w, b, out;
	int tb = c->attr[RNM_TRANS_B].i != 0;
	int64_t epi = c->attr[RNM_EPILOGUE].i, k, bk, want[2];
	char sx[96], sb[96], why[160];

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	w = operand_in(c, 1);
	b = operand_in(c, 2);
	out = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_rank(&x, 2, msg, len));
	k = x.t->dim[1];
	TRY(want_same_dtype(&w, &x, msg, len));
	TRY(want_shape(&w, &k, 1, "the columns of input x", msg, len));
	if (!(c->attr[RNM_EPS].f >= 0.0))
		return check_fail(msg, len, "attribute eps is %g; it must not be negative",
		                  c->attr[RNM_EPS].f);
	TRY(want_same_dtype(&b, &x, msg, len));
	TRY(want_rank(&b, 2, msg, len));
	bk = tb ? b.t->dim[1] : b.t->dim[0];
	want[1] = tb ? b.t->dim[0] : b.t->dim[1];
	if (bk != k)
		return check_fail(msg, len, "input b has shape %s, expected %s%lld%s "
		                  "(K = %lld from input x %s)", shape_str(b.t, sb, sizeof sb),
		                  tb ? "[N, " : "[", (long long)k, tb ? "]" : ", N]", (long long)k,
		                  shape_str(x.t, sx, sizeof sx));
	if (epi != RNM_EPI_NONE && epi != RNM_EPI_SILU_MUL)
		return check_fail(msg, len, "attribute epilogue is %lld; it must be none or silu_mul",
		                  (long long)epi);
	if (epi == RNM_EPI_SILU_MUL && want[1] % 2 != 0)
		return check_fail(msg, len, "input b gives the product %lld columns, expected an "
		                  "even number (gate and up halves, epilogue silu_mul)",
		                  (long long)want[1]);
	want[0] = x.t->dim[0];
	TRY(want_same_dtype(&out, &x, msg, len));
	if (epi == RNM_EPI_SILU_MUL) {
		snprintf(why, sizeof why, "M = %lld from input x, half the N = %lld of input b",
		         (long long)want[0], (long long)want[1]);
		want[1] /= 2;
	} else {
		snprintf(why, sizeof why, "M = %lld from input x, N = %lld from input b",
		         (long long)want[0], (long long)want[1]);
	}
	return want_shape(&out, want, 2, why, msg, len);
}

/* rmsnorm_matmul_argmax (x, w, b) -> out, index: rmsnorm_matmul's checks
 * (its attributes at the same positions; no epilogue), then index i32
 * [M]. */
static int check_rmsnorm_matmul_argmax(const struct op_call *c, char *msg, size_t len)
{
	struct op_call rnm;
	struct operand index;
	int64_t m;

	TRY(want_counts(c, msg, len));
	/* the product's operands and out, as rmsnorm_matmul with epilogue none */
	op_rna_parts(c, &rnm, NULL);
	rnm.kind = op_kind_get(OP_RMSNORM_MATMUL);
	TRY(check_rmsnorm_matmul(&rnm, msg, len));
	index = operand_out(c, 1);
	m = c->in[0].dim[0];
	TRY(want_dtypes(&index, OP_DTYPE_BIT(PLAN_DTYPE_I32), msg, len));
	return want_shape(&index, &m, 1, "M, the rows of input x", msg, len);
}

/* rmsnorm_matmul_rope_kv_write (x, w, b, pos) -> q, k_cache, v_cache: x
 * [M, K], w [K], op(b) [K, (heads + 2 kv_heads) head_dim]; then the
 * checks of rope_kv_write on the product qkv [M, QKV] of x's dtype, which
 * the checks below have already found sound (its dtype, rank, columns). */
static int check_rmsnorm_matmul_rope_kv_write(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, w, b;
	struct op_call rkv;
	int tb = c->attr[RRK_TRANS_B].i != 0;
	int64_t heads = c->attr[RKV_HEADS].i, kvh = c->attr[RKV_KV_HEADS].i;
	int64_t hd = c->attr[RKV_HEAD_DIM].i, k, bk, cols;
	char sx[96], sb[96];

	TRY(want_counts(c, msg, len));
	x = operand_in(c, RRK_X);
	w = operand_in(c, RRK_W);
	b = operand_in(c, RRK_B);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_rank(&x, 2, msg, len));
	k = x.t->dim[1];
	TRY(want_same_dtype(&w, &x, msg, len));
	TRY(want_shape(&w, &k, 1, "the columns of input x", msg, len));
	if (!(c->attr[RRK_EPS].f >= 0.0))
		return check_fail(msg, len, "attribute eps is %g; it must not be negative",
		                  c->attr[RRK_EPS].f);
	TRY(want_same_dtype(&b, &x, msg, len));
	TRY(want_rank(&b, 2, msg, len));
	bk = tb ? b.t->dim[1] : b.t->dim[0];
	cols = tb ? b.t->dim[0] : b.t->dim[1];
	if (bk != k)
		return check_fail(msg, len, "input b has shape %s, expected %s%lld%s "
		                  "(K = %lld from input x %s)", shape_str(b.t, sb, sizeof sb),
		                  tb ? "[QKV, " : "[", (long long)k, tb ? "]" : ", QKV]", (long long)k,
		                  shape_str(x.t, sx, sizeof sx));
	TRY(want_heads("heads", heads, msg, len));
	TRY(want_heads("kv_heads", kvh, msg, len));
	TRY(want_rope_head_dim(hd, msg, len));
	if (heads > cols / hd || kvh > cols / hd || (heads + 2 * kvh) * hd != cols)
		return check_fail(msg, len, "input b gives the product %lld columns, expected "
		                  "(heads + 2 x kv_heads) x head_dim = (%lld + 2 x %lld) x %lld (q, k "
		                  "and v parts)", (long long)cols, (long long)heads, (long long)kvh,
		                  (long long)hd);
	/* The rest is rope_kv_write's on qkv [M, cols]: pos, the rope
	 * attributes, q and the caches, by the same names. */
	rkv = *c;
	rkv.kind = op_kind_get(OP_ROPE_KV_WRITE);
	rkv.nin = 2;
	memset(&rkv.in[0], 0, sizeof rkv.in[0]);
	rkv.in[0].dtype = x.t->dtype;
	rkv.in[0].rank = 2;
	rkv.in[0].dim[0] = x.t->dim[0];
	rkv.in[0].dim[1] = cols;
	rkv.in[1] = c->in[RRK_POS];
	return check_rope_kv_write_of(&rkv, "the product of input x and b", msg, len);
}

/* decoder_layer (x, attn_norm, w_qkv, w_o, ffn_norm, w_gate_up, w_down,
 * pos) -> out, k_cache, v_cache: x [T, H]; the norms [H]; the weights
 * [out, in]: w_qkv [(heads + 2 kv_heads) head_dim, H], w_o [H, heads
 * head_dim], w_gate_up [2F, H], w_down [H, F]; pos [T]; the caches
 * [S, kv_heads head_dim]; out x's shape. Every float operand is x's
 * dtype. The attention's bounds (head_dim at most 512, heads a multiple
 * of kv_heads) and the rope's (an even head_dim, theta, the rope_type)
 * are those of the kinds the layer runs. */
static int check_decoder_layer(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, an, wqkv, wo, fn, wgu, wd, kc, vc, out;
	int64_t heads = c->attr[RKV_HEADS].i, kvh = c->attr[RKV_KV_HEADS].i;
	int64_t hd = c->attr[RKV_HEAD_DIM].i, h, f, qkv, want[2];
	double theta = c->attr[RKV_THETA].f;
	char got[96], why[160];

	TRY(want_counts(c, msg, len));
	x = operand_in(c, DL_X);
	an = operand_in(c, DL_ATTN_NORM);
	wqkv = operand_in(c, DL_W_QKV);
	wo = operand_in(c, DL_W_O);
	fn = operand_in(c, DL_FFN_NORM);
	wgu = operand_in(c, DL_W_GATE_UP);
	wd = operand_in(c, DL_W_DOWN);
	out = operand_out(c, DL_OUT);
	kc = operand_out(c, DL_K_CACHE);
	vc = operand_out(c, DL_V_CACHE);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_rank(&x, 2, msg, len));
	h = x.t->dim[1];
	TRY(want_positions(c, DL_POS, &x, msg, len));
	TRY(want_heads("heads", heads, msg, len));
	TRY(want_heads("kv_heads", kvh, msg, len));
	TRY(want_rope_head_dim(hd, msg, len));
	if (heads % kvh != 0)
		return check_fail(msg, len, "attribute heads (%lld) is not a multiple of "
		                  "kv_heads (%lld)", (long long)heads, (long long)kvh);
	TRY(want_rope_theta(theta, msg, len));
	TRY(want_rope_scaling(&c->attr[RKV_SCALING], theta, hd, msg, len));
	if (!(c->attr[DL_EPS].f >= 0.0))
		return check_fail(msg, len, "attribute eps is %g; it must not be negative",
		                  c->attr[DL_EPS].f);
	TRY(want_same_dtype(&an, &x, msg, len));
	TRY(want_shape(&an, &h, 1, "the columns of input x", msg, len));
	TRY(want_same_dtype(&wqkv, &x, msg, len));
	TRY(want_rank(&wqkv, 2, msg, len));
	/* Bounded before multiplying, so that no product overflows. */
	qkv = wqkv.t->dim[0];
	if (heads > qkv / hd || kvh > qkv / hd || (heads + 2 * kvh) * hd != qkv ||
	    wqkv.t->dim[1] != h)
		return check_fail(msg, len, "input w_qkv has shape %s, expected [(heads + 2 x "
		                  "kv_heads) x head_dim, H] = [(%lld + 2 x %lld) x %lld, %lld] (q, k "
		                  "and v rows of H = %lld)", shape_str(wqkv.t, got, sizeof got),
		                  (long long)heads, (long long)kvh, (long long)hd, (long long)h,
		                  (long long)h);
	TRY(want_same_dtype(&wo, &x, msg, len));
	want[0] = h;
	want[1] = heads * hd;
	snprintf(why, sizeof why, "[H, heads x head_dim] = [%lld, %lld x %lld]", (long long)h,
	         (long long)heads, (long long)hd);
	TRY(want_shape(&wo, want, 2, why, msg, len));
	TRY(want_same_dtype(&fn, &x, msg, len));
	TRY(want_shape(&fn, &h, 1, "the columns of input x", msg, len));
	TRY(want_same_dtype(&wgu, &x, msg, len));
	TRY(want_rank(&wgu, 2, msg, len));
	if (wgu.t->dim[1] != h || wgu.t->dim[0] % 2 != 0)
		return check_fail(msg, len, "input w_gate_up has shape %s, expected [2F, %lld] "
		                  "(gate rows, then up rows, of H = %lld)",
		                  shape_str(wgu.t, got, sizeof got), (long long)h, (long long)h);
	f = wgu.t->dim[0] / 2;
	TRY(want_same_dtype(&wd, &x, msg, len));
	want[0] = h;
	want[1] = f;
	snprintf(why, sizeof why, "[H, F]: H = %lld from input x, F = %lld from input w_gate_up",
	         (long long)h, (long long)f);
	TRY(want_shape(&wd, want, 2, why, msg, len));
	TRY(want_same_dtype(&kc, &x, msg, len));
	TRY(want_rank(&kc, 2, msg, len));
	if (kc.t->dim[1] != kvh * hd)
		return check_fail(msg, len, "output k_cache has shape %s, expected [S, %lld] "
		                  "(kv_heads x head_dim = %lld x %lld)", shape_str(kc.t, got, sizeof got),
		                  (long long)(kvh * hd), (long long)kvh, (long long)hd);
	TRY(want_same_dtype(&vc, &x, msg, len));
	TRY(want_shape_like(&vc, &kc, msg, len));
	TRY(want_same_dtype(&out, &x, msg, len));
	return want_shape_like(&out, &x, msg, len);
}

/* A paged cache [NB, BS, W] of REF's dtype with W columns (WHY names where
 * W comes from). */
static int want_paged_cache(const struct operand *cache, const struct operand *ref, int64_t w,
                            const char *why, char *msg, size_t len)
{
	char got[96];

	TRY(want_same_dtype(cache, ref, msg, len));
	if (cache->t->rank != 3 || cache->t->dim[2] != w)
		return check_fail(msg, len, "%s has shape %s, expected [NB, BS, %lld] (%s)",
		                  cache->what, shape_str(cache->t, got, sizeof got), (long long)w, why);
	return 0;
}


static int check_paged_kv_write(const struct op_call *c, char *msg, size_t len)
{
	struct operand x, cache;

	TRY(want_counts(c, msg, len));
	x = operand_in(c, 0);
	cache = operand_out(c, 0);
	TRY(want_dtypes(&x, c->kind->dtypes, msg, len));
	TRY(want_rank(&x, 2, msg, len));
	TRY(want_positions(c, 1, &x, msg, len));
	return want_paged_cache(&cache, &x, x.t->dim[1], "the columns of input x", msg, len);
}

static int check_rope_paged_kv_write(const struct op_call *c, char *msg, size_t len)
{
	struct operand qkv, q, kc, vc;
	int64_t heads = c->attr[RKV_HEADS].i, kvh = c->attr[RKV_KV_HEADS].i;
	int64_t hd = c->attr[RKV_HEAD_DIM].i, cols, want[2];
	char why[64];

	TRY(want_counts(c, msg, len));
	qkv = operand_in(c, 0);
	q = operand_out(c, 0);
	kc = operand_out(c, 1);
	vc = operand_out(c, 2);
	TRY(want_dtypes(&qkv, c->kind->dtypes, msg, len));
	TRY(want_rank(&qkv, 2, msg, len));
	TRY(want_positions(c, 1, &qkv, msg, len));
	TRY(want_positions(c, 2, &qkv, msg, len));
	TRY(want_heads("heads", heads, msg, len));
	TRY(want_heads("kv_heads", kvh, msg, len));
	TRY(want_rope_head_dim(hd, msg, len));
	TRY(want_rope_theta(c->attr[RKV_THETA].f, msg, len));
	TRY(want_rope_scaling(&c->attr[RKV_SCALING], c->attr[RKV_THETA].f, hd, msg, len));
	cols = qkv.t->dim[1];
	if (heads > cols / hd || kvh > cols / hd || (heads + 2 * kvh) * hd != cols)
		return check_fail(msg, len, "input qkv has %lld columns, expected (heads + 2 x "
		                  "kv_heads) x head_dim = (%lld + 2 x %lld) x %lld (q, k and v "
		                  "parts)", (long long)cols, (long long)heads, (long long)kvh,
		                  (long long)hd);
	TRY(want_rope_norm_weights(c, RPKV_Q_W, &qkv, hd, msg, len));
	TRY(want_same_dtype(&q, &qkv, msg, len));
	want[0] = qkv.t->dim[0];
	want[1] = heads * hd;
	TRY(want_shape(&q, want, 2, "the rows of input qkv, heads x head_dim columns", msg, len));
	snprintf(why, sizeof why, "kv_heads x head_dim = %lld x %lld", (long long)kvh,
	         (long long)hd);
	TRY(want_paged_cache(&kc, &qkv, kvh * hd, why, msg, len));
	TRY(want_same_dtype(&vc, &qkv, msg, len));
	return want_shape_like(&vc, &kc, msg, len);
}

static int check_paged_attention(const struct op_call *c, char *msg, size_t len)
{
	struct operand q, k, v, table, seq, qs, out;
	int64_t heads = c->attr[PATTN_HEADS].i, kvh = c->attr[PATTN_KV_HEADS].i;
	int64_t hd = c->attr[PATTN_HEAD_DIM].i, reqs;
	char why[64], got[96];

	TRY(want_counts(c, msg, len));
	q = operand_in(c, PATTN_Q);
	k = operand_in(c, PATTN_K);
	v = operand_in(c, PATTN_V);
	table = operand_in(c, PATTN_TABLE);
	seq = operand_in(c, PATTN_SEQ_LENS);
	qs = operand_in(c, PATTN_QUERY_START);
	out = operand_out(c, 0);
	TRY(want_dtypes(&q, c->kind->dtypes, msg, len));
	TRY(want_rank(&q, 2, msg, len));
	TRY(want_heads("heads", heads, msg, len));
	TRY(want_heads("kv_heads", kvh, msg, len));
	if (hd < 1 || hd > 512)
		return check_fail(msg, len, "attribute head_dim is %lld; it must be from 1 to 512",
		                  (long long)hd);
	if (heads % kvh != 0)
		return check_fail(msg, len, "attribute heads (%lld) is not a multiple of "
		                  "kv_heads (%lld)", (long long)heads, (long long)kvh);
	if (heads > q.t->dim[1] / hd || heads * hd != q.t->dim[1])
		return check_fail(msg, len, "input q has %lld columns, expected heads x head_dim "
		                  "= %lld x %lld", (long long)q.t->dim[1], (long long)heads,
		                  (long long)hd);
	if (kvh > INT64_MAX / hd)
		return check_fail(msg, len, "attribute kv_heads (%lld) is too large",
		                  (long long)kvh);
	snprintf(why, sizeof why, "kv_heads x head_dim = %lld x %lld", (long long)kvh,
	         (long long)hd);
	TRY(want_paged_cache(&k, &q, kvh * hd, why, msg, len));
	TRY(want_same_dtype(&v, &q, msg, len));
	TRY(want_shape_like(&v, &k, msg, len));
	TRY(want_dtypes(&table, OP_DTYPE_BIT(PLAN_DTYPE_I32), msg, len));
	TRY(want_rank(&table, 2, msg, len));
	reqs = table.t->dim[0];
	TRY(want_dtypes(&seq, OP_DTYPE_BIT(PLAN_DTYPE_I32), msg, len));
	TRY(want_shape(&seq, &reqs, 1, "one per row of input block_table", msg, len));
	TRY(want_dtypes(&qs, OP_DTYPE_BIT(PLAN_DTYPE_I32), msg, len));
	if (qs.t->rank != 1 || qs.t->dim[0] != reqs + 1)
		return check_fail(msg, len, "input query_start has shape %s, expected [%lld] "
		                  "(one more than the rows of input block_table)",
		                  shape_str(qs.t, got, sizeof got), (long long)(reqs + 1));
	if (k.t->dim[1] > INT32_MAX / (table.t->dim[1] > 0 ? table.t->dim[1] : 1))
		return check_fail(msg, len, "input block_table has %lld columns of %lld "
		                  "positions: more than 2^31 positions a request",
		                  (long long)table.t->dim[1], (long long)k.t->dim[1]);
	TRY(want_same_dtype(&out, &q, msg, len));
	return want_shape_like(&out, &q, msg, len);
}


/* ---------------------------------------------------------------------- */
/* The table.                                                              */

static const char *const no_operands[] = { NULL };
static const char *const in_x[] = { "x", NULL };
static const char *const in_ab[] = { "a", "b", NULL };
static const char *const in_xw[] = { "x", "w", NULL };
static const char *const in_xwb[] = { "x", "w", "b", NULL };
static const char *const in_xwbpos[] = { "x", "w", "b", "pos", NULL };
static const char *const in_xpos[] = { "x", "pos", NULL };
static const char *const in_emb[] = { "table", "ids", NULL };
static const char *const in_qkv[] = { "q", "k", "v", NULL };
static const char *const out_out[] = { "out", NULL };
static const char *const out_out_index[] = { "out", "index", NULL };
static const char *const out_cache[] = { "cache", NULL };
static const char *const in_xrw[] = { "x", "r", "w", NULL };
static const char *const in_xab[] = { "x", "a", "b", NULL };
/* rope_kv_write's and rope_paged_kv_write's: q_w, k_w optional
 * (op_kind_min_inputs) */
static const char *const in_rope_kv[] = { "qkv", "pos", "q_w", "k_w", NULL };
static const char *const out_sum_out[] = { "sum", "out", NULL };
static const char *const out_q_caches[] = { "q", "k_cache", "v_cache", NULL };
static const char *const in_xslots[] = { "x", "slots", NULL };
static const char *const in_logits[] = { "logits", NULL };
static const char *const in_logits_slots[] = { "logits", "slots", NULL };
static const char *const in_moe[] = { "x", "ids", "weights", "gate_up", "down", "residual",
                                      NULL };
static const char *const in_xyg[] = { "x", "y", "g", NULL };
static const char *const out_ids_weights[] = { "ids", "weights", NULL };
static const char *const in_qkvposslots[] = { "qkv", "pos", "slots", "q_w", "k_w", NULL };
static const char *const in_qk_norm[] = { "x", "q_w", "k_w", NULL };
static const char *const in_decoder_layer[] = { "x", "attn_norm", "w_qkv", "w_o", "ffn_norm",
                                                "w_gate_up", "w_down", "pos", NULL };
static const char *const out_decoder_layer[] = { "out", "k_cache", "v_cache", NULL };
static const char *const in_paged_attn[] = { "q", "k_cache", "v_cache", "block_table",
                                             "seq_lens", "query_start", NULL };

static const struct op_attr_spec no_attrs[] = { { NULL, 0, 0, 0, NULL } };

static const struct op_attr_spec fill_attrs[] = {
	[FILL_VALUE] = { "value", OP_ATTR_FLOAT, 0, 0.0, "the value of every element" },
	{ NULL, 0, 0, 0, NULL }
};
static const struct op_attr_spec scale_attrs[] = {
	[SCALE_ALPHA] = { "alpha", OP_ATTR_FLOAT, 0, 1.0, "the factor" },
	{ NULL, 0, 0, 0, NULL }
};
static const struct op_attr_spec matmul_attrs[] = {
	[MATMUL_TRANS_A] = { "trans_a", OP_ATTR_BOOL, 0, 0.0, "use a transposed" },
	[MATMUL_TRANS_B] = { "trans_b", OP_ATTR_BOOL, 0, 0.0, "use b transposed" },
	{ NULL, 0, 0, 0, NULL }
};
static const struct op_attr_spec rmsnorm_attrs[] = {
	[NORM_EPS] = { "eps", OP_ATTR_FLOAT, 0, 1e-6, "added to the mean of squares" },
	{ NULL, 0, 0, 0, NULL }
};
static const struct op_attr_spec layernorm_attrs[] = {
	[NORM_EPS] = { "eps", OP_ATTR_FLOAT, 0, 1e-5, "added to the variance" },
	{ NULL, 0, 0, 0, NULL }
};
#define ROPE_SCALING_ATTRS(at) \
	[at + RS_TYPE] = { "rope_type", OP_ATTR_ENUM, 0, ROPE_TYPE_DEFAULT, \
	                   "frequency scaling: default, linear, dynamic, yarn or llama3" }, \
	[at + RS_FACTOR] = { "factor", OP_ATTR_FLOAT, 0, 1.0, \
	                     "context scaling factor (linear, dynamic, yarn, llama3)" }, \
	[at + RS_LOW_FREQ_FACTOR] = { "low_freq_factor", OP_ATTR_FLOAT, 0, 1.0, \
	                              "llama3: wavelengths above original/this are scaled" }, \
	[at + RS_HIGH_FREQ_FACTOR] = { "high_freq_factor", OP_ATTR_FLOAT, 0, 4.0, \
	                               "llama3: wavelengths below original/this are kept" }, \
	[at + RS_ORIGINAL_MAX] = { "original_max_position_embeddings", OP_ATTR_INT, 0, 0.0, \
	                           "the context trained for (llama3, yarn; dynamic: " \
	                           "max_position_embeddings)" }, \
	[at + RS_BETA_FAST] = { "beta_fast", OP_ATTR_FLOAT, 0, 32.0, \
	                        "yarn: rotations where extrapolation ends" }, \
	[at + RS_BETA_SLOW] = { "beta_slow", OP_ATTR_FLOAT, 0, 1.0, \
	                        "yarn: rotations where interpolation starts" }, \
	[at + RS_ATTENTION_FACTOR] = { "attention_factor", OP_ATTR_FLOAT, 0, 0.0, \
	                               "yarn: cos and sin scale (0: 0.1 ln(factor) + 1)" }, \
	[at + RS_TRUNCATE] = { "truncate", OP_ATTR_BOOL, 0, 1.0, \
	                       "yarn: round the correction range outwards" }

static const struct op_attr_spec rope_attrs[] = {
	[ROPE_HEADS] = { "heads", OP_ATTR_INT, 1, 0.0, "heads in a row of x" },
	[ROPE_HEAD_DIM] = { "head_dim", OP_ATTR_INT, 1, 0.0, "elements per head (even)" },
	[ROPE_THETA] = { "theta", OP_ATTR_FLOAT, 0, 10000.0, "the frequency base" },
	ROPE_SCALING_ATTRS(ROPE_SCALING),
	{ NULL, 0, 0, 0, NULL }
};
/* kv_heads' default is heads, not a number: the script parser fills it in;
 * its dflt of 0 is never stored. */
static const struct op_attr_spec attention_attrs[] = {
	[ATTN_HEADS] = { "heads", OP_ATTR_INT, 1, 0.0, "query heads" },
	[ATTN_KV_HEADS] = { "kv_heads", OP_ATTR_INT, 0, 0.0, "key/value heads (default: heads)" },
	[ATTN_HEAD_DIM] = { "head_dim", OP_ATTR_INT, 1, 0.0, "elements per head" },
	[ATTN_KV_LEN] = { "kv_len", OP_ATTR_INTVAR, 1, 0.0, "cache positions to attend to" },
	[ATTN_SCALE] = { "scale", OP_ATTR_FLOAT, 0, 0.0, "score scale (0: 1/sqrt(head_dim))" },
	[ATTN_CAUSAL] = { "causal", OP_ATTR_BOOL, 0, 0.0,
	                  "row t of T sees kv_len - T + t + 1 positions (a prefill chunk)" },
	{ NULL, 0, 0, 0, NULL }
};

/* kv_heads defaults to heads here too. eps is last: the script parser
 * stores it only with q_w and k_w. */
static const struct op_attr_spec rope_kv_write_attrs[] = {
	[RKV_HEADS] = { "heads", OP_ATTR_INT, 1, 0.0, "query heads" },
	[RKV_KV_HEADS] = { "kv_heads", OP_ATTR_INT, 0, 0.0, "key/value heads (default: heads)" },
	[RKV_HEAD_DIM] = { "head_dim", OP_ATTR_INT, 1, 0.0, "elements per head (even)" },
	[RKV_THETA] = { "theta", OP_ATTR_FLOAT, 0, 10000.0, "the frequency base" },
	ROPE_SCALING_ATTRS(RKV_SCALING),
	[RKV_EPS] = { "eps", OP_ATTR_FLOAT, 0, 1e-6,
	              "with q_w and k_w: added to each head's mean of squares (qk_norm's)" },
	{ NULL, 0, 0, 0, NULL }
};
_Static_assert(RKV_EPS == RKV_SCALING + RS_COUNT, "rope_kv_write's eps follows the rope_type "
               "attributes");
static const struct op_attr_spec paged_attention_attrs[] = {
	[PATTN_HEADS] = { "heads", OP_ATTR_INT, 1, 0.0, "query heads" },
	[PATTN_KV_HEADS] = { "kv_heads", OP_ATTR_INT, 0, 0.0, "key/value heads (default: heads)" },
	[PATTN_HEAD_DIM] = { "head_dim", OP_ATTR_INT, 1, 0.0, "elements per head" },
	[PATTN_SCALE] = { "scale", OP_ATTR_FLOAT, 0, 0.0, "score scale (0: 1/sqrt(head_dim))" },
	{ NULL, 0, 0, 0, NULL }
};
/* kv_heads defaults to heads here too. */
static const struct op_attr_spec qk_norm_attrs[] = {
	[QKN_HEADS] = { "heads", OP_ATTR_INT, 1, 0.0, "query heads (the q part)" },
	[QKN_KV_HEADS] = { "kv_heads", OP_ATTR_INT, 0, 0.0, "key heads (the k part; default: heads)" },
	[QKN_HEAD_DIM] = { "head_dim", OP_ATTR_INT, 1, 0.0, "elements per head" },
	[QKN_EPS] = { "eps", OP_ATTR_FLOAT, 0, 1e-6, "added to each head's mean of squares" },
	{ NULL, 0, 0, 0, NULL }
};
static const struct op_attr_spec moe_router_attrs[] = {
	[MOE_TOP_K] = { "top_k", OP_ATTR_INT, 1, 0.0, "experts chosen a row" },
	[MOE_RENORM] = { "renorm", OP_ATTR_BOOL, 0, 0.0, "divide the chosen weights by their sum" },
	[MOE_TOPK_FIRST] = { "topk_first", OP_ATTR_BOOL, 0, 0.0,
		"choose by logit, then softmax over the chosen (default: softmax, then choose)" },
	{ NULL, 0, 0, 0, NULL }
};
static const struct op_attr_spec vocab_embedding_attrs[] = {
	{ "vocab_start", OP_ATTR_INT, 0, 0, "the first row of the whole table this share holds" },
	{ NULL, 0, 0, 0, NULL }
};

static const struct op_attr_spec moe_experts_attrs[] = {
	[MOE_EXPERTS] = { "experts", OP_ATTR_INT, 1, 0.0, "experts in gate_up and down" },
	{ NULL, 0, 0, 0, NULL }
};
static const struct op_attr_spec rmsnorm_matmul_attrs[] = {
	[RNM_EPS] = { "eps", OP_ATTR_FLOAT, 1, 0.0, "added to the mean of squares (rmsnorm's)" },
	[RNM_TRANS_B] = { "trans_b", OP_ATTR_BOOL, 0, 0.0, "use b transposed" },
	[RNM_EPILOGUE] = { "epilogue", OP_ATTR_ENUM, 0, RNM_EPI_NONE,
	                   "after the product: none, or silu_mul (gate columns, then up)" },
	{ NULL, 0, 0, 0, NULL }
};
static const struct op_attr_spec rmsnorm_matmul_argmax_attrs[] = {
	[RNA_EPS] = { "eps", OP_ATTR_FLOAT, 1, 0.0, "added to the mean of squares (rmsnorm's)" },
	[RNA_TRANS_B] = { "trans_b", OP_ATTR_BOOL, 0, 0.0, "use b transposed" },
	{ NULL, 0, 0, 0, NULL }
};
/* rope_kv_write's, then eps and trans_b (op.h's RRK_*). */
static const struct op_attr_spec rmsnorm_matmul_rope_kv_write_attrs[] = {
	[RKV_HEADS] = { "heads", OP_ATTR_INT, 1, 0.0, "query heads" },
	[RKV_KV_HEADS] = { "kv_heads", OP_ATTR_INT, 0, 0.0, "key/value heads (default: heads)" },
	[RKV_HEAD_DIM] = { "head_dim", OP_ATTR_INT, 1, 0.0, "elements per head (even)" },
	[RKV_THETA] = { "theta", OP_ATTR_FLOAT, 0, 10000.0, "the frequency base" },
	ROPE_SCALING_ATTRS(RKV_SCALING),
	[RRK_EPS] = { "eps", OP_ATTR_FLOAT, 1, 0.0, "added to the mean of squares (rmsnorm's)" },
	[RRK_TRANS_B] = { "trans_b", OP_ATTR_BOOL, 0, 0.0, "use b transposed" },
	{ NULL, 0, 0, 0, NULL }
};
_Static_assert(RRK_EPS == RKV_SCALING + RS_COUNT && RRK_TRANS_B < OP_MAX_ATTRS,
               "rmsnorm_matmul_rope_kv_write's attributes follow rope_kv_write's");
/* rope_kv_write's first 13 (not its eps: the layer's eps is the two
 * norms'), then the norms' eps and attention's kv_len, scale and causal
 * (op.h's DL_*). */
static const struct op_attr_spec decoder_layer_attrs[] = {
	[RKV_HEADS] = { "heads", OP_ATTR_INT, 1, 0.0, "query heads" },
	[RKV_KV_HEADS] = { "kv_heads", OP_ATTR_INT, 0, 0.0, "key/value heads (default: heads)" },
	[RKV_HEAD_DIM] = { "head_dim", OP_ATTR_INT, 1, 0.0, "elements per head (even)" },
	[RKV_THETA] = { "theta", OP_ATTR_FLOAT, 0, 10000.0, "the frequency base" },
	ROPE_SCALING_ATTRS(RKV_SCALING),
	[DL_EPS] = { "eps", OP_ATTR_FLOAT, 1, 0.0,
	             "added to the mean of squares (both norms: attn_norm, ffn_norm)" },
	[DL_KV_LEN] = { "kv_len", OP_ATTR_INTVAR, 1, 0.0, "cache positions to attend to" },
	[DL_SCALE] = { "scale", OP_ATTR_FLOAT, 0, 0.0, "score scale (0: 1/sqrt(head_dim))" },
	[DL_CAUSAL] = { "causal", OP_ATTR_BOOL, 0, 0.0,
	                "row t of T sees kv_len - T + t + 1 positions (a prefill chunk)" },
	{ NULL, 0, 0, 0, NULL }
};
_Static_assert(DL_EPS == RKV_SCALING + RS_COUNT && DL_CAUSAL < OP_MAX_ATTRS,
               "decoder_layer's attributes follow rope_kv_write's rope");
static const struct op_attr_spec slice_attrs[] = {
	[SLICE_START] = { "start", OP_ATTR_INT, 1, 0.0, "the first column of x taken" },
	{ NULL, 0, 0, 0, NULL }
};

#define ALWAYS OP_CAPTURE_ALWAYS, NULL

static const struct op_kind kinds[OP_COUNT] = {
	[OP_FILL] = { OP_FILL, "fill", "set every element to value",
		no_operands, out_out, fill_attrs, OP_DTYPES_ALL, ALWAYS, 0, check_fill },
	[OP_COPY] = { OP_COPY, "copy", "copy x into out, converting between float dtypes",
		in_x, out_out, no_attrs, OP_DTYPES_ALL, ALWAYS, OP_INPLACE, check_copy },
	[OP_ADD] = { OP_ADD, "add", "a + b, b broadcast over a's rows",
		in_ab, out_out, no_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE, check_binary },
	[OP_MUL] = { OP_MUL, "mul", "a * b, b broadcast over a's rows",
		in_ab, out_out, no_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE, check_binary },
	[OP_SCALE] = { OP_SCALE, "scale", "alpha * x",
		in_x, out_out, scale_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE, check_unary },
	[OP_MATMUL] = { OP_MATMUL, "matmul", "op(a)[M,K] @ op(b)[K,N], rank 2",
		in_ab, out_out, matmul_attrs, OP_DTYPES_FLOAT, ALWAYS, 0, check_matmul },
	[OP_RMSNORM] = { OP_RMSNORM, "rmsnorm", "x / sqrt(mean(x^2) + eps) * w, per row",
		in_xw, out_out, rmsnorm_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE, check_norm },
	[OP_LAYERNORM] = { OP_LAYERNORM, "layernorm", "(x - mean) / sqrt(var + eps) * w + b, per row",
		in_xwb, out_out, layernorm_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE, check_norm },
	[OP_SILU_MUL] = { OP_SILU_MUL, "silu_mul", "silu(first half of x) * second half",
		in_x, out_out, no_attrs, OP_DTYPES_FLOAT, ALWAYS, 0, check_silu_mul },
	[OP_GELU] = { OP_GELU, "gelu", "0.5 x (1 + erf(x / sqrt 2))",
		in_x, out_out, no_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE, check_unary },
	[OP_SOFTMAX] = { OP_SOFTMAX, "softmax", "softmax of each row",
		in_x, out_out, no_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE, check_unary },
	[OP_ROPE] = { OP_ROPE, "rope", "rotary embedding of x [T, heads*head_dim] at pos [T] (i32)",
		in_xpos, out_out, rope_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE, check_rope },
	[OP_EMBEDDING] = { OP_EMBEDDING, "embedding", "rows of table [V, H] at ids [T] (i32)",
		in_emb, out_out, no_attrs, OP_DTYPES_FLOAT, ALWAYS, 0, check_embedding },
	[OP_KV_WRITE] = { OP_KV_WRITE, "kv_write", "write x [T, W] into cache [S, W] at pos [T] (i32)",
		in_xpos, out_cache, no_attrs, OP_DTYPES_FLOAT, ALWAYS, 0, check_kv_write },
	[OP_ATTENTION] = { OP_ATTENTION, "attention", "decode attention of q over the first kv_len rows of k, v",
		in_qkv, out_out, attention_attrs, OP_DTYPES_FLOAT, OP_CAPTURE_SAFE_FORM,
		"its launch shape follows the host var kv_len", 0, check_attention },
	[OP_ARGMAX] = { OP_ARGMAX, "argmax", "index of the largest element of each row, into out (i32)",
		in_x, out_out, no_attrs, OP_DTYPES_FLOAT, ALWAYS, 0, check_argmax },
	[OP_ADD_RMSNORM] = { OP_ADD_RMSNORM, "add_rmsnorm", "sum = x + r; out = rmsnorm(sum, w)",
		in_xrw, out_sum_out, rmsnorm_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE,
		check_add_rmsnorm },
	[OP_MATMUL_ADD] = { OP_MATMUL_ADD, "matmul_add", "x + op(a) @ op(b), the product rounded first",
		in_xab, out_out, matmul_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE, check_matmul_add },
	[OP_MATMUL_SILU_MUL] = { OP_MATMUL_SILU_MUL, "matmul_silu_mul",
		"silu_mul(op(a) @ op(b)): gate columns, then up", in_ab, out_out, matmul_attrs,
		OP_DTYPES_FLOAT, ALWAYS, 0, check_matmul_silu_mul },
	[OP_ROPE_KV_WRITE] = { OP_ROPE_KV_WRITE, "rope_kv_write",
		"q|k|v rows: rope q into q, rope k and write it and v into the caches at pos",
		in_rope_kv, out_q_caches, rope_kv_write_attrs, OP_DTYPES_FLOAT, ALWAYS, 0,
		check_rope_kv_write },
	[OP_SLICE] = { OP_SLICE, "slice", "columns start .. start+W-1 of x into out [rows, W]",
		in_x, out_out, slice_attrs, OP_DTYPES_FLOAT, ALWAYS, 0, check_slice },
	[OP_PAGED_KV_WRITE] = { OP_PAGED_KV_WRITE, "paged_kv_write",
		"write x [T, W] into the paged cache [NB, BS, W] at slots [T] (i32; -1 skips)",
		in_xslots, out_cache, no_attrs, OP_DTYPES_FLOAT, ALWAYS, 0, check_paged_kv_write },
	[OP_ROPE_PAGED_KV_WRITE] = { OP_ROPE_PAGED_KV_WRITE, "rope_paged_kv_write",
		"rope_kv_write into paged caches at slots, rotated by pos",
		in_qkvposslots, out_q_caches, rope_kv_write_attrs, OP_DTYPES_FLOAT, ALWAYS, 0,
		check_rope_paged_kv_write },
	[OP_PAGED_ATTENTION] = { OP_PAGED_ATTENTION, "paged_attention",
		"attention of each request's query rows over its blocks of paged caches",
		in_paged_attn, out_out, paged_attention_attrs, OP_DTYPES_FLOAT, OP_CAPTURE_SAFE_FORM,
		"its launch shape follows the host's batch (the longest sequence)", 0,
		check_paged_attention },
	[OP_QK_NORM] = { OP_QK_NORM, "qk_norm",
		"rmsnorm of each q head (q_w) and k head (k_w) of q|k|v rows; the rest copied",
		in_qk_norm, out_out, qk_norm_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE,
		check_qk_norm },
	[OP_MOE_ROUTER] = { OP_MOE_ROUTER, "moe_router",
		"top_k experts of each row of router logits [T, E], and their weights",
		in_logits, out_ids_weights, moe_router_attrs, OP_DTYPES_FLOAT, ALWAYS, 0,
		op_check_moe_router },
	[OP_MOE_ROUTER_PAGED] = { OP_MOE_ROUTER_PAGED, "moe_router_paged",
		"moe_router; a row whose slot is -1 (padding) routes to no expert",
		in_logits_slots, out_ids_weights, moe_router_attrs, OP_DTYPES_FLOAT, ALWAYS, 0,
		op_check_moe_router },
	[OP_MOE_EXPERTS] = { OP_MOE_EXPERTS, "moe_experts",
		"SwiGLU experts over the rows routed to them, weighted sum back into each row "
		"(plus residual, if given)",
		in_moe, out_out, moe_experts_attrs, OP_DTYPES_FLOAT, OP_CAPTURE_SAFE_FORM,
		"launch follows per-expert token counts", OP_RESIDUAL_LAST, op_check_moe_experts },
	[OP_GATED_ADD] = { OP_GATED_ADD, "gated_add", "x + sigmoid(g) * y, one gate g a row",
		in_xyg, out_out, no_attrs, OP_DTYPES_FLOAT, ALWAYS, OP_INPLACE, op_check_gated_add },
	[OP_ALL_REDUCE] = { OP_ALL_REDUCE, "all_reduce", "the sum over the ranks of their x",
		in_x, out_out, no_attrs, OP_DTYPES_FLOAT, OP_CAPTURE_SAFE_FORM,
		"a collective: every rank must launch it at once", OP_INPLACE, op_check_all_reduce },
	[OP_ALL_GATHER] = { OP_ALL_GATHER, "all_gather",
		"every rank's x [rows, C] side by side into out [rows, ranks*C]",
		in_x, out_out, no_attrs, OP_DTYPES_FLOAT, OP_CAPTURE_SAFE_FORM,
		"a collective: every rank must launch it at once", 0, op_check_all_gather },
	[OP_VOCAB_EMBEDDING] = { OP_VOCAB_EMBEDDING, "vocab_embedding",
		"rows of a rank's share of table at ids (i32); ids outside it give zeros",
		in_emb, out_out, vocab_embedding_attrs, OP_DTYPES_FLOAT, ALWAYS, 0,
		op_check_vocab_embedding },
	[OP_RMSNORM_MATMUL] = { OP_RMSNORM_MATMUL, "rmsnorm_matmul",
		"rmsnorm(x, w) @ op(b), then the epilogue: the norm folded into the product",
		in_xwb, out_out, rmsnorm_matmul_attrs, OP_DTYPES_FLOAT, ALWAYS, 0,
		check_rmsnorm_matmul },
	[OP_RMSNORM_MATMUL_ROPE_KV_WRITE] = { OP_RMSNORM_MATMUL_ROPE_KV_WRITE,
		"rmsnorm_matmul_rope_kv_write",
		"rope_kv_write of rmsnorm(x, w) @ op(b): norm, q|k|v product, rope and KV write",
		in_xwbpos, out_q_caches, rmsnorm_matmul_rope_kv_write_attrs, OP_DTYPES_FLOAT, ALWAYS,
		0, check_rmsnorm_matmul_rope_kv_write },
	[OP_DECODER_LAYER] = { OP_DECODER_LAYER, "decoder_layer",
		"a Llama decoder layer: norm, q|k|v, rope and KV write, attention, o, norm, "
		"SwiGLU FFN",
		in_decoder_layer, out_decoder_layer, decoder_layer_attrs, OP_DTYPES_FLOAT,
		OP_CAPTURE_SAFE_FORM, "its attention's launch shape follows the host var kv_len",
		OP_INPLACE, check_decoder_layer },
	[OP_RMSNORM_MATMUL_ARGMAX] = { OP_RMSNORM_MATMUL_ARGMAX, "rmsnorm_matmul_argmax",
		"rmsnorm(x, w) @ op(b) into out, and each row's largest column into index (i32)",
		in_xwb, out_out_index, rmsnorm_matmul_argmax_attrs, OP_DTYPES_FLOAT, ALWAYS, 0,
		check_rmsnorm_matmul_argmax },
};

const struct op_kind *op_kind_find(const char *name)
{
	for (int i = 0; i < OP_COUNT; i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	return NULL;
}

const struct op_kind *op_kind_get(enum op_id id)
{
	if ((int)id < 0 || id >= OP_COUNT)
		return NULL;
	return &kinds[id];
}

static int count_names(const char *const *names)
{
	int n = 0;

	while (names[n] != NULL)
		n++;
	return n;
}

int op_kind_count_inputs(const struct op_kind *kind)
{
	return count_names(kind->inputs);
}

int op_kind_min_inputs(const struct op_kind *kind)
{
	int n = count_names(kind->inputs);

	if (kind->id == OP_ROPE_KV_WRITE || kind->id == OP_ROPE_PAGED_KV_WRITE)
		return n - 2;                       /* q_w, k_w */
	if (kind->flags & OP_RESIDUAL_LAST)
		return n - 1;                       /* the residual */
	return n;
}

int op_kind_count_outputs(const struct op_kind *kind)
{
	return count_names(kind->outputs);
}

int op_kind_count_attrs(const struct op_kind *kind)
{
	int n = 0;

	while (kind->attrs[n].name != NULL)
		n++;
	return n;
}

/* rmsnorm_matmul's epilogue, by RNM_EPI_*: stored in plans, never rename. */
static const char *const rnm_epilogue_names[] = { "none", "silu_mul", NULL };

const char *const *op_attr_choices(const struct op_attr_spec *spec)
{
	if (spec->type != OP_ATTR_ENUM)
		return NULL;
	if (strcmp(spec->name, "rope_type") == 0)
		return rope_type_names;
	if (strcmp(spec->name, "epilogue") == 0)
		return rnm_epilogue_names;
	return NULL;
}

int op_attr_choice(const struct op_attr_spec *spec, const char *name)
{
	const char *const *choices = op_attr_choices(spec);

	for (int i = 0; choices != NULL && choices[i] != NULL; i++)
		if (strcmp(choices[i], name) == 0)
			return i;
	return -1;
}

int op_kind_attr_index(const struct op_kind *kind, const char *name)
{
	for (int i = 0; kind->attrs[i].name != NULL; i++)
		if (strcmp(kind->attrs[i].name, name) == 0)
			return i;
	return -1;
}

int op_kind_kv_heads_attr(const struct op_kind *kind, int *heads)
{
	int kvh = op_kind_attr_index(kind, "kv_heads"), h = op_kind_attr_index(kind, "heads");

	if (kvh < 0 || h < 0)
		return -1;
	if (heads)
		*heads = h;
	return kvh;
}

int64_t op_tensor_numel(const struct op_tensor *t)
{
	int64_t n = 1;

	for (int i = 0; i < t->rank && i < PLAN_MAX_RANK; i++)
		n *= t->dim[i];
	return n;
}

int64_t op_tensor_rows(const struct op_tensor *t)
{
	int64_t n = 1;

	for (int i = 0; i + 1 < t->rank && i < PLAN_MAX_RANK; i++)
		n *= t->dim[i];
	return n;
}

int64_t op_tensor_cols(const struct op_tensor *t)
{
	if (t->rank < 1 || t->rank > PLAN_MAX_RANK)
		return 0;
	return t->dim[t->rank - 1];
}
