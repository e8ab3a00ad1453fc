#!/bin/sh
test_description='bcgtool record on the PyTorch stand-ins for vLLM and SGLang (GPU, torch)'
. "$(dirname "$0")/test-lib.sh"

# The programs (t/record/*.py) print what they made as JSON: graphs per
# batch size, breaks per step, steps, tokens; check-plan.py holds the
# recorded plan (inspect --json) against it.
rec="$TEST_DIRECTORY/record"
test -f "$BCG_BUILD_DIR/bcgtool/record/.libs/libbcg-record.so" && test_set_prereq RECORD_LIB
test_have_prereq CUDA,PYTHON3 &&
	"$PYTHON3" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
		2>/dev/null && test_set_prereq TORCH
test_have_prereq TORCH && "$PYTHON3" -c 'import triton' 2>/dev/null && test_set_prereq TRITON

# The tokens of a program's JSON, one line per batch size.
tokens() {
	"$PYTHON3" -c '
import json, sys
for b, t in sorted(json.load(open(sys.argv[1]))["tokens"].items()):
    print(b, t)
' "$1"
}

test_expect_success TORCH,RECORD_LIB 'setup: the breakable program, not recorded' '
	"$PYTHON3" "$rec/breakable.py" --order interleaved >plain.json &&
	tokens plain.json >plain.tokens &&
	test -s plain.tokens
'

test_expect_success TORCH,RECORD_LIB 'breakable: the plan holds the graphs and breaks the program made' '
	bcg record --step step -o breakable.plan -- \
		"$PYTHON3" "$rec/breakable.py" --order interleaved >breakable.json &&
	bcg inspect --json breakable.plan >breakable.inspect.json &&
	"$PYTHON3" "$rec/check-plan.py" breakable.json breakable.inspect.json step
'

test_expect_success TORCH,RECORD_LIB 'breakable: the same tokens with and without recording' '
	tokens breakable.json >recorded.tokens &&
	test_cmp plain.tokens recorded.tokens
'

test_expect_success TORCH,RECORD_LIB 'breakable: the modules are kept, the libraries named' '
	"$PYTHON3" -c "
import json
d = json.load(open(\"breakable.inspect.json\"))
r = d[\"recording\"]
assert \"torch\" in r[\"libraries\"], r[\"libraries\"]
assert any(m[\"kept\"] for m in d[\"modules\"]), \"no module image kept\"
assert d[\"launches\"], \"no launches\"
"
'

test_expect_success TORCH,RECORD_LIB 'breakable: two recordings diff equal' '
	bcg record --step step -o breakable2.plan -- \
		"$PYTHON3" "$rec/breakable.py" --order interleaved >/dev/null &&
	bcg diff breakable.plan breakable2.plan
'

test_expect_success TORCH,RECORD_LIB 'breakable: one layer more is named by diff' '
	bcg record --step step -o layers5.plan -- \
		"$PYTHON3" "$rec/breakable.py" --order interleaved --layers 5 >layers5.json &&
	bcg inspect --json layers5.plan >layers5.inspect.json &&
	"$PYTHON3" "$rec/check-plan.py" layers5.json layers5.inspect.json step &&
	test_expect_code 1 bcg diff breakable.plan layers5.plan >diff-layers.txt &&
	grep -i "segment" diff-layers.txt &&
	grep "^+item .*: segment" diff-layers.txt
'

test_expect_success TORCH,RECORD_LIB 'breakable: another attention kernel is named by diff' '
	bcg record --step step -o manual.plan -- \
		"$PYTHON3" "$rec/breakable.py" --order interleaved --attention manual >/dev/null &&
	test_expect_code 1 bcg diff breakable.plan manual.plan >diff-attn.txt &&
	grep -i "softmax" diff-attn.txt
'

test_expect_success TORCH,RECORD_LIB 'full: steps found without NVTX, one graph a step' '
	bcg record -o full.plan -- "$PYTHON3" "$rec/full.py" --order blocked --no-nvtx >full.json &&
	bcg inspect --json full.plan >full.inspect.json &&
	"$PYTHON3" "$rec/check-plan.py" full.json full.inspect.json repeat
'

test_expect_success TORCH,RECORD_LIB 'breakable: steps found without NVTX too (blocked order)' '
	bcg record -o found.plan -- "$PYTHON3" "$rec/breakable.py" --order blocked --no-nvtx \
		>found.json &&
	bcg inspect --json found.plan >found.inspect.json &&
	"$PYTHON3" "$rec/check-plan.py" found.json found.inspect.json repeat
'

test_expect_success TORCH,RECORD_LIB,TRITON 'compiled pieces: Triton kernels in the graphs' '
	bcg record --step step -o compiled.plan -- "$PYTHON3" "$rec/compiled.py" >compiled.json &&
	bcg inspect --json compiled.plan >compiled.inspect.json &&
	"$PYTHON3" "$rec/check-plan.py" compiled.json compiled.inspect.json step
'

test_expect_success TORCH,RECORD_LIB '--snapshot: allocation contents kept, up to the size' '
	bcg record --json --snapshot=64M --step step -o snap.plan -- \
		"$PYTHON3" "$rec/breakable.py" --steps 2 --layers 1 >snap.out &&
	grep -q "\"snapshots\": [1-9]" snap.out
'

test_done
