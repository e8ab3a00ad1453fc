/*
 * cuda-matmul.cu - the products through cuBLAS: the "cublas" and
 * "cublas_class" implementations of matmul, matmul_add and
 * matmul_silu_mul, which take every shape and layout the kinds allow.
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
 * The product is one cublasLtMatmul (C and D both out), on the algorithm
 * chosen for M's token class (below). Compute type CUBLAS_COMPUTE_32F
 * (f32 accumulation; f32 inputs are not rounded to TF32, which only
 * CUBLAS_COMPUTE_32F_FAST_TF32 would allow; the small-M kernels take f32
 * on plain FMA only), alpha 1, beta 0, scalars on the host. a and b must
 * share a dtype; out has that dtype or f32. t/t6170-cuda-f32-products.sh
 * holds every f32 path to an exact result TF32 cannot give.
 *
 * The fused kinds store the product, in out's dtype, into the scratch
 * (behind its counters) -- the very rounding their unfused sequence makes
 * when matmul stores it -- and one epilogue kernel then reads it back:
 * matmul_add adds the residual x, matmul_silu_mul combines gate column j
 * with up column N + j. One exception: matmul_add in place (out is x, as
 * a residual stream's projections are) is one product with beta 1,
 * out = x + a @ b, which adds x to the f32 sum and rounds once. That is
 * one rounding fewer than the kind's definition, within the bounds the
 * kind's CUDA kernels are held to (op-script.md, fused kinds), and it
 * saves the scratch round trip and the epilogue launch.
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

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

/*
 * cuBLASLt's algorithm: "cublas" and "cublas_class".
 *
 * "cublas" asks the heuristic for the exact shape, which may pick another
 * kernel (tile, stages, split-K) for every token count M, so the segments
 * of two capture sizes hold different kernel functions and can never
 * share an executable (share.c keys on the functions). "cublas_class"
 * asks it once for M's class instead -- M itself up to 16, then the next
 * of 24, 32, 48, 64, 96, 128, 192, ... (2^k and 3 * 2^(k-1)): every M of a
 * class runs the same kernels with other grids, and its segments share
 * under --share-exec, where it is the products' default past the small-M
 * kernels. The price is the algorithm of up to 1.5 times the tokens: on
 * an H100 the four products of the 1B-shaped layer took at most 1.05
 * times "cublas"'s time up to 128 tokens, up to 1.47 times above
 * (bench/lt-class.cu; the whole step up to 1.20 times, at 272 tokens:
 * bench/RESULTS.md, 2026-11-27), which is why the tuner times both.
 * cublasLtMatmulAlgoCheck confirms a class's algorithm for the exact
 * shape; one it refuses gets the exact shape's own. Either way the
 * algorithm depends only on the shape, the dtypes and the operands'
 * alignment (at most 16 bytes counted), never on timing, so a new process
 * rebuilding the plan picks the same kernels; the context keeps each one
 * chosen.
 */
#define CUDA_LT_SLOTS 128

struct cuda_lt_key {
	int32_t op_a, op_b, m, n_class, k, lda, ldb, ldc;
	int32_t type_a, type_b, type_c, beta_one;
	uint32_t align_a, align_b, align_c;
};

struct cuda_lt_slot {
	struct cuda_lt_key   key;
	cublasLtMatmulAlgo_t algo;
	int                  used;
};

struct cuda_lt {
	cublasLtHandle_t    handle;
	void               *workspace;
	size_t              workspace_bytes;
	unsigned            next; /* the slot the next new class takes */
	struct cuda_lt_slot slot[CUDA_LT_SLOTS];
};

int cuda_lt_version(void)
{
	return (int)cublasLtGetVersion();
}

int cuda_lt_open(struct cuda_lt **out, char *msg, size_t len)
{
	struct cuda_lt *lt = (struct cuda_lt *)calloc(1, sizeof *lt);
	cublasStatus_t st;

	*out = NULL;
	if (lt == NULL) {
		snprintf(msg, len, "out of host memory for the cuBLASLt context");
		return -1;
	}
	if ((st = cublasLtCreate(&lt->handle)) != CUBLAS_STATUS_SUCCESS) {
		snprintf(msg, len, "cublasLtCreate: %s", cublasLtGetStatusString(st));
		free(lt);
		return -1;
	}
	*out = lt;
	return 0;
}

void cuda_lt_workspace(struct cuda_lt *lt, void *workspace, size_t bytes)
{
	lt->workspace = workspace;
	lt->workspace_bytes = bytes;
	/* an algorithm was checked against the old workspace's size */
	for (unsigned i = 0; i < CUDA_LT_SLOTS; i++)
		lt->slot[i].used = 0;
}

void cuda_lt_close(struct cuda_lt *lt)
{
	if (lt == NULL)
		return;
	cublasLtDestroy(lt->handle);
	free(lt);
}

int64_t cuda_lt_class(int64_t m)
{
	int64_t p = 16;

	if (m <= p || m > INT_MAX)
		return m;
	while (p < m) {
		if (p + p / 2 >= m) {
			p += p / 2;
			break;
		}
		p *= 2;
	}
	return p <= INT_MAX ? p : m;
}

/* The alignment of P in bytes, counted to 16 (what cuBLASLt's kernels
 * ask for at most). */
static uint32_t cuda_lt_align(const void *p)
{
	uint32_t a = 16;

	while (a > 1 && ((uintptr_t)p & (a - 1)) != 0)
		a >>= 1;
	return a;
}

/* The layouts of the product with N tokens: LAY[0] cuBLAS's first operand
 * (b's memory), LAY[1] its second (a's), LAY[2] the result (also C). */
static cublasStatus_t cuda_lt_layouts(const struct cuda_product *p, int dto, int64_t ncols,
                                      int64_t n, cublasLtMatrixLayout_t lay[3])
{
	cublasStatus_t st;
	uint64_t k = (uint64_t)p->K, m = (uint64_t)ncols, nn = (uint64_t)n;

	lay[0] = lay[1] = lay[2] = NULL;
	st = cublasLtMatrixLayoutCreate(&lay[0], cuda_matmul_type(p->b->dtype), p->trans_b ? k : m,
	                                p->trans_b ? m : k, p->b->dim[1]);
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatrixLayoutCreate(&lay[1], cuda_matmul_type(p->a->dtype),
		                                p->trans_a ? nn : k, p->trans_a ? k : nn,
		                                p->a->dim[1]);
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatrixLayoutCreate(&lay[2], cuda_matmul_type(dto), m, nn, ncols);
	return st;
}

static void cuda_lt_layouts_free(cublasLtMatrixLayout_t lay[3])
{
	for (int i = 0; i < 3; i++)
		if (lay[i] != NULL)
			cublasLtMatrixLayoutDestroy(lay[i]);
}

/* The heuristic's first algorithm for DESC over the layouts LAY, within
 * the workspace and for operands aligned as KEY says. */
static cublasStatus_t cuda_lt_heuristic(struct cuda_lt *lt, cublasLtMatmulDesc_t desc,
                                        cublasLtMatrixLayout_t lay[3],
                                        const struct cuda_lt_key *key,
                                        cublasLtMatmulAlgo_t *algo)
{
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t res;
	uint64_t ws = lt->workspace_bytes;
	const struct {
		cublasLtMatmulPreferenceAttributes_t attr;
		const void *v;
		size_t n;
	} set[] = {
		{ CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws },
		{ CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &key->align_a, sizeof key->align_a },
		{ CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &key->align_b, sizeof key->align_b },
		{ CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &key->align_c, sizeof key->align_c },
		{ CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &key->align_c, sizeof key->align_c },
	};
	int found = 0;
	cublasStatus_t st = cublasLtMatmulPreferenceCreate(&pref);

	for (size_t i = 0; st == CUBLAS_STATUS_SUCCESS && i < sizeof set / sizeof set[0]; i++)
		st = cublasLtMatmulPreferenceSetAttribute(pref, set[i].attr, set[i].v, set[i].n);
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatmulAlgoGetHeuristic(lt->handle, desc, lay[0], lay[1], lay[2], lay[2],
		                                    pref, 1, &res, &found);
	if (pref != NULL)
		cublasLtMatmulPreferenceDestroy(pref);
	if (st == CUBLAS_STATUS_SUCCESS && found < 1)
		st = CUBLAS_STATUS_NOT_SUPPORTED;
	if (st == CUBLAS_STATUS_SUCCESS)
		*algo = res.algo;
	return st;
}

/* Whether ALGO runs DESC over LAY within the workspace. */
static int cuda_lt_fits(struct cuda_lt *lt, cublasLtMatmulDesc_t desc,
                        cublasLtMatrixLayout_t lay[3], const cublasLtMatmulAlgo_t *algo)
{
	cublasLtMatmulHeuristicResult_t res;

	return cublasLtMatmulAlgoCheck(lt->handle, desc, lay[0], lay[1], lay[2], lay[2], algo,
	                               &res) == CUBLAS_STATUS_SUCCESS &&
	       res.workspaceSize <= lt->workspace_bytes;
}

/* The algorithm for KEY: the context's, or chosen now for KEY's token
 * count (the class's, or M's own) and kept; the exact shape's when the
 * class's does not fit it. */
static cublasStatus_t cuda_lt_algo(struct cuda_lt *lt, cublasLtMatmulDesc_t desc,
                                   cublasLtMatrixLayout_t exact[3], const struct cuda_product *p,
                                   int dto, int64_t ncols, const struct cuda_lt_key *key,
                                   cublasLtMatmulAlgo_t *algo)
{
	cublasLtMatrixLayout_t cls[3];
	cublasStatus_t st;
	struct cuda_lt_slot *s;

	for (unsigned i = 0; i < CUDA_LT_SLOTS; i++)
		if (lt->slot[i].used && memcmp(&lt->slot[i].key, key, sizeof *key) == 0) {
			*algo = lt->slot[i].algo;
			return CUBLAS_STATUS_SUCCESS;
		}
	st = CUBLAS_STATUS_NOT_SUPPORTED;
	if (key->n_class != p->M) {
		st = cuda_lt_layouts(p, dto, ncols, key->n_class, cls);
		if (st == CUBLAS_STATUS_SUCCESS)
			st = cuda_lt_heuristic(lt, desc, cls, key, algo);
		cuda_lt_layouts_free(cls);
	}
	if (st != CUBLAS_STATUS_SUCCESS || !cuda_lt_fits(lt, desc, exact, algo))
		st = cuda_lt_heuristic(lt, desc, exact, key, algo);
	if (st != CUBLAS_STATUS_SUCCESS)
		return st;
	s = &lt->slot[lt->next];
	lt->next = (lt->next + 1) % CUDA_LT_SLOTS;
	s->key = *key;
	s->algo = *algo;
	s->used = 1;
	return CUBLAS_STATUS_SUCCESS;
}

/* out = op(a) @ op(b) + BETA out by cublasLtMatmul (BETA 0 or 1), on the
 * algorithm of M, or of M's class when BY_CLASS; K = 0 gives zeros, or
 * leaves out as it is under beta 1. */
static int cuda_gemm_cublas(const char *who, const struct cuda_product *p, void *out,
                            int dto, int64_t ncols, float beta, int by_class,
                            const struct cuda_op_ctx *ctx, char *msg, size_t len)
{
	const float alpha = 1.0f;
	struct cuda_lt *lt = ctx->lt;
	cublasOperation_t op_a = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t op_b = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasLtMatmulDesc_t desc = NULL;
	cublasLtMatrixLayout_t lay[3] = { NULL, NULL, NULL };
	cublasLtMatmulAlgo_t algo;
	struct cuda_lt_key key;
	const char *step = "cublasLtMatmulDescCreate";
	cublasStatus_t st;

	if (p->K <= 0 && beta != 0.0f)
		return 0;
	if (p->K <= 0) {
		bcg_matmul_zero_kernel<<<cuda_ew_blocks(p->M * ncols, ctx->sm_count), CUDA_EW_THREADS,
		                         0, ctx->stream>>>(out, dto, p->M * ncols);
		return cuda_check_launch("bcg_matmul_zero_kernel", msg, len);
	}
	if (lt == NULL)
		return cuda_fail(msg, len, "%s: the context has no cuBLASLt handle", who);

	memset(&key, 0, sizeof key);
	key.op_a = (int32_t)op_a;
	key.op_b = (int32_t)op_b;
	key.m = (int32_t)ncols;
	key.n_class = (int32_t)(by_class ? cuda_lt_class(p->M) : p->M);
	key.k = (int32_t)p->K;
	key.lda = (int32_t)p->b->dim[1];
	key.ldb = (int32_t)p->a->dim[1];
	key.ldc = (int32_t)ncols;
	key.type_a = (int32_t)cuda_matmul_type(p->b->dtype);
	key.type_b = (int32_t)cuda_matmul_type(p->a->dtype);
	key.type_c = (int32_t)cuda_matmul_type(dto);
	key.beta_one = beta != 0.0f;
	key.align_a = cuda_lt_align(p->b->data);
	key.align_b = cuda_lt_align(p->a->data);
	key.align_c = cuda_lt_align(out);

	st = cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
	if (st == CUBLAS_STATUS_SUCCESS) {
		step = "cublasLtMatmulDescSetAttribute";
		st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a,
		                                    sizeof op_a);
	}
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b,
		                                    sizeof op_b);
	if (st == CUBLAS_STATUS_SUCCESS) {
		step = "cublasLtMatrixLayoutCreate";
		st = cuda_lt_layouts(p, dto, ncols, p->M, lay);
	}
	if (st == CUBLAS_STATUS_SUCCESS) {
		step = "cublasLtMatmulAlgoGetHeuristic";
		st = cuda_lt_algo(lt, desc, lay, p, dto, ncols, &key, &algo);
	}
	if (st == CUBLAS_STATUS_SUCCESS) {
		step = "cublasLtMatmul";
		st = cublasLtMatmul(lt->handle, desc, &alpha, p->b->data, lay[0], p->a->data, lay[1],
		                    &beta, out, lay[2], out, lay[2], &algo, lt->workspace,
		                    lt->workspace_bytes, ctx->stream);
	}
	cuda_lt_layouts_free(lay);
	if (desc != NULL)
		cublasLtMatmulDescDestroy(desc);
	if (st != CUBLAS_STATUS_SUCCESS) {
		/* An earlier kernel's fault makes cuBLAS fail too: say which. */
		cudaError_t e = cudaPeekAtLastError();
		const char *tag = cuda_fault_tag(e);
		return cuda_fail(msg, len, "%s: %s (M %lld, N %lld, K %lld) failed: %s%s%s%s", who,
		                 step, (long long)p->M, (long long)ncols, (long long)p->K,
		                 cublasLtGetStatusString(st), tag[0] ? "; " : "", tag,
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

int cuda_product_cublas(enum op_id id, const struct op_call *call, int by_class,
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
		return cuda_gemm_cublas(who, &p, p.out->data, p.out->dtype, p.NB, 0.0f, by_class, ctx,
		                        msg, len);
	if (cuda_product_cublas_in_place(id, &p))
		return cuda_gemm_cublas(who, &p, p.out->data, p.out->dtype, p.NB, 1.0f, by_class, ctx,
		                        msg, len);

	size_t need = cuda_scratch_with_counters(cuda_product_tmp_bytes(id, &p));
	if (!ctx->scratch || ctx->scratch_bytes < need)
		return cuda_fail(msg, len, "%s: needs %zu bytes of scratch, the context has %zu", who,
		                 need, ctx->scratch ? ctx->scratch_bytes : (size_t)0);
	void *tmp = cuda_scratch_data(ctx);
	if (cuda_gemm_cublas(who, &p, tmp, p.out->dtype, p.NB, 0.0f, by_class, ctx, msg, len))
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
