#!/usr/bin/env python3
"""kernel-exposed.py - each kernel's time and exposed time, by kernel name,
from an Nsight Systems export (SQLite), for comparing steps that are built
of different kernels (bcgtool's against another program's).

    kernel-exposed.py REPORT.sqlite [--graphs] [--templates] [--steps N] [--top K]

Kernels in start order; a kernel's exposed time is how much it lengthens
the union of the kernels before it (its end past the latest end so far, or
its whole time when it starts after it), as `bcgtool report` counts it. By
kernel name (the short name, templates folded): instances, the mean time
and the mean exposed time, and, with --steps N, both per step (the sums
divided by N). --graphs keeps only kernels launched from CUDA graphs;
--templates keeps each kernel's template arguments in its name (from the
demangled name), so that one template's instantiations are apart. The time with no kernel
running is summed apart: gaps under 100 us (within the steps: feeds,
graph launches), by the kernel that ends each (idle/step), and the longer
pauses between phases; and the copies and memsets, where the export has
them."""

import sqlite3
import sys
from collections import defaultdict

# A gap between kernels at least this long (ns) is the host between
# phases, not part of a step.
IDLE_PAUSE = 100000


def template_name(demangled):
    """'void f<(int)2048, (int)2, (bool)1>(const T *, ...)' -> 'f<2048, 2, 1>'."""
    name = demangled.split("(", 1)[0] if "<" not in demangled.split("(", 1)[0] else demangled
    if name.startswith("void "):
        name = name[5:]
    depth, end = 0, len(name)
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                end = i + 1
                break
        elif c == "(" and depth == 0:
            end = i
            break
    name = name[:end]
    for cast in ("(int)", "(bool)", "(unsigned int)", "(long)"):
        name = name.replace(cast, "")
    return name


def main(argv):
    args, graphs, templates, steps, top = [], False, False, 0, 20
    i = 0
    while i < len(argv):
        if argv[i] == "--graphs":
            graphs = True
        elif argv[i] == "--templates":
            templates = True
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
    name_col = "k.demangledName" if templates else "k.shortName"
    rows = db.execute("SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                      "JOIN StringIds s ON s.id = " + name_col + where +
                      " ORDER BY k.start").fetchall()
    if not rows:
        print("no kernels")
        return 1
    n = defaultdict(int)
    total = defaultdict(float)
    exposed = defaultdict(float)
    idle_before = defaultdict(float)
    reach = 0
    idle, idle_n, pauses, paused = 0, 0, 0, 0
    for start, end, name in rows:
        name = template_name(name) if templates else name.split("<")[0]
        if reach and start > reach:
            # no kernel running: a gap within the replay's stream of steps,
            # or (past IDLE_PAUSE) the host between phases
            if start - reach < IDLE_PAUSE:
                idle += start - reach
                idle_n += 1
                idle_before[name] += start - reach
            else:
                pauses += 1
                paused += start - reach
        grew = end - max(start, reach) if end > reach else 0
        reach = max(reach, end)
        n[name] += 1
        total[name] += end - start
        exposed[name] += grew
    span = (rows[-1][1] - rows[0][0]) / 1e3
    print("%d kernels, %.1f us from the first start to the last end" % (len(rows), span))
    line = "no kernel running: %.1f us in %d gaps under %d us" % (idle / 1e3, idle_n,
                                                                 IDLE_PAUSE // 1000)
    if steps:
        line += " (%.2f us a step)" % (idle / steps / 1e3)
    print(line + "; %d pauses of %.1f us longer" % (pauses, paused / 1e3))
    for table in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        try:
            cnt, dur = db.execute("SELECT count(*), coalesce(sum(end - start), 0) FROM " +
                                  table).fetchone()
        except sqlite3.OperationalError:
            continue
        line = "%s: %d, %.1f us" % (table.rsplit("_", 1)[1].lower(), cnt, dur / 1e3)
        if steps:
            line += " (%.2f a step, %.2f us a step)" % (cnt / steps, dur / steps / 1e3)
        print(line)
    width = 60 if templates else 44
    hdr = "%-*s %8s %10s %10s" % (width, "kernel", "count", "mean us", "exposed")
    if steps:
        hdr += " %12s %12s %10s" % ("us/step", "exposed/step", "idle/step")
    print(hdr)
    for name in sorted(n, key=lambda k: -exposed[k])[:top]:
        line = "%-*s %8d %10.2f %10.2f" % (width, name[:width], n[name],
                                           total[name] / n[name] / 1e3, exposed[name] / n[name] / 1e3)
        if steps:
            line += " %12.2f %12.2f %10.2f" % (total[name] / steps / 1e3,
                                                exposed[name] / steps / 1e3,
                                                idle_before[name] / steps / 1e3)
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
