#!/bin/sh
test_description='the command line: help, version, command lookup, exit codes'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'bcgtool --help lists every command on stdout' '
	bcg --help >out &&
	for c in bench capture diff inspect instantiate ops replay run validate; do
		test_grep "^  $c " out || return 1
	done
'

test_expect_success 'bcgtool with no command is a usage error' '
	test_expect_code 2 bcg 2>err &&
	test_grep "^usage: bcgtool" err
'

test_expect_success 'bcgtool --version names the plan format' '
	bcg --version >out &&
	test_grep "^bcgtool [0-9][0-9.]* (plan format 1\.[0-9]*: reads any 1\.x, writes each plan in the oldest version that holds it)$" out
'

test_expect_success 'an unknown command exits 2 with its name' '
	test_expect_code 2 bcg frobnicate 2>err &&
	echo "bcgtool: unknown command: frobnicate (see '\''bcgtool --help'\'')" >expect &&
	test_cmp expect err
'

test_expect_success 'a unique prefix selects a command' '
	bcg val --help >out &&
	test_grep "^usage: bcgtool validate" out
'

test_expect_success 'an ambiguous prefix lists the candidates' '
	test_expect_code 2 bcg in 2>err &&
	echo "bcgtool: ambiguous command: in, could be: inspect instantiate" >expect &&
	test_cmp expect err
'

test_expect_success 'every command answers --help on stdout with exit 0' '
	for c in bench capture diff inspect instantiate ops replay run validate; do
		bcg $c --help >out 2>err &&
		test_grep "^usage: bcgtool $c" out &&
		! test -s err || return 1
	done
'

test_expect_success 'bcgtool help COMMAND is COMMAND --help' '
	bcg help diff >a &&
	bcg diff --help >b &&
	test_cmp a b
'

test_expect_success 'an unknown global option is a usage error' '
	test_expect_code 2 bcg --frob 2>err &&
	test_grep "unknown option --frob" err
'

test_done
