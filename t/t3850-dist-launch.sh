#!/bin/sh
test_description='ranks as processes (dist/launch.c) without a GPU: merged output prefixed by rank, the unique id handed from rank 0, the worst status, a rank that dies or hangs takes the others down within the timeout, no process left; the external launcher'"'"'s environment and store file'
. "$(dirname "$0")/test-lib.sh"

procs="$BCG_BUILD_DIR/t/helper/dist-procs"
test "${BCG_HAVE_NCCL:-no}" = yes && test_set_prereq NCCL

# none_left FILE: no process whose pid FILE lists ("RANK PID") still runs.
none_left() {
	test_file_not_empty "$1" &&
	while read -r _rank _pid; do
		if kill -0 "$_pid" 2>/dev/null; then
			echo >&2 "rank $_rank (pid $_pid) still runs"
			return 1
		fi
	done <"$1"
}

# took START MAX: fewer than MAX seconds since START (date +%s).
took_under() {
	_took=$(( $(date +%s) - $1 ))
	test "$_took" -lt "$2" || { echo >&2 "took $_took s, not under $2"; return 1; }
}

test_expect_success 'three ranks: every line of each, prefixed with its rank, the id rank 0 made' '
	rm -f pids &&
	BCG_TEST_PIDS=pids "$procs" --world 3 print >out 2>err &&
	sed "s/the id is .*/the id is ID/" out | sort >out.sorted &&
	cat >expect <<-\EOT &&
	[rank 0] rank 0 of 3: the id is ID
	[rank 0] unfinished 0
	[rank 1] rank 1 of 3: the id is ID
	[rank 1] unfinished 1
	[rank 2] rank 2 of 3: the id is ID
	[rank 2] unfinished 2
	EOT
	test_cmp expect out.sorted &&
	sort err >err.sorted &&
	cat >expect <<-\EOT &&
	[rank 0] rank 0: note
	[rank 1] rank 1: note
	[rank 2] rank 2: note
	EOT
	test_cmp expect err.sorted &&
	sed -n "s/.*the id is //p" out | sort -u >ids &&
	test $(wc -l <ids) = 1 &&
	pid0=$(sed -n "s/^0 //p" pids) &&
	test_grep "^id-of-pid-$pid0 *\$" ids &&
	none_left pids
'

test_expect_success 'the worst status of the ranks, each failed rank named' '
	test_expect_code 2 "$procs" --world 3 --timeout 30 status >out 2>err &&
	test_grep "^bcgtool: rank 1 exited with status 1\$" err &&
	test_grep "^bcgtool: rank 2 exited with status 2\$" err &&
	! grep "rank 0 exited" err
'

test_expect_success 'a rank killed mid-step: the one waiting in an all_reduce exits 3 at once, naming both' '
	rm -f pids &&
	start=$(date +%s) &&
	test_expect_code 3 env BCG_TEST_PIDS=pids "$procs" --world 2 --timeout 30 crash \
		>out 2>err &&
	took_under $start 10 &&
	test_grep "^bcgtool: rank 1 died of signal 9 (Killed)\$" err &&
	test_grep "^\[rank 0\] bcgtool: rank 0: collective step.3/all_reduce stopped: rank 1 died of signal 9 (Killed) (waited [0-9.]* s); aborting\$" err &&
	test_grep "^\[rank 0\] fake transport: rank 0: aborted\$" err &&
	test_grep "^bcgtool: rank 0 exited with status 3\$" err &&
	none_left pids
'

test_expect_success 'a rank that hangs: the other times out in its all_reduce, then the hung one ends' '
	rm -f pids &&
	start=$(date +%s) &&
	test_expect_code 3 env BCG_TEST_PIDS=pids "$procs" --world 2 --timeout 1 hang \
		>out 2>err &&
	took_under $start 10 &&
	test_grep "^\[rank 0\] bcgtool: rank 0: collective step.3/all_reduce did not complete within 1 s (a rank is gone?)\$" err &&
	test_grep "^bcgtool: rank 0 exited with status 3\$" err &&
	test_grep "^\[rank 1\] bcgtool: rank 1: rank 0 exited with status 3, and this rank has not finished 1 s later; aborting\$" err &&
	test_grep "^\[rank 1\] fake transport: rank 1: aborted\$" err &&
	test_grep "^bcgtool: rank 1 exited with status 3\$" err &&
	! grep "still running" err &&
	none_left pids
'

test_expect_success 'a rank that cannot answer (stopped) is killed after the timeout' '
	rm -f pids &&
	start=$(date +%s) &&
	test_expect_code 3 env BCG_TEST_PIDS=pids "$procs" --world 3 --timeout 1 stopped \
		>out 2>err &&
	took_under $start 10 &&
	test_grep "^bcgtool: rank 0 exited with status 1\$" err &&
	test_grep "^bcgtool: rank 1 exited with status 1\$" err &&
	test_grep "^bcgtool: rank 2 still running 3 s after rank [01] failed: stopping it\$" err &&
	! grep "rank 2 died" err &&
	test $(wc -l <pids) = 3 &&
	none_left pids
'

test_expect_success 'SIGTERM to the launcher reaches every rank, which stops as bcgtool does' '
	rm -f pids &&
	rm -f launcher &&
	BCG_TEST_PIDS=pids BCG_TEST_LAUNCHER=launcher "$procs" --world 2 --timeout 30 \
		wait-term >out 2>err &
	for i in 1 2 3 4 5 6 7 8 9 10; do
		test "$(grep -c waiting out)" = 2 && break
		sleep 0.5
	done &&
	kill -TERM $(cat launcher) &&
	test_expect_code 143 wait $! &&
	test_grep "^\[rank 0\] rank 0: stopping on signal 15\$" out &&
	test_grep "^\[rank 1\] rank 1: stopping on signal 15\$" out &&
	none_left pids
'

test_expect_success 'rank 0 cannot make the unique id: every rank stops' '
	rm -f pids &&
	test_expect_code 3 env BCG_TEST_FAIL_ID=1 "$procs" --world 3 print >out 2>err &&
	test_grep "^\[rank 0\] bcgtool: rank 0: no id (BCG_TEST_FAIL_ID)\$" err &&
	test_grep "^\[rank 1\] bcgtool: rank 1: the launch stopped before the unique id came (a rank failed)\$" err &&
	test_grep "^\[rank 2\] bcgtool: rank 2: the launch stopped before the unique id came (a rank failed)\$" err &&
	test_grep "^bcgtool: rank 0 exited with status 3\$" err &&
	! test -s out
'

test_expect_success 'more ranks than GPUs: refused before any rank starts' '
	rm -f pids &&
	test_expect_code 2 env BCG_TEST_PIDS=pids "$procs" --world 4 --gpus 2 print >out 2>err &&
	echo "bcgtool: dist-procs: --tp 4 needs 4 GPUs; this machine has 2" >expect &&
	test_cmp expect err &&
	! test -e pids
'

test_expect_success !NCCL 'the build'"'"'s transport without NCCL: --tp says so, exit 2' '
	test_expect_code 2 "$procs" --nccl --world 2 print >out 2>err &&
	echo "bcgtool: dist-procs: this build has no NCCL: rebuild with NCCL for --tp on GPUs" >expect &&
	test_cmp expect err
'

test_expect_success NCCL 'NCCL with more ranks than GPUs: refused with the count' '
	rm -f pids &&
	test_expect_code 2 env BCG_TEST_PIDS=pids "$procs" --nccl --world 64 print >out 2>err &&
	test_grep "^bcgtool: dist-procs: --tp 64 needs 64 GPUs; this machine has [0-9]*\$" err &&
	! test -e pids
'

test_expect_success 'the GPUs, counted in a child process, as has-gpu counts them' '
	"$procs" --count-gpus >out &&
	if test_have_prereq CUDA; then
		"$BCG_BUILD_DIR/t/helper/has-gpu" | sed -n "s/^\([0-9]*\) CUDA device.*/\1 GPUs/p" >expect
	else
		echo "0 GPUs" >expect
	fi &&
	test_cmp expect out
'

# --- an external launcher ----------------------------------------------

test_expect_success 'external launcher: wrong variables, each named' '
	test_expect_code 2 env WORLD_SIZE=two RANK=0 LOCAL_RANK=0 "$procs" print 2>err &&
	test_grep "^bcgtool: dist-procs: environment: WORLD_SIZE=two: not an integer from 1 to 65536\$" err &&
	test_expect_code 2 env WORLD_SIZE=2 LOCAL_RANK=0 BCG_DIST_STORE=s "$procs" print 2>err &&
	test_grep "^bcgtool: dist-procs: environment: WORLD_SIZE=2 but RANK is not set\$" err &&
	test_expect_code 2 env WORLD_SIZE=2 RANK=2 LOCAL_RANK=0 BCG_DIST_STORE=s "$procs" print 2>err &&
	test_grep "^bcgtool: dist-procs: environment: RANK=2: not an integer from 0 to 1\$" err &&
	test_expect_code 2 env WORLD_SIZE=2 RANK=1 BCG_DIST_STORE=s "$procs" print 2>err &&
	test_grep "LOCAL_RANK (this rank.s GPU) is not set\$" err &&
	test_expect_code 2 env WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 "$procs" print 2>err &&
	test_grep "WORLD_SIZE=2 but BCG_DIST_STORE (.*) is not set\$" err &&
	test_expect_code 2 env WORLD_SIZE=3 RANK=1 LOCAL_RANK=1 BCG_DIST_STORE=s "$procs" \
		--world 2 print 2>err &&
	test_grep "^bcgtool: dist-procs: 2 ranks asked for, but the launcher.s WORLD_SIZE=3\$" err
'

test_expect_success 'external launcher: two ranks meet through the store file, which is then removed' '
	rm -rf store pids join && mkdir join &&
	env WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 BCG_DIST_STORE=store BCG_TEST_PIDS=pids \
		BCG_TEST_JOIN=join "$procs" --timeout 30 print >out1 2>err1 &
	sleep 1 &&
	env WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 BCG_DIST_STORE=store BCG_TEST_PIDS=pids \
		BCG_TEST_JOIN=join "$procs" --timeout 30 print >out0 2>err0 &&
	wait $! &&
	pid0=$(sed -n "s/^0 //p" pids) &&
	sed "s/ *\$//" out0 >actual0 && sed "s/ *\$//" out1 >actual1 &&
	printf "%s\n%s" "rank 0 of 2: the id is id-of-pid-$pid0" "unfinished 0" >expect0 &&
	printf "%s\n%s" "rank 1 of 2: the id is id-of-pid-$pid0" "unfinished 1" >expect1 &&
	test_cmp expect0 actual0 &&
	test_cmp expect1 actual1 &&
	! test -e store
'

test_expect_success 'external launcher: Open MPI'"'"'s variables' '
	rm -f store &&
	env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_LOCAL_RANK=0 \
		BCG_DIST_STORE=store "$procs" --timeout 30 print >out0 2>err0 &&
	test_grep "^rank 0 of 2: the id is" out0 &&
	test_expect_code 2 env OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 \
		BCG_DIST_STORE=store "$procs" print 2>err &&
	test_grep "OMPI_COMM_WORLD_SIZE=2 but OMPI_COMM_WORLD_RANK is not set\$" err
'

test_expect_success 'external launcher: no store file within the timeout, or one of another world' '
	rm -f store &&
	start=$(date +%s) &&
	test_expect_code 3 env WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 BCG_DIST_STORE=store \
		"$procs" --timeout 1 print 2>err &&
	took_under $start 10 &&
	echo "bcgtool: rank 1: BCG_DIST_STORE store: no unique id after 1 s (has rank 0 started?)" >expect &&
	test_cmp expect err &&
	printf "bcgtool-dist-store 1\nworld 4\nid 00\n" >store &&
	test_expect_code 3 env WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 BCG_DIST_STORE=store \
		"$procs" --timeout 1 print 2>err &&
	test_grep "BCG_DIST_STORE store:2: written for a world of 4 ranks, this one has 2" err &&
	echo "not a store" >store &&
	test_expect_code 3 env WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 BCG_DIST_STORE=store \
		"$procs" --timeout 1 print 2>err &&
	test_grep "BCG_DIST_STORE store:1: not a store file of bcgtool" err &&
	printf "bcgtool-dist-store 1\nworld 2\nid 0g\n" >store &&
	test_expect_code 3 env WORLD_SIZE=2 RANK=1 LOCAL_RANK=1 BCG_DIST_STORE=store \
		"$procs" --timeout 1 print 2>err &&
	test_grep "BCG_DIST_STORE store:3: the id is not 32 bytes in hex" err
'

test_expect_success 'external launcher: a collective that never completes ends the rank (exit 3)' '
	rm -f store &&
	start=$(date +%s) &&
	test_expect_code 3 env WORLD_SIZE=2 RANK=0 LOCAL_RANK=0 BCG_DIST_STORE=store \
		"$procs" --timeout 1 collective >out 2>err &&
	took_under $start 10 &&
	test_grep "^bcgtool: rank 0: collective step.3/all_reduce did not complete within 1 s (a rank is gone?)\$" err
'

test_expect_success 'external launcher, a world of one: the rank runs in place' '
	env WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 "$procs" --world 1 print >out 2>err &&
	printf "rank 0 of 1: the id is none\nunfinished 0" >expect &&
	test_cmp expect out
'

test_done
