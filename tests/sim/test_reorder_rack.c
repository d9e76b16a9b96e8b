/* SPDX-License-Identifier: MIT */
/* Deep reordering costs no retransmissions: 100 Mbit/s,
 * 50 ms RTT, 1% of the data packets held back 10 ms, i.e. overtaken by
 * ~100 packets, beyond any packet threshold (the learnt one is capped at
 * 64). Before the RACK-style window (recovery.c, RFC 8985 §6.2) every held
 * packet was declared lost (1% of packets, 1700 in 20 s); now the first
 * late ACK marks reordering as seen, losses are declared by time only, with
 * reo_wnd = min_rtt / 4 = 12.5 ms > 10 ms of extra delay. Spurious
 * retransmissions must stay <= 0.5% of packets for NewReno, CUBIC and BBR,
 * and goodput near the link rate. */
#include "bbr_env.h"
#include "per_cc.h"

#define MS QK_NS_PER_MS
#define S  QK_NS_PER_S

static void reorder(qk_cc_kind cc, const char *name)
{
    bbr_path p = {.rate_bps = 100000000,
                  .one_way_ns = 25 * MS,
                  .limit_bytes = 1250000,
                  .reorder_p = 0.01,
                  .reorder_ns = 10 * MS};
    bbr_run r = bbr_run_path(&p, cc, 41, 2 * S, 8 * S);
    char what[64];
    snprintf(what, sizeof what, "%s 10 ms reordering", name);
    bbr_print(what, &r);
    assert_true(r.ok);
    assert_true(r.sent > 0);
    assert_true((double)r.spurious <= 0.005 * (double)r.sent);
    assert_true(r.goodput_bps >= 80e6);
}

int main(void)
{
    return qk_run_per_cc("test_reorder_rack", reorder);
}
