#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# yamux interop: quack's session (tests/interop/yamux/ydrive.c) against
# hashicorp/yamux (tests/interop/yamux/peer.go, built offline from Debian's
# golang-github-hashicorp-yamux-dev) over loopback TCP, both ways. Each run:
# many concurrent streams of different sizes (one of several MB), half-close
# (FIN after the data, the echo after that), SHA-256 of every stream's echo
# compared with what was sent, a PING answered, GoAway at the end.
# Usage: tests/interop/yamux.sh BUILD_DIR
set -uo pipefail
build=$(cd "${1:?usage: yamux.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
drive="$build/ydrive"
. "$here/../cli/lib/harness.bash" # tmp, pids, ok/no, cleanup, pick_ports, wait_tcp

peer="$build/yamux-peer"
if ! (cd "$here/yamux" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$tmp/gocache" \
    go build -o "$peer" peer.go) 2>"$tmp/build.err"; then
    echo "cannot build the Go peer (scripts/deps.sh installs golang-go and"
    echo "golang-github-hashicorp-yamux-dev): $(cat "$tmp/build.err")"
    exit 1
fi

wait_addr() { # FILE: up to 10 s for "listening on ADDR"
    for _ in $(seq 200); do
        a=$(sed -n 's/^listening on //p' "$1" 2>/dev/null)
        [ -n "$a" ] && { echo "$a"; return 0; }
        sleep 0.05
    done
    return 1
}

# run NAME SERVER_CMD CLIENT_BIN STREAMS BYTES
run() {
    local name=$1 server=$2 client=$3 streams=$4 bytes=$5
    $server 127.0.0.1:0 >"$tmp/$name.s" 2>"$tmp/$name.serr" &
    local spid=$!
    pids+=($spid)
    local addr
    if ! addr=$(wait_addr "$tmp/$name.s"); then
        no "$name: server did not start: $(cat "$tmp/$name.serr")"
        return
    fi
    local out
    out=$(timeout 120 "$client" client "$addr" "$streams" "$bytes" 2>"$tmp/$name.cerr" | tail -1)
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    case "$out" in
    ok*) ok "$name: $out" ;;
    *) no "$name: ${out:-no output} $(tail -3 "$tmp/$name.cerr")" ;;
    esac
    # The quack server saw the Go client's GoAway(normal) before the EOF.
    if [ "$server" = "$drive server" ] && [ "$client" = "$peer" ]; then
        if grep -q 'goaway=0$' "$tmp/$name.serr"; then
            ok "$name: quack server got GoAway(normal)"
        else
            no "$name: no GoAway seen: $(cat "$tmp/$name.serr")"
        fi
    fi
}


run "quack client -> Go server, 64 streams x ~1 MB" "$peer server" "$drive" 64 1000000
run "quack client -> Go server, 1 stream 24 MB" "$peer server" "$drive" 1 24000000
run "Go client -> quack server, 64 streams x ~1 MB" "$drive server" "$peer" 64 1000000
run "Go client -> quack server, 1 stream 24 MB" "$drive server" "$peer" 1 24000000
run "Go client -> quack server (fixed window), 8 streams" "$drive server --fixed" "$peer" 8 2000000
run "quack client -> quack server, 200 streams" "$drive server" "$drive" 200 100000
# Through `quack netem --tcp` (20 ms each way): the PING RTT shows the delay
# (at least 40 ms; the upper bound only rules out a doubled delay line with
# room for a busy machine: one ping after the transfer, under ASan).
"$drive" server 127.0.0.1:0 >"$tmp/d.s" 2>/dev/null &
pids+=($!)
if daddr=$(wait_addr "$tmp/d.s"); then
    pick_ports rport
    "$q" netem --tcp --listen "127.0.0.1:$rport" --to "$daddr" --delay 20ms \
        --rate 200mbit --duration 900s >/dev/null 2>&1 &
    pids+=($!)
    wait_tcp "$rport" || no "the TCP delay line did not listen"
    out=$(timeout 60 "$peer" client "127.0.0.1:$rport" 8 2000000 2>/dev/null | tail -1)
    ms=$(echo "$out" | sed -n 's/.*ping=\([0-9.]*\)ms.*/\1/p')
    if [ "${out%% *}" = ok ] && [ -n "$ms" ] && awk "BEGIN{exit !($ms >= 39 && $ms < 250)}"; then
        ok "Go client -> quack server through a 20 ms-each-way TCP delay line: $out"
    else
        no "through the TCP delay line: ${out:-no output} (want ok and a ping of at least the line's 40 ms RTT)"
    fi
else
    no "quack server for the delay line did not start"
fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
