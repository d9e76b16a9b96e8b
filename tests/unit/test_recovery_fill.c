/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/conn_send.c */
/* The congestion window limits bytes, not packets (RFC 9002 §7): once a
 * full datagram no longer fits, the sender fills the remainder with a
 * shorter one when at least half a datagram is left, and sends nothing
 * in flight when less is left; either way bytes in flight stay within
 * cwnd. */
#include "qk_pair.h"
#include "qk_test.h"
#include "transport/conn/conn.h"

#include <string.h>

/* A confirmed pair whose server has `bytes` of a stream to send, unsent. */
static qk_conn *server_with_data(qk_pair *p, size_t bytes)
{
    assert_int_equal(qk_pair_init(p, 10 * QK_NS_PER_MS), 0);
    assert_int_equal(qk_pair_start(p), 0);
    assert_true(qk_pair_run_until(p, qk_pair_confirmed, NULL, p->now + 5 * QK_NS_PER_S));
    qk_conn *s = p->sconn;
    assert_non_null(s);
    assert_true(s->handshake_confirmed);
    uint64_t sid;
    assert_int_equal(qk_stream_open(s, false, &sid), 0);
    static uint8_t data[64 << 10];
    memset(data, 'x', sizeof data);
    assert_true(bytes <= sizeof data);
    assert_int_equal(qk_stream_write(s, sid, data, bytes, false), (long)bytes);
    return s;
}

static void test_fills_remainder(void **state)
{
    (void)state;
    qk_pair p;
    qk_conn *s = server_with_data(&p, 60000);
    qk_time now = p.now + 50 * QK_NS_PER_MS; /* the pacer has refilled */
    uint64_t mds = s->max_udp_bytes;
    uint64_t before = qk_recovery_bytes_in_flight(&s->rec);
    s->cc.cwnd_bytes = before + mds * 6 / 10; /* 60 % of a datagram left */
    uint8_t buf[2048];
    size_t n = qk_conn_send(s, buf, sizeof buf, now);
    uint64_t after = qk_recovery_bytes_in_flight(&s->rec);
    fprintf(stderr, "room %llu: sent %zu, in flight %llu -> %llu\n",
            (unsigned long long)(mds * 6 / 10), n, (unsigned long long)before,
            (unsigned long long)after);
    assert_true(n > mds / 2); /* the old rule sent nothing here */
    assert_int_equal(after, before + n);
    assert_true(after <= s->cc.cwnd_bytes);
    qk_pair_free(&p);
}

static void test_less_than_half_waits(void **state)
{
    (void)state;
    qk_pair p;
    qk_conn *s = server_with_data(&p, 60000);
    qk_time now = p.now + 50 * QK_NS_PER_MS;
    uint64_t mds = s->max_udp_bytes;
    uint64_t before = qk_recovery_bytes_in_flight(&s->rec);
    s->cc.cwnd_bytes = before + mds * 4 / 10; /* 40 % left: not worth a packet */
    uint8_t buf[2048];
    for (int i = 0; i < 4; i++) qk_conn_send(s, buf, sizeof buf, now); /* ACKs may go */
    assert_int_equal(qk_recovery_bytes_in_flight(&s->rec), before);
    /* A full window's worth later: full datagrams again. */
    s->cc.cwnd_bytes = before + 2 * mds;
    size_t n = qk_conn_send(s, buf, sizeof buf, now);
    assert_int_equal(n, mds);
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fills_remainder),
        cmocka_unit_test(test_less_than_half_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
