#!/bin/sh
test_description='capture --tune-step on the GPU: choices confirmed in whole steps

A full-mode step of the three product kinds on bf16 weights (one padding
the packed layout), at 1 and 8 tokens. With --tune-step=1000 every group
of products that shared a measurement is tried in the step against each
other candidate: the plan verifies, each group moves as one, the counts
of the report agree with the plan, and the packed weight copies left are
exactly those the final choices need (a capture taking the same choices
with --choices-from, and instantiate in a new process, report the same
bytes), so the trials leave nothing behind.'
. "$(dirname "$0")/test-lib.sh"

test_have_prereq CUDA || test_skip_all 'no usable CUDA device'
if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
	test_set_prereq JSONSCHEMA
fi

cat >p.yaml <<'EOT'
bcg: 1
description: products of three kinds on bf16 weights, one padding the packed layout
dims:
  T: {tokens: [1, 8]}
  K: 1024
  N: 520
  N2: 2 * N
tensors:
  a:   {dtype: bf16, shape: [T, K], role: input, feed: {kind: random, seed: 3}}
  w:   {dtype: bf16, shape: [N, K], role: weight, init: {kind: random, scale: 0.05, seed: 1}}
  wgu: {dtype: bf16, shape: [N2, K], role: weight, init: {kind: random, scale: 0.05, seed: 2}}
  wd:  {dtype: bf16, shape: [K, N], role: weight, init: {kind: random, scale: 0.05, seed: 4}}
  x:   {dtype: bf16, shape: [T, K]}
  act: {dtype: bf16, shape: [T, N]}
  p:   {dtype: bf16, shape: [T, N], role: output}
  y:   {dtype: bf16, shape: [T, K], role: output}
ops:
  - {op: matmul, name: proj, in: [a, w], out: [p], attrs: {trans_b: true}}
  - {op: matmul_silu_mul, name: gate_up, in: [a, wgu], out: [act], attrs: {trans_b: true}}
  - {op: copy, name: x_is, in: [a], out: [x]}
  - {op: matmul_add, name: down, in: [x, act, wd], out: [x], attrs: {trans_b: true}}
  - {op: copy, name: y_is, in: [x], out: [y]}
EOT

test_expect_success 'capture --tune-step=1000 verifies both sizes' '
	bcg capture --backend cuda --mode full --stats --tune-step=1000 --json -o step.plan p.yaml \
		>cap.json &&
	bcg inspect --json step.plan >plan.json
'

test_expect_success PYTHON3 'the report counts what the plan holds; each group moves as one' '
	"$PYTHON3" - <<-\EOT
	import json
	cap = json.load(open("cap.json"))
	plan = json.load(open("plan.json"))
	assert cap["verified"] == 2, cap["verified"]
	assert 0 < cap["phases"]["tune_step_ms"] <= cap["phases"]["tune_ms"], cap["phases"]
	for v in cap["variants"]:
	    vi = [p["index"] for p in plan["variants"] if p["tokens"] == v["tokens"]][0]
	    g = {}
	    for c in plan["choices"]:
	        if c["variant"] == vi and len(c["candidates"]) >= 2:
	            key = tuple((x["impl"], x["us"]) for x in c["candidates"])
	            g.setdefault(key, []).append(c)
	    contested = timed = changed = 0
	    for cand, cs in g.items():
	        t = dict(cand)
	        first = cand[0][0]
	        best = min(t, key=t.get)
	        alone = best if t[best] < 0.97 * t[first] else first
	        alts = [k for k in t if k != alone and t[k] <= 11.0 * t[alone]]
	        impls = set(c["impl"] for c in cs)
	        assert len(impls) == 1, cs
	        assert all(c["step"] == bool(alts) for c in cs), cs
	        contested += bool(alts)
	        timed += len(alts)
	        changed += impls.pop() != alone
	    s = v["tune_step"]
	    assert (s["contested"], s["timed"], s["changed"]) == (contested, timed, changed), (s, contested, timed, changed)
	    assert contested > 0, v
	    assert timed <= s["turns"] <= 3 * timed, s
	EOT
'

test_expect_success JSONSCHEMA 'the report follows its schema' '
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$BCG_SRC_DIR/formats/json/capture.schema.json" \
		cap.json
'

test_expect_success PYTHON3 'the packed copies left are those of the final choices' '
	bcg capture --backend cuda --mode full --choices-from step.plan --json -o again.plan p.yaml \
		>again.json &&
	bcg instantiate --backend cuda --json step.plan >inst.json &&
	"$PYTHON3" - <<-\EOT
	import json
	a = json.load(open("cap.json"))["packed_weight_bytes"]
	b = json.load(open("again.json"))["packed_weight_bytes"]
	c = json.load(open("inst.json"))["packed_weight_bytes"]
	assert a == b == c, (a, b, c)
	EOT
'

test_expect_success PYTHON3 'with --share-exec: the trials share nothing, the plan shares and verifies' '
	bcg capture --backend cuda --mode full --stats --tune-step=1000 --share-exec --json \
		-o shared.plan p.yaml >shared.json &&
	"$PYTHON3" - <<-\EOT &&
	import json
	d = json.load(open("shared.json"))
	assert d["verified"] == 2, d["verified"]
	# one segment a variant (full mode); 8 tokens, captured first, owns
	# its executable: had the trials joined the pool, it would have joined
	# one of theirs, which they released
	v8 = [v for v in d["variants"] if v["tokens"] == 8][0]
	assert v8["executables"] == 1 and v8["joined"] == 0, v8
	assert d["graph_memory"]["segments"] == 2, d["graph_memory"]
	EOT
	bcg replay --backend cuda --tokens 1,8 --share-exec --steps 4 --warmup 1 shared.plan >rep
'

test_expect_success 'replay --check at both sizes' '
	for t in 1 8; do
		bcg replay --backend cuda --tokens $t --steps 4 --warmup 1 --check step.plan >rep-$t ||
		return 1
	done
'

test_done
