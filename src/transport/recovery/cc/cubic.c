/* SPDX-License-Identifier: MIT */
/* CUBIC congestion control, RFC 9438, with HyStart++ slow start (RFC 9406).
 *
 * RFC 9438 states its formulas in segments; the window is kept in bytes, so
 * C is scaled by max_datagram_size wherever a window appears:
 *   W_cubic(t) [bytes] = C * mds * (t - K)^3 + W_max [bytes]
 *   K [s]              = cbrt((W_max - cwnd_epoch) [bytes] / (C * mds)) */
#include "transport/recovery/cc/cc.h"
#include <math.h>

#define CUBIC_C        0.4 /* RFC 9438 §5.1 */
#define CUBIC_BETA     0.7 /* RFC 9438 §4.6 beta_cubic */
#define CUBIC_ALPHA    (3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)) /* RFC 9438 §4.3 */
#define CUBIC_MAX_GROW 1.5 /* RFC 9438 §4.2: target at most 1.5 * cwnd */

/* HyStart++ constants, RFC 9406 §4.3. */
#define HS_MIN_RTT_THRESH_NS (4 * QK_NS_PER_MS)
#define HS_MAX_RTT_THRESH_NS (16 * QK_NS_PER_MS)
#define HS_MIN_RTT_DIVISOR   8
#define HS_N_RTT_SAMPLE      8
#define HS_CSS_GROWTH_DIV    4
#define HS_CSS_ROUNDS        5

static double mds(const qk_cc *cc)
{
    return (double)cc->max_datagram_bytes;
}

static void cubic_reset(qk_cc *cc, qk_time now)
{
    (void)now;
    qk_cc_reset_common(cc);
    cc->u.cubic.hs_last_round_min_rtt_ns = QK_TIME_INFINITE;
    cc->u.cubic.hs_current_round_min_rtt_ns = QK_TIME_INFINITE;
}

static void cubic_on_packet_sent(qk_cc *cc, uint64_t bytes, qk_time now)
{
    (void)bytes;
    cc->u.cubic.hs_last_sent = now;
}

/* W_cubic(t), RFC 9438 §4.2 eq. 1, in bytes. */
static double w_cubic_bytes(const qk_cc *cc, double t_s)
{
    double d = t_s - cc->u.cubic.k_s;
    return CUBIC_C * mds(cc) * d * d * d + cc->u.cubic.w_max_bytes;
}

/* Add a fractional byte increment, carrying the remainder. */
static void grow(qk_cc *cc, double inc_bytes)
{
    if (inc_bytes <= 0) return;
    double total = inc_bytes + cc->u.cubic.frac_bytes;
    double whole = floor(total);
    cc->u.cubic.frac_bytes = total - whole;
    cc->cwnd_bytes += (uint64_t)whole;
}

/* HyStart++ (RFC 9406 §4.2): track per-round minimum RTTs; leave slow start
 * for a conservative phase when the RTT rises, and for CA after CSS_ROUNDS. */
static void hystart_on_ack(qk_cc *cc, const qk_cc_ack *ack)
{
    struct qk_cc_cubic_state *c = &cc->u.cubic;
    if (ack->sent_time > c->hs_round_end) { /* a round ended: start the next */
        c->hs_round_end = c->hs_last_sent > ack->now ? c->hs_last_sent : ack->now;
        c->hs_last_round_min_rtt_ns = c->hs_current_round_min_rtt_ns;
        c->hs_current_round_min_rtt_ns = QK_TIME_INFINITE;
        c->hs_rtt_samples = 0;
        c->hs_sample_valid = false;
        if (c->hystart_css && ++c->hs_css_rounds >= HS_CSS_ROUNDS) {
            /* RFC 9406 §4.2: CSS lasted CSS_ROUNDS rounds; enter CA. */
            c->hystart_css = false;
            cc->ssthresh_bytes = cc->cwnd_bytes;
            return;
        }
    }
    if (ack->latest_rtt_ns && ack->latest_rtt_ns < c->hs_current_round_min_rtt_ns)
        c->hs_current_round_min_rtt_ns = ack->latest_rtt_ns;
    /* RFC 9406 §4.2 counts one RTT sample per arriving ACK; recovery calls
     * us once per acked packet with the same time for one ACK frame, whose
     * packets share the frame's single RTT sample (RFC 9002 §5.1). */
    if (!c->hs_sample_valid || ack->now != c->hs_sample_t) c->hs_rtt_samples++;
    c->hs_sample_t = ack->now;
    c->hs_sample_valid = true;
    if (c->hs_rtt_samples < HS_N_RTT_SAMPLE) return;
    if (!c->hystart_css) {
        if (c->hs_last_round_min_rtt_ns == QK_TIME_INFINITE ||
            c->hs_current_round_min_rtt_ns == QK_TIME_INFINITE)
            return;
        qk_time thresh = c->hs_last_round_min_rtt_ns / HS_MIN_RTT_DIVISOR;
        if (thresh < HS_MIN_RTT_THRESH_NS) thresh = HS_MIN_RTT_THRESH_NS;
        if (thresh > HS_MAX_RTT_THRESH_NS) thresh = HS_MAX_RTT_THRESH_NS;
        if (c->hs_current_round_min_rtt_ns >= c->hs_last_round_min_rtt_ns + thresh) {
            c->hystart_css = true; /* RFC 9406 §4.2: enter CSS */
            c->hs_css_rounds = 0;
            c->hs_css_baseline_min_rtt_ns = c->hs_current_round_min_rtt_ns;
        }
    } else if (c->hs_current_round_min_rtt_ns < c->hs_css_baseline_min_rtt_ns) {
        c->hystart_css = false; /* RFC 9406 §4.2: spurious exit, back to slow start */
    }
}

static void start_epoch(qk_cc *cc, qk_time now)
{
    struct qk_cc_cubic_state *c = &cc->u.cubic;
    c->in_epoch = true;
    c->epoch_start = now;
    c->cwnd_epoch_bytes = (double)cc->cwnd_bytes;
    c->w_est_bytes = (double)cc->cwnd_bytes; /* RFC 9438 §4.3: W_est = cwnd_epoch */
    c->bytes_acked = 0;
    if (c->w_max_bytes < c->cwnd_epoch_bytes) {
        /* No loss yet (slow start left by HyStart++ or ssthresh), or the
         * window already passed W_max: plateau here (RFC 9438 §4.10). */
        c->w_max_bytes = c->cwnd_epoch_bytes;
        c->k_s = 0;
    } else {
        /* RFC 9438 §4.2 eq. 2 */
        c->k_s = cbrt((c->w_max_bytes - c->cwnd_epoch_bytes) / (CUBIC_C * mds(cc)));
    }
    if (c->cwnd_prior_bytes == 0) c->cwnd_prior_bytes = c->cwnd_epoch_bytes;
}

static void cubic_congestion_avoidance(qk_cc *cc, const qk_cc_ack *ack)
{
    struct qk_cc_cubic_state *c = &cc->u.cubic;
    if (!c->in_epoch) start_epoch(cc, ack->now);
    double cwnd = (double)cc->cwnd_bytes;
    double t_s = (double)(ack->now - c->epoch_start) / (double)QK_NS_PER_S;
    double rtt_s = (double)ack->smoothed_rtt_ns / (double)QK_NS_PER_S;

    /* RFC 9438 §4.3: Reno-friendly estimate; alpha becomes 1 once W_est
     * reaches the window before the last reduction. */
    double alpha = c->w_est_bytes >= c->cwnd_prior_bytes ? 1.0 : CUBIC_ALPHA;
    c->w_est_bytes += alpha * mds(cc) * (double)ack->bytes / cwnd;

    if (w_cubic_bytes(cc, t_s) < c->w_est_bytes) {
        /* Reno-friendly region (RFC 9438 §4.3): cwnd = W_est. */
        if (c->w_est_bytes > cwnd) grow(cc, c->w_est_bytes - cwnd);
        return;
    }
    /* RFC 9438 §4.2: target = W_cubic(t + RTT) clamped to [cwnd, 1.5 cwnd];
     * concave (§4.4) and convex (§4.5) regions both grow by
     * (target - cwnd) / cwnd segments per acknowledged segment. */
    double target = w_cubic_bytes(cc, t_s + rtt_s);
    if (target < cwnd) target = cwnd;
    if (target > CUBIC_MAX_GROW * cwnd) target = CUBIC_MAX_GROW * cwnd;
    grow(cc, (target - cwnd) * (double)ack->bytes / cwnd);
}

static void cubic_on_packet_acked(qk_cc *cc, const qk_cc_ack *ack)
{
    qk_cc_delivered_on_ack(cc, ack);
    if (cc->in_recovery) {
        if (qk_cc_in_recovery_period(cc, ack->sent_time)) {
            qk_cc_update_state(cc, false);
            return;
        }
        cc->in_recovery = false; /* RFC 9002 §7.3.2 */
    }
    struct qk_cc_cubic_state *c = &cc->u.cubic;
    /* RFC 9406 §4.2: HyStart++ rounds and RTT samples follow every ACK in
     * slow start, app-limited or not (only the growth below is gated). */
    bool hs_done = false;
    if (cc->cwnd_bytes < cc->ssthresh_bytes) {
        hystart_on_ack(cc, ack);
        hs_done = true;
    }
    if (ack->app_limited) { /* RFC 9438 §5.8, RFC 9002 §7.8: no growth */
        if (!c->app_limited) {
            c->app_limited = true;
            c->app_limited_since = ack->now;
        }
        qk_cc_update_state(cc, true);
        return;
    }
    if (c->app_limited) {
        /* RFC 9438 §5.8: t excludes the time the window was not used. */
        c->app_limited = false;
        if (c->in_epoch && ack->now > c->app_limited_since)
            c->epoch_start += ack->now - c->app_limited_since;
    }
    if (cc->cwnd_bytes < cc->ssthresh_bytes) {
        if (!hs_done) hystart_on_ack(cc, ack);
        if (cc->cwnd_bytes < cc->ssthresh_bytes) {
            /* RFC 9438 §4.10 / RFC 9406 §4.2: slow start, slowed by CSS. */
            uint64_t inc = ack->bytes;
            if (cc->u.cubic.hystart_css) inc /= HS_CSS_GROWTH_DIV;
            cc->cwnd_bytes += inc;
        }
    } else {
        cubic_congestion_avoidance(cc, ack);
    }
    qk_cc_update_state(cc, false);
}

static void cubic_on_congestion_event(qk_cc *cc, qk_time sent_time, bool is_ecn, qk_time now)
{
    struct qk_cc_cubic_state *c = &cc->u.cubic;
    /* RFC 9438 §4.6: same response to loss and ECN-CE; a CE response is never undone. */
    if (qk_cc_in_recovery_period(cc, sent_time)) return;
    /* Save what §4.9 needs to undo a spurious reduction. */
    c->undo.valid = !is_ecn;
    c->undo.cwnd_bytes = cc->cwnd_bytes;
    c->undo.ssthresh_bytes = cc->ssthresh_bytes;
    c->undo.w_max_bytes = c->w_max_bytes;
    c->undo.k_s = c->k_s;
    c->undo.epoch_start = c->epoch_start;
    c->undo.in_epoch = c->in_epoch;
    c->undo.w_est_bytes = c->w_est_bytes;
    c->undo.cwnd_prior_bytes = c->cwnd_prior_bytes;
    c->undo.cwnd_epoch_bytes = c->cwnd_epoch_bytes;
    c->undo.recovery_start_time = cc->recovery_start_time;

    cc->recovery_start_time = now;
    cc->in_recovery = true;
    cc->congestion_events++;
    c->frac_bytes = 0;
    c->hystart_css = false;
    if (qk_cc_early_loss(cc, sent_time, is_ecn)) {
        /* Handshake-time loss (cc.h): cwnd * beta, stay in slow start. */
        uint64_t w = (uint64_t)((double)cc->cwnd_bytes * CUBIC_BETA);
        cc->cwnd_bytes = w > qk_cc_min_window(cc) ? w : qk_cc_min_window(cc);
        qk_cc_update_state(cc, false);
        return;
    }
    /* RFC 9438 §4.6 scales the window at the event; on the event that ends
     * slow start that is what the path delivered in the last round trip,
     * not the window that doubled while the queue overflowed
     * (qk_cc_reduction_base), so W_max, cwnd_prior and ssthresh all start
     * from the path's capacity and one reduction suffices. */
    double cwnd = (double)qk_cc_reduction_base(cc);
    c->cwnd_prior_bytes = cwnd;
    /* RFC 9438 §4.7 fast convergence: release bandwidth when W_max shrinks. */
    if (cwnd < c->w_max_bytes)
        c->w_max_bytes = cwnd * (1.0 + CUBIC_BETA) / 2.0;
    else
        c->w_max_bytes = cwnd;
    /* RFC 9438 §4.6: ssthresh = cwnd * beta; RFC 9002 §7.2 minimum window. */
    uint64_t ss = (uint64_t)(cwnd * CUBIC_BETA);
    if (ss < qk_cc_min_window(cc)) ss = qk_cc_min_window(cc);
    cc->ssthresh_bytes = ss;
    cc->cwnd_bytes = ss;
    c->in_epoch = false; /* the next CA ack starts a new epoch */
    qk_cc_update_state(cc, false);
}

static void cubic_on_persistent_congestion(qk_cc *cc, qk_time now)
{
    /* RFC 9002 §7.6.2: minimum window; RFC 9438 §4.8: restart the epoch;
     * packets sent before now do not grow it (qk_cc_persistent_recovery). */
    cc->cwnd_bytes = qk_cc_min_window(cc);
    qk_cc_persistent_recovery(cc, now);
    cc->u.cubic.in_epoch = false;
    cc->u.cubic.undo.valid = false;
    cc->u.cubic.frac_bytes = 0;
    qk_cc_update_state(cc, false);
}

static void cubic_on_spurious_loss(qk_cc *cc, qk_time now)
{
    struct qk_cc_cubic_state *c = &cc->u.cubic;
    (void)now;
    if (!c->undo.valid) return;
    /* RFC 9438 §4.9: restore the state saved before the reduction. */
    if (c->undo.cwnd_bytes > cc->cwnd_bytes) cc->cwnd_bytes = c->undo.cwnd_bytes;
    cc->ssthresh_bytes = c->undo.ssthresh_bytes;
    c->w_max_bytes = c->undo.w_max_bytes;
    c->k_s = c->undo.k_s;
    c->epoch_start = c->undo.epoch_start;
    c->in_epoch = c->undo.in_epoch;
    c->w_est_bytes = c->undo.w_est_bytes;
    c->cwnd_prior_bytes = c->undo.cwnd_prior_bytes;
    c->cwnd_epoch_bytes = c->undo.cwnd_epoch_bytes;
    c->undo.valid = false;
    qk_cc_undo_recovery(cc, c->undo.recovery_start_time);
    qk_cc_update_state(cc, false);
}

static void cubic_on_ecn(qk_cc *cc, uint64_t ce_delta_pkts, uint64_t acked_bytes, qk_time now)
{
    /* Classic ECN: the reaction is on_congestion_event(is_ecn = true). */
    (void)cc;
    (void)ce_delta_pkts;
    (void)acked_bytes;
    (void)now;
}

static void cubic_probe(const qk_cc *cc, qk_cc_probe *out)
{
    const struct qk_cc_cubic_state *cs = &cc->u.cubic;
    out->cubic = true;
    out->cubic_in_epoch = cs->in_epoch;
    out->cubic_epoch_start = cs->epoch_start;
    out->cubic_w_max_bytes = cs->w_max_bytes;
    out->cubic_k_s = cs->k_s;
    out->cubic_w_est_bytes = cs->w_est_bytes;
}

const qk_cc_ops qk_cc_cubic_ops = {
    .name = "cubic",
    .reset = cubic_reset,
    .on_packet_sent = cubic_on_packet_sent,
    .on_packet_acked = cubic_on_packet_acked,
    .on_congestion_event = cubic_on_congestion_event,
    .on_ecn = cubic_on_ecn,
    .on_persistent_congestion = cubic_on_persistent_congestion,
    .on_spurious_loss = cubic_on_spurious_loss,
    .probe = cubic_probe,
};
