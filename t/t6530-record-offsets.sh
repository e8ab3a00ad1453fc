#!/bin/sh
test_description='bcgtool record: each item'"'"'s start offset within its step (format 1.7), inspect shows it'
. "$(dirname "$0")/test-lib.sh"

# t/helper/record-fake writes the log the recording library would write
# (see t6500); BCG_RECORD_ASSUME_DEVICE skips record's check for a GPU.
# "timed" sets the launch calls' host times and their work's GPU times by
# hand; record-fake.c tabulates them. Worked from that table: graph A is
# the first item of each step; the eager break E starts 4000, 5000 and
# 7000 ns after A on the GPU (median 5000) and is launched 1000, 1500 and
# 3000 ns after A's launch (median 1500); graph B starts 9000, 9000 and
# 12000 ns after A (median 9000), launched 3000, 3000 and 4000 ns after
# (median 3000). A takes 3000 ns, E 1000, B 6000; the steps span 15000,
# 15000 and 18000 ns (median 15000).
fake="$BCG_BUILD_DIR/t/helper/record-fake"
test -f "$BCG_BUILD_DIR/bcgtool/record/.libs/libbcg-record.so" && test_set_prereq RECORD_LIB
BCG_RECORD_ASSUME_DEVICE=1
export BCG_RECORD_ASSUME_DEVICE

test_expect_success RECORD_LIB 'setup: a recording with host and GPU times' '
	bcg record -o timed.plan -- "$fake" timed 2>err &&
	test_grep "3 steps in 1 variant, 2 segments, 1 breaks" err &&
	bcg record -o untimed.plan -- "$fake" breakable 3 2>err
'

test_expect_success RECORD_LIB 'a plan with start offsets is format 1.7; the shipped one stays 1.4' '
	bcg inspect timed.plan >out &&
	test_grep "^plan      timed.plan (.*format 1.7, recorded)" out &&
	bcg inspect "$TEST_DATA/recorded.plan" >out &&
	test_grep "format 1.4, recorded" out
'

test_expect_success RECORD_LIB 'inspect --items: each item at its median offset, and when it was launched' '
	bcg inspect --items timed.plan >out &&
	test_grep "^  item 0  segment 0: 3 nodes (3 kernels), 3.0 us, at +0 (launched +0), fingerprint 0x" out &&
	test_grep "^  item 1  break eager.0: 1 launch (3-3), 1.0 us, at +5.0 us (launched +1.5 us): 1 eager op" out &&
	test_grep "^  item 2  segment 1: 2 nodes (2 kernels), 6.0 us, at +9.0 us (launched +3.0 us), fingerprint 0x" out &&
	bcg inspect timed.plan >out &&
	test_grep "^       1  repeat     3  15.0 us  10.0 us  5.0 us      3         2       1      5$" out
'

test_expect_success RECORD_LIB,PYTHON3 'inspect --json: start_ns and issue_ns of every item' '
	bcg inspect --json timed.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
v, = d[\"variants\"]
items = [d[\"segments\" if i[\"kind\"] == \"segment\" else \"breakpoints\"][i[\"index\"]]
         for i in v[\"items\"]]
got = [(i[\"recorded_ns\"], i[\"start_ns\"], i[\"issue_ns\"]) for i in items]
assert got == [(3000, 0, 0), (1000, 5000, 1500), (6000, 9000, 3000)], got
assert v[\"recorded_ns\"] == 15000, v
"
'

test_expect_success RECORD_LIB,PYTHON3 'without GPU times: launch offsets only, and --pace recorded is refused' '
	bcg inspect --items untimed.plan >out &&
	# record-fake breakable writes each record 1 ns after the one before:
	# the break is launched 1 ns after the first graph, the second graph 2
	test_grep "^  item 1  break eager.0: 1 launch (3-3), -, launched +1 ns: " out &&
	test_grep "^  item 2  segment 1: 2 nodes (2 kernels), -, launched +2 ns, fingerprint " out &&
	bcg inspect --json untimed.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert all(\"start_ns\" not in s for s in d[\"segments\"] + d[\"breakpoints\"]), d
assert [s[\"issue_ns\"] for s in d[\"segments\"]] == [0, 2], d[\"segments\"]
" &&
	test_expect_code 2 bcg replay --pace recorded untimed.plan >out 2>err &&
	test_grep "^bcgtool: untimed.plan: --pace recorded: variant 1 has no recorded start offsets (its item 1, break eager.0 (1 launches), has none): " err &&
	test ! -s out
'

test_expect_success RECORD_LIB 'a plan of one item per step has no offsets to show' '
	bcg record -o update.plan -- "$fake" update 2 2>err &&
	bcg inspect --items update.plan >out &&
	! grep -q "at +\|launched +" out
'

test_expect_success RECORD_LIB,!CUDA '--pace recorded with offsets: past the checks, then no GPU: exit 3' '
	test_expect_code 3 bcg replay --pace recorded timed.plan 2>err &&
	test_grep "a recorded plan replays only on a GPU" err
'

test_done
