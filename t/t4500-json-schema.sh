#!/bin/sh
test_description='every --json output against its JSON Schema in formats/json (python3-jsonschema)'
. "$(dirname "$0")/test-lib.sh"

schemas="$BCG_SRC_DIR/formats/json"
tiny="$SAMPLES/tiny-mlp.yaml"
small="$SAMPLES/llama-decode-small.yaml"

if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
	test_set_prereq JSONSCHEMA
fi

# check NAME FILE: FILE is valid under formats/json/NAME.schema.json.
check() {
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$schemas/$1.schema.json" "$2"
}

test_expect_success JSONSCHEMA 'setup: two small plans on the host' '
	bcg capture -q --backend host --json -o tiny.plan "$tiny" >capture.json &&
	bcg capture -q --backend host --tokens 1,4 -o small.plan "$small" >/dev/null
'

test_expect_success JSONSCHEMA 'capture --json' '
	check capture capture.json
'

test_expect_success JSONSCHEMA 'validate --json' '
	bcg validate --json "$small" >validate.json &&
	check validate validate.json
'

test_expect_success JSONSCHEMA 'ops --json' '
	bcg ops --json >ops.json &&
	check ops ops.json
'

test_expect_success JSONSCHEMA 'inspect --json, of a host plan and of a GPU plan' '
	bcg inspect --json small.plan >inspect.json &&
	check inspect inspect.json &&
	bcg inspect --json "$TEST_DATA/plans/llama-decode-small.cuda.plan" >inspect-cuda.json &&
	check inspect inspect-cuda.json
'

test_expect_success JSONSCHEMA 'inspect --json of a tensor-parallel plan (format 1.5): dist, splits, slices, ranks' '
	bcg inspect --json "$BCG_SRC_DIR/t/fuzz/corpus/plan/tp-4.plan" >inspect-tp.json &&
	check inspect inspect-tp.json &&
	test_grep "\"ranks\": \[" inspect-tp.json &&
	test_grep "\"slice\": {" inspect-tp.json
'

test_expect_success JSONSCHEMA 'executables shared (format 1.6): capture, inspect, instantiate and replay --json' '
	bcg capture -q --backend host --share-exec --json -o shared.plan "$small" >capture-shared.json &&
	check capture capture-shared.json &&
	bcg inspect --json shared.plan >inspect-shared.json &&
	check inspect inspect-shared.json &&
	test_grep "\"exec\": {" inspect-shared.json &&
	bcg instantiate -q --backend host --share-exec --json shared.plan >instantiate-shared.json &&
	check instantiate instantiate-shared.json &&
	bcg replay -q --backend host --share-exec --steps 2 --warmup 0 --tokens 1,4 --json shared.plan >replay-shared.json &&
	check replay replay-shared.json
'

test_expect_success JSONSCHEMA 'diff --json' '
	test_expect_code 1 bcg diff --json tiny.plan small.plan >diff.json &&
	check diff diff.json
'

test_expect_success JSONSCHEMA 'instantiate --json' '
	bcg instantiate -q --backend host --json small.plan >instantiate.json &&
	check instantiate instantiate.json
'

test_expect_success JSONSCHEMA 'replay --json, with --check' '
	bcg replay -q --backend host --steps 3 --warmup 1 --check --json small.plan >replay.json &&
	check replay replay.json
'

test_expect_success JSONSCHEMA 'run --json' '
	bcg run -q --backend host --steps 2 --json "$small" >run.json &&
	check run run.json
'

test_expect_success JSONSCHEMA 'bench --json' '
	bcg bench -q --backend host --steps 2 --warmup 1 --json "$small" >bench.json &&
	check bench bench.json
'

test_expect_success JANSSON,JSONSCHEMA 'run --prompt --json and replay --prompt --json (generation)' '
	bcg import -o hf.yaml "$TEST_DATA/hf/llama" 2>/dev/null &&
	bcg capture -q --backend host -o hf.plan hf.yaml >/dev/null &&
	bcg run --backend host --json --prompt 1,5,9 --generate 3 hf.yaml >gen-run.json &&
	check generate gen-run.json &&
	bcg replay --backend host --json --prompt 1,5,9 --generate 3 hf.plan >gen-replay.json &&
	check generate gen-replay.json &&
	sed "s/\"setup_ms\"/\"setup\"/" gen-replay.json >bad-gen.json &&
	test_must_fail check generate bad-gen.json 2>err &&
	test_grep "setup_ms" err
'

test_expect_success JSONSCHEMA 'one spelling: hashes are 0x and 16 digits, an item is a breakpoint' '
	sed "s/\"breakpoint\"/\"break\"/" replay.json >bad-item.json &&
	test_must_fail check replay bad-item.json 2>err &&
	test_grep "is not one of" err &&
	sed "s/\"fnv1a64\": \"0x/\"fnv1a64\": \"/" run.json >bad-hash.json &&
	test_must_fail check run bad-hash.json 2>err &&
	test_grep "does not match" err &&
	sed "s/\"script_hash\": \"0x/\"script_hash\": \"/" validate.json >bad-hash2.json &&
	test_must_fail check validate bad-hash2.json
'

test_done
