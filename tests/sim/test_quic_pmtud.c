/* SPDX-License-Identifier: MIT */
/* DPLPMTUD through the simulator (RFC 8899 via RFC 9000 §14.3): on a
 * 1500-byte path the connection reaches 1452-byte datagrams within a few
 * RTTs; on a path that silently drops datagrams above 1300 it settles at or
 * below 1300 without stalling; when the path MTU shrinks mid-transfer the
 * black hole is detected and the connection falls back and finishes; lost
 * probes are no congestion signal. */
#include "qk_test.h"
#include "quic_env.h"

#include "transport/conn/conn.h"
#include "transport/path/pmtud.h"

#define MS QK_NS_PER_MS

typedef struct mtu_run {
    qk_time reach_1452_ns; /* when the server first used 1452-byte datagrams */
    uint64_t final_bytes;
    uint64_t probes_sent, probes_lost, black_holes, congestion_events;
} mtu_run;

static void watch(qk_simq *q, mtu_run *m, qk_time now)
{
    qk_conn *s = qk_simq_server_conn(q);
    if (!s) return;
    if (s->max_udp_bytes >= 1452 && m->reach_1452_ns == QK_TIME_INFINITE) m->reach_1452_ns = now;
    m->final_bytes = s->max_udp_bytes;
    m->probes_sent = s->pmtud.probes_sent;
    m->probes_lost = s->pmtud.probes_lost;
    m->black_holes = s->pmtud.black_holes;
    m->congestion_events = s->cc.congestion_events;
}

static const qk_simq_result *run_mtu(quic_env *e, uint32_t mtu, uint64_t size, qk_time shrink_at,
                                     uint32_t shrink_to, mtu_run *m)
{
    qk_sim_link_cfg l = quic_env_link();
    l.mtu_bytes = mtu;
    assert_int_equal(quic_env_init(e, 900 + mtu, &l, &l), 0);
    qk_simq_cfg c = {.size_bytes = size, .window_bytes = 4u << 20};
    qk_simq *q = quic_env_flow(e, 4433, &c);
    assert_non_null(q);
    memset(m, 0, sizeof *m);
    m->reach_1452_ns = QK_TIME_INFINITE;
    bool shrunk = false;
    while (qk_sim_now(e->sim) < 60 * QK_NS_PER_S && !qk_simq_result_get(q)->done) {
        qk_sim_run(e->sim, qk_sim_now(e->sim) + 5 * MS);
        watch(q, m, qk_sim_now(e->sim));
        if (shrink_at && !shrunk && qk_sim_now(e->sim) >= shrink_at) {
            shrunk = true;
            qk_sim_link_set_mtu(e->sim, e->ret, shrink_to);
            qk_sim_link_set_mtu(e->sim, e->fwd, shrink_to);
        }
    }
    const qk_simq_result *r = qk_simq_result_get(q);
    fprintf(stderr,
            "mtu %u: done=%d t=%.3fs size %llu, 1452 at %.1f ms, probes %llu (lost %llu), "
            "black holes %llu, congestion events %llu, server max dgram %zu\n",
            mtu, r->done, r->completion_ns / 1e9, (unsigned long long)m->final_bytes,
            m->reach_1452_ns == QK_TIME_INFINITE ? -1.0 : m->reach_1452_ns / 1e6,
            (unsigned long long)m->probes_sent, (unsigned long long)m->probes_lost,
            (unsigned long long)m->black_holes, (unsigned long long)m->congestion_events,
            r->server_max_dgram_bytes);
    assert_true(r->done);
    assert_false(r->mismatch);
    assert_int_equal(r->read_bytes, size);
    assert_int_equal(r->hash_read, r->hash_written);
    return r;
}

static void test_mtu1500(void **st)
{
    (void)st;
    quic_env e;
    mtu_run m;
    run_mtu(&e, 1500, 4u << 20, 0, 0, &m);
    assert_int_equal(m.final_bytes, 1452);
    /* handshake (~2 RTT = 40 ms) + one probe round trip: well within 5 RTTs */
    assert_true(m.reach_1452_ns <= 100 * MS);
    assert_int_equal(m.probes_lost, 0);
    assert_int_equal(qk_sim_link_stats_get(e.sim, e.ret)->dropped_pkts[QK_SIM_DROP_MTU], 0);
    quic_env_free(&e);
}

static void test_mtu1300(void **st)
{
    (void)st;
    quic_env e;
    mtu_run m;
    const qk_simq_result *r = run_mtu(&e, 1300, 4u << 20, 0, 0, &m);
    assert_true(m.final_bytes <= 1300);
    assert_true(m.final_bytes > 1300 - 2 * QK_PMTUD_STEP_BYTES); /* the search converged */
    /* only probes were too large: each failed size was tried MAX_PROBES times */
    uint64_t mtu_drops = qk_sim_link_stats_get(e.sim, e.ret)->dropped_pkts[QK_SIM_DROP_MTU];
    assert_int_equal(mtu_drops, m.probes_lost);
    assert_true(m.probes_lost >= 2 * QK_PMTUD_MAX_PROBES); /* 1452 and 1326 failed */
    assert_true(m.probes_lost <= 4 * QK_PMTUD_MAX_PROBES);
    /* no stall: 4 MiB at ~100 Mbit/s */
    assert_true(r->completion_ns < 3 * QK_NS_PER_S);
    quic_env_free(&e);
}

/* The path MTU drops from 1500 to 1280 mid-transfer: full-size packets vanish. */
static void test_black_hole(void **st)
{
    (void)st;
    quic_env e;
    mtu_run m;
    const qk_simq_result *r = run_mtu(&e, 1500, 10u << 20, 300 * MS, 1280, &m);
    assert_true(m.black_holes >= 1);
    assert_true(m.final_bytes <= 1280);
    assert_true(r->completion_ns < 10 * QK_NS_PER_S);
    quic_env_free(&e);
}

/* The search as arithmetic: 1452 fails, then halving between 1200 and 1452. */
static void test_search_steps(void **st)
{
    (void)st;
    qk_pmtud p;
    qk_pmtud_init(&p, true, 1452);
    qk_pmtud_start(&p, 0);
    uint32_t path = 1300, tries = 0;
    for (uint32_t sz; (sz = qk_pmtud_probe_size(&p, 0)) != 0 && tries < 100; tries++) {
        qk_pmtud_on_probe_sent(&p, sz);
        if (sz <= path)
            qk_pmtud_on_probe_acked(&p, sz, 0);
        else
            qk_pmtud_on_probe_lost(&p, sz, 0);
    }
    /* 1452 x3, 1326 x3, 1263, 1294, 1310 x3: settles at 1294 */
    assert_int_equal(p.cur_bytes, 1294);
    assert_int_equal(tries, 11);
    assert_false(p.searching);
    assert_int_equal(p.raise_at, QK_PMTUD_RAISE_NS);
    /* black hole: three full-size losses after the last full-size ack */
    qk_pmtud_on_packet(&p, 1294, 10, true);
    qk_pmtud_on_packet(&p, 1294, 5, false); /* older than the ack */
    qk_pmtud_on_packet(&p, 1294, 11, false);
    qk_pmtud_on_packet(&p, 1294, 12, false);
    qk_pmtud_on_packet(&p, 1294, 13, false);
    qk_pmtud_on_packet(&p, 1294, 13, true); /* the same ACK also got a later one through */
    assert_false(qk_pmtud_check(&p, 20));
    qk_pmtud_on_packet(&p, 1294, 14, false);
    qk_pmtud_on_packet(&p, 1294, 15, false);
    assert_false(qk_pmtud_check(&p, 20));
    qk_pmtud_on_packet(&p, 1294, 16, false);
    assert_true(qk_pmtud_check(&p, 20));
    assert_int_equal(p.cur_bytes, QK_PMTUD_BASE_BYTES);
    assert_int_equal(qk_pmtud_probe_size(&p, 20 + QK_PMTUD_BH_RETRY_NS - 1), 0);
    assert_int_equal(qk_pmtud_probe_size(&p, 20 + QK_PMTUD_BH_RETRY_NS), 1452);
    /* disabled when the bound is the base */
    qk_pmtud_init(&p, true, 1200);
    assert_false(p.enabled);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_search_steps),
        cmocka_unit_test(test_mtu1500),
        cmocka_unit_test(test_mtu1300),
        cmocka_unit_test(test_black_hole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
