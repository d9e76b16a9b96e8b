/* SPDX-License-Identifier: MIT */
/* The DNS carrier's poll policy (src/dns/poll.c) on a virtual clock. */
#include <quack/dns.h>
#include "qk_test.h"

#define MS QK_NS_PER_MS

static unsigned drain(qk_dns_poll *p, qk_time now)
{
    unsigned n = 0;
    while (qk_dns_poll_take(p, now)) n++;
    return n;
}

static qk_dns_poll_stats st(const qk_dns_poll *p)
{
    qk_dns_poll_stats s;
    qk_dns_poll_get_stats(p, &s);
    return s;
}

static void test_polls_per_response(void **state)
{
    (void)state;
    for (unsigned k = 0; k <= 2; k++) {
        qk_dns_poll_config cfg;
        qk_dns_poll_config_default(&cfg);
        cfg.polls_per_response = k;
        qk_dns_poll *p = NULL;
        assert_int_equal(qk_dns_poll_new(&cfg, 0, &p), 0);
        qk_dns_poll_on_response(p, true, 10 * MS);
        assert_int_equal(qk_dns_poll_next_timeout(p, 10 * MS), k ? 10 * MS : 510 * MS);
        assert_int_equal(drain(p, 10 * MS), k);
        qk_dns_poll_on_response(p, false, 11 * MS); /* empty: nothing owed */
        assert_int_equal(drain(p, 11 * MS), 0);
        assert_int_equal(st(p).responses_data, 1);
        assert_int_equal(st(p).responses_empty, 1);
        qk_dns_poll_del(p);
    }
}

static void test_burst_cap(void **state)
{
    (void)state;
    qk_dns_poll_config cfg;
    qk_dns_poll_config_default(&cfg);
    cfg.polls_per_response = 2;
    qk_dns_poll *p = NULL;
    assert_int_equal(qk_dns_poll_new(&cfg, 0, &p), 0);
    for (int i = 0; i < 20; i++) qk_dns_poll_on_response(p, true, 1 * MS);
    assert_int_equal(st(p).owed_now, 16);
    assert_int_equal(st(p).capped, 24);
    assert_int_equal(drain(p, 1 * MS), 16);
    cfg.burst_cap = 3;
    qk_dns_poll_del(p);
    assert_int_equal(qk_dns_poll_new(&cfg, 0, &p), 0);
    for (int i = 0; i < 20; i++) qk_dns_poll_on_response(p, true, 1 * MS);
    assert_int_equal(drain(p, 1 * MS), 3);
    qk_dns_poll_del(p);
}

static void test_ack_as_poll(void **state)
{
    (void)state;
    for (int on = 0; on <= 1; on++) {
        qk_dns_poll_config cfg;
        qk_dns_poll_config_default(&cfg);
        cfg.polls_per_response = 2;
        cfg.ack_as_poll = on;
        qk_dns_poll *p = NULL;
        assert_int_equal(qk_dns_poll_new(&cfg, 0, &p), 0);
        qk_dns_poll_on_response(p, true, 1 * MS);
        qk_dns_poll_on_data_sent(p, 1 * MS); /* an ACK went up */
        assert_int_equal(drain(p, 1 * MS), on ? 1 : 2);
        assert_int_equal(st(p).acks_as_polls, on ? 1 : 0);
        qk_dns_poll_on_data_sent(p, 2 * MS); /* nothing owed: nothing to replace */
        assert_int_equal(st(p).acks_as_polls, on ? 1 : 0);
        qk_dns_poll_del(p);
    }
}

static void test_idle_backoff(void **state)
{
    (void)state;
    qk_dns_poll_config cfg;
    qk_dns_poll_config_default(&cfg);
    qk_dns_poll *p = NULL;
    assert_int_equal(qk_dns_poll_new(&cfg, 0, &p), 0);
    /* 500 ms, then 1, 2, 4, 8, 10, 10 s apart */
    qk_time now = 0, want[] = {500, 1500, 3500, 7500, 15500, 25500, 35500};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        qk_time due = qk_dns_poll_next_timeout(p, now);
        assert_int_equal(due, want[i] * MS);
        assert_false(qk_dns_poll_take(p, due - 1));
        assert_true(qk_dns_poll_take(p, due));
        now = due;
    }
    assert_int_equal(st(p).idle_polls, 7);
    /* activity resets to 500 ms */
    qk_dns_poll_on_response(p, true, now);
    assert_int_equal(drain(p, now), 2); /* the default: 2 per data answer */
    assert_int_equal(qk_dns_poll_next_timeout(p, now), now + 500 * MS);
    qk_dns_poll_take(p, now + 500 * MS);
    qk_dns_poll_on_data_sent(p, now + 600 * MS);
    assert_int_equal(qk_dns_poll_next_timeout(p, now), now + 1100 * MS);
    assert_int_equal(st(p).idle_delay_ns, 500 * MS);
    qk_dns_poll_del(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_polls_per_response),
        cmocka_unit_test(test_burst_cap),
        cmocka_unit_test(test_ack_as_poll),
        cmocka_unit_test(test_idle_backoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
