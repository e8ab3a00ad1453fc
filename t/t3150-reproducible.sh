#!/bin/sh
test_description='capture with SOURCE_DATE_EPOCH set: the same script, options and machine give the same bytes'
. "$(dirname "$0")/test-lib.sh"

# test-lib.sh sets SOURCE_DATE_EPOCH for every test.
small="$SAMPLES/llama-decode-small.yaml"
mlp="$SAMPLES/tiny-mlp.yaml"

test_expect_success 'two host captures without tuning are byte for byte the same' '
	bcg capture --backend host --no-tune -o a.plan "$small" >/dev/null &&
	bcg capture --backend host --no-tune -o b.plan "$small" >/dev/null &&
	cmp a.plan b.plan &&
	bcg capture --backend host --no-tune -o c.plan "$mlp" >/dev/null &&
	bcg capture --backend host --no-tune -o d.plan "$mlp" >/dev/null &&
	cmp c.plan d.plan
'

test_expect_success 'the plan records the epoch and no measured time' '
	bcg inspect --json a.plan >a.json &&
	test_grep "\"created\": 1700000000," a.json &&
	bcg inspect --stats a.plan >stats &&
	test_grep "^  materialize  0 ns$" stats &&
	test_grep "^  verify       0 ns (bit-exact)$" stats
'

# On the host, a reproducible capture measures no choice (the host's
# timings would pick at random between close candidates): two default
# captures are the same bytes, their choices the defaults.
test_expect_success 'two default host captures (tuning asked for) are byte for byte the same' '
	bcg capture --backend host -o t1.plan "$small" >/dev/null &&
	bcg capture --backend host -o t2.plan "$small" >/dev/null &&
	cmp t1.plan t2.plan &&
	cmp t1.plan a.plan &&
	bcg inspect --choices t1.plan >choices &&
	! grep " us" choices &&
	! grep "tuned" choices
'

test_expect_success 'without SOURCE_DATE_EPOCH the host measures its choices' '
	(unset SOURCE_DATE_EPOCH && bcg capture --backend host -o m.plan "$small" >/dev/null) &&
	bcg inspect --choices m.plan >choices &&
	grep "tuned" choices
'

# --choices-from: a capture takes another plan's choices by op name and
# token count; here one edited to blocked at 2 tokens, the rest defaults.
test_expect_success 'capture --choices-from takes each op'"'"'s choice from another plan' '
	"$BCG_BUILD_DIR/t/helper/plan-edit" a.plan pick.plan \
		choice 2 o.1 blocked tuned,close reference=2,blocked=1 &&
	bcg capture --backend host --choices-from pick.plan -o from.plan "$small" >/dev/null &&
	bcg inspect --choices --variant 2 from.plan >choices &&
	test_grep "^  *[0-9]*  o\.1  *matmul  blocked  *tuned, close  reference, blocked$" choices &&
	test $(grep -c " blocked  " choices) = 1 &&
	bcg diff --strict pick.plan from.plan >out &&
	test ! -s out
'

test_expect_success 'capture --choices-from: a choice the backend cannot run, and --no-tune, are refused' '
	"$BCG_BUILD_DIR/t/helper/plan-edit" a.plan bogus.plan \
		choice 2 o.1 warp9 tuned reference=3,warp9=1 &&
	test_expect_code 2 bcg capture --backend host --choices-from bogus.plan -o x.plan "$small" \
		>out 2>err &&
	test_grep "^bcgtool: .*--choices-from: op o.1 at 2 tokens chose .warp9., which the host backend cannot run for it" err &&
	! test -e x.plan &&
	test_expect_code 2 bcg capture --no-tune --choices-from pick.plan -o x.plan "$small" 2>err &&
	test_grep "^bcgtool capture: --choices-from and --no-tune exclude each other$" err &&
	test_expect_code 2 bcg capture --choices-from nothere.plan -o x.plan "$small" 2>err &&
	test_grep "^bcgtool: nothere.plan: cannot read: No such file or directory$" err
'

test_expect_success '--stats records the measured times anyway' '
	bcg capture --backend host --stats -o s.plan "$small" >/dev/null &&
	bcg inspect --stats s.plan >stats &&
	! grep "^  materialize  0 ns$" stats
'

test_expect_success 'without SOURCE_DATE_EPOCH the times are recorded' '
	(unset SOURCE_DATE_EPOCH && bcg capture --backend host -o n.plan "$small" >/dev/null) &&
	bcg inspect --stats n.plan >stats &&
	! grep "^  materialize  0 ns$" stats
'

test_expect_success CUDA 'two CUDA captures without tuning are byte for byte the same' '
	bcg capture --backend cuda --no-tune -o g1.plan "$small" >/dev/null &&
	bcg capture --backend cuda --no-tune -o g2.plan "$small" >/dev/null &&
	cmp g1.plan g2.plan
'

# On CUDA a different choice can launch other kernels (attention's
# "twopass" adds a merge kernel to "split"): the segment holding the op
# then has other nodes. Every other difference is a defect.
test_expect_success CUDA,PYTHON3 'with tuning, two CUDA captures differ in their choices, and in the nodes of variants whose choices differ, at most' '
	bcg capture --backend cuda -o g3.plan "$small" >/dev/null &&
	bcg capture --backend cuda -o g4.plan "$small" >/dev/null &&
	{ bcg diff --json g3.plan g4.plan >d.json; test $? -le 1; } &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"d.json\"))[\"differences\"]
chose = {e[\"variant\"] for e in d if e[\"area\"] == \"choices\"}
bad = [e for e in d if e[\"area\"] != \"choices\" and
       not (e[\"area\"] == \"items\" and e[\"variant\"] in chose)]
assert not bad, bad
"
'

test_done
