#!/bin/sh
test_description='the man pages and the README speak only of what users have'
. "$(dirname "$0")/test-lib.sh"

# .gpu/ is where the project's own GPU machine keeps its profiler wrapper;
# users have no such directory.
test_expect_success 'no page mentions the project'"'"'s .gpu directory' '
	grep -n "\.gpu\b" "$BCG_SRC_DIR"/man/*.[0-9] "$BCG_SRC_DIR/README.md" >found;
	test_cmp /dev/null found
'

test_done
