/* SPDX-License-Identifier: MIT */
/* The Prague-style L4S controller (prague.c): DCTCP's alpha and scalable
 * cut (RFC 8257 arithmetic), reduced RTT dependence, and the classic
 * fallbacks on loss and on a classic-ECN (deep) queue (RFC 9331 §4.3). */
#include "qk_test.h"
#include "transport/recovery/cc/cc.h"
#include "cc_ack.h"
#include <math.h>
#include <string.h>

#define MDS 1200u
#define MS  QK_NS_PER_MS

static void test_prague_parse_and_alpha(void **state)
{
    (void)state;
    assert_int_equal(qk_cc_algo_parse("prague"), QK_CC_PRAGUE);
    assert_string_equal(qk_cc_algo_name(QK_CC_PRAGUE), "prague");
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_PRAGUE, MDS, 0), 0);
    assert_true(cc.u.prague.alpha == 1.0);
    /* Rounds of 10 packets, 2 CE each: F = 0.2; alpha = 15/16 alpha + F/16. */
    double expect = 1.0;
    for (int r = 1; r <= 40; r++) {
        qk_time now = (qk_time)r * 10 * MS;
        for (int i = 0; i < 10; i++) {
            qk_test_cc_ack_rtts(&cc, now, now - 10 * MS + 1, MDS, 10 * MS, 10 * MS);
            if (i == 0 && r > 1) {
                expect = (15.0 / 16) * expect + 0.2 / 16;
                assert_true(fabs(cc.u.prague.alpha - expect) < 1e-12);
            }
        }
        cc.ops->on_ecn(&cc, 2, 10 * MDS, now);
    }
    assert_true(fabs(expect - (pow(15.0 / 16, 39) * 0.8 + 0.2)) < 1e-9);
}

static void test_prague_scalable_cut_once_per_rtt(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_PRAGUE, MDS, 0), 0);
    for (int i = 0; i < 10; i++) qk_test_cc_ack_rtts(&cc, 10 * MS, 0, MDS, 10 * MS, 10 * MS);
    assert_int_equal(cc.cwnd_bytes, 24000);
    cc.u.prague.alpha = 0.125;
    cc.ops->on_congestion_event(&cc, 5 * MS, true, 20 * MS);
    /* cwnd * (1 - alpha / 2) = 24000 * 0.9375 */
    assert_int_equal(cc.cwnd_bytes, 22500);
    assert_int_equal(cc.ssthresh_bytes, 22500);
    assert_false(cc.u.prague.classic);
    cc.ops->on_congestion_event(&cc, 19 * MS, true, 21 * MS); /* same round */
    assert_int_equal(cc.cwnd_bytes, 22500);
    cc.ops->on_congestion_event(&cc, 21 * MS, true, 40 * MS); /* next round */
    assert_int_equal(cc.cwnd_bytes, 21093);
    /* Loss: the classic (Reno) halving. */
    cc.ops->on_congestion_event(&cc, 41 * MS, false, 60 * MS);
    assert_int_equal(cc.cwnd_bytes, 10546);
}

static void test_prague_rtt_independence(void **state)
{
    (void)state;
    /* (R / 25 ms)^2 below 25 ms. */
    assert_true(qk_prague_ai_scale(25 * MS) == 1.0);
    assert_true(qk_prague_ai_scale(100 * MS) == 1.0);
    assert_true(fabs(qk_prague_ai_scale(5 * MS) - 0.04) < 1e-12);
    /* Rate growth per second is the same at 5 ms and 25 ms RTT: cwnd grows
     * by scale * MDS per RTT, rate by that / RTT per RTT, i.e. by
     * scale * MDS / RTT^2 per second = MDS / (25 ms)^2 for both. */
    qk_time rtts[2] = {5 * MS, 25 * MS};
    double rate_gain_bps_per_s[2];
    for (int k = 0; k < 2; k++) {
        qk_cc cc;
        assert_int_equal(qk_cc_init(&cc, QK_CC_PRAGUE, MDS, 0), 0);
        cc.ssthresh_bytes = cc.cwnd_bytes = 100 * MDS; /* congestion avoidance */
        qk_time r = rtts[k], now = 0;
        uint64_t start = cc.cwnd_bytes;
        int rounds = 200;
        for (int n = 0; n < rounds; n++) {
            now += r;
            uint64_t w = cc.cwnd_bytes;
            for (uint64_t b = 0; b < w; b += MDS)
                qk_test_cc_ack_rtts(&cc, now, now - r + 1, MDS, r, r);
        }
        double secs = (double)rounds * (double)r / 1e9;
        double d_rate = (double)(cc.cwnd_bytes - start) / ((double)r / 1e9);
        rate_gain_bps_per_s[k] = d_rate / secs;
    }
    double ratio = rate_gain_bps_per_s[0] / rate_gain_bps_per_s[1];
    assert_true(ratio > 0.9 && ratio < 1.1);
}

static void test_prague_classic_ecn_fallback(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_PRAGUE, MDS, 0), 0);
    /* Acks with 20 ms of queue on a 10 ms path: a classic (RFC 3168) AQM. */
    for (int i = 0; i < 10; i++) qk_test_cc_ack_rtts(&cc, 40 * MS, 0, MDS, 30 * MS, 10 * MS);
    assert_true(qk_prague_classic_queue(&cc));
    cc.u.prague.alpha = 0.125;
    cc.ops->on_congestion_event(&cc, 35 * MS, true, 40 * MS);
    assert_true(cc.u.prague.classic);
    assert_int_equal(cc.cwnd_bytes, 12000); /* halved, not cut by alpha / 2 */
    /* Shallow queue again: scalable response. */
    for (int i = 0; i < 10; i++) qk_test_cc_ack_rtts(&cc, 80 * MS, 50 * MS, MDS, 11 * MS, 10 * MS);
    assert_false(qk_prague_classic_queue(&cc));
    uint64_t w = cc.cwnd_bytes;
    cc.ops->on_congestion_event(&cc, 81 * MS, true, 90 * MS);
    assert_false(cc.u.prague.classic);
    assert_int_equal(cc.cwnd_bytes, (uint64_t)((double)w * (1.0 - cc.u.prague.alpha / 2)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prague_parse_and_alpha),
        cmocka_unit_test(test_prague_scalable_cut_once_per_rtt),
        cmocka_unit_test(test_prague_rtt_independence),
        cmocka_unit_test(test_prague_classic_ecn_fallback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
