/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/prefaddr.c src/transport/conn/conn_path.c */
/* preferred_address through the simulator (RFC 9000 §9.6): the server node
 * also listens at a second host b2 (its preferred address, on a path with a
 * longer delay) and advertises it. The client probes it once the handshake
 * is confirmed, moves a 10 MiB download there (byte-exact), on the preferred
 * address's connection ID, and the server answers from b2 to the client's
 * unchanged address without validating it again; the RTT is the new path's
 * (§9.4). A preferred address that nothing answers at is abandoned and the
 * transfer completes on the original path; a client with
 * disable_preferred_address, or of the other address family, stays. */
#include "qk_test.h"
#include "quic_env.h"

#include "sim/sim_int.h"
#include "transport/conn/conn.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#define MS       QK_NS_PER_MS
#define B2_IP    0x0a000005u
#define PREF_PRT 4444

typedef struct pref_watch {
    qk_addr pref;                          /* the server's preferred address */
    bool advertise_v6;                     /* advertise an IPv6 one only (the sim is IPv4) */
    bool client_off;                       /* the client sets disable_preferred_address */
    uint64_t srv_from_pref, srv_from_orig; /* server datagrams by source address */
    uint64_t cli_to_pref;                  /* client datagrams toward the preferred address */
    uint64_t srv_to_other; /* server datagrams to anything but the client's address */
    qk_addr cli_addr;
} pref_watch;

static void pw_tune(void *ctx, qk_config *cfg, bool server)
{
    pref_watch *w = ctx;
    if (server && !w->advertise_v6) cfg->preferred_addr_v4 = w->pref;
    if (server && w->advertise_v6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&cfg->preferred_addr_v6.ss;
        memset(&cfg->preferred_addr_v6, 0, sizeof cfg->preferred_addr_v6);
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(PREF_PRT);
        s6->sin6_addr.s6_addr[0] = 0x20;
        s6->sin6_addr.s6_addr[15] = 5;
        cfg->preferred_addr_v6.len = sizeof *s6;
    }
    if (!server) cfg->disable_preferred_address = w->client_off;
}

static void pw_send(void *ctx, qk_simq *q, bool server, const qk_datagram *d, qk_time now)
{
    (void)q;
    (void)now;
    pref_watch *w = ctx;
    if (!server) {
        if (qk_addr_equal(&d->peer, &w->pref)) w->cli_to_pref++;
        return;
    }
    if (qk_addr_equal(&d->local, &w->pref))
        w->srv_from_pref++;
    else
        w->srv_from_orig++;
    if (!qk_addr_equal(&d->peer, &w->cli_addr)) w->srv_to_other++;
}

/* Host b2 for the server's second address, with its own links to a. */
static int add_server_addr(quic_env *e, qk_time delay_ns)
{
    int h = qk_sim_host_add(e->sim, "b2", B2_IP);
    qk_sim_link_cfg l = quic_env_link();
    l.delay_ns = delay_ns;
    int f = qk_sim_link_add(e->sim, "a-b2", e->a, h, &l);
    int r = qk_sim_link_add(e->sim, "b2-a", h, e->a, &l);
    if (h < 0 || f < 0 || r < 0) return -1;
    if (qk_sim_route_add(e->sim, e->a, h, f) || qk_sim_route_add(e->sim, h, -1, r)) return -1;
    return h;
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

typedef struct run {
    quic_env e;
    qk_simq *q;
    pref_watch w;
    int b2;
    bool keep_open; /* the connection outlives the transfer */
} run;

/* A 10 MiB download with the server advertising b2:4444; alias = whether
 * the server node actually listens there. */
static void start(run *r, uint64_t seed, bool alias, uint64_t size)
{
    qk_sim_link_cfg l = quic_env_link();
    assert_int_equal(quic_env_init(&r->e, seed, &l, &l), 0);
    r->b2 = add_server_addr(&r->e, 25 * MS); /* 50 ms RTT vs the original 20 ms */
    assert_true(r->b2 >= 0);
    r->w.pref = qk_sim_host_addr(r->e.sim, r->b2, PREF_PRT);
    r->w.cli_addr = qk_sim_host_addr(r->e.sim, r->e.a, 4433);
    qk_simq_cfg c = {.size_bytes = size,
                     .window_bytes = 4u << 20,
                     .tune = pw_tune,
                     .on_send = pw_send,
                     .keep_open = r->keep_open,
                     .ctx = &r->w};
    r->q = quic_env_flow(&r->e, 4433, &c);
    assert_non_null(r->q);
    if (alias)
        assert_int_equal(qk_sim_node_alias(r->e.sim, qk_simq_node(r->q, true), r->b2, PREF_PRT), 0);
}

static void test_moves_to_preferred(void **st)
{
    (void)st;
    run r = {0};
    const uint64_t size = 10u << 20;
    start(&r, 2001, true, size);
    qk_sim_run(r.e.sim, 200 * MS);
    qk_conn *cli = qk_simq_client_conn(r.q), *srv = qk_simq_server_conn(r.q);
    assert_non_null(cli);
    assert_non_null(srv);
    assert_true(quic_env_run_done(&r.e, r.q, 30 * QK_NS_PER_S));
    const qk_simq_result *res = qk_simq_result_get(r.q);
    fprintf(stderr,
            "preferred: done at %.3f s; client migrations %llu (state %u), server migrations "
            "%llu; server datagrams from b2 %llu, from b %llu; client srtt %.1f ms\n",
            res->completion_ns / 1e9, (unsigned long long)res->client_stats.migrations,
            res->client_stats.preferred_address, (unsigned long long)res->server_stats.migrations,
            (unsigned long long)r.w.srv_from_pref, (unsigned long long)r.w.srv_from_orig,
            res->client_stats.smoothed_rtt_ns / 1e6);
    check_done(res, size);
    assert_int_equal(res->client_stats.preferred_address, QK_PREFADDR_MOVED);
    assert_int_equal(res->client_stats.migrations, 1);
    assert_int_equal(res->client_stats.path_validations, 1);
    assert_int_equal(res->server_stats.migrations, 1);
    /* most of the download left from the preferred address, to the client's
     * unchanged address, and the server had no reason to validate it again */
    assert_true(r.w.srv_from_pref > 5 * r.w.srv_from_orig);
    assert_int_equal(r.w.srv_to_other, 0);
    assert_int_equal(res->server_stats.path_challenges_sent, 0);
    /* §9.4: the new path's RTT (50 ms) replaced the old one's (20 ms) */
    assert_true(res->client_stats.smoothed_rtt_ns > 40 * MS);
    assert_true(res->server_stats.smoothed_rtt_ns > 40 * MS);
    cli = qk_simq_client_conn(r.q);
    srv = qk_simq_server_conn(r.q);
    if (cli && srv) {
        qk_addr local, peer;
        qk_conn_path_addrs(cli, NULL, &peer);
        assert_true(qk_addr_equal(&peer, &r.w.pref)); /* the client's peer is b2 now */
        qk_conn_path_addrs(srv, &local, &peer);
        assert_true(qk_addr_equal(&local, &r.w.pref)); /* the server answers from b2 */
        assert_true(qk_addr_equal(&peer, &r.w.cli_addr));
        /* §5.1.1, §9.5: on the preferred address's CID (seq 1); the
         * handshake's (seq 0) was retired */
        assert_int_equal(qk_conn_dcid(cli)->seq, 1);
        for (size_t i = 0; i < QK_CONN_MAX_LOCAL_CIDS; i++)
            assert_false(srv->cids.lcid[i].active && srv->cids.lcid[i].seq == 0);
    }
    quic_env_free(&r.e);
}

/* §9.6.1: nothing answers at the preferred address: the probe is given up
 * and the connection stays where it is. */
static void test_unreachable_stays(void **st)
{
    (void)st;
    run r = {.keep_open = true};
    const uint64_t size = 4u << 20;
    start(&r, 2002, false, size);
    assert_true(quic_env_run_done(&r.e, r.q, 30 * QK_NS_PER_S));
    /* §8.2.4: the probe is abandoned after 3 PTOs of a new path (~3 s) */
    qk_sim_run(r.e.sim, qk_sim_now(r.e.sim) + 5 * QK_NS_PER_S);
    const qk_simq_result *res = qk_simq_result_get(r.q);
    fprintf(stderr, "unreachable: done at %.3f s; client probes %llu, state %u\n",
            res->completion_ns / 1e9, (unsigned long long)r.w.cli_to_pref,
            res->client_stats.preferred_address);
    check_done(res, size);
    assert_true(r.w.cli_to_pref >= 1 && r.w.cli_to_pref <= 8); /* it tried, backing off */
    assert_int_equal(res->client_stats.preferred_address, QK_PREFADDR_FAILED);
    assert_int_equal(res->client_stats.migrations, 0);
    assert_int_equal(res->server_stats.migrations, 0);
    assert_int_equal(r.w.srv_from_pref, 0);
    qk_conn *cli = qk_simq_client_conn(r.q);
    if (cli) {
        qk_addr peer, orig = qk_sim_host_addr(r.e.sim, r.e.b, 4433);
        qk_conn_path_addrs(cli, NULL, &peer);
        assert_true(qk_addr_equal(&peer, &orig));
    }
    quic_env_free(&r.e);
}

/* The client declines (disable_preferred_address), or the server offers
 * only the other family: nothing goes to b2. */
static void stays(bool client_off, bool v6)
{
    run r = {.w = {.client_off = client_off, .advertise_v6 = v6}};
    const uint64_t size = 1u << 20;
    start(&r, 2003, true, size);
    assert_true(quic_env_run_done(&r.e, r.q, 10 * QK_NS_PER_S));
    const qk_simq_result *res = qk_simq_result_get(r.q);
    check_done(res, size);
    assert_int_equal(r.w.cli_to_pref, 0);
    assert_int_equal(r.w.srv_from_pref, 0);
    assert_int_equal(res->client_stats.preferred_address, QK_PREFADDR_NONE);
    assert_int_equal(res->client_stats.migrations, 0);
    quic_env_free(&r.e);
}

static void test_client_declines(void **st)
{
    (void)st;
    stays(true, false);
}

static void test_other_family(void **st)
{
    (void)st;
    stays(false, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moves_to_preferred),
        cmocka_unit_test(test_unreachable_stays),
        cmocka_unit_test(test_client_declines),
        cmocka_unit_test(test_other_family),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
