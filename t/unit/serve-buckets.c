/*
 * serve-buckets.c - batches across capture sizes (issue 9's bucket test):
 * samples/llama-serve-tiny.yaml captured at its largest size first (8
 * tokens, breakable) and then a smaller one (2, full), both in one arena;
 * a mixed batch run at 8, then a decode batch at 2, then a one-token batch
 * padded to 2.
 *
 * What it shows, on every backend this build has and that opens (the
 * host always; cuda where a GPU is):
 *  - the 2-token graph, captured after the 8-token one over the same
 *    arena, gives what eager steps give from the same state: nothing of the
 *    larger bucket's layout leaks into the smaller one (every tensor lives
 *    at one arena offset for all variants, so there is nothing to re-carve);
 *  - a padded row changes nothing: the real row's logits and both caches
 *    are those of the unpadded one-token step, and the padded row's logits
 *    are finite;
 *  - cache blocks no request owns hold NaN throughout, and no output is
 *    NaN: no kernel reads them.
 *  - with a token budget above the largest capture size: a program whose
 *    arena is planned for 2 tokens runs batch A (8 tokens) eagerly in the
 *    engine's room above the arena (engine_open_above), then B and C in
 *    its 2-token graph, and gives what the all-eager run in an arena
 *    planned for 8 gives: the tensors that grow lie apart from the arena,
 *    the cache they write is the arena's.
 *  - every call of a variant marks exactly the inputs that are weights
 *    (op_call.const_in: a CUDA kernel may load those before its PDL wait,
 *    so a mark on anything a step writes would be a race).
 * The host backend must match bit for bit (one kernel per op, the same
 * arithmetic); on cuda the graph-safe and eager forms of paged attention
 * split the sums differently, and the padded step multiplies two rows
 * where the unpadded one multiplies one, so they are held to f32 bounds.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "engine/engine.h"
#include "engine/exec.h"
#include "engine/memplan.h"
#include "engine/schedule.h"
#include "script/script.h"
#include "serve/batch.h"
#include "tap.h"

enum { NB = 32, BS = 4, MB = 8, R = 4, W = 32 };

/* Blocks the batches own; every other block of every cache holds NaN. */
static const uint32_t owned_blocks[] = { 10, 3, 7, 20 };
#define FREE_BLOCK 31

struct bbatch {
	struct serve_batch b;
	uint32_t qs[R + 1], seq[R], table[R * MB];
	uint64_t id[R];
	int32_t pos[8], slot[8];
};

/* A batch of N requests: request i has Q[i] new tokens, SEQ[i] positions
 * after them, its blocks BLOCKS[i][0..]; the rest of its table row points
 * at a NaN block. */
static void batch_make(struct bbatch *bb, uint32_t n, const uint32_t *q, const uint32_t *seq,
                       const uint32_t blocks[][2], int uniform)
{
	uint32_t t = 0;

	memset(bb, 0, sizeof *bb);
	bb->b.max_blocks = MB;
	bb->b.block_size = BS;
	bb->b.query_start = bb->qs;
	bb->b.seq_len = bb->seq;
	bb->b.block_table = bb->table;
	bb->b.request_id = bb->id;
	bb->b.position = bb->pos;
	bb->b.slot = bb->slot;
	for (uint32_t r = 0; r < n; r++) {
		uint32_t nb = (seq[r] + BS - 1) / BS;
		bb->qs[r] = t;
		bb->seq[r] = seq[r];
		for (uint32_t j = 0; j < MB; j++)
			bb->table[r * MB + j] = j < nb ? blocks[r][j] : FREE_BLOCK;
		for (uint32_t i = 0; i < q[r]; i++, t++) {
			uint32_t p = seq[r] - q[r] + i;
			bb->pos[t] = (int32_t)p;
			bb->slot[t] = (int32_t)(bb->table[r * MB + p / BS] * BS + p % BS);
		}
	}
	bb->qs[n] = t;
	bb->b.key.tokens = t;
	bb->b.key.requests = n;
	bb->b.key.uniform_decode = uniform != 0;
}

/* Batch A, 8 tokens: prompts of 5 and 2 tokens and a first decode.
 * Batch B, 2 tokens: the first and third requests decode.
 * Batch C, 1 token: the second request decodes. */
static void batches(struct bbatch *a, struct bbatch *b, struct bbatch *c)
{
	static const uint32_t blocks_a[3][2] = { { 10, 3 }, { 7, 0 }, { 20, 0 } };
	static const uint32_t blocks_b[2][2] = { { 10, 3 }, { 20, 0 } };
	static const uint32_t blocks_c[1][2] = { { 7, 0 } };

	batch_make(a, 3, (const uint32_t[]){ 5, 2, 1 }, (const uint32_t[]){ 5, 2, 1 }, blocks_a, 0);
	batch_make(b, 2, (const uint32_t[]){ 1, 1 }, (const uint32_t[]){ 6, 2 }, blocks_b, 1);
	batch_make(c, 1, (const uint32_t[]){ 1 }, (const uint32_t[]){ 3 }, blocks_c, 1);
}

static int is_owned(uint32_t block)
{
	for (size_t i = 0; i < sizeof owned_blocks / sizeof owned_blocks[0]; i++)
		if (owned_blocks[i] == block)
			return 1;
	return 0;
}

/* NaN into every block no batch owns, in every paged cache. */
static int plant_nan(struct engine *e, struct engine_error *err)
{
	float nan_block[BS * W];

	for (int i = 0; i < BS * W; i++)
		nan_block[i] = NAN;
	for (uint32_t t = 0; t < plan_count_tensors(e->plan); t++) {
		const struct plan_tensor *pt = plan_get_tensor(e->plan, t);
		if (pt->rank != 3 || pt->role != PLAN_ROLE_STATE)
			continue;
		for (uint32_t blk = 0; blk < NB; blk++) {
			if (is_owned(blk))
				continue;
			if (e->be->write(e->b, backend_at(e->base, pt->offset + (uint64_t)blk * sizeof nan_block),
			                 nan_block, sizeof nan_block, err->msg, sizeof err->msg) != 0)
				return -1;
		}
	}
	return 0;
}

struct outputs {
	float logits_b[2 * 96];      /* after batch B (2 tokens) */
	float logits_c[2 * 96];      /* after batch C: row 0 real, row 1 padding */
	float kcache[NB * BS * W];   /* k_cache[0] after batch C */
	float vcache[NB * BS * W];   /* v_cache[1] after batch C */
};

static int read_outputs(struct engine *e, int64_t tokens, float *logits, struct engine_error *err)
{
	return engine_read_tensor(e, plan_find_tensor(e->plan, "logits"), tokens, logits, err);
}

static int read_caches(struct engine *e, struct outputs *o, struct engine_error *err)
{
	return engine_read_tensor(e, plan_find_tensor(e->plan, "k_cache[0]"), 1, o->kcache, err) ||
	       engine_read_tensor(e, plan_find_tensor(e->plan, "v_cache[1]"), 1, o->vcache, err);
}

/* After batch A: batch B, then C padded to 2, in the 2-token graph X2;
 * the logits after each, the caches after C. */
static int run_b_c(struct engine *e, struct exec_variant *x2, const struct bbatch *b,
                   const struct bbatch *c, struct outputs *o, struct engine_error *err)
{
	if (engine_set_batch(e, &b->b, 2, R, err) || exec_step(e, x2, 1, NULL, err) ||
	    read_outputs(e, 2, o->logits_b, err) ||
	    engine_set_batch(e, &c->b, 2, R, err) || exec_step(e, x2, 2, NULL, err) ||
	    read_outputs(e, 2, o->logits_c, err) || read_caches(e, o, err))
		return -1;
	return 0;
}

/* The graphs: 8 captured first, then 2, then the three batches. */
static int run_graphs(struct engine *e, struct outputs *o, struct engine_error *err)
{
	struct schedule brk = { 0 }, full = { 0 };
	struct exec_variant x8, x2;
	struct bbatch a, b, c;
	uint32_t bad;
	int rc = -1, have8 = 0, have2 = 0;

	memset(&x8, 0, sizeof x8);
	memset(&x2, 0, sizeof x2);
	batches(&a, &b, &c);
	if (schedule_build(e->plan, PLAN_MODE_BREAKABLE, &brk, &bad, err->msg, sizeof err->msg) ||
	    schedule_build(e->plan, PLAN_MODE_FULL, &full, &bad, err->msg, sizeof err->msg))
		goto out;
	if (exec_capture(e, 8, PLAN_MODE_BREAKABLE, brk.items, brk.nitems, 0, &x8, NULL, err))
		goto out;
	have8 = 1;
	if (exec_capture(e, 2, PLAN_MODE_FULL, full.items, full.nitems, 0, &x2, NULL, err))
		goto out;
	have2 = 1;
	if (engine_reset(e, err) || plant_nan(e, err) ||
	    engine_set_batch(e, &a.b, 8, R, err) || exec_step(e, &x8, 0, NULL, err) ||
	    run_b_c(e, &x2, &b, &c, o, err))
		goto out;
	rc = 0;
out:
	if (have8)
		exec_release(e, &x8);
	if (have2)
		exec_release(e, &x2);
	schedule_release(&brk);
	schedule_release(&full);
	return rc;
}

static int eager_step(struct engine *e, const struct serve_batch *b, int64_t tokens,
                      uint64_t step, struct engine_error *err)
{
	struct engine_variant v;
	int rc;

	if (engine_variant_init(e, tokens, PLAN_MODE_EAGER, &v, err) != 0)
		return -1;
	rc = engine_set_batch(e, b, (uint32_t)tokens, R, err) || engine_eager_step(e, &v, step, err);
	engine_variant_release(&v);
	return rc ? -1 : 0;
}

/* The same steps eagerly, batch C unpadded (1 token). */
static int run_eager(struct engine *e, struct outputs *o, struct engine_error *err)
{
	struct bbatch a, b, c;

	batches(&a, &b, &c);
	if (engine_reset(e, err) || plant_nan(e, err) ||
	    eager_step(e, &a.b, 8, 0, err) || eager_step(e, &b.b, 2, 1, err) ||
	    read_outputs(e, 2, o->logits_b, err) || eager_step(e, &c.b, 1, 2, err) ||
	    read_outputs(e, 1, o->logits_c, err) || read_caches(e, o, err))
		return -1;
	return 0;
}

/* The steps of run_graphs with the arena planned for 2 tokens: batch A
 * runs eagerly above it, B and C in the 2-token graph. */
static int run_above(struct engine *e, struct outputs *o, struct engine_error *err)
{
	struct schedule full = { 0 };
	struct exec_variant x2;
	struct bbatch a, b, c;
	uint32_t bad;
	int rc = -1, have2 = 0;

	memset(&x2, 0, sizeof x2);
	batches(&a, &b, &c);
	if (schedule_build(e->plan, PLAN_MODE_FULL, &full, &bad, err->msg, sizeof err->msg) ||
	    exec_capture(e, 2, PLAN_MODE_FULL, full.items, full.nitems, 0, &x2, NULL, err))
		goto out;
	have2 = 1;
	if (engine_reset(e, err) || plant_nan(e, err) || eager_step(e, &a.b, 8, 0, err) ||
	    run_b_c(e, &x2, &b, &c, o, err))
		goto out;
	rc = 0;
out:
	if (have2)
		exec_release(e, &x2);
	schedule_release(&full);
	return rc;
}

/* Count of elements of A and B further apart than TOL relative (0: bits);
 * NaN in either counts. */
static long differ(const float *a, const float *b, size_t n, double tol)
{
	long bad = 0;

	for (size_t i = 0; i < n; i++) {
		double m = fabs(b[i]) > 1 ? fabs(b[i]) : 1;
		if (memcmp(&a[i], &b[i], sizeof a[i]) == 0)
			continue;   /* the same bits: the planted NaN of a free block too */
		if (tol == 0 || !(fabs((double)a[i] - b[i]) <= tol * m))
			bad++;
	}
	return bad;
}

/* NaN exactly in the blocks no batch owns. */
static long cache_nan_misplaced(const float *cache)
{
	long bad = 0;

	for (uint32_t blk = 0; blk < NB; blk++)
		for (int i = 0; i < BS * W; i++)
			if ((isnan(cache[blk * BS * W + i]) != 0) != !is_owned(blk))
				bad++;
	return bad;
}

/* run_above on SMALL (placed for 2 tokens) against the all-eager run X
 * in an arena planned for 8. */
static void run_backend_above(const plan_t *small, const char *backend,
                              const struct outputs *x, double tol)
{
	struct engine *e = NULL;
	struct engine_error err = { 0 };
	struct outputs *g = calloc(1, sizeof *g);
	uint32_t logits = plan_find_tensor(small, "logits"), kc = plan_find_tensor(small, "k_cache[0]");

	if (g == NULL) {
		printf("Bail out! out of memory\n");
		exit(99);
	}
	if (engine_open_above(small, backend, 2, 8, &e, &err) != 0 || run_above(e, g, &err) != 0) {
		ok(0, "%s: eager steps above the arena's 2 tokens run (%s)", backend, err.msg);
		tap_skip(2, "no run");
		goto out;
	}
	ok(engine_tensor_at(e, logits, 8) != engine_tensor_at(e, logits, 2) &&
	   engine_tensor_at(e, kc, 8) == engine_tensor_at(e, kc, 2),
	   "%s: above the arena, the logits lie in the room after it, the cache in place", backend);
	ok(differ(g->logits_b, x->logits_b, 2 * 96, tol) == 0 &&
	   differ(g->logits_c, x->logits_c, 96, tol) == 0,
	   "%s: an 8-token step above a 2-token arena, then its graph, give the eager logits",
	   backend);
	ok(differ(g->kcache, x->kcache, NB * BS * W, tol) == 0 &&
	   differ(g->vcache, x->vcache, NB * BS * W, tol) == 0,
	   "%s: the step above the arena writes the arena's cache as the eager run does", backend);
out:
	engine_close(e);
	free(g);
}

static void run_backend(const plan_t *program, const plan_t *small, const char *backend)
{
	struct engine *e = NULL;
	struct engine_error err = { 0 };
	struct outputs *g = calloc(1, sizeof *g), *x = calloc(1, sizeof *x);
	double tol = strcmp(backend, "host") == 0 ? 0 : 1e-4;
	long nonfinite = 0;

	if (g == NULL || x == NULL) {
		printf("Bail out! out of memory\n");
		exit(99);
	}
	if (engine_open(program, backend, 8, &e, &err) != 0) {
		if (strcmp(backend, "host") == 0)
			ok(0, "host: the engine opens (%s)", err.msg);
		else
			tap_skip(8, "no usable GPU");
		goto out;
	}
	if (run_graphs(e, g, &err) != 0 || run_eager(e, x, &err) != 0) {
		ok(0, "%s: the steps run (%s)", backend, err.msg);
		goto out;
	}
	run_backend_above(small, backend, x, tol);
	ok(differ(g->logits_b, x->logits_b, 2 * 96, tol) == 0,
	   "%s: the 2-token graph captured after the 8-token one gives the eager logits", backend);
	ok(differ(g->logits_c, x->logits_c, 96, tol) == 0,
	   "%s: a row padded to 2 gives the logits of the 1-token step", backend);
	ok(differ(g->kcache, x->kcache, NB * BS * W, tol) == 0 &&
	   differ(g->vcache, x->vcache, NB * BS * W, tol) == 0,
	   "%s: the padded row writes no cache block", backend);
	for (int i = 0; i < 2 * 96; i++)
		if (!isfinite(g->logits_b[i]) || !isfinite(g->logits_c[i]))
			nonfinite++;
	ok(nonfinite == 0, "%s: every logit is finite, the padded row's too", backend);
	ok(cache_nan_misplaced(g->kcache) == 0 && cache_nan_misplaced(g->vcache) == 0,
	   "%s: the free blocks still hold their NaN, the owned ones none", backend);
out:
	engine_close(e);
	free(g);
	free(x);
}

/* Each refusal of engine_set_batch: its sentence and exit status 2. */
static void set_batch_bad(struct engine *e, const struct bbatch *bb, uint32_t pt, uint32_t pr,
                          const char *want, const char *what)
{
	struct engine_error err = { 0 };
	int rc = engine_set_batch(e, &bb->b, pt, pr, &err);

	ok(rc == -1 && err.exit == 2 && strcmp(err.msg, want) == 0, "engine_set_batch refuses %s",
	   what);
	if (rc != -1 || strcmp(err.msg, want) != 0)
		diag("got %d, exit %d: %s", rc, err.exit, err.msg);
}

static void test_set_batch_errors(const plan_t *program, const plan_t *plain)
{
	struct engine *e = NULL, *p = NULL;
	struct engine_error err = { 0 };
	struct bbatch a, b, c, x;

	if (engine_open(program, "host", 8, &e, &err) != 0 ||
	    engine_open(plain, "host", 4, &p, &err) != 0) {
		ok(0, "the engines open (%s)", err.msg);
		goto out;
	}
	batches(&a, &b, &c);
	set_batch_bad(p, &a, 8, R, "the program has no batch feeds (a seq_lens feed at least): "
	              "it cannot take a batch", "a program without batch feeds");
	set_batch_bad(e, &a, 4, R, "batch of 8 tokens padded to 4: the padding must hold the "
	              "batch and be from 1 to 8", "a padding below the batch");
	set_batch_bad(e, &a, 9, R, "batch of 8 tokens padded to 9: the padding must hold the "
	              "batch and be from 1 to 8", "a padding past the arena");
	set_batch_bad(e, &a, 8, 2, "batch of 3 requests padded to 2: the padding must hold the "
	              "batch and be at most 4 (the request dim)", "too few padded requests");
	set_batch_bad(e, &a, 8, 5, "batch of 3 requests padded to 5: the padding must hold the "
	              "batch and be at most 4 (the request dim)", "more requests than R");
	x = a;
	x.b.block_size = 8;
	set_batch_bad(e, &x, 8, R, "the batch's blocks hold 8 positions; the program's hold 4",
	              "another block size");
	x = a;
	x.b.max_blocks = 9;
	set_batch_bad(e, &x, 8, R, "the batch's block table is 9 wide; the program's holds 8",
	              "a wider block table");
	batches(&x, &b, &c);
	x.qs[3] = 7;
	set_batch_bad(e, &x, 8, R, "query_start must run from 0 to the batch's 8 tokens, not 0 "
	              "to 7", "query_start not ending at the tokens");
	batches(&x, &b, &c);
	x.qs[1] = 3;
	x.qs[2] = 2;
	set_batch_bad(e, &x, 8, R, "query_start must ascend: request 2 starts at 2, after 3",
	              "query_start going back");
	batches(&x, &b, &c);
	x.seq[0] = 4;
	set_batch_bad(e, &x, 8, R, "request 0: seq_len 4 must be from its 5 tokens to the 32 "
	              "positions its block table holds", "a seq_len below its tokens");
	batches(&x, &b, &c);
	x.seq[1] = 33;
	set_batch_bad(e, &x, 8, R, "request 1: seq_len 33 must be from its 2 tokens to the 32 "
	              "positions its block table holds", "a seq_len past the table");
	batches(&x, &b, &c);
	x.table[MB + 0] = 32;
	set_batch_bad(e, &x, 8, R, "request 1: block 0 of its table is 32, outside the 32 blocks "
	              "of the cache", "a block id outside the cache");
	batches(&x, &b, &c);
	x.slot[6] = 128;
	set_batch_bad(e, &x, 8, R, "token 6: slot 128 is outside the 128 slots of the cache",
	              "a slot outside the cache");
	ok(engine_set_batch(e, &a.b, 8, R, &err) == 0 && e->batch.tokens == 8 &&
	   e->batch.requests == 3 && e->batch.max_seq_len == 5 && e->batch.max_query_len == 5,
	   "engine_set_batch takes a good batch and tells the launches its shape");
	ok(engine_set_batch(e, NULL, 0, 0, &err) == 0 && e->batch_set == 0,
	   "engine_set_batch(NULL) returns to the default batch");
out:
	engine_close(e);
	engine_close(p);
}

/* The calls of a variant mark their weight inputs as const
 * (op_call.const_in) and nothing else; and as ready (op_call.ready_in)
 * their weights and the inputs the host feeds that no op writes, and
 * nothing else: the serving batch's lengths, query starts and block
 * tables among them. */
static void test_input_marks(const plan_t *program)
{
	struct engine *e = NULL;
	struct engine_error err = { 0 };
	struct engine_variant v;
	uint32_t wrong = 0, marked = 0, weights = 0;
	uint32_t rwrong = 0, rmarked = 0, want = 0, fed = 0, meta = 0;
	unsigned char *written = calloc(plan_count_tensors(program) + 1, 1);

	if (written == NULL || engine_open(program, "host", 8, &e, &err) != 0 ||
	    engine_variant_init(e, 2, PLAN_MODE_FULL, &v, &err) != 0) {
		ok(0, "the engine opens (%s)", err.msg);
		engine_close(e);
		free(written);
		return;
	}
	for (uint32_t i = 0; i < plan_count_ops(program); i++) {
		const struct plan_op *o = plan_get_op(program, i);
		for (uint32_t k = 0; k < o->nout; k++)
			written[o->out[k]] = 1;
	}
	for (uint32_t i = 0; i < e->nops; i++) {
		const struct plan_op *o = plan_get_op(program, i);
		const struct op_call *c = &v.calls[i];
		for (uint32_t k = 0; k < o->nin; k++) {
			const int role = plan_get_tensor(program, o->in[k])->role;
			const int w = role == PLAN_ROLE_WEIGHT;
			const int m = (c->const_in >> k) & 1u;
			const int rw = w || (role == PLAN_ROLE_INPUT && !written[o->in[k]]);
			const int rm = (c->ready_in >> k) & 1u;
			weights += (uint32_t)w;
			marked += (uint32_t)m;
			wrong += (uint32_t)(w != m);
			want += (uint32_t)rw;
			rmarked += (uint32_t)rm;
			rwrong += (uint32_t)(rw != rm);
			fed += (uint32_t)(rm && role == PLAN_ROLE_INPUT);
			if (strcmp(c->kind->name, "paged_attention") == 0 &&
			    (k == PATTN_TABLE || k == PATTN_SEQ_LENS || k == PATTN_QUERY_START))
				meta += (uint32_t)rm;
		}
		wrong += (uint32_t)(c->const_in >> o->nin != 0);
		rwrong += (uint32_t)(c->ready_in >> o->nin != 0);
	}
	ok(wrong == 0 && weights > 0 && marked == weights,
	   "const_in marks the %u weight inputs of %u ops and nothing else (%u marks, %u wrong)",
	   weights, e->nops, marked, wrong);
	ok(rwrong == 0 && rmarked == want && fed > 0 && meta > 0 && meta % 3 == 0,
	   "ready_in marks the %u weights and unwritten feeds of %u ops and nothing else (%u "
	   "marks, %u of them feeds, %u paged attention metadata, %u wrong)", want, e->nops,
	   rmarked, fed, meta, rwrong);
	engine_variant_release(&v);
	engine_close(e);
	free(written);
}

/* The default batch (op-script.md): at 3 tokens with seq_len 8 + step,
 * three decode requests of lengths 9, 10, 11 at step 1, blocks j * R + i. */
static void test_default_batch(const plan_t *program)
{
	struct engine *e = NULL;
	struct engine_error err = { 0 };
	struct engine_variant v;
	int32_t seq[R], qs[R + 1], slots[8], pos[8];
	static const int32_t want_seq[R] = { 9, 10, 11, 0 }, want_qs[R + 1] = { 0, 1, 2, 3, 3 };
	/* position seq - 1 of request i: block (seq-1)/4 = 2, id 2 * 4 + i */
	static const int32_t want_pos[3] = { 8, 9, 10 };
	static const int32_t want_slots[3] = { 8 * 4 + 0, 9 * 4 + 1, 10 * 4 + 2 };

	if (engine_open(program, "host", 8, &e, &err) != 0 ||
	    engine_variant_init(e, 3, PLAN_MODE_EAGER, &v, &err) != 0) {
		ok(0, "the engine opens (%s)", err.msg);
		engine_close(e);
		return;
	}
	ok(engine_step_begin(e, &v, 1, &err) == 0 &&
	   engine_read_tensor(e, plan_find_tensor(program, "seq_lens"), 3, seq, &err) == 0 &&
	   engine_read_tensor(e, plan_find_tensor(program, "query_start"), 3, qs, &err) == 0 &&
	   engine_read_tensor(e, plan_find_tensor(program, "slots"), 3, slots, &err) == 0 &&
	   engine_read_tensor(e, plan_find_tensor(program, "pos"), 3, pos, &err) == 0,
	   "the default batch is written (%s)", err.msg);
	ok(memcmp(seq, want_seq, sizeof seq) == 0 && memcmp(qs, want_qs, sizeof qs) == 0,
	   "default batch: min(T, R) requests of one token, lengths seq_len + i");
	ok(memcmp(pos, want_pos, sizeof want_pos) == 0 &&
	   memcmp(slots, want_slots, sizeof want_slots) == 0,
	   "default batch: each token at the end of its request, block j of request i is j R + i");
	ok(e->batch.tokens == 3 && e->batch.requests == 3 && e->batch.max_seq_len == 11,
	   "default batch: the launches see its shape");
	engine_variant_release(&v);
	engine_close(e);
}

int main(void)
{
	const char *src = getenv("BCG_SRC_DIR");
	char path[4096];
	struct script *s = NULL, *plain = NULL, *small = NULL;
	int64_t small_tokens[] = { 1, 2 };
	struct script_error serr;
	int64_t tokens[] = { 1, 2, 4, 8 };
	struct memplan mp;
	char msg[256];

	snprintf(path, sizeof path, "%s/samples/llama-serve-tiny.yaml", src ? src : ".");
	if (script_load(path, &s, &serr) != 0) {
		printf("Bail out! %s:%u:%u: %s\n", path, serr.line, serr.col, serr.message);
		return 99;
	}
	if (memplan_place(s->program, tokens, 4, &mp, msg, sizeof msg) != 0) {
		printf("Bail out! %s\n", msg);
		return 99;
	}
	memplan_release(&mp);
	if (script_load(path, &small, &serr) != 0 ||
	    memplan_place(small->program, small_tokens, 2, &mp, msg, sizeof msg) != 0) {
		printf("Bail out! %s: %s\n", path, msg);
		return 99;
	}
	memplan_release(&mp);
	snprintf(path, sizeof path, "%s/samples/tiny-mlp.yaml", src ? src : ".");
	if (script_load(path, &plain, &serr) != 0 ||
	    memplan_place(plain->program, &plain->variants[plain->nvariants - 1].tokens, 1, &mp,
	                  msg, sizeof msg) != 0) {
		printf("Bail out! %s: %s\n", path, serr.message);
		return 99;
	}
	memplan_release(&mp);
	test_set_batch_errors(s->program, plain->program);
	test_default_batch(s->program);
	test_input_marks(s->program);
	run_backend(s->program, small->program, "host");
	if (backend_find("cuda") != NULL)
		run_backend(s->program, small->program, "cuda");
	else
		tap_skip(8, "built without CUDA");
	script_free(s);
	script_free(small);
	script_free(plain);
	return tap_done();
}
