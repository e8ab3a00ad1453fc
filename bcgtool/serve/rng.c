/*
 * serve/rng.c - xoshiro256** (Blackman and Vigna), seeded by splitmix64.
 */
#include "config.h"

#include "serve/rng.h"

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* splitmix64: spreads one seed over the four state words, so that seeds
 * 0, 1, 2 give unrelated streams and the state is never all zero. */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void serve_rng_seed(struct serve_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

uint64_t serve_rng_next(struct serve_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

uint64_t serve_rng_below(struct serve_rng *r, uint64_t n)
{
	/* Reject the top partial range so every value is equally likely. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t x;

	do
		x = serve_rng_next(r);
	while (x >= limit);
	return x % n;
}

double serve_rng_unit(struct serve_rng *r)
{
	return (double)((serve_rng_next(r) >> 11) + 1) * 0x1.0p-53;
}

double serve_rng_neglog(double u)
{
	/* u = m * 2^e, m found by exact halvings and
	 * doublings; ln m = 2 atanh(s) with s = (m - 1) / (m + 1), whose
	 * series has converged to double precision by s^29. */
	static const double ln2 = 0.69314718055994530942;
	double m = u, s, s2, term, sum;
	int e = 0;

	while (m < 0.5) {
		m *= 2.0;
		e--;
	}
	while (m >= 1.0) {
		m *= 0.5;
		e++;
	}
	/* Centre m on 1, in [sqrt(1/2), sqrt(2)): s is then within 0.172. */
	if (m < 0.70710678118654752440) {
		m *= 2.0;
		e--;
	}
	s = (m - 1.0) / (m + 1.0);
	s2 = s * s;
	term = s;
	sum = 0.0;
	for (int k = 1; k <= 29; k += 2) {
		sum += term / (double)k;
		term *= s2;
	}
	return -((double)e * ln2 + 2.0 * sum);
}
