/*
 * host-moe.c - unit tests of the mixture-of-experts kinds' host references
 * (bcgtool/ops/host-moe.c): moe_router, moe_router_paged, moe_experts and
 * gated_add, each against a computation written here in double from the
 * stored inputs.
 *
 * The router's choice is checked against a sort written here (descending,
 * ties to the lower index) of the double softmax; the ties are planted.
 * moe_experts runs rows routed to several experts, to the same expert
 * twice in one batch, and to an id outside [0, E) (which must add
 * nothing), in each float dtype.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/host-kernels.h"
#include "ops/host.h"
#include "ops/numeric.h"
#include "tap.h"
#include "host-tensor.h"

/* Relative bounds: f32 sums of up to a few dozen terms; in f16 and bf16
 * the products and activation are rounded to the dtype on the way. */
static double dt_tol(int dt)
{
	return dt == PLAN_DTYPE_F16 ? 1e-2 : dt == PLAN_DTYPE_BF16 ? 5e-2 : 1e-5;
}

static void fill_random(const struct op_tensor *t, uint64_t seed, double scale)
{
	for (int64_t i = 0; i < t->dim[0] * t->dim[1]; i++)
		set(t, i, (double)bcg_uniform(seed, (uint64_t)i) * scale);
}

static double rel_err(double got, double want)
{
	double d = fabs(got - want), m = fabs(want);
	return m > 1.0 ? d / m : d;
}

/* --- router ------------------------------------------------------------- */

enum { RT = 5, RE = 8, RK = 3 };

/* Row R's reference: the K best of VAL (double), descending, ties to the
 * lower index. */
static void ref_top_k(const double *val, int e, int k, int *chosen)
{
	int used[RE] = { 0 };

	for (int i = 0; i < k; i++) {
		int best = -1;
		for (int j = 0; j < e; j++)
			if (!used[j] && (best < 0 || val[j] > val[best]))
				best = j;
		used[best] = 1;
		chosen[i] = best;
	}
}

static void test_router_mode(int dt, int renorm, int topk_first, int paged)
{
	struct op_tensor lg = T2(dt, RT, RE), ids = T2(PLAN_DTYPE_I32, RT, RK);
	struct op_tensor w = T2(PLAN_DTYPE_F32, RT, RK);
	struct op_tensor slots = { .dtype = PLAN_DTYPE_I32, .rank = 1, .dim = { RT } };
	int32_t slot_v[RT] = { 3, -1, 7, 0, -1 };
	struct op_call c = { .nin = paged ? 2 : 1, .nout = 2 };
	int bad_ids = 0, worst_at = -1;
	double worst = 0;

	fill_random(&lg, 11 + (uint64_t)dt, 3.0);
	/* row 2: ties, among them for the last place chosen (experts 1, 4, 6
	 * equal and largest; 0 and 5 equal next) */
	for (int j = 0; j < RE; j++)
		set(&lg, 2 * RE + j, -1.0);
	set(&lg, 2 * RE + 1, 2.0);
	set(&lg, 2 * RE + 4, 2.0);
	set(&lg, 2 * RE + 6, 2.0);
	set(&lg, 2 * RE + 0, 1.0);
	set(&lg, 2 * RE + 5, 1.0);
	/* row 3: two equal for the last place */
	set(&lg, 3 * RE + 2, 4.0);
	set(&lg, 3 * RE + 3, 3.5);
	set(&lg, 3 * RE + 5, 3.0);
	set(&lg, 3 * RE + 7, 3.0);
	slots.data = slot_v;
	c.in[0] = lg;
	c.in[1] = slots;
	c.out[0] = ids;
	c.out[1] = w;
	c.attr[MOE_TOP_K].i = RK;
	c.attr[MOE_RENORM].i = renorm;
	c.attr[MOE_TOPK_FIRST].i = topk_first;
	host_kernel(paged ? OP_MOE_ROUTER_PAGED : OP_MOE_ROUTER)(&c);

	for (int r = 0; r < RT; r++) {
		double l[RE], p[RE], max = -INFINITY, sum = 0, pk[RK], s = 0;
		int chosen[RK];
		if (paged && slot_v[r] < 0) {
			for (int i = 0; i < RK; i++)
				if (((int32_t *)ids.data)[r * RK + i] != -1 || at(&w, r * RK + i) != 0.0)
					bad_ids++;
			continue;
		}
		for (int j = 0; j < RE; j++) {
			l[j] = at(&lg, r * RE + j);
			if (l[j] > max)
				max = l[j];
		}
		for (int j = 0; j < RE; j++)
			sum += exp(l[j] - max);
		for (int j = 0; j < RE; j++)
			p[j] = exp(l[j] - max) / sum;
		/* softmax is monotonic: the choice is the same either way */
		ref_top_k(l, RE, RK, chosen);
		if (topk_first) {
			double m2 = l[chosen[0]], s2 = 0;
			for (int i = 0; i < RK; i++)
				s2 += exp(l[chosen[i]] - m2);
			for (int i = 0; i < RK; i++)
				pk[i] = exp(l[chosen[i]] - m2) / s2;
		} else {
			for (int i = 0; i < RK; i++)
				pk[i] = p[chosen[i]];
		}
		for (int i = 0; i < RK; i++)
			s += pk[i];
		for (int i = 0; i < RK; i++) {
			double want = renorm ? pk[i] / s : pk[i];
			if (((int32_t *)ids.data)[r * RK + i] != chosen[i])
				bad_ids++;
			if (rel_err(at(&w, r * RK + i), want) > worst) {
				worst = rel_err(at(&w, r * RK + i), want);
				worst_at = r * RK + i;
			}
		}
	}
	ok(bad_ids == 0, "moe_router%s %s renorm %d topk_first %d: the experts chosen, ties "
	   "to the lower index%s", paged ? "_paged" : "", dt_name(dt), renorm, topk_first,
	   paged ? ", padded rows to none" : "");
	ok(worst <= 1e-6, "moe_router%s %s renorm %d topk_first %d: weights within 1e-6 of "
	   "double (worst %.3g at %d)", paged ? "_paged" : "", dt_name(dt), renorm, topk_first,
	   worst, worst_at);
	free(lg.data);
	free(ids.data);
	free(w.data);
}

static void test_router(void)
{
	for (size_t d = 0; d < sizeof float_dtypes / sizeof float_dtypes[0]; d++)
		for (int renorm = 0; renorm < 2; renorm++)
			for (int first = 0; first < 2; first++)
				test_router_mode(float_dtypes[d], renorm, first, 0);
	test_router_mode(PLAN_DTYPE_F32, 1, 0, 1);
}

/* NaN logits: the row's weights are NaN (so the output shows it), and the
 * ids stay within [0, E). */
static void test_router_nan(void)
{
	struct op_tensor lg = T2(PLAN_DTYPE_F32, 2, RE), ids = T2(PLAN_DTYPE_I32, 2, RK);
	struct op_tensor w = T2(PLAN_DTYPE_F32, 2, RK);
	struct op_call c = { .nin = 1, .nout = 2 };
	int in_range = 1;

	fill_random(&lg, 5, 1.0);
	set(&lg, 3, NAN);
	c.in[0] = lg;
	c.out[0] = ids;
	c.out[1] = w;
	c.attr[MOE_TOP_K].i = RK;
	host_kernel(OP_MOE_ROUTER)(&c);
	for (int i = 0; i < 2 * RK; i++)
		if (((int32_t *)ids.data)[i] < 0 || ((int32_t *)ids.data)[i] >= RE)
			in_range = 0;
	ok(in_range && isnan(at(&w, 0)) && !isnan(at(&w, RK)),
	   "moe_router: a NaN logit gives its row NaN weights, ids in range, other rows intact");
	free(lg.data);
	free(ids.data);
	free(w.data);
}

/* --- experts ------------------------------------------------------------ */

enum { XT = 4, XH = 8, XE = 5, XI = 6, XK = 2 };

static void test_experts_dtype(int dt)
{
	struct op_tensor x = T2(dt, XT, XH), ids = T2(PLAN_DTYPE_I32, XT, XK);
	struct op_tensor w = T2(PLAN_DTYPE_F32, XT, XK), gu = T2(dt, XE * 2 * XI, XH);
	struct op_tensor dn = T2(dt, XE * XH, XI), out = T2(dt, XT, XH);
	/* expert 3 twice, expert 0 and 4 once, 1 never; row 2's second id
	 * outside [0, E), row 3's both */
	static const int32_t idv[XT * XK] = { 3, 0, 4, 3, 2, 5, -1, 9 };
	struct op_call c = { .nin = 5, .nout = 1 };
	double worst = 0;
	int worst_at = -1;

	fill_random(&x, 21, 1.0);
	fill_random(&w, 22, 1.0);
	fill_random(&gu, 23, 0.5);
	fill_random(&dn, 24, 0.5);
	memcpy(ids.data, idv, sizeof idv);
	for (int i = 0; i < XT * XH; i++)
		set(&out, i, NAN);
	c.in[0] = x;
	c.in[1] = ids;
	c.in[2] = w;
	c.in[3] = gu;
	c.in[4] = dn;
	c.out[0] = out;
	c.attr[MOE_EXPERTS].i = XE;
	host_kernel(OP_MOE_EXPERTS)(&c);

	for (int t = 0; t < XT; t++)
		for (int i = 0; i < XH; i++) {
			double want = 0;
			for (int k = 0; k < XK; k++) {
				int e = idv[t * XK + k];
				double y = 0, a[XI];
				if (e < 0 || e >= XE)
					continue;
				for (int j = 0; j < XI; j++) {
					double g = 0, u = 0;
					for (int h = 0; h < XH; h++) {
						g += at(&x, t * XH + h) * at(&gu, (e * 2 * XI + j) * XH + h);
						u += at(&x, t * XH + h) * at(&gu, (e * 2 * XI + XI + j) * XH + h);
					}
					a[j] = g / (1 + exp(-g)) * u;
				}
				for (int j = 0; j < XI; j++)
					y += a[j] * at(&dn, (e * XH + i) * XI + j);
				want += at(&w, t * XK + k) * y;
			}
			double err = rel_err(at(&out, t * XH + i), want);
			if (isnan(err) || err > worst) {
				worst = isnan(err) ? INFINITY : err;
				worst_at = t * XH + i;
			}
		}
	ok(worst <= dt_tol(dt), "moe_experts %s: every row within %g of double, ids out of "
	   "range adding nothing, a row routed nowhere zeros (worst %.3g at %d)", dt_name(dt),
	   dt_tol(dt), worst, worst_at);
	free(x.data);
	free(ids.data);
	free(w.data);
	free(gu.data);
	free(dn.data);
	free(out.data);
}

/* moe_experts with its residual r: the bytes of moe_experts, then add
 * (r, moe) (the unfused pair, run here through the add kind); in place
 * (out is r) the same bytes. */
static void test_experts_residual_dtype(int dt)
{
	struct op_tensor x = T2(dt, XT, XH), ids = T2(PLAN_DTYPE_I32, XT, XK);
	struct op_tensor w = T2(PLAN_DTYPE_F32, XT, XK), gu = T2(dt, XE * 2 * XI, XH);
	struct op_tensor dn = T2(dt, XE * XH, XI), moe = T2(dt, XT, XH);
	struct op_tensor r = T2(dt, XT, XH), want = T2(dt, XT, XH);
	struct op_tensor got = T2(dt, XT, XH), inplace = T2(dt, XT, XH);
	static const int32_t idv[XT * XK] = { 3, 0, 4, 3, 2, 5, -1, 9 };
	struct op_call c = { .nin = 5, .nout = 1 }, add = { .nin = 2, .nout = 1 };
	size_t bytes = (size_t)(XT * XH) * dt_size(dt);

	fill_random(&x, 41, 1.0);
	fill_random(&w, 42, 1.0);
	fill_random(&gu, 43, 0.5);
	fill_random(&dn, 44, 0.5);
	fill_random(&r, 45, 3.0);
	memcpy(ids.data, idv, sizeof idv);
	memcpy(inplace.data, r.data, bytes);
	c.in[0] = x;
	c.in[1] = ids;
	c.in[2] = w;
	c.in[3] = gu;
	c.in[4] = dn;
	c.out[0] = moe;
	c.attr[MOE_EXPERTS].i = XE;
	host_kernel(OP_MOE_EXPERTS)(&c);
	add.in[0] = r;
	add.in[1] = moe;
	add.out[0] = want;
	host_kernel(OP_ADD)(&add);
	c.nin = 6;
	c.in[5] = r;
	c.out[0] = got;
	host_kernel(OP_MOE_EXPERTS)(&c);
	ok(memcmp(got.data, want.data, bytes) == 0, "moe_experts %s with a residual: the bytes "
	   "of moe_experts then add", dt_name(dt));
	c.in[5] = inplace;
	c.out[0] = inplace;
	host_kernel(OP_MOE_EXPERTS)(&c);
	ok(memcmp(inplace.data, want.data, bytes) == 0, "moe_experts %s with a residual, in "
	   "place (out is the residual): the same bytes", dt_name(dt));
	free(x.data);
	free(ids.data);
	free(w.data);
	free(gu.data);
	free(dn.data);
	free(moe.data);
	free(r.data);
	free(want.data);
	free(got.data);
	free(inplace.data);
}

static void test_experts(void)
{
	for (size_t d = 0; d < sizeof float_dtypes / sizeof float_dtypes[0]; d++)
		test_experts_dtype(float_dtypes[d]);
	for (size_t d = 0; d < sizeof float_dtypes / sizeof float_dtypes[0]; d++)
		test_experts_residual_dtype(float_dtypes[d]);
}

/* --- gated_add ----------------------------------------------------------- */

static void test_gated_add(void)
{
	struct op_tensor x = T2(PLAN_DTYPE_F32, 3, 5), y = T2(PLAN_DTYPE_F32, 3, 5);
	struct op_tensor g = T2(PLAN_DTYPE_F32, 3, 1), out = T2(PLAN_DTYPE_F32, 3, 5);
	struct op_call c = { .nin = 3, .nout = 1 };
	double worst = 0;

	fill_random(&x, 31, 2.0);
	fill_random(&y, 32, 2.0);
	fill_random(&g, 33, 4.0);
	c.in[0] = x;
	c.in[1] = y;
	c.in[2] = g;
	c.out[0] = out;
	host_kernel(OP_GATED_ADD)(&c);
	for (int r = 0; r < 3; r++)
		for (int j = 0; j < 5; j++) {
			double want = at(&x, r * 5 + j) + at(&y, r * 5 + j) / (1 + exp(-at(&g, r)));
			double err = rel_err(at(&out, r * 5 + j), want);
			if (err > worst)
				worst = err;
		}
	ok(worst <= 1e-6, "gated_add: x + sigmoid(g) y within 1e-6 of double (worst %.3g)",
	   worst);
	/* in place: out is x */
	c.out[0] = x;
	host_kernel(OP_GATED_ADD)(&c);
	ok(memcmp(x.data, out.data, 15 * sizeof(float)) == 0,
	   "gated_add: the same bytes in place");
	free(x.data);
	free(y.data);
	free(g.data);
	free(out.data);
}

int main(void)
{
	test_router();
	test_router_nan();
	test_experts();
	test_gated_add();
	return tap_done();
}
