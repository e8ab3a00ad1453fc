#!/bin/sh
test_description='bcgtool ops lists the op kinds of the registry'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'ops lists the 36 kinds in registry order, one per line' '
	bcg ops >out &&
	sed -n "2,37p" out | cut -d" " -f1 >kinds &&
	printf "%s\n" fill copy add mul scale matmul rmsnorm layernorm silu_mul gelu \
		softmax rope embedding kv_write attention argmax \
		add_rmsnorm matmul_add matmul_silu_mul rope_kv_write slice \
		paged_kv_write rope_paged_kv_write paged_attention qk_norm moe_router moe_router_paged \
		moe_experts gated_add all_reduce all_gather vocab_embedding rmsnorm_matmul \
		rmsnorm_matmul_rope_kv_write decoder_layer rmsnorm_matmul_argmax >expect &&
	test_cmp expect kinds
'

test_expect_success 'ops shows signatures, defaults and capturability' '
	bcg ops >out &&
	test_grep "^matmul  *(a, b) -> out  *trans_a=false trans_b=false  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^kv_write  *(x, pos) -> cache  *-  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^attention  *(q, k, v) -> out  *heads kv_heads=heads head_dim kv_len scale=0 causal=false  *f32 f16 bf16  *no  *safe-form\$" out &&
	test_grep "^  attention: its launch shape follows the host var kv_len\$" out &&
	test_grep "^paged_attention  *(q, k_cache, v_cache, block_table, seq_lens, query_start) -> out  *heads kv_heads=heads head_dim scale=0  *f32 f16 bf16  *no  *safe-form\$" out &&
	test_grep "^paged_kv_write  *(x, slots) -> cache  *-  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^  paged_attention: its launch shape follows the host.s batch (the longest sequence)\$" out &&
	test_grep "^  moe_experts: launch follows per-expert token counts\$" out &&
	test_grep "^moe_router  *(logits) -> (ids, weights)  *top_k renorm=false topk_first=false  *f32 f16 bf16  *no  *always\$" out
'

test_expect_success 'ops shows the fused kinds, several outputs in parentheses' '
	bcg ops >out &&
	test_grep "^add_rmsnorm  *(x, r, w) -> (sum, out)  *eps=1e-06  *f32 f16 bf16  *yes  *always\$" out &&
	test_grep "^matmul_add  *(x, a, b) -> out  *trans_a=false trans_b=false  *f32 f16 bf16  *yes  *always\$" out &&
	test_grep "^matmul_silu_mul  *(a, b) -> out  *trans_a=false trans_b=false  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^rope_kv_write  *(qkv, pos\[, q_w, k_w\]) -> (q, k_cache, v_cache)  *heads kv_heads=heads head_dim theta=10000 rope_type=default \.\.\.  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^qk_norm  *(x, q_w, k_w) -> out  *heads kv_heads=heads head_dim eps=1e-06  *f32 f16 bf16  *yes  *always\$" out &&
	test_grep "^slice  *(x) -> out  *start  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^rmsnorm_matmul  *(x, w, b) -> out  *eps trans_b=false epilogue=none  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^rmsnorm_matmul_argmax  *(x, w, b) -> (out, index)  *eps trans_b=false  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^rmsnorm_matmul_rope_kv_write  *(x, w, b, pos) -> (q, k_cache, v_cache)  *heads kv_heads=heads head_dim theta=10000 rope_type=default \.\.\.  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^decoder_layer  *(x, attn_norm, w_qkv, w_o, ffn_norm, w_gate_up, w_down, pos) -> (out, k_cache, v_cache)  *heads kv_heads=heads head_dim theta=10000 rope_type=default \.\.\.  *f32 f16 bf16  *yes  *safe-form\$" out &&
	test_grep "^  decoder_layer: its attention.s launch shape follows the host var kv_len\$" out
'

test_expect_success PYTHON3 'ops --json holds every kind with attributes in op.h order' '
	bcg ops --json >out.json &&
	cat >check.py <<-\EOT &&
	import json, sys
	k = {x["name"]: x for x in json.load(open(sys.argv[1]))}
	assert len(k) == 36
	assert k["rmsnorm_matmul_argmax"]["outputs"] == ["out", "index"]
	assert [a["name"] for a in k["rmsnorm_matmul_argmax"]["attrs"]] == ["eps", "trans_b"]
	inplace = sorted(n for n in k if k[n]["inplace"])
	assert inplace == sorted(["copy", "add", "mul", "scale", "rmsnorm", "layernorm", "gelu", "softmax", "rope",
	                          "add_rmsnorm", "matmul_add", "qk_norm", "gated_add", "all_reduce",
	                          "decoder_layer"])
	assert [n for n in k if k[n]["capture"] != "always"] == ["attention", "paged_attention", "moe_experts",
	                                                         "all_reduce", "all_gather", "decoder_layer"]
	assert k["all_reduce"]["capture_why"] == "a collective: every rank must launch it at once"
	assert [a["name"] for a in k["vocab_embedding"]["attrs"]] == ["vocab_start"]
	assert k["moe_experts"]["capture"] == "safe-form"
	assert k["moe_experts"]["capture_why"] == "launch follows per-expert token counts"
	assert k["moe_experts"]["inputs"] == ["x", "ids", "weights", "gate_up", "down", "residual"]
	assert k["moe_router"]["outputs"] == ["ids", "weights"]
	assert [a["name"] for a in k["moe_router"]["attrs"]] == ["top_k", "renorm", "topk_first"]
	assert k["moe_router_paged"]["inputs"] == ["logits", "slots"]
	assert k["paged_attention"]["capture"] == "safe-form"
	assert k["paged_attention"]["inputs"] == ["q", "k_cache", "v_cache", "block_table", "seq_lens", "query_start"]
	assert [a["name"] for a in k["paged_attention"]["attrs"]] == ["heads", "kv_heads", "head_dim", "scale"]
	assert k["paged_attention"]["attrs"][1]["default"] == "heads"
	assert k["paged_kv_write"]["inputs"] == ["x", "slots"] and k["paged_kv_write"]["outputs"] == ["cache"]
	assert k["rope_paged_kv_write"]["inputs"] == ["qkv", "pos", "slots", "q_w", "k_w"]
	assert k["rope_paged_kv_write"]["outputs"] == ["q", "k_cache", "v_cache"]
	assert k["rope_paged_kv_write"]["attrs"][1]["default"] == "heads"
	assert k["attention"]["capture"] == "safe-form"
	assert [a["name"] for a in k["attention"]["attrs"]] == ["heads", "kv_heads", "head_dim", "kv_len", "scale", "causal"]
	assert k["attention"]["attrs"][1]["default"] == "heads"
	assert k["attention"]["attrs"][3]["type"] == "int-or-var" and k["attention"]["attrs"][3]["required"]
	scaling = ["rope_type", "factor", "low_freq_factor", "high_freq_factor",
	           "original_max_position_embeddings", "beta_fast", "beta_slow", "attention_factor", "truncate"]
	assert [a["name"] for a in k["rope"]["attrs"]] == ["heads", "head_dim", "theta"] + scaling
	assert k["rope"]["attrs"][3] == {"name": "rope_type", "type": "enum", "required": False, "default": "default",
	                                 "help": "frequency scaling: default, linear, dynamic, yarn or llama3"}
	assert [a["name"] for a in k["qk_norm"]["attrs"]] == ["heads", "kv_heads", "head_dim", "eps"]
	assert k["qk_norm"]["inputs"] == ["x", "q_w", "k_w"] and k["qk_norm"]["attrs"][1]["default"] == "heads"
	assert k["rope_paged_kv_write"]["attrs"] == k["rope_kv_write"]["attrs"]
	assert k["rmsnorm"]["attrs"][0]["default"] == 1e-6 and k["layernorm"]["attrs"][0]["default"] == 1e-5
	assert k["fill"]["dtypes"] == ["f32", "f16", "bf16", "i32"] and k["fill"]["inputs"] == []
	assert k["embedding"]["inputs"] == ["table", "ids"]
	assert k["add_rmsnorm"]["outputs"] == ["sum", "out"]
	assert k["rope_kv_write"]["outputs"] == ["q", "k_cache", "v_cache"]
	assert [a["name"] for a in k["rope_kv_write"]["attrs"]] == ["heads", "kv_heads", "head_dim", "theta"] + scaling + ["eps"]
	assert k["rope_kv_write"]["inputs"] == ["qkv", "pos", "q_w", "k_w"]
	assert k["rope_kv_write"]["min_inputs"] == 2 and k["rope_paged_kv_write"]["min_inputs"] == 3
	assert k["moe_experts"]["min_inputs"] == 5
	assert all(x["min_inputs"] == len(x["inputs"]) for x in k.values()
	           if x["name"] not in ("rope_kv_write", "rope_paged_kv_write", "moe_experts"))
	assert k["rope_kv_write"]["attrs"][1]["default"] == "heads"
	assert k["slice"]["attrs"] == [{"name": "start", "type": "int", "required": True, "default": None,
	                                "help": "the first column of x taken"}]
	assert k["matmul_add"]["inputs"] == ["x", "a", "b"] and k["matmul_silu_mul"]["inputs"] == ["a", "b"]
	assert k["rmsnorm_matmul"]["inputs"] == ["x", "w", "b"] and k["rmsnorm_matmul"]["outputs"] == ["out"]
	assert [a["name"] for a in k["rmsnorm_matmul"]["attrs"]] == ["eps", "trans_b", "epilogue"]
	assert k["rmsnorm_matmul"]["attrs"][0]["required"] and k["rmsnorm_matmul"]["attrs"][0]["default"] is None
	assert k["rmsnorm_matmul"]["attrs"][2] == {"name": "epilogue", "type": "enum", "required": False,
	                                           "default": "none", "help": "after the product: none, or silu_mul (gate columns, then up)"}
	rrk = k["rmsnorm_matmul_rope_kv_write"]
	assert rrk["inputs"] == ["x", "w", "b", "pos"] and rrk["outputs"] == ["q", "k_cache", "v_cache"]
	assert rrk["attrs"][:-2] == k["rope_kv_write"]["attrs"][:-1]
	assert [a["name"] for a in rrk["attrs"][-2:]] == ["eps", "trans_b"]
	dl = k["decoder_layer"]
	assert dl["inputs"] == ["x", "attn_norm", "w_qkv", "w_o", "ffn_norm", "w_gate_up", "w_down", "pos"]
	assert dl["outputs"] == ["out", "k_cache", "v_cache"] and dl["min_inputs"] == 8
	assert dl["attrs"][:-4] == k["rope_kv_write"]["attrs"][:-1]
	assert [a["name"] for a in dl["attrs"][-4:]] == ["eps", "kv_len", "scale", "causal"]
	assert dl["attrs"][-4]["required"] and dl["attrs"][-3]["required"]
	assert dl["attrs"][-3]["type"] == "int-or-var" and dl["attrs"][1]["default"] == "heads"
	assert dl["capture"] == "safe-form"
	assert dl["capture_why"] == "its attention\x27s launch shape follows the host var kv_len"
	EOT
	"$PYTHON3" check.py out.json
'

test_expect_success 'ops takes no arguments' '
	test_expect_code 2 bcg ops extra 2>err &&
	test_grep "unexpected argument" err
'

test_done
