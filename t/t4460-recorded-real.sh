#!/bin/sh
# t4460-recorded-real: a real recording, made on the GPU machine, read on
# any machine: `bcgtool record` of `bcgtool replay` of the tiny MLP's plan
# (t/data/plans/regen.sh says how both were made).
test_description='a recorded plan of bcgtool replay matches the plan it replayed'
. "$(dirname "$0")/test-lib.sh"

rec="$BCG_SRC_DIR/t/data/plans/recorded-replay-tiny.plan"
src="$BCG_SRC_DIR/t/data/plans/recorded-replay-tiny.source.plan"

test_expect_success 'validate: a valid recorded plan, its modules kept' '
	bcg validate "$rec" >out &&
	test_grep "a valid recorded plan, format 1.4: 1 variant, 1 segment, 0 breakpoints" out &&
	test_grep "4 modules (4 kept)" out
'

test_expect_success 'inspect: the recording, one step shape seen 40 times' '
	bcg inspect "$rec" >out &&
	test_grep "^command   .*bcgtool replay --backend cuda --steps 20 tiny.plan$" out &&
	test_grep "40 steps (repeating launches)" out &&
	test_grep "^       1  repeat    40 " out &&
	# one graph launch a step: its GPU busy time is its span (the same
	# text twice), and no gaps
	grep -E "^       1  repeat    40  ([0-9.]+ us)  \1  +0  +1 +1 +0 +6$" out
'

test_expect_success PYTHON3 'segment for segment: the recorded graph is the captured one of the size replay ran' '
	bcg inspect --json "$rec" >rec.json &&
	bcg inspect --json "$src" >src.json &&
	"$PYTHON3" - rec.json src.json <<-\PY
	import json, sys
	rec = json.load(open(sys.argv[1]))
	src = json.load(open(sys.argv[2]))
	# replay without --tokens runs the largest capture size
	big = max(src["variants"], key=lambda v: v["tokens"])
	segs = [src["segments"][i["index"]] for i in big["items"] if i["kind"] == "segment"]
	got = [rec["segments"][i["index"]] for v in rec["variants"] for i in v["items"]
	       if i["kind"] == "segment"]
	assert len(got) == len(segs) == 1, (len(got), len(segs))
	def nodes(s):
	    return [(n["type"], n["kernel"], n["grid"], n["block"], n["shmem"])
	            for n in s["nodes"]]
	assert nodes(got[0]) == nodes(segs[0]), (nodes(got[0]), nodes(segs[0]))
	def edges(s):
	    return sorted((e["from"], e["to"]) for e in s["edges"])
	assert edges(got[0]) == edges(segs[0]), (edges(got[0]), edges(segs[0]))
	PY
'

test_expect_success 'diff: a recording against itself is the same' '
	bcg diff "$rec" "$rec" >out
'

test_expect_success '!CUDA' 'instantiate without a GPU says why and exits 3' '
	test_expect_code 3 bcg instantiate "$rec" >out 2>err &&
	test_grep "a recorded plan replays only on a GPU" err
'

test_done
