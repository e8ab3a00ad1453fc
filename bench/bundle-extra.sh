#!/bin/sh
# bench/bundle-extra.sh - add the libraries the GPU machine lacks headers for
# (jansson, SQLite) or lacks altogether (xxHash, ISA-L) to .gpu/, next to the
# libyaml that ../shared/tools/gpu-bundle ships, so that its configure finds
# them (run after gpu-bundle).
#
# That machine has libjansson.so.4 and libsqlite3.so.0 but no headers and no
# pkg-config files. We ship this machine's static archives and headers with
# .pc files that locate themselves through ${pcfiledir}, so nothing needs
# rewriting there; static archives avoid depending on the exact .so versions.
# It has neither libxxhash nor ISA-L. libxxhash.a ships as the others do, so
# XXH64 is linked into each program and needs nothing at run time. Debian's
# libisal-dev has no static archive: libisal.so.2 ships itself (it needs
# only libc), and its .pc file links it with a run path to where it lies,
# which Makefile.am passes to every program and to libplan.so.
set -eu
top=$(git rev-parse --show-toplevel)
dir="$top/.gpu/yaml"
[ -d "$dir/lib/pkgconfig" ] || { echo "bundle-extra: run ../shared/tools/gpu-bundle first" >&2; exit 2; }
multi=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
lib=/usr/lib/$multi

ship() { # NAME HEADER ARCHIVE VERSION PRIVATE-LIBS
	cp "/usr/include/$2" "$dir/include/"
	cp "$lib/$3" "$dir/lib/"
	cat > "$dir/lib/pkgconfig/$1.pc" <<PC
prefix=\${pcfiledir}/../..
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: $1
Description: $1, shipped for the GPU machine by bench/bundle-extra.sh
Version: $4
Libs: -L\${libdir} -l:$3 $5
Cflags: -I\${includedir}
PC
}
ship jansson jansson.h libjansson.a "$(pkg-config --modversion jansson)" ""
cp /usr/include/jansson_config.h "$dir/include/"
ship sqlite3 sqlite3.h libsqlite3.a "$(pkg-config --modversion sqlite3)" "-lm -lpthread -ldl"
ship libxxhash xxhash.h libxxhash.a "$(pkg-config --modversion libxxhash)" ""
ship libisal isa-l.h libisal.so.2 "$(pkg-config --modversion libisal)" ""
# libplan.pc requires libisal, and t/t0300-install.sh links with libdir
# redefined: name the directory through prefix, which that leaves alone.
sed -i 's|^Libs: .*|Libs: -L${prefix}/lib -l:libisal.so.2 -Wl,-rpath,${prefix}/lib|' \
	"$dir/lib/pkgconfig/libisal.pc"
mkdir -p "$dir/include/isa-l"
cp /usr/include/isa-l/*.h "$dir/include/isa-l/"
echo "bundle-extra: jansson, sqlite3, libxxhash and libisal added to .gpu/yaml"
