/* SPDX-License-Identifier: MIT */
/* Congestion controller interface (RFC 9002 §7). One vtable, several
 * algorithms (newreno.c, cubic.c, later dctcp.c). The controller owns cwnd and
 * ssthresh; recovery owns bytes in flight and tells the controller about every
 * send, ack, loss, ECN-CE and persistent congestion. Sans-I/O: all times are
 * caller-supplied.
 *
 * Call order from recovery.c for one ACK frame (RFC 9002 A.7): if the
 * ECN-CE count rose, on_congestion_event(sent time of the largest acked,
 * is_ecn = true) and on_ecn(ce_delta, acked_bytes_of_this_ack); then, for
 * packets declared lost, on_congestion_event(sent time of the largest lost,
 * false) and on_persistent_congestion() if RFC 9002 §7.6 says so; then
 * on_packet_acked() for each newly acknowledged in-flight packet. So the loss
 * found by a connection's very first ACK reaches the controller before any
 * ack (qk_cc_early_loss relies on this). A controller ignores congestion
 * events for packets sent before recovery_start_time (RFC 9002 §7.3.2), so
 * calling once per lost packet is also fine. */
#ifndef QK_TRANSPORT_CC_H
#define QK_TRANSPORT_CC_H

#include <quack/common.h>
#include <stdbool.h>

#include "transport/recovery/cc/bbr.h"

typedef enum qk_cc_algo {
    QK_CC_NEWRENO = 0,
    QK_CC_CUBIC = 1,
    QK_CC_DCTCP = 2,
    QK_CC_BBR = 3,    /* BBRv3, draft-ietf-ccwg-bbr (bbr.c) */
    QK_CC_PRAGUE = 4, /* L4S (prague.c) */
    QK_CC_BBR_LT = 5, /* BBRv3 whose loss is classified first (bbr.c + bbr_lt.c) */
} qk_cc_algo;

typedef enum qk_cc_state {
    QK_CC_SLOW_START = 0,
    QK_CC_CONGESTION_AVOIDANCE = 1,
    QK_CC_RECOVERY = 2,
    QK_CC_APP_LIMITED = 3,
} qk_cc_state;

/** One acknowledged in-flight packet. */
typedef struct qk_cc_ack {
    qk_time now;       /**< time the ACK was processed */
    qk_time sent_time; /**< when the packet was sent */
    uint64_t bytes;    /**< its size */
    qk_time smoothed_rtt_ns;
    qk_time min_rtt_ns;
    qk_time latest_rtt_ns;
    uint64_t bytes_in_flight; /**< after removing this packet */
    bool app_limited;         /**< sender was app-limited when it was sent */
} qk_cc_ack;

typedef struct qk_cc qk_cc;

/**
 * The delivery-rate sample of one ACK frame (draft-ietf-ccwg-bbr §4.1
 * "Delivery Rate Samples", the RS structure), built by recovery.c from the
 * per-packet snapshots taken at send time. Sizes in bytes, times in ns.
 */
typedef struct qk_rate_sample {
    qk_time now;
    uint64_t delivery_rate_bytes_per_s; /**< RS.delivery_rate; 0: no reliable sample */
    bool has_data;                      /**< an in-flight packet was newly acked */
    bool is_app_limited;                /**< RS.is_app_limited (newest acked packet) */
    qk_time interval_ns;                /**< RS.interval = max(send_elapsed, ack_elapsed) */
    qk_time send_elapsed_ns;            /**< RS.send_elapsed */
    qk_time ack_elapsed_ns;             /**< RS.ack_elapsed */
    uint64_t delivered_bytes;           /**< RS.delivered over the interval */
    uint64_t prior_delivered_bytes;     /**< RS.prior_delivered (P.delivered of newest) */
    qk_time prior_time;                 /**< RS.prior_time (P.delivered_time of newest) */
    bool has_rtt;                       /**< rtt_ns is valid */
    qk_time rtt_ns;                     /**< RS.rtt: now - send time of the newest acked */
    uint64_t tx_in_flight_bytes;        /**< RS.tx_in_flight: in flight when newest was sent */
    uint64_t lost_bytes;                /**< RS.lost: C.lost - P.lost of the newest */
    uint64_t newly_acked_bytes;         /**< RS.newly_acked by this ACK */
    uint64_t newly_lost_bytes;          /**< RS.newly_lost while processing it */
    uint64_t total_delivered_bytes;     /**< C.delivered after this ACK */
    uint64_t total_lost_bytes;          /**< C.lost after this ACK */
    uint64_t bytes_in_flight;           /**< C.inflight after this ACK */
    uint64_t last_pn;                   /**< RS.last_acked_packet_id */
} qk_rate_sample;

/** A lost in-flight packet and its send-time snapshot (BBR HandleLostPacket). */
typedef struct qk_cc_lost {
    qk_time now;
    qk_time sent_time;
    uint64_t pn;
    uint64_t bytes;
    uint64_t tx_in_flight_bytes; /**< P.tx_in_flight */
    uint64_t lost_at_send_bytes; /**< P.lost (C.lost when it was sent) */
    uint64_t total_lost_bytes;   /**< C.lost, this packet included */
    uint64_t total_delivered_bytes;
    bool is_app_limited; /**< P.is_app_limited */
} qk_cc_lost;

/** A packet about to count in flight (BBR OnTransmit). */
typedef struct qk_cc_sent {
    qk_time now;
    uint64_t bytes;
    uint64_t bytes_in_flight_before; /**< C.inflight before this packet */
    bool conn_app_limited;           /**< C.app_limited != 0 (draft §4.1.2) */
    bool cwnd_limited;               /**< RFC 9002 §7.8: the window was the limit */
} qk_cc_sent;

/* Delivered-bytes history (cc.c): cumulative bytes acknowledged, with a
 * snapshot every ~1/16 round trip, enough to answer "how many bytes did the
 * path deliver during the round trip that ended with the latest ACK" within
 * 1/16 of it. */
#define QK_CC_DLV_SLOTS 32
#define QK_CC_DLV_STEPS 16 /* snapshots per round trip */
typedef struct qk_cc_delivered {
    uint64_t total_bytes; /* in-flight bytes acknowledged so far */
    qk_time rtt_ns;       /* smoothed RTT of the latest ack (0: none yet) */
    qk_time first_ack_t;  /* when the first ack arrived (valid if n > 0) */
    qk_time last_ack_t;   /* when the latest ack arrived (valid if n > 0) */
    struct {
        qk_time t;            /* time of the snapshot */
        uint64_t total_bytes; /* total_bytes just before the acks at t */
    } snap[QK_CC_DLV_SLOTS];
    uint32_t head; /* index of the newest snapshot */
    uint32_t n;    /* snapshots held */
} qk_cc_delivered;

/** What a controller shows of itself to the simulator and the benches
 * (qk_cc_probe_get; sim/flow_quic.h's qk_simq_cc_probe carries the same
 * names): the window every controller keeps and, from the optional probe op,
 * the model of CUBIC (RFC 9438) or BBR (draft-ietf-ccwg-bbr). */
typedef struct qk_cc_probe {
    uint64_t congestion_events; /**< responses of the controller */
    uint64_t cwnd_bytes, ssthresh_bytes, max_datagram_bytes;
    uint64_t pacing_rate_bytes_per_s; /**< 0: the pacer uses cwnd / srtt */
    bool cubic;                       /**< the cubic_ fields are set */
    bool cubic_in_epoch;              /**< a congestion-avoidance epoch is running */
    qk_time cubic_epoch_start;
    double cubic_w_max_bytes, cubic_k_s, cubic_w_est_bytes;
    bool bbr;     /**< the bbr_ fields are set */
    int bbr_mode; /**< 0 Startup, 1 Drain, 2-5 ProbeBW DOWN/CRUISE/REFILL/UP, 6 ProbeRTT */
    uint64_t bbr_round_count;
    uint64_t bbr_max_bw_bytes_per_s, bbr_bw_bytes_per_s;
    uint64_t bbr_bw_shortterm_bytes_per_s; /**< UINT64_MAX = unset (infinite) */
    uint64_t bbr_inflight_longterm_bytes;  /**< UINT64_MAX = unset (infinite) */
    uint64_t bbr_inflight_shortterm_bytes; /**< UINT64_MAX = unset (infinite) */
    qk_time bbr_min_rtt_ns;
} qk_cc_probe;

typedef struct qk_cc_ops {
    const char *name;
    /** Reset state: cwnd = initial window (RFC 9002 §7.2). */
    void (*reset)(qk_cc *cc, qk_time now);
    void (*on_packet_sent)(qk_cc *cc, uint64_t bytes, qk_time now);
    void (*on_packet_acked)(qk_cc *cc, const qk_cc_ack *ack);
    /** Loss or ECN-CE: at most one reduction per round trip (RFC 9002 §7.3.2). */
    void (*on_congestion_event)(qk_cc *cc, qk_time sent_time_of_trigger, bool is_ecn, qk_time now);
    /** ECN-CE counts rose by ce_delta for acked_bytes acknowledged (for DCTCP). */
    void (*on_ecn)(qk_cc *cc, uint64_t ce_delta_pkts, uint64_t acked_bytes, qk_time now);
    void (*on_persistent_congestion)(qk_cc *cc, qk_time now); /* RFC 9002 §7.6.2 */
    /** A previously declared loss was spurious (optional; may be NULL). */
    void (*on_spurious_loss)(qk_cc *cc, qk_time now);
    /* Optional (NULL for the loss-based controllers), used by BBR: */
    /** Before on_packet_sent, with the connection's view at send time. */
    void (*on_transmit)(qk_cc *cc, const qk_cc_sent *sent);
    /** One lost in-flight packet (not a PMTU probe), before on_congestion_event. */
    void (*on_packet_lost)(qk_cc *cc, const qk_cc_lost *lost);
    /** Once per ACK frame that newly acked something, after every on_packet_acked. */
    void (*on_rate_sample)(qk_cc *cc, const qk_rate_sample *rs);
    /** The controller's estimate of the pipe, below its cwnd's headroom
     * (bytes; UINT64_MAX while it has none): what a sender holding back
     * non-urgent data fills (conn_send.c pipe_limit_bytes). NULL: the
     * window is the estimate (window-based controllers). */
    uint64_t (*pipe_bytes)(const qk_cc *cc);
    /** Optional: fill the algorithm's part of *out (qk_cc_probe_get has
     * filled the common part). */
    void (*probe)(const qk_cc *cc, qk_cc_probe *out);
} qk_cc_ops;

struct qk_cc {
    const qk_cc_ops *ops;
    uint64_t cwnd_bytes;
    uint64_t ssthresh_bytes;     /* UINT64_MAX until the first reduction or HyStart++ exit */
    uint64_t max_datagram_bytes; /* current max datagram size */
    qk_time recovery_start_time; /* RFC 9002 §7.3.2 congestion recovery period */
    bool in_recovery;
    qk_cc_state state;
    uint64_t congestion_events; /* responses so far; recovery.c reads it to tell a new
                                   response (undo episode) from an ignored event */
    qk_cc_delivered delivered;  /* bytes acknowledged per round trip (slow-start exit) */
    /* A rate-based controller (BBR) sets these; 0 keeps the pacer on
     * N * cwnd / srtt (RFC 9002 §7.7). Bytes per second / bytes. */
    uint64_t pacing_rate_bytes_per_s;
    uint64_t send_quantum_bytes;
    /* The most a rate-based controller paces at, bytes per second (0 =
     * no bound); kept across reset. bbr-lt also starts there, without
     * Startup (qk_cc_set_max_rate). */
    uint64_t max_rate_bytes_per_s;
    /* Set by the controller to ask recovery.c to mark the connection
     * application-limited (draft-ietf-ccwg-bbr MarkConnectionAppLimited,
     * used by ProbeRTT); recovery clears it. */
    bool mark_app_limited;
    union { /* algorithm state */
        struct qk_cc_reno_state {
            uint64_t bytes_acked; /* congestion avoidance accumulator */
            bool undo_valid;      /* state before the last reduction (spurious-loss undo) */
            uint64_t undo_cwnd_bytes, undo_ssthresh_bytes;
            qk_time undo_recovery_start_time; /* recovery period before it */
        } reno;
        struct qk_cc_cubic_state {
            double w_max_bytes;  /* RFC 9438 W_max */
            double k_s;          /* RFC 9438 K, seconds */
            qk_time epoch_start; /* start of current CA epoch (valid if in_epoch) */
            double w_est_bytes;  /* Reno-friendly estimate (RFC 9438 §4.3) */
            double cwnd_prior_bytes;
            uint64_t bytes_acked;
            /* Extensions (cubic.c): */
            bool in_epoch;           /* epoch_start is valid (times may be 0) */
            double cwnd_epoch_bytes; /* cwnd at the start of the epoch */
            qk_time hs_last_sent;    /* HyStart++: time of the latest send */
            double frac_bytes;       /* fractional cwnd growth carried over */
            bool hystart_css;        /* HyStart++ conservative slow start (RFC 9406) */
            qk_time hs_round_end; /* HyStart++: round ends when a packet sent after this is acked */
            qk_time hs_last_round_min_rtt_ns;
            qk_time hs_current_round_min_rtt_ns;
            uint64_t hs_rtt_samples; /* RTT samples (ACK frames, not packets) this round */
            qk_time hs_sample_t;     /* ack time of the latest counted sample */
            bool hs_sample_valid;    /* hs_sample_t is set (this round) */
            uint64_t hs_css_rounds;
            qk_time hs_css_baseline_min_rtt_ns;
            bool app_limited; /* RFC 9438 §5.8: an app-limited period is running */
            qk_time app_limited_since;
            struct { /* state before the last reduction (RFC 9438 §4.9) */
                bool valid;
                uint64_t cwnd_bytes;
                uint64_t ssthresh_bytes;
                double w_max_bytes;
                double k_s;
                qk_time epoch_start;
                bool in_epoch;
                double w_est_bytes;
                double cwnd_prior_bytes;
                double cwnd_epoch_bytes;
                qk_time recovery_start_time; /* the recovery period before it */
            } undo;
        } cubic;
        struct qk_cc_dctcp_state {
            double alpha; /* DCTCP alpha (fraction of marked bytes) */
            uint64_t acked_bytes_round;
            uint64_t ce_bytes_round;
            qk_time round_end;
            uint64_t bytes_acked;
            bool ce_in_round; /* extension: a CE mark arrived this round */
        } dctcp;
        struct qk_cc_prague_state {
            double alpha; /* DCTCP alpha (fraction of CE-marked bytes) */
            uint64_t acked_bytes_round;
            uint64_t ce_bytes_round;
            qk_time round_end;
            double ai_frac_bytes; /* fractional additive increase carried over */
            qk_time srtt_ns;      /* of the latest ack */
            qk_time min_rtt_ns;   /* of the latest ack */
            bool classic;         /* the last CE response was the classic one */
        } prague;
        struct qk_cc_bbr_state bbr; /* bbr.h */
    } u;
};

/**
 * Initialise a controller of the given algorithm.
 * Returns 0, or QK_ERR_INVALID_ARG for an unknown algorithm or a
 * max_datagram_bytes below 1200.
 */
int qk_cc_init(qk_cc *cc, qk_cc_algo algo, uint64_t max_datagram_bytes, qk_time now);

/** Initial window, RFC 9002 §7.2: min(10 * mds, max(14720, 2 * mds)). */
uint64_t qk_cc_initial_window(uint64_t max_datagram_bytes);

/** Minimum window, RFC 9002 §7.2: 2 * max_datagram_size. */
static inline uint64_t qk_cc_min_window(const qk_cc *cc)
{
    return 2 * cc->max_datagram_bytes;
}

/** True while cwnd is below ssthresh (slow start; the pacer uses gain 2 then). */
static inline bool qk_cc_in_slow_start(const qk_cc *cc)
{
    return cc->cwnd_bytes < cc->ssthresh_bytes;
}

/**
 * Undo the bookkeeping of a congestion response that proved spurious: the
 * recovery period goes back to the one before it (prev_recovery_start_time)
 * and the response no longer counts in congestion_events. An undone response
 * never happened, so a real loss of a packet sent before it (found after the
 * undo) starts a response of its own instead of being absorbed by a recovery
 * period whose reduction was reverted (RFC 9002 §7.3.2, RFC 9438 §4.9).
 */
void qk_cc_undo_recovery(qk_cc *cc, qk_time prev_recovery_start_time);

/** Report a spurious loss if the algorithm supports undo (RFC 9438 §4.9). */
static inline void qk_cc_spurious_loss(qk_cc *cc, qk_time now)
{
    if (cc->ops->on_spurious_loss) cc->ops->on_spurious_loss(cc, now);
}

/** The controller's state for the simulator and the benches. Never fails. */
void qk_cc_probe_get(const qk_cc *cc, qk_cc_probe *out);

/* The algorithms, and NewReno pieces DCTCP reuses (internal to cc/). */
extern const qk_cc_ops qk_cc_newreno_ops;
extern const qk_cc_ops qk_cc_cubic_ops;
extern const qk_cc_ops qk_cc_dctcp_ops;
extern const qk_cc_ops qk_cc_prague_ops;
/** RFC 8257 §3.3: the next alpha, (1 - g) alpha + g F with F the fraction of
 * the round's acknowledged bytes that were CE-marked (DCTCP and Prague).
 * alpha unchanged when nothing was acknowledged. Never fails. */
double qk_cc_ecn_alpha(double alpha, double g, uint64_t ce_bytes, uint64_t acked_bytes);
/** Prague's additive-increase scale for a smoothed RTT: (srtt / 25 ms)^2
 * below 25 ms, else 1 (reduced RTT dependence). */
double qk_prague_ai_scale(qk_time srtt_ns);
/** True when Prague reads the bottleneck as classic ECN: smoothed RTT more
 * than 5 ms above the min RTT. */
bool qk_prague_classic_queue(const qk_cc *cc);
extern const qk_cc_ops qk_cc_bbr_ops;
extern const qk_cc_ops qk_cc_bbr_lt_ops;
/** True for the BBR controllers (the draft's and the loss-tolerant one). */
static inline bool qk_cc_is_bbr(const qk_cc *cc)
{
    return cc->ops == &qk_cc_bbr_ops || cc->ops == &qk_cc_bbr_lt_ops;
}
/**
 * Bound the pacing rate at max_rate_bytes_per_s (0 = none), for any
 * controller that paces by rate; bbr-lt then starts in ProbeBW at that
 * rate instead of Startup. Call after qk_cc_init (the bound survives
 * reset). Never fails.
 */
void qk_cc_set_max_rate(qk_cc *cc, uint64_t max_rate_bytes_per_s, qk_time now);
/* bbr_lt.c, for bbr.c: the loss classifier of the loss-tolerant mode. */
/** The background (non-congestive) loss rate learnt so far, 0..0.25. */
double qk_bbr_lt_background(const qk_cc *cc);
/** The recent RTT is a quarter of min_rtt (at least 1 ms) above it. */
bool qk_bbr_lt_queue_up(const qk_cc *cc);
/** The background loss rate is at least 0.5 %: the lossy-path rules. */
bool qk_bbr_lt_lossy(const qk_cc *cc);
/** ProbeBW UP's pacing gain: draft_pct, or 110 on a lossy path. */
uint32_t qk_bbr_lt_up_gain_pct(const qk_cc *cc, uint32_t draft_pct);
/** The queue that ends a probe is up (min_rtt / 4; min_rtt / 16 if lossy). */
bool qk_bbr_lt_probe_queue_up(const qk_cc *cc);
/** REFILL begins: note the queue this probe's end counts from. */
void qk_bbr_lt_refill_began(qk_cc *cc);
/* bbr-lt: Startup met a queue that stood for a round, and loss (bbr_lt.c). */
bool qk_bbr_lt_startup_queued(const qk_cc *cc, qk_time now);
/** A rate bound is set and max_bw, loss compensated, reaches it. */
bool qk_bbr_lt_at_rate_bound(const qk_cc *cc);
/** True when lost_bytes of total_bytes is congestion (count: a loss's
 * verdict, recorded in the round and the counters). */
bool qk_bbr_lt_too_high(qk_cc *cc, uint64_t lost_bytes, uint64_t total_bytes, bool count);
void qk_bbr_lt_on_lost(qk_cc *cc, uint64_t bytes);
void qk_bbr_lt_probe_began(qk_cc *cc);
void qk_bbr_lt_on_ce(qk_cc *cc);
/** Per rate sample, before the model update: RTT, rounds, background. */
void qk_bbr_lt_on_rate_sample(qk_cc *cc, const qk_rate_sample *rs);
/** At the end of a window of one min_rtt whose every RTT sample was more
 * than a base RTT above min_rtt: the window's best delivery rate; else 0. */
uint64_t qk_bbr_lt_standing_queue(qk_cc *cc, const qk_rate_sample *rs);
/** The pacing rate with the background loss compensated (bbr-lt) and
 * max_rate_bytes_per_s applied (both modes). */
uint64_t qk_bbr_lt_pacing_rate(const qk_cc *cc, uint64_t rate_bytes_per_s);
/** BBR's qk_cc_ops.pipe_bytes (draft-ietf-ccwg-bbr §5.6.4.2
 * Inflight(BBR.bw, 1) over the least RTT of the last two rounds: BDP +
 * quantization budget), below its cwnd's 2 x BDP + aggregation headroom;
 * bytes, UINT64_MAX before Startup has filled the pipe. Only for a
 * controller with qk_cc_bbr_ops. */
uint64_t qk_cc_bbr_pipe_bytes(const qk_cc *cc);
void qk_cc_reset_common(qk_cc *cc);
void qk_cc_update_state(qk_cc *cc, bool app_limited);
/* NewReno growth/reduction with the caller's CA byte accumulator (the union
 * places it differently per algorithm). */
void qk_newreno_ack(qk_cc *cc, const qk_cc_ack *ack, uint64_t *ca_acc_bytes);
void qk_newreno_loss(qk_cc *cc, qk_time sent_time, bool is_ecn, qk_time now,
                     uint64_t *ca_acc_bytes);
void qk_newreno_persistent(qk_cc *cc, uint64_t *ca_acc_bytes);
/**
 * After persistent congestion (RFC 9002 §7.6.2) the window is the minimum;
 * this starts a recovery period at now so that packets sent before the
 * outage and acknowledged afterwards (typically in the very ACK that
 * revealed it: the ACKs for the last flight before a blackhole were lost)
 * do not grow it back: B.8 resets congestion_recovery_start_time to 0,
 * after which a 5 s blackhole ended with NewReno's cwnd at 0.5x and
 * CUBIC's at 0.7x of its pre-outage size within the same ACK
 * (tests/sim/test_bbr_blackhole.c). Growth resumes with the first
 * packet sent after it. Never fails.
 */
void qk_cc_persistent_recovery(qk_cc *cc, qk_time now);

/** True when a packet sent at sent_time belongs to the current recovery period. */
bool qk_cc_in_recovery_period(const qk_cc *cc, qk_time sent_time);

/** Record an acknowledged in-flight packet in the delivered-bytes history
 * (every algorithm calls it first thing in on_packet_acked). */
void qk_cc_delivered_on_ack(qk_cc *cc, const qk_cc_ack *ack);

/**
 * Bytes acknowledged during the round trip (the smoothed RTT of the latest
 * ack) that ended with the latest ack, to within 1/16 of a round trip.
 * Anchored at the latest ack rather than at "now" so that a loss declared by
 * the time threshold after the ACKs stopped still sees what the path carried.
 * Returns UINT64_MAX while the history does not span a whole round trip.
 */
uint64_t qk_cc_delivered_last_rtt(const qk_cc *cc);

/**
 * The window a congestion event scales by beta. In congestion avoidance that
 * is cwnd (RFC 9002 §7.3.2, RFC 9438 §4.6). On the event that ends slow start
 * (cwnd < ssthresh: slow start, HyStart++ CSS, or slow start after
 * persistent congestion) cwnd can be up to twice what the path carries (it
 * doubled during the round that overflowed the queue), so the base is what
 * was delivered in the last round trip: min(cwnd, max(delivered, min
 * window)); cwnd while the history is shorter than a round trip.
 */
uint64_t qk_cc_reduction_base(const qk_cc *cc);

/**
 * True for a loss (not ECN-CE) in slow start of a packet sent before the
 * first ACK arrived (or found by the first ACK, while cwnd is still the
 * initial window): the handshake's first flight. Such an event reduces
 * cwnd but leaves ssthresh alone, so the connection keeps probing in slow
 * start: a dropped handshake packet on a busy queue must not pin a new flow
 * to a 6 kB window (NewReno: +1 packet per RTT) for the rest of its life.
 * This is the QUIC analogue of TCP's rule that a lost SYN only shrinks the
 * initial window (RFC 6298 §5.7) while ssthresh starts "arbitrarily high"
 * when data transfer begins (RFC 5681 §3.1). A CE mark always ends slow
 * start: it reports a queue, not a lost first flight.
 */
bool qk_cc_early_loss(const qk_cc *cc, qk_time sent_time, bool is_ecn);

/** Name of an algorithm ("newreno", "cubic", "dctcp", "bbr", "prague", "bbr-lt"), or "unknown". */
const char *qk_cc_algo_name(qk_cc_algo algo);

/** Parse "reno"/"newreno"/"cubic"/"dctcp"/"bbr"/"prague"/"bbr-lt"; returns the algo or
 * QK_ERR_INVALID_ARG.
 */
int qk_cc_algo_parse(const char *name);

#endif
