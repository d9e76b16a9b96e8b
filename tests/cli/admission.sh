#!/bin/bash
# SPDX-License-Identifier: MIT
# Handshake admission control (RFC 9000 §8.1.2) through `quack serve`:
# without load no Retry is sent (auto mode), --retry always validates every
# client with a Retry, and the download is byte-exact either way (SHA-256);
# --max-connections refuses the connection beyond it at once.
# $1 = build dir.
set -u
q="$1/quack"
tmp=$(mktemp -d)
spid=
cleanup() {
    [ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/lib/report.bash" # ok, no, check, fails

mkdir -p "$tmp/root"
head -c 3000000 /dev/urandom >"$tmp/root/f.bin"
want=$(sha256sum <"$tmp/root/f.bin" | cut -d' ' -f1)

# start_serve NAME [serve args]: quack serve in the background (spid), its
# output in $tmp/NAME.{out,err}; sets addr and pin once it listens.
start_serve() {
    local name=$1
    shift
    : >"$tmp/$name.out"
    "$q" serve --quiet --stats --root "$tmp/root" --listen 127.0.0.1:0 "$@" \
        >"$tmp/$name.out" 2>"$tmp/$name.err" &
    spid=$!
    for _ in $(seq 200); do
        grep -q 'listening on' "$tmp/$name.out" "$tmp/$name.err" 2>/dev/null && break
        sleep 0.05
    done
    addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/$name.out" "$tmp/$name.err" | head -1)
    pin=$(sed -n 's/^pin: //p' "$tmp/$name.out" "$tmp/$name.err" | head -1)
}

# run_once NAME [serve args]: one download; the counters land in $tmp/NAME.err.
run_once() {
    local name=$1
    shift
    start_serve "$name" "$@"
    rm -rf "$tmp/get"
    mkdir -p "$tmp/get"
    timeout 60 "$q" get --quiet --pin "$pin" --output "$tmp/get" "https://$addr/f.bin" \
        2>"$tmp/$name.get.err"
    check "$name: download byte-exact" \
        "[ \"\$(sha256sum <\"$tmp/get/f.bin\" 2>/dev/null | cut -d' ' -f1)\" = $want ]"
    kill -TERM "$spid"
    wait "$spid"
    spid=
}

# counter NAME FIELD: the value on the server's "endpoint:" line.
counter() { sed -n "s/^endpoint: .*\b$2 \([0-9]*\).*/\1/p" "$tmp/$1.err"; }

run_once auto
check "auto: counters printed" "[ -n \"\$(counter auto retry_sent)\" ]"
check "auto: no Retry without load" "[ \"\$(counter auto retry_sent)\" = 0 ]"
check "auto: the handshake was admitted" "[ \"\$(counter auto initials_accepted)\" -ge 1 ]"

run_once always --retry always --handshake-timeout 5s
check "always: a Retry was sent" "[ \"\$(counter always retry_sent)\" -ge 1 ]"
check "always: Retry not counted as load" "[ \"\$(counter always retry_load)\" = 0 ]"
check "always: admitted with a validated address" \
    "[ \"\$(counter always initials_validated)\" -ge 1 ]"

# --max-connections 1: with one connection held open (bench_conns), the next
# client is refused at once with CONNECTION_REFUSED (RFC 9000 §20.1), not
# left to its handshake timeout (10 s).
start_serve limit --max-connections 1
"$1/bench_conns" "$addr" 1 1 4 30 >"$tmp/hold.out" 2>&1 &
hpid=$!
for _ in $(seq 100); do
    grep -q 'connected 1 of 1' "$tmp/hold.out" 2>/dev/null && break
    sleep 0.05
done
check "limit: the first connection is up" "grep -q 'connected 1 of 1' \"$tmp/hold.out\""
mkdir -p "$tmp/get2"
t0=$(date +%s%N)
timeout 30 "$q" get --pin "$pin" --output "$tmp/get2" "https://$addr/f.bin" 2>"$tmp/limit.get.err"
rc=$?
t1=$(date +%s%N)
check "limit: the second client fails (exit 1)" "[ $rc -eq 1 ]"
check "limit: it is told why" "grep -q 'connection limit (code 0x2)' \"$tmp/limit.get.err\""
check "limit: at once, not at the handshake timeout" "[ $(((t1 - t0) / 1000000)) -lt 5000 ]"
wait "$hpid"
kill -TERM "$spid"
wait "$spid"
spid=
check "limit: counted as refused" "[ \"\$(counter limit drops_connections)\" = 1 ]"

"$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --max-connections 0 >/dev/null 2>"$tmp/bad.err"
check "--max-connections 0 refused (exit 2)" "[ $? -eq 2 ] && grep -q 'max-connections' \"$tmp/bad.err\""
"$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --max-handshakes 0 >/dev/null 2>"$tmp/bad.err"
check "--max-handshakes 0 refused (exit 2)" "[ $? -eq 2 ]"
"$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --handshake-timeout x >/dev/null 2>"$tmp/bad.err"
check "--handshake-timeout x refused (exit 2)" "[ $? -eq 2 ]"

[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all ok"
