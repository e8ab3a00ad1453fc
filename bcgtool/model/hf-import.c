/*
 * hf-import.c - op scripts for Hugging Face decoder-only models (see
 * hf-import.h). The config is read with jansson.
 */
#include "config.h"

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

/* The rope: theta, and "default" as the only type. transformers writes
 * rope_parameters (5.x) or rope_theta with rope_scaling (4.x). */
static int hf_rope(struct hf_cfg *c, double *theta)
{
	json_t *rp = json_object_get(c->root, "rope_parameters");
	json_t *rs = json_object_get(c->root, "rope_scaling");
	json_t *type;

	if (rs != NULL && !json_is_null(rs)) {
		type = json_object_get(rs, "rope_type");
		if (type == NULL)
			type = json_object_get(rs, "type");
		if (!json_is_string(type) || strcmp(json_string_value(type), "default") != 0)
			return hf_fail(c->msg, c->len, "%s: not supported: rope_scaling of type '%s' "
			               "(bcgtool's rope is the default one)", c->path,
			               json_is_string(type) ? json_string_value(type) : "?");
	}
	if (rp != NULL && json_is_object(rp)) {
		type = json_object_get(rp, "rope_type");
		if (type != NULL && (!json_is_string(type) ||
		                     strcmp(json_string_value(type), "default") != 0))
			return hf_fail(c->msg, c->len, "%s: not supported: rope_parameters of type '%s' "
			               "(bcgtool's rope is the default one)", c->path,
			               json_is_string(type) ? json_string_value(type) : "?");
		if (json_object_get(rp, "rope_theta") != NULL)
			return hf_num(c, rp, "rope_theta", -1, theta);
	}
	return hf_num(c, c->root, "rope_theta", 10000.0, theta);
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

int hf_import(const char *dir, const struct hf_import_opts *o, char **text,
              struct hf_model *m, char *msg, size_t len)
{
	char path[4096];
	json_error_t jerr;
	struct hf_cfg c = { .path = path, .msg = msg, .len = len };
	struct st_checkpoint *ck = NULL;
	struct hf_buf b = { 0 };
	struct hf_moe moe;
	char *moe_text[4] = { NULL, NULL, NULL, NULL };
	json_t *arch, *v;
	double eps, theta;
	int64_t maxpos, window = 0;
	const char *a, *dt, *ckpath = NULL;
	char *ckdefault = NULL;
	int rc = -1;

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
	    strcmp(a, "Qwen2ForCausalLM") != 0 && !hf_moe_arch(a)) {
		hf_fail(msg, len, "%s: not supported: architecture '%.64s' (bcgtool imports "
		        "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
		        "MixtralForCausalLM and Qwen2MoeForCausalLM)", path, a);
		goto out;
	}
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
	    hf_rope(&c, &theta) != 0 || hf_dtype(&c, &m->dtype) != 0)
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
	/* A sliding window narrower than the cache would make attention see
	 * less than every position: refuse rather than compute another model. */
	v = json_object_get(c.root, "sliding_window");
	if (json_is_integer(v) &&
	    ((strcmp(a, "Qwen2ForCausalLM") != 0 && strcmp(a, "Qwen2MoeForCausalLM") != 0) ||
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
	if (hf_moe_checkpoint(ck, ckdefault, m->layers, &moe, msg, len) != 0)
		goto out;
	if (moe.on) {
		for (int i = 0; i < 4; i++)
			if ((moe_text[i] = hf_moe_text(&moe, i, dt, ckpath)) == NULL) {
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
	else
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
#define W(name, shape, count, tensor)                                                    \
	hf_put(&b, "  %s: {dtype: %s, shape: %s, role: weight,%s init: {kind: safetensors, "  \
	           "file: \"%s\", tensor: %s}}\n", name, dt, shape, count, ckpath, tensor)
	W("embed_tokens", "[V, H]", "", "model.embed_tokens.weight");
	W("input_layernorm", "[H]", " count: L,", "\"model.layers.{l}.input_layernorm.weight\"");
	W("qkv_proj", "[QKV, H]", " count: L,",
	  "[\"model.layers.{l}.self_attn.q_proj.weight\", "
	  "\"model.layers.{l}.self_attn.k_proj.weight\", "
	  "\"model.layers.{l}.self_attn.v_proj.weight\"]");
	if (m->qkv_bias)
		W("qkv_bias", "[QKV]", " count: L,",
		  "[\"model.layers.{l}.self_attn.q_proj.bias\", "
		  "\"model.layers.{l}.self_attn.k_proj.bias\", "
		  "\"model.layers.{l}.self_attn.v_proj.bias\"]");
	W("o_proj", "[H, QW]", " count: L,", "\"model.layers.{l}.self_attn.o_proj.weight\"");
	W("post_attention_layernorm", "[H]", " count: L,",
	  "\"model.layers.{l}.post_attention_layernorm.weight\"");
	if (moe.on) {
		hf_put(&b, "%s", moe_text[HF_MOE_WEIGHTS]);
	} else {
		W("gate_up_proj", "[F2, H]", " count: L,",
		  "[\"model.layers.{l}.mlp.gate_proj.weight\", "
		  "\"model.layers.{l}.mlp.up_proj.weight\"]");
		W("down_proj", "[H, F]", " count: L,", "\"model.layers.{l}.mlp.down_proj.weight\"");
	}
	W("norm", "[H]", "", "model.norm.weight");
	if (!m->tied)
		W("lm_head", "[V, H]", "", "lm_head.weight");
#undef W
	hf_put(&b, "\n  k_cache: {dtype: %s, shape: [S, KVW], role: state, count: L}\n", dt);
	hf_put(&b, "  v_cache: {dtype: %s, shape: [S, KVW], role: state, count: L}\n\n", dt);
	hf_put(&b, "  x:      {dtype: %s, shape: [T, H]}      # the residual stream\n", dt);
	hf_put(&b, "  h:      {dtype: %s, shape: [T, H]}\n", dt);
	hf_put(&b, "  qkv:    {dtype: %s, shape: [T, QKV]}\n", dt);
	hf_put(&b, "  q:      {dtype: %s, shape: [T, QW]}\n", dt);
	hf_put(&b, "  att:    {dtype: %s, shape: [T, QW]}\n", dt);
	if (moe.on)
		hf_put(&b, "%s", moe_text[HF_MOE_TENSORS]);
	else
		hf_put(&b, "  act:    {dtype: %s, shape: [T, F]}\n", dt);
	hf_put(&b, "  logits: {dtype: %s, shape: [T, V], role: output}\n", dt);
	hf_put(&b, "  next:   {dtype: i32, shape: [T], role: output}\n\n");

	hf_put(&b, "ops:\n");
	hf_put(&b, "  - {op: embedding, name: embed, in: [embed_tokens, ids], out: [x]}\n");
	hf_put(&b, "  - repeat: L\n    as: l\n    ops:\n");
	hf_put(&b, "      - {op: rmsnorm, name: \"input_layernorm.{l}\", in: [x, \"input_layernorm[l]\"], "
	           "out: [h], attrs: {eps: %.9g}}\n", eps);
	hf_put(&b, "      - {op: matmul, name: \"qkv.{l}\", in: [h, \"qkv_proj[l]\"], out: [qkv], "
	           "attrs: {trans_b: true}}\n");
	if (m->qkv_bias)
		hf_put(&b, "      - {op: add, name: \"qkv_bias.{l}\", in: [qkv, \"qkv_bias[l]\"], "
		           "out: [qkv]}\n");
	hf_put(&b, "      - op: rope_kv_write\n        name: \"rope_kv.{l}\"\n"
	           "        in: [qkv, pos]\n        out: [q, \"k_cache[l]\", \"v_cache[l]\"]\n"
	           "        attrs: {heads: NH, kv_heads: NKV, head_dim: HD, theta: %.17g}\n", theta);
	hf_put(&b, "      - op: attention\n        name: \"attn.{l}\"\n"
	           "        in: [q, \"k_cache[l]\", \"v_cache[l]\"]\n        out: [att]\n"
	           "        attrs: {heads: NH, kv_heads: NKV, head_dim: HD, kv_len: kv_len, "
	           "causal: true}\n");
	hf_put(&b, "      - {op: matmul_add, name: \"o.{l}\", in: [x, att, \"o_proj[l]\"], out: [x], "
	           "attrs: {trans_b: true}}\n");
	hf_put(&b, "      - {op: rmsnorm, name: \"post_attention_layernorm.{l}\", in: [x, "
	           "\"post_attention_layernorm[l]\"], out: [h], attrs: {eps: %.9g}}\n", eps);
	if (moe.on) {
		hf_put(&b, "%s", moe_text[HF_MOE_OPS]);
	} else {
		hf_put(&b, "      - {op: matmul_silu_mul, name: \"gate_up.{l}\", in: [h, "
		           "\"gate_up_proj[l]\"], out: [act], attrs: {trans_b: true}}\n");
		hf_put(&b, "      - {op: matmul_add, name: \"down.{l}\", in: [x, act, \"down_proj[l]\"], "
		           "out: [x], attrs: {trans_b: true}}\n");
	}
	hf_put(&b, "  - {op: rmsnorm, name: norm, in: [x, norm], out: [h], attrs: {eps: %.9g}}\n", eps);
	hf_put(&b, "  - {op: matmul, name: lm_head, in: [h, %s], out: [logits], attrs: {trans_b: true}}\n",
	       m->tied ? "embed_tokens" : "lm_head");
	hf_put(&b, "  - {op: argmax, name: next, in: [logits], out: [next]}\n");
	if (b.failed) {
		hf_fail(msg, len, "out of memory");
		goto out;
	}
	*text = b.s;
	b.s = NULL;
	rc = 0;
out:
	for (int i = 0; i < 4; i++)
		free(moe_text[i]);
	free(b.s);
	free(ckdefault);
	st_checkpoint_close(ck);
	json_decref(c.root);
	return rc;
}

#endif /* HAVE_JANSSON */
