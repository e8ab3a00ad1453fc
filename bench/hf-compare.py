#!/usr/bin/env python3
"""hf-compare.py MODEL_DIR REPLAY_JSON LOGITS_BIN [LABEL]

bcgtool's greedy generation (replay --prompt --json, --logits) against
what transformers made of the same checkpoint (t/hf-fixtures.py wrote
MODEL_DIR/expect.json and logits.bin): the tokens that agree, the first
that does not, the last step's logit error, transformers' top-2 gaps,
and the prefill step's time split (warm-up with setup, the timed step).
Prints lines for bench/gpu-session.sh's summary."""
import json
import os
import struct
import sys


def floats(path):
    b = open(path, "rb").read()
    return struct.unpack("<%df" % (len(b) // 4), b)


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    mdir, rep, logits = sys.argv[1:4]
    label = sys.argv[4] if len(sys.argv) == 5 else ""
    want = json.load(open(os.path.join(mdir, "expect.json")))
    got = json.load(open(rep))
    wt, gt = want["tokens"], got["tokens"]
    same = sum(1 for a, b in zip(wt, gt) if a == b)
    first = next((i for i, (a, b) in enumerate(zip(wt, gt)) if a != b), None)
    gaps = want.get("gaps", [])
    print("  %stransformers %s (%s on %s, tf32 %s)" % (label, wt, want.get("dtype"),
          want.get("device", "?"), want.get("tf32", "?")))
    print("  %sbcgtool      %s" % (label, gt))
    print("  %stokens matched: %d of %d; first mismatch: %s" % (
        label, same, len(wt), "none" if first is None else "step %d (%d, transformers %d)" % (
            first, gt[first], wt[first])))
    print("  %stransformers' smallest top-2 gap %.4g%s" % (
        label, want["min_gap"], "; per step " + " ".join("%.3g" % g for g in gaps) if gaps else ""))
    x, y = floats(os.path.join(mdir, want["logits"])), floats(logits)
    if len(x) != len(y):
        print("  %slast logits: %d values, transformers %d" % (label, len(y), len(x)))
    else:
        big = max(abs(p) for p in x)
        err = [abs(p - q) for p, q in zip(x, y)]
        k = max(range(len(err)), key=err.__getitem__)
        rel = max(e / abs(p) for e, p in zip(err, x) if abs(p) >= 1e-3 * big)
        print("  %slast step's logits%s: max abs error %.3g (at %d: %.6g vs %.6g), relative to the "
              "largest |logit| (%.4g) %.3g; max elementwise rel error %.3g (|logit| >= 1e-3 of "
              "the largest)" % (label, "" if first is None else " (after a differing token: "
              "not comparable)", err[k], k, y[k], x[k], big, err[k] / big, rel))
    s, w = got["steps"], got.get("warmup", [])
    pre = [v for v in w if v["tokens"] == s[0]["tokens"]]
    if pre:
        print("  %sprefill %d tokens (ran %d): first run %.3f ms = setup %.3f ms (instantiate: "
              "eager warm-up, captures, graph instantiate, upload) + first launch %.3f ms" % (
                  label, pre[0]["tokens"], pre[0]["ran"], pre[0]["ms"], pre[0]["setup_ms"],
                  pre[0]["ms"] - pre[0]["setup_ms"]))
    dec = [v for v in w if v["tokens"] == 1] if s[0]["tokens"] != 1 else []
    if dec:
        print("  %sdecode variant: first run %.3f ms = setup %.3f ms + first launch %.3f ms" % (
            label, dec[0]["ms"], dec[0]["setup_ms"], dec[0]["ms"] - dec[0]["setup_ms"]))
    print("  %sprefill timed (after the warm-up and a reset): %.3f ms (setup %.3f ms); decode "
          "median %.3f ms a token; host clock, each step waited for" % (
              label, s[0]["ms"], s[0]["setup_ms"], got["decode_ms_median"]))
    return 0 if first is None else 1


if __name__ == "__main__":
    sys.exit(main())
