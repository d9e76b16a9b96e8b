#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: src/tunnel/session.c apps/cmd_tunnel.c
# `quack tunnel server --session-max N`: the number of detached sessions
# (clients whose connection died, kept for a resume) is bounded, end to end
# on loopback:
#  - four clients each hold one echoed flow, then die one after the other
#    (SIGKILL, so no one closes anything): the server detaches each once its
#    idle timeout passes; with --session-max 2 it keeps two, evicts the two
#    that detached first (oldest first: their flows, 1 and 2, are reset with
#    a log line), and its --stats say sessions_detached=2 sessions_evicted=2
#    (without the bound: 4 and 0);
#  - a bad --session-max exits 2 naming the fix.
# Usage: tests/cli/tunnel_session_max.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_session_max.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port srv_port p1 p2 p3 p4

"$q" tunnel server --listen "127.0.0.1:$srv_port" --to "127.0.0.1:$echo_port" \
    --session-max 0 >/dev/null 2>"$tmp/e1"
rc=$?
check "--session-max 0 exits 2 naming the range ($(head -1 "$tmp/e1"))" \
    "[ $rc = 2 ] && grep -q 'session-max wants a count from 1' $tmp/e1"

start_echo_peer "$echo_port"
"$q" tunnel server --listen "127.0.0.1:$srv_port" --to "127.0.0.1:$echo_port" \
    --idle-timeout 1s --session-max 2 --stats >"$tmp/s.out" 2>"$tmp/s.err" &
spid=$!
pids+=($spid)
wait_line "$tmp/s.out" '^listening on' || no "the server did not come up: $(cat "$tmp/s.err")"

# hold PORT FILE: one flow through the client on PORT, echoed once, then held.
hold() {
    python3 - "$1" >"$2" 2>&1 <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(b"ping")
got = b""
while len(got) < 4:
    got += s.recv(4)
print("echoed", flush=True)
time.sleep(60)
PY
    pids+=($!)
}

k=0
for port in $p1 $p2 $p3 $p4; do
    k=$((k + 1))
    "$q" tunnel client --connect "127.0.0.1:$srv_port" --insecure --listen "127.0.0.1:$port" \
        --keep-alive 300ms --idle-timeout 1s >"$tmp/c$k.out" 2>"$tmp/c$k.err" &
    cpid[$k]=$!
    pids+=(${cpid[$k]})
    wait_line "$tmp/c$k.out" '^tunnel: listening on' || no "client $k did not come up"
    hold "$port" "$tmp/h$k"
    wait_line "$tmp/h$k" echoed || no "client $k: no echo"
    wait_line "$tmp/s.err" "flow $k opened" || no "the server did not log flow $k"
done
# field NAME: its value on the server's last stats line.
field() { grep '^stats:' "$tmp/s.err" | tail -1 | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
gone_sessions() { echo $(($(field sessions_detached) + $(field sessions_evicted))); }
for k in 1 2 3 4; do
    kill -KILL "${cpid[$k]}"
    wait "${cpid[$k]}" 2>/dev/null
    # detached once the server's idle timeout (1 s) ends the connection
    wait_until 100 eval "[ \$(gone_sessions) -ge $k ]" ||
        no "the server did not detach client $k's session"
done
sleep 1.2 # one more stats line
check "four clients died, --session-max 2: sessions_detached=$(field sessions_detached) sessions_evicted=$(field sessions_evicted)" \
    "[ '$(field sessions_detached)' = 2 ] && [ '$(field sessions_evicted)' = 2 ]"
check "the server logs each eviction ($(grep -c 'over 2 detached sessions' "$tmp/s.err") lines: $(grep -m1 'over 2 detached sessions' "$tmp/s.err"))" \
    "[ \$(grep -c 'over 2 detached sessions (--session-max): the oldest forgotten, its 1 flow' $tmp/s.err) = 2 ]"
evicted=$(sed -n 's/.*flow \([0-9]*\) closed: session evicted (--session-max).*/\1/p' "$tmp/s.err" | sort | tr '\n' ' ')
check "the oldest go first: flows 1 and 2 reset, 3 and 4 kept (reset: $evicted)" "[ '$evicted' = '1 2 ' ]"
kill -TERM "$spid"
wait "$spid"
rc=$?
check "SIGTERM: the server exits 0 ($rc)" "[ $rc = 0 ]"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
