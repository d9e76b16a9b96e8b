#!/bin/bash
# SPDX-License-Identifier: MIT
# covers: src/h3/h3.c src/transport/conn/conn_flow.c
# "pull, don't copy": `quack serve` reads response bodies from the
# file as the connection has room (qk_h3_respond_pull + the send budgets),
# so a client that requests a 10 MB file 256 times on one connection and
# stops reading (quack get --stall) makes the server hold no more than the
# credit it granted. Asserts from /proc/PID/status (VmRSS sampled every
# 0.2 s; growth, since sanitizer builds start large): one stalled client
# grows the server by <= 64 MB, three at once stay under the endpoint's
# --send-budget (64 MB here), the endpoint's own send-buffer peak is under
# that budget, and a normal download afterwards is byte-exact (SHA-256).
# $1 = build dir.
set -u
b="$1"
build=$b
q="$b/quack"
. "$(dirname "$0")/lib/harness.bash"
rss_kb() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$1/status" 2>/dev/null; }
budget_mb=64

mkdir -p "$tmp/root" "$tmp/get"
head -c 10000000 /dev/urandom >"$tmp/root/big.bin"
want=$(sha256sum <"$tmp/root/big.bin" | cut -d' ' -f1)
# Sanitizer builds: a small quarantine, so RSS shows live memory.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4:detect_leaks=0"
"$q" serve --quiet --stats --send-budget ${budget_mb}M --root "$tmp/root" --listen 127.0.0.1:0 \
    >"$tmp/s.out" 2>"$tmp/s.err" &
spid=$!
pids+=("$spid")
for _ in $(seq 200); do
    grep -q 'listening on' "$tmp/s.out" 2>/dev/null && break
    sleep 0.05
done
addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/s.out" | head -1)
pin=$(sed -n 's/^pin: //p' "$tmp/s.out" | head -1)
[ -n "$addr" ] || { echo "FAIL - quack serve did not start"; exit 1; }
urls=()
for _ in $(seq 256); do urls+=("https://$addr/big.bin"); done

# Warm up (TLS, HTTP/3, allocator arenas) with one normal download.
timeout 60 "$q" get --quiet --pin "$pin" --output "$tmp/get" "https://$addr/big.bin" 2>"$tmp/g0.err"
sleep 0.3
base=$(rss_kb "$spid")

# peak RSS of the server while the given clients run
stalled_peak() { # clients seconds
    local n=$1 secs=$2 gp=() peak=$base v
    for _ in $(seq "$n"); do
        timeout $((secs + 30)) "$q" get --quiet --discard --stall "$secs" --pin "$pin" "${urls[@]}" \
            2>>"$tmp/stall.err" &
        gp+=($!)
    done
    while :; do
        local live=0
        for p in "${gp[@]}"; do kill -0 "$p" 2>/dev/null && live=1; done
        [ $live = 1 ] || break
        v=$(rss_kb "$spid")
        [ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
        sleep 0.2
    done
    for p in "${gp[@]}"; do wait "$p" || echo "client $p exited $?" >>"$tmp/stall.rc"; done
    echo "$peak"
}

peak1=$(stalled_peak 1 4)
echo "# one stalled client (256 x 10 MB requested): server RSS $((base / 1024)) MB before, $((peak1 / 1024)) MB peak"
check "one client that stops reading: server grows by <= 64 MB" "[ $((peak1 - base)) -le 65536 ]"
check "the stalled client ran its time (exit 0)" "[ ! -s \"$tmp/stall.rc\" ]"
peak3=$(stalled_peak 3 5)
echo "# three stalled clients: $((peak3 / 1024)) MB peak, growth $(((peak3 - base) / 1024)) MB (budget ${budget_mb} MB)"
check "three such clients: server grows by less than the endpoint budget" \
    "[ $((peak3 - base)) -lt $((budget_mb * 1024)) ]"
check "the three stalled clients ran their time (exit 0)" "[ ! -s \"$tmp/stall.rc\" ]"

timeout 60 "$q" get --quiet --pin "$pin" --output "$tmp/get" "https://$addr/big.bin" 2>"$tmp/g1.err"
check "a normal download afterwards is byte-exact" \
    "[ \"\$(sha256sum <\"$tmp/get/big.bin\" 2>/dev/null | cut -d' ' -f1)\" = $want ]"
kill -TERM "$spid"
wait "$spid"
held=$(sed -n 's/.*send_buffered_peak_bytes \([0-9]*\).*/\1/p' "$tmp/s.err")
echo "# endpoint send-buffer peak: ${held:-?} bytes"
check "the endpoint's send-buffer peak stayed under --send-budget" \
    "[ \"\${held:-999999999999}\" -le $((budget_mb << 20)) ]"
served=$(sed -n 's/.*stopped; \([0-9]*\) files served.*/\1/p' "$tmp/s.err")
cut=$(sed -n 's/.*, \([0-9]*\) responses not finished.*/\1/p' "$tmp/s.err")
# Served in full (the one reading client's) or cut short when the stalled
# clients went away (quack serve counts those apart).
check "the server answered all 1,026 requests ($served served, $cut not finished)" \
    "[ \$((\${served:-0} + \${cut:-0})) = 1026 ]"
echo "$((7 - fails)) passed, $fails failed"
[ "$fails" = 0 ]
