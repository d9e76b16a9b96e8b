/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/conn_send.c src/transport/conn/conn_recv.c src/transport/conn/trace.c
 */
/* End-to-end connection tests on an in-memory path (tests/support/qk_pair). */
#include "qk_pair.h"
#include "qk_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool both_connected(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->cconn && qk_conn_established(p->cconn) && p->sconn && qk_conn_established(p->sconn);
}

static void test_handshake(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    assert_int_equal(qk_pair_start(&p), 0);
    qk_time t0 = p.now;
    assert_true(qk_pair_run_until(&p, both_connected, NULL, t0 + 2 * QK_NS_PER_S));
    assert_string_equal(qk_conn_alpn(p.cconn), "test");
    assert_string_equal(qk_conn_alpn(p.sconn), "test");
    qk_pair_free(&p);
}

/* A one-stream transfer: the sender writes a deterministic pattern, the
 * receiver reads and checks every byte; done when the FIN has been read. */
typedef struct xfer {
    bool upload; /* client -> server, else server -> client (request then response) */
    size_t total, written, read;
    uint64_t sid;
    bool opened, fin_read, mismatch;
} xfer;

static void xfer_write(qk_conn *c, xfer *x)
{
    qk_pair_write_pattern(c, x->sid, x->total, &x->written);
}

static void xfer_read(qk_conn *c, xfer *x)
{
    if (qk_pair_read_pattern(c, x->sid, &x->read, &x->mismatch)) x->fin_read = true;
}

static bool xfer_done(qk_pair *p, void *ctx)
{
    xfer *x = ctx;
    if (!p->cconn || !qk_conn_established(p->cconn)) return false;
    if (!x->opened) {
        if (x->upload)
            assert_int_equal(qk_stream_open(p->cconn, true, &x->sid), 0);
        else /* the request: 8 bytes, then FIN */
            assert_int_equal(qk_pair_request_download(p, &x->sid), 0);
        x->opened = true;
    }
    if (x->upload) {
        xfer_write(p->cconn, x);
        if (p->sconn) xfer_read(p->sconn, x);
    } else if (p->sconn) {
        qk_pair_read_request(p->sconn, x->sid);
        xfer_write(p->sconn, x);
        xfer_read(p->cconn, x);
    }
    qk_pair_flush(p);
    return x->fin_read;
}

static void run_xfer(qk_pair *p, bool upload, size_t total, qk_time limit_ns)
{
    xfer x = {.upload = upload, .total = total};
    assert_int_equal(qk_pair_start(p), 0);
    bool ok = qk_pair_run_until(p, xfer_done, &x, p->now + limit_ns);
    if (!ok)
        fprintf(stderr, "transfer stalled: written %zu read %zu of %zu at %.3f s\n", x.written,
                x.read, x.total, (p->now - 1e9) / 1e9);
    assert_true(ok);
    assert_false(x.mismatch);
    assert_int_equal(x.read, total);
}

static void test_upload_clean(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    run_xfer(&p, true, 1 << 20, 10 * QK_NS_PER_S);
    qk_pair_free(&p);
}

static void test_download_clean(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    run_xfer(&p, false, 1 << 20, 10 * QK_NS_PER_S);
    qk_pair_free(&p);
}

static void test_download_loss(void **state)
{
    (void)state;
    qk_pair p;
    uint64_t rng = 7;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.filter = qk_pair_loss5_filter;
    p.filter_ctx = &rng;
    run_xfer(&p, false, 1 << 20, 60 * QK_NS_PER_S);
    qk_pair_free(&p);
}

/* Flow-control auto-tuning: from a 64 KiB stream window on a
 * 20 ms, 200 Mbit/s path, a fixed window caps the download near
 * 64 KiB / 20 ms = 26 Mbit/s; the auto-tuned window must grow (within its cap)
 * and finish at least twice as fast. */
static qk_time timed_download(bool autotune, uint64_t *max_window)
{
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.rate_bps = 200000000;
    p.ccfg.autotune = autotune;
    p.ccfg.initial_max_stream_data_bytes = 64 << 10;
    p.ccfg.max_stream_window_bytes = 4 << 20;
    qk_time t0 = p.now;
    run_xfer(&p, false, 8 << 20, 60 * QK_NS_PER_S);
    qk_time took = p.now - t0;
    qk_conn_stats st;
    qk_conn_stats_get(p.cconn, &st);
    *max_window = st.max_stream_rx_window_bytes;
    qk_pair_free(&p);
    return took;
}

static void test_autotune_download(void **state)
{
    (void)state;
    uint64_t w_fixed, w_auto;
    qk_time fixed = timed_download(false, &w_fixed);
    qk_time tuned = timed_download(true, &w_auto);
    fprintf(stderr, "8 MiB: fixed 64 KiB window %.3f s, auto-tuned %.3f s (window %llu KiB)\n",
            fixed / 1e9, tuned / 1e9, (unsigned long long)(w_auto >> 10));
    assert_true(tuned * 2 < fixed);
    assert_true(w_auto > (64 << 10));
    assert_true(w_auto <= (4 << 20));
}

/* ACK frequency (draft-12): the server asks the downloading client for one
 * ACK per 10 ack-eliciting packets; the client's ACK count drops to about a
 * tenth. A client that did not advertise min_ack_delay is never asked. */
static void ackfreq_download(bool client_supports, qk_conn_stats *cs, qk_conn_stats *ss)
{
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.rate_bps = 100000000;
    p.ccfg.min_ack_delay_ns = client_supports ? 1 * QK_NS_PER_MS : 0;
    p.scfg.ack_frequency = 1;
    p.scfg.ack_frequency_threshold = 10;
    p.scfg.ack_frequency_delay_ns = 20 * QK_NS_PER_MS;
    /* The ACK cadence is under test, not window growth: the client's receive
     * windows start where the old defaults did (16 MiB / 1 MiB). */
    p.ccfg.initial_max_data_bytes = 16u << 20;
    p.ccfg.initial_max_stream_data_bytes = 1u << 20;
    /* fixed 1200-byte datagrams: the ratios below count packets, and PMTU
     * probes (ack-eliciting, not data) would shift them */
    p.ccfg.pmtud = p.scfg.pmtud = false;
    p.ccfg.max_udp_payload_bytes = p.scfg.max_udp_payload_bytes = 1200;
    run_xfer(&p, false, 4 << 20, 60 * QK_NS_PER_S);
    qk_conn_stats_get(p.cconn, cs);
    qk_conn_stats_get(p.sconn, ss);
    qk_pair_free(&p);
}

static void test_ack_frequency_threshold(void **state)
{
    (void)state;
    qk_conn_stats cs, ss;
    ackfreq_download(true, &cs, &ss);
    double ratio = (double)cs.ack_frames_sent / (double)ss.pkts_sent;
    fprintf(stderr, "threshold 10: %llu ACKs for %llu server packets (%.3f per packet)\n",
            (unsigned long long)cs.ack_frames_sent, (unsigned long long)ss.pkts_sent, ratio);
    assert_true(ss.ack_frequency_frames_sent >= 1);
    assert_true(ratio < 0.15);
    ackfreq_download(false, &cs, &ss);
    ratio = (double)cs.ack_frames_sent / (double)ss.pkts_sent;
    fprintf(stderr, "no min_ack_delay: %llu ACKs for %llu server packets (%.3f per packet)\n",
            (unsigned long long)cs.ack_frames_sent, (unsigned long long)ss.pkts_sent, ratio);
    assert_int_equal(ss.ack_frequency_frames_sent, 0);
    assert_true(ratio > 0.3); /* RFC 9000: every second packet (≈0.5; 0.09 with threshold 10) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake),         cmocka_unit_test(test_upload_clean),
        cmocka_unit_test(test_download_clean),    cmocka_unit_test(test_download_loss),
        cmocka_unit_test(test_autotune_download), cmocka_unit_test(test_ack_frequency_threshold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
