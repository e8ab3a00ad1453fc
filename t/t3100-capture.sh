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

test_expect_success 'two captures of one script differ only in timings: diff finds nothing' '
	bcg capture --backend host -o again.plan "$small" >/dev/null &&
	bcg diff small.plan again.plan >out &&
	test_cmp /dev/null out
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
