/* SPDX-License-Identifier: MIT */
/* Shared by tests/sim/test_slow_bbr_lt*.c: bulk downloads over one
 * symmetric path (host b -> host a carries the data; drop-tail queues of
 * buf_bdp x BDP; loss and a rate step on the data direction only), the
 * way bench/cc.c builds its "one" path. Measures each flow's goodput, the
 * data queue's p95 delay and the first flow's retransmitted fraction over
 * [t0, t1]. */
#ifndef QK_TEST_LT_ENV_H
#define QK_TEST_LT_ENV_H

#include "qk_test.h"
#include "quic_env.h"

#include <math.h>
#include <stdlib.h>

#define LT_MS QK_NS_PER_MS
#define LT_S  QK_NS_PER_S

typedef struct lt_path {
    double rate_mbit, rtt_ms, buf_bdp;
    double loss_pct;     /* Bernoulli loss, % */
    double ge_pct;       /* or Gilbert-Elliott bursts of this mean, % (bad state:
                            half the packets lost, 1 / ge_p_bg packets long) */
    double ge_p_bg;      /* P(bad -> good); 0 = 0.1 */
    double drop_to_mbit; /* rate step at drop_at_ns (0: none) */
    qk_time drop_at_ns;
    double jitter_ms; /* each direction: up to this much extra delay per packet (FIFO kept) */
} lt_path;

typedef struct lt_flow {
    qk_cc_kind cc;
    uint64_t cap_bps; /* qk_config.cc_max_rate_bps (0: none) */
    qk_time start_ns;
} lt_flow;

typedef struct lt_result {
    double goodput_mbit[2];
    double qd_p95_ms;
    double retx;     /* flow 1: packets declared lost / sent, over the whole run */
    double settle_s; /* from drop_at_ns until the queue is under one base RTT (-1) */
    bool ok;         /* no byte differed; flow 1 completed with equal hashes */
    bool intact;     /* no byte differed (a starved flow may still be draining) */
} lt_result;

static int lt_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void lt_tune(void *ctx, qk_config *cfg, bool server)
{
    (void)server;
    cfg->cc_max_rate_bps = ((const lt_flow *)ctx)->cap_bps;
}

static inline void lt_links(const lt_path *p, qk_sim_link_cfg *l, qk_sim_link_cfg *d)
{
    memset(l, 0, sizeof *l);
    l->rate_bps = (uint64_t)(p->rate_mbit * 1e6);
    l->delay_ns = (qk_time)(p->rtt_ms / 2 * LT_MS);
    double bdp = p->rate_mbit * 1e6 / 8 * p->rtt_ms / 1e3;
    l->limit_bytes = (uint64_t)(p->buf_bdp * bdp);
    if (l->limit_bytes < 15000) l->limit_bytes = 15000;
    l->jitter_ns = (qk_time)(p->jitter_ms * LT_MS);
    *d = *l;
    if (p->loss_pct > 0) {
        d->loss = QK_SIM_LOSS_BERNOULLI;
        d->loss_p = p->loss_pct / 100;
    } else if (p->ge_pct > 0) {
        double h = 0.5, pbg = p->ge_p_bg > 0 ? p->ge_p_bg : 0.1, bad = p->ge_pct / 100 / h;
        d->loss = QK_SIM_LOSS_GE;
        d->ge_loss_bad = h;
        d->ge_p_bg = pbg;
        d->ge_p_gb = bad * pbg / (1 - bad);
    }
    if (p->drop_to_mbit > 0) {
        d->rate_schedule[0].at_ns = p->drop_at_ns;
        d->rate_schedule[0].rate_bps = (uint64_t)(p->drop_to_mbit * 1e6);
        d->n_rate_schedule = 1;
    }
}

/* Run n (1 or 2) downloads until t1; measure over [t0, t1]. */
static inline lt_result lt_run(const lt_path *p, lt_flow *f, int n, uint64_t seed, qk_time t0,
                               qk_time t1)
{
    qk_sim_link_cfg l, d;
    lt_links(p, &l, &d);
    quic_env e;
    assert_int_equal(quic_env_init(&e, seed, &l, &d), 0);
    uint64_t bdp = (uint64_t)(p->rate_mbit * 1e6 / 8 * p->rtt_ms / 1e3);
    uint64_t win = 2 * (bdp + l.limit_bytes);
    qk_simq *q[2] = {0};
    for (int i = 0; i < n; i++) {
        qk_simq_cfg c = {.duration_ns = t1,
                         .cc = f[i].cc,
                         .start_ns = f[i].start_ns,
                         .window_bytes = win > (1u << 20) ? win : 1u << 20};
        if (f[i].cap_bps) {
            c.tune = lt_tune;
            c.ctx = &f[i];
        }
        q[i] = quic_env_flow(&e, (uint16_t)(4433 + i), &c);
        assert_non_null(q[i]);
    }
    lt_result r = {.settle_s = -1};
    size_t cap = (size_t)(t1 / (5 * LT_MS)) + 2, nq = 0;
    double *qd = calloc(cap, sizeof *qd);
    assert_non_null(qd);
    uint64_t r0[2] = {0};
    bool under = false;
    for (qk_time t = 5 * LT_MS; t <= t1; t += 5 * LT_MS) {
        qk_sim_run(e.sim, t);
        if (t == t0)
            for (int i = 0; i < n; i++) r0[i] = qk_simq_result_get(q[i])->read_bytes;
        double rate = p->drop_to_mbit > 0 && t >= p->drop_at_ns ? p->drop_to_mbit : p->rate_mbit;
        double ms = (double)qk_sim_link_stats_get(e.sim, e.ret)->queue_bytes * 8 / (rate * 1e3);
        if (p->drop_to_mbit > 0 && t > p->drop_at_ns + 100 * LT_MS && !under && ms <= p->rtt_ms) {
            under = true;
            r.settle_s = (double)(t - p->drop_at_ns) / 1e9;
        }
        if (t >= t0 && nq < cap) qd[nq++] = ms;
    }
    double secs = (double)(t1 - t0) / 1e9;
    for (int i = 0; i < n; i++)
        r.goodput_mbit[i] = (double)(qk_simq_result_get(q[i])->read_bytes - r0[i]) * 8 / secs / 1e6;
    qsort(qd, nq, sizeof *qd, lt_cmp_double);
    r.qd_p95_ms = nq ? qd[nq * 95 / 100] : 0;
    free(qd);
    const qk_simq_result *s = qk_simq_result_get(q[0]);
    r.retx = s->server_stats.pkts_sent
                 ? (double)s->server_stats.pkts_lost / (double)s->server_stats.pkts_sent
                 : 0;
    bool done = quic_env_run_done(&e, q[0], t1 + 20 * LT_S);
    s = qk_simq_result_get(q[0]);
    r.intact = !s->mismatch;
    r.ok = done && !s->mismatch && s->hash_written == s->hash_read;
    for (int i = 1; i < n; i++) r.ok = r.ok && !qk_simq_result_get(q[i])->mismatch;
    qk_sim_del(e.sim);
    for (int i = 0; i < n; i++) qk_simq_del(q[i]);
    return r;
}

static inline void lt_print(const char *what, const lt_result *r)
{
    fprintf(stderr,
            "%s: goodput %.2f / %.2f Mbit/s, queue p95 %.1f ms, retransmitted %.3f %%, settle "
            "%.3f s, ok %d\n",
            what, r->goodput_mbit[0], r->goodput_mbit[1], r->qd_p95_ms, r->retx * 100, r->settle_s,
            r->ok);
}

#endif
