#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Dissector check: capture interop runs on loopback with the TLS key log and
# require Wireshark's QUIC dissector (tshark -V) to decrypt and decode every
# packet with no "Malformed" or "Expert Info (Error" entry. The capture must
# contain the handshake, 1-RTT STREAM data, ACKs, HANDSHAKE_DONE and
# CONNECTION_CLOSE and, in both directions, a key update (key phase 1).
# GSO is off on both sides (a capture on lo shows a GSO batch as one giant
# UDP datagram the dissector cannot split). Needs root (capture on lo). Usage: bash tshark.sh BUILD_DIR
source "$(dirname "$0")/lib/common.bash" "$1"

if ! have_peers || ! command -v tshark >/dev/null; then
    echo "SKIP: tshark/gtlsclient/gtlsserver not installed (scripts/deps.sh installs them)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    record dissector both SKIP "capturing on lo needs root"
    finish
fi

R="$WORK/root"
make_root "$R" small.bin:1500 mid.bin:300000 big.bin:4000000
make_cert

# capture NAME PORT: start tshark on lo for udp port PORT; pid in CAP_PID.
capture() {
    echo "$2" >"$WORK/$1.port"
    tshark -i lo -f "udp port $2" -w "$WORK/$1.pcap" >"$WORK/$1.tshark.log" 2>&1 &
    CAP_PID=$!
    PIDS+=("$CAP_PID")
    for _ in $(seq 50); do
        grep -q "Capturing on" "$WORK/$1.tshark.log" && break
        sleep 0.1
    done
    sleep 0.3
}

stop_capture() {
    sleep 0.5
    kill -INT "$CAP_PID" 2>/dev/null
    wait "$CAP_PID" 2>/dev/null
}

# decode NAME KEYLOG: every QUIC packet decrypted and clean.
check_decode() {
    local txt="$WORK/$1.decode.txt"
    # the capture's port decoded as QUIC: a random port can be one that
    # Wireshark gives to another protocol (23272 is A21's), which would win
    local as_quic=(-d "udp.port==$(cat "$WORK/$1.port"),quic")
    tshark -r "$WORK/$1.pcap" "${as_quic[@]}" -o "tls.keylog_file:$2" -V >"$txt" 2>&1 || {
        echo "tshark failed"
        return 1
    }
    local udp quic bad
    udp=$(tshark -r "$WORK/$1.pcap" -Y udp 2>/dev/null | wc -l)
    quic=$(tshark -r "$WORK/$1.pcap" "${as_quic[@]}" -o "tls.keylog_file:$2" -Y quic 2>/dev/null | wc -l)
    [ "$udp" -gt 10 ] || {
        echo "only $udp datagrams captured"
        return 1
    }
    [ "$quic" -eq "$udp" ] || {
        echo "$quic of $udp datagrams decoded as QUIC"
        return 1
    }
    bad=$(grep -n -E "Malformed|Expert Info \(Error|Decryption failed|Remaining Payload" "$txt" | head -3)
    if [ -n "$bad" ]; then
        echo "dissector errors: $bad"
        return 1
    fi
    local want
    for want in "CRYPTO" "ACK" "STREAM" "HANDSHAKE_DONE" "CONNECTION_CLOSE"; do
        grep -q "$want" "$txt" || {
            echo "capture lacks $want"
            return 1
        }
    done
    # Every short-header packet was decrypted: no undecodable payloads.
    if grep -q "Decryption.*not available\|Secrets are not available" "$txt"; then
        echo "some packets could not be decrypted"
        return 1
    fi
}

# Key phase 1 must be in the capture and decrypted: Wireshark derives the
# updated keys from the key log's traffic secrets (RFC 9001 §6.1 "quic ku").
need_key_phase() { # name
    grep -q "Key Phase Bit: True" "$WORK/$1.decode.txt" || {
        echo "no key update (key phase 1) seen"
        return 1
    }
}

dissect_qn() {
    local port gopts="" files="small.bin mid.bin"
    # quack get initiates key updates once it can: every 4 packets it sends
    # (mostly ACKs, one per several received), as often as RFC 9001 §6.5
    # allows, over a longer download so several happen.
    if "$Q" get --help 2>/dev/null | grep -q -- --key-update; then
        gopts="--key-update=4"
        files="$files big.bin"
    fi
    port=$(free_port)
    : >"$WORK/qn.keys"
    capture qn "$port"
    spawn qn.gtlsserver gtlsserver -q --max-gso-dgrams=1 -d "$R" 127.0.0.1 "$port" "$WORK/key.pem" "$WORK/cert.pem"
    local sp=$BG_PID
    wait_udp "$port" || { echo "gtlsserver did not start"; return 1; }
    mkdir -p "$WORK/qn.out"
    local urls="" f
    for f in $files; do urls="$urls https://127.0.0.1:$port/$f"; done
    # shellcheck disable=SC2086
    timeout 30 "$Q" get --quiet --no-gso --insecure $gopts --keylog "$WORK/qn.keys" \
        --output "$WORK/qn.out" $urls 2>"$WORK/qn.get.err" ||
        { echo "quack get failed: $(head -1 "$WORK/qn.get.err")"; return 1; }
    stop_capture
    stop_peer "$sp"
    # shellcheck disable=SC2086
    same_files "$R" "$WORK/qn.out" $files || return 1
    check_decode qn "$WORK/qn.keys" || return 1
    [ -z "$gopts" ] || need_key_phase qn
}

dissect_nq() {
    local port copts="" files="small.bin mid.bin"
    # ngtcp2 updates keys only 3 PTO after confirmation (RFC 9001 §6.5):
    # a longer download keeps the connection alive long enough to see it.
    [ -f "$SRC/src/transport/conn/keyupdate.c" ] && copts="--key-update=10ms" && files="$files big.bin"
    port=$(free_port)
    : >"$WORK/nq.keys"
    capture nq "$port"
    spawn nq.serve "$Q" serve --quiet --no-gso --root "$R" --listen "127.0.0.1:$port" --keylog "$WORK/nq.keys"
    local sp=$BG_PID
    wait_udp "$port" || { echo "quack serve did not start"; return 1; }
    mkdir -p "$WORK/nq.out"
    # shellcheck disable=SC2086
    local urls="" f
    for f in $files; do urls="$urls https://127.0.0.1:$port/$f"; done
    # shellcheck disable=SC2086
    timeout 30 gtlsclient -q $copts --download "$WORK/nq.out" --exit-on-all-streams-close \
        127.0.0.1 "$port" $urls >/dev/null 2>"$WORK/nq.client.err" || {
        echo "gtlsclient failed"
        return 1
    }
    stop_capture
    stop_quack "$sp" nq.serve || return 1
    # shellcheck disable=SC2086
    same_files "$R" "$WORK/nq.out" $files || return 1
    check_decode nq "$WORK/nq.keys" || return 1
    [ -z "$copts" ] || need_key_phase nq
}

cell dissector q\>n "" dissect_qn
cell dissector n\>q "" dissect_nq
finish
