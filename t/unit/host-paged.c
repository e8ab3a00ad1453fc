/*
 * host-paged.c - unit tests of the paged kinds' host references
 * (bcgtool/ops/host-paged.c): paged_kv_write, rope_paged_kv_write and
 * paged_attention.
 *
 * paged_attention runs a mixed batch -- decode requests, a prefill chunk,
 * a padded request and padded rows -- with grouped-query heads, against a
 * computation written here in double from the stored inputs, which walks
 * each request's positions through its block table on its own. NaN is
 * planted in every cache block that no request owns and in the table
 * entries past each request's blocks point at such blocks or outside the
 * cache: a kernel that reads one of them, or that lets a padded row pick
 * one up, gives NaN where a finite value (zeros for padding) is wanted.
 * The writes are checked to touch no row but their slots' (the rest of
 * the cache keeps its poison bit for bit), and the fused write against
 * rope_kv_write, which t/unit/host-ops.c holds to a double reference.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops/host-kernels.h"
#include "ops/host.h"
#include "ops/numeric.h"
#include "serve/batch.h"
#include "tap.h"
#include "host-tensor.h"

/* As t/unit/host-ops.c: one rounding per operation in f32, one more on
 * store in f16 and bf16. */
static double dt_tol(int dt)
{
	return dt == PLAN_DTYPE_F16 ? 2e-3 : dt == PLAN_DTYPE_BF16 ? 1e-2 : 1e-5;
}

static struct op_tensor tensor(int dt, int rank, int64_t a, int64_t b, int64_t c)
{
	return tensor_new(dt, rank, (const int64_t[]){ a, b, c });
}

static void fill_random(const struct op_tensor *t, uint64_t seed, double scale)
{
	for (int64_t i = 0; i < numel(t); i++)
		set(t, i, (double)bcg_uniform(seed, (uint64_t)i) * scale);
}

static void fill(const struct op_tensor *t, double v)
{
	for (int64_t i = 0; i < numel(t); i++)
		set(t, i, v);
}

static void put_i32(const struct op_tensor *t, const int32_t *v)
{
	memcpy(t->data, v, (size_t)numel(t) * sizeof *v);
}

/* --- paged attention ----------------------------------------------------- */

/*
 * The batch: NB = 12 blocks of BS = 4, a table of MB = 4 per request, R =
 * 4 requests, T = 7 rows, heads 4 over 2 kv heads of 8.
 *   request 0: decode, seq_len 7, blocks 5, 2
 *   request 1: a prefill chunk of 3 rows after 7 cached, seq_len 10,
 *              blocks 9, 0, 7
 *   request 2: decode, seq_len 16 (its whole table), blocks 3, 11, 1, 10
 *   request 3: padding: seq_len 0, no rows
 *   rows 5 and 6: padding, in no request
 * Blocks 4, 6 and 8 belong to nobody and hold NaN; so do the positions
 * of owned blocks past their request's length. Table entries past each
 * request's blocks are a NaN block or an id outside the cache.
 */
enum { NB = 12, BS = 4, MB = 4, R = 4, T = 7, H = 4, KVH = 2, HD = 8 };

static const int32_t batch_table[R * MB] = {
	5, 2, 4, 99,
	9, 0, 7, -1,
	3, 11, 1, 10,
	6, 8, 4, 1000,
};
static const int32_t batch_seq[R] = { 7, 10, 16, 0 };
static const int32_t batch_qs[R + 1] = { 0, 1, 4, 5, 5 };

/* The caches: owned positions random, everything else NaN. */
static void fill_caches(const struct op_tensor *k, const struct op_tensor *v)
{
	const int64_t W = KVH * HD;

	fill(k, NAN);
	fill(v, NAN);
	for (int rq = 0; rq < R; rq++)
		for (int64_t j = 0; j < batch_seq[rq]; j++) {
			int64_t row = (int64_t)batch_table[rq * MB + j / BS] * BS + j % BS;
			for (int64_t c = 0; c < W; c++) {
				set(k, row * W + c, (double)bcg_uniform(71, (uint64_t)(row * W + c)) * 2.0);
				set(v, row * W + c, (double)bcg_uniform(72, (uint64_t)(row * W + c)) * 3.0);
			}
		}
}

/* The answer in double: row t of request rq at index i attends to
 * positions 0 .. seq - n + i, each found through the table. */
static void paged_reference(const struct op_tensor *q, const struct op_tensor *k,
                            const struct op_tensor *v, double *want)
{
	const int64_t W = KVH * HD;
	const double scale = 1.0 / sqrt((double)HD);

	for (int64_t t = 0; t < T; t++)
		for (int64_t c = 0; c < H * HD; c++)
			want[t * H * HD + c] = 0.0;    /* padding rows: zeros */
	for (int rq = 0; rq < R; rq++) {
		int64_t n = batch_qs[rq + 1] - batch_qs[rq];
		for (int64_t i = 0; i < n; i++) {
			int64_t t = batch_qs[rq] + i, len = batch_seq[rq] - n + 1 + i;
			for (int64_t h = 0; h < H; h++) {
				int64_t g = h / (H / KVH);
				double s[MB * BS], mx = -INFINITY, sum = 0.0;
				for (int64_t j = 0; j < len; j++) {
					int64_t row = (int64_t)batch_table[rq * MB + j / BS] * BS + j % BS;
					double dot = 0.0;
					for (int64_t d = 0; d < HD; d++)
						dot += at(q, t * H * HD + h * HD + d) * at(k, row * W + g * HD + d);
					s[j] = dot * scale;
					mx = s[j] > mx ? s[j] : mx;
				}
				for (int64_t j = 0; j < len; j++)
					sum += exp(s[j] - mx);
				for (int64_t d = 0; d < HD; d++) {
					double acc = 0.0;
					for (int64_t j = 0; j < len; j++) {
						int64_t row = (int64_t)batch_table[rq * MB + j / BS] * BS + j % BS;
						acc += exp(s[j] - mx) * at(v, row * W + g * HD + d);
					}
					want[t * H * HD + h * HD + d] = acc / sum;
				}
			}
		}
	}
}

static struct op_call paged_call(int dt, struct op_tensor *tab, struct op_tensor *seq,
                                 struct op_tensor *qs)
{
	struct op_call c = { .nin = 6, .nout = 1 };

	c.in[PATTN_Q] = tensor(dt, 2, T, H * HD, 0);
	c.in[PATTN_K] = tensor(dt, 3, NB, BS, KVH * HD);
	c.in[PATTN_V] = tensor(dt, 3, NB, BS, KVH * HD);
	*tab = tensor(PLAN_DTYPE_I32, 2, R, MB, 0);
	*seq = tensor(PLAN_DTYPE_I32, 1, R, 0, 0);
	*qs = tensor(PLAN_DTYPE_I32, 1, R + 1, 0, 0);
	put_i32(tab, batch_table);
	put_i32(seq, batch_seq);
	put_i32(qs, batch_qs);
	c.in[PATTN_TABLE] = *tab;
	c.in[PATTN_SEQ_LENS] = *seq;
	c.in[PATTN_QUERY_START] = *qs;
	c.out[0] = tensor(dt, 2, T, H * HD, 0);
	c.attr[PATTN_HEADS].i = H;
	c.attr[PATTN_KV_HEADS].i = KVH;
	c.attr[PATTN_HEAD_DIM].i = HD;
	c.attr[PATTN_SCALE].f = 0.0;
	return c;
}

static void paged_free(struct op_call *c)
{
	for (int i = 0; i < c->nin; i++)
		free(c->in[i].data);
	free(c->out[0].data);
}

static void test_paged_attention(void)
{
	for (int di = 0; di < 3; di++) {
		int dt = float_dtypes[di];
		struct op_tensor tab, seq, qs;
		struct op_call c = paged_call(dt, &tab, &seq, &qs);
		double want[T * H * HD];
		long bad = 0, nonfinite = 0, padding = 0;

		fill_random(&c.in[PATTN_Q], 70, 2.0);
		fill_caches(&c.in[PATTN_K], &c.in[PATTN_V]);
		paged_reference(&c.in[PATTN_Q], &c.in[PATTN_K], &c.in[PATTN_V], want);
		fill(&c.out[0], NAN);
		host_kernel(OP_PAGED_ATTENTION)(&c);
		for (int64_t i = 0; i < T * H * HD; i++) {
			double g = at(&c.out[0], i);
			double mag = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
			if (!isfinite(g))
				nonfinite++;
			if (!(fabs(g - want[i]) <= dt_tol(dt) * mag)) {
				if (bad++ < 3)
					diag("element %lld: got %.9g, want %.9g", (long long)i, g, want[i]);
			}
			if (i >= 5 * H * HD && g != 0.0)
				padding++;
		}
		ok(bad == 0, "paged_attention %s: a decode, a prefill chunk and padding, GQA, "
		   "match the double reference", dt_name(dt));
		ok(nonfinite == 0, "paged_attention %s: no NaN from the free blocks reaches the "
		   "output", dt_name(dt));
		ok(padding == 0, "paged_attention %s: the padded rows are zeros", dt_name(dt));

		/* The graph-safe form reads the same operands: the same bytes. */
		struct op_tensor first = c.out[0];
		c.out[0] = tensor(dt, 2, T, H * HD, 0);
		fill(&c.out[0], NAN);
		c.graph_safe = 1;
		host_kernel(OP_PAGED_ATTENTION)(&c);
		ok(memcmp(first.data, c.out[0].data, (size_t)(T * H * HD) * dt_size(dt)) == 0,
		   "paged_attention %s: the graph-safe form gives the same bytes", dt_name(dt));
		free(first.data);
		paged_free(&c);
	}
}

/* Metadata that points outside everything: no read outside the operands
 * (the sanitizer builds watch), and zeros where nothing can be attended. */
static void test_paged_attention_bounds(void)
{
	struct op_tensor tab, seq, qs;
	struct op_call c = paged_call(PLAN_DTYPE_F32, &tab, &seq, &qs);
	static const int32_t wild_table[R * MB] = {
		-5, 12, 1 << 30, -1,   0, 0, 0, 0,   0, 0, 0, 0,   0, 0, 0, 0,
	};
	/* Request 0: all its blocks outside the cache, a length past MB * BS;
	 * request 1: a negative length; request 2: rows past T; request 3:
	 * a start below 0. */
	static const int32_t wild_seq[R] = { 1000, -3, 4, 2 };
	static const int32_t wild_qs[R + 1] = { 0, 2, 4, 9, -4 };
	long nonzero = 0;

	put_i32(&tab, wild_table);
	put_i32(&seq, wild_seq);
	put_i32(&qs, wild_qs);
	fill_random(&c.in[PATTN_Q], 73, 1.0);
	fill(&c.in[PATTN_K], 1.0);
	fill(&c.in[PATTN_V], 1.0);
	fill(&c.out[0], NAN);
	host_kernel(OP_PAGED_ATTENTION)(&c);
	/* Rows 0-1 (no valid block) and 2-3 (no length) are zeros; rows 4-6
	 * belong to request 2 (rows 4..8 clipped at T) and see block 0's ones:
	 * its rows attend to 4 - 5 + 1 + i = i positions, row 4 to none. */
	for (int64_t i = 0; i < 5 * H * HD; i++)
		if (at(&c.out[0], i) != 0.0)
			nonzero++;
	ok(nonzero == 0, "paged_attention: rows with no valid block or no length are zeros");
	ok(at(&c.out[0], 5 * H * HD) == 1.0 && at(&c.out[0], 7 * H * HD - 1) == 1.0,
	   "paged_attention: rows cut at T still attend to their valid positions");
	paged_free(&c);
}

/* --- the writes ---------------------------------------------------------- */

static void test_paged_kv_write(void)
{
	for (int di = 0; di < 3; di++) {
		int dt = float_dtypes[di];
		const int64_t W = 6;
		struct op_tensor x = tensor(dt, 2, 5, W, 0), slots = tensor(PLAN_DTYPE_I32, 1, 5, 0, 0);
		struct op_tensor cache = tensor(dt, 3, 3, 4, W), before;
		static const int32_t s[5] = { 7, SERVE_SLOT_PAD, 0, 12, 11 };
		struct op_call c = { .nin = 2, .nout = 1 };
		long bad = 0;

		fill_random(&x, 80, 1.0);
		put_i32(&slots, s);
		fill(&cache, NAN);
		before = tensor(dt, 3, 3, 4, W);
		memcpy(before.data, cache.data, (size_t)numel(&cache) * dt_size(dt));
		c.in[0] = x;
		c.in[1] = slots;
		c.out[0] = cache;
		host_kernel(OP_PAGED_KV_WRITE)(&c);
		for (int64_t row = 0; row < 12; row++) {
			int64_t src = row == 7 ? 0 : row == 0 ? 2 : row == 11 ? 4 : -1;
			size_t es = dt_size(dt);
			const char *got = (const char *)cache.data + (size_t)(row * W) * es;
			const char *want = src >= 0 ? (const char *)x.data + (size_t)(src * W) * es
			                            : (const char *)before.data + (size_t)(row * W) * es;
			if (memcmp(got, want, (size_t)W * es) != 0)
				bad++;
		}
		ok(bad == 0, "paged_kv_write %s: rows at their slots, the pad slot and a slot past "
		   "the cache write nothing", dt_name(dt));
		free(x.data);
		free(slots.data);
		free(cache.data);
		free(before.data);
	}
}

/* rope_paged_kv_write against rope_kv_write: the same q, and each cache
 * row rope_kv_write puts at pos[t] found at slots[t] instead. */
static void test_rope_paged_kv_write(void)
{
	enum { RT = 4, RH = 2, RKV = 1, RD = 6, RW = RKV * RD, RC = (RH + 2 * RKV) * RD };
	for (int di = 0; di < 3; di++) {
		int dt = float_dtypes[di];
		struct op_tensor qkv = tensor(dt, 2, RT, RC, 0), pos = tensor(PLAN_DTYPE_I32, 1, RT, 0, 0);
		struct op_tensor slots = tensor(PLAN_DTYPE_I32, 1, RT, 0, 0);
		struct op_tensor q1 = tensor(dt, 2, RT, RH * RD, 0), q2 = tensor(dt, 2, RT, RH * RD, 0);
		struct op_tensor k1 = tensor(dt, 2, 16, RW, 0), v1 = tensor(dt, 2, 16, RW, 0);
		struct op_tensor k2 = tensor(dt, 3, 3, 2, RW), v2 = tensor(dt, 3, 3, 2, RW);
		static const int32_t p[RT] = { 9, 3, 14, 0 }, s[RT] = { 5, 0, SERVE_SLOT_PAD, 3 };
		struct op_call a = { .nin = 2, .nout = 3 }, b = { .nin = 3, .nout = 3 };
		size_t es = dt_size(dt), rb = (size_t)RW * es;
		long bad = 0;

		fill_random(&qkv, 90, 2.0);
		put_i32(&pos, p);
		put_i32(&slots, s);
		fill(&k2, NAN);
		fill(&v2, NAN);
		a.in[0] = qkv;
		a.in[1] = pos;
		a.out[0] = q1;
		a.out[1] = k1;
		a.out[2] = v1;
		b = a;
		b.nin = 3;
		b.in[2] = slots;
		b.out[0] = q2;
		b.out[1] = k2;
		b.out[2] = v2;
		a.attr[RKV_HEADS].i = b.attr[RKV_HEADS].i = RH;
		a.attr[RKV_KV_HEADS].i = b.attr[RKV_KV_HEADS].i = RKV;
		a.attr[RKV_HEAD_DIM].i = b.attr[RKV_HEAD_DIM].i = RD;
		a.attr[RKV_THETA].f = b.attr[RKV_THETA].f = 10000.0;
		host_kernel(OP_ROPE_KV_WRITE)(&a);
		host_kernel(OP_ROPE_PAGED_KV_WRITE)(&b);
		ok(memcmp(q1.data, q2.data, (size_t)(RT * RH * RD) * es) == 0,
		   "rope_paged_kv_write %s: q as rope_kv_write's", dt_name(dt));
		for (int64_t row = 0; row < 6; row++) {
			int64_t t = row == 5 ? 0 : row == 0 ? 1 : row == 3 ? 3 : -1;
			const char *gk = (const char *)k2.data + (size_t)row * rb;
			const char *gv = (const char *)v2.data + (size_t)row * rb;
			if (t < 0) {
				/* untouched: still NaN */
				if (!isnan(at(&k2, row * RW)) || !isnan(at(&v2, row * RW)))
					bad++;
				continue;
			}
			if (memcmp(gk, (const char *)k1.data + (size_t)p[t] * rb, rb) != 0 ||
			    memcmp(gv, (const char *)v1.data + (size_t)p[t] * rb, rb) != 0)
				bad++;
		}
		ok(bad == 0, "rope_paged_kv_write %s: k rotated by pos and v at the slots, the pad "
		   "slot writing nothing", dt_name(dt));
		free(qkv.data); free(pos.data); free(slots.data); free(q1.data); free(q2.data);
		free(k1.data); free(v1.data); free(k2.data); free(v2.data);
	}
}

int main(void)
{
	test_paged_attention();
	test_paged_attention_bounds();
	test_paged_kv_write();
	test_rope_paged_kv_write();
	return tap_done();
}
