#!/usr/bin/env python3
"""replay-rounds.py - the step times of plans replayed in interleaved rounds
(bench/gpu-session.sh's fold, moerouter and qknorm stages), and the ratios
between them.

    replay-rounds.py PATTERN PLANS TOKENS ROUNDS [--check PATTERN]
                     [--ratio 'LABEL|A|B|WHY']...

PATTERN names each replay's `bcgtool replay --json` file, with {p} (a plan
of the comma-separated PLANS), {t} (a token count of TOKENS) and {r} (a
round, 1 to ROUNDS). Per plan and token count: each round's step median
and busy time, and, with --check, the check of a separate replay whose
JSON PATTERN names (with {p} and {t}); where the replays ran with
--stream, each round's stream mean too ("stream ms"). Each --ratio
prints, per token count, "LABEL: T=N A / B step = X (a / b ms; want < 1:
WHY)" from the medians over the rounds; a WHY that starts with "="
prints "want 1: ..." (two plans that should not differ)."""

import json
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print("  %s: no result (%s)" % (path, e))
        return None


def main(argv):
    args, checks, ratios = [], None, []
    i = 0
    while i < len(argv):
        if argv[i] in ("--check", "--ratio") and i + 1 < len(argv):
            if argv[i] == "--check":
                checks = argv[i + 1]
            else:
                ratios.append(argv[i + 1].split("|"))
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 4 or any(len(r) != 4 for r in ratios):
        sys.exit(__doc__)
    pattern, plans, tokens, rounds = args[0], args[1].split(","), \
        [int(t) for t in args[2].split(",")], int(args[3])
    width = max(len(p) for p in plans)
    med = {}
    for p in plans:
        for t in tokens:
            runs, streams = [], []
            for r in range(1, rounds + 1):
                d = load(pattern.format(p=p, t=t, r=r))
                if d is not None:
                    runs.append((d["step_ms"]["median"], d["busy_ms"]))
                    if d.get("stream"):
                        streams.append(d["stream"]["mean_ms"])
            if not runs:
                continue
            steps = sorted(x[0] for x in runs)
            med[(p, t)] = steps[len(steps) // 2]
            line = "  %-*s T=%d step ms %s, busy %s" % (
                width, p, t, " ".join("%.4f" % x[0] for x in runs),
                " ".join("%.4f" % x[1] for x in runs))
            if streams:
                line += ", stream ms %s" % " ".join("%.4f" % x for x in streams)
            if checks:
                c = load(checks.format(p=p, t=t))
                line += ", check %s" % (c.get("check") if c else None)
            print(line)
    for label, a, b, why in ratios:
        for t in tokens:
            x, y = med.get((a, t)), med.get((b, t))
            if x and y:
                want = "want 1: " + why[1:].lstrip() if why.startswith("=") \
                    else "want < 1: " + why
                print("%s: T=%d %s / %s step = %.4f (%.4f / %.4f ms; %s)" % (
                    label, t, a, b, x / y, x, y, want))


if __name__ == "__main__":
    main(sys.argv[1:])
