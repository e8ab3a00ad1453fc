/*
 * hf-import.h - op scripts for Hugging Face decoder-only models.
 *
 * A model directory holds config.json and model.safetensors (or shards
 * and model.safetensors.index.json). hf_import reads the config's
 * architecture and sizes and the checkpoint's tensor table, and writes an
 * op script that computes the model's forward step with the fused kinds,
 * every weight read from the checkpoint by its own name:
 *
 *   LlamaForCausalLM    grouped-query attention, SwiGLU, RMSNorm, rope
 *   MistralForCausalLM  the same, with a sliding window no wider than the
 *                       cache (so it never slides)
 *   Qwen2ForCausalLM    the same, with biases on the q, k and v projections
 *   Qwen3ForCausalLM    the same without biases, with an rmsnorm over each
 *                       head of q and of k before the rope (qk_norm's, folded
 *                       into rope_kv_write as its q_w and k_w)
 *   MixtralForCausalLM, Qwen2MoeForCausalLM, Qwen3MoeForCausalLM
 *                       a mixture of experts in every layer's MLP (hf-moe.h);
 *                       Qwen2-MoE as Qwen2, Qwen3-MoE as Qwen3 otherwise
 *
 * The rope is any of the types the rope kinds compute (default, linear,
 * dynamic, yarn, llama3), read from rope_parameters (transformers 5) or
 * rope_scaling with rope_theta (older configs; the type under rope_type or
 * the legacy key type); dynamic only with a cache no longer than
 * max_position_embeddings, where its frequencies are exact.
 *
 * The q, k and v projections of a layer are separate checkpoint tensors;
 * the script stacks them as row blocks of one [q|k|v, H] weight (and
 * their biases of one [q|k|v] vector), each read straight into its place,
 * so one product computes all three. Gate and up stack the same way into
 * the [2F, H] weight of matmul_silu_mul, gate first. A tied model uses its
 * embedding table as the lm-head.
 *
 * Anything the script could not compute exactly -- another architecture,
 * another rope type or an option of one the kernels do not implement, a
 * sliding window in use, experts in a dense architecture, in only some
 * layers or more than the kernels take, biases elsewhere, an activation
 * other than SiLU -- is refused with "not supported: ...", naming the key
 * and its value.
 */
#ifndef BCG_MODEL_HF_IMPORT_H
#define BCG_MODEL_HF_IMPORT_H

#include <stddef.h>
#include <stdint.h>

struct hf_import_opts {
	const int64_t *tokens;     /* capture sizes, ascending */
	uint32_t       ntokens;
	int64_t        positions;  /* cache positions; 0: min(max_position_embeddings, 2048) */
	int            dtype;      /* enum plan_dtype; 0: the config's */
	const char    *weights;    /* the checkpoint path as the script writes it */
};

/* What hf_import found, for the command's summary. */
struct hf_model {
	char    arch[64];
	int64_t layers, hidden, heads, kv_heads, head_dim, ffn, vocab, positions;
	int     dtype;
	int     tied;
	int     qkv_bias;
	int     qk_norm;           /* per-head rmsnorm of q and k (Qwen3) */
	char    rope_type[16];     /* "default", "llama3", ... */
	int64_t experts, top_k;    /* 0 for a dense model */
};

/* Write the script for the model in DIR into *TEXT (malloc'd). On failure
 * returns -1 with a sentence in MSG ("not supported: ..." for a model it
 * cannot import). */
int hf_import(const char *dir, const struct hf_import_opts *o, char **text,
              struct hf_model *m, char *msg, size_t len);

/* The checkpoint of DIR: model.safetensors.index.json when it exists, else
 * model.safetensors (a path under DIR, malloc'd). */
char *hf_checkpoint_path(const char *dir);

#endif /* BCG_MODEL_HF_IMPORT_H */
