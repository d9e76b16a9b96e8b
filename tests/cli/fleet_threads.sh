#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: src/io/workers.c src/transport/conn/cid.c apps/serve_fleet.c
# `quack serve --threads 2 --lb-config FILE` (docs/deploy.md): the CIDs are
# QUIC-LB encrypted ones of the machine's server ID with the worker index in
# the first nonce byte, and the workers decode them to steer. On loopback:
#  - the server says at start which configuration it uses;
#  - two downloads (50 MB) whose client changes its port every 20 ms
#    (quack get --migrate-every, RFC 9000 §9) are byte-exact (SHA-256);
#  - encrypted CIDs: datagrams the kernel's hash gave the wrong worker were
#    steered by their decoded DCID (steered_short > 0), and no stateless reset
#    was sent (every CID of a live connection decodes to its worker);
#  - kernel steering (SO_ATTACH_REUSEPORT_EBPF): with a plaintext
#    configuration, and with the one-byte worker index of a server without
#    --lb-config (after 1,000 handshakes from bench_conns as well), no
#    datagram is steered in user space (the counter stays 0) while the
#    downloads migrate; with --no-bpf the same downloads are steered in user
#    space (the counter above 0); encrypted CIDs stay in user space, said at
#    start.
# Usage: bash tests/cli/fleet_threads.sh BUILD_DIR
set -u
build=${1:?usage: fleet_threads.sh BUILD_DIR}
# Loading a SK_REUSEPORT program needs CAP_BPF (root here).
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (kernel steering: CAP_BPF)"; exit 0; }
. "$(dirname "$0")/lib/harness.bash"

export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"
sha() { sha256sum <"$1" 2>/dev/null | cut -d' ' -f1; }
mkdir -p "$tmp/root"
head -c 50000000 /dev/urandom >"$tmp/root/big.bin"
want=$(sha "$tmp/root/big.bin")
printf '[quic-lb]\nconfig_id = 2\nserver_id = 0c0d0e\nnonce_len = 6\nkey = %s\n' \
    "$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$tmp/enc.ini"
printf '[quic-lb]\nconfig_id = 0\nserver_id = 42\nnonce_len = 7\n' >"$tmp/plain.ini"

for mode in enc plain plain_nobpf legacy; do
    opts=(--lb-config "$tmp/${mode%_nobpf}.ini")
    [ $mode = plain_nobpf ] && opts+=(--no-bpf)
    [ $mode = legacy ] && opts=() # the one-byte plaintext worker index, no QUIC-LB
    "$q" serve --quiet --stats --threads 2 --root "$tmp/root" --listen 127.0.0.1:0 \
        "${opts[@]}" >"$tmp/$mode.out" 2>"$tmp/$mode.err" &
    spid=$!
    pids+=("$spid")
    wait_line "$tmp/$mode.out" 'listening on' 200
    addr=$(sed -n 's/.*listening on \([^ ]*\).*/\1/p' "$tmp/$mode.out" | head -1)
    pin=$(sed -n 's/^pin: //p' "$tmp/$mode.out" | head -1)
    case $mode in
    enc) line="QUIC-LB config 2, server ID 0c0d0e, encrypted CIDs of 10 bytes"
        steer="user space (encrypted QUIC-LB CIDs cannot be read by the kernel program)" ;;
    plain*) line="QUIC-LB config 0, server ID 42, plaintext CIDs of 9 bytes"
        steer="kernel (SO_ATTACH_REUSEPORT_EBPF)" ;;
    esac
    [ $mode = plain_nobpf ] && steer="user space (kernel steering turned off)"
    [ $mode = legacy ] && steer="kernel (SO_ATTACH_REUSEPORT_EBPF)"
    [ $mode = legacy ] || check "$mode: the server says '$line'" "grep -q '^fleet: $line' '$tmp/$mode.out'"
    check "$mode: steering: $steer" "grep -qF 'steering: $steer' '$tmp/$mode.out'" ||
        echo "    $(grep steering "$tmp/$mode.out")"
    if [ $mode = legacy ]; then
        [ -x "$build/bench_conns" ] || no "$build/bench_conns is not built (cmake --build $build --target bench_conns)"
        # 1,000 handshakes first (100 client ports), then the migrating downloads
        timeout 120 "$build/bench_conns" "$addr" 1000 100 0 60 >"$tmp/conns.out" 2>&1
        check "$mode: 1,000 connections ($(cat "$tmp/conns.out" | tail -1))" \
            "grep -q 'connected 1000 of 1000' '$tmp/conns.out'"
    fi
    for i in 1 2; do
        rm -rf "$tmp/get" && mkdir -p "$tmp/get"
        timeout 120 "$q" get --quiet --migrate-every 0.02 --pin "$pin" --output "$tmp/get" \
            "https://$addr/big.bin" 2>"$tmp/$mode.get$i.err"
        m=$(sed -n 's/^migrations: \([0-9]*\).*/\1/p' "$tmp/$mode.get$i.err")
        check "$mode: download $i byte-exact after ${m:-0} port changes" \
            "[ \"\$(sha '$tmp/get/big.bin')\" = $want ] && [ \"\${m:-0}\" -ge 2 ]"
    done
    kill -TERM "$spid"
    wait "$spid"
    steered=$(sed -n 's/^workers: 2 steered_short \([0-9]*\).*/\1/p' "$tmp/$mode.err")
    resets=$(sed -n 's/^worker [0-9] endpoint: .* resets_sent \([0-9]*\) .*/\1/p' "$tmp/$mode.err" |
        awk '{n += $1} END {print n + 0}')
    if [ "${steer%% *}" = kernel ]; then
        check "$mode: no datagram steered in user space (${steered:-?} = 0: the kernel delivered them to their worker), $resets stateless resets" \
            "[ \"\${steered:-x}\" = 0 ] && [ $resets = 0 ] && [ \$(grep -c resets_sent '$tmp/$mode.err') = 2 ]"
    else
        check "$mode: datagrams steered by their decoded DCID (${steered:-0} > 0), $resets stateless resets" \
            "[ \"\${steered:-0}\" -gt 0 ] && [ $resets = 0 ] && [ \$(grep -c resets_sent '$tmp/$mode.err') = 2 ]"
    fi
done
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
