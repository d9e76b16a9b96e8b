/* SPDX-License-Identifier: MIT */
/* RTT estimator against RFC 9002 §5 formulas, numbers computed by hand. */
#include "qk_test.h"
#include "transport/recovery/rtt.h"

#define MS QK_NS_PER_MS
#define US QK_NS_PER_US

static void test_initial(void **state)
{
    (void)state;
    qk_rtt r;
    qk_rtt_init(&r, 0);
    assert_false(qk_rtt_has_sample(&r));
    assert_int_equal(r.smoothed_rtt_ns, 333 * MS);
    assert_int_equal(r.rttvar_ns, 166500 * US);
    /* 333 + 4 * 166.5 = 999 ms; + 25 ms max_ack_delay */
    assert_int_equal(qk_rtt_pto_ns(&r, 0), 999 * MS);
    assert_int_equal(qk_rtt_pto_ns(&r, 25 * MS), 1024 * MS);
    qk_rtt_init(&r, 100 * MS);
    assert_int_equal(r.smoothed_rtt_ns, 100 * MS);
    assert_int_equal(r.rttvar_ns, 50 * MS);
}

static void test_first_sample(void **state)
{
    (void)state;
    qk_rtt r;
    qk_rtt_init(&r, 0);
    /* The first sample ignores ack delay entirely (RFC 9002 §5.3). */
    qk_rtt_update(&r, 100 * MS, 30 * MS, 25 * MS, true, 7 * MS);
    assert_true(qk_rtt_has_sample(&r));
    assert_int_equal(r.latest_rtt_ns, 100 * MS);
    assert_int_equal(r.min_rtt_ns, 100 * MS);
    assert_int_equal(r.smoothed_rtt_ns, 100 * MS);
    assert_int_equal(r.rttvar_ns, 50 * MS);
    assert_int_equal(r.first_sample_time, 7 * MS);
    /* 100 + max(200, 1) + 25 */
    assert_int_equal(qk_rtt_pto_ns(&r, 25 * MS), 325 * MS);
}

static void test_second_sample(void **state)
{
    (void)state;
    qk_rtt r;
    qk_rtt_init(&r, 0);
    qk_rtt_update(&r, 100 * MS, 0, 25 * MS, true, 0);
    /* latest 120, delay 10: adjusted 110; rttvar = 3/4*50 + 1/4*10 = 40;
     * srtt = 7/8*100 + 1/8*110 = 101.25 */
    qk_rtt_update(&r, 120 * MS, 10 * MS, 25 * MS, true, 1);
    assert_int_equal(r.min_rtt_ns, 100 * MS);
    assert_int_equal(r.rttvar_ns, 40 * MS);
    assert_int_equal(r.smoothed_rtt_ns, 101250 * US);
    assert_int_equal(r.first_sample_time, 0);
    assert_int_equal(r.samples, 2);
}

static void test_ack_delay_cap(void **state)
{
    (void)state;
    qk_rtt r;
    /* Confirmed: 80 ms delay capped to 25: adjusted = 200 - 25 = 175.
     * rttvar = (3*50 + 75)/4 = 56.25; srtt = (700 + 175)/8 = 109.375 */
    qk_rtt_init(&r, 0);
    qk_rtt_update(&r, 100 * MS, 0, 25 * MS, true, 0);
    qk_rtt_update(&r, 200 * MS, 80 * MS, 25 * MS, true, 1);
    assert_int_equal(r.smoothed_rtt_ns, 109375 * US);
    assert_int_equal(r.rttvar_ns, 56250 * US);
    /* Not confirmed: the full 80 ms is used: adjusted 120.
     * rttvar = (150 + 20)/4 = 42.5; srtt = (700 + 120)/8 = 102.5 */
    qk_rtt_init(&r, 0);
    qk_rtt_update(&r, 100 * MS, 0, 25 * MS, false, 0);
    qk_rtt_update(&r, 200 * MS, 80 * MS, 25 * MS, false, 1);
    assert_int_equal(r.smoothed_rtt_ns, 102500 * US);
    assert_int_equal(r.rttvar_ns, 42500 * US);
}

static void test_never_below_min_rtt(void **state)
{
    (void)state;
    qk_rtt r;
    qk_rtt_init(&r, 0);
    qk_rtt_update(&r, 100 * MS, 0, 25 * MS, true, 0);
    /* 105 < min 100 + delay 10: the delay is not subtracted. adjusted 105:
     * rttvar = (150 + 5)/4 = 38.75; srtt = (700 + 105)/8 = 100.625 */
    qk_rtt_update(&r, 105 * MS, 10 * MS, 25 * MS, true, 1);
    assert_int_equal(r.smoothed_rtt_ns, 100625 * US);
    assert_int_equal(r.rttvar_ns, 38750 * US);
    /* min_rtt follows the unadjusted sample. */
    qk_rtt_update(&r, 90 * MS, 5 * MS, 25 * MS, true, 2);
    assert_int_equal(r.min_rtt_ns, 90 * MS);
    assert_int_equal(r.latest_rtt_ns, 90 * MS);
}

static void test_loss_delay_and_granularity(void **state)
{
    (void)state;
    qk_rtt r;
    qk_rtt_init(&r, 0);
    qk_rtt_update(&r, 100 * MS, 0, 25 * MS, true, 0);
    qk_rtt_update(&r, 120 * MS, 0, 25 * MS, true, 1); /* latest 120 > srtt 102.5 */
    assert_int_equal(qk_rtt_loss_delay_ns(&r, 9, 8), 135 * MS);
    assert_int_equal(qk_rtt_loss_delay_ns(&r, 0, 0), 135 * MS);
    assert_int_equal(qk_rtt_loss_delay_ns(&r, 5, 4), 150 * MS);
    /* Tiny RTTs: both loss delay and the PTO variance term floor at 1 ms. */
    qk_rtt_init(&r, 0);
    qk_rtt_update(&r, 200 * US, 0, 0, true, 0);
    for (int i = 0; i < 40; i++) qk_rtt_update(&r, 200 * US, 0, 0, true, 1);
    assert_int_equal(qk_rtt_loss_delay_ns(&r, 9, 8), 1 * MS);
    assert_int_equal(r.smoothed_rtt_ns, 200 * US);
    assert_true(4 * r.rttvar_ns < 1 * MS);
    assert_int_equal(qk_rtt_pto_ns(&r, 0), 200 * US + 1 * MS);
    qk_rtt_reset(&r);
    assert_false(qk_rtt_has_sample(&r));
    assert_int_equal(r.smoothed_rtt_ns, 333 * MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initial),
        cmocka_unit_test(test_first_sample),
        cmocka_unit_test(test_second_sample),
        cmocka_unit_test(test_ack_delay_cap),
        cmocka_unit_test(test_never_below_min_rtt),
        cmocka_unit_test(test_loss_delay_and_granularity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
