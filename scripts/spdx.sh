#!/usr/bin/env bash
# Puts the licence tag first in every tracked source file that lacks it:
#   /* SPDX-License-Identifier: MIT */   C sources and headers
#   // SPDX-License-Identifier: MIT      Go
#   # SPDX-License-Identifier: MIT       shell, Python, CMake, Makefiles, awk, gnuplot
# after the #! line when there is one. A file counts as tagged when one of its
# first three lines holds "SPDX-License-Identifier:". Idempotent.
# Usage: scripts/spdx.sh           tag every file that lacks it
#        scripts/spdx.sh --check   list the files that lack it; exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
tag='SPDX-License-Identifier: MIT'
check=false
case "${1:-}" in
--check) check=true ;;
"") ;;
*)
    echo "usage: scripts/spdx.sh [--check]" >&2
    exit 2
    ;;
esac

# style FILE -> the comment form of FILE's language, or nothing (not source).
style() {
    case "$1" in
    tests/fuzz/corpus/*) ;;
    *.c | *.h) echo c ;;
    *.go) echo slash ;;
    *.sh | *.bash | *.py | *.cmake | *.awk | *.gp | */CMakeLists.txt | CMakeLists.txt | \
        Makefile | */Makefile | debian/rules | .ci/run) echo hash ;;
    esac
}

missing=0
while IFS= read -r f; do
    s=$(style "$f")
    [ -n "$s" ] && [ -f "$f" ] || continue
    head -n 3 "$f" | grep -q 'SPDX-License-Identifier:' && continue
    missing=$((missing + 1))
    if $check; then
        echo "$f"
        continue
    fi
    case "$s" in
    c) line="/* $tag */" ;;
    slash) line="// $tag" ;;
    hash) line="# $tag" ;;
    esac
    tmp=$(mktemp)
    if head -n 1 "$f" | grep -q '^#!'; then
        { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$tmp"
    else
        { echo "$line"; cat "$f"; } >"$tmp"
    fi
    chmod --reference="$f" "$tmp"
    mv "$tmp" "$f"
done < <(git ls-files)

if $check; then
    [ "$missing" -eq 0 ] || echo "spdx.sh: $missing file(s) lack '$tag' (scripts/spdx.sh adds it)" >&2
    [ "$missing" -eq 0 ]
else
    echo "spdx.sh: tagged $missing file(s)"
fi
