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

# style FILE: sets s to the comment form of FILE's language, or to nothing
# (not source). No subshell and no process per file: tests/cli/licence.sh
# runs the check over every tracked file in make test.
style() {
    s=
    case "$1" in
    tests/fuzz/corpus/*) ;;
    *.c | *.h) s=c ;;
    *.go) s=slash ;;
    *.sh | *.bash | *.py | *.cmake | *.awk | *.gp | */CMakeLists.txt | CMakeLists.txt | \
        Makefile | */Makefile | debian/rules | .ci/run) s=hash ;;
    esac
}

# tagged FILE: one of its first three lines holds the identifier.
tagged() {
    local l1= l2= l3=
    { IFS= read -r l1 || :; IFS= read -r l2 || :; IFS= read -r l3 || :; } <"$1"
    [[ "$l1$l2$l3" == *'SPDX-License-Identifier:'* ]]
}

missing=0
while IFS= read -r f; do
    style "$f"
    [ -n "$s" ] && [ -f "$f" ] || continue
    tagged "$f" && continue
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
