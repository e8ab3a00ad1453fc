/*
 * batch.c - the serving batch in the engine: where its feeds are, the
 * cache geometry, the default batch of a step without a scheduler, and the
 * batch a scheduler gives (engine_set_batch). formats/op-script.md
 * ("Batch feeds") specifies what each feed holds.
 *
 * Every batch reaches the arena whole, padding included: padded token rows
 * get the pad slot (the cache writes skip them) and position 0, padded
 * requests seq_len 0 and no rows, so paged attention reads no block for
 * them and writes zeros in every padded row; nothing of an earlier, larger
 * batch survives in the rows a kernel reads.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "cmd.h"

static const int batch_kinds[ENGINE_FEEDS] = {
	[ENGINE_FEED_SEQ_LENS] = PLAN_FEED_SEQ_LENS,
	[ENGINE_FEED_QUERY_START] = PLAN_FEED_QUERY_START,
	[ENGINE_FEED_BLOCK_TABLE] = PLAN_FEED_BLOCK_TABLE,
	[ENGINE_FEED_SLOTS] = PLAN_FEED_SLOTS,
	[ENGINE_FEED_SEQ_POSITIONS] = PLAN_FEED_SEQ_POSITIONS,
};

int engine_batch_feed(int kind)
{
	return kind >= PLAN_FEED_SEQ_LENS && kind <= PLAN_FEED_SEQ_POSITIONS;
}

static int batch_dim(int64_t v, const char *what, uint32_t *out, char *msg, size_t len)
{
	if (v < 1 || v > INT32_MAX) {
		snprintf(msg, len, "the batch's %s (%lld) is outside 1 to 2147483647", what,
		         (long long)v);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

int engine_paged_caches(const struct plan_op *o, uint32_t cache[2])
{
	cache[0] = cache[1] = PLAN_NONE;
	if (strcmp(o->kind, "paged_attention") == 0 && o->nin == 6) {
		cache[0] = o->in[1];
		cache[1] = o->in[2];
		return 2;
	}
	if (strcmp(o->kind, "paged_kv_write") == 0 && o->nout == 1) {
		cache[0] = o->out[0];
		return 1;
	}
	if (strcmp(o->kind, "rope_paged_kv_write") == 0 && o->nout == 3) {
		cache[0] = o->out[1];
		cache[1] = o->out[2];
		return 2;
	}
	return 0;
}

int engine_batch_geometry(const plan_t *program, struct engine_batch_geometry *g,
                          char *msg, size_t len)
{
	int64_t mb = 0, nb = 0, bs = 0;

	memset(g, 0, sizeof *g);
	for (int k = 0; k < ENGINE_FEEDS; k++)
		g->feed[k] = PLAN_NONE;
	g->seq_var = PLAN_NONE;
	for (uint32_t i = 0; i < plan_count_tensors(program); i++) {
		const struct plan_tensor *t = plan_get_tensor(program, i);
		for (int k = 0; k < ENGINE_FEEDS; k++)
			if (t->feed.kind == batch_kinds[k] && g->feed[k] == PLAN_NONE)
				g->feed[k] = i;
	}
	for (uint32_t i = 0; i < plan_count_ops(program); i++) {
		const struct plan_op *o = plan_get_op(program, i);
		uint32_t caches[2], cache;
		engine_paged_caches(o, caches);
		cache = caches[0];
		if (strcmp(o->kind, "paged_attention") == 0 && o->nin == 6 && mb == 0)
			mb = plan_get_tensor(program, o->in[3])->shape[1].size;
		if (cache != PLAN_NONE && nb == 0 && plan_get_tensor(program, cache)->rank == 3) {
			nb = plan_get_tensor(program, cache)->shape[0].size;
			bs = plan_get_tensor(program, cache)->shape[1].size;
		}
	}
	if (g->feed[ENGINE_FEED_SEQ_LENS] == PLAN_NONE)
		return 0;
	g->present = 1;
	g->seq_var = plan_get_tensor(program, g->feed[ENGINE_FEED_SEQ_LENS])->feed.var;
	if (g->feed[ENGINE_FEED_BLOCK_TABLE] != PLAN_NONE)
		mb = plan_get_tensor(program, g->feed[ENGINE_FEED_BLOCK_TABLE])->shape[1].size;
	if (mb == 0)
		mb = 1;
	if (batch_dim(plan_get_tensor(program, g->feed[ENGINE_FEED_SEQ_LENS])->shape[0].size,
	              "request count", &g->max_requests, msg, len) != 0 ||
	    batch_dim(mb, "block table width", &g->max_blocks, msg, len) != 0)
		return -1;
	if (nb == 0) {
		nb = (int64_t)g->max_requests * g->max_blocks;
		bs = 1;
	}
	if (batch_dim(nb, "block count", &g->num_blocks, msg, len) != 0 ||
	    batch_dim(bs, "block size", &g->block_size, msg, len) != 0 ||
	    batch_dim((int64_t)g->max_blocks * g->block_size, "positions a request", &g->max_blocks,
	              msg, len) != 0 ||
	    batch_dim((int64_t)g->num_blocks * g->block_size, "cache slots", &g->num_blocks,
	              msg, len) != 0)
		return -1;
	/* The products fit: back to the counts. */
	g->max_blocks /= g->block_size;
	g->num_blocks /= g->block_size;
	return 0;
}

int engine_batch_open(struct engine *e, struct engine_error *err)
{
	const struct engine_batch_geometry *g = &e->geo;
	size_t n;

	if (engine_batch_geometry(e->plan, &e->geo, err->msg, sizeof err->msg) != 0)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "%s", err->msg);
	if (!g->present)
		return 0;
	/* seq_lens, query_start, the table, slots and positions. */
	n = (size_t)g->max_requests * 2 + 1 + (size_t)g->max_requests * g->max_blocks +
	    2 * (size_t)e->eager_tokens;
	if ((e->batch_buf = calloc(n, sizeof *e->batch_buf)) == NULL)
		return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "out of memory");
	return 0;
}

/* The staging arrays of E's batch. */
struct batch_arrays {
	int32_t *seq, *qs, *table, *slots, *pos;
};

static void batch_arrays(const struct engine *e, struct batch_arrays *a)
{
	const struct engine_batch_geometry *g = &e->geo;

	a->seq = e->batch_buf;
	a->qs = a->seq + g->max_requests;
	a->table = a->qs + g->max_requests + 1;
	a->slots = a->table + (size_t)g->max_requests * g->max_blocks;
	a->pos = a->slots + e->eager_tokens;
}

/* Each batch feed's bytes for TOKENS token rows, into the arena. */
static int batch_write(struct engine *e, int64_t tokens, struct engine_error *err)
{
	struct batch_arrays a;
	const void *src[ENGINE_FEEDS];

	batch_arrays(e, &a);
	src[ENGINE_FEED_SEQ_LENS] = a.seq;
	src[ENGINE_FEED_QUERY_START] = a.qs;
	src[ENGINE_FEED_BLOCK_TABLE] = a.table;
	src[ENGINE_FEED_SLOTS] = a.slots;
	src[ENGINE_FEED_SEQ_POSITIONS] = a.pos;
	for (int k = 0; k < ENGINE_FEEDS; k++) {
		uint32_t t = e->geo.feed[k];
		const struct plan_tensor *pt;
		if (t == PLAN_NONE)
			continue;
		pt = plan_get_tensor(e->plan, t);
		if (e->be->write(e->b, engine_tensor_at(e, t, tokens), src[k],
		                 (size_t)plan_tensor_bytes(e->plan, t, tokens),
		                 err->msg, sizeof err->msg) != 0)
			return engine_fail(err, BCG_EXIT_RUNTIME, PLAN_NONE, "feeding '%s': %s",
			                   pt->name, err->msg);
	}
	return 0;
}

/* Slots and positions of request R's rows from its seq_len and table. */
static void batch_rows(const struct engine *e, const struct batch_arrays *a, uint32_t r)
{
	const struct engine_batch_geometry *g = &e->geo;
	int64_t n = a->qs[r + 1] - a->qs[r], cap = (int64_t)g->max_blocks * g->block_size;

	for (int64_t i = 0; i < n; i++) {
		int64_t p = (int64_t)a->seq[r] - n + i, t = a->qs[r] + i;
		a->pos[t] = (int32_t)(p < 0 ? 0 : p);
		a->slots[t] = p < 0 || p >= cap ? SERVE_SLOT_PAD :
			(int32_t)(a->table[(size_t)r * g->max_blocks + (size_t)(p / g->block_size)] *
			          (int64_t)g->block_size + p % g->block_size);
	}
}

int engine_batch_step(struct engine *e, int64_t tokens, uint64_t step, struct engine_error *err)
{
	const struct engine_batch_geometry *g = &e->geo;
	struct batch_arrays a;
	int64_t L, cap = (int64_t)g->max_blocks * g->block_size;
	uint32_t n, R = g->max_requests;

	if (!g->present || e->batch_set)
		return 0;
	batch_arrays(e, &a);
	L = g->seq_var != PLAN_NONE ? plan_var_value(engine_var(e, g->seq_var), step)
	                            : (int64_t)step + 1;
	/* min(T, R) requests, the tokens shared out evenly, the first ones
	 * taking one more; request i's length L + i, at least its tokens and
	 * at most MB * BS; block j of request i is (j * R + i) mod NB, so
	 * that requests interleave through the cache. */
	n = tokens < (int64_t)R ? (uint32_t)tokens : R;
	e->batch.max_seq_len = 0;
	e->batch.max_query_len = 0;
	a.qs[0] = 0;
	for (uint32_t r = 0; r < R; r++) {
		int64_t q = r < n ? tokens / n + (r < (uint32_t)(tokens % n) ? 1 : 0) : 0;
		int64_t s = r < n ? L + r : 0;
		if (r < n && s < q)
			s = q;
		if (s > cap)
			s = cap;
		a.seq[r] = (int32_t)s;
		a.qs[r + 1] = (int32_t)(a.qs[r] + q);
		for (uint32_t j = 0; j < g->max_blocks; j++)
			a.table[(size_t)r * g->max_blocks + j] =
				(int32_t)(((uint64_t)j * R + r) % g->num_blocks);
		if ((uint32_t)s > e->batch.max_seq_len)
			e->batch.max_seq_len = (uint32_t)s;
		if ((uint32_t)q > e->batch.max_query_len)
			e->batch.max_query_len = (uint32_t)q;
	}
	for (uint32_t r = 0; r < n; r++)
		batch_rows(e, &a, r);
	e->batch.tokens = (uint32_t)tokens;
	e->batch.requests = n;
	return batch_write(e, tokens, err);
}

/* engine_set_batch's checks of B against E's geometry. */
static int batch_check(const struct engine *e, const struct serve_batch *b,
                       uint32_t padded_tokens, uint32_t padded_requests,
                       struct engine_error *err)
{
	const struct engine_batch_geometry *g = &e->geo;
	uint32_t n = b->key.requests, T = b->key.tokens;
	int64_t cap = (int64_t)g->max_blocks * g->block_size;
	int64_t slots = (int64_t)g->num_blocks * g->block_size;

#define BAD(...) engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, __VA_ARGS__)
	if (padded_tokens < 1 || padded_tokens > e->eager_tokens || T > padded_tokens)
		return BAD("batch of %u tokens padded to %u: the padding must hold the batch and "
		           "be from 1 to %lld", T, padded_tokens, (long long)e->eager_tokens);
	if (padded_requests > g->max_requests || n > padded_requests)
		return BAD("batch of %u requests padded to %u: the padding must hold the batch and "
		           "be at most %u (the request dim)", n, padded_requests, g->max_requests);
	if (b->block_size != g->block_size)
		return BAD("the batch's blocks hold %u positions; the program's hold %u",
		           b->block_size, g->block_size);
	if (b->max_blocks > g->max_blocks)
		return BAD("the batch's block table is %u wide; the program's holds %u",
		           b->max_blocks, g->max_blocks);
	if (b->query_start[0] != 0 || b->query_start[n] != T)
		return BAD("query_start must run from 0 to the batch's %u tokens, not %u to %u",
		           T, b->query_start[0], b->query_start[n]);
	for (uint32_t r = 0; r < n; r++) {
		uint32_t q = b->query_start[r + 1] - b->query_start[r];
		if (b->query_start[r + 1] < b->query_start[r])
			return BAD("query_start must ascend: request %u starts at %u, after %u", r + 1,
			           b->query_start[r + 1], b->query_start[r]);
		if (b->seq_len[r] < q || b->seq_len[r] > b->max_blocks * (uint64_t)b->block_size ||
		    b->seq_len[r] > cap)
			return BAD("request %u: seq_len %u must be from its %u tokens to the %lld "
			           "positions its block table holds", r, b->seq_len[r], q,
			           (long long)((int64_t)b->max_blocks * b->block_size < cap ?
			                       (int64_t)b->max_blocks * b->block_size : cap));
		for (uint32_t j = 0; j * (uint64_t)b->block_size < b->seq_len[r]; j++)
			if (b->block_table[(size_t)r * b->max_blocks + j] >= g->num_blocks)
				return BAD("request %u: block %u of its table is %u, outside the %u "
				           "blocks of the cache", r, j,
				           b->block_table[(size_t)r * b->max_blocks + j], g->num_blocks);
	}
	for (uint32_t t = 0; t < T; t++)
		if (b->slot[t] != SERVE_SLOT_PAD && (b->slot[t] < 0 || b->slot[t] >= slots))
			return BAD("token %u: slot %d is outside the %lld slots of the cache", t,
			           b->slot[t], (long long)slots);
#undef BAD
	return 0;
}

int engine_set_batch(struct engine *e, const struct serve_batch *b, uint32_t padded_tokens,
                     uint32_t padded_requests, struct engine_error *err)
{
	const struct engine_batch_geometry *g = &e->geo;
	struct batch_arrays a;
	uint32_t n, T;

	if (!g->present)
		return engine_fail(err, BCG_EXIT_USAGE, PLAN_NONE, "the program has no batch "
		                   "feeds (a seq_lens feed at least): it cannot take a batch");
	if (b == NULL) {
		e->batch_set = 0;
		return 0;
	}
	if (batch_check(e, b, padded_tokens, padded_requests, err) != 0)
		return -1;
	n = b->key.requests;
	T = b->key.tokens;
	batch_arrays(e, &a);
	memset(&e->batch, 0, sizeof e->batch);
	for (uint32_t r = 0; r < g->max_requests; r++) {
		int32_t *row = a.table + (size_t)r * g->max_blocks;
		memset(row, 0, g->max_blocks * sizeof *row);
		if (r < n) {
			uint32_t q = b->query_start[r + 1] - b->query_start[r];
			a.seq[r] = (int32_t)b->seq_len[r];
			a.qs[r] = (int32_t)b->query_start[r];
			for (uint32_t j = 0; j < b->max_blocks; j++)
				row[j] = (int32_t)b->block_table[(size_t)r * b->max_blocks + j];
			if (b->seq_len[r] > e->batch.max_seq_len)
				e->batch.max_seq_len = b->seq_len[r];
			if (q > e->batch.max_query_len)
				e->batch.max_query_len = q;
		} else {
			a.seq[r] = 0;
			a.qs[r] = (int32_t)T;
		}
	}
	a.qs[g->max_requests] = (int32_t)T;
	for (uint32_t t = 0; t < padded_tokens; t++) {
		a.slots[t] = t < T ? b->slot[t] : SERVE_SLOT_PAD;
		a.pos[t] = t < T ? b->position[t] : 0;
	}
	e->batch.tokens = T;
	e->batch.requests = n;
	if (batch_write(e, padded_tokens, err) != 0)
		return -1;
	e->batch_set = 1;
	return 0;
}
