/* SPDX-License-Identifier: MIT */
/* Shared by the congestion-controller unit tests (test_cubic.c,
 * test_cc_slowstart_exit.c, test_cc_prague.c): feed a controller one ACK. */
#ifndef QK_TEST_CC_ACK_H
#define QK_TEST_CC_ACK_H

#include "transport/recovery/cc/cc.h"

#include <string.h>

/* An ACK at now of bytes sent at sent, the RTT estimates smoothed (and
 * latest) = srtt_ns, min = min_rtt_ns. */
static inline void qk_test_cc_ack_rtts(qk_cc *cc, qk_time now, qk_time sent, uint64_t bytes,
                                       qk_time srtt_ns, qk_time min_rtt_ns)
{
    qk_cc_ack a;
    memset(&a, 0, sizeof a);
    a.now = now;
    a.sent_time = sent;
    a.bytes = bytes;
    a.smoothed_rtt_ns = srtt_ns;
    a.min_rtt_ns = min_rtt_ns;
    a.latest_rtt_ns = srtt_ns;
    cc->ops->on_packet_acked(cc, &a);
}

/* The same with every RTT estimate = rtt_ns. */
static inline void qk_test_cc_ack(qk_cc *cc, qk_time now, qk_time sent, uint64_t bytes,
                                  qk_time rtt_ns)
{
    qk_test_cc_ack_rtts(cc, now, sent, bytes, rtt_ns, rtt_ns);
}

#endif
