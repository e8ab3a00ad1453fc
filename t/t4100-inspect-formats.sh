#!/bin/sh
test_description='bcgtool inspect --json and --dot: parsed, and checked against other sources'
. "$(dirname "$0")/test-lib.sh"

check="$TEST_DIRECTORY/inspect-check.py"

test_expect_success 'setup: the fixture plans and the script they were captured from' '
	cp "$TEST_DATA"/plans/*.plan "$TEST_DATA"/plans/mini.yaml .
'

test_expect_success PYTHON3 '--json is JSON that python3 -m json.tool accepts, for every plan' '
	for p in *.plan; do
		bcg inspect --json "$p" >"$p.json" &&
		"$PYTHON3" -m json.tool "$p.json" >/dev/null || return 1
	done &&
	for t in 1 2 4; do
		bcg inspect --json --variant $t mini-cuda.plan >v$t.json &&
		"$PYTHON3" -m json.tool v$t.json >/dev/null || return 1
	done
'

test_expect_success PYTHON3 '--json agrees with validate --json of the script, and with its hash' '
	bcg validate --json mini.yaml >summary.json &&
	"$PYTHON3" "$check" script mini.plan.json summary.json mini.yaml &&
	"$PYTHON3" "$check" script mini-cuda.plan.json summary.json mini.yaml
'

test_expect_success PYTHON3 '--json gives the values the fixtures were made with' '
	"$PYTHON3" - <<-\EOF
	import json
	d = json.load(open("mini-cuda.plan.json"))
	m = d["meta"]
	# regen.sh: SOURCE_DATE_EPOCH=1700000000, the script as mini.yaml,
	# plan-edit cudaify: an H100, CUDA 13.0.
	assert m["created"] == 1700000000 and m["created_utc"] == "2023-11-14T22:13:20Z", m
	assert m["script"] == "mini.yaml" and m["backend"] == "cuda", m
	assert (m["device"], m["cc_major"], m["cc_minor"]) == ("NVIDIA H100 80GB HBM3", 9, 0), m
	assert (m["cuda_runtime"], m["cuda_driver"], m["cublas"]) == (13000, 13000, 130000), m
	# mini.yaml: sizes 1 and 2 breakable, 4 eager; attn and probe break.
	assert [(v["tokens"], v["mode"], len(v["items"])) for v in d["variants"]] == \
	    [(1, "breakable", 5), (2, "breakable", 5), (4, "eager", 13)]
	segs = {s["index"]: s for s in d["segments"]}
	v2 = d["variants"][1]
	spans = [(segs[i["index"]]["op_first"], segs[i["index"]]["op_count"])
	         for i in v2["items"] if i["kind"] == "segment"]
	assert spans == [(0, 7), (8, 2), (11, 2)], spans
	bps = [d["breakpoints"][i["index"]] for i in v2["items"] if i["kind"] == "breakpoint"]
	assert [(b["name"], b["op"], b["reason"]) for b in bps] == \
	    [("attn", 7, "kind"), ("probe", 10, "forced")], bps
	assert all(b["reason"] == "mode" for b in d["breakpoints"] if b["variant"] == 2)
	# cudaify: one node per op, a memcpy for kv_write, a chain of edges,
	# parameters at the offsets of the operands.
	ops, tensors = d["ops"], d["tensors"]
	for s in d["segments"]:
	    assert [n["op"] for n in s["nodes"]] == list(range(s["op_first"], s["op_first"] + s["op_count"]))
	    assert [(e["from"], e["to"]) for e in s["edges"]] == [(k, k + 1) for k in range(len(s["nodes"]) - 1)]
	    for n in s["nodes"]:
	        op = ops[n["op"]]
	        if op["kind"] == "kv_write":
	            assert n["type"] == "memcpy" and n["kernel"] == "" and n["params"] == []
	            continue
	        assert n["type"] == "kernel" and n["kernel"] == op["kind"] + "_f32", n
	        assert [p["offset"] for p in n["params"]] == \
	            [tensors[t]["offset"] for t in op["in"] + op["out"]], n
	# Attributes keep their types: eps a float, heads an int, kv_len a var.
	attrs = {a["key"]: a for a in ops[7]["attrs"]}
	assert attrs["heads"] == {"key": "heads", "type": "int", "value": 2}
	assert attrs["kv_len"] == {"key": "kv_len", "type": "var", "value": 0}
	assert d["vars"][0]["name"] == "kv_len"
	assert ops[1]["attrs"][0]["type"] == "float" and abs(ops[1]["attrs"][0]["value"] - 1e-5) < 1e-12
	# The dispatch table: 1, 2, then 3-4 padded to 4.
	assert [(x["tokens_min"], x["tokens_max"], d["variants"][x["variant"]]["tokens"])
	        for x in d["dispatch"]] == [(1, 1, 1), (2, 2, 2), (3, 4, 4)], d["dispatch"]
	EOF
'

test_expect_success PYTHON3 '--json fingerprints are the ones plan-format.md defines' '
	"$PYTHON3" "$check" nodes mini-cuda.plan.json
'

test_expect_success PYTHON3 '--json --variant keeps that variant'"'"'s records, whole and unchanged' '
	for t in 1 2 4; do
		"$PYTHON3" "$check" variant v$t.json mini-cuda.plan.json $t || return 1
	done
'

test_expect_success DOT '--dot is a graph Graphviz renders, for every plan and variant' '
	for p in *.plan; do
		bcg inspect --dot "$p" >"$p.dot" &&
		"$DOT" -Tsvg "$p.dot" >"$p.svg" 2>err &&
		test_cmp /dev/null err &&
		test_grep "<svg" "$p.svg" || return 1
	done &&
	for t in 1 2 4; do
		bcg inspect --dot --variant $t mini-cuda.plan >v$t.dot &&
		"$DOT" -Tsvg v$t.dot >v$t.svg || return 1
	done
'

test_expect_success '--dot: one cluster per variant and per segment, one octagon per breakpoint' '
	bcg inspect --dot mini-cuda.plan >g.dot &&
	test $(grep -c "subgraph \"cluster_v" g.dot) = 3 &&
	test $(grep -c "subgraph \"cluster_s" g.dot) = 6 &&
	test $(grep -c "shape=octagon" g.dot) = 17 &&
	test $(grep -c "label=\"item [0-9]*: segment" g.dot) = 6 &&
	test $(grep -c "label=\"item [0-9]*: break" g.dot) = 17
'

test_expect_success '--dot: a segment holds its nodes and edges, or its ops as a chain' '
	bcg inspect --dot --variant 2 mini-cuda.plan >cuda.dot &&
	sed -n "/subgraph \"cluster_s4\"/,/^		}/p" cuda.dot >s4 &&
	test_grep "\"s4_n0\" \[shape=box.*label=\"matmul_f32.*op 8 o\"" s4 &&
	test_grep "\"s4_n1\" \[shape=box.*label=\"add_f32.*op 9 res\"" s4 &&
	test_grep "\"s4_n0\" -> \"s4_n1\";" s4 &&
	sed -n "/subgraph \"cluster_s3\"/,/^		}/p" cuda.dot >s3 &&
	test $(grep -c "shape=ellipse.*label=\"memcpy" s3) = 2 &&
	bcg inspect --dot --variant 2 mini.plan >host.dot &&
	sed -n "/subgraph \"cluster_s4\"/,/^		}/p" host.dot >h4 &&
	test_grep "\"s4_o8\" .*label=\"op 8 o.nmatmul\"" h4 &&
	test_grep "\"s4_o8\" -> \"s4_o9\";" h4
'

test_expect_success '--dot: bold edges join the items in execution order' '
	bcg inspect --dot --variant 2 mini-cuda.plan >cuda.dot &&
	grep "style=bold" cuda.dot | sed "s/ \[.*//; s/\"//g; s/^	*//" >order &&
	cat >expect <<-\EOF &&
	v1_start -> s3_n0
	s3_n6 -> b2
	b2 -> s4_n0
	s4_n1 -> b3
	b3 -> s5_n0
	s5_n1 -> v1_end
	EOF
	test_cmp expect order &&
	test_grep "\"s3_n6\" -> \"b2\" .*ltail=\"cluster_s3\"" cuda.dot &&
	test_grep "\"b2\" -> \"s4_n0\" .*lhead=\"cluster_s4\"" cuda.dot
'

test_expect_success '--json and --dot of a missing variant fail like the tables' '
	test_expect_code 2 bcg inspect --json --variant 8 mini.plan >out 2>err &&
	test_grep "no variant for 8 tokens" err &&
	test_cmp /dev/null out &&
	test_expect_code 2 bcg inspect --dot --variant 8 mini.plan >out 2>err &&
	test_cmp /dev/null out
'

test_done
