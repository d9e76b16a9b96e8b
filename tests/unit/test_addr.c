/* src/base/addr.c: one notion of "the same address" for every module. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v4),
        cmocka_unit_test(test_v6_scope),
        cmocka_unit_test(test_unspecified),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
