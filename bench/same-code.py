#!/usr/bin/env python3
"""same-code.py - whether the kernels of two cubins are the same machine
code, byte for byte: a kernel change checked without a GPU (the
eighteenth session's paged attention: its pair-major form against the
kernel before it).

    same-code.py A.cubin B.cubin [--match TEXT] [--map REGEX REPLACEMENT]

Build each cubin from a .cu with the project's flags, e.g.
    nvcc -arch=compute_90 -std=c++17 -O3 --ftz=false --prec-div=true \\
        --prec-sqrt=true -I. -I./libplan -I./bcgtool -ptx -o X.ptx X.cu
    ptxas -arch=sm_90 -O3 X.ptx -o X.cubin
Kernels are the .text sections, named by their demangled names (c++filt,
the parameter list dropped); --match keeps those whose name holds TEXT;
--map rewrites A's names (re.sub) before they are looked up in B, where a
template gained parameters. The section table is binutils' (readelf);
relocation sections are compared too. Prints each kernel of A that B
lacks or holds otherwise, then the count the same; exits 1 unless all
are."""

import re
import subprocess
import sys


def sections(path):
    out = subprocess.run(["readelf", "-W", "-S", path], capture_output=True, text=True,
                         check=True).stdout
    data = open(path, "rb").read()
    secs = {}
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m and (m.group(1).startswith(".text.") or m.group(1).startswith(".rela.text.")):
            off, size = int(m.group(2), 16), int(m.group(3), 16)
            secs[m.group(1)] = data[off:off + size]
    return secs


def kernels(path, match):
    secs = sections(path)
    names = [n[len(".text."):] for n in secs if n.startswith(".text.")]
    dem = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    out = {}
    for raw, d in zip(names, dem):
        d = re.sub(r"\(.*", "", d)
        if match in d:
            out[d] = (secs[".text." + raw], secs.get(".rela.text." + raw, b""))
    return out


def main(argv):
    args = argv[1:]
    match, maps = "", []
    while len(args) > 2:
        if args[2] == "--match" and len(args) > 3:
            match = args[3]
            del args[2:4]
        elif args[2] == "--map" and len(args) > 4:
            maps.append((args[3], args[4]))
            del args[2:5]
        else:
            sys.exit(__doc__)
    if len(args) != 2:
        sys.exit(__doc__)
    a, b = kernels(args[0], match), kernels(args[1], match)
    same = 0
    for name, code in sorted(a.items()):
        key = name
        for rx, rep in maps:
            key = re.sub(rx, rep, key)
        if key not in b:
            print("not in B: %s" % key)
        elif b[key] != code:
            print("differs: %s (%d against %d bytes)" % (name, len(code[0]), len(b[key][0])))
        else:
            same += 1
    print("%d of %d kernels the same machine code" % (same, len(a)))
    return 0 if a and same == len(a) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
