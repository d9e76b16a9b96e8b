/* SPDX-License-Identifier: MIT */
/*
 * bench_cc: one simulator run of the congestion-control matrix
 * (bench/cc.sh, docs/experiments/congestion.md); prints one CSV row.
 *
 *   bench_cc one CC RATE_MBIT RTT_MS LOSS_PCT BUF_BDP DUR_S SEED [REORDER_MS REORDER_PCT]
 *     one download over a symmetric p2p path (drop-tail queues of BUF_BDP x
 *     BDP, Bernoulli loss on the data direction, optional reordering);
 *     row: cc,rate_mbit,rtt_ms,loss_pct,buf_bdp,goodput_mbit,util_pct,
 *          qd_p50_ms,qd_p95_ms,retx_pct,spurious_pct,ok
 *     goodput over the whole run; queueing delay of the data link sampled
 *     every 5 ms from 2 s on (after Startup / slow start).
 *
 *   bench_cc two CC1 CC2 RATE_MBIT RTT1_MS RTT2_MS BUF_BDP DUR_S SEED
 *     two uploads through one bottleneck (dumbbell: each sender has its own
 *     access link, so its own RTT; the BDP is the one of RTT1), starting
 *     together; row: cc1,cc2,rate_mbit,rtt1_ms,rtt2_ms,buf_bdp,
 *          goodput1_mbit,goodput2_mbit,share1_pct,util_pct,ok
 *     goodput over the second half of the run.
 *
 *   bench_cc trace BUF_BDP DUR_S SEED [CC1 CC2 [LOSS [RATE_MBIT RTT_MS]]]
 *     the "two CC1 CC2 RATE_MBIT RTT_MS RTT_MS BUF_BDP ... LOSS" run (by
 *     default "two bbr cubic 100 50 50 BUF_BDP"), one row per BBR round
 *     (packet-timed, draft-ietf-ccwg-bbr §5.5.1) of flow 1: the BBR state
 *     and model and what the CUBIC flow saw in that round; row:
 *     t_s,mode,round,max_bw_mbit,bw_mbit,bw_shortterm_mbit,
 *     inflight_longterm_pkts,inflight_shortterm_pkts,cwnd_pkts,inflight_pkts,
 *     pacing_mbit,bbr_sent,bbr_lost,cubic_cwnd_pkts,cubic_cuts,cubic_sent,
 *     cubic_lost,queue_pkts,mss (-1 = unset/infinite; mode 0 Startup, 1 Drain,
 *     2 DOWN, 3 CRUISE, 4 REFILL, 5 UP, 6 ProbeRTT; packets = BBR's max
 *     datagram size).
 *
 *   bench_cc series CC RATE_MBIT RTT_MS LOSS_PCT BUF_BDP DUR_S SEED STEP_S
 *     the "one" download (no reordering), a row per STEP_S: cc,rate_mbit,
 *     rtt_ms,loss_pct,t_s,goodput_mbit (read in the interval),loss_pct_sent
 *     (packets declared lost / sent in the interval),bbr_mode,max_bw_mbit,
 *     bw_shortterm_mbit,inflight_longterm_pkts,cwnd_pkts,pacing_mbit (at the
 *     interval's end; -1 = unset / not BBR).
 *
 *   bench_cc two ... SEED [LOSS [START2_S [FROM_S]]]
 *     the same with LOSS on the bottleneck's data direction ("0": none),
 *     flow 2 starting START2_S late, goodput over FROM_S..DUR_S instead of
 *     the second half.
 *
 *   bench_cc drop CC RATE1_MBIT RATE2_MBIT RTT_MS BUF_BDP DROP_S DUR_S SEED
 *     the "one" download (clean; buffer of BUF_BDP x the RATE1 BDP) whose
 *     bottleneck falls from RATE1 to RATE2 at DROP_S; row: cc,rate1_mbit,
 *     rate2_mbit,rtt_ms,buf_bdp,drop_s,settle_s (from the drop until the
 *     queue, sampled every 5 ms, is back under one base RTT; -1: never),qd_p95_after_ms (from
 * DROP_S + 2 s on),goodput2_mbit (from DROP_S + 2 s on),ok.
 *
 * CC: reno, cubic, bbr or bbr-lt; "bbr-lt@50" bounds the pacing rate at
 * 50 Mbit/s (qk_config.cc_max_rate_bps, `quack tunnel --bandwidth`).
 * LOSS: a Bernoulli percentage, or "geM" for Gilbert-Elliott bursts of M %
 * on average (bad state: half the packets lost, 10 packets long on
 * average), or "geM:PBG:H" with P(bad -> good) PBG and loss H in the bad
 * state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quack/sim.h>

#include "sim/flow_quic.h"

#define MS QK_NS_PER_MS
#define S  QK_NS_PER_S

static uint64_t cap_bps[2]; /* "CC@MBIT" of flow 1 and 2 (0: none) */

static void tune_cap(void *ctx, qk_config *cfg, bool server)
{
    (void)server;
    cfg->cc_max_rate_bps = *(const uint64_t *)ctx;
}

static int parse_cc_cap(const char *s, qk_cc_kind *out, uint64_t *cap)
{
    const char *at = strchr(s, '@');
    *cap = at ? (uint64_t)(atof(at + 1) * 1e6) : 0;
    char name[32];
    snprintf(name, sizeof name, "%.*s", at ? (int)(at - s) : (int)strlen(s), s);
    s = name;
    if (!strcmp(s, "reno") || !strcmp(s, "newreno"))
        *out = QK_CONFIG_CC_NEWRENO;
    else if (!strcmp(s, "cubic"))
        *out = QK_CONFIG_CC_CUBIC;
    else if (!strcmp(s, "bbr"))
        *out = QK_CONFIG_CC_BBR;
    else if (!strcmp(s, "bbr-lt"))
        *out = QK_CONFIG_CC_BBR_LT;
    else
        return -1;
    return 0;
}

static int parse_cc(const char *s, qk_cc_kind *out)
{
    return parse_cc_cap(s, out, &cap_bps[0]);
}

/* LOSS (see the top): Bernoulli percentage or Gilbert-Elliott bursts. */
static void parse_loss(const char *s, qk_sim_link_cfg *d)
{
    if (strncmp(s, "ge", 2)) {
        double pct = atof(s);
        if (pct > 0) {
            d->loss = QK_SIM_LOSS_BERNOULLI;
            d->loss_p = pct / 100;
        }
        return;
    }
    double mean = atof(s + 2) / 100, pbg = 0.1, h = 0.5;
    const char *c = strchr(s, ':');
    if (c) {
        pbg = atof(c + 1);
        c = strchr(c + 1, ':');
        if (c) h = atof(c + 1);
    }
    double pi_bad = mean / h; /* stationary share of the bad state */
    d->loss = QK_SIM_LOSS_GE;
    d->ge_p_bg = pbg;
    d->ge_p_gb = pi_bad * pbg / (1 - pi_bad);
    d->ge_loss_bad = h;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static qk_simq *flow(qk_sim *sim, int c, int s, uint16_t port, qk_cc_kind cc, bool upload,
                     qk_time dur, uint64_t win)
{
    qk_simq_cfg cfg = {.duration_ns = dur, .cc = cc, .upload = upload, .window_bytes = win};
    uint64_t *cap = &cap_bps[port == 4433 ? 0 : 1];
    if (*cap) {
        cfg.tune = tune_cap;
        cfg.ctx = cap;
    }
    int err = 0;
    qk_simq *q = qk_simq_new(sim, c, s, port, &cfg, &err);
    if (!q) fprintf(stderr, "bench_cc: qk_simq_new: %d\n", err);
    return q;
}

/* Let the transfer drain (its FIN was written at the end of the run):
 * "ok" = completed, every byte matched and the hashes of what was written
 * and read are equal; "slow" = no byte differed but the buffered data did
 * not drain within `until` (a starved loss-based flow); "MISMATCH". */
static const char *finish(qk_sim *sim, qk_simq *q, qk_time until)
{
    while (qk_sim_now(sim) < until && !qk_simq_result_get(q)->done)
        qk_sim_run(sim, qk_sim_now(sim) + 100 * MS);
    const qk_simq_result *r = qk_simq_result_get(q);
    if (r->mismatch || (r->done && r->hash_written != r->hash_read)) return "MISMATCH";
    return r->done ? "ok" : "slow";
}

/* The "one" path: a -> b forward (ACKs), b -> a return (data, with the loss
 * and reordering), drop-tail queues of buf_bdp x BDP (at least 15 kB). */
typedef struct one_path {
    qk_sim *sim;
    int ha, hb, ret;
    uint64_t rate_bps, bdp_bytes, limit_bytes;
} one_path;

static qk_sim_rate_step one_path_step; /* a rate change of the data link (drop) */

static void one_path_init(one_path *p, double rate_mbit, double rtt_ms, const char *loss,
                          double buf_bdp, uint64_t seed, double reo_ms, double reo_pct)
{
    p->rate_bps = (uint64_t)(rate_mbit * 1e6);
    p->bdp_bytes = (uint64_t)(rate_mbit * 1e6 / 8 * rtt_ms / 1e3);
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.rate_bps = p->rate_bps;
    l.delay_ns = (qk_time)(rtt_ms / 2 * MS);
    l.limit_bytes = (uint64_t)(buf_bdp * (double)p->bdp_bytes);
    if (l.limit_bytes < 15000) l.limit_bytes = 15000;
    p->limit_bytes = l.limit_bytes;
    qk_sim_link_cfg d = l;
    parse_loss(loss, &d);
    if (one_path_step.at_ns) {
        d.rate_schedule[0] = one_path_step;
        d.n_rate_schedule = 1;
    }
    d.reorder_p = reo_pct / 100;
    d.reorder_delay_ns = (qk_time)(reo_ms * MS);
    p->sim = qk_sim_new(seed);
    p->ha = qk_sim_host_add(p->sim, "a", 0x0a000001);
    p->hb = qk_sim_host_add(p->sim, "b", 0x0a000002);
    int fwd = qk_sim_link_add(p->sim, "forward", p->ha, p->hb, &l);
    p->ret = qk_sim_link_add(p->sim, "return", p->hb, p->ha, &d);
    qk_sim_route_add(p->sim, p->ha, -1, fwd);
    qk_sim_route_add(p->sim, p->hb, -1, p->ret);
}

/* The download on a one_path: flow-control windows of 2 x (BDP + buffer), at
 * least 1 MiB, so the controller alone limits it. */
static qk_simq *one_path_flow(const one_path *p, qk_cc_kind cc, qk_time dur)
{
    uint64_t win = 2 * (p->bdp_bytes + p->limit_bytes);
    return flow(p->sim, p->ha, p->hb, 4433, cc, false, dur, win < (1u << 20) ? 1u << 20 : win);
}

static int run_one(char **a, int n)
{
    if (n < 7) return 2;
    qk_cc_kind cc;
    if (parse_cc(a[0], &cc)) return 2;
    double rate_mbit = atof(a[1]), rtt_ms = atof(a[2]);
    double buf_bdp = atof(a[4]), dur_s = atof(a[5]);
    uint64_t seed = strtoull(a[6], NULL, 10);
    double reo_ms = n >= 9 ? atof(a[7]) : 0, reo_pct = n >= 9 ? atof(a[8]) : 0;
    one_path p;
    one_path_init(&p, rate_mbit, rtt_ms, a[3], buf_bdp, seed, reo_ms, reo_pct);
    qk_sim *sim = p.sim;
    int ret = p.ret;
    uint64_t rate = p.rate_bps;
    qk_time dur = (qk_time)(dur_s * S);
    qk_simq *q = one_path_flow(&p, cc, dur);
    if (!q) return 1;
    size_t cap = (size_t)(dur / (5 * MS)) + 2, nq = 0;
    double *qd = calloc(cap, sizeof *qd);
    for (qk_time t = 2 * S; t < dur && nq < cap; t += 5 * MS) {
        qk_sim_run(sim, t);
        qd[nq++] = (double)qk_sim_link_stats_get(sim, ret)->queue_bytes * 8 / (double)rate * 1e3;
    }
    qk_sim_run(sim, dur);
    const qk_simq_result *r = qk_simq_result_get(q);
    double goodput = (double)r->read_bytes * 8 / dur_s / 1e6;
    double util =
        (double)qk_sim_link_stats_get(sim, ret)->delivered_bytes * 8 / dur_s / (double)rate;
    uint64_t sent = r->server_stats.pkts_sent, lost = r->server_stats.pkts_lost;
    uint64_t spur = r->server_stats.pkts_spurious;
    qsort(qd, nq, sizeof *qd, cmp_double);
    const char *ok = finish(sim, q, dur + 60 * S);
    printf("%s,%g,%g,%s,%g,%.2f,%.1f,%.1f,%.1f,%.3f,%.3f,%s\n", a[0], rate_mbit, rtt_ms, a[3],
           buf_bdp, goodput, util * 100, nq ? qd[nq / 2] : 0, nq ? qd[nq * 95 / 100] : 0,
           sent ? 100.0 * (double)lost / (double)sent : 0,
           sent ? 100.0 * (double)spur / (double)sent : 0, ok);
    free(qd);
    qk_sim_del(sim);
    qk_simq_del(q);
    return 0;
}

static double trace_v(uint64_t v, double unit)
{
    return v == UINT64_MAX ? -1 : (double)v / unit;
}

/* bench_cc series: the "one" download (no reordering), one row per STEP_S
 * of simulated time: what the receiver read in that interval and the
 * sender's controller at its end. */
static int run_series(char **a, int n)
{
    if (n < 8) return 2;
    qk_cc_kind cc;
    if (parse_cc(a[0], &cc)) return 2;
    double dur_s = atof(a[5]), step_s = atof(a[7]);
    if (step_s <= 0 || dur_s < step_s) return 2;
    one_path p;
    one_path_init(&p, atof(a[1]), atof(a[2]), a[3], atof(a[4]), strtoull(a[6], NULL, 10), 0, 0);
    qk_time dur = (qk_time)(dur_s * S), step = (qk_time)(step_s * S);
    qk_simq *q = one_path_flow(&p, cc, dur);
    if (!q) return 1;
    uint64_t read0 = 0, sent0 = 0, lost0 = 0;
    const double mbit = 1e6 / 8;
    for (qk_time t = step; t <= dur; t += step) {
        qk_sim_run(p.sim, t);
        qk_simq_cc_probe c;
        memset(&c, 0, sizeof c);
        qk_simq_cc_probe_get(q, true, &c);
        uint64_t rd = qk_simq_result_get(q)->read_bytes;
        double pkt = c.max_datagram_bytes ? (double)c.max_datagram_bytes : 1;
        printf("%s,%g,%g,%s,%.1f,%.2f,%.3f,%d,%.2f,%.2f,%.0f,%.0f,%.2f\n", a[0], atof(a[1]),
               atof(a[2]), a[3], (double)t / S, (double)(rd - read0) * 8 / step_s / 1e6,
               c.packets_sent > sent0
                   ? 100.0 * (double)(c.packets_lost - lost0) / (double)(c.packets_sent - sent0)
                   : 0,
               c.bbr ? c.bbr_mode : -1, c.bbr ? (double)c.bbr_max_bw_bytes_per_s / mbit : -1,
               c.bbr ? trace_v(c.bbr_bw_shortterm_bytes_per_s, mbit) : -1,
               c.bbr ? trace_v(c.bbr_inflight_longterm_bytes, pkt) : -1, (double)c.cwnd_bytes / pkt,
               c.bbr ? (double)c.bbr_pacing_rate_bytes_per_s / mbit : -1);
        read0 = rd;
        sent0 = c.packets_sent;
        lost0 = c.packets_lost;
    }
    qk_sim_del(p.sim);
    qk_simq_del(q);
    return 0;
}

/* Dumbbell: senders s1, s2 -> left -> (bottleneck) -> right -> r; the
 * access links carry each sender's extra delay, the bottleneck 1 ms. */
typedef struct trace_ctx {
    qk_sim *sim;
    qk_simq *q1, *q2;
    int link;
    uint64_t round, sent1, lost1, sent2, lost2, cuts2;
} trace_ctx;

/* One row when flow 1's BBR round counter moved (called every 1 ms). */
static void trace_step(trace_ctx *t)
{
    qk_simq_cc_probe b, c;
    if (!qk_simq_cc_probe_get(t->q1, false, &b) || !qk_simq_cc_probe_get(t->q2, false, &c)) return;
    if (!b.bbr || b.bbr_round_count == t->round) return;
    t->round = b.bbr_round_count;
    const double pkt = (double)b.max_datagram_bytes, mbit = 1e6 / 8;
    printf("%.3f,%d,%llu,%.2f,%.2f,%.2f,%.0f,%.0f,%.0f,%.0f,%.2f,", (double)qk_sim_now(t->sim) / S,
           b.bbr_mode, (unsigned long long)b.bbr_round_count,
           (double)b.bbr_max_bw_bytes_per_s / mbit, (double)b.bbr_bw_bytes_per_s / mbit,
           trace_v(b.bbr_bw_shortterm_bytes_per_s, mbit),
           trace_v(b.bbr_inflight_longterm_bytes, pkt),
           trace_v(b.bbr_inflight_shortterm_bytes, pkt), (double)b.cwnd_bytes / pkt,
           (double)b.bbr_inflight_bytes / pkt, (double)b.bbr_pacing_rate_bytes_per_s / mbit);
    printf("%llu,%llu,%.0f,%llu,%llu,%llu,%.0f,%llu\n",
           (unsigned long long)(b.packets_sent - t->sent1),
           (unsigned long long)(b.packets_lost - t->lost1), (double)c.cwnd_bytes / pkt,
           (unsigned long long)(c.congestion_events - t->cuts2),
           (unsigned long long)(c.packets_sent - t->sent2),
           (unsigned long long)(c.packets_lost - t->lost2),
           (double)qk_sim_link_stats_get(t->sim, t->link)->queue_bytes / pkt,
           (unsigned long long)b.max_datagram_bytes);
    t->sent1 = b.packets_sent;
    t->lost1 = b.packets_lost;
    t->sent2 = c.packets_sent;
    t->lost2 = c.packets_lost;
    t->cuts2 = c.congestion_events;
}

static int run_two_traced(char **a, int n, bool trace)
{
    if (n < 8) return 2;
    qk_cc_kind cc1, cc2;
    if (parse_cc_cap(a[0], &cc1, &cap_bps[0]) || parse_cc_cap(a[1], &cc2, &cap_bps[1])) return 2;
    double rate_mbit = atof(a[2]), rtt1 = atof(a[3]), rtt2 = atof(a[4]);
    double buf_bdp = atof(a[5]), dur_s = atof(a[6]);
    uint64_t seed = strtoull(a[7], NULL, 10);
    qk_time dur = (qk_time)(dur_s * S);
    qk_time from = n >= 11 ? (qk_time)(atof(a[10]) * S) : dur / 2;
    if (from >= dur) return 2;
    uint64_t rate = (uint64_t)(rate_mbit * 1e6);
    uint64_t bdp = (uint64_t)(rate_mbit * 1e6 / 8 * rtt1 / 1e3);
    qk_sim *sim = qk_sim_new(seed);
    int left = qk_sim_host_add(sim, "left", 0x0a000001);
    int right = qk_sim_host_add(sim, "right", 0x0a000002);
    int r = qk_sim_host_add(sim, "r", 0x0a000201);
    qk_sim_link_cfg bn, ideal, edge;
    memset(&bn, 0, sizeof bn);
    memset(&ideal, 0, sizeof ideal);
    bn.rate_bps = rate;
    bn.delay_ns = MS / 2;
    bn.limit_bytes = (uint64_t)(buf_bdp * (double)bdp);
    qk_sim_link_cfg back = bn;
    back.limit_bytes = 0;
    if (n >= 9) parse_loss(a[8], &bn);
    edge = ideal;
    edge.delay_ns = MS / 2;
    int f = qk_sim_link_add(sim, "forward", left, right, &bn);
    int rt = qk_sim_link_add(sim, "return", right, left, &back);
    qk_sim_route_add(sim, left, -1, f);
    qk_sim_route_add(sim, right, -1, rt);
    int eu = qk_sim_link_add(sim, "edge.up", r, right, &edge);
    int ed = qk_sim_link_add(sim, "edge.down", right, r, &edge);
    qk_sim_route_add(sim, r, -1, eu);
    qk_sim_route_add(sim, right, r, ed);
    double rtts[2] = {rtt1, rtt2};
    int hs[2];
    for (int i = 0; i < 2; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", i + 1);
        hs[i] = qk_sim_host_add(sim, name, 0x0a000101u + (uint32_t)i);
        qk_sim_link_cfg acc = ideal;
        acc.delay_ns = (qk_time)((rtts[i] / 2 - 1) * MS); /* + 2 x 0.5 ms */
        snprintf(name, sizeof name, "acc%d.up", i + 1);
        int up = qk_sim_link_add(sim, name, hs[i], left, &acc);
        snprintf(name, sizeof name, "acc%d.down", i + 1);
        int down = qk_sim_link_add(sim, name, left, hs[i], &acc);
        qk_sim_route_add(sim, hs[i], -1, up);
        qk_sim_route_add(sim, left, hs[i], down);
    }
    uint64_t win = 4 * (bdp + bn.limit_bytes) + (4u << 20);
    qk_simq *q1 = flow(sim, hs[0], r, 4433, cc1, true, dur, win);
    qk_simq_cfg c2 = {.duration_ns = dur, .cc = cc2, .upload = true, .window_bytes = win};
    c2.start_ns = n >= 10 ? (qk_time)(atof(a[9]) * S) : 0;
    if (cap_bps[1]) {
        c2.tune = tune_cap;
        c2.ctx = &cap_bps[1];
    }
    int err = 0;
    qk_simq *q2 = qk_simq_new(sim, hs[1], r, 4434, &c2, &err);
    if (!q1 || !q2) return 1;
    if (trace) { /* per-round rows instead of the summary row */
        trace_ctx t = {.sim = sim, .q1 = q1, .q2 = q2, .link = f};
        printf("# bdp_bytes=%llu buffer_bytes=%llu\n", (unsigned long long)bdp,
               (unsigned long long)bn.limit_bytes);
        for (qk_time now = MS; now <= dur; now += MS) {
            qk_sim_run(sim, now);
            trace_step(&t);
        }
        qk_sim_del(sim);
        qk_simq_del(q1);
        qk_simq_del(q2);
        return 0;
    }
    qk_sim_run(sim, from);
    uint64_t r1 = qk_simq_result_get(q1)->read_bytes, r2 = qk_simq_result_get(q2)->read_bytes;
    uint64_t l0 = qk_sim_link_stats_get(sim, f)->delivered_bytes;
    qk_sim_run(sim, dur);
    double half = (double)(dur - from) / S;
    double g1 = (double)(qk_simq_result_get(q1)->read_bytes - r1) * 8 / half / 1e6;
    double g2 = (double)(qk_simq_result_get(q2)->read_bytes - r2) * 8 / half / 1e6;
    double util =
        (double)(qk_sim_link_stats_get(sim, f)->delivered_bytes - l0) * 8 / half / (double)rate;
    const char *ok1 = finish(sim, q1, dur + 60 * S), *ok2 = finish(sim, q2, dur + 60 * S);
    const char *ok = strcmp(ok1, "ok") ? ok1 : ok2;
    printf("%s,%s,%g,%g,%g,%g,%.2f,%.2f,%.1f,%.1f,%s\n", a[0], a[1], rate_mbit, rtt1, rtt2, buf_bdp,
           g1, g2, g1 + g2 > 0 ? 100 * g1 / (g1 + g2) : 0, util * 100, ok);
    qk_sim_del(sim);
    qk_simq_del(q1);
    qk_simq_del(q2);
    return 0;
}

static int run_two(char **a, int n)
{
    return run_two_traced(a, n, false);
}

/* bench_cc trace BUF_BDP DUR_S SEED = two bbr cubic 100 50 50 ..., traced */
static int run_trace(char **a, int n)
{
    if (n < 3) return 2;
    char *args[] = {n >= 5 ? a[3] : "bbr",
                    n >= 5 ? a[4] : "cubic",
                    n >= 8 ? a[6] : "100",
                    n >= 8 ? a[7] : "50",
                    n >= 8 ? a[7] : "50",
                    a[0],
                    a[1],
                    a[2],
                    n >= 6 ? a[5] : "0"};
    return run_two_traced(args, 9, true);
}

/* bench_cc drop: the queue after the bottleneck's rate falls. */
static int run_drop(char **a, int n)
{
    if (n < 8) return 2;
    qk_cc_kind cc;
    if (parse_cc(a[0], &cc)) return 2;
    double r1 = atof(a[1]), r2 = atof(a[2]), rtt_ms = atof(a[3]), drop_s = atof(a[5]);
    double dur_s = atof(a[6]);
    qk_time drop = (qk_time)(drop_s * S), dur = (qk_time)(dur_s * S);
    if (drop_s <= 0 || dur_s < drop_s + 3) return 2;
    one_path_step = (qk_sim_rate_step){.at_ns = drop, .rate_bps = (uint64_t)(r2 * 1e6)};
    one_path p;
    one_path_init(&p, r1, rtt_ms, "0", atof(a[4]), strtoull(a[7], NULL, 10), 0, 0);
    qk_simq *q = one_path_flow(&p, cc, dur);
    if (!q) return 1;
    size_t cap = (size_t)(dur / (5 * MS)) + 2, nq = 0;
    double *qd = calloc(cap, sizeof *qd), settle = 0;
    bool under = false;
    uint64_t read2 = 0;
    for (qk_time t = drop; t < dur && nq < cap; t += 5 * MS) {
        qk_sim_run(p.sim, t);
        double ms = (double)qk_sim_link_stats_get(p.sim, p.ret)->queue_bytes * 8 / (r2 * 1e6) * 1e3;
        if (ms > rtt_ms && !under) settle = (double)(t - drop) / S + 0.005;
        if (ms <= rtt_ms && t > drop + 100 * MS) under = true;
        if (getenv("DROPDBG") && (t - drop) % (250 * MS) == 0) {
            qk_simq_cc_probe c;
            qk_simq_cc_probe_get(q, true, &c);
            fprintf(stderr,
                    "t %.2f q %.0f ms mode %d maxbw %.1f bw %.1f bwst %.1f ilt %.0f ist %.0f cwnd "
                    "%.0f infl %.0f pace %.1f\n",
                    (double)t / S, ms, c.bbr_mode, c.bbr_max_bw_bytes_per_s * 8 / 1e6,
                    c.bbr_bw_bytes_per_s * 8 / 1e6,
                    trace_v(c.bbr_bw_shortterm_bytes_per_s, 1e6 / 8),
                    trace_v(c.bbr_inflight_longterm_bytes, 1200),
                    trace_v(c.bbr_inflight_shortterm_bytes, 1200), c.cwnd_bytes / 1200.0,
                    c.bbr_inflight_bytes / 1200.0, c.bbr_pacing_rate_bytes_per_s * 8 / 1e6);
        }
        if (t < drop + 2 * S) continue;
        if (!read2) read2 = qk_simq_result_get(q)->read_bytes;
        qd[nq++] = ms;
    }
    qk_sim_run(p.sim, dur);
    double g2 =
        (double)(qk_simq_result_get(q)->read_bytes - read2) * 8 / (dur_s - drop_s - 2) / 1e6;
    if (settle > dur_s - drop_s - 0.01) settle = -1;
    qsort(qd, nq, sizeof *qd, cmp_double);
    const char *ok = finish(p.sim, q, dur + 60 * S);
    printf("%s,%g,%g,%g,%s,%g,%.3f,%.1f,%.2f,%s\n", a[0], r1, r2, rtt_ms, a[4], drop_s, settle,
           nq ? qd[nq * 95 / 100] : 0, g2, ok);
    free(qd);
    qk_sim_del(p.sim);
    qk_simq_del(q);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 2;
    if (argc >= 2 && !strcmp(argv[1], "one")) rc = run_one(argv + 2, argc - 2);
    if (argc >= 2 && !strcmp(argv[1], "two")) rc = run_two(argv + 2, argc - 2);
    if (argc >= 2 && !strcmp(argv[1], "trace")) rc = run_trace(argv + 2, argc - 2);
    if (argc >= 2 && !strcmp(argv[1], "series")) rc = run_series(argv + 2, argc - 2);
    if (argc >= 2 && !strcmp(argv[1], "drop")) rc = run_drop(argv + 2, argc - 2);
    if (rc == 2)
        fprintf(stderr,
                "usage: bench_cc one CC RATE_MBIT RTT_MS LOSS_PCT BUF_BDP DUR_S SEED "
                "[REORDER_MS REORDER_PCT]\n"
                "       bench_cc two CC1 CC2 RATE_MBIT RTT1_MS RTT2_MS BUF_BDP DUR_S "
                "SEED\n"
                " [LOSS [START2_S [FROM_S]]]\n"
                "       bench_cc trace BUF_BDP DUR_S SEED [CC1 CC2 [LOSS [RATE_MBIT RTT_MS]]]\n"
                "       bench_cc drop CC RATE1_MBIT RATE2_MBIT RTT_MS BUF_BDP DROP_S DUR_S "
                "SEED\n"
                "       bench_cc series CC RATE_MBIT RTT_MS LOSS_PCT BUF_BDP DUR_S SEED "
                "STEP_S\n");
    return rc;
}
