#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: src/sim/relay.c
# quack netem on loopback: 25 ms each way adds 50 +- 2 ms to a UDP echo RTT, and a
# 100 Mbit/s rate caps a UDP flood within 5%. Usage: netem.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: netem.sh BUILD_DIR}
quack=$build/quack
here=$(cd "$(dirname "$0")" && pwd)
py="python3 $here/udp_echo.py"
. "$here/lib/ports.bash"
pick_ports p0 p1 p2 p3 p4 p5
base=$p0
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. RTT through 25 ms each way.
$py echo $base & pids+=($!)
"$quack" netem --listen 127.0.0.1:$((base + 1)) --to 127.0.0.1:$base --delay 25ms \
    --duration 120s & pids+=($!)
wait_udp $base && wait_udp $((base + 1)) || fail "the echo or the relay did not come up"
direct=$($py ping $base 20)
relayed=$($py ping $((base + 1)) 20)
added=$(python3 -c "print(round($relayed - $direct, 3))")
echo "echo RTT direct ${direct} ms, through netem ${relayed} ms: +${added} ms (want 50 +- 2)"
python3 -c "import sys; sys.exit(0 if abs($added - 50) <= 2 else 1)" || fail "RTT added $added ms"

# 2. A 150 Mbit/s flood through a 100 Mbit/s link.
$py sink $((base + 2)) 2.0 > /tmp/netem_sink.$$ & sinkpid=$!
pids+=($sinkpid)
"$quack" netem --listen 127.0.0.1:$((base + 3)) --to 127.0.0.1:$((base + 2)) --rate 100mbit \
    --stats --duration 120s > /tmp/netem_stats.$$ & pids+=($!)
wait_udp $((base + 2)) && wait_udp $((base + 3)) || fail "the sink or the relay did not come up"
$py flood $((base + 3)) 150 2.5 1400
wait $sinkpid || true
rate=$(cat /tmp/netem_sink.$$)
rm -f /tmp/netem_sink.$$
echo "flood at 150 Mbit/s through --rate 100mbit: receiver saw $rate Mbit/s (want 100 +- 5%)"
head -3 /tmp/netem_stats.$$ || true
rm -f /tmp/netem_stats.$$
python3 -c "import sys; sys.exit(0 if abs($rate - 100) <= 5 else 1)" || fail "rate $rate Mbit/s"

# 3. ECN: ECT(0) passes through; a step AQM at 2 packets marks the rest of a burst CE.
$py tos_sink $((base + 4)) 1.0 > /tmp/netem_tos.$$ & tospid=$!
pids+=($tospid)
"$quack" netem --listen 127.0.0.1:$((base + 5)) --to 127.0.0.1:$((base + 4)) --rate 800kbit \
    --aqm step --step-k 2pkt --duration 120s & pids+=($!)
wait_udp $((base + 4)) && wait_udp $((base + 5)) || fail "the sink or the relay did not come up"
$py tos_send $((base + 5)) 2 20
wait $tospid || true
read -r notect ect1 ect0 ce < /tmp/netem_tos.$$
rm -f /tmp/netem_tos.$$
echo "ECN through a step-marking netem: not-ect $notect ect1 $ect1 ect0 $ect0 ce $ce (want 3 ECT(0), 17 CE)"
[ "$notect" = 0 ] && [ "$ect0" = 3 ] && [ "$ce" = 17 ] || fail "ECN codepoints not preserved/marked"

# 4. Bad arguments are named and exit non-zero.
if "$quack" netem --listen 127.0.0.1:1 --to 127.0.0.1:2 --delay 25parsecs 2>/tmp/netem_err.$$; then
    fail "bad --delay accepted"
fi
grep -q "delay" /tmp/netem_err.$$ || fail "error does not name the option"
rm -f /tmp/netem_err.$$
echo "netem: OK"
