#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/cmd_tunnel.c apps/tunnel_config.c src/tunnel/tcp_carrier.c
# `quack tunnel` options and safe defaults, end to end on loopback (echoes
# checked by SHA-256, tunnel_peer.py):
#  - --help names the carriers in one list (udp|tcp|dns), nowhere else;
#  - --to socks5 without access control refuses to start (exit 2, naming
#    --open-proxy, --secret-file and --socks-auth-file); --open-proxy starts;
#  - --listen :PORT listens on every address, server (UDP) and client (TCP);
#  - --secret-file over --carrier tcp: the right secret echoes, a wrong one
#    and a missing one end the client with exit 3 "access denied", and the
#    target sees no connection from them;
#  - the yamux client's progress line names its carrier (tcp->yamux);
#  - --config FILE: its options apply, the command line's win (a scalar, and
#    --pin over the file's insecure = yes), the other mode's section is
#    skipped, and an unknown key is an error naming the file and line.
# Usage: tests/cli/tunnel_safe.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_safe.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port udp_port tcp_port srv_port tcp2_port tcp3_port tcp4_port

start_echo_peer "$echo_port"

# --help: one carrier list.
"$q" tunnel --help >"$tmp/help" 2>&1
n_lists=$(grep -c -- '--carrier [a-z]*|' "$tmp/help")
check "--help lists the carriers once ($n_lists: $(grep -- '--carrier [a-z]*|' "$tmp/help" | tr -s ' '))" \
    "[ $n_lists -eq 1 ] && grep -q -- '--carrier udp|tcp|dns' $tmp/help"

# An open SOCKS5 proxy needs --open-proxy.
timeout 20 "$q" tunnel server --listen 127.0.0.1:0 --to socks5 >/dev/null 2>"$tmp/open.err"
rc=$?
check "--to socks5 without access control exits 2 (rc $rc: $(head -c 150 "$tmp/open.err"))" \
    "[ $rc -eq 2 ] && grep -q -- '--open-proxy' $tmp/open.err && grep -q -- '--secret-file' $tmp/open.err && grep -q -- '--socks-auth-file' $tmp/open.err"
"$q" tunnel server --listen 127.0.0.1:0 --to socks5 --open-proxy >"$tmp/open.out" 2>&1 &
opid=$!
pids+=($opid)
check "--to socks5 --open-proxy starts" "wait_line $tmp/open.out '^listening on'"
kill -TERM "$opid"
wait "$opid"

# --listen :PORT on both ends.
"$q" tunnel server --listen ":$udp_port" --to "127.0.0.1:$echo_port" >"$tmp/s1.out" 2>&1 &
spid=$!
pids+=($spid)
if wait_line "$tmp/s1.out" '^listening on'; then
    check "server --listen :PORT binds every address ($(listen_addr "$tmp/s1.out"))" \
        "listen_addr $tmp/s1.out | grep -Eq '^(\[::\]|0\.0\.0\.0):$udp_port\$'"
    "$q" tunnel client --connect "127.0.0.1:$udp_port" --insecure --listen ":$tcp_port" \
        >"$tmp/c1.out" 2>"$tmp/c1.err" &
    cpid=$!
    pids+=($cpid)
    if wait_line "$tmp/c1.out" '^tunnel: listening on'; then
        r=$($peer roundtrip "$tcp_port" 300000)
        check "client --listen :PORT: echo through 127.0.0.1 ($r)" "[ '${r%% *}' = ok ]"
        if python3 -c 'import socket; socket.create_connection(("::1", '"$tcp_port"'), 5).close()' 2>/dev/null; then
            ok "client --listen :PORT: ::1 reaches it too"
        elif ! python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
            ok "client --listen :PORT: no IPv6 loopback on this host (skipped ::1)"
        else
            no "client --listen :PORT: ::1 does not reach it"
        fi
        kill -TERM "$cpid"
        wait "$cpid"
    else
        no "client --listen :PORT did not listen: $(cat "$tmp/c1.err")"
    fi
    kill -TERM "$spid"
    wait "$spid"
else
    no "server --listen :PORT did not start: $(cat "$tmp/s1.out")"
fi

# --secret-file over --carrier tcp. The target counts its connections.
python3 - "$srv_port" "$tmp/target.log" <<'EOF' &
import socket, sys, threading
port, log = int(sys.argv[1]), sys.argv[2]
def conn(c):
    with open(log, "a") as f:
        f.write("conn\n")
    while True:
        b = c.recv(65536)
        if not b:
            break
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
wait_tcp "$srv_port" || no "the counting target did not listen"
head -c 32 /dev/urandom | base64 >"$tmp/secret"
head -c 32 /dev/urandom | base64 >"$tmp/wrong"
"$q" tunnel server --carrier tcp --listen 127.0.0.1:0 --to "127.0.0.1:$srv_port" \
    --secret-file "$tmp/secret" >"$tmp/ts.out" 2>"$tmp/ts.err" &
tspid=$!
pids+=($tspid)
if wait_line "$tmp/ts.out" '^listening on'; then
    taddr=$(listen_addr "$tmp/ts.out")
    tpin=$(listen_pin "$tmp/ts.out")
    "$q" tunnel client --carrier tcp --connect "$taddr" --pin "$tpin" --secret-file "$tmp/secret" \
        --listen "127.0.0.1:$tcp2_port" >"$tmp/tc.out" 2>"$tmp/tc.err" &
    tcpid=$!
    pids+=($tcpid)
    if wait_line "$tmp/tc.out" '^tunnel: listening on'; then
        r=$($peer roundtrip "$tcp2_port" 1000000)
        check "tcp carrier, right secret: 1 MB echo ($r)" "[ '${r%% *}' = ok ]"
        wait_line "$tmp/tc.err" 'Mbit/s'
        check "tcp carrier: the progress line names yamux ($(grep -m1 -o 'tcp->[a-z]* [0-9.]* Mbit/s, [a-z]*->tcp' "$tmp/tc.err"))" \
            "grep -q 'tcp->yamux [0-9.]* Mbit/s, yamux->tcp' $tmp/tc.err && ! grep -q 'quic' $tmp/tc.err"
    else
        no "tcp carrier client with the right secret did not come up: $(cat "$tmp/tc.err")"
    fi
    n_before=$(grep -c conn "$tmp/target.log")
    timeout 30 "$q" tunnel client --carrier tcp --connect "$taddr" --pin "$tpin" \
        --secret-file "$tmp/wrong" --listen "127.0.0.1:$tcp3_port" >/dev/null 2>"$tmp/wrong.err"
    rc=$?
    check "tcp carrier, wrong secret: exit 3, access denied (rc $rc: $(tail -1 "$tmp/wrong.err"))" \
        "[ $rc -eq 3 ] && grep -q 'access denied' $tmp/wrong.err"
    "$q" tunnel client --carrier tcp --connect "$taddr" --pin "$tpin" \
        --listen "127.0.0.1:$tcp4_port" >"$tmp/none.out" 2>"$tmp/none.err" &
    npid=$!
    pids+=($npid)
    if wait_line "$tmp/none.out" '^tunnel: listening on'; then
        $peer roundtrip "$tcp4_port" 1000 >/dev/null 2>&1
        wait_gone "$npid" 100
        wait "$npid"
        rc=$?
        check "tcp carrier, no secret: the first flow ends the client, exit 3 (rc $rc: $(tail -1 "$tmp/none.err"))" \
            "[ $rc -eq 3 ] && grep -q 'access denied' $tmp/none.err"
    else
        no "tcp carrier client without a secret did not come up: $(cat "$tmp/none.err")"
    fi
    n_after=$(grep -c conn "$tmp/target.log")
    check "the target saw nothing from the wrong and missing secrets ($n_before, $n_after)" \
        "[ $n_before -eq 1 ] && [ $n_after -eq 1 ]"
    kill -TERM "$tcpid" "$tspid"
    wait "$tcpid" "$tspid"
else
    no "tcp carrier server with --secret-file did not start: $(cat "$tmp/ts.err")"
fi

# --config FILE.
"$q" tunnel server --listen 127.0.0.1:0 --to "127.0.0.1:$echo_port" >"$tmp/s2.out" 2>&1 &
spid=$!
pids+=($spid)
wait_line "$tmp/s2.out" '^listening on' || no "server for --config did not start"
saddr=$(listen_addr "$tmp/s2.out")
cat >"$tmp/tunnel.ini" <<EOF
; a tunnel client
connect = $saddr
insecure = yes
listen = 127.0.0.1:1
stats = yes
reconnect-max = 0

[server]
to = 192.0.2.1:9
EOF
"$q" tunnel client --config "$tmp/tunnel.ini" --listen "127.0.0.1:$tcp_port" \
    >"$tmp/cf.out" 2>"$tmp/cf.err" &
cfpid=$!
pids+=($cfpid)
if wait_line "$tmp/cf.out" '^tunnel: listening on'; then
    check "--config: the command line's --listen wins ($(head -1 "$tmp/cf.out"))" \
        "grep -q '^tunnel: listening on 127.0.0.1:$tcp_port ' $tmp/cf.out"
    r=$($peer roundtrip "$tcp_port" 200000)
    check "--config: connect and insecure come from the file: echo ($r)" "[ '${r%% *}' = ok ]"
    check "--config: stats = yes applies" "wait_line $tmp/cf.err '^stats: '"
    kill -TERM "$cfpid"
    wait "$cfpid"
else
    no "client with --config did not come up: $(cat "$tmp/cf.err")"
fi
timeout 30 "$q" tunnel client --config "$tmp/tunnel.ini" --pin "$(printf '%064d' 0)" \
    --listen "127.0.0.1:$tcp_port" >/dev/null 2>"$tmp/cfpin.err"
rc=$?
check "--config: --pin on the command line replaces the file's insecure (rc $rc: $(grep -m1 -o 'pin mismatch' "$tmp/cfpin.err"))" \
    "[ $rc -eq 1 ] && grep -q 'pin mismatch' $tmp/cfpin.err && ! grep -q 'warning: --insecure' $tmp/cfpin.err"
printf 'connect = %s\ninsecure = yes\nlisten = 127.0.0.1:0\nfrobnicate = 3\n' "$saddr" >"$tmp/bad.ini"
"$q" tunnel client --config "$tmp/bad.ini" >/dev/null 2>"$tmp/cfbad.err"
rc=$?
check "--config: an unknown key exits 2 naming the file and line (rc $rc: $(tr '\n' ' ' <"$tmp/cfbad.err"))" \
    "[ $rc -eq 2 ] && grep -q -- '--frobnicate' $tmp/cfbad.err && grep -q 'bad.ini line 4' $tmp/cfbad.err"
printf '[elsewhere]\nconnect = %s\n' "$saddr" >"$tmp/sect.ini"
"$q" tunnel client --config "$tmp/sect.ini" --insecure --listen 127.0.0.1:0 >/dev/null 2>"$tmp/cfsect.err"
rc=$?
check "--config: an unknown section exits 2 ($(head -1 "$tmp/cfsect.err"))" \
    "[ $rc -eq 2 ] && grep -q 'elsewhere' $tmp/cfsect.err"
kill -TERM "$spid"
wait "$spid"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
