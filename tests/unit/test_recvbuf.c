/* SPDX-License-Identifier: MIT */
/* Receive buffer: reassembly checked against a byte-array model, flow and
 * crypto limits, final-size rules (RFC 9000 §4.5). */
#include "qk_test.h"
#include "transport/streams/recvbuf.h"
#include <quack/common.h>
#include <stdlib.h>
#include <string.h>

static void fill_pattern(uint8_t *buf, size_t n, uint64_t seed)
{
    uint64_t st = seed | 1;
    for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)qk_test_rand64(&st);
}

static void test_in_order(void **state)
{
    (void)state;
    qk_recvbuf b;
    qk_recvbuf_init(&b, 1000, 0);
    const uint8_t msg[] = "hello, world";
    assert_int_equal(qk_recvbuf_insert(&b, 0, msg, 5, false), 0);
    assert_int_equal(qk_recvbuf_readable(&b), 5);
    assert_int_equal(qk_recvbuf_insert(&b, 5, msg + 5, 7, true), 0);
    assert_true(b.fin_known);
    assert_int_equal(b.final_size, 12);
    assert_true(qk_recvbuf_all_received(&b));
    assert_false(qk_recvbuf_fin_read(&b));
    uint8_t out[32];
    assert_int_equal(qk_recvbuf_read(&b, out, 4), 4);
    assert_memory_equal(out, "hell", 4);
    assert_int_equal(qk_recvbuf_read(&b, out, sizeof out), 8);
    assert_memory_equal(out, "o, world", 8);
    assert_true(qk_recvbuf_fin_read(&b));
    assert_int_equal(qk_recvbuf_read(&b, out, sizeof out), 0);
    qk_recvbuf_free(&b);
}

static void test_out_of_order_gap(void **state)
{
    (void)state;
    qk_recvbuf b;
    qk_recvbuf_init(&b, 100, 0);
    const uint8_t *d = (const uint8_t *)"0123456789";
    assert_int_equal(qk_recvbuf_insert(&b, 5, d + 5, 5, true), 0);
    assert_int_equal(qk_recvbuf_readable(&b), 0);
    assert_false(qk_recvbuf_all_received(&b));
    assert_int_equal(qk_recvbuf_insert(&b, 2, d + 2, 2, false), 0);
    assert_int_equal(qk_recvbuf_readable(&b), 0);
    assert_int_equal(qk_recvbuf_insert(&b, 0, d, 2, false), 0);
    assert_int_equal(qk_recvbuf_readable(&b), 4); /* 0..3, gap at 4 */
    assert_int_equal(qk_recvbuf_insert(&b, 3, d + 3, 2, false), 0);
    assert_int_equal(qk_recvbuf_readable(&b), 10);
    assert_true(qk_recvbuf_all_received(&b));
    const uint8_t *p;
    size_t n = qk_recvbuf_peek(&b, &p);
    assert_int_equal(n, 10);
    assert_memory_equal(p, d, 10);
    assert_int_equal(qk_recvbuf_consume(&b, 11), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_recvbuf_consume(&b, 10), 0);
    assert_true(qk_recvbuf_fin_read(&b));
    qk_recvbuf_free(&b);
}

/* Random segmentation (overlaps, duplicates, reordering) of a known buffer
 * with interleaved reads must read back byte-exact; readable() matches a
 * per-byte model at every step. */
static void run_model(uint64_t seed, size_t total, size_t max_seg)
{
    uint8_t *src = malloc(total), *dst = malloc(total), *have = calloc(total, 1);
    assert_non_null(src);
    assert_non_null(dst);
    assert_non_null(have);
    fill_pattern(src, total, seed);
    qk_recvbuf b;
    qk_recvbuf_init(&b, total, 4096);
    uint64_t st = seed * 7919 + 1;
    size_t read_off = 0;
    size_t peak_mem = 0;
    int iterations = 0;
    while (read_off < total) {
        size_t off = (size_t)(qk_test_rand64(&st) % total);
        size_t len = 1 + (size_t)(qk_test_rand64(&st) % max_seg);
        if (len > total - off) len = total - off;
        /* Bias towards the read offset so the stream makes progress. */
        if (qk_test_rand64(&st) % 3 == 0 && read_off < total) {
            off = read_off + (size_t)(qk_test_rand64(&st) % (max_seg + 1));
            if (off >= total) off = total - 1;
            if (len > total - off) len = total - off;
        }
        bool fin = off + len == total && (qk_test_rand64(&st) & 1);
        assert_int_equal(qk_recvbuf_insert(&b, off, src + off, len, fin), 0);
        memset(have + off, 1, len);
        size_t exp = 0;
        while (read_off + exp < total && have[read_off + exp]) exp++;
        assert_int_equal(qk_recvbuf_readable(&b), exp);
        if (qk_test_rand64(&st) % 2) {
            size_t cap = (size_t)(qk_test_rand64(&st) % (2 * max_seg + 1));
            size_t n = qk_recvbuf_read(&b, dst + read_off, cap);
            assert_int_equal(n, exp < cap ? exp : cap);
            read_off += n;
        }
        size_t mem = qk_recvbuf_mem_bytes(&b);
        if (mem > peak_mem) peak_mem = mem;
        iterations++;
    }
    assert_memory_equal(src, dst, total);
    /* The FIN may not have been marked yet: a final zero-length FIN fixes it. */
    assert_int_equal(qk_recvbuf_insert(&b, total, NULL, 0, true), 0);
    assert_true(qk_recvbuf_fin_read(&b));
    /* Memory never exceeds the window plus one block (and the spare). */
    assert_true(peak_mem <= total + 2 * QK_STRBUF_BLOCK_BYTES);
    assert_true(qk_recvbuf_mem_bytes(&b) <= QK_STRBUF_BLOCK_BYTES * 2);
    assert_true(iterations > 0);
    qk_recvbuf_free(&b);
    free(src);
    free(dst);
    free(have);
}

static void test_random_model(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) run_model(seed, 5000 + seed * 997, 1 + seed * 37);
    run_model(99, 200000, 1500);
}

/* Many tiny segments in reverse order: linear work (merging keeps one range). */
static void test_many_small_reverse(void **state)
{
    (void)state;
    enum { N = 100000 };
    uint8_t *src = malloc(N), *dst = malloc(N);
    fill_pattern(src, N, 5);
    qk_recvbuf b;
    qk_recvbuf_init(&b, N, 0);
    for (size_t i = N; i-- > 1;) assert_int_equal(qk_recvbuf_insert(&b, i, src + i, 1, false), 0);
    assert_true(b.recvd.n == 1);
    assert_int_equal(qk_recvbuf_readable(&b), 0);
    assert_int_equal(qk_recvbuf_insert(&b, 0, src, 1, false), 0);
    assert_int_equal(qk_recvbuf_read(&b, dst, N), N);
    assert_memory_equal(src, dst, N);
    qk_recvbuf_free(&b);
    free(src);
    free(dst);
}

static void test_flow_limit(void **state)
{
    (void)state;
    uint8_t d[200] = {0};
    qk_recvbuf b;
    qk_recvbuf_init(&b, 100, 0);
    assert_int_equal(qk_recvbuf_insert(&b, 0, d, 100, false), 0); /* up to the limit */
    assert_int_equal(qk_recvbuf_insert(&b, 100, d, 1, false), QK_ERR_FLOW_CONTROL);
    assert_int_equal(qk_recvbuf_insert(&b, 50, d, 51, false), QK_ERR_FLOW_CONTROL);
    assert_int_equal(qk_recvbuf_insert(&b, 100, d, 0, true), 0); /* FIN at the limit is fine */
    qk_recvbuf_free(&b);

    qk_recvbuf_init(&b, 100, 0);
    assert_int_equal(qk_recvbuf_insert(&b, 150, d, 10, false), QK_ERR_FLOW_CONTROL);
    assert_int_equal(b.max_off, 0); /* unchanged on error */
    assert_int_equal(qk_recvbuf_set_limit(&b, 200), 0);
    assert_int_equal(qk_recvbuf_insert(&b, 150, d, 10, false), 0);
    assert_int_equal(qk_recvbuf_set_limit(&b, 159), QK_ERR_INVALID_ARG); /* below data held */
    /* Beyond 2^62-1 (RFC 9000 §19.8). */
    assert_int_equal(qk_recvbuf_insert(&b, (1ull << 62) - 1, d, 1, false), QK_ERR_FLOW_CONTROL);
    assert_int_equal(qk_recvbuf_insert(&b, UINT64_MAX, d, 0, false), QK_ERR_FLOW_CONTROL);
    qk_recvbuf_free(&b);
}

static void test_final_size(void **state)
{
    (void)state;
    uint8_t d[64] = {0};
    qk_recvbuf b;
    qk_recvbuf_init(&b, 1000, 0);
    assert_int_equal(qk_recvbuf_insert(&b, 10, d, 20, false), 0);               /* max_off = 30 */
    assert_int_equal(qk_recvbuf_insert(&b, 0, d, 20, true), QK_ERR_FINAL_SIZE); /* FIN below data */
    assert_false(b.fin_known);
    assert_int_equal(qk_recvbuf_insert(&b, 30, d, 10, true), 0); /* final size 40 */
    assert_int_equal(qk_recvbuf_insert(&b, 30, d, 10, true), 0); /* same again: fine */
    assert_int_equal(qk_recvbuf_insert(&b, 0, d, 40, true), 0);
    assert_int_equal(qk_recvbuf_insert(&b, 35, d, 6, false), QK_ERR_FINAL_SIZE); /* past it */
    assert_int_equal(qk_recvbuf_insert(&b, 20, d, 10, true), QK_ERR_FINAL_SIZE); /* other size */
    assert_int_equal(qk_recvbuf_insert(&b, 40, d, 1, true), QK_ERR_FINAL_SIZE);
    assert_int_equal(qk_recvbuf_insert(&b, 0, d, 5, false), 0); /* duplicate below: fine */
    assert_int_equal(qk_recvbuf_reset(&b, 41), QK_ERR_FINAL_SIZE);
    assert_int_equal(qk_recvbuf_reset(&b, 40), 0);
    qk_recvbuf_free(&b);

    qk_recvbuf_init(&b, 100, 0);
    assert_int_equal(qk_recvbuf_insert(&b, 0, d, 50, false), 0);
    assert_int_equal(qk_recvbuf_reset(&b, 49), QK_ERR_FINAL_SIZE);    /* below received data */
    assert_int_equal(qk_recvbuf_reset(&b, 101), QK_ERR_FLOW_CONTROL); /* beyond credit */
    assert_int_equal(qk_recvbuf_reset(&b, 80), 0);
    assert_int_equal(b.max_off, 80); /* credit consumed is the final size */
    assert_int_equal(qk_recvbuf_mem_bytes(&b), 0);
    qk_recvbuf_free(&b);
}

static void test_crypto(void **state)
{
    (void)state;
    uint8_t d[300], out[300];
    fill_pattern(d, sizeof d, 3);
    qk_recvbuf b;
    qk_recvbuf_init_crypto(&b, 100);
    assert_int_equal(qk_recvbuf_insert(&b, 0, d, 100, false), 0);
    assert_int_equal(qk_recvbuf_insert(&b, 100, d + 100, 1, false), QK_ERR_CRYPTO_BUFFER);
    assert_int_equal(qk_recvbuf_insert(&b, 0, d, 10, true), QK_ERR_PROTOCOL_VIOLATION);
    assert_int_equal(qk_recvbuf_read(&b, out, 60), 60);
    /* The window follows the read offset (RFC 9000 §7.5). */
    assert_int_equal(qk_recvbuf_insert(&b, 100, d + 100, 60, false), 0);
    assert_int_equal(qk_recvbuf_insert(&b, 160, d + 160, 1, false), QK_ERR_CRYPTO_BUFFER);
    assert_int_equal(qk_recvbuf_read(&b, out + 60, 200), 100);
    assert_memory_equal(out, d, 160);
    qk_recvbuf_free(&b);
}

static void test_gap_limit(void **state)
{
    (void)state;
    uint8_t d[4] = {1, 2, 3, 4};
    qk_recvbuf b;
    qk_recvbuf_init(&b, 1000, 3);
    assert_int_equal(qk_recvbuf_insert(&b, 10, d, 1, false), 0);
    assert_int_equal(qk_recvbuf_insert(&b, 20, d, 1, false), 0);
    assert_int_equal(qk_recvbuf_insert(&b, 30, d, 1, false), 0);
    assert_int_equal(qk_recvbuf_insert(&b, 40, d, 1, false), QK_ERR_LIMIT);
    assert_int_equal(b.max_off, 31);                                       /* unchanged */
    assert_int_equal(qk_recvbuf_insert(&b, 11, d, 1, false), 0);           /* merges: fine */
    assert_int_equal(qk_recvbuf_insert(&b, 0, d, 4, false), QK_ERR_LIMIT); /* a 4th range */
    assert_int_equal(qk_recvbuf_insert(&b, 12, d, 4, false), 0);           /* merges: fine */
    assert_int_equal(qk_recvbuf_readable(&b), 0);
    qk_recvbuf_free(&b);
}

static void test_memory_released(void **state)
{
    (void)state;
    enum { N = 64 * 1024 };
    uint8_t *d = malloc(N);
    fill_pattern(d, N, 11);
    qk_recvbuf b;
    qk_recvbuf_init(&b, 16 * 1024, 0);
    uint8_t out[1000];
    size_t written = 0, read = 0;
    size_t peak = 0;
    while (read < N) {
        size_t n = 1000;
        if (written < N) {
            if (n > N - written) n = N - written;
            if (written + n > b.limit) n = (size_t)(b.limit - written);
            assert_int_equal(qk_recvbuf_insert(&b, written, d + written, n, false), 0);
            written += n;
        }
        size_t r = qk_recvbuf_read(&b, out, sizeof out);
        assert_memory_equal(out, d + read, r);
        read += r;
        qk_recvbuf_set_limit(&b, read + 16 * 1024);
        if (qk_recvbuf_mem_bytes(&b) > peak) peak = qk_recvbuf_mem_bytes(&b);
    }
    assert_true(peak <= 16 * 1024 + 2 * QK_STRBUF_BLOCK_BYTES);
    qk_recvbuf_free(&b);
    free(d);
}

/* Everything received has been read: the buffer keeps no block; with data
 * beyond a gap still held, it keeps them. */
static void test_read_all_holds_no_block(void **state)
{
    (void)state;
    uint8_t d[9000], out[9000];
    fill_pattern(d, sizeof d, 11);
    qk_recvbuf b;
    qk_recvbuf_init(&b, sizeof d, 0);
    assert_int_equal(qk_recvbuf_insert(&b, 0, d, 100, false), 0);
    assert_true(qk_recvbuf_mem_bytes(&b) > 0);
    assert_int_equal(qk_recvbuf_read(&b, out, 60), 60);
    assert_true(qk_recvbuf_mem_bytes(&b) > 0); /* 40 bytes unread */
    assert_int_equal(qk_recvbuf_read(&b, out + 60, 100), 40);
    assert_int_equal(qk_recvbuf_mem_bytes(&b), 0);
    assert_int_equal(qk_recvbuf_insert(&b, 5000, d + 5000, 4000, false), 0); /* beyond a gap */
    assert_int_equal(qk_recvbuf_insert(&b, 100, d + 100, 4900, false), 0);
    assert_int_equal(qk_recvbuf_read(&b, out + 100, 4900), 4900);
    assert_true(qk_recvbuf_mem_bytes(&b) > 0);
    assert_int_equal(qk_recvbuf_read(&b, out + 5000, 4000), 4000);
    assert_int_equal(qk_recvbuf_mem_bytes(&b), 0);
    assert_memory_equal(out, d, sizeof d);
    qk_recvbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order),           cmocka_unit_test(test_out_of_order_gap),
        cmocka_unit_test(test_random_model),       cmocka_unit_test(test_read_all_holds_no_block),
        cmocka_unit_test(test_many_small_reverse), cmocka_unit_test(test_flow_limit),
        cmocka_unit_test(test_final_size),         cmocka_unit_test(test_crypto),
        cmocka_unit_test(test_gap_limit),          cmocka_unit_test(test_memory_released),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
