/* SPDX-License-Identifier: MIT */
/* Congestion control end to end: 100 Mbit/s, 50 ms RTT, a 1-BDP drop-tail
 * queue (625 kB). One flow must use >= 90% of the link after slow start; a
 * flow starting 0.5 s late must not be left with a tiny window. CUBIC and
 * NewReno. Two flows sharing the path: test_slow_converge.c (within 20%
 * over 100-300 s; a 10-40 s window holds one or two NewReno congestion
 * events and was a coin flip, 0.1-37% apart across unrelated changes). */
#include "qk_test.h"
#include "quic_env.h"
#include "two_flows.h"

static void one_flow(qk_cc_kind cc)
{
    quic_env e;
    path(&e, 7 + cc);
    qk_simq_cfg c = {.duration_ns = 14 * QK_NS_PER_S, .cc = cc, .window_bytes = 32u << 20};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    qk_time t0 = 4 * QK_NS_PER_S, t1 = 14 * QK_NS_PER_S;
    qk_sim_run(e.sim, t0);
    uint64_t b0 = qk_sim_link_stats_get(e.sim, e.ret)->delivered_bytes;
    uint64_t r0 = qk_simq_result_get(q)->read_bytes;
    qk_sim_run(e.sim, t1);
    uint64_t b1 = qk_sim_link_stats_get(e.sim, e.ret)->delivered_bytes;
    const qk_simq_result *r = qk_simq_result_get(q);
    double util = (double)(b1 - b0) * 8 / ((double)(t1 - t0) / 1e9) / (double)RATE_BPS;
    double goodput = (double)(r->read_bytes - r0) * 8 / ((double)(t1 - t0) / 1e9);
    fprintf(stderr, "%s: utilisation %.1f%% goodput %.2f Mbit/s lost %llu cwnd %llu srtt %.1f ms\n",
            cc == QK_CONFIG_CC_CUBIC ? "cubic" : "newreno", util * 100, goodput / 1e6,
            (unsigned long long)r->server_stats.pkts_lost,
            (unsigned long long)r->server_stats.cwnd_bytes,
            (double)r->server_stats.smoothed_rtt_ns / 1e6);
    assert_false(r->mismatch);
    assert_true(util >= 0.90);
    quic_env_free(&e);
}

/* A flow starting 0.5 s after the first lands in the first flow's
 * slow-start overshoot. Before the delivered-window exit (cc.c) the first
 * flow needed three x0.7 cuts to drain the queue, the late flow lost its
 * first flight and left slow start at 14-20 kB (and at 6 kB when a handshake
 * packet was lost), i.e. ~2% of the first flow's window, and stayed far
 * below it for 10+ s. Now it keeps slow start through a lost first flight
 * and exits on the shared overflow: at 5 s its window was 0.41x (CUBIC) /
 * 1.13x (NewReno) the first flow's when this test was written, 0.16x
 * (CUBIC) with the ACK-frequency threshold capped at 16. */
static void late_comer(qk_cc_kind cc)
{
    quic_env e;
    path(&e, 17 + cc);
    qk_simq_cfg c = {.duration_ns = 5 * QK_NS_PER_S, .cc = cc, .window_bytes = 32u << 20};
    qk_simq *q1 = quic_env_flow(&e, 4433, &c);
    c.start_ns = 500 * QK_NS_PER_MS;
    qk_simq *q2 = quic_env_flow(&e, 4434, &c);
    assert_non_null(q1);
    assert_non_null(q2);
    qk_sim_run(e.sim, 5 * QK_NS_PER_S - QK_NS_PER_MS);
    uint64_t wa = qk_simq_result_get(q1)->server_stats.cwnd_bytes;
    uint64_t wb = qk_simq_result_get(q2)->server_stats.cwnd_bytes;
    fprintf(stderr, "%s late comer: cwnd at 5 s %llu vs %llu bytes\n",
            cc == QK_CONFIG_CC_CUBIC ? "cubic" : "newreno", (unsigned long long)wa,
            (unsigned long long)wb);
    /* One instant of a sawtooth: 0.16-1.1x seen across ACK policies and
     * pacer changes. The bug this guards against left 1/50; ask >= 1/10. */
    assert_true(wb * 10 >= wa);
    assert_true(wb >= 100000);
    qk_sim_del(e.sim);
    qk_simq_del(q1);
    qk_simq_del(q2);
}

static void test_cubic_one(void **s)
{
    (void)s;
    one_flow(QK_CONFIG_CC_CUBIC);
}
static void test_newreno_one(void **s)
{
    (void)s;
    one_flow(QK_CONFIG_CC_NEWRENO);
}
static void test_cubic_late_comer(void **s)
{
    (void)s;
    late_comer(QK_CONFIG_CC_CUBIC);
}
static void test_newreno_late_comer(void **s)
{
    (void)s;
    late_comer(QK_CONFIG_CC_NEWRENO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cubic_one),
        cmocka_unit_test(test_newreno_one),
        cmocka_unit_test(test_cubic_late_comer),
        cmocka_unit_test(test_newreno_late_comer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
