"""llama_step.py - the decode step the PyTorch stand-ins for vLLM and SGLang
share (t/record/breakable.py, full.py, compiled.py): a small Llama-like
model in bf16 (RMSNorm, fused q/k/v product, rotary positions, a KV cache,
SiLU-gated MLP), written as a PyTorch engine writes it.

The step is split the way a breakable CUDA graph splits it: `pre(0)`, then
for each layer `attention(l)` and `post(l)` (the layer's output product
and MLP, and the next layer's attention inputs, or the logits and the next
token). Everything that crosses a split lives in static buffers, so that
the pieces can be captured into graphs and replayed. The KV position is
held on the device (graph-safe) and mirrored on the host, where the eager
attention reads it: its launch shape follows the length, which is why it
breaks the graph.

Options every program takes: --layers N (one more layer is a changed
program), --attention sdpa|manual (another attention kernel),
--batch-sizes 1,2,4, --steps N (per batch size), --device.
"""

import argparse
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

VOCAB = 512
HIDDEN = 256
HEADS = 4
HEAD_DIM = HIDDEN // HEADS
MLP = 704
MAX_LEN = 256
PROMPT = 8


def options(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--attention", choices=("sdpa", "manual"), default="sdpa")
    p.add_argument("--batch-sizes", default="1,2,4")
    p.add_argument("--steps", type=int, default=12, help="decode steps per batch size")
    p.add_argument("--device", default="cuda")
    p.add_argument("--no-nvtx", action="store_true", help="mark no steps with NVTX")
    p.add_argument("--order", choices=("blocked", "interleaved"), default="blocked",
                   help="every step of one batch size, then the next (blocked); or "
                   "one step of each in turn (interleaved)")
    o = p.parse_args()
    o.batch_sizes = [int(b) for b in o.batch_sizes.split(",")]
    return o


class Model:
    """Weights, made the same on every run from one seed."""

    def __init__(self, layers, device, dtype=torch.bfloat16):
        g = torch.Generator().manual_seed(1234)

        def w(*shape, scale=None):
            scale = scale if scale is not None else 1.0 / math.sqrt(shape[-1])
            t = (torch.rand(*shape, generator=g) * 2 - 1) * scale
            return t.to(device=device, dtype=dtype)

        self.layers = layers
        self.embed = w(VOCAB, HIDDEN, scale=1.0)
        self.norm_attn = [1 + w(HIDDEN, scale=0.1) for _ in range(layers)]
        self.norm_mlp = [1 + w(HIDDEN, scale=0.1) for _ in range(layers)]
        self.qkv = [w(3 * HIDDEN, HIDDEN) for _ in range(layers)]
        self.o = [w(HIDDEN, HIDDEN) for _ in range(layers)]
        self.gate_up = [w(2 * MLP, HIDDEN) for _ in range(layers)]
        self.down = [w(HIDDEN, MLP) for _ in range(layers)]
        self.norm_out = 1 + w(HIDDEN, scale=0.1)
        self.lm_head = w(VOCAB, HIDDEN)
        inv = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2, dtype=torch.float32) / HEAD_DIM))
        ang = torch.outer(torch.arange(MAX_LEN, dtype=torch.float32), inv)
        self.cos = ang.cos().to(device=device, dtype=dtype)
        self.sin = ang.sin().to(device=device, dtype=dtype)


def rmsnorm(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope(x, cos, sin):
    # x [B, H, 1, D]; cos, sin [1, D/2]
    x1, x2 = x[..., 0::2], x[..., 1::2]
    c, s = cos.view(1, 1, 1, -1), sin.view(1, 1, 1, -1)
    return torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)


class State:
    """One batch size's static buffers: the tokens, the device-held
    position, the KV cache, and the tensors that cross the breaks."""

    def __init__(self, model, batch, device):
        L, dt = model.layers, model.embed.dtype
        self.batch = batch
        self.tokens = (torch.arange(batch, device=device, dtype=torch.long) * 7 + 3) % VOCAB
        self.pos = torch.full((1,), PROMPT, device=device, dtype=torch.long)
        self.kv_len = PROMPT            # the host's copy of the length
        g = torch.Generator().manual_seed(99 + batch)
        self.k_cache = ((torch.rand(L, batch, HEADS, MAX_LEN, HEAD_DIM, generator=g) - 0.5)
                        .to(device=device, dtype=dt))
        self.v_cache = ((torch.rand(L, batch, HEADS, MAX_LEN, HEAD_DIM, generator=g) - 0.5)
                        .to(device=device, dtype=dt))
        self.h = torch.zeros(batch, HIDDEN, device=device, dtype=dt)
        self.q = torch.zeros(L, batch, HEADS, 1, HEAD_DIM, device=device, dtype=dt)
        self.attn = torch.zeros(L, batch, HEADS, 1, HEAD_DIM, device=device, dtype=dt)
        self.generated = []


def attn_inputs(m, st, l, h):
    """Layer l's q, and its k and v written into the cache at the device
    position: graph-safe."""
    B = st.batch
    x = rmsnorm(h, m.norm_attn[l])
    qkv = F.linear(x, m.qkv[l]).view(B, 3, HEADS, 1, HEAD_DIM)
    cos = m.cos.index_select(0, st.pos)
    sin = m.sin.index_select(0, st.pos)
    q = rope(qkv[:, 0], cos, sin)
    k = rope(qkv[:, 1], cos, sin)
    st.k_cache[l].index_copy_(2, st.pos, k)
    st.v_cache[l].index_copy_(2, st.pos, qkv[:, 2])
    st.q[l].copy_(q)


def pre(m, st):
    """Embedding and layer 0's attention inputs."""
    h = m.embed.index_select(0, st.tokens)
    st.h.copy_(h)
    attn_inputs(m, st, 0, h)


def post(m, st, l):
    """Layer l after its attention: output product, MLP; then the next
    layer's attention inputs, or the next token and position."""
    B = st.batch
    h = st.h + F.linear(st.attn[l].reshape(B, HIDDEN), m.o[l])
    x = rmsnorm(h, m.norm_mlp[l])
    gu = F.linear(x, m.gate_up[l])
    h = h + F.linear(F.silu(gu[:, :MLP]) * gu[:, MLP:], m.down[l])
    st.h.copy_(h)
    if l + 1 < m.layers:
        attn_inputs(m, st, l + 1, h)
    else:
        logits = F.linear(rmsnorm(h, m.norm_out), m.lm_head)
        st.tokens.copy_(logits.float().argmax(-1))
        st.pos.add_(1)


def attention_eager(st, l, kind):
    """Decode attention over the first kv_len positions (a host length:
    this is the op that breaks the graph)."""
    n = st.kv_len + 1
    q = st.q[l]
    k = st.k_cache[l, :, :, :n]
    v = st.v_cache[l, :, :, :n]
    if kind == "sdpa":
        o = F.scaled_dot_product_attention(q, k, v)
    else:
        s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(HEAD_DIM))
        o = torch.matmul(torch.softmax(s.float(), dim=-1).to(q.dtype), v)
    st.attn[l].copy_(o)


def attention_masked(m, st, l, kind):
    """Decode attention over the whole cache, masked past the device
    position: graph-safe (the full-graph program's)."""
    q = st.q[l]
    k = st.k_cache[l]
    v = st.v_cache[l]
    mask = torch.arange(MAX_LEN, device=q.device).view(1, 1, 1, -1) <= st.pos.view(1, 1, 1, 1)
    if kind == "sdpa":
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    else:
        s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(HEAD_DIM))
        s = s.masked_fill(~mask, float("-inf"))
        o = torch.matmul(torch.softmax(s.float(), dim=-1).to(q.dtype), v)
    st.attn[l].copy_(o)


def nvtx_push(o, name):
    if not o.no_nvtx and o.device == "cuda":
        torch.cuda.nvtx.range_push(name)


def nvtx_pop(o):
    if not o.no_nvtx and o.device == "cuda":
        torch.cuda.nvtx.range_pop()


def sync(o):
    if o.device == "cuda":
        torch.cuda.synchronize()


def capture(o, fn, pool, stream):
    """fn's work as a CUDA graph, captured as an engine does: warmed up
    eagerly on a side stream first (library first calls and module loads
    never happen inside the capture), then captured there."""
    g = torch.cuda.CUDAGraph()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
        torch.cuda.current_stream().synchronize()
        g.capture_begin(pool=pool)
        try:
            fn()
        finally:
            g.capture_end()
    torch.cuda.current_stream().wait_stream(stream)
    return g


def run(o, program, make_step):
    """Run every batch size's steps, blocked (1, 1, ..., 2, 2, ...) or
    interleaved (1, 2, 4, 1, 2, 4, ...), each step inside an NVTX range
    "step"; print what the program made as JSON. MAKE_STEP(model, state)
    returns (step function, graphs made, breaks per step)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    m = Model(o.layers, o.device)
    states = [State(m, b, o.device) for b in o.batch_sizes]
    # Warm-up and capture happen before the timed loop, and the states'
    # positions are put back afterwards, so every run decodes alike.
    t0 = time.perf_counter()
    steps, graphs, breaks = [], {}, {}
    for st in states:
        fn, ng, nb = make_step(m, st)
        steps.append(fn)
        graphs[str(st.batch)] = ng
        breaks[str(st.batch)] = nb
    sync(o)
    setup_s = time.perf_counter() - t0
    for st in states:
        st.pos.fill_(PROMPT)
        st.kv_len = PROMPT
        st.tokens.copy_((torch.arange(st.batch, device=o.device) * 7 + 3) % VOCAB)
    sync(o)
    if o.order == "blocked":
        order = [i for i in range(len(states)) for _ in range(o.steps)]
    else:
        order = [i for _ in range(o.steps) for i in range(len(states))]
    t0 = time.perf_counter()
    for i in order:
        st = states[i]
        nvtx_push(o, "step")
        steps[i]()
        nvtx_pop(o)
        st.kv_len += 1
        st.generated.append(st.tokens.clone())
    sync(o)
    loop_s = time.perf_counter() - t0
    total_steps = o.steps * len(states)
    out = {
        "program": program,
        "layers": o.layers,
        "attention": o.attention,
        "batch_sizes": o.batch_sizes,
        "steps_per_batch_size": o.steps,
        "order": o.order,
        "graphs_per_batch_size": graphs,
        "breaks_per_step": breaks,
        "step_ms": 1000.0 * loop_s / total_steps,
        "setup_s": setup_s,
        "tokens": {str(st.batch): [t.tolist() for t in st.generated] for st in states},
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return out
