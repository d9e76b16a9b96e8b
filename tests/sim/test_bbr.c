/* SPDX-License-Identifier: MIT */
/* BBR end to end (simulator, ASan build): a clean 100 Mbit/s x 50 ms path
 * with a 10 x BDP drop-tail buffer. BBR must fill the link (>= 95% over
 * 3-10 s, i.e. after Startup and Drain, ProbeRTT at ~5 s included) while
 * keeping the queue short: p95 of the sampled queueing delay <= 1 x base
 * RTT (CUBIC fills such a buffer: bench/cc.sh). Also a long thin path:
 * 20 Mbit/s x 300 ms at 1% random loss, >= 15 Mbit/s over 60 s. The
 * 100 Mbit/s x 1% and 1 Gbit/s x 0.01% targets: test_slow_bbr.c. */
#include "bbr_env.h"

#define MS QK_NS_PER_MS
#define S  QK_NS_PER_S

static void test_clean_fill_short_queue(void **state)
{
    (void)state;
    bbr_path p = {.rate_bps = 100000000, .one_way_ns = 25 * MS, .limit_bytes = 6250000};
    bbr_run r = bbr_run_path(&p, QK_CONFIG_CC_BBR, 31, 3 * S, 10 * S);
    bbr_print("bbr clean 100M x 50ms, 10 BDP buffer", &r);
    assert_true(r.ok);
    assert_true(r.util >= 0.95);
    assert_true(r.qd_p95_ms <= 50.0);
}

static void test_long_thin_lossy(void **state)
{
    (void)state;
    bbr_path p = {
        .rate_bps = 20000000, .one_way_ns = 150 * MS, .limit_bytes = 1500000, .loss_p = 0.01};
    bbr_run r = bbr_run_path(&p, QK_CONFIG_CC_BBR, 32, 0, 60 * S);
    bbr_print("bbr 20M x 300ms 1% loss", &r);
    assert_true(r.ok);
    assert_true(r.goodput_bps >= 15e6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clean_fill_short_queue),
        cmocka_unit_test(test_long_thin_lossy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
