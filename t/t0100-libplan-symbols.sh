#!/bin/sh
test_description='libplan.so exports the plan_* interface of plan.h and nothing else'
. "$(dirname "$0")/test-lib.sh"

LIBPLAN_SO="$BCG_BUILD_DIR/libplan/.libs/libplan.so"
command -v nm >/dev/null 2>&1 || test_skip_all 'nm is not installed'
test -f "$LIBPLAN_SO" || test_skip_all 'no shared libplan was built'

test_expect_success 'list the dynamic symbols libplan.so defines' '
	nm -D --defined-only "$LIBPLAN_SO" >syms &&
	awk "{ print \$NF }" syms | sort -u >names &&
	test_file_not_empty names
'

test_expect_success 'every one is plan_ followed by a letter or digit' '
	grep -v "^plan_[a-z0-9]" names >others;
	test_cmp /dev/null others
'

test_expect_success 'no internal plan__ name escapes' '
	! grep "^plan__" names
'

test_expect_success 'every function plan.h and plan_errors.h declare is exported' '
	cat "$BCG_SRC_DIR/libplan/plan.h" "$BCG_SRC_DIR/libplan/plan_errors.h" |
		sed -n "s/^[a-z].*[ *]\(plan_[a-z0-9_]*\)(.*/\1/p" | sort -u >declared &&
	test_file_not_empty declared &&
	comm -23 declared names >missing &&
	test_cmp /dev/null missing
'

test_done
