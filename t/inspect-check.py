#!/usr/bin/env python3
"""inspect-check.py - check `bcgtool inspect --json` against other sources.

  inspect-check.py script DUMP VALIDATE SCRIPT
      DUMP (inspect --json of a plan captured from SCRIPT) agrees with
      VALIDATE (validate --json of SCRIPT, another code path): dims, vars,
      tensors, ops, variants and their breakpoints, the arena; its
      script_hash is the FNV-1a 64 of SCRIPT's bytes, computed here; its
      items run every op once, in order; references are in range.
  inspect-check.py nodes DUMP
      every segment with nodes has the fingerprint that formats/
      plan-format.md defines, computed here from the dumped nodes and
      edges; node ops lie in their segment; parameters point inside the
      arena.
  inspect-check.py variant DUMP FULL TOKENS
      DUMP (inspect --json --variant TOKENS) holds exactly FULL's records
      of that variant, unchanged, and all of FULL's program.

Exits 1 with the first difference.
"""
import json
import struct
import sys

NODE_TYPES = {"kernel": 1, "memcpy": 2, "memset": 3, "host": 4, "graph": 5,
              "empty": 6, "event-record": 7, "event-wait": 8, "other": 15}


def fail(msg):
    print("inspect-check: " + msg)
    sys.exit(1)


def expect(what, got, want):
    if got != want:
        fail("%s: got %r, want %r" % (what, got, want))


def fnv1a64(data, h=0xcbf29ce484222325):
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xffffffffffffffff
    return h


def load(path):
    with open(path) as f:
        return json.load(f)


def check_script(dump, summary, script):
    with open(script, "rb") as f:
        expect("script_hash", dump["meta"]["script_hash"], "0x%016x" % fnv1a64(f.read()))
    expect("schema", dump["schema"], 1)
    if dump["format"] not in ("1.0", "1.1"):   # the versions this library reads
        fail("format: got %r, want 1.0 or 1.1" % dump["format"])

    expect("dims", [(d["name"], d["value"], d["expr"], d["tokens"]) for d in dump["dims"]],
           [(d["name"], d["value"], d["expr"], d["tokens"]) for d in summary["dims"]])
    expect("vars", [(v["name"], v["start"], v["step"], v["limit"], v["offset"])
                    for v in dump["vars"]],
           [(v["name"], v["start"], v["step"], v["limit"], v["offset"])
            for v in summary["vars"]])

    names = [t["name"] for t in dump["tensors"]]
    for t, s in zip(dump["tensors"], summary["tensors"]):
        for key in ("name", "dtype", "role", "bytes", "offset"):
            expect("tensor %s %s" % (t["name"], key), t[key], s[key])
        expect("tensor %s shape" % t["name"],
               [a["dim_name"] if a["dim"] is not None else a["size"] for a in t["shape"]],
               s["shape"])
        expect("tensor %s init" % t["name"], t["init"]["kind"],
               s["init"]["kind"] if s["init"] else "none")
        expect("tensor %s feed" % t["name"], t["feed"]["kind"],
               s["feed"]["kind"] if s["feed"] else "none")
    expect("tensor count", len(dump["tensors"]), len(summary["tensors"]))

    for o, s in zip(dump["ops"], summary["ops"]):
        for key in ("index", "kind", "name", "line", "col", "eager"):
            expect("op %d %s" % (o["index"], key), o[key], s[key])
        expect("op %d in" % o["index"], [names[i] for i in o["in"]], s["in"])
        expect("op %d out" % o["index"], [names[i] for i in o["out"]], s["out"])
        expect("op %d attrs" % o["index"], [a["key"] for a in o["attrs"]], list(s["attrs"]))
    expect("op count", len(dump["ops"]), len(summary["ops"]))

    arena = summary["arena"]
    expect("arena_bytes", dump["layout"]["arena_bytes"], arena["bytes"])
    expect("unshared_bytes", dump["layout"]["unshared_bytes"], arena["unshared_bytes"])
    expect("alignment", dump["layout"]["alignment"], arena["alignment"])

    expect("variants", [(v["tokens"], v["mode"], v["segments"], v["peak_bytes"])
                        for v in dump["variants"]],
           [(v["tokens"], v["mode"], v["segments"], v["peak_bytes"])
            for v in summary["variants"]])
    segs = {s["index"]: s for s in dump["segments"]}
    bps = {b["index"]: b for b in dump["breakpoints"]}
    for v, s in zip(dump["variants"], summary["variants"]):
        got = [(bps[i["index"]]["op"], bps[i["index"]]["name"], bps[i["index"]]["reason"],
                bps[i["index"]]["detail"]) for i in v["items"] if i["kind"] == "breakpoint"]
        want = [(b["op"], b["name"], b["reason"], b["detail"]) for b in s["breakpoints"]]
        expect("variant %d breakpoints" % v["tokens"], got, want)
        expect("variant %d breakpoint count" % v["tokens"], v["breakpoints"], len(want))
        # The items run every op once, in order.
        ops = []
        for i in v["items"]:
            if i["kind"] == "segment":
                seg = segs[i["index"]]
                expect("segment %d variant" % seg["index"], seg["variant"], v["index"])
                ops += range(seg["op_first"], seg["op_first"] + seg["op_count"])
            else:
                expect("breakpoint %d variant" % i["index"], bps[i["index"]]["variant"],
                       v["index"])
                ops.append(bps[i["index"]]["op"])
        expect("variant %d ops" % v["tokens"], ops, list(range(len(dump["ops"]))))
    for b in dump["breakpoints"]:
        op = dump["ops"][b["op"]]
        expect("breakpoint %d name" % b["index"], b["name"], op["label"])
        expect("breakpoint %d reads" % b["index"], b["reads"], op["in"])
        expect("breakpoint %d writes" % b["index"], b["writes"], op["out"])
    for c in dump["checks"]:
        expect("check %d tensor role" % c["index"], dump["tensors"][c["tensor"]]["role"], "output")


EDGE_TYPES = {"default": 0, "programmatic": 1}
EDGE_PORTS = {"default": 0, "programmatic": 1, "launch-completion": 2}


def fingerprint(seg):
    out = struct.pack("<I", len(seg["nodes"]))
    for n in seg["nodes"]:
        name = n["kernel"].encode()
        out += struct.pack("<II", NODE_TYPES[n["type"]], len(name)) + name
        out += struct.pack("<7I", *n["grid"], *n["block"], n["shmem"])
        out += struct.pack("<I", len(n["params"]))
        for p in n["params"]:
            out += struct.pack("<IQ", p["index"], p["offset"])
    out += struct.pack("<I", len(seg["edges"]))
    for e in seg["edges"]:
        out += struct.pack("<II", e["from"], e["to"])
    # format 1.1: edges with a type or ports other than the default follow,
    # each as its position and three bytes, only when there are any
    data = [(i, EDGE_TYPES[e["type"]], EDGE_PORTS[e["from_port"]], EDGE_PORTS[e["to_port"]])
            for i, e in enumerate(seg["edges"])]
    data = [d for d in data if d[1:] != (0, 0, 0)]
    if data:
        out += struct.pack("<I", len(data))
        for d in data:
            out += struct.pack("<I3B", *d)
    return fnv1a64(out)


def check_nodes(dump):
    seen = 0
    for s in dump["segments"]:
        if not s["nodes_recorded"]:
            expect("segment %d fingerprint" % s["index"], s["fingerprint"], "0x" + "0" * 16)
            expect("segment %d nodes" % s["index"], s["nodes"], [])
            continue
        seen += 1
        expect("segment %d fingerprint" % s["index"], s["fingerprint"],
               "0x%016x" % fingerprint(s))
        for n in s["nodes"]:
            if n["op"] is not None and not \
               s["op_first"] <= n["op"] < s["op_first"] + s["op_count"]:
                fail("segment %d node %d: op %d outside the segment" %
                     (s["index"], n["index"], n["op"]))
            for p in n["params"]:
                if not 0 <= p["offset"] < dump["layout"]["arena_bytes"]:
                    fail("segment %d node %d: parameter outside the arena" %
                         (s["index"], n["index"]))
        for e in s["edges"]:
            if not (0 <= e["from"] < len(s["nodes"]) and 0 <= e["to"] < len(s["nodes"])):
                fail("segment %d: edge out of range" % s["index"])
    if seen == 0:
        fail("no segment with nodes")


def check_variant(dump, full, tokens):
    keep = [v["index"] for v in full["variants"] if v["tokens"] == tokens]
    expect("variants", [v["tokens"] for v in dump["variants"]], [tokens])
    for key in ("meta", "layout", "stats", "dims", "vars", "tensors", "ops"):
        expect(key, dump[key], full[key])
    for key in ("segments", "breakpoints", "checks"):
        expect(key, dump[key], [r for r in full[key] if r["variant"] in keep])
    expect("dispatch", dump["dispatch"], [d for d in full["dispatch"] if d["variant"] in keep])
    expect("variant record", dump["variants"], [v for v in full["variants"] if v["index"] in keep])


def main(argv):
    if len(argv) == 5 and argv[1] == "script":
        check_script(load(argv[2]), load(argv[3]), argv[4])
    elif len(argv) == 3 and argv[1] == "nodes":
        check_nodes(load(argv[2]))
    elif len(argv) == 5 and argv[1] == "variant":
        check_variant(load(argv[2]), load(argv[3]), int(argv[4]))
    else:
        fail("usage: see the top of this file")


if __name__ == "__main__":
    main(sys.argv)
