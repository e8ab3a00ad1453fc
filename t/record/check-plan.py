"""check-plan.py PROGRAM.json INSPECT.json LABEL - check a recorded plan
(bcgtool inspect --json) against what the PyTorch program that was
recorded says it made (t/record/*.py): one variant per batch size, in the
order the program first ran them, each seen as many steps as it ran,
labelled LABEL, with the program's graphs as segments (nodes recorded)
and its breaks as recorded breakpoints. Prints one line per variant;
exits 1 at the first difference."""

import json
import sys


def fail(msg):
    print("check-plan: " + msg)
    sys.exit(1)


def main():
    prog = json.load(open(sys.argv[1]))
    plan = json.load(open(sys.argv[2]))
    label = sys.argv[3]
    if plan.get("origin") != "recorded":
        fail("origin is %r, not 'recorded'" % plan.get("origin"))
    sizes = prog["batch_sizes"]
    # Either order runs the batch sizes first in the order given.
    first = sizes
    variants = [v for v in plan["variants"] if v["device"] == 0]
    if len(variants) != len(sizes):
        fail("%d variants, the program ran %d batch sizes" % (len(variants), len(sizes)))
    for v, b in zip(variants, first):
        want_seg = prog["graphs_per_batch_size"][str(b)]
        want_brk = prog["breaks_per_step"][str(b)]
        if v["segments"] != want_seg:
            fail("variant %d (batch %d): %d segments, the program made %d graphs"
                 % (v["tokens"], b, v["segments"], want_seg))
        if v["breakpoints"] != want_brk:
            fail("variant %d (batch %d): %d breakpoints, the program broke %d times a step"
                 % (v["tokens"], b, v["breakpoints"], want_brk))
        if v["seen"] != prog["steps_per_batch_size"]:
            fail("variant %d (batch %d): seen %d times, the program ran %d steps"
                 % (v["tokens"], b, v["seen"], prog["steps_per_batch_size"]))
        if v["label"] != label:
            fail("variant %d: label %r, not %r" % (v["tokens"], v["label"], label))
        want_mode = "full" if want_brk == 0 else "breakable"
        if v["mode"] != want_mode:
            fail("variant %d: mode %r, not %r" % (v["tokens"], v["mode"], want_mode))
        kinds = [i["kind"] for i in v["items"]]
        # A breakable step alternates: segment, break, segment, ..., segment.
        want = ["segment"] + ["breakpoint", "segment"] * want_brk
        if kinds != want:
            fail("variant %d: items %s, not %s" % (v["tokens"], kinds, want))
        for it in v["items"]:
            if it["kind"] == "segment":
                s = plan["segments"][it["index"]]
                if not s["nodes_recorded"] or len(s["nodes"]) == 0:
                    fail("variant %d: segment %d has no recorded nodes" % (v["tokens"], s["index"]))
                for n in s["nodes"]:
                    if n["type"] in ("kernel", "memcpy", "memset") and n.get("launch") is None:
                        fail("segment %d node %d: no launch" % (s["index"], n["index"]))
            else:
                bp = plan["breakpoints"][it["index"]]
                if bp["reason"] != "recorded" or bp["launch_count"] < 1:
                    fail("breakpoint %d: reason %r, %d launches"
                         % (bp["index"], bp["reason"], bp["launch_count"]))
        print("variant %d: batch %d, %d segments, %d breaks, seen %d, %s"
              % (v["tokens"], b, v["segments"], v["breakpoints"], v["seen"], v["mode"]))


if __name__ == "__main__":
    main()
