#!/bin/sh
test_description='bcgtool record: usage, the command'"'"'s exit status, plans from recording logs'
. "$(dirname "$0")/test-lib.sh"

# Every step but the first few runs without a GPU: BCG_RECORD_ASSUME_DEVICE
# skips record's check for one, and t/helper/record-fake writes the log a
# CUDA program would make under the recording library (see that file).
fake="$BCG_BUILD_DIR/t/helper/record-fake"
test -f "$BCG_BUILD_DIR/bcgtool/record/.libs/libbcg-record.so" && test_set_prereq RECORD_LIB

test_expect_success 'usage: no plan, no command, a bad snapshot size' '
	test_expect_code 2 bcg record -- true 2>err &&
	grep "no plan given" err &&
	test_expect_code 2 bcg record -o p.plan 2>err &&
	grep "no command given" err &&
	test_expect_code 2 bcg record --snapshot=lots -o p.plan -- true 2>err &&
	grep "snapshot takes a size" err &&
	test_expect_code 2 bcg record --step= -o p.plan -- true &&
	! test -e p.plan
'

test_expect_success 'the command'"'"'s own options are not record'"'"'s' '
	test_expect_code 127 bcg record -o p.plan -- no-such-command-bcg --json -o x 2>err &&
	grep "no-such-command-bcg: command not found" err
'

test_expect_success 'a command not found: 127, as a shell says' '
	test_expect_code 127 bcg record -o p.plan -- no-such-command-bcg 2>err &&
	grep "command not found" err &&
	test_expect_code 127 bcg record -o p.plan -- ./no/such/path 2>err &&
	! test -e p.plan
'

test_expect_success 'a command not executable: 126' '
	echo "echo hi" >not-exec.sh &&
	chmod -x not-exec.sh &&
	test_expect_code 126 bcg record -o p.plan -- ./not-exec.sh 2>err &&
	grep "permission denied" err
'

test_expect_success !CUDA,RECORD_LIB 'without a GPU: record says so and exits 3' '
	test_expect_code 3 bcg record -o p.plan -- true 2>err &&
	grep "record needs a GPU" err &&
	! test -e p.plan
'

BCG_RECORD_ASSUME_DEVICE=1
export BCG_RECORD_ASSUME_DEVICE

test_expect_success RECORD_LIB 'a failing command: its status passes through, no plan' '
	test_expect_code 1 bcg record -o p.plan -- false 2>err &&
	grep "exited with status 1: no plan written" err &&
	test_expect_code 7 bcg record -o p.plan -- sh -c "exit 7" &&
	! test -e p.plan
'

test_expect_success RECORD_LIB 'a command killed by a signal: 128 + the signal' '
	test_expect_code 143 bcg record -o p.plan -- sh -c "kill -TERM \$\$" 2>err &&
	grep "killed by signal 15" err &&
	! test -e p.plan
'

test_expect_success RECORD_LIB 'a failing command leaves an older plan alone' '
	echo older >p.plan &&
	test_expect_code 5 bcg record -o p.plan -- sh -c "exit 5" &&
	echo older >expect &&
	test_cmp expect p.plan &&
	rm p.plan
'

test_expect_success RECORD_LIB 'a command doing no GPU work: exit 1, no plan' '
	test_expect_code 1 bcg record -o p.plan -- true 2>err &&
	grep "did no GPU work" err &&
	test_expect_code 1 bcg record -o p.plan -- "$fake" idle 2>err &&
	grep "did no GPU work" err &&
	! test -e p.plan
'

test_expect_success RECORD_LIB '--snapshot: 256 MiB without a size, 0 for all, or the size given' '
	test_expect_code 1 bcg record --snapshot -o p.plan -- \
		sh -c "echo \"\$BCG_RECORD_SNAPSHOT\" >snap.txt" &&
	echo 268435456 >expect &&
	test_cmp expect snap.txt &&
	test_expect_code 1 bcg record --snapshot=0 -o p.plan -- \
		sh -c "echo \"\$BCG_RECORD_SNAPSHOT\" >snap.txt" &&
	echo 0 >expect &&
	test_cmp expect snap.txt &&
	test_expect_code 1 bcg record --snapshot=64M -o p.plan -- \
		sh -c "echo \"\$BCG_RECORD_SNAPSHOT\" >snap.txt" &&
	echo 67108864 >expect &&
	test_cmp expect snap.txt &&
	test_expect_code 1 bcg record -o p.plan -- \
		sh -c "echo \"x\${BCG_RECORD_SNAPSHOT-unset}\" >snap.txt" &&
	echo xunset >expect &&
	test_cmp expect snap.txt &&
	! test -e p.plan
'

test_expect_success RECORD_LIB 'a command capturing nothing: exit 1, no plan' '
	test_expect_code 1 bcg record -o p.plan -- "$fake" eager 2>err &&
	grep "launched no CUDA graph" err &&
	! test -e p.plan
'

test_expect_success RECORD_LIB 'a recording becomes a plan' '
	bcg record -o rec.plan -- "$fake" breakable 4 2>err &&
	grep "recorded rec.plan: 4 steps in 1 variant, 2 segments, 1 breaks" err &&
	test -f rec.plan &&
	! test -e rec.plan.tmp
'

test_expect_success RECORD_LIB,PYTHON3 '--json: the summary' '
	bcg record --json -o rec2.plan -- "$fake" breakable 5 >sum.json &&
	"$PYTHON3" -c "
import json, sys
s = json.load(open(\"sum.json\"))
assert s[\"status\"] == 0, s
p = s[\"plans\"][0]
assert p[\"path\"] == \"rec2.plan\", p
want = dict(steps=5, variants=1, segments=2, breaks=1, graph_launches=10,
            eager_launches=5, processes=1, devices=1, modules=1, modules_without_image=0,
            allocations=1)
for k, v in want.items():
    assert p[k] == v, (k, p[k], v)
# graph A (3 nodes), graph B (2 nodes), one eager launch
assert p[\"launches\"] == 6, p
"
'

test_expect_success RECORD_LIB '--step: NVTX ranges make the steps; a name no range has: exit 1' '
	bcg record --step step -o nvtx.plan -- "$fake" nvtx 3 2>err &&
	grep "3 steps in 1 variant" err &&
	test_expect_code 1 bcg record --step decode -o none.plan -- "$fake" nvtx 3 2>err &&
	grep "no NVTX range named .decode." err &&
	! test -e none.plan
'

test_expect_success RECORD_LIB 'a process that forks: one plan per process, PLAN.PID' '
	mkdir forks &&
	bcg record -o forks/f.plan -- "$fake" fork 2 2>err &&
	! test -e forks/f.plan &&
	ls forks >names &&
	test "$(wc -l <names)" -eq 2 &&
	grep "^f\.plan\.[0-9][0-9]*$" names >matched &&
	test "$(wc -l <matched)" -eq 2
'

test_expect_success RECORD_LIB 'a child with nothing to plan gets none; its parent its own' '
	mkdir forks2 &&
	bcg record -o forks2/f.plan -- "$fake" fork-eager 2 2>err &&
	grep "launched no CUDA graph.*no plan for it" err &&
	ls forks2 >names &&
	test "$(wc -l <names)" -eq 1 &&
	grep "^f\.plan\.[0-9][0-9]*$" names
'

test_expect_success RECORD_LIB '--follow-forks: one plan for them all' '
	bcg record --follow-forks -o all.plan -- "$fake" fork 2 2>err &&
	grep "recorded all.plan: 5 steps" err &&
	! ls all.plan.* 2>/dev/null
'

test_expect_success RECORD_LIB 'the scratch logs are removed' '
	mkdir tmp &&
	TMPDIR=$PWD/tmp bcg record -o t.plan -- "$fake" breakable 2 2>/dev/null &&
	ls tmp >left &&
	test "$(wc -l <left)" -eq 0
'

test_expect_success RECORD_LIB,PYTHON3 'inspect reads a recorded plan' '
	bcg inspect --json rec.plan >rec.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"rec.json\"))
assert \"variants\" in d, d.keys()
"
'

# The recording library in a process without a GPU: it loads (with the
# toolkit's driver stub where there is no driver), follows NVTX, and writes
# a whole log at exit. bcgtool's own host replay pushes the ranges.
lib="$BCG_BUILD_DIR/bcgtool/record/.libs/libbcg-record.so"
dump="$BCG_BUILD_DIR/t/helper/reclog-dump"
stubs=
if ! test_have_prereq CUDA; then
	for d in "${CUDA_HOME:-}" /usr/local/cuda; do
		test -n "$d" && test -f "$d/lib64/stubs/libcuda.so" && {
			mkdir -p stub && ln -sf "$d/lib64/stubs/libcuda.so" stub/libcuda.so.1 &&
			stubs=$PWD/stub; break; }
	done
fi
{ test_have_prereq CUDA || test -n "$stubs"; } && test_set_prereq LOADABLE

test_expect_success RECORD_LIB,NVTX,LOADABLE 'the library follows NVTX and ends its log at exit' '
	bcg capture --backend host -o host.plan "$SAMPLES/llama-decode-small.yaml" >/dev/null 2>&1 &&
	mkdir logs &&
	LD_LIBRARY_PATH=$stubs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} NVTX_INJECTION64_PATH="$lib" \
		BCG_RECORD_DIR=$PWD/logs bcg replay --backend host --steps 2 --warmup 1 host.plan \
		>/dev/null &&
	"$dump" logs/*.bcglog >dump &&
	head -2 dump >head &&
	printf "version 1\nprocess\n" >expect &&
	test_cmp expect head &&
	tail -1 dump >last &&
	echo end >expect &&
	test_cmp expect last &&
	# A warm-up step and two timed ones at least (replay may run more).
	test "$(grep -c "^range-push step " dump)" -ge 3 &&
	test "$(grep -c "^range-push" dump)" -eq "$(grep -c "^range-pop" dump)"
'

test_expect_success RECORD_LIB,NVTX,LOADABLE 'record: a program whose only GPU-side trace is NVTX did no GPU work' '
	LD_LIBRARY_PATH=$stubs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
	test_expect_code 1 bcg record -o host-rec.plan -- \
		"$BCGTOOL" replay --backend host --steps 2 host.plan >/dev/null 2>err &&
	grep "did no GPU work" err &&
	! test -e host-rec.plan
'

# The replay runs with BCG_FEED_NODE=0: the node that writes a step's
# feeds is no node of the plan, and gets new words every step, so that a
# recording would see each launch of the first segment as another graph
# (bcgtool(1), BCG_FEED_NODE).
test_expect_success CUDA,RECORD_LIB,PYTHON3 'bcgtool replay, recorded: the plan it replayed, segment for segment' '
	bcg capture --backend cuda --tokens 4 -o small.plan "$SAMPLES/llama-decode-small.yaml" \
		>/dev/null 2>&1 &&
	BCG_FEED_NODE=0 bcg record -o replayed.plan -- "$BCGTOOL" replay --backend cuda --tokens 4 \
		--steps 20 --warmup 2 small.plan >/dev/null &&
	bcg inspect --json small.plan >small.json &&
	bcg inspect --json replayed.plan >replayed.json &&
	"$PYTHON3" -c "
import json
a = json.load(open(\"small.json\")); b = json.load(open(\"replayed.json\"))
va = [v for v in a[\"variants\"] if v[\"tokens\"] == 4][0]
# The recording: one variant (the replay ran one shape), seen every step.
assert len(b[\"variants\"]) == 1, [v[\"seen\"] for v in b[\"variants\"]]
vb = b[\"variants\"][0]
assert vb[\"seen\"] >= 20, vb[\"seen\"]
assert [i[\"kind\"] for i in va[\"items\"]] == [i[\"kind\"] for i in vb[\"items\"]], \
    (va[\"items\"], vb[\"items\"])
for ia, ib in zip(va[\"items\"], vb[\"items\"]):
    if ia[\"kind\"] != \"segment\":
        continue
    sa = a[\"segments\"][ia[\"index\"]]; sb = b[\"segments\"][ib[\"index\"]]
    assert len(sa[\"nodes\"]) == len(sb[\"nodes\"]), (sa[\"index\"], len(sa[\"nodes\"]), len(sb[\"nodes\"]))
    assert [(n[\"grid\"], n[\"block\"]) for n in sa[\"nodes\"]] == \
           [(n[\"grid\"], n[\"block\"]) for n in sb[\"nodes\"]], sa[\"index\"]
    assert len(sa[\"edges\"]) == len(sb[\"edges\"]), sa[\"index\"]
print(\"segments and breaks match:\", len(va[\"items\"]), \"items\")
"
'

# The recorded replay loads each module with cuModuleLoadData: the log
# links each load's module to the CUmodule returned (module-handle), which
# is how a kernel whose name several modules hold finds its own.
test_expect_success CUDA,RECORD_LIB,PYTHON3 'module loads are linked to their handles' '
	BCG_RECORD_KEEP_LOGS=1 bcg record -o again.plan -- "$BCGTOOL" replay --steps 3 \
		--warmup 1 replayed.plan >/dev/null 2>err &&
	logdir=$(sed -n "s/.*recording logs kept in //p" err) &&
	test -n "$logdir" &&
	"$dump" "$logdir"/*.bcglog >dump2 &&
	rm -rf "$logdir" &&
	test "$(grep -c "^module-handle$" dump2)" -ge 1 &&
	test "$(grep -c "^module-handle$" dump2)" -le "$(grep -c "^module$" dump2)"
'

test_done
