#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make deb` end to end: builds libquack1, libquack-dev, libquack-transport1,
# libquack-transport-dev and quack with dpkg-buildpackage
# (scripts/build-deb.sh: a copy of the tree, Release, nocheck; lintian must
# report no error), checks how the packages split (the transport-only
# library and the core headers in the -transport packages, nothing shipped
# twice, libquack-transport.so.1 needing only GnuTLS/nettle and libc),
# unpacks them with dpkg-deb -x into a scratch root (nothing is installed on
# the machine), runs the unpacked `quack`, builds the examples shipped in
# libquack-dev against the unpacked quack.pc and echoes data through them,
# and builds examples/sansio_pair.c against the unpacked transport packages
# alone (quack-transport.pc) and moves data through it (SHA-256 compared).
# Skips (exit 0, with a message) where dpkg-buildpackage is missing.
# Usage: bash tests/cli/deb.sh BUILD_DIR   (packages go to BUILD_DIR/deb-test)
# No pipefail: `producer | grep -q` must not fail when grep stops reading early.
set -u
build=${1:?usage: deb.sh BUILD_DIR}
build=$(cd "$build" && pwd)
if ! command -v dpkg-buildpackage >/dev/null || ! command -v dh >/dev/null; then
    echo "SKIP: dpkg-buildpackage or debhelper not installed (scripts/deps.sh installs them)"
    exit 0
fi
tmp=$(mktemp -d)
. "$(dirname "$0")/lib/report.bash" # ok, no, check, fails
# shellcheck source=lib/echo_examples.bash
source "$(dirname "$0")/lib/echo_examples.bash"
trap 'stop_echo_server; rm -rf "$tmp"' EXIT

out="$build/deb-test"
status_before=$(git -C "$src" status --porcelain 2>/dev/null)
"$src/scripts/build-deb.sh" "$out" >"$tmp/deb.log" 2>&1
rc=$?
sed 's/^/    /' "$tmp/deb.log"
check "scripts/build-deb.sh (dpkg-buildpackage + lintian without errors) exits 0" "[ $rc -eq 0 ]" ||
    exit 1
check "the source tree is left as it was (git status)" \
    "[ \"\$(git -C $src status --porcelain 2>/dev/null)\" = \"\$status_before\" ]"
pkgs="libquack1 libquack-dev libquack-transport1 libquack-transport-dev quack"
for p in $pkgs; do
    check "$p .deb built" "ls $out/${p}_*.deb >/dev/null 2>&1"
done
check "libquack1 ships a shlibs file for libquack.so.1" \
    "dpkg-deb -I $out/libquack1_*.deb shlibs | grep -q '^libquack 1 libquack1'"
check "libquack-transport1 ships a shlibs file for libquack-transport.so.1" \
    "dpkg-deb -I $out/libquack-transport1_*.deb shlibs | grep -q '^libquack-transport 1 libquack-transport1'"
check "libquack-dev depends on the same libquack1 and libquack-transport-dev (core headers)" \
    "dpkg-deb -f $out/libquack-dev_*.deb Depends | grep -q 'libquack1 (= ' && dpkg-deb -f $out/libquack-dev_*.deb Depends | grep -q 'libquack-transport-dev (= '"
check "libquack-transport-dev depends on libquack-transport1, not on libquack1" \
    "dpkg-deb -f $out/libquack-transport-dev_*.deb Depends | grep -q 'libquack-transport1 (= ' && ! dpkg-deb -f $out/libquack-transport-dev_*.deb Depends | grep -q 'libquack1'"
# What each package ships (regular files and symlinks, no directories).
for p in $pkgs; do
    dpkg-deb -c "$out/${p}"_*.deb | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./||' >"$tmp/$p.files"
done
files() { tr '\n' ' ' <"$tmp/$1.files"; }
check "libquack-transport-dev: core headers cert.h common.h quack.h, libquack-transport.a/.so, quack-transport.pc" \
    "[ \$(grep -c '^usr/include/quack/' $tmp/libquack-transport-dev.files) -eq 3 ] && grep -q 'include/quack/quack.h\$' $tmp/libquack-transport-dev.files && grep -q 'libquack-transport.a\$' $tmp/libquack-transport-dev.files && grep -q 'pkgconfig/quack-transport.pc\$' $tmp/libquack-transport-dev.files"
check "libquack-dev: the other headers (io.h, h3.h, ...), not the core ones" \
    "grep -q 'include/quack/io.h\$' $tmp/libquack-dev.files && ! grep -q 'include/quack/quack.h\$' $tmp/libquack-dev.files"
cat "$tmp"/*.files | grep -v '^usr/share/doc/' | sort | uniq -d >"$tmp/dups"
check "no file is shipped by two packages$( [ -s "$tmp/dups" ] && echo ": $(tr '\n' ' ' <"$tmp/dups")")" \
    "[ ! -s $tmp/dups ]"

root="$tmp/root"
for p in $pkgs; do
    dpkg-deb -x "$out/${p}"_*.deb "$root"
done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir="$root/usr/lib/$ma"
check "unpacked: libquack.so.1, quack.pc, headers, quack, quack.1.gz" \
    "[ -f $libdir/libquack.so.1 ] && [ -f $libdir/pkgconfig/quack.pc ] && [ -f $root/usr/include/quack/quack.h ] && [ -x $root/usr/bin/quack ] && [ -f $root/usr/share/man/man1/quack.1.gz ]"
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '; }
tneeded=$(needed "$libdir/libquack-transport.so.1")
check "libquack-transport.so.1 (SONAME $(readelf -d "$libdir/libquack-transport.so.1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')) needs only GnuTLS/nettle and libc: $tneeded" \
    "readelf -d $libdir/libquack-transport.so.1 | grep -q 'SONAME.*libquack-transport.so.1' && ! echo '$tneeded' | grep -qE 'libev|libcrypto|libnghttp3|libinih'"
export LD_LIBRARY_PATH="$libdir"
version=$(dpkg-deb -f "$out"/quack_*.deb Version)
check "unpacked quack version works (prints $version)" "$root/usr/bin/quack version | grep -q '^quack $version'"
check "unpacked quack --help works" "$root/usr/bin/quack --help | grep -q '^usage: quack COMMAND'"
check "man page from the package renders" \
    "MANWIDTH=80 man -l $root/usr/share/man/man1/quack.1.gz 2>/dev/null | grep -q '^SYNOPSIS'"

# quack.pc says prefix=/usr: the sysroot maps it into the unpacked root.
export PKG_CONFIG_PATH="$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
flags=$(pkg-config --cflags --libs quack 2>&1)
check "pkg-config through the sysroot: $flags" \
    "echo '$flags' | grep -q -- '-I$root/usr/include' && echo '$flags' | grep -q -- '-L$libdir -lquack'"
cp -r "$root/usr/share/doc/libquack-dev/examples" "$tmp/examples"
build_examples "$tmp/ex" "$libdir" "$tmp/examples"
run_echo "$tmp/ex"

# The transport packages alone: a root with libquack-transport1 and -dev only.
troot="$tmp/troot"
for p in libquack-transport1 libquack-transport-dev; do
    dpkg-deb -x "$out/${p}"_*.deb "$troot"
done
tlib="$troot/usr/lib/$ma"
export PKG_CONFIG_PATH="$tlib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$troot"
tflags=$(pkg-config --cflags --libs quack-transport 2>&1)
# shellcheck disable=SC2086 # word splitting of the pkg-config flags is meant
cc -std=c17 -D_DEFAULT_SOURCE -O2 -Wall -Werror "$src/examples/sansio_pair.c" -o "$tmp/sansio_pair" \
    $tflags >"$tmp/cc.log" 2>&1
check "examples/sansio_pair.c builds against the transport packages alone ($tflags)" "[ $? -eq 0 ]" ||
    cat "$tmp/cc.log"
head -c 1M /dev/urandom >"$tmp/t_in.bin"
LD_LIBRARY_PATH=$tlib timeout 60 "$tmp/sansio_pair" <"$tmp/t_in.bin" >"$tmp/t_out.bin" 2>/dev/null
rc=$?
a=$(sha256sum <"$tmp/t_in.bin" | cut -d' ' -f1)
c=$(sha256sum <"$tmp/t_out.bin" | cut -d' ' -f1)
check "sansio_pair on libquack-transport.so.1: exit $rc, 1 MiB SHA-256 ${a:0:16}... = ${c:0:16}..." \
    "[ $rc -eq 0 ] && [ '$a' = '$c' ] && LD_LIBRARY_PATH=$tlib ldd $tmp/sansio_pair | grep -q 'libquack-transport.so.1 => $tlib/'"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
