/*
 * memplan.h - the memory planner: every tensor and var mirror of a program
 * at an offset in one arena.
 *
 * Weights, inputs, outputs, state and var mirrors are persistent: each has
 * space of its own for the whole step. Activations live from the first op
 * that touches them to the last, and share space when their lifetimes do
 * not overlap. Liveness is the same at every capture size (the op list does
 * not change), so the arena is planned once at the largest size and every
 * variant runs in it; a variant planned alone would need its peak.
 */
#ifndef BCG_ENGINE_MEMPLAN_H
#define BCG_ENGINE_MEMPLAN_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#define MEMPLAN_ALIGNMENT 256u

struct memplan {
	uint64_t  arena_bytes;     /* the shared arena */
	uint64_t  unshared_bytes;  /* the same without activation reuse */
	uint64_t  persistent_bytes;/* weights, inputs, outputs, state, vars */
	uint32_t  nvariants;
	uint64_t *peak_bytes;      /* per token count given, planned alone */
};

/* Place PROGRAM's tensors and vars for the token counts TOKENS[0..N) and
 * record offsets, sizes and the layout in PROGRAM. Returns 0, or -1 with a
 * sentence in MSG (a tensor too large to address, out of memory). */
int memplan_place(plan_t *program, const int64_t *tokens, uint32_t n,
                  struct memplan *out, char *msg, size_t len);

void memplan_release(struct memplan *mp);

/* First and last op touching each tensor (PLAN_NONE when none does):
 * FIRST and LAST have plan_count_tensors() entries. Exposed for tests. */
void memplan_liveness(const plan_t *program, uint32_t *first, uint32_t *last);

#endif /* BCG_ENGINE_MEMPLAN_H */
