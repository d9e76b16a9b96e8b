/* SPDX-License-Identifier: MIT */
/* Urgency (RFC 9218) of DATAGRAMs and streams in the send path, and the
 * rate-limited congestion-control bypass, on a real connection
 * pair (tests/support/qk_pair). */
#include "qk_pair.h"
#include "qk_test.h"
#include "transport/conn/conn.h"

#define MS QK_NS_PER_MS

static void start(qk_pair *p, uint8_t bypass_limit)
{
    assert_int_equal(qk_pair_init(p, 5 * MS), 0);
    p->ccfg.max_datagram_frame_bytes = p->scfg.max_datagram_frame_bytes = 1200;
    p->ccfg.bypass_urgency_limit = bypass_limit;
    assert_int_equal(qk_pair_start(p), 0);
    assert_true(qk_pair_run_until(p, qk_pair_confirmed, NULL, p->now + 2 * QK_NS_PER_S));
    qk_pair_flush(p);
    qk_event ev;
    while (qk_endpoint_poll_event(p->server, &ev)) {
    }
}

/* Build one datagram at the client, hand it to the server, and collect the
 * order of the DATAGRAM payloads' tags (first byte) and stream data. */
static size_t deliver_one(qk_pair *p, char *order, size_t cap)
{
    uint8_t buf[1500];
    qk_datagram out = {.data = buf, .len = sizeof buf};
    if (qk_endpoint_send(p->client, &out, 1, p->now) != 1) return 0;
    out.local = p->saddr;
    out.peer = p->caddr;
    assert_int_equal(qk_endpoint_recv(p->server, &out, p->now), 0);
    qk_event ev;
    size_t n = 0;
    while (qk_endpoint_poll_event(p->server, &ev) && n + 1 < cap) {
        if (ev.type == QK_EV_DATAGRAM) order[n++] = (char)ev.data[0];
        if (ev.type == QK_EV_STREAM_READABLE || ev.type == QK_EV_STREAM_OPENED) order[n++] = 'S';
    }
    order[n] = 0;
    return n;
}

static void test_datagrams_in_urgency_order(void **state)
{
    (void)state;
    qk_pair p;
    start(&p, 0);
    /* Tags: letter = urgency order expected (FIFO within one urgency). */
    const struct {
        uint8_t tag, urgency;
    } d[] = {{'d', 5}, {'a', 1}, {'c', 3}, {'b', 1}, {'e', 7}};
    uint8_t msg[100] = {0};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        msg[0] = d[i].tag;
        assert_int_equal(qk_datagram_send(p.cconn, msg, sizeof msg, d[i].urgency), 0);
    }
    assert_int_equal(qk_datagram_send(p.cconn, msg, 10, 8), QK_ERR_INVALID_ARG);
    char order[16];
    assert_int_equal(deliver_one(&p, order, sizeof order), 5);
    assert_string_equal(order, "abcde");
    qk_pair_free(&p);
}

/* A stream of urgency 2 goes between datagrams of urgency 0 and 4: the
 * 1,100-byte stream write fills the packet after the urgent datagram, the
 * urgency-4 datagram waits for the next packet. */
static void test_datagrams_and_streams_by_urgency(void **state)
{
    (void)state;
    qk_pair p;
    start(&p, 0);
    uint64_t sid;
    assert_int_equal(qk_stream_open(p.cconn, false, &sid), 0);
    assert_int_equal(qk_stream_set_priority(p.cconn, sid, 2, false), 0);
    uint8_t data[1100] = {0};
    assert_int_equal(qk_stream_write(p.cconn, sid, data, sizeof data, false), (long)sizeof data);
    uint8_t msg[200] = {'L'};
    assert_int_equal(qk_datagram_send(p.cconn, msg, sizeof msg, 4), 0);
    msg[0] = 'H';
    assert_int_equal(qk_datagram_send(p.cconn, msg, sizeof msg, 0), 0);
    char order[16];
    deliver_one(&p, order, sizeof order);
    assert_true(order[0] == 'H' && strchr(order, 'S') && !strchr(order, 'L'));
    deliver_one(&p, order, sizeof order);
    assert_string_equal(order, "L");
    qk_pair_free(&p);
}

/* Fill the congestion window with urgent stream data and never acknowledge
 * it: past the window only the bypass sends, at most the bucket at once and
 * the bucket's rate after that; non-urgent data never bypasses. */
static uint64_t bypass_after(uint8_t limit, uint8_t urgency, qk_time wait, uint64_t *pkts)
{
    qk_pair p;
    start(&p, limit);
    uint64_t sid;
    assert_int_equal(qk_stream_open(p.cconn, false, &sid), 0);
    assert_int_equal(qk_stream_set_priority(p.cconn, sid, urgency, false), 0);
    static uint8_t data[60000];
    assert_true(qk_stream_write(p.cconn, sid, data, sizeof data, false) > 0);
    uint8_t buf[1500];
    qk_time end = p.now + wait;
    for (qk_time t = p.now; t <= end; t += MS) {
        /* As a driver does: timers first (the endpoint visits only the
         * connections a timer, a datagram or an API call woke). */
        if (qk_endpoint_next_timeout(p.client) <= t) qk_endpoint_on_timeout(p.client, t);
        qk_datagram out = {.data = buf, .len = sizeof buf};
        while (qk_endpoint_send(p.client, &out, 1, t) == 1) out.len = sizeof buf; /* dropped */
    }
    qk_conn_stats st;
    qk_conn_stats_get(p.cconn, &st);
    assert_true(st.bytes_in_flight >= st.cwnd_bytes - 1500); /* the window was the limit */
    *pkts = st.bypass_pkts;
    qk_pair_free(&p);
    return st.bypass_bytes;
}

static void test_bypass_rate_limited(void **state)
{
    (void)state;
    uint64_t pkts;
    /* Within 0 ms: only the 2,560-byte bucket (and not less than a packet). */
    uint64_t b0 = bypass_after(5, 2, 0, &pkts);
    assert_true(b0 > 1000 && b0 <= 2560);
    /* Within 200 ms: at most 2,560 + 125,000 B/s x 0.2 s = 27,560 bytes. */
    uint64_t b200 = bypass_after(5, 2, 200 * MS, &pkts);
    assert_true(b200 <= 27560);
    assert_true(b200 > 20000); /* and it does flow */
    assert_true(pkts > 10);
    /* Urgency 5 is not below the limit 5; limit 0 is off. */
    assert_int_equal(bypass_after(5, 5, 50 * MS, &pkts), 0);
    assert_int_equal(bypass_after(0, 0, 50 * MS, &pkts), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_datagrams_in_urgency_order),
        cmocka_unit_test(test_datagrams_and_streams_by_urgency),
        cmocka_unit_test(test_bypass_rate_limited),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
