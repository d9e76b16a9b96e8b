/* SPDX-License-Identifier: MIT */
/* Scenario files: the bench scenarios shortened, determinism, errors, flow registry. */
#include "qk_test.h"
#include "sim/sim_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static qk_sim_scenario *load(const char *path, qk_time dur, const char *out, char *err, size_t cap)
{
    qk_sim_run_opts o = {.out_dir = out, .duration_ns = dur};
    return qk_sim_scenario_load(path, &o, err, cap);
}

static void summary(qk_sim_scenario *sc, const char *name, qk_sim_flow_summary *s)
{
    for (size_t i = 0; i < qk_sim_scenario_flow_count(sc); i++) {
        const char *n;
        assert_int_equal(qk_sim_scenario_flow_summary(sc, i, &n, s), 0);
        if (!strcmp(n, name)) return;
    }
    fail_msg("no flow %s", name);
}

static const qk_sim_link_stats *lstats(qk_sim_scenario *sc, const char *name)
{
    qk_sim *sim = qk_sim_scenario_sim(sc);
    int l = qk_sim_link_find(sim, name);
    assert_true(l >= 0);
    return qk_sim_link_stats_get(sim, l);
}

/* 60 ms x 5 Gbit/s: 4 Gbit/s fits; from 1 s on 6 Gbit/s grows the queue at 1 Gbit/s. */
static void test_p2p_60ms_5g(void **state)
{
    char err[512];
    qk_sim_scenario *sc =
        load("bench/scenarios/p2p-60ms-5g.ini", 1200 * QK_NS_PER_MS, NULL, err, sizeof err);
    assert_non_null(sc);
    assert_int_equal(qk_sim_scenario_run(sc, err, sizeof err), 0);
    const qk_sim_link_stats *f = lstats(sc, "forward");
    /* 0.2 s at (6 - 5) Gbit/s = 25 MB of backlog, within one packet per flow tick */
    assert_true(fabs((double)f->max_queue_bytes - 25e6) < 25e6 * 0.001);
    assert_int_equal(f->dropped_pkts[QK_SIM_DROP_QUEUE], 0);
    qk_sim_flow_summary s;
    summary(sc, "bulk", &s);
    /* before the overload: 30 ms + 1400 B at 5 Gbit/s (2.24 us) */
    assert_true(fabs((double)s.owd_p50_ns - 30002240.0) < 30e6 / 64); /* histogram: 1/64 */
    assert_true(fabs(s.goodput_bps - 4e9) < 4e9 * 0.05);
    qk_sim_scenario_del(sc);
}

/* Bad Wi-Fi: 150 ms suspensions every 500 ms; held packets fill the queue, none lost. */
static void test_bad_wifi(void **state)
{
    char err[512];
    qk_sim_scenario *sc =
        load("bench/scenarios/bad-wifi.ini", 3 * QK_NS_PER_S, NULL, err, sizeof err);
    assert_non_null(sc);
    assert_int_equal(qk_sim_scenario_run(sc, err, sizeof err), 0);
    const qk_sim_link_stats *f = lstats(sc, "forward");
    /* offered load 64k + 1M + 12M bit/s held 150 ms: 13.064e6 * 0.15 / 8 = 244,950 B */
    assert_true(fabs((double)f->max_queue_bytes - 244950) < 2 * 1200 + 160);
    uint64_t drops = 0;
    for (int i = 0; i < QK_SIM_DROP_N; i++) drops += f->dropped_pkts[i];
    assert_int_equal(drops, 0);
    qk_sim_flow_summary s;
    summary(sc, "audio", &s);
    /* worst audio packet waits the whole suspension: >= 150 ms + 10 ms propagation */
    assert_true(s.owd_p99_ns >= 150 * QK_NS_PER_MS);
    assert_true(s.owd_p99_ns < 185 * QK_NS_PER_MS);
    /* 64 kbit/s of 160 B = one packet per 20 ms, sent at 0, 20 ms, ..., 3 s inclusive */
    assert_int_equal(s.sent_pkts, 151);
    assert_true(s.recv_pkts >= 148);
    qk_sim_scenario_del(sc);
}

/* Dumbbell with step marking: no queue while s1 is alone, marks once s2 joins. */
static void test_dumbbell_step(void **state)
{
    char err[512];
    qk_sim_scenario *sc =
        load("bench/scenarios/dumbbell-step.ini", 49 * QK_NS_PER_MS, NULL, err, sizeof err);
    assert_non_null(sc);
    assert_int_equal(qk_sim_scenario_run(sc, err, sizeof err), 0);
    assert_int_equal(lstats(sc, "forward")->marked_pkts, 0);
    assert_true(lstats(sc, "forward")->max_queue_bytes <= 1500);
    qk_sim_scenario_del(sc);

    sc = load("bench/scenarios/dumbbell-step.ini", 60 * QK_NS_PER_MS, NULL, err, sizeof err);
    assert_non_null(sc);
    assert_int_equal(qk_sim_scenario_run(sc, err, sizeof err), 0);
    const qk_sim_link_stats *f = lstats(sc, "forward");
    assert_true(f->marked_pkts > 1000);
    /* (6 + 6) - 10 Gbit/s excess fills 500 kB in 2 ms: then drop-tail drops the excess */
    assert_true(f->max_queue_bytes > 500000 - 1500 && f->max_queue_bytes <= 500000);
    assert_true(f->dropped_pkts[QK_SIM_DROP_QUEUE] > 0);
    qk_sim_flow_summary a, b;
    summary(sc, "s1", &a);
    summary(sc, "s2", &b);
    /* every mark reached a sink as CE */
    unsigned long long ce = 0;
    assert_int_equal(sscanf(a.extra, "ce=%llu", &ce), 1);
    unsigned long long ce2 = 0;
    assert_int_equal(sscanf(b.extra, "ce=%llu", &ce2), 1);
    assert_true(ce + ce2 <= f->marked_pkts && ce + ce2 + 400 >= f->marked_pkts);
    qk_sim_scenario_del(sc);
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *b = malloc(1 << 20);
    *n = fread(b, 1, 1 << 20, f);
    fclose(f);
    return b;
}

static const char *lossy =
    "[sim]\nduration = 2s\nseed = 5\ninterval = 10ms\n\n[link.forward]\nrate = 10mbit\n"
    "delay = 5ms\nloss = 2%\njitter = 1ms\nreorder = 1%\nreorder_delay = 3ms\n\n"
    "[link.return]\ndelay = 5ms\n\n[flow.f]\nfrom = a\nto = b\nrate = 8mbit\nsize = 1000\n";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void run_to(const char *ini, const char *dir, int seed)
{
    char err[512];
    qk_sim_run_opts o = {.out_dir = dir, .has_seed = seed >= 0, .seed = (uint64_t)seed};
    qk_sim_scenario *sc = qk_sim_scenario_load(ini, &o, err, sizeof err);
    assert_non_null(sc);
    assert_int_equal(qk_sim_scenario_run(sc, err, sizeof err), 0);
    qk_sim_scenario_del(sc);
}

static void test_determinism(void **state)
{
    char base[] = "/tmp/qk_sim_det_XXXXXX";
    assert_non_null(mkdtemp(base));
    char ini[256], d1[256], d2[256], d3[256], p1[300], p2[300], p3[300];
    snprintf(ini, sizeof ini, "%s/lossy.ini", base);
    snprintf(d1, sizeof d1, "%s/one", base);
    snprintf(d2, sizeof d2, "%s/two", base);
    snprintf(d3, sizeof d3, "%s/three", base);
    write_file(ini, lossy);
    run_to(ini, d1, -1);
    run_to(ini, d2, -1);
    run_to(ini, d3, 6);
    snprintf(p1, sizeof p1, "%s/link_forward.csv", d1);
    snprintf(p2, sizeof p2, "%s/link_forward.csv", d2);
    snprintf(p3, sizeof p3, "%s/link_forward.csv", d3);
    size_t n1, n2, n3;
    char *a = slurp(p1, &n1), *b = slurp(p2, &n2), *c = slurp(p3, &n3);
    assert_true(n1 > 1000);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1); /* same seed: byte-identical */
    /* other seed: the per-interval drop column (loss positions) differs */
    assert_true(n1 != n3 || memcmp(a, c, n1) != 0);
    free(a);
    free(b);
    free(c);
    snprintf(p1, sizeof p1, "%s/flow_f.csv", d1);
    snprintf(p2, sizeof p2, "%s/flow_f.csv", d2);
    a = slurp(p1, &n1);
    b = slurp(p2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(a, b, n1);
    free(a);
    free(b);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    assert_int_equal(system(cmd), 0);
}

/* Errors name the file, the line, the key and the fix. */
static void expect_error(const char *text, const char *want1, const char *want2)
{
    char path[] = "/tmp/qk_sim_err_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, text);
    char err[512] = "";
    qk_sim_scenario *sc = qk_sim_scenario_load(path, NULL, err, sizeof err);
    unlink(path);
    assert_null(sc);
    if (!strstr(err, want1) || !strstr(err, want2)) fail_msg("error was: %s", err);
    assert_non_null(strstr(err, path));
}

static void test_errors(void **state)
{
    expect_error("[sim]\nduration = 1s\n\n[link.forward]\nrate = 10 parsecs\n",
                 ":5: [link.forward] rate: bad value '10 parsecs'", "e.g. 100mbit");
    expect_error("[link.forward]\ndelay = 1ms\nspeed = 3\n", ":3: [link.forward] speed",
                 "docs/sim.md");
    expect_error("[link.forward]\ndelay = 1ms\n[link.sideways]\nrate = 1\n",
                 ":4:", "unknown section [link.sideways]");
    expect_error("[link.forward]\ndelay = 1ms\n[flow.x]\ntype = tcp\nfrom = a\nto = b\n",
                 ":4: [flow.x] type", "unknown flow type 'tcp'");
    expect_error("[link.forward]\ndelay = 1ms\n[flow.x]\nfrom = a\nto = zz\n", ":5: [flow.x] to",
                 "no host 'zz'");
    expect_error("[link.forward]\ndelay = 1ms\n[flow.x]\nfrom = a\nto = b\nrate = fast\n",
                 ":6: [flow.x] rate", "positive rate");
    expect_error("[link.forward]\naqm = step\n[flow.x]\nfrom = a\nto = b\n", ":2:", "step_k");
    expect_error("[sim]\ntopology = ring\n", ":2: [sim] topology", "p2p or dumbbell");
    expect_error("this is not ini\n", ":1:", "syntax error");
}

/* A custom flow type plugs in through the registry. */
typedef struct pingflow {
    int node;
    uint64_t got;
    qk_addr dst;
} pingflow;

static void pf_recv(void *ctx, qk_sim *sim, const qk_datagram *d, qk_time now)
{
    ((pingflow *)ctx)->got += d->len;
}
static qk_time pf_next(void *ctx)
{
    return ((pingflow *)ctx)->got ? QK_TIME_INFINITE : 0;
}
static void pf_timeout(void *ctx, qk_sim *sim, qk_time now)
{
    pingflow *p = ctx;
    uint8_t b[100] = {0};
    qk_datagram d = {.data = b, .len = sizeof b, .peer = p->dst};
    qk_sim_send(sim, p->node, &d);
    p->got = 1; /* sent: stop asking for timeouts */
}
static const qk_sim_node_ops pf_ops = {pf_recv, pf_next, pf_timeout};

static void pf_summary(void *flow, qk_sim *sim, qk_sim_flow_summary *o)
{
    o->recv_bytes = ((pingflow *)flow)->got - 1;
    snprintf(o->extra, sizeof o->extra, "rtt_done=%llu", (unsigned long long)qk_sim_now(sim));
}
static uint64_t pf_bytes(void *flow)
{
    return ((pingflow *)flow)->got;
}
static const qk_sim_flow_ops pf_flow_ops = {pf_summary, pf_bytes, free};

static int pf_factory(qk_sim *sim, const qk_sim_flow_args *a, void **flow,
                      const qk_sim_flow_ops **ops)
{
    pingflow *p = calloc(1, sizeof *p);
    p->dst = qk_sim_host_addr(sim, a->to_host, 7);
    qk_sim_echo_add(sim, a->to_host, 7);
    p->node = qk_sim_node_add(sim, a->from_host, 5, &pf_ops, p);
    *flow = p;
    *ops = &pf_flow_ops;
    return 0;
}

static void test_registry(void **state)
{
    assert_int_equal(qk_sim_flow_type_register("pingtest", pf_factory), 0);
    assert_int_equal(qk_sim_flow_type_register("pingtest", pf_factory), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_sim_flow_type_register("cbr", pf_factory), QK_ERR_INVALID_ARG);
    char path[] = "/tmp/qk_sim_reg_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    write_file(path, "[sim]\nduration=1s\n[link.forward]\ndelay=10ms\n[link.return]\ndelay=20ms\n"
                     "[flow.p]\ntype = pingtest\nfrom = a\nto = b\n");
    char err[512];
    qk_sim_scenario *sc = qk_sim_scenario_load(path, NULL, err, sizeof err);
    unlink(path);
    assert_non_null(sc);
    assert_int_equal(qk_sim_scenario_run(sc, err, sizeof err), 0);
    qk_sim_flow_summary s;
    summary(sc, "p", &s);
    assert_int_equal(s.recv_bytes, 100); /* the echo came back over the return link */
    qk_sim_scenario_del(sc);
}

/* [sim] stop_rpcs ends the run once the RPC flows of stop_rpc_size have
 * completed that many RPCs (checked every 10 ms); RPCs of another size do
 * not count, and the duration stays the cap. */
static qk_sim_scenario *rpc_run(const char *stop_size, char *err, size_t cap)
{
    char path[] = "/tmp/qk_sim_rpc_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char text[512];
    snprintf(text, sizeof text,
             "[sim]\nduration = 2s\nstop_rpcs = 4\nstop_rpc_size = %s\n"
             "[link.forward]\nrate = 10mbit\ndelay = 5ms\n[link.return]\nrate = 10mbit\n"
             "delay = 5ms\n[flow.r]\ntype = quic\nfrom = a\nto = b\nrpc_size = 100kB\n"
             "protection = off\n",
             stop_size);
    write_file(path, text);
    qk_sim_scenario *sc = qk_sim_scenario_load(path, NULL, err, cap);
    unlink(path);
    assert_non_null(sc);
    assert_int_equal(qk_sim_scenario_run(sc, err, cap), 0);
    return sc;
}

static void test_stop_rpcs(void **state)
{
    (void)state;
    char err[512];
    qk_sim_scenario *sc = rpc_run("100kB", err, sizeof err);
    qk_sim_flow_summary s;
    summary(sc, "r", &s);
    /* 100 kB at 10 Mbit/s is 80 ms: the 4th RPC ends it, 10 ms later at most */
    assert_int_equal(s.rpcs_done, 4);
    assert_int_equal(s.rpc_size_bytes, 100000);
    assert_true(qk_sim_now(qk_sim_scenario_sim(sc)) < 1 * QK_NS_PER_S);
    qk_sim_scenario_del(sc);
    sc = rpc_run("1MB", err, sizeof err); /* no flow of that size: the cap ends it */
    summary(sc, "r", &s);
    assert_true(s.rpcs_done > 4);
    assert_int_equal(qk_sim_now(qk_sim_scenario_sim(sc)), 2 * QK_NS_PER_S);
    qk_sim_scenario_del(sc);
    expect_error("[sim]\nstop_rpcs = 0\n", "stop_rpcs", "positive count");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_p2p_60ms_5g),   cmocka_unit_test(test_bad_wifi),
        cmocka_unit_test(test_dumbbell_step), cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_errors),        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_stop_rpcs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
