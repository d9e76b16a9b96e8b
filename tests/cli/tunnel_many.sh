#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `quack tunnel` under load: 100 parallel TCP
# connections of random sizes (0..100 kB), each echoed byte-exact (SHA-256,
# with half-close both ways: the sender shuts down its side, the echo
# finishes and half-closes back), through `quack netem` with 10 ms each way
# and 1 % loss each way; and a target killed while it holds unread data
# resets the client's TCP connection. Usage: tests/cli/tunnel_many.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_many.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port relay_port tcp_port sink_port tcp2_port

start_echo_peer "$echo_port"
"$q" tunnel server --listen 127.0.0.1:0 --to "127.0.0.1:$echo_port" --quiet >"$tmp/s.out" 2>"$tmp/s.err" &
pids+=($!)
wait_line "$tmp/s.out" '^listening on' || no "server did not come up"
saddr=$(listen_addr "$tmp/s.out")
"$q" netem --listen "127.0.0.1:$relay_port" --to "$saddr" --delay 10ms --loss 1% --seed 5 \
    --duration 900s >/dev/null 2>&1 &
pids+=($!)
wait_udp "$relay_port" || no "the relay did not come up"
"$q" tunnel client --connect "127.0.0.1:$relay_port" --insecure --listen "127.0.0.1:$tcp_port" \
    --quiet >"$tmp/c.out" 2>"$tmp/c.err" &
pids+=($!)
if wait_line "$tmp/c.out" '^tunnel: listening on'; then
    par=()
    RANDOM=42
    for i in $(seq 100); do
        n=$(((RANDOM * 32768 + RANDOM) % 100001))
        $peer roundtrip "$tcp_port" "$n" >"$tmp/r$i" 2>&1 &
        par+=($!)
    done
    wait "${par[@]}"
    n_ok=$(cat "$tmp"/r* | grep -c '^ok')
    check "100 parallel echoes of random sizes through 1% loss each way, SHA-256 equal ($n_ok of 100)" \
        "[ $n_ok = 100 ]"
else
    no "client did not come up: $(cat "$tmp/c.err")"
fi

# A target that never reads, killed while our bytes sit unread in its socket:
# the kernel resets the connection; the tunnel passes the reset on.
python3 - "$sink_port" >"$tmp/sink.out" 2>&1 <<'EOF' &
import socket, sys, time
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", int(sys.argv[1])))
ls.listen(4)
c, _ = ls.accept()
print("accepted", flush=True)
time.sleep(60)
EOF
sinkpid=$!
pids+=($sinkpid)
"$q" tunnel server --listen 127.0.0.1:0 --to "127.0.0.1:$sink_port" --quiet >"$tmp/s2.out" 2>&1 &
pids+=($!)
wait_line "$tmp/s2.out" '^listening on' || no "second server did not come up: $(cat "$tmp/s2.out")"
saddr=$(listen_addr "$tmp/s2.out")
"$q" tunnel client --connect "$saddr" --insecure --listen "127.0.0.1:$tcp2_port" --quiet \
    >"$tmp/c2.out" 2>&1 &
pids+=($!)
wait_line "$tmp/c2.out" '^tunnel: listening on' || no "second client did not come up: $(cat "$tmp/c2.out")"
python3 - "$tcp2_port" "$sinkpid" "$tmp/sink.out" >"$tmp/killed" 2>&1 <<'EOF'
import os, signal, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=15)
s.sendall(b"x" * 100000)
for _ in range(100):
    if "accepted" in open(sys.argv[3]).read():
        break
    time.sleep(0.1)
time.sleep(0.5)
os.kill(int(sys.argv[2]), signal.SIGKILL)
try:
    b = s.recv(10)
    print("eof" if not b else "data")
except ConnectionResetError:
    print("reset")
except socket.timeout:
    print("timeout")
EOF
check "a killed target resets the client's TCP connection ($(cat "$tmp/killed"))" \
    "grep -q '^reset' $tmp/killed"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
