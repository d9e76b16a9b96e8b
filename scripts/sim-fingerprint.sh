#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One SHA-256 per `quack sim` scenario in bench/scenarios/: of the printed
# table and of every CSV time series the run writes (--out), in name order.
# Two builds that print the same lines ran every scenario byte-identically:
# a refactoring that must not change behaviour is checked by running this
# before and after it and diffing the two outputs.
# Usage: sim-fingerprint.sh [QUACK_BINARY]   (default build/release/quack)
set -euo pipefail
cd "$(dirname "$0")/.."
quack=${1:-build/release/quack}
if [ ! -x "$quack" ]; then
  echo "sim-fingerprint: $quack is not an executable; build it first" \
       "(cmake --build build/release --target quack_cli) or name it" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in bench/scenarios/*.ini; do
  name=$(basename "$f" .ini)
  mkdir -p "$tmp/$name"
  "$quack" sim "$f" --out "$tmp/$name" >"$tmp/$name.out" 2>/dev/null
  h=$(cd "$tmp" && cat "$name.out" $(ls "$name" | sort | sed "s|^|$name/|") | sha256sum | cut -c1-16)
  echo "$h $name"
done
