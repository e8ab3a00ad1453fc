#!/bin/sh
test_description='tensor parallelism on the host backend: split scripts, run --tp and capture --tp over ranks as threads'
. "$(dirname "$0")/test-lib.sh"

hf="$TEST_DATA/hf"

want_tokens () {
	"$PYTHON3" -c "import json, sys; print(*json.load(open(sys.argv[1]))[\"tokens\"])" \
		"$hf/$1/expect.json"
}

prompt () {
	"$PYTHON3" -c "import json, sys; print(*json.load(open(sys.argv[1]))[\"prompt\"], sep=\",\")" \
		"$hf/$1/expect.json"
}

got_tokens () {
	"$PYTHON3" -c "import json, sys; print(*json.load(open(sys.argv[1]))[\"tokens\"])" "$1"
}

# Two f32 files A and B within BOUND of each other, relative to A's
# largest |value| (sums in other orders); with COUNT, both hold COUNT.
close_bins () {
	"$PYTHON3" - "$1" "$2" "$3" "${4:-}" <<-\EOT
	import struct, sys
	a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
	x = struct.unpack("<%df" % (len(a) // 4), a); y = struct.unpack("<%df" % (len(b) // 4), b)
	assert len(x) == len(y), (len(x), len(y))
	assert not sys.argv[4] or len(x) == int(sys.argv[4]), (len(x), sys.argv[4])
	err = max(abs(p - q) for p, q in zip(x, y)) / max(abs(p) for p in x)
	assert err <= float(sys.argv[3]), err
	EOT
}

# The last step's logits within BOUND of transformers'.
close_logits () {
	close_bins "$hf/$1/logits.bin" "$2" "$3"
}

# The dense families: heads, MLP and vocabulary split. The fixtures have 4
# query heads; llama, qwen2, qwen3, llama3 2 kv heads (replicated at
# --tp 4), mistral and qwen3-tied 1 (replicated at --tp 2 and 4).
for m in llama qwen2 qwen3 mistral llama3 qwen3-tied llama-linear llama-yarn; do
	test_expect_success JANSSON,PYTHON3 "$m: import writes the splits; --tp 1, 2 and 4 give transformers' greedy tokens" "
		bcg import -o $m.yaml \"\$hf/$m\" 2>note &&
		test_grep \"qkv_proj: .*split: {axis: 0, blocks: \\[QW, KVW, KVW\\], unit: HD}\" $m.yaml &&
		test_grep \"o_proj: .*split: {axis: 1, unit: HD}\" $m.yaml &&
		test_grep \"k_cache: .*split: {axis: 1, unit: HD}\" $m.yaml &&
		want_tokens $m >expect &&
		for n in 1 2 4; do
			bcg run --backend host --json --tp \$n --prompt \$(prompt $m) --generate 8 \
				--logits $m-tp\$n.bin $m.yaml >run.json &&
			got_tokens run.json >actual &&
			test_cmp expect actual &&
			close_logits $m $m-tp\$n.bin 1e-4 || return 1
		done
	"
done

# Eight ranks need eight query heads: the llama fixture's weights read as
# 8 heads of 4 (4 kv heads, each on two ranks at --tp 8), a model that
# transformers did not make, so --tp 8 is held to --tp 1's tokens and
# logits.
test_expect_success JANSSON,PYTHON3 'llama read as 8 heads: --tp 8 on the host gives --tp 1 tokens and logits' '
	mkdir -p llama8 &&
	cp "$hf/llama/model.safetensors" llama8/ &&
	"$PYTHON3" - "$hf/llama/config.json" llama8/config.json <<-\EOT &&
	import json, sys
	c = json.load(open(sys.argv[1]))
	c.update(head_dim=4, num_attention_heads=8, num_key_value_heads=4)
	json.dump(c, open(sys.argv[2], "w"), indent=2)
	EOT
	bcg import -o llama8.yaml llama8 2>note &&
	test_grep "8/4 heads of 4" note &&
	bcg run --backend host --json --prompt $(prompt llama) --generate 8 \
		--logits l8-tp1.bin llama8.yaml >run1.json &&
	bcg run --backend host --json --tp 8 --prompt $(prompt llama) --generate 8 \
		--logits l8-tp8.bin llama8.yaml >run8.json &&
	got_tokens run1.json >expect &&
	got_tokens run8.json >actual &&
	test_cmp expect actual &&
	close_bins l8-tp1.bin l8-tp8.bin 1e-5 96
'

test_expect_success JANSSON,PYTHON3 'the ranks really split: --tp 2 sums in another order than --tp 1' '
	! cmp -s llama-tp1.bin llama-tp2.bin &&
	! cmp -s llama-tp2.bin llama-tp4.bin
'

test_expect_success JANSSON 'validate shows the splits, in text and JSON' '
	bcg validate llama.yaml >out &&
	test_grep "^  qkv_proj\[0\.\.1\] .*split axis 0 blocks \[32, 16, 16\] unit 8$" out &&
	test_grep "^  act .*split axis 1$" out &&
	bcg validate --json llama.yaml >out.json &&
	test_grep "\"split\": {\"axis\": 1, \"unit\": 8, \"blocks\": \[32\]}" out.json &&
	test_grep "\"name\": \"x\".*\"split\": null" out.json
'

test_expect_success JANSSON,PYTHON3 'a mixture of experts imports whole on every rank, and runs at --tp 2' '
	bcg import -o mixtral.yaml "$hf/mixtral" 2>note &&
	! grep -q "split:" mixtral.yaml &&
	want_tokens mixtral >expect &&
	bcg run --backend host --json --tp 2 --prompt $(prompt mixtral) --generate 8 mixtral.yaml >run.json &&
	got_tokens run.json >actual &&
	test_cmp expect actual
'

test_expect_success JANSSON 'a script that cannot split N ways: the tensor at its position' '
	test_expect_code 2 bcg run --backend host --tp 3 llama.yaml 2>err &&
	test_grep "^bcgtool: llama.yaml:[0-9]*:[0-9]*: --tp 3: tensor .qkv_proj\[0\]. cannot split 3 ways: its split block 0 has 4 units of 8" err &&
	test_expect_code 2 bcg capture --backend host --tp 3 -o x.plan llama.yaml 2>err &&
	test_grep "cannot split 3 ways" err &&
	test ! -e x.plan
'

test_expect_success JANSSON 'heads that cannot split: the op at its position' '
	test_expect_code 2 bcg run --backend host --tp 8 llama.yaml 2>err &&
	test_grep "^bcgtool: llama.yaml:[0-9]*:[0-9]*: --tp 8: op .rope_kv.0. (rope_kv_write): heads 4 cannot split 8 ways" err
'

test_expect_success '--tp and --timeout take sane numbers' '
	test_expect_code 2 bcg run --backend host --tp 0 "$SAMPLES/llama-decode-small.yaml" 2>err &&
	test_grep "tp takes a number of ranks from 1 to 64, not .0." err &&
	test_expect_code 2 bcg run --backend host --tp 65 "$SAMPLES/llama-decode-small.yaml" 2>err &&
	test_grep "not .65." err &&
	test_expect_code 2 bcg capture --backend host --tp x -o x.plan "$SAMPLES/llama-decode-small.yaml" 2>err &&
	test_expect_code 2 bcg run --backend host --tp 2 --timeout 0 "$SAMPLES/llama-decode-small.yaml" 2>err &&
	test_grep "timeout takes seconds" err
'

test_expect_success JANSSON,PYTHON3,!CUDA '--backend auto without a GPU: the ranks are host threads, said once' '
	want_tokens llama >expect &&
	bcg run --backend auto --json --tp 2 --prompt $(prompt llama) --generate 8 llama.yaml \
		>run.json 2>err &&
	got_tokens run.json >actual &&
	test_cmp expect actual &&
	echo "bcgtool: note: no GPU found; the 2 ranks run on the host backend, as threads" >expect &&
	test_cmp expect err
'

# A small MLP with random weights: the ranks compute their slices of the
# same numbers, so --tp 2, 4 and 8 give --tp 1 outputs within rounding
# (at 8, two of the 16 FFN columns a rank).
tp_mlp add >mlp.yaml

test_expect_success PYTHON3 'random and arange weights: each rank holds its slice of the whole' '
	bcg run --backend host --steps 3 --dump-outputs d1 mlp.yaml >/dev/null &&
	for n in 2 4 8; do
		bcg run --backend host --steps 3 --tp $n --dump-outputs d$n mlp.yaml >/dev/null &&
		close_bins d1/y.bin d$n/y.bin 1e-6 32 || return 1
	done
'

test_expect_success 'split keys are checked at their positions' '
	sed "s/blocks: \[F, F\]/blocks: [F, 3]/" mlp.yaml >bad1.yaml &&
	test_expect_code 2 bcg validate bad1.yaml 2>err &&
	test_grep "^bcgtool: bad1.yaml:10:33: the split blocks of tensor .w1. sum to 19; its axis 0 is 32" err &&
	sed "s/act: {dtype: f32, shape: \[T, F\], split: {axis: 1}}/act: {dtype: f32, shape: [T, F], split: {axis: 0}}/" mlp.yaml >bad2.yaml &&
	test_expect_code 2 bcg validate bad2.yaml 2>err &&
	test_grep "^bcgtool: bad2.yaml:13:50: the split axis of tensor .act. is the token dim .T.: tokens never split" err &&
	sed "s/split: {axis: 1}}$/split: {axis: 2}}/" mlp.yaml >bad3.yaml &&
	test_expect_code 2 bcg validate bad3.yaml 2>err &&
	test_grep "the split axis of tensor .w2. is 2; it has axes 0 to 1" err &&
	sed "s/blocks: \[F, F\]}/blocks: [F, F], unit: 3}/" mlp.yaml >bad4.yaml &&
	test_expect_code 2 bcg validate bad4.yaml 2>err &&
	test_grep "the split unit of tensor .w1., 3, does not divide block 0 (16)" err &&
	sed "s/role: input, feed/role: input, split: {axis: 1}, feed/" mlp.yaml >bad5.yaml &&
	test_expect_code 2 bcg validate bad5.yaml 2>err &&
	test_grep "input .x. cannot split" err
'

test_expect_success 'an op that reduces along a split axis: refused at the op' '
	cat >norm.yaml <<-\EOF &&
	bcg: 1
	dims:
	  T: {tokens: [4]}
	  H: 8
	tensors:
	  x: {dtype: f32, shape: [T, H], role: input, feed: {kind: random, seed: 1}}
	  w: {dtype: f32, shape: [H, H], role: weight, init: {kind: random, seed: 2}, split: {axis: 0}}
	  g: {dtype: f32, shape: [H], role: weight, init: ones}
	  h: {dtype: f32, shape: [T, H], split: {axis: 1}}
	  y: {dtype: f32, shape: [T, H], role: output}
	ops:
	  - {op: matmul, name: proj, in: [x, w], out: [h], attrs: {trans_b: true}}
	  - {op: rmsnorm, name: norm, in: [h, g], out: [y]}
	EOF
	bcg run --backend host norm.yaml >/dev/null &&
	test_expect_code 2 bcg run --backend host --tp 2 norm.yaml 2>err &&
	test_grep "^bcgtool: norm.yaml:13:5: --tp 2: op .norm. (rmsnorm) cannot take a split operand: input x (.h.) splits" err
'

# rmsnorm_matmul_argmax with a vocabulary-parallel b becomes its two
# kinds, the logits gathered before the pick: the same outputs as whole;
# logits or index split is refused at the op.
test_expect_success 'rmsnorm_matmul_argmax over ranks: split b gathered, split outputs refused' '
	cat >head.yaml <<-\EOF &&
	bcg: 1
	dims:
	  T: {tokens: [1, 3]}
	  H: 16
	  V: 40
	tensors:
	  x: {dtype: f32, shape: [T, H], role: input, feed: {kind: random, seed: 1}}
	  g: {dtype: f32, shape: [H], role: weight, init: {kind: random, scale: 1, seed: 2}}
	  w: {dtype: f32, shape: [V, H], role: weight, init: {kind: random, scale: 1, seed: 3}, split: {axis: 0}}
	  logits: {dtype: f32, shape: [T, V], role: output}
	  next: {dtype: i32, shape: [T], role: output}
	ops:
	  - {op: rmsnorm_matmul_argmax, name: head, in: [x, g, w], out: [logits, next], attrs: {eps: 1e-5, trans_b: true}}
	EOF
	bcg run --backend host --steps 2 --json head.yaml >whole.json &&
	bcg run --backend host --steps 2 --tp 2 --json head.yaml >tp2.json &&
	sed -n "/\"outputs\"/,\$p" whole.json >a &&
	sed -n "/\"outputs\"/,\$p" tp2.json >b &&
	test_cmp a b &&
	sed "s/logits: {dtype: f32, shape: \[T, V\], role: output}/logits: {dtype: f32, shape: [T, V], role: output, split: {axis: 1}}/" \
		head.yaml >bad-logits.yaml &&
	test_expect_code 2 bcg run --backend host --tp 2 bad-logits.yaml 2>err &&
	test_grep "op .head. (rmsnorm_matmul_argmax): output out (.logits.) splits; the pick reads whole rows" err
'

# The plan of every rank needs the format of tensor-parallel plans (1.5):
# until this libplan writes it, capture --tp says so once the ranks have
# captured, and leaves nothing behind.
bcg --version | grep -q "plan format 1\.[5-9]" && test_set_prereq TP_PLAN

test_expect_success JANSSON,PYTHON3,TP_PLAN 'capture --tp 2: one plan holding both ranks, their shares and collectives' '
	bcg capture --backend host --tp 2 -o llama-tp2.plan llama.yaml >out &&
	! ls -a | grep -q "rank[0-9]*\.tmp" &&
	bcg inspect --json llama-tp2.plan >tp2.json &&
	"$PYTHON3" - tp2.json <<-\EOT
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["dist"]["world"] == 2 and d["dist"]["rank"] == 0, d["dist"]
	assert [r["dist"]["rank"] for r in d["ranks"]] == [1], d["ranks"]
	def tensor(p, name):
	    return [t for t in p["tensors"] if t["name"] == name][0]
	# q | k | v rows of 4 heads and 2 kv heads of 8: rank 1 holds q heads
	# 2, 3 (rows 16..31) and kv head 1 (rows 8..15 of k and of v)
	for p, q0, kv0 in ((d, 0, 0), (d["ranks"][0], 16, 8)):
	    b = tensor(p, "qkv_proj[0]")["split"]["blocks"]
	    assert [(x["full"], x["start"], x["len"]) for x in b] == \
	        [(32, q0, 16), (16, kv0, 8), (16, kv0, 8)], b
	kinds = [o["kind"] for o in d["ops"]]
	assert kinds[:2] == ["vocab_embedding", "all_reduce"], kinds
	assert kinds.count("all_reduce") == 1 + 2 * 2 and kinds[-2] == "all_gather", kinds
	assert [o["kind"] for o in d["ranks"][0]["ops"]] == kinds
	w = [w for w in d["ranks"][0]["weights"] if w["name"] == "model.embed_tokens.weight"][0]
	assert w["slice"] == {"outer": 1, "full": 96, "inner": 32, "start": 48, "len": 48}, w
	EOT
'

test_expect_success JANSSON,!TP_PLAN 'capture --tp 2: the ranks capture, and the plan writer refuses them' '
	test_expect_code 3 bcg capture --backend host --tp 2 -o llama-tp2.plan llama.yaml 2>err &&
	test_grep "the ranks captured and verified, but this bcgtool writes plan format 1\.[0-4], which cannot hold tensor-parallel ranks (1\.5)" err &&
	test ! -e llama-tp2.plan &&
	! ls -a | grep -q "rank[0-9]*\.tmp"
'

test_expect_success JANSSON 'capture --tp 4 in full mode: the collectives captured, the replays verified on every rank' '
	code=0 &&
	bcg capture --backend host --tp 4 --mode full -o q.plan llama.yaml >out 2>err || code=$? &&
	if test_have_prereq TP_PLAN; then
		test $code = 0 &&
		bcg inspect --json q.plan >q.json &&
		"$PYTHON3" -c "import json, sys; d = json.load(open(sys.argv[1])); assert [r[\"dist\"][\"rank\"] for r in d[\"ranks\"]] == [1, 2, 3]; assert all(v[\"mode\"] == \"full\" for v in d[\"variants\"])" q.json
	else
		test $code = 3 && test_grep "captured and verified" err
	fi
'

# On two GPUs (ranks as processes, NCCL: the dist/ launcher): the same
# tokens, each rank's weights read as slices of the checkpoint on the
# device, the random inits computed there.
if test_have_prereq CUDA; then
	n=$("$BCG_BUILD_DIR/t/helper/has-gpu" | sed -n "s/^\([0-9]*\) CUDA.*/\1/p")
	test "${n:-0}" -ge 2 && test_set_prereq GPUS2
	test "${n:-0}" -ge 4 && test_set_prereq GPUS4
	test "${n:-0}" -ge 8 && test_set_prereq GPUS8
fi

# Three fixtures on two GPUs; on four every dense fixture, one query head
# a rank (the kv heads replicated where there are fewer than four), as on
# the host at --tp 4. Then the MLP's random and arange weights.
for run in "2 llama qwen3 mistral" \
	"4 llama qwen2 qwen3 mistral llama3 qwen3-tied llama-linear llama-yarn"; do
	n=${run%% *}
	for m in ${run#* }; do
		test_expect_success JANSSON,PYTHON3,GPUS$n "$m: --backend cuda --tp $n gives transformers' greedy tokens" "
			want_tokens $m >expect &&
			bcg run --backend cuda --json --tp $n --prompt \$(prompt $m) --generate 8 \
				--logits $m-cuda-tp$n.bin $m.yaml >out &&
			sed \"s/^\\[rank 0\\] //\" out >run.json &&
			got_tokens run.json >actual &&
			test_cmp expect actual &&
			close_logits $m $m-cuda-tp$n.bin 1e-3
		"
	done
done

for run in "2 two" "4 four" "8 eight"; do
	n=${run%% *}
	test_expect_success PYTHON3,GPUS$n "random and arange weights on ${run#* } GPUs: the outputs of one" "
		bcg run --backend cuda --steps 3 --dump-outputs c1 mlp.yaml >/dev/null &&
		bcg run --backend cuda --steps 3 --tp $n --dump-outputs c$n mlp.yaml >/dev/null &&
		close_bins c1/y.bin c$n/y.bin 1e-5 32
	"
done

test_done
