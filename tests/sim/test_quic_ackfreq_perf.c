/* SPDX-License-Identifier: MIT */
/* ACK-frequency auto policy vs RFC 9000 acknowledgements, same seed, same
 * path (shortened variants of experiments 2 and 4 in
 * docs/experiments/ack-frequency.md): auto must cost no goodput.
 *
 * - Loss-limited CUBIC (0.1% random loss, 40 ms RTT): the window is ~45
 *   packets, so the packets the receiver holds back under a threshold cost
 *   goodput (the sender counts them in flight, RFC 9002 §7); auto's ACK
 *   points at burst ends keep that hold short. The opt-in
 *   qk_config.ack_frequency_cwnd_allowance ((T - 1) / 2 extra datagrams)
 *   exceeds cwnd, so it is off by default.
 * - 5% reordering, NewReno, 100 Mbit/s: a threshold of 64 made each ACK
 *   release more than the pacer's burst, -7% goodput; auto caps it at 16. */
#include "qk_test.h"
#include "quic_env.h"

#define MS QK_NS_PER_MS

typedef struct run_out {
    uint64_t read_bytes;
    uint64_t acks_sent, acks_immediate, pkts_received;
} run_out;

static void allowance_on(void *ctx, qk_config *cfg, bool server)
{
    (void)ctx;
    (void)server;
    cfg->ack_frequency_cwnd_allowance = true;
}

static run_out run_ex(const qk_sim_link_cfg *fwd, const qk_sim_link_cfg *ret, qk_cc_kind cc,
                      qk_time duration_ns, int ack_frequency, uint64_t seed, bool allowance)
{
    quic_env e;
    assert_int_equal(quic_env_init(&e, seed, fwd, ret), 0);
    qk_simq_cfg c = {.duration_ns = duration_ns,
                     .cc = cc,
                     .window_bytes = 32u << 20,
                     .udp_payload_bytes = 1452,
                     .no_protection = true,
                     .ackfreq_set = true,
                     .ack_frequency = ack_frequency,
                     .min_ack_delay_set = true,
                     .min_ack_delay_ns = 1 * MS,
                     .tune = allowance ? allowance_on : NULL};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    quic_env_run_done(&e, q, duration_ns + 500 * MS);
    const qk_simq_result *res = qk_simq_result_get(q);
    assert_false(res->mismatch);
    run_out o = {.read_bytes = res->read_bytes,
                 .acks_sent = res->client_stats.ack_frames_sent,
                 .acks_immediate = res->client_stats.ack_frames_sent_immediate,
                 .pkts_received = res->client_stats.pkts_received};
    quic_env_free(&e);
    return o;
}

static run_out run(const qk_sim_link_cfg *fwd, const qk_sim_link_cfg *ret, qk_cc_kind cc,
                   qk_time duration_ns, int ack_frequency, uint64_t seed)
{
    return run_ex(fwd, ret, cc, duration_ns, ack_frequency, seed, false);
}

static qk_sim_link_cfg link_cfg(uint64_t rate_bps, uint64_t limit_bytes)
{
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.rate_bps = rate_bps;
    l.delay_ns = 20 * MS;
    l.limit_bytes = limit_bytes;
    return l;
}

/* Experiment 2, shortened: 3 seeds x 20 s instead of 10 x 120 s. */
static void test_lossy_parity(void **state)
{
    (void)state;
    qk_sim_link_cfg fwd = link_cfg(1000000000, 5000000);
    qk_sim_link_cfg ret = fwd; /* the download's data direction */
    ret.loss = QK_SIM_LOSS_BERNOULLI;
    ret.loss_p = 0.001;
    double sum = 0, sum_allow = 0;
    uint64_t acks = 0, pkts = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        run_out off = run(&fwd, &ret, QK_CONFIG_CC_CUBIC, 20 * QK_NS_PER_S, 0, seed);
        run_out au = run(&fwd, &ret, QK_CONFIG_CC_CUBIC, 20 * QK_NS_PER_S, 2, seed);
        run_out al = run_ex(&fwd, &ret, QK_CONFIG_CC_CUBIC, 20 * QK_NS_PER_S, 2, seed, true);
        double r = (double)au.read_bytes / (double)off.read_bytes;
        double ra = (double)al.read_bytes / (double)off.read_bytes;
        fprintf(stderr,
                "lossy seed %llu: off %.2f Mbit/s, auto %.2f (%.3f), auto+allowance %.2f "
                "(%.3f), ACKs/pkt %.3f\n",
                (unsigned long long)seed, off.read_bytes * 8 / 20e6, au.read_bytes * 8 / 20e6, r,
                al.read_bytes * 8 / 20e6, ra, (double)au.acks_sent / (double)au.pkts_received);
        sum += r;
        sum_allow += ra;
        acks += au.acks_sent;
        pkts += au.pkts_received;
    }
    double mean = sum / 3, mean_allow = sum_allow / 3;
    fprintf(stderr, "lossy: auto/off mean %.3f, with allowance %.3f, auto ACKs per packet %.3f\n",
            mean, mean_allow, (double)acks / (double)pkts);
    /* Experiment 2's target: within 2% of the RFC default at <= 1 ACK per
     * 10 packets (20 s runs include slow start, where auto asks for ~8 ACKs
     * per window). Before the burst-end ACK points auto gave 0.96-0.98 at
     * 0.11-0.12. */
    assert_true(mean >= 0.98);
    assert_true((double)acks / (double)pkts <= 0.105);
    /* The opt-in allowance is not much more aggressive. */
    assert_true(mean_allow >= 0.98);
    assert_true(mean_allow <= 1.06);
}

/* Experiment 4, shortened (6 s): no goodput loss, far fewer immediate ACKs. */
static void test_reorder_parity(void **state)
{
    (void)state;
    qk_sim_link_cfg fwd = link_cfg(100000000, 500000);
    qk_sim_link_cfg ret = fwd;
    ret.reorder_p = 0.05;
    ret.reorder_delay_ns = 200 * QK_NS_PER_US;
    run_out off = run(&fwd, &ret, QK_CONFIG_CC_NEWRENO, 6 * QK_NS_PER_S, 0, 41);
    run_out au = run(&fwd, &ret, QK_CONFIG_CC_NEWRENO, 6 * QK_NS_PER_S, 2, 41);
    double r = (double)au.read_bytes / (double)off.read_bytes;
    fprintf(stderr,
            "reorder: off %.2f Mbit/s (%llu immediate ACKs), auto %.2f Mbit/s (%llu), ratio "
            "%.3f\n",
            off.read_bytes * 8 / 6e6, (unsigned long long)off.acks_immediate,
            au.read_bytes * 8 / 6e6, (unsigned long long)au.acks_immediate, r);
    /* Measured 0.996 (0.988 before RFC 9000's cadence while the window
     * refills after slow start; 0.93 with the threshold capped at 64). */
    assert_true(r >= 0.99);
    /* Measured 2.6x fewer in these 6 s, 1.5 of which refill at RFC 9000's
     * cadence after slow start (30 s: 4.6x, docs/experiments). */
    assert_true(au.acks_immediate * 2 < off.acks_immediate);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lossy_parity),
        cmocka_unit_test(test_reorder_parity),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
