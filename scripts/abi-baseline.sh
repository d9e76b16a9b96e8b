#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ABI baseline of libquack.so: what tests/cli/abi.sh compares every build
# against (docs/api.md "ABI").
#   scripts/abi-baseline.sh [BUILD_DIR]
#       builds libquack.so in BUILD_DIR (default build/release: RelWithDebInfo,
#       -O2 -g, the recipe below) and writes abi/libquack.abi (abidw XML) and
#       tests/abi/v<MAJOR>.<MINOR>/include/quack/*.h (the release's public
#       headers, which tests/cli/abi.sh builds old programs against). Run it
#       when a release is cut, or when a SONAME bump makes a new baseline.
#   scripts/abi-baseline.sh --dump BUILD_DIR OUT.abi
#       the same build and abidw flags, writing OUT.abi only (tests/cli/abi.sh).
# Needs abigail-tools (scripts/deps.sh).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dump_only=
if [ "${1:-}" = --dump ]; then
    dump_only=1
    build=${2:?usage: abi-baseline.sh --dump BUILD_DIR OUT.abi}
    out=${3:?usage: abi-baseline.sh --dump BUILD_DIR OUT.abi}
else
    build=${1:-$src/build/release}
    out=$src/abi/libquack.abi
fi
for t in abidw readelf; do
    command -v $t >/dev/null || {
        echo "abi-baseline: $t not found: install abigail-tools and binutils (scripts/deps.sh)" >&2
        exit 1
    }
done

# One recipe for the baseline and the check: gcc (the default cc), -O2 -g.
if [ ! -f "$build/CMakeCache.txt" ]; then
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S "$src" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQK_WERROR=ON \
        -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG" >/dev/null
fi
cmake --build "$build" -j "${QK_JOBS:-2}" --target quack_shared >/dev/null
lib=$(readlink -f "$build/libquack.so")
if ! readelf -S "$lib" | grep -q '\.debug_info'; then
    echo "abi-baseline: $lib has no debug info (abidw reads the types from DWARF):" \
        "use a RelWithDebInfo or Debug build" >&2
    exit 1
fi
# Types reachable from the public headers only; no paths or line numbers, so
# the file changes only when the ABI does.
mkdir -p "$(dirname "$out")"
abidw --headers-dir "$src/include/quack" --drop-private-types --no-corpus-path \
    --no-comp-dir-path --no-show-locs --type-id-style hash --out-file "$out" "$lib"
[ -n "$dump_only" ] && exit 0

version=$(sed -n 's/^project(quack VERSION \([0-9]*\)\.\([0-9]*\)\..*/\1.\2/p' "$src/CMakeLists.txt")
hdr=$src/tests/abi/v$version/include/quack
rm -rf "$hdr"
mkdir -p "$hdr"
cp "$src"/include/quack/*.h "$hdr"/
echo "abi-baseline: wrote ${out#"$src"/} ($(grep -c '<elf-symbol ' "$out") symbols," \
    "SONAME $(sed -n "s/.*soname='\([^']*\)'.*/\1/p" "$out" | head -1)) and ${hdr#"$src"/}/*.h"
