#!/bin/sh
test_description='man pages: one per command, synopsis as its usage, every --help option documented'
. "$(dirname "$0")/test-lib.sh"

man="$BCG_SRC_DIR/man"

# Roff to text, roughly: the text of .B and .I lines kept, other requests
# and comments dropped, font escapes dropped, \- made -.
roff_text() {
	sed -e '/^\.\\"/d' -e 's/^\.[BI] //' -e '/^\./d' \
	    -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\(dq/"/g'
}

# The text of a page's section (.SH NAME), its lines joined.
section_text() {
	sed -n "/^\.SH $2\$/,/^\.SH /p" "$1" | sed -e '1d' -e '$d' | roff_text |
		tr '\n' ' ' | sed -e 's/  */ /g' -e 's/^ //' -e 's/ $//'; echo
}

# The whole page as text, one line per line.
page_text() {
	sed -e 's/^\.[A-Z][A-Z]* //' "$1" | sed -e 's/"//g' | roff_text
}

# The tags of a page's tagged paragraphs (the line after each .TP), as
# text: where options are documented.
tag_text() {
	sed -n '/^\.TP/{n;p;}' "$1" | sed -e 's/^\.[A-Z][A-Z]* //' -e 's/"//g' | roff_text
}

test_expect_success 'the commands, from bcgtool --help' '
	bcg --help | sed -n "/^commands:/,/^\$/s/^  \([a-z][a-z]*\) .*/\1/p" >commands &&
	test $(wc -l <commands) = 13
'

test_expect_success 'every command has a page, and bcgtool(1) lists it' '
	for c in $(cat commands); do
		test -f "$man/bcgtool-$c.1" || { echo "no page for $c"; return 1; }
		grep -q "^\.B $c\$" "$man/bcgtool.1" || { echo "bcgtool.1 does not list $c"; return 1; }
		grep -q "^\.BR bcgtool-$c (1)" "$man/bcgtool.1" || { echo "bcgtool.1 does not refer to bcgtool-$c(1)"; return 1; }
	done &&
	test -f "$man/bcgtool.1" &&
	test -f "$man/bcg-plan.5"
'

test_expect_success 'each page'"'"'s SYNOPSIS is its command'"'"'s usage line' '
	for c in $(cat commands); do
		bcg $c --help | sed -n "s/^usage: //p" >want &&
		section_text "$man/bcgtool-$c.1" SYNOPSIS >got &&
		test_cmp want got || { echo "in bcgtool-$c.1"; return 1; }
	done
'

test_expect_success 'each page documents every option its --help lists, in a tagged paragraph' '
	for c in $(cat commands); do
		bcg $c --help | sed "/^common options/,\$d" >help &&
		tag_text "$man/bcgtool-$c.1" >page &&
		sed -n -e "s/^ *\(-[a-zA-Z0-9]\), \(--[a-z][a-z0-9-]*\).*/\1 \2/p" \
		       -e "s/^ *\(--[a-z][a-z0-9-]*\).*/\1/p" help >options &&
		test -s options || { echo "no options found for $c"; return 1; }
		for o in $(cat options); do
			grep -q -e "^$o\\b" -e "^$o," -e "[ ,]$o\\b" page ||
				{ echo "bcgtool-$c.1 does not document $o"; return 1; }
		done
	done
'

test_expect_success 'bcgtool(1) documents the common options every --help lists' '
	bcg validate --help | sed -n "/^common options/,\$p" |
		sed -n -e "s/^ *\(-[a-zA-Z0-9]\), \(--[a-z][a-z0-9-]*\).*/\1 \2/p" >options &&
	test $(wc -l <options) = 2 &&
	tag_text "$man/bcgtool.1" >page &&
	for o in $(cat options); do
		grep -q -e "^$o\\b" -e "^$o," -e "[ ,]$o\\b" page ||
			{ echo "bcgtool.1 does not document $o"; return 1; }
	done
'

test_expect_success 'the pages name the environment and exit statuses of bcgtool(1)' '
	page_text "$man/bcgtool.1" >page &&
	for v in BCG_BACKEND BCG_PROGRESS BCG_SYNC BCG_TEST_FAULT NO_COLOR SOURCE_DATE_EPOCH NVTX_INJECTION64_PATH; do
		test_grep "^$v\$" page || return 1
	done &&
	section_text "$man/bcgtool.1" "EXIT STATUS" >exit &&
	test_grep "0 Success" exit &&
	test_grep "3 A device or run-time error" exit &&
	test_grep "130, 143 Interrupted by SIGINT or SIGTERM" exit
'

test_expect_success 'the replay page gives the Nsight Systems commands' '
	page_text "$man/bcgtool-replay.1" >page &&
	test_grep "^nsys profile --trace=cuda,nvtx --cuda-graph-trace=node -o REPORT bcgtool replay PLAN\$" page
'

if command -v groff >/dev/null 2>&1; then
	test_set_prereq GROFF
fi

test_expect_success GROFF 'every page formats without a warning' '
	for p in "$man"/*.1 "$man"/*.5; do
		LC_ALL=C groff -man -ww -z "$p" 2>warnings &&
		test_cmp /dev/null warnings || { echo "in $p"; return 1; }
	done
'

test_expect_success 'make install installs every page (dist_man_MANS lists them)' '
	for p in "$man"/*.1 "$man"/*.5; do
		grep -q "man/$(basename "$p")" "$BCG_SRC_DIR/Makefile.am" ||
			{ echo "$p is not in Makefile.am"; return 1; }
	done
'

test_done
