#!/bin/sh
test_description='bcgtool run: eager steps on the host backend'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"

# The outputs table: everything after the blank line that ends the steps.
outputs() {
	sed -n '/^output /,$p' "$1"
}

test_expect_success 'run four steps of llama-decode-small on the host' '
	bcg run --backend host --steps 4 "$small" >out &&
	test_grep "^backend  host$" out &&
	test_grep "^tokens   4$" out &&
	test_grep "^steps    4$" out &&
	test $(grep -c "^ *[0-3]  *[0-9.]* ms$" out) = 4 &&
	test_grep "^next  *i32  *\[4\] " out
'

test_expect_success 'the outputs are the same from run to run' '
	bcg run --backend host --steps 4 "$small" >out2 &&
	outputs out >a && outputs out2 >b &&
	test_cmp a b
'

test_expect_success 'more steps change the outputs (feeds and vars advance)' '
	bcg run --backend host --steps 5 "$small" >out5 &&
	outputs out5 >c &&
	! cmp -s a c
'

test_expect_success '--tokens picks the token count' '
	bcg run --backend host --tokens 2 "$small" >out &&
	test_grep "^tokens   2$" out &&
	test_grep "^next  *i32  *\[2\] " out
'

test_expect_success PYTHON3 '--json gives the steps and the outputs' '
	bcg run --backend host --steps 3 --json "$small" >out.json &&
	"$PYTHON3" -c "
import json, sys
d = json.load(open(\"out.json\"))
assert d[\"backend\"] == \"host\" and d[\"tokens\"] == 4 and d[\"steps\"] == 3, d
assert len(d[\"step_ms\"]) == 3
names = [o[\"name\"] for o in d[\"outputs\"]]
assert names == [\"next\"], names
assert len(d[\"outputs\"][0][\"fnv1a64\"]) == 18 and d[\"outputs\"][0][\"fnv1a64\"].startswith(\"0x\")
"
'

test_expect_success 'auto falls back to the host backend with a note when there is no GPU' '
	bcg run --backend auto "$small" >out 2>err &&
	if grep -q "^backend  cuda" out; then
		! test -s err
	else
		test_grep "^bcgtool: note: .*using the host backend" err
	fi
'

# A build with CUDA on a machine without a GPU (no driver either): the
# runtime calls the missing driver "insufficient"; the note says what it is.
test_expect_success CUDA_BUILD,!CUDA 'without a GPU the note says no GPU was found' '
	bcg run --backend auto --steps 1 "$small" >out 2>err &&
	test_grep "^backend  host" out &&
	echo "bcgtool: note: no GPU found; using the host backend" >expect &&
	test_cmp expect err
'

test_expect_success 'usage errors exit 2' '
	test_expect_code 2 bcg run 2>err &&
	test_grep "no script given" err &&
	test_expect_code 2 bcg run --steps 0 "$small" 2>err &&
	test_grep "steps takes a whole number from 1" err &&
	test_expect_code 2 bcg run --backend tpu "$small" 2>err &&
	test_grep "unknown backend .tpu." err
'

test_expect_success 'a missing script is an input error' '
	test_expect_code 2 bcg run --backend host nothere.yaml 2>err &&
	test_grep "^bcgtool: nothere.yaml: " err
'

test_done
