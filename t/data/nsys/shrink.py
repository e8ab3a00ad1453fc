#!/usr/bin/env python3
"""shrink.py - make the committed test export from a full one.

  shrink.py FULL.sqlite SMALL.sqlite

Copies FULL (an `nsys export --type sqlite` file) and drops every table
that bcgtool report does not read (CPU sampling, scheduling, processes,
diagnostics, ...), then vacuums. The tables kept are kept whole, rows and
schema as Nsight Systems wrote them, so the result is still a real export.
"""
import shutil
import sqlite3
import sys

KEEP = {
    "StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS", "CUDA_GRAPH_NODE_EVENTS", "META_DATA_EXPORT", "TARGET_INFO_GPU",
    "TARGET_INFO_SESSION_START_TIME", "ENUM_NSYS_EVENT_TYPE", "ENUM_NSYS_EVENT_CLASS",
    "ENUM_CUDA_KERNEL_LAUNCH_TYPE",
}


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: shrink.py FULL.sqlite SMALL.sqlite")
    shutil.copyfile(argv[1], argv[2])
    db = sqlite3.connect(argv[2])
    names = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for name in names:
        if name not in KEEP:
            db.execute('DROP TABLE "%s"' % name)
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main(sys.argv)
