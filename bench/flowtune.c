/* SPDX-License-Identifier: MIT */
/*
 * Flow-control window auto-tuning experiments (docs/experiments/flow-control.md):
 * one QUIC download through the simulator over a point-to-point path, with a
 * time series of goodput, receive windows and receive-buffer occupancy.
 *
 * usage: bench_flowtune [--rate 5gbit] [--rtt 60ms] [--queue-bdp 1] [--duration 20s]
 *          [--streams N --size BYTES] [--autotune on|off]
 *          [--rule rtt2|epoch|rtt2-double|epoch-double]
 *          [--window BYTES] [--max-window BYTES] [--conn-window BYTES]
 *          [--max-conn-window BYTES] [--budget BYTES] [--read-rate RATE]
 *          [--udp-payload N] [--null] [--interval 100ms] [--csv FILE] [--seed N]
 * Prints one summary line (key=value); --csv writes
 * time_s,goodput_bps,conn_window,stream_window,buffered,budget_used,cwnd,srtt_ms.
 */
#include "sim/flow_quic.h"

#include <quack/sim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int usage(const char *why)
{
    fprintf(stderr, "bench_flowtune: %s\nsee the comment at the top of bench/flowtune.c\n", why);
    return 2;
}

typedef struct opts {
    uint64_t rate_bps;
    qk_time rtt_ns, duration_ns, interval_ns;
    double queue_bdp;
    const char *csv;
    uint64_t seed;
    qk_simq_cfg q;
} opts;

static int parse(int argc, char **argv, opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n = 0;
        int bad = 0;
        if (!strcmp(a, "--null")) {
            o->q.no_protection = true;
            continue;
        }
        if (!v) return usage("an option lacks its value");
        i++;
        if (!strcmp(a, "--rate"))
            bad = qk_sim_parse_rate(v, &o->rate_bps);
        else if (!strcmp(a, "--rtt"))
            bad = qk_sim_parse_time(v, &o->rtt_ns);
        else if (!strcmp(a, "--duration"))
            bad = qk_sim_parse_time(v, &o->duration_ns);
        else if (!strcmp(a, "--interval"))
            bad = qk_sim_parse_time(v, &o->interval_ns) || !o->interval_ns;
        else if (!strcmp(a, "--queue-bdp"))
            o->queue_bdp = atof(v);
        else if (!strcmp(a, "--csv"))
            o->csv = v;
        else if (!strcmp(a, "--seed"))
            o->seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--streams"))
            bad = qk_sim_parse_bytes(v, &n) || !n || n > 1000, o->q.streams = (uint32_t)n;
        else if (!strcmp(a, "--size"))
            bad = qk_sim_parse_bytes(v, &o->q.size_bytes);
        else if (!strcmp(a, "--autotune"))
            o->q.autotune = !strcmp(v, "on") ? 1 : !strcmp(v, "off") ? -1 : (bad = 1);
        else if (!strcmp(a, "--rule"))
            o->q.autotune_rule = !strcmp(v, "rtt2")           ? 0
                                 : !strcmp(v, "epoch")        ? 1
                                 : !strcmp(v, "rtt2-double")  ? 2
                                 : !strcmp(v, "epoch-double") ? 3
                                                              : (bad = 1);
        else if (!strcmp(a, "--window"))
            bad = qk_sim_parse_bytes(v, &o->q.window_bytes);
        else if (!strcmp(a, "--max-window"))
            bad = qk_sim_parse_bytes(v, &o->q.max_window_bytes);
        else if (!strcmp(a, "--conn-window"))
            bad = qk_sim_parse_bytes(v, &o->q.conn_window_bytes);
        else if (!strcmp(a, "--max-conn-window"))
            bad = qk_sim_parse_bytes(v, &o->q.max_conn_window_bytes);
        else if (!strcmp(a, "--budget"))
            bad = qk_sim_parse_bytes(v, &o->q.budget_bytes);
        else if (!strcmp(a, "--read-rate"))
            bad = qk_sim_parse_rate(v, &o->q.read_rate_bps);
        else if (!strcmp(a, "--udp-payload"))
            bad = qk_sim_parse_bytes(v, &n) || n < 1200 || n > 1472, o->q.udp_payload_bytes = n;
        else
            return usage(a);
        if (bad) return usage(a);
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {.rate_bps = 5000000000ull,
              .rtt_ns = 60 * QK_NS_PER_MS,
              .duration_ns = 20 * QK_NS_PER_S,
              .interval_ns = 100 * QK_NS_PER_MS,
              .queue_bdp = 1.0,
              .seed = 1,
              .q = {.cc = QK_CONFIG_CC_CUBIC, .autotune = 1}};
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    if (o.q.streams > 1 && !o.q.size_bytes) return usage("--streams > 1 needs --size");
    if (!o.q.size_bytes) o.q.duration_ns = o.duration_ns;
    double bdp = (double)o.rate_bps / 8 * (double)o.rtt_ns / 1e9;
    qk_sim_link_cfg fwd = {.rate_bps = o.rate_bps,
                           .delay_ns = o.rtt_ns / 2,
                           .limit_bytes = (uint64_t)(o.queue_bdp * bdp)};
    qk_sim_link_cfg ret = {.rate_bps = o.rate_bps, .delay_ns = o.rtt_ns / 2};
    qk_sim *sim = qk_sim_new(o.seed);
    int a = qk_sim_host_add(sim, "a", 0x0a000001), b = qk_sim_host_add(sim, "b", 0x0a000002);
    /* Download: the server (b) sends over b -> a, the bottleneck with the queue. */
    int la = qk_sim_link_add(sim, "ab", a, b, &ret), lb = qk_sim_link_add(sim, "ba", b, a, &fwd);
    qk_sim_route_add(sim, a, -1, la);
    qk_sim_route_add(sim, b, -1, lb);
    int err = 0;
    qk_simq *q = qk_simq_new(sim, a, b, 4433, &o.q, &err);
    if (!q) {
        fprintf(stderr, "bench_flowtune: cannot create the flow (%s)\n", qk_strerror(err));
        return 1;
    }
    FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
    if (o.csv && !csv) return usage("cannot write the --csv file");
    if (csv)
        fprintf(csv, "time_s,goodput_bps,conn_window,stream_window,buffered,budget_used,cwnd,"
                     "srtt_ms\n");
    double w0 = wall();
    qk_time end = o.q.size_bytes ? 600 * QK_NS_PER_S : o.duration_ns + 2 * QK_NS_PER_S;
    uint64_t prev = 0, sampled_peak_budget = 0;
    qk_time half = o.duration_ns / 2, t_first = 0, t_last = 0;
    uint64_t bytes_half = 0, bytes_at_last = 0;
    const qk_simq_result *r = qk_simq_result_get(q);
    for (qk_time t = o.interval_ns; t <= end; t += o.interval_ns) {
        qk_sim_run(sim, t);
        r = qk_simq_result_get(q);
        const qk_conn_stats *rs = &r->client_stats, *ss = &r->server_stats;
        uint64_t used = qk_simq_budget_used(q, NULL);
        if (used > sampled_peak_budget) sampled_peak_budget = used;
        double gp = (double)(r->read_bytes - prev) * 8e9 / (double)o.interval_ns;
        prev = r->read_bytes;
        if (csv)
            fprintf(csv, "%.3f,%.0f,%llu,%llu,%llu,%llu,%llu,%.2f\n", (double)t / 1e9, gp,
                    (unsigned long long)rs->conn_rx_window_bytes,
                    (unsigned long long)rs->max_stream_rx_window_bytes,
                    (unsigned long long)rs->rx_buffered_bytes, (unsigned long long)used,
                    (unsigned long long)ss->cwnd_bytes, (double)ss->smoothed_rtt_ns / 1e6);
        if (!o.q.size_bytes && t <= half) bytes_half = r->read_bytes, t_first = t;
        if (!o.q.size_bytes && t <= o.duration_ns) bytes_at_last = r->read_bytes, t_last = t;
        if (r->done || r->client_closed || r->server_closed) break;
    }
    double secs = wall() - w0;
    r = qk_simq_result_get(q);
    uint64_t peak_budget = 0;
    qk_simq_budget_used(q, &peak_budget);
    const qk_conn_stats *rs = &r->client_stats, *ss = &r->server_stats;
    qk_time t0 = r->connected_ns;
    qk_time tend = r->done ? r->completion_ns : (t_last ? t_last : qk_sim_now(sim));
    double avg = tend > t0 ? (double)r->read_bytes * 8e9 / (double)(tend - t0) : 0;
    double last = t_last > t_first
                      ? (double)(bytes_at_last - bytes_half) * 8e9 / (double)(t_last - t_first)
                      : avg;
    int close_err = r->client_closed ? r->client_close.reason_err : 0;
    if (r->server_closed && r->server_close.reason_err) close_err = r->server_close.reason_err;
    printf(
        "rate_bps=%llu rtt_ms=%.1f bdp_bytes=%.0f avg_bps=%.0f util=%.3f last_half_bps=%.0f "
        "last_half_util=%.3f read_bytes=%llu peak_buffered=%llu peak_buffered_bdp=%.2f "
        "conn_window=%llu peak_stream_window=%llu peak_stream_credit=%llu "
        "peak_stream_credit_bdp=%.2f "
        "peak_conn_credit=%llu peak_conn_credit_bdp=%.2f budget_peak=%llu budget_sampled_peak=%llu "
        "budget_cap=%llu pkts_sent=%llu lost=%llu close_err=%d mismatch=%d done=%d "
        "wall_s=%.1f\n",
        (unsigned long long)o.rate_bps, (double)o.rtt_ns / 1e6, bdp, avg, avg / (double)o.rate_bps,
        last, last / (double)o.rate_bps, (unsigned long long)r->read_bytes,
        (unsigned long long)rs->peak_rx_buffered_bytes, (double)rs->peak_rx_buffered_bytes / bdp,
        (unsigned long long)rs->conn_rx_window_bytes,
        (unsigned long long)rs->peak_stream_rx_window_bytes,
        (unsigned long long)rs->peak_stream_rx_credit_bytes,
        (double)rs->peak_stream_rx_credit_bytes / bdp, (unsigned long long)rs->peak_rx_credit_bytes,
        (double)rs->peak_rx_credit_bytes / bdp, (unsigned long long)peak_budget,
        (unsigned long long)sampled_peak_budget, (unsigned long long)o.q.budget_bytes,
        (unsigned long long)ss->pkts_sent, (unsigned long long)ss->pkts_lost, close_err,
        r->mismatch, r->done, secs);
    if (csv) fclose(csv);
    qk_sim_del(sim);
    qk_simq_del(q);
    return 0;
}
