/* SPDX-License-Identifier: MIT */
/* ACK tracker: RFC 9000 §13.2 rules and ack-frequency-12 §6 reordering. */
#include "qk_test.h"
#include "transport/recovery/ack.h"

#include <string.h>

#define MS QK_NS_PER_MS

static void init_policy(qk_ack_tracker *t, qk_pn_space sp, uint64_t ae_thr, uint64_t reorder,
                        bool ce)
{
    qk_ack_policy p = {.ack_eliciting_threshold = ae_thr,
                       .max_ack_delay_ns = 25 * MS,
                       .reordering_threshold = reorder,
                       .ce_immediate = ce};
    assert_int_equal(qk_ack_tracker_init(t, sp, &p, 64), 0);
}

/* Build and send an ACK now; returns its largest. */
static uint64_t send_ack(qk_ack_tracker *t, qk_time now)
{
    qk_ack_frame_info f;
    assert_int_equal(qk_ack_build(t, now, 3, &f), 0);
    assert_int_equal(qk_ack_on_ack_sent(t, now), 0);
    return f.largest;
}

static void test_every_second_packet(void **state)
{
    (void)state;
    qk_ack_tracker t;
    assert_int_equal(qk_ack_tracker_init(&t, QK_PN_SPACE_APP, NULL, 0), 0);
    assert_int_equal(qk_ack_deadline(&t), QK_TIME_INFINITE);
    assert_int_equal(qk_ack_on_packet_received(&t, 0, true, 0, 1000), 0);
    /* One ack-eliciting packet: wait up to max_ack_delay (25 ms). */
    assert_int_equal(qk_ack_deadline(&t), 1000 + 25 * MS);
    assert_false(qk_ack_should_ack_now(&t, 1000 + 25 * MS - 1));
    assert_true(qk_ack_should_ack_now(&t, 1000 + 25 * MS));
    /* RFC 9000 §13.2.2: the second one triggers an ACK. */
    assert_int_equal(qk_ack_on_packet_received(&t, 1, true, 0, 2000), 0);
    assert_true(qk_ack_should_ack_now(&t, 2000));
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_THRESHOLD);
    assert_int_equal(send_ack(&t, 2000), 1);
    assert_int_equal(qk_ack_deadline(&t), QK_TIME_INFINITE);
    assert_false(qk_ack_has_new(&t));
    assert_int_equal(t.stats.immediate_acks, 1);
    /* Non-ack-eliciting packets never start the timer. */
    assert_int_equal(qk_ack_on_packet_received(&t, 2, false, 0, 3000), 0);
    assert_int_equal(qk_ack_deadline(&t), QK_TIME_INFINITE);
    assert_true(qk_ack_has_new(&t));
    /* Timer-driven ACK is counted as delayed. */
    assert_int_equal(qk_ack_on_packet_received(&t, 3, true, 0, 4000), 0);
    assert_int_equal(qk_ack_deadline(&t), 4000 + 25 * MS);
    send_ack(&t, 4000 + 25 * MS);
    assert_int_equal(t.stats.delayed_acks, 1);
    assert_int_equal(t.stats.acks_sent, 2);
    qk_ack_tracker_free(&t);
}

static void test_threshold_policy(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 3, 1, true);
    for (uint64_t pn = 0; pn < 3; pn++) {
        qk_ack_on_packet_received(&t, pn, true, 0, pn);
        assert_false(qk_ack_should_ack_now(&t, pn));
    }
    qk_ack_on_packet_received(&t, 3, true, 0, 3); /* 4 > 3 */
    assert_true(qk_ack_should_ack_now(&t, 3));
    qk_ack_tracker_free(&t);
    /* threshold 0: every ack-eliciting packet */
    init_policy(&t, QK_PN_SPACE_APP, 0, 1, true);
    qk_ack_on_packet_received(&t, 0, true, 0, 5);
    assert_true(qk_ack_should_ack_now(&t, 5));
    qk_ack_tracker_free(&t);
}

static void test_handshake_spaces_immediate(void **state)
{
    (void)state;
    for (int sp = QK_PN_SPACE_INITIAL; sp <= QK_PN_SPACE_HANDSHAKE; sp++) {
        qk_ack_tracker t;
        init_policy(&t, (qk_pn_space)sp, 10, 0, false);
        qk_ack_on_packet_received(&t, 0, true, 0, 100);
        assert_true(qk_ack_should_ack_now(&t, 100));
        assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_HANDSHAKE);
        qk_ack_tracker_free(&t);
    }
    qk_ack_tracker t;
    assert_int_equal(qk_ack_tracker_init(&t, QK_PN_SPACE_COUNT, NULL, 0), QK_ERR_INVALID_ARG);
}

static void test_reorder_rfc9000(void **state)
{
    (void)state;
    qk_ack_tracker t;
    /* Large ae threshold so only reordering triggers. */
    init_policy(&t, QK_PN_SPACE_APP, 100, 1, true);
    qk_ack_on_packet_received(&t, 0, true, 0, 0);
    qk_ack_on_packet_received(&t, 1, true, 0, 0);
    assert_int_equal(qk_ack_immediate_reasons(&t), 0);
    /* Gap below a newly received largest. */
    qk_ack_on_packet_received(&t, 3, true, 0, 0);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_REORDER);
    assert_int_equal(send_ack(&t, 1), 3);
    /* In order after the gap was reported: no immediate ACK. */
    qk_ack_on_packet_received(&t, 4, true, 0, 2);
    assert_int_equal(qk_ack_immediate_reasons(&t), 0);
    /* pn below the largest received: immediate. */
    qk_ack_on_packet_received(&t, 2, true, 0, 3);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_REORDER);
    send_ack(&t, 3);
    /* Non-ack-eliciting out-of-order packets do not trigger. */
    qk_ack_on_packet_received(&t, 7, false, 0, 4);
    assert_int_equal(qk_ack_immediate_reasons(&t), 0);
    /* A late packet before any ACK was sent also triggers (RFC 9000 §13.2.1). */
    qk_ack_tracker_free(&t);
    init_policy(&t, QK_PN_SPACE_APP, 100, 1, true);
    qk_ack_on_packet_received(&t, 5, true, 0, 0);
    qk_ack_on_packet_received(&t, 4, true, 0, 0);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_REORDER);
    qk_ack_tracker_free(&t);
}

/* Play a received sequence; expect[i] says whether an ACK goes out after it.
 * "acknowledgements are only sent due to reordering" (ack-frequency-12 §6.2.1). */
static void play(uint64_t k, const uint64_t *pns, const bool *expect, size_t n)
{
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 1000, k, true);
    t.policy.max_ack_delay_ns = QK_TIME_INFINITE / 2;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(qk_ack_on_packet_received(&t, pns[i], true, 0, i), 0);
        bool now = (qk_ack_immediate_reasons(&t) & QK_ACK_WHY_REORDER) != 0;
        if (now != expect[i])
            fail_msg("k=%llu pn %llu: expected ack=%d", (unsigned long long)k,
                     (unsigned long long)pns[i], expect[i]);
        if (now) send_ack(&t, i);
    }
    qk_ack_tracker_free(&t);
}

static void test_reorder_threshold_3(void **state)
{
    (void)state;
    /* ack-frequency-12 §6.2.1, Figure "reordering threshold of 3". */
    const uint64_t pns[] = {0, 1, 3, 4, 5, 8, 9, 10};
    const bool ack[] = {false, false, false, false, true, false, true, true};
    play(3, pns, ack, 8);
}

static void test_reorder_threshold_5(void **state)
{
    (void)state;
    /* ack-frequency-12 §6.2.1, Figure "reordering threshold of 5". */
    const uint64_t pns[] = {0, 1, 3, 5, 6, 7, 8, 9};
    const bool ack[] = {false, false, false, false, false, true, false, true};
    play(5, pns, ack, 8);
}

static void test_reorder_threshold_1_table(void **state)
{
    (void)state;
    /* Threshold 1 on the same input: every packet with a gap triggers. */
    const uint64_t pns[] = {0, 1, 3, 4, 5, 8, 9, 10, 7, 6};
    const bool ack[] = {false, false, true, false, false, true, false, false, true, true};
    play(1, pns, ack, 10);
}

/* Threshold 10 with reordering threshold 1 (the `10,25000,1` mode of
 * experiment 4): a swapped pair costs exactly two immediate ACKs (the gap,
 * then the filled hole, RFC 9000 §13.2.1), in-order runs one ACK per 11
 * packets, and never more than one ACK per packet. (The "3 ACK frames per
 * data packet" once reported for this mode was bench/ackfreq.sh splitting the
 * comma in the mode name across CSV columns, not the receiver.) */
static void test_threshold_10_reorder_1(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 10, 1, true);
    t.policy.max_ack_delay_ns = QK_TIME_INFINITE / 2;
    /* 0..9 in order, 11 before 10, then 12..22 in order. */
    uint64_t pns[23];
    size_t n = 0;
    for (uint64_t pn = 0; pn <= 9; pn++) pns[n++] = pn;
    pns[n++] = 11;
    pns[n++] = 10;
    for (uint64_t pn = 12; pn <= 22; pn++) pns[n++] = pn;
    size_t acks = 0;
    uint64_t acked_at[4] = {0};
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(qk_ack_on_packet_received(&t, pns[i], true, 0, i * MS), 0);
        if (qk_ack_should_ack_now(&t, i * MS)) {
            assert_true(acks < 4);
            acked_at[acks++] = pns[i];
            send_ack(&t, i * MS);
            /* One ACK covers everything: nothing is owed right after it. */
            assert_false(qk_ack_should_ack_now(&t, i * MS));
        }
    }
    assert_int_equal(acks, 3);
    assert_int_equal(acked_at[0], 11); /* gap below a new largest */
    assert_int_equal(acked_at[1], 10); /* below the largest received */
    assert_int_equal(acked_at[2], 22); /* 11 in-order packets: more than 10 */
    assert_int_equal(t.stats.acks_sent, 3);
    qk_ack_tracker_free(&t);
}

/* An ACK frame reports the newest QK_ACK_MAX_FRAME_RANGES (32) ranges; the
 * tracker still remembers all of them (duplicates stay detected). */
static void test_frame_ranges_capped(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 1, 1, true);
    /* 40 ranges: even pns 0, 2, ..., 78. */
    for (uint64_t pn = 0; pn < 80; pn += 2)
        assert_int_equal(qk_ack_on_packet_received(&t, pn, true, 0, 0), 0);
    assert_int_equal(t.received.n, 40);
    qk_ack_frame_info f;
    assert_int_equal(qk_ack_build(&t, 0, 3, &f), 0);
    assert_int_equal(f.n_ranges, 32);
    assert_int_equal(f.largest, 78);
    assert_int_equal(f.ranges[31].start, 78); /* the newest ... */
    assert_int_equal(f.ranges[0].start, 16);  /* ... down to the 32nd newest */
    assert_int_equal(f.ranges[0].end, 17);
    assert_int_equal(qk_ack_on_ack_sent(&t, 0), 0);
    assert_int_equal(qk_ack_on_packet_received(&t, 0, true, 0, 1), 1); /* still a duplicate */
    qk_ack_tracker_free(&t);
}

static void test_reorder_ignored(void **state)
{
    (void)state;
    const uint64_t pns[] = {0, 5, 9, 2, 1, 20};
    const bool ack[] = {false, false, false, false, false, false};
    play(0, pns, ack, 6);
    /* Late packet outside the window (<= Largest Acked - k) triggers. */
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 1000, 3, true);
    for (uint64_t pn = 0; pn < 10; pn++)
        if (pn != 2) qk_ack_on_packet_received(&t, pn, true, 0, pn);
    send_ack(&t, 10); /* Largest Acked 9 */
    qk_ack_on_packet_received(&t, 2, true, 0, 11);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_REORDER);
    qk_ack_tracker_free(&t);
}

static void test_ce(void **state)
{
    (void)state;
    qk_ack_tracker t;
    /* RFC 9000 default: each CE-marked ack-eliciting packet is acked at once. */
    init_policy(&t, QK_PN_SPACE_APP, 1, 1, true);
    qk_ack_on_packet_received(&t, 0, true, QK_ECN_CE, 0);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_CE);
    send_ack(&t, 0);
    qk_ack_on_packet_received(&t, 1, true, QK_ECN_CE, 1);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_CE);
    qk_ack_tracker_free(&t);

    /* ack-frequency-12 §6.3: threshold > 1, only when CE newly appears. */
    init_policy(&t, QK_PN_SPACE_APP, 10, 1, true);
    qk_ack_on_packet_received(&t, 0, true, QK_ECN_ECT0, 0);
    assert_int_equal(qk_ack_immediate_reasons(&t), 0);
    qk_ack_on_packet_received(&t, 1, true, QK_ECN_CE, 1);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_CE);
    send_ack(&t, 1);
    qk_ack_on_packet_received(&t, 2, true, QK_ECN_CE, 2);
    assert_int_equal(qk_ack_immediate_reasons(&t), 0);
    qk_ack_on_packet_received(&t, 3, true, QK_ECN_ECT0, 3);
    qk_ack_on_packet_received(&t, 4, true, QK_ECN_CE, 4);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_CE);
    qk_ack_tracker_free(&t);

    /* Policy off: CE never forces an ACK. */
    init_policy(&t, QK_PN_SPACE_APP, 10, 1, false);
    qk_ack_on_packet_received(&t, 0, true, QK_ECN_CE, 0);
    assert_int_equal(qk_ack_immediate_reasons(&t), 0);
    qk_ack_tracker_free(&t);
}

static void test_ecn_counts_and_duplicates(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 1, 1, true);
    qk_ack_frame_info f;
    assert_int_equal(qk_ack_build(&t, 0, 3, &f), QK_ERR_AGAIN);
    assert_int_equal(qk_ack_on_ack_sent(&t, 0), QK_ERR_STATE);
    qk_ack_on_packet_received(&t, 0, true, QK_ECN_NOT_ECT, 0);
    assert_int_equal(qk_ack_build(&t, 0, 3, &f), 0);
    assert_false(f.ecn);
    qk_ack_on_packet_received(&t, 1, true, QK_ECN_ECT0, 0);
    qk_ack_on_packet_received(&t, 2, false, QK_ECN_ECT0, 0);
    qk_ack_on_packet_received(&t, 3, true, QK_ECN_ECT1, 0);
    qk_ack_on_packet_received(&t, 4, true, QK_ECN_CE, 0);
    /* Duplicates are reported and not counted again. */
    assert_int_equal(qk_ack_on_packet_received(&t, 4, true, QK_ECN_CE, 0), 1);
    assert_int_equal(qk_ack_on_packet_received(&t, 1, true, QK_ECN_ECT0, 0), 1);
    assert_int_equal(t.stats.duplicates, 2);
    assert_int_equal(qk_ack_build(&t, 0, 3, &f), 0);
    assert_true(f.ecn);
    assert_int_equal(f.ect0, 2);
    assert_int_equal(f.ect1, 1);
    assert_int_equal(f.ce, 1);
    qk_ack_tracker_free(&t);
}

static void test_build_delay_and_ranges(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 1, 1, true);
    const uint64_t pns[] = {1, 2, 3, 7, 9, 10};
    for (int i = 0; i < 6; i++) qk_ack_on_packet_received(&t, pns[i], true, 0, 2 * MS);
    qk_ack_frame_info f;
    assert_int_equal(qk_ack_build(&t, 10 * MS, 3, &f), 0); /* 8 ms = 8000 us >> 3 */
    assert_int_equal(f.largest, 10);
    assert_int_equal(f.ack_delay_ns, 8 * MS);
    assert_int_equal(f.ack_delay, 1000);
    assert_int_equal(f.n_ranges, 3);
    assert_int_equal(f.ranges[0].start, 1);
    assert_int_equal(f.ranges[0].end, 4);
    assert_int_equal(f.ranges[1].start, 7);
    assert_int_equal(f.ranges[1].end, 8);
    assert_int_equal(f.ranges[2].start, 9);
    assert_int_equal(f.ranges[2].end, 11);
    assert_int_equal(qk_ack_build(&t, 10 * MS, 0, &f), 0);
    assert_int_equal(f.ack_delay, 8000);
    assert_int_equal(qk_ack_build(&t, 10 * MS, 21, &f), QK_ERR_INVALID_ARG);
    qk_ack_tracker_free(&t);
}

/* shared/seeds/003: an immediate ACK must never lose a pending delayed-ACK
 * obligation for packets it did not cover. */
static void test_no_lost_obligation(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 10, 1, true);
    qk_ack_on_packet_received(&t, 0, true, QK_ECN_ECT0, 0); /* delayed obligation */
    assert_int_equal(qk_ack_deadline(&t), 25 * MS);
    qk_ack_on_packet_received(&t, 1, true, QK_ECN_CE, 1 * MS); /* CE: immediate */
    qk_ack_frame_info f;
    assert_int_equal(qk_ack_build(&t, 2 * MS, 3, &f), 0);
    /* Packets arrive after the ACK was built but before it was sent. */
    qk_ack_on_packet_received(&t, 2, true, QK_ECN_CE, 3 * MS);
    qk_ack_on_packet_received(&t, 3, false, QK_ECN_ECT0, 3 * MS);
    assert_int_equal(qk_ack_on_ack_sent(&t, 4 * MS), 0);
    /* The sent ACK covered 0..1 only: 2 is still owed, with its own timer. */
    assert_true(qk_ack_has_new(&t));
    assert_int_equal(qk_ack_deadline(&t), 3 * MS + 25 * MS);
    assert_int_equal(t.largest_acked, 1);
    /* An immediate condition raised after the build also survives. */
    qk_ack_on_immediate_ack_frame(&t, 5 * MS);
    assert_int_equal(qk_ack_build(&t, 5 * MS, 3, &f), 0);
    qk_ack_on_immediate_ack_frame(&t, 6 * MS);
    assert_int_equal(qk_ack_on_ack_sent(&t, 6 * MS), 0);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_FRAME);
    assert_true(qk_ack_should_ack_now(&t, 6 * MS));
    /* Rebuilding before sending covers everything. */
    assert_int_equal(qk_ack_build(&t, 7 * MS, 3, &f), 0);
    qk_ack_on_packet_received(&t, 4, true, 0, 7 * MS);
    assert_int_equal(qk_ack_build(&t, 8 * MS, 3, &f), 0);
    assert_int_equal(f.largest, 4);
    assert_int_equal(qk_ack_on_ack_sent(&t, 8 * MS), 0);
    assert_int_equal(qk_ack_deadline(&t), QK_TIME_INFINITE);
    assert_false(qk_ack_has_new(&t));
    /* After an immediate ACK, a new packet starts a fresh delayed timer. */
    qk_ack_on_packet_received(&t, 5, true, 0, 50 * MS);
    assert_int_equal(qk_ack_deadline(&t), 75 * MS);
    qk_ack_tracker_free(&t);
}

static void test_bounded_ranges(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 1, 1, true);
    t.received.max_ranges = 16;
    /* Adversarial: every other pn, 1000 ranges' worth. */
    for (uint64_t pn = 0; pn < 2000; pn += 2) {
        assert_int_equal(qk_ack_on_packet_received(&t, pn, true, 0, pn), 0);
        assert_true(t.received.n <= 16);
    }
    assert_int_equal(t.received.n, 16);
    /* The highest are kept: 1968, 1970, ..., 1998. */
    assert_int_equal(qk_rangeset_max(&t.received), 1998);
    assert_int_equal(qk_rangeset_min(&t.received), 1968);
    assert_int_equal(t.stats.ranges_dropped, 1000 - 16);
    /* Below the forgotten horizon: treated as duplicate (RFC 9000 §12.3). */
    assert_int_equal(qk_ack_on_packet_received(&t, 1, true, 0, 0), 1);
    assert_int_equal(qk_ack_on_packet_received(&t, 1966, true, 0, 0), 1);
    /* A gap inside the window is new and merges. */
    assert_int_equal(qk_ack_on_packet_received(&t, 1997, true, 0, 0), 0);
    assert_int_equal(t.received.n, 15);
    /* A new range on top while full forgets the lowest range (1968). */
    assert_int_equal(qk_ack_on_packet_received(&t, 2001, true, 0, 0), 0);
    assert_int_equal(t.received.n, 16);
    assert_int_equal(qk_ack_on_packet_received(&t, 2003, true, 0, 0), 0);
    assert_int_equal(t.received.n, 16);
    assert_int_equal(t.stats.ranges_dropped, 1000 - 16 + 1);
    assert_int_equal(qk_rangeset_min(&t.received), 1970);
    assert_int_equal(qk_ack_on_packet_received(&t, 1968, true, 0, 0), 1);
    assert_int_equal(qk_ack_on_packet_received(&t, 1969, true, 0, 0), 0);
    assert_int_equal(qk_rangeset_min(&t.received), 1969);
    /* Full, and the pn is older than every kept range (but above the
     * floor): refused without forgetting newer ranges. */
    for (uint64_t pn = 2005; t.received.n < 16; pn += 2)
        qk_ack_on_packet_received(&t, pn, true, 0, 0);
    uint64_t dropped = t.stats.ranges_dropped;
    t.floor_pn = 1900; /* as if the lower ranges had been pruned */
    assert_int_equal(qk_ack_on_packet_received(&t, 1950, true, 0, 0), 1);
    assert_int_equal(t.stats.ranges_dropped, dropped);
    assert_int_equal(qk_rangeset_min(&t.received), 1969);
    qk_ack_tracker_free(&t);
}

static void test_prune_on_ack_of_ack(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 1, 1, true);
    for (uint64_t pn = 0; pn < 10; pn++)
        if (pn != 5) qk_ack_on_packet_received(&t, pn, true, 0, 0);
    assert_int_equal(send_ack(&t, 1), 9);
    assert_int_equal(t.received.n, 2);
    /* RFC 9000 §13.2.4: our ACK (largest 9) was acknowledged. */
    qk_ack_on_ack_frame_acked(&t, 9);
    assert_int_equal(t.received.n, 1);
    assert_int_equal(qk_rangeset_min(&t.received), 9);
    /* Below the floor everything received counts as a duplicate... */
    assert_true(qk_ack_is_duplicate(&t, 4));
    assert_true(qk_ack_is_duplicate(&t, 8));
    qk_ack_on_packet_received(&t, 10, true, 0, 2);
    qk_ack_frame_info f;
    assert_int_equal(qk_ack_build(&t, 3, 3, &f), 0);
    assert_int_equal(f.n_ranges, 1);
    assert_int_equal(f.ranges[0].start, 9);
    assert_int_equal(f.ranges[0].end, 11);
    /* An older ack-of-ack changes nothing. */
    qk_ack_on_ack_frame_acked(&t, 3);
    assert_int_equal(qk_rangeset_min(&t.received), 9);
    /* ...but pn 5 never arrived (RFC 9000 §12.3 forbids only processing a
     * packet twice): arriving late, it is new once and reported. */
    assert_false(qk_ack_is_duplicate(&t, 5));
    assert_int_equal(qk_ack_on_packet_received(&t, 5, true, 0, 3), 0);
    assert_int_equal(qk_ack_on_packet_received(&t, 5, true, 0, 3), 1);
    assert_true(qk_ack_is_duplicate(&t, 5));
    assert_int_equal(qk_ack_build(&t, 4, 3, &f), 0);
    assert_int_equal(f.n_ranges, 2);
    assert_int_equal(f.ranges[0].start, 5); /* ascending */
    assert_int_equal(f.ranges[0].end, 6);
    assert_int_equal(f.ranges[1].start, 9);
    qk_ack_tracker_free(&t);
}

/* The gaps kept below the floor are bounded (QK_ACK_MAX_GAPS): with more,
 * the oldest are forgotten and count as duplicates again. */
static void test_gaps_bounded(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 1, 1, true);
    for (uint64_t pn = 0; pn < 40; pn += 2) qk_ack_on_packet_received(&t, pn, true, 0, 0);
    qk_ack_on_ack_frame_acked(&t, 38); /* 19 one-pn gaps: 1, 3, ..., 37 */
    assert_int_equal(t.n_gaps, QK_ACK_MAX_GAPS);
    assert_true(qk_ack_is_duplicate(&t, 1));   /* the oldest: forgotten */
    assert_false(qk_ack_is_duplicate(&t, 37)); /* the newest: kept */
    assert_true(qk_ack_is_duplicate(&t, 36));  /* received */
    assert_int_equal(qk_ack_on_packet_received(&t, 37, true, 0, 1), 0);
    assert_true(qk_ack_is_duplicate(&t, 37));
    assert_int_equal(t.n_gaps, QK_ACK_MAX_GAPS - 1);
    qk_ack_tracker_free(&t);
}

/* ack-frequency-12 §6: long-idle rule. With the rule on (period = srtt
 * 40 ms) and a threshold of 10, a packet arriving more than 40 ms after the
 * last ACK is acknowledged at once; one arriving sooner waits. */
static void test_long_idle_rule(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 10, 3, true);
    qk_ack_on_packet_received(&t, 0, true, 0, 0);
    assert_int_equal(qk_ack_deadline(&t), 25 * MS); /* no ACK sent yet: rule idle */
    send_ack(&t, 25 * MS);
    /* Rule off (default): a packet after a long silence waits for the timer. */
    qk_ack_on_packet_received(&t, 1, true, 0, 500 * MS);
    assert_int_equal(qk_ack_deadline(&t), 525 * MS);
    send_ack(&t, 525 * MS);
    qk_ack_tracker_set_idle(&t, 40 * MS);
    /* 30 ms after the last ACK: not idle, the threshold/delay apply. */
    qk_ack_on_packet_received(&t, 2, true, 0, 555 * MS);
    assert_int_equal(qk_ack_immediate_reasons(&t), 0);
    assert_int_equal(qk_ack_deadline(&t), 580 * MS);
    send_ack(&t, 580 * MS);
    /* 41 ms after the last ACK: acknowledged at once. */
    qk_ack_on_packet_received(&t, 3, true, 0, 621 * MS);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_IDLE);
    assert_int_equal(qk_ack_deadline(&t), 621 * MS);
    send_ack(&t, 621 * MS);
    /* Non-ack-eliciting packets never trigger it. */
    qk_ack_on_packet_received(&t, 4, false, 0, 700 * MS);
    assert_int_equal(qk_ack_deadline(&t), QK_TIME_INFINITE);
    /* Only the first packet after the silence counts: the next ones in the
     * same burst follow the threshold again. */
    qk_ack_on_packet_received(&t, 5, true, 0, 800 * MS);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_IDLE);
    send_ack(&t, 800 * MS);
    qk_ack_on_packet_received(&t, 6, true, 0, 801 * MS);
    assert_int_equal(qk_ack_immediate_reasons(&t), 0);
    qk_ack_tracker_free(&t);
}

/* ack-frequency-12 §6: every received packet is acknowledged at least once,
 * including non-ack-eliciting ones and those arriving between building an
 * ACK and sending it. */
static void test_every_packet_acked_once(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 10, 0, true);
    qk_ack_frame_info f;
    for (uint64_t pn = 0; pn < 5; pn++) qk_ack_on_packet_received(&t, pn, pn != 2, 0, pn);
    assert_int_equal(qk_ack_build(&t, 10, 3, &f), 0);
    assert_int_equal(f.largest, 4);
    assert_int_equal(f.n_ranges, 1);
    assert_int_equal(f.ranges[0].start, 0);
    assert_int_equal(f.ranges[0].end, 5); /* pn 2 (non-ack-eliciting) included */
    /* Arrives after the build: not covered, stays owed. */
    qk_ack_on_packet_received(&t, 5, false, 0, 11);
    qk_ack_on_packet_received(&t, 6, true, 0, 12);
    assert_int_equal(qk_ack_on_ack_sent(&t, 13), 0);
    assert_true(qk_ack_has_new(&t));
    assert_int_equal(qk_ack_deadline(&t), 12 + 25 * MS);
    assert_int_equal(qk_ack_build(&t, 12 + 25 * MS, 3, &f), 0);
    assert_int_equal(f.largest, 6);
    assert_int_equal(f.ranges[f.n_ranges - 1].end, 7);
    qk_ack_tracker_free(&t);
}

/* ack-frequency-12 §6.3 with shared/seeds/003: a CE transition forces an ACK
 * while a delayed ACK for earlier packets is pending; the forced ACK covers
 * them, and a packet arriving while it is being built keeps its own deadline. */
static void test_ce_with_delayed_pending(void **state)
{
    (void)state;
    qk_ack_tracker t;
    init_policy(&t, QK_PN_SPACE_APP, 10, 0, true);
    qk_ack_on_packet_received(&t, 0, true, QK_ECN_ECT0, 0);
    qk_ack_on_packet_received(&t, 1, true, QK_ECN_ECT0, 1 * MS);
    assert_int_equal(qk_ack_deadline(&t), 25 * MS); /* delayed ACK pending */
    qk_ack_on_packet_received(&t, 2, true, QK_ECN_CE, 5 * MS);
    assert_int_equal(qk_ack_immediate_reasons(&t), QK_ACK_WHY_CE);
    assert_int_equal(qk_ack_deadline(&t), 5 * MS);
    qk_ack_frame_info f;
    assert_int_equal(qk_ack_build(&t, 5 * MS, 3, &f), 0);
    assert_int_equal(f.ce, 1);
    qk_ack_on_packet_received(&t, 3, true, QK_ECN_ECT0, 6 * MS);
    assert_int_equal(qk_ack_on_ack_sent(&t, 6 * MS), 0);
    /* pn 3's own delayed ACK is due 25 ms after it, not forgotten. */
    assert_int_equal(qk_ack_deadline(&t), 31 * MS);
    assert_int_equal(qk_ack_immediate_reasons(&t), 0);
    qk_ack_tracker_free(&t);
}

/* shared/seeds/003 replayed: the sender is at its minimum window (two
 * packets in QUIC, RFC 9002 §7.2) and sends pn 0 (ECT(0)) and pn 1, which
 * the bottleneck marks CE, 100 us apart. pn 0 leaves a delayed ACK pending
 * when pn 1 changes the CE state. Nothing more is sent until an ACK frees
 * the window or the PTO (here at 40 ms) sends a probe. Returns, in ack_t[],
 * when each of pn 0 and pn 1 is first acknowledged (and with what CE count). */
static void seed003_replay(bool bug, qk_time ack_t[2], uint64_t ce_at[2])
{
    qk_ack_tracker t;
    qk_ack_policy p;
    qk_ack_policy_default(&p); /* threshold 1, 25 ms, CE at once */
    p.ecn_ack_bug = bug;
    assert_int_equal(qk_ack_tracker_init(&t, QK_PN_SPACE_APP, &p, 64), 0);
    const qk_time us = QK_NS_PER_US, pto = 40 * MS;
    ack_t[0] = ack_t[1] = QK_TIME_INFINITE;
    struct {
        uint64_t pn;
        uint8_t ecn;
        qk_time at;
    } rx[] = {{0, QK_ECN_ECT0, 0}, {1, QK_ECN_CE, 100 * us}, {2, QK_ECN_ECT0, 100 * us + pto}};
    size_t next = 0;
    qk_time now = 0;
    while (now < 200 * MS && ack_t[1] == QK_TIME_INFINITE) {
        /* The probe (pn 2) is sent only if pn 1 is still unacknowledged at the PTO. */
        qk_time arrival = next < 3 ? rx[next].at : QK_TIME_INFINITE;
        qk_time due = qk_ack_deadline(&t);
        if (arrival <= due) {
            now = arrival;
            assert_int_equal(qk_ack_on_packet_received(&t, rx[next].pn, true, rx[next].ecn, now),
                             0);
            next++;
            continue;
        }
        if (due == QK_TIME_INFINITE) break;
        now = due;
        qk_ack_frame_info f;
        assert_int_equal(qk_ack_build(&t, now, 3, &f), 0);
        for (uint64_t pn = 0; pn < 2; pn++) {
            bool covered = false;
            for (size_t i = 0; i < f.n_ranges; i++)
                covered |= pn >= f.ranges[i].start && pn < f.ranges[i].end;
            if (covered && ack_t[pn] == QK_TIME_INFINITE) {
                ack_t[pn] = now;
                ce_at[pn] = f.ce;
            }
        }
        assert_int_equal(qk_ack_on_ack_sent(&t, now), 0);
    }
    qk_ack_tracker_free(&t);
}

static void test_seed003_delayed_ack_kept(void **state)
{
    (void)state;
    const qk_time us = QK_NS_PER_US;
    qk_time at[2];
    uint64_t ce[2];
    /* RFC 9000 §13.2.1: the CE packet is acknowledged at once, and the
     * immediate ACK also covers pn 0, whose delayed ACK was pending: one
     * ACK at 100 us reports both, with the CE count. */
    seed003_replay(false, at, ce);
    assert_int_equal(at[0], 100 * us);
    assert_int_equal(at[1], 100 * us);
    assert_int_equal(ce[1], 1);

    /* The bug: the CE-change ACK covers pn 0 only (CE count 0, the prior
     * state) and cancels the delayed ACK pn 1 was owed. The window stays
     * full until the PTO probe (pn 2, at 40.1 ms) arrives; it is not CE and
     * no ACK is pending, so it waits max_ack_delay: pn 1 is acknowledged at
     * 65.1 ms, 650x later. */
    seed003_replay(true, at, ce);
    assert_int_equal(at[0], 100 * us);
    assert_int_equal(ce[0], 0);
    assert_int_equal(at[1], 100 * us + 40 * MS + 25 * MS);
    assert_int_equal(ce[1], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_second_packet),
        cmocka_unit_test(test_threshold_policy),
        cmocka_unit_test(test_handshake_spaces_immediate),
        cmocka_unit_test(test_reorder_rfc9000),
        cmocka_unit_test(test_reorder_threshold_3),
        cmocka_unit_test(test_reorder_threshold_5),
        cmocka_unit_test(test_reorder_threshold_1_table),
        cmocka_unit_test(test_threshold_10_reorder_1),
        cmocka_unit_test(test_frame_ranges_capped),
        cmocka_unit_test(test_reorder_ignored),
        cmocka_unit_test(test_ce),
        cmocka_unit_test(test_ecn_counts_and_duplicates),
        cmocka_unit_test(test_build_delay_and_ranges),
        cmocka_unit_test(test_no_lost_obligation),
        cmocka_unit_test(test_bounded_ranges),
        cmocka_unit_test(test_prune_on_ack_of_ack),
        cmocka_unit_test(test_gaps_bounded),
        cmocka_unit_test(test_long_idle_rule),
        cmocka_unit_test(test_every_packet_acked_once),
        cmocka_unit_test(test_ce_with_delayed_pending),
        cmocka_unit_test(test_seed003_delayed_ack_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
