# SPDX-License-Identifier: MIT
# Shared by the tunnel CLI tests (source it after setting build, the build
# directory): q (its quack) and peer (tests/cli/tunnel_peer.py), a scratch
# directory removed at exit with every process in $pids killed, the
# ok/no/check reporters that count failures in $fails, loopback ports for the
# test, and waits that poll instead of sleeping a guessed time.
q="${build:?set build before sourcing harness.bash}/quack"
peer="python3 $(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tunnel_peer.py"
tmp=$(mktemp -d)
# quack tunnel server keeps its key in $XDG_STATE_HOME/quack (--state-dir's
# default): the test's own, not the user's or /var/lib/quack.
export XDG_STATE_HOME="$tmp/state"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "${BASH_SOURCE[0]}")/report.bash" # ok, no, check, fails

. "$(dirname "${BASH_SOURCE[0]}")/ports.bash" # port_in_use, pick_ports, wait_until, wait_tcp, wait_udp

# wait_line FILE REGEX [TENTHS]: a line of FILE matches REGEX, within
# TENTHS/10 s (default 10 s).
wait_line() { wait_until "${3:-100}" grep -q "$2" "$1"; }

# wait_gone PID [TENTHS]: PID has exited, within TENTHS/10 s (default 10 s).
gone() { ! kill -0 "$1" 2>/dev/null; }
wait_gone() { wait_until "${2:-100}" gone "$1"; }

# listen_addr FILE / listen_pin FILE: the address of a `quack tunnel server`
# ('listening on ADDR ...') and its key pin ('pin: HEX') from its stdout.
listen_addr() { sed -n 's/^listening on \([^ ]*\).*/\1/p' "$1"; }
listen_pin() { sed -n 's/^pin: //p' "$1"; }

# start_echo_peer PORT: tunnel_peer.py's TCP echo on 127.0.0.1:PORT, listening
# when this returns (else a failure is counted).
start_echo_peer() {
    $peer echo "$1" &
    pids+=($!)
    wait_tcp "$1" || no "the echo peer on port $1 did not listen"
}
