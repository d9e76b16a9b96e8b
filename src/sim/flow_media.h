/* SPDX-License-Identifier: MIT */
/* The "media" flow type: a QUIC client sends three media flows
 * to a server over one connection, each on its own unidirectional stream
 * with an RFC 9218 urgency: audio 32 B every 20 ms (urgency 2), low-
 * definition video 2,048 B at 30 fps with a 32,768 B I-frame every 100th
 * (urgency 4), high-definition video 6,144 B at 60 fps with a 65,536 B
 * I-frame every 100th (urgency 6). Every frame carries its number and send
 * time; the server measures each frame's delay from send to fully
 * received. Optionally a bulk upload shares the connection (urgency 7,
 * always data to send: the "bulk neighbour" of bench/media.sh). Built on the "quic" flow
 * (flow_quic.h) with no bulk transfer. */
#ifndef QK_SIM_FLOW_MEDIA_H
#define QK_SIM_FLOW_MEDIA_H

#include <stdio.h>

#include "sim/flow_quic.h"

#define QK_SIMM_FLOWS QK_MEDIA_FLOWS /* audio, ld, hd (quack/sim.h) */
/* The bulk neighbour (qk_simm_cfg.bulk): RFC 9218 §4 background urgency, and
 * how much of it the sender keeps written ahead. */
#define QK_SIMM_BULK_URGENCY     7
#define QK_SIMM_BULK_AHEAD_BYTES (1l << 20)
#define QK_SIMM_ORACLE_MARGIN_NS (QK_NS_PER_MS / 2) /* qk_simm_cfg.oracle_link */

typedef struct qk_simm qk_simm;

/** What runs. Zero = all three flows for 10 s from time 0, CUBIC, no bypass. */
typedef struct qk_simm_cfg {
    qk_cc_kind cc;
    qk_time start_ns;         /**< the client connects */
    qk_time duration_ns;      /**< media is generated for this long after connecting (0 = 10 s) */
    bool skip[QK_SIMM_FLOWS]; /**< leave a flow out */
    uint8_t bypass_limit;     /**< qk_config.bypass_urgency_limit of the sender (0 = off) */
    bool no_bucket;           /**< bypass without the cap (rate and bucket unbounded) */
    bool bulk; /**< a bulk upload on a fourth stream of the same connection, urgency 7 */
    qk_time path_failed_ns; /**< qk_config.path_failed_ns (0 = default) */
    /** Research (key oracle): the sender's non-urgent data waits, in place of
     * its ACK-silence rule, while this link was suspended one one-way delay +
     * QK_SIMM_ORACLE_MARGIN_NS ago: the earliest any acknowledgement could
     * say so (both directions suspended). NULL = the sender's own rule. */
    const qk_sim_link_cfg *oracle_link;
    FILE *frames_csv; /**< per-frame rows "flow,frame,bytes,sent_s,recv_s", or NULL */
    const char *qlog_dir;
    qk_simq_send_fn on_send; /**< observer of every datagram (tests), or NULL */
    void *send_ctx;          /**< for on_send */
} qk_simm_cfg;

/** One media flow's results. */
typedef struct qk_simm_flow_result {
    const char *name;
    uint64_t frames_sent, frames_received;
    uint64_t bytes_sent, bytes_received;
    double avg_ms, p99_ms, max_ms; /**< delay send -> fully received */
} qk_simm_flow_result;

/** Results so far. */
typedef struct qk_simm_result {
    qk_simm_flow_result f[QK_SIMM_FLOWS];
    uint64_t bulk_bytes_sent, bulk_bytes_received; /**< the bulk neighbour (cfg.bulk) */
    uint64_t path_degraded, path_failed;           /**< events at the sender */
    qk_time path_failed_ns;                        /**< when (absolute), QK_TIME_INFINITE = never */
    qk_conn_stats client_stats;                    /**< the sender's connection */
    bool client_closed;
    char close_reason[256]; /**< the sender's QK_EV_CLOSED reason */
    bool mismatch;          /**< a frame header was malformed */
} qk_simm_result;

/** Create the flow (client = sender on client_host). NULL with *err on failure.
 * Delete it after the simulator, like qk_simq. */
qk_simm *qk_simm_new(qk_sim *sim, int client_host, int server_host, uint16_t port,
                     const qk_simm_cfg *cfg, int *err);
void qk_simm_del(qk_simm *m);
/** Current results (delay statistics computed on each call). */
const qk_simm_result *qk_simm_result_get(qk_simm *m);
/** The oracle's hold (qk_simm_cfg.oracle_link l): was l suspended one
 * one-way delay + QK_SIMM_ORACLE_MARGIN_NS before now? When it was, *until
 * says when the hold ends (else QK_TIME_INFINITE). Never fails. */
bool qk_simm_oracle_held(const qk_sim_link_cfg *l, qk_time now, qk_time *until);
/** The underlying QUIC flow. */
qk_simq *qk_simm_quic(qk_simm *m);

/** Scenario factory of type "media" (keys: cc, start, duration, flows, bypass, bulk,
 * path_failed, oracle, frames, qlog). */
int qk_sim_media_factory(qk_sim *sim, const qk_sim_flow_args *args, void **flow,
                         const qk_sim_flow_ops **ops);

#endif
