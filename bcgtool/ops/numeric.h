/*
 * numeric.h - number formats and the deterministic generator, shared by the
 * host reference kernels and the CUDA kernels so that both backends start
 * from bit-identical weights, inputs and feeds.
 *
 * Everything here is static inline and compiles as C11 and as CUDA C++.
 */
#ifndef BCG_OPS_NUMERIC_H
#define BCG_OPS_NUMERIC_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define BCG_HD __host__ __device__ __forceinline__
#define BCG_ISNAN(v) isnan(v)
#else
#define BCG_HD static inline
#define BCG_ISNAN(v) __builtin_isnan(v)
#endif

/* --- f16 and bf16 ------------------------------------------------------ */

BCG_HD uint32_t bcg_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

BCG_HD float bcg_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* f32 -> IEEE binary16, rounding to nearest even; overflow gives infinity,
 * NaN stays NaN (quiet). */
BCG_HD uint16_t bcg_f32_to_f16(float f)
{
	uint32_t x = bcg_f32_bits(f);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t exp = (x >> 23) & 0xffu;
	uint32_t man = x & 0x7fffffu;

	if (exp == 0xffu)                       /* inf or NaN */
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0u));
	int e = (int)exp - 127 + 15;
	if (e >= 31)                            /* too large: infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {                           /* subnormal or zero */
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000u;               /* the implicit bit */
		int shift = 14 - e;             /* 24-bit mantissa down to 10 - (1 - e) bits */
		uint32_t half = man >> shift;
		uint32_t rest = man & ((1u << shift) - 1u);
		uint32_t mid = 1u << (shift - 1);
		if (rest > mid || (rest == mid && (half & 1u)))
			half++;
		return (uint16_t)(sign | half);
	}
	uint32_t half = sign | ((uint32_t)e << 10) | (man >> 13);
	uint32_t rest = man & 0x1fffu;
	if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
		half++;                         /* may carry into the exponent: correct */
	return (uint16_t)half;
}

BCG_HD float bcg_f16_to_f32(uint16_t h)
{
	uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
	uint32_t exp = ((uint32_t)h >> 10) & 0x1fu;
	uint32_t man = (uint32_t)h & 0x3ffu;

	if (exp == 0x1fu)
		return bcg_bits_f32(sign | 0x7f800000u | (man << 13));
	if (exp == 0) {
		if (man == 0)
			return bcg_bits_f32(sign);
		/* subnormal: value = man * 2^-24, exact in f32 */
		float v = (float)man * 5.9604644775390625e-8f;
		return sign ? -v : v;
	}
	return bcg_bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

/* f32 -> bfloat16, rounding to nearest even; NaN stays NaN. */
BCG_HD uint16_t bcg_f32_to_bf16(float f)
{
	uint32_t x = bcg_f32_bits(f);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	x += 0x7fffu + ((x >> 16) & 1u);
	return (uint16_t)(x >> 16);
}

BCG_HD float bcg_bf16_to_f32(uint16_t b)
{
	return bcg_bits_f32((uint32_t)b << 16);
}

/* --- argmax's rule as one key -------------------------------------------- */

/* Column I's value V as one 64-bit key whose unsigned order is argmax's
 * rule (the first NaN, else the largest value, the smallest column among
 * equals, -0 equal to +0): the value's bits in the high word, made
 * monotonic (negatives flipped, positives above them, -0 as +0, every NaN
 * above +inf), and the column's complement in the low word. No column
 * (I = INT64_MAX) is 0, below every column's key (-inf's high word is
 * 0x007fffff). Columns below 2^32. The CUDA kernels that pick the
 * largest of a product's columns keep it by atomic maximum
 * (cuda-smallm.cu's smallm_amax_finish). */
BCG_HD uint64_t bcg_argmax_key(float v, int64_t i)
{
	uint32_t u;

	if (i == INT64_MAX)
		return 0u;
	if (BCG_ISNAN(v)) {
		u = 0xffffffffu;
	} else {
		u = v == 0.0f ? 0u : bcg_f32_bits(v);    /* -0 as +0 */
		u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
	}
	return ((uint64_t)u << 32) | (uint64_t)(0xffffffffu - (uint32_t)i);
}

/* The column of key K (bcg_argmax_key), 0 for no column. */
BCG_HD int32_t bcg_argmax_key_column(uint64_t k)
{
	return k == 0u ? 0 : (int32_t)(0xffffffffu - (uint32_t)(k & 0xffffffffu));
}

/* --- the generator ----------------------------------------------------- */

/* A counter-based generator: each value depends only on (seed, counter),
 * so any element can be computed on its own, in any order, on any backend.
 * The mixer is the splitmix64 finalizer. */
BCG_HD uint64_t bcg_mix64(uint64_t seed, uint64_t counter)
{
	uint64_t z = seed * UINT64_C(0x9e3779b97f4a7c15) + counter + UINT64_C(0x9e3779b97f4a7c15);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Uniform in [-1, 1) with 24 bits: (u - 2^23) * 2^-23 for a 24-bit u, which
 * is exact in f32, so every backend gets the same float. */
BCG_HD float bcg_uniform(uint64_t seed, uint64_t counter)
{
	int32_t u = (int32_t)(bcg_mix64(seed, counter) >> 40);
	return (float)(u - 8388608) * 1.1920928955078125e-7f;
}

/* --- a rank's share of a split tensor ---------------------------------- */

/* A tensor-parallel rank holds a share of a tensor (plan.h's struct
 * plan_split): viewed as [outer, axis, inner] around its split axis, the
 * share's axis is blocks of the whole axis, one after the other. Element
 * I of the share is element bcg_slice_index(S, I) of the whole tensor, so
 * that an initializer computed from the index gives every rank its part
 * of the same numbers. */
#define BCG_SLICE_MAX_BLOCKS 8

struct bcg_slice {
	uint64_t inner;                          /* elements after the axis */
	uint64_t share;                          /* the share's axis length */
	uint64_t full;                           /* the whole axis length */
	uint32_t nblocks;
	uint64_t at[BCG_SLICE_MAX_BLOCKS];       /* where block b starts in the share */
	uint64_t from[BCG_SLICE_MAX_BLOCKS];     /* ... and in the whole axis */
};

BCG_HD uint64_t bcg_slice_index(const struct bcg_slice *s, uint64_t i)
{
	uint64_t in = i % s->inner, rest = i / s->inner;
	uint64_t c = rest % s->share, o = rest / s->share;
	uint32_t b = 0;

	while (b + 1 < s->nblocks && c >= s->at[b + 1])
		b++;
	return (o * s->full + s->from[b] + (c - s->at[b])) * s->inner + in;
}

/* The counter of element I of a per-step feed at step S. */
BCG_HD uint64_t bcg_feed_counter(uint64_t step, uint64_t i)
{
	return (step << 32) ^ i;
}

#endif /* BCG_OPS_NUMERIC_H */
