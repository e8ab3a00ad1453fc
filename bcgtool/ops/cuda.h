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

#include <cuda_runtime_api.h>
#include <cublas_v2.h>

#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cuda_op_ctx {
	cudaStream_t   stream;
	cublasHandle_t cublas;          /* bound to stream, workspace set */
	int            sm_count;        /* multiprocessors on the device */
};

/* Launch CALL (device addresses) on CTX's stream. Returns 0, or -1 with one
 * sentence in MSG naming the failing CUDA or cuBLAS call and its error. */
typedef int (*cuda_kernel_fn)(const struct op_call *call, const struct cuda_op_ctx *ctx,
                              char *msg, size_t len);

/* The launcher of op ID. */
cuda_kernel_fn cuda_kernel(enum op_id id);

/* Fill the COUNT elements of DST (dtype DTYPE) with an initializer of
 * plan.h, computing element i from bcg_uniform(seed, i) and friends exactly
 * as the host does (numeric.h). */
int cuda_init_tensor(void *dst, int dtype, uint64_t count, const struct plan_init *init,
                     cudaStream_t stream, char *msg, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* BCG_OPS_CUDA_H */
