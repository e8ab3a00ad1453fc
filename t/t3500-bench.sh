#!/bin/sh
test_description='bcgtool bench: eager, breakable and full side by side'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"

test_expect_success 'bench runs the three modes on the host' '
	bcg bench --backend host --steps 3 --warmup 1 --tokens 2 "$small" >out 2>err &&
	test_grep "^tokens   2$" out &&
	test_grep "^eager  *0  *36  " out &&
	test_grep "^breakable  *3  *2  " out &&
	test_grep "^full  *1  *0  " out
'

# The CPU both issues and computes: no busy time, no graph savings, no
# break cost (which came out negative), and a note that says why, once.
test_expect_success 'on the host, bench prints no figure about graphs and says so once' '
	bcg bench --backend host --steps 3 --warmup 1 --tokens 2 "$small" >out 2>err &&
	echo "mode       segments  breakpoints         step   host issue  step/eager" >expect &&
	grep "^mode" out >actual &&
	test_cmp expect actual &&
	! grep -i "busy\|graphs remove\|a break over" out &&
	echo "bcgtool: note: host timings do not model CUDA graphs: every op runs on the CPU, so figures about graphs (busy time, idle gaps, break costs) are left out" >expect &&
	test_cmp expect err &&
	bcg bench -q --backend host --steps 2 --warmup 0 --tokens 1 "$small" >out 2>err &&
	test ! -s err
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
