/*
 * host-ops.c - unit tests of the host reference kernels (bcgtool/ops/host*.c)
 * and of host_init_tensor.
 *
 * Every op kind runs in f32, f16 and bf16 against a computation written
 * here plainly in double from the inputs as stored, then on cases whose
 * answer is known without computing (softmax of equal values, attention
 * over one position, ...). Outputs are poisoned with NaN (or a sentinel
 * for i32) before each run, so an element the kernel skipped fails its
 * check. Calls are built by hand, without the registry, and with kind NULL.
 *
 * The fused kinds are also run against their unfused sequence of kernels
 * on random shapes, where the bytes must be identical, and the blocked
 * products against the reference on shapes that straddle their tiles.
 * Buffers are allocated at their exact size so that the sanitizer builds
 * catch any access outside them.
 *
 * numeric.h's conversions and generator are trusted here: t/unit/numeric.c
 * tests them against an independent formulation.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/host-kernels.h"
#include "ops/host.h"
#include "ops/numeric.h"
#include "tap.h"
#include "host-tensor.h"

#define I32_POISON 0x7eadbeef

/* Tolerance of a result against the double reference, relative to
 * max(1, |want|): f32 rounds once per operation, f16 and bf16 once more
 * on store, at 2^-11 and 2^-8 relative. */
static double dt_tol(int dtype)
{
	switch (dtype) {
	case PLAN_DTYPE_F16: return 2e-3;
	case PLAN_DTYPE_BF16: return 1e-2;
	}
	return 1e-5;
}

/* --- test tensors (and host-tensor.h) ------------------------------------ */

static int32_t at_i32(const struct op_tensor *t, int64_t i)
{
	return ((const int32_t *)t->data)[i];
}

/* A generator of the tests' own (xorshift64*), unrelated to numeric.h's. */
static double rnd(uint64_t *state, double lo, double hi)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	uint64_t r = *state * UINT64_C(2685821657736338717);
	return lo + (hi - lo) * ldexp((double)(r >> 11), -53);
}

static void fill_random(const struct op_tensor *t, uint64_t seed, double lo, double hi)
{
	uint64_t s = seed * 0x9e37u + 1;
	for (int64_t i = 0; i < numel(t); i++)
		set(t, i, rnd(&s, lo, hi));
}

/* NaN in every element (a sentinel for i32): a kernel must overwrite it. */
static void poison(const struct op_tensor *t)
{
	for (int64_t i = 0; i < numel(t); i++) {
		if (t->dtype == PLAN_DTYPE_I32)
			((int32_t *)t->data)[i] = I32_POISON;
		else
			set(t, i, NAN);
	}
}

static struct op_tensor clone(const struct op_tensor *t)
{
	struct op_tensor c = *t;
	size_t bytes = (size_t)numel(t) * dt_size(t->dtype);
	c.data = xalloc(bytes);
	memcpy(c.data, t->data, bytes);
	return c;
}

static int same_bytes(const struct op_tensor *a, const struct op_tensor *b)
{
	return a->dtype == b->dtype && numel(a) == numel(b) &&
	       memcmp(a->data, b->data, (size_t)numel(a) * dt_size(a->dtype)) == 0;
}

static void drop(struct op_tensor *t)
{
	free(t->data);
	t->data = NULL;
}

/* Every element of GOT within TOL * max(1, |want|) of WANT; NaN fails. One
 * TAP line, with the first mismatches as comments. */
__attribute__((format(printf, 4, 5)))
static int check(const struct op_tensor *got, const double *want, double tol,
                 const char *fmt, ...)
{
	char name[200];
	va_list ap;
	long bad = 0;

	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	for (int64_t i = 0; i < numel(got); i++) {
		double g = at(got, i), w = want[i];
		double err = fabs(g - w), mag = fabs(w) > 1 ? fabs(w) : 1;
		if (!(err <= tol * mag)) {
			if (bad < 4)
				diag("%s: element %lld is %.9g, want %.9g", name, (long long)i, g, w);
			bad++;
		}
	}
	return ok(bad == 0, "%s", name);
}

static struct op_call call_new(int nin, int nout)
{
	struct op_call c;
	memset(&c, 0, sizeof c);
	c.kind = NULL;
	c.nin = nin;
	c.nout = nout;
	return c;
}

static void run(enum op_id id, const struct op_call *c)
{
	host_kernel(id)(c);
}

static double *want_new(int64_t n)
{
	double *w = xalloc((size_t)n * sizeof *w);
	for (int64_t i = 0; i < n; i++)
		w[i] = NAN;
	return w;
}

/* --- table, load/store, init ------------------------------------------- */

static void test_table(void)
{
	int missing = 0;
	for (int id = 0; id < OP_COUNT; id++)
		missing += host_kernel((enum op_id)id) == NULL;
	is_int(missing, 0, "every op kind has a host kernel");
	ok(host_kernel(OP_COUNT) == NULL, "no kernel past the last op kind");
}

static void test_load_store(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor t = T1(dt, 3);
		host_store(&t, 0, 1.0f);
		host_store(&t, 1, -0.1f);
		host_store(&t, 2, 70000.0f);
		is_close(at(&t, 0), 1.0, 0, "%s: store 1", dt_name(dt));
		double want = dt == PLAN_DTYPE_F32 ? (double)-0.1f :
		              dt == PLAN_DTYPE_F16 ? -0.0999755859375 : -0.10009765625;
		is_close(at(&t, 1), want, 0, "%s: store -0.1 rounds to nearest", dt_name(dt));
		/* 70000 is 136.72 bf16 ulps of 512: 137 * 512. */
		double big = dt == PLAN_DTYPE_F32 ? 70000 : dt == PLAN_DTYPE_F16 ? INFINITY : 70144;
		ok(at(&t, 2) == big, "%s: store 70000 gives %g", dt_name(dt), big);
		is_close(host_load(&t, 1), want, 0, "%s: load widens exactly", dt_name(dt));
		drop(&t);
	}
	struct op_tensor t = T1(PLAN_DTYPE_I32, 4);
	host_store(&t, 0, -2.75f);
	host_store(&t, 1, 3e9f);
	host_store(&t, 2, -3e9f);
	host_store(&t, 3, NAN);
	ok(at_i32(&t, 0) == -2 && at_i32(&t, 1) == INT32_MAX && at_i32(&t, 2) == INT32_MIN &&
	   at_i32(&t, 3) == 0, "i32: store truncates toward zero, saturates, NaN gives 0");
	is_close(host_load(&t, 0), -2.0, 0, "i32: load");
	drop(&t);
}

/* The value RANDOM must produce: the f32 product, rounded once. */
static float init_random_f32(uint64_t seed, uint64_t i, double scale)
{
	return (float)((double)bcg_uniform(seed, i) * (double)(float)scale);
}

/* F as the tensor dtype DT stores it. */
static double stored(int dt, float f)
{
	switch (dt) {
	case PLAN_DTYPE_F16: return bcg_f16_to_f32(bcg_f32_to_f16(f));
	case PLAN_DTYPE_BF16: return bcg_bf16_to_f32(bcg_f32_to_bf16(f));
	case PLAN_DTYPE_I32:
		return isnan(f) ? 0 : f >= 2147483648.0f ? INT32_MAX :
		       f <= -2147483648.0f ? INT32_MIN : trunc((double)f) + 0.0; /* no -0 */
	}
	return f;
}

static void init_check(int dt, const struct plan_init *init, const char *what,
                       double (*want)(int dt, const struct plan_init *init, uint64_t i))
{
	enum { N = 37 };
	struct op_tensor t = T1(dt, N);
	long bad = 0;

	poison(&t);
	host_init_tensor(t.data, dt, N, init);
	for (uint64_t i = 0; i < N; i++) {
		double w = want(dt, init, i), g = at(&t, (int64_t)i);
		if (g != w || (!signbit(g) != !signbit(w))) {
			if (bad < 3)
				diag("element %llu is %.9g, want %.9g", (unsigned long long)i, g, w);
			bad++;
		}
	}
	ok(bad == 0, "init %s: %s", dt_name(dt), what);
	drop(&t);
}

static double want_zeros(int dt, const struct plan_init *init, uint64_t i)
{
	return 0.0;
}

static double want_ones(int dt, const struct plan_init *init, uint64_t i)
{
	return 1.0;
}

static double want_const(int dt, const struct plan_init *init, uint64_t i)
{
	return stored(dt, (float)init->value);
}

static double want_random(int dt, const struct plan_init *init, uint64_t i)
{
	return stored(dt, init_random_f32(init->seed, i, init->scale));
}

/* value + i * scale, exact in double for the small cases used here. */
static double want_arange(int dt, const struct plan_init *init, uint64_t i)
{
	return stored(dt, (float)(init->value + (double)i * init->scale));
}

/* A rank's share of a split tensor (tensor parallelism): the whole is
 * [3, 10, 4] split on axis 1 in blocks of 4 and 6; the share holds
 * elements 2..3 of the first block and 3..5 of the second, so its axis is
 * 5 long. Element (o, c, k) of the share must be the whole tensor's
 * element (o, whole axis index of c, k), worked out here by hand. */
static void test_init_slice(void)
{
	const int64_t whole_axis[5] = { 2, 3, 4 + 3, 4 + 4, 4 + 5 };
	struct bcg_slice s = { .inner = 4, .share = 5, .full = 10, .nblocks = 2,
	                       .at = { 0, 2 }, .from = { 2, 4 + 3 } };
	struct plan_init random = { .kind = PLAN_INIT_RANDOM, .seed = 11, .scale = 0.5 };
	struct plan_init arange = { .kind = PLAN_INIT_ARANGE, .value = -3, .scale = 0.25 };
	const struct plan_init *inits[2] = { &random, &arange };

	for (int k = 0; k < 2; k++) {
		struct op_tensor whole = T1(PLAN_DTYPE_F32, 3 * 10 * 4), share = T1(PLAN_DTYPE_F32, 3 * 5 * 4);
		long bad = 0;
		host_init_tensor(whole.data, PLAN_DTYPE_F32, 120, inits[k]);
		/* in two parts, as the backend writes large tensors */
		host_init_range_slice(share.data, PLAN_DTYPE_F32, 0, 17, inits[k], &s);
		host_init_range_slice(share.data, PLAN_DTYPE_F32, 17, 60 - 17, inits[k], &s);
		for (int64_t o = 0; o < 3; o++)
			for (int64_t c = 0; c < 5; c++)
				for (int64_t j = 0; j < 4; j++)
					if (at(&share, (o * 5 + c) * 4 + j) !=
					    at(&whole, (o * 10 + whole_axis[c]) * 4 + j))
						bad++;
		is_int(bad, 0, "init %s of a share: the whole tensor's elements at their places",
		       k ? "arange" : "random");
		drop(&whole);
		drop(&share);
	}
}

static void test_init(void)
{
	const int all[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16, PLAN_DTYPE_I32 };

	for (int k = 0; k < 4; k++) {
		int dt = all[k];
		struct plan_init zeros = { .kind = PLAN_INIT_ZEROS };
		struct plan_init ones = { .kind = PLAN_INIT_ONES };
		struct plan_init cnst = { .kind = PLAN_INIT_CONST, .value = -2.7 };
		struct plan_init random = { .kind = PLAN_INIT_RANDOM, .seed = 7,
		                            .scale = dt == PLAN_DTYPE_I32 ? 100 : 0.3 };
		struct plan_init arange = { .kind = PLAN_INIT_ARANGE, .value = -5.5, .scale = 0.5 };

		init_check(dt, &zeros, "zeros", want_zeros);
		init_check(dt, &ones, "ones", want_ones);
		init_check(dt, &cnst, "const -2.7 (i32: -2, toward zero)", want_const);
		init_check(dt, &random, "random: uniform(seed, i) * scale in f32, rounded", want_random);
		init_check(dt, &arange, "arange -5.5 + 0.5 i (i32: toward zero)", want_arange);

		/* NONE and unknown kinds leave memory alone. */
		struct op_tensor t = T1(dt, 9);
		memset(t.data, 0xa5, 9 * dt_size(dt));
		struct op_tensor before = clone(&t);
		struct plan_init none = { .kind = PLAN_INIT_NONE, .value = 1, .scale = 1 };
		struct plan_init bogus = { .kind = 99, .value = 1, .scale = 1 };
		host_init_tensor(t.data, dt, 9, &none);
		host_init_tensor(t.data, dt, 9, &bogus);
		ok(same_bytes(&t, &before), "init %s: none and unknown kinds write nothing", dt_name(dt));
		drop(&t);
		drop(&before);
	}

	/* Distinct seeds give distinct tensors; a range stays in [-scale, scale). */
	struct op_tensor a = T1(PLAN_DTYPE_F32, 1000), b = T1(PLAN_DTYPE_F32, 1000);
	struct plan_init ra = { .kind = PLAN_INIT_RANDOM, .seed = 1, .scale = 0.02 };
	struct plan_init rb = { .kind = PLAN_INIT_RANDOM, .seed = 2, .scale = 0.02 };
	host_init_tensor(a.data, PLAN_DTYPE_F32, 1000, &ra);
	host_init_tensor(b.data, PLAN_DTYPE_F32, 1000, &rb);
	long equal = 0, outside = 0;
	for (int64_t i = 0; i < 1000; i++) {
		equal += at(&a, i) == at(&b, i);
		outside += !(at(&a, i) >= -(double)0.02f && at(&a, i) < (double)0.02f);
	}
	ok(equal < 3, "init random: seeds 1 and 2 differ (%ld of 1000 equal)", equal);
	is_int(outside, 0, "init random: values in [-scale, scale)");
	drop(&a);
	drop(&b);

	/* i32 saturation and NaN. */
	struct op_tensor t = T1(PLAN_DTYPE_I32, 3);
	struct plan_init big = { .kind = PLAN_INIT_CONST, .value = 1e10 };
	host_init_tensor(t.data, PLAN_DTYPE_I32, 3, &big);
	is_int(at_i32(&t, 2), INT32_MAX, "init i32: const 1e10 saturates");
	big.value = -1e10;
	host_init_tensor(t.data, PLAN_DTYPE_I32, 3, &big);
	is_int(at_i32(&t, 2), INT32_MIN, "init i32: const -1e10 saturates");
	big.value = NAN;
	host_init_tensor(t.data, PLAN_DTYPE_I32, 3, &big);
	is_int(at_i32(&t, 2), 0, "init i32: const NaN gives 0");
	drop(&t);

	/* ARANGE in f32, with (float)i * (float)scale rounded before the sum:
	 * 0.1 is not exact, so the expected values are built step by step. */
	struct op_tensor f = T1(PLAN_DTYPE_F32, 50);
	struct plan_init ar = { .kind = PLAN_INIT_ARANGE, .value = 1.0 / 3, .scale = 0.1 };
	host_init_tensor(f.data, PLAN_DTYPE_F32, 50, &ar);
	long wrong = 0;
	for (int i = 0; i < 50; i++) {
		float step = (float)((double)(float)i * (double)(float)0.1);
		float v = (float)((double)(float)(1.0 / 3) + (double)step);
		wrong += at(&f, i) != (double)v;
	}
	is_int(wrong, 0, "init arange: (float)value + (float)i * (float)scale, each rounded");
	drop(&f);
}

/* --- element-wise ------------------------------------------------------ */

static void test_fill(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor out = T2(dt, 3, 5);
		struct op_call c = call_new(0, 1);
		double *want = want_new(15);
		c.out[0] = out;
		c.attr[FILL_VALUE].f = -0.1;
		poison(&out);
		run(OP_FILL, &c);
		for (int i = 0; i < 15; i++)
			want[i] = -0.1;
		check(&out, want, dt_tol(dt), "fill %s: -0.1 everywhere", dt_name(dt));
		free(want);
		drop(&out);
	}
	struct op_tensor out = T1(PLAN_DTYPE_I32, 4);
	struct op_call c = call_new(0, 1);
	c.out[0] = out;
	c.attr[FILL_VALUE].f = -7.9;
	poison(&out);
	run(OP_FILL, &c);
	ok(at_i32(&out, 0) == -7 && at_i32(&out, 3) == -7, "fill i32: -7.9 gives -7");
	drop(&out);
}

static void test_copy(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		for (int l = 0; l < NFLOAT; l++) {
			int from = float_dtypes[k], to = float_dtypes[l];
			struct op_tensor x = T2(from, 4, 6), out = T3(to, 2, 2, 6);
			struct op_call c = call_new(1, 1);
			double want[24];
			fill_random(&x, 11, -3, 3);
			for (int i = 0; i < 24; i++)
				want[i] = at(&x, i);
			c.in[0] = x;
			c.out[0] = out;
			poison(&out);
			run(OP_COPY, &c);
			check(&out, want, dt_tol(to), "copy %s -> %s", dt_name(from), dt_name(to));
			drop(&x);
			drop(&out);
		}
	}

	/* f32 -> f16 -> f32 lands on the f16 values exactly. */
	struct op_tensor a = T1(PLAN_DTYPE_F32, 64), h = T1(PLAN_DTYPE_F16, 64);
	struct op_tensor b = T1(PLAN_DTYPE_F32, 64);
	struct op_call c = call_new(1, 1);
	fill_random(&a, 12, -1000, 1000);
	set(&a, 0, 1e6);                /* overflows f16 */
	c.in[0] = a;
	c.out[0] = h;
	poison(&h);
	run(OP_COPY, &c);
	c.in[0] = h;
	c.out[0] = b;
	poison(&b);
	run(OP_COPY, &c);
	long bad = 0;
	for (int i = 1; i < 64; i++) {
		double x = at(&a, i), y = at(&b, i);
		bad += !(fabs(y - x) <= ldexp(fabs(x), -11)) ||
		       y != bcg_f16_to_f32(bcg_f32_to_f16((float)x));
	}
	is_int(bad, 0, "copy f32 -> f16 -> f32 rounds each value to nearest f16");
	ok(isinf(at(&b, 0)), "copy f32 -> f16 -> f32: 1e6 becomes inf");
	drop(&a);
	drop(&h);
	drop(&b);

	/* i32 -> i32, and a float NaN payload survives a same-dtype copy. */
	struct op_tensor ia = T1(PLAN_DTYPE_I32, 5), ib = T1(PLAN_DTYPE_I32, 5);
	for (int i = 0; i < 5; i++)
		((int32_t *)ia.data)[i] = (i - 2) * 1000003;
	c.in[0] = ia;
	c.out[0] = ib;
	poison(&ib);
	run(OP_COPY, &c);
	ok(same_bytes(&ia, &ib), "copy i32 -> i32");
	drop(&ia);
	drop(&ib);
	struct op_tensor na = T1(PLAN_DTYPE_F16, 1), nb = T1(PLAN_DTYPE_F16, 1);
	*(uint16_t *)na.data = 0x7d23;  /* a signalling NaN with a payload */
	c.in[0] = na;
	c.out[0] = nb;
	run(OP_COPY, &c);
	is_int(*(uint16_t *)nb.data, 0x7d23, "copy f16 -> f16 copies the bytes");
	drop(&na);
	drop(&nb);
}

/* add and mul, with b the full shape or a trailing part of it. */
static void test_binary(enum op_id id, const char *name)
{
	const int64_t bshapes[3][3] = { { 3, 4, 5 }, { 4, 5, 0 }, { 5, 0, 0 } };
	const int branks[3] = { 3, 2, 1 };

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int s = 0; s < 3; s++) {
			struct op_tensor a = T3(dt, 3, 4, 5), out = T3(dt, 3, 4, 5);
			struct op_tensor b = tensor_new(dt, branks[s], bshapes[s]);
			struct op_call c = call_new(2, 1);
			int64_t nb = numel(&b);
			double want[60];
			fill_random(&a, 21, -4, 4);
			fill_random(&b, 22, -4, 4);
			for (int i = 0; i < 60; i++)
				want[i] = id == OP_ADD ? at(&a, i) + at(&b, i % nb)
				                       : at(&a, i) * at(&b, i % nb);
			c.in[0] = a;
			c.in[1] = b;
			c.out[0] = out;
			poison(&out);
			run(id, &c);
			check(&out, want, dt_tol(dt), "%s %s: [3,4,5] with b of rank %d",
			      name, dt_name(dt), branks[s]);
			drop(&a);
			drop(&b);
			drop(&out);
		}
	}
}

static void test_scale(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, 7, 3), out = T2(dt, 7, 3);
		struct op_call c = call_new(1, 1);
		double want[21];
		fill_random(&x, 31, -10, 10);
		for (int i = 0; i < 21; i++)
			want[i] = 0.37 * at(&x, i);
		c.in[0] = x;
		c.out[0] = out;
		c.attr[SCALE_ALPHA].f = 0.37;
		poison(&out);
		run(OP_SCALE, &c);
		check(&out, want, dt_tol(dt), "scale %s: by 0.37", dt_name(dt));
		drop(&x);
		drop(&out);
	}
}

static void test_silu_mul(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, 3, 16), out = T2(dt, 3, 8);
		struct op_call c = call_new(1, 1);
		double want[24];
		fill_random(&x, 41, -6, 6);
		for (int r = 0; r < 3; r++) {
			for (int j = 0; j < 8; j++) {
				double g = at(&x, r * 16 + j), u = at(&x, r * 16 + 8 + j);
				want[r * 8 + j] = g / (1 + exp(-g)) * u;
			}
		}
		c.in[0] = x;
		c.out[0] = out;
		poison(&out);
		run(OP_SILU_MUL, &c);
		check(&out, want, dt_tol(dt), "silu_mul %s: [3,16] -> [3,8]", dt_name(dt));
		drop(&x);
		drop(&out);
	}
}

static void test_gelu(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, 4, 9), out = T2(dt, 4, 9);
		struct op_call c = call_new(1, 1);
		double want[36];
		fill_random(&x, 51, -5, 5);
		for (int i = 0; i < 36; i++)
			want[i] = 0.5 * at(&x, i) * (1 + erf(at(&x, i) / sqrt(2.0)));
		c.in[0] = x;
		c.out[0] = out;
		poison(&out);
		run(OP_GELU, &c);
		check(&out, want, dt_tol(dt), "gelu %s: the erf form", dt_name(dt));
		drop(&x);
		drop(&out);
	}
}

/* --- matmul ------------------------------------------------------------ */

static void test_matmul(void)
{
	const int64_t sizes[2][3] = { { 5, 7, 6 }, { 3, 64, 9 } };       /* M, K, N */

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int z = 0; z < 2; z++) {
			int64_t M = sizes[z][0], K = sizes[z][1], N = sizes[z][2];
			for (int ta = 0; ta < 2; ta++) {
				for (int tb = 0; tb < 2; tb++) {
					struct op_tensor a = ta ? T2(dt, K, M) : T2(dt, M, K);
					struct op_tensor b = tb ? T2(dt, N, K) : T2(dt, K, N);
					struct op_tensor out = T2(dt, M, N);
					struct op_call c = call_new(2, 1);
					double *want = want_new(M * N);
					fill_random(&a, 61 + (uint64_t)z, -1, 1);
					fill_random(&b, 63 + (uint64_t)z, -1, 1);
					for (int64_t m = 0; m < M; m++) {
						for (int64_t n = 0; n < N; n++) {
							double s = 0;
							for (int64_t i = 0; i < K; i++) {
								double x = ta ? at(&a, i * M + m) : at(&a, m * K + i);
								double y = tb ? at(&b, n * K + i) : at(&b, i * N + n);
								s += x * y;
							}
							want[m * N + n] = s;
						}
					}
					c.in[0] = a;
					c.in[1] = b;
					c.out[0] = out;
					c.attr[MATMUL_TRANS_A].i = ta;
					c.attr[MATMUL_TRANS_B].i = tb;
					poison(&out);
					run(OP_MATMUL, &c);
					check(&out, want, dt_tol(dt),
					      "matmul %s: [%lld,%lld]x[%lld,%lld] trans_a %d trans_b %d",
					      dt_name(dt), (long long)M, (long long)K, (long long)K,
					      (long long)N, ta, tb);
					struct op_tensor direct = clone(&out);
					c.out[0] = direct;
					poison(&direct);
					host_matmul_run(&c, 0);
					ok(same_bytes(&out, &direct),
					   "matmul %s: the no-scratch path gives the same bytes (%d%d, K %lld)",
					   dt_name(dt), ta, tb, (long long)K);
					free(want);
					drop(&a);
					drop(&b);
					drop(&out);
					drop(&direct);
				}
			}
		}
	}

	/* A known product: [[1,2],[3,4]] @ [[5,6],[7,8]] = [[19,22],[43,50]]. */
	struct op_tensor a = T2(PLAN_DTYPE_F32, 2, 2), b = T2(PLAN_DTYPE_F32, 2, 2);
	struct op_tensor out = T2(PLAN_DTYPE_F32, 2, 2);
	struct op_call c = call_new(2, 1);
	const double want[4] = { 19, 22, 43, 50 }, want_tt[4] = { 23, 31, 34, 46 };
	for (int i = 0; i < 4; i++) {
		set(&a, i, i + 1);
		set(&b, i, i + 5);
	}
	c.in[0] = a;
	c.in[1] = b;
	c.out[0] = out;
	poison(&out);
	run(OP_MATMUL, &c);
	check(&out, want, 0, "matmul: a known 2x2 product");
	/* a^T b^T = (b a)^T, and b a = [[23,34],[31,46]]. */
	c.attr[MATMUL_TRANS_A].i = 1;
	c.attr[MATMUL_TRANS_B].i = 1;
	poison(&out);
	run(OP_MATMUL, &c);
	check(&out, want_tt, 0, "matmul: a known 2x2 product, both transposed");
	drop(&a);
	drop(&b);
	drop(&out);
}

/* --- normalizations ---------------------------------------------------- */

static void test_rmsnorm(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, 4, 32), w = T1(dt, 32), out = T2(dt, 4, 32);
		struct op_call c = call_new(2, 1);
		double want[128];
		fill_random(&x, 71, -3, 3);
		fill_random(&w, 72, 0.5, 1.5);
		for (int r = 0; r < 4; r++) {
			double ss = 0;
			for (int j = 0; j < 32; j++)
				ss += at(&x, r * 32 + j) * at(&x, r * 32 + j);
			double rms = sqrt(ss / 32 + 1e-6);
			for (int j = 0; j < 32; j++)
				want[r * 32 + j] = at(&x, r * 32 + j) / rms * at(&w, j);
		}
		c.in[0] = x;
		c.in[1] = w;
		c.out[0] = out;
		c.attr[NORM_EPS].f = 1e-6;
		poison(&out);
		run(OP_RMSNORM, &c);
		check(&out, want, dt_tol(dt), "rmsnorm %s: [4,32]", dt_name(dt));

		/* Constant rows c normalize to sign(c): the output is w or -w. */
		for (int r = 0; r < 4; r++) {
			double v = r % 2 ? 2.5 : -0.75;
			for (int j = 0; j < 32; j++) {
				set(&x, r * 32 + j, v);
				want[r * 32 + j] = v > 0 ? at(&w, j) : -at(&w, j);
			}
		}
		c.attr[NORM_EPS].f = 1e-12;
		poison(&out);
		run(OP_RMSNORM, &c);
		check(&out, want, dt_tol(dt), "rmsnorm %s: constant rows give w (or -w)",
		      dt_name(dt));
		drop(&x);
		drop(&w);
		drop(&out);
	}
}

static void test_layernorm(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, 3, 40), w = T1(dt, 40), b = T1(dt, 40);
		struct op_tensor out = T2(dt, 3, 40);
		struct op_call c = call_new(3, 1);
		double want[120];
		fill_random(&x, 81, -2, 6);
		fill_random(&w, 82, 0.5, 1.5);
		fill_random(&b, 83, -1, 1);
		for (int r = 0; r < 3; r++) {
			double mean = 0, var = 0;
			for (int j = 0; j < 40; j++)
				mean += at(&x, r * 40 + j) / 40;
			for (int j = 0; j < 40; j++)
				var += (at(&x, r * 40 + j) - mean) * (at(&x, r * 40 + j) - mean) / 40;
			for (int j = 0; j < 40; j++)
				want[r * 40 + j] = (at(&x, r * 40 + j) - mean) / sqrt(var + 1e-5) *
				                   at(&w, j) + at(&b, j);
		}
		c.in[0] = x;
		c.in[1] = w;
		c.in[2] = b;
		c.out[0] = out;
		c.attr[NORM_EPS].f = 1e-5;
		poison(&out);
		run(OP_LAYERNORM, &c);
		check(&out, want, dt_tol(dt), "layernorm %s: [3,40]", dt_name(dt));

		/* A constant row has no deviation: the output is b. */
		for (int r = 0; r < 3; r++)
			for (int j = 0; j < 40; j++) {
				set(&x, r * 40 + j, 1.75 * (r + 1));
				want[r * 40 + j] = at(&b, j);
			}
		poison(&out);
		run(OP_LAYERNORM, &c);
		check(&out, want, dt_tol(dt), "layernorm %s: constant rows give b", dt_name(dt));
		drop(&x);
		drop(&w);
		drop(&b);
		drop(&out);
	}
}

/* --- softmax, argmax --------------------------------------------------- */

static void test_softmax(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, 4, 11), out = T2(dt, 4, 11);
		struct op_call c = call_new(1, 1);
		double want[44];
		fill_random(&x, 91, -5, 5);
		set(&x, 0, 100);        /* exp(100) overflows f32 without the max */
		for (int r = 0; r < 4; r++) {
			double max = -INFINITY, sum = 0;
			for (int j = 0; j < 11; j++)
				max = fmax(max, at(&x, r * 11 + j));
			for (int j = 0; j < 11; j++)
				sum += exp(at(&x, r * 11 + j) - max);
			for (int j = 0; j < 11; j++)
				want[r * 11 + j] = exp(at(&x, r * 11 + j) - max) / sum;
		}
		c.in[0] = x;
		c.out[0] = out;
		poison(&out);
		run(OP_SOFTMAX, &c);
		check(&out, want, dt_tol(dt), "softmax %s: [4,11], one value 100", dt_name(dt));

		for (int i = 0; i < 44; i++) {
			set(&x, i, 3.5 - (i / 11));     /* each row constant */
			want[i] = 1.0 / 11;
		}
		poison(&out);
		run(OP_SOFTMAX, &c);
		check(&out, want, dt_tol(dt), "softmax %s: equal values give 1/11 each",
		      dt_name(dt));
		drop(&x);
		drop(&out);
	}
}

static void test_argmax(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, 5, 7), out = T1(PLAN_DTYPE_I32, 5);
		struct op_call c = call_new(1, 1);
		const double rows[5][7] = {
			{ 0, 1, 2, 3, 2, 1, 0 },
			{ 5, -1, 5, 5, 0, 0, 0 },            /* tie: the first */
			{ -9, -8, -7, -7, -9, -9, -8 },      /* tie at 2 and 3 */
			{ -1, -1, -1, -1, -1, -1, 4 },
			{ 2, 2, 2, 2, 2, 2, 2 },
		};
		const int32_t want[5] = { 3, 0, 2, 6, 0 };
		long bad = 0;
		for (int r = 0; r < 5; r++)
			for (int j = 0; j < 7; j++)
				set(&x, r * 7 + j, rows[r][j]);
		c.in[0] = x;
		c.out[0] = out;
		poison(&out);
		run(OP_ARGMAX, &c);
		for (int r = 0; r < 5; r++)
			bad += at_i32(&out, r) != want[r];
		is_int(bad, 0, "argmax %s: the largest, the first of ties", dt_name(dt));

		/* Random rows against a plain scan. */
		fill_random(&x, 101, -1, 1);
		poison(&out);
		run(OP_ARGMAX, &c);
		bad = 0;
		for (int r = 0; r < 5; r++) {
			int best = 0;
			for (int j = 1; j < 7; j++)
				if (at(&x, r * 7 + j) > at(&x, r * 7 + best))
					best = j;
			bad += at_i32(&out, r) != best;
		}
		is_int(bad, 0, "argmax %s: random rows", dt_name(dt));

		/* A NaN wins, the first one. */
		set(&x, 7 + 4, NAN);
		set(&x, 7 + 5, NAN);
		poison(&out);
		run(OP_ARGMAX, &c);
		is_int(at_i32(&out, 1), 4, "argmax %s: the first NaN wins", dt_name(dt));
		drop(&x);
		drop(&out);
	}
}

/* --- rope, embedding, kv_write ------------------------------------------ */

static struct op_call rope_call(struct op_tensor x, struct op_tensor pos, struct op_tensor out,
                                int64_t heads, int64_t head_dim, double theta)
{
	struct op_call c = call_new(2, 1);
	c.in[0] = x;
	c.in[1] = pos;
	c.out[0] = out;
	c.attr[ROPE_HEADS].i = heads;
	c.attr[ROPE_HEAD_DIM].i = head_dim;
	c.attr[ROPE_THETA].f = theta;
	return c;
}

static void test_rope(void)
{
	enum { T = 3, H = 2, D = 8, W = H * D };

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, T, W), out = T2(dt, T, W), pos = T1(PLAN_DTYPE_I32, T);
		struct op_call c = rope_call(x, pos, out, H, D, 10000);
		const int32_t p[T] = { 0, 5, 17 };
		double want[T * W];
		fill_random(&x, 111, -2, 2);
		memcpy(pos.data, p, sizeof p);
		for (int t = 0; t < T; t++) {
			for (int h = 0; h < H; h++) {
				for (int i = 0; i < D / 2; i++) {
					double a = p[t] * pow(10000.0, -2.0 * i / D);
					int base = t * W + h * D;
					double x1 = at(&x, base + i), x2 = at(&x, base + i + D / 2);
					want[base + i] = x1 * cos(a) - x2 * sin(a);
					want[base + i + D / 2] = x2 * cos(a) + x1 * sin(a);
				}
			}
		}
		poison(&out);
		run(OP_ROPE, &c);
		check(&out, want, dt_tol(dt), "rope %s: positions 0, 5, 17", dt_name(dt));
		ok(memcmp(out.data, x.data, W * dt_size(dt)) == 0,
		   "rope %s: position 0 is the identity, bit for bit", dt_name(dt));
		drop(&x);
		drop(&out);
		drop(&pos);
	}

	/* Known angles. head_dim 2: a = pos (radians); (1, 0) becomes
	 * (cos pos, sin pos). One head of head_dim 4, theta 100: the first pair
	 * turns by pos, the second by pos / 10, so position 5 turns (0, 1) by
	 * 0.5 to (-sin 0.5, cos 0.5). */
	struct op_tensor x = T2(PLAN_DTYPE_F32, 2, 4), out = T2(PLAN_DTYPE_F32, 2, 4);
	struct op_tensor pos = T1(PLAN_DTYPE_I32, 2);
	struct op_call c = rope_call(x, pos, out, 2, 2, 10000);
	const float xs[8] = { 1, 0, 0, 1, 1, 0, 3, 4 };
	memcpy(x.data, xs, sizeof xs);
	((int32_t *)pos.data)[0] = 1;
	((int32_t *)pos.data)[1] = -2;
	const double want2[8] = {
		cos(1.0), sin(1.0), -sin(1.0), cos(1.0),
		cos(-2.0), sin(-2.0), 3 * cos(-2.0) - 4 * sin(-2.0), 4 * cos(-2.0) + 3 * sin(-2.0),
	};
	poison(&out);
	run(OP_ROPE, &c);
	check(&out, want2, 1e-6, "rope: head_dim 2 turns by pos radians (1 and -2)");

	c = rope_call(x, pos, out, 1, 4, 100);
	const float ys[8] = { 1, 0, 0, 1, 2, 0, 0, 0 };
	memcpy(x.data, ys, sizeof ys);
	((int32_t *)pos.data)[0] = 5;
	const double want4[8] = {
		/* token 0: pair (x0, x2) = (1, 0) turns by 5; (x1, x3) = (0, 1) by 0.5 */
		cos(5.0), -sin(0.5), sin(5.0), cos(0.5),
		/* token 1, position -2: (2, 0) turns by -2; (0, 0) stays */
		2 * cos(-2.0), 0, 2 * sin(-2.0), 0,
	};
	poison(&out);
	run(OP_ROPE, &c);
	check(&out, want4, 1e-6, "rope: head_dim 4, theta 100: the second pair turns by pos/10");
	drop(&x);
	drop(&out);
	drop(&pos);
}

static void test_embedding(void)
{
	enum { V = 6, H = 5, T = 7 };

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor table = T2(dt, V, H), ids = T1(PLAN_DTYPE_I32, T);
		struct op_tensor out = T2(dt, T, H);
		struct op_call c = call_new(2, 1);
		const int32_t id[T] = { 3, 0, -1, 6, 5, 2, INT32_MIN };
		double want[T * H];
		fill_random(&table, 121, -1, 1);
		memcpy(ids.data, id, sizeof id);
		for (int t = 0; t < T; t++)
			for (int j = 0; j < H; j++)
				want[t * H + j] = id[t] >= 0 && id[t] < V ? at(&table, id[t] * H + j) : 0;
		c.in[0] = table;
		c.in[1] = ids;
		c.out[0] = out;
		poison(&out);
		run(OP_EMBEDDING, &c);
		check(&out, want, 0, "embedding %s: rows by id, zeros for -1, 6 and INT32_MIN",
		      dt_name(dt));
		drop(&table);
		drop(&ids);
		drop(&out);
	}
}

static void test_kv_write(void)
{
	enum { S = 6, W = 4, T = 5 };

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, T, W), pos = T1(PLAN_DTYPE_I32, T);
		struct op_tensor cache = T2(dt, S, W);
		struct op_call c = call_new(2, 1);
		const int32_t p[T] = { 2, 7, -1, 0, 6 };
		double want[S * W];
		fill_random(&x, 131, -1, 1);
		fill_random(&cache, 132, 10, 20);
		memcpy(pos.data, p, sizeof p);
		for (int i = 0; i < S * W; i++)
			want[i] = at(&cache, i);
		for (int j = 0; j < W; j++) {
			want[2 * W + j] = at(&x, 0 * W + j);
			want[0 * W + j] = at(&x, 3 * W + j);
		}
		c.in[0] = x;
		c.in[1] = pos;
		c.out[0] = cache;
		run(OP_KV_WRITE, &c);
		check(&cache, want, 0, "kv_write %s: rows 2 and 0 written, 7, -1, 6 skipped, "
		      "rows 1, 3, 4, 5 untouched", dt_name(dt));
		drop(&x);
		drop(&pos);
		drop(&cache);
	}

	/* A cache of another dtype than x converts. */
	struct op_tensor x = T2(PLAN_DTYPE_F32, 1, 3), pos = T1(PLAN_DTYPE_I32, 1);
	struct op_tensor cache = T2(PLAN_DTYPE_BF16, 2, 3);
	struct op_call c = call_new(2, 1);
	const double want[6] = { NAN, NAN, NAN, 1.0 / 3, 2, -0.1 };
	set(&x, 0, 1.0 / 3);
	set(&x, 1, 2);
	set(&x, 2, -0.1);
	((int32_t *)pos.data)[0] = 1;
	c.in[0] = x;
	c.in[1] = pos;
	c.out[0] = cache;
	for (int i = 0; i < 6; i++)
		set(&cache, i, i < 3 ? 7 : NAN);
	run(OP_KV_WRITE, &c);
	struct op_tensor row1 = cache;
	row1.rank = 1;
	row1.dim[0] = 3;
	row1.data = (uint16_t *)cache.data + 3;
	check(&row1, want + 3, dt_tol(PLAN_DTYPE_BF16), "kv_write: f32 rows into a bf16 cache");
	ok(at(&cache, 0) == 7 && at(&cache, 2) == 7, "kv_write: bf16 row 0 untouched");
	drop(&x);
	drop(&pos);
	drop(&cache);
}

/* --- attention --------------------------------------------------------- */

struct attn {
	int64_t T, S, heads, kv_heads, head_dim, kv_len;
	double scale;
};

static struct op_call attn_call(const struct attn *a, struct op_tensor q, struct op_tensor k,
                                struct op_tensor v, struct op_tensor out)
{
	struct op_call c = call_new(3, 1);
	c.in[0] = q;
	c.in[1] = k;
	c.in[2] = v;
	c.out[0] = out;
	c.attr[ATTN_HEADS].i = a->heads;
	c.attr[ATTN_KV_HEADS].i = a->kv_heads;
	c.attr[ATTN_HEAD_DIM].i = a->head_dim;
	c.attr[ATTN_KV_LEN].i = a->kv_len;
	c.attr[ATTN_SCALE].f = a->scale;
	return c;
}

/* op.h's definition, in double, straight from the stored inputs. */
static void attn_reference(const struct attn *a, const struct op_tensor *q,
                           const struct op_tensor *k, const struct op_tensor *v, double *out)
{
	int64_t D = a->head_dim, L = a->kv_len < 0 ? 0 : a->kv_len > a->S ? a->S : a->kv_len;
	double scale = a->scale != 0 ? a->scale : 1 / sqrt((double)D);
	double *s = want_new(L > 0 ? L : 1);

	for (int64_t t = 0; t < a->T; t++) {
		for (int64_t h = 0; h < a->heads; h++) {
			int64_t g = h / (a->heads / a->kv_heads);
			double *o = out + (t * a->heads + h) * D;
			double max = -INFINITY, sum = 0;
			for (int64_t j = 0; j < L; j++) {
				double dot = 0;
				for (int64_t d = 0; d < D; d++)
					dot += at(q, (t * a->heads + h) * D + d) *
					       at(k, (j * a->kv_heads + g) * D + d);
				s[j] = scale * dot;
				max = fmax(max, s[j]);
			}
			for (int64_t j = 0; j < L; j++)
				sum += exp(s[j] - max);
			for (int64_t d = 0; d < D; d++) {
				o[d] = 0;
				for (int64_t j = 0; j < L; j++)
					o[d] += exp(s[j] - max) / sum * at(v, (j * a->kv_heads + g) * D + d);
			}
		}
	}
	free(s);
}

/* Run A with random q, k, v of DT against the reference; also the
 * no-scratch path. */
static void attn_random(int dt, const struct attn *a, const char *what)
{
	struct op_tensor q = T2(dt, a->T, a->heads * a->head_dim);
	struct op_tensor k = T2(dt, a->S, a->kv_heads * a->head_dim);
	struct op_tensor v = T2(dt, a->S, a->kv_heads * a->head_dim);
	struct op_tensor out = T2(dt, a->T, a->heads * a->head_dim);
	struct op_call c = attn_call(a, q, k, v, out);
	double *want = want_new(numel(&out));

	fill_random(&q, 141, -2, 2);
	fill_random(&k, 142, -2, 2);
	fill_random(&v, 143, -3, 3);
	attn_reference(a, &q, &k, &v, want);
	poison(&out);
	run(OP_ATTENTION, &c);
	check(&out, want, dt_tol(dt), "attention %s: %s", dt_name(dt), what);

	struct op_tensor again = clone(&out);
	c.out[0] = again;
	poison(&again);
	host_attention_run(&c, 0);
	ok(same_bytes(&out, &again), "attention %s: %s: the no-scratch path gives the same bytes",
	   dt_name(dt), what);
	free(want);
	drop(&q);
	drop(&k);
	drop(&v);
	drop(&out);
	drop(&again);
}

static void test_attention(void)
{
	for (int n = 0; n < NFLOAT; n++) {
		int dt = float_dtypes[n];
		const struct attn mha = { .T = 3, .S = 10, .heads = 2, .kv_heads = 2, .head_dim = 8,
		                          .kv_len = 7 };
		const struct attn gqa = { .T = 2, .S = 9, .heads = 4, .kv_heads = 2, .head_dim = 16,
		                          .kv_len = 9, .scale = 0.2 };
		const struct attn mqa = { .T = 1, .S = 5, .heads = 3, .kv_heads = 1, .head_dim = 4,
		                          .kv_len = 3 };
		attn_random(dt, &mha, "heads 2, kv_len 7 of 10, default scale");
		attn_random(dt, &gqa, "heads 4 on kv_heads 2, kv_len = S, scale 0.2");
		attn_random(dt, &mqa, "heads 3 on one kv head");
	}

	/* Analytic cases in f32 (and f16 for the clamp). */
	enum { T = 2, S = 5, HEADS = 4, KVH = 2, D = 3 };
	struct attn a = { .T = T, .S = S, .heads = HEADS, .kv_heads = KVH, .head_dim = D };
	struct op_tensor q = T2(PLAN_DTYPE_F32, T, HEADS * D);
	struct op_tensor k = T2(PLAN_DTYPE_F32, S, KVH * D), v = T2(PLAN_DTYPE_F32, S, KVH * D);
	struct op_tensor out = T2(PLAN_DTYPE_F32, T, HEADS * D);
	double want[T * HEADS * D];
	fill_random(&q, 151, -2, 2);
	fill_random(&k, 152, -2, 2);
	/* v[j, g, d] = 100 g + 10 j + d: which row and head was read shows. */
	for (int j = 0; j < S; j++)
		for (int g = 0; g < KVH; g++)
			for (int d = 0; d < D; d++)
				set(&v, (j * KVH + g) * D + d, 100 * g + 10 * j + d);

	/* kv_len 1: each head returns value row 0 of its kv head; heads 0 and
	 * 1 read kv head 0, heads 2 and 3 kv head 1. */
	a.kv_len = 1;
	struct op_call c = attn_call(&a, q, k, v, out);
	for (int t = 0; t < T; t++)
		for (int h = 0; h < HEADS; h++)
			for (int d = 0; d < D; d++)
				want[(t * HEADS + h) * D + d] = 100 * (h / 2) + d;
	poison(&out);
	run(OP_ATTENTION, &c);
	check(&out, want, 1e-6, "attention: kv_len 1 returns value row 0 of kv head h / 2");

	/* Identical keys: uniform weights, the mean of the first L values. */
	for (int j = 0; j < S; j++)
		for (int i = 0; i < KVH * D; i++)
			set(&k, j * KVH * D + i, at(&k, i));
	a.kv_len = 4;
	c = attn_call(&a, q, k, v, out);
	for (int t = 0; t < T; t++)
		for (int h = 0; h < HEADS; h++)
			for (int d = 0; d < D; d++)   /* mean of 10 j over j < 4 = 15 */
				want[(t * HEADS + h) * D + d] = 100 * (h / 2) + 15 + d;
	poison(&out);
	run(OP_ATTENTION, &c);
	check(&out, want, 1e-6, "attention: identical keys give the mean of the values");

	/* kv_len past S reads S rows, no more: the buffers are exact. */
	a.kv_len = 1000;
	c = attn_call(&a, q, k, v, out);
	for (int t = 0; t < T; t++)
		for (int h = 0; h < HEADS; h++)
			for (int d = 0; d < D; d++)   /* mean of 10 j over j < 5 = 20 */
				want[(t * HEADS + h) * D + d] = 100 * (h / 2) + 20 + d;
	poison(&out);
	run(OP_ATTENTION, &c);
	check(&out, want, 1e-6, "attention: kv_len 1000 is clamped to S = 5");
	struct op_tensor at_s = clone(&out);
	a.kv_len = S;
	c = attn_call(&a, q, k, v, out);
	poison(&out);
	run(OP_ATTENTION, &c);
	ok(same_bytes(&out, &at_s), "attention: kv_len 1000 gives kv_len S's bytes");
	drop(&at_s);

	/* kv_len 0 and below: zeros. */
	for (int i = 0; i < T * HEADS * D; i++)
		want[i] = 0;
	const int64_t empty[2] = { 0, -3 };
	for (int e = 0; e < 2; e++) {
		a.kv_len = empty[e];
		c = attn_call(&a, q, k, v, out);
		poison(&out);
		run(OP_ATTENTION, &c);
		check(&out, want, 0, "attention: kv_len %lld gives zeros", (long long)empty[e]);
	}
	drop(&q);
	drop(&k);
	drop(&v);
	drop(&out);

	/* One key that dominates: the output is its value row. Its score, 200,
	 * overflows exp in f32 unless the largest score is subtracted first. */
	struct attn b = { .T = 1, .S = 3, .heads = 1, .kv_heads = 1, .head_dim = 2, .kv_len = 3,
	                  .scale = 5 };
	q = T2(PLAN_DTYPE_F16, 1, 2);
	k = T2(PLAN_DTYPE_F16, 3, 2);
	v = T2(PLAN_DTYPE_F16, 3, 2);
	out = T2(PLAN_DTYPE_F16, 1, 2);
	const double qs[2] = { 1, 0 }, ks[6] = { 0, 0, 40, 0, 0, 0 }, vs[6] = { 1, 2, 3, 4, 5, 6 };
	for (int i = 0; i < 6; i++) {
		if (i < 2)
			set(&q, i, qs[i]);
		set(&k, i, ks[i]);
		set(&v, i, vs[i]);
	}
	c = attn_call(&b, q, k, v, out);
	poison(&out);
	run(OP_ATTENTION, &c);
	const double dominant[2] = { 3, 4 };
	check(&out, dominant, 1e-3, "attention f16: a key scoring 200 above the rest wins");
	/* Scores -200, -190, -200: exp underflows unless the largest is
	 * subtracted; the weights are then 1 : e^10 : 1. */
	const double low[3] = { -40, -38, -40 };
	for (int j = 0; j < 3; j++)
		set(&k, 2 * j, low[j]);
	attn_reference(&b, &q, &k, &v, want);
	poison(&out);
	run(OP_ATTENTION, &c);
	check(&out, want, dt_tol(PLAN_DTYPE_F16), "attention f16: scores near -200 do not underflow");
	drop(&q);
	drop(&k);
	drop(&v);
	drop(&out);
}

/* --- in place ----------------------------------------------------------- */

/* Run C out of place, then again with out[0] = in[0] on a copy of in[0]:
 * the bytes must agree. */
static void inplace_check(enum op_id id, struct op_call c, const char *what)
{
	struct op_tensor x = c.in[0];
	struct op_tensor out = clone(&x), self = clone(&x);

	c.out[0] = out;
	poison(&out);
	run(id, &c);
	c.in[0] = self;
	c.out[0] = self;
	run(id, &c);
	ok(same_bytes(&out, &self), "%s %s: in place gives the same bytes", what,
	   dt_name(x.dtype));
	drop(&out);
	drop(&self);
}

static void test_inplace(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, 3, 16), b = T1(dt, 16), b2 = T1(dt, 16);
		struct op_tensor pos = T1(PLAN_DTYPE_I32, 3);
		struct op_call c = call_new(1, 1);
		fill_random(&x, 161, -3, 3);
		fill_random(&b, 162, 0.5, 2);
		fill_random(&b2, 163, -1, 1);
		for (int t = 0; t < 3; t++)
			((int32_t *)pos.data)[t] = 3 * t + 1;

		c.in[0] = x;
		inplace_check(OP_COPY, c, "copy");
		inplace_check(OP_GELU, c, "gelu");
		inplace_check(OP_SOFTMAX, c, "softmax");
		c.attr[SCALE_ALPHA].f = -1.5;
		inplace_check(OP_SCALE, c, "scale");

		c = call_new(2, 1);
		c.in[0] = x;
		c.in[1] = b;
		inplace_check(OP_ADD, c, "add");
		inplace_check(OP_MUL, c, "mul");
		c.attr[NORM_EPS].f = 1e-6;
		inplace_check(OP_RMSNORM, c, "rmsnorm");

		c = call_new(3, 1);
		c.in[0] = x;
		c.in[1] = b;
		c.in[2] = b2;
		c.attr[NORM_EPS].f = 1e-5;
		inplace_check(OP_LAYERNORM, c, "layernorm");

		c = rope_call(x, pos, x, 2, 8, 10000);
		inplace_check(OP_ROPE, c, "rope");
		drop(&x);
		drop(&b);
		drop(&b2);
		drop(&pos);
	}
}

/* --- implementations ---------------------------------------------------- */

static void test_impls(void)
{
	int bad = 0;

	for (int id = 0; id < OP_COUNT; id++) {
		int n = host_impl_count((enum op_id)id);
		int product = id == OP_MATMUL || id == OP_MATMUL_ADD || id == OP_MATMUL_SILU_MUL ||
		              id == OP_RMSNORM_MATMUL || id == OP_RMSNORM_MATMUL_ROPE_KV_WRITE ||
		              id == OP_DECODER_LAYER || id == OP_RMSNORM_MATMUL_ARGMAX;
		if (n != (product ? 2 : 1) ||
		    host_impl_kernel((enum op_id)id, 0) != host_kernel((enum op_id)id) ||
		    strcmp(host_impl_name((enum op_id)id, 0), "reference") != 0 ||
		    (product && (strcmp(host_impl_name((enum op_id)id, 1), "blocked") != 0 ||
		                 host_impl_kernel((enum op_id)id, 1) == NULL)) ||
		    host_impl_name((enum op_id)id, n) != NULL ||
		    host_impl_kernel((enum op_id)id, n) != NULL ||
		    host_impl_name((enum op_id)id, -1) != NULL)
			bad++;
	}
	is_int(bad, 0, "every kind has \"reference\" (its host_kernel); the products, and the "
	       "kinds that run them, also \"blocked\"");
	ok(host_impl_count(OP_COUNT) == 0 && host_impl_name(OP_COUNT, 0) == NULL &&
	   host_impl_kernel(OP_COUNT, 0) == NULL, "no implementation past the last kind");
}

/* --- fused kinds against double ----------------------------------------- */

/* V rounded to DT, as an intermediate stored in a tensor of DT. */
static double round_dt(int dt, double v)
{
	uint32_t buf = 0;
	struct op_tensor t = { .dtype = dt, .rank = 1, .dim = { 1 }, .data = &buf };

	set(&t, 0, v);
	return at(&t, 0);
}

static double silu(double g)
{
	return g / (1 + exp(-g));
}

static void test_add_rmsnorm(void)
{
	enum { R = 3, C = 40 };

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, R, C), r = T2(dt, R, C), w = T1(dt, C);
		struct op_tensor sum = T2(dt, R, C), out = T2(dt, R, C);
		struct op_call c = call_new(3, 2);
		double want_sum[R * C], want[R * C];
		fill_random(&x, 171, -3, 3);
		fill_random(&r, 172, -2, 2);
		fill_random(&w, 173, 0.5, 1.5);
		for (int i = 0; i < R; i++) {
			double ss = 0, s[C];
			for (int j = 0; j < C; j++) {
				want_sum[i * C + j] = at(&x, i * C + j) + at(&r, i * C + j);
				s[j] = round_dt(dt, want_sum[i * C + j]);
				ss += s[j] * s[j];
			}
			double rms = sqrt(ss / C + 1e-5);
			for (int j = 0; j < C; j++)
				want[i * C + j] = s[j] / rms * at(&w, j);
		}
		c.in[0] = x;
		c.in[1] = r;
		c.in[2] = w;
		c.out[0] = sum;
		c.out[1] = out;
		c.attr[NORM_EPS].f = 1e-5;
		poison(&sum);
		poison(&out);
		run(OP_ADD_RMSNORM, &c);
		check(&sum, want_sum, dt_tol(dt), "add_rmsnorm %s: sum = x + r", dt_name(dt));
		check(&out, want, dt_tol(dt), "add_rmsnorm %s: out = rmsnorm of the stored sum",
		      dt_name(dt));
		drop(&x);
		drop(&r);
		drop(&w);
		drop(&sum);
		drop(&out);
	}
}

/* The product op(a) @ op(b) in double, element (m, n). */
static double dot_double(const struct op_tensor *a, const struct op_tensor *b, int ta, int tb,
                         int64_t M, int64_t K, int64_t N, int64_t m, int64_t n)
{
	double s = 0;
	for (int64_t i = 0; i < K; i++) {
		double x = ta ? at(a, i * M + m) : at(a, m * K + i);
		double y = tb ? at(b, n * K + i) : at(b, i * N + n);
		s += x * y;
	}
	return s;
}

static void test_matmul_add(void)
{
	const int64_t M = 3, K = 37, N = 11;

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int tb = 0; tb < 2; tb++) {
			struct op_tensor x = T2(dt, M, N), a = T2(dt, M, K);
			struct op_tensor b = tb ? T2(dt, N, K) : T2(dt, K, N), out = T2(dt, M, N);
			struct op_call c = call_new(3, 1);
			double *want = want_new(M * N);
			fill_random(&x, 181, -4, 4);
			fill_random(&a, 182, -1, 1);
			fill_random(&b, 183, -1, 1);
			for (int64_t m = 0; m < M; m++)
				for (int64_t n = 0; n < N; n++)
					want[m * N + n] = at(&x, m * N + n) +
						round_dt(dt, dot_double(&a, &b, 0, tb, M, K, N, m, n));
			c.in[0] = x;
			c.in[1] = a;
			c.in[2] = b;
			c.out[0] = out;
			c.attr[MATMUL_TRANS_B].i = tb;
			poison(&out);
			run(OP_MATMUL_ADD, &c);
			check(&out, want, dt_tol(dt), "matmul_add %s: x + [3,37] @ b, trans_b %d",
			      dt_name(dt), tb);
			free(want);
			drop(&x);
			drop(&a);
			drop(&b);
			drop(&out);
		}
	}
}

static void test_matmul_silu_mul(void)
{
	const int64_t M = 2, K = 29, N = 14, H = N / 2;

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int tb = 0; tb < 2; tb++) {
			struct op_tensor a = T2(dt, M, K), b = tb ? T2(dt, N, K) : T2(dt, K, N);
			struct op_tensor out = T2(dt, M, H);
			struct op_call c = call_new(2, 1);
			double *want = want_new(M * H);
			fill_random(&a, 191, -1, 1);
			fill_random(&b, 192, -1, 1);
			for (int64_t m = 0; m < M; m++) {
				for (int64_t j = 0; j < H; j++) {
					double g = round_dt(dt, dot_double(&a, &b, 0, tb, M, K, N, m, j));
					double u = round_dt(dt, dot_double(&a, &b, 0, tb, M, K, N, m, H + j));
					want[m * H + j] = silu(g) * u;
				}
			}
			c.in[0] = a;
			c.in[1] = b;
			c.out[0] = out;
			c.attr[MATMUL_TRANS_B].i = tb;
			poison(&out);
			run(OP_MATMUL_SILU_MUL, &c);
			check(&out, want, dt_tol(dt), "matmul_silu_mul %s: [2,29] @ b [29,14], trans_b %d",
			      dt_name(dt), tb);
			free(want);
			drop(&a);
			drop(&b);
			drop(&out);
		}
	}
}

/* Rope of element pair (x1, x2) of head position I, at position P. */
static void rope_double(double x1, double x2, int64_t i, int64_t hd, double theta, int32_t p,
                        double *y1, double *y2)
{
	double a = p * pow(theta, -2.0 * (double)i / (double)hd);
	*y1 = x1 * cos(a) - x2 * sin(a);
	*y2 = x2 * cos(a) + x1 * sin(a);
}

static void test_rope_kv_write(void)
{
	enum { T = 4, NH = 4, KVH = 2, HD = 8, S = 6 };
	enum { QW = NH * HD, KW = KVH * HD, C = QW + 2 * KW };
	const int32_t p[T] = { 3, -1, 0, 6 };          /* -1 and 6 are outside the caches */

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor qkv = T2(dt, T, C), pos = T1(PLAN_DTYPE_I32, T);
		struct op_tensor q = T2(dt, T, QW), kc = T2(dt, S, KW), vc = T2(dt, S, KW);
		struct op_call c = call_new(2, 3);
		double want_q[T * QW], want_k[S * KW], want_v[S * KW];
		fill_random(&qkv, 201, -2, 2);
		fill_random(&kc, 202, 10, 20);
		fill_random(&vc, 203, 30, 40);
		memcpy(pos.data, p, sizeof p);
		for (int i = 0; i < S * KW; i++) {
			want_k[i] = at(&kc, i);
			want_v[i] = at(&vc, i);
		}
		for (int t = 0; t < T; t++) {
			int in_cache = p[t] >= 0 && p[t] < S;
			for (int h = 0; h < NH; h++)
				for (int i = 0; i < HD / 2; i++)
					rope_double(at(&qkv, t * C + h * HD + i),
					            at(&qkv, t * C + h * HD + i + HD / 2), i, HD, 500000, p[t],
					            &want_q[t * QW + h * HD + i],
					            &want_q[t * QW + h * HD + i + HD / 2]);
			if (!in_cache)
				continue;
			for (int h = 0; h < KVH; h++)
				for (int i = 0; i < HD / 2; i++)
					rope_double(at(&qkv, t * C + QW + h * HD + i),
					            at(&qkv, t * C + QW + h * HD + i + HD / 2), i, HD, 500000,
					            p[t], &want_k[p[t] * KW + h * HD + i],
					            &want_k[p[t] * KW + h * HD + i + HD / 2]);
			for (int j = 0; j < KW; j++)
				want_v[p[t] * KW + j] = at(&qkv, t * C + QW + KW + j);
		}
		c.in[0] = qkv;
		c.in[1] = pos;
		c.out[0] = q;
		c.out[1] = kc;
		c.out[2] = vc;
		c.attr[RKV_HEADS].i = NH;
		c.attr[RKV_KV_HEADS].i = KVH;
		c.attr[RKV_HEAD_DIM].i = HD;
		c.attr[RKV_THETA].f = 500000;
		poison(&q);
		run(OP_ROPE_KV_WRITE, &c);
		check(&q, want_q, dt_tol(dt), "rope_kv_write %s: q is rope of the q part", dt_name(dt));
		check(&kc, want_k, dt_tol(dt), "rope_kv_write %s: rope of k in rows 3 and 0, "
		      "positions -1 and 6 skipped, other rows untouched", dt_name(dt));
		check(&vc, want_v, 0, "rope_kv_write %s: v copied exactly into rows 3 and 0, "
		      "other rows untouched", dt_name(dt));
		drop(&qkv);
		drop(&pos);
		drop(&q);
		drop(&kc);
		drop(&vc);
	}
}

static void test_slice(void)
{
	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T3(dt, 2, 3, 10), out = T3(dt, 2, 3, 4);
		struct op_call c = call_new(1, 1);
		double want[24];
		fill_random(&x, 211, -5, 5);
		for (int r = 0; r < 6; r++)
			for (int j = 0; j < 4; j++)
				want[r * 4 + j] = at(&x, r * 10 + 5 + j);
		c.in[0] = x;
		c.out[0] = out;
		c.attr[SLICE_START].i = 5;
		poison(&out);
		run(OP_SLICE, &c);
		check(&out, want, 0, "slice %s: columns 5 to 8 of [2,3,10], exactly", dt_name(dt));
		drop(&x);
		drop(&out);
	}
}

/* --- fused == unfused, bit for bit --------------------------------------- */

/* A dim from 1 to HI, from the tests' generator. */
static int64_t rnd_dim(uint64_t *s, int64_t hi)
{
	int64_t v = 1 + (int64_t)rnd(s, 0, (double)hi);
	return v > hi ? hi : v;
}

static void test_fused_add_rmsnorm_bits(void)
{
	uint64_t s = 221;

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int round = 0; round < 4; round++) {
			int64_t R = rnd_dim(&s, 6), C = rnd_dim(&s, 300);
			struct op_tensor x = T2(dt, R, C), r = T2(dt, R, C), w = T1(dt, C);
			struct op_tensor sum = T2(dt, R, C), out = T2(dt, R, C);
			struct op_tensor sum2 = T2(dt, R, C), out2 = T2(dt, R, C);
			struct op_call c = call_new(3, 2), add = call_new(2, 1), norm = call_new(2, 1);
			fill_random(&x, 222 + (uint64_t)round, -8, 8);
			fill_random(&r, 223 + (uint64_t)round, -8, 8);
			fill_random(&w, 224 + (uint64_t)round, -2, 2);
			c.in[0] = x;
			c.in[1] = r;
			c.in[2] = w;
			c.out[0] = sum;
			c.out[1] = out;
			c.attr[NORM_EPS].f = 1e-5;
			run(OP_ADD_RMSNORM, &c);
			add.in[0] = x;
			add.in[1] = r;
			add.out[0] = sum2;
			run(OP_ADD, &add);
			norm.in[0] = sum2;
			norm.in[1] = w;
			norm.out[0] = out2;
			norm.attr[NORM_EPS].f = 1e-5;
			run(OP_RMSNORM, &norm);
			ok(same_bytes(&sum, &sum2) && same_bytes(&out, &out2),
			   "add_rmsnorm %s [%lld,%lld] is add then rmsnorm, bit for bit", dt_name(dt),
			   (long long)R, (long long)C);

			/* In place: sum is x. */
			struct op_tensor self = clone(&x);
			c.in[0] = self;
			c.out[0] = self;
			poison(&out);
			run(OP_ADD_RMSNORM, &c);
			ok(same_bytes(&self, &sum2) && same_bytes(&out, &out2),
			   "add_rmsnorm %s [%lld,%lld]: sum in place of x gives the same bytes",
			   dt_name(dt), (long long)R, (long long)C);
			drop(&self);
			drop(&x);
			drop(&r);
			drop(&w);
			drop(&sum);
			drop(&out);
			drop(&sum2);
			drop(&out2);
		}
	}
}

/* Operands of a random product [M, K] @ [K, N] with trans_a TA, trans_b
 * TB, in CALL's inputs FIRST and FIRST + 1. */
static void product_operands(struct op_call *c, int first, int dt, int64_t M, int64_t K,
                             int64_t N, int ta, int tb, uint64_t seed)
{
	c->in[first] = ta ? T2(dt, K, M) : T2(dt, M, K);
	c->in[first + 1] = tb ? T2(dt, N, K) : T2(dt, K, N);
	fill_random(&c->in[first], seed, -1, 1);
	fill_random(&c->in[first + 1], seed + 1, -1, 1);
	c->attr[MATMUL_TRANS_A].i = ta;
	c->attr[MATMUL_TRANS_B].i = tb;
}

static void test_fused_products_bits(void)
{
	uint64_t s = 231;

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int round = 0; round < 4; round++) {
			int64_t M = rnd_dim(&s, 9), K = rnd_dim(&s, 200), N = 2 * rnd_dim(&s, 90);
			int ta = round & 1, tb = (round >> 1) & 1;
			struct op_call mm = call_new(2, 1), fused = call_new(3, 1), add = call_new(2, 1);
			struct op_call sm = call_new(1, 1);
			struct op_tensor p = T2(dt, M, N), x = T2(dt, M, N);
			struct op_tensor out = T2(dt, M, N), out2 = T2(dt, M, N);
			struct op_tensor act = T2(dt, M, N / 2), act2 = T2(dt, M, N / 2);

			product_operands(&mm, 0, dt, M, K, N, ta, tb, 232 + (uint64_t)round);
			fill_random(&x, 233 + (uint64_t)round, -4, 4);
			mm.out[0] = p;
			run(OP_MATMUL, &mm);

			/* matmul_add against matmul then add (x + p). */
			fused.in[0] = x;
			fused.in[1] = mm.in[0];
			fused.in[2] = mm.in[1];
			fused.out[0] = out;
			fused.attr[MATMUL_TRANS_A].i = ta;
			fused.attr[MATMUL_TRANS_B].i = tb;
			run(OP_MATMUL_ADD, &fused);
			add.in[0] = x;
			add.in[1] = p;
			add.out[0] = out2;
			run(OP_ADD, &add);
			ok(same_bytes(&out, &out2), "matmul_add %s [%lld,%lld]@[%lld,%lld] (%d%d) is "
			   "matmul then add, bit for bit", dt_name(dt), (long long)M, (long long)K,
			   (long long)K, (long long)N, ta, tb);
			struct op_tensor self = clone(&x);
			fused.in[0] = self;
			fused.out[0] = self;
			run(OP_MATMUL_ADD, &fused);
			ok(same_bytes(&self, &out2), "matmul_add %s: out in place of x gives the same "
			   "bytes", dt_name(dt));
			drop(&self);

			/* matmul_silu_mul against matmul then silu_mul. */
			mm.out[0] = act;
			run(OP_MATMUL_SILU_MUL, &mm);
			sm.in[0] = p;
			sm.out[0] = act2;
			run(OP_SILU_MUL, &sm);
			ok(same_bytes(&act, &act2), "matmul_silu_mul %s [%lld,%lld]@[%lld,%lld] (%d%d) "
			   "is matmul then silu_mul, bit for bit", dt_name(dt), (long long)M,
			   (long long)K, (long long)K, (long long)N, ta, tb);
			drop(&mm.in[0]);
			drop(&mm.in[1]);
			drop(&p);
			drop(&x);
			drop(&out);
			drop(&out2);
			drop(&act);
			drop(&act2);
		}
	}
}

/* rmsnorm_matmul (x, w, b): against rmsnorm into h, then matmul or
 * matmul_silu_mul on h, bit for bit, in each of its forms (reference,
 * blocked, without scratch); and against double. */
static void test_fused_rmsnorm_matmul_bits(void)
{
	uint64_t s = 271;
	const float eps = 1e-5f;

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int round = 0; round < 8; round++) {
			int64_t M = round == 0 ? 1 : rnd_dim(&s, 9), K = rnd_dim(&s, 300);
			int64_t N = 2 * rnd_dim(&s, 80);
			int tb = round & 1, silu_epi = (round >> 1) & 1;
			int64_t W = silu_epi ? N / 2 : N;
			struct op_call norm = call_new(2, 1), prod = call_new(2, 1), fused = call_new(3, 1);
			struct op_tensor x = T2(dt, M, K), w = T1(dt, K), h = T2(dt, M, K);
			struct op_tensor b = tb ? T2(dt, N, K) : T2(dt, K, N);
			struct op_tensor want = T2(dt, M, W), out = T2(dt, M, W);
			double *dbl = want_new(M * W);
			const char *epi = silu_epi ? "silu_mul" : "none";

			fill_random(&x, 272 + (uint64_t)round, -3, 3);
			fill_random(&w, 273 + (uint64_t)round, 0.5, 1.5);
			fill_random(&b, 274 + (uint64_t)round, -1, 1);
			norm.in[0] = x;
			norm.in[1] = w;
			norm.out[0] = h;
			norm.attr[NORM_EPS].f = eps;
			run(OP_RMSNORM, &norm);
			prod.in[0] = h;
			prod.in[1] = b;
			prod.out[0] = want;
			prod.attr[MATMUL_TRANS_B].i = tb;
			run(silu_epi ? OP_MATMUL_SILU_MUL : OP_MATMUL, &prod);

			fused.in[0] = x;
			fused.in[1] = w;
			fused.in[2] = b;
			fused.out[0] = out;
			fused.attr[RNM_EPS].f = eps;
			fused.attr[RNM_TRANS_B].i = tb;
			fused.attr[RNM_EPILOGUE].i = silu_epi ? RNM_EPI_SILU_MUL : RNM_EPI_NONE;
			for (int form = 0; form < 3; form++) {
				poison(&out);
				if (form == 0)
					run(OP_RMSNORM_MATMUL, &fused);
				else if (form == 1)
					host_impl_kernel(OP_RMSNORM_MATMUL, 1)(&fused);
				else
					host_rmsnorm_matmul_run(&fused, 0, 0);
				ok(same_bytes(&out, &want), "rmsnorm_matmul %s %s [%lld,%lld]@[%lld,%lld] "
				   "trans_b %d (%s) is rmsnorm then %s, bit for bit", dt_name(dt), epi,
				   (long long)M, (long long)K, (long long)K, (long long)N, tb,
				   form == 0 ? "reference" : form == 1 ? "blocked" : "no scratch",
				   silu_epi ? "matmul_silu_mul" : "matmul");
			}

			/* double: h rounded as stored, the product in double, the
			 * epilogue on the rounded product */
			for (int64_t m = 0; m < M; m++) {
				double ss = 0;
				for (int64_t i = 0; i < K; i++)
					ss += at(&x, m * K + i) * at(&x, m * K + i);
				double rms = sqrt(ss / (double)K + eps);
				for (int64_t j = 0; j < W; j++) {
					double p[2] = { 0, 0 };
					for (int hh = 0; hh < (silu_epi ? 2 : 1); hh++) {
						int64_t n = j + hh * W;
						for (int64_t i = 0; i < K; i++) {
							double hv = round_dt(dt, at(&x, m * K + i) / rms * at(&w, i));
							p[hh] += hv * (tb ? at(&b, n * K + i) : at(&b, i * N + n));
						}
					}
					dbl[m * W + j] = silu_epi ? silu(round_dt(dt, p[0])) * round_dt(dt, p[1])
					                          : p[0];
				}
			}
			/* h itself may differ by an ulp of dt from double's h, and the
			 * f32 sums of up to 300 terms of up to 4.5 reach about 1e-5 of
			 * their absolute sum; silu_mul multiplies the gate's error by
			 * the up value */
			check(&out, dbl, dt == PLAN_DTYPE_F32 ? 5e-4 : 4 * dt_tol(dt),
			      "rmsnorm_matmul %s %s [%lld,%lld] trans_b %d against double", dt_name(dt),
			      epi, (long long)M, (long long)K, tb);
			free(dbl);
			drop(&x);
			drop(&w);
			drop(&h);
			drop(&b);
			drop(&want);
			drop(&out);
		}
	}

	/* A hand case: x = [3, 4] (mean of squares 12.5), w = [1, 2], eps 0:
	 * h = [3, 8] / sqrt(12.5) = [0.848528, 2.262742]; b^T rows [1, 0],
	 * [0, 1], [1, 1] give h0, h1, h0 + h1. */
	struct op_call c = call_new(3, 1);
	struct op_tensor x = T2(PLAN_DTYPE_F32, 1, 2), w = T1(PLAN_DTYPE_F32, 2);
	struct op_tensor b = T2(PLAN_DTYPE_F32, 3, 2), out = T2(PLAN_DTYPE_F32, 1, 3);
	const double bv[6] = { 1, 0, 0, 1, 1, 1 };
	const double want[3] = { 3 / sqrt(12.5), 8 / sqrt(12.5), 11 / sqrt(12.5) };
	set(&x, 0, 3);
	set(&x, 1, 4);
	set(&w, 0, 1);
	set(&w, 1, 2);
	for (int i = 0; i < 6; i++)
		set(&b, i, bv[i]);
	c.in[0] = x;
	c.in[1] = w;
	c.in[2] = b;
	c.out[0] = out;
	c.attr[RNM_EPS].f = 0;
	c.attr[RNM_TRANS_B].i = 1;
	run(OP_RMSNORM_MATMUL, &c);
	check(&out, want, 1e-6, "rmsnorm_matmul: [3, 4] normed with [1, 2] through [[1,0],[0,1],[1,1]]");
	drop(&x);
	drop(&w);
	drop(&b);
	drop(&out);
}

/* rmsnorm_matmul_argmax (x, w, b) -> out, index: out bit for bit
 * rmsnorm_matmul's (epilogue none), index argmax's on it, in both forms;
 * and a hand case whose winner ties. */
static void test_fused_rmsnorm_matmul_argmax(void)
{
	uint64_t s = 911;
	const float eps = 1e-5f;

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int round = 0; round < 6; round++) {
			int64_t M = round == 0 ? 1 : rnd_dim(&s, 5), K = rnd_dim(&s, 200);
			int64_t N = rnd_dim(&s, 300);
			int tb = round & 1;
			struct op_call rnm = call_new(3, 1), am = call_new(1, 1), fused = call_new(3, 2);
			struct op_tensor x = T2(dt, M, K), w = T1(dt, K);
			struct op_tensor b = tb ? T2(dt, N, K) : T2(dt, K, N);
			struct op_tensor want = T2(dt, M, N), out = T2(dt, M, N);
			struct op_tensor iwant = T1(PLAN_DTYPE_I32, M), index = T1(PLAN_DTYPE_I32, M);

			fill_random(&x, 912 + (uint64_t)round, -3, 3);
			fill_random(&w, 913 + (uint64_t)round, 0.5, 1.5);
			fill_random(&b, 914 + (uint64_t)round, -1, 1);
			rnm.in[0] = x;
			rnm.in[1] = w;
			rnm.in[2] = b;
			rnm.out[0] = want;
			rnm.attr[RNM_EPS].f = eps;
			rnm.attr[RNM_TRANS_B].i = tb;
			run(OP_RMSNORM_MATMUL, &rnm);
			am.in[0] = want;
			am.out[0] = iwant;
			run(OP_ARGMAX, &am);

			fused.in[0] = x;
			fused.in[1] = w;
			fused.in[2] = b;
			fused.out[0] = out;
			fused.out[1] = index;
			fused.attr[RNA_EPS].f = eps;
			fused.attr[RNA_TRANS_B].i = tb;
			for (int form = 0; form < 2; form++) {
				poison(&out);
				poison(&index);
				host_impl_kernel(OP_RMSNORM_MATMUL_ARGMAX, form)(&fused);
				ok(same_bytes(&out, &want) && same_bytes(&index, &iwant),
				   "rmsnorm_matmul_argmax %s [%lld,%lld]@[%lld,%lld] trans_b %d (%s): "
				   "rmsnorm_matmul's out and argmax's index, bit for bit", dt_name(dt),
				   (long long)M, (long long)K, (long long)K, (long long)N, tb,
				   form == 0 ? "reference" : "blocked");
			}
			drop(&x);
			drop(&w);
			drop(&b);
			drop(&want);
			drop(&out);
			drop(&iwant);
			drop(&index);
		}
	}

	/* x = [3, 4], w = [1, 2], eps 0: h = [3, 8] / sqrt(12.5); b^T rows
	 * [1, 0], [0, 1], [1, 1], [1, 1] give h0, h1, h0 + h1 twice: the
	 * largest, 11 / sqrt(12.5), at columns 2 and 3, and the first wins. */
	struct op_call c = call_new(3, 2);
	struct op_tensor x = T2(PLAN_DTYPE_F32, 1, 2), w = T1(PLAN_DTYPE_F32, 2);
	struct op_tensor b = T2(PLAN_DTYPE_F32, 4, 2), out = T2(PLAN_DTYPE_F32, 1, 4);
	struct op_tensor index = T1(PLAN_DTYPE_I32, 1);
	const double bv[8] = { 1, 0, 0, 1, 1, 1, 1, 1 };
	const double want[4] = { 3 / sqrt(12.5), 8 / sqrt(12.5), 11 / sqrt(12.5), 11 / sqrt(12.5) };
	set(&x, 0, 3);
	set(&x, 1, 4);
	set(&w, 0, 1);
	set(&w, 1, 2);
	for (int i = 0; i < 8; i++)
		set(&b, i, bv[i]);
	c.in[0] = x;
	c.in[1] = w;
	c.in[2] = b;
	c.out[0] = out;
	c.out[1] = index;
	c.attr[RNA_EPS].f = 0;
	c.attr[RNA_TRANS_B].i = 1;
	run(OP_RMSNORM_MATMUL_ARGMAX, &c);
	check(&out, want, 1e-6, "rmsnorm_matmul_argmax: the product as rmsnorm_matmul's hand case");
	is_int(((int32_t *)index.data)[0], 2, "rmsnorm_matmul_argmax: columns 2 and 3 tie, 2 wins");
	drop(&x);
	drop(&w);
	drop(&b);
	drop(&out);
	drop(&index);
}

/* rmsnorm_matmul_rope_kv_write (x, w, b, pos): against rmsnorm into h,
 * matmul into qkv, rope_kv_write from qkv, bit for bit, in each form
 * (reference, blocked, without scratch), for several T, heads and
 * kv_heads, head_dim and rope types, positions outside the caches
 * included; the cache rows at no position keep their bytes; and q
 * against double for the default rope. */
static void scaling_set(union op_value *a, int type);

static void test_fused_rmsnorm_matmul_rope_kv_write_bits(void)
{
	static const int shapes[][3] = { { 4, 2, 8 }, { 2, 2, 16 }, { 3, 1, 6 }, { 8, 2, 4 } };
	static const int types[] = { ROPE_TYPE_DEFAULT, ROPE_TYPE_LLAMA3, ROPE_TYPE_YARN };
	const float eps = 1e-5f;
	const int64_t S = 7;
	uint64_t seed = 601;

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int round = 0; round < 8; round++) {
			const int *sh = shapes[round % 4];
			int64_t H = sh[0], KVH = sh[1], D = sh[2], QKV = (H + 2 * KVH) * D;
			int64_t T = round == 0 ? 1 : round == 1 ? 2 : round % 2 == 0 ? 3 : 5;
			int64_t K = 16 + 8 * (round % 3) + (round == 5 ? 3 : 0);
			int tb = round != 3, type = types[round % 3];
			struct op_call norm = call_new(2, 1), prod = call_new(2, 1), rkv = call_new(2, 3);
			struct op_call fused = call_new(4, 3);
			struct op_tensor x = T2(dt, T, K), w = T1(dt, K), h = T2(dt, T, K);
			struct op_tensor b = tb ? T2(dt, QKV, K) : T2(dt, K, QKV), qkv = T2(dt, T, QKV);
			struct op_tensor pos = T1(PLAN_DTYPE_I32, T);
			struct op_tensor wq = T2(dt, T, H * D), wk = T2(dt, S, KVH * D);
			struct op_tensor wv = T2(dt, S, KVH * D);
			struct op_tensor q = T2(dt, T, H * D), kc, vc, kc0, vc0;
			int untouched = 1;

			fill_random(&x, seed++, -3, 3);
			fill_random(&w, seed++, 0.5, 1.5);
			fill_random(&b, seed++, -1, 1);
			fill_random(&wk, seed++, 10, 20);
			fill_random(&wv, seed++, 30, 40);
			kc0 = clone(&wk);
			vc0 = clone(&wv);
			kc = clone(&wk);
			vc = clone(&wv);
			/* a position past the caches and a negative one from T = 3 on */
			for (int64_t t = 0; t < T; t++)
				((int32_t *)pos.data)[t] = t == 1 && T >= 3 ? (int32_t)S :
				                           t == 2 ? -1 : (int32_t)((5 * t + round) % S);

			norm.in[0] = x;
			norm.in[1] = w;
			norm.out[0] = h;
			norm.attr[NORM_EPS].f = eps;
			run(OP_RMSNORM, &norm);
			prod.in[0] = h;
			prod.in[1] = b;
			prod.out[0] = qkv;
			prod.attr[MATMUL_TRANS_B].i = tb;
			run(OP_MATMUL, &prod);
			rkv.in[0] = qkv;
			rkv.in[1] = pos;
			rkv.out[0] = wq;
			rkv.out[1] = wk;
			rkv.out[2] = wv;
			rkv.attr[RKV_HEADS].i = H;
			rkv.attr[RKV_KV_HEADS].i = KVH;
			rkv.attr[RKV_HEAD_DIM].i = D;
			rkv.attr[RKV_THETA].f = 500000;
			scaling_set(&rkv.attr[RKV_SCALING], type);
			run(OP_ROPE_KV_WRITE, &rkv);

			fused = rkv;
			fused.nin = 4;
			fused.in[RRK_X] = x;
			fused.in[RRK_W] = w;
			fused.in[RRK_B] = b;
			fused.in[RRK_POS] = pos;
			fused.out[0] = q;
			fused.out[1] = kc;
			fused.out[2] = vc;
			fused.attr[RRK_EPS].f = eps;
			fused.attr[RRK_TRANS_B].i = tb;
			for (int form = 0; form < 3; form++) {
				memcpy(kc.data, kc0.data, (size_t)numel(&kc) * dt_size(dt));
				memcpy(vc.data, vc0.data, (size_t)numel(&vc) * dt_size(dt));
				poison(&q);
				if (form == 0)
					run(OP_RMSNORM_MATMUL_ROPE_KV_WRITE, &fused);
				else if (form == 1)
					host_impl_kernel(OP_RMSNORM_MATMUL_ROPE_KV_WRITE, 1)(&fused);
				else
					host_rmsnorm_matmul_rope_kv_write_run(&fused, 0, 0);
				ok(same_bytes(&q, &wq) && same_bytes(&kc, &wk) && same_bytes(&vc, &wv),
				   "rmsnorm_matmul_rope_kv_write %s T %lld K %lld heads %lld/%lld x %lld "
				   "trans_b %d %s (%s) is rmsnorm, matmul, rope_kv_write, bit for bit",
				   dt_name(dt), (long long)T, (long long)K, (long long)H, (long long)KVH,
				   (long long)D, tb, rope_type_names[type],
				   form == 0 ? "reference" : form == 1 ? "blocked" : "no scratch");
			}
			/* rows no position names keep their bytes */
			for (int64_t r = 0; r < S; r++) {
				int named = 0;
				for (int64_t t = 0; t < T; t++)
					named |= ((int32_t *)pos.data)[t] == r;
				for (int64_t j = 0; !named && j < KVH * D; j++)
					untouched &= at(&kc, r * KVH * D + j) == at(&kc0, r * KVH * D + j) &&
					             at(&vc, r * KVH * D + j) == at(&vc0, r * KVH * D + j);
			}
			ok(untouched, "rmsnorm_matmul_rope_kv_write %s T %lld: cache rows at no "
			   "position untouched", dt_name(dt), (long long)T);

			if (type == ROPE_TYPE_DEFAULT) {
				/* q in double: h and qkv rounded as stored, rope in double */
				double *dq = want_new(T * H * D);
				for (int64_t t = 0; t < T; t++) {
					double ss = 0, row[64];
					for (int64_t i = 0; i < K; i++)
						ss += at(&x, t * K + i) * at(&x, t * K + i);
					double rms = sqrt(ss / (double)K + eps);
					for (int64_t n = 0; n < H * D; n++) {
						double pv = 0;
						for (int64_t i = 0; i < K; i++)
							pv += round_dt(dt, at(&x, t * K + i) / rms * at(&w, i)) *
							      (tb ? at(&b, n * K + i) : at(&b, i * QKV + n));
						row[n] = round_dt(dt, pv);
					}
					for (int64_t hh = 0; hh < H; hh++)
						for (int64_t i = 0; i < D / 2; i++)
							rope_double(row[hh * D + i], row[hh * D + i + D / 2], (int)i,
							            (int)D, 500000, ((int32_t *)pos.data)[t],
							            &dq[t * H * D + hh * D + i],
							            &dq[t * H * D + hh * D + i + D / 2]);
				}
				/* the product's f32 sum and its rounding to dt move each
				 * member by up to an ulp of dt before the rotation */
				check(&q, dq, dt == PLAN_DTYPE_F32 ? 1e-4 : 4 * dt_tol(dt),
				      "rmsnorm_matmul_rope_kv_write %s T %lld: q against double",
				      dt_name(dt), (long long)T);
				free(dq);
			}
			drop(&x);
			drop(&w);
			drop(&h);
			drop(&b);
			drop(&qkv);
			drop(&pos);
			drop(&wq);
			drop(&wk);
			drop(&wv);
			drop(&q);
			drop(&kc);
			drop(&vc);
			drop(&kc0);
			drop(&vc0);
		}
	}
}

/* --- decoder_layer ------------------------------------------------------ */

/* decoder_layer against its sequence run kind by kind through the host
 * kernels (rmsnorm, matmul, rope_kv_write, attention, matmul_add, rmsnorm,
 * matmul_silu_mul, matmul_add), bit for bit in out and both caches, in
 * each form (reference, blocked): f32, f16 and bf16; T 1 and 3; causal or
 * not (with a scale of its own); grouped (4 heads on 2) and plain (2 on
 * 2) heads; kv_len 0, where attention gives zeros, and past the new
 * tokens; out apart from x and out in x's place. */
static void test_decoder_layer_bits(void)
{
	const int64_t Hd = 32, D = 8, F = 24, S = 7;
	const float eps = 1e-5f;
	uint64_t seed = 701;

	for (int k = 0; k < NFLOAT; k++)
		for (int c = 0; c < 32; c++) {
			int dt = float_dtypes[k], causal = c & 1, inplace = (c >> 4) & 1;
			int64_t T = c & 2 ? 3 : 1, NH = c & 4 ? 2 : 4, KVH = 2;
			int64_t QW = NH * D, KW = KVH * D, QKV = QW + 2 * KW, p0 = 2;
			int64_t kv_len = c & 8 ? p0 + T : 0;
			struct op_call norm = call_new(2, 1), prod = call_new(2, 1), rkv = call_new(2, 3);
			struct op_call attn = call_new(3, 1), o = call_new(3, 1), gu = call_new(2, 1);
			struct op_call down = call_new(3, 1), layer = call_new(8, 3);
			struct op_tensor x = T2(dt, T, Hd), an = T1(dt, Hd), fn = T1(dt, Hd);
			struct op_tensor wqkv = T2(dt, QKV, Hd), wo = T2(dt, Hd, QW);
			struct op_tensor wgu = T2(dt, 2 * F, Hd), wd = T2(dt, Hd, F);
			struct op_tensor pos = T1(PLAN_DTYPE_I32, T), h = T2(dt, T, Hd);
			struct op_tensor qkv = T2(dt, T, QKV), q = T2(dt, T, QW), att = T2(dt, T, QW);
			struct op_tensor x1 = T2(dt, T, Hd), h2 = T2(dt, T, Hd), act = T2(dt, T, F);
			struct op_tensor want = T2(dt, T, Hd), wk = T2(dt, S, KW), wv = T2(dt, S, KW);
			struct op_tensor kc0, vc0, kc, vc, out;
			int same[2];

			fill_random(&x, seed++, -3, 3);
			fill_random(&an, seed++, 0.5, 1.5);
			fill_random(&fn, seed++, 0.5, 1.5);
			fill_random(&wqkv, seed++, -0.5, 0.5);
			fill_random(&wo, seed++, -0.5, 0.5);
			fill_random(&wgu, seed++, -0.5, 0.5);
			fill_random(&wd, seed++, -0.5, 0.5);
			fill_random(&wk, seed++, -1, 1);
			fill_random(&wv, seed++, -1, 1);
			for (int64_t t = 0; t < T; t++)
				((int32_t *)pos.data)[t] = (int32_t)(p0 + t);
			kc0 = clone(&wk);
			vc0 = clone(&wv);
			kc = clone(&wk);
			vc = clone(&wv);

			norm.in[0] = x;
			norm.in[1] = an;
			norm.out[0] = h;
			norm.attr[NORM_EPS].f = eps;
			run(OP_RMSNORM, &norm);
			prod.in[0] = h;
			prod.in[1] = wqkv;
			prod.out[0] = qkv;
			prod.attr[MATMUL_TRANS_B].i = 1;
			run(OP_MATMUL, &prod);
			rkv.in[0] = qkv;
			rkv.in[1] = pos;
			rkv.out[0] = q;
			rkv.out[1] = wk;
			rkv.out[2] = wv;
			rkv.attr[RKV_HEADS].i = NH;
			rkv.attr[RKV_KV_HEADS].i = KVH;
			rkv.attr[RKV_HEAD_DIM].i = D;
			rkv.attr[RKV_THETA].f = 500000;
			scaling_set(&rkv.attr[RKV_SCALING], ROPE_TYPE_DEFAULT);
			run(OP_ROPE_KV_WRITE, &rkv);
			attn.in[0] = q;
			attn.in[1] = wk;
			attn.in[2] = wv;
			attn.out[0] = att;
			attn.attr[ATTN_HEADS].i = NH;
			attn.attr[ATTN_KV_HEADS].i = KVH;
			attn.attr[ATTN_HEAD_DIM].i = D;
			attn.attr[ATTN_KV_LEN].i = kv_len;
			attn.attr[ATTN_SCALE].f = causal ? 0.25 : 0.0;
			attn.attr[ATTN_CAUSAL].i = causal;
			run(OP_ATTENTION, &attn);
			o.in[0] = x;
			o.in[1] = att;
			o.in[2] = wo;
			o.out[0] = x1;
			o.attr[MATMUL_TRANS_B].i = 1;
			run(OP_MATMUL_ADD, &o);
			norm.in[0] = x1;
			norm.in[1] = fn;
			norm.out[0] = h2;
			run(OP_RMSNORM, &norm);
			gu.in[0] = h2;
			gu.in[1] = wgu;
			gu.out[0] = act;
			gu.attr[MATMUL_TRANS_B].i = 1;
			run(OP_MATMUL_SILU_MUL, &gu);
			down.in[0] = x1;
			down.in[1] = act;
			down.in[2] = wd;
			down.out[0] = want;
			down.attr[MATMUL_TRANS_B].i = 1;
			run(OP_MATMUL_ADD, &down);

			layer = rkv;
			layer.nin = 8;
			layer.in[DL_ATTN_NORM] = an;
			layer.in[DL_W_QKV] = wqkv;
			layer.in[DL_W_O] = wo;
			layer.in[DL_FFN_NORM] = fn;
			layer.in[DL_W_GATE_UP] = wgu;
			layer.in[DL_W_DOWN] = wd;
			layer.in[DL_POS] = pos;
			layer.out[DL_K_CACHE] = kc;
			layer.out[DL_V_CACHE] = vc;
			layer.attr[DL_EPS].f = eps;
			layer.attr[DL_KV_LEN].i = kv_len;
			layer.attr[DL_SCALE].f = attn.attr[ATTN_SCALE].f;
			layer.attr[DL_CAUSAL].i = causal;
			for (int form = 0; form < 2; form++) {
				memcpy(kc.data, kc0.data, (size_t)numel(&kc) * dt_size(dt));
				memcpy(vc.data, vc0.data, (size_t)numel(&vc) * dt_size(dt));
				out = inplace ? clone(&x) : T2(dt, T, Hd);
				if (!inplace)
					poison(&out);
				layer.in[DL_X] = inplace ? out : x;
				layer.out[DL_OUT] = out;
				host_impl_kernel(OP_DECODER_LAYER, form)(&layer);
				same[form] = same_bytes(&out, &want) && same_bytes(&kc, &wk) &&
				             same_bytes(&vc, &wv);
				drop(&out);
			}
			ok(same[0] && same[1], "decoder_layer %s T %lld heads %lld/%lld kv_len %lld%s%s "
			   "is its sequence of eight kernels, bit for bit (reference %s, blocked %s)",
			   dt_name(dt), (long long)T, (long long)NH, (long long)KVH, (long long)kv_len,
			   causal ? " causal" : "", inplace ? " in place" : "",
			   same[0] ? "same" : "differs", same[1] ? "same" : "differs");
			drop(&x);
			drop(&an);
			drop(&fn);
			drop(&wqkv);
			drop(&wo);
			drop(&wgu);
			drop(&wd);
			drop(&pos);
			drop(&h);
			drop(&qkv);
			drop(&q);
			drop(&att);
			drop(&x1);
			drop(&h2);
			drop(&act);
			drop(&want);
			drop(&wk);
			drop(&wv);
			drop(&kc0);
			drop(&vc0);
			drop(&kc);
			drop(&vc);
		}
}

/* --- rope_type: the frequencies against a double computation ------------ */

/* The inverse frequency of pair I in double, from the definitions: the
 * default theta^(-2i/d); linear divides it by factor; llama3 keeps the
 * wavelengths below original/high_freq_factor, divides those above
 * original/low_freq_factor by factor and blends between; yarn blends
 * theta^(-2i/d) / factor and theta^(-2i/d) by a ramp over the pairs
 * between the correction dimensions of beta_fast and beta_slow. */
static double want_inv_freq(int type, double theta, int d, int i, const union op_value *a)
{
	double inv = pow(theta, -2.0 * i / d), factor = a[RS_FACTOR].f;
	double old = (double)a[RS_ORIGINAL_MAX].i;

	switch (type) {
	case ROPE_TYPE_LINEAR:
		return inv / factor;
	case ROPE_TYPE_LLAMA3: {
		double lo = a[RS_LOW_FREQ_FACTOR].f, hi = a[RS_HIGH_FREQ_FACTOR].f;
		double wavelen = 2 * M_PI / inv;
		if (wavelen < old / hi)
			return inv;
		if (wavelen > old / lo)
			return inv / factor;
		double smooth = (old / wavelen - lo) / (hi - lo);
		return (1 - smooth) * inv / factor + smooth * inv;
	}
	case ROPE_TYPE_YARN: {
		double l = floor(d * log(old / (a[RS_BETA_FAST].f * 2 * M_PI)) / (2 * log(theta)));
		double h = ceil(d * log(old / (a[RS_BETA_SLOW].f * 2 * M_PI)) / (2 * log(theta)));
		l = l < 0 ? 0 : l;
		h = h > d - 1 ? d - 1 : h;
		double ramp = (i - l) / (h - l);
		ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
		return inv / factor * ramp + inv * (1 - ramp);
	}
	default:
		return inv;
	}
}

static void scaling_set(union op_value *a, int type)
{
	memset(a, 0, RS_COUNT * sizeof *a);
	a[RS_TYPE].i = type;
	a[RS_FACTOR].f = type == ROPE_TYPE_YARN ? 4 : 8;
	a[RS_LOW_FREQ_FACTOR].f = 1;
	a[RS_HIGH_FREQ_FACTOR].f = 4;
	a[RS_ORIGINAL_MAX].i = 64;
	a[RS_BETA_FAST].f = 32;
	a[RS_BETA_SLOW].f = 1;
	a[RS_TRUNCATE].i = 1;
}

static void test_rope_scaling(void)
{
	enum { D = 16, H = 2, W = H * D, T = 4 };
	static const int types[] = { ROPE_TYPE_DEFAULT, ROPE_TYPE_LINEAR, ROPE_TYPE_DYNAMIC,
	                             ROPE_TYPE_YARN, ROPE_TYPE_LLAMA3 };
	const int32_t p[T] = { 0, 3, 40, 63 };

	for (size_t n = 0; n < sizeof types / sizeof types[0]; n++) {
		int type = types[n];
		union op_value a[RS_COUNT];
		struct rope_scaling rs;
		int bad = 0;
		scaling_set(a, type);
		rope_scaling_init(&rs, 10000, D, a);
		/* With head_dim 16 and an original context of 64, llama3's
		 * wavelengths 6.3 (kept), 19.9 and 62.8 (blended) and 199 on
		 * (divided) cover its three bands; yarn's ramp runs over pairs
		 * 0 to 3. */
		for (int i = 0; i < D / 2; i++) {
			double want = want_inv_freq(type, 10000, D, i, a), got = rope_inv_freq(&rs, i);
			if (!(fabs(got - want) <= 1e-6 * want)) {
				diag("%s pair %d: %.9g, want %.9g", rope_type_names[type], i, got, want);
				bad++;
			}
		}
		ok(bad == 0, "rope_type %s: the f32 frequencies are the double ones within 1e-6",
		   rope_type_names[type]);

		for (int k = 0; k < NFLOAT; k++) {
			int dt = float_dtypes[k];
			struct op_tensor x = T2(dt, T, W), out = T2(dt, T, W);
			struct op_tensor pos = T1(PLAN_DTYPE_I32, T);
			struct op_call c = rope_call(x, pos, out, H, D, 10000);
			double want[T * W];
			/* yarn scales cos and sin by 0.1 ln(factor) + 1 */
			double m = type == ROPE_TYPE_YARN ? 0.1 * log(4.0) + 1 : 1;
			memcpy(&c.attr[ROPE_SCALING], a, sizeof a);
			fill_random(&x, 300 + (uint64_t)n, -2, 2);
			memcpy(pos.data, p, sizeof p);
			for (int t = 0; t < T; t++)
				for (int h = 0; h < H; h++)
					for (int i = 0; i < D / 2; i++) {
						double ang = p[t] * want_inv_freq(type, 10000, D, i, a);
						int base = t * W + h * D;
						double x1 = at(&x, base + i), x2 = at(&x, base + i + D / 2);
						want[base + i] = m * (x1 * cos(ang) - x2 * sin(ang));
						want[base + i + D / 2] = m * (x2 * cos(ang) + x1 * sin(ang));
					}
			poison(&out);
			run(OP_ROPE, &c);
			/* positions to 63: the angle's f32 error is below 63 ulp(1) */
			check(&out, want, dt == PLAN_DTYPE_F32 ? 2e-5 : dt_tol(dt),
			      "rope %s %s: positions 0, 3, 40, 63", rope_type_names[type], dt_name(dt));
			drop(&x);
			drop(&out);
			drop(&pos);
		}
	}

	/* dynamic: within its original context the frequencies are
	 * transformers' at the start, theta's; at and past it transformers
	 * rescales by the sequence length, which a captured launch cannot
	 * follow: those rows are NaN, not a guess. */
	{
		struct op_tensor x = T2(PLAN_DTYPE_F32, 3, W), out = T2(PLAN_DTYPE_F32, 3, W);
		struct op_tensor ref = T2(PLAN_DTYPE_F32, 3, W), pos = T1(PLAN_DTYPE_I32, 3);
		struct op_call c = rope_call(x, pos, out, H, D, 10000);
		struct op_call d = rope_call(x, pos, ref, H, D, 10000);
		int nan_rows = 1;
		fill_random(&x, 77, -1, 1);
		((int32_t *)pos.data)[0] = 63;
		((int32_t *)pos.data)[1] = 64;
		((int32_t *)pos.data)[2] = 1000;
		scaling_set(&c.attr[ROPE_SCALING], ROPE_TYPE_DYNAMIC);
		c.attr[ROPE_SCALING + RS_FACTOR].f = 2;
		run(OP_ROPE, &c);
		run(OP_ROPE, &d);
		ok(memcmp(out.data, ref.data, W * sizeof(float)) == 0,
		   "rope dynamic: position 63 of 64 is the default rope, bit for bit");
		for (int j = W; j < 3 * W; j++)
			nan_rows &= isnan(((float *)out.data)[j]);
		ok(nan_rows, "rope dynamic: positions 64 and 1000 (past the original 64) are NaN");
		drop(&x);
		drop(&out);
		drop(&ref);
		drop(&pos);
	}
}

/* qk_norm: each q head normalized with q_w, each k head with k_w, v copied;
 * against a double computation, and bit for bit the rmsnorm of the heads
 * seen as rows. */
static void test_qk_norm(void)
{
	enum { T = 3, H = 4, KVH = 2, D = 8, C = (H + 2 * KVH) * D };

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		struct op_tensor x = T2(dt, T, C), out = T2(dt, T, C);
		struct op_tensor qw = T1(dt, D), kw = T1(dt, D);
		struct op_call c = call_new(3, 1);
		double want[T * C];
		fill_random(&x, 501, -3, 3);
		fill_random(&qw, 502, 0.5, 1.5);
		fill_random(&kw, 503, -1.5, -0.5);
		c.in[0] = x;
		c.in[1] = qw;
		c.in[2] = kw;
		c.out[0] = out;
		c.attr[QKN_HEADS].i = H;
		c.attr[QKN_KV_HEADS].i = KVH;
		c.attr[QKN_HEAD_DIM].i = D;
		c.attr[QKN_EPS].f = 1e-6;
		for (int t = 0; t < T; t++) {
			for (int h = 0; h < H + 2 * KVH; h++) {
				int base = t * C + h * D;
				double ss = 0;
				for (int j = 0; j < D; j++)
					ss += at(&x, base + j) * at(&x, base + j);
				double r = sqrt(ss / D + 1e-6);
				for (int j = 0; j < D; j++)
					want[base + j] = h < H ? at(&x, base + j) / r * at(&qw, j) :
					                 h < H + KVH ? at(&x, base + j) / r * at(&kw, j) :
					                 at(&x, base + j);
			}
		}
		poison(&out);
		run(OP_QK_NORM, &c);
		check(&out, want, dt_tol(dt), "qk_norm %s: q heads by q_w, k heads by k_w, v as it is",
		      dt_name(dt));

		/* The first head of each row as an rmsnorm row: the same bits. */
		struct op_tensor rows = T2(dt, T, D), normed = T2(dt, T, D);
		struct op_call r = call_new(2, 1);
		int same = 1;
		size_t es = dt_size(dt);
		for (int t = 0; t < T; t++)
			memcpy((char *)rows.data + t * D * es, (char *)x.data + t * C * es, D * es);
		r.in[0] = rows;
		r.in[1] = qw;
		r.out[0] = normed;
		r.attr[NORM_EPS].f = 1e-6;
		run(OP_RMSNORM, &r);
		for (int t = 0; t < T; t++)
			same &= memcmp((char *)normed.data + t * D * es, (char *)out.data + t * C * es,
			               D * es) == 0;
		ok(same, "qk_norm %s: a q head is rmsnorm of it with q_w, bit for bit", dt_name(dt));

		/* In place: the same bytes. */
		struct op_tensor y = clone(&x);
		c.in[0] = y;
		c.out[0] = y;
		run(OP_QK_NORM, &c);
		ok(same_bytes(&y, &out), "qk_norm %s works in place", dt_name(dt));
		drop(&y);
		drop(&rows);
		drop(&normed);
		drop(&x);
		drop(&out);
		drop(&qw);
		drop(&kw);
	}
}

static void test_fused_rope_kv_write_bits(void)
{
	uint64_t s = 241;

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int round = 0; round < 6; round++) {
			/* rounds 4 and 5: llama3 and yarn frequencies */
			union op_value sc[RS_COUNT];
			memset(sc, 0, sizeof sc);
			sc[RS_TYPE].i = round == 4 ? ROPE_TYPE_LLAMA3 : round == 5 ? ROPE_TYPE_YARN : 0;
			sc[RS_FACTOR].f = 8;
			sc[RS_LOW_FREQ_FACTOR].f = 1;
			sc[RS_HIGH_FREQ_FACTOR].f = 4;
			sc[RS_ORIGINAL_MAX].i = 16;
			sc[RS_BETA_FAST].f = 32;
			sc[RS_BETA_SLOW].f = 1;
			sc[RS_TRUNCATE].i = 1;
			int64_t kvh = rnd_dim(&s, 3), heads = kvh * rnd_dim(&s, 4);
			int64_t hd = 2 * rnd_dim(&s, 12), T = rnd_dim(&s, 7), S = rnd_dim(&s, 9);
			int64_t qw = heads * hd, kw = kvh * hd, C = qw + 2 * kw;
			double theta = round & 1 ? 500000 : 10000;
			struct op_tensor qkv = T2(dt, T, C), pos = T1(PLAN_DTYPE_I32, T);
			struct op_tensor q = T2(dt, T, qw), kc = T2(dt, S, kw), vc = T2(dt, S, kw);
			struct op_tensor q2 = T2(dt, T, qw), k2 = T2(dt, T, kw), v2 = T2(dt, T, kw);
			struct op_call c = call_new(2, 3), sl = call_new(1, 1), rope, kvw = call_new(2, 1);
			fill_random(&qkv, 242 + (uint64_t)round, -3, 3);
			fill_random(&kc, 243 + (uint64_t)round, -1, 1);
			fill_random(&vc, 244 + (uint64_t)round, -1, 1);
			/* Positions from -1 to S, so some fall outside, some repeat. */
			for (int64_t t = 0; t < T; t++)
				((int32_t *)pos.data)[t] = (int32_t)rnd_dim(&s, S + 2) - 2;
			struct op_tensor kc2 = clone(&kc), vc2 = clone(&vc);

			c.in[0] = qkv;
			c.in[1] = pos;
			c.out[0] = q;
			c.out[1] = kc;
			c.out[2] = vc;
			c.attr[RKV_HEADS].i = heads;
			c.attr[RKV_KV_HEADS].i = kvh;
			c.attr[RKV_HEAD_DIM].i = hd;
			c.attr[RKV_THETA].f = theta;
			memcpy(&c.attr[RKV_SCALING], sc, sizeof sc);
			run(OP_ROPE_KV_WRITE, &c);

			/* slice x3, rope x2 (in place), kv_write x2 */
			sl.in[0] = qkv;
			sl.out[0] = q2;
			sl.attr[SLICE_START].i = 0;
			run(OP_SLICE, &sl);
			sl.out[0] = k2;
			sl.attr[SLICE_START].i = qw;
			run(OP_SLICE, &sl);
			sl.out[0] = v2;
			sl.attr[SLICE_START].i = qw + kw;
			run(OP_SLICE, &sl);
			rope = rope_call(q2, pos, q2, heads, hd, theta);
			memcpy(&rope.attr[ROPE_SCALING], sc, sizeof sc);
			run(OP_ROPE, &rope);
			rope = rope_call(k2, pos, k2, kvh, hd, theta);
			memcpy(&rope.attr[ROPE_SCALING], sc, sizeof sc);
			run(OP_ROPE, &rope);
			kvw.in[0] = k2;
			kvw.in[1] = pos;
			kvw.out[0] = kc2;
			run(OP_KV_WRITE, &kvw);
			kvw.in[0] = v2;
			kvw.out[0] = vc2;
			run(OP_KV_WRITE, &kvw);
			ok(same_bytes(&q, &q2) && same_bytes(&kc, &kc2) && same_bytes(&vc, &vc2),
			   "rope_kv_write %s %s (T %lld, heads %lld/%lld of %lld, S %lld) is slice, "
			   "rope, kv_write, bit for bit", dt_name(dt),
			   rope_type_names[sc[RS_TYPE].i], (long long)T, (long long)heads,
			   (long long)kvh, (long long)hd, (long long)S);
			drop(&qkv);
			drop(&pos);
			drop(&q);
			drop(&kc);
			drop(&vc);
			drop(&q2);
			drop(&k2);
			drop(&v2);
			drop(&kc2);
			drop(&vc2);
		}
	}
}

/* --- blocked == reference ------------------------------------------------ */

static void test_blocked(void)
{
	/* Odd shapes that cross the 128-wide tiles in K and N, and stop short
	 * of them. */
	static const int64_t shapes[][3] = {            /* M, K, N (N even) */
		{ 1, 1, 2 }, { 3, 300, 258 }, { 5, 129, 130 }, { 1, 257, 386 }, { 7, 17, 6 },
	};
	static const int epis[] = { HOST_EPI_NONE, HOST_EPI_ADD, HOST_EPI_SILU_MUL };
	static const enum op_id ids[] = { OP_MATMUL, OP_MATMUL_ADD, OP_MATMUL_SILU_MUL };
	static const char *const names[] = { "matmul", "matmul_add", "matmul_silu_mul" };

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (size_t z = 0; z < sizeof shapes / sizeof shapes[0]; z++) {
			int64_t M = shapes[z][0], K = shapes[z][1], N = shapes[z][2];
			for (int e = 0; e < 3; e++) {
				int same = 1;
				for (int tt = 0; tt < 4; tt++) {
					int first = epis[e] == HOST_EPI_ADD;
					int64_t W = epis[e] == HOST_EPI_SILU_MUL ? N / 2 : N;
					struct op_call c = call_new(2 + first, 1);
					struct op_tensor ref = T2(dt, M, W), blk, direct;
					product_operands(&c, first, dt, M, K, N, tt & 1, tt >> 1,
					                 251 + (uint64_t)z);
					if (first) {
						c.in[0] = T2(dt, M, N);
						fill_random(&c.in[0], 259, -2, 2);
					}
					blk = clone(&ref);
					direct = clone(&ref);
					c.out[0] = ref;
					poison(&ref);
					host_impl_kernel(ids[e], 0)(&c);
					c.out[0] = blk;
					poison(&blk);
					host_impl_kernel(ids[e], 1)(&c);
					c.out[0] = direct;
					poison(&direct);
					host_product_run(&c, epis[e], 0, 0);
					same &= same_bytes(&ref, &blk) && same_bytes(&ref, &direct);
					for (int i = 0; i < c.nin; i++)
						drop(&c.in[i]);
					drop(&ref);
					drop(&blk);
					drop(&direct);
				}
				ok(same, "%s %s [%lld,%lld]@[%lld,%lld]: blocked, reference and the "
				   "no-scratch path give the same bytes, every transposition", names[e],
				   dt_name(dt), (long long)M, (long long)K, (long long)K, (long long)N);
			}
		}
	}
}

/* rope_kv_write (qkv, pos, q_w, k_w) and rope_paged_kv_write (qkv, pos,
 * slots, q_w, k_w): against qk_norm in place on a copy of qkv, then the
 * kind without the weights, bit for bit: each dtype, T 1 and 7 (positions
 * and slots outside the caches from T 7), heads as many as kv_heads and
 * grouped, head_dim 64 and 128, two eps. Then q against double: each head
 * normalized in double, rounded to the dtype as qk_norm stores it, rotated
 * in double. */
static void test_fused_rope_kv_norm_bits(void)
{
	static const int shapes[][3] = { { 4, 4, 64 }, { 8, 2, 64 }, { 4, 1, 128 }, { 6, 2, 128 } };
	const int64_t S = 9, BS = 4, NB = 3;
	uint64_t seed = 901;

	for (int k = 0; k < NFLOAT; k++) {
		int dt = float_dtypes[k];
		for (int round = 0; round < 8; round++) {
			const int *sh = shapes[round % 4];
			int64_t H = sh[0], KVH = sh[1], D = sh[2], QKV = (H + 2 * KVH) * D;
			int64_t T = round < 4 ? 1 : 7, KW = KVH * D;
			float eps = round % 3 == 2 ? 1e-5f : 1e-6f;
			struct op_tensor qkv = T2(dt, T, QKV), qw = T1(dt, D), kw = T1(dt, D);
			struct op_tensor pos = T1(PLAN_DTYPE_I32, T), slots = T1(PLAN_DTYPE_I32, T);
			struct op_tensor normed, wq = T2(dt, T, H * D), q = T2(dt, T, H * D);
			struct op_tensor wk = T2(dt, S, KW), wv = T2(dt, S, KW), kc, vc;
			struct op_tensor pwk = T3(dt, NB, BS, KW), pwv = T3(dt, NB, BS, KW), pkc, pvc;
			struct op_call qkn = call_new(3, 1), rkv = call_new(2, 3), fused;
			struct op_call prkv = call_new(3, 3), pfused;
			double *dq = want_new(T * H * D);

			fill_random(&qkv, seed++, -3, 3);
			fill_random(&qw, seed++, 0.5, 1.5);
			fill_random(&kw, seed++, -1.5, 1.5);
			fill_random(&wk, seed++, 10, 20);
			fill_random(&wv, seed++, 30, 40);
			fill_random(&pwk, seed++, 10, 20);
			fill_random(&pwv, seed++, 30, 40);
			kc = clone(&wk);
			vc = clone(&wv);
			pkc = clone(&pwk);
			pvc = clone(&pwv);
			/* from T 7: a position past the caches, a negative one, a pad slot */
			for (int64_t t = 0; t < T; t++) {
				((int32_t *)pos.data)[t] = t == 2 ? (int32_t)S : t == 4 ? -1 :
				                           (int32_t)((3 * t + round) % S);
				((int32_t *)slots.data)[t] = t == 3 ? -1 : (int32_t)((5 * t + round) % (NB * BS));
			}

			/* the sequence: qk_norm in place on a copy, then the kind */
			normed = clone(&qkv);
			qkn.in[0] = normed;
			qkn.in[1] = qw;
			qkn.in[2] = kw;
			qkn.out[0] = normed;
			qkn.attr[QKN_HEADS].i = H;
			qkn.attr[QKN_KV_HEADS].i = KVH;
			qkn.attr[QKN_HEAD_DIM].i = D;
			qkn.attr[QKN_EPS].f = eps;
			run(OP_QK_NORM, &qkn);
			rkv.in[0] = normed;
			rkv.in[1] = pos;
			rkv.out[0] = wq;
			rkv.out[1] = wk;
			rkv.out[2] = wv;
			rkv.attr[RKV_HEADS].i = H;
			rkv.attr[RKV_KV_HEADS].i = KVH;
			rkv.attr[RKV_HEAD_DIM].i = D;
			rkv.attr[RKV_THETA].f = 1000000;
			scaling_set(&rkv.attr[RKV_SCALING], ROPE_TYPE_DEFAULT);
			run(OP_ROPE_KV_WRITE, &rkv);
			prkv = rkv;
			prkv.nin = 3;
			prkv.in[RPKV_SLOTS] = slots;
			prkv.out[1] = pwk;
			prkv.out[2] = pwv;
			run(OP_ROPE_PAGED_KV_WRITE, &prkv);

			fused = rkv;
			fused.nin = 4;
			fused.in[0] = qkv;
			fused.in[RKV_Q_W] = qw;
			fused.in[RKV_K_W] = kw;
			fused.out[0] = q;
			fused.out[1] = kc;
			fused.out[2] = vc;
			fused.attr[RKV_EPS].f = eps;
			poison(&q);
			run(OP_ROPE_KV_WRITE, &fused);
			ok(same_bytes(&q, &wq) && same_bytes(&kc, &wk) && same_bytes(&vc, &wv),
			   "rope_kv_write with q_w, k_w %s T %lld heads %lld/%lld x %lld eps %g is "
			   "qk_norm then rope_kv_write, bit for bit", dt_name(dt), (long long)T,
			   (long long)H, (long long)KVH, (long long)D, (double)eps);
			pfused = prkv;
			pfused.nin = 5;
			pfused.in[0] = qkv;
			pfused.in[RPKV_Q_W] = qw;
			pfused.in[RPKV_K_W] = kw;
			pfused.out[0] = q;
			pfused.out[1] = pkc;
			pfused.out[2] = pvc;
			pfused.attr[RKV_EPS].f = eps;
			poison(&q);
			run(OP_ROPE_PAGED_KV_WRITE, &pfused);
			ok(same_bytes(&q, &wq) && same_bytes(&pkc, &pwk) && same_bytes(&pvc, &pwv),
			   "rope_paged_kv_write with q_w, k_w %s T %lld heads %lld/%lld x %lld is "
			   "qk_norm then rope_paged_kv_write, bit for bit", dt_name(dt), (long long)T,
			   (long long)H, (long long)KVH, (long long)D);

			for (int64_t t = 0; t < T; t++)
				for (int64_t h = 0; h < H; h++) {
					int64_t base = t * QKV + h * D;
					double ss = 0, nv[128];
					for (int64_t j = 0; j < D; j++)
						ss += at(&qkv, base + j) * at(&qkv, base + j);
					double rms = sqrt(ss / (double)D + eps);
					for (int64_t j = 0; j < D; j++)
						nv[j] = round_dt(dt, at(&qkv, base + j) / rms * at(&qw, j));
					for (int64_t i = 0; i < D / 2; i++)
						rope_double(nv[i], nv[i + D / 2], (int)i, (int)D, 1000000,
						            ((int32_t *)pos.data)[t], &dq[t * H * D + h * D + i],
						            &dq[t * H * D + h * D + i + D / 2]);
				}
			/* the f32 norm's rounding to the dtype may move a member by an ulp */
			check(&wq, dq, dt == PLAN_DTYPE_F32 ? 1e-4 : 4 * dt_tol(dt),
			      "rope_kv_write with q_w, k_w %s T %lld heads %lld/%lld x %lld: q against "
			      "double", dt_name(dt), (long long)T, (long long)H, (long long)KVH,
			      (long long)D);
			free(dq);
			drop(&qkv);
			drop(&qw);
			drop(&kw);
			drop(&pos);
			drop(&slots);
			drop(&normed);
			drop(&wq);
			drop(&q);
			drop(&wk);
			drop(&wv);
			drop(&kc);
			drop(&vc);
			drop(&pwk);
			drop(&pwv);
			drop(&pkc);
			drop(&pvc);
		}
	}
}

int main(void)
{
	test_table();
	test_load_store();
	test_init();
	test_init_slice();
	test_fill();
	test_copy();
	test_binary(OP_ADD, "add");
	test_binary(OP_MUL, "mul");
	test_scale();
	test_silu_mul();
	test_gelu();
	test_matmul();
	test_rmsnorm();
	test_layernorm();
	test_softmax();
	test_argmax();
	test_rope();
	test_embedding();
	test_kv_write();
	test_attention();
	test_inplace();
	test_impls();
	test_add_rmsnorm();
	test_matmul_add();
	test_matmul_silu_mul();
	test_rope_kv_write();
	test_slice();
	test_fused_add_rmsnorm_bits();
	test_fused_products_bits();
	test_fused_rope_kv_write_bits();
	test_rope_scaling();
	test_qk_norm();
	test_blocked();
	test_fused_rmsnorm_matmul_bits();
	test_fused_rmsnorm_matmul_argmax();
	test_fused_rmsnorm_matmul_rope_kv_write_bits();
	test_decoder_layer_bits();
	test_fused_rope_kv_norm_bits();
	return tap_done();
}
