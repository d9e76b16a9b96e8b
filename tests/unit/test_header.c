/* SPDX-License-Identifier: MIT */
/* Packet headers (RFC 9000 §17), checked against RFC 9001 Appendix A bytes. */
#include "qk_test.h"
#include "wire/packet.h"
#include <quack/common.h>
#include <string.h>

static const uint8_t DCID[8] = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};

static void test_initial_rfc9001(void **state)
{
    (void)state;
    /* RFC 9001 A.2: unprotected client Initial header, pn 2 in 4 bytes, Length 1182 */
    uint8_t want[32], buf[64];
    long wn = qk_test_hex("c300000001088394c8f03e5157080000449e00000002", want, sizeof(want));
    qk_long_hdr_params p = {.type = QK_PKT_INITIAL,
                            .version = QK_VERSION_1,
                            .dcid = DCID,
                            .dcid_len = 8,
                            .pn = 2,
                            .pn_len = 4};
    size_t loff = 0, poff = 0;
    assert_int_equal(qk_pkt_encode_long(buf, sizeof(buf), &p, &loff, &poff), wn);
    assert_int_equal(loff, 16);
    assert_int_equal(poff, 18);
    assert_int_equal(qk_pkt_patch_length(buf, loff, 1182), 0);
    assert_memory_equal(buf, want, (size_t)wn);
    assert_int_equal(qk_pkt_patch_length(buf, loff, 16384), QK_ERR_INVALID_ARG);
    /* too small buffers at every size */
    for (long cap = 0; cap < wn; cap++)
        assert_int_equal(qk_pkt_encode_long(buf, (size_t)cap, &p, &loff, &poff),
                         QK_ERR_BUFFER_TOO_SMALL);
}

static void test_initial_parse_and_coalesce(void **state)
{
    (void)state;
    uint8_t dgram[256];
    memset(dgram, 0xee, sizeof(dgram));
    const uint8_t scid[3] = {1, 2, 3}, token[5] = {9, 8, 7, 6, 5};
    qk_long_hdr_params p = {.type = QK_PKT_INITIAL,
                            .version = QK_VERSION_1,
                            .dcid = DCID,
                            .dcid_len = 8,
                            .scid = scid,
                            .scid_len = 3,
                            .token = token,
                            .token_len = 5,
                            .pn = 0x1234,
                            .pn_len = 2};
    size_t loff, poff;
    int n1 = qk_pkt_encode_long(dgram, sizeof(dgram), &p, &loff, &poff);
    assert_true(n1 > 0);
    assert_int_equal(qk_pkt_patch_length(dgram, loff, 2 + 40), 0);
    size_t first_len = poff + 42;
    /* a Handshake packet right after it */
    p.type = QK_PKT_HANDSHAKE;
    p.token = NULL;
    p.token_len = 0;
    size_t loff2, poff2;
    int n2 = qk_pkt_encode_long(dgram + first_len, sizeof(dgram) - first_len, &p, &loff2, &poff2);
    assert_true(n2 > 0);
    assert_int_equal(qk_pkt_patch_length(dgram + first_len, loff2, 2 + 30), 0);
    size_t second_len = poff2 + 32;
    /* and a short-header packet filling the rest */
    size_t spoff;
    size_t off3 = first_len + second_len;
    assert_true(qk_pkt_encode_short(dgram + off3, sizeof(dgram) - off3, DCID, 8, true, true, 0x55,
                                    1, &spoff) == 10);
    size_t total = off3 + 10 + 20;

    qk_pkt_hdr h;
    assert_int_equal(qk_pkt_parse(dgram, total, 8, &h), 0);
    assert_int_equal(h.type, QK_PKT_INITIAL);
    assert_true(h.is_long);
    assert_int_equal(h.version, QK_VERSION_1);
    assert_int_equal(h.dcid_len, 8);
    assert_memory_equal(h.dcid, DCID, 8);
    assert_int_equal(h.scid_len, 3);
    assert_memory_equal(h.scid, scid, 3);
    assert_int_equal(h.token_len, 5);
    assert_memory_equal(h.token, token, 5);
    assert_int_equal(h.length, 42);
    assert_int_equal(h.pn_offset, poff);
    assert_int_equal(h.packet_len, first_len);
    assert_int_equal(qk_pkt_pn_len(h.first_byte), 2); /* unprotected here */
    assert_int_equal(dgram[h.pn_offset], 0x12);

    assert_int_equal(qk_pkt_parse(dgram + first_len, total - first_len, 8, &h), 0);
    assert_int_equal(h.type, QK_PKT_HANDSHAKE);
    assert_int_equal(h.token_len, 0);
    assert_int_equal(h.packet_len, second_len);

    assert_int_equal(qk_pkt_parse(dgram + off3, total - off3, 8, &h), 0);
    assert_int_equal(h.type, QK_PKT_1RTT);
    assert_false(h.is_long);
    assert_true(h.spin);
    assert_true(qk_pkt_key_phase(h.first_byte));
    assert_int_equal(h.pn_offset, 9);
    assert_int_equal(h.packet_len, 30);
    assert_memory_equal(h.dcid, DCID, 8);

    /* every cut of the Initial before its end is truncated (Length overruns) */
    for (size_t cut = 0; cut < first_len; cut++)
        assert_int_equal(qk_pkt_parse(dgram, cut, 8, &h), QK_ERR_TRUNCATED);
    /* short header shorter than the CID */
    assert_int_equal(qk_pkt_parse(dgram + off3, 8, 8, &h), QK_ERR_TRUNCATED);
}

static void test_drop_rules(void **state)
{
    (void)state;
    uint8_t buf[128];
    qk_pkt_hdr h;
    qk_long_hdr_params p = {.type = QK_PKT_HANDSHAKE,
                            .version = QK_VERSION_1,
                            .dcid = DCID,
                            .dcid_len = 8,
                            .pn = 0,
                            .pn_len = 1};
    size_t loff, poff;
    int n = qk_pkt_encode_long(buf, sizeof(buf), &p, &loff, &poff);
    qk_pkt_patch_length(buf, loff, 20);
    /* RFC 9000 §17.2: fixed bit 0 -> drop */
    buf[0] &= (uint8_t)~QK_HDR_FIXED_BIT;
    assert_int_equal(qk_pkt_parse(buf, (size_t)n + 20, 0, &h), QK_ERR_IGNORE);
    uint8_t s[16] = {0x01};
    assert_int_equal(qk_pkt_parse(s, sizeof(s), 4, &h), QK_ERR_IGNORE);
    /* 21-byte DCID in a v1 long header -> drop */
    uint8_t big[64] = {0xe0, 0, 0, 0, 1, 21};
    assert_int_equal(qk_pkt_parse(big, sizeof(big), 0, &h), QK_ERR_IGNORE);
    /* unsupported version: CIDs still exposed for Version Negotiation */
    uint8_t unk[64] = {0xc0, 0x1a, 0x2a, 0x3a, 0x4a, 30};
    unk[6 + 30] = 2;
    assert_int_equal(qk_pkt_parse(unk, sizeof(unk), 0, &h), QK_ERR_VERSION);
    assert_int_equal(h.type, QK_PKT_UNKNOWN_VERSION);
    assert_int_equal(h.version, 0x1a2a3a4a);
    assert_int_equal(h.dcid_len, 30);
    assert_int_equal(h.scid_len, 2);
    assert_ptr_equal(h.scid, unk + 6 + 31);
    /* reserved bits after unprotection (RFC 9000 §17.2, §17.3.1) */
    assert_int_equal(qk_pkt_check_reserved(0xc3), 0);
    assert_int_equal(qk_pkt_check_reserved(0xc7), QK_ERR_PROTOCOL_VIOLATION);
    assert_int_equal(qk_pkt_check_reserved(0xcb), QK_ERR_PROTOCOL_VIOLATION);
    assert_int_equal(qk_pkt_check_reserved(0x67), 0);
    assert_int_equal(qk_pkt_check_reserved(0x4b), QK_ERR_PROTOCOL_VIOLATION);
    assert_int_equal(qk_pkt_check_reserved(0x53), QK_ERR_PROTOCOL_VIOLATION);
    /* encoder argument checks */
    p.dcid_len = 21;
    assert_int_equal(qk_pkt_encode_long(buf, sizeof(buf), &p, &loff, &poff), QK_ERR_INVALID_ARG);
    p.dcid_len = 8;
    p.version = 0x1234;
    assert_int_equal(qk_pkt_encode_long(buf, sizeof(buf), &p, &loff, &poff), QK_ERR_INVALID_ARG);
    p.version = QK_VERSION_1;
    p.token_len = 1; /* token only in Initial */
    p.token = DCID;
    assert_int_equal(qk_pkt_encode_long(buf, sizeof(buf), &p, &loff, &poff), QK_ERR_INVALID_ARG);
}

static void test_short_rfc9001(void **state)
{
    (void)state;
    /* RFC 9001 A.5: unprotected short header 4200bff4, pn 654360564 in 3 bytes */
    uint8_t buf[8], want[4];
    qk_test_hex("4200bff4", want, sizeof(want));
    size_t poff;
    assert_int_equal(
        qk_pkt_encode_short(buf, sizeof(buf), NULL, 0, false, false, 654360564, 3, &poff), 4);
    assert_int_equal(poff, 1);
    assert_memory_equal(buf, want, 4);
    assert_int_equal(qk_pkt_encode_short(buf, 3, NULL, 0, false, false, 1, 3, &poff),
                     QK_ERR_BUFFER_TOO_SMALL);
}

static void test_version2_types(void **state)
{
    (void)state;
    uint8_t buf[64];
    size_t loff, poff;
    /* RFC 9369 §3.2: v2 Initial = 0b01, 0-RTT = 0b10, Handshake = 0b11, Retry = 0b00 */
    const struct {
        qk_pkt_type t;
        uint8_t bits;
    } m[] = {{QK_PKT_INITIAL, 1}, {QK_PKT_0RTT, 2}, {QK_PKT_HANDSHAKE, 3}};
    for (size_t i = 0; i < 3; i++) {
        qk_long_hdr_params p = {.type = m[i].t,
                                .version = QK_VERSION_2,
                                .dcid = DCID,
                                .dcid_len = 8,
                                .pn = 1,
                                .pn_len = 1};
        int n = qk_pkt_encode_long(buf, sizeof(buf), &p, &loff, &poff);
        assert_true(n > 0);
        assert_int_equal((buf[0] >> 4) & 3, m[i].bits);
        qk_pkt_patch_length(buf, loff, 1);
        qk_pkt_hdr h;
        assert_int_equal(qk_pkt_parse(buf, (size_t)n, 0, &h), 0);
        assert_int_equal(h.type, m[i].t);
        assert_int_equal(h.version, QK_VERSION_2);
    }
}

static void test_version_negotiation(void **state)
{
    (void)state;
    uint8_t buf[64];
    const uint32_t vers[3] = {QK_VERSION_1, QK_VERSION_2, 0x1a2a3a4a};
    const uint8_t scid[2] = {0xaa, 0xbb};
    int n = qk_pkt_encode_vn(buf, sizeof(buf), 0xff, DCID, 8, scid, 2, vers, 3);
    assert_int_equal(n, 1 + 4 + 1 + 8 + 1 + 2 + 12);
    assert_int_equal(buf[0], 0xff); /* form bit + 7 random bits */
    assert_int_equal(buf[1] | buf[2] | buf[3] | buf[4], 0);
    qk_pkt_hdr h;
    buf[0] = 0x80; /* fixed bit is unused in VN */
    assert_int_equal(qk_pkt_parse(buf, (size_t)n, 0, &h), 0);
    assert_int_equal(h.type, QK_PKT_VN);
    assert_int_equal(h.n_versions, 3);
    for (size_t i = 0; i < 3; i++) assert_int_equal(qk_pkt_vn_version(&h, i), vers[i]);
    assert_int_equal(h.scid_len, 2);
    assert_int_equal(h.packet_len, (size_t)n);
    assert_int_equal(qk_pkt_parse(buf, (size_t)n - 1, 0, &h), QK_ERR_IGNORE);
    assert_int_equal(qk_pkt_encode_vn(buf, (size_t)n - 1, 0, DCID, 8, scid, 2, vers, 3),
                     QK_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(qk_pkt_encode_vn(buf, sizeof(buf), 0, DCID, 8, scid, 2, vers, 0),
                     QK_ERR_INVALID_ARG);
}

static void test_retry_rfc9001(void **state)
{
    (void)state;
    /* RFC 9001 A.4 */
    uint8_t want[64], buf[64];
    long wn = qk_test_hex("ff000000010008f067a5502a4262b5746f6b656e"
                          "04a265ba2eff4d829058fb3f0f2496ba",
                          want, sizeof(want));
    const uint8_t *scid = want + 7;
    int n = qk_pkt_encode_retry(buf, sizeof(buf), QK_VERSION_1, 0x0f, NULL, 0, scid, 8,
                                (const uint8_t *)"token", 5);
    assert_int_equal(n, wn - 16);
    assert_memory_equal(buf, want, (size_t)n);
    qk_pkt_hdr h;
    assert_int_equal(qk_pkt_parse(want, (size_t)wn, 0, &h), 0);
    assert_int_equal(h.type, QK_PKT_RETRY);
    assert_int_equal(h.token_len, 5);
    assert_memory_equal(h.token, "token", 5);
    assert_ptr_equal(h.retry_tag, want + wn - 16);
    assert_int_equal(h.packet_len, (size_t)wn);
    assert_int_equal(qk_pkt_parse(want, 15 + 7, 0, &h), QK_ERR_TRUNCATED);
    /* pseudo-packet: ODCID (A.2: 8394c8f03e515708) prefixed with its length */
    uint8_t ps[80];
    int pn = qk_pkt_retry_pseudo(ps, sizeof(ps), DCID, 8, want, (size_t)wn - 16);
    assert_int_equal(pn, 1 + 8 + wn - 16);
    assert_int_equal(ps[0], 8);
    assert_memory_equal(ps + 1, DCID, 8);
    assert_memory_equal(ps + 9, want, (size_t)wn - 16);
    assert_int_equal(qk_pkt_retry_pseudo(ps, 10, DCID, 8, want, 20), QK_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(
        qk_pkt_encode_retry(buf, sizeof(buf), QK_VERSION_1, 0, NULL, 0, scid, 8, NULL, 0),
        QK_ERR_INVALID_ARG);
}

static void test_peek_dcid(void **state)
{
    (void)state;
    uint8_t buf[64];
    const uint8_t *d;
    size_t dl;
    qk_long_hdr_params p = {.type = QK_PKT_INITIAL,
                            .version = QK_VERSION_1,
                            .dcid = DCID,
                            .dcid_len = 8,
                            .pn = 0,
                            .pn_len = 1};
    size_t loff, poff;
    int n = qk_pkt_encode_long(buf, sizeof(buf), &p, &loff, &poff);
    assert_int_equal(qk_packet_peek_dcid(buf, (size_t)n, 4, &d, &dl), 0);
    assert_int_equal(dl, 8);
    assert_ptr_equal(d, buf + 6);
    assert_int_equal(qk_packet_peek_dcid(buf, 13, 4, &d, &dl), QK_ERR_TRUNCATED);
    n = qk_pkt_encode_short(buf, sizeof(buf), DCID, 4, false, false, 0, 1, &poff);
    assert_int_equal(qk_packet_peek_dcid(buf, (size_t)n, 4, &d, &dl), 0);
    assert_int_equal(dl, 4);
    assert_ptr_equal(d, buf + 1);
    assert_int_equal(qk_packet_peek_dcid(buf, 4, 4, &d, &dl), QK_ERR_TRUNCATED);
    assert_int_equal(qk_packet_peek_dcid(buf, 0, 4, &d, &dl), QK_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_initial_rfc9001), cmocka_unit_test(test_initial_parse_and_coalesce),
        cmocka_unit_test(test_drop_rules),      cmocka_unit_test(test_short_rfc9001),
        cmocka_unit_test(test_version2_types),  cmocka_unit_test(test_version_negotiation),
        cmocka_unit_test(test_retry_rfc9001),   cmocka_unit_test(test_peek_dcid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
