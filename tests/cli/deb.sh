#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make deb` end to end: builds libquack0, libquack-dev and quack with
# dpkg-buildpackage (scripts/build-deb.sh: a copy of the tree, Release,
# nocheck; lintian must report no error), unpacks them with dpkg-deb -x into
# a scratch root (nothing is installed on the machine), runs the unpacked
# `quack`, and builds the examples shipped in libquack-dev against the
# unpacked quack.pc, then echoes data through them (SHA-256 compared).
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
for p in libquack0 libquack-dev quack; do
    check "$p .deb built" "ls $out/${p}_*.deb >/dev/null 2>&1"
done
check "libquack0 ships a shlibs file for libquack.so.0" \
    "dpkg-deb -I $out/libquack0_*.deb shlibs | grep -q '^libquack 0 libquack0'"
check "libquack-dev depends on the same libquack0 version" \
    "dpkg-deb -f $out/libquack-dev_*.deb Depends | grep -q 'libquack0 (= '"

root="$tmp/root"
for d in "$out"/libquack0_*.deb "$out"/libquack-dev_*.deb "$out"/quack_*.deb; do
    dpkg-deb -x "$d" "$root"
done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir="$root/usr/lib/$ma"
check "unpacked: libquack.so.0, quack.pc, headers, quack, quack.1.gz" \
    "[ -f $libdir/libquack.so.0 ] && [ -f $libdir/pkgconfig/quack.pc ] && [ -f $root/usr/include/quack/quack.h ] && [ -x $root/usr/bin/quack ] && [ -f $root/usr/share/man/man1/quack.1.gz ]"
export LD_LIBRARY_PATH="$libdir"
check "unpacked quack version works" "$root/usr/bin/quack version | grep -q '^quack 0.1.0'"
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

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
