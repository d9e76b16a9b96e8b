/* SPDX-License-Identifier: MIT */
/* RTT estimator, RFC 9002 §5. */
#include "transport/recovery/rtt.h"

#include <string.h>

void qk_rtt_init(qk_rtt *rtt, qk_time initial_rtt_ns)
{
    memset(rtt, 0, sizeof *rtt);
    rtt->initial_rtt_ns = initial_rtt_ns ? initial_rtt_ns : QK_RTT_INITIAL_NS;
    qk_rtt_reset(rtt);
}

void qk_rtt_reset(qk_rtt *rtt)
{
    /* RFC 9002 §5.3: before any sample, smoothed_rtt = kInitialRtt and
     * rttvar = kInitialRtt / 2. */
    rtt->latest_rtt_ns = 0;
    rtt->min_rtt_ns = 0;
    rtt->smoothed_rtt_ns = rtt->initial_rtt_ns;
    rtt->rttvar_ns = rtt->initial_rtt_ns / 2;
    rtt->first_sample_time = 0;
    rtt->samples = 0;
}

void qk_rtt_update(qk_rtt *rtt, qk_time latest_rtt_ns, qk_time ack_delay_ns,
                   qk_time max_ack_delay_ns, bool handshake_confirmed, qk_time now)
{
    rtt->latest_rtt_ns = latest_rtt_ns;
    if (rtt->samples++ == 0) {
        /* RFC 9002 §5.3: the first sample initialises the estimator. */
        rtt->min_rtt_ns = latest_rtt_ns;
        rtt->smoothed_rtt_ns = latest_rtt_ns;
        rtt->rttvar_ns = latest_rtt_ns / 2;
        rtt->first_sample_time = now;
        return;
    }
    /* RFC 9002 §5.2: min_rtt uses unadjusted samples. */
    if (latest_rtt_ns < rtt->min_rtt_ns) rtt->min_rtt_ns = latest_rtt_ns;
    /* RFC 9002 §5.3: after confirmation, cap the peer's delay by max_ack_delay. */
    if (handshake_confirmed && ack_delay_ns > max_ack_delay_ns) ack_delay_ns = max_ack_delay_ns;
    /* RFC 9002 §5.3: never subtract the delay below min_rtt. */
    qk_time adjusted = latest_rtt_ns;
    if (latest_rtt_ns >= rtt->min_rtt_ns + ack_delay_ns) adjusted = latest_rtt_ns - ack_delay_ns;
    qk_time diff = rtt->smoothed_rtt_ns > adjusted ? rtt->smoothed_rtt_ns - adjusted
                                                   : adjusted - rtt->smoothed_rtt_ns;
    /* RFC 9002 §5.3: rttvar = 3/4 rttvar + 1/4 |smoothed - adjusted|;
     * smoothed = 7/8 smoothed + 1/8 adjusted. */
    rtt->rttvar_ns = (3 * rtt->rttvar_ns + diff) / 4;
    rtt->smoothed_rtt_ns = (7 * rtt->smoothed_rtt_ns + adjusted) / 8;
}

qk_time qk_rtt_pto_ns(const qk_rtt *rtt, qk_time max_ack_delay_ns)
{
    /* RFC 9002 §6.2.1 */
    qk_time var = 4 * rtt->rttvar_ns;
    if (var < QK_RTT_GRANULARITY_NS) var = QK_RTT_GRANULARITY_NS;
    return rtt->smoothed_rtt_ns + var + max_ack_delay_ns;
}

qk_time qk_rtt_loss_base_ns(const qk_rtt *rtt)
{
    return rtt->smoothed_rtt_ns > rtt->latest_rtt_ns ? rtt->smoothed_rtt_ns : rtt->latest_rtt_ns;
}

qk_time qk_rtt_loss_delay_ns(const qk_rtt *rtt, uint32_t num, uint32_t den)
{
    if (den == 0) {
        num = QK_RTT_TIME_THRESHOLD_NUM;
        den = QK_RTT_TIME_THRESHOLD_DEN;
    }
    /* RFC 9002 §6.1.2: kTimeThreshold * max(smoothed_rtt, latest_rtt), >= kGranularity. */
    qk_time base = qk_rtt_loss_base_ns(rtt);
    qk_time d = base / den * num + (base % den) * num / den;
    if (d < QK_RTT_GRANULARITY_NS) d = QK_RTT_GRANULARITY_NS;
    return d;
}
