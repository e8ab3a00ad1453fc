#!/bin/sh
test_description='bcgtool record: executable graphs updated, and a process of two devices (recording logs written by record-fake)'
. "$(dirname "$0")/test-lib.sh"

# t/helper/record-fake writes the log the recording library would write
# (see t6500); BCG_RECORD_ASSUME_DEVICE skips record's check for a GPU.
fake="$BCG_BUILD_DIR/t/helper/record-fake"
test -f "$BCG_BUILD_DIR/bcgtool/record/.libs/libbcg-record.so" && test_set_prereq RECORD_LIB
BCG_RECORD_ASSUME_DEVICE=1
export BCG_RECORD_ASSUME_DEVICE

test_expect_success RECORD_LIB,PYTHON3 'an executable updated and set back: a variant for what it ran each time' '
	bcg record --json -o update.plan -- "$fake" update 4 >sum.json &&
	bcg inspect --json update.plan >update.json &&
	"$PYTHON3" -c "
import json
s = json.load(open(\"sum.json\"))[\"plans\"][0]
# launches 1-4 of the instantiated graph, 5-8 after the update, 9-12 back
assert s[\"updates\"] == 2 and s[\"variants\"] == 2 and s[\"steps\"] == 12, s
d = json.load(open(\"update.json\"))
assert [v[\"seen\"] for v in d[\"variants\"]] == [8, 4], d[\"variants\"]
words = []
for v in d[\"variants\"]:
    seg = d[\"segments\"][v[\"items\"][0][\"index\"]]
    words.append([d[\"launches\"][n[\"launch\"]][\"patches\"][0][\"offset\"] for n in seg[\"nodes\"]])
# node i reads base + 64 i: base 0 of the arena, then 0x1000 after the update
assert words == [[0, 64], [4096, 4160]], words
"
'

test_expect_success RECORD_LIB 'inspect: the variants of two devices, each with its device' '
	bcg record -o dev.plan -- "$fake" devices 3 2>err &&
	grep "recorded dev.plan: 6 steps in 2 variants" err &&
	bcg inspect dev.plan >out &&
	test_grep "^device .*; variants on 2 devices (device 0.s shown)" out &&
	sed -n "/^variants/,/^$/p" out >table &&
	test_grep "number .*nodes  *device$" table &&
	test_grep "^  *1  *repeat  *3 .*  0$" table &&
	test_grep "^  *2  *repeat  *3 .*  1$" table
'

test_expect_success RECORD_LIB,PYTHON3 'inspect --json: each variant and allocation names its device' '
	bcg inspect --json dev.plan >dev.json &&
	"$PYTHON3" -c "
import json
d = json.load(open(\"dev.json\"))
assert [v[\"device\"] for v in d[\"variants\"]] == [0, 1], d[\"variants\"]
# one allocation a device, at one address
al = sorted((a[\"device\"], a[\"address\"]) for a in d[\"allocations\"])
assert al == [(0, \"0x0000000010000000\"), (1, \"0x0000000010000000\")], al
# device 1 graph B has three nodes, device 0 graph B two
nodes = [sum(len(d[\"segments\"][i[\"index\"]][\"nodes\"]) for i in v[\"items\"]
             if i[\"kind\"] == \"segment\") for v in d[\"variants\"]]
assert nodes == [5, 6], nodes
for v in d[\"variants\"]:
    for i in v[\"items\"]:
        if i[\"kind\"] != \"segment\":
            continue
        for n in d[\"segments\"][i[\"index\"]][\"nodes\"]:
            a = d[\"launches\"][n[\"launch\"]][\"patches\"][0][\"alloc\"]
            assert d[\"allocations\"][a][\"device\"] == v[\"device\"], (v, n)
"
'

test_expect_success RECORD_LIB 'a one-device plan says nothing of devices' '
	bcg record -o one.plan -- "$fake" breakable 3 2>/dev/null &&
	bcg inspect one.plan >out &&
	! grep "variants on" out &&
	sed -n "/^variants/,/^$/p" out >table &&
	! grep "device" table
'

test_done
