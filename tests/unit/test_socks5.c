/* SPDX-License-Identifier: MIT */
/* SOCKS5 server-side negotiation (RFC 1928, RFC 1929) and the --allow list
 * of `quack tunnel server --to socks5` (src/tunnel/socks5.c). */
#include "qk_test.h"

#include <arpa/inet.h>
#include <quack/io.h>
#include <quack/tunnel.h>
#include <string.h>

static qk_socks5_result feed_all(qk_socks5 *s, const uint8_t *in, size_t len, size_t *used,
                                 uint8_t *out, size_t *out_len)
{
    return qk_socks5_feed(s, in, len, used, out, out_len);
}

static void test_noauth_connect_name_one_byte_at_a_time(void **state)
{
    (void)state;
    static const uint8_t msg[] = {5,   1,   0, /* greeting: no auth */
                                  5,   1,   0,   3,   9,   'l', 'o',  'c',
                                  'a', 'l', 'h', 'o', 's', 't', 0x1f, 0x90, /* port 8080 */
                                  'G', 'E'};                                /* payload */
    qk_socks5 *s = NULL;
    assert_int_equal(qk_socks5_new(NULL, NULL, &s), 0);
    uint8_t out[32], replies[64];
    size_t used, out_len, n_replies = 0, i = 0;
    qk_socks5_result r = QK_SOCKS5_MORE;
    for (; i < sizeof msg && r == QK_SOCKS5_MORE; i++) {
        r = feed_all(s, msg + i, 1, &used, out, &out_len);
        assert_int_equal(used, 1);
        memcpy(replies + n_replies, out, out_len);
        n_replies += out_len;
    }
    assert_int_equal(r, QK_SOCKS5_REQUEST);
    assert_int_equal(i, sizeof msg - 2); /* the payload is not consumed */
    assert_int_equal(n_replies, 2);
    assert_int_equal(replies[0], 5);
    assert_int_equal(replies[1], 0); /* RFC 1928 §3: method 0 chosen */
    assert_string_equal(qk_socks5_host(s), "localhost");
    assert_int_equal(qk_socks5_port(s), 8080);
    qk_socks5_del(s);
}

static void test_auth_and_v6_in_one_read(void **state)
{
    (void)state;
    uint8_t msg[64] = {5, 2, 0, 2, 1, 5, 'a', 'l', 'i', 'c', 'e', 2, 'p', 'w', 5, 1, 0, 4};
    size_t n = 18;
    inet_pton(AF_INET6, "2001:db8::1", msg + n);
    n += 16;
    msg[n++] = 0;
    msg[n++] = 80;
    qk_socks5 *s = NULL;
    assert_int_equal(qk_socks5_new("alice", "pw", &s), 0);
    uint8_t out[32];
    size_t used, out_len;
    assert_int_equal(qk_socks5_feed(s, msg, n, &used, out, &out_len), QK_SOCKS5_REQUEST);
    assert_int_equal(used, n);
    assert_int_equal(out_len, 4);
    static const uint8_t want[4] = {5, 2, 1, 0}; /* method 2; RFC 1929 status 0 */
    assert_memory_equal(out, want, 4);
    assert_string_equal(qk_socks5_host(s), "2001:db8::1");
    assert_int_equal(qk_socks5_port(s), 80);
    qk_socks5_del(s);
}

static void test_refusals(void **state)
{
    (void)state;
    qk_socks5 *s = NULL;
    uint8_t out[32];
    size_t used, out_len;
    /* Auth required, client offers only "no auth": 0xff, RFC 1928 §3. */
    static const uint8_t g0[] = {5, 1, 0};
    qk_socks5_del(s);
    assert_int_equal(qk_socks5_new("alice", "pw", &s), 0);
    assert_int_equal(qk_socks5_feed(s, g0, 3, &used, out, &out_len), QK_SOCKS5_FAIL);
    assert_int_equal(out_len, 2);
    assert_int_equal(out[1], 0xff);
    /* Wrong password: RFC 1929 status != 0. */
    static const uint8_t bad[] = {5, 1, 2, 1, 5, 'a', 'l', 'i', 'c', 'e', 2, 'p', 'x'};
    qk_socks5_del(s);
    assert_int_equal(qk_socks5_new("alice", "pw", &s), 0);
    assert_int_equal(qk_socks5_feed(s, bad, sizeof bad, &used, out, &out_len), QK_SOCKS5_FAIL);
    assert_int_equal(out[out_len - 1], 1);
    /* BIND is not supported: reply 7. Unknown ATYP: reply 8. */
    static const uint8_t bind[] = {5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80};
    qk_socks5_del(s);
    assert_int_equal(qk_socks5_new(NULL, NULL, &s), 0);
    assert_int_equal(qk_socks5_feed(s, bind, sizeof bind, &used, out, &out_len), QK_SOCKS5_FAIL);
    assert_int_equal(out_len, 2 + QK_SOCKS5_REPLY_BYTES);
    assert_int_equal(out[3], QK_SOCKS5_CMD_UNSUPPORTED);
    static const uint8_t atyp[] = {5, 1, 0, 5, 1, 0, 9, 1};
    qk_socks5_del(s);
    assert_int_equal(qk_socks5_new(NULL, NULL, &s), 0);
    assert_int_equal(qk_socks5_feed(s, atyp, sizeof atyp, &used, out, &out_len), QK_SOCKS5_FAIL);
    assert_int_equal(out[3], QK_SOCKS5_ATYP_UNSUPPORTED);
    /* Not SOCKS5 at all. */
    static const uint8_t v4[] = {4, 1, 0, 80};
    qk_socks5_del(s);
    assert_int_equal(qk_socks5_new(NULL, NULL, &s), 0);
    assert_int_equal(qk_socks5_feed(s, v4, sizeof v4, &used, out, &out_len), QK_SOCKS5_FAIL);
    qk_socks5_del(s);
}

static qk_addr a(const char *s)
{
    qk_addr x;
    assert_int_equal(qk_addr_parse(s, &x), 0);
    return x;
}

static void test_allow_list(void **state)
{
    (void)state;
    qk_tunnel_allow r[3];
    assert_int_equal(qk_tunnel_allow_parse("127.0.0.0/8:8000-8080", &r[0]), 0);
    assert_int_equal(qk_tunnel_allow_parse("[::1]/128:22", &r[1]), 0);
    assert_int_equal(qk_tunnel_allow_parse("192.0.2.7", &r[2]), 0);
    assert_int_equal(qk_tunnel_allow_parse("127.0.0.0/33", &r[0] + 0) < 0, 1);
    assert_int_equal(qk_tunnel_allow_parse("1.2.3.4:9-8", &r[0] + 0) < 0, 1);
    assert_int_equal(qk_tunnel_allow_parse("nonsense/8", &r[0] + 0) < 0, 1);
    assert_int_equal(qk_tunnel_allow_parse("127.0.0.0/8:8000-8080", &r[0]), 0);
    qk_addr d = a("127.1.2.3:8080");
    assert_true(qk_tunnel_allowed(r, 3, &d));
    d = a("127.1.2.3:8081");
    assert_false(qk_tunnel_allowed(r, 3, &d));
    d = a("[::1]:22");
    assert_true(qk_tunnel_allowed(r, 3, &d));
    d = a("[::1]:23");
    assert_false(qk_tunnel_allowed(r, 3, &d));
    d = a("192.0.2.7:1");
    assert_true(qk_tunnel_allowed(r, 3, &d));
    d = a("8.8.8.8:53"); /* public, but rules exist: not listed */
    assert_false(qk_tunnel_allowed(r, 3, &d));
    /* No rules: public yes; loopback, private, link-local, CGNAT, ULA, mapped no. */
    assert_true(qk_tunnel_allowed(NULL, 0, &d));
    static const char *const deny[] = {
        "127.0.0.1:80",   "10.0.0.1:80",   "172.16.0.1:80",       "172.31.9.9:80", "192.168.1.1:80",
        "169.254.1.1:80", "100.64.0.1:80", "0.0.0.0:80",          "224.0.0.1:80",  "[::1]:80",
        "[fd00::1]:80",   "[fe80::1]:80",  "[::ffff:10.0.0.1]:80"};
    for (size_t i = 0; i < sizeof deny / sizeof deny[0]; i++) {
        d = a(deny[i]);
        assert_false(qk_tunnel_allowed(NULL, 0, &d));
    }
    d = a("172.32.0.1:80");
    assert_true(qk_tunnel_allowed(NULL, 0, &d));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_noauth_connect_name_one_byte_at_a_time),
        cmocka_unit_test(test_auth_and_v6_in_one_read),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_allow_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
