#!/bin/sh
test_description='verification where the data lies: state kept beside the arena or in host memory, the same verdict'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"

# BCG_TEST_SPARE_BYTES caps what a stash keeps in the backend's memory:
# 0 sends every kept tensor through host memory (the fallback when the
# device is full), 10000 keeps two of the four 4 KiB cache tensors
# beside the arena and reads the others to the host. test-lib.sh sets
# SOURCE_DATE_EPOCH, so captures without tuning are byte for byte the same.
for mode in breakable full; do
	test_expect_success "$mode capture: the plan is the same whichever way the state is kept" '
		bcg capture --backend host --no-tune --mode $mode -o $mode-spare.plan "$small" >$mode-spare.out &&
		BCG_TEST_SPARE_BYTES=0 bcg capture --backend host --no-tune --mode $mode \
			-o $mode-host.plan "$small" >$mode-host.out &&
		BCG_TEST_SPARE_BYTES=10000 bcg capture --backend host --no-tune --mode $mode \
			-o $mode-mixed.plan "$small" >$mode-mixed.out &&
		cmp $mode-spare.plan $mode-host.plan &&
		cmp $mode-spare.plan $mode-mixed.plan &&
		# The same table but for the measured times, which differ run to run
		# (and the times of the phases, after the count of verified variants).
		sed -e "s/$mode-[a-z]*\.plan/P/" -e "s/ *[0-9.][0-9.]* ms/ - ms/g" \
			-e "s/; [0-9.]* s: .*//" $mode-spare.out >expect &&
		sed -e "s/$mode-[a-z]*\.plan/P/" -e "s/ *[0-9.][0-9.]* ms/ - ms/g" \
			-e "s/; [0-9.]* s: .*//" $mode-host.out >actual &&
		test_cmp expect actual
	'
done

for mode in breakable full; do
	test_expect_success "replay --check of the $mode plan: the same verdict from a kept copy and from host memory" '
		bcg replay --backend host --steps 3 --warmup 1 --check --json $mode-spare.plan >spare.json &&
		BCG_TEST_SPARE_BYTES=0 bcg replay --backend host --steps 3 --warmup 1 --check --json \
			$mode-spare.plan >host.json &&
		sed -n "/\"check\": {/,/}/p" spare.json >expect &&
		sed -n "/\"check\": {/,/}/p" host.json >actual &&
		test_cmp expect actual &&
		test_grep "\"pass\": true" actual
	'
done

test_expect_success 'a malformed BCG_TEST_SPARE_BYTES is a usage error' '
	test_expect_code 2 env BCG_TEST_SPARE_BYTES=lots "$BCGTOOL" replay --backend host --steps 1 \
		--warmup 0 --check breakable-spare.plan >out 2>err &&
	test_grep "BCG_TEST_SPARE_BYTES: .lots. is not a byte count" err
'

# A state of 256 MiB (two layers of two bf16 caches of 2^20 positions of
# 32): kept on the device and compared there, the plan is the one the host
# copy gives, relative errors of the full-mode variants included.
test_expect_success CUDA 'cuda: a script with a large state captures and verifies, on the device as through the host' '
	sed "s/^  S: 64 .*/  S: 1048576/" "$small" >large.yaml &&
	test_grep "^  S: 1048576$" large.yaml &&
	for mode in breakable full; do
		bcg capture --backend cuda --no-tune --mode $mode -o large-$mode.plan large.yaml \
			>large-$mode.out &&
		BCG_TEST_SPARE_BYTES=0 bcg capture --backend cuda --no-tune --mode $mode \
			-o large-$mode-host.plan large.yaml >/dev/null &&
		cmp large-$mode.plan large-$mode-host.plan || return 1
	done &&
	test $(grep -c "bit-exact$" large-breakable.out) = 3 &&
	bcg replay --backend cuda --steps 5 --warmup 1 --check large-full.plan >replay.out &&
	test_grep "^check        \(bit-exact\|within bounds\)" replay.out
'

test_done
