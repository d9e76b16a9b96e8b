/* SPDX-License-Identifier: MIT */
/* DCTCP (RFC 8257) for QUIC: a per-round EWMA of the fraction of CE-marked
 * bytes, alpha, and a window cut of alpha / 2 at most once per round trip
 * when marks arrive. Loss falls back to the NewReno response; growth is
 * NewReno's. A first version for ECN/L4S experiments. */
#include "transport/recovery/cc/cc.h"

#define DCTCP_G (1.0 / 16.0) /* RFC 8257 §4.2: estimation gain g = 1/16 */

static void dctcp_reset(qk_cc *cc, qk_time now)
{
    qk_cc_reset_common(cc);
    cc->u.dctcp.alpha = 1.0; /* RFC 8257 §3.3: start conservatively at 1 */
    cc->u.dctcp.round_end = now;
}

static void dctcp_on_packet_sent(qk_cc *cc, uint64_t bytes, qk_time now)
{
    (void)cc;
    (void)bytes;
    (void)now;
}

double qk_cc_ecn_alpha(double alpha, double g, uint64_t ce_bytes, uint64_t acked_bytes)
{
    if (acked_bytes == 0) return alpha; /* nothing acknowledged: no new estimate */
    uint64_t ce = ce_bytes < acked_bytes ? ce_bytes : acked_bytes;
    double f = (double)ce / (double)acked_bytes;
    return (1.0 - g) * alpha + g * f; /* RFC 8257 §3.3 */
}

/* RFC 8257 §3.3: once per round, alpha = (1 - g) * alpha + g * F. A round
 * ends when a packet sent after it began is acknowledged. */
static void dctcp_end_round(qk_cc *cc, qk_time now)
{
    struct qk_cc_dctcp_state *d = &cc->u.dctcp;
    d->alpha = qk_cc_ecn_alpha(d->alpha, DCTCP_G, d->ce_bytes_round, d->acked_bytes_round);
    d->acked_bytes_round = 0;
    d->ce_bytes_round = 0;
    d->ce_in_round = false;
    d->round_end = now;
}

static void dctcp_on_packet_acked(qk_cc *cc, const qk_cc_ack *ack)
{
    struct qk_cc_dctcp_state *d = &cc->u.dctcp;
    if (ack->sent_time > d->round_end) dctcp_end_round(cc, ack->now);
    d->acked_bytes_round += ack->bytes; /* the closing ack opens the new round */
    qk_newreno_ack(cc, ack, &d->bytes_acked);
}

static void dctcp_on_ecn(qk_cc *cc, uint64_t ce_delta_pkts, uint64_t acked_bytes, qk_time now)
{
    struct qk_cc_dctcp_state *d = &cc->u.dctcp;
    (void)now;
    if (ce_delta_pkts == 0) return;
    /* QUIC reports CE in packets; approximate bytes with full datagrams,
     * never more than what this ACK acknowledged. */
    uint64_t ce_bytes = ce_delta_pkts * cc->max_datagram_bytes;
    if (acked_bytes > 0 && ce_bytes > acked_bytes) ce_bytes = acked_bytes;
    d->ce_bytes_round += ce_bytes;
    d->ce_in_round = true;
}

static void dctcp_on_congestion_event(qk_cc *cc, qk_time sent_time, bool is_ecn, qk_time now)
{
    if (!is_ecn) { /* loss: the classic halving (RFC 8257 §3.5) */
        qk_newreno_loss(cc, sent_time, false, now, &cc->u.dctcp.bytes_acked);
        return;
    }
    /* RFC 8257 §3.5: cwnd = cwnd * (1 - alpha / 2), once per window of data
     * (the RFC 9002 §7.3.2 recovery period). */
    if (qk_cc_in_recovery_period(cc, sent_time)) return;
    cc->recovery_start_time = now;
    cc->in_recovery = true;
    cc->congestion_events++;
    uint64_t w = (uint64_t)((double)cc->cwnd_bytes * (1.0 - cc->u.dctcp.alpha / 2.0));
    if (w < qk_cc_min_window(cc)) w = qk_cc_min_window(cc);
    cc->cwnd_bytes = w;
    cc->ssthresh_bytes = w;
    cc->u.dctcp.bytes_acked = 0;
    qk_cc_update_state(cc, false);
}

static void dctcp_on_persistent_congestion(qk_cc *cc, qk_time now)
{
    qk_newreno_persistent(cc, &cc->u.dctcp.bytes_acked);
    qk_cc_persistent_recovery(cc, now);
    qk_cc_update_state(cc, false);
}

const qk_cc_ops qk_cc_dctcp_ops = {
    .name = "dctcp",
    .reset = dctcp_reset,
    .on_packet_sent = dctcp_on_packet_sent,
    .on_packet_acked = dctcp_on_packet_acked,
    .on_congestion_event = dctcp_on_congestion_event,
    .on_ecn = dctcp_on_ecn,
    .on_persistent_congestion = dctcp_on_persistent_congestion,
    .on_spurious_loss = NULL,
};
