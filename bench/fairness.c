/*
 * bench_fairness: two QUIC bulk downloads share a 100 Mbit/s, 50 ms RTT
 * path with a 1-BDP (625 kB) drop-tail queue (the test_quic_cc setup); the
 * second starts `offset` seconds after the first. Prints one markdown row
 * per (controller, jitter, offset, seed): both flows' goodput over
 * [t0, t1], their difference relative to the faster one, and the link
 * utilisation; with --t2 also the difference over [t1, t2] (same run).
 *
 * Usage: bench_fairness [--cc cubic|newreno|both] [--t0 S] [--t1 S]
 *                       [--t2 S] [--seeds N] [--offsets a,b,c] [--jitter-ms a,b]
 *                       [--ack-frequency 0|1|2]  (qk_config.ack_frequency; default: library's)
 *                       [--trace OFFSET]   (per-100 ms cwnd/loss of both flows)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quack/sim.h>

#include "sim/flow_quic.h"

#define MS       QK_NS_PER_MS
#define RATE_BPS 100000000ull
#define BDP_B    625000u

typedef struct opts {
    int cc_mask;             /* 1 cubic, 2 newreno */
    double t0_s, t1_s, t2_s; /* t2 <= t1: no second window */
    int seeds;
    double offsets[16];
    int n_offsets;
    double jitters_ms[4];
    int n_jitters;
    double trace_offset; /* < 0: off */
    int ack_frequency;   /* -1: library default, else qk_config.ack_frequency */
} opts;

typedef struct row {
    double ga, gb, diff, util, diff2;
    bool mismatch;
} row;

static int parse_list(const char *s, double *out, int max)
{
    int n = 0;
    while (s && *s && n < max) {
        char *end;
        out[n++] = strtod(s, &end);
        s = *end == ',' ? end + 1 : NULL;
    }
    return n;
}

static row run(qk_cc_kind cc, double offset_s, double jitter_ms, uint64_t seed, const opts *o,
               bool trace)
{
    row r = {0};
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.rate_bps = RATE_BPS;
    l.delay_ns = 25 * MS;
    l.limit_bytes = BDP_B;
    l.jitter_ns = (qk_time)(jitter_ms * 1e6);
    qk_sim *sim = qk_sim_new(seed);
    int a = qk_sim_host_add(sim, "a", 0x0a000001), b = qk_sim_host_add(sim, "b", 0x0a000002);
    int f = qk_sim_link_add(sim, "fwd", a, b, &l), ret = qk_sim_link_add(sim, "ret", b, a, &l);
    qk_sim_route_add(sim, a, -1, f);
    qk_sim_route_add(sim, b, -1, ret);
    qk_time t1 = (qk_time)(o->t1_s * 1e9), t0 = (qk_time)(o->t0_s * 1e9);
    qk_time t2 = (qk_time)(o->t2_s * 1e9);
    qk_simq_cfg c = {.duration_ns = t2 > t1 ? t2 : t1, .cc = cc, .window_bytes = 32u << 20};
    if (o->ack_frequency >= 0) {
        c.ackfreq_set = true;
        c.ack_frequency = o->ack_frequency;
    }
    int err = 0;
    qk_simq *q1 = qk_simq_new(sim, a, b, 4433, &c, &err);
    c.start_ns = (qk_time)(offset_s * 1e9);
    qk_simq *q2 = qk_simq_new(sim, a, b, 4434, &c, &err);
    if (!q1 || !q2) {
        fprintf(stderr, "qk_simq_new: %s\n", qk_strerror(err));
        exit(1);
    }
    if (trace) {
        printf("| t s | cwnd A kB | cwnd B kB | lost A | lost B | srtt A ms | srtt B ms |\n");
        printf("|---|---|---|---|---|---|---|\n");
        for (qk_time t = 100 * MS; t <= t0; t += 100 * MS) {
            qk_sim_run(sim, t);
            const qk_conn_stats *sa = &qk_simq_result_get(q1)->server_stats;
            const qk_conn_stats *sb = &qk_simq_result_get(q2)->server_stats;
            printf("| %.1f | %.0f | %.0f | %llu | %llu | %.1f | %.1f |\n", (double)t / 1e9,
                   (double)sa->cwnd_bytes / 1e3, (double)sb->cwnd_bytes / 1e3,
                   (unsigned long long)sa->pkts_lost, (unsigned long long)sb->pkts_lost,
                   (double)sa->smoothed_rtt_ns / 1e6, (double)sb->smoothed_rtt_ns / 1e6);
        }
    }
    qk_sim_run(sim, t0);
    uint64_t a0 = qk_simq_result_get(q1)->read_bytes, b0 = qk_simq_result_get(q2)->read_bytes;
    uint64_t l0 = qk_sim_link_stats_get(sim, ret)->delivered_bytes;
    qk_sim_run(sim, t1);
    double secs = (double)(t1 - t0) / 1e9;
    r.ga = (double)(qk_simq_result_get(q1)->read_bytes - a0) * 8 / secs;
    r.gb = (double)(qk_simq_result_get(q2)->read_bytes - b0) * 8 / secs;
    r.util = (double)(qk_sim_link_stats_get(sim, ret)->delivered_bytes - l0) * 8 / secs /
             (double)RATE_BPS;
    double hi = r.ga > r.gb ? r.ga : r.gb, lo = r.ga > r.gb ? r.gb : r.ga;
    r.diff = hi > 0 ? (hi - lo) / hi : 1;
    if (t2 > t1) {
        qk_sim_run(sim, t2);
        double a2 = (double)(qk_simq_result_get(q1)->read_bytes - a0) - r.ga * secs / 8;
        double b2 = (double)(qk_simq_result_get(q2)->read_bytes - b0) - r.gb * secs / 8;
        double h2 = a2 > b2 ? a2 : b2, l2 = a2 > b2 ? b2 : a2;
        r.diff2 = h2 > 0 ? (h2 - l2) / h2 : 1;
    }
    r.mismatch = qk_simq_result_get(q1)->mismatch || qk_simq_result_get(q2)->mismatch;
    qk_sim_del(sim);
    qk_simq_del(q1);
    qk_simq_del(q2);
    return r;
}

int main(int argc, char **argv)
{
    opts o = {
        .cc_mask = 3, .t0_s = 10, .t1_s = 40, .seeds = 3, .trace_offset = -1, .ack_frequency = -1};
    o.n_offsets = parse_list("0,0.1,0.5,1,2", o.offsets, 16);
    o.n_jitters = parse_list("0,1", o.jitters_ms, 4);
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--cc"))
            o.cc_mask = !strcmp(v, "cubic") ? 1 : !strcmp(v, "newreno") ? 2 : 3;
        else if (!strcmp(k, "--t0"))
            o.t0_s = atof(v);
        else if (!strcmp(k, "--t1"))
            o.t1_s = atof(v);
        else if (!strcmp(k, "--t2"))
            o.t2_s = atof(v);
        else if (!strcmp(k, "--seeds"))
            o.seeds = atoi(v);
        else if (!strcmp(k, "--offsets"))
            o.n_offsets = parse_list(v, o.offsets, 16);
        else if (!strcmp(k, "--jitter-ms"))
            o.n_jitters = parse_list(v, o.jitters_ms, 4);
        else if (!strcmp(k, "--ack-frequency"))
            o.ack_frequency = atoi(v);
        else if (!strcmp(k, "--trace"))
            o.trace_offset = atof(v);
        else {
            fprintf(stderr, "unknown option %s\n", k);
            return 2;
        }
    }
    if (o.trace_offset >= 0) {
        qk_cc_kind cc = o.cc_mask == 2 ? QK_CONFIG_CC_NEWRENO : QK_CONFIG_CC_CUBIC;
        double jit = o.n_jitters ? o.jitters_ms[0] : 0;
        row r = run(cc, o.trace_offset, jit, 1, &o, true);
        printf("\nA %.2f B %.2f Mbit/s, difference %.1f%%, utilisation %.1f%%\n", r.ga / 1e6,
               r.gb / 1e6, r.diff * 100, r.util * 100);
        return 0;
    }
    printf("| cc | jitter ms | offset s | seed | A Mbit/s | B Mbit/s | difference %.0f-%.0f s | "
           "util |",
           o.t0_s, o.t1_s);
    if (o.t2_s > o.t1_s) printf(" difference %.0f-%.0f s |", o.t1_s, o.t2_s);
    printf("\n|---|---|---|---|---|---|---|---|%s\n", o.t2_s > o.t1_s ? "---|" : "");
    for (int ci = 0; ci < 2; ci++) {
        if (!(o.cc_mask & (1 << ci))) continue;
        qk_cc_kind cc = ci == 0 ? QK_CONFIG_CC_CUBIC : QK_CONFIG_CC_NEWRENO;
        for (int j = 0; j < o.n_jitters; j++)
            for (int k = 0; k < o.n_offsets; k++)
                for (int s = 1; s <= o.seeds; s++) {
                    row r = run(cc, o.offsets[k], o.jitters_ms[j], (uint64_t)s, &o, false);
                    printf("| %s | %g | %g | %d | %.1f | %.1f | %.0f%%%s | %.1f%% |",
                           ci == 0 ? "cubic" : "newreno", o.jitters_ms[j], o.offsets[k], s,
                           r.ga / 1e6, r.gb / 1e6, r.diff * 100, r.mismatch ? " MISMATCH" : "",
                           r.util * 100);
                    if (o.t2_s > o.t1_s) printf(" %.0f%% |", r.diff2 * 100);
                    printf("\n");
                    fflush(stdout);
                }
    }
    return 0;
}
