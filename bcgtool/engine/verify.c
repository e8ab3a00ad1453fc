/*
 * verify.c - bit-exact and bounded comparison of tensors.
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "ops/numeric.h"
#include "verify.h"

double verify_bound(int dtype)
{
	return dtype == PLAN_DTYPE_F32 ? 1e-5 : 1e-2;
}

static double verify_load(int dtype, const void *data, uint64_t i)
{
	switch (dtype) {
	case PLAN_DTYPE_F32:  return ((const float *)data)[i];
	case PLAN_DTYPE_F16:  return bcg_f16_to_f32(((const uint16_t *)data)[i]);
	case PLAN_DTYPE_BF16: return bcg_bf16_to_f32(((const uint16_t *)data)[i]);
	default:              return ((const int32_t *)data)[i];
	}
}

/* Whether element I differs in its bytes. */
static int verify_differs(size_t es, const void *got, const void *want, uint64_t i)
{
	if (es == 2)
		return ((const uint16_t *)got)[i] != ((const uint16_t *)want)[i];
	return ((const uint32_t *)got)[i] != ((const uint32_t *)want)[i];
}

/* The pairwise tree of verify.h over VERIFY_LANES values; A is clobbered. */
static double verify_tree(double *a)
{
	for (unsigned s = VERIFY_LANES / 2; s > 0; s /= 2)
		for (unsigned i = 0; i < s; i++)
			a[i] = a[i] + a[i + s];
	return a[0];
}

/* Chunk C's sums into D and R, in the order of verify.h; mismatches and
 * NaN disagreement into S. */
static void verify_chunk(int dtype, const void *got, const void *want, uint64_t count,
                         uint64_t c, double *d, double *r, struct verify_sums *s)
{
	size_t es = plan_dtype_size(dtype);
	unsigned shift = VERIFY_VEC(dtype) == 8 ? 3 : 2;
	double ld[VERIFY_LANES] = { 0 }, lr[VERIFY_LANES] = { 0 };
	uint64_t i = c * VERIFY_CHUNK(dtype);
	uint64_t end = i + VERIFY_CHUNK(dtype) < count ? i + VERIFY_CHUNK(dtype) : count;

	/* Memory order visits each lane's elements in the lane's order. */
	for (; i < end; i++) {
		unsigned lane = (unsigned)(i >> shift) & (VERIFY_LANES - 1);
		double g = verify_load(dtype, got, i), w = verify_load(dtype, want, i);
		if (verify_differs(es, got, want, i))
			s->mismatches++;
		if (isnan(g) != isnan(w))
			s->nan = 1;
		if (!isnan(g) && !isnan(w)) {
			double diff = g - w, dd = diff * diff, ww = w * w;
			ld[lane] = ld[lane] + dd;
			lr[lane] = lr[lane] + ww;
		}
	}
	*d = verify_tree(ld);
	*r = verify_tree(lr);
}

void verify_compare(int dtype, const void *got, const void *want, uint64_t count,
                    int tolerant, struct verify_result *res)
{
	size_t es = plan_dtype_size(dtype);
	uint64_t chunk = VERIFY_CHUNK(dtype);
	double ad[VERIFY_LANES] = { 0 }, ar[VERIFY_LANES] = { 0 };
	struct verify_sums s = { 0 };

	if (memcmp(got, want, (size_t)(count * es)) == 0) {
		verify_finish(dtype, count, tolerant, &s, res);
		return;
	}
	for (uint64_t c = 0; c * chunk < count; c++) {
		double d, r;
		verify_chunk(dtype, got, want, count, c, &d, &r, &s);
		ad[c % VERIFY_LANES] = ad[c % VERIFY_LANES] + d;
		ar[c % VERIFY_LANES] = ar[c % VERIFY_LANES] + r;
	}
	s.diff2 = verify_tree(ad);
	s.ref2 = verify_tree(ar);
	verify_finish(dtype, count, tolerant, &s, res);
}

void verify_finish(int dtype, uint64_t count, int tolerant, const struct verify_sums *s,
                   struct verify_result *res)
{
	memset(res, 0, sizeof *res);
	res->count = count;
	res->exact = s->mismatches == 0;
	if (res->exact) {
		res->pass = 1;
		return;
	}
	res->mismatches = s->mismatches;
	res->rel_error = s->ref2 > 0.0 ? sqrt(s->diff2 / s->ref2) :
	                 (s->diff2 > 0.0 ? INFINITY : 0.0);
	if (s->nan)
		res->rel_error = NAN;
	res->pass = tolerant && dtype != PLAN_DTYPE_I32 && !s->nan &&
	            res->rel_error <= verify_bound(dtype);
}

/* Whether index A beats index B on a row whose values there are VA and
 * VB: argmax's first maximum. */
static int verify_beats(double va, int64_t a, double vb, int64_t b)
{
	return va > vb || (va == vb && a < b);
}

int verify_argmax_ties(int dtype, const void *gx, const void *wx, uint64_t cols,
                       const int32_t *got, const int32_t *want, uint64_t rows, uint64_t *ties,
                       double *gap)
{
	uint64_t n = 0;
	double widest = 0.0;

	*ties = 0;
	*gap = 0.0;
	for (uint64_t r = 0; r < rows; r++) {
		const int64_t g = got[r], w = want[r];
		if (g == w)
			continue;
		if (g < 0 || w < 0 || (uint64_t)g >= cols || (uint64_t)w >= cols)
			return 0;
		const uint64_t base = r * cols;
		const double gg = verify_load(dtype, gx, base + (uint64_t)g);
		const double gw = verify_load(dtype, gx, base + (uint64_t)w);
		const double wg = verify_load(dtype, wx, base + (uint64_t)g);
		const double ww = verify_load(dtype, wx, base + (uint64_t)w);
		if (isnan(gg) || isnan(gw) || isnan(wg) || isnan(ww) ||
		    !verify_beats(gg, g, gw, w) || !verify_beats(ww, w, wg, g))
			return 0;
		if (ww - wg > widest)
			widest = ww - wg;
		n++;
	}
	*ties = n;
	*gap = widest;
	return 1;
}

double verify_sum(int dtype, const void *data, uint64_t count)
{
	double s = 0.0;

	for (uint64_t i = 0; i < count; i++)
		s += verify_load(dtype, data, i);
	return s;
}
