/*
 * host-paged.c - the host references of the paged kinds: the cache write
 * by slot, its fused rope form, and paged attention over each request's
 * blocks (op.h gives the semantics).
 *
 * A paged cache [NB, BS, W] is addressed by slot: row s % BS of block
 * s / BS, which is row s of the cache seen as [NB * BS, W]. A slot outside
 * [0, NB * BS) -- the pad slot -1 of a padded row among them -- writes
 * nothing, so a padded row never touches a block.
 *
 * paged_attention reads, for row t of request r, only the block ids of
 * row r of the table below ceil(L_t / BS), and only blocks in [0, NB): no
 * metadata, however wrong, makes it read outside its operands. Its sums
 * run as attention's (host-attention.c): dot products in d order, exp(s -
 * max), both sums in position order, in f32.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>

#include "host-kernels.h"

/* paged_kv_write (x, slots) -> cache */
void host_run_paged_kv_write(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *slots = &call->in[1], *cache = &call->out[0];
	int64_t T = host_numel(slots), W = host_cols(x);
	int64_t rows = cache->dim[0] * cache->dim[1];

	for (int64_t t = 0; t < T; t++) {
		int64_t s = host_get_i32(slots, t);
		if (s >= 0 && s < rows)
			host_copy_elems(cache, s * W, x, t * W, W);
	}
}

/* rope_paged_kv_write (qkv, pos, slots[, q_w, k_w]) -> (q, k_cache,
 * v_cache): as rope_kv_write (host-fused.c), the cache rows given by
 * slots. */
void host_run_rope_paged_kv_write(const struct op_call *call)
{
	const struct op_tensor *qkv = &call->in[0], *pos = &call->in[1], *slots = &call->in[2];
	const struct op_tensor *q = &call->out[0], *kc = &call->out[1], *vc = &call->out[2];
	int64_t heads = call->attr[RKV_HEADS].i, kvh = call->attr[RKV_KV_HEADS].i;
	int64_t hd = call->attr[RKV_HEAD_DIM].i;
	struct rope_scaling rs;
	int64_t qw = heads * hd, kw = kvh * hd, cols = host_cols(qkv);
	int64_t T = host_numel(slots), rows = vc->dim[0] * vc->dim[1];
	/* The caches seen as [NB * BS, W], which host_rope_part indexes by row. */
	struct op_tensor kflat = *kc;

	kflat.rank = 2;
	kflat.dim[0] = rows;
	kflat.dim[1] = kw;
	rope_scaling_init(&rs, call->attr[RKV_THETA].f, hd, &call->attr[RKV_SCALING]);
	if (call->nin > RPKV_Q_W) {
		host_rope_kv_normed(call, &call->in[RPKV_Q_W], &call->in[RPKV_K_W], &kflat, slots,
		                    &rs);
	} else {
		host_rope_part(qkv, cols, 0, pos, q, qw, 0, NULL, heads, hd, &rs);
		host_rope_part(qkv, cols, qw, pos, &kflat, kw, 0, slots, kvh, hd, &rs);
	}
	for (int64_t t = 0; t < T; t++) {
		int64_t s = host_get_i32(slots, t);
		if (s >= 0 && s < rows)
			host_copy_elems(vc, s * kw, qkv, t * cols + qw + kw, kw);
	}
}

struct host_paged {
	const struct op_tensor *q, *k, *v, *table, *seq, *qs, *out;
	int64_t T, R, MB, NB, BS, heads, kv_heads, head_dim;
	float scale;
};

/* The request row T belongs to, or -1; with its query index and count. */
static int64_t host_paged_request(const struct host_paged *pa, int64_t t, int64_t *index,
                                  int64_t *count)
{
	for (int64_t r = 0; r < pa->R; r++) {
		int64_t a = host_get_i32(pa->qs, r), b = host_get_i32(pa->qs, r + 1);
		if (a <= t && t < b) {
			*index = t - a;
			*count = b - a;
			return r;
		}
	}
	return -1;
}

/* The cache row of position J of request R, or -1 when its block id is
 * outside the cache. */
static int64_t host_paged_row(const struct host_paged *pa, int64_t r, int64_t j)
{
	int64_t block = host_get_i32(pa->table, r * pa->MB + j / pa->BS);

	if (block < 0 || block >= pa->NB)
		return -1;
	return block * pa->BS + j % pa->BS;
}

static float host_paged_score(const struct host_paged *pa, int64_t t, int64_t h, int64_t g,
                              int64_t row)
{
	int64_t qbase = (t * pa->heads + h) * pa->head_dim;
	int64_t kbase = (row * pa->kv_heads + g) * pa->head_dim;
	float dot = 0.0f;

	for (int64_t d = 0; d < pa->head_dim; d++)
		dot += host_get(pa->q, qbase + d) * host_get(pa->k, kbase + d);
	return dot * pa->scale;
}

/* Row T, head H over positions [0, L) of request R. */
static void host_paged_head(const struct host_paged *pa, int64_t t, int64_t h, int64_t r,
                            int64_t L, float *acc)
{
	int64_t g = h * pa->kv_heads / pa->heads;
	int64_t obase = (t * pa->heads + h) * pa->head_dim;
	float max = -INFINITY, sum = 0.0f;

	for (int64_t j = 0; j < L; j++) {
		int64_t row = host_paged_row(pa, r, j);
		float s;
		if (row < 0)
			continue;
		s = host_paged_score(pa, t, h, g, row);
		if (s > max)
			max = s;
	}
	for (int64_t d = 0; d < pa->head_dim; d++)
		acc[d] = 0.0f;
	for (int64_t j = 0; j < L; j++) {
		int64_t row = host_paged_row(pa, r, j), vbase;
		float e;
		if (row < 0)
			continue;
		e = expf(host_paged_score(pa, t, h, g, row) - max);
		sum += e;
		vbase = (row * pa->kv_heads + g) * pa->head_dim;
		for (int64_t d = 0; d < pa->head_dim; d++)
			acc[d] += e * host_get(pa->v, vbase + d);
	}
	for (int64_t d = 0; d < pa->head_dim; d++)
		host_put(pa->out, obase + d, sum > 0.0f ? acc[d] / sum : 0.0f);
}

/* paged_attention (q, k_cache, v_cache, block_table, seq_lens, query_start)
 * -> out. Both forms compute the same: the host reads the batch from the
 * operands either way. */
void host_run_paged_attention(const struct op_call *call)
{
	struct host_paged pa = {
		.q = &call->in[PATTN_Q], .k = &call->in[PATTN_K], .v = &call->in[PATTN_V],
		.table = &call->in[PATTN_TABLE], .seq = &call->in[PATTN_SEQ_LENS],
		.qs = &call->in[PATTN_QUERY_START], .out = &call->out[0],
		.heads = call->attr[PATTN_HEADS].i,
		.kv_heads = call->attr[PATTN_KV_HEADS].i,
		.head_dim = call->attr[PATTN_HEAD_DIM].i,
	};
	double scale = call->attr[PATTN_SCALE].f;
	float acc[512];                 /* head_dim is at most 512 (the check) */

	pa.T = host_rows(pa.q);
	pa.R = pa.table->dim[0];
	pa.MB = pa.table->dim[1];
	pa.NB = pa.k->dim[0];
	pa.BS = pa.k->dim[1];
	pa.scale = scale == 0.0 ? 1.0f / sqrtf((float)pa.head_dim) : (float)scale;
	for (int64_t t = 0; t < pa.T; t++) {
		int64_t index = 0, count = 0, r = host_paged_request(&pa, t, &index, &count);
		int64_t L = 0, cap = pa.MB * pa.BS;
		if (r >= 0) {
			L = (int64_t)host_get_i32(pa.seq, r) - count + 1 + index;
			L = L < 0 ? 0 : L > cap ? cap : L;
		}
		for (int64_t h = 0; h < pa.heads; h++) {
			if (L >= 1) {
				host_paged_head(&pa, t, h, r, L, acc);
				continue;
			}
			for (int64_t d = 0; d < pa.head_dim; d++)
				host_put(pa.out, (t * pa.heads + h) * pa.head_dim + d, 0.0f);
		}
	}
}
