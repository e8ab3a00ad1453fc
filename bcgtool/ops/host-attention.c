/*
 * host-attention.c - the host reference of attention: every query token
 * against the first L positions of a KV cache, no causal mask.
 *
 * q, out [T, heads*head_dim]; k, v [S, kv_heads*head_dim]; L = kv_len
 * clamped to [0, S]. Query head h reads kv head g = h / (heads/kv_heads),
 * computed as h * kv_heads / heads, the same for the divisible head counts
 * the check accepts. For each token and head, in f32:
 *
 *   s_j  = (q . k_j) * scale          dot product summed in d order
 *   e_j  = exp(s_j - max_j s_j)
 *   out  = (sum_j e_j v_j) / (sum_j e_j)   both sums in j order
 *
 * L = 0 gives zeros. Causal: token t of T sees only L - (T - 1 - t) of the
 * positions (at least 0), as a prefill chunk's tokens see themselves and
 * those before them. With scratch, the scores are kept; without, they are
 * computed again in each pass, giving the same bytes.
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "host-kernels.h"

struct host_attention {
	const struct op_tensor *q, *k, *v, *out;
	int64_t T, L, heads, kv_heads, head_dim;
	float scale;
	int64_t L_all;     /* L before the causal mask */
	int causal;
};

/* s_j for token T, head H (kv head G), query row Q or, when Q is NULL,
 * read from the operand. */
static float host_attention_score(const struct host_attention *at, const float *q,
                                  int64_t t, int64_t h, int64_t g, int64_t j)
{
	int64_t qbase = (t * at->heads + h) * at->head_dim;
	int64_t kbase = (j * at->kv_heads + g) * at->head_dim;
	float dot = 0.0f;

	for (int64_t d = 0; d < at->head_dim; d++) {
		float x = q ? q[d] : host_get(at->q, qbase + d);
		dot += x * host_get(at->k, kbase + d);
	}
	return dot * at->scale;
}

/* One token and head with scratch: Q head_dim floats, S L, ACC head_dim. */
static void host_attention_kept(const struct host_attention *at, int64_t t, int64_t h,
                                int64_t g, float *q, float *s, float *acc)
{
	int64_t obase = (t * at->heads + h) * at->head_dim;
	float max = -INFINITY, sum = 0.0f;

	for (int64_t d = 0; d < at->head_dim; d++) {
		q[d] = host_get(at->q, obase + d);
		acc[d] = 0.0f;
	}
	for (int64_t j = 0; j < at->L; j++) {
		s[j] = host_attention_score(at, q, t, h, g, j);
		if (s[j] > max)
			max = s[j];
	}
	for (int64_t j = 0; j < at->L; j++) {
		int64_t vbase = (j * at->kv_heads + g) * at->head_dim;
		float e = expf(s[j] - max);
		sum += e;
		for (int64_t d = 0; d < at->head_dim; d++)
			acc[d] += e * host_get(at->v, vbase + d);
	}
	for (int64_t d = 0; d < at->head_dim; d++)
		host_put(at->out, obase + d, acc[d] / sum);
}

/* The same with no scratch: the scores are computed again per pass and per
 * output element. */
static void host_attention_recomputed(const struct host_attention *at, int64_t t,
                                      int64_t h, int64_t g)
{
	int64_t obase = (t * at->heads + h) * at->head_dim;
	float max = -INFINITY, sum = 0.0f;

	for (int64_t j = 0; j < at->L; j++) {
		float s = host_attention_score(at, NULL, t, h, g, j);
		if (s > max)
			max = s;
	}
	for (int64_t j = 0; j < at->L; j++)
		sum += expf(host_attention_score(at, NULL, t, h, g, j) - max);
	for (int64_t d = 0; d < at->head_dim; d++) {
		float acc = 0.0f;
		for (int64_t j = 0; j < at->L; j++) {
			int64_t vbase = (j * at->kv_heads + g) * at->head_dim;
			float e = expf(host_attention_score(at, NULL, t, h, g, j) - max);
			acc += e * host_get(at->v, vbase + d);
		}
		host_put(at->out, obase + d, acc / sum);
	}
}

void host_attention_run(const struct op_call *call, int use_scratch)
{
	struct host_attention at = {
		.q = &call->in[0], .k = &call->in[1], .v = &call->in[2], .out = &call->out[0],
		.heads = call->attr[ATTN_HEADS].i,
		.kv_heads = call->attr[ATTN_KV_HEADS].i,
		.head_dim = call->attr[ATTN_HEAD_DIM].i,
	};
	int64_t S = host_rows(at.k), kv_len = call->attr[ATTN_KV_LEN].i;
	double scale = call->attr[ATTN_SCALE].f;
	float *scratch = NULL;

	at.T = host_rows(at.q);
	at.L = kv_len < 0 ? 0 : kv_len > S ? S : kv_len;
	at.L_all = at.L;
	at.causal = call->attr[ATTN_CAUSAL].i != 0;
	at.scale = scale == 0.0 ? 1.0f / sqrtf((float)at.head_dim) : (float)scale;

	if (at.L < 1) {
		int64_t n = host_numel(at.out);
		for (int64_t i = 0; i < n; i++)
			host_put(at.out, i, 0.0f);
		return;
	}
	/* L + 2 * head_dim floats; L and head_dim are sizes of tensors in
	 * memory, so the sum cannot overflow, but its bytes could on 32 bits. */
	if (use_scratch && (uint64_t)(at.L + 2 * at.head_dim) <= SIZE_MAX / sizeof(float))
		scratch = malloc((size_t)(at.L + 2 * at.head_dim) * sizeof(float));
	for (int64_t t = 0; t < at.T; t++) {
		if (at.causal) {
			at.L = at.L_all - (at.T - 1 - t);
			if (at.L < 1) {
				for (int64_t i = 0; i < at.heads * at.head_dim; i++)
					host_put(at.out, t * at.heads * at.head_dim + i, 0.0f);
				continue;
			}
		}
		for (int64_t h = 0; h < at.heads; h++) {
			int64_t g = h * at.kv_heads / at.heads;
			if (scratch)
				host_attention_kept(&at, t, h, g, scratch, scratch + at.head_dim,
				                    scratch + at.head_dim + at.L);
			else
				host_attention_recomputed(&at, t, h, g);
		}
	}
	free(scratch);
}

/* attention (q, k, v) -> out, the reference. */
void host_run_attention(const struct op_call *call)
{
	host_attention_run(call, 1);
}
