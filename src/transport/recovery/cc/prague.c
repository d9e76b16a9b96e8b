/* SPDX-License-Identifier: MIT */
/* A Prague-style L4S congestion controller (RFC 9331 §4.3 "Prague L4S
 * requirements"; draft-briscoe-iccrg-prague-congestion-control): DCTCP's
 * scalable response on ECT(1) packets, plus
 *   - reduced RTT dependence: below a 25 ms virtual RTT the additive
 *     increase is scaled by (srtt / 25 ms)^2, so every flow ramps its RATE
 *     like a 25 ms flow (rate += mss / R_vir^2 per second whatever its RTT);
 *   - classic fallback on loss: the Reno halving (RFC 9331 §4.3: respond to
 *     loss as a classic flow would);
 *   - classic fallback on a classic-ECN bottleneck: CE marks that arrive
 *     with a queue far deeper than an L4S queue keeps (smoothed RTT minus
 *     min RTT above 5 ms) come from an RFC 3168 AQM that expects the classic
 *     response, so they get the Reno halving (and Reno growth) until marks
 *     arrive with a shallow queue again.
 * The controller marks ECT(1); conn_send.c picks the codepoint from
 * qk_config.cc. */
#include "transport/recovery/cc/cc.h"

#define PRAGUE_G                 (1.0 / 16.0) /* RFC 8257 §4.2 gain, kept by Prague */
#define PRAGUE_RTT_VIRT_NS       (25 * QK_NS_PER_MS)
#define PRAGUE_CLASSIC_QDELAY_NS (5 * QK_NS_PER_MS)

static void prague_reset(qk_cc *cc, qk_time now)
{
    qk_cc_reset_common(cc);
    cc->u.prague.alpha = 1.0; /* RFC 8257 §3.3: start conservatively */
    cc->u.prague.round_end = now;
}

static void prague_on_packet_sent(qk_cc *cc, uint64_t bytes, qk_time now)
{
    (void)cc;
    (void)bytes;
    (void)now;
}

double qk_prague_ai_scale(qk_time srtt_ns)
{
    /* Reduced RTT dependence: (R / R_vir)^2 for R below R_vir, else 1. */
    if (srtt_ns == 0 || srtt_ns >= PRAGUE_RTT_VIRT_NS) return 1.0;
    double r = (double)srtt_ns / (double)PRAGUE_RTT_VIRT_NS;
    return r * r;
}

/* RFC 8257 §3.3: once per round, alpha = (1 - g) * alpha + g * F. */
static void prague_end_round(qk_cc *cc, qk_time now)
{
    struct qk_cc_prague_state *s = &cc->u.prague;
    s->alpha = qk_cc_ecn_alpha(s->alpha, PRAGUE_G, s->ce_bytes_round, s->acked_bytes_round);
    s->acked_bytes_round = 0;
    s->ce_bytes_round = 0;
    s->round_end = now;
}

static void prague_on_packet_acked(qk_cc *cc, const qk_cc_ack *ack)
{
    struct qk_cc_prague_state *s = &cc->u.prague;
    if (ack->sent_time > s->round_end) prague_end_round(cc, ack->now);
    s->acked_bytes_round += ack->bytes;
    s->srtt_ns = ack->smoothed_rtt_ns;
    s->min_rtt_ns = ack->min_rtt_ns;
    qk_cc_delivered_on_ack(cc, ack);
    if (cc->in_recovery) { /* RFC 9002 B.5 */
        if (qk_cc_in_recovery_period(cc, ack->sent_time)) {
            qk_cc_update_state(cc, false);
            return;
        }
        cc->in_recovery = false;
    }
    if (ack->app_limited) { /* RFC 9002 §7.8 */
        qk_cc_update_state(cc, true);
        return;
    }
    if (cc->cwnd_bytes < cc->ssthresh_bytes) {
        cc->cwnd_bytes += ack->bytes; /* RFC 9002 §7.3.1 slow start */
    } else {
        /* One datagram per window acknowledged, scaled for RTT independence
         * (not while falling back to classic behaviour). */
        double k = s->classic ? 1.0 : qk_prague_ai_scale(ack->smoothed_rtt_ns);
        s->ai_frac_bytes +=
            k * (double)cc->max_datagram_bytes * (double)ack->bytes / (double)cc->cwnd_bytes;
        if (s->ai_frac_bytes >= 1.0) {
            uint64_t add = (uint64_t)s->ai_frac_bytes;
            cc->cwnd_bytes += add;
            s->ai_frac_bytes -= (double)add;
        }
    }
    qk_cc_update_state(cc, false);
}

static void prague_on_ecn(qk_cc *cc, uint64_t ce_delta_pkts, uint64_t acked_bytes, qk_time now)
{
    struct qk_cc_prague_state *s = &cc->u.prague;
    (void)now;
    uint64_t ce_bytes = ce_delta_pkts * cc->max_datagram_bytes;
    if (acked_bytes > 0 && ce_bytes > acked_bytes) ce_bytes = acked_bytes;
    s->ce_bytes_round += ce_bytes;
}

bool qk_prague_classic_queue(const qk_cc *cc)
{
    const struct qk_cc_prague_state *s = &cc->u.prague;
    return s->srtt_ns > s->min_rtt_ns && s->srtt_ns - s->min_rtt_ns > PRAGUE_CLASSIC_QDELAY_NS;
}

static void prague_on_congestion_event(qk_cc *cc, qk_time sent_time, bool is_ecn, qk_time now)
{
    struct qk_cc_prague_state *s = &cc->u.prague;
    uint64_t acc = 0;
    if (!is_ecn) { /* RFC 9331 §4.3: loss gets the classic response */
        qk_newreno_loss(cc, sent_time, false, now, &acc);
        s->ai_frac_bytes = 0;
        return;
    }
    if (qk_cc_in_recovery_period(cc, sent_time)) return; /* once per round trip */
    s->classic = qk_prague_classic_queue(cc);
    if (s->classic) { /* classic-ECN bottleneck: RFC 3168 response */
        qk_newreno_loss(cc, sent_time, true, now, &acc);
        s->ai_frac_bytes = 0;
        return;
    }
    cc->recovery_start_time = now;
    cc->in_recovery = true;
    cc->congestion_events++;
    /* RFC 8257 §3.5: cwnd * (1 - alpha / 2). */
    uint64_t w = (uint64_t)((double)cc->cwnd_bytes * (1.0 - s->alpha / 2.0));
    if (w < qk_cc_min_window(cc)) w = qk_cc_min_window(cc);
    cc->cwnd_bytes = w;
    cc->ssthresh_bytes = w;
    s->ai_frac_bytes = 0;
    qk_cc_update_state(cc, false);
}

static void prague_on_persistent_congestion(qk_cc *cc, qk_time now)
{
    uint64_t acc = 0;
    (void)now;
    qk_newreno_persistent(cc, &acc);
    cc->u.prague.ai_frac_bytes = 0;
}

const qk_cc_ops qk_cc_prague_ops = {
    .name = "prague",
    .reset = prague_reset,
    .on_packet_sent = prague_on_packet_sent,
    .on_packet_acked = prague_on_packet_acked,
    .on_congestion_event = prague_on_congestion_event,
    .on_ecn = prague_on_ecn,
    .on_persistent_congestion = prague_on_persistent_congestion,
    .on_spurious_loss = NULL,
};
