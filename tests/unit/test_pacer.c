/* SPDX-License-Identifier: MIT */
/* Pacer: rate N * cwnd / srtt (RFC 9002 §7.7), burst quantum, no drift. */
#include "qk_test.h"
#include "transport/recovery/pacer.h"
#include <stdlib.h>

#define MDS 1200u
#define MS  QK_NS_PER_MS
#define SEC QK_NS_PER_S

/* Backlogged sender: send mds-sized packets whenever allowed during
 * [start, start + dur); returns bytes released. */
static uint64_t run(qk_pacer *p, qk_time start, qk_time dur, uint64_t cwnd, qk_time srtt,
                    uint64_t pkt)
{
    uint64_t bytes = 0;
    qk_time t = start;
    for (;;) {
        qk_time at = qk_pacer_next_send_time(p, t, cwnd, srtt, pkt);
        assert_true(at >= t);
        if (at >= start + dur) break;
        t = at;
        qk_pacer_on_sent(p, pkt, t);
        bytes += pkt;
    }
    return bytes;
}

/* Most tests below were written for N = 1.25 (RFC 9002 §7.7's example) and
 * keep that arithmetic; the default (N = 1, pacer.h) is checked in
 * test_gain_ca. */
static void init125(qk_pacer *p, uint64_t burst_pkts)
{
    qk_pacer_init(p, burst_pkts);
    qk_pacer_set_gain_ca(p, 125);
}

static void test_burst_then_spacing(void **state)
{
    (void)state;
    qk_pacer p;
    init125(&p, 0); /* default 10 packets */
    qk_time t = 5 * SEC;
    for (int i = 0; i < 10; i++) {
        assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS), t);
        qk_pacer_on_sent(&p, MDS, t);
    }
    /* rate = 1.25 * 12000 B / 0.1 s = 150000 B/s: 1200 B every 8 ms. */
    assert_int_equal(qk_pacer_rate_bytes_per_s(&p), 150000);
    qk_time next = qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS);
    assert_int_equal(next, t + 8 * MS);
    /* Asking again before then gives the same absolute time. */
    assert_int_equal(qk_pacer_next_send_time(&p, t + 3 * MS, 12000, 100 * MS, MDS), t + 8 * MS);
    qk_pacer_on_sent(&p, MDS, next);
    assert_int_equal(qk_pacer_next_send_time(&p, next, 12000, 100 * MS, MDS), next + 8 * MS);
}

/* Congestion-avoidance gains: 1.25 while something other than cwnd limits
 * the sender, the window-limited gain (default 1, qk_pacer_set_gain_ca)
 * while cwnd does; slow start keeps 2; below 1 is taken as 1 (RFC 9002
 * §7.7). */
static void test_gain_ca(void **state)
{
    (void)state;
    qk_pacer p;
    qk_pacer_init(&p, 1);
    qk_time t = 5 * SEC;
    /* Not window-limited (the initial state): 1.25 * 12000 B / 0.1 s. */
    assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS), t);
    assert_int_equal(qk_pacer_rate_bytes_per_s(&p), 150000);
    /* Window-limited, default N = 1: 12000 B / 0.1 s = 120000 B/s. */
    qk_pacer_set_window_limited(&p, true);
    assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS), t);
    assert_int_equal(qk_pacer_rate_bytes_per_s(&p), 120000);
    qk_pacer_set_gain_ca(&p, 120);
    assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS), t);
    /* 1.2 * 12000 B / 0.1 s = 144000 B/s: 1200 B every 8.33 ms. */
    assert_int_equal(qk_pacer_rate_bytes_per_s(&p), 144000);
    qk_pacer_on_sent(&p, MDS, t);
    assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS), t + 8333334);
    qk_pacer_set_slow_start(&p, true);
    qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS);
    assert_int_equal(qk_pacer_rate_bytes_per_s(&p), 240000);
    qk_pacer_set_slow_start(&p, false);
    qk_pacer_set_gain_ca(&p, 50);
    qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS);
    assert_int_equal(qk_pacer_rate_bytes_per_s(&p), 120000);
    /* A configured gain above 1.25 applies whatever limits the sender. */
    qk_pacer_set_gain_ca(&p, 200);
    qk_pacer_set_window_limited(&p, false);
    qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS);
    assert_int_equal(qk_pacer_rate_bytes_per_s(&p), 240000);
}

static void test_no_drift(void **state)
{
    (void)state;
    /* Awkward numbers so every refill leaves a remainder. */
    const uint64_t cwnd = 123457, pkt = 1237;
    const qk_time srtt = 33333331;
    for (int ss = 0; ss < 2; ss++) {
        qk_pacer p;
        init125(&p, 4);
        qk_pacer_set_slow_start(&p, ss);
        uint64_t quantum = 4 * pkt;
        uint64_t bytes = run(&p, 7, SEC, cwnd, srtt, pkt);
        double gain = ss ? 2.0 : 1.25;
        double expect = gain * (double)cwnd / ((double)srtt / SEC); /* bytes in 1 s */
        /* released = initial quantum + rate * 1 s, within one packet. */
        double diff = (double)bytes - (double)quantum - expect;
        if (diff > pkt || diff < -(double)pkt)
            fail_msg("ss=%d released %llu, rate*T %.0f, quantum %llu", ss,
                     (unsigned long long)bytes, expect, (unsigned long long)quantum);
        /* And over 10 s the error stays the same size (no accumulation). */
        init125(&p, 4);
        qk_pacer_set_slow_start(&p, ss);
        bytes = run(&p, 7, 10 * SEC, cwnd, srtt, pkt);
        diff = (double)bytes - (double)quantum - 10 * expect;
        assert_true(diff <= pkt && diff >= -(double)pkt);
    }
}

static void test_idle_caps_burst(void **state)
{
    (void)state;
    qk_pacer p;
    init125(&p, 3);
    qk_time t = 0;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(qk_pacer_next_send_time(&p, t, 30000, 10 * MS, MDS), t);
        qk_pacer_on_sent(&p, MDS, t);
    }
    assert_true(qk_pacer_next_send_time(&p, t, 30000, 10 * MS, MDS) > t);
    /* Idle for 10 s (nothing to send): only one quantum (3 packets) may burst. */
    qk_pacer_on_idle(&p);
    t = 10 * SEC;
    int burst = 0;
    while (qk_pacer_next_send_time(&p, t, 30000, 10 * MS, MDS) == t) {
        qk_pacer_on_sent(&p, MDS, t);
        burst++;
        assert_true(burst < 100);
    }
    assert_int_equal(burst, 3);
}

/* Packets that may leave at once at t (after an idle period). */
static int burst_at(qk_pacer *p, qk_time t, uint64_t cwnd, qk_time srtt)
{
    int n = 0;
    while (qk_pacer_next_send_time(p, t, cwnd, srtt, MDS) == t) {
        qk_pacer_on_sent(p, MDS, t);
        n++;
        assert_true(n < 100000);
    }
    qk_pacer_on_idle(p); /* then nothing more to send until the next call */
    return n;
}

/* A caller that comes back late from a wait (a descheduled I/O loop) may
 * send what the rate earned while it was late, at most QK_PACER_MAX_LATE_NS
 * worth above the quantum; one that comes back on time gets no more than
 * the quantum, and an idle one (qk_pacer_on_idle) neither. */
static void test_late_return_catches_up(void **state)
{
    (void)state;
    qk_pacer p;
    /* 1.25 * 96000 B / 10 ms = 12000 B per ms = 10 packets per ms. */
    init125(&p, 3);
    qk_time t = 0;
    while (qk_pacer_next_send_time(&p, t, 96000, 10 * MS, MDS) == t) qk_pacer_on_sent(&p, MDS, t);
    qk_time wake = qk_pacer_next_send_time(&p, t, 96000, 10 * MS, MDS);
    assert_true(wake > t);
    /* On time: one packet. */
    int n = 0;
    while (qk_pacer_next_send_time(&p, wake, 96000, 10 * MS, MDS) == wake) {
        qk_pacer_on_sent(&p, MDS, wake);
        n++;
    }
    assert_int_equal(n, 1);
    /* 2 ms late: the quantum (3) plus what 2 ms earned beyond it (~20). */
    wake = qk_pacer_next_send_time(&p, wake, 96000, 10 * MS, MDS);
    t = wake + 2 * MS;
    n = 0;
    while (qk_pacer_next_send_time(&p, t, 96000, 10 * MS, MDS) == t) {
        qk_pacer_on_sent(&p, MDS, t);
        n++;
        assert_true(n < 1000);
    }
    assert_true(n >= 20 && n <= 24);
    /* 100 ms late: capped at QK_PACER_MAX_LATE_NS (4 ms = 40 packets) + quantum. */
    wake = qk_pacer_next_send_time(&p, t, 96000, 10 * MS, MDS);
    t = wake + 100 * MS;
    n = 0;
    while (qk_pacer_next_send_time(&p, t, 96000, 10 * MS, MDS) == t) {
        qk_pacer_on_sent(&p, MDS, t);
        n++;
        assert_true(n < 1000);
    }
    assert_true(n >= 40 && n <= 44);
    /* Idle, then back 100 ms later: the quantum only. */
    wake = qk_pacer_next_send_time(&p, t, 96000, 10 * MS, MDS);
    qk_pacer_on_idle(&p);
    t = wake + 100 * MS;
    n = 0;
    while (qk_pacer_next_send_time(&p, t, 96000, 10 * MS, MDS) == t) {
        qk_pacer_on_sent(&p, MDS, t);
        n++;
    }
    assert_int_equal(n, 3);
}

static void test_burst_interval(void **state)
{
    (void)state;
    qk_pacer p;
    /* rate 1.25 * 288000 B / 10 ms = 36000 B per ms: a 1 ms burst is 30
     * packets of 1200 B, above the 10-packet floor and below the cap. */
    init125(&p, 0);
    qk_pacer_set_burst_interval(&p, MS, 100 * MDS);
    assert_int_equal(burst_at(&p, 0, 288000, 10 * MS), 10); /* starts at the floor */
    assert_int_equal(qk_pacer_quantum_bytes(&p), 36000);
    assert_int_equal(burst_at(&p, SEC, 288000, 10 * MS), 30);
    /* 1.25 * 1.2 MB / 1 ms = 1.5 MB per ms: capped at 100 packets. Tokens
     * earned before the change filled the old bucket (30 packets); the new
     * depth holds from then on. */
    assert_int_equal(burst_at(&p, 2 * SEC, 1200000, MS), 30);
    assert_int_equal(qk_pacer_quantum_bytes(&p), 100 * MDS);
    assert_int_equal(burst_at(&p, 3 * SEC, 1200000, MS), 100);
    /* 1.25 * 12000 B / 100 ms = 150 B per ms: the 10-packet floor. */
    assert_int_equal(burst_at(&p, 4 * SEC, 12000, 100 * MS), 10);
    assert_int_equal(qk_pacer_quantum_bytes(&p), 10 * MDS);
    /* Turned off: the quantum is burst_pkts again at any rate. */
    qk_pacer_set_burst_interval(&p, 0, 0);
    assert_int_equal(burst_at(&p, 5 * SEC, 1200000, MS), 10);
    assert_int_equal(burst_at(&p, 6 * SEC, 1200000, MS), 10);
}

static void test_burst_interval_keeps_rate(void **state)
{
    (void)state;
    /* A backlogged sender over 1 s still gets rate * T plus one quantum,
     * within a packet: a larger bucket changes bursts, not the rate. */
    const uint64_t cwnd = 1234567, pkt = 1237;
    const qk_time srtt = 3333331;
    qk_pacer p;
    init125(&p, 4);
    qk_pacer_set_burst_interval(&p, MS, 400 * pkt);
    uint64_t bytes = run(&p, 11, SEC, cwnd, srtt, pkt);
    double expect = 1.25 * (double)cwnd / ((double)srtt / SEC);
    double quantum = 1.25 * (double)cwnd / ((double)srtt / MS); /* ~463 KB, under the cap */
    assert_true(quantum < 400.0 * pkt);
    /* The first burst is the 4-packet floor (no rate yet); a backlogged
     * sender never lets tokens pile up, so nothing else bursts. */
    double diff = (double)bytes - expect - 4.0 * pkt;
    if (diff > pkt || diff < -(double)pkt)
        fail_msg("released %llu, rate*T %.0f, diff %.0f", (unsigned long long)bytes, expect, diff);
}

static void test_debt_and_unpaced(void **state)
{
    (void)state;
    qk_pacer p;
    init125(&p, 2);
    /* No RTT yet: no pacing at all. */
    for (int i = 0; i < 50; i++) {
        assert_int_equal(qk_pacer_next_send_time(&p, 100, 12000, 0, MDS), 100);
        qk_pacer_on_sent(&p, MDS, 100);
    }
    assert_int_equal(qk_pacer_rate_bytes_per_s(&p), 0);
    /* With an RTT the bucket starts full (2 packets), then a packet sent
     * early (e.g. an ACK) is a debt repaid at the pacing rate. */
    qk_time t = SEC;
    assert_int_equal(qk_pacer_next_send_time(&p, t, 24000, 100 * MS, MDS), t);
    qk_pacer_on_sent(&p, MDS, t);
    qk_pacer_on_sent(&p, MDS, t);
    qk_pacer_on_sent(&p, MDS, t); /* 1200 B of debt */
    /* rate 300000 B/s = 4 ms per 1200 B: debt + one packet = 8 ms. */
    assert_int_equal(qk_pacer_next_send_time(&p, t, 24000, 100 * MS, MDS), t + 8 * MS);
}

static void test_rate_change(void **state)
{
    (void)state;
    qk_pacer p;
    init125(&p, 1);
    qk_time t = 0;
    assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS), t);
    qk_pacer_on_sent(&p, MDS, t);
    assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS), 8 * MS);
    /* cwnd doubles: the wait halves. */
    assert_int_equal(qk_pacer_next_send_time(&p, t, 24000, 100 * MS, MDS), 4 * MS);
    /* Slow start gain 2 vs 1.25. */
    qk_pacer_set_slow_start(&p, true);
    assert_int_equal(qk_pacer_next_send_time(&p, t, 24000, 100 * MS, MDS), 2500 * QK_NS_PER_US);
    assert_int_equal(qk_pacer_rate_bytes_per_s(&p), 480000);
}

static void test_with_cc(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_NEWRENO, MDS, 0), 0);
    qk_pacer p;
    init125(&p, 1);
    assert_int_equal(qk_pacer_next_send_time_cc(&p, 0, &cc, 100 * MS), 0);
    qk_pacer_on_sent(&p, MDS, 0);
    /* Slow start: 2 * 12000 B / 0.1 s = 240000 B/s -> 5 ms per packet. */
    assert_int_equal(qk_pacer_next_send_time_cc(&p, 0, &cc, 100 * MS), 5 * MS);
    /* Put the controller in congestion avoidance at 6000 B directly: a loss in
     * the first flight keeps slow start (cc.c qk_cc_early_loss), and this test
     * is about the pacer's gain, not about how the controller got there. */
    cc.cwnd_bytes = cc.ssthresh_bytes = 6000;
    cc.state = QK_CC_CONGESTION_AVOIDANCE;
    assert_false(qk_cc_in_slow_start(&cc));
    /* 1.25 * 6000 B / 0.1 s = 75000 B/s -> 16 ms per packet. */
    assert_int_equal(qk_pacer_next_send_time_cc(&p, 0, &cc, 100 * MS), 16 * MS);
}

/* qk_pacer_pkts_after: what the bucket still lets go at once after one
 * more packet; qk_pacer_set_burst_pkts: a deeper bucket (e.g. the ACK
 * grouping the peer was asked for) lets that many go back to back. */
static void test_pkts_after_and_burst_pkts(void **state)
{
    (void)state;
    qk_pacer p;
    qk_pacer_init(&p, 0);
    qk_time t = 5 * SEC;
    /* No RTT yet: not pacing, no limit. */
    assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 0, MDS), t);
    assert_int_equal(qk_pacer_pkts_after(&p, MDS, MDS), UINT64_MAX);
    /* Pacing with a full bucket of 10: after one more, 9 can still go. */
    assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS), t);
    assert_int_equal(qk_pacer_pkts_after(&p, MDS, MDS), 9);
    for (int i = 0; i < 9; i++) {
        assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS), t);
        qk_pacer_on_sent(&p, MDS, t);
    }
    /* One token left: that packet is the last of the burst. */
    assert_int_equal(qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS), t);
    assert_int_equal(qk_pacer_pkts_after(&p, MDS, MDS), 0);
    /* Deeper bucket: 32 packets of 1200 B after an idle second (rate
     * 150000 B/s refills far more than 32 * 1200 B). */
    qk_pacer_set_burst_pkts(&p, 32);
    (void)qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS); /* the depth applies from here */
    t += SEC;
    int n = 0;
    while (qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS) == t) {
        qk_pacer_on_sent(&p, MDS, t);
        n++;
    }
    assert_int_equal(n, 32);
    /* Back to the default: the surplus above 10 packets is dropped. */
    qk_pacer_set_burst_pkts(&p, 0);
    t += SEC;
    n = 0;
    while (qk_pacer_next_send_time(&p, t, 12000, 100 * MS, MDS) == t) {
        qk_pacer_on_sent(&p, MDS, t);
        n++;
    }
    assert_int_equal(n, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_spacing),
        cmocka_unit_test(test_no_drift),
        cmocka_unit_test(test_gain_ca),
        cmocka_unit_test(test_idle_caps_burst),
        cmocka_unit_test(test_late_return_catches_up),
        cmocka_unit_test(test_burst_interval),
        cmocka_unit_test(test_burst_interval_keeps_rate),
        cmocka_unit_test(test_debt_and_unpaced),
        cmocka_unit_test(test_rate_change),
        cmocka_unit_test(test_with_cc),
        cmocka_unit_test(test_pkts_after_and_burst_pkts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
