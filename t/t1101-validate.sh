#!/bin/sh
test_description='validate summarizes good scripts, as text and as JSON'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'the text summary of tiny-mlp is the reviewed one' '
	(cd "$BCG_SRC_DIR" && "$BCGTOOL" validate samples/tiny-mlp.yaml) >out 2>err &&
	test_cmp "$TEST_DATA/scripts/tiny-mlp.validate" out &&
	! test -s err
'

test_expect_success 'every sample validates' '
	for s in "$SAMPLES"/*.yaml; do
		bcg validate "$s" >out 2>err &&
		test_grep "^script " out &&
		! test -s err || { echo "failed: $s"; return 1; }
	done
'

test_expect_success 'the example of op-script.md validates' '
	awk "/^\`\`\`yaml/ { on = 1; next } /^\`\`\`/ { if (on) exit } on" \
		"$BCG_SRC_DIR/formats/op-script.md" >example.yaml &&
	test_grep "^bcg: 1" example.yaml &&
	bcg validate example.yaml >out &&
	cat >expect <<-\EOT &&
	variants
	       T  mode       segments  breakpoints  arena alone
	       1  full              1            0      259 KiB
	       2  breakable         3            2      260 KiB
	       4  breakable         3            2      262 KiB
	EOT
	sed -n "/^variants/,/^\$/p" out | sed "/^\$/d" >actual &&
	test_cmp expect actual
'

test_expect_success 'llama-decode: 260 ops, 8 a layer, 32 attention breakpoints at every size' '
	bcg validate "$SAMPLES/llama-decode.yaml" >out &&
	test_grep "^ops (260): matmul 33, rmsnorm 65, embedding 1, attention 32, argmax 1, matmul_add 64, matmul_silu_mul 32, rope_kv_write 32\$" out &&
	test_grep "^breakpoints in breakable mode (T=1 2 4 8 16 32): 32\$" out &&
	for l in 0 1 30 31; do
		test_grep "^  attn\\.$l  *its launch shape follows the host var kv_len\$" out || return 1
	done &&
	test $(grep -c "^  attn\\." out) = 32
'

test_expect_success 'llama-decode-unfused: 548 ops, 17 a layer, the same breakpoints' '
	bcg validate "$SAMPLES/llama-decode-unfused.yaml" >out &&
	test_grep "^ops (548): add 64, matmul 129, rmsnorm 65, silu_mul 32, rope 64, embedding 1, kv_write 64, attention 32, argmax 1, slice 96\$" out &&
	test_grep "^breakpoints in breakable mode (T=1 2 4 8 16 32): 32\$" out
'

test_expect_success 'llama-decode-gqa and llama-3.2-1b: 8 kernels a layer' '
	bcg validate "$SAMPLES/llama-decode-gqa.yaml" >out &&
	test_grep "^ops (37): fill 1, matmul 13, embedding 1, attention 4, argmax 1, add_rmsnorm 9, matmul_silu_mul 4, rope_kv_write 4\$" out &&
	bcg validate "$SAMPLES/llama-3.2-1b.yaml" >out &&
	test_grep "^ops (132): matmul 17, rmsnorm 33, embedding 1, attention 16, argmax 1, matmul_add 32, matmul_silu_mul 16, rope_kv_write 16\$" out &&
	test_grep "^breakpoints in breakable mode (T=1 2 4 8): 16\$" out
'

test_expect_success 'qwen3-30b-a3b-moe: 9 ops a layer (qk_norm in rope_kv_write, the residual in the experts), attention and the experts break' '
	bcg validate "$SAMPLES/qwen3-30b-a3b-moe.yaml" >out &&
	test_grep "^ops (76): matmul 17, rmsnorm 17, embedding 1, attention 8, argmax 1, matmul_add 8, rope_kv_write 8, moe_router 8, moe_experts 8\$" out &&
	test_grep "^breakpoints in breakable mode (T=1 8 64): 16\$" out
'

test_expect_success 'qwen3-30b-a3b-moe-unfused: the same with qk_norm and the add apart, 11 ops a layer' '
	bcg validate "$SAMPLES/qwen3-30b-a3b-moe-unfused.yaml" >out &&
	test_grep "^ops (92): add 8, matmul 17, rmsnorm 17, embedding 1, attention 8, argmax 1, matmul_add 8, rope_kv_write 8, qk_norm 8, moe_router 8, moe_experts 8\$" out &&
	test_grep "^breakpoints in breakable mode (T=1 8 64): 16\$" out
'

test_expect_success PYTHON3 'validate --json is JSON with the values of tiny-mlp' '
	bcg validate --json "$SAMPLES/tiny-mlp.yaml" >out.json &&
	"$PYTHON3" -m json.tool out.json >/dev/null &&
	cat >check.py <<-\EOT &&
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["version"] == 1
	assert [x["name"] for x in d["dims"]] == ["T", "H", "F"]
	assert d["dims"][0]["tokens"] and d["dims"][0]["value"] == 8
	assert d["dims"][2] == {"name": "F", "value": 256, "expr": "4*H", "tokens": False}
	assert d["vars"] == []
	t = {x["name"]: x for x in d["tensors"]}
	assert list(t) == ["x", "w1", "b1", "w2", "h", "g", "d", "y"]
	assert t["x"]["shape"] == ["T", "H"] and t["x"]["bytes"] == 8 * 64 * 4
	assert t["x"]["feed"] == {"kind": "random", "scale": 1, "seed": 5}
	assert t["w1"]["init"] == {"kind": "random", "seed": 1, "scale": 0.125}
	assert t["b1"]["init"] == {"kind": "const", "value": 0.01}
	assert t["y"]["init"] == {"kind": "zeros"} and t["h"]["init"] is None
	# persistent tensors first, packed in declaration order
	assert [t[n]["offset"] for n in ("x", "w1", "b1", "w2", "y")] == [0, 2048, 67584, 68608, 134144]
	# h and g live together; d comes after h is dead and takes its place
	assert t["h"]["offset"] == t["d"]["offset"] == 136192 and t["g"]["offset"] == 136192 + 8192
	assert [o["kind"] for o in d["ops"]] == ["matmul", "add", "gelu", "matmul", "add"]
	assert d["ops"][0]["name"] == "up" and d["ops"][0]["in"] == ["x", "w1"]
	assert d["ops"][0]["attrs"] == {"trans_a": False, "trans_b": False}
	assert [v["tokens"] for v in d["variants"]] == [1, 2, 4, 8]
	assert all(v["mode"] == "breakable" and v["segments"] == 1 and v["breakpoints"] == [] for v in d["variants"])
	assert [v["peak_bytes"] for v in d["variants"]] == [138240, 140288, 144384, 152576]
	assert d["arena"] == {"bytes": 152576, "unshared_bytes": 154624, "persistent_bytes": 136192,
	                      "saved_bytes": 2048, "alignment": 256}
	assert d["serving"] is None     # no batch feeds
	EOT
	"$PYTHON3" check.py out.json
'

test_expect_success PYTHON3 'validate --json of llama-decode-small: families, defaults, breakpoints' '
	bcg validate --json "$SAMPLES/llama-decode-small.yaml" >out.json &&
	cat >check.py <<-\EOT &&
	import json, sys
	d = json.load(open(sys.argv[1]))
	t = {x["name"]: x for x in d["tensors"]}
	assert t["w_q[0]"]["init"]["seed"] == 100 and t["w_q[1]"]["init"]["seed"] == 101
	assert "w_q" not in t and "k_cache[1]" in t and t["k_cache[1]"]["role"] == "state"
	assert t["pos"]["feed"] == {"kind": "positions", "var": "kv_len"}
	assert t["ids"]["feed"] == {"kind": "tokens", "range": 256, "seed": 7}
	assert d["vars"][0]["name"] == "kv_len" and d["vars"][0]["start"] == 8 and d["vars"][0]["limit"] == 64
	ops = d["ops"]
	assert len(ops) == 1 + 2 * 16 + 3
	attn = [o for o in ops if o["kind"] == "attention"]
	assert [o["name"] for o in attn] == ["attn.0", "attn.1"]
	assert attn[1]["in"] == ["q", "k_cache[1]", "v_cache[1]"]
	assert attn[0]["attrs"] == {"heads": 4, "kv_heads": 2, "head_dim": 16, "kv_len": {"var": "kv_len"}, "scale": 0}
	rope = [o for o in ops if o["kind"] == "rope"]
	assert rope[1]["attrs"] == {"heads": 2, "head_dim": 16, "theta": 10000, "rope_type": "default", "factor": 1,
	                            "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 0,
	                            "beta_fast": 32, "beta_slow": 1, "attention_factor": 0, "truncate": True}
	assert ops[1]["attrs"] == {"eps": 1e-5}
	for v in d["variants"]:
	    assert v["segments"] == 3
	    assert [(b["name"], b["reason"]) for b in v["breakpoints"]] == [("attn.0", "kind"), ("attn.1", "kind")]
	    assert [b["op"] for b in v["breakpoints"]] == [ops.index(a) for a in attn]
	EOT
	"$PYTHON3" check.py out.json
'

# llama-serve-tiny declares R 4 requests, caches k_cache[l] and v_cache[l]
# of [NB 32, BS 4, KVW 32] f32 for L 2 layers, MB 8 blocks a request, and
# sizes 1, 2, 4 (uniform decode, full) and 8 tokens over 4 requests.
test_expect_success 'validate of a serving script: the cache and the largest batch per size' '
	bcg validate "$SAMPLES/llama-serve-tiny.yaml" >out &&
	test_grep "^  requests   at most 4 a batch (the rows of seq_lens)\$" out &&
	test_grep "^  KV cache   32 blocks of 4 positions (128 positions), in 4 caches: 2.00 KiB a block over them, 64.0 KiB in all\$" out &&
	test_grep "^  a request  at most 8 blocks (32 positions); the cache holds 4 such requests at once\$" out &&
	cat >expect <<-\EOT &&
	largest batch per capture size
	  tokens  requests  uniform  mode       KV blocks at most
	       1         1  yes      full       8 (25.0% of the cache)
	       2         2  yes      full       16 (50.0% of the cache)
	       4         4  yes      full       32 (100.0% of the cache)
	       8         4  no       breakable  32 (100.0% of the cache)
	EOT
	sed -n "/^largest batch/,\$p" out >got &&
	test_cmp expect got &&
	bcg validate "$SAMPLES/llama-decode-small.yaml" >out &&
	! grep "^serving" out
'

test_expect_success PYTHON3 'validate --json of a serving script: the same figures' '
	bcg validate --json "$SAMPLES/llama-serve-tiny.yaml" >out.json &&
	cat >check.py <<-\EOT &&
	import json, sys
	s = json.load(open(sys.argv[1]))["serving"]
	assert s["requests"] == 4 and s["blocks"] == 32 and s["block_size"] == 4
	assert s["blocks_per_request"] == 8
	assert s["caches"] == ["k_cache[0]", "v_cache[0]", "k_cache[1]", "v_cache[1]"]
	assert s["cache_bytes"] == 4 * 32 * 4 * 32 * 4
	assert [(z["tokens"], z["requests"], z["uniform"], z["mode"], z["kv_blocks"])
	        for z in s["sizes"]] == [(1, 1, True, "full", 8), (2, 2, True, "full", 16),
	                                 (4, 4, True, "full", 32), (8, 4, False, "breakable", 32)]
	EOT
	"$PYTHON3" check.py out.json
'

test_expect_success 'the long-context script of bench/ validates: 16 requests of 8192 positions' '
	bcg validate "$BCG_SRC_DIR/bench/llama-serve-long.yaml" >out &&
	test_grep "^  a request  at most 512 blocks (8192 positions); the cache holds 16 such requests at once$" out &&
	test_grep "^ *16  full  *1  *0  " out
'

test_expect_success 'a script that cannot be read is an input error' '
	test_expect_code 2 bcg validate no-such.yaml 2>err &&
	echo "bcgtool: no-such.yaml: cannot read: No such file or directory" >expect &&
	test_cmp expect err
'

test_expect_success 'validate takes exactly one script' '
	test_expect_code 2 bcg validate 2>err &&
	test_grep "a SCRIPT is needed" err &&
	test_expect_code 2 bcg validate a.yaml b.yaml 2>err &&
	test_grep "one SCRIPT only" err
'

test_done
