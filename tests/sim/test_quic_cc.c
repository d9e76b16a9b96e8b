/* Congestion control end to end: 100 Mbit/s, 50 ms RTT, a 1-BDP drop-tail
 * queue (625 kB). One flow must use >= 90% of the link after slow start; two
 * flows started together must get within 20% of each other over 10-40 s, a
 * flow starting 1 s late within 20% over 100-300 s; a flow starting 0.5 s
 * late must not be left with a tiny window. CUBIC and NewReno. */
#include "qk_test.h"
#include "quic_env.h"

#include <stdlib.h>

#define RATE_BPS 100000000ull
#define BDP_B    625000u /* 100 Mbit/s x 50 ms */

static void path(quic_env *e, uint64_t seed)
{
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.rate_bps = RATE_BPS;
    l.delay_ns = 25 * QK_NS_PER_MS;
    l.limit_bytes = BDP_B;
    assert_int_equal(quic_env_init(e, seed, &l, &l), 0);
}

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

/* Two bulk downloads over the same path, the second starting offset_ns
 * later; goodput of each over [t0, t1]. */
typedef struct two_result {
    double ga, gb, diff, util;
} two_result;

static two_result two_flows_run(qk_cc_kind cc, qk_time offset_ns, qk_time t0, qk_time t1)
{
    quic_env e;
    path(&e, 17 + cc);
    qk_simq_cfg c = {.duration_ns = t1, .cc = cc, .window_bytes = 32u << 20};
    qk_simq *q1 = quic_env_flow(&e, 4433, &c);
    c.start_ns = offset_ns;
    qk_simq *q2 = quic_env_flow(&e, 4434, &c);
    assert_non_null(q1);
    assert_non_null(q2);
    qk_sim_run(e.sim, t0);
    uint64_t a0 = qk_simq_result_get(q1)->read_bytes, b0 = qk_simq_result_get(q2)->read_bytes;
    uint64_t l0 = qk_sim_link_stats_get(e.sim, e.ret)->delivered_bytes;
    qk_sim_run(e.sim, t1);
    uint64_t a = qk_simq_result_get(q1)->read_bytes - a0;
    uint64_t b = qk_simq_result_get(q2)->read_bytes - b0;
    uint64_t l = qk_sim_link_stats_get(e.sim, e.ret)->delivered_bytes - l0;
    double secs = (double)(t1 - t0) / 1e9;
    two_result r;
    r.ga = (double)a * 8 / secs;
    r.gb = (double)b * 8 / secs;
    r.util = (double)l * 8 / secs / (double)RATE_BPS;
    r.diff = (r.ga > r.gb ? r.ga - r.gb : r.gb - r.ga) / (r.ga > r.gb ? r.ga : r.gb);
    fprintf(stderr,
            "%s x2 (+%.1f s): %.2f and %.2f Mbit/s over %.0f-%.0f s (difference %.1f%%), "
            "utilisation %.1f%%\n",
            cc == QK_CONFIG_CC_CUBIC ? "cubic" : "newreno", (double)offset_ns / 1e9, r.ga / 1e6,
            r.gb / 1e6, (double)t0 / 1e9, (double)t1 / 1e9, r.diff * 100, r.util * 100);
    assert_false(qk_simq_result_get(q1)->mismatch);
    assert_false(qk_simq_result_get(q2)->mismatch);
    qk_sim_del(e.sim);
    qk_simq_del(q1);
    qk_simq_del(q2);
    return r;
}

static void two_flows(qk_cc_kind cc)
{
    /* Both flows start together (offset 0, the configuration RFC 9438's
     * fairness discussion describes), no jitter, goodput over 10-40 s: after
     * both slow starts (they end at ~0.6 s with one delivered-based reduction
     * each) and a few CUBIC epochs. A late comer needs longer to converge
     * (converge() below: 100-300 s). Over 10-40 s, start offsets of 0.1-2 s
     * are not reliably within 20% (docs/perf.md): slow start leaves the late
     * flow at 0.2-0.4 of the first one's window, and the RFC algorithms take
     * tens of seconds to close that (bench_fairness --fluid).
     * QK_SIM_FAIRNESS=1 also runs the +0.5 s case over 10-40 s. */
    two_result r = two_flows_run(cc, 0, 10 * QK_NS_PER_S, 40 * QK_NS_PER_S);
    assert_true(r.util >= 0.90);
    assert_true(r.diff <= 0.20);
    if (getenv("QK_SIM_FAIRNESS")) {
        r = two_flows_run(cc, 500 * QK_NS_PER_MS, 10 * QK_NS_PER_S, 40 * QK_NS_PER_S);
        assert_true(r.diff <= 0.20);
    }
}

/* Convergence of a late comer: the second flow starts 1 s after the first
 * (while the first is leaving slow start), no jitter, and the pair must be
 * within 20% over 100-300 s. This configuration was 31% apart (CUBIC) with
 * the pacing gain of 1.25 in congestion avoidance: the window-limited
 * sender then sends its growth packets back to back with the ones its ACKs
 * release, and at a full drop-tail queue those extra packets are the ones
 * that find it full; the flow growing fastest at that moment, which under
 * CUBIC is the smaller one (shorter K, convex first), lost alone 8 times vs
 * 7 for the larger one and at 1.6x the per-packet rate. Paced at N = 1
 * (pacer.h), the drops follow each flow's share (alone: smaller 0, larger
 * 6; equal loss rates). Matrix over offsets and seeds: docs/perf.md
 * "Two-flow fairness". */
static void converge(qk_cc_kind cc)
{
    two_result r = two_flows_run(cc, QK_NS_PER_S, 100 * QK_NS_PER_S, 300 * QK_NS_PER_S);
    assert_true(r.util >= 0.95);
    assert_true(r.diff <= 0.20);
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
static void test_cubic_two(void **s)
{
    (void)s;
    two_flows(QK_CONFIG_CC_CUBIC);
}
static void test_newreno_two(void **s)
{
    (void)s;
    two_flows(QK_CONFIG_CC_NEWRENO);
}
static void test_cubic_converge(void **s)
{
    (void)s;
    converge(QK_CONFIG_CC_CUBIC);
}
static void test_newreno_converge(void **s)
{
    (void)s;
    converge(QK_CONFIG_CC_NEWRENO);
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
        cmocka_unit_test(test_cubic_one),        cmocka_unit_test(test_newreno_one),
        cmocka_unit_test(test_cubic_two),        cmocka_unit_test(test_newreno_two),
        cmocka_unit_test(test_cubic_late_comer), cmocka_unit_test(test_newreno_late_comer),
        cmocka_unit_test(test_cubic_converge),   cmocka_unit_test(test_newreno_converge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
