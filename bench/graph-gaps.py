#!/usr/bin/env python3
"""graph-gaps.py - where the time between the kernels of a CUDA graph goes,
from Nsight Systems exports (SQLite, traced with --cuda-graph-trace=node),
and how two runs of the same graphs differ there (bench/gpu-session.sh's
reckern stage: a recorded program and the replay of its recording).

    graph-gaps.py A.sqlite [B.sqlite] [--top N] [--positions]

Each graph launch's kernels share the launch's correlationId. Launches are
grouped by their kernel count and first kernel's name (a graph's shape);
per shape and per position in the launch (kernels in start order): the
mean kernel time and the mean gap before it (its start less the previous
kernel's end). With B, the shapes both runs hold are compared position by
position, and the N positions whose gap or kernel time differs most are
listed, with the sums. --positions, with A alone: every position of each
shape, its mean kernel time and the mean gap before it (negative: the
kernel started before the previous one ended), so that two programs'
steps of different kernels can be laid side by side."""

import sqlite3
import sys
from collections import defaultdict


def launches(path):
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT k.correlationId, k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "LEFT JOIN StringIds s ON s.id = k.shortName ORDER BY k.correlationId, k.start").fetchall()
    by = defaultdict(list)
    for corr, start, end, name in rows:
        by[corr].append((start, end, name or "?"))
    shapes = defaultdict(list)
    for ks in by.values():
        if len(ks) < 2:
            continue
        ks.sort()
        shapes[(len(ks), ks[0][2])].append(ks)
    return shapes


def profile(runs):
    """Per position: (mean kernel ns, mean gap ns before it, name)."""
    n = len(runs[0])
    out = []
    for i in range(n):
        dur = sum(r[i][1] - r[i][0] for r in runs) / len(runs)
        gap = sum(r[i][0] - r[i - 1][1] for r in runs) / len(runs) if i else 0.0
        out.append((dur, gap, runs[0][i][2]))
    return out


def summary(label, shape, runs):
    p = profile(runs)
    span = sum(r[-1][1] - r[0][0] for r in runs) / len(runs)
    print("%s: %d launches of %d kernels (first %.40s): span %.1f us, kernels %.1f us, "
          "gaps %.1f us" % (label, len(runs), shape[0], shape[1], span / 1e3,
                            sum(x[0] for x in p) / 1e3, sum(x[1] for x in p) / 1e3))
    return p


def main(argv):
    top = 15
    files = []
    positions = False
    i = 0
    while i < len(argv):
        if argv[i] == "--top" and i + 1 < len(argv):
            top = int(argv[i + 1])
            i += 2
        elif argv[i] == "--positions":
            positions = True
            i += 1
        else:
            files.append(argv[i])
            i += 1
    if not 1 <= len(files) <= 2:
        sys.exit(__doc__)
    a = launches(files[0])
    if len(files) == 1:
        for shape, runs in sorted(a.items(), key=lambda x: -len(x[1])):
            p = summary("A", shape, runs)
            if positions:
                for k, (dur, gap, name) in enumerate(p):
                    print("  #%-4d %-50.50s kernel %7.2f us, gap before %6.2f us" % (
                        k, name, dur / 1e3, gap / 1e3))
        return
    b = launches(files[1])
    both = [s for s in a if s in b]
    if not both:
        print("no graph shape is in both runs (A has %d, B %d)" % (len(a), len(b)))
        return
    for shape in sorted(both, key=lambda s: -len(a[s])):
        pa, pb = summary("A", shape, a[shape]), summary("B", shape, b[shape])
        diffs = sorted(range(len(pa)), key=lambda i: -abs((pb[i][0] + pb[i][1]) -
                                                          (pa[i][0] + pa[i][1])))
        for i in diffs[:top]:
            print("  #%-4d %-50.50s kernel %7.2f / %7.2f us, gap before %6.2f / %6.2f us" % (
                i, pa[i][2], pa[i][0] / 1e3, pb[i][0] / 1e3, pa[i][1] / 1e3, pb[i][1] / 1e3))


if __name__ == "__main__":
    main(sys.argv[1:])
