/*
 * cuda.h - the CUDA kernels: one launcher per op kind, callable from C.
 *
 * The launchers live in *.cu files beside this header and enqueue their
 * work on the context's stream, with no synchronisation and no allocation,
 * so that every one of them can be recorded by stream capture. Only the
 * graph-safe form of an op (call->graph_safe) may be launched inside a
 * capture when the op kind is OP_CAPTURE_SAFE_FORM.
 */
#ifndef BCG_OPS_CUDA_H
#define BCG_OPS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "kernel-shape.h"
#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuBLASLt for the products' "cublas" and "cublas_class" implementations
 * (cuda-matmul.cu): its handle, its workspace, and the algorithm chosen
 * for each shape and token count. cuda_lt_open makes one (-1 with one
 * sentence in MSG); cuda_lt_workspace gives it device memory for the
 * kernels' workspace, before any launch or capture (a captured graph keeps
 * the address, as it keeps the scratch's); cuda_lt_close frees it.
 * cuda_lt_class is the token count cublas_class chooses an algorithm for:
 * M up to 16, then the next of 24, 32, 48, 64, 96, 128, 192, ... (M
 * itself where that would pass INT_MAX). cuda_lt_version is the library's
 * (cuBLAS's) version, 10000 * major + 100 * minor + patch. */
struct cuda_lt;
int     cuda_lt_version(void);
int     cuda_lt_open(struct cuda_lt **out, char *msg, size_t len);
void    cuda_lt_workspace(struct cuda_lt *lt, void *workspace, size_t bytes);
void    cuda_lt_close(struct cuda_lt *lt);
int64_t cuda_lt_class(int64_t m);

/* What every launch needs besides its operands. The engine gives LT a
 * workspace (cuda_lt_workspace) before any capture; launchers change
 * nothing in it but the algorithms it keeps. SCRATCH is device memory, at
 * least 16-byte aligned, of SCRATCH_BYTES >= cuda_op_scratch_bytes(call)
 * bytes for every call launched with this context; the launches of one
 * stream may share it, since they run one after another. A captured graph keeps
 * its address: it must stay allocated, at the same place, for as long as
 * any graph that used it.
 *
 * The first CUDA_OP_SCRATCH_COUNTER_BYTES of SCRATCH are counters (the
 * split kernels count their finished blocks there, so that the last one
 * combines the parts in one launch). They must be zero before the first
 * launch that uses scratch: zero the whole scratch once, right after
 * allocating it and before any launch or capture (cudaMemset). Every
 * launch leaves them zero again when it completes, so nothing needs
 * zeroing between launches or graph replays; a launch that fails midway
 * (a sticky device error) leaves them undefined, as it leaves the device.
 * The rest of the scratch need not be kept between calls. Any call whose
 * cuda_op_scratch_bytes is not 0 reports at least the counters' bytes.
 *
 * PDL: with PDL set, the kernels that support it (the products' own
 * kernels, rmsnorm, add_rmsnorm, rope_kv_write, attention, embedding,
 * argmax, slice) are launched with programmatic stream serialization: each
 * may start while its predecessor on the stream finishes, reading only its
 * weights before it waits for that predecessor (cuda-internal.h has the
 * rule each kernel keeps). Results are the same bits either way. Inside a
 * stream capture such a launch after another kernel gives a programmatic
 * edge (cudaGraphDependencyTypeProgrammatic) in the graph. */
#define CUDA_OP_SCRATCH_COUNTER_BYTES ((size_t)16384)

struct cuda_op_ctx {
	cudaStream_t   stream;
	int            pdl;             /* launch the kernels that support it with
	                                   programmatic stream serialization */
	struct cuda_lt *lt;             /* cuBLASLt, workspace set */
	int            sm_count;        /* multiprocessors on the device */
	void          *scratch;         /* device scratch; NULL when none needed */
	size_t         scratch_bytes;
	struct kernel_shape gemv_shape; /* BCG_GEMV_SHAPE (kernel-shape.h); zero: default */
	struct kernel_shape moe_gu_shape; /* BCG_MOE_GU_SHAPE; zero: default */
	struct cuda_packs *packs;       /* weights in other layouts (below); NULL: none */
};

/* Launch CALL (device addresses) on CTX's stream. Returns 0, or -1 with one
 * sentence in MSG naming the failing CUDA or cuBLAS call and its error. */
typedef int (*cuda_kernel_fn)(const struct op_call *call, const struct cuda_op_ctx *ctx,
                              char *msg, size_t len);

/* The launcher of op ID; NULL for an ID out of range. It runs the
 * implementation call->impl names. */
cuda_kernel_fn cuda_kernel(enum op_id id);

/* The implementations of op ID on CUDA, in order of preference, and their
 * names ("mma", "gemv", "cublas", ...). Names are stored in plans: never
 * rename one, never reuse one for other code. Every kind has at least one;
 * index 0 is preferred (cuda_impl_default may name another for a call).
 * Out of range: 0 implementations, name NULL. */
int         cuda_impl_count(enum op_id id);
const char *cuda_impl_name(enum op_id id, int impl);

/* Whether implementation IMPL of call->kind can run CALL: its shapes,
 * dtypes, attributes and (when data is not NULL) operand alignment. The
 * default for a call is cuda_impl_default's, else the first usable one. */
int cuda_impl_usable(const struct op_call *call, int impl);

/* The implementation CALL runs untuned when it can, or -1: the first
 * usable one. A product of one token: gemv, which the tuner measured
 * faster than mma, the first, on every decode shape of the H100 and the
 * H200 (bench/RESULTS.md, 2026-11-26 third session): mma fills a tile of
 * 8 tokens with one. decoder_layer: split, faster than persistent on the
 * decode steps measured (bench/RESULTS.md, seventh session). */
int cuda_impl_default(const struct op_call *call);

/* Whether implementation IMPL of op ID is for the lengths it is timed at
 * only (backend.h's impl_windowed): attention's dsplit and dsplit_early.
 * A row past its one round of positions runs split's way in the same
 * launch, but in the steps measured on an H200 (bench/RESULTS.md,
 * twenty-seventh session) a plan that took dsplit at the script's kv_len
 * 8 replayed 10 to 11% slower at positions 108..1108 than one without
 * it. */
int cuda_impl_windowed(enum op_id id, int impl);

/* What CALL runs untuned instead of IMPL where the plan shares
 * executables across capture sizes (capture --share-exec): a product
 * that would run "cublas" runs "cublas_class", whose kernels are the same
 * for every token count of a class (cuda-matmul.cu); anything else IMPL. */
int cuda_impl_shared(const struct op_call *call, int impl);

/* Weights in other layouts than the checkpoint's (cuda-pack.cu): an
 * implementation that reads its weight packed ("mma_packed", "wgmma",
 * "wgmma_whole") finds the copy in ctx->packs, made beforehand by
 * cuda_op_prepare. Keep one struct cuda_packs a context, from
 * cuda_packs_new until cuda_packs_free (which frees the copies: no graph
 * that read them may run after it).
 *
 * cuda_op_prepare makes what implementation call->impl of CALL (kind set,
 * device addresses) needs before it can launch on CTX: for mma_packed,
 * wgmma and wgmma_whole the packed copy of its weight in their layout,
 * packed on CTX's stream, once for every call of that weight and layout;
 * nothing for the others. Never while CTX's stream is
 * captured, and only once the weight holds its final bytes: a copy is not
 * remade when the weight changes. KEEP 0 marks a trial (the tuner timing
 * a candidate): cuda_packs_trim frees the copies that no call prepared
 * with KEEP 1 asked for. 0, or -1 with one sentence in MSG (out of device
 * memory: the bytes needed and free). cuda_packs_bytes: the device bytes
 * the copies hold. */
struct cuda_packs;
struct cuda_packs *cuda_packs_new(void);
void               cuda_packs_free(struct cuda_packs *packs);
int                cuda_op_prepare(const struct op_call *call, const struct cuda_op_ctx *ctx,
                                   int keep, char *msg, size_t len);
void               cuda_packs_trim(struct cuda_packs *packs);
uint64_t           cuda_packs_bytes(const struct cuda_packs *packs);

/* Device scratch bytes the launch of CALL needs in its context (0 for most
 * kinds): the most any step can need, whatever its host var values, so
 * that the engine can allocate once, before capturing. It never shrinks as
 * the token count grows (the engine asks at the largest only). Unlike the
 * launchers it reads call->kind, which must be set (NULL gives 0). A
 * launcher given too little scratch fails with a message saying so. */
size_t cuda_op_scratch_bytes(const struct op_call *call);

/* The same for an attention call: the split-K partials for kv_len = S (the
 * cache rows), the largest a step can use, behind the counters. */
size_t cuda_attention_scratch_bytes(const struct op_call *call);

/* Fill the COUNT elements of DST (dtype DTYPE) with an initializer of
 * plan.h, computing element i from bcg_uniform(seed, i) and friends exactly
 * as the host does (numeric.h). */
int cuda_init_tensor(void *dst, int dtype, uint64_t count, const struct plan_init *init,
                     cudaStream_t stream, char *msg, size_t len);
/* The same for a rank's share of a split tensor (numeric.h's struct
 * bcg_slice), as host_init_range_slice computes it. */
struct bcg_slice;
int cuda_init_slice(void *dst, int dtype, uint64_t count, const struct plan_init *init,
                    const struct bcg_slice *slice, cudaStream_t stream, char *msg, size_t len);

/* The routers' NaN check (cuda-moe.cu): a moe_router or moe_router_paged
 * kernel whose weights for a row come out NaN records the row on the
 * device, captured or not. Waits for STREAM, then reads the record and
 * clears it: 0 when no router has flagged a row since the last call, else
 * -1 with "kernel fault: KIND: the logits of row R give NaN weights (no
 * expert can be chosen)" (the lowest such row) in MSG. -1 too, with
 * CUDA's error, when the wait fails. */
int cuda_moe_router_fault(cudaStream_t stream, char *msg, size_t len);

/* "kernel fault: " for the errors by which CUDA reports a kernel that
 * faulted -- at whatever call comes after it, not at its launch, and for
 * good (the context is lost) -- else "". Every message of such an error
 * carries it, so that the engine can say how to find the kernel (BCG_SYNC,
 * engine.h). */
static inline const char *cuda_fault_tag(cudaError_t e)
{
	switch (e) {
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchFailure:
	case cudaErrorMisalignedAddress:
	case cudaErrorInvalidAddressSpace:
	case cudaErrorInvalidPc:
	case cudaErrorIllegalInstruction:
	case cudaErrorHardwareStackError:
	case cudaErrorAssert:
	case cudaErrorLaunchTimeout:
		return "kernel fault: ";
	default:
		return "";
	}
}

#ifdef __cplusplus
}
#endif

#endif /* BCG_OPS_CUDA_H */
