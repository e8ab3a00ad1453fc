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
    ls.run(o, "compiled", make_step(o))


if __name__ == "__main__":
    main()
