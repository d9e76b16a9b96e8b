#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `quack perf` flow-control options: --autotune, --window,
# --max-window, --budget, and the window/buffer lines of --stats.
# Usage: bash tests/cli/perf_flow.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: perf_flow.sh BUILD_DIR}
q="$build/quack"
# shellcheck source=lib/perf_server.bash
source "$(dirname "$0")/lib/perf_server.bash"
# "stats: rx window conn C B, stream S B (peak P B); rx buffered B B (peak Q B)"
peak_stream() { sed -n 's/^stats: rx window conn [0-9]* B, stream [0-9]* B (peak \([0-9]*\) B).*/\1/p' "$1"; }
conn_win() { sed -n 's/^stats: rx window conn \([0-9]*\) B.*/\1/p' "$1"; }

"$q" perf --help >"$tmp/help" 2>&1
check "--help lists the window options" \
    "grep -q -- '--autotune on|off' $tmp/help && grep -q -- '--max-window' $tmp/help && grep -q -- '--budget' $tmp/help"
"$q" perf client --connect 127.0.0.1:1 --insecure --autotune maybe >/dev/null 2>"$tmp/err"
check "--autotune maybe exits 2 and says on or off" "[ $? -eq 2 ] && grep -q 'on or off' $tmp/err"
"$q" perf client --connect 127.0.0.1:1 --insecure --window 1 >/dev/null 2>"$tmp/err"
check "--window 1 is refused (below 16K)" "[ $? -eq 2 ] && grep -q '16K' $tmp/err"

if start_server 127.0.0.1:0; then
    # Auto-tuned from 64 KiB: the client's (receiver's) stream window grows.
    # Through a 20 ms RTT relay, so the window is what limits (64 KiB per
    # 20 ms = 26 Mbit/s); on bare loopback the RTT is tens of microseconds,
    # the CPU limits, and whether the window "went fast" is a scheduling
    # coin flip (it failed 4 of 12 runs on a loaded 2-core machine).
    . "$(dirname "$0")/lib/ports.bash"
    pick_ports relay_port
    "$q" netem --listen "127.0.0.1:$relay_port" --to "$addr" --delay 10ms --duration 900s \
        >"$tmp/netem.out" 2>&1 &
    npid=$!
    wait_udp "$relay_port" || no "the relay did not come up"
    "$q" perf client --connect "127.0.0.1:$relay_port" --pin "$pin" --quiet --stats \
        --window 64K --max-window 8M --budget 64M --download-size 8M --upload-size 1K \
        >"$tmp/c.out" 2>"$tmp/c.err"
    check "auto-tuned run through a 20 ms RTT relay exits 0" "[ $? -eq 0 ]"
    kill "$npid" 2>/dev/null
    wait "$npid" 2>/dev/null
    cat "$tmp/c.out" "$tmp/c.err" >"$tmp/all"
    p=$(peak_stream "$tmp/all")
    check "stats print the windows and buffered bytes" "grep -q '^stats: rx window conn' $tmp/all"
    check "stream window grew from 64 KiB (peak $p)" "[ -n '$p' ] && [ '$p' -gt 65536 ] && [ '$p' -le 8388608 ]"
    # Fixed 64 KiB: no tuning at all.
    "$q" perf client --connect "$addr" --pin "$pin" --quiet --stats --window 64K \
        --autotune off --download-size 4M --upload-size 1K >"$tmp/c2.out" 2>"$tmp/c2.err"
    check "fixed-window run exits 0" "[ $? -eq 0 ]"
    cat "$tmp/c2.out" "$tmp/c2.err" >"$tmp/all2"
    p2=$(peak_stream "$tmp/all2")
    c2=$(conn_win "$tmp/all2")
    check "--autotune off never tunes (peak $p2, conn window $c2 = 4 x 64 KiB)" \
        "[ '$p2' = 0 ] && [ '$c2' = 262144 ]"
    stop_server
else
    no "server did not start"
fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
