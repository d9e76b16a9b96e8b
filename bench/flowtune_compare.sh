#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Old -> new table of bench/flowtune.sh's summary lines (the last line of each
# NAME.txt): last-half utilisation, peak stream / connection credit in BDP,
# peak bytes held behind gaps in BDP, packets lost.
# usage: bench/flowtune_compare.sh OLD_DIR NEW_DIR   (markdown on stdout)
set -euo pipefail
old=$1 new=$2
field() { tail -1 "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
held() { awk -v b="$(field "$1" bdp_bytes)" -v p="$(field "$1" peak_buffered)" 'BEGIN{printf "%.2f", p / b}'; }
echo "| run | last-half util | stream / conn credit (BDP) | held (BDP) | lost pkts |"
echo "|---|---|---|---|---|"
for f in "$new"/*.txt; do
    n=$(basename "$f" .txt)
    o=$old/$n.txt
    [ -f "$o" ] || continue
    echo "| $n | $(field "$o" last_half_util) → $(field "$f" last_half_util) |" \
        "$(field "$o" peak_stream_credit_bdp) / $(field "$o" peak_conn_credit_bdp) →" \
        "$(field "$f" peak_stream_credit_bdp) / $(field "$f" peak_conn_credit_bdp) |" \
        "$(held "$o") → $(held "$f") | $(field "$o" lost) → $(field "$f" lost) |"
done
