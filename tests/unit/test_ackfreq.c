/* ACK-frequency sender policy (draft-ietf-quic-ack-frequency-12 §4, §7, §8.1, §9). */
#include "qk_test.h"
#include "transport/ackfreq.h"

#define MS QK_NS_PER_MS

static void test_never_without_peer_support(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_AUTO};
    qk_ackfreq_init(&a, &cfg);
    qk_ackfreq_req r;
    qk_ackfreq_update(&a, 100 * 1200, 1200, 40 * MS, false, 3, 0);
    assert_false(qk_ackfreq_poll(&a, &r)); /* §3: peer did not advertise min_ack_delay */
    qk_ackfreq_set_peer(&a, true, 1 * MS);
    cfg.mode = QK_ACKFREQ_OFF;
    qk_ackfreq_init(&a, &cfg);
    qk_ackfreq_set_peer(&a, true, 1 * MS);
    qk_ackfreq_update(&a, 100 * 1200, 1200, 40 * MS, false, 3, 0);
    assert_false(qk_ackfreq_poll(&a, &r)); /* mode off */
}

static void test_fixed(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_FIXED, .threshold = 10, .max_delay_ns = 5 * MS};
    qk_ackfreq_init(&a, &cfg);
    qk_ackfreq_set_peer(&a, true, 1 * MS);
    qk_ackfreq_update(&a, 100 * 1200, 1200, 40 * MS, false, 3, 0);
    qk_ackfreq_req r;
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.seq, 0);
    assert_int_equal(r.threshold, 10);
    assert_int_equal(r.max_delay_ns, 5 * MS);
    assert_int_equal(r.reordering_threshold, 3); /* §9: the loss packet threshold */
    qk_ackfreq_on_sent(&a, &r, 0);
    qk_ackfreq_update(&a, 200 * 1200, 1200, 40 * MS, false, 3, 100 * MS);
    assert_false(qk_ackfreq_poll(&a, &r)); /* fixed values did not change */
    /* Lost: re-sent with a new sequence number. */
    qk_ackfreq_on_lost(&a, 0);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.seq, 1);
}

static void test_auto_derivation(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_AUTO};
    qk_ackfreq_init(&a, &cfg);
    qk_ackfreq_set_peer(&a, true, 2 * MS);
    qk_ackfreq_req r;
    /* Slow start: the RFC 9000 cadence. */
    qk_ackfreq_update(&a, 40 * 1200, 1200, 40 * MS, true, 3, 0);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.threshold, 1);
    assert_int_equal(r.max_delay_ns, 10 * MS); /* srtt / 4 <= srtt (§8.1) */
    qk_ackfreq_on_sent(&a, &r, 0);
    /* Congestion avoidance with 800 packets per cwnd: 800/8 = 100, capped at 64. */
    qk_ackfreq_update(&a, 800 * 1200, 1200, 40 * MS, false, 3, 10 * MS);
    assert_false(qk_ackfreq_poll(&a, &r)); /* less than one RTT since the last frame */
    qk_ackfreq_update(&a, 800 * 1200, 1200, 40 * MS, false, 3, 50 * MS);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.threshold, 64);
    assert_true(r.threshold <= 800); /* §8.1: at most the packets per cwnd */
    qk_ackfreq_on_sent(&a, &r, 50 * MS);
    /* A 10% change is not relevant (< 20%). */
    qk_ackfreq_update(&a, 800 * 1200, 1200, 44 * MS, false, 3, 200 * MS);
    assert_false(qk_ackfreq_poll(&a, &r));
    /* Tiny RTT: the delay never goes below the peer's min_ack_delay. */
    qk_ackfreq_update(&a, 800 * 1200, 1200, 1 * MS, false, 3, 400 * MS);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.max_delay_ns, 2 * MS);
}

static void test_pto_delay(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_FIXED, .threshold = 4, .max_delay_ns = 50 * MS};
    qk_ackfreq_init(&a, &cfg);
    qk_ackfreq_set_peer(&a, true, 1 * MS);
    assert_int_equal(qk_ackfreq_pto_delay(&a, 25 * MS), 25 * MS);
    qk_ackfreq_update(&a, 100 * 1200, 1200, 40 * MS, false, 3, 0);
    qk_ackfreq_req r;
    assert_true(qk_ackfreq_poll(&a, &r));
    qk_ackfreq_on_sent(&a, &r, 0);
    /* §7: in flight requested delays count for PTO. */
    assert_int_equal(qk_ackfreq_pto_delay(&a, 25 * MS), 50 * MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_never_without_peer_support),
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_auto_derivation),
        cmocka_unit_test(test_pto_delay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
