/* SPDX-License-Identifier: MIT */
/*
 * Real-time UDP relay (`quack netem`): the simulator's link model driven by
 * the wall clock. Datagrams from a client to `listen` go to `to` through the
 * forward link; replies come back through the return link to the last client
 * address seen. ECN codepoints are read (IP_RECVTOS / IPV6_RECVTCLASS) and
 * written (IP_TOS / IPV6_TCLASS cmsg) per datagram; CE marks are applied.
 */
#ifndef QK_SIM_RELAY_H
#define QK_SIM_RELAY_H

#include <quack/sim.h>
#include <signal.h>

typedef struct qk_relay_cfg {
    qk_addr listen;      /**< where clients send */
    qk_addr to;          /**< the server */
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
