#!/bin/sh
test_description='bcgtool ops lists the op kinds of the registry'
. "$(dirname "$0")/test-lib.sh"

test_expect_success 'ops lists the 16 kinds in registry order, one per line' '
	bcg ops >out &&
	sed -n "2,17p" out | cut -d" " -f1 >kinds &&
	printf "%s\n" fill copy add mul scale matmul rmsnorm layernorm silu_mul gelu \
		softmax rope embedding kv_write attention argmax >expect &&
	test_cmp expect kinds
'

test_expect_success 'ops shows signatures, defaults and capturability' '
	bcg ops >out &&
	test_grep "^matmul  *(a, b) -> out  *trans_a=false trans_b=false  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^kv_write  *(x, pos) -> cache  *-  *f32 f16 bf16  *no  *always\$" out &&
	test_grep "^attention  *(q, k, v) -> out  *heads kv_heads=heads head_dim kv_len scale=0  *f32 f16 bf16  *no  *safe-form\$" out &&
	test_grep "^  attention: its launch shape follows the host var kv_len\$" out
'

test_expect_success PYTHON3 'ops --json holds every kind with attributes in op.h order' '
	bcg ops --json >out.json &&
	cat >check.py <<-\EOT &&
	import json, sys
	k = {x["name"]: x for x in json.load(open(sys.argv[1]))}
	assert len(k) == 16
	inplace = sorted(n for n in k if k[n]["inplace"])
	assert inplace == sorted(["copy", "add", "mul", "scale", "rmsnorm", "layernorm", "gelu", "softmax", "rope"])
	assert [n for n in k if k[n]["capture"] != "always"] == ["attention"]
	assert k["attention"]["capture"] == "safe-form"
	assert [a["name"] for a in k["attention"]["attrs"]] == ["heads", "kv_heads", "head_dim", "kv_len", "scale"]
	assert k["attention"]["attrs"][1]["default"] == "heads"
	assert k["attention"]["attrs"][3]["type"] == "int-or-var" and k["attention"]["attrs"][3]["required"]
	assert [a["name"] for a in k["rope"]["attrs"]] == ["heads", "head_dim", "theta"]
	assert k["rmsnorm"]["attrs"][0]["default"] == 1e-6 and k["layernorm"]["attrs"][0]["default"] == 1e-5
	assert k["fill"]["dtypes"] == ["f32", "f16", "bf16", "i32"] and k["fill"]["inputs"] == []
	assert k["embedding"]["inputs"] == ["table", "ids"]
	EOT
	"$PYTHON3" check.py out.json
'

test_expect_success 'ops takes no arguments' '
	test_expect_code 2 bcg ops extra 2>err &&
	test_grep "unexpected argument" err
'

test_done
