/* SPDX-License-Identifier: MIT */
/* Persistent congestion (RFC 9002 §7.6): a 5 s blackhole
 * (3-8 s) on both links of a 50 Mbit/s x 50 ms path (1-BDP queues) in the middle of a bulk
 * download. When the path comes back, the ACK that makes the sender
 * declare persistent congestion collapses the window to the minimum; the
 * packets that same ACK (and the next ones of that round) acknowledge must
 * not lift it back near its pre-outage size: at most 10% of it right
 * after the collapse (it was 0.7x before the fix: see below). NewReno,
 * CUBIC and BBR; the transfer still completes byte-exact. */
#include "bbr_env.h"
#include "per_cc.h"
#include "transport/conn/conn.h"

#define MS QK_NS_PER_MS
#define S  QK_NS_PER_S

static void blackhole(qk_cc_kind cc, const char *name)
{
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.rate_bps = 50000000;
    l.delay_ns = 25 * MS;
    l.limit_bytes = 312500;
    l.blackhole_start_ns = 3 * S;
    l.blackhole_end_ns = 8 * S;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 51, &l, &l), 0);
    qk_simq_cfg c = {.duration_ns = 16 * S, .cc = cc, .window_bytes = 8u << 20};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    qk_sim_run(e.sim, 3 * S - MS);
    qk_conn *s = qk_simq_server_conn(q);
    assert_non_null(s);
    uint64_t w0 = s->cc.cwnd_bytes;
    uint64_t pc0 = s->rec.stats.persistent_congestion;
    qk_time t = 8 * S;
    qk_sim_run(e.sim, t);
    /* Find the moment persistent congestion is declared. */
    while (s->rec.stats.persistent_congestion == pc0 && t < 20 * S) {
        t += MS;
        qk_sim_run(e.sim, t);
    }
    assert_true(s->rec.stats.persistent_congestion > pc0);
    uint64_t w1 = s->cc.cwnd_bytes;
    /* One round trip later: the window regrows from the minimum, it was
     * not restored. */
    qk_sim_run(e.sim, t + 50 * MS);
    uint64_t w2 = s->cc.cwnd_bytes;
    fprintf(stderr, "%s: cwnd before %llu, at persistent congestion (t=%.3f s) %llu, +50 ms %llu\n",
            name, (unsigned long long)w0, (double)t / 1e9, (unsigned long long)w1,
            (unsigned long long)w2);
    assert_true(w1 <= w0 / 10);
    assert_true(w2 <= w0 / 4);
    bool done = quic_env_run_done(&e, q, 60 * S);
    const qk_simq_result *r = qk_simq_result_get(q);
    assert_true(done);
    assert_false(r->mismatch);
    assert_true(r->hash_written == r->hash_read);
    quic_env_free(&e);
}

int main(void)
{
    return qk_run_per_cc("test_bbr_blackhole", blackhole);
}
