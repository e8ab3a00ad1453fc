#!/usr/bin/env python3
"""nvtx-check.py - check the NVTX ranges t/helper/nvtx-log.so recorded.

  nvtx-check.py replay LOG TIMED BUSY ITEM...
      the "timed" phase holds TIMED "step N" ranges (N = 0, 1, ...), the
      "busy" phase BUSY of them, and each step holds exactly ITEM... in order;
  nvtx-check.py capture LOG T1,T2,... ITEM...
      "capture T" ranges come in that order, each holding ITEM... in order.

An ITEM is a range name with '~' for spaces ("seg~0~embed..v_write.0",
"break~attn.0"). Segments carry their node count as payload (> 0), and
each kind has its color. Exits 1 with the first difference.
"""
import sys

COLORS = {"step": "ff9e9e9e", "seg": "ff43a047", "break": "fffb8c00",
          "capture": "ff1e88e5"}


class Range:
    def __init__(self, name, color, payload, parent):
        self.name, self.color, self.payload = name, color, payload
        self.parent, self.children = parent, []


def fail(msg):
    print("nvtx-check: " + msg)
    sys.exit(1)


def parse(path):
    root = Range("(root)", "", "-", None)
    cur, domains = root, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("domain "):
                domains.append(line[7:])
            elif line.startswith("push "):
                # push DOMAIN CATEGORY COLOR PAYLOAD MESSAGE
                parts = line.split(" ", 5)
                if len(parts) < 6:
                    fail("line %d: malformed: %s" % (n, line))
                if parts[1] != "bcgtool":
                    fail("line %d: range outside the bcgtool domain" % n)
                r = Range(parts[5], parts[3], parts[4], cur)
                cur.children.append(r)
                cur = r
            elif line.startswith("pop "):
                if cur is root:
                    fail("line %d: pop without a push" % n)
                cur = cur.parent
    if cur is not root:
        fail("range '%s' never popped" % cur.name)
    if "bcgtool" not in domains:
        fail("no bcgtool domain was created")
    return root


def kind(name):
    return name.split(" ", 1)[0]


def check_items(r, items, where):
    names = [c.name for c in r.children]
    want = [i.replace("~", " ") for i in items]
    if names != want:
        fail("%s holds %s, expected %s" % (where, names, want))
    for c in r.children:
        if c.color != COLORS[kind(c.name)]:
            fail("%s: '%s' has color %s" % (where, c.name, c.color))
        if kind(c.name) == "seg" and not (c.payload.isdigit() and int(c.payload) > 0):
            fail("%s: '%s' has no node count" % (where, c.name))
        if c.children:
            fail("%s: '%s' has ranges inside it" % (where, c.name))


def phase(root, name):
    found = [c for c in root.children if c.name == name]
    if len(found) != 1:
        fail("expected one '%s' phase, found %d" % (name, len(found)))
    return found[0]


def check_steps(p, count, items, label):
    steps = p.children
    if [s.name for s in steps] != ["step %d" % i for i in range(len(steps))] and label == "timed":
        fail("timed steps are %s" % [s.name for s in steps])
    if len(steps) != count:
        fail("%s phase has %d steps, expected %d" % (label, len(steps), count))
    for s in steps:
        if not s.name.startswith("step ") or s.color != COLORS["step"]:
            fail("%s: unexpected range '%s'" % (label, s.name))
        check_items(s, items, "%s %s" % (label, s.name))


def main(argv):
    if len(argv) < 4:
        fail("usage: see the file")
    mode, log = argv[1], argv[2]
    root = parse(log)
    if mode == "replay":
        timed, busy, items = int(argv[3]), int(argv[4]), argv[5:]
        check_steps(phase(root, "timed"), timed, items, "timed")
        check_steps(phase(root, "busy"), busy, items, "busy")
    elif mode == "capture":
        sizes, items = argv[3].split(","), argv[4:]
        caps = [c for c in root.children if c.name.startswith("capture ")]
        if [c.name for c in caps] != ["capture " + t for t in sizes]:
            fail("capture ranges are %s" % [c.name for c in caps])
        for c in caps:
            if c.color != COLORS["capture"]:
                fail("'%s' has color %s" % (c.name, c.color))
            check_items(c, items, c.name)
        for p in ("reference", "verify"):
            if len([c for c in root.children if c.name == p]) != len(sizes):
                fail("expected one '%s' phase per variant" % p)
    else:
        fail("unknown mode " + mode)
    print("nvtx-check: ok")


if __name__ == "__main__":
    main(sys.argv)
