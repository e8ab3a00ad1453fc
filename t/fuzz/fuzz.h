/*
 * fuzz.h - the entry points of the fuzz targets (t/fuzz/fuzz-*.c), as
 * libFuzzer calls them; t/fuzz/driver.c calls them the same way without
 * libFuzzer, so that `make check` runs the targets over their seeds.
 */
#ifndef BCG_FUZZ_H
#define BCG_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Defined by the plan target only. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed);

/* libFuzzer's own mutator; the driver has a small one of its own. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);

/* A plan file around CONTENT: compressed, with the header's sizes and
 * checksums, written to OUT if it fits in MAX bytes. Returns its size, or
 * 0 (OUT untouched) when it does not fit or compression fails. */
size_t fuzz_plan_pack(const unsigned char *content, size_t len, unsigned major,
                      unsigned minor, uint8_t *out, size_t max);

#endif /* BCG_FUZZ_H */
