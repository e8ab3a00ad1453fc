/*
 * numeric.c - unit tests of numeric.h: f16 and bf16 conversion against an
 * independent formulation in double, and the deterministic generator.
 *
 * The reference here rounds with frexp/ldexp/nearbyint and builds bit
 * patterns field by field; it shares no code with numeric.h's bit tricks.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/numeric.h"
#include "tap.h"

/* A binary float format: precision P (significand bits, hidden bit
 * included), exponent bias, exponent field width. */
struct fmt {
	const char *name;
	int p, bias, ebits;
};

static const struct fmt F16 = { "f16", 11, 15, 5 };
static const struct fmt BF16 = { "bf16", 8, 127, 8 };

static int fmt_emin(const struct fmt *f)
{
	return 1 - f->bias;
}

static double fmt_max(const struct fmt *f)
{
	int emax = (1 << f->ebits) - 2 - f->bias;
	return ldexp(2.0 - ldexp(1.0, 1 - f->p), emax);
}

/* The value of bit pattern B; NaN for NaN patterns. */
static double ref_decode(const struct fmt *f, unsigned b)
{
	int mbits = f->p - 1;
	unsigned sign = b >> (mbits + f->ebits) & 1u;
	unsigned field = b >> mbits & ((1u << f->ebits) - 1u);
	unsigned man = b & ((1u << mbits) - 1u);
	double v;

	if (field == (1u << f->ebits) - 1u)
		v = man ? NAN : INFINITY;
	else if (field == 0)
		v = ldexp((double)man, fmt_emin(f) - mbits);
	else
		v = ldexp(1.0 + ldexp((double)man, -mbits), (int)field - f->bias);
	return sign ? -v : v;
}

/* X (finite) rounded to the nearest value of format F, ties to even;
 * infinity beyond the largest finite value after rounding. */
static double ref_round(const struct fmt *f, double x)
{
	double ax = fabs(x), r;
	int e;

	if (ax == 0.0)
		return x;
	frexp(ax, &e);                  /* ax in [2^(e-1), 2^e) */
	e -= 1;
	if (e < fmt_emin(f))
		e = fmt_emin(f);        /* subnormal: fixed quantum */
	double q = ldexp(1.0, e - (f->p - 1));
	r = nearbyint(ax / q) * q;      /* exact: ax / q needs < 53 bits */
	if (r > fmt_max(f))
		r = INFINITY;
	return x < 0 ? -r : r;
}

/* The bit pattern of V, which F represents exactly (or infinity). */
static unsigned ref_encode(const struct fmt *f, double v)
{
	int mbits = f->p - 1;
	unsigned sign = signbit(v) ? 1u << (mbits + f->ebits) : 0u;
	double a = fabs(v);
	unsigned field, man;

	if (isinf(a)) {
		field = (1u << f->ebits) - 1u;
		man = 0;
	} else if (a < ldexp(1.0, fmt_emin(f))) {
		field = 0;
		man = (unsigned)ldexp(a, mbits - fmt_emin(f));
	} else {
		int e;
		frexp(a, &e);
		e -= 1;
		field = (unsigned)(e + f->bias);
		man = (unsigned)ldexp(ldexp(a, -e) - 1.0, mbits);
	}
	return sign | field << mbits | man;
}

static unsigned to_fmt(const struct fmt *f, float x)
{
	return f == &F16 ? bcg_f32_to_f16(x) : bcg_f32_to_bf16(x);
}

static float from_fmt(const struct fmt *f, unsigned b)
{
	return f == &F16 ? bcg_f16_to_f32((uint16_t)b) : bcg_bf16_to_f32((uint16_t)b);
}

static int is_nan_pattern(const struct fmt *f, unsigned b)
{
	return isnan(ref_decode(f, b));
}

/* Every bit pattern: widening gives the reference value, and narrowing
 * that value gives the pattern back (NaN stays NaN). */
static void test_all_patterns(const struct fmt *f)
{
	long bad_value = 0, bad_trip = 0, bad_nan = 0, nans = 0;

	for (unsigned b = 0; b < 65536; b++) {
		double want = ref_decode(f, b);
		float got = from_fmt(f, b);
		if (isnan(want)) {
			nans++;
			if (!isnan(got) || !is_nan_pattern(f, to_fmt(f, got)))
				bad_nan++;
			continue;
		}
		if ((double)got != want || !signbit(got) != !signbit(want))
			bad_value++;
		if (to_fmt(f, got) != b)
			bad_trip++;
	}
	is_int(bad_value, 0, "%s: all non-NaN patterns widen to their exact value", f->name);
	is_int(bad_trip, 0, "%s: all non-NaN patterns survive f32 and back", f->name);
	is_int(bad_nan, 0, "%s: all %ld NaN patterns stay NaN both ways", f->name, nans);
}

/* Between every two neighbouring finite values: the midpoint goes to the
 * even one, the floats just above and below it to the nearer one. */
static void test_midpoints(const struct fmt *f)
{
	unsigned top = ref_encode(f, fmt_max(f));
	unsigned sign = 1u << (f->p - 1 + f->ebits);
	long bad = 0, checked = 0;

	for (unsigned b = 0; b < top; b++) {
		for (int neg = 0; neg < 2; neg++) {
			unsigned lo = b | (neg ? sign : 0u), hi = (b + 1) | (neg ? sign : 0u);
			double mid = (ref_decode(f, lo) + ref_decode(f, hi)) / 2;
			float m = (float)mid;
			float toward_hi = nextafterf(m, neg ? -INFINITY : INFINITY);
			float toward_lo = nextafterf(m, 0.0f);
			unsigned even = (lo & 1u) ? hi : lo;
			if ((double)m != mid)
				bad++;          /* the midpoint must be a float */
			if (to_fmt(f, m) != even || to_fmt(f, toward_hi) != hi ||
			    to_fmt(f, toward_lo) != lo)
				bad++;
			checked++;
		}
	}
	is_int(bad, 0, "%s: %ld midpoints round to even, their neighbours to nearest",
	       f->name, checked);
}

/* Random f32 bit patterns, from a generator unrelated to numeric.h's. */
static void test_random_floats(const struct fmt *f)
{
	uint32_t x = 2463534242u;
	long bad = 0, n = 1L << 20;

	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		float v = bcg_bits_f32(x);
		unsigned got = to_fmt(f, v);
		if (isnan(v)) {
			bad += !is_nan_pattern(f, got);
			continue;
		}
		unsigned want = ref_encode(f, ref_round(f, (double)v));
		if (got != want) {
			if (bad < 5)
				diag("%s: %a gave 0x%04x, want 0x%04x", f->name, (double)v, got, want);
			bad++;
		}
	}
	is_int(bad, 0, "%s: %ld random floats round as the reference says", f->name, n);
}

static void test_named_cases(void)
{
	/* f16 */
	is_int(bcg_f32_to_f16(1.0f), 0x3c00, "f16: 1");
	is_int(bcg_f32_to_f16(-2.0f), 0xc000, "f16: -2");
	is_int(bcg_f32_to_f16(-0.0f), 0x8000, "f16: -0 keeps its sign");
	is_int(bcg_f32_to_f16(1.0f + 0x1p-11f), 0x3c00, "f16: 1 + half an ulp ties down to even");
	is_int(bcg_f32_to_f16(1.0f + 0x3p-11f), 0x3c02, "f16: 1 + 3 half ulps ties up to even");
	is_int(bcg_f32_to_f16(65504.0f), 0x7bff, "f16: largest finite");
	is_int(bcg_f32_to_f16(65519.996f), 0x7bff, "f16: just below the overflow threshold");
	is_int(bcg_f32_to_f16(65520.0f), 0x7c00, "f16: the overflow threshold rounds to inf");
	is_int(bcg_f32_to_f16(1e9f), 0x7c00, "f16: overflow gives inf");
	is_int(bcg_f32_to_f16(-1e9f), 0xfc00, "f16: negative overflow gives -inf");
	is_int(bcg_f32_to_f16(INFINITY), 0x7c00, "f16: inf");
	is_int(bcg_f32_to_f16(0x1p-24f), 0x0001, "f16: smallest subnormal");
	is_int(bcg_f32_to_f16(0x1p-25f), 0x0000, "f16: half the smallest subnormal ties to 0");
	is_int(bcg_f32_to_f16(0x1.000002p-25f), 0x0001, "f16: just above it rounds up");
	is_int(bcg_f32_to_f16(0x3p-25f), 0x0002, "f16: 1.5 subnormal ulps ties to 2");
	is_int(bcg_f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400,
	       "f16: the largest subnormal's upper midpoint ties up to the smallest normal");
	is_int(bcg_f32_to_f16(0x1p-126f), 0x0000, "f16: a tiny f32 goes to 0");
	is_int(bcg_f32_to_f16(-0x1p-149f), 0x8000, "f16: an f32 subnormal goes to -0");
	ok(isnan(bcg_f16_to_f32(bcg_f32_to_f16(NAN))), "f16: NaN stays NaN");
	is_close(bcg_f16_to_f32(0x0001), 0x1p-24, 0, "f16: 0x0001 is 2^-24");
	is_close(bcg_f16_to_f32(0x3555), 0.333251953125, 0, "f16: 0x3555 is 1365/4096");

	/* bf16 */
	is_int(bcg_f32_to_bf16(1.0f), 0x3f80, "bf16: 1");
	is_int(bcg_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80, "bf16: 1 + half an ulp ties down to even");
	is_int(bcg_f32_to_bf16(1.0f + 0x3p-8f), 0x3f82, "bf16: 1 + 3 half ulps ties up to even");
	is_int(bcg_f32_to_bf16(0x1.fep127f), 0x7f7f, "bf16: largest finite");
	is_int(bcg_f32_to_bf16(0x1.ffp127f), 0x7f80, "bf16: the overflow threshold rounds to inf");
	is_int(bcg_f32_to_bf16(-FLT_MAX), 0xff80, "bf16: -FLT_MAX rounds to -inf");
	is_int(bcg_f32_to_bf16(0x1p-133f), 0x0001, "bf16: smallest subnormal");
	is_int(bcg_f32_to_bf16(0x1p-134f), 0x0000, "bf16: half of it ties to 0");
	ok(isnan(bcg_bf16_to_f32(bcg_f32_to_bf16(NAN))), "bf16: NaN stays NaN");
	ok(isnan(bcg_bf16_to_f32(bcg_f32_to_bf16(bcg_bits_f32(0x7f800001u)))),
	   "bf16: a NaN whose payload lies in the dropped bits stays NaN");
	ok(isnan(bcg_f16_to_f32(bcg_f32_to_f16(bcg_bits_f32(0xff800001u)))),
	   "f16: likewise");
}

/* --- the generator ----------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_generator(void)
{
	/* splitmix64 from state 0 returns these first (published values); the
	 * mixer of seed s, counter c is splitmix64's output for state
	 * (s + 1) * golden + c - golden, i.e. its (s+1)-th output when c = 0. */
	is_u64(bcg_mix64(0, 0), UINT64_C(0xe220a8397b1dcdaf), "mix64(0, 0) is splitmix64's first output");
	is_u64(bcg_mix64(1, 0), UINT64_C(0x6e789e6aa1b965f4), "mix64(1, 0) is its second");
	is_u64(bcg_mix64(2, 0), UINT64_C(0x06c45d188009454f), "mix64(2, 0) is its third");

	enum { NSEED = 16, NCOUNT = 4096 };
	uint64_t *all = malloc(sizeof *all * NSEED * NCOUNT);
	if (!all) {
		diag("out of memory");
		exit(99);
	}
	for (uint64_t s = 0; s < NSEED; s++)
		for (uint64_t c = 0; c < NCOUNT; c++)
			all[s * NCOUNT + c] = bcg_mix64(s * 7919, c);
	qsort(all, NSEED * NCOUNT, sizeof *all, cmp_u64);
	long dups = 0;
	for (long i = 1; i < NSEED * NCOUNT; i++)
		dups += all[i] == all[i - 1];
	free(all);
	is_int(dups, 0, "mix64 is distinct over %d seeds x %d counters", NSEED, NCOUNT);

	long same_seed = 0, same_next = 0, off_grid = 0, out_of_range = 0, bad_formula = 0;
	double sum = 0, sumsq = 0, lo = 1, hi = -1;
	const long n = 100000;
	for (long i = 0; i < n; i++) {
		float u = bcg_uniform(42, (uint64_t)i);
		double scaled = ldexp((double)u, 23);
		double want = ldexp((double)(bcg_mix64(42, (uint64_t)i) >> 40), -23) - 1.0;
		bad_formula += (double)u != want;
		out_of_range += !(u >= -1.0f && u < 1.0f);
		off_grid += scaled != floor(scaled);
		same_seed += u == bcg_uniform(43, (uint64_t)i);
		same_next += u == bcg_uniform(42, (uint64_t)i + 1);
		sum += u;
		sumsq += (double)u * u;
		lo = u < lo ? u : lo;
		hi = u > hi ? u : hi;
	}
	double mean = sum / n, var = sumsq / n - mean * mean;
	is_int(bad_formula, 0, "uniform is the top 24 bits of mix64, mapped to [-1, 1)");
	is_int(out_of_range, 0, "uniform stays in [-1, 1)");
	is_int(off_grid, 0, "uniform is a multiple of 2^-23");
	/* 24-bit values: two independent draws agree with odds 2^-24. */
	ok(same_seed < 5, "another seed gives other values (%ld of %ld equal)", same_seed, n);
	ok(same_next < 5, "the next counter gives another value (%ld of %ld equal)", same_next, n);
	/* The mean's standard deviation is sqrt(1/3 / 1e5) = 0.0018. */
	ok(fabs(mean) < 0.01, "mean of 1e5 draws near 0 (%g)", mean);
	ok(fabs(var - 1.0 / 3.0) < 0.01, "variance of 1e5 draws near 1/3 (%g)", var);
	ok(lo < -0.999 && hi > 0.999, "draws reach both ends (%g, %g)", lo, hi);
	is_close(bcg_uniform(0, 0), ldexp((double)(UINT64_C(0xe220a8397b1dcdaf) >> 40), -23) - 1.0,
	         0, "uniform(0, 0) from splitmix64's first output");

	is_u64(bcg_feed_counter(0, 5), 5, "feed counter at step 0 is the index");
	is_u64(bcg_feed_counter(3, 5), (UINT64_C(3) << 32) | 5, "feed counter puts the step high");
}

/* argmax's rule, written out: NaN first (the smaller column among NaNs),
 * else the larger value, the smaller column among equal values (-0 equal
 * to +0). Whether (V, I) comes before (BV, BI). */
static int argmax_before(float v, int64_t i, float bv, int64_t bi)
{
	if (isnan(v) || isnan(bv))
		return isnan(v) && (!isnan(bv) || i < bi);
	return v > bv || (v == bv && i < bi);
}

/* bcg_argmax_key: the keys' unsigned order is argmax_before's over every
 * pair of a set of special and random values at several columns, the
 * column comes back from its key, no column is below every key, and the
 * largest key of an array is the column the rule's scan picks. */
static void test_argmax_key(void)
{
	float vals[48];
	int nv = 0;
	const float named[] = {
		NAN, -NAN, bcg_bits_f32(0x7f800001u), bcg_bits_f32(0xffc00123u), INFINITY,
		-INFINITY, 0.0f, -0.0f, FLT_MIN, -FLT_MIN, 1e-45f, -1e-45f, 1.0f, -1.0f, 1.5f,
		-1.5f, FLT_MAX, -FLT_MAX, 0.1f, -0.1f,
	};
	const int64_t cols[] = { 0, 1, 5, 1000, 128255, INT32_MAX };
	const int nc = (int)(sizeof cols / sizeof cols[0]);
	long pairs = 0, wrong = 0, back = 0, zero_low = 0;

	for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
		vals[nv++] = named[k];
	for (; nv < 48; nv++)
		vals[nv] = bcg_uniform(7, (uint64_t)nv) * 1e3f;
	for (int a = 0; a < nv * nc; a++) {
		const float va = vals[a / nc];
		const int64_t ia = cols[a % nc];
		const uint64_t ka = bcg_argmax_key(va, ia);
		back += bcg_argmax_key_column(ka) != (int32_t)ia;
		zero_low += ka <= bcg_argmax_key(va, INT64_MAX);
		for (int b = 0; b < nv * nc; b++) {
			const float vb = vals[b / nc];
			const int64_t ib = cols[b % nc];
			const uint64_t kb = bcg_argmax_key(vb, ib);
			pairs++;
			if ((ka > kb) != argmax_before(va, ia, vb, ib))
				wrong++;
		}
	}
	is_int(wrong, 0, "argmax key: the keys' order is argmax's rule (%ld pairs)", pairs);
	is_int(back, 0, "argmax key: a key gives its column back");
	is_int(zero_low, 0, "argmax key: no column (INT64_MAX) is below every column's key");
	is_u64(bcg_argmax_key(1.0f, INT64_MAX), 0, "argmax key: no column is 0");
	is_int(bcg_argmax_key_column(0), 0, "argmax key: key 0 gives column 0");

	/* arrays with ties, NaNs and signed zeros: the largest key is the
	 * rule's scan, as the kernels' atomic maximum over blocks gives it */
	long mismatch = 0;
	for (int t = 0; t < 2000; t++) {
		float x[64];
		int best = 0;
		uint64_t kmax = 0;
		for (int j = 0; j < 64; j++) {
			const float u = bcg_uniform(11, (uint64_t)t * 64 + (uint64_t)j);
			const int r = (int)(bcg_mix64(13, (uint64_t)t * 64 + (uint64_t)j) % 16);
			x[j] = r == 0 ? NAN : r == 1 ? -0.0f : r == 2 ? 0.0f : r < 6 ? -1.0f
			       : (float)(int)(u * 4.0f);
			if (j > 0 && argmax_before(x[j], j, x[best], best))
				best = j;
			const uint64_t k = bcg_argmax_key(x[j], j);
			if (k > kmax)
				kmax = k;
		}
		mismatch += bcg_argmax_key_column(kmax) != best;
	}
	is_int(mismatch, 0, "argmax key: the largest key of 2000 arrays of 64 is argmax's pick");
}

int main(void)
{
	test_all_patterns(&F16);
	test_all_patterns(&BF16);
	test_midpoints(&F16);
	test_midpoints(&BF16);
	test_random_floats(&F16);
	test_random_floats(&BF16);
	test_named_cases();
	test_generator();
	test_argmax_key();
	return tap_done();
}
