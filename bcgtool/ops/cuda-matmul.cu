/*
 * cuda-matmul.cu - the products through cuBLAS: the "cublas"
 * implementation of matmul, matmul_add and matmul_silu_mul, which takes
 * every shape and layout the kinds allow.
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
 * rounded to TF32 under the default math mode, which the engine never
 * changes; the small-M kernels take f32 on plain FMA only), alpha 1,
 * beta 0, scalars on the host. a and b must share a dtype; out has that
 * dtype or f32. t/t6170-cuda-f32-products.sh holds every f32 path to an
 * exact result TF32 cannot give.
 *
 * The fused kinds store the product, in out's dtype, into the scratch
 * (behind its counters) -- the very rounding their unfused sequence makes
 * when matmul stores it -- and one epilogue kernel then reads it back:
 * matmul_add adds the residual x, matmul_silu_mul combines gate column j
 * with up column N + j. One exception: matmul_add in place (out is x, as
 * a residual stream's projections are) is one cublasGemmEx with beta 1,
 * out = x + a @ b, which adds x to the f32 sum and rounds once. That is
 * one rounding fewer than the kind's definition, within the bounds the
 * kind's CUDA kernels are held to (op-script.md, fused kinds), and it
 * saves the scratch round trip and the epilogue launch.
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

/* The epilogues of the fused kinds, on the stored product P [M, NB] of
 * dtype DTP: out[m, j] for j < N. Each thread reads x[i] just before it
 * writes out[i], so out may be x. Launched after cuBLAS's kernels, which
 * are not PDL-aware: it waits before reading anything. */
template <bool SILU>
__global__ void bcg_product_epilogue_kernel(const void *p, int dtp, const void *x, int dtx,
                                            void *out, int dto, int64_t M, int64_t N)
{
	const int64_t total = M * N, nb = SILU ? 2 * N : N;

	cuda_pdl_begin();
	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
	     i += (int64_t)gridDim.x * blockDim.x) {
		int64_t m = i / N, j = i - m * N;
		if constexpr (SILU) {
			float g = cuda_ld(p, dtp, m * nb + j), u = cuda_ld(p, dtp, m * nb + N + j);
			float silu = g / (1.0f + expf(-g));
			cuda_st(out, dto, i, silu * u);
		} else {
			cuda_st(out, dto, i, cuda_ld(x, dtx, i) + cuda_ld(p, dtp, m * nb + j));
		}
	}
}

/* out = op(a) @ op(b) + BETA out by cublasGemmEx (BETA 0 or 1); K = 0
 * gives zeros, or leaves out as it is under beta 1. */
static int cuda_gemm_cublas(const char *who, const struct cuda_product *p, void *out,
                            int dto, int64_t ncols, float beta,
                            const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	const float alpha = 1.0f;
	cublasPointerMode_t mode;
	cublasStatus_t st;

	if (p->K <= 0 && beta != 0.0f)
		return 0;
	if (p->K <= 0) {
		bcg_matmul_zero_kernel<<<cuda_ew_blocks(p->M * ncols, ctx->sm_count), CUDA_EW_THREADS,
		                         0, ctx->stream>>>(out, dto, p->M * ncols);
		return cuda_check_launch("bcg_matmul_zero_kernel", msg, len);
	}
	/* The scalars below live on the host; a handle in device pointer mode
	 * would read them as device addresses. */
	st = cublasGetPointerMode(ctx->cublas, &mode);
	if (st != CUBLAS_STATUS_SUCCESS)
		return cuda_fail(msg, len, "%s: cublasGetPointerMode failed: %s", who,
		                 cublasGetStatusString(st));
	if (mode != CUBLAS_POINTER_MODE_HOST)
		return cuda_fail(msg, len, "%s: the cuBLAS handle is in device pointer mode", who);

	st = cublasGemmEx(ctx->cublas,
	                  p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
	                  p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
	                  (int)ncols, (int)p->M, (int)p->K, &alpha,
	                  p->b->data, cuda_matmul_type(p->b->dtype), (int)p->b->dim[1],
	                  p->a->data, cuda_matmul_type(p->a->dtype), (int)p->a->dim[1],
	                  &beta,
	                  out, cuda_matmul_type(dto), (int)ncols,
	                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (st != CUBLAS_STATUS_SUCCESS) {
		/* An earlier kernel's fault makes cuBLAS fail too: say which. */
		cudaError_t e = cudaPeekAtLastError();
		const char *tag = cuda_fault_tag(e);
		return cuda_fail(msg, len, "%s: cublasGemmEx (M %lld, N %lld, K %lld) failed: %s%s%s%s",
		                 who, (long long)p->M, (long long)ncols, (long long)p->K,
		                 cublasGetStatusString(st), tag[0] ? "; " : "", tag,
		                 tag[0] ? cudaGetErrorString(e) : "");
	}
	return 0;
}

static const char *cuda_product_name(enum op_id id)
{
	switch (id) {
	case OP_MATMUL_ADD:
		return "matmul_add";
	case OP_MATMUL_SILU_MUL:
		return "matmul_silu_mul";
	default:
		return "matmul";
	}
}

/* Whether the product is matmul_add with out the very tensor x (known
 * at launch, when the operands have addresses): then cuBLAS adds x
 * itself (beta 1) and nothing is stored apart. */
static int cuda_product_cublas_in_place(enum op_id id, const struct cuda_product *p)
{
	return id == OP_MATMUL_ADD && p->x != NULL && p->x->data == p->out->data &&
	       p->x->dtype == p->out->dtype;
}

/* Bytes of the stored product of a fused kind (0 for matmul). Asked
 * before the operands have addresses, so matmul_add counts them even
 * where it will run in place. */
static size_t cuda_product_tmp_bytes(enum op_id id, const struct cuda_product *p)
{
	if (id == OP_MATMUL)
		return 0;
	return (size_t)(p->M * p->NB) * cuda_dtype_size(p->out->dtype);
}

int cuda_product_cublas_usable(enum op_id id, const struct op_call *call)
{
	struct cuda_product p;

	if (cuda_product_shape(id, call, &p, NULL, 0))
		return 0;
	return p.M <= INT_MAX && p.NB <= INT_MAX && p.K <= INT_MAX && p.a->dim[1] <= INT_MAX &&
	       p.b->dim[1] <= INT_MAX;
}

size_t cuda_product_cublas_scratch(enum op_id id, const struct op_call *call)
{
	struct cuda_product p;

	if (cuda_product_shape(id, call, &p, NULL, 0))
		return 0;
	return cuda_scratch_with_counters(cuda_product_tmp_bytes(id, &p));
}

int cuda_product_cublas(enum op_id id, const struct op_call *call,
                                   const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	const char *who = cuda_product_name(id);
	struct cuda_product p;

	if (cuda_product_shape(id, call, &p, msg, len))
		return -1;
	if (!cuda_product_cublas_usable(id, call))
		return cuda_fail(msg, len, "%s: dimensions beyond cuBLAS's int range", who);
	if (p.M <= 0 || p.N <= 0)
		return 0;
	if (id == OP_MATMUL)
		return cuda_gemm_cublas(who, &p, p.out->data, p.out->dtype, p.NB, 0.0f, ctx, msg, len);
	if (cuda_product_cublas_in_place(id, &p))
		return cuda_gemm_cublas(who, &p, p.out->data, p.out->dtype, p.NB, 1.0f, ctx, msg, len);

	size_t need = cuda_scratch_with_counters(cuda_product_tmp_bytes(id, &p));
	if (!ctx->scratch || ctx->scratch_bytes < need)
		return cuda_fail(msg, len, "%s: needs %zu bytes of scratch, the context has %zu", who,
		                 need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
	void *tmp = cuda_scratch_data(ctx);
	if (cuda_gemm_cublas(who, &p, tmp, p.out->dtype, p.NB, 0.0f, ctx, msg, len))
		return -1;
	unsigned blocks = cuda_ew_blocks(p.M * p.N, ctx->sm_count);
	const void *x = p.x ? p.x->data : NULL;
	int dtx = p.x ? p.x->dtype : PLAN_DTYPE_F32;
	if (id == OP_MATMUL_SILU_MUL)
		return cuda_launch(ctx, "bcg_product_epilogue_kernel", bcg_product_epilogue_kernel<true>,
		                   dim3(blocks), dim3(CUDA_EW_THREADS), msg, len, (const void *)tmp,
		                   p.out->dtype, x, dtx, p.out->data, p.out->dtype, p.M, p.N);
	return cuda_launch(ctx, "bcg_product_epilogue_kernel", bcg_product_epilogue_kernel<false>,
	                   dim3(blocks), dim3(CUDA_EW_THREADS), msg, len, (const void *)tmp,
	                   p.out->dtype, x, dtx, p.out->data, p.out->dtype, p.M, p.N);
}
