#!/bin/sh
test_description='bcgtool profile end to end on the GPU: llama-decode under Nsight Systems'
. "$(dirname "$0")/test-lib.sh"

# Needs a GPU, SQLite and an nsys that works here: one on PATH or in the
# usual places, or a wrapper that profiles with the right flags (on the
# project's GPU machine, BCG_NSYS_WRAPPER=$PWD/.gpu/nsys-profile; see
# bcgtool-profile(1)).
test "${BCG_HAVE_SQLITE:-no}" = yes && test_set_prereq SQLITE
for f in /usr/local/cuda*/bin/nsys /opt/nvidia/*/*/bin/nsys /opt/nvidia/*/*/target-linux-x64/nsys \
	/opt/nvidia/*/*/host/target-linux-x64/nsys; do
	test -x "$f" && test_set_prereq NSYS
done
command -v nsys >/dev/null 2>&1 && test_set_prereq NSYS

if ! test_have_prereq CUDA,SQLITE,NSYS,PYTHON3; then
	test_skip_all "needs a GPU, SQLite, nsys and python3"
fi

# An nsys that is there but cannot make a report (on the GPU machine its
# importer lacks libraries: it leaves only a .qdstrm) is no working nsys:
# profile says so, naming the importer and --wrapper, and the test skips
# with that reason rather than fail. Any other failure is the test's.
if bcg capture -q --backend cuda -o probe.plan "$SAMPLES/tiny-mlp.yaml" >/dev/null 2>&1 &&
   ! bcg profile -q -o probe probe.plan --backend cuda --steps 1 --warmup 0 >/dev/null 2>probe.err &&
   grep -q "a raw capture" probe.err; then
	test_skip_all "no working nsys: $(sed -n "s/^bcgtool: //p" probe.err | head -n 1)"
fi
rm -f probe.plan probe.nsys-rep probe.qdstrm probe.sqlite probe.err

plan_kernels() {
	"$PYTHON3" -c "
import json, sys
p = json.load(open(sys.argv[1]))
v = max(p[\"variants\"], key=lambda v: v[\"tokens\"])
segs = [p[\"segments\"][i[\"index\"]] for i in v[\"items\"] if i[\"kind\"] == \"segment\"]
print(sum(1 for s in segs for n in s[\"nodes\"] if n[\"type\"] == \"kernel\"))
" "$1"
}

test_expect_success 'setup: capture llama-decode on the GPU' '
	bcg capture --backend cuda -o llama.plan "$SAMPLES/llama-decode.yaml" >/dev/null &&
	bcg inspect --json llama.plan >plan.json
'

test_expect_success 'profile replays under nsys, exports and attributes every step kernel' '
	bcg profile -o llama --json --svg step.svg --trace-json trace.json llama.plan \
		--backend cuda --steps 5 --warmup 2 >report.json 2>err &&
	test -f llama.nsys-rep && test -f llama.sqlite &&
	graph=$(plan_kernels plan.json) &&
	"$PYTHON3" -c "
import json, sys
r = json.load(open(\"report.json\"))
graph = int(sys.argv[1])
k = r[\"kernels\"]
assert k[\"unattributed\"] == 0, k
assert k[\"grid_mismatch\"] == 0, k
# 2 warm-up and 5 timed steps, then 5 steps of the busy pass
assert len(r[\"steps\"]) == 12, len(r[\"steps\"])
breaks = [i for i in r[\"items\"] if i[\"kind\"] == \"break\"]
assert len(breaks) == 32
assert k[\"graph\"] == graph * 12, (k, graph)
# the kernel that writes the feeds, in the first segment of each step
assert k[\"feed\"] == 12, k
for s in r[\"steps\"]:
    assert s[\"kernels\"] >= graph + len(breaks), s
    assert s[\"busy_ns\"] > 0 and s[\"idle_ns\"] >= 0
for b in breaks:
    assert b[\"break_cost_ns\"] > 0 and b[\"kernels\"] >= 1, b
assert all(o[\"kernels\"] > 0 for o in r[\"ops\"])
" "$graph"
'

test_expect_success 'its figures agree with nsys-figures.py on the new export' '
	"$PYTHON3" "$TEST_DIRECTORY/nsys-figures.py" figures llama.sqlite plan.json >expect &&
	"$PYTHON3" "$TEST_DIRECTORY/nsys-figures.py" from-json report.json >actual &&
	test_cmp expect actual
'

test_expect_success 'the SVG and the Chrome trace of the profile' '
	"$PYTHON3" -c "
import json, xml.etree.ElementTree as ET
root = ET.parse(\"step.svg\").getroot()
cls = [e.get(\"class\", \"\") for e in root.iter(\"{http://www.w3.org/2000/svg}rect\")]
r = json.load(open(\"report.json\"))
assert sum(c.startswith(\"item \") for c in cls) == len(r[\"items\"])
t = json.load(open(\"trace.json\"))
x = [e for e in t[\"traceEvents\"] if e[\"ph\"] == \"X\"]
k = r[\"kernels\"]
assert len([e for e in x if e[\"pid\"] == 1 and e[\"tid\"] == 2]) == k[\"graph\"] + k[\"break\"] + k[\"feed\"]
"
'

test_expect_success 'report exports an .nsys-rep itself' '
	rm -f llama.sqlite &&
	bcg report --top 5 llama.nsys-rep llama.plan >out &&
	test -f llama.sqlite &&
	test_grep "^kernels   [0-9]* in the report: [0-9]* attributed ([0-9]* graph nodes, [0-9]* in breakpoints, 12 writing a step.s feeds), 0 unattributed in steps" out
'

test_expect_success 'replay --trace-json on the GPU: CUDA event times per item' '
	bcg replay --backend cuda --steps 20 --trace-json replay.json llama.plan >/dev/null &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"replay.json\"))
x = [e for e in d[\"traceEvents\"] if e[\"ph\"] == \"X\"]
gpu = [e for e in x if e[\"pid\"] == 2 and e[\"cat\"] != \"step\"]
assert len(gpu) == 10 * 65, len(gpu)
assert all(e[\"dur\"] > 0 for e in gpu)
for a, b in zip(gpu, gpu[1:]):
    assert b[\"ts\"] >= a[\"ts\"] + a[\"dur\"] - 0.01, (a, b)
"
'

test_done
