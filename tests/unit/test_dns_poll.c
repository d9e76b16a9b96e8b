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

/* A policy with the defaults but for the fields given (-1: the default). */
static qk_dns_poll *poll_with(int polls_per_response, int burst_cap, int ack_as_poll)
{
    qk_dns_poll_config cfg;
    qk_dns_poll_config_default(&cfg);
    if (polls_per_response >= 0) cfg.polls_per_response = (unsigned)polls_per_response;
    if (burst_cap >= 0) cfg.burst_cap = (unsigned)burst_cap;
    if (ack_as_poll >= 0) cfg.ack_as_poll = ack_as_poll;
    qk_dns_poll *p = NULL;
    assert_int_equal(qk_dns_poll_new(&cfg, 0, &p), 0);
    return p;
}

static void test_polls_per_response(void **state)
{
    (void)state;
    for (unsigned k = 0; k <= 2; k++) {
        qk_dns_poll *p = poll_with((int)k, -1, -1);
        qk_dns_poll_on_response(p, true, 10 * MS);
        assert_int_equal(qk_dns_poll_next_timeout(p, 10 * MS), k ? 10 * MS : 60 * MS); /* linger */
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
    qk_dns_poll *p = poll_with(2, -1, -1);
    for (int i = 0; i < 20; i++) qk_dns_poll_on_response(p, true, 1 * MS);
    assert_int_equal(st(p).owed_now, 16);
    assert_int_equal(st(p).capped, 24);
    assert_int_equal(drain(p, 1 * MS), 16);
    qk_dns_poll_del(p);
    p = poll_with(2, 3, -1);
    for (int i = 0; i < 20; i++) qk_dns_poll_on_response(p, true, 1 * MS);
    assert_int_equal(drain(p, 1 * MS), 3);
    qk_dns_poll_del(p);
}

static void test_ack_as_poll(void **state)
{
    (void)state;
    for (int on = 0; on <= 1; on++) {
        qk_dns_poll *p = poll_with(2, -1, on);
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
    qk_dns_poll *p = poll_with(-1, -1, -1);
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
    /* data going up resets the back-off to 500 ms (and, after the lull,
     * takes 9 polls along: test_start_after_lull) */
    qk_dns_poll_on_data_sent(p, now);
    assert_int_equal(drain(p, now), 9);
    assert_int_equal(qk_dns_poll_next_timeout(p, now), now + 500 * MS);
    qk_dns_poll_take(p, now + 500 * MS);
    qk_dns_poll_on_data_sent(p, now + 600 * MS);
    assert_int_equal(drain(p, now + 600 * MS), 9); /* a lull again: no data answer since */
    assert_int_equal(qk_dns_poll_next_timeout(p, now), now + 1100 * MS);
    assert_int_equal(st(p).idle_delay_ns, 500 * MS);
    qk_dns_poll_del(p);
}

/* After an answer with data the idle timer polls every 50 ms for the first
 * idle delay (500 ms), so the server holds a query when a retransmission
 * is due (the old policy sent nothing for 500 ms: a retransmission waited
 * 435 ms at the end of a download through unbound at 2 % loss); then the
 * back-off runs as before: 500 ms after the data, then 1, 2, 4 s apart. */
static void test_linger_after_data(void **state)
{
    (void)state;
    qk_dns_poll *p = poll_with(-1, -1, -1);
    qk_time t0 = 1000 * MS;
    qk_dns_poll_on_response(p, true, t0);
    assert_int_equal(drain(p, t0), 2);
    qk_dns_poll_on_response(p, false, t0 + 1 * MS); /* the window drains */
    qk_dns_poll_on_response(p, false, t0 + 2 * MS);
    qk_time now = t0 + 2 * MS;
    unsigned lingered = 0;
    while (qk_dns_poll_next_timeout(p, now) < t0 + 500 * MS) {
        qk_time due = qk_dns_poll_next_timeout(p, now);
        assert_true(due - (now > t0 ? now : t0) <= 50 * MS); /* never a gap over 50 ms */
        assert_false(qk_dns_poll_take(p, due - 1));
        assert_true(qk_dns_poll_take(p, due));
        qk_dns_poll_on_response(p, false, due); /* answered empty: nothing owed */
        now = due;
        lingered++;
    }
    assert_int_equal(lingered, 9);                   /* t0 + 50, 100, ..., 450 */
    assert_int_equal(st(p).idle_delay_ns, 500 * MS); /* no back-off while lingering */
    qk_time want[] = {500, 1500, 3500, 7500};        /* then the back-off, from the data answer */
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        qk_time due = qk_dns_poll_next_timeout(p, now);
        assert_int_equal(due, t0 + want[i] * MS);
        assert_true(qk_dns_poll_take(p, due));
        now = due;
    }
    assert_int_equal(st(p).idle_polls, 13);
    qk_dns_poll_del(p);
}

/* A query carrying data after a lull takes polls along up to 10 queries
 * (the server's initial window, RFC 9002 §7.2), once a lull: the window
 * of one or two queries grew only 1.5x a round trip, 3 datagrams a round
 * trip for the first two of a download through unbound. Not while answers
 * with data come (the window is open), nor with polls_per_response 0. */
static void test_start_after_lull(void **state)
{
    (void)state;
    for (unsigned k = 0; k <= 2; k++) {
        qk_dns_poll *p = poll_with((int)k, -1, -1);
        qk_dns_poll_on_data_sent(p, 1 * MS); /* the first flight */
        assert_int_equal(drain(p, 1 * MS), k ? 9 : 0);
        qk_dns_poll_on_data_sent(p, 2 * MS); /* the same lull: no more */
        assert_int_equal(drain(p, 2 * MS), 0);
        qk_dns_poll_on_response(p, true, 200 * MS);
        assert_int_equal(drain(p, 200 * MS), k);
        qk_dns_poll_on_data_sent(p, 650 * MS); /* answers with data 450 ms ago */
        assert_int_equal(drain(p, 650 * MS), 0);
        qk_dns_poll_on_data_sent(p, 1200 * MS); /* none for 1 s: a lull */
        assert_int_equal(drain(p, 1200 * MS), k ? 9 : 0);
        qk_dns_poll_del(p);
    }
    qk_dns_poll *p = poll_with(-1, 4, -1);
    qk_dns_poll_on_data_sent(p, 1 * MS);
    assert_int_equal(drain(p, 1 * MS), 4); /* never above the burst cap */
    qk_dns_poll_del(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_polls_per_response), cmocka_unit_test(test_burst_cap),
        cmocka_unit_test(test_ack_as_poll),        cmocka_unit_test(test_idle_backoff),
        cmocka_unit_test(test_linger_after_data),  cmocka_unit_test(test_start_after_lull),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
