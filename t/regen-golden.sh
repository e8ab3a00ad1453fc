#!/bin/sh
# regen-golden.sh - remake the golden outputs of bcgtool inspect and diff
# from the committed fixture plans:
#
#   make regen-golden     (or: BCGTOOL=/path/to/bcgtool sh t/regen-golden.sh)
#
# Each line of t/data/inspect/cases and t/data/diff/cases names an output
# and the command that makes it (see those files). The commands run in a
# scratch directory holding copies of t/data/plans/*.plan, in the
# environment of the tests (t/test-lib.sh): C locale, NO_COLOR, UTC.
# Review every change (git diff t/data) against the plans' content before
# committing it: these files are what the tests hold the program to.
set -e

data=$(cd "$(dirname "$0")/data" && pwd)
: "${BCGTOOL:=$(cd "$(dirname "$0")/.." && pwd)/bcgtool/bcgtool}"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

LC_ALL=C NO_COLOR=1 TZ=UTC
export LC_ALL NO_COLOR TZ
cp "$data"/plans/*.plan "$scratch"/
cd "$scratch"

grep -v '^#' "$data/inspect/cases" | while read -r name plan opts; do
	test -n "$name" || continue
	# shellcheck disable=SC2086
	"$BCGTOOL" inspect $opts "$plan" >"$data/inspect/$name.out"
done

grep -v '^#' "$data/diff/cases" | while read -r name want a b opts; do
	test -n "$name" || continue
	set +e
	# shellcheck disable=SC2086
	"$BCGTOOL" diff $opts "$a" "$b" >"$data/diff/$name.out"
	code=$?
	set -e
	if test "$code" != "$want"; then
		echo "regen-golden: diff $opts $a $b exited $code, not $want" >&2
		exit 1
	fi
done
