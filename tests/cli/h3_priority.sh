#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: src/h3/priority.c src/h3/h3.c apps/cmd_get.c apps/cmd_serve.c
# RFC 9218 priorities end to end: quack get fetches a big file at urgency 7
# and then a small one at urgency 0 from quack serve through quack netem at
# 20 Mbit/s (10 ms each way): the small one completes first. With equal
# (default) urgencies the responses go in request order (RFC 9218 §4.1,
# non-incremental: FIFO) and the big one completes first. The server's log
# shows the urgency it applied; a trailing --urgency applies to every URL;
# bad --urgency/--priority values exit 2. Order is asserted, not timings;
# files are compared by sha256. Usage: bash tests/cli/h3_priority.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: h3_priority.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, tmp, pids (killed at exit), ok/no/check, pick_ports

expect_usage() { # name stderr_substring args...
    local name=$1 text=$2 rc=0
    shift 2
    timeout 10 "$q" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    if [ "$rc" -eq 2 ] && grep -qF -- "$text" "$tmp/err"; then ok "$name"; else
        no "$name: exit $rc, stderr: $(head -2 "$tmp/err")"
    fi
}
expect_usage "get: --urgency 8" "--urgency 8: want 0..7" get --urgency 8 https://127.0.0.1:1/x
expect_usage "get: --urgency 1,x" "--urgency 1,x: want 0..7" get --urgency 1,x https://127.0.0.1:1/x
expect_usage "get: --priority 'u=1,'" "--priority 'u=1,'" get --priority 'u=1,' https://127.0.0.1:1/x

mkdir -p "$tmp/root"
head -c 6000000 /dev/urandom >"$tmp/root/big.bin"
head -c 200000 /dev/urandom >"$tmp/root/small.bin"
"$q" serve --root "$tmp/root" --listen 127.0.0.1:0 >"$tmp/serve.out" 2>"$tmp/serve.err" &
pids+=($!)
wait_until 50 grep -q 'listening on' "$tmp/serve.out" "$tmp/serve.err"
addr=$(grep -ho 'listening on [0-9.:]*' "$tmp/serve.out" "$tmp/serve.err" | awk '{print $3}')
pin=$(grep -ho 'pin: [0-9a-f]*' "$tmp/serve.out" "$tmp/serve.err" | awk '{print $2}')
[ -n "$addr" ] && [ -n "$pin" ] || {
    echo "FAIL - quack serve did not start: $(head -2 "$tmp/serve.err")"
    exit 1
}
pick_ports relay
"$q" netem --listen 127.0.0.1:$relay --to "$addr" --rate 20mbit --delay 10ms --duration 900s \
    >"$tmp/netem.out" 2>&1 &
pids+=($!)
wait_udp "$relay" || no "netem listening on $relay"
url="https://127.0.0.1:$relay"

# fetch NAME ARGS...: quack get into a fresh directory; prints the order in
# which the files completed (from its per-URL lines), checks both sha256.
fetch() {
    local name=$1 rc=0
    shift
    rm -rf "$tmp/dl" && mkdir -p "$tmp/dl"
    timeout 60 "$q" get --pin "$pin" --output "$tmp/dl" "$@" >"$tmp/get.out" 2>"$tmp/get.err" ||
        rc=$?
    [ "$rc" -eq 0 ] || { no "$name: quack get exited $rc: $(head -3 "$tmp/get.err")"; return 1; }
    for f in big.bin small.bin; do
        cmp -s <(sha256sum <"$tmp/root/$f") <(sha256sum <"$tmp/dl/$f") ||
            { no "$name: $f differs (sha256)"; return 1; }
    done
    order=$(sed -n 's|^https://[^/]*/\([a-z]*\)\.bin: 200, .*|\1|p' "$tmp/get.err" | tr '\n' ' ')
    echo "  $name: completed: $order"
}

lines_before=$(wc -l <"$tmp/serve.err")
fetch "u=7 big, then u=0 small" --urgency 7 "$url/big.bin" --urgency 0 "$url/small.bin" &&
    check "small (u=0) completes before big (u=7)" '[ "$order" = "small big " ]'
tail -n +$((lines_before + 1)) "$tmp/serve.err" >"$tmp/serve.run1"
check "server applied u=7 to big.bin" "grep -q '^GET /big.bin stream [0-9]* u=7\$' $tmp/serve.run1"
check "server applied u=0 to small.bin" "grep -q '^GET /small.bin stream [0-9]* u=0\$' $tmp/serve.run1"

lines_before=$(wc -l <"$tmp/serve.err")
fetch "default urgencies" "$url/big.bin" "$url/small.bin" &&
    check "equal urgency: request order (big first)" '[ "$order" = "big small " ]'
tail -n +$((lines_before + 1)) "$tmp/serve.err" >"$tmp/serve.run2"
check "server applied the default u=3 to both" \
    "[ \$(grep -c '^GET /[a-z]*.bin stream [0-9]* u=3\$' $tmp/serve.run2) = 2 ]"

lines_before=$(wc -l <"$tmp/serve.err")
fetch "trailing --priority" "$url/big.bin" "$url/small.bin" --priority 'u=2, i' &&
    tail -n +$((lines_before + 1)) "$tmp/serve.err" >"$tmp/serve.run3" &&
    check "a trailing --priority applies to every URL" \
        "[ \$(grep -c '^GET /[a-z]*.bin stream [0-9]* u=2,i\$' $tmp/serve.run3) = 2 ]"

[ "$fails" -eq 0 ] && echo "h3_priority: OK"
exit $((fails > 0))
