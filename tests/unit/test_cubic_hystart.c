/* SPDX-License-Identifier: MIT */
/* HyStart++ (RFC 9406) in cc/cubic.c keeps its rounds and RTT samples on
 * application-limited ACKs: only the window growth is gated by RFC 9002
 * §7.8, not the delay measurement. */
#include "qk_test.h"
#include "transport/recovery/cc/cc.h"

#define MS QK_NS_PER_MS

static void round_of(qk_cc *cc, qk_time send_at, qk_time ack_at, qk_time rtt, bool app_limited)
{
    for (int i = 0; i < 10; i++) cc->ops->on_packet_sent(cc, 1200, send_at + (qk_time)i * MS);
    for (int i = 0; i < 10; i++) {
        qk_cc_ack a = {.now = ack_at + (qk_time)i * MS,
                       .sent_time = send_at + (qk_time)i * MS,
                       .bytes = 1200,
                       .smoothed_rtt_ns = rtt,
                       .min_rtt_ns = 50 * MS,
                       .latest_rtt_ns = rtt,
                       .app_limited = app_limited};
        cc->ops->on_packet_acked(cc, &a);
    }
}

static void test_hystart_sees_app_limited_acks(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, 1200, 0), 0);
    uint64_t w0 = cc.cwnd_bytes;
    round_of(&cc, 1 * MS, 60 * MS, 50 * MS, true);
    /* RTT 70 ms >= 50 ms + max(4 ms, min(16 ms, 50/8 ms)): conservative slow start. */
    round_of(&cc, 80 * MS, 150 * MS, 70 * MS, true);
    assert_true(cc.u.cubic.hystart_css);
    assert_int_equal(cc.cwnd_bytes, w0); /* app-limited: no growth */
}

static void test_hystart_growth_when_cwnd_limited(void **state)
{
    (void)state;
    qk_cc cc;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, 1200, 0), 0);
    uint64_t w0 = cc.cwnd_bytes;
    round_of(&cc, 1 * MS, 60 * MS, 50 * MS, false);
    assert_int_equal(cc.cwnd_bytes, w0 + 10 * 1200); /* RFC 9002 §7.3.1: + acked bytes */
    round_of(&cc, 80 * MS, 150 * MS, 70 * MS, false);
    assert_true(cc.u.cubic.hystart_css);
    /* RFC 9406 §4.2: CSS grows by acked / CSS_GROWTH_DIVISOR (4) after the
     * 8th sample of the round made the RTT rise visible. */
    assert_true(cc.cwnd_bytes < w0 + 20 * 1200);
    assert_true(cc.cwnd_bytes > w0 + 10 * 1200);
}

/* RFC 9406 §4.2 counts RTT samples per arriving ACK: an ACK frame that
 * acknowledges two packets (recovery reports them with the same time) is one
 * sample, so the RTT rise is acted on at the 8th ACK frame, not the 8th packet. */
static void acked_in_pairs(qk_cc *cc, qk_time send_at, qk_time rtt, int pkts, int *frames_to_css)
{
    for (int i = 0; i < pkts; i++) cc->ops->on_packet_sent(cc, 1200, send_at + (qk_time)i * MS);
    *frames_to_css = 0;
    for (int f = 0; f < pkts / 2; f++) {
        qk_time sent = send_at + (qk_time)(2 * f + 1) * MS; /* largest of the pair */
        for (int k = 0; k < 2; k++) {
            qk_cc_ack a = {.now = sent + rtt,
                           .sent_time = sent - (qk_time)(1 - k) * MS,
                           .bytes = 1200,
                           .smoothed_rtt_ns = rtt,
                           .min_rtt_ns = 50 * MS,
                           .latest_rtt_ns = rtt};
            cc->ops->on_packet_acked(cc, &a);
        }
        if (cc->u.cubic.hystart_css && !*frames_to_css) *frames_to_css = f + 1;
    }
}

static void test_hystart_samples_per_ack_frame(void **state)
{
    (void)state;
    qk_cc cc;
    int frames;
    assert_int_equal(qk_cc_init(&cc, QK_CC_CUBIC, 1200, 0), 0);
    acked_in_pairs(&cc, 1 * MS, 50 * MS, 20, &frames);
    assert_int_equal(frames, 0);
    acked_in_pairs(&cc, 100 * MS, 70 * MS, 20, &frames);
    assert_int_equal(frames, 8); /* N_RTT_SAMPLE ACK frames (16 packets) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hystart_sees_app_limited_acks),
        cmocka_unit_test(test_hystart_growth_when_cwnd_limited),
        cmocka_unit_test(test_hystart_samples_per_ack_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
