/* SPDX-License-Identifier: MIT */
/* The congestion event that ends slow start (cc.c qk_cc_reduction_base) and
 * the first-flight loss rule (qk_cc_early_loss), for NewReno and CUBIC.
 *
 * A sender in slow start doubles cwnd every round trip, so when the queue
 * finally overflows cwnd is up to twice what the path carries; scaling that
 * by beta (RFC 9002 §7.3.2, RFC 9438 §4.6) leaves a window still above
 * BDP + queue, and it takes more cuts (more losses) to get under it. The
 * reduction on that event scales what the path delivered during the last
 * round trip instead. Expected values below are arithmetic on the synthetic
 * ack stream, not read back from the implementation. */
#include "qk_test.h"
#include "transport/recovery/cc/cc.h"
#include "cc_ack.h"
#include <string.h>

#define MDS 1200u
#define MS  QK_NS_PER_MS
#define US  QK_NS_PER_US

/* A bottleneck of 100 Mbit/s acks one 1200-byte packet every 96 us; srtt
 * 100 ms. Ack from t = 1 s for `secs` seconds, each packet sent one RTT
 * before its ack. Returns the time of the last ack. cwnd grows by every
 * acked byte (slow start) to far above the 1.25 MB the path delivers per
 * round trip. */
static qk_time saturate(qk_cc *cc, double secs)
{
    qk_time t = QK_NS_PER_S, end = t + (qk_time)(secs * 1e9);
    for (; t < end; t += 96 * US) qk_test_cc_ack(cc, t, t - 100 * MS, MDS, 100 * MS);
    return t - 96 * US;
}

/* Bytes the stream above delivers in 100 ms: 100 ms / 96 us = 1041.67
 * packets. The history has 1/16-RTT (6.25 ms = 65 packets) resolution. */
static const double DLV_RTT_B = 100e6 / 96e3 * MDS;
static const double DLV_TOL_B = 66.0 * MDS;

static void expect_near(double got, double want, double tol)
{
    if (got < want - tol || got > want + tol)
        fail_msg("got %.0f, want %.0f +- %.0f", got, want, tol);
}

static void test_delivered_last_rtt(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    assert_true(qk_cc_delivered_last_rtt(&cc) == UINT64_MAX); /* no history */
    saturate(&cc, 0.05); /* half a round trip: still not enough */
    assert_true(qk_cc_delivered_last_rtt(&cc) == UINT64_MAX);
    saturate(&cc, 0.5);
    expect_near((double)qk_cc_delivered_last_rtt(&cc), DLV_RTT_B, DLV_TOL_B);
}

static void test_newreno_exit_scales_delivered(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    qk_time last = saturate(&cc, 0.3);
    assert_true(cc.cwnd_bytes > 3 * (uint64_t)DLV_RTT_B); /* slow start overshot */
    /* Loss of a packet sent 1 ms before the last ack, found by it. */
    cc.ops->on_congestion_event(&cc, last - 101 * MS, false, last);
    /* RFC 9002 B.6 kLossReductionFactor 0.5 of the delivered window. */
    expect_near((double)cc.ssthresh_bytes, 0.5 * DLV_RTT_B, 0.5 * DLV_TOL_B);
    assert_int_equal(cc.cwnd_bytes, cc.ssthresh_bytes);
    assert_int_equal(cc.state, QK_CC_RECOVERY);
}

static void test_cubic_exit_scales_delivered(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, MDS, 0), 0);
    qk_time last = saturate(&cc, 0.3);
    uint64_t before = cc.cwnd_bytes;
    cc.ops->on_congestion_event(&cc, last - 101 * MS, false, last);
    /* RFC 9438 §4.6 beta_cubic = 0.7 of the delivered window; W_max (§4.7,
     * first loss: no fast convergence) is the delivered window itself. */
    expect_near((double)cc.cwnd_bytes, 0.7 * DLV_RTT_B, 0.7 * DLV_TOL_B);
    expect_near(cc.u.cubic.w_max_bytes, DLV_RTT_B, DLV_TOL_B);
    assert_int_equal(cc.ssthresh_bytes, cc.cwnd_bytes);
    /* A spurious loss restores the window from before the event (§4.9). */
    qk_cc_spurious_loss(&cc, last + MS);
    assert_int_equal(cc.cwnd_bytes, before);
}

/* A loss declared by the time threshold after the ACKs stopped (a lost
 * tail): the delivered window is anchored at the last ack, so the base is
 * still what the path carried, not the near-zero of the quiet period. */
static void test_exit_after_quiet_period(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    qk_time last = saturate(&cc, 0.3);
    cc.ops->on_congestion_event(&cc, last - 50 * MS, false, last + 150 * MS);
    expect_near((double)cc.ssthresh_bytes, 0.5 * DLV_RTT_B, 0.5 * DLV_TOL_B);
}

/* Congestion avoidance: the classic rule, cwnd * beta, whatever was delivered. */
static void test_avoidance_uses_cwnd(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    qk_time last = saturate(&cc, 0.3);
    cc.ops->on_congestion_event(&cc, last - 101 * MS, false, last);
    /* Leave recovery; cwnd 0.5 x delivered, then 2 s of acks at the same rate. */
    uint64_t w = cc.cwnd_bytes;
    qk_time t = last + 96 * US;
    for (int i = 0; i < 20000; i++, t += 96 * US)
        qk_test_cc_ack(&cc, t, t - 100 * MS, MDS, 100 * MS);
    assert_int_equal(cc.state, QK_CC_CONGESTION_AVOIDANCE);
    uint64_t cw = cc.cwnd_bytes;
    assert_true(cw > w);
    cc.ops->on_congestion_event(&cc, t - 50 * MS, false, t);
    assert_int_equal(cc.cwnd_bytes, cw / 2); /* RFC 9002 B.6 */
}

/* A loss of the first flight (sent before the first ack) shrinks cwnd but
 * keeps slow start (RFC 6298 §5.7 / RFC 5681 §3.1 analogue); a CE mark in
 * the same spot ends slow start as usual. */
static void test_first_flight_loss_keeps_slow_start(void **state)
{
    (void)state;
    for (int algo = 0; algo < 2; algo++) {
        qk_cc cc;
        qk_cc_algo a = algo == 0 ? QK_CC_NEWRENO : QK_CC_CUBIC;
        double beta = algo == 0 ? 0.5 : 0.7;
        assert_int_equal(qk_cc_init(&cc, a, MDS, 0), 0);
        /* Found by the very first ACK (RFC 9002 A.7: losses before acks). */
        cc.ops->on_congestion_event(&cc, 1 * MS, false, 60 * MS);
        assert_int_equal(cc.cwnd_bytes, (uint64_t)(12000 * beta));
        assert_true(cc.ssthresh_bytes == UINT64_MAX);
        /* Acks of packets sent after recovery began: slow start again. */
        uint64_t w = cc.cwnd_bytes;
        qk_test_cc_ack(&cc, 120 * MS, 61 * MS, MDS, 50 * MS);
        assert_int_equal(cc.cwnd_bytes, w + MDS);
        assert_int_equal(cc.state, QK_CC_SLOW_START);
        /* A later loss of a packet sent after the first ack ends slow start. */
        cc.ops->on_congestion_event(&cc, 121 * MS, false, 130 * MS);
        assert_true(cc.ssthresh_bytes < UINT64_MAX);

        assert_int_equal(qk_cc_init(&cc, a, MDS, 0), 0);
        qk_test_cc_ack(&cc, 50 * MS, 0, MDS, 50 * MS);             /* first ack at 50 ms */
        cc.ops->on_congestion_event(&cc, 10 * MS, false, 55 * MS); /* sent before it */
        assert_true(cc.ssthresh_bytes == UINT64_MAX);

        assert_int_equal(qk_cc_init(&cc, a, MDS, 0), 0);
        cc.ops->on_congestion_event(&cc, 1 * MS, true, 60 * MS); /* CE */
        assert_int_equal(cc.ssthresh_bytes, (uint64_t)(12000 * beta));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delivered_last_rtt),
        cmocka_unit_test(test_newreno_exit_scales_delivered),
        cmocka_unit_test(test_cubic_exit_scales_delivered),
        cmocka_unit_test(test_exit_after_quiet_period),
        cmocka_unit_test(test_avoidance_uses_cwnd),
        cmocka_unit_test(test_first_flight_loss_keeps_slow_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
