/*
 * verify.c - comparisons of tensors (engine/verify.h): verify_compare on
 * crafted data against the definition, then every backend's compare
 * against verify_compare, bit for bit (the cuda part skips without a
 * usable GPU).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "engine/verify.h"
#include "ops/numeric.h"
#include "tap.h"

static const int dtypes[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16, PLAN_DTYPE_I32 };
static const char *const dtype_names[] = { "?", "f32", "f16", "bf16", "i32" };
#define NDTYPES 4

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL) {
		printf("Bail out! out of memory\n");
		exit(99);
	}
	return p;
}

/* --- verify_compare against its definition ---------------------------- */

static void put_f32(void *buf, uint64_t i, float v)
{
	((float *)buf)[i] = v;
}

/* Element I of DTYPE as a double, the way the definition reads it. */
static double value(int dtype, const void *buf, uint64_t i)
{
	switch (dtype) {
	case PLAN_DTYPE_F32:  return ((const float *)buf)[i];
	case PLAN_DTYPE_F16:  return bcg_f16_to_f32(((const uint16_t *)buf)[i]);
	case PLAN_DTYPE_BF16: return bcg_bf16_to_f32(((const uint16_t *)buf)[i]);
	default:              return ((const int32_t *)buf)[i];
	}
}

/* The definition, one element after another: what verify_compare must
 * give, up to the order of the two sums. */
static void definition(int dtype, const void *got, const void *want, uint64_t n, int tolerant,
                       struct verify_result *r)
{
	size_t es = plan_dtype_size(dtype);
	double d2 = 0.0, r2 = 0.0;
	int nan = 0;

	memset(r, 0, sizeof *r);
	r->count = n;
	for (uint64_t i = 0; i < n; i++) {
		double g = value(dtype, got, i), w = value(dtype, want, i);
		if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) != 0)
			r->mismatches++;
		if (isnan(g) != isnan(w))
			nan = 1;
		if (!isnan(g) && !isnan(w)) {
			d2 += (g - w) * (g - w);
			r2 += w * w;
		}
	}
	r->exact = r->mismatches == 0;
	if (r->exact) {
		r->pass = 1;
		return;
	}
	r->rel_error = nan ? NAN : r2 > 0.0 ? sqrt(d2 / r2) : d2 > 0.0 ? INFINITY : 0.0;
	r->pass = tolerant && dtype != PLAN_DTYPE_I32 && !nan &&
	          r->rel_error <= verify_bound(dtype);
}

static int same_error(double a, double b, double rel)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	if (isinf(a) || isinf(b) || a == 0.0 || b == 0.0)
		return a == b;
	return fabs(a - b) <= rel * fabs(b);
}

/* Deterministic data: a counter-based generator (ops/numeric.h). */
static void fill(int dtype, void *buf, uint64_t n, uint64_t seed)
{
	for (uint64_t i = 0; i < n; i++) {
		float v = (float)((double)(bcg_mix64(seed, i) >> 11) / 9007199254740992.0 * 4.0 - 2.0);
		switch (dtype) {
		case PLAN_DTYPE_F32:  ((float *)buf)[i] = v; break;
		case PLAN_DTYPE_F16:  ((uint16_t *)buf)[i] = bcg_f32_to_f16(v); break;
		case PLAN_DTYPE_BF16: ((uint16_t *)buf)[i] = bcg_f32_to_bf16(v); break;
		default:              ((int32_t *)buf)[i] = (int32_t)(bcg_mix64(seed, i) % 2001) - 1000;
		}
	}
}

/* Change element I of DTYPE by one unit in the last place (the last bit). */
static void bump(int dtype, void *buf, uint64_t i)
{
	if (plan_dtype_size(dtype) == 2)
		((uint16_t *)buf)[i] ^= 1u;
	else
		((uint32_t *)buf)[i] ^= 1u;
}

/* Kinds of difference a test pair has. */
enum { DIFF_NONE, DIFF_ULP, DIFF_NAN_SAME, DIFF_NAN_PAYLOAD, DIFF_NAN_ONE, DIFF_SIGNED_ZERO,
       DIFF_LARGE, NDIFF };
static const char *const diff_names[] = {
	"identical", "one ulp every 7th", "NaN in both, same bits", "NaN in both, other payloads",
	"NaN on one side", "-0.0 against 0.0", "a large difference"
};

/* A pair of COUNT elements of DTYPE with the difference KIND. */
static void make_pair(int dtype, uint64_t n, int kind, void *got, void *want)
{
	size_t es = plan_dtype_size(dtype);
	int fl = dtype != PLAN_DTYPE_I32;
	uint32_t qnan32 = 0x7fc00000u;
	uint16_t qnan16 = dtype == PLAN_DTYPE_F16 ? 0x7e00u : 0x7fc0u;

	fill(dtype, want, n, 42 + (uint64_t)dtype);
	memcpy(got, want, n * es);
	for (uint64_t i = 0; i < n; i++) {
		int at = i % 97 == 5;
		switch (kind) {
		case DIFF_ULP:
			if (i % 7 == 3)
				bump(dtype, got, i);
			break;
		case DIFF_NAN_SAME:
		case DIFF_NAN_PAYLOAD:
			if (at && fl) {
				if (es == 4)
					memcpy((char *)want + i * 4, &qnan32, 4);
				else
					memcpy((char *)want + i * 2, &qnan16, 2);
				memcpy((char *)got + i * es, (char *)want + i * es, es);
				if (kind == DIFF_NAN_PAYLOAD)
					bump(dtype, got, i);
			}
			if (i % 7 == 3)
				bump(dtype, got, i);
			break;
		case DIFF_NAN_ONE:
			if (at && fl) {
				if (es == 4)
					memcpy((char *)got + i * 4, &qnan32, 4);
				else
					memcpy((char *)got + i * 2, &qnan16, 2);
			}
			if (i % 7 == 3)
				bump(dtype, got, i);
			break;
		case DIFF_SIGNED_ZERO:
			if (at) {
				memset((char *)want + i * es, 0, es);
				memset((char *)got + i * es, 0, es);
				/* The sign bit: the top bit of the top byte. */
				if (fl)
					((unsigned char *)got)[i * es + es - 1] = 0x80;
			}
			break;
		case DIFF_LARGE:
			if (i % 3 == 0) {
				if (dtype == PLAN_DTYPE_I32)
					((int32_t *)got)[i] += 5;
				else
					((unsigned char *)got)[i * es + es - 1] ^= 0x80;
			}
			break;
		default:
			break;
		}
	}
}

static void test_crafted(void)
{
	float g[4] = { 1.0f, 2.0f, 3.0f, 4.0f }, w[4];
	struct verify_result r;

	memcpy(w, g, sizeof w);
	verify_compare(PLAN_DTYPE_F32, g, w, 4, 0, &r);
	ok(r.exact && r.pass && r.rel_error == 0.0 && r.mismatches == 0 && r.count == 4,
	   "identical f32: exact, passes, no error");

	put_f32(g, 1, -0.0f);
	put_f32(w, 1, 0.0f);
	verify_compare(PLAN_DTYPE_F32, g, w, 4, 0, &r);
	ok(!r.exact && !r.pass && r.mismatches == 1 && r.rel_error == 0.0,
	   "-0.0 against 0.0: one mismatch, no error, fails where bits must match");
	verify_compare(PLAN_DTYPE_F32, g, w, 4, 1, &r);
	ok(r.pass, "-0.0 against 0.0 passes a tolerant check");

	memcpy(g, w, sizeof g);
	bump(PLAN_DTYPE_F32, g, 3);
	verify_compare(PLAN_DTYPE_F32, g, w, 4, 1, &r);
	/* 4 + one ulp (2^-21) against a norm of sqrt(1 + 0 + 9 + 16). */
	ok(!r.exact && r.pass && r.mismatches == 1 &&
	   same_error(r.rel_error, ldexp(1.0, -21) / sqrt(26.0), 1e-15),
	   "one ulp of f32: the relative error is the ulp over the norm, within the bound");

	put_f32(g, 2, NAN);
	put_f32(w, 2, NAN);
	memcpy(&g[2], &w[2], 4);
	verify_compare(PLAN_DTYPE_F32, g, w, 4, 1, &r);
	ok(r.pass && r.mismatches == 1 && same_error(r.rel_error, ldexp(1.0, -21) / sqrt(17.0), 1e-15),
	   "NaN with the same bits on both sides is equal and leaves the sums");

	put_f32(w, 2, 3.0f);
	verify_compare(PLAN_DTYPE_F32, g, w, 4, 1, &r);
	ok(!r.pass && isnan(r.rel_error) && r.mismatches == 2,
	   "NaN on one side: the relative error is NaN and the check fails");

	{
		int32_t a[3] = { 7, -1, 1 << 30 }, b[3] = { 7, -1, (1 << 30) + 1 };
		verify_compare(PLAN_DTYPE_I32, a, b, 3, 1, &r);
		ok(!r.exact && !r.pass && r.mismatches == 1 && r.rel_error > 0.0 && r.rel_error < 1e-8,
		   "i32 off by one fails even where a bound is allowed");
	}
	{
		uint16_t a[2] = { 0x3c00, 0x0000 }, b[2] = { 0x3c01, 0x0000 };
		verify_compare(PLAN_DTYPE_F16, a, b, 2, 1, &r);
		ok(r.pass && !r.exact && same_error(r.rel_error, ldexp(1.0, -10) / (1.0 + ldexp(1.0, -10)), 1e-15),
		   "one ulp of f16 at 1.0");
	}
	{
		float a[2] = { 1.0f, 0.0f }, b[2] = { 0.0f, 0.0f };
		verify_compare(PLAN_DTYPE_F32, a, b, 2, 1, &r);
		ok(!r.pass && isinf(r.rel_error), "a difference against a zero reference: infinite error");
	}
}

/* Every dtype, every kind of difference, sizes around the chunk: the
 * result is the definition's, with the sums in their own order. */
/* --- an argmax's near-ties (verify_argmax_ties) ----------------------- */

/* Rows of 4 logits a side, f16 or f32; GOT_I and WANT_I the indexes. */
static void test_argmax_ties(void)
{
	/* row 0: the same winner; row 1: tokens 1 and 2 near-tied, each
	 * side's own logits preferring its own; row 2: tied exactly on the
	 * got side, where argmax takes the first */
	const float want_x[12] = { 9, 1, 2, 3,   0, 5.0f, 4.999f, 1,   2, 7, 6.999f, 0 };
	const float got_x[12]  = { 9, 1, 2, 3,   0, 4.998f, 4.999f, 1,   2, 7, 7, 0 };
	int32_t want_i[3] = { 0, 1, 1 }, got_i[3] = { 0, 2, 1 };
	uint64_t ties = 99;
	double gap = -1.0;

	ok(verify_argmax_ties(PLAN_DTYPE_F32, got_x, want_x, 4, got_i, want_i, 3, &ties, &gap) &&
	   ties == 1 && same_error(gap, 5.0 - (double)4.999f, 1e-6),
	   "argmax ties: a flip between two near-tied tokens passes, counted, with its gap");
	got_i[1] = 3;
	ok(!verify_argmax_ties(PLAN_DTYPE_F32, got_x, want_x, 4, got_i, want_i, 3, &ties, &gap) &&
	   ties == 0 && gap == 0.0,
	   "argmax ties: an index its own side's logits do not prefer fails");
	got_i[1] = 2;
	got_i[2] = 2;
	ok(!verify_argmax_ties(PLAN_DTYPE_F32, got_x, want_x, 4, got_i, want_i, 3, &ties, &gap),
	   "argmax ties: on equal logits the later index is not the argmax");
	got_i[2] = 1;
	want_i[1] = 3;
	ok(!verify_argmax_ties(PLAN_DTYPE_F32, got_x, want_x, 4, got_i, want_i, 3, &ties, &gap),
	   "argmax ties: a reference index its own logits do not prefer fails");
	want_i[1] = 1;
	got_i[1] = 4;
	ok(!verify_argmax_ties(PLAN_DTYPE_F32, got_x, want_x, 4, got_i, want_i, 3, &ties, &gap),
	   "argmax ties: an index past the row fails");
	got_i[1] = -1;
	ok(!verify_argmax_ties(PLAN_DTYPE_F32, got_x, want_x, 4, got_i, want_i, 3, &ties, &gap),
	   "argmax ties: a negative index fails");

	float other_x[12];
	memcpy(other_x, got_x, sizeof other_x);
	other_x[5] = NAN;
	got_i[1] = 2;
	ok(!verify_argmax_ties(PLAN_DTYPE_F32, other_x, want_x, 4, got_i, want_i, 3, &ties, &gap),
	   "argmax ties: a NaN logit at either index fails");
	ok(verify_argmax_ties(PLAN_DTYPE_F32, got_x, want_x, 4, want_i, want_i, 3, &ties, &gap) &&
	   ties == 0 && gap == 0.0, "argmax ties: equal indexes are no ties");

	/* 4.999 and 4.9995 are two f32 values but one f16 value (5.0): stored
	 * in f16, the got side's tie goes to the first index, 1, not 2 */
	uint16_t gh[12], wh[12];
	memcpy(other_x, got_x, sizeof other_x);
	other_x[5] = 4.999f;
	other_x[6] = 4.9995f;
	ok(verify_argmax_ties(PLAN_DTYPE_F32, other_x, want_x, 4, got_i, want_i, 3, &ties, &gap) &&
	   ties == 1, "argmax ties: in f32 the flip passes");
	for (int i = 0; i < 12; i++) {
		gh[i] = bcg_f32_to_f16(other_x[i]);
		wh[i] = bcg_f32_to_f16(want_x[i]);
	}
	ok(!verify_argmax_ties(PLAN_DTYPE_F16, gh, wh, 4, got_i, want_i, 3, &ties, &gap),
	   "argmax ties: f16 logits are read as stored");
	gh[6] = bcg_f32_to_f16(5.5f);
	ok(verify_argmax_ties(PLAN_DTYPE_F16, gh, wh, 4, got_i, want_i, 3, &ties, &gap) &&
	   ties == 1, "argmax ties: f16 logits, a flip that their values allow passes");
}

static void test_definition(void)
{
	for (int d = 0; d < NDTYPES; d++) {
		int dt = dtypes[d];
		uint64_t sizes[] = { 1, VERIFY_CHUNK(dt) - 1, 3 * VERIFY_CHUNK(dt) + 17 };
		for (unsigned s = 0; s < 3; s++) {
			uint64_t n = sizes[s];
			void *g = xmalloc(n * 4), *w = xmalloc(n * 4);
			int good = 1;
			for (int k = 0; k < NDIFF; k++)
				for (int tol = 0; tol < 2; tol++) {
					struct verify_result a, b;
					make_pair(dt, n, k, g, w);
					verify_compare(dt, g, w, n, tol, &a);
					definition(dt, g, w, n, tol, &b);
					if (a.count != b.count || a.exact != b.exact || a.pass != b.pass ||
					    a.mismatches != b.mismatches ||
					    !same_error(a.rel_error, b.rel_error, 1e-12)) {
						diag("%s, %llu elements, %s, tolerant %d: "
						     "exact %d/%d pass %d/%d mismatches %llu/%llu error %.17g/%.17g",
						     dtype_names[dt], (unsigned long long)n, diff_names[k], tol,
						     a.exact, b.exact, a.pass, b.pass,
						     (unsigned long long)a.mismatches,
						     (unsigned long long)b.mismatches, a.rel_error, b.rel_error);
						good = 0;
					}
				}
			ok(good, "%s, %llu elements: verify_compare gives the definition's result "
			   "for every kind of difference", dtype_names[dt], (unsigned long long)n);
			free(g);
			free(w);
		}
	}
}

/* --- the backends' compare against verify_compare --------------------- */

static int same_result(const struct verify_result *a, const struct verify_result *b)
{
	return a->count == b->count && a->exact == b->exact && a->pass == b->pass &&
	       a->mismatches == b->mismatches &&
	       (memcmp(&a->rel_error, &b->rel_error, sizeof a->rel_error) == 0 ||
	        (isnan(a->rel_error) && isnan(b->rel_error)));
}

/* A backend's result GOT beside verify_compare's WANT, field by field. */
static void diag_result(const char *backend, const char *where, int dtype, uint64_t n, int kind,
                        const struct verify_result *got, const struct verify_result *want)
{
	diag("%s %s, %s, %llu elements, %s: exact %d/%d pass %d/%d mismatches %llu/%llu "
	     "error %.17g/%.17g", backend, dtype_names[dtype], where, (unsigned long long)n,
	     diff_names[kind], got->exact, want->exact, got->pass, want->pass,
	     (unsigned long long)got->mismatches, (unsigned long long)want->mismatches,
	     got->rel_error, want->rel_error);
}

/* Checks one backend makes: per dtype, sizes x kinds in one check, the
 * misaligned one, the kept copy and the repeat. */
#define BACKEND_CHECKS (NDTYPES * 3 + 1)

static void test_backend(const struct backend_ops *be)
{
	struct backend *b = NULL;
	struct backend_info info;
	char msg[256];
	void *base = NULL;
	uint64_t most = 5 * VERIFY_CHUNK(PLAN_DTYPE_F16) + 1001;   /* elements */
	/* A multiple of 256: dw is as aligned as dg, so the aligned checks
	 * take the CUDA kernel's 16-byte loads. */
	size_t room = ((size_t)most * 4 + 64 + 255) & ~(size_t)255;

	if (be->open(&b, &info, msg, sizeof msg) != 0) {
		if (be->kind == PLAN_BACKEND_HOST)
			ok(0, "host: the backend opens (%s)", msg);
		else
			tap_skip(BACKEND_CHECKS, "no usable GPU");
		return;
	}
	if (be->alloc(b, 2 * room, 0, &base, msg, sizeof msg) != 0) {
		ok(0, "%s: allocating the test arena: %s", be->name, msg);
		be->close(b);
		return;
	}
	void *g = xmalloc(room), *w = xmalloc(room);
	void *dg = base, *dw = backend_at(base, room);
	int repeat_same = 1;

	for (int d = 0; d < NDTYPES; d++) {
		int dt = dtypes[d];
		size_t es = plan_dtype_size(dt);
		uint64_t sizes[] = { 0, 1, 7, VERIFY_LANES * VERIFY_VEC(dt) + 3, VERIFY_CHUNK(dt),
		                     VERIFY_CHUNK(dt) + 1, most - 3 };
		int good = 1, unaligned = 1, kept = 1;
		for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; s++)
			for (int k = 0; k < NDIFF; k++) {
				uint64_t n = sizes[s];
				struct verify_result want, got, again, moved, fromcopy;
				void *copy = NULL;
				make_pair(dt, n ? n : 1, k, g, w);
				verify_compare(dt, g, w, n, k % 2, &want);
				if (be->write(b, dg, g, n * es, msg, sizeof msg) != 0 ||
				    be->write(b, dw, w, n * es, msg, sizeof msg) != 0 ||
				    be->compare(b, dt, dg, dw, n, k % 2, &got, msg, sizeof msg) != 0 ||
				    be->compare(b, dt, dg, dw, n, k % 2, &again, msg, sizeof msg) != 0) {
					diag("%s: %s", be->name, msg);
					good = 0;
					continue;
				}
				if (!same_result(&got, &want)) {
					diag_result(be->name, "aligned", dt, n, k, &got, &want);
					good = 0;
				}
				repeat_same &= same_result(&got, &again);
				/* One element in: no 16-byte alignment, the same sums. */
				if (n > 1 &&
				    (be->write(b, backend_at(dg, es), g, (n - 1) * es, msg, sizeof msg) != 0 ||
				     be->write(b, backend_at(dw, es), w, (n - 1) * es, msg, sizeof msg) != 0 ||
				     be->compare(b, dt, backend_at(dg, es), backend_at(dw, es), n - 1, k % 2,
				                 &moved, msg, sizeof msg) != 0)) {
					diag("%s: %s", be->name, msg);
					unaligned = 0;
				} else if (n > 1) {
					struct verify_result ref;
					verify_compare(dt, g, w, n - 1, k % 2, &ref);
					if (!same_result(&moved, &ref)) {
						diag_result(be->name, "one element in", dt, n - 1, k, &moved, &ref);
						unaligned = 0;
					}
				}
				/* The reference kept in spare memory, compared there. */
				if (be->spare_alloc(b, n * es, &copy, msg, sizeof msg) != 0 || copy == NULL ||
				    be->write(b, dw, w, n * es, msg, sizeof msg) != 0 ||
				    be->copy(b, copy, dw, n * es, msg, sizeof msg) != 0 ||
				    be->write(b, dw, g, n * es, msg, sizeof msg) != 0 ||
				    be->compare(b, dt, dw, copy, n, k % 2, &fromcopy, msg, sizeof msg) != 0) {
					diag("%s: keeping a copy: %s", be->name, copy == NULL ? "no room" : msg);
					kept = 0;
				} else {
					kept &= same_result(&fromcopy, &want);
				}
				if (copy != NULL)
					be->spare_free(b, copy);
			}
		ok(good, "%s %s: compare gives verify_compare's result, bit for bit, for every size "
		   "and kind of difference", be->name, dtype_names[dt]);
		ok(unaligned, "%s %s: the same off 16-byte alignment", be->name, dtype_names[dt]);
		ok(kept, "%s %s: a copy kept in spare memory compares as the original", be->name,
		   dtype_names[dt]);
	}
	ok(repeat_same, "%s: a comparison repeated gives the same bits", be->name);
	free(g);
	free(w);
	be->free(b, base);
	be->close(b);
}

int main(void)
{
	const struct backend_ops *cuda = backend_find("cuda");

	test_crafted();
	test_argmax_ties();
	test_definition();
	test_backend(backend_find("host"));
	if (cuda != NULL)
		test_backend(cuda);
	else
		tap_skip(BACKEND_CHECKS, "built without CUDA");
	return tap_done();
}
