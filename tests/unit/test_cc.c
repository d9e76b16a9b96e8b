/* SPDX-License-Identifier: MIT */
/* covers: src/transport/recovery/cc/cc.c src/transport/recovery/cc/newreno.c
 * src/transport/recovery/cc/dctcp.c */
/* NewReno (RFC 9002 §7, Appendix B), DCTCP (RFC 8257) and the cc.c helpers,
 * checked against arithmetic from the RFCs. */
#include "qk_test.h"
#include "transport/recovery/cc/cc.h"
#include <math.h>
#include <string.h>

#define MDS 1200u
#define MS  QK_NS_PER_MS

static qk_cc_ack mkack(qk_time now, qk_time sent, uint64_t bytes)
{
    qk_cc_ack a;
    memset(&a, 0, sizeof a);
    a.now = now;
    a.sent_time = sent;
    a.bytes = bytes;
    a.smoothed_rtt_ns = 100 * MS;
    a.min_rtt_ns = 100 * MS;
    a.latest_rtt_ns = 100 * MS;
    return a;
}

static void ack(qk_cc *cc, qk_time now, qk_time sent, uint64_t bytes)
{
    qk_cc_ack a = mkack(now, sent, bytes);
    cc->ops->on_packet_acked(cc, &a);
}

static void test_initial_window(void **state)
{
    (void)state;
    /* RFC 9002 §7.2: min(10 * mds, max(14720, 2 * mds)) */
    assert_int_equal(qk_cc_initial_window(1200), 12000);
    assert_int_equal(qk_cc_initial_window(1472), 14720);
    assert_int_equal(qk_cc_initial_window(1500), 14720);
    assert_int_equal(qk_cc_initial_window(9000), 18000);
}

static void test_init_and_parse(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, 31, 0),
                     QK_ERR_INVALID_ARG); /* 32: DNS-carrier floor */
    assert_int_equal(qk_cc_init(&cc, (qk_cc_algo)7, 1200, 0), QK_ERR_INVALID_ARG);
    for (int algo = 0; algo < 4; algo++) {
        assert_int_equal(qk_cc_init(&cc, (qk_cc_algo)algo, 1350, 5), 0);
        assert_int_equal(cc.cwnd_bytes, 13500);
        assert_true(cc.ssthresh_bytes == UINT64_MAX);
        assert_int_equal(cc.state, QK_CC_SLOW_START);
        assert_false(cc.in_recovery);
        assert_int_equal(qk_cc_min_window(&cc), 2700);
        assert_string_equal(cc.ops->name, qk_cc_algo_name((qk_cc_algo)algo));
    }
    assert_int_equal(qk_cc_algo_parse("reno"), QK_CC_NEWRENO);
    assert_int_equal(qk_cc_algo_parse("NewReno"), QK_CC_NEWRENO);
    assert_int_equal(qk_cc_algo_parse("cubic"), QK_CC_CUBIC);
    assert_int_equal(qk_cc_algo_parse("dctcp"), QK_CC_DCTCP);
    assert_int_equal(qk_cc_algo_parse("bbr"), QK_CC_BBR);
    assert_int_equal(qk_cc_algo_parse("bbr2"), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_cc_algo_parse(""), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_cc_algo_parse(NULL), QK_ERR_INVALID_ARG);
}

static void test_reno_slow_start(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    /* RFC 9002 §7.3.1: +acked bytes per ack; one window of acks doubles it. */
    for (int i = 0; i < 10; i++) ack(&cc, 100 * MS, 1 + i, MDS);
    assert_int_equal(cc.cwnd_bytes, 24000);
    ack(&cc, 100 * MS, 20, 700);
    assert_int_equal(cc.cwnd_bytes, 24700);
    assert_int_equal(cc.state, QK_CC_SLOW_START);
}

static void test_reno_loss_and_recovery(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    for (int i = 0; i < 10; i++) ack(&cc, 50 * MS, 1, MDS); /* cwnd 24000 */
    /* Loss of a packet sent at 60 ms, detected at 200 ms. */
    cc.ops->on_congestion_event(&cc, 60 * MS, false, 200 * MS);
    assert_int_equal(cc.ssthresh_bytes, 12000); /* kLossReductionFactor 0.5 */
    assert_int_equal(cc.cwnd_bytes, 12000);
    assert_true(cc.in_recovery);
    assert_int_equal(cc.state, QK_CC_RECOVERY);
    assert_int_equal(cc.recovery_start_time, 200 * MS);
    assert_int_equal(cc.congestion_events, 1);
    /* More losses of packets sent before recovery began: no second cut. */
    cc.ops->on_congestion_event(&cc, 150 * MS, false, 210 * MS);
    cc.ops->on_congestion_event(&cc, 200 * MS, true, 220 * MS);
    assert_int_equal(cc.cwnd_bytes, 12000);
    assert_int_equal(cc.congestion_events, 1);
    /* Acks for packets sent before recovery: no growth (RFC 9002 B.5). */
    for (int i = 0; i < 20; i++) ack(&cc, 230 * MS, 199 * MS, MDS);
    assert_int_equal(cc.cwnd_bytes, 12000);
    assert_true(cc.in_recovery);
    /* A packet sent after the start is acked: recovery ends, CA growth. */
    ack(&cc, 300 * MS, 201 * MS, MDS);
    assert_false(cc.in_recovery);
    assert_int_equal(cc.state, QK_CC_CONGESTION_AVOIDANCE);
    assert_int_equal(cc.cwnd_bytes, 12000);
    /* A loss of a packet sent after recovery began starts a new period. */
    cc.ops->on_congestion_event(&cc, 250 * MS, false, 400 * MS);
    assert_int_equal(cc.cwnd_bytes, 6000);
    assert_int_equal(cc.congestion_events, 2);
}

static void test_reno_congestion_avoidance(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    /* A first (empty) ack, so the loss below is not of the first flight,
     * which would keep slow start (qk_cc_early_loss, cc.h). */
    ack(&cc, 5 * MS, 1, 0);
    cc.ops->on_congestion_event(&cc, 6 * MS, false, 10 * MS); /* 12000 -> 6000 */
    assert_int_equal(cc.cwnd_bytes, 6000);
    ack(&cc, 20 * MS, 11 * MS, 0); /* leave recovery (a zero-size ack) */
    /* RFC 9002 §7.3.3: cwnd += mds once a full cwnd of bytes is acked. */
    uint64_t expect = 6000;
    qk_time t = 20 * MS;
    for (int round = 0; round < 5; round++) {
        uint64_t w = cc.cwnd_bytes;
        for (uint64_t b = 0; b + 600 <= w; b += 600) {
            assert_int_equal(cc.cwnd_bytes, expect);
            ack(&cc, t, t - 1, 600);
        }
        expect += MDS;
        assert_int_equal(cc.cwnd_bytes, expect);
        t += 100 * MS;
    }
    assert_int_equal(cc.cwnd_bytes, 6000 + 5 * MDS);
}

static void test_reno_min_window_and_persistent(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    qk_time t = MS;
    for (int i = 0; i < 10; i++) {
        cc.ops->on_congestion_event(&cc, t, false, t + 1);
        t += 10;
        assert_true(cc.cwnd_bytes >= 2 * MDS);
    }
    assert_int_equal(cc.cwnd_bytes, 2 * MDS);
    /* Persistent congestion from a larger window collapses to 2 * mds. */
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    for (int i = 0; i < 30; i++) ack(&cc, 50 * MS, 1, MDS);
    assert_int_equal(cc.cwnd_bytes, 48000);
    cc.ops->on_persistent_congestion(&cc, 60 * MS);
    assert_int_equal(cc.cwnd_bytes, 2 * MDS);
    /* A recovery period starts at the collapse (qk_cc_persistent_recovery):
     * packets sent before it and acked now do not grow the window... */
    assert_true(cc.in_recovery);
    for (int i = 0; i < 30; i++) ack(&cc, 61 * MS, 59 * MS, MDS);
    assert_int_equal(cc.cwnd_bytes, 2 * MDS);
    /* ...the first packet sent after it ends the period: slow start again
     * (ssthresh still infinite). */
    ack(&cc, 120 * MS, 61 * MS, MDS);
    assert_false(cc.in_recovery);
    assert_int_equal(cc.cwnd_bytes, 3 * MDS);
    assert_int_equal(cc.state, QK_CC_SLOW_START);
}

static void test_reno_app_limited(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    qk_cc_ack a = mkack(10 * MS, 1, MDS);
    a.app_limited = true;
    for (int i = 0; i < 10; i++) cc.ops->on_packet_acked(&cc, &a);
    assert_int_equal(cc.cwnd_bytes, 12000);
    assert_int_equal(cc.state, QK_CC_APP_LIMITED);
    a.app_limited = false;
    cc.ops->on_packet_acked(&cc, &a);
    assert_int_equal(cc.cwnd_bytes, 13200);
    assert_int_equal(cc.state, QK_CC_SLOW_START);
}

static void test_dctcp_alpha_ewma(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_DCTCP, MDS, 0), 0);
    assert_true(cc.u.dctcp.alpha == 1.0);
    /* Rounds of 10 packets with 3 CE marks each: F = 0.3. A round ends
     * when a packet sent after its start is acked (send time = round + 1). */
    double expect = 1.0;
    qk_time rtt = 100 * MS;
    for (int r = 1; r <= 80; r++) {
        qk_time now = (qk_time)r * rtt;
        for (int i = 0; i < 10; i++) {
            ack(&cc, now, now - rtt + 1, MDS);
            if (i == 0 && r > 1) {
                /* the first ack of round r closed round r-1 */
                expect = (1.0 - 1.0 / 16) * expect + (1.0 / 16) * 0.3;
                assert_true(fabs(cc.u.dctcp.alpha - expect) < 1e-12);
            }
        }
        cc.ops->on_ecn(&cc, 3, 10 * MDS, now);
    }
    /* Converges to F: (1-g)^79 * (1 - 0.3) + 0.3 */
    assert_true(fabs(expect - (pow(15.0 / 16, 79) * 0.7 + 0.3)) < 1e-9);
    assert_true(cc.u.dctcp.alpha < 0.31 && cc.u.dctcp.alpha > 0.3);
}

static void test_dctcp_reduction_once_per_round(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_DCTCP, MDS, 0), 0);
    for (int i = 0; i < 10; i++) ack(&cc, 10 * MS, 0, MDS); /* cwnd 24000 */
    assert_int_equal(cc.cwnd_bytes, 24000);
    cc.u.dctcp.alpha = 0.25; /* set a known alpha */
    cc.ops->on_ecn(&cc, 1, MDS, 20 * MS);
    cc.ops->on_congestion_event(&cc, 15 * MS, true, 20 * MS);
    /* RFC 8257 §3.5: cwnd * (1 - alpha / 2) = 24000 * 0.875 */
    assert_int_equal(cc.cwnd_bytes, 21000);
    assert_int_equal(cc.ssthresh_bytes, 21000);
    /* More CE for packets sent within the same round: no further cut. */
    cc.ops->on_congestion_event(&cc, 19 * MS, true, 25 * MS);
    assert_int_equal(cc.cwnd_bytes, 21000);
    /* The next round can cut again. */
    cc.ops->on_congestion_event(&cc, 21 * MS, true, 130 * MS);
    assert_int_equal(cc.cwnd_bytes, 18375);
    /* A loss is a NewReno halving. */
    cc.ops->on_congestion_event(&cc, 131 * MS, false, 240 * MS);
    assert_int_equal(cc.cwnd_bytes, 9187);
    /* Never below the minimum window. */
    cc.u.dctcp.alpha = 1.0;
    for (qk_time t = 300; t < 320; t++) cc.ops->on_congestion_event(&cc, t * MS, true, t * MS + 1);
    assert_int_equal(cc.cwnd_bytes, 2 * MDS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initial_window),
        cmocka_unit_test(test_init_and_parse),
        cmocka_unit_test(test_reno_slow_start),
        cmocka_unit_test(test_reno_loss_and_recovery),
        cmocka_unit_test(test_reno_congestion_avoidance),
        cmocka_unit_test(test_reno_min_window_and_persistent),
        cmocka_unit_test(test_reno_app_limited),
        cmocka_unit_test(test_dctcp_alpha_ewma),
        cmocka_unit_test(test_dctcp_reduction_once_per_round),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
