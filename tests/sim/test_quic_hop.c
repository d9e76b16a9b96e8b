/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/conn_path.c */
/* Port hopping through the simulator (qk_conn_hop; docs/tunnel.md "Port
 * hopping"): the server's node answers on three ports (aliases); during a
 * download the client hops twice: each hop probes the new port on a fresh
 * connection ID, moves on the PATH_RESPONSE, and the server follows (its
 * local address changes, its peer does not, no new connection); a hop to a
 * port where nothing answers is given up and the download carries on where
 * it was; behind a NAT that gives each destination its own port the
 * server validates the new client address and the hop completes; the API's
 * refusals (same port, server side, before the handshake
 * is confirmed, disable_active_migration). */
#include "qk_test.h"
#include "quic_env.h"

#include "sim/sim_int.h"
#include "transport/conn/conn.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#define MS QK_NS_PER_MS

static uint16_t port_of(const qk_addr *a)
{
    return ntohs(((const struct sockaddr_in *)&a->ss)->sin_port);
}

static bool same_cid(const qk_cid *a, const qk_cid *b)
{
    return a->len == b->len && !memcmp(a->b, b->b, a->len);
}

static void check_done(const qk_simq_result *r, uint64_t size)
{
    assert_true(r->done);
    assert_false(r->mismatch);
    assert_int_equal(r->read_bytes, size);
    assert_int_equal(r->hash_read, r->hash_written);
}

static void test_hops(void **st)
{
    (void)st;
    qk_sim_link_cfg l = quic_env_link();
    quic_env e;
    assert_int_equal(quic_env_init(&e, 2001, &l, &l), 0);
    const uint64_t size = 80u << 20;
    qk_simq_cfg c = {.size_bytes = size, .window_bytes = 4u << 20};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    /* before the handshake is confirmed: not yet (RFC 9000 §9) */
    qk_sim_run(e.sim, 1 * MS);
    qk_conn *cli = qk_simq_client_conn(q);
    assert_non_null(cli);
    assert_int_equal(qk_conn_hop(cli, 4434, qk_sim_now(e.sim)), QK_ERR_STATE);
    int sn = qk_simq_node(q, true);
    assert_int_equal(qk_sim_node_alias(e.sim, sn, e.b, 4434), 0);
    assert_int_equal(qk_sim_node_alias(e.sim, sn, e.b, 4435), 0);
    qk_sim_run(e.sim, 300 * MS);
    qk_conn *srv = qk_simq_server_conn(q);
    assert_non_null(srv);
    assert_int_equal(qk_conn_hop(cli, 4433, qk_sim_now(e.sim)), QK_ERR_INVALID_ARG); /* here */
    assert_int_equal(qk_conn_hop(srv, 4434, qk_sim_now(e.sim)), QK_ERR_STATE);       /* server */
    const uint16_t ports[] = {4434, 4435};
    qk_cid seen[3] = {qk_conn_dcid(cli)->cid};
    for (int h = 0; h < 2; h++) {
        qk_time first_sample = cli->rtt.first_sample_time;
        assert_int_equal(qk_conn_hop(cli, ports[h], qk_sim_now(e.sim)), 0);
        qk_simq_kick(q);
        qk_sim_run(e.sim, qk_sim_now(e.sim) + 500 * MS);
        /* both ends moved: the client's peer port, the server's local port */
        assert_int_equal(port_of(&cli->peer), ports[h]);
        assert_int_equal(port_of(&srv->local), ports[h]);
        assert_int_equal(port_of(&srv->peer), port_of(&cli->local)); /* the same client */
        assert_int_equal(cli->stats.migrations, (uint64_t)h + 1);
        assert_int_equal(srv->stats.migrations, (uint64_t)h + 1);
        /* RFC 9000 §9.5: a connection ID never used toward another port */
        seen[h + 1] = qk_conn_dcid(cli)->cid;
        for (int k = 0; k <= h; k++) assert_false(same_cid(&seen[h + 1], &seen[k]));
        /* §9.4: only a port changed: the RTT estimate was kept, not started over */
        assert_int_equal(cli->rtt.first_sample_time, first_sample);
    }
    /* a port where nothing answers: given up after 3 PTOs of a new path (about
     * 3 s, RFC 9000 §8.2.4), the download stays on 4435 */
    uint64_t rx = qk_simq_result_get(q)->read_bytes;
    assert_int_equal(qk_conn_hop(cli, 4499, qk_sim_now(e.sim)), 0);
    qk_simq_kick(q);
    qk_sim_run(e.sim, qk_sim_now(e.sim) + 4 * QK_NS_PER_S);
    assert_false(cli->paths.alt_active);
    assert_int_equal(port_of(&cli->peer), 4435);
    assert_int_equal(cli->stats.migrations, 2);
    assert_true(qk_simq_result_get(q)->read_bytes > rx); /* it kept flowing meanwhile */
    /* and a hop after that works (a fresh connection ID again) */
    assert_int_equal(qk_conn_hop(cli, 4433, qk_sim_now(e.sim)), 0);
    qk_simq_kick(q);
    assert_true(quic_env_run_done(&e, q, 60 * QK_NS_PER_S));
    const qk_simq_result *r = qk_simq_result_get(q);
    fprintf(stderr,
            "hops: done at %.3f s; client migrations %llu, validations %llu, challenges %llu; "
            "server migrations %llu\n",
            r->completion_ns / 1e9, (unsigned long long)r->client_stats.migrations,
            (unsigned long long)r->client_stats.path_validations,
            (unsigned long long)r->client_stats.path_challenges_sent,
            (unsigned long long)r->server_stats.migrations);
    check_done(r, size);
    assert_int_equal(r->client_stats.migrations, 3);
    assert_int_equal(r->server_stats.migrations, 3);
    quic_env_free(&e);
}

/* Behind a NAT that maps each destination separately the server sees a
 * new client port with the hop: it validates that address (RFC 9000 §9.3)
 * and the hop completes. */
static void test_hop_new_nat_port(void **st)
{
    (void)st;
    qk_sim_link_cfg l = quic_env_link();
    quic_env e;
    assert_int_equal(quic_env_init(&e, 2003, &l, &l), 0);
    const uint64_t size = 20u << 20;
    qk_simq_cfg c = {.size_bytes = size, .window_bytes = 4u << 20};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    assert_int_equal(qk_sim_node_alias(e.sim, qk_simq_node(q, true), e.b, 4434), 0);
    qk_sim_run(e.sim, 300 * MS);
    qk_conn *srv = qk_simq_server_conn(q), *cli = qk_simq_client_conn(q);
    assert_non_null(srv);
    assert_non_null(cli);
    uint64_t validations = srv->stats.path_validations;
    assert_int_equal(qk_sim_node_rebind(e.sim, qk_simq_node(q, false), e.a, 5555), 0);
    assert_int_equal(qk_conn_hop(cli, 4434, qk_sim_now(e.sim)), 0);
    qk_simq_kick(q);
    qk_sim_run(e.sim, qk_sim_now(e.sim) + 500 * MS);
    assert_int_equal(port_of(&srv->local), 4434);
    assert_int_equal(port_of(&srv->peer), 5555);
    assert_true(srv->paths.cur.validated);
    assert_true(srv->stats.path_validations > validations); /* the server checked 5555 */
    assert_true(quic_env_run_done(&e, q, 30 * QK_NS_PER_S));
    check_done(qk_simq_result_get(q), size);
    quic_env_free(&e);
}

static void tune_disable(void *ctx, qk_config *cfg, bool server)
{
    (void)ctx;
    if (server) cfg->disable_active_migration = true;
}

/* RFC 9000 §18.2: a server that disabled active migration gets no hops. */
static void test_hop_refused(void **st)
{
    (void)st;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 2002, NULL, NULL), 0);
    qk_simq_cfg c = {.no_transfer = true, .tune = tune_disable};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    qk_sim_run(e.sim, 200 * MS);
    qk_conn *cli = qk_simq_client_conn(q);
    assert_non_null(cli);
    assert_int_equal(qk_conn_hop(cli, 4434, qk_sim_now(e.sim)), QK_ERR_UNSUPPORTED);
    assert_false(cli->paths.alt_active);
    assert_int_equal(qk_conn_hop(NULL, 4434, qk_sim_now(e.sim)), QK_ERR_INVALID_ARG);
    quic_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hops),
        cmocka_unit_test(test_hop_new_nat_port),
        cmocka_unit_test(test_hop_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
