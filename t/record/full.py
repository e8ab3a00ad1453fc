"""full.py - the same decode step as one CUDA graph per batch size, as vLLM
and SGLang capture uniform decode batches: attention over the whole cache,
masked past the device-held position, so nothing breaks the graph. Prints
what it made as JSON (llama_step.run): one graph a batch size, no breaks.

    python3 t/record/full.py [--layers N] [--attention sdpa|manual] ...
"""

import torch

import llama_step as ls


def make_step(o):
    def make(m, st):
        def whole():
            ls.pre(m, st)
            for l in range(m.layers):
                ls.attention_masked(m, st, l, o.attention)
                ls.post(m, st, l)
        if o.device != "cuda":
            return whole, 0, 0
        g = ls.capture(o, whole, torch.cuda.graph_pool_handle(), torch.cuda.Stream())
        return g.replay, 1, 0
    return make


def main():
    o = ls.options(__doc__.splitlines()[0])
    ls.run(o, "full", make_step(o))


if __name__ == "__main__":
    main()
