/* SPDX-License-Identifier: MIT */
/* BBRv3 (src/transport/recovery/cc/bbr.c, draft-ietf-ccwg-bbr): the filters and
 * every state transition, driven with synthetic rate samples. One
 * synthetic ACK per round unless a test says otherwise. */
#include "qk_test.h"
#include "transport/recovery/cc/cc.h"

#include <string.h>

#define MS   QK_NS_PER_MS
#define MDS  1200u
#define RATE 12500000u /* 100 Mbit/s in bytes per second */
#define RTT  (50 * MS)
#define BDP  625000u /* RATE x RTT */

typedef struct drv {
    qk_cc cc;
    qk_time now;
    uint64_t delivered, lost;
} drv;

static qk_cc_algo drv_kind = QK_CC_BBR; /* the bbr-lt tests set QK_CC_BBR_LT */

static void drv_init(drv *d)
{
    memset(d, 0, sizeof *d);
    assert_int_equal(qk_cc_init(&d->cc, drv_kind, MDS, 0), 0);
}

static const struct qk_cc_bbr_state *st(const drv *d)
{
    return &d->cc.u.bbr;
}

/* One ACK, one round later (new_round) or within the round. */
static void ack_ex(drv *d, uint64_t rate, uint64_t inflight, qk_time rtt, bool app_limited,
                   bool new_round)
{
    uint64_t newly = 100 * MDS;
    qk_rate_sample rs = {0};
    d->now += new_round ? RTT : MS;
    rs.now = d->now;
    rs.has_data = true;
    rs.delivery_rate_bytes_per_s = rate;
    rs.is_app_limited = app_limited;
    uint64_t next = d->cc.u.bbr.next_round_delivered;
    rs.prior_delivered_bytes = new_round ? d->delivered : (next ? next - 1 : 0);
    rs.delivered_bytes = (uint64_t)((unsigned __int128)rate * RTT / QK_NS_PER_S);
    rs.interval_ns = RTT;
    rs.has_rtt = true;
    rs.rtt_ns = rtt;
    rs.tx_in_flight_bytes = inflight;
    rs.lost_bytes = 0;
    rs.newly_acked_bytes = newly;
    d->delivered += newly;
    rs.total_delivered_bytes = d->delivered;
    rs.total_lost_bytes = d->lost;
    rs.bytes_in_flight = inflight;
    qk_cc_ack a = {.now = d->now,
                   .sent_time = d->now - rtt,
                   .bytes = newly,
                   .smoothed_rtt_ns = rtt,
                   .min_rtt_ns = rtt,
                   .latest_rtt_ns = rtt};
    d->cc.ops->on_packet_acked(&d->cc, &a);
    d->cc.ops->on_rate_sample(&d->cc, &rs);
    d->cc.mark_app_limited = false; /* recovery.c would consume it */
}

static void ack(drv *d, uint64_t rate, uint64_t inflight)
{
    ack_ex(d, rate, inflight, RTT, false, true);
}

static void transmit(drv *d, uint64_t inflight_before, bool cwnd_limited, bool app_limited)
{
    qk_cc_sent s = {.now = d->now,
                    .bytes = MDS,
                    .bytes_in_flight_before = inflight_before,
                    .conn_app_limited = app_limited,
                    .cwnd_limited = cwnd_limited};
    d->cc.ops->on_transmit(&d->cc, &s);
}

static void lose(drv *d, uint64_t pn, uint64_t tx_in_flight, uint64_t lost_at_send)
{
    d->lost += MDS;
    qk_cc_lost l = {.now = d->now,
                    .sent_time = d->now - RTT,
                    .pn = pn,
                    .bytes = MDS,
                    .tx_in_flight_bytes = tx_in_flight,
                    .lost_at_send_bytes = lost_at_send,
                    .total_lost_bytes = d->lost,
                    .total_delivered_bytes = d->delivered};
    d->cc.ops->on_packet_lost(&d->cc, &l);
}

/* Startup at a constant rate until the plateau is found, then drain. */
static void to_probe_bw(drv *d)
{
    drv_init(d);
    for (int i = 0; i < 10 && st(d)->mode == QK_BBR_STARTUP; i++) ack(d, RATE, 2 * BDP);
    assert_int_equal(st(d)->mode, QK_BBR_DRAIN);
    /* Drain ends after 3 rounds; inflight stays above the BDP, so DOWN holds. */
    for (int i = 0; i < 4; i++) ack(d, RATE, BDP + 10 * MDS);
    assert_int_equal(st(d)->mode, QK_BBR_PROBE_BW_DOWN);
}

/* to_probe_bw, then an ACK with half the BDP in flight: DOWN -> CRUISE
 * (§5.3.3.9). */
static void to_cruise(drv *d)
{
    to_probe_bw(d);
    ack_ex(d, RATE, BDP / 2, RTT, false, false);
    assert_int_equal(st(d)->mode, QK_BBR_PROBE_BW_CRUISE);
}

/* to_cruise, then no wait for the next probe: REFILL, one round later UP. */
static void to_probe_up(drv *d)
{
    to_cruise(d);
    d->cc.u.bbr.bw_probe_wait_ns = 0;
    ack_ex(d, RATE, BDP / 2, RTT, false, false);
    assert_int_equal(st(d)->mode, QK_BBR_PROBE_BW_REFILL);
    ack(d, RATE, BDP);
    assert_int_equal(st(d)->mode, QK_BBR_PROBE_BW_UP);
}

static void test_winmax(void **state)
{
    (void)state;
    qk_winmax m;
    qk_winmax_reset(&m, 0, 0);
    assert_int_equal(qk_winmax_update(&m, 10, 0, 100), 100);
    assert_int_equal(qk_winmax_update(&m, 10, 3, 50), 100);
    assert_int_equal(qk_winmax_update(&m, 10, 6, 70), 100);
    assert_int_equal(qk_winmax_update(&m, 10, 10, 20), 100); /* 100 is 10 old: still in */
    assert_int_equal(qk_winmax_update(&m, 10, 11, 20), 70);  /* 100 expired, 70 (t=6) next */
    assert_int_equal(qk_winmax_update(&m, 10, 17, 10), 20);  /* 70 expired too */
    assert_int_equal(qk_winmax_update(&m, 10, 18, 300), 300);
    assert_int_equal(qk_winmax_get(&m), 300);
    /* Window 1 (Startup's extra_acked): only the last round counts. */
    qk_winmax_reset(&m, 0, 0);
    qk_winmax_update(&m, 1, 5, 900);
    assert_int_equal(qk_winmax_update(&m, 1, 7, 10), 10);
}

static void test_init(void **state)
{
    (void)state;
    drv d;
    drv_init(&d);
    assert_int_equal(st(&d)->mode, QK_BBR_STARTUP);
    assert_int_equal(st(&d)->pacing_gain_pct, 277);
    assert_int_equal(st(&d)->cwnd_gain_pct, 200);
    assert_string_equal(d.cc.ops->name, "bbr");
    /* §5.6.2 InitPacingRate: 2.77 x initial cwnd / 1 ms. */
    assert_int_equal(d.cc.pacing_rate_bytes_per_s, 12000u * 1000 * 277 / 100);
    assert_int_equal(d.cc.cwnd_bytes, 12000);
    assert_true(qk_cc_in_slow_start(&d.cc));
}

/* §5.6.2 InitPacingRate again from the first RTT sample (as Linux's
 * tcp_bbr.c has_seen_rtt): 2.77 x initial cwnd / RTT, once; after that
 * Startup's rate only rises (§5.6.2 SetPacingRateWithGain). */
static void test_init_pacing_from_first_rtt(void **state)
{
    (void)state;
    drv d;
    drv_init(&d);
    uint64_t at_1ms = d.cc.pacing_rate_bytes_per_s;
    ack_ex(&d, 1000, 12000, RTT, true, true); /* a tiny app-limited sample */
    uint64_t want = 12000ull * QK_NS_PER_S / RTT * 277 / 100;
    assert_int_equal(d.cc.pacing_rate_bytes_per_s, want);
    assert_true(d.cc.pacing_rate_bytes_per_s < at_1ms / 40);
    ack_ex(&d, 1000, 12000, RTT / 5, true, true); /* a lower RTT later: not again */
    assert_int_equal(d.cc.pacing_rate_bytes_per_s, want);
    ack(&d, RATE, 12000); /* max_bw above it: the gain's rate, as before */
    assert_true(d.cc.pacing_rate_bytes_per_s > want);
    assert_int_equal(d.cc.pacing_rate_bytes_per_s, (uint64_t)RATE * 277 / 100 * 99 / 100);
}

static void test_max_bw_filter(void **state)
{
    (void)state;
    drv d;
    drv_init(&d);
    ack(&d, RATE, BDP);
    assert_int_equal(st(&d)->max_bw, RATE);
    /* A lower app-limited sample is ignored; a higher one is taken. */
    ack_ex(&d, RATE / 2, BDP, RTT, true, true);
    assert_int_equal(st(&d)->max_bw, RATE);
    ack_ex(&d, 2 * RATE, BDP, RTT, true, true);
    assert_int_equal(st(&d)->max_bw, 2 * RATE);
    /* Pacing in Startup: 2.77 x bw x 0.99. */
    assert_int_equal(d.cc.pacing_rate_bytes_per_s, (uint64_t)2 * RATE * 277 / 100 * 99 / 100);
}

static void test_startup_to_drain_to_probe_bw(void **state)
{
    (void)state;
    drv d;
    drv_init(&d);
    /* Growing bandwidth keeps Startup going (>= 25% per round). */
    uint64_t r = RATE / 16;
    for (int i = 0; i < 4; i++, r *= 2) ack(&d, r, BDP);
    assert_int_equal(st(&d)->mode, QK_BBR_STARTUP);
    assert_false(st(&d)->full_bw_reached);
    /* Three rounds without 25% growth: full pipe, Drain (§5.3.1.2). */
    ack(&d, RATE, 2 * BDP);
    ack(&d, RATE, 2 * BDP);
    ack(&d, RATE, 2 * BDP);
    assert_int_equal(st(&d)->mode, QK_BBR_STARTUP);
    ack(&d, RATE, 2 * BDP);
    assert_true(st(&d)->full_bw_reached);
    assert_int_equal(st(&d)->mode, QK_BBR_DRAIN);
    assert_int_equal(st(&d)->pacing_gain_pct, 50);
    assert_false(qk_cc_in_slow_start(&d.cc));
    /* Drain holds while inflight is above the BDP... */
    ack(&d, RATE, 2 * BDP);
    assert_int_equal(st(&d)->mode, QK_BBR_DRAIN);
    /* ...and ends once it is not (§5.3.2): DOWN, and as inflight is at
     * most the BDP already, CRUISE on the same ACK (§5.3.3.9). */
    ack(&d, RATE, BDP);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    assert_int_equal(d.cc.pacing_rate_bytes_per_s, (uint64_t)RATE * 99 / 100);
    /* With inflight above the BDP, DOWN paces at 0.9 (§5.6.1). */
    drv e;
    to_probe_bw(&e);
    assert_int_equal(e.cc.u.bbr.pacing_gain_pct, 90);
    assert_int_equal(e.cc.pacing_rate_bytes_per_s, (uint64_t)RATE * 90 / 100 * 99 / 100);
}

static void test_drain_exits_on_time(void **state)
{
    (void)state;
    drv d;
    drv_init(&d);
    for (int i = 0; i < 10 && st(&d)->mode == QK_BBR_STARTUP; i++) ack(&d, RATE, 3 * BDP);
    assert_int_equal(st(&d)->mode, QK_BBR_DRAIN);
    /* inflight never falls: Drain ends after 3 rounds anyway (§5.3.2). */
    for (int i = 0; i < 3; i++) ack(&d, RATE, 3 * BDP);
    assert_int_equal(st(&d)->mode, QK_BBR_DRAIN);
    ack(&d, RATE, 3 * BDP);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_DOWN);
}

static void test_probe_bw_cycle(void **state)
{
    (void)state;
    drv d;
    /* DOWN -> CRUISE once inflight <= BDP with headroom (§5.3.3.9). */
    to_cruise(&d);
    assert_int_equal(st(&d)->pacing_gain_pct, 100);
    /* CRUISE holds until bw_probe_wait (2..3 s) has elapsed. */
    qk_time wait = st(&d)->bw_probe_wait_ns;
    assert_true(wait >= 2 * QK_NS_PER_S && wait <= 3 * QK_NS_PER_S);
    qk_time stamp = st(&d)->cycle_stamp;
    while (d.now + MS <= stamp + wait) {
        ack_ex(&d, RATE, BDP / 2, RTT, false, false);
        assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    }
    ack_ex(&d, RATE, BDP / 2, RTT, false, false);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_REFILL);
    assert_true(st(&d)->bw_shortterm == QK_BBR_INF);
    /* REFILL -> UP after one round (§5.3.3.3). */
    ack(&d, RATE, BDP);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_UP);
    assert_int_equal(st(&d)->pacing_gain_pct, 125);
    assert_int_equal(st(&d)->cwnd_gain_pct, 225);
    assert_true(st(&d)->is_bw_probe_sample);
    /* UP -> DOWN when bw stops growing for 3 rounds (full_bw_now). */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_UP);
        ack(&d, RATE, BDP);
    }
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_DOWN);
}

/* Reno-coexistence bound: a small BDP (in packets) probes after that many rounds. */
static void test_reno_coexistence_probe_time(void **state)
{
    (void)state;
    drv d;
    to_cruise(&d);
    /* BDP 625 kB = 520 packets, capped at 63 rounds: after 63 rounds (of
     * 50 ms: 3.15 s > 3 s, so use a shorter RTT's worth of rounds). */
    uint64_t rounds = st(&d)->rounds_since_probe_up;
    assert_true(rounds <= 2);
    d.cc.u.bbr.bw_probe_wait_ns = 100 * QK_NS_PER_S; /* only the round bound applies */
    int n = 0;
    while (st(&d)->mode == QK_BBR_PROBE_BW_CRUISE && n < 100) {
        ack(&d, RATE, BDP / 2);
        n++;
    }
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_REFILL);
    assert_true(st(&d)->rounds_since_probe_up >= 63);
}

/* Loss above 2% of the flight while probing: UP -> DOWN, inflight_longterm set. */
static void test_probe_up_loss_too_high(void **state)
{
    (void)state;
    drv d;
    to_probe_up(&d);
    uint64_t target = d.cc.cwnd_bytes < BDP ? d.cc.cwnd_bytes : BDP; /* TargetInflight */
    /* 1% lost: tolerated. */
    uint64_t tx = 100 * MDS;
    lose(&d, 1000, tx, d.lost);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_UP);
    /* 3 of 100 lost since it was sent: too high (> 2%). */
    uint64_t at_send = d.lost - MDS;
    lose(&d, 1002, tx, at_send);
    lose(&d, 1004, tx, at_send);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_DOWN);
    assert_true(st(&d)->prev_probe_too_high);
    assert_false(st(&d)->is_bw_probe_sample);
    assert_int_equal(st(&d)->undo_mode, QK_BBR_PROBE_BW_UP);
    /* InflightAtLoss: prev = 99 pkts, lost_prev = 2 pkts: prefix =
     * (0.02 x 99 - 2) / 0.98 < 0 -> 0; longterm = max(99 pkts, 0.7 x target). */
    uint64_t want = 99 * MDS > target * 70 / 100 ? 99 * MDS : target * 70 / 100;
    assert_int_equal(st(&d)->inflight_longterm, want);
    /* The cwnd now respects the long-term bound (§5.6.4.7). */
    ack(&d, RATE, BDP / 4);
    assert_true(d.cc.cwnd_bytes <= want);
}

/* Into ProbeBW UP with inflight_longterm = ilt (CRUISE, then an elapsed wait). */
static void to_probe_up_with(drv *d, uint64_t ilt)
{
    to_cruise(d);
    d->cc.u.bbr.inflight_longterm = ilt;
    d->cc.u.bbr.bw_probe_wait_ns = 0;
    ack_ex(d, RATE, BDP / 2, RTT, false, false);
    assert_int_equal(st(d)->mode, QK_BBR_PROBE_BW_REFILL);
    ack(d, RATE, ilt);
    assert_int_equal(st(d)->mode, QK_BBR_PROBE_BW_UP);
}

/* CRUISE leaves headroom (§5.3.3.9 InflightWithHeadroom, §5.6.4.7): cwnd
 * <= inflight_longterm - max(1 MDS, 15 %). The bench/cc.sh 1-BDP trace (CRUISE cwnd = 85 %
 * of inflight_longterm) rests on this rule. */
static void test_cruise_headroom(void **state)
{
    (void)state;
    drv d;
    to_probe_bw(&d);
    ack_ex(&d, RATE, 300 * MDS, RTT, false, false);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    uint64_t ilt = 400 * MDS; /* below BBR.max_inflight (2 x BDP) */
    d.cc.u.bbr.inflight_longterm = ilt;
    for (int i = 0; i < 10; i++) ack_ex(&d, RATE, 300 * MDS, RTT, false, false);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    assert_int_equal(d.cc.cwnd_bytes, ilt - ilt * 15 / 100); /* 340 packets */
    /* A tiny bound keeps MinPipeCwnd (4 packets). */
    d.cc.u.bbr.inflight_longterm = 3 * MDS;
    ack_ex(&d, RATE, 2 * MDS, RTT, false, false);
    assert_int_equal(d.cc.cwnd_bytes, 4 * MDS);
}

/* §5.3.3.9 IsTimeToGoDown: an ACK that finds the flow cwnd-limited with
 * cwnd >= inflight_longterm restarts the plateau count (full_bw = this
 * sample), so UP keeps probing while the bound, not the path, limits it;
 * when not cwnd-limited the count stands and 3 flat rounds end UP. */
static void test_probe_up_cwnd_limited(void **state)
{
    (void)state;
    drv d;
    to_probe_up_with(&d, 300 * MDS);
    assert_int_equal(d.cc.cwnd_bytes, st(&d)->inflight_longterm);
    d.cc.u.bbr.probe_up_acked_per_inc = QK_BBR_INF; /* the bound does not grow on this ACK */
    d.cc.u.bbr.full_bw_count = 2;
    d.cc.u.bbr.full_bw = RATE;
    transmit(&d, d.cc.cwnd_bytes - MDS, true, false);
    ack_ex(&d, RATE / 2, st(&d)->inflight_longterm, RTT, false, false);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_UP);
    assert_int_equal(st(&d)->full_bw_count, 0);
    assert_int_equal(st(&d)->full_bw, RATE / 2);
    /* Not cwnd-limited: the count stands; three flat rounds end UP. */
    d.cc.u.bbr.full_bw = RATE;
    transmit(&d, MDS, false, false);
    ack_ex(&d, RATE, MDS, RTT, false, false);
    assert_int_equal(st(&d)->full_bw, RATE);
    for (int i = 0; i < 4 && st(&d)->mode == QK_BBR_PROBE_BW_UP; i++) {
        transmit(&d, MDS, false, false);
        ack(&d, RATE, MDS);
    }
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_DOWN);
    assert_false(st(&d)->prev_probe_too_high);
}

/* §5.3.3.6 precautionary probing: after a probe that ended on loss, the
 * next UP stops as soon as inflight reaches inflight_longterm
 * (deceleration), and one round into DOWN the flow refills again
 * (acceleration), instead of waiting 2-3 s. */
static void test_precautionary_probe(void **state)
{
    (void)state;
    drv d;
    uint64_t ilt = 300 * MDS;
    to_probe_up_with(&d, ilt);
    uint64_t tx = 100 * MDS, at_send = d.lost;
    for (int i = 0; i < 3; i++) lose(&d, 2000 + 2 * (uint64_t)i, tx, at_send);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_DOWN);
    assert_true(st(&d)->prev_probe_too_high);
    /* The next probe: REFILL, UP; inflight at the bound ends it at once. */
    d.cc.u.bbr.bw_probe_wait_ns = 0;
    ack(&d, RATE, BDP / 4);
    for (int i = 0; i < 3 && st(&d)->mode != QK_BBR_PROBE_BW_UP; i++) ack(&d, RATE, BDP / 4);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_UP);
    assert_true(st(&d)->prev_probe_too_high);
    transmit(&d, st(&d)->inflight_longterm, true, false);
    ack_ex(&d, RATE, st(&d)->inflight_longterm, RTT, false, false);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_DOWN);
    assert_true(st(&d)->prev_probe_precautionary);
    assert_false(st(&d)->prev_probe_too_high);
    /* The end of this probe's samples (a round later): REFILL again. */
    d.cc.u.bbr.bw_probe_wait_ns = 100 * QK_NS_PER_S;
    ack(&d, RATE, BDP / 4);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_REFILL);
}

/* Losses outside probing cut the short-term model once per round by Beta
 * (the draft's rule: loss_gate off). */
static void test_short_term_bounds(void **state)
{
    (void)state;
    drv d;
    to_probe_bw(&d);
    d.cc.u.bbr.loss_gate = false;
    ack_ex(&d, RATE, BDP / 2, RTT, false, false);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    assert_true(st(&d)->bw_shortterm == QK_BBR_INF);
    lose(&d, 5000, BDP, d.lost);
    assert_true(st(&d)->is_loss_in_round);
    /* The round ends with a sample at 60% of the rate: bw_latest is the
     * round's max (100%), so bw_shortterm = max(latest, 0.7 max_bw). */
    ack(&d, RATE * 6 / 10, BDP / 2);
    assert_int_equal(st(&d)->bw_shortterm, RATE);
    lose(&d, 6000, BDP, d.lost);
    ack(&d, RATE * 6 / 10, BDP / 2);
    /* Now bw_latest = 60% of the rate: max(0.6, 0.7 x 1.0) = 0.7. */
    assert_int_equal(st(&d)->bw_shortterm, (uint64_t)RATE * 70 / 100);
    assert_int_equal(st(&d)->bw, (uint64_t)RATE * 70 / 100);
    assert_true(st(&d)->inflight_shortterm != QK_BBR_INF);
    assert_true(d.cc.cwnd_bytes <= st(&d)->inflight_shortterm);
}

/* The loss-rate gate (bbr.c extension): a round losing 1% of what it
 * carried leaves the short-term model alone; 3% or a CE mark does not.
 * The loss that opens the round is not counted: 1 + 2 lost of 103 is 2 of
 * 102 (1.96%), below the threshold. */
static void test_loss_gate(void **state)
{
    (void)state;
    drv d;
    to_cruise(&d);
    assert_true(st(&d)->loss_gate);
    /* 1 packet lost, then a round delivering 100 packets (one ACK). */
    lose(&d, 5000, BDP, d.lost);
    ack(&d, RATE * 6 / 10, BDP / 2);
    assert_true(st(&d)->bw_shortterm == QK_BBR_INF);
    assert_false(st(&d)->is_loss_in_round);
    for (uint64_t k = 0; k < 3; k++) lose(&d, 5500 + 2 * k, BDP, d.lost);
    ack(&d, RATE * 6 / 10, BDP / 2);
    assert_true(st(&d)->bw_shortterm == QK_BBR_INF);
    /* 1 + 3 lost of 104: 3 of 103, above 2%; bw_latest is 60% of the rate:
     * 0.7 x max_bw. */
    for (uint64_t k = 0; k < 4; k++) lose(&d, 6000 + 2 * k, BDP, d.lost);
    ack(&d, RATE * 6 / 10, BDP / 2);
    assert_int_equal(st(&d)->bw_shortterm, (uint64_t)RATE * 70 / 100);
    /* A CE mark counts whatever the rate. */
    drv e;
    to_probe_bw(&e);
    ack_ex(&e, RATE, BDP / 2, RTT, false, false);
    e.cc.ops->on_congestion_event(&e.cc, e.now - RTT, true, e.now);
    ack(&e, RATE * 6 / 10, BDP / 2);
    assert_int_equal(e.cc.u.bbr.bw_shortterm, RATE);
}

static void test_probe_rtt(void **state)
{
    (void)state;
    drv d;
    to_probe_bw(&d);
    /* RTT samples above the minimum for 5 s: ProbeRTT (§5.3.4.3). */
    qk_time start = d.now;
    while (d.now < start + 5 * QK_NS_PER_S + RTT && st(&d)->mode != QK_BBR_PROBE_RTT)
        ack_ex(&d, RATE, BDP / 2, RTT + 10 * MS, false, true);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_RTT);
    assert_int_equal(st(&d)->cwnd_gain_pct, 50);
    uint64_t saved = st(&d)->prior_cwnd;
    assert_true(saved > 0);
    /* cwnd = max(0.5 BDP, 4 packets) */
    assert_int_equal(d.cc.cwnd_bytes, BDP / 2);
    /* Inflight reaches the ProbeRTT cwnd: 200 ms and one round to go. */
    ack_ex(&d, RATE, BDP / 2, RTT, false, true);
    assert_true(st(&d)->probe_rtt_done_stamp != 0);
    qk_time done = st(&d)->probe_rtt_done_stamp;
    while (d.now <= done) {
        assert_int_equal(st(&d)->mode, QK_BBR_PROBE_RTT);
        ack_ex(&d, RATE, BDP / 2, RTT, false, true);
    }
    /* Out, into CRUISE (full bw was reached), cwnd restored (then bounded). */
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    assert_int_equal(st(&d)->min_rtt_ns, RTT);
}

static void test_startup_high_loss(void **state)
{
    (void)state;
    drv d;
    drv_init(&d);
    uint64_t r = RATE / 16;
    for (int i = 0; i < 3; i++, r *= 2) ack(&d, r, BDP);
    /* A loss event starts recovery; a round later, 6 discontiguous ranges
     * with > 2% of the flight lost exit Startup (§5.3.1.3). */
    lose(&d, 10, BDP, 0);
    d.cc.ops->on_congestion_event(&d.cc, d.now - RTT, false, d.now);
    assert_true(d.cc.in_recovery);
    ack_ex(&d, r / 2, BDP, RTT, false, true); /* no growth this round */
    assert_int_equal(st(&d)->mode, QK_BBR_STARTUP);
    assert_int_equal(st(&d)->full_bw_count, 1);
    for (uint64_t k = 0; k < 5; k++) lose(&d, 100 + 2 * k, 100 * MDS, 0);
    assert_int_equal(st(&d)->mode, QK_BBR_STARTUP);
    lose(&d, 120, 100 * MDS, 0);
    assert_int_equal(st(&d)->mode, QK_BBR_DRAIN);
    assert_true(st(&d)->full_bw_reached);
    assert_int_equal(st(&d)->undo_mode, QK_BBR_STARTUP);
    /* A spurious-loss undo returns to Startup (§5.5.11.2). */
    d.cc.ops->on_spurious_loss(&d.cc, d.now);
    assert_int_equal(st(&d)->mode, QK_BBR_STARTUP);
    assert_false(st(&d)->full_bw_reached);
    assert_false(d.cc.in_recovery);
}

/* Extension (bbr.c check_startup_high_loss, startup_loss_plateau): the
 * high-loss exit waits for a round whose delivery rate grew less than 25 %.
 * Losses that meet the drafted criteria while the rate still doubles per
 * round (random loss early in Startup) leave Startup only with the
 * extension off; on, the exit comes with the first flat round's losses. */
static void test_startup_high_loss_plateau(void **state)
{
    (void)state;
    for (int plateau = 1; plateau >= 0; plateau--) {
        drv d;
        drv_init(&d);
        d.cc.u.bbr.startup_loss_plateau = plateau;
        uint64_t r = RATE / 16;
        for (int i = 0; i < 3; i++, r *= 2) ack(&d, r, BDP);
        lose(&d, 10, BDP, 0);
        d.cc.ops->on_congestion_event(&d.cc, d.now - RTT, false, d.now);
        ack_ex(&d, r, BDP, RTT, false, true); /* doubled again */
        assert_int_equal(st(&d)->full_bw_count, 0);
        /* 6 ranges, 6 of 100 packets: the drafted criteria hold. */
        for (uint64_t k = 0; k < 6; k++) lose(&d, 100 + 2 * k, 100 * MDS, 0);
        if (!plateau) {
            assert_int_equal(st(&d)->mode, QK_BBR_DRAIN);
            continue;
        }
        assert_int_equal(st(&d)->mode, QK_BBR_STARTUP);
        assert_true(st(&d)->inflight_longterm == QK_BBR_INF);
        /* A flat round (its ACK is for a packet sent before recovery began,
         * so recovery goes on). */
        ack_ex(&d, r, 2 * BDP, 2 * RTT, false, true);
        assert_true(d.cc.in_recovery);
        assert_int_equal(st(&d)->full_bw_count, 1);
        for (uint64_t k = 0; k < 5; k++) lose(&d, 200 + 2 * k, 100 * MDS, 0);
        assert_int_equal(st(&d)->mode, QK_BBR_STARTUP);
        lose(&d, 220, 100 * MDS, 0);
        assert_int_equal(st(&d)->mode, QK_BBR_DRAIN);
        assert_true(st(&d)->full_bw_reached);
        assert_true(st(&d)->inflight_longterm >= BDP / 2); /* BBR.bdp at r */
    }
}

/* Extension (bbr.c exit_startup): packets sent in Startup and found lost
 * after it ended (Drain) are the overshoot the exit answered, not a new
 * loss round for the short-term bounds; a packet sent after the exit
 * counts. With startup_loss_once off, the draft's rule: the same losses
 * set bw_shortterm / inflight_shortterm at the end of the round. */
static void test_startup_losses_once(void **state)
{
    (void)state;
    for (int once = 1; once >= 0; once--) {
        drv d;
        drv_init(&d);
        d.cc.u.bbr.startup_loss_once = once;
        for (int i = 0; i < 10 && st(&d)->mode == QK_BBR_STARTUP; i++) ack(&d, RATE, 2 * BDP);
        assert_int_equal(st(&d)->mode, QK_BBR_DRAIN);
        assert_int_equal(st(&d)->startup_exit_ns, d.now);
        /* 1 ms into Drain: 5 of the ~100 packets of Startup's last round
         * (sent an RTT ago) are declared lost, 5%. */
        ack_ex(&d, RATE, 2 * BDP, RTT, false, false);
        for (uint64_t k = 0; k < 5; k++) lose(&d, 7000 + 2 * k, 100 * MDS, d.lost);
        assert_int_equal(st(&d)->is_loss_in_round, !once);
        ack(&d, RATE * 6 / 10, BDP / 2);
        if (once) {
            assert_true(st(&d)->bw_shortterm == QK_BBR_INF);
            assert_true(st(&d)->inflight_shortterm == QK_BBR_INF);
        } else {
            assert_true(st(&d)->inflight_shortterm != QK_BBR_INF);
        }
        /* A packet sent after the exit (now - RTT is past it) counts. */
        d.now += RTT;
        lose(&d, 9000, BDP, d.lost);
        assert_true(st(&d)->is_loss_in_round);
    }
}

static void test_recovery_restores_cwnd(void **state)
{
    (void)state;
    drv d;
    to_probe_bw(&d);
    uint64_t before = d.cc.cwnd_bytes;
    lose(&d, 7000, BDP, d.lost);
    d.cc.ops->on_congestion_event(&d.cc, d.now - RTT, false, d.now);
    assert_true(d.cc.in_recovery);
    assert_int_equal(st(&d)->prior_cwnd, before);
    assert_int_equal(d.cc.congestion_events, 1);
    /* An older packet's loss does not start another episode. */
    d.cc.ops->on_congestion_event(&d.cc, d.now - 2 * RTT, false, d.now);
    assert_int_equal(d.cc.congestion_events, 1);
    /* A packet sent after the episode began is acked: recovery ends. */
    d.now += RTT + MS;
    qk_cc_ack a = {.now = d.now, .sent_time = d.now - RTT, .bytes = MDS, .smoothed_rtt_ns = RTT};
    d.cc.ops->on_packet_acked(&d.cc, &a);
    assert_false(d.cc.in_recovery);
    assert_true(d.cc.cwnd_bytes >= before);
}

/* Persistent congestion (RFC 9002 §7.6): the window collapses and an ACK
 * right after it does not bring back the pre-outage window. */
static void test_persistent_congestion(void **state)
{
    (void)state;
    drv d;
    to_probe_bw(&d);
    ack_ex(&d, RATE, BDP, RTT, false, false);
    uint64_t before = d.cc.cwnd_bytes;
    assert_true(before >= BDP);
    lose(&d, 9000, BDP, d.lost);
    d.cc.ops->on_congestion_event(&d.cc, d.now - RTT, false, d.now);
    d.cc.ops->on_persistent_congestion(&d.cc, d.now);
    assert_int_equal(d.cc.cwnd_bytes, 2 * MDS);
    ack_ex(&d, RATE / 100, 2 * MDS, RTT, false, true); /* acks 100 packets */
    assert_true(d.cc.cwnd_bytes <= 2 * MDS + 100 * MDS);
    assert_true(d.cc.cwnd_bytes < before / 4);
}

/* Restart from idle in ProbeBW paces at bw x 1 at once (§5.4.1). */
static void test_idle_restart(void **state)
{
    (void)state;
    drv d;
    to_probe_bw(&d);
    assert_int_equal(st(&d)->pacing_gain_pct, 90);
    transmit(&d, 0, false, true);
    assert_true(st(&d)->idle_restart);
    assert_int_equal(d.cc.pacing_rate_bytes_per_s, (uint64_t)RATE * 99 / 100);
    /* Data delivered clears it. */
    ack_ex(&d, RATE, MDS, RTT, true, false);
    assert_false(st(&d)->idle_restart);
}

/* CE marks are congestion: a CE fraction above 2% ends a probe. */
static void test_ecn_ends_probe(void **state)
{
    (void)state;
    drv d;
    to_probe_up(&d);
    d.cc.ops->on_congestion_event(&d.cc, d.now - RTT, true, d.now);
    assert_true(st(&d)->is_loss_in_round);
    d.cc.ops->on_ecn(&d.cc, 20, 10 * MDS, d.now); /* 24 kB of ~625 kB > 2% */
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_DOWN);
}

/* §5.6.3 send quantum: 1 ms of pacing, within [2 MDS, 64 KB]. */
static void test_send_quantum(void **state)
{
    (void)state;
    drv d;
    to_probe_bw(&d);
    assert_int_equal(d.cc.send_quantum_bytes, d.cc.pacing_rate_bytes_per_s / 1000);
    drv_init(&d);
    ack(&d, 100000, 10 * MDS); /* 0.8 Mbit/s: 2.77 x 100 B/ms < 2 MDS */
    ack(&d, 100000, 10 * MDS);
    assert_true(d.cc.send_quantum_bytes >= 2 * MDS);
}

/* BBR's pipe (conn_send.c pipe_limit_bytes) is unbounded until
 * Startup has filled it, then BBR.bw x the least RTT of this round and the
 * last plus the quantization budget. RTT samples inflated by a queue or a
 * suspension do not raise it while the other round has a normal one; a
 * queue that lasts both rounds (a competing flow's) does, and when it goes
 * the pipe shrinks back. */
static void test_pipe_bytes(void **state)
{
    (void)state;
    drv d;
    drv_init(&d);
    ack(&d, RATE / 16, BDP);
    assert_false(st(&d)->full_bw_reached);
    assert_true(qk_cc_bbr_pipe_bytes(&d.cc) == UINT64_MAX);
    to_cruise(&d);
    assert_int_equal(st(&d)->bw, RATE);
    assert_int_equal(qk_cc_bbr_pipe_bytes(&d.cc), BDP); /* above the quantum and MinPipeCwnd */
    ack_ex(&d, RATE, BDP / 2, 4 * RTT, false, false);   /* within the round */
    assert_int_equal(qk_cc_bbr_pipe_bytes(&d.cc), BDP);
    ack_ex(&d, RATE, BDP / 2, 2 * RTT, false, true); /* a new round: the last had RTT */
    assert_int_equal(qk_cc_bbr_pipe_bytes(&d.cc), BDP);
    ack_ex(&d, RATE, BDP / 2, 2 * RTT, false, true); /* two rounds at 2 x RTT */
    assert_int_equal(st(&d)->min_rtt_ns, RTT);
    assert_int_equal(qk_cc_bbr_pipe_bytes(&d.cc), 2 * BDP);
    ack_ex(&d, RATE, BDP / 2, RTT, false, true);
    assert_int_equal(qk_cc_bbr_pipe_bytes(&d.cc), BDP);
}

/* to_probe_bw for bbr-lt. */
static void lt_to_probe_bw(drv *d)
{
    drv_kind = QK_CC_BBR_LT;
    to_probe_bw(d);
    drv_kind = QK_CC_BBR;
}

/* to_probe_up_with for bbr-lt. */
static void lt_to_probe_up_with(drv *d, uint64_t ilt)
{
    drv_kind = QK_CC_BBR_LT;
    to_probe_up_with(d, ilt);
    drv_kind = QK_CC_BBR;
}

/* A learnt background loss rate of 1 %: a lossy path (qk_bbr_lt_lossy). */
static void lt_set_lossy(qk_bbr_lt *lt)
{
    lt->bg_lost_pkts = 1;
    lt->bg_total_pkts = 100;
    lt->bg_rounds = 1;
}

/* lt_to_probe_bw, then one ACK within the round: ProbeBW CRUISE. */
static void lt_to_cruise(drv *d)
{
    lt_to_probe_bw(d);
    ack_ex(d, RATE, 100 * MDS, RTT, false, false);
    assert_int_equal(st(d)->mode, QK_BBR_PROBE_BW_CRUISE);
}

/* bbr-lt (bbr.c lt_fair_down, docs/cc.md addition 4): the fair-share
 * bound also bounds DOWN's cwnd, and DOWN ends once inflight is within it
 * even above the BDP, where the draft's DOWN holds. */
static void test_lt_fair_bound_in_down(void **state)
{
    (void)state;
    drv d;
    lt_to_probe_bw(&d);
    d.cc.u.bbr.lt.fair_cap_bytes = BDP / 2;
    ack_ex(&d, RATE, BDP + 10 * MDS, RTT, false, false);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_DOWN);
    assert_int_equal(d.cc.cwnd_bytes, BDP / 2);
    /* Without the bound DOWN holds above the BDP (§5.3.3.9) ... */
    d.cc.u.bbr.lt.fair_cap_bytes = 0;
    ack_ex(&d, RATE, BDP + 20 * MDS, RTT, false, false);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_DOWN);
    assert_true(d.cc.cwnd_bytes > BDP / 2); /* grows again */
    /* ... with it, inflight within the bound ends DOWN. */
    d.cc.u.bbr.lt.fair_cap_bytes = BDP + 50 * MDS;
    ack_ex(&d, RATE, BDP + 20 * MDS, RTT, false, false);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    assert_true(d.cc.cwnd_bytes <= BDP + 50 * MDS);
}

/* CRUISE rounds with no queue (one ACK each, 80 packets in flight) until
 * the fair-share bound changes, at most three. */
static void lt_ack_until_bound_moves(drv *d)
{
    uint64_t f = d->cc.u.bbr.lt.fair_cap_bytes;
    for (int i = 0; i < 3 && d->cc.u.bbr.lt.fair_cap_bytes == f; i++) ack(d, RATE, 80 * MDS);
}

/* The fair-share bound's step at this file's 50 ms min_rtt with no queue
 * (bbr_lt.c fair_share): alpha, 8 packets, times the gain 50 / 30 ms
 * (fair_gain). */
#define LT_ALPHA_50MS (8 * MDS * 50 / 30)

/* bbr-lt (bbr_lt.c fair_share): a CRUISE round with no queue grows the
 * bound by alpha and lifts inflight_longterm so that CRUISE's 15 %
 * headroom below it follows the bound; a loss classified as congestion
 * in the round does not lift it. */
static void test_lt_fair_bound_lifts_longterm(void **state)
{
    (void)state;
    drv d;
    lt_to_cruise(&d);
    d.cc.u.bbr.inflight_longterm = 100 * MDS;
    d.cc.u.bbr.lt.fair_cap_bytes = 90 * MDS;
    uint64_t f = 90 * MDS;
    for (int i = 0; i < 3; i++) {
        ack(&d, RATE, 80 * MDS);
        assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
        if (d.cc.u.bbr.lt.fair_cap_bytes != f) break;
    }
    f = d.cc.u.bbr.lt.fair_cap_bytes;
    assert_int_equal(f, 90 * MDS + LT_ALPHA_50MS);
    assert_true(st(&d)->inflight_longterm >= f * 100 / 85);
    assert_int_equal(d.cc.cwnd_bytes, f);
    /* A round with a congestion verdict grows the bound but not the lift. */
    uint64_t ilt = st(&d)->inflight_longterm;
    d.cc.u.bbr.lt.round_congested = true;
    ack(&d, RATE, 80 * MDS);
    assert_true(d.cc.u.bbr.lt.fair_cap_bytes > f);
    assert_int_equal(st(&d)->inflight_longterm, ilt);
}

/* bbr-lt (qk_bbr_lt_probe_queue_up, docs/cc.md addition 3): a probe ends
 * on the queue signal (min_rtt / 4) above the queue its REFILL began with. */
static void test_lt_probe_queue_base(void **state)
{
    (void)state;
    drv d;
    lt_to_probe_bw(&d);
    qk_bbr_lt *lt = &d.cc.u.bbr.lt;
    qk_time thr = st(&d)->min_rtt_ns / 4;
    lt->probe_queue_base_ns = 0;
    lt->rtt_recent_ns = st(&d)->min_rtt_ns + thr;
    assert_true(qk_bbr_lt_probe_queue_up(&d.cc));
    lt->probe_queue_base_ns = 20 * MS;
    assert_false(qk_bbr_lt_probe_queue_up(&d.cc));
    lt->rtt_recent_ns = st(&d)->min_rtt_ns + 20 * MS + thr - MS;
    assert_false(qk_bbr_lt_probe_queue_up(&d.cc));
    lt->rtt_recent_ns = st(&d)->min_rtt_ns + 20 * MS + thr;
    assert_true(qk_bbr_lt_probe_queue_up(&d.cc));
}

/* bbr-lt (bbr.c lt_probe_queued): a probe held at inflight_longterm, whose
 * full-bw count IsTimeToGoDown resets at every ACK, ends on the queue
 * signal above REFILL's queue all the same; without the queue it goes on. */
static void test_lt_probe_held_at_longterm_ends_on_queue(void **state)
{
    (void)state;
    drv d;
    lt_to_probe_up_with(&d, 300 * MDS);
    qk_bbr_lt *lt = &d.cc.u.bbr.lt;
    d.cc.u.bbr.probe_up_acked_per_inc = QK_BBR_INF; /* the bound does not grow */
    lt->probe_queue_base_ns = 0;
    /* A round with no queue: into the probe's feedback phase, still UP. */
    transmit(&d, d.cc.cwnd_bytes - MDS, true, false);
    ack_ex(&d, RATE, st(&d)->inflight_longterm, RTT, false, true);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_UP);
    assert_int_equal(st(&d)->ack_phase, QK_BBR_ACKS_PROBE_FEEDBACK);
    assert_int_equal(st(&d)->full_bw_count, 0);
    /* The queue signal (min_rtt / 4) while held at inflight_longterm. */
    lt->rtt_recent_ns = RTT + RTT / 4;
    d.cc.u.bbr.probe_up_acked_per_inc = QK_BBR_INF;
    transmit(&d, d.cc.cwnd_bytes - MDS, true, false);
    ack_ex(&d, RATE, st(&d)->inflight_longterm, RTT + RTT / 4, false, false);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_DOWN);
}

/* bbr-lt (bbr_lt.c queue_stood): after a round whose every ACK saw the
 * queue up by min_rtt / 16, the pacing rate is not loss compensated
 * (sending bw / (1 - p) into a full bottleneck loses p of it); after a
 * round without a queue it is again. A round that lost packets with the
 * queue signal up measures the buffer (buf_delay_ns, fair_share's alpha). */
static void test_lt_no_compensation_on_standing_queue(void **state)
{
    (void)state;
    drv d;
    lt_to_cruise(&d);
    qk_bbr_lt *lt = &d.cc.u.bbr.lt;
    lt->bg_lost_pkts = 10; /* p = 0.1 */
    lt->bg_total_pkts = 100;
    lt->bg_rounds = 5;
    for (int i = 0; i < 6; i++) ack_ex(&d, RATE, 100 * MDS, RTT + 20 * MS, false, true);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    assert_true(lt->queue_stood);
    uint64_t stood = d.cc.pacing_rate_bytes_per_s;
    assert_true(stood <= RATE);     /* the model's rate, at most */
    lt->round_lost_bytes = 2 * MDS; /* this round loses with the queue up */
    ack_ex(&d, RATE, 100 * MDS, RTT + 20 * MS, false, true);
    assert_int_equal(lt->buf_delay_ns, 20 * MS);
    for (int i = 0; i < 8; i++) ack_ex(&d, RATE, 100 * MDS, RTT, false, false);
    for (int i = 0; i < 2; i++) ack_ex(&d, RATE, 100 * MDS, RTT, false, true);
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    assert_false(lt->queue_stood);
    double p = qk_bbr_lt_background(&d.cc);
    assert_true(p > 0.01);
    /* compensated again: the same model's rate / (1 - p) */
    double ratio = (double)d.cc.pacing_rate_bytes_per_s / (double)stood;
    assert_true(ratio > 1 / (1 - p) - 0.001 && ratio < 1 / (1 - p) + 0.001);
}

/* bbr-lt (bbr_lt.c, learn_background's caller): a quiet round that lost
 * more than LT_P_MAX (25 %) of its packets teaches the background
 * nothing; one below it does. */
static void test_lt_background_skips_overflow_round(void **state)
{
    (void)state;
    drv d;
    lt_to_probe_bw(&d);
    ack_ex(&d, RATE, 100 * MDS, RTT, false, false);
    ack(&d, RATE, 100 * MDS); /* a whole CRUISE round: quiet from here */
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    qk_bbr_lt *lt = &d.cc.u.bbr.lt;
    uint32_t rounds = lt->bg_rounds;
    lt->round_lost_bytes = 40 * MDS; /* 40 of 140: 28.6 % */
    ack(&d, RATE, 100 * MDS);
    assert_int_equal(lt->bg_rounds, rounds);
    assert_true(qk_bbr_lt_background(&d.cc) < 0.01);
    lt->round_lost_bytes = 20 * MDS; /* 20 of 120 */
    ack(&d, RATE, 100 * MDS);
    assert_int_equal(lt->bg_rounds, rounds + 1);
    assert_true(qk_bbr_lt_background(&d.cc) > 0.01);
}

/* bbr-lt (bbr_lt.c fair_share): with a measured buffer alpha is a
 * quarter of it (buf_delay_ns x max_bw / 4) when that is below
 * LT_FAIR_PKTS, so that two flows' standing packets fit in it; the bound
 * grows by that times the gain (50 / 30 ms). */
static void test_lt_fair_alpha_fits_buffer(void **state)
{
    (void)state;
    drv d;
    lt_to_cruise(&d);
    qk_bbr_lt *lt = &d.cc.u.bbr.lt;
    lt->buf_delay_ns = 2 * MS; /* 25,000 B at 100 Mbit/s */
    lt->fair_cap_bytes = 90 * MDS;
    uint64_t f = 90 * MDS;
    lt_ack_until_bound_moves(&d);
    assert_int_equal(lt->fair_cap_bytes, f + 25000 / 4 * 50 / 30);
    lt->buf_delay_ns = 200 * MS; /* a deep buffer: alpha */
    f = lt->fair_cap_bytes;
    ack(&d, RATE, 80 * MDS);
    assert_int_equal(lt->fair_cap_bytes, f + LT_ALPHA_50MS);
}

/* bbr-lt (bbr_lt.c fair_gain): the gain min_rtt / 30 ms speeds the bound's
 * step but keeps Vegas's fixed point, this flow's packets in the queue =
 * 8 whatever its RTT; on a lossy path the gain is 1. One ACK a round, 100
 * packets over 50 ms: 4 ms of queue holds 8 of this flow's packets, so the
 * bound stands still. And a round with no queue sets a new bound. */
static void test_lt_fair_gain_keeps_fixed_point(void **state)
{
    (void)state;
    drv d;
    lt_to_cruise(&d);
    qk_bbr_lt *lt = &d.cc.u.bbr.lt;
    lt->fair_cap_bytes = 0;
    lt_ack_until_bound_moves(&d);
    assert_true(lt->fair_cap_bytes > 0); /* set by a round with no queue */
    lt->fair_cap_bytes = 90 * MDS;
    uint64_t f = 90 * MDS;
    lt_ack_until_bound_moves(&d);
    assert_int_equal(lt->fair_cap_bytes, f + LT_ALPHA_50MS); /* no queue */
    f = lt->fair_cap_bytes;
    ack_ex(&d, RATE, 80 * MDS, RTT + 4 * MS, false, true); /* 4 ms of queue */
    assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
    assert_int_equal(lt->fair_cap_bytes, f);
    /* A lossy path (background 1 %): gain 1, 8 packets without a queue. */
    lt_set_lossy(lt);
    assert_true(qk_bbr_lt_lossy(&d.cc));
    ack(&d, RATE, 80 * MDS);
    assert_int_equal(lt->fair_cap_bytes, f + 8 * MDS);
}

/* bbr-lt (bbr_lt.c fair_share): the bound is dropped above twice the
 * model's BDP only with room for two of its steps, so that a flow whose
 * BDP is less than one step keeps it and grows through it. */
static void test_lt_fair_bound_room_above_bdp(void **state)
{
    (void)state;
    drv d;
    lt_to_cruise(&d);
    qk_bbr_lt *lt = &d.cc.u.bbr.lt;
    uint64_t two_bdp = (uint64_t)(2.0 * (double)st(&d)->max_bw * (double)st(&d)->min_rtt_ns / 1e9);
    lt->fair_cap_bytes = two_bdp;
    uint64_t f = two_bdp;
    lt_ack_until_bound_moves(&d);
    assert_int_equal(lt->fair_cap_bytes, f + LT_ALPHA_50MS); /* above 2 BDP, kept */
    f = lt->fair_cap_bytes;
    ack(&d, RATE, 80 * MDS);
    assert_int_equal(lt->fair_cap_bytes, f + LT_ALPHA_50MS); /* 2 BDP + 2 steps */
    ack(&d, RATE, 80 * MDS);
    assert_int_equal(lt->fair_cap_bytes, 0); /* past the room: off */
}

/* bbr-lt (bbr_lt.c fair_share): no new bound after a round whose queue
 * was up at one ACK (10 ms, over min_rtt / 16) and down at another; one
 * after a round with no queue at all. */
static void test_lt_fair_no_fresh_bound_on_mixed_round(void **state)
{
    (void)state;
    drv d;
    lt_to_cruise(&d);
    qk_bbr_lt *lt = &d.cc.u.bbr.lt;
    lt->fair_cap_bytes = 0;
    for (int i = 0; i < 3; i++) {
        ack_ex(&d, RATE, 40 * MDS, RTT, false, false);           /* no queue ... */
        ack_ex(&d, RATE, 40 * MDS, RTT + 10 * MS, false, false); /* ... then 10 ms */
        ack_ex(&d, RATE, 40 * MDS, RTT, false, true);
        assert_int_equal(st(&d)->mode, QK_BBR_PROBE_BW_CRUISE);
        assert_int_equal(lt->fair_cap_bytes, 0);
    }
    lt_ack_until_bound_moves(&d);
    assert_true(lt->fair_cap_bytes > 0);
}

/* bbr-lt (bbr_lt.c fair_share): once set, the fair-share bound also moves
 * in rounds of a probe, so that the probe's own queued packets count
 * against the prober as against a flow in CRUISE; on a lossy path only
 * CRUISE rounds move it. One round of UP at 10 ms of queue with 100 packets
 * delivered over 50 ms: 20 of this flow's packets queued, above alpha (8):
 * the bound shrinks by its cap, 1/16. */
static void test_lt_fair_bound_moves_in_probe(void **state)
{
    (void)state;
    for (int lossy = 0; lossy < 2; lossy++) {
        drv d;
        lt_to_probe_up_with(&d, 300 * MDS);
        qk_bbr_lt *lt = &d.cc.u.bbr.lt;
        if (lossy) lt_set_lossy(lt);
        assert_true(qk_bbr_lt_lossy(&d.cc) == (lossy == 1));
        lt->fair_cap_bytes = 90 * MDS;
        ack_ex(&d, RATE, 100 * MDS, RTT + 10 * MS, false, true);
        assert_int_equal(lt->fair_cap_bytes, lossy ? 90 * MDS : 90 * MDS - 90 * MDS / 16);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_winmax),
        cmocka_unit_test(test_pipe_bytes),
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_init_pacing_from_first_rtt),
        cmocka_unit_test(test_max_bw_filter),
        cmocka_unit_test(test_startup_to_drain_to_probe_bw),
        cmocka_unit_test(test_drain_exits_on_time),
        cmocka_unit_test(test_probe_bw_cycle),
        cmocka_unit_test(test_reno_coexistence_probe_time),
        cmocka_unit_test(test_probe_up_loss_too_high),
        cmocka_unit_test(test_cruise_headroom),
        cmocka_unit_test(test_probe_up_cwnd_limited),
        cmocka_unit_test(test_precautionary_probe),
        cmocka_unit_test(test_short_term_bounds),
        cmocka_unit_test(test_loss_gate),
        cmocka_unit_test(test_probe_rtt),
        cmocka_unit_test(test_startup_high_loss),
        cmocka_unit_test(test_startup_high_loss_plateau),
        cmocka_unit_test(test_startup_losses_once),
        cmocka_unit_test(test_recovery_restores_cwnd),
        cmocka_unit_test(test_persistent_congestion),
        cmocka_unit_test(test_idle_restart),
        cmocka_unit_test(test_ecn_ends_probe),
        cmocka_unit_test(test_send_quantum),
        cmocka_unit_test(test_lt_fair_bound_in_down),
        cmocka_unit_test(test_lt_fair_bound_lifts_longterm),
        cmocka_unit_test(test_lt_probe_queue_base),
        cmocka_unit_test(test_lt_probe_held_at_longterm_ends_on_queue),
        cmocka_unit_test(test_lt_no_compensation_on_standing_queue),
        cmocka_unit_test(test_lt_background_skips_overflow_round),
        cmocka_unit_test(test_lt_fair_alpha_fits_buffer),
        cmocka_unit_test(test_lt_fair_gain_keeps_fixed_point),
        cmocka_unit_test(test_lt_fair_bound_room_above_bdp),
        cmocka_unit_test(test_lt_fair_no_fresh_bound_on_mixed_round),
        cmocka_unit_test(test_lt_fair_bound_moves_in_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
