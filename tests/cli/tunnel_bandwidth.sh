#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `quack tunnel --bandwidth RATE` (docs/tunnel.md): accepted by both ends,
# which then carry an echo byte-exact; a malformed rate, a rate without a
# rate-paced controller (--cc cubic) and a rate with --carrier tcp are
# refused with exit 2 and a message naming the fix. --help names bbr-lt as
# the default controller and says what each --cc name means. The rate's
# effect on a path is measured in the simulator (tests/sim/
# test_slow_bbr_lt_*.c, bench/cc.sh part 7). Usage: tests/cli/tunnel_bandwidth.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_bandwidth.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port tcp_port

"$q" tunnel --help >"$tmp/help"
check "--help: bbr-lt is the default" "grep -q 'bbr-lt (default)' $tmp/help"
check "--help: what bbr means" "grep -q 'bbr     BBRv3 as drafted' $tmp/help"
check "--help lists --bandwidth RATE" "grep -q -- '--bandwidth RATE' $tmp/help"

for mode in "server --listen 127.0.0.1:0 --to 127.0.0.1:1" \
    "client --connect 127.0.0.1:1 --insecure --listen 127.0.0.1:0"; do
    # shellcheck disable=SC2086
    "$q" tunnel $mode --bandwidth 50mbt >/dev/null 2>"$tmp/err"
    rc=$?
    check "${mode%% *} --bandwidth 50mbt exits 2 ($rc)" "[ $rc -eq 2 ]"
    check "${mode%% *}: the message shows the form ($(head -1 "$tmp/err"))" \
        "grep -q \"wants a rate .* like 50mbit or 1gbit .*not '50mbt'\" $tmp/err"
    # shellcheck disable=SC2086
    "$q" tunnel $mode --bandwidth 10 >/dev/null 2>"$tmp/err"
    check "${mode%% *} --bandwidth 10 (10 bit/s) exits 2" "[ $? -eq 2 ]"
    # shellcheck disable=SC2086
    "$q" tunnel $mode --cc cubic --bandwidth 50mbit >/dev/null 2>"$tmp/err"
    rc=$?
    check "${mode%% *} --cc cubic --bandwidth exits 2 ($(head -1 "$tmp/err"))" \
        "[ $rc -eq 2 ] && grep -q 'use it with --cc bbr-lt' $tmp/err"
done
"$q" tunnel server --listen 127.0.0.1:0 --to 127.0.0.1:1 --carrier tcp --bandwidth 50mbit \
    >/dev/null 2>"$tmp/err"
check "--carrier tcp --bandwidth exits 2" "[ $? -eq 2 ] && grep -q 'needs a QUIC carrier' $tmp/err"

start_echo_peer "$echo_port"
"$q" tunnel server --listen 127.0.0.1:0 --to "127.0.0.1:$echo_port" --bandwidth 200mbit \
    >"$tmp/s.out" 2>"$tmp/s.err" &
spid=$!
pids+=($spid)
wait_line "$tmp/s.out" '^listening on' || no "server --bandwidth did not come up: $(cat "$tmp/s.err")"
saddr=$(listen_addr "$tmp/s.out")
"$q" tunnel client --connect "$saddr" --insecure --listen "127.0.0.1:$tcp_port" \
    --bandwidth 200mbit >"$tmp/c.out" 2>"$tmp/c.err" &
cpid=$!
pids+=($cpid)
wait_line "$tmp/c.out" '^tunnel: listening on' || no "client --bandwidth did not come up"
r=$($peer roundtrip "$tcp_port" 2000000)
check "2 MB echoed byte-exact through a --bandwidth 200mbit tunnel ($r)" "[ '${r%% *}' = ok ]"
kill -TERM "$cpid" "$spid"
wait "$cpid"
check "client exit 0 on SIGTERM" "[ $? -eq 0 ]"
wait "$spid"
check "server exit 0 on SIGTERM" "[ $? -eq 0 ]"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
