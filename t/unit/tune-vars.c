/*
 * tune-vars.c - the values capture --tune-var gives a var while the tuner
 * times (engine/tune.h): alone, the range's middle; in the steps of
 * --tune-step, a stride (tune_var_stride) that spreads a turn's timed
 * steps over the whole range, each value as plan_var_value computes it
 * for the step's index, the way a replay's steps take them.
 */
#include "config.h"

#include <stdint.h>

#include "engine/tune.h"
#include "tap.h"

/* The values of R's var stepping by STRIDE at the timed steps of one turn
 * of --tune-step (steps TUNE_STEP_WARMUP on, TUNE_STEP_STEPS of them):
 * the lowest and highest, how many lie above ABOVE, and whether each lies
 * in the range. */
static int timed_values(const struct engine_var_range *r, int64_t stride, int64_t above,
                        int64_t *lo, int64_t *hi, int *nabove)
{
	const struct plan_var var = { .name = r->name, .start = r->start, .step = stride,
		                      .limit = r->limit };
	int inside = 1;

	*lo = INT64_MAX;
	*hi = INT64_MIN;
	*nabove = 0;
	for (uint64_t s = TUNE_STEP_WARMUP; s < TUNE_STEP_WARMUP + TUNE_STEP_STEPS; s++) {
		int64_t v = plan_var_value(&var, s);
		inside &= v >= r->start && v <= r->limit;
		*lo = v < *lo ? v : *lo;
		*hi = v > *hi ? v : *hi;
		*nabove += v > above;
	}
	return inside;
}

int main(void)
{
	const struct engine_var_range decode = { "kv_len", 108, 1108, 0 };
	const struct engine_var_range short_range = { "kv_len", 33, 160, 0 };
	const struct engine_var_range narrow = { "kv_len", 0, 10, 0 };
	const struct engine_var_range tokens8 = { "kv_len", 8, 4008, 0 };
	const struct engine_var_range one = { "kv_len", 5, 5, 0 };
	int64_t lo, hi, stride;
	int nabove, inside;

	is_int(tune_var_alone(&decode), 608, "alone: the middle of 108..1108");
	is_int(tune_var_alone(&short_range), 96, "alone: the middle of 33..160, rounded down");
	is_int(tune_var_alone(&one), 5, "alone: a range of one value is that value");

	/* 108..1108: a stride of 20, and a turn's timed steps reach both ends
	 * and run mostly past attention's one round (256 positions), where
	 * a stride of 1 would stay within 118..167 */
	stride = tune_var_stride(&decode, 1);
	is_int(stride, 21, "stride: 1001 values over %d steps, rounded up", TUNE_STEP_STEPS);
	inside = timed_values(&decode, stride, 256, &lo, &hi, &nabove);
	ok(inside, "108..1108: every timed value in the range");
	ok(lo < 108 + stride && hi > 1108 - stride,
	   "108..1108: the timed values reach both ends (%lld to %lld)", (long long)lo,
	   (long long)hi);
	ok(nabove > TUNE_STEP_STEPS / 2, "108..1108: %d of %d timed values past 256", nabove,
	   TUNE_STEP_STEPS);
	inside = timed_values(&decode, 1, 256, &lo, &hi, &nabove);
	ok(inside && hi == 167 && nabove == 0, "108..1108 by the plan's step of 1: the timed "
	   "values end at %lld, %d past 256 (what the stride mends)", (long long)hi, nabove);

	stride = tune_var_stride(&short_range, 1);
	is_int(stride, 3, "stride: 128 values over %d steps, rounded up", TUNE_STEP_STEPS);
	inside = timed_values(&short_range, stride, 0, &lo, &hi, &nabove);
	ok(inside && lo < 33 + stride && hi > 160 - stride,
	   "33..160: the timed values reach both ends (%lld to %lld)", (long long)lo,
	   (long long)hi);

	is_int(tune_var_stride(&narrow, 1), 1, "stride: a range narrower than a turn keeps the "
	       "plan's step");
	is_int(tune_var_stride(&narrow, 0), 1, "stride: a constant var (step 0) steps by 1");
	stride = tune_var_stride(&tokens8, 8);
	is_int(stride, 88, "stride: a multiple of the plan's step of 8");
	inside = timed_values(&tokens8, stride, 0, &lo, &hi, &nabove);
	ok(inside && lo < 8 + stride && hi > 4008 - stride,
	   "8..4008 by 88: the timed values reach both ends (%lld to %lld)", (long long)lo,
	   (long long)hi);
	return tap_done();
}
