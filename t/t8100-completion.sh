#!/bin/sh
test_description='bash completion: commands, options from --help, plan and script file names'
. "$(dirname "$0")/test-lib.sh"

completion="$BCG_SRC_DIR/completion/bcgtool.bash"

command -v bash >/dev/null 2>&1 && test_set_prereq BASH

# complete WORDS...: the completions bash offers for the command line
# "bcgtool WORDS...", the cursor on the last word, sorted, one per line.
complete_line() {
	bash -c '
		source "$1" || exit 1
		shift
		COMP_WORDS=("$BCGTOOL" "$@")
		COMP_CWORD=$#
		_bcgtool
		printf "%s\n" "${COMPREPLY[@]}" | sed "/^\$/d" | sort
	' complete-line "$completion" "$@"
}

test_expect_success BASH 'setup: plans, scripts and a directory to complete' '
	: >a.plan && : >b.plan && : >model.yaml && : >other.yml && : >notes.txt &&
	mkdir sub
'

test_expect_success BASH 'the commands, and help' '
	complete_line "" >actual &&
	cat >expect <<-\EOF &&
	bench
	capture
	diff
	help
	import
	inspect
	instantiate
	ops
	profile
	record
	replay
	report
	run
	validate
	EOF
	test_cmp expect actual &&
	complete_line ins >actual &&
	printf "inspect\ninstantiate\n" >expect &&
	test_cmp expect actual &&
	complete_line help d >actual &&
	echo diff >expect &&
	test_cmp expect actual
'

test_expect_success BASH 'global options' '
	complete_line -- -- >actual &&
	printf -- "--help\n--version\n" >expect &&
	test_cmp expect actual
'

test_expect_success BASH 'every command'"'"'s options are those its --help lists' '
	for c in bench capture diff import inspect instantiate ops profile replay report run validate; do
		bcg $c --help | sed -n -e "s/^ *-[a-zA-Z0-9], \(--[a-z][a-z-]*\).*/\1/p;t" \
		                        -e "s/^ *\(--[a-z][a-z-]*\).*/\1/p" | sort >expect &&
		test -s expect &&
		complete_line $c -- >actual &&
		test_cmp expect actual || { echo "for $c"; return 1; }
	done
'

test_expect_success BASH 'options of inspect and diff, by prefix' '
	complete_line inspect --vari >actual &&
	echo --variant >expect &&
	test_cmp expect actual &&
	complete_line diff --i >actual &&
	echo --ignore-env >expect &&
	test_cmp expect actual &&
	complete_line diff --ignore-env --sta >actual &&
	echo --stat >expect &&
	test_cmp expect actual &&
	complete_line diff --str >actual &&
	echo --strict >expect &&
	test_cmp expect actual
'

test_expect_success BASH 'plans for the commands that read plans' '
	printf "a.plan\nb.plan\nsub\n" >expect &&
	for c in inspect diff instantiate replay; do
		complete_line $c "" >actual &&
		test_cmp expect actual || return 1
	done &&
	complete_line diff a.plan "" >actual &&
	test_cmp expect actual &&
	complete_line inspect --nodes b >actual &&
	echo b.plan >expect &&
	test_cmp expect actual
'

test_expect_success BASH 'scripts for the commands that read scripts, plans for -o' '
	printf "model.yaml\nother.yml\nsub\n" >expect &&
	for c in capture run bench validate; do
		complete_line $c "" >actual &&
		test_cmp expect actual || return 1
	done &&
	complete_line capture -o "" >actual &&
	printf "a.plan\nb.plan\nsub\n" >expect &&
	test_cmp expect actual
'

test_expect_success BASH 'option arguments' '
	complete_line capture --backend "" >actual &&
	printf "auto\ncuda\nhost\n" >expect &&
	test_cmp expect actual &&
	complete_line capture --mode f >actual &&
	printf "full\nfull_and_breakable\n" >expect &&
	test_cmp expect actual &&
	complete_line capture --verify "" >actual &&
	printf "all\nfirst-and-largest\nnone\n" >expect &&
	test_cmp expect actual &&
	complete_line inspect --color "" >actual &&
	printf "always\nauto\nnever\n" >expect &&
	test_cmp expect actual &&
	complete_line inspect --variant "" >actual &&
	test_cmp /dev/null actual &&
	complete_line ops "" >actual &&
	test_cmp /dev/null actual
'

test_expect_success 'the completion is installed under the name of the command' '
	grep -q "completion/bcgtool.bash" "$BCG_SRC_DIR/Makefile.am" &&
	grep -q "(BASH_COMPLETION_DIR)/bcgtool" "$BCG_SRC_DIR/Makefile.am" &&
	grep -q "^complete -F _bcgtool bcgtool\$" "$completion"
'

test_done
