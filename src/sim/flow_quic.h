/* SPDX-License-Identifier: MIT */
/* The "quic" flow type: a client and a server qk_endpoint as simulator nodes
 * running a bulk transfer over one or more streams, byte-exact checked. Also
 * usable directly from tests (tests/sim/test_quic_*.c), which poke the
 * connections between qk_sim_run() calls. */
#ifndef QK_SIM_FLOW_QUIC_H
#define QK_SIM_FLOW_QUIC_H

#include <quack/quack.h>
#include <quack/sim.h>

typedef struct qk_simq qk_simq;

/** Observer of every event either endpoint produces (tests). May be NULL. */
typedef void (*qk_simq_event_fn)(void *ctx, qk_simq *q, bool server, const qk_event *ev,
                                 qk_time now);
/** Observer of every datagram either endpoint hands to the simulator (tests). May be NULL;
 * when set, datagrams are pulled one at a time so the hook can act between them. */
typedef void (*qk_simq_send_fn)(void *ctx, qk_simq *q, bool server, const qk_datagram *d,
                                qk_time now);
/** Adjust an endpoint's configuration before it is created (tests). May be NULL. */
typedef void (*qk_simq_tune_fn)(void *ctx, qk_config *cfg, bool server);

/** What the flow does. Zero = a 1 MiB download on one stream at time 0 with CUBIC. */
typedef struct qk_simq_cfg {
    bool upload;           /**< client -> server, else server -> client (request/response) */
    uint64_t size_bytes;   /**< total over all streams (split evenly); 0 with duration_ns */
    qk_time duration_ns;   /**< time-bound transfer: the sender writes until start + duration */
    qk_cc_kind cc;         /**< both endpoints' congestion controller */
    qk_time start_ns;      /**< the client connects at this time */
    uint32_t streams;      /**< concurrent streams (0 = 1) */
    bool keep_open;        /**< do not close the connection once the transfer completed */
    bool no_transfer;      /**< handshake only (tests drive the connection themselves) */
    uint64_t window_bytes; /**< stream flow-control window and send buffer (0 = defaults) */
    /* Flow-control tuning (0 = the qk_config default unless noted). */
    int autotune;                   /**< -1 off, 1 on, 0 default */
    int autotune_rule;              /**< qk_config.autotune_rule: 0 rtt2, 1 epoch */
    uint64_t max_window_bytes;      /**< stream window cap */
    uint64_t conn_window_bytes;     /**< initial connection window */
    uint64_t max_conn_window_bytes; /**< connection window cap */
    uint64_t budget_bytes;          /**< endpoint receive budget (recv_budget_bytes) */
    uint64_t send_buffer_bytes;     /**< sender's per-stream buffer (0: window / cap) */
    uint64_t read_rate_bps;         /**< receiver drains at most this rate (0 = at once) */
    size_t udp_payload_bytes;       /**< max_udp_payload_bytes (0 = 1200) */
    bool no_protection;             /**< null packet protection on both sides (benchmarks) */
    const char *qlog_dir;           /**< qlog directory for both endpoints, or NULL */
    /* ACK frequency for both endpoints (ack-frequency-12); unset = library defaults. */
    bool ackfreq_set;
    qk_ackfreq_mode ack_frequency; /**< QK_ACKFREQ_* */
    uint64_t ackfreq_threshold;    /**< fixed */
    qk_time ackfreq_delay_ns;      /**< fixed */
    uint64_t ackfreq_reorder;      /**< fixed (0 = loss packet threshold) */
    uint32_t pacing_gain_pct;      /**< qk_config.pacing_gain_ca_pct for both (0 = default) */
    uint32_t pacing_burst_pkts;    /**< qk_config.pacing_burst_pkts for both (0 = default) */
    bool min_ack_delay_set;
    qk_time min_ack_delay_ns; /**< advertised min_ack_delay, 0 = none */
    int ecn;                  /**< 1 on, -1 off, 0 default: on for dctcp and prague, else off */
    bool ecn_ack_bug;         /**< TEST ONLY: qk_endpoint_set_ecn_ack_bug on both */
    qk_simq_event_fn on_event;
    qk_simq_tune_fn tune;
    qk_simq_send_fn on_send;
    void *ctx; /**< for on_event, tune and on_send */
} qk_simq_cfg;

/** Results so far. */
typedef struct qk_simq_result {
    bool connected;             /**< the client saw QK_EV_CONNECTED */
    qk_time connected_ns;       /**< when (absolute) */
    qk_time first_1rtt_ns;      /**< first short-header datagram the client sent (absolute) */
    bool done;                  /**< every stream's FIN was read */
    qk_time completion_ns;      /**< when (absolute), QK_TIME_INFINITE until done */
    bool mismatch;              /**< a byte read differed from what was written */
    uint64_t written_bytes;     /**< application bytes the sender wrote */
    uint64_t read_bytes;        /**< application bytes the receiver read */
    uint64_t hash_written;      /**< sum over streams of a hash of each stream's bytes */
    uint64_t hash_read;         /**< the same over what was read */
    uint32_t streams_done;      /**< streams whose FIN was read */
    uint64_t stream_limit_hits; /**< qk_stream_open returned QK_ERR_STREAM_LIMIT */
    uint64_t streams_available; /**< QK_EV_STREAMS_AVAILABLE events at the client */
    uint64_t max_open_streams;  /**< most client streams open at once (opened, not finished) */
    bool client_closed, server_closed;         /**< QK_EV_CLOSED seen */
    qk_event client_close, server_close;       /**< the CLOSED events */
    qk_conn_stats client_stats, server_stats;  /**< last known (kept after close) */
    uint64_t client_tx_bytes, server_tx_bytes; /**< UDP payload bytes handed to the sim */
    uint64_t client_rx_bytes, server_rx_bytes; /**< UDP payload bytes received */
    size_t client_max_dgram_bytes, server_max_dgram_bytes; /**< largest datagram sent */
} qk_simq_result;

/**
 * Create the flow: a client node on client_host and a server node on
 * server_host, both at `port`. Returns the flow (owned by the caller: free
 * with qk_simq_del after qk_sim_del... or before, see below) or NULL with
 * *err = QK_ERR_NOMEM, QK_ERR_TLS (certificate), QK_ERR_CONFIG, or the
 * error of qk_sim_node_add. The nodes keep pointers into the flow, so delete
 * the flow only after the simulator (or never run the sim again).
 */
qk_simq *qk_simq_new(qk_sim *sim, int client_host, int server_host, uint16_t port,
                     const qk_simq_cfg *cfg, int *err);

/** Free the flow (endpoints and connections included). */
void qk_simq_del(qk_simq *q);

/** Current results (stats refreshed from live connections). */
const qk_simq_result *qk_simq_result_get(qk_simq *q);

/** The receiving endpoint's memory budget in use now (bytes of window growth held). */
uint64_t qk_simq_budget_used(qk_simq *q, uint64_t *peak_bytes);

/** The client's / server's connection (NULL before it exists or after it closed). */
qk_conn *qk_simq_client_conn(qk_simq *q);
qk_conn *qk_simq_server_conn(qk_simq *q);

/** The simulator node id of the client or the server (for qk_sim_node_rebind / _alias). */
int qk_simq_node(const qk_simq *q, bool server);

/** After poking a connection from outside (write, close, datagram): flush both endpoints'
 * datagrams into the simulator and re-read their timeouts. */
void qk_simq_kick(qk_simq *q);

/** What a bench reads of a simulated connection's loss recovery and
 * congestion controller (so tools need no transport headers). */
typedef struct qk_simq_cc_probe {
    uint64_t packets_sent, packets_lost, undos, spurious_losses;
    uint64_t congestion_events; /**< responses of the controller */
    uint64_t cwnd_bytes, ssthresh_bytes, max_datagram_bytes;
    bool cubic;          /**< the fields below are set (RFC 9438 state) */
    bool cubic_in_epoch; /**< a congestion-avoidance epoch is running */
    qk_time cubic_epoch_start;
    double cubic_w_max_bytes, cubic_k_s, cubic_w_est_bytes;
    bool bbr;     /**< the fields below are set (draft-ietf-ccwg-bbr state) */
    int bbr_mode; /**< 0 Startup, 1 Drain, 2-5 ProbeBW DOWN/CRUISE/REFILL/UP, 6 ProbeRTT */
    uint64_t bbr_round_count;
    uint64_t bbr_max_bw_bytes_per_s, bbr_bw_bytes_per_s;
    uint64_t bbr_bw_shortterm_bytes_per_s; /**< UINT64_MAX = unset (infinite) */
    uint64_t bbr_inflight_longterm_bytes;  /**< UINT64_MAX = unset (infinite) */
    uint64_t bbr_inflight_shortterm_bytes; /**< UINT64_MAX = unset (infinite) */
    uint64_t bbr_inflight_bytes, bbr_pacing_rate_bytes_per_s;
    qk_time bbr_min_rtt_ns;
} qk_simq_cc_probe;

/** Fill *out for the server's (server = true) or client's connection.
 * Returns false (out untouched) while that connection does not exist. */
bool qk_simq_cc_probe_get(qk_simq *q, bool server, qk_simq_cc_probe *out);

#endif
