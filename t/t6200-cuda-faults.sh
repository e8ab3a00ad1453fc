#!/bin/sh
test_description='GPU failure paths: an arena larger than the device, a kernel fault in a segment, a breakpoint and an eager op (BCG_TEST_FAULT), found with BCG_SYNC=1'
. "$(dirname "$0")/test-lib.sh"

# Every step needs a GPU; without one the whole script skips.
test_have_prereq CUDA || test_skip_all 'no usable CUDA device'
command -v compute-sanitizer >/dev/null 2>&1 && test_set_prereq SANITIZER

tiny="$SAMPLES/tiny-mlp.yaml"
small="$SAMPLES/llama-decode-small.yaml"
# Without BCG_SYNC=1, a kernel fault's message ends so.
hint="BCG_SYNC=1 names the op or segment at fault"
# With it, the tiny sample's one segment is named with its ops (0 to 4).
seg="seg 0 up\.\.residual (ops 0 to 4), waited for after its launch (BCG_SYNC=1): .*kernel fault: an illegal memory access"
op="op .down. (matmul), waited for after its launch (BCG_SYNC=1): .*kernel fault: an illegal memory access"

# no_plan_left: no plan and no temporary file in the scratch directory.
no_plan_left() {
	! test -e "$1" &&
	ls -A >files &&
	! grep "\.tmp$" files
}

test_expect_success 'an arena larger than the device: exit 3, the size named, no plan' '
	cat >huge.yaml <<-\EOT &&
	bcg: 1
	description: one weight of 256 GiB, more than any device has
	dims:
	  T: {tokens: [1]}
	  R: 131072
	  C: 524288
	tensors:
	  w: {dtype: f32, shape: [R, C], role: weight, init: {kind: const, value: 1}}
	  y: {dtype: f32, shape: [R, C], role: output}
	ops:
	  - {op: scale, name: s, in: [w], out: [y], attrs: {alpha: 2}}
	EOT
	test_expect_code 3 bcg capture --backend cuda -o huge.plan huge.yaml >out 2>err &&
	test_grep "cannot allocate [0-9.]* GiB on the device" err &&
	no_plan_left huge.plan
'

test_expect_success 'BCG_TEST_FAULT=oom on cuda: exit 3, the size named, no plan' '
	test_expect_code 3 env BCG_TEST_FAULT=oom:1024 "$BCGTOOL" capture --backend cuda \
		-o oom.plan "$tiny" >out 2>err &&
	test_grep "cannot allocate the .* arena on the cuda backend" err &&
	no_plan_left oom.plan
'

test_expect_success 'a kernel fault inside a segment: exit 3, an illegal access reported, no plan' '
	test_expect_code 3 env BCG_TEST_FAULT=kernel:down "$BCGTOOL" capture --backend cuda \
		-o seg.plan "$tiny" >out 2>err &&
	test_grep "illegal memory access.*$hint" err &&
	no_plan_left seg.plan
'

test_expect_success 'a kernel fault inside a breakpoint: exit 3, the op named, no plan' '
	test_expect_code 3 env BCG_TEST_FAULT=break:attn.0 "$BCGTOOL" capture --backend cuda \
		-o bp.plan "$small" >out 2>err &&
	test_grep "op .attn.0. (attention): kernel fault: .*illegal memory access" err &&
	no_plan_left bp.plan
'

test_expect_success 'a kernel fault in a segment during replay: exit 3' '
	bcg capture -q --backend cuda -o good.plan "$tiny" >/dev/null &&
	test_expect_code 3 env BCG_TEST_FAULT=kernel:down "$BCGTOOL" replay --backend cuda \
		--steps 5 good.plan >out 2>err &&
	test_grep "illegal memory access.*$hint" err
'

test_expect_success 'BCG_SYNC=1: a fault in a segment names the segment and its ops (capture: exit 3, no plan)' '
	test_expect_code 3 env BCG_SYNC=1 BCG_TEST_FAULT=kernel:down "$BCGTOOL" capture \
		--backend cuda -o syncseg.plan "$tiny" >out 2>err &&
	test_grep "$seg" err &&
	! test_grep "$hint" err &&
	no_plan_left syncseg.plan
'

test_expect_success 'BCG_SYNC=1: a fault in a segment during replay names the segment and its ops' '
	test_expect_code 3 env BCG_SYNC=1 BCG_TEST_FAULT=kernel:down "$BCGTOOL" replay \
		--backend cuda --steps 5 good.plan >out 2>err &&
	test_grep "$seg" err
'

test_expect_success 'an eager op that faults, without BCG_SYNC: exit 3, the message says how to find it' '
	test_expect_code 3 env BCG_TEST_FAULT=eager:down "$BCGTOOL" run --backend cuda \
		--steps 3 "$tiny" >out 2>err &&
	test_grep "kernel fault: an illegal memory access.*$hint" err
'

test_expect_success 'BCG_SYNC=1: an eager op that faults is named (run)' '
	test_expect_code 3 env BCG_SYNC=1 BCG_TEST_FAULT=eager:down "$BCGTOOL" run --backend cuda \
		--steps 3 "$tiny" >out 2>err &&
	test_grep "tiny-mlp.yaml:28:5: $op" err
'

test_expect_success 'BCG_SYNC=1: an op that faults in the warm-up before a capture is named (replay)' '
	test_expect_code 3 env BCG_SYNC=1 BCG_TEST_FAULT=eager:down "$BCGTOOL" replay \
		--backend cuda --steps 5 good.plan >out 2>err &&
	test_grep "$op" err
'

test_expect_success 'BCG_SYNC=1: the same op in the eager reference of a capture is named; no plan' '
	test_expect_code 3 env BCG_SYNC=1 BCG_TEST_FAULT=eager:down "$BCGTOOL" capture \
		--backend cuda -o syncref.plan "$tiny" >out 2>err &&
	test_grep "$op" err &&
	no_plan_left syncref.plan
'

test_expect_success 'BCG_SYNC=1 without a fault: the same plan as without it' '
	bcg capture -q --backend cuda --no-tune -o plain.plan "$tiny" >/dev/null &&
	BCG_SYNC=1 bcg capture -q --backend cuda --no-tune -o synced.plan "$tiny" >/dev/null &&
	bcg diff plain.plan synced.plan &&
	BCG_SYNC=1 bcg replay -q --backend cuda --steps 3 --check synced.plan >out
'

test_expect_success SANITIZER 'the failure paths leak nothing under compute-sanitizer' '
	for f in oom:1024 break:attn.0; do
		BCG_TEST_FAULT=$f compute-sanitizer --leak-check full "$BCGTOOL" capture \
			--backend cuda -o s.plan "$small" >out 2>err
		# compute-sanitizer reports on standard output, bcgtool on stderr.
		cat out err >both &&
		test_grep "LEAK SUMMARY: 0 bytes leaked\|ERROR SUMMARY: [0-9]* error" both &&
		! grep "Leaked [0-9]* bytes" both || return 1
	done
'

test_done
