/* SPDX-License-Identifier: MIT */
/* NewReno congestion control, RFC 9002 §7 and Appendix B. */
#include "transport/recovery/cc/cc.h"

#define QK_LOSS_REDUCTION_NUM 1 /* kLossReductionFactor 0.5 (RFC 9002 §7.7 / B.2) */
#define QK_LOSS_REDUCTION_DEN 2

static void newreno_reset(qk_cc *cc, qk_time now)
{
    (void)now;
    qk_cc_reset_common(cc);
}

static void newreno_on_packet_sent(qk_cc *cc, uint64_t bytes, qk_time now)
{
    (void)cc;
    (void)bytes;
    (void)now;
}

void qk_newreno_ack(qk_cc *cc, const qk_cc_ack *ack, uint64_t *ca_acc_bytes)
{
    qk_cc_delivered_on_ack(cc, ack);
    /* RFC 9002 B.5: no growth for packets sent during the recovery period. */
    if (cc->in_recovery) {
        if (qk_cc_in_recovery_period(cc, ack->sent_time)) {
            qk_cc_update_state(cc, false);
            return;
        }
        /* RFC 9002 §7.3.2: recovery ends when a packet sent after its
         * start is acknowledged. */
        cc->in_recovery = false;
    }
    /* RFC 9002 §7.8: do not grow when the window was not the limit. */
    if (ack->app_limited) {
        qk_cc_update_state(cc, true);
        return;
    }
    if (cc->cwnd_bytes < cc->ssthresh_bytes) {
        cc->cwnd_bytes += ack->bytes; /* RFC 9002 §7.3.1 slow start */
    } else {
        /* RFC 9002 §7.3.3: one max_datagram_size per window acknowledged. */
        *ca_acc_bytes += ack->bytes;
        while (*ca_acc_bytes >= cc->cwnd_bytes) {
            *ca_acc_bytes -= cc->cwnd_bytes;
            cc->cwnd_bytes += cc->max_datagram_bytes;
        }
    }
    qk_cc_update_state(cc, false);
}

void qk_newreno_loss(qk_cc *cc, qk_time sent_time, bool is_ecn, qk_time now, uint64_t *ca_acc_bytes)
{
    if (qk_cc_in_recovery_period(cc, sent_time)) return;
    cc->recovery_start_time = now;
    cc->in_recovery = true;
    cc->congestion_events++;
    *ca_acc_bytes = 0;
    if (qk_cc_early_loss(cc, sent_time, is_ecn)) {
        /* Handshake-time loss: halve the window, stay in slow start. */
        uint64_t w = cc->cwnd_bytes * QK_LOSS_REDUCTION_NUM / QK_LOSS_REDUCTION_DEN;
        cc->cwnd_bytes = w > qk_cc_min_window(cc) ? w : qk_cc_min_window(cc);
        qk_cc_update_state(cc, false);
        return;
    }
    /* RFC 9002 §7.3.2 / B.6: ssthresh = cwnd * kLossReductionFactor, where
     * the event that ends slow start scales what the path delivered in the
     * last round trip instead of the doubled window (qk_cc_reduction_base). */
    uint64_t base = qk_cc_reduction_base(cc);
    cc->ssthresh_bytes = base * QK_LOSS_REDUCTION_NUM / QK_LOSS_REDUCTION_DEN;
    /* RFC 9002 B.6: cwnd = max(ssthresh, kMinimumWindow) */
    cc->cwnd_bytes =
        cc->ssthresh_bytes > qk_cc_min_window(cc) ? cc->ssthresh_bytes : qk_cc_min_window(cc);
    qk_cc_update_state(cc, false);
}

void qk_newreno_persistent(qk_cc *cc, uint64_t *ca_acc_bytes)
{
    /* RFC 9002 §7.6.2 / B.8: collapse to the minimum window. */
    cc->cwnd_bytes = qk_cc_min_window(cc);
    cc->recovery_start_time = 0;
    cc->in_recovery = false;
    *ca_acc_bytes = 0;
    qk_cc_update_state(cc, false);
}

static void newreno_on_packet_acked(qk_cc *cc, const qk_cc_ack *ack)
{
    qk_newreno_ack(cc, ack, &cc->u.reno.bytes_acked);
}

static void newreno_on_congestion_event(qk_cc *cc, qk_time sent_time, bool is_ecn, qk_time now)
{
    /* RFC 9002 §7.3.2: loss and ECN-CE react the same way; only a loss
     * response can later prove spurious (a CE mark is never undone). */
    if (!qk_cc_in_recovery_period(cc, sent_time)) {
        cc->u.reno.undo_valid = !is_ecn;
        cc->u.reno.undo_cwnd_bytes = cc->cwnd_bytes;
        cc->u.reno.undo_ssthresh_bytes = cc->ssthresh_bytes;
        cc->u.reno.undo_recovery_start_time = cc->recovery_start_time;
    }
    qk_newreno_loss(cc, sent_time, is_ecn, now, &cc->u.reno.bytes_acked);
}

/* Every loss behind the last reduction was acknowledged late (recovery.c):
 * restore the window and threshold from before it (as RFC 9438 §4.9 does
 * for CUBIC). */
static void newreno_on_spurious_loss(qk_cc *cc, qk_time now)
{
    (void)now;
    if (!cc->u.reno.undo_valid) return;
    cc->u.reno.undo_valid = false;
    if (cc->u.reno.undo_cwnd_bytes > cc->cwnd_bytes) cc->cwnd_bytes = cc->u.reno.undo_cwnd_bytes;
    cc->ssthresh_bytes = cc->u.reno.undo_ssthresh_bytes;
    qk_cc_undo_recovery(cc, cc->u.reno.undo_recovery_start_time);
    qk_cc_update_state(cc, false);
}

static void newreno_on_persistent_congestion(qk_cc *cc, qk_time now)
{
    cc->u.reno.undo_valid = false;
    qk_newreno_persistent(cc, &cc->u.reno.bytes_acked);
    qk_cc_persistent_recovery(cc, now);
    qk_cc_update_state(cc, false);
}

static void newreno_on_ecn(qk_cc *cc, uint64_t ce_delta_pkts, uint64_t acked_bytes, qk_time now)
{
    /* Classic ECN: the reaction is on_congestion_event(is_ecn = true). */
    (void)cc;
    (void)ce_delta_pkts;
    (void)acked_bytes;
    (void)now;
}

const qk_cc_ops qk_cc_newreno_ops = {
    .name = "newreno",
    .reset = newreno_reset,
    .on_packet_sent = newreno_on_packet_sent,
    .on_packet_acked = newreno_on_packet_acked,
    .on_congestion_event = newreno_on_congestion_event,
    .on_ecn = newreno_on_ecn,
    .on_persistent_congestion = newreno_on_persistent_congestion,
    .on_spurious_loss = newreno_on_spurious_loss,
};
