#!/bin/sh
test_description='validate rejects each bad script with its exact message and position

Each t/data/scripts/bad/NAME.yaml breaks one rule of formats/op-script.md;
NAME.err holds the one line validate must print. The scripts are named
relative to the source tree, so the expected paths do not depend on where
the build is.'
. "$(dirname "$0")/test-lib.sh"

BAD="$TEST_DATA/scripts/bad"

test_expect_success 'the corpus holds at least 40 scripts, each with its error' '
	n=0 &&
	for y in "$BAD"/*.yaml; do
		test -f "${y%.yaml}.err" || { echo "missing ${y%.yaml}.err"; return 1; }
		n=$((n + 1))
	done &&
	test $n -ge 40
'

for y in "$BAD"/*.yaml; do
	name=$(basename "$y" .yaml)
	test_expect_success "$name: exit 2, one error line, nothing on stdout" '
		(cd "$BCG_SRC_DIR" &&
		 test_expect_code 2 "$BCGTOOL" validate "t/data/scripts/bad/'"$name"'.yaml" \
			>"$TRASH_DIRECTORY/out" 2>"$TRASH_DIRECTORY/err") &&
		test_cmp "$BAD/'"$name"'.err" err &&
		! test -s out
	'
done

test_done
