/*
 * backend-cuda.h - what the CUDA backend needs from its own kernels.
 */
#ifndef BCG_BACKEND_CUDA_H
#define BCG_BACKEND_CUDA_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Make STREAM wait about US microseconds: one thread spins on the GPU's
 * global timer. Work queued behind it starts only when it ends, so the
 * host can queue a whole step first. */
int cuda_hold_stream(cudaStream_t stream, double us, char *msg, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* BCG_BACKEND_CUDA_H */
