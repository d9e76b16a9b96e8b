#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/cmd_tunnel.c apps/tunnel_dns.c src/tunnel/tcp_carrier.c
# `quack tunnel client` redials what it has not got yet, and over every
# carrier, end to end on loopback (echoes checked by SHA-256):
#  - the first dial failing (no server yet) is retried under --reconnect-max
#    with the redial backoff, over udp and tcp: the client comes up once the
#    server does, and echoes;
#  - a server key that does not match --pin still ends the client (exit 1):
#    retrying cannot fix it;
#  - --carrier dns redials like udp: a server killed (-KILL) and restarted
#    on the same port gets the client back, and flows work again.
# Usage: tests/cli/tunnel_redial.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_redial.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port srv_port tcp_port dns_port tcp2_port

start_echo_peer "$echo_port"

# first_dial CARRIER: the client starts before its server.
first_dial() {
    local carrier=$1
    "$q" tunnel client --carrier "$carrier" --connect "127.0.0.1:$srv_port" --insecure \
        --listen "127.0.0.1:$tcp_port" --reconnect-max 500ms >"$tmp/$carrier.out" \
        2>"$tmp/$carrier.err" &
    local cpid=$!
    pids+=($cpid)
    if ! wait_line "$tmp/$carrier.err" 'no connection to the server yet; redialling .* (attempt 2)'; then
        no "$carrier: the client does not retry its first dial: $(tail -3 "$tmp/$carrier.err")"
        return
    fi
    ok "$carrier: the first dial failed and is retried ($(grep -m1 'redialling' "$tmp/$carrier.err"))"
    "$q" tunnel server --carrier "$carrier" --listen "127.0.0.1:$srv_port" \
        --to "127.0.0.1:$echo_port" >"$tmp/$carrier.s" 2>&1 &
    local spid=$!
    pids+=($spid)
    wait_line "$tmp/$carrier.s" '^listening on' || no "$carrier: server did not start"
    if wait_line "$tmp/$carrier.out" '^tunnel: listening on' 100; then
        local r
        r=$($peer roundtrip "$tcp_port" 500000)
        check "$carrier: the client came up once the server did: 500 kB echo ($r)" "[ '${r%% *}' = ok ]"
    else
        no "$carrier: the client did not come up: $(tail -3 "$tmp/$carrier.err")"
    fi
    if [ "$carrier" = udp ]; then # a wrong pin is not retried
        timeout 30 "$q" tunnel client --connect "127.0.0.1:$srv_port" --pin "$(printf '%064d' 0)" \
            --listen 127.0.0.1:0 --reconnect-max 500ms >/dev/null 2>"$tmp/pin.err"
        local rc=$?
        check "a pin mismatch ends the client at once, exit 1 (rc $rc)" \
            "[ $rc -eq 1 ] && grep -q 'pin mismatch' $tmp/pin.err && ! grep -q redialling $tmp/pin.err"
    fi
    kill -TERM "$cpid" "$spid"
    wait "$cpid" "$spid"
}
first_dial udp
first_dial tcp

# --carrier dns: the client sends its queries straight to the server (the
# zone's authoritative server is its own resolver here).
dserver() {
    "$q" tunnel server --carrier dns --domain t.example --listen "127.0.0.1:$dns_port" \
        --to "127.0.0.1:$echo_port" >"$1" 2>&1 &
    dpid=$!
    pids+=($dpid)
    wait_line "$1" '^listening on'
}
dserver "$tmp/d1.log" || no "dns server did not start: $(cat "$tmp/d1.log")"
"$q" tunnel client --carrier dns --domain t.example --resolver "127.0.0.1:$dns_port" --insecure \
    --listen "127.0.0.1:$tcp2_port" --keep-alive 300ms --idle-timeout 2s --reconnect-max 1s \
    >"$tmp/dc.out" 2>"$tmp/dc.err" &
dcpid=$!
pids+=($dcpid)
if wait_line "$tmp/dc.out" '^tunnel: listening on' 200; then
    r=$($peer roundtrip "$tcp2_port" 20000)
    check "dns: 20 kB echo before the restart ($r)" "[ '${r%% *}' = ok ]"
    kill -KILL "$dpid"
    wait "$dpid" 2>/dev/null
    wait_line "$tmp/dc.err" 'connection lost; redialling' 150
    check "dns: the client notices and redials ($(grep -m1 'redialling' "$tmp/dc.err"))" \
        "grep -q 'connection lost; redialling' $tmp/dc.err"
    check "dns: the client is still running" "kill -0 $dcpid"
    dserver "$tmp/d2.log" || no "restarted dns server did not start"
    wait_line "$tmp/dc.err" 'reconnected' 300
    check "dns: the client reconnects to the restarted server ($(grep -m1 reconnected "$tmp/dc.err"))" \
        "grep -q reconnected $tmp/dc.err"
    r=$($peer roundtrip "$tcp2_port" 20000)
    check "dns: 20 kB echo after the restart ($r)" "[ '${r%% *}' = ok ]"
    kill -TERM "$dcpid" "$dpid"
    wait "$dcpid" "$dpid"
else
    no "dns client did not come up: $(cat "$tmp/dc.err")"
fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
