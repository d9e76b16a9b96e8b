#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `quack tunnel --udp-listen / --udp-to`: UDP over QUIC
# DATAGRAM frames (RFC 9221), end to end on loopback:
#  - a UDP echo through the tunnel: 1,000 queries in flight at once from one
#    socket, then 20 sockets (sessions) with 50 each; every reply must come
#    back and match its query (SHA-256 over all queries vs all replies);
#  - dig (dnsutils) through the tunnel to a local dnsmasq answers;
#  - idle sessions expire (--udp-idle) and are logged.
# Usage: tests/cli/tunnel_udp.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_udp.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port udp_port dns_port tcp_port udp2_port tcp2_port

python3 - "$echo_port" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
s.bind(("127.0.0.1", int(sys.argv[1])))
while True:
    d, a = s.recvfrom(65536)
    s.sendto(d, a)
PY
pids+=($!)
wait_udp "$echo_port" || no "the UDP echo did not come up"

# start_pair UDP_TO TCP_PORT UDP_PORT [CLIENT OPTIONS]: sets spid, cpid.
start_pair() {
    local to=$1 tport=$2 uport=$3
    shift 3
    # Truncate first: the server truncates its own file only once it is
    # forked, and until then wait_line would read the last pair's line.
    : >"$tmp/s.out"
    "$q" tunnel server --listen 127.0.0.1:0 --to 127.0.0.1:9 --udp-to "$to" --udp-idle 1s \
        >"$tmp/s.out" 2>"$tmp/s.log" &
    spid=$!
    pids+=($spid)
    wait_line "$tmp/s.out" '^listening on' || return 1
    local saddr pin
    saddr=$(listen_addr "$tmp/s.out")
    pin=$(listen_pin "$tmp/s.out")
    : >"$tmp/c.out"
    "$q" tunnel client --connect "$saddr" --pin "$pin" --listen "127.0.0.1:$tport" \
        --udp-listen "127.0.0.1:$uport" "$@" >"$tmp/c.out" 2>"$tmp/c.err" &
    cpid=$!
    pids+=($cpid)
    wait_line "$tmp/c.out" '^tunnel: listening on'
}

"$q" tunnel client --connect 127.0.0.1:1 --insecure --listen 127.0.0.1:0 --udp-listen x \
    >/dev/null 2>"$tmp/err"
check "a bad --udp-listen exits 2" "[ $? -eq 2 ] && grep -q -- '--udp-listen wants' $tmp/err"

if start_pair "127.0.0.1:$echo_port" "$tcp_port" "$udp_port" --udp-idle 1s; then
    check "the client says where UDP is received" "grep -q 'udp listening on 127.0.0.1:$udp_port' $tmp/c.out"
    python3 - "$udp_port" >"$tmp/burst" 2>&1 <<'PY'
import hashlib, os, select, socket, sys, time
port = int(sys.argv[1])
def run(socks, per):
    sent, got = {}, {}
    for i, s in enumerate(socks):
        for j in range(per):
            q = b"%05d-%05d-" % (i, j) + os.urandom(40 + (i * 7 + j) % 200)
            sent[q[:12]] = q
            s.send(q)
    deadline = time.time() + 15
    while len(got) < len(sent) and time.time() < deadline:
        r, _, _ = select.select(socks, [], [], 0.5)
        for s in r:
            d = s.recv(65536)
            got[d[:12]] = d
    hs = hashlib.sha256(b"".join(sent[k] for k in sorted(sent))).hexdigest()
    hr = hashlib.sha256(b"".join(got[k] for k in sorted(got))).hexdigest()
    return len(sent), len(got), hs == hr
def sock():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.connect(("127.0.0.1", port))
    return s
n, g, same = run([sock()], 1000)
print("one", n, g, "same" if same else "differ")
n, g, same = run([sock() for _ in range(20)], 50)
print("twenty", n, g, "same" if same else "differ")
PY
    check "1,000 queries in flight from one socket all echo intact ($(grep one "$tmp/burst"))" \
        "grep -q '^one 1000 1000 same' $tmp/burst"
    check "20 sessions x 50 queries in flight all echo intact ($(grep twenty "$tmp/burst"))" \
        "grep -q '^twenty 1000 1000 same' $tmp/burst"
    n_open=$(grep -c 'udp session [0-9]* opened' "$tmp/s.log")
    check "the server opened one session per source port ($n_open)" "[ $n_open -eq 21 ]"
    sleep 2.5
    n_exp=$(grep -c 'udp session [0-9]* expired' "$tmp/s.log")
    check "idle sessions expire after --udp-idle 1s (server: $n_exp expired)" "[ $n_exp -eq 21 ]"
    check "on the client too" "[ \$(grep -c 'udp session [0-9]* expired' $tmp/c.err) -eq 21 ]"
    kill -TERM "$cpid" "$spid"
    wait "$cpid" "$spid"
else
    no "udp tunnel did not come up: $(cat "$tmp/s.log" "$tmp/c.err")"
fi

if command -v dnsmasq >/dev/null && command -v dig >/dev/null; then
    dnsmasq --no-daemon --port="$dns_port" --listen-address=127.0.0.1 --bind-interfaces \
        --no-resolv --no-hosts --address=/tunnel.test/192.0.2.77 --pid-file= \
        >"$tmp/dnsmasq.log" 2>&1 &
    pids+=($!)
    wait_udp "$dns_port" || no "dnsmasq did not come up: $(cat "$tmp/dnsmasq.log")"
    if start_pair "127.0.0.1:$dns_port" "$tcp2_port" "$udp2_port"; then
        a=$(dig +short +time=3 +tries=1 @127.0.0.1 -p "$udp2_port" www.tunnel.test A)
        check "dig through the tunnel gets dnsmasq's answer ($a)" "[ '$a' = 192.0.2.77 ]"
        kill -TERM "$cpid" "$spid"
        wait "$cpid" "$spid"
    else
        no "udp tunnel for dig did not come up: $(cat "$tmp/s.log" "$tmp/c.err" | tail -5)"
    fi
else
    echo "skip - dnsmasq or dig not installed"
fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
