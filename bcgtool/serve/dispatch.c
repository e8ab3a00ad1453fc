/*
 * serve/dispatch.c - padding a batch to a captured size, choosing its mode,
 * counting the choices.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "serve/dispatch.h"

static const char *const policy_names[SERVE_NPOLICIES] = {
	[SERVE_POLICY_FULL_AND_BREAKABLE] = "full_and_breakable",
	[SERVE_POLICY_BREAKABLE] = "breakable",
	[SERVE_POLICY_FULL] = "full",
	[SERVE_POLICY_EAGER] = "eager",
};

const char *serve_policy_name(int policy)
{
	return policy >= 0 && policy < SERVE_NPOLICIES ? policy_names[policy] : "?";
}

int serve_policy_parse(const char *name)
{
	for (int i = 0; i < SERVE_NPOLICIES; i++)
		if (strcmp(name, policy_names[i]) == 0)
			return i;
	return -1;
}

static int size_order(const void *a, const void *b)
{
	const struct serve_size *x = a, *y = b;

	if (x->key.tokens != y->key.tokens)
		return x->key.tokens < y->key.tokens ? -1 : 1;
	/* 0 requests means any: the largest. */
	if (x->key.requests != y->key.requests)
		return x->key.requests == 0 ? 1 : y->key.requests == 0 ? -1 :
		       x->key.requests < y->key.requests ? -1 : 1;
	/* A uniform-only size before the general one of the same shape. */
	return (int)y->key.uniform_decode - (int)x->key.uniform_decode;
}

int serve_dispatch_init(struct serve_dispatch *d, const struct serve_size *sizes, uint32_t n,
                        int policy)
{
	memset(d, 0, sizeof *d);
	d->policy = policy;
	if ((d->sizes = malloc((n ? n : 1) * sizeof *d->sizes)) == NULL)
		return -1;
	memcpy(d->sizes, sizes, n * sizeof *sizes);
	d->nsizes = n;
	qsort(d->sizes, n, sizeof *d->sizes, size_order);
	return 0;
}

void serve_dispatch_release(struct serve_dispatch *d)
{
	free(d->sizes);
	free(d->rows);
	memset(d, 0, sizeof *d);
}

static int holds(const struct serve_size *s, const struct serve_batch_key *k)
{
	return s->key.tokens >= k->tokens &&
	       (s->key.requests == 0 || s->key.requests >= k->requests) &&
	       (!s->key.uniform_decode || k->uniform_decode);
}

/* The smallest size of MODE that holds K, or NULL. */
static const struct serve_size *smallest(const struct serve_dispatch *d,
                                         const struct serve_batch_key *k, int mode)
{
	for (uint32_t i = 0; i < d->nsizes; i++)
		if (d->sizes[i].mode == mode && holds(&d->sizes[i], k))
			return &d->sizes[i];
	return NULL;
}

void serve_dispatch_pick(const struct serve_dispatch *d, const struct serve_batch_key *key,
                         struct serve_pick *pick)
{
	const struct serve_size *s = NULL;

	switch (d->policy) {
	case SERVE_POLICY_FULL_AND_BREAKABLE:
		if (key->uniform_decode)
			s = smallest(d, key, PLAN_MODE_FULL);
		if (s == NULL)
			s = smallest(d, key, PLAN_MODE_BREAKABLE);
		break;
	case SERVE_POLICY_BREAKABLE:
		s = smallest(d, key, PLAN_MODE_BREAKABLE);
		break;
	case SERVE_POLICY_FULL:
		s = smallest(d, key, PLAN_MODE_FULL);
		break;
	default:
		break;
	}
	if (s == NULL) {
		pick->padded = *key;
		pick->mode = PLAN_MODE_EAGER;
		pick->variant = PLAN_NONE;
		return;
	}
	pick->padded.tokens = s->key.tokens;
	/* A size for any number of requests pads none. */
	pick->padded.requests = s->key.requests ? s->key.requests : key->requests;
	pick->padded.uniform_decode = key->uniform_decode;
	pick->mode = s->mode;
	pick->variant = s->variant;
}

static int row_cmp(const struct serve_dispatch_row *r, uint32_t unpadded, uint32_t padded,
                   int mode)
{
	if (r->padded != padded)
		return r->padded < padded ? -1 : 1;
	if (r->unpadded != unpadded)
		return r->unpadded < unpadded ? -1 : 1;
	return (r->mode > mode) - (r->mode < mode);
}

int serve_dispatch_record(struct serve_dispatch *d, const struct serve_batch_key *key,
                          const struct serve_pick *pick)
{
	uint32_t lo = 0, hi = d->nrows;

	/* Binary search for the row, or where it goes. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (row_cmp(&d->rows[mid], key->tokens, pick->padded.tokens, pick->mode) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == d->nrows || row_cmp(&d->rows[lo], key->tokens, pick->padded.tokens, pick->mode) != 0) {
		if (d->nrows == d->rows_cap) {
			uint32_t cap = d->rows_cap ? 2 * d->rows_cap : 32;
			struct serve_dispatch_row *r = realloc(d->rows, cap * sizeof *r);
			if (r == NULL)
				return -1;
			d->rows = r;
			d->rows_cap = cap;
		}
		memmove(d->rows + lo + 1, d->rows + lo, (d->nrows - lo) * sizeof *d->rows);
		d->rows[lo] = (struct serve_dispatch_row){ key->tokens, pick->padded.tokens,
		                                           pick->mode, 0 };
		d->nrows++;
	}
	d->rows[lo].count++;
	d->steps++;
	if (pick->mode >= 0 && pick->mode < 4)
		d->mode_steps[pick->mode]++;
	d->unpadded_tokens += key->tokens;
	d->padded_tokens += pick->padded.tokens;
	return 0;
}

double serve_dispatch_waste(const struct serve_dispatch *d)
{
	if (d->padded_tokens == 0)
		return 0.0;
	return (double)(d->padded_tokens - d->unpadded_tokens) / (double)d->padded_tokens;
}
