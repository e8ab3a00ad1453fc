"""compiled.py - the breakable decode step with its pieces torch.compile'd,
as vLLM compiles the pieces between attentions (Inductor, Triton kernels)
and captures each piece into a CUDA graph: layers + 1 graphs a batch size,
layers breaks a step. Without Triton it prints {"skipped": ...} and exits 0.

    python3 t/record/compiled.py [--layers N] [--attention sdpa|manual] ...
"""

import json
import sys

import torch

import llama_step as ls


def make_step(o):
    def make(m, st):
        pre = torch.compile(lambda: ls.pre(m, st), dynamic=False)
        posts = [torch.compile(lambda l=l: ls.post(m, st, l), dynamic=False)
                 for l in range(m.layers)]
        pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream()
        graphs = [ls.capture(o, pre, pool, side)]
        for l in range(m.layers):
            graphs.append(ls.capture(o, posts[l], pool, side))

        def step():
            graphs[0].replay()
            for l in range(m.layers):
                ls.attention_eager(st, l, o.attention)
                graphs[l + 1].replay()
        return step, len(graphs), m.layers
    return make


def allow_recompiles(o):
    """Each piece is one compiled function per layer and batch size, all
    of one code object (the lambda), whose guards tell the layers and
    states apart: dynamo compiles it once per layer and batch size. Raise
    its per-code-object limit (recompile_limit, cache_size_limit before
    torch 2.7; 8 by default) to that count, so that no piece falls back
    to running uncompiled."""
    need = 2 * (o.layers + 1) * len(o.batch_sizes) + 8
    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, name) and getattr(cfg, name) < need:
            setattr(cfg, name, need)
    for name in ("accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(cfg, name) and getattr(cfg, name) < 4 * need:
            setattr(cfg, name, 4 * need)


def main():
    o = ls.options(__doc__.splitlines()[0])
    try:
        import triton  # noqa: F401
    except ImportError as e:
        json.dump({"program": "compiled", "skipped": "triton is missing: %s" % e}, sys.stdout)
        sys.stdout.write("\n")
        return
    if o.device != "cuda":
        json.dump({"program": "compiled", "skipped": "needs a GPU"}, sys.stdout)
        sys.stdout.write("\n")
        return
    allow_recompiles(o)
    ls.run(o, "compiled", make_step(o))


if __name__ == "__main__":
    main()
