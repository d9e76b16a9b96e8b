/* SPDX-License-Identifier: MIT */
/* ACK-frequency extension, sender side (draft-ietf-quic-ack-frequency-12):
 * decides what to ask the peer — ack-eliciting threshold, max ack delay and
 * reordering threshold — and when to (re)send ACK_FREQUENCY. Pure policy:
 * the connection feeds it congestion state and writes the frame it returns. */
#ifndef QK_TRANSPORT_ACKFREQ_H
#define QK_TRANSPORT_ACKFREQ_H

#include <quack/quack.h>
#include <stdbool.h>

/** AUTO: default upper bound on the ack-eliciting threshold (ackfreq.c). */
#define QK_ACKFREQ_DEFAULT_MAX_THRESHOLD 16u

/* qk_ackfreq_mode (off / fixed / auto / auto-threshold) is public: quack.h. */

/** AUTO's state after a congestion event (ackfreq.c, qk_ackfreq_on_congestion). */
enum {
    QK_ACKFREQ_REFILL_NONE = 0,  /**< ACK points every T packets */
    QK_ACKFREQ_REFILL_DRAIN = 1, /**< the reduction followed a standing queue; it drains */
    QK_ACKFREQ_REFILL_ON = 2,    /**< drained: threshold 1 until a queue forms */
};

typedef struct qk_ackfreq_config {
    qk_ackfreq_mode mode;
    uint64_t threshold;            /**< FIXED: ack-eliciting threshold */
    qk_time max_delay_ns;          /**< FIXED: requested max ack delay */
    uint64_t reordering_threshold; /**< FIXED: 0 = use the loss packet threshold */
    uint64_t max_threshold;        /**< AUTO: upper bound on the threshold (0 = 16) */
    bool paced; /**< AUTO: never burst-end ACK points (an ECN-scalable sender, see auto_request) */
} qk_ackfreq_config;

/** What one ACK_FREQUENCY frame asks. */
typedef struct qk_ackfreq_req {
    uint64_t seq;
    uint64_t threshold;
    qk_time max_delay_ns;
    uint64_t reordering_threshold;
} qk_ackfreq_req;

typedef struct qk_ackfreq {
    qk_ackfreq_config cfg;
    bool peer_supports; /**< the peer advertised min_ack_delay */
    qk_time peer_min_delay_ns;
    uint64_t next_seq;
    bool have_want;
    qk_ackfreq_req want; /**< what we would ask now */
    bool have_sent;
    qk_ackfreq_req sent; /**< the newest request put on the wire */
    bool pending;        /**< a frame should be sent */
    qk_time last_sent_ns;
    qk_time max_inflight_delay_ns; /**< largest delay requested and not yet acked (§7) */
    qk_time acked_delay_ns;        /**< delay of the newest acknowledged request */
    uint64_t frames_sent;

    /* IMMEDIATE_ACK (ack-frequency-12 §5, §8). */
    bool imm_requested; /**< another module asked for one (PMTU probe, migration) */
    bool idle;          /**< the last data packet carried IMMEDIATE_ACK going idle */
    bool has_imm;
    qk_time last_imm_ns;      /**< last IMMEDIATE_ACK sent for a rate-limited reason */
    uint64_t pkts_since_full; /**< data packets sent since the last QK_IMM_CWND_FULL */
    uint64_t mark_every;      /**< AUTO: least data packets between QK_IMM_CWND_FULL */
    qk_time min_rtt_ns;       /**< the path's min RTT (0 = unknown) */
    bool burst_mode;          /**< AUTO, no standing queue: ACK points at burst ends */
    uint64_t cong_events;     /**< the congestion controller's event count last seen */
    int refill; /**< AUTO after a reduction that a full queue caused: QK_ACKFREQ_REFILL_* */
    qk_time last_ack_rx_ns; /**< last ACK frame received in the application space */
} qk_ackfreq;

/** Why an IMMEDIATE_ACK goes into a packet (bit set). */
enum {
    QK_IMM_PROBE = 1 << 0,      /**< PTO probe (instead of a PING), ack-frequency-12 §5 */
    QK_IMM_IDLE_ENTER = 1 << 1, /**< last data packet before application-limited, §8.1 */
    QK_IMM_IDLE_EXIT = 1 << 2,  /**< first data packet after that */
    QK_IMM_NO_ACK = 1 << 3,     /**< no ACK for more than an RTT with packets outstanding, §8 */
    QK_IMM_REQUESTED = 1 << 4,  /**< qk_ackfreq_request_immediate (PMTU probe, migration) */
    QK_IMM_CWND_FULL = 1 << 5,  /**< last packet of a burst (cwnd full, or pacer empty), §8.1 */
};

/** What the sender knows when deciding on IMMEDIATE_ACK for one 1-RTT packet. */
typedef struct qk_ackfreq_pkt {
    bool probe;          /**< the packet is a PTO probe */
    bool data;           /**< it carries STREAM or DATAGRAM data */
    bool more_data;      /**< data remains to be sent after it (not application-limited) */
    bool ae_in_flight;   /**< ack-eliciting packets are outstanding */
    bool cwnd_full;      /**< after it the congestion window has no room for another */
    uint64_t burst_left; /**< full-size packets cwnd and pacer let go at once after it */
    qk_time srtt_ns;
    qk_time now;
} qk_ackfreq_pkt;

/** Initialise. Never fails. */
void qk_ackfreq_init(qk_ackfreq *a, const qk_ackfreq_config *cfg);

/**
 * The peer's transport parameters: supports = min_ack_delay present.
 * ack-frequency-12 §3: nothing is ever sent to a peer that did not advertise it.
 */
void qk_ackfreq_set_peer(qk_ackfreq *a, bool supports, qk_time min_ack_delay_ns);

/**
 * Recompute the desired request from congestion state. Marks a frame pending
 * when the request changed by at least 20% and no frame was sent in the last
 * smoothed RTT (or on the first call).
 */
void qk_ackfreq_update(qk_ackfreq *a, uint64_t cwnd_bytes, uint64_t mds_bytes, qk_time srtt_ns,
                       bool slow_start, uint64_t packet_threshold, qk_time now);

/** True and *out filled (with a new sequence number) when a frame should be sent now. */
bool qk_ackfreq_poll(qk_ackfreq *a, qk_ackfreq_req *out);

/** The frame was put in a packet. */
void qk_ackfreq_on_sent(qk_ackfreq *a, const qk_ackfreq_req *req, qk_time now);

/** The packet carrying request seq was lost: re-send unless superseded. */
void qk_ackfreq_on_lost(qk_ackfreq *a, uint64_t seq);

/** The packet carrying request seq was acknowledged. */
void qk_ackfreq_on_acked(qk_ackfreq *a, uint64_t seq);

/**
 * Whether IMMEDIATE_ACK may be sent at all: the peer advertised min_ack_delay
 * (ack-frequency-12 §3). 0-RTT never carries it (quack sends no 0-RTT).
 */
bool qk_ackfreq_immediate_allowed(const qk_ackfreq *a);

/** Ask for IMMEDIATE_ACK in the next 1-RTT packet (PMTU probe, first packet
 *  after migration; ack-frequency-12 §8). Ignored when not allowed. */
void qk_ackfreq_request_immediate(qk_ackfreq *a);

/**
 * Decide whether this packet carries IMMEDIATE_ACK. Returns a QK_IMM_* bit set
 * (0 = no). PROBE and REQUESTED whenever allowed; the others only once an
 * ACK_FREQUENCY frame changed the peer's behaviour, and NO_ACK / IDLE_ENTER
 * at most once per smoothed RTT. Call qk_ackfreq_on_immediate_sent() when the
 * frame was written.
 */
uint32_t qk_ackfreq_want_immediate(const qk_ackfreq *a, const qk_ackfreq_pkt *pk);

/** A 1-RTT data packet went out with IMMEDIATE_ACK reasons `why` (0 = none):
 * counts packets between QK_IMM_CWND_FULL requests. Never fails. */
void qk_ackfreq_on_data_sent(qk_ackfreq *a, uint32_t why);

/** The IMMEDIATE_ACK chosen for why was written into a packet. */
void qk_ackfreq_on_immediate_sent(qk_ackfreq *a, uint32_t why, qk_time now);

/** An ACK frame arrived in the application space. */
void qk_ackfreq_on_ack_received(qk_ackfreq *a, qk_time now);

/**
 * The peer max ack delay to use for PTO (§7): the largest of the transport
 * parameter value and every requested delay that may be in effect.
 */
qk_time qk_ackfreq_pto_delay(const qk_ackfreq *a, qk_time tp_max_ack_delay_ns);

/**
 * Extra bytes in flight the sender may allow beyond cwnd because the peer
 * holds packets back under the threshold T we asked: (T - 1) / 2 datagrams,
 * at most cwnd / 8; 0 before any request or with T <= 1. Never fails.
 */
uint64_t qk_ackfreq_cwnd_allowance(const qk_ackfreq *a, uint64_t cwnd_bytes, uint64_t mds_bytes);

/**
 * The pacer burst (datagrams) that matches the ACK grouping we asked for:
 * twice the peer's threshold while AUTO places ACK points (no
 * standing queue, threshold > 1), else 0 (the caller keeps the pacer's
 * default burst when that is larger). Never fails.
 */
uint64_t qk_ackfreq_pacer_burst_pkts(const qk_ackfreq *a);

/**
 * The path's minimum RTT (RFC 9002 §5.2), used by AUTO to tell a path with a
 * standing queue (srtt more than 1/8 above it) from one without. 0 =
 * unknown (treated as no queue). Never fails.
 */
void qk_ackfreq_set_min_rtt(qk_ackfreq *a, qk_time min_rtt_ns);

/**
 * The congestion controller's count of congestion events (window
 * reductions) and the smoothed RTT now; call before qk_ackfreq_update. A
 * new event while the path held a standing queue (srtt more than 1/8 above
 * min_rtt: the flow filled the bottleneck's buffer) means the reduced
 * window is about one pipe and the queue will drain; once it has (srtt
 * within 1/16 of min_rtt), AUTO asks for RFC 9000's cadence (threshold 1)
 * until a queue of more than 1/16 of min_rtt forms again. Never fails.
 */
void qk_ackfreq_on_congestion(qk_ackfreq *a, uint64_t congestion_events, qk_time srtt_ns);

#endif
