#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: docs/Doxyfile.in cmake/config_defaults.cmake tests/cli/lib/doc_coverage.py
# The API reference: every function, type, struct field, enum value and
# macro of include/quack/*.h is documented, by two judges: clang's AST
# (tests/cli/lib/doc_coverage.py, which must also flag a fixture header with
# an undocumented field) and Doxygen itself (the build's `docs` target, what
# `make docs` runs, with WARN_AS_ERROR: no warning at all). Every qk_config
# field's default reaches the reference from the one table in quack.h: the
# generated defaults page lists each field once, the struct's page shows a
# "Default:" per field, and the generator refuses a field without @default.
# Usage: docs.sh BUILD_DIR
set -u
build=${1:?usage: docs.sh BUILD_DIR}
build=$(cd "$build" && pwd)
cd "$(dirname "$0")/../.."
. tests/cli/lib/report.bash
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. clang's view: nothing undocumented, and the check can fail.
python3 tests/cli/lib/doc_coverage.py include include/quack/*.h >"$tmp/cov" 2>&1
check "clang AST: every public declaration and macro has a doc comment" \
    "[ \$? -eq 0 ] && [ ! -s $tmp/cov ]" || sed 's/^/    /' "$tmp/cov" | head -30
mkdir -p "$tmp/inc/quack"
printf '/** @file fixture. Contracts: ... `now` monotonic, pointers borrowed. Threads: one. */\n#include <stdint.h>\n/** A struct. */\ntypedef struct qk_fx {\n    uint8_t a; /**< documented */\n    uint8_t b;\n} qk_fx;\n#define QK_FX 1\n/** Does it. */\nint qk_fx_do(void);\n' \
    >"$tmp/inc/quack/fx.h"
python3 tests/cli/lib/doc_coverage.py "$tmp/inc" "$tmp/inc/quack/fx.h" >"$tmp/fx" 2>&1
check "the clang check flags an undocumented field, a macro and a function without error codes in a fixture" \
    "[ \$? -eq 1 ] && grep -q 'field b' $tmp/fx && grep -q 'macro QK_FX' $tmp/fx && grep -q 'qk_fx_do returns int' $tmp/fx && [ \$(wc -l <$tmp/fx) -eq 3 ]" ||
    cat "$tmp/fx"

# 2. The defaults table: one @default per field, or the generator stops.
tags=$(sed -n '/^typedef struct qk_config {/,/^} qk_config;/p' include/quack/quack.h | grep -c '@default{')
cmake -DHEADER=include/quack/quack.h -DOUT_INC="$tmp/ok.inc" -P cmake/config_defaults.cmake >"$tmp/gen.ok" 2>&1
fields=$(sed -n 's/.*config_defaults.cmake: \([0-9]*\) qk_config fields.*/\1/p' "$tmp/gen.ok")
check "qk_config: ${fields:-?} fields, $tags @default{} tags, the generator accepts them" \
    "[ '${fields:-0}' -gt 50 ] && [ '$fields' -eq $tags ]" || cat "$tmp/gen.ok"
sed '0,/@default{1452}/s/@default{1452}//' include/quack/quack.h >"$tmp/quack.h"
cmake -DHEADER="$tmp/quack.h" -DOUT_INC="$tmp/x.inc" -P cmake/config_defaults.cmake >"$tmp/gen.out" 2>&1
check "config_defaults.cmake refuses a field without @default" \
    "[ \$? -ne 0 ] && grep -q 'but $((tags - 1)) @default' $tmp/gen.out" || cat "$tmp/gen.out"

# 3. Doxygen: the docs target (make docs) with WARN_AS_ERROR.
if ! command -v doxygen >/dev/null; then
    no "doxygen is not installed: scripts/deps.sh installs it (Debian package doxygen)"
else
    rm -rf "$build/docs"
    cmake --build "$build" --target docs >"$tmp/docs.log" 2>&1
    rc=$?
    check "make docs (Doxygen $(doxygen --version), WARN_AS_ERROR) exits 0 with no warning" \
        "[ $rc -eq 0 ] && [ ! -s $build/docs/warnings.log ]" ||
        { tail -5 "$tmp/docs.log"; head -30 "$build/docs/warnings.log" 2>/dev/null; }
    html=$build/docs/html
    check "the reference has an index, the embedding guide as its main page and a page per header" \
        "[ -f $html/index.html ] && grep -q 'qk_endpoint_poll_event' $html/index.html && [ \$(ls $html/*_8h.html | wc -l) -ge 11 ]"
    page=$html/config_defaults.html
    rows=$(grep -o 'qk_config::[a-z0-9_]*' "${page:-/dev/null}" 2>/dev/null | sort -u | wc -l)
    check "the defaults page lists the $tags fields (${page##*/}: $rows)" "[ $rows -eq $tags ]"
    check "the defaults page shows idle_timeout_ns = 30 * QK_NS_PER_S" \
        "grep -A3 'idle_timeout_ns' '${page:-/dev/null}' | grep -q '30 \* QK_NS_PER_S'"
    spage=$(ls "$html"/structqk__config.html 2>/dev/null)
    n=$(grep -c '<dt>Default:</dt>' "${spage:-/dev/null}" 2>/dev/null)
    check "qk_config's page shows a Default: for each of its $tags fields ($n)" "[ '${n:-0}' -eq $tags ]"
fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
