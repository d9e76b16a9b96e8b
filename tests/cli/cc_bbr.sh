#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `--cc bbr` end to end over real loopback sockets: a `quack perf` server and
# client both running BBR move 8 MiB byte-exact (every byte verified), and
# the option is accepted by perf, tunnel, get and serve (an unknown
# controller is refused with a message that names bbr).
# Usage: bash tests/cli/cc_bbr.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: cc_bbr.sh BUILD_DIR}
q="$build/quack"
# shellcheck source=lib/perf_server.bash
source "$(dirname "$0")/lib/perf_server.bash"

if start_server 127.0.0.1:0 --cc bbr; then
    "$q" perf client --connect "$addr" --pin "$pin" --cc bbr --download-size 8M \
        --upload-size 1M --streams 2 --stats >"$tmp/c.out" 2>"$tmp/c.err"
    rc=$?
    check "perf --cc bbr exits 0" "[ $rc -eq 0 ]"
    check "perf --cc bbr: 2 x 8 MiB downloaded, all verified" \
        "grep -q 'download 16777216 bytes (16777216 verified), upload 2097152 bytes' $tmp/c.out"
    stop_server
    check "perf server --cc bbr exits 0" "[ $? -eq 0 ]"
else
    no "perf server --cc bbr did not start: $(cat "$tmp/s.err")"
fi
for cmd in "perf client --connect 127.0.0.1:1" "tunnel client --connect 127.0.0.1:1"; do
    # shellcheck disable=SC2086
    "$q" $cmd --cc nope >/dev/null 2>"$tmp/err"
    check "$cmd --cc nope refused, message names bbr" "grep -q 'bbr' $tmp/err"
done
mkdir -p "$tmp/root"
for cmd in "get https://127.0.0.1:1/" "serve --root $tmp/root --listen 127.0.0.1:0"; do
    # shellcheck disable=SC2086
    "$q" $cmd --cc nope >/dev/null 2>"$tmp/err"
    check "${cmd%% *} --cc nope refused, message names bbr" "grep -q 'nope: use one of .*bbr' $tmp/err"
done
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
