/* SPDX-License-Identifier: MIT */
/* Receiver-side acknowledgement tracking, one qk_ack_tracker per packet
 * number space: which packet numbers arrived (bounded range set), duplicate
 * detection, ECN counts, and WHEN to acknowledge (RFC 9000 §13.2, with the
 * ACK-frequency extension's policy knobs, draft-ietf-quic-ack-frequency-12
 * §6). Sans-I/O: every call takes the caller's time. */
#ifndef QK_TRANSPORT_ACK_H
#define QK_TRANSPORT_ACK_H

#include <quack/common.h>
#include <stdbool.h>

#include "base/rangeset.h"

#ifndef QK_PN_SPACE_DEFINED
#define QK_PN_SPACE_DEFINED
/** Packet number spaces, RFC 9000 §12.3. */
typedef enum qk_pn_space {
    QK_PN_SPACE_INITIAL = 0,
    QK_PN_SPACE_HANDSHAKE = 1,
    QK_PN_SPACE_APP = 2,
    QK_PN_SPACE_COUNT = 3,
} qk_pn_space;
#endif

/** RFC 9000 §18.2 default max_ack_delay (25 ms). */
#define QK_ACK_DEFAULT_MAX_DELAY_NS (25 * QK_NS_PER_MS)
/** Most ranges one ACK frame reports (the newest; RFC 9000 §13.2.3). */
#define QK_ACK_MAX_FRAME_RANGES 32
/** Default bound on the number of received ranges remembered per space. */
#define QK_ACK_DEFAULT_MAX_RANGES 256

/**
 * When to acknowledge. The defaults are RFC 9000's; an ACK_FREQUENCY frame
 * (ack-frequency-12 §4) replaces them.
 */
typedef struct qk_ack_policy {
    /** ACK when MORE than this many ack-eliciting packets are unacknowledged;
     *  RFC 9000 §13.2.2 default 1 (every 2nd), 0 = every packet. */
    uint64_t ack_eliciting_threshold;
    /** Our max_ack_delay: the longest an ack-eliciting packet waits. */
    qk_time max_ack_delay_ns;
    /** 1 = RFC 9000 §13.2.1 (ack every reordering at once), 0 = ignore
     *  reordering, N > 1 = ack-frequency-12 §6.2 window. */
    uint64_t reordering_threshold;
    /** ACK at once when CE newly appears (RFC 9000 §13.2.1,
     *  ack-frequency-12 §6.3). */
    bool ce_immediate;
    /** TEST ONLY, never set in production: reproduce the Linux DCTCP receiver
     *  bug of shared/seeds/003. On a CE state change while a delayed ACK is
     *  pending, an ACK for the packets before the new one leaves at once and
     *  the new packet's own ACK obligation is forgotten (the delayed-ACK
     *  timer was cancelled), so a sender at its minimum window waits for a
     *  later packet's delayed ACK or its PTO. */
    bool ecn_ack_bug;
} qk_ack_policy;

/** Why the pending ACK must go out now (bit set, for traces/tests). */
enum {
    QK_ACK_WHY_THRESHOLD = 1 << 0, /**< ack-eliciting threshold exceeded */
    QK_ACK_WHY_REORDER = 1 << 1,   /**< out-of-order arrival per policy */
    QK_ACK_WHY_CE = 1 << 2,        /**< CE newly observed */
    QK_ACK_WHY_HANDSHAKE = 1 << 3, /**< Initial/Handshake space: always at once */
    QK_ACK_WHY_FRAME = 1 << 4,     /**< IMMEDIATE_ACK frame received */
    QK_ACK_WHY_IDLE = 1 << 5,      /**< first packet after no ACK for > idle_ack_ns */
};

/** What an ACK (0x02) or ACK_ECN (0x03) frame should say; filled by qk_ack_build(). */
typedef struct qk_ack_frame_info {
    uint64_t largest;       /**< Largest Acknowledged */
    uint64_t ack_delay;     /**< ACK Delay field: microseconds >> exponent */
    qk_time ack_delay_ns;   /**< the same delay, unencoded */
    const qk_range *ranges; /**< received pns, ASCENDING half-open [start,end);
                             *   view into the tracker, valid until the next call;
                             *   the newest QK_ACK_MAX_FRAME_RANGES at most */
    size_t n_ranges;        /**< >= 1; an encoder emits from the top and may truncate */
    bool ecn;               /**< send ACK_ECN (0x03) with the counts below */
    uint64_t ect0, ect1, ce;
} qk_ack_frame_info;

typedef struct qk_ack_stats {
    uint64_t acks_sent;      /**< every ACK frame reported through qk_ack_on_ack_sent */
    uint64_t immediate_acks; /**< sent while an immediate condition held */
    uint64_t delayed_acks;   /**< sent because max_ack_delay expired */
    uint64_t duplicates;     /**< duplicate packets reported */
    uint64_t ranges_dropped; /**< oldest ranges forgotten because the set was full */
    uint64_t packets_received;
} qk_ack_stats;

/** What is owed to the peer since the last ACK. */
typedef struct qk_ack_pending {
    uint64_t ae_pkts;   /**< ack-eliciting packets not yet acknowledged */
    qk_time first_time; /**< receive time of the first of them */
    bool any_new;       /**< any packet arrived */
    uint32_t why;       /**< QK_ACK_WHY_* bits demanding an immediate ACK */
    qk_time why_time;   /**< when the first of those conditions arose */
} qk_ack_pending;

#define QK_ACK_MAX_GAPS 8 /* never-received pn ranges kept below floor_pn */

typedef struct qk_ack_tracker {
    qk_pn_space space;
    qk_ack_policy policy;
    qk_rangeset received; /**< pns received and still reported */
    uint64_t floor_pn;    /**< pn < floor_pn is treated as already received, */
    /** except in these gaps: pns below floor_pn never received when an ACK
     * of ours was acknowledged (qk_ack_on_ack_frame_acked), newest last. */
    qk_range gaps[QK_ACK_MAX_GAPS];
    size_t n_gaps;
    bool has_largest;
    uint64_t largest_pn;       /**< largest pn received (any packet) */
    qk_time largest_recv_time; /**< when largest_pn arrived (for ACK Delay) */
    bool has_largest_ae;
    uint64_t largest_ae_pn; /**< "Largest Unacked" (ack-frequency-12 §6.2) */
    bool has_largest_acked;
    uint64_t largest_acked; /**< "Largest Acked": Largest Ack. of the last ACK sent */
    bool last_was_ce;       /**< previous packet carried CE */
    uint64_t ecn_ect0, ecn_ect1, ecn_ce;

    /* Obligation since the last ACK sent (cur). Arrivals after qk_ack_build()
     * but before qk_ack_on_ack_sent() go to post: the built ACK does not
     * cover them, so they survive the reset (shared/seeds/003). */
    qk_ack_pending cur;
    qk_ack_pending post;
    bool built;
    uint64_t built_largest;

    /* policy.ecn_ack_bug only: the next ACK covers pns below bug_pn and the
     * counts before it (the "ACK of the prior CE state"). */
    bool bug_armed;
    uint64_t bug_pn;
    uint64_t bug_ect0, bug_ect1, bug_ce;
    qk_range bug_ranges[QK_ACK_MAX_FRAME_RANGES];

    /* Long-idle rule (ack-frequency-12 §6): after no ACK was sent for more
     * than idle_ack_ns (the smoothed RTT; 0 = rule off) the next
     * ack-eliciting packet is acknowledged at once. */
    qk_time idle_ack_ns;
    bool has_sent_ack;
    qk_time last_ack_sent_ns;

    qk_ack_stats stats;
} qk_ack_tracker;

/** RFC 9000 defaults: threshold 1, 25 ms, reordering 1, CE immediate. */
void qk_ack_policy_default(qk_ack_policy *p);

/**
 * Initialise a tracker for one space. policy NULL = defaults; max_ranges 0 =
 * QK_ACK_DEFAULT_MAX_RANGES. Returns 0 or QK_ERR_INVALID_ARG (space out of range).
 */
int qk_ack_tracker_init(qk_ack_tracker *t, qk_pn_space space, const qk_ack_policy *policy,
                        size_t max_ranges);

/** Release memory. Never fails. */
void qk_ack_tracker_free(qk_ack_tracker *t);

/** Replace the policy (e.g. from an ACK_FREQUENCY frame). Never fails. */
void qk_ack_tracker_set_policy(qk_ack_tracker *t, const qk_ack_policy *p);

/**
 * Enable the long-idle rule with the given period (the smoothed RTT), or
 * disable it with 0. The connection enables it once the peer sent
 * ACK_FREQUENCY (RFC 9000 behaviour is unchanged otherwise). Never fails.
 */
void qk_ack_tracker_set_idle(qk_ack_tracker *t, qk_time idle_ack_ns);

/**
 * Record a packet that decrypted successfully. ecn is the IP codepoint
 * (QK_ECN_*). Returns 1 if pn was already received (or is below what we can
 * still tell apart; RFC 9000 §12.3: the caller drops it, nothing is recorded),
 * 0 if new, QK_ERR_NOMEM on allocation failure.
 */
int qk_ack_on_packet_received(qk_ack_tracker *t, uint64_t pn, bool ack_eliciting, uint8_t ecn,
                              qk_time now);

/** An IMMEDIATE_ACK frame arrived (ack-frequency-12 §5). Never fails. */
void qk_ack_on_immediate_ack_frame(qk_ack_tracker *t, qk_time now);

/**
 * Earliest time an ACK must be sent: the time the immediate condition arose
 * (<= now) if any, else first unacknowledged ack-eliciting receive time +
 * max_ack_delay, else QK_TIME_INFINITE. Never fails.
 */
qk_time qk_ack_deadline(const qk_ack_tracker *t);

/** True when qk_ack_deadline() <= now. */
bool qk_ack_should_ack_now(const qk_ack_tracker *t, qk_time now);

/** True when packets arrived since the last ACK (worth piggybacking an ACK). */
bool qk_ack_has_new(const qk_ack_tracker *t);

/** Bitmask of QK_ACK_WHY_* conditions currently demanding an immediate ACK. */
uint32_t qk_ack_immediate_reasons(const qk_ack_tracker *t);

/**
 * Fill out for an ACK frame sent at now with the given ack_delay_exponent
 * (RFC 9000 §18.2; 3 for Initial/Handshake). Marks the ACK as built: packets
 * arriving before qk_ack_on_ack_sent() stay pending.
 * Returns 0, QK_ERR_AGAIN when nothing was received, QK_ERR_INVALID_ARG for
 * an exponent above 20.
 */
int qk_ack_build(qk_ack_tracker *t, qk_time now, uint8_t ack_delay_exponent,
                 qk_ack_frame_info *out);

/**
 * The ACK built by the last qk_ack_build() was sent: reset the delayed-ACK
 * counter/timer for what it covered (RFC 9000 §13.2.1; ack-frequency-12 §6).
 * Returns 0 or QK_ERR_STATE when nothing was built.
 */
int qk_ack_on_ack_sent(qk_ack_tracker *t, qk_time now);

/**
 * A packet carrying our ACK with Largest Acknowledged = largest was
 * acknowledged: stop reporting pns below it (RFC 9000 §13.2.4). Never fails.
 */
void qk_ack_on_ack_frame_acked(qk_ack_tracker *t, uint64_t largest);
/** Whether pn was received already (or may have been: below floor_pn and in
 * no remembered gap), so a packet with it must be dropped (RFC 9000 §12.3). */
bool qk_ack_is_duplicate(const qk_ack_tracker *t, uint64_t pn);

#endif
