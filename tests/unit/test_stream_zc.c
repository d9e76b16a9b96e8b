/* SPDX-License-Identifier: MIT */
/* Zero-copy stream API end to end (tests/support/qk_pair): the sender hands
 * over its memory with qk_stream_write_ref, the receiver checks bytes in
 * place with qk_stream_peek / qk_stream_consume. With loss both ways the
 * retransmissions are read from the borrowed memory; a small window makes
 * flow-control credit depend on consume. */
#include "qk_pair.h"
#include "qk_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOTAL (1u << 20)

typedef struct zc {
    const uint8_t *src, *src2; /* TOTAL bytes each, alive until the pair is freed */
    size_t written, read, peeks, pieces;
    uint64_t sid;
    bool opened, fin_read, mismatch, bad_view;
} zc;

static void zc_write(qk_conn *c, zc *x)
{
    /* Odd-sized pieces, and every other one from a second copy of the data
     * so extents do not all merge into one. */
    while (x->written < TOTAL) {
        size_t n = TOTAL - x->written < 7001 ? TOTAL - x->written : 7001;
        const uint8_t *from = (x->pieces++ % 2 ? x->src2 : x->src) + x->written;
        long w = qk_stream_write_ref(c, x->sid, from, n, x->written + n == TOTAL);
        if (w <= 0) break;
        x->written += (size_t)w;
    }
}

static void zc_read(qk_conn *c, zc *x)
{
    for (;;) {
        bool fin = false;
        const uint8_t *d;
        long n = qk_stream_peek(c, x->sid, &d, &fin);
        if (n < 0) break;
        if (n > 0) {
            x->peeks++;
            if (!d || n > 4096) x->bad_view = true;
            for (long i = 0; i < n; i++)
                if (d[i] != qk_test_pattern(x->read + (size_t)i)) x->mismatch = true;
            long k = qk_stream_consume(c, x->sid, (size_t)n, &fin);
            if (k != n) x->bad_view = true;
            x->read += (size_t)n;
        }
        if (fin) {
            x->fin_read = true;
            break;
        }
        if (n == 0) break;
    }
}

static bool zc_done(qk_pair *p, void *ctx)
{
    zc *x = ctx;
    if (!p->cconn || !qk_conn_established(p->cconn)) return false;
    if (!x->opened) {
        assert_int_equal(qk_pair_request_download(p, &x->sid), 0);
        x->opened = true;
    }
    if (p->sconn) {
        qk_pair_read_request(p->sconn, x->sid);
        zc_write(p->sconn, x);
        zc_read(p->cconn, x);
    }
    qk_pair_flush(p);
    return x->fin_read;
}

static void run_zc(bool lossy, uint64_t window)
{
    uint8_t *src = malloc(TOTAL), *src2 = malloc(TOTAL);
    assert_true(src && src2);
    for (size_t i = 0; i < TOTAL; i++) src[i] = qk_test_pattern(i);
    memcpy(src2, src, TOTAL);
    qk_pair p;
    uint64_t rng = 11;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    if (lossy) {
        p.filter = qk_pair_loss5_filter;
        p.filter_ctx = &rng;
    }
    if (window) {
        p.ccfg.initial_max_stream_data_bytes = window;
        p.ccfg.initial_max_data_bytes = 2 * window;
        p.ccfg.autotune = false;
    }
    zc x = {.src = src, .src2 = src2};
    assert_int_equal(qk_pair_start(&p), 0);
    bool ok = qk_pair_run_until(&p, zc_done, &x, p.now + 60 * QK_NS_PER_S);
    if (!ok) fprintf(stderr, "stalled: written %zu read %zu\n", x.written, x.read);
    assert_true(ok);
    assert_false(x.mismatch);
    assert_false(x.bad_view);
    assert_int_equal(x.read, TOTAL);
    /* At most 4096 bytes per view: at least TOTAL / 4096 views. */
    assert_true(x.peeks >= TOTAL / 4096);
    qk_conn_stats st;
    qk_conn_stats_get(p.sconn, &st);
    if (lossy) assert_true(st.pkts_lost > 0); /* retransmissions came from src */
    qk_pair_free(&p);
    free(src2);
    free(src); /* only now: the server's stream may point into it until here */
}

static void test_zc_clean(void **state)
{
    (void)state;
    run_zc(false, 0);
}

static void test_zc_loss(void **state)
{
    (void)state;
    run_zc(true, 0);
}

static void test_zc_small_window(void **state)
{
    (void)state;
    /* 1 MiB through a 64 KiB window: credit must follow consume. */
    run_zc(false, 64 << 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zc_clean),
        cmocka_unit_test(test_zc_loss),
        cmocka_unit_test(test_zc_small_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
