#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/tunnel_h3.c src/h3/h3.c
# What an observer with the TLS keys sees of a `quack tunnel` session over
# UDP: tshark captures loopback while a client with --secret-file carries a
# 1 MB echo (SHA-256 compared; --sni www.example.org) and 20 UDP datagrams
# (CONNECT-UDP, HTTP Datagrams), and a stranger (`quack get`) fetches the
# masquerade site from the same server; both sides write --keylog. The
# decrypted dissection (tshark -V with tls.keylog_file) must show only
# HTTP/3: ALPN h3, HEADERS with :method CONNECT, DATA frames, the site's
# GET; no "quack-tunnel" anywhere (dissection and raw capture), and no
# malformed or undecryptable packet. Debian 12's tshark 4.0 dissects HTTP/3
# frames but not QPACK (it is built without nghttp3), so a header section
# is checked by its first bytes: 00 00 (no dynamic table, RFC 9204 §4.5.1)
# and the static-table line cf (index 15, ":method: CONNECT") or d1 (17,
# ":method: GET") (RFC 9204 §4.5.2, Appendix A); the proof header's name,
# a literal, is in the bytes that follow. Needs tshark and root (capture on lo);
# skipped otherwise. Usage: tests/cli/tunnel_h3_wire.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_h3_wire.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...


if ! command -v tshark >/dev/null || [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: needs tshark (scripts/deps.sh installs it) and root to capture on lo"
    exit 0
fi
pick_ports echo_port tcp_port udp_port uecho_port ulisten_port
start_echo_peer "$echo_port"
python3 "$(dirname "$0")/udp_echo.py" echo "$uecho_port" &
pids+=($!)

mkdir -p "$tmp/site"
printf '<!doctype html><title>hello</title>\n' >"$tmp/site/index.html"
head -c 32 /dev/urandom | base64 >"$tmp/secret"
keylog="$tmp/keys.log"

tshark -i lo -f "udp port $udp_port" -w "$tmp/cap.pcap" >"$tmp/tshark.log" 2>&1 &
cap=$!
pids+=($cap)
wait_line "$tmp/tshark.log" 'Capturing on' || no "tshark did not start: $(cat "$tmp/tshark.log")"
sleep 0.3

"$q" tunnel server --listen "127.0.0.1:$udp_port" --to "127.0.0.1:$echo_port" \
    --secret-file "$tmp/secret" --masquerade "$tmp/site" --keylog "$keylog" --no-gso \
    --udp-to "127.0.0.1:$uecho_port" \
    >"$tmp/s.out" 2>"$tmp/s.log" &
pids+=($!)
wait_line "$tmp/s.out" '^listening on' || no "server did not come up: $(cat "$tmp/s.log")"
pin=$(listen_pin "$tmp/s.out")
"$q" tunnel client --connect "127.0.0.1:$udp_port" --pin "$pin" --secret-file "$tmp/secret" \
    --sni www.example.org --listen "127.0.0.1:$tcp_port" --keylog "$keylog" --no-gso \
    --udp-listen "127.0.0.1:$ulisten_port" >"$tmp/c.out" 2>"$tmp/c.err" &
cpid=$!
pids+=($cpid)
if wait_line "$tmp/c.out" '^tunnel: listening on'; then
    r=$($peer roundtrip "$tcp_port" 1000000)
    check "1 MB echo through the tunnel, SHA-256 equal ($r)" "[ '${r%% *}' = ok ]"
    u=$(python3 - "$ulisten_port" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
got = 0
for i in range(20):
    m = b"udp %d" % i
    s.sendto(m, ("127.0.0.1", int(sys.argv[1])))
    try:
        got += s.recv(100) == m
    except socket.timeout:
        pass
print(got)
EOF
)
    check "UDP through the tunnel: $u of 20 echoed" "[ $u -eq 20 ]"
else
    no "client did not come up: $(cat "$tmp/c.err")"
fi
mkdir -p "$tmp/got"
"$q" get "https://127.0.0.1:$udp_port/" --pin "$pin" --keylog "$keylog" --output "$tmp/got" \
    --no-gso >"$tmp/get.out" 2>&1
check "a stranger gets the masquerade page" "cmp -s $tmp/got/index.html $tmp/site/index.html"
kill -TERM "$cpid"
wait "$cpid"
sleep 0.5
kill -INT "$cap"
wait "$cap" 2>/dev/null

# Decode the port as QUIC: a random port can be one that Wireshark gives to
# another protocol (23272 is A21's), and that dissector would win.
as_quic=(-d "udp.port==$udp_port,quic")
tshark -r "$tmp/cap.pcap" "${as_quic[@]}" -o "tls.keylog_file:$keylog" -V >"$tmp/decoded.txt" 2>&1
n_udp=$(tshark -r "$tmp/cap.pcap" -Y udp 2>/dev/null | wc -l)
n_quic=$(tshark -r "$tmp/cap.pcap" "${as_quic[@]}" -o "tls.keylog_file:$keylog" -Y quic 2>/dev/null | wc -l)
check "every captured datagram is QUIC ($n_quic of $n_udp)" "[ $n_udp -gt 100 ] && [ $n_quic -eq $n_udp ]"
check "ALPN h3 in the handshake" "grep -q 'ALPN Next Protocol: h3' $tmp/decoded.txt"
check "the client's SNI is --sni's name" "grep -q 'Server Name: www.example.org' $tmp/decoded.txt"
# ":authority" (static 0) = "www.example.org:PORT", a literal value (hex).
auth_hex=$(printf 'www.example.org:%s' "$udp_port" | od -An -tx1 | tr -d ' \n')
check "the CONNECTs' authority is that name and the port" \
    "grep -q 'Frame Payload: 0000cf50..$auth_hex' $tmp/decoded.txt"
n_connect=$(grep -c 'Frame Payload: 0000cf' "$tmp/decoded.txt")
check "HTTP/3 HEADERS with :method CONNECT, the tunnel's streams ($n_connect)" \
    "[ $n_connect -ge 2 ]"
n_data=$(grep -c 'Type: DATA (0x0000000000000000)' "$tmp/decoded.txt")
check "HTTP/3 DATA frames ($n_data)" "[ $n_data -ge 10 ]"
check "the stranger's GET is there too" "grep -q 'Frame Payload: 0000d1' $tmp/decoded.txt"
# "proxy-authorization" in hex, a literal name in the CONNECT's section (the
# -V view cuts long payloads: the full ones from -T fields).
tshark -r "$tmp/cap.pcap" "${as_quic[@]}" -o "tls.keylog_file:$keylog" -T fields -e http3.frame_payload \
    -Y http3.frame_payload >"$tmp/payloads.txt" 2>/dev/null
check "the proof travels as a proxy-authorization header" \
    "grep -q '0000cf.*70726f78792d617574686f72697a6174696f6e' $tmp/payloads.txt"
# RFC 9298: an extended CONNECT whose :protocol is connect-udp (hex), and
# its HTTP Datagrams in QUIC DATAGRAM frames.
check "UDP rides a CONNECT-UDP request" "grep -q '636f6e6e6563742d756470' $tmp/payloads.txt"
check "and DATAGRAM frames" "grep -q 'Frame Type: DATAGRAM' $tmp/decoded.txt"
n_streams=$(grep -c 'Hypertext Transfer Protocol Version 3' "$tmp/decoded.txt")
check "tshark dissected HTTP/3 in $n_streams places" "[ $n_streams -ge 10 ]"
check "no 'quack-tunnel' in the decrypted dissection" "! grep -qi 'quack-tunnel' $tmp/decoded.txt"
check "nor in the raw capture" "! grep -qai 'quack-tunnel' $tmp/cap.pcap"
bad=$(grep -m3 -E 'Malformed|Expert Info \(Error|Decryption failed' "$tmp/decoded.txt")
check "no malformed or undecrypted packet${bad:+ ($bad)}" "[ -z '$bad' ]"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
