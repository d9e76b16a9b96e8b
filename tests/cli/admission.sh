#!/bin/bash
# Handshake admission control (issue 24, RFC 9000 §8.1.2) through `quack serve`:
# without load no Retry is sent (auto mode), --retry always validates every
# client with a Retry, and the download is byte-exact either way (SHA-256).
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

# run_once NAME [serve args]: one download; the counters land in $tmp/NAME.err.
run_once() {
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
    local addr pin
    addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/$name.out" "$tmp/$name.err" | head -1)
    pin=$(sed -n 's/^pin: //p' "$tmp/$name.out" "$tmp/$name.err" | head -1)
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

"$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --max-handshakes 0 >/dev/null 2>"$tmp/bad.err"
check "--max-handshakes 0 refused (exit 2)" "[ $? -eq 2 ]"
"$q" serve --root "$tmp/root" --listen 127.0.0.1:0 --handshake-timeout x >/dev/null 2>"$tmp/bad.err"
check "--handshake-timeout x refused (exit 2)" "[ $? -eq 2 ]"

[ "$fails" -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all ok"
