#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/tunnel_auto.c apps/cmd_tunnel.c
# `quack tunnel --carrier auto` (udp, then tcp), end to end on loopback,
# every download checked by SHA-256:
#  - UDP to the server blackholed (a `quack netem` relay with --blackhole
#    covering the whole run): the client falls to TCP and carries its first
#    byte within 5 s of its start; its log and --stats say carrier tcp;
#  - the blackhole lifted mid-download (the relay replaced by a clear one):
#    the client's probe finds UDP and moves the session to it within 30 s,
#    the download goes on to the last byte (the flow resumed, not reopened),
#    and the stats count the switch and the probes;
#  - one server process serves both carriers with one key: the auto
#    client's --pin holds on both, and a --carrier tcp client works too.
# Usage: tests/cli/tunnel_auto.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_auto.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports sized_port srv_port relay_port tcp_port tcp2_port

asan=no
grep -q '^QK_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && asan=yes
size=$([ $asan = yes ] && echo 6000000 || echo 24000000)
rate=$([ $asan = yes ] && echo 8mbit || echo 24mbit) # the TCP leg: the download spans the lift

$peer sized "$sized_port" 7 &
pids+=($!)
wait_tcp "$sized_port" || no "the sized peer did not come up"

"$q" tunnel server --carrier udp,tcp --listen "127.0.0.1:$srv_port" --to "127.0.0.1:$sized_port" \
    --stats >"$tmp/s.out" 2>"$tmp/s.err" &
pids+=($!)
wait_until 100 eval "[ \$(grep -c '^listening on' $tmp/s.out) = 2 ]" ||
    no "the server did not listen on both carriers: $(cat "$tmp/s.out" "$tmp/s.err")"
check "the server listens on UDP and TCP on one port ($(grep -c '^listening on 127.0.0.1:'"$srv_port" "$tmp/s.out") lines)" \
    "grep -q 'listening on 127.0.0.1:$srv_port (QUIC' $tmp/s.out && grep -q 'listening on 127.0.0.1:$srv_port (yamux' $tmp/s.out"
pin=$(listen_pin "$tmp/s.out")

# udp_relay dark|clear: the UDP relay in front of the server (sets upid).
udp_relay() {
    local dark=()
    [ "$1" = dark ] && dark=(--blackhole 0s-900s)
    "$q" netem --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$srv_port" "${dark[@]}" \
        --duration 900s >>"$tmp/nu.log" 2>&1 &
    upid=$!
    pids+=($upid)
    wait_udp "$relay_port"
}
udp_relay dark || no "the UDP relay did not come up"
"$q" netem --tcp --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$srv_port" --rate "$rate" \
    >"$tmp/nt.log" 2>&1 &
pids+=($!)
wait_tcp "$relay_port" || no "the TCP relay did not come up"

# The download: connect (retrying until the client listens), then the time
# of the first byte since $2 (epoch seconds) and the SHA-256 verdict.
timed_get() {
    python3 - "$1" "$2" "$size" <<'PY'
import hashlib, random, socket, sys, time
port, t0, n = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
while True:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        break
    except OSError:
        time.sleep(0.02)
s.sendall(b"%d\n" % n)
h, got, first = hashlib.sha256(), 0, None
while True:
    b = s.recv(65536)
    if not b:
        break
    if first is None:
        first = time.time() - t0
        print("first %.2f" % first, flush=True)
    h.update(b)
    got += len(b)
want = hashlib.sha256(random.Random(7).randbytes(n)).hexdigest()
print("ok" if got == n and h.hexdigest() == want else "mismatch %d %s" % (got, h.hexdigest()), want)
PY
}

t0=$(date +%s.%N)
"$q" tunnel client --carrier auto --connect "127.0.0.1:$relay_port" --pin "$pin" \
    --listen "127.0.0.1:$tcp_port" --probe-interval 1s --keep-alive 500ms --idle-timeout 3s \
    --stats >"$tmp/c.out" 2>"$tmp/c.err" &
cpid=$!
pids+=($cpid)
timed_get "$tcp_port" "$t0" >"$tmp/get" 2>&1 &
gpid=$!
wait_line "$tmp/get" '^first' 150
first=$(sed -n 's/^first //p' "$tmp/get")
check "UDP blackholed: the first byte arrives over TCP ${first:-never} s after the client started (< 5 s)" \
    "awk -v f='${first:-99}' 'BEGIN { exit !(f < 5) }' && grep -q '(yamux/TLS/TCP)' $tmp/c.out"
check "the client logs the fallback ($(grep -m1 'trying tcp' "$tmp/c.err"))" \
    "grep -q 'carrier udp: no session; trying tcp' $tmp/c.err && grep -q 'carrier tcp\$' $tmp/c.err"
wait_until 30 grep -q 'carrier=tcp carrier_switches=0' "$tmp/c.err"
check "its stats say carrier=tcp, no switch yet" "grep -q 'carrier=tcp carrier_switches=0' $tmp/c.err"

# Lift the blackhole while the download runs over TCP.
sleep 1
kill -KILL "$upid"
wait "$upid" 2>/dev/null
udp_relay clear
tl=$(date +%s.%N)
wait_line "$tmp/c.err" 'carrier tcp -> udp' 300
tu=$(date +%s.%N)
dt=$(awk -v a="$tl" -v b="$tu" 'BEGIN { printf "%.2f", b - a }')
check "blackhole lifted: back on UDP $dt s later (< 30 s)" \
    "grep -q 'carrier tcp -> udp (switch 1)' $tmp/c.err && awk -v d=$dt 'BEGIN { exit !(d < 30) }'"
check "the download was still running when the carrier changed" "kill -0 $gpid 2>/dev/null"
wait "$gpid"
r=$(tail -1 "$tmp/get")
check "$size bytes arrive intact across the tcp -> udp switch ($r)" "[ '${r%% *}' = ok ]"
sleep 1.2 # one more stats line
cl=$(grep '^stats:' "$tmp/c.err" | tail -1)
field() { sed -n "s/.* $1=\([0-9a-z]*\).*/\1/p" <<<"$cl"; }
check "client stats: carrier=$(field carrier) carrier_switches=$(field carrier_switches) carrier_probes=$(field carrier_probes) flows_resumed=$(field flows_resumed) flows_opened=$(field flows_opened)" \
    "[ '$(field carrier)' = udp ] && [ '$(field carrier_switches)' = 1 ] && [ '$(field carrier_probes)' -ge 1 ] && [ '$(field flows_resumed)' -ge 1 ] && [ '$(field flows_opened)' = 1 ]"

# The same server, one key, for single-carrier clients of either kind.
"$q" tunnel client --carrier tcp --connect "127.0.0.1:$srv_port" --pin "$pin" \
    --listen "127.0.0.1:$tcp2_port" >"$tmp/c2.out" 2>"$tmp/c2.err" &
c2=$!
pids+=($c2)
wait_line "$tmp/c2.out" '^tunnel: listening on' || no "the tcp client did not come up: $(cat "$tmp/c2.err")"
r=$($peer get "$tcp2_port" 1000000 7)
check "a --carrier tcp client with the same --pin ($r)" "[ '${r%% *}' = ok ]"
kill "$c2"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
