#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Interop with Debian's ngtcp2 0.12.1 examples (gtlsclient/gtlsserver, ALPN h3),
# both directions, loopback only: handshake, transfer, multiplexing, ChaCha20,
# IPv6, key update, Retry, version negotiation. Usage: bash ngtcp2.sh BUILD_DIR
# Transfer sizes: 1 KiB .. 50 MiB (QK_INTEROP_BIG overrides the largest).
source "$(dirname "$0")/lib/common.bash" "$1"

if ! have_peers; then
    echo "SKIP: gtlsclient/gtlsserver/openssl not installed (scripts/deps.sh installs them)"
    exit 0
fi

R="$WORK/root"
make_root "$R" small.bin:1024 mid.bin:1048576 big.bin:"${QK_INTEROP_BIG:-52428800}" \
    empty.bin:0 odd.bin:99999 four.bin:4194304
MANY=()
for i in $(seq 1 150); do MANY+=("m$i.bin:$((i * 37 % 3000 + 1))"); done
make_root "$R/many" "${MANY[@]}"
MANY_NAMES=()
for i in $(seq 1 150); do MANY_NAMES+=("many/m$i.bin"); done
# gtlsclient and quack get save under the last path segment: compare in a
# flat view of the many/ directory.
many_qn() { run_qn multiplexing "$R/many" "" "" 127.0.0.1 "${MANY_NAMES[@]#many/}"; }
many_nq() { run_nq multiplexing "$R/many" "" "" 127.0.0.1 "${MANY_NAMES[@]#many/}"; }

CHACHA="NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305"

# Features another helper adds: skip (with the reason) until they are in the tree.
skip_unless_file() { [ -f "$SRC/$1" ] || echo "$2"; }
skip_unless_opt() { "$Q" "$1" --help 2>/dev/null | grep -q -- "$2" || echo "$3"; }

cell handshake q\>n "" run_qn handshake "$R" "" "" 127.0.0.1 small.bin
cell handshake n\>q "" run_nq handshake "$R" "" "" 127.0.0.1 small.bin
# (gtlsserver answers 404 for an empty file, so empty.bin is only fetched from quack)
cell transfer q\>n "" run_qn transfer "$R" "" "" 127.0.0.1 small.bin odd.bin mid.bin big.bin
cell transfer n\>q "" run_nq transfer "$R" "" "" 127.0.0.1 small.bin empty.bin odd.bin mid.bin big.bin
cell multiplexing q\>n "" many_qn
cell multiplexing n\>q "" many_nq
cell chacha20 q\>n "" run_qn chacha20 "$R" "--ciphers=$CHACHA" "" 127.0.0.1 small.bin mid.bin
cell chacha20 n\>q "" run_nq chacha20 "$R" "" "--ciphers=$CHACHA" 127.0.0.1 small.bin mid.bin
V6=""
have_ipv6 || V6="no IPv6 loopback on this machine"
cell ipv6 q\>n "$V6" run_qn ipv6 "$R" "" "" "[::1]" small.bin mid.bin
cell ipv6 n\>q "$V6" run_nq ipv6 "$R" "" "" "[::1]" small.bin mid.bin

# Key update (RFC 9001 §6). q>n: quack get initiates one every 16 packets it
# sends (ACKs, mostly, one per many received: several per transfer). n>q: gtlsclient initiates one
# 10 ms after confirmation; quack must answer it. quack's qlog must show the
# updates (local_update / remote_update) or the cell did not test anything.
ku_check() { # qlog-dir trigger
    grep -q "\"security:key_updated\",\"data\":{\"trigger\":\"$2\"" "$1"/* 2>/dev/null ||
        { echo "no $2 key update in quack's qlog"; return 1; }
}
ku_qn() {
    mkdir -p "$WORK/ku.qn.qlog"
    run_qn keyupdate "$R" "" "--key-update=16 --qlog $WORK/ku.qn.qlog" 127.0.0.1 \
        mid.bin four.bin || return 1
    ku_check "$WORK/ku.qn.qlog" local_update
}
ku_nq() {
    mkdir -p "$WORK/ku.nq.qlog"
    run_nq keyupdate "$R" "--qlog $WORK/ku.nq.qlog" "--key-update=10ms" 127.0.0.1 \
        mid.bin four.bin || return 1
    ku_check "$WORK/ku.nq.qlog" remote_update
}
cell keyupdate q\>n "$(skip_unless_opt get --key-update \
    'quack get has no --key-update (quack-initiated key update not in main yet)')" ku_qn
cell keyupdate n\>q "$(skip_unless_file src/transport/conn/keyupdate.c \
    'key update not in main yet (src/transport/conn/keyupdate.c)')" ku_nq

# Retry: gtlsserver -V validates every address with Retry; quack serve --retry.
cell retry q\>n "$(skip_unless_file src/transport/conn/retry.c \
    'client Retry handling not in main yet (src/transport/conn/retry.c)')" \
    run_qn retry "$R" "-V" "" 127.0.0.1 small.bin mid.bin
cell retry n\>q "$(skip_unless_opt serve --retry 'quack serve has no --retry yet (needs qk_config.retry)')" \
    run_nq retry "$R" "--retry" "" 127.0.0.1 small.bin mid.bin

# Version negotiation: the client offers an unknown version first.
# q>n: quack get offers 0x1a2a3a4a, gtlsserver answers with Version Negotiation,
# quack starts again in v1 (its qlog must show that restart).
vn_qn() {
    mkdir -p "$WORK/vn.qlog"
    run_qn versionneg "$R" "" "--offer-version 0x1a2a3a4a --qlog $WORK/vn.qlog" 127.0.0.1 \
        small.bin mid.bin || return 1
    grep -q '"chosen_version":"00000001","offered":"1a2a3a4a"' "$WORK"/vn.qlog/* ||
        { echo "no version negotiation in quack's qlog"; return 1; }
}
cell versionneg q\>n "$(skip_unless_opt get --offer-version \
    'quack get has no --offer-version yet (needs qk_config.offer_version)')" vn_qn
cell versionneg n\>q "$(skip_unless_file src/transport/endpoint/stateless.c \
    'server Version Negotiation not in main yet (src/transport/endpoint/stateless.c)')" \
    run_nq versionneg "$R" "" "-v 0x1a2a3a4a --preferred-versions v1" 127.0.0.1 small.bin

finish
