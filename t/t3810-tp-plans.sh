#!/bin/sh
test_description='tensor-parallel plans on the host backend: replay (steps, --check, --prompt, a trace), instantiate and inspect of a plan of several ranks, as threads'
. "$(dirname "$0")/test-lib.sh"

hf="$TEST_DATA/hf"

field () {   # KEY FILE: a top-level key of the JSON in FILE
	"$PYTHON3" -c "import json, sys; print(*json.load(open(sys.argv[2]))[sys.argv[1]])" "$1" "$2"
}

test_expect_success JANSSON,PYTHON3 'a plan of 2 ranks captured from the llama fixture' '
	bcg import -q -o llama.yaml "$hf/llama" &&
	bcg capture --backend host --tp 2 -o tp2.plan llama.yaml >out &&
	bcg capture --backend host --tp 4 -o tp4.plan llama.yaml >out &&
	bcg inspect --json tp2.plan >plan.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"plan.json\"))
assert d[\"dist\"][\"world\"] == 2 and len(d[\"ranks\"]) == 1, d[\"dist\"]
"
'

test_expect_success JANSSON,PYTHON3 'replay --prompt of the plan of 2 and of 4 ranks: transformers'"'"' greedy tokens' '
	field tokens "$hf/llama/expect.json" >expect &&
	p=$("$PYTHON3" -c "import json, sys; print(*json.load(open(sys.argv[1]))[\"prompt\"], sep=\",\")" "$hf/llama/expect.json") &&
	for n in 2 4; do
		bcg replay --backend host --json --prompt $p --generate 8 tp$n.plan >gen.json &&
		field tokens gen.json >actual &&
		test_cmp expect actual || return 1
	done
'

test_expect_success JANSSON 'replay --check: every rank steps with the others, rank 0 reports' '
	bcg replay --backend host --steps 3 --warmup 1 --check tp2.plan >out 2>err &&
	test_grep "^ranks        2, every step on all of them together (rank 0.s figures)\$" out &&
	test_grep "^check        bit-exact with eager\$" out &&
	test $(grep -c "^step " out) = 1
'

test_expect_success JANSSON,PYTHON3 'replay --json of a plan of 2 ranks is one JSON document' '
	bcg replay --backend host --steps 2 --warmup 1 --json tp2.plan >out.json &&
	"$PYTHON3" -c "import json; d = json.load(open(\"out.json\")); assert d[\"steps\"] == 2, d"
'

test_expect_success JANSSON 'instantiate: each rank rebuilds its own graphs' '
	bcg instantiate --backend host tp4.plan >out &&
	test_grep "^ranks    4: each rebuilt its own graphs" out
'

# The llama fixture: 2 layers. A rank runs the embedding's all_reduce,
# an all_reduce after o and after down in each layer, and the head's
# all_gather: 1 + 2*2 + 1 collectives, every one a breakpoint (breakable).
test_expect_success JANSSON,PYTHON3 'inspect: the ranks side by side with their collectives' '
	layers=$("$PYTHON3" -c "import json, sys; print(json.load(open(sys.argv[1]))[\"num_hidden_layers\"])" "$hf/llama/config.json") &&
	test "$layers" = 2 &&
	bcg inspect tp4.plan >out &&
	test_grep "^ranks     rank 0 of 4" out &&
	test_grep "^ranks (4, tensor-parallel)\$" out &&
	for r in 0 1 2 3; do
		grep -E "^ +$r +[0-9]+ +[0-9]+ +[0-9]+ +6 +6 +0 " out >/dev/null || {
			echo >&2 "rank $r: no row with 6 collectives, all eager"; return 1; }
	done
'

test_expect_success 'the serving sample, split: a trace served by 2 ranks as by 1' '
	sed -f "$TEST_DIRECTORY/serve-splits.sed" "$BCG_SRC_DIR/samples/llama-serve-tiny.yaml" >serve.yaml &&
	test $(grep -c "split:" serve.yaml) = 10 &&
	bcg capture --backend host -o serve1.plan serve.yaml >/dev/null &&
	bcg capture --backend host --tp 2 -o serve2.plan serve.yaml >/dev/null &&
	spec=requests=8,rate=100,prompt=6,output=5,seed=3 &&
	bcg replay --backend host --synthetic $spec --check serve2.plan >out2 &&
	test_grep "^check        bit-exact with eager\$" out2 &&
	bcg replay --backend host --synthetic $spec serve1.plan >out1 &&
	grep "^steps \|^generated\|^tokens " out1 >s1 &&
	grep "^steps \|^generated\|^tokens " out2 >s2 &&
	test -s s1 && test_cmp s1 s2
'

# 12 layers: 24 partial sums and a gathered head, more inserted tensors
# than the pass first makes room for (their names once dangled when it
# made more).
test_expect_success PYTHON3 'a deep split script: every inserted tensor keeps its name' '
	sed -e "s/^  L: 32 .*/  L: 12/" -e "s/^  V: 128256.*/  V: 512/" -e "s/^  S: 2048.*/  S: 64/" \
	    -e "s/^  F: 14336.*/  F: 256/" -e "s/^  H: 4096.*/  H: 512/" -e "s/^  NH: 32.*/  NH: 8/" \
	    -e "s/^  NKV: 8 .*/  NKV: 4/" "$BCG_SRC_DIR/samples/llama-3.1-8b.yaml" >deep.yaml &&
	test_grep "^  L: 12\$" deep.yaml &&
	bcg capture --backend host --tp 2 --tokens 1,8 -o deep.plan deep.yaml >/dev/null &&
	bcg inspect --json deep.plan >deep.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"deep.json\"))
for plan in [d] + d[\"ranks\"]:
    names = [t[\"name\"] for t in plan[\"tensors\"]]
    partial = sorted(n for n in names if n.endswith(\".partial\"))
    want = sorted([\"o.%d.partial\" % l for l in range(12)] + [\"down.%d.partial\" % l for l in range(12)])
    assert partial == want, partial
    assert \"w_head\" in names and \"logits.shard\" in names, names
    assert all(names), names
"
'

test_done
