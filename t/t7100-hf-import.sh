#!/bin/sh
test_description='bcgtool import: Hugging Face models against transformers (t/data/hf)'
. "$(dirname "$0")/test-lib.sh"

SQ="'"
hf="$TEST_DATA/hf"

# The tokens transformers generated, and the generation's, as one line.
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

# The last step's logits within BOUND of transformers', relative to the
# largest |logit|: f32 both sides, sums in another order.
close_logits () {
	"$PYTHON3" - "$hf/$1/logits.bin" "$2" "$3" <<-\EOT
	import struct, sys
	a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
	x = struct.unpack("<%df" % (len(a) // 4), a); y = struct.unpack("<%df" % (len(b) // 4), b)
	assert len(x) == len(y), (len(x), len(y))
	err = max(abs(p - q) for p, q in zip(x, y)) / max(abs(p) for p in x)
	assert err <= float(sys.argv[3]), err
	EOT
}

for m in llama qwen2 mistral; do
	test_expect_success JANSSON,PYTHON3 "$m: import, run: transformers' greedy tokens and logits" "
		bcg import -o $m.yaml \"\$hf/$m\" 2>note &&
		bcg validate $m.yaml >/dev/null &&
		bcg run --backend host --json --prompt \$(prompt $m) --generate 8 --logits $m-run.bin $m.yaml >run.json &&
		want_tokens $m >expect &&
		got_tokens run.json >actual &&
		test_cmp expect actual &&
		close_logits $m $m-run.bin 1e-4
	"
	test_expect_success JANSSON,PYTHON3 "$m: capture, replay in a new process: the same tokens, prefill padded to 8" "
		bcg capture --backend host -o $m.plan $m.yaml >/dev/null &&
		bcg replay --backend host --json --prompt \$(prompt $m) --generate 8 --logits $m-rep.bin $m.plan >rep.json &&
		got_tokens rep.json >actual &&
		test_cmp expect actual &&
		\"\$PYTHON3\" -c \"import json; s = json.load(open('rep.json'))['steps']; assert s[0]['tokens'] == 7 and s[0]['ran'] == 8 and all(x['ran'] == 1 for x in s[1:]), s\" &&
		close_logits $m $m-rep.bin 1e-4
	"
	test_expect_success CUDA,JANSSON,PYTHON3 "$m: on the GPU, replay reproduces the tokens" "
		bcg capture --backend cuda -o $m-cuda.plan $m.yaml >/dev/null &&
		bcg replay --backend cuda --json --prompt \$(prompt $m) --generate 8 --logits $m-cuda.bin $m-cuda.plan >rep.json &&
		got_tokens rep.json >actual &&
		test_cmp expect actual &&
		close_logits $m $m-cuda.bin 1e-3
	"
done

# The warm-up and setup of a generation's JSON (FILE) as one line each:
# "warm TOKENS RAN SETUP" and "step TOKENS RAN SETUP", SETUP "setup" when
# the step spent time making its token count ready, "ready" when not.
gen_steps () {
	"$PYTHON3" - "$1" <<-\EOT
	import json, sys
	d = json.load(open(sys.argv[1]))
	for kind, steps in (("warm", d["warmup"]), ("step", d["steps"])):
	    for s in steps:
	        assert s["ms"] >= s["setup_ms"] >= 0, s
	        print(kind, s["tokens"], s["ran"], "setup" if s["setup_ms"] > 0 else "ready")
	EOT
}

test_expect_success JANSSON,PYTHON3 'replay --prompt warms each variant first, then times steps from a reset' '
	bcg replay --backend host --json --prompt $(prompt llama) --generate 3 llama.plan >rep.json &&
	gen_steps rep.json >actual &&
	cat >expect <<-\EOF &&
	warm 7 8 setup
	warm 1 1 setup
	step 7 8 ready
	step 1 1 ready
	step 1 1 ready
	EOF
	test_cmp expect actual &&
	want_tokens llama | cut -d" " -f1-3 >expect &&
	got_tokens rep.json >actual &&
	test_cmp expect actual
'

test_expect_success JANSSON,PYTHON3 'replay --prompt --warmup 2: two steps a variant, the first builds it' '
	bcg replay --backend host --json --warmup 2 --prompt $(prompt llama) --generate 2 llama.plan >rep.json &&
	gen_steps rep.json >actual &&
	cat >expect <<-\EOF &&
	warm 7 8 setup
	warm 7 8 ready
	warm 1 1 setup
	warm 1 1 ready
	step 7 8 ready
	step 1 1 ready
	EOF
	test_cmp expect actual
'

test_expect_success JANSSON,PYTHON3 'replay --prompt --warmup 0: the first step of each variant builds it, the tokens are the same' '
	bcg replay --backend host --json --warmup 0 --prompt $(prompt llama) --generate 8 llama.plan >rep.json &&
	gen_steps rep.json >actual &&
	cat >expect <<-\EOF &&
	step 7 8 setup
	step 1 1 setup
	step 1 1 ready
	step 1 1 ready
	step 1 1 ready
	step 1 1 ready
	step 1 1 ready
	step 1 1 ready
	EOF
	test_cmp expect actual &&
	want_tokens llama >expect &&
	got_tokens rep.json >actual &&
	test_cmp expect actual
'

test_expect_success JANSSON,PYTHON3 'a one-token prompt warms one variant; run --prompt has no warm-up' '
	bcg replay --backend host --json --prompt 7 --generate 3 llama.plan >rep.json &&
	gen_steps rep.json >actual &&
	printf "warm 1 1 setup\nstep 1 1 ready\nstep 1 1 ready\nstep 1 1 ready\n" >expect &&
	test_cmp expect actual &&
	bcg run --backend host --json --prompt $(prompt llama) --generate 2 llama.yaml >run.json &&
	gen_steps run.json >actual &&
	printf "step 7 7 setup\nstep 1 1 setup\n" >expect &&
	test_cmp expect actual
'

test_expect_success JANSSON 'the table lists the warm-up steps with their setup' '
	bcg replay --backend host --prompt 1,5,9 --generate 2 llama.plan >out &&
	test_grep "^  step  tokens     ran      id          time         setup$" out &&
	test_grep "^  warm       3       8       -  " out &&
	test_grep "^     1       1       1  " out
'

test_expect_success JANSSON,PYTHON3 'the script stacks q, k and v (and gate and up) and names checkpoint tensors' '
	test_grep "qkv_proj: {dtype: f32, shape: \[QKV, H\], role: weight, count: L, init: {kind: safetensors, file: \".*/hf/llama/model.safetensors\", tensor: \[\"model.layers.{l}.self_attn.q_proj.weight\", \"model.layers.{l}.self_attn.k_proj.weight\", \"model.layers.{l}.self_attn.v_proj.weight\"\]}}" llama.yaml &&
	test_grep "qkv_bias" qwen2.yaml &&
	test_grep "in: \[h, embed_tokens\], out: \[logits\]" qwen2.yaml &&
	! test_grep "qkv_bias" llama.yaml 2>/dev/null
'

# A model directory with CONFIG edited by the Python expression EDIT on c.
edited () {
	rm -rf "$1" && mkdir "$1" &&
	cp "$hf/llama/model.safetensors" "$1/" &&
	"$PYTHON3" -c "
import json, sys
c = json.load(open(sys.argv[1]))
$2
json.dump(c, open(sys.argv[2], \"w\"))
" "$hf/llama/config.json" "$1/config.json"
}

expect_unsupported () {
	test_expect_code 2 bcg import -o x.yaml "$1" >out 2>err &&
	test ! -s out && test ! -e x.yaml &&
	echo "bcgtool: $1/config.json: not supported: $2" >expect &&
	test_cmp expect err
}

test_expect_success JANSSON,PYTHON3 'unsupported models are refused, never imported wrong' '
	edited gemma "c[\"architectures\"] = [\"GemmaForCausalLM\"]" &&
	expect_unsupported gemma "architecture ${SQ}GemmaForCausalLM${SQ} (bcgtool imports LlamaForCausalLM, MistralForCausalLM and Qwen2ForCausalLM)" &&
	edited scaled "c[\"rope_parameters\"] = {\"rope_type\": \"llama3\", \"rope_theta\": 500000.0, \"factor\": 32.0}" &&
	expect_unsupported scaled "rope_parameters of type ${SQ}llama3${SQ} (bcgtool${SQ}s rope is the default one)" &&
	edited old "del c[\"rope_parameters\"]; c[\"rope_theta\"] = 1e4; c[\"rope_scaling\"] = {\"type\": \"linear\", \"factor\": 2.0}" &&
	expect_unsupported old "rope_scaling of type ${SQ}linear${SQ} (bcgtool${SQ}s rope is the default one)" &&
	edited window "c[\"architectures\"] = [\"MistralForCausalLM\"]; c[\"sliding_window\"] = 64" &&
	expect_unsupported window "sliding_window 64 in use (the cache has 128 positions; a cache of at most 64 never slides: --positions 64)" &&
	edited moe "c[\"num_local_experts\"] = 8" &&
	expect_unsupported moe "mixture of experts" &&
	edited gelu "c[\"hidden_act\"] = \"gelu\"" &&
	expect_unsupported gelu "hidden_act ${SQ}gelu${SQ} (SwiGLU with silu only)" &&
	edited bias "c[\"attention_bias\"] = True" &&
	expect_unsupported bias "attention_bias (biases on the q, k and v projections of Qwen2 only)"
'

test_expect_success JANSSON,PYTHON3 'a window no narrower than the cache is imported; --positions narrows the cache' '
	edited window "c[\"architectures\"] = [\"MistralForCausalLM\"]; c[\"sliding_window\"] = 64" &&
	bcg import --positions 64 -o w.yaml window 2>/dev/null &&
	test_grep "^  S: 64 " w.yaml
'

test_expect_success JANSSON 'usage and input errors exit 2' '
	test_expect_code 2 bcg import 2>err &&
	test_expect_code 2 bcg import --tokens 8,1 "$hf/llama" 2>err &&
	test_grep "tokens takes ascending sizes" err &&
	test_expect_code 2 bcg import --dtype i32 "$hf/llama" 2>err &&
	test_expect_code 2 bcg import nowhere 2>err &&
	echo "bcgtool: nowhere: cannot read: No such file or directory" >expect &&
	test_cmp expect err
'

test_expect_success 'import given a file says it reads a model directory' '
	test_expect_code 2 bcg import "$hf/llama/config.json" 2>err &&
	echo "bcgtool: $hf/llama/config.json: not a directory: import reads a model directory (config.json and model.safetensors)" >expect &&
	test_cmp expect err
'

test_expect_success JANSSON,PYTHON3 'import -q writes the script and no note; without -q the note names it' '
	bcg import -o q.yaml "$hf/llama" 2>err &&
	test_grep "^bcgtool: note: q.yaml: LlamaForCausalLM, " err &&
	rm q.yaml &&
	bcg import -q -o q.yaml "$hf/llama" 2>err &&
	test ! -s err &&
	test -s q.yaml &&
	bcg -q import -o q2.yaml "$hf/llama" 2>err &&
	test ! -s err &&
	test_cmp q.yaml q2.yaml
'

test_expect_success JANSSON,PYTHON3 'bf16: the script converts the f32 checkpoint; tokens of the first step still agree' '
	bcg import --dtype bf16 -o llama-bf16.yaml "$hf/llama" 2>/dev/null &&
	bcg run --backend host --json --prompt $(prompt llama) --generate 1 llama-bf16.yaml >run.json &&
	want_tokens llama | cut -d" " -f1 >expect &&
	got_tokens run.json >actual &&
	test_cmp expect actual
'

test_done
