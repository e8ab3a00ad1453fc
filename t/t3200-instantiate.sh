#!/bin/sh
test_description='bcgtool instantiate on the host backend'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"

test_expect_success 'setup: a host plan' '
	bcg capture --backend host -o small.plan "$small" >/dev/null
'

test_expect_success 'every segment is rebuilt; host plans have no nodes to compare' '
	bcg instantiate --backend host small.plan >out &&
	test_grep "^9 segments: 0 match, 0 drift, 9 unchecked$" out &&
	test $(grep -c " unchecked  the plan has no nodes for it" out) = 9 &&
	test_grep "^load .* ms, materialize .* ms, rebuild .* ms, instantiate .* ms, upload .* ms, total .* ms$" out
'

test_expect_success 'the segments are listed with their op spans' '
	test_grep "^ *1  *0  embed..v_write.0 " out &&
	test_grep "^ *1  *1  o.0..v_write.1 " out &&
	test_grep "^ *1  *2  o.1..next " out
'

test_expect_success PYTHON3 '--json' '
	bcg instantiate --backend host --json small.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"unchecked\"] == 9 and d[\"matched\"] == 0 and d[\"drifted\"] == 0, d
assert [s[\"tokens\"] for s in d[\"segments\"]] == [1,1,1,2,2,2,4,4,4]
"
'

test_expect_success 'a plan captured on an H100 instantiates here: its nodes are not compared' '
	bcg instantiate --backend host "$TEST_DATA/plans/llama-decode-small.cuda.plan" >out &&
	test_grep "^backend  host (captured on cuda (NVIDIA H100 80GB HBM3))$" out &&
	test_grep "^9 segments: 0 match, 0 drift, 9 unchecked$" out &&
	test $(grep -c " unchecked  the host backend records no nodes to compare" out) = 9
'

test_expect_success 'its nodes read back: real kernels, with their arena operands named' '
	bcg inspect --nodes --variant 1 "$TEST_DATA/plans/llama-decode-small.cuda.plan" >out &&
	test_grep "bcg_rmsnorm_kernel.* 1 attn_norm.0 .*=x .*=attn_norm\[0\] .*=h" out &&
	test_grep "nvjet_sm90.* 2 q.0 .*=w_q\[0\]" out &&
	test_grep "^  edges: 0->1 1->2 2->3" out
'

test_expect_success 'a corrupt plan is an input error' '
	head -c 100 small.plan >cut.plan &&
	test_expect_code 2 bcg instantiate --backend host cut.plan 2>err &&
	test_grep "^bcgtool: cut.plan: " err
'

test_expect_success 'usage errors exit 2' '
	test_expect_code 2 bcg instantiate 2>err &&
	test_grep "no plan given" err
'

test_done
