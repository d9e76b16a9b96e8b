/* SPDX-License-Identifier: MIT */
/*
 * Real-time UDP relay (`quack netem`): the simulator's link model driven by
 * the wall clock. Datagrams from a client to `listen` go to `to` through the
 * forward link; replies come back through the return link to the last client
 * address seen. With a range of n_ports, listen port + i relays to to port
 * + i (one socket per listen port, one toward the server: the server sees
 * one client address on all its ports), all through the same two links. ECN codepoints are read
 * (IP_RECVTOS / IPV6_RECVTCLASS) and written (IP_TOS / IPV6_TCLASS cmsg) per datagram; CE marks are
 * applied.
 */
#ifndef QK_SIM_RELAY_H
#define QK_SIM_RELAY_H

#include <quack/sim.h>
#include <signal.h>

/** A port of the relay's range that drops everything from start_ns to end_ns. */
typedef struct qk_relay_dark {
    uint16_t to_port;         /**< the server's port (--to side); 0: the one the client
                                   used last when start_ns comes */
    qk_time start_ns, end_ns; /**< relay time; end_ns QK_TIME_INFINITE: for good */
} qk_relay_dark;

#define QK_RELAY_MAX_PORTS 1024
#define QK_RELAY_MAX_DARK  16

typedef struct qk_relay_cfg {
    qk_addr listen;   /**< where clients send (the first port of a range) */
    qk_addr to;       /**< the server (the first port of a range) */
    unsigned n_ports; /**< ports in both ranges: listen port + i goes to to port + i (0 = 1) */
    qk_relay_dark dark[QK_RELAY_MAX_DARK]; /**< ports that go dark (--blackhole-port) */
    size_t n_dark;
    qk_sim_link_cfg fwd; /**< client -> server */
    qk_sim_link_cfg ret; /**< server -> client */
    qk_time duration_ns; /**< stop after this long; 0 = until *stop */
    FILE *stats;         /**< one line per second, NULL = none */
    uint64_t seed;
} qk_relay_cfg;

/** Final counters of a relay run. */
typedef struct qk_relay_result {
    qk_sim_link_stats fwd, ret;
    uint64_t send_errors;
    uint64_t dark_drops; /**< datagrams dropped by qk_relay_cfg.dark */
} qk_relay_result;

/**
 * Run the relay until duration or *stop becomes non-zero (signal handler).
 * Returns 0, QK_ERR_IO (socket/bind failure; err names it), QK_ERR_CONFIG.
 */
int qk_relay_run(const qk_relay_cfg *cfg, volatile sig_atomic_t *stop, qk_relay_result *res,
                 char *err, size_t err_cap);

/** Parse "1.2.3.4:port" or "[::1]:port". Returns 0 or QK_ERR_CONFIG. */
int qk_relay_parse_addr(const char *s, qk_addr *out);

#endif
