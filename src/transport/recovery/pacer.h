/* SPDX-License-Identifier: MIT */
/* Pacer: a token bucket that spreads a congestion window over a round trip
 * (RFC 9002 §7.7). Sans-I/O: the caller passes the time, cwnd and RTT. */
#ifndef QK_TRANSPORT_PACER_H
#define QK_TRANSPORT_PACER_H

#include <quack/common.h>
#include <stdbool.h>
#include "transport/recovery/cc/cc.h"

#define QK_PACER_DEFAULT_BURST_PKTS 10u
/* The L4S (Prague) controller's quantum: 10 packets at 100 Mbit/s take
 * 0.96 ms to drain, as deep as a DualPI2 L queue may get before it marks
 * (RFC 9332 §A.1: ramp from 800 us). */
#define QK_PACER_L4S_BURST_PKTS 2u
/* Pacing gain N in 1/100 (exact arithmetic). RFC 9002 §7.7: N small but at
 * least 1 (its example: 1.25) so that RTT variation does not leave the
 * window unused; 2 in slow start so the window can still double each round
 * trip.
 *
 * In congestion avoidance, while the congestion window is the limit
 * (RFC 9002 §7.8, cwnd_limited() in conn_send.c), N = 1: with 1.25 the
 * bucket refills faster than the flow's ACKs arrive, so it sends what each
 * ACK releases plus its window growth back to back, and at a full drop-tail
 * queue the growth packets are the ones that find it full. The flow growing
 * fastest then takes the drops (under CUBIC the smaller one: it reaches its
 * W_max first), and two flows 1 s apart stayed 31% apart over 100-300 s
 * (sim/test_quic_cc converge; 8 of 23 runs over 20% in the docs/perf.md
 * matrix, 1 of 25 at N = 1). The smoothed RTT already holds the queueing
 * delay, so N = 1 spreads the window over the round trip it takes.
 *
 * When something else limits the flow (flow control, the application), the
 * pacer is not what should hold it back: N = 1.25 as before (at N = 1 a
 * 256 KiB flow-control window over 60 ms fell from 0.86 to 0.85 of
 * window / RTT). qk_config.pacing_gain_ca_pct sets the window-limited gain
 * (Linux uses 1.2 throughout). */
#define QK_PACER_GAIN_CA_PCT    100u
#define QK_PACER_GAIN_SLACK_PCT 125u
#define QK_PACER_GAIN_SS_PCT    200u
/* A connection's burst interval and cap (qk_pacer_set_burst_interval): a
 * burst may hold what the pacing rate earns in 1 ms, the granularity of the
 * I/O loop's timer (libev's epoll backend sleeps in whole milliseconds; a
 * quantum of 10 packets earned in 15 us at 8 Gbit/s is then re-filled only
 * by the next ACK), but at most 256 datagrams of 1452 bytes (~1 ms at
 * 3 Gbit/s; below ~120 Mbit/s the 10-packet floor rules). */
#define QK_PACER_BURST_INTERVAL_NS QK_NS_PER_MS
#define QK_PACER_MAX_BURST_BYTES   (256u * 1452u)
/* A caller told to come back at time T that comes back later (its loop was
 * descheduled: a loaded machine wakes libev milliseconds late) may send what
 * the rate earned while it was late, up to this much lateness, on top of the
 * quantum. Without it a sender paced at exactly the path's rate (BBR's
 * ProbeBW cruise, gain 1.0) loses every late millisecond for good: 40 Mbit/s
 * of a 100 Mbit/s path at load 25 on 2 cores (bench/tunnel.sh, 0 % loss).
 * A caller that wakes on time (the simulator) never sees it. */
#define QK_PACER_MAX_LATE_NS (4 * QK_NS_PER_MS)

typedef struct qk_pacer {
    uint64_t burst_pkts;       /**< least quantum in packets (bucket depth >= burst_pkts * mds) */
    qk_time burst_interval_ns; /**< 0, or: the quantum may grow to rate * this */
    uint64_t max_burst_bytes;  /**< cap on that growth */
    int64_t tokens_bytes;      /**< bytes that may leave now; <= quantum, >= -quantum (debt) */
    uint64_t frac;             /**< sub-byte remainder of refills (numerator over rate_den) */
    uint64_t quantum_bytes;    /**< burst_pkts * max datagram size */
    qk_time last_ns;           /**< time of the last refill */
    uint64_t rate_num;         /**< current rate = rate_num / rate_den bytes per ns */
    uint64_t rate_den;
    uint64_t gain_ca_pct; /**< congestion-avoidance gain N in percent (window-limited) */
    bool slow_start;      /**< use QK_PACER_GAIN_SS_PCT instead of the CA gain */
    bool window_limited;  /**< cwnd is the limit: gain_ca_pct, else the slack gain */
    bool started;
    qk_time wake_ns;     /**< time the last wait ended (0: no wait pending) */
    qk_time late_max_ns; /**< lateness that earns an allowance (QK_PACER_MAX_LATE_NS; 0 off) */
    uint64_t late_bytes; /**< allowance above the quantum earned while the caller was late */
} qk_pacer;

/**
 * Initialise with a burst quantum of burst_pkts packets (0 = default 10).
 * The bucket starts full (one quantum may go at once). Never fails.
 */
void qk_pacer_init(qk_pacer *p, uint64_t burst_pkts);

/**
 * Set the pacing gain used outside slow start while the window is the
 * limit, in percent (RFC 9002 §7.7: N >= 1; default QK_PACER_GAIN_CA_PCT).
 * Values below 100 are taken as 100.
 * Never fails.
 */
void qk_pacer_set_gain_ca(qk_pacer *p, uint64_t gain_pct);

/**
 * Let the quantum grow with the pacing rate to what it earns in
 * interval_ns, at most max_burst_bytes (never below burst_pkts packets).
 * A sender whose timer cannot wake it sooner than interval_ns after a burst
 * (RFC 9002 §7.7 leaves the burst limit to what the path and the sender can
 * do) otherwise falls below the pacing rate once a quantum of burst_pkts
 * takes less than interval_ns to earn. interval_ns == 0 turns it off (the
 * default after qk_pacer_init). Never fails.
 */
void qk_pacer_set_burst_interval(qk_pacer *p, qk_time interval_ns, uint64_t max_burst_bytes);

/**
 * How much lateness may earn an allowance above the quantum (default
 * QK_PACER_MAX_LATE_NS after qk_pacer_init; 0 turns it off, e.g. for an L4S
 * sender whose bursts the L queue marks, RFC 9331 §4.3). Never fails.
 */
void qk_pacer_set_late_max(qk_pacer *p, qk_time late_max_ns);

/** Select the slow-start gain (2) or the congestion-avoidance gain. */
void qk_pacer_set_slow_start(qk_pacer *p, bool slow_start);

/**
 * Tell the pacer whether the congestion window is what limits the sender
 * (RFC 9002 §7.8). In congestion avoidance the gain is gain_ca_pct (default
 * 1) when it is, and max(gain_ca_pct, 1.25) when something else is (see
 * QK_PACER_GAIN_CA_PCT). Starts false. Never fails.
 */
void qk_pacer_set_window_limited(qk_pacer *p, bool window_limited);

/**
 * Earliest time a packet of max_datagram_bytes may be sent: now when the
 * bucket holds enough tokens, else the exact time it will. Also records the
 * pacing rate N * cwnd / srtt used for later refills. srtt_ns == 0 or
 * cwnd_bytes == 0 disables pacing (returns now). Never fails.
 */
qk_time qk_pacer_next_send_time(qk_pacer *p, qk_time now, uint64_t cwnd_bytes, qk_time srtt_ns,
                                uint64_t max_datagram_bytes);

/**
 * Earliest send time at a rate the congestion controller chose (BBR,
 * draft-ietf-ccwg-bbr §5.6.2: the pacer follows C.pacing_rate, no gain
 * applied), with a bucket depth of max(quantum_bytes, burst_pkts
 * datagrams) (§5.6.3 C.send_quantum; a connection sets burst_pkts to 1
 * for such a controller, conn_send.c pacer_floor_pkts, unless ACK-frequency
 * burst mode asks for more; a late wake-up still earns the lateness
 * allowance, qk_pacer_set_late_max). rate_bytes_per_s == 0 disables
 * pacing. Never fails.
 */
qk_time qk_pacer_next_send_time_rate(qk_pacer *p, qk_time now, uint64_t rate_bytes_per_s,
                                     uint64_t quantum_bytes, uint64_t max_datagram_bytes);

/**
 * qk_pacer_next_send_time with the window, datagram size and phase (slow
 * start or not, for the gain) taken from a congestion controller. Never fails.
 */
qk_time qk_pacer_next_send_time_cc(qk_pacer *p, qk_time now, const qk_cc *cc, qk_time srtt_ns);

/**
 * A packet of bytes left at now: spend tokens. A packet sent early (e.g. an
 * unpaced ACK) leaves a debt of at most one quantum, so the long-run rate
 * stays exact. Never fails.
 */
void qk_pacer_on_sent(qk_pacer *p, uint64_t bytes, qk_time now);

/**
 * The caller had nothing to send although the pacer would have let it
 * (application-limited): a later return is idleness, not lateness, and earns
 * no allowance above the quantum (QK_PACER_MAX_LATE_NS). Never fails.
 */
void qk_pacer_on_idle(qk_pacer *p);

/** Current burst quantum in bytes (0 before the first next_send_time). */
uint64_t qk_pacer_quantum_bytes(const qk_pacer *p);

/** Current pacing rate in bytes per second (0 before the first next_send_time). */
uint64_t qk_pacer_rate_bytes_per_s(const qk_pacer *p);

/**
 * How many more max_datagram_bytes packets the bucket lets go at once after
 * a packet of bytes leaves now (0: the next one waits for pacing). Uses the
 * tokens as of the last qk_pacer_next_send_time(); UINT64_MAX when not
 * pacing. Never fails.
 */
uint64_t qk_pacer_pkts_after(const qk_pacer *p, uint64_t bytes, uint64_t max_datagram_bytes);

/**
 * Change the least quantum to burst_pkts datagrams (0 = the default 10),
 * e.g. while the peer acknowledges only every burst_pkts packets: an ACK then
 * releases that many at once and they should leave together. The new depth
 * applies from the next qk_pacer_next_send_time(): tokens above it are
 * dropped then, a deeper bucket fills from then on.
 * Never fails.
 */
void qk_pacer_set_burst_pkts(qk_pacer *p, uint64_t burst_pkts);

#endif
