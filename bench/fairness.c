/* SPDX-License-Identifier: MIT */
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
 *                       [--pacing-gain PCT] (qk_config.pacing_gain_ca_pct; default: library's)
 *                       [--trace OFFSET]   (per-100 ms cwnd/loss of both flows)
 *                       [--fluid]          (reference: fluid model from start ratios
 *                                           B/A, synchronised or random drops)
 *                       [--events OFFSET]  (per congestion event: who lost how many
 *                                           packets, cwnd before/after, CUBIC W_max/K,
 *                                           fast convergence, undos; loss rate per flow)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quack/sim.h>

#include "sim/flow_quic.h"

#include <math.h>

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
    double trace_offset;      /* < 0: off */
    double events_offset;     /* < 0: off */
    int ack_frequency;        /* -1: library default, else qk_config.ack_frequency */
    uint32_t pacing_gain_pct; /* qk_config.pacing_gain_ca_pct (0: library default) */
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

typedef struct path_ids {
    int a, b, fwd, ret; /* hosts; links a -> b and b -> a */
} path_ids;

/* The test path: 100 Mbit/s, 25 ms each way, a 1-BDP drop-tail queue in both
 * directions, optional jitter; hosts a (10.0.0.1) and b (10.0.0.2). */
static qk_sim *path_new(double jitter_ms, uint64_t seed, path_ids *id)
{
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
    *id = (path_ids){.a = a, .b = b, .fwd = f, .ret = ret};
    return sim;
}

static row run(qk_cc_kind cc, double offset_s, double jitter_ms, uint64_t seed, const opts *o,
               bool trace)
{
    row r = {0};
    path_ids id;
    qk_sim *sim = path_new(jitter_ms, seed, &id);
    int a = id.a, b = id.b, ret = id.ret;
    qk_time t1 = (qk_time)(o->t1_s * 1e9), t0 = (qk_time)(o->t0_s * 1e9);
    qk_time t2 = (qk_time)(o->t2_s * 1e9);
    qk_simq_cfg c = {.duration_ns = t2 > t1 ? t2 : t1, .cc = cc, .window_bytes = 32u << 20};
    c.pacing_gain_pct = o->pacing_gain_pct;
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

/* ---- --events: congestion events of both flows ------------------------- */

typedef struct flow_probe {
    qk_simq *q;
    uint64_t lost, sent, resp, undos, spurious;
    uint64_t cwnd;
    double w_max, k_s;
    /* per-window accumulators */
    uint64_t ca_samples, reno_samples;
} flow_probe;

static void probe(flow_probe *f, qk_time now)
{
    qk_simq_cc_probe p;
    if (!qk_simq_cc_probe_get(f->q, true, &p)) return;
    f->lost = p.packets_lost;
    f->sent = p.packets_sent;
    f->undos = p.undos;
    f->spurious = p.spurious_losses;
    f->resp = p.congestion_events;
    f->cwnd = p.cwnd_bytes;
    if (!p.cubic) return;
    f->w_max = p.cubic_w_max_bytes;
    f->k_s = p.cubic_k_s;
    if (p.cwnd_bytes >= p.ssthresh_bytes && p.cubic_in_epoch && now >= p.cubic_epoch_start) {
        /* RFC 9438 §4.3: Reno-friendly region when W_cubic(t) < W_est. */
        double t = (double)(now - p.cubic_epoch_start) / 1e9 - p.cubic_k_s;
        double w_cubic = 0.4 * (double)p.max_datagram_bytes * t * t * t + p.cubic_w_max_bytes;
        f->ca_samples++;
        if (w_cubic < p.cubic_w_est_bytes) f->reno_samples++;
    }
}

typedef struct ev_acc {
    bool open;
    qk_time start, last_loss;
    flow_probe before[2];
    uint64_t max_queue;
} ev_acc;

#define EV_MAX 256
static uint64_t ev_drops[EV_MAX]; /* packets lost per event (both flows) */

static void ev_close(ev_acc *ev, const flow_probe *now, uint64_t *n_ev, uint64_t *n_both,
                     uint64_t *n_only, uint64_t *n_resp_only)
{
    uint64_t la = now[0].lost - ev->before[0].lost, lb = now[1].lost - ev->before[1].lost;
    if (*n_ev < EV_MAX) ev_drops[*n_ev] = la + lb;
    uint64_t ra = now[0].resp - ev->before[0].resp, rb = now[1].resp - ev->before[1].resp;
    bool fca = now[0].w_max < ev->before[0].w_max && ra,
         fcb = now[1].w_max < ev->before[1].w_max && rb;
    printf("| %.3f | %.0f | %llu | %llu | %llu | %llu | %.0f→%.0f | %.0f→%.0f | %.0f / %.0f | "
           "%.1f / %.1f | %s%s | %llu |\n",
           (double)ev->start / 1e9, (double)(ev->last_loss - ev->start) / 1e6,
           (unsigned long long)la, (unsigned long long)lb, (unsigned long long)ra,
           (unsigned long long)rb, (double)ev->before[0].cwnd / 1e3, (double)now[0].cwnd / 1e3,
           (double)ev->before[1].cwnd / 1e3, (double)now[1].cwnd / 1e3, now[0].w_max / 1e3,
           now[1].w_max / 1e3, now[0].k_s, now[1].k_s, fca ? "A" : "", fcb ? "B" : "",
           (unsigned long long)(now[0].undos - ev->before[0].undos + now[1].undos -
                                ev->before[1].undos));
    (*n_ev)++;
    if (la && lb) (*n_both)++;
    if (la && !lb) n_only[0]++;
    if (lb && !la) n_only[1]++;
    if (ra && !rb) n_resp_only[0]++;
    if (rb && !ra) n_resp_only[1]++;
    /* Alone-hit events by size: [2] the smaller window before, [3] the larger. */
    bool a_small = ev->before[0].cwnd < ev->before[1].cwnd;
    if (la && !lb) n_only[a_small ? 2 : 3]++;
    if (lb && !la) n_only[a_small ? 3 : 2]++;
}

static int run_events(qk_cc_kind cc, double offset_s, double jitter_ms, uint64_t seed,
                      const opts *o)
{
    path_ids id;
    qk_sim *sim = path_new(jitter_ms, seed, &id);
    int a = id.a, b = id.b, ret = id.ret;
    (void)ret;
    qk_time t0 = (qk_time)(o->t0_s * 1e9), t1 = (qk_time)(o->t1_s * 1e9);
    qk_simq_cfg c = {.duration_ns = t1, .cc = cc, .window_bytes = 32u << 20};
    c.pacing_gain_pct = o->pacing_gain_pct;
    if (o->ack_frequency >= 0) {
        c.ackfreq_set = true;
        c.ack_frequency = o->ack_frequency;
    }
    int err = 0;
    flow_probe fp[2];
    memset(fp, 0, sizeof fp);
    fp[0].q = qk_simq_new(sim, a, b, 4433, &c, &err);
    c.start_ns = (qk_time)(offset_s * 1e9);
    fp[1].q = qk_simq_new(sim, a, b, 4434, &c, &err);
    if (!fp[0].q || !fp[1].q) {
        fprintf(stderr, "qk_simq_new: %s\n", qk_strerror(err));
        return 1;
    }
    printf("| t s | loss ms | lost A | lost B | resp A | resp B | cwnd A kB | cwnd B kB | "
           "W_max A / B kB | K A / B s | fast conv. | undos |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    ev_acc ev = {0};
    flow_probe w0[2];
    bool have_w0 = false;
    uint64_t n_ev = 0, n_both = 0, n_only[4] = {0, 0, 0, 0}, n_resp_only[2] = {0, 0};
    uint64_t rd0[2] = {0, 0};
    for (qk_time t = MS; t <= t1; t += MS) {
        flow_probe prev[2] = {fp[0], fp[1]};
        qk_sim_run(sim, t);
        probe(&fp[0], t);
        probe(&fp[1], t);
        if (!have_w0 && t >= t0) {
            memcpy(w0, fp, sizeof w0);
            rd0[0] = qk_simq_result_get(fp[0].q)->read_bytes;
            rd0[1] = qk_simq_result_get(fp[1].q)->read_bytes;
            have_w0 = true;
        }
        bool loss = fp[0].lost != prev[0].lost || fp[1].lost != prev[1].lost;
        if (loss && !ev.open) {
            ev.open = true;
            ev.start = t;
            memcpy(ev.before, prev, sizeof ev.before);
        }
        if (loss) ev.last_loss = t;
        /* An event ends after 100 ms (2 RTT) without a loss. */
        if (ev.open && !loss && t - ev.last_loss >= 100 * MS) {
            ev.open = false;
            if (ev.start >= t0) ev_close(&ev, fp, &n_ev, &n_both, n_only, n_resp_only);
        }
    }
    double secs = (double)(t1 - t0) / 1e9;
    printf("\n%s, offset %g s, jitter %g ms, seed %llu, window %g-%g s:\n",
           cc == QK_CONFIG_CC_CUBIC ? "cubic" : "newreno", offset_s, jitter_ms,
           (unsigned long long)seed, o->t0_s, o->t1_s);
    printf("events %llu: both flows lost %llu, only A %llu, only B %llu; only A reduced %llu, "
           "only B reduced %llu\n",
           (unsigned long long)n_ev, (unsigned long long)n_both, (unsigned long long)n_only[0],
           (unsigned long long)n_only[1], (unsigned long long)n_resp_only[0],
           (unsigned long long)n_resp_only[1]);
    printf("alone: the smaller window %llu, the larger %llu\n", (unsigned long long)n_only[2],
           (unsigned long long)n_only[3]);
    uint64_t ne = n_ev < EV_MAX ? n_ev : EV_MAX;
    for (uint64_t i = 1; i < ne; i++) /* insertion sort: a few dozen events */
        for (uint64_t j = i; j > 0 && ev_drops[j - 1] > ev_drops[j]; j--) {
            uint64_t x = ev_drops[j];
            ev_drops[j] = ev_drops[j - 1];
            ev_drops[j - 1] = x;
        }
    if (ne)
        printf("packets lost per event: min %llu, median %llu, max %llu\n",
               (unsigned long long)ev_drops[0], (unsigned long long)ev_drops[ne / 2],
               (unsigned long long)ev_drops[ne - 1]);
    for (int i = 0; i < 2; i++) {
        uint64_t lost = fp[i].lost - w0[i].lost, sent = fp[i].sent - w0[i].sent;
        double gp = (double)(qk_simq_result_get(fp[i].q)->read_bytes - rd0[i]) * 8 / secs;
        printf("flow %c: goodput %.1f Mbit/s, sent %llu lost %llu (loss rate %.3f%%), responses "
               "%llu, undos %llu, spurious %llu, not cwnd-limited %.1f%% of packets (whole run), "
               "Reno-friendly %.0f%% of CA samples\n",
               'A' + i, gp / 1e6, (unsigned long long)sent, (unsigned long long)lost,
               sent ? 100.0 * (double)lost / (double)sent : 0.0,
               (unsigned long long)(fp[i].resp - w0[i].resp),
               (unsigned long long)(fp[i].undos - w0[i].undos),
               (unsigned long long)(fp[i].spurious - w0[i].spurious),
               100.0 *
                   (double)qk_simq_result_get(fp[i].q)->server_stats.pkts_sent_not_cwnd_limited /
                   (double)(qk_simq_result_get(fp[i].q)->server_stats.pkts_sent + 1),
               fp[i].ca_samples ? 100.0 * (double)(fp[i].reno_samples - w0[i].reno_samples) /
                                      (double)(fp[i].ca_samples - w0[i].ca_samples)
                                : 0.0);
    }
    qk_sim_del(sim);
    qk_simq_del(fp[0].q);
    qk_simq_del(fp[1].q);
    return 0;
}

/* ---- --fluid: what the algorithms give in a fluid model ------------------ */

/* Two windows on the same path in 1 ms steps. On every overflow of BDP +
 * queue (at most once per RTT): with drops == 0 both flows are cut
 * (perfectly synchronised losses); otherwise `drops` packets are dropped,
 * each from flow A with probability A's share of the window (drop-tail
 * treating every packet alike, RED-like), and only the flows hit respond.
 * CUBIC per RFC 9438 (C = 0.4, beta = 0.7, fast convergence §4.7,
 * Reno-friendly W_est §4.3, growth at most 1.5x per RTT), NewReno per
 * RFC 9002 (+1 segment per RTT, halve). Goodput differences over [10, 40)
 * and [40, 120) s. No packets, no pacing, no ACK clock: the reference for
 * how fast the algorithms themselves converge. */
typedef struct fl_flow {
    double w, w_max, t0, k, w_est, prior;
} fl_flow;

static double fl_rand(uint64_t *x) /* xorshift64*, uniform in [0, 1) */
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return (double)((*x * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static void fl_cut(fl_flow *x, bool cubic, double t)
{
    const double c = 0.4, beta = 0.7, mss = 1200;
    if (cubic) {
        x->w_max = x->w < x->w_max ? x->w * (1 + beta) / 2 : x->w;
        x->prior = x->w;
    }
    x->w *= cubic ? beta : 0.5;
    x->t0 = t;
    x->w_est = x->w;
    x->k = cubic ? cbrt((x->w_max - x->w) / (c * mss)) : 0;
}

static void fluid(bool cubic, double wa, double wb, int drops, uint64_t *rng, double *d1,
                  double *d2)
{
    const double mss = 1200, cap = 2.0 * BDP_B, dt = 0.001, c = 0.4, beta = 0.7;
    fl_flow f[2] = {{wa, wa, 0, 0, wa, wa}, {wb, wb, 0, 0, wb, wb}};
    double g[2][2] = {{0, 0}, {0, 0}}, last_cut = -1;
    for (double t = 0; t < 120; t += dt) {
        double q = f[0].w + f[1].w - BDP_B;
        double rtt = 0.05 + (q > 0 ? q : 0) / (RATE_BPS / 8.0);
        for (int i = 0; i < 2; i++) {
            fl_flow *x = &f[i];
            if (!cubic) {
                x->w += mss * dt / rtt;
                continue;
            }
            double tt = t - x->t0 - x->k;
            double wc = c * mss * tt * tt * tt + x->w_max;
            double alpha = x->w_est >= x->prior ? 1.0 : 3 * (1 - beta) / (1 + beta);
            x->w_est += alpha * mss * dt / rtt;
            double target = wc > x->w_est ? wc : x->w_est;
            double lim = x->w * (1 + 0.5 * dt / rtt);
            if (target > x->w) x->w = target < lim ? target : lim;
        }
        double tot = f[0].w + f[1].w;
        for (int i = 0; i < 2; i++) {
            double share = f[i].w / tot * (tot > cap ? 1 : tot / cap);
            if (t >= 10 && t < 40) g[0][i] += share * dt;
            if (t >= 40) g[1][i] += share * dt;
        }
        if (tot <= cap || t - last_cut < rtt) continue;
        last_cut = t;
        bool hit[2] = {drops == 0, drops == 0};
        for (int k = 0; k < drops; k++) hit[fl_rand(rng) < f[0].w / tot ? 0 : 1] = true;
        for (int i = 0; i < 2; i++)
            if (hit[i]) fl_cut(&f[i], cubic, t);
    }
    double h1 = g[0][0] > g[0][1] ? g[0][0] : g[0][1], h2 = g[1][0] > g[1][1] ? g[1][0] : g[1][1];
    *d1 = fabs(g[0][0] - g[0][1]) / h1;
    *d2 = fabs(g[1][0] - g[1][1]) / h2;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void run_fluid(void)
{
    printf("| cc | start window B/A | drops per overflow | runs | within 20%% 10-40 s | "
           "within 20%% 40-120 s | median difference 10-40 / 40-120 s |\n");
    printf("|---|---|---|---|---|---|---|\n");
    const double ratios[] = {1.0, 0.5, 1.0 / 3, 0.2};
    const int drops[] = {0, 2, 4, 8};
    enum { RUNS = 40 };
    for (int cubic = 1; cubic >= 0; cubic--)
        for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++)
            for (size_t j = 0; j < sizeof drops / sizeof drops[0]; j++) {
                uint64_t rng = 0x9e3779b97f4a7c15ull;
                int runs = drops[j] ? RUNS : 1, ok1 = 0, ok2 = 0;
                double v1[RUNS], v2[RUNS];
                for (int r = 0; r < runs; r++) {
                    fluid(cubic, 900e3, 900e3 * ratios[i], drops[j], &rng, &v1[r], &v2[r]);
                    ok1 += v1[r] <= 0.2;
                    ok2 += v2[r] <= 0.2;
                }
                qsort(v1, (size_t)runs, sizeof v1[0], cmp_double);
                qsort(v2, (size_t)runs, sizeof v2[0], cmp_double);
                char dr[16];
                snprintf(dr, sizeof dr, "%d", drops[j]);
                printf("| %s | %.2f | %s | %d | %d | %d | %.0f%% / %.0f%% |\n",
                       cubic ? "cubic" : "newreno", ratios[i], drops[j] ? dr : "all (sync)", runs,
                       ok1, ok2, v1[runs / 2] * 100, v2[runs / 2] * 100);
            }
}

int main(int argc, char **argv)
{
    opts o = {.cc_mask = 3,
              .t0_s = 10,
              .t1_s = 40,
              .seeds = 3,
              .trace_offset = -1,
              .ack_frequency = -1,
              .events_offset = -1};
    o.n_offsets = parse_list("0,0.1,0.5,1,2", o.offsets, 16);
    o.n_jitters = parse_list("0,1", o.jitters_ms, 4);
    if (argc == 2 && !strcmp(argv[1], "--fluid")) {
        run_fluid();
        return 0;
    }
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
        else if (!strcmp(k, "--pacing-gain"))
            o.pacing_gain_pct = (uint32_t)atoi(v);
        else if (!strcmp(k, "--trace"))
            o.trace_offset = atof(v);
        else if (!strcmp(k, "--events"))
            o.events_offset = atof(v);
        else {
            fprintf(stderr, "unknown option %s\n", k);
            return 2;
        }
    }
    if (o.events_offset >= 0) {
        qk_cc_kind cc = o.cc_mask == 2 ? QK_CONFIG_CC_NEWRENO : QK_CONFIG_CC_CUBIC;
        double jit = o.n_jitters ? o.jitters_ms[0] : 0;
        return run_events(cc, o.events_offset, jit, (uint64_t)(o.seeds > 0 ? o.seeds : 1), &o);
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
