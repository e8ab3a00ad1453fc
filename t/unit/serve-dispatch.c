/*
 * serve-dispatch.c - the dispatch policy and its statistics.
 *
 * Cases worked out by hand for each policy; then every key up to past the
 * largest size against a brute-force search written here from the
 * definition (the smallest holding size of the wanted mode by padded
 * tokens, then requests); then the statistics table against counts kept
 * by the test.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "serve/dispatch.h"
#include "tap.h"

#define B PLAN_MODE_BREAKABLE
#define F PLAN_MODE_FULL
#define E PLAN_MODE_EAGER

/* Uniform decode sizes 1, 2, 4, 8 (full) and mixed sizes 8, 16, 32
 * (breakable, any number of requests up to 8, 16, 32); variant = index. */
static const struct serve_size sizes[] = {
	{ { 32, 32, false }, B, 6 },
	{ { 1, 1, true }, F, 0 },
	{ { 8, 8, true }, F, 3 },
	{ { 2, 2, true }, F, 1 },
	{ { 16, 16, false }, B, 5 },
	{ { 4, 4, true }, F, 2 },
	{ { 8, 8, false }, B, 4 },
};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static void pick(const struct serve_dispatch *d, uint32_t t, uint32_t r, bool u, uint32_t pt,
                 int mode, uint32_t variant, const char *what)
{
	struct serve_batch_key k = { t, r, u };
	struct serve_pick p;

	serve_dispatch_pick(d, &k, &p);
	ok(p.padded.tokens == pt && p.mode == mode && p.variant == variant,
	   "%s: %s (%u, %u, %s) -> %u %s", serve_policy_name(d->policy), what, t, r,
	   u ? "uniform" : "mixed", pt, plan_mode_name(mode));
	if (!(p.padded.tokens == pt && p.mode == mode && p.variant == variant))
		diag("got %u tokens, %s, variant %u", p.padded.tokens, plan_mode_name(p.mode),
		     p.variant);
}

static void test_policies(void)
{
	struct serve_dispatch d;

	ok(serve_dispatch_init(&d, sizes, NSIZES, SERVE_POLICY_FULL_AND_BREAKABLE) == 0, "init");
	pick(&d, 3, 3, true, 4, F, 2, "uniform decode pads to the full size above");
	pick(&d, 1, 1, true, 1, F, 0, "one request");
	pick(&d, 8, 8, true, 8, F, 3, "exactly the largest full size");
	pick(&d, 9, 9, true, 16, B, 5, "uniform above the full sizes goes breakable");
	pick(&d, 3, 1, false, 8, B, 4, "a prefill chunk runs breakable");
	pick(&d, 20, 5, false, 32, B, 6, "a mixed batch pads to 32");
	pick(&d, 33, 3, false, 33, E, PLAN_NONE, "above the largest: eager, unpadded");
	serve_dispatch_release(&d);

	ok(serve_dispatch_init(&d, sizes, NSIZES, SERVE_POLICY_BREAKABLE) == 0, "init");
	pick(&d, 3, 3, true, 8, B, 4, "uniform decode runs breakable");
	pick(&d, 32, 32, true, 32, B, 6, "up to 32");
	serve_dispatch_release(&d);

	ok(serve_dispatch_init(&d, sizes, NSIZES, SERVE_POLICY_FULL) == 0, "init");
	pick(&d, 3, 3, true, 4, F, 2, "uniform decode runs full");
	pick(&d, 3, 1, false, 3, E, PLAN_NONE, "no full size holds a prefill: eager");
	serve_dispatch_release(&d);

	ok(serve_dispatch_init(&d, sizes, NSIZES, SERVE_POLICY_EAGER) == 0, "init");
	pick(&d, 3, 3, true, 3, E, PLAN_NONE, "everything eager");
	serve_dispatch_release(&d);

	/* A plan of token sizes only (requests 0: any number). */
	static const struct serve_size tok[] = { { { 4, 0, false }, B, 0 },
	                                         { { 1, 0, false }, F, 1 } };
	struct serve_batch_key k = { 3, 3, true };
	struct serve_pick p;
	ok(serve_dispatch_init(&d, tok, 2, SERVE_POLICY_FULL_AND_BREAKABLE) == 0, "init");
	serve_dispatch_pick(&d, &k, &p);
	ok(p.padded.tokens == 4 && p.padded.requests == 3 && p.mode == B,
	   "a size for any number of requests pads tokens only");
	serve_dispatch_release(&d);

	is_int(serve_policy_parse("full_and_breakable"), SERVE_POLICY_FULL_AND_BREAKABLE, "parse");
	is_int(serve_policy_parse("eager"), SERVE_POLICY_EAGER, "parse eager");
	is_int(serve_policy_parse("piecewise"), -1, "an unknown policy");
}

/* The definition, by brute force. */
static void reference(int policy, const struct serve_batch_key *k, struct serve_pick *p)
{
	int order[2], n = 0;

	if (policy == SERVE_POLICY_FULL_AND_BREAKABLE) {
		if (k->uniform_decode)
			order[n++] = F;
		order[n++] = B;
	} else if (policy == SERVE_POLICY_BREAKABLE) {
		order[n++] = B;
	} else if (policy == SERVE_POLICY_FULL) {
		order[n++] = F;
	}
	for (int o = 0; o < n; o++) {
		const struct serve_size *best = NULL;
		for (size_t i = 0; i < NSIZES; i++) {
			const struct serve_size *s = &sizes[i];
			if (s->mode != order[o] || s->key.tokens < k->tokens ||
			    s->key.requests < k->requests || (s->key.uniform_decode && !k->uniform_decode))
				continue;
			if (best == NULL || s->key.tokens < best->key.tokens ||
			    (s->key.tokens == best->key.tokens && s->key.requests < best->key.requests))
				best = s;
		}
		if (best != NULL) {
			p->padded.tokens = best->key.tokens;
			p->mode = best->mode;
			p->variant = best->variant;
			return;
		}
	}
	p->padded.tokens = k->tokens;
	p->mode = E;
	p->variant = PLAN_NONE;
}

static void test_exhaustive(void)
{
	for (int policy = 0; policy < SERVE_NPOLICIES; policy++) {
		struct serve_dispatch d;
		unsigned bad = 0, n = 0;

		serve_dispatch_init(&d, sizes, NSIZES, policy);
		for (uint32_t t = 1; t <= 40; t++)
			for (uint32_t r = 1; r <= t; r++) {
				struct serve_batch_key k = { t, r, r == t };
				struct serve_pick got, want;
				serve_dispatch_pick(&d, &k, &got);
				reference(policy, &k, &want);
				if (got.padded.tokens != want.padded.tokens || got.mode != want.mode ||
				    got.variant != want.variant || got.padded.tokens < t)
					bad++;
				n++;
			}
		is_int(bad, 0, "%s: %u keys as the definition says", serve_policy_name(policy), n);
		serve_dispatch_release(&d);
	}
}

static void test_stats(void)
{
	struct serve_dispatch d;
	uint64_t x = 99, steps[4] = { 0 }, unpadded = 0, padded = 0;
	uint64_t counts[41][41][4];
	unsigned bad = 0, rows = 0, sorted = 1;

	memset(counts, 0, sizeof counts);
	serve_dispatch_init(&d, sizes, NSIZES, SERVE_POLICY_FULL_AND_BREAKABLE);
	for (int i = 0; i < 5000; i++) {
		struct serve_batch_key k;
		struct serve_pick p;
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		k.tokens = 1 + (uint32_t)(x >> 33) % 40;
		k.requests = 1 + (uint32_t)(x >> 20) % k.tokens;
		k.uniform_decode = k.requests == k.tokens;
		serve_dispatch_pick(&d, &k, &p);
		if (serve_dispatch_record(&d, &k, &p) != 0)
			bad++;
		counts[k.tokens][p.padded.tokens > 40 ? 0 : p.padded.tokens][p.mode]++;
		steps[p.mode]++;
		unpadded += k.tokens;
		padded += p.padded.tokens;
	}
	for (uint32_t u = 0; u <= 40; u++)
		for (uint32_t pt = 0; pt <= 40; pt++)
			for (int m = 1; m < 4; m++)
				rows += counts[u][pt][m] != 0;
	is_int(d.nrows, rows, "one row per (unpadded, padded, mode) seen");
	for (uint32_t i = 0; i < d.nrows; i++) {
		const struct serve_dispatch_row *r = &d.rows[i];
		if (r->padded > 40 || r->count != counts[r->unpadded][r->padded][r->mode])
			bad++;
		if (i > 0 && (d.rows[i - 1].padded > r->padded ||
		              (d.rows[i - 1].padded == r->padded && d.rows[i - 1].unpadded >= r->unpadded &&
		               d.rows[i - 1].mode >= r->mode)))
			sorted = 0;
	}
	is_int(bad, 0, "every row's count as the test counted");
	ok(sorted, "rows sorted by padded tokens, then unpadded");
	is_int(d.steps, 5000, "5000 steps");
	for (int m = 1; m < 4; m++)
		is_int(d.mode_steps[m], steps[m], "steps in %s", plan_mode_name(m));
	is_int(d.unpadded_tokens, unpadded, "unpadded tokens");
	is_int(d.padded_tokens, padded, "padded tokens");
	is_close(serve_dispatch_waste(&d), (double)(padded - unpadded) / (double)padded, 1e-12,
	         "padding waste");
	serve_dispatch_release(&d);
}

/* The first entry of table T that holds the batch, as plan-format.md
 * defines the lookup; PLAN_NONE for none. */
static uint32_t table_lookup(const struct plan_dispatch *t, uint32_t n, uint32_t tok,
                             uint32_t req, bool uni)
{
	for (uint32_t i = 0; i < n; i++)
		if ((int64_t)tok >= t[i].tokens_min && (int64_t)tok <= t[i].tokens_max &&
		    (t[i].requests_max == 0 || req <= t[i].requests_max) &&
		    (!(t[i].flags & PLAN_DISPATCH_UNIFORM) || uni))
			return t[i].variant;
	return PLAN_NONE;
}

/* Sizes as a plan has them (one a token count): uniform decode 1, 2, 4
 * full; 6 over at most 3 requests and 10 over at most 8, breakable; 12
 * over any number, breakable; 3 for uniform decode, breakable. */
static const struct serve_size plan_sizes[] = {
	{ { 1, 1, true }, F, 0 },
	{ { 2, 2, true }, F, 1 },
	{ { 3, 3, true }, B, 2 },
	{ { 4, 4, true }, F, 3 },
	{ { 6, 3, false }, B, 4 },
	{ { 10, 8, false }, B, 5 },
	{ { 12, 0, false }, B, 6 },
};

/* The table serve_dispatch_table writes picks what serve_dispatch_pick
 * picks, for every batch up to past the largest size, under each policy. */
static void test_table(void)
{
	for (int policy = 0; policy < SERVE_NPOLICIES; policy++) {
		struct serve_dispatch d;
		struct plan_dispatch *t = NULL;
		uint32_t n = 0, bad = 0, tried = 0;

		if (serve_dispatch_init(&d, plan_sizes, sizeof plan_sizes / sizeof plan_sizes[0],
		                        policy) != 0 || serve_dispatch_table(&d, &t, &n) != 0)
			tap_skip_all("out of memory");
		for (uint32_t tok = 1; tok <= 14; tok++)
			for (uint32_t req = 1; req <= tok; req++)
				for (int u = 0; u <= (req == tok); u++) {
					struct serve_batch_key k = { tok, req, u != 0 };
					struct serve_pick p;
					serve_dispatch_pick(&d, &k, &p);
					tried++;
					if (table_lookup(t, n, tok, req, u != 0) != p.variant && bad++ == 0)
						diag("(%u, %u, %s): table %u, pick %u", tok, req,
						     u ? "uniform" : "mixed", table_lookup(t, n, tok, req, u != 0),
						     p.variant);
				}
		ok(bad == 0 && tried > 100, "%s: the table picks as dispatch does for %u batches "
		   "(%u entries)", serve_policy_name(policy), tried, n);
		free(t);
		serve_dispatch_release(&d);
	}
}

int main(void)
{
	test_policies();
	test_exhaustive();
	test_table();
	test_stats();
	return tap_done();
}
