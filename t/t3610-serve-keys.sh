#!/bin/sh
test_description='capture-size keys in the plan (format 1.3): capture records them, inspect and diff show them, replay --trace dispatches by them as bench --trace does by the script'
. "$(dirname "$0")/test-lib.sh"

tiny="$SAMPLES/llama-serve-tiny.yaml"

# The sample's sizes: 1, 2 and 4 for uniform decode, full; 8 tokens over
# at most 4 requests, breakable. Its request dim R is 4.
test_expect_success 'setup: the serving sample captured, its keys recorded' '
	bcg capture --backend host --no-tune -o tiny.plan "$tiny" >out &&
	bcg inspect tiny.plan >info &&
	test_grep "^plan      tiny.plan (.*, format 1.3)$" info &&
	cat >expect <<-\EOF &&
	variants
	  tokens  key           mode       items  segments  breakpoints  nodes     peak
	       1  1 x1 uniform  full           1         1            0      0  408 KiB
	       2  2 x2 uniform  full           1         1            0      0  410 KiB
	       4  4 x4 uniform  full           1         1            0      0  414 KiB
	       8  8 x4          breakable      5         3            2      0  422 KiB
	EOF
	sed -n "/^variants/,/^  *total/p" info | sed "/total/d" >actual &&
	test_cmp expect actual
'

test_expect_success 'a plan of a script without keys stays in its older format' '
	bcg capture --backend host --no-tune -o small.plan "$SAMPLES/llama-decode-small.yaml" >/dev/null &&
	bcg inspect small.plan >info &&
	test_grep "^plan      small.plan (.*, format 1\.[12])$" info &&
	! test_grep "  key  " info
'

# Uniform decode of T tokens (T requests) runs on the smallest full size
# that holds it; any other batch on the size of 8 over at most 4 requests.
test_expect_success 'inspect --dispatch shows the keyed table' '
	bcg inspect --dispatch tiny.plan >actual &&
	cat >expect <<-\EOF &&
	dispatch
	  tokens  requests  batches         variant       mode
	       1  any       uniform decode  1 x1 uniform  full
	       2  any       uniform decode  2 x2 uniform  full
	     3-4  any       uniform decode  4 x4 uniform  full, padded to 4
	     1-8  4         any             8 x4          breakable, padded to 8
	      9-  any       any             -             eager
	EOF
	test_cmp expect actual
'

test_expect_success PYTHON3 'inspect --json carries the keys of variants and entries' '
	bcg inspect --json tiny.plan >plan.json &&
	"$PYTHON3" -c "
import json, sys
d = json.load(open(\"plan.json\"))
for v in d[\"variants\"]:
    print(\"variant\", v[\"tokens\"], v[\"requests\"], v[\"uniform\"], v[\"mode\"])
for e in d[\"dispatch\"]:
    print(\"entry\", e[\"tokens_min\"], e[\"tokens_max\"], e[\"requests_max\"], e[\"uniform\"], e[\"variant\"])
" >actual &&
	cat >expect <<-\EOF &&
	variant 1 1 True full
	variant 2 2 True full
	variant 4 4 True full
	variant 8 4 False breakable
	entry 1 1 0 True 0
	entry 2 2 0 True 1
	entry 3 4 0 True 2
	entry 1 8 4 False 3
	EOF
	test_cmp expect actual
'

test_expect_success 'capture --mode full_and_breakable: full for the uniform decode sizes, breakable otherwise' '
	bcg capture --backend host --no-tune --mode full_and_breakable -o fab.plan "$tiny" >out &&
	cat >expect <<-\EOF &&
	1 full
	2 full
	4 full
	8 breakable
	EOF
	awk "\$1 ~ /^[0-9]+\$/ { print \$1, \$2 }" out >actual &&
	test_cmp expect actual &&
	bcg diff fab.plan tiny.plan >d &&
	test_cmp /dev/null d
'

test_expect_success 'capture --mode full_and_breakable: all breakable when some op has no full form' '
	sed -e "s/{tokens: 1, uniform: true, mode: full}/{tokens: 1, uniform: true}/" \
	    -e "s/{tokens: 2, uniform: true, mode: full}/{tokens: 2, uniform: true}/" \
	    -e "s/{tokens: 4, uniform: true, mode: full}/{tokens: 4, uniform: true}/" \
	    -e "s/^\(  - {op: embedding, name: embed, in: \[embed, ids\], out: \[x\]\)}/\1, eager: true}/" \
	    "$tiny" >eager-op.yaml &&
	test_grep "eager: true}" eager-op.yaml &&
	bcg capture --backend host --no-tune --mode full_and_breakable -o nofull.plan eager-op.yaml >out &&
	awk "\$1 ~ /^[0-9]+\$/ { print \$1, \$2 }" out >actual &&
	printf "1 breakable\n2 breakable\n4 breakable\n8 breakable\n" >expect &&
	test_cmp expect actual
'

test_expect_success 'capture --mode: the keyword in the usage error, breakable|full|eager unchanged' '
	test_expect_code 2 bcg capture --mode full-and-breakable -o x.plan "$tiny" 2>err &&
	test_grep "unknown mode .full-and-breakable. (breakable, full, eager, full_and_breakable)" err &&
	! test -e x.plan &&
	bcg capture --backend host --no-tune --mode breakable -o brk.plan "$tiny" >out &&
	awk "\$1 ~ /^[0-9]+\$/ { print \$2 }" out | sort -u >actual &&
	echo breakable >expect &&
	test_cmp expect actual &&
	bcg capture --help >help &&
	test_grep "full_and_breakable: full for the uniform decode sizes" help
'

# Eager variants are never padded to: under capture --mode eager the keyed
# table is empty, inspect says every batch runs eagerly, and replay --trace
# runs each batch eagerly at its own size (t1.jsonl: 3, 1, 1, 5, 1 tokens).
test_expect_success 'capture --mode eager: inspect and replay --trace agree, every batch eager and unpadded' '
	bcg capture --backend host --no-tune --mode eager -o eager.plan "$tiny" >/dev/null &&
	bcg inspect --dispatch eager.plan >actual &&
	cat >expect <<-\EOF &&
	dispatch
	  tokens  requests  batches  variant  mode
	      1-  any       any      -        eager
	  no full or breakable variant: every batch runs eagerly, unpadded
	EOF
	test_cmp expect actual &&
	cat >t1.jsonl <<-\EOF &&
	{"id": 12, "arrival": 0.012, "prompt_len": 5, "output_len": 2}
	{"id": 10, "arrival": 0, "prompt_len": 2, "output_len": 3}
	{"id": 11, "arrival": 0, "prompt_len": 1, "output_len": 1}
	EOF
	bcg replay --backend host --trace t1.jsonl --check eager.plan >out &&
	cat >expect <<-\EOF &&
	unpadded   padded paddings  mode          count
	       1        1        0  eager             3
	       3        3        0  eager             1
	       5        5        0  eager             1
	EOF
	sed -n "/^unpadded/,/^\$/p" out | sed "/^\$/d" >actual &&
	test_cmp expect actual &&
	test_grep "^check        bit-exact with eager$" out &&
	bcg inspect --dispatch tiny.plan >keyed &&
	! test_grep "every batch runs eagerly" keyed
'

test_expect_success 'diff reports a changed key' '
	sed "s/{tokens: 8, requests: 4}/{tokens: 8, requests: 2}/" "$tiny" >req2.yaml &&
	bcg capture --backend host --no-tune -o req2.plan req2.yaml >/dev/null &&
	test_expect_code 1 bcg diff tiny.plan req2.plan >d &&
	cat >expect <<-\EOF &&
	@@ capture sizes @@
	 variant 8
	-  key: 8 x4
	+  key: 8 x2
	@@ dispatch @@
	-1-8 x4 -> 8
	+1-8 x2 -> 8
	EOF
	sed -n "/^@@ capture sizes/,\$p" d >actual &&
	test_cmp expect actual
'

# A trace of prefills and decodes: uniform decode steps of 1 to 3
# requests, mixed steps of a prefill chunk and decodes.
test_expect_success 'setup: a trace' '
	cat >t.jsonl <<-\EOF
	{"id": 1, "arrival": 0, "prompt_len": 3, "output_len": 4}
	{"id": 2, "arrival": 0, "prompt_len": 1, "output_len": 3}
	{"id": 3, "arrival": 0.004, "prompt_len": 6, "output_len": 2}
	{"id": 4, "arrival": 0.02, "prompt_len": 2, "output_len": 5}
	{"id": 5, "arrival": 0.03, "prompt_len": 1, "output_len": 2}
	EOF
'

# What vLLM's dispatcher reports, one row a (unpadded, padded, mode), and
# the steps of each mode: the same whether the keys come from the plan
# (replay) or from the script (bench).
modes_and_rows() {
	"$PYTHON3" -c "
import json, sys
d = json.load(open(sys.argv[1]))
r = d[\"policies\"][0] if \"policies\" in d else d
print(\"policy\", r[\"policy\"])
for m in (\"full\", \"breakable\", \"eager\"):
    print(m, r[\"modes\"][m][\"steps\"])
for x in r[\"dispatch\"]:
    print(x[\"unpadded\"], x[\"padded\"], x[\"mode\"], x[\"count\"])
" "$1"
}

test_expect_success 'replay --trace of the plan prints the statistics table, bit-exact' '
	bcg replay --backend host --trace t.jsonl --check tiny.plan >out &&
	cat >expect <<-\EOF &&
	unpadded   padded paddings  mode          count
	       1        1        0  full              3
	       2        2        0  full              2
	       3        4        1  full              1
	       2        8        6  breakable         1
	       4        8        4  breakable         1
	       8        8        0  breakable         1
	EOF
	sed -n "/^unpadded/,/^\$/p" out | sed "/^\$/d" >actual &&
	test_cmp expect actual &&
	test_grep "^check        bit-exact with eager$" out
'

# The plan holds one mode a size: it matches bench (which captures every
# size in both modes) under the policy it was captured for, and eager.
# Captured full, it matches bench's full policy.
test_expect_success 'setup: the sample captured full' '
	bcg capture --backend host --no-tune --mode full -o full.plan "$tiny" >/dev/null
'

for case in full_and_breakable:tiny eager:tiny full:full; do
	policy=${case%%:*} plan=${case#*:}.plan
	test_expect_success PYTHON3 "replay --trace of $plan and bench --trace of its script: $policy" '
		bcg replay --backend host --trace t.jsonl --policy '$policy' --json '$plan' >r.json &&
		bcg bench --backend host --trace t.jsonl --policy '$policy' --json "$tiny" >b.json &&
		modes_and_rows r.json >r.txt &&
		modes_and_rows b.json >b.txt &&
		test_grep "^policy '$policy'$" r.txt &&
		test_cmp b.txt r.txt
	'
done

# Captured all breakable, the sizes keep their keys: a mixed batch of 2
# tokens never runs on the size of 2, which holds uniform decode only.
test_expect_success PYTHON3 'a plan captured breakable: uniform decode only where the key says' '
	bcg replay --backend host --trace t.jsonl --json brk.plan >r.json &&
	bcg bench --backend host --trace t.jsonl --policy breakable --json "$tiny" >b.json &&
	modes_and_rows r.json | sed 1d >r.txt &&
	modes_and_rows b.json | sed 1d >b.txt &&
	test_cmp b.txt r.txt &&
	test_grep "^2 8 breakable 1$" r.txt &&
	test_grep "^2 2 breakable 2$" r.txt
'

test_expect_success PYTHON3 'replay --synthetic follows the keys as bench does' '
	spec=requests=12,rate=400,prompt=uniform:1:9,output=uniform:1:6,seed=5 &&
	bcg replay --backend host --synthetic $spec --json tiny.plan >r.json &&
	bcg bench --backend host --synthetic $spec --policy full_and_breakable --json "$tiny" >b.json &&
	modes_and_rows r.json >r.txt &&
	modes_and_rows b.json >b.txt &&
	test_cmp b.txt r.txt &&
	test_grep "^full [1-9]" r.txt &&
	test_grep "^breakable [1-9]" r.txt
'

# A serving script whose sizes carry no keys: replay --tokens follows the
# plan's token table, eager variants included; replay --trace pads only
# to full and breakable variants. inspect says where the two differ, and
# a trace shows the note true.
test_expect_success 'unkeyed serving plan: inspect --dispatch says what replay --trace does with eager entries' '
	sed "/^  T:\$/,/^  R: 4/{/^  R: 4/!d}" "$tiny" |
		sed "s/^  R: 4 /  T: {tokens: [1, 2, 4, 8], modes: {4: eager, 1: eager}}\n  R: 4 /" >unkeyed.yaml &&
	test_grep "^  T: {tokens: \[1, 2, 4, 8\], modes: {4: eager, 1: eager}}\$" unkeyed.yaml &&
	bcg capture --backend host --no-tune -o unkeyed.plan unkeyed.yaml >/dev/null &&
	bcg inspect --dispatch unkeyed.plan >info &&
	test_grep "^     3-4  4        eager, padded to 4\$" info &&
	test_grep "^  with --trace, replay pads only to full and breakable variants: batches of 1, 3-4 tokens (an eager variant here) take the smallest that holds them, else run eagerly at their own size\$" info &&
	bcg replay --backend host --synthetic requests=6,seed=3,prompt=3,output=4 unkeyed.plan >out &&
	test_grep "^       4        8        4  breakable " out &&
	! grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+  eager " out
'

test_expect_success 'unkeyed serving plan, all eager: batches run at their own size, as inspect says' '
	sed "s/modes: {4: eager, 1: eager}/mode: eager/" unkeyed.yaml >eager.yaml &&
	bcg capture --backend host --no-tune -o eager.plan eager.yaml >/dev/null &&
	bcg inspect --dispatch eager.plan >info &&
	test_grep "batches of 3-8 tokens (an eager variant here)" info &&
	bcg replay --backend host --synthetic requests=6,seed=3,prompt=3,output=4 eager.plan >out &&
	test_grep "^       6        6        0  eager " out
'

test_expect_success 'a plan without batch feeds gets no such note' '
	bcg capture --backend host --no-tune --mode eager -o small-eager.plan \
		"$SAMPLES/llama-decode-small.yaml" >/dev/null &&
	bcg inspect --dispatch small-eager.plan >info &&
	test_grep "eager, padded to 4" info &&
	! grep "with --trace" info
'

test_done
