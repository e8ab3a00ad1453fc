/*
 * suggest.c - "did you mean": the known name closest to a misspelt one, by
 * edit distance (insertions, deletions, substitutions, transpositions).
 */
#include "config.h"

#include <string.h>

#include "internal.h"

#define SUGGEST_MAX_LEN 64

/* Optimal string alignment distance of A and B (each under
 * SUGGEST_MAX_LEN bytes). */
static size_t suggest_distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1];

	for (size_t i = 0; i <= na; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= nb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= na; i++) {
		for (size_t j = 1; j <= nb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < best)
				best = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[na][nb];
}

const char *suggest_name(const char *name, const char *const *candidates, size_t n)
{
	size_t nn = strlen(name), best = SIZE_MAX;
	const char *found = NULL;

	if (nn >= SUGGEST_MAX_LEN)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t nc = strlen(candidates[i]);
		if (nc >= SUGGEST_MAX_LEN)
			continue;
		size_t d = suggest_distance(name, nn, candidates[i], nc);
		if (d < best) {
			best = d;
			found = candidates[i];
		}
	}
	/* Close enough to be a slip of the keyboard, not another word. */
	if (found == NULL || best == 0 || best > 2 || best * 3 > nn + 1)
		return NULL;
	return found;
}
