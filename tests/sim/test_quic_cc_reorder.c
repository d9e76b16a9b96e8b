/* SPDX-License-Identifier: MIT */
/* Spurious-loss undo under reordering, end to end: 10 Mbit/s, 20 ms each
 * way, 1-BDP (50 kB) drop-tail queues, 5% of the data packets held back
 * 200 us (less than a packet time: overtaken by nobody) and 5 ms (overtaken
 * by ~4 packets, beyond the packet threshold 3: declared lost, then acked
 * late). The path is slow enough for a dozen queue overflows in 30 s. A
 * spurious response is undone (recovery.c, RFC 9438 §4.9), but every real
 * overflow must still cut the window: it stays bounded by what the path
 * holds (peak <= 2x BDP+queue), loss stays low and goodput near the link
 * rate. docs/experiments/ack-frequency.md (exp 4) saw CUBIC's window run
 * away to 9 MB on a 1 MB path (60% loss) when any spurious loss undid a
 * response; test_recovery_undo covers the rule in isolation (all losses
 * spurious; a real loss after the undo). Measured (Debug, seed 41): CUBIC
 * peak 104-109 kB, 10-12 congestion events; NewReno 104-109 kB, 12-13. */
#include "qk_test.h"
#include "quic_env.h"

#define RATE_BPS 10000000ull
#define BDP_B    50000u      /* 10 Mbit/s x 40 ms */
#define PATH_B   (2 * BDP_B) /* what the path holds: BDP + a 1-BDP queue */
#define T1_S     30

static void reorder_bulk(qk_cc_kind cc, qk_time reorder_delay_ns)
{
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.rate_bps = RATE_BPS;
    l.delay_ns = 20 * QK_NS_PER_MS;
    l.limit_bytes = BDP_B;
    qk_sim_link_cfg data = l; /* download: the return link carries the data */
    data.reorder_p = 0.05;
    data.reorder_delay_ns = reorder_delay_ns;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 41, &l, &data), 0);
    qk_simq_cfg c = {.duration_ns = T1_S * QK_NS_PER_S, .cc = cc, .window_bytes = 32u << 20};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    /* Peak window after slow start (3 s to the end), sampled every 10 ms. */
    uint64_t peak = 0;
    qk_time t0 = 3 * QK_NS_PER_S, t1 = T1_S * QK_NS_PER_S;
    qk_sim_run(e.sim, t0);
    uint64_t r0 = qk_simq_result_get(q)->read_bytes;
    const qk_conn_stats *s0 = &qk_simq_result_get(q)->server_stats;
    uint64_t sent0 = s0->pkts_sent, lost0 = s0->pkts_lost;
    for (qk_time t = t0 + 10 * QK_NS_PER_MS; t <= t1; t += 10 * QK_NS_PER_MS) {
        qk_sim_run(e.sim, t);
        uint64_t w = qk_simq_result_get(q)->server_stats.cwnd_bytes;
        if (w > peak) peak = w;
    }
    const qk_simq_result *r = qk_simq_result_get(q);
    const qk_conn_stats *s = &r->server_stats;
    double secs = (double)(t1 - t0) / 1e9;
    double goodput = (double)(r->read_bytes - r0) * 8 / secs;
    double loss = (double)(s->pkts_lost - lost0) / (double)(s->pkts_sent - sent0);
    fprintf(stderr,
            "%s, 5%% reordered by %.1f ms: goodput %.1f Mbit/s, peak cwnd %llu B, loss %.2f%%, "
            "spurious %llu, congestion events %llu\n",
            cc == QK_CONFIG_CC_CUBIC ? "cubic" : "newreno", (double)reorder_delay_ns / 1e6,
            goodput / 1e6, (unsigned long long)peak, loss * 100,
            (unsigned long long)s->pkts_spurious, (unsigned long long)s->congestion_events);
    assert_false(r->mismatch);
    /* A window beyond 2x what the path holds means overflows went unanswered. */
    assert_true(peak <= 2 * PATH_B);
    assert_true(loss < 0.05);
    assert_true(goodput >= 0.80 * (double)RATE_BPS);
    quic_env_free(&e);
}

static void test_cubic_reorder_short(void **s)
{
    (void)s;
    reorder_bulk(QK_CONFIG_CC_CUBIC, 200 * QK_NS_PER_US);
}
static void test_cubic_reorder_long(void **s)
{
    (void)s;
    reorder_bulk(QK_CONFIG_CC_CUBIC, 5 * QK_NS_PER_MS);
}
static void test_newreno_reorder_short(void **s)
{
    (void)s;
    reorder_bulk(QK_CONFIG_CC_NEWRENO, 200 * QK_NS_PER_US);
}
static void test_newreno_reorder_long(void **s)
{
    (void)s;
    reorder_bulk(QK_CONFIG_CC_NEWRENO, 5 * QK_NS_PER_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cubic_reorder_short),
        cmocka_unit_test(test_cubic_reorder_long),
        cmocka_unit_test(test_newreno_reorder_short),
        cmocka_unit_test(test_newreno_reorder_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
