#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: src/tunnel/session.c src/tunnel/session_wire.c src/tunnel/tunnel.c apps/cmd_tunnel.c
# Flows outlive their connection (the tunnel's session layer), end to end on
# loopback, every download checked by SHA-256 (tunnel_peer.py get/sized):
#  - the carrier connection dies three times during one download: the relay
#    in front of the server goes dark for longer than --idle-timeout (QUIC
#    over UDP: 8 s against --idle-timeout 4s), or is killed (--carrier tcp:
#    the TCP connection ends at once, 3 s until a new relay listens); the
#    client redials and resumes the flow at its acknowledged offset: the
#    download does not restart, the stats show the resumed flows and the
#    bytes the server sent again;
#  - QUIC: the client's address changes mid-download (the relay restarted at
#    once: a new source port) and the flow goes on without a redial;
#  - both processes stay within the configured replay-buffer bound (peak RSS,
#    plus a stated allowance for the carrier's own windows);
#  - a restarted server does not know the session: the client's flows are
#    reset at once after it reconnects (timed from the new server's listen
#    line), not after a timeout.
# Sizes: 100 MB downloads in the Release build; 16 MB under ASan (same steps).
# Usage: tests/cli/tunnel_resume.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_resume.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports sized_port udp_port relay_port tcp_port echo_port

asan=no
grep -q '^QK_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && asan=yes
size=${RESUME_BYTES:-$([ $asan = yes ] && echo 16000000 || echo 100000000)}
rate=$([ $asan = yes ] && echo 20mbit || echo 100mbit)
# The relay goes dark 8 s, twice --idle-timeout 4s (the issue's scale, both
# builds): the QUIC connection dies and the client redials; a shorter outage
# is not this test (QUIC's own migration survives it: the address-change step).
# Over --carrier tcp the killed relay ends the connection at once: 3 s
# there keeps the whole test near 90 s.
idle=4s dark=8 dark_tcp=3
cap_mib=16     # --session-cap
allow_mib=48   # the carrier's own buffers: QUIC stream windows and send buffers, yamux windows
# Under ASan freed memory waits in a quarantine (256 MiB by default) before it
# is reused, so peak RSS there measures the quarantine, not the buffers (the
# TCP carrier's TLS records churn through it: 150 MiB seen): keep it small for
# the processes this test starts, so the bound means the same in both builds.
[ $asan = yes ] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8:thread_local_quarantine_size_kb=256"

$peer sized "$sized_port" 7 &
pids+=($!)
$peer echo "$echo_port" &
pids+=($!)
wait_tcp "$sized_port" && wait_tcp "$echo_port" || no "the TCP peers did not come up"

kib() { sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status"; }

# relay CARRIER: the relay in front of the server (sets npid).
relay() {
    if [ "$1" = udp ]; then
        "$q" netem --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$udp_port" --rate "$rate" \
            --limit 400kB --duration 900s >>"$tmp/relay.log" 2>&1 &
        npid=$!
        pids+=($npid)
        wait_udp "$relay_port"
    else
        "$q" netem --tcp --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$udp_port" \
            --rate "$rate" >>"$tmp/relay.log" 2>&1 &
        npid=$!
        pids+=($npid)
        wait_tcp "$relay_port"
    fi
}

# run CARRIER: one download across three dead connections (and, on UDP, one address change).
run() {
    local car=$1 c=$tmp/$1
    "$q" tunnel server --carrier "$car" --listen "127.0.0.1:$udp_port" \
        --to "127.0.0.1:$sized_port" --idle-timeout "$idle" --session-cap "${cap_mib}M" --stats \
        >"$c.s.out" 2>"$c.s.err" &
    local spid=$!
    pids+=($spid)
    wait_line "$c.s.out" '^listening on' || no "$car: server did not come up: $(cat "$c.s.err")"
    relay "$car" || no "$car: the relay did not come up"
    "$q" tunnel client --carrier "$car" --connect "127.0.0.1:$relay_port" --insecure \
        --listen "127.0.0.1:$tcp_port" --keep-alive 500ms --idle-timeout "$idle" \
        --reconnect-max 1s --session-cap "${cap_mib}M" --stats >"$c.c.out" 2>"$c.c.err" &
    local cpid=$!
    pids+=($cpid)
    wait_line "$c.c.out" '^tunnel: listening on' || no "$car: client did not come up"
    local base_c base_s
    base_c=$(kib $cpid VmRSS) base_s=$(kib $spid VmRSS)
    $peer get "$tcp_port" "$size" 7 >"$c.get" 2>&1 &
    local gpid=$! inflight=0 k
    # The download is under way (python takes seconds to start on a loaded machine).
    wait_until 300 grep -q 'tunnel_to_tcp_bytes=[1-9]' "$c.c.err"
    for k in 1 2 3; do
        sleep 1.5
        kill -0 $gpid 2>/dev/null && inflight=$((inflight + 1))
        kill -KILL $npid
        wait $npid 2>/dev/null
        sleep "$([ "$car" = udp ] && echo "$dark" || echo "$dark_tcp")"
        relay "$car"
        wait_until 100 eval "[ \$(grep -c reconnected $c.c.err) -ge $k ]"
    done
    if [ "$car" = udp ]; then # the client's address changes: no redial
        sleep 1
        kill -0 $gpid 2>/dev/null && inflight=$((inflight + 1))
        kill -KILL $npid
        wait $npid 2>/dev/null
        relay udp
    fi
    wait $gpid
    local r
    r=$(cat "$c.get")
    local want=3
    [ "$car" = udp ] && want=4
    check "$car: the download was in flight at each of the $want events ($inflight)" "[ $inflight = $want ]"
    check "$car: $size bytes arrive intact across 3 dead connections ($r)" "[ '${r%% *}' = ok ]"
    local n_rec
    n_rec=$(grep -c 'reconnected' "$c.c.err")
    check "$car: the client reconnected 3 times ($n_rec)" "[ $n_rec = 3 ]"
    sleep 1.2 # one more stats line
    local cl sl
    cl=$(grep '^stats:' "$c.c.err" | tail -1) sl=$(grep '^stats:' "$c.s.err" | tail -1)
    local resumed replayed opened
    resumed=$(sed -n 's/.* flows_resumed=\([0-9]*\).*/\1/p' <<<"$cl")
    opened=$(sed -n 's/.* flows_opened=\([0-9]*\).*/\1/p' <<<"$cl")
    replayed=$(sed -n 's/.* bytes_replayed=\([0-9]*\).*/\1/p' <<<"$sl")
    check "$car: the client's stats show the flow resumed 3 times, not restarted (resumed $resumed, opened $opened)" \
        "[ '$resumed' = 3 ] && [ '$opened' = 1 ]"
    check "$car: the server sent bytes again after the resumes (bytes_replayed=$replayed)" \
        "[ '${replayed:-0}' -gt 0 ]"
    local peak_c peak_s bound=$(((cap_mib + allow_mib) * 1024))
    peak_c=$(($(kib $cpid VmHWM) - base_c)) peak_s=$(($(kib $spid VmHWM) - base_s))
    check "$car: peak RSS growth within --session-cap ${cap_mib} MiB + ${allow_mib} MiB: client $((peak_c / 1024)) MiB, server $((peak_s / 1024)) MiB" \
        "[ $peak_c -le $bound ] && [ $peak_s -le $bound ]"
    kill -TERM $cpid $spid $npid
    wait $cpid $spid $npid 2>/dev/null
}

for car in ${RESUME_CARRIERS:-udp tcp}; do run "$car"; done

# A restarted server does not know the session: flows reset at once.
srv() {
    "$q" tunnel server --listen "127.0.0.1:$udp_port" --to "127.0.0.1:$echo_port" >"$1" 2>&1 &
    spid=$!
    pids+=($spid)
    wait_line "$1" '^listening on'
}
srv "$tmp/r1.log" || no "server did not come up"
"$q" tunnel client --connect "127.0.0.1:$udp_port" --insecure --listen "127.0.0.1:$tcp_port" \
    --keep-alive 300ms --idle-timeout 1500ms --reconnect-max 1s >"$tmp/r.out" 2>"$tmp/r.err" &
cpid=$!
pids+=($cpid)
wait_line "$tmp/r.out" '^tunnel: listening on' || no "client did not come up"
python3 - "$tcp_port" >"$tmp/hold" 2>&1 <<'PY' &
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
PY
hpid=$!
wait_line "$tmp/hold" echoed
kill -KILL "$spid"
wait "$spid" 2>/dev/null
wait_line "$tmp/r.err" 'redialling' 50
sleep 2 # the connection is dead now (idle timeout 1.5 s): the flow waits for a resume
check "while the server is down the held flow stays open ($(cat "$tmp/hold" | tail -1))" \
    "[ \"\$(tail -1 $tmp/hold)\" = echoed ]"
srv "$tmp/r2.log"
t0=$(date +%s.%N)
wait "$hpid"
t1=$(date +%s.%N)
dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
check "the restarted server refuses the session: the flow is reset ($(tail -1 "$tmp/hold")) $dt s after it listens" \
    "[ \"\$(tail -1 $tmp/hold)\" = reset ] && awk -v d=$dt 'BEGIN { exit !(d < 3) }'"
check "the client says why ($(grep -m1 'does not know our session' "$tmp/r.err"))" \
    "grep -q 'the server does not know our session' $tmp/r.err"
r=$($peer roundtrip "$tcp_port" 500000)
check "new flows work on the new session ($r)" "[ '${r%% *}' = ok ]"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
