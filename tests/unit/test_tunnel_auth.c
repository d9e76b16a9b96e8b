/* SPDX-License-Identifier: MIT */
/* The TLS exporter (qk_conn_export_keying_material, RFC 8446 §7.5) and the
 * tunnel's authentication MAC over it: both ends of a connection agree, a
 * second connection gets different bytes (so a MAC seen on one connection
 * is useless on another), and nothing is exported before the handshake. */
#include "qk_pair.h"
#include "qk_test.h"

#include <quack/tunnel.h>
#include <string.h>

static void up(qk_pair *p, uint64_t seed)
{
    assert_int_equal(qk_pair_init(p, 5 * QK_NS_PER_MS), 0);
    p->rng_c = 100 + seed;
    p->rng_s = 200 + seed;
    assert_int_equal(qk_pair_start(p), 0);
    uint8_t out[32];
    assert_int_equal(qk_conn_export_keying_material(p->cconn, "EXPORTER-x", NULL, 0, out, 32),
                     QK_ERR_STATE);
    assert_true(qk_pair_run_until(p, qk_pair_confirmed, NULL, p->now + 2 * QK_NS_PER_S));
}

static void test_exporter_agrees_and_differs(void **state)
{
    (void)state;
    qk_pair a, b;
    up(&a, 1);
    up(&b, 2);
    uint8_t c1[32], s1[32], c2[32], ctx1[32];
    assert_int_equal(qk_conn_export_keying_material(a.cconn, "EXPORTER-x", NULL, 0, c1, 32), 0);
    assert_int_equal(qk_conn_export_keying_material(a.sconn, "EXPORTER-x", NULL, 0, s1, 32), 0);
    assert_memory_equal(c1, s1, 32);
    static const uint8_t ctx[3] = {1, 2, 3};
    assert_int_equal(qk_conn_export_keying_material(a.cconn, "EXPORTER-x", ctx, 3, ctx1, 32), 0);
    assert_memory_not_equal(c1, ctx1, 32); /* the context is bound */
    assert_int_equal(qk_conn_export_keying_material(b.cconn, "EXPORTER-x", NULL, 0, c2, 32), 0);
    assert_memory_not_equal(c1, c2, 32);
    assert_int_equal(qk_conn_export_keying_material(a.cconn, NULL, NULL, 0, c2, 32),
                     QK_ERR_INVALID_ARG);

    /* The tunnel MAC: same on both ends, different per connection and per secret. */
    static const uint8_t secret[] = "0123456789abcdef-secret";
    uint8_t m_ac[32], m_as[32], m_b[32], m_wrong[32];
    const qk_tunnel_carrier *q = &qk_tunnel_carrier_quic;
    assert_int_equal(qk_tunnel_auth_mac(q, a.cconn, secret, sizeof secret, m_ac), 0);
    assert_int_equal(qk_tunnel_auth_mac(q, a.sconn, secret, sizeof secret, m_as), 0);
    assert_memory_equal(m_ac, m_as, 32);
    assert_int_equal(qk_tunnel_auth_mac(q, b.sconn, secret, sizeof secret, m_b), 0);
    assert_memory_not_equal(m_ac, m_b, 32); /* replayed on connection b: rejected */
    static const uint8_t other[] = "0123456789abcdef-secreT";
    assert_int_equal(qk_tunnel_auth_mac(q, a.sconn, other, sizeof other, m_wrong), 0);
    assert_memory_not_equal(m_ac, m_wrong, 32);
    assert_int_equal(qk_tunnel_auth_mac(&qk_tunnel_carrier_yamux, NULL, secret, 4, m_wrong),
                     QK_ERR_UNSUPPORTED);
    qk_pair_free(&a);
    qk_pair_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exporter_agrees_and_differs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
