#!/usr/bin/env python3
"""compare-outputs.py - compare two output dumps of `bcgtool run --dump-outputs`.

usage: compare-outputs.py [--rtol R] [--argmax IDX=VALUES]... GOT_DIR REF_DIR

Both directories must list the same outputs (names, dtypes, shapes) in
their outputs.json. Without --rtol every output must be identical, byte
for byte. With --rtol R, float outputs agree when, row by row (the last
axis), every element differs from the reference by at most
R * max(1, the largest magnitude in the reference row); i32 outputs must
be identical, except those named by --argmax IDX=VALUES: IDX holds the
index of the largest element of each row of the float output VALUES, and
must agree with the reference only in the rows where the reference's two
largest values are more than 2 * R * max(1, largest magnitude) apart (a
closer pair may swap under the tolerance). Prints one line per output and
exits 1 on any disagreement, 2 on a usage or input error.
"""
import json
import math
import os
import struct
import sys

FORMATS = {"f32": ("<f", 4), "i32": ("<i", 4), "f16": ("<e", 2), "bf16": ("<H", 2)}


def load(d):
    with open(os.path.join(d, "outputs.json")) as f:
        man = json.load(f)
    outs = {}
    for o in man["outputs"]:
        fmt, size = FORMATS[o["dtype"]]
        with open(os.path.join(d, o["file"]), "rb") as f:
            raw = f.read()
        n = math.prod(o["shape"]) if o["shape"] else 1
        if len(raw) != n * size:
            raise ValueError("%s/%s holds %d bytes, expected %d" % (d, o["file"], len(raw), n * size))
        vals = [v[0] for v in struct.iter_unpack(fmt, raw)]
        if o["dtype"] == "bf16":
            vals = [struct.unpack("<f", struct.pack("<I", v << 16))[0] for v in vals]
        outs[o["name"]] = (o, raw, vals)
    return outs


def rows(o, vals):
    cols = o["shape"][-1] if o["shape"] else 1
    return [vals[i:i + cols] for i in range(0, len(vals), cols)]


def scale(row):
    return max([1.0] + [abs(v) for v in row if not math.isnan(v)])


def main(argv):
    rtol, argmax, dirs = None, {}, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--rtol" and i + 1 < len(argv):
            rtol = float(argv[i + 1])
            i += 2
        elif a == "--argmax" and i + 1 < len(argv) and "=" in argv[i + 1]:
            idx, values = argv[i + 1].split("=", 1)
            argmax[idx] = values
            i += 2
        else:
            dirs.append(a)
            i += 1
    if len(dirs) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        got, ref = load(dirs[0]), load(dirs[1])
    except (OSError, ValueError, KeyError) as e:
        print("compare-outputs: %s" % e, file=sys.stderr)
        return 2
    if sorted(got) != sorted(ref):
        print("outputs differ: %s against %s" % (sorted(got), sorted(ref)))
        return 1
    bad = 0
    for name in sorted(ref):
        (og, rawg, g), (orf, rawr, r) = got[name], ref[name]
        if (og["dtype"], og["shape"]) != (orf["dtype"], orf["shape"]):
            print("%s: %s %s against %s %s" % (name, og["dtype"], og["shape"], orf["dtype"], orf["shape"]))
            bad += 1
            continue
        if rtol is None or (og["dtype"] == "i32" and name not in argmax):
            same = rawg == rawr
            print("%s: %s" % (name, "identical" if same else "differs"))
            bad += not same
            continue
        if name in argmax:
            vo, _, vr = ref[argmax[name]]
            checked = wrong = 0
            for k, row in enumerate(rows(vo, vr)):
                top = sorted(row, reverse=True)
                if len(top) > 1 and top[0] - top[1] <= 2 * rtol * scale(row):
                    continue
                checked += 1
                wrong += g[k] != r[k]
            print("%s: %d of %d rows with a clear largest value agree" % (name, checked - wrong, checked))
            bad += wrong != 0
            continue
        worst = 0.0
        for rg, rr in zip(rows(og, g), rows(orf, r)):
            s = scale(rr)
            for a, b in zip(rg, rr):
                e = abs(a - b) / s if not (math.isnan(a) or math.isnan(b)) else math.inf
                worst = max(worst, e)
        ok = worst <= rtol
        print("%s: largest error %.3g of the row's scale, %s %g" % (name, worst, "within" if ok else "beyond", rtol))
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
