/* SPDX-License-Identifier: MIT */
/* Flow control (RFC 9000 §4): a receive-side and a send-side controller,
 * used at both connection and stream level, plus receive-window
 * auto-tuning bounded by a memory budget. */
#ifndef QK_TRANSPORT_FLOW_H
#define QK_TRANSPORT_FLOW_H

#include <quack/common.h>
#include <stdbool.h>

/**
 * A memory budget shared by many receive windows (e.g. all streams of a
 * connection, or all connections of an endpoint). Auto-tuning asks it before
 * growing a window; a later issue replaces the policy (pressure, fairness).
 * capacity_bytes == UINT64_MAX means unlimited.
 */
typedef struct qk_flow_budget {
    uint64_t capacity_bytes;
    uint64_t used_bytes;      /**< sum of window growth granted and not released */
    uint64_t peak_used_bytes; /**< most ever in use (experiments check the cap) */
    bool starved;             /**< a request was refused; cleared by whoever wakes waiters */
} qk_flow_budget;

/** Room left: capacity minus what is in use (0 when full). */
static inline uint64_t qk_flow_budget_room(const qk_flow_budget *b)
{
    return b->used_bytes >= b->capacity_bytes ? 0 : b->capacity_bytes - b->used_bytes;
}

/** Charge delta_bytes whatever the capacity (the caller checked the room). */
void qk_flow_budget_charge(qk_flow_budget *b, uint64_t delta_bytes);

/** Initialise a budget of capacity_bytes. Never fails. */
void qk_flow_budget_init(qk_flow_budget *b, uint64_t capacity_bytes);

/** Grant delta_bytes of window growth: true and account it, or false (refused). */
bool qk_flow_budget_grant(qk_flow_budget *b, uint64_t delta_bytes);

/** Return delta_bytes previously granted (e.g. when a stream closes). Never fails. */
void qk_flow_budget_release(qk_flow_budget *b, uint64_t delta_bytes);

/**
 * Auto-tuning rule (when to double a receive window).
 * RTT2 (quiche, rust-yamux): the credit of the previous update was used up
 * within 2 smoothed RTTs. EPOCH (quic-go): the fraction f > 1/2 of the window
 * consumed since the epoch started took less than 4 * f * srtt; normalised
 * by bytes, so an early or delayed update does not bias it.
 */
typedef enum qk_flow_rule {
    QK_FLOW_RULE_RTT2 = 0,
    QK_FLOW_RULE_EPOCH = 1,
} qk_flow_rule;

/**
 * Growth target: this many times the measured delivery rate x the sizing RTT
 * (at most 2x per step). Updates go out when half the window is left, so a
 * window of 2 x rate x RTT keeps at least rate x RTT of credit at the sender:
 * the pipe, and no more (a larger window only lets the sender fill the
 * bottleneck queue, the memory the issue bounds to 2.5 BDP). 2.25 gave the
 * same steady goodput with 12% more credit (docs/experiments/flow-control.md).
 */
#define QK_FLOW_SIZE_RTTS 2.0

/**
 * The same target with rx->early_updates (an update when a quarter window is
 * used, so at least 3/4 of it stays at the sender): 1.5 x rate x RTT keeps
 * 1.125 x the pipe of credit there.
 */
#define QK_FLOW_SIZE_RTTS_EARLY 1.5

/**
 * Sizing RTT = min(srtt, min_rtt + min(this, min_rtt / 4)): the path's base
 * RTT plus a little for ACK/processing delay, not the srtt inflated by a
 * queue the sender filled (a window sized by that srtt keeps the queue
 * full: 4-5 x base BDP). The slack is at most a quarter of min_rtt so that a
 * 1 ms path is not sized for 2 ms.
 */
#define QK_FLOW_RTT_SLACK_NS (1 * QK_NS_PER_MS)

/**
 * Delivery growth that counts as still climbing (slow start doubles per RTT):
 * the delivery now vs the one measured before the previous checkpoint shift
 * (about 1-2 sizing RTT earlier). With rx->climb_doubling the target is then
 * 2 x the sized one (still at most 2 x the window).
 */
#define QK_FLOW_CLIMB 1.25

/** RTTs without a window-limited update after which an unused window halves. */
#define QK_FLOW_DECAY_RTTS 8

/** Receive side: the limit we advertise to the peer. */
typedef struct qk_flow_rx {
    uint64_t max_data_bytes;   /**< limit advertised (MAX_DATA / MAX_STREAM_DATA) */
    uint64_t received_bytes;   /**< highest offset received (sum for a connection) */
    uint64_t consumed_bytes;   /**< bytes delivered to the application */
    uint64_t held_bytes;       /**< received beyond a gap, not yet readable (caller sets) */
    double held_avg_bytes;     /**< held_bytes averaged over ticks (gain 1/8) */
    uint64_t window_bytes;     /**< current window: next limit = consumed + window */
    uint64_t sent_limit_bytes; /**< max_data_bytes as of the last update (what the peer has) */
    uint64_t hint_limit_bytes; /**< stream.c: the limit the peer nearly used up, once per limit */
    uint64_t initial_window_bytes;
    uint64_t max_window_bytes;  /**< auto-tuning cap */
    bool autotune;              /**< double the window when credit goes fast */
    qk_flow_rule rule;          /**< which growth trigger (default RTT2) */
    bool plain_doubling;        /**< double on every trigger, no rate sizing */
    double last_rate_rtt_bytes; /**< last delivery measured, bytes per sizing RTT */
    qk_time min_rtt_ns;         /**< path's minimum RTT for sizing (caller sets; 0 = srtt only) */
    double prev_rate_rtt_bytes; /**< delivery measured at the previous checkpoint */
    bool climb_doubling;        /**< double while delivery climbs >= QK_FLOW_CLIMB x a checkpoint */
    bool early_updates; /**< update when a quarter window is used (credit < 3/4 window), not half:
                             smaller bursts from a sender with no pacing (yamux over TCP) */
    const struct qk_flow_rx *parent; /**< connection of a stream: size by its delivery too */
    /* Delivery-rate checkpoints, at least half a sizing RTT apart: the rate
     * is measured over the last 0.5-1.5 RTT, not over one update interval
     * (which is a burst, or a gap, while the window is the limit). */
    qk_time cp_ns[2];
    uint64_t cp_received_bytes[2], cp_consumed_bytes[2];
    uint64_t peak_credit_bytes; /**< most credit outstanding: max_data - consumed (stats) */
    qk_time last_update_ns;     /**< when the last limit increase was issued */
    uint64_t last_update_consumed_bytes; /**< consumed_bytes at that update */
    bool updated_once;                   /**< last_update_ns is meaningful */
    qk_time epoch_start_ns;              /**< EPOCH rule: epoch start time */
    uint64_t epoch_start_consumed_bytes; /**< EPOCH rule: consumed at epoch start */
    /* Shrinking: a period without a window-limited update. */
    qk_time period_start_ns;              /**< last window-limited update or decay */
    uint64_t period_start_consumed_bytes; /**< consumed_bytes then */
    bool period_reader_kept_up;           /**< some check saw little unread data */
    uint64_t min_window_bytes; /**< shrink floor besides the initial window (caller sets) */
    uint64_t granted_bytes;    /**< growth above the initial window held from budget */
    uint64_t grows, decays;    /**< counters (stats, tests) */
    qk_flow_budget *budget;    /**< NULL = no budget (cap only) */
} qk_flow_rx;

/**
 * Initialise: the initial limit advertised is initial_window_bytes. When
 * autotune is set, the window may grow up to max_window_bytes (taken as
 * initial_window_bytes if smaller). budget may be NULL.
 */
void qk_flow_rx_init(qk_flow_rx *rx, uint64_t initial_window_bytes, uint64_t max_window_bytes,
                     bool autotune, qk_flow_budget *budget);

/** Release budget held by rx (call when the stream/connection goes away). */
void qk_flow_rx_free(qk_flow_rx *rx);

/**
 * Data up to offset_end arrived (stream level: offset + length of a STREAM
 * frame). Sets *new_bytes (may be NULL) to how far the highest offset moved,
 * which the caller adds to the connection-level controller.
 * Returns 0, or QK_ERR_FLOW_CONTROL when offset_end exceeds the advertised
 * limit (RFC 9000 §4.1); state is unchanged on error.
 */
int qk_flow_rx_on_data(qk_flow_rx *rx, uint64_t offset_end, uint64_t *new_bytes);

/**
 * Connection level: new_bytes more bytes of new offsets arrived on some
 * stream. Returns 0, or QK_ERR_FLOW_CONTROL beyond the limit (RFC 9000 §4.1).
 */
int qk_flow_rx_add(qk_flow_rx *rx, uint64_t new_bytes);

/**
 * The application consumed bytes. Returns 0, or QK_ERR_INVALID_ARG if that
 * would exceed what was received.
 */
int qk_flow_rx_on_consumed(qk_flow_rx *rx, uint64_t bytes);

/**
 * Whether a limit increase should be sent: the credit left to the peer
 * (limit - consumed) fell below half the window. RFC 9000 §4.2 leaves the
 * threshold to the receiver; half a window avoids both stalls and chatter.
 */
bool qk_flow_rx_should_update(const qk_flow_rx *rx);

/**
 * Whether the peer (nearly) used all the credit of limit_bytes: the highest
 * offset received, received_bytes, is within an eighth of rx's window of
 * the limit (or at or past it). The one "credit nearly used" rule of the
 * auto-tuner (the peer was blocked by this window, whatever the reads did)
 * and of stream.c's early MAX_STREAM_DATA hint. Never fails.
 */
bool qk_flow_rx_credit_nearly_used(const qk_flow_rx *rx, uint64_t limit_bytes,
                                   uint64_t received_bytes);

/**
 * Build the next limit (call when writing MAX_DATA / MAX_STREAM_DATA):
 * first auto-tunes, then advertises consumed + window. Growth: when the rule
 * (rx->rule) says the previous credit went fast AND the reader kept up (at
 * most a quarter window unread: a slow reader, not the window, is the limit
 * otherwise), the window grows to min(2 x window, QK_FLOW_SIZE_RTTS x the
 * delivery rate over the last 0.5-1.5 sizing RTT x the sizing RTT) — the
 * delivery is the smaller of the bytes read and the new bytes received (a
 * read burst after a hole is filled is not link rate); the sizing RTT is
 * min(srtt, min_rtt + min(QK_FLOW_RTT_SLACK_NS, min_rtt / 4)). A stream (rx->parent
 * set) that carries at least half its connection's delivery grows at once
 * to QK_FLOW_SIZE_RTTS x the connection's delivery (a stream left alone
 * must carry the link before it ends). rx->plain_doubling always doubles;
 * rx->climb_doubling allows 2 x the sized target while the delivery still
 * climbs (the * connection window: it must not lag the congestion window's slow start). Up to the
 * cap and as the budget allows. The limit never decreases (RFC 9000 §4.1). Also runs
 * qk_flow_rx_tick. Returns the new limit.
 */
uint64_t qk_flow_rx_update(qk_flow_rx *rx, qk_time now, qk_time srtt_ns);

/**
 * Shrink check, cheap, call at least once per srtt and at every update:
 * when no update was window-limited for QK_FLOW_DECAY_RTTS srtt and in that
 * period the application either consumed less than half a window (idle or
 * trickling peer) or left data unread at every check (slow reader), the
 * window halves, not below max(initial window, rx->min_window_bytes). Budget is
 * returned down to what is still promised: max(window, limit - consumed)
 * above the initial window (credit already advertised cannot be revoked,
 * RFC 9000 §4.1). Returns true when the window shrank.
 */
bool qk_flow_rx_tick(qk_flow_rx *rx, qk_time now, qk_time srtt_ns);

/**
 * Raise the window to at least want_bytes (capped at max_window_bytes),
 * charging the growth to the budget; the budget may grant less (what it has
 * left). Used to keep the connection window >= 1.5x the largest stream
 * window. Returns true when the window grew (a MAX_DATA is then due).
 */
bool qk_flow_rx_raise(qk_flow_rx *rx, uint64_t want_bytes);

/** Send side: the limit the peer gave us. */
typedef struct qk_flow_tx {
    uint64_t max_data_bytes;        /**< peer's limit */
    uint64_t sent_bytes;            /**< highest offset sent (sum for a connection) */
    uint64_t blocked_sent_at_bytes; /**< limit at which *_BLOCKED was last sent */
    bool blocked_sent;              /**< blocked_sent_at_bytes is meaningful */
} qk_flow_tx;

/** Initialise with the peer's initial limit (transport parameter). */
void qk_flow_tx_init(qk_flow_tx *tx, uint64_t initial_max_bytes);

/** Credit left: max_data - sent. */
static inline uint64_t qk_flow_tx_available(const qk_flow_tx *tx)
{
    return tx->max_data_bytes - tx->sent_bytes;
}

/**
 * Account bytes of new data sent. Returns 0, or QK_ERR_LIMIT when that
 * exceeds the available credit (a caller bug; state unchanged).
 */
int qk_flow_tx_on_sent(qk_flow_tx *tx, uint64_t bytes);

/**
 * The peer raised its limit (MAX_DATA / MAX_STREAM_DATA). Limits only
 * increase: a smaller value is ignored (RFC 9000 §19.9, §19.10).
 * Returns true when the limit grew.
 */
bool qk_flow_tx_on_max(qk_flow_tx *tx, uint64_t new_max_bytes);

/**
 * Whether a DATA_BLOCKED / STREAM_DATA_BLOCKED frame should be sent now: we
 * have data to send (has_pending), no credit, and have not reported this
 * limit yet (RFC 9000 §4.1: once per limit). *limit_out gets the value to put
 * in the frame.
 */
bool qk_flow_tx_blocked_pending(const qk_flow_tx *tx, bool has_pending, uint64_t *limit_out);

/** The *_BLOCKED frame for limit_bytes was sent. */
void qk_flow_tx_on_blocked_sent(qk_flow_tx *tx, uint64_t limit_bytes);

/** The *_BLOCKED frame for limit_bytes was lost: resend if still blocked there. */
void qk_flow_tx_on_blocked_lost(qk_flow_tx *tx, uint64_t limit_bytes);

#endif
