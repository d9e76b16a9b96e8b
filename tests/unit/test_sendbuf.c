/* SPDX-License-Identifier: MIT */
/* Send buffer: range selection, flow-control cap, FIN, and random
 * ack/loss/retransmit sequences checked against a per-byte model. */
#include "qk_test.h"
#include "transport/streams/sendbuf.h"
#include <quack/common.h>
#include <stdlib.h>
#include <string.h>

static void fill_pattern(uint8_t *buf, size_t n, uint64_t seed)
{
    uint64_t st = seed | 1;
    for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)qk_test_rand64(&st);
}

static void test_write_bound(void **state)
{
    (void)state;
    uint8_t d[100] = {0};
    qk_sendbuf b;
    qk_sendbuf_init(&b, 150);
    assert_int_equal(qk_sendbuf_write(&b, d, 100), 100);
    assert_int_equal(qk_sendbuf_writable(&b), 50);
    assert_int_equal(qk_sendbuf_write(&b, d, 100), 50); /* partially accepted */
    assert_int_equal(qk_sendbuf_write(&b, d, 100), 0);  /* full */
    /* Acking the prefix frees space. */
    qk_sendbuf_on_sent(&b, 0, 60, false);
    qk_sendbuf_on_acked(&b, 0, 60, false);
    assert_int_equal(b.acked_off, 60);
    assert_int_equal(qk_sendbuf_writable(&b), 60);
    qk_sendbuf_finish(&b);
    assert_int_equal(qk_sendbuf_write(&b, d, 1), QK_ERR_STATE);
    assert_int_equal(qk_sendbuf_writable(&b), 0);
    qk_sendbuf_free(&b);
}

static void test_ranges(void **state)
{
    (void)state;
    uint8_t d[1000];
    fill_pattern(d, sizeof d, 1);
    qk_sendbuf b;
    qk_sendbuf_init(&b, 10000);
    uint64_t off;
    size_t len;
    bool fin;
    assert_int_equal(qk_sendbuf_next_range(&b, 100, 1000, &off, &len, &fin), 0); /* empty */
    assert_int_equal(qk_sendbuf_write(&b, d, 1000), 1000);
    assert_int_equal(qk_sendbuf_next_range(&b, 300, 1000, &off, &len, &fin), 1);
    assert_int_equal(off, 0);
    assert_int_equal(len, 300);
    assert_false(fin);
    uint8_t out[1000];
    assert_int_equal(qk_sendbuf_copy(&b, off, len, out), 0);
    assert_memory_equal(out, d, 300);
    qk_sendbuf_on_sent(&b, 0, 300, false);
    /* Flow control caps new data at max_offset (RFC 9000 §4.1). */
    assert_int_equal(qk_sendbuf_next_range(&b, 1000, 500, &off, &len, &fin), 1);
    assert_int_equal(off, 300);
    assert_int_equal(len, 200);
    qk_sendbuf_on_sent(&b, 300, 200, false);
    assert_int_equal(qk_sendbuf_next_range(&b, 1000, 500, &off, &len, &fin), 0); /* blocked */
    /* A loss is retransmitted first even when blocked. */
    qk_sendbuf_on_lost(&b, 100, 50, false);
    assert_int_equal(qk_sendbuf_next_range(&b, 1000, 500, &off, &len, &fin), 1);
    assert_int_equal(off, 100);
    assert_int_equal(len, 50);
    assert_int_equal(qk_sendbuf_next_range(&b, 20, 500, &off, &len, &fin), 1);
    assert_int_equal(len, 20); /* split by max_len */
    qk_sendbuf_on_sent(&b, 100, 20, false);
    assert_int_equal(qk_sendbuf_next_range(&b, 1000, 500, &off, &len, &fin), 1);
    assert_int_equal(off, 120);
    assert_int_equal(len, 30);
    qk_sendbuf_on_sent(&b, 120, 30, false);
    /* Finish: the FIN rides on the last new data. */
    qk_sendbuf_finish(&b);
    assert_int_equal(qk_sendbuf_next_range(&b, 1000, 1000, &off, &len, &fin), 1);
    assert_int_equal(off, 500);
    assert_int_equal(len, 500);
    assert_true(fin);
    assert_int_equal(qk_sendbuf_next_range(&b, 499, 1000, &off, &len, &fin), 1);
    assert_false(fin); /* not all data fits: no FIN */
    qk_sendbuf_on_sent(&b, 500, 500, true);
    assert_true(qk_sendbuf_all_sent(&b));
    assert_int_equal(qk_sendbuf_next_range(&b, 1000, 1000, &off, &len, &fin), 0);
    /* Ack everything except the FIN; lose the FIN: a FIN-only frame follows. */
    qk_sendbuf_on_acked(&b, 0, 1000, false);
    assert_false(qk_sendbuf_all_acked(&b));
    qk_sendbuf_on_lost(&b, 500, 500, true);
    assert_int_equal(qk_sendbuf_next_range(&b, 1000, 1000, &off, &len, &fin), 1);
    assert_int_equal(off, 1000);
    assert_int_equal(len, 0);
    assert_true(fin);
    qk_sendbuf_on_sent(&b, 1000, 0, true);
    qk_sendbuf_on_acked(&b, 1000, 0, true);
    assert_true(qk_sendbuf_all_acked(&b));
    assert_int_equal(qk_sendbuf_mem_bytes(&b) <= QK_STRBUF_BLOCK_BYTES, 1); /* only the spare */
    assert_int_equal(qk_sendbuf_copy(&b, 0, 10, out), QK_ERR_INVALID_ARG);  /* freed */
    qk_sendbuf_free(&b);
}

static void test_lost_after_partial_ack(void **state)
{
    (void)state;
    uint8_t d[100] = {0};
    qk_sendbuf b;
    qk_sendbuf_init(&b, 1000);
    qk_sendbuf_write(&b, d, 100);
    qk_sendbuf_on_sent(&b, 0, 100, false);
    qk_sendbuf_on_acked(&b, 20, 10, false);
    qk_sendbuf_on_acked(&b, 50, 10, false);
    qk_sendbuf_on_lost(&b, 0, 100, false); /* only unacked parts come back */
    assert_int_equal(b.lost.n, 3);
    assert_int_equal(qk_rangeset_span(&b.lost), 80);
    assert_false(qk_rangeset_contains(&b.lost, 25));
    /* A late ack of the "lost" packet (spurious loss) cancels the retransmission. */
    qk_sendbuf_on_acked(&b, 0, 100, false);
    assert_int_equal(b.lost.n, 0);
    assert_int_equal(b.acked_off, 100);
    assert_false(qk_sendbuf_has_pending(&b));
    qk_sendbuf_free(&b);
}

typedef struct pkt {
    uint64_t off;
    size_t len;
    bool fin;
} pkt;

/* Random transfer. spurious=false: a lost packet is never acknowledged, so
 * every byte (and the FIN) must be acknowledged exactly once. refs: 0 =
 * copying writes, 1 = borrowed writes (qk_sendbuf_write_ref) of random
 * sizes from two identical sources (so extents do not always merge), 2 =
 * both at random. */
static void run_random_refs(uint64_t seed, size_t total, bool spurious, int refs)
{
    uint8_t *src = malloc(total), *tmp = malloc(2000), *src2 = malloc(total);
    uint8_t *ack_count = calloc(total + 1, 1);
    pkt *flight = calloc(100000, sizeof *flight);
    pkt *late = calloc(100000, sizeof *late);
    size_t nflight = 0, nlate = 0;
    fill_pattern(src, total, seed);
    memcpy(src2, src, total);
    qk_sendbuf b;
    qk_sendbuf_init(&b, 20000);
    uint64_t st = seed * 31 + 7;
    size_t written = 0;
    uint64_t fc = 5000;
    int steps = 0;
    while (!qk_sendbuf_all_acked(&b)) {
        assert_true(++steps < 2000000);
        if (written < total) {
            long n;
            if (refs && (refs == 1 || qk_test_rand64(&st) % 2)) {
                size_t want = 1 + (size_t)(qk_test_rand64(&st) % 700);
                if (want > total - written) want = total - written;
                const uint8_t *from = (qk_test_rand64(&st) % 3 ? src : src2) + written;
                n = qk_sendbuf_write_ref(&b, from, want);
                assert_true(b.ref_n <= QK_SENDBUF_MAX_REFS);
            } else {
                n = qk_sendbuf_write(&b, src + written, total - written);
            }
            assert_true(n >= 0);
            written += (size_t)n;
            if (written == total) qk_sendbuf_finish(&b);
        }
        uint64_t r = qk_test_rand64(&st) % 100;
        uint64_t off;
        size_t len;
        bool fin;
        if (r < 45 || nflight == 0) {
            size_t max_len = 1 + (size_t)(qk_test_rand64(&st) % 1500);
            if (!qk_sendbuf_next_range(&b, max_len, fc, &off, &len, &fin)) {
                if (b.sent_off >= fc) fc += 3000; /* MAX_STREAM_DATA arrives */
                if (nflight == 0 && nlate == 0 && !qk_sendbuf_has_pending(&b) && written == total)
                    fail_msg("stalled");
                if (nflight == 0) continue;
            } else {
                assert_true(len <= max_len);
                assert_true(off + len <= fc || off + len <= b.max_sent_off);
                assert_int_equal(qk_sendbuf_copy(&b, off, len, tmp), 0);
                assert_memory_equal(tmp, src + off, len);
                for (size_t at = 0; at < len;) { /* the zero-copy view agrees */
                    const uint8_t *v;
                    size_t k = qk_sendbuf_peek(&b, off + at, len - at, &v);
                    assert_true(k > 0 && k <= len - at);
                    assert_memory_equal(v, src + off + at, k);
                    at += k;
                }
                /* Never resend what the peer already acknowledged. */
                for (size_t i = 0; i < len; i++) assert_int_equal(ack_count[off + i], 0);
                if (fin) assert_int_equal(off + len, total);
                qk_sendbuf_on_sent(&b, off, len, fin);
                flight[nflight++] = (pkt){off, len, fin};
                continue;
            }
        }
        size_t i = (size_t)(qk_test_rand64(&st) % nflight);
        pkt p = flight[i];
        flight[i] = flight[--nflight];
        if (qk_test_rand64(&st) % 100 < 75) {
            qk_sendbuf_on_acked(&b, p.off, p.len, p.fin);
            for (size_t k = 0; k < p.len; k++) ack_count[p.off + k]++;
            if (p.fin) ack_count[total]++;
        } else {
            qk_sendbuf_on_lost(&b, p.off, p.len, p.fin);
            if (spurious) late[nlate++] = p;
        }
        if (nlate && qk_test_rand64(&st) % 4 == 0) { /* a late ack for a "lost" packet */
            pkt q = late[--nlate];
            qk_sendbuf_on_acked(&b, q.off, q.len, q.fin);
            for (size_t k = 0; k < q.len; k++) ack_count[q.off + k]++;
            if (q.fin) ack_count[total]++;
        }
        /* Memory follows the unacknowledged span. */
        uint64_t held = b.write_off - (b.acked_off < b.write_off ? b.acked_off : b.write_off);
        assert_true(qk_sendbuf_mem_bytes(&b) <=
                    held + 3 * QK_STRBUF_BLOCK_BYTES); /* + edges, spare */
    }
    for (size_t k = 0; k <= total; k++) {
        if (spurious)
            assert_true(ack_count[k] >= 1);
        else
            assert_int_equal(ack_count[k], 1);
    }
    assert_false(qk_sendbuf_has_pending(&b));
    if (refs) assert_int_equal(b.ref_n, 0); /* all acknowledged: no pointer kept */
    free(src);
    free(src2);
    free(tmp);
    free(ack_count);
    free(flight);
    free(late);
    qk_sendbuf_free(&b);
}

static void run_random(uint64_t seed, size_t total, bool spurious)
{
    run_random_refs(seed, total, spurious, 0);
}

static void test_random_refs(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        run_random_refs(seed, 200000, seed % 2 == 0, 1);
        run_random_refs(seed + 100, 200000, seed % 2 == 1, 2);
    }
}

static void test_write_ref(void **state)
{
    (void)state;
    static uint8_t d[4 * QK_SENDBUF_MAX_REFS + 8192];
    fill_pattern(d, sizeof d, 9);
    qk_sendbuf b;
    qk_sendbuf_init(&b, 1u << 20);
    /* Contiguous memory: one extent, nothing copied into blocks. */
    assert_int_equal(qk_sendbuf_write_ref(&b, d, 1000), 1000);
    assert_int_equal(qk_sendbuf_write_ref(&b, d + 1000, 3000), 3000);
    assert_int_equal(b.ref_n, 1);
    assert_int_equal(qk_sendbuf_mem_bytes(&b), 0);
    const uint8_t *v;
    assert_int_equal(qk_sendbuf_peek(&b, 10, 50000, &v), 3990);
    assert_ptr_equal(v, d + 10);
    /* A copying write in between: the view stops at each boundary. */
    assert_int_equal(qk_sendbuf_write(&b, d + 4000, 100), 100);
    assert_int_equal(qk_sendbuf_write_ref(&b, d + 4100, 100), 100);
    assert_int_equal(b.ref_n, 2);
    assert_int_equal(qk_sendbuf_peek(&b, 3990, 1000, &v), 10);
    /* Copied bytes: up to the end of their 4096-byte block, then the rest. */
    assert_int_equal(qk_sendbuf_peek(&b, 4000, 1000, &v), 96);
    assert_memory_equal(v, d + 4000, 96);
    assert_true(v != d + 4000);
    assert_int_equal(qk_sendbuf_peek(&b, 4096, 1000, &v), 4);
    assert_memory_equal(v, d + 4096, 4);
    assert_int_equal(qk_sendbuf_peek(&b, 4100, 1000, &v), 100);
    assert_ptr_equal(v, d + 4100);
    assert_int_equal(qk_sendbuf_peek(&b, 4200, 1000, &v), 0); /* past write_off */
    /* Past QK_SENDBUF_MAX_REFS extents (each write skips a byte of d so
     * none merges) the bytes are copied, and still read back right. */
    uint64_t at = 4200;
    for (unsigned i = 0; i < QK_SENDBUF_MAX_REFS; i++) {
        assert_int_equal(qk_sendbuf_write_ref(&b, d + 4200 + 2 * i, 1), 1);
        at++;
    }
    assert_int_equal(b.ref_n, QK_SENDBUF_MAX_REFS);
    size_t mem = qk_sendbuf_mem_bytes(&b);
    assert_int_equal(qk_sendbuf_write_ref(&b, d + 8000, 5), 5);
    assert_int_equal(b.ref_n, QK_SENDBUF_MAX_REFS);
    assert_true(qk_sendbuf_peek(&b, at, 5, &v) == 5 && v != d + 8000);
    assert_memory_equal(v, d + 8000, 5);
    assert_true(qk_sendbuf_mem_bytes(&b) >= mem);
    uint8_t out[8];
    assert_int_equal(qk_sendbuf_copy(&b, 4200 + 3, 1, out), 0);
    assert_int_equal(out[0], d[4200 + 6]);
    /* Acknowledging everything drops every extent. */
    qk_sendbuf_on_sent(&b, 0, (size_t)b.write_off, false);
    qk_sendbuf_on_acked(&b, 0, (size_t)b.write_off, false);
    assert_int_equal(b.ref_n, 0);
    qk_sendbuf_finish(&b);
    assert_int_equal(qk_sendbuf_write_ref(&b, d, 1), QK_ERR_STATE);
    qk_sendbuf_free(&b);
}

static void test_random_exactly_once(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 12; seed++) run_random(seed, 3000 + 7919 * seed, false);
}

static void test_random_spurious(void **state)
{
    (void)state;
    for (uint64_t seed = 100; seed <= 110; seed++) run_random(seed, 50000, true);
}

/* More ack fragments than QK_SENDBUF_MAX_RANGES: degrades to resending, still completes. */
static void test_fragment_overflow(void **state)
{
    (void)state;
    enum { N = 20000, P = 10 };
    uint8_t *src = malloc(N), tmp[P];
    fill_pattern(src, N, 9);
    qk_sendbuf b;
    qk_sendbuf_init(&b, N);
    assert_int_equal(qk_sendbuf_write(&b, src, N), N);
    qk_sendbuf_finish(&b);
    for (uint64_t off = 0; off < N; off += P) qk_sendbuf_on_sent(&b, off, P, off + P == N);
    for (uint64_t off = P; off < N; off += 2 * P) qk_sendbuf_on_acked(&b, off, P, off + P == N);
    for (uint64_t off = 0; off < N; off += 2 * P) qk_sendbuf_on_lost(&b, off, P, false);
    assert_true(b.acked.n <= QK_SENDBUF_MAX_RANGES);
    int rounds = 0;
    while (!qk_sendbuf_all_acked(&b)) {
        assert_true(++rounds < 10 * N);
        uint64_t off;
        size_t len;
        bool fin;
        assert_int_equal(qk_sendbuf_next_range(&b, P, N, &off, &len, &fin), 1);
        assert_int_equal(qk_sendbuf_copy(&b, off, len, tmp), 0);
        assert_memory_equal(tmp, src + off, len);
        qk_sendbuf_on_sent(&b, off, len, fin);
        qk_sendbuf_on_acked(&b, off, len, fin);
    }
    assert_int_equal(b.acked_off, N + 1);
    free(src);
    qk_sendbuf_free(&b);
}

static void test_discard(void **state)
{
    (void)state;
    uint8_t d[5000] = {0};
    qk_sendbuf b;
    qk_sendbuf_init(&b, 10000);
    qk_sendbuf_write(&b, d, 5000);
    qk_sendbuf_on_sent(&b, 0, 3000, false);
    assert_true(qk_sendbuf_mem_bytes(&b) > 0);
    qk_sendbuf_discard(&b);
    assert_int_equal(b.max_sent_off, 3000);
    assert_int_equal(qk_sendbuf_mem_bytes(&b), 0);
    assert_false(qk_sendbuf_has_pending(&b));
    uint64_t off;
    size_t len;
    bool fin;
    assert_int_equal(qk_sendbuf_next_range(&b, 1000, 10000, &off, &len, &fin), 0);
    assert_int_equal(qk_sendbuf_write(&b, d, 1), QK_ERR_STATE);
    qk_sendbuf_on_lost(&b, 0, 3000, false); /* ignored */
    qk_sendbuf_free(&b);
}

/* An idle stream keeps no block: once everything written is acknowledged
 * the blocks go back to the pool; the next write at a mid-block offset
 * reads back correctly. */
static void test_idle_holds_no_block(void **state)
{
    (void)state;
    uint8_t d[6000], out[6000];
    fill_pattern(d, sizeof d, 7);
    qk_sendbuf b;
    qk_sendbuf_init(&b, 100000);
    assert_int_equal(qk_sendbuf_write(&b, d, 100), 100);
    qk_sendbuf_on_sent(&b, 0, 100, false);
    qk_sendbuf_on_acked(&b, 0, 60, false);
    assert_true(qk_sendbuf_mem_bytes(&b) > 0); /* 40 bytes still unacknowledged */
    qk_sendbuf_on_acked(&b, 60, 40, false);
    assert_int_equal(qk_sendbuf_mem_bytes(&b), 0);
    assert_int_equal(qk_sendbuf_write(&b, d + 100, 5900), 5900); /* spans a block edge */
    assert_true(qk_sendbuf_mem_bytes(&b) > 0);
    assert_int_equal(qk_sendbuf_copy(&b, 100, 5900, out), 0);
    assert_memory_equal(out, d + 100, 5900);
    qk_sendbuf_on_sent(&b, 100, 5900, false);
    qk_sendbuf_on_acked(&b, 3000, 3000, false); /* a gap below: keep the blocks */
    assert_true(qk_sendbuf_mem_bytes(&b) > 0);
    qk_sendbuf_on_acked(&b, 100, 2900, false);
    assert_int_equal(qk_sendbuf_mem_bytes(&b), 0);
    qk_sendbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_bound),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_lost_after_partial_ack),
        cmocka_unit_test(test_random_exactly_once),
        cmocka_unit_test(test_random_spurious),
        cmocka_unit_test(test_fragment_overflow),
        cmocka_unit_test(test_discard),
        cmocka_unit_test(test_idle_holds_no_block),
        cmocka_unit_test(test_write_ref),
        cmocka_unit_test(test_random_refs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
