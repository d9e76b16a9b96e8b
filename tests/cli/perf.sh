#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `quack perf` over real loopback sockets: IPv4 and IPv6 runs with byte-exact
# verification, the table, exit codes, option errors and the --no-protection
# mismatch. Usage: bash tests/cli/perf.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: perf.sh BUILD_DIR}
q="$build/quack"
# shellcheck source=lib/perf_server.bash
source "$(dirname "$0")/lib/perf_server.bash"

# Fields of the client's "transferred:" line.
down_bytes() { sed -n 's/^transferred: download \([0-9]*\) bytes.*/\1/p' "$1"; }
verified_bytes() { sed -n 's/^transferred: download [0-9]* bytes (\([0-9]*\) verified).*/\1/p' "$1"; }
completed() { sed -n 's/^requests: \([0-9]*\) completed.*/\1/p' "$1"; }

# --- options -------------------------------------------------------------
"$q" perf --help >"$tmp/help" 2>&1
check "--help exits 0" "[ $? -eq 0 ]"
check "--help explains --duration and --no-protection" \
    "grep -q -- '--duration' $tmp/help && grep -q -- '--no-protection' $tmp/help"
"$q" perf client --connect 127.0.0.1:1 --pin 00 --bogus >/dev/null 2>"$tmp/err"
check "unknown option exits 2 and names it" "[ $? -eq 2 ] && grep -q -- '--bogus' $tmp/err"
"$q" perf client --connect 127.0.0.1:1 >/dev/null 2>"$tmp/err"
check "client without --pin/--insecure is refused" "[ $? -eq 2 ] && grep -q -- '--pin' $tmp/err"
"$q" perf client --connect 127.0.0.1:1 --pin xyz >/dev/null 2>"$tmp/err"
check "malformed --pin is refused" "[ $? -ne 0 ] && grep -q 'hex' $tmp/err"
"$q" perf client --connect 127.0.0.1:1 --insecure --keep-alive 20s >/dev/null 2>"$tmp/err"
check "--keep-alive at or above the idle timeout is refused" \
    "[ $? -eq 2 ] && grep -q 'idle timeout' $tmp/err"

# --- IPv4, 2 seconds of back-to-back requests ------------------------------
if start_server 127.0.0.1:0; then
    "$q" perf client --connect "$addr" --pin "$pin" --duration 2 --download-size 256K \
        --upload-size 64K --streams 2 >"$tmp/c.out" 2>"$tmp/c.err"
    rc=$?
    check "IPv4 2 s perf exits 0" "[ $rc -eq 0 ]"
    check "IPv4 progress lines printed" "grep -q '^\[client\].*Mbit/s.*rtt.*cwnd.*lost' $tmp/c.err"
    check "IPv4 table printed" "grep -q 'Download Throughput' $tmp/c.out && grep -q '^P100' $tmp/c.out && grep -q '^AVG' $tmp/c.out"
    # Every throughput cell is a real rate: loopback cannot move 100 GiB/s
    # (a zero duration once printed 1e9 MiB/s).
    maxt=$(awk -F'│' '/^(AVG|P[0-9]+) /{for(i=5;i<=6;i++){v=$i; gsub(/[^0-9.]/,"",v); if(v+0>m)m=v+0}} END{print m+0}' "$tmp/c.out")
    check "IPv4 table throughputs plausible (max $maxt MiB/s)" "awk 'BEGIN{exit !($maxt > 0 && $maxt < 100000)}'"
    check "IPv4 requests per second printed" "grep -q 'requests/s' $tmp/c.out"
    d=$(down_bytes "$tmp/c.out")
    v=$(verified_bytes "$tmp/c.out")
    n=$(completed "$tmp/c.out")
    check "IPv4 bytes transferred ($d) and all verified ($v)" "[ -n '$d' ] && [ '$d' -gt 0 ] && [ '$d' = '$v' ]"
    check "IPv4 completed requests ($n) moved at least n x 256 KiB" "[ '${n:-0}' -gt 0 ] && [ '$d' -ge \$(( ${n:-0} * 262144 )) ]"
    stop_server
    check "server exits 0 on SIGTERM" "[ $? -eq 0 ]"
    check "server served requests without errors" "grep -q 'requests served, 0 errors' $tmp/s.err"
else
    no "IPv4 server did not start: $(cat "$tmp/s.err")"
fi

# --- IPv6 [::1], exact sizes: 3 concurrent requests ----------------------
if start_server '[::1]:0'; then
    "$q" perf client --connect "$addr" --pin "$pin" --download-size 3M --upload-size 100K \
        --streams 3 --stats >"$tmp/c.out" 2>"$tmp/c.err"
    rc=$?
    check "IPv6 fixed-size perf exits 0" "[ $rc -eq 0 ]"
    check "IPv6 downloaded exactly 3 x 3 MiB, all verified" \
        "grep -q 'download 9437184 bytes (9437184 verified), upload 307200 bytes' $tmp/c.out"
    check "IPv6 3 requests completed" "[ '$(completed "$tmp/c.out")' = 3 ]"
    check "IPv6 --stats printed" "grep -q '^stats: pkts sent' $tmp/c.out"
    "$q" perf client --connect "$addr" --pin "$pin" --duration 2 --download-size 128K \
        --upload-size 0 >"$tmp/c.out" 2>"$tmp/c.err"
    rc=$?
    check "IPv6 2 s perf exits 0 with verified bytes" \
        "[ $rc -eq 0 ] && [ '$(down_bytes "$tmp/c.out")' = '$(verified_bytes "$tmp/c.out")' ] && [ '$(completed "$tmp/c.out")' -gt 0 ]"
    stop_server
else
    echo "skip - no IPv6 loopback ($(cat "$tmp/s.err"))"
fi

# --- --no-protection: both sides work, a mismatch fails clearly ------------
if start_server 127.0.0.1:0 --no-protection; then
    "$q" perf client --connect "$addr" --pin "$pin" --no-protection --download-size 2M \
        --upload-size 0 >"$tmp/c.out" 2>"$tmp/c.err"
    check "--no-protection on both sides transfers" \
        "[ $? -eq 0 ] && grep -q 'download 2097152 bytes (2097152 verified)' $tmp/c.out"
    timeout 20 "$q" perf client --connect "$addr" --pin "$pin" --quiet --download-size 1M \
        >"$tmp/c.out" 2>"$tmp/c.err"
    rc=$?
    check "--no-protection mismatch fails (rc $rc) with a clear error" \
        "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'handshake failed.*no-protection' $tmp/c.err"
    stop_server
else
    no "no-protection server did not start"
fi

# --- wrong pin -------------------------------------------------------------
if start_server 127.0.0.1:0; then
    bad=$(printf '%064d' 0)
    timeout 20 "$q" perf client --connect "$addr" --pin "$bad" --quiet >"$tmp/c.out" 2>"$tmp/c.err"
    rc=$?
    check "a wrong --pin fails the handshake (rc $rc)" "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'handshake failed' $tmp/c.err"
    stop_server
fi

# --- ECN end to end: ECT(0) set by each sender is seen by the receiver ------
if start_server 127.0.0.1:0; then
    "$q" perf client --connect "$addr" --pin "$pin" --quiet --stats --download-size 2M \
        --upload-size 64K >"$tmp/c.out" 2>"$tmp/c.err"
    rc=$?
    ect0=$(sed -n 's/^stats: ecn .*received ect0 \([0-9]*\).*/\1/p' "$tmp/c.out")
    sent=$(sed -n 's/^stats: ecn .*sent ect0 \([0-9]*\);.*/\1/p' "$tmp/c.out")
    check "ECN: validated (capable), client received ${ect0:-?} ECT(0) packets, sent ${sent:-?}" \
        "[ $rc -eq 0 ] && grep -q '^stats: ecn capable' $tmp/c.out && [ \"\${ect0:-0}\" -gt 1000 ] && [ \"\${sent:-0}\" -gt 10 ]"
    "$q" perf client --connect "$addr" --pin "$pin" --quiet --stats --no-ecn --download-size 256K \
        --upload-size 0 >"$tmp/c.out" 2>"$tmp/c.err"
    check "--no-ecn: nothing marked" \
        "[ $? -eq 0 ] && grep -q '^stats: ecn off; sent ect0 0;' $tmp/c.out"
    stop_server
else
    no "ECN server did not start"
fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
