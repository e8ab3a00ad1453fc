/*
 * serve/rng.h - the pseudo-random numbers of synthetic traces.
 *
 * xoshiro256** seeded through splitmix64: the same seed gives the same
 * numbers on every machine and C library, which rand() does not promise.
 * Only integer arithmetic and exactly rounded IEEE operations are used
 * (no libm: its last bit differs between libraries), so a synthetic trace
 * is the same file everywhere.
 */
#ifndef BCG_SERVE_RNG_H
#define BCG_SERVE_RNG_H

#include <stdint.h>

struct serve_rng {
	uint64_t s[4];
};

void serve_rng_seed(struct serve_rng *r, uint64_t seed);

/* The next 64 random bits. */
uint64_t serve_rng_next(struct serve_rng *r);

/* Uniform in [0, n) without modulo bias; n >= 1. */
uint64_t serve_rng_below(struct serve_rng *r, uint64_t n);

/* Uniform in (0, 1], a multiple of 2^-53. */
double serve_rng_unit(struct serve_rng *r);

/* -ln(u) for u in (0, 1]: an exponential variate of mean 1 from
 * serve_rng_unit(). Computed with +, *, / only: the same bits everywhere. */
double serve_rng_neglog(double u);

#endif /* BCG_SERVE_RNG_H */
