/* SPDX-License-Identifier: MIT */
/* Loss recovery (RFC 9002 §6, Appendix A) with a recording congestion
 * controller double and a recording sink. */
#include "qk_test.h"
#include "transport/recovery/recovery.h"

#include <stdlib.h>
#include <string.h>

#define MS QK_NS_PER_MS

/* ---- test doubles ---- */

typedef struct rec_cc {
    qk_cc cc;
    uint64_t sent_pkts, sent_bytes, acked_pkts, acked_bytes;
    uint64_t congestion, congestion_ecn, ecn_calls, ecn_ce, persistent, spurious;
    qk_time last_congestion_sent;
} rec_cc;

static void cc_sent(qk_cc *cc, uint64_t bytes, qk_time now)
{
    (void)now;
    rec_cc *r = (rec_cc *)cc;
    r->sent_pkts++;
    r->sent_bytes += bytes;
}
static void cc_acked(qk_cc *cc, const qk_cc_ack *a)
{
    rec_cc *r = (rec_cc *)cc;
    r->acked_pkts++;
    r->acked_bytes += a->bytes;
}
static void cc_event(qk_cc *cc, qk_time sent, bool is_ecn, qk_time now)
{
    (void)now;
    rec_cc *r = (rec_cc *)cc;
    if (is_ecn)
        r->congestion_ecn++;
    else
        r->congestion++;
    r->last_congestion_sent = sent;
    cc->congestion_events++; /* a response: recovery.c starts an undo episode on it */
}
static void cc_ecn(qk_cc *cc, uint64_t ce, uint64_t bytes, qk_time now)
{
    (void)bytes;
    (void)now;
    rec_cc *r = (rec_cc *)cc;
    r->ecn_calls++;
    r->ecn_ce += ce;
}
static void cc_pc(qk_cc *cc, qk_time now)
{
    (void)now;
    ((rec_cc *)cc)->persistent++;
}
static void cc_spurious(qk_cc *cc, qk_time now)
{
    (void)now;
    ((rec_cc *)cc)->spurious++;
}
static const qk_cc_ops rec_ops = {.name = "recorder",
                                  .on_packet_sent = cc_sent,
                                  .on_packet_acked = cc_acked,
                                  .on_congestion_event = cc_event,
                                  .on_ecn = cc_ecn,
                                  .on_persistent_congestion = cc_pc,
                                  .on_spurious_loss = cc_spurious};

#define MAX_LOG 256
typedef struct sink_log {
    uint64_t acked, lost;
    uint64_t lost_pns[MAX_LOG];
    size_t n_lost;
    uint64_t acked_pns[MAX_LOG];
    size_t n_acked;
    int bad_frames;
} sink_log;

/* Each test packet carries one STREAM frame: id 4, offset pn*1000, len 1000. */
static void check_frames(sink_log *l, const qk_sent_packet *p, const qk_sent_frame *f, size_t n)
{
    if (n != 1 || f[0].kind != QK_SF_STREAM || f[0].id != 4 || f[0].offset != p->pn * 1000 ||
        f[0].length != 1000)
        l->bad_frames++;
}
static void sink_acked(void *ctx, qk_pn_space sp, const qk_sent_packet *p, const qk_sent_frame *f,
                       size_t n)
{
    (void)sp;
    sink_log *l = ctx;
    l->acked++;
    if (l->n_acked < MAX_LOG) l->acked_pns[l->n_acked++] = p->pn;
    check_frames(l, p, f, n);
}
static void sink_lost(void *ctx, qk_pn_space sp, const qk_sent_packet *p, const qk_sent_frame *f,
                      size_t n)
{
    (void)sp;
    sink_log *l = ctx;
    l->lost++;
    if (l->n_lost < MAX_LOG) l->lost_pns[l->n_lost++] = p->pn;
    check_frames(l, p, f, n);
}

typedef struct fx {
    qk_recovery rec;
    qk_rtt rtt;
    rec_cc cc;
    sink_log log;
} fx;

static fx *setup(bool server, bool confirmed)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->cc.cc.ops = &rec_ops;
    f->cc.cc.max_datagram_bytes = 1200;
    qk_rtt_init(&f->rtt, 0);
    qk_recovery_config cfg = {.is_server = server};
    qk_recovery_sink sink = {.ctx = &f->log, .on_acked = sink_acked, .on_lost = sink_lost};
    assert_int_equal(qk_recovery_init(&f->rec, &cfg, &f->rtt, &f->cc.cc, &sink), 0);
    if (confirmed) qk_recovery_set_handshake_confirmed(&f->rec, 0);
    return f;
}

static void teardown(fx *f)
{
    qk_recovery_free(&f->rec);
    free(f);
}

static int send_pkt(fx *f, qk_pn_space sp, uint64_t pn, qk_time now, uint8_t ecn)
{
    qk_sent_packet p = {
        .pn = pn, .size_bytes = 1200, .ack_eliciting = true, .in_flight = true, .ecn = ecn};
    qk_sent_frame fr = {.kind = QK_SF_STREAM, .id = 4, .offset = pn * 1000, .length = 1000};
    return qk_recovery_on_packet_sent(&f->rec, sp, &p, &fr, 1, now);
}

static int ack1(fx *f, qk_pn_space sp, uint64_t lo, uint64_t hi, qk_time now)
{
    qk_ack_range r = {lo, hi};
    qk_ack_received a = {.ranges = &r, .n_ranges = 1};
    return qk_recovery_on_ack_received(&f->rec, sp, &a, now);
}

/* ---- tests ---- */

static void test_ack_basic(void **state)
{
    (void)state;
    fx *f = setup(true, true);
    for (uint64_t pn = 0; pn < 5; pn++) assert_int_equal(send_pkt(f, QK_PN_SPACE_APP, pn, 0, 0), 0);
    assert_int_equal(qk_recovery_bytes_in_flight(&f->rec), 6000);
    assert_int_equal(f->cc.sent_pkts, 5);
    assert_non_null(qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 3));
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 0, 4, 100 * MS), 5);
    assert_int_equal(qk_recovery_bytes_in_flight(&f->rec), 0);
    assert_int_equal(f->cc.acked_pkts, 5);
    assert_int_equal(f->log.acked, 5);
    assert_int_equal(f->log.bad_frames, 0);
    assert_int_equal(f->rtt.latest_rtt_ns, 100 * MS);
    assert_int_equal(f->rtt.smoothed_rtt_ns, 100 * MS);
    assert_null(qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 3));
    /* Nothing in flight and the peer validated us: no timer. */
    assert_int_equal(qk_recovery_next_timeout(&f->rec), QK_TIME_INFINITE);
    /* A repeated ACK acknowledges nothing new and takes no RTT sample. */
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 0, 4, 300 * MS), 0);
    assert_int_equal(f->rtt.samples, 1);
    assert_int_equal(f->rec.stats.packets_acked, 5);
    teardown(f);
}

static void test_rtt_sample_rules(void **state)
{
    (void)state;
    fx *f = setup(true, true);
    send_pkt(f, QK_PN_SPACE_APP, 0, 0, 0);
    send_pkt(f, QK_PN_SPACE_APP, 1, 10 * MS, 0);
    /* Largest (1) not newly acked -> no sample from acking 0 alone. */
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 0, 0, 50 * MS), 1);
    assert_int_equal(f->rtt.samples, 1); /* sample from pn 0 = largest of that ACK */
    assert_int_equal(f->rtt.latest_rtt_ns, 50 * MS);
    /* ack_delay is applied in Application space (capped at 25 ms). */
    qk_ack_range r = {0, 1};
    qk_ack_received a = {.ranges = &r, .n_ranges = 1, .ack_delay_ns = 40 * MS};
    assert_int_equal(qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 90 * MS), 1);
    /* latest 80, min 50, delay capped 25: adjusted 55; srtt = (350+55)/8 */
    assert_int_equal(f->rtt.latest_rtt_ns, 80 * MS);
    assert_int_equal(f->rtt.smoothed_rtt_ns, (7 * 50 * MS + 55 * MS) / 8);
    /* Non-ack-eliciting packets alone give no sample. */
    qk_sent_packet p = {.pn = 2, .size_bytes = 50, .ack_eliciting = false, .in_flight = false};
    assert_int_equal(qk_recovery_on_packet_sent(&f->rec, QK_PN_SPACE_APP, &p, NULL, 0, 100 * MS),
                     0);
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 2, 2, 200 * MS), 1);
    assert_int_equal(f->rtt.samples, 2);
    assert_int_equal(f->cc.acked_pkts, 2); /* not in flight: cc not told */
    teardown(f);
}

static void test_packet_and_time_threshold(void **state)
{
    (void)state;
    fx *f = setup(true, true);
    for (uint64_t pn = 0; pn < 5; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, pn * MS, 0);
    /* ACK of 4 only at 100 ms: pn 0,1 are >= 3 below -> lost (RFC 9002 §6.1.1). */
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 4, 4, 100 * MS), 1);
    assert_int_equal(f->log.lost, 2);
    assert_int_equal(f->log.lost_pns[0], 0);
    assert_int_equal(f->log.lost_pns[1], 1);
    assert_int_equal(f->log.bad_frames, 0);
    assert_int_equal(f->cc.congestion, 1); /* one event per ACK */
    assert_int_equal(f->cc.last_congestion_sent, 1 * MS);
    assert_int_equal(qk_recovery_bytes_in_flight(&f->rec), 2400);
    /* RTT 96 ms -> loss delay 9/8*96 = 108 ms; pn 2 (sent 2 ms) at 110 ms. */
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 110 * MS);
    qk_recovery_timeout to;
    assert_int_equal(qk_recovery_on_timeout(&f->rec, 109 * MS, &to), 0);
    assert_int_equal(to.kind, QK_RECOVERY_TIMEOUT_NONE);
    assert_int_equal(qk_recovery_on_timeout(&f->rec, 110 * MS, &to), 0);
    assert_int_equal(to.kind, QK_RECOVERY_TIMEOUT_LOSS);
    assert_int_equal(to.space, QK_PN_SPACE_APP);
    assert_int_equal(f->log.lost, 3);
    assert_int_equal(f->log.lost_pns[2], 2);
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 111 * MS);
    assert_int_equal(qk_recovery_on_timeout(&f->rec, 111 * MS, &to), 0);
    assert_int_equal(f->log.lost, 4);
    assert_int_equal(f->cc.congestion, 3);
    assert_int_equal(qk_recovery_bytes_in_flight(&f->rec), 0);
    assert_int_equal(f->rec.stats.packets_lost, 4);
    teardown(f);
}

static void test_configurable_packet_threshold(void **state)
{
    (void)state;
    fx *f = setup(true, true);
    qk_recovery_set_packet_threshold(&f->rec, 5);
    for (uint64_t pn = 0; pn < 8; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, 0, 0);
    ack1(f, QK_PN_SPACE_APP, 5, 7, 1 * MS);
    /* 7 >= pn + 5 only for pn 0..2 */
    assert_int_equal(f->log.lost, 3);
    teardown(f);
}

static void test_pto_backoff(void **state)
{
    (void)state;
    fx *f = setup(true, true);
    send_pkt(f, QK_PN_SPACE_APP, 0, 0, 0);
    /* Initial RTT 333 ms: 333 + 666 + 25 (max_ack_delay) = 1024 ms. */
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 1024 * MS);
    qk_recovery_timeout to;
    assert_int_equal(qk_recovery_on_timeout(&f->rec, 1024 * MS, &to), 0);
    assert_int_equal(to.kind, QK_RECOVERY_TIMEOUT_PROBE);
    assert_int_equal(to.space, QK_PN_SPACE_APP);
    assert_int_equal(to.probe_pkts, 2);
    assert_int_equal(f->rec.pto_count, 1);
    /* Backoff x2: 0 + 2 * 1024 */
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 2048 * MS);
    send_pkt(f, QK_PN_SPACE_APP, 1, 1024 * MS, 0); /* the probe */
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 3072 * MS);
    assert_int_equal(qk_recovery_on_timeout(&f->rec, 3072 * MS, &to), 0);
    assert_int_equal(f->rec.pto_count, 2);
    assert_int_equal(qk_recovery_next_timeout(&f->rec), (1024 + 4 * 1024) * MS);
    assert_int_equal(qk_recovery_pto_ns(&f->rec, QK_PN_SPACE_APP), 4 * 1024 * MS);
    assert_int_equal(f->rec.stats.pto_count_total, 2);
    assert_int_equal(f->log.lost, 0); /* a PTO declares nothing lost */
    /* The ACK resets the backoff; pn 0 is lost by time threshold. */
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 1, 1, 5200 * MS), 1);
    assert_int_equal(f->rec.pto_count, 0);
    assert_int_equal(f->log.lost, 1);
    assert_int_equal(qk_recovery_next_timeout(&f->rec), QK_TIME_INFINITE);
    teardown(f);
}

static void test_pto_rules(void **state)
{
    (void)state;
    /* No Application PTO before the handshake is confirmed (RFC 9002 §6.2.1). */
    fx *f = setup(true, false);
    send_pkt(f, QK_PN_SPACE_APP, 0, 0, 0);
    assert_int_equal(qk_recovery_next_timeout(&f->rec), QK_TIME_INFINITE);
    qk_recovery_set_handshake_confirmed(&f->rec, 5 * MS);
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 1024 * MS);
    teardown(f);

    /* Handshake space: no max_ack_delay; the earliest space wins. */
    f = setup(true, false);
    send_pkt(f, QK_PN_SPACE_HANDSHAKE, 0, 10 * MS, 0);
    send_pkt(f, QK_PN_SPACE_INITIAL, 0, 20 * MS, 0);
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 1009 * MS);
    /* Server blocked by the amplification limit: no timer at all. */
    qk_recovery_set_amplification_blocked(&f->rec, true, 30 * MS);
    assert_int_equal(qk_recovery_next_timeout(&f->rec), QK_TIME_INFINITE);
    qk_recovery_timeout to;
    assert_int_equal(qk_recovery_on_timeout(&f->rec, 5000 * MS, &to), 0);
    assert_int_equal(to.kind, QK_RECOVERY_TIMEOUT_NONE);
    qk_recovery_set_amplification_blocked(&f->rec, false, 30 * MS);
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 1009 * MS);
    assert_int_equal(qk_recovery_on_timeout(&f->rec, 1009 * MS, &to), 0);
    assert_int_equal(to.space, QK_PN_SPACE_HANDSHAKE);
    teardown(f);

    /* Client whose address is not validated: anti-deadlock PTO from now. */
    f = setup(false, false);
    send_pkt(f, QK_PN_SPACE_INITIAL, 0, 0, 0);
    ack1(f, QK_PN_SPACE_INITIAL, 0, 0, 100 * MS); /* rtt 100: pto 100+200 */
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 400 * MS);
    assert_int_equal(qk_recovery_on_timeout(&f->rec, 400 * MS, &to), 0);
    assert_int_equal(to.kind, QK_RECOVERY_TIMEOUT_PROBE);
    assert_int_equal(to.space, QK_PN_SPACE_INITIAL);
    assert_int_equal(to.probe_pkts, 1);
    qk_recovery_set_have_handshake_keys(&f->rec, true, 400 * MS);
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 1000 * MS); /* 400 + 2*300 */
    assert_int_equal(qk_recovery_on_timeout(&f->rec, 1000 * MS, &to), 0);
    assert_int_equal(to.space, QK_PN_SPACE_HANDSHAKE);
    qk_recovery_set_peer_address_validated(&f->rec, 1000 * MS);
    assert_int_equal(qk_recovery_next_timeout(&f->rec), QK_TIME_INFINITE);
    teardown(f);
}

/* RTT 100 ms, rttvar 50 -> after a second 100 ms sample rttvar 37.5:
 * PC duration = 3 * (100 + 150 + 25) = 825 ms. Packets 1..10 every 150 ms. */
static fx *pc_setup(void)
{
    fx *f = setup(true, true);
    send_pkt(f, QK_PN_SPACE_APP, 0, 0, 0);
    ack1(f, QK_PN_SPACE_APP, 0, 0, 100 * MS);
    for (uint64_t pn = 1; pn <= 10; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, pn * 150 * MS, 0);
    send_pkt(f, QK_PN_SPACE_APP, 11, 1600 * MS, 0);
    return f;
}

static void test_persistent_congestion(void **state)
{
    (void)state;
    fx *f = pc_setup();
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 11, 11, 1700 * MS), 1);
    assert_int_equal(f->log.lost, 10);
    assert_int_equal(f->cc.persistent, 1); /* 150 -> 1500 ms spans > 825 ms */
    assert_int_equal(f->rec.stats.persistent_congestion, 1);
    assert_int_equal(f->cc.congestion, 1);
    teardown(f);

    /* An acknowledgement in between breaks the run: 150..600 and
     * 900..1500 ms are each shorter than 825 ms. */
    f = pc_setup();
    qk_ack_range r[2] = {{11, 11}, {5, 5}};
    qk_ack_received a = {.ranges = r, .n_ranges = 2};
    assert_int_equal(qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 1700 * MS), 2);
    assert_int_equal(f->log.lost, 9);
    assert_int_equal(f->cc.persistent, 0);
    teardown(f);

    /* No RTT sample before the losses: never persistent. */
    f = setup(true, true);
    for (uint64_t pn = 1; pn <= 10; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, pn * 1000 * MS, 0);
    send_pkt(f, QK_PN_SPACE_APP, 11, 11000 * MS, 0);
    ack1(f, QK_PN_SPACE_APP, 11, 11, 11100 * MS);
    assert_int_equal(f->log.lost, 10);
    assert_int_equal(f->cc.persistent, 0);
    teardown(f);
}

static void test_spurious_loss(void **state)
{
    (void)state;
    fx *f = setup(true, true);
    for (uint64_t pn = 0; pn < 5; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, 0, 0);
    ack1(f, QK_PN_SPACE_APP, 4, 4, 10 * MS);
    assert_int_equal(f->log.lost, 2);
    /* The "lost" packets arrive late after all. */
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 0, 4, 12 * MS), 2); /* 2, 3 newly acked */
    assert_int_equal(f->rec.stats.spurious_losses, 2);
    assert_int_equal(f->cc.spurious, 1);
    /* Reported once only. */
    ack1(f, QK_PN_SPACE_APP, 0, 4, 13 * MS);
    assert_int_equal(f->rec.stats.spurious_losses, 2);
    assert_int_equal(f->cc.spurious, 1);
    teardown(f);
}

static void test_discard_space(void **state)
{
    (void)state;
    fx *f = setup(true, false);
    send_pkt(f, QK_PN_SPACE_INITIAL, 0, 0, 0);
    send_pkt(f, QK_PN_SPACE_INITIAL, 1, 0, 0);
    send_pkt(f, QK_PN_SPACE_HANDSHAKE, 0, 0, 0);
    assert_int_equal(qk_recovery_bytes_in_flight(&f->rec), 3600);
    assert_int_equal(qk_recovery_discard_space(&f->rec, QK_PN_SPACE_INITIAL, 1 * MS), 0);
    assert_int_equal(qk_recovery_bytes_in_flight(&f->rec), 1200);
    assert_int_equal(f->log.lost, 0); /* RFC 9002 §6.4: not lost */
    assert_int_equal(f->cc.congestion, 0);
    assert_int_equal(f->rec.stats.packets_lost, 0);
    assert_int_equal(send_pkt(f, QK_PN_SPACE_INITIAL, 2, 0, 0), QK_ERR_STATE);
    assert_int_equal(ack1(f, QK_PN_SPACE_INITIAL, 0, 0, 2 * MS), QK_ERR_STATE);
    assert_int_equal(qk_recovery_discard_space(&f->rec, QK_PN_SPACE_INITIAL, 1 * MS), 0);
    /* The Handshake packet still drives the PTO (333 + 666 = 999 ms). */
    assert_int_equal(qk_recovery_next_timeout(&f->rec), 999 * MS);
    assert_int_equal(qk_recovery_discard_space(&f->rec, QK_PN_SPACE_COUNT, 0), QK_ERR_INVALID_ARG);
    teardown(f);
}

static void test_ack_errors(void **state)
{
    (void)state;
    fx *f = setup(true, true);
    /* Nothing sent yet. */
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 0, 0, 1), QK_ERR_PROTOCOL_VIOLATION);
    send_pkt(f, QK_PN_SPACE_APP, 0, 0, 0);
    send_pkt(f, QK_PN_SPACE_APP, 2, 0, 0); /* pn 1 skipped */
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 0, 3, 1), QK_ERR_PROTOCOL_VIOLATION);
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 1, 1, 1), QK_ERR_PROTOCOL_VIOLATION);
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 0, 2, 1), QK_ERR_PROTOCOL_VIOLATION);
    /* Nothing was changed by the rejected ACKs. */
    assert_int_equal(qk_recovery_bytes_in_flight(&f->rec), 2400);
    assert_null(qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 1));
    /* Malformed ranges. */
    qk_ack_range bad[2] = {{2, 2}, {2, 2}};
    qk_ack_received a = {.ranges = bad, .n_ranges = 2};
    assert_int_equal(qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 1),
                     QK_ERR_FRAME_ENCODING);
    qk_ack_range inv = {2, 0};
    a = (qk_ack_received){.ranges = &inv, .n_ranges = 1};
    assert_int_equal(qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 1),
                     QK_ERR_FRAME_ENCODING);
    /* The legitimate ACK works. */
    qk_ack_range ok[2] = {{2, 2}, {0, 0}};
    a = (qk_ack_received){.ranges = ok, .n_ranges = 2};
    assert_int_equal(qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 1), 2);
    /* Send-side errors. */
    assert_int_equal(send_pkt(f, QK_PN_SPACE_APP, 2, 0, 0), QK_ERR_INVALID_ARG);
    qk_sent_packet p = {.pn = 9};
    assert_int_equal(qk_recovery_on_packet_sent(&f->rec, QK_PN_SPACE_APP, &p, NULL,
                                                QK_RECOVERY_MAX_FRAMES_PER_PKT + 1, 0),
                     QK_ERR_INVALID_ARG);
    teardown(f);
}

static void test_ecn(void **state)
{
    (void)state;
    fx *f = setup(true, true);
    for (uint64_t pn = 0; pn < 3; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, 0, QK_ECN_ECT0);
    qk_ack_range r = {0, 1};
    qk_ack_received a = {.ranges = &r, .n_ranges = 1, .has_ecn = true, .ect0 = 2};
    assert_int_equal(qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 10 * MS), 2);
    assert_int_equal(f->rec.ecn_state, QK_ECN_STATE_CAPABLE);
    assert_int_equal(f->cc.congestion_ecn, 0);
    /* CE count rises: one ECN congestion event and on_ecn(1). */
    r = (qk_ack_range){0, 2};
    a = (qk_ack_received){.ranges = &r, .n_ranges = 1, .has_ecn = true, .ect0 = 2, .ce = 1};
    assert_int_equal(qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 11 * MS), 1);
    assert_int_equal(f->cc.congestion_ecn, 1);
    assert_int_equal(f->cc.ecn_calls, 1);
    assert_int_equal(f->cc.ecn_ce, 1);
    assert_int_equal(f->rec.stats.ecn_ce_events, 1);
    teardown(f);

    /* ECT-marked packets acked without ECN counts: validation fails
     * (RFC 9000 §13.4.2.1) and later CE counts are ignored. */
    f = setup(true, true);
    for (uint64_t pn = 0; pn < 3; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, 0, QK_ECN_ECT0);
    ack1(f, QK_PN_SPACE_APP, 0, 0, 10 * MS);
    assert_int_equal(f->rec.ecn_state, QK_ECN_STATE_FAILED);
    r = (qk_ack_range){0, 2};
    a = (qk_ack_received){.ranges = &r, .n_ranges = 1, .has_ecn = true, .ect0 = 2, .ce = 1};
    qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 11 * MS);
    assert_int_equal(f->cc.congestion_ecn, 0);
    teardown(f);

    /* Counts that do not cover the newly acked ECT packets: fail. */
    f = setup(true, true);
    for (uint64_t pn = 0; pn < 3; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, 0, QK_ECN_ECT0);
    r = (qk_ack_range){0, 2};
    a = (qk_ack_received){.ranges = &r, .n_ranges = 1, .has_ecn = true, .ect0 = 1, .ect1 = 1};
    qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 11 * MS);
    assert_int_equal(f->rec.ecn_state, QK_ECN_STATE_FAILED);
    teardown(f);
}

/* RFC 9000 §13.4.2.1 validation, case by case. Three ECT packets of `sent`
 * codepoint are acknowledged by one ACK with the given counts. */
static qk_ecn_state validate(uint8_t sent, uint64_t ect0, uint64_t ect1, uint64_t ce, bool has_ecn)
{
    fx *f = setup(true, true);
    for (uint64_t pn = 0; pn < 3; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, 0, sent);
    qk_ack_range r = {0, 2};
    qk_ack_received a = {
        .ranges = &r, .n_ranges = 1, .has_ecn = has_ecn, .ect0 = ect0, .ect1 = ect1, .ce = ce};
    qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 10 * MS);
    qk_ecn_state st = f->rec.ecn_state;
    teardown(f);
    return st;
}

static void test_ecn_validation_cases(void **state)
{
    (void)state;
    /* Passes: counts cover the newly acked packets, CE included. */
    assert_int_equal(validate(QK_ECN_ECT0, 3, 0, 0, true), QK_ECN_STATE_CAPABLE);
    assert_int_equal(validate(QK_ECN_ECT0, 1, 0, 2, true), QK_ECN_STATE_CAPABLE);
    assert_int_equal(validate(QK_ECN_ECT1, 0, 3, 0, true), QK_ECN_STATE_CAPABLE);
    assert_int_equal(validate(QK_ECN_ECT1, 0, 2, 1, true), QK_ECN_STATE_CAPABLE);
    /* Bleached: the path cleared the codepoint (ACK_ECN with zero counts),
     * or the peer sends plain ACK frames. */
    assert_int_equal(validate(QK_ECN_ECT0, 0, 0, 0, true), QK_ECN_STATE_FAILED);
    assert_int_equal(validate(QK_ECN_ECT1, 0, 0, 0, false), QK_ECN_STATE_FAILED);
    /* Mangled: ECT(0) sent, ECT(1) reported, and the reverse. */
    assert_int_equal(validate(QK_ECN_ECT0, 0, 3, 0, true), QK_ECN_STATE_FAILED);
    assert_int_equal(validate(QK_ECN_ECT1, 3, 0, 0, true), QK_ECN_STATE_FAILED);

    /* Counts going backwards fail validation, and a failed path ignores CE. */
    fx *f = setup(true, true);
    for (uint64_t pn = 0; pn < 6; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, 0, QK_ECN_ECT0);
    qk_ack_range r = {0, 2};
    qk_ack_received a = {.ranges = &r, .n_ranges = 1, .has_ecn = true, .ect0 = 3};
    qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 10 * MS);
    assert_int_equal(f->rec.ecn_state, QK_ECN_STATE_CAPABLE);
    r = (qk_ack_range){3, 4};
    a = (qk_ack_received){.ranges = &r, .n_ranges = 1, .has_ecn = true, .ect0 = 2, .ce = 3};
    qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 11 * MS);
    assert_int_equal(f->rec.ecn_state, QK_ECN_STATE_FAILED);
    assert_int_equal(f->cc.congestion_ecn, 0);

    /* A new path starts validation over (RFC 9000 §13.4.2) and can pass. */
    qk_recovery_ecn_restart(&f->rec);
    assert_int_equal(f->rec.ecn_state, QK_ECN_STATE_TESTING);
    assert_int_equal(f->rec.ecn_testing_sent, 0);
    r = (qk_ack_range){5, 5};
    a = (qk_ack_received){.ranges = &r, .n_ranges = 1, .has_ecn = true, .ect0 = 3, .ce = 4};
    qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, 12 * MS);
    assert_int_equal(f->rec.ecn_state, QK_ECN_STATE_CAPABLE);
    assert_int_equal(f->cc.congestion_ecn, 1); /* the CE rise now counts */
    teardown(f);
}

static void test_skipped_and_lookup(void **state)
{
    (void)state;
    fx *f = setup(true, true);
    send_pkt(f, QK_PN_SPACE_APP, 0, 0, 0);
    send_pkt(f, QK_PN_SPACE_APP, 5, 0, 0);
    const qk_sent_packet *p = qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 5);
    assert_non_null(p);
    assert_int_equal(p->pn, 5);
    assert_int_equal(p->size_bytes, 1200);
    assert_null(qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 3));
    assert_null(qk_recovery_find(&f->rec, QK_PN_SPACE_APP, 6));
    /* Ring growth keeps lookups valid across wrap-around. */
    for (uint64_t pn = 6; pn < 1000; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, pn, 0);
    ack1(f, QK_PN_SPACE_APP, 5, 900, 10 * MS); /* 0 is lost (packet threshold) */
    for (uint64_t pn = 1000; pn < 1500; pn++) send_pkt(f, QK_PN_SPACE_APP, pn, 10 * MS, 0);
    for (uint64_t pn = 901; pn < 1500; pn++) {
        p = qk_recovery_find(&f->rec, QK_PN_SPACE_APP, pn);
        assert_non_null(p);
        assert_int_equal(p->pn, pn);
    }
    assert_int_equal(f->log.bad_frames, 0);
    assert_int_equal(qk_recovery_bytes_in_flight(&f->rec), 599 * 1200);
    teardown(f);
}

/* One ACK range covering 100k packets is processed in a single pass. */
static void test_large_ack_single_range(void **state)
{
    (void)state;
    fx *f = setup(true, true);
    const uint64_t n = 100000;
    for (uint64_t pn = 0; pn < n; pn++)
        assert_int_equal(send_pkt(f, QK_PN_SPACE_APP, pn, pn * 1000, 0), 0);
    assert_int_equal(qk_recovery_bytes_in_flight(&f->rec), n * 1200);
    assert_int_equal(ack1(f, QK_PN_SPACE_APP, 0, n - 1, 200 * MS), (int)n);
    assert_int_equal(qk_recovery_bytes_in_flight(&f->rec), 0);
    assert_int_equal(f->cc.acked_pkts, n);
    assert_int_equal(f->log.acked, n);
    assert_int_equal(f->log.lost, 0);
    assert_int_equal(f->log.bad_frames, 0);
    /* Everything was released: the window is empty. */
    assert_int_equal(f->rec.sp[QK_PN_SPACE_APP].base_pn, n);
    assert_int_equal(f->rec.sp[QK_PN_SPACE_APP].frame_tail, f->rec.sp[QK_PN_SPACE_APP].frame_head);
    /* Repeating the huge range costs nothing: it is clamped to the window. */
    for (int i = 0; i < 10000; i++)
        assert_int_equal(ack1(f, QK_PN_SPACE_APP, 0, n - 1, 300 * MS), 0);
    teardown(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ack_basic),
        cmocka_unit_test(test_rtt_sample_rules),
        cmocka_unit_test(test_packet_and_time_threshold),
        cmocka_unit_test(test_configurable_packet_threshold),
        cmocka_unit_test(test_pto_backoff),
        cmocka_unit_test(test_pto_rules),
        cmocka_unit_test(test_persistent_congestion),
        cmocka_unit_test(test_spurious_loss),
        cmocka_unit_test(test_discard_space),
        cmocka_unit_test(test_ack_errors),
        cmocka_unit_test(test_ecn),
        cmocka_unit_test(test_ecn_validation_cases),
        cmocka_unit_test(test_skipped_and_lookup),
        cmocka_unit_test(test_large_ack_single_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
