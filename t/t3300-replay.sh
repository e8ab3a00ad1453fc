#!/bin/sh
test_description='bcgtool replay on the host backend: dispatch, padding, eager fallback, check'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"

test_expect_success 'setup: host plans, breakable and full' '
	bcg capture --backend host -o small.plan "$small" >/dev/null &&
	bcg capture --backend host --mode full -o full.plan "$small" >/dev/null
'

test_expect_success 'replay the largest variant and check it against eager' '
	bcg replay --backend host --steps 5 --warmup 2 --check small.plan >out &&
	test_grep "^tokens       4 -> variant 4 (breakable: 3 segments, 2 breakpoints)$" out &&
	test_grep "^steps        5 (after 2 warm-up)$" out &&
	test_grep "^check        bit-exact with eager$" out
'

# The CPU both issues and computes: its "busy time" can exceed the step
# (step/busy below 1), so no figure about graphs is printed, and a note says
# why, once.
test_expect_success 'on the host, replay prints step and issue times only, with a note' '
	bcg replay --backend host --steps 3 --warmup 1 small.plan >out 2>err &&
	sed -n "/median/,\$p" out | sed "s/ *[0-9][0-9.]* ms/ T/g" >actual &&
	cat >expect <<-\EOF &&
	                 median        p90        p99
	step T T T
	host issue T
	EOF
	test_cmp expect actual &&
	echo "bcgtool: note: host timings do not model CUDA graphs: every op runs on the CPU, so figures about graphs (busy time, idle gaps, break costs) are left out" >expect &&
	test_cmp expect err
'

test_expect_success '3 tokens are padded to the variant of 4' '
	bcg replay --backend host --steps 2 --tokens 3 small.plan >out &&
	test_grep "^tokens       3 -> variant 4 " out
'

test_expect_success '1 token runs the variant of 1' '
	bcg replay --backend host --steps 2 --tokens 1 --check small.plan >out &&
	test_grep "^tokens       1 -> variant 1 " out &&
	test_grep "^check        bit-exact" out
'

test_expect_success 'above the largest capture size, replay runs eagerly and says so' '
	bcg replay --backend host --steps 2 --tokens 6 --check small.plan >out 2>err &&
	test_grep "^bcgtool: note: 6 tokens is above every capture size: running eagerly$" err &&
	test_grep "^tokens       6: above every capture size, run eagerly (36 ops)$" out
'

test_expect_success 'a full-mode plan replays and checks' '
	bcg replay --backend host --steps 4 --check full.plan >out &&
	test_grep "(full: 1 segment, 0 breakpoints)" out &&
	test_grep "^check        " out &&
	! test_grep FAILED out
'

test_expect_success 'a plan captured on an H100 replays on the host against eager' '
	bcg replay --backend host --steps 3 --check "$TEST_DATA/plans/llama-decode-small.cuda.plan" >out &&
	test_grep "^tokens       4 -> variant 4 (breakable: 3 segments, 2 breakpoints)$" out &&
	test_grep "^check        bit-exact with eager$" out
'

test_expect_success PYTHON3 '--json' '
	bcg replay --backend host --steps 3 --warmup 0 --check --json small.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"tokens\"] == 4 and d[\"variant_tokens\"] == 4 and d[\"mode\"] == \"breakable\"
assert d[\"segments\"] == 3 and d[\"breakpoints\"] == 2 and d[\"steps\"] == 3
assert d[\"check\"][\"pass\"] and d[\"check\"][\"bit_exact\"]
kinds = [i[\"kind\"] for i in d[\"items\"]]
assert kinds == [\"segment\", \"breakpoint\", \"segment\", \"breakpoint\", \"segment\"], kinds
assert d[\"step_ms\"][\"median\"] > 0 and d[\"busy_ms\"] > 0
"
'

test_expect_success 'usage errors exit 2' '
	test_expect_code 2 bcg replay --steps 0 small.plan 2>err &&
	test_grep "steps takes a whole number" err &&
	test_expect_code 2 bcg replay 2>err &&
	test_grep "no plan given" err &&
	test_expect_code 2 bcg replay --backend host missing.plan 2>err &&
	test_grep "^bcgtool: missing.plan: " err
'

test_done
