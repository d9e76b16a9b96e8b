/* SPDX-License-Identifier: MIT */
/* Sender-side loss recovery, RFC 9002 §6 and Appendix A: sent-packet
 * records per packet number space (ring indexed by pn + companion frame
 * ring, no per-packet malloc), ACK processing, RTT samples, packet- and
 * time-threshold loss detection, PTO with backoff, persistent congestion,
 * ECN validation, spurious-loss detection, space discard.
 *
 * What a packet carried is kept as compact qk_sent_frame descriptors so the
 * connection can REBUILD lost data (frames are rebuilt, not replayed). Acked and lost
 * packets are handed back through a sink set at init; the sink must not call
 * back into the recovery object. */
#ifndef QK_TRANSPORT_RECOVERY_H
#define QK_TRANSPORT_RECOVERY_H

#include <quack/common.h>
#include <stdbool.h>

#include "base/rangeset.h"
#include "transport/recovery/ack.h"
#include "transport/recovery/cc/cc.h"
#include "transport/recovery/rtt.h"

/** RFC 9002 §6.1.1 kPacketThreshold. */
#define QK_RECOVERY_PACKET_THRESHOLD 3
/** Cap on the packet reordering threshold learnt from spurious losses. */
#define QK_RECOVERY_MAX_PACKET_THRESHOLD 64
/** RFC 9002 §7.6.1 kPersistentCongestionThreshold. */
#define QK_RECOVERY_PC_THRESHOLD 3
/** RFC 9000 §13.4.2: ECT-marked packets sent before validation completes;
 * if all of them are lost, the path is taken to drop ECT packets. */
#define QK_ECN_TESTING_PKTS 10
/** Most frames one packet may record. */
#define QK_RECOVERY_MAX_FRAMES_PER_PKT 128

/** What a frame in a sent packet was, so its content can be rebuilt. */
typedef enum qk_sent_frame_kind {
    QK_SF_STREAM = 0,          /**< id = stream, offset, length, fin */
    QK_SF_CRYPTO,              /**< id = encryption level, offset, length */
    QK_SF_ACK,                 /**< extra = Largest Acknowledged (for ack-of-ack) */
    QK_SF_RESET_STREAM,        /**< id = stream */
    QK_SF_STOP_SENDING,        /**< id = stream */
    QK_SF_MAX_DATA,            /**< extra = value sent */
    QK_SF_MAX_STREAM_DATA,     /**< id = stream, extra = value */
    QK_SF_MAX_STREAMS_BIDI,    /**< extra = value */
    QK_SF_MAX_STREAMS_UNI,     /**< extra = value */
    QK_SF_DATA_BLOCKED,        /**< extra = limit */
    QK_SF_STREAM_DATA_BLOCKED, /**< id = stream, extra = limit */
    QK_SF_STREAMS_BLOCKED_BIDI,
    QK_SF_STREAMS_BLOCKED_UNI,
    QK_SF_NEW_CONNECTION_ID,    /**< id = sequence number */
    QK_SF_RETIRE_CONNECTION_ID, /**< id = sequence number */
    QK_SF_NEW_TOKEN,
    QK_SF_PATH_CHALLENGE, /**< extra = challenge data */
    QK_SF_PATH_RESPONSE,  /**< extra = response data (not retransmitted) */
    QK_SF_HANDSHAKE_DONE,
    QK_SF_PING,
    QK_SF_DATAGRAM,      /**< id = datagram id, length */
    QK_SF_ACK_FREQUENCY, /**< id = sequence number */
    QK_SF_IMMEDIATE_ACK,
    QK_SF_CONNECTION_CLOSE,
    QK_SF_OTHER,
} qk_sent_frame_kind;

/** One frame of a sent packet (32 bytes). */
typedef struct qk_sent_frame {
    uint64_t id;     /**< stream id, crypto level, sequence number... per kind */
    uint64_t offset; /**< STREAM/CRYPTO offset */
    uint64_t extra;  /**< kind-specific value */
    uint32_t length; /**< STREAM/CRYPTO/DATAGRAM length in bytes */
    uint8_t kind;    /**< qk_sent_frame_kind */
    uint8_t fin;     /**< STREAM FIN bit */
} qk_sent_frame;

/** A sent packet. The caller fills the first block; recovery the rest. */
typedef struct qk_sent_packet {
    uint64_t pn;
    qk_time time_sent;
    uint32_t size_bytes;
    bool ack_eliciting;
    bool in_flight;     /**< counts toward bytes_in_flight / congestion control */
    bool is_pmtu_probe; /**< its loss is not congestion (RFC 9000 §14.4) */
    bool app_limited;   /**< sender was application-limited when it was sent */
    uint8_t ecn;        /**< QK_ECN_* codepoint it was sent with */
    /* internal */
    uint8_t state;
    bool rs_app_limited; /**< draft-ietf-ccwg-bbr P.is_app_limited (C.app_limited != 0) */
    uint16_t n_frames;
    uint32_t rs_tx_in_flight_bytes; /**< P.tx_in_flight: bytes in flight after sending it */
    uint64_t frame_pos;
    /* Delivery-rate snapshot at send time (draft-ietf-ccwg-bbr §4.1.2.2). */
    uint64_t rs_delivered_bytes; /**< P.delivered */
    uint64_t rs_lost_bytes;      /**< P.lost */
    qk_time rs_delivered_time;   /**< P.delivered_time */
    qk_time rs_first_sent_time;  /**< P.first_send_time */
} qk_sent_packet;

/** Connection delivery state for rate samples (draft-ietf-ccwg-bbr
 * §4.1.2.1, the C.* variables). */
typedef struct qk_delivery_state {
    uint64_t delivered_bytes;   /**< C.delivered: in-flight bytes acknowledged */
    qk_time delivered_time;     /**< C.delivered_time */
    qk_time first_sent_time;    /**< C.first_send_time */
    uint64_t app_limited_until; /**< C.app_limited: 0, or delivered mark ending it */
    uint64_t lost_bytes;        /**< C.lost: in-flight bytes declared lost */
} qk_delivery_state;

/** One ACK range as the wire decoder yields them: inclusive, descending. */
typedef struct qk_ack_range {
    uint64_t smallest;
    uint64_t largest;
} qk_ack_range;

/** A received ACK / ACK_ECN frame, decoded. */
typedef struct qk_ack_received {
    const qk_ack_range *ranges; /**< descending, disjoint; ranges[0].largest = Largest Ack. */
    size_t n_ranges;            /**< >= 1 */
    qk_time ack_delay_ns;       /**< decoded ACK Delay (already << exponent, in ns) */
    bool has_ecn;               /**< frame type 0x03 */
    uint64_t ect0, ect1, ce;
} qk_ack_received;

/** Where acked / lost packets go. Called synchronously; must not re-enter. */
typedef struct qk_recovery_sink {
    void *ctx;
    /** A packet was newly acknowledged. frames[] valid only during the call. */
    void (*on_acked)(void *ctx, qk_pn_space space, const qk_sent_packet *pkt,
                     const qk_sent_frame *frames, size_t n_frames);
    /** A packet was declared lost: rebuild what frames[] describe. */
    void (*on_lost)(void *ctx, qk_pn_space space, const qk_sent_packet *pkt,
                    const qk_sent_frame *frames, size_t n_frames);
} qk_recovery_sink;

typedef struct qk_recovery_config {
    uint64_t packet_threshold;   /**< 0 = 3 (RFC 9002 §6.1.1); ACK-frequency may raise it */
    uint32_t time_threshold_num; /**< 0 = 9/8 (RFC 9002 §6.1.2) */
    uint32_t time_threshold_den;
    qk_time max_ack_delay_ns;   /**< the PEER's max_ack_delay; 0 = 25 ms */
    size_t max_tracked_packets; /**< bound per space; 0 = 1<<18 */
    size_t max_tracked_frames;  /**< bound per space; 0 = 1<<20 */
    bool is_server;
} qk_recovery_config;

/** ECN validation state (RFC 9000 §13.4.2). */
typedef enum qk_ecn_state {
    QK_ECN_STATE_TESTING = 0,
    QK_ECN_STATE_CAPABLE = 1,
    QK_ECN_STATE_FAILED = 2,
} qk_ecn_state;

typedef struct qk_recovery_stats {
    uint64_t packets_sent;
    uint64_t packets_acked;
    uint64_t packets_lost;
    uint64_t bytes_sent;
    uint64_t bytes_lost;
    uint64_t spurious_losses; /**< packets declared lost and acked later */
    uint64_t pto_count_total; /**< PTO expirations */
    uint64_t persistent_congestion;
    uint64_t ecn_ce_events; /**< ACKs that raised the CE count */
    uint64_t undos;         /**< congestion responses undone: all their losses were spurious */
} qk_recovery_stats;

/** Per packet number space state. */
typedef struct qk_recovery_space {
    qk_sent_packet *pkts; /**< ring, slot = pn % pkt_cap (pkt_cap a power of 2) */
    size_t pkt_cap;
    uint64_t base_pn;      /**< lowest pn that may still be tracked */
    uint64_t next_pn;      /**< one past the largest pn sent */
    qk_sent_frame *frames; /**< companion ring, position % frame_cap */
    size_t frame_cap;
    uint64_t frame_head; /**< next write position */
    uint64_t frame_tail; /**< oldest live position */
    bool has_largest_acked;
    uint64_t largest_acked;
    qk_time time_of_last_ack_eliciting;
    qk_time loss_time; /**< 0 = none */
    uint64_t ack_eliciting_in_flight;
    uint64_t bytes_in_flight;
    qk_rangeset lost;                    /**< pns declared lost (spurious-loss detection) */
    qk_rangeset skipped;                 /**< pns never sent (an ACK of one is an error) */
    uint64_t ecn_ect0, ecn_ect1, ecn_ce; /**< largest counts seen from the peer */
    bool discarded;
} qk_recovery_space;

typedef enum qk_recovery_timeout_kind {
    QK_RECOVERY_TIMEOUT_NONE = 0,  /**< timer not due */
    QK_RECOVERY_TIMEOUT_LOSS = 1,  /**< time-threshold losses were delivered to the sink */
    QK_RECOVERY_TIMEOUT_PROBE = 2, /**< send probe_pkts ack-eliciting packets in space */
} qk_recovery_timeout_kind;

typedef struct qk_recovery_timeout {
    qk_recovery_timeout_kind kind;
    qk_pn_space space;
    unsigned probe_pkts;
} qk_recovery_timeout;

typedef struct qk_recovery {
    qk_recovery_config cfg;
    qk_rtt *rtt;
    qk_cc *cc;
    qk_recovery_sink sink;
    qk_recovery_space sp[QK_PN_SPACE_COUNT];
    uint64_t bytes_in_flight;
    uint32_t pto_count;
    bool handshake_confirmed;
    bool peer_address_validated; /**< PeerCompletedAddressValidation() */
    bool amplification_blocked;  /**< server at the anti-amplification limit */
    bool have_handshake_keys;
    qk_ecn_state ecn_state;
    uint64_t ecn_testing_lost; /**< ECT packets lost while testing (RFC 9000 §13.4.2) */
    uint64_t ecn_testing_sent; /**< ECT packets sent while testing (on this path) */
    qk_time timer;             /**< loss detection timer, QK_TIME_INFINITE = off */
    /* Largest bytes in flight over the current and the previous period of
     * one smoothed RTT (RFC 9002 §7.8 "is the window the limit?"). */
    uint64_t flight_max_cur, flight_max_prev;
    qk_time flight_period_start;
    /* Spurious-loss undo (RFC 9002 §6.1 allows adapting thresholds; RFC 9438
     * §4.9): the losses behind the current congestion response, still not
     * known to be spurious. When all of them are acked late, the response is
     * undone. */
    bool undo_armed;
    uint64_t undo_lost_pkts;
    uint64_t undo_first_pn; /**< smallest pn lost in this episode (its space) */
    qk_pn_space undo_space;
    uint64_t reorder_threshold;  /**< learnt packet threshold (0 = none yet) */
    uint32_t time_threshold_num; /**< time threshold numerator (over cfg.time_threshold_den) */
    /* RACK-style reordering window (RFC 8985 §6.2): once reordering is seen
     * the packet threshold no longer declares losses; a packet is lost
     * reo_wnd after max(srtt, latest_rtt) from its send time, reo_wnd =
     * min(reo_wnd_mult x min_rtt / 4, srtt), grown by one step per round
     * trip with spurious losses, back to one step after 16 congestion
     * responses without any. */
    bool reordering_seen;
    uint32_t reo_wnd_mult;
    uint32_t reo_wnd_persist;
    qk_time reo_grow_round_end; /**< no second step before this time */
    qk_delivery_state dlv;      /**< delivery-rate sampler (draft-ietf-ccwg-bbr §4.1) */
    qk_rate_sample last_rs;     /**< the rate sample of the latest ACK */
    /* Largest delivery rate of the last one to two QK_RECOVERY_BW_WINDOW_NS
     * (qk_recovery_max_delivery_rate): this window's and the last one's. */
    uint64_t bw_max_cur, bw_max_prev; /* bytes per second */
    qk_time bw_window_start;
    qk_sent_frame scratch[QK_RECOVERY_MAX_FRAMES_PER_PKT];
    qk_recovery_stats stats;
} qk_recovery;

/**
 * Initialise. rtt and cc are borrowed (cc may be NULL in tests; NULL ops
 * entries are skipped); sink may be NULL. cfg NULL = defaults.
 * A server starts with peer_address_validated = true (RFC 9002 §A.6).
 * Returns 0 or QK_ERR_INVALID_ARG (rtt NULL, bad thresholds).
 */
/**
 * Start ECN validation over (RFC 9000 §13.4.2: validation is per path; a new
 * path may bleach or drop ECT packets the old one carried). Never fails.
 */
static inline void qk_recovery_ecn_restart(qk_recovery *r)
{
    r->ecn_state = QK_ECN_STATE_TESTING;
    r->ecn_testing_lost = 0;
    r->ecn_testing_sent = 0;
}

int qk_recovery_init(qk_recovery *r, const qk_recovery_config *cfg, qk_rtt *rtt, qk_cc *cc,
                     const qk_recovery_sink *sink);

/** Release memory. Never fails. */
void qk_recovery_free(qk_recovery *r);

/**
 * Record a sent packet carrying frames[0..n) (copied). pns must increase per
 * space; pns skipped in between are remembered as never sent.
 * Returns 0, QK_ERR_INVALID_ARG (space, pn not increasing, too many frames),
 * QK_ERR_STATE (space discarded), QK_ERR_LIMIT (tracking bound reached: stop
 * sending in this space), QK_ERR_NOMEM.
 */
int qk_recovery_on_packet_sent(qk_recovery *r, qk_pn_space space, const qk_sent_packet *pkt,
                               const qk_sent_frame *frames, size_t n, qk_time now);

/**
 * Process an ACK frame received at now (RFC 9002 §A.7). Newly acked and lost
 * packets go to the sink; RTT, cc and the loss timer are updated.
 * Returns the number of newly acknowledged packets (>= 0),
 * QK_ERR_PROTOCOL_VIOLATION (acks a pn never sent, RFC 9000 §13.1),
 * QK_ERR_FRAME_ENCODING (ranges not descending/disjoint), QK_ERR_INVALID_ARG,
 * QK_ERR_STATE (space discarded: the caller ignores the frame).
 */
int qk_recovery_on_ack_received(qk_recovery *r, qk_pn_space space, const qk_ack_received *ack,
                                qk_time now);

/** Loss-detection timer deadline (RFC 9002 §6.2 / §A.8); QK_TIME_INFINITE when off. */
qk_time qk_recovery_next_timeout(const qk_recovery *r);

/**
 * Timer fired (RFC 9002 §A.9). Fills out: LOSS (losses delivered to the
 * sink), PROBE (send out->probe_pkts ack-eliciting packets in out->space),
 * or NONE when now is before the deadline. Returns 0 or QK_ERR_INVALID_ARG.
 */
int qk_recovery_on_timeout(qk_recovery *r, qk_time now, qk_recovery_timeout *out);

/**
 * Drop a space's keys (RFC 9002 §6.4): its in-flight bytes leave
 * bytes_in_flight without being called lost; pto_count resets.
 * Returns 0 or QK_ERR_INVALID_ARG.
 */
int qk_recovery_discard_space(qk_recovery *r, qk_pn_space space, qk_time now);
/** Every packet of a space still tracked leaves flight and its frames go to
 * the sink's on_lost, without a congestion response (rejected 0-RTT, RFC
 * 9001 §4.6.2). Returns 0 or QK_ERR_INVALID_ARG. */
int qk_recovery_lose_all(qk_recovery *r, qk_pn_space space, qk_time now);

/** The handshake is confirmed (RFC 9001 §4.1.2): App PTO allowed, ack delay capped. */
void qk_recovery_set_handshake_confirmed(qk_recovery *r, qk_time now);
/** Client: the server validated our address (handshake ack received). */
void qk_recovery_set_peer_address_validated(qk_recovery *r, qk_time now);
/** Server: blocked (or unblocked) by the 3x anti-amplification limit (RFC 9000 §8.1). */
void qk_recovery_set_amplification_blocked(qk_recovery *r, bool blocked, qk_time now);
/** Client: handshake keys are available (anti-deadlock probes go to Handshake). */
void qk_recovery_set_have_handshake_keys(qk_recovery *r, bool have, qk_time now);
/** The peer's max_ack_delay changed (transport parameter or ACK_FREQUENCY ack). */
void qk_recovery_set_max_ack_delay(qk_recovery *r, qk_time max_ack_delay_ns, qk_time now);
/** Change the packet reordering threshold (>= 1), e.g. for ACK-frequency. */
void qk_recovery_set_packet_threshold(qk_recovery *r, uint64_t pkts);

/** PTO duration with the current backoff for a space (RFC 9002 §6.2.1). */
qk_time qk_recovery_pto_ns(const qk_recovery *r, qk_pn_space space);

/** Bytes counted in flight across all spaces. */
static inline uint64_t qk_recovery_bytes_in_flight(const qk_recovery *r)
{
    return r->bytes_in_flight;
}

/**
 * The largest bytes in flight reached (after a send) during the last one to
 * two smoothed RTTs, including inflight_now. Used to decide whether the
 * sender is cwnd-limited (RFC 9002 §7.8). Never fails.
 */
uint64_t qk_recovery_recent_max_in_flight(qk_recovery *r, uint64_t inflight_now, qk_time now);

/**
 * The sender has nothing to send although the window and the pacer would
 * let it (draft-ietf-ccwg-bbr §4.1.2.4 CheckIfApplicationLimited /
 * MarkConnectionAppLimited): packets sent until what is in flight now has
 * been delivered carry is_app_limited. Never fails.
 */
void qk_recovery_mark_app_limited(qk_recovery *r);

/** The largest delivery rate sampled over the last 4-8 s, bytes per
 * second (0 = none yet): application-limited samples count only where they
 * exceed it (draft-ietf-ccwg-bbr §4.1.2.4, as BBR.max_bw), and a 4 s window
 * that took no sample (all application-limited below it) leaves the one
 * before in place instead of aging it out; a sample that comes more than
 * 8 s after the current window began starts afresh. Any controller's
 * estimate of what the path delivers, for the pipe limit of the CC bypass
 * (conn_send.c pipe_limit_bytes). */
uint64_t qk_recovery_max_delivery_rate(const qk_recovery *r);

/** Look up a tracked, unacknowledged packet; NULL when unknown/acked/lost. O(1). */
const qk_sent_packet *qk_recovery_find(const qk_recovery *r, qk_pn_space space, uint64_t pn);

#endif
