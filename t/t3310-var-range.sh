#!/bin/sh
test_description='replay and run --var: a var stepped over a range within the plan'"'"'s'
. "$(dirname "$0")/test-lib.sh"

if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
	test_set_prereq JSONSCHEMA
fi

small="$SAMPLES/llama-decode-small.yaml"

# The same script with kv_len's range written in it: what --var must give.
test_expect_success 'setup: a host plan, and the script with kv_len from 20 to 22' '
	bcg capture --backend host --mode full -o small.plan "$small" >/dev/null &&
	grep -q "^  kv_len: {start: 8, step: 1, limit: S}$" "$small" &&
	sed "s/^  kv_len: {start: 8, step: 1, limit: S}$/  kv_len: {start: 20, step: 1, limit: 22}/" \
		"$small" >narrow.yaml &&
	! cmp -s "$small" narrow.yaml
'

# Five steps see kv_len 20, 21, 22, 20, 21 either way; the plan's own
# range (8, 9, ...) gives other outputs.
test_expect_success 'run --var gives the outputs of the script with that range' '
	bcg run --backend host --steps 5 narrow.yaml >want &&
	bcg run --backend host --steps 5 --var kv_len=20:22 "$small" >got &&
	bcg run --backend host --steps 5 "$small" >plain &&
	sed -n "/^output/,\$p" want >want.out &&
	sed -n "/^output/,\$p" got >got.out &&
	sed -n "/^output/,\$p" plain >plain.out &&
	test_cmp want.out got.out &&
	! cmp -s want.out plain.out
'

test_expect_success 'run --var NAME=V keeps the var at V' '
	sed "s/^  kv_len: {start: 8, step: 1, limit: S}$/  kv_len: {start: 30, step: 0}/" \
		"$small" >fixed.yaml &&
	bcg run --backend host --steps 3 fixed.yaml | sed -n "/^output/,\$p" >want.out &&
	bcg run --backend host --steps 3 --var kv_len=30 "$small" | sed -n "/^output/,\$p" >got.out &&
	test_cmp want.out got.out
'

test_expect_success 'replay --var: the graphs over the range, bit-exact with eager' '
	bcg replay --backend host --steps 5 --warmup 2 --check --var kv_len=20:22 small.plan >out &&
	test_grep "^var          kv_len from 20 to 22 (--var), +1 a step$" out &&
	test_grep "^check        bit-exact with eager$" out
'

test_expect_success 'replay --json lists every var as the steps followed it' '
	bcg replay --backend host --steps 2 --warmup 0 --json --var kv_len=33:60 small.plan >v.json &&
	bcg replay --backend host --steps 2 --warmup 0 --json small.plan >p.json &&
	"$PYTHON3" -c "
import json
v = json.load(open(\"v.json\"))[\"vars\"]
p = json.load(open(\"p.json\"))[\"vars\"]
assert v == [{\"name\": \"kv_len\", \"start\": 33, \"step\": 1, \"limit\": 60}], v
assert p == [{\"name\": \"kv_len\", \"start\": 8, \"step\": 1, \"limit\": 64}], p
"
'

test_expect_success JSONSCHEMA 'the replay with --var follows its schema' '
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" \
		"$BCG_SRC_DIR/formats/json/replay.schema.json" v.json
'

# --- errors ------------------------------------------------------------

test_expect_success 'a range outside the plan'"'"'s names the plan'"'"'s range' '
	test_expect_code 2 bcg replay --backend host --steps 1 --var kv_len=4:20 small.plan 2>err &&
	echo "bcgtool: var '"'"'kv_len'"'"' from 4 to 20: the plan'"'"'s values run from 8 to 64, and the range must lie within them" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg run --backend host --var kv_len=8:65 "$small" 2>err &&
	test_grep "from 8 to 65: the plan'"'"'s values run from 8 to 64" err
'

test_expect_success 'a var the plan does not have' '
	test_expect_code 2 bcg replay --backend host --steps 1 --var seq=9 small.plan 2>err &&
	echo "bcgtool: the plan has no var '"'"'seq'"'"'" >expect &&
	test_cmp expect err
'

test_expect_success 'malformed --var arguments are usage errors' '
	for a in kv_len =3 kv_len=a kv_len=3: kv_len=1:2:3 kv_len=-1 kv_len=3:x; do
		test_expect_code 2 bcg replay --backend host --var "$a" small.plan 2>err &&
		test_grep "^bcgtool replay: --var takes NAME=START:LIMIT or NAME=VALUE, whole numbers from 0 to 2147483647, not '"'"'$a'"'"'$" err ||
		return 1
	done &&
	test_expect_code 2 bcg replay --backend host --var kv_len=9:8 small.plan 2>err &&
	test_grep "^bcgtool replay: --var kv_len=9:8: the start is above the limit$" err &&
	test_expect_code 2 bcg replay --backend host --var kv_len=9 --var kv_len=10 small.plan 2>err &&
	test_grep "^bcgtool replay: --var: '"'"'kv_len'"'"' given twice$" err
'

test_expect_success '--var does not apply to a generation or a trace' '
	test_expect_code 2 bcg replay --backend host --prompt 1,2 --var kv_len=9 small.plan 2>err &&
	test_grep "^bcgtool replay: --prompt takes no --var" err &&
	test_expect_code 2 bcg run --backend host --prompt 1,2 --var kv_len=9 "$small" 2>err &&
	test_grep "^bcgtool run: --prompt takes no --var" err &&
	test_expect_code 2 bcg replay --backend host --synthetic requests=2 --var kv_len=9 small.plan 2>err &&
	test_grep "^bcgtool replay: --var does not apply to a trace" err
'

test_done
