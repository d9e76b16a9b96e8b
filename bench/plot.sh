#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Turn the CSV series of `quack sim FILE --out DIR` into DIR/sim.png.
# usage: bench/plot.sh DIR [TITLE]
set -euo pipefail
dir=${1:?usage: bench/plot.sh DIR [TITLE]}
title=${2:-$(basename "$dir")}
here=$(cd "$(dirname "$0")" && pwd)
if ! ls "$dir"/link_*.csv >/dev/null 2>&1; then
    echo "plot.sh: no link_*.csv in $dir; run 'quack sim FILE --out $dir' first" >&2
    exit 1
fi
gnuplot -e "dir='$dir'; title='$title'" "$here/plot/sim.gp"
echo "$dir/sim.png"
