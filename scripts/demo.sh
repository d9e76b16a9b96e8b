#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The `make run` demo: a quack perf server on a free loopback port with a
# freshly generated self-signed certificate, a client pinning its key for
# QK_DEMO_SECONDS (default 10) seconds, progress lines, the table, shutdown.
set -euo pipefail
build=${1:-build/release}
secs=${QK_DEMO_SECONDS:-10}
q="$build/quack"
[ -x "$q" ] || { echo "demo: $q not found; run 'make release' first" >&2; exit 1; }

tmp=$(mktemp -d)
spid=
cleanup() {
    if [ -n "$spid" ] && kill -0 "$spid" 2>/dev/null; then
        kill -TERM "$spid" 2>/dev/null || true
        wait "$spid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$q" version
"$q" perf server --listen 127.0.0.1:0 >"$tmp/server.out" 2>"$tmp/server.err" &
spid=$!
for _ in $(seq 100); do
    grep -q '^listening on' "$tmp/server.out" 2>/dev/null && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.05
done
if ! grep -q '^listening on' "$tmp/server.out"; then
    echo "demo: the server did not start:" >&2
    cat "$tmp/server.err" >&2
    exit 1
fi
addr=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$tmp/server.out")
pin=$(sed -n 's/^pin: //p' "$tmp/server.out")
echo "server: $addr, self-signed certificate, pin $pin"
echo "client: quack perf client --connect $addr --pin <pin> --duration $secs"
echo
rc=0
"$q" perf client --connect "$addr" --pin "$pin" --duration "$secs" --stats || rc=$?
kill -TERM "$spid"
wait "$spid" || true
spid=
echo
tail -n 1 "$tmp/server.err"
exit "$rc"
