/* SPDX-License-Identifier: MIT */
/* Flow-control window auto-tuning end to end (the full experiments
 * are bench/flowtune.c and docs/experiments/flow-control.md). Shortened
 * experiment 1: one download over 1 Gbit/s x 60 ms with a 1-BDP queue for
 * 5 s, auto-tuned from 64 KiB; the fixed 256 KiB window of the yamux seed for
 * contrast; and a slow reader that must cap the receive buffer. The null
 * packet protection and 1452-byte datagrams keep the packet count down (the
 * windows, not the cipher, are under test). */
#include "qk_test.h"
#include "quic_env.h"

#define MS   QK_NS_PER_MS
#define RATE 1000000000ull
#define RTT  (60 * MS)
#define BDP  (RATE / 8 * 60 / 1000) /* 7.5 MB */

/* The download's receiving side is the client (host a); the server sends
 * over b -> a, the bottleneck with the 1-BDP queue. */
static void path(quic_env *e, uint64_t seed)
{
    qk_sim_link_cfg data, acks;
    memset(&data, 0, sizeof data);
    memset(&acks, 0, sizeof acks);
    data.rate_bps = acks.rate_bps = RATE;
    data.delay_ns = acks.delay_ns = RTT / 2;
    data.limit_bytes = BDP;
    assert_int_equal(quic_env_init(e, seed, &acks, &data), 0);
}

/* Another path with a 1-BDP queue: rate_bps both ways, rtt_ns round trip. */
static void path_at(quic_env *e, uint64_t seed, uint64_t rate_bps, qk_time rtt_ns)
{
    qk_sim_link_cfg data, acks;
    memset(&data, 0, sizeof data);
    memset(&acks, 0, sizeof acks);
    data.rate_bps = acks.rate_bps = rate_bps;
    data.delay_ns = acks.delay_ns = rtt_ns / 2;
    data.limit_bytes = rate_bps / 8 * (rtt_ns / MS) / 1000;
    assert_int_equal(quic_env_init(e, seed, &acks, &data), 0);
}

/* Application bytes read in [t0, t1) of simulated time. */
static uint64_t run_between(quic_env *e, qk_simq *q, qk_time t0, qk_time t1)
{
    qk_sim_run(e->sim, t0);
    uint64_t b0 = qk_simq_result_get(q)->read_bytes;
    qk_sim_run(e->sim, t1);
    return qk_simq_result_get(q)->read_bytes - b0;
}

static void test_autotune_fills_1g_60ms(void **s)
{
    (void)s;
    quic_env e;
    path(&e, 21);
    qk_simq_cfg c = {.duration_ns = 5 * QK_NS_PER_S,
                     .cc = QK_CONFIG_CC_CUBIC,
                     .autotune = 1,
                     .window_bytes = 64u << 10,
                     .conn_window_bytes = 256u << 10,
                     .max_window_bytes = 64u << 20,
                     .max_conn_window_bytes = 96u << 20,
                     .udp_payload_bytes = 1452,
                     .no_protection = true};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    /* Slow start and the window ramp take about a second at 60 ms; the
     * window must not be the limit afterwards. */
    uint64_t late = run_between(&e, q, 1 * QK_NS_PER_S, 5 * QK_NS_PER_S);
    double util = (double)late * 8 / 4.0 / (double)RATE;
    quic_env_run_done(&e, q, 8 * QK_NS_PER_S);
    const qk_simq_result *r = qk_simq_result_get(q);
    const qk_conn_stats *rs = &r->client_stats;
    fprintf(stderr,
            "autotune: utilisation %.3f (1..5 s), peak buffered %.2f BDP, stream window %llu, "
            "conn window %llu, lost %llu\n",
            util, (double)rs->peak_rx_buffered_bytes / BDP,
            (unsigned long long)rs->peak_stream_rx_window_bytes,
            (unsigned long long)rs->conn_rx_window_bytes,
            (unsigned long long)r->server_stats.pkts_lost);
    assert_true(util >= 0.80);
    assert_true(r->done); /* the FIN was read: no flow-control error, no stall */
    assert_false(r->mismatch);
    assert_int_equal(r->hash_read, r->hash_written);
    /* Grew from 64 KiB to at least the BDP, never beyond the caps, and the
     * connection window stayed >= 1.5x the stream window. */
    assert_true(rs->peak_stream_rx_window_bytes >= BDP);
    assert_true(rs->peak_stream_rx_window_bytes <= 64u << 20);
    assert_true(rs->conn_rx_window_bytes <= 96u << 20);
    assert_true(rs->conn_rx_window_bytes >= rs->peak_stream_rx_window_bytes);
    /* The receive buffer never held more than the connection window. */
    assert_true(rs->peak_rx_buffered_bytes <= rs->conn_rx_window_bytes);
    /* Sized for the base RTT (2 x rate x (min_rtt + 1 ms here)), not for the
     * srtt of a full queue: the stream credit committed stays within 2.5
     * BDP (it reached 5 BDP when sized by srtt). */
    fprintf(stderr, "autotune: peak stream credit %.2f BDP, connection credit %.2f BDP\n",
            (double)rs->peak_stream_rx_credit_bytes / BDP, (double)rs->peak_rx_credit_bytes / BDP);
    assert_true(rs->peak_stream_rx_credit_bytes >= BDP);
    assert_true(rs->peak_stream_rx_credit_bytes <= 5 * BDP / 2);
    quic_env_free(&e);
}

/* The seed's fixed 256 KiB window: about 256 KiB per RTT = 35 Mbit/s. */
static void test_fixed_window_is_the_limit(void **s)
{
    (void)s;
    quic_env e;
    path(&e, 22);
    qk_simq_cfg c = {.duration_ns = 3 * QK_NS_PER_S,
                     .cc = QK_CONFIG_CC_CUBIC,
                     .autotune = -1,
                     .window_bytes = 256u << 10,
                     .conn_window_bytes = 16u << 20,
                     .udp_payload_bytes = 1452,
                     .no_protection = true};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    uint64_t b = run_between(&e, q, 1 * QK_NS_PER_S, 3 * QK_NS_PER_S);
    double bps = (double)b * 8 / 2.0;
    double ideal = 256.0 * 1024 * 8 / 0.060; /* 34.95 Mbit/s */
    fprintf(stderr, "fixed 256 KiB: %.2f Mbit/s (window/RTT = %.2f)\n", bps / 1e6, ideal / 1e6);
    assert_true(bps >= 0.9 * ideal * 0.95); /* header bytes and the half-window update lag */
    assert_true(bps <= 1.1 * ideal);
    const qk_simq_result *r = qk_simq_result_get(q);
    assert_int_equal(r->client_stats.peak_stream_rx_window_bytes, 0); /* never tuned */
    quic_env_free(&e);
}

/* A reader draining 10 Mbit/s from a 1 Gbit/s path: the window stops
 * growing, the buffer stays within 2x drain rate x RTT (150 kB here), and
 * the sender is held back by flow control without any error. */
static void test_slow_reader(void **s)
{
    (void)s;
    quic_env e;
    path(&e, 23);
    qk_simq_cfg c = {.duration_ns = 3 * QK_NS_PER_S,
                     .cc = QK_CONFIG_CC_CUBIC,
                     .autotune = 1,
                     .window_bytes = 64u << 10,
                     .conn_window_bytes = 256u << 10,
                     .read_rate_bps = 10000000,
                     .udp_payload_bytes = 1452,
                     .no_protection = true};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    uint64_t b = run_between(&e, q, 1 * QK_NS_PER_S, 3 * QK_NS_PER_S);
    const qk_simq_result *r = qk_simq_result_get(q);
    const qk_conn_stats *rs = &r->client_stats;
    double drain_rtt = 10e6 / 8 * 0.060; /* 75 kB */
    fprintf(stderr,
            "slow reader: %.2f Mbit/s read, peak buffered %llu (%.2f x rate x RTT), "
            "stream window peak %llu\n",
            (double)b * 8 / 2.0 / 1e6, (unsigned long long)rs->peak_rx_buffered_bytes,
            (double)rs->peak_rx_buffered_bytes / drain_rtt,
            (unsigned long long)rs->peak_stream_rx_window_bytes);
    assert_true((double)b * 8 / 2.0 <= 10.5e6); /* the reader is the limit */
    assert_true((double)b * 8 / 2.0 >= 9.0e6);
    assert_true((double)rs->peak_rx_buffered_bytes <= 2 * drain_rtt);
    assert_false(r->client_closed);
    assert_false(r->server_closed);
    assert_false(r->mismatch);
    quic_env_free(&e);
}

/* `streams` downloads, size_bytes in all, over the path e was set up with:
 * auto-tuned from 64 KiB / 256 KiB under an endpoint budget of budget_bytes,
 * or (budget_bytes 0) with windows that never limit (no tuning, no budget).
 * Asserts that every byte arrives intact by deadline_ns and that the budget
 * is never exceeded (its peak, tracked at every grant, goes to *peak_bytes);
 * returns the time from connect to the last FIN read. Frees e. */
static qk_time streams_download(quic_env *e, int streams, uint64_t size_bytes,
                                uint64_t budget_bytes, qk_time deadline_ns, uint64_t *peak_bytes)
{
    qk_simq_cfg c = {.streams = streams,
                     .size_bytes = size_bytes,
                     .cc = QK_CONFIG_CC_CUBIC,
                     .autotune = budget_bytes ? 1 : -1,
                     .window_bytes = budget_bytes ? 64u << 10 : 16u << 20,
                     .conn_window_bytes = budget_bytes ? 256u << 10 : 1600u << 20,
                     .budget_bytes = budget_bytes,
                     .udp_payload_bytes = 1452,
                     .no_protection = true};
    qk_simq *q = quic_env_flow(e, 4433, &c);
    assert_non_null(q);
    quic_env_run_done(e, q, deadline_ns);
    const qk_simq_result *r = qk_simq_result_get(q);
    uint64_t peak = 0;
    qk_simq_budget_used(q, &peak);
    qk_time t = r->completion_ns - r->connected_ns;
    fprintf(stderr, "%d streams: budget peak %llu of %llu, conn window %llu, %.3f s\n", streams,
            (unsigned long long)peak, (unsigned long long)budget_bytes,
            (unsigned long long)r->client_stats.conn_rx_window_bytes, (double)t / 1e9);
    assert_true(r->done);
    assert_false(r->mismatch);
    assert_int_equal(r->read_bytes, size_bytes);
    if (budget_bytes) assert_true(peak <= budget_bytes); /* never beyond it */
    assert_false(r->client_closed && r->client_close.reason_err);
    if (peak_bytes) *peak_bytes = peak;
    quic_env_free(e);
    return t;
}

/* Twenty streams of 2 MB on one connection under an 8 MiB endpoint budget:
 * the transfer completes, windows grew, and the budget is never exceeded.
 * Shortened experiment 3. */
static void test_streams_under_budget(void **s)
{
    (void)s;
    quic_env e;
    path(&e, 23);
    uint64_t peak = 0;
    streams_download(&e, 20, 40000000, 8u << 20, 20 * QK_NS_PER_S, &peak);
    assert_true(peak > 0); /* windows grew, charged to the budget */
}

/* A 7 MiB endpoint budget (3.7 BDP) bounds memory, not the link's use:
 * thirty streams, 100 MB in all, on 100 Mbit/s x 150 ms (BDP 1.9 MB) finish
 * at most 5 % after windows that never limit. With the connection window
 * charged to the budget as well as its streams' (before 0650310), the
 * connection held most of it, the streams' windows shrank to fit the rest
 * and the transfer took 8.8 % longer (docs/experiments/flow-control.md "The
 * budget counts the streams once"; 1 % now). */
static void test_budget_counts_streams_once(void **s)
{
    (void)s;
    quic_env e;
    path_at(&e, 29, 100000000ull, 150 * MS);
    qk_time budget = streams_download(&e, 30, 100000000, 7u << 20, 30 * QK_NS_PER_S, NULL);
    path_at(&e, 29, 100000000ull, 150 * MS);
    qk_time free_ = streams_download(&e, 30, 100000000, 0, 30 * QK_NS_PER_S, NULL);
    assert_true(budget * 100 <= free_ * 105);
}

/* The tunnel's lossy path (100 Mbit/s, 25 ms each way, 1 % loss each way,
 * a one-BDP queue) with one BBR download: windows auto-tuned from 64 KiB
 * (autotune > 0) or fixed at 16 MiB; duration_ns or size_bytes ends it. */
static qk_simq *lossy_flow(quic_env *e, uint64_t seed, int autotune, qk_time duration_ns,
                           uint64_t size_bytes)
{
    qk_sim_link_cfg l;
    memset(&l, 0, sizeof l);
    l.rate_bps = 100000000ull;
    l.delay_ns = 25 * MS;
    l.limit_bytes = 625000; /* one BDP */
    l.loss = QK_SIM_LOSS_BERNOULLI;
    l.loss_p = 0.01;
    assert_int_equal(quic_env_init(e, seed, &l, &l), 0);
    qk_simq_cfg c = {.duration_ns = duration_ns,
                     .size_bytes = size_bytes,
                     .cc = QK_CONFIG_CC_BBR,
                     .autotune = autotune,
                     .window_bytes = autotune > 0 ? 64u << 10 : 16u << 20,
                     .conn_window_bytes = autotune > 0 ? 256u << 10 : 32u << 20,
                     .max_window_bytes = 64u << 20,
                     .max_conn_window_bytes = 96u << 20,
                     .send_buffer_bytes = 16u << 20,
                     .udp_payload_bytes = 1452,
                     .no_protection = true};
    qk_simq *q = quic_env_flow(e, 4433, &c);
    assert_non_null(q);
    return q;
}

/* Under random loss (1 % each way, 100 Mbit/s x 50 ms, BBR) the receive
 * window must also cover the bytes held behind each gap until its
 * retransmission arrives (~1 RTT of data): sized by delivery alone it
 * settled at ~1.5 BDP, where it held the sender to ~75 % of a fixed 16 MiB
 * window's goodput (bench/tunnel.sh, quack perf through quack netem). */
static uint64_t lossy_goodput(uint64_t seed, int autotune)
{
    quic_env e;
    qk_simq *q = lossy_flow(&e, seed, autotune, 6 * QK_NS_PER_S, 0);
    uint64_t b = run_between(&e, q, 2 * QK_NS_PER_S, 6 * QK_NS_PER_S);
    const qk_conn_stats *rs = &qk_simq_result_get(q)->client_stats;
    fprintf(stderr, "1%% loss, %s: %.1f Mbit/s, stream window %.2f BDP, peak buffered %.2f BDP\n",
            autotune > 0 ? "auto-tuned" : "fixed 16 MiB", (double)b * 8 / 4e6,
            (double)rs->peak_stream_rx_window_bytes / 625000,
            (double)rs->peak_rx_buffered_bytes / 625000);
    assert_false(qk_simq_result_get(q)->mismatch);
    quic_env_free(&e);
    return b;
}

static void test_autotune_under_loss(void **s)
{
    (void)s;
    uint64_t fixed = lossy_goodput(31, -1), tuned = lossy_goodput(31, 1);
    assert_true(fixed > 0);
    /* The rule sized by delivery alone gave 33.5 Mbit/s; with the tuner
     * measuring arrivals and sizing held bytes by 2x (flow.c) the tuned
     * window carries 93.3 vs the fixed window's 93.1 Mbit/s on this seed.
     * (Between the two merges of session 7 the tuned run was at 79.9 vs
     * 92.6 and this bound was briefly 0.85.) */
    assert_true((double)tuned >= 0.9 * (double)fixed);
}

/* The same lossy path over a whole 20 MiB download, slow start included
 * (bench/tunnel.sh's single flow): the completion time with windows
 * auto-tuned from 64 KiB vs a fixed 16 MiB window. Before the tuner
 * measured delivery by arrivals, counted held bytes with the sizing factor
 * and grew a window the peer had used up, the tuned window lagged the
 * sender by ~2x in slow start (reads stall behind each gap, so credit never
 * went "fast") and settled at ~1.9 BDP: 1.5-1.9x the fixed window's time
 * (quack sim, seeds 1-6: 3.13-4.03 s vs 2.14-2.19 s; after: 2.46-2.60 s). */
static qk_time lossy_completion(uint64_t seed, int autotune)
{
    quic_env e;
    qk_simq *q = lossy_flow(&e, seed, autotune, 0, 20u << 20);
    qk_sim_run(e.sim, 20 * QK_NS_PER_S);
    const qk_simq_result *r = qk_simq_result_get(q);
    assert_true(r->done);
    assert_false(r->mismatch);
    assert_int_equal(r->hash_read, r->hash_written);
    qk_time t = r->completion_ns;
    fprintf(stderr, "1%% loss, 20 MiB, %s: %.3f s, stream window peak %.2f BDP\n",
            autotune > 0 ? "auto-tuned" : "fixed 16 MiB", (double)t / 1e9,
            (double)r->client_stats.peak_stream_rx_window_bytes / 625000);
    quic_env_free(&e);
    return t;
}

static void test_autotune_keeps_up_from_start(void **s)
{
    (void)s;
    qk_time fixed = lossy_completion(5, -1), tuned = lossy_completion(5, 1);
    assert_true((double)tuned <= 1.3 * (double)fixed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_autotune_fills_1g_60ms),
        cmocka_unit_test(test_fixed_window_is_the_limit),
        cmocka_unit_test(test_slow_reader),
        cmocka_unit_test(test_streams_under_budget),
        cmocka_unit_test(test_budget_counts_streams_once),
        cmocka_unit_test(test_autotune_under_loss),
        cmocka_unit_test(test_autotune_keeps_up_from_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
