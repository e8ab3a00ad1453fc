#!/usr/bin/env python3
"""step-gaps.py - the time between the steps of a replay, from an Nsight
Systems export (SQLite): from the last kernel end of one step to the first
kernel start of the next, and the copies that run in between (the feeds
and vars each step writes before its graph). bench/graph-gaps.py looks
inside the graphs; this looks between them.

    step-gaps.py REPORT.sqlite FIRST

FIRST is a substring of the name of each step's first kernel (the 1B
sample's: embedding). Prints, as median, 10th and 90th percentiles: the
step's span, the gap before the next step, the copies in the gap and
their time, and the time from the last copy's end to the next kernel."""

import sqlite3
import statistics
import sys


def quantiles(x):
    if not x:
        return "-"
    x = sorted(x)
    return "median %.2f p10 %.2f p90 %.2f" % (statistics.median(x), x[len(x) // 10],
                                               x[len(x) * 9 // 10])


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    db = sqlite3.connect(argv[1])
    first = argv[2]
    names = dict(db.execute("SELECT id, value FROM StringIds"))
    ks = db.execute("SELECT start, end, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL "
                    "ORDER BY start").fetchall()
    try:
        copies = db.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                            "ORDER BY start").fetchall()
    except sqlite3.Error:
        copies = []
    starts = [i for i, k in enumerate(ks) if first in names.get(k[2], "")]
    if len(starts) < 2:
        sys.stderr.write("step-gaps.py: fewer than two kernels named like '%s'\n" % first)
        return 1
    spans, gaps, count, busy, lead = [], [], [], [], []
    for a, b in zip(starts, starts[1:]):
        end = max(k[1] for k in ks[a:b])
        nxt = ks[b][0]
        spans.append((end - ks[a][0]) / 1e3)
        gaps.append((nxt - end) / 1e3)
        inside = [c for c in copies if c[0] >= end and c[1] <= nxt]
        count.append(len(inside))
        busy.append(sum(c[1] - c[0] for c in inside) / 1e3)
        if inside:
            lead.append((nxt - inside[-1][1]) / 1e3)
    print("kernels %d, steps %d, copies %d" % (len(ks), len(starts), len(copies)))
    print("step span us:", quantiles(spans))
    print("gap between steps us:", quantiles(gaps))
    print("copies in a gap:", quantiles(count), "; their time us:", quantiles(busy))
    print("last copy's end to the next kernel us:", quantiles(lead))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
