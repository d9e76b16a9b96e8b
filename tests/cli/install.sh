#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cmake --install` (what `make install PREFIX=DIR` runs) into a scratch
# prefix, then everything a user of the installed library relies on: the
# files, the SONAME, an export list of exactly the public qk_* API, quack.pc
# (shared and --static), the man page, and examples/ built against it with
# pkg-config exchanging data (SHA-256 compared).
# Usage: bash tests/cli/install.sh BUILD_DIR
# Installs from $QK_INSTALL_BUILD (a configured build dir; `make test` passes
# build-check's gcc Release tree), or from its own Release tree (library +
# CLI, no tests) in BUILD_DIR/install-test, kept between runs.
# No pipefail: `producer | grep -q` must not fail when grep stops reading early.
set -u
build=${1:?usage: install.sh BUILD_DIR}
build=$(cd "$build" && pwd)
tmp=$(mktemp -d)
. "$(dirname "$0")/lib/report.bash" # ok, no, check, fails
# shellcheck source=lib/echo_examples.bash
source "$(dirname "$0")/lib/echo_examples.bash"
trap 'stop_echo_server; rm -rf "$tmp"' EXIT

# The tree to install from: $QK_INSTALL_BUILD when it is a configured build
# directory (`make test` passes build-check's gcc Release tree), else our own.
targets=(quack quack_shared quack_cli quack_man)
if [ -n "${QK_INSTALL_BUILD:-}" ] && [ -f "$QK_INSTALL_BUILD/CMakeCache.txt" ]; then
    b=$QK_INSTALL_BUILD
    cmake --build "$b" -j "$(nproc)" --target "${targets[@]}" >"$tmp/build.log" 2>&1
else
    b=$build/install-test
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S "$src" -B "$b" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DQK_BUILD_TESTS=OFF \
        -DQK_WERROR=ON >"$tmp/build.log" 2>&1 &&
        cmake --build "$b" -j "$(nproc)" --target "${targets[@]}" >>"$tmp/build.log" 2>&1
fi
if [ $? -ne 0 ]; then
    sed 's/^/    /' "$tmp/build.log" | tail -30
    no "Release build (library + CLI) in $b"
    exit 1
fi
ok "Release build (library, CLI, man page) in $b"

p="$tmp/prefix"
cmake --install "$b" --prefix "$p" >"$tmp/install.log" 2>&1
check "cmake --install --prefix exits 0" "[ $? -eq 0 ]" || cat "$tmp/install.log"
# The project's version (CMakeLists.txt) names the files: libquack.so.MAJOR.MINOR.PATCH.
ver=$(sed -n 's/^project(quack VERSION \([0-9.]*\) .*/\1/p' "$src/CMakeLists.txt")
major=${ver%%.*}
libdir=$(sed -n "s|^-- Installing: \(.*\)/libquack.so.$ver\$|\1|p" "$tmp/install.log")
check "libquack.so.$ver installed (in ${libdir#"$p"/})" "[ -f '$libdir/libquack.so.$ver' ]"
check "libquack.so.$major -> libquack.so.$ver, libquack.so -> libquack.so.$major" \
    "[ \"\$(readlink $libdir/libquack.so.$major)\" = libquack.so.$ver ] && [ \"\$(readlink $libdir/libquack.so)\" = libquack.so.$major ]"
check "libquack.a installed" "[ -f $libdir/libquack.a ]"
check "public headers under include/quack" \
    "[ -f $p/include/quack/quack.h ] && [ -f $p/include/quack/io.h ] && [ -f $p/include/quack/common.h ]"
check "no internal header installed" "! find $p/include -name '*.h' | grep -v '/include/quack/[a-z0-9_]*\.h$'"
check "bin/quack and share/man/man1/quack.1 installed" "[ -x $p/bin/quack ] && [ -f $p/share/man/man1/quack.1 ]"
check "SONAME is libquack.so.$major" \
    "readelf -d $libdir/libquack.so.$ver | grep -q 'SONAME.*\[libquack.so.$major\]'"

# Exports: only qk_*, exactly the functions/variables the public headers declare.
# (Names carry their version, name@@QUACK_1.0; the node itself is an absolute symbol.)
nm -D --defined-only "$libdir/libquack.so" | awk '$2 != "A" {print $NF}' | sed 's/@.*//' | sort >"$tmp/exported"
n=$(wc -l <"$tmp/exported")
check "nm -D exports only qk_* symbols ($n of them)" "[ $n -gt 50 ] && ! grep -v '^qk_' $tmp/exported"
sed -n 's/^ *\(qk_[a-z0-9_]*\);$/\1/p' "$b/libquack.map" | sort >"$tmp/declared"
check "every function declared in include/quack/*.h is exported" \
    "[ -s $tmp/declared ] && diff $tmp/declared $tmp/exported"
nm "$libdir/libquack.a" 2>/dev/null >"$tmp/static_syms"
check "internal qk_ functions are in libquack.a but not exported (qk_frame_encode_ack)" \
    "grep -q ' T qk_frame_encode_ack$' $tmp/static_syms && ! grep -qx qk_frame_encode_ack $tmp/exported"
ldd -r "$libdir/libquack.so" >"$tmp/ldd" 2>&1
check "libquack.so resolves every symbol from its NEEDED libraries (ldd -r)" \
    "grep -q 'libgnutls' $tmp/ldd && ! grep -q 'undefined symbol' $tmp/ldd"

# The CLI and its man page.
check "installed quack version prints $ver" "$p/bin/quack version | grep -q '^quack $ver'"
if command -v man >/dev/null; then
    MANWIDTH=80 man -l "$p/share/man/man1/quack.1" >"$tmp/man.txt" 2>/dev/null
    check "man page renders NAME, SYNOPSIS and one subsection per command" \
        "grep -q '^NAME' $tmp/man.txt && grep -q '^SYNOPSIS' $tmp/man.txt && [ \$(grep -c '^   quack [a-z]*$' $tmp/man.txt) -ge 7 ]"
    LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z \
        "$p/share/man/man1/quack.1" 2>"$tmp/man.warn" >/dev/null
    check "man page has no groff warnings (lintian's check)" "[ ! -s $tmp/man.warn ]" ||
        head -5 "$tmp/man.warn"
fi

# pkg-config, shared and static.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs quack 2>&1)
check "pkg-config --cflags --libs quack: $flags" \
    "echo '$flags' | grep -q -- '-I$p/include' && echo '$flags' | grep -q -- '-L$libdir -lquack'"
check "pkg-config --modversion quack = $ver" "[ \"\$(pkg-config --modversion quack)\" = $ver ]"
export LD_LIBRARY_PATH="$libdir"
build_examples "$tmp/ex" "$libdir"
# Static: libquack.a needs the modules of Requires.private plus Libs.private.
# (Not `pkg-config --static`: that also wants GnuTLS's own static
# dependencies, e.g. libunistring-dev, which Debian's libgnutls28-dev lacks.)
# shellcheck disable=SC2046
cc -std=c17 -D_DEFAULT_SOURCE -O2 $(pkg-config --cflags quack) -o "$tmp/ex/echo_client_static" \
    "$src/examples/echo_client.c" "$libdir/libquack.a" \
    $(pkg-config --libs $(pkg-config --print-requires-private quack)) \
    $(sed -n 's/^Libs.private: //p' "$libdir/pkgconfig/quack.pc") 2>"$tmp/static.err"
check "echo_client links from libquack.a + Requires.private + Libs.private" \
    "[ $? -eq 0 ] && ! readelf -d $tmp/ex/echo_client_static | grep -q libquack" || cat "$tmp/static.err"
run_echo "$tmp/ex"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
