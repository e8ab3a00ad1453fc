/*
 * fuzz-safetensors.c - a libFuzzer target for the safetensors header
 * checks (bcgtool/model/safetensors.c), on the input as a whole file.
 *
 * A failure must say why. A file that opens must hold what the checks
 * promise to every later reader: each tensor's bytes inside the data,
 * as many as its shape and dtype need; names unique and sorted; no two
 * tensors that take bytes sharing any.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/safetensors.h"
#include "fuzz.h"

static int fuzz_by_begin(const void *a, const void *b)
{
	const struct st_tensor *x = *(const struct st_tensor *const *)a;
	const struct st_tensor *y = *(const struct st_tensor *const *)b;

	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct st_file *f = NULL;
	const struct st_tensor **by_begin;
	char msg[512] = "";

	if (st_open_memory("fuzz.safetensors", data, size, &f, msg, sizeof msg) != 0) {
		if (f != NULL || msg[0] == '\0')
			abort();
		return 0;
	}
	if (f->data_start < 8 || f->data_start > size)
		abort();
	by_begin = malloc((f->ntensors + 1) * sizeof *by_begin);
	if (by_begin == NULL)
		abort();
	for (uint32_t i = 0; i < f->ntensors; i++) {
		const struct st_tensor *t = &f->tensors[i];
		if (t->begin < f->data_start || t->end < t->begin || t->end > size ||
		    t->end - t->begin != t->numel * t->elem_bytes || t->rank < 0 ||
		    t->rank > ST_MAX_RANK)
			abort();
		if (i > 0 && strcmp(f->tensors[i - 1].name, t->name) >= 0)
			abort();
		if (st_find(f, t->name) != t)
			abort();
		by_begin[i] = t;
	}
	/* No overlap: sorted by offset, each tensor that takes bytes starts at
	 * or after the end of every one before it. */
	qsort(by_begin, f->ntensors, sizeof *by_begin, fuzz_by_begin);
	uint64_t reach = 0;
	for (uint32_t i = 0; i < f->ntensors; i++) {
		if (by_begin[i]->end == by_begin[i]->begin)
			continue;
		if (by_begin[i]->begin < reach)
			abort();
		reach = by_begin[i]->end;
	}
	free(by_begin);
	st_close(f);
	return 0;
}
