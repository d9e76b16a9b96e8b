/* SPDX-License-Identifier: MIT */
/* Slow (Release build, label "slow"): BBR's loss-tolerance targets of
 * 60 s seeded simulations. 100 Mbit/s x 50 ms with 1% random
 * loss on the data direction: >= 85 Mbit/s of goodput over the whole run
 * (CUBIC: ~2.7 Mbit/s); 1 Gbit/s x 100 ms with 0.01% loss: >= 900 Mbit/s
 * over the last 20 s. Buffers of 2 BDP (1% case) and 1 BDP (1 Gbit/s). */
#include "bbr_env.h"

#define MS QK_NS_PER_MS
#define S  QK_NS_PER_S

static void test_one_percent_loss(void **state)
{
    (void)state;
    bbr_path p = {
        .rate_bps = 100000000, .one_way_ns = 25 * MS, .limit_bytes = 1250000, .loss_p = 0.01};
    bbr_run r = bbr_run_path(&p, QK_CONFIG_CC_BBR, 7, 0, 60 * S);
    bbr_print("bbr 100M x 50ms 1% loss", &r);
    assert_true(r.ok);
    assert_true(r.goodput_bps >= 85e6);
}

static void test_gigabit_low_loss(void **state)
{
    (void)state;
    bbr_path p = {
        .rate_bps = 1000000000, .one_way_ns = 50 * MS, .limit_bytes = 12500000, .loss_p = 0.0001};
    bbr_run r = bbr_run_path(&p, QK_CONFIG_CC_BBR, 7, 40 * S, 60 * S);
    bbr_print("bbr 1G x 100ms 0.01% loss (40-60 s)", &r);
    assert_true(r.ok);
    assert_true(r.goodput_bps >= 900e6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_percent_loss),
        cmocka_unit_test(test_gigabit_low_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
