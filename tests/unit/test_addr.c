/* SPDX-License-Identifier: MIT */
/* src/base/addr.c: one notion of "the same address" for every module, and
 * the one IPv4 <-> v4-mapped IPv6 conversion. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <quack/common.h>

static qk_addr v4(const char *ip, uint16_t port)
{
    qk_addr a = {.len = sizeof(struct sockaddr_in)};
    struct sockaddr_in *s = (void *)&a.ss;
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    inet_pton(AF_INET, ip, &s->sin_addr);
    return a;
}

static qk_addr v6(const char *ip, uint16_t port, uint32_t scope)
{
    qk_addr a = {.len = sizeof(struct sockaddr_in6)};
    struct sockaddr_in6 *s = (void *)&a.ss;
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    s->sin6_scope_id = scope;
    inet_pton(AF_INET6, ip, &s->sin6_addr);
    return a;
}

static void test_v4(void **state)
{
    (void)state;
    qk_addr a = v4("10.0.0.1", 443), b = v4("10.0.0.1", 443), c = v4("10.0.0.1", 444);
    qk_addr d = v4("10.0.0.2", 443);
    assert_true(qk_addr_equal(&a, &b));
    assert_false(qk_addr_equal(&a, &c));
    assert_true(qk_addr_same_host(&a, &c)); /* a NAT rebinding: port only */
    assert_false(qk_addr_same_host(&a, &d));
    assert_int_equal(qk_addr_port(&c), 444);
}

static void test_v6_scope(void **state)
{
    (void)state;
    qk_addr a = v6("fe80::1", 443, 2), b = v6("fe80::1", 443, 3), c = v6("fe80::1", 443, 2);
    /* The same link-local address on another interface is another path, for
     * the endpoint and the connection's path logic alike. */
    assert_false(qk_addr_equal(&a, &b));
    assert_false(qk_addr_same_host(&a, &b));
    assert_true(qk_addr_equal(&a, &c));
    qk_addr four = v4("10.0.0.1", 443);
    assert_false(qk_addr_equal(&a, &four));
}

static void test_unspecified(void **state)
{
    (void)state;
    qk_addr z = {0}, z2 = {0}, a = v4("127.0.0.1", 1);
    assert_true(qk_addr_equal(&z, &z2));
    assert_false(qk_addr_equal(&z, &a));
    assert_int_equal(qk_addr_port(&z), 0);
}

static void test_v4_mapped_round_trip(void **state)
{
    (void)state;
    qk_addr a = v4("192.0.2.7", 4433), m, back;
    qk_addr_map_v4(&a, &m);
    qk_addr want = v6("::ffff:192.0.2.7", 4433, 0);
    assert_int_equal(m.ss.ss_family, AF_INET6);
    assert_int_equal(m.len, sizeof(struct sockaddr_in6));
    assert_true(qk_addr_equal(&m, &want));
    assert_int_equal(qk_addr_port(&m), 4433); /* the port survives both ways */
    assert_true(qk_addr_unmap_v4(&m, &back));
    assert_int_equal(back.len, sizeof(struct sockaddr_in));
    assert_true(qk_addr_equal(&back, &a));
    assert_int_equal(qk_addr_port(&back), 4433);
    /* In place, and an IPv4 address unmaps to itself. */
    qk_addr x = a;
    qk_addr_map_v4(&x, &x);
    assert_true(qk_addr_equal(&x, &want));
    assert_true(qk_addr_unmap_v4(&x, &x));
    assert_true(qk_addr_equal(&x, &a));
    assert_true(qk_addr_unmap_v4(&a, &back));
    assert_true(qk_addr_equal(&back, &a));
}

static void test_v6_not_unmapped(void **state)
{
    (void)state;
    qk_addr a = v6("2001:db8::1", 443, 0), out = v4("10.0.0.9", 9), m;
    qk_addr keep = out;
    assert_false(qk_addr_unmap_v4(&a, &out));
    assert_true(qk_addr_equal(&out, &keep)); /* untouched */
    /* ::ffff:0:0/96 only: an IPv4-compatible or NAT64 address is IPv6. */
    qk_addr compat = v6("::192.0.2.1", 443, 0), nat64 = v6("64:ff9b::192.0.2.1", 443, 0);
    assert_false(qk_addr_unmap_v4(&compat, &out));
    assert_false(qk_addr_unmap_v4(&nat64, &out));
    /* Mapping leaves IPv6 (and unspecified) addresses as they are. */
    qk_addr_map_v4(&a, &m);
    assert_true(qk_addr_equal(&m, &a));
    qk_addr z = {0};
    qk_addr_map_v4(&z, &m);
    assert_int_equal(m.len, 0);
    assert_false(qk_addr_unmap_v4(&z, &out));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v4),
        cmocka_unit_test(test_v6_scope),
        cmocka_unit_test(test_unspecified),
        cmocka_unit_test(test_v4_mapped_round_trip),
        cmocka_unit_test(test_v6_not_unmapped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
