#!/bin/sh
test_description='the fuzz targets pass over their seeds, and the plan mutator reaches the sections'
. "$(dirname "$0")/test-lib.sh"

PLAN_SEEDS="$BCG_BUILD_DIR/t/fuzz/plan-seeds"
SCRIPT_SEEDS="$BCG_BUILD_DIR/t/fuzz/script-seeds"
TRACE_SEEDS="$BCG_BUILD_DIR/t/fuzz/trace-seeds"
ST_SEEDS="$BCG_BUILD_DIR/t/fuzz/safetensors-seeds"
HF_SEEDS="$BCG_BUILD_DIR/t/fuzz/hf-config-seeds"
CORPUS="$BCG_SRC_DIR/t/fuzz/corpus"

test_expect_success 'the plan target reads every seed plan and fixture' '
	"$PLAN_SEEDS" "$CORPUS/plan" "$BCG_SRC_DIR/t/data/plans" \
		"$BCG_SRC_DIR/t/data/vector.plan" >out &&
	test_grep "^files [1-9]" out
'

test_expect_success 'a seed plan has capture-size keys (format 1.3)' '
	bcg inspect "$CORPUS/plan/serve-keys.plan" >info &&
	test_grep "^plan .*, format 1.3)$" info
'

test_expect_success 'a seed plan shares executables across sizes (format 1.6)' '
	bcg inspect "$CORPUS/plan/shared-exec.plan" >info &&
	test_grep "^plan .*, format 1.6)$" info &&
	test_grep "^shared    3 executables" info
'

test_expect_success 'the script target parses every seed, sample and bad script' '
	"$SCRIPT_SEEDS" "$CORPUS/script" "$BCG_SRC_DIR/samples" \
		"$BCG_SRC_DIR/t/data/scripts/bad" >out &&
	test_grep "^files [1-9]" out
'

test_expect_success 'the trace target reads every seed and shipped trace, and mutants of them' '
	"$TRACE_SEEDS" "$CORPUS/trace" "$SAMPLES/traces" >out &&
	test_grep "^files [1-9]" out &&
	"$TRACE_SEEDS" -m 300 "$CORPUS/trace" >out &&
	read -r _ files _ runs _ mutants _ <out &&
	test "$files" -ge 7 &&
	test "$runs" = $((files * 301)) && test "$mutants" = $((files * 300))
'

test_expect_success 'the safetensors target checks every seed, and mutants of them' '
	"$ST_SEEDS" "$CORPUS/safetensors" >out &&
	test_grep "^files [1-9]" out &&
	"$ST_SEEDS" -m 300 "$CORPUS/safetensors" >out &&
	read -r _ files _ runs _ mutants _ <out &&
	test "$files" -ge 5 &&
	test "$runs" = $((files * 301)) && test "$mutants" = $((files * 300))
'

test_expect_success JANSSON 'the config.json target imports or refuses every seed, and mutants of them' '
	"$HF_SEEDS" "$CORPUS/hf-config" "$BCG_SRC_DIR/t/data/hf/llama/config.json" >out &&
	test_grep "^files [1-9]" out &&
	"$HF_SEEDS" -m 300 "$CORPUS/hf-config" >out &&
	read -r _ files _ runs _ mutants _ <out &&
	test "$files" -ge 14 &&
	test "$runs" = $((files * 301)) && test "$mutants" = $((files * 300))
'

# Random bytes almost never pass the header and payload checksums; the
# custom mutator rewrites them after each mutation of the content, so most
# of its mutants reach the section parser (one in eight mutates the raw
# bytes on purpose, for the header checks).
test_expect_success 'most of the plan mutator'"'"'s mutants get past the checksums' '
	"$PLAN_SEEDS" -m 200 "$CORPUS/plan/vector.plan" "$CORPUS/plan/mini.plan" >out &&
	cat out &&
	read -r _ files _ runs _ mutants _ past <out &&
	test "$mutants" = 400 &&
	test $((past * 4)) -ge $((mutants * 3))
'

test_done
