#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/cmd_tunnel.c apps/cli_identity.c src/tunnel/tcp_carrier.c
# A `quack tunnel server` that stops and restarts cleanly, end to end on
# loopback (echoes checked by SHA-256):
#  - SIGTERM closes EVERY client's connection with a reason: two clients
#    (pinned) each log "closed by the peer: server shutting down (SIGTERM)"
#    and redial at once (the log line says so; the idle timeout is the
#    default 30 s, so it is not what they noticed); a flow each held is
#    reset;
#  - restarted with the same --state-dir the server has the same pin, and
#    both clients reconnect and echo with no operator action;
#  - the same over --carrier tcp: the client logs the server's GoAway and
#    redials at once; restarted, same pin, reconnected, echo;
#  (quack keygen and the state directory's errors: tests/cli/tunnel_keygen.sh)
# Usage: tests/cli/tunnel_restart.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_restart.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port udp_port tcp1_port tcp2_port tcp3_port

start_echo_peer "$echo_port"

# server LOG [OPTIONS...]: on the fixed port with --state-dir $tmp/sd; sets spid.
server() {
    local log=$1
    shift
    "$q" tunnel server --listen "127.0.0.1:$udp_port" --to "127.0.0.1:$echo_port" \
        --state-dir "$tmp/sd" "$@" >"$log" 2>&1 &
    spid=$!
    pids+=($spid)
    wait_line "$log" '^listening on'
}

# hold_flow PORT OUT: a flow that echoes a few bytes, then waits; prints
# "reset" or "eof" when the tunnel ends it (bounded by a 60 s timeout).
hold_flow() {
    python3 - "$1" >"$2" 2>&1 <<'EOF' &
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
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
    hpids+=($!)
}

# client N PIN [OPTIONS...]: tunnel client N on tcpN_port; logs cN.out / cN.err.
client() {
    local n=$1 pin=$2 port_var="tcp$1_port"
    shift 2
    "$q" tunnel client --connect "127.0.0.1:$udp_port" --pin "$pin" \
        --listen "127.0.0.1:${!port_var}" --reconnect-max 1s "$@" >"$tmp/c$n.out" 2>"$tmp/c$n.err" &
    cpids+=($!)
    pids+=($!)
    wait_line "$tmp/c$n.out" '^tunnel: listening on'
}

server "$tmp/s1.log" || no "server did not start: $(cat "$tmp/s1.log")"
pin1=$(listen_pin "$tmp/s1.log")
check "the first start makes a key in --state-dir" \
    "[ -s $tmp/sd/key.pem ] && [ -s $tmp/sd/cert.pem ] && grep -q 'made a new key' $tmp/s1.log"
cpids=() hpids=()
client 1 "$pin1" || no "client 1 did not come up: $(cat "$tmp/c1.err")"
client 2 "$pin1" || no "client 2 did not come up: $(cat "$tmp/c2.err")"
for n in 1 2; do
    port_var="tcp${n}_port"
    r=$($peer roundtrip "${!port_var}" 300000)
    check "client $n: 300 kB echo before the stop ($r)" "[ '${r%% *}' = ok ]"
    hold_flow "${!port_var}" "$tmp/hold$n"
    wait_line "$tmp/hold$n" echoed
done
kill -TERM "$spid"
wait "$spid"
check "the server exits 0 on SIGTERM" "[ $? -eq 0 ]"
for n in 1 2; do
    wait_line "$tmp/c$n.err" 'redialling .* at once' 100
    check "client $n logs the server's reason ($(grep -m1 'closed by the peer' "$tmp/c$n.err"))" \
        "grep -q 'connection closed by the peer: server shutting down (SIGTERM)' $tmp/c$n.err"
    check "client $n redials at once ($(grep -m1 'at once' "$tmp/c$n.err"))" \
        "grep -q 'the server closed the connection; redialling .* at once' $tmp/c$n.err"
    check "client $n did not wait for its idle timeout" "! grep -q 'idle' $tmp/c$n.err"
done
wait "${hpids[@]}"
check "the flows the old server held are reset ($(tail -1 "$tmp/hold1"), $(tail -1 "$tmp/hold2"))" \
    "[ \"\$(tail -1 $tmp/hold1)\" = reset ] && [ \"\$(tail -1 $tmp/hold2)\" = reset ]"

server "$tmp/s2.log" || no "restarted server did not start: $(cat "$tmp/s2.log")"
pin2=$(listen_pin "$tmp/s2.log")
check "restarted with the same --state-dir: the same pin ($pin2)" "[ -n '$pin1' ] && [ '$pin1' = '$pin2' ]"
check "and no new key was made" "! grep -q 'made a new key' $tmp/s2.log"
for n in 1 2; do
    port_var="tcp${n}_port"
    wait_line "$tmp/c$n.err" 'reconnected' 100
    check "client $n reconnects by itself ($(grep -m1 reconnected "$tmp/c$n.err"))" \
        "grep -q reconnected $tmp/c$n.err"
    r=$($peer roundtrip "${!port_var}" 300000)
    check "client $n: 300 kB echo after the restart ($r)" "[ '${r%% *}' = ok ]"
done
kill -TERM "${cpids[@]}" "$spid"
wait "${cpids[@]}" "$spid"

# --carrier tcp: GoAway + TLS close on SIGTERM.
cpids=()
server "$tmp/t1.log" --carrier tcp || no "tcp-carrier server did not start: $(cat "$tmp/t1.log")"
tpin=$(listen_pin "$tmp/t1.log")
check "tcp carrier: the same key as the udp server had ($tpin)" "[ '$tpin' = '$pin1' ]"
client 3 "$tpin" --carrier tcp || no "tcp-carrier client did not come up: $(cat "$tmp/c3.err")"
r=$($peer roundtrip "$tcp3_port" 300000)
check "tcp carrier: 300 kB echo before the stop ($r)" "[ '${r%% *}' = ok ]"
kill -TERM "$spid"
wait "$spid"
wait_line "$tmp/c3.err" 'redialling .* at once' 100
check "tcp carrier: the client logs the server's GoAway ($(grep -m1 GoAway "$tmp/c3.err"))" \
    "grep -q 'connection closed: the server sent GoAway (normal' $tmp/c3.err"
check "tcp carrier: and redials at once" \
    "grep -q 'the server closed the connection; redialling .* at once' $tmp/c3.err"
server "$tmp/t2.log" --carrier tcp || no "restarted tcp-carrier server did not start"
check "tcp carrier: restarted, the same pin" "[ '$(listen_pin "$tmp/t2.log")' = '$tpin' ]"
wait_line "$tmp/c3.err" 'reconnected' 100
check "tcp carrier: the client reconnects ($(grep -m1 reconnected "$tmp/c3.err"))" \
    "grep -q reconnected $tmp/c3.err"
r=$($peer roundtrip "$tcp3_port" 300000)
check "tcp carrier: 300 kB echo after the restart ($r)" "[ '${r%% *}' = ok ]"
kill -TERM "${cpids[@]}" "$spid"
wait "${cpids[@]}" "$spid"

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
