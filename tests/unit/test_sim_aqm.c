/* SPDX-License-Identifier: MIT */
/* Scheduling AQMs (src/sim/aqm.c): DualPI2's PI2 update and coupled
 * probabilities against RFC 9332's formulas, its classifier and
 * time-shifted FIFO; FQ-CoDel's DRR (RFC 8290) and CoDel signal (RFC 8289). */
#include "qk_test.h"
#include "sim/aqm.h"

#include <math.h>
#include <string.h>

#define MS QK_NS_PER_MS
#define US QK_NS_PER_US

static qk_pkt *mk(qk_pkt_pool *pool, uint8_t ecn, uint16_t port, uint32_t len)
{
    qk_pkt *p = qk_pkt_get(pool, len);
    assert_non_null(p);
    memset(p->data, 0, len);
    p->ecn = ecn;
    p->src_ip = 0x0a000001;
    p->dst_ip = 0x0a000002;
    p->src_port = port;
    p->dst_port = 443;
    return p;
}

/* A packet from mk() that arrives at t (arrive_ns set), into a DualPI2. */
static qk_pkt *dualpi2_arrive(qk_dualpi2 *d, qk_pkt *p, qk_time t)
{
    p->arrive_ns = t;
    qk_dualpi2_enqueue(d, p, t);
    return p;
}

/* An empty packet pool and a DualPI2 with the default parameters (a link
 * configuration of zeros). */
static void dualpi2_setup(qk_pkt_pool *pool, qk_dualpi2 *d)
{
    qk_pkt_pool_init(pool, 0);
    qk_sim_link_cfg c;
    memset(&c, 0, sizeof c);
    qk_dualpi2_init(d, &c);
}

static void test_dualpi2_pi_update_and_coupling(void **state)
{
    (void)state;
    qk_pkt_pool pool;
    qk_dualpi2 d;
    dualpi2_setup(&pool, &d);
    /* RFC 9332 §A.1 defaults */
    assert_int_equal(d.target_ns, 15 * MS);
    assert_int_equal(d.tupdate_ns, 16 * MS);
    assert_true(d.alpha_u == 0.16 && d.beta_u == 3.0 && d.k == 2.0);
    assert_true(d.p_cmax == 0.25);
    /* A classic packet sits at the head from t = 0 (never dequeued): the
     * classic queue delay at the n-th update (t = 16n ms) is 16n ms. */
    qk_pkt *p = dualpi2_arrive(&d, mk(&pool, QK_ECN_ECT0, 1, 1200), 0);
    double expect = 0, prevq = 0;
    for (int n = 1; n <= 12; n++) {
        qk_time t = (qk_time)n * 16 * MS;
        qk_dualpi2_update(&d, t);
        double curq = (double)t / 1e9;
        /* p' = p' + alpha (curq - target) + beta (curq - prevq), in [0, 1] */
        expect += 0.16 * (curq - 0.015) + 3.0 * (curq - prevq);
        if (expect < 0) expect = 0;
        if (expect > 1) expect = 1;
        prevq = curq;
        assert_true(fabs(d.p - expect) < 1e-12);
        /* RFC 9332 §2.4: p_CL = k p' (capped at 1), p_C = p'^2 (capped at
         * p_Cmax = 1/k^2), so p_C = (p_CL / k)^2: the coupling law that
         * gives a Reno-friendly flow and a scalable flow the same rate. */
        double pcl = fmin(2 * expect, 1), pc = fmin(expect * expect, 0.25);
        assert_true(fabs(qk_dualpi2_p_cl(&d) - pcl) < 1e-12);
        assert_true(fabs(qk_dualpi2_p_c(&d) - pc) < 1e-12);
        if (pcl < 1) assert_true(fabs(qk_dualpi2_p_c(&d) - (pcl / 2) * (pcl / 2)) < 1e-12);
        /* p_L = max(native ramp, p_CL): ramp 0 below 800 us, 1 from 1.2 ms. */
        assert_true(fabs(qk_dualpi2_p_l(&d, 0) - pcl) < 1e-12);
        assert_true(fabs(qk_dualpi2_p_l(&d, 1000 * US) - fmax(0.5, pcl)) < 1e-12);
        assert_true(qk_dualpi2_p_l(&d, 2 * MS) == 1.0);
    }
    assert_true(d.p > 0.2); /* the queue grew well past the target */
    /* Below target the integral term pulls p' back down. */
    qk_aqm_verdict v;
    qk_rng rng;
    qk_rng_seed(&rng, 1, 2);
    qk_pkt *out = qk_dualpi2_dequeue(&d, 12 * 16 * MS, &rng, &v);
    assert_ptr_equal(out, p);
    qk_pkt_put(&pool, out);
    double before = d.p;
    qk_dualpi2_update(&d, 14 * 16 * MS); /* empty queue: curq 0 */
    assert_true(d.p < before);
    qk_pkt_pool_free(&pool);
}

static void test_dualpi2_classify_and_marking_rates(void **state)
{
    (void)state;
    qk_pkt_pool pool;
    qk_dualpi2 d;
    dualpi2_setup(&pool, &d);
    qk_rng rng;
    qk_rng_seed(&rng, 7, 3);
    qk_dualpi2_update(&d, 0);
    /* ECT(1) and CE to L, ECT(0) and Not-ECT to C (RFC 9332 §2.3). */
    qk_pkt *a = mk(&pool, QK_ECN_ECT0, 1, 1200), *b = mk(&pool, QK_ECN_ECT1, 2, 1200);
    qk_pkt *e = mk(&pool, QK_ECN_CE, 3, 1200), *n = mk(&pool, QK_ECN_NOT_ECT, 4, 1200);
    qk_pkt *all[4] = {a, b, e, n};
    for (int i = 0; i < 4; i++) dualpi2_arrive(&d, all[i], (qk_time)i * US);
    assert_int_equal(d.l_pkts, 2);
    assert_int_equal(d.c_pkts, 2);
    /* Time-shifted FIFO: L first although the ECT(0) packet is older, until
     * the C head has waited tshift (30 ms) longer than the L head. */
    qk_aqm_verdict v;
    qk_pkt *o = qk_dualpi2_dequeue(&d, 10 * US, &rng, &v);
    assert_ptr_equal(o, b);
    qk_pkt_put(&pool, o);
    d.lq.head->arrive_ns = 40 * MS; /* pretend the CE packet came much later */
    o = qk_dualpi2_dequeue(&d, 41 * MS, &rng, &v);
    assert_ptr_equal(o, a);
    qk_pkt_put(&pool, o);
    while ((o = qk_dualpi2_dequeue(&d, 41 * MS, &rng, &v))) qk_pkt_put(&pool, o);

    /* With p' fixed at 0.2: L marks at p_CL = 0.4 (short sojourn), classic
     * ECT(0) at p_C = 0.04, classic Not-ECT is dropped at 0.04. */
    int marks_l = 0, marks_c = 0, drops_c = 0, trials = 20000;
    for (int i = 0; i < trials; i++) {
        d.p = 0.2;
        d.next_update_ns = QK_TIME_INFINITE;
        uint8_t ecns[3] = {QK_ECN_ECT1, QK_ECN_ECT0, QK_ECN_NOT_ECT};
        for (int k = 0; k < 3; k++) {
            dualpi2_arrive(&d, mk(&pool, ecns[k], 1, 100), 50 * MS);
            qk_pkt *p = qk_dualpi2_dequeue(&d, 50 * MS, &rng, &v);
            if (k == 0) marks_l += v == QK_AQM_MARK;
            if (k == 1) marks_c += v == QK_AQM_MARK;
            if (k == 2) drops_c += v == QK_AQM_DROP;
            qk_pkt_put(&pool, p);
        }
    }
    assert_true(fabs((double)marks_l / trials - 0.4) < 0.02);
    assert_true(fabs((double)marks_c / trials - 0.04) < 0.008);
    assert_true(fabs((double)drops_c / trials - 0.04) < 0.008);
    qk_pkt_pool_free(&pool);
}

/* A packet from mk() that arrives at t (arrive_ns set), into FQ-CoDel. */
static void fqcodel_arrive(qk_fqcodel *f, qk_pkt *p, qk_time t)
{
    p->arrive_ns = t;
    qk_fqcodel_enqueue(f, p, t);
}

static void test_fqcodel_drr_and_codel(void **state)
{
    (void)state;
    qk_pkt_pool pool;
    qk_pkt_pool_init(&pool, 0);
    qk_sim_link_cfg c;
    memset(&c, 0, sizeof c);
    qk_fqcodel f;
    assert_int_equal(qk_fqcodel_init(&f, &c), 0);
    assert_int_equal(f.n_qs, 1024);
    assert_int_equal(f.quantum_bytes, 1514);
    /* A bulk flow queues 20 packets, then a sparse flow sends one: the
     * sparse flow's queue is new, so it leaves before most of the bulk. */
    for (int i = 0; i < 20; i++) fqcodel_arrive(&f, mk(&pool, QK_ECN_ECT0, 1000, 1400), 0);
    qk_aqm_verdict v;
    qk_pkt *p = qk_fqcodel_dequeue(&f, 0, &v); /* bulk's quantum: one packet */
    assert_int_equal(p->src_port, 1000);
    qk_pkt_put(&pool, p);
    fqcodel_arrive(&f, mk(&pool, QK_ECN_NOT_ECT, 2000, 200), 1 * US);
    int pos = 0;
    for (pos = 1; (p = qk_fqcodel_dequeue(&f, 2 * US, &v)); pos++) {
        bool sparse = p->src_port == 2000;
        qk_pkt_put(&pool, p);
        if (sparse) break;
    }
    assert_true(pos <= 3);
    while ((p = qk_fqcodel_dequeue(&f, 2 * US, &v))) qk_pkt_put(&pool, p);

    /* CoDel: a standing queue (sojourn 10 ms > 5 ms target) for more than an
     * interval (100 ms) gets its first CE mark, then marks at
     * interval / sqrt(count). */
    qk_time t = 0, first = 0;
    int marks = 0;
    for (int i = 0; i < 400; i++) {
        for (int k = 0; k < 2; k++) fqcodel_arrive(&f, mk(&pool, QK_ECN_ECT0, 1000, 1400), t);
        t += 1 * MS;
        if (t < 10 * MS) continue;
        p = qk_fqcodel_dequeue(&f, t, &v);
        assert_non_null(p);
        if (v == QK_AQM_MARK && !marks++) first = t;
        assert_true(v != QK_AQM_DROP); /* ECT: marked, never dropped */
        qk_pkt_put(&pool, p);
    }
    assert_true(first >= 100 * MS && first <= 120 * MS);
    assert_true(marks >= 4); /* ~110, 210, 280, 340, 390 ms */
    qk_fqcodel_drain(&f, &pool);
    qk_fqcodel_free(&f);
    qk_pkt_pool_free(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dualpi2_pi_update_and_coupling),
        cmocka_unit_test(test_dualpi2_classify_and_marking_rates),
        cmocka_unit_test(test_fqcodel_drr_and_codel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
