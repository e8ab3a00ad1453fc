#!/bin/sh
test_description='BCG_SYNC=1, the mode that names the op or segment of a kernel fault: its values, its messages and that it changes no result (host backend; t6200 shows it on the GPU)'
. "$(dirname "$0")/test-lib.sh"

tiny="$SAMPLES/tiny-mlp.yaml"
hint="CUDA reports a kernel's fault at a later wait, maybe after other ops: BCG_SYNC=1 names the op or segment at fault"

test_expect_success 'setup: a plan of the tiny sample' '
	bcg capture -q --backend host --no-tune -o tiny.plan "$tiny" >/dev/null
'

test_expect_success 'BCG_SYNC other than 1, 0 or empty is a usage error, for every command that runs work' '
	echo "bcgtool: BCG_SYNC: '\''yes'\'' is not 1 (on) or 0 (off)" >expect &&
	test_expect_code 2 env BCG_SYNC=yes "$BCGTOOL" run --backend host "$tiny" >out 2>err &&
	test_cmp expect err &&
	test_expect_code 2 env BCG_SYNC=yes "$BCGTOOL" capture --backend host -o no.plan "$tiny" \
		>out 2>err &&
	test_cmp expect err &&
	! test -e no.plan &&
	test_expect_code 2 env BCG_SYNC=yes "$BCGTOOL" replay --backend host --steps 1 tiny.plan \
		>out 2>err &&
	test_cmp expect err &&
	test_expect_code 2 env BCG_SYNC=2 "$BCGTOOL" instantiate --backend host tiny.plan >out 2>err &&
	test_grep "BCG_SYNC: .2. is not 1 (on) or 0 (off)" err
'

test_expect_success 'BCG_SYNC=1, 0 and empty change nothing: the same plan, byte for byte' '
	for v in 1 0 ""; do
		BCG_SYNC=$v bcg capture -q --backend host --no-tune -o "sync$v.plan" "$tiny" \
			>/dev/null &&
		cmp tiny.plan "sync$v.plan" || return 1
	done
'

test_expect_success 'BCG_SYNC=1: replay --check still matches, run gives the same outputs' '
	BCG_SYNC=1 bcg replay --backend host --steps 3 --check tiny.plan >out &&
	bcg run --backend host --steps 2 "$tiny" >plain &&
	BCG_SYNC=1 bcg run --backend host --steps 2 "$tiny" >synced &&
	grep -v " ms$" plain >plain.v &&
	grep -v " ms$" synced >synced.v &&
	test_cmp plain.v synced.v
'

test_expect_success 'without BCG_SYNC, a kernel fault says how to find the op: eager (warm-up), exit 3' '
	test_expect_code 3 env BCG_TEST_FAULT=eager:down "$BCGTOOL" replay --backend host \
		--steps 2 tiny.plan >out 2>err &&
	test_grep "op .down. (matmul): kernel fault: .*; $hint$" err
'

test_expect_success 'without BCG_SYNC, a fault in a segment says it too; no plan written' '
	test_expect_code 3 env BCG_TEST_FAULT=kernel:down "$BCGTOOL" capture --backend host \
		-o seg.plan "$tiny" >out 2>err &&
	test_grep "op .down. (matmul): kernel fault: .*; $hint$" err &&
	! test -e seg.plan
'

test_expect_success 'with BCG_SYNC=1 the message names the op and gives no hint' '
	test_expect_code 3 env BCG_SYNC=1 BCG_TEST_FAULT=eager:down "$BCGTOOL" run --backend host \
		"$tiny" >out 2>err &&
	test_grep "tiny-mlp.yaml:28:5: op .down. (matmul): kernel fault: " err &&
	! test_grep "BCG_SYNC=1 names" err
'

test_expect_success 'errors that are no kernel fault get no hint' '
	test_expect_code 3 env BCG_TEST_FAULT=oom:1024 "$BCGTOOL" capture --backend host \
		-o oom.plan "$tiny" >out 2>err &&
	test_grep "cannot allocate" err &&
	! test_grep "BCG_SYNC" err
'

test_expect_success 'eager:OP faults where OP runs eagerly, not where it is a breakpoint' '
	bcg capture -q --backend host --tokens 1 -o small.plan \
		"$SAMPLES/llama-decode-small.yaml" >/dev/null &&
	BCG_TEST_FAULT=eager:attn.0 bcg replay --backend host --steps 2 small.plan >out &&
	test_expect_code 3 env BCG_TEST_FAULT=eager:q.0 "$BCGTOOL" replay --backend host \
		--steps 2 small.plan >out 2>err &&
	test_grep "op .q.0. (matmul): kernel fault" err
'

test_expect_success 'the pages of the commands that run work document BCG_SYNC' '
	for c in capture replay run; do
		grep -q "^\.B BCG_SYNC$" "$BCG_SRC_DIR/man/bcgtool-$c.1" ||
			{ echo "bcgtool-$c.1 lacks BCG_SYNC"; return 1; }
	done &&
	grep -q "^\.B BCG_SYNC$" "$BCG_SRC_DIR/man/bcgtool.1" &&
	grep -q "eager:OP" "$BCG_SRC_DIR/man/bcgtool.1"
'

test_done
