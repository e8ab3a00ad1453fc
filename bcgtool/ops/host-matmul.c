/*
 * host-matmul.c - the host references of the products: matmul, and the
 * fused matmul_add and matmul_silu_mul, each in two implementations.
 *
 * The product P[M,N] = op(a)[M,K] @ op(b)[K,N], op(a) = a^T when trans_a
 * (a stored [K,M]), op(b) = b^T when trans_b (b stored [N,K]). Each element
 * of P is one f32 accumulator summed in k order, from 0. An epilogue then
 * writes the output from P:
 *
 *   matmul           out = P
 *   matmul_add       out = x + round(P)      (add of the stored product)
 *   matmul_silu_mul  out = silu(round(P[:, j])) * round(P[:, N/2 + j])
 *
 * round() is the store to the dtype and the load back, what the unfused
 * sequence does between its two kernels; the epilogue's arithmetic is that
 * of host_run_add and host_run_silu_mul, so the bytes are theirs.
 *
 * "reference" computes one element at a time, a dot product over k; for
 * speed it widens op(b), transposed, and one row of op(a) into f32 scratch,
 * and without scratch it reads the operands directly. "blocked" keeps a
 * block of accumulators and adds one k at a time to all of them, through
 * tiles of op(b) widened to f32: the inner loop runs over independent
 * accumulators (which pipelines and vectorizes), yet each accumulator still
 * sees k = 0, 1, ... in order, so every output bit is the reference's. When
 * its scratch cannot be had, blocked falls back to the reference.
 *
 * rmsnorm_matmul normalizes x into h of x's dtype first, exactly as
 * rmsnorm stores it, then runs the product of h (matmul, or
 * matmul_silu_mul's epilogue) in either form: the unfused pair's bytes.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host-kernels.h"

/* Tiles of op(b) widened by the blocked form: HOST_MM_KB rows of k by
 * HOST_MM_NB columns, 64 KiB of f32. */
#define HOST_MM_KB 128
#define HOST_MM_NB 128

struct host_matmul {
	const struct op_tensor *a, *b, *out, *x;   /* x: matmul_add's residual */
	int                     epilogue;          /* enum host_epilogue */
	int64_t                 M, N, K;           /* N: columns of the product */
	int64_t                 width;             /* columns of out */
	int64_t                 a_m, a_k;          /* strides of op(a)'s rows and columns in a */
	int64_t                 b_k, b_n;          /* strides of op(b)'s rows and columns in b */
};

static void host_matmul_init(struct host_matmul *mm, const struct op_call *call, int epilogue)
{
	int first = epilogue == HOST_EPI_ADD ? 1 : 0;
	int trans_a = call->attr[MATMUL_TRANS_A].i != 0;
	int trans_b = call->attr[MATMUL_TRANS_B].i != 0;

	mm->a = &call->in[first];
	mm->b = &call->in[first + 1];
	mm->out = &call->out[0];
	mm->x = epilogue == HOST_EPI_ADD ? &call->in[0] : NULL;
	mm->epilogue = epilogue;
	mm->M = trans_a ? mm->a->dim[1] : mm->a->dim[0];
	mm->K = trans_a ? mm->a->dim[0] : mm->a->dim[1];
	mm->N = trans_b ? mm->b->dim[0] : mm->b->dim[1];
	mm->width = epilogue == HOST_EPI_SILU_MUL ? mm->N / 2 : mm->N;
	mm->a_m = trans_a ? 1 : mm->K;
	mm->a_k = trans_a ? mm->M : 1;
	mm->b_k = trans_b ? 1 : mm->N;
	mm->b_n = trans_b ? mm->K : 1;
}

/* Write out[m, j] from the product's accumulators: P is P[m, j]; P2 is
 * P[m, j + N/2], used by silu_mul only. */
static void host_matmul_emit(const struct host_matmul *mm, int64_t m, int64_t j, float p,
                             float p2)
{
	int64_t i = m * mm->width + j;
	int dt = mm->out->dtype;

	switch (mm->epilogue) {
	case HOST_EPI_ADD:
		/* x is read before out is written: it may be out. */
		host_put(mm->out, i, host_get(mm->x, i) + host_round(dt, p));
		break;
	case HOST_EPI_SILU_MUL: {
		float g = host_round(dt, p), u = host_round(dt, p2);
		float silu = g / (1.0f + expf(-g));
		host_put(mm->out, i, silu * u);
		break;
	}
	default:
		host_put(mm->out, i, p);
		break;
	}
}

/* P[m, n] from the operands (COLS NULL) or from the widened row ROW of
 * op(a) and columns COLS of op(b), column n at COLS + n*K. */
static float host_matmul_dot(const struct host_matmul *mm, const float *row, const float *cols,
                             int64_t m, int64_t n)
{
	float acc = 0.0f;

	if (cols != NULL) {
		const float *col = cols + n * mm->K;
		for (int64_t k = 0; k < mm->K; k++)
			acc += row[k] * col[k];
		return acc;
	}
	for (int64_t k = 0; k < mm->K; k++) {
		float x = host_get(mm->a, m * mm->a_m + k * mm->a_k);
		float y = host_get(mm->b, k * mm->b_k + n * mm->b_n);
		acc += x * y;
	}
	return acc;
}

static void host_matmul_reference(const struct host_matmul *mm, int use_scratch)
{
	float *scratch = NULL, *row = NULL, *cols = NULL;

	/* (N + 1) * K floats; operands that fit in memory cannot overflow it,
	 * but a size_t of 32 bits could, hence the test. */
	if (use_scratch && mm->K > 0 &&
	    (uint64_t)(mm->N + 1) <= SIZE_MAX / sizeof(float) / (uint64_t)mm->K)
		scratch = malloc((size_t)(mm->N + 1) * (size_t)mm->K * sizeof(float));
	if (scratch != NULL) {
		row = scratch;
		cols = scratch + mm->K;
		for (int64_t n = 0; n < mm->N; n++)
			for (int64_t k = 0; k < mm->K; k++)
				cols[n * mm->K + k] = host_get(mm->b, k * mm->b_k + n * mm->b_n);
	}
	for (int64_t m = 0; m < mm->M; m++) {
		if (row != NULL)
			for (int64_t k = 0; k < mm->K; k++)
				row[k] = host_get(mm->a, m * mm->a_m + k * mm->a_k);
		for (int64_t j = 0; j < mm->width; j++) {
			float p = host_matmul_dot(mm, row, cols, m, j), p2 = 0.0f;
			if (mm->epilogue == HOST_EPI_SILU_MUL)
				p2 = host_matmul_dot(mm, row, cols, m, j + mm->width);
			host_matmul_emit(mm, m, j, p, p2);
		}
	}
	free(scratch);
}

/* Add rows K0 .. K0+KB-1 of op(a)'s widened rows A (M x K) times the tile
 * T (KB x NB, NB columns used) into the accumulators ACC (row m at
 * ACC + m * N), one k at a time. */
static void host_matmul_tile(const struct host_matmul *mm, const float *restrict a,
                             const float *restrict t, float *restrict acc, int64_t k0,
                             int64_t kb, int64_t n0, int64_t nb)
{
	for (int64_t m = 0; m < mm->M; m++) {
		float *restrict c = acc + m * mm->N + n0;
		const float *restrict ar = a + m * mm->K + k0;
		for (int64_t k = 0; k < kb; k++) {
			const float av = ar[k];
			const float *restrict tk = t + k * HOST_MM_NB;
			if (nb == HOST_MM_NB) {
				/* A constant trip count, which the compiler vectorizes
				 * without a scalar tail. */
				for (int64_t n = 0; n < HOST_MM_NB; n++)
					c[n] += av * tk[n];
			} else {
				for (int64_t n = 0; n < nb; n++)
					c[n] += av * tk[n];
			}
		}
	}
}

/* Returns -1, having written nothing, when its scratch cannot be had. */
static int host_matmul_blocked(const struct host_matmul *mm)
{
	float *a = NULL, *t = NULL, *acc = NULL;
	int rc = -1;

	if ((uint64_t)mm->M > SIZE_MAX / sizeof(float) / (uint64_t)(mm->K + mm->N + 1))
		return -1;
	a = malloc((size_t)(mm->M * mm->K + 1) * sizeof(float));
	t = malloc((size_t)HOST_MM_KB * HOST_MM_NB * sizeof(float));
	acc = calloc((size_t)(mm->M * mm->N + 1), sizeof(float));
	if (a == NULL || t == NULL || acc == NULL)
		goto out;
	for (int64_t m = 0; m < mm->M; m++)
		for (int64_t k = 0; k < mm->K; k++)
			a[m * mm->K + k] = host_get(mm->a, m * mm->a_m + k * mm->a_k);
	for (int64_t n0 = 0; n0 < mm->N; n0 += HOST_MM_NB) {
		int64_t nb = mm->N - n0 < HOST_MM_NB ? mm->N - n0 : HOST_MM_NB;
		for (int64_t k0 = 0; k0 < mm->K; k0 += HOST_MM_KB) {
			int64_t kb = mm->K - k0 < HOST_MM_KB ? mm->K - k0 : HOST_MM_KB;
			for (int64_t n = 0; n < nb; n++)
				for (int64_t k = 0; k < kb; k++)
					t[k * HOST_MM_NB + n] = host_get(mm->b, (k0 + k) * mm->b_k +
					                                 (n0 + n) * mm->b_n);
			host_matmul_tile(mm, a, t, acc, k0, kb, n0, nb);
		}
	}
	for (int64_t m = 0; m < mm->M; m++)
		for (int64_t j = 0; j < mm->width; j++)
			host_matmul_emit(mm, m, j, acc[m * mm->N + j],
			                 mm->epilogue == HOST_EPI_SILU_MUL ?
			                 acc[m * mm->N + j + mm->width] : 0.0f);
	rc = 0;
out:
	free(a);
	free(t);
	free(acc);
	return rc;
}

void host_product_run(const struct op_call *call, int epilogue, int blocked, int use_scratch)
{
	struct host_matmul mm;

	host_matmul_init(&mm, call, epilogue);
	if (blocked && use_scratch && host_matmul_blocked(&mm) == 0)
		return;
	host_matmul_reference(&mm, use_scratch);
}

void host_matmul_run(const struct op_call *call, int use_scratch)
{
	host_product_run(call, HOST_EPI_NONE, 0, use_scratch);
}

/* matmul (a, b) -> out: out = op(a) @ op(b). */
void host_run_matmul(const struct op_call *call)
{
	host_product_run(call, HOST_EPI_NONE, 0, 1);
}

/* matmul_add (x, a, b) -> out: out = x + op(a) @ op(b), the product
 * rounded to the dtype first. */
void host_run_matmul_add(const struct op_call *call)
{
	host_product_run(call, HOST_EPI_ADD, 0, 1);
}

/* matmul_silu_mul (a, b) -> out: out = silu_mul(op(a) @ op(b)), the
 * product rounded to the dtype first. */
void host_run_matmul_silu_mul(const struct op_call *call)
{
	host_product_run(call, HOST_EPI_SILU_MUL, 0, 1);
}

void host_run_matmul_blocked(const struct op_call *call)
{
	host_product_run(call, HOST_EPI_NONE, 1, 1);
}

void host_run_matmul_add_blocked(const struct op_call *call)
{
	host_product_run(call, HOST_EPI_ADD, 1, 1);
}

void host_run_matmul_silu_mul_blocked(const struct op_call *call)
{
	host_product_run(call, HOST_EPI_SILU_MUL, 1, 1);
}

/* rmsnorm_matmul (x, w, b) -> out, fallback without memory for h: the
 * product's loops with each element of h formed where it is used, by
 * host_rmsnorm_span's arithmetic and the store's rounding (the same bytes;
 * the rms of each row is recomputed for each output element). */
static void host_rmsnorm_product_unbuffered(const struct op_call *call, int epilogue,
                                            const struct op_call *prod)
{
	const struct op_tensor *x = &call->in[0], *w = &call->in[1];
	float eps = (float)call->attr[RNM_EPS].f;
	struct host_matmul mm;

	host_matmul_init(&mm, prod, epilogue);
	for (int64_t m = 0; m < mm.M; m++) {
		float sum = 0.0f;
		for (int64_t k = 0; k < mm.K; k++) {
			float v = host_get(x, m * mm.K + k);
			sum += v * v;
		}
		float rms = sqrtf(sum / (float)mm.K + eps);
		for (int64_t j = 0; j < mm.width; j++) {
			float p[2] = { 0.0f, 0.0f };
			for (int h = 0; h < (mm.epilogue == HOST_EPI_SILU_MUL ? 2 : 1); h++) {
				int64_t n = j + h * mm.width;
				for (int64_t k = 0; k < mm.K; k++) {
					float hv = host_round(x->dtype,
					                      host_get(x, m * mm.K + k) / rms * host_get(w, k));
					p[h] += hv * host_get(mm.b, k * mm.b_k + n * mm.b_n);
				}
			}
			host_matmul_emit(&mm, m, j, p[0], p[1]);
		}
	}
}

/* rmsnorm_matmul (x, w, b) -> out: the rows of x normalized into h of x's
 * dtype as host_run_rmsnorm stores them, then the product of h and b with
 * the epilogue, as host_run_matmul or host_run_matmul_silu_mul on h: the
 * bytes of the unfused pair. BLOCKED as host_product_run's; USE_SCRATCH 0
 * takes the path without h that a failed malloc falls back to. */
void host_rmsnorm_matmul_run(const struct op_call *call, int blocked, int use_scratch)
{
	const struct op_tensor *x = &call->in[0];
	int epilogue = call->attr[RNM_EPILOGUE].i == RNM_EPI_SILU_MUL ? HOST_EPI_SILU_MUL
	                                                               : HOST_EPI_NONE;
	int64_t rows = x->dim[0], cols = x->dim[1];
	float eps = (float)call->attr[RNM_EPS].f;
	struct op_call prod;
	struct op_tensor *h;
	void *hbuf = NULL;

	memset(&prod, 0, sizeof prod);
	prod.nin = 2;
	prod.nout = 1;
	prod.in[0] = *x;
	prod.in[1] = call->in[2];
	prod.out[0] = call->out[0];
	prod.attr[MATMUL_TRANS_A].i = 0;
	prod.attr[MATMUL_TRANS_B].i = call->attr[RNM_TRANS_B].i;
	h = &prod.in[0];
	if (use_scratch && rows > 0 && cols > 0 && (uint64_t)rows <= SIZE_MAX / host_dtype_size(x->dtype) /
	                                              (uint64_t)cols)
		hbuf = malloc((size_t)rows * (size_t)cols * host_dtype_size(x->dtype));
	if (hbuf == NULL && rows > 0 && cols > 0) {
		host_rmsnorm_product_unbuffered(call, epilogue, &prod);
		return;
	}
	h->data = hbuf;
	for (int64_t r = 0; r < rows; r++)
		host_rmsnorm_row(x, &call->in[1], h, r, eps);
	host_product_run(&prod, epilogue, blocked, 1);
	free(hbuf);
}

void host_run_rmsnorm_matmul(const struct op_call *call)
{
	host_rmsnorm_matmul_run(call, 0, 1);
}

void host_run_rmsnorm_matmul_blocked(const struct op_call *call)
{
	host_rmsnorm_matmul_run(call, 1, 1);
}
