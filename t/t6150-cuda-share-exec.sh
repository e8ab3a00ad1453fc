#!/bin/sh
test_description='executables shared across capture sizes on the GPU (--share-exec)

llama-decode has 6 capture sizes (1 to 32), each 33 segments between its
32 attention breakpoints. Captured with --share-exec, the segments of one
topology at different sizes run on one executable, updated with
cudaGraphExecUpdate before a launch whenever another size ran on it since.
Each size replayed on the shared executables must match eager steps, one
size at a time and with the sizes alternating every step; and the
executables of all sizes must take less device memory shared than not.'
. "$(dirname "$0")/test-lib.sh"

test_have_prereq CUDA || test_skip_all 'no usable CUDA device'

ld="$SAMPLES/llama-decode.yaml"

test_expect_success 'capture llama-decode on cuda with and without --share-exec, every size verified' '
	bcg capture --backend cuda --no-tune --share-exec --json -o shared.plan "$ld" >cap-shared.json &&
	bcg capture --backend cuda --no-tune --json -o own.plan "$ld" >cap-own.json
'

test_expect_success 'inspect shows which segments share, and the plan is format 1.6' '
	bcg inspect shared.plan >out &&
	test_grep "^plan .*format 1\.6)$" out &&
	test_grep "^shared    [1-9][0-9]* executables\{0,1\} shared across variants by [0-9]* segments ([1-9][0-9]* of them run on another variant.s)" out &&
	bcg inspect --segments shared.plan >segs &&
	test_grep "seg [0-9]*.s ([0-9]* tokens)$" segs &&
	bcg inspect own.plan >out &&
	! grep "^shared" out
'

test_expect_success PYTHON3 'a segment joined only one of the same kernels, nodes and edges' '
	bcg inspect --json shared.plan >shared.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"shared.json\"))
seg = {s[\"index\"]: s for s in d[\"segments\"]}
joined = 0
for s in d[\"segments\"]:
    x = s[\"exec\"]
    if x[\"share\"] != \"joined\":
        continue
    joined += 1
    f = seg[x[\"segment\"]]
    assert f[\"variant\"] != s[\"variant\"], (s[\"index\"], f[\"index\"])
    assert [n[\"kernel\"] for n in f[\"nodes\"]] == [n[\"kernel\"] for n in s[\"nodes\"]]
    assert [(e[\"from\"], e[\"to\"], e[\"type\"]) for e in f[\"edges\"]] == \
           [(e[\"from\"], e[\"to\"], e[\"type\"]) for e in s[\"edges\"]]
assert joined > 0
print(\"# %d segments joined another size.s executable\" % joined)
"
'

for t in 1 2 4 8 16 32; do
	test_expect_success "replay --share-exec --tokens $t --check: matches eager after updates" "
		bcg replay --backend cuda --share-exec --check --steps 8 --warmup 2 --tokens $t shared.plan >out-$t 2>err-$t &&
		test_grep '^check        \\(bit-exact\\|within bounds\\)' out-$t
	"
done

# Under --share-exec the products past mma's 32 tokens default to
# cublas_class, cuBLAS's algorithm chosen once per token class
# (cuda-matmul.cu: 40 and 48 tokens are both of class 48), so the sizes
# of a class run the same kernels and every segment of one joins the
# other's executable. Without the option they default to cublas, an
# algorithm per token count.
test_expect_success PYTHON3 'two sizes of one token class (40 and 48) share every segment on cublas_class' '
	sed "s/^  T: {tokens: \[.*\]}$/  T: {tokens: [40, 48]}/" "$ld" >class.yaml &&
	grep -q "^  T: {tokens: \[40, 48\]}$" class.yaml &&
	bcg capture --backend cuda --no-tune --share-exec --json -o class.plan class.yaml >cap-class.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"cap-class.json\"))
v = {x[\"tokens\"]: x for x in d[\"variants\"]}
n, j = v[40][\"segments\"], (v[40][\"joined\"], v[48][\"joined\"])
print(\"# %d segments a size; joined another size.s executable: %d (40), %d (48)\" % (n, j[0], j[1]))
assert n > 0 and v[48][\"segments\"] == n and sorted(j) == [0, n]
" &&
	bcg inspect --choices class.plan >choices &&
	test "$(awk "\$1 ~ /^[0-9]+\$/ && \$3 ~ /^matmul/ { print \$4 }" choices | sort -u)" = cublas_class &&
	bcg replay --backend cuda --share-exec --check --steps 6 --warmup 1 --tokens 48,40 class.plan >out &&
	test_grep "^check        \(bit-exact\|within bounds\)" out &&
	bcg capture --backend cuda --no-tune -o class-own.plan class.yaml &&
	bcg inspect --choices class-own.plan >choices &&
	test "$(awk "\$1 ~ /^[0-9]+\$/ && \$3 ~ /^matmul/ { print \$4 }" choices | sort -u)" = cublas &&
	bcg replay --backend cuda --check --steps 4 --warmup 1 --tokens 40 class-own.plan >out &&
	test_grep "^check        \(bit-exact\|within bounds\)" out
'

test_expect_success 'sizes alternating every step on shared executables match eager steps that alternate' '
	bcg replay --backend cuda --share-exec --check --steps 9 --warmup 1 --tokens 1,32,8 shared.plan >out &&
	test_grep "^alternating  3 sizes: 1,32,8, one a step$" out &&
	test_grep "^check        \(bit-exact\|within bounds\)" out &&
	bcg replay --backend cuda --check --steps 9 --warmup 1 --tokens 2,16 own.plan >out &&
	test_grep "^check        \(bit-exact\|within bounds\)" out
'

# Graph memory is measured with cudaMemGetInfo, in the driver's pages (2
# MiB): the small sample's executables can round to the same bytes shared
# or not (22.0 MiB both, 198 against 132 executables, on an H100), so the
# bytes may only not grow; the 51-size 1B sample's figure is the share
# stage's (bench/gpu-session.sh). The free memory is the device's: another
# process allocating while an executable is built adds its bytes to that
# executable's (under a parallel make check on an H100, 609 MiB unshared
# against 675 MiB shared, with cuda-ops running beside). So the bytes are
# compared only where nvidia-smi saw no other process on the GPU before and
# after the two instantiations (prerequisite GPU_ALONE).
gpu_others() {
	_apps=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null) ||
		{ echo unknown; return; }
	printf '%s' "$_apps" | grep -c . || true
}

test_expect_success PYTHON3 'graph memory: all sizes held, fewer executables shared' '
	gpu_others >others &&
	bcg instantiate --backend cuda --share-exec --json own.plan >inst-shared.json &&
	bcg instantiate --backend cuda --json own.plan >inst-own.json &&
	gpu_others >>others &&
	"$PYTHON3" -c "
import json
s = json.load(open(\"inst-shared.json\"))
o = json.load(open(\"inst-own.json\"))
a, b = o[\"graph_memory\"], s[\"graph_memory\"]
print(\"# unshared: %d executables, %d bytes; shared: %d executables, %d bytes, %d refused, \"
      \"%d could not share (%s)\" % (a[\"executables\"], a[\"bytes\"], b[\"executables\"],
      b[\"bytes\"], b[\"refused\"], b[\"unshareable\"], b[\"unshareable_reason\"]))
assert s[\"drifted\"] == 0 and o[\"drifted\"] == 0
assert b[\"executables\"] < a[\"executables\"] == len(o[\"segments\"])
assert a[\"bytes\"] > 0, \"no graph memory measured\"
c = json.load(open(\"cap-shared.json\"))[\"graph_memory\"]
u = json.load(open(\"cap-own.json\"))[\"graph_memory\"]
print(\"# capture: unshared %d bytes, shared %d bytes\" % (u[\"bytes\"], c[\"bytes\"]))
assert c[\"share_exec\"] and not u[\"share_exec\"] and c[\"executables\"] < u[\"executables\"]
"
'

test "$(cat others 2>/dev/null | tr '\n' ' ')" = "0 0 " && test_set_prereq GPU_ALONE

test_expect_success GPU_ALONE,PYTHON3 'graph memory: no more bytes shared than unshared' '
	"$PYTHON3" -c "
import json
a = json.load(open(\"inst-own.json\"))[\"graph_memory\"][\"bytes\"]
b = json.load(open(\"inst-shared.json\"))[\"graph_memory\"][\"bytes\"]
print(\"# unshared %d bytes, shared %d bytes\" % (a, b))
assert b <= a
"
'

test_done
