#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: src/tunnel/tunnel.c src/tunnel/carriers.c
# `quack tunnel`: TCP over QUIC over UDP, end to end on loopback. Every
# transfer is checked by SHA-256 (tests/cli/tunnel_peer.py): a 32 MB echo
# round trip, 8 concurrent connections, a server that speaks first, empty and
# 1-byte connections, a refused target (the client's connection is reset),
# a 4 MB round trip through `quack netem` with 20 ms RTT and 1% loss each
# way, and small downloads that do not wait behind a bulk one. Usage: tests/cli/tunnel.sh BUILD_DIR
# TUNNEL_CARRIER=tcp runs the same checks over yamux/TLS/TCP
# (tests/cli/tunnel_tcp.sh); the lossy leg then goes through
# `quack netem --tcp` (a delay line; TCP itself repairs loss).
set -uo pipefail
build=${1:?usage: tunnel.sh BUILD_DIR}
carrier=${TUNNEL_CARRIER:-udp}
echo "# carrier: $carrier"
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port banner_port dead_port tcp_port relay_port tcp2_port sized_port

"$q" tunnel --help >"$tmp/help" 2>&1
check "--help exits 0 and explains both sides" \
    "[ $? -eq 0 ] && grep -q -- '--to HOST:PORT' $tmp/help && grep -q -- '--pin' $tmp/help"
"$q" tunnel client --connect 127.0.0.1:1 --listen 127.0.0.1:0 >/dev/null 2>"$tmp/err"
check "client without --pin/--insecure exits 2" "[ $? -eq 2 ] && grep -q -- '--pin' $tmp/err"
"$q" tunnel server --listen 127.0.0.1:0 >/dev/null 2>"$tmp/err"
check "server without --to exits 2 and says so" "[ $? -eq 2 ] && grep -q -- '--to' $tmp/err"
"$q" tunnel client --connect 127.0.0.1:1 --insecure --listen 127.0.0.1:0 --keep-alive 40s \
    >/dev/null 2>"$tmp/err"
check "--keep-alive above --idle-timeout exits 2" "[ $? -eq 2 ] && grep -q 'idle-timeout' $tmp/err"

start_echo_peer "$echo_port"
$peer banner "$banner_port" 3000000 7 &
pids+=($!)
wait_tcp "$banner_port" || no "the banner peer did not listen"
$peer sized "$sized_port" 9 &
pids+=($!)
wait_tcp "$sized_port" || no "the sized peer did not listen"

# start_pair TARGET_PORT CLIENT_TCP_PORT [NETEM OPTIONS...]: a tunnel server
# to 127.0.0.1:TARGET_PORT and a client on 127.0.0.1:CLIENT_TCP_PORT, through
# a `quack netem` relay when options are given; sets spid, cpid (npid).
start_pair() {
    local target=$1 ctcp=$2
    shift 2
    : >"$tmp/s.out"
    "$q" tunnel server --carrier "$carrier" --listen 127.0.0.1:0 --to "127.0.0.1:$target" \
        --quiet --stats \
        >"$tmp/s.out" 2>"$tmp/s.err" &
    spid=$!
    pids+=($spid)
    wait_line "$tmp/s.out" '^listening on' || return 1
    local saddr pin connect
    saddr=$(listen_addr "$tmp/s.out")
    pin=$(listen_pin "$tmp/s.out")
    connect=$saddr
    npid=
    if [ $# -gt 0 ]; then
        local tcpflag=
        [ "$carrier" = tcp ] && tcpflag=--tcp
        "$q" netem $tcpflag --listen "127.0.0.1:$relay_port" --to "$saddr" "$@" --duration 900s \
            >"$tmp/netem.out" 2>&1 &
        npid=$!
        pids+=($npid)
        if [ "$carrier" = tcp ]; then wait_tcp "$relay_port"; else wait_udp "$relay_port"; fi ||
            return 1
        connect=127.0.0.1:$relay_port
    fi
    : >"$tmp/c.out"
    "$q" tunnel client --carrier "$carrier" --connect "$connect" --pin "$pin" \
        --listen "127.0.0.1:$ctcp" --quiet \
        --stats >"$tmp/c.out" 2>"$tmp/c.err" &
    cpid=$!
    pids+=($cpid)
    wait_line "$tmp/c.out" '^tunnel: listening on'
}

if start_pair "$echo_port" "$tcp_port"; then
    r=$($peer roundtrip "$tcp_port" 32000000)
    check "32 MB echo round trip, SHA-256 equal both ways ($r)" "[ '${r%% *}' = ok ]"
    par=()
    for i in 1 2 3 4 5 6 7 8; do
        $peer roundtrip "$tcp_port" $((500000 * i + i)) >"$tmp/par$i" &
        par+=($!)
    done
    wait "${par[@]}"
    n_ok=$(cat "$tmp"/par* | grep -c '^ok')
    check "8 concurrent connections (0.5-4 MB each) all echo intact ($n_ok of 8)" "[ $n_ok = 8 ]"
    r0=$($peer roundtrip "$tcp_port" 0)
    r1=$($peer roundtrip "$tcp_port" 1)
    check "empty and 1-byte connections ($r0 / $r1)" "[ '${r0%% *}' = ok ] && [ '${r1%% *}' = ok ]"
    kill -TERM "$cpid"
    wait "$cpid"
    check "client exits 0 on SIGTERM" "[ $? -eq 0 ]"
    kill -TERM "$spid"
    wait "$spid"
    check "server exits 0 on SIGTERM" "[ $? -eq 0 ]"
else
    no "echo tunnel did not come up: $(cat "$tmp/s.err" "$tmp/c.err")"
fi

if start_pair "$banner_port" "$tcp_port"; then
    r=$($peer fetch "$tcp_port" 3000000 7)
    check "server speaks first: 3 MB banner arrives intact ($r)" "[ '${r%% *}' = ok ]"
    kill -TERM "$cpid" "$spid"
    wait "$cpid" "$spid"
else
    no "banner tunnel did not come up"
fi

if start_pair "$dead_port" "$tcp_port"; then
    python3 - "$tcp_port" >"$tmp/dead" 2>&1 <<'EOF'
import socket, sys, time
t = time.time()
try:
    # The reset can beat connect()'s return on a fast path: that is a reset too.
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
    t = time.time()
    b = s.recv(10)
    print("eof" if not b else "data")
except ConnectionResetError:
    print("reset %.3f" % (time.time() - t))
EOF
    check "refused target: the client's TCP connection is reset ($(cat "$tmp/dead"))" \
        "grep -q '^reset' $tmp/dead"
    kill -TERM "$cpid" "$spid"
    wait "$cpid" "$spid"
else
    no "dead-target tunnel did not come up"
fi

if [ "$carrier" = tcp ]; then
    # A wrong pin: the TLS handshake fails and the client says why.
    if start_pair "$echo_port" "$tcp_port"; then
        kill -TERM "$cpid"
        wait "$cpid"
        # A peer that connects and never speaks TLS is dropped (10 s timeout).
        python3 - "$(sed -n 's/^listening on [^:]*:\([0-9]*\).*/\1/p' "$tmp/s.out")" \
            >"$tmp/stall" 2>&1 <<'EOF2' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
t = time.time()
try:
    b = s.recv(10)
    print("closed %.1f" % (time.time() - t) if not b else "data")
except ConnectionResetError:
    print("closed %.1f" % (time.time() - t))
except socket.timeout:
    print("still open")
EOF2
        stallpid=$!
        "$q" tunnel client --carrier tcp --connect "$(listen_addr "$tmp/s.out")" \
            --pin "$(printf '%064d' 0)" --listen "127.0.0.1:$tcp2_port" --quiet >/dev/null 2>"$tmp/pin.err"
        rc=$?
        check "wrong pin: client exits 1 and says so ($(head -c 120 "$tmp/pin.err"))" \
            "[ $rc -eq 1 ] && grep -q 'pinned' $tmp/pin.err"
        wait "$stallpid"
        check "a connection that never starts TLS is dropped ($(cat "$tmp/stall"))" \
            "grep -q '^closed' $tmp/stall"
        kill -TERM "$spid"
        wait "$spid"
    else
        no "tunnel for the pin check did not come up"
    fi
    # Through a TCP delay line: 10 ms each way at 100 Mbit/s.
    if "$q" netem --help 2>&1 | grep -- --tcp >/dev/null &&
        start_pair "$echo_port" "$tcp2_port" --delay 10ms --rate 100mbit; then
        r=$($peer roundtrip "$tcp2_port" 4000000)
        check "4 MB echo through a 20 ms RTT TCP delay line ($r)" "[ '${r%% *}' = ok ]"
        kill -TERM "$cpid" "$spid" "$npid"
        wait "$cpid" "$spid" "$npid"
    else
        echo "skip - quack netem --tcp not available"
    fi
# Through a lossy relay: 10 ms each way, 1% loss each way.
elif start_pair "$echo_port" "$tcp2_port" --delay 10ms --loss 1% --seed 3; then
    r=$($peer roundtrip "$tcp2_port" 4000000)
    check "4 MB echo through 20 ms RTT, 1% loss each way ($r)" "[ '${r%% *}' = ok ]"
    kill -TERM "$cpid"
    wait "$cpid"
    lost=$(sed -n 's/^stats: pkts sent [0-9]* received [0-9]* lost \([0-9]*\).*/\1/p' "$tmp/c.err")
    check "the client's stats show the losses it recovered from (lost ${lost:-?})" \
        "[ -n '$lost' ] && [ '$lost' -gt 0 ]"
    kill -TERM "$spid" "$npid"
    wait "$spid" "$npid"
else
    no "lossy tunnel did not come up: $(cat "$tmp/s.err" "$tmp/c.err")"
fi
# Flows take turns (QUIC: RFC 9218 incremental streams, QK_TUNNEL_STREAM_URGENCY;
# yamux: round-robin framing): five small downloads, started together while a
# 50 MB download fills a 10 Mbit/s, 50 ms RTT relay, all end while the bulk one
# is still running. Non-incremental QUIC streams went one at a time in
# stream-id order: a small download waited for the bulk one's last byte.
# The check does not compare wall-clock durations of CPU-bound work: the bulk
# download is paced by the relay's rate (>= 40 s for 50 MB, however fast or
# busy the machine), the small ones need a few RTTs each (4-8 s when five ran
# one after another under ASan beside other tests), so the margin is > 5x; a
# machine twice as slow still passes, the old scheduling fails at any speed.
# The exact-time ordering property is tests/unit/test_tunnel_streams.c's.
qlimit=(--limit-time 50ms) # a 50 ms queue; `netem --tcp` is a delay line without one
[ "$carrier" = tcp ] && qlimit=()
if start_pair "$sized_port" "$tcp2_port" --delay 25ms --rate 10mbit "${qlimit[@]}"; then
    $peer get "$tcp2_port" 50000000 9 >"$tmp/bulk" 2>&1 &
    bpid=$!
    sleep 1 # the bulk download is under way
    spids=()
    for i in 1 2 3 4 5; do
        $peer get "$tcp2_port" 1000 9 >"$tmp/small$i" 2>&1 &
        spids+=($!)
    done
    wait "${spids[@]}"
    n_ok=$(cat "$tmp"/small? | grep -c '^ok')
    kill -0 "$bpid" 2>/dev/null
    running=$?
    check "5 small downloads started during a 50 MB one (10 Mbit/s) end while it runs ($n_ok of 5 intact)" \
        "[ $n_ok = 5 ] && [ $running -eq 0 ]"
    kill "$bpid" 2>/dev/null
    wait "$bpid"
    kill -TERM "$cpid" "$spid" "$npid"
    wait "$cpid" "$spid" "$npid"
else
    no "rate-limited tunnel did not come up: $(cat "$tmp/s.err" "$tmp/c.err")"
fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
