/*
 * stash.h - tensors of the arena kept as they were at one moment, to be
 * compared later with what the arena holds then.
 *
 * A tensor is kept in the backend's own memory beside the arena when the
 * backend has room for it (on cuda: free device memory with headroom to
 * spare), and compared there by the backend: no byte of it crosses to the
 * host. Else it is read into host memory and compared on the host, as
 * every tensor once was. Both give the same result to the bit (verify.h).
 *
 * Test hook: BCG_TEST_SPARE_BYTES=N keeps at most N bytes of a stash in
 * the backend's memory, the rest in host memory, so that a test can take
 * either path on any backend (bcgtool(1), ENVIRONMENT).
 */
#ifndef BCG_ENGINE_STASH_H
#define BCG_ENGINE_STASH_H

#include <stdint.h>

#include "engine.h"
#include "verify.h"

struct stash_item {
	uint32_t tensor;
	uint64_t count;        /* elements kept */
	void    *data;         /* the copy */
	int      on_backend;   /* DATA is the backend's memory (spare_alloc) */
	int      pooled;       /* ... taken from a stash_pool, not its own */
};

struct stash {
	int64_t            tokens;   /* the token count the tensors were kept at */
	uint32_t           n;
	struct stash_item *item;
};

/* Keep tensors WHICH[0 .. N-1] at TOKENS tokens as they are once the work
 * queued so far is done. Release S with stash_release(), also after a
 * failure. */
int stash_take(struct engine *e, const uint32_t *which, uint32_t n, int64_t tokens,
               struct stash *s, struct engine_error *err);

/*
 * One spare allocation of the backend that stashes take their room from
 * in turn, instead of an allocation each (on cuda a cudaMalloc and a
 * synchronizing cudaFree per tensor): a capture keeps the same tensors
 * for every variant, the largest first. What does not fit in it is kept
 * as stash_take keeps it.
 */
struct stash_pool {
	void     *base;   /* NULL: none (the backend had no room) */
	uint64_t  bytes;
	uint64_t  used;
};

/* Make P of BYTES in the backend's memory, when it has room; else P has
 * none. A stash takes room from it up to BCG_TEST_SPARE_BYTES, as from
 * allocations of its own. Release with stash_pool_release() once no
 * stash uses it. */
int stash_pool_init(struct engine *e, uint64_t bytes, struct stash_pool *p,
                    struct engine_error *err);
void stash_pool_release(struct engine *e, struct stash_pool *p);
/* stash_take() with room from POOL (may be NULL) first: each tensor at
 * POOL's next multiple of 256 bytes. */
int stash_take_pooled(struct engine *e, const uint32_t *which, uint32_t n, int64_t tokens,
                      struct stash_pool *pool, struct stash *s, struct engine_error *err);
/* The same for every output and state tensor: what a step leaves. */
int stash_take_results(struct engine *e, int64_t tokens, struct stash *s,
                       struct engine_error *err);
void stash_release(struct engine *e, struct stash *s);

/* Compare item K of S with its tensor in the arena now. STASH_IS_REF: the
 * stash is the reference (verify_compare's WANT), else the arena is. An
 * argmax's index that differs in a tolerant comparison is judged with its
 * input, when S keeps that too (verify.h: near-ties, counted in
 * R->ties). */
int stash_compare(struct engine *e, const struct stash *s, uint32_t k, int stash_is_ref,
                  int tolerant, struct verify_result *r, struct engine_error *err);

/* What comparing a whole stash found: replay --check's verdict. */
struct stash_verdict {
	int    pass;              /* every tensor passed */
	int    exact;             /* every tensor matched bit for bit */
	double error;             /* the largest relative error (NaN first) */
	uint64_t ties;            /* argmax rows passed as near-ties (verify.h) */
	char   detail[256];       /* the first failure, for people */
};

/* Compare every item of S (a replay's results) with the arena (an eager
 * run's, the reference) into V. */
int stash_check(struct engine *e, const struct stash *s, int tolerant, struct stash_verdict *v,
                struct engine_error *err);

/* V for people, the text after "check": "bit-exact with eager", "within
 * bounds of eager (relative error E[; N argmax rows near-tied])" or
 * "FAILED: ..." (replay --check, bench and replay --trace --check). */
void stash_verdict_text(const struct stash_verdict *v, char *buf, size_t len);
/* V as the JSON object of a "check" key (formats/json: replay, bench). */
void stash_verdict_json(struct plan_json *j, const struct stash_verdict *v);

#endif /* BCG_ENGINE_STASH_H */
