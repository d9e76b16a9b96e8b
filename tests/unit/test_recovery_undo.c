/* SPDX-License-Identifier: MIT */
/* Spurious losses (recovery.c with the real NewReno and CUBIC controllers):
 * a congestion response is undone only when every loss behind it is acked
 * late; the packet reordering threshold grows to the observed distance; an
 * ECN-CE response is never undone. */
#include "qk_test.h"
#include "transport/recovery/recovery.h"

#include <string.h>

#define MS QK_NS_PER_MS

typedef struct fx {
    qk_recovery rec;
    qk_rtt rtt;
    qk_cc cc;
} fx;

static void setup(fx *f, qk_cc_algo algo)
{
    memset(f, 0, sizeof *f);
    assert_int_equal(qk_cc_init(&f->cc, algo, 1200, 0), 0);
    qk_rtt_init(&f->rtt, 0);
    qk_recovery_config cfg = {.is_server = true};
    assert_int_equal(qk_recovery_init(&f->rec, &cfg, &f->rtt, &f->cc, NULL), 0);
    qk_recovery_set_handshake_confirmed(&f->rec, 0);
}

static void send_n(fx *f, uint64_t from, uint64_t to, qk_time t)
{
    for (uint64_t pn = from; pn <= to; pn++) {
        qk_sent_packet p = {.pn = pn, .size_bytes = 1200, .ack_eliciting = true, .in_flight = true};
        qk_sent_frame fr = {.kind = QK_SF_PING};
        assert_int_equal(qk_recovery_on_packet_sent(&f->rec, QK_PN_SPACE_APP, &p, &fr, 1, t), 0);
    }
}

static int ack(fx *f, uint64_t lo, uint64_t hi, qk_time now, bool ecn, uint64_t ce)
{
    qk_ack_range r = {lo, hi};
    qk_ack_received a = {.ranges = &r, .n_ranges = 1, .has_ecn = ecn, .ce = ce};
    return qk_recovery_on_ack_received(&f->rec, QK_PN_SPACE_APP, &a, now);
}

/* Packets 0..2 are reordered behind 3..9: the packet threshold (3) declares
 * them lost and the window is cut; their late ACK restores it. */
static void undo_all_spurious(qk_cc_algo algo)
{
    fx f;
    setup(&f, algo);
    send_n(&f, 0, 9, 0);
    ack(&f, 3, 9, 50 * MS, false, 0);
    /* RFC 9002 §A.7: losses are processed before the acks, so the window
     * cut was the initial one (the 7 acked packets were sent before the
     * recovery period began and do not grow it). */
    uint64_t before = qk_cc_initial_window(1200);
    assert_int_equal(f.rec.stats.packets_lost, 3);
    assert_true(f.cc.cwnd_bytes < before);
    assert_int_equal(f.cc.congestion_events, 1);
    ack(&f, 0, 9, 51 * MS, false, 0); /* 0..2 arrive late: all three were spurious */
    assert_int_equal(f.rec.stats.spurious_losses, 3);
    assert_int_equal(f.rec.stats.undos, 1);
    assert_int_equal(f.cc.cwnd_bytes, before);
    assert_int_equal(f.cc.ssthresh_bytes, UINT64_MAX);
    assert_false(f.cc.in_recovery);
    /* RFC 9002 §6.1 adaptive threshold: distance 9 - 0 seen, threshold 10. */
    assert_int_equal(f.rec.reorder_threshold, 10);
    qk_recovery_free(&f.rec);
}

static void test_undo_newreno(void **state)
{
    (void)state;
    undo_all_spurious(QK_CC_NEWRENO);
}

static void test_undo_cubic(void **state)
{
    (void)state;
    undo_all_spurious(QK_CC_CUBIC);
}

/* One of three losses was real: no undo. */
static void test_no_undo_when_some_real(void **state)
{
    (void)state;
    fx f;
    setup(&f, QK_CC_NEWRENO);
    send_n(&f, 0, 9, 0);
    ack(&f, 3, 9, 50 * MS, false, 0);
    uint64_t cut = f.cc.cwnd_bytes;
    qk_ack_range r[2] = {{3, 9}, {0, 1}}; /* 2 never arrives */
    qk_ack_received a = {.ranges = r, .n_ranges = 2};
    assert_true(qk_recovery_on_ack_received(&f.rec, QK_PN_SPACE_APP, &a, 51 * MS) >= 0);
    assert_int_equal(f.rec.stats.spurious_losses, 2);
    assert_int_equal(f.rec.stats.undos, 0);
    assert_int_equal(f.cc.cwnd_bytes, cut);
    qk_recovery_free(&f.rec);
}

/* The undo must not swallow a real loss of the same flight. 10..12 are
 * reordered (declared lost, then acked late: the response is undone), but
 * 22 of the same flight is really lost and found after the undo. Before the
 * fix the undone response's recovery period (RFC 9002 §7.3.2) still covered
 * 22's send time, so its loss was ignored and the window stayed at the
 * pre-loss value: with 5% reordering every overflow could be masked that way
 * and the window ran away. An undone response never happened: the real loss
 * starts a response of its own. */
static void real_loss_after_undo(qk_cc_algo algo)
{
    fx f;
    setup(&f, algo);
    send_n(&f, 0, 9, 0);
    ack(&f, 0, 9, 50 * MS, false, 0); /* RTT sample, slow start: cwnd 12000 -> 24000 */
    uint64_t before = f.cc.cwnd_bytes;
    assert_int_equal(before, 2 * qk_cc_initial_window(1200));
    send_n(&f, 10, 40, 60 * MS);
    ack(&f, 13, 19, 110 * MS, false, 0); /* 10..12 declared lost (packet threshold 3) */
    assert_int_equal(f.rec.stats.packets_lost, 3);
    assert_true(f.cc.cwnd_bytes < before);
    ack(&f, 10, 12, 111 * MS, false, 0); /* ...and acked late: spurious, undone */
    assert_int_equal(f.rec.stats.undos, 1);
    assert_int_equal(f.cc.cwnd_bytes, before);
    qk_ack_range r[2] = {{23, 40}, {10, 21}}; /* 22 never arrives */
    qk_ack_received a = {.ranges = r, .n_ranges = 2};
    assert_true(qk_recovery_on_ack_received(&f.rec, QK_PN_SPACE_APP, &a, 112 * MS) >= 0);
    /* Reordering was seen (10..12 came late), so the packet threshold no
     * longer declares 22 lost (RFC 8985 §6.2); the time threshold does. */
    assert_int_equal(f.rec.stats.packets_lost, 3);
    qk_recovery_timeout to;
    qk_time t = qk_recovery_next_timeout(&f.rec);
    assert_true(t > 112 * MS && t < 200 * MS);
    /* The acks of 13..40 grew the restored window meanwhile (slow start). */
    uint64_t w = f.cc.cwnd_bytes;
    assert_true(w >= before);
    assert_int_equal(qk_recovery_on_timeout(&f.rec, t, &to), 0);
    assert_int_equal(to.kind, QK_RECOVERY_TIMEOUT_LOSS);
    assert_int_equal(f.rec.stats.packets_lost, 4);
    /* One response in effect: the real loss cut that window (beta 0.5 or
     * 0.7, never below the minimum window). */
    assert_int_equal(f.cc.congestion_events, 1);
    assert_true(f.cc.cwnd_bytes <= w * 7 / 10);
    assert_true(f.cc.ssthresh_bytes <= w * 7 / 10);
    assert_true(f.cc.cwnd_bytes >= qk_cc_min_window(&f.cc));
    qk_recovery_free(&f.rec);
}

static void test_real_loss_after_undo_newreno(void **state)
{
    (void)state;
    real_loss_after_undo(QK_CC_NEWRENO);
}

static void test_real_loss_after_undo_cubic(void **state)
{
    (void)state;
    real_loss_after_undo(QK_CC_CUBIC);
}

/* Once reordering was seen (RFC 8985 §6.2), gaps are losses by time only:
 * neither a 5- nor a 21-packet gap is a loss before max(srtt, latest_rtt)
 * + reo_wnd has passed since the packets were sent. */
static void test_learnt_threshold(void **state)
{
    (void)state;
    fx f;
    setup(&f, QK_CC_CUBIC);
    send_n(&f, 0, 9, 0);
    ack(&f, 3, 9, 50 * MS, false, 0);
    ack(&f, 0, 9, 51 * MS, false, 0);
    uint64_t lost = f.rec.stats.packets_lost;
    send_n(&f, 10, 19, 52 * MS);
    ack(&f, 15, 19, 60 * MS, false, 0); /* 10..14 still missing, 5 behind */
    assert_int_equal(f.rec.stats.packets_lost, lost);
    assert_true(f.rec.reordering_seen);
    send_n(&f, 20, 40, 61 * MS);
    ack(&f, 20, 40, 70 * MS, false, 0);
    assert_int_equal(f.rec.stats.packets_lost, lost);
    /* srtt 40.28 ms (samples 50, 8, 9 ms), min_rtt 8 ms: reo_wnd = 2 ms,
     * and the RFC 9002 threshold 9/8 x 40.28 = 45.3 ms is the larger: 10..14
     * (sent at 52 ms) are lost at 97.3 ms, by the loss timer. */
    qk_time t = qk_recovery_next_timeout(&f.rec);
    assert_true(t >= 97 * MS && t <= 98 * MS);
    qk_recovery_timeout to;
    assert_int_equal(qk_recovery_on_timeout(&f.rec, t, &to), 0);
    assert_int_equal(f.rec.stats.packets_lost, lost + 5);
    qk_recovery_free(&f.rec);
}

/* A CE response is not a loss and is never undone, even by a later spurious loss. */
static void test_ecn_never_undone(void **state)
{
    (void)state;
    fx f;
    setup(&f, QK_CC_CUBIC);
    f.rec.ecn_state = QK_ECN_STATE_CAPABLE;
    send_n(&f, 0, 9, 0);
    ack(&f, 0, 4, 50 * MS, true, 1);
    uint64_t cut = f.cc.cwnd_bytes;
    assert_int_equal(f.cc.congestion_events, 1);
    ack(&f, 0, 9, 60 * MS, true, 1);
    assert_int_equal(f.rec.stats.undos, 0);
    assert_true(f.cc.cwnd_bytes >= cut);
    assert_true(f.cc.ssthresh_bytes < UINT64_MAX);
    qk_recovery_free(&f.rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_undo_newreno),
        cmocka_unit_test(test_undo_cubic),
        cmocka_unit_test(test_no_undo_when_some_real),
        cmocka_unit_test(test_learnt_threshold),
        cmocka_unit_test(test_ecn_never_undone),
        cmocka_unit_test(test_real_loss_after_undo_newreno),
        cmocka_unit_test(test_real_loss_after_undo_cubic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
