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

for m in llama qwen2 mistral llama3 llama-linear llama-yarn qwen3 qwen3-tied mixtral mixtral-fused \
	qwen2-moe qwen3-moe qwen2-moe-mixed qwen3-moe-mixed; do
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
	test_grep "qkv_proj: {dtype: f32, shape: \[QKV, H\], role: weight, count: L, init: {kind: safetensors, file: \".*/hf/llama/model.safetensors\", tensor: \[\"model.layers.{l}.self_attn.q_proj.weight\", \"model.layers.{l}.self_attn.k_proj.weight\", \"model.layers.{l}.self_attn.v_proj.weight\"\]}, split: {axis: 0, blocks: \[QW, KVW, KVW\], unit: HD}}" llama.yaml &&
	test_grep "qkv_bias" qwen2.yaml &&
	test_grep "in: \[h, embed_tokens\], out: \[logits\]" qwen2.yaml &&
	! test_grep "qkv_bias" llama.yaml 2>/dev/null
'

# A model directory DIR: fixture FROM with its config edited by the Python
# expression EDIT on c.
edited_from () {
	rm -rf "$2" && mkdir "$2" &&
	cp "$hf/$1/model.safetensors" "$2/" &&
	"$PYTHON3" -c "
import json, sys
c = json.load(open(sys.argv[1]))
$3
json.dump(c, open(sys.argv[2], \"w\"))
" "$hf/$1/config.json" "$2/config.json"
}

# The llama fixture as DIR, its config edited by EDIT.
edited () {
	edited_from llama "$@"
}

expect_unsupported () {
	test_expect_code 2 bcg import -o x.yaml "$1" >out 2>err &&
	test ! -s out && test ! -e x.yaml &&
	echo "bcgtool: $1/config.json: not supported: $2" >expect &&
	test_cmp expect err
}

test_expect_success JANSSON,PYTHON3 'unsupported models are refused, never imported wrong' '
	edited gemma "c[\"architectures\"] = [\"GemmaForCausalLM\"]" &&
	expect_unsupported gemma "architecture ${SQ}GemmaForCausalLM${SQ} (bcgtool imports LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, MixtralForCausalLM, Qwen2MoeForCausalLM and Qwen3MoeForCausalLM)" &&
	edited window "c[\"architectures\"] = [\"MistralForCausalLM\"]; c[\"sliding_window\"] = 64" &&
	expect_unsupported window "sliding_window 64 in use (the cache has 128 positions; a cache of at most 64 never slides: --positions 64)" &&
	edited moe "c[\"num_local_experts\"] = 8" &&
	expect_unsupported moe "mixture of experts in a LlamaForCausalLM" &&
	edited gelu "c[\"hidden_act\"] = \"gelu\"" &&
	expect_unsupported gelu "hidden_act ${SQ}gelu${SQ} (SwiGLU with silu only)" &&
	edited bias "c[\"attention_bias\"] = True" &&
	expect_unsupported bias "attention_bias (biases on the q, k and v projections of Qwen2 only)"
'

# The tokens of the generation of SCRIPT on the host, as one line.
host_tokens () {
	bcg run --backend host --json --prompt $(prompt llama) --generate 8 "$1" >gen.json &&
	got_tokens gen.json
}

# transformers' tokens for fixture M's weights with the default rope.
want_unscaled () {
	"$PYTHON3" -c "import json, sys; print(*json.load(open(sys.argv[1]))[\"unscaled_tokens\"])" \
		"$hf/$1/expect.json"
}

for m in llama3 llama-linear llama-yarn; do
	test_expect_success JANSSON,PYTHON3 "$m: the scaling is what gives transformers' tokens: without it, the unscaled model's" "
		bcg import -o $m.yaml \"\$hf/$m\" 2>/dev/null &&
		test_grep \"rope_type: \" $m.yaml &&
		sed \"s/rope_type: [a-z0-9]*/rope_type: default/\" $m.yaml >$m-plain.yaml &&
		! test_grep \"rope_type: [^d]\" $m-plain.yaml 2>/dev/null &&
		host_tokens $m-plain.yaml >actual &&
		want_unscaled $m >expect &&
		test_cmp expect actual &&
		want_tokens $m >scaled &&
		! test_cmp scaled actual >/dev/null
	"
done

test_expect_success JANSSON,PYTHON3 'llama3: the script carries the rope parameters of the config' '
	test_grep "theta: 500000,\$" llama3.yaml &&
	test_grep "^                rope_type: llama3, factor: 8, low_freq_factor: 1, high_freq_factor: 4,\$" llama3.yaml &&
	test_grep "^                original_max_position_embeddings: 16}\$" llama3.yaml &&
	test_grep "^                beta_fast: 32, beta_slow: 1, attention_factor: 0, truncate: true}\$" llama-yarn.yaml
'

test_expect_success JANSSON,PYTHON3 'an older config: rope_theta beside rope_scaling with the legacy key type, the same tokens' '
	edited_from llama3 legacy "r = c.pop(\"rope_parameters\"); c[\"rope_theta\"] = r.pop(\"rope_theta\"); r[\"type\"] = r.pop(\"rope_type\"); c[\"rope_scaling\"] = r" &&
	bcg import -o legacy.yaml legacy 2>/dev/null &&
	host_tokens legacy.yaml >actual &&
	want_tokens llama3 >expect &&
	test_cmp expect actual &&
	edited_from llama3 legacy2 "r = c.pop(\"rope_parameters\"); c[\"rope_theta\"] = r.pop(\"rope_theta\"); c[\"rope_scaling\"] = r" &&
	bcg import -o legacy2.yaml legacy2 2>/dev/null &&
	sed "s/legacy2/legacy/g" legacy2.yaml >legacy2-named.yaml &&
	test_cmp legacy.yaml legacy2-named.yaml
'

test_expect_success JANSSON,PYTHON3 'dynamic: within max_position_embeddings it is the default rope (the llama tokens); a longer cache is refused' '
	edited dyn "c[\"rope_parameters\"] = {\"rope_type\": \"dynamic\", \"rope_theta\": 500000.0, \"factor\": 2.0}" &&
	bcg import -o dyn.yaml dyn 2>/dev/null &&
	test_grep "rope_type: dynamic, factor: 2" dyn.yaml &&
	test_grep "original_max_position_embeddings: 128}" dyn.yaml &&
	host_tokens dyn.yaml >actual &&
	want_tokens llama >expect &&
	test_cmp expect actual &&
	test_expect_code 2 bcg import --positions 256 -o x.yaml dyn 2>err &&
	echo "bcgtool: dyn/config.json: not supported: rope_parameters.rope_type ${SQ}dynamic${SQ} with a cache of 256 positions: its frequencies follow the sequence length past max_position_embeddings 128 (--positions 128)" >expect &&
	test_cmp expect err
'

# The refusal of DIR's import: exactly MESSAGE after "bcgtool: DIR/config.json: ".
expect_refused () {
	test_expect_code 2 bcg import -o x.yaml "$1" >out 2>err &&
	test ! -s out && test ! -e x.yaml &&
	echo "bcgtool: $1/config.json: $2" >expect &&
	test_cmp expect err
}

test_expect_success JANSSON,PYTHON3 'rope types and options the kernels do not compute are refused by key and value' '
	edited longrope "c[\"rope_parameters\"] = {\"rope_type\": \"longrope\", \"rope_theta\": 1e4, \"long_factor\": [1], \"short_factor\": [1]}" &&
	expect_refused longrope "not supported: rope_parameters.long_factor an array (bcgtool${SQ}s rope reads rope_type, rope_theta and the options of default, linear, dynamic, yarn and llama3)" &&
	edited longrope2 "c[\"rope_parameters\"] = {\"rope_type\": \"longrope\", \"rope_theta\": 1e4}" &&
	expect_refused longrope2 "not supported: rope_parameters.rope_type ${SQ}longrope${SQ} (bcgtool computes default, linear, dynamic, yarn and llama3)" &&
	edited su "del c[\"rope_parameters\"]; c[\"rope_theta\"] = 1e4; c[\"rope_scaling\"] = {\"type\": \"su\", \"factor\": 2.0}" &&
	expect_refused su "not supported: rope_scaling.type ${SQ}su${SQ} (bcgtool computes default, linear, dynamic, yarn and llama3)" &&
	edited small "c[\"rope_parameters\"] = {\"rope_type\": \"linear\", \"rope_theta\": 1e4, \"factor\": 0.5}" &&
	expect_refused small "not supported: rope_parameters.factor 0.5 (a number from 1 to 1e9)" &&
	edited nofactor "c[\"rope_parameters\"] = {\"rope_type\": \"llama3\", \"rope_theta\": 1e4, \"low_freq_factor\": 1, \"high_freq_factor\": 4}" &&
	expect_refused nofactor "rope_parameters has no ${SQ}factor${SQ}" &&
	edited nolow "c[\"rope_parameters\"] = {\"rope_type\": \"llama3\", \"rope_theta\": 1e4, \"factor\": 8, \"high_freq_factor\": 4}" &&
	expect_refused nolow "rope_parameters has no ${SQ}low_freq_factor${SQ}" &&
	edited bands "c[\"rope_parameters\"] = {\"rope_type\": \"llama3\", \"rope_theta\": 1e4, \"factor\": 8, \"low_freq_factor\": 4, \"high_freq_factor\": 1}" &&
	expect_refused bands "not supported: rope_parameters.high_freq_factor 1 (it must be above low_freq_factor 4)" &&
	edited strfactor "c[\"rope_parameters\"] = {\"rope_type\": \"yarn\", \"rope_theta\": 1e4, \"factor\": \"4\"}" &&
	expect_refused strfactor "not supported: rope_parameters.factor ${SQ}4${SQ} (a number from 1 to 1e9)" &&
	edited beta "c[\"rope_parameters\"] = {\"rope_type\": \"yarn\", \"rope_theta\": 1e4, \"factor\": 4, \"beta_fast\": -1}" &&
	expect_refused beta "not supported: rope_parameters.beta_fast -1 (a number from 0 to 1e9)" &&
	edited unknown "c[\"rope_parameters\"][\"rope_type\"] = \"llama3\"; c[\"rope_parameters\"].update(factor=8, low_freq_factor=1, high_freq_factor=4, original_max_position_embeddings=16, flavour=3)" &&
	expect_refused unknown "not supported: rope_parameters.flavour 3 (bcgtool${SQ}s rope reads rope_type, rope_theta and the options of default, linear, dynamic, yarn and llama3)" &&
	edited partial "c[\"partial_rotary_factor\"] = 0.5" &&
	expect_refused partial "not supported: partial_rotary_factor 0.5 (bcgtool rotates the whole head)" &&
	edited layered "c[\"rope_parameters\"] = {\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": 1e4}}" &&
	expect_refused layered "not supported: rope_parameters per layer type (${SQ}full_attention${SQ})"
'

test_expect_success JANSSON,PYTHON3 'qwen3: q_norm and k_norm weights, rope_kv_write normalizing q and k with them; tied uses the embedding' '
	test_grep "q_norm: {dtype: f32, shape: \[HD\], role: weight, count: L, init: {kind: safetensors, file: \".*/hf/qwen3/model.safetensors\", tensor: \"model.layers.{l}.self_attn.q_norm.weight\"}}" qwen3.yaml &&
	test_grep "^        in: \[qkv, pos, \"q_norm\[l\]\", \"k_norm\[l\]\"\]\$" qwen3.yaml &&
	test_grep "attrs: {heads: NH, kv_heads: NKV, head_dim: HD, theta: .*, eps: [0-9.e+-]*}\$" qwen3.yaml &&
	! test_grep "op: qk_norm" qwen3.yaml 2>/dev/null &&
	test_grep "^        in: \[qkv, pos\]\$" llama.yaml &&
	test_grep "in: \[h, lm_head\], out: \[logits\]" qwen3.yaml &&
	test_grep "in: \[h, embed_tokens\], out: \[logits\]" qwen3-tied.yaml &&
	! test_grep "qk_norm" llama.yaml 2>/dev/null &&
	edited noqk "c[\"architectures\"] = [\"Qwen3ForCausalLM\"]" &&
	test_expect_code 2 bcg import -o x.yaml noqk 2>err &&
	echo "bcgtool: noqk/model.safetensors: no tensor ${SQ}model.layers.0.self_attn.q_norm.weight${SQ} (a Qwen3ForCausalLM normalizes each head of q and k)" >expect &&
	test_cmp expect err
'

test_expect_success JANSSON,PYTHON3 'mixtures of experts the kernels cannot run are refused, naming the key and value' '
	edited_from mixtral many "c[\"num_local_experts\"] = 300" &&
	expect_unsupported many "num_local_experts 300 (the kernels take 1 to 256 experts)" &&
	edited_from mixtral topk "c[\"num_experts_per_tok\"] = 5" &&
	expect_unsupported topk "num_experts_per_tok 5 (the kernels take 1 to 4 experts a token)" &&
	edited_from qwen2-moe topk2 "c[\"num_experts_per_tok\"] = 17" &&
	expect_unsupported topk2 "num_experts_per_tok 17 (the kernels take 1 to 8 experts a token)" &&
	edited_from qwen2-moe step0 "c[\"decoder_sparse_step\"] = 0" &&
	expect_refused step0 "${SQ}decoder_sparse_step${SQ} must be a positive integer" &&
	edited_from qwen2-moe onlys "c[\"mlp_only_layers\"] = 1" &&
	expect_refused onlys "${SQ}mlp_only_layers${SQ} must be a list of layer numbers" &&
	edited_from qwen2-moe onlyneg "c[\"mlp_only_layers\"] = [0, -1]" &&
	expect_refused onlyneg "${SQ}mlp_only_layers${SQ} must be a list of layer numbers (item 1 is not)"
'

test_expect_success JANSSON,PYTHON3 'partly MoE: the layers the config makes dense MLPs, named apart; a missing dense MLP named' '
	test_grep "^  gate_up_proj_0: {dtype: f32, shape: \[F2, H\], role: weight, init: {kind: safetensors, file: \".*\", tensor: \[\"model.layers.0.mlp.gate_proj.weight\", \"model.layers.0.mlp.up_proj.weight\"\]}}\$" qwen2-moe-mixed.yaml &&
	test_grep "^  router_1: {dtype: f32, shape: \[NE, H\], role: weight, init: {kind: safetensors, file: \".*\", tensor: \"model.layers.1.mlp.gate.weight\"}}\$" qwen2-moe-mixed.yaml &&
	test_grep "name: \"shared.2\", in: \[moe, shared, shared_g\]" qwen2-moe-mixed.yaml &&
	! test_grep "router_0\|gate_up_proj_1\|gate_up_proj_2" qwen2-moe-mixed.yaml &&
	for l in 0 2; do
		test_grep "name: \"gate_up.$l\", in: \[h, gate_up_proj_$l\]" qwen3-moe-mixed.yaml &&
		test_grep "name: \"attn.$l\"" qwen3-moe-mixed.yaml || return 1
	done &&
	for l in 1 3; do
		test_grep "name: \"route.$l\", in: \[router_logits\]" qwen3-moe-mixed.yaml &&
		test_grep "^        - \"model.layers.$l.mlp.experts.15.down_proj.weight\"\$" qwen3-moe-mixed.yaml || return 1
	done &&
	edited_from qwen2-moe dense1 "c[\"mlp_only_layers\"] = [1]" &&
	test_expect_code 2 bcg import -o x.yaml dense1 2>err &&
	echo "bcgtool: dense1/model.safetensors: no tensor ${SQ}model.layers.1.mlp.gate_proj.weight${SQ} (the dense MLP of layer 1)" >expect &&
	test_cmp expect err &&
	! test -e x.yaml &&
	edited_from qwen2-moe step "c[\"decoder_sparse_step\"] = 2" &&
	test_expect_code 2 bcg import -o x.yaml step 2>err &&
	test_grep "no tensor ${SQ}model.layers.0.mlp.gate_proj.weight${SQ} (the dense MLP of layer 0)" err &&
	edited_from qwen2-moe-mixed beyond "c[\"mlp_only_layers\"] = [0, 7]" &&
	bcg import -o beyond.yaml beyond 2>/dev/null &&
	test_grep "^  gate_up_proj_0:" beyond.yaml &&
	test_grep "^  router_1:" beyond.yaml &&
	test_grep "^  router_2:" beyond.yaml &&
	! test_grep "router_0" beyond.yaml
'

test_expect_success JANSSON,PYTHON3 'a checkpoint missing an expert tensor is refused, naming it' '
	rm -rf gap && mkdir gap && cp "$hf/mixtral/config.json" gap/ &&
	"$PYTHON3" - "$hf/mixtral/model.safetensors" gap/model.safetensors <<-\EOT &&
	import json, struct, sys
	raw = open(sys.argv[1], "rb").read()
	n = struct.unpack("<Q", raw[:8])[0]
	head = json.loads(raw[8:8 + n]); data = raw[8 + n:]
	del head["model.layers.1.block_sparse_moe.experts.2.w3.weight"]
	out, blob, off = {}, b"", 0
	for k in sorted(k for k in head if k != "__metadata__"):
	    b, e = head[k]["data_offsets"]
	    out[k] = dict(head[k], data_offsets=[off, off + e - b]); blob += data[b:e]; off += e - b
	h = json.dumps(out).encode(); h += b" " * (-len(h) % 8)
	open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + blob)
	EOT
	test_expect_code 2 bcg import -o x.yaml gap >out 2>err &&
	test_grep "gap/model.safetensors: no tensor ${SQ}model.layers.1.block_sparse_moe.experts.2.w3.weight${SQ} (expert 2 of layer 1)" err &&
	! test -e x.yaml
'

test_expect_success JANSSON,PYTHON3 'the script reads each expert straight into its row block, or a fused checkpoint whole' '
	test_grep "^        - \"model.layers.{l}.block_sparse_moe.experts.0.w1.weight\"\$" mixtral.yaml &&
	test_grep "^        - \"model.layers.{l}.block_sparse_moe.experts.0.w3.weight\"\$" mixtral.yaml &&
	test_grep "^        - \"model.layers.{l}.block_sparse_moe.experts.3.w2.weight\"\$" mixtral.yaml &&
	test_grep "tensor: \"model.layers.{l}.mlp.experts.gate_up_proj\"" mixtral-fused.yaml &&
	test_grep "attrs: {top_k: K, renorm: true}" mixtral.yaml &&
	test_grep "attrs: {top_k: K, renorm: false}" qwen2-moe.yaml &&
	test_grep "op: gated_add" qwen2-moe.yaml &&
	! test_grep "op: gated_add" mixtral.yaml 2>/dev/null &&
	test_grep "attrs: {top_k: K, renorm: true}" qwen3-moe.yaml &&
	test_grep "^        in: \[qkv, pos, \"q_norm\[l\]\", \"k_norm\[l\]\"\]\$" qwen3-moe.yaml &&
	! test_grep "op: qk_norm" qwen3-moe.yaml 2>/dev/null &&
	test_grep "^        - \"model.layers.{l}.mlp.experts.15.down_proj.weight\"\$" qwen3-moe.yaml
'

test_expect_success JANSSON,PYTHON3 'without a shared expert moe_experts adds the residual in place; with one the add stays' '
	for m in qwen3-moe mixtral; do
		test_grep "^        in: \[h, expert_ids, expert_weights, \"experts_gate_up\[l\]\", \"experts_down\[l\]\", x\]\$" $m.yaml &&
		test_grep -A1 "experts_down\[l\]\", x\]\$" $m.yaml | test_grep "^        out: \[x\]\$" &&
		! test_grep "moe_add\|^  moe:" $m.yaml || return 1
	done &&
	test_grep "^        in: \[h, expert_ids, expert_weights, \"experts_gate_up\[l\]\", \"experts_down\[l\]\"\]\$" qwen2-moe.yaml &&
	test_grep "{op: add, name: \"moe_add.{l}\", in: \[x, moe\], out: \[x\]}" qwen2-moe.yaml
'

test_expect_success JANSSON,PYTHON3 'MoE: every dispatch form gives transformers tokens; breakable mode breaks at the experts for their counts' '
	bcg inspect --breakpoints mixtral.plan >bp &&
	test_grep "experts\.0  *moe_experts  *kind .* launch follows per-expert token counts\$" bp &&
	for mode in full eager; do
		bcg capture --backend host --mode $mode -o mixtral-$mode.plan mixtral.yaml >/dev/null &&
		bcg replay --backend host --json --prompt $(prompt mixtral) --generate 8 mixtral-$mode.plan >rep.json &&
		want_tokens mixtral >expect &&
		got_tokens rep.json >actual &&
		test_cmp expect actual || return 1
	done &&
	bcg inspect --breakpoints mixtral-full.plan >bp &&
	! test_grep "moe_experts" bp
'

test_expect_success CUDA,JANSSON,PYTHON3 'MoE on the GPU: the eager and the graph-safe dispatch give transformers tokens and logits' '
	for m in mixtral qwen2-moe qwen3-moe qwen2-moe-mixed qwen3-moe-mixed; do
		for mode in full breakable eager; do
			bcg capture --backend cuda --mode $mode -o $m-$mode-cuda.plan $m.yaml >/dev/null &&
			bcg replay --backend cuda --json --prompt $(prompt $m) --generate 8 \
				--logits $m-$mode-cuda.bin $m-$mode-cuda.plan >rep.json &&
			want_tokens $m >expect &&
			got_tokens rep.json >actual &&
			test_cmp expect actual &&
			close_logits $m $m-$mode-cuda.bin 1e-3 || return 1
		done
	done
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
