#!/bin/sh
test_description='weights from safetensors files: loading, conversion, shards, errors, provenance'
. "$(dirname "$0")/test-lib.sh"

SQ="'"

# t/st-craft.py writes the files and, independently of bcgtool, the bytes
# each weight must hold once converted to the dtype the script declares.
write_script () {
	cat >"$2" <<-EOT
	bcg: 1
	dims:
	  T: {tokens: [1]}
	  H: 8
	tensors:
	  w:   {dtype: f32, shape: [4, H], role: weight, init: {kind: safetensors, file: $1, tensor: a}}
	  wb:  {dtype: bf16, shape: [4, H], role: weight, init: {kind: safetensors, file: $1, tensor: a}}
	  n:   {dtype: f32, shape: [H], role: weight, count: 2, init: {kind: safetensors, file: $1, tensor: "layer.{l}.n"}}
	  qkv: {dtype: bf16, shape: [6, H], role: weight, init: {kind: safetensors, file: $1, tensor: [q, k, v]}}
	  w_out:   {dtype: f32, shape: [4, H], role: output}
	  wb_out:  {dtype: bf16, shape: [4, H], role: output}
	  n0_out:  {dtype: f32, shape: [H], role: output}
	  n1_out:  {dtype: f32, shape: [H], role: output}
	  qkv_out: {dtype: bf16, shape: [6, H], role: output}
	ops:
	  - {op: copy, in: [w], out: [w_out]}
	  - {op: copy, in: [wb], out: [wb_out]}
	  - {op: copy, in: ["n[0]"], out: [n0_out]}
	  - {op: copy, in: ["n[1]"], out: [n1_out]}
	  - {op: copy, in: [qkv], out: [qkv_out]}
	EOT
}

same_outputs () {
	for f in w_out wb_out n0_out n1_out qkv_out; do
		cmp st/expect/$f.bin "$1/$f.bin" || return 1
	done
}

test_expect_success JANSSON,PYTHON3 'setup: crafted files' '
	"$PYTHON3" "$TEST_DIRECTORY/st-craft.py" st &&
	write_script good.safetensors st/w.yaml &&
	write_script model.safetensors.index.json st/shards.yaml
'

test_expect_success JANSSON,PYTHON3 'weights load converted (f16, bf16 and f32 in; f32 and bf16 out; stacked; a family)' '
	bcg run --backend host --dump-outputs dump st/w.yaml >/dev/null &&
	same_outputs dump
'

test_expect_success JANSSON,PYTHON3 'a sharded checkpoint loads through its index, to the same bytes' '
	bcg run --backend host --dump-outputs out-shards st/shards.yaml >/dev/null &&
	same_outputs out-shards
'

# Each defect: exit 2, one line naming the script position, the file and
# the tensor where one is at fault.
expect_bad () {
	write_script "$1" st/bad.yaml &&
	test_expect_code 2 bcg validate st/bad.yaml >out 2>err &&
	test ! -s out &&
	echo "bcgtool: st/bad.yaml:$2: $3" >expect &&
	test_cmp expect err
}

test_expect_success JANSSON,PYTHON3 'file errors: missing, short, header size, header JSON, bounds, overlap (an empty tensor between), truncation, UTF-8, size, dtype' '
	d=$(cd st && pwd) &&
	expect_bad missing.safetensors 6:82 "st/missing.safetensors: cannot open: No such file or directory" &&
	expect_bad bad-short.safetensors 6:82 "$d/bad-short.safetensors: 3 bytes, too short for a safetensors header" &&
	expect_bad bad-hsize.safetensors 6:82 "$d/bad-hsize.safetensors: the header${SQ}s stated size, 4096 bytes, runs past the end of the 10-byte file" &&
	expect_bad bad-hlong.safetensors 6:82 "$d/bad-hlong.safetensors: the header${SQ}s JSON runs past its stated size of 510 bytes" &&
	expect_bad bad-bounds.safetensors 6:82 "$d/bad-bounds.safetensors: tensor ${SQ}v${SQ}: its data [264, 296) runs past the 280 bytes of data the file holds (a truncated file?)" &&
	expect_bad bad-overlap.safetensors 6:82 "$d/bad-overlap.safetensors: tensors ${SQ}q${SQ} [160, 224) and ${SQ}k${SQ} [192, 224) overlap" &&
	expect_bad bad-overlap-empty.safetensors 6:82 "$d/bad-overlap-empty.safetensors: tensors ${SQ}q${SQ} [160, 224) and ${SQ}k${SQ} [192, 224) overlap" &&
	expect_bad bad-trunc.safetensors 6:82 "$d/bad-trunc.safetensors: tensor ${SQ}ids${SQ}: its data [272, 280) runs past the 272 bytes of data the file holds (a truncated file?)" &&
	expect_bad bad-utf8.safetensors 6:82 "$d/bad-utf8.safetensors: the header is not valid UTF-8 (unable to decode byte 0xff near ${SQ}\"a${SQ}, at byte 3 of the header)" &&
	expect_bad bad-size.safetensors 6:82 "$d/bad-size.safetensors: tensor ${SQ}a${SQ}: 128 bytes of data, but shape and dtype F32 need 160" &&
	expect_bad bad-dtype.safetensors 6:82 "$d/bad-dtype.safetensors: tensor ${SQ}k${SQ}: unknown dtype ${SQ}F7${SQ}"
'

test_expect_success JANSSON,PYTHON3 'tensor errors: missing, wrong dtype, wrong shape, stacked rows, {l} outside a family' '
	d=$(cd st && pwd) &&
	sed "s/tensor: a}}/tensor: zz}}/" st/w.yaml >st/bad.yaml &&
	test_expect_code 2 bcg validate st/bad.yaml 2>err &&
	echo "bcgtool: st/bad.yaml:6:108: $d/good.safetensors: no tensor ${SQ}zz${SQ}" >expect &&
	test_cmp expect err &&
	sed "s/tensor: a}}/tensor: ids}}/" st/w.yaml >st/bad.yaml &&
	test_expect_code 2 bcg validate st/bad.yaml 2>err &&
	echo "bcgtool: st/bad.yaml:6:108: $d/good.safetensors: tensor ${SQ}ids${SQ} is I32; weights load from F32, F16 or BF16" >expect &&
	test_cmp expect err &&
	sed "s/w:   {dtype: f32, shape: \[4, H\]/w:   {dtype: f32, shape: [5, H]/" st/w.yaml >st/bad.yaml &&
	test_expect_code 2 bcg validate st/bad.yaml 2>err &&
	echo "bcgtool: st/bad.yaml:6:108: $d/good.safetensors: tensor ${SQ}a${SQ} has shape [4, 8]; tensor ${SQ}w${SQ} is [5, 8]" >expect &&
	test_cmp expect err &&
	sed "s/tensor: \[q, k, v\]/tensor: [q, k]/" st/w.yaml >st/bad.yaml &&
	test_expect_code 2 bcg validate st/bad.yaml 2>err &&
	echo "bcgtool: st/bad.yaml:9:109: the checkpoint tensors stacked into tensor ${SQ}qkv${SQ} [6, 8] have 5 rows in all; it has 6" >expect &&
	test_cmp expect err &&
	sed "s/tensor: a}}/tensor: \"x.{l}\"}}/" st/w.yaml >st/bad.yaml &&
	test_expect_code 2 bcg validate st/bad.yaml 2>err &&
	echo "bcgtool: st/bad.yaml:6:108: ${SQ}{l}${SQ} in checkpoint name ${SQ}x.{l}${SQ} stands for the member of a family, and tensor ${SQ}w${SQ} has no count" >expect &&
	test_cmp expect err
'

test_expect_success JANSSON,PYTHON3 'the plan records each source, and a new process loads the same weights' '
	bcg capture --backend host -o w.plan st/w.yaml >/dev/null &&
	bcg inspect --json w.plan >w.json &&
	"$PYTHON3" -c "
import json, sys
w = json.load(open(\"w.json\"))[\"weights\"]
assert len(w) == 7, w
q = [x for x in w if x[\"tensor\"] == \"qkv\"]
assert [x[\"name\"] for x in q] == [\"q\", \"k\", \"v\"] and [x[\"offset\"] for x in q] == [0, 64, 80], q
assert [x[\"dtype\"] for x in q] == [\"f16\", \"f32\", \"bf16\"] and [x[\"bytes\"] for x in q] == [64, 32, 16]
assert all(x[\"xxh64\"] and len(x[\"xxh64\"]) == 16 for x in w)
assert all(x[\"file\"].endswith(\"/st/good.safetensors\") for x in w)
" &&
	bcg instantiate --backend host w.plan >out &&
	test_grep "^7 weight sources, .* 0 changed since the capture$" out
'

test_expect_success JANSSON,PYTHON3 'a changed weight: instantiate reports drift (exit 1), replay warns, diff shows the source' '
	cp st/good.safetensors good.orig &&
	"$PYTHON3" -c "
import struct
f = open(\"st/good.safetensors\", \"r+b\")
n = struct.unpack(\"<Q\", f.read(8))[0]
f.seek(8 + n); f.write(struct.pack(\"<f\", 99.0)); f.close()
" &&
	test_expect_code 1 bcg instantiate --backend host w.plan >out 2>err &&
	test_grep "^7 weight sources, .* 2 changed since the capture$" out &&
	test_grep "^  drift  .*/st/good.safetensors: a (weight w): xxh64 " out &&
	test_grep "^bcgtool: w.plan: 0 segments drifted, 2 weight sources changed since the capture (exit 1; --allow-drift: exit 0)$" err &&
	test_expect_code 1 bcg instantiate --backend host --json w.plan >out.json 2>err &&
	test_grep "2 weight sources changed since the capture (exit 1" err &&
	bcg instantiate --backend host --allow-drift w.plan >/dev/null 2>err &&
	! test -s err &&
	bcg replay --backend host --steps 1 --warmup 0 w.plan >out 2>err &&
	test_grep "^weights      7 sources, 2 changed since the capture$" out &&
	test_grep "^bcgtool: warning: weight drift: .*/st/good.safetensors: tensor ${SQ}a${SQ} (weight ${SQ}w${SQ}) changed since the capture" err &&
	bcg capture --backend host -o w2.plan st/w.yaml >/dev/null &&
	test_expect_code 1 bcg diff w.plan w2.plan >out &&
	test_grep "weight w at byte 0" out &&
	test_grep "content" out &&
	cp good.orig st/good.safetensors
'

test_expect_success JANSSON,PYTHON3 'a weight whose dtype changed cannot load: exit 2 naming file and tensor' '
	cp st/bad-dtype.safetensors st/good.safetensors &&
	test_expect_code 2 bcg instantiate --backend host w.plan 2>err &&
	test_grep "^bcgtool: .*/st/good.safetensors: tensor ${SQ}k${SQ}: unknown dtype ${SQ}F7${SQ}$" err &&
	cp good.orig st/good.safetensors
'

test_done
