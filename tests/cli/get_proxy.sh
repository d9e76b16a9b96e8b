#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `quack get --proxy`: a download from `quack serve` through a quack tunnel
# server, the QUIC connection inside a CONNECT-UDP session (RFC 9298) of
# the tunnel's HTTP/3 carrier:
#  - with the tunnel server's secret, a 5 MB random file arrives byte-exact
#    (SHA-256 equal);
#  - without it, or with another, the server refuses (405): a clear error,
#    exit 1, no file left behind;
#  - the --proxy options are checked (bad URL, a secret file too short,
#    --proxy-secret-file without --proxy: exit 2 naming the problem).
# Usage: tests/cli/get_proxy.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: get_proxy.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, tmp, pids, check, wait_line, listen_addr, ...

mkdir -p "$tmp/root" "$tmp/dl" "$tmp/dl2"
head -c 5000000 /dev/urandom >"$tmp/root/f.bin"
head -c 32 /dev/urandom | base64 >"$tmp/secret"
head -c 32 /dev/urandom | base64 >"$tmp/other"
echo short >"$tmp/short"

"$q" serve --quiet --root "$tmp/root" --listen 127.0.0.1:0 >"$tmp/serve.out" 2>"$tmp/serve.err" &
pids+=($!)
wait_until 100 grep -q 'listening on' "$tmp/serve.out" "$tmp/serve.err"
addr=$(grep -ho 'listening on [0-9.:]*' "$tmp/serve.out" "$tmp/serve.err" | awk '{print $3}')
pin=$(grep -ho 'pin: [0-9a-f]*' "$tmp/serve.out" "$tmp/serve.err" | awk '{print $2}')
[ -n "$addr" ] && [ -n "$pin" ] || {
    echo "FAIL - quack serve did not start: $(head -2 "$tmp/serve.err")"
    exit 1
}

"$q" tunnel server --listen 127.0.0.1:0 --to 127.0.0.1:9 --udp-to "$addr" \
    --secret-file "$tmp/secret" >"$tmp/t.out" 2>"$tmp/t.err" &
pids+=($!)
wait_line "$tmp/t.out" '^listening on' || {
    echo "FAIL - the tunnel server did not start: $(head -2 "$tmp/t.err")"
    exit 1
}
taddr=$(listen_addr "$tmp/t.out")
tpin=$(listen_pin "$tmp/t.out")

rc=0
"$q" get --proxy "https://$taddr" --proxy-pin "$tpin" --proxy-secret-file "$tmp/secret" \
    --pin "$pin" --output "$tmp/dl" "https://$addr/f.bin" 2>"$tmp/get.err" || rc=$?
want=$(sha256sum <"$tmp/root/f.bin" | cut -d' ' -f1)
got=$(sha256sum <"$tmp/dl/f.bin" 2>/dev/null | cut -d' ' -f1)
check "5 MB through the proxy: exit 0 (got $rc)" "[ $rc -eq 0 ]"
check "5 MB through the proxy: SHA-256 equal" "[ '$want' = '$got' ]"
check "the tunnel server saw a CONNECT-UDP session" "grep -q 'udp session .* opened' $tmp/t.err"

for case in none other; do
    rc=0
    extra=()
    [ $case = other ] && extra=(--proxy-secret-file "$tmp/other")
    timeout 60 "$q" get --proxy "https://$taddr" --proxy-pin "$tpin" "${extra[@]}" --pin "$pin" \
        --output "$tmp/dl2" "https://$addr/f.bin" 2>"$tmp/deny.err" || rc=$?
    check "secret $case: exit 1 (got $rc)" "[ $rc -eq 1 ]"
    check "secret $case: says access denied and what to give" \
        "grep -q 'access denied: the tunnel server answered 405 to CONNECT-UDP.*--proxy-secret-file' $tmp/deny.err"
    check "secret $case: no file left" "[ -z \"\$(ls -A $tmp/dl2)\" ]"
done

usage() { # name, expected message, args...
    local name=$1 msg=$2 rc=0
    shift 2
    "$q" get "$@" >/dev/null 2>"$tmp/usage.err" || rc=$?
    check "$name: exit 2 (got $rc)" "[ $rc -eq 2 ]"
    check "$name: says '$msg'" "grep -qF -- '$msg' $tmp/usage.err"
}
usage "--proxy not https" "want https://HOST:PORT" --proxy "http://$taddr" "https://$addr/f.bin"
usage "short secret" "want 16 to 1024 bytes" --proxy "https://$taddr" --proxy-secret-file \
    "$tmp/short" "https://$addr/f.bin"
usage "secret without --proxy" "need --proxy" --proxy-secret-file "$tmp/secret" \
    "https://$addr/f.bin"
"$q" get --help >"$tmp/help"
for opt in --proxy --proxy-secret-file --proxy-pin --proxy-insecure; do
    check "--help explains $opt" "grep -q -- '^  $opt ' $tmp/help"
done

exit $fails
