#!/bin/sh
test_description='executables shared across capture sizes (--share-exec), on the host backend

The host backend has no executables, but it shares its captured calls as
the CUDA backend shares executables: one "executable" per group of
segments of one topology, updated to the size asked for before a launch
whenever another size ran on it since. llama-decode-small has 3 capture
sizes (1, 2, 4), each 3 segments between its 2 attention breakpoints;
the segments at one place have one topology at every size, so 9 segments
run on 3 executables, those of the largest size (captured first).'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"

test_expect_success 'setup: the sample captured with and without sharing' '
	bcg capture --backend host --no-tune --share-exec --json -o shared.plan "$small" >cap-shared.json &&
	bcg capture --backend host --no-tune --json -o own.plan "$small" >cap-own.json
'

test_expect_success PYTHON3 'capture --json says how many executables, with and without' '
	"$PYTHON3" -c "
import json
s = json.load(open(\"cap-shared.json\"))[\"graph_memory\"]
o = json.load(open(\"cap-own.json\"))[\"graph_memory\"]
assert s == {\"share_exec\": True, \"segments\": 9, \"executables\": 3, \"groups\": 3,
             \"refused\": 0, \"bytes\": 0, \"unshareable\": 0, \"unshareable_reason\": \"\"}, s
assert o == {\"share_exec\": False, \"segments\": 9, \"executables\": 9, \"groups\": 0,
             \"refused\": 0, \"bytes\": 0, \"unshareable\": 0, \"unshareable_reason\": \"\"}, o
v = json.load(open(\"cap-shared.json\"))[\"variants\"]
assert [(x[\"tokens\"], x[\"executables\"], x[\"joined\"]) for x in v] == \
       [(1, 0, 3), (2, 0, 3), (4, 3, 0)], v
"
'

test_expect_success 'a plan that shares is format 1.6; one that does not, as before' '
	bcg inspect shared.plan >out &&
	test_grep "^plan .*format 1\.6)$" out &&
	test_grep "^shared    3 executables shared across variants by 9 segments (6 of them run on another variant.s); 0 updates refused$" out &&
	bcg inspect own.plan >out &&
	test_grep "^plan .*format 1\.[0-5])$" out &&
	! grep "^shared" out
'

test_expect_success 'inspect --segments names the executable each segment ran on' '
	bcg inspect --segments shared.plan >out &&
	test_grep "^ *0  *0  *0-8  *embed..v_write.0 .* seg 6.s (4 tokens)$" out &&
	test_grep "^ *5  *4 .* o.1..next .* seg 8.s (4 tokens)$" out &&
	test_grep "^ *7  *2 .* o.0..v_write.1 .* shared (first)$" out &&
	bcg inspect --segments own.plan >out &&
	! grep "executable" out
'

test_expect_success PYTHON3 'inspect --json: each segment'"'"'s executable' '
	bcg inspect --json shared.plan >shared.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"shared.json\"))
ex = [(s[\"index\"], s[\"exec\"][\"share\"], s[\"exec\"][\"segment\"]) for s in d[\"segments\"]]
want = [(i, \"joined\", 6 + i % 3) for i in range(6)] + [(i, \"first\", i) for i in (6, 7, 8)]
assert ex == want, ex
" &&
	bcg inspect --json own.plan >own.json &&
	! grep -q "\"exec\"" own.json
'

test_expect_success 'the plan that shares reads and diffs as the same program' '
	bcg diff shared.plan own.plan
'

test_expect_success PYTHON3 'instantiate --share-exec: 3 executables for 9 segments' '
	bcg instantiate --backend host --share-exec --json shared.plan >inst.json &&
	bcg instantiate --backend host --json shared.plan >inst-own.json &&
	"$PYTHON3" -c "
import json
s = json.load(open(\"inst.json\"))
o = json.load(open(\"inst-own.json\"))
g = s[\"graph_memory\"]
assert (g[\"share_exec\"], g[\"executables\"], g[\"joined\"], g[\"refused\"]) == (True, 3, 6, 0), g
g = o[\"graph_memory\"]
assert (g[\"share_exec\"], g[\"executables\"], g[\"joined\"]) == (False, 9, 0), g
assert [x[\"share\"] for x in s[\"segments\"]] == [\"first\"] * 3 + [\"joined\"] * 6
assert [x[\"exec_segment\"] for x in s[\"segments\"]] == [0, 1, 2] * 3
"
'

for t in 1 2 4; do
	test_expect_success "replay --share-exec --tokens $t --check: every variant built, this one matches eager" "
		bcg replay --backend host --share-exec --check --steps 4 --warmup 1 --tokens $t shared.plan >out 2>err &&
		test_grep '^executables  3 for 9 segments of every variant (--share-exec), graph memory 0 B\$' out &&
		test_grep '^check        bit-exact with eager\$' out
	"
done

test_expect_success 'sizes alternating step by step update the executables, and match eager steps that alternate' '
	bcg replay --backend host --share-exec --check --steps 6 --warmup 1 --tokens 1,4,2 shared.plan >out 2>err &&
	test_grep "^alternating  3 sizes: 1,4,2, one a step$" out &&
	test_grep "^check        bit-exact with eager$" out &&
	bcg replay --backend host --check --steps 6 --warmup 1 --tokens 4,1 own.plan >out 2>err &&
	test_grep "^executables  6 for 6 segments, graph memory 0 B$" out &&
	test_grep "^check        bit-exact with eager$" out
'

test_expect_success 'an update refused: the segment gets its own executable, and says so' '
	BCG_TEST_SHARE=refuse bcg capture --backend host --no-tune --share-exec --json -o refused.plan "$small" >cap.json &&
	bcg inspect refused.plan >out &&
	test_grep "^shared    3 executables shared across variants by 3 segments (0 of them run on another variant.s); 6 updates refused$" out &&
	bcg inspect --segments refused.plan >out &&
	test_grep "^ *0 .* own: update to seg 6.s refused (1)$" out &&
	BCG_TEST_SHARE=refuse bcg replay --backend host --share-exec --check --steps 4 --warmup 1 --tokens 1,4 refused.plan >out 2>err &&
	test_grep "^executables  9 for 9 segments of every variant (--share-exec), graph memory 0 B$" out &&
	test_grep "^check        bit-exact with eager$" out
'

# Split keys say how --tp would shard a script; a one-GPU plan that has
# them is not tensor-parallel and shares like any other (found on the
# H100: the 1B sample's capture --share-exec was refused by the plan's
# own validation).
test_expect_success 'a script with split keys, captured for one rank, shares' '
	sed "s|^\(  w_o: .*seed: 400}\)}$|\1, split: {axis: 1}}|" "$small" >split.yaml &&
	grep -q "split: {axis: 1}" split.yaml &&
	bcg capture --backend host --no-tune --share-exec -o split.plan split.yaml &&
	bcg inspect split.plan >out &&
	test_grep "^shared    " out &&
	bcg replay --backend host --share-exec --check --steps 4 --warmup 1 --tokens 1,4 split.plan >out &&
	test_grep "^check        bit-exact with eager$" out
'

test_expect_success 'usage errors' '
	test_expect_code 2 bcg replay --backend host --tokens 1,0 shared.plan 2>err &&
	test_grep "tokens takes whole numbers" err &&
	test_expect_code 2 bcg replay --backend host --tokens 1,64 shared.plan 2>err &&
	test_grep "64 tokens is above every capture size: sizes that alternate must each have a variant" err &&
	test_expect_code 2 bcg replay --backend host --share-exec --prompt 1,2 shared.plan 2>err &&
	test_grep "takes no --share-exec" err
'

test_done
