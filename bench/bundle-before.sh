#!/bin/sh
# bench/bundle-before.sh - put a `make dist` tarball of an earlier commit
# into .gpu/before/, so that bench/gpu-session.sh's `before` stage can build
# and measure it in the same lease as the current tree (run after
# ../shared/tools/gpu-bundle, which makes .gpu/).
#
#   sh bench/bundle-before.sh [COMMIT]     (default: a3aae33, the last tree
#                                           whose products all went through cuBLAS)
#   sh bench/bundle-before.sh --tree NAME COMMIT
#                                          (.gpu/trees/NAME.tar.gz instead: one
#                                           of the trees gpu-session.sh's `trees`
#                                           stage sets beside this one)
set -eu
tree=
if [ "${1:-}" = --tree ]; then
	[ $# -eq 3 ] || { echo "usage: bundle-before.sh --tree NAME COMMIT" >&2; exit 2; }
	case $2 in
	*[!A-Za-z0-9_-]* | '') echo "bundle-before: tree name '$2': letters, digits, - and _ only" >&2; exit 2 ;;
	esac
	tree=$2
	shift 2
fi
commit=${1:-a3aae33}
top=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$top" worktree remove --force "$tmp/tree" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git -C "$top" worktree add --detach "$tmp/tree" "$commit" >/dev/null 2>&1
cd "$tmp/tree"
./bootstrap >/dev/null 2>&1
./configure >/dev/null 2>&1
make -s dist-gzip >/dev/null
if [ -n "$tree" ]; then
	mkdir -p "$top/.gpu/trees"
	mv ./*.tar.gz "$top/.gpu/trees/$tree.tar.gz"
	git rev-parse --short HEAD >"$top/.gpu/trees/$tree.commit"
	echo "bundle-before: .gpu/trees/$tree.tar.gz ($(git rev-parse --short HEAD))"
	exit 0
fi
mkdir -p "$top/.gpu/before"
rm -f "$top"/.gpu/before/*.tar.gz
mv ./*.tar.gz "$top/.gpu/before/$(git rev-parse --short HEAD).tar.gz"
echo "bundle-before: .gpu/before/$(git rev-parse --short HEAD).tar.gz"
