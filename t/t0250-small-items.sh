#!/bin/sh
test_description='small things a new user meets: wording, names, plurals, "did you mean", the environment'
. "$(dirname "$0")/test-lib.sh"

SQ="'"
test "${BCG_HAVE_SQLITE:-no}" = yes && test_set_prereq SQLITE
mini="$TEST_DATA/plans/mini.plan"
small="$SAMPLES/llama-decode-small.yaml"
tiny="$SAMPLES/tiny-mlp.yaml"

test_expect_success 'setup: a host plan' '
	bcg capture -q --backend host --tokens 4 -o small.plan "$small" >/dev/null
'

test_expect_success 'a missing file is "cannot read" for a script, a plan, a trace and a report' '
	for cmd in "validate no.yaml" "inspect no.plan" "replay no.plan" "diff no.plan $mini" \
	           "replay --backend host --trace no.jsonl small.plan"; do
		name=$(echo "$cmd" | sed "s/.* \\(no\\.[a-z]*\\).*/\\1/") &&
		# shellcheck disable=SC2086
		test_expect_code 2 bcg $cmd 2>err &&
		echo "bcgtool: $name: cannot read: No such file or directory" >expect &&
		test_cmp expect err || return 1
	done
'

test_expect_success 'did you mean: commands and long options' '
	test_expect_code 2 bcg captrue 2>err &&
	echo "bcgtool: unknown command: captrue (did you mean ${SQ}capture${SQ}? see ${SQ}bcgtool --help${SQ})" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg replay --stpes 3 small.plan 2>err &&
	test_grep "^bcgtool replay: unknown option --stpes (did you mean ${SQ}--steps${SQ}?)$" err &&
	test_expect_code 2 bcg inspect --segmnets=1 small.plan 2>err &&
	test_grep "^bcgtool inspect: unknown option --segmnets (did you mean ${SQ}--segments${SQ}?)$" err &&
	test_expect_code 2 bcg inspect --frobnicate small.plan 2>err &&
	test_grep "^bcgtool inspect: unknown option --frobnicate$" err
'

test_expect_success 'one variant, one segment: no plural' '
	bcg capture --backend host --mode full --tokens 4 -o one.plan "$small" 2>err >out &&
	test_grep "^wrote one.plan (.*): 1 variant, 1 segment, 0 breakpoints, backend host$" out &&
	bcg replay --backend host --steps 1 --warmup 0 one.plan >out 2>/dev/null &&
	test_grep "^tokens       4 -> variant 4 (full: 1 segment, 0 breakpoints)$" out &&
	bcg instantiate --backend host one.plan >out &&
	test_grep "^1 segment: " out
'

test_expect_success 'capture --tokens with a size the script lacks lists its sizes' '
	test_expect_code 2 bcg capture --backend host --tokens 1,3 -o x.plan "$small" 2>err &&
	echo "bcgtool: 3 is not a capture size of the script${SQ}s token dim (its sizes: 1, 2, 4)" >expect &&
	test_cmp expect err
'

test_expect_success 'BCG_BACKEND with a bad value is an environment error, not an option' '
	test_expect_code 2 env BCG_BACKEND=foo "$BCGTOOL" replay small.plan >out 2>err &&
	echo "bcgtool: environment: BCG_BACKEND=${SQ}foo${SQ} is not auto, host or cuda" >expect.cuda &&
	echo "bcgtool: environment: BCG_BACKEND=${SQ}foo${SQ} is not auto, host" >expect.host &&
	{ test_cmp expect.cuda err || test_cmp expect.host err; } &&
	test_expect_code 2 bcg replay --backend foo small.plan 2>err &&
	test_grep "^bcgtool replay: unknown backend ${SQ}foo${SQ}" err &&
	env BCG_BACKEND=foo "$BCGTOOL" replay --backend host --steps 1 small.plan >out 2>/dev/null
'

test_expect_success '--version says which plan format it writes, beside inspect'"'"'s' '
	bcg --version >out &&
	test_grep "^bcgtool .* (plan format 1\\.[0-9]*: reads any 1\\.x, writes each plan in the oldest version that holds it)$" out &&
	bcg inspect "$mini" >out &&
	test_grep "^plan .*format 1\\.0)$" out
'

test_expect_success 'report with its arguments swapped names the order' '
	printf "SQLite format 3\\000" >r.sqlite &&
	test_expect_code 2 bcg report small.plan r.sqlite 2>err &&
	test_grep "^bcgtool report: the report comes first, then the plan: bcgtool report r.sqlite small.plan$" err &&
	: >p.nsys-rep &&
	test_expect_code 2 bcg report small.plan p.nsys-rep 2>err &&
	test_grep "^bcgtool report: the report comes first, then the plan: bcgtool report p.nsys-rep small.plan$" err
'

test_expect_success SQLITE 'profile --wrapper without nsys: nsys is still needed for the export' '
	test_expect_code 2 bcg profile --wrapper /bin/true --nsys ./no-nsys small.plan 2>err &&
	echo "bcgtool: the wrapper /bin/true profiles, but nsys is still needed to export its report to SQLite: ./no-nsys: No such file or directory" >expect &&
	test_cmp expect err
'

# A Hugging Face model of 128 positions: 3 of prompt and 5000 generated
# need 3 + 5000 - 1 positions (the last token is never written back).
test_expect_success JANSSON 'replay --generate past the cache names the positions the whole generation needs' '
	bcg import -q -o ll.yaml "$TEST_DATA/hf/llama" &&
	bcg capture -q --backend host -o ll.plan ll.yaml >/dev/null &&
	test_expect_code 2 bcg replay --backend host --prompt 1,2,3 --generate 5000 ll.plan >out 2>err &&
	echo "bcgtool: the generation needs 5002 positions (3 of prompt and 5000 generated, the last not written back), past the limit of var ${SQ}kv_len${SQ} (128)" >expect &&
	test_cmp expect err &&
	test ! -s out &&
	bcg replay --backend host --prompt 1,2,3 --generate 126 ll.plan >out &&
	test_expect_code 2 bcg replay --backend host --prompt 1,2,3 --generate 127 ll.plan 2>err &&
	test_grep "needs 129 positions (3 of prompt and 127 generated" err
'

test_expect_success 'samples/README.md names every sample' '
	for f in "$SAMPLES"/*.yaml "$SAMPLES"/*.svg "$SAMPLES"/traces/*.jsonl; do
		name=${f#"$SAMPLES"/} &&
		grep -q "\`$name\`" "$SAMPLES/README.md" || { echo "not in README: $name"; return 1; }
	done
'

# Generation where rmsnorm_matmul_argmax writes the feedback: its index is
# the next token and its out the scores --logits writes, as the same step
# written as rmsnorm_matmul then argmax gives them.
test_expect_success 'generation through rmsnorm_matmul_argmax: the tokens and scores of its two kinds' '
	cat >gen-fused.yaml <<-\EOF &&
	bcg: 1
	dims:
	  T: {tokens: [1, 4]}
	  H: 16
	  V: 50
	vars:
	  kv_len: {start: 1, step: 1, limit: 64}
	tensors:
	  ids:    {dtype: i32, shape: [T], role: input, feed: {kind: prompt, range: V, seed: 3, feedback: next}}
	  embed:  {dtype: f32, shape: [V, H], role: weight, init: {kind: random, scale: 1, seed: 1}}
	  norm:   {dtype: f32, shape: [H], role: weight, init: {kind: random, scale: 1, seed: 2}}
	  x:      {dtype: f32, shape: [T, H]}
	  logits: {dtype: f32, shape: [T, V], role: output}
	  next:   {dtype: i32, shape: [T], role: output}
	ops:
	  - {op: embedding, name: embed, in: [embed, ids], out: [x]}
	  - {op: rmsnorm_matmul_argmax, name: head, in: [x, norm, embed], out: [logits, next], attrs: {eps: 1e-5, trans_b: true}}
	EOF
	sed "s/- {op: rmsnorm_matmul_argmax, name: head, in: \[x, norm, embed\], out: \[logits, next\]/- {op: rmsnorm_matmul, name: head, in: [x, norm, embed], out: [logits]/" \
		gen-fused.yaml >gen-apart.yaml &&
	echo "  - {op: argmax, name: pick, in: [logits], out: [next]}" >>gen-apart.yaml &&
	bcg validate gen-apart.yaml | grep "^ops (3): embedding 1, argmax 1, rmsnorm_matmul 1" &&
	for f in fused apart; do
		bcg run --backend host --prompt 1,2,3 --generate 6 --logits gen-$f.bin gen-$f.yaml \
			>gen-$f.out || return 1
	done &&
	grep "^tokens" gen-fused.out >a &&
	grep "^tokens" gen-apart.out >b &&
	test_cmp a b &&
	test -s gen-fused.bin &&
	cmp gen-fused.bin gen-apart.bin
'

test_done
