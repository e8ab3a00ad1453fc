#!/usr/bin/env python3
"""st-craft.py DIR - write the safetensors files of t7000-safetensors.sh.

Made with the standard library only (struct and json), from the format's
definition: an 8-byte little-endian header size N, N bytes of JSON, the
data. DIR receives

  good.safetensors      tensors a (F32 [4, 8]), layer.0.n and layer.1.n
                        (BF16 [8]), q (F16 [4, 8]), k (F32 [1, 8]), v (BF16
                        [1, 8]), ids (I32 [2]) and some __metadata__
  shard-1.safetensors,  the same tensors split over two files, and
  shard-2.safetensors,  model.safetensors.index.json naming them
  expect/*.bin          what bcgtool run --dump-outputs must write for the
                        script of the test: each tensor converted to the
                        dtype the script declares, computed here
  bad-*.safetensors     one defect each (see BAD below)
"""
import json
import math
import os
import struct
import sys


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bf16_of_f32(x):
    """Round an f32 to bf16, to nearest even (NaN kept a NaN)."""
    b = f32_bits(x)
    if math.isnan(x):
        return (b >> 16) | 0x40
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def f32_of_bf16(h):
    return struct.unpack("<f", struct.pack("<I", h << 16))[0]


def pack(dtype, values):
    if dtype == "F32":
        return struct.pack("<%df" % len(values), *values)
    if dtype == "F16":
        return struct.pack("<%de" % len(values), *values)
    if dtype == "BF16":
        return struct.pack("<%dH" % len(values), *[bf16_of_f32(v) for v in values])
    if dtype == "I32":
        return struct.pack("<%di" % len(values), *values)
    raise ValueError(dtype)


def write(path, header, data, pad_to=8):
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % pad_to)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def layout(tensors):
    """Header and data for [(name, dtype, shape, values)], in order."""
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, dtype, shape, values in tensors:
        b = pack(dtype, values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    return header, data


# Values exactly representable in every dtype, but for a's last row, whose
# f32 values bf16 must round (ties to even, and one up).
A = [float(i) / 4 for i in range(24)] + [1.00390625, 1.01171875, 1.0078125, -2.00390625,
                                          3.5, -0.25, 1e-3, 7.0]
N0 = [1.0, 0.5, -0.5, 2.0, 0.25, -1.0, 4.0, 0.125]
N1 = [x * -2 for x in N0]
Q = [float(i - 16) / 8 for i in range(32)]
K = [0.75] * 8
V = [-1.5, 1.5, 0.0, 2.5, -3.0, 0.5, 1.0, -0.125]
TENSORS = [
    ("a", "F32", [4, 8], A),
    ("layer.0.n", "BF16", [8], N0),
    ("layer.1.n", "BF16", [8], N1),
    ("q", "F16", [4, 8], Q),
    ("k", "F32", [1, 8], K),
    ("v", "BF16", [1, 8], V),
    ("ids", "I32", [2], [3, 4]),
]


def main():
    d = sys.argv[1]
    os.makedirs(os.path.join(d, "expect"), exist_ok=True)
    header, data = layout(TENSORS)
    write(os.path.join(d, "good.safetensors"), header, data)

    # Shards: a and the norms in one, the rest in the other.
    h1, d1 = layout(TENSORS[:3])
    h2, d2 = layout(TENSORS[3:])
    write(os.path.join(d, "shard-1.safetensors"), h1, d1)
    write(os.path.join(d, "shard-2.safetensors"), h2, d2)
    wm = {n: "shard-1.safetensors" for n, *_ in TENSORS[:3]}
    wm.update({n: "shard-2.safetensors" for n, *_ in TENSORS[3:]})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": len(d1) + len(d2)}, "weight_map": wm}, f)

    # What the script's copies must hold: w f32 (from F32), n[0], n[1] f32
    # (from BF16: exact), qkv bf16 (q from F16, k from F32, v from BF16).
    def out(name, blob):
        with open(os.path.join(d, "expect", name), "wb") as f:
            f.write(blob)
    out("w_out.bin", pack("F32", A))
    out("n0_out.bin", pack("F32", [f32_of_bf16(bf16_of_f32(x)) for x in N0]))
    out("n1_out.bin", pack("F32", [f32_of_bf16(bf16_of_f32(x)) for x in N1]))
    out("qkv_out.bin", pack("BF16", Q + K + V))
    # a into a bf16 tensor: the conversion rounds.
    out("wb_out.bin", pack("BF16", A))

    # One defect each.
    good = header, data
    write(os.path.join(d, "bad-short.safetensors"), {}, b"")
    with open(os.path.join(d, "bad-short.safetensors"), "wb") as f:
        f.write(b"\x05\x00\x00")
    # Stated header size beyond the file.
    with open(os.path.join(d, "bad-hsize.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", 4096) + b"{}")
    # The JSON goes on past its stated size.
    h = json.dumps(good[0]).encode()
    with open(os.path.join(d, "bad-hlong.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h) - 10) + h + good[1])
    # Offsets past the data.
    hb = json.loads(json.dumps(good[0]))
    hb["v"]["data_offsets"] = [len(data) - 16, len(data) + 16]
    write(os.path.join(d, "bad-bounds.safetensors"), hb, data)
    # Overlapping tensors.
    hb = json.loads(json.dumps(good[0]))
    hb["k"]["data_offsets"] = [hb["q"]["data_offsets"][0] + 32, hb["q"]["data_offsets"][0] + 64]
    write(os.path.join(d, "bad-overlap.safetensors"), hb, data)
    # The same overlap with an empty tensor lying between the two: it
    # takes no bytes and must not hide the overlap.
    hb["z"] = {"dtype": "F32", "shape": [0, 8],
               "data_offsets": [hb["q"]["data_offsets"][0] + 8] * 2}
    write(os.path.join(d, "bad-overlap-empty.safetensors"), hb, data)
    # A truncated file: the good one cut 8 bytes short.
    write(os.path.join(d, "bad-trunc.safetensors"), good[0], data[:-8])
    # A tensor name that is not UTF-8.
    h = json.dumps({"a\u00e9": good[0]["a"]}, ensure_ascii=False).encode("utf-8")
    h = h.replace("a\u00e9".encode("utf-8"), b"a\xff\xfe")
    with open(os.path.join(d, "bad-utf8.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
    # Data that does not match shape and dtype.
    hb = json.loads(json.dumps(good[0]))
    hb["a"]["shape"] = [5, 8]
    write(os.path.join(d, "bad-size.safetensors"), hb, data)
    # An unknown dtype.
    hb = json.loads(json.dumps(good[0]))
    hb["k"]["dtype"] = "F7"
    write(os.path.join(d, "bad-dtype.safetensors"), hb, data)


if __name__ == "__main__":
    main()
