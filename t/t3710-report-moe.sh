#!/bin/sh
test_description='bcgtool report: a moe_experts op moves the weights of the experts its tokens route to, not all of them'
. "$(dirname "$0")/test-lib.sh"

test "${BCG_HAVE_SQLITE:-no}" = yes && test_set_prereq SQLITE

# One MoE layer: 8 experts of intermediate size 4 over hidden 8, 2 a token,
# f32. gate_up is [8*2*4, 8] (8 blocks of 8 rows), down [8*8, 4]: an
# expert's share of each is an eighth.
cat >moe.yaml <<\EOT
bcg: 1
dims:
  T: {tokens: [1, 2, 4, 8]}
  H: 8
  NE: 8
  K: 2
  FE: 4
  EGU: NE * 2 * FE
  EH: NE * H
tensors:
  x:       {dtype: f32, shape: [T, H], role: input, feed: {kind: random, seed: 1}}
  router:  {dtype: f32, shape: [NE, H], role: weight, init: {kind: random, scale: 0.5, seed: 2}}
  gate_up: {dtype: f32, shape: [EGU, H], role: weight, init: {kind: random, scale: 0.25, seed: 3}}
  down:    {dtype: f32, shape: [EH, FE], role: weight, init: {kind: random, scale: 0.25, seed: 4}}
  logits:  {dtype: f32, shape: [T, NE]}
  ids:     {dtype: i32, shape: [T, K]}
  w:       {dtype: f32, shape: [T, K]}
  y:       {dtype: f32, shape: [T, H], role: output}
ops:
  - {op: matmul, name: router, in: [x, router], out: [logits], attrs: {trans_b: true}}
  - {op: moe_router, name: route, in: [logits], out: [ids, w], attrs: {top_k: K, renorm: true}}
  - {op: moe_experts, name: experts, in: [x, ids, w, gate_up, down], out: [y], attrs: {experts: NE}}
EOT

test_expect_success SQLITE,PYTHON3 'setup: the breakable plan, the experts a breakpoint; a synthetic export of it (t/nsys-moe.py)' '
	bcg capture -q --backend host --mode breakable -o moe.plan moe.yaml >/dev/null &&
	bcg inspect --breakpoints --variant 1 moe.plan >bp &&
	test_grep "^   0  *1  *2  *experts  *moe_experts  *kind " bp &&
	"$PYTHON3" "$TEST_DIRECTORY/nsys-moe.py" moe.sqlite
'

# By hand, at T tokens (4 bytes an element): x, out [T, 8]; ids, weights
# [T, 2]; of gate_up (8*8*8) and down (8*8*4) the routed min(8, 2T)
# experts' eighths. T=1: 32 + 8 + 8 + 2048*2/8 + 1024*2/8 + 32 = 848;
# T=4 and T=8 route to all 8 (2T >= 8). The experts' kernel takes 2000 ns
# a step, so GB/s is bytes / 2000.
test_expect_success SQLITE,PYTHON3 'report --json: the experts'"'"' bytes count min(E, T * top_k) of the E experts'"'"' weights' '
	for t in 1 2 4 8; do
		bcg report --json --tokens $t moe.sqlite moe.plan >r$t.json || return 1
	done &&
	"$PYTHON3" - <<-\EOT
	import json
	E, K, H, I, F32 = 8, 2, 8, 4, 4
	for t in (1, 2, 4, 8):
	    r = json.load(open("r%d.json" % t))
	    assert r["variant"]["tokens"] == t, r["variant"]
	    op = {o["name"]: o for o in r["ops"]}["experts"]
	    routed = min(E, t * K)
	    want = F32 * (t * H + t * K + t * K + (E * 2 * I * H + E * H * I) * routed // E + t * H)
	    assert op["bytes"] == want, (t, op["bytes"], want)
	    assert op["kernels"] == 2 and op["per_step_ns"] == 2000, op
	    assert abs(op["gbps"] - want / 2000) < 1e-9, (t, op["gbps"], want)
	assert json.load(open("r1.json"))["ops"][0]["bytes"] == 848
	EOT
'

test_expect_success SQLITE 'report: the text table says the same at one token' '
	bcg report --tokens 1 moe.sqlite moe.plan >out &&
	test_grep "^  experts  *moe_experts  *1  *1  *2.00 us 100.0%  *2.00 us  *848 B  *0.4$" out
'

test_done
