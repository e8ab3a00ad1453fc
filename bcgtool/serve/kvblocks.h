/*
 * serve/kvblocks.h - the KV cache's block pool.
 *
 * The paged KV cache is a fixed number of blocks of block_size positions.
 * Each request holds a list of blocks, in the order of its positions
 * (position p lives in block list[p / block_size] at offset
 * p % block_size); a request grows its list as its sequence grows and
 * gives every block back when it retires or is preempted.
 *
 * Growing is all or nothing: when the pool cannot give every block asked
 * for, it gives none, so a failed step leaves the pool as it was.
 * Free blocks are handed out lowest id first, which makes every schedule
 * reproducible and keeps a small workload in the first blocks.
 */
#ifndef BCG_SERVE_KVBLOCKS_H
#define BCG_SERVE_KVBLOCKS_H

#include <stdint.h>

#define KV_NO_OWNER UINT32_MAX

struct kv_pool {
	uint32_t  nblocks;
	uint32_t  block_size;
	uint32_t  nfree;
	uint32_t *free;     /* a min-heap of free block ids, nfree of them */
	uint32_t *owner;    /* per block: the owning request, or KV_NO_OWNER */
};

/* One request's blocks. */
struct kv_list {
	uint32_t  n;
	uint32_t  cap;      /* the most blocks a request may hold */
	uint32_t *ids;
};

/* NBLOCKS >= 1 blocks of BLOCK_SIZE >= 1 positions. -1 out of memory. */
int kv_pool_init(struct kv_pool *p, uint32_t nblocks, uint32_t block_size);
void kv_pool_release(struct kv_pool *p);

/* Blocks that hold POSITIONS positions. */
uint32_t kv_blocks_for(const struct kv_pool *p, uint64_t positions);

/* A list able to hold CAP blocks. -1 out of memory. */
int kv_list_init(struct kv_list *l, uint32_t cap);
void kv_list_release(struct kv_list *l);

/* Grow L, owned by request OWNER, to hold POSITIONS positions. 0 done (or
 * nothing to do), -1 not enough free blocks or above L's cap (nothing
 * taken). */
int kv_pool_grow(struct kv_pool *p, struct kv_list *l, uint32_t owner, uint64_t positions);

/* Give every block of L back to the pool; L is empty after. */
void kv_pool_free(struct kv_pool *p, struct kv_list *l);

#endif /* BCG_SERVE_KVBLOCKS_H */
