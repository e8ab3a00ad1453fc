/*
 * cuda-matmul.cu - matmul through cuBLAS.
 *
 * out[M,N] = op(a)[M,K] @ op(b)[K,N], every tensor row-major. cuBLAS is
 * column-major, and a row-major X[r,c] read column-major is X^T[c,r] with
 * leading dimension c. So the row-major product is computed as its
 * transpose, out^T[N,M] = op(b)^T[N,K] @ op(a)^T[K,M]: cuBLAS's first
 * operand is b's memory, its second a's memory, its result out's memory
 * (column-major N x M, ldc = N), and m = N, n = M, k = K.
 *
 *  - b not transposed: b is [K,N] row-major, seen as b^T[N,K] with ld N,
 *    which is the op(b)^T wanted: CUBLAS_OP_N, lda = N.
 *  - b transposed: b is [N,K] row-major, seen as b^T[K,N] with ld K; the
 *    wanted op(b)^T = b is its transpose: CUBLAS_OP_T, lda = K.
 * Likewise for a with ldb = a's stored row length. In both cases the
 * leading dimension is the operand's last axis.
 *
 * Compute type CUBLAS_COMPUTE_32F (f32 accumulation; f32 inputs are not
 * rounded to TF32 under the default math mode), alpha 1, beta 0, scalars
 * on the host. a and b must share a dtype; out has that dtype or f32.
 */
#include "config.h"

#include <limits.h>

#include <cublas_v2.h>

#include "cuda-internal.h"

static cudaDataType_t cuda_matmul_type(int dtype)
{
	switch (dtype) {
	case PLAN_DTYPE_F16:
		return CUDA_R_16F;
	case PLAN_DTYPE_BF16:
		return CUDA_R_16BF;
	default:
		return CUDA_R_32F;
	}
}

/* Zeros for K = 0, where the product is empty: not left to cuBLAS. */
__global__ void bcg_matmul_zero_kernel(void *out, int dt, int64_t n)
{
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (int64_t)gridDim.x * blockDim.x)
		cuda_st(out, dt, i, 0.0f);
}

extern "C" int cuda_run_matmul(const struct op_call *call, const struct cuda_op_ctx *ctx,
                               char *msg, size_t len)
{
	const struct op_tensor *a = &call->in[0], *b = &call->in[1], *out = &call->out[0];
	int trans_a = call->attr[MATMUL_TRANS_A].i != 0;
	int trans_b = call->attr[MATMUL_TRANS_B].i != 0;
	const float alpha = 1.0f, beta = 0.0f;
	cublasPointerMode_t mode;
	cublasStatus_t st;

	if (a->rank != 2 || b->rank != 2 || out->rank != 2)
		return cuda_fail(msg, len, "matmul: operands must have rank 2");
	int64_t M = out->dim[0], N = out->dim[1];
	int64_t K = trans_a ? a->dim[0] : a->dim[1];
	int64_t a_m = trans_a ? a->dim[1] : a->dim[0];
	int64_t b_k = trans_b ? b->dim[1] : b->dim[0];
	int64_t b_n = trans_b ? b->dim[0] : b->dim[1];
	if (a_m != M || b_k != K || b_n != N)
		return cuda_fail(msg, len, "matmul: shapes do not agree (M %lld, N %lld, K %lld)",
		                 (long long)M, (long long)N, (long long)K);
	if (!cuda_is_float_dtype(a->dtype) || b->dtype != a->dtype ||
	    (out->dtype != a->dtype && out->dtype != PLAN_DTYPE_F32))
		return cuda_fail(msg, len, "matmul: dtypes %s, %s -> %s not supported by cuBLAS "
		                 "(a and b alike, out alike or f32)", cuda_dtype_name(a->dtype),
		                 cuda_dtype_name(b->dtype), cuda_dtype_name(out->dtype));
	if (M > INT_MAX || N > INT_MAX || K > INT_MAX || a->dim[1] > INT_MAX ||
	    b->dim[1] > INT_MAX)
		return cuda_fail(msg, len, "matmul: dimensions beyond cuBLAS's int range");
	if (M <= 0 || N <= 0)
		return 0;
	if (K <= 0) {
		bcg_matmul_zero_kernel<<<cuda_ew_blocks(M * N, ctx->sm_count), CUDA_EW_THREADS, 0,
		                         ctx->stream>>>(out->data, out->dtype, M * N);
		return cuda_check_launch("bcg_matmul_zero_kernel", msg, len);
	}

	/* The scalars below live on the host; a handle in device pointer mode
	 * would read them as device addresses. */
	st = cublasGetPointerMode(ctx->cublas, &mode);
	if (st != CUBLAS_STATUS_SUCCESS)
		return cuda_fail(msg, len, "matmul: cublasGetPointerMode failed: %s",
		                 cublasGetStatusString(st));
	if (mode != CUBLAS_POINTER_MODE_HOST)
		return cuda_fail(msg, len, "matmul: the cuBLAS handle is in device pointer mode");

	st = cublasGemmEx(ctx->cublas,
	                  trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
	                  trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
	                  (int)N, (int)M, (int)K, &alpha,
	                  b->data, cuda_matmul_type(b->dtype), (int)b->dim[1],
	                  a->data, cuda_matmul_type(a->dtype), (int)a->dim[1],
	                  &beta,
	                  out->data, cuda_matmul_type(out->dtype), (int)N,
	                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (st != CUBLAS_STATUS_SUCCESS)
		return cuda_fail(msg, len, "matmul: cublasGemmEx (M %lld, N %lld, K %lld) failed: %s",
		                 (long long)M, (long long)N, (long long)K, cublasGetStatusString(st));
	return 0;
}
