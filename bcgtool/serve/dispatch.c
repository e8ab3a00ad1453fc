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

/* Append E to *T (*N entries, capacity *CAP). */
static int table_push(struct plan_dispatch **t, uint32_t *n, uint32_t *cap,
                      const struct plan_dispatch *e)
{
	if (*n == *cap) {
		uint32_t c = *cap ? 2 * *cap : 16;
		struct plan_dispatch *p = realloc(*t, c * sizeof *p);
		if (p == NULL)
			return -1;
		*t = p;
		*cap = c;
	}
	(*t)[(*n)++] = *e;
	return 0;
}

int serve_dispatch_table(const struct serve_dispatch *d, struct plan_dispatch **out,
                         uint32_t *n)
{
	struct plan_dispatch *t = NULL;
	uint32_t nt = 0, cap = 0, max_tokens = 0;
	int mixed = d->policy == SERVE_POLICY_FULL ? PLAN_MODE_FULL
	          : d->policy == SERVE_POLICY_EAGER ? 0 : PLAN_MODE_BREAKABLE;

	for (uint32_t i = 0; i < d->nsizes; i++)
		if (d->sizes[i].key.tokens > max_tokens)
			max_tokens = d->sizes[i].key.tokens;
	/* Uniform decode: T tokens are T requests, so the pick depends on T
	 * alone; one entry a run of T that picks the same variant. */
	for (uint32_t tok = 1; tok <= max_tokens; tok++) {
		struct serve_batch_key k = { tok, tok, true };
		struct serve_pick p;
		serve_dispatch_pick(d, &k, &p);
		if (p.variant == PLAN_NONE)
			continue;
		if (nt > 0 && t[nt - 1].variant == p.variant && t[nt - 1].tokens_max == tok - 1) {
			t[nt - 1].tokens_max = tok;
			continue;
		}
		struct plan_dispatch e = { .tokens_min = tok, .tokens_max = tok, .variant = p.variant,
		                           .flags = PLAN_DISPATCH_UNIFORM };
		if (table_push(&t, &nt, &cap, &e) != 0)
			goto nomem;
	}
	/* Any batch: the sizes of the mixed batches' mode in pick order. A
	 * size before this one with at least as many requests holds every
	 * batch of up to its tokens: this entry starts above them. */
	for (uint32_t i = 0; mixed != 0 && i < d->nsizes; i++) {
		const struct serve_size *s = &d->sizes[i];
		int64_t lo = 1;
		if (s->mode != mixed || s->key.uniform_decode)
			continue;
		for (uint32_t j = 0; j < i; j++) {
			const struct serve_size *q = &d->sizes[j];
			if (q->mode == mixed && !q->key.uniform_decode &&
			    (q->key.requests == 0 ||
			     (s->key.requests != 0 && q->key.requests >= s->key.requests)) &&
			    (int64_t)q->key.tokens >= lo)
				lo = (int64_t)q->key.tokens + 1;
		}
		if (lo > (int64_t)s->key.tokens)
			continue;   /* the sizes before hold all it would */
		struct plan_dispatch e = { .tokens_min = lo, .tokens_max = s->key.tokens,
		                           .variant = s->variant, .requests_max = s->key.requests };
		if (table_push(&t, &nt, &cap, &e) != 0)
			goto nomem;
	}
	*out = t;
	*n = nt;
	return 0;
nomem:
	free(t);
	return -1;
}
