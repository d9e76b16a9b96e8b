/* SPDX-License-Identifier: MIT */
/*
 * Simulator speed: a CBR flood through a dumbbell (N senders -> 10 Gbit/s
 * bottleneck with step marking, 1% loss and a 1000-packet queue -> receiver).
 * Prints packet events per wall-clock second.
 * usage: bench_sim_flood [SIM_SECONDS] [SENDERS]
 */
#include <quack/sim.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    int n = argc > 2 ? atoi(argv[2]) : 4;
    if (secs <= 0 || n < 1 || n > 200) {
        fprintf(stderr, "usage: bench_sim_flood [SIM_SECONDS > 0] [SENDERS 1..200]\n");
        return 2;
    }
    qk_sim *sim = qk_sim_new(1);
    int left = qk_sim_host_add(sim, "left", 0x0a000001);
    int rcv = qk_sim_host_add(sim, "r1", 0x0a000201);
    qk_sim_link_cfg bott = {.rate_bps = 10000000000ull,
                            .delay_ns = 100 * QK_NS_PER_US,
                            .limit_pkts = 1000,
                            .aqm = QK_SIM_AQM_STEP,
                            .step_k_pkts = 65,
                            .loss = QK_SIM_LOSS_BERNOULLI,
                            .loss_p = 0.01};
    qk_sim_link_cfg access = {.rate_bps = 10000000000ull, .delay_ns = 10 * QK_NS_PER_US};
    int fwd = qk_sim_link_add(sim, "forward", left, rcv, &bott);
    qk_sim_route_add(sim, left, -1, fwd);
    qk_sim_sink *sink[200];
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", i + 1);
        int h = qk_sim_host_add(sim, name, 0x0a000101u + (uint32_t)i);
        int up = qk_sim_link_add(sim, name, h, left, &access);
        qk_sim_route_add(sim, h, -1, up);
        qk_sim_sink_add(sim, rcv, (uint16_t)(1000 + i), &sink[i]);
        /* together 1.2 x the bottleneck, slightly different sizes to break phase lock */
        qk_sim_cbr_cfg c = {.rate_bps = 12000000000ull / (uint64_t)n,
                            .size_bytes = 1200 + 10 * (uint32_t)i,
                            .ecn = QK_ECN_ECT0,
                            .dst = qk_sim_host_addr(sim, rcv, (uint16_t)(1000 + i))};
        if (qk_sim_cbr_add(sim, h, (uint16_t)(2000 + i), &c, NULL) < 0) return 1;
    }
    double t0 = wall();
    qk_sim_run(sim, (qk_time)(secs * 1e9));
    double dt = wall() - t0;
    uint64_t ev = qk_sim_events(sim), pk = 0;
    for (int i = 0; i < n; i++) pk += qk_sim_sink_stats_get(sink[i])->pkts;
    printf("sim_flood: %d senders, %.2f s simulated in %.3f s wall: %llu events, %.2f M "
           "events/s, %llu packets delivered (%.2f M/s)\n",
           n, secs, dt, (unsigned long long)ev, (double)ev / dt / 1e6, (unsigned long long)pk,
           (double)pk / dt / 1e6);
    qk_sim_del(sim);
    return 0;
}
