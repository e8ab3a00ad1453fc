#!/bin/sh
test_description='XXH64 comes from libxxhash and CRC-32C from ISA-L, not from code of our own; bcgtool and libplan.so find every library they need without LD_LIBRARY_PATH'
. "$(dirname "$0")/test-lib.sh"

# Known-answer tests of both hashes are t/unit/xxh64 and t/unit/plan-hash;
# this one checks where the implementations come from, in the programs as
# built (libxxhash shared here, linked in from libxxhash.a on the GPU
# machine; ISA-L shared everywhere).
LIBPLAN_SO="$BCG_BUILD_DIR/libplan/.libs/libplan.so"
command -v nm >/dev/null 2>&1 || test_skip_all 'nm is not installed'
command -v readelf >/dev/null 2>&1 || test_skip_all 'readelf is not installed'
test -f "$LIBPLAN_SO" && test_set_prereq SHARED
command -v ldd >/dev/null 2>&1 && test_set_prereq LDD

test_expect_success 'list the symbols and needed libraries of bcgtool' '
	nm "$BCGTOOL" >syms &&
	readelf -d "$BCGTOOL" >dyn &&
	test_file_not_empty syms
'

test_expect_success 'bcgtool has no XXH64 of its own' '
	! grep "bcg_xxh64" syms
'

test_expect_success 'its XXH64 is libxxhash'"'"'s: loaded from libxxhash.so, or linked in with the rest of libxxhash.a' '
	if grep " U XXH64$" syms; then
		grep "(NEEDED).*\[libxxhash\.so" dyn
	else
		grep " T XXH64$" syms &&
		grep " T XXH_versionNumber$" syms &&
		grep " T XXH3_64bits$" syms &&
		! grep "(NEEDED).*\[libxxhash\.so" dyn
	fi
'

test_expect_success 'bcgtool has no CRC-32C table of its own, and calls ISA-L'"'"'s crc32_iscsi' '
	! grep " [a-zA-Z] crc32c_table$" syms &&
	grep " U crc32_iscsi$" syms &&
	grep "(NEEDED).*\[libisal\.so\.2\]" dyn
'

test_expect_success SHARED 'libplan.so too: no table, crc32_iscsi from libisal.so.2' '
	nm "$LIBPLAN_SO" >lsyms &&
	readelf -d "$LIBPLAN_SO" >ldyn &&
	grep " T plan_crc32c$" lsyms &&
	! grep " [a-zA-Z] crc32c_table$" lsyms &&
	grep " U crc32_iscsi$" lsyms &&
	grep "(NEEDED).*\[libisal\.so\.2\]" ldyn
'

# Where a library is not installed (ISA-L on the GPU machine), the run path
# the build gave must reach it.
test_expect_success LDD 'every library bcgtool needs is found without LD_LIBRARY_PATH' '
	env -u LD_LIBRARY_PATH ldd "$BCGTOOL" >libs &&
	grep "libisal\.so\.2 => /" libs &&
	! grep "not found" libs
'

test_expect_success LDD,SHARED 'every library libplan.so needs is found without LD_LIBRARY_PATH' '
	env -u LD_LIBRARY_PATH ldd "$LIBPLAN_SO" >libs &&
	grep "libisal\.so\.2 => /" libs &&
	! grep "not found" libs
'

test_expect_success 'bcgtool runs without LD_LIBRARY_PATH' '
	env -u LD_LIBRARY_PATH "$BCGTOOL" --version >out &&
	test_grep "^bcgtool " out
'

test_done
