/*
 * engine/shard.h - the sharding pass of tensor parallelism: from the
 * program of a parsed script, the program one rank of WORLD runs.
 *
 * Every split tensor (plan.h's struct plan_split) gets the rank's share:
 * its split axis becomes a literal size, the sum of the blocks' shares,
 * and its split records start and length per block. Ops that name heads
 * get the rank's heads; products whose weight splits along K are followed
 * by an all_reduce (matmul_add becomes matmul, all_reduce, add); a
 * vocabulary-parallel embedding becomes vocab_embedding and an all_reduce;
 * a column-parallel product whose output is declared whole computes into
 * "<out>.shard" and an all_gather fills the output. Ops that reduce along
 * an axis (norms, softmax, argmax, the experts, slice) take no split
 * operand. Weights read from checkpoints get the slice of the rank
 * (plan_weight_source.slice_*). New tensors come after the script's, so a
 * tensor keeps its index; the rank program holds no variants.
 *
 * With WORLD 1 the result is a copy of the program.
 */
#ifndef BCG_ENGINE_SHARD_H
#define BCG_ENGINE_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* Why sharding failed: the op (its script position in the plan op's line
 * and col) or the tensor it concerns, PLAN_NONE when neither. */
struct shard_error {
	uint32_t op;
	uint32_t tensor;
	uint32_t line, col;    /* of the op; 0 when the error is about a tensor */
	char     msg[512];
};

/* The share of rank RANK of WORLD of a split of FULL elements in UNIT
 * units: 0 with *START and *LEN, or -1 when WORLD cannot split it. */
int shard_block(int64_t full, int64_t unit, uint32_t world, uint32_t rank, int64_t *start,
                int64_t *len);

/* Rank RANK's program of SCRIPT (a script's program: dims, vars, tensors,
 * ops, weight sources). TOKENS (NTOKENS of them, may be 0) are the capture
 * sizes at which every op of the result is checked against the registry
 * again. Returns 0 with *OUT (owned by the caller; its dist says WORLD and
 * RANK), or -1 with ERR. */
int shard_plan(const plan_t *script, uint32_t world, uint32_t rank, const int64_t *tokens,
               uint32_t ntokens, plan_t **out, struct shard_error *err);

#endif /* BCG_ENGINE_SHARD_H */
