/*
 * serve/kvblocks.c - the KV block pool: a min-heap of free block ids and
 * an owner per block.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "serve/kvblocks.h"

int kv_pool_init(struct kv_pool *p, uint32_t nblocks, uint32_t block_size)
{
	memset(p, 0, sizeof *p);
	if (nblocks == 0 || block_size == 0)
		return -1;
	p->free = malloc((size_t)nblocks * sizeof *p->free);
	p->owner = malloc((size_t)nblocks * sizeof *p->owner);
	if (p->free == NULL || p->owner == NULL) {
		kv_pool_release(p);
		return -1;
	}
	/* Ascending ids are already a min-heap. */
	for (uint32_t i = 0; i < nblocks; i++) {
		p->free[i] = i;
		p->owner[i] = KV_NO_OWNER;
	}
	p->nblocks = nblocks;
	p->block_size = block_size;
	p->nfree = nblocks;
	return 0;
}

void kv_pool_release(struct kv_pool *p)
{
	free(p->free);
	free(p->owner);
	memset(p, 0, sizeof *p);
}

uint32_t kv_blocks_for(const struct kv_pool *p, uint64_t positions)
{
	uint64_t n = (positions + p->block_size - 1) / p->block_size;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

int kv_list_init(struct kv_list *l, uint32_t cap)
{
	l->n = 0;
	l->cap = cap;
	l->ids = malloc((cap ? cap : 1) * sizeof *l->ids);
	return l->ids == NULL ? -1 : 0;
}

void kv_list_release(struct kv_list *l)
{
	free(l->ids);
	memset(l, 0, sizeof *l);
}

static uint32_t heap_pop(struct kv_pool *p)
{
	uint32_t top = p->free[0], x = p->free[--p->nfree], i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= p->nfree)
			break;
		if (c + 1 < p->nfree && p->free[c + 1] < p->free[c])
			c++;
		if (x <= p->free[c])
			break;
		p->free[i] = p->free[c];
		i = c;
	}
	if (p->nfree > 0)
		p->free[i] = x;
	return top;
}

static void heap_push(struct kv_pool *p, uint32_t id)
{
	uint32_t i = p->nfree++;

	while (i > 0 && p->free[(i - 1) / 2] > id) {
		p->free[i] = p->free[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	p->free[i] = id;
}

int kv_pool_grow(struct kv_pool *p, struct kv_list *l, uint32_t owner, uint64_t positions)
{
	uint32_t want = kv_blocks_for(p, positions);

	if (want <= l->n)
		return 0;
	if (want > l->cap || want - l->n > p->nfree)
		return -1;
	while (l->n < want) {
		uint32_t id = heap_pop(p);
		p->owner[id] = owner;
		l->ids[l->n++] = id;
	}
	return 0;
}

void kv_pool_free(struct kv_pool *p, struct kv_list *l)
{
	for (uint32_t i = 0; i < l->n; i++) {
		p->owner[l->ids[i]] = KV_NO_OWNER;
		heap_push(p, l->ids[i]);
	}
	l->n = 0;
}
