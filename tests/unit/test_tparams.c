/* SPDX-License-Identifier: MIT */
/* Transport parameters (RFC 9000 §18.2, RFC 9221 §3, ack-frequency-12 §3). */
#include "qk_test.h"
#include "wire/tparams.h"
#include <quack/common.h>
#include <string.h>

static int dec(const char *hex, bool from_server, qk_tparams *tp)
{
    uint8_t buf[256];
    long n = qk_test_hex(hex, buf, sizeof(buf));
    assert_true(n >= 0);
    return qk_tparams_decode(buf, (size_t)n, from_server, tp);
}

static void test_defaults(void **state)
{
    (void)state;
    qk_tparams tp;
    assert_int_equal(qk_tparams_decode(NULL, 0, true, &tp), 0);
    assert_int_equal(tp.present, 0);
    assert_int_equal(tp.max_udp_payload_size, 65527);
    assert_int_equal(tp.ack_delay_exponent, 3);
    assert_int_equal(tp.max_ack_delay_ms, 25);
    assert_int_equal(tp.active_connection_id_limit, 2);
    assert_int_equal(tp.initial_max_data, 0);
    assert_int_equal(tp.max_idle_timeout_ms, 0);
    assert_false(tp.disable_active_migration);
}

static void test_wire_bytes(void **state)
{
    (void)state;
    qk_tparams tp;
    qk_tparams_init(&tp);
    tp.present = QK_TPB_MAX_IDLE_TIMEOUT | QK_TPB_INITIAL_MAX_DATA | QK_TPB_INITIAL_SCID |
                 QK_TPB_DISABLE_ACTIVE_MIGRATION | QK_TPB_MIN_ACK_DELAY;
    tp.max_idle_timeout_ms = 30000;
    tp.initial_max_data = 1048576;
    tp.initial_scid.len = 2;
    tp.initial_scid.id[0] = 0xab;
    tp.initial_scid.id[1] = 0xcd;
    tp.disable_active_migration = true;
    tp.min_ack_delay_us = 1000;
    uint8_t out[128], want[128];
    /* id, length, value; min_ack_delay id is the 8-byte varint c0000000ff04de1b */
    long wn = qk_test_hex("01 04 80007530"
                          "04 04 80100000"
                          "0c 00"
                          "0f 02 abcd"
                          "c0000000ff04de1b 02 43e8",
                          want, sizeof(want));
    assert_int_equal(qk_tparams_encode(&tp, false, out, sizeof(out)), wn);
    assert_memory_equal(out, want, (size_t)wn);
    for (long cap = 0; cap < wn; cap++)
        assert_int_equal(qk_tparams_encode(&tp, false, out, (size_t)cap), QK_ERR_BUFFER_TOO_SMALL);
    qk_tparams back;
    assert_int_equal(qk_tparams_decode(want, (size_t)wn, false, &back), 0);
    assert_int_equal(back.present, tp.present);
    assert_int_equal(back.max_idle_timeout_ms, 30000);
    assert_int_equal(back.initial_max_data, 1048576);
    assert_true(back.disable_active_migration);
    assert_int_equal(back.initial_scid.len, 2);
    assert_int_equal(back.initial_scid.id[1], 0xcd);
    assert_int_equal(back.min_ack_delay_us, 1000);
    /* every strict prefix that cuts a parameter is an error */
    for (long cut = 1; cut < wn; cut++) {
        bool boundary = cut == 6 || cut == 12 || cut == 14 || cut == 18;
        int rc = qk_tparams_decode(want, (size_t)cut, false, &back);
        if (boundary)
            assert_int_equal(rc, 0);
        else
            assert_int_equal(rc, QK_ERR_TRANSPORT_PARAMETER);
    }
}

static void test_full_server_roundtrip(void **state)
{
    (void)state;
    qk_tparams tp;
    qk_tparams_init(&tp);
    tp.present = 0x7ffff; /* all 19 parameters */
    tp.original_dcid.len = 8;
    memset(tp.original_dcid.id, 0x11, 8);
    tp.max_idle_timeout_ms = 60000;
    memset(tp.stateless_reset_token, 0x22, 16);
    tp.max_udp_payload_size = 1500;
    tp.initial_max_data = 1ull << 40;
    tp.initial_max_stream_data_bidi_local = 1;
    tp.initial_max_stream_data_bidi_remote = 2;
    tp.initial_max_stream_data_uni = 3;
    tp.initial_max_streams_bidi = 1ull << 60;
    tp.initial_max_streams_uni = 7;
    tp.ack_delay_exponent = 20;
    tp.max_ack_delay_ms = 16383;
    tp.disable_active_migration = true;
    qk_preferred_address *pa = &tp.preferred_address;
    memcpy(pa->ipv4, "\x0a\x00\x00\x01", 4);
    pa->ipv4_port = 4433;
    memset(pa->ipv6, 0xfe, 16);
    pa->ipv6_port = 443;
    pa->cid.len = 20;
    memset(pa->cid.id, 0x33, 20);
    memset(pa->reset_token, 0x44, 16);
    tp.active_connection_id_limit = 8;
    tp.initial_scid.len = 0; /* zero-length CIDs are legal */
    tp.retry_scid.len = 20;
    memset(tp.retry_scid.id, 0x55, 20);
    tp.max_datagram_frame_size = 65535;
    tp.min_ack_delay_us = 16383000; /* == max_ack_delay in µs: allowed */
    uint8_t buf[512];
    int n = qk_tparams_encode(&tp, true, buf, sizeof(buf));
    assert_true(n > 0);
    qk_tparams back;
    assert_int_equal(qk_tparams_decode(buf, (size_t)n, true, &back), 0);
    assert_memory_equal(&back, &tp, sizeof(tp)); /* both memset-initialised */
    /* the same bytes from a client are refused (server-only parameters) */
    assert_int_equal(qk_tparams_decode(buf, (size_t)n, false, &back), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(qk_tparams_encode(&tp, false, buf, sizeof(buf)), QK_ERR_INVALID_ARG);
}

static void test_rules(void **state)
{
    (void)state;
    qk_tparams tp;
    /* duplicates (RFC 9000 §7.4) */
    assert_int_equal(dec("01 01 05 01 01 05", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    /* max_udp_payload_size < 1200 */
    assert_int_equal(dec("03 02 44af", false, &tp), QK_ERR_TRANSPORT_PARAMETER); /* 1199 */
    assert_int_equal(dec("03 02 44b0", false, &tp), 0);                          /* 1200 */
    /* ack_delay_exponent > 20 */
    assert_int_equal(dec("0a 01 15", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("0a 01 14", false, &tp), 0);
    /* max_ack_delay >= 2^14 */
    assert_int_equal(dec("0b 04 80004000", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("0b 02 7fff", false, &tp), 0);
    /* active_connection_id_limit < 2 */
    assert_int_equal(dec("0e 01 01", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("0e 01 00", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    /* initial_max_streams_* > 2^60 */
    assert_int_equal(dec("08 08 d000000000000001", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("09 08 d000000000000001", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("09 08 d000000000000000", false, &tp), 0);
    /* server-only parameters from a client */
    assert_int_equal(dec("00 01 aa", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("00 01 aa", true, &tp), 0);
    assert_int_equal(dec("02 10 00112233445566778899aabbccddeeff", false, &tp),
                     QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("10 01 aa", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    const char *pref = "0d 2e" /* 46 = 4+2+16+2+1+5+16 */
                       "0a000001 115c 000102030405060708090a0b0c0d0e0f 01bb"
                       "05 0102030405 00112233445566778899aabbccddeeff";
    assert_int_equal(dec(pref, false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec(pref, true, &tp), 0);
    assert_int_equal(tp.preferred_address.ipv4_port, 4444);
    assert_int_equal(tp.preferred_address.ipv6_port, 443);
    assert_int_equal(tp.preferred_address.cid.len, 5);
    assert_int_equal(tp.preferred_address.reset_token[15], 0xff);
    /* preferred address with a zero-length CID, or a length that disagrees */
    assert_int_equal(dec("0d 29 0a000001 115c 000102030405060708090a0b0c0d0e0f 01bb"
                         "00 00112233445566778899aabbccddeeff",
                         true, &tp),
                     QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("0d 2f 0a000001 115c 000102030405060708090a0b0c0d0e0f 01bb"
                         "05 0102030405 00112233445566778899aabbccddeeff 00",
                         true, &tp),
                     QK_ERR_TRANSPORT_PARAMETER);
    /* min_ack_delay (µs) > max_ack_delay (ms) * 1000 */
    assert_int_equal(dec("0b 01 0a c0000000ff04de1b 04 80002711", false, &tp),
                     QK_ERR_TRANSPORT_PARAMETER); /* 10001 µs > 10 ms */
    assert_int_equal(dec("0b 01 0a c0000000ff04de1b 04 80002710", false, &tp), 0);
    assert_int_equal(dec("c0000000ff04de1b 04 80004e20", false, &tp), 0); /* 20000 us <= 25 ms */
    assert_int_equal(tp.min_ack_delay_us, 20000);
    /* ...checked against the default 25 ms when max_ack_delay is absent */
    assert_int_equal(dec("c0000000ff04de1b 04 800061a9", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    /* bad lengths */
    assert_int_equal(dec("01 02 05 00", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("01 00", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("02 0f 00112233445566778899aabbccddee", true, &tp),
                     QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("0c 01 00", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("0f 15 000102030405060708090a0b0c0d0e0f1011121314", false, &tp),
                     QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("0f 05 0001", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    assert_int_equal(dec("40", false, &tp), QK_ERR_TRANSPORT_PARAMETER);
    /* unknown and reserved (31 * N + 27) ids are skipped, even with odd lengths */
    assert_int_equal(dec("1b 03 ffffff 40b6 00 21 01 00 01 01 07", false, &tp), 0);
    assert_int_equal(tp.present, QK_TPB_MAX_IDLE_TIMEOUT);
    assert_int_equal(tp.max_idle_timeout_ms, 7);
    assert_int_equal(dec("1b 00 1b 00", false, &tp), 0); /* unknown duplicates are not tracked */
}

static void test_encode_validation(void **state)
{
    (void)state;
    qk_tparams tp;
    uint8_t buf[128];
    qk_tparams_init(&tp);
    tp.present = QK_TPB_ACK_DELAY_EXPONENT;
    tp.ack_delay_exponent = 21;
    assert_int_equal(qk_tparams_encode(&tp, true, buf, sizeof(buf)), QK_ERR_INVALID_ARG);
    qk_tparams_init(&tp);
    tp.present = QK_TPB_INITIAL_MAX_DATA;
    tp.initial_max_data = 1ull << 62;
    assert_int_equal(qk_tparams_encode(&tp, true, buf, sizeof(buf)), QK_ERR_INVALID_ARG);
    qk_tparams_init(&tp);
    tp.present = QK_TPB_STATELESS_RESET_TOKEN;
    assert_int_equal(qk_tparams_encode(&tp, false, buf, sizeof(buf)), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_tparams_encode(&tp, true, buf, sizeof(buf)), 18);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_wire_bytes),
        cmocka_unit_test(test_full_server_roundtrip),
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_encode_validation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
