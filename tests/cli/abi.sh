#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ABI of libquack.so against the baseline in the tree (docs/api.md "ABI"):
#  - SONAME libquack.so.<major>, every exported qk_* symbol in the version
#    node abi/libquack.nodes lists for it (readelf --dyn-syms), released ones
#    unmoved and new ones in nodes the baseline does not have (self-checked),
#    exactly the functions of the headers;
#  - abidiff (abigail-tools) of the library against abi/libquack.abi with the
#    policy's suppressions (abi/libquack.abignore: fields appended to the
#    size-tagged structs) and added functions allowed; any other change
#    fails (exit bits 4 or 8), and so does a changed enumerator value,
#    unless the SONAME major differs from the baseline's (then the baseline
#    is out of date: scripts/abi-baseline.sh writes a new one);
#  - self-check: the same comparison refuses the baseline with a field
#    inserted in the middle of qk_config, with a field appended to qk_datagram
#    (an array element), with qk_endpoint_new_sized removed, with an
#    enumerator renumbered, and accepts a field appended to qk_config;
#  - programs built against the previous release's headers
#    (tests/abi/v1.0/include) and run against this library:
#    examples/sansio_pair.c moves 1 MiB (SHA-256 compared), tests/abi/sizes.c
#    passes structs of older and newer sizes across the boundary.
# Usage: bash tests/cli/abi.sh BUILD_DIR. The library comes from
# $QK_ABI_BUILD (`make test` passes the release tree: RelWithDebInfo, -O2 -g)
# or from BUILD_DIR/abi-test (same recipe, library only, kept between runs).
# No pipefail: `producer | grep -q` must not fail when grep stops reading early.
set -u
build=${1:?usage: abi.sh BUILD_DIR}
build=$(cd "$build" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/cli/lib/report.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in abidw abidiff readelf python3 cc; do
    command -v $t >/dev/null || {
        no "$t not found: install abigail-tools (abidw, abidiff) and binutils (scripts/deps.sh)"
        exit 1
    }
done
base=$src/abi/libquack.abi
sup=$src/abi/libquack.abignore
b=${QK_ABI_BUILD:-$build/abi-test}

QK_JOBS=$(nproc) "$src/scripts/abi-baseline.sh" --dump "$b" "$tmp/new.abi" >"$tmp/dump.log" 2>&1
check "libquack.so built with debug info in $b and read by abidw" "[ $? -eq 0 ]" || {
    tail -20 "$tmp/dump.log"
    exit 1
}
lib=$(readlink -f "$b/libquack.so")
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
major=${soname##*.so.}
version=$(sed -n 's/^project(quack VERSION \([0-9]*\)\..*/\1/p' "$src/CMakeLists.txt")
check "SONAME $soname: libquack.so.<major> with the project's major version $version" \
    "[ '$soname' = libquack.so.$version ]"

# Every defined qk_ symbol, with its version: name@@QUACK_<major>.<minor>,
# the node abi/libquack.nodes gives it.
readelf --dyn-syms -W "$lib" | awk '$7 != "UND" && $8 ~ /^qk_/ {print $8}' | sort >"$tmp/syms"
n=$(wc -l <"$tmp/syms")
node="QUACK_$major.0"
nodes=$src/abi/libquack.nodes
python3 "$src/tests/abi/abixml.py" nodes "$base" "$nodes" "$tmp/syms" >"$tmp/nodes.txt"
check "all $n exported qk_* symbols carry the version node abi/libquack.nodes lists" \
    "[ $n -gt 100 ] && [ -s $tmp/syms ] && [ ! -s $tmp/nodes.txt ]" || sed 's/^/    /' "$tmp/nodes.txt"
echo "    nodes: $(sed 's/.*@@//' "$tmp/syms" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')"
sed 's/@.*//' "$tmp/syms" >"$tmp/names"
sed -n 's/^ *\(qk_[a-z0-9_]*\);$/\1/p' "$b/libquack.map" | sort >"$tmp/declared"
check "they are exactly the $(wc -l <"$tmp/declared") functions and variables of include/quack/*.h" \
    "diff -q $tmp/declared $tmp/names >/dev/null"

# The comparison: abidiff with the policy's suppressions, then enumerators.
abi_compare() { # OLD NEW: 0 when NEW is compatible with OLD
    abidiff --no-added-syms --suppr "$sup" "$1" "$2" >"$tmp/abidiff.txt" 2>&1
    local rc=$?
    python3 "$src/tests/abi/abixml.py" enums "$1" "$2" >>"$tmp/abidiff.txt" || rc=$((rc | 16))
    return $((rc & 28))
}
base_soname=$(sed -n "1s/.*soname='\([^']*\)'.*/\1/p" "$base")
if [ "${base_soname##*.so.}" != "$major" ]; then
    ok "SONAME major bumped ($base_soname -> $soname): incompatible changes allowed; the baseline is out of date, write the new one with scripts/abi-baseline.sh"
else
    abi_compare "$base" "$tmp/new.abi"
    rc=$?
    check "abidiff against abi/libquack.abi ($base_soname): no incompatible change (exit bits $rc)" \
        "[ $rc -eq 0 ]" || {
        sed 's/^/    /' "$tmp/abidiff.txt" | head -60
        echo "    an intended break needs the SONAME bumped (project VERSION major in CMakeLists.txt);"
        echo "    an intended compatible change (a new growable struct) goes in abi/libquack.abignore"
    }
    abidiff --stat "$base" "$tmp/new.abi" >"$tmp/stat.txt" 2>&1
    echo "    against the baseline: $(grep -i 'functions changes summary' "$tmp/stat.txt" || echo 'no change')"
fi

# Self-check: the comparison tells a break from growth.
selfcheck() { # WANT KIND NAME WHAT
    python3 "$src/tests/abi/abixml.py" mutate "$base" "$tmp/m.abi" "$2" "$3" || return 1
    abi_compare "$base" "$tmp/m.abi"
    local rc=$?
    if [ "$1" = pass ]; then
        check "self-check: $4 passes" "[ $rc -eq 0 ]"
    else
        check "self-check: $4 fails (exit bits $rc)" "[ $rc -ne 0 ]"
    fi
}
# A symbol added after the baseline must not land in one of its nodes.
cp "$tmp/syms" "$tmp/syms_new"
echo "qk_abi_selfcheck@@$node" >>"$tmp/syms_new"
{ cat "$nodes"; echo qk_abi_selfcheck; } >"$tmp/nodes_old"
python3 "$src/tests/abi/abixml.py" nodes "$base" "$tmp/nodes_old" "$tmp/syms_new" >/dev/null
check "self-check: a symbol the baseline lacks listed under $node fails (exit $?)" "[ $? -ne 0 ]"
{ cat "$tmp/syms"; echo "qk_abi_selfcheck@@QUACK_$major.99"; } >"$tmp/syms_new2"
{ cat "$nodes"; echo "[QUACK_$major.99]"; echo qk_abi_selfcheck; } >"$tmp/nodes_new"
python3 "$src/tests/abi/abixml.py" nodes "$base" "$tmp/nodes_new" "$tmp/syms_new2" >"$tmp/nodes_sc.txt"
check "self-check: the same symbol under a new node QUACK_$major.99 passes" "[ $? -eq 0 ]" ||
    sed 's/^/    /' "$tmp/nodes_sc.txt"
python3 "$src/tests/abi/abixml.py" nodes "$base" "$nodes" "$tmp/syms_new" >/dev/null
check "self-check: an exported symbol missing from abi/libquack.nodes fails" "[ $? -ne 0 ]"

selfcheck fail middle qk_config "a field inserted in the middle of qk_config"
selfcheck fail end qk_datagram "a field appended to qk_datagram (arrays of it cross the boundary)"
selfcheck fail remove qk_endpoint_new_sized "qk_endpoint_new_sized removed"
selfcheck fail enum QK_EV_CLOSED "QK_EV_CLOSED renumbered"
selfcheck pass end qk_config "a field appended to qk_config (size-tagged)"
selfcheck pass end qk_event "a field appended to qk_event (size-tagged)"
selfcheck pass end qk_yamux_config "a field appended to qk_yamux_config (size-tagged)"
selfcheck fail end qk_tunnel_carrier "a field appended to qk_tunnel_carrier (frozen: exported tables)"

# Programs of the previous release (its headers), run against this library.
old=$(ls -d "$src"/tests/abi/v*/include | sort -V | tail -1)
rel=$(basename "$(dirname "$old")")
libdir=$(dirname "$lib")
for p in examples/sansio_pair.c tests/abi/sizes.c; do
    cc -std=c17 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -O1 -g -I"$old" "$src/$p" \
        -o "$tmp/$(basename "$p" .c)" -L"$libdir" -lquack >>"$tmp/cc.log" 2>&1
    check "$p builds against the $rel headers (tests/abi/$rel/include)" "[ $? -eq 0 ]" ||
        cat "$tmp/cc.log"
done
check "the old program needs version node $node and loads this library" \
    "readelf -V $tmp/sizes | grep -q 'Name: $node' && LD_LIBRARY_PATH=$libdir ldd $tmp/sizes | grep -q '$soname => $libdir/'"
head -c 1M /dev/urandom >"$tmp/in.bin"
LD_LIBRARY_PATH=$libdir timeout 60 "$tmp/sansio_pair" <"$tmp/in.bin" >"$tmp/out.bin" 2>"$tmp/pair.err"
rc=$?
a=$(sha256sum <"$tmp/in.bin" | cut -d' ' -f1)
c=$(sha256sum <"$tmp/out.bin" | cut -d' ' -f1)
check "$rel sansio_pair on this library: exit $rc, 1 MiB SHA-256 ${a:0:16}... = ${c:0:16}..." \
    "[ $rc -eq 0 ] && [ '$a' = '$c' ]" || cat "$tmp/pair.err"
LD_LIBRARY_PATH=$libdir timeout 60 "$tmp/sizes" >"$tmp/sizes.out" 2>&1
rc=$?
sed 's/^/    /' "$tmp/sizes.out"
check "$rel tests/abi/sizes.c on this library: structs of older and newer sizes (exit $rc)" \
    "[ $rc -eq 0 ]"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
