#!/bin/sh
test_description='capture --tune-step on the host backend: choices confirmed in whole steps

The host backend has two implementations of each product, "reference"
and "blocked". With --tune-step the capture times both alone, then tries
each group of products that shared a measurement in the step, where the
candidate not chosen is within the window: the variant captured with
the group switched, whole replayed steps of both timed in turns. The
report counts the groups and arrangements, the plan marks the choices
step, and the plan replays bit-exact in a new process. --stats keeps the
measurement on: under SOURCE_DATE_EPOCH alone the host times nothing.'
. "$(dirname "$0")/test-lib.sh"

if test -n "$PYTHON3" && "$PYTHON3" -c "import jsonschema" 2>/dev/null; then
	test_set_prereq JSONSCHEMA
fi

small="$SAMPLES/llama-decode-small.yaml"

# The groups of a variant, from the plan: the products that shared a
# measurement have the same candidates with the same times.
cat >groups.py <<'EOT'
import json

def groups(plan, variant):
    g = {}
    for c in plan["choices"]:
        if c["variant"] != variant or len(c["candidates"]) < 2:
            continue
        key = tuple((x["impl"], x["us"]) for x in c["candidates"])
        g.setdefault(key, []).append(c)
    return g

def variants(cap_path, plan_path):
    """Each variant of a capture's report, with its groups in the plan."""
    cap = json.load(open(cap_path))
    plan = json.load(open(plan_path))
    for v in cap["variants"]:
        vi = [p["index"] for p in plan["variants"] if p["tokens"] == v["tokens"]][0]
        yield v, groups(plan, vi)

def alone(key):
    """What measurement alone chose (tune.h's rule): the default (the
    first) unless another leads it by more than 3%."""
    t = dict(key)
    best = min(t, key=t.get)
    return best if t[best] < 0.97 * t[key[0][0]] else key[0][0]
EOT

test_expect_success PYTHON3 '--tune-step=1000: every group is tried, once, and the plan says so' '
	bcg capture --backend host --stats --tune-step=1000 --json -o step.plan "$small" >cap.json &&
	bcg inspect --json step.plan >plan.json &&
	"$PYTHON3" -c "
exec(open(\"groups.py\").read())
cap = json.load(open(\"cap.json\"))
assert cap[\"phases\"][\"tune_step_ms\"] > 0, cap[\"phases\"]
assert cap[\"phases\"][\"tune_step_ms\"] <= cap[\"phases\"][\"tune_ms\"], cap[\"phases\"]
for v, g in variants(\"cap.json\", \"plan.json\"):
    s = v[\"tune_step\"]
    assert v[\"bit_exact\"], v
    # two implementations: one arrangement timed a group, every group
    # contested at a window of 1000%
    assert len(g) > 0 and s[\"contested\"] == len(g) and s[\"timed\"] == len(g), (s, len(g))
    assert s[\"timed\"] <= s[\"turns\"] <= 3 * s[\"timed\"], s
    changed = 0
    for key, cs in g.items():
        impls = set(c[\"impl\"] for c in cs)
        assert len(impls) == 1, cs          # a group moves as one
        assert all(c[\"tuned\"] and c[\"step\"] for c in cs), cs
        changed += impls.pop() != alone(key)
    assert s[\"changed\"] == changed, (s, changed)
"
'

test_expect_success JSONSCHEMA 'the report follows its schema' '
	"$PYTHON3" "$TEST_DIRECTORY/json-validate.py" "$BCG_SRC_DIR/formats/json/capture.schema.json" \
		cap.json
'

test_expect_success 'the plan replays bit-exact in a new process, and instantiates' '
	bcg replay --backend host --tokens 2 --steps 3 --warmup 0 --check step.plan >out &&
	test_grep "bit-exact" out &&
	bcg instantiate --backend host step.plan >out
'

test_expect_success 'inspect --choices marks the choices step' '
	bcg inspect --choices step.plan >choices &&
	test $(grep -c "  matmul  .*step" choices) = $((3 * 13))
'

test_expect_success PYTHON3 '--tune-step=0: only a candidate as fast alone as the chosen one is tried' '
	bcg capture --backend host --stats --tune-step=0 --json -o zero.plan "$small" >cap0.json &&
	bcg inspect --json zero.plan >plan0.json &&
	"$PYTHON3" -c "
exec(open(\"groups.py\").read())
for v, g in variants(\"cap0.json\", \"plan0.json\"):
    want = 0
    for key, cs in g.items():
        t = dict(key)
        chosen = alone(key)
        tried = any(k != chosen and t[k] <= t[chosen] for k in t)
        want += tried
        assert all(c[\"step\"] == tried for c in cs), cs
    assert v[\"tune_step\"][\"contested\"] == want, (v[\"tune_step\"], want)
"
'

test_expect_success PYTHON3 'without --tune-step: no step marks, tune_step null, no time' '
	bcg capture --backend host --stats --json -o plain.plan "$small" >capn.json &&
	bcg inspect --json plain.plan >plann.json &&
	"$PYTHON3" -c "
import json
cap = json.load(open(\"capn.json\"))
plan = json.load(open(\"plann.json\"))
assert cap[\"phases\"][\"tune_step_ms\"] == 0, cap[\"phases\"]
assert all(v[\"tune_step\"] is None for v in cap[\"variants\"]), cap[\"variants\"]
assert plan[\"choices\"] and not any(c[\"step\"] for c in plan[\"choices\"])
"
'

test_expect_success 'the text report says what the step did' '
	bcg capture --backend host --stats --tune-step=1000 --tokens 2 -o text.plan "$small" >out &&
	test_grep "^tune in the step [0-9.]* s: [1-9][0-9]* signatures* contested, [1-9][0-9]* arrangements* timed, [0-9]* choices* changed$" out
'

test_expect_success '--tune-step with --share-exec: verified, the captures tried share nothing' '
	bcg capture --backend host --stats --tune-step=1000 --share-exec -o shared.plan "$small" >out &&
	test $(grep -c "bit-exact$" out) = 3 &&
	bcg replay --backend host --tokens 4 --steps 2 --warmup 0 --check shared.plan >out &&
	test_grep "bit-exact" out
'

test_expect_success 'usage errors: exit 2, named' '
	test_expect_code 2 bcg capture --backend host --tune-step --no-tune -o x.plan "$small" 2>err &&
	test_grep "tune-step and --no-tune exclude each other" err &&
	test_expect_code 2 bcg capture --backend host --tune-step=lots -o x.plan "$small" 2>err &&
	test_grep "takes a percentage from 0 to 1e6, not .lots." err &&
	test_expect_code 2 bcg capture --backend host --tune-step=-5 -o x.plan "$small" 2>err &&
	test_grep "not .-5." err &&
	test_expect_code 2 bcg capture --backend host --tune-step --tp 2 -o x.plan "$small" 2>err &&
	test_grep "tune-step with --tp 2" err &&
	test ! -e x.plan
'

test_done
