#!/bin/sh
test_description='BCG_GEMV_SHAPE and BCG_MOE_GU_SHAPE, the block shapes of the decode products: the values taken, the values refused (a usage error for every command that runs work, on every backend) and that the host backend computes the same under any (t/unit/cuda-ops runs every shape on the GPU)'
. "$(dirname "$0")/test-lib.sh"

tiny="$SAMPLES/tiny-mlp.yaml"

test_expect_success 'setup: a plan of the tiny sample, and its outputs with no shape set' '
	bcg capture -q --backend host --no-tune -o tiny.plan "$tiny" >/dev/null &&
	bcg run --backend host --steps 2 --dump-outputs base "$tiny" >/dev/null
'

test_expect_success 'BCG_GEMV_SHAPE: a shape not listed is refused with exit 2, naming it and what is taken' '
	for v in g5u2 g4u3 g16u2 g8u4 g04u2 G4U2 g4u2x g4 u2 g4u "g4u2 " auto2 g100u1 "-1"; do
		test_expect_code 2 env BCG_GEMV_SHAPE="$v" "$BCGTOOL" run --backend host "$tiny" \
			>out 2>err &&
		echo "bcgtool: BCG_GEMV_SHAPE is '\''$v'\'': gGuU with G 4, 8 or 16 rows a block and U 1, 2 or 4 units a round, G * U <= 16 (g4u2 is the default), or auto or default" >expect &&
		test_cmp expect err || return 1
	done
'

test_expect_success 'BCG_MOE_GU_SHAPE: a shape not listed (auto included) is refused with exit 2' '
	for v in g16u1 g8u2 g2u8 g3u1 auto g2u2x; do
		test_expect_code 2 env BCG_MOE_GU_SHAPE="$v" "$BCGTOOL" run --backend host "$tiny" \
			>out 2>err &&
		echo "bcgtool: BCG_MOE_GU_SHAPE is '\''$v'\'': gGuU with G 2, 4 or 8 columns a block and U 1, 2 or 4 units a round, 2G * U <= 16 (g4u1 at one token, g2u2 above, is the default), or default" >expect &&
		test_cmp expect err || return 1
	done
'

test_expect_success 'a bad shape stops capture (no plan written), replay and instantiate alike' '
	test_expect_code 2 env BCG_GEMV_SHAPE=g3u3 "$BCGTOOL" capture --backend host \
		-o no.plan "$tiny" >out 2>err &&
	test_grep "BCG_GEMV_SHAPE is .g3u3." err &&
	! test -e no.plan &&
	test_expect_code 2 env BCG_MOE_GU_SHAPE=g1u1 "$BCGTOOL" replay --backend host --steps 1 \
		tiny.plan >out 2>err &&
	test_grep "BCG_MOE_GU_SHAPE is .g1u1." err &&
	test_expect_code 2 env BCG_GEMV_SHAPE=x "$BCGTOOL" instantiate --backend host tiny.plan \
		>out 2>err &&
	test_grep "BCG_GEMV_SHAPE is .x." err
'

test_expect_success 'every listed shape, auto, default and empty are taken; the host computes the same' '
	for v in g4u1 g4u2 g4u4 g8u1 g8u2 g16u1 auto default ""; do
		rm -rf got &&
		BCG_GEMV_SHAPE=$v bcg run --backend host --steps 2 --dump-outputs got "$tiny" \
			>/dev/null &&
		for f in base/*; do cmp "$f" "got/${f#base/}" || return 1; done || return 1
	done &&
	for v in g2u1 g2u2 g2u4 g4u1 g4u2 g8u1 default ""; do
		rm -rf got &&
		BCG_MOE_GU_SHAPE=$v bcg run --backend host --steps 2 --dump-outputs got "$tiny" \
			>/dev/null &&
		for f in base/*; do cmp "$f" "got/${f#base/}" || return 1; done || return 1
	done
'

test_expect_success 'bcgtool(1) documents both variables and their defaults' '
	man1="$BCG_SRC_DIR/man/bcgtool.1" &&
	test_grep "^\.B BCG_GEMV_SHAPE\$" "$man1" &&
	test_grep "^\.B BCG_MOE_GU_SHAPE\$" "$man1" &&
	test_grep "empty or unset: g4u2" "$man1" &&
	test_grep "empty or unset: g4u1 where a block holds one pair" "$man1" &&
	test_grep "^the fastest of the shapes measured), g2u2 above\.\$" "$man1"
'

test_done
