/* Congestion controller interface (RFC 9002 §7). One vtable, several
 * algorithms (newreno.c, cubic.c, later dctcp.c). The controller owns cwnd and
 * ssthresh; recovery owns bytes in flight and tells the controller about every
 * send, ack, loss, ECN-CE and persistent congestion. Sans-I/O: all times are
 * caller-supplied. */
#ifndef QK_TRANSPORT_CC_H
#define QK_TRANSPORT_CC_H

#include <quack/common.h>
#include <stdbool.h>

typedef enum qk_cc_algo {
    QK_CC_NEWRENO = 0,
    QK_CC_CUBIC = 1,
    QK_CC_DCTCP = 2,
} qk_cc_algo;

typedef enum qk_cc_state {
    QK_CC_SLOW_START = 0,
    QK_CC_CONGESTION_AVOIDANCE = 1,
    QK_CC_RECOVERY = 2,
    QK_CC_APP_LIMITED = 3,
} qk_cc_state;

/** One acknowledged in-flight packet. */
typedef struct qk_cc_ack {
    qk_time now;            /**< time the ACK was processed */
    qk_time sent_time;      /**< when the packet was sent */
    uint64_t bytes;         /**< its size */
    qk_time smoothed_rtt_ns;
    qk_time min_rtt_ns;
    qk_time latest_rtt_ns;
    uint64_t bytes_in_flight; /**< after removing this packet */
    bool app_limited;         /**< sender was app-limited when it was sent */
} qk_cc_ack;

typedef struct qk_cc qk_cc;

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
} qk_cc_ops;

struct qk_cc {
    const qk_cc_ops *ops;
    uint64_t cwnd_bytes;
    uint64_t ssthresh_bytes;          /* UINT64_MAX until the first reduction */
    uint64_t max_datagram_bytes;      /* current max datagram size */
    qk_time recovery_start_time;      /* RFC 9002 §7.3.2 congestion recovery period */
    bool in_recovery;
    qk_cc_state state;
    uint64_t congestion_events;       /* statistics */
    union {                           /* algorithm state */
        struct {
            uint64_t bytes_acked;     /* congestion avoidance accumulator */
        } reno;
        struct {
            double w_max_bytes;       /* RFC 9438 W_max */
            double k_s;               /* RFC 9438 K, seconds */
            qk_time epoch_start;      /* start of current CA epoch, 0 = none */
            double w_est_bytes;       /* Reno-friendly estimate (RFC 9438 §4.3) */
            double cwnd_prior_bytes;
            uint64_t bytes_acked;
        } cubic;
        struct {
            double alpha;             /* DCTCP alpha (fraction of marked bytes) */
            uint64_t acked_bytes_round;
            uint64_t ce_bytes_round;
            qk_time round_end;
            uint64_t bytes_acked;
        } dctcp;
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

/** Parse "reno"/"newreno"/"cubic"/"dctcp"; returns the algo or QK_ERR_INVALID_ARG. */
int qk_cc_algo_parse(const char *name);

#endif
