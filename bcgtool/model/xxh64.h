/*
 * xxh64.h - the 64-bit xxHash of a byte string (XXH64, seed 0), the
 * content hash of weight provenance.
 *
 * Weights are hashed every time a process loads them (2.5 GB for a
 * Llama-3.2-1B), so the hash must run at memory speed: XXH64 consumes 32
 * bytes per round in four independent lanes, where libplan's FNV-1a
 * (one multiply per byte) is some ten times slower. The algorithm is
 * Yann Collet's public specification (xxhash's doc/xxhash_spec.md);
 * formats/plan-format.md, WSRC, names it and gives test values.
 */
#ifndef BCG_MODEL_XXH64_H
#define BCG_MODEL_XXH64_H

#include <stddef.h>
#include <stdint.h>

uint64_t bcg_xxh64(const void *data, size_t len, uint64_t seed);

#endif /* BCG_MODEL_XXH64_H */
