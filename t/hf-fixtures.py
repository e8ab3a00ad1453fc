#!/usr/bin/env python3
"""hf-fixtures.py - tiny random Hugging Face models and what transformers
makes of them, the independent reference of t7100-hf-import.sh.

  python3 t/hf-fixtures.py OUT_DIR [NAME...]    the fixtures of t/data/hf
                                                (all, or the NAMEs given)
  python3 t/hf-fixtures.py --llama-1b OUT_DIR   a random model of
                                                Llama-3.2-1B's shapes (bf16,
                                                about 2.5 GB), for the GPU
                                                session
  python3 t/hf-fixtures.py --llama-1b-f32 OUT_DIR
                                                the same shapes in f32
                                                (about 4.9 GB), transformers'
                                                forward in f32 with TF32
                                                off: the check of exact
                                                greedy agreement at real
                                                shape (bench/gpu-session.sh
                                                stage hf32)

The tiny models: llama, qwen2, mistral (the default rope), llama3,
llama-linear and llama-yarn (scaled ropes; their expect.json also holds
"unscaled_tokens", transformers' tokens for the same weights with the
default rope, which must differ), qwen3 and qwen3-tied (per-head q and k
norms), mixtral, qwen2-moe, qwen3-moe and mixtral-fused (mixtures of
experts), qwen2-moe-mixed and qwen3-moe-mixed (dense MLPs in some layers:
mlp_only_layers, decoder_sparse_step). Naming some remakes only those,
and PROVENANCE keeps one line a
model with the versions that made it.

For each model it writes OUT_DIR/NAME/: config.json and model.safetensors
(save_pretrained), and expect.json: the prompt, the greedy tokens that
transformers' own forward gives (one full forward a step, argmax of the
last position), the logits of the last step in logits.bin (little-endian
f32), and the smallest top-1/top-2 gap of any step (a random model whose
gap is tiny would make the token test a coin toss: seeds are chosen until
it is not; the models of real shape record the gap of every step in
"gaps" instead, since one build takes a minute). Needs torch and
transformers.

f32 means f32 here: TF32 is turned off for matmuls and cuDNN, and
attention runs on PyTorch's plain math kernel (the fused ones may round
through lower precision), so that on a GPU transformers' products are
the f32 reference that bcgtool's f32 kinds are held to.
"""
import contextlib
import json
import os
import struct
import sys
import time

import torch
import transformers
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig,
                          MistralForCausalLM, MixtralConfig,
                          MixtralForCausalLM, Qwen2Config, Qwen2ForCausalLM,
                          Qwen2MoeConfig, Qwen2MoeForCausalLM, Qwen3Config,
                          Qwen3ForCausalLM, Qwen3MoeConfig,
                          Qwen3MoeForCausalLM)

PROMPT = [1, 5, 9, 17, 33, 2, 7]
STEPS = 8

TINY = {
    # Llama 3 style: grouped-query attention (4 query heads, 2 kv heads),
    # theta 500000, untied.
    "llama": (LlamaConfig, LlamaForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
        max_position_embeddings=128, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        tie_word_embeddings=False)),
    # Qwen2: biases on q, k and v; tied embeddings; three layers.
    "qwen2": (Qwen2Config, Qwen2ForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
        max_position_embeddings=128, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        tie_word_embeddings=True, use_sliding_window=False)),
    # Mistral: one kv head, head_dim 16 with hidden 32 (q wider than H),
    # a sliding window wider than the cache.
    "mistral": (MistralConfig, MistralForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, head_dim=16,
        vocab_size=96, max_position_embeddings=128, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        sliding_window=4096, tie_word_embeddings=False)),
    # Llama 3.1 style rope scaling with an original context of 16, so that
    # the prompt and the generated tokens (positions 0 to 14) run through
    # the blended band (wavelength 6.3 between 16/4 and 16/1) and the
    # divided one (the rest): scaling changes the tokens. The same weights
    # with the default rope give "unscaled_tokens" in expect.json.
    "llama3": (LlamaConfig, LlamaForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
        max_position_embeddings=128, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 16},
        tie_word_embeddings=False)),
    # linear: every frequency divided by 4.
    "llama-linear": (LlamaConfig, LlamaForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
        max_position_embeddings=128, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
        tie_word_embeddings=False)),
    # yarn: head_dim 16, the ramp over pairs 0 to 3 of an original context
    # of 16 (factor 4 = 64 / 16), and its attention factor 0.1 ln 4 + 1 on
    # cos and sin.
    "llama-yarn": (LlamaConfig, LlamaForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=96,
        max_position_embeddings=64, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 16, "beta_fast": 32.0,
                         "beta_slow": 1.0},
        tie_word_embeddings=False)),
    # Qwen3: rmsnorm over each head of q and k; head_dim 16 with hidden 32;
    # untied and tied.
    "qwen3": (Qwen3Config, Qwen3ForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=96,
        max_position_embeddings=128, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        tie_word_embeddings=False, use_sliding_window=False)),
    "qwen3-tied": (Qwen3Config, Qwen3ForCausalLM, dict(
        hidden_size=32, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=1, head_dim=16, vocab_size=96,
        max_position_embeddings=128, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        tie_word_embeddings=True, use_sliding_window=False)),
    # Mixtral: 4 experts, top 2 (softmax over all, top 2, renormalized).
    "mixtral": (MixtralConfig, MixtralForCausalLM, dict(
        hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
        num_local_experts=4, num_experts_per_tok=2,
        max_position_embeddings=128, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        sliding_window=None, tie_word_embeddings=False)),
    # Qwen2-MoE: 8 experts, top 2 without renormalization, a shared expert
    # with its sigmoid gate; q/k/v biases.
    "qwen2-moe": (Qwen2MoeConfig, Qwen2MoeForCausalLM, dict(
        hidden_size=32, intermediate_size=64, moe_intermediate_size=24,
        shared_expert_intermediate_size=40, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
        num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
        decoder_sparse_step=1, mlp_only_layers=[],
        max_position_embeddings=128, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        use_sliding_window=False, tie_word_embeddings=False)),
    # Qwen3-MoE: q/k norms, head_dim 16 with hidden 32, 16 experts, top 4
    # renormalized (norm_topk_prob).
    "qwen3-moe": (Qwen3MoeConfig, Qwen3MoeForCausalLM, dict(
        hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, vocab_size=96, num_experts=16, num_experts_per_tok=4,
        norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
        max_position_embeddings=128, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        use_sliding_window=False, tie_word_embeddings=False)),
    # Partly MoE: Qwen2-MoE whose layer 0 is a dense MLP (mlp_only_layers),
    # and Qwen3-MoE with decoder_sparse_step 2 (layers 1 and 3 MoE, 0 and 2
    # dense MLPs of intermediate_size).
    "qwen2-moe-mixed": (Qwen2MoeConfig, Qwen2MoeForCausalLM, dict(
        hidden_size=32, intermediate_size=64, moe_intermediate_size=24,
        shared_expert_intermediate_size=40, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=96,
        num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
        decoder_sparse_step=1, mlp_only_layers=[0],
        max_position_embeddings=128, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        use_sliding_window=False, tie_word_embeddings=False)),
    "qwen3-moe-mixed": (Qwen3MoeConfig, Qwen3MoeForCausalLM, dict(
        hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
        num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, vocab_size=96, num_experts=16, num_experts_per_tok=4,
        norm_topk_prob=True, decoder_sparse_step=2, mlp_only_layers=[],
        max_position_embeddings=128, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        use_sliding_window=False, tie_word_embeddings=False)),
}

# A model saved again with its experts fused, as transformers 5 holds them
# in memory (save_pretrained splits them into one tensor per expert): each
# layer's experts.gate_up_proj [E, 2I, H] and experts.down_proj [E, H, I].
FUSED = {"mixtral-fused": "mixtral"}

LLAMA_1B = (LlamaConfig, LlamaForCausalLM, dict(
    hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
    num_attention_heads=32, num_key_value_heads=8, head_dim=64,
    vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
    rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
    tie_word_embeddings=True))


def strict_f32():
    """No TF32 anywhere: PyTorch's default lets cuDNN use it."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


@torch.no_grad()
def greedy(model, prompt, steps, device, f32):
    ids = torch.tensor([prompt], device=device)
    tokens, gaps, last = [], [], None
    for _ in range(steps):
        # f32: attention on the plain math kernel; otherwise PyTorch's choice
        with sdpa_kernel(SDPBackend.MATH) if f32 else contextlib.nullcontext():
            logits = model(input_ids=ids, use_cache=False).logits[0, -1].float()
        top = torch.topk(logits, 2).values
        gaps.append(float(top[0] - top[1]))
        t = int(torch.argmax(logits))
        tokens.append(t)
        last = logits
        ids = torch.cat([ids, torch.tensor([[t]], device=device)], dim=1)
    return tokens, gaps, last.cpu()


def build(name, spec, out, dtype, seed, device="cpu", std=None):
    cfg_cls, model_cls, kw = spec
    cfg = cfg_cls(**kw)
    if std is not None:
        cfg.initializer_range = std
    torch.manual_seed(seed)
    model = model_cls(cfg).to(dtype).to(device).eval()
    tokens, gaps, logits = greedy(model, PROMPT, STEPS, device,
                                 dtype == torch.float32)
    gap = min(gaps)
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    # one file, whatever transformers' default shard size
    model.save_pretrained(d, safe_serialization=True, max_shard_size="64GB")
    gc = os.path.join(d, "generation_config.json")
    if os.path.exists(gc):
        os.remove(gc)
    with open(os.path.join(d, "logits.bin"), "wb") as f:
        f.write(struct.pack("<%df" % logits.numel(), *logits.tolist()))
    expect = {"prompt": PROMPT, "tokens": tokens, "min_gap": gap,
              "logits": "logits.bin", "seed": seed,
              "dtype": str(dtype).replace("torch.", "")}
    rp = kw.get("rope_parameters", {})
    if rp.get("rope_type", "default") != "default":
        # the same weights with the default rope: the tokens scaling changes
        plain = cfg_cls(**dict(kw, rope_parameters={"rope_type": "default",
                                                     "rope_theta": rp["rope_theta"]}))
        if std is not None:
            plain.initializer_range = std
        unscaled = model_cls(plain).to(dtype).to(device).eval()
        unscaled.load_state_dict(model.state_dict())
        expect["unscaled_tokens"], ugaps, _ = greedy(unscaled, PROMPT, STEPS, device,
                                                     dtype == torch.float32)
        expect["unscaled_min_gap"] = min(ugaps)
        gap = min(gap, min(ugaps)) if expect["unscaled_tokens"] != tokens else 0.0
    expect.update(gaps=gaps, device=str(device), tf32=bool(
        torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32))
    with open(os.path.join(d, "expect.json"), "w") as f:
        json.dump(expect, f, indent=1)
        f.write("\n")
    return tokens, gap


BIG = {
    "--llama-1b": ("llama-3.2-1b", torch.bfloat16),
    "--llama-1b-f32": ("llama-3.2-1b-f32", torch.float32),
}


def fused_copy(out, name, to):
    """OUT/NAME's model saved to OUT/TO with its experts fused (FUSED)."""
    import shutil
    from safetensors.torch import save_file
    src, dst = os.path.join(out, name), os.path.join(out, to)
    model = transformers.AutoModelForCausalLM.from_pretrained(src)
    os.makedirs(dst, exist_ok=True)
    for f in ("config.json", "expect.json", "logits.bin"):
        shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    assert any(k.endswith("experts.gate_up_proj") for k in sd), sorted(sd)
    save_file(sd, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})


def main():
    args = sys.argv[1:]
    big = BIG.get(args[0]) if args else None
    if big:
        args = args[1:]
    if not args or args[0].startswith("--") or (big and len(args) != 1):
        sys.exit(__doc__)
    out = args[0]
    if big:
        name, dtype = big
        device = "cuda" if torch.cuda.is_available() else "cpu"
        if dtype == torch.float32:
            strict_f32()
        t0 = time.time()
        tokens, gap = build(name, LLAMA_1B, out, dtype, 1, device)
        print("%s: %s on %s, tokens %s, smallest gap %.4g, %.1f s" % (
            name, str(dtype).replace("torch.", ""), device, tokens, gap, time.time() - t0))
        return
    names = args[1:] or list(TINY) + list(FUSED)
    for name in names:
        if name not in TINY and name not in FUSED:
            sys.exit("hf-fixtures.py: no fixture %r (%s)" % (
                name, ", ".join(list(TINY) + list(FUSED))))
    made = {}
    for name in names:
        if name in FUSED:
            continue
        spec = TINY[name]
        # A larger init than the default 0.02: logits far enough apart that
        # the order of f32 sums cannot change an argmax. A scaled rope's
        # seed must also give other tokens without the scaling (gap 0).
        for seed in range(1, 50):
            tokens, gap = build(name, spec, out, torch.float32, seed, std=0.25)
            if gap > 1e-2:
                break
        print("%s: seed %d, tokens %s, smallest gap %.4g" % (name, seed, tokens, gap))
        made[name] = "%s: %s, transformers %s, torch %s, safetensors %s, python %s" % (
            name, time.strftime("%Y-%m-%d", time.gmtime()), transformers.__version__,
            torch.__version__, __import__("safetensors").__version__,
            sys.version.split()[0])
    for name in names:
        if name in FUSED:
            fused_copy(out, FUSED[name], name)
            print("%s: %s with its experts fused" % (name, FUSED[name]))
            made[name] = "%s: %s, %s saved again with its experts fused, transformers %s, " \
                "torch %s" % (name, time.strftime("%Y-%m-%d", time.gmtime()), FUSED[name],
                              transformers.__version__, torch.__version__)
    # PROVENANCE: one line a model, kept for the models not made again
    path = os.path.join(out, "PROVENANCE")
    lines = {}
    if os.path.exists(path):
        for line in open(path):
            if line.startswith("  ") and ":" in line:
                lines[line.strip().split(":")[0]] = line.strip()
    lines.update(made)
    with open(path, "w") as f:
        f.write("Made by: python3 t/hf-fixtures.py t/data/hf [NAME...]\n")
        f.write("Each model: random weights (initializer_range 0.25, seed in expect.json),\n"
                "float32; expect.json holds the prompt, the greedy tokens of transformers'\n"
                "forward and the smallest top-1/top-2 logit gap; logits.bin the last\n"
                "step's logits, little-endian f32. A model with a scaled rope also holds\n"
                "unscaled_tokens, transformers' tokens for the same weights with the\n"
                "default rope (they differ from tokens).\n"
                "Models (name: date made, versions):\n")
        for name in list(TINY) + list(FUSED):
            if name in lines:
                f.write("  %s\n" % lines[name])


if __name__ == "__main__":
    main()
