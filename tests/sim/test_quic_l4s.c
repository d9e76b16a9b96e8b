/* SPDX-License-Identifier: MIT */
/* L4S end to end (RFC 9330/9331/9332): a Prague flow (ECT(1)) and a CUBIC
 * flow (ECT(0)) share a 100 Mbit/s DualPI2 bottleneck (20 ms base RTT). The
 * coupling gives them rates within 2x of each other while the Prague flow's
 * packets wait at most ~1 ms (p99) in the L queue; CUBIC's queue is held at
 * the PI2 target (15 ms).
 *
 * With the defaults (ACK frequency auto). Before the ECN-scalable senders
 * were kept out of auto's burst mode (ackfreq.c, qk_ackfreq_config.paced)
 * each ACK released 2T packets back to back, and 10 packets at 100 Mbit/s
 * already sit ~1 ms in the L queue: Prague's own bursts were marked (p99
 * 1.12 ms) and it got 11.3 Mbit/s to CUBIC's 86.1. Paced: 38.1 vs 59.3,
 * p99 0.196 ms (measured at the commit that made this the default).
 */
#include "qk_test.h"
#include "quic_env.h"
#include "sim/sim_int.h"

/* p99 of the data packets' sojourn at the bottleneck: the flow's histogram
 * also holds its ACKs' crossings of the idle reverse link (sojourn ~0), so
 * the data p99 is the mixture's 100 - data_share percentile. */
static double qdelay_p99_ms(const qk_sim *sim, uint32_t flow, uint64_t data_pkts)
{
    const qk_sim_flow_acct *a = qk_sim_flow_acct_get(sim, flow);
    assert_non_null(a);
    double share = (double)data_pkts / (double)a->qdelay.n;
    return (double)qk_hist_pct(&a->qdelay, 100.0 - 1.0 * share) / 1e6;
}

static void test_prague_cubic_dualpi2(void **state)
{
    (void)state;
    qk_sim_link_cfg l = quic_env_link(); /* 100 Mbit/s, 10 ms each way */
    l.limit_bytes = 1000000;
    l.aqm = QK_SIM_AQM_DUALPI2;
    qk_sim_link_cfg f = quic_env_link();
    quic_env e;
    assert_int_equal(quic_env_init(&e, 11, &f, &l), 0);
    const qk_time t0 = 4 * QK_NS_PER_S, t1 = 12 * QK_NS_PER_S;
    qk_simq_cfg c = {.duration_ns = t1,
                     .cc = QK_CONFIG_CC_PRAGUE,
                     .window_bytes = 16u << 20,
                     .no_protection = true};
    qk_sim_set_current_flow(e.sim, 0);
    qk_simq *pq = quic_env_flow(&e, 4433, &c);
    c.cc = QK_CONFIG_CC_CUBIC;
    c.ecn = 1; /* classic ECN: ECT(0), marked (not dropped) by PI2 */
    qk_sim_set_current_flow(e.sim, 1);
    qk_simq *cq = qk_simq_new(e.sim, e.a, e.b, 4434, &c, &(int){0});
    assert_non_null(pq);
    assert_non_null(cq);
    qk_sim_run(e.sim, t0);
    uint64_t p0 = qk_simq_result_get(pq)->read_bytes, c0 = qk_simq_result_get(cq)->read_bytes;
    qk_sim_run(e.sim, t1);
    const qk_simq_result *pr = qk_simq_result_get(pq), *cr = qk_simq_result_get(cq);
    double secs = (double)(t1 - t0) / 1e9;
    double p_mbps = (double)(pr->read_bytes - p0) * 8 / secs / 1e6;
    double c_mbps = (double)(cr->read_bytes - c0) * 8 / secs / 1e6;
    double p_q99 = qdelay_p99_ms(e.sim, 0, pr->server_stats.pkts_sent);
    double c_q99 = qdelay_p99_ms(e.sim, 1, cr->server_stats.pkts_sent);
    fprintf(stderr,
            "prague %.1f Mbit/s (ect1 sent %llu, ce %llu, state %u), cubic %.1f Mbit/s (ce "
            "%llu, lost %llu); queue delay p99: prague %.3f ms, cubic %.3f ms\n",
            p_mbps, (unsigned long long)pr->server_stats.pkts_sent_ect1,
            (unsigned long long)pr->server_stats.ecn_ce_reported, pr->server_stats.ecn_state,
            c_mbps, (unsigned long long)cr->server_stats.ecn_ce_reported,
            (unsigned long long)cr->server_stats.pkts_lost, p_q99, c_q99);
    assert_false(pr->mismatch);
    assert_false(cr->mismatch);
    assert_int_equal(pr->server_stats.ecn_state, 2); /* validated */
    assert_true(pr->server_stats.pkts_sent_ect1 > 1000);
    assert_int_equal(pr->server_stats.pkts_sent_ect0, 0);
    assert_true(p_mbps + c_mbps > 85); /* the link stays full */
    assert_true(p_mbps < 2 * c_mbps && c_mbps < 2 * p_mbps);
    assert_true(p_q99 <= 1.0);
    qk_sim_del(e.sim);
    qk_simq_del(pq);
    qk_simq_del(cq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prague_cubic_dualpi2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
