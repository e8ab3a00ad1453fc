#!/usr/bin/env python3
"""kernel-exposed.py - each kernel's time and exposed time, by kernel name,
from an Nsight Systems export (SQLite), for comparing steps that are built
of different kernels (bcgtool's against another program's).

    kernel-exposed.py REPORT.sqlite [--graphs] [--steps N] [--top K]

Kernels in start order; a kernel's exposed time is how much it lengthens
the union of the kernels before it (its end past the latest end so far, or
its whole time when it starts after it), as `bcgtool report` counts it. By
kernel name (the short name, templates folded): instances, the mean time
and the mean exposed time, and, with --steps N, both per step (the sums
divided by N). --graphs keeps only kernels launched from CUDA graphs."""

import sqlite3
import sys
from collections import defaultdict


def main(argv):
    args, graphs, steps, top = [], False, 0, 20
    i = 0
    while i < len(argv):
        if argv[i] == "--graphs":
            graphs = True
        elif argv[i] in ("--steps", "--top") and i + 1 < len(argv):
            if argv[i] == "--steps":
                steps = int(argv[i + 1])
            else:
                top = int(argv[i + 1])
            i += 1
        else:
            args.append(argv[i])
        i += 1
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    db = sqlite3.connect(args[0])
    cols = {r[1] for r in db.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")}
    where = " WHERE k.graphNodeId IS NOT NULL" if graphs and "graphNodeId" in cols else ""
    rows = db.execute("SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                      "JOIN StringIds s ON s.id = k.shortName" + where +
                      " ORDER BY k.start").fetchall()
    if not rows:
        print("no kernels")
        return 1
    n = defaultdict(int)
    total = defaultdict(float)
    exposed = defaultdict(float)
    reach = 0
    for start, end, name in rows:
        name = name.split("<")[0]
        grew = end - max(start, reach) if end > reach else 0
        reach = max(reach, end)
        n[name] += 1
        total[name] += end - start
        exposed[name] += grew
    span = (rows[-1][1] - rows[0][0]) / 1e3
    print("%d kernels, %.1f us from the first start to the last end" % (len(rows), span))
    hdr = "%-44s %8s %10s %10s" % ("kernel", "count", "mean us", "exposed")
    if steps:
        hdr += " %12s %12s" % ("us/step", "exposed/step")
    print(hdr)
    for name in sorted(n, key=lambda k: -exposed[k])[:top]:
        line = "%-44s %8d %10.2f %10.2f" % (name[:44], n[name], total[name] / n[name] / 1e3,
                                            exposed[name] / n[name] / 1e3)
        if steps:
            line += " %12.2f %12.2f" % (total[name] / steps / 1e3, exposed[name] / steps / 1e3)
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
