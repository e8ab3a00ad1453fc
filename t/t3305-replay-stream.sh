#!/bin/sh
test_description='bcgtool replay --stream: the same steps with no time stamp between them, their mean'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"
schemas="$BCG_SRC_DIR/formats/json"
if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
	test_set_prereq JSONSCHEMA
fi
inject="$BCG_BUILD_DIR/t/helper/.libs/nvtx-log.so"
test_have_prereq NVTX && test_have_prereq PYTHON3 && test -f "$inject" &&
	test_set_prereq NVTX_LOG

# stream_line FILE STEPS: FILE has the stream line of a mean over STEPS
# steps, and its time is above 0.
stream_line() {
	sed -n "s/^stream  *\([0-9][0-9.]*\) ms a step, the mean of \([0-9][0-9]*\) steps issued back to back with no time stamp between them\$/\1 \2/p" "$1" >stream-line &&
	test $(wc -l <stream-line) = 1 &&
	read _ms _n <stream-line &&
	test "$_n" = "$2" &&
	awk -v ms="$_ms" "BEGIN { exit !(ms > 0) }"
}

# json_stream FILE STEPS: FILE's "stream" is an object of exactly "steps",
# equal to STEPS, and "mean_ms", above 0; the replay was not partial.
json_stream() {
	"$PYTHON3" - "$1" "$2" <<-\EOF
	import json, sys
	d = json.load(open(sys.argv[1]))
	s = d["stream"]
	assert not d["partial"], d["partial"]
	assert sorted(s) == ["mean_ms", "steps"], s
	assert s["steps"] == int(sys.argv[2]) == d["steps"], s
	assert s["mean_ms"] > 0, s
	EOF
}

# table_rows FILE: the names of the rows of FILE's table, one a line.
table_rows() {
	sed -n "/ median /,\$p" "$1" | sed 1d | cut -c1-12 | sed "s/ *\$//"
}

test_expect_success 'setup: a host plan of sizes 1 and 4' '
	bcg capture -q --backend host --tokens 1,4 -o small.plan "$small" >/dev/null
'

test_expect_success '--stream adds a stream row after the step row, over --steps steps' '
	bcg replay --backend host --steps 7 --warmup 2 --stream small.plan >out 2>err &&
	stream_line out 7 &&
	printf "step\nstream\nhost issue\n" >expect &&
	table_rows out >actual &&
	test_cmp expect actual
'

test_expect_success 'without --stream there is no stream row' '
	bcg replay --backend host --steps 3 --warmup 1 small.plan >out 2>err &&
	printf "step\nhost issue\n" >expect &&
	table_rows out >actual &&
	test_cmp expect actual
'

test_expect_success '--stream with one step and no warm-up' '
	bcg replay --backend host --steps 1 --warmup 0 --stream small.plan >out 2>err &&
	stream_line out 1
'

test_expect_success PYTHON3 '--json --stream: "stream" holds steps and mean_ms' '
	bcg replay --backend host --steps 6 --warmup 1 --stream --json small.plan >out.json &&
	json_stream out.json 6 &&
	bcg replay --backend host --steps 1 --warmup 0 --stream --json small.plan >one.json &&
	json_stream one.json 1
'

test_expect_success PYTHON3 '--json without --stream: "stream" is null' '
	bcg replay --backend host --steps 2 --warmup 0 --json small.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert \"stream\" in d and d[\"stream\"] is None, d.get(\"stream\", \"(absent)\")
"
'

# --check compares the state after the last steps from a reset, which are
# the stream pass's: they must follow the timed pass's sizes and numbers.
test_expect_success 'alternating sizes: the stream pass runs them as the timed pass, and checks' '
	bcg replay --backend host --steps 5 --warmup 2 --tokens 1,4 --stream --check small.plan \
		>out 2>err &&
	stream_line out 5 &&
	test_grep "^check        bit-exact with eager\$" out &&
	bcg replay --backend host --steps 4 --warmup 1 --tokens 4,1,4 --var kv_len=9:15 --stream \
		--check small.plan >out 2>err &&
	stream_line out 4 &&
	test_grep "^check        bit-exact with eager\$" out
'

test_expect_success NVTX_LOG 'NVTX: a "stream" phase between "timed" and "busy", its steps numbered as the timed ones' '
	NVTX_INJECTION64_PATH="$inject" BCG_NVTX_LOG=replay.log \
		bcg replay --backend host --steps 4 --warmup 2 --stream small.plan >/dev/null &&
	"$PYTHON3" - "$TEST_DIRECTORY/nvtx-check.py" replay.log <<-\EOF
	import importlib.util, sys
	spec = importlib.util.spec_from_file_location("nvtx_check", sys.argv[1])
	m = importlib.util.module_from_spec(spec)
	spec.loader.exec_module(m)
	root = m.parse(sys.argv[2])
	phases = [c.name for c in root.children if c.name in ("timed", "stream", "busy")]
	assert phases == ["timed", "stream", "busy"], phases
	timed, stream = m.phase(root, "timed"), m.phase(root, "stream")
	names = [s.name for s in stream.children]
	assert names == ["step %d" % i for i in range(6)], names
	assert names == [s.name for s in timed.children], [s.name for s in timed.children]
	EOF
'

test_expect_success JSONSCHEMA 'the replay schema takes "stream", measured or not, and refuses another shape' '
	bcg replay --backend host --steps 2 --warmup 0 --stream --json small.plan >with.json &&
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$schemas/replay.schema.json" with.json &&
	bcg replay --backend host --steps 2 --warmup 0 --json small.plan >without.json &&
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$schemas/replay.schema.json" without.json &&
	sed "s/\"mean_ms\"/\"mean\"/" with.json >bad.json &&
	test_must_fail "$PYTHON3" "$TEST_DIRECTORY/json-validate.py" \
		"$schemas/replay.schema.json" bad.json 2>err &&
	test_grep "stream" err
'

test_expect_success 'usage errors: --stream with --prompt, with a trace, on a recorded plan' '
	test_expect_code 2 bcg replay --backend host --stream --prompt 1,2 small.plan 2>err &&
	test_grep "^bcgtool replay: --prompt takes no --stream" err &&
	test_expect_code 2 bcg replay --backend host --stream --synthetic requests=2 small.plan \
		2>err &&
	test_grep "^bcgtool replay: --stream does not apply to a trace" err &&
	"$BCG_BUILD_DIR/t/helper/recorded-plan" rec.plan &&
	test_expect_code 2 bcg replay --stream rec.plan 2>err &&
	test_grep "^bcgtool replay: --tokens, --check, --stream, .* apply to script plans only" err
'

# A signal in the stream pass: the timed steps stand, the stream time is
# left out rather than taken over fewer steps than its time stamps span.
# The program runs in the background with progress on, and the signal is
# sent once the progress shows the stream pass; every wait is bounded.

# interrupt SIGNAL CMD...: run CMD, send SIGNAL when the stream pass has
# begun; its exit status in $status, stdout in out, stderr in err.
interrupt() {
	_sig=$1
	shift
	# The last run's err would show the pattern before this run starts,
	# and the signal would reach the process before its handler.
	rm -f out err
	BCG_PROGRESS=always "$BCGTOOL" "$@" >out 2>err </dev/null &
	_pid=$!
	_end=$(($(date +%s) + 120))
	while ! grep -q "stream: step" err 2>/dev/null && kill -0 $_pid 2>/dev/null &&
	      test "$(date +%s)" -le $_end; do
		sleep 0.1
	done
	kill -$_sig $_pid 2>/dev/null
	_end=$(($(date +%s) + 120))
	while kill -0 $_pid 2>/dev/null && test "$(date +%s)" -le $_end; do
		sleep 0.1
	done
	kill -KILL $_pid 2>/dev/null
	wait $_pid
	status=$?
	grep -q "stream: step" err
}

test_expect_success 'SIGINT in the stream pass: partial, the step times, no stream time; 130' '
	interrupt INT replay --backend host --steps 2000 --warmup 0 --stream small.plan &&
	test $status = 130 &&
	test_grep "^steps        2000 of 2000 (after 0 warm-up)\$" out &&
	test_grep "^partial      interrupted: the steps measured so far; no busy time, no stream time\$" out &&
	printf "step\nhost issue\n" >expect &&
	table_rows out >actual &&
	test_cmp expect actual
'

test_expect_success PYTHON3 'SIGTERM in the stream pass with --json: "partial": true, "stream": null; 143' '
	interrupt TERM replay --backend host --steps 2000 --warmup 0 --stream --json small.plan &&
	test $status = 143 &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out\"))
assert d[\"partial\"] is True and d[\"steps\"] == 2000, d
assert d[\"stream\"] is None, d[\"stream\"]
assert d[\"step_ms\"][\"median\"] > 0, d[\"step_ms\"]
"
'

test_expect_success CUDA 'on the GPU, --stream gives a mean step above 0' '
	bcg capture -q --backend cuda -o gpu.plan "$small" >/dev/null &&
	bcg replay --backend cuda --steps 50 --warmup 5 --stream gpu.plan >out &&
	stream_line out 50 &&
	bcg replay --backend cuda --steps 50 --warmup 5 --stream --json gpu.plan >out.json &&
	json_stream out.json 50
'

test_done
