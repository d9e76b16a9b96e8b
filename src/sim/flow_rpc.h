/* SPDX-License-Identifier: MIT */
/* RPC mode of the "quic" flow type (flow_quic.c keys rpc_size, rpc_count,
 * latency_csv): back-to-back request/response RPCs, one per stream, over one
 * connection. The client writes rpc_size bytes and FIN on a new stream; the
 * server reads them all and answers with 1 byte and FIN; the RPC completes
 * when the client reads that FIN, and the next one starts at once.
 * Completion times go to a histogram (p50/p99/p99.9) and, optionally, a
 * CSV of every latency. */
#ifndef QK_SIM_FLOW_RPC_H
#define QK_SIM_FLOW_RPC_H

#include "sim/flow_quic.h"
#include "sim/hist.h"

#include <stdio.h>

typedef struct qk_rpc {
    uint64_t size_bytes; /**< request size */
    uint64_t max_rpcs;   /**< stop after this many (0 = until the run ends) */
    qk_time start_ns;    /**< no RPC starts before this (warm-up excluded) */
    FILE *csv;           /**< every completion "start_s,latency_us", or NULL */
    qk_hist lat;         /**< completion times, ns */
    uint64_t done, started, resp_sent;
    bool active, blocked; /**< an RPC in flight; waiting for stream credit */
    uint64_t sid;         /**< its stream */
    uint64_t written;     /**< request bytes written so far */
    qk_time t0;           /**< its start */
    qk_time max_ns;
    uint8_t buf[16384];
} qk_rpc;

/** Start state for RPCs of size_bytes. csv_path NULL = no CSV. Returns 0 or QK_ERR_IO. */
int qk_rpc_init(qk_rpc *r, uint64_t size_bytes, uint64_t max_rpcs, const char *csv_path);
void qk_rpc_free(qk_rpc *r);
/** The qk_simq_event_fn driving the RPCs (ctx = the qk_rpc). */
void qk_rpc_on_event(void *ctx, qk_simq *q, bool server, const qk_event *ev, qk_time now);
/** "rpcs=N p50_ms=.. p99_ms=.. p999_ms=.. max_ms=.." into buf. */
void qk_rpc_summary(const qk_rpc *r, char *buf, size_t cap);

#endif
