#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: src/tunnel/session.c src/tunnel/tunnel.c apps/tunnel_auto.c apps/cmd_tunnel.c
# Flow survival, end to end on loopback: ONE download (100 MB in the Release
# build, 16 MB under ASan; SHA-256 checked) through a `--carrier auto`
# client (udp, then tcp) goes through, in turn:
#  (a) the QUIC connection dies three times: the UDP relay in front of the
#      server goes dark for 8 s, twice --idle-timeout 4s (no TCP relay yet:
#      the fallback to tcp is refused, the client redials udp until the
#      relay is back) and the client resumes the flow each time;
#  (b) UDP blackholed for 10 s (the relay replaced by one that drops every
#      datagram for its first 10 s), a TCP relay up: the connection dies
#      after its idle timeout, the session moves to TCP and the download
#      goes on over it; the blackhole lifts and the client's probe moves the
#      session back to UDP ("carrier udp -> tcp (switch 1)",
#      "carrier tcp -> udp (switch 2)");
#  (c) the client's address changes (the relay restarted at once: the
#      server sees a new source port): QUIC migration, no redial.
# The download was in flight at every event and did not restart: the
# client's stats show one flow opened and resumed five times (3 redials +
# 2 carrier changes; none for the address change), carrier_switches=2,
# carrier=udp; the
# server's show bytes it sent again; the peak RSS growth of client and
# server stays under --session-cap plus an allowance for the carriers' own
# windows (tunnel_resume.sh's bound).
# Usage: tests/cli/tunnel_survival.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_survival.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports sized_port srv_port relay_port tcp_port

asan=no
grep -q '^QK_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && asan=yes
size=$([ $asan = yes ] && echo 16000000 || echo 100000000)
# The relays' rate: the download must outlast the ~50 s of events (it moves
# only between them: ~15 s in all), so 20+ s of transfer at this rate.
rate=$([ $asan = yes ] && echo 6mbit || echo 40mbit)
idle=4s dark=8 blackhole=10
cap_mib=16   # --session-cap
allow_mib=48 # the carriers' own buffers: QUIC stream windows and send buffers, yamux windows
# ASan's quarantine would dominate peak RSS (see tunnel_resume.sh): keep it small.
[ $asan = yes ] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8:thread_local_quarantine_size_kb=256"

$peer sized "$sized_port" 7 &
pids+=($!)
wait_tcp "$sized_port" || no "the sized peer did not come up"

kib() { sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status"; }

# udp_relay [NETEM OPTIONS]: the UDP relay in front of the server (sets upid).
udp_relay() {
    "$q" netem --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$srv_port" --rate "$rate" \
        --limit 400kB --duration 900s "$@" >>"$tmp/nu.log" 2>&1 &
    upid=$!
    pids+=($upid)
    wait_udp "$relay_port" || no "the UDP relay did not come up"
}
udp_down() {
    kill -KILL "$upid"
    wait "$upid" 2>/dev/null
}

"$q" tunnel server --carrier auto --listen "127.0.0.1:$srv_port" --to "127.0.0.1:$sized_port" \
    --idle-timeout "$idle" --session-cap "${cap_mib}M" --stats >"$tmp/s.out" 2>"$tmp/s.err" &
spid=$!
pids+=($spid)
wait_until 100 eval "[ \$(grep -c '^listening on' $tmp/s.out) = 2 ]" ||
    no "the server did not listen on UDP and TCP: $(cat "$tmp/s.out" "$tmp/s.err")"
udp_relay
"$q" tunnel client --carrier auto --connect "127.0.0.1:$relay_port" --insecure \
    --listen "127.0.0.1:$tcp_port" --keep-alive 500ms --idle-timeout "$idle" --reconnect-max 1s \
    --probe-interval 1s --session-cap "${cap_mib}M" --stats >"$tmp/c.out" 2>"$tmp/c.err" &
cpid=$!
pids+=($cpid)
wait_line "$tmp/c.out" '^tunnel: listening on' || no "the client did not come up: $(cat "$tmp/c.err")"
base_c=$(kib $cpid VmRSS) base_s=$(kib $spid VmRSS)

$peer get "$tcp_port" "$size" 7 >"$tmp/get" 2>&1 &
gpid=$!
inflight=0
# in_flight EVENT: count the download as running at this event (or say it was not).
in_flight() {
    if kill -0 $gpid 2>/dev/null; then
        inflight=$((inflight + 1))
    else
        echo "# the download had ended before $1"
    fi
}
wait_until 300 grep -q 'tunnel_to_tcp_bytes=[1-9]' "$tmp/c.err"
t_start=$(date +%s)

# (a) three dead connections: dark 8 s > --idle-timeout 4s, no TCP to fall to.
for k in 1 2 3; do
    sleep 1.5
    in_flight "dark period $k"
    udp_down
    sleep "$dark"
    udp_relay
    wait_until 150 eval "[ \$(grep -c reconnected $tmp/c.err) -ge $k ]"
done
n_rec=$(grep -c 'reconnected' "$tmp/c.err")
check "(a) the connection died 3 times (dark ${dark} s, idle timeout $idle): the client reconnected 3 times ($n_rec), still on udp" \
    "[ $n_rec = 3 ] && ! grep -q 'carrier udp -> ' $tmp/c.err"

# (b) UDP blackholed for 10 s with TCP there: to tcp and back.
"$q" netem --tcp --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$srv_port" --rate "$rate" \
    >"$tmp/nt.log" 2>&1 &
tpid=$!
pids+=($tpid)
wait_tcp "$relay_port" || no "the TCP relay did not come up"
sleep 1.5
in_flight "the UDP blackhole"
udp_down
udp_relay --blackhole "0s-${blackhole}s"
tb=$(date +%s.%N)
wait_line "$tmp/c.err" 'carrier udp -> tcp' 200
in_flight "the move to tcp"
check "(b) UDP blackholed: the session moved to tcp ($(grep -m1 'carrier udp -> tcp' "$tmp/c.err"))" \
    "grep -q 'carrier udp -> tcp (switch 1)' $tmp/c.err"
wait_line "$tmp/c.err" 'carrier tcp -> udp' 300
tu=$(date +%s.%N)
dt=$(awk -v a="$tb" -v b="$tu" 'BEGIN { printf "%.1f", b - a }')
in_flight "the move back to udp"
check "(b) the blackhole lifted: back on udp $dt s after it began (> ${blackhole} s, < $((blackhole + 10)) s)" \
    "grep -q 'carrier tcp -> udp (switch 2)' $tmp/c.err && awk -v d=$dt 'BEGIN { exit !(d > $blackhole && d < $blackhole + 10) }'"

# (c) the client's address changes: QUIC migration, no redial.
n_before=$(grep -c 'reconnected' "$tmp/c.err")
sleep 1.5
in_flight "the address change"
udp_down
udp_relay
wait "$gpid"
r=$(cat "$tmp/get")
t_end=$(date +%s)
check "the download was in flight at each of the 7 events ($inflight)" "[ $inflight = 7 ]"
check "$size bytes arrive intact through (a), (b) and (c) in $((t_end - t_start)) s ($r)" \
    "[ '${r%% *}' = ok ]"
n_rec=$(grep -c 'reconnected' "$tmp/c.err")
check "(c) the address change needed no redial (sessions up: $n_before before it, $n_rec after: 3 in (a), to tcp and back in (b))" \
    "[ $n_before = 5 ] && [ $n_rec = 5 ]"
sleep 1.2 # one more stats line
cl=$(grep '^stats:' "$tmp/c.err" | tail -1) sl=$(grep '^stats:' "$tmp/s.err" | tail -1)
field() { sed -n "s/.* $2=\([0-9a-z]*\).*/\1/p" <<<"$1"; }
check "client stats: one flow, resumed $(field "$cl" flows_resumed) times (5), opened $(field "$cl" flows_opened), carrier=$(field "$cl" carrier) carrier_switches=$(field "$cl" carrier_switches)" \
    "[ '$(field "$cl" flows_opened)' = 1 ] && [ '$(field "$cl" flows_resumed)' = 5 ] && [ '$(field "$cl" carrier)' = udp ] && [ '$(field "$cl" carrier_switches)' = 2 ]"
check "server stats: bytes_replayed=$(field "$sl" bytes_replayed) (> 0), sessions_resumed=$(field "$sl" sessions_resumed) (>= 5)" \
    "[ '$(field "$sl" bytes_replayed)' -gt 0 ] && [ '$(field "$sl" sessions_resumed)' -ge 5 ]"
bound=$(((cap_mib + allow_mib) * 1024))
peak_c=$(($(kib $cpid VmHWM) - base_c)) peak_s=$(($(kib $spid VmHWM) - base_s))
check "peak RSS growth within --session-cap ${cap_mib} MiB + ${allow_mib} MiB: client $((peak_c / 1024)) MiB, server $((peak_s / 1024)) MiB" \
    "[ $peak_c -le $bound ] && [ $peak_s -le $bound ]"
kill -TERM "$cpid" "$spid"
wait "$cpid"
crc=$?
wait "$spid"
src=$?
check "(c) the server's connection (its --stats at exit) saw the address change: $(grep -m1 'path migrations' "$tmp/s.err")" \
    "grep -q 'path migrations [1-9]' $tmp/s.err"
check "SIGTERM: client and server exit 0 ($crc, $src), no sanitizer report" \
    "[ $crc = 0 ] && [ $src = 0 ] && ! grep -q 'Sanitizer' $tmp/c.err $tmp/s.err"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
