/* SPDX-License-Identifier: MIT */
/* ACK-frequency sender policy (draft-ietf-quic-ack-frequency-12 §4, §7, §8.1, §9). */
#include "qk_test.h"
#include "transport/recovery/ackfreq.h"

#define MS QK_NS_PER_MS

/* A fresh policy with cfg, talking to a peer whose min_ack_delay is 1 ms. */
static void start_policy(qk_ackfreq *a, const qk_ackfreq_config *cfg)
{
    qk_ackfreq_init(a, cfg);
    qk_ackfreq_set_peer(a, true, 1 * MS);
}

/* The policy sees a cwnd_bytes window of mds_bytes datagrams in congestion
 * avoidance at srtt_ns (packet threshold 3) at now; it must ask: the request
 * is sent at now and returned. */
static qk_ackfreq_req ask_and_send(qk_ackfreq *a, uint64_t cwnd_bytes, uint64_t mds_bytes,
                                   qk_time srtt_ns, qk_time now)
{
    qk_ackfreq_update(a, cwnd_bytes, mds_bytes, srtt_ns, false, 3, now);
    qk_ackfreq_req r;
    assert_true(qk_ackfreq_poll(a, &r));
    qk_ackfreq_on_sent(a, &r, now);
    return r;
}

static void test_never_without_peer_support(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_AUTO};
    qk_ackfreq_init(&a, &cfg);
    qk_ackfreq_req r;
    qk_ackfreq_update(&a, 100 * 1200, 1200, 40 * MS, false, 3, 0);
    assert_false(qk_ackfreq_poll(&a, &r)); /* §3: peer did not advertise min_ack_delay */
    qk_ackfreq_set_peer(&a, true, 1 * MS);
    cfg.mode = QK_ACKFREQ_OFF;
    start_policy(&a, &cfg);
    qk_ackfreq_update(&a, 100 * 1200, 1200, 40 * MS, false, 3, 0);
    assert_false(qk_ackfreq_poll(&a, &r)); /* mode off */
}

static void test_fixed(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_FIXED, .threshold = 10, .max_delay_ns = 5 * MS};
    start_policy(&a, &cfg);
    qk_ackfreq_update(&a, 100 * 1200, 1200, 40 * MS, false, 3, 0);
    qk_ackfreq_req r;
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.seq, 0);
    assert_int_equal(r.threshold, 10);
    assert_int_equal(r.max_delay_ns, 5 * MS);
    assert_int_equal(r.reordering_threshold, 3); /* §9: the loss packet threshold */
    qk_ackfreq_on_sent(&a, &r, 0);
    qk_ackfreq_update(&a, 200 * 1200, 1200, 40 * MS, false, 3, 100 * MS);
    assert_false(qk_ackfreq_poll(&a, &r)); /* fixed values did not change */
    /* Lost: re-sent with a new sequence number. */
    qk_ackfreq_on_lost(&a, 0);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.seq, 1);
}

/* The threshold and delay auto derives (AUTO_THRESHOLD, and AUTO on a path
 * with a standing queue; test_auto_burst_end covers AUTO without one). */
static void test_auto_derivation(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_AUTO_THRESHOLD};
    qk_ackfreq_init(&a, &cfg);
    qk_ackfreq_set_peer(&a, true, 2 * MS);
    qk_ackfreq_req r;
    /* Slow start, initial window (10 packets): the RFC 9000 cadence. */
    qk_ackfreq_update(&a, 10 * 1200, 1200, 40 * MS, true, 3, 0);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.threshold, 1);
    /* Slow start, 40 packets: ~8 ACKs per cwnd (40 / 8 = 5). */
    qk_ackfreq_update(&a, 40 * 1200, 1200, 40 * MS, true, 3, 0);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.threshold, 5);
    assert_int_equal(r.max_delay_ns, 10 * MS); /* srtt / 4 <= srtt (§8.1) */
    qk_ackfreq_on_sent(&a, &r, 0);
    /* Congestion avoidance with 800 packets per cwnd: 800/4 = 200, capped at 16. */
    qk_ackfreq_update(&a, 800 * 1200, 1200, 40 * MS, false, 3, 10 * MS);
    assert_false(qk_ackfreq_poll(&a, &r)); /* less than one RTT since the last frame */
    qk_ackfreq_update(&a, 800 * 1200, 1200, 40 * MS, false, 3, 50 * MS);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.threshold, 16);
    assert_true(r.threshold <= 800); /* §8.1: at most the packets per cwnd */
    qk_ackfreq_on_sent(&a, &r, 50 * MS);
    /* A 10% change is not relevant (< 20%). */
    qk_ackfreq_update(&a, 800 * 1200, 1200, 44 * MS, false, 3, 200 * MS);
    assert_false(qk_ackfreq_poll(&a, &r));
    /* Tiny RTT: the delay never goes below the peer's min_ack_delay. */
    qk_ackfreq_update(&a, 800 * 1200, 1200, 1 * MS, false, 3, 400 * MS);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.max_delay_ns, 2 * MS);
}

/* The first request of a fresh policy (peer min_ack_delay 1 ms) for a
 * cwnd_pkts-packet window in congestion avoidance at srtt 40 ms. */
static qk_ackfreq_req first_request(qk_ackfreq *a, qk_ackfreq_mode mode, uint64_t cap,
                                    uint64_t cwnd_pkts)
{
    qk_ackfreq_config cfg = {.mode = mode, .max_threshold = cap};
    qk_ackfreq_init(a, &cfg);
    qk_ackfreq_set_peer(a, true, 1 * MS);
    qk_ackfreq_update(a, cwnd_pkts * 1452, 1452, 40 * MS, false, 3, 0);
    qk_ackfreq_req r;
    assert_true(qk_ackfreq_poll(a, &r));
    return r;
}

/* Congestion avoidance below the cap: cwnd / 4 (44 packets -> 11). */
static void test_auto_below_cap(void **state)
{
    (void)state;
    qk_ackfreq a;
    assert_int_equal(first_request(&a, QK_ACKFREQ_AUTO_THRESHOLD, 0, 44).threshold, 11);
    /* A configured cap replaces the default. */
    assert_int_equal(first_request(&a, QK_ACKFREQ_AUTO_THRESHOLD, 5, 44).threshold, 5);
    /* AUTO without a standing queue: ACK points every T = 11 packets, the
     * peer's threshold a backstop at min(2T, cap 16) = 16; with cap 5,
     * T <= 3/4 x 5 = 3 and the backstop min(6, 5) = 5. */
    assert_int_equal(first_request(&a, QK_ACKFREQ_AUTO, 0, 44).threshold, 16);
    assert_int_equal(a.mark_every, 11);
    assert_int_equal(first_request(&a, QK_ACKFREQ_AUTO, 5, 44).threshold, 5);
    assert_int_equal(a.mark_every, 3);
}

/* The window allowance for packets the peer holds under our threshold:
 * (T - 1) / 2 datagrams, T = the threshold on the wire, at most cwnd / 8;
 * none before a request was sent or with T <= 1 (RFC 9000 cadence). */
static void test_cwnd_allowance(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_FIXED, .threshold = 11, .max_delay_ns = 5 * MS};
    start_policy(&a, &cfg);
    assert_int_equal(qk_ackfreq_cwnd_allowance(&a, 100 * 1452, 1452), 0);
    qk_ackfreq_update(&a, 100 * 1452, 1452, 40 * MS, false, 3, 0);
    qk_ackfreq_req r;
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(qk_ackfreq_cwnd_allowance(&a, 100 * 1452, 1452), 0); /* not sent yet */
    qk_ackfreq_on_sent(&a, &r, 0);
    /* (11 - 1) / 2 = 5 datagrams. */
    assert_int_equal(qk_ackfreq_cwnd_allowance(&a, 100 * 1452, 1452), 5 * 1452);
    /* A collapsed window (2 datagrams) gets at most cwnd / 8, not 5 more. */
    assert_int_equal(qk_ackfreq_cwnd_allowance(&a, 2 * 1452, 1452), 2 * 1452 / 8);
    cfg.threshold = 1;
    start_policy(&a, &cfg);
    r = ask_and_send(&a, 100 * 1452, 1452, 40 * MS, 0);
    assert_int_equal(qk_ackfreq_cwnd_allowance(&a, 100 * 1452, 1452), 0);
}

/* After a reduction that a full queue caused (srtt > 9/8 min_rtt at the
 * event), AUTO waits for the queue to drain, then asks for RFC 9000's
 * cadence (threshold 1) until srtt shows a queue of more than 1/16 of
 * min_rtt again; a reduction without a queue (random loss) changes nothing. */
static void test_auto_refill(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_AUTO};
    start_policy(&a, &cfg);
    qk_ackfreq_set_min_rtt(&a, 40 * MS);
    qk_ackfreq_req r;
    qk_time now = 1000 * MS;
    /* 344-packet window, no queue: T = 12, backstop 16. */
    qk_ackfreq_on_congestion(&a, 0, 40 * MS);
    r = ask_and_send(&a, 344 * 1452, 1452, 40 * MS, now);
    assert_int_equal(r.threshold, 16);
    /* A random loss without a queue: nothing changes. */
    now += 100 * MS;
    qk_ackfreq_on_congestion(&a, 1, 40 * MS);
    assert_int_equal(a.refill, QK_ACKFREQ_REFILL_NONE);
    qk_ackfreq_update(&a, 172 * 1452, 1452, 40 * MS, false, 3, now);
    assert_false(qk_ackfreq_poll(&a, &r)); /* T = 172 / 4 = 43: still 16 on the wire */
    assert_int_equal(a.mark_every, 12);
    /* A loss while the queue stood at 40 ms (srtt 80 ms): the threshold
     * rules (no burst mode) while the queue drains... */
    now += 100 * MS;
    qk_ackfreq_on_congestion(&a, 2, 80 * MS);
    assert_int_equal(a.refill, QK_ACKFREQ_REFILL_DRAIN);
    qk_ackfreq_update(&a, 344 * 1452, 1452, 80 * MS, false, 3, now);
    assert_false(a.burst_mode);
    /* ... srtt 44 ms (> 17/16 x 40): still draining ... */
    qk_ackfreq_on_congestion(&a, 2, 44 * MS);
    assert_int_equal(a.refill, QK_ACKFREQ_REFILL_DRAIN);
    /* ... drained (42 ms <= 42.5): RFC 9000's cadence, sent at once (a
     * relevant change, more than an RTT since the last frame). */
    now += 100 * MS;
    qk_ackfreq_on_congestion(&a, 2, 42 * MS);
    assert_int_equal(a.refill, QK_ACKFREQ_REFILL_ON);
    r = ask_and_send(&a, 344 * 1452, 1452, 42 * MS, now);
    assert_int_equal(r.threshold, 1);
    assert_int_equal(qk_ackfreq_pacer_burst_pkts(&a), 0);
    /* The window's growth builds a queue past 1/16 of min_rtt: back to T. */
    now += 500 * MS;
    qk_ackfreq_on_congestion(&a, 2, 43 * MS);
    assert_int_equal(a.refill, QK_ACKFREQ_REFILL_NONE);
    qk_ackfreq_update(&a, 360 * 1452, 1452, 43 * MS, false, 3, now);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.threshold, 16);
    /* AUTO_THRESHOLD never refills at RFC 9000's cadence. */
    cfg.mode = QK_ACKFREQ_AUTO_THRESHOLD;
    start_policy(&a, &cfg);
    qk_ackfreq_set_min_rtt(&a, 40 * MS);
    qk_ackfreq_on_congestion(&a, 1, 80 * MS);
    qk_ackfreq_on_congestion(&a, 1, 40 * MS);
    qk_ackfreq_update(&a, 344 * 1452, 1452, 40 * MS, false, 3, now);
    assert_true(qk_ackfreq_poll(&a, &r));
    assert_int_equal(r.threshold, 16);
}

static void test_pto_delay(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_FIXED, .threshold = 4, .max_delay_ns = 50 * MS};
    start_policy(&a, &cfg);
    assert_int_equal(qk_ackfreq_pto_delay(&a, 25 * MS), 25 * MS);
    ask_and_send(&a, 100 * 1200, 1200, 40 * MS, 0);
    /* §7: in flight requested delays count for PTO. */
    assert_int_equal(qk_ackfreq_pto_delay(&a, 25 * MS), 50 * MS);
}

/* ack-frequency-12 §5, §8: when IMMEDIATE_ACK goes into a 1-RTT packet. */
/* The packet that fills the congestion window asks for the ACK at once
 * (ack-frequency-12 §8.1: a window-limited sender relies on ACKs), at most
 * once per T - 1 data packets; never before a threshold > 1 is in effect,
 * never for an application-limited or non-data packet. */
/* n data packets that must carry no IMMEDIATE_ACK, each counted as sent. */
static void send_unmarked(qk_ackfreq *a, const qk_ackfreq_pkt *pk, int n)
{
    for (int i = 0; i < n; i++) {
        uint32_t why = qk_ackfreq_want_immediate(a, pk);
        assert_int_equal(why, 0);
        qk_ackfreq_on_data_sent(a, why);
    }
}

/* pk asks for IMMEDIATE_ACK (CWND_FULL) now. The rule is for data packets
 * with more behind them only (an application-limited one is IDLE_ENTER's
 * job); once one asked, the next n do not, the one after does. */
static void check_cwnd_full_rule(qk_ackfreq *a, qk_ackfreq_pkt *pk, int n)
{
    pk->more_data = false;
    assert_int_equal(qk_ackfreq_want_immediate(a, pk) & QK_IMM_CWND_FULL, 0);
    pk->more_data = true;
    pk->data = false;
    assert_int_equal(qk_ackfreq_want_immediate(a, pk), 0);
    pk->data = true;
    qk_ackfreq_on_data_sent(a, QK_IMM_CWND_FULL);
    send_unmarked(a, pk, n);
    assert_int_equal(qk_ackfreq_want_immediate(a, pk), QK_IMM_CWND_FULL);
}

static void test_cwnd_full(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_FIXED, .threshold = 10, .max_delay_ns = 20 * MS};
    start_policy(&a, &cfg);
    qk_ackfreq_pkt pk = {.data = true,
                         .more_data = true,
                         .ae_in_flight = true,
                         .cwnd_full = true,
                         .srtt_ns = 40 * MS,
                         .now = 1000 * MS};
    qk_ackfreq_on_ack_received(&a, 1000 * MS);
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), 0); /* nothing asked yet */
    ask_and_send(&a, 100 * 1200, 1200, 40 * MS, 1000 * MS);
    /* 8 data packets since (none filled the window): the 9th = T - 1 may ask. */
    pk.cwnd_full = false;
    send_unmarked(&a, &pk, 8);
    pk.cwnd_full = true;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_CWND_FULL);
    /* Right after one: the next window-filling packet waits for 9 more. */
    check_cwnd_full_rule(&a, &pk, 8);
}

/* AUTO places the ACK points at burst ends: the last data packet after
 * which neither the window nor the pacer lets another go at once
 * (burst_left == 0) asks for IMMEDIATE_ACK once at least T = mark_every data
 * packets went since the last one; a shorter burst rides with the next; a
 * packet inside a burst never asks. */
static void test_auto_burst_end(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_AUTO};
    start_policy(&a, &cfg);
    qk_ackfreq_set_min_rtt(&a, 38 * MS); /* srtt 40 ms: no standing queue */
    qk_ackfreq_pkt pk = {.data = true,
                         .more_data = true,
                         .ae_in_flight = true,
                         .burst_left = 0,
                         .srtt_ns = 40 * MS,
                         .now = 1000 * MS};
    qk_ackfreq_on_ack_received(&a, 1000 * MS);
    /* Nothing asked yet: the peer acknowledges per RFC 9000. */
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), 0);
    assert_int_equal(qk_ackfreq_pacer_burst_pkts(&a), 0);
    /* 48-packet window in congestion avoidance: T = 12 (at most 3/4 of the
     * cap 16), peer threshold min(2T, 16) = 16. */
    qk_ackfreq_req r = ask_and_send(&a, 48 * 1452, 1452, 40 * MS, 1000 * MS);
    assert_int_equal(a.mark_every, 12);
    assert_int_equal(r.threshold, 16);
    /* The pacer lets 2 x 16 go back to back. */
    assert_int_equal(qk_ackfreq_pacer_burst_pkts(&a), 32);
    /* A burst of 5 (4 with more behind, then the last): no request. */
    for (int i = 0; i < 5; i++) {
        pk.burst_left = 4 - (uint64_t)i;
        uint32_t why = qk_ackfreq_want_immediate(&a, &pk);
        assert_int_equal(why & QK_IMM_CWND_FULL, 0);
        qk_ackfreq_on_data_sent(&a, why);
    }
    /* The next burst of 10: its packets 1..9 have more behind them; its
     * last is the 15th since the last ACK point (>= 12): it asks. */
    for (int i = 0; i < 9; i++) {
        pk.burst_left = 9 - (uint64_t)i;
        uint32_t why = qk_ackfreq_want_immediate(&a, &pk);
        assert_int_equal(why & QK_IMM_CWND_FULL, 0);
        qk_ackfreq_on_data_sent(&a, why);
    }
    pk.burst_left = 0;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_CWND_FULL);
    /* Window full (cwnd_full) counts as a burst end too. */
    pk.cwnd_full = true;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_CWND_FULL);
    pk.cwnd_full = false;
    /* Right after one: 11 burst ends in a row do not ask, the 12th does. */
    check_cwnd_full_rule(&a, &pk, 11);
    /* A standing queue (srtt 50 ms > 9/8 x 38 ms): the threshold rules, threshold
     * T = 12 on the wire, the default pacer, burst ends are no reason. */
    r = ask_and_send(&a, 48 * 1452, 1452, 50 * MS, 2000 * MS);
    assert_int_equal(r.threshold, 12);
    assert_int_equal(qk_ackfreq_pacer_burst_pkts(&a), 0);
    pk.now = 2000 * MS;
    qk_ackfreq_on_ack_received(&a, 2000 * MS);
    qk_ackfreq_on_data_sent(&a, QK_IMM_CWND_FULL);
    send_unmarked(&a, &pk, 20);
    /* ... except a full window, once per T - 1 = 11. */
    pk.cwnd_full = true;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_CWND_FULL);
    pk.cwnd_full = false;
    /* AUTO_THRESHOLD never places burst-end ACK points. */
    cfg = (qk_ackfreq_config){.mode = QK_ACKFREQ_AUTO_THRESHOLD};
    start_policy(&a, &cfg);
    r = ask_and_send(&a, 48 * 1452, 1452, 40 * MS, 1000 * MS);
    assert_int_equal(r.threshold, 12);
    assert_int_equal(qk_ackfreq_pacer_burst_pkts(&a), 0);
    pk.now = 1000 * MS;
    qk_ackfreq_on_ack_received(&a, 1000 * MS);
    send_unmarked(&a, &pk, 20);
    /* FIXED keeps the window-full rule only: an empty pacer is no reason. */
    cfg = (qk_ackfreq_config){.mode = QK_ACKFREQ_FIXED, .threshold = 10, .max_delay_ns = 20 * MS};
    start_policy(&a, &cfg);
    r = ask_and_send(&a, 48 * 1452, 1452, 40 * MS, 1000 * MS);
    assert_int_equal(qk_ackfreq_pacer_burst_pkts(&a), 0);
    send_unmarked(&a, &pk, 20);
}

/* An ECN-scalable sender (cfg.paced: DCTCP, Prague) never gets AUTO's burst
 * mode: its step-marking bottleneck (RFC 8257 §3.1, RFC 9332's L queue)
 * marks a 2T-packet burst. The same no-queue path and window as
 * test_auto_burst_end: the peer's threshold is T = 12 (not 2T = 16), the
 * pacer keeps its own burst, and an empty pacer is no ACK point. */
static void test_auto_paced(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_AUTO, .paced = true};
    qk_ackfreq_init(&a, &cfg);
    qk_ackfreq_set_peer(&a, true, 1 * MS);
    qk_ackfreq_set_min_rtt(&a, 38 * MS); /* srtt 40 ms: no standing queue */
    qk_ackfreq_update(&a, 48 * 1452, 1452, 40 * MS, false, 3, 1000 * MS);
    qk_ackfreq_req r;
    assert_true(qk_ackfreq_poll(&a, &r));
    qk_ackfreq_on_sent(&a, &r, 1000 * MS);
    assert_false(a.burst_mode);
    assert_int_equal(r.threshold, 12);
    assert_int_equal(qk_ackfreq_pacer_burst_pkts(&a), 0);
    qk_ackfreq_pkt pk = {.data = true,
                         .more_data = true,
                         .ae_in_flight = true,
                         .burst_left = 0,
                         .srtt_ns = 40 * MS,
                         .now = 1000 * MS};
    qk_ackfreq_on_ack_received(&a, 1000 * MS);
    send_unmarked(&a, &pk, 20);
    /* The window-full rule stays (once per T - 1 packets). */
    pk.cwnd_full = true;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_CWND_FULL);
}

static void test_immediate_ack_rules(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_FIXED, .threshold = 10, .max_delay_ns = 20 * MS};
    qk_ackfreq_init(&a, &cfg);
    qk_ackfreq_pkt pk = {.probe = true, .srtt_ns = 40 * MS, .now = 0};
    /* §3: never to a peer without min_ack_delay, not even in a probe. */
    assert_false(qk_ackfreq_immediate_allowed(&a));
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), 0);
    qk_ackfreq_request_immediate(&a);
    assert_false(a.imm_requested);
    qk_ackfreq_set_peer(&a, true, 1 * MS);
    /* Probes and explicit requests: whenever allowed. */
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_PROBE);
    qk_ackfreq_request_immediate(&a);
    pk.probe = false;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_REQUESTED);
    qk_ackfreq_on_immediate_sent(&a, QK_IMM_REQUESTED, 0);
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), 0);
    /* Before any ACK_FREQUENCY was sent the peer acks per RFC 9000: no
     * idle/no-ACK IMMEDIATE_ACKs. */
    pk.data = true;
    pk.ae_in_flight = true;
    pk.now = 500 * MS;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), 0);
    ask_and_send(&a, 100 * 1200, 1200, 40 * MS, 1000 * MS);
    /* Bulk, ACKs flowing: nothing. */
    pk = (qk_ackfreq_pkt){.data = true,
                          .more_data = true,
                          .ae_in_flight = true,
                          .srtt_ns = 40 * MS,
                          .now = 1010 * MS};
    qk_ackfreq_on_ack_received(&a, 1005 * MS);
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), 0);
    /* Last data packet before going application-limited. */
    pk.more_data = false;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_IDLE_ENTER);
    qk_ackfreq_on_immediate_sent(&a, QK_IMM_IDLE_ENTER, 1010 * MS);
    /* The first data packet after it. */
    pk.now = 1020 * MS;
    pk.more_data = true;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_IDLE_EXIT);
    qk_ackfreq_on_immediate_sent(&a, QK_IMM_IDLE_EXIT, 1020 * MS);
    /* Going idle again within the same RTT: rate-limited. */
    pk.more_data = false;
    pk.now = 1030 * MS;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), 0);
    /* No ACK for more than an RTT (1005 -> 1051 ms) with packets out, and
     * more than an RTT since the last rate-limited IMMEDIATE_ACK (1010). */
    pk.more_data = true;
    pk.now = 1051 * MS;
    qk_ackfreq_on_ack_received(&a, 1005 * MS);
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_NO_ACK);
}

static void test_immediate_no_ack_needs_inflight(void **state)
{
    (void)state;
    qk_ackfreq a;
    qk_ackfreq_config cfg = {.mode = QK_ACKFREQ_AUTO};
    start_policy(&a, &cfg);
    ask_and_send(&a, 100 * 1200, 1200, 40 * MS, 0);
    qk_ackfreq_pkt pk = {.more_data = true, .srtt_ns = 40 * MS, .now = 100 * MS};
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), 0); /* nothing outstanding */
    pk.ae_in_flight = true;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_NO_ACK);
    qk_ackfreq_on_immediate_sent(&a, QK_IMM_NO_ACK, 100 * MS);
    pk.now = 120 * MS; /* at most once per RTT */
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), 0);
    pk.now = 141 * MS;
    assert_int_equal(qk_ackfreq_want_immediate(&a, &pk), QK_IMM_NO_ACK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_never_without_peer_support),
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_auto_derivation),
        cmocka_unit_test(test_auto_below_cap),
        cmocka_unit_test(test_cwnd_allowance),
        cmocka_unit_test(test_cwnd_full),
        cmocka_unit_test(test_auto_burst_end),
        cmocka_unit_test(test_auto_refill),
        cmocka_unit_test(test_pto_delay),
        cmocka_unit_test(test_auto_paced),
        cmocka_unit_test(test_immediate_ack_rules),
        cmocka_unit_test(test_immediate_no_ack_needs_inflight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
