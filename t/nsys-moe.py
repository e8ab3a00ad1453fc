#!/usr/bin/env python3
"""nsys-moe.py OUT: a synthetic Nsight Systems SQLite export of two steps
of `bcgtool replay` on the breakable host plan of t/t3710-report-moe.sh's
moe.yaml (any of its variants: their items are the same), for that test:
the items "seg 0 router..route" (no kernels: a host plan records no graph
nodes) and "break experts", whose launch, inside the break's NVTX range,
runs one kernel of 2000 ns a step."""
import sqlite3
import sys

sys.dont_write_bytecode = True   # nothing written into t/
import nsys_tables  # noqa: E402

EXPERTS = "moe_experts_f32"


def main(out):
    db = sqlite3.connect(out)
    c = db.cursor()
    nsys_tables.create(c)
    c.execute("INSERT INTO StringIds VALUES (1, ?)", (EXPERTS,))
    tid = 7
    for step in range(2):
        o = 10000 * step
        for start, end, text in ((1000, 9000, "step %d" % step),
                                 (1100, 1200, "seg 0 router..route"),
                                 (1300, 1400, "break experts")):
            c.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?)",
                      (o + start, o + end, tid, text))
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?)",
                  (o + 1350, o + 1360, tid, step + 1))
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                  (o + 2000, o + 4000, step + 1, None, 4, 1, 1, 64, 1, 1, 1, 1))
    db.commit()
    db.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
