#!/usr/bin/env python3
"""op-table.py - superseded by `bcgtool report REPORT.sqlite PLAN`, which
attributes every kernel (and says which it cannot), with idle gaps and
break costs; kept to reproduce the table bench/RESULTS.md made with it.

Per-op GPU time, bytes moved and bandwidth of one replayed
step, from an Nsight Systems profile of `bcgtool replay`.

  op-table.py REPORT.sqlite PLAN.json [--tokens T] [--kv-len N] [--peak-gbs G]

REPORT.sqlite is `nsys export --type sqlite` of a profile taken with
--trace=cuda,nvtx --cuda-graph-trace=node; PLAN.json is `bcgtool inspect
--json` of the plan replayed; --tokens names the token count replayed
(default: the largest variant's).

With programmatic dependent launch a kernel starts before its predecessor
ends and waits for it inside: its duration then holds part of the
predecessor's, and the sum of the kernels' times exceeds the step.

Kernels are joined to ops as bench/nsys-check.py joins them to segments: a
segment's kernels are the ones its cudaGraphLaunch ran, in start order, and
the plan's kernel nodes of that segment, in node order, say which op made
each; a breakpoint's kernels are the ones launched inside its NVTX range.
Times are averaged over the profiled steps.

Bytes moved by an op: every input read once and every output written once,
at the variant's token count, except that an op writing a KV cache
(kv_write, rope_kv_write) writes only its tokens' rows, embedding reads
only its tokens' rows of the table, and attention reads
only kv_len rows of each cache (--kv-len, default the kv_len var's value
half-way through a replay of 220 steps from its start).
"""
import importlib.util
import json
import os
import re
import sqlite3
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("nsys_check", os.path.join(here, "nsys-check.py"))
nc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nc)

DSIZE = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4}
CACHE_WRITERS = {"kv_write": [0], "rope_kv_write": [1, 2]}


def op_bytes(plan, op, tokens, kv_len, token_dim):
    ts = plan["tensors"]

    def size(ti, rows=None):
        t = ts[ti]
        shape = [tokens if a["dim"] == token_dim else a["size"] for a in t["shape"]]
        if rows is not None:
            shape[0] = rows
        n = DSIZE[t["dtype"]]
        for s in shape:
            n *= s
        return n

    total = 0
    for k, ti in enumerate(op["in"]):
        if op["kind"] == "embedding" and k == 0:
            total += size(ti, rows=tokens)
        elif op["kind"] == "attention" and k in (1, 2):
            total += size(ti, rows=min(kv_len, ts[ti]["shape"][0]["size"]))
        else:
            total += size(ti)
    for k, ti in enumerate(op["out"]):
        total += size(ti, rows=tokens if k in CACHE_WRITERS.get(op["kind"], []) else None)
    return total


def main(argv):
    args = argv[1:]
    kv_len = None
    tokens = None
    peak = 3350.0
    while len(args) > 2:
        if args[-2] == "--kv-len":
            kv_len = int(args[-1])
        elif args[-2] == "--tokens":
            tokens = int(args[-1])
        elif args[-2] == "--peak-gbs":
            peak = float(args[-1])
        else:
            break
        args = args[:-2]
    if len(args) != 2:
        nc.fail("usage: op-table.py REPORT.sqlite PLAN.json [--tokens T] [--kv-len N] "
                "[--peak-gbs G]")
    db = sqlite3.connect(args[0])
    plan = json.load(open(args[1]))
    tokens, want = nc.plan_items(plan, tokens or max(v["tokens"] for v in plan["variants"]))
    token_dim = next((d["index"] for d in plan["dims"] if d["tokens"]), None)
    if kv_len is None:
        var = next((v for v in plan["vars"] if v["name"] == "kv_len"), None)
        kv_len = var["start"] + 110 * var["step"] if var else 0
    v = next(x for x in plan["variants"] if x["tokens"] == tokens)
    segs, bps, ops = plan["segments"], plan["breakpoints"], plan["ops"]

    ranges = nc.nvtx_ranges(db)
    steps = [r for r in ranges if r[3].startswith("step ")]
    if not steps:
        nc.fail("no 'step N' ranges")
    inside = lambda outer, r: r[2] == outer[2] and outer[0] <= r[0] and r[1] <= outer[1]
    item_ranges = [r for r in ranges if r[3].startswith(("seg ", "break "))]
    launches = nc.graph_launches(db)
    kernels = nc.kernels_by_correlation(db)
    rt = db.execute("SELECT start, end, globalTid, correlationId FROM "
                    "CUPTI_ACTIVITY_KIND_RUNTIME").fetchall()

    per_op = {}          # op index -> [ns summed over steps, kernels]
    unattributed = 0
    step_kernels = []
    for st in steps:
        mine = sorted((r for r in item_ranges if inside(st, r)), key=lambda r: r[0])
        if [r[3] for r in mine] != [w[1] for w in want]:
            nc.fail("%s does not hold the plan's items" % st[3])
        nk = 0
        for it, r in zip(v["items"], mine):
            if it["kind"] == "segment":
                seg = segs[it["index"]]
                ls = [l for l in launches if inside(r, l)]
                ks = sorted(kernels.get(ls[0][3], [])) if len(ls) == 1 else []
                nodes = [n for n in seg["nodes"] if n["type"] == "kernel"]
                if len(ks) != len(nodes):
                    unattributed += len(ks)
                    continue
                for (s, e), n in zip(ks, nodes):
                    acc = per_op.setdefault(n["op"], [0, 0])
                    acc[0] += e - s
                    acc[1] += 1
                nk += len(ks)
            else:
                op = bps[it["index"]]["op"]
                for c in rt:
                    if inside(r, c):
                        for s, e in kernels.get(c[3], []):
                            acc = per_op.setdefault(op, [0, 0])
                            acc[0] += e - s
                            acc[1] += 1
                            nk += 1
        step_kernels.append(nk)

    nsteps = len(steps)
    by_group = {}
    for opi, (ns, cnt) in per_op.items():
        op = ops[opi]
        group = re.sub(r"\.\d+$", "", op["label"])
        g = by_group.setdefault(group, {"kind": op["kind"], "ops": 0, "ns": 0.0, "bytes": 0,
                                        "kernels": 0})
        g["ops"] += 1
        g["ns"] += ns / nsteps
        g["kernels"] += cnt / nsteps
        g["bytes"] += op_bytes(plan, op, tokens, kv_len, token_dim)

    print("per-op table: %d steps at %d tokens, kv_len %d (plan %s)" %
          (nsteps, tokens, kv_len, os.path.basename(args[1])))
    print("| op | kind | ops | kernels | GPU time (us) | per op (us) | bytes (MB) | GB/s | share |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    tot_ns = sum(g["ns"] for g in by_group.values())
    tot_b = sum(g["bytes"] for g in by_group.values())
    for name, g in sorted(by_group.items(), key=lambda x: -x[1]["ns"]):
        print("| %s | %s | %d | %.0f | %.1f | %.2f | %.2f | %.0f | %.1f%% |" %
              (name, g["kind"], g["ops"], g["kernels"], g["ns"] / 1e3, g["ns"] / 1e3 / g["ops"],
               g["bytes"] / 1e6, g["bytes"] / g["ns"] if g["ns"] else 0.0,
               100.0 * g["ns"] / tot_ns if tot_ns else 0.0))
    print("| **all** | | %d | %.0f | %.1f | | %.2f | %.0f | |" %
          (sum(g["ops"] for g in by_group.values()), sum(step_kernels) / nsteps, tot_ns / 1e3,
           tot_b / 1e6, tot_b / tot_ns if tot_ns else 0.0))
    print("kernel time %.1f us a step for %.1f MB: %.0f GB/s, %.1f%% of %.0f GB/s; "
          "%.0f kernels a step; %d kernels unattributed" %
          (tot_ns / 1e3, tot_b / 1e6, tot_b / tot_ns if tot_ns else 0.0,
           100.0 * tot_b / tot_ns / peak if tot_ns else 0.0, peak,
           sum(step_kernels) / nsteps, unattributed))


if __name__ == "__main__":
    main(sys.argv)
