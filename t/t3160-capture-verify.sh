#!/bin/sh
test_description='capture --verify: which variants get the eager reference; the phases report; 512 capture sizes'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"   # sizes 1, 2, 4, all breakable
schemas="$BCG_SRC_DIR/formats/json"
if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
	test_set_prereq JSONSCHEMA
fi

# No measured time in the plans, so that two captures compare by bytes.
SOURCE_DATE_EPOCH=1700000000
export SOURCE_DATE_EPOCH

test_expect_success 'setup: a script whose sizes take three modes' '
	cat >modes.yaml <<-\EOF &&
	bcg: 1
	dims:
	  T: {tokens: [1, 2, 3, 4, 5, 6, 7], modes: {1: full, 2: full, 3: full, 7: eager}}
	  H: 4
	tensors:
	  x: {dtype: f32, shape: [T, H], role: input, feed: {kind: random, scale: 1, seed: 5}}
	  w: {dtype: f32, shape: [H, H], role: weight, init: {kind: random, scale: 0.5, seed: 1}}
	  h: {dtype: f32, shape: [T, H]}
	  y: {dtype: f32, shape: [T, H], role: output}
	ops:
	  - {op: matmul, name: up, in: [x, w], out: [h]}
	  - {op: add, name: residual, in: [h, x], out: [y]}
	EOF
	sed "s/role: output/role: state/" modes.yaml >no-output.yaml
'

test_expect_success 'the default verifies every variant' '
	bcg capture --backend host --no-tune -o all.plan "$small" >out &&
	test $(grep -c "bit-exact$" out) = 3 &&
	test_grep "^verified 3 of 3 variants; " out &&
	bcg inspect all.plan >summary &&
	! grep "not verified" summary
'

test_expect_success 'first-and-largest: sizes 1 and 4 verified, 2 captured without' '
	bcg capture --backend host --no-tune --verify first-and-largest -o fl.plan "$small" >out &&
	test_grep "^ *1  breakable .*  bit-exact$" out &&
	test_grep "^ *2  breakable .*  not verified$" out &&
	test_grep "^ *4  breakable .*  bit-exact$" out &&
	test_grep "^verified 2 of 3 variants; " out
'

test_expect_success 'the unverified variant is captured the same: diff finds only its checksum gone' '
	test_expect_code 1 bcg diff all.plan fl.plan >out &&
	cat >expect <<-\EOF &&
	--- all.plan
	+++ fl.plan
	@@ checks @@
	EOF
	head -n 3 out >head &&
	test_cmp expect head &&
	test $(wc -l <out) = 4 &&
	test_grep "^-check next at 2: " out
'

test_expect_success 'inspect names the variant not verified, and --stats counts them' '
	bcg inspect fl.plan >out &&
	test_grep "^  not verified at capture (capture --verify): 2; replay --check verifies a variant$" out &&
	bcg inspect --variant 2 fl.plan >v2 &&
	test_grep "^  not verified at capture (capture --verify): 2; " v2 &&
	bcg inspect --variant 4 fl.plan >v4 &&
	! grep "not verified" v4 &&
	bcg inspect --checks fl.plan >checks &&
	awk "NR > 2 { print \$1 }" checks >tokens &&
	printf "1\n4\n" >expect &&
	test_cmp expect tokens &&
	bcg inspect --stats fl.plan >stats &&
	test_grep "^  verify .*(bit-exact, 2 of 3 variants)$" stats
'

test_expect_success PYTHON3 'inspect --json: verified per variant' '
	bcg inspect --json fl.plan >fl.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"fl.json\"))
got = [(v[\"tokens\"], v[\"verified\"]) for v in d[\"variants\"]]
assert got == [(1, True), (2, False), (4, True)], got
"
'

test_expect_success 'validate of the plan: a note, and the count in JSON' '
	bcg validate fl.plan >out &&
	test_grep "^note: 1 of 3 variants were not verified at capture (capture --verify): replay --check verifies them$" out &&
	bcg validate all.plan >out &&
	! grep "not verified" out
'

test_expect_success PYTHON3 'validate --json counts the verified variants' '
	bcg validate --json fl.plan >v.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"v.json\"))
assert d[\"verified\"] == 2 and d[\"variants\"] == 3, d
"
'

test_expect_success 'replay --check verifies the variant capture did not' '
	bcg replay --backend host --tokens 2 --check fl.plan >out 2>err &&
	test_grep "^check        bit-exact with eager$" out
'

test_expect_success 'none: no variant verified, no checksum, no reference step' '
	bcg capture --backend host --no-tune --verify none -o none.plan "$small" >out &&
	test $(grep -c "not verified$" out) = 3 &&
	test_grep "^verified 0 of 3 variants; " out &&
	bcg inspect --checks none.plan >checks &&
	test $(wc -l <checks) = 2 &&
	bcg inspect --stats none.plan >stats &&
	test_grep "^  reference    0 ns (0 steps)$" stats &&
	test_grep "^  verify       none (no variant verified at capture)$" stats &&
	bcg inspect none.plan >summary &&
	test_grep "^  not verified at capture (capture --verify): all; " summary &&
	for t in 1 2 4; do
		bcg replay --backend host --tokens $t --check none.plan >out 2>err &&
		test_grep "^check        bit-exact with eager$" out || return 1
	done
'

test_expect_success 'first-and-largest takes the ends of each mode: full 1 and 3, breakable 4 and 6, eager 7' '
	bcg capture --backend host --no-tune --verify first-and-largest -o modes.plan modes.yaml >out &&
	for t in 2 5; do
		test_grep "^ *$t  [a-z]* .*  not verified$" out || return 1
	done &&
	for t in 1 3 4 6 7; do
		test_grep "^ *$t  [a-z]* .*  bit-exact$" out || return 1
	done &&
	bcg inspect modes.plan >summary &&
	test_grep "^  not verified at capture (capture --verify): 2, 5; " summary
'

test_expect_success 'a program without outputs: only --verify all' '
	test_expect_code 2 bcg capture --backend host --verify first-and-largest -o x.plan no-output.yaml 2>err &&
	test_grep "needs an output tensor" err &&
	test_expect_code 2 bcg capture --backend host --verify none -o x.plan no-output.yaml 2>err &&
	! test -f x.plan &&
	bcg capture --backend host -o no-output.plan no-output.yaml >/dev/null &&
	bcg inspect no-output.plan >summary &&
	! grep "not verified" summary
'

test_expect_success '--verify takes three words' '
	test_expect_code 2 bcg capture --backend host --verify some -o x.plan "$small" 2>err &&
	test_grep "verify takes all, first-and-largest or none, not .some." err
'

# The state copies of a verified variant: every tensor but the weights
# reset (its reserved bytes) before the reference and before the
# verification, and the state kept after the reference; from the tensors
# the plan records.
test_expect_success PYTHON3 'capture --json: the phases, and the state copies counted from the plan' '
	for v in all first-and-largest none; do
		bcg capture --backend host --no-tune --verify $v --json -o p-$v.plan "$small" >c-$v.json &&
		bcg inspect --json p-$v.plan >i-$v.json || return 1
	done &&
	"$PYTHON3" -c "
import json
for v, n in ((\"all\", 3), (\"first-and-largest\", 2), (\"none\", 0)):
    c = json.load(open(\"c-%s.json\" % v))
    t = json.load(open(\"i-%s.json\" % v))[\"tensors\"]
    assert c[\"verify\"] == v and c[\"verified\"] == n, (v, c[\"verified\"])
    assert sum(x[\"verified\"] for x in c[\"variants\"]) == n
    for x in c[\"variants\"]:
        if not x[\"verified\"]:
            assert x[\"bit_exact\"] is None and x[\"rel_error\"] is None, x
    p = c[\"phases\"]
    parts = (\"materialize_ms\", \"tune_ms\", \"reference_ms\", \"capture_ms\",
             \"instantiate_ms\", \"verify_ms\", \"checksum_ms\", \"state_copy_ms\")
    assert all(p[k] >= 0 for k in parts), p
    assert sum(p[k] for k in parts) <= p[\"total_ms\"] * 1.001 + 0.01, p
    reset = sum(x[\"bytes\"] for x in t if x[\"role\"] != \"weight\")
    state = [x[\"bytes\"] for x in t if x[\"role\"] == \"state\"]
    assert state, \"the sample keeps a KV cache\"
    assert p[\"state_copies\"] == 3 * n, (v, p)
    assert p[\"state_copy_bytes\"] == n * (2 * reset + sum(state)), (v, p, reset, state)
    assert (p[\"reference_ms\"] > 0) == (n > 0) and (p[\"verify_ms\"] > 0) == (n > 0), p
"
'

test_expect_success JSONSCHEMA 'capture --json with unverified variants meets its schema' '
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$schemas/capture.schema.json" c-first-and-largest.json &&
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$schemas/capture.schema.json" c-none.json &&
	bcg validate --json p-none.plan >v.json &&
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$schemas/validate.schema.json" v.json &&
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$schemas/inspect.schema.json" i-none.json
'

# 512 capture sizes, 1 to 512, of a tiny program.
test_expect_success 'setup: scripts with 512 and 513 capture sizes' '
	sizes=$(awk "BEGIN { for (i = 1; i <= 512; i++) printf \"%s%d\", (i > 1 ? \",\" : \"\"), i }") &&
	sed "s/tokens: \[1, 2, 3, 4, 5, 6, 7\], modes: {[^}]*}/tokens: [$sizes]/" modes.yaml >s512.yaml &&
	sed "s/,512\]/,512,513]/" s512.yaml >s513.yaml &&
	test_grep "tokens: \[1,2,3,.*,511,512\]}" s512.yaml &&
	test_grep ",512,513\]}" s513.yaml
'

test_expect_success 'validate: 512 sizes are accepted' '
	bcg validate s512.yaml >out &&
	awk "\$1 == \"T\" && \$2 == \"tokens:\" { print NF - 2 }" out >n &&
	echo 512 >expect &&
	test_cmp expect n
'

test_expect_success 'validate: the 513th size is an error at its place' '
	col=$(awk "NR == 3 { print index(\$0, \",513]\") + 1 }" s513.yaml) &&
	test_expect_code 2 bcg validate s513.yaml 2>err &&
	echo "bcgtool: s513.yaml:3:$col: dim '"'"'T'"'"' has more than 512 capture sizes" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg capture --backend host -o x.plan s513.yaml 2>err &&
	test_cmp expect err
'

test_expect_success 'capture: 512 variants, each verified, in one plan' '
	bcg capture --backend host --no-tune -o s512.plan s512.yaml >out &&
	test $(grep -c "  bit-exact$" out) = 512 &&
	test_grep "^wrote s512.plan (.*): 512 variants, 512 segments, 0 breakpoints, backend host$" out
'

test_expect_success 'inspect: 512 variants, and a dispatch entry for each count' '
	bcg inspect s512.plan >out &&
	test_grep "^   total  *512  *512  *0  *0$" out &&
	bcg inspect --dispatch s512.plan >d &&
	awk "NR > 2 && \$1 != \"513-\" { if (\$1 != \$2) bad = 1; n++ } END { print n, bad + 0 }" d >got &&
	echo "512 0" >expect &&
	test_cmp expect got &&
	test_grep "^ *513-  -  *eager$" d &&
	bcg inspect --variant 300 s512.plan >v300 &&
	test_grep "^ *300  breakable " v300
'

test_expect_success 'replay --check at sizes across the range, padded where between' '
	for t in 1 64 65 300 511 512; do
		bcg replay --backend host --tokens $t --check s512.plan >out 2>err &&
		test_grep "^check        bit-exact with eager$" out || return 1
	done
'

test_expect_success 'first-and-largest over 512 sizes verifies 2' '
	bcg capture --backend host --no-tune --verify first-and-largest -o fl512.plan s512.yaml >out &&
	test_grep "^verified 2 of 512 variants; " out &&
	bcg inspect fl512.plan >summary &&
	test_grep "^  not verified at capture (capture --verify): 2, 3, 4, .*, \.\.\., 511 (510 in all); " summary
'

# On the GPU: the reference's outputs and state kept on the device, in
# one allocation for every variant, compared there; the checksums taken
# on threads. The plan must be the one every size verified gives, less
# the checksums of the sizes skipped, and those sizes must replay as the
# eager steps do.
test_expect_success CUDA 'cuda: first-and-largest against all, and replay --check of the size skipped' '
	bcg capture --backend cuda --no-tune --json -o cuda-all.plan "$small" >cuda-all.json &&
	bcg capture --backend cuda --no-tune --verify first-and-largest -o cuda-fl.plan "$small" >out &&
	test_grep "^ *2  breakable .*  not verified$" out &&
	test_grep "^verified 2 of 3 variants; " out &&
	test_expect_code 1 bcg diff cuda-all.plan cuda-fl.plan >d &&
	grep -v "^-check next at 2: " d >rest &&
	printf "%s\n" "--- cuda-all.plan" "+++ cuda-fl.plan" "@@ checks @@" >expect &&
	test_cmp expect rest &&
	bcg replay --backend cuda --tokens 2 --steps 3 --check cuda-fl.plan >out &&
	test_grep "^check        bit-exact with eager$" out
'

test_expect_success CUDA,PYTHON3 'cuda: the state copies, counted from the plan' '
	bcg inspect --json cuda-all.plan >i.json &&
	"$PYTHON3" -c "
import json
c = json.load(open(\"cuda-all.json\"))
t = json.load(open(\"i.json\"))[\"tensors\"]
p = c[\"phases\"]
reset = sum(x[\"bytes\"] for x in t if x[\"role\"] != \"weight\")
state = sum(x[\"bytes\"] for x in t if x[\"role\"] == \"state\")
assert c[\"verified\"] == 3 and all(v[\"bit_exact\"] for v in c[\"variants\"]), c
assert p[\"state_copies\"] == 9 and p[\"state_copy_bytes\"] == 3 * (2 * reset + state), p
"
'

test_done
