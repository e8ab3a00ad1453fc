#!/usr/bin/env python3
"""nsys-figures.py - the figures `bcgtool report` must give for a profile,
computed on their own from the SQLite export, for the tests to compare.

  nsys-figures.py figures REPORT.sqlite PLAN.json [TOKENS]
  nsys-figures.py from-json REPORT.json

`figures` reads the export with Python's sqlite3 and the plan as `bcgtool
inspect --json` writes it, and prints one line per figure; `from-json`
prints the same lines from `bcgtool report --json`, without computing
anything. The two outputs must be equal.

How a kernel is attributed (as formats/report-json.md says): the runtime
call with its correlation id was issued inside a "step N" NVTX range, and
inside one of the "seg K a..b" / "break NAME" ranges directly in that step;
a segment's kernel is the plan node whose index is the low 32 bits of the
graph node it was cloned from (CUDA_GRAPH_NODE_EVENTS), except the node
just past the records of a step's first segment, the kernel that writes
the step's feeds (the step's and the segment's, no op's); a break's kernel
belongs to the breakpoint's op. Means are over the steps whose items are
the variant's.
"""
import json
import sqlite3
import sys


def ranges(db):
    rows = db.execute(
        "SELECT e.start, e.end, e.globalTid, COALESCE(e.text, s.value) FROM NVTX_EVENTS e "
        "LEFT JOIN StringIds s ON s.id = e.textId WHERE e.end IS NOT NULL "
        "ORDER BY e.start, e.rowid").fetchall()
    return [r for r in rows if r[3] is not None]


def is_step(text):
    parts = text.split(" ")
    return len(parts) == 2 and parts[0] == "step" and parts[1].isdigit()


def item_names(plan, v):
    ops, segs, bps = plan["ops"], plan["segments"], plan["breakpoints"]
    names, k = [], 0
    for it in v["items"]:
        if it["kind"] == "segment":
            s = segs[it["index"]]
            names.append("seg %d %s..%s" % (k, ops[s["op_first"]]["label"],
                                            ops[s["op_first"] + s["op_count"] - 1]["label"]))
            k += 1
        else:
            names.append("break " + ops[bps[it["index"]]["op"]]["label"])
    return names


def op_bytes(plan, op, tokens):
    if "attention" in op["kind"]:
        return None
    ts, tok = plan["tensors"], plan["dims"]
    token_dims = {i for i, d in enumerate(tok) if d.get("tokens")}

    def size(ti, rows_only):
        t = ts[ti]
        shape = [tokens if a["dim"] in token_dims else a["size"] for a in t["shape"]]
        if rows_only:
            shape[0] = tokens
        n = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4}[t["dtype"]]
        for s in shape:
            n *= s
        return n

    total = 0
    for k, ti in enumerate(op["in"]):
        total += size(ti, op["kind"] == "embedding" and k == 0)
    for k, ti in enumerate(op["out"]):
        total += size(ti, (op["kind"] == "kv_write" and k == 0) or
                      (op["kind"] == "rope_kv_write" and k in (1, 2)))
    return total


def union(intervals):
    busy, reach = 0, None
    for s, e in sorted(intervals):
        if reach is None or s >= reach:
            busy += e - s
            reach = e
        elif e > reach:
            busy += e - reach
            reach = e
    return busy


def figures(path, plan_path, tokens):
    db = sqlite3.connect(path)
    plan = json.load(open(plan_path))
    rs = ranges(db)
    steps = []
    for i, r in enumerate(rs):
        if not is_step(r[3]):
            continue
        phase = ""
        for q in reversed(rs[:i]):
            if q[2] == r[2] and q[0] <= r[0] and q[1] >= r[1]:
                phase = q[3]
                break
        items = []
        for c in rs[i + 1:]:
            if c[0] > r[1]:
                break
            if c[2] != r[2] or c[1] > r[1] or not c[3].startswith(("seg ", "break ")):
                continue
            if items and c[0] < items[-1][1]:
                continue
            items.append(c)
        steps.append((r, phase, items))

    variants = [v for v in plan["variants"] if tokens is None or v["tokens"] == tokens]
    best = None
    for v in variants:
        names = item_names(plan, v)
        n = sum(1 for s in steps if [c[3] for c in s[2]] == names)
        if n and (best is None or n > best[1] or (n == best[1] and v["tokens"] > best[0]["tokens"])):
            best = (v, n)
    v = best[0]
    names = item_names(plan, v)
    matched = [s for s in steps if [c[3] for c in s[2]] == names]

    orig = dict(db.execute("SELECT graphNodeId, MAX(originalGraphNodeId) FROM "
                           "CUDA_GRAPH_NODE_EVENTS GROUP BY graphNodeId").fetchall())
    calls = {r[0]: (r[1], r[2]) for r in db.execute(
        "SELECT correlationId, start, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME "
        "WHERE correlationId IS NOT NULL")}
    kernels = db.execute("SELECT k.start, k.end, k.correlationId, k.graphNodeId "
                         "FROM CUPTI_ACTIVITY_KIND_KERNEL k ORDER BY k.start, k.rowid").fetchall()

    nops = len(plan["ops"])
    op_kernels, op_total, op_exposed = [0] * nops, [0] * nops, [0] * nops
    per_item = [[[] for _ in names] for _ in matched]
    reach = [None] * len(matched)
    counts = {"graph": 0, "break": 0, "feed": 0, "unattributed": 0, "outside": 0}
    for start, end, corr, node in kernels:
        call = calls.get(corr)
        where = None
        if call is not None:
            for si, (r, _, items) in enumerate(matched):
                if r[2] == call[1] and r[0] <= call[0] <= r[1]:
                    for ii, c in enumerate(items):
                        if c[0] <= call[0] <= c[1]:
                            where = (si, ii)
                    if where is None:
                        where = (si, None)
                    break
            else:
                in_other = any(r[2] == call[1] and r[0] <= call[0] <= r[1] for r, _, _ in steps)
                counts["unattributed" if in_other else "outside"] += 1
                continue
        else:
            counts["outside"] += 1
            continue
        if where[1] is None:
            counts["unattributed"] += 1
            continue
        it = v["items"][where[1]]
        if it["kind"] == "segment":
            if node is None:
                counts["unattributed"] += 1
                continue
            idx = (orig.get(node) or node) & 0xffffffff
            nodes = plan["segments"][it["index"]]["nodes"]
            if where[1] == 0 and idx == len(nodes):
                # the node after the records of a step's first segment:
                # the kernel that wrote the step's feeds, the step's and
                # the segment's, no op's
                counts["feed"] += 1
                r0 = reach[where[0]]
                reach[where[0]] = end if r0 is None else max(r0, end)
                per_item[where[0]][where[1]].append((start, end))
                continue
            op = nodes[idx]["op"]
            counts["graph"] += 1
        else:
            op = plan["breakpoints"][it["index"]]["op"]
            counts["break"] += 1
        op_kernels[op] += 1
        op_total[op] += end - start
        # exposed: what the kernel adds to its step's busy time, the
        # step's kernels taken in start order
        r0 = reach[where[0]]
        op_exposed[op] += end - start if r0 is None or start >= r0 else max(0, end - r0)
        reach[where[0]] = end if r0 is None else max(r0, end)
        per_item[where[0]][where[1]].append((start, end))

    out = ["variant %d" % v["tokens"], "steps %d" % len(matched),
           "kernels %d graph %d break %d feed %d unattributed %d outside %d" % (
               len(kernels), counts["graph"], counts["break"], counts["feed"],
               counts["unattributed"], counts["outside"])]
    for si, (r, phase, _) in enumerate(matched):
        ks = [k for lst in per_item[si] for k in lst]
        span = max(e for _, e in ks) - min(s for s, _ in ks)
        busy = union(ks)
        out.append("step %d %s %s kernels %d span %d busy %d idle %d" % (
            si, r[3].replace(" ", "_"), phase, len(ks), span, busy, span - busy))
    n = len(matched)
    for ii, name in enumerate(names):
        kern = ksum = span = busy = 0
        gb, ga = [], []
        for si in range(n):
            lst = per_item[si][ii]
            kern += len(lst)
            ksum += sum(e - s for s, e in lst)
            if not lst:
                continue
            first, last = min(s for s, _ in lst), max(e for _, e in lst)
            span += last - first
            busy += union(lst)
            prev = [per_item[si][j] for j in range(ii) if per_item[si][j]]
            if prev:
                gb.append(first - max(e for _, e in prev[-1]))
            nxt = [per_item[si][j] for j in range(ii + 1, len(names)) if per_item[si][j]]
            if nxt:
                ga.append(min(s for s, _ in nxt[0]) - last)
        mean = lambda xs: "%.1f" % (sum(xs) / len(xs)) if xs else "-"
        out.append("item %d %s kernels %.1f kernel_ns %.1f span %.1f busy %.1f before %s "
                   "after %s" % (ii, name.replace(" ", "_"), kern / n, ksum / n, span / n,
                                 busy / n, mean(gb), mean(ga)))
    ran = set()
    for it in v["items"]:
        if it["kind"] == "segment":
            s = plan["segments"][it["index"]]
            ran.update(range(s["op_first"], s["op_first"] + s["op_count"]))
        else:
            ran.add(plan["breakpoints"][it["index"]]["op"])
    for o in sorted(ran):
        b = op_bytes(plan, plan["ops"][o], v["tokens"])
        out.append("op %s kernels %d total_ns %d exposed_ns %d bytes %s" % (
            plan["ops"][o]["label"], op_kernels[o], op_total[o], op_exposed[o],
            "-" if b is None else b))
    return out


def from_json(path):
    r = json.load(open(path))
    out = ["variant %d" % r["variant"]["tokens"], "steps %d" % len(r["steps"])]
    k = r["kernels"]
    out.append("kernels %d graph %d break %d feed %d unattributed %d outside %d" % (
        k["total"], k["graph"], k["break"], k["feed"], k["unattributed"], k["outside"]))
    for s in r["steps"]:
        out.append("step %d %s %s kernels %d span %d busy %d idle %d" % (
            s["index"], s["name"].replace(" ", "_"), s["phase"], s["kernels"], s["span_ns"],
            s["busy_ns"], s["idle_ns"]))
    fmt = lambda x: "-" if x is None else "%.1f" % x
    for it in r["items"]:
        out.append("item %d %s kernels %.1f kernel_ns %.1f span %.1f busy %.1f before %s "
                   "after %s" % (it["index"], it["name"].replace(" ", "_"), it["kernels"],
                                 it["kernel_ns"], it["span_ns"], it["busy_ns"],
                                 fmt(it["gap_before_ns"]), fmt(it["gap_after_ns"])))
    for o in sorted(r["ops"], key=lambda o: o["index"]):
        out.append("op %s kernels %d total_ns %d exposed_ns %d bytes %s" % (
            o["name"], o["kernels"], o["total_ns"], o["exposed_ns"],
            "-" if o["bytes"] is None else o["bytes"]))
    return out


def main(argv):
    if len(argv) >= 4 and argv[1] == "figures":
        lines = figures(argv[2], argv[3], int(argv[4]) if len(argv) > 4 else None)
    elif len(argv) == 3 and argv[1] == "from-json":
        lines = from_json(argv[2])
    else:
        sys.exit(__doc__)
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv)
