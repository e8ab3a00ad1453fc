/*
 * verify.h - compare a replay's outputs with an eager run's.
 *
 * Where every kernel of a step is the same code in the same order (eager
 * and breakable modes), a replay must match the eager run bit for bit. A
 * full-mode replay runs graph-safe forms that sum in another order, so it
 * is held to a normwise relative error bound per dtype instead:
 * ||replay - eager||_2 / ||eager||_2 <= 1e-5 (f32), 1e-2 (f16, bf16);
 * i32 tensors must always match exactly.
 */
#ifndef BCG_ENGINE_VERIFY_H
#define BCG_ENGINE_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

struct verify_result {
	int      exact;        /* bytes identical */
	int      pass;         /* exact, or within the bound where allowed */
	double   rel_error;    /* normwise relative error (0 when exact) */
	uint64_t mismatches;   /* elements that differ */
	uint64_t count;        /* elements compared */
};

/* The bound for DTYPE when an inexact match is allowed. */
double verify_bound(int dtype);

/* Compare COUNT elements of DTYPE; TOLERANT allows the bound. */
void verify_compare(int dtype, const void *got, const void *want, uint64_t count,
                    int tolerant, struct verify_result *res);

/* Sum of COUNT elements of DTYPE, in double. */
double verify_sum(int dtype, const void *data, uint64_t count);

#endif /* BCG_ENGINE_VERIFY_H */
