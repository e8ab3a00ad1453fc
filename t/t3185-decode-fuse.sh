#!/bin/sh
test_description='llama-decode-fuse.yaml: llama-decode.yaml with the norms folded into the products

samples/llama-decode-fuse.yaml is samples/llama-decode.yaml with each
layer'"'"'s attn_norm, q|k|v product and rope_kv_write in one
rmsnorm_matmul_rope_kv_write, its ffn_norm and gate|up product in one
rmsnorm_matmul (epilogue silu_mul), and the final norm and the lm-head in
one rmsnorm_matmul. Scaled down to a tiny model (norm
weights made random, so that they matter), the two give the same bytes
on the host backend, eager and captured. On CUDA the folded kernels may
sum in another order: within a relative 1e-2 of each logits row'"'"'s
largest magnitude (t/compare-outputs.py), and the captured graphs replay
bit for bit as their eager steps.'
. "$(dirname "$0")/test-lib.sh"

compare="$TEST_DIRECTORY/compare-outputs.py"

# tiny NAME: samples/NAME.yaml at 2 layers, hidden 64, 4 heads of 16, FFN
# 96, 128 cache positions, 256 words, capture sizes 1, 2, 4, random norm
# weights; as NAME.yaml here.
tiny() {
	sed -e "s/^  T: {tokens: \[1, 2, 4, 8, 16, 32\]}/  T: {tokens: [1, 2, 4]}/" \
	    -e "s/^  L: 32 /  L: 2 /" -e "s/^  H: 1024 /  H: 64 /" -e "s/^  NH: 16 /  NH: 4 /" \
	    -e "s/^  F: 2816 /  F: 96 /" -e "s/^  S: 2048 /  S: 128 /" -e "s/^  V: 32000 /  V: 256 /" \
	    -e "s/role: weight, count: L, init: ones/role: weight, count: L, init: {kind: random, scale: 1, seed: 900}/" \
	    "$SAMPLES/$1.yaml" >"$1.yaml"
}

test_expect_success 'the folded sample: 5 ops a layer, and the lm-head with its norm and the pick, 162 ops for 260' '
	bcg validate "$SAMPLES/llama-decode-fuse.yaml" >fuse.out &&
	test_grep "^ops (162): embedding 1, attention 32, matmul_add 64, rmsnorm_matmul 32, rmsnorm_matmul_rope_kv_write 32, rmsnorm_matmul_argmax 1\$" fuse.out &&
	tiny llama-decode-fuse && tiny llama-decode &&
	bcg validate llama-decode-fuse.yaml >tiny.out &&
	test_grep "^ops (12): embedding 1, attention 2, matmul_add 4, rmsnorm_matmul 2, rmsnorm_matmul_rope_kv_write 2, rmsnorm_matmul_argmax 1\$" tiny.out &&
	test_grep "^  attn_norm\[0..1\] .* init random scale 1 seed 900+i" tiny.out &&
	bcg validate llama-decode.yaml >tiny-unfolded.out &&
	test_grep "^ops (20): " tiny-unfolded.out
'

for t in 1 4; do
	test_expect_success "host, $t tokens: folded and unfolded give the same outputs" '
		same_run_outputs llama-decode-fuse.yaml llama-decode.yaml --backend host --steps 3 --tokens '$t'
	'
done

test_expect_success PYTHON3 'host: the dumped values are identical, every output' '
	same_dumps llama-decode-fuse.yaml llama-decode.yaml --backend host --steps 2
'

test_expect_success 'host: captured (breakable and full), replayed bit for bit as eager' '
	bcg capture --backend host -o fuse.plan llama-decode-fuse.yaml >out &&
	test_grep "^verified 3 of 3 variants" out &&
	bcg capture --backend host --mode full -o full.plan llama-decode-fuse.yaml >out &&
	test_grep "^verified 3 of 3 variants" out &&
	replay_bit_exact host 0 "fuse full" 1 4
'

test_expect_success CUDA,PYTHON3 'cuda: folded agrees with the host and with the unfolded step' '
	bcg run --backend cuda --steps 3 --dump-outputs cuda-fuse llama-decode-fuse.yaml >/dev/null &&
	bcg run --backend cuda --steps 3 --dump-outputs cuda-unfolded llama-decode.yaml >/dev/null &&
	bcg run --backend host --steps 3 --dump-outputs host-fuse llama-decode-fuse.yaml >/dev/null &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits cuda-fuse host-fuse &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits cuda-fuse cuda-unfolded
'

test_expect_success CUDA 'cuda: captured full, replayed bit for bit as eager' '
	bcg capture --backend cuda --mode full -o cuda-full.plan llama-decode-fuse.yaml >out &&
	test_grep "^verified 3 of 3 variants" out &&
	replay_bit_exact cuda 1 cuda-full 1 4
'

# Attention has ten implementations on CUDA, dsplit and dsplit_early the
# last two, usable on every device but fast only for the rows they are
# timed at: the tuner weighs them only with --tune-var (and once kept the
# first eight of a kind and dropped the rest unsaid). Under
# SOURCE_DATE_EPOCH (test-lib.sh) the candidates are recorded untimed, by
# name alone; neither is ever the default, so each follows another's name.
test_expect_success CUDA 'cuda: the tuner weighs attention'"'"'s dsplit forms only with --tune-var' '
	bcg inspect --choices cuda-full.plan >choices &&
	test $(grep -c "  attention  " choices) = 6 &&
	test $(grep "  attention  " choices | grep -cE ", dsplit(_early)?( [0-9.]+ us)?(,|\$)") = 0 &&
	test $(grep "  attention  " choices | grep -cE "^ .*  split( [0-9.]+ us)?, twopass") = 6 &&
	bcg capture --backend cuda --mode full --tune-var kv_len=64:100 -o cuda-var.plan \
		llama-decode-fuse.yaml >out &&
	bcg inspect --choices cuda-var.plan >choices &&
	test $(grep -c "  attention  " choices) = 6 &&
	test $(grep "  attention  " choices | grep -cE ", dsplit( [0-9.]+ us)?, dsplit_early( [0-9.]+ us)?(,|\$)") = 6
'

test_done
