#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/cmd_media.c
# quack media through quack netem with Wi-Fi-like suspensions (50 Mbit/s,
# 2 ms each way, three 200 ms suspensions of both directions): on streams
# and on DATAGRAM frames, with the capped bypass, every flow's frames arrive
# (the server's received count equals the client's sent count, and the count
# is what --duration implies) and the server checks every body byte and
# closes cleanly. Counts, not timings. Usage: media.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: media.sh BUILD_DIR}
quack=$build/quack
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib/harness.bash
. "$here/lib/harness.bash"
pick_ports p0 p1 p2 p3 p4 p5
base=$p0

# run NAME PORT CLIENT_OPTS...: server (--once) behind netem, client through it
run() {
    local name=$1 port=$2
    shift 2
    "$quack" media server --listen 127.0.0.1:$port --once >"$tmp/$name.srv" 2>&1 &
    local spid=$!
    pids+=($spid)
    "$quack" netem --listen 127.0.0.1:$((port + 1)) --to 127.0.0.1:$port --rate 50mbit \
        --delay 2ms --suspend-start 1s --suspend-period 1s --suspend 200ms --suspend-count 3 \
        --duration 900s >/dev/null 2>&1 &
    pids+=($!)
    wait_udp "$port" && wait_udp $((port + 1)) || no "$name: the server or the relay did not come up"
    local rc=0
    timeout 40 "$quack" media client --connect 127.0.0.1:$((port + 1)) --insecure --duration 4 \
        "$@" >"$tmp/$name.cli" 2>&1 || rc=$?
    check "$name: client exits 0 (server's table and clean close)" "[ $rc = 0 ]"
    rc=0
    wait $spid || rc=$?
    check "$name: server exits 0 (no corrupt frame)" "[ $rc = 0 ]"
    cat "$tmp/$name.srv" "$tmp/$name.cli"
    # 4 s: audio 200 frames (20 ms), LD video 120-121 (30 fps), HD video 240-241 (60 fps)
    for f in audio:200:200 ld-video:120:121 hd-video:240:241; do
        IFS=: read -r flow lo hi <<<"$f"
        local recv sent
        recv=$(awk -v f="$flow" '$1 == f { split($3, a, "/"); print a[1] }' "$tmp/$name.srv")
        sent=$(awk -v f="$flow" '$1 == f && $2 == "sent" { print $3 }' "$tmp/$name.cli")
        check "$name: $flow received $recv = sent $sent, in [$lo, $hi]" \
            "[ -n '$recv' ] && [ '$recv' = '$sent' ] && [ $recv -ge $lo ] && [ $recv -le $hi ]"
    done
    check "$name: no path-failed event" "! grep -q 'path failed' '$tmp/$name.cli'"
}

run streams $base
run datagrams $((base + 2)) --datagrams
run streams-nobypass $((base + 4)) --bypass off

# Usage errors are named and exit 2.
rc=0
"$quack" media client --connect 127.0.0.1:1 2>"$tmp/err" || rc=$?
check "client without --pin/--insecure: exit 2 naming it" "[ $rc = 2 ] && grep -q -- --insecure '$tmp/err'"
rc=0
"$quack" media client --connect 127.0.0.1:1 --insecure --bypass sometimes 2>"$tmp/err" || rc=$?
check "bad --bypass: exit 2 naming it" "[ $rc = 2 ] && grep -q -- --bypass '$tmp/err'"
"$quack" media --help | grep CLOCK_MONOTONIC >/dev/null && ok "--help explains the clock" || no "--help"

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "media: all checks passed"
