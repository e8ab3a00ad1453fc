"""breakable.py - a breakable decode step, as vLLM's and SGLang's breakable
CUDA graphs make one: per batch size, one graph from the embedding to the
first attention, one between each two attentions, one from the last to the
next token (layers + 1 graphs), captured with torch.cuda.CUDAGraph's
capture_begin and capture_end, and the attentions run eagerly between
them (layers breaks a step). Prints what it made as JSON (llama_step.run).

    python3 t/record/breakable.py [--layers N] [--attention sdpa|manual] ...
"""

import torch

import llama_step as ls


def make_step(o):
    def make(m, st):
        if o.device != "cuda":
            def eager():
                ls.pre(m, st)
                for l in range(m.layers):
                    ls.attention_eager(st, l, o.attention)
                    ls.post(m, st, l)
            return eager, 0, m.layers
        pool = torch.cuda.graph_pool_handle()
        side = torch.cuda.Stream()
        graphs = [ls.capture(o, lambda: ls.pre(m, st), pool, side)]
        for l in range(m.layers):
            graphs.append(ls.capture(o, lambda l=l: ls.post(m, st, l), pool, side))

        def step():
            graphs[0].replay()
            for l in range(m.layers):
                ls.attention_eager(st, l, o.attention)
                graphs[l + 1].replay()
        return step, len(graphs), m.layers
    return make


def main():
    o = ls.options(__doc__.splitlines()[0])
    ls.run(o, "breakable", make_step(o))


if __name__ == "__main__":
    main()
