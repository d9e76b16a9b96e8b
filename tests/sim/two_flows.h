/* SPDX-License-Identifier: MIT */
/* Two-flow runs on the congestion-control test path (100 Mbit/s, 50 ms RTT,
 * a 1-BDP drop-tail queue), shared by test_quic_cc.c and
 * test_slow_converge.c. */
#ifndef QK_TEST_TWO_FLOWS_H
#define QK_TEST_TWO_FLOWS_H

#include "qk_test.h"
#include "quic_env.h"

#define RATE_BPS 100000000ull
#define BDP_B    625000u /* 100 Mbit/s x 50 ms */

/* The path with jitter_ns of delay variation on both links (0: none). */
static inline void path_jitter(quic_env *e, uint64_t seed, qk_time jitter_ns)
{
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.rate_bps = RATE_BPS;
    l.delay_ns = 25 * QK_NS_PER_MS;
    l.limit_bytes = BDP_B;
    l.jitter_ns = jitter_ns;
    assert_int_equal(quic_env_init(e, seed, &l, &l), 0);
}

static inline void path(quic_env *e, uint64_t seed)
{
    path_jitter(e, seed, 0);
}

/* Two bulk downloads over the same path (jitter_ns on both links, the
 * simulation seeded with seed), the second starting offset_ns later;
 * goodput of each over [t0, t1]. */
typedef struct two_result {
    double ga, gb, diff, util;
} two_result;

static inline two_result two_flows_run(qk_cc_kind cc, qk_time offset_ns, qk_time t0, qk_time t1,
                                       qk_time jitter_ns, uint64_t seed)
{
    quic_env e;
    path_jitter(&e, seed, jitter_ns);
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
            "%s x2 (+%.1f s, jitter %.1f ms): %.2f and %.2f Mbit/s over %.0f-%.0f s (difference "
            "%.1f%%), "
            "utilisation %.1f%%\n",
            cc == QK_CONFIG_CC_CUBIC ? "cubic" : "newreno", (double)offset_ns / 1e9,
            (double)jitter_ns / 1e6, r.ga / 1e6, r.gb / 1e6, (double)t0 / 1e9, (double)t1 / 1e9,
            r.diff * 100, r.util * 100);
    assert_false(qk_simq_result_get(q1)->mismatch);
    assert_false(qk_simq_result_get(q2)->mismatch);
    qk_sim_del(e.sim);
    qk_simq_del(q1);
    qk_simq_del(q2);
    return r;
}

#endif
