#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/tunnel_auto.c apps/cmd_tunnel.c
# `quack tunnel --carrier auto` (udp, then tcp, then dns through unbound),
# end to end on loopback against one server process serving all three
# carriers with one key, every download checked by SHA-256:
#  - UDP to the server blackholed (a `quack netem` relay with --blackhole
#    covering the whole run): the client falls to TCP and carries its first
#    byte within 5 s of its start; its log and --stats say carrier tcp;
#  - TCP blackholed too mid-download (the TCP relay killed): the client
#    moves to DNS (unbound, stub zone -> the server's --dns-listen) and the
#    same download goes on to its last byte (resumed, not reopened);
#  - TCP back (a new TCP relay), UDP still dark: on dns the client probes
#    udp (it fails), then tcp, and moves the session to tcp within 30 s
#    ("carrier dns -> tcp (switch 2)", stats carrier=tcp
#    carrier_switches=2); a new download over it works;
#  - the UDP blackhole lifted (the relay replaced by a clear one): the
#    client's probe finds UDP and moves the session to it within 30 s, a
#    new download works, and the stats count the three switches and the
#    probes (at least one udp probe from tcp, one udp and one tcp from dns).
# Usage: tests/cli/tunnel_auto.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_auto.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports sized_port srv_port relay_port tcp_port dns_port ub_port
. "$(dirname "$0")/../interop/dns/rig.bash" # rig_unbound: unbound with a stub zone (DOMAIN)
command -v unbound >/dev/null || { echo "skip: unbound not installed"; exit 0; }

asan=no
grep -q '^QK_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && asan=yes
size=$([ $asan = yes ] && echo 1500000 || echo 3000000)
rate=$([ $asan = yes ] && echo 2mbit || echo 4mbit) # the TCP leg: the download spans its loss
# The first byte's bound: 5 s (2 s of UDP handshake timeout, then TCP and
# TLS); the sanitizer build starts and handshakes several times slower
# (5.6 s measured under ASan on a loaded 2-core machine).
first_max=$([ $asan = yes ] && echo 10 || echo 5)

# Usage errors and the list's end: exit 2 with the fix named; a client
# whose every carrier fails exits 1 with --reconnect-max 0 after trying all.
"$q" tunnel server --carrier auto --domain "$DOMAIN" --listen "127.0.0.1:$srv_port" \
    --to "127.0.0.1:$sized_port" >/dev/null 2>"$tmp/e1"
check "a server with dns in its list and no --dns-listen exits 2 naming it" \
    "[ $? = 2 ] && grep -q 'needs --dns-listen' $tmp/e1"
"$q" tunnel client --carrier tcp,udp --connect "127.0.0.1:$srv_port" --insecure \
    --listen "127.0.0.1:$tcp_port" >/dev/null 2>"$tmp/e2"
check "a list that does not start with udp exits 2" "[ $? = 2 ] && grep -q 'starts with udp' $tmp/e2"
"$q" tunnel client --carrier auto --connect "127.0.0.1:$srv_port" --insecure \
    --listen "127.0.0.1:$tcp_port" --reconnect-max 0 >/dev/null 2>"$tmp/e3"
check "nothing listening, --reconnect-max 0: udp then tcp tried, exit 1" \
    "[ $? = 1 ] && grep -q 'carrier udp: no session; trying tcp' $tmp/e3"

$peer sized "$sized_port" 7 &
pids+=($!)
wait_tcp "$sized_port" || no "the sized peer did not come up"

"$q" tunnel server --carrier auto --domain "$DOMAIN" --dns-listen "127.0.0.1:$dns_port" \
    --listen "127.0.0.1:$srv_port" --to "127.0.0.1:$sized_port" --stats \
    >"$tmp/s.out" 2>"$tmp/s.err" &
spid=$!
pids+=($spid)
wait_until 100 eval "[ \$(grep -c '^listening on' $tmp/s.out) = 3 ]" ||
    no "the server did not listen on the three carriers: $(cat "$tmp/s.out" "$tmp/s.err")"
check "one server process listens on UDP and TCP on one port and DNS on --dns-listen" \
    "grep -q 'listening on 127.0.0.1:$srv_port (QUIC' $tmp/s.out && grep -q 'listening on 127.0.0.1:$srv_port (yamux' $tmp/s.out && grep -q 'listening on 127.0.0.1:$dns_port (DNS' $tmp/s.out"
pin=$(listen_pin "$tmp/s.out")
WORK=$tmp SPORT=$dns_port
rig_unbound "$ub_port" || no "unbound did not come up"
pids+=($UNBOUND_PID)

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
# tcp_relay: the TCP relay in front of the server (sets tpid).
tcp_relay() {
    "$q" netem --tcp --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$srv_port" --rate "$rate" \
        >>"$tmp/nt.log" 2>&1 &
    tpid=$!
    pids+=($tpid)
    wait_tcp "$relay_port" || no "the TCP relay did not come up"
}
tcp_relay

# The download: connect (retrying until the client listens), then the time
# of the first byte since $2 (epoch seconds) and the SHA-256 verdict.
timed_get() {
    python3 - "$1" "$2" "$3" <<'PY'
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
    --domain "$DOMAIN" --resolver "127.0.0.1:$ub_port" --listen "127.0.0.1:$tcp_port" \
    --probe-interval 1s --keep-alive 500ms --idle-timeout 3s --stats >"$tmp/c.out" 2>"$tmp/c.err" &
cpid=$!
pids+=($cpid)
timed_get "$tcp_port" "$t0" "$size" >"$tmp/get" 2>&1 &
gpid=$!
wait_line "$tmp/get" '^first' 150
first=$(sed -n 's/^first //p' "$tmp/get")
check "UDP blackholed: the first byte arrives over TCP ${first:-never} s after the client started (< $first_max s)" \
    "awk -v f='${first:-99}' 'BEGIN { exit !(f < $first_max) }' && grep -q '(yamux/TLS/TCP)' $tmp/c.out"
awk -v f="${first:-99}" -v m=$first_max 'BEGIN { exit !(f < m) }' || grep -v '^stats:' "$tmp/c.err" | head -8
check "the client logs the fallback ($(grep -m1 'trying tcp' "$tmp/c.err"))" \
    "grep -q 'carrier udp: no session; trying tcp' $tmp/c.err && grep -q 'carrier tcp\$' $tmp/c.err"
wait_until 30 grep -q 'carrier=tcp carrier_switches=0' "$tmp/c.err"
check "its stats say carrier=tcp, no switch yet" "grep -q 'carrier=tcp carrier_switches=0' $tmp/c.err"

# Blackhole TCP too while the download runs over it: on to DNS.
sleep 1.5
kill -KILL "$tpid"
wait "$tpid" 2>/dev/null
wait_line "$tmp/c.err" 'carrier tcp -> dns' 300
check "TCP blackholed too: the client moves to dns ($(grep -m1 'carrier tcp -> dns' "$tmp/c.err"))" \
    "grep -q 'carrier tcp -> dns (switch 1)' $tmp/c.err"
check "the download was still running when the carrier changed" "kill -0 $gpid 2>/dev/null"
# What had arrived by the last stats line before the switch: at most one
# second of the TCP leg (rate/8 bytes) more came over TCP after it.
b0=$(sed -n '/carrier tcp -> dns/q; s/^stats:.* tunnel_to_tcp_bytes=\([0-9]*\).*/\1/p' "$tmp/c.err" | tail -1)
wait "$gpid"
r=$(tail -1 "$tmp/get")
check "$size bytes arrive intact across the tcp -> dns switch ($r)" "[ '${r%% *}' = ok ]"
tcp_sec=$(($(sed 's/mbit//' <<<"$rate") * 1000000 / 8))
check "over $tcp_sec bytes came over dns ($((size - ${b0:-$size})): $size - $b0 at the last stats line on tcp)" \
    "[ $((size - ${b0:-$size})) -gt $tcp_sec ]"

# TCP back, UDP still dark: from dns the client probes udp (fails), then tcp.
tcp_relay
tl=$(date +%s.%N)
wait_line "$tmp/c.err" 'carrier dns -> tcp' 300
tu=$(date +%s.%N)
dt=$(awk -v a="$tl" -v b="$tu" 'BEGIN { printf "%.2f", b - a }')
check "TCP back, UDP still dark: on tcp again $dt s later (< 30 s; $(grep -m1 'carrier tcp: probe' "$tmp/c.err"))" \
    "grep -q 'carrier dns -> tcp (switch 2)' $tmp/c.err && grep -q 'carrier tcp: probe [0-9]* came up' $tmp/c.err && awk -v d=$dt 'BEGIN { exit !(d < 30) }'"
wait_until 30 eval "grep -q 'carrier=tcp carrier_switches=2' $tmp/c.err"
check "its stats say carrier=tcp carrier_switches=2" "grep -q 'carrier=tcp carrier_switches=2' $tmp/c.err"
r=$(timed_get "$tcp_port" "$(date +%s.%N)" 500000 | tail -1)
check "a new 500 kB download over TCP ($r)" "[ '${r%% *}' = ok ]"

# Lift the UDP blackhole: back to UDP.
kill -KILL "$upid"
wait "$upid" 2>/dev/null
udp_relay clear
tl=$(date +%s.%N)
wait_line "$tmp/c.err" 'carrier tcp -> udp' 300
tu=$(date +%s.%N)
dt=$(awk -v a="$tl" -v b="$tu" 'BEGIN { printf "%.2f", b - a }')
check "UDP blackhole lifted: back on UDP $dt s later (< 30 s)" \
    "grep -q 'carrier tcp -> udp (switch 3)' $tmp/c.err && awk -v d=$dt 'BEGIN { exit !(d < 30) }'"
r=$(timed_get "$tcp_port" "$(date +%s.%N)" 2000000 | tail -1)
check "a new 2 MB download over UDP ($r)" "[ '${r%% *}' = ok ]"
sleep 1.2 # one more stats line
cl=$(grep '^stats:' "$tmp/c.err" | tail -1)
field() { sed -n "s/.* $1=\([0-9a-z]*\).*/\1/p" <<<"$cl"; }
check "client stats: carrier=$(field carrier) carrier_switches=$(field carrier_switches) carrier_probes=$(field carrier_probes) flows_resumed=$(field flows_resumed) flows_opened=$(field flows_opened)" \
    "[ '$(field carrier)' = udp ] && [ '$(field carrier_switches)' = 3 ] && [ '$(field carrier_probes)' -ge 3 ] && [ '$(field flows_resumed)' -ge 1 ] && [ '$(field flows_opened)' = 3 ]"
kill -TERM "$cpid" "$spid"
wait "$cpid"
crc=$?
wait "$spid"
src=$?
check "SIGTERM: client and server exit 0 ($crc, $src), no sanitizer report" \
    "[ $crc = 0 ] && [ $src = 0 ] && ! grep -q 'Sanitizer' $tmp/c.err $tmp/s.err"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
