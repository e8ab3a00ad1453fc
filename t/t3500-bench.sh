#!/bin/sh
test_description='bcgtool bench: eager, breakable and full side by side'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"

test_expect_success 'bench runs the three modes on the host' '
	bcg bench --backend host --steps 3 --warmup 1 --tokens 2 "$small" >out &&
	test_grep "^tokens   2$" out &&
	test_grep "^eager  *0  *36  " out &&
	test_grep "^breakable  *3  *2  " out &&
	test_grep "^full  *1  *0  " out &&
	test_grep "^eager host submission: .* ms per step" out &&
	test_grep "^a break over the full step: [-+][0-9.]* us of cpu busy time, [-+][0-9.]* us of step time (2 breaks)$" out &&
	test_grep "^mode .* cpu busy " out &&
	! grep -i "gpu busy\|of gpu" out
'

test_expect_success 'full mode is reported, not run, when an op has no graph-safe form' '
	sed "s/{op: add, name: \"attn_res.{l}\", in: \[x, h\], out: \[x\]}/{op: add, name: \"attn_res.{l}\", in: [x, h], out: [x], eager: true}/" \
		"$small" >forced.yaml &&
	grep -q "eager: true" forced.yaml &&
	bcg bench --backend host --steps 2 --warmup 0 --tokens 1 forced.yaml >out &&
	test_grep "^breakable  *5  *4  " out &&
	test_grep "^full       not run: op .attn_res.0. cannot run in full mode: it is marked eager: true" out &&
	! grep "a break over the full step" out
'

test_expect_success PYTHON3 '--json' '
	bcg bench --backend host --steps 2 --warmup 0 --json "$small" >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
m = {x[\"mode\"]: x for x in d[\"modes\"]}
assert set(m) == {\"eager\", \"breakable\", \"full\"}
assert all(x[\"ran\"] for x in m.values())
assert m[\"breakable\"][\"segments\"] == 3 and m[\"breakable\"][\"breakpoints\"] == 2
assert m[\"eager\"][\"breakpoints\"] == 36
# what a break costs: breakable minus full, per breakpoint (JSON numbers of
# 9 significant digits allow 1e-3 us of rounding)
bc = d[\"break_cost\"]
assert bc[\"breaks\"] == 2
want = (m[\"breakable\"][\"busy_ms\"] - m[\"full\"][\"busy_ms\"]) * 1e3 / 2
assert abs(bc[\"busy_us\"] - want) <= 1e-3 + 1e-6 * abs(want), (bc, want)
want = (m[\"breakable\"][\"step_ms\"] - m[\"full\"][\"step_ms\"]) * 1e3 / 2
assert abs(bc[\"step_us\"] - want) <= 1e-3 + 1e-6 * abs(want), (bc, want)
"
'

test_expect_success '--no-pdl is accepted (the host has no PDL to turn off)' '
	bcg bench --backend host --steps 2 --warmup 0 --tokens 1 --no-pdl "$small" >out &&
	test_grep "^breakable  *3  *2  " out
'

test_done
