#!/bin/sh
test_description='mma_packed on the GPU: products on packed copies of their weights

A small step of the three product kinds on bf16 weights whose shapes pad
the packed layout (rows not a multiple of 16, K not a multiple of 32),
and one product whose b is an activation. Every weight product is given
mma_packed through --choices-from: the capture verifies it against the
eager reference and reports the bytes of the copies, inspect shows the choice,
and instantiate and replay --check rebuild it in new processes, where
the copies are made again. The product on an activation cannot take
it.'
. "$(dirname "$0")/test-lib.sh"

test_have_prereq CUDA || test_skip_all 'no usable CUDA device'
if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
	test_set_prereq JSONSCHEMA
fi

cat >p.yaml <<'EOT'
bcg: 1
description: products on weights that pad the packed layout, and one on an activation
dims:
  T: {tokens: [8, 16]}
  K: 264
  N: 88
  N2: 2 * N
tensors:
  a:   {dtype: bf16, shape: [T, K], role: input, feed: {kind: random, seed: 3}}
  w:   {dtype: bf16, shape: [N, K], role: weight, init: {kind: random, scale: 0.1, seed: 1}}
  wgu: {dtype: bf16, shape: [N2, K], role: weight, init: {kind: random, scale: 0.1, seed: 2}}
  wd:  {dtype: bf16, shape: [K, N], role: weight, init: {kind: random, scale: 0.1, seed: 4}}
  c:   {dtype: bf16, shape: [N, K]}
  x:   {dtype: bf16, shape: [T, K]}
  act: {dtype: bf16, shape: [T, N]}
  p:   {dtype: bf16, shape: [T, N], role: output}
  y:   {dtype: bf16, shape: [T, K], role: output}
  r:   {dtype: bf16, shape: [T, N], role: output}
ops:
  - {op: matmul, name: proj, in: [a, w], out: [p], attrs: {trans_b: true}}
  - {op: matmul_silu_mul, name: gate_up, in: [a, wgu], out: [act], attrs: {trans_b: true}}
  - {op: copy, name: x_is, in: [a], out: [x]}
  - {op: matmul_add, name: down, in: [x, act, wd], out: [x], attrs: {trans_b: true}}
  - {op: copy, name: y_is, in: [x], out: [y]}
  - {op: fill, name: c_is, out: [c], attrs: {value: 0.5}}
  - {op: matmul, name: on_act, in: [a, c], out: [r], attrs: {trans_b: true}}
EOT

edit="$BCG_BUILD_DIR/t/helper/plan-edit"

test_expect_success 'capture --no-tune, then every weight product chosen mma or mma_packed' '
	bcg capture --backend cuda --mode full --no-tune -o base.plan p.yaml >/dev/null &&
	for impl in mma mma_packed; do
		args= &&
		for t in 8 16; do
			for op in proj gate_up down; do
				args="$args choice $t $op $impl tuned" || return 1
			done
		done &&
		"$edit" base.plan pick-$impl.plan $args || return 1
	done
'

test_expect_success PYTHON3 'the captures verify; only mma_packed reports packed copies, (2 x 6 + 6) x 9 + 17 x 3 KiB' '
	for impl in mma mma_packed; do
		bcg capture --backend cuda --mode full --choices-from pick-$impl.plan --json \
			-o $impl.plan p.yaml >cap-$impl.json || return 1
	done &&
	"$PYTHON3" - <<-\EOT
	import json
	for impl, want in (("mma", 0), ("mma_packed", (2 * 6 * 9 + 6 * 9 + 17 * 3) * 1024)):
	    d = json.load(open("cap-%s.json" % impl))
	    assert d["verified"] == 2, (impl, d["verified"])
	    assert d["packed_weight_bytes"] == want, (impl, d["packed_weight_bytes"], want)
	EOT
'

test_expect_success JSONSCHEMA 'the report with packed copies follows its schema' '
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$BCG_SRC_DIR/formats/json/capture.schema.json" \
		cap-mma_packed.json
'

test_expect_success PYTHON3 'inspect shows mma_packed for the weight products at both sizes' '
	bcg inspect --json mma_packed.plan >i.json &&
	"$PYTHON3" - <<-\EOT
	import json
	got = {(c["variant"], c["op_label"]): c["impl"] for c in json.load(open("i.json"))["choices"]}
	for v in (0, 1):
	    for op in ("proj", "gate_up", "down"):
	        assert got[(v, op)] == "mma_packed", (v, op, got)
	    assert got[(v, "on_act")] != "mma_packed", got
	EOT
'

test_expect_success PYTHON3 'instantiate and replay --check rebuild the copies in new processes' '
	bcg instantiate --backend cuda --json mma_packed.plan >inst.json &&
	"$PYTHON3" - <<-\EOT &&
	import json
	d = json.load(open("inst.json"))
	assert d["drifted"] == 0 and d["matched"] == len(d["segments"]) > 0, d
	assert d["packed_weight_bytes"] == (2 * 6 * 9 + 6 * 9 + 17 * 3) * 1024, d["packed_weight_bytes"]
	EOT
	for t in 8 16; do
		bcg replay --backend cuda --tokens $t --steps 4 --warmup 1 --check mma_packed.plan >rep-$t ||
		return 1
	done
'

test_expect_success 'a product whose b is an activation cannot take mma_packed' '
	"$edit" base.plan bad.plan choice 8 on_act mma_packed tuned &&
	test_expect_code 2 bcg capture --backend cuda --mode full --choices-from bad.plan \
		-o x.plan p.yaml 2>err &&
	test_grep "on_act" err &&
	test_grep "mma_packed" err &&
	! test -e x.plan
'

test_done
