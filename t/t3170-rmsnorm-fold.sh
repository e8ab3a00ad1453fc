#!/bin/sh
test_description='rmsnorm_matmul: the norms folded into the products compute the unfused pairs

samples/llama-3.2-1b-fold.yaml is samples/llama-3.2-1b.yaml with each
layer'"'"'s rmsnorm + q|k|v matmul and rmsnorm + gate|up matmul_silu_mul
folded into rmsnorm_matmul. Scaled down to a tiny model (norm weights made
random in both, so that w matters), the two give the same bytes on the
host backend, eager and captured. On CUDA the fused kernels may sum the
norm in another order: the two must agree within a relative 1e-2 of each
logits row'"'"'s largest magnitude (t/compare-outputs.py), and the captured
graphs must replay bit for bit as their eager steps, under every
implementation (gemv, split, and rows and rows_scaled at one token).'
. "$(dirname "$0")/test-lib.sh"

compare="$TEST_DIRECTORY/compare-outputs.py"
edit="$BCG_BUILD_DIR/t/helper/plan-edit"

# tiny NAME: samples/NAME.yaml with 2 layers, hidden 64, 4/2 heads of 16,
# FFN 96, 64 cache positions, 256 words, random norm weights; as NAME.yaml.
tiny() {
	shrink_1b "$1" "$1.yaml" "64 4 2 96 64 256" "" random
}

test_expect_success 'the folded sample: two rmsnorm_matmul a layer, 100 ops for 132' '
	bcg validate "$SAMPLES/llama-3.2-1b-fold.yaml" >fold.out &&
	test_grep "^ops (100): matmul 1, rmsnorm 1, embedding 1, attention 16, argmax 1, matmul_add 32, rope_kv_write 16, rmsnorm_matmul 32\$" fold.out &&
	bcg validate "$SAMPLES/llama-3.2-1b.yaml" >unfold.out &&
	test_grep "^ops (132): " unfold.out &&
	tiny llama-3.2-1b-fold && tiny llama-3.2-1b &&
	bcg validate llama-3.2-1b-fold.yaml >tiny.out &&
	test_grep "^ops (16): matmul 1, rmsnorm 1, embedding 1, attention 2, argmax 1, matmul_add 4, rope_kv_write 2, rmsnorm_matmul 4\$" tiny.out &&
	test_grep "^  H     64\$" tiny.out &&
	test_grep "^  attn_norm\[0..1\] .* init random scale 1 seed 900+i" tiny.out
'

for t in 1 4 8; do
	test_expect_success "host, $t tokens: folded and unfused give the same outputs" '
		same_run_outputs llama-3.2-1b-fold.yaml llama-3.2-1b.yaml --backend host --steps 3 --tokens '$t'
	'
done

test_expect_success 'host, --tp 2: q|k|v and gate|up split by columns, folded and unfused agree' '
	same_run_outputs llama-3.2-1b-fold.yaml llama-3.2-1b.yaml --backend host --steps 3 --tp 2
'

test_expect_success PYTHON3 'host: the dumped values are identical, every output' '
	same_dumps llama-3.2-1b-fold.yaml llama-3.2-1b.yaml --backend host --steps 2
'

test_expect_success 'host: captured (breakable and full), replayed bit for bit as eager' '
	bcg capture --backend host -o fold.plan llama-3.2-1b-fold.yaml >out &&
	test_grep "^verified 4 of 4 variants" out &&
	bcg capture --backend host --mode full -o full.plan llama-3.2-1b-fold.yaml >out &&
	test_grep "^verified 4 of 4 variants" out &&
	bcg inspect --choices fold.plan >choices &&
	test $(grep -c "  rmsnorm_matmul  " choices) = 16 &&
	replay_bit_exact host 0 "fold full" 1 8
'

test_expect_success 'host: every choice edited to reference, still bit-exact' '
	args= &&
	for t in 1 2 4 8; do
		for op in qkv.0 gate_up.0 qkv.1 gate_up.1; do
			args="$args choice $t $op reference tuned reference=1,blocked=2" || return 1
		done
	done &&
	"$edit" fold.plan ref.plan $args &&
	bcg inspect --choices ref.plan >choices &&
	test $(grep -c "  rmsnorm_matmul  reference  " choices) = 16 &&
	bcg replay --backend host --tokens 4 --steps 3 --warmup 0 --check ref.plan >out &&
	test_grep "bit-exact" out
'

test_expect_success CUDA,PYTHON3 'cuda: folded agrees with the host and with the unfused pairs' '
	bcg run --backend cuda --steps 3 --dump-outputs cuda-fold llama-3.2-1b-fold.yaml >/dev/null &&
	bcg run --backend cuda --steps 3 --dump-outputs cuda-unfold llama-3.2-1b.yaml >/dev/null &&
	bcg run --backend host --steps 3 --dump-outputs host-fold llama-3.2-1b-fold.yaml >/dev/null &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits cuda-fold host-fold &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits cuda-fold cuda-unfold
'

# The edited plans keep the nodes captured under the tuner's choices: a
# replay builds its graphs again, with the edited ones, but instantiate
# would find them drifted wherever the tuner chose otherwise. So the plan
# instantiated is captured again with the edited choices (--choices-from).
test_expect_success CUDA 'cuda: captured, and each implementation replays bit for bit as eager' '
	bcg capture --backend cuda -o cuda.plan llama-3.2-1b-fold.yaml >out &&
	test_grep "^verified 4 of 4 variants" out &&
	bcg capture --backend cuda --mode full -o cuda-full.plan llama-3.2-1b-fold.yaml >out &&
	test_grep "^verified 4 of 4 variants" out &&
	for impl in gemv split; do
		args= &&
		for t in 1 2 4 8; do
			for op in qkv.0 gate_up.0 qkv.1 gate_up.1; do
				args="$args choice $t $op $impl tuned gemv=1,split=2" || return 1
			done
		done &&
		"$edit" cuda-full.plan $impl.plan $args &&
		bcg inspect --choices $impl.plan >choices &&
		test $(grep -c "  rmsnorm_matmul  $impl  " choices) = 16 &&
		replay_bit_exact cuda 1 $impl 1 8 || return 1
	done &&
	args= &&
	for op in qkv.0 gate_up.0 qkv.1 gate_up.1; do
		args="$args choice 1 $op rows tuned gemv=1,split=2,rows=3" || return 1
	done &&
	"$edit" cuda-full.plan rows.plan $args &&
	bcg inspect --choices rows.plan >choices &&
	test $(grep -c "  rmsnorm_matmul  rows  " choices) = 4 &&
	replay_bit_exact cuda 1 rows 1 &&
	args= &&
	for op in qkv.0 gate_up.0 qkv.1 gate_up.1; do
		args="$args choice 1 $op rows_scaled tuned gemv=1,split=2,rows=3,rows_scaled=4" ||
			return 1
	done &&
	"$edit" cuda-full.plan rows_scaled.plan $args &&
	bcg inspect --choices rows_scaled.plan >choices &&
	test $(grep -c "  rmsnorm_matmul  rows_scaled  " choices) = 4 &&
	replay_bit_exact cuda 1 rows_scaled 1 &&
	bcg capture --backend cuda --mode full --choices-from rows_scaled.plan \
		-o rows_scaled-captured.plan llama-3.2-1b-fold.yaml >out &&
	bcg inspect --choices rows_scaled-captured.plan >choices &&
	test $(grep -c "  rmsnorm_matmul  rows_scaled  " choices) = 4 &&
	bcg instantiate --backend cuda --json rows_scaled-captured.plan >inst.json &&
	{ test_grep "\"packed_weight_bytes\": [1-9]" inst.json || { cat inst.json >&2; false; }; }
'

test_expect_success CUDA,PYTHON3 'cuda: the full-size folded sample agrees with llama-3.2-1b within 1e-2' '
	bcg run --backend cuda --steps 2 --dump-outputs big-fold "$SAMPLES/llama-3.2-1b-fold.yaml" >/dev/null &&
	bcg run --backend cuda --steps 2 --dump-outputs big-unfold "$SAMPLES/llama-3.2-1b.yaml" >/dev/null &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits big-fold big-unfold >out &&
	cat out &&
	test_grep "^logits: .* within 0.01\$" out
'

test_done
