/* SPDX-License-Identifier: MIT */
/* Varints (RFC 9000 §16, Appendix A.1 vectors) and the byte cursor. */
#include "qk_test.h"
#include "base/cursor.h"
#include "wire/varint.h"
#include <quack/common.h>
#include <string.h>

static void check_vector(const char *hex, uint64_t want)
{
    uint8_t in[8], out[8];
    long n = qk_test_hex(hex, in, sizeof(in));
    uint64_t v = 0;
    assert_int_equal(qk_varint_decode(in, (size_t)n, &v), n);
    assert_true(v == want);
    /* every cut of the encoding is truncated */
    for (long cut = 0; cut < n; cut++)
        assert_int_equal(qk_varint_decode(in, (size_t)cut, &v), QK_ERR_TRUNCATED);
    /* the fixed-width encoder reproduces the vector byte-exactly */
    assert_int_equal(qk_varint_encode_fixed(out, sizeof(out), want, (size_t)n), n);
    assert_memory_equal(in, out, (size_t)n);
}

static void test_rfc_vectors(void **state)
{
    (void)state;
    /* RFC 9000 Appendix A.1 */
    check_vector("c2197c5eff14e88c", 151288809941952652ull);
    check_vector("9d7f3e7d", 494878333);
    check_vector("7bbd", 15293);
    check_vector("25", 37);
    check_vector("4025", 37); /* non-minimal is accepted */
    uint8_t out[8];
    assert_int_equal(qk_varint_encode(out, sizeof(out), 151288809941952652ull), 8);
    assert_int_equal(out[0], 0xc2);
    assert_int_equal(qk_varint_encode(out, sizeof(out), 37), 1);
    assert_int_equal(out[0], 0x25);
    assert_int_equal(qk_varint_encode(out, sizeof(out), 15293), 2);
    assert_int_equal(out[0], 0x7b);
    assert_int_equal(out[1], 0xbd);
}

static void test_lengths_and_limits(void **state)
{
    (void)state;
    const struct {
        uint64_t v;
        size_t len;
    } cases[] = {{0, 1},
                 {63, 1},
                 {64, 2},
                 {16383, 2},
                 {16384, 4},
                 {1073741823, 4},
                 {1073741824, 8},
                 {QK_VARINT_MAX, 8},
                 {QK_VARINT_MAX + 1, 0},
                 {UINT64_MAX, 0}};
    uint8_t buf[8];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(qk_varint_len(cases[i].v), cases[i].len);
        if (cases[i].len == 0) {
            assert_int_equal(qk_varint_encode(buf, 8, cases[i].v), QK_ERR_INVALID_ARG);
            continue;
        }
        assert_int_equal(qk_varint_encode(buf, 8, cases[i].v), (int)cases[i].len);
        uint64_t back;
        assert_int_equal(qk_varint_decode(buf, 8, &back), (int)cases[i].len);
        assert_true(back == cases[i].v);
        assert_int_equal(qk_varint_encode(buf, cases[i].len - 1, cases[i].v),
                         QK_ERR_BUFFER_TOO_SMALL);
    }
    /* fixed width */
    assert_int_equal(qk_varint_encode_fixed(buf, 8, 5, 2), 2);
    assert_int_equal(buf[0], 0x40);
    assert_int_equal(buf[1], 0x05);
    assert_int_equal(qk_varint_encode_fixed(buf, 8, 16384, 2), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_varint_encode_fixed(buf, 8, 1, 3), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_varint_encode_fixed(buf, 1, 1, 2), QK_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(qk_varint_encode_fixed(buf, 8, 7, 8), 8);
    assert_int_equal(buf[0], 0xc0);
    assert_int_equal(buf[7], 7);
}

static void test_cursor(void **state)
{
    (void)state;
    uint8_t in[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a};
    qk_rd r = qk_rd_make(in, sizeof(in));
    uint8_t b;
    uint16_t s;
    uint32_t t, u;
    assert_true(qk_rd_u8(&r, &b) && b == 0x01);
    assert_true(qk_rd_u16(&r, &s) && s == 0x0203);
    assert_true(qk_rd_u24(&r, &t) && t == 0x040506);
    assert_true(qk_rd_u32(&r, &u) && u == 0x0708090a);
    assert_int_equal(qk_rd_left(&r), 0);
    assert_false(qk_rd_u8(&r, &b));
    r = qk_rd_make(in, sizeof(in));
    uint64_t q;
    assert_false(qk_rd_u64(&(qk_rd){in, in + 7}, &q));
    assert_true(qk_rd_u64(&r, &q) && q == 0x0102030405060708ull);
    const uint8_t *p;
    assert_false(qk_rd_bytes(&r, 3, &p));
    assert_int_equal(qk_rd_left(&r), 2); /* a failed read does not move */
    assert_true(qk_rd_bytes(&r, 2, &p) && p == in + 8);

    uint8_t out[10];
    qk_wr w = qk_wr_make(out, sizeof(out));
    assert_true(qk_wr_u8(&w, 0xaa) && qk_wr_u16(&w, 0xbbcc) && qk_wr_u24(&w, 0x112233) &&
                qk_wr_u32(&w, 0x44556677));
    assert_false(qk_wr_u16(&w, 1));
    assert_int_equal(qk_wr_left(&w), 0);
    uint8_t want[] = {0xaa, 0xbb, 0xcc, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77};
    assert_memory_equal(out, want, sizeof(want));
    w = qk_wr_make(out, 3);
    assert_false(qk_wr_varint(&w, 16384)); /* needs 4 */
    assert_true(qk_wr_varint(&w, 16383) && out[0] == 0x7f && out[1] == 0xff);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc_vectors),
        cmocka_unit_test(test_lengths_and_limits),
        cmocka_unit_test(test_cursor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
