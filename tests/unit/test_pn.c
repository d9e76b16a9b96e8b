/* SPDX-License-Identifier: MIT */
/* Packet number length choice and reconstruction (RFC 9000 §17.1, A.2, A.3). */
#include "qk_test.h"
#include "wire/pn.h"
#include <quack/common.h>

static void test_encode_len(void **state)
{
    (void)state;
    /* RFC 9000 A.2 / §17.1 examples */
    assert_int_equal(qk_pn_encode_len(0xac5c02, 0xabe8b3), 2);
    assert_int_equal(qk_pn_encode_len(0xace8fe, 0xabe8b3), 3);
    /* no ack yet: the number of unacked packets is pn + 1 */
    assert_int_equal(qk_pn_encode_len(0, QK_PN_NONE), 1);
    assert_int_equal(qk_pn_encode_len(127, QK_PN_NONE), 2); /* 128 unacked > 127 */
    assert_int_equal(qk_pn_encode_len(126, QK_PN_NONE), 1);
    /* boundaries: distance d needs d < 2^(8n-1) */
    assert_int_equal(qk_pn_encode_len(1000 + 127, 1000), 1);
    assert_int_equal(qk_pn_encode_len(1000 + 128, 1000), 2);
    assert_int_equal(qk_pn_encode_len(1000 + 32767, 1000), 2);
    assert_int_equal(qk_pn_encode_len(1000 + 32768, 1000), 3);
    assert_int_equal(qk_pn_encode_len(1000 + 8388607, 1000), 3);
    assert_int_equal(qk_pn_encode_len(1000 + 8388608, 1000), 4);
    assert_int_equal(qk_pn_encode_len(1ull << 40, 0), 4);
}

static void test_decode(void **state)
{
    (void)state;
    /* RFC 9000 A.3 */
    assert_true(qk_pn_decode(0xa82f30ea, 0x9b32, 2) == 0xa82f9b32ull);
    /* first packet */
    assert_true(qk_pn_decode(QK_PN_NONE, 0, 1) == 0);
    assert_true(qk_pn_decode(QK_PN_NONE, 5, 1) == 5);
    /* wrap forward: largest 0xff, truncated 0x01 (1 byte) -> 0x101 */
    assert_true(qk_pn_decode(0xff, 0x01, 1) == 0x101);
    /* slightly older packet: largest 0x105, truncated 0xfe -> 0xfe */
    assert_true(qk_pn_decode(0x105, 0xfe, 1) == 0xfe);
    /* window edges, 1 byte: expected 0x100, candidates in (0x80, 0x180] */
    assert_true(qk_pn_decode(0xff, 0x80, 1) == 0x180);
    assert_true(qk_pn_decode(0xff, 0x81, 1) == 0x81);
    /* no underflow below 0 */
    assert_true(qk_pn_decode(2, 0xf0, 1) == 0xf0);
    /* no overflow above 2^62 - 1 */
    assert_true(qk_pn_decode(QK_PN_MAX - 1, 0x00, 1) == ((QK_PN_MAX - 1) & ~0xffull));
}

static void test_roundtrip(void **state)
{
    (void)state;
    uint64_t rng = 7;
    for (int i = 0; i < 20000; i++) {
        uint64_t largest_acked = qk_test_rand64(&rng) % (1ull << 40);
        uint64_t pn = largest_acked + 1 + qk_test_rand64(&rng) % (1u << (i % 24));
        size_t n = qk_pn_encode_len(pn, largest_acked);
        uint8_t buf[4];
        assert_int_equal(qk_pn_encode(buf, sizeof(buf), pn, n), (int)n);
        uint64_t trunc = 0;
        for (size_t j = 0; j < n; j++) trunc = (trunc << 8) | buf[j];
        /* the receiver has seen anything from largest_acked up to pn - 1 */
        uint64_t largest_rx = largest_acked + qk_test_rand64(&rng) % (pn - largest_acked);
        assert_true(qk_pn_decode(largest_rx, trunc, n) == pn);
    }
    uint8_t b[4];
    assert_int_equal(qk_pn_encode(b, 4, 1, 5), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_pn_encode(b, 1, 1, 2), QK_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(qk_pn_encode(b, 4, 0x11223344, 3), 3);
    assert_int_equal(b[0], 0x22);
    assert_int_equal(b[2], 0x44);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_len),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
