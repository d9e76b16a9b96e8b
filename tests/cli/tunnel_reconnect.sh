#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `quack tunnel` survives what kills connections, end to
# end on loopback, every transfer checked by SHA-256 (tunnel_peer.py):
#  - a server killed (-KILL: no CONNECTION_CLOSE) and restarted mid-session:
#    the flow in flight waits for a resume and is reset when the restarted
#    server refuses the session (it does not know it), the client redials with backoff, a TCP
#    connection made while it redials waits in the backlog and succeeds
#    after the redial, and new flows succeed;
#  - a server that stays down longer than --hold: new TCP connections are
#    refused (reset) with a log line that says why;
#  - a client whose address changes (the `quack netem` relay in front of it
#    restarted: new source port, NAT rebinding) keeps its flow, no redial;
#  - --carrier tcp: a killed and restarted server is redialled too.
# Usage: tests/cli/tunnel_reconnect.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_reconnect.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port udp_port tcp_port relay_port tcp2_port

start_echo_peer "$echo_port"

start_server() { # start_server LOG: on the fixed UDP port, sets spid
    "$q" tunnel server --listen "127.0.0.1:$udp_port" --to "127.0.0.1:$echo_port" \
        >"$1" 2>&1 &
    spid=$!
    pids+=($spid)
    wait_line "$1" '^listening on'
}

# hold_flow PORT OUT: a flow that echoes a few bytes, then waits; prints
# "reset" or "eof" when the tunnel ends it.
hold_flow() {
    python3 - "$1" >"$2" 2>&1 <<'EOF' &
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(b"ping")
got = b""
while len(got) < 4:
    got += s.recv(4)
print("echoed", flush=True)
try:
    b = s.recv(10)
    print("eof" if not b else "data")
except ConnectionResetError:
    print("reset")
except socket.timeout:
    print("still open")
EOF
    hpid=$!
}

start_server "$tmp/s1.log" || no "server did not come up: $(cat "$tmp/s1.log")"
"$q" tunnel client --connect "127.0.0.1:$udp_port" --insecure --listen "127.0.0.1:$tcp_port" \
    --keep-alive 300ms --idle-timeout 1500ms --reconnect-max 1s --hold 3s \
    >"$tmp/c.out" 2>"$tmp/c.err" &
cpid=$!
pids+=($cpid)
wait_line "$tmp/c.out" '^tunnel: listening on' || no "client did not come up: $(cat "$tmp/c.err")"

r=$($peer roundtrip "$tcp_port" 1000000)
check "1 MB echo before the restart ($r)" "[ '${r%% *}' = ok ]"
hold_flow "$tcp_port" "$tmp/hold1"
wait_line "$tmp/hold1" echoed

kill -KILL "$spid"
wait "$spid" 2>/dev/null
wait_line "$tmp/c.err" 'connection lost; redialling' 50
check "the client notices the dead connection and redials ($(grep -m1 redialling "$tmp/c.err"))" \
    "grep -q 'redialling' $tmp/c.err"
# A TCP connection made while the client redials waits for the new connection.
$peer roundtrip "$tcp_port" 500000 >"$tmp/waiting" &
wpid=$!
sleep 0.5
start_server "$tmp/s2.log" || no "restarted server did not come up"
# Timed from the moment the new server listens (process start-up under ASan is
# not the client's doing): with --reconnect-max 1s the next dial is <= 1 s away;
# an uncapped backoff would be 2-4 s away by now. 3 s leaves 2 s for one
# handshake on loopback (tens of ms on a quiet machine).
t0=$(date +%s.%N)
wait_line "$tmp/c.err" 'reconnected' 50
t1=$(date +%s.%N)
check "the client reconnects to the restarted server ($(grep -m1 reconnected "$tmp/c.err"))" \
    "grep -q 'reconnected' $tmp/c.err"
dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
check "within the capped backoff: $dt s after the new server listens (--reconnect-max 1s)" \
    "awk -v d=$dt 'BEGIN { exit !(d < 3) }'"
# The flow waited for a resume; the restarted server does not know its session.
wait "$hpid"
check "the flow in flight is reset once the new server refuses the session ($(tail -1 "$tmp/hold1"))" \
    "[ \"\$(tail -1 $tmp/hold1)\" = reset ]"
wait "$wpid"
r=$(cat "$tmp/waiting")
check "a connection made while redialling waited and echoed intact ($r)" "[ '${r%% *}' = ok ]"
r=$($peer roundtrip "$tcp_port" 2000000)
check "2 MB echo after the restart ($r)" "[ '${r%% *}' = ok ]"
par=()
for i in 1 2 3 4; do
    $peer roundtrip "$tcp_port" $((300000 * i + i)) >"$tmp/par$i" &
    par+=($!)
done
wait "${par[@]}"
n_ok=$(cat "$tmp"/par* | grep -c '^ok')
check "4 concurrent flows after the restart echo intact ($n_ok of 4)" "[ $n_ok = 4 ]"
check "flows are logged with bytes, duration and reason" \
    "grep -q 'flow [0-9]* closed: done; tcp->tunnel [0-9]* bytes, tunnel->tcp [0-9]* bytes' $tmp/c.err"

# Down for longer than --hold (3 s): new connections are refused, with a log line.
kill -KILL "$spid"
wait "$spid" 2>/dev/null
wait_line "$tmp/c.err" 'refusing new TCP connections' 100
python3 - "$tcp_port" >"$tmp/refused" 2>&1 <<'EOF'
import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
    b = s.recv(10)
    print("eof" if not b else "data")
except ConnectionResetError:
    print("reset")
except socket.timeout:
    print("timeout")
EOF
check "after --hold a new connection is reset ($(cat "$tmp/refused"))" "grep -q '^reset' $tmp/refused"
check "and the refusal is logged ($(grep -m1 'refused a TCP' "$tmp/c.err"))" \
    "grep -q 'refused a TCP connection: no connection to the tunnel server' $tmp/c.err"
start_server "$tmp/s3.log"
n0=$(grep -c reconnected "$tmp/c.err")
reconnected_since() { [ "$(grep -c reconnected "$tmp/c.err")" -gt "$1" ]; }
wait_until 100 reconnected_since "$n0"
r=$($peer roundtrip "$tcp_port" 500000)
check "after the second restart flows work again ($r)" "[ '${r%% *}' = ok ]"
kill -TERM "$cpid"
wait "$cpid"
check "client exits 0 on SIGTERM" "[ $? -eq 0 ]"

# Address change: the client sits behind a `quack netem` relay that is
# restarted mid-transfer; the server sees a new source address.
"$q" netem --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$udp_port" --delay 5ms \
    --rate 50mbit --duration 900s >"$tmp/n1.log" 2>&1 &
npid=$!
pids+=($npid)
wait_udp "$relay_port" || no "the relay did not come up"
"$q" tunnel client --connect "127.0.0.1:$relay_port" --insecure --listen "127.0.0.1:$tcp2_port" \
    --keep-alive 300ms --idle-timeout 5s \
    >"$tmp/m.out" 2>"$tmp/m.err" &
mpid=$!
pids+=($mpid)
if wait_line "$tmp/m.out" '^tunnel: listening on'; then
    $peer roundtrip "$tcp2_port" 16000000 >"$tmp/mig" &
    rpid=$!
    sleep 1
    inflight=no
    kill -0 "$rpid" 2>/dev/null && inflight=yes
    kill -KILL "$npid"
    wait "$npid" 2>/dev/null
    "$q" netem --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$udp_port" --delay 5ms \
        --rate 50mbit --duration 900s >"$tmp/n2.log" 2>&1 &
    npid=$!
    pids+=($npid)
    wait "$rpid"
    r=$(cat "$tmp/mig")
    check "the transfer was in flight when the relay restarted ($inflight)" "[ $inflight = yes ]"
    check "16 MB echo across a client address change arrives intact ($r)" "[ '${r%% *}' = ok ]"
    check "no redial was needed" "! grep -q 'redialling' $tmp/m.err"
    kill -TERM "$mpid"
    wait "$mpid"
else
    no "client behind the relay did not come up: $(cat "$tmp/m.err")"
fi
# The same over --carrier tcp (yamux over TLS/TCP): the dead session is
# seen at once (the TCP connection ends), the client redials.
tserver() {
    "$q" tunnel server --carrier tcp --listen "127.0.0.1:$udp_port" --to "127.0.0.1:$echo_port" \
        >"$1" 2>&1 &
    spid=$!
    pids+=($spid)
    wait_line "$1" '^listening on'
}
tserver "$tmp/t1.log" || no "tcp-carrier server did not come up: $(cat "$tmp/t1.log")"
"$q" tunnel client --carrier tcp --connect "127.0.0.1:$udp_port" --insecure \
    --listen "127.0.0.1:$tcp_port" --reconnect-max 1s >"$tmp/tc.out" 2>"$tmp/tc.err" &
cpid=$!
pids+=($cpid)
if wait_line "$tmp/tc.out" '^tunnel: listening on'; then
    r=$($peer roundtrip "$tcp_port" 1000000)
    check "tcp carrier: 1 MB echo before the restart ($r)" "[ '${r%% *}' = ok ]"
    kill -KILL "$spid"
    wait "$spid" 2>/dev/null
    wait_line "$tmp/tc.err" 'redialling' 50
    $peer roundtrip "$tcp_port" 500000 >"$tmp/twaiting" &
    wpid=$!
    sleep 0.5
    tserver "$tmp/t2.log"
    wait_line "$tmp/tc.err" 'reconnected' 50
    check "tcp carrier: the client redials the restarted server ($(grep -m1 reconnected "$tmp/tc.err"))" \
        "grep -q 'reconnected' $tmp/tc.err"
    wait "$wpid"
    r=$(cat "$tmp/twaiting")
    check "tcp carrier: a connection made while redialling echoes intact ($r)" "[ '${r%% *}' = ok ]"
    r=$($peer roundtrip "$tcp_port" 1000000)
    check "tcp carrier: 1 MB echo after the restart ($r)" "[ '${r%% *}' = ok ]"
    kill -TERM "$cpid" "$spid"
    wait "$cpid" "$spid"
else
    no "tcp-carrier client did not come up: $(cat "$tmp/tc.err")"
fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
