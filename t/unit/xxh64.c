/*
 * xxh64.c - XXH64 with seed 0 as libxxhash computes it, the content hash
 * of weight provenance and of recorded modules (plan-format.md), against
 * values computed by the xxhash Python package, not by this library.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <xxhash.h>

#include "tap.h"

int main(void)
{
	unsigned char buf[773];

	ok(XXH64("", 0, 0) == UINT64_C(0xef46db3751d8e999), "the empty string");
	ok(XXH64("a", 1, 0) == UINT64_C(0xd24ec4f1a98c6e5b), "a");
	ok(XXH64("abc", 3, 0) == UINT64_C(0x44bc2cf5ad770999), "abc");
	/* 0..255 three times then "xyz12": every path (32-byte rounds, 8-, 4-
	 * and 1-byte tails). */
	for (int i = 0; i < 768; i++)
		buf[i] = (unsigned char)i;
	memcpy(buf + 768, "xyz12", 5);
	ok(XXH64(buf, sizeof buf, 0) == UINT64_C(0x9b7d50c047818b1b), "773 bytes");
	/* unaligned input gives the same value */
	{
		unsigned char shifted[774];
		memcpy(shifted + 1, buf, sizeof buf);
		ok(XXH64(shifted + 1, sizeof buf, 0) == UINT64_C(0x9b7d50c047818b1b),
		   "773 bytes at an odd address");
	}
	return tap_done();
}
