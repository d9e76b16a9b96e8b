/* SPDX-License-Identifier: MIT */
/* Frames (RFC 9000 §19, RFC 9221, ack-frequency-12): round trips, truncation at
 * every byte, field validation, the ACK range encoder and iterator, sizing and
 * the RFC 9000 §12.4 Table 3 classification. */
#include "qk_test.h"
#include "base/rangeset.h"
#include "wire/frame.h"
#include <quack/common.h>
#include <string.h>

static const uint8_t DATA[40] = "0123456789abcdefghijklmnopqrstuvwxyzABCD";
static const uint8_t TOKEN16[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

/* A stream-like frame (no Length) may decode from a prefix as a shorter frame
 * that consumes the whole prefix; every other frame must fail. */
static bool consumes_rest(const qk_frame *f)
{
    return (qk_frame_is_stream(f->type) && !f->u.stream.has_length) || f->type == QK_FT_DATAGRAM ||
           f->type == QK_FT_PADDING;
}

static void roundtrip(const qk_frame *f)
{
    uint8_t buf[256];
    int n = qk_frame_encode(f, buf, sizeof(buf));
    assert_true(n > 0);
    qk_frame g;
    assert_int_equal(qk_frame_decode(buf, (size_t)n, &g), n);
    assert_true(qk_frame_equal(f, &g));
    for (int cut = 1; cut < n; cut++) {
        int rc = qk_frame_decode(buf, (size_t)cut, &g);
        if (consumes_rest(f) && rc > 0)
            assert_int_equal(rc, cut);
        else
            assert_true(rc < 0);
    }
    for (int cap = 0; cap < n; cap++)
        assert_int_equal(qk_frame_encode(f, buf, (size_t)cap), QK_ERR_BUFFER_TOO_SMALL);
}

static void test_roundtrip_all(void **state)
{
    (void)state;
    qk_frame f;
#define RT(init)                                                                                   \
    do {                                                                                           \
        memset(&f, 0, sizeof(f));                                                                  \
        init;                                                                                      \
        roundtrip(&f);                                                                             \
    } while (0)
    RT(f.type = QK_FT_PADDING; f.u.padding.len = 7);
    RT(f.type = QK_FT_PING);
    /* ACK with two extra ranges: [10,20] [5,5] [0,2] */
    static const uint8_t ranges[] = {0x03, 0x00, 0x01, 0x02};
    RT(f.type = QK_FT_ACK; f.u.ack.largest = 20; f.u.ack.ack_delay = 1000; f.u.ack.first_range = 10;
       f.u.ack.range_count = 2; f.u.ack.ranges = ranges; f.u.ack.ranges_len = 4);
    RT(f.type = QK_FT_ACK_ECN; f.u.ack.largest = 1ull << 40; f.u.ack.first_range = 3;
       f.u.ack.has_ecn = true; f.u.ack.ect0 = 5; f.u.ack.ect1 = 70000; f.u.ack.ce = 1);
    RT(f.type = QK_FT_RESET_STREAM; f.u.reset_stream.stream_id = 4;
       f.u.reset_stream.app_error = 0x1234; f.u.reset_stream.final_size = 1ull << 33);
    RT(f.type = QK_FT_STOP_SENDING; f.u.stop_sending.stream_id = 8;
       f.u.stop_sending.app_error = 77);
    RT(f.type = QK_FT_CRYPTO; f.u.crypto.offset = 300; f.u.crypto.data = DATA; f.u.crypto.len = 17);
    RT(f.type = QK_FT_NEW_TOKEN; f.u.new_token.token = DATA; f.u.new_token.len = 12);
    for (int fin = 0; fin < 2; fin++) {
        for (int len = 0; len < 2; len++) {
            for (int off = 0; off < 2; off++) {
                RT(f.type = QK_FT_STREAM | (off ? QK_STREAM_BIT_OFF : 0) |
                            (len ? QK_STREAM_BIT_LEN : 0) | (fin ? QK_STREAM_BIT_FIN : 0);
                   f.u.stream.stream_id = 0x3fff; f.u.stream.offset = off ? 99999 : 0;
                   f.u.stream.has_length = len; f.u.stream.fin = fin; f.u.stream.data = DATA;
                   f.u.stream.len = 33);
            }
        }
    }
    RT(f.type = QK_FT_MAX_DATA; f.u.max.max = 1ull << 50);
    RT(f.type = QK_FT_MAX_STREAM_DATA; f.u.stream_max.stream_id = 2; f.u.stream_max.max = 1);
    RT(f.type = QK_FT_MAX_STREAMS_BIDI; f.u.max.max = 1ull << 60);
    RT(f.type = QK_FT_MAX_STREAMS_UNI; f.u.max.max = 100);
    RT(f.type = QK_FT_DATA_BLOCKED; f.u.max.max = 65536);
    RT(f.type = QK_FT_STREAM_DATA_BLOCKED; f.u.stream_max.stream_id = 6; f.u.stream_max.max = 70);
    RT(f.type = QK_FT_STREAMS_BLOCKED_BIDI; f.u.max.max = 3);
    RT(f.type = QK_FT_STREAMS_BLOCKED_UNI; f.u.max.max = 1ull << 60);
    RT(f.type = QK_FT_NEW_CONNECTION_ID; f.u.new_cid.seq = 5; f.u.new_cid.retire_prior_to = 5;
       f.u.new_cid.cid = DATA; f.u.new_cid.cid_len = 20; f.u.new_cid.reset_token = TOKEN16);
    RT(f.type = QK_FT_RETIRE_CONNECTION_ID; f.u.retire_cid.seq = 1234567);
    RT(f.type = QK_FT_PATH_CHALLENGE; memcpy(f.u.path.data, DATA, 8));
    RT(f.type = QK_FT_PATH_RESPONSE; memcpy(f.u.path.data, DATA + 8, 8));
    RT(f.type = QK_FT_CONNECTION_CLOSE; f.u.close.error_code = 0x0a; f.u.close.frame_type = 0x08;
       f.u.close.reason = DATA; f.u.close.reason_len = 6);
    RT(f.type = QK_FT_CONNECTION_CLOSE_APP; f.u.close.error_code = 0x100);
    RT(f.type = QK_FT_HANDSHAKE_DONE);
    RT(f.type = QK_FT_IMMEDIATE_ACK);
    RT(f.type = QK_FT_DATAGRAM; f.u.datagram.data = DATA; f.u.datagram.len = 9);
    RT(f.type = QK_FT_DATAGRAM_LEN; f.u.datagram.has_length = true; f.u.datagram.data = DATA;
       f.u.datagram.len = 0);
    RT(f.type = QK_FT_ACK_FREQUENCY; f.u.ack_frequency.seq = 3;
       f.u.ack_frequency.ack_eliciting_threshold = 10;
       f.u.ack_frequency.request_max_ack_delay_us = 25000;
       f.u.ack_frequency.reordering_threshold = 1);
#undef RT
}

/* Exact bytes for a few frames (RFC 9000 §19 layouts). */
static void test_wire_bytes(void **state)
{
    (void)state;
    uint8_t buf[64], want[64];
    qk_frame f = {.type = QK_FT_ACK_FREQUENCY};
    f.u.ack_frequency.seq = 1;
    f.u.ack_frequency.ack_eliciting_threshold = 2;
    f.u.ack_frequency.request_max_ack_delay_us = 100; /* 2-byte varint 0x4064 */
    f.u.ack_frequency.reordering_threshold = 0;
    long wn = qk_test_hex("40af 01 02 4064 00", want, sizeof(want));
    assert_int_equal(qk_frame_encode(&f, buf, sizeof(buf)), wn);
    assert_memory_equal(buf, want, (size_t)wn);

    qk_frame s = {.type = QK_FT_STREAM};
    s.u.stream.stream_id = 4;
    s.u.stream.offset = 64;
    s.u.stream.data = DATA;
    s.u.stream.len = 2;
    s.u.stream.has_length = true;
    s.u.stream.fin = true;
    wn = qk_test_hex("0f 04 4040 02 3031", want, sizeof(want));
    assert_int_equal(qk_frame_encode(&s, buf, sizeof(buf)), wn);
    assert_memory_equal(buf, want, (size_t)wn);

    /* decode CONNECTION_CLOSE 0x1c: code 0x0a, frame type 0x06, reason "ab" */
    wn = qk_test_hex("1c 0a 06 02 6162", want, sizeof(want));
    assert_int_equal(qk_frame_decode(want, (size_t)wn, &f), wn);
    assert_int_equal(f.u.close.error_code, 0x0a);
    assert_int_equal(f.u.close.frame_type, 0x06);
    assert_int_equal(f.u.close.reason_len, 2);
    assert_memory_equal(f.u.close.reason, "ab", 2);

    /* an explicit zero offset (OFF bit) survives re-encoding (found by fuzz_frame) */
    wn = qk_test_hex("0f 0f 00 00", want, sizeof(want));
    assert_int_equal(qk_frame_decode(want, (size_t)wn, &f), wn);
    assert_int_equal(qk_frame_encode(&f, buf, sizeof(buf)), wn);
    assert_memory_equal(buf, want, (size_t)wn);

    /* padding run stops at the first non-zero byte */
    wn = qk_test_hex("000000 01", want, sizeof(want));
    assert_int_equal(qk_frame_decode(want, (size_t)wn, &f), 3);
    assert_int_equal(f.type, QK_FT_PADDING);
    assert_int_equal(f.u.padding.len, 3);
}

static int decode_hex(const char *hex, qk_frame *f)
{
    uint8_t buf[128];
    long n = qk_test_hex(hex, buf, sizeof(buf));
    assert_true(n > 0);
    return qk_frame_decode(buf, (size_t)n, f);
}

static void test_invalid_fields(void **state)
{
    (void)state;
    qk_frame f;
    /* RFC 9000 §19.3.1: first range larger than Largest Acknowledged */
    assert_int_equal(decode_hex("02 05 00 00 06", &f), QK_ERR_FRAME_ENCODING);
    assert_int_equal(decode_hex("02 05 00 00 05", &f), 5); /* down to 0 is fine */
    /* gap underflow: smallest 3, gap 2 -> largest = 3 - 2 - 2 < 0 */
    assert_int_equal(decode_hex("02 05 00 01 02 02 00", &f), QK_ERR_FRAME_ENCODING);
    assert_int_equal(decode_hex("02 05 00 01 02 01 00", &f), 7); /* largest 0 */
    /* range length underflow: largest 0 then length 1 */
    assert_int_equal(decode_hex("02 05 00 01 02 01 01", &f), QK_ERR_FRAME_ENCODING);
    /* range count far beyond the bytes present */
    assert_int_equal(decode_hex("02 05 00 bfffffff 00", &f), QK_ERR_FRAME_ENCODING);
    /* RFC 9000 §19.8: offset + length > 2^62 - 1 */
    assert_int_equal(decode_hex("0e 00 ffffffffffffffff 01 41", &f), QK_ERR_FRAME_ENCODING);
    assert_int_equal(decode_hex("0e 00 ffffffffffffffff 00", &f), 11);
    assert_int_equal(decode_hex("0c 00 fffffffffffffffe 4142", &f), QK_ERR_FRAME_ENCODING);
    /* RFC 9000 §19.6: CRYPTO likewise */
    assert_int_equal(decode_hex("06 ffffffffffffffff 01 41", &f), QK_ERR_FRAME_ENCODING);
    /* RFC 9000 §19.7: empty NEW_TOKEN */
    assert_int_equal(decode_hex("07 00", &f), QK_ERR_FRAME_ENCODING);
    /* RFC 9000 §19.11 / §19.14: stream counts above 2^60 */
    assert_int_equal(decode_hex("12 d000000000000001", &f), QK_ERR_FRAME_ENCODING);
    assert_int_equal(decode_hex("13 d000000000000000", &f), 9);
    assert_int_equal(decode_hex("16 d000000000000001", &f), QK_ERR_FRAME_ENCODING);
    assert_int_equal(decode_hex("17 d000000000000001", &f), QK_ERR_FRAME_ENCODING);
    /* RFC 9000 §19.15: CID length 0 or 21, Retire Prior To > Sequence */
    assert_int_equal(decode_hex("18 01 00 00 0102030405060708090a0b0c0d0e0f10", &f),
                     QK_ERR_FRAME_ENCODING);
    assert_int_equal(decode_hex("18 01 00 15 " /* 21 */
                                "000102030405060708090a0b0c0d0e0f1011121314"
                                "0102030405060708090a0b0c0d0e0f10",
                                &f),
                     QK_ERR_FRAME_ENCODING);
    assert_int_equal(decode_hex("18 01 02 01 aa 0102030405060708090a0b0c0d0e0f10", &f),
                     QK_ERR_FRAME_ENCODING);
    assert_int_equal(decode_hex("18 02 02 01 aa 0102030405060708090a0b0c0d0e0f10", &f), 21);
    /* unknown frame types (RFC 9000 §12.4) */
    assert_int_equal(decode_hex("20", &f), QK_ERR_FRAME_ENCODING);
    assert_int_equal(decode_hex("4041", &f), QK_ERR_FRAME_ENCODING);
    /* non-minimal frame type: rejected (our choice under RFC 9000 §12.4) */
    assert_int_equal(decode_hex("4001", &f), QK_ERR_PROTOCOL_VIOLATION);
    assert_int_equal(decode_hex("800000af 00 00 00 00", &f), QK_ERR_PROTOCOL_VIOLATION);
    assert_int_equal(qk_frame_decode((const uint8_t *)"", 0, &f), QK_ERR_INVALID_ARG);

    /* encoder refuses what the decoder would reject */
    uint8_t buf[64];
    memset(&f, 0, sizeof(f));
    f.type = QK_FT_NEW_TOKEN;
    assert_int_equal(qk_frame_encode(&f, buf, sizeof(buf)), QK_ERR_INVALID_ARG);
    f.type = QK_FT_MAX_STREAMS_BIDI;
    f.u.max.max = (1ull << 60) + 1;
    assert_int_equal(qk_frame_encode(&f, buf, sizeof(buf)), QK_ERR_INVALID_ARG);
    f.type = QK_FT_MAX_DATA;
    f.u.max.max = 1ull << 62;
    assert_int_equal(qk_frame_encode(&f, buf, sizeof(buf)), QK_ERR_INVALID_ARG);
    memset(&f, 0, sizeof(f));
    f.type = QK_FT_NEW_CONNECTION_ID;
    f.u.new_cid.cid = DATA;
    f.u.new_cid.cid_len = 0;
    f.u.new_cid.reset_token = TOKEN16;
    assert_int_equal(qk_frame_encode(&f, buf, sizeof(buf)), QK_ERR_INVALID_ARG);
    f.type = 0x21;
    assert_int_equal(qk_frame_encode(&f, buf, sizeof(buf)), QK_ERR_INVALID_ARG);
}

static void test_frame_equal_detects(void **state)
{
    (void)state;
    qk_frame a = {.type = QK_FT_STREAM}, b;
    a.u.stream.data = DATA;
    a.u.stream.len = 5;
    b = a;
    assert_true(qk_frame_equal(&a, &b));
    uint8_t other[5] = "01235";
    b.u.stream.data = other;
    assert_false(qk_frame_equal(&a, &b));
    b = a;
    b.u.stream.offset = 1;
    assert_false(qk_frame_equal(&a, &b));
    b = a;
    b.type = QK_FT_STREAM | 1;
    assert_false(qk_frame_equal(&a, &b));
}

static void collect(const qk_frame_ack *ack, uint64_t (*out)[2], size_t max, size_t *n)
{
    qk_ack_iter it;
    uint64_t lo, hi;
    *n = 0;
    qk_ack_iter_init(&it, ack);
    while (qk_ack_iter_next(&it, &lo, &hi)) {
        assert_true(*n < max);
        out[*n][0] = lo;
        out[*n][1] = hi;
        (*n)++;
    }
}

static void test_ack_encoder_vector(void **state)
{
    (void)state;
    const qk_range r[3] = {{0, 3}, {5, 6}, {10, 21}};
    uint8_t buf[64], want[32];
    size_t nw = 0;
    /* RFC 9000 §19.3.1: largest 20, first range 10, (gap 3, len 0), (gap 1, len 2) */
    long wn = qk_test_hex("02 14 4100 02 0a 03 00 01 02", want, sizeof(want));
    assert_int_equal(qk_frame_encode_ack(buf, sizeof(buf), r, 3, 256, NULL, &nw), wn);
    assert_int_equal(nw, 3);
    assert_memory_equal(buf, want, (size_t)wn);
    qk_frame f;
    assert_int_equal(qk_frame_decode(buf, (size_t)wn, &f), wn);
    uint64_t got[8][2];
    size_t n;
    collect(&f.u.ack, got, 8, &n);
    assert_int_equal(n, 3);
    assert_int_equal(got[0][0], 10);
    assert_int_equal(got[0][1], 20);
    assert_int_equal(got[1][0], 5);
    assert_int_equal(got[1][1], 5);
    assert_int_equal(got[2][0], 0);
    assert_int_equal(got[2][1], 2);
    /* only room for the top range plus one pair */
    assert_int_equal(qk_frame_encode_ack(buf, (size_t)wn - 1, r, 3, 256, NULL, &nw), wn - 2);
    assert_int_equal(nw, 2);
    assert_int_equal(buf[4], 1); /* range count */
    /* top range only */
    assert_int_equal(qk_frame_encode_ack(buf, 6, r, 3, 256, NULL, &nw), 6);
    assert_int_equal(nw, 1);
    assert_int_equal(qk_frame_encode_ack(buf, 5, r, 3, 256, NULL, &nw), QK_ERR_BUFFER_TOO_SMALL);
    /* ECN counts */
    const uint64_t ecn[3] = {7, 0, 300};
    wn = qk_test_hex("03 14 00 02 0a 03 00 01 02 07 00 412c", want, sizeof(want));
    assert_int_equal(qk_frame_encode_ack(buf, sizeof(buf), r, 3, 0, ecn, &nw), wn);
    assert_memory_equal(buf, want, (size_t)wn);
    assert_int_equal(qk_frame_decode(buf, (size_t)wn, &f), wn);
    assert_true(f.u.ack.has_ecn && f.u.ack.ect0 == 7 && f.u.ack.ect1 == 0 && f.u.ack.ce == 300);
    /* invalid input ranges */
    const qk_range adj[2] = {{0, 5}, {5, 9}};
    assert_int_equal(qk_frame_encode_ack(buf, sizeof(buf), adj, 2, 0, NULL, &nw),
                     QK_ERR_INVALID_ARG);
    const qk_range empty[1] = {{4, 4}};
    assert_int_equal(qk_frame_encode_ack(buf, sizeof(buf), empty, 1, 0, NULL, &nw),
                     QK_ERR_INVALID_ARG);
    assert_int_equal(qk_frame_encode_ack(buf, sizeof(buf), r, 0, 0, NULL, &nw), QK_ERR_INVALID_ARG);
}

static void test_ack_random_vs_rangeset(void **state)
{
    (void)state;
    uint64_t rng = 99;
    uint8_t buf[512];
    for (int iter = 0; iter < 2000; iter++) {
        qk_rangeset s;
        qk_rangeset_init(&s, 64);
        int adds = 1 + (int)(qk_test_rand64(&rng) % 40);
        uint64_t scale = 1ull << (qk_test_rand64(&rng) % 40);
        for (int i = 0; i < adds; i++) {
            uint64_t a = qk_test_rand64(&rng) % (scale * 8 + 1);
            uint64_t len = 1 + qk_test_rand64(&rng) % (scale + 1);
            (void)qk_rangeset_add(&s, a, a + len);
        }
        size_t cap = 8 + qk_test_rand64(&rng) % sizeof(buf);
        size_t nw = 0;
        int n = qk_frame_encode_ack(buf, cap, s.r, s.n, 17, NULL, &nw);
        if (n < 0) { /* only when even the top range does not fit */
            assert_int_equal(n, QK_ERR_BUFFER_TOO_SMALL);
            qk_rangeset_free(&s);
            continue;
        }
        assert_true((size_t)n <= cap);
        assert_true(nw >= 1 && nw <= s.n);
        if (nw < s.n) { /* one more range would not have fit */
            int bigger =
                qk_frame_encode_ack(buf, sizeof(buf), s.r + s.n - nw - 1, nw + 1, 17, NULL, NULL);
            assert_true(bigger > 0 && (size_t)bigger > cap);
            n = qk_frame_encode_ack(buf, cap, s.r, s.n, 17, NULL, &nw);
        }
        qk_frame f;
        assert_int_equal(qk_frame_decode(buf, (size_t)n, &f), n);
        assert_int_equal(f.u.ack.range_count + 1, nw);
        uint64_t got[64][2];
        size_t k;
        collect(&f.u.ack, got, 64, &k);
        assert_int_equal(k, nw);
        for (size_t i = 0; i < k; i++) {
            const qk_range *want = &s.r[s.n - 1 - i];
            assert_true(got[i][0] == want->start);
            assert_true(got[i][1] == want->end - 1);
        }
        qk_rangeset_free(&s);
    }
}

static void test_stream_sizing(void **state)
{
    (void)state;
    assert_int_equal(qk_frame_stream_header_len(0, 0, 10, false), 2);
    assert_int_equal(qk_frame_stream_header_len(0, 0, 10, true), 3);
    assert_int_equal(qk_frame_stream_header_len(64, 16384, 64, true), 1 + 2 + 4 + 2);
    assert_int_equal(qk_frame_crypto_header_len(0, 100), 1 + 1 + 2);
    uint64_t rng = 5;
    uint8_t buf[20000];
    static uint8_t data[20000];
    for (int i = 0; i < 3000; i++) {
        uint64_t id = qk_test_rand64(&rng) >> (2 + qk_test_rand64(&rng) % 62);
        uint64_t off = (qk_test_rand64(&rng) >> (2 + qk_test_rand64(&rng) % 62));
        size_t space = qk_test_rand64(&rng) % 20000;
        bool wl = qk_test_rand64(&rng) & 1;
        size_t d = qk_frame_stream_max_data(id, off, space, wl);
        qk_frame f = {.type = QK_FT_STREAM};
        f.u.stream.stream_id = id;
        f.u.stream.offset = off;
        f.u.stream.has_length = wl;
        f.u.stream.data = data;
        if (d > 0) {
            f.u.stream.len = d;
            int n = qk_frame_encode(&f, buf, space);
            assert_true(n > 0);
            assert_int_equal((size_t)n, qk_frame_stream_header_len(id, off, d, wl) + d);
        }
        f.u.stream.len = d + 1; /* one more byte never fits */
        assert_true(qk_frame_encode(&f, buf, space) == QK_ERR_BUFFER_TOO_SMALL);
        size_t c = qk_frame_crypto_max_data(off, space);
        qk_frame g = {.type = QK_FT_CRYPTO};
        g.u.crypto.offset = off;
        g.u.crypto.data = data;
        if (c > 0) {
            g.u.crypto.len = c;
            assert_int_equal(qk_frame_encode(&g, buf, space),
                             (int)(qk_frame_crypto_header_len(off, c) + c));
        }
        g.u.crypto.len = c + 1;
        assert_true(qk_frame_encode(&g, buf, space) == QK_ERR_BUFFER_TOO_SMALL);
    }
}

static void test_classification(void **state)
{
    (void)state;
    const qk_pkt_type I = QK_PKT_INITIAL, H = QK_PKT_HANDSHAKE, Z = QK_PKT_0RTT, O = QK_PKT_1RTT;
    /* RFC 9000 Table 3 rows as "IH01" strings */
    const struct {
        uint64_t t;
        const char *pkts;
    } rows[] = {
        {QK_FT_PADDING, "IH01"},
        {QK_FT_PING, "IH01"},
        {QK_FT_ACK, "IH_1"},
        {QK_FT_ACK_ECN, "IH_1"},
        {QK_FT_RESET_STREAM, "__01"},
        {QK_FT_STOP_SENDING, "__01"},
        {QK_FT_CRYPTO, "IH_1"},
        {QK_FT_NEW_TOKEN, "___1"},
        {0x08, "__01"},
        {0x0f, "__01"},
        {QK_FT_MAX_DATA, "__01"},
        {QK_FT_MAX_STREAM_DATA, "__01"},
        {QK_FT_MAX_STREAMS_BIDI, "__01"},
        {QK_FT_MAX_STREAMS_UNI, "__01"},
        {QK_FT_DATA_BLOCKED, "__01"},
        {QK_FT_STREAM_DATA_BLOCKED, "__01"},
        {QK_FT_STREAMS_BLOCKED_BIDI, "__01"},
        {QK_FT_STREAMS_BLOCKED_UNI, "__01"},
        {QK_FT_NEW_CONNECTION_ID, "__01"},
        {QK_FT_RETIRE_CONNECTION_ID, "__01"},
        {QK_FT_PATH_CHALLENGE, "__01"},
        {QK_FT_PATH_RESPONSE, "___1"},
        {QK_FT_CONNECTION_CLOSE, "IH01"},
        {QK_FT_CONNECTION_CLOSE_APP, "__01"},
        {QK_FT_HANDSHAKE_DONE, "___1"},
        {QK_FT_DATAGRAM, "__01"},
        {QK_FT_DATAGRAM_LEN, "__01"},
        {QK_FT_IMMEDIATE_ACK, "___1"},
        {QK_FT_ACK_FREQUENCY, "___1"},
        {0x20, "____"},
    };
    const qk_pkt_type cols[4] = {I, H, Z, O};
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        for (size_t c = 0; c < 4; c++)
            assert_int_equal(qk_frame_allowed(rows[i].t, cols[c]), rows[i].pkts[c] != '_');
    assert_false(qk_frame_allowed(QK_FT_PING, QK_PKT_RETRY));
    /* RFC 9000 §13.2 / RFC 9002 §2 */
    assert_false(qk_frame_is_ack_eliciting(QK_FT_ACK));
    assert_false(qk_frame_is_ack_eliciting(QK_FT_ACK_ECN));
    assert_false(qk_frame_is_ack_eliciting(QK_FT_PADDING));
    assert_false(qk_frame_is_ack_eliciting(QK_FT_CONNECTION_CLOSE));
    assert_false(qk_frame_is_ack_eliciting(QK_FT_CONNECTION_CLOSE_APP));
    assert_true(qk_frame_is_ack_eliciting(QK_FT_PING));
    assert_true(qk_frame_is_ack_eliciting(0x0a));
    assert_true(qk_frame_is_ack_eliciting(QK_FT_DATAGRAM));
    assert_true(qk_frame_is_ack_eliciting(QK_FT_ACK_FREQUENCY));
    /* RFC 9000 §9.1 */
    assert_true(qk_frame_is_probing(QK_FT_PATH_CHALLENGE));
    assert_true(qk_frame_is_probing(QK_FT_PATH_RESPONSE));
    assert_true(qk_frame_is_probing(QK_FT_NEW_CONNECTION_ID));
    assert_true(qk_frame_is_probing(QK_FT_PADDING));
    assert_false(qk_frame_is_probing(QK_FT_PING));
    assert_false(qk_frame_is_probing(0x08));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all),      cmocka_unit_test(test_wire_bytes),
        cmocka_unit_test(test_invalid_fields),     cmocka_unit_test(test_frame_equal_detects),
        cmocka_unit_test(test_ack_encoder_vector), cmocka_unit_test(test_ack_random_vs_rangeset),
        cmocka_unit_test(test_stream_sizing),      cmocka_unit_test(test_classification),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
