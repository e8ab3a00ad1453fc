#!/bin/sh
test_description='replay and bench serve a request trace: scheduler, dispatch policies, statistics, check'
. "$(dirname "$0")/test-lib.sh"

small="$SAMPLES/llama-decode-small.yaml"
trace_gen="$BCG_BUILD_DIR/t/helper/trace-gen"

# The plan: sizes 1 and 2 full, 4 breakable. The trace, worked out by hand
# with the defaults (a budget of 4 tokens, 4 requests, a step of 5 ms):
#   step 0: 10 prompt (2) and 11 prompt (1): 3 tokens, mixed; 11 is done
#   step 1, 2: 10 decodes; 10 is done. 12 arrives at 12 ms, step 3:
#   step 3: 12 prompt chunk (4), mixed; step 4: its last prompt token
#   (uniform: one token); step 5: 12 decodes.
test_expect_success 'setup: a plan of full and breakable sizes, a trace' '
	sed "s/T: {tokens: \[1, 2, 4\]}/T: {tokens: [1, 2, 4], modes: {1: full, 2: full}}/" \
		"$small" >mixed.yaml &&
	grep -q "modes: {1: full, 2: full}" mixed.yaml &&
	bcg capture --backend host -o mixed.plan mixed.yaml >/dev/null &&
	cat >t1.jsonl <<-\EOF &&
	{"id": 12, "arrival": 0.012, "prompt_len": 5, "output_len": 2}
	{"id": 10, "arrival": 0, "prompt_len": 2, "output_len": 3}

	{"output_len": 1, "prompt_len": 1, "arrival": 0, "id": 11}
	EOF
	printf "%s\n" "steps        6 (0 preemptions; at most 2 requests, 4 tokens a batch)" >steps.expect
'

table() {
	sed -n "/^unpadded/,/^\$/p" "$1" | sed "/^\$/d"
}

test_expect_success 'full_and_breakable: uniform decode full, mixed breakable, padded' '
	bcg replay --backend host --trace t1.jsonl --check mixed.plan >out &&
	test_grep "^trace        t1.jsonl: 3 requests, 8 prompt and 6 output tokens$" out &&
	test_grep "^scheduler    budget 4 tokens, 4 requests, chunk 4, 4096 modelled blocks of 16 (1 a request), a step 5000 us$" out &&
	test_grep "^policy       full_and_breakable$" out &&
	grep "^steps" out >steps.actual &&
	test_cmp steps.expect steps.actual &&
	test_grep "^padding      8.3% of padded tokens (1 of 12)$" out &&
	test_grep "^full  *4  *66.7% " out &&
	test_grep "^breakable  *2  *33.3% " out &&
	test_grep "^eager  *0  *0.0% " out &&
	cat >expect <<-\EOF &&
	unpadded   padded paddings  mode          count
	       1        1        0  full              4
	       3        4        1  breakable         1
	       4        4        0  breakable         1
	EOF
	table out >actual &&
	test_cmp expect actual &&
	test_grep "^check        bit-exact with eager$" out
'

test_expect_success 'breakable: every step on the size of 4' '
	bcg replay --backend host --trace t1.jsonl --policy breakable --check mixed.plan >out &&
	test_grep "^padding      54.2% of padded tokens (13 of 24)$" out &&
	cat >expect <<-\EOF &&
	unpadded   padded paddings  mode          count
	       1        4        3  breakable         4
	       3        4        1  breakable         1
	       4        4        0  breakable         1
	EOF
	table out >actual &&
	test_cmp expect actual &&
	test_grep "^check        bit-exact with eager$" out
'

test_expect_success 'full: what no full size holds runs eagerly, unpadded' '
	bcg replay --backend host --trace t1.jsonl --policy full --check mixed.plan >out &&
	test_grep "^padding      0.0% of padded tokens (0 of 11)$" out &&
	cat >expect <<-\EOF &&
	unpadded   padded paddings  mode          count
	       1        1        0  full              4
	       3        3        0  eager             1
	       4        4        0  eager             1
	EOF
	table out >actual &&
	test_cmp expect actual &&
	test_grep "^check        " out &&
	! test_grep FAILED out
'

test_expect_success 'eager: every step eager' '
	bcg replay --backend host --trace t1.jsonl --policy eager mixed.plan >out &&
	cat >expect <<-\EOF &&
	unpadded   padded paddings  mode          count
	       1        1        0  eager             4
	       3        3        0  eager             1
	       4        4        0  eager             1
	EOF
	table out >actual &&
	test_cmp expect actual &&
	! test_grep "^check" out
'

test_expect_success 'a small cache preempts, and the run still checks out' '
	bcg replay --backend host --synthetic requests=12,rate=inf,prompt=uniform:1:8,output=uniform:4:12,seed=5 \
		--sched blocks=3,block-size=8 --check mixed.plan >out &&
	grep "^steps" out >steps &&
	! test_grep "(0 preemptions" steps &&
	test_grep "^check        bit-exact with eager$" out
'

test_expect_success PYTHON3 '--json gives the same statistics' '
	bcg replay --backend host --trace t1.jsonl --check --json mixed.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"policy\"] == \"full_and_breakable\" and d[\"steps\"] == 6, d
assert d[\"trace\"] == {\"name\": \"t1.jsonl\", \"requests\": 3, \"prompt_tokens\": 8, \"output_tokens\": 6}
assert d[\"scheduler\"][\"budget\"] == 4 and d[\"scheduler\"][\"requests\"] == 4
assert d[\"generated_tokens\"] == 6 and d[\"preemptions\"] == 0
assert d[\"unpadded_tokens\"] == 11 and d[\"padded_tokens\"] == 12
assert abs(d[\"padding_waste\"] - 1 / 12) < 1e-9
rows = [(r[\"unpadded\"], r[\"padded\"], r[\"paddings\"], r[\"mode\"], r[\"count\"]) for r in d[\"dispatch\"]]
assert rows == [(1, 1, 0, \"full\", 4), (3, 4, 1, \"breakable\", 1), (4, 4, 0, \"breakable\", 1)], rows
m = d[\"modes\"]
assert (m[\"full\"][\"steps\"], m[\"breakable\"][\"steps\"], m[\"eager\"][\"steps\"]) == (4, 2, 0)
assert abs(m[\"full\"][\"ms\"] + m[\"breakable\"][\"ms\"] - d[\"total_ms\"]) < 1e-6 * d[\"total_ms\"]
s = d[\"step_ms\"]
assert 0 < s[\"median\"] <= s[\"p90\"] <= s[\"p99\"] <= s[\"max\"]
assert abs(d[\"output_tokens_per_s\"] - 6 / (d[\"total_ms\"] / 1e3)) < 1e-6 * d[\"output_tokens_per_s\"]
assert d[\"check\"][\"pass\"] and d[\"check\"][\"bit_exact\"]
"
'

test_expect_success 'the same trace gives the same schedule twice' '
	bcg replay --backend host --synthetic requests=40,rate=300,prompt=exp:6,output=uniform:1:9,seed=9 \
		mixed.plan >a &&
	bcg replay --backend host --synthetic requests=40,rate=300,prompt=exp:6,output=uniform:1:9,seed=9 \
		mixed.plan >b &&
	table a >ta && table b >tb &&
	test_cmp ta tb &&
	grep "^steps" a >sa && grep "^steps" b >sb &&
	test_cmp sa sb
'

# bench captures every size in both modes: only the 3-token batch pads.
test_expect_success 'bench compares the four policies on one trace' '
	bcg bench --backend host --no-tune --warmup 1 --trace t1.jsonl --check mixed.yaml >out &&
	grep "^steps" out >steps.actual &&
	test_cmp steps.expect steps.actual &&
	test_grep "^eager  *[0-9.]*  *1.00x .* 0.0%  *0.0%  *0.0%  *100.0%$" out &&
	test_grep "^breakable  *[0-9.]* .* 8.3%  *0.0%  *100.0%  *0.0%$" out &&
	test_grep "^full  *[0-9.]* .* 8.3%  *100.0%  *0.0%  *0.0%$" out &&
	test_grep "^full_and_breakable  *[0-9.]* .* 8.3%  *66.7%  *33.3%  *0.0%$" out &&
	test_grep "^check        full_and_breakable: bit-exact with eager$" out &&
	test_grep "^check        breakable: bit-exact with eager$" out
'

test_expect_success 'bench: full is reported, not run, when an op has no graph-safe form' '
	sed "s/{op: add, name: \"attn_res.{l}\", in: \[x, h\], out: \[x\]}/{op: add, name: \"attn_res.{l}\", in: [x, h], out: [x], eager: true}/" \
		"$small" >forced.yaml &&
	grep -q "eager: true" forced.yaml &&
	bcg bench --backend host --no-tune --warmup 0 --trace t1.jsonl forced.yaml >out &&
	test_grep "^full  *not run: op .attn_res.0. cannot run in full mode: it is marked eager: true" out &&
	test_grep "^full_and_breakable  *[0-9.]* .* 0.0%  *100.0%  *0.0%$" out
'

test_expect_success PYTHON3 'bench --policy --json runs one policy' '
	bcg bench --backend host --no-tune --warmup 0 --trace t1.jsonl --policy full --json \
		mixed.yaml >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert [p[\"policy\"] for p in d[\"policies\"]] == [\"full\"]
p = d[\"policies\"][0]
assert p[\"ran\"] and p[\"steps\"] == 6 and p[\"modes\"][\"full\"][\"steps\"] == 6
"
'

test_expect_success 'the shipped traces are made again by their specs' '
	"$trace_gen" "requests=256,rate=200,prompt=uniform:8:64,output=uniform:128:384,seed=1" >dh &&
	test_cmp "$SAMPLES/traces/decode-heavy.jsonl" dh &&
	"$trace_gen" "requests=256,rate=150,prompt=uniform:32:512,output=uniform:32:384,seed=2" >mx &&
	test_cmp "$SAMPLES/traces/mixed.jsonl" mx
'

test_expect_success 'a bad trace names its file, line and column' '
	printf "%s\n" "{\"id\": 1, \"arrival\": 0, \"prompt_len\": 1, \"output_len\": 1}" \
		"{\"id\": 2, \"arrival\": 0, \"prompt_len\": 0, \"output_len\": 1}" >bad.jsonl &&
	test_expect_code 2 bcg replay --backend host --trace bad.jsonl mixed.plan 2>err &&
	echo "bcgtool: bad.jsonl:2:25: '\''prompt_len'\'' must be a whole number from 1 to 1048576" >expect &&
	test_cmp expect err &&
	printf "{\"id\": 1,\n" >broken.jsonl &&
	test_expect_code 2 bcg bench --backend host --trace broken.jsonl mixed.yaml 2>err &&
	echo "bcgtool: broken.jsonl:1:9: string or '\''}'\'' expected near end of file" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg replay --backend host --trace missing.jsonl mixed.plan 2>err &&
	echo "bcgtool: missing.jsonl: cannot read: No such file or directory" >expect &&
	test_cmp expect err &&
	: >empty.jsonl &&
	test_expect_code 2 bcg replay --backend host --trace empty.jsonl mixed.plan 2>err &&
	echo "bcgtool: empty.jsonl: no requests" >expect &&
	test_cmp expect err
'

test_expect_success 'a request that cannot fit the cache is refused before the run' '
	test_expect_code 2 bcg replay --backend host --trace t1.jsonl --sched blocks=1,block-size=4 \
		mixed.plan >out 2>err &&
	echo "bcgtool: t1.jsonl: request 12 needs 6 KV positions; the cache holds 8 a request (2 blocks of 4) and 4 in all" >expect &&
	test_cmp expect err &&
	test ! -s out
'

# A budget of 8 over sizes up to 4: steps 0 to 2 as before, then 12 arrives
# and its whole prompt (5 tokens) fits one step, above the largest size:
# eager, unpadded, in the room after the arena; step 4 decodes it.
test_expect_success 'a budget above the largest capture size runs those steps eagerly' '
	bcg replay --backend host --trace t1.jsonl --sched budget=8 --check mixed.plan >out &&
	test_grep "^scheduler    budget 8 tokens, 8 requests, chunk 8, " out &&
	test_grep "^steps        5 (0 preemptions; at most 2 requests, 5 tokens a batch)$" out &&
	cat >expect <<-\EOF &&
	unpadded   padded paddings  mode          count
	       1        1        0  full              3
	       3        4        1  breakable         1
	       5        5        0  eager             1
	EOF
	table out >actual &&
	test_cmp expect actual &&
	test_grep "^eager  *1  *20.0% " out &&
	test_grep "^check        bit-exact with eager$" out
'

test_expect_success PYTHON3 'a budget above the largest size: --json has the eager rows' '
	bcg replay --backend host --synthetic requests=12,rate=inf,prompt=uniform:1:12,output=uniform:1:6,seed=3 \
		--sched budget=16 --check --json mixed.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert d[\"scheduler\"][\"budget\"] == 16
above = [r for r in d[\"dispatch\"] if r[\"unpadded\"] > 4]
assert above and all(r[\"mode\"] == \"eager\" and r[\"padded\"] == r[\"unpadded\"] and
                     r[\"paddings\"] == 0 for r in above), d[\"dispatch\"]
assert all(r[\"mode\"] != \"eager\" for r in d[\"dispatch\"] if r[\"unpadded\"] <= 4)
assert d[\"modes\"][\"eager\"][\"steps\"] == sum(r[\"count\"] for r in above)
assert d[\"check\"][\"pass\"] and d[\"check\"][\"bit_exact\"]
"
'

test_expect_success 'bench: a budget above the largest size, every policy checks out' '
	bcg bench --backend host --no-tune --warmup 0 --trace t1.jsonl --sched budget=8 --check \
		mixed.yaml >out &&
	test_grep "^full_and_breakable  *[0-9.]* .*  *60.0%  *20.0%  *20.0%$" out &&
	test_grep "^breakable  *[0-9.]* .*  *0.0%  *80.0%  *20.0%$" out &&
	test_grep "^check        full_and_breakable: bit-exact with eager$" out &&
	test_grep "^check        breakable: bit-exact with eager$" out &&
	test_grep "^check        full: bit-exact with eager$" out
'

test_expect_success PYTHON3 'no memory for the room above the arena: exit 3, before any step' '
	bcg inspect --json mixed.plan >plan.json &&
	arena=$("$PYTHON3" -c "import json; print(json.load(open(\"plan.json\"))[\"layout\"][\"arena_bytes\"])") &&
	BCG_TEST_FAULT=oom:$arena bcg replay --backend host --trace t1.jsonl mixed.plan >out &&
	test_grep "^steps        6 " out &&
	BCG_TEST_FAULT=oom:$arena test_expect_code 3 bcg replay --backend host --trace t1.jsonl \
		--sched budget=8 mixed.plan >out 2>err &&
	test_grep "^bcgtool: cannot allocate the .* arena (with .* of room for eager steps of up to 8 tokens) on the host backend (.* free; BCG_TEST_FAULT)$" err &&
	test ! -s out
'

test_expect_success 'a state tensor that grows with the tokens keeps the budget at the largest size' '
	sed "s/role: output}/role: state}/" "$SAMPLES/tiny-mlp.yaml" >grow.yaml &&
	grep -q "role: state}" grow.yaml &&
	bcg capture --backend host -o grow.plan grow.yaml >/dev/null &&
	bcg replay --backend host --trace t1.jsonl --sched budget=8 grow.plan >out &&
	test_expect_code 2 bcg replay --backend host --trace t1.jsonl --sched budget=16 grow.plan \
		>out 2>err &&
	echo "bcgtool: eager steps of up to 16 tokens: state '\''y'\'' grows with the token count: its contents carry from step to step in the arena, planned for 8 tokens, so no step can run above them" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg bench --backend host --no-tune --trace t1.jsonl --sched budget=16 \
		grow.yaml >out 2>err &&
	test_cmp expect err
'

# The paged-cache sample: the scheduler takes its cache (32 blocks of 4, 8
# a request) and its 4 requests; the engine gets every step's batch.
test_expect_success 'a paged-cache program runs the scheduler'"'"'s batches and checks out' '
	bcg capture --backend host -o tiny.plan "$SAMPLES/llama-serve-tiny.yaml" >/dev/null &&
	bcg replay --backend host --synthetic requests=16,rate=inf,prompt=uniform:1:12,output=uniform:1:12,seed=1 \
		--check tiny.plan >out &&
	test_grep "^scheduler    budget 8 tokens, 4 requests, chunk 8, 32 blocks of 4 (8 a request), a step 5000 us$" out &&
	test_grep "^full  *[1-9][0-9]* " out &&
	test_grep "^breakable  *[1-9][0-9]* " out &&
	test_grep "^check        bit-exact with eager$" out
'

# A program without batch feeds (llama-decode-small: one sequence, its own
# KV cache) cannot serve requests: the run goes on, modelled, and says so
# every time, in the warning, the scheduler line and "modelled" in JSON.
test_expect_success 'a plan without batch feeds: every run warns that the trace is modelled' '
	cat >expect <<-\EOF &&
	bcgtool: warning: mixed.plan has no batch feeds (op-script.md, "Batch feeds"): it serves no request; each step runs it at the batch'"'"'s token count, and the cache of 4096 blocks of 16 is only the scheduler'"'"'s model
	EOF
	bcg replay --backend host --trace t1.jsonl mixed.plan >out 2>err &&
	test_cmp expect err &&
	test_grep "^scheduler .* 4096 modelled blocks of 16 " out &&
	bcg replay --backend host --trace t1.jsonl --json mixed.plan >out.json 2>err &&
	test_cmp expect err &&
	grep "\"modelled\": true" out.json &&
	sed "s/mixed.plan has/mixed.yaml has/" expect >expect.bench &&
	bcg bench --backend host --no-tune --warmup 0 --trace t1.jsonl mixed.yaml >out 2>err &&
	test_cmp expect.bench err &&
	test_grep "^scheduler .* 4096 modelled blocks of 16 " out &&
	bcg bench --backend host --no-tune --warmup 0 --trace t1.jsonl --policy full --json \
		mixed.yaml >out.json 2>err &&
	test_cmp expect.bench err &&
	grep "\"modelled\": true" out.json
'

test_expect_success 'a paged-cache plan serves the trace: no warning, not modelled' '
	bcg replay --backend host --trace t1.jsonl tiny.plan >out 2>err &&
	test ! -s err &&
	test_grep "^scheduler .* 32 blocks of 4 " out &&
	bcg replay --backend host --trace t1.jsonl --json tiny.plan >out.json 2>err &&
	test ! -s err &&
	grep "\"modelled\": false" out.json
'

test_expect_success 'the program'"'"'s cache and request dim bound --sched' '
	test_expect_code 2 bcg replay --backend host --trace t1.jsonl --sched blocks=8 tiny.plan 2>err &&
	test_grep "^bcgtool replay: --sched: the program.s KV cache has 32 blocks of 4 positions$" err &&
	test_expect_code 2 bcg replay --backend host --trace t1.jsonl --sched requests=5 tiny.plan 2>err &&
	test_grep "^bcgtool replay: --sched: the program.s batches hold at most 4 requests$" err &&
	printf "%s\n" "{\"id\": 3, \"arrival\": 0, \"prompt_len\": 30, \"output_len\": 4}" >long.jsonl &&
	test_expect_code 2 bcg replay --backend host --trace long.jsonl tiny.plan 2>err &&
	echo "bcgtool: long.jsonl: request 3 needs 33 KV positions; the cache holds 32 a request (8 blocks of 4) and 128 in all" >expect &&
	test_cmp expect err
'

test_expect_success 'usage errors exit 2' '
	test_expect_code 2 bcg replay --trace t1.jsonl --policy piecewise mixed.plan 2>err &&
	test_grep "^bcgtool replay: --policy takes full_and_breakable, breakable, full or eager, not .piecewise.$" err &&
	test_expect_code 2 bcg replay --trace t1.jsonl --synthetic seed=1 mixed.plan 2>err &&
	test_grep "^bcgtool replay: --trace and --synthetic cannot be given together$" err &&
	test_expect_code 2 bcg replay --policy eager mixed.plan 2>err &&
	test_grep "^bcgtool replay: --policy and --sched need --trace or --synthetic$" err &&
	test_expect_code 2 bcg replay --trace t1.jsonl --steps 3 mixed.plan 2>err &&
	test_grep "^bcgtool replay: --steps and --tokens do not apply to a trace$" err &&
	test_expect_code 2 bcg bench --trace t1.jsonl --tokens 2 mixed.yaml 2>err &&
	test_grep "^bcgtool bench: --steps and --tokens do not apply to a trace$" err &&
	test_expect_code 2 bcg replay --synthetic x=1 mixed.plan 2>err &&
	test_grep "^bcgtool replay: --synthetic: unknown key .x. (requests, rate, prompt, output, seed)$" err &&
	test_expect_code 2 bcg replay --trace t1.jsonl --sched budget=0 mixed.plan 2>err &&
	test_grep "^bcgtool replay: --sched: budget takes a whole number from 1 to 1048576$" err &&
	test_expect_code 2 bcg bench --check mixed.yaml 2>err &&
	test_grep "^bcgtool bench: --check needs --trace or --synthetic$" err
'

test_done
