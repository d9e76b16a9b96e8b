/* SPDX-License-Identifier: MIT */
/* covers: src/sim/sim.c src/sim/hist.c src/sim/rng.c src/sim/nodes.c src/sim/flow_cbr.c */
/* Simulator core: event order, routing, echo RTT, RED and time-based step marking. */
#include "qk_test.h"
#include "sim/sim_int.h"

#include <math.h>
#include <string.h>

#define MS QK_NS_PER_MS
#define US QK_NS_PER_US

/* A node that fires at a list of times and logs (id, time). */
typedef struct ticker {
    qk_time at[4];
    size_t n, i;
    int id;
    int *log;
    size_t *nlog;
    qk_time *tlog;
} ticker;

static qk_time tk_next(void *ctx)
{
    ticker *t = ctx;
    return t->i < t->n ? t->at[t->i] : QK_TIME_INFINITE;
}

static void tk_fire(void *ctx, qk_sim *sim, qk_time now)
{
    ticker *t = ctx;
    assert_int_equal(now, t->at[t->i]);
    assert_int_equal(qk_sim_now(sim), now);
    t->log[*t->nlog] = t->id;
    t->tlog[(*t->nlog)++] = now;
    t->i++;
}

static void tk_recv(void *ctx, qk_sim *sim, const qk_datagram *d, qk_time now) {}

static const qk_sim_node_ops tk_ops = {tk_recv, tk_next, tk_fire};

static void test_event_order(void **state)
{
    qk_sim *sim = qk_sim_new(1);
    int h = qk_sim_host_add(sim, "h", 0x0a000001);
    int log[16];
    qk_time tlog[16];
    size_t n = 0;
    ticker a = {{30, 10, 0, 0}, 2, 0, 1, log, &n, tlog};
    ticker b = {{5, 20, 40, 0}, 3, 0, 2, log, &n, tlog};
    a.at[0] = 10, a.at[1] = 30; /* increasing per node */
    assert_true(qk_sim_node_add(sim, h, 1, &tk_ops, &a) >= 0);
    assert_true(qk_sim_node_add(sim, h, 2, &tk_ops, &b) >= 0);
    assert_int_equal(qk_sim_node_add(sim, h, 2, &tk_ops, &b), QK_ERR_INVALID_ARG); /* port used */
    qk_sim_run(sim, 25);
    assert_int_equal(n, 3);
    assert_int_equal(qk_sim_now(sim), 25);
    qk_sim_run(sim, QK_TIME_INFINITE);
    int want[] = {2, 1, 2, 1, 2};
    qk_time wt[] = {5, 10, 20, 30, 40};
    assert_int_equal(n, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(log[i], want[i]);
        assert_int_equal(tlog[i], wt[i]);
    }
    qk_sim_del(sim);
}

/* Echo over p2p: RTT = 2 * (serialization + delay) exactly. */
typedef struct pinger {
    int node;
    qk_addr dst;
    qk_time sent, rtt;
    uint8_t ecn;
} pinger;

static void pg_recv(void *ctx, qk_sim *sim, const qk_datagram *d, qk_time now)
{
    pinger *p = ctx;
    p->rtt = now - p->sent;
    p->ecn = d->ecn;
    assert_true(d->len == 1000 || d->len == 500);
    uint32_t ip;
    uint16_t port;
    assert_int_equal(qk_sim_addr_ipv4(&d->peer, &ip, &port), 0);
    assert_int_equal(ip, 0x0a000002);
    assert_int_equal(port, 7);
}

static qk_time pg_next(void *ctx)
{
    return ((pinger *)ctx)->sent ? QK_TIME_INFINITE : 1 * MS;
}

static void pg_fire(void *ctx, qk_sim *sim, qk_time now)
{
    pinger *p = ctx;
    uint8_t buf[1000] = {1};
    qk_datagram d = {.data = buf, .len = sizeof buf, .peer = p->dst, .ecn = QK_ECN_ECT1};
    assert_int_equal(qk_sim_send(sim, p->node, &d), 0);
    p->sent = now;
}

static const qk_sim_node_ops pg_ops = {pg_recv, pg_next, pg_fire};

static void test_echo_rtt(void **state)
{
    qk_sim *sim = qk_sim_new(1);
    int a = qk_sim_host_add(sim, "a", 0x0a000001), b = qk_sim_host_add(sim, "b", 0x0a000002);
    qk_sim_link_cfg f = {.rate_bps = 8000000, .delay_ns = 20 * MS}; /* 1000 B = 1 ms */
    qk_sim_link_cfg r = {.rate_bps = 4000000, .delay_ns = 30 * MS}; /* 1000 B = 2 ms */
    int lf = qk_sim_link_add(sim, "f", a, b, &f), lr = qk_sim_link_add(sim, "r", b, a, &r);
    assert_int_equal(qk_sim_route_add(sim, a, b, lf), 0);
    assert_int_equal(qk_sim_route_add(sim, b, -1, lr), 0);
    assert_int_equal(qk_sim_route_add(sim, a, -1, lr), QK_ERR_INVALID_ARG); /* not from a */
    assert_true(qk_sim_echo_add(sim, b, 7) >= 0);
    pinger p = {.dst = qk_sim_host_addr(sim, b, 7)};
    p.node = qk_sim_node_add(sim, a, 5, &pg_ops, &p);
    qk_sim_run(sim, QK_TIME_INFINITE);
    assert_int_equal(p.rtt, 1 * MS + 20 * MS + 2 * MS + 30 * MS);
    assert_int_equal(p.ecn, QK_ECN_ECT1);
    /* a GSO batch of 2500 bytes in 1000-byte segments: three datagrams, each echoed */
    uint8_t batch[2500] = {0};
    qk_datagram g = {.data = batch,
                     .len = sizeof batch,
                     .peer = qk_sim_host_addr(sim, b, 7),
                     .segment_bytes = 1000};
    uint64_t before = qk_sim_link_stats_get(sim, lr)->delivered_bytes;
    p.dst = qk_sim_host_addr(sim, b, 7);
    assert_int_equal(qk_sim_send(sim, p.node, &g), 0);
    qk_sim_run(sim, QK_TIME_INFINITE);
    assert_int_equal(qk_sim_link_stats_get(sim, lf)->delivered_pkts, 1 + 3);
    assert_int_equal(qk_sim_link_stats_get(sim, lr)->delivered_bytes - before, 2500);
    /* nothing listens at port 8: counted as a no-route drop */
    p.dst = qk_sim_host_addr(sim, b, 8);
    p.sent = 0;
    qk_sim_node_update(sim, p.node);
    qk_sim_run(sim, QK_TIME_INFINITE);
    assert_int_equal(qk_sim_noroute_drops(sim), 1);
    qk_sim_del(sim);
}

/* Step marking with K as time: mark while backlog drain time > K. */
static void test_step_time(void **state)
{
    qk_sim *sim = qk_sim_new(1);
    int a = qk_sim_host_add(sim, "a", 0x0a000001), b = qk_sim_host_add(sim, "b", 0x0a000002);
    /* 10 Mbit/s: 1250 B = 1 ms. K = 2.5 ms: marked once the backlog holds >= 3 packets. */
    qk_sim_link_cfg c = {.rate_bps = 10000000, .aqm = QK_SIM_AQM_STEP, .step_k_ns = 2500 * US};
    int l = qk_sim_link_add(sim, "f", a, b, &c);
    qk_sim_route_add(sim, a, -1, l);
    qk_sim_sink *s;
    qk_sim_sink_add(sim, b, 9, &s);
    /* 10 packets at once (rate huge): packet k sees backlog k packets = k ms */
    qk_sim_cbr_cfg cc = {.rate_bps = 1000000000000ull,
                         .size_bytes = 1250,
                         .max_pkts = 10,
                         .ecn = QK_ECN_ECT0,
                         .dst = qk_sim_host_addr(sim, b, 9)};
    qk_sim_cbr_add(sim, a, 1, &cc, NULL);
    qk_sim_run(sim, QK_TIME_INFINITE);
    /* k = 0..9 arrive within 100 ns (0.01 ms): backlog k ms, marked for k >= 3: 7 packets */
    assert_int_equal(qk_sim_link_stats_get(sim, l)->marked_pkts, 7);
    assert_int_equal(qk_sim_sink_stats_get(s)->ce_pkts, 7);
    qk_sim_del(sim);
}

/* RED: no early drop below min_th; drops/marks between; ECN marks instead of drops. */
static void red_run(int ecn, uint64_t *drops, uint64_t *marks, uint64_t *maxq)
{
    qk_sim *sim = qk_sim_new(3);
    int a = qk_sim_host_add(sim, "a", 0x0a000001), b = qk_sim_host_add(sim, "b", 0x0a000002);
    qk_sim_link_cfg c = {.rate_bps = 10000000,
                         .aqm = QK_SIM_AQM_RED,
                         .red_min_bytes = 20000,
                         .red_max_bytes = 60000,
                         .red_max_p = 0.1,
                         .red_wq = 0.02,
                         .red_ecn = ecn,
                         .limit_bytes = 200000};
    int l = qk_sim_link_add(sim, "f", a, b, &c);
    qk_sim_route_add(sim, a, -1, l);
    qk_sim_sink *s;
    qk_sim_sink_add(sim, b, 9, &s);
    qk_sim_cbr_cfg cc = {.rate_bps = 15000000,
                         .size_bytes = 1000,
                         .stop_ns = 2 * QK_NS_PER_S,
                         .ecn = QK_ECN_ECT0,
                         .dst = qk_sim_host_addr(sim, b, 9)};
    qk_sim_cbr_add(sim, a, 1, &cc, NULL);
    qk_sim_run(sim, QK_TIME_INFINITE);
    const qk_sim_link_stats *st = qk_sim_link_stats_get(sim, l);
    *drops = st->dropped_pkts[QK_SIM_DROP_AQM] + st->dropped_pkts[QK_SIM_DROP_QUEUE];
    *marks = st->marked_pkts;
    *maxq = st->max_queue_bytes;
    qk_sim_del(sim);
}

static void test_red(void **state)
{
    uint64_t d, m, q;
    red_run(0, &d, &m, &q);
    /* 15 on 10 Mbit/s: a third of the load must go; RED keeps the queue well below the limit */
    assert_true(d > 1000);
    assert_int_equal(m, 0);
    assert_true(q < 100000);
    red_run(1, &d, &m, &q);
    assert_true(m > 0);
    assert_true(q < 200000 + 1000);
}

static void test_dumbbell_routes(void **state)
{
    /* two receivers behind the right router; each gets only its own flow */
    qk_sim *sim = qk_sim_new(1);
    int l = qk_sim_host_add(sim, "left", 0x0a000001), r = qk_sim_host_add(sim, "right", 0x0a000002);
    int s1 = qk_sim_host_add(sim, "s1", 0x0a000101), r1 = qk_sim_host_add(sim, "r1", 0x0a000201),
        r2 = qk_sim_host_add(sim, "r2", 0x0a000202);
    assert_int_equal(qk_sim_host_add(sim, "dup", 0x0a000201), QK_ERR_INVALID_ARG);
    qk_sim_link_cfg z = {0}, bott = {.rate_bps = 1000000, .delay_ns = 5 * MS};
    int up = qk_sim_link_add(sim, "up", s1, l, &z), fw = qk_sim_link_add(sim, "fw", l, r, &bott);
    int e1 = qk_sim_link_add(sim, "e1", r, r1, &z), e2 = qk_sim_link_add(sim, "e2", r, r2, &z);
    qk_sim_route_add(sim, s1, -1, up);
    qk_sim_route_add(sim, l, -1, fw);
    qk_sim_route_add(sim, r, r1, e1);
    qk_sim_route_add(sim, r, r2, e2);
    qk_sim_sink *k1, *k2;
    qk_sim_sink_add(sim, r1, 9, &k1);
    qk_sim_sink_add(sim, r2, 9, &k2);
    qk_sim_cbr_cfg c1 = {
        .rate_bps = 100000, .size_bytes = 125, .max_pkts = 10, .dst = qk_sim_host_addr(sim, r1, 9)};
    qk_sim_cbr_cfg c2 = c1;
    c2.max_pkts = 4;
    c2.dst = qk_sim_host_addr(sim, r2, 9);
    qk_sim_cbr_add(sim, s1, 1, &c1, NULL);
    qk_sim_cbr_add(sim, s1, 2, &c2, NULL);
    qk_sim_run(sim, QK_TIME_INFINITE);
    assert_int_equal(qk_sim_sink_stats_get(k1)->pkts, 10);
    assert_int_equal(qk_sim_sink_stats_get(k2)->pkts, 4);
    assert_int_equal(qk_sim_link_stats_get(sim, fw)->delivered_pkts, 14);
    /* 125 B at 1 Mbit/s = 1 ms + 5 ms; both flows send at the same instants: one waits 1 ms
     * (the histogram has 1/64 resolution) */
    assert_in_range(qk_sim_sink_owd_pct(k1, 100), 6 * MS - 6 * MS / 64, 7 * MS + 7 * MS / 64);
    qk_sim_del(sim);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_event_order),     cmocka_unit_test(test_echo_rtt),
        cmocka_unit_test(test_step_time),       cmocka_unit_test(test_red),
        cmocka_unit_test(test_dumbbell_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
