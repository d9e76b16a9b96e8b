/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/conn_path.c src/transport/path/path.c */
/* Paths through the simulator (RFC 9000 §8.2, §9): a download survives the
 * client's NAT rebinding mid-transfer (the server validates the new address
 * and never sends it more than 3x what it received from it before that), and
 * an active client migration to a new address (probe on a fresh connection
 * ID, switch on PATH_RESPONSE, congestion state reset, §9.4); the server's
 * disable_active_migration is respected. The 3 s blackhole survival is in
 * test_quic_transfer.c. */
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

static uint32_t ip_of(const qk_addr *a)
{
    return ntohl(((const struct sockaddr_in *)&a->ss)->sin_addr.s_addr);
}

/* What crossed toward / from the client's new address. */
typedef struct path_watch {
    uint32_t new_ip;
    uint16_t new_port;
    bool armed;
    uint64_t cli_tx_new;   /* client bytes sent from the new address */
    uint64_t srv_tx_unval; /* server bytes to the new address while it was unvalidated */
    uint64_t srv_tx_new;
    bool violated; /* the server exceeded 3x toward the unvalidated address */
    bool disable_migration;
    qk_time keep_alive_ns; /* the client's qk_config.keep_alive_ns */
} path_watch;

static void pw_send(void *ctx, qk_simq *q, bool server, const qk_datagram *d, qk_time now)
{
    (void)now;
    path_watch *w = ctx;
    if (!w->armed) return;
    if (!server) {
        /* the sim sends from the node's current address: after the rebind, the new one */
        w->cli_tx_new += d->len;
        return;
    }
    if (ip_of(&d->peer) != w->new_ip || port_of(&d->peer) != w->new_port) return;
    w->srv_tx_new += d->len;
    qk_conn *s = qk_simq_server_conn(q);
    if (s && !s->paths.cur.validated) {
        w->srv_tx_unval += d->len;
        if (w->srv_tx_unval > 3 * w->cli_tx_new) w->violated = true; /* RFC 9000 §9.3 */
    }
}

static void pw_tune(void *ctx, qk_config *cfg, bool server)
{
    path_watch *w = ctx;
    if (server) cfg->disable_active_migration = w->disable_migration;
    if (!server) cfg->keep_alive_ns = w->keep_alive_ns;
}

static void check_done(const qk_simq_result *r, uint64_t size)
{
    assert_true(r->done);
    assert_false(r->mismatch);
    assert_int_equal(r->read_bytes, size);
    assert_int_equal(r->hash_read, r->hash_written);
    assert_true(!r->client_closed || r->client_close.reason_err == 0);
    assert_true(!r->server_closed || r->server_close.reason_err == 0);
}

static void nat_rebinding(qk_time rebind_ns, qk_time keep_alive_ns)
{
    qk_sim_link_cfg l = quic_env_link();
    quic_env e;
    assert_int_equal(quic_env_init(&e, 1001, &l, &l), 0);
    path_watch w = {.new_ip = 0x0a000001, .new_port = 5555, .keep_alive_ns = keep_alive_ns};
    const uint64_t size = 10u << 20;
    qk_simq_cfg c = {.size_bytes = size,
                     .window_bytes = 4u << 20,
                     .on_send = pw_send,
                     .tune = pw_tune,
                     .ctx = &w};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    qk_sim_run(e.sim, rebind_ns);
    qk_conn *srv = qk_simq_server_conn(q), *cli = qk_simq_client_conn(q);
    assert_non_null(srv);
    uint64_t cwnd_before = srv->cc.cwnd_bytes;
    qk_time first_sample = srv->rtt.first_sample_time;
    /* the NAT gives the client a new port; the client knows nothing of it */
    assert_int_equal(qk_sim_node_rebind(e.sim, qk_simq_node(q, false), e.a, 5555), 0);
    w.armed = true;
    assert_true(quic_env_run_done(&e, q, 30 * QK_NS_PER_S));
    const qk_simq_result *r = qk_simq_result_get(q);
    fprintf(stderr,
            "rebinding: done at %.3f s; server sent %llu B to the new port (%llu B before "
            "validation, client sent %llu B from it); migrations %llu, validations %llu, "
            "challenges %llu; cwnd %llu -> %llu\n",
            r->completion_ns / 1e9, (unsigned long long)w.srv_tx_new,
            (unsigned long long)w.srv_tx_unval, (unsigned long long)w.cli_tx_new,
            (unsigned long long)r->server_stats.migrations,
            (unsigned long long)r->server_stats.path_validations,
            (unsigned long long)r->server_stats.path_challenges_sent,
            (unsigned long long)cwnd_before, (unsigned long long)r->server_stats.cwnd_bytes);
    check_done(r, size);
    assert_int_equal(r->server_stats.migrations, 1);
    assert_int_equal(r->server_stats.path_validations, 1);
    assert_true(r->server_stats.path_challenges_sent >= 1);
    assert_true(w.srv_tx_new > size / 2); /* the rest of the transfer went there */
    assert_true(w.srv_tx_unval > 0);      /* and it started before validation ... */
    assert_false(w.violated);             /* ... within 3x of what came from there */
    /* a port change keeps the RTT estimate (RFC 9000 §9.4): never reset */
    assert_true(first_sample > 0);
    if (qk_simq_server_conn(q)) assert_int_equal(srv->rtt.first_sample_time, first_sample);
    (void)cli;
    quic_env_free(&e);
}

/* The NAT gives the client a new port mid-download; the server learns it
 * from the client's next packet. */
static void test_nat_rebinding(void **st)
{
    (void)st;
    nat_rebinding(300 * MS, 0);
}

/* Rebound at a moment the client owes nothing (it has acknowledged every
 * packet that reached it): without a keep-alive it never sends again, the
 * server's packets go to the old port, and the transfer stalls until the
 * idle timeout. The client's keep-alive PING (RFC 9000 §10.1.2) shows the
 * server the new port. */
static void test_nat_rebinding_silent_client(void **st)
{
    (void)st;
    nat_rebinding(250 * MS,
                  200 * MS); /* 250 ms without keep-alive: stalled (checked at e391a1a+) */
}

static void test_active_migration(void **st)
{
    (void)st;
    qk_sim_link_cfg l = quic_env_link();
    quic_env e;
    assert_int_equal(quic_env_init(&e, 1002, &l, &l), 0);
    /* a second client address (say Wi-Fi -> cellular) with its own links */
    int a2 = qk_sim_host_add(e.sim, "a2", 0x0a000003);
    qk_sim_link_cfg l2 = quic_env_link();
    l2.delay_ns = 30 * MS; /* a longer path: the RTT estimate must start over */
    int f2 = qk_sim_link_add(e.sim, "forward2", a2, e.b, &l2);
    int r2 = qk_sim_link_add(e.sim, "return2", e.b, a2, &l2);
    assert_true(a2 >= 0 && f2 >= 0 && r2 >= 0);
    assert_int_equal(qk_sim_route_add(e.sim, a2, -1, f2), 0);
    assert_int_equal(qk_sim_route_add(e.sim, e.b, a2, r2), 0);
    path_watch w = {.new_ip = 0x0a000003, .new_port = 4433};
    const uint64_t size = 10u << 20;
    qk_simq_cfg c = {.size_bytes = size, .window_bytes = 4u << 20, .on_send = pw_send, .ctx = &w};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    qk_sim_run(e.sim, 300 * MS);
    qk_conn *srv = qk_simq_server_conn(q), *cli = qk_simq_client_conn(q);
    assert_non_null(srv);
    assert_non_null(cli);
    assert_int_equal(qk_sim_node_alias(e.sim, qk_simq_node(q, false), a2, 4433), 0);
    qk_addr na = qk_sim_host_addr(e.sim, a2, 4433);
    /* the server issued spare connection IDs (NEW_CONNECTION_ID, RFC 9000 §5.1.1) */
    assert_int_equal(qk_conn_migrate(cli, &na, qk_sim_now(e.sim)), 0);
    assert_int_equal(qk_conn_migrate(cli, &na, qk_sim_now(e.sim)),
                     QK_ERR_STATE); /* one at a time */
    qk_cid old_dcid = qk_conn_dcid(cli)->cid;
    w.armed = true;
    qk_simq_kick(q);
    assert_true(quic_env_run_done(&e, q, 30 * QK_NS_PER_S));
    const qk_simq_result *r = qk_simq_result_get(q);
    fprintf(stderr,
            "migration: done at %.3f s; client migrations %llu validations %llu; server "
            "migrations %llu validations %llu; server srtt %.1f ms; %llu B to the new address\n",
            r->completion_ns / 1e9, (unsigned long long)r->client_stats.migrations,
            (unsigned long long)r->client_stats.path_validations,
            (unsigned long long)r->server_stats.migrations,
            (unsigned long long)r->server_stats.path_validations,
            r->server_stats.smoothed_rtt_ns / 1e6, (unsigned long long)w.srv_tx_new);
    check_done(r, size);
    assert_int_equal(r->client_stats.migrations, 1);
    assert_int_equal(r->client_stats.path_validations, 1);
    assert_int_equal(r->server_stats.migrations, 1);
    assert_int_equal(r->server_stats.path_validations, 1);
    assert_true(w.srv_tx_new > size / 2);
    assert_false(w.violated);
    /* the new path's RTT (60 ms) replaced the old one's (20 ms): state was reset */
    assert_true(r->server_stats.smoothed_rtt_ns > 50 * MS);
    assert_true(r->client_stats.smoothed_rtt_ns > 50 * MS);
    /* a fresh connection ID on the new path, the old one retired */
    qk_conn *c2 = qk_simq_client_conn(q);
    if (c2) {
        assert_int_equal(ip_of(&c2->local), 0x0a000003);
        assert_false(qk_conn_dcid(c2)->cid.len == old_dcid.len &&
                     !memcmp(qk_conn_dcid(c2)->cid.b, old_dcid.b, old_dcid.len));
    }
    quic_env_free(&e);
}

/* A client address reachable from the server (host, links, routes). */
static int add_client_addr(quic_env *e, const char *name, uint32_t ip, qk_time delay_ns)
{
    int h = qk_sim_host_add(e->sim, name, ip);
    qk_sim_link_cfg l = quic_env_link();
    l.delay_ns = delay_ns;
    char fw[32], rt[32];
    snprintf(fw, sizeof fw, "%s-fw", name);
    snprintf(rt, sizeof rt, "%s-rt", name);
    int f = qk_sim_link_add(e->sim, fw, h, e->b, &l);
    int r = qk_sim_link_add(e->sim, rt, e->b, h, &l);
    if (h < 0 || f < 0 || r < 0) return -1;
    if (qk_sim_route_add(e->sim, h, -1, f) || qk_sim_route_add(e->sim, e->b, h, r)) return -1;
    return h;
}

/* RFC 9000 §9.5: the server moves to a new connection ID toward a client
 * whose address changed, on each of two migrations, and retires the old. */
static void test_migrate_twice_server_dcid(void **st)
{
    (void)st;
    qk_sim_link_cfg l = quic_env_link();
    quic_env e;
    assert_int_equal(quic_env_init(&e, 1003, &l, &l), 0);
    int a2 = add_client_addr(&e, "a2", 0x0a000003, 15 * MS);
    int a3 = add_client_addr(&e, "a3", 0x0a000004, 12 * MS);
    assert_true(a2 >= 0 && a3 >= 0);
    const uint64_t size = 30u << 20;
    qk_simq_cfg c = {.size_bytes = size, .window_bytes = 4u << 20};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    qk_sim_run(e.sim, 300 * MS);
    qk_conn *srv = qk_simq_server_conn(q), *cli = qk_simq_client_conn(q);
    assert_non_null(srv);
    assert_non_null(cli);
    qk_cid d0 = qk_conn_dcid(srv)->cid;
    int hosts[2] = {a2, a3};
    qk_cid seen[3] = {d0};
    for (int m = 0; m < 2; m++) {
        assert_int_equal(qk_sim_node_alias(e.sim, qk_simq_node(q, false), hosts[m], 4433), 0);
        qk_addr na = qk_sim_host_addr(e.sim, hosts[m], 4433);
        assert_int_equal(qk_conn_migrate(cli, &na, qk_sim_now(e.sim)), 0);
        qk_simq_kick(q);
        qk_sim_run(e.sim, qk_sim_now(e.sim) + 700 * MS);
        assert_int_equal(cli->stats.migrations, (uint64_t)m + 1);
        assert_int_equal(srv->stats.migrations, (uint64_t)m + 1);
        seen[m + 1] = qk_conn_dcid(srv)->cid;
        for (int k = 0; k <= m; k++) /* never a CID used toward an earlier address */
            assert_false(seen[m + 1].len == seen[k].len &&
                         !memcmp(seen[m + 1].b, seen[k].b, seen[k].len));
        assert_int_equal(srv->stats.dcid_changes, (uint64_t)m + 1);
    }
    assert_true(quic_env_run_done(&e, q, 60 * QK_NS_PER_S));
    check_done(qk_simq_result_get(q), size);
    quic_env_free(&e);
}

static void test_disable_active_migration(void **st)
{
    (void)st;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 1003, NULL, NULL), 0);
    path_watch w = {.disable_migration = true};
    qk_simq_cfg c = {.no_transfer = true, .tune = pw_tune, .ctx = &w};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    qk_sim_run(e.sim, 200 * MS);
    qk_conn *cli = qk_simq_client_conn(q);
    assert_non_null(cli);
    assert_true(cli->peer_tp.disable_active_migration);
    qk_addr na = qk_sim_host_addr(e.sim, e.a, 9999);
    /* RFC 9000 §18.2: refused for good, told apart from "not now" */
    assert_int_equal(qk_conn_migrate(cli, &na, qk_sim_now(e.sim)), QK_ERR_UNSUPPORTED);
    assert_false(cli->paths.alt_active); /* no probe started: the connection stays */
    /* a server never migrates actively */
    assert_int_equal(qk_conn_migrate(qk_simq_server_conn(q), &na, qk_sim_now(e.sim)), QK_ERR_STATE);
    quic_env_free(&e);
}

/* The simulator's address changes themselves. */
static void test_sim_rebind_api(void **st)
{
    (void)st;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 1004, NULL, NULL), 0);
    qk_simq_cfg c = {.no_transfer = true};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    int cn = qk_simq_node(q, false), sn = qk_simq_node(q, true);
    /* the server's port on b is taken */
    assert_int_equal(qk_sim_node_rebind(e.sim, cn, e.b, 4433), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_sim_node_rebind(e.sim, cn, e.a, 6000), 0);
    assert_int_equal(port_of(&(qk_addr){qk_sim_node_addr(e.sim, cn).ss, 0}), 6000);
    assert_int_equal(qk_sim_node_alias(e.sim, cn, e.a, 6000), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_sim_node_alias(e.sim, sn, e.b, 7000), 0);
    assert_int_equal(qk_sim_link_set_mtu(e.sim, e.fwd, 1300), 0);
    assert_int_equal(qk_sim_link_cfg_get(e.sim, e.fwd)->mtu_bytes, 1300);
    assert_int_equal(qk_sim_link_set_mtu(e.sim, 99, 1300), QK_ERR_INVALID_ARG);
    /* the handshake still works from the rebound address */
    qk_sim_run(e.sim, 500 * MS);
    assert_true(qk_simq_result_get(q)->connected);
    assert_int_equal(port_of(&qk_simq_server_conn(q)->peer), 6000);
    quic_env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_rebind_api),
        cmocka_unit_test(test_migrate_twice_server_dcid),
        cmocka_unit_test(test_disable_active_migration),
        cmocka_unit_test(test_nat_rebinding),
        cmocka_unit_test(test_nat_rebinding_silent_client),
        cmocka_unit_test(test_active_migration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
