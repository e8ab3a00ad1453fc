#!/bin/sh
test_description='bcgtool diff: choices made between close candidates are noted, not differences, unless --strict'
. "$(dirname "$0")/test-lib.sh"

edit="$BCG_BUILD_DIR/t/helper/plan-edit"
SQ="'"

# Two captures of one script where the tuner timed q's two candidates
# within its margin, each marking its choice close, and went different
# ways; everything else the same (other timings too are no difference).
test_expect_success 'setup: two plans whose choice for q differs between close candidates' '
	cp "$TEST_DATA/plans/mini-cuda.plan" . &&
	"$edit" mini-cuda.plan a.plan choice 2 q cublas tuned,close cublas=3.75,mma=3.8 &&
	"$edit" mini-cuda.plan b.plan times 5000000 \
		choice 2 q mma tuned,close mma=3.74,cublas=3.76 &&
	"$edit" mini-cuda.plan c.plan choice 2 q mma tuned mma=3.5,cublas=3.9 &&
	"$edit" mini-cuda.plan d.plan choice 2 q mma tuned,close mma=3.74,cublas=3.76,fma=9 &&
	"$edit" b.plan e.plan choice 2 o mma tuned mma=2.25,cublas=2.5
'

test_expect_success 'close choices: shown, noted, exit 0' '
	bcg diff a.plan b.plan >out 2>err &&
	cat >expect <<-\EOF &&
	--- a.plan
	+++ b.plan
	@@ choices @@
	 op q at 2 tokens
	-  impl (close): cublas
	+  impl (close): mma
	EOF
	test_cmp expect out &&
	echo "bcgtool: note: 1 choice went another way between candidates measured within the tuner${SQ}s margin (close): noted, not counted as differences (--strict counts them)" >expect &&
	test_cmp expect err &&
	bcg diff -q a.plan b.plan >out 2>err &&
	test ! -s err
'

test_expect_success '--strict counts them: exit 1, no note' '
	test_expect_code 1 bcg diff --strict a.plan b.plan >out 2>err &&
	test_grep "^+  impl (close): mma$" out &&
	test ! -s err
'

test_expect_success PYTHON3 '--json: the entry says close; exit 0, or 1 with --strict' '
	bcg diff --json a.plan b.plan >d.json &&
	test_expect_code 1 bcg diff --strict --json a.plan b.plan >s.json &&
	test_cmp d.json s.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"d.json\"))
assert d[\"identical\"] is False
(e,) = d[\"differences\"]
assert (e[\"area\"], e[\"change\"], e[\"field\"], e[\"a\"], e[\"b\"]) == \
       (\"choices\", \"changed\", \"impl (close)\", \"cublas\", \"mma\"), e
"
'

test_expect_success 'a choice that was not close, or among other candidates, is a difference' '
	test_expect_code 1 bcg diff a.plan c.plan >out 2>err &&
	test_grep "^+  impl: mma$" out &&
	test ! -s err &&
	test_expect_code 1 bcg diff a.plan d.plan >out 2>err &&
	test_grep "^+  impl: mma$" out &&
	test_grep "^+  candidates: cublas, fma, mma$" out
'

test_expect_success 'a close choice beside a real difference: exit 1, the close one still noted' '
	test_expect_code 1 bcg diff a.plan e.plan >out 2>err &&
	test_grep "^+  impl (close): mma$" out &&
	test_grep "^+op o at 2 tokens: mma, tuned from mma, cublas$" out &&
	test_grep "^bcgtool: note: 1 choice went another way" err
'

test_expect_success 'a choice confirmed in the step (1.9): inspect marks it, diff counts how it was chosen' '
	"$edit" mini-cuda.plan f.plan choice 2 q mma tuned,close,step mma=3.74,cublas=3.76 &&
	bcg inspect f.plan >out &&
	test_grep "^plan      f.plan (.*, format 1.9)$" out &&
	test_grep "^choices   1 op in 1 variant: 1 choice, 1 tuned (1 close, 1 in the step)$" out &&
	bcg inspect --choices f.plan >out &&
	test_grep "^   2  q     matmul  mma   tuned, close, step  mma 3.74 us, cublas 3.76 us$" out &&
	test_expect_code 1 bcg diff b.plan f.plan >out 2>err &&
	cat >expect <<-\EOF &&
	--- b.plan
	+++ f.plan
	@@ choices @@
	 op q at 2 tokens
	-  chosen: tuned
	+  chosen: tuned in the step
	EOF
	test_cmp expect out &&
	test ! -s err &&
	test_expect_code 1 bcg diff a.plan f.plan >out 2>err &&
	test_grep "^+  impl: mma$" out &&
	test_grep "^+  chosen: tuned in the step$" out &&
	test ! -s err
'

test_expect_success 'diff - - is refused: standard input holds one plan' '
	test_expect_code 2 bcg diff - - <a.plan >out 2>err &&
	test_grep "^bcgtool diff: standard input holds one plan: give ${SQ}-${SQ} for one of A and B at most$" err &&
	test ! -s out &&
	bcg diff - a.plan <a.plan >out &&
	test ! -s out
'

test_done
