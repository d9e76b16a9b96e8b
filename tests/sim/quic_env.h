/* SPDX-License-Identifier: MIT */
/* Shared by tests/sim/test_quic_*.c: a point-to-point simulator with a QUIC
 * flow (src/sim/flow_quic.h) between host a (client) and host b (server). */
#ifndef QK_TEST_QUIC_ENV_H
#define QK_TEST_QUIC_ENV_H

#include "sim/flow_quic.h"

#include <quack/sim.h>
#include <stdio.h>
#include <string.h>

typedef struct quic_env {
    qk_sim *sim;
    int a, b;     /* hosts: a = client, b = server */
    int fwd, ret; /* links a -> b and b -> a */
    qk_simq *q;
} quic_env;

/* Build the path; fwd/ret may be NULL (ideal link). Returns 0 or an error. */
static inline int quic_env_init(quic_env *e, uint64_t seed, const qk_sim_link_cfg *fwd,
                                const qk_sim_link_cfg *ret)
{
    qk_sim_link_cfg ideal;
    memset(&ideal, 0, sizeof ideal);
    memset(e, 0, sizeof *e);
    e->sim = qk_sim_new(seed);
    if (!e->sim) return QK_ERR_NOMEM;
    e->a = qk_sim_host_add(e->sim, "a", 0x0a000001);
    e->b = qk_sim_host_add(e->sim, "b", 0x0a000002);
    e->fwd = qk_sim_link_add(e->sim, "forward", e->a, e->b, fwd ? fwd : &ideal);
    e->ret = qk_sim_link_add(e->sim, "return", e->b, e->a, ret ? ret : &ideal);
    if (e->a < 0 || e->b < 0 || e->fwd < 0 || e->ret < 0) return QK_ERR_CONFIG;
    qk_sim_route_add(e->sim, e->a, -1, e->fwd);
    qk_sim_route_add(e->sim, e->b, -1, e->ret);
    return 0;
}

static inline qk_simq *quic_env_flow(quic_env *e, uint16_t port, const qk_simq_cfg *cfg)
{
    int err = 0;
    qk_simq *q = qk_simq_new(e->sim, e->a, e->b, port, cfg, &err);
    if (!q) fprintf(stderr, "qk_simq_new: %d\n", err);
    if (!e->q) e->q = q;
    return q;
}

/* Run until the flow is done (checked every step_ns) or `until`. */
static inline bool quic_env_run_done(quic_env *e, qk_simq *q, qk_time until)
{
    qk_time step = 50 * QK_NS_PER_MS;
    while (qk_sim_now(e->sim) < until) {
        qk_time t = qk_sim_now(e->sim) + step;
        qk_sim_run(e->sim, t < until ? t : until);
        if (qk_simq_result_get(q)->done) return true;
    }
    return qk_simq_result_get(q)->done;
}

static inline void quic_env_free(quic_env *e)
{
    qk_sim_del(e->sim);
    qk_simq_del(e->q);
}

/* A 100 Mbit/s, 10 ms one-way link with a 1-BDP (250 kB... rounded) queue. */
static inline qk_sim_link_cfg quic_env_link(void)
{
    qk_sim_link_cfg c;
    memset(&c, 0, sizeof c);
    c.rate_bps = 100000000;
    c.delay_ns = 10 * QK_NS_PER_MS;
    c.limit_bytes = 250000; /* 100 Mbit/s x 20 ms = 250 kB */
    return c;
}

#endif
