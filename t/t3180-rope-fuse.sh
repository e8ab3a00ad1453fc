#!/bin/sh
test_description='rmsnorm_matmul_rope_kv_write: the attention input in one op computes the unfused sequence

samples/llama-3.2-1b-fuse.yaml is samples/llama-3.2-1b-fold.yaml with
each layer'"'"'s rmsnorm_matmul (attn_norm, q|k|v) and rope_kv_write in
one rmsnorm_matmul_rope_kv_write. Scaled down to a tiny model (norm
weights made random, so that w matters), it gives the bytes of the
unfused samples/llama-3.2-1b.yaml on the host backend, eager, captured
and split over two ranks. On CUDA the fused kernels may sum the norm and
the product in another order: the two must agree within a relative 1e-2
of each logits row'"'"'s largest magnitude (t/compare-outputs.py), and the
captured graphs must replay bit for bit as their eager steps, under
each implementation (gemv, split, and rows_scaled at one token).'
. "$(dirname "$0")/test-lib.sh"

compare="$TEST_DIRECTORY/compare-outputs.py"
edit="$BCG_BUILD_DIR/t/helper/plan-edit"

# tiny NAME: samples/NAME.yaml with 2 layers, hidden 64, 4/2 heads of 16,
# FFN 96, 64 cache positions, 256 words, random norm weights; as NAME.yaml.
tiny() {
	shrink_1b "$1" "$1.yaml" "64 4 2 96 64 256" "" random
}

test_expect_success 'the fused sample: one rmsnorm_matmul_rope_kv_write a layer, 82 ops for 132' '
	bcg validate "$SAMPLES/llama-3.2-1b-fuse.yaml" >fuse.out &&
	test_grep "^ops (82): embedding 1, attention 16, matmul_add 32, rmsnorm_matmul 16, rmsnorm_matmul_rope_kv_write 16, rmsnorm_matmul_argmax 1\$" fuse.out &&
	tiny llama-3.2-1b-fuse && tiny llama-3.2-1b &&
	bcg validate llama-3.2-1b-fuse.yaml >tiny.out &&
	test_grep "^ops (12): embedding 1, attention 2, matmul_add 4, rmsnorm_matmul 2, rmsnorm_matmul_rope_kv_write 2, rmsnorm_matmul_argmax 1\$" tiny.out &&
	test_grep "^  attn_norm\[0..1\] .* init random scale 1 seed 900+i" tiny.out
'

for t in 1 4 8; do
	test_expect_success "host, $t tokens: fused and unfused give the same outputs" '
		same_run_outputs llama-3.2-1b-fuse.yaml llama-3.2-1b.yaml --backend host --steps 3 --tokens '$t'
	'
done

test_expect_success 'host, --tp 2: b split by q|k|v head blocks, fused and unfused agree' '
	same_run_outputs llama-3.2-1b-fuse.yaml llama-3.2-1b.yaml --backend host --steps 3 --tp 2
'

test_expect_success 'host, --tp 4: two kv heads replicated over four ranks, still the same' '
	bcg run --backend host --steps 2 --tp 4 --json llama-3.2-1b-fuse.yaml >f.json &&
	bcg run --backend host --steps 2 --tp 4 --json llama-3.2-1b.yaml >u.json &&
	sed -n "/\"outputs\"/,\$p" f.json >a &&
	sed -n "/\"outputs\"/,\$p" u.json >b &&
	test_cmp a b
'

test_expect_success PYTHON3 'host: the dumped values are identical, every output' '
	same_dumps llama-3.2-1b-fuse.yaml llama-3.2-1b.yaml --backend host --steps 2
'

test_expect_success 'host: captured (breakable and full), replayed bit for bit as eager' '
	bcg capture --backend host -o fuse.plan llama-3.2-1b-fuse.yaml >out &&
	test_grep "^verified 4 of 4 variants" out &&
	bcg capture --backend host --mode full -o full.plan llama-3.2-1b-fuse.yaml >out &&
	test_grep "^verified 4 of 4 variants" out &&
	bcg inspect --choices fuse.plan >choices &&
	test $(grep -c "  rmsnorm_matmul_rope_kv_write  " choices) = 8 &&
	replay_bit_exact host 0 "fuse full" 1 8
'

test_expect_success CUDA,PYTHON3 'cuda: fused agrees with the host and with the unfused sequence' '
	bcg run --backend cuda --steps 3 --dump-outputs cuda-fuse llama-3.2-1b-fuse.yaml >/dev/null &&
	bcg run --backend cuda --steps 3 --dump-outputs cuda-unfuse llama-3.2-1b.yaml >/dev/null &&
	bcg run --backend host --steps 3 --dump-outputs host-fuse llama-3.2-1b-fuse.yaml >/dev/null &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits cuda-fuse host-fuse &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits cuda-fuse cuda-unfuse
'

test_expect_success CUDA 'cuda: captured, and each implementation replays bit for bit as eager' '
	bcg capture --backend cuda -o cuda.plan llama-3.2-1b-fuse.yaml >out &&
	test_grep "^verified 4 of 4 variants" out &&
	bcg capture --backend cuda --mode full -o cuda-full.plan llama-3.2-1b-fuse.yaml >out &&
	test_grep "^verified 4 of 4 variants" out &&
	for impl in gemv split; do
		args= &&
		for t in 1 2 4 8; do
			for op in qkv.0 qkv.1; do
				args="$args choice $t $op $impl tuned gemv=1,split=2" || return 1
			done
		done &&
		"$edit" cuda-full.plan $impl.plan $args &&
		bcg inspect --choices $impl.plan >choices &&
		test $(grep -c "  rmsnorm_matmul_rope_kv_write  $impl  " choices) = 8 &&
		replay_bit_exact cuda 1 $impl 1 8 || return 1
	done &&
	args= &&
	for op in qkv.0 qkv.1; do
		args="$args choice 1 $op rows_scaled tuned gemv=1,split=2,rows_scaled=3" || return 1
	done &&
	"$edit" cuda-full.plan rows_scaled.plan $args &&
	bcg inspect --choices rows_scaled.plan >choices &&
	test $(grep -c "  rmsnorm_matmul_rope_kv_write  rows_scaled  " choices) = 2 &&
	replay_bit_exact cuda 1 rows_scaled 1
'

test_expect_success CUDA,PYTHON3 'cuda: the full-size fused sample agrees with llama-3.2-1b within 1e-2' '
	bcg run --backend cuda --steps 2 --dump-outputs big-fuse "$SAMPLES/llama-3.2-1b-fuse.yaml" >/dev/null &&
	bcg run --backend cuda --steps 2 --dump-outputs big-unfuse "$SAMPLES/llama-3.2-1b.yaml" >/dev/null &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits big-fuse big-unfuse >out &&
	cat out &&
	test_grep "^logits: .* within 0.01\$" out
'

test_done
