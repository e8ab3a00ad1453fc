#!/bin/sh
test_description='fused scripts compute what their unfused twins compute

On the host backend every fused kind computes exactly its unfused
sequence, so the small twins of t/data/scripts/twins (fused kinds; one
kernel per step; residual adds fused into add_rmsnorm) give the same
bytes, in f16, bf16 and f32. On CUDA the kernels may sum in other orders:
the full-size samples llama-decode.yaml and llama-decode-unfused.yaml must
agree within a relative 1e-2 of each logits row'"'"'s largest magnitude,
and their next tokens wherever the two largest logits are further apart
than twice that (t/compare-outputs.py states the rule).'
. "$(dirname "$0")/test-lib.sh"

TWINS="$TEST_DATA/scripts/twins"
compare="$TEST_DIRECTORY/compare-outputs.py"

# twin NAME DTYPE: the twin NAME in DTYPE, as twin-NAME-DTYPE.yaml here.
twin() {
	sed "s/f16/$2/g" "$TWINS/$1.yaml" >"twin-$1-$2.yaml"
}

test_expect_success 'the twins validate; fused is 8 kernels a layer, unfused 17' '
	for t in fused unfused addnorm; do
		bcg validate "$TWINS/$t.yaml" >$t.out || return 1
	done &&
	test_grep "^ops (20): matmul 3, rmsnorm 5, embedding 1, attention 2, argmax 1, matmul_add 4, matmul_silu_mul 2, rope_kv_write 2\$" fused.out &&
	test_grep "^ops (38): add 4, matmul 9, rmsnorm 5, silu_mul 2, rope 4, embedding 1, kv_write 4, attention 2, argmax 1, slice 6\$" unfused.out &&
	test_grep "^ops (21): fill 1, matmul 7, embedding 1, attention 2, argmax 1, add_rmsnorm 5, matmul_silu_mul 2, rope_kv_write 2\$" addnorm.out
'

for dt in f16 bf16 f32; do
	test_expect_success "host, $dt: the three twins give the same logits and tokens" '
		for t in fused unfused addnorm; do
			twin $t '$dt' &&
			bcg run --backend host --steps 3 --json twin-$t-'$dt'.yaml >$t.json ||
			return 1
		done &&
		sed -n "/\"outputs\"/,\$p" fused.json >a &&
		test_grep "\"name\": \"logits\"" a &&
		sed -n "/\"outputs\"/,\$p" unfused.json >b &&
		sed -n "/\"outputs\"/,\$p" addnorm.json >c &&
		test_cmp a b &&
		test_cmp a c
	'
done

test_expect_success PYTHON3 'host: the dumped values of the twins are identical, every output' '
	twin fused bf16 && twin unfused bf16 &&
	bcg run --backend host --steps 2 --dump-outputs fused-bf16 twin-fused-bf16.yaml >/dev/null &&
	bcg run --backend host --steps 2 --dump-outputs unfused-bf16 twin-unfused-bf16.yaml >/dev/null &&
	"$PYTHON3" "$compare" fused-bf16 unfused-bf16 >out &&
	cat >expect <<-\EOT &&
	logits: identical
	next: identical
	EOT
	test_cmp expect out
'

test_expect_success PYTHON3 'the comparison sees a difference' '
	twin fused f32 &&
	bcg run --backend host --steps 2 --dump-outputs two twin-fused-f32.yaml >/dev/null &&
	bcg run --backend host --steps 3 --dump-outputs three twin-fused-f32.yaml >/dev/null &&
	test_expect_code 1 "$PYTHON3" "$compare" two three >out &&
	test_grep "^logits: differs\$" out &&
	test_expect_code 1 "$PYTHON3" "$compare" --rtol 1e-6 two three >out &&
	test_grep "^logits: largest error .* beyond 1e-06\$" out &&
	"$PYTHON3" "$compare" --rtol 1e-6 two two >out &&
	test_grep "^logits: largest error 0 of the row.s scale, within 1e-06\$" out
'

test_expect_success CUDA,PYTHON3 'cuda: the small fused twin agrees with the host reference' '
	twin fused f16 &&
	bcg run --backend cuda --steps 3 --dump-outputs cuda-small twin-fused-f16.yaml >/dev/null &&
	bcg run --backend host --steps 3 --dump-outputs host-small twin-fused-f16.yaml >/dev/null &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits cuda-small host-small
'

test_expect_success CUDA,PYTHON3 'cuda: llama-decode and its unfused twin agree within 1e-2' '
	bcg run --backend cuda --steps 2 --dump-outputs fused "$SAMPLES/llama-decode.yaml" >/dev/null &&
	bcg run --backend cuda --steps 2 --dump-outputs unfused "$SAMPLES/llama-decode-unfused.yaml" >/dev/null &&
	"$PYTHON3" "$compare" --rtol 1e-2 --argmax next=logits fused unfused >out &&
	cat out &&
	test_grep "^logits: .* within 0.01\$" out
'

# The MoE twins: moe_experts adding the residual in place against
# moe_experts then add. The same bytes on both backends (the CUDA kernels
# round the sum and add the residual as the add kernel does), at T=1 and 8
# (the decode kernels) and 40 (80 pairs: the grouped products' combine).
test_expect_success 'moe twins validate: the fused one has no add' '
	bcg validate "$TWINS/moe-fused.yaml" >mf.out &&
	bcg validate "$TWINS/moe-unfused.yaml" >mu.out &&
	test_grep "^ops (12): matmul 3, rmsnorm 3, embedding 1, argmax 1, moe_router 2, moe_experts 2\$" mf.out &&
	test_grep "^ops (14): add 2, matmul 3, rmsnorm 3, embedding 1, argmax 1, moe_router 2, moe_experts 2\$" mu.out
'

for dt in f16 bf16 f32; do
	test_expect_success "host, $dt: the moe twins give the same bytes at T=1, 8, 40" '
		twin moe-fused '$dt' && twin moe-unfused '$dt' &&
		for t in 1 8 40; do
			bcg run --backend host --tokens $t --steps 3 --json twin-moe-fused-'$dt'.yaml >f.json &&
			bcg run --backend host --tokens $t --steps 3 --json twin-moe-unfused-'$dt'.yaml >u.json &&
			sed -n "/\"outputs\"/,\$p" f.json >a &&
			sed -n "/\"outputs\"/,\$p" u.json >b &&
			test_grep "\"name\": \"logits\"" a &&
			test_cmp a b || return 1
		done
	'
done

test_expect_success CUDA 'cuda, eager: the moe twins give the same bytes at T=1, 8, 40' '
	for dt in bf16 f32; do
		twin moe-fused $dt && twin moe-unfused $dt &&
		for t in 1 8 40; do
			bcg run --backend cuda --tokens $t --steps 3 --json twin-moe-fused-$dt.yaml >f.json &&
			bcg run --backend cuda --tokens $t --steps 3 --json twin-moe-unfused-$dt.yaml >u.json &&
			sed -n "/\"outputs\"/,\$p" f.json >a &&
			sed -n "/\"outputs\"/,\$p" u.json >b &&
			test_cmp a b || return 1
		done || return 1
	done
'

test_expect_success CUDA 'cuda, full graphs with and without PDL: the moe twins generate the same logits' '
	twin moe-fused bf16 && twin moe-unfused bf16 &&
	for o in "" --no-pdl; do
		for t in moe-fused moe-unfused; do
			bcg capture --backend cuda --mode full $o -o $t.plan twin-$t-bf16.yaml >/dev/null &&
			bcg replay --backend cuda --prompt 5,6,7 --generate 6 --logits $t$o.logits \
				$t.plan >$t$o.gen || return 1
		done &&
		cmp moe-fused$o.logits moe-unfused$o.logits &&
		bcg replay --backend cuda --tokens 40 --steps 20 --check moe-fused.plan >/dev/null &&
		bcg replay --backend cuda --tokens 1 --steps 20 --check moe-fused.plan >/dev/null ||
		return 1
	done
'

test_done
