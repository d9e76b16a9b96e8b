/* SPDX-License-Identifier: MIT */
/* Fleet-wide keys (docs/deploy.md, `quack serve --fleet-keys`):
 * qk_fleet_static_key derives the same static key from the same secret and
 * another from another secret, refuses short secrets; two servers whose
 * ticket keys come from one secret (qk_ticket_keys_new_from_secret) resume
 * each other's sessions, and a server with another secret does not. */
#include "qk_pair.h"
#include "qk_test.h"

#include <string.h>

static void test_static_key(void **state)
{
    (void)state;
    uint8_t s1[32], s2[32], k1[32], k1b[32], k2[32];
    memset(s1, 0x11, sizeof s1);
    memset(s2, 0x11, sizeof s2);
    s2[31] ^= 1;
    assert_int_equal(qk_fleet_static_key(s1, sizeof s1, k1), 0);
    assert_int_equal(qk_fleet_static_key(s1, sizeof s1, k1b), 0);
    assert_int_equal(qk_fleet_static_key(s2, sizeof s2, k2), 0);
    assert_memory_equal(k1, k1b, sizeof k1);
    assert_memory_not_equal(k1, k2, sizeof k1);
    assert_memory_not_equal(k1, s1, sizeof k1); /* derived, not the secret itself */
    assert_int_equal(qk_fleet_static_key(s1, 31, k1), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_fleet_static_key(NULL, 32, k1), QK_ERR_INVALID_ARG);
    int err = 0;
    assert_null(qk_ticket_keys_new_from_secret(s1, 16, 0, 0, &err));
    assert_int_equal(err, QK_ERR_INVALID_ARG);
}

static bool got_ticket(qk_pair *p, void *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < p->ncev; i++)
        if (p->cev[i].type == QK_EV_SESSION_TICKET) return true;
    return false;
}

static bool server_gone(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->sconn == NULL;
}

/* Server A (keys a) issues a ticket; a new server endpoint with keys b (a
 * "machine" that never saw the session) is then asked to resume it.
 * Returns whether the client's handshake was a resumption. */
static bool resumed_across(qk_ticket_keys *a, qk_ticket_keys *b)
{
    qk_pair p;
    uint8_t sess[8192];
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.session_tickets = true;
    p.scfg.ticket_keys = a;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 2 * QK_NS_PER_S));
    assert_true(qk_pair_run_until(&p, got_ticket, NULL, p.now + 2 * QK_NS_PER_S));
    long n = qk_conn_session_get(p.cconn, sess, sizeof sess);
    assert_true(n > 0);
    qk_conn_close(p.cconn, 0, "done");
    qk_pair_flush(&p);
    assert_true(qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + 5 * QK_NS_PER_S));
    assert_true(qk_pair_run_until(&p, server_gone, NULL, p.now + 5 * QK_NS_PER_S));
    p.ncev = p.nsev = 0;
    qk_endpoint_del(p.server); /* server B */
    p.scfg.ticket_keys = b;
    p.server = qk_endpoint_new(&p.scfg);
    assert_non_null(p.server);
    qk_connect_opts o = {.session = sess, .session_len = (size_t)n};
    assert_int_equal(qk_connect_ex(p.client, &p.caddr, &p.saddr, "quack.test", &o, p.now, &p.cconn),
                     0);
    qk_pair_flush(&p);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 2 * QK_NS_PER_S));
    qk_conn_stats cs;
    qk_conn_stats_get(p.cconn, &cs);
    qk_pair_free(&p);
    return cs.resumed == 1;
}

static void test_tickets_across_servers(void **state)
{
    (void)state;
    uint8_t secret[32], other[32];
    memset(secret, 0x5a, sizeof secret);
    memset(other, 0xa5, sizeof other);
    int err = 0;
    qk_ticket_keys *a = qk_ticket_keys_new_from_secret(secret, sizeof secret, 0, 0, &err);
    qk_ticket_keys *b = qk_ticket_keys_new_from_secret(secret, sizeof secret, 0, 0, &err);
    qk_ticket_keys *c = qk_ticket_keys_new_from_secret(other, sizeof other, 0, 0, &err);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_true(resumed_across(a, b));  /* one secret, two servers: resumed */
    assert_false(resumed_across(a, c)); /* another secret: a full handshake */
    qk_ticket_keys_del(a);
    qk_ticket_keys_del(b);
    qk_ticket_keys_del(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_key),
        cmocka_unit_test(test_tickets_across_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
