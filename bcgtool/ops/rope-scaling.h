/*
 * rope-scaling.h - the inverse frequencies of rope and its fused kinds,
 * for every rope_type (default, linear, dynamic, yarn, llama3), computed
 * as Hugging Face transformers computes them.
 *
 * transformers builds its frequency table in f32: the exponent 2i/dim, the
 * power base^e, its reciprocal and every scaling step are f32 operations,
 * with Python scalars rounded to f32 where they meet the tensor. Only the
 * scalar parameters (yarn's correction range, dynamic's base, the attention
 * factor) are Python doubles. rope_inv_freq replays those steps one by one
 * on f32 values, with the power computed in double and rounded once (a
 * correctly rounded powf; torch's own is within an ulp of it and equal in
 * nearly every case), so the table is transformers' bit for bit wherever
 * torch's powf is correctly rounded. formats/op-script.md gives the steps.
 *
 * Host kernels and CUDA launches both take their frequencies from here,
 * so the two backends rotate by the same f32 values.
 */
#ifndef BCG_OPS_ROPE_SCALING_H
#define BCG_OPS_ROPE_SCALING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum rope_type {
	ROPE_TYPE_DEFAULT = 0,
	ROPE_TYPE_LINEAR  = 1,
	ROPE_TYPE_DYNAMIC = 2,
	ROPE_TYPE_YARN    = 3,
	ROPE_TYPE_LLAMA3  = 4,
	ROPE_TYPE_COUNT
};

/* The names scripts use, by enum rope_type, NULL-terminated. */
extern const char *const rope_type_names[ROPE_TYPE_COUNT + 1];

/* Positions of the scaling attributes, which follow theta in every rope
 * kind (op.h gives where they start). */
enum {
	RS_TYPE = 0,             /* enum rope_type */
	RS_FACTOR,               /* float */
	RS_LOW_FREQ_FACTOR,      /* float: llama3 */
	RS_HIGH_FREQ_FACTOR,     /* float: llama3 */
	RS_ORIGINAL_MAX,         /* int: llama3, yarn; dynamic's max_position_embeddings */
	RS_BETA_FAST,            /* float: yarn */
	RS_BETA_SLOW,            /* float: yarn */
	RS_ATTENTION_FACTOR,     /* float: yarn; 0 derives it from factor */
	RS_TRUNCATE,             /* bool: yarn */
	RS_COUNT
};

/* One rope's parameters, resolved. */
struct rope_scaling {
	int     type;            /* enum rope_type */
	double  theta;
	int64_t head_dim;
	double  factor;
	double  low_freq_factor;
	double  high_freq_factor;
	int64_t original_max;
	double  beta_fast;
	double  beta_slow;
	double  attention_factor;
	int     truncate;
	/* derived by rope_scaling_init */
	double  base;            /* theta, or dynamic's rescaled base */
	double  ramp_low;        /* yarn's correction range */
	double  ramp_high;
};

/* S from theta, head_dim and the RS_COUNT scaling values A (ints in .i,
 * floats in .f, laid out as op_value). */
union op_value;
void rope_scaling_init(struct rope_scaling *s, double theta, int64_t head_dim,
                       const union op_value *a);

/* The check of S's parameters: 0, or -1 with a message naming the
 * attribute and its value in MSG. */
int rope_scaling_check(const struct rope_scaling *s, char *msg, size_t len);

/* The inverse frequency of pair I (0 <= I < head_dim / 2). */
float rope_inv_freq(const struct rope_scaling *s, int64_t i);

/* The factor cos and sin are multiplied by (yarn's attention factor, in
 * f32; 1 for the others). */
float rope_mscale(const struct rope_scaling *s);

/* The first position the frequencies are not exact for: dynamic's
 * max_position_embeddings (transformers rescales from there on, by the
 * sequence length); INT64_MAX (none) for the others. Rows at such positions are
 * written as NaN rather than as a guess. */
int64_t rope_pos_limit(const struct rope_scaling *s);

#ifdef __cplusplus
}
#endif

#endif
