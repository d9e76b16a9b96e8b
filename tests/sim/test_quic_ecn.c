/* SPDX-License-Identifier: MIT */
/* ECN end to end through the simulator (RFC 9000 §13.4, RFC 9002 §7.1):
 * both endpoints mark ECT(0); a step-marking bottleneck (CE above 20 queued
 * packets, 100 Mbit/s, 20 ms RTT, 250 kB queue) makes the sender react to CE
 * instead of to loss. The same path without ECN loses packets. */
#include "qk_test.h"
#include "quic_env.h"

static void ecn_on(void *ctx, qk_config *cfg, bool server)
{
    (void)server;
    cfg->ecn = *(bool *)ctx;
}

static void run(bool ecn, qk_simq_result *out, uint64_t *marked)
{
    qk_sim_link_cfg l = quic_env_link();
    l.aqm = QK_SIM_AQM_STEP;
    l.step_k_pkts = 20;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 5, &l, &l), 0);
    qk_simq_cfg c = {
        .size_bytes = 10u << 20, .cc = QK_CONFIG_CC_CUBIC, .tune = ecn_on, .ctx = &ecn};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    assert_true(quic_env_run_done(&e, q, 20 * QK_NS_PER_S));
    *out = *qk_simq_result_get(q);
    *marked = qk_sim_link_stats_get(e.sim, e.ret)->marked_pkts;
    quic_env_free(&e);
}

static void test_ce_instead_of_loss(void **state)
{
    (void)state;
    qk_simq_result r;
    uint64_t marked;
    run(true, &r, &marked);
    const qk_conn_stats *s = &r.server_stats, *cl = &r.client_stats;
    fprintf(stderr,
            "ecn: %.3f s, server sent ect0 %llu, client got ect0 %llu ce %llu, server saw ce "
            "%llu (%llu responses), lost %llu, link marked %llu, state %u/%u\n",
            (double)(r.completion_ns - r.connected_ns) / 1e9, (unsigned long long)s->pkts_sent_ect0,
            (unsigned long long)cl->ecn_ect0_received, (unsigned long long)cl->ecn_ce_received,
            (unsigned long long)s->ecn_ce_reported, (unsigned long long)s->ecn_ce_events,
            (unsigned long long)s->pkts_lost, (unsigned long long)marked, s->ecn_state,
            cl->ecn_state);
    assert_false(r.mismatch);
    assert_int_equal(r.hash_read, r.hash_written);
    assert_int_equal(s->ecn_state, 2); /* capable: the peer's counts validated */
    assert_int_equal(cl->ecn_state, 2);
    assert_true(marked > 0);
    /* Every CE mark the link applied to the server's packets reached the
     * client and was reported back (counts are cumulative, RFC 9000 §13.4.1). */
    assert_int_equal(cl->ecn_ce_received, marked);
    assert_int_equal(s->ecn_ce_reported, marked);
    assert_true(s->ecn_ce_events > 0);
    assert_true(s->pkts_sent_ect0 > 7000); /* ~10 MiB in 1200-byte packets, all marked */
    assert_int_equal(s->pkts_lost, 0);     /* the queue never overflowed */

    qk_simq_result n;
    run(false, &n, &marked);
    fprintf(stderr, "no ecn: %.3f s, lost %llu, marked %llu\n",
            (double)(n.completion_ns - n.connected_ns) / 1e9,
            (unsigned long long)n.server_stats.pkts_lost, (unsigned long long)marked);
    assert_int_equal(n.server_stats.ecn_state, 0);
    assert_int_equal(n.server_stats.pkts_sent_ect0, 0);
    assert_int_equal(marked, 0);
    assert_true(n.server_stats.pkts_lost > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ce_instead_of_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
