#!/bin/sh
test_description='inspect and diff on damaged plans: the reader'"'"'s error, exit 2, nothing on stdout'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'setup: a good plan and damaged copies of it' '
	cp "$TEST_DATA/plans/mini-cuda.plan" good.plan &&
	size=$(wc -c <good.plan) &&
	head -c $((size - 100)) good.plan >truncated.plan &&
	head -c 5 good.plan >stub.plan &&
	cp good.plan flipped.plan &&
	# One byte of the payload (offset 200), XORed with 0x20.
	byte=$(od -An -tu1 -j200 -N1 good.plan | tr -d " ") &&
	printf "$(printf "\\\\%03o" $((byte ^ 32)))" |
		dd of=flipped.plan bs=1 seek=200 conv=notrunc 2>/dev/null &&
	! cmp -s good.plan flipped.plan &&
	test $(wc -c <flipped.plan) = $size &&
	cp good.plan header.plan &&
	printf "\\002" | dd of=header.plan bs=1 seek=8 conv=notrunc 2>/dev/null &&
	echo "not a plan at all" >text.plan &&
	: >empty.plan
'

# expect_reader_error FILE MESSAGE: inspect and diff (either side) say
# "bcgtool: FILE: MESSAGE..." and exit 2 with nothing on stdout.
expect_reader_error() {
	file=$1 message=$2
	for cmd in "inspect $file" "inspect --json $file" "inspect --dot $file" \
	           "diff good.plan $file" "diff $file good.plan" "diff --json $file good.plan"; do
		# shellcheck disable=SC2086
		test_expect_code 2 bcg $cmd >out 2>err &&
		test_cmp /dev/null out &&
		test $(wc -l <err) = 1 &&
		test_grep "^bcgtool: $file: $message" err || return 1
	done
}

test_expect_success 'a truncated plan' '
	expect_reader_error truncated.plan "plan file is truncated: "
'

test_expect_success 'a plan cut inside its magic number' '
	expect_reader_error stub.plan "plan file is truncated"
'

test_expect_success 'a plan with one byte of its payload flipped' '
	expect_reader_error flipped.plan "checksum mismatch: payload checksum"
'

test_expect_success 'a plan of a future major version' '
	expect_reader_error header.plan "unsupported plan format version: format version 2.0 is newer than this reader.s 1.9"
'

test_expect_success 'a file that is not a plan' '
	expect_reader_error text.plan "not a plan file (bad magic number)" &&
	expect_reader_error empty.plan "plan file is truncated"
'

test_expect_success 'a missing file' '
	expect_reader_error missing.plan "cannot read: No such file or directory$"
'

test_expect_success 'a directory in place of a plan' '
	mkdir dir.plan &&
	test_expect_code 2 bcg inspect dir.plan >out 2>err &&
	test_cmp /dev/null out &&
	test_grep "^bcgtool: dir.plan: " err
'

test_expect_success 'a tensor-parallel plan (format 1.5, its ranks nested) truncated, or flipped' '
	tp="$BCG_SRC_DIR/t/fuzz/corpus/plan/tp-4.plan" &&
	bcg inspect "$tp" >/dev/null &&
	size=$(wc -c <"$tp") &&
	head -c $((size - 50)) "$tp" >tp-truncated.plan &&
	expect_reader_error tp-truncated.plan "plan file is truncated: " &&
	cp "$tp" tp-flipped.plan &&
	byte=$(od -An -tu1 -j$((size - 60)) -N1 "$tp" | tr -d " ") &&
	printf "$(printf "\\\\%03o" $((byte ^ 32)))" |
		dd of=tp-flipped.plan bs=1 seek=$((size - 60)) conv=notrunc 2>/dev/null &&
	! cmp -s "$tp" tp-flipped.plan &&
	expect_reader_error tp-flipped.plan "checksum mismatch: payload checksum"
'

test_expect_success 'the good plan still reads: the damage is what failed' '
	bcg inspect good.plan >/dev/null &&
	bcg diff good.plan good.plan
'

test_done
