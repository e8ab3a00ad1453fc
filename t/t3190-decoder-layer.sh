#!/bin/sh
test_description='decoder_layer: a whole decoder layer in one op computes the unfused sequence

samples/llama-3.2-1b-layer.yaml is samples/llama-3.2-1b.yaml with each
layer'"'"'s eight ops in one decoder_layer. Scaled down to a tiny model
(2 layers, hidden 64, 4/2 heads of 16, FFN 128, 32 cache positions, 97
words, capture sizes 1 and 2, norm weights made random so that they
matter), it gives the bytes of the unfused script on the host backend,
eager and captured (breakable, where the layer is a breakpoint, and
full). The sharding pass refuses it: a layer split over ranks needs an
all_reduce inside it.'
. "$(dirname "$0")/test-lib.sh"

compare="$TEST_DIRECTORY/compare-outputs.py"

# tiny NAME: samples/NAME.yaml at the size above, as NAME.yaml.
tiny() {
	shrink_1b "$1" "$1.yaml" "64 4 2 128 32 97" "1, 2" random
}

test_expect_success 'bcgtool ops lists decoder_layer, its eight inputs and three outputs' '
	bcg ops >out &&
	test_grep "^decoder_layer  *(x, attn_norm, w_qkv, w_o, ffn_norm, w_gate_up, w_down, pos) -> (out, k_cache, v_cache)  .*  yes  *safe-form\$" out
'

test_expect_success 'the layer sample validates: one decoder_layer a layer, 20 ops for 132' '
	bcg validate "$SAMPLES/llama-3.2-1b-layer.yaml" >layer.out &&
	test_grep "^ops (20): matmul 1, rmsnorm 1, embedding 1, argmax 1, decoder_layer 16\$" layer.out &&
	tiny llama-3.2-1b-layer && tiny llama-3.2-1b &&
	bcg validate llama-3.2-1b-layer.yaml >tiny.out &&
	test_grep "^ops (6): matmul 1, rmsnorm 1, embedding 1, argmax 1, decoder_layer 2\$" tiny.out &&
	test_grep "^  ffn_norm\[0..1\] .* init random scale 1 seed 900+i" tiny.out &&
	bcg validate llama-3.2-1b.yaml >unfused.out &&
	test_grep "^ops (20): " unfused.out
'

for t in 1 2; do
	test_expect_success "host, $t token(s): decoder_layer and the unfused ops give the same outputs" '
		same_run_outputs llama-3.2-1b-layer.yaml llama-3.2-1b.yaml --backend host --steps 3 --tokens '$t'
	'
done

test_expect_success PYTHON3 'host: the dumped values are identical, every output' '
	same_dumps llama-3.2-1b-layer.yaml llama-3.2-1b.yaml --backend host --steps 3
'

test_expect_success 'host: captured breakable (each layer a breakpoint) and full, bit for bit as eager' '
	bcg capture --backend host -o layer.plan llama-3.2-1b-layer.yaml >out &&
	test_grep "^verified 2 of 2 variants" out &&
	test_grep "^wrote layer.plan .*: 2 variants, 4 segments, 4 breakpoints" out &&
	bcg capture --backend host --mode full -o full.plan llama-3.2-1b-layer.yaml >out &&
	test_grep "^verified 2 of 2 variants" out &&
	bcg inspect --choices full.plan >choices &&
	test $(grep -c " decoder_layer  " choices) = 4 &&
	replay_bit_exact host 0 "layer full" 1 2
'

test_expect_success 'capture --tp 2 refuses decoder_layer, naming the op and the way out' '
	test_expect_code 2 bcg capture --backend host --tp 2 -o tp.plan llama-3.2-1b-layer.yaml 2>err &&
	test_grep "^bcgtool: llama-3.2-1b-layer.yaml:[0-9]*:[0-9]*: --tp 2: op .layer.0. (decoder_layer): a whole decoder layer in one op cannot run over ranks (its o and down products would need an all_reduce inside it); write the layer as its unfused ops" err &&
	! test -f tp.plan
'

# tiny_decode NAME: samples/NAME.yaml (llama-decode's model) at 2 layers,
# hidden 64, 4 heads of 16 (a kv head each), an FFN of 136, 32 cache
# positions from kv_len 4, 97 words, capture sizes 1 and 2.
tiny_decode() {
	sed -e "s/^  T: {tokens: \[1, 2, 4, 8, 16, 32\]}/  T: {tokens: [1, 2]}/" \
	    -e "s/^  L: 32 /  L: 2 /" -e "s/^  H: 1024 /  H: 64 /" \
	    -e "s/^  NH: 16 /  NH: 4 /" -e "s/^  F: 2816 /  F: 136 /" \
	    -e "s/^  S: 2048 /  S: 32 /" -e "s/^  V: 32000 /  V: 97 /" \
	    -e "s/kv_len: {start: 64,/kv_len: {start: 4,/" \
	    "$SAMPLES/$1.yaml" >"$1.yaml"
}

test_expect_success PYTHON3 'llama-decode-layer: the logits of llama-decode, bit for bit, at 1 and 2 tokens' '
	tiny_decode llama-decode-layer && tiny_decode llama-decode &&
	test_grep "^  F: 136 " llama-decode-layer.yaml &&
	test_grep "^  - repeat: L" llama-decode-layer.yaml &&
	for t in 1 2; do
		same_dumps llama-decode-layer.yaml llama-decode.yaml --backend host --steps 3 \
			--tokens $t || return 1
	done
'

# small NAME: samples/NAME.yaml at 2 layers, hidden 256, 4/2 heads of 64
# (the persistent kernel's head_dim), FFN 512, 64 cache positions, 97
# words, capture sizes 1 and 2, as small-NAME.yaml.
small() {
	shrink_1b "$1" "small-$1.yaml" "256 4 2 512 64 97" "1, 2"
}

test_expect_success CUDA,PYTHON3 'cuda: captured breakable and full, both implementations replay bit for bit, and agree with the host' '
	small llama-3.2-1b-layer && small llama-3.2-1b &&
	bcg capture --backend cuda -o cuda-layer.plan small-llama-3.2-1b-layer.yaml >out &&
	test_grep "^verified 2 of 2 variants" out &&
	bcg capture --backend cuda --mode full -o cuda-full.plan small-llama-3.2-1b-layer.yaml >out &&
	test_grep "^verified 2 of 2 variants" out &&
	args= &&
	for l in 0 1; do
		args="$args choice 1 layer.$l persistent tuned" || return 1
	done &&
	"$BCG_BUILD_DIR/t/helper/plan-edit" cuda-full.plan persistent.plan $args &&
	bcg inspect --choices persistent.plan >choices &&
	test $(grep -c " decoder_layer  persistent  " choices) = 2 &&
	replay_bit_exact cuda 1 "cuda-layer cuda-full" 1 2 &&
	replay_bit_exact cuda 1 persistent 1 &&
	bcg run --backend cuda --steps 2 --tokens 1 --dump-outputs cl small-llama-3.2-1b-layer.yaml >/dev/null &&
	bcg run --backend host --steps 2 --tokens 1 --dump-outputs hu small-llama-3.2-1b.yaml >/dev/null &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits cl hu >out &&
	cat out &&
	test_grep "^logits: .* within 0.01\$" out
'

test_done
