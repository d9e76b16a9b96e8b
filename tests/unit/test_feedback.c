/* SPDX-License-Identifier: MIT */
/* Lost-feedback detection timing (src/transport/path/feedback.c). */
#include "qk_test.h"
#include "transport/path/feedback.h"

#define MS  QK_NS_PER_MS
#define SEC QK_NS_PER_S

static const qk_feedback_params P = {
    .srtt_ns = 10 * MS, .max_ack_delay_ns = 25 * MS, .pto_ns = 60 * MS, .failed_ns = SEC};

static void test_degraded_one_rtt_past_due(void **state)
{
    (void)state;
    qk_feedback f;
    qk_feedback_init(&f);
    assert_true(qk_feedback_next_timeout(&f, &P) == QK_TIME_INFINITE);
    qk_feedback_on_sent(&f, 100 * MS);
    qk_feedback_on_sent(&f, 150 * MS); /* the oldest unanswered send counts */
    /* ACK due at 100 + 10 + 25; degraded one srtt later = 145 ms. */
    assert_true(qk_feedback_degraded_at(&f, &P) == 145 * MS);
    assert_int_equal(qk_feedback_check(&f, &P, 145 * MS - 1), QK_FEEDBACK_OK);
    assert_int_equal(qk_feedback_check(&f, &P, 145 * MS), QK_FEEDBACK_DEGRADED);
    /* Reported once per silence. */
    assert_int_equal(qk_feedback_check(&f, &P, 146 * MS), QK_FEEDBACK_OK);
    assert_true(qk_feedback_next_timeout(&f, &P) == 1100 * MS);
    /* An ACK with packets still out starts a new silence. */
    qk_feedback_on_ack(&f, true, 200 * MS);
    assert_false(f.degraded);
    assert_true(qk_feedback_degraded_at(&f, &P) == 245 * MS);
    /* All acknowledged: nothing waits. */
    qk_feedback_on_ack(&f, false, 210 * MS);
    assert_true(qk_feedback_next_timeout(&f, &P) == QK_TIME_INFINITE);
    assert_int_equal(qk_feedback_check(&f, &P, 100 * SEC), QK_FEEDBACK_OK);
}

static void test_failed_after_limit(void **state)
{
    (void)state;
    qk_feedback f;
    qk_feedback_init(&f);
    qk_feedback_on_sent(&f, SEC);
    assert_int_equal(qk_feedback_check(&f, &P, SEC + 50 * MS), QK_FEEDBACK_DEGRADED);
    /* A drip of sends (the bypass) does not move the start of the silence. */
    for (qk_time t = SEC; t < 2 * SEC; t += 20 * MS) qk_feedback_on_sent(&f, t);
    assert_true(qk_feedback_failed_at(&f, &P) == 2 * SEC);
    assert_int_equal(qk_feedback_check(&f, &P, 2 * SEC - 1), QK_FEEDBACK_OK);
    assert_int_equal(qk_feedback_check(&f, &P, 2 * SEC), QK_FEEDBACK_FAILED);
    assert_true(f.failed);
    /* Final: reported once, no more timers. */
    assert_int_equal(qk_feedback_check(&f, &P, 3 * SEC), QK_FEEDBACK_OK);
    assert_true(qk_feedback_next_timeout(&f, &P) == QK_TIME_INFINITE);
}

static void test_limit_floor_and_off(void **state)
{
    (void)state;
    qk_feedback f;
    qk_feedback_init(&f);
    qk_feedback_on_sent(&f, 0);
    /* Never below 3 x the un-backed-off PTO. */
    qk_feedback_params p = P;
    p.pto_ns = 500 * MS;
    assert_true(qk_feedback_failed_at(&f, &p) == 1500 * MS);
    p.failed_ns = 0; /* off */
    assert_true(qk_feedback_failed_at(&f, &p) == QK_TIME_INFINITE);
    assert_true(qk_feedback_next_timeout(&f, &p) == qk_feedback_degraded_at(&f, &p));
}

/* Wi-Fi: suspensions of up to 240 ms with feedback in between never fail
 * the path with the 1 s default; they may degrade it. */
static void test_suspensions_do_not_fail(void **state)
{
    (void)state;
    qk_feedback f;
    qk_feedback_init(&f);
    int degraded = 0;
    qk_time t = 0;
    for (int cycle = 0; cycle < 100; cycle++) {
        qk_time gap = (qk_time)(20 + 20 * (cycle % 12)) * MS; /* 20..240 ms of silence */
        for (qk_time s = 0; s < gap; s += 20 * MS) {
            qk_feedback_on_sent(&f, t + s);
            qk_feedback_state st = qk_feedback_check(&f, &P, t + s);
            assert_int_not_equal(st, QK_FEEDBACK_FAILED);
            degraded += st == QK_FEEDBACK_DEGRADED;
        }
        t += gap;
        qk_feedback_on_ack(&f, true, t); /* the held ACKs arrive at its end */
        t += 10 * MS;
    }
    assert_true(degraded > 0);
    assert_false(f.failed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_degraded_one_rtt_past_due),
        cmocka_unit_test(test_failed_after_limit),
        cmocka_unit_test(test_limit_floor_and_off),
        cmocka_unit_test(test_suspensions_do_not_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
