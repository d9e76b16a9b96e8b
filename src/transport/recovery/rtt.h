/* SPDX-License-Identifier: MIT */
/* RTT estimator, RFC 9002 §5: latest, minimum, smoothed RTT and its
 * variation, plus the PTO and loss-delay durations derived from them.
 * One per path. Sans-I/O: every input time is the caller's. */
#ifndef QK_TRANSPORT_RTT_H
#define QK_TRANSPORT_RTT_H

#include <quack/common.h>
#include <stdbool.h>

/** RFC 9002 §6.2.2: initial RTT when nothing is known. */
#define QK_RTT_INITIAL_NS (333 * QK_NS_PER_MS)
/** RFC 9002 §6.1.2: timer granularity (kGranularity). */
#define QK_RTT_GRANULARITY_NS (1 * QK_NS_PER_MS)

typedef struct qk_rtt {
    qk_time initial_rtt_ns;    /**< configured initial RTT (used until the first sample) */
    qk_time latest_rtt_ns;     /**< most recent sample, not adjusted for ack delay */
    qk_time min_rtt_ns;        /**< minimum over the path's lifetime (0 before a sample) */
    qk_time smoothed_rtt_ns;   /**< EWMA of adjusted samples */
    qk_time rttvar_ns;         /**< mean deviation */
    qk_time first_sample_time; /**< when the first sample was taken (0 = none) */
    uint64_t samples;          /**< number of samples taken */
} qk_rtt;

/**
 * Initialise: smoothed_rtt = initial, rttvar = initial / 2 (RFC 9002 §5.3).
 * initial_rtt_ns == 0 selects QK_RTT_INITIAL_NS (333 ms). Never fails.
 */
void qk_rtt_init(qk_rtt *rtt, qk_time initial_rtt_ns);

/** Forget all samples (e.g. after a confirmed path change, RFC 9000 §9.4). Never fails. */
void qk_rtt_reset(qk_rtt *rtt);

/** True once at least one RTT sample was taken. */
static inline bool qk_rtt_has_sample(const qk_rtt *rtt)
{
    return rtt->samples > 0;
}

/**
 * Take one RTT sample (RFC 9002 §5.1-§5.3). latest_rtt_ns = ack time minus
 * send time of the largest newly acknowledged ack-eliciting packet;
 * ack_delay_ns = the peer's decoded ACK Delay. Once handshake_confirmed, the
 * delay is capped at max_ack_delay_ns; it is never subtracted when that would
 * bring the sample below min_rtt. now is recorded for the first sample.
 * Never fails.
 */
void qk_rtt_update(qk_rtt *rtt, qk_time latest_rtt_ns, qk_time ack_delay_ns,
                   qk_time max_ack_delay_ns, bool handshake_confirmed, qk_time now);

/**
 * PTO duration without backoff, RFC 9002 §6.2.1:
 * smoothed_rtt + max(4 * rttvar, kGranularity) + max_ack_delay_ns.
 * Pass 0 as max_ack_delay_ns for the Initial and Handshake spaces. Never fails.
 */
qk_time qk_rtt_pto_ns(const qk_rtt *rtt, qk_time max_ack_delay_ns);

/** RFC 9002 §6.1.2: kTimeThreshold = 9/8. */
#define QK_RTT_TIME_THRESHOLD_NUM 9
#define QK_RTT_TIME_THRESHOLD_DEN 8

/** RFC 9002 §6.1.2: the RTT the time threshold scales, max(smoothed_rtt,
 * latest_rtt). Never fails. */
qk_time qk_rtt_loss_base_ns(const qk_rtt *rtt);

/**
 * Time-threshold loss delay, RFC 9002 §6.1.2:
 * max(num/den * qk_rtt_loss_base_ns, kGranularity).
 * den == 0 selects kTimeThreshold. Never fails.
 */
qk_time qk_rtt_loss_delay_ns(const qk_rtt *rtt, uint32_t num, uint32_t den);

#endif
