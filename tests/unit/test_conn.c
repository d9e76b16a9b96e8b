/* End-to-end connection tests on an in-memory path (tests/support/qk_pair). */
#include "qk_pair.h"
#include "qk_test.h"

#include <stdlib.h>
#include <string.h>

static bool both_connected(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->cconn && qk_conn_established(p->cconn) && p->sconn &&
           qk_conn_established(p->sconn);
}

static void test_handshake(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    assert_int_equal(qk_pair_start(&p), 0);
    qk_time t0 = p.now;
    assert_true(qk_pair_run_until(&p, both_connected, NULL, t0 + 2 * QK_NS_PER_S));
    assert_string_equal(qk_conn_alpn(p.cconn), "test");
    assert_string_equal(qk_conn_alpn(p.sconn), "test");
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
