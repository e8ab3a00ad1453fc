#!/bin/sh
test_description='bcgtool report on a real Nsight Systems export; profile and replay traces'
. "$(dirname "$0")/test-lib.sh"
unset BCG_NSYS_WRAPPER   # the stand-in nsys tests set their own

test "${BCG_HAVE_SQLITE:-no}" = yes && test_set_prereq SQLITE
nsys_found=
for f in /usr/local/cuda*/bin/nsys /opt/nvidia/*/*/bin/nsys /opt/nvidia/*/*/target-linux-x64/nsys \
	/opt/nvidia/*/*/host/target-linux-x64/nsys; do
	test -x "$f" && nsys_found=$f
done
command -v nsys >/dev/null 2>&1 && nsys_found=yes
test -n "$nsys_found" && test_set_prereq NSYS

rep="$TEST_DATA/nsys/small.sqlite"
plan="$TEST_DATA/nsys/small.plan"
figures="$TEST_DIRECTORY/nsys-figures.py"

test_expect_success SQLITE 'the export is attributed whole: every step kernel to its op' '
	bcg report "$rep" "$plan" >out &&
	test_grep "^variant   4 tokens, breakable: 3 segments, 2 breakpoints$" out &&
	test_grep "^steps     7 (timed 4, busy 3)$" out &&
	test_grep "^kernels   342 in the report: 252 attributed (238 graph nodes, 14 in breakpoints), 0 unattributed in steps, 90 outside the steps$" out
'

test_expect_success SQLITE,PYTHON3 'setup: the plan as JSON, for the independent figures' '
	bcg inspect --json "$plan" >plan.json
'

test_expect_success SQLITE,PYTHON3 'steps, items, break gaps and per-op totals agree with nsys-figures.py' '
	"$PYTHON3" "$figures" figures "$rep" plan.json >expect &&
	bcg report --json "$rep" "$plan" >report.json &&
	"$PYTHON3" "$figures" from-json report.json >actual &&
	test_cmp expect actual
'

test_expect_success SQLITE,PYTHON3 'break costs are the sum of their parts and say why the op breaks; per-kind totals the sum of their ops' '
	"$PYTHON3" -c "
import json
r = json.load(open(\"report.json\"))
assert r[\"schema\"] == 1
breaks = [i for i in r[\"items\"] if i[\"kind\"] == \"break\"]
assert len(breaks) == 2
for b in breaks:
    want = b[\"gap_before_ns\"] + b[\"span_ns\"] + b[\"gap_after_ns\"]
    assert abs(b[\"break_cost_ns\"] - want) < 0.01, b
    assert b[\"why\"] == \"its launch shape follows the host var kv_len\", b
assert all(i[\"why\"] is None for i in r[\"items\"] if i[\"kind\"] == \"segment\")
for k in r[\"kinds\"]:
    ops = [o for o in r[\"ops\"] if o[\"kind\"] == k[\"kind\"]]
    assert k[\"ops\"] == len(ops) and k[\"total_ns\"] == sum(o[\"total_ns\"] for o in ops), k
    assert k[\"exposed_ns\"] == sum(o[\"exposed_ns\"] for o in ops), k
assert len(r[\"unattributed\"]) == r[\"kernels\"][\"unattributed\"] + r[\"kernels\"][\"outside\"] == 90
assert all(u[\"why\"] for u in r[\"unattributed\"])
"
'

test_expect_success SQLITE,PYTHON3 'exposed time: over the ops the steps'"'"' busy time, never above the kernel time, below it where kernels overlap' '
	"$PYTHON3" -c "
import json
r = json.load(open(\"report.json\"))
busy = sum(s[\"busy_ns\"] for s in r[\"steps\"])
assert sum(o[\"exposed_ns\"] for o in r[\"ops\"]) == busy, busy
assert all(0 <= o[\"exposed_ns\"] <= o[\"total_ns\"] for o in r[\"ops\"])
# the export holds an overlap: argmax starts before the lm-head ends
assert any(o[\"exposed_ns\"] < o[\"total_ns\"] for o in r[\"ops\"])
n = len(r[\"steps\"])
assert all(abs(o[\"exposed_per_step_ns\"] - o[\"exposed_ns\"] / n) < 0.01 for o in r[\"ops\"])
"
'

test_expect_success SQLITE 'the op tables show the exposed time' '
	bcg report "$rep" "$plan" >out &&
	test_grep "^  op  *kind  *item kernels  *time  share  *exposed  *bytes  *GB/s$" out &&
	test_grep "^  kind  *ops kernels  *time  share  *exposed of busy$" out &&
	test_grep "^  argmax  *1  *1  *1.98 us   2.9%  *1.81 us   2.7%$" out
'

test_expect_success SQLITE,PYTHON3 'the JSON report follows its schema' '
	"$PYTHON3" "$TEST_DIRECTORY/json-schema-check.py" \
		"$BCG_SRC_DIR/formats/report-schema.json" report.json
'

test_expect_success SQLITE '--top limits the op table' '
	bcg report --top 3 "$rep" "$plan" >out &&
	test_grep "^ops (top 3 of 36 by GPU time; mean per step)$" out &&
	sed -n "/^ops (top/,/^$/p" out >ops &&
	test $(wc -l <ops) = 6
'

test_expect_success SQLITE,PYTHON3 'more steps than --top: the longest by GPU span, in step order, after the spans'"'"' least, median and most' '
	bcg report --top 3 "$rep" "$plan" >out &&
	bcg report --json "$rep" "$plan" >all.json &&
	sed -n "/^steps$\\|^steps (the /,/^$/p" out >steps &&
	"$PYTHON3" - all.json steps <<-\EOF
	import json, sys
	steps = json.load(open(sys.argv[1]))["steps"]
	lines = open(sys.argv[2]).read().splitlines()
	assert len(steps) == 7, len(steps)
	assert lines[0] == "steps (the 3 of 7 with the longest GPU span; every one in --json)", lines[0]
	spans = sorted(s["span_ns"] for s in steps)
	want = "  GPU span: least %.2f us, median %.2f us, most %.2f us" % (
	    spans[0] / 1e3, spans[3] / 1e3, spans[-1] / 1e3)
	assert lines[1] == want, (lines[1], want)
	longest = sorted(steps, key=lambda s: (-s["span_ns"], s["index"]))[:3]
	shown = [int(l.split()[0]) for l in lines[3:] if l.strip()]
	assert shown == sorted(s["index"] for s in longest), (shown, longest)
	EOF
'

test_expect_success SQLITE 'at most --top steps: every step, in step order' '
	bcg report --top 7 "$rep" "$plan" >out &&
	sed -n "/^steps$\\|^steps (the /,/^$/p" out >steps &&
	test "$(head -1 steps)" = steps &&
	test $(grep -c "^  *[0-9]  *step " steps) = 7 &&
	grep "^  *[0-9]  *step " steps | awk "{ print \$1 }" >order &&
	seq 0 6 >expect &&
	test_cmp expect order
'

test_expect_success SQLITE '--tokens 1 picks the variant of 1 token and notes the other launch shapes' '
	bcg report --tokens 1 "$rep" "$plan" >out &&
	test_grep "^variant   1 token, " out &&
	test_grep "^note      [0-9]* kernels* ran with another grid or block than the plan records$" out
'

test_expect_success SQLITE,PYTHON3 '--svg: well-formed, one bar per item and per kernel of the step' '
	bcg report --svg step.svg --step 2 "$rep" "$plan" >/dev/null &&
	"$PYTHON3" -c "
import json, xml.etree.ElementTree as ET
ns = \"{http://www.w3.org/2000/svg}\"
root = ET.parse(\"step.svg\").getroot()
rects = root.iter(ns + \"rect\")
cls = [r.get(\"class\", \"\") for r in rects]
r = json.load(open(\"report.json\"))
step = r[\"steps\"][2]
assert sum(c.startswith(\"item \") for c in cls) == len(r[\"items\"]) == 5, cls
assert cls.count(\"kernel\") == step[\"kernels\"] == 36
assert cls.count(\"item seg\") == 3 and cls.count(\"item break\") == 2
assert cls.count(\"idle\") > 0
"
'

# A PNG of the picture has no tooltips: an item bar carries the longest of
# its names that fits (6.2 px a character, 4 px of margin), and the legend
# says what the colors are.
test_expect_success SQLITE,PYTHON3 '--svg: breaks and segments labelled where they fit, a legend for them' '
	bcg report --svg step.svg --step 2 "$rep" "$plan" >/dev/null &&
	"$PYTHON3" -c "
import xml.etree.ElementTree as ET
ns = \"{http://www.w3.org/2000/svg}\"
root = ET.parse(\"step.svg\").getroot()
kids = list(root)
texts = [(float(e.get(\"x\")), e.get(\"y\"), e.text) for e in kids
         if e.tag == ns + \"text\" and e.get(\"class\") == \"label\"]
fits = lambda s, w: len(s) * 6.2 + 4 <= w
seen = 0
for r in root.iter(ns + \"rect\"):
    c = r.get(\"class\", \"\")
    if not c.startswith(\"item \"):
        continue
    name = r.find(ns + \"title\").text.split(\":\")[0]
    w = float(r.get(\"width\"))
    if c == \"item seg\":
        cands = [name, \" \".join(name.split(\" \")[:2])]
    else:
        op = name[len(\"break \"):]
        cands = [name, op, op.split(\".\")[0]]
    want = next((s for s in cands if fits(s, w)), None)
    mid = float(r.get(\"x\")) + w / 2
    got = next((t for x, y, t in texts if y == \"58.0\" and abs(x - mid) < 0.02), None)
    assert got == want, (name, w, got, want)
    seen += c == \"item break\" and got is not None
assert seen == 2, seen
legend = [e.text for e in kids if e.tag == ns + \"text\" and e.get(\"class\") == \"legend\"]
assert \"break (an eager op between graphs)\" in legend, legend
assert \"segment (one CUDA graph)\" in legend, legend
"
'

# The export'"'"'s mangled names, demangled by hand:
# _Z20bcg_embedding_kernelItEvPKviPKiPvilll is void
# bcg_embedding_kernel<unsigned short>(void const*, int, int const*, void*,
# int, long, long, long).
test_expect_success SQLITE '--svg: a kernel'"'"'s tooltip names it demangled' '
	bcg report --svg step.svg --step 2 "$rep" "$plan" >/dev/null &&
	test_grep "<title>embed (embedding): void bcg_embedding_kernel&lt;unsigned short&gt;(void const\*, int, int const\*, void\*, int, long, long, long), " step.svg &&
	! test_grep "_Z[0-9]" step.svg
'

test_expect_success SQLITE '--svg picks a step of median span without --step' '
	bcg report --svg typical.svg "$rep" "$plan" >/dev/null &&
	test_grep "step 2 (timed), 4 tokens: GPU span 88.67 us" typical.svg
'

test_expect_success SQLITE,PYTHON3 '--trace-json: a Chrome trace with the required fields' '
	bcg report --trace-json trace.json "$rep" "$plan" >/dev/null &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"trace.json\"))
ev = d[\"traceEvents\"]
x = [e for e in ev if e[\"ph\"] == \"X\"]
for e in x:
    for k in (\"name\", \"ph\", \"ts\", \"dur\", \"pid\", \"tid\"):
        assert k in e, (k, e)
    assert e[\"dur\"] >= 0
names = {(e[\"pid\"], e[\"tid\"], e[\"args\"][\"name\"]) for e in ev if e[\"ph\"] == \"M\" and e[\"name\"] == \"thread_name\"}
assert (1, 2, \"kernels\") in names and (1, 1, \"items\") in names
kern = [e for e in x if e[\"pid\"] == 1 and e[\"tid\"] == 2]
assert len(kern) == 252, len(kern)
items = [e for e in x if e[\"pid\"] == 1 and e[\"tid\"] == 1]
assert len(items) == 7 * 5
assert sorted({e[\"cat\"] for e in kern}) == [\"kernel\"]
"
'

test_expect_success SQLITE 'outputs are written atomically: a failed write leaves the old file' '
	echo old >kept.svg &&
	test_expect_code 3 bcg report --svg no-such-dir/x.svg "$rep" "$plan" >/dev/null 2>err &&
	test_grep "^bcgtool: no-such-dir/x.svg: cannot write: No such file or directory$" err &&
	bcg report --svg kept.svg "$rep" "$plan" >/dev/null &&
	! test_grep "^old$" kept.svg &&
	ls -A >files &&
	! grep "\.tmp$" files
'

# --- errors ------------------------------------------------------------

test_expect_success SQLITE 'a missing report' '
	test_expect_code 2 bcg report missing.sqlite "$plan" 2>err &&
	echo "bcgtool: missing.sqlite: cannot read: No such file or directory" >expect &&
	test_cmp expect err
'

test_expect_success SQLITE 'a file that is not SQLite' '
	echo "not a database" >text.sqlite &&
	test_expect_code 2 bcg report text.sqlite "$plan" 2>err &&
	echo "bcgtool: text.sqlite: not an SQLite database (give the .sqlite export of an Nsight Systems report, or the .nsys-rep)" >expect &&
	test_cmp expect err
'

test_expect_success SQLITE,PYTHON3 'an SQLite file without the export tables' '
	"$PYTHON3" -c "
import sqlite3
db = sqlite3.connect(\"empty.sqlite\")
db.execute(\"CREATE TABLE other (x INTEGER)\")
db.commit()
" &&
	test_expect_code 2 bcg report empty.sqlite "$plan" 2>err &&
	echo "bcgtool: empty.sqlite: no StringIds table: not an Nsight Systems export of a profile with --trace=cuda,nvtx" >expect &&
	test_cmp expect err
'

# edit.sqlite: the real export with one change made by SQL.
edit() {
	cp "$rep" edit.sqlite && chmod u+w edit.sqlite &&
	"$PYTHON3" -c "
import sqlite3, sys
db = sqlite3.connect(\"edit.sqlite\")
db.execute(sys.argv[1])
db.commit()
" "$1"
}

test_expect_success SQLITE,PYTHON3 'a kernel that ends before it starts' '
	edit "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE rowid = 7" &&
	test_expect_code 2 bcg report edit.sqlite "$plan" 2>err &&
	test_grep "^bcgtool: edit.sqlite: kernel bcg_init_kernel (CUPTI_ACTIVITY_KIND_KERNEL row 7) ends before it starts: start [0-9]*, end [0-9]*$" err
'

test_expect_success SQLITE,PYTHON3 'a kernel at a negative time' '
	edit "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -10 WHERE rowid = 9" &&
	test_expect_code 2 bcg report edit.sqlite "$plan" 2>err &&
	test_grep "^bcgtool: edit.sqlite: kernel bcg_init_kernel (CUPTI_ACTIVITY_KIND_KERNEL row 9) starts before the trace: start -10, end [0-9]*$" err
'

test_expect_success SQLITE,PYTHON3 'an NVTX range that ends before it starts' '
	edit "UPDATE NVTX_EVENTS SET end = start - 1 WHERE rowid = (SELECT MIN(rowid) FROM NVTX_EVENTS WHERE text = '\''timed'\'')" &&
	test_expect_code 2 bcg report edit.sqlite "$plan" 2>err &&
	test_grep "^bcgtool: edit.sqlite: NVTX range '\''timed'\'' (NVTX_EVENTS row [0-9]*) ends before it starts" err
'

test_expect_success SQLITE,PYTHON3 'a step kernel whose launch is unknown is listed, and the figures still agree' '
	edit "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = 99999999 WHERE rowid = (SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId IS NOT NULL ORDER BY start LIMIT 1)" &&
	bcg report --top 100 edit.sqlite "$plan" >out &&
	test_grep "^kernels   342 in the report: 251 attributed (237 graph nodes, 14 in breakpoints), 0 unattributed in steps, 91 outside the steps$" out &&
	test_grep "^ *1 .* bcg_embedding_kernel *no runtime call has its correlation id 99999999$" out &&
	"$PYTHON3" "$figures" figures edit.sqlite plan.json >expect &&
	bcg report --json edit.sqlite "$plan" >edit.json &&
	"$PYTHON3" "$figures" from-json edit.json >actual &&
	test_cmp expect actual
'

test_expect_success SQLITE,PYTHON3 'a graph kernel on a node the plan does not record is listed with the reason' '
	edit "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphNodeId = 8589934620 WHERE graphNodeId = 8589934592 AND rowid = (SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphNodeId = 8589934592 ORDER BY start LIMIT 1)" &&
	bcg report --top 100 edit.sqlite "$plan" >out &&
	test_grep " 1 unattributed in steps, 90 outside the steps$" out &&
	test_grep "bcg_embedding_kernel *graph node 28: the segment has 9 node records$" out
'

test_expect_success SQLITE,PYTHON3 'a report without step ranges' '
	edit "DELETE FROM NVTX_EVENTS" &&
	test_expect_code 2 bcg report edit.sqlite "$plan" 2>err &&
	echo "bcgtool: edit.sqlite: no '\''step N'\'' NVTX ranges: profile \`bcgtool replay\` with its NVTX ranges (not --no-nvtx) and --trace=cuda,nvtx" >expect &&
	test_cmp expect err
'

test_expect_success SQLITE 'a plan the report did not replay' '
	test_expect_code 2 bcg report "$rep" "$TEST_DATA/plans/mini-cuda.plan" 2>err &&
	echo "bcgtool: $rep: the report does not match the plan: its step 0 holds '\''seg 0 embed..v_write.0'\'', '\''break attn.0'\'', '\''seg 1 o.0..v_write.1'\'', '\''break attn.1'\'', '\''seg 2 o.1..next'\'', which no variant of the plan has (was another plan replayed?)" >expect &&
	test_cmp expect err
'

test_expect_success SQLITE 'a token count the plan has no variant for' '
	test_expect_code 2 bcg report --tokens 3 "$rep" "$plan" 2>err &&
	echo "bcgtool: $rep: the plan has no variant for 3 tokens" >expect &&
	test_cmp expect err
'

test_expect_success SQLITE 'a step out of range' '
	test_expect_code 2 bcg report --svg x.svg --step 7 "$rep" "$plan" 2>err &&
	echo "bcgtool: $rep: --step 7: the report has 7 steps of the plan (0 to 6)" >expect &&
	test_cmp expect err
'

test_expect_success 'usage errors' '
	test_expect_code 2 bcg report "$rep" 2>err &&
	test_grep "^bcgtool report: a report and a plan are needed$" err &&
	test_expect_code 2 bcg report "$plan" "$rep" "$plan" 2>err &&
	test_grep "^bcgtool report: $plan is a plan: one plan, after the reports (bcgtool report REPORT... PLAN)$" err &&
	test_expect_code 2 bcg report --step 1 "$rep" "$plan" 2>err &&
	test_grep "^bcgtool report: --step picks the step of --svg: give --svg FILE$" err &&
	test_expect_code 2 bcg report --top 0 "$rep" "$plan" 2>err &&
	test_grep "^bcgtool report: --top takes a whole number from 1 to 1000000, not '\''0'\''$" err
'

test_expect_success !SQLITE 'without SQLite, report says how to get it' '
	test_expect_code 2 bcg report "$rep" "$plan" 2>err &&
	echo "bcgtool: built without SQLite (install libsqlite3-dev and reconfigure)" >expect &&
	test_cmp expect err &&
	test_expect_code 2 bcg profile "$plan" 2>err &&
	test_cmp expect err
'

# --- .nsys-rep and profile, with a stand-in for nsys --------------------
#
# fake-nsys logs its arguments; "export" copies the real export to -o;
# "profile" runs the command it is given and leaves a report (or, with
# FAKE_QDSTRM set, only a raw capture).

test_expect_success SQLITE 'setup: a stand-in nsys' '
	cat >fake-nsys <<-EOF &&
	#!/bin/sh
	echo "\$*" >>"$PWD/nsys.log"
	case "\$1" in
	export)
		while test \$# -gt 1; do
			test "\$1" = -o && out=\$2
			shift
		done
		cp "$rep" "\$out" && chmod u+w "\$out" ;;
	profile)
		while test "\$1" != -o; do shift; done
		base=\$2; shift 2
		"\$@" >/dev/null || exit \$?
		if test -n "\$FAKE_QDSTRM"; then echo raw >"\$base.qdstrm"; else echo rep >"\$base.nsys-rep"; fi ;;
	esac
	EOF
	chmod +x fake-nsys &&
	cat >fake-wrapper <<-EOF &&
	#!/bin/sh
	echo "wrapper \$*" >>"$PWD/nsys.log"
	base=\$1; shift
	"\$@" >/dev/null && echo rep >"\$base.nsys-rep"
	EOF
	chmod +x fake-wrapper
'

test_expect_success SQLITE 'an .nsys-rep is exported beside itself with nsys, then reported' '
	echo rep >prof.nsys-rep &&
	rm -f nsys.log &&
	bcg report --nsys ./fake-nsys prof.nsys-rep "$plan" >out &&
	echo "export --type sqlite --force-overwrite true -o prof.sqlite prof.nsys-rep" >expect &&
	test_cmp expect nsys.log &&
	test_grep "^report    prof.sqlite (Nsight Systems 2025.3.2.0, NVIDIA H100 80GB HBM3)$" out
'

test_expect_success SQLITE 'an export newer than its .nsys-rep is used as it is' '
	rm -f nsys.log &&
	touch -d "2000-01-01" prof.nsys-rep &&
	bcg report --nsys ./fake-nsys prof.nsys-rep "$plan" >out &&
	! test -f nsys.log
'

test_expect_success SQLITE,!NSYS 'an .nsys-rep without nsys' '
	echo rep >other.nsys-rep &&
	test_expect_code 2 env PATH=/usr/bin:/bin "$BCGTOOL" report other.nsys-rep "$plan" 2>err &&
	test_grep "^bcgtool: other.nsys-rep: an Nsight Systems report; exporting it needs nsys (no nsys found on PATH, in /opt/nvidia or in /usr/local/cuda\*: install Nsight Systems" err
'

test_expect_success SQLITE,!NSYS 'profile without nsys says how to get one' '
	test_expect_code 2 env PATH=/usr/bin:/bin "$BCGTOOL" profile "$plan" 2>err &&
	test_grep "^bcgtool: no nsys found on PATH, in /opt/nvidia or in /usr/local/cuda\*: install Nsight Systems (https://developer.nvidia.com/nsight-systems" err
'

test_expect_success SQLITE 'profile runs replay under nsys with node tracing, exports and reports' '
	rm -f nsys.log &&
	BCG_BACKEND=host bcg profile --nsys ./fake-nsys -o run1 --top 2 "$plan" --steps 2 --warmup 0 >out 2>err &&
	# (in the build tree, libtool runs bcgtool from .libs/)
	sed -n "1s|[^ ]*/bcgtool replay|BCGTOOL replay|p" nsys.log >profile.args &&
	echo "profile --trace=cuda,nvtx --cuda-graph-trace=node --force-overwrite true -o run1 BCGTOOL replay --steps 2 --warmup 0 $plan" >expect &&
	test_cmp expect profile.args &&
	sed -n 2p nsys.log >export.args &&
	echo "export --type sqlite --force-overwrite true -o run1.sqlite run1.nsys-rep" >expect &&
	test_cmp expect export.args &&
	test_grep "^bcgtool: note: profile in run1.nsys-rep, its SQLite export in run1.sqlite$" err &&
	test_grep "^ops (top 2 of 36 by GPU time; mean per step)$" out
'

test_expect_success SQLITE 'profile takes a wrapper in place of nsys profile, and passes --tokens to replay' '
	rm -f nsys.log &&
	BCG_BACKEND=host BCG_NSYS=./fake-nsys BCG_NSYS_WRAPPER=./fake-wrapper \
		bcg profile -o run2.nsys-rep --tokens 4 --json "$plan" --steps 1 >out.json 2>err &&
	sed -n "1s|[^ ]*/bcgtool replay|BCGTOOL replay|p" nsys.log >wrapper.args &&
	echo "wrapper run2 BCGTOOL replay --tokens=4 --steps 1 $plan" >expect &&
	test_cmp expect wrapper.args &&
	test_grep "\"tokens\": 4" out.json
'

test_expect_success SQLITE 'profile: a raw capture nothing can import' '
	test_expect_code 3 env BCG_BACKEND=host FAKE_QDSTRM=1 "$BCGTOOL" profile --nsys ./fake-nsys -o run3 "$plan" --steps 1 2>err.all &&
	echo "bcgtool: nsys left only run3.qdstrm, a raw capture, and no QdstrmImporter comes with it; import it where Nsight Systems is complete (QdstrmImporter -i run3.qdstrm), or profile through a wrapper that does (--wrapper CMD)" >expect &&
	grep -v "^bcgtool: note: host timings" err.all >err &&
	test_cmp expect err
'

test_expect_success SQLITE 'profile: a plan that cannot be read' '
	test_expect_code 2 bcg profile --nsys ./fake-nsys missing.plan 2>err &&
	test_grep "^bcgtool: missing.plan: " err
'

test_expect_success SQLITE 'profile: an nsys given that does not exist' '
	test_expect_code 2 bcg profile --nsys ./no-nsys "$plan" 2>err &&
	echo "bcgtool: ./no-nsys: No such file or directory" >expect &&
	test_cmp expect err
'

# --- replay --trace-json (no profiler) ---------------------------------

test_expect_success PYTHON3 'replay --trace-json: host and device tracks, one event per item and step' '
	bcg replay --backend host --steps 4 --warmup 1 --trace-json replay.json "$plan" >/dev/null &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"replay.json\"))
ev = d[\"traceEvents\"]
x = [e for e in ev if e[\"ph\"] == \"X\"]
for e in x:
    for k in (\"name\", \"cat\", \"ph\", \"ts\", \"dur\", \"pid\", \"tid\"):
        assert k in e, (k, e)
    assert e[\"dur\"] >= 0 and e[\"ts\"] >= 0
procs = {e[\"pid\"]: e[\"args\"][\"name\"] for e in ev if e[\"name\"] == \"process_name\"}
assert procs == {1: \"host\", 2: \"device\"}, procs
for pid in (1, 2):
    steps = [e for e in x if e[\"pid\"] == pid and e[\"cat\"] == \"step\"]
    items = [e for e in x if e[\"pid\"] == pid and e[\"cat\"] != \"step\"]
    assert len(steps) == 4, steps
    assert len(items) == 4 * 5
    assert [e[\"name\"] for e in items[:5]] == [\"seg 0 embed..v_write.0\", \"break attn.0\", \"seg 1 o.0..v_write.1\", \"break attn.1\", \"seg 2 o.1..next\"]
    for s in steps:
        inside = [e for e in items if s[\"ts\"] - 0.01 <= e[\"ts\"] and e[\"ts\"] + e[\"dur\"] <= s[\"ts\"] + s[\"dur\"] + 0.01]
        assert len(inside) == 5, (s, inside)
"
'

test_expect_success 'replay --trace-json into a directory that does not exist' '
	test_expect_code 3 bcg replay --backend host --steps 1 --trace-json no-dir/r.json "$plan" >/dev/null 2>err &&
	echo "bcgtool: no-dir/r.json: cannot write: No such file or directory" >expect &&
	test_cmp expect err
'

test_done
