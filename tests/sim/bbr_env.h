/* SPDX-License-Identifier: MIT */
/* Shared by tests/sim/test_bbr*.c and test_slow_bbr.c: one bulk download
 * over a symmetric path, with goodput over a window and sampled queueing
 * delay of the data direction (b -> a, the "return" link). */
#ifndef QK_TEST_BBR_ENV_H
#define QK_TEST_BBR_ENV_H

#include "qk_test.h"
#include "quic_env.h"

#include <stdlib.h>

typedef struct bbr_path {
    uint64_t rate_bps;
    qk_time one_way_ns;
    uint64_t limit_bytes;
    double loss_p; /* data direction only */
    double reorder_p;
    qk_time reorder_ns;
} bbr_path;

typedef struct bbr_run {
    double goodput_bps; /* application bytes read in [t0, t1] */
    double util;        /* data-link bytes delivered in [t0, t1] / rate */
    double qd_p50_ms, qd_p95_ms;
    uint64_t lost, spurious, sent;
    bool ok; /* completed; every byte matched; hashes of written and read equal */
} bbr_run;

static int bbr_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Run a `cc` download for t1 on path p; measure in [t0, t1]; sample the
 * data link's backlog every 5 ms from t0 on. */
static inline bbr_run bbr_run_path(const bbr_path *p, qk_cc_kind cc, uint64_t seed, qk_time t0,
                                   qk_time t1)
{
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.rate_bps = p->rate_bps;
    l.delay_ns = p->one_way_ns;
    l.limit_bytes = p->limit_bytes;
    qk_sim_link_cfg d = l;
    if (p->loss_p > 0) {
        d.loss = QK_SIM_LOSS_BERNOULLI;
        d.loss_p = p->loss_p;
    }
    d.reorder_p = p->reorder_p;
    d.reorder_delay_ns = p->reorder_ns;
    quic_env e;
    assert_int_equal(quic_env_init(&e, seed, &l, &d), 0);
    /* Window and send buffer: twice BDP + buffer, so that what is still
     * buffered at t1 drains within seconds. */
    uint64_t bdp = (uint64_t)((double)p->rate_bps / 8 * 2 * (double)p->one_way_ns / 1e9);
    uint64_t win = 2 * (bdp + p->limit_bytes);
    qk_simq_cfg c = {
        .duration_ns = t1, .cc = cc, .window_bytes = win > (1u << 20) ? win : 1u << 20};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    qk_sim_run(e.sim, t0);
    uint64_t b0 = qk_sim_link_stats_get(e.sim, e.ret)->delivered_bytes;
    uint64_t r0 = qk_simq_result_get(q)->read_bytes;
    size_t n = 0, cap = (size_t)((t1 - t0) / (5 * QK_NS_PER_MS)) + 2;
    double *qd = calloc(cap, sizeof *qd);
    assert_non_null(qd);
    for (qk_time t = t0; t < t1 && n < cap; t += 5 * QK_NS_PER_MS) {
        qk_sim_run(e.sim, t);
        uint64_t qb = qk_sim_link_stats_get(e.sim, e.ret)->queue_bytes;
        qd[n++] = (double)qb * 8 / (double)p->rate_bps * 1e3;
    }
    qk_sim_run(e.sim, t1);
    const qk_simq_result *r = qk_simq_result_get(q);
    bbr_run out = {0};
    double secs = (double)(t1 - t0) / 1e9;
    out.goodput_bps = (double)(r->read_bytes - r0) * 8 / secs;
    out.util = (double)(qk_sim_link_stats_get(e.sim, e.ret)->delivered_bytes - b0) * 8 / secs /
               (double)p->rate_bps;
    qsort(qd, n, sizeof *qd, bbr_cmp_double);
    out.qd_p50_ms = n ? qd[n / 2] : 0;
    out.qd_p95_ms = n ? qd[n * 95 / 100] : 0;
    free(qd);
    out.lost = r->server_stats.pkts_lost;
    out.spurious = r->server_stats.pkts_spurious;
    out.sent = r->server_stats.pkts_sent;
    /* The transfer ends with FIN at t1: every byte read must match. */
    bool done = quic_env_run_done(&e, q, t1 + 10 * QK_NS_PER_S);
    r = qk_simq_result_get(q);
    if (!done || r->mismatch || r->written_bytes != r->read_bytes)
        fprintf(stderr, "done %d mismatch %d written %llu read %llu\n", done, r->mismatch,
                (unsigned long long)r->written_bytes, (unsigned long long)r->read_bytes);
    out.ok = done && !r->mismatch && r->hash_written == r->hash_read &&
             r->written_bytes == r->read_bytes;
    quic_env_free(&e);
    return out;
}

static inline void bbr_print(const char *what, const bbr_run *r)
{
    fprintf(stderr,
            "%s: goodput %.2f Mbit/s util %.1f%% qd p50 %.1f ms p95 %.1f ms lost %llu spurious "
            "%llu of %llu sent\n",
            what, r->goodput_bps / 1e6, r->util * 100, r->qd_p50_ms, r->qd_p95_ms,
            (unsigned long long)r->lost, (unsigned long long)r->spurious,
            (unsigned long long)r->sent);
}

#endif
