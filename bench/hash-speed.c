/*
 * hash-speed.c - how fast the two content hashes of the plan format run on
 * this CPU: XXH64 (seed 0, libxxhash) and CRC-32C (plan_crc32c, ISA-L),
 * each over one buffer of 1 GiB (or the size given in MiB), best of five
 * passes. `make bench/hash-speed && bench/hash-speed [MIB]`; the figures
 * are in bench/RESULTS.md.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <xxhash.h>

#include "plan.h"

#define PASSES 5

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t mib = 1024, len;
	unsigned char *buf;
	double best_x = 1e30, best_c = 1e30;
	uint64_t h = 0;
	uint32_t c = 0;

	if (argc > 2 || (argc == 2 && (mib = strtoul(argv[1], NULL, 10)) == 0)) {
		fprintf(stderr, "usage: hash-speed [MIB]\n");
		return 2;
	}
	len = mib << 20;
	buf = malloc(len);
	if (buf == NULL) {
		fprintf(stderr, "hash-speed: cannot allocate %zu MiB\n", mib);
		return 3;
	}
	/* Bytes that are not all alike, written once so that every page is
	 * in memory before the first pass. */
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)((i * 2654435761u) >> 13);
	for (int pass = 0; pass < PASSES; pass++) {
		double t = now();

		h = XXH64(buf, len, 0);
		t = now() - t;
		if (t < best_x)
			best_x = t;
		t = now();
		c = plan_crc32c(buf, len);
		t = now() - t;
		if (t < best_c)
			best_c = t;
	}
	printf("xxh64   %zu MiB  %.3f s  %.2f GB/s  (%016" PRIx64 ")\n", mib, best_x,
	       (double)len / best_x / 1e9, h);
	printf("crc32c  %zu MiB  %.3f s  %.2f GB/s  (%08" PRIx32 ")\n", mib, best_c,
	       (double)len / best_c / 1e9, c);
	free(buf);
	return 0;
}
