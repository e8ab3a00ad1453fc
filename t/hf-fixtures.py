#!/usr/bin/env python3
"""hf-fixtures.py - tiny random Hugging Face models and what transformers
makes of them, the independent reference of t7100-hf-import.sh.

  python3 t/hf-fixtures.py OUT_DIR              the fixtures of t/data/hf
  python3 t/hf-fixtures.py OUT_DIR NAME...      only those (a line for them
                                                is added to PROVENANCE)
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
                          Qwen2MoeConfig, Qwen2MoeForCausalLM)

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
}

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
    """OUT/NAME's model saved again as transformers 5 holds it in memory:
    each layer's experts as two 3-D tensors, experts.gate_up_proj [E, 2I, H]
    and experts.down_proj [E, H, I] (save_pretrained splits them back into
    one tensor per expert; a checkpoint may hold either)."""
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


FUSED = {"mixtral-fused": "mixtral"}


def main():
    args = sys.argv[1:]
    big = BIG.get(args[0]) if args else None
    if big:
        args = args[1:]
    if len(args) < 1 or args[0].startswith("--") or (big and len(args) != 1):
        sys.exit(__doc__)
    out, only = args[0], args[1:]
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
    for name in only:
        if name not in TINY and name not in FUSED:
            sys.exit("unknown model %s" % name)
    for name, spec in TINY.items():
        if only and name not in only:
            continue
        # A larger init than the default 0.02: logits far enough apart that
        # the order of f32 sums cannot change an argmax.
        for seed in range(1, 50):
            tokens, gap = build(name, spec, out, torch.float32, seed, std=0.25)
            if gap > 1e-2:
                break
        print("%s: seed %d, tokens %s, smallest gap %.4g" % (name, seed, tokens, gap))
    for name, src in FUSED.items():
        if not only or name in only:
            fused_copy(out, src, name)
            print("%s: %s with its experts fused" % (name, src))
    if only:
        with open(os.path.join(out, "PROVENANCE"), "a") as f:
            f.write("%s: made by python3 t/hf-fixtures.py t/data/hf %s\n"
                    "  on %s, transformers %s, torch %s (%s: %s's weights saved with\n"
                    "  the experts fused, as 3-D tensors)\n" % (
                        ", ".join(only), " ".join(only),
                        time.strftime("%Y-%m-%d", time.gmtime()), transformers.__version__,
                        torch.__version__, ", ".join(FUSED), ", ".join(FUSED.values())))
        return
    with open(os.path.join(out, "PROVENANCE"), "w") as f:
        f.write("Made by: python3 t/hf-fixtures.py t/data/hf\n")
        f.write("Date: %s\n" % time.strftime("%Y-%m-%d", time.gmtime()))
        f.write("transformers %s, torch %s, safetensors %s, python %s\n" % (
            transformers.__version__, torch.__version__,
            __import__("safetensors").__version__, sys.version.split()[0]))
        f.write("Each model: random weights (initializer_range 0.25, seed in expect.json),\n"
                "float32; expect.json holds the prompt, the greedy tokens of transformers'\n"
                "forward and the smallest top-1/top-2 logit gap; logits.bin the last\n"
                "step's logits, little-endian f32.\n")


if __name__ == "__main__":
    main()
