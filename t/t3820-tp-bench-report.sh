#!/bin/sh
test_description='bench --tp N over host ranks; report with one Nsight Systems report per rank'
. "$(dirname "$0")/test-lib.sh"

test "${BCG_HAVE_SQLITE:-no}" = yes && test_set_prereq SQLITE
bcg --version | grep -q "plan format 1\.[5-9]" && test_set_prereq TP_PLAN
if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
	test_set_prereq JSONSCHEMA
fi

# A small MLP and a vocabulary-parallel head: at --tp 2 the sharding pass
# inserts down.all_reduce (y, [4, 8] f32: 128 bytes at T=4) and
# lm_head.all_gather (logits, [4, 32] f32: 512 bytes); rank programs of 6
# ops: up, down, down.all_reduce, down.add, lm_head, lm_head.all_gather.
tp_mlp add head >mlp.yaml

test_expect_success 'bench --tp 2: rank 0 prints its table, both ranks and their maximum, the collectives by name' '
	mkdir tmp &&
	TMPDIR=$PWD/tmp bcg bench -q --backend host --steps 3 --warmup 1 --tp 2 mlp.yaml >out &&
	test_grep "^ranks    2 (tensor-parallel; threads); this table is rank 0'"'"'s$" out &&
	test_grep "^eager  *0  *6 " out &&
	test_grep "^breakable  *2  *2 " out &&
	test_grep "^full  *1  *0 " out &&
	test_grep "^  2 breaks: a collective: every rank must launch it at once$" out &&
	test_grep "^  0  .* ms  *2  *640 B$" out &&
	test_grep "^  1  .* ms  *2  *640 B$" out &&
	test_grep "^  max  .* ms  *2  *640 B$" out &&
	test_grep "^  1 all_reduce of 128 B: down.all_reduce$" out &&
	test_grep "^  1 all_gather of 512 B: lm_head.all_gather$" out &&
	test -z "$(ls -A tmp)"
'

test_expect_success PYTHON3 'bench --tp 2 --json: every rank, the maximum of each figure, the collectives' '
	bcg bench -q --backend host --steps 3 --warmup 1 --tp 2 --json mlp.yaml >bench.json &&
	"$PYTHON3" - bench.json <<-\EOT
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["world"] == 2 and d["nccl_version"] == 0, d
	assert [r["rank"] for r in d["ranks"]] == [0, 1]
	for r in d["ranks"]:
	    assert r["collectives"] == 2 and r["collective_bytes"] == 640, r
	    b = r["modes"][1]
	    assert b["mode"] == "breakable" and b["collective_breaks"] == 2 and b["breakpoints"] == 2, b
	    assert r["modes"][2]["collective_breaks"] == 0
	for m in range(3):
	    want = max(r["modes"][m]["step_ms"] for r in d["ranks"])
	    assert d["max"]["modes"][m]["step_ms"] == want, (m, want)
	assert d["ranks"][0]["modes"][0]["step_ms"] == d["modes"][0]["step_ms"]
	assert [(c["name"], c["kind"], c["bytes"]) for c in d["collectives"]] == [
	    ("down.all_reduce", "all_reduce", 128), ("lm_head.all_gather", "all_gather", 512)], d["collectives"]
	EOT
'

test_expect_success JSONSCHEMA 'bench --tp 2 --json follows its schema' '
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$BCG_SRC_DIR/formats/json/bench.schema.json" \
		bench.json
'

test_expect_success 'bench --tp: a script that cannot split, and a trace, refused' '
	test_expect_code 2 bcg bench --backend host --tp 3 mlp.yaml 2>err &&
	test_grep "^bcgtool: mlp.yaml:[0-9]*:[0-9]*: --tp 3: " err &&
	test_expect_code 2 bcg bench --backend host --tp 2 \
		--synthetic requests=2,rate=10,prompt=4,output=2,seed=1 mlp.yaml 2>err &&
	test_grep "^bcgtool bench: --tp does not apply to a trace" err &&
	test_expect_code 2 bcg bench --backend host --tp 0 mlp.yaml 2>err &&
	test_grep "^bcgtool bench: --tp takes a number of ranks from 1 to 64, not '"'"'0'"'"'$" err
'

test_expect_success TP_PLAN 'setup: the breakable plan at --tp 2, and one of one rank' '
	bcg capture -q --backend host --tp 2 --mode breakable --tokens 4 -o tp.plan mlp.yaml \
		>/dev/null &&
	bcg capture -q --backend host --mode breakable --tokens 4 -o one.plan mlp.yaml >/dev/null
'

test_expect_success SQLITE,TP_PLAN,PYTHON3 'setup: one synthetic export per rank (t/nsys-ranks.py)' '
	"$PYTHON3" "$TEST_DIRECTORY/nsys-ranks.py" r0.sqlite 0 &&
	"$PYTHON3" "$TEST_DIRECTORY/nsys-ranks.py" r1.sqlite 1 &&
	"$PYTHON3" "$TEST_DIRECTORY/nsys-ranks.py" plain.sqlite 0 ""
'

# The hand-made figures (nsys-ranks.py): the all_reduce takes 1200 ns on
# rank 0 and 1300 on rank 1, the all_gather 800 and 850; three steps each.
test_expect_success SQLITE,TP_PLAN,PYTHON3 'report of both ranks: each rank'"'"'s kernels to its breakpoints, the collectives side by side' '
	bcg report r0.sqlite r1.sqlite tp.plan >out &&
	test_grep "^== rank 0 of 2 ==$" out &&
	test_grep "^== rank 1 of 2 ==$" out &&
	test $(grep -c "^kernels   6 in the report: 6 attributed (0 graph nodes, 6 in breakpoints), 0 unattributed in steps, 0 outside the steps$" out) = 2 &&
	test_grep "^     2  rank 1 step 2 " out &&
	sed -n "/^== collectives/,\$p" out >coll &&
	test_grep "^== collectives (2; kernel time, mean per step of each rank) ==$" coll &&
	test_grep "^  down.all_reduce  *all_reduce  *128 B eager  *1.0  *1.20 us  *1.30 us  *1.30 us$" coll &&
	test_grep "^  lm_head.all_gather  *all_gather  *512 B eager  *1.0  *0.80 us  *0.85 us  *0.85 us$" coll &&
	test_grep "^  all  *2.00 us  *2.15 us  *2.15 us$" coll
'

# NCCL launches a non-blocking communicator's kernels from a thread of
# its own while the step's thread waits in the breakpoint: the launch is
# placed by time, on a thread that holds no step.
test_expect_success SQLITE,TP_PLAN,PYTHON3 'report: a collective launched from a library'"'"'s own thread counts in its breakpoint' '
	NSYS_RANKS_PROXY=1 "$PYTHON3" "$TEST_DIRECTORY/nsys-ranks.py" p0.sqlite 0 &&
	NSYS_RANKS_PROXY=1 "$PYTHON3" "$TEST_DIRECTORY/nsys-ranks.py" p1.sqlite 1 &&
	bcg report p0.sqlite p1.sqlite tp.plan >out &&
	test $(grep -c "^kernels   6 in the report: 6 attributed (0 graph nodes, 6 in breakpoints), 0 unattributed in steps, 0 outside the steps$" out) = 2 &&
	sed -n "/^== collectives/,\$p" out >coll &&
	test_grep "^  down.all_reduce  *all_reduce  *128 B eager  *1.0  *1.20 us  *1.30 us  *1.30 us$" coll
'

test_expect_success SQLITE,TP_PLAN,PYTHON3 'report --json of both ranks: every rank'"'"'s report follows the one-rank schema' '
	bcg report --json r0.sqlite r1.sqlite tp.plan >rep.json &&
	"$PYTHON3" - rep.json <<-\EOT &&
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["world"] == 2 and [r["rank"] for r in d["ranks"]] == [0, 1]
	for r in d["ranks"]:
	    json.dump(r["report"], open("rank%d.json" % r["rank"], "w"))
	c = {x["name"]: x for x in d["collectives"]}
	ar, ag = c["down.all_reduce"], c["lm_head.all_gather"]
	assert ar["bytes"] == 128 and ag["bytes"] == 512
	assert [r["per_step_ns"] for r in ar["ranks"]] == [1200, 1300] and ar["max_per_step_ns"] == 1300
	assert [r["per_step_ns"] for r in ag["ranks"]] == [800, 850] and ag["max_per_step_ns"] == 850
	assert all(r["form"] == "eager" and r["kernels_per_step"] == 1 for x in (ar, ag) for r in x["ranks"])
	EOT
	"$PYTHON3" "$TEST_DIRECTORY/json-schema-check.py" "$BCG_SRC_DIR/formats/report-schema.json" rank0.json &&
	"$PYTHON3" "$TEST_DIRECTORY/json-schema-check.py" "$BCG_SRC_DIR/formats/report-schema.json" rank1.json
'

test_expect_success SQLITE,TP_PLAN,PYTHON3 'report: a wrong count of reports, or a report of another rank, refused with the reason' '
	test_expect_code 2 bcg report r0.sqlite tp.plan 2>err &&
	echo "bcgtool: tp.plan: a plan of 2 ranks takes one report per rank, rank 0'"'"'s first: 1 given" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg report r0.sqlite r1.sqlite r1.sqlite tp.plan 2>err &&
	echo "bcgtool: tp.plan: a plan of 2 ranks takes one report per rank, rank 0'"'"'s first: 3 given" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg report r1.sqlite r0.sqlite tp.plan 2>err &&
	echo "bcgtool: r1.sqlite: rank 0 of tp.plan: its steps are rank 1'"'"'s ('"'"'rank 1 step 0'"'"'), not rank 0'"'"'s: give one report per rank, in rank order (rank 0'"'"'s first)" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg report r0.sqlite plain.sqlite tp.plan 2>err &&
	echo "bcgtool: plain.sqlite: rank 1 of tp.plan: its steps name no rank ('"'"'step 0'"'"'): a replay of one rank, not rank 1'"'"'s of the plan" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg report r0.sqlite r1.sqlite one.plan 2>err &&
	echo "bcgtool: one.plan: a plan of one rank takes one report, not 2 (several reports are the ranks of a tensor-parallel plan)" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg report r0.sqlite one.plan 2>err &&
	echo "bcgtool: r0.sqlite: its steps are a rank'"'"'s of a tensor-parallel replay ('"'"'rank 0 step 0'"'"'), but the plan is of one rank" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg report --svg x.svg r0.sqlite r1.sqlite tp.plan 2>err &&
	test_grep "^bcgtool report: --svg draws one rank: give it with one report" err
'

test_done
