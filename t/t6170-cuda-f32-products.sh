#!/bin/sh
test_description='f32 products are f32 products: no TF32 on the GPU

a holds 1 + 2^-12 everywhere, b ones: each element of a @ b is
1024 + 1024 * 2^-12 = 1024.25 exactly, and so is every partial sum in any
order (at most 24 significant bits), so the f32 reference and any f32
kernel agree to the bit. TF32 keeps 10 bits of the mantissa: it reads a
as 1 and gives 1024. Every product kind and layout the imported models
use, at token counts that reach the small-M kernels (1, 8) and cuBLAS
(64), through run (eager) and a replayed capture.'
. "$(dirname "$0")/test-lib.sh"

cat >f32.yaml <<'EOT'
bcg: 1
description: f32 products whose exact result TF32 cannot give
dims:
  T: {tokens: [1, 8, 64]}
  K: 1024
  N: 256
tensors:
  a:  {dtype: f32, shape: [T, K]}
  w:  {dtype: f32, shape: [K, N], role: weight, init: ones}
  wt: {dtype: f32, shape: [N, K], role: weight, init: ones}
  x:  {dtype: f32, shape: [T, N]}
  p:  {dtype: f32, shape: [T, N], role: output}
  q:  {dtype: f32, shape: [T, N], role: output}
  r:  {dtype: f32, shape: [T, N], role: output}
ops:
  - {op: fill, name: a_is, out: [a], attrs: {value: 1.000244140625}}
  - {op: fill, name: x_is, out: [x], attrs: {value: 0}}
  - {op: matmul, name: kn, in: [a, w], out: [p]}
  - {op: matmul, name: nk, in: [a, wt], out: [q], attrs: {trans_b: true}}
  - {op: matmul_add, name: nk_add, in: [x, a, wt], out: [r], attrs: {trans_b: true}}
EOT

# Every element of the outputs in DIR is 1024.25.
exact () {
	"$PYTHON3" - "$1" <<-\EOT
	import struct, sys
	for name in ("p", "q", "r"):
	    b = open("%s/%s.bin" % (sys.argv[1], name), "rb").read()
	    v = set(struct.unpack("<%df" % (len(b) // 4), b))
	    assert v == {1024.25}, (name, sorted(v)[:4])
	EOT
}

test_expect_success PYTHON3 'the host reference gives 1024.25 exactly' '
	bcg validate f32.yaml >/dev/null &&
	for t in 1 8 64; do
		bcg run --backend host --tokens $t --dump-outputs host-$t f32.yaml >/dev/null &&
		exact host-$t || return 1
	done
'

test_expect_success CUDA,PYTHON3 'run on the GPU: 1024.25 exactly at 1, 8 and 64 tokens' '
	for t in 1 8 64; do
		bcg run --backend cuda --tokens $t --dump-outputs cuda-$t f32.yaml >/dev/null &&
		exact cuda-$t || return 1
	done
'

test_expect_success CUDA 'a capture (kernels chosen by measurement) replays bit-exact with eager' '
	bcg capture --backend cuda -o f32.plan f32.yaml >/dev/null &&
	for t in 1 8 64; do
		bcg replay --backend cuda --tokens $t --steps 3 --warmup 1 --check f32.plan >out &&
		test_grep "^check        bit-exact with eager" out || return 1
	done
'

test_done
