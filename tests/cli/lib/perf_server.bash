# SPDX-License-Identifier: MIT
# Shared by tests/cli/perf*.sh (sourced, not a test): a scratch dir, TAP-ish
# ok/no/check counters, and a `quack perf server` on a loopback port.
# The caller sets q (the quack binary) before sourcing.
tmp=$(mktemp -d)
spid=
cleanup() {
    if [ -n "$spid" ] && kill -0 "$spid" 2>/dev/null; then
        kill -TERM "$spid"
        wait "$spid" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

. "$(dirname "${BASH_SOURCE[0]}")/report.bash" # ok, no, check, fails

# start_server LISTEN [extra server args]: sets addr and pin; false if it
# did not come up within 10 s.
start_server() {
    local listen=$1
    shift
    # Emptied here, not by the redirection below: that happens in the child,
    # and the wait could still read the previous server's "listening on".
    : >"$tmp/s.out"
    "$q" perf server --listen "$listen" --quiet "$@" >"$tmp/s.out" 2>"$tmp/s.err" &
    spid=$!
    for _ in $(seq 200); do
        grep -q '^listening on' "$tmp/s.out" 2>/dev/null && break
        sleep 0.05
    done
    addr=$(sed -n 's/^listening on \([^ ]*\).*/\1/p' "$tmp/s.out")
    pin=$(sed -n 's/^pin: //p' "$tmp/s.out")
    [ -n "$addr" ] && [ ${#pin} -eq 64 ]
}

# stop_server: SIGTERM, wait; returns the server's exit status.
stop_server() {
    kill -TERM "$spid" 2>/dev/null
    wait "$spid"
    local rc=$?
    spid=
    return $rc
}
