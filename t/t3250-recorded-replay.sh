#!/bin/sh
test_description='bcgtool instantiate and replay of recorded plans'
. "$(dirname "$0")/test-lib.sh"

# t/helper/recorded-sample.h describes the plan: one variant ("step") of
# a segment of four nodes (two kernels, a copy, a memset) and a break
# "tail" of three eager launches, from a module kept as PTX text.
rp="$BCG_BUILD_DIR/t/helper/recorded-plan"
schemas="$BCG_SRC_DIR/formats/json"
if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
	test_set_prereq JSONSCHEMA
fi

# check NAME FILE: FILE is valid under formats/json/NAME.schema.json.
check() {
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$schemas/$1.schema.json" "$2"
}
script_plan="$TEST_DATA/plans/llama-decode-small.cuda.plan"

test_expect_success 'setup: recorded plans, replayable and not' '
	"$rp" rec.plan &&
	"$rp" --no-image noimage.plan &&
	"$rp" --host-node host.plan &&
	"$rp" --stray stray.plan &&
	"$rp" --foreign foreign.plan &&
	"$rp" --offsets offsets.plan &&
	bcg inspect rec.plan >out &&
	test_grep "format 1.4" out &&
	bcg inspect offsets.plan >out &&
	test_grep "format 1.7" out
'

test_expect_success '!CUDA' 'without a usable GPU instantiate says why and exits 3' '
	test_expect_code 3 bcg instantiate rec.plan >out 2>err &&
	test_grep "^bcgtool: rec.plan: a recorded plan replays only on a GPU: " err &&
	test ! -s out
'

test_expect_success '!CUDA' 'without a usable GPU replay says why and exits 3' '
	test_expect_code 3 bcg replay --steps 2 rec.plan >out 2>err &&
	test_grep "^bcgtool: rec.plan: a recorded plan replays only on a GPU: " err &&
	test ! -s out
'

test_expect_success 'the host backend cannot run a recorded plan: exit 3' '
	test_expect_code 3 bcg instantiate --backend host rec.plan 2>err &&
	test_grep "^bcgtool: rec.plan: a recorded plan replays only on a GPU (the cuda backend): the host backend cannot run its kernels$" err &&
	test_expect_code 3 bcg replay --backend host rec.plan 2>err &&
	test_grep "the host backend cannot run its kernels" err
'

test_expect_success 'a module without its image is named and refused: exit 2' '
	test_expect_code 2 bcg instantiate noimage.plan 2>err &&
	test_grep "^bcgtool: noimage.plan: cannot replay: variant 1, segment 0, node 0: kernel k_write comes from module 0 (recorded-sample.ptx), whose image was not kept (not kept for the test): it cannot be loaded$" err &&
	test_expect_code 2 bcg replay noimage.plan 2>err &&
	test_grep "whose image was not kept" err
'

test_expect_success 'a node replay does not rebuild is named and refused: exit 2' '
	test_expect_code 2 bcg instantiate host.plan 2>err &&
	test_grep "^bcgtool: host.plan: cannot replay: variant 1, segment 0, node 4: a host node, which replay does not rebuild (inspect shows it)$" err &&
	test_expect_code 2 bcg replay --backend host host.plan 2>err &&
	test_grep "node 4: a host node" err
'

test_expect_success 'an address in no recorded allocation is named and refused: exit 2' '
	test_expect_code 2 bcg replay stray.plan 2>err &&
	test_grep "segment 0, node 1: kernel k_read (launch 1): the parameter word at byte 16 held 0x10000, in no recorded allocation$" err
'

test_expect_success 'the shipped recorded plan keeps no image of cuBLAS: refused by name' '
	test_expect_code 2 bcg instantiate "$TEST_DATA/recorded.plan" 2>err &&
	test_grep "break cublasLt: kernel sm90_xmma_gemm_f16f16_f32_tn_n_tilesize128x128x64 comes from module 1 (libcublasLt.so.13), whose image was not kept" err
'

test_expect_success 'options of the other kind of plan are usage errors' '
	test_expect_code 2 bcg replay --tokens 1 rec.plan 2>err &&
	test_grep "apply to script plans only" err &&
	test_expect_code 2 bcg replay --check rec.plan 2>err &&
	test_expect_code 2 bcg replay --backend host --variant 1 "$script_plan" 2>err &&
	test_grep "apply to recorded plans only" err &&
	test_expect_code 2 bcg instantiate --backend host --rebase "$script_plan" 2>err &&
	test_grep "applies to recorded plans only" err &&
	test_expect_code 2 bcg replay --trace /dev/null rec.plan 2>err &&
	test_expect_code 2 bcg replay --fill some rec.plan 2>err &&
	test_grep "fill: some: snapshot, zeros or random" err &&
	test_expect_code 2 bcg replay --pace steady rec.plan 2>err &&
	test_grep "^bcgtool replay: --pace: steady: step, none or recorded$" err &&
	test_expect_code 2 bcg replay --backend host --pace none "$script_plan" 2>err &&
	test_grep "pace and --flush-l2 apply to recorded plans only" err &&
	test_expect_code 2 bcg replay --backend host --flush-l2 "$script_plan" 2>err &&
	test_grep "pace and --flush-l2 apply to recorded plans only" err &&
	test_expect_code 2 bcg replay --flush-l2 --trace /dev/null rec.plan 2>err
'

test_expect_success '!CUDA' '--pace and --flush-l2 parse, then the GPU is missing: exit 3' '
	test_expect_code 3 bcg replay --pace none --flush-l2 rec.plan >out 2>err &&
	test_grep "a recorded plan replays only on a GPU" err &&
	test_expect_code 3 bcg replay --pace step rec.plan 2>err
'

test_expect_success '--pace recorded needs start offsets: refused by name, exit 2' '
	test_expect_code 2 bcg replay --pace recorded rec.plan >out 2>err &&
	test_grep "^bcgtool: rec.plan: --pace recorded: variant 1 has no recorded start offsets (its item 1, break tail (3 launches), has none): a plan written before format 1.7, or recorded without GPU times; record the program again$" err &&
	test ! -s out &&
	test_expect_code 2 bcg replay --pace recorded --variant step rec.plan 2>err &&
	test_grep "variant 1 has no recorded start offsets" err &&
	# a script plan has no recording to pace by
	test_expect_code 2 bcg replay --backend host --pace recorded "$script_plan" 2>err &&
	test_grep "pace and --flush-l2 apply to recorded plans only" err
'

test_expect_success '!CUDA' '--pace recorded of a plan with offsets parses, then the GPU is missing: exit 3' '
	test_expect_code 3 bcg replay --pace recorded --flush-l2 offsets.plan >out 2>err &&
	test_grep "a recorded plan replays only on a GPU" err &&
	test ! -s out
'

test_expect_success 'the help names --pace and --flush-l2' '
	bcg replay --help >out &&
	test_grep "^      --pace P     recorded plans: step (default" out &&
	test_grep "^                   running ahead) or recorded (as step, with the GPU$" out &&
	test_grep "^      --flush-l2   recorded plans: write over twice the L2" out
'

test_expect_success 'a variant that is not there: exit 2' '
	test_expect_code 2 bcg replay --variant 2 rec.plan 2>err &&
	test_grep "^bcgtool: rec.plan: --variant: no variant 2: the plan has variants 1 to 1$" err &&
	test_expect_code 2 bcg replay --variant decode rec.plan 2>err &&
	test_grep "no variant is labelled \"decode\"" err
'

test_expect_success CUDA 'instantiate: the segment rebuilt matches its recording' '
	bcg instantiate rec.plan >out &&
	test_grep "^1 segments: 1 match, 0 drift, 0 unchecked$" out &&
	test_grep "^      1        0          4/4      match  $" out &&
	test_grep "^memory   9 allocations, 0.0 MiB, fill snapshot: " out &&
	# at the recorded addresses, or the first allocation not is named
	if ! grep -q "all at their recorded addresses" out; then
		test_grep "^placing  allocation [0-9]* (0x7f2[0-9a-f]*, 4096 bytes; range 0x7f2000000000 +0x[0-9a-f]*) not at its recorded address: " out
	fi
'

test_expect_success CUDA '--rebase: every allocation moved, still a match' '
	bcg instantiate --rebase rec.plan >out &&
	test_grep "^1 segments: 1 match, 0 drift, 0 unchecked$" out &&
	test_grep "all rebased" out &&
	! grep -q "^placing" out
'

test_expect_success CUDA,PYTHON3 'replay --json: the step and its items against the recorded times' '
	bcg replay --steps 5 --warmup 1 --json rec.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"origin\"] == \"recorded\" and d[\"steps\"] == 5, d
assert d[\"memory\"][\"allocations\"] == 9 and d[\"memory\"][\"snapshots\"] == 1, d
v, = d[\"variants\"]
assert v[\"variant\"] == 1 and v[\"label\"] == \"step\" and v[\"seen\"] == 5, v
assert v[\"instantiate\"] == {\"matched\": 1, \"drifted\": 0}, v
assert v[\"step_ms\"][\"median\"] > 0 and v[\"recorded_ms\"] == 0.06, v
assert abs(v[\"ratio\"] - v[\"step_ms\"][\"median\"] / 0.06) < 1e-6, v
# busy: the items recorded 0.02 + 0.03 ms; the step span, 0.06 ms, has a
# host gap of 0.01 ms between them
assert abs(v[\"busy\"][\"recorded_ms\"] - 0.05) < 1e-9, v
assert abs(v[\"busy\"][\"ratio\"] - v[\"step_ms\"][\"median\"] / 0.05) < 1e-6, v
assert [(i[\"kind\"], i[\"name\"], i[\"recorded_ms\"]) for i in v[\"items\"]] == \
	[(\"segment\", \"\", 0.02), (\"breakpoint\", \"tail\", 0.03)], v
# the busy pass: min(steps, 10) held steps, the GPU time alone
assert d[\"pace\"] == \"step\" and d[\"flush_l2\"] is False and d[\"busy_steps\"] == 5, d
b = v[\"busy\"]
assert b[\"replay_ms\"] > 0 and abs(b[\"replay_ratio\"] - b[\"replay_ms\"] / 0.05) < 1e-6, b
for i, rec in zip(v[\"items\"], (0.02, 0.03)):
	assert i[\"busy_ms\"] > 0 and abs(i[\"busy_ratio\"] - i[\"busy_ms\"] / rec) < 1e-6, i
"
'

test_expect_success CUDA,PYTHON3 'replay --pace none --flush-l2: back to back, flushed, busy measured' '
	bcg replay --steps 30 --warmup 2 --pace none --flush-l2 --json rec.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"pace\"] == \"none\" and d[\"flush_l2\"] is True and d[\"busy_steps\"] == 10, d
v, = d[\"variants\"]
assert v[\"step_ms\"][\"median\"] > 0 and v[\"busy\"][\"replay_ms\"] > 0, v
assert all(i[\"median_ms\"] > 0 and i[\"busy_ms\"] > 0 for i in v[\"items\"]), v
" &&
	bcg replay --steps 30 --warmup 2 --pace none --flush-l2 rec.plan >out &&
	test_grep "^steps    30 per variant (after 2 warm-up), paced none (back to back)$" out &&
	test_grep "^flush    L2 flushed before every step ([0-9]* MiB written over)$" out &&
	test_grep "^busy     10 held steps: each issued whole behind a hold, the GPU.s own time$" out &&
	test_grep "^  item  *replay  *recorded  *ratio  *gpu busy  *busy/rec$" out &&
	test_grep "^  step against the recorded GPU busy time  .* 0.050 ms  *[0-9.]*  *[0-9.]* ms  *[0-9.]*$" out
'

# offsets.plan: the segment took 20 us and the break started 30 us after
# it (recorded-sample.h): one gap of 10 us = 0.01 ms. The gap kernel spins
# at least the gap less its own measured cost (on the GPU's timer, whose
# ticks may be up to a microsecond or so coarse), inside the timed step:
# so the step is at least that long, however fast the items run. A
# property of the pacing, not a bound on speed.
test_expect_success CUDA,PYTHON3 'replay --pace recorded: the recorded gap is put in the step' '
	bcg replay --steps 20 --warmup 2 --pace recorded --json offsets.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"pace\"] == \"recorded\", d
v, = d[\"variants\"]
p = v[\"paced\"]
assert p[\"gaps\"] == 1 and abs(p[\"gap_ms\"] - 0.01) < 1e-9, p
assert p[\"gap_cost_us\"] >= 0, p
floor = p[\"gap_ms\"] - p[\"gap_cost_us\"] / 1e3 - 0.002
assert v[\"step_ms\"][\"median\"] >= floor, (v[\"step_ms\"], floor)
# the break follows the gap: its span from the segment end holds it
assert v[\"items\"][1][\"median_ms\"] >= floor, (v[\"items\"], floor)
assert v[\"recorded_ms\"] == 0.06, v
" &&
	bcg replay --steps 20 --warmup 2 --pace recorded offsets.plan >out &&
	test_grep "^steps    20 per variant (after 2 warm-up), paced recorded (each waited for, with the recorded idle gaps between its items)$" out &&
	test_grep "^  paced  *1 gap, 0.010 ms in all (a gap kernel costs [0-9.]* us, taken off each)$" out &&
	bcg replay --steps 2 --warmup 1 --pace recorded --json offsets.plan >paced.json &&
	if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
		check replay paced.json
	fi
'

test_expect_success CUDA 'replay: a table, every fill, by number and by label' '
	bcg replay --steps 3 --variant step --fill random --seed 3 rec.plan >out &&
	test_grep "^variant 1 \"step\": seen 5 times; instantiate 1 match, 0 drift$" out &&
	test_grep "^  seg 0 (4 nodes) .* 0.020 ms " out &&
	test_grep "^  break tail (3 launches) .* 0.030 ms " out &&
	test_grep "^  step (median) .* 0.060 ms " out &&
	test_grep "^  step against the recorded GPU busy time .* 0.050 ms " out &&
	bcg replay --steps 3 --variant 1 --fill zeros --rebase rec.plan >out &&
	test_grep "fill zeros: all rebased" out
'

test_expect_success CUDA 'a plan recorded on another architecture: instantiate reports the drift' '
	if nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
	   grep -q "^1[0-9]"; then
		return 0   # a device that runs sm_100 code loads the module
	fi &&
	test_expect_code 1 bcg instantiate foreign.plan >out &&
	test_grep "^drift    recorded on NVIDIA B200, sm_100, driver 13.1; here " out &&
	test_grep "^      1        0          0/4      drift  node 0: module 0 (recorded-sample.ptx) does not load on " out &&
	bcg instantiate --allow-drift foreign.plan >/dev/null &&
	test_expect_code 3 bcg replay foreign.plan 2>err &&
	test_grep "segment 0 cannot be rebuilt here: node 0: module 0" err
'

test_expect_success JSONSCHEMA 'the replay schema: a recorded replay as bcgtool-replay(1) lists it' '
	cat >doc.json <<-\EOF &&
	{"plan": "rec.plan", "origin": "recorded", "backend": "cuda", "device": "GPU",
	 "recorded_on": {"device": "GPU", "cc": 90, "driver": 13000},
	 "here": {"device": "GPU", "cc": 90, "driver": 13000}, "same_environment": true,
	 "memory": {"allocations": 9, "bytes": 36864, "fixed": 9, "rebased": 0,
	            "fill": "snapshot", "snapshots": 1, "memory_ms": 1.5},
	 "steps": 5, "warmup": 1, "pace": "step", "flush_l2": false, "busy_steps": 5,
	 "variants": [{"variant": 1, "label": "step", "seen": 5,
	               "instantiate": {"matched": 1, "drifted": 0},
	               "step_ms": {"median": 0.04, "p90": 0.05, "p99": 0.05, "mean": 0.04},
	               "recorded_ms": 0.05, "ratio": 0.8,
	               "busy": {"recorded_ms": 0.05, "ratio": 0.8, "replay_ms": 0.03,
	                        "replay_ratio": 0.6}, "host_ms": 0.01,
	               "items": [{"kind": "segment", "index": 0, "name": "", "median_ms": 0.01,
	                          "recorded_ms": null, "ratio": null, "busy_ms": 0.008,
	                          "busy_ratio": null}]}]}
	EOF
	check replay doc.json &&
	sed "s/\"seen\": 5/\"seen\": -1/" doc.json >bad.json &&
	test_must_fail check replay bad.json 2>err &&
	test_grep "variants/0/seen" err &&
	sed "s/\"pace\": \"step\"/\"pace\": \"steady\"/" doc.json >bad.json &&
	test_must_fail check replay bad.json 2>err &&
	# paced by the recording: the gaps reproduced, their total, a gap
	# kernel cost; all three or the object is wrong
	sed "s/\"pace\": \"step\"/\"pace\": \"recorded\"/; s/\"host_ms\": 0.01,/\"host_ms\": 0.01, \"paced\": {\"gaps\": 1, \"gap_ms\": 0.01, \"gap_cost_us\": 1.2},/" \
		doc.json >paced.json &&
	test_grep "\"paced\": {" paced.json &&
	check replay paced.json &&
	sed "s/, \"gap_cost_us\": 1.2//" paced.json >bad.json &&
	test_must_fail check replay bad.json 2>err &&
	# the keys a recorded replay always writes are required: without one
	# of them the document is not replay --json output
	for key in pace flush_l2 busy_steps busy/replay_ms busy/replay_ratio \
	           items/0/busy_ms items/0/busy_ratio; do
		"$PYTHON3" -c "
import json, sys
d = json.load(open(\"doc.json\"))
path = sys.argv[1].split(\"/\")
o = d if len(path) == 1 else d[\"variants\"][0]
for p in path[:-1]:
	o = o[int(p)] if p.isdigit() else o[p]
del o[path[-1]]
json.dump(d, open(\"bad.json\", \"w\"))
" "$key" &&
		test_must_fail check replay bad.json 2>err || return 1
	done
'

test_expect_success CUDA,JSONSCHEMA 'instantiate and replay --json follow their schemas' '
	bcg instantiate --json rec.plan >inst.json &&
	check instantiate inst.json &&
	bcg replay --steps 2 --warmup 1 --json rec.plan >replay.json &&
	check replay replay.json
'

test_done
