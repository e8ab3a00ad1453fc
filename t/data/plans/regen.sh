#!/bin/sh
# regen.sh - remake the fixture plans of the inspect and diff tests.
#
#   make regen-plans      (or: BCG_BUILD_DIR=/path/to/build sh regen.sh)
#
# Captures record timings, so two runs never give the same bytes: the
# plans are committed, and the golden files (t/regen-golden.sh) are made
# from the committed plans. After running this, run `make regen-golden`
# and review both with `git diff`.
#
# Every capture runs on the host backend with SOURCE_DATE_EPOCH fixed and
# --no-tune (measured choices could differ between two runs),
# from a scratch directory holding the script as mini.yaml, so that the
# plans record the same script path wherever they are made.
#
# Two plans come from the GPU machine and are not remade here:
#   recorded-replay-tiny.source.plan   `bcgtool capture --backend cuda
#                      --no-tune samples/tiny-mlp.yaml` on an H200
#                      (2026-11-26), sizes 1, 2, 4, 8
#   recorded-replay-tiny.plan          `bcgtool record -- bcgtool replay
#                      --backend cuda --steps 20` of that plan, the same
#                      day: a real recording (format 1.4), its modules kept
#
#   mini.plan          mini.yaml: sizes 1 and 2 breakable (breakpoints attn
#                      and probe), 4 eager
#   mini-cuda.plan     mini.plan with kernel nodes and edges (plan-edit
#                      cudaify): the base of the single-edit plans below
#   mlp-full.plan      samples/tiny-mlp.yaml in full mode, sizes 1 and 8
#   edit-tensor.plan   + a tensor `scratch`
#   edit-rename.plan   op and breakpoint attn renamed attention
#   edit-kernel.plan   segment 4 (size 2, ops o..res), node 1 runs another kernel
#   edit-env.plan      another device and toolkit
#   edit-sizes.plan    capture sizes 1, 3, 4 instead of 1, 2, 4
#   edit-moved.plan    the op probe (a forced breakpoint) moved before res
#   edit-choices*.plan see the end
#   recorded.plan      a synthetic recorded plan (format 1.4, t/helper/record-gen:
#                      the recorded vector of plan-format.md)
#   recorded-b.plan    the same recording changed: matmul's template argument,
#                      a break moved, module 0's image, rmsnorm's grid, 3 layers
#
# One fixture is not made here: llama-decode-small.cuda.plan is a real
# capture of samples/llama-decode-small.yaml on an H100 (CUDA 13.0), as
# bench/gpu-session.sh's bench stage writes it to $OUT. The host tests use
# it to read, instantiate and replay a plan with genuine graph nodes.
set -e

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
build=${BCG_BUILD_DIR:-$src}
bcgtool="$build/bcgtool/bcgtool"
edit="$build/t/helper/plan-edit"
recgen="$build/t/helper/record-gen"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

SOURCE_DATE_EPOCH=1700000000
export SOURCE_DATE_EPOCH
unset BCG_BACKEND NVTX_INJECTION64_PATH

# capture SCRIPT OUT [OPTIONS...]: capture SCRIPT as mini.yaml (or as its
# own name) from the scratch directory.
capture() {
	script=$1 out=$2 name=$3
	shift 3
	cp "$script" "$scratch/$name"
	(cd "$scratch" && "$bcgtool" capture --backend host --no-nvtx --no-tune "$@" -o "$out" "$name" >/dev/null)
}

capture "$here/mini.yaml" "$here/mini.plan" mini.yaml
"$edit" "$here/mini.plan" "$here/mini-cuda.plan" cudaify
capture "$src/samples/tiny-mlp.yaml" "$here/mlp-full.plan" tiny-mlp.yaml --mode full --tokens 1,8

"$edit" "$here/mini-cuda.plan" "$here/edit-tensor.plan" add-tensor scratch f32 activation T,H
"$edit" "$here/mini-cuda.plan" "$here/edit-rename.plan" rename-op attn attention
"$edit" "$here/mini-cuda.plan" "$here/edit-kernel.plan" kernel 4 1 add_f32_vec4
"$edit" "$here/mini-cuda.plan" "$here/edit-env.plan" \
	env "NVIDIA H200" 9.0 13010 13010 130100

sed -e 's/tokens: \[1, 2, 4\]/tokens: [1, 3, 4]/' "$here/mini.yaml" >"$scratch/sizes.yaml"
grep -q 'tokens: \[1, 3, 4\]' "$scratch/sizes.yaml"
capture "$scratch/sizes.yaml" "$scratch/sizes.plan" mini.yaml
"$edit" "$scratch/sizes.plan" "$here/edit-sizes.plan" cudaify

# probe, the line after res, goes before it.
awk '/name: res,/ { res = $0; next }
     /name: probe,/ { print; print res; next }
     { print }' "$here/mini.yaml" >"$scratch/moved.yaml"
test "$(grep -n 'name: probe,' "$scratch/moved.yaml" | cut -d: -f1)" -lt \
     "$(grep -n 'name: res,' "$scratch/moved.yaml" | cut -d: -f1)"
capture "$scratch/moved.yaml" "$scratch/moved.plan" mini.yaml
"$edit" "$scratch/moved.plan" "$here/edit-moved.plan" cudaify

# Format 1.1's additions, made through the API (a host capture records
# none of them):
#   edit-choices.plan    mini-cuda.plan with the PDL feature, three
#                        programmatic edges, and implementation choices for
#                        q (sizes 1 and 2, one close), o (size 2) and
#                        lm_head (size 4, by default)
#   edit-choices-b.plan  edit-choices.plan with q at size 2 choosing mma, o's
#                        choice at size 2 gone, one for o at size 1, and
#                        every time changed (which is no difference)
"$edit" "$here/mini-cuda.plan" "$here/edit-choices.plan" pdl \
	programmatic 3 1 programmatic 3 2 programmatic 4 0 \
	choice 1 q mma tuned mma=3.5,cublas=4.25 \
	choice 2 q cublas tuned,close cublas=3.75,mma=3.8 \
	choice 2 o mma tuned mma=2.25,cublas=2.5 \
	choice 4 lm_head cublas default
"$edit" "$here/edit-choices.plan" "$here/edit-choices-b.plan" times 5000000 \
	choice 2 q mma tuned mma=3.5,cublas=3.9 drop-choice 2 o choice 1 o cublas default

# Recorded plans (format 1.4): built through libplan, as bcgtool record
# builds them, until a recording from a GPU joins them.
"$recgen" "$here/recorded.plan"
"$recgen" --rename --move-break --module-changed --grid --layers 3 "$here/recorded-b.plan"
