/*
 * host.h - the host reference kernels: one per op kind, on host memory.
 *
 * They define what every op computes (see op.h): f32 arithmetic, inputs
 * widened exactly, results rounded to nearest even. The host backend runs
 * them; the CUDA kernels are tested against them.
 */
#ifndef BCG_OPS_HOST_H
#define BCG_OPS_HOST_H

#include "op.h"

/* Run CALL, whose operands hold host addresses and passed the kind's check.
 * Host kernels cannot fail. */
typedef void (*host_kernel_fn)(const struct op_call *call);

/* The reference kernel of op ID. */
host_kernel_fn host_kernel(enum op_id id);

/* Element I of a float tensor (f32, f16 or bf16) widened to f32, and
 * stored back with rounding; the tensor's dtype decides the format. */
float host_load(const struct op_tensor *t, int64_t i);
void  host_store(const struct op_tensor *t, int64_t i, float v);

#endif /* BCG_OPS_HOST_H */
