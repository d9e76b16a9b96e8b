#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Do tunnel flows take turns? One 50 MB download through `quack tunnel`
# over a `quack netem` path (25 ms each way, 100 Mbit/s, 50 ms queue, the
# path of bench/tunnel.sh, no loss), and, from 1 s into it, ten 100-byte
# downloads one after another: prints each small download's time, and the
# bulk download's. With streams served one at a time (non-incremental, the
# default RFC 9218 priority) a small download waits for the bulk one's last
# byte; with incremental streams (QK_TUNNEL_STREAM_URGENCY) it takes about
# one round trip plus the queue. docs/tunnel.md quotes a run.
# usage: bench/tunnel_turns.sh [BUILD_DIR (build/release)] [CARRIER (udp|tcp)]
set -euo pipefail
build=$(cd "${1:-build/release}" && pwd)
carrier=${2:-udp}
here=$(cd "$(dirname "$0")" && pwd)
q=$build/quack
peer="python3 $here/../tests/cli/tunnel_peer.py"
[ -x "$q" ] || { echo "tunnel_turns.sh: run 'make release' first ($q)" >&2; exit 1; }
. "$here/../tests/cli/lib/ports.bash" # pick_ports, wait_tcp, wait_udp
pick_ports src_port relay_port srv_port cli_port
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
$peer sized "$src_port" 7 &
pids+=($!)
wait_tcp "$src_port" || { echo "the source did not listen" >&2; exit 1; }
tcpflag=() qlimit=(--limit-time 50ms)
[ "$carrier" = tcp ] && tcpflag=(--tcp) qlimit=()
"$q" tunnel server --carrier "$carrier" --listen "127.0.0.1:$srv_port" \
    --to "127.0.0.1:$src_port" --quiet >"$tmp/s.out" 2>&1 &
pids+=($!)
if [ "$carrier" = tcp ]; then wait_tcp "$srv_port"; else wait_udp "$srv_port"; fi
"$q" netem "${tcpflag[@]}" --listen "127.0.0.1:$relay_port" --to "127.0.0.1:$srv_port" \
    --delay 25ms --rate 100mbit "${qlimit[@]}" >/dev/null 2>&1 &
pids+=($!)
if [ "$carrier" = tcp ]; then wait_tcp "$relay_port"; else wait_udp "$relay_port"; fi
"$q" tunnel client --carrier "$carrier" --connect "127.0.0.1:$relay_port" --insecure --quiet \
    --listen "127.0.0.1:$cli_port" >"$tmp/c.out" 2>&1 &
pids+=($!)
wait_tcp "$cli_port" || { echo "the tunnel client did not listen: $(cat "$tmp/c.out")" >&2; exit 1; }
python3 - "$cli_port" <<'PY'
import socket, statistics, sys, threading, time
port = int(sys.argv[1])
def get(n):
    t = time.time()
    s = socket.create_connection(("127.0.0.1", port), timeout=120)
    s.sendall(b"%d\n" % n)
    got = 0
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        got += len(b)
    s.close()
    if got != n:
        sys.exit("short download: %d of %d bytes" % (got, n))
    return time.time() - t
idle = get(100)
res = {}
bulk = threading.Thread(target=lambda: res.update(bulk=get(50 << 20)))
bulk.start()
time.sleep(1.0)
small = [get(100) for _ in range(10)]
bulk.join()
ms = [x * 1000 for x in small]
print("idle 100-byte download: %.0f ms" % (idle * 1000))
print("ten 100-byte downloads from 1 s into a 50 MB one (ms): " + " ".join("%.0f" % x for x in ms))
print("median %.0f ms, max %.0f ms; the 50 MB download: %.2f s" % (statistics.median(ms), max(ms), res["bulk"]))
PY
