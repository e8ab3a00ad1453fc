/*
 * verify.h - compare a replay's outputs with an eager run's.
 *
 * Where every kernel of a step is the same code in the same order (eager
 * and breakable modes), a replay must match the eager run bit for bit. A
 * full-mode replay runs graph-safe forms that sum in another order, so it
 * is held to a normwise relative error bound per dtype instead:
 * ||replay - eager||_2 / ||eager||_2 <= 1e-5 (f32), 1e-2 (f16, bf16);
 * i32 tensors must match exactly, with one exception. Where an i32
 * tensor is an argmax's index and the values it picked from are compared
 * too (a step's logits and next token: argmax's input,
 * rmsnorm_matmul_argmax's other output), two tokens whose logits are nearly
 * tied can trade places within the input's bound: a row whose index
 * differs then passes when the input passes its bound and each side's
 * index beats the other's on that side's own input (verify_argmax_ties);
 * such rows are counted as ties, never silently.
 *
 * The two sums behind the relative error are taken in one fixed order,
 * which the host (verify_compare) and the CUDA backend's kernel
 * (backend-cuda-verify.cu) both follow, so that a comparison gives the
 * same bits wherever the data lies and however many blocks run it:
 *  - VERIFY_LANES lanes; a lane takes VERIFY_VEC(dtype) consecutive
 *    elements (16 bytes) at a time;
 *  - a chunk is VERIFY_ROWS rows of VERIFY_LANES * VERIFY_VEC elements;
 *    lane l sums, in this order, elements l*V .. l*V+V-1 of row 0, then
 *    of row 1, and so on (elements past the count are absent);
 *  - the lanes' sums are added by a tree (a[i] += a[i + s] for i < s,
 *    s = LANES/2, LANES/4 ... 1; a[0] is the sum): the chunk's sum;
 *  - accumulator t (< VERIFY_LANES) sums the chunk sums t, t + LANES,
 *    t + 2 LANES ... in order; the same tree over the accumulators gives
 *    the total.
 * Every addition and product is a rounded double operation (no fused
 * multiply-add): diff2 += (g - w)^2, ref2 += w^2 over the positions where
 * neither side is NaN.
 */
#ifndef BCG_ENGINE_VERIFY_H
#define BCG_ENGINE_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#define VERIFY_LANES 256
#define VERIFY_ROWS  16
#define VERIFY_VEC(dtype)   ((dtype) == PLAN_DTYPE_F16 || (dtype) == PLAN_DTYPE_BF16 ? 8u : 4u)
#define VERIFY_CHUNK(dtype) ((uint64_t)VERIFY_ROWS * VERIFY_LANES * VERIFY_VEC(dtype))

struct verify_result {
	int      exact;        /* bytes identical */
	int      pass;         /* exact, or within the bound where allowed */
	double   rel_error;    /* normwise relative error (0 when exact) */
	uint64_t mismatches;   /* elements that differ */
	uint64_t count;        /* elements compared */
	uint64_t ties;         /* of an argmax's index: differing rows passed
	                          as near-ties (verify_argmax_ties) */
};

/* What a pass over the data gathers; verify_finish() makes the result. */
struct verify_sums {
	double   diff2;        /* sum of (got - want)^2, neither NaN */
	double   ref2;         /* sum of want^2, neither NaN */
	uint64_t mismatches;   /* elements whose bytes differ */
	uint32_t nan;          /* some position is NaN on one side only */
	uint32_t pad_;
};

/* The bound for DTYPE when an inexact match is allowed. */
double verify_bound(int dtype);

/* Compare COUNT elements of DTYPE; TOLERANT allows the bound. */
void verify_compare(int dtype, const void *got, const void *want, uint64_t count,
                    int tolerant, struct verify_result *res);

/* The result of comparing COUNT elements of DTYPE from their sums. */
void verify_finish(int dtype, uint64_t count, int tolerant, const struct verify_sums *s,
                   struct verify_result *res);

/*
 * Whether ROWS indexes GOT and WANT of an argmax over rows of COLS
 * elements of DTYPE (GX and WX: its input on each side) differ only by
 * near-ties: in every row where they differ both indexes lie in [0, COLS),
 * neither side's input is NaN at either, and each side's index beats the
 * other's on its own side by argmax's rule (greater, or equal and first).
 * Then *TIES is the count of such rows and *GAP the largest
 * WX[w] - WX[g] among them (w and g: the want and the got index), and 1
 * is returned; else 0, with *TIES and *GAP 0.
 */
int verify_argmax_ties(int dtype, const void *gx, const void *wx, uint64_t cols,
                       const int32_t *got, const int32_t *want, uint64_t rows, uint64_t *ties,
                       double *gap);

/* Sum of COUNT elements of DTYPE, in double. */
double verify_sum(int dtype, const void *data, uint64_t count);

#endif /* BCG_ENGINE_VERIFY_H */
