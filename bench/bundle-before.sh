#!/bin/sh
# bench/bundle-before.sh - put a `make dist` tarball of an earlier commit
# into .gpu/before/, so that bench/gpu-session.sh's `before` stage can build
# and measure it in the same lease as the current tree (run after
# ../shared/tools/gpu-bundle, which makes .gpu/).
#
#   sh bench/bundle-before.sh [COMMIT]     (default: a3aae33, the last tree
#                                           whose products all went through cuBLAS)
set -eu
commit=${1:-a3aae33}
top=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$top" worktree remove --force "$tmp/tree" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
git -C "$top" worktree add --detach "$tmp/tree" "$commit" >/dev/null 2>&1
cd "$tmp/tree"
./bootstrap >/dev/null 2>&1
./configure >/dev/null 2>&1
make -s dist-gzip >/dev/null
mkdir -p "$top/.gpu/before"
rm -f "$top"/.gpu/before/*.tar.gz
mv ./*.tar.gz "$top/.gpu/before/$(git rev-parse --short HEAD).tar.gz"
echo "bundle-before: .gpu/before/$(git rev-parse --short HEAD).tar.gz"
