#!/bin/sh
test_description='--nccl-mem default|symmetric on capture, run, bench, replay and instantiate: parsing, refusals (one rank, NCCL absent or older than 2.27), a no-op on the host backend whose plans stay as without it'
. "$(dirname "$0")/test-lib.sh"

test "${BCG_HAVE_NCCL:-no}" = yes && test_set_prereq NCCL_BUILD
test "${BCG_HAVE_NCCL:-no}" != yes && test_set_prereq NO_NCCL_BUILD

# A small MLP: at --tp 2 the sharding pass inserts down.all_reduce (y,
# [T, 8] f32) and no other collective.
tp_mlp plain >mlp.yaml

test_expect_success 'an unknown memory: a usage error on every command' '
	for c in "capture --tp 2 -o p.plan mlp.yaml" "run --tp 2 mlp.yaml" \
	         "bench --tp 2 mlp.yaml" "replay x.plan" "instantiate x.plan"; do
		test_expect_code 2 bcg $c --nccl-mem shared 2>err &&
		test_grep "^bcgtool [a-z]*: --nccl-mem takes default or symmetric, not '"'"'shared'"'"'" err ||
		return 1
	done
'

test_expect_success 'symmetric memory with one rank: a usage error (no collectives)' '
	for c in "capture -o p.plan" "run" "bench"; do
		test_expect_code 2 bcg $c --backend host --nccl-mem symmetric mlp.yaml 2>err &&
		test_grep "^bcgtool [a-z]*: --nccl-mem symmetric places the operands of collectives, and one rank has none: it needs --tp 2 or more" err ||
		return 1
	done &&
	! test -e p.plan
'

test_expect_success 'the host backend: symmetric is a no-op, said once; the plan is the one without it, byte for byte' '
	SOURCE_DATE_EPOCH=1 bcg capture --backend host --no-tune --tp 2 -o def.plan mlp.yaml >out 2>err0 &&
	SOURCE_DATE_EPOCH=1 bcg capture --backend host --no-tune --tp 2 --nccl-mem symmetric \
		-o sym.plan mlp.yaml >out 2>err &&
	test $(grep -c "note: --nccl-mem symmetric: the host backend'"'"'s ranks have no NCCL; their collectives'"'"' operands stay in the arena (default)" err) = 1 &&
	! grep "nccl-mem" err0 &&
	cmp def.plan sym.plan &&
	bcg inspect def.plan >info &&
	test_grep "rank 0 of 2, no NCCL\$" info &&
	! grep "symmetric" info
'

test_expect_success 'the host backend: run, bench, replay and instantiate take it as a no-op' '
	bcg run --backend host --tp 2 --nccl-mem symmetric mlp.yaml >out 2>err &&
	test_grep "note: --nccl-mem symmetric: the host backend" err &&
	bcg bench --backend host --steps 2 --warmup 1 --tp 2 --nccl-mem symmetric mlp.yaml >out 2>err &&
	test_grep "note: --nccl-mem symmetric: the host backend" err &&
	bcg replay --backend host --steps 2 --warmup 1 --nccl-mem symmetric def.plan >out 2>err &&
	test_grep "note: --nccl-mem symmetric: the host backend" err &&
	bcg instantiate --backend host --nccl-mem default def.plan >out 2>err &&
	! grep "nccl-mem" err
'

test_expect_success CUDA_BUILD,NCCL_BUILD 'cuda: NCCL older than 2.27 is refused before any work, naming its version' '
	for c in "capture -o p.plan" "run" "bench"; do
		BCG_TEST_NCCL_VERSION=22605 test_expect_code 3 bcg $c --backend cuda --tp 2 \
			--nccl-mem symmetric mlp.yaml >out 2>err &&
		echo "bcgtool: --nccl-mem symmetric: NCCL 2.26.5 has no symmetric memory windows (NCCL 2.27 or later): use --nccl-mem default" >expect &&
		test_cmp expect err || return 1
	done &&
	BCG_TEST_NCCL_VERSION=22605 test_expect_code 3 bcg replay --backend cuda \
		--nccl-mem symmetric def.plan >out 2>err &&
	test_cmp expect err &&
	! test -e p.plan
'

test_expect_success CUDA_BUILD,NO_NCCL_BUILD 'cuda without NCCL: symmetric memory is refused, naming what is missing' '
	test_expect_code 2 bcg run --backend cuda --tp 2 --nccl-mem symmetric mlp.yaml >out 2>err &&
	test_grep "^bcgtool: --nccl-mem symmetric: this build has no NCCL" err
'

test_done
