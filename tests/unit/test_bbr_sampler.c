/* SPDX-License-Identifier: MIT */
/* Delivery-rate sampler in recovery.c (draft-ietf-ccwg-bbr §4.1.2) against
 * hand-worked examples: the numbers in the comments are computed by hand
 * from the draft's pseudocode, not by the code under test. */
#include "qk_test.h"
#include "transport/recovery/recovery.h"

#include <stdlib.h>
#include <string.h>

#define MS QK_NS_PER_MS

typedef struct rs_cc {
    qk_cc cc;
    qk_rate_sample rs[16];
    size_t n_rs;
    qk_cc_lost lost[16];
    size_t n_lost;
    qk_cc_sent sent[64];
    size_t n_sent;
} rs_cc;

static void on_rs(qk_cc *cc, const qk_rate_sample *rs)
{
    rs_cc *r = (rs_cc *)cc;
    if (r->n_rs < 16) r->rs[r->n_rs++] = *rs;
}
static void on_lost(qk_cc *cc, const qk_cc_lost *l)
{
    rs_cc *r = (rs_cc *)cc;
    if (r->n_lost < 16) r->lost[r->n_lost++] = *l;
}
static void on_tx(qk_cc *cc, const qk_cc_sent *s)
{
    rs_cc *r = (rs_cc *)cc;
    if (r->n_sent < 64) r->sent[r->n_sent++] = *s;
}
static const qk_cc_ops rs_ops = {
    .name = "rs", .on_rate_sample = on_rs, .on_packet_lost = on_lost, .on_transmit = on_tx};

typedef struct fx {
    qk_recovery rec;
    qk_rtt rtt;
    rs_cc cc;
} fx;

static fx *setup(void)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->cc.cc.ops = &rs_ops;
    f->cc.cc.max_datagram_bytes = 1200;
    qk_rtt_init(&f->rtt, 0);
    qk_recovery_config cfg = {.is_server = true};
    assert_int_equal(qk_recovery_init(&f->rec, &cfg, &f->rtt, &f->cc.cc, NULL), 0);
    qk_recovery_set_handshake_confirmed(&f->rec, 0);
    return f;
}

static void teardown(fx *f)
{
    qk_recovery_free(&f->rec);
    free(f);
}

static void send_at(fx *f, uint64_t pn, qk_time t)
{
    qk_sent_packet p = {.pn = pn, .size_bytes = 1200, .ack_eliciting = true, .in_flight = true};
    assert_int_equal(qk_recovery_on_packet_sent(&f->rec, QK_PN_SPACE_APP, &p, NULL, 0, t), 0);
}

static void ack_range(fx *f, uint64_t lo, uint64_t hi, qk_time t)
{
    qk_ack_range r = {lo, hi};
    qk_ack_received a = {.ranges = &r, .n_ranges = 1};
    assert_true(qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, t) >= 0);
}

/* Ten packets 1 ms apart from idle, acked in two ACKs. */
static void test_first_flight(void **state)
{
    (void)state;
    fx *f = setup();
    for (uint64_t pn = 0; pn < 10; pn++) send_at(f, pn, pn * MS);
    /* P.tx_in_flight of pn 4 = 5 packets. */
    assert_int_equal(qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 4)->rs_tx_in_flight_bytes, 6000);
    ack_range(f, 0, 4, 100 * MS);
    assert_int_equal(f->cc.n_rs, 1);
    const qk_rate_sample *rs = &f->cc.rs[0];
    /* Newest pn 4: P.delivered 0, P.delivered_time 0, P.first_send_time 0,
     * send_elapsed 4 ms, ack_elapsed 100 ms -> interval 100 ms; delivered
     * 6000 bytes; min_rtt = 96 ms <= interval: rate 60000 B/s. */
    assert_true(rs->has_data);
    assert_int_equal(rs->send_elapsed_ns, 4 * MS);
    assert_int_equal(rs->ack_elapsed_ns, 100 * MS);
    assert_int_equal(rs->interval_ns, 100 * MS);
    assert_int_equal(rs->delivered_bytes, 6000);
    assert_int_equal(rs->delivery_rate_bytes_per_s, 60000);
    assert_int_equal(rs->prior_delivered_bytes, 0);
    assert_int_equal(rs->tx_in_flight_bytes, 6000);
    assert_int_equal(rs->newly_acked_bytes, 6000);
    assert_int_equal(rs->lost_bytes, 0);
    assert_int_equal(rs->last_pn, 4);
    assert_true(rs->has_rtt);
    assert_int_equal(rs->rtt_ns, 96 * MS);
    assert_false(rs->is_app_limited);
    assert_int_equal(rs->total_delivered_bytes, 6000);
    assert_int_equal(rs->bytes_in_flight, 6000);
    /* Second ACK at 105 ms: newest pn 9 (sent before any ACK: P.delivered
     * 0, P.delivered_time 0); send_elapsed 9 ms, ack_elapsed 105 ms;
     * delivered 12000 -> 12000 / 0.105 s = 114285 B/s. */
    ack_range(f, 5, 9, 105 * MS);
    rs = &f->cc.rs[1];
    assert_int_equal(rs->interval_ns, 105 * MS);
    assert_int_equal(rs->delivered_bytes, 12000);
    assert_int_equal(rs->delivery_rate_bytes_per_s, 114285);
    assert_int_equal(rs->bytes_in_flight, 0);
    teardown(f);
}

/* A packet sent while others are in flight starts its interval at the
 * latest ACK (C.delivered_time), not at its send time. */
static void test_pipelined(void **state)
{
    (void)state;
    fx *f = setup();
    send_at(f, 0, 0);
    send_at(f, 1, 0);
    ack_range(f, 0, 0, 100 * MS); /* C.delivered 1200, C.delivered_time 100 ms */
    send_at(f, 2, 110 * MS);      /* P.delivered 1200, P.delivered_time 100, first_send 0 */
    const qk_sent_packet *p = qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 2);
    assert_int_equal(p->rs_delivered_bytes, 1200);
    assert_int_equal(p->rs_delivered_time, 100 * MS);
    assert_int_equal(p->rs_first_sent_time, 0); /* send time of the last delivered (pn 0) */
    ack_range(f, 1, 2, 220 * MS);
    const qk_rate_sample *rs = &f->cc.rs[1];
    /* newest pn 2: send_elapsed 110 - 0 = 110 ms, ack_elapsed 220 - 100 =
     * 120 ms: interval 120 ms; delivered 3600 - 1200 = 2400 bytes ->
     * 20000 B/s. */
    assert_int_equal(rs->last_pn, 2);
    assert_int_equal(rs->send_elapsed_ns, 110 * MS);
    assert_int_equal(rs->ack_elapsed_ns, 120 * MS);
    assert_int_equal(rs->delivered_bytes, 2400);
    assert_int_equal(rs->delivery_rate_bytes_per_s, 20000);
    /* The guard against intervals shorter than min_rtt: pn 3 (230 ms, from
     * idle) and pn 4 (240 ms); pn 4 acked at 340 ms; pn 3 acked alone at
     * 345 ms takes no RTT sample (its ACK's largest, 4, is not new), with
     * interval max(0, 345 - 230) = 115 ms. With a min_rtt of 200 ms (set
     * here as if measured on an earlier, slower path) that is no rate
     * sample; delivered is still reported: 6000 - P.delivered 3600 = 2400
     * (pn 4 was delivered within pn 3's interval too). */
    send_at(f, 3, 230 * MS);
    send_at(f, 4, 240 * MS);
    ack_range(f, 4, 4, 340 * MS);
    f->rtt.min_rtt_ns = 200 * MS;
    qk_ack_range two[2] = {{4, 4}, {3, 3}};
    qk_ack_received a = {.ranges = two, .n_ranges = 2};
    assert_int_equal(qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 345 * MS), 1);
    rs = &f->cc.rs[3];
    assert_true(rs->has_data);
    assert_int_equal(rs->last_pn, 3);
    assert_int_equal(rs->interval_ns, 115 * MS);
    assert_int_equal(rs->delivery_rate_bytes_per_s, 0);
    assert_int_equal(rs->delivered_bytes, 2400);
    teardown(f);
}

/* MarkConnectionAppLimited: packets sent until the bubble is delivered are
 * app-limited; the mark clears once C.delivered passes it. */
static void test_app_limited(void **state)
{
    (void)state;
    fx *f = setup();
    send_at(f, 0, 0);
    send_at(f, 1, 0);
    ack_range(f, 0, 0, 100 * MS);
    qk_recovery_mark_app_limited(&f->rec); /* C.app_limited = 1200 + 1200 = 2400 */
    assert_int_equal(f->rec.dlv.app_limited_until, 2400);
    send_at(f, 2, 100 * MS);
    assert_true(qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 2)->rs_app_limited);
    assert_true(f->cc.sent[2].conn_app_limited);
    assert_false(f->cc.sent[1].conn_app_limited);
    ack_range(f, 1, 1, 150 * MS); /* delivered 2400: not past the mark */
    assert_int_equal(f->rec.dlv.app_limited_until, 2400);
    assert_false(f->cc.rs[1].is_app_limited); /* pn 1 was sent before the mark */
    ack_range(f, 2, 2, 200 * MS);             /* delivered 3600 > 2400: cleared */
    assert_true(f->cc.rs[2].is_app_limited);
    assert_int_equal(f->rec.dlv.app_limited_until, 0);
    send_at(f, 3, 210 * MS);
    assert_false(qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 3)->rs_app_limited);
    /* Nothing in flight: a mark is still non-zero. */
    ack_range(f, 3, 3, 300 * MS);
    qk_recovery_mark_app_limited(&f->rec);
    assert_int_equal(f->rec.dlv.app_limited_until, 4800);
    teardown(f);
}

/* RS.lost = C.lost - P.lost; lost packets reach on_packet_lost with their
 * snapshot, before the ACK's rate sample. */
static void test_losses(void **state)
{
    (void)state;
    fx *f = setup();
    for (uint64_t pn = 0; pn < 8; pn++) send_at(f, pn, pn * MS);
    /* Acks 4..5 at 100 ms: pn 0..2 are >= 3 below the largest: lost
     * (packet threshold); pn 3 waits for the time threshold (9/8 x 95 ms
     * after 3 ms); 6 and 7 stay in flight. */
    ack_range(f, 4, 5, 100 * MS);
    assert_int_equal(f->cc.n_lost, 3);
    assert_int_equal(f->cc.lost[0].pn, 0);
    assert_int_equal(f->cc.lost[0].tx_in_flight_bytes, 1200);
    assert_int_equal(f->cc.lost[0].lost_at_send_bytes, 0);
    assert_int_equal(f->cc.lost[0].total_lost_bytes, 1200);
    assert_int_equal(f->cc.lost[2].pn, 2);
    assert_int_equal(f->cc.lost[2].tx_in_flight_bytes, 3600);
    assert_int_equal(f->cc.lost[2].total_lost_bytes, 3600);
    const qk_rate_sample *rs = &f->cc.rs[0];
    /* newest pn 5: P.lost 0, C.lost 3600 -> RS.lost 3600; tx_in_flight 6 packets. */
    assert_int_equal(rs->lost_bytes, 3600);
    assert_int_equal(rs->newly_lost_bytes, 3600);
    assert_int_equal(rs->tx_in_flight_bytes, 7200);
    assert_int_equal(rs->newly_acked_bytes, 2400);
    assert_int_equal(rs->delivered_bytes, 2400);
    assert_int_equal(rs->bytes_in_flight, 3600);
    /* A packet sent now snapshots C.lost = 3600. */
    send_at(f, 8, 101 * MS);
    assert_int_equal(qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 8)->rs_lost_bytes, 3600);
    teardown(f);
}

/* qk_recovery_max_delivery_rate (the pipe limit's path estimate,
 * conn_send.c pipe_limit_bytes): the max of this window's samples and the
 * last one's, 4 s windows. App-limited samples below it are not taken, and
 * a window that took none does not age it: a sender that holds data back
 * must not come to measure its own limit as the path (media family at
 * 20 Mbit/s, 30 ms one way: the estimate fell from 9.4 to 3.5 Mbit/s 20 s
 * in and HD video lagged 4-9 s). Samples that are not app-limited age it
 * within two windows. */
static void test_max_rate_ages_only_on_samples(void **state)
{
    (void)state;
    fx *f = setup();
    for (uint64_t pn = 0; pn < 10; pn++) send_at(f, pn, pn * MS);
    ack_range(f, 0, 4, 100 * MS);
    ack_range(f, 5, 9, 105 * MS); /* 60000, then 114285 B/s (test_first_flight) */
    assert_int_equal(qk_recovery_max_delivery_rate(&f->rec), 114285);
    /* One app-limited packet every 3 s from idle, acked 100 ms later: a
     * sample of 1200 B in 100 ms (from idle the interval starts at the
     * send), 12000 B/s, below the max.
     * Windows turn at 6.1 s and 12.1 s (the second took no sample). */
    uint64_t pn = 10;
    for (qk_time t = 3000 * MS; t <= 15000 * MS; t += 3000 * MS, pn++) {
        qk_recovery_mark_app_limited(&f->rec);
        send_at(f, pn, t);
        ack_range(f, pn, pn, t + 100 * MS);
        const qk_rate_sample *rs = &f->cc.rs[f->cc.n_rs - 1];
        assert_true(rs->is_app_limited);
        assert_int_equal(rs->delivery_rate_bytes_per_s, 12000);
        assert_int_equal(qk_recovery_max_delivery_rate(&f->rec), 114285);
    }
    /* The same packets not app-limited: taken (window from 18.1 s), and
     * at the turn at 24.1 s the old max is gone. */
    for (qk_time t = 18000 * MS; t <= 24000 * MS; t += 3000 * MS, pn++) {
        send_at(f, pn, t);
        ack_range(f, pn, pn, t + 100 * MS);
        const qk_rate_sample *rs = &f->cc.rs[f->cc.n_rs - 1];
        assert_false(rs->is_app_limited);
        assert_int_equal(qk_recovery_max_delivery_rate(&f->rec), t < 24000 * MS ? 114285 : 12000);
    }
    assert_true(f->cc.n_rs < 16);
    teardown(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_flight),
        cmocka_unit_test(test_pipelined),
        cmocka_unit_test(test_app_limited),
        cmocka_unit_test(test_losses),
        cmocka_unit_test(test_max_rate_ages_only_on_samples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
