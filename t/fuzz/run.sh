#!/bin/sh
# run.sh - run one libFuzzer target for a while on a scratch copy of its
# seeds; `make fuzz-run` calls it for each target.
#
#   run.sh FUZZER SECONDS WORKDIR SEED_DIR... [-- LIBFUZZER_OPTION...]
#
# New inputs go to WORKDIR/corpus, never to the seeds in the tree; a crash
# leaves WORKDIR/crash-* and a non-zero exit. A crash's input belongs in
# t/fuzz/corpus/ once it is fixed, so that `make check` replays it.
set -u
fuzzer=$1 seconds=$2 work=$3
shift 3
seeds=
while test $# -gt 0 && test "x$1" != x--; do
	seeds="$seeds $1"
	shift
done
test $# -gt 0 && shift
rm -rf "$work" && mkdir -p "$work/corpus" || exit 1
# shellcheck disable=SC2086
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$work/" "$@" \
	"$work/corpus" $seeds >"$work/log" 2>&1
rc=$?
grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$work/log"
if test $rc != 0; then
	tail -60 "$work/log"
	echo "$fuzzer: exit $rc; inputs: $(ls "$work" | grep -E '^(crash|leak|timeout|oom)-' | tr '\n' ' ')"
fi
exit $rc
