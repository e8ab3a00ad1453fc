#!/usr/bin/env python3
"""nsys-recorded.py OUT: a synthetic Nsight Systems SQLite export of two
steps of `bcgtool replay` on t/data/recorded.plan's variant 1
("decode_step"), for t/t4450-recorded-plans.sh: the tables and columns
bcgtool/profile/nsys.c reads, the NVTX names the recorded replay gives
its items ("seg S FIRST..LAST", "break NAME"), graph kernels with node ids
in creation order, and the library GEMM launched eagerly.

Each step (10 us apart): rmsnorm 2.0-2.5 us and matmul 2.6-3.6 us (graph
nodes 0 and 1 of segment 0), the GEMM 3.7-4.7 us (break cublasLt); so a
step spans 2.7 us, is busy 2.5 us, the graph's kernels take 1.5 us over a
1.6 us span, and the GEMM starts 0.1 us after the graph ends.
"""
import sqlite3
import sys

sys.dont_write_bytecode = True   # nothing written into t/
import nsys_tables  # noqa: E402

RMS = "_Z11rmsnorm_f16PK6__halfPS_if"
MATMUL = "_Z6matmulIfLi128EEvPKT_S2_PS0_iii"
GEMM = "sm90_xmma_gemm_f16f16_f32_tn_n_tilesize128x128x64"


def main(out):
    db = sqlite3.connect(out)
    c = db.cursor()
    nsys_tables.create(c)
    ids = {}
    for v in ("rmsnorm_f16", RMS, "matmul", MATMUL, GEMM):
        ids[v] = len(ids) + 1
        c.execute("INSERT INTO StringIds VALUES (?, ?)", (ids[v], v))
    tid, corr = 7, 0

    def kernel(start, end, cid, node, grid, block, short, mangled):
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                  (start, end, cid, node) + grid + block + (ids[short], ids[mangled]))

    for step in range(2):
        o = 10000 * step
        for start, end, text in ((1000, 9000, "step %d" % step), (1100, 1200, "break memcpy"),
                                 (1300, 1400, "seg 0 %s..%s" % (RMS, MATMUL)),
                                 (1500, 1600, "break cublasLt")):
            c.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?)", (o + start, o + end, tid, text))
        corr += 1
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?)",
                  (o + 1350, o + 1360, tid, corr))
        graph = (5 + step) << 32
        kernel(o + 2000, o + 2500, corr, graph | 0, (16, 1, 1), (256, 1, 1), "rmsnorm_f16", RMS)
        kernel(o + 2600, o + 3600, corr, graph | 1, (8, 4, 1), (128, 1, 1), "matmul", MATMUL)
        corr += 1
        c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?)",
                  (o + 1550, o + 1560, tid, corr))
        kernel(o + 3700, o + 4700, corr, None, (132, 1, 1), (384, 1, 1), GEMM, GEMM)
    db.commit()
    db.close()


if __name__ == "__main__":
    main(sys.argv[1])
