/* SPDX-License-Identifier: MIT */
/* DNS message codec (src/dns/msg.c): round trips, compression pointers,
 * mixed case, EDNS(0), TXT strings, and malformed input (errors, never a
 * crash or a loop). */
#include "dns/msg.h"
#include "qk_test.h"
#include <string.h>

/* A query for name/type with EDNS size edns (0 = no OPT). Returns its length. */
static size_t make_query(uint8_t *buf, size_t cap, const char *name, uint16_t type, uint16_t edns)
{
    qk_dns_name n;
    assert_int_equal(qk_dns_name_from_text(name, &n), 0);
    qk_wr w = qk_wr_make(buf, cap);
    assert_true(qk_dns_put_header(&w, 0x1234, QK_DNS_FLAG_RD, 1, 0, 0, edns ? 1 : 0));
    assert_true(qk_dns_put_question(&w, &n, type, QK_DNS_CLASS_IN));
    if (edns) assert_true(qk_dns_put_opt(&w, edns));
    return (size_t)(w.p - buf);
}

static void test_query_round_trip(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t len = make_query(buf, sizeof buf, "AbC.t.Example.COM", QK_DNS_TYPE_TXT, 1232);
    qk_dns_msg m;
    assert_int_equal(qk_dns_decode(buf, len, &m), 0);
    assert_int_equal(m.id, 0x1234);
    assert_true(m.has_question);
    assert_int_equal(m.qtype, QK_DNS_TYPE_TXT);
    assert_true(m.has_edns);
    assert_int_equal(m.edns_size, 1232);
    char text[256];
    assert_int_equal(qk_dns_name_to_text(&m.qname, text, sizeof text), 17);
    assert_string_equal(text, "AbC.t.Example.COM"); /* case kept (0x20 echo) */
    qk_dns_name dom;
    size_t prefix = 0;
    assert_int_equal(qk_dns_name_from_text("t.example.com.", &dom), 0);
    assert_true(qk_dns_name_suffix(&m.qname, &dom, &prefix)); /* RFC 4343 */
    assert_int_equal(prefix, 4);
    assert_int_equal(qk_dns_name_from_text("xample.com", &dom), 0);
    assert_false(qk_dns_name_suffix(&m.qname, &dom, &prefix)); /* label boundaries */
    /* every truncation is an error */
    for (size_t cut = 0; cut < len; cut++)
        assert_true(qk_dns_decode(buf, cut, &m) < 0 || cut >= 12);
    for (size_t cut = 12; cut < len; cut++)
        assert_int_equal(qk_dns_decode(buf, cut, &m), QK_ERR_TRUNCATED);
}

static void test_txt_answer(void **state)
{
    (void)state;
    uint8_t data[700], buf[1232], back[1232];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7);
    qk_dns_name n;
    assert_int_equal(qk_dns_name_from_text("q.t.example.com", &n), 0);
    qk_wr w = qk_wr_make(buf, sizeof buf);
    assert_true(qk_dns_put_header(&w, 7, QK_DNS_FLAG_QR | QK_DNS_FLAG_AA, 1, 1, 0, 1));
    assert_true(qk_dns_put_question(&w, &n, QK_DNS_TYPE_TXT, QK_DNS_CLASS_IN));
    assert_true(qk_dns_put_txt(&w, 0, data, sizeof data));
    assert_true(qk_dns_put_opt(&w, 1232));
    qk_dns_msg m;
    assert_int_equal(qk_dns_decode(buf, (size_t)(w.p - buf), &m), 0);
    assert_int_equal(m.n_an, 1);
    assert_int_equal(m.an[0].type, QK_DNS_TYPE_TXT);
    assert_int_equal(m.an[0].rdlen, qk_dns_txt_rdata_bytes(sizeof data));
    assert_int_equal(m.an[0].rdlen, 703);      /* 255 + 255 + 190 bytes in 3 strings */
    assert_int_equal(m.an[0].name.len, n.len); /* the pointer resolved */
    assert_int_equal(qk_dns_txt_read(m.an[0].rdata, m.an[0].rdlen, back, sizeof back), 700);
    assert_memory_equal(back, data, sizeof data);
    assert_int_equal(qk_dns_txt_read(m.an[0].rdata, m.an[0].rdlen, back, 699),
                     QK_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(qk_dns_txt_read(m.an[0].rdata, m.an[0].rdlen - 1, back, sizeof back),
                     QK_ERR_TRUNCATED);
    /* an empty TXT is one empty string */
    w = qk_wr_make(buf, sizeof buf);
    assert_true(qk_dns_put_txt(&w, 0, NULL, 0));
    assert_int_equal(w.p - buf, 12 + 1);
    /* too small an output buffer */
    w = qk_wr_make(buf, 100);
    assert_false(qk_dns_put_txt(&w, 0, data, sizeof data));
}

static void test_malformed_names(void **state)
{
    (void)state;
    qk_dns_name n;
    size_t off;
    /* a pointer to itself */
    uint8_t loop[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc0, 12};
    off = 12;
    assert_int_equal(qk_dns_name_read(loop, sizeof loop, &off, &n), QK_ERR_PROTOCOL_VIOLATION);
    /* two pointers at each other (the second points forward) */
    uint8_t pair[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xc0, 14, 0xc0, 12};
    off = 12;
    assert_int_equal(qk_dns_name_read(pair, sizeof pair, &off, &n), QK_ERR_PROTOCOL_VIOLATION);
    off = 14;
    assert_int_equal(qk_dns_name_read(pair, sizeof pair, &off, &n), QK_ERR_PROTOCOL_VIOLATION);
    /* a valid backward pointer: "a" + pointer to "b." */
    uint8_t ok[] = {1, 'b', 0, 1, 'a', 0xc0, 0};
    off = 3;
    assert_int_equal(qk_dns_name_read(ok, sizeof ok, &off, &n), 0);
    assert_int_equal(off, 7);
    assert_int_equal(n.len, 5);
    /* label types 01 and 10 */
    uint8_t ext[] = {0x41, 0};
    off = 0;
    assert_int_equal(qk_dns_name_read(ext, sizeof ext, &off, &n), QK_ERR_PROTOCOL_VIOLATION);
    /* over 255 bytes: 5 labels of 63 */
    uint8_t big[5 * 64 + 1];
    memset(big, 'x', sizeof big);
    for (int i = 0; i < 5; i++) big[i * 64] = 63;
    big[5 * 64] = 0;
    off = 0;
    assert_int_equal(qk_dns_name_read(big, sizeof big, &off, &n), QK_ERR_PROTOCOL_VIOLATION);
    /* a label running past the end */
    uint8_t cut[] = {5, 'a', 'b'};
    off = 0;
    assert_int_equal(qk_dns_name_read(cut, sizeof cut, &off, &n), QK_ERR_TRUNCATED);
    /* text names */
    assert_int_equal(qk_dns_name_from_text("a..b", &n), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_dns_name_from_text("a..", &n), QK_ERR_INVALID_ARG);
    char l64[70];
    memset(l64, 'a', 64);
    l64[64] = 0;
    assert_int_equal(qk_dns_name_from_text(l64, &n), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_dns_name_from_text(".", &n), 0);
    assert_int_equal(n.len, 1);
}

static void test_malformed_messages(void **state)
{
    (void)state;
    uint8_t buf[512];
    qk_dns_msg m;
    size_t len = make_query(buf, sizeof buf, "x.t.example.com", QK_DNS_TYPE_TXT, 1232);
    /* two OPT records */
    memcpy(buf + len, buf + len - QK_DNS_OPT_RR_BYTES, QK_DNS_OPT_RR_BYTES);
    buf[11] = 2;
    assert_int_equal(qk_dns_decode(buf, len + QK_DNS_OPT_RR_BYTES, &m), QK_ERR_PROTOCOL_VIOLATION);
    /* counts promising more than there is */
    buf[11] = 1;
    buf[7] = 3; /* the OPT record is read as an answer, then the input ends */
    assert_int_equal(qk_dns_decode(buf, len, &m), QK_ERR_PROTOCOL_VIOLATION);
    buf[7] = 0;
    buf[11] = 2;
    assert_int_equal(qk_dns_decode(buf, len, &m), QK_ERR_TRUNCATED);
    /* a tiny EDNS size counts as 512 (RFC 6891 §6.2.5) */
    len = make_query(buf, sizeof buf, "x.t.example.com", QK_DNS_TYPE_TXT, 100);
    assert_int_equal(qk_dns_decode(buf, len, &m), 0);
    assert_int_equal(m.edns_size, 512);
    assert_int_equal(qk_dns_decode(NULL, 0, &m), QK_ERR_INVALID_ARG);
    /* random bytes never crash */
    uint64_t rng = 42;
    for (int i = 0; i < 20000; i++) {
        size_t n = 12 + qk_test_rand64(&rng) % 100;
        for (size_t k = 0; k < n; k++) buf[k] = (uint8_t)qk_test_rand64(&rng);
        if (i & 1) buf[4] = 0, buf[5] = 1; /* one question: reach the name reader */
        qk_dns_decode(buf, n, &m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query_round_trip),
        cmocka_unit_test(test_txt_answer),
        cmocka_unit_test(test_malformed_names),
        cmocka_unit_test(test_malformed_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
