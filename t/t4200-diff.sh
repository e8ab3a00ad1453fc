#!/bin/sh
test_description='bcgtool diff: single edits against reviewed golden files, --stat, --json, exit codes'
. "$(dirname "$0")/test-lib.sh"

golden="$TEST_DATA/diff"

test_expect_success 'setup: the fixture plans, where the golden files expect them' '
	cp "$TEST_DATA"/plans/*.plan .
'

test_expect_success 'a plan against itself: exit 0, no output' '
	for p in *.plan; do
		bcg diff "$p" "$p" >out 2>err &&
		test_cmp /dev/null out &&
		test_cmp /dev/null err || return 1
	done
'

test_expect_success 'a plan against a byte-identical copy: exit 0, no output, with every option' '
	cp mini-cuda.plan copy.plan &&
	bcg diff mini-cuda.plan copy.plan >out &&
	bcg diff --stat mini-cuda.plan copy.plan >>out &&
	bcg diff --ignore-env mini-cuda.plan copy.plan >>out &&
	bcg diff --color always mini-cuda.plan copy.plan >>out &&
	test_cmp /dev/null out
'

# One step per line of t/data/diff/cases: NAME EXIT A B OPTIONS...
while read -r name code a b opts; do
	case $name in ''|'#'*) continue ;; esac
	test_expect_success "diff $opts $a $b exits $code and matches $name.out" "
		test_expect_code $code bcg diff $opts $a $b >actual &&
		test_cmp '$golden/$name.out' actual
	"
done <"$golden/cases"

test_expect_success 'the single edits each show their one change' '
	test_grep "^+tensor scratch: f32 \[T, H\] activation" "$golden/tensor.out" &&
	test_grep "^+break attention at op 7 (renamed)$" "$golden/rename.out" &&
	test_grep "^-variant 2: breakable" "$golden/sizes.out" &&
	test_grep "^+variant 3: breakable" "$golden/sizes.out" &&
	test_grep "^+break probe at op 9 (moved)$" "$golden/moved.out" &&
	test_grep "^+  node 1 kernel: add_f32_vec4$" "$golden/kernel.out" &&
	test_grep "^+device: NVIDIA H200$" "$golden/env.out" &&
	test_grep "^+features: pdl$" "$golden/pdl.out" &&
	test_grep "^+  edges: 0->1 (programmatic)$" "$golden/pdl.out"
'

test_expect_success 'diff A B and diff B A show the same change from both sides' '
	sed -n "/^@@/,\$p" "$golden/tensor.out" | tr "+-" "-+" | sort >flipped &&
	test_expect_code 1 bcg diff edit-tensor.plan mini-cuda.plan >reverse &&
	sed -n "/^@@/,\$p" reverse | sort >reverse.body &&
	test_cmp flipped reverse.body
'

test_expect_success '--ignore-env hides the environment but not the rest' '
	bcg diff --ignore-env mini-cuda.plan edit-env.plan >out &&
	test_cmp /dev/null out &&
	test_expect_code 1 bcg diff --ignore-env mini-cuda.plan edit-kernel.plan >out &&
	test_cmp "$golden/kernel.out" out &&
	test_expect_code 1 bcg diff --ignore-env mini.plan mini-cuda.plan >out &&
	test_grep "^+backend: cuda$" out &&
	! grep "device\|cuda runtime\|cublas" out
'

test_expect_success PYTHON3 '--json is valid JSON and holds the differences' '
	test_expect_code 1 bcg diff --json mini-cuda.plan edit-rename.plan >d.json &&
	"$PYTHON3" -m json.tool d.json >/dev/null &&
	test_expect_code 0 bcg diff --json mini-cuda.plan copy.plan >same.json &&
	"$PYTHON3" - <<-\EOF
	import json
	d = json.load(open("d.json"))
	assert d["a"] == "mini-cuda.plan" and d["b"] == "edit-rename.plan" and not d["identical"]
	diffs = d["differences"]
	ops = [x for x in diffs if x["area"] == "ops"]
	assert [(x["change"], x["a"].split(":")[0], x["b"].split(":")[0]) for x in ops] == \
        [("renamed", "op 7 attn (attention)", "op 7 attention (attention)")], ops
	items = [x for x in diffs if x["area"] == "items"]
	# attn breaks in all three variants (4 is eager: every op breaks).
	assert sorted((x["variant"], x["change"], x["a"], x["b"]) for x in items) == [
        (1, "renamed", "break attn at op 7", "break attention at op 7"),
        (2, "renamed", "break attn at op 7", "break attention at op 7"),
        (4, "renamed", "break attn at op 7", "break attention at op 7")], items
	assert all(x["a_index"] == x["b_index"] for x in items)
	assert [x["a_index"] for x in items] == [1, 1, 7], items
	v = {x["tokens"]: x for x in d["variants"]}
	assert v[2]["status"] == "changed" and v[2]["renamed"] == 1 and v[2]["same"] == 4, v
	assert v[4]["renamed"] == 1 and v[4]["same"] == 12, v
	s = json.load(open("same.json"))
	assert s["identical"] and s["differences"] == [], s
	assert [x["status"] for x in s["variants"]] == ["identical"] * 3, s
	EOF
'

test_expect_success 'other timings are no difference' '
	"$BCG_BUILD_DIR/t/helper/plan-edit" mini-cuda.plan slow.plan times 5000000 &&
	! cmp -s mini-cuda.plan slow.plan &&
	bcg inspect --stats slow.plan >stats &&
	test_grep "^  materialize  5.00 ms$" stats &&
	bcg diff mini-cuda.plan slow.plan >out &&
	bcg diff --stat mini-cuda.plan slow.plan >>out &&
	test_cmp /dev/null out &&
	bcg diff --json mini-cuda.plan slow.plan >same.json &&
	test_grep "\"identical\": true" same.json
'

test_expect_success 'the measured times of choices are no difference either' '
	"$BCG_BUILD_DIR/t/helper/plan-edit" edit-choices.plan slow-choices.plan times 9000000 &&
	bcg inspect --choices slow-choices.plan >choices &&
	test_grep "^   2  q     matmul  mma   tuned   mma 9007.00 us, cublas 9008.00 us$" choices &&
	bcg diff edit-choices.plan slow-choices.plan >out &&
	bcg diff --stat edit-choices.plan slow-choices.plan >>out &&
	test_cmp /dev/null out
'

test_expect_success 'a choice changed in one variant: its op and token count, both impls' '
	test_grep "^ op q at 2 tokens$" "$golden/choices.out" &&
	test_grep "^-  impl: cublas$" "$golden/choices.out" &&
	test_grep "^+  impl: mma$" "$golden/choices.out" &&
	test_grep "^-op o at 2 tokens: mma, tuned from mma, cublas$" "$golden/choices.out" &&
	test_grep "^+op o at 1 token: cublas, default$" "$golden/choices.out" &&
	! grep "us\b\|3\.9" "$golden/choices.out"
'

test_expect_success 'a 1.0 plan and the same plan written as 1.1 are the same plan' '
	"$BCG_BUILD_DIR/t/helper/plan-edit" mini-cuda.plan rewritten.plan \
		env "NVIDIA H100 80GB HBM3" 9.0 13000 13000 130000 &&
	bcg inspect rewritten.plan >summary &&
	test_grep "format 1.1)$" summary &&
	bcg diff mini-cuda.plan rewritten.plan >out &&
	test_cmp /dev/null out
'

test_expect_success 'two host captures of one script differ only in timings: exit 0' '
	cp "$TEST_DATA/plans/mini.yaml" . &&
	bcg capture --backend host --no-tune -o one.plan mini.yaml >/dev/null &&
	bcg capture --backend host --no-tune -o two.plan mini.yaml >/dev/null &&
	bcg diff one.plan two.plan >out &&
	test_cmp /dev/null out
'

test_expect_success 'a capture of another mode: items aligned, reasons compared' '
	cp "$TEST_DATA/plans/mini.yaml" . &&
	bcg capture --backend host --no-tune --mode eager --tokens 2 -o eager.plan mini.yaml >/dev/null &&
	bcg capture --backend host --no-tune --tokens 2 -o breakable.plan mini.yaml >/dev/null &&
	test_expect_code 1 bcg diff --stat breakable.plan eager.plan >out &&
	echo "variant 2 (breakable -> eager): 5 -> 13 items, 0 same, 2 changed, 11 added, 3 removed; 1 variant field changed" >expect &&
	head -n 1 out >first &&
	test_cmp expect first
'

test_expect_success '--color always marks removals red, additions green, hunks cyan' '
	esc=$(printf "\033") &&
	test_expect_code 1 bcg diff --color always mini-cuda.plan edit-env.plan >colored &&
	test_grep "^${esc}\[36m@@ meta @@${esc}\[0m$" colored &&
	test_grep "^${esc}\[31m-device: NVIDIA H100 80GB HBM3${esc}\[0m$" colored &&
	test_grep "^${esc}\[32m+device: NVIDIA H200${esc}\[0m$" colored &&
	sed -e "s/${esc}\[[0-9]*m//g" colored >stripped &&
	test_cmp "$golden/env.out" stripped
'

test_expect_success 'usage errors exit 2' '
	test_expect_code 2 bcg diff mini.plan 2>err &&
	test_grep "^bcgtool diff: two plans needed$" err &&
	test_grep "^usage: bcgtool diff \[--ignore-env\] \[--strict\] \[--stat | --json\] \[--color WHEN\] A B$" err &&
	test_expect_code 2 bcg diff mini.plan mini.plan mini.plan 2>err &&
	test_grep "two plans only" err &&
	test_expect_code 2 bcg diff --stat --json mini.plan mini.plan 2>err &&
	test_grep "stat and --json are exclusive" err &&
	test_expect_code 2 bcg diff --color maybe mini.plan mini.plan 2>err &&
	test_grep "color takes auto, always or never" err
'

test_done
