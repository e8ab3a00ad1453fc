#!/bin/sh
test_description='make install: the installed bcgtool runs at once, libplan.pc names the prefix make was given, the headers live under include/bcgtool, libplan.a and the formats are installed'
. "$(dirname "$0")/test-lib.sh"

command -v make >/dev/null 2>&1 || test_skip_all 'make is not installed'
test -f "$BCG_BUILD_DIR/Makefile" || test_skip_all 'no Makefile in the build directory'

# make install runs in the build tree, as the user would run it; alone,
# not as part of the make running this test. The install directories get
# names without spaces (the scratch directory has one).
unset MAKEFLAGS MFLAGS MAKELEVEL
INST="$BCG_BUILD_DIR/t/$TEST_NAME.d"
rm -rf "$INST"
PREFIX=$(sed -n "s/^prefix = //p" "$BCG_BUILD_DIR/Makefile")
command -v pkg-config >/dev/null 2>&1 && command -v cc >/dev/null 2>&1 &&
	test_set_prereq PKG_CONFIG

test_expect_success 'make install into a staging directory (DESTDIR)' '
	make -C "$BCG_BUILD_DIR" install DESTDIR="$INST/stage" >log 2>&1 ||
		{ cat log; false; } &&
	test -x "$INST/stage$PREFIX/bin/bcgtool"
'

# Nothing is installed at the prefix itself, so a bcgtool that loads
# libplan.so would find none there: it must not need to.
test_expect_success 'the installed bcgtool runs with nothing installed beside it' '
	env -u LD_LIBRARY_PATH "$INST/stage$PREFIX/bin/bcgtool" --version >out &&
	test_grep "^bcgtool " out
'

test_expect_success 'the installed bcgtool does not load libplan.so' '
	if command -v readelf >/dev/null 2>&1; then
		readelf -d "$INST/stage$PREFIX/bin/bcgtool" >dyn &&
		! grep "libplan" dyn
	fi
'

test_expect_success 'the headers install under include/bcgtool, not bare' '
	test -f "$INST/stage$PREFIX/include/bcgtool/plan.h" &&
	test -f "$INST/stage$PREFIX/include/bcgtool/plan_errors.h" &&
	! test -e "$INST/stage$PREFIX/include/plan.h"
'

test_expect_success 'the man pages'"'"' formats are installed under docdir' '
	doc="$INST/stage$PREFIX/share/doc/bcgtool" &&
	for f in "$BCG_SRC_DIR"/formats/*.md "$BCG_SRC_DIR"/formats/report-schema.json; do
		cmp "$f" "$doc/$(basename "$f")" || return 1
	done &&
	for f in "$BCG_SRC_DIR"/formats/json/*.schema.json; do
		cmp "$f" "$doc/json/$(basename "$f")" || return 1
	done
'

test_expect_success 'libplan.a is installed beside libplan.so' '
	test -f "$INST/stage$PREFIX/lib/libplan.a" &&
	test -f "$INST/stage$PREFIX/lib/libplan.so"
'

test_expect_success 'make install prefix=DIR writes a libplan.pc that says DIR' '
	make -C "$BCG_BUILD_DIR" install prefix="$INST/opt" >log 2>&1 ||
		{ cat log; false; } &&
	pc="$INST/opt/lib/pkgconfig/libplan.pc" &&
	test -f "$pc" &&
	grep "^prefix=" "$pc" >actual &&
	echo "prefix=$INST/opt" >expect &&
	test_cmp expect actual &&
	! grep "$PREFIX/" "$pc"
'

test_expect_success PKG_CONFIG,!ASAN,!TSAN 'a program builds and runs against the installed libplan through pkg-config' '
	cat >prog.c <<-\EOF &&
	#include <stdio.h>
	#include <bcgtool/plan.h>
	int main(void)
	{
		plan_t *p = plan_new();
		printf("%s %d\n", p ? "ok" : "fail", PLAN_FORMAT_MAJOR);
		plan_free(p);
		return p == NULL;
	}
	EOF
	PKG_CONFIG_PATH="$INST/opt/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config --cflags --libs libplan >flags &&
	cc -o prog prog.c $(cat flags) -Wl,-rpath,"$INST/opt/lib" &&
	./prog >out &&
	test_grep "^ok 1" out
'

# Where only the archive is found, pkg-config --static gives what it needs
# (libzstd, and ISA-L for the CRC-32C): the program links libplan in and
# runs without any rpath to it. The caller's PKG_CONFIG_PATH stays behind
# the installed one, since it may be where libplan's own dependencies are
# found (the GPU machine's bundle, bench/bundle-extra.sh).
test_expect_success PKG_CONFIG,!ASAN,!TSAN 'pkg-config --static links a program against libplan.a alone' '
	mkdir "$INST/static-lib" &&
	cp "$INST/opt/lib/libplan.a" "$INST/static-lib/" &&
	PKG_CONFIG_PATH="$INST/opt/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" pkg-config --static --cflags --libs \
		--define-variable=libdir="$INST/static-lib" libplan >flags &&
	cc -o sprog prog.c $(cat flags) &&
	env -u LD_LIBRARY_PATH ./sprog >out &&
	test_grep "^ok 1" out &&
	if command -v readelf >/dev/null 2>&1; then
		readelf -d sprog >dyn &&
		! grep "libplan" dyn
	fi
'

test_expect_success 'make uninstall prefix=DIR leaves no file behind' '
	make -C "$BCG_BUILD_DIR" uninstall prefix="$INST/opt" >log 2>&1 ||
		{ cat log; false; } &&
	find "$INST/opt" -type f >left &&
	test_cmp /dev/null left &&
	rm -rf "$INST"
'

test_done
