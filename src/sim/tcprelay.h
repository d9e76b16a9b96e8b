/* SPDX-License-Identifier: MIT */
/*
 * TCP delay line (`quack netem --tcp`): a real-time relay that accepts TCP
 * connections on `listen`, opens one to `to` for each, and passes each
 * direction's bytes through a serializer (rate) and a fixed one-way delay.
 * Bytes are cut into segments of at most QK_TCPRELAY_SEG_BYTES, each
 * released at max(arrival, previous departure) + size / rate + delay; the
 * relay stops reading a side while limit_bytes wait for the serializer, so
 * TCP flow control pushes back on the sender (no loss: TCP over a lossy
 * path is the kernel's business). Half-close and resets are passed on.
 */
#ifndef QK_SIM_TCPRELAY_H
#define QK_SIM_TCPRELAY_H

#include <quack/sim.h>
#include <signal.h>
#include <stdio.h>

#define QK_TCPRELAY_SEG_BYTES 1448u

typedef struct qk_tcprelay_dir_cfg {
    uint64_t rate_bps;    /**< serialization rate; 0 = infinite */
    qk_time delay_ns;     /**< one-way delay */
    uint64_t limit_bytes; /**< bytes waiting for the serializer before reading stops */
} qk_tcprelay_dir_cfg;

typedef struct qk_tcprelay_cfg {
    qk_addr listen, to;
    qk_tcprelay_dir_cfg fwd, ret; /**< client -> server, server -> client */
    qk_time duration_ns;          /**< 0 = until *stop */
    FILE *stats;                  /**< one line per second, NULL = none */
} qk_tcprelay_cfg;

/**
 * Run until duration or *stop. Returns 0, QK_ERR_IO (socket/bind; err says
 * which), QK_ERR_NOMEM.
 */
int qk_tcprelay_run(const qk_tcprelay_cfg *cfg, volatile sig_atomic_t *stop, char *err,
                    size_t err_cap);

#endif
