/* SPDX-License-Identifier: MIT */
/* 10 MiB downloads and uploads through the simulator over impaired links,
 * byte-exact: clean, 1/5/20% loss, Gilbert–Elliott
 * bursts, 5% reordering, 2% duplication, 1% corruption, a 3 s blackhole and a
 * 1280-byte MTU. The path is 100 Mbit/s, 10 ms each way, a 1-BDP queue. */
#include "qk_test.h"
#include "quic_env.h"

#define SIZE (10u << 20)

typedef enum impair {
    CLEAN,
    LOSS1,
    LOSS5,
    LOSS20,
    GE,
    REORDER,
    DUP,
    CORRUPT,
    BLACKHOLE,
    MTU1280
} impair;

static qk_sim_link_cfg impaired(impair k)
{
    qk_sim_link_cfg c = quic_env_link();
    switch (k) {
    case CLEAN: break;
    case LOSS1:
    case LOSS5:
    case LOSS20:
        c.loss = QK_SIM_LOSS_BERNOULLI;
        c.loss_p = k == LOSS1 ? 0.01 : k == LOSS5 ? 0.05 : 0.20;
        break;
    case GE: /* mean burst 1/0.3 = 3.3 packets, ~3% of packets lost */
        c.loss = QK_SIM_LOSS_GE;
        c.ge_p_gb = 0.01;
        c.ge_p_bg = 0.30;
        c.ge_loss_good = 0;
        c.ge_loss_bad = 1;
        break;
    case REORDER:
        c.reorder_p = 0.05;
        c.reorder_delay_ns = 5 * QK_NS_PER_MS;
        break;
    case DUP: c.dup_p = 0.02; break;
    case CORRUPT: c.corrupt_p = 0.01; break;
    case BLACKHOLE: /* 3 s of silence in both directions, mid-transfer */
        c.blackhole_start_ns = 400 * QK_NS_PER_MS;
        c.blackhole_end_ns = c.blackhole_start_ns + 3 * QK_NS_PER_S;
        break;
    case MTU1280: c.mtu_bytes = 1280; break;
    }
    return c;
}

static void run(impair k, bool upload)
{
    qk_sim_link_cfg l = impaired(k);
    quic_env e;
    assert_int_equal(quic_env_init(&e, 100 + (uint64_t)k * 2 + upload, &l, &l), 0);
    qk_simq_cfg c = {
        .upload = upload, .size_bytes = SIZE, .cc = QK_CONFIG_CC_CUBIC, .window_bytes = 4u << 20};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    bool done = quic_env_run_done(&e, q, 300 * QK_NS_PER_S);
    const qk_simq_result *r = qk_simq_result_get(q);
    const qk_sim_link_stats *fs = qk_sim_link_stats_get(e.sim, e.fwd);
    const qk_sim_link_stats *rs = qk_sim_link_stats_get(e.sim, e.ret);
    const qk_conn_stats *snd = upload ? &r->client_stats : &r->server_stats;
    fprintf(stderr,
            "%-9d %-8s done=%d t=%.3fs read=%llu lost=%llu/%llu pto=%llu link drops fwd=%llu "
            "ret=%llu\n",
            (int)k, upload ? "upload" : "download", done,
            done ? (double)(r->completion_ns) / 1e9 : -1.0, (unsigned long long)r->read_bytes,
            (unsigned long long)snd->pkts_lost, (unsigned long long)snd->pkts_sent,
            (unsigned long long)snd->pto_count,
            (unsigned long long)(fs->dropped_pkts[QK_SIM_DROP_LOSS] +
                                 fs->dropped_pkts[QK_SIM_DROP_BLACKHOLE]),
            (unsigned long long)(rs->dropped_pkts[QK_SIM_DROP_LOSS] +
                                 rs->dropped_pkts[QK_SIM_DROP_BLACKHOLE]));
    assert_true(done);
    assert_false(r->mismatch);
    assert_int_equal(r->written_bytes, SIZE);
    assert_int_equal(r->read_bytes, SIZE);
    assert_int_equal(r->hash_read, r->hash_written);
    /* the receiver closed after the transfer; no other close happened first */
    /* (ACK frequency auto, the default, thins the ACK stream to ~1 per 64: the
     * client still sends well over one packet per 200 data packets) */
    assert_true(r->client_stats.pkts_sent > SIZE / 1200 / 200);
    if (k == MTU1280) {
        /* DPLPMTUD (RFC 8899): only probes exceed the path MTU; the size in use fits */
        assert_true(r->client_stats.pmtu_bytes <= 1280);
        assert_true(r->server_stats.pmtu_bytes <= 1280);
        assert_true(fs->dropped_pkts[QK_SIM_DROP_MTU] + rs->dropped_pkts[QK_SIM_DROP_MTU] <=
                    r->client_stats.pmtu_probes_sent + r->server_stats.pmtu_probes_sent);
    }
    if (k == BLACKHOLE) {
        /* the blackhole really hit the transfer and the same connection survived it */
        assert_true(
            fs->dropped_pkts[QK_SIM_DROP_BLACKHOLE] + rs->dropped_pkts[QK_SIM_DROP_BLACKHOLE] > 0);
        assert_true(r->completion_ns > 3400 * QK_NS_PER_MS);
        assert_true(snd->pto_count > 0);
    }
    if (k == LOSS1 || k == LOSS5 || k == LOSS20 || k == GE) assert_true(snd->pkts_lost > 0);
    if (k == CORRUPT) assert_true(fs->corrupted_pkts + rs->corrupted_pkts > 0);
    quic_env_free(&e);
}

#define CASE(name, k)                                                                              \
    static void test_down_##name(void **s)                                                         \
    {                                                                                              \
        (void)s;                                                                                   \
        run(k, false);                                                                             \
    }                                                                                              \
    static void test_up_##name(void **s)                                                           \
    {                                                                                              \
        (void)s;                                                                                   \
        run(k, true);                                                                              \
    }

CASE(clean, CLEAN)
CASE(loss1, LOSS1)
CASE(loss5, LOSS5)
CASE(loss20, LOSS20)
CASE(ge, GE)
CASE(reorder, REORDER)
CASE(dup, DUP)
CASE(corrupt, CORRUPT)
CASE(blackhole, BLACKHOLE)
CASE(mtu1280, MTU1280)

#define BOTH(name) cmocka_unit_test(test_down_##name), cmocka_unit_test(test_up_##name)

int main(void)
{
    const struct CMUnitTest tests[] = {BOTH(clean),     BOTH(loss1),   BOTH(loss5), BOTH(loss20),
                                       BOTH(ge),        BOTH(reorder), BOTH(dup),   BOTH(corrupt),
                                       BOTH(blackhole), BOTH(mtu1280)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
