#!/bin/sh
test_description='recorded plans (format 1.4): inspect, diff and validate on synthetic recordings (t/helper/record-gen)'
. "$(dirname "$0")/test-lib.sh"

if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
	test_set_prereq JSONSCHEMA
fi

gen="$BCG_BUILD_DIR/t/helper/record-gen"

# The plan record-gen writes is formats/plan-format.md's recorded vector:
# the expected values below are read off that description, not off the
# output under test.
test_expect_success 'setup: a recording and changed recordings' '
	"$gen" a.plan &&
	"$gen" --rename b-rename.plan &&
	"$gen" --move-break b-moved.plan &&
	"$gen" --module-changed b-module.plan &&
	"$gen" --grid b-grid.plan &&
	"$gen" --layers 5 b-layers.plan &&
	"$gen" --one-variant b-one.plan &&
	cmp a.plan "$TEST_DATA/recorded.plan"
'

test_expect_success 'inspect: the recording, and each variant with its label, steps seen, time, GPU busy time and gaps' '
	bcg inspect a.plan >out &&
	test_grep "^plan      a.plan (.*format 1.4, recorded)" out &&
	test_grep "^command   python3 serve.py --steps 8$" out &&
	test_grep "^run       pid 4242, 2.50 s, 8 steps (nvtx:decode_step)$" out &&
	test_grep "^modules   2 (1 kept, 24 B of images)$" out &&
	test_grep "^launches  10, of 3 functions$" out &&
	# busy: the items summed, 9 us + 0.7 ms + 41 us = 750 us of the 1.2 ms
	# step (gaps 450 us); 5.1 ms + 12 us = 5.112 ms of 5.4 ms (288 us)
	test_grep "^       1  decode_step      6  1.20 ms  750.0 us  450.0 us      3         1       2      4$" out &&
	test_grep "^       2  prefill_step     2  5.40 ms   5.11 ms  288.0 us      2         1       1      4$" out
'

test_expect_success 'inspect --items: graphs with demangled kernels and repeated layers, breaks with their launches' '
	bcg inspect --items a.plan >out &&
	test_grep "void matmul<float, 128>(float const\*, float const\*, float\*, int, int, int)" out &&
	test_grep "nodes 0-3: 2 nodes repeated x 2" out &&
	test_grep "break cublasLt: 1 launch (4-4), 41.0 us" out &&
	test_grep "memcpy 16 B 0x560000001000 -> a0+0 (host bytes kept)" out &&
	bcg inspect --segments --variant 2 b-layers.plan >out &&
	test_grep "nodes 0-9: 2 nodes repeated x 5" out &&
	test_grep -e "5 x rmsnorm_f16(__half const\*, __half\*, int, float)" out
'

test_expect_success 'inspect --modules: kept or not, and why' '
	bcg inspect --modules a.plan >out &&
	test_grep "serve_kernels.cubin *24 B *6115ad41a682bb54 *yes" out &&
	test_grep "libcublasLt.so.13 .* no: a library.s module: --keep-libraries keeps it" out
'

test_expect_success 'inspect: sections a recording lacks are an error; --modules of a script plan too' '
	test_expect_code 2 bcg inspect --tensors a.plan 2>err &&
	test_grep "a recorded plan has no dims" err &&
	test_expect_code 2 bcg inspect --modules "$TEST_DATA/plans/mini.plan" 2>err &&
	test_grep "has no modules or allocations" err
'

test_expect_success PYTHON3 'inspect --json: raw names, launches, allocations; valid JSON' '
	bcg inspect --json a.plan >out.json &&
	"$PYTHON3" -c "
import json, sys
d = json.load(open(\"out.json\"))
assert d[\"format\"] == \"1.4\" and d[\"origin\"] == \"recorded\"
assert d[\"recording\"][\"steps\"] == 8 and d[\"recording\"][\"nvtx_step\"] is True
assert [m[\"kept\"] for m in d[\"modules\"]] == [True, False]
assert d[\"functions\"][1][\"name\"] == \"_Z6matmulIfLi128EEvPKT_S2_PS0_iii\"
l = d[\"launches\"][2]
assert l[\"grid\"] == [8, 4, 1] and l[\"cluster\"] == [2, 1, 1] and l[\"pdl\"] is True
assert [(p[\"byte\"], p[\"alloc\"], p[\"offset\"]) for p in l[\"patches\"]] == [(0, 1, 0), (8, 1, 4096), (16, 0, 32)]
assert d[\"launches\"][4][\"patches\"][1][\"alloc\"] is None
assert d[\"allocations\"][0][\"address\"] == \"0x00007f0000000000\"
assert d[\"breakpoints\"][1][\"op\"] is None and d[\"breakpoints\"][1][\"reason\"] == \"recorded\"
assert d[\"breakpoints\"][1][\"launch_first\"] == 4
assert d[\"segments\"][0][\"nodes\"][3][\"launch\"] is None
assert d[\"variants\"][1][\"label\"] == \"prefill_step\"
" 
'

test_expect_success 'inspect --dot: layers folded once, "x N"; names demangled' '
	bcg inspect --dot --variant 2 b-layers.plan >out.dot &&
	test_grep "label=\"x 5\"" out.dot &&
	test $(grep -c "^				\"s1_n[0-9]*\" \[shape=box" out.dot) = 2 &&
	test_grep "void matmul<float, 128>" out.dot
'

test_expect_success 'diff: a recording against itself is identical' '
	bcg diff a.plan a.plan >out &&
	test_cmp /dev/null out
'

test_expect_success 'diff: a kernel renamed (template argument 128 -> 256)' '
	test_expect_code 1 bcg diff a.plan b-rename.plan >out &&
	test_grep "^+_Z6matmulIfLi256EEvPKT_S2_PS0_iii (renamed)$" out
'

test_expect_success 'diff: a break that moved before the graph' '
	test_expect_code 1 bcg diff a.plan b-moved.plan >out &&
	test_grep "^-item 2: break cublasLt" out &&
	test_grep "^+item 1: break cublasLt.*(moved)$" out
'

test_expect_success 'diff: a module whose image changed, by its hash' '
	test_expect_code 1 bcg diff a.plan b-module.plan >out &&
	test_grep "^ module serve_kernels.cubin$" out &&
	test_grep "^-  xxh64: 0x6115ad41a682bb54$" out
'

test_expect_success 'diff: a launch shape that changed' '
	test_expect_code 1 bcg diff a.plan b-grid.plan >out &&
	test_grep "^-  node 0 launch: <<<(16,1,1), (256,1,1), 0>>>" out &&
	test_grep "^+  node 0 launch: <<<(32,1,1), (256,1,1), 0>>>" out
'

test_expect_success 'diff: layers added to a graph, a variant gone' '
	test_expect_code 1 bcg diff a.plan b-layers.plan >out &&
	test $(grep -c "^+  node [4-9]: kernel" out) = 6 &&
	test_expect_code 1 bcg diff a.plan b-one.plan >out &&
	test_grep "^-variant 2 \"prefill_step\": 1 segment, 1 break, seen 2$" out
'

test_expect_success PYTHON3 'diff --json of recordings is valid JSON with a moved item' '
	test_expect_code 1 bcg diff --json a.plan b-moved.plan >out.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"out.json\"))
assert [e[\"change\"] for e in d[\"differences\"]] == [\"moved\"]
"
'

test_expect_success 'validate PLAN: a recording is valid, not replayable, and says why' '
	bcg validate a.plan >out &&
	test_grep "^a.plan: a valid recorded plan, format 1.4: 2 variants, 2 segments, 3 breakpoints, 10 launches, 2 modules (1 kept)$" out &&
	test_grep "^replay: not possible: a module is not kept$" out &&
	test_grep "^note: module 1 (libcublasLt.so.13) is not kept" out
'

test_expect_success 'validate PLAN: a script plan file is read as a plan too' '
	bcg validate "$TEST_DATA/plans/mini.plan" >out &&
	test_grep "a valid script plan, format 1.[0-9]" out
'

test_expect_success PYTHON3 'validate PLAN: a damaged recording is refused, exit 2' '
	"$PYTHON3" -c "
import sys
d = bytearray(open(\"a.plan\", \"rb\").read())
d[100] ^= 0xFF
open(\"bad.plan\", \"wb\").write(d)
" &&
	test_expect_code 2 bcg validate bad.plan 2>err &&
	test_grep "^bcgtool: bad.plan: checksum mismatch" err
'

test "${BCG_HAVE_SQLITE:-no}" = yes && test_set_prereq SQLITE

# t/nsys-recorded.py writes a synthetic export of two replayed steps of
# variant 1, with its times in its comment: the figures below are those.
test_expect_success SQLITE,PYTHON3 'report: a recorded replay'"'"'s kernels joined to its graph nodes and breaks' '
	"$PYTHON3" "$TEST_DIRECTORY/nsys-recorded.py" rec.sqlite &&
	bcg report rec.sqlite a.plan >out &&
	test_grep "^variant   1 token, breakable: 1 segment, 2 breakpoints$" out &&
	test_grep "^kernels   6 in the report: 6 attributed (4 graph nodes, 2 in breakpoints), 0 unattributed" out &&
	test_grep "^per step  GPU span 2.70 us, busy 2.50 us, idle 0.20 us" out &&
	test_grep "seg 0 _Z11rmsnorm_f16PK6__halfPS_if.._Z6matmulIfLi128EEvPKT_S2_PS0_iii *2 *1.50 us *1.60 us *0.10 us" out &&
	test_grep "^  cublasLt *0.10 us *1.00 us" out &&
	test_grep "a recorded plan has no ops" out &&
	test_grep "^        1       0      1.00 us  40.0%  void matmul<float, 128>" out &&
	test_grep "^        0       1      1.00 us  40.0%  sm90_xmma_gemm" out &&
	test_grep "^        1       0      0.50 us  20.0%  rmsnorm_f16(__half const\*, __half\*, int, float)$" out
'

test_expect_success SQLITE,JSONSCHEMA 'report --json of a recorded replay follows its schema' '
	bcg report --json rec.sqlite a.plan >report.json &&
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$BCG_SRC_DIR/formats/report-schema.json" report.json
'

test_done
