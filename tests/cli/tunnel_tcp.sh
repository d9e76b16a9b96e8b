#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# covers: src/tunnel/tcp_carrier.c src/sim/tcprelay.c
# `quack tunnel --carrier tcp`: the end-to-end checks of tests/cli/tunnel.sh
# (SHA-256 echo, concurrency, server speaks first, empty/1-byte flows, a
# refused target reset, SIGTERM exits) over yamux over TLS 1.3 over TCP, plus
# a wrong pin and a TCP delay line. Usage: tests/cli/tunnel_tcp.sh BUILD_DIR
TUNNEL_CARRIER=tcp exec bash "$(dirname "$0")/tunnel.sh" "$@"
