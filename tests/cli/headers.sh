#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every public header (include/quack/*.h) stands alone: a translation unit
# that includes only it compiles as C17 with gcc and clang and as C++17 with
# g++ and clang++, -Wall -Wextra -Wpedantic -Werror. In C++ every function it
# declares has C linkage: a TU taking the address of each one (names from the
# comment-stripped header) leaves only unmangled qk_* references (nm -u), and
# the same check flags a fixture header without extern "C". The headers hold
# no reference a reader of the installed files cannot follow (tracker issue
# numbers, the design notes, research seeds, source paths) and no field that
# is only for the test suite.
# Usage: headers.sh [BUILD_DIR] (unused: nothing is built)
set -u
cd "$(dirname "$0")/../.."
. tests/cli/lib/report.bash
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-Wall -Wextra -Wpedantic -Werror -Iinclude -c)

# fn_names HEADER: the qk_* functions HEADER declares (not function-pointer
# types or members; not macros, which the comment-stripping pass keeps as
# #define lines, continuation lines joined first, and grep skips).
fn_names() {
    sed -e ':a' -e '/\\$/{N;s/\\\n/ /;ba' -e '}' "$1" |
        gcc -fpreprocessed -dD -E -P -x c - 2>/dev/null | grep -v '^ *#' |
        grep -oE '(^|[^*a-zA-Z0-9_])qk_[a-z0-9_]+ *\(([^*]|$)' | grep -oE 'qk_[a-z0-9_]+' | sort -u
}

# c_linkage INCLUDE_LINE NAMES_FILE OUT: compile a C++ TU taking the address
# of every name; succeed when each is referenced unmangled (C linkage).
c_linkage() {
    local inc=$1 names=$2 out=$3
    {
        printf '%s\nusing qk_any_fn = void (*)();\nqk_any_fn qk_refs[] = {\n' "$inc"
        sed 's/.*/    reinterpret_cast<qk_any_fn>(\&&),/' "$names"
        printf '};\n'
    } >"$out.cc"
    g++ -std=c++17 -Iinclude -I"$tmp" -c "$out.cc" -o "$out.o" 2>"$out.err" || return 1
    nm -u "$out.o" | awk '{print $NF}' | grep 'qk_' | sort >"$out.syms"
    ! grep -q '^_Z' "$out.syms" && diff -q "$names" "$out.syms" >/dev/null
}

headers=(include/quack/*.h)
check "${#headers[@]} public headers found (>= 10)" "[ ${#headers[@]} -ge 10 ]"
for h in "${headers[@]}"; do
    n=$(basename "$h" .h)
    printf '#include <quack/%s.h>\n' "$n" >"$tmp/$n.c"
    cp "$tmp/$n.c" "$tmp/$n.cc"
    bad=""
    for cc in gcc clang; do
        $cc -std=c17 "${flags[@]}" "$tmp/$n.c" -o "$tmp/$n.$cc.o" 2>"$tmp/$n.$cc.err" ||
            bad="$bad $cc"
    done
    for cxx in g++ clang++; do
        $cxx -std=c++17 "${flags[@]}" "$tmp/$n.cc" -o "$tmp/$n.$cxx.o" 2>"$tmp/$n.$cxx.err" ||
            bad="$bad $cxx"
    done
    check "quack/$n.h alone: C17 (gcc, clang) and C++17 (g++, clang++) -Werror${bad:+: fails with$bad}" \
        "[ -z '$bad' ]" || cat "$tmp/$n".*.err | head -20
    fn_names "$h" >"$tmp/$n.names"
    k=$(wc -l <"$tmp/$n.names")
    if [ "$k" -gt 0 ]; then
        check "quack/$n.h: its $k functions have C linkage in C++" \
            "c_linkage '#include <quack/$n.h>' $tmp/$n.names $tmp/link_$n" ||
            head -5 "$tmp/link_$n.err" "$tmp/link_$n.syms" 2>/dev/null
    fi
done

# The linkage check can fail: a header without extern "C" is caught.
printf '#include <stdint.h>\nint qk_fixture_fn(uint8_t x);\n' >"$tmp/fixture.h"
fn_names "$tmp/fixture.h" >"$tmp/fixture.names"
check "the linkage check flags a header without extern \"C\"" \
    "[ \"\$(cat $tmp/fixture.names)\" = qk_fixture_fn ] && ! c_linkage '#include <fixture.h>' $tmp/fixture.names $tmp/link_fixture"

# Nothing internal: a reader of the installed headers cannot open the
# tracker, the design notes, the research seeds or the sources.
grep -nE 'issue [0-9]|DESIGN\.md|design principle|seeds/|seed [0-9]{3}|TEST ONLY|\bsrc/[a-z]' \
    "${headers[@]}" >"$tmp/internal" || true
check "no internal references or test-only fields in the public headers" "[ ! -s $tmp/internal ]" ||
    sed 's/^/    /' "$tmp/internal"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
