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

/*
 * Room for eager steps of TOKENS tokens, above the PLANNED ones PROGRAM's
 * arena is placed for (memplan_place): the captured variants keep the
 * arena as it is, so every tensor whose size grows with the token count
 * gets a second place from BASE on (inputs and outputs packed, then the
 * activations sharing space by liveness, as in the arena); OFFSET[t]
 * (plan_count_tensors() entries) gets it, or UINT64_MAX for a tensor that
 * keeps its place in the arena. *END gets the end of the room. Returns 0,
 * or -1 with a sentence in MSG: a weight or state tensor grows with the
 * token count (its contents carry from step to step in one place), a
 * tensor is too large to place, out of memory.
 */
int memplan_place_above(const plan_t *program, int64_t planned, int64_t tokens, uint64_t base,
                        uint64_t *offset, uint64_t *end, char *msg, size_t len);

/*
 * A region of its own for the tensors IN[t] marks (plan_count_tensors()
 * entries), at TOKENS tokens: the persistent ones packed from 0, then the
 * activations sharing space by liveness, as in the arena. OFFSET[t] gets
 * each marked tensor's place in the region, UINT64_MAX for the others;
 * *END the region's size. The layout depends on the marked tensors' sizes
 * and the ops that touch them only, so two programs that agree in those
 * (the ranks of a tensor-parallel plan, for their collectives) agree in
 * it. Returns 0, or -1 with a sentence in MSG.
 */
int memplan_place_subset(const plan_t *program, int64_t tokens, const unsigned char *in,
                         uint64_t *offset, uint64_t *end, char *msg, size_t len);

/* First and last op touching each tensor (PLAN_NONE when none does):
 * FIRST and LAST have plan_count_tensors() entries. Exposed for tests. */
void memplan_liveness(const plan_t *program, uint32_t *first, uint32_t *last);

#endif /* BCG_ENGINE_MEMPLAN_H */
