#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# quack get --session-file against quack serve on loopback: the first run
# stores a session, the second resumes it with its request in 0-RTT, a
# damaged file is ignored (with a warning) and replaced, --no-early-data
# resumes without 0-RTT, and bad --ticket-lifetime values exit 2.
# Files are compared by sha256. Usage: bash tests/cli/session.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: session.sh BUILD_DIR}
q="$build/quack"
tmp=$(mktemp -d)
spid=""
trap '[ -n "$spid" ] && kill "$spid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib/report.bash" # ok, no, check, fails

expect_usage() { # name stderr_substring args...
    local name=$1 text=$2 rc=0
    shift 2
    timeout 10 "$q" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [ "$rc" -eq 2 ] && grep -qF -- "$text" "$tmp/err"; then ok "$name"; else
        no "$name: exit $rc, stderr: $(head -2 "$tmp/err")"
    fi
}
expect_usage "serve: --ticket-lifetime 0" "--ticket-lifetime 0: want 1..604800 seconds" \
    serve --root "$tmp" --listen 127.0.0.1:0 --ticket-lifetime 0
expect_usage "serve: --ticket-lifetime 8 days" "--ticket-lifetime 691200: want 1..604800" \
    serve --root "$tmp" --listen 127.0.0.1:0 --ticket-lifetime 691200
expect_usage "serve: --ticket-lifetime junk" "--ticket-lifetime 1h: want 1..604800" \
    serve --root "$tmp" --listen 127.0.0.1:0 --ticket-lifetime 1h

mkdir -p "$tmp/root" "$tmp/dl"
head -c 200000 /dev/urandom >"$tmp/root/f.bin"
"$q" serve --quiet --root "$tmp/root" --listen 127.0.0.1:0 --ticket-lifetime 60 \
    >"$tmp/serve.out" 2>"$tmp/serve.err" &
spid=$!
for _ in $(seq 50); do
    grep -q 'listening on' "$tmp/serve.out" "$tmp/serve.err" 2>/dev/null && break
    sleep 0.1
done
addr=$(grep -ho 'listening on [0-9.:]*' "$tmp/serve.out" "$tmp/serve.err" | awk '{print $3}')
pin=$(grep -ho 'pin: [0-9a-f]*' "$tmp/serve.out" "$tmp/serve.err" | awk '{print $2}')
[ -n "$addr" ] && [ -n "$pin" ] || {
    echo "FAIL - quack serve did not start: $(head -2 "$tmp/serve.err")"
    exit 1
}
want=$(sha256sum <"$tmp/root/f.bin" | cut -d' ' -f1)

get() { # name extra-args...: runs quack get, checks the file; stderr in $tmp/get.err
    local name=$1 rc=0
    shift
    rm -f "$tmp/dl/f.bin"
    timeout 20 "$q" get --pin "$pin" --output "$tmp/dl" "$@" "https://$addr/f.bin" \
        >"$tmp/get.out" 2>"$tmp/get.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        no "$name: quack get exited $rc: $(head -2 "$tmp/get.err")"
        return 1
    fi
    if [ "$(sha256sum <"$tmp/dl/f.bin" | cut -d' ' -f1)" != "$want" ]; then
        no "$name: file differs (sha256)"
        return 1
    fi
}

S="$tmp/session"
if get "first connection" --session-file "$S"; then
    if [ -s "$S" ] && ! grep -q 'session resumed' "$tmp/get.err"; then ok "first: full handshake, session stored"; else
        no "first: no session stored or claimed a resumption"
    fi
fi
if get "resumed" --session-file "$S"; then
    if grep -q 'session resumed, 0-RTT accepted' "$tmp/get.err"; then ok "second: resumed with 0-RTT"; else
        no "second: $(grep connected "$tmp/get.err")"
    fi
fi
if get "no early data" --session-file "$S" --no-early-data; then
    if grep -q 'session resumed$' "$tmp/get.err"; then ok "--no-early-data: resumed without 0-RTT"; else
        no "--no-early-data: $(grep connected "$tmp/get.err")"
    fi
fi
head -c 300 /dev/urandom >"$S"
if get "damaged session file" --session-file "$S"; then
    if grep -q 'not a usable session, ignored' "$tmp/get.err" && [ "$(head -c 4 "$S")" = QKS1 ]; then
        ok "damaged file: ignored with a warning and replaced"
    else
        no "damaged file: $(head -2 "$tmp/get.err")"
    fi
fi
kill -TERM "$spid"
rc=0
wait "$spid" || rc=$?
spid=""
[ "$rc" -eq 0 ] && ok "quack serve exits 0 on SIGTERM" || no "quack serve exited $rc"
[ "$fails" -eq 0 ]
