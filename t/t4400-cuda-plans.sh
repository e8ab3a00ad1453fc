#!/bin/sh
test_description='inspect and diff on plans captured on a GPU (skipped without one)'
. "$(dirname "$0")/test-lib.sh"

check="$TEST_DIRECTORY/inspect-check.py"

# --no-tune: two captures that time their candidates may choose differently
# where the times are close (inspect --choices marks those).
test_expect_success CUDA 'setup: two captures of the fixture script on the GPU' '
	cp "$TEST_DATA/plans/mini.yaml" . &&
	bcg capture --backend cuda --no-tune -o one.plan mini.yaml >/dev/null &&
	bcg capture --backend cuda --no-tune -o two.plan mini.yaml >/dev/null
'

test_expect_success CUDA 'the segments have kernel nodes, shown by --nodes' '
	bcg inspect --nodes --variant 2 one.plan >nodes &&
	test_grep "^  #  type  *kernel  *grid  *block  *shared  *op  *arena operands$" nodes &&
	test_grep "^  *0  kernel  " nodes &&
	! grep "none recorded" nodes
'

test_expect_success CUDA,PYTHON3 '--json of a GPU plan: what validate says, fingerprints as defined' '
	bcg inspect --json one.plan >one.json &&
	bcg validate --json mini.yaml >summary.json &&
	"$PYTHON3" "$check" script one.json summary.json mini.yaml &&
	"$PYTHON3" "$check" nodes one.json
'

test_expect_success CUDA,DOT '--dot of a GPU plan renders' '
	bcg inspect --dot one.plan >one.dot &&
	"$DOT" -Tsvg one.dot >one.svg
'

test_expect_success CUDA 'two GPU captures of one script diff as equal' '
	bcg diff one.plan two.plan >out &&
	test_cmp /dev/null out
'

test_expect_success CUDA 'a GPU plan against a host plan: backend, environment and nodes differ' '
	bcg capture --backend host -o host.plan mini.yaml >/dev/null &&
	test_expect_code 1 bcg diff host.plan one.plan >out &&
	test_grep "^-backend: host$" out &&
	test_grep "^+backend: cuda$" out &&
	test_grep "^-  nodes recorded: no$" out &&
	test_expect_code 1 bcg diff --ignore-env --stat host.plan one.plan >stat &&
	test_grep "^variant 2 (breakable): 5 items, 2 same, 3 changed" stat
'

test_done
