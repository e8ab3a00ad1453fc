#!/bin/sh
test_description='progress on a terminal, -q, and SIGINT/SIGTERM: a partial summary, no temporaries, exit 130/143'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"

# wait_for FILE PATTERN: until FILE holds PATTERN (at most 60 s).
wait_for() {
	_i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		_i=$((_i + 1))
		test $_i -le 300 || { echo >&2 "wait_for: no '$2' in $1"; return 1; }
		sleep 0.1
	done
}

# interrupt SIGNAL PATTERN CMD...: run the program with CMD's arguments in
# the background (stdout in out, stderr in err, progress forced on), send
# SIGNAL once its stderr shows PATTERN, and leave its exit status in
# $status. The pattern shows that the work has begun, so that the signal
# reaches the handler and not the start of the process.
interrupt() {
	_sig=$1
	_pat=$2
	shift 2
	rm -f out err
	BCG_PROGRESS=always "$BCGTOOL" "$@" >out 2>err &
	_pid=$!
	wait_for err "$_pat" || { kill -KILL $_pid; return 1; }
	kill -$_sig $_pid
	wait $_pid
	status=$?
}

test_expect_success 'setup: a plan of the small sample, on the host' '
	bcg capture -q --backend host --tokens 1,4 -o small.plan "$small" >/dev/null
'

test_expect_success 'no progress when stderr is not a terminal' '
	bcg replay --backend host --steps 20 --warmup 1 small.plan >out 2>err &&
	test_cmp /dev/null err
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
	script -qec "\"$BCGTOOL\" replay --backend host --steps 20 --warmup 1 small.plan" \
		/dev/null >typescript </dev/null &&
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

test_done
