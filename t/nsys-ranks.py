#!/usr/bin/env python3
"""nsys-ranks.py OUT RANK [STEP-PREFIX]: a synthetic Nsight Systems SQLite
export of three steps of `bcgtool replay` on one rank of a tensor-parallel
plan, for t/t3820-tp-bench-report.sh: the breakable plan of that test's
mlp.yaml at --tp 2, 4 tokens, whose items are "seg 0 up..down", "break
down.all_reduce", "seg 1 down.add..lm_head" and "break lm_head.all_gather".

The steps' NVTX ranges read "rank RANK step N" (STEP-PREFIX replaces
"rank RANK " when given; "" gives the plain "step N" of a one-rank
replay). In each step (10 us apart) the two breakpoints launch one
collective kernel each; the segments launch none (a host plan records no
graph nodes):
  - the all_reduce, 1200 + 100 * RANK ns, is launched through the driver
    (its correlation id only in CUPTI_ACTIVITY_KIND_DRIVER, as NCCL's
    cuLaunchKernelEx);
  - the all_gather, 800 + 50 * RANK ns, through the runtime, and its
    correlation id is in the driver's table too, on another thread (the
    runtime's own driver call): the runtime's call is the one that counts.
With NSYS_RANKS_PROXY=1 in the environment the all_reduce's driver call
is made on a thread of its own (NCCL's, for a non-blocking communicator)
while the step's thread is inside the breakpoint's range.
"""
import os
import sqlite3
import sys

sys.dont_write_bytecode = True   # nothing written into t/
import nsys_tables  # noqa: E402

AR = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
AG = "ncclDevKernel_AllGather_RING_LL"


def main(out, rank, prefix):
    db = sqlite3.connect(out)
    c = db.cursor()
    nsys_tables.create(c, driver=True)
    for i, v in enumerate((AR, AG)):
        c.execute("INSERT INTO StringIds VALUES (?, ?)", (i + 1, v))
    tid, corr = 7, 0
    ar_tid = 8 if os.environ.get("NSYS_RANKS_PROXY") == "1" else tid
    for step in range(3):
        o = 10000 * step
        for start, end, text in ((1000, 9000, "%sstep %d" % (prefix, step)),
                                 (1100, 1200, "seg 0 up..down"),
                                 (1300, 1400, "break down.all_reduce"),
                                 (1500, 1600, "seg 1 down.add..lm_head"),
                                 (1700, 1800, "break lm_head.all_gather")):
            c.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?)",
                      (o + start, o + end, tid, text))
        corr += 1
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER VALUES (?, ?, ?, ?)",
                  (o + 1350, o + 1360, ar_tid, corr))
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                  (o + 2000, o + 2000 + 1200 + 100 * rank, corr, None, 2, 1, 1, 64, 1, 1, 1, 1))
        corr += 1
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?)",
                  (o + 1750, o + 1760, tid, corr))
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER VALUES (?, ?, ?, ?)",
                  (o + 1752, o + 1758, 99, corr))
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                  (o + 4000, o + 4000 + 800 + 50 * rank, corr, None, 2, 1, 1, 64, 1, 1, 2, 2))
    db.commit()
    db.close()


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    r = int(sys.argv[2])
    main(sys.argv[1], r, sys.argv[3] if len(sys.argv) == 4 else "rank %d " % r)
