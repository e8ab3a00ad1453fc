#!/bin/sh
test_description='NVTX ranges of replay and capture, recorded by an injected NVTX tool'
. "$(dirname "$0")/test-lib.sh"

# t/helper/nvtx-log.so logs every range bcgtool pushes (see that file).
inject="$BCG_BUILD_DIR/t/helper/.libs/nvtx-log.so"
test_have_prereq NVTX || test_skip_all 'built without the NVTX headers'
test -f "$inject" || test_skip_all "no $inject"
test_have_prereq PYTHON3 || test_skip_all 'python3 is needed to read the log'

small="$SAMPLES/llama-decode-small.yaml"
backend=host
test_have_prereq CUDA && backend=cuda

# The items of every variant of the sample, from its op list: attention
# breaks each of the 2 layers; the segments run between.
items="seg~0~embed..v_write.0 break~attn.0 seg~1~o.0..v_write.1 break~attn.1 seg~2~o.1..next"

test_expect_success "setup: a plan captured on $backend, with ranges" '
	NVTX_INJECTION64_PATH="$inject" BCG_NVTX_LOG=capture.log \
		bcg capture --backend $backend -o small.plan "$small" >/dev/null &&
	test_file_not_empty capture.log
'

test_expect_success 'replay: steps hold every segment and breakpoint of the variant, in order' '
	NVTX_INJECTION64_PATH="$inject" BCG_NVTX_LOG=replay.log \
		bcg replay --backend $backend --steps 3 --warmup 1 small.plan >/dev/null &&
	"$PYTHON3" "$TEST_DIRECTORY/nvtx-check.py" replay replay.log 4 3 $items
'

test_expect_success 'capture: "capture N" ranges hold each variant'"'"'s segments' '
	"$PYTHON3" "$TEST_DIRECTORY/nvtx-check.py" capture capture.log 4,2,1 $items
'

test_expect_success '--no-nvtx emits no ranges' '
	NVTX_INJECTION64_PATH="$inject" BCG_NVTX_LOG=quiet.log \
		bcg replay --backend $backend --no-nvtx --steps 2 small.plan >/dev/null &&
	! grep "^push" quiet.log 2>/dev/null
'

test_done
