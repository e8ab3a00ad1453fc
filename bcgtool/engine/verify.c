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

void verify_compare(int dtype, const void *got, const void *want, uint64_t count,
                    int tolerant, struct verify_result *res)
{
	size_t es = plan_dtype_size(dtype);
	double diff2 = 0.0, ref2 = 0.0;
	int nan = 0;

	memset(res, 0, sizeof *res);
	res->count = count;
	res->exact = memcmp(got, want, (size_t)(count * es)) == 0;
	if (res->exact) {
		res->pass = 1;
		return;
	}
	for (uint64_t i = 0; i < count; i++) {
		if (memcmp((const char *)got + i * es, (const char *)want + i * es, es) == 0)
			continue;
		res->mismatches++;
	}
	for (uint64_t i = 0; i < count; i++) {
		double g = verify_load(dtype, got, i), w = verify_load(dtype, want, i);
		if (isnan(g) != isnan(w))
			nan = 1;
		if (isnan(g) || isnan(w))
			continue;
		diff2 += (g - w) * (g - w);
		ref2 += w * w;
	}
	res->rel_error = ref2 > 0.0 ? sqrt(diff2 / ref2) : (diff2 > 0.0 ? INFINITY : 0.0);
	if (nan)
		res->rel_error = NAN;
	res->pass = tolerant && dtype != PLAN_DTYPE_I32 && !nan &&
	            res->rel_error <= verify_bound(dtype);
}

double verify_sum(int dtype, const void *data, uint64_t count)
{
	double s = 0.0;

	for (uint64_t i = 0; i < count; i++)
		s += verify_load(dtype, data, i);
	return s;
}
