#!/bin/sh
test_description='bcgtool inspect: pictures and tables of a model with many layers (folded DOT, kernel names demangled, arena operands once)'
. "$(dirname "$0")/test-lib.sh"

edit="$BCG_BUILD_DIR/t/helper/plan-edit"

# llama-decode-small.yaml with L layers. Its layer (the repeat block) is 16
# ops: attn_norm q k v rope_q rope_k k_write v_write attn o attn_res
# ffn_norm gate_up swiglu down ffn_res; before it embed, after it
# out_norm lm_head next: 1 + 16 L + 3 ops, attn a breakpoint in each layer.
layers() {
	sed -e "s/^  L: 2 .*/  L: $1/" "$SAMPLES/llama-decode-small.yaml" >l$1.yaml &&
	SOURCE_DATE_EPOCH=1700000000 bcg capture --backend host --no-nvtx --no-tune -q \
		-o l$1.plan l$1.yaml
}

test_expect_success 'setup: plans of 3, 4 and 32 layers; the 32 with kernel nodes' '
	layers 3 && layers 4 && layers 32 &&
	"$edit" l32.plan l32c.plan cudaify &&
	cp "$TEST_DATA"/plans/llama-decode-small.cuda.plan small.plan
'

test_expect_success '--dot folds 32 layers: one layer drawn, "x 32", its break once' '
	bcg inspect --dot --variant 1 l32.plan >fold.dot &&
	test_grep "label=\"x 32: ops 1-512, 16 a repeat (attn_norm.0..ffn_res.31)\"" fold.dot &&
	test_grep "32 repeats of 16 ops drawn once" fold.dot &&
	test $(grep -c "shape=octagon" fold.dot) = 1 &&
	test_grep "label=\"break attn.0 .. attn.31" fold.dot &&
	# embed, the layer'"'"'s two graph parts, the head: four boxes.
	test $(grep -c "shape=box" fold.dot) = 4 &&
	test_grep "label=\"segments 0-31 (a part of each)\\\\nops 1-8 attn_norm.0..v_write.0\\\\nrmsnorm, 3 matmul, 2 rope, 2 kv_write\"" fold.dot &&
	test_grep "label=\"segment 32 (a part)\\\\nops 513-515 out_norm..next" fold.dot &&
	test_grep "next repeat (the same segment)" fold.dot
'

test_expect_success '--dot --nodes draws every op of every segment, nothing folded' '
	bcg inspect --dot --nodes --variant 1 l32.plan >all.dot &&
	! test_grep "x 32" all.dot &&
	test $(grep -c "shape=octagon" all.dot) = 32 &&
	# 1 + 16 * 32 + 3 ops, 32 of them breakpoints.
	test $(grep -c "\"s[0-9]*_o[0-9]*\" \\[shape=box" all.dot) = $((1 + 16 * 32 + 3 - 32))
'

test_expect_success '--dot folds from 4 repeats: 3 layers drawn whole, 4 folded' '
	bcg inspect --dot l3.plan >l3.dot &&
	! test_grep "repeat" l3.dot &&
	bcg inspect --dot l4.plan >l4.dot &&
	test $(grep -c "label=\"x 4: ops 1-64, 16 a repeat" l4.dot) = 3
'

test_expect_success 'kernel nodes: the folded layer counts its nodes; --nodes gives them all' '
	bcg inspect --dot --variant 2 l32c.plan >c.dot &&
	test_grep "label=\"x 32: " c.dot &&
	test_grep "ops 1-8 attn_norm.0..v_write.0\\\\nrmsnorm, 3 matmul, 2 rope, 2 kv_write\\\\n8 nodes\"" c.dot &&
	! test_grep "kernels differ" c.dot &&
	bcg inspect --dot --nodes --variant 2 l32c.plan >cn.dot &&
	test $(grep -c "\"s[0-9]*_n[0-9]*\" \\[shape=" cn.dot) = $((1 + 16 * 32 + 3 - 32))
'

test_expect_success 'a layer whose kernel differs still folds, and the picture says so' '
	"$edit" l32c.plan l32k.plan kernel 16 3 other_kernel &&
	bcg inspect --dot --variant 1 l32k.plan >k.dot &&
	test_grep "label=\"x 32: " k.dot &&
	test $(grep -c "kernels differ between repeats" k.dot) = 1
'

test_expect_success DOT,PYTHON3 'the folded picture renders to a PNG a person can read' '
	bcg inspect --dot l32c.plan >three.dot &&
	"$DOT" -Tpng three.dot >three.png &&
	"$PYTHON3" - <<-\EOF
	import struct
	with open("three.png", "rb") as f:
	    head = f.read(24)
	assert head[:8] == b"\x89PNG\r\n\x1a\n", head
	w, h = struct.unpack(">II", head[16:24])
	# Three variants side by side, each a handful of shapes tall.
	assert w < 3000 and h < 1500, (w, h)
	EOF
'

# The real CUDA capture's kernels, demangled by hand from their Itanium
# names: _Z20bcg_embedding_kernelItEvPKviPKiPvilll is
# void bcg_embedding_kernel<unsigned short>(void const*, int, int const*,
# void*, int, long, long, long); _Z17bcg_binary_kernelILb0EEvPKviS1_iPvill
# is void bcg_binary_kernel<false>(...); the cuBLAS nvjet kernels are C
# names.
test_expect_success 'kernel names demangled in the node table, the histogram and DOT' '
	bcg inspect --nodes --variant 1 small.plan >nodes &&
	test_grep "^  0  kernel  bcg_embedding_kernel<unsigned short>  " nodes &&
	test_grep "  kernel  bcg_binary_kernel<false>  " nodes &&
	test_grep "  kernel  nvjet_sm90_tst_64x8_64x16_1x1_h_bz_NNT  " nodes &&
	! test_grep "_Z[0-9]" nodes &&
	bcg inspect --stats --variant 1 small.plan >stats &&
	test_grep "^ *4  bcg_binary_kernel<false>  " stats &&
	! test_grep "_Z[0-9]" stats &&
	bcg inspect --dot --variant 1 small.plan >small.dot &&
	test_grep "label=\"bcg_embedding_kernel<unsigned short>\\\\n<<<" small.dot &&
	! test_grep "_Z[0-9]" small.dot
'

test_expect_success '--json keeps the raw names' '
	bcg inspect --json --variant 1 small.plan >small.json &&
	test_grep "\"kernel\": *\"_Z20bcg_embedding_kernelItEvPKviPKiPvilll\"" small.json &&
	! test_grep "unsigned short" small.json
'

test_expect_success 'no operand named twice in a row of the node table' '
	cat >twice.awk <<-\EOF &&
	/\]=/ {
		delete seen
		for (i = 1; i <= NF; i++)
			if ($i ~ /\]=/) { t = $i; sub(/.*\]=/, "", t); if (seen[t]++) print t }
	}
	EOF
	# The check finds a repeat where there is one.
	printf "  2  kernel  k  [22]=w_q[0] [30]=h [54]=w_q[0]\n" >bad &&
	test "$(awk -f twice.awk bad)" = "w_q[0]" &&
	bcg inspect --nodes small.plan >nodes-all &&
	awk -f twice.awk nodes-all >twice &&
	! test -s twice
'

test_expect_success PYTHON3 'each arena operand once a node, with every parameter word that points at it' '
	bcg inspect --json --variant 1 small.plan >small.json &&
	bcg inspect --nodes --variant 1 small.plan >nodes &&
	"$PYTHON3" - <<-\EOF
	import json, re
	d = json.load(open("small.json"))
	rows = [l for l in open("nodes") if re.match(r"^ *[0-9]+  kernel  ", l)]
	nodes = [n for s in d["segments"] for n in s["nodes"]]
	assert len(rows) == len(nodes), (len(rows), len(nodes))
	repeated = 0
	for row, n in zip(rows, nodes):
	    # The words of one pointer, from the raw parameters: grouped by
	    # the arena offset they hold, in the order of their first word.
	    groups = {}
	    for p in n["params"]:
	        groups.setdefault(p["offset"], []).append(p["index"])
	    want = ["[" + ",".join(map(str, g)) + "]" for g in groups.values()]
	    got = re.findall(r"(\[[0-9,]+\])=(\S+)", row)
	    assert [g for g, _ in got] == want, (row, want)
	    names = [t for _, t in got]
	    assert len(names) == len(set(names)), row
	    repeated += any(len(g) > 1 for g in groups.values())
	# cuBLAS kernels hold each pointer several times, in-place ops twice.
	assert repeated >= 10, repeated
	EOF
'

# On a GPU: the same 32 layers captured for real (cuBLAS kernels whose
# parameters hold each pointer several times, kernels a tuner chose).
test_expect_success CUDA 'a 32-layer CUDA capture: DOT folded to one layer, names demangled, operands once' '
	bcg capture --backend cuda --tokens 1 -o l32cuda.plan l32.yaml >/dev/null &&
	bcg inspect --dot l32cuda.plan >cu.dot &&
	test_grep "label=\"x 32: ops 1-512, 16 a repeat (attn_norm.0..ffn_res.31)\"" cu.dot &&
	test $(grep -c "shape=octagon" cu.dot) = 1 &&
	test_grep "ops 1-8 attn_norm.0..v_write.0\\\\nrmsnorm, 3 matmul, 2 rope, 2 kv_write\\\\n[0-9]* nodes" cu.dot &&
	bcg inspect --nodes l32cuda.plan >cu.nodes &&
	test_grep "  kernel  bcg_embedding_kernel<unsigned short>  " cu.nodes &&
	! test_grep "_Z[0-9]" cu.nodes &&
	! test_grep "_Z[0-9]" cu.dot &&
	bcg inspect --json l32cuda.plan >cu.json &&
	test_grep "\"kernel\": *\"_Z20bcg_embedding_kernel" cu.json &&
	# No operand named twice in a row of the node table.
	cat >twice.awk <<-\EOF &&
	/\]=/ {
		delete seen
		for (i = 1; i <= NF; i++)
			if ($i ~ /\]=/) { t = $i; sub(/.*\]=/, "", t); if (seen[t]++) print t }
	}
	EOF
	awk -f twice.awk cu.nodes >twice &&
	! test -s twice
'

test_expect_success CUDA,DOT,PYTHON3 'the CUDA capture'"'"'s folded picture renders small' '
	"$DOT" -Tpng cu.dot >cu.png &&
	"$PYTHON3" -c "
import struct
h = open(\"cu.png\", \"rb\").read(24)
w, t = struct.unpack(\">II\", h[16:24])
assert w < 2000 and t < 1500, (w, t)
"
'

test_done
