/*
 * plan-dist.c - tensor-parallel plans (format 1.5): rank 0 with the other
 * ranks attached, split tensors and sliced weight sources.
 *
 *  - Round trips of a 2-rank and a 4-rank plan: every rank, every split
 *    and slice comes back; the same plan gives the same bytes; the file
 *    is labelled 1.5 and its directory lists one RANK section a rank.
 *  - World 1 stays as before: a plan of one rank is written byte for byte
 *    as the committed vectors (1.1, 1.4) and without DIST; a world-1 plan
 *    with a split tensor is 1.5.
 *  - The reader on crafted contents behind valid checksums: a nested plan
 *    truncated or corrupt, ranks missing, held twice, out of range, of
 *    another world, nested twice, RANK sections where none belong.
 *  - The validator: every rule of a split, of a slice, and of the ranks'
 *    agreement.
 *
 * Expected values come from the shapes as built here: a fused q|k|v
 * weight of 4 query heads and 1 key and 1 value head of 32 (128 + 32 +
 * 32 rows) and a 128-wide output projection; at world N each rank holds
 * 4/N query heads and the key/value heads whole (1 head does not split N
 * ways, N/1 ranks hold it alike).
 *
 * `plan-dist --write DIR` writes the 2- and 4-rank plans as DIR/tp-2.plan
 * and DIR/tp-4.plan (the fuzzer's seeds in t/fuzz/corpus/plan).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "plan.h"
#include "plan-sample.h"
#include "tap.h"

#define CHECK(call)                                                             \
	do {                                                                    \
		if ((call) != 0) {                                              \
			fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call); \
			goto fail;                                              \
		}                                                               \
	} while (0)

#define HD   32        /* head size */
#define H    128       /* hidden: 4 heads */
#define KVW  32        /* one key/value head */
#define T    4

static uint64_t align256(uint64_t x)
{
	return (x + 255) / 256 * 256;
}

/* Options for breaking one rank of the plan (the validator's tests). */
struct opts {
	uint32_t world;
	uint32_t bad_rank;       /* the rank the options below apply to */
	int64_t  dim_h;          /* 0: H */
	int      extra_op;       /* one op more */
	const char *op_kind;     /* the second op's kind; NULL "matmul" */
	uint32_t requests;       /* the variant's key */
	int32_t  nccl;           /* -1: 22809 */
	int      var_limit;      /* 0: 15 */
	uint64_t seed;           /* w_o's seed; 0: 7 */
};

/*
 * Rank R of a world of O->world: x [T, H] in, w_qkv [QKV_r, H] bf16 from
 * a checkpoint (q, k and v projections, each a slice), qkv [T, QKV_r],
 * w_o [H, H/N] random, y [T, H] out. Ops: matmul(x, w_qkv) -> qkv,
 * matmul(qkv, w_o) -> y, all_reduce(y) -> y. One variant of T tokens: a
 * segment of the two products, a breakpoint at the collective.
 */
static plan_t *build_rank(const struct opts *o, uint32_t r)
{
	plan_t *p = plan_new();
	uint32_t N = o->world, dT, dH, x, wqkv, qkv, wo, y, v;
	int bad = r == o->bad_rank;
	int64_t q_len = H / N, kv_len = KVW;        /* kv: 1 head, held whole */
	int64_t qkv_r = q_len + 2 * kv_len, o_len = H / N;
	uint64_t off = 0;

	if (p == NULL)
		return NULL;
	struct plan_meta meta = {
		.tool = "bcgtool 0.1.0", .script = "tp.yaml",
		.script_hash = UINT64_C(0x0123456789abcdef), .created = 1700000000,
		.backend = PLAN_BACKEND_HOST,
	};
	CHECK(plan_set_meta(p, &meta, NULL));
	CHECK(plan_set_dist(p, &(struct plan_dist){ N, r, o->nccl < 0 || !bad ? 22809 : o->nccl, 0, 0 },
	                    NULL));
	CHECK(plan_add_dim(p, &(struct plan_dim){ "T", "", T, PLAN_DIM_TOKENS }, &dT, NULL));
	CHECK(plan_add_dim(p, &(struct plan_dim){ "H", "4*32", bad && o->dim_h ? o->dim_h : H, 0 },
	                   &dH, NULL));
	CHECK(plan_add_var(p, &(struct plan_var){ "pos", 0, 1, bad && o->var_limit ? o->var_limit : 15,
	                   0 }, NULL, NULL));
	off = 256;

	struct plan_tensor t = { 0 };
	t = (struct plan_tensor){ .name = "x", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_INPUT,
	                          .rank = 2, .shape = { { dT, T }, { dH, H } },
	                          .feed = { PLAN_FEED_RANDOM, PLAN_NONE, 1, 0, 1.0, PLAN_NONE } };
	t.offset = off;
	t.bytes = T * H * 4;
	off = align256(off + t.bytes);
	CHECK(plan_add_tensor(p, &t, &x, NULL));

	t = (struct plan_tensor){ .name = "w_qkv", .dtype = PLAN_DTYPE_BF16, .role = PLAN_ROLE_WEIGHT,
	                          .rank = 2, .shape = { { PLAN_NONE, qkv_r }, { dH, H } },
	                          .init = { PLAN_INIT_SAFETENSORS, 0, 0, 0 },
	                          .feed = { .var = PLAN_NONE, .from = PLAN_NONE } };
	t.split = (struct plan_split){ 3, 0, HD, { { H, r * q_len, q_len }, { KVW, 0, kv_len },
	                                           { KVW, 0, kv_len } } };
	t.offset = off;
	t.bytes = (uint64_t)qkv_r * H * 2;
	off = align256(off + t.bytes);
	CHECK(plan_add_tensor(p, &t, &wqkv, NULL));

	t = (struct plan_tensor){ .name = "qkv", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_ACTIVATION,
	                          .rank = 2, .shape = { { dT, T }, { PLAN_NONE, qkv_r } },
	                          .feed = { .var = PLAN_NONE, .from = PLAN_NONE } };
	t.split = (struct plan_split){ 3, 1, HD, { { H, r * q_len, q_len }, { KVW, 0, kv_len },
	                                           { KVW, 0, kv_len } } };
	t.offset = off;
	t.bytes = (uint64_t)T * qkv_r * 4;
	off = align256(off + t.bytes);
	CHECK(plan_add_tensor(p, &t, &qkv, NULL));

	t = (struct plan_tensor){ .name = "w_o", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_WEIGHT,
	                          .rank = 2, .shape = { { dH, H }, { PLAN_NONE, o_len } },
	                          .init = { PLAN_INIT_RANDOM, bad && o->seed ? o->seed : 7, 0.5, 0 },
	                          .feed = { .var = PLAN_NONE, .from = PLAN_NONE } };
	t.split = (struct plan_split){ 1, 1, HD, { { H, r * o_len, o_len } } };
	t.offset = off;
	t.bytes = (uint64_t)H * o_len * 4;
	off = align256(off + t.bytes);
	CHECK(plan_add_tensor(p, &t, &wo, NULL));

	t = (struct plan_tensor){ .name = "y", .dtype = PLAN_DTYPE_F32, .role = PLAN_ROLE_OUTPUT,
	                          .rank = 2, .shape = { { dT, T }, { dH, H } },
	                          .init = { PLAN_INIT_ZEROS, 0, 0, 0 },
	                          .feed = { .var = PLAN_NONE, .from = PLAN_NONE } };
	t.offset = off;
	t.bytes = T * H * 4;
	off = align256(off + t.bytes);
	CHECK(plan_add_tensor(p, &t, &y, NULL));
	CHECK(plan_set_layout(p, &(struct plan_layout){ off, off, 256 }, NULL));
	CHECK(plan_set_var_offset(p, 0, 0, NULL));

	/* The checkpoint's q_proj [128, 128], k_proj and v_proj [32, 128],
	 * bf16: rows [r*q_len, +q_len) of q, all of k and v. */
	CHECK(plan_add_weight_source(p, &(struct plan_weight_source){
		.tensor = wqkv, .offset = 0, .file = "/m/model.safetensors", .name = "q_proj.weight",
		.dtype = PLAN_DTYPE_BF16, .bytes = H * H * 2, .slice_outer = 1, .slice_full = H,
		.slice_inner = H, .slice_start = (uint64_t)(r * q_len), .slice_len = (uint64_t)q_len },
		NULL, NULL));
	CHECK(plan_add_weight_source(p, &(struct plan_weight_source){
		.tensor = wqkv, .offset = (uint64_t)q_len * H * 2, .file = "/m/model.safetensors",
		.name = "k_proj.weight", .dtype = PLAN_DTYPE_BF16, .bytes = KVW * H * 2,
		.slice_outer = 1, .slice_full = KVW, .slice_inner = H, .slice_start = 0,
		.slice_len = KVW }, NULL, NULL));
	CHECK(plan_add_weight_source(p, &(struct plan_weight_source){
		.tensor = wqkv, .offset = (uint64_t)(q_len + KVW) * H * 2, .file = "/m/model.safetensors",
		.name = "v_proj.weight", .dtype = PLAN_DTYPE_BF16, .bytes = KVW * H * 2 }, NULL, NULL));
	CHECK(plan_set_weight_hash(p, 0, UINT64_C(0x1111222233334444), NULL));

	uint32_t in0[] = { x, wqkv }, out0[] = { qkv }, in1[] = { qkv, wo }, out1[] = { y };
	uint32_t in2[] = { y }, out2[] = { y };
	const char *k1 = bad && o->op_kind ? o->op_kind : "matmul";
	CHECK(plan_add_op(p, &(struct plan_op){ "matmul", "qkv", 0, 3, 5, 2, 1, 0, in0, out0, NULL },
	                  NULL, NULL));
	CHECK(plan_add_op(p, &(struct plan_op){ k1, "o", 0, 4, 5, 2, 1, 0, in1, out1, NULL },
	                  NULL, NULL));
	CHECK(plan_add_op(p, &(struct plan_op){ "all_reduce", "o.all_reduce", 0, 4, 5, 1, 1, 0, in2,
	                                        out2, NULL }, NULL, NULL));
	uint32_t nops = 3;
	if (bad && o->extra_op) {
		CHECK(plan_add_op(p, &(struct plan_op){ "scale", "extra", 0, 5, 5, 1, 1, 0, in2, out2,
		                                        NULL }, NULL, NULL));
		nops++;
	}
	CHECK(plan_add_variant(p, &(struct plan_variant){ .tokens = T, .mode = PLAN_MODE_BREAKABLE,
	                       .peak_bytes = off, .requests = bad ? o->requests : 0 }, &v, NULL));
	CHECK(plan_add_segment(p, &(struct plan_segment){ .variant = v, .op_first = 0, .op_count = 2 },
	                       NULL, NULL));
	CHECK(plan_add_breakpoint(p, &(struct plan_breakpoint){ v, 2, "o.all_reduce", PLAN_BREAK_KIND,
	                          "a collective: every rank must launch it at once", 1, 1, in2, out2,
	                          0, 0, 0, 0, 0 }, NULL, NULL));
	if (nops == 4)
		CHECK(plan_add_segment(p, &(struct plan_segment){ .variant = v, .op_first = 3,
		                       .op_count = 1 }, NULL, NULL));
	CHECK(plan_add_dispatch(p, &(struct plan_dispatch){ .tokens_min = 1, .tokens_max = T,
	                        .variant = v, .requests_max = bad ? o->requests : 0 }, NULL, NULL));
	return p;
fail:
	plan_free(p);
	return NULL;
}

/* Rank 0 with ranks 1 .. world-1 attached. */
static plan_t *build_world(const struct opts *o)
{
	plan_t *p = build_rank(o, 0);

	for (uint32_t r = 1; p != NULL && r < o->world; r++) {
		plan_t *q = build_rank(o, r);
		if (q == NULL || plan_add_rank(p, q, NULL) != 0) {
			plan_free(p);
			return NULL;
		}
	}
	return p;
}

static plan_t *build(uint32_t world)
{
	struct opts o = { .world = world, .bad_rank = PLAN_NONE, .nccl = -1 };

	return build_world(&o);
}

/* ---------------------------------------------------------------------- */
/* Comparison of what sample_plans_equal does not see.                     */

static int dist_equal(const plan_t *a, const plan_t *b, char *why, size_t len)
{
	const struct plan_dist *x = plan_get_dist(a), *y = plan_get_dist(b);

	if (x->world != y->world || x->rank != y->rank || x->nccl_version != y->nccl_version ||
	    x->flags != y->flags || x->nccl_mem != y->nccl_mem) {
		snprintf(why, len, "dist %u/%u/%d vs %u/%u/%d", x->rank, x->world, x->nccl_version,
		         y->rank, y->world, y->nccl_version);
		return 0;
	}
	for (uint32_t i = 0; i < plan_count_tensors(a) && i < plan_count_tensors(b); i++) {
		const struct plan_split *s = &plan_get_tensor(a, i)->split;
		const struct plan_split *u = &plan_get_tensor(b, i)->split;
		int same = s->nblocks == u->nblocks;
		if (same && s->nblocks != 0)
			same = s->axis == u->axis && s->unit == u->unit &&
			       memcmp(s->block, u->block, s->nblocks * sizeof s->block[0]) == 0;
		if (!same) {
			snprintf(why, len, "tensor %u: the split differs", i);
			return 0;
		}
	}
	if (plan_count_weight_sources(a) != plan_count_weight_sources(b)) {
		snprintf(why, len, "weight source count");
		return 0;
	}
	for (uint32_t i = 0; i < plan_count_weight_sources(a); i++) {
		const struct plan_weight_source *s = plan_get_weight_source(a, i);
		const struct plan_weight_source *u = plan_get_weight_source(b, i);
		if (s->tensor != u->tensor || s->offset != u->offset || strcmp(s->file, u->file) ||
		    strcmp(s->name, u->name) || s->dtype != u->dtype || s->bytes != u->bytes ||
		    s->hash != u->hash || s->flags != u->flags || s->slice_outer != u->slice_outer ||
		    s->slice_full != u->slice_full || s->slice_inner != u->slice_inner ||
		    s->slice_start != u->slice_start || s->slice_len != u->slice_len) {
			snprintf(why, len, "weight source %u differs", i);
			return 0;
		}
	}
	return 1;
}

/* Every rank of A equals B's, field by field. */
static int world_equal(const plan_t *a, const plan_t *b, char *why, size_t len)
{
	const struct plan_dist *d = plan_get_dist(a);
	char w[200];

	if (plan_get_dist(b)->world != d->world || plan_count_ranks(a) != plan_count_ranks(b)) {
		snprintf(why, len, "worlds or rank counts differ");
		return 0;
	}
	for (uint32_t r = 0; r < d->world; r++) {
		const plan_t *x = plan_get_rank(a, r), *y = plan_get_rank(b, r);
		if (x == NULL || y == NULL) {
			snprintf(why, len, "rank %u is missing", r);
			return 0;
		}
		if (!sample_plans_equal(x, y, w, sizeof w) || !dist_equal(x, y, w, sizeof w)) {
			snprintf(why, len, "rank %u: %s", r, w);
			return 0;
		}
	}
	return 1;
}

/* ---------------------------------------------------------------------- */
/* Contents: taken apart and put together per plan-format.md.              */

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int k = 0; k < 4; k++)
		p[k] = (unsigned char)(v >> (8 * k));
}

static void put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

struct section {
	char                 id[5];
	uint32_t             flags;
	const unsigned char *data;
	size_t               size;
};

#define MAX_SECT 64

static int split_content(const unsigned char *c, struct section *s)
{
	uint32_t n = get32(c);

	for (uint32_t i = 0; i < n && i < MAX_SECT; i++) {
		const unsigned char *e = c + 8 + 24 * i;
		memcpy(s[i].id, e, 4);
		s[i].id[4] = '\0';
		s[i].flags = get32(e + 4);
		s[i].data = c + get64(e + 8);
		s[i].size = (size_t)get64(e + 16);
	}
	return (int)n;
}

static unsigned char *join_content(const struct section *s, int n, size_t *clen)
{
	size_t len = 8 + 24 * (size_t)n, at;
	unsigned char *c;

	for (int i = 0; i < n; i++)
		len = (len + 7) / 8 * 8 + s[i].size;
	if ((c = calloc(1, len ? len : 1)) == NULL)
		abort();
	put32(c, (uint32_t)n);
	at = 8 + 24 * (size_t)n;
	for (int i = 0; i < n; i++) {
		unsigned char *e = c + 8 + 24 * i;
		at = (at + 7) / 8 * 8;
		memcpy(e, s[i].id, 4);
		put32(e + 4, s[i].flags);
		put64(e + 8, at);
		put64(e + 16, s[i].size);
		memcpy(c + at, s[i].data, s[i].size);
		at += s[i].size;
	}
	*clen = len;
	return c;
}

static int find_sect(const struct section *s, int n, const char *id, int nth)
{
	for (int i = 0; i < n; i++)
		if (memcmp(s[i].id, id, 4) == 0 && nth-- == 0)
			return i;
	return -1;
}

/* A plan file holding CONTENT, labelled 1.5, with valid checksums. */
static unsigned char *make_file(const unsigned char *content, size_t clen, size_t *len)
{
	size_t bound = ZSTD_compressBound(clen), n;
	unsigned char *f = calloc(1, 64 + bound);
	static const unsigned char magic[8] = { 0x89, 'B', 'C', 'G', 0x0D, 0x0A, 0x1A, 0x0A };

	if (f == NULL)
		abort();
	n = ZSTD_compress(f + 64, bound, content, clen, 3);
	if (ZSTD_isError(n))
		abort();
	/* the reader wants a content checksum: make the frame again with one */
	{
		ZSTD_CCtx *cc = ZSTD_createCCtx();
		ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
		ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
		n = ZSTD_compress2(cc, f + 64, bound, content, clen);
		ZSTD_freeCCtx(cc);
		if (ZSTD_isError(n))
			abort();
	}
	memcpy(f, magic, 8);
	f[8] = 1;
	f[10] = 5;
	put32(f + 16, 64);
	put32(f + 20, plan_crc32c(f + 64, n));
	put64(f + 24, n);
	put64(f + 32, clen);
	put32(f + 60, plan_crc32c(f, 60));
	*len = 64 + n;
	return f;
}

static unsigned char *get_content(const unsigned char *file, size_t len, size_t *clen)
{
	uint64_t n = get64(file + 32);
	unsigned char *c = malloc(n ? n : 1);

	if (c == NULL || ZSTD_decompress(c, n, file + 64, len - 64) != n)
		abort();
	*clen = n;
	return c;
}

/* Content C, read: WANT and a message holding SUBSTR. */
static void expect_content(const unsigned char *c, size_t clen, int want, const char *substr,
                           const char *what)
{
	size_t len;
	unsigned char *f = make_file(c, clen, &len);
	struct plan_diag d = { 0 };
	plan_t *p = NULL;
	int got = plan_read_memory(f, len, NULL, &p, &d);

	ok(got == want && (want == 0) == (p != NULL) && (want == 0 || strstr(d.message, substr)),
	   "%s: %s", what, got == 0 ? "read" : d.message);
	if (got != want || (want != 0 && strstr(d.message, substr) == NULL))
		diag("    want %s with \"%s\", got %s: %s", plan_strerror(want), substr,
		     plan_strerror(got), d.message);
	plan_free(p);
	free(f);
}

/* ---------------------------------------------------------------------- */
/* Round trips.                                                            */

static void round_trip(uint32_t world)
{
	plan_t *p = build(world), *q = NULL;
	struct plan_diag d = { 0 };
	void *a = NULL, *b = NULL, *c = NULL;
	size_t alen = 0, blen = 0, clen = 0, ctlen = 0;
	unsigned major = 0, minor = 0;
	char why[256];

	if (!ok(p != NULL, "world %u: built", world))
		return;
	is_int(plan_count_ranks(p), world - 1, "world %u: %u ranks attached to rank 0", world,
	       world - 1);
	is_int(plan_validate(p, &d), 0, "world %u: valid (%s)", world, d.message);
	is_int(plan_write_memory(p, &a, &alen, &d), 0, "world %u: written (%s)", world, d.message);
	is_int(plan_write_memory(p, &b, &blen, &d), 0, "world %u: written again", world);
	ok(alen == blen && a != NULL && memcmp(a, b, alen) == 0,
	   "world %u: two writes give the same %zu bytes", world, alen);
	if (a == NULL)
		goto out;
	ok(get32((unsigned char *)a + 8) == (1u | 5u << 16), "world %u: the header says 1.5", world);
	{
		unsigned char *ct = get_content(a, alen, &ctlen);
		struct section s[MAX_SECT];
		int n = split_content(ct, s), nrank = 0, last = -1;
		for (int i = 0; i < n; i++)
			if (memcmp(s[i].id, "RANK", 4) == 0) {
				nrank++;
				last = i;
			}
		ok(nrank == (int)world - 1 && last == n - 1,
		   "world %u: the directory ends with %u RANK sections", world, world - 1);
		int di = find_sect(s, n, "DIST", 0);
		ok(di >= 0 && s[di].flags == 1 && get32(s[di].data) == 16 && get32(s[di].data + 4) == 1 &&
		   get32(s[di].data + 8) == world && get32(s[di].data + 12) == 0 &&
		   get32(s[di].data + 16) == 22809 && get32(s[di].data + 20) == 0,
		   "world %u: DIST (required) holds world %u, rank 0, NCCL 22809, flags 0", world,
		   world);
		/* rank 1's content names rank 1 */
		int ri = find_sect(s, n, "RANK", 0);
		if (ri >= 0) {
			struct section t[MAX_SECT];
			int m = split_content(s[ri].data, t), dj = find_sect(t, m, "DIST", 0);
			ok(dj >= 0 && get32(t[dj].data + 8) == world && get32(t[dj].data + 12) == 1 &&
			   find_sect(t, m, "RANK", 0) < 0,
			   "world %u: the first RANK section holds rank 1, with no RANK of its own", world);
		} else {
			tap_skip(1, "no RANK section");
		}
		/* w_qkv (tensor 1): 3 blocks along axis 0 of units of 32 */
		int ti = find_sect(s, n, "TENS", 0), bi = find_sect(s, n, "SBLK", 0);
		ok(ti >= 0 && get32(s[ti].data) == 168, "world %u: TENS records are 168 bytes", world);
		if (ti >= 0 && bi >= 0) {
			const unsigned char *r1 = s[ti].data + 8 + 168;
			const unsigned char *b0 = s[bi].data + 8;
			ok(get32(r1 + 144) == 0 && get32(r1 + 148) == 3 && get64(r1 + 152) == HD &&
			   get32(r1 + 160) == 0 && get32(r1 + 164) == 0,
			   "world %u: w_qkv's record: axis 0, 3 blocks from 0, unit 32", world);
			ok(get32(s[bi].data) == 24 && get32(s[bi].data + 4) == 3 + 3 + 1 &&
			   get64(b0) == H && get64(b0 + 8) == 0 && get64(b0 + 16) == H / world &&
			   get64(b0 + 24) == KVW && get64(b0 + 40) == KVW,
			   "world %u: SBLK: 7 blocks; rank 0's q block [0, +%u) of 128, k whole", world,
			   H / world);
		} else {
			tap_skip(2, "no TENS or SBLK");
		}
		int wi = find_sect(s, n, "WSRC", 0);
		ok(wi >= 0 && get32(s[wi].data) == 88 && get32(s[wi].data + 4) == 3 &&
		   get64(s[wi].data + 8 + 48) == 1 && get64(s[wi].data + 8 + 56) == H &&
		   get64(s[wi].data + 8 + 64) == H && get64(s[wi].data + 8 + 72) == 0 &&
		   get64(s[wi].data + 8 + 80) == H / world && get64(s[wi].data + 8 + 88 * 2 + 80) == 0,
		   "world %u: WSRC records of 88 bytes: q's slice [0, +%u) of [1, 128, 128], v none",
		   world, H / world);
		free(ct);
	}
	is_int(plan_read_memory(a, alen, NULL, &q, &d), 0, "world %u: read back (%s)", world,
	       d.message);
	if (q != NULL) {
		if (!ok(world_equal(p, q, why, sizeof why), "world %u: every rank comes back", world))
			diag("    first difference: %s", why);
		plan_get_format_version(q, &major, &minor);
		ok(major == 1 && minor == 5, "world %u: the plan read remembers format %u.%u", world,
		   major, minor);
		const plan_t *last = plan_get_rank(q, world - 1);
		ok(last != NULL && plan_get_dist(last)->rank == world - 1 &&
		   plan_get_tensor(last, 1)->split.block[0].start == (int64_t)((world - 1) * (H / world)) &&
		   plan_get_weight_source(last, 0)->slice_start == (world - 1) * (H / world),
		   "world %u: rank %u holds the last %u rows of q", world, world - 1, H / world);
		is_int(plan_write_memory(q, &c, &clen, &d), 0, "world %u: the plan read is written",
		       world);
		ok(clen == alen && c != NULL && memcmp(a, c, alen) == 0,
		   "world %u: write(read(file)) is the file", world);
	} else {
		tap_skip(5, "not read");
	}
out:
	plan_free(p);
	plan_free(q);
	free(a);
	free(b);
	free(c);
}

/* The format's tensor-parallel vector, t/data/tp.plan, is the 2-rank
 * plan built here, byte for byte. */
static void test_vector(void)
{
	const char *src = getenv("BCG_SRC_DIR");
	char path[4096];
	size_t flen = 0, len = 0;
	unsigned char *f;
	void *data = NULL;
	plan_t *p = build(2);

	snprintf(path, sizeof path, "%s/t/data/tp.plan", src ? src : ".");
	f = sample_slurp(path, &flen);
	if (p != NULL && f != NULL && plan_write_memory(p, &data, &len, NULL) == 0) {
		ok(len == flen && memcmp(data, f, len) == 0,
		   "t/data/tp.plan is the 2-rank plan built here, byte for byte (%zu bytes)", flen);
		size_t clen;
		unsigned char *c = get_content(f, flen, &clen);
		struct section s[MAX_SECT];
		int n = split_content(c, s), nrank = 0;
		for (int i = 0; i < n; i++)
			nrank += memcmp(s[i].id, "RANK", 4) == 0;
		ok(n == 38 && nrank == 1 && memcmp(s[n - 2].id, "STRS", 4) == 0,
		   "t/data/tp.plan: 37 sections, STRS, then one RANK");
		free(c);
	} else {
		ok(0, "t/data/tp.plan is read and the plan built (%s)", path);
		tap_skip(1, "no vector");
	}
	free(data);
	free(f);
	plan_free(p);
}

/* A plan of one rank is written as before 1.5. */
static void test_world_one(void)
{
	static const struct { const char *file; plan_t *(*make)(void); unsigned minor; } v[] = {
		{ "vector.plan", sample_vector, 1 },
	};
	const char *src = getenv("BCG_SRC_DIR");
	char path[4096];

	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		plan_t *p = v[i].make();
		size_t flen = 0, len = 0;
		void *data = NULL;
		snprintf(path, sizeof path, "%s/t/data/%s", src ? src : ".", v[i].file);
		unsigned char *f = sample_slurp(path, &flen);
		struct plan_diag d = { 0 };
		if (p == NULL || f == NULL) {
			tap_skip(2, "no vector");
			plan_free(p);
			free(f);
			continue;
		}
		/* world 1, rank 0, set or not, is the plan of before */
		plan_set_dist(p, &(struct plan_dist){ 1, 0, 0, 0, 0 }, &d);
		is_int(plan_write_memory(p, &data, &len, &d), 0, "%s: written", v[i].file);
		ok(data != NULL && len == flen && memcmp(data, f, len) == 0,
		   "%s: a plan of world 1 is written byte for byte as the vector (format 1.%u)",
		   v[i].file, v[i].minor);
		free(data);
		free(f);
		plan_free(p);
	}
	{
		plan_t *p = sample_recorded(2);
		size_t flen = 0, len = 0;
		void *data = NULL;
		snprintf(path, sizeof path, "%s/t/data/recorded.plan", src ? src : ".");
		unsigned char *f = sample_slurp(path, &flen);
		if (p != NULL && f != NULL && plan_write_memory(p, &data, &len, NULL) == 0)
			ok(len == flen && memcmp(data, f, len) == 0,
			   "recorded.plan: a recorded plan of world 1 is written byte for byte (1.4)");
		else
			ok(0, "recorded.plan: built, read and written");
		free(data);
		free(f);
		plan_free(p);
	}
	/* A plan of world 1 has no DIST: it reads as world 1, rank 0. */
	{
		plan_t *p = sample_vector(), *q = NULL;
		void *data = NULL;
		size_t len = 0;
		if (p != NULL && plan_write_memory(p, &data, &len, NULL) == 0 &&
		    plan_read_memory(data, len, NULL, &q, NULL) == 0)
			ok(plan_get_dist(q)->world == 1 && plan_get_dist(q)->rank == 0 &&
			   plan_count_ranks(q) == 0 && plan_get_rank(q, 0) == q && plan_get_rank(q, 1) == NULL,
			   "a 1.1 file's plan is world 1, rank 0, no ranks attached");
		else
			ok(0, "the vector round-trips");
		free(data);
		plan_free(p);
		plan_free(q);
	}
	/* A plan of one rank whose tensor carries a script's split (start 0,
	 * len full) needs 1.5, and keeps it. */
	{
		struct opts o = { .world = 1, .bad_rank = PLAN_NONE, .nccl = -1 };
		plan_t *p = build_rank(&o, 0), *q = NULL;
		void *data = NULL;
		size_t len = 0;
		struct plan_diag d = { 0 };
		unsigned major = 0, minor = 0;
		int rc = p != NULL ? plan_write_memory(p, &data, &len, &d) : -1;
		is_int(rc, 0, "world 1 with splits: written (%s)", d.message);
		if (rc == 0 && plan_read_memory(data, len, NULL, &q, &d) == 0) {
			plan_get_format_version(q, &major, &minor);
			char why[256] = "";
			ok(minor == 5 && plan_get_dist(q)->world == 1 &&
			   plan_get_tensor(q, 1)->split.nblocks == 3 &&
			   plan_get_tensor(q, 1)->split.block[0].len == H &&
			   sample_plans_equal(p, q, why, sizeof why) && dist_equal(p, q, why, sizeof why),
			   "world 1 with splits: format 1.%u, the splits come back %s", minor, why);
		} else {
			ok(0, "world 1 with splits: read back (%s)", d.message);
		}
		free(data);
		plan_free(p);
		plan_free(q);
	}
}

/* ---------------------------------------------------------------------- */
/* The reader against crafted contents.                                    */

/* The 4-rank plan's content, taken apart into S (N sections). */
struct taken {
	unsigned char  *file;
	size_t          flen;
	unsigned char  *content;
	size_t          clen;
	struct section  s[MAX_SECT];
	int             n;
};

static int take_world(uint32_t world, struct taken *t)
{
	plan_t *p = build(world);
	void *data = NULL;

	memset(t, 0, sizeof *t);
	if (p == NULL || plan_write_memory(p, &data, &t->flen, NULL) != 0) {
		plan_free(p);
		return -1;
	}
	plan_free(p);
	t->file = data;
	t->content = get_content(t->file, t->flen, &t->clen);
	t->n = split_content(t->content, t->s);
	return 0;
}

static void free_taken(struct taken *t)
{
	free(t->file);
	free(t->content);
}

/* Section I of S (N), replaced by DATA of SIZE bytes: joined into a
 * content, read, WANT with SUBSTR. */
static void expect_replaced(const struct section *s, int n, int i, const unsigned char *data,
                            size_t size, int want, const char *substr, const char *what)
{
	struct section u[MAX_SECT];
	unsigned char *c;
	size_t clen;

	memcpy(u, s, (size_t)n * sizeof *u);
	if (i >= 0) {
		u[i].data = data;
		u[i].size = size;
	}
	c = join_content(u, n, &clen);
	expect_content(c, clen, want, substr, what);
	free(c);
}

/* A copy of a rank's content (one RANK section) with its DIST record's
 * world and rank set; *LEN its size. */
static unsigned char *rank_with_dist(const struct section *rank, uint32_t world, uint32_t r,
                                     size_t *len)
{
	struct section t[MAX_SECT];
	unsigned char *copy = malloc(rank->size), *c;
	int m, di;

	if (copy == NULL)
		abort();
	memcpy(copy, rank->data, rank->size);
	m = split_content(copy, t);
	di = find_sect(t, m, "DIST", 0);
	if (di < 0)
		abort();
	c = (unsigned char *)t[di].data;
	put32(c + 8, world);
	put32(c + 12, r);
	*len = rank->size;
	return copy;
}

static void test_reader(void)
{
	struct taken t;
	int r0, r1, r2, di;

	if (take_world(4, &t) != 0) {
		ok(0, "the 4-rank plan is written");
		return;
	}
	r0 = find_sect(t.s, t.n, "RANK", 0);
	r1 = find_sect(t.s, t.n, "RANK", 1);
	r2 = find_sect(t.s, t.n, "RANK", 2);
	di = find_sect(t.s, t.n, "DIST", 0);
	if (!ok(r0 >= 0 && r1 >= 0 && r2 >= 0 && di >= 0, "the 4-rank content has DIST and 3 RANKs")) {
		free_taken(&t);
		return;
	}
	expect_replaced(t.s, t.n, -1, NULL, 0, 0, "", "the content joined again reads");

	/* A nested plan truncated: its last 40 bytes (of its string table)
	 * cut off, the directory pointing past them. */
	expect_replaced(t.s, t.n, r1, t.s[r1].data, t.s[r1].size - 40, PLAN_ERR_CORRUPT,
	                "section RANK 1 (of 3): section STRS [",
	                "a RANK section cut short: its plan's sections run past it");
	expect_replaced(t.s, t.n, r0, t.s[r0].data, 4, PLAN_ERR_CORRUPT,
	                "section RANK 0 (of 3): 4 bytes cannot hold a section directory",
	                "a RANK section of 4 bytes");
	/* A nested plan corrupt: its directory claims 2000 sections. */
	{
		unsigned char *copy = malloc(t.s[r2].size);
		memcpy(copy, t.s[r2].data, t.s[r2].size);
		put32(copy, 2000);
		expect_replaced(t.s, t.n, r2, copy, t.s[r2].size, PLAN_ERR_CORRUPT,
		                "section RANK 2 (of 3): the directory lists 2000 sections, more than 1024",
		                "a RANK section whose directory is corrupt");
		/* a record of its TENS with a reserved byte set */
		struct section u[MAX_SECT];
		memcpy(copy, t.s[r2].data, t.s[r2].size);
		int m = split_content(copy, u), ti = find_sect(u, m, "TENS", 0);
		((unsigned char *)u[ti].data)[8 + 168 + 164] = 1;
		expect_replaced(t.s, t.n, r2, copy, t.s[r2].size, PLAN_ERR_RESERVED,
		                "section RANK 2 (of 3): section TENS record 1: Reserved is 0x00000001",
		                "a reserved field set inside a rank's plan");
		free(copy);
	}
	/* Ranks missing: one RANK section dropped. */
	{
		struct section u[MAX_SECT];
		unsigned char *c;
		size_t clen;
		int k = 0;
		for (int i = 0; i < t.n; i++)
			if (i != r1)
				u[k++] = t.s[i];
		c = join_content(u, k, &clen);
		expect_content(c, clen, PLAN_ERR_CORRUPT,
		               "a world of 4 has 2 RANK sections, not 3: one for each rank but 0 "
		               "(ranks are missing)", "a rank missing");
		free(c);
		k = 0;
		for (int i = 0; i < t.n; i++)
			if (memcmp(t.s[i].id, "RANK", 4) != 0)
				u[k++] = t.s[i];
		c = join_content(u, k, &clen);
		expect_content(c, clen, PLAN_ERR_CORRUPT, "a world of 4 has 0 RANK sections, not 3",
		               "every rank missing");
		free(c);
		/* one RANK too many: rank 3 twice */
		memcpy(u, t.s, (size_t)t.n * sizeof *u);
		u[t.n] = t.s[r2];
		c = join_content(u, t.n + 1, &clen);
		expect_content(c, clen, PLAN_ERR_CORRUPT, "a world of 4 has 4 RANK sections, not 3",
		               "a RANK section too many");
		free(c);
	}
	/* A rank held twice: RANK 2 holds rank 1 again. */
	expect_replaced(t.s, t.n, r1, t.s[r0].data, t.s[r0].size, PLAN_ERR_CORRUPT,
	                "section RANK 1 holds rank 1, as section RANK 0 does: a rank is held once",
	                "a rank held twice");
	/* Out of range: a RANK section holding rank 0. */
	{
		size_t len;
		unsigned char *c = rank_with_dist(&t.s[r1], 4, 0, &len);
		expect_replaced(t.s, t.n, r1, c, len, PLAN_ERR_CORRUPT,
		                "section RANK 1 (of 3): it holds rank 0 of a world of 4, which is the "
		                "file's own plan",
		                "a RANK section holding rank 0");
		free(c);
		/* rank 7 of a world of 4 is refused by the rank's own DIST */
		c = rank_with_dist(&t.s[r1], 4, 7, &len);
		expect_replaced(t.s, t.n, r1, c, len, PLAN_ERR_CORRUPT,
		                "section RANK 1 (of 3): section DIST record 0: rank 7 of a world of 4",
		                "a RANK section holding rank 7 of 4");
		free(c);
		/* world mismatch */
		c = rank_with_dist(&t.s[r1], 8, 2, &len);
		expect_replaced(t.s, t.n, r1, c, len, PLAN_ERR_CORRUPT,
		                "section RANK 1 holds rank 2 of a world of 8; the file's world is 4",
		                "a RANK section of another world");
		free(c);
	}
	/* Nesting: a rank's plan with a RANK section of its own. */
	{
		struct section u[MAX_SECT];
		unsigned char *inner, *c;
		size_t ilen, clen;
		int m = split_content(t.s[r1].data, u);
		u[m] = t.s[r2];
		inner = join_content(u, m + 1, &ilen);
		expect_replaced(t.s, t.n, r1, inner, ilen, PLAN_ERR_CORRUPT,
		                "section RANK 1 (of 3): the plan of rank 2 holds 1 RANK section: ranks "
		                "nest once, in rank 0's plan", "a RANK section inside a rank's plan");
		free(inner);
		/* and a rank plan as the file's plan */
		struct section v[MAX_SECT];
		m = split_content(t.s[r1].data, v);
		c = join_content(v, m, &clen);
		expect_content(c, clen, PLAN_ERR_CORRUPT, "the file's plan is rank 2 of a world of 4, "
		               "not rank 0", "a file whose plan is rank 2");
		free(c);
	}
	/* RANK sections in a plan of world 1 */
	{
		unsigned char dist[24];
		memcpy(dist, t.s[di].data, 24);
		put32(dist + 8, 1);
		expect_replaced(t.s, t.n, di, dist, 24, PLAN_ERR_CORRUPT,
		                "a world of 1 has 3 RANK sections, not 0", "RANK sections at world 1");
		put32(dist + 8, 4);
		put32(dist + 20, 1);
		expect_replaced(t.s, t.n, di, dist, 24, PLAN_ERR_RESERVED,
		                "section DIST record 0: reserved flags 0x00000001 are set",
		                "DIST flags set");
		put32(dist + 20, 0);
		put32(dist + 8, 0);
		expect_replaced(t.s, t.n, di, dist, 24, PLAN_ERR_CORRUPT,
		                "section DIST record 0: rank 0 of a world of 0", "a world of 0");
		/* two DIST records */
		unsigned char two[40] = { 0 };
		memcpy(two, t.s[di].data, 24);
		memcpy(two + 24, t.s[di].data + 8, 16);
		put32(two + 4, 2);
		expect_replaced(t.s, t.n, di, two, 40, PLAN_ERR_CORRUPT, "section DIST has 2 records, not 1",
		                "two DIST records");
	}
	/* DIST missing from a 1.5 file */
	{
		struct section u[MAX_SECT];
		unsigned char *c;
		size_t clen;
		int k = 0;
		for (int i = 0; i < t.n; i++)
			if (i != di)
				u[k++] = t.s[i];
		c = join_content(u, k, &clen);
		expect_content(c, clen, PLAN_ERR_CORRUPT, "section DIST is missing", "no DIST");
		free(c);
	}
	/* Reserved split fields of an unsplit tensor, and too many blocks. */
	{
		int ti = find_sect(t.s, t.n, "TENS", 0);
		unsigned char *tens = malloc(t.s[ti].size);
		memcpy(tens, t.s[ti].data, t.s[ti].size);
		put32(tens + 8 + 144, 1);      /* x: axis 1 but no blocks */
		expect_replaced(t.s, t.n, ti, tens, t.s[ti].size, PLAN_ERR_RESERVED,
		                "section TENS record 0: a tensor of no split blocks has split axis 1 "
		                "and unit 0, not 0 and 0", "an unsplit tensor with a split axis");
		memcpy(tens, t.s[ti].data, t.s[ti].size);
		put32(tens + 8 + 168 + 148, 9);   /* w_qkv: 9 blocks */
		expect_replaced(t.s, t.n, ti, tens, t.s[ti].size, PLAN_ERR_CORRUPT,
		                "section TENS record 1: Blocks [0, +9) is outside the 7 records of "
		                "section SBLK", "a split of more blocks than SBLK holds");
		free(tens);
	}
	free_taken(&t);
}

/* ---------------------------------------------------------------------- */
/* The validator.                                                          */

static void expect_invalid(plan_t *p, const char *substr, const char *what)
{
	struct plan_diag d = { 0 };
	int rc;

	if (p == NULL) {
		ok(0, "%s: built", what);
		return;
	}
	rc = plan_validate(p, &d);
	ok(rc == PLAN_ERR_INVALID && strstr(d.message, substr) != NULL, "%s: %s", what,
	   rc == 0 ? "valid" : d.message);
	if (rc != PLAN_ERR_INVALID || strstr(d.message, substr) == NULL)
		diag("    want \"%s\"", substr);
	plan_free(p);
}

/* The 2-rank plan with tensor TENSOR's split changed by EDIT (rank 1). */
static plan_t *with_split(uint32_t tensor, void (*edit)(struct plan_split *, struct plan_tensor *))
{
	struct opts o = { .world = 2, .bad_rank = PLAN_NONE, .nccl = -1 };
	plan_t *p = build_rank(&o, 0), *q = NULL, *r1 = build_rank(&o, 1);
	uint32_t i;

	if (p == NULL || r1 == NULL)
		goto fail;
	/* rebuild rank 1 tensor by tensor: the model has no setter for a
	 * split, so the edited tensor goes into a fresh clone */
	q = plan_new();
	if (q == NULL)
		goto fail;
	plan_set_meta(q, plan_get_meta(r1), NULL);
	plan_set_layout(q, plan_get_layout(r1), NULL);
	plan_set_dist(q, plan_get_dist(r1), NULL);
	for (i = 0; i < plan_count_dims(r1); i++)
		plan_add_dim(q, plan_get_dim(r1, i), NULL, NULL);
	for (i = 0; i < plan_count_vars(r1); i++)
		plan_add_var(q, plan_get_var(r1, i), NULL, NULL);
	for (i = 0; i < plan_count_tensors(r1); i++) {
		struct plan_tensor t = *plan_get_tensor(r1, i);
		if (i == tensor)
			edit(&t.split, &t);
		plan_add_tensor(q, &t, NULL, NULL);
	}
	for (i = 0; i < plan_count_ops(r1); i++)
		plan_add_op(q, plan_get_op(r1, i), NULL, NULL);
	for (i = 0; i < plan_count_weight_sources(r1); i++)
		plan_add_weight_source(q, plan_get_weight_source(r1, i), NULL, NULL);
	plan_add_variant(q, plan_get_variant(r1, 0), NULL, NULL);
	for (i = 0; i < plan_count_segments(r1); i++)
		plan_add_segment(q, plan_get_segment(r1, i), NULL, NULL);
	for (i = 0; i < plan_count_breakpoints(r1); i++)
		plan_add_breakpoint(q, plan_get_breakpoint(r1, i), NULL, NULL);
	for (i = 0; i < plan_count_dispatch(r1); i++)
		plan_add_dispatch(q, plan_get_dispatch(r1, i), NULL, NULL);
	plan_free(r1);
	if (plan_add_rank(p, q, NULL) != 0) {
		plan_free(p);
		return NULL;
	}
	return p;
fail:
	plan_free(p);
	plan_free(r1);
	plan_free(q);
	return NULL;
}

static void e_axis(struct plan_split *s, struct plan_tensor *t) { (void)t; s->axis = 2; }
static void e_many(struct plan_split *s, struct plan_tensor *t) { (void)t; s->nblocks = 9; }
static void e_unit(struct plan_split *s, struct plan_tensor *t) { (void)t; s->unit = 0; }
static void e_past(struct plan_split *s, struct plan_tensor *t)
{
	(void)t;
	s->block[0].start = 96;    /* [96, +64) of 128 */
}
static void e_sum(struct plan_split *s, struct plan_tensor *t)
{
	(void)t;
	s->block[1].len = 0;       /* k's share empty */
}
static void e_size(struct plan_split *s, struct plan_tensor *t)
{
	(void)s;
	t->shape[0].size = 160;    /* the shares add up to 128 */
}
static void e_units(struct plan_split *s, struct plan_tensor *t)
{
	(void)t;
	s->block[0].start = 48;    /* not a whole head */
}
static void e_token(struct plan_split *s, struct plan_tensor *t)
{
	/* qkv [T, QKV_r] split on axis 0, the token dim (T = 4) */
	s->axis = 0;
	s->unit = 1;
	s->nblocks = 1;
	s->block[0] = (struct plan_split_block){ 4, 0, 4 };
	(void)t;
}
static void e_none(struct plan_split *s, struct plan_tensor *t)
{
	(void)t;
	s->nblocks = 0;            /* rank 1's split disagrees with rank 0's */
}

static void test_validator(void)
{
	struct opts o;

	expect_invalid(with_split(1, e_axis), "rank 1: section TENS: tensor 1 (w_qkv): split axis 2 "
	               "of a tensor of rank 2", "split axis past the tensor's rank");
	expect_invalid(with_split(1, e_many), "tensor 1 (w_qkv): a split of 9 blocks, not 1..8",
	               "9 blocks");
	expect_invalid(with_split(1, e_unit), "tensor 1 (w_qkv): split unit 0, below 1", "unit 0");
	expect_invalid(with_split(1, e_past), "tensor 1 (w_qkv) block 0: [96, +64) is not a share "
	               "inside its 128 elements", "a share past its block");
	expect_invalid(with_split(1, e_sum), "tensor 1 (w_qkv) block 1: [0, +0) is not a share",
	               "an empty share");
	expect_invalid(with_split(1, e_size), "tensor 1 (w_qkv): axis 0 holds 160 elements, but "
	               "the split's shares add up to 128", "axis size not the sum of the shares");
	expect_invalid(with_split(1, e_units), "tensor 1 (w_qkv) block 0: [48, +64) of 128 is not "
	               "made of whole units of 32", "a share of part of a head");
	expect_invalid(with_split(2, e_token), "tensor 2 (qkv): split axis 0 is the token dim T, "
	               "which never splits", "the token dim split");
	expect_invalid(with_split(1, e_none), "rank 1: tensor 1 (w_qkv) is not rank 0's (w_qkv) in "
	               "name, dtype, role, rank or split", "rank 1 without rank 0's split");

	/* ranks missing */
	{
		plan_t *p = build_rank(&(struct opts){ .world = 4, .bad_rank = PLAN_NONE, .nccl = -1 }, 0);
		struct opts w4 = { .world = 4, .bad_rank = PLAN_NONE, .nccl = -1 };
		if (p != NULL) {
			plan_add_rank(p, build_rank(&w4, 1), NULL);
			plan_add_rank(p, build_rank(&w4, 3), NULL);
		}
		expect_invalid(p, "section RANK: rank 2 of a world of 4 is not attached",
		               "rank 2 of 4 missing");
		p = build_rank(&w4, 0);
		expect_invalid(p, "section RANK: rank 1 of a world of 4 is not attached",
		               "rank 0 of 4 alone");
	}
	/* the model refuses a rank twice, of another world, rank 0, nesting */
	{
		struct opts w2 = { .world = 2, .bad_rank = PLAN_NONE, .nccl = -1 };
		struct opts w4 = { .world = 4, .bad_rank = PLAN_NONE, .nccl = -1 };
		plan_t *p = build_world(&w2), *q;
		struct plan_diag d = { 0 };
		if (p != NULL) {
			is_int(plan_add_rank(p, build_rank(&w2, 1), &d), PLAN_ERR_INVALID,
			       "a rank attached twice is refused: %s", d.message);
			is_int(plan_add_rank(p, build_rank(&w4, 1), &d), PLAN_ERR_INVALID,
			       "a rank of another world is refused: %s", d.message);
			is_int(plan_add_rank(p, build_rank(&w2, 0), &d), PLAN_ERR_INVALID,
			       "rank 0 is not attached to rank 0: %s", d.message);
			q = build_rank(&w2, 1);
			is_int(plan_add_rank(q, build_rank(&w2, 0), &d), PLAN_ERR_INVALID,
			       "nothing attaches to rank 1: %s", d.message);
			plan_free(q);
			/* rank 0 of the 2-rank world attached to a 4-rank rank 0 */
			q = build_rank(&w4, 0);
			is_int(plan_add_rank(q, p, &d), PLAN_ERR_INVALID,
			       "a world is not attached as a rank: %s", d.message);
			plan_free(q);
		} else {
			tap_skip(5, "not built");
		}
		/* a world past what a directory can list */
		q = build_rank(&(struct opts){ .world = 989, .bad_rank = PLAN_NONE, .nccl = -1 }, 0);
		void *big = NULL;
		size_t blen = 0;
		is_int(q != NULL ? plan_write_memory(q, &big, &blen, &d) : -1, PLAN_ERR_LIMIT,
		       "a world of 989 is not written: %s", d.message);
		ok(strstr(d.message, "a plan file holds at most 988") != NULL,
		   "the message says the most a file holds (988)");
		free(big);
		plan_free(q);
		/* rank 1 alone is valid, and not a file */
		q = build_rank(&w2, 1);
		void *data = NULL;
		size_t len = 0;
		is_int(q != NULL ? plan_validate(q, &d) : -1, 0, "rank 1 alone is valid (%s)", d.message);
		is_int(q != NULL ? plan_write_memory(q, &data, &len, &d) : -1, PLAN_ERR_INVALID,
		       "rank 1 alone is not written: %s", d.message);
		free(data);
		plan_free(q);
	}
	/* the ranks' agreement */
	o = (struct opts){ .world = 4, .bad_rank = 2, .nccl = -1, .dim_h = 256 };
	expect_invalid(build_world(&o), "rank 2: dim 1 is H = 256, rank 0's H = 128",
	               "rank 2's H differs");
	o = (struct opts){ .world = 4, .bad_rank = 3, .nccl = -1, .var_limit = 31 };
	expect_invalid(build_world(&o), "rank 3: var 0 (pos) is not rank 0's (pos)",
	               "rank 3's var differs");
	o = (struct opts){ .world = 2, .bad_rank = 1, .nccl = -1, .requests = 2 };
	expect_invalid(build_world(&o), "rank 1: variant 0 has key 4 x2, rank 0's 4 x0",
	               "rank 1's variant key differs");
	o = (struct opts){ .world = 2, .bad_rank = 1, .nccl = -1, .extra_op = 1 };
	expect_invalid(build_world(&o), "rank 1: 4 ops, rank 0 has 3", "rank 1 has one op more");
	o = (struct opts){ .world = 4, .bad_rank = 1, .nccl = -1, .op_kind = "matmul_add" };
	expect_invalid(build_world(&o), "rank 1: op 1 is a matmul_add, rank 0's a matmul",
	               "rank 1's op of another kind");
	o = (struct opts){ .world = 2, .bad_rank = 1, .nccl = 22703 };
	expect_invalid(build_world(&o), "rank 1: NCCL version 22703, rank 0's is 22809",
	               "rank 1 of another NCCL");

	/* weight-source slices */
	{
		static const struct { struct plan_weight_source w; const char *msg, *what; } bad[] = {
			{ { .slice_outer = 1, .slice_full = 128, .slice_inner = 128, .slice_start = 96,
			    .slice_len = 64 }, "slice [96, +64) of [1, 128, 128] is empty or outside",
			  "a slice past the checkpoint tensor" },
			{ { .slice_outer = 1, .slice_full = 64, .slice_inner = 128, .slice_start = 0,
			    .slice_len = 64 }, "slice view [1, 64, 128] of 2-byte elements is not its "
			  "32768 bytes", "a slice view that is not the checkpoint tensor" },
			{ { .slice_outer = 0, .slice_full = 128, .slice_inner = 128, .slice_start = 0,
			    .slice_len = 64 }, "is empty or outside", "a slice of outer 0" },
			{ { .slice_start = 3 }, "has no slice (length 0) but a slice's outer, full, "
			  "inner or start", "a slice of length 0 with a start" },
			{ { .offset = 16384, .slice_outer = 1, .slice_full = 128, .slice_inner = 128,
			    .slice_start = 0, .slice_len = 128 }, "of 32768 bytes at offset 16384 overflows "
			  "tensor 1 (w_qkv) of 32768 bytes", "a slice landing past the tensor" },
		};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			struct opts w2 = { .world = 2, .bad_rank = PLAN_NONE, .nccl = -1 };
			plan_t *p = build_rank(&w2, 0);
			struct plan_weight_source w = *plan_get_weight_source(p, 0);
			w.slice_outer = bad[i].w.slice_outer;
			w.slice_full = bad[i].w.slice_full;
			w.slice_inner = bad[i].w.slice_inner;
			w.slice_start = bad[i].w.slice_start;
			w.slice_len = bad[i].w.slice_len;
			w.offset = bad[i].w.offset;
			/* the same source again, changed: the validator sees it */
			plan_add_weight_source(p, &w, NULL, NULL);
			plan_add_rank(p, build_rank(&w2, 1), NULL);
			expect_invalid(p, bad[i].msg, bad[i].what);
		}
	}
}

/* ---------------------------------------------------------------------- */
/* Diff.                                                                   */

static void test_diff(void)
{
	struct opts o2 = { .world = 2, .bad_rank = PLAN_NONE, .nccl = -1 };
	struct opts o4 = { .world = 4, .bad_rank = PLAN_NONE, .nccl = -1 };
	struct opts seed = { .world = 4, .bad_rank = 2, .nccl = -1, .seed = 9 };
	plan_t *a = build_world(&o2), *b = build_world(&o2), *c = build_world(&o4);
	plan_t *e = build_world(&seed);
	struct plan_diff *d;

	if (a == NULL || b == NULL || c == NULL || e == NULL) {
		ok(0, "diff: the plans are built");
		goto out;
	}
	d = plan_diff(a, b, 0);
	ok(d != NULL && plan_diff_count(d) == 0, "diff: a 2-rank plan and its twin do not differ");
	plan_diff_free(d);

	d = plan_diff(a, c, 0);
	const struct plan_diff_entry *x = d != NULL && plan_diff_length(d) > 0 ? plan_diff_get(d, 0) : NULL;
	ok(d != NULL && plan_diff_count(d) == 1 && x != NULL && x->area == PLAN_DIFF_META &&
	   x->change == PLAN_DIFF_CHANGED && strcmp(x->field, "world") == 0 &&
	   strcmp(x->a, "2") == 0 && strcmp(x->b, "4") == 0,
	   "diff: worlds of 2 and 4 differ in their world, 2 vs 4, and nothing else");
	plan_diff_free(d);

	/* rank 2's w_o has seed 9, not 7: one difference, naming rank 2 */
	d = plan_diff(c, e, 0);
	x = NULL;
	for (uint32_t i = 0; d != NULL && i < plan_diff_length(d); i++)
		if (plan_diff_get(d, i)->change != PLAN_DIFF_SAME)
			x = plan_diff_get(d, i);
	ok(d != NULL && plan_diff_count(d) == 1 && x != NULL && x->area == PLAN_DIFF_TENSORS &&
	   strcmp(x->subject, "rank 2: tensor w_o") == 0 && strcmp(x->field, "init") == 0 &&
	   strcmp(x->a, "random scale 0.5 seed 7") == 0 && strcmp(x->b, "random scale 0.5 seed 9") == 0,
	   "diff: one field of one rank differs, and the entry says rank 2: %s / %s: %s -> %s",
	   x ? x->subject : "-", x ? x->field : "-", x ? x->a : "-", x ? x->b : "-");
	/* the context entries of every rank's items name their rank */
	int named = d != NULL && plan_diff_length(d) > 1;
	for (uint32_t i = 0; d != NULL && i < plan_diff_length(d); i++) {
		const struct plan_diff_entry *y = plan_diff_get(d, i);
		if (strncmp(y->subject, "rank ", 5) != 0 ||
		    (y->field[0] == '\0' && y->a[0] != '\0' && strncmp(y->a, "rank ", 5) != 0))
			named = 0;
	}
	ok(named, "diff: every entry, context included, names its rank");
	plan_diff_free(d);
out:
	plan_free(a);
	plan_free(b);
	plan_free(c);
	plan_free(e);
}

/* ---------------------------------------------------------------------- */
/* Texts and dumps.                                                        */

/* The dump of P by FN into a string (malloc'd). */
static char *dump_text(const plan_t *p, int (*fn)(const plan_t *, FILE *,
                                                  const struct plan_dump_opts *,
                                                  struct plan_diag *))
{
	FILE *f = tmpfile();
	char *buf = NULL;
	long n;

	if (f == NULL || fn(p, f, NULL, NULL) != 0 || (n = ftell(f)) < 0 ||
	    (buf = calloc(1, (size_t)n + 1)) == NULL) {
		if (f != NULL)
			fclose(f);
		return NULL;
	}
	rewind(f);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void test_text(void)
{
	plan_t *p = build(4);
	char buf[256];

	if (!ok(p != NULL, "text: the 4-rank plan is built"))
		return;
	const plan_t *r3 = plan_get_rank(p, 3);
	is_str(plan_split_text(plan_get_tensor(r3, 1), buf, sizeof buf),
	       "axis 0 [96, 128) of 128 | [0, 32) of 32 | [0, 32) of 32, unit 32",
	       "text: rank 3's share of w_qkv");
	is_str(plan_split_text(plan_get_tensor(r3, 0), buf, sizeof buf), "-",
	       "text: x is not split");
	is_str(plan_slice_text(plan_get_weight_source(r3, 0), buf, sizeof buf),
	       "[96, 128) of [1, 128, 128]", "text: rank 3's slice of q_proj");
	is_str(plan_slice_text(plan_get_weight_source(r3, 2), buf, sizeof buf), "-",
	       "text: v_proj read whole");
	is_str(plan_dist_text(r3, buf, sizeof buf), "rank 3 of 4, NCCL 2.28.9", "text: rank 3");
	{
		plan_t *v = sample_vector();
		is_str(v != NULL ? plan_dist_text(v, buf, sizeof buf) : "", "1 rank",
		       "text: a plan of one GPU");
		plan_free(v);
	}
	char *dot = dump_text(p, plan_dump_dot);
	ok(dot != NULL && strstr(dot, "\\nhost, rank 0 of 4, NCCL 2.28.9\"];") != NULL,
	   "DOT: the graph's label names the rank and the world");
	free(dot);
	char *json = dump_text(p, plan_dump_json);
	ok(json != NULL && strstr(json, "\"dist\": {\n    \"world\": 4,\n    \"rank\": 0,\n"
	                                "    \"nccl_version\": 22809\n  }") != NULL,
	   "JSON: dist of rank 0");
	ok(json != NULL && strstr(json, "\"ranks\": [") != NULL &&
	   strstr(json, "\"rank\": 3,") != NULL && strstr(json, "\"start\": 96,") != NULL,
	   "JSON: ranks holds rank 3, and its share starting at row 96");
	ok(json != NULL && strstr(json, "\"split\": null") != NULL &&
	   strstr(json, "\"slice\": null") != NULL, "JSON: null split and slice where none");
	free(json);
	plan_free(p);
	/* a plan of one GPU has no dist, split, slice or ranks */
	p = sample_vector();
	json = p != NULL ? dump_text(p, plan_dump_json) : NULL;
	ok(json != NULL && strstr(json, "\"dist\"") == NULL && strstr(json, "\"split\"") == NULL &&
	   strstr(json, "\"ranks\"") == NULL, "JSON: none of them in a plan of one GPU");
	free(json);
	plan_free(p);
}

/* ---------------------------------------------------------------------- */

static int write_seeds(const char *dir)
{
	static const uint32_t worlds[] = { 2, 4 };
	char path[4096];

	for (size_t i = 0; i < sizeof worlds / sizeof worlds[0]; i++) {
		plan_t *p = build(worlds[i]);
		struct plan_diag d = { 0 };
		snprintf(path, sizeof path, "%s/tp-%u.plan", dir, worlds[i]);
		if (p == NULL || plan_write_file(p, path, &d) != 0) {
			fprintf(stderr, "plan-dist: %s: %s\n", path, d.message);
			plan_free(p);
			return 1;
		}
		plan_free(p);
	}
	return 0;
}

/* Format 1.8: a plan whose collectives ran in symmetric memory says so
 * in DIST (24 bytes), every rank; without it the file stays 1.5. */
static void test_nccl_mem(void)
{
	plan_t *p = build(2), *q = NULL;
	struct plan_diag d = { 0 };
	void *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0, ctlen = 0;
	unsigned major = 0, minor = 0;
	char why[256];

	if (!ok(p != NULL, "nccl_mem: built"))
		return;
	for (uint32_t r = 0; r < 2; r++) {
		plan_t *rp = r == 0 ? p : (plan_t *)plan_get_rank(p, r);
		struct plan_dist dd = *plan_get_dist(rp);
		dd.nccl_mem = PLAN_NCCL_MEM_SYMMETRIC;
		is_int(plan_set_dist(rp, &dd, &d), 0, "nccl_mem: rank %u symmetric (%s)", r,
		       d.message);
	}
	{
		struct plan_dist bad = *plan_get_dist(p);
		bad.nccl_mem = 2;
		ok(plan_set_dist(p, &bad, &d) == PLAN_ERR_INVALID && strstr(d.message, "NCCL memory 2"),
		   "nccl_mem 2 is invalid (%s)", d.message);
	}
	is_int(plan_validate(p, &d), 0, "nccl_mem: valid (%s)", d.message);
	is_int(plan_write_memory(p, &a, &alen, &d), 0, "nccl_mem: written (%s)", d.message);
	if (a == NULL)
		goto out;
	ok(get32((unsigned char *)a + 8) == (1u | 8u << 16), "nccl_mem: the header says 1.8");
	{
		unsigned char *ct = get_content(a, alen, &ctlen);
		struct section s[MAX_SECT];
		int n = split_content(ct, s), di = find_sect(s, n, "DIST", 0);
		ok(di >= 0 && get32(s[di].data) == 24 && get32(s[di].data + 8 + 16) == 1 &&
		   get32(s[di].data + 8 + 20) == 0,
		   "nccl_mem: DIST records of 24 bytes, Nccl_Mem 1, Reserved 0");
		free(ct);
	}
	is_int(plan_read_memory(a, alen, NULL, &q, &d), 0, "nccl_mem: read back (%s)", d.message);
	if (q != NULL) {
		if (!ok(world_equal(p, q, why, sizeof why), "nccl_mem: every rank comes back"))
			diag("    first difference: %s", why);
		plan_get_format_version(q, &major, &minor);
		ok(major == 1 && minor == 8, "nccl_mem: read as format %u.%u", major, minor);
		ok(plan_get_rank(q, 1) != NULL &&
		   plan_get_dist(plan_get_rank(q, 1))->nccl_mem == PLAN_NCCL_MEM_SYMMETRIC,
		   "nccl_mem: rank 1's plan says symmetric");
		is_int(plan_write_memory(q, &b, &blen, &d), 0, "nccl_mem: the plan read is written");
		ok(blen == alen && b != NULL && memcmp(a, b, alen) == 0,
		   "nccl_mem: write(read(file)) is the file");
	} else {
		tap_skip(4, "not read");
	}
	{
		/* rank 1 default, rank 0 symmetric: the ranks disagree */
		plan_t *rp = (plan_t *)plan_get_rank(p, 1);
		struct plan_dist dd = *plan_get_dist(rp);
		dd.nccl_mem = PLAN_NCCL_MEM_DEFAULT;
		(void)plan_set_dist(rp, &dd, NULL);
		ok(plan_validate(p, &d) != 0 && strstr(d.message, "symmetric") != NULL,
		   "nccl_mem: a rank in default memory, rank 0 in symmetric: invalid (%s)",
		   d.message);
	}
out:
	plan_free(p);
	plan_free(q);
	free(a);
	free(b);
}

/* Each item's start offsets in A and B are the same, rank by rank. */
static int offsets_equal(const plan_t *a, const plan_t *b, char *why, size_t len)
{
	for (uint32_t r = 0; r < plan_get_dist(a)->world; r++) {
		const plan_t *x = plan_get_rank(a, r), *y = plan_get_rank(b, r);
		for (uint32_t v = 0; x != NULL && y != NULL && v < plan_count_variants(x); v++) {
			const struct plan_variant *vx = plan_get_variant(x, v), *vy = plan_get_variant(y, v);
			if (vy == NULL || vx->nitems != vy->nitems) {
				snprintf(why, len, "rank %u variant %u: the items differ", r, v);
				return 0;
			}
			for (uint32_t k = 0; k < vx->nitems; k++) {
				uint64_t s0 = 1, h0 = 1, s1 = 2, h1 = 2;
				plan_item_offsets(x, &vx->items[k], &s0, &h0);
				plan_item_offsets(y, &vy->items[k], &s1, &h1);
				if (s0 != s1 || h0 != h1) {
					snprintf(why, len, "rank %u variant %u item %u: offsets %llu/%llu, "
					         "read back %llu/%llu", r, v, k, (unsigned long long)s0,
					         (unsigned long long)h0, (unsigned long long)s1,
					         (unsigned long long)h1);
					return 0;
				}
			}
		}
	}
	return 1;
}

/* Both: a recorded plan of two ranks whose items have start offsets
 * (1.7) and whose collectives ran in symmetric memory (1.8) is written
 * as 1.8, with 1.7's SREC and BLCH (24 and 32 bytes) and 1.8's DIST (24),
 * and reads back with both. The record layouts are plan-format.md's. */
static void test_nccl_mem_offsets(void)
{
	const struct sample_rec_opts o = { .layers = 2, .offsets = 1 };
	plan_t *p = sample_recorded_ex(&o), *p1 = sample_recorded_ex(&o), *q = NULL;
	struct plan_diag d = { 0 };
	void *a = NULL, *b = NULL;
	size_t alen = 0, blen = 0, ctlen = 0;
	unsigned major = 0, minor = 0;
	char why[256] = "";

	if (!ok(p != NULL && p1 != NULL, "both: the paced sample built, twice")) {
		plan_free(p1);
		goto out;
	}
	is_int(plan_set_dist(p, &(struct plan_dist){ 2, 0, 22809, 0, PLAN_NCCL_MEM_SYMMETRIC }, &d),
	       0, "both: rank 0 of 2, symmetric (%s)", d.message);
	is_int(plan_set_dist(p1, &(struct plan_dist){ 2, 1, 22809, 0, PLAN_NCCL_MEM_SYMMETRIC }, &d),
	       0, "both: rank 1 of 2, symmetric (%s)", d.message);
	/* P owns P1 from here, also when this fails */
	if (plan_add_rank(p, p1, &d) != 0) {
		ok(0, "both: rank 1 attached (%s)", d.message);
		goto out;
	}
	is_int(plan_validate(p, &d), 0, "both: valid (%s)", d.message);
	is_int(plan_write_memory(p, &a, &alen, &d), 0, "both: written (%s)", d.message);
	if (a == NULL)
		goto out;
	ok(get32((unsigned char *)a + 8) == (1u | 8u << 16), "both: the header says 1.8");
	{
		unsigned char *ct = get_content(a, alen, &ctlen);
		struct section s[MAX_SECT];
		int n = split_content(ct, s);
		int di = find_sect(s, n, "DIST", 0), si = find_sect(s, n, "SREC", 0),
		    bi = find_sect(s, n, "BLCH", 0), ri = find_sect(s, n, "RANK", 0);
		/* decode_step: memcpy break, segment 0 (+15 us, launched +11 us),
		 * cublasLt break (+730 us, +26 us): SREC record 0, BLCH record 1 */
		ok(di >= 0 && get32(s[di].data) == 24 && get32(s[di].data + 8) == 2 &&
		   get32(s[di].data + 8 + 16) == 1 && get32(s[di].data + 8 + 20) == 0,
		   "both: DIST of 24 bytes, world 2, Nccl_Mem 1, Reserved 0");
		ok(si >= 0 && get32(s[si].data) == 24 && get64(s[si].data + 8 + 8) == 15000 &&
		   get64(s[si].data + 8 + 16) == 11000,
		   "both: SREC records of 24 bytes, segment 0 at +15000 ns, launched +11000 ns");
		ok(bi >= 0 && get32(s[bi].data) == 32 && get64(s[bi].data + 8 + 32 + 16) == 730000 &&
		   get64(s[bi].data + 8 + 32 + 24) == 26000,
		   "both: BLCH records of 32 bytes, cublasLt at +730000 ns, launched +26000 ns");
		ok(ri >= 0 && find_sect(s, n, "RANK", 1) < 0, "both: one RANK section");
		free(ct);
	}
	is_int(plan_read_memory(a, alen, NULL, &q, &d), 0, "both: read back (%s)", d.message);
	if (q != NULL) {
		plan_get_format_version(q, &major, &minor);
		ok(major == 1 && minor == 8, "both: read as format %u.%u", major, minor);
		if (!ok(world_equal(p, q, why, sizeof why), "both: every rank comes back"))
			diag("    first difference: %s", why);
		if (!ok(offsets_equal(p, q, why, sizeof why), "both: every rank's offsets come back"))
			diag("    first difference: %s", why);
		ok(plan_get_rank(q, 1) != NULL &&
		   plan_get_dist(plan_get_rank(q, 1))->nccl_mem == PLAN_NCCL_MEM_SYMMETRIC &&
		   plan_variant_offsets(plan_get_rank(q, 1), 0, NULL) ==
		   (PLAN_OFFSETS_START | PLAN_OFFSETS_ISSUE),
		   "both: rank 1 says symmetric and has its offsets");
		is_int(plan_write_memory(q, &b, &blen, &d), 0, "both: the plan read is written");
		ok(blen == alen && b != NULL && memcmp(a, b, alen) == 0,
		   "both: write(read(file)) is the file");
	} else {
		tap_skip(6, "not read");
	}
out:
	plan_free(p);
	plan_free(q);
	free(a);
	free(b);
}

/* A RANK section's content is read at its file's version: a world whose
 * ranks differ in what they need (start offsets on one rank only) is
 * written with every rank at the version the file says (1.7), and
 * reads back. */
static void test_ranks_one_version(void)
{
	for (int first = 0; first < 2; first++) {
		plan_t *p = sample_recorded_ex(&(struct sample_rec_opts){ .layers = 2,
		                                                          .offsets = first == 0 });
		plan_t *p1 = sample_recorded_ex(&(struct sample_rec_opts){ .layers = 2,
		                                                           .offsets = first == 1 });
		const char *who = first == 0 ? "rank 0" : "rank 1";
		struct plan_diag d = { 0 };
		void *a = NULL, *b = NULL;
		size_t alen = 0, blen = 0;
		plan_t *q = NULL;
		unsigned major = 0, minor = 0;
		char why[256] = "";

		int rc = p != NULL && p1 != NULL ? 0 : -1;

		if (rc == 0)
			rc = plan_set_dist(p, &(struct plan_dist){ 2, 0, 22809, 0, 0 }, &d);
		if (rc == 0)
			rc = plan_set_dist(p1, &(struct plan_dist){ 2, 1, 22809, 0, 0 }, &d);
		if (rc == 0) {
			rc = plan_add_rank(p, p1, &d);
			p1 = NULL;   /* P owns it, also when that failed */
		}
		if (rc != 0) {
			ok(0, "offsets on %s only: built (%s)", who, d.message);
			plan_free(p1);
			plan_free(p);
			continue;
		}
		is_int(plan_write_memory(p, &a, &alen, &d), 0, "offsets on %s only: written (%s)", who,
		       d.message);
		ok(a != NULL && get32((unsigned char *)a + 8) == (1u | 7u << 16),
		   "offsets on %s only: the header says 1.7", who);
		is_int(a != NULL ? plan_read_memory(a, alen, NULL, &q, &d) : -1, 0,
		       "offsets on %s only: read back (%s)", who, d.message);
		if (q != NULL) {
			plan_get_format_version(q, &major, &minor);
			if (!ok(minor == 7 && world_equal(p, q, why, sizeof why) &&
			        offsets_equal(p, q, why, sizeof why),
			        "offsets on %s only: every rank comes back, offsets and all", who))
				diag("    format 1.%u; first difference: %s", minor, why);
			plan_write_memory(q, &b, &blen, NULL);
			ok(b != NULL && blen == alen && memcmp(a, b, alen) == 0,
			   "offsets on %s only: write(read(file)) is the file", who);
		} else {
			tap_skip(2, "not read");
		}
		free(a);
		free(b);
		plan_free(p);
		plan_free(q);
	}
}

/* Format 1.9: a choice confirmed in the step on rank 1 alone makes the
 * file 1.9, rank 0's content too written at that version: CHOI records of
 * 32 bytes in both, the mark in rank 1's Tune_Flags. */
static void test_step_rank(void)
{
	plan_t *p = build(2), *q = NULL;
	plan_t *r1 = p != NULL ? (plan_t *)plan_get_rank(p, 1) : NULL;
	struct plan_candidate two[] = { { "mma", 2.5 }, { "cublas", 2.25 } };
	const uint32_t step = PLAN_CHOICE_TUNED | PLAN_CHOICE_STEP;
	struct plan_diag d = { 0 };
	void *a = NULL;
	size_t alen = 0, ctlen = 0;
	unsigned major = 0, minor = 0;
	char why[256] = "";

	if (!ok(r1 != NULL && plan_add_choice(r1, &(struct plan_choice){ 0, 0, "mma", step, 2, two },
	                                      NULL, &d) == 0,
	        "step on rank 1: built (%s)", d.message))
		goto out;
	is_int(plan_write_memory(p, &a, &alen, &d), 0, "step on rank 1: written (%s)", d.message);
	ok(a != NULL && get32((unsigned char *)a + 8) == (1u | 9u << 16),
	   "step on rank 1: the header says 1.9");
	if (a != NULL) {
		unsigned char *ct = get_content(a, alen, &ctlen);
		struct section s[MAX_SECT], t[MAX_SECT];
		int n = split_content(ct, s), ci = find_sect(s, n, "CHOI", 0);
		int ri = find_sect(s, n, "RANK", 0), m = ri >= 0 ? split_content(s[ri].data, t) : 0;
		int cj = find_sect(t, m, "CHOI", 0);
		ok(ci >= 0 && get32(s[ci].data) == 32 && get32(s[ci].data + 4) == 0 && cj >= 0 &&
		   get32(t[cj].data) == 32 && get32(t[cj].data + 4) == 1 &&
		   get32(t[cj].data + 8 + 12) == PLAN_CHOICE_TUNED &&
		   get32(t[cj].data + 8 + 24) == 1 && get32(t[cj].data + 8 + 28) == 0,
		   "step on rank 1: CHOI records of 32 bytes on both ranks; rank 1's Choice_Flags "
		   "0x1 (Tuned), Tune_Flags 0x1 (Step), Reserved 0");
		free(ct);
	}
	is_int(a != NULL ? plan_read_memory(a, alen, NULL, &q, &d) : -1, 0,
	       "step on rank 1: read back (%s)", d.message);
	if (q != NULL) {
		const struct plan_choice *c = plan_find_choice(plan_get_rank(q, 1), 0, 0);
		plan_get_format_version(q, &major, &minor);
		if (!ok(minor == 9 && world_equal(p, q, why, sizeof why) && c != NULL &&
		        c->flags == step && strcmp(c->impl, "mma") == 0 &&
		        plan_count_choices(q) == 0, "step on rank 1: every rank comes back, rank 1's "
		        "choice in the step"))
			diag("    format 1.%u; first difference: %s", minor, why);
	} else {
		tap_skip(1, "not read");
	}
out:
	free(a);
	plan_free(p);
	plan_free(q);
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--write") == 0)
		return write_seeds(argv[2]);
	round_trip(2);
	round_trip(4);
	test_world_one();
	test_vector();
	test_reader();
	test_validator();
	test_diff();
	test_text();
	test_nccl_mem();
	test_nccl_mem_offsets();
	test_ranks_one_version();
	test_step_rank();
	return tap_done();
}
