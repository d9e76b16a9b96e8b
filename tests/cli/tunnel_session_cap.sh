#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: src/tunnel/session.c apps/cmd_tunnel.c
# `quack tunnel server --session-buffer 1M --session-cap 2M`: flows whose
# replay buffers grew do not take the whole cap from the flows that come
# after them, end to end on loopback:
#  - two downloads of 20 MB whose readers never read: the server's buffers
#    for them fill and grow, and stop at 3/4 of the cap (1.5 MiB: one flow
#    at 1 MiB, the other at 512 KiB), where their TCP reads are held back;
#    before, they grew to the whole 2 MiB and a third flow was refused;
#  - a third download (100 kB) gets its bytes (SHA-256 compared by
#    tunnel_peer.py) while the two still hold their buffers, and the
#    server's --stats say flows_refused=0.
# Usage: tests/cli/tunnel_session_cap.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_session_cap.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports src_port srv_port cli_port

$peer sized "$src_port" 5 &
pids+=($!)
wait_tcp "$src_port" || no "the source did not listen"
caps=(--session-buffer 1M --session-cap 2M)
"$q" tunnel server --listen "127.0.0.1:$srv_port" --to "127.0.0.1:$src_port" "${caps[@]}" \
    --stats >"$tmp/s.out" 2>"$tmp/s.err" &
pids+=($!)
wait_line "$tmp/s.out" '^listening on' || no "the server did not come up: $(cat "$tmp/s.err")"
"$q" tunnel client --connect "127.0.0.1:$srv_port" --insecure --listen "127.0.0.1:$cli_port" \
    "${caps[@]}" >"$tmp/c.out" 2>"$tmp/c.err" &
pids+=($!)
wait_line "$tmp/c.out" '^tunnel: listening on' || no "the client did not come up"

# stall FILE: asks for 20 MB through the tunnel and never reads.
stall() {
    python3 - "$cli_port" >"$1" 2>&1 <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.sendall(b"20000000\n")
print("asked", flush=True)
time.sleep(60)
PY
    pids+=($!)
}
# field NAME: its value on the server's last stats line.
field() { grep '^stats: t=' "$tmp/s.err" | tail -1 | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
stall "$tmp/h1"
stall "$tmp/h2"
wait_line "$tmp/h1" asked && wait_line "$tmp/h2" asked || no "the stalled readers did not connect"
# Their buffers are full once buffer_bytes stays put for two stats lines.
prev=-1
for _ in $(seq 20); do
    sleep 1.1
    now=$(field buffer_bytes)
    [ "${now:-0}" -gt 0 ] && [ "$now" = "$prev" ] && break
    prev=$now
done
held=$(field buffer_bytes)
check "two stalled flows hold $held bytes of buffers: 3/4 of the 2 MiB cap (1572864), not all of it" \
    "[ '$held' = 1572864 ]"
$peer get "$cli_port" 100000 5 >"$tmp/g.out" 2>&1
rc=$?
check "a third download through the same session gets its 100000 bytes (exit $rc: $(head -c 200 "$tmp/g.out"))" \
    "[ $rc = 0 ]"
sleep 1.1 # one more stats line
check "the server refused no flow (flows_refused=$(field flows_refused))" \
    "[ '$(field flows_refused)' = 0 ]"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
