# test-lib.sh - the library of bcgtool's shell tests. Emits TAP.
#
# A test script sets test_description, sources this file, and writes every
# step as
#
#   test_expect_success [PREREQ] 'what it shows' '
#           command && command
#   '
#
# ending with test_done. Each step runs in the script's scratch directory
# ("trash directory.<script>", removed when every step passed), with its
# output kept and shown as TAP comments only when it fails. Prerequisites
# (CUDA, PYTHON3, DOT, ...) skip the steps that need what is absent.
#
# Helpers: test_must_fail, test_expect_code, test_cmp, test_set_prereq,
# test_have_prereq, test_skip_all, bcg (the bcgtool under test).

# --- where things are ---------------------------------------------------
TEST_NAME=$(basename "$0" .sh)
TEST_DIRECTORY=$(cd "$(dirname "$0")" && pwd)           # t/ in the source tree
: "${BCG_SRC_DIR:=$(cd "$TEST_DIRECTORY/.." && pwd)}"
: "${BCG_BUILD_DIR:=$BCG_SRC_DIR}"
BCGTOOL="$BCG_BUILD_DIR/bcgtool/bcgtool"
TEST_DATA="$TEST_DIRECTORY/data"
SAMPLES="$BCG_SRC_DIR/samples"
export BCG_SRC_DIR BCG_BUILD_DIR BCGTOOL TEST_DATA SAMPLES

# A stable environment: no colors, no locale surprises, fixed timestamps,
# and sanitizer reports that end the process with a signal (so that
# test_must_fail cannot mistake one for an expected failure).
LC_ALL=C
LANG=C
NO_COLOR=1
TZ=UTC
SOURCE_DATE_EPOCH=1700000000
ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:allocator_may_return_null=1
TSAN_OPTIONS=halt_on_error=1:abort_on_error=1
UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
export LC_ALL LANG NO_COLOR TZ SOURCE_DATE_EPOCH ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS
unset BCG_BACKEND NVTX_INJECTION64_PATH CDPATH
# No progress unless a test asks for it: a step slower than 5 s (a loaded
# machine, a sanitizer build) would otherwise write a line of it.
BCG_PROGRESS=never
export BCG_PROGRESS

# The scratch directory.
TRASH_DIRECTORY="$BCG_BUILD_DIR/t/trash directory.$TEST_NAME"
rm -rf "$TRASH_DIRECTORY" && mkdir -p "$TRASH_DIRECTORY" || {
	echo "Bail out! cannot make $TRASH_DIRECTORY"
	exit 1
}
cd "$TRASH_DIRECTORY" || exit 1

test_count=0
test_failures=0
test_prereqs=" "

# --- prerequisites --------------------------------------------------------
test_set_prereq() {
	test_prereqs="$test_prereqs$1 "
}

# test_have_prereq A,B: true when every one of the comma-separated
# prerequisites is set; !A means A must not be set.
test_have_prereq() {
	_ok=0
	_save_ifs=$IFS
	IFS=,
	for _p in $1; do
		case $_p in
		!*) case "$test_prereqs" in *" ${_p#!} "*) _ok=1 ;; esac ;;
		*) case "$test_prereqs" in *" $_p "*) ;; *) _ok=1 ;; esac ;;
		esac
	done
	IFS=$_save_ifs
	return $_ok
}

test "${BCG_HAVE_CUDA:-no}" = yes && test_set_prereq CUDA_BUILD
if test_have_prereq CUDA_BUILD && test -x "$BCG_BUILD_DIR/t/helper/has-gpu" &&
   "$BCG_BUILD_DIR/t/helper/has-gpu" >/dev/null 2>&1; then
	test_set_prereq CUDA
fi
test -n "${PYTHON3:-}" && "$PYTHON3" -c 'import json' 2>/dev/null && test_set_prereq PYTHON3
test -n "${DOT:-}" && test -x "$DOT" && test_set_prereq DOT
test "${BCG_HAVE_NVTX:-no}" = yes && test_set_prereq NVTX
test "${BCG_HAVE_JANSSON:-no}" = yes && test_set_prereq JANSSON
test "${BCG_ASAN:-no}" = yes && test_set_prereq ASAN
test "${BCG_TSAN:-no}" = yes && test_set_prereq TSAN
test "$(id -u)" != 0 && test_set_prereq NOT_ROOT

# --- running steps --------------------------------------------------------
_test_output="$TRASH_DIRECTORY/.test-output"

_test_comment_body() {
	printf '%s\n' "$1" | sed -e 's/^/#	/'
}

_test_run() {
	# The body runs in this shell (so steps can set variables for later
	# ones), from the scratch directory, with its output kept aside.
	cd "$TRASH_DIRECTORY" || return 1
	eval "$1" >"$_test_output" 2>&1 </dev/null
}

test_expect_success() {
	if test $# = 3; then _prereq=$1; shift; else _prereq=; fi
	test $# = 2 || { echo "Bail out! test_expect_success needs 2 or 3 arguments"; exit 1; }
	test_count=$((test_count + 1))
	if test -n "$_prereq" && ! test_have_prereq "$_prereq"; then
		echo "ok $test_count # skip $1 (missing $_prereq)"
		return 0
	fi
	if _test_run "$2"; then
		echo "ok $test_count - $1"
	else
		test_failures=$((test_failures + 1))
		echo "not ok $test_count - $1"
		_test_comment_body "$2"
		echo "#	--- output ---"
		sed -e 's/^/#	/' "$_test_output"
	fi
}

# test_skip_all 'reason': the whole script has nothing to run here.
test_skip_all() {
	echo "1..0 # SKIP $1"
	cd "$BCG_BUILD_DIR/t" && rm -rf "$TRASH_DIRECTORY"
	exit 0
}

test_done() {
	echo "1..$test_count"
	if test "$test_failures" = 0; then
		cd "$BCG_BUILD_DIR/t" && rm -rf "$TRASH_DIRECTORY"
		exit 0
	fi
	exit 1
}

# --- assertions -----------------------------------------------------------

# The program must exit non-zero by itself: a death by signal (a crash, a
# sanitizer abort) or a missing command is not the failure we expect.
test_must_fail() {
	"$@"
	_code=$?
	if test $_code = 0; then
		echo >&2 "test_must_fail: command succeeded: $*"
		return 1
	elif test $_code -gt 128 && test $_code -le 192; then
		echo >&2 "test_must_fail: died of signal $((_code - 128)): $*"
		return 1
	elif test $_code = 126 || test $_code = 127; then
		echo >&2 "test_must_fail: could not run: $*"
		return 1
	fi
	return 0
}

# test_expect_code N CMD...: CMD must exit with exactly N.
test_expect_code() {
	_want=$1
	shift
	"$@"
	_code=$?
	if test "$_code" != "$_want"; then
		echo >&2 "test_expect_code: want exit $_want, got $_code: $*"
		return 1
	fi
	return 0
}

# test_cmp EXPECTED ACTUAL: the files must be equal; shows a diff if not.
test_cmp() {
	diff -u "$1" "$2"
}

# test_file_not_empty FILE
test_file_not_empty() {
	test -s "$1" || { echo >&2 "'$1' is missing or empty"; return 1; }
}

# test_grep PATTERN FILE: like grep, but says what was not found.
test_grep() {
	grep "$@" || { echo >&2 "test_grep: no match for: $*"; return 1; }
}

# replay_bit_exact BACKEND WARMUP PLANS TOKENS...: each plan of PLANS (file
# names less .plan, separated by spaces) replayed 3 steps at each token
# count on BACKEND after WARMUP steps, with --check: each says bit-exact.
replay_bit_exact() {
	_rbe_backend=$1 _rbe_warmup=$2 _rbe_plans=$3
	shift 3
	for _rbe_p in $_rbe_plans; do
		for _rbe_t in "$@"; do
			bcg replay --backend "$_rbe_backend" --tokens "$_rbe_t" --steps 3 \
				--warmup "$_rbe_warmup" --check "$_rbe_p.plan" >out &&
			test_grep "bit-exact" out || return 1
		done
	done
}

# same_run_outputs SCRIPT_A SCRIPT_B OPTION...: `bcg run OPTION... --json`
# of both scripts reports the same outputs (its JSON from "outputs" on,
# which names logits).
same_run_outputs() {
	_sro_a=$1 _sro_b=$2
	shift 2
	bcg run "$@" --json "$_sro_a" >sro-a.json &&
	bcg run "$@" --json "$_sro_b" >sro-b.json &&
	sed -n "/\"outputs\"/,\$p" sro-a.json >sro-a &&
	test_grep "\"name\": \"logits\"" sro-a &&
	sed -n "/\"outputs\"/,\$p" sro-b.json >sro-b &&
	test_cmp sro-a sro-b
}

# tp_mlp DOWN [head]: the tensor-parallel tests' small MLP script, on
# stdout: x [T, 8] (T 1 and 4) through up (matmul_silu_mul, gate|up
# column-parallel by blocks: random weights) into act [T, 16], then down
# (row-parallel, arange weights) into y: DOWN "add" is matmul_add (y = x +
# act w2^T), "plain" matmul. y is the output, or with head a
# vocabulary-parallel lm_head [32, 8] reads it into logits.
tp_mlp() {
	if test "$2" = head; then
		_tm_v="  V: 32
" _tm_y="  y:  {dtype: f32, shape: [T, H]}
  logits: {dtype: f32, shape: [T, V], role: output}
" _tm_head="  head: {dtype: f32, shape: [V, H], role: weight, init: {kind: random, seed: 3, scale: 0.5},
       split: {axis: 0}}
" _tm_op="  - {op: matmul, name: lm_head, in: [y, head], out: [logits], attrs: {trans_b: true}}
"
	else
		_tm_v= _tm_head= _tm_op= _tm_y="  y:  {dtype: f32, shape: [T, H], role: output}
"
	fi
	if test "$1" = add; then
		_tm_down="  - {op: matmul_add, name: down, in: [x, act, w2], out: [y], attrs: {trans_b: true}}"
	else
		_tm_down="  - {op: matmul, name: down, in: [act, w2], out: [y], attrs: {trans_b: true}}"
	fi
	printf '%s' "bcg: 1
dims:
  T: {tokens: [1, 4]}
  H: 8
  F: 16
  F2: 2 * F
$_tm_v""tensors:
  x:  {dtype: f32, shape: [T, H], role: input, feed: {kind: random, seed: 1}}
  w1: {dtype: f32, shape: [F2, H], role: weight, init: {kind: random, seed: 2, scale: 0.5},
       split: {axis: 0, blocks: [F, F]}}
  w2: {dtype: f32, shape: [H, F], role: weight, init: {kind: arange, value: -1, scale: 0.01},
       split: {axis: 1}}
$_tm_head""  act: {dtype: f32, shape: [T, F], split: {axis: 1}}
$_tm_y""ops:
  - {op: matmul_silu_mul, name: up, in: [x, w1], out: [act], attrs: {trans_b: true}}
$_tm_down
$_tm_op"
}

# shrink_1b NAME OUT 'H NH NKV F S V' [TOKENS] [random]: samples/NAME.yaml
# (a script of samples/llama-3.2-1b.yaml's dims) at 2 layers, hidden H,
# NH/NKV heads, FFN F, S cache positions and V words, as OUT; with TOKENS
# ("1, 2") its capture sizes instead of 1, 2, 4, 8; with random, the
# per-layer norm weights random (seed 900) instead of ones, so that they
# matter.
shrink_1b() {
	_s1_norms=
	[ "${5:-}" = random ] &&
		_s1_norms="s/role: weight, count: L, init: ones/role: weight, count: L, init: {kind: random, scale: 1, seed: 900}/"
	set -- "$1" "$2" $3 "${4:-1, 2, 4, 8}"
	sed -e "s/^  T: {tokens: \[1, 2, 4, 8\]}/  T: {tokens: [$9]}/" \
	    -e "s/^  L: 16 /  L: 2 /" -e "s/^  H: 2048 /  H: $3 /" \
	    -e "s/^  NH: 32 /  NH: $4 /" -e "s/^  NKV: 8 /  NKV: $5 /" \
	    -e "s/^  F: 8192 /  F: $6 /" -e "s/^  S: 2048 /  S: $7 /" \
	    -e "s/^  V: 128256 /  V: $8 /" -e "$_s1_norms" \
	    "$SAMPLES/$1.yaml" >"$2"
}

# same_dumps SCRIPT_A SCRIPT_B OPTION...: `bcg run OPTION... --dump-outputs`
# of both scripts, their logits and next identical (compare-outputs.py).
same_dumps() {
	_sd_a=$1 _sd_b=$2
	shift 2
	rm -rf sd-a sd-b &&
	bcg run "$@" --dump-outputs sd-a "$_sd_a" >/dev/null &&
	bcg run "$@" --dump-outputs sd-b "$_sd_b" >/dev/null &&
	"$PYTHON3" "$TEST_DIRECTORY/compare-outputs.py" sd-a sd-b >sd-out &&
	printf "logits: identical\nnext: identical\n" >sd-expect &&
	test_cmp sd-expect sd-out
}

# The program under test.
bcg() {
	"$BCGTOOL" "$@"
}
