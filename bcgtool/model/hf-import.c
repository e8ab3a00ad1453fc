/*
 * hf-import.c - op scripts for Hugging Face decoder-only models (see
 * hf-import.h). The config is read with jansson.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_JANSSON
#include <jansson.h>
#endif

#include "model/hf-import.h"
#include "model/hf-moe.h"
#include "model/safetensors.h"
#include "plan.h"

static int hf_fail(char *msg, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int hf_fail(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return -1;
}

char *hf_checkpoint_path(const char *dir)
{
	size_t n = strlen(dir) + 40;
	char *p = malloc(n);

	if (p == NULL)
		return NULL;
	snprintf(p, n, "%s/model.safetensors.index.json", dir);
	if (access(p, F_OK) != 0)
		snprintf(p, n, "%s/model.safetensors", dir);
	return p;
}

#ifndef HAVE_JANSSON

int hf_import(const char *dir, const struct hf_import_opts *o, char **text,
              struct hf_model *m, char *msg, size_t len)
{
	(void)o;
	(void)m;
	*text = NULL;
	return hf_fail(msg, len, "%s: cannot import: this bcgtool was built without jansson", dir);
}

#else

/* A growing text. */
struct hf_buf {
	char  *s;
	size_t len, cap;
	int    failed;
};

static void hf_put(struct hf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void hf_put(struct hf_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = 1;
			return;
		}
		if (b->s != NULL && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *g = realloc(b->s, cap);
		if (g == NULL) {
			b->failed = 1;
			return;
		}
		b->s = g;
		b->cap = cap;
	}
}

struct hf_cfg {
	json_t     *root;
	const char *path;
	char       *msg;
	size_t      len;
};

/* Integer KEY (>= 1); DFLT when absent and DFLT > 0. */
static int hf_int(struct hf_cfg *c, const char *key, int64_t dflt, int64_t *out)
{
	json_t *v = json_object_get(c->root, key);

	if (v == NULL || json_is_null(v)) {
		if (dflt > 0) {
			*out = dflt;
			return 0;
		}
		return hf_fail(c->msg, c->len, "%s: no '%s'", c->path, key);
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > INT32_MAX)
		return hf_fail(c->msg, c->len, "%s: '%s' must be a positive integer", c->path, key);
	*out = json_integer_value(v);
	return 0;
}

static int hf_num(struct hf_cfg *c, json_t *obj, const char *key, double dflt, double *out)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL || json_is_null(v)) {
		if (dflt >= 0) {
			*out = dflt;
			return 0;
		}
		return hf_fail(c->msg, c->len, "%s: no '%s'", c->path, key);
	}
	if (!json_is_number(v) || json_number_value(v) <= 0)
		return hf_fail(c->msg, c->len, "%s: '%s' must be a positive number", c->path, key);
	*out = json_number_value(v);
	return 0;
}

static int hf_true(json_t *root, const char *key)
{
	return json_is_true(json_object_get(root, key));
}

/* The rope of a config: its type and parameters, as the script's rope
 * attributes (ops/rope-scaling.h) write them. */
struct hf_rope {
	const char *type;          /* "default", "linear", "dynamic", "yarn", "llama3" */
	double      theta, factor, low_freq_factor, high_freq_factor;
	double      beta_fast, beta_slow, attention_factor;
	int64_t     original;      /* original_max_position_embeddings (dynamic: max) */
	int         truncate;
};

/* The keys of a rope dict bcgtool reads; any other is refused by name. */
static const char *const hf_rope_keys[] = {
	"rope_type", "type", "rope_theta", "factor", "low_freq_factor", "high_freq_factor",
	"original_max_position_embeddings", "beta_fast", "beta_slow", "attention_factor",
	"mscale", "mscale_all_dim", "truncate", "partial_rotary_factor", NULL
};

/* A JSON value in a message: numbers and strings as JSON writes them. */
static const char *hf_value_text(json_t *v, char *buf, size_t len)
{
	if (json_is_string(v))
		snprintf(buf, len, "'%.64s'", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%g", json_real_value(v));
	else if (json_is_true(v) || json_is_false(v))
		snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false");
	else if (json_is_null(v))
		snprintf(buf, len, "null");
	else
		snprintf(buf, len, "%s", json_is_object(v) ? "an object" : "an array");
	return buf;
}

/* Number KEY of the rope dict D (called WHERE), at least LO; DFLT when
 * absent or null, or an error when DFLT is NAN. */
static int hf_rope_num(struct hf_cfg *c, json_t *d, const char *where, const char *key,
                       double lo, double dflt, double *out)
{
	json_t *v = json_object_get(d, key);
	char text[96];

	if (v == NULL || json_is_null(v)) {
		if (isnan(dflt))
			return hf_fail(c->msg, c->len, "%s: %s has no '%s'", c->path, where, key);
		*out = dflt;
		return 0;
	}
	if (!json_is_number(v) || !(json_number_value(v) >= lo) ||
	    !(json_number_value(v) <= 1e9))
		return hf_fail(c->msg, c->len, "%s: not supported: %s.%s %s (a number from %g "
		               "to 1e9)", c->path, where, key, hf_value_text(v, text, sizeof text),
		               lo);
	*out = json_number_value(v);
	return 0;
}

/* transformers' yarn get_mscale */
static double hf_mscale(double scale, double mscale)
{
	return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

/* The rope. transformers 5 writes rope_parameters (type, theta and
 * options in one dict); 4.x wrote rope_theta beside rope_scaling (null
 * for the default rope; its type under "rope_type" or the older "type").
 * Every type and option bcgtool does not compute exactly is refused,
 * naming the key and its value. */
static int hf_rope(struct hf_cfg *c, int64_t maxpos, int64_t positions, struct hf_rope *r)
{
	json_t *rp = json_object_get(c->root, "rope_parameters");
	json_t *d = NULL, *type, *v;
	const char *where = "rope_parameters", *key;
	char text[96];
	double orig, omax;

	memset(r, 0, sizeof *r);
	r->type = "default";
	r->factor = 1;
	r->low_freq_factor = 1;
	r->high_freq_factor = 4;
	r->beta_fast = 32;
	r->beta_slow = 1;
	r->truncate = 1;
	if (json_is_object(rp)) {
		d = rp;
	} else if (rp != NULL && !json_is_null(rp)) {
		return hf_fail(c->msg, c->len, "%s: 'rope_parameters' must be an object", c->path);
	} else {
		d = json_object_get(c->root, "rope_scaling");
		where = "rope_scaling";
		if (d != NULL && !json_is_null(d) && !json_is_object(d))
			return hf_fail(c->msg, c->len, "%s: 'rope_scaling' must be an object or null",
			               c->path);
		if (d != NULL && json_is_null(d))
			d = NULL;
	}
	if (d != NULL) {
		json_object_foreach(d, key, v) {
			int known = 0;
			for (int i = 0; hf_rope_keys[i] != NULL; i++)
				known |= strcmp(key, hf_rope_keys[i]) == 0;
			if (json_is_object(v))
				return hf_fail(c->msg, c->len, "%s: not supported: %s per layer type "
				               "('%.64s')", c->path, where, key);
			if (!known)
				return hf_fail(c->msg, c->len, "%s: not supported: %s.%.64s %s (bcgtool's "
				               "rope reads rope_type, rope_theta and the options of default, "
				               "linear, dynamic, yarn and llama3)", c->path, where, key,
				               hf_value_text(v, text, sizeof text));
		}
		type = json_object_get(d, "rope_type");
		key = "rope_type";
		if (type == NULL || json_is_null(type)) {
			type = json_object_get(d, "type");
			key = "type";
		}
		if (type != NULL && !json_is_null(type)) {
			static const char *const types[] = { "default", "linear", "dynamic", "yarn",
			                                     "llama3", NULL };
			int i = 0;
			while (types[i] != NULL && !(json_is_string(type) &&
			                             strcmp(json_string_value(type), types[i]) == 0))
				i++;
			if (types[i] == NULL)
				return hf_fail(c->msg, c->len, "%s: not supported: %s.%s %s (bcgtool "
				               "computes default, linear, dynamic, yarn and llama3)", c->path,
				               where, key, hf_value_text(type, text, sizeof text));
			r->type = types[i];
		}
		v = json_object_get(d, "partial_rotary_factor");
		if (v != NULL && !json_is_null(v) &&
		    !(json_is_number(v) && json_number_value(v) == 1.0))
			return hf_fail(c->msg, c->len, "%s: not supported: %s.partial_rotary_factor %s "
			               "(bcgtool rotates the whole head)", c->path, where,
			               hf_value_text(v, text, sizeof text));
	}
	v = json_object_get(c->root, "partial_rotary_factor");
	if (v != NULL && !json_is_null(v) && !(json_is_number(v) && json_number_value(v) == 1.0))
		return hf_fail(c->msg, c->len, "%s: not supported: partial_rotary_factor %s (bcgtool "
		               "rotates the whole head)", c->path, hf_value_text(v, text, sizeof text));
	if (d != NULL && json_object_get(d, "rope_theta") != NULL &&
	    !json_is_null(json_object_get(d, "rope_theta"))) {
		if (hf_num(c, d, "rope_theta", -1, &r->theta) != 0)
			return -1;
	} else if (hf_num(c, c->root, "rope_theta", 10000.0, &r->theta) != 0) {
		return -1;
	}
	if (strcmp(r->type, "default") == 0)
		return 0;

	/* factor: required but for yarn, which falls back on the ratio of the
	 * contexts as transformers does */
	if (hf_rope_num(c, d, where, "factor", 1, strcmp(r->type, "yarn") == 0 ? -1 : NAN,
	                &r->factor) != 0)
		return -1;
	/* the context trained for: the config's own key first, as transformers */
	omax = (double)maxpos;
	v = json_object_get(c->root, "original_max_position_embeddings");
	if (json_is_integer(v))
		omax = (double)json_integer_value(v);
	else if (hf_rope_num(c, d, where, "original_max_position_embeddings", 1, omax, &omax) != 0)
		return -1;
	orig = omax;
	if (orig != floor(orig) || orig > INT32_MAX)
		return hf_fail(c->msg, c->len, "%s: not supported: %s.original_max_position_embeddings "
		               "%g (an integer)", c->path, where, orig);
	r->original = (int64_t)orig;
	if (strcmp(r->type, "dynamic") == 0) {
		/* transformers rescales dynamic's frequencies once the sequence
		 * passes max_position_embeddings; bcgtool computes them only up
		 * to there, where they are exact */
		r->original = maxpos;
		if (positions > maxpos)
			return hf_fail(c->msg, c->len, "%s: not supported: %s.rope_type 'dynamic' with a "
			               "cache of %lld positions: its frequencies follow the sequence "
			               "length past max_position_embeddings %lld (--positions %lld)",
			               c->path, where, (long long)positions, (long long)maxpos,
			               (long long)maxpos);
	}
	if (strcmp(r->type, "llama3") == 0) {
		if (hf_rope_num(c, d, where, "low_freq_factor", 1e-9, NAN, &r->low_freq_factor) != 0 ||
		    hf_rope_num(c, d, where, "high_freq_factor", 1e-9, NAN, &r->high_freq_factor) != 0)
			return -1;
		if (!(r->high_freq_factor > r->low_freq_factor))
			return hf_fail(c->msg, c->len, "%s: not supported: %s.high_freq_factor %g (it must "
			               "be above low_freq_factor %g)", c->path, where, r->high_freq_factor,
			               r->low_freq_factor);
	}
	if (strcmp(r->type, "yarn") == 0) {
		double mscale = 0, mscale_all = 0;
		if (r->factor < 0)
			r->factor = (double)maxpos / orig;
		if (r->factor < 1)
			return hf_fail(c->msg, c->len, "%s: not supported: yarn's factor %g from "
			               "max_position_embeddings / original_max_position_embeddings "
			               "(at least 1)", c->path, r->factor);
		/* transformers: "beta_fast or 32", so 0 is the default too */
		if (hf_rope_num(c, d, where, "beta_fast", 0, 32, &r->beta_fast) != 0 ||
		    hf_rope_num(c, d, where, "beta_slow", 0, 1, &r->beta_slow) != 0 ||
		    hf_rope_num(c, d, where, "attention_factor", 0, 0, &r->attention_factor) != 0 ||
		    hf_rope_num(c, d, where, "mscale", 0, 0, &mscale) != 0 ||
		    hf_rope_num(c, d, where, "mscale_all_dim", 0, 0, &mscale_all) != 0)
			return -1;
		if (r->beta_fast == 0)
			r->beta_fast = 32;
		if (r->beta_slow == 0)
			r->beta_slow = 1;
		if (r->attention_factor == 0 && mscale != 0 && mscale_all != 0)
			r->attention_factor = hf_mscale(r->factor, mscale) /
			                      hf_mscale(r->factor, mscale_all);
		v = json_object_get(d, "truncate");
		if (v != NULL && !json_is_null(v) && !json_is_boolean(v))
			return hf_fail(c->msg, c->len, "%s: not supported: %s.truncate %s (true or false)",
			               c->path, where, hf_value_text(v, text, sizeof text));
		r->truncate = v == NULL || json_is_null(v) || json_is_true(v);
	}
	return 0;
}

/* The rope attributes after theta, for a script's attrs mapping. */
static void hf_put_rope(struct hf_buf *b, const struct hf_rope *r)
{
	if (strcmp(r->type, "default") == 0)
		return;
	hf_put(b, ",\n                rope_type: %s, factor: %.17g", r->type, r->factor);
	if (strcmp(r->type, "llama3") == 0)
		hf_put(b, ", low_freq_factor: %.17g, high_freq_factor: %.17g", r->low_freq_factor,
		       r->high_freq_factor);
	hf_put(b, ",\n                original_max_position_embeddings: %lld",
	       (long long)r->original);
	if (strcmp(r->type, "yarn") == 0)
		hf_put(b, ",\n                beta_fast: %.17g, beta_slow: %.17g, attention_factor: %.17g, "
		       "truncate: %s", r->beta_fast, r->beta_slow, r->attention_factor,
		       r->truncate ? "true" : "false");
}

static int hf_dtype(struct hf_cfg *c, int *dtype)
{
	json_t *v = json_object_get(c->root, "dtype");
	const char *s;

	if (v == NULL || json_is_null(v))
		v = json_object_get(c->root, "torch_dtype");
	if (v == NULL || json_is_null(v)) {
		*dtype = PLAN_DTYPE_F32;
		return 0;
	}
	s = json_is_string(v) ? json_string_value(v) : "?";
	if (strcmp(s, "float32") == 0)
		*dtype = PLAN_DTYPE_F32;
	else if (strcmp(s, "bfloat16") == 0)
		*dtype = PLAN_DTYPE_BF16;
	else if (strcmp(s, "float16") == 0)
		*dtype = PLAN_DTYPE_F16;
	else
		return hf_fail(c->msg, c->len, "%s: not supported: dtype '%s' (float32, bfloat16 or "
		               "float16)", c->path, s);
	return 0;
}

/* Whether the checkpoint has tensor NAME. */
static int hf_has(const struct st_checkpoint *ck, const char *name)
{
	const struct st_file *f;
	const struct st_tensor *t;
	char msg[8];

	return st_checkpoint_find(ck, name, &f, &t, msg, sizeof msg) == 0;
}

/* TEXT, a layer's ops written for a repeat block over l, as layer L's:
 * "{l}" and "[l]" become L's number. */
static void hf_put_layer(struct hf_buf *b, const char *text, int64_t l)
{
	for (const char *s = text; *s != '\0'; s++) {
		if (strncmp(s, "{l}", 3) == 0 || strncmp(s, "[l]", 3) == 0) {
			hf_put(b, s[0] == '{' ? "%lld" : "[%lld]", (long long)l);
			s += 2;
		} else {
			hf_put(b, "%c", *s);
		}
	}
}

/* Part PART of layer L's mixture of experts (hf_moe_text); -1 when out of
 * memory. */
static int hf_put_moe(struct hf_buf *b, const struct hf_moe *moe, int part, const char *dt,
                      const char *ckpath, int64_t l)
{
	char *t = hf_moe_text(moe, part, dt, ckpath, l);

	if (t == NULL)
		return -1;
	hf_put(b, "%s", t);
	free(t);
	return 0;
}

int hf_import(const char *dir, const struct hf_import_opts *o, char **text,
              struct hf_model *m, char *msg, size_t len)
{
	char path[4096];
	json_error_t jerr;
	struct hf_cfg c = { .path = path, .msg = msg, .len = len };
	struct st_checkpoint *ck = NULL;
	struct hf_buf b = { 0 }, lb = { 0 };
	struct hf_moe moe;
	char *moe_text[4] = { NULL, NULL, NULL, NULL };
	json_t *arch, *v;
	struct hf_rope rope;
	double eps;
	int64_t maxpos, window = 0;
	const char *a, *dt, *ckpath = NULL;
	char *ckdefault = NULL;
	int rc = -1, mixed;

	*text = NULL;
	memset(m, 0, sizeof *m);
	snprintf(path, sizeof path, "%s/config.json", dir);
	if ((c.root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr)) == NULL) {
		if (jerr.line < 1)
			return hf_fail(msg, len, "%s: cannot read: %s", path, jerr.text);
		return hf_fail(msg, len, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
	}
	if (!json_is_object(c.root)) {
		hf_fail(msg, len, "%s: not a JSON object", path);
		goto out;
	}
	arch = json_object_get(c.root, "architectures");
	if (!json_is_array(arch) || json_array_size(arch) != 1 ||
	    !json_is_string(json_array_get(arch, 0))) {
		hf_fail(msg, len, "%s: 'architectures' must name one architecture", path);
		goto out;
	}
	a = json_string_value(json_array_get(arch, 0));
	if (strcmp(a, "LlamaForCausalLM") != 0 && strcmp(a, "MistralForCausalLM") != 0 &&
	    strcmp(a, "Qwen2ForCausalLM") != 0 && strcmp(a, "Qwen3ForCausalLM") != 0 &&
	    !hf_moe_arch(a)) {
		hf_fail(msg, len, "%s: not supported: architecture '%.64s' (bcgtool imports "
		        "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
		        "MixtralForCausalLM, Qwen2MoeForCausalLM and Qwen3MoeForCausalLM)", path, a);
		goto out;
	}
	/* Qwen3: an rmsnorm over each head of q and of k before the rope */
	m->qk_norm = strcmp(a, "Qwen3ForCausalLM") == 0 || strcmp(a, "Qwen3MoeForCausalLM") == 0;
	snprintf(m->arch, sizeof m->arch, "%s", a);
	if (hf_int(&c, "hidden_size", 0, &m->hidden) != 0 ||
	    hf_int(&c, "num_hidden_layers", 0, &m->layers) != 0 ||
	    hf_int(&c, "num_attention_heads", 0, &m->heads) != 0 ||
	    hf_int(&c, "num_key_value_heads", m->heads, &m->kv_heads) != 0 ||
	    hf_int(&c, "head_dim", m->hidden % m->heads == 0 ? m->hidden / m->heads : 0,
	           &m->head_dim) != 0 ||
	    hf_int(&c, "intermediate_size", 0, &m->ffn) != 0 ||
	    hf_int(&c, "vocab_size", 0, &m->vocab) != 0 ||
	    hf_int(&c, "max_position_embeddings", 2048, &maxpos) != 0 ||
	    hf_num(&c, c.root, "rms_norm_eps", 1e-6, &eps) != 0 ||
	    hf_dtype(&c, &m->dtype) != 0)
		goto out;
	if (m->heads % m->kv_heads != 0) {
		hf_fail(msg, len, "%s: num_attention_heads (%lld) is not a multiple of "
		        "num_key_value_heads (%lld)", path, (long long)m->heads,
		        (long long)m->kv_heads);
		goto out;
	}
	if (m->head_dim % 2 != 0 || m->head_dim > 512) {
		hf_fail(msg, len, "%s: not supported: head_dim %lld (rope needs an even head_dim "
		        "of at most 512)", path, (long long)m->head_dim);
		goto out;
	}
	v = json_object_get(c.root, "hidden_act");
	if (v != NULL && !(json_is_string(v) && strcmp(json_string_value(v), "silu") == 0)) {
		hf_fail(msg, len, "%s: not supported: hidden_act '%s' (SwiGLU with silu only)", path,
		        json_is_string(v) ? json_string_value(v) : "?");
		goto out;
	}
	if (hf_true(c.root, "attention_bias") || hf_true(c.root, "mlp_bias")) {
		hf_fail(msg, len, "%s: not supported: %s (biases on the q, k and v projections "
		        "of Qwen2 only)", path,
		        hf_true(c.root, "attention_bias") ? "attention_bias" : "mlp_bias");
		goto out;
	}
	if (hf_moe_config(c.root, path, a, &moe, msg, len) != 0)
		goto out;
	if (!moe.on && (json_object_get(c.root, "num_local_experts") != NULL ||
	                json_object_get(c.root, "num_experts") != NULL)) {
		hf_fail(msg, len, "%s: not supported: mixture of experts in a %s", path, a);
		goto out;
	}
	m->experts = moe.experts;
	m->top_k = moe.top_k;
	m->tied = hf_true(c.root, "tie_word_embeddings");
	m->positions = o->positions ? o->positions : maxpos < 2048 ? maxpos : 2048;
	if (m->positions < o->tokens[o->ntokens - 1]) {
		hf_fail(msg, len, "the cache of %lld positions is smaller than the largest capture "
		        "size, %lld", (long long)m->positions, (long long)o->tokens[o->ntokens - 1]);
		goto out;
	}
	if (hf_rope(&c, maxpos, m->positions, &rope) != 0)
		goto out;
	snprintf(m->rope_type, sizeof m->rope_type, "%s", rope.type);
	/* A sliding window narrower than the cache would make attention see
	 * less than every position: refuse rather than compute another model. */
	v = json_object_get(c.root, "sliding_window");
	if (json_is_integer(v) && ((strcmp(a, "Qwen2ForCausalLM") != 0 &&
	                            strcmp(a, "Qwen3ForCausalLM") != 0 &&
	                            strcmp(a, "Qwen2MoeForCausalLM") != 0 &&
	                            strcmp(a, "Qwen3MoeForCausalLM") != 0) ||
	                           hf_true(c.root, "use_sliding_window"))) {
		window = json_integer_value(v);
		if (window < m->positions) {
			hf_fail(msg, len, "%s: not supported: sliding_window %lld in use (the cache "
			        "has %lld positions; a cache of at most %lld never slides: "
			        "--positions %lld)", path, (long long)window, (long long)m->positions,
			        (long long)window, (long long)window);
			goto out;
		}
	}
	if (o->dtype != 0)
		m->dtype = o->dtype;
	dt = plan_dtype_name(m->dtype);

	if ((ckdefault = hf_checkpoint_path(dir)) == NULL) {
		hf_fail(msg, len, "out of memory");
		goto out;
	}
	if (st_checkpoint_open(ckdefault, &ck, msg, len) != 0)
		goto out;
	ckpath = o->weights != NULL ? o->weights : ckdefault;
	m->qkv_bias = hf_has(ck, "model.layers.0.self_attn.q_proj.bias");
	if (m->qkv_bias && strcmp(a, "Qwen2ForCausalLM") != 0 &&
	    strcmp(a, "Qwen2MoeForCausalLM") != 0) {
		hf_fail(msg, len, "%s: not supported: a bias on q_proj in a %s", ckdefault, a);
		goto out;
	}
	if (m->qk_norm && !hf_has(ck, "model.layers.0.self_attn.q_norm.weight")) {
		hf_fail(msg, len, "%s: no tensor 'model.layers.0.self_attn.q_norm.weight' (a %s "
		        "normalizes each head of q and k)", ckdefault, a);
		goto out;
	}
	if (hf_moe_checkpoint(ck, ckdefault, m->layers, &moe, msg, len) != 0)
		goto out;
	/* some layers dense MLPs: each layer's MLP weights apart, the layers
	 * listed one by one */
	mixed = hf_moe_mixed(&moe, m->layers);
	if (moe.on) {
		for (int i = 0; i < 4; i++)
			if ((moe_text[i] = hf_moe_text(&moe, i, dt, ckpath, -1)) == NULL) {
				hf_fail(msg, len, "out of memory");
				goto out;
			}
	}
	if (!m->tied && !hf_has(ck, "lm_head.weight")) {
		hf_fail(msg, len, "%s: no tensor 'lm_head.weight', and tie_word_embeddings is not "
		        "true", ckdefault);
		goto out;
	}

	hf_put(&b, "# Made by bcgtool import from %s (%s).\n", dir, a);
	hf_put(&b, "# Every weight is read from the checkpoint by its own name; q, k and v\n"
	           "# (and gate and up) are stacked as row blocks of one weight each.\n");
	hf_put(&b, "bcg: 1\n");
	hf_put(&b, "description: %s, %lld layers, hidden %lld, %lld/%lld heads of %lld, %s\n\n",
	       a, (long long)m->layers, (long long)m->hidden, (long long)m->heads,
	       (long long)m->kv_heads, (long long)m->head_dim, dt);
	hf_put(&b, "dims:\n  T: {tokens: [");
	for (uint32_t i = 0; i < o->ntokens; i++)
		hf_put(&b, "%s%lld", i ? ", " : "", (long long)o->tokens[i]);
	hf_put(&b, "]}\n");
	hf_put(&b, "  L: %lld                # layers\n", (long long)m->layers);
	hf_put(&b, "  H: %lld                # hidden size\n", (long long)m->hidden);
	hf_put(&b, "  NH: %lld               # query heads\n", (long long)m->heads);
	hf_put(&b, "  NKV: %lld              # key/value heads\n", (long long)m->kv_heads);
	hf_put(&b, "  HD: %lld               # head size\n", (long long)m->head_dim);
	hf_put(&b, "  QW: NH * HD\n  KVW: NKV * HD\n  QKV: QW + 2 * KVW\n");
	if (moe.on)
		hf_put(&b, "%s", moe_text[HF_MOE_DIMS]);
	if (!moe.on || mixed)
		hf_put(&b, "  F: %lld                # FFN size\n  F2: 2 * F\n", (long long)m->ffn);
	hf_put(&b, "  S: %lld                # cache positions\n", (long long)m->positions);
	hf_put(&b, "  V: %lld                # vocabulary\n\n", (long long)m->vocab);
	/* Outside a generation kv_len starts at the largest capture size, so
	 * that no position is negative; a generation sets it itself. */
	hf_put(&b, "vars:\n  kv_len: {start: %lld, step: 1, limit: S}\n\n",
	       (long long)o->tokens[o->ntokens - 1]);

	hf_put(&b, "tensors:\n");
	hf_put(&b, "  ids: {dtype: i32, shape: [T], role: input, feed: {kind: prompt, range: V, "
	           "seed: 1, feedback: next}}\n");
	hf_put(&b, "  pos: {dtype: i32, shape: [T], role: input, feed: {kind: positions, "
	           "var: kv_len}}\n\n");
	/* Tensor parallelism (formats/op-script.md): dense models split their
	 * heads (q | k | v by heads, o by its input columns), their MLP (gate
	 * | up by rows, down by columns) and their vocabulary; a mixture of
	 * experts stays whole on every rank. */
	const int tp = !moe.on;
	const char *sp_qkv = tp ? ", split: {axis: 0, blocks: [QW, KVW, KVW], unit: HD}" : "";
	const char *sp_rows = tp ? ", split: {axis: 0}" : "";
#define SW(name, shape, count, tensor, split)                                            \
	hf_put(&b, "  %s: {dtype: %s, shape: %s, role: weight,%s init: {kind: safetensors, "  \
	           "file: \"%s\", tensor: %s}%s}\n", name, dt, shape, count, ckpath, tensor, split)
#define W(name, shape, count, tensor) SW(name, shape, count, tensor, "")
	SW("embed_tokens", "[V, H]", "", "model.embed_tokens.weight", sp_rows);
	W("input_layernorm", "[H]", " count: L,", "\"model.layers.{l}.input_layernorm.weight\"");
	SW("qkv_proj", "[QKV, H]", " count: L,",
	   "[\"model.layers.{l}.self_attn.q_proj.weight\", "
	   "\"model.layers.{l}.self_attn.k_proj.weight\", "
	   "\"model.layers.{l}.self_attn.v_proj.weight\"]", sp_qkv);
	if (m->qkv_bias)
		SW("qkv_bias", "[QKV]", " count: L,",
		   "[\"model.layers.{l}.self_attn.q_proj.bias\", "
		   "\"model.layers.{l}.self_attn.k_proj.bias\", "
		   "\"model.layers.{l}.self_attn.v_proj.bias\"]", sp_qkv);
	if (m->qk_norm) {
		W("q_norm", "[HD]", " count: L,", "\"model.layers.{l}.self_attn.q_norm.weight\"");
		W("k_norm", "[HD]", " count: L,", "\"model.layers.{l}.self_attn.k_norm.weight\"");
	}
	SW("o_proj", "[H, QW]", " count: L,", "\"model.layers.{l}.self_attn.o_proj.weight\"",
	   tp ? ", split: {axis: 1, unit: HD}" : "");
	W("post_attention_layernorm", "[H]", " count: L,",
	  "\"model.layers.{l}.post_attention_layernorm.weight\"");
	if (mixed) {
		for (int64_t l = 0; l < m->layers; l++) {
			if (hf_moe_sparse(&moe, l)) {
				if (hf_put_moe(&b, &moe, HF_MOE_WEIGHTS, dt, ckpath, l) != 0)
					goto nomem;
				continue;
			}
			hf_put(&b, "  gate_up_proj_%lld: {dtype: %s, shape: [F2, H], role: weight, init: "
			       "{kind: safetensors, file: \"%s\", tensor: [\"model.layers.%lld.mlp."
			       "gate_proj.weight\", \"model.layers.%lld.mlp.up_proj.weight\"]}}\n",
			       (long long)l, dt, ckpath, (long long)l, (long long)l);
			hf_put(&b, "  down_proj_%lld: {dtype: %s, shape: [H, F], role: weight, init: "
			       "{kind: safetensors, file: \"%s\", tensor: \"model.layers.%lld.mlp."
			       "down_proj.weight\"}}\n", (long long)l, dt, ckpath, (long long)l);
		}
	} else if (moe.on) {
		hf_put(&b, "%s", moe_text[HF_MOE_WEIGHTS]);
	} else {
		SW("gate_up_proj", "[F2, H]", " count: L,",
		   "[\"model.layers.{l}.mlp.gate_proj.weight\", "
		   "\"model.layers.{l}.mlp.up_proj.weight\"]", ", split: {axis: 0, blocks: [F, F]}");
		SW("down_proj", "[H, F]", " count: L,", "\"model.layers.{l}.mlp.down_proj.weight\"",
		   ", split: {axis: 1}");
	}
	W("norm", "[H]", "", "model.norm.weight");
	if (!m->tied)
		SW("lm_head", "[V, H]", "", "lm_head.weight", sp_rows);
#undef W
#undef SW
	{
		const char *sp_heads = tp ? ", split: {axis: 1, unit: HD}" : "";
		hf_put(&b, "\n  k_cache: {dtype: %s, shape: [S, KVW], role: state, count: L%s}\n", dt,
		       sp_heads);
		hf_put(&b, "  v_cache: {dtype: %s, shape: [S, KVW], role: state, count: L%s}\n\n", dt,
		       sp_heads);
		hf_put(&b, "  x:      {dtype: %s, shape: [T, H]}      # the residual stream\n", dt);
		hf_put(&b, "  h:      {dtype: %s, shape: [T, H]}\n", dt);
		hf_put(&b, "  qkv:    {dtype: %s, shape: [T, QKV]%s}\n", dt,
		       tp ? ", split: {axis: 1, blocks: [QW, KVW, KVW], unit: HD}" : "");
		hf_put(&b, "  q:      {dtype: %s, shape: [T, QW]%s}\n", dt, sp_heads);
		hf_put(&b, "  att:    {dtype: %s, shape: [T, QW]%s}\n", dt, sp_heads);
	}
	if (moe.on)
		hf_put(&b, "%s", moe_text[HF_MOE_TENSORS]);
	if (!moe.on || mixed)
		hf_put(&b, "  act:    {dtype: %s, shape: [T, F]%s}\n", dt, tp ? ", split: {axis: 1}" : "");
	hf_put(&b, "  logits: {dtype: %s, shape: [T, V], role: output}\n", dt);
	hf_put(&b, "  next:   {dtype: i32, shape: [T], role: output}\n\n");

	hf_put(&b, "ops:\n");
	hf_put(&b, "  - {op: embedding, name: embed, in: [embed_tokens, ids], out: [x]}\n");
	hf_put(&lb, "      - {op: rmsnorm, name: \"input_layernorm.{l}\", in: [x, \"input_layernorm[l]\"], "
	           "out: [h], attrs: {eps: %.9g}}\n", eps);
	hf_put(&lb, "      - {op: matmul, name: \"qkv.{l}\", in: [h, \"qkv_proj[l]\"], out: [qkv], "
	           "attrs: {trans_b: true}}\n");
	if (m->qkv_bias)
		hf_put(&lb, "      - {op: add, name: \"qkv_bias.{l}\", in: [qkv, \"qkv_bias[l]\"], "
		           "out: [qkv]}\n");
	/* Qwen3's norms of q and k: rope_kv_write's weights, qk_norm folded in */
	hf_put(&lb, "      - op: rope_kv_write\n        name: \"rope_kv.{l}\"\n"
	           "        in: [qkv, pos%s]\n        out: [q, \"k_cache[l]\", \"v_cache[l]\"]\n"
	           "        attrs: {heads: NH, kv_heads: NKV, head_dim: HD, theta: %.17g",
	           m->qk_norm ? ", \"q_norm[l]\", \"k_norm[l]\"" : "", rope.theta);
	hf_put_rope(&lb, &rope);
	if (m->qk_norm)
		hf_put(&lb, ", eps: %.9g", eps);
	hf_put(&lb, "}\n");
	hf_put(&lb, "      - op: attention\n        name: \"attn.{l}\"\n"
	           "        in: [q, \"k_cache[l]\", \"v_cache[l]\"]\n        out: [att]\n"
	           "        attrs: {heads: NH, kv_heads: NKV, head_dim: HD, kv_len: kv_len, "
	           "causal: true}\n");
	hf_put(&lb, "      - {op: matmul_add, name: \"o.{l}\", in: [x, att, \"o_proj[l]\"], out: [x], "
	           "attrs: {trans_b: true}}\n");
	hf_put(&lb, "      - {op: rmsnorm, name: \"post_attention_layernorm.{l}\", in: [x, "
	           "\"post_attention_layernorm[l]\"], out: [h], attrs: {eps: %.9g}}\n", eps);
	if (lb.failed)
		goto nomem;
	if (!mixed) {
		hf_put(&b, "  - repeat: L\n    as: l\n    ops:\n%s", lb.s);
		if (moe.on) {
			hf_put(&b, "%s", moe_text[HF_MOE_OPS]);
		} else {
			hf_put(&b, "      - {op: matmul_silu_mul, name: \"gate_up.{l}\", in: [h, "
			           "\"gate_up_proj[l]\"], out: [act], attrs: {trans_b: true}}\n");
			hf_put(&b, "      - {op: matmul_add, name: \"down.{l}\", in: [x, act, "
			           "\"down_proj[l]\"], out: [x], attrs: {trans_b: true}}\n");
		}
	}
	for (int64_t l = 0; mixed && l < m->layers; l++) {
		/* a block of one: the layer's ops at the indentation of the others */
		hf_put(&b, "  - repeat: 1\n    ops:\n");
		hf_put_layer(&b, lb.s, l);
		if (hf_moe_sparse(&moe, l)) {
			if (hf_put_moe(&b, &moe, HF_MOE_OPS, dt, ckpath, l) != 0)
				goto nomem;
			continue;
		}
		hf_put(&b, "      - {op: matmul_silu_mul, name: \"gate_up.%lld\", in: [h, "
		           "gate_up_proj_%lld], out: [act], attrs: {trans_b: true}}\n", (long long)l,
		       (long long)l);
		hf_put(&b, "      - {op: matmul_add, name: \"down.%lld\", in: [x, act, down_proj_%lld], "
		           "out: [x], attrs: {trans_b: true}}\n", (long long)l, (long long)l);
	}
	hf_put(&b, "  - {op: rmsnorm, name: norm, in: [x, norm], out: [h], attrs: {eps: %.9g}}\n", eps);
	hf_put(&b, "  - {op: matmul, name: lm_head, in: [h, %s], out: [logits], attrs: {trans_b: true}}\n",
	       m->tied ? "embed_tokens" : "lm_head");
	hf_put(&b, "  - {op: argmax, name: next, in: [logits], out: [next]}\n");
	if (b.failed) {
nomem:
		hf_fail(msg, len, "out of memory");
		goto out;
	}
	*text = b.s;
	b.s = NULL;
	rc = 0;
out:
	for (int i = 0; i < 4; i++)
		free(moe_text[i]);
	free(lb.s);
	free(b.s);
	free(ckdefault);
	st_checkpoint_close(ck);
	json_decref(c.root);
	return rc;
}

#endif /* HAVE_JANSSON */
