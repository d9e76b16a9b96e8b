/* SPDX-License-Identifier: MIT */
/* covers: src/sim/flow_rpc.c */
/* The incast scenario (bench/scenarios/incast.ini), shortened: the
 * RPC mode of the quic flow runs back-to-back RPCs whose completion times it
 * reports, DCTCP's CE marks hold the 1 Gbit/s bottleneck's queue near K = 20
 * packets without a drop, and the same run with CUBIC (Not-ECT) fills the
 * 100-packet buffer and drops. */
#include "qk_test.h"
#include "sim/sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Load incast.ini with every "cc = dctcp" line replaced by `cc`; run it
 * for duration_ns. */
static qk_sim_scenario *load_with_cc(const char *cc, const char *path, qk_time duration_ns)
{
    FILE *in = fopen("bench/scenarios/incast.ini", "r");
    assert_non_null(in);
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    char line[512];
    while (fgets(line, sizeof line, in)) {
        if (!strncmp(line, "cc = dctcp", 10))
            fprintf(out, "cc = %s\n", cc);
        else
            fputs(line, out);
    }
    fclose(in);
    fclose(out);
    char err[512];
    qk_sim_run_opts o = {.duration_ns = duration_ns};
    qk_sim_scenario *sc = qk_sim_scenario_load(path, &o, err, sizeof err);
    if (!sc) fail_msg("%s", err);
    assert_int_equal(qk_sim_scenario_run(sc, err, sizeof err), 0);
    return sc;
}

static double extra(const qk_sim_flow_summary *s, const char *key)
{
    const char *p = strstr(s->extra, key);
    assert_non_null(p);
    return atof(p + strlen(key));
}

typedef struct incast_res {
    double rpcs_1m, rpcs_10k, p99_10k_ms, qd_avg_ms;
    uint64_t drops, marks;
    /* goodput of the window-limited connections: bulk1, rpc1m1, bulk2, rpc1m2 */
    double bulk_bps[2], rpc1m_bps[2];
} incast_res;

static incast_res run_for(const char *cc, qk_time duration_ns)
{
    char path[] = "/tmp/qk-incast-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    qk_sim_scenario *sc = load_with_cc(cc, path, duration_ns);
    incast_res r = {0};
    for (size_t i = 0; i < qk_sim_scenario_flow_count(sc); i++) {
        const char *n;
        qk_sim_flow_summary s;
        assert_int_equal(qk_sim_scenario_flow_summary(sc, i, &n, &s), 0);
        if (!strncmp(n, "rpc1m", 5)) {
            r.rpcs_1m += extra(&s, "rpcs=");
            r.rpc1m_bps[n[5] == '2'] = s.goodput_bps;
        }
        if (!strncmp(n, "bulk", 4)) r.bulk_bps[n[4] == '2'] = s.goodput_bps;
        if (!strncmp(n, "rpc10k", 6)) {
            r.rpcs_10k += extra(&s, "rpcs=");
            double p = extra(&s, "p99_ms=");
            if (p > r.p99_10k_ms) r.p99_10k_ms = p;
        }
    }
    qk_sim *sim = qk_sim_scenario_sim(sc);
    const qk_sim_link_stats *f = qk_sim_link_stats_get(sim, qk_sim_link_find(sim, "forward"));
    r.drops = f->dropped_pkts[QK_SIM_DROP_QUEUE];
    r.marks = f->marked_pkts;
    r.qd_avg_ms = (double)f->qdelay_sum_ns / (double)f->qdelay_samples / 1e6;
    fprintf(stderr,
            "%s: 1 MB RPCs %.0f, 10 KB RPCs %.0f (p99 %.3f ms), bottleneck drops %llu marks "
            "%llu, mean queue delay %.3f ms\n",
            cc, r.rpcs_1m, r.rpcs_10k, r.p99_10k_ms, (unsigned long long)r.drops,
            (unsigned long long)r.marks, r.qd_avg_ms);
    qk_sim_scenario_del(sc);
    unlink(path);
    return r;
}

static incast_res run(const char *cc)
{
    return run_for(cc, 400 * QK_NS_PER_MS);
}

static void test_incast_dctcp_vs_cubic(void **state)
{
    (void)state;
    incast_res d = run("dctcp"), c = run("cubic");
    assert_true(d.rpcs_1m >= 6 && c.rpcs_1m >= 6);
    assert_true(d.rpcs_10k >= 1000 && c.rpcs_10k >= 500);
    assert_true(d.marks > 1000);
    assert_int_equal(d.drops, 0);
    assert_int_equal(c.marks, 0); /* Not-ECT: the step AQM cannot mark CUBIC */
    assert_true(c.drops > 0);
    /* 20 packets of 1.2-1.45 kB at 1 Gbit/s ~ 0.2 ms; the 100-packet buffer ~1 ms */
    assert_true(d.qd_avg_ms < 0.3);
    assert_true(c.qd_avg_ms > 3 * d.qd_avg_ms);
    assert_true(d.p99_10k_ms < c.p99_10k_ms);
}

/* The four window-limited DCTCP connections (two bulk uploads, two 1 MB RPC
 * streams) share what the 10 KB RPCs leave about equally. Without pacing
 * (a 10-packet burst allowance against 3-8 packet windows) their ACK-clocked
 * bursts kept their places in the step marker's sawtooth and the shares
 * split 1.8 : 1 (rpc1m1 171 vs rpc1m2 96 Mbit/s in the first 1.5 s);
 * paced with the L4S quantum (conn_send.c pacer_floor_pkts) all four are
 * within a few percent (docs/experiments/incast.md). */
static void test_incast_dctcp_even_shares(void **state)
{
    (void)state;
    incast_res d = run_for("dctcp", 1500 * QK_NS_PER_MS);
    double v[4] = {d.bulk_bps[0], d.bulk_bps[1], d.rpc1m_bps[0], d.rpc1m_bps[1]};
    double lo = v[0], hi = v[0];
    for (int i = 1; i < 4; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    fprintf(stderr, "dctcp shares (Mbit/s): bulk %.1f %.1f, 1 MB RPCs %.1f %.1f\n", v[0] / 1e6,
            v[1] / 1e6, v[2] / 1e6, v[3] / 1e6);
    assert_true(lo > 50e6);
    assert_true(hi < 1.2 * lo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_incast_dctcp_vs_cubic),
        cmocka_unit_test(test_incast_dctcp_even_shares),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
