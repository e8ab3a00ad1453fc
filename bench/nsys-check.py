#!/usr/bin/env python3
"""nsys-check.py - check an Nsight Systems profile of `bcgtool replay` against
the plan it replayed.

  nsys-check.py REPORT.sqlite PLAN.json

REPORT.sqlite is `nsys export --type sqlite` of a profile taken with
--trace=cuda,nvtx --cuda-graph-trace=node; PLAN.json is `bcgtool inspect
--json` of the plan. Two things are checked:

 1. every segment and breakpoint of the replayed variant appears as an NVTX
    range ("seg K first..last", "break NAME") inside every "step N" range;
 2. the graph kernels of each segment fall inside that segment's range: the
    cudaGraphLaunch that started them (joined by correlation id) lies within
    a "seg" range, they are as many as the segment has kernel nodes in the
    plan, and on the GPU's timeline each segment's kernels run after the
    previous item's and before the next one's.

Exits 0 with a summary, 1 with the first failure. Column names are read from
the database, since they move between Nsight Systems versions.
"""
import json
import sqlite3
import sys


def fail(msg):
    print("nsys-check: FAIL: " + msg)
    sys.exit(1)


def columns(db, table):
    return {r[1] for r in db.execute("PRAGMA table_info(%s)" % table)}


def tables(db):
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def nvtx_ranges(db):
    """Push/pop ranges: (start, end, tid, name, payload)."""
    cols = columns(db, "NVTX_EVENTS")
    text = "COALESCE(e.text, s.value)" if "textId" in cols else "e.text"
    join = "LEFT JOIN StringIds s ON s.id = e.textId" if "textId" in cols else ""
    payload = "e.uint64Value" if "uint64Value" in cols else "NULL"
    rows = db.execute(
        "SELECT e.start, e.end, e.globalTid, %s, %s FROM NVTX_EVENTS e %s "
        "WHERE e.end IS NOT NULL AND e.end >= e.start" % (text, payload, join)).fetchall()
    return [r for r in rows if r[3] is not None]


def graph_launches(db):
    """cudaGraphLaunch calls: (start, end, tid, correlationId)."""
    cols = columns(db, "CUPTI_ACTIVITY_KIND_RUNTIME")
    if "nameId" in cols:
        q = ("SELECT r.start, r.end, r.globalTid, r.correlationId FROM "
             "CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
             "WHERE s.value LIKE 'cudaGraphLaunch%'")
    else:
        q = ("SELECT start, end, globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME "
             "WHERE name LIKE 'cudaGraphLaunch%'")
    return db.execute(q).fetchall()


def kernels_by_correlation(db):
    by = {}
    for start, end, corr in db.execute(
            "SELECT start, end, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        by.setdefault(corr, []).append((start, end))
    return by


def plan_items(plan, tokens):
    """The item range names of the variant for TOKENS, with the number of
    kernel nodes of each segment: "seg K first..last" (K counts the
    variant's segments) and "break NAME", as bcgtool names its ranges."""
    variants = plan["variants"]
    v = min((x for x in variants if x["tokens"] >= tokens), key=lambda x: x["tokens"])
    ops, segs, bps = plan["ops"], plan["segments"], plan["breakpoints"]
    items, k = [], 0
    for it in v["items"]:
        if it["kind"] == "segment":
            s = segs[it["index"]]
            first = ops[s["op_first"]]["label"]
            last = ops[s["op_first"] + s["op_count"] - 1]["label"]
            kernels = sum(1 for n in s["nodes"] if n["type"] == "kernel")
            items.append(("seg", "seg %d %s..%s" % (k, first, last), kernels))
            k += 1
        else:
            items.append(("break", "break " + bps[it["index"]]["name"], 0))
    return v["tokens"], items


def main(argv):
    if len(argv) != 3:
        fail("usage: nsys-check.py REPORT.sqlite PLAN.json")
    db = sqlite3.connect(argv[1])
    plan = json.load(open(argv[2]))
    have = tables(db)
    for t in ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL"):
        if t not in have:
            fail("the report has no %s table (profiled with cuda and nvtx tracing?)" % t)

    ranges = nvtx_ranges(db)
    steps = [r for r in ranges if r[3].startswith("step ")]
    if not steps:
        fail("no 'step N' ranges")
    inside = lambda outer, r: r[2] == outer[2] and outer[0] <= r[0] and r[1] <= outer[1]
    items_ranges = [r for r in ranges if r[3].startswith(("seg ", "break "))]

    tokens = max(v["tokens"] for v in plan["variants"])
    _, want = plan_items(plan, tokens)
    want_names = [w[1] for w in want]

    launches = graph_launches(db)
    kernels = kernels_by_correlation(db)
    checked_segments = 0
    for st in steps:
        mine = sorted((r for r in items_ranges if inside(st, r)), key=lambda r: r[0])
        names = [r[3] for r in mine]
        if names != want_names:
            fail("%s holds %s, the plan has %s" % (st[3], names, want_names))
        prev_end = None
        for (kind, name, nkern), r in zip(want, mine):
            if kind != "seg":
                continue
            ls = [l for l in launches if inside(r, l)]
            if len(ls) != 1:
                fail("%s / %s: %d cudaGraphLaunch calls inside the range" % (st[3], name, len(ls)))
            ks = kernels.get(ls[0][3], [])
            if len(ks) != nkern:
                fail("%s / %s: %d kernels ran from its graph, the plan records %d"
                     % (st[3], name, len(ks), nkern))
            first = min(k[0] for k in ks)
            last = max(k[1] for k in ks)
            if prev_end is not None and first < prev_end:
                fail("%s / %s: its kernels start before the previous segment's end" % (st[3], name))
            prev_end = last
            checked_segments += 1
    print("nsys-check: ok: %d steps, each with %d items in plan order; %d segment launches, "
          "each running exactly its graph's kernels, in order" %
          (len(steps), len(want), checked_segments))


if __name__ == "__main__":
    main(sys.argv)
