#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds quack the way packagers and downstream projects do: for each
# compiler and CMake build type, `CC=$cc cmake -S . -B DIR
# -DCMAKE_BUILD_TYPE=$type && cmake --build DIR`, and prints a table with the
# result, the number of compiler/linker warnings and the build time.
# Exits 1 when a build fails or any warning appears.
#
# usage: scripts/build-matrix.sh [--compilers "gcc clang"]
#          [--types "Debug Release RelWithDebInfo MinSizeRel"]
#          [--targets "quack quack_cli"] [--dir build/matrix] [--werror]
#          [--incremental] [--jobs N] [--markdown FILE]
#   --targets      build only these targets (default: everything, tests included)
#   --werror       configure with -DQK_WERROR=ON (warnings fail the build)
#   --incremental  keep DIR/<cc>-<type> between runs (default: start from an
#                  empty build directory, as a fresh clone would)
#   --markdown F   also write the table, with compiler versions, to F
set -uo pipefail

compilers="gcc clang"
types="Debug Release RelWithDebInfo MinSizeRel"
targets=""
dir=build/matrix
werror=OFF
fresh=1
jobs=$(nproc)
markdown=
while [ $# -gt 0 ]; do
  case $1 in
    --compilers) compilers=$2; shift ;;
    --types) types=$2; shift ;;
    --targets) targets=$2; shift ;;
    --dir) dir=$2; shift ;;
    --werror) werror=ON ;;
    --incremental) fresh=0 ;;
    --jobs) jobs=$2; shift ;;
    --markdown) markdown=$2; shift ;;
    -h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-matrix.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

src=$(cd "$(dirname "$0")/.." && pwd)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
build_args=(-j "$jobs")
[ -n "$targets" ] && build_args+=(--target $targets)

mkdir -p "$dir"
rows=()
status=0
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for cc in $compilers; do
  for type in $types; do
    b="$dir/$cc-$type"
    log="$dir/$cc-$type.log"
    [ "$fresh" = 1 ] && rm -rf "$b"
    t0=$(date +%s.%N)
    if CC=$cc cmake -S "$src" -B "$b" "${gen[@]}" -DCMAKE_BUILD_TYPE="$type" \
         -DQK_WERROR="$werror" >"$log" 2>&1 &&
       cmake --build "$b" "${build_args[@]}" >>"$log" 2>&1; then
      result=ok
    else
      result=FAILED
      status=1
    fi
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
    warnings=$(grep -c 'warning:' "$log")
    [ "$warnings" -gt 0 ] && status=1
    rows+=("$(printf '| %-5s | %-14s | %-6s | %8s | %7.1f |' "$cc" "$type" "$result" "$warnings" "$secs")")
    if [ "$result" != ok ] || [ "$warnings" -gt 0 ]; then
      echo "== $cc $type: $result, $warnings warning(s); log $log" >&2
      grep -E 'warning:|error:' "$log" | sort -u | head -20 >&2
    fi
  done
done

table() {
  echo "| CC    | build type     | result | warnings | seconds |"
  echo "|-------|----------------|--------|----------|---------|"
  printf '%s\n' "${rows[@]}"
}
table
if [ -n "$markdown" ]; then
  {
    echo "<!-- Written by scripts/build-matrix.sh --markdown; do not edit. -->"
    echo "Build matrix of $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo 'this tree')," \
      "$(date -u +%Y-%m-%d), $(nproc) cores, targets: ${targets:-all}," \
      "QK_WERROR=$werror, $([ "$fresh" = 1 ] && echo 'empty build directories' || echo 'incremental');" \
      "load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after (the seconds" \
      "depend on what else runs)."
    for cc in $compilers; do echo "$cc: \`$($cc --version | head -1)\`"; done | sed 's/$/  /'
    echo
    table
  } >"$markdown"
fi
exit $status
