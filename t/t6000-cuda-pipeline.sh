#!/bin/sh
test_description='the CUDA engine end to end: capture, instantiate in a new process, replay --check'
. "$(dirname "$0")/test-lib.sh"

# Every step needs a GPU; without one the whole script skips.
test_have_prereq CUDA || test_skip_all 'no usable CUDA device'

for s in tiny-mlp llama-decode-small llama-decode llama-decode-gqa; do
	test_expect_success "capture $s on cuda: every variant verified" '
		bcg capture --backend cuda -o $s.plan "$SAMPLES/$s.yaml" >$s.out &&
		test_grep "backend cuda (" $s.out &&
		! grep -q "rel. error nan" $s.out
	'

	test_expect_success "instantiate $s in a second process: no drift" '
		bcg instantiate --backend cuda $s.plan >$s.inst &&
		test_grep "^[0-9]* segments: [0-9]* match, 0 drift, 0 unchecked$" $s.inst
	'

	test_expect_success "replay $s with --check" '
		bcg replay --backend cuda --steps 20 --warmup 2 --check $s.plan >$s.replay &&
		test_grep "^check        \(bit-exact\|within bounds\)" $s.replay
	'
done

test_expect_success 'breakable variants of llama-decode replay bit for bit' '
	test $(grep -c "  breakable .* bit-exact$" llama-decode.out) = 6
'

test_expect_success 'llama-decode: 33 segments and 32 attention breakpoints per variant' '
	for t in 1 2 4 8 16 32; do
		test_grep "^ *$t  breakable  *33  *32  " llama-decode.out || return 1
	done
'

test_expect_success 'five tokens run on the variant of 8' '
	bcg replay --backend cuda --steps 5 --tokens 5 --check llama-decode.plan >out &&
	test_grep "^tokens       5 -> variant 8 (breakable: 33 segments, 32 breakpoints)$" out &&
	test_grep "^check        bit-exact" out
'

test_expect_success 'above 32 tokens replay runs eagerly on cuda' '
	bcg replay --backend cuda --steps 3 --tokens 40 --check llama-decode.plan >out 2>err &&
	test_grep "running eagerly" err &&
	test_grep "^check        bit-exact" out
'

test_expect_success 'full mode on cuda: one graph per variant, within bounds of eager' '
	bcg capture --backend cuda --mode full -o full.plan "$SAMPLES/llama-decode-small.yaml" >out &&
	test $(grep -c "  full  *1  *0  " out) = 3 &&
	bcg instantiate --backend cuda full.plan >inst &&
	test_grep " 0 drift, 0 unchecked$" inst &&
	bcg replay --backend cuda --steps 10 --check full.plan >out &&
	test_grep "^check        \(bit-exact\|within bounds\)" out
'

test_expect_success 'a plan captured on host instantiates and replays on cuda' '
	bcg capture --backend host -o host.plan "$SAMPLES/llama-decode-small.yaml" >/dev/null &&
	bcg instantiate --backend cuda host.plan >out &&
	test_grep "^9 segments: 0 match, 0 drift, 9 unchecked$" out &&
	bcg replay --backend cuda --steps 5 --check host.plan >out &&
	test_grep "^check        bit-exact" out
'

test_expect_success 'work that cannot be captured is reported with the op and its position' '
	test_expect_code 3 env BCG_TEST_SYNC_IN_CAPTURE=q.1 "$BCGTOOL" \
		capture --backend cuda -o bad.plan "$SAMPLES/llama-decode-small.yaml" 2>err &&
	test_grep "^bcgtool: .*llama-decode-small.yaml:[0-9]*:[0-9]*: capturing op .q.1. (matmul): " err &&
	test_grep "capturing" err &&
	! test -e bad.plan
'

test_expect_success PYTHON3 'cuda plans record kernel nodes with arena operands' '
	bcg instantiate --backend cuda --json llama-decode-small.plan >inst.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"inst.json\"))
assert all(s[\"plan_nodes\"] > 0 and s[\"status\"] == \"match\" for s in d[\"segments\"]), d
"
'


# Implementation choices and programmatic dependent launch, on the small
# fused model of t6100 (products on [out, in] weights, f16).
twin="$TEST_DATA/scripts/twins/fused.yaml"

test_expect_success PYTHON3 'capture chooses each product among mma, gemv and cublas and launches with PDL' '
	bcg capture --backend cuda --stats -o twin.plan "$twin" >twin.out &&
	bcg inspect --json twin.plan >twin.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"twin.json\"))
assert \"pdl\" in d[\"meta\"][\"features\"], d[\"meta\"]
products = [o[\"index\"] for o in d[\"ops\"] if o[\"kind\"].startswith(\"matmul\")]
for v in d[\"variants\"]:
    mine = {c[\"op\"]: c for c in d[\"choices\"] if c[\"variant\"] == v[\"index\"]}
    # the products, and also attention and argmax (two forms each)
    assert set(products) <= set(mine), (v[\"tokens\"], sorted(mine), products)
    kinds = {d[\"ops\"][op][\"kind\"] for op in mine}
    assert kinds <= {\"matmul\", \"matmul_add\", \"matmul_silu_mul\", \"attention\", \"argmax\"}, kinds
    for c in (mine[op] for op in products):
        names = [x[\"impl\"] for x in c[\"candidates\"]]
        assert \"mma\" in names and \"cublas\" in names, c
        assert c[\"tuned\"] and all(x[\"us\"] > 0 for x in c[\"candidates\"]), c
prog = sum(1 for s in d[\"segments\"] for e in s[\"edges\"] if e[\"type\"] == \"programmatic\")
assert prog > 0, \"no programmatic edges\"
"
'

test_expect_success PYTHON3 'BCG_TUNE_CONTEXT=pdl: each product tuned with its input warm behind a PDL launch; the plan replays as eager' '
	(BCG_TUNE_CONTEXT=pdl && export BCG_TUNE_CONTEXT &&
	 bcg capture --backend cuda --stats -o ctx.plan "$twin" >ctx.out) &&
	bcg inspect --json ctx.plan >ctx.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"ctx.json\"))
products = [o[\"index\"] for o in d[\"ops\"] if o[\"kind\"].startswith(\"matmul\")]
timed = 0
for v in d[\"variants\"]:
    mine = {c[\"op\"]: c for c in d[\"choices\"] if c[\"variant\"] == v[\"index\"]}
    for c in (mine[op] for op in products):
        assert c[\"tuned\"] and all(x[\"us\"] >= 0 for x in c[\"candidates\"]), c
        timed += sum(1 for x in c[\"candidates\"] if x[\"us\"] > 0)
assert timed > 0, \"no candidate took any time\"
" &&
	bcg replay --backend cuda --steps 3 --check ctx.plan >ctx.replay &&
	test_grep "^check        \\(bit-exact\\|within bounds\\)" ctx.replay
'

test_expect_success 'BCG_TUNE_CONTEXT other than isolated or pdl: refused, naming it' '
	(BCG_TUNE_CONTEXT=warm && export BCG_TUNE_CONTEXT &&
	 test_must_fail bcg capture --backend cuda -o bad.plan "$twin" >out 2>err) &&
	test_grep "BCG_TUNE_CONTEXT is .warm.: isolated or pdl" err &&
	! test -e bad.plan
'

test_expect_success PYTHON3 'instantiate runs the recorded choice: another one drifts, named by its kernel' '
	bcg instantiate --backend cuda twin.plan >inst &&
	test_grep "segments: [0-9]* match, 0 drift, 0 unchecked$" inst &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"twin.json\"))
v = [x for x in d[\"variants\"] if x[\"tokens\"] == 3][0]
c = [c for c in d[\"choices\"] if c[\"variant\"] == v[\"index\"] and c[\"op_label\"] == \"qkv.0\"][0]
other = [x[\"impl\"] for x in c[\"candidates\"] if x[\"impl\"] != c[\"impl\"]][0]
print(other)
" >other &&
	"$BCG_BUILD_DIR/t/helper/plan-edit" twin.plan other.plan choice 3 qkv.0 "$(cat other)" tuned &&
	test_expect_code 1 bcg instantiate --backend cuda other.plan >inst &&
	test_grep "drift" inst
'

test_expect_success PYTHON3 '--no-pdl: no programmatic edges of ours, no pdl feature; instantiate matches' '
	bcg capture --backend cuda --no-pdl --no-tune -o nopdl.plan "$twin" >/dev/null &&
	bcg inspect --json nopdl.plan >nopdl.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"nopdl.json\"))
assert \"pdl\" not in d[\"meta\"][\"features\"], d[\"meta\"]
ours = 0
for s in d[\"segments\"]:
    nodes = s[\"nodes\"]
    for e in s[\"edges\"]:
        if e[\"type\"] == \"programmatic\" and nodes[e[\"to\"]][\"kernel\"].find(\"bcg_\") >= 0:
            ours += 1
assert ours == 0, ours
" &&
	bcg instantiate --backend cuda nopdl.plan >inst &&
	test_grep "0 drift" inst
'

test_done
