/*
 * shard.c - the sharding pass (engine/shard.c) on programs built by hand:
 * shares of split tensors, heads per rank (kv heads replicated past their
 * count), the collectives it inserts and where, checkpoint slices, the
 * errors, and world 1 as a copy. Every expectation is worked out here from
 * the split rule of plan.h, not read from the pass.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/shard.h"
#include "plan.h"
#include "tap.h"

enum { T, H, F, F2, V, S };   /* dims, in order */

struct prog {
	plan_t  *p;
};

static uint32_t dim(plan_t *p, const char *name, int64_t v, uint32_t flags)
{
	struct plan_dim d = { .name = name, .expr = "", .value = v, .flags = flags };
	uint32_t i;
	plan_add_dim(p, &d, &i, NULL);
	return i;
}

/* A tensor of rank 2 over axes A0, A1 (dims, or -N for a literal N). */
static uint32_t tensor(plan_t *p, const char *name, int role, int64_t a0, int64_t a1,
                       const struct plan_split *split)
{
	struct plan_tensor t = { .name = name, .dtype = PLAN_DTYPE_F32, .role = role, .rank = 2 };
	int64_t ax[2] = { a0, a1 };
	uint32_t i;

	for (int k = 0; k < 2; k++) {
		if (ax[k] >= 0) {
			t.shape[k].dim = (uint32_t)ax[k];
			t.shape[k].size = plan_get_dim(p, (uint32_t)ax[k])->value;
		} else {
			t.shape[k].dim = PLAN_NONE;
			t.shape[k].size = -ax[k];
		}
	}
	t.feed.var = PLAN_NONE;
	t.feed.from = PLAN_NONE;
	if (role == PLAN_ROLE_WEIGHT)
		t.init.kind = PLAN_INIT_RANDOM;
	if (role == PLAN_ROLE_INPUT) {
		t.feed.kind = PLAN_FEED_RANDOM;
		t.feed.scale = 1;
	}
	if (split != NULL)
		t.split = *split;
	if (plan_add_tensor(p, &t, &i, NULL) != 0)
		abort();
	return i;
}

static struct plan_split split1(uint32_t axis, int64_t full, int64_t unit)
{
	struct plan_split s = { .nblocks = 1, .axis = axis, .unit = unit };
	s.block[0] = (struct plan_split_block){ full, 0, full };
	return s;
}

static void op(plan_t *p, const char *kind, const char *name, uint32_t line,
               const uint32_t *in, uint32_t nin, const uint32_t *out, uint32_t nout,
               const struct plan_attr *attr, uint32_t nattr)
{
	struct plan_op o = { .kind = kind, .name = name, .line = line, .col = 5, .nin = nin,
	                     .nout = nout, .nattr = nattr, .in = in, .out = out, .attr = attr };
	if (plan_add_op(p, &o, NULL, NULL) != 0)
		abort();
}

static const struct plan_attr trans_b[] = { { "trans_b", PLAN_ATTR_BOOL, 1, 0, "" } };

/* The MLP: x [T, 8]; w1 [32, 8] gate | up split by rows; act [T, 16] split;
 * w2 [8, 16] split by columns; y = x + act w2^T. Weight sources: gate and
 * up rows of w1, and all of w2. */
static plan_t *mlp(void)
{
	plan_t *p = plan_new();
	struct plan_split s1 = { .nblocks = 2, .axis = 0, .unit = 1 };
	struct plan_split sa = split1(1, 16, 1), s2 = split1(1, 16, 1);
	uint32_t x, w1, act, w2, y;

	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 8, 0);
	dim(p, "F", 16, 0);
	dim(p, "F2", 32, 0);
	s1.block[0] = (struct plan_split_block){ 16, 0, 16 };
	s1.block[1] = (struct plan_split_block){ 16, 0, 16 };
	x = tensor(p, "x", PLAN_ROLE_INPUT, T, H, NULL);
	w1 = tensor(p, "w1", PLAN_ROLE_WEIGHT, F2, H, &s1);
	act = tensor(p, "act", PLAN_ROLE_ACTIVATION, T, F, &sa);
	w2 = tensor(p, "w2", PLAN_ROLE_WEIGHT, H, F, &s2);
	y = tensor(p, "y", PLAN_ROLE_OUTPUT, T, H, NULL);
	op(p, "matmul_silu_mul", "up", 10, (uint32_t[]){ x, w1 }, 2, &act, 1, trans_b, 1);
	op(p, "matmul_add", "down", 11, (uint32_t[]){ x, act, w2 }, 3, &y, 1, trans_b, 1);
	/* gate rows 0..15 and up rows 16..31 of w1 (f32: 16 * 8 * 4 bytes each) */
	struct plan_weight_source g = { .tensor = w1, .offset = 0, .file = "m.st", .name = "gate",
	                                .dtype = PLAN_DTYPE_F32, .bytes = 512 };
	struct plan_weight_source u = g, d = g;
	u.offset = 512;
	u.name = "up";
	d.tensor = w2;
	d.name = "down";
	plan_add_weight_source(p, &g, NULL, NULL);
	plan_add_weight_source(p, &u, NULL, NULL);
	plan_add_weight_source(p, &d, NULL, NULL);
	return p;
}

static const struct plan_op *find_op(const plan_t *p, const char *name)
{
	for (uint32_t i = 0; i < plan_count_ops(p); i++)
		if (strcmp(plan_get_op(p, i)->name, name) == 0)
			return plan_get_op(p, i);
	return NULL;
}

static int64_t attr(const struct plan_op *o, const char *key)
{
	for (uint32_t i = 0; i < o->nattr; i++)
		if (strcmp(o->attr[i].key, key) == 0)
			return o->attr[i].i;
	return -1;
}

static void test_mlp(void)
{
	plan_t *src = mlp(), *r1 = NULL, *one = NULL;
	struct shard_error err;
	const int64_t tokens[] = { 1, 4 };
	const struct plan_tensor *t;
	const struct plan_op *o;

	is_int(shard_plan(src, 2, 1, tokens, 2, &r1, &err), 0, "mlp: rank 1 of 2 (%s)", err.msg);
	if (r1 == NULL) {
		plan_free(src);
		return;
	}
	is_int(plan_get_dist(r1)->world, 2, "the rank program says world 2");
	is_int(plan_get_dist(r1)->rank, 1, "and rank 1");
	t = plan_get_tensor(r1, 1);
	is_int(t->shape[0].size, 16, "w1: 8 gate and 8 up rows of 32");
	ok(t->shape[0].dim == PLAN_NONE, "w1: its split axis is a literal");
	ok(t->split.block[0].start == 8 && t->split.block[0].len == 8 &&
	   t->split.block[1].start == 8 && t->split.block[1].len == 8 &&
	   t->split.block[1].full == 16, "w1: rows 8..15 of each block");
	t = plan_get_tensor(r1, 2);
	ok(t->shape[0].dim == 0 && t->shape[1].size == 8, "act: [T, 8]");
	t = plan_get_tensor(r1, 3);
	ok(t->shape[0].size == 8 && t->shape[1].size == 8 && t->split.block[0].start == 8,
	   "w2: columns 8..15");
	/* matmul_add split along K: matmul -> down.partial, all_reduce, add */
	is_int(plan_count_ops(r1), 4, "mlp: 4 ops (up, down's matmul, all_reduce, add)");
	o = plan_get_op(r1, 1);
	ok(strcmp(o->kind, "matmul") == 0 && o->nin == 2 && o->in[0] == 2 && o->in[1] == 3 &&
	   attr(o, "trans_b") == 1, "down: matmul(act, w2) with trans_b");
	t = plan_get_tensor(r1, o->out[0]);
	ok(strcmp(t->name, "down.partial") == 0 && o->out[0] == 5 && t->role == PLAN_ROLE_ACTIVATION &&
	   t->shape[0].dim == 0 && t->shape[1].size == 8, "into down.partial [T, 8], tensor 5");
	o = plan_get_op(r1, 2);
	ok(strcmp(o->kind, "all_reduce") == 0 && strcmp(o->name, "down.all_reduce") == 0 &&
	   o->in[0] == 5 && o->out[0] == 5 && o->line == 11 && o->col == 5,
	   "down.all_reduce(down.partial) in place, at down's position");
	o = plan_get_op(r1, 3);
	ok(strcmp(o->kind, "add") == 0 && o->in[0] == 0 && o->in[1] == 5 && o->out[0] == 4,
	   "add(x, down.partial) -> y");
	/* weight slices: w1's gate and up, rows 8..15 each; w2 columns 8..15 */
	is_int(plan_count_weight_sources(r1), 3, "three weight sources");
	const struct plan_weight_source *w = plan_get_weight_source(r1, 0);
	ok(w->offset == 0 && w->slice_outer == 1 && w->slice_full == 16 && w->slice_inner == 8 &&
	   w->slice_start == 8 && w->slice_len == 8 && w->bytes == 512,
	   "gate: rows 8..15 of 16, at 0; the whole tensor's bytes");
	w = plan_get_weight_source(r1, 1);
	ok(w->offset == 8 * 8 * 4 && w->slice_start == 8 && w->slice_len == 8,
	   "up: rows 8..15 of 16, after the 8 gate rows");
	w = plan_get_weight_source(r1, 2);
	ok(w->offset == 0 && w->slice_outer == 8 && w->slice_full == 16 && w->slice_inner == 1 &&
	   w->slice_start == 8 && w->slice_len == 8, "down: [8, 16] columns 8..15");

	is_int(shard_plan(src, 1, 0, tokens, 2, &one, &err), 0, "world 1");
	ok(one != NULL && plan_count_ops(one) == 2 && plan_count_tensors(one) == 5 &&
	   plan_get_tensor(one, 1)->shape[0].size == 32 && plan_get_tensor(one, 1)->shape[0].dim == F2,
	   "world 1: a copy, no collective");
	plan_free(one);
	plan_free(r1);
	plan_free(src);
}

/* Embedding and head, vocabulary-parallel: V = 12 over 2 ranks. */
static void test_vocab(void)
{
	plan_t *p = plan_new(), *r = NULL;
	struct plan_split sv = split1(0, 12, 1);
	struct shard_error err;
	const int64_t tokens[] = { 4 };
	uint32_t ids, emb, x, logits;
	const struct plan_op *o;

	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 8, 0);
	dim(p, "F", 16, 0);
	dim(p, "F2", 32, 0);
	dim(p, "V", 12, 0);
	struct plan_tensor it = { .name = "ids", .dtype = PLAN_DTYPE_I32, .role = PLAN_ROLE_INPUT,
	                          .rank = 1, .shape = { { T, 4 } },
	                          .feed = { .kind = PLAN_FEED_TOKENS, .range = 12, .var = PLAN_NONE,
	                                    .from = PLAN_NONE } };
	plan_add_tensor(p, &it, &ids, NULL);
	emb = tensor(p, "embed", PLAN_ROLE_WEIGHT, V, H, &sv);
	x = tensor(p, "x", PLAN_ROLE_ACTIVATION, T, H, NULL);
	logits = tensor(p, "logits", PLAN_ROLE_OUTPUT, T, V, NULL);
	op(p, "embedding", "embed", 3, (uint32_t[]){ emb, ids }, 2, &x, 1, NULL, 0);
	op(p, "matmul", "lm_head", 4, (uint32_t[]){ x, emb }, 2, &logits, 1, trans_b, 1);
	is_int(shard_plan(p, 2, 1, tokens, 1, &r, &err), 0, "vocab: rank 1 of 2 (%s)", err.msg);
	if (r == NULL)
		goto out;
	is_int(plan_count_ops(r), 4, "vocab: 4 ops");
	o = plan_get_op(r, 0);
	ok(strcmp(o->kind, "vocab_embedding") == 0 && attr(o, "vocab_start") == 6,
	   "embedding -> vocab_embedding, vocab_start 6 on rank 1");
	o = plan_get_op(r, 1);
	ok(strcmp(o->kind, "all_reduce") == 0 && o->in[0] == x && o->out[0] == x &&
	   strcmp(o->name, "embed.all_reduce") == 0, "then embed.all_reduce(x)");
	o = plan_get_op(r, 2);
	ok(strcmp(o->kind, "matmul") == 0 && o->out[0] == 4 &&
	   strcmp(plan_get_tensor(r, 4)->name, "logits.shard") == 0 &&
	   plan_get_tensor(r, 4)->shape[1].size == 6, "lm_head writes logits.shard [T, 6]");
	o = plan_get_op(r, 3);
	ok(strcmp(o->kind, "all_gather") == 0 && o->in[0] == 4 && o->out[0] == logits &&
	   strcmp(o->name, "lm_head.all_gather") == 0, "lm_head.all_gather fills logits [T, 12]");
out:
	plan_free(r);
	plan_free(p);
}

static void test_heads(void)
{
	/* Build: att (split) = attention(qs, k, v); rmsnorm on a split operand
	 * is an error. */
	plan_t *p = plan_new(), *r = NULL;
	struct plan_split sq = split1(1, 16, 4), skv = split1(1, 8, 4);
	struct plan_attr a[] = {
		{ "heads", PLAN_ATTR_INT, 4, 0, "" }, { "kv_heads", PLAN_ATTR_INT, 2, 0, "" },
		{ "head_dim", PLAN_ATTR_INT, 4, 0, "" }, { "kv_len", PLAN_ATTR_INT, 8, 0, "" },
	};
	struct shard_error err;
	const int64_t tokens[] = { 1, 4 };
	uint32_t qs, k, v, att, w, y;
	const struct plan_tensor *t;

	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 16, 0);
	dim(p, "F", 16, 0);
	dim(p, "F2", 32, 0);
	dim(p, "V", 12, 0);
	dim(p, "S", 8, 0);
	qs = tensor(p, "q", PLAN_ROLE_STATE, T, H, &sq);
	k = tensor(p, "k", PLAN_ROLE_STATE, S, -8, &skv);
	v = tensor(p, "v", PLAN_ROLE_STATE, S, -8, &skv);
	att = tensor(p, "att", PLAN_ROLE_ACTIVATION, T, H, &sq);
	w = tensor(p, "wo", PLAN_ROLE_WEIGHT, H, H, &sq);   /* [16, 16] split by columns */
	y = tensor(p, "y", PLAN_ROLE_OUTPUT, T, H, NULL);
	op(p, "attention", "attn", 7, (uint32_t[]){ qs, k, v }, 3, &att, 1, a, 4);
	op(p, "matmul", "o", 8, (uint32_t[]){ att, w }, 2, &y, 1, trans_b, 1);

	/* world 2: 2 heads and 1 kv head a rank */
	is_int(shard_plan(p, 2, 1, tokens, 2, &r, &err), 0, "heads: rank 1 of 2 (%s)", err.msg);
	if (r != NULL) {
		const struct plan_op *o = find_op(r, "attn");
		ok(o != NULL && attr(o, "heads") == 2 && attr(o, "kv_heads") == 1,
		   "world 2: heads 2, kv_heads 1");
		t = plan_get_tensor(r, k);
		ok(t->shape[1].size == 4 && t->split.block[0].start == 4, "world 2: k holds kv head 1");
		ok(find_op(r, "o.all_reduce") != NULL, "o: row-parallel, an all_reduce after it");
	}
	plan_free(r);
	r = NULL;
	/* world 4: 1 head a rank; the 2 kv heads are replicated, each on 2 ranks */
	is_int(shard_plan(p, 4, 3, tokens, 2, &r, &err), 0, "heads: rank 3 of 4 (%s)", err.msg);
	if (r != NULL) {
		const struct plan_op *o = find_op(r, "attn");
		ok(o != NULL && attr(o, "heads") == 1 && attr(o, "kv_heads") == 1,
		   "world 4: heads 1, kv_heads 1 (replicated)");
		t = plan_get_tensor(r, k);
		ok(t->shape[1].size == 4 && t->split.block[0].start == 4 && t->split.block[0].len == 4,
		   "world 4: rank 3 holds kv head 1 (rank / 2)");
		t = plan_get_tensor(r, qs);
		ok(t->shape[1].size == 4 && t->split.block[0].start == 12, "world 4: q head 3");
	}
	plan_free(r);
	r = NULL;
	/* world 4, rank 1: kv head 0 */
	if (shard_plan(p, 4, 1, tokens, 2, &r, &err) == 0)
		ok(plan_get_tensor(r, v)->split.block[0].start == 0, "world 4: rank 1 holds kv head 0");
	else
		ok(0, "world 4 rank 1: %s", err.msg);
	plan_free(r);
	r = NULL;
	/* world 3: 4 heads of 4 units split neither way */
	is_int(shard_plan(p, 3, 0, tokens, 2, &r, &err), -1, "world 3 cannot split");
	ok(err.tensor == qs && err.line == 0 && strstr(err.msg, "tensor 'q'") != NULL &&
	   strstr(err.msg, "3 ways") != NULL && strstr(err.msg, "block 0") != NULL,
	   "the error names the tensor, the block and the ranks: %s", err.msg);
	ok(r == NULL, "and gives no plan");
	/* world 8: 16 columns of q in 4 heads: 8 ranks would replicate q heads
	 * (allowed by the split rule) but heads 4 cannot split 8 ways */
	is_int(shard_plan(p, 8, 0, tokens, 2, &r, &err), -1, "world 8: heads 4 cannot split 8 ways");
	ok(err.line == 7 && err.col == 5 && strstr(err.msg, "attn") != NULL &&
	   strstr(err.msg, "heads 4") != NULL, "at the op's position: %s", err.msg);
	plan_free(r);
	r = NULL;
	(void)w;
	(void)y;
	(void)att;
	plan_free(p);
}

/* A split operand of an op that reduces along the last axis. */
static void test_reducing(void)
{
	plan_t *p = plan_new(), *r = NULL;
	struct plan_split sa = split1(1, 16, 1);
	struct plan_attr eps[] = { { "eps", PLAN_ATTR_FLOAT, 0, 1e-6, "" } };
	struct shard_error err;
	const int64_t tokens[] = { 4 };
	uint32_t x, w, y, x2, w2, y2;

	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 16, 0);
	x = tensor(p, "x", PLAN_ROLE_STATE, T, H, &sa);
	struct plan_tensor wt = { .name = "g", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_WEIGHT,
	                          .rank = 1, .shape = { { H, 16 } },
	                          .init = { .kind = PLAN_INIT_ONES },
	                          .feed = { .var = PLAN_NONE, .from = PLAN_NONE } };
	plan_add_tensor(p, &wt, &w, NULL);
	y = tensor(p, "y", PLAN_ROLE_OUTPUT, T, H, NULL);
	op(p, "rmsnorm", "norm", 12, (uint32_t[]){ x, w }, 2, &y, 1, eps, 1);
	is_int(shard_plan(p, 2, 0, tokens, 1, &r, &err), -1, "rmsnorm of a split x: refused");
	ok(err.line == 12 && err.col == 5 && strstr(err.msg, "'norm'") != NULL &&
	   strstr(err.msg, "input x ('x')") != NULL, "naming the op, its position and the "
	   "operand: %s", err.msg);
	plan_free(p);

	/* a product whose a splits along K and b does not */
	p = plan_new();
	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 16, 0);
	x2 = tensor(p, "a", PLAN_ROLE_STATE, T, H, &sa);
	w2 = tensor(p, "b", PLAN_ROLE_WEIGHT, H, H, NULL);
	y2 = tensor(p, "c", PLAN_ROLE_OUTPUT, T, H, NULL);
	op(p, "matmul", "mm", 20, (uint32_t[]){ x2, w2 }, 2, &y2, 1, trans_b, 1);
	is_int(shard_plan(p, 2, 0, tokens, 1, &r, &err), -1, "a split along K, b whole: refused");
	ok(err.line == 20 && strstr(err.msg, "input a ('a') splits along K") != NULL, "%s", err.msg);
	plan_free(p);
}

/* rmsnorm_matmul: b column-parallel (gate | up blocks with silu_mul, or
 * one block gathered into a whole output), x and w whole on every rank;
 * x, w or b split otherwise: refused. */
static void test_rmsnorm_matmul(void)
{
	plan_t *p = plan_new(), *r = NULL;
	struct plan_split s1 = { .nblocks = 2, .axis = 0, .unit = 1 };
	struct plan_split sa = split1(1, 16, 1), sq = split1(0, 12, 1), sk = split1(1, 8, 1);
	struct plan_attr silu[] = { { "eps", PLAN_ATTR_FLOAT, 0, 1e-5, "" },
	                            { "trans_b", PLAN_ATTR_BOOL, 1, 0, "" },
	                            { "epilogue", PLAN_ATTR_STR, 0, 0, "silu_mul" } };
	struct plan_attr none[] = { { "eps", PLAN_ATTR_FLOAT, 0, 1e-5, "" },
	                            { "trans_b", PLAN_ATTR_BOOL, 1, 0, "" },
	                            { "epilogue", PLAN_ATTR_STR, 0, 0, "none" } };
	struct shard_error err;
	const int64_t tokens[] = { 4 };
	const struct plan_op *o;
	const struct plan_tensor *t;
	uint32_t x, g, w1, act, wq, q;

	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 8, 0);
	dim(p, "F", 16, 0);
	dim(p, "F2", 32, 0);
	s1.block[0] = (struct plan_split_block){ 16, 0, 16 };
	s1.block[1] = (struct plan_split_block){ 16, 0, 16 };
	x = tensor(p, "x", PLAN_ROLE_INPUT, T, H, NULL);
	struct plan_tensor gt = { .name = "g", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_WEIGHT,
	                          .rank = 1, .shape = { { H, 8 } },
	                          .init = { .kind = PLAN_INIT_ONES },
	                          .feed = { .var = PLAN_NONE, .from = PLAN_NONE } };
	plan_add_tensor(p, &gt, &g, NULL);
	w1 = tensor(p, "w1", PLAN_ROLE_WEIGHT, F2, H, &s1);
	act = tensor(p, "act", PLAN_ROLE_OUTPUT, T, F, &sa);
	wq = tensor(p, "wq", PLAN_ROLE_WEIGHT, -12, H, &sq);
	q = tensor(p, "q", PLAN_ROLE_OUTPUT, T, -12, NULL);
	op(p, "rmsnorm_matmul", "gate_up", 30, (uint32_t[]){ x, g, w1 }, 3, &act, 1, silu, 3);
	op(p, "rmsnorm_matmul", "qkv", 31, (uint32_t[]){ x, g, wq }, 3, &q, 1, none, 3);
	is_int(shard_plan(p, 2, 1, tokens, 1, &r, &err), 0, "rmsnorm_matmul: rank 1 of 2 (%s)",
	       err.msg);
	if (r != NULL) {
		o = find_op(r, "gate_up");
		ok(o != NULL && strcmp(o->kind, "rmsnorm_matmul") == 0 && o->nin == 3 &&
		   o->in[0] == x && o->in[1] == g && o->in[2] == w1 && o->out[0] == act,
		   "gate_up: rmsnorm_matmul(x, g, w1) -> act on the rank, no collective");
		t = plan_get_tensor(r, w1);
		ok(t->shape[0].size == 16 && t->split.block[0].start == 8 &&
		   t->split.block[1].start == 8 && t->split.block[0].len == 8,
		   "w1: rows 8..15 of the gate block and of the up block");
		ok(plan_get_tensor(r, g)->shape[0].size == 8 && plan_get_tensor(r, x)->shape[1].size == 8,
		   "g and x whole on the rank");
		is_int(plan_get_tensor(r, act)->shape[1].size, 8, "act: its 8 columns of 16");
		o = find_op(r, "qkv");
		ok(o != NULL && strcmp(o->kind, "rmsnorm_matmul") == 0 &&
		   strcmp(plan_get_tensor(r, o->out[0])->name, "q.shard") == 0 &&
		   plan_get_tensor(r, o->out[0])->shape[1].size == 6,
		   "qkv: its 6 columns of 12 into q.shard");
		o = find_op(r, "qkv.all_gather");
		ok(o != NULL && strcmp(o->kind, "all_gather") == 0 && o->out[0] == q,
		   "then all_gather into the whole q");
		plan_free(r);
		r = NULL;
	}
	plan_free(p);

	/* x split: refused */
	p = plan_new();
	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 8, 0);
	x = tensor(p, "x", PLAN_ROLE_STATE, T, H, &sk);
	plan_add_tensor(p, &gt, &g, NULL);
	wq = tensor(p, "wq", PLAN_ROLE_WEIGHT, -12, H, NULL);
	q = tensor(p, "q", PLAN_ROLE_OUTPUT, T, -12, NULL);
	op(p, "rmsnorm_matmul", "qkv", 40, (uint32_t[]){ x, g, wq }, 3, &q, 1, none, 3);
	is_int(shard_plan(p, 2, 0, tokens, 1, &r, &err), -1, "rmsnorm_matmul of a split x: refused");
	ok(err.line == 40 && strstr(err.msg, "op 'qkv' (rmsnorm_matmul): input x ('x') splits; the "
	   "norm reads whole rows of x and all of w (only b may split, along N)") != NULL,
	   "%s", err.msg);
	plan_free(p);

	/* b split along K: refused */
	p = plan_new();
	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 8, 0);
	x = tensor(p, "x", PLAN_ROLE_STATE, T, H, NULL);
	plan_add_tensor(p, &gt, &g, NULL);
	wq = tensor(p, "wq", PLAN_ROLE_WEIGHT, -12, H, &sk);
	q = tensor(p, "q", PLAN_ROLE_OUTPUT, T, -12, NULL);
	op(p, "rmsnorm_matmul", "qkv", 41, (uint32_t[]){ x, g, wq }, 3, &q, 1, none, 3);
	is_int(shard_plan(p, 2, 0, tokens, 1, &r, &err), -1, "rmsnorm_matmul, b split along K: "
	       "refused");
	ok(err.line == 41 && strstr(err.msg, "input b ('wq') splits along K; the norm reads whole "
	   "rows of x (split b along N)") != NULL, "%s", err.msg);
	plan_free(p);
}

/* rmsnorm_matmul_rope_kv_write: x and w whole, b along its q|k|v columns
 * exactly when q and the caches split (the split runs: t/t3180); else
 * refused, naming the operand. */
static void test_rmsnorm_matmul_rope_kv_write(void)
{
	struct plan_split sk = split1(1, 8, 1), sq = split1(0, 16, 1), sh = split1(1, 8, 1);
	struct plan_attr at[] = { { "heads", PLAN_ATTR_INT, 2, 0, "" },
	                          { "kv_heads", PLAN_ATTR_INT, 1, 0, "" },
	                          { "head_dim", PLAN_ATTR_INT, 4, 0, "" },
	                          { "eps", PLAN_ATTR_FLOAT, 0, 1e-5, "" },
	                          { "trans_b", PLAN_ATTR_BOOL, 1, 0, "" } };
	struct plan_tensor gt = { .name = "g", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_WEIGHT,
	                          .rank = 1, .shape = { { H, 8 } },
	                          .init = { .kind = PLAN_INIT_ONES },
	                          .feed = { .var = PLAN_NONE, .from = PLAN_NONE } };
	const char *const want[] = {
		"op 'qkv' (rmsnorm_matmul_rope_kv_write): input x ('x') splits; the norm reads "
		"whole rows of x and all of w",
		"op 'qkv' (rmsnorm_matmul_rope_kv_write): input b ('wq') splits along K; the norm "
		"reads whole rows of x",
		"splits, and input b ('wq') does not",
	};
	struct shard_error err;
	const int64_t tokens[] = { 4 };
	plan_t *p, *r = NULL;

	for (int c = 0; c < 3; c++) {
		uint32_t x, g, wq, pos, q, kc, vc, outs[3];
		p = plan_new();
		dim(p, "T", 4, PLAN_DIM_TOKENS);
		dim(p, "H", 8, 0);
		x = tensor(p, "x", PLAN_ROLE_STATE, T, H, c == 0 ? &sk : NULL);
		plan_add_tensor(p, &gt, &g, NULL);
		wq = tensor(p, "wq", PLAN_ROLE_WEIGHT, -16, H, c == 1 ? &sk : c == 0 ? &sq : NULL);
		pos = tensor(p, "pos", PLAN_ROLE_INPUT, T, -1, NULL);
		q = tensor(p, "q", PLAN_ROLE_OUTPUT, T, H, c == 2 ? &sh : NULL);
		kc = tensor(p, "kc", PLAN_ROLE_STATE, -8, -4, NULL);
		vc = tensor(p, "vc", PLAN_ROLE_STATE, -8, -4, NULL);
		outs[0] = q;
		outs[1] = kc;
		outs[2] = vc;
		op(p, "rmsnorm_matmul_rope_kv_write", "qkv", 50 + c, (uint32_t[]){ x, g, wq, pos }, 4,
		   outs, 3, at, 5);
		is_int(shard_plan(p, 2, 0, tokens, 1, &r, &err), -1,
		       "rmsnorm_matmul_rope_kv_write case %d: refused", c);
		ok(err.line == 50u + (uint32_t)c && strstr(err.msg, want[c]) != NULL, "%s", err.msg);
		plan_free(p);
	}
}

/* decoder_layer: refused over ranks even with no operand split (each rank
 * running the whole layer would be no parallelism, a split one needs an
 * all_reduce inside it), naming the op and the unfused ops; world 1
 * copies it as any op. */
static void test_decoder_layer(void)
{
	struct plan_attr at[] = { { "heads", PLAN_ATTR_INT, 2, 0, "" },
	                          { "kv_heads", PLAN_ATTR_INT, 1, 0, "" },
	                          { "head_dim", PLAN_ATTR_INT, 4, 0, "" },
	                          { "eps", PLAN_ATTR_FLOAT, 0, 1e-5, "" },
	                          { "kv_len", PLAN_ATTR_INT, 4, 0, "" } };
	struct plan_tensor g = { .name = "g", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_WEIGHT,
	                         .rank = 1, .shape = { { H, 8 } },
	                         .init = { .kind = PLAN_INIT_ONES },
	                         .feed = { .var = PLAN_NONE, .from = PLAN_NONE } };
	struct shard_error err;
	const int64_t tokens[] = { 4 };
	plan_t *p = plan_new(), *r = NULL;
	uint32_t x, an, fn, wqkv, wo, wgu, wd, pos, kc, vc, outs[3];

	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 8, 0);
	x = tensor(p, "x", PLAN_ROLE_STATE, T, H, NULL);
	plan_add_tensor(p, &g, &an, NULL);
	g.name = "fn";
	plan_add_tensor(p, &g, &fn, NULL);
	wqkv = tensor(p, "wqkv", PLAN_ROLE_WEIGHT, -16, H, NULL);
	wo = tensor(p, "wo", PLAN_ROLE_WEIGHT, H, H, NULL);
	wgu = tensor(p, "wgu", PLAN_ROLE_WEIGHT, -32, H, NULL);
	wd = tensor(p, "wd", PLAN_ROLE_WEIGHT, H, -16, NULL);
	pos = tensor(p, "pos", PLAN_ROLE_INPUT, T, -1, NULL);
	kc = tensor(p, "kc", PLAN_ROLE_STATE, -8, -4, NULL);
	vc = tensor(p, "vc", PLAN_ROLE_STATE, -8, -4, NULL);
	outs[0] = x;
	outs[1] = kc;
	outs[2] = vc;
	op(p, "decoder_layer", "layer.0", 60, (uint32_t[]){ x, an, wqkv, wo, fn, wgu, wd, pos }, 8,
	   outs, 3, at, 5);
	is_int(shard_plan(p, 2, 0, tokens, 1, &r, &err), -1,
	       "decoder_layer over 2 ranks, nothing split: refused");
	ok(err.line == 60 && strstr(err.msg, "op 'layer.0' (decoder_layer): a whole decoder layer "
	   "in one op cannot run over ranks") != NULL && strstr(err.msg, "unfused ops") != NULL,
	   "%s", err.msg);
	is_int(shard_plan(p, 1, 0, tokens, 1, &r, &err), 0, "decoder_layer on one rank: a copy");
	ok(r != NULL && plan_count_ops(r) == 1, "the layer as it is");
	plan_free(r);
	plan_free(p);
}

/* Elementwise kinds take operands that split as their output; and a
 * column-parallel matmul_add cannot write a whole output. */
static void test_elementwise(void)
{
	plan_t *p = plan_new(), *r = NULL;
	struct plan_split s16 = split1(1, 16, 1), s16u = split1(1, 16, 4);
	struct shard_error err;
	const int64_t tokens[] = { 4 };
	uint32_t a, b, c, x, w, y;

	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 16, 0);
	a = tensor(p, "a", PLAN_ROLE_STATE, T, H, &s16);
	b = tensor(p, "b", PLAN_ROLE_STATE, T, H, &s16);
	c = tensor(p, "c", PLAN_ROLE_STATE, T, H, &s16);
	op(p, "add", "sum", 30, (uint32_t[]){ a, b }, 2, &c, 1, NULL, 0);
	is_int(shard_plan(p, 2, 1, tokens, 1, &r, &err), 0, "add of operands split alike (%s)",
	       err.msg);
	ok(r != NULL && plan_count_ops(r) == 1 && plan_get_tensor(r, c)->shape[1].size == 8,
	   "runs on the shares, no collective");
	plan_free(r);
	r = NULL;
	plan_free(p);

	p = plan_new();
	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 16, 0);
	a = tensor(p, "a", PLAN_ROLE_STATE, T, H, &s16);
	b = tensor(p, "b", PLAN_ROLE_STATE, T, H, &s16u);
	c = tensor(p, "c", PLAN_ROLE_STATE, T, H, &s16);
	op(p, "add", "sum", 31, (uint32_t[]){ a, b }, 2, &c, 1, NULL, 0);
	is_int(shard_plan(p, 2, 0, tokens, 1, &r, &err), -1, "add of operands split otherwise");
	ok(err.line == 31 && strstr(err.msg, "input b ('b') splits otherwise") != NULL, "%s",
	   err.msg);
	plan_free(p);

	p = plan_new();
	dim(p, "T", 4, PLAN_DIM_TOKENS);
	dim(p, "H", 16, 0);
	x = tensor(p, "x", PLAN_ROLE_STATE, T, H, NULL);
	w = tensor(p, "w", PLAN_ROLE_WEIGHT, H, H, &(struct plan_split){ .nblocks = 1, .axis = 0,
	           .unit = 1, .block = { { 16, 0, 16 } } });
	y = tensor(p, "y", PLAN_ROLE_OUTPUT, T, H, NULL);
	op(p, "matmul_add", "res", 32, (uint32_t[]){ x, x, w }, 3, &y, 1, trans_b, 1);
	is_int(shard_plan(p, 2, 0, tokens, 1, &r, &err), -1,
	       "matmul_add split along N into a whole output: refused");
	ok(err.line == 32 && strstr(err.msg, "splits along N") != NULL, "%s", err.msg);
	plan_free(p);
}

int main(void)
{
	test_rmsnorm_matmul();
	test_rmsnorm_matmul_rope_kv_write();
	test_decoder_layer();
	int64_t s, l;

	ok(shard_block(8, 1, 2, 1, &s, &l) == 0 && s == 4 && l == 4, "8 over 2: rank 1 has 4..7");
	ok(shard_block(8, 4, 4, 2, &s, &l) == 0 && s == 4 && l == 4,
	   "2 units of 4 over 4 ranks: rank 2 holds unit 1");
	ok(shard_block(12, 4, 2, 0, &s, &l) != 0, "3 units over 2 ranks: no");
	ok(shard_block(8, 4, 3, 0, &s, &l) != 0, "2 units over 3 ranks: no");
	test_mlp();
	test_vocab();
	test_heads();
	test_reducing();
	test_elementwise();
	return tap_done();
}
