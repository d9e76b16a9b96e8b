/* SPDX-License-Identifier: MIT */
/* Window use under random loss: 25 ms each way, 5 %
 * Bernoulli loss each way, no rate limit (as `quack netem --delay 25ms
 * --loss 5%`), one CUBIC download. The sender's bytes in flight, sampled
 * every millisecond of virtual time after slow start, must average at least
 * 95 % of its congestion window. RFC 9002 §7 ("MUST NOT send a packet if it
 * would cause bytes_in_flight ... to be larger than the congestion window")
 * limits bytes: with full-size datagrams only floor(cwnd / mds) packets fit,
 * 91-92 % of a 4-8 packet window on average (the rule before this test's
 * 95 %: it failed here), so the sender fills the remainder with a shorter
 * datagram when it is at least half a datagram (conn_send.c
 * cwnd_room_bytes): 97-98 %. A sender that leaves a datagram of the window
 * unused (an off-by-one in the send test, a pacer or an ACK path that
 * stalls) lands at 70-80 %.
 *
 * Measured when written first: 0.917 (qlog, seed 3, 10 MiB). The issue's
 * "~4 KB in flight against a ~9 KB window" was the qlog logging
 * metrics_updated before the packet it follows was counted; the rest of the
 * rate gap to ngtcp2 0.12 is its CUBIC and its overshoot of the window
 * (docs/perf.md "Random loss").
 *
 * The mean window must also reach 80 % of the AIMD model of RFC 9438
 * §4.3 at the run's own reduction rate (aimd_window_pkts): in flight /
 * cwnd alone does not see a window that fills but grows too slowly.
 *
 * The sender's loss machinery is checked on the same runs: no persistent
 * congestion (RFC 9002 §7.6: random loss never spans 3 PTOs without an
 * acknowledgement), no spurious loss and so no reordering window (RFC 8985
 * §6.2: it must stay at its minimum without reordering), at most one
 * reduction per loss (§7.3.2: fewer, as losses within a recovery period do
 * not reduce again), few PTOs (tail losses are found by the thresholds,
 * §6.1). Seed 7 loses the client's first Initial: the handshake takes over
 * a second there, and the test waits for the server's connection. */
#include <math.h>

#include "qk_test.h"
#include "quic_env.h"
#include "transport/conn/conn.h" /* the sender's recovery state */

#define LOSS_P     0.05
#define DELAY_NS   (25 * QK_NS_PER_MS)
#define SIZE_BYTES (3u << 20)
#define MDS_BYTES  1452

static void loss_path(quic_env *e, uint64_t seed)
{
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.delay_ns = DELAY_NS;
    l.loss = QK_SIM_LOSS_BERNOULLI;
    l.loss_p = LOSS_P;
    assert_int_equal(quic_env_init(e, seed, &l, &l), 0);
}

/* The loss machinery's behaviour under pure random loss (see above). */
static void sender_checks(qk_conn *s)
{
    assert_non_null(s);
    qk_conn_stats st;
    qk_conn_stats_get(s, &st);
    fprintf(stderr,
            "  sent %llu lost %llu spurious %llu PTOs %llu reductions %llu (%.2f per loss), "
            "persistent %llu, reordering window x%u\n",
            (unsigned long long)st.pkts_sent, (unsigned long long)st.pkts_lost,
            (unsigned long long)st.pkts_spurious, (unsigned long long)st.pto_count,
            (unsigned long long)st.congestion_events,
            st.pkts_lost ? (double)st.congestion_events / (double)st.pkts_lost : 0.0,
            (unsigned long long)s->rec.stats.persistent_congestion, (unsigned)s->rec.reo_wnd_mult);
    assert_true(st.pkts_lost > 0);
    assert_int_equal(s->rec.stats.persistent_congestion, 0); /* RFC 9002 §7.6 */
    assert_int_equal(st.pkts_spurious, 0);
    assert_false(s->rec.reordering_seen); /* RFC 8985 §6.2 */
    assert_int_equal(s->rec.reo_wnd_mult, 1);
    assert_true(st.congestion_events <= st.pkts_lost); /* RFC 9002 §7.3.2 */
    assert_true(st.pto_count <= 10);
}

typedef struct loss_run {
    double use;         /* mean bytes in flight / mean cwnd */
    double goodput_bps; /* application bytes / completion time */
    double cwnd_pkts;   /* mean cwnd, in datagrams */
    double model_pkts;  /* aimd_window_pkts at the run's reduction rate */
} loss_run;

/* The mean window of AIMD(alpha, beta) with one reduction per 1/p packets
 * sent (a sawtooth between beta W and W growing alpha datagrams per round
 * trip): sqrt(alpha (1 + beta) / (2 (1 - beta) p)) datagrams. RFC 9438
 * §4.3 sets CUBIC's Reno-friendly alpha = 3 (1 - beta) / (1 + beta) so that
 * this equals Reno's sqrt(3 / (2 p)); at 5 % loss and 50 ms the window is
 * 4-8 datagrams and CUBIC lives in that region (K is over a second). */
static double aimd_window_pkts(double p)
{
    const double beta = 0.7, alpha = 3 * (1 - beta) / (1 + beta);
    return sqrt(alpha * (1 + beta) / (2 * (1 - beta) * p));
}

/* One download: window use, goodput, mean window and its model. */
static loss_run run_download(uint64_t seed)
{
    quic_env e;
    loss_path(&e, seed);
    qk_simq_cfg c = {.size_bytes = SIZE_BYTES,
                     .cc = QK_CONFIG_CC_CUBIC,
                     .window_bytes = 16u << 20,
                     .udp_payload_bytes = MDS_BYTES};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    qk_time t = QK_NS_PER_S, end = 200 * QK_NS_PER_S;
    qk_sim_run(e.sim, t); /* past the handshake and slow start */
    double sum_flight = 0, sum_cwnd = 0, samples = 0;
    while (!qk_simq_result_get(q)->done && t < end) {
        t += QK_NS_PER_MS;
        qk_sim_run(e.sim, t);
        qk_conn *s = qk_simq_server_conn(q);
        if (!s) continue; /* a lost Initial: the handshake is still running */
        qk_conn_stats st;
        qk_conn_stats_get(s, &st);
        sum_flight += (double)st.bytes_in_flight;
        sum_cwnd += (double)st.cwnd_bytes;
        samples++;
    }
    const qk_simq_result *r = qk_simq_result_get(q);
    assert_true(r->done);
    qk_conn *s = qk_simq_server_conn(q);
    sender_checks(s);
    assert_false(r->mismatch);
    qk_conn_stats st;
    qk_conn_stats_get(s, &st);
    loss_run out = {
        .use = sum_cwnd > 0 ? sum_flight / sum_cwnd : 0,
        .goodput_bps = (double)SIZE_BYTES * 8 / ((double)r->completion_ns / 1e9),
        .cwnd_pkts = samples > 0 ? sum_cwnd / samples / MDS_BYTES : 0,
        .model_pkts = aimd_window_pkts((double)st.congestion_events / (double)st.pkts_sent),
    };
    quic_env_free(&e);
    return out;
}

static void test_window_use_5pct_loss(void **s)
{
    (void)s;
    static const uint64_t seeds[] = {3, 4, 7};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        uint64_t seed = seeds[i];
        loss_run r = run_download(seed);
        fprintf(stderr,
                "seed %llu: in flight / cwnd %.3f, goodput %.2f Mbit/s, "
                "mean cwnd %.2f datagrams, AIMD model %.2f (x%.2f)\n",
                (unsigned long long)seed, r.use, r.goodput_bps / 1e6, r.cwnd_pkts, r.model_pkts,
                r.cwnd_pkts / r.model_pkts);
        assert_true(r.use >= 0.95);
        /* Reno-friendly CUBIC at p = 5 %: ~1.2 Mbit/s of 1.4 kB packets per
         * 50 ms (RFC 9438 §4.3); far below means the window collapsed. */
        assert_true(r.goodput_bps >= 0.8e6);
        /* Between the reductions it takes, the window grows as RFC 9438
         * §4.3 says: at least 80 % of the AIMD model at the run's own
         * reduction rate (measured 0.87-0.89: each recovery period, RFC
         * 9002 §7.3.2, grows nothing for a round trip, two here where the
         * flight sent at the same virtual instant as the reduction counts
         * as sent before it). The checks above do not see a window that
         * stops growing (ACKs wrongly taken as app-limited, RFC 9002 §7.8;
         * a recovery period that outlasts its round trip): in flight / cwnd stays high
         * and goodput drops only a little at first. Reno-friendly growth cut
         * to 0.75 alpha lands at 0.78. */
        assert_true(r.cwnd_pkts >= 0.80 * r.model_pkts);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_use_5pct_loss),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
