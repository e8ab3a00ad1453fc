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

/* rope (x, pos) -> out: x [T, heads*head_dim], pos [T]. For token t, head
 * h, i < head_dim/2: a = pos[t] * f_i, and the pair (x[t,h,i],
 * x[t,h,i+head_dim/2]) is rotated by a, cos and sin scaled by the rope
 * type's factor (yarn's attention factor, else 1). The frequencies f_i
 * come from rope-scaling.c, step by step as transformers computes them.
 * A position the rope type is not exact for (dynamic past its original
 * context) gives NaN rows. Each pair is read before it is written, so it
 * works in place. */
void host_run_rope(const struct op_call *call)
{
	int64_t width = call->attr[ROPE_HEADS].i * call->attr[ROPE_HEAD_DIM].i;
	struct rope_scaling rs;

	rope_scaling_init(&rs, call->attr[ROPE_THETA].f, call->attr[ROPE_HEAD_DIM].i,
	                  &call->attr[ROPE_SCALING]);
	host_rope_part(&call->in[0], width, 0, &call->in[1], &call->out[0], width, 0, NULL,
	               call->attr[ROPE_HEADS].i, call->attr[ROPE_HEAD_DIM].i, &rs);
}

/* rope on part of each row (host-kernels.h), for rope and rope_kv_write. */
void host_rope_part(const struct op_tensor *x, int64_t x_cols, int64_t x_col,
                    const struct op_tensor *pos, const struct op_tensor *out,
                    int64_t out_cols, int64_t out_col, const struct op_tensor *at,
                    int64_t heads, int64_t head_dim, const struct rope_scaling *rs)
{
	int64_t T = host_numel(pos), S = host_rows(out), half = head_dim / 2;
	int64_t limit = rope_pos_limit(rs);
	float m = rope_mscale(rs);

	for (int64_t t = 0; t < T; t++) {
		int32_t pt = host_get_i32(pos, t);
		float p = (float)pt;
		int64_t xb = t * x_cols + x_col, ob = t;
		if (at != NULL) {
			ob = host_get_i32(at, t);
			if (ob < 0 || ob >= S)
				continue;
		}
		ob = ob * out_cols + out_col;
		for (int64_t i = 0; i < half; i++) {
			float f = rope_inv_freq(rs, i);
			float a = p * f;
			float c = cosf(a) * m, s = sinf(a) * m;
			if (pt >= limit)
				c = s = NAN;
			for (int64_t h = 0; h < heads; h++) {
				int64_t xk = xb + h * head_dim + i, ok = ob + h * head_dim + i;
				float x1 = host_get(x, xk), x2 = host_get(x, xk + half);
				host_put(out, ok, x1 * c - x2 * s);
				host_put(out, ok + half, x2 * c + x1 * s);
			}
		}
		/* An odd head_dim leaves each head's last element unrotated. */
		if (head_dim % 2 != 0)
			for (int64_t h = 0; h < heads; h++)
				host_copy_elems(out, ob + h * head_dim + head_dim - 1,
				                x, xb + h * head_dim + head_dim - 1, 1);
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
