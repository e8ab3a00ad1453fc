/*
 * plan-sample.h - plans built in code for libplan's unit tests: a rich one
 * with every field set to a value of its own, the format spec's test
 * vector, and a large one of many nodes.
 */
#ifndef BCG_T_PLAN_SAMPLE_H
#define BCG_T_PLAN_SAMPLE_H

#include <stddef.h>

#include "plan.h"

/* Every kind of record and field: three variants (breakable, full,
 * eager), segments with and without nodes, params and edges (default and
 * programmatic), the PDL feature, implementation choices, breakpoints
 * with reads and writes, checks, dispatch, stats, attributes of every
 * type. Variants' segments and breakpoints are added interleaved across
 * variants. NULL when a builder call fails (the message on stderr). */
plan_t *sample_rich(void);

/* The plan of t/data/vector.plan, as formats/plan-format.md describes it:
 * 2 dims, 1 var, 3 tensors, 2 ops, 1 variant of one segment (two nodes
 * joined by a programmatic edge) and one breakpoint, 1 check, 1 dispatch
 * entry, 1 choice, the PDL feature. */
plan_t *sample_vector(void);

/* The plan of t/data/vector-1.0.plan, the vector of format 1.0: the same
 * but for the second node, the edge, the feature and the choice. */
plan_t *sample_vector_1_0(void);

/* A plan of NSEG segments of NODES nodes each (in one breakable variant,
 * with a breakpoint after each segment), as a capture of a large model
 * would give. */
plan_t *sample_large(unsigned nseg, unsigned nodes);

/* The recorded plan of t/data/recorded.plan (format 1.4), as
 * formats/plan-format.md describes it: a recording, two modules (one image
 * kept, one not), three functions, two allocations (one snapshot), and two
 * variants: "decode_step" (a host copy, a graph of two kernels, a memset
 * and an empty node, a library kernel) and "prefill_step" (a graph of
 * LAYERS repeats of rmsnorm then matmul, then a device copy). The vector
 * has LAYERS 2; 1..16. */
plan_t *sample_recorded(unsigned layers);

/* The recorded plan with changes, for diffs: LAYERS as above; RENAME:
 * matmul's template argument 128 becomes 256; MOVE_BREAK: the library
 * GEMM's break comes before the graph in "decode_step"; MODULE_CHANGED:
 * a byte of module 0's image (and so its hash) differs; GRID: rmsnorm's
 * grid in "decode_step" is 32, not 16; ONE_VARIANT: no "prefill_step";
 * OFFSETS: see below. */
struct sample_rec_opts {
	unsigned layers;
	int      rename;
	int      move_break;
	int      module_changed;
	int      grid;
	int      one_variant;
	/* (format 1.7) 1: the items' start offsets of the paced vector
	 * (plan-format.md); not with MOVE_BREAK. Broken for plan_validate:
	 * 2, cublasLt starts before the graph before it; 3, cublasLt has no
	 * start offset where the graph has one; 4, the first item (memcpy)
	 * starts 100 ns into its own step. */
	int      offsets;
};
plan_t *sample_recorded_ex(const struct sample_rec_opts *opts);

/* Read a whole file into a malloc'd buffer; NULL on failure. */
unsigned char *sample_slurp(const char *path, size_t *len);

/* Deep comparison of two plans: every field of every record. Returns 1
 * when equal; otherwise 0 with the first difference in WHY. */
int sample_plans_equal(const plan_t *a, const plan_t *b, char *why, size_t len);

#endif /* BCG_T_PLAN_SAMPLE_H */
