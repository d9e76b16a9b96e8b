#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages libquack1, libquack-dev, libquack-transport1,
# libquack-transport-dev and quack with
# dpkg-buildpackage from a copy of the source tree (so the tree itself stays
# clean and the .debs do not land in its parent directory), then runs lintian.
# usage: scripts/build-deb.sh [OUTDIR]   (default build/deb)
# OUTDIR receives the .debs, the .changes/.buildinfo, build.log and
# lintian.txt. Exits non-zero when the build fails or lintian reports an
# error; warnings are listed in lintian.txt (and on stdout).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$src/build/deb}" && cd "${1:-$src/build/deb}" && pwd)
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
work="$out/src"
rm -rf "$work" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$work/quack-$version"

# The files of the work tree (tracked + untracked, not ignored), or, outside
# git, everything but build/.
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
    xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
    tar --null -T - -cf -) | tar -xf - -C "$work/quack-$version"
else
  tar -C "$src" --exclude=./build --exclude=./.git -cf - . | tar -xf - -C "$work/quack-$version"
fi

echo "build-deb: dpkg-buildpackage -us -uc -b in $work/quack-$version (log: $out/build.log)"
if ! (cd "$work/quack-$version" &&
  DEB_BUILD_OPTIONS="nocheck parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
  tail -40 "$out/build.log" >&2
  echo "build-deb: dpkg-buildpackage failed" >&2
  exit 1
fi
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
rm -rf "$work"
ls -1 "$out"/*.deb

if command -v lintian >/dev/null; then
  rc=0
  lintian --fail-on error --display-info "$out"/*.changes >"$out/lintian.txt" 2>&1 || rc=$?
  echo "build-deb: lintian: $(grep -c '^E:' "$out/lintian.txt") error(s)," \
    "$(grep -c '^W:' "$out/lintian.txt") warning(s), $(grep -c '^I:' "$out/lintian.txt") info"
  grep -E '^(E|W):' "$out/lintian.txt" || true
  [ $rc -eq 0 ] || { echo "build-deb: lintian reports errors" >&2; exit 1; }
else
  echo "build-deb: lintian not installed: not checked"
fi
