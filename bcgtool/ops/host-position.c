/*
 * host-position.c - the host references of the ops driven by per-token
 * integers: rope (rotation by position), embedding (gather by id) and
 * kv_write (scatter by position into a cache).
 *
 * Ids and positions come from data, not shapes, so they are never trusted:
 * an id out of range gives a row of zeros, a position out of the cache is
 * skipped.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "host-kernels.h"

/* Copy N elements from SRC at SOFF to DST at DOFF: the bytes when the
 * dtypes agree, else converted through f32. */
static void host_copy_elems(const struct op_tensor *dst, int64_t doff,
                            const struct op_tensor *src, int64_t soff, int64_t n)
{
	if (dst->dtype == src->dtype) {
		size_t size = host_dtype_size(dst->dtype);
		if (n > 0)
			memmove((char *)dst->data + (size_t)doff * size,
			        (const char *)src->data + (size_t)soff * size, (size_t)n * size);
		return;
	}
	for (int64_t i = 0; i < n; i++)
		host_put(dst, doff + i, host_get(src, soff + i));
}

/* rope (x, pos) -> out: x [T, heads*head_dim], pos [T]. For token t, head
 * h, i < head_dim/2: a = pos[t] * f_i, and the pair (x[t,h,i],
 * x[t,h,i+head_dim/2]) is rotated by a. The frequency f_i =
 * theta^(-2i/head_dim) is computed in double and rounded once to f32: an
 * f32 powf may differ by an ulp between libraries, which at position 4096
 * moves the angle by 1e-4. Each pair is read before it is written, so it
 * works in place. */
void host_run_rope(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *pos = &call->in[1], *out = &call->out[0];
	int64_t heads = call->attr[ROPE_HEADS].i, head_dim = call->attr[ROPE_HEAD_DIM].i;
	double theta = call->attr[ROPE_THETA].f;
	int64_t T = host_numel(pos), width = heads * head_dim, half = head_dim / 2;

	for (int64_t t = 0; t < T; t++) {
		float p = (float)host_get_i32(pos, t);
		for (int64_t i = 0; i < half; i++) {
			float f = (float)pow(theta, -(double)(2 * i) / (double)head_dim);
			float a = p * f;
			float c = cosf(a), s = sinf(a);
			for (int64_t h = 0; h < heads; h++) {
				int64_t k = t * width + h * head_dim + i;
				float x1 = host_get(x, k), x2 = host_get(x, k + half);
				host_put(out, k, x1 * c - x2 * s);
				host_put(out, k + half, x2 * c + x1 * s);
			}
		}
		/* An odd head_dim leaves each head's last element unrotated. */
		if (head_dim % 2 != 0)
			for (int64_t h = 0; h < heads; h++)
				host_copy_elems(out, t * width + h * head_dim + head_dim - 1,
				                x, t * width + h * head_dim + head_dim - 1, 1);
	}
}

/* embedding (table, ids) -> out: table [V, H], ids [T], out [T, H]:
 * out[t] = table[ids[t]], or zeros for an id outside [0, V). */
void host_run_embedding(const struct op_call *call)
{
	const struct op_tensor *table = &call->in[0], *ids = &call->in[1];
	const struct op_tensor *out = &call->out[0];
	int64_t V = host_rows(table), H = host_cols(out), T = host_numel(ids);

	for (int64_t t = 0; t < T; t++) {
		int64_t id = host_get_i32(ids, t);
		if (id >= 0 && id < V)
			host_copy_elems(out, t * H, table, id * H, H);
		else
			for (int64_t j = 0; j < H; j++)
				host_put(out, t * H + j, 0.0f);
	}
}

/* kv_write (x, pos) -> cache: x [T, W], pos [T], cache [S, W]:
 * cache[pos[t]] = x[t] for pos[t] in [0, S); other rows untouched. Tokens
 * go in order, so of two equal positions the later wins here. */
void host_run_kv_write(const struct op_call *call)
{
	const struct op_tensor *x = &call->in[0], *pos = &call->in[1];
	const struct op_tensor *cache = &call->out[0];
	int64_t S = host_rows(cache), W = host_cols(cache), T = host_numel(pos);

	for (int64_t t = 0; t < T; t++) {
		int64_t p = host_get_i32(pos, t);
		if (p >= 0 && p < S)
			host_copy_elems(cache, p * W, x, t * W, W);
	}
}
