/* SPDX-License-Identifier: MIT */
/*
 * bench_robust: simulator experiments for key update and DPLPMTUD.
 *  1. goodput of a 50 MiB download with 1200-byte datagrams (PMTUD off)
 *     versus DPLPMTUD up to 1452 bytes, on a few paths (docs/perf.md);
 *  2. a 50 MiB download with key updates every 1,000 packets from each side,
 *     versus none (RFC 9001 §6): time, updates, bytes checked.
 * Usage: bench_robust [size_MiB]   (prints markdown tables)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quack/sim.h>

#include "sim/flow_quic.h"

#define MS QK_NS_PER_MS

typedef struct knobs {
    bool pmtud;
    size_t max_udp;
    uint64_t ku_every;
} knobs;

static void tune(void *ctx, qk_config *cfg, bool server)
{
    (void)server;
    const knobs *k = ctx;
    cfg->pmtud = k->pmtud;
    cfg->max_udp_payload_bytes = k->max_udp;
    cfg->key_update_after_pkts = k->ku_every;
}

typedef struct outcome {
    bool ok;
    double secs, goodput_mbps;
    uint64_t size_bytes, updates, lost;
} outcome;

static outcome run(const qk_sim_link_cfg *l, uint64_t size, knobs *k, uint64_t seed)
{
    outcome o = {0};
    qk_sim *sim = qk_sim_new(seed);
    int a = qk_sim_host_add(sim, "a", 0x0a000001), b = qk_sim_host_add(sim, "b", 0x0a000002);
    int f = qk_sim_link_add(sim, "fwd", a, b, l), r = qk_sim_link_add(sim, "ret", b, a, l);
    qk_sim_route_add(sim, a, -1, f);
    qk_sim_route_add(sim, b, -1, r);
    qk_simq_cfg c = {.size_bytes = size, .window_bytes = 16u << 20, .tune = tune, .ctx = k};
    int err = 0;
    qk_simq *q = qk_simq_new(sim, a, b, 4433, &c, &err);
    if (!q) {
        fprintf(stderr, "qk_simq_new: %s\n", qk_strerror(err));
        exit(1);
    }
    while (qk_sim_now(sim) < 600 * QK_NS_PER_S && !qk_simq_result_get(q)->done) {
        qk_sim_run(sim, qk_sim_now(sim) + 100 * MS);
        const qk_simq_result *res = qk_simq_result_get(q);
        if (res->server_stats.pmtu_bytes > o.size_bytes)
            o.size_bytes = res->server_stats.pmtu_bytes;
        if (res->server_stats.key_updates > o.updates) o.updates = res->server_stats.key_updates;
    }
    const qk_simq_result *res = qk_simq_result_get(q);
    o.ok = res->done && !res->mismatch && res->hash_read == res->hash_written;
    o.secs = (double)res->completion_ns / 1e9;
    o.goodput_mbps = o.secs > 0 ? (double)res->read_bytes * 8 / o.secs / 1e6 : 0;
    o.size_bytes = res->server_stats.pmtu_bytes ? res->server_stats.pmtu_bytes : o.size_bytes;
    o.lost = res->server_stats.pkts_lost;
    qk_sim_del(sim);
    qk_simq_del(q);
    return o;
}

typedef struct path {
    const char *name;
    uint64_t rate_bps;
    qk_time delay_ns;
    double loss;
} path;

int main(int argc, char **argv)
{
    uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 50;
    uint64_t size = mib << 20;
    static const path paths[] = {
        {"100 Mbit/s, 20 ms RTT", 100000000, 10 * MS, 0},
        {"100 Mbit/s, 20 ms RTT, 1% loss", 100000000, 10 * MS, 0.01},
        {"1 Gbit/s, 10 ms RTT", 1000000000, 5 * MS, 0},
        {"20 Mbit/s, 80 ms RTT, 0.5% loss", 20000000, 40 * MS, 0.005},
    };
    printf("## DPLPMTUD: %llu MiB download, CUBIC, 1-BDP drop-tail queue, link MTU 1500\n\n",
           (unsigned long long)mib);
    printf("| path | 1200 B (PMTUD off) | PMTUD to 1452 B | gain |\n|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        qk_sim_link_cfg l;
        memset(&l, 0, sizeof l);
        l.rate_bps = paths[i].rate_bps;
        l.delay_ns = paths[i].delay_ns;
        l.limit_bytes = paths[i].rate_bps / 8 * 2 * paths[i].delay_ns / QK_NS_PER_S;
        l.mtu_bytes = 1500;
        if (paths[i].loss > 0) {
            l.loss = QK_SIM_LOSS_BERNOULLI;
            l.loss_p = paths[i].loss;
        }
        knobs k0 = {.pmtud = false, .max_udp = 1200}, k1 = {.pmtud = true, .max_udp = 1452};
        outcome o0 = run(&l, size, &k0, 42 + i), o1 = run(&l, size, &k1, 42 + i);
        printf("| %s | %.1f Mbit/s (%.2f s)%s | %.1f Mbit/s (%.2f s, %llu B)%s | %+.1f%% |\n",
               paths[i].name, o0.goodput_mbps, o0.secs, o0.ok ? "" : " FAILED", o1.goodput_mbps,
               o1.secs, (unsigned long long)o1.size_bytes, o1.ok ? "" : " FAILED",
               o0.goodput_mbps > 0 ? 100.0 * (o1.goodput_mbps / o0.goodput_mbps - 1) : 0);
        fflush(stdout);
    }
    printf("\n## Key update: %llu MiB download, 100 Mbit/s, 20 ms RTT, 1%% reordering\n\n",
           (unsigned long long)mib);
    printf("| key updates | time | goodput | updates seen | data |\n|---|---|---|---|---|\n");
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.rate_bps = 100000000;
    l.delay_ns = 10 * MS;
    l.limit_bytes = 250000;
    l.reorder_p = 0.01;
    l.reorder_delay_ns = 3 * MS;
    uint64_t every[] = {0, 1000, 200};
    for (size_t i = 0; i < 3; i++) {
        knobs k = {.pmtud = true, .max_udp = 1452, .ku_every = every[i]};
        outcome o = run(&l, size, &k, 7);
        char what[48];
        snprintf(what, sizeof what, every[i] ? "every %llu packets, each side" : "none",
                 (unsigned long long)every[i]);
        printf("| %s | %.2f s | %.1f Mbit/s | %llu | %s |\n", what, o.secs, o.goodput_mbps,
               (unsigned long long)o.updates, o.ok ? "byte-exact" : "FAILED");
        fflush(stdout);
    }
    return 0;
}
