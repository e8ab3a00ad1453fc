/*
 * serve/scheduler.h - continuous batching over a request trace.
 *
 * Each step the scheduler forms one batch (serve/batch.h) from the
 * requests that have arrived, as vLLM's scheduler does:
 *  - running requests first, in the order they were admitted: a decoding
 *    request gets one token, a request still in its prompt gets the next
 *    chunk of it (at most `chunk` tokens, at most what the budget has left);
 *  - then, while requests, tokens and KV blocks allow, waiting requests in
 *    arrival order (first come, first served: when the first waiting
 *    request does not fit, none behind it is admitted);
 *  - a request's KV blocks grow with its sequence; when a running request
 *    cannot grow, the most recently admitted running request is preempted:
 *    its blocks are freed and it goes back to the front of the waiting
 *    queue, to compute its prompt and the tokens it had generated again
 *    (recompute, vLLM's only kind of preemption). No request is admitted
 *    in a step that preempted.
 * After the step has run, serve_sched_finish() advances every scheduled
 * request: a request whose known tokens are all computed samples its next token;
 * one that has generated its output length retires and frees its blocks.
 *
 * Time is a virtual clock: it advances `step_us` a step, and jumps to the
 * next arrival when nothing is running or waiting. The schedule therefore
 * depends on the trace and the options alone, never on how fast the
 * steps ran: the same trace gives the same batches on every backend.
 */
#ifndef BCG_SERVE_SCHEDULER_H
#define BCG_SERVE_SCHEDULER_H

#include <stdint.h>

#include "serve/batch.h"
#include "serve/kvblocks.h"
#include "serve/trace.h"

struct serve_sched_opts {
	uint32_t num_blocks;     /* blocks in the KV cache */
	uint32_t block_size;     /* positions a block */
	uint32_t max_blocks;     /* blocks one request may hold (block table width) */
	uint32_t max_reqs;       /* requests in a batch */
	uint32_t token_budget;   /* tokens in a batch */
	uint32_t chunk;          /* prompt tokens of one request a step; 0: the budget */
	uint64_t step_us;        /* virtual time a step takes */
	uint32_t pad_tokens;     /* the batch's arrays hold this many token rows */
	uint32_t pad_reqs;       /* ... and request rows (padding included) */
	int      modelled;       /* the program has no batch feeds: the cache is
	                          * the scheduler's alone, no request is served */
};

enum serve_req_state {
	SERVE_REQ_FUTURE,     /* not arrived yet */
	SERVE_REQ_WAITING,
	SERVE_REQ_RUNNING,
	SERVE_REQ_FINISHED,
};

struct serve_sched_req {
	int            state;
	uint32_t       computed;     /* positions in the KV cache */
	uint32_t       generated;    /* output tokens sampled */
	uint32_t       scheduled;    /* tokens in the step being formed */
	uint32_t       preempted;    /* times preempted */
	uint64_t       first_step;   /* the step that sampled its first token */
	uint64_t       finish_step;  /* the step that sampled its last token */
	struct kv_list blocks;
};

struct serve_sched_stats {
	uint64_t steps;
	uint64_t preemptions;
	uint64_t tokens;           /* scheduled, over every step */
	uint64_t generated;        /* output tokens sampled */
	uint32_t max_reqs;         /* the most requests of a batch */
	uint32_t max_tokens;       /* the most tokens of a batch */
	uint64_t idle_us;          /* virtual time with nothing to run */
};

struct serve_sched {
	struct serve_sched_opts   o;
	const struct serve_trace *trace;
	struct kv_pool            pool;
	struct serve_sched_req   *r;          /* per trace request */
	uint32_t                  next;       /* first request not arrived */
	uint32_t                 *waiting;    /* trace indexes, queue order */
	uint32_t                  nwaiting;
	uint32_t                 *running;    /* trace indexes, admission order */
	uint32_t                  nrunning;
	uint32_t                 *batch_reqs; /* the step's requests, batch order */
	uint32_t                  nfinished;
	int                       pending;    /* a batch formed, not finished */
	uint64_t                  clock_us;
	struct serve_sched_stats  stats;
	struct serve_batch        batch;
};

/* Check O against T (every request must fit in the cache alone) and set
 * up. On error fill WHY (no position) and return -1; the message names
 * the request that does not fit. */
int serve_sched_init(struct serve_sched *s, const struct serve_trace *t,
                     const struct serve_sched_opts *o, struct serve_diag *why);

/* Parse SPEC, "key=value,..." (bcgtool-replay(1)): budget, requests,
 * chunk, blocks, block-size, step-us; the keys not given keep O's values.
 * On error write the reason to WHY and return -1. */
int serve_sched_parse(const char *spec, struct serve_sched_opts *o, char *why, size_t whylen);
void serve_sched_release(struct serve_sched *s);

/* Form the next step's batch into s->batch. 0 formed, 1 every request
 * has finished (nothing formed). */
int serve_sched_next(struct serve_sched *s);

/* Pad s->batch to TOKENS token rows and REQS request rows (at least the
 * batch's own, at most the pad capacities): padded rows get
 * SERVE_SLOT_PAD and position 0, padded requests seq_len 0, no tokens
 * (their query_start is the unpadded token count) and block 0 throughout
 * their table. s->batch.key stays the unpadded key. */
void serve_sched_pad(struct serve_sched *s, uint32_t tokens, uint32_t reqs);

/* The batch formed by serve_sched_next() has run: advance its requests. */
void serve_sched_finish(struct serve_sched *s);

#endif /* BCG_SERVE_SCHEDULER_H */
