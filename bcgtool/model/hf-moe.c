/*
 * hf-moe.c - the mixture-of-experts part of hf_import (see hf-moe.h).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_JANSSON
#include <jansson.h>
#endif

#include "model/hf-moe.h"
#include "ops/op.h"

static int moe_fail(char *msg, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int moe_fail(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return -1;
}

int hf_moe_arch(const char *arch)
{
	return strcmp(arch, "MixtralForCausalLM") == 0 || strcmp(arch, "Qwen2MoeForCausalLM") == 0 ||
	       strcmp(arch, "Qwen3MoeForCausalLM") == 0;
}

#ifdef HAVE_JANSSON

/* Integer KEY of ROOT, at least 0; DFLT (>= 0) when absent, -1 required. */
static int moe_int(json_t *root, const char *path, const char *key, int64_t dflt, int64_t *out,
                   char *msg, size_t len)
{
	json_t *v = json_object_get(root, key);

	if (v == NULL || json_is_null(v)) {
		if (dflt >= 0) {
			*out = dflt;
			return 0;
		}
		return moe_fail(msg, len, "%s: no '%s'", path, key);
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
		return moe_fail(msg, len, "%s: '%s' must be a non-negative integer", path, key);
	*out = json_integer_value(v);
	return 0;
}

int hf_moe_config(struct json_t *root, const char *path, const char *arch,
                  struct hf_moe *moe, char *msg, size_t len)
{
	int mixtral = strcmp(arch, "MixtralForCausalLM") == 0;
	int qwen2 = strcmp(arch, "Qwen2MoeForCausalLM") == 0;
	/* the Qwen configs say num_experts; transformers 5 writes it as
	 * num_local_experts too */
	const char *ekey = mixtral || (json_object_get(root, "num_experts") == NULL &&
	                               json_object_get(root, "num_local_experts") != NULL) ?
	                   "num_local_experts" : "num_experts";
	const char *fkey = mixtral ? "intermediate_size" : "moe_intermediate_size";
	int64_t step;
	json_t *v;

	memset(moe, 0, sizeof *moe);
	moe->sparse_step = 1;
	if (!hf_moe_arch(arch))
		return 0;
	moe->on = 1;
	moe->block = mixtral ? "block_sparse_moe" : "mlp";
	if (moe_int(root, path, ekey, -1, &moe->experts, msg, len) != 0 ||
	    moe_int(root, path, "num_experts_per_tok", -1, &moe->top_k, msg, len) != 0 ||
	    moe_int(root, path, fkey, -1, &moe->ffn, msg, len) != 0)
		return -1;
	if (moe->experts < 1 || moe->experts > OP_MOE_MAX_EXPERTS)
		return moe_fail(msg, len, "%s: not supported: %s %lld (the kernels take 1 to %d "
		                "experts)", path, ekey, (long long)moe->experts, OP_MOE_MAX_EXPERTS);
	if (moe->top_k < 1 || moe->top_k > OP_MOE_MAX_TOP_K || moe->top_k > moe->experts)
		return moe_fail(msg, len, "%s: not supported: num_experts_per_tok %lld (the kernels "
		                "take 1 to %lld experts a token)", path, (long long)moe->top_k,
		                (long long)(moe->experts < OP_MOE_MAX_TOP_K ? moe->experts :
		                            OP_MOE_MAX_TOP_K));
	if (moe->ffn < 1)
		return moe_fail(msg, len, "%s: '%s' must be a positive integer", path, fkey);
	if (mixtral) {
		moe->renorm = 1;
	} else {
		v = json_object_get(root, "norm_topk_prob");
		if (v != NULL && !json_is_null(v) && !json_is_boolean(v))
			return moe_fail(msg, len, "%s: 'norm_topk_prob' must be true or false", path);
		moe->renorm = json_is_true(v);
		if (moe_int(root, path, "decoder_sparse_step", 1, &step, msg, len) != 0)
			return -1;
		if (step < 1)
			return moe_fail(msg, len, "%s: 'decoder_sparse_step' must be a positive integer",
			                path);
		moe->sparse_step = step;
		/* the layers listed are dense MLPs; numbers past the last layer
		 * name none, as in transformers */
		v = json_object_get(root, "mlp_only_layers");
		if (v != NULL && !json_is_null(v)) {
			size_t i;
			json_t *x;
			if (!json_is_array(v))
				return moe_fail(msg, len, "%s: 'mlp_only_layers' must be a list of layer "
				                "numbers", path);
			json_array_foreach(v, i, x)
				if (!json_is_integer(x) || json_integer_value(x) < 0)
					return moe_fail(msg, len, "%s: 'mlp_only_layers' must be a list of "
					                "layer numbers (item %zu is not)", path, i);
			moe->mlp_only = v;
		}
	}
	if (qwen2 && moe_int(root, path, "shared_expert_intermediate_size", 0, &moe->shared_ffn,
	                     msg, len) != 0)
		return -1;
	return 0;
}

int hf_moe_sparse(const struct hf_moe *moe, int64_t l)
{
	size_t i;
	json_t *x;

	if (moe->mlp_only != NULL)
		json_array_foreach(moe->mlp_only, i, x)
			if (json_integer_value(x) == l)
				return 0;
	return (l + 1) % moe->sparse_step == 0;
}

#else

int hf_moe_sparse(const struct hf_moe *moe, int64_t l)
{
	(void)moe;
	(void)l;
	return 1;
}

int hf_moe_config(struct json_t *root, const char *path, const char *arch,
                  struct hf_moe *moe, char *msg, size_t len)
{
	(void)root;
	(void)arch;
	memset(moe, 0, sizeof *moe);
	return moe_fail(msg, len, "%s: cannot import: built without jansson", path);
}

#endif /* HAVE_JANSSON */

int hf_moe_mixed(const struct hf_moe *moe, int64_t layers)
{
	for (int64_t l = 0; moe->on && l < layers; l++)
		if (!hf_moe_sparse(moe, l))
			return 1;
	return 0;
}

static int moe_has(const struct st_checkpoint *ck, const char *name)
{
	const struct st_file *f;
	const struct st_tensor *t;
	char msg[8];

	return st_checkpoint_find(ck, name, &f, &t, msg, sizeof msg) == 0;
}

/* The checkpoint names of expert E's three tensors in layer L. */
static void moe_names(const struct hf_moe *moe, int64_t l, int64_t e, char gate[128],
                      char up[128], char down[128])
{
	int mixtral = strcmp(moe->block, "block_sparse_moe") == 0;

	snprintf(gate, 128, "model.layers.%lld.%s.experts.%lld.%s.weight", (long long)l,
	         moe->block, (long long)e, mixtral ? "w1" : "gate_proj");
	snprintf(up, 128, "model.layers.%lld.%s.experts.%lld.%s.weight", (long long)l,
	         moe->block, (long long)e, mixtral ? "w3" : "up_proj");
	snprintf(down, 128, "model.layers.%lld.%s.experts.%lld.%s.weight", (long long)l,
	         moe->block, (long long)e, mixtral ? "w2" : "down_proj");
}

int hf_moe_checkpoint(const struct st_checkpoint *ck, const char *path, int64_t layers,
                      struct hf_moe *moe, char *msg, size_t len)
{
	char name[128], g[128], u[128], d[128];

	if (!moe->on)
		return 0;
	/* Mixtral as transformers 5 holds it in memory: the block is "mlp" */
	if (strcmp(moe->block, "block_sparse_moe") == 0 &&
	    !moe_has(ck, "model.layers.0.block_sparse_moe.gate.weight") &&
	    moe_has(ck, "model.layers.0.mlp.gate.weight"))
		moe->block = "mlp";
	/* each layer checked in turn, so that a config of more layers than
	 * the checkpoint holds stops at the first missing */
	for (int64_t l = 0, first = 1; l < layers; l++) {
		if (!hf_moe_sparse(moe, l)) {
			const char *part[3] = { "gate_proj", "up_proj", "down_proj" };
			for (int i = 0; i < 3; i++) {
				snprintf(name, sizeof name, "model.layers.%lld.mlp.%s.weight", (long long)l,
				         part[i]);
				if (!moe_has(ck, name))
					return moe_fail(msg, len, "%s: no tensor '%s' (the dense MLP of layer "
					                "%lld)", path, name, (long long)l);
			}
			continue;
		}
		if (first) {
			/* the form of the first layer with experts */
			snprintf(name, sizeof name, "model.layers.%lld.%s.experts.gate_up_proj",
			         (long long)l, moe->block);
			moe->fused = moe_has(ck, name);
			first = 0;
		}
		snprintf(name, sizeof name, "model.layers.%lld.%s.gate.weight", (long long)l,
		         moe->block);
		if (!moe_has(ck, name))
			return moe_fail(msg, len, "%s: no tensor '%s' (the router of layer %lld)", path,
			                name, (long long)l);
		if (moe->fused) {
			const char *part[2] = { "gate_up_proj", "down_proj" };
			for (int i = 0; i < 2; i++) {
				snprintf(name, sizeof name, "model.layers.%lld.%s.experts.%s",
				         (long long)l, moe->block, part[i]);
				if (!moe_has(ck, name))
					return moe_fail(msg, len, "%s: no tensor '%s' (the experts of layer "
					                "%lld)", path, name, (long long)l);
			}
		} else {
			for (int64_t e = 0; e < moe->experts; e++) {
				moe_names(moe, l, e, g, u, d);
				const char *miss = !moe_has(ck, g) ? g : !moe_has(ck, u) ? u :
				                   !moe_has(ck, d) ? d : NULL;
				if (miss != NULL)
					return moe_fail(msg, len, "%s: no tensor '%s' (expert %lld of layer "
					                "%lld)", path, miss, (long long)e, (long long)l);
			}
		}
		if (moe->shared_ffn > 0) {
			const char *part[4] = { "shared_expert.gate_proj.weight",
			                        "shared_expert.up_proj.weight",
			                        "shared_expert.down_proj.weight",
			                        "shared_expert_gate.weight" };
			for (int i = 0; i < 4; i++) {
				snprintf(name, sizeof name, "model.layers.%lld.%s.%s", (long long)l,
				         moe->block, part[i]);
				if (!moe_has(ck, name))
					return moe_fail(msg, len, "%s: no tensor '%s' (the shared expert of "
					                "layer %lld)", path, name, (long long)l);
			}
		}
	}
	return 0;
}

/* The experts' weight lists: as families with {l} for the layer (LAYER
 * -1), or layer LAYER's alone, named with the suffix _LAYER. */
static void moe_weight_lists(FILE *f, const struct hf_moe *moe, const char *dt,
                             const char *ckpath, int64_t layer)
{
	char g[128], u[128], d[128], lay[24], sfx[24];
	const char *cnt = layer < 0 ? " count: L," : "", *cntb = layer < 0 ? "    count: L\n" : "";

	snprintf(lay, sizeof lay, layer < 0 ? "{l}" : "%lld", (long long)layer);
	snprintf(sfx, sizeof sfx, layer < 0 ? "" : "_%lld", (long long)layer);
	fprintf(f, "  router%s: {dtype: %s, shape: [NE, H], role: weight,%s init: {kind: "
	        "safetensors, file: \"%s\", tensor: \"model.layers.%s.%s.gate.weight\"}}\n", sfx, dt,
	        cnt, ckpath, lay, moe->block);
	if (moe->fused) {
		fprintf(f, "  experts_gate_up%s: {dtype: %s, shape: [EGU, H], role: weight,%s "
		        "init: {kind: safetensors, file: \"%s\", tensor: "
		        "\"model.layers.%s.%s.experts.gate_up_proj\"}}\n", sfx, dt, cnt, ckpath, lay,
		        moe->block);
		fprintf(f, "  experts_down%s: {dtype: %s, shape: [EH, FE], role: weight,%s "
		        "init: {kind: safetensors, file: \"%s\", tensor: "
		        "\"model.layers.%s.%s.experts.down_proj\"}}\n", sfx, dt, cnt, ckpath, lay,
		        moe->block);
	} else {
		/* per expert: gate then up rows of each expert, in expert order */
		fprintf(f, "  experts_gate_up%s:\n    dtype: %s\n    shape: [EGU, H]\n"
		        "    role: weight\n%s    init:\n      kind: safetensors\n"
		        "      file: \"%s\"\n      tensor:\n", sfx, dt, cntb, ckpath);
		for (int64_t e = 0; e < moe->experts; e++) {
			moe_names(moe, 0, e, g, u, d);
			/* the names with the layer as LAY */
			fprintf(f, "        - \"model.layers.%s%s\"\n        - \"model.layers.%s%s\"\n",
			        lay, strchr(g + strlen("model.layers."), '.'),
			        lay, strchr(u + strlen("model.layers."), '.'));
		}
		fprintf(f, "  experts_down%s:\n    dtype: %s\n    shape: [EH, FE]\n"
		        "    role: weight\n%s    init:\n      kind: safetensors\n"
		        "      file: \"%s\"\n      tensor:\n", sfx, dt, cntb, ckpath);
		for (int64_t e = 0; e < moe->experts; e++) {
			moe_names(moe, 0, e, g, u, d);
			fprintf(f, "        - \"model.layers.%s%s\"\n", lay,
			        strchr(d + strlen("model.layers."), '.'));
		}
	}
	if (moe->shared_ffn > 0) {
		fprintf(f, "  shared_gate_up%s: {dtype: %s, shape: [FS2, H], role: weight,%s "
		        "init: {kind: safetensors, file: \"%s\", tensor: "
		        "[\"model.layers.%s.%s.shared_expert.gate_proj.weight\", "
		        "\"model.layers.%s.%s.shared_expert.up_proj.weight\"]}}\n", sfx, dt, cnt, ckpath,
		        lay, moe->block, lay, moe->block);
		fprintf(f, "  shared_down%s: {dtype: %s, shape: [H, FS], role: weight,%s "
		        "init: {kind: safetensors, file: \"%s\", tensor: "
		        "\"model.layers.%s.%s.shared_expert.down_proj.weight\"}}\n", sfx, dt, cnt, ckpath,
		        lay, moe->block);
		fprintf(f, "  shared_expert_gate%s: {dtype: %s, shape: [1, H], role: weight,%s "
		        "init: {kind: safetensors, file: \"%s\", tensor: "
		        "\"model.layers.%s.%s.shared_expert_gate.weight\"}}\n", sfx, dt, cnt, ckpath,
		        lay, moe->block);
	}
}

/* A layer's MLP ops: the weights as family members (LAYER -1: "router[l]",
 * op names "router.{l}") or as layer LAYER's own ("router_3", "router.3").
 * Without a shared expert (Qwen3-MoE, Mixtral) moe_experts adds the
 * residual x itself, in place: the bytes of moe_experts then add. With one
 * (Qwen2-MoE) the gated shared expert goes into the experts' sum before
 * the residual (x + (moe + shared), as the model adds them), so the add
 * stays an op of its own. */
static void moe_ops(FILE *f, const struct hf_moe *moe, int64_t layer)
{
	char nm[24], w[24];

	snprintf(nm, sizeof nm, layer < 0 ? "{l}" : "%lld", (long long)layer);
	snprintf(w, sizeof w, layer < 0 ? "[l]" : "_%lld", (long long)layer);
	fprintf(f, "      - {op: matmul, name: \"router.%s\", in: [h, \"router%s\"], "
	        "out: [router_logits], attrs: {trans_b: true}}\n", nm, w);
	fprintf(f, "      - {op: moe_router, name: \"route.%s\", in: [router_logits], "
	        "out: [expert_ids, expert_weights], attrs: {top_k: K, renorm: %s}}\n", nm,
	        moe->renorm ? "true" : "false");
	fprintf(f, "      - op: moe_experts\n        name: \"experts.%s\"\n"
	        "        in: [h, expert_ids, expert_weights, \"experts_gate_up%s\", "
	        "\"experts_down%s\"%s]\n        out: [%s]\n        attrs: {experts: NE}\n", nm,
	        w, w, moe->shared_ffn > 0 ? "" : ", x", moe->shared_ffn > 0 ? "moe" : "x");
	if (moe->shared_ffn > 0) {
		fprintf(f, "      - {op: matmul_silu_mul, name: \"shared_gate_up.%s\", in: [h, "
		        "\"shared_gate_up%s\"], out: [shared_act], attrs: {trans_b: true}}\n", nm, w);
		fprintf(f, "      - {op: matmul, name: \"shared_down.%s\", in: [shared_act, "
		        "\"shared_down%s\"], out: [shared], attrs: {trans_b: true}}\n", nm, w);
		fprintf(f, "      - {op: matmul, name: \"shared_gate.%s\", in: [h, "
		        "\"shared_expert_gate%s\"], out: [shared_g], attrs: {trans_b: true}}\n", nm, w);
		fprintf(f, "      - {op: gated_add, name: \"shared.%s\", in: [moe, shared, "
		        "shared_g], out: [moe]}\n", nm);
		fprintf(f, "      - {op: add, name: \"moe_add.%s\", in: [x, moe], out: [x]}\n", nm);
	}
}

char *hf_moe_text(const struct hf_moe *moe, int part, const char *dt, const char *ckpath,
                  int64_t layer)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	if (f == NULL)
		return NULL;
	switch (part) {
	case HF_MOE_DIMS:
		fprintf(f, "  NE: %lld               # experts\n", (long long)moe->experts);
		fprintf(f, "  K: %lld                # experts a token\n", (long long)moe->top_k);
		fprintf(f, "  FE: %lld               # an expert's intermediate size\n",
		        (long long)moe->ffn);
		fprintf(f, "  EGU: NE * 2 * FE\n  EH: NE * H\n");
		if (moe->shared_ffn > 0)
			fprintf(f, "  FS: %lld               # the shared expert's intermediate "
			        "size\n  FS2: 2 * FS\n", (long long)moe->shared_ffn);
		break;
	case HF_MOE_WEIGHTS:
		moe_weight_lists(f, moe, dt, ckpath, layer);
		break;
	case HF_MOE_TENSORS:
		fprintf(f, "  router_logits:  {dtype: %s, shape: [T, NE]}\n", dt);
		fprintf(f, "  expert_ids:     {dtype: i32, shape: [T, K]}\n");
		fprintf(f, "  expert_weights: {dtype: f32, shape: [T, K]}\n");
		if (moe->shared_ffn > 0) {
			fprintf(f, "  moe:    {dtype: %s, shape: [T, H]}\n", dt);
			fprintf(f, "  shared_act:  {dtype: %s, shape: [T, FS]}\n", dt);
			fprintf(f, "  shared:      {dtype: %s, shape: [T, H]}\n", dt);
			fprintf(f, "  shared_g:    {dtype: %s, shape: [T, 1]}\n", dt);
		}
		break;
	case HF_MOE_OPS:
		moe_ops(f, moe, layer);
		break;
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
