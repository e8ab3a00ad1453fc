/*
 * serve-kvblocks.c - the KV block pool: growth by positions, all or
 * nothing on exhaustion, the cap of a list, freeing, lowest id first; and
 * a random workload checked against an ownership map kept by the test.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "serve/kvblocks.h"
#include "tap.h"

static void test_basics(void)
{
	struct kv_pool p;
	struct kv_list a, b;

	ok(kv_pool_init(&p, 0, 16) == -1, "a pool of no blocks is refused");
	ok(kv_pool_init(&p, 5, 16) == 0, "a pool of 5 blocks of 16");
	is_int(kv_blocks_for(&p, 0), 0, "0 positions: 0 blocks");
	is_int(kv_blocks_for(&p, 1), 1, "1 position: 1 block");
	is_int(kv_blocks_for(&p, 16), 1, "16 positions: 1 block");
	is_int(kv_blocks_for(&p, 17), 2, "17 positions: 2 blocks");
	ok(kv_list_init(&a, 3) == 0 && kv_list_init(&b, 8) == 0, "two lists");

	ok(kv_pool_grow(&p, &a, 0, 17) == 0, "a grows to 17 positions");
	ok(a.n == 2 && a.ids[0] == 0 && a.ids[1] == 1, "with blocks 0 and 1");
	ok(kv_pool_grow(&p, &a, 0, 32) == 0 && a.n == 2, "32 positions need no new block");
	ok(kv_pool_grow(&p, &a, 0, 49) == -1 && a.n == 2 && p.nfree == 3,
	   "a cannot pass its cap of 3 blocks, and takes nothing");
	ok(kv_pool_grow(&p, &b, 1, 33) == 0 && b.n == 3 && b.ids[0] == 2 && b.ids[2] == 4,
	   "b takes the other three, lowest first");
	is_int(p.nfree, 0, "the pool is empty");
	ok(kv_pool_grow(&p, &b, 1, 49) == -1 && b.n == 3, "b cannot grow from an empty pool");
	is_int(p.owner[0], 0, "block 0 is a's");
	is_int(p.owner[3], 1, "block 3 is b's");

	kv_pool_free(&p, &a);
	ok(a.n == 0 && p.nfree == 2 && p.owner[0] == KV_NO_OWNER && p.owner[1] == KV_NO_OWNER,
	   "a's blocks are free again");
	ok(kv_pool_grow(&p, &b, 1, 96) == -1 && b.n == 3 && p.nfree == 2,
	   "b asks for 3 more than the 2 free: nothing is taken");
	ok(kv_pool_grow(&p, &b, 1, 64) == 0 && b.n == 4 && b.ids[3] == 0,
	   "b asks for one: the lowest free block, 0");
	kv_pool_free(&p, &b);
	is_int(p.nfree, 5, "every block is free");
	ok(kv_pool_grow(&p, &a, 2, 1) == 0 && a.ids[0] == 0, "the next block given is 0 again");
	kv_pool_free(&p, &a);
	kv_list_release(&a);
	kv_list_release(&b);
	kv_pool_release(&p);
}

/* Random requests grow and free; the test's own map must agree with the
 * pool's after every operation, and no block is ever in two lists. */
static void test_random(void)
{
	enum { NB = 97, NR = 13, CAP = 20, BS = 4 };
	struct kv_pool p;
	struct kv_list l[NR];
	uint32_t owner[NB], pos[NR] = { 0 };
	uint64_t x = 12345;
	unsigned bad = 0, fails = 0, grows = 0;

	ok(kv_pool_init(&p, NB, BS) == 0, "a pool of 97 blocks of 4");
	for (int r = 0; r < NR; r++)
		kv_list_init(&l[r], CAP);
	for (int b = 0; b < NB; b++)
		owner[b] = KV_NO_OWNER;
	for (int step = 0; step < 20000; step++) {
		uint32_t r, free_count = 0;
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		r = (uint32_t)(x >> 33) % NR;
		if ((x >> 20) % 7 == 0) {
			for (uint32_t i = 0; i < l[r].n; i++)
				owner[l[r].ids[i]] = KV_NO_OWNER;
			kv_pool_free(&p, &l[r]);
			pos[r] = 0;
		} else {
			uint32_t want = pos[r] + 1 + (uint32_t)((x >> 40) % 9);
			uint32_t need = (want + BS - 1) / BS, had = l[r].n;
			uint32_t nfree = 0;
			for (int b = 0; b < NB; b++)
				nfree += owner[b] == KV_NO_OWNER;
			int expect_ok = need <= CAP && (need <= had || need - had <= nfree);
			int rc = kv_pool_grow(&p, &l[r], r, want);
			if ((rc == 0) != expect_ok)
				bad++;
			if (rc == 0) {
				grows++;
				pos[r] = want;
				for (uint32_t i = had; i < l[r].n; i++) {
					if (owner[l[r].ids[i]] != KV_NO_OWNER)
						bad++;   /* handed out twice */
					owner[l[r].ids[i]] = r;
				}
				if (l[r].n != need)
					bad++;
			} else {
				fails++;
				if (l[r].n != had)
					bad++;
			}
		}
		for (int b = 0; b < NB; b++) {
			if (p.owner[b] != owner[b])
				bad++;
			free_count += owner[b] == KV_NO_OWNER;
		}
		if (p.nfree != free_count)
			bad++;
	}
	is_int(bad, 0, "the pool agrees with the test's map after 20000 operations");
	ok(grows > 1000 && fails > 100, "both growth and exhaustion happened (%u, %u)", grows, fails);
	for (int r = 0; r < NR; r++) {
		kv_pool_free(&p, &l[r]);
		kv_list_release(&l[r]);
	}
	is_int(p.nfree, NB, "all blocks free at the end");
	kv_pool_release(&p);
}

int main(void)
{
	test_basics();
	test_random();
	return tap_done();
}
