#!/bin/sh
test_description='bcgtool inspect: the summary and every section, against reviewed golden files'
. "$(dirname "$0")/test-lib.sh"

golden="$TEST_DATA/inspect"

test_expect_success 'setup: the fixture plans, where the golden files expect them' '
	cp "$TEST_DATA"/plans/*.plan . &&
	test_file_not_empty mini.plan &&
	test_file_not_empty mini-cuda.plan
'

# One step per line of t/data/inspect/cases: NAME PLAN OPTIONS...
while read -r name plan opts; do
	case $name in ''|'#'*) continue ;; esac
	test_expect_success "inspect $opts $plan matches $name.out" "
		bcg inspect $opts $plan >actual &&
		test_cmp '$golden/$name.out' actual
	"
done <"$golden/cases"

test_expect_success 'every section option of inspect --help has a golden file' '
	bcg inspect --help >help &&
	sed -n "s/^ *\(--[a-z]*\) .*/\1/p" help >options &&
	test_grep -e --dims options &&
	for o in $(cat options); do
		case $o in --variant|--json|--dot|--color|--help|--all) continue ;; esac
		grep -q -e " $o\$" -e " $o " "$golden/cases" ||
			{ echo "no golden file for $o"; return 1; }
	done
'

test_expect_success 'sections print in a fixed order, whatever the order of the options' '
	bcg inspect --stats --dims mini.plan >a &&
	bcg inspect --dims --stats mini.plan >b &&
	test_cmp a b &&
	head -n 1 a >first &&
	echo dims >expect &&
	test_cmp expect first
'

test_expect_success '--all is every section, in order, separated by empty lines' '
	for s in dims vars tensors ops items segments breakpoints nodes-1 choices dispatch checks stats; do
		case $s in nodes-1) bcg inspect --nodes mini.plan ;; *) cat "$golden/mini.$s.out" ;; esac &&
		echo || return 1
	done >expect.all &&
	sed -e "\$d" expect.all >expect &&
	bcg inspect --all mini.plan >actual &&
	test_cmp expect actual
'

test_expect_success '--variant keeps only that variant in every per-variant section' '
	bcg inspect --items --segments --breakpoints --checks --stats --variant 4 mini.plan >out &&
	! grep "of variant [12] " out &&
	test_grep "^items of variant 4 (eager)$" out &&
	test_grep "^segments of variant 4 (eager)$" out &&
	test_grep "^  none: every op is a breakpoint in eager mode$" out &&
	test_grep "^breakpoints of variant 4 (eager)$" out &&
	sed -n "/^breakpoints of/,/^\$/p" out >bp &&
	test $(grep -c " mode  " bp) = 13 &&
	sed -n "/^checks/,/^\$/p" out >checks &&
	test $(grep -c "^  *4  next " checks) = 1 &&
	test $(grep -c "next" checks) = 1
'

test_expect_success '-v is --variant; -t, which is --tokens elsewhere, is not' '
	bcg inspect -v 1 --items mini.plan >a &&
	bcg inspect --variant 1 --items mini.plan >b &&
	test_cmp a b &&
	test_expect_code 2 bcg inspect -t 1 --items mini.plan 2>err &&
	test_grep "unknown option -t" err
'

test_expect_success 'a variant the plan does not have is an error naming the capture sizes' '
	test_expect_code 2 bcg inspect --variant 3 mini.plan >out 2>err &&
	echo "bcgtool: mini.plan: no variant for 3 tokens (capture sizes: 1, 2, 4)" >expect &&
	test_cmp expect err &&
	test_cmp /dev/null out
'

test_expect_success 'usage errors exit 2 with the usage line' '
	test_expect_code 2 bcg inspect 2>err &&
	test_grep "^bcgtool inspect: no plan given$" err &&
	test_grep "^usage: bcgtool inspect " err &&
	test_expect_code 2 bcg inspect mini.plan mini.plan 2>err &&
	test_grep "one plan only" err &&
	test_expect_code 2 bcg inspect --json --dot mini.plan 2>err &&
	test_grep "json and --dot are exclusive" err &&
	test_expect_code 2 bcg inspect --json --tensors mini.plan 2>err &&
	test_grep "section options do not apply" err &&
	test_expect_code 2 bcg inspect --dot --nodes --tensors mini.plan 2>err &&
	test_grep "section options do not apply (but --nodes)" err &&
	test_expect_code 2 bcg inspect --json --nodes mini.plan 2>err &&
	test_grep "section options do not apply$" err &&
	test_expect_code 2 bcg inspect --variant 0 mini.plan 2>err &&
	test_grep "variant takes a whole number" err &&
	test_expect_code 2 bcg inspect --color sometimes mini.plan 2>err &&
	test_grep "color takes auto, always or never, not .sometimes." err &&
	test_expect_code 2 bcg inspect --frob mini.plan 2>err &&
	test_grep "unknown option --frob" err
'

test_expect_success '--color=never and the default off a terminal print no escapes' '
	bcg inspect --all mini-cuda.plan >plain &&
	bcg inspect --all --color never mini-cuda.plan >never &&
	test_cmp plain never &&
	! grep "$(printf "\033")" plain
'

test_expect_success '--color=always colors titles, headers and rows, and nothing else' '
	bcg inspect --items --variant 2 --color always mini.plan >colored &&
	esc=$(printf "\033") &&
	test_grep "^${esc}\[1mitems of variant 2 (breakable)${esc}\[0m$" colored &&
	test_grep "^  ${esc}\[2mitem  kind" colored &&
	test_grep "^  ${esc}\[33m   1  break  .*${esc}\[0m$" colored &&
	test_grep "^  ${esc}\[36m   0  segment  .*${esc}\[0m$" colored &&
	sed -e "s/${esc}\[[0-9]*m//g" colored >stripped &&
	bcg inspect --items --variant 2 mini.plan >plain &&
	test_cmp plain stripped
'

# A terminal, from script(1) when it is there.
if command -v script >/dev/null 2>&1 && script -qec true /dev/null >/dev/null 2>&1; then
	test_set_prereq SCRIPT
fi

test_expect_success SCRIPT 'on a terminal: colors unless NO_COLOR is set' '
	esc=$(printf "\033") &&
	(unset NO_COLOR; script -qec "\"$BCGTOOL\" inspect --dims mini.plan" /dev/null) >tty &&
	test_grep "${esc}\[1mdims" tty &&
	NO_COLOR=1 script -qec "\"$BCGTOOL\" inspect --dims mini.plan" /dev/null >tty-no &&
	! grep "$esc" tty-no &&
	NO_COLOR= script -qec "\"$BCGTOOL\" inspect --dims mini.plan" /dev/null >tty-empty &&
	test_grep "${esc}\[1mdims" tty-empty &&
	NO_COLOR=1 script -qec "\"$BCGTOOL\" inspect --color always --dims mini.plan" /dev/null >tty-always &&
	test_grep "${esc}\[1mdims" tty-always
'

test_expect_success 'the summary of a plan written in a subdirectory names the path as given' '
	mkdir -p sub &&
	cp mini.plan sub/ &&
	bcg inspect sub/mini.plan >out &&
	test_grep "^plan      sub/mini.plan (1.62 KiB, format 1.0)$" out
'

test_done
