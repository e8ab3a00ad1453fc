/*
 * inspect-recorded.h - bcgtool inspect's text for a recorded plan
 * (format 1.4): the recording, its variants with their steps, modules and
 * allocations, kernel names demangled.
 */
#ifndef BCG_INSPECT_RECORDED_H
#define BCG_INSPECT_RECORDED_H

#include <stdint.h>

#include "plan.h"
#include "table.h"

/* What to print; 0: the summary (the recording and the variants). */
#define INSPECT_REC_STEPS    0x1u  /* each variant's items: segments with their
                                      kernels, breaks with their launches */
#define INSPECT_REC_NODES    0x2u  /* every node of every segment */
#define INSPECT_REC_MODULES  0x4u  /* modules: kept or not, and why */
#define INSPECT_REC_ALLOCS   0x8u  /* allocations */
#define INSPECT_REC_KERNELS  0x10u /* kernels by launches, in graphs and eager */

/* Print PLAN (read from PATH) for people; VARIANT: only that variant's
 * records (PLAN_NONE: all). */
void inspect_recorded(const plan_t *plan, const char *path, uint32_t variant,
                      const struct style *st, unsigned what);

#endif /* BCG_INSPECT_RECORDED_H */
