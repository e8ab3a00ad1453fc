/*
 * serve/batch.h - one serving step's batch: the host state that changes
 * every step and that a paged-attention forward pass reads.
 *
 * This is the contract between the scheduler (serve/scheduler.c), which
 * forms a batch from the running requests each step, and the engine, which
 * writes the batch into the script's per-request host vars before the step
 * (and, for the graph-safe ops, into their device mirrors in the arena).
 *
 * Tokens are laid out request after request: request r owns the token rows
 * query_start[r] .. query_start[r + 1] - 1. A decode request has one query
 * token; a prefill chunk has several. Rows from num_tokens up to the padded
 * size are padding: their slot is SERVE_SLOT_PAD, and requests from
 * num_reqs up to the padded request count have seq_len 0 and no blocks.
 */
#ifndef BCG_SERVE_BATCH_H
#define BCG_SERVE_BATCH_H

#include <stdbool.h>
#include <stdint.h>

/* A padded row's slot: the paged cache write skips it. */
#define SERVE_SLOT_PAD (-1)

/*
 * The key a batch is dispatched by, as vLLM's batch descriptor: the token
 * count, the request count, and whether every request decodes one token.
 */
struct serve_batch_key {
	uint32_t tokens;
	uint32_t requests;
	bool uniform_decode;
};

struct serve_batch {
	struct serve_batch_key key;  /* unpadded: what the scheduler formed */
	uint32_t max_blocks;         /* row stride of block_table */
	uint32_t block_size;         /* cache positions per block */

	/* Per request (num_reqs entries; query_start has num_reqs + 1). */
	uint32_t *query_start;       /* first token row of each request */
	uint32_t *seq_len;           /* KV length after this step's tokens */
	uint32_t *block_table;       /* [num_reqs][max_blocks] block ids */
	uint64_t *request_id;        /* the trace's id, for reports */

	/* Per token (num_tokens entries). */
	int32_t *position;           /* position of the token in its sequence */
	int32_t *slot;               /* block * block_size + offset, or pad */
};

#endif
