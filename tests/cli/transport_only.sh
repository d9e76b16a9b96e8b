#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The transport-only build (cmake -DQK_TRANSPORT_ONLY=ON): libquack.so made
# of the sans-I/O core alone needs GnuTLS, nettle and the C library and
# nothing else (readelf -d: NEEDED is within libgnutls, libnettle,
# libhogweed, libc, libm and the dynamic loader, while the full library's
# NEEDED holds libev and libcrypto, so the check tells them apart); it
# exports exactly the functions of the headers it installs (common.h,
# quack.h, cert.h), each in the version node abi/libquack.nodes lists, its quack.pc asks for gnutls, nettle and hogweed only,
# and examples/sansio_pair.c, built against that installation with
# pkg-config, moves 2 MiB from a client to a server endpoint in one process
# (SHA-256 compared).
# Usage: transport_only.sh BUILD_DIR (the tree is built in BUILD_DIR/transport-only)
set -u
build=${1:?usage: transport_only.sh BUILD_DIR}
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/cli/lib/report.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
b=$build/transport-only

gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src" -B "$b" "${gen[@]}" -DQK_TRANSPORT_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
    -DQK_WERROR=ON >"$tmp/build.log" 2>&1 &&
    cmake --build "$b" -j "$(nproc)" --target quack quack_shared >>"$tmp/build.log" 2>&1
check "-DQK_TRANSPORT_ONLY=ON builds libquack.a and libquack.so (-Werror, -z defs)" "[ $? -eq 0 ]" || {
    tail -20 "$tmp/build.log"
    exit 1
}

allowed='^(libgnutls\.so\.[0-9]+|libnettle\.so\.[0-9]+|libhogweed\.so\.[0-9]+|libc\.so\.6|libm\.so\.6|ld-linux[-a-z0-9_.]*\.so\.[0-9]+)$'
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
needed "$b/libquack.so" >"$tmp/needed"
check "transport-only libquack.so NEEDS only GnuTLS/nettle and libc: $(tr '\n' ' ' <"$tmp/needed")" \
    "grep -q '^libgnutls' $tmp/needed && grep -q '^libc\.so' $tmp/needed && ! grep -vE '$allowed' $tmp/needed"
full=$(ls "$build"/libquack.so "$build"/install-test/libquack.so 2>/dev/null | head -1)
if [ -n "$full" ]; then
    needed "$full" >"$tmp/needed_full"
    check "the same check refuses the full library (${full#"$build"/}: $(grep -cvE "$allowed" "$tmp/needed_full") others, libev and libcrypto among them)" \
        "grep -q '^libev' $tmp/needed_full && grep -q '^libcrypto' $tmp/needed_full && grep -qvE '$allowed' $tmp/needed_full"
fi

p=$tmp/prefix
cmake --install "$b" --prefix "$p" >"$tmp/install.log" 2>&1
check "cmake --install exits 0" "[ $? -eq 0 ]" || cat "$tmp/install.log"
libdir=$(dirname "$(find "$p" -name libquack.so | head -1)")
check "installs common.h, quack.h and cert.h, no other header, no quack binary" \
    "[ \"\$(cd $p/include/quack && ls | tr '\n' ' ')\" = 'cert.h common.h quack.h ' ] && [ ! -e $p/bin/quack ]"
# (Names carry their version, name@@QUACK_1.0; the node itself is an absolute symbol.)
nm -D --defined-only "$libdir/libquack.so" | awk '$2 != "A" {print $NF}' | sed 's/@.*//' | sort >"$tmp/exported"
sed -n 's/^ *\(qk_[a-z0-9_]*\);$/\1/p' "$b/libquack.map" | sort >"$tmp/declared"
check "exports exactly the $(wc -l <"$tmp/declared") functions of those headers (no qk_udp_open, no qk_h3_new)" \
    "[ \$(wc -l <$tmp/declared) -gt 50 ] && diff -q $tmp/declared $tmp/exported >/dev/null && ! grep -qx -e qk_udp_open -e qk_h3_new $tmp/exported"
nm -D --defined-only "$libdir/libquack.so" | awk '$2 != "A" && $NF ~ /^qk_/ {print $NF}' | sort >"$tmp/syms"
python3 "$src/tests/abi/abixml.py" nodes "$src/abi/libquack.abi" "$src/abi/libquack.nodes" \
    "$tmp/syms" --subset >"$tmp/nodes.txt"
check "each carries the version node abi/libquack.nodes lists ($(sed 's/.*@@//' "$tmp/syms" | sort -u | tr '\n' ' '))" \
    "[ -s $tmp/syms ] && [ ! -s $tmp/nodes.txt ]" || sed 's/^/    /' "$tmp/nodes.txt"
export PKG_CONFIG_PATH=$libdir/pkgconfig
req=$(pkg-config --print-requires-private quack | awk '{print $1}' | tr '\n' ' ')
check "quack.pc Requires.private: $req" "[ '$req' = 'gnutls nettle hogweed ' ]"

make -s -C "$src/examples" transport O="$tmp" CFLAGS="-O2 -Werror" >"$tmp/make.log" 2>&1
check "examples/sansio_pair.c builds against the installed transport-only quack.pc" "[ $? -eq 0 ]" ||
    cat "$tmp/make.log"
head -c 2M /dev/urandom >"$tmp/in.bin"
LD_LIBRARY_PATH=$libdir timeout 60 "$tmp/sansio_pair" <"$tmp/in.bin" >"$tmp/out.bin" 2>"$tmp/pair.err"
rc=$?
a=$(sha256sum <"$tmp/in.bin" | cut -d' ' -f1)
c=$(sha256sum <"$tmp/out.bin" | cut -d' ' -f1)
check "sansio_pair over it: exits 0 ($rc), 2 MiB SHA-256 ${a:0:16}... = ${c:0:16}... ($(cat "$tmp/pair.err"))" \
    "[ $rc -eq 0 ] && [ '$a' = '$c' ] && LD_LIBRARY_PATH=$libdir ldd $tmp/sansio_pair | grep -q 'libquack.so.1 => $libdir/libquack.so.1'"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
