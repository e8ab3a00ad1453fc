#!/bin/sh
test_description='serving a mixture of experts (samples/moe-serve-tiny.yaml) on the host backend: traces served as dense ones are, padded rows routed to no expert'
. "$(dirname "$0")/test-lib.sh"

moe="$SAMPLES/moe-serve-tiny.yaml"
trace="requests=12,rate=inf,prompt=uniform:1:6,output=uniform:1:8,seed=3"

test_expect_success 'the sample validates: moe_router_paged reads the slots, the experts break breakable sizes' '
	bcg validate "$moe" >out &&
	test_grep "moe_router_paged 2, moe_experts 2" out &&
	test_grep "^       8         4  no       breakable  32 (100.0% of the cache)\$" out
'

test_expect_success 'capture: uniform decode sizes full (graph-safe experts), the mixed size breaks at attention and the experts' '
	bcg capture --backend host --no-tune -o moe.plan "$moe" >/dev/null &&
	bcg inspect moe.plan >info &&
	cat >expect <<-\EOF &&
	       1  1 x1 uniform  full           1         1            0      0  605 KiB
	       2  2 x2 uniform  full           1         1            0      0  606 KiB
	       4  4 x4 uniform  full           1         1            0      0  610 KiB
	       8  8 x4          breakable      9         5            4      0  617 KiB
	EOF
	sed -n "/^  tokens  key/,/^  *total/p" info | sed "1d;/total/d" >actual &&
	test_cmp expect actual &&
	bcg inspect --breakpoints --variant 8 moe.plan >bp &&
	test_grep "experts\.1  *moe_experts  *kind .*launch follows per-expert token counts\$" bp
'

test_expect_success 'replay --synthetic --check: padded steps give the eager steps outputs bit for bit' '
	bcg replay --backend host --synthetic "$trace" --check moe.plan >out &&
	test_grep "^check        bit-exact with eager\$" out &&
	test_grep "^       6        8        2  breakable  " out
'

test_expect_success 'bench --synthetic --check: every dispatch policy, padding included, equals eager' '
	bcg bench --backend host --synthetic "$trace" --check "$moe" >out &&
	test_grep "^breakable .* 6.6% " out &&
	for p in eager breakable full full_and_breakable; do
		test_grep "^check        $p: bit-exact with eager\$" out || return 1
	done
'

test_expect_success PYTHON3 'a padded row routes nowhere: ids -1 where the slot is negative, the real rows to experts' '
	"$PYTHON3" - "$moe" >pad.yaml <<-\EOT &&
	import sys
	s = open(sys.argv[1]).read()
	# the slots of one step of 8 rows fixed: 4 3 2 1 0 -1 -2 -3, rows 5..7 padding
	old = "slots:       {dtype: i32, shape: [T], role: input, feed: slots}"
	assert old in s
	print(s.replace(old, "slots: {dtype: i32, shape: [T], role: state, "
	                     "init: {kind: arange, value: 4, scale: -1}}"))
	EOT
	bcg run --backend host --tokens 8 --dump-outputs dump pad.yaml >out &&
	"$PYTHON3" - dump/expert_ids.bin <<-\EOT
	import struct, sys
	ids = struct.unpack("<16i", open(sys.argv[1], "rb").read())
	rows = [ids[2 * r:2 * r + 2] for r in range(8)]
	assert all(0 <= i < 8 for r in rows[:5] for i in r) and all(r[0] != r[1] for r in rows[:5]), rows
	assert all(r == (-1, -1) for r in rows[5:]), rows
	EOT
'

test_expect_success PYTHON3 'bench names why each break breaks the graph, in text and JSON' '
	bcg bench --backend host --tokens 8 --steps 3 --warmup 1 "$moe" >out &&
	test_grep "^  2 breaks: its launch shape follows the host.s batch (the longest sequence)\$" out &&
	test_grep "^  2 breaks: launch follows per-expert token counts\$" out &&
	bcg bench --backend host --tokens 8 --steps 3 --warmup 1 --json "$moe" >out.json &&
	"$PYTHON3" -c "
import json
w = json.load(open(\"out.json\"))[\"break_cost\"][\"why\"]
assert {x[\"detail\"]: x[\"breaks\"] for x in w}[\"launch follows per-expert token counts\"] == 2, w
"
'

test_expect_success 'router weights that give NaN: BCG_SYNC=1 names the op; without it the step fails at its wait' '
	sed "s/^  router: .*/  router: {dtype: f32, shape: [NE, H], role: weight, count: L, init: {kind: const, value: 3e38}}/" \
		"$moe" >nan.yaml &&
	test_grep "value: 3e38" nan.yaml &&
	test_expect_code 3 env BCG_SYNC=1 "$BCGTOOL" run --backend host nan.yaml >out 2>err &&
	test_grep "^bcgtool: nan.yaml:[0-9]*:9: op .route.0. (moe_router_paged), waited for after its launch (BCG_SYNC=1): kernel fault: moe_router_paged: the logits of row 0 give NaN weights (no expert can be chosen)\$" err &&
	test_expect_code 3 "$BCGTOOL" run --backend host nan.yaml >out 2>err &&
	test_grep "kernel fault: moe_router_paged: the logits of row 0 give NaN weights .*BCG_SYNC=1 names the op or segment at fault\$" err &&
	test_expect_code 3 "$BCGTOOL" capture --backend host -o nan.plan nan.yaml >out 2>err &&
	test_grep "moe_router_paged: the logits of row 0 give NaN" err &&
	! test -e nan.plan
'

test_expect_success CUDA 'on the GPU, router weights that give NaN: BCG_SYNC=1 names the op; without it the step fails at its wait' '
	test_grep "value: 3e38" nan.yaml &&
	test_expect_code 3 env BCG_SYNC=1 "$BCGTOOL" run --backend cuda nan.yaml >out 2>err &&
	test_grep "^bcgtool: nan.yaml:[0-9]*:9: op .route.0. (moe_router_paged), waited for after its launch (BCG_SYNC=1): kernel fault: moe_router_paged: the logits of row 0 give NaN weights (no expert can be chosen)\$" err &&
	test_expect_code 3 "$BCGTOOL" run --backend cuda nan.yaml >out 2>err &&
	test_grep "kernel fault: moe_router_paged: the logits of row 0 give NaN weights .*BCG_SYNC=1 names the op or segment at fault\$" err &&
	test_expect_code 3 "$BCGTOOL" capture --backend cuda -o nan.plan nan.yaml >out 2>err &&
	test_grep "moe_router_paged: the logits of row 0 give NaN" err &&
	! test -e nan.plan
'

test_expect_success CUDA 'on the GPU, clean router weights: the NaN check flags nothing (run, capture, replay of full and breakable sizes)' '
	bcg run --backend cuda --steps 2 "$moe" >out &&
	BCG_SYNC=1 bcg run --backend cuda --steps 2 "$moe" >out &&
	bcg capture -q --backend cuda -o gpu.plan "$moe" >/dev/null &&
	BCG_SYNC=1 bcg replay --backend cuda --steps 3 gpu.plan >out &&
	bcg replay --backend cuda --synthetic "$trace" gpu.plan >out
'

test_done
