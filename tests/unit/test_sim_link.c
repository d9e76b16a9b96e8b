/* SPDX-License-Identifier: MIT */
/* covers: src/sim/link.c src/sim/pool.c src/sim/parse.c */
/* Simulator link model: checked against arithmetic (serialization, queueing, loss). */
#include "qk_test.h"
#include "sim/sim_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MS QK_NS_PER_MS

typedef struct arrivals {
    size_t n, cap;
    uint64_t *seq;
    qk_time *sent, *at;
    uint8_t *ecn;
} arrivals;

static void record(void *ctx, uint64_t seq, qk_time sent, qk_time now, uint8_t ecn, size_t len)
{
    arrivals *a = ctx;
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 1024;
        a->seq = realloc(a->seq, a->cap * sizeof *a->seq);
        a->sent = realloc(a->sent, a->cap * sizeof *a->sent);
        a->at = realloc(a->at, a->cap * sizeof *a->at);
        a->ecn = realloc(a->ecn, a->cap);
    }
    a->seq[a->n] = seq;
    a->sent[a->n] = sent;
    a->at[a->n] = now;
    a->ecn[a->n++] = ecn;
}

static void arrivals_free(arrivals *a)
{
    free(a->seq);
    free(a->sent);
    free(a->at);
    free(a->ecn);
}

/* Two hosts a -> b over one link with cfg; a CBR source at a, a sink at b. */
typedef struct p2p {
    qk_sim *sim;
    qk_sim_cbr *cbr;
    qk_sim_sink *sink;
    int link;
    arrivals arr;
} p2p;

static void p2p_setup(p2p *t, const qk_sim_link_cfg *cfg, const qk_sim_cbr_cfg *cc, uint64_t seed)
{
    memset(t, 0, sizeof *t);
    t->sim = qk_sim_new(seed);
    assert_non_null(t->sim);
    int a = qk_sim_host_add(t->sim, "a", 0x0a000001), b = qk_sim_host_add(t->sim, "b", 0x0a000002);
    assert_true(a >= 0 && b >= 0);
    t->link = qk_sim_link_add(t->sim, "fwd", a, b, cfg);
    assert_true(t->link >= 0);
    assert_int_equal(qk_sim_route_add(t->sim, a, b, t->link), 0);
    assert_true(qk_sim_sink_add(t->sim, b, 9, &t->sink) >= 0);
    qk_sim_sink_observe(t->sink, record, &t->arr);
    qk_sim_cbr_cfg c = *cc;
    c.dst = qk_sim_host_addr(t->sim, b, 9);
    assert_true(qk_sim_cbr_add(t->sim, a, 1000, &c, &t->cbr) >= 0);
}

static void p2p_free(p2p *t)
{
    qk_sim_del(t->sim);
    arrivals_free(&t->arr);
}

/* r < R: each packet arrives at send + size*8/R + D exactly. */
static void test_serialization_delay(void **state)
{
    qk_sim_link_cfg cfg = {.rate_bps = 10000000, .delay_ns = 30 * MS};
    qk_sim_cbr_cfg cc = {.rate_bps = 8000000, .size_bytes = 1250, .stop_ns = 1000 * MS};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 1);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    /* 8 Mbit/s of 1250-byte packets = 800 packets per second. */
    assert_int_equal(t.arr.n, 800);
    for (size_t i = 0; i < t.arr.n; i++) {
        assert_int_equal(t.arr.seq[i], i);
        assert_int_equal(t.arr.sent[i], i * 1250 * QK_NS_PER_US);        /* 1.25 ms apart */
        assert_int_equal(t.arr.at[i], t.arr.sent[i] + 1 * MS + 30 * MS); /* 1250B@10M = 1ms */
    }
    const qk_sim_link_stats *st = qk_sim_link_stats_get(t.sim, t.link);
    assert_int_equal(st->delivered_pkts, 800);
    assert_int_equal(st->qdelay_max_ns, 0);
    p2p_free(&t);
}

/* overhead_bytes: each packet is serialized as payload + overhead (IP/UDP
 * headers): 1222 + 28 = 1250 bytes at 10 Mbit/s = 1 ms; and a time-limited
 * queue converts the backlog to time with the headers included. */
static void test_overhead(void **state)
{
    (void)state;
    qk_sim_link_cfg cfg = {.rate_bps = 10000000, .delay_ns = 30 * MS, .overhead_bytes = 28};
    qk_sim_cbr_cfg cc = {.rate_bps = 8000000, .size_bytes = 1222, .stop_ns = 100 * MS};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 1);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    assert_true(t.arr.n > 50);
    for (size_t i = 0; i < t.arr.n; i++)
        assert_int_equal(t.arr.at[i], t.arr.sent[i] + 1 * MS + 30 * MS);
    p2p_free(&t);

    /* 40-byte packets offered at 2 per ms into 1 Mbit/s with a 10 ms queue:
     * payload-only each takes 0.32 ms, with 28 B of headers 0.544 ms. The
     * link then delivers 1/0.544 ms = 1838 packets/s, not 3125. */
    qk_sim_link_cfg slow = {.rate_bps = 1000000, .limit_ns = 10 * MS, .overhead_bytes = 28};
    qk_sim_cbr_cfg small = {.rate_bps = 640000, .size_bytes = 40, .stop_ns = 1000 * MS};
    p2p_setup(&t, &slow, &small, 1);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    assert_true(t.arr.n >= 1838 - 20 && t.arr.n <= 1838 + 20);
    const qk_sim_link_stats *st = qk_sim_link_stats_get(t.sim, t.link);
    assert_true(st->dropped_pkts[QK_SIM_DROP_QUEUE] > 0);
    p2p_free(&t);
}

/* r > R: backlog grows at r - R until the limit, then exactly the excess is dropped. */
static void test_queue_growth_and_drops(void **state)
{
    /* R = 10 Mbit/s: 1 ms per 1250-byte packet. r = 20 Mbit/s: one packet per 0.5 ms. */
    qk_sim_link_cfg cfg = {.rate_bps = 10000000, .delay_ns = 10 * MS, .limit_bytes = 125000};
    qk_sim_cbr_cfg cc = {.rate_bps = 20000000, .size_bytes = 1250, .stop_ns = 2000 * MS};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 1);
    /* After 50 ms: 100 sent, 50 serialized: backlog grows 1.25 MB/s -> 62,500 bytes. */
    qk_sim_run(t.sim, 50 * MS - 1);
    const qk_sim_link_stats *st = qk_sim_link_stats_get(t.sim, t.link);
    /* sends at 0..49.5ms: 100 packets; departures done by 49.999ms: 49 (first ends at 1ms) */
    assert_int_equal(st->arrived_pkts, 100);
    assert_int_equal(st->queue_pkts, 100 - 49);
    assert_int_equal(st->dropped_pkts[QK_SIM_DROP_QUEUE], 0);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    /* 4000 sent; the link drains 2000 packets in 2 s plus a full queue of 100 at the end. */
    assert_int_equal(st->arrived_pkts, 4000);
    assert_int_equal(st->max_queue_bytes, 125000);
    uint64_t drops = st->dropped_pkts[QK_SIM_DROP_QUEUE];
    assert_int_equal(st->delivered_pkts + drops, 4000);
    /* Delivered = all served: 2000 during the 2 s + the 100-packet queue drained after. */
    assert_in_range(st->delivered_pkts, 2098, 2101);
    assert_int_equal(t.arr.n, st->delivered_pkts);
    p2p_free(&t);
}

static void test_bernoulli(void **state)
{
    double p = 0.02;
    qk_sim_link_cfg cfg = {.loss = QK_SIM_LOSS_BERNOULLI, .loss_p = p};
    qk_sim_cbr_cfg cc = {.rate_bps = 1000000000, .size_bytes = 100, .max_pkts = 100000};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 7);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    const qk_sim_link_stats *st = qk_sim_link_stats_get(t.sim, t.link);
    double n = 100000, sigma = sqrt(n * p * (1 - p));
    double lost = (double)st->dropped_pkts[QK_SIM_DROP_LOSS];
    assert_true(fabs(lost - n * p) < 4 * sigma);
    assert_int_equal(t.arr.n + (size_t)lost, 100000);
    p2p_free(&t);
}

static void test_gilbert_elliott(void **state)
{
    /* Bad state loses everything, good state nothing: bursts = sojourns in bad. */
    qk_sim_link_cfg cfg = {.loss = QK_SIM_LOSS_GE,
                           .ge_p_gb = 0.01,
                           .ge_p_bg = 0.25,
                           .ge_loss_good = 0,
                           .ge_loss_bad = 1};
    qk_sim_cbr_cfg cc = {.rate_bps = 1000000000, .size_bytes = 100, .max_pkts = 200000};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 3);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    /* Lost sequence numbers are the gaps in the arrivals. */
    uint64_t bursts = 0, lost = 0, prev = 0;
    for (size_t i = 0; i < t.arr.n; i++) {
        uint64_t s = t.arr.seq[i];
        if (s > prev) {
            bursts++;
            lost += s - prev;
        }
        prev = s + 1;
    }
    assert_true(bursts > 500);
    double mean = (double)lost / (double)bursts;
    assert_true(fabs(mean - 1 / 0.25) < 0.1 * (1 / 0.25));
    /* Stationary loss rate p_gb / (p_gb + p_bg) = 0.01 / 0.26. */
    double rate = (double)lost / 200000.0;
    assert_true(fabs(rate - 0.01 / 0.26) < 0.2 * (0.01 / 0.26));
    p2p_free(&t);
}

static void test_loss_list(void **state)
{
    qk_sim_link_cfg cfg = {0};
    const char *fix;
    assert_int_equal(qk_sim_link_cfg_set(&cfg, "loss_list", "3, 7, 10-12", &fix), 0);
    qk_sim_cbr_cfg cc = {.rate_bps = 1000000, .size_bytes = 100, .max_pkts = 20};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 3);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    uint64_t want[] = {0, 1, 2, 4, 5, 6, 8, 9, 13, 14, 15, 16, 17, 18, 19};
    assert_int_equal(t.arr.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < t.arr.n; i++) assert_int_equal(t.arr.seq[i], want[i]);
    p2p_free(&t);
}

/* Step marking: CE exactly on ECT packets that arrive when the backlog exceeds K. */
static void test_step_marking(void **state)
{
    qk_sim_link_cfg cfg = {.rate_bps = 10000000,
                           .delay_ns = 1 * MS,
                           .aqm = QK_SIM_AQM_STEP,
                           .step_k_pkts = 5,
                           .limit_pkts = 1000};
    /* 12.5 Mbit/s of 1250 B: one packet every 0.8 ms, the link serves one per 1 ms. */
    qk_sim_cbr_cfg cc = {
        .rate_bps = 12500000, .size_bytes = 1250, .max_pkts = 200, .ecn = QK_ECN_ECT0};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 1);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    assert_int_equal(t.arr.n, 200);
    /* Model: packet k arrives at 0.8k ms; departures at 1, 2, 3 ... ms (FIFO, back to back);
     * backlog seen by k = k - (number of departures at or before 0.8k ms). */
    uint64_t marks = 0;
    for (size_t k = 0; k < 200; k++) {
        uint64_t arrive_us = 800 * k, departed = arrive_us / 1000;
        if (departed > k) departed = k;
        int want = (k - departed) > 5;
        assert_int_equal(t.arr.ecn[k] == QK_ECN_CE, want);
        marks += want;
    }
    assert_true(marks > 100);
    assert_int_equal(qk_sim_link_stats_get(t.sim, t.link)->marked_pkts, marks);
    p2p_free(&t);
}

/* Non-ECT packets are never marked by step; they are dropped only at the limit. */
static void test_step_not_ect(void **state)
{
    qk_sim_link_cfg cfg = {
        .rate_bps = 10000000, .aqm = QK_SIM_AQM_STEP, .step_k_pkts = 5, .limit_pkts = 50};
    qk_sim_cbr_cfg cc = {.rate_bps = 20000000, .size_bytes = 1250, .max_pkts = 200};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 1);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    const qk_sim_link_stats *st = qk_sim_link_stats_get(t.sim, t.link);
    assert_int_equal(st->marked_pkts, 0);
    assert_true(st->dropped_pkts[QK_SIM_DROP_QUEUE] > 0);
    for (size_t i = 0; i < t.arr.n; i++) assert_int_equal(t.arr.ecn[i], QK_ECN_NOT_ECT);
    p2p_free(&t);
}

/* Suspension [100ms, 250ms): packets sent meanwhile are held and leave back to back at 250ms. */
static void test_suspension(void **state)
{
    qk_sim_link_cfg cfg = {.rate_bps = 100000000,
                           .delay_ns = 10 * MS,
                           .suspend_start_ns = 100 * MS,
                           .suspend_ns = 150 * MS,
                           .suspend_count = 1};
    /* one 1250-byte packet per ms; 0.1 ms to serialize */
    qk_sim_cbr_cfg cc = {.rate_bps = 10000000, .size_bytes = 1250, .stop_ns = 400 * MS};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 1);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    assert_int_equal(t.arr.n, 400);
    qk_time tx = 100 * QK_NS_PER_US;
    size_t held = 0;
    for (size_t i = 0; i < t.arr.n; i++) {
        qk_time s = t.arr.sent[i];
        if (s < 100 * MS) {
            assert_int_equal(t.arr.at[i], s + tx + 10 * MS);
        } else if (s < 250 * MS) { /* released at 250 ms, k-th held packet leaves k*tx later */
            assert_int_equal(t.arr.at[i], 250 * MS + (held + 1) * tx + 10 * MS);
            held++;
        } else { /* 150 held packets take 15 ms to drain: queued behind them until 265 ms */
            qk_time free_at = 250 * MS + (qk_time)held * tx;
            qk_time start = s > free_at ? s : free_at;
            (void)start;
            assert_true(t.arr.at[i] >= s + tx + 10 * MS);
        }
    }
    assert_int_equal(held, 150);
    p2p_free(&t);
}

static int count_inversions(const arrivals *a)
{
    int inv = 0;
    for (size_t i = 1; i < a->n; i++) inv += a->seq[i] < a->seq[i - 1];
    return inv;
}

static void test_reorder_only_when_enabled(void **state)
{
    qk_sim_link_cfg cfg = {.rate_bps = 100000000, .delay_ns = 10 * MS, .jitter_ns = 5 * MS};
    qk_sim_cbr_cfg cc = {.rate_bps = 50000000, .size_bytes = 1000, .max_pkts = 5000};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 5);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    assert_int_equal(t.arr.n, 5000);
    assert_int_equal(count_inversions(&t.arr), 0);
    /* jitter does happen: some one-way delays differ */
    int varied = 0;
    for (size_t i = 0; i < t.arr.n; i++)
        varied |= t.arr.at[i] - t.arr.sent[i] > 10200 * QK_NS_PER_US;
    assert_true(varied);
    p2p_free(&t);

    cfg.reorder_p = 0.05;
    cfg.reorder_delay_ns = 3 * MS;
    p2p_setup(&t, &cfg, &cc, 5);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    assert_int_equal(t.arr.n, 5000);
    assert_true(count_inversions(&t.arr) > 100);
    assert_int_equal(qk_sim_sink_stats_get(t.sink)->reordered_pkts > 0, 1);
    p2p_free(&t);
}

static void test_mtu_blackhole_dup_corrupt(void **state)
{
    qk_sim_link_cfg cfg = {
        .mtu_bytes = 1200, .blackhole_start_ns = 10 * MS, .blackhole_end_ns = 20 * MS};
    qk_sim_cbr_cfg cc = {.rate_bps = 8000000, .size_bytes = 1000, .max_pkts = 100};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 1); /* one packet per ms: 10 in [10, 20) ms are dropped */
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    const qk_sim_link_stats *st = qk_sim_link_stats_get(t.sim, t.link);
    assert_int_equal(st->dropped_pkts[QK_SIM_DROP_BLACKHOLE], 10);
    assert_int_equal(t.arr.n, 90);
    p2p_free(&t);

    cfg = (qk_sim_link_cfg){.mtu_bytes = 999};
    p2p_setup(&t, &cfg, &cc, 1);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    assert_int_equal(qk_sim_link_stats_get(t.sim, t.link)->dropped_pkts[QK_SIM_DROP_MTU], 100);
    p2p_free(&t);

    cfg = (qk_sim_link_cfg){.dup_p = 0.1, .corrupt_p = 0.1};
    cc.max_pkts = 10000;
    p2p_setup(&t, &cfg, &cc, 1);
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    st = qk_sim_link_stats_get(t.sim, t.link);
    const qk_sim_sink_stats *ss = qk_sim_sink_stats_get(t.sink);
    double s4 = 4 * sqrt(10000 * 0.1 * 0.9);
    assert_true(fabs((double)st->duplicated_pkts - 1000) < s4);
    assert_true(fabs((double)st->corrupted_pkts - 1000) < s4);
    assert_int_equal(st->delivered_pkts, 10000 + st->duplicated_pkts);
    /* every corrupted packet fails the sink's check word (a copy of a corrupt one too) */
    assert_true(ss->corrupt_pkts >= st->corrupted_pkts);
    assert_true(ss->dup_pkts > 0);
    p2p_free(&t);
}

static void test_rate_schedule(void **state)
{
    qk_sim_link_cfg cfg = {.rate_bps = 10000000};
    const char *fix;
    assert_int_equal(qk_sim_link_cfg_set(&cfg, "rate_schedule", "100ms:20mbit", &fix), 0);
    qk_sim_cbr_cfg cc = {.rate_bps = 1000000, .size_bytes = 1250, .stop_ns = 200 * MS};
    p2p t;
    p2p_setup(&t, &cfg, &cc, 1); /* one packet per 10 ms */
    qk_sim_run(t.sim, QK_TIME_INFINITE);
    for (size_t i = 0; i < t.arr.n; i++)
        assert_int_equal(t.arr.at[i] - t.arr.sent[i], t.arr.sent[i] < 100 * MS ? MS : MS / 2);
    p2p_free(&t);
}

static void test_parse(void **state)
{
    qk_time t;
    uint64_t v;
    double p;
    assert_int_equal(qk_sim_parse_time("25ms", &t), 0);
    assert_int_equal(t, 25 * MS);
    assert_int_equal(qk_sim_parse_time("1.5", &t), 0);
    assert_int_equal(t, 1500 * MS);
    assert_int_equal(qk_sim_parse_time("3 parsecs", &t), QK_ERR_CONFIG);
    assert_int_equal(qk_sim_parse_rate("5gbit", &v), 0);
    assert_int_equal(v, 5000000000ull);
    assert_int_equal(qk_sim_parse_rate("100Mbit", &v), 0);
    assert_int_equal(v, 100000000ull);
    assert_int_equal(qk_sim_parse_bytes("64KiB", &v), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(qk_sim_parse_prob("1%", &p), 0);
    assert_true(fabs(p - 0.01) < 1e-12);
    assert_int_equal(qk_sim_parse_prob("1.5", &p), QK_ERR_CONFIG);
    qk_sim_link_cfg c = {0};
    const char *fix = NULL;
    assert_int_equal(qk_sim_link_cfg_set(&c, "aqm", "bogus", &fix), QK_ERR_CONFIG);
    assert_non_null(fix);
    assert_int_equal(qk_sim_link_cfg_set(&c, "nope", "1", &fix), QK_ERR_NOT_FOUND);
    assert_int_equal(qk_sim_link_cfg_set(&c, "step_k", "20pkt", &fix), 0);
    assert_int_equal(c.step_k_pkts, 20);
    assert_int_equal(qk_sim_link_cfg_set(&c, "step_k", "1ms", &fix), 0);
    assert_int_equal(c.step_k_ns, MS);
    assert_int_equal(qk_sim_link_cfg_set(&c, "overhead", "48", &fix), 0);
    assert_int_equal(c.overhead_bytes, 48);
    assert_int_equal(qk_sim_link_cfg_set(&c, "overhead", "2000", &fix), QK_ERR_CONFIG);
    assert_int_equal(qk_sim_link_cfg_set(&c, "aqm", "dualpi2", &fix), 0);
    assert_int_equal(c.aqm, QK_SIM_AQM_DUALPI2);
    const char *why;
    assert_int_equal(qk_sim_link_cfg_check(&c, &why), 0);
    assert_int_equal(qk_sim_link_cfg_set(&c, "dualpi2_k", "-1", &fix), QK_ERR_CONFIG);
    assert_int_equal(qk_sim_link_cfg_set(&c, "dualpi2_k", "2.5", &fix), 0);
    assert_true(c.dualpi2_k == 2.5);
    assert_int_equal(qk_sim_link_cfg_set(&c, "aqm", "fq_codel", &fix), 0);
    assert_int_equal(c.aqm, QK_SIM_AQM_FQ_CODEL);
    assert_int_equal(qk_sim_link_cfg_set(&c, "codel_target", "2ms", &fix), 0);
    assert_int_equal(c.codel_target_ns, 2 * MS);
    assert_int_equal(qk_sim_link_cfg_set(&c, "fq_ecn", "no", &fix), 0);
    assert_true(c.fq_no_ecn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serialization_delay),
        cmocka_unit_test(test_overhead),
        cmocka_unit_test(test_queue_growth_and_drops),
        cmocka_unit_test(test_bernoulli),
        cmocka_unit_test(test_gilbert_elliott),
        cmocka_unit_test(test_loss_list),
        cmocka_unit_test(test_step_marking),
        cmocka_unit_test(test_step_not_ect),
        cmocka_unit_test(test_suspension),
        cmocka_unit_test(test_reorder_only_when_enabled),
        cmocka_unit_test(test_mtu_blackhole_dup_corrupt),
        cmocka_unit_test(test_rate_schedule),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
