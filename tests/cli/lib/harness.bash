# Shared by the tunnel CLI tests (source it): a scratch directory removed at
# exit with every process in $pids killed, and the ok/no/check reporters that
# count failures in $fails.
tmp=$(mktemp -d)
pids=()
fails=0
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
ok() { echo "ok   - $*"; }
no() { echo "FAIL - $*"; fails=$((fails + 1)); }
check() { if eval "$2"; then ok "$1"; else no "$1"; fi; }
# wait_udp PORT: until a socket is bound to UDP PORT (at most 5 s). A QUIC
# client fails at once on the ICMP port unreachable of a port nobody has
# bound yet, so a test starts it only once its relay or server is up.
wait_udp() {
    local hex
    hex=$(printf ':%04X ' "$1")
    for _ in $(seq 100); do
        # /proc/net/udp: local_address is column 2, "0100007F:PORT" in hex
        awk -v p="$hex" 'index($2 " ", p) { f = 1 } END { exit !f }' /proc/net/udp && return 0
        sleep 0.05
    done
    return 1
}
