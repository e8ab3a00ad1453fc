/*
 * cuda-rope.h - rope's frequency table and angle, shared by the rope
 * kernels (cuda-rope.cu) and the gemv epilogue of
 * rmsnorm_matmul_rope_kv_write (cuda-smallm.cu), so that both rotate by
 * the same f32 values in the same steps.
 */
#ifndef BCG_OPS_CUDA_ROPE_H
#define BCG_OPS_CUDA_ROPE_H

#include <stdint.h>

#include "cuda-internal.h"

/* The frequencies of the op's rope_type (rope-scaling.c: transformers'
 * f32 steps, the power in double rounded once) -- the host kernel's exact
 * values -- computed on the host and passed by value, so the kernel does
 * no transcendental work but sincosf. MSCALE multiplies cos and sin
 * (yarn's attention factor, else 1: an exact no-op); positions from LIMIT
 * on (dynamic past its original context) give NaN, as on the host. */
#define ROPE_MAX_PAIRS 256
struct rope_freqs {
	float   f[ROPE_MAX_PAIRS];
	float   mscale;
	int64_t limit;
};

/* FREQS for head_dim D (D / 2 <= ROPE_MAX_PAIRS), the rest zero; A the
 * op's scaling attributes (rope-scaling.h). */
void rope_freqs_fill(struct rope_freqs *freqs, double theta, int64_t d, const union op_value *a);

/* cos and sin of pair I at position P, as the host computes them. */
__device__ __forceinline__ void rope_angle(const struct rope_freqs &freqs, int32_t p, int i,
                                           float *c, float *s)
{
	float a = __fmul_rn((float)p, freqs.f[i]);
	sincosf(a, s, c);
	*c = __fmul_rn(*c, freqs.mscale);
	*s = __fmul_rn(*s, freqs.mscale);
	if ((int64_t)p >= freqs.limit)
		*c = *s = __int_as_float(0x7fc00000);
}

#endif
