#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/tunnel_hop.c src/transport/conn/conn_path.c src/io/loop.c src/sim/relay.c apps/cmd_netem.c
# Port hopping (docs/tunnel.md "Port hopping"), end to end on loopback
# through `quack netem` in front of a port range:
#  - the server listens on 12 ports (--listen ADDR:P1-P2), the relay maps
#    12 ports of its own onto them (--listen R1-R2 --to P1-P2) at a fixed
#    rate, and blackholes the port in use 5 s after it starts
#    (--blackhole-port active:5s-);
#  - the client hops every 2 s (--hop-interval 2s) while it downloads 100 MB
#    (16 MB under ASan, at a lower rate so that it lasts as long): the bytes
#    arrive intact (SHA-256), the relay did drop datagrams of the dark port,
#    the server's counters show datagrams on >= 10 distinct ports and one
#    handshake (no new one), the client's show the hops that arrived;
#  - the option errors: a range of more than 1024 ports, --hop-interval
#    without a range or on the server, a range with --carrier tcp, a netem
#    range of another size than --to's: exit 2 with a line naming the fix.
# Usage: tests/cli/tunnel_hop.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_hop.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports sized_port tcp_port

asan=no
grep -q '^QK_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && asan=yes
size=${HOP_BYTES:-$([ $asan = yes ] && echo 16000000 || echo 100000000)}
rate=$([ $asan = yes ] && echo 5mbit || echo 30mbit) # about 27 s of download either way
n_ports=12

# pick_range N: sets range_lo to the first of 2N free consecutive loopback
# ports outside the ephemeral range (the server's N, then the relay's N).
pick_range() {
    ephemeral_range
    local first=10000 last=$((EPH_LO - 1)) try base k busy
    [ "$EPH_LO" -ge 12000 ] || first=$((EPH_HI + 1)) last=65535
    for try in $(seq 50); do
        base=$((first + (($$ * 37 + try * 101) % (last - first - 2 * $1))))
        busy=0
        for ((k = 0; k < 2 * $1; k++)); do port_in_use $((base + k)) && busy=1 && break; done
        [ $busy = 0 ] && range_lo=$base && return 0
    done
    return 1
}
pick_range $n_ports || no "no $((2 * n_ports)) free consecutive ports"
srv_lo=$range_lo srv_hi=$((range_lo + n_ports - 1))
rel_lo=$((range_lo + n_ports)) rel_hi=$((range_lo + 2 * n_ports - 1))

$peer sized "$sized_port" 7 &
pids+=($!)
wait_tcp "$sized_port" || no "the TCP peer did not come up"

"$q" tunnel server --listen "127.0.0.1:$srv_lo-$srv_hi" --to "127.0.0.1:$sized_port" --stats \
    >"$tmp/s.out" 2>"$tmp/s.err" &
spid=$!
pids+=($spid)
wait_line "$tmp/s.out" '^listening on 127' || no "server did not come up: $(cat "$tmp/s.err")"
check "the server listens on the range ($(grep -m1 'ports' "$tmp/s.out"))" \
    "grep -q '^listening on ports $srv_lo-$srv_hi too ($n_ports UDP sockets' $tmp/s.out"

"$q" netem --listen "127.0.0.1:$rel_lo-$rel_hi" --to "127.0.0.1:$srv_lo-$srv_hi" --rate "$rate" \
    --delay 5ms --limit 400kB --blackhole-port active:5s- --stats >"$tmp/n.out" 2>&1 &
npid=$!
pids+=($npid)
wait_udp "$rel_hi" || no "the relay did not come up: $(cat "$tmp/n.out")"

"$q" tunnel client --connect "127.0.0.1:$rel_lo-$rel_hi" --insecure --listen "127.0.0.1:$tcp_port" \
    --hop-interval 2s --stats >"$tmp/c.out" 2>"$tmp/c.err" &
cpid=$!
pids+=($cpid)
wait_line "$tmp/c.out" '^tunnel: listening on' || no "client did not come up: $(cat "$tmp/c.err")"

t0=$(date +%s.%N)
r=$($peer get "$tcp_port" "$size" 7)
t1=$(date +%s.%N)
secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
check "$size bytes arrive intact across the hops and the dark port in $secs s ($r)" \
    "[ '${r%% *}' = ok ]"
sleep 1.2 # one more stats line each
dark=$(sed -n 's/^netem: server port \([0-9]*\) (the active one) dark from.*/\1/p' "$tmp/n.out")
drops=$(grep '^netem t=' "$tmp/n.out" | tail -1 | sed -n 's/.* dark_drops \([0-9]*\).*/\1/p')
check "the relay blackholed the port in use at 5 s (port ${dark:-none}) and dropped its datagrams ($drops)" \
    "[ -n '$dark' ] && [ '${drops:-0}' -gt 0 ]"
sl=$(grep '^stats: hop' "$tmp/s.err" | tail -1)
cl=$(grep '^stats: hop' "$tmp/c.err" | tail -1)
seen=$(sed -n 's/.* ports_with_datagrams=\([0-9]*\).*/\1/p' <<<"$sl")
hs=$(sed -n 's/.* handshakes=\([0-9]*\).*/\1/p' <<<"$sl")
check "the server saw datagrams on >= 10 of its $n_ports ports ($seen) and one handshake, no new one ($hs)" \
    "[ '${seen:-0}' -ge 10 ] && [ '$hs' = 1 ]"
hops=$(sed -n 's/.* hops=\([0-9]*\).*/\1/p' <<<"$cl")
done_=$(sed -n 's/.* hops_done=\([0-9]*\).*/\1/p' <<<"$cl")
fails_=$(sed -n 's/.* hop_failures=\([0-9]*\).*/\1/p' <<<"$cl")
check "the client hopped >= 9 times, each but the failed ones arriving ($hops hops, $done_ done, $fails_ failed)" \
    "[ '${hops:-0}' -ge 9 ] && [ \$((done_ + fails_)) -ge \$((hops - 1)) ]"
check "no redial: the connection survived the dark port" "! grep -q 'redialling' $tmp/c.err"
kill -TERM $cpid $spid $npid
wait $cpid $spid $npid 2>/dev/null

# Option errors: exit 2, a line that names the fix.
err() { # WANT_REGEX ARGS...: exit 2 and stderr matching
    local want=$1
    shift
    "$q" "$@" >"$tmp/e.out" 2>"$tmp/e.err"
    local rc=$?
    check "quack $* -> exit 2: $(head -1 "$tmp/e.err")" "[ $rc = 2 ] && grep -q '$want' $tmp/e.err"
}
err 'at most 1024' tunnel server --listen 127.0.0.1:20000-21024 --to 127.0.0.1:1
err 'needs a port range' tunnel client --connect 127.0.0.1:20000 --insecure --listen 127.0.0.1:0 \
    --hop-interval 2s
err 'the server listens on a range' tunnel server --listen 127.0.0.1:20000-20009 --to 127.0.0.1:1 \
    --hop-interval 2s
err 'go with --carrier udp' tunnel server --carrier tcp --listen 127.0.0.1:20000-20009 \
    --to 127.0.0.1:1
err 'a port range is ADDR:P1-P2' tunnel client --connect 127.0.0.1:20009-20000 --insecure \
    --listen 127.0.0.1:0
err 'same number of ports' netem --listen 127.0.0.1:20000-20009 --to 127.0.0.1:30000-30004
err 'not a port of --to' netem --listen 127.0.0.1:20000-20009 --to 127.0.0.1:30000-30009 \
    --blackhole-port 40000:5s-
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
