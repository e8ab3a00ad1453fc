#!/bin/sh
test_description='inputs, outputs and options every command shares: -, directories, unwritable outputs, =value, -V'
. "$(dirname "$0")/test-lib.sh"

mini="$TEST_DATA/plans/mini.plan"
tiny="$SAMPLES/tiny-mlp.yaml"

test_expect_success 'a directory given as a script says so' '
	mkdir adir &&
	test_expect_code 2 bcg validate adir 2>err &&
	echo "bcgtool: adir: is a directory" >expect &&
	test_cmp expect err
'

test_expect_success 'a missing plan: one label, the name once' '
	test_expect_code 2 bcg inspect missing.plan 2>err &&
	echo "bcgtool: missing.plan: cannot read: No such file or directory" >expect &&
	test_cmp expect err
'

test_expect_success 'inspect - reads the plan from standard input' '
	bcg inspect --items "$mini" >expect &&
	bcg inspect --items - <"$mini" >actual &&
	test_cmp expect actual
'

test_expect_success 'validate - reads the script from standard input' '
	bcg validate --json "$tiny" >expect.json &&
	bcg validate --json - <"$tiny" >actual.json &&
	test_grep "\"dims\"" actual.json
'

test_expect_success 'capture -o - writes the plan to standard output, the report to stderr' '
	bcg capture --backend host -o - "$tiny" >stdout.plan 2>err &&
	test_grep "^wrote " err &&
	bcg inspect --items stdout.plan >out &&
	test_grep "items of variant 8" out &&
	! test -e ./-
'

test_expect_success 'capture into a place it cannot write fails before the work' '
	mkdir ro &&
	test_expect_code 2 bcg capture --backend host -o nodir/x.plan "$tiny" >out 2>err &&
	test_grep "^bcgtool: nodir/x.plan: cannot write: No such file or directory" err &&
	test_cmp /dev/null out &&
	test_expect_code 2 bcg capture --backend host -o adir "$tiny" >out 2>err &&
	test_grep "^bcgtool: adir: cannot write: is a directory" err
'

test_expect_success 'capture into an unwritable place fails before the capture: no progress' '
	test_expect_code 2 env BCG_PROGRESS=always "$BCGTOOL" capture --backend host \
		-o /proc/x.plan "$tiny" >out 2>err &&
	test_grep "^bcgtool: /proc/x.plan: cannot write" err &&
	! grep "capture: variant" err
'

test_expect_success 'a flag without an argument refuses one, by its own name' '
	test_expect_code 2 bcg inspect --segments=1 "$mini" 2>err &&
	test_grep "^bcgtool inspect: option --segments takes no argument$" err &&
	test_expect_code 2 bcg replay --json=yes "$mini" 2>err &&
	test_grep "^bcgtool replay: option --json takes no argument$" err &&
	test_expect_code 2 bcg inspect --variant 2>err &&
	test_grep "^bcgtool inspect: option --variant needs an argument$" err
'

test_expect_success '-V and --version, before or after a command' '
	bcg --version >expect &&
	bcg -V >actual &&
	test_cmp expect actual &&
	bcg inspect -V >actual &&
	test_cmp expect actual &&
	bcg replay --version >actual &&
	test_cmp expect actual
'

test_expect_success '-t is --tokens wherever a command has a short -t' '
	for c in bench capture diff inspect instantiate ops replay run validate; do
		bcg $c --help >help &&
		if grep "^ *-t," help >t; then
			test_grep "^  -t, --tokens " t || return 1
		fi
	done
'

test_expect_success '--color always colors plain inspect, never does not' '
	bcg inspect --color always "$mini" >out &&
	head -n 1 out >first &&
	test_grep "$(printf "\033")\\[1mplan" first &&
	bcg inspect --color never "$mini" >out &&
	! grep "$(printf "\033")" out
'

test_expect_success 'diff --ignore-env: the spelling of the script path is not a difference' '
	mkdir sub &&
	cp "$tiny" sub/tiny-mlp.yaml &&
	cp "$tiny" tiny-mlp.yaml &&
	bcg capture -q --backend host --no-tune -o a.plan tiny-mlp.yaml >/dev/null &&
	bcg capture -q --backend host --no-tune -o b.plan ./sub/../sub/tiny-mlp.yaml >/dev/null &&
	test_expect_code 1 bcg diff a.plan b.plan >out &&
	test_grep "script" out &&
	bcg diff --ignore-env a.plan b.plan >out &&
	test_cmp /dev/null out
'

test_expect_success 'diff --ignore-env still sees another script of the same name' '
	mkdir other &&
	sed "s/seed: 5/seed: 6/" "$tiny" >other/tiny-mlp.yaml &&
	bcg capture -q --backend host --no-tune -o c.plan other/tiny-mlp.yaml >/dev/null &&
	test_expect_code 1 bcg diff --ignore-env a.plan c.plan >out &&
	test_grep "script hash" out
'

test_expect_success 'BCG_TEST_FAULT=oom: an arena over the limit is exit 3, naming the size; no plan' '
	test_expect_code 3 env BCG_TEST_FAULT=oom:1024 "$BCGTOOL" capture --backend host \
		-o oom.plan "$tiny" >out 2>err &&
	test_grep "^bcgtool: cannot allocate the [0-9.]* KiB arena on the host backend (1.00 KiB free" err &&
	! test -e oom.plan &&
	ls -A >files &&
	! grep "\.tmp$" files
'

test_expect_success 'BCG_TEST_FAULT=kernel:OP on the host: exit 3 naming the op; no plan' '
	test_expect_code 3 env BCG_TEST_FAULT=kernel:down "$BCGTOOL" capture --backend host \
		-o k.plan "$tiny" >out 2>err &&
	test_grep "capturing: op .down. (matmul): kernel fault" err &&
	! test -e k.plan
'

test_expect_success 'BCG_TEST_FAULT=break:OP on the host: exit 3 naming the breakpoint op' '
	test_expect_code 3 env BCG_TEST_FAULT=break:attn.0 "$BCGTOOL" capture --backend host \
		-o bp.plan "$SAMPLES/llama-decode-small.yaml" >out 2>err &&
	test_grep "op .attn.0. (attention): kernel fault" err &&
	! test -e bp.plan
'

test_expect_success 'a malformed BCG_TEST_FAULT is a usage error' '
	test_expect_code 2 env BCG_TEST_FAULT=bogus "$BCGTOOL" run --backend host "$tiny" 2>err &&
	test_grep "BCG_TEST_FAULT: .bogus. is not" err
'

# A write's temporary file is ".NAME.PID.N.tmp" beside NAME. A process that
# dies by SIGKILL cannot remove its own; the next write into the directory
# removes those whose process is gone, and nothing else.
test_expect_success 'a SIGKILLed capture leaves its temporary file; the next write removes it' '
	mkdir litter || return 1
	# A command of its own: "a && b &" would put a subshell in the background.
	env -u SOURCE_DATE_EPOCH "$BCGTOOL" capture --backend host -o litter/slow.plan \
		"$TEST_DATA/scripts/slow-tune.yaml" >/dev/null 2>&1 </dev/null &
	pid=$! &&
	n=0 &&
	while ! ls -A litter | grep -q "^\.slow\.plan\.$pid\.0\.tmp$" && test $n -lt 600; do
		sleep 0.1; n=$((n + 1))
	done &&
	kill -KILL $pid &&
	{ wait $pid; true; } &&
	ls -A litter >files &&
	echo ".slow.plan.$pid.0.tmp" >expect &&
	test_cmp expect files &&
	bcg capture -q --backend host -o litter/tiny.plan "$tiny" >/dev/null &&
	ls -A litter >files &&
	echo tiny.plan >expect &&
	test_cmp expect files
'

test_expect_success 'only temporary files of ended processes go; inspect names one' '
	mkdir mixed &&
	dead=$(sh -c "echo \$\$") &&
	: >mixed/.a.plan.$dead.0.tmp &&
	: >mixed/.a.plan.$$.3.tmp &&
	: >mixed/.notes.tmp &&
	: >mixed/.a.plan.x$dead.0.tmp &&
	mkdir mixed/.d.plan.$dead.1.tmp &&
	test_expect_code 2 bcg inspect mixed/.a.plan.$dead.0.tmp 2>err &&
	cat >expect <<-EOF &&
	bcgtool: mixed/.a.plan.$dead.0.tmp: plan file is truncated: the file is 0 bytes, shorter than the 64-byte header
	bcgtool: note: mixed/.a.plan.$dead.0.tmp is the temporary file of a write by process $dead, which ended before it finished; the next write into its directory removes it
	EOF
	test_cmp expect err &&
	bcg capture -q --backend host -o mixed/a.plan "$tiny" >/dev/null &&
	ls -A mixed | sort >files &&
	printf "%s\n" .a.plan.$$.3.tmp .a.plan.x$dead.0.tmp .d.plan.$dead.1.tmp .notes.tmp a.plan |
		sort >expect &&
	test_cmp expect files
'

test_done
