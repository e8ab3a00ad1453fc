#!/bin/sh
test_description='bcgtool capture on the host backend: segments, breakpoints, verification'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"

test_expect_success 'capture llama-decode-small: 3 segments and 2 breakpoints per size' '
	bcg capture --backend host -o small.plan "$small" >out &&
	test_file_not_empty small.plan &&
	for t in 1 2 4; do
		test_grep "^ *$t  breakable  *3  *2  " out || return 1
	done &&
	test $(grep -c "bit-exact$" out) = 3 &&
	test_grep "^wrote small.plan (.*): 3 variants, 9 segments, 6 breakpoints, backend host$" out
'

test_expect_success 'full mode: one segment, attention in its graph-safe form' '
	bcg capture --backend host --mode full -o full.plan "$small" >out &&
	for t in 1 2 4; do
		test_grep "^ *$t  full  *1  *0  " out || return 1
	done
'

test_expect_success 'eager mode: every op a breakpoint (36 ops: 1 + 2 layers of 16 + 3)' '
	bcg capture --backend host --mode eager --tokens 2 -o eager.plan "$small" >out &&
	test_grep "^ *2  eager  *0  *36  " out
'

test_expect_success '--tokens captures only the sizes asked for' '
	bcg capture --backend host --tokens 1,4 -o two.plan "$small" >out &&
	test_grep "^wrote two.plan .*: 2 variants, 6 segments, 4 breakpoints" out
'

test_expect_success PYTHON3 '--json reports every variant' '
	bcg capture --backend host --json -o j.plan "$small" >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"backend\"] == \"host\" and d[\"plan\"] == \"j.plan\"
v = d[\"variants\"]
assert [x[\"tokens\"] for x in v] == [1, 2, 4], v
assert all(x[\"segments\"] == 3 and x[\"breakpoints\"] == 2 and x[\"bit_exact\"] for x in v), v
"
'

test_expect_success 'two --no-tune captures of one script differ only in timings: diff finds nothing' '
	bcg capture --backend host --no-tune -o untuned.plan "$small" >/dev/null &&
	bcg capture --backend host --no-tune -o again.plan "$small" >/dev/null &&
	bcg diff untuned.plan again.plan >out &&
	test_cmp /dev/null out
'

# The host backend has two implementations of each product, "reference"
# and "blocked" (the same sums in another loop order): capture times both
# and records a choice for every product of every variant.
nproducts=13   # q k v o gate_up down in 2 layers, and lm_head

# --stats: the times stay in the plan although SOURCE_DATE_EPOCH is set.
test_expect_success PYTHON3 'capture records a measured choice for every product, per variant' '
	bcg capture --backend host --stats -o timed.plan "$small" >/dev/null &&
	bcg inspect --json timed.plan >plan.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"plan.json\"))
ops = d[\"ops\"]
products = [o[\"index\"] for o in ops if o[\"kind\"] == \"matmul\"]
assert len(products) == $nproducts, products
for v in d[\"variants\"]:
    mine = [c for c in d[\"choices\"] if c[\"variant\"] == v[\"index\"]]
    assert sorted(c[\"op\"] for c in mine) == products, mine
    for c in mine:
        names = [x[\"impl\"] for x in c[\"candidates\"]]
        assert names == [\"reference\", \"blocked\"], c
        assert c[\"tuned\"] and all(x[\"us\"] > 0 for x in c[\"candidates\"]), c
        t = {x[\"impl\"]: x[\"us\"] for x in c[\"candidates\"]}
        other = \"blocked\" if c[\"impl\"] == \"reference\" else \"reference\"
        # the rule: the default unless the other leads by more than 3%;
        # close when the one not chosen is within 3% of the chosen
        if c[\"impl\"] == \"blocked\":
            assert t[\"blocked\"] < 0.97 * t[\"reference\"], c
        else:
            assert not t[\"blocked\"] < 0.97 * t[\"reference\"], c
        assert c[\"close\"] == (t[other] <= 1.03 * t[c[\"impl\"]]), c
"
'

test_expect_success '--no-tune records the defaults, untimed' '
	bcg inspect --choices untuned.plan >choices &&
	test $(grep -c "  matmul  reference  default  reference, blocked$" choices) = $((3 * nproducts)) &&
	! grep "tuned" choices
'

test_expect_success 'the capture table counts each variant s choices' '
	bcg capture --backend host --no-tune -o counted.plan "$small" >out &&
	for t in 1 2 4; do
		test_grep "^ *$t  breakable  *3  *2  *0  *$nproducts  " out || return 1
	done
'

test_expect_success 'every choice edited to blocked: recorded so, and the replay stays bit-exact' '
	edit="$BCG_BUILD_DIR/t/helper/plan-edit" &&
	args= &&
	for t in 1 2 4; do
		for op in q.0 k.0 v.0 o.0 gate_up.0 down.0 q.1 k.1 v.1 o.1 gate_up.1 down.1 lm_head; do
			args="$args choice $t $op blocked tuned reference=2,blocked=1" || return 1
		done
	done &&
	"$edit" untuned.plan blocked.plan $args &&
	bcg inspect --choices blocked.plan >choices &&
	test $(grep -c "  matmul  blocked  " choices) = $((3 * nproducts)) &&
	bcg replay --backend host --tokens 2 --steps 3 --warmup 0 --check blocked.plan >out &&
	test_grep "bit-exact" out
'

test_expect_success 'a recorded implementation the backend lacks: exit 2, named with its op' '
	"$BCG_BUILD_DIR/t/helper/plan-edit" untuned.plan bogus.plan \
		choice 2 o.1 warp9 tuned reference=3,warp9=1 &&
	test_expect_code 2 bcg replay --backend host --tokens 2 --steps 1 bogus.plan 2>err &&
	test_grep "op .o.1. (matmul) at 2 tokens: the plan chose implementation .warp9., which the host backend lacks (it has reference or blocked)" err &&
	test_expect_code 2 bcg instantiate --backend host bogus.plan 2>err &&
	test_grep "warp9" err
'

test_expect_success 'a capture that fails leaves the existing plan alone' '
	cp small.plan before.plan &&
	test_expect_code 2 bcg capture --backend host --tokens 3 -o small.plan "$small" 2>err &&
	test_grep "3 is not a capture size" err &&
	cmp before.plan small.plan &&
	! ls .small.plan* 2>/dev/null
'

test_expect_success 'usage errors exit 2' '
	test_expect_code 2 bcg capture "$small" 2>err &&
	test_grep "no output given (-o PLAN)" err &&
	test_expect_code 2 bcg capture --mode fast -o x.plan "$small" 2>err &&
	test_grep "unknown mode .fast." err &&
	test_expect_code 2 bcg capture --tokens 1,,2 -o x.plan "$small" 2>err &&
	test_grep "tokens takes whole numbers" err &&
	! test -e x.plan
'

test_expect_success 'writing into a missing directory fails cleanly' '
	test_expect_code 2 bcg capture --backend host -o no/such/dir/x.plan "$small" 2>err &&
	test_grep "^bcgtool: no/such/dir/x.plan: " err
'

test_done
