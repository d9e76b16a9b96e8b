#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `quack tunnel server --to socks5`, end to end on
# loopback: curl --socks5-hostname through the tunnel fetches files from a
# local `python3 -m http.server` (SHA-256 compared); destinations outside the
# --allow list (another port, a private address) are refused with SOCKS5
# reply 2 and logged; RFC 1929 username/password: the right one fetches, a
# wrong one is refused. Usage: tests/cli/tunnel_socks5.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_socks5.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports http_port tcp_port closed_port
command -v curl >/dev/null || {
    echo "skip - curl not installed"
    exit 0
}

mkdir "$tmp/www"
head -c 3000000 /dev/urandom >"$tmp/www/big"
head -c 1 /dev/urandom >"$tmp/www/one"
(cd "$tmp/www" && exec python3 -m http.server --bind 127.0.0.1 "$http_port") >/dev/null 2>&1 &
pids+=($!)

# start_pair [SERVER OPTIONS...]: sets spid, cpid; logs in s.log / c.err.
# The proxy is open (no access control) unless the options say otherwise.
start_pair() {
    local open=--open-proxy
    case " $* " in *" --socks-auth-file "*) open= ;; esac
    # Truncate first: the server truncates its own file only once it is
    # forked, and until then wait_line would read the last pair's line.
    : >"$tmp/s.out"
    "$q" tunnel server --listen 127.0.0.1:0 --to socks5 --allow "127.0.0.0/8:$http_port" $open "$@" \
        >"$tmp/s.out" 2>"$tmp/s.log" &
    spid=$!
    pids+=($spid)
    wait_line "$tmp/s.out" '^listening on' || return 1
    local saddr
    saddr=$(listen_addr "$tmp/s.out")
    : >"$tmp/c.out"
    "$q" tunnel client --connect "$saddr" --insecure --listen "127.0.0.1:$tcp_port" --quiet \
        >"$tmp/c.out" 2>"$tmp/c.err" &
    cpid=$!
    pids+=($cpid)
    wait_line "$tmp/c.out" '^tunnel: listening on' 300
}
stop_pair() {
    kill -TERM "$cpid" "$spid"
    wait "$cpid" "$spid"
}
sha() { sha256sum "$1" | cut -d' ' -f1; }

"$q" tunnel server --listen 127.0.0.1:0 --to 127.0.0.1:1 --allow 127.0.0.0/8 >/dev/null 2>"$tmp/err"
check "--allow without --to socks5 exits 2" "[ $? -eq 2 ] && grep -q 'socks5' $tmp/err"
"$q" tunnel server --listen 127.0.0.1:0 --to socks5 --allow 127.0.0.0/33 >/dev/null 2>"$tmp/err"
check "a bad --allow exits 2" "[ $? -eq 2 ] && grep -q -- '--allow wants' $tmp/err"
wait_tcp "$http_port" || no "the HTTP server did not listen"

if start_pair; then
    curl -sS --max-time 20 --socks5-hostname "127.0.0.1:$tcp_port" \
        "http://localhost:$http_port/big" -o "$tmp/got_big" 2>"$tmp/curl1"
    check "curl --socks5-hostname fetches 3 MB through the tunnel, SHA-256 equal" \
        "[ -f $tmp/got_big ] && [ $(sha "$tmp/www/big") = \$(sha $tmp/got_big) ]"
    par=()
    for i in 1 2 3 4 5 6 7 8; do
        curl -sS --max-time 20 --socks5-hostname "127.0.0.1:$tcp_port" \
            "http://127.0.0.1:$http_port/big" -o "$tmp/par$i" 2>/dev/null &
        par+=($!)
    done
    wait "${par[@]}"
    n=0
    for i in 1 2 3 4 5 6 7 8; do
        [ -f "$tmp/par$i" ] && [ "$(sha "$tmp/par$i")" = "$(sha "$tmp/www/big")" ] && n=$((n + 1))
    done
    check "8 parallel fetches by address all intact ($n of 8)" "[ $n = 8 ]"
    curl -sS --max-time 20 --socks5-hostname "127.0.0.1:$tcp_port" \
        "http://localhost:$http_port/one" -o "$tmp/got_one"
    check "a 1-byte file" "[ $(sha "$tmp/www/one") = \$(sha $tmp/got_one) ]"
    curl -sS --max-time 20 --socks5-hostname "127.0.0.1:$tcp_port" \
        "http://127.0.0.1:$closed_port/" -o /dev/null 2>"$tmp/curl2"
    check "a port outside the allow-list is refused with SOCKS5 reply 2 ($(head -c 150 "$tmp/curl2"))" \
        "grep -q '(2)\|not allowed' $tmp/curl2"
    check "and the attempt is logged ($(grep -m1 'refused (reply 2)' "$tmp/s.log"))" \
        "grep -q 'SOCKS5 CONNECT 127.0.0.1:$closed_port refused (reply 2): destination not in the allow-list' $tmp/s.log"
    curl -sS --max-time 20 --socks5-hostname "127.0.0.1:$tcp_port" \
        "http://10.1.2.3:$http_port/" -o /dev/null 2>"$tmp/curl3"
    check "a private address outside the allow-list is refused ($(head -c 150 "$tmp/curl3"))" \
        "grep -q '(2)\|not allowed' $tmp/curl3 && grep -q 'CONNECT 10.1.2.3:$http_port refused (reply 2)' $tmp/s.log"
    check "the server logs each flow with bytes and duration" \
        "grep -q 'flow [0-9]* closed: done; tcp->tunnel [0-9]* bytes, tunnel->tcp [0-9]* bytes, [0-9.]* s' $tmp/s.log"
    stop_pair
else
    no "socks5 tunnel did not come up: $(cat "$tmp/s.log" "$tmp/c.err")"
fi

printf 'alice:s3cret pass\n' >"$tmp/auth"
if start_pair --socks-auth-file "$tmp/auth"; then
    curl -sS --max-time 20 --socks5-hostname "127.0.0.1:$tcp_port" \
        --proxy-user 'alice:s3cret pass' "http://localhost:$http_port/big" -o "$tmp/auth_big"
    check "RFC 1929: the right username/password fetches, SHA-256 equal" \
        "[ -f $tmp/auth_big ] && [ $(sha "$tmp/www/big") = \$(sha $tmp/auth_big) ]"
    rm -f "$tmp/auth_bad"
    curl -sS --max-time 20 --socks5-hostname "127.0.0.1:$tcp_port" \
        --proxy-user 'alice:wrong' "http://localhost:$http_port/big" -o "$tmp/auth_bad" 2>"$tmp/curl4"
    check "a wrong password is refused ($(head -c 150 "$tmp/curl4"))" \
        "[ ! -s $tmp/auth_bad ] && grep -qi 'rejected' $tmp/curl4"
    rm -f "$tmp/auth_none"
    curl -sS --max-time 20 --socks5-hostname "127.0.0.1:$tcp_port" \
        "http://localhost:$http_port/big" -o "$tmp/auth_none" 2>"$tmp/curl5"
    check "no credentials are refused ($(head -c 150 "$tmp/curl5"))" "[ ! -s $tmp/auth_none ]"
    stop_pair
else
    no "socks5 tunnel with auth did not come up: $(cat "$tmp/s.log" "$tmp/c.err")"
fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
