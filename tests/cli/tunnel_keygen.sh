#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: apps/cmd_keygen.c apps/cli_identity.c
# `quack keygen` and the server's state directory:
#  - keygen --out DIR prints a pin and writes a private key (mode 600);
#  - a tunnel server started with --state-dir DIR, or with --cert/--key
#    DIR's files, reports that pin;
#  - keygen keeps an existing key (exit 1, names --force); --force replaces
#    it (another pin);
#  - a state directory with a certificate but no key: the server exits 4
#    and names the missing file;
#  - keygen without --out: exit 2.
# Usage: tests/cli/tunnel_keygen.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: tunnel_keygen.sh BUILD_DIR}
. "$(dirname "$0")/lib/harness.bash" # q, peer, tmp, pids, check, pick_ports, wait_*, ...
pick_ports echo_port
start_echo_peer "$echo_port"

"$q" keygen >/dev/null 2>"$tmp/noout.err"
check "keygen without --out exits 2 and says so" "[ $? -eq 2 ] && grep -q -- '--out DIR is required' $tmp/noout.err"
"$q" keygen --out "$tmp/k" >"$tmp/kg.out" 2>&1
check "keygen exits 0 and prints a pin ($(grep pin "$tmp/kg.out"))" \
    "[ $? -eq 0 ] && grep -Eq '^pin: [0-9a-f]{64}\$' $tmp/kg.out"
kpin=$(sed -n 's/^pin: //p' "$tmp/kg.out")
check "keygen: the key is private (mode 600)" "[ \"\$(stat -c %a $tmp/k/key.pem)\" = 600 ]"
"$q" tunnel server --listen 127.0.0.1:0 --to "127.0.0.1:$echo_port" --state-dir "$tmp/k" \
    >"$tmp/k1.log" 2>&1 &
kspid=$!
pids+=($kspid)
wait_line "$tmp/k1.log" '^listening on'
check "a server with --state-dir DIR reports keygen's pin ($(listen_pin "$tmp/k1.log"))" \
    "[ '$(listen_pin "$tmp/k1.log")' = '$kpin' ]"
kill -TERM "$kspid"
wait "$kspid"
"$q" tunnel server --listen 127.0.0.1:0 --to "127.0.0.1:$echo_port" --cert "$tmp/k/cert.pem" \
    --key "$tmp/k/key.pem" >"$tmp/k2.log" 2>&1 &
kspid=$!
pids+=($kspid)
wait_line "$tmp/k2.log" '^listening on'
check "a server with --cert/--key from keygen reports its pin" "[ '$(listen_pin "$tmp/k2.log")' = '$kpin' ]"
kill -TERM "$kspid"
wait "$kspid"
ksum=$(sha256sum <"$tmp/k/key.pem")
"$q" keygen --out "$tmp/k" >"$tmp/kg2.out" 2>&1
rc=$?
check "keygen keeps an existing key (rc $rc: $(head -c 120 "$tmp/kg2.out"))" \
    "[ $rc -eq 1 ] && grep -q -- '--force' $tmp/kg2.out && [ \"\$(sha256sum <$tmp/k/key.pem)\" = '$ksum' ]"
"$q" keygen --out "$tmp/k" --force >"$tmp/kg3.out" 2>&1
check "keygen --force makes a new key (another pin)" \
    "[ $? -eq 0 ] && ! grep -q '$kpin' $tmp/kg3.out && grep -Eq '^pin: [0-9a-f]{64}\$' $tmp/kg3.out"
mkdir -p "$tmp/half"
cp "$tmp/k/cert.pem" "$tmp/half/"
"$q" tunnel server --listen 127.0.0.1:0 --to "127.0.0.1:$echo_port" --state-dir "$tmp/half" \
    >/dev/null 2>"$tmp/half.err"
rc=$?
check "a state directory with a certificate but no key: exit 4 ($(head -c 150 "$tmp/half.err"))" \
    "[ $rc -eq 4 ] && grep -q 'key.pem' $tmp/half.err"
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
