/*
 * host-matmul.c - the host reference of matmul.
 *
 * out[M,N] = op(a)[M,K] @ op(b)[K,N], op(a) = a^T when trans_a (a stored
 * [K,M]), op(b) = b^T when trans_b (b stored [N,K]). Each output element is
 * one f32 accumulator summed in k order, from 0.
 *
 * For speed the kernel widens op(b), transposed, and one row of op(a) into
 * f32 scratch, so that the inner loop runs over contiguous floats. Without
 * scratch it reads the operands directly; the arithmetic, and so every
 * output bit, is the same.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "host-kernels.h"

struct host_matmul {
	const struct op_tensor *a, *b, *out;
	int64_t M, N, K;
	int64_t a_m, a_k;               /* strides of op(a)'s rows and columns in a */
	int64_t b_k, b_n;               /* strides of op(b)'s rows and columns in b */
};

static void host_matmul_direct(const struct host_matmul *mm)
{
	for (int64_t m = 0; m < mm->M; m++) {
		for (int64_t n = 0; n < mm->N; n++) {
			float acc = 0.0f;
			for (int64_t k = 0; k < mm->K; k++) {
				float x = host_get(mm->a, m * mm->a_m + k * mm->a_k);
				float y = host_get(mm->b, k * mm->b_k + n * mm->b_n);
				acc += x * y;
			}
			host_put(mm->out, m * mm->N + n, acc);
		}
	}
}

/* ROW holds K floats; COLS N*K, column n of op(b) at COLS + n*K. */
static void host_matmul_scratch(const struct host_matmul *mm, float *row, float *cols)
{
	for (int64_t n = 0; n < mm->N; n++)
		for (int64_t k = 0; k < mm->K; k++)
			cols[n * mm->K + k] = host_get(mm->b, k * mm->b_k + n * mm->b_n);
	for (int64_t m = 0; m < mm->M; m++) {
		for (int64_t k = 0; k < mm->K; k++)
			row[k] = host_get(mm->a, m * mm->a_m + k * mm->a_k);
		for (int64_t n = 0; n < mm->N; n++) {
			const float *col = cols + n * mm->K;
			float acc = 0.0f;
			for (int64_t k = 0; k < mm->K; k++)
				acc += row[k] * col[k];
			host_put(mm->out, m * mm->N + n, acc);
		}
	}
}

void host_matmul_run(const struct op_call *call, int use_scratch)
{
	struct host_matmul mm = {
		.a = &call->in[0], .b = &call->in[1], .out = &call->out[0],
	};
	int trans_a = call->attr[MATMUL_TRANS_A].i != 0;
	int trans_b = call->attr[MATMUL_TRANS_B].i != 0;
	float *scratch = NULL;

	mm.M = mm.out->dim[0];
	mm.N = mm.out->dim[1];
	mm.K = trans_a ? mm.a->dim[0] : mm.a->dim[1];
	mm.a_m = trans_a ? 1 : mm.K;
	mm.a_k = trans_a ? mm.M : 1;
	mm.b_k = trans_b ? 1 : mm.N;
	mm.b_n = trans_b ? mm.K : 1;

	/* (N + 1) * K floats; operands that fit in memory cannot overflow it,
	 * but a size_t of 32 bits could, hence the test. */
	if (use_scratch && mm.K > 0 &&
	    (uint64_t)(mm.N + 1) <= SIZE_MAX / sizeof(float) / (uint64_t)mm.K)
		scratch = malloc((size_t)(mm.N + 1) * (size_t)mm.K * sizeof(float));
	if (scratch)
		host_matmul_scratch(&mm, scratch, scratch + mm.K);
	else
		host_matmul_direct(&mm);
	free(scratch);
}

/* matmul (a, b) -> out: out = op(a) @ op(b), the reference. */
void host_run_matmul(const struct op_call *call)
{
	host_matmul_run(call, 1);
}
