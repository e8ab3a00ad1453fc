#!/bin/sh
test_description='progress on a terminal, -q, and SIGINT/SIGTERM: a partial summary, no temporaries, exit 130/143'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"
SQ="'"
big="$TEST_DATA/scripts/big-product.yaml"

# Every wait here has a bound of its own, and no program is left running
# when a step ends, whatever happens: a run-away process would keep the
# test's output open and make `make check` wait for it.

# wait_for FILE PATTERN: until FILE holds PATTERN, at most 120 s (a loaded
# machine, a sanitizer build); fails and says so after that.
wait_for() {
	_end=$(($(date +%s) + 120))
	while ! grep -q "$2" "$1" 2>/dev/null; do
		test "$(date +%s)" -le $_end || { echo >&2 "wait_for: no '$2' in $1"; return 1; }
		sleep 0.1
	done
}

# start CMD...: the program with CMD's arguments in the background, stdout
# in out, stderr in err, progress forced on; its process id in $pid.
# It must be a simple command of its own: the shell runs `a && b &` as a
# subshell that ignores SIGINT, and $! is then the subshell's id, so that
# the signals never reach the program (bash does this; dash execs b).
start() {
	rm -f out err
	BCG_PROGRESS=always "$BCGTOOL" "$@" >out 2>err </dev/null &
	pid=$!
}

# finish SECONDS: wait for $pid to end, at most SECONDS, then kill it;
# its exit status in $status (137 when it had to be killed). A watchdog,
# with its output away from the test's, kills the program at the limit;
# it ends by itself once the program has.
finish() {
	(
		_end=$(($(date +%s) + $1))
		while kill -0 $pid 2>/dev/null; do
			if test "$(date +%s)" -gt $_end; then
				kill -KILL $pid
				exit 0
			fi
			sleep 0.1
		done
	) </dev/null >/dev/null 2>&1 &
	_dog=$!
	wait $pid
	status=$?
	kill $_dog 2>/dev/null
	wait $_dog 2>/dev/null
	test $status != 137 || echo >&2 "finish: still running after $1 s: killed"
	return 0
}

# interrupt SIGNAL PATTERN CMD...: start CMD, send SIGNAL once its stderr
# shows PATTERN, and leave its exit status in $status. The pattern shows
# that the work has begun, so that the signal reaches the handler and not
# the start of the process. Fails (the program killed) when the pattern
# never shows.
interrupt() {
	_sig=$1
	_pat=$2
	shift 2
	start "$@"
	if ! wait_for err "$_pat"; then
		kill -KILL $pid
		finish 10
		return 1
	fi
	kill -$_sig $pid
	finish 120
}

test_expect_success 'setup: a plan of the small sample, on the host' '
	bcg capture -q --backend host --tokens 1,4 -o small.plan "$small" >/dev/null
'

# test-lib.sh sets BCG_PROGRESS=never; these tests unset it where they
# show what a user sees.
test_expect_success 'stderr not a terminal: work shorter than 5 s prints no progress' '
	(unset BCG_PROGRESS && bcg replay --backend host --steps 20 --warmup 1 small.plan) \
		>out 2>err &&
	! grep -v "^bcgtool: note: host timings do not model CUDA graphs" err
'

# Into a pipe or a log, long work writes a whole line every 5 s: the time
# so far and the phase (a minute of tuning here); -q, nothing.
test_expect_success 'stderr not a terminal: a plain progress line every 5 s, none with -q' '
	env -u BCG_PROGRESS -u SOURCE_DATE_EPOCH "$BCGTOOL" capture --backend host \
		-o plain.plan "$TEST_DATA/scripts/slow-tune.yaml" >out 2>err </dev/null &
	pid=$!
	env -u BCG_PROGRESS -u SOURCE_DATE_EPOCH "$BCGTOOL" capture -q --backend host \
		-o quiet.plan "$TEST_DATA/scripts/slow-tune.yaml" >out.q 2>err.q </dev/null &
	pid2=$!
	wait_for err "^bcgtool: \[5 s\] " &&
	sleep 1 &&
	kill -TERM $pid $pid2 &&
	finish 60 &&
	pid=$pid2 && finish 60 &&
	echo "bcgtool: [5 s] capture: variant 1 of 1 (512 tokens): tune" >expect &&
	head -n 1 err >actual &&
	test_cmp expect actual &&
	! grep "$(printf "\r")" err &&
	! grep "\[5 s\]\|capture: variant" err.q
'

test_expect_success 'BCG_PROGRESS takes always, plain or never; anything else is refused' '
	test_expect_code 2 env BCG_PROGRESS=sometimes "$BCGTOOL" validate "$small" >out 2>err &&
	echo "bcgtool: environment: BCG_PROGRESS=${SQ}sometimes${SQ} is not always, plain or never" >expect &&
	test_cmp expect err &&
	test ! -s out &&
	env BCG_PROGRESS=plain "$BCGTOOL" replay --backend host --steps 2 --warmup 0 small.plan \
		>out 2>err &&
	! grep "replay: step" err &&
	env BCG_PROGRESS= "$BCGTOOL" validate "$small" >out
'

test_expect_success 'BCG_PROGRESS=always shows replay steps and the time left' '
	BCG_PROGRESS=always bcg replay --backend host --steps 20 --warmup 1 small.plan >out 2>err &&
	test_grep "replay: step [0-9]* of 21" err &&
	test_grep "replay: step 21 of 21, about 0 s left" err
'

test_expect_success 'capture shows variant i of n and the phase' '
	BCG_PROGRESS=always bcg capture --backend host -o p.plan "$small" >out 2>err &&
	for phase in tune reference capture verify; do
		test_grep "capture: variant 1 of 3 (4 tokens): $phase" err &&
		test_grep "capture: variant 3 of 3 (1 tokens): $phase" err || return 1
	done
'

test_expect_success '-q silences progress and notes' '
	BCG_PROGRESS=always bcg replay -q --backend host --steps 20 --warmup 1 small.plan >out 2>err &&
	test_cmp /dev/null err &&
	bcg run -q "$small" >out 2>err &&
	test_cmp /dev/null err &&
	bcg -q run "$small" >out 2>err &&
	test_cmp /dev/null err
'

test_have_prereq CUDA || test_set_prereq NOGPU
test_expect_success NOGPU 'without -q, the note that the host backend runs is there' '
	bcg run "$small" >out 2>err &&
	test_grep "^bcgtool: note: .*using the host backend" err
'

if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
	test_set_prereq SCRIPT
fi
test_expect_success SCRIPT 'on a terminal, progress shows by itself' '
	(unset BCG_PROGRESS &&
	 script -qec "\"$BCGTOOL\" replay --backend host --steps 20 --warmup 1 small.plan" \
		/dev/null >typescript </dev/null) &&
	test_grep "replay: step [0-9]* of 21" typescript
'

test_expect_success 'replay: SIGINT stops it; the steps measured so far, marked partial; 130' '
	interrupt INT "replay: step" replay --backend host --steps 1000000 --warmup 0 small.plan &&
	test $status = 130 &&
	test_grep "^steps        [0-9]* of 1000000 " out &&
	test_grep "^partial      interrupted" out &&
	test_grep "^step  *[0-9.]* ms" out
'

test_expect_success 'replay --json: SIGTERM; "partial": true; 143' '
	interrupt TERM "replay: step" replay --json --backend host --steps 1000000 small.plan &&
	test $status = 143 &&
	test_grep "\"partial\": true" out
'

test_expect_success 'run: SIGINT; the outputs after the steps that ran, marked partial' '
	interrupt INT "run: step" run --backend host --steps 1000000 "$small" &&
	test $status = 130 &&
	test_grep "^steps    [0-9]* of 1000000 (partial: interrupted" out &&
	test_grep "^next " out
'

test_expect_success 'bench: SIGINT; the mode that ran partly is marked partial' '
	interrupt INT "bench: eager: step" bench --backend host --steps 1000000 "$small" &&
	test $status = 130 &&
	test_grep "^eager .*partial: [0-9]* steps, interrupted" out &&
	test_grep "^breakable  not run: interrupted" out
'

test_expect_success 'capture: SIGINT; no plan, no temporary file, the old plan kept' '
	cp small.plan keep.plan &&
	mkdir outdir &&
	cp small.plan outdir/x.plan &&
	interrupt INT "capture: variant" capture --backend host --no-tune --steps 10000 -o outdir/x.plan "$small" &&
	test $status = 130 &&
	test_grep "^partial: interrupted; no plan written" out &&
	test_grep "bcgtool: interrupted by SIGINT" err &&
	cmp keep.plan outdir/x.plan &&
	ls -A outdir >files &&
	echo x.plan >expect &&
	test_cmp expect files
'

# Tuning times every product's candidates one after the other: a minute
# here. A SIGINT in the middle of it acts between two launches (the
# issue asks for a second; 10 s of slack for a loaded or sanitizer build),
# not at the end of the tuning. Not under ThreadSanitizer, which makes a
# host launch of these products some 30 times slower (15 s measured).
test_expect_success !TSAN 'capture: SIGINT during tuning acts at the next launch, not after the tuning' '
	mkdir out3 || return 1
	# Tuning on the host is measured only without SOURCE_DATE_EPOCH.
	env -u SOURCE_DATE_EPOCH BCG_PROGRESS=always "$BCGTOOL" capture --backend host \
		-o out3/slow.plan "$TEST_DATA/scripts/slow-tune.yaml" >out 2>err </dev/null &
	pid=$!
	{
		wait_for err "capture: variant 1 of 1 (512 tokens): tune" &&
		sleep 1 &&
		t0=$(date +%s) &&
		kill -INT $pid
		sent=$?
		finish 120
	} &&
	t1=$(date +%s) &&
	test $sent = 0 &&
	test $status = 130 &&
	test $((t1 - t0)) -le 10 &&
	test_grep "bcgtool: interrupted by SIGINT$" err &&
	! test_grep "): reference" err &&
	ls -A out3 >files &&
	test_cmp /dev/null files
'

# On the GPU (where the issue saw 13.9 s): the 16-layer Llama-3.2-1B-shaped
# sample (the 32-layer small one now captures whole in under half a
# second on an H200: the signal found no process), SIGINT a tenth of a
# second into its tuning and into its reference run.
test_expect_success CUDA 'capture on the GPU: SIGINT in tuning or later acts within seconds' '
	for at in "): tune" "): reference"; do
		rm -rf out4 && mkdir out4 &&
		start capture --backend cuda -o out4/llama.plan "$SAMPLES/llama-3.2-1b.yaml" &&
		{
			wait_for err "$at" &&
			sleep 0.1 &&
			t0=$(date +%s) &&
			kill -INT $pid
			sent=$?
			finish 120
		} &&
		t1=$(date +%s) &&
		echo "$at: $((t1 - t0)) s" &&
		test $sent = 0 &&
		test $status = 130 &&
		test $((t1 - t0)) -le 3 &&
		ls -A out4 >files &&
		test_cmp /dev/null files || return 1
	done
'

test_expect_success 'the first SIGINT says that the step goes on and what a second does' '
	interrupt INT "capture: variant" capture --backend host --no-tune --steps 10000 \
		-o first.plan "$small" &&
	test $status = 130 &&
	test_grep "^bcgtool: interrupted: stopping after the current step (interrupt again to stop now)$" err &&
	! test_grep "interrupted again" err
'

test_expect_success 'a second SIGINT within a step ends the process at once: 130, temporaries removed' '
	mkdir out2 &&
	start capture --backend host --no-tune -o out2/big.plan "$big" &&
	{
		# Inside the first reference step, one product of many seconds:
		# the first SIGINT waits for its end, the second does not.
		wait_for err "capture: variant 1 of 1 (1 tokens): reference" &&
		kill -INT $pid &&
		wait_for err "interrupted: stopping after the current step" &&
		kill -INT $pid
		sent=$?
		finish 120
	} &&
	test $sent = 0 &&
	test $status = 130 &&
	test_grep "^bcgtool: interrupted again: stopping now$" err &&
	! test_grep "interrupted by SIGINT" err &&
	test_cmp /dev/null out &&
	ls -A out2 >files &&
	test_cmp /dev/null files
'

test_done
