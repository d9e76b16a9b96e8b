/* SPDX-License-Identifier: MIT */
/* CUBIC (RFC 9438) checked against its formulas, in segments, evaluated
 * independently here; and HyStart++ (RFC 9406). */
#include "qk_test.h"
#include "transport/recovery/cc/cc.h"
#include "cc_ack.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MDS 1200u
#define MS  QK_NS_PER_MS
#define SEC QK_NS_PER_S

static const double C = 0.4, BETA = 0.7;

/* W_cubic(t) in segments, RFC 9438 eq. 1 and 2 (cwnd_epoch = beta * W_max). */
static double w_cubic_seg(double w_max_seg, double t_s)
{
    double k = cbrt(w_max_seg * (1 - BETA) / C);
    return C * pow(t_s - k, 3) + w_max_seg;
}

/* After a loss at W_max, ack one window per RTT (acks spread evenly over the
 * RTT, each for a packet sent one RTT earlier); call check(t since epoch). */
typedef struct {
    double t_s;
    double cwnd_seg;
    bool seen;
} sample;

static qk_time drive(qk_cc *cc, qk_time t_loss, qk_time rtt, double until_s, sample *smp,
                     size_t nsmp)
{
    qk_time t = t_loss + 1;
    qk_time epoch = 0;
    bool in_epoch = false;
    while (!in_epoch || (double)(t - epoch) / SEC < until_s) {
        uint64_t n = cc->cwnd_bytes / MDS;
        for (uint64_t i = 0; i < n; i++) {
            qk_time now = t + i * rtt / n;
            qk_time sent = now - rtt;
            if (!in_epoch && sent > t_loss) {
                in_epoch = true; /* the first CA ack starts the epoch (RFC 9438 §4.2) */
                epoch = now;
            }
            for (size_t k = 0; k < nsmp && in_epoch; k++) {
                if (!smp[k].seen && (double)(now - epoch) / SEC >= smp[k].t_s) {
                    smp[k].seen = true;
                    smp[k].cwnd_seg = (double)cc->cwnd_bytes / MDS;
                }
            }
            qk_test_cc_ack(cc, now, sent, MDS, rtt);
        }
        t += rtt;
    }
    return epoch;
}

static void test_cubic_curve(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, MDS, 0), 0);
    const double w_max = 200; /* segments */
    cc.cwnd_bytes = (uint64_t)w_max * MDS;
    qk_time t_loss = 10 * SEC;
    cc.ops->on_congestion_event(&cc, t_loss - 1, false, t_loss);
    assert_int_equal(cc.cwnd_bytes, (uint64_t)(w_max * BETA * MDS)); /* RFC 9438 §4.6 */
    assert_int_equal(cc.ssthresh_bytes, cc.cwnd_bytes);

    const double k = cbrt(w_max * (1 - BETA) / C); /* 5.313 s */
    sample smp[] = {{0.5, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0},
                    {4, 0, 0},   {k, 0, 0}, {6, 0, 0}, {7, 0, 0}};
    const size_t n = sizeof smp / sizeof smp[0];
    drive(&cc, t_loss, 100 * MS, 7.2, smp, n);
    assert_true(fabs(cc.u.cubic.k_s - k) < 1e-9);
    for (size_t i = 0; i < n; i++) {
        assert_true(smp[i].seen);
        double want = w_cubic_seg(w_max, smp[i].t_s);
        double err = fabs(smp[i].cwnd_seg - want) / want;
        /* cwnd chases W_cubic(t + RTT) one RTT behind: within 2 %. */
        if (err > 0.02)
            fail_msg("t=%.3f cwnd=%.2f seg, W_cubic=%.2f seg", smp[i].t_s, smp[i].cwnd_seg, want);
    }
    /* At t = K the window is back at W_max (plateau), within 1 %. */
    assert_true(fabs(smp[5].cwnd_seg - w_max) / w_max < 0.01);
    assert_int_equal(cc.state, QK_CC_CONGESTION_AVOIDANCE);
}

static void test_cubic_reno_friendly(void **state)
{
    (void)state;
    /* Short RTT: W_est grows alpha_cubic segments per RTT, faster than the
     * cubic curve's start, so cwnd follows W_est (RFC 9438 §4.3). */
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, MDS, 0), 0);
    const double w_max = 100, alpha = 3 * (1 - BETA) / (1 + BETA);
    cc.cwnd_bytes = (uint64_t)w_max * MDS;
    qk_time t_loss = SEC, rtt = 10 * MS;
    cc.ops->on_congestion_event(&cc, t_loss - 1, false, t_loss);
    sample smp[] = {{0.1, 0, 0}, {0.2, 0, 0}, {0.4, 0, 0}};
    drive(&cc, t_loss, rtt, 0.45, smp, 3);
    for (size_t i = 0; i < 3; i++) {
        double rounds = smp[i].t_s * SEC / (double)rtt;
        double w_est = w_max * BETA + alpha * rounds;
        assert_true(w_est > w_cubic_seg(w_max, smp[i].t_s)); /* the region premise */
        if (fabs(smp[i].cwnd_seg - w_est) > 1.0)
            fail_msg("t=%.2f cwnd=%.2f W_est=%.2f", smp[i].t_s, smp[i].cwnd_seg, w_est);
    }
}

static void test_cubic_fast_convergence_and_clamp(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, MDS, 0), 0);
    cc.cwnd_bytes = 100 * MDS;
    cc.ops->on_congestion_event(&cc, 0, false, SEC); /* W_max = 100 seg */
    assert_true(cc.u.cubic.w_max_bytes == 100.0 * MDS);
    /* Second loss below W_max: W_max = cwnd * (1 + beta) / 2 (§4.7). */
    qk_test_cc_ack(&cc, 2 * SEC, SEC + 1, MDS, 100 * MS); /* leaves recovery, starts an epoch */
    uint64_t cw = cc.cwnd_bytes;
    cc.ops->on_congestion_event(&cc, 2 * SEC, false, 3 * SEC);
    assert_true(fabs(cc.u.cubic.w_max_bytes - cw * (1 + BETA) / 2) < 1e-6);
    assert_int_equal(cc.cwnd_bytes, (uint64_t)(cw * BETA));
    /* K uses cwnd_epoch: cbrt((W_max - cwnd_epoch) / C) in segments. */
    qk_test_cc_ack(&cc, 4 * SEC, 3 * SEC + 1, MDS, 100 * MS);
    double k = cbrt((cw * (1 + BETA) / 2 / MDS - (double)(uint64_t)(cw * BETA) / MDS) / C);
    assert_true(fabs(cc.u.cubic.k_s - k) < 1e-3);
    /* Far beyond K the target is clamped at 1.5 cwnd (§4.2): acking one
     * window grows it by exactly half a window. */
    uint64_t w = cc.cwnd_bytes, n = (w + MDS - 1) / MDS;
    for (uint64_t i = 0; i < n; i++) qk_test_cc_ack(&cc, 100 * SEC, 99 * SEC, MDS, 100 * MS);
    assert_true(llabs((long long)cc.cwnd_bytes - (long long)(w + n * MDS / 2)) <= 1);
}

static void test_cubic_spurious_undo(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, MDS, 0), 0);
    cc.cwnd_bytes = 80 * MDS;
    cc.ops->on_congestion_event(&cc, 0, false, SEC);
    assert_int_equal(cc.cwnd_bytes, 56 * MDS);
    assert_int_equal(cc.ssthresh_bytes, 56 * MDS);
    cc.ops->on_spurious_loss(&cc, SEC + 10 * MS);
    assert_int_equal(cc.cwnd_bytes, 80 * MDS);
    assert_true(cc.ssthresh_bytes == UINT64_MAX);
    assert_false(cc.in_recovery);
    assert_int_equal(cc.state, QK_CC_SLOW_START);
    /* A second undo without a new reduction does nothing. */
    cc.cwnd_bytes = 90 * MDS;
    cc.ops->on_spurious_loss(&cc, 2 * SEC);
    assert_int_equal(cc.cwnd_bytes, 90 * MDS);
}

static void test_cubic_min_window_persistent_app_limited(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, MDS, 0), 0);
    for (qk_time t = 1; t < 30; t++) cc.ops->on_congestion_event(&cc, t * SEC, true, t * SEC + 1);
    assert_int_equal(cc.cwnd_bytes, 2 * MDS);
    cc.cwnd_bytes = 50 * MDS;
    cc.ops->on_persistent_congestion(&cc, 40 * SEC);
    assert_int_equal(cc.cwnd_bytes, 2 * MDS);
    /* App-limited acks never grow the window. */
    qk_cc_ack a;
    memset(&a, 0, sizeof a);
    a.now = 50 * SEC;
    a.sent_time = 49 * SEC;
    a.bytes = MDS;
    a.smoothed_rtt_ns = 100 * MS;
    a.app_limited = true;
    for (int i = 0; i < 100; i++) cc.ops->on_packet_acked(&cc, &a);
    assert_int_equal(cc.cwnd_bytes, 2 * MDS);
}

static void test_cubic_app_limited_pause(void **state)
{
    (void)state;
    /* RFC 9438 §5.8: an app-limited pause must not advance t. Drive 1 s of
     * CA after a loss at W_max = 200, then 5 s of app-limited acks, then one
     * normal ack: its growth must be what t ~ 1.1 s gives (a few bytes), not
     * the 1.5 * cwnd clamp that t = 6 s > K = 5.3 s would give (600 bytes). */
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, MDS, 0), 0);
    cc.cwnd_bytes = 200 * MDS;
    qk_time t_loss = 10 * SEC, rtt = 100 * MS;
    cc.ops->on_congestion_event(&cc, t_loss - 1, false, t_loss);
    qk_time epoch = drive(&cc, t_loss, rtt, 1.0, NULL, 0);
    qk_time now = epoch + SEC + rtt;
    qk_cc_ack a;
    memset(&a, 0, sizeof a);
    a.bytes = MDS;
    a.smoothed_rtt_ns = a.latest_rtt_ns = a.min_rtt_ns = rtt;
    a.app_limited = true;
    for (int i = 0; i < 50; i++) {
        a.now = now + (qk_time)i * 100 * MS;
        a.sent_time = a.now - rtt;
        cc.ops->on_packet_acked(&cc, &a);
    }
    assert_int_equal(cc.state, QK_CC_APP_LIMITED);
    uint64_t before = cc.cwnd_bytes;
    a.app_limited = false;
    a.now = now + 5 * SEC;
    a.sent_time = a.now - rtt;
    cc.ops->on_packet_acked(&cc, &a);
    assert_true(cc.cwnd_bytes - before < 100);
    assert_int_equal(cc.state, QK_CC_CONGESTION_AVOIDANCE);
}

/* One slow-start round: send n packets at T (1 ns apart), ack them rtt later. */
static void ss_round(qk_cc *cc, qk_time T, qk_time rtt, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) cc->ops->on_packet_sent(cc, MDS, T + i);
    for (uint64_t i = 0; i < n; i++) qk_test_cc_ack(cc, T + i + rtt, T + i, MDS, rtt);
}

static void test_hystart(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, MDS, 0), 0);
    qk_time T = SEC;
    ss_round(&cc, T, 50 * MS, 10); /* 12000 -> 24000 */
    T += SEC;
    ss_round(&cc, T, 50 * MS, 20); /* -> 48000 */
    assert_int_equal(cc.cwnd_bytes, 48000);
    assert_false(cc.u.cubic.hystart_css);
    /* RTT rises by 10 ms >= max(4 ms, 50/8 ms): CSS after N_RTT_SAMPLE = 8
     * samples (the 8th ack already grows at the CSS rate); the remaining
     * acks grow cwnd by 1/4 of the acked bytes (RFC 9406 §4.2). */
    T += SEC;
    ss_round(&cc, T, 60 * MS, 20);
    assert_true(cc.u.cubic.hystart_css);
    assert_int_equal(cc.cwnd_bytes, 48000 + 7 * MDS + 13 * MDS / 4);
    /* CSS rounds 1..4 grow by acked / 4; at the 5th round CA begins. */
    for (int r = 1; r <= 4; r++) {
        uint64_t before = cc.cwnd_bytes;
        T += SEC;
        ss_round(&cc, T, 60 * MS, 16);
        assert_int_equal(cc.cwnd_bytes, before + 16 * MDS / 4);
        assert_true(cc.cwnd_bytes < cc.ssthresh_bytes);
    }
    T += SEC;
    uint64_t before = cc.cwnd_bytes;
    qk_test_cc_ack(&cc, T + 60 * MS, T, MDS, 60 * MS); /* first ack of CSS round 5 */
    assert_false(cc.u.cubic.hystart_css);
    assert_int_equal(cc.ssthresh_bytes, before);
    assert_int_equal(cc.state, QK_CC_CONGESTION_AVOIDANCE);
}

static void test_hystart_spurious_css_exit(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, MDS, 0), 0);
    ss_round(&cc, SEC, 50 * MS, 10);
    ss_round(&cc, 2 * SEC, 50 * MS, 20);
    ss_round(&cc, 3 * SEC, 70 * MS, 20);
    assert_true(cc.u.cubic.hystart_css);
    /* RTT falls below the CSS baseline: back to full slow start. */
    ss_round(&cc, 4 * SEC, 55 * MS, 20);
    assert_false(cc.u.cubic.hystart_css);
    uint64_t before = cc.cwnd_bytes;
    ss_round(&cc, 5 * SEC, 55 * MS, 10);
    assert_int_equal(cc.cwnd_bytes, before + 10 * MDS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cubic_curve),
        cmocka_unit_test(test_cubic_reno_friendly),
        cmocka_unit_test(test_cubic_fast_convergence_and_clamp),
        cmocka_unit_test(test_cubic_spurious_undo),
        cmocka_unit_test(test_cubic_min_window_persistent_app_limited),
        cmocka_unit_test(test_cubic_app_limited_pause),
        cmocka_unit_test(test_hystart),
        cmocka_unit_test(test_hystart_spurious_css_exit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
