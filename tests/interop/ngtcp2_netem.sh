#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Interop with ngtcp2 gtlsclient/gtlsserver through `quack netem` (userspace
# link emulation on loopback), both directions: handshake loss (30% drops,
# several connections), transfer loss (5% drops) and corruption.
# Usage: bash ngtcp2_netem.sh BUILD_DIR
source "$(dirname "$0")/lib/common.bash" "$1"

if ! have_peers; then
    echo "SKIP: gtlsclient/gtlsserver/openssl not installed (scripts/deps.sh installs them)"
    exit 0
fi

R="$WORK/root"
make_root "$R" small.bin:2000 mid.bin:2097152
CASE_TIMEOUT=90

# Handshake loss: 30% of datagrams dropped each way; 5 fresh connections
# must all complete (the interop runner's "handshakeloss" in small).
hs_loss() { # run_qn|run_nq
    # At 30 % loss each way a handshake can need more than quack get's 10 s
    # handshake timeout (PTO backoff; 13.8 s seen): give it 60 s here.
    local gopts=""
    [ "$1" = run_qn ] && gopts="--handshake-timeout 60s"
    for i in 1 2 3 4 5; do
        NETEM_OPTS="--loss 30% --seed $i" "$1" "handshakeloss$i" "$R" "" "$gopts" 127.0.0.1 small.bin ||
            return 1
    done
}
cell handshakeloss q\>n "" hs_loss run_qn
cell handshakeloss n\>q "" hs_loss run_nq

NETEM_OPTS="--loss 5% --delay 5ms --seed 7" cell transferloss q\>n "" \
    run_qn transferloss "$R" "" "" 127.0.0.1 small.bin mid.bin
NETEM_OPTS="--loss 5% --delay 5ms --seed 7" cell transferloss n\>q "" \
    run_nq transferloss "$R" "" "" 127.0.0.1 small.bin mid.bin

# Corruption: 2% of datagrams get a flipped byte (AEAD failures = drops).
NETEM_OPTS="--corrupt 2% --delay 2ms --seed 11" cell corruption q\>n "" \
    run_qn corruption "$R" "" "" 127.0.0.1 small.bin mid.bin
NETEM_OPTS="--corrupt 2% --delay 2ms --seed 11" cell corruption n\>q "" \
    run_nq corruption "$R" "" "" 127.0.0.1 small.bin mid.bin

finish
