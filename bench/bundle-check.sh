#!/bin/sh
# bench/bundle-check.sh - build and test the GPU bundle here as the GPU
# machine would, where neither libxxhash nor ISA-L is installed. Run after
# ../shared/tools/gpu-bundle and bench/bundle-extra.sh, as root (it needs
# unshare -m): in a private mount namespace, this machine's libxxhash and
# ISA-L (shared libraries, archive, headers, .pc files) read as empty
# files, so configure, the programs and the tests can only use what the
# bundle ships. Nothing outside that namespace changes. .gpu/run builds in
# a fresh directory under /tmp, not in /tmp/bcg-gpu, and leaves its logs
# there.
#
#   sh bench/bundle-check.sh check TESTS='t/t0310-hash-libraries.sh'
set -eu
if [ "${BCG_BUNDLE_NS:-}" != 1 ]; then
	top=$(git rev-parse --show-toplevel)
	[ -f "$top/.gpu/run" ] && [ -f "$top/.gpu/yaml/lib/pkgconfig/libisal.pc" ] ||
		{ echo "bundle-check: run ../shared/tools/gpu-bundle and bench/bundle-extra.sh first" >&2; exit 2; }
	BCG_BUNDLE_NS=1 BCG_BUNDLE_TOP=$top exec unshare -m sh "$0" "$@"
fi
multi=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
lib=/usr/lib/$multi
for f in "$lib/libisal.so.2" "$lib/libxxhash.so.0" "$lib/libxxhash.a" \
         "$lib/pkgconfig/libisal.pc" "$lib/pkgconfig/libxxhash.pc" \
         /usr/include/xxhash.h /usr/include/xxh3.h /usr/include/isa-l.h; do
	if [ -e "$f" ]; then
		mount --bind /dev/null "$(readlink -f "$f")"
	fi
done
if [ -d /usr/include/isa-l ]; then
	mount -t tmpfs none /usr/include/isa-l
fi
work=$(mktemp -d /tmp/bcg-bundle-check.XXXXXX)
mkdir -p "$work/repo" "$work/out"
cp -r "$BCG_BUNDLE_TOP/.gpu" "$work/repo/"
sed -i "s|^work=/tmp/bcg-gpu |work=$work/build |" "$work/repo/.gpu/run"
grep -q "^work=$work/build " "$work/repo/.gpu/run" ||
	{ echo "bundle-check: .gpu/run does not set work= as expected" >&2; exit 2; }
echo "bundle-check: building in $work/build, logs in $work/out"
cd "$work/repo"
OUT="$work/out" sh .gpu/run "$@"
