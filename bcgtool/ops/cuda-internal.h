/*
 * cuda-internal.h - private to the CUDA kernels (cuda-*.cu): the launcher
 * of each op kind, which cuda-table.cu's table points at, and the device
 * helpers they share: element load and store in any dtype, block
 * reductions, launch checks and error messages, the launch helper that
 * honours cuda_op_ctx.pdl, and the scratch counters.
 *
 * Programmatic dependent launch (PDL). A kernel launched through
 * cuda_launch() with ctx->pdl set may start while the kernel before it on
 * the stream is still running. Every such kernel keeps this rule, which
 * makes the overlap invisible to the results:
 *  (a) before cuda_pdl_begin() it reads only memory no kernel of the step
 *      writes and writes no global memory at all. Its weights (the inputs
 *      op_call.const_in marks) may be loaded there, the useful work to do
 *      while the kernel before runs, and so may the inputs the host feeds
 *      before the step (op_call.ready_in marks those and the weights: a
 *      serving batch's lengths and block tables); an operand not so marked
 *      may only be prefetched to L2, a hint that reads nothing;
 *  (b) it calls cuda_pdl_begin() on every path before reading activations,
 *      scratch or counters, or writing anything.
 * cuda_pdl_begin() waits until the previous kernel has completed and its
 * stores are visible, then lets the next kernel launch at once: the next
 * kernel's blocks take the multiprocessors this one's finished blocks
 * free and load their weights while this one still runs, and the next
 * kernel's own wait holds everything else until this one completes. The
 * trigger comes right after the wait, not after the last store: the wait
 * already orders the results, and a trigger that waits for the stores
 * leaves each kernel's ramp up and the last one's tail unoverlapped (on
 * an H100 about 1 to 2 us a kernel). Then at most two kernels overlap:
 * this one and the next, whose trigger waits for this one's completion.
 * The rows kernel's gate|up and q|k|v forms, and the bulk kernel's down,
 * trigger before their wait (cuda-smallm.cu says why), so that after one
 * of them three may; rule (a) keeps that as invisible as two. A kernel's
 * blocks trigger in every wave, so the next kernel launches only once the
 * last wave has started.
 * Without PDL both halves are no-ops. A kernel that does not keep the
 * rule must be launched the plain way (<<< >>>), which waits for
 * everything before it.
 *
 * CUDA C++ only; the rest of the program uses cuda.h.
 */
#ifndef BCG_OPS_CUDA_INTERNAL_H
#define BCG_OPS_CUDA_INTERNAL_H

#ifndef __CUDACC__
#error "cuda-internal.h is for the .cu files only"
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <type_traits>
#include <utility>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda.h"
#include "numeric.h"

/* --- launchers (one per op kind) ---------------------------------------- */

extern "C" {
/* cuda-elementwise.cu */
int cuda_run_fill(const struct op_call *call, const struct cuda_op_ctx *ctx,
                  char *msg, size_t len);
int cuda_run_copy(const struct op_call *call, const struct cuda_op_ctx *ctx,
                  char *msg, size_t len);
int cuda_run_add(const struct op_call *call, const struct cuda_op_ctx *ctx,
                 char *msg, size_t len);
int cuda_run_mul(const struct op_call *call, const struct cuda_op_ctx *ctx,
                 char *msg, size_t len);
int cuda_run_scale(const struct op_call *call, const struct cuda_op_ctx *ctx,
                   char *msg, size_t len);
int cuda_run_silu_mul(const struct op_call *call, const struct cuda_op_ctx *ctx,
                      char *msg, size_t len);
int cuda_run_gelu(const struct op_call *call, const struct cuda_op_ctx *ctx,
                  char *msg, size_t len);
int cuda_run_slice(const struct op_call *call, const struct cuda_op_ctx *ctx,
                   char *msg, size_t len);
/* cuda-smallm.cu: the products, every implementation */
int cuda_run_matmul(const struct op_call *call, const struct cuda_op_ctx *ctx,
                    char *msg, size_t len);
int cuda_run_matmul_add(const struct op_call *call, const struct cuda_op_ctx *ctx,
                        char *msg, size_t len);
int cuda_run_matmul_silu_mul(const struct op_call *call, const struct cuda_op_ctx *ctx,
                             char *msg, size_t len);
int cuda_run_rmsnorm_matmul(const struct op_call *call, const struct cuda_op_ctx *ctx,
                            char *msg, size_t len);
int cuda_run_rmsnorm_matmul_rope_kv_write(const struct op_call *call,
                                          const struct cuda_op_ctx *ctx, char *msg, size_t len);
/* cuda-norm.cu */
int cuda_run_rmsnorm(const struct op_call *call, const struct cuda_op_ctx *ctx,
                     char *msg, size_t len);
int cuda_run_layernorm(const struct op_call *call, const struct cuda_op_ctx *ctx,
                       char *msg, size_t len);
int cuda_run_softmax(const struct op_call *call, const struct cuda_op_ctx *ctx,
                     char *msg, size_t len);
int cuda_run_argmax(const struct op_call *call, const struct cuda_op_ctx *ctx,
                    char *msg, size_t len);
int cuda_run_add_rmsnorm(const struct op_call *call, const struct cuda_op_ctx *ctx,
                         char *msg, size_t len);
/* cuda-rope.cu */
int cuda_run_rope(const struct op_call *call, const struct cuda_op_ctx *ctx,
                  char *msg, size_t len);
int cuda_run_rope_kv_write(const struct op_call *call, const struct cuda_op_ctx *ctx,
                           char *msg, size_t len);
/* cuda-embedding.cu */
int cuda_run_embedding(const struct op_call *call, const struct cuda_op_ctx *ctx,
                       char *msg, size_t len);
int cuda_run_kv_write(const struct op_call *call, const struct cuda_op_ctx *ctx,
                      char *msg, size_t len);
/* cuda-attention.cu */
int cuda_run_attention(const struct op_call *call, const struct cuda_op_ctx *ctx,
                       char *msg, size_t len);
/* cuda-rope.cu (paged write; the plain paged_kv_write is kv_write's
 * launcher, the cache's rows being NB * BS) */
int cuda_run_rope_paged_kv_write(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                 char *msg, size_t len);
/* cuda-paged-attention.cu */
int cuda_run_paged_attention(const struct op_call *call, const struct cuda_op_ctx *ctx,
                             char *msg, size_t len);
/* cuda-norm.cu, the q and k heads' norm */
int cuda_run_qk_norm(const struct op_call *call, const struct cuda_op_ctx *ctx,
                     char *msg, size_t len);
size_t cuda_paged_attention_scratch_bytes(const struct op_call *call);
/* cuda-moe.cu (moe_router also runs moe_router_paged: it has slots) */
int cuda_run_moe_router(const struct op_call *call, const struct cuda_op_ctx *ctx,
                        char *msg, size_t len);
int cuda_run_moe_experts(const struct op_call *call, const struct cuda_op_ctx *ctx,
                         char *msg, size_t len);
size_t cuda_moe_experts_scratch_bytes(const struct op_call *call);
int cuda_run_gated_add(const struct op_call *call, const struct cuda_op_ctx *ctx,
                       char *msg, size_t len);
/* cuda-embedding.cu */
int cuda_run_vocab_embedding(const struct op_call *call, const struct cuda_op_ctx *ctx,
                             char *msg, size_t len);
/* cuda-dist.cu */
int cuda_run_all_reduce(const struct op_call *call, const struct cuda_op_ctx *ctx,
                        char *msg, size_t len);
int cuda_run_all_gather(const struct op_call *call, const struct cuda_op_ctx *ctx,
                        char *msg, size_t len);
size_t cuda_all_gather_scratch_bytes(const struct op_call *call);
/* cuda-layer.cu */
int cuda_run_decoder_layer(const struct op_call *call, const struct cuda_op_ctx *ctx,
                           char *msg, size_t len);
size_t cuda_decoder_layer_scratch_bytes(const struct op_call *call);
/* cuda-smallm.cu */
int cuda_run_rmsnorm_matmul_argmax(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                   char *msg, size_t len);
}

/* --- implementations and scratch (cuda-table.cu and the kinds' files) ---- */

/* The implementations of each kind, by index (cuda_impl_name's order). */
enum { CUDA_IMPL_MMA = 0, CUDA_IMPL_GEMV = 1, CUDA_IMPL_CUBLAS = 2,   /* products */
       CUDA_IMPL_CUBLAS_CLASS = 3, CUDA_IMPL_MMA_PACKED = 4, CUDA_IMPL_WGMMA = 5,
       CUDA_IMPL_WGMMA_WHOLE = 6, CUDA_IMPL_ROWS = 7 };
enum { CUDA_IMPL_ATTN_SPLIT = 0, CUDA_IMPL_ATTN_TWOPASS = 1,          /* attention */
       CUDA_IMPL_ATTN_CLUSTER = 2, CUDA_IMPL_ATTN_SPLIT_EARLY = 3,
       CUDA_IMPL_ATTN_CLUSTER_EARLY = 4, CUDA_IMPL_ATTN_CLUSTER4 = 5,
       CUDA_IMPL_ATTN_CLUSTER2 = 6, CUDA_IMPL_ATTN_CLUSTER8 = 7,
       CUDA_IMPL_ATTN_DSPLIT = 8, CUDA_IMPL_ATTN_DSPLIT_EARLY = 9 };
enum { CUDA_IMPL_ARGMAX_SPLIT = 0, CUDA_IMPL_ARGMAX_ROW = 1 };         /* argmax */
enum { CUDA_IMPL_RNM_GEMV = 0, CUDA_IMPL_RNM_SPLIT = 1, CUDA_IMPL_RNM_ROWS = 2, /* rmsnorm_matmul */
       CUDA_IMPL_RNM_ROWS_SCALED = 3 };
enum { CUDA_IMPL_RRK_GEMV = 0, CUDA_IMPL_RRK_SPLIT = 1,    /* rmsnorm_matmul_rope_kv_write */
       CUDA_IMPL_RRK_ROWS_SCALED = 2 };
enum { CUDA_IMPL_DL_PERSISTENT = 0, CUDA_IMPL_DL_SPLIT = 1 };   /* decoder_layer */
enum { CUDA_IMPL_RNA_GEMV = 0, CUDA_IMPL_RNA_GEMV_APART = 1,    /* rmsnorm_matmul_argmax */
       CUDA_IMPL_RNA_SPLIT = 2 };

/* cuda_impl_usable by op id, for the launchers, which are not given
 * call->kind. */
int cuda_impl_usable_id(enum op_id id, const struct op_call *call, int impl);

/* cuda-smallm.cu: whether implementation IMPL of product ID can run CALL,
 * and the scratch bytes its launch needs (counters included). */
int    cuda_product_usable(enum op_id id, const struct op_call *call, int impl);
/* The implementation a kind that runs product ID inside it gives PROD: gemv
 * for one token (the products' default), else the first usable of mma,
 * gemv, cublas; -1 when none can (rmsnorm_matmul's split, decoder_layer's
 * o and down). */
int    cuda_product_pick(enum op_id id, const struct op_call *prod);
size_t cuda_product_scratch_bytes(enum op_id id, const struct op_call *call);
/* cuda-smallm.cu: cuda_op_prepare for product ID (mma_packed's copy). */
int    cuda_product_prepare(enum op_id id, const struct op_call *call,
                            const struct cuda_op_ctx *ctx, int keep, char *msg, size_t len);
/* cuda-pack.cu: the packed copy of weight B [rows, K] cut in HALVES, in
 * LAYOUT (mma_packed's, cuda-pack.cu, or wgmma's, cuda-wgmma.cu; or
 * CUDA_PACK_SCALED, B's layout with column k times SCALE[k], SCALE a
 * weight of K elements of B's dtype, NULL for the others), or NULL when
 * none was made; making it on STREAM, or finding it made (KEEP or-ed into
 * its mark): 0, or -1 with one sentence in MSG. */
enum { CUDA_PACK_MMA = 0, CUDA_PACK_WGMMA = 1, CUDA_PACK_SCALED = 2 };
const void *cuda_pack_find(const struct cuda_packs *packs, const struct op_tensor *b,
                           const struct op_tensor *scale, int halves, int layout);
int         cuda_pack_make(struct cuda_packs *packs, const struct op_tensor *b,
                           const struct op_tensor *scale, int halves, int layout, int keep,
                           cudaStream_t stream, char *msg, size_t len);
/* cuda-smallm.cu: rmsnorm_matmul (CUDA_IMPL_RNM_*); _prepare: cuda_op_prepare
 * for it (rows_scaled's copy) */
int    cuda_rmsnorm_matmul_usable(const struct op_call *call, int impl);
int    cuda_rmsnorm_matmul_prepare(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                   int keep, char *msg, size_t len);
size_t cuda_rmsnorm_matmul_scratch_bytes(const struct op_call *call);
/* cuda-smallm.cu: rmsnorm_matmul_rope_kv_write (CUDA_IMPL_RRK_*); _prepare as
 * rmsnorm_matmul's */
int    cuda_rmsnorm_matmul_rope_kv_write_usable(const struct op_call *call, int impl);
int    cuda_rmsnorm_matmul_rope_kv_write_prepare(const struct op_call *call,
                                                 const struct cuda_op_ctx *ctx, int keep,
                                                 char *msg, size_t len);
size_t cuda_rmsnorm_matmul_rope_kv_write_scratch_bytes(const struct op_call *call);
/* cuda-smallm.cu: rmsnorm_matmul_argmax (CUDA_IMPL_RNA_*) */
int    cuda_rmsnorm_matmul_argmax_usable(const struct op_call *call, int impl);
size_t cuda_rmsnorm_matmul_argmax_scratch_bytes(const struct op_call *call);
/* cuda-layer.cu: decoder_layer (CUDA_IMPL_DL_*) */
int    cuda_decoder_layer_usable(const struct op_call *call, int impl);
/* cuda-norm.cu */
int    cuda_argmax_usable(const struct op_call *call, int impl);
size_t cuda_argmax_scratch_bytes(const struct op_call *call);
/* cuda-attention.cu, cuda-paged-attention.cu (CUDA_IMPL_ATTN_*) */
int    cuda_attention_usable(const struct op_call *call, int impl);
int    cuda_paged_attention_usable(const struct op_call *call, int impl);

/* The operands of a product kind, checked: matmul (a, b), matmul_add (x,
 * a, b), matmul_silu_mul (a, b). out [M, N] = epilogue(op(a)[M, K] @
 * op(b)[K, NB]), NB = 2N for matmul_silu_mul, else N. X is NULL but for
 * matmul_add. a and b share a float dtype; out has it or is f32. */
struct cuda_product {
	const struct op_tensor *x, *a, *b, *out;
	int trans_a, trans_b;
	int64_t M, N, K, NB;
};

/* cuda-smallm.cu: fill P from CALL; 0, or -1 with one sentence in MSG
 * (which may be NULL). */
int cuda_product_shape(enum op_id id, const struct op_call *call, struct cuda_product *p,
                       char *msg, size_t len);

/* cuda-wgmma.cu: "wgmma" (WHOLE 0) and "wgmma_whole" (WHOLE 1) of product
 * ID P on B's PACKED copy; whether they can run P (B_WEIGHT: b is a
 * weight); wgmma's layout: its bytes for [rows, K] of HALVES, and the
 * copy made on STREAM. */
int      cuda_wgmma_run(enum op_id id, const struct cuda_product *p, const void *packed,
                        int whole, const struct cuda_op_ctx *ctx, char *msg, size_t len);
int      cuda_wgmma_usable(enum op_id id, const struct cuda_product *p, int b_weight);
uint64_t cuda_wgmma_pack_bytes(int64_t rows, int64_t K, int halves);
int      cuda_wgmma_pack(const void *src, void *dst, int64_t rows, int64_t K, int halves,
                         cudaStream_t stream, char *msg, size_t len);

/* cuda-matmul.cu: the "cublas" implementation of product ID (matmul,
 * matmul_add, matmul_silu_mul), and "cublas_class" with BY_CLASS (the
 * algorithm of M's token class, cuda.h): cublasLtMatmul, into the scratch
 * for the fused kinds and then one epilogue kernel (matmul_add in place:
 * beta 1, no epilogue). Its scratch bytes, and whether it can run CALL. */
int    cuda_product_cublas(enum op_id id, const struct op_call *call, int by_class,
                           const struct cuda_op_ctx *ctx, char *msg, size_t len);
size_t cuda_product_cublas_scratch(enum op_id id, const struct op_call *call);
int    cuda_product_cublas_usable(enum op_id id, const struct op_call *call);

/* The scratch counters (cuda.h): CUDA_OP_SCRATCH_COUNTER_BYTES at the start
 * of the scratch, zero between launches. A kernel that counts finishing
 * blocks in them returns its counters to zero in the block that sees the
 * count complete, so the next launch, or the next replay of a graph, finds
 * them zero. Data scratch starts behind them. */
#define CUDA_SCRATCH_COUNTERS ((int64_t)(CUDA_OP_SCRATCH_COUNTER_BYTES / sizeof(unsigned)))

static inline unsigned *cuda_scratch_counters(const struct cuda_op_ctx *ctx)
{
	return static_cast<unsigned *>(ctx->scratch);
}

static inline void *cuda_scratch_data(const struct cuda_op_ctx *ctx)
{
	return static_cast<char *>(ctx->scratch) + CUDA_OP_SCRATCH_COUNTER_BYTES;
}

/* Data bytes rounded to 256 behind the counters: what a launch that needs
 * DATA bytes of scratch reports (0 stays 0). */
static inline size_t cuda_scratch_with_counters(size_t data)
{
	return data == 0 ? 0 : CUDA_OP_SCRATCH_COUNTER_BYTES + ((data + 255) & ~(size_t)255);
}

/* --- host-side helpers --------------------------------------------------- */

/* Write one sentence to MSG and return -1: every launcher's error path. */
static inline int __attribute__((format(printf, 3, 4)))
cuda_fail(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (msg && len > 0) {
		va_start(ap, fmt);
		vsnprintf(msg, len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* After a launch of KERNEL: 0, or -1 naming the kernel and the error. */
static inline int cuda_check_launch(const char *kernel, char *msg, size_t len)
{
	cudaError_t err = cudaGetLastError();

	if (err != cudaSuccess)
		return cuda_fail(msg, len, "launch of %s failed: %s%s (%s)", kernel,
		                 cuda_fault_tag(err), cudaGetErrorString(err), cudaGetErrorName(err));
	return 0;
}

/* Bit TO of a sub-call's const_in: whether CALL's input FROM is a weight
 * (op_call.const_in). A fused op's launcher builds calls of its parts
 * from its own inputs; each part keeps the marks of the inputs it takes.
 * A wrong bit only loses a load before the wait: nothing but marked
 * weights is read there. */
static inline unsigned cuda_const_bit(const struct op_call *call, int from, int to)
{
	return ((call->const_in >> from) & 1u) << to;
}

/* Whether T's data is 16-byte aligned (no data: nothing to misalign). */
static inline int cuda_aligned16(const struct op_tensor *t)
{
	return t->data == NULL || (uintptr_t)t->data % 16 == 0;
}

/* Shapes as op.h defines them: elements, rows (all axes but the last),
 * cols (the last axis; 1 for rank 0). */
static inline int64_t cuda_numel(const struct op_tensor *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= t->dim[d];
	return n;
}

static inline int64_t cuda_cols(const struct op_tensor *t)
{
	return t->rank > 0 ? t->dim[t->rank - 1] : 1;
}

static inline int64_t cuda_rows(const struct op_tensor *t)
{
	int64_t n = 1;
	for (int d = 0; d + 1 < t->rank; d++)
		n *= t->dim[d];
	return n;
}

static inline int cuda_is_float_dtype(int dtype)
{
	return dtype == PLAN_DTYPE_F32 || dtype == PLAN_DTYPE_F16 || dtype == PLAN_DTYPE_BF16;
}

static inline int cuda_is_known_dtype(int dtype)
{
	return cuda_is_float_dtype(dtype) || dtype == PLAN_DTYPE_I32;
}

/* The dtype's name for messages (libplan's own is not linked into the
 * unit tests). */
static inline const char *cuda_dtype_name(int dtype)
{
	switch (dtype) {
	case PLAN_DTYPE_F32:
		return "f32";
	case PLAN_DTYPE_F16:
		return "f16";
	case PLAN_DTYPE_BF16:
		return "bf16";
	case PLAN_DTYPE_I32:
		return "i32";
	}
	return "?";
}

__host__ __device__ static inline size_t cuda_dtype_size(int dtype)
{
	return dtype == PLAN_DTYPE_F16 || dtype == PLAN_DTYPE_BF16 ? 2 : 4;
}

/* Threads per block of the element-by-element kernels, and a grid for N
 * elements: enough blocks to fill the device, the rest done by the
 * grid-stride loop. Depends on N and the device only, never on data. */
#define CUDA_EW_THREADS 256

static inline unsigned cuda_ew_blocks(int64_t n, int sm_count)
{
	int64_t cap = sm_count > 0 ? (int64_t)sm_count * 8 : 1024;
	int64_t want = (n + CUDA_EW_THREADS - 1) / CUDA_EW_THREADS;

	if (want > cap)
		want = cap;
	return want < 1 ? 1u : (unsigned)want;
}

/* Threads per block of the row kernels (one block per row): a power of
 * two from 32 to 512, so that every warp is whole. */
static inline unsigned cuda_row_threads(int64_t cols)
{
	unsigned t = 32;

	while ((int64_t)t < cols && t < 512)
		t *= 2;
	return t;
}

/* Blocks of the row kernels: one per row, at most 65535 with a row loop
 * for the rest. */
static inline unsigned cuda_row_blocks(int64_t rows)
{
	if (rows > 65535)
		return 65535u;
	return rows < 1 ? 1u : (unsigned)rows;
}

/* Launch KERNEL on CTX's stream with GRID x BLOCK threads, SMEM bytes of
 * dynamic shared memory and, where CLUSTER is above 0, thread block
 * clusters of CLUSTER blocks along x (GRID.x a multiple of it): with
 * programmatic stream serialization when ctx->pdl (the kernel must keep
 * the rule at the top of this file), else as <<<grid, block, smem,
 * stream>>>. Returns 0, or -1 naming NAME and the error. */
template <typename... P, typename... A>
static int cuda_launch_ex(const struct cuda_op_ctx *ctx, const char *name, void (*kernel)(P...),
                          dim3 grid, dim3 block, size_t smem, unsigned cluster, char *msg,
                          size_t len, A &&...args)
{
	cudaLaunchConfig_t cfg = {};
	cudaLaunchAttribute attr[2] = {};
	unsigned n = 0;
	cudaError_t err;

	cfg.gridDim = grid;
	cfg.blockDim = block;
	cfg.dynamicSmemBytes = smem;
	cfg.stream = ctx->stream;
	if (ctx->pdl) {
		attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
		attr[n++].val.programmaticStreamSerializationAllowed = 1;
	}
	if (cluster > 0) {
		attr[n].id = cudaLaunchAttributeClusterDimension;
		attr[n].val.clusterDim.x = cluster;
		attr[n].val.clusterDim.y = 1;
		attr[n++].val.clusterDim.z = 1;
	}
	cfg.attrs = n > 0 ? attr : NULL;
	cfg.numAttrs = n;
	err = cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
	if (err == cudaSuccess)
		err = cudaGetLastError();
	if (err != cudaSuccess)
		return cuda_fail(msg, len, "launch of %s failed: %s%s (%s)", name,
		                 cuda_fault_tag(err), cudaGetErrorString(err), cudaGetErrorName(err));
	return 0;
}

/* The same without clusters. */
template <typename... P, typename... A>
static int cuda_launch_smem(const struct cuda_op_ctx *ctx, const char *name,
                            void (*kernel)(P...), dim3 grid, dim3 block, size_t smem,
                            char *msg, size_t len, A &&...args)
{
	return cuda_launch_ex(ctx, name, kernel, grid, block, smem, 0, msg, len,
	                      std::forward<A>(args)...);
}

/* Set KERNEL's attribute ATTR to VALUE on the current device, once a
 * device: the attribute stays with the function for the process (which
 * never resets a device), and *SET (the caller's static, one per kernel
 * and value) keeps a bit a device it was set on. Devices past the 64th
 * ask every time. Two threads may both set it the first time: the same
 * value, no harm. */
template <typename... P>
static cudaError_t cuda_func_attr_once(void (*kernel)(P...), cudaFuncAttribute attr, int value,
                                       unsigned long long *set)
{
	int dev = 0;
	cudaError_t err = cudaGetDevice(&dev);

	if (err != cudaSuccess)
		return err;
	const unsigned long long bit = dev >= 0 && dev < 64 ? 1ull << dev : 0;
	if (bit != 0 && (__atomic_load_n(set, __ATOMIC_ACQUIRE) & bit) != 0)
		return cudaSuccess;
	err = cudaFuncSetAttribute(kernel, attr, value);
	if (err == cudaSuccess && bit != 0)
		__atomic_fetch_or(set, bit, __ATOMIC_RELEASE);
	return err;
}

/* Let KERNEL take BYTES of dynamic shared memory on the current device
 * (cudaFuncAttributeMaxDynamicSharedMemorySize), once a device. */
template <typename... P>
static cudaError_t cuda_smem_ceiling(void (*kernel)(P...), int bytes, unsigned long long *set)
{
	return cuda_func_attr_once(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes, set);
}

/* Whether the current device is sm_90 or later (clusters, bulk copies,
 * griddepcontrol). */
static inline int cuda_device_sm90(void)
{
	int dev = 0, major = 0;

	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;
	}
	return major >= 9;
}

/* The same without dynamic shared memory. */
template <typename... P, typename... A>
static int cuda_launch(const struct cuda_op_ctx *ctx, const char *name, void (*kernel)(P...),
                       dim3 grid, dim3 block, char *msg, size_t len, A &&...args)
{
	return cuda_launch_smem(ctx, name, kernel, grid, block, 0, msg, len,
	                        std::forward<A>(args)...);
}

/* --- device helpers ----------------------------------------------------- */

/* PDL (see the top of this file). Without a programmatic dependency, or on
 * a device before sm_90, both do nothing. */
__device__ __forceinline__ void cuda_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void cuda_pdl_trigger(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* The start of every PDL kernel's dependent part (the top of this file). */
__device__ __forceinline__ void cuda_pdl_begin(void)
{
	cuda_pdl_wait();
	cuda_pdl_trigger();
}

/* Ask for the 128-byte line holding P in L2: a hint, no register, no
 * fault, allowed before cuda_pdl_wait() for memory nobody writes. */
__device__ __forceinline__ void cuda_prefetch_l2(const void *p)
{
	asm volatile("prefetch.global.L2 [%0];" :: "l"(p));
}

/* V rounded to dtype DT and widened back: what storing V as an
 * intermediate and reading it again gives. */
__device__ __forceinline__ float cuda_round_to(int dt, float v)
{
	switch (dt) {
	case PLAN_DTYPE_F16:
		return __half2float(__float2half_rn(v));
	case PLAN_DTYPE_BF16:
		return __bfloat162float(__float2bfloat16_rn(v));
	default:
		return v;
	}
}

/* The last-block protocol of the split kernels: each block stores its
 * partial results, then calls this with COUNTER (one per group of blocks
 * that must be combined) and the group's block count N. Returns true in
 * exactly one block of the group, the last to arrive, after which that
 * block may read every partial of the group (through __ldcg, past L1);
 * that block's thread 0 has already reset the counter to zero. Every
 * thread of the block must call it. FLAG is a __shared__ int. */
__device__ __forceinline__ bool cuda_last_block(unsigned *counter, unsigned n, int *flag)
{
	/* Each thread makes its own partial stores visible device-wide
	 * before the block is counted. */
	__threadfence();
	__syncthreads();
	if (threadIdx.x == 0) {
		unsigned old = atomicAdd(counter, 1u);
		bool last = old == n - 1;
		if (last)
			*counter = 0u;      /* every block of the group has counted */
		*flag = last;
	}
	__syncthreads();
	bool last = *flag != 0;
	if (last)
		__threadfence();        /* order the reads below after the count */
	return last;
}

/* argmax's rule and block reduction: cuda-norm.cu's kernels, and
 * rmsnorm_matmul_argmax's bulk kernel, which picks the largest column in
 * its epilogue (cuda-smallm.cu).
 *
 * Whether candidate (V, I) beats the current best (BV, BI) under the
 * host's rule: larger wins, ties go to the smaller index, a NaN beats
 * every number and the first NaN wins. The relation is the same seen
 * from either side, so every lane of a butterfly agrees. */
__device__ __forceinline__ bool cuda_argmax_better(float v, int64_t i, float bv, int64_t bi)
{
	bool vn = isnan(v), bn = isnan(bv);

	if (vn || bn)
		return vn && (!bn || i < bi);
	return v > bv || (v == bv && i < bi);
}

/* The best of every thread's (BV, BI) of a block, in thread 0's *BV_OUT,
 * *BI_OUT: a butterfly in each warp, then warp 0 over the warps' bests.
 * RED_V and RED_I: __shared__, one slot a warp. Every thread of the block
 * must call it. */
__device__ inline void cuda_argmax_reduce(float bv, int64_t bi, float *red_v, int64_t *red_i,
                                          float *bv_out, int64_t *bi_out)
{
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

	for (int off = 16; off > 0; off >>= 1) {
		float ov = __shfl_xor_sync(0xffffffffu, bv, off);
		int64_t oi = __shfl_xor_sync(0xffffffffu, bi, off);
		if (cuda_argmax_better(ov, oi, bv, bi)) {
			bv = ov;
			bi = oi;
		}
	}
	__syncthreads();        /* the previous row's readers are done */
	if (lane == 0) {
		red_v[warp] = bv;
		red_i[warp] = bi;
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		int nw = (int)(blockDim.x >> 5);
		for (int k = 0; k < nw; k++) {
			if (cuda_argmax_better(red_v[k], red_i[k], bv, bi)) {
				bv = red_v[k];
				bi = red_i[k];
			}
		}
		*bv_out = bv;
		*bi_out = bi;
	}
}

/* f32 to i32 as host_f32_to_i32: toward zero, NaN 0, saturating. */
__device__ __forceinline__ int32_t cuda_f32_to_i32(float v)
{
	return __float2int_rz(v);
}

/* Element I of a tensor of dtype DT widened to f32; i32 gives (float)v. */
__device__ __forceinline__ float cuda_ld(const void *p, int dt, int64_t i)
{
	switch (dt) {
	case PLAN_DTYPE_F16:
		return __half2float(static_cast<const __half *>(p)[i]);
	case PLAN_DTYPE_BF16:
		return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
	case PLAN_DTYPE_I32:
		return (float)static_cast<const int32_t *>(p)[i];
	default:
		return static_cast<const float *>(p)[i];
	}
}

/* Store V as element I, rounded to nearest even (i32: toward zero). */
__device__ __forceinline__ void cuda_st(void *p, int dt, int64_t i, float v)
{
	switch (dt) {
	case PLAN_DTYPE_F16:
		static_cast<__half *>(p)[i] = __float2half_rn(v);
		break;
	case PLAN_DTYPE_BF16:
		static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
		break;
	case PLAN_DTYPE_I32:
		static_cast<int32_t *>(p)[i] = cuda_f32_to_i32(v);
		break;
	default:
		static_cast<float *>(p)[i] = v;
		break;
	}
}

/* Typed conversions for the templated kernels. */
__device__ __forceinline__ float cuda_to_f32(float x) { return x; }
__device__ __forceinline__ float cuda_to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float cuda_to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T cuda_from_f32(float v);
template <> __device__ __forceinline__ float cuda_from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __half cuda_from_f32<__half>(float v)
{
	return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 cuda_from_f32<__nv_bfloat16>(float v)
{
	return __float2bfloat16_rn(v);
}

/* 16 bytes of weights, read once: not kept in L1 (the small-M products
 * and the MoE experts' products stream each weight byte once). */
__device__ __forceinline__ uint4 cuda_ld_stream(const void *p)
{
	uint4 v;
	asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return v;
}

/* 16 read-only bytes that a block's other warps read too (a norm's
 * weights, which every row of the rows kernel multiplies by): kept in L1,
 * so that only the first warp's load reaches L2. Volatile like
 * cuda_ld_stream, so that a load put before the PDL wait stays there. */
__device__ __forceinline__ uint4 cuda_ld_keep(const void *p)
{
	uint4 v;
	asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
	             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
	return v;
}

/* The copy engine (sm_90): bytes brought from global to shared memory by
 * cp.async.bulk, counted on an mbarrier in shared memory. One thread
 * initializes a block's barriers (cuda_bar_init each, then
 * cuda_bar_init_fence) before any copy, and a block barrier makes them
 * visible before anyone waits; a barrier's phase completes when the thread
 * that expects bytes has arrived and all of them have landed. The bulk
 * kernel of cuda-smallm.cu uses them. */
__device__ __forceinline__ unsigned cuda_smem_addr(const void *p)
{
	return (unsigned)__cvta_generic_to_shared(p);
}

/* Barrier B, for one arriving thread. */
__device__ __forceinline__ void cuda_bar_init(uint64_t *b)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(cuda_smem_addr(b)) : "memory");
}

/* After the inits, before the first copy: the copy engine sees them. */
__device__ __forceinline__ void cuda_bar_init_fence(void)
{
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* The copies of a phase to come, on barrier B: the calling thread arrives
 * and says how many BYTES they will bring (0: the phase completes now). */
__device__ __forceinline__ void cuda_bar_expect(uint64_t *b, unsigned bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
	             :: "r"(cuda_smem_addr(b)), "r"(bytes) : "memory");
}

/* Until B's phase of PARITY has completed: its bytes have all arrived. */
__device__ __forceinline__ void cuda_bar_wait(uint64_t *b, unsigned parity)
{
	asm volatile("{\n\t.reg .pred done;\n"
	             "bar_wait:\n\t"
	             "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
	             "@!done bra bar_wait;\n}"
	             :: "r"(cuda_smem_addr(b)), "r"(parity) : "memory");
}

/* BYTES (a multiple of 16) from global SRC to shared DST, both 16-byte
 * aligned, by the copy engine, counted on B; marked evict-first in L2, for
 * bytes a step reads once (weights). */
__device__ __forceinline__ void cuda_bulk_copy(void *dst, const void *src, unsigned bytes,
                                               uint64_t *b)
{
	uint64_t pol;
	asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
	             ".L2::cache_hint [%0], [%1], %2, [%3], %4;"
	             :: "r"(cuda_smem_addr(dst)), "l"(src), "r"(bytes), "r"(cuda_smem_addr(b)),
	                "l"(pol) : "memory");
}

/* The 16 / sizeof(T) elements of the 16 bytes V, widened to f32. */
template <typename T>
__device__ __forceinline__ void cuda_widen16(const uint4 &v, float (&f)[16 / sizeof(T)])
{
	if constexpr (std::is_same<T, float>::value) {
		f[0] = __uint_as_float(v.x);
		f[1] = __uint_as_float(v.y);
		f[2] = __uint_as_float(v.z);
		f[3] = __uint_as_float(v.w);
	} else {
		const uint32_t w[4] = { v.x, v.y, v.z, v.w };
#pragma unroll
		for (int i = 0; i < 4; i++) {
			T lo, hi;
			uint16_t l16 = (uint16_t)(w[i] & 0xffffu), h16 = (uint16_t)(w[i] >> 16);
			memcpy(&lo, &l16, 2);
			memcpy(&hi, &h16, 2);
			f[2 * i] = cuda_to_f32(lo);
			f[2 * i + 1] = cuda_to_f32(hi);
		}
	}
}

/* F rounded to T, packed as cuda_widen16 unpacks it. */
template <typename T>
__device__ __forceinline__ uint4 cuda_narrow16(const float (&f)[16 / sizeof(T)])
{
	if constexpr (std::is_same<T, float>::value) {
		return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
		                  __float_as_uint(f[3]));
	} else {
		uint32_t w[4];
#pragma unroll
		for (int i = 0; i < 4; i++) {
			const T lo = cuda_from_f32<T>(f[2 * i]), hi = cuda_from_f32<T>(f[2 * i + 1]);
			uint16_t l16, h16;
			memcpy(&l16, &lo, 2);
			memcpy(&h16, &hi, 2);
			w[i] = (uint32_t)l16 | (uint32_t)h16 << 16;
		}
		return make_uint4(w[0], w[1], w[2], w[3]);
	}
}

/* One round of 16-byte units: ACC[s][m] += the products of weight pieces
 * WV[i][s] and token pieces XV[i][m], unit i by unit i, in element order.
 * The sum's order is the gemv's (cuda-smallm.cu), the experts' gate|up
 * (cuda_dot16_rows, below) and their down at one token (cuda-moe.cu): all
 * call it, so their bits agree. */
template <typename T, int S, int M, int UN>
__device__ __forceinline__ void cuda_dot16_round(const uint4 (&wv)[UN][S],
                                                 const uint4 (&xv)[UN][M], float (&acc)[S][M])
{
	constexpr int V = 16 / (int)sizeof(T);
#pragma unroll
	for (int i = 0; i < UN; i++) {
		float xf[M][V];
#pragma unroll
		for (int m = 0; m < M; m++)
			cuda_widen16<T>(xv[i][m], xf[m]);
#pragma unroll
		for (int s = 0; s < S; s++) {
			float wf[V];
			cuda_widen16<T>(wv[i][s], wf);
#pragma unroll
			for (int m = 0; m < M; m++)
#pragma unroll
				for (int e = 0; e < V; e++)
					acc[s][m] = fmaf(wf[e], xf[m][e], acc[s][m]);
		}
	}
}

/* A thread's share of S dot products against M token rows, over 16-byte
 * units: units u = U0 + threadIdx.x, u + THREADS, ... below U1 of the
 * weight rows WROW (streamed, cuda_ld_stream) and the token rows XROW,
 * UN units a round with every load of the round issued before the first
 * product (cuda_dot16_round), added into ACC[s][m] in unit order. The
 * inner loop of the experts' gate|up at decode sizes (cuda-moe.cu); the
 * gemv loads its own rounds (cuda-smallm.cu). */
template <typename T, int S, int M, int UN, int THREADS>
__device__ __forceinline__ void cuda_dot16_rows(const T *const (&wrow)[S],
                                                const T *const (&xrow)[M], int64_t u0,
                                                int64_t u1, float (&acc)[S][M])
{
	constexpr int V = 16 / (int)sizeof(T);
	const uint4 zero = make_uint4(0u, 0u, 0u, 0u);

	for (int64_t u = u0 + threadIdx.x; u < u1; u += (int64_t)THREADS * UN) {
		uint4 wv[UN][S], xv[UN][M];
#pragma unroll
		for (int i = 0; i < UN; i++) {
			const int64_t ui = u + (int64_t)i * THREADS;
#pragma unroll
			for (int s = 0; s < S; s++)
				wv[i][s] = ui < u1 ? cuda_ld_stream(wrow[s] + ui * V) : zero;
		}
#pragma unroll
		for (int i = 0; i < UN; i++) {
			const int64_t ui = u + (int64_t)i * THREADS;
#pragma unroll
			for (int m = 0; m < M; m++)
				xv[i][m] = ui < u1 ? *reinterpret_cast<const uint4 *>(xrow[m] + ui * V)
				                   : zero;
		}
		cuda_dot16_round<T, S, M, UN>(wv, xv, acc);
	}
}

/* Butterfly reductions over each aligned group of W lanes (a power of two
 * up to 32), and over a whole warp: every lane of a group ends with the
 * same bits, since each step adds the same two values in either order. */
template <int W>
__device__ __forceinline__ float cuda_lanes_sum(float v)
{
	static_assert(W >= 1 && W <= 32 && (W & (W - 1)) == 0, "a power of two up to a warp");
#pragma unroll
	for (int off = W / 2; off > 0; off >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, off);
	return v;
}

__device__ __forceinline__ float cuda_warp_sum(float v)
{
	return cuda_lanes_sum<32>(v);
}

__device__ __forceinline__ float cuda_warp_max(float v)
{
	for (int off = 16; off > 0; off >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
	return v;
}

/* Block reductions; blockDim.x must be a multiple of 32 (at most 1024),
 * and every thread of the block must call them. RED holds 32 floats. The
 * first barrier keeps a previous call's readers of RED safe; each thread
 * then sums the per-warp values in the same order, so all get the same
 * result. */
__device__ __forceinline__ float cuda_block_sum(float v, float *red)
{
	v = cuda_warp_sum(v);
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = v;
	__syncthreads();
	float s = 0.0f;
	int nw = (int)(blockDim.x >> 5);
	for (int w = 0; w < nw; w++)
		s += red[w];
	return s;
}

__device__ __forceinline__ float cuda_block_max(float v, float *red)
{
	v = cuda_warp_max(v);
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = v;
	__syncthreads();
	float m = -INFINITY;
	int nw = (int)(blockDim.x >> 5);
	for (int w = 0; w < nw; w++)
		m = fmaxf(m, red[w]);
	return m;
}

#endif /* BCG_OPS_CUDA_INTERNAL_H */
