/*
 * hf-moe.h - the mixture-of-experts part of hf_import (hf-import.h):
 * MixtralForCausalLM, Qwen2MoeForCausalLM and Qwen3MoeForCausalLM.
 *
 * A layer's MLP is a mixture of experts: a router product, moe_router
 * (softmax over all experts, the top k, renormalized where the model says:
 * always for Mixtral, norm_topk_prob for the Qwen models), moe_experts
 * over the experts' weights, and for Qwen2-MoE the shared expert with its
 * sigmoid gate (gated_add). The experts' weights are read as checkpoints
 * store them: per expert (w1/w3/w2 for Mixtral, gate_proj/up_proj/down_proj
 * for Qwen), each read straight into its row block of one [E*2I, H] and one
 * [E*H, I] weight a layer; or, where the checkpoint holds them fused
 * (experts.gate_up_proj [E, 2I, H] and experts.down_proj [E, H, I], as
 * transformers 5 holds them in memory), each fused tensor read whole.
 *
 * The Qwen models may keep dense MLPs (of intermediate_size) in some
 * layers, as transformers decides: a layer is a mixture of experts unless
 * mlp_only_layers lists it or decoder_sparse_step does not divide its
 * index plus one. Such a model's script names each layer's MLP weights
 * apart (router_3, gate_up_proj_0, ...) and lists its layers one by one.
 */
#ifndef BCG_MODEL_HF_MOE_H
#define BCG_MODEL_HF_MOE_H

#include <stddef.h>
#include <stdint.h>

#include "model/safetensors.h"

struct json_t;

struct hf_moe {
	int     on;                 /* the architecture has experts */
	int64_t experts, top_k;
	int64_t ffn;                /* I: each expert's intermediate size */
	int64_t shared_ffn;         /* Qwen2-MoE's shared expert; 0: none */
	int     renorm;             /* divide the top k weights by their sum */
	int     fused;              /* the checkpoint holds 3-D expert tensors */
	const char *block;          /* "block_sparse_moe" (Mixtral's files) or "mlp" */
	int64_t sparse_step;        /* decoder_sparse_step: 1 for every layer */
	struct json_t *mlp_only;    /* mlp_only_layers (borrowed from the config); or NULL */
};

/* Whether layer L of a model with MOE->on has experts (not a dense MLP). */
int hf_moe_sparse(const struct hf_moe *moe, int64_t l);

/* Whether some of the LAYERS layers are dense MLPs. */
int hf_moe_mixed(const struct hf_moe *moe, int64_t layers);

/* Whether ARCH is a mixture-of-experts architecture bcgtool imports. */
int hf_moe_arch(const char *arch);

/* Read the experts' sizes of config ROOT (at PATH) for ARCH into MOE.
 * A value the kernels or the script cannot take is refused, naming the key
 * and the value. 0, or -1 with a sentence in MSG. */
int hf_moe_config(struct json_t *root, const char *path, const char *arch,
                  struct hf_moe *moe, char *msg, size_t len);

/* Check that checkpoint CK (at PATH) holds every expert tensor of LAYERS
 * layers, choose the per-expert or the fused form, and name the first
 * missing tensor. 0, or -1 with a sentence in MSG. */
int hf_moe_checkpoint(const struct st_checkpoint *ck, const char *path, int64_t layers,
                      struct hf_moe *moe, char *msg, size_t len);

/* The parts of the script: dims, weights, activations, a layer's MLP ops
 * (the input h, the residual x). PART is one of these; DT the dtype's
 * name, CKPATH the checkpoint as the script names it. LAYER -1: the
 * weights as families of L members and the ops of a repeat block over l;
 * else the weights and ops of that layer alone, named with its number.
 * Malloc'd text, or NULL when out of memory. */
enum { HF_MOE_DIMS, HF_MOE_WEIGHTS, HF_MOE_TENSORS, HF_MOE_OPS };
char *hf_moe_text(const struct hf_moe *moe, int part, const char *dt, const char *ckpath,
                  int64_t layer);

#endif /* BCG_MODEL_HF_MOE_H */
