#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The DNS carrier through real recursive resolvers (docs/dns.md): quack
# tunnel client -> quack netem (100 ms RTT) -> Debian's unbound or dnsmasq ->
# quack tunnel server (authoritative for t.example.com) -> TCP peer.
# Checks, SHA-256 of every transfer (tests/interop/dns/peer.py):
#   unbound (qname-minimisation no): 10 MiB download, 1 MiB upload
#   dnsmasq: 10 MiB download, 1 MiB upload
#   two resolvers, one of them dead: it is taken out, 1 MiB completes
#   unbound restarted mid-download (2 MiB): the transfer completes
#   --max-qname-len 101 (50-byte datagrams) and unbound with qname
#   minimisation on: 1 MiB download each
#   a server holding queries 400 ms (past unbound's timeout): unbound
#   retransmits on new ports and IDs, the server sees the duplicates and the
#   2 MiB download still completes
# Usage: bash dns.sh BUILD_DIR
set -u
BUILD=${1:?usage: dns.sh BUILD_DIR}
source "$(dirname "$0")/dns/rig.bash"
for tool in unbound dnsmasq ss; do
    if ! command -v $tool >/dev/null; then
        echo "SKIP: $tool not installed (scripts/deps.sh installs unbound and dnsmasq)"
        exit 0
    fi
done
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export RIG_TIMEOUT=${RIG_TIMEOUT:-150}
FAILS=0
trap 'rig_cleanup; [ $FAILS -eq 0 ] && rm -rf "$WORK"' EXIT

check() { # NAME COMMAND...: run, print the result line, count failures
    local name=$1
    shift
    local out
    out=$("$@" 2>&1)
    local rc=$?
    printf '%-34s %s\n' "$name" "$(echo "$out" | tail -1)"
    if [ $rc -ne 0 ]; then
        FAILS=$((FAILS + 1))
        echo "FAIL: $name" >&2
    fi
}

MiB=1048576
rig_init "$BUILD"
rig_server || exit 1
rig_unbound "$UPORT" no || exit 1
rig_dnsmasq "$DPORT" || exit 1
rig_netem "$NPORT" "$UPORT" 100 || exit 1
rig_netem "$NPORT2" "$DPORT" 100 || exit 1

echo "== unbound, 100 ms RTT"
rig_client "$NPORT" || exit 1
check "unbound: 10 MiB download" rig_get $((10 * MiB)) 1
check "unbound: 1 MiB upload" rig_put $MiB 2
rig_stop_client
grep "dns client" "$WORK/client.err"

echo "== dnsmasq, 100 ms RTT"
rig_client "$NPORT2" || exit 1
check "dnsmasq: 10 MiB download" rig_get $((10 * MiB)) 3
check "dnsmasq: 1 MiB upload" rig_put $MiB 4
rig_stop_client
grep "dns client" "$WORK/client.err"

echo "== two resolvers, one dead: failover"
rig_client "$NPORT" --resolver 127.0.0.1:$XPORT || exit 1
check "failover: 1 MiB download" rig_get $MiB 9
rig_stop_client
grep "resolver" "$WORK/client.err"
grep -q "127.0.0.1:$XPORT: .* taken out [1-9]" "$WORK/client.err" ||
    { FAILS=$((FAILS + 1)); echo "FAIL: the dead resolver was not taken out" >&2; }

echo "== unbound restarted mid-download"
rig_client "$NPORT" || exit 1
rig_get $((2 * MiB)) 5 >"$WORK/restart.out" 2>&1 &
getpid=$!
sleep 1
kill "$UNBOUND_PID"
wait "$UNBOUND_PID" 2>/dev/null
sleep 1
rig_unbound "$UPORT" no || exit 1
wait $getpid
rc=$?
printf '%-34s %s\n' "unbound restart: 2 MiB download" "$(tail -1 "$WORK/restart.out")"
[ $rc -eq 0 ] || { FAILS=$((FAILS + 1)); echo "FAIL: restart" >&2; }
rig_stop_client

echo "== --max-qname-len 101"
rig_client "$NPORT" --max-qname-len 101 || exit 1
check "qname 101: 1 MiB download" rig_get $MiB 6
rig_stop_client
grep "dns client" "$WORK/client.err"
grep -q "50-byte datagrams" "$WORK/client.err" || { FAILS=$((FAILS + 1)); echo "FAIL: not 48-byte datagrams" >&2; }

echo "== unbound with qname-minimisation yes"
rig_unbound "$UPORT2" yes || exit 1
rig_client "$UPORT2" || exit 1
check "minimisation: 1 MiB download" rig_get $MiB 7
rig_stop_client

echo "== unbound retransmits (server holds queries 400 ms)"
kill -INT "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
cat "$WORK/server.err" >>"$WORK/servers.log"
rig_server --patience 400ms || exit 1
rig_client "$NPORT" || exit 1
check "retransmits: 2 MiB download" rig_get $((2 * MiB)) 8
rig_stop_client
kill -INT "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null
grep "dns server" "$WORK/server.err"
dups=$(sed -n 's/.* \([0-9]*\) duplicates.*/\1/p' "$WORK/server.err" | tail -1)
if [ "${dups:-0}" -eq 0 ]; then
    FAILS=$((FAILS + 1))
    echo "FAIL: no duplicate queries seen: the retransmit case tested nothing" >&2
fi

# Sanitizer reports (ASan build) from any run of the client or the server.
cat "$WORK/server.err" >>"$WORK/servers.log"
if grep -l "Sanitizer" "$WORK"/clients.log "$WORK"/servers.log; then
    FAILS=$((FAILS + 1))
    echo "FAIL: sanitizer report (logs in $WORK)" >&2
fi
if [ $FAILS -ne 0 ]; then
    echo "FAILED: $FAILS (logs in $WORK)"
    exit 1
fi
echo "PASS"
