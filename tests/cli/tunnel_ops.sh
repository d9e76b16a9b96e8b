#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `quack tunnel` operations: one log line per flow opened
# and closed (bytes each way, duration, reason), --stats once per second,
# --log FILE reopened on SIGHUP (logrotate's move-then-HUP), and an exit
# code per failure class (1 connection, 2 usage, 4 local resource; 3 access
# denied is in tunnel_auth.sh). Usage: tests/cli/tunnel_ops.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_ops.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port tcp_port

"$q" tunnel --help >"$tmp/help"
check "--help lists the exit codes" "grep -q '3 access denied' $tmp/help && grep -q '4 a local' $tmp/help"
"$q" tunnel server --listen 127.0.0.1:0 --to 127.0.0.1:1 --bogus >/dev/null 2>&1
check "an unknown option exits 2" "[ $? -eq 2 ]"

start_echo_peer "$echo_port"
"$q" tunnel server --listen 127.0.0.1:0 --to "127.0.0.1:$echo_port" --stats --log "$tmp/s.log" \
    >"$tmp/s.out" &
spid=$!
pids+=($spid)
wait_line "$tmp/s.out" '^listening on' || no "server did not come up"
saddr=$(listen_addr "$tmp/s.out")
"$q" tunnel client --connect "$saddr" --insecure --listen "127.0.0.1:$tcp_port" \
    >"$tmp/c.out" 2>"$tmp/c.err" &
cpid=$!
pids+=($cpid)
wait_line "$tmp/c.out" '^tunnel: listening on' || no "client did not come up"
r=$($peer roundtrip "$tcp_port" 300000)
check "an echo through the tunnel ($r)" "[ '${r%% *}' = ok ]"
sleep 1.2
check "the server logs the flow opening ($(grep -m1 'opened' "$tmp/s.log"))" \
    "grep -q 'flow 1 opened on stream 4' $tmp/s.log" # stream 0: the session's control stream
check "and its end with bytes each way, duration, reason ($(grep -m1 'flow 1 closed' "$tmp/s.log"))" \
    "grep -q 'flow 1 closed: done; tcp->tunnel 300000 bytes, tunnel->tcp 300000 bytes, [0-9.]* s' $tmp/s.log"
check "the client logs it too" "grep -q 'flow 1 closed: done; tcp->tunnel 300000 bytes' $tmp/c.err"
n=$(grep -c '^stats: t=' "$tmp/s.log")
check "--stats writes a line per second ($n so far)" "[ $n -ge 1 ]"
check "the stats line counts the flow's bytes" \
    "grep -q 'flows_opened=1 .*tcp_to_tunnel_bytes=300000 tunnel_to_tcp_bytes=300000' $tmp/s.log"
mv "$tmp/s.log" "$tmp/s.log.1"
kill -HUP "$spid"
wait_line "$tmp/s.log" 'log reopened'
check "SIGHUP reopens --log (a new file after the move)" "grep -q 'log reopened (SIGHUP)' $tmp/s.log"
check "the server survives SIGHUP" "kill -0 $spid"
kill -TERM "$cpid" "$spid"
wait "$cpid"
check "client exit 0 on SIGTERM" "[ $? -eq 0 ]"
wait "$spid"

# Local resource: the TCP listen address is taken (the echo peer has it).
"$q" tunnel server --listen 127.0.0.1:0 --to "127.0.0.1:$echo_port" >"$tmp/s2.out" 2>/dev/null &
spid=$!
pids+=($spid)
wait_line "$tmp/s2.out" '^listening on'
saddr=$(listen_addr "$tmp/s2.out")
"$q" tunnel client --connect "$saddr" --insecure --listen "127.0.0.1:$echo_port" \
    >/dev/null 2>"$tmp/busy.err"
rc=$?
check "a TCP listen address in use exits 4 ($(head -c 100 "$tmp/busy.err"))" \
    "[ $rc -eq 4 ] && grep -q 'cannot listen' $tmp/busy.err"
kill -TERM "$spid"
wait "$spid"
# Connection: nobody answers (--reconnect-max 0: no retry of the first dial).
timeout 30 "$q" tunnel client --connect 127.0.0.1:9 --insecure --listen 127.0.0.1:0 \
    --idle-timeout 1s --keep-alive 0 --reconnect-max 0 >/dev/null 2>"$tmp/none.err"
rc=$?
check "no server exits 1 ($(head -c 100 "$tmp/none.err"))" "[ $rc -eq 1 ]"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
