#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `quack tunnel --secret-file`, end to end on loopback.
# The target counts every TCP connection and byte it gets, so "nothing
# reached the target" is asserted, not assumed:
#  - the right secret: echo round trip, SHA-256 equal;
#  - a wrong secret: the server answers the client's first CONNECT (its
#    session's control stream) 405 as a web server would; the client exits 3
#    with "access denied: wrong secret", the target saw nothing;
#  - no secret: the same 405, the flow gets no data, the client exits 3,
#    the target saw nothing;
#  - replay: every datagram a good client sent (captured by a relay) is sent
#    again from another address: the server authenticates nobody new, and
#    the target sees no new connection.
# Usage: tests/cli/tunnel_auth.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_auth.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports target_port tcp_port relay_port tcp2_port tcp3_port

# The target: an echo server that appends "conn" per connection and
# "bytes N" per received chunk to $tmp/target.log.
python3 - "$target_port" "$tmp/target.log" <<'EOF' &
import socket, sys, threading
port, log = int(sys.argv[1]), sys.argv[2]
lock = threading.Lock()
def note(s):
    with lock, open(log, "a") as f:
        f.write(s + "\n")
def conn(c):
    note("conn")
    while True:
        b = c.recv(65536)
        if not b:
            break
        note("bytes %d" % len(b))
        c.sendall(b)
    c.shutdown(socket.SHUT_WR)
    c.close()
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(64)
while True:
    c, _ = ls.accept()
    threading.Thread(target=conn, args=(c,), daemon=True).start()
EOF
pids+=($!)
wait_tcp "$target_port" || no "the target did not listen"

# The relay: forwards client datagrams to the server (and replies back),
# appending each client datagram to $tmp/capture (2-byte length + bytes).
relay() {
    python3 - "$relay_port" "$1" "$tmp/capture" <<'EOF' &
import socket, struct, sys, select
lport, server, cap = int(sys.argv[1]), sys.argv[2], sys.argv[3]
host, port = server.rsplit(":", 1)
srv = (host, int(port))
down = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
down.bind(("127.0.0.1", lport))
up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
up.connect(srv)
client = None
with open(cap, "ab") as f:
    while True:
        r, _, _ = select.select([down, up], [], [])
        if down in r:
            d, client = down.recvfrom(65536)
            f.write(struct.pack("!H", len(d)) + d)
            f.flush()
            up.send(d)
        if up in r:
            d = up.recv(65536)
            if client:
                down.sendto(d, client)
EOF
    rpid=$!
    pids+=($rpid)
    wait_udp "$relay_port" || no "the relay did not bind 127.0.0.1:$relay_port"
}

head -c 32 /dev/urandom | base64 >"$tmp/secret"
head -c 32 /dev/urandom | base64 >"$tmp/wrong"
"$q" tunnel server --listen 127.0.0.1:0 --to "127.0.0.1:$target_port" --secret-file "$tmp/secret" \
    >"$tmp/s.out" 2>"$tmp/s.log" &
spid=$!
pids+=($spid)
wait_line "$tmp/s.out" '^listening on' || no "server did not come up: $(cat "$tmp/s.log")"
saddr=$(listen_addr "$tmp/s.out")
pin=$(listen_pin "$tmp/s.out")

printf 'short\n' >"$tmp/short"
"$q" tunnel server --listen 127.0.0.1:0 --to 127.0.0.1:1 --secret-file "$tmp/short" \
    >/dev/null 2>"$tmp/err"
check "a secret under 16 bytes exits 2" "[ $? -eq 2 ] && grep -q '16 to 1024' $tmp/err"

# The right secret, through the capturing relay.
relay "$saddr"
wait_udp "$relay_port" || no "the relay did not come up"
"$q" tunnel client --connect "127.0.0.1:$relay_port" --pin "$pin" --secret-file "$tmp/secret" \
    --listen "127.0.0.1:$tcp_port" >"$tmp/c.out" 2>"$tmp/c.err" &
cpid=$!
pids+=($cpid)
if wait_line "$tmp/c.out" '^tunnel: listening on'; then
    r=$($peer roundtrip "$tcp_port" 2000000)
    check "the right secret: 2 MB echo, SHA-256 equal ($r)" "[ '${r%% *}' = ok ]"
    check "the server logs the proof" "grep -q 'proved the secret' $tmp/s.log"
    kill -TERM "$cpid"
    wait "$cpid"
else
    no "client with the right secret did not come up: $(cat "$tmp/c.err" "$tmp/s.log")"
fi
kill "$rpid"
wait "$rpid" 2>/dev/null
n_conn=$(grep -c '^conn' "$tmp/target.log")
check "the target saw the good client's flow ($n_conn connection)" "[ $n_conn -ge 1 ]"

# A wrong secret.
"$q" tunnel client --connect "$saddr" --pin "$pin" --secret-file "$tmp/wrong" \
    --listen "127.0.0.1:$tcp2_port" >"$tmp/w.out" 2>"$tmp/w.err" &
wpid=$!
pids+=($wpid)
wait_gone "$wpid"
wait "$wpid"
rc=$?
check "a wrong secret: the client exits 3 and says why ($(grep -m1 denied "$tmp/w.err"))" \
    "[ $rc -eq 3 ] && grep -q 'access denied: wrong secret' $tmp/w.err"
check "the server answered its CONNECT as a web server: 405" "grep -q 'answered 405' $tmp/w.err"

# No secret at all: its first flow closes the connection.
"$q" tunnel client --connect "$saddr" --pin "$pin" --listen "127.0.0.1:$tcp3_port" \
    >"$tmp/n.out" 2>"$tmp/n.err" &
npid=$!
pids+=($npid)
if wait_line "$tmp/n.out" '^tunnel: listening on'; then
    python3 - "$tcp3_port" >"$tmp/n.flow" 2>&1 <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"secret-less data" * 100)
try:
    b = s.recv(10)
    print("eof" if not b else "data")
except (ConnectionResetError, socket.timeout) as e:
    print(type(e).__name__)
EOF
    wait_gone "$npid"
    wait "$npid"
    rc=$?
    check "no secret: the flow gets no data ($(cat "$tmp/n.flow"))" "! grep -q '^data' $tmp/n.flow"
    check "and the client exits 3: the server answered 405 ($(grep -m1 denied "$tmp/n.err"))" \
        "[ $rc -eq 3 ] && grep -q 'access denied: .*answered 405' $tmp/n.err"
else
    no "client without a secret did not start"
fi
check "the target saw nothing from the wrong or missing secret (still $n_conn connection)" \
    "[ \$(grep -c '^conn' $tmp/target.log) -eq $n_conn ]"

# Replay every captured datagram of the good session from a new address.
n_proofs=$(grep -c 'proved the secret' "$tmp/s.log")
n_dgrams=$(python3 - "$tmp/capture" "$saddr" <<'EOF'
import socket, struct, sys, time
data = open(sys.argv[1], "rb").read()
host, port = sys.argv[2].rsplit(":", 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((host, int(port)))
n = off = 0
while off + 2 <= len(data):
    (l,) = struct.unpack("!H", data[off:off + 2])
    s.send(data[off + 2:off + 2 + l])
    off += 2 + l
    n += 1
    if n % 50 == 0:
        time.sleep(0.005)
print(n)
EOF
)
sleep 2
check "replaying the $n_dgrams captured datagrams authenticates nobody" \
    "[ \$(grep -c 'proved the secret' $tmp/s.log) -eq $n_proofs ]"
check "and reaches no target (still $n_conn connection, $(grep -c '^bytes' "$tmp/target.log") chunks)" \
    "[ \$(grep -c '^conn' $tmp/target.log) -eq $n_conn ]"
check "the server is still up" "kill -0 $spid"
kill -TERM "$spid"
wait "$spid"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
