/*
 * rope-scaling.c - the inverse frequencies of every rope_type, step by
 * step as transformers' modeling_rope_utils.py computes them (see
 * rope-scaling.h and formats/op-script.md).
 *
 * Every f32 step is written as an f32 operation on a float variable and
 * stored (C11 with FLT_EVAL_METHOD 0 rounds each), so the order and the
 * roundings are transformers'. Scalars that transformers keeps as Python
 * doubles are doubles here.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "op.h"
#include "rope-scaling.h"

const char *const rope_type_names[ROPE_TYPE_COUNT + 1] = {
	"default", "linear", "dynamic", "yarn", "llama3", NULL
};

#define ROPE_PI 3.141592653589793

/* yarn's find_correction_dim: the dimension at which a pair turns
 * ROTATIONS times over the original context. */
static double rope_yarn_dim(double rotations, int64_t dim, double base, int64_t original)
{
	return ((double)dim * log((double)original / (rotations * 2 * ROPE_PI))) /
	       (2 * log(base));
}

void rope_scaling_init(struct rope_scaling *s, double theta, int64_t head_dim,
                       const union op_value *a)
{
	s->type = (int)a[RS_TYPE].i;
	s->theta = theta;
	s->head_dim = head_dim;
	s->factor = a[RS_FACTOR].f;
	s->low_freq_factor = a[RS_LOW_FREQ_FACTOR].f;
	s->high_freq_factor = a[RS_HIGH_FREQ_FACTOR].f;
	s->original_max = a[RS_ORIGINAL_MAX].i;
	s->beta_fast = a[RS_BETA_FAST].f;
	s->beta_slow = a[RS_BETA_SLOW].f;
	s->attention_factor = a[RS_ATTENTION_FACTOR].f;
	s->truncate = a[RS_TRUNCATE].i != 0;
	s->base = theta;
	s->ramp_low = s->ramp_high = 0;
	if (s->type == ROPE_TYPE_DYNAMIC && head_dim > 2 && s->original_max > 0) {
		/* transformers at seq_len = max_position_embeddings, in double:
		 * base * ((factor * seq_len / max) - (factor - 1)) ** (dim / (dim - 2)) */
		double m = (double)s->original_max;
		s->base = theta * pow(s->factor * m / m - (s->factor - 1),
		                      (double)head_dim / (double)(head_dim - 2));
	}
	if (s->type == ROPE_TYPE_YARN && s->original_max > 0 && theta > 1) {
		double lo = rope_yarn_dim(s->beta_fast, head_dim, theta, s->original_max);
		double hi = rope_yarn_dim(s->beta_slow, head_dim, theta, s->original_max);
		if (s->truncate) {
			lo = floor(lo);
			hi = ceil(hi);
		}
		s->ramp_low = lo > 0 ? lo : 0;
		s->ramp_high = hi < (double)(head_dim - 1) ? hi : (double)(head_dim - 1);
		if (s->ramp_low == s->ramp_high)
			s->ramp_high += 0.001;     /* transformers' guard against 0/0 */
	}
}

static int rope_bad(char *msg, size_t len, const char *key, double v, const char *why)
{
	snprintf(msg, len, "attribute %s is %g; %s", key, v, why);
	return -1;
}

int rope_scaling_check(const struct rope_scaling *s, char *msg, size_t len)
{
	const char *name = s->type >= 0 && s->type < ROPE_TYPE_COUNT ?
	                   rope_type_names[s->type] : "?";
	char why[96];

	if (s->type < 0 || s->type >= ROPE_TYPE_COUNT) {
		snprintf(msg, len, "attribute rope_type is %d, not a rope type", s->type);
		return -1;
	}
	if (s->type == ROPE_TYPE_DEFAULT)
		return 0;
	snprintf(why, sizeof why, "rope_type %s needs a finite factor of at least 1", name);
	if (!isfinite(s->factor) || s->factor < 1 || s->factor > 1e6)
		return rope_bad(msg, len, "factor", s->factor, why);
	if (s->type == ROPE_TYPE_LLAMA3) {
		if (!isfinite(s->low_freq_factor) || s->low_freq_factor <= 0)
			return rope_bad(msg, len, "low_freq_factor", s->low_freq_factor,
			                "llama3 needs it positive");
		if (!isfinite(s->high_freq_factor) || s->high_freq_factor <= s->low_freq_factor)
			return rope_bad(msg, len, "high_freq_factor", s->high_freq_factor,
			                "llama3 needs it above low_freq_factor");
	}
	if (s->type == ROPE_TYPE_LLAMA3 || s->type == ROPE_TYPE_YARN ||
	    s->type == ROPE_TYPE_DYNAMIC) {
		snprintf(why, sizeof why, "rope_type %s needs it in [1, 2^31)", name);
		if (s->original_max < 1 || s->original_max > INT32_MAX)
			return rope_bad(msg, len, "original_max_position_embeddings",
			                (double)s->original_max, why);
	}
	if (s->type == ROPE_TYPE_DYNAMIC && s->head_dim <= 2)
		return rope_bad(msg, len, "head_dim", (double)s->head_dim,
		                "rope_type dynamic needs it above 2");
	if (s->type == ROPE_TYPE_YARN) {
		if (!isfinite(s->beta_fast) || s->beta_fast <= 0)
			return rope_bad(msg, len, "beta_fast", s->beta_fast, "yarn needs it positive");
		if (!isfinite(s->beta_slow) || s->beta_slow <= 0)
			return rope_bad(msg, len, "beta_slow", s->beta_slow, "yarn needs it positive");
		if (!isfinite(s->attention_factor) || s->attention_factor < 0 ||
		    s->attention_factor > 1e3)
			return rope_bad(msg, len, "attention_factor", s->attention_factor,
			                "yarn needs it in [0, 1000] (0: from factor)");
		if (!(s->theta > 1))
			return rope_bad(msg, len, "theta", s->theta, "yarn needs it above 1");
	}
	return 0;
}

/* transformers' base inverse frequency: 1 / base ** (f32(2i) / dim), f32. */
static float rope_base_inv(double base, int64_t dim, int64_t i)
{
	float e = (float)(2 * i) / (float)dim;
	float p = (float)pow((double)(float)base, (double)e);
	return 1.0f / p;
}

static float rope_llama3(const struct rope_scaling *s, float inv)
{
	double old = (double)s->original_max;
	float factor = (float)s->factor;
	float low_wavelen = (float)(old / s->low_freq_factor);
	float high_wavelen = (float)(old / s->high_freq_factor);
	/* 2 * math.pi / inv_freq is inv_freq.reciprocal() * (2 pi) */
	float wavelen = (1.0f / inv) * (float)(2 * ROPE_PI);
	float scaled = wavelen > low_wavelen ? inv / factor : inv;
	if (wavelen < high_wavelen || wavelen > low_wavelen)
		return scaled;
	/* old / wavelen is wavelen.reciprocal() * old */
	float smooth = ((1.0f / wavelen) * (float)old - (float)s->low_freq_factor) /
	               (float)(s->high_freq_factor - s->low_freq_factor);
	float a = (1.0f - smooth) * scaled;
	float b = a / factor;
	float c = smooth * scaled;
	return b + c;
}

static float rope_yarn(const struct rope_scaling *s, int64_t i)
{
	float e = (float)(2 * i) / (float)s->head_dim;
	float pos = (float)pow((double)(float)s->theta, (double)e);
	float extrapolation = 1.0f / pos;
	float interpolation = 1.0f / ((float)s->factor * pos);
	float ramp = ((float)i - (float)s->ramp_low) / (float)(s->ramp_high - s->ramp_low);
	ramp = ramp < 0.0f ? 0.0f : ramp > 1.0f ? 1.0f : ramp;
	float extra = 1.0f - ramp;
	float a = interpolation * (1.0f - extra);
	float b = extrapolation * extra;
	return a + b;
}

float rope_inv_freq(const struct rope_scaling *s, int64_t i)
{
	switch (s->type) {
	case ROPE_TYPE_LINEAR:
		return rope_base_inv(s->base, s->head_dim, i) / (float)s->factor;
	case ROPE_TYPE_LLAMA3:
		return rope_llama3(s, rope_base_inv(s->base, s->head_dim, i));
	case ROPE_TYPE_YARN:
		return rope_yarn(s, i);
	default:                           /* default; dynamic with its base */
		return rope_base_inv(s->base, s->head_dim, i);
	}
}

float rope_mscale(const struct rope_scaling *s)
{
	if (s->type != ROPE_TYPE_YARN)
		return 1.0f;
	if (s->attention_factor > 0)
		return (float)s->attention_factor;
	/* transformers' get_mscale(factor): 0.1 ln(factor) + 1 above 1 */
	return s->factor <= 1 ? 1.0f : (float)(0.1 * log(s->factor) + 1.0);
}

int64_t rope_pos_limit(const struct rope_scaling *s)
{
	if (s->type == ROPE_TYPE_DYNAMIC)
		return s->original_max;
	return INT64_MAX;
}
