/* SPDX-License-Identifier: MIT */
/* covers: src/transport/streams/flow.c src/transport/conn/conn_flow.c */
/* Flow control (RFC 9000 §4) and receive-window auto-tuning. */
#include "qk_test.h"
#include "transport/streams/flow.h"

#define MS QK_NS_PER_MS

static void test_rx_accounting_and_violation(void **state)
{
    (void)state;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 1000, false, NULL);
    uint64_t nb = 99;
    assert_int_equal(qk_flow_rx_on_data(&rx, 400, &nb), 0);
    assert_int_equal(nb, 400);
    assert_int_equal(qk_flow_rx_on_data(&rx, 300, &nb), 0); /* retransmission below */
    assert_int_equal(nb, 0);
    assert_int_equal(qk_flow_rx_on_data(&rx, 1000, &nb), 0); /* exactly at the limit */
    assert_int_equal(nb, 600);
    assert_int_equal(rx.received_bytes, 1000);
    /* RFC 9000 §4.1: one byte beyond is FLOW_CONTROL_ERROR, state unchanged. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 1001, &nb), QK_ERR_FLOW_CONTROL);
    assert_int_equal(rx.received_bytes, 1000);
    /* Connection-level form. */
    qk_flow_rx conn;
    qk_flow_rx_init(&conn, 5000, 5000, false, NULL);
    assert_int_equal(qk_flow_rx_add(&conn, 4999), 0);
    assert_int_equal(qk_flow_rx_add(&conn, 1), 0);
    assert_int_equal(qk_flow_rx_add(&conn, 1), QK_ERR_FLOW_CONTROL);
    assert_int_equal(qk_flow_rx_add(&conn, UINT64_MAX), QK_ERR_FLOW_CONTROL);
    assert_int_equal(conn.received_bytes, 5000);
    /* Consumption cannot pass what arrived. */
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 600), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 401), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 400), 0);
    assert_int_equal(rx.consumed_bytes, 1000);
}

static void test_rx_update_threshold(void **state)
{
    (void)state;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 1000, false, NULL);
    assert_int_equal(qk_flow_rx_on_data(&rx, 1000, NULL), 0);
    assert_false(qk_flow_rx_should_update(&rx));
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 500), 0); /* credit 500 = window / 2 */
    assert_false(qk_flow_rx_should_update(&rx));
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 1), 0); /* credit 499 < 500 */
    assert_true(qk_flow_rx_should_update(&rx));
    assert_int_equal(qk_flow_rx_update(&rx, 10 * MS, 50 * MS), 1501); /* consumed + window */
    assert_int_equal(rx.max_data_bytes, 1501);
    assert_int_equal(rx.window_bytes, 1000); /* no autotune */
    assert_false(qk_flow_rx_should_update(&rx));
    /* Exact credit: the peer may send up to 1501, not one byte more. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 1501, NULL), 0);
    assert_int_equal(qk_flow_rx_on_data(&rx, 1502, NULL), QK_ERR_FLOW_CONTROL);
    /* The limit never decreases. */
    qk_flow_rx r2;
    qk_flow_rx_init(&r2, 1000, 1000, false, NULL);
    assert_int_equal(qk_flow_rx_update(&r2, 0, 50 * MS), 1000);
}

/* Receive and consume the whole credit, then issue an update at time t. */
static uint64_t drain_and_update(qk_flow_rx *rx, qk_time t, qk_time srtt)
{
    assert_int_equal(qk_flow_rx_on_data(rx, rx->max_data_bytes, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(rx, rx->received_bytes - rx->consumed_bytes), 0);
    assert_true(qk_flow_rx_should_update(rx));
    return qk_flow_rx_update(rx, t, srtt);
}

static void test_autotune_doubling_and_cap(void **state)
{
    (void)state;
    const qk_time srtt = 40 * MS;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 5000, true, NULL);
    rx.plain_doubling = true; /* the trigger alone; sizing: test_sizing */
    /* First update: no previous update to compare with, no growth. */
    assert_int_equal(drain_and_update(&rx, 100 * MS, srtt), 2000);
    assert_int_equal(rx.window_bytes, 1000);
    /* Credit used within 2 * srtt (79 ms < 80 ms): double. */
    assert_int_equal(drain_and_update(&rx, 179 * MS, srtt), 2000 + 2000);
    assert_int_equal(rx.window_bytes, 2000);
    /* Exactly 2 * srtt: not faster than the rule, no growth. */
    assert_int_equal(drain_and_update(&rx, 259 * MS, srtt), 4000 + 2000);
    assert_int_equal(rx.window_bytes, 2000);
    /* Fast again: 4000, then the cap 5000 (not 8000), then stays. */
    assert_int_equal(drain_and_update(&rx, 260 * MS, srtt), 6000 + 4000);
    assert_int_equal(drain_and_update(&rx, 261 * MS, srtt), 10000 + 5000);
    assert_int_equal(drain_and_update(&rx, 262 * MS, srtt), 15000 + 5000);
    assert_int_equal(rx.window_bytes, 5000);
    /* Without autotune the window never changes. */
    qk_flow_rx fixed;
    qk_flow_rx_init(&fixed, 1000, 5000, false, NULL);
    for (int i = 0; i < 5; i++) drain_and_update(&fixed, (qk_time)i, srtt);
    assert_int_equal(fixed.window_bytes, 1000);
}

static void test_autotune_budget(void **state)
{
    (void)state;
    const qk_time srtt = 40 * MS;
    qk_flow_budget b;
    qk_flow_budget_init(&b, 3000);
    qk_flow_rx a, c;
    qk_flow_rx_init(&a, 1000, 100000, true, &b);
    qk_flow_rx_init(&c, 1000, 100000, true, &b);
    drain_and_update(&a, 0, srtt);
    drain_and_update(&a, 1, srtt); /* +1000 granted */
    assert_int_equal(a.window_bytes, 2000);
    drain_and_update(&a, 2, srtt); /* +2000 granted: budget now full */
    assert_int_equal(a.window_bytes, 4000);
    assert_int_equal(b.used_bytes, 3000);
    drain_and_update(&a, 3, srtt); /* +4000 refused */
    assert_int_equal(a.window_bytes, 4000);
    drain_and_update(&c, 0, srtt);
    drain_and_update(&c, 1, srtt); /* refused for the other window too */
    assert_int_equal(c.window_bytes, 1000);
    qk_flow_rx_free(&a); /* a's growth goes back to the budget */
    assert_int_equal(b.used_bytes, 0);
    drain_and_update(&c, 2, srtt);
    assert_int_equal(c.window_bytes, 2000);
    assert_int_equal(b.used_bytes, 1000);
    qk_flow_rx_free(&c);
    assert_false(qk_flow_budget_grant(&b, 3001));
    assert_true(qk_flow_budget_grant(&b, 3000));
}

static uint64_t below(uint64_t *rng, uint64_t n)
{
    return qk_test_rand64(rng) % n;
}

/* RTT2 rule boundaries, and a repeated update (frame that did not fit,
 * retransmitted MAX_STREAM_DATA) never counts as fast credit. */
static void test_rtt2_rule_exact(void **state)
{
    (void)state;
    const qk_time srtt = 10 * MS;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 1u << 20, true, NULL);
    rx.plain_doubling = true;
    drain_and_update(&rx, 0, srtt);
    /* Repeated update at the same instant with nothing consumed: no growth. */
    assert_int_equal(qk_flow_rx_update(&rx, 1, srtt), 2000);
    assert_int_equal(rx.window_bytes, 1000);
    /* Exactly half a window consumed (and read) within 2 srtt: doubles. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 1500, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 500), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 5 * MS, srtt), 1500 + 2000);
    assert_int_equal(rx.window_bytes, 2000);
    /* 999 of 2000 (less than half) within 2 srtt: not the previous credit. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 2499, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 999), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 6 * MS, srtt), 2499 + 2000);
    assert_int_equal(rx.window_bytes, 2000);
    /* 1000 more, 19.999 ms after that update (< 20 ms): doubles. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 3499, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 1000), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 6 * MS + 19999999, srtt), 3499 + 4000);
    /* Fast in time, but a quarter window (1001 > 4000 / 4) left unread: the
     * reader is the limit, no growth. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 3499 + 4000, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 2999), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 27 * MS, srtt), 6498 + 4000);
    assert_int_equal(rx.window_bytes, 4000);
    assert_int_equal(rx.grows, 2);
}

/* quic-go's epoch rule: fast when the fraction f (> 1/2) of the window used
 * in the epoch took less than 4 * f * srtt; f <= 1/2 keeps the epoch open. */
static void test_epoch_rule_exact(void **state)
{
    (void)state;
    const qk_time srtt = 10 * MS;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 1u << 20, true, NULL);
    rx.rule = QK_FLOW_RULE_EPOCH;
    rx.plain_doubling = true;
    assert_int_equal(qk_flow_rx_update(&rx, 0, srtt), 1000); /* epoch starts at t = 0 */
    /* 500 of 1000 (f = 1/2): not judged, the epoch stays open. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 1000, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 500), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 1 * MS, srtt), 1500);
    assert_int_equal(rx.window_bytes, 1000);
    assert_int_equal(rx.epoch_start_ns, 0);
    /* 750 (f = 3/4) after exactly 4 * 3/4 * srtt = 30 ms: not faster. */
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 250), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 30 * MS, srtt), 750 + 1000);
    assert_int_equal(rx.window_bytes, 1000);
    assert_int_equal(rx.epoch_start_ns, 30 * MS); /* judged: new epoch */
    /* 750 again, 29 ms later (< 30 ms): doubles. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 1750, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 750), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 59 * MS, srtt), 1500 + 2000);
    assert_int_equal(rx.window_bytes, 2000);
    /* A full window (f = 1) in 39 ms < 40 ms: doubles; 40 ms would not. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 3500, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 2000), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 98 * MS, srtt), 3500 + 4000);
    assert_int_equal(rx.window_bytes, 4000);
    assert_int_equal(qk_flow_rx_on_data(&rx, 7500, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 4000), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 138 * MS, srtt), 7500 + 4000);
    assert_int_equal(rx.window_bytes, 4000);
}

/* A slow reader leaves data unread: updates come "fast" in time but the
 * window must not grow (the application, not the window, is the limit). */
static void test_slow_reader_caps_window(void **state)
{
    (void)state;
    const qk_time srtt = 60 * MS;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 64000, 16u << 20, true, NULL);
    qk_time t = 0;
    qk_flow_rx_update(&rx, t, srtt);
    uint64_t peak_unread = 0;
    for (int i = 0; i < 2000; i++) {
        /* The network fills the credit at once (a fast link). */
        assert_int_equal(qk_flow_rx_on_data(&rx, rx.max_data_bytes, NULL), 0);
        uint64_t unread = rx.received_bytes - rx.consumed_bytes;
        if (unread > peak_unread) peak_unread = unread;
        /* The application reads 8 KB every 6.5 ms (about 10 Mbit/s). */
        t += 6500 * QK_NS_PER_US;
        assert_int_equal(qk_flow_rx_on_consumed(&rx, 8000), 0);
        if (qk_flow_rx_should_update(&rx)) qk_flow_rx_update(&rx, t, srtt);
        qk_flow_rx_tick(&rx, t, srtt);
    }
    assert_int_equal(rx.window_bytes, 64000);
    assert_int_equal(rx.grows, 0);
    assert_true(peak_unread <= 64000); /* the buffer is bounded by the initial window */
    /* The same reader after the window had grown: it shrinks back to the
     * initial window (one halving per QK_FLOW_DECAY_RTTS srtt). */
    qk_flow_rx g;
    qk_flow_rx_init(&g, 64000, 16u << 20, true, NULL);
    for (int i = 0; i < 4; i++) drain_and_update(&g, (qk_time)i * MS, srtt); /* 512000 */
    assert_int_equal(g.window_bytes, 512000);
    t = 10 * MS;
    for (int i = 0; i < 400; i++) {
        assert_int_equal(qk_flow_rx_on_data(&g, g.max_data_bytes, NULL), 0);
        t += 6500 * QK_NS_PER_US;
        assert_int_equal(qk_flow_rx_on_consumed(&g, 8000), 0);
        if (qk_flow_rx_should_update(&g)) qk_flow_rx_update(&g, t, srtt);
        qk_flow_rx_tick(&g, t, srtt);
    }
    assert_int_equal(g.window_bytes, 64000);
    assert_int_equal(g.decays, 3);
}

/* Random read/arrival patterns: the window never passes its cap, the budget
 * is never exceeded, and what windows hold adds up to what the budget counts. */
static void test_caps_and_budget_invariants(void **state)
{
    (void)state;
    uint64_t rng = 7;
    qk_flow_budget b;
    qk_flow_budget_init(&b, 3u << 20);
    enum { N = 6 };
    qk_flow_rx rx[N];
    for (int i = 0; i < N; i++) {
        qk_flow_rx_init(&rx[i], 65536, 2u << 20, true, &b);
        rx[i].rule = i % 2 ? QK_FLOW_RULE_EPOCH : QK_FLOW_RULE_RTT2;
    }
    qk_time t = 0, srtt = 20 * MS;
    for (int step = 0; step < 20000; step++) {
        qk_flow_rx *r = &rx[below(&rng, N)];
        t += below(&rng, 2 * MS);
        uint64_t credit = r->max_data_bytes - r->received_bytes;
        if (credit) qk_flow_rx_on_data(r, r->received_bytes + 1 + below(&rng, credit), NULL);
        uint64_t unread = r->received_bytes - r->consumed_bytes;
        if (unread && below(&rng, 4)) qk_flow_rx_on_consumed(r, 1 + below(&rng, unread));
        if (qk_flow_rx_should_update(r)) qk_flow_rx_update(r, t, srtt);
        if (below(&rng, 8) == 0) qk_flow_rx_raise(r, r->window_bytes * 3);
        qk_flow_rx_tick(r, t, srtt);
        uint64_t held = 0;
        for (int i = 0; i < N; i++) {
            assert_true(rx[i].window_bytes <= rx[i].max_window_bytes);
            assert_true(rx[i].window_bytes >= rx[i].initial_window_bytes);
            /* What each window promises beyond its initial window is held. */
            uint64_t out = rx[i].max_data_bytes - rx[i].consumed_bytes;
            assert_true(out <= rx[i].initial_window_bytes + rx[i].granted_bytes);
            held += rx[i].granted_bytes;
        }
        assert_int_equal(held, b.used_bytes);
        assert_true(b.used_bytes <= b.capacity_bytes);
    }
    uint64_t grows = 0;
    for (int i = 0; i < N; i++) grows += rx[i].grows;
    assert_true(grows > 0);
    for (int i = 0; i < N; i++) qk_flow_rx_free(&rx[i]);
    assert_int_equal(b.used_bytes, 0);
}

/* Sizing: on a trigger the window grows to min(2w, 2 x delivery per sizing
 * RTT), the delivery measured since a checkpoint 0.5-1.5 sizing RTT old, as
 * the growth of the highest offset received; the sizing RTT is
 * min(srtt, min_rtt + min(1 ms, min_rtt / 4)). Arithmetic below with srtt =
 * 10 ms (checkpoints >= 5 ms apart, 2.5 ms once the sizing RTT is 5 ms). */
static void test_sizing(void **state)
{
    (void)state;
    const qk_time srtt = 10 * MS;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 1u << 20, true, NULL);
    qk_flow_rx_update(&rx, 0, srtt);
    /* 1000 delivered in 10 ms = 1000 per srtt: target min(2000, 2000). */
    assert_int_equal(qk_flow_rx_on_data(&rx, 1000, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 1000), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 10 * MS, srtt), 1000 + 2000);
    /* 1200 in 10 ms: min(4000, 2400) = 2400, not a doubling. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 2200, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 1200), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 20 * MS, srtt), 2200 + 2400);
    assert_int_equal(rx.window_bytes, 2400);
    /* A queue inflated srtt: min_rtt 4 ms, so the sizing RTT is 5 ms, not
     * 10. 1500 in 10 ms (the trigger fires: half the window within 2 srtt)
     * is 750 per 5 ms: 2 x 750 = 1500 < 2400, no growth. Sized by srtt it
     * would have been 3000 (growth). */
    rx.min_rtt_ns = 4 * MS;
    assert_int_equal(qk_flow_rx_on_data(&rx, 3700, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 1500), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 30 * MS, srtt), 3700 + 2400);
    assert_int_equal(rx.window_bytes, 2400);
    /* A read burst after a hole is filled is not delivery: 2400 arrive by
     * 36 ms (checkpoint at the tick), unread; at 40 ms all are read at once.
     * Since the 36 ms checkpoint 2400 were read but 0 arrived: no growth
     * (reads alone would say 2400 per 4 ms: 4800, a doubling). */
    assert_int_equal(qk_flow_rx_on_data(&rx, 6100, NULL), 0);
    qk_flow_rx_tick(&rx, 36 * MS, srtt);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 2400), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 40 * MS, srtt), 6100 + 2400);
    assert_int_equal(rx.window_bytes, 2400);
    /* 2400 delivered in 4 ms = 3000 per sizing RTT: sized 6000, doubling
     * caps it: 4800. */
    assert_int_equal(qk_flow_rx_on_data(&rx, 8500, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 2400), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 44 * MS, srtt), 8500 + 4800);
    assert_int_equal(rx.grows, 3);
    /* The credit committed peaked right after that update: the window. */
    assert_int_equal(rx.peak_credit_bytes, 4800);
    /* A 1 ms path: the slack is min_rtt / 4, the sizing RTT 1.25 ms (not
     * 2 ms). 1000 in 2 ms = 625 per 1.25 ms: min(2000, 1250) = 1250. */
    qk_flow_rx sh;
    qk_flow_rx_init(&sh, 1000, 1u << 20, true, NULL);
    sh.min_rtt_ns = 1 * MS;
    qk_flow_rx_update(&sh, 0, srtt);
    assert_int_equal(qk_flow_rx_on_data(&sh, 1000, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&sh, 1000), 0);
    assert_int_equal(qk_flow_rx_update(&sh, 2 * MS, srtt), 1000 + 1250);
}

/* Under loss (the tunnel's 1 % path): the peer used up its credit, but the
 * reads stalled behind a gap, so the credit did not go "fast" by the timing
 * rule (read 25 ms after the update, srtt 10 ms). The window still grows:
 * the peer was blocked by it. The delivery is what arrived since the
 * checkpoint at 6 ms: 1000 in 19 ms = 526.3 per 10 ms; the held bytes
 * (average 300) take the sizing factor too: 2 x (526.3 + 300) = 1652. */
static void test_sizing_under_loss(void **state)
{
    (void)state;
    const qk_time srtt = 10 * MS;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 1u << 20, true, NULL);
    qk_flow_rx_update(&rx, 0, srtt);
    qk_flow_rx_tick(&rx, 6 * MS, srtt); /* checkpoint: nothing arrived yet */
    assert_int_equal(qk_flow_rx_on_data(&rx, 1000, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 1000), 0);
    rx.held_avg_bytes = 300;
    assert_int_equal(qk_flow_rx_update(&rx, 25 * MS, srtt), 1000 + 1652);
    assert_int_equal(rx.window_bytes, 1652);
    assert_int_equal(rx.sent_limit_bytes, 2652);
    /* The peer stops 300 short of that limit (more than an eighth of the
     * window left), read late again: not blocked, not fast, no growth. */
    qk_flow_rx_tick(&rx, 31 * MS, srtt);
    assert_int_equal(qk_flow_rx_on_data(&rx, 2352, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 1352), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 60 * MS, srtt), 2352 + 1652);
    assert_int_equal(rx.window_bytes, 1652);
    /* plain_doubling keeps the peers' timing rules alone (no blocked trigger). */
    qk_flow_rx pd;
    qk_flow_rx_init(&pd, 1000, 1u << 20, true, NULL);
    pd.plain_doubling = true;
    qk_flow_rx_update(&pd, 0, srtt);
    assert_int_equal(qk_flow_rx_on_data(&pd, 1000, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&pd, 1000), 0);
    assert_int_equal(qk_flow_rx_update(&pd, 25 * MS, srtt), 1000 + 1000);
}

/* Feed rx: n more bytes arrive and are read, then an update at t. */
static uint64_t deliver_update(qk_flow_rx *rx, uint64_t n, qk_time t, qk_time srtt)
{
    assert_int_equal(qk_flow_rx_on_data(rx, rx->received_bytes + n, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(rx, n), 0);
    return qk_flow_rx_update(rx, t, srtt);
}

/* climb_doubling (the connection window): while the delivery still climbs
 * (>= 1.25x the one measured before the previous checkpoint) the target is
 * 2 x the sized one (2 x 2 x delivery per RTT); otherwise the plain sizing.
 * Same pattern into both controllers. */
static void test_climb_doubling(void **state)
{
    (void)state;
    const qk_time srtt = 10 * MS;
    qk_flow_rx climb, plain;
    qk_flow_rx_init(&climb, 1000, 1u << 20, true, NULL);
    qk_flow_rx_init(&plain, 1000, 1u << 20, true, NULL);
    climb.climb_doubling = true;
    qk_flow_rx *both[2] = {&climb, &plain};
    for (int i = 0; i < 2; i++) {
        qk_flow_rx *rx = both[i];
        qk_flow_rx_update(rx, 0, srtt);
        /* 1000 per 10 ms: min(2000, 2000); nothing earlier to compare with. */
        assert_int_equal(deliver_update(rx, 1000, 10 * MS, srtt), 1000 + 2000);
        /* 2000 per 10 ms, compared with 0 (no rate yet): min(4000, 4000). */
        assert_int_equal(deliver_update(rx, 2000, 20 * MS, srtt), 3000 + 4000);
    }
    /* 2000 per 10 ms again, but 2x the 1000 measured two checkpoints ago:
     * climbing. Sized 4000, doubled 8000 (= 2 x window). Plain: 4000, the
     * window it has. */
    assert_int_equal(deliver_update(&climb, 2000, 30 * MS, srtt), 5000 + 8000);
    assert_int_equal(deliver_update(&plain, 2000, 30 * MS, srtt), 5000 + 4000);
    assert_int_equal(plain.window_bytes, 4000);
}

/* A stream that carries at least half its connection's delivery grows at
 * once to 2 x the connection's delivery per RTT (past the doubling); a
 * minor stream keeps its own sizing. srtt 10 ms, no min_rtt: sizing RTT
 * 10 ms, checkpoints >= 5 ms apart. */
static void test_stream_sized_by_connection(void **state)
{
    (void)state;
    const qk_time srtt = 10 * MS;
    qk_flow_rx conn, s, minor;
    qk_flow_rx_init(&conn, 1000000, 1u << 24, true, NULL);
    qk_flow_rx_init(&s, 1000, 1u << 20, true, NULL);
    qk_flow_rx_init(&minor, 1000, 1u << 20, true, NULL);
    s.parent = minor.parent = &conn;
    qk_flow_rx_update(&conn, 0, srtt);
    qk_flow_rx_update(&s, 0, srtt);
    qk_flow_rx_update(&minor, 0, srtt);
    assert_int_equal(deliver_update(&s, 1000, 10 * MS, srtt), 1000 + 2000);
    assert_int_equal(deliver_update(&minor, 1000, 10 * MS, srtt), 1000 + 2000);
    /* By 20 ms the connection delivered 3000 (checkpoint at 0): 1500 per
     * srtt, connection size 2 x 1500 = 3000. Each stream delivered 1000 in
     * the last 10 ms: own size min(4000, 2000) = 2000, the window it has.
     * 1000 >= 1500 / 2: dominant, 3000. */
    assert_int_equal(qk_flow_rx_add(&conn, 3000), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&conn, 3000), 0);
    assert_int_equal(deliver_update(&s, 1000, 20 * MS, srtt), 2000 + 3000);
    /* The connection then delivers 57000 more (60000 in 20 ms: 30000 per
     * srtt): the minor stream's 1000 per srtt is not half of it, it keeps
     * its own 2000 although 2 x 30000 would allow far more. */
    assert_int_equal(qk_flow_rx_add(&conn, 57000), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&conn, 57000), 0);
    assert_int_equal(deliver_update(&minor, 1000, 20 * MS, srtt), 2000 + 2000);
    /* The dominant stream, 3000 in 10 ms (3000 per srtt) while the
     * connection did 60000 in 30 ms (20000 per srtt): 3000 < 20000 / 2, no
     * longer dominant: own size min(6000, 6000) = 6000. */
    assert_int_equal(deliver_update(&s, 3000, 30 * MS, srtt), 5000 + 6000);
}

/* An idle stream: its window halves every QK_FLOW_DECAY_RTTS srtt back to the
 * initial window; budget comes back down to the credit still advertised (it
 * cannot be revoked), the rest as the peer uses that credit. */
static void test_idle_returns_budget(void **state)
{
    (void)state;
    const qk_time srtt = 10 * MS;
    qk_flow_budget b;
    qk_flow_budget_init(&b, 1u << 20);
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 1000, 100000, true, &b);
    for (int i = 0; i < 4; i++) drain_and_update(&rx, (qk_time)i * MS, srtt);
    assert_int_equal(rx.window_bytes, 8000);
    assert_int_equal(b.used_bytes, 7000);
    uint64_t c0 = rx.consumed_bytes; /* limit = c0 + 8000 */
    /* Idle: nothing arrives. 79 ms after the last growth: no change. */
    assert_false(qk_flow_rx_tick(&rx, 3 * MS + 79 * MS, srtt));
    assert_int_equal(rx.window_bytes, 8000);
    /* 80 ms: halves. The 8000 advertised are still promised: nothing back. */
    assert_true(qk_flow_rx_tick(&rx, 83 * MS, srtt));
    assert_int_equal(rx.window_bytes, 4000);
    assert_int_equal(b.used_bytes, 7000);
    assert_true(qk_flow_rx_tick(&rx, 163 * MS, srtt));
    assert_true(qk_flow_rx_tick(&rx, 243 * MS, srtt));
    assert_int_equal(rx.window_bytes, 1000);
    assert_false(qk_flow_rx_tick(&rx, 400 * MS, srtt)); /* floor: initial window */
    /* The peer uses 5000 of the credit: 3000 stay promised, 5000 come back. */
    assert_int_equal(qk_flow_rx_on_data(&rx, c0 + 5000, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 5000), 0);
    qk_flow_rx_tick(&rx, 401 * MS, srtt);
    assert_int_equal(b.used_bytes, 2000);
    /* The rest, then the next update grants only the initial window. */
    assert_int_equal(qk_flow_rx_on_data(&rx, c0 + 8000, NULL), 0);
    assert_int_equal(qk_flow_rx_on_consumed(&rx, 3000), 0);
    assert_int_equal(qk_flow_rx_update(&rx, 900 * MS, srtt), c0 + 8000 + 1000);
    assert_int_equal(b.used_bytes, 0);
    assert_int_equal(rx.granted_bytes, 0);
    /* A busy stream at the same size does not shrink: it reads > half a
     * window per period with the reader keeping up. */
    qk_flow_rx busy;
    qk_flow_rx_init(&busy, 1000, 4000, true, NULL);
    for (int i = 0; i < 3; i++) drain_and_update(&busy, (qk_time)i * MS, srtt);
    assert_int_equal(busy.window_bytes, 4000);
    for (qk_time t = 3 * MS; t < 2000 * MS; t += 25 * MS) {
        /* 2500 bytes per 25 ms: updates every 50 ms (not fast: 5 srtt). */
        assert_int_equal(qk_flow_rx_on_data(&busy, busy.received_bytes + 2500, NULL), 0);
        assert_int_equal(qk_flow_rx_on_consumed(&busy, 2500), 0);
        if (qk_flow_rx_should_update(&busy)) qk_flow_rx_update(&busy, t, srtt);
        qk_flow_rx_tick(&busy, t, srtt);
    }
    assert_int_equal(busy.window_bytes, 4000);
    assert_int_equal(busy.decays, 0);
}

/* raise: the connection window follows 1.5x a stream window through the
 * budget, which may grant part of it. */
static void test_raise_through_budget(void **state)
{
    (void)state;
    qk_flow_budget b;
    qk_flow_budget_init(&b, 5000);
    qk_flow_rx conn;
    qk_flow_rx_init(&conn, 4000, 1u << 20, true, &b);
    assert_false(qk_flow_rx_raise(&conn, 3000)); /* already above */
    assert_true(qk_flow_rx_raise(&conn, 6000));
    assert_int_equal(conn.window_bytes, 6000);
    assert_int_equal(b.used_bytes, 2000);
    assert_true(qk_flow_rx_raise(&conn, 12000)); /* only 3000 left: partial */
    assert_int_equal(conn.window_bytes, 9000);
    assert_int_equal(b.used_bytes, 5000);
    assert_false(qk_flow_rx_raise(&conn, 20000)); /* nothing left */
    assert_int_equal(conn.window_bytes, 9000);
    qk_flow_rx capped;
    qk_flow_rx_init(&capped, 4000, 5000, true, NULL);
    assert_true(qk_flow_rx_raise(&capped, 1u << 30));
    assert_int_equal(capped.window_bytes, 5000); /* the cap */
    qk_flow_rx_free(&conn);
    assert_int_equal(b.used_bytes, 0);
}

static void test_tx(void **state)
{
    (void)state;
    qk_flow_tx tx;
    qk_flow_tx_init(&tx, 1000);
    assert_int_equal(qk_flow_tx_available(&tx), 1000);
    uint64_t lim = 0;
    assert_false(qk_flow_tx_blocked_pending(&tx, true, &lim));
    assert_int_equal(qk_flow_tx_on_sent(&tx, 700), 0);
    assert_int_equal(qk_flow_tx_on_sent(&tx, 301), QK_ERR_LIMIT);
    assert_int_equal(qk_flow_tx_on_sent(&tx, 300), 0);
    assert_int_equal(qk_flow_tx_available(&tx), 0);
    /* Blocked with data: report once at limit 1000. */
    assert_false(qk_flow_tx_blocked_pending(&tx, false, &lim));
    assert_true(qk_flow_tx_blocked_pending(&tx, true, &lim));
    assert_int_equal(lim, 1000);
    qk_flow_tx_on_blocked_sent(&tx, 1000);
    assert_false(qk_flow_tx_blocked_pending(&tx, true, &lim));
    /* Lost: report again. A stale loss of another limit does nothing. */
    qk_flow_tx_on_blocked_lost(&tx, 900);
    assert_false(qk_flow_tx_blocked_pending(&tx, true, &lim));
    qk_flow_tx_on_blocked_lost(&tx, 1000);
    assert_true(qk_flow_tx_blocked_pending(&tx, true, &lim));
    qk_flow_tx_on_blocked_sent(&tx, 1000);
    /* Limits only increase (RFC 9000 §19.9). */
    assert_false(qk_flow_tx_on_max(&tx, 800));
    assert_false(qk_flow_tx_on_max(&tx, 1000));
    assert_int_equal(tx.max_data_bytes, 1000);
    assert_true(qk_flow_tx_on_max(&tx, 1500));
    assert_int_equal(qk_flow_tx_available(&tx), 500);
    assert_false(qk_flow_tx_blocked_pending(&tx, true, &lim));
    assert_int_equal(qk_flow_tx_on_sent(&tx, 500), 0);
    /* Blocked at a new limit: one new report. */
    assert_true(qk_flow_tx_blocked_pending(&tx, true, &lim));
    assert_int_equal(lim, 1500);
}

static void test_credit_nearly_used_boundary(void **state)
{
    (void)state;
    qk_flow_rx rx;
    qk_flow_rx_init(&rx, 800, 800, false, NULL);
    /* An eighth of the 800-byte window: 100 bytes left is "nearly used", 101 is not. */
    assert_true(qk_flow_rx_credit_nearly_used(&rx, 10000, 9900));
    assert_false(qk_flow_rx_credit_nearly_used(&rx, 10000, 9899));
    assert_true(qk_flow_rx_credit_nearly_used(&rx, 10000, 10000)); /* all used */
    assert_true(qk_flow_rx_credit_nearly_used(&rx, 10000, 10001)); /* an older, lower limit */
    /* The window's eighth rounds down: 799 bytes -> 99 left at most. */
    qk_flow_rx r2;
    qk_flow_rx_init(&r2, 799, 799, false, NULL);
    assert_false(qk_flow_rx_credit_nearly_used(&r2, 10000, 9900));
    assert_true(qk_flow_rx_credit_nearly_used(&r2, 10000, 9901));
    /* A limit far beyond the window is not nearly used (8 x left would
     * overflow 64 bits here). */
    assert_false(qk_flow_rx_credit_nearly_used(&rx, (uint64_t)1 << 62, 0));
    qk_flow_rx_free(&rx);
    qk_flow_rx_free(&r2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rx_accounting_and_violation),
        cmocka_unit_test(test_rx_update_threshold),
        cmocka_unit_test(test_autotune_doubling_and_cap),
        cmocka_unit_test(test_autotune_budget),
        cmocka_unit_test(test_rtt2_rule_exact),
        cmocka_unit_test(test_epoch_rule_exact),
        cmocka_unit_test(test_slow_reader_caps_window),
        cmocka_unit_test(test_sizing),
        cmocka_unit_test(test_sizing_under_loss),
        cmocka_unit_test(test_climb_doubling),
        cmocka_unit_test(test_stream_sized_by_connection),
        cmocka_unit_test(test_caps_and_budget_invariants),
        cmocka_unit_test(test_idle_returns_budget),
        cmocka_unit_test(test_raise_through_budget),
        cmocka_unit_test(test_tx),
        cmocka_unit_test(test_credit_nearly_used_boundary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
