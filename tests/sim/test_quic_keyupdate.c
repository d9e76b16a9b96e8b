/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/keyupdate.c */
/* 1-RTT key updates through the simulator (RFC 9001 §6): both sides update
 * every 1,000 packets during a 10 MiB transfer over a reordering path and lose
 * nothing; old-phase packets that arrive late are opened with the previous
 * keys; a peer that updates twice without waiting for an acknowledgement is
 * closed with KEY_UPDATE_ERROR (RFC 9001 §6.2); the on-demand API refuses a
 * second update until the first is acknowledged (§6.1). */
#include "qk_test.h"
#include "quic_env.h"

#include "transport/conn/conn.h"

#define MS QK_NS_PER_MS

typedef struct ku_ctx {
    uint64_t every_pkts;      /* the data sender's interval */
    uint64_t recv_every_pkts; /* the receiver's (it sends mostly ACKs: fewer packets) */
    bool upload;
    uint64_t ack_threshold; /* client's ACK threshold (0 = default) */
} ku_ctx;

static void ku_tune(void *ctx, qk_config *cfg, bool server)
{
    ku_ctx *k = ctx;
    bool sender = k->upload ? !server : server;
    cfg->key_update_after_pkts = sender || !k->recv_every_pkts ? k->every_pkts : k->recv_every_pkts;
    if (!server && k->ack_threshold) {
        cfg->ack_eliciting_threshold = k->ack_threshold;
    }
}

typedef struct ku_seen {
    uint64_t cli_updates, srv_updates, cli_init, srv_init, prev_pkts, failures;
} ku_seen;

static void observe(qk_simq *q, ku_seen *s)
{
    qk_conn *c = qk_simq_client_conn(q), *v = qk_simq_server_conn(q);
    if (c) {
        if (c->ku.updates > s->cli_updates) s->cli_updates = c->ku.updates;
        if (c->ku.initiated > s->cli_init) s->cli_init = c->ku.initiated;
    }
    if (v) {
        if (v->ku.updates > s->srv_updates) s->srv_updates = v->ku.updates;
        if (v->ku.initiated > s->srv_init) s->srv_init = v->ku.initiated;
    }
    uint64_t prev = (c ? c->ku.prev_key_pkts : 0) + (v ? v->ku.prev_key_pkts : 0);
    uint64_t fail = (c ? c->ku.rx_failures : 0) + (v ? v->ku.rx_failures : 0);
    if (fail > s->failures) s->failures = fail;
    if (prev > s->prev_pkts) s->prev_pkts = prev;
}

static void run_updates(bool upload)
{
    /* 20 Mbit/s: 1,000 packets take ~0.6 s, more than the 3 PTO an endpoint
     * waits after an update was acknowledged (RFC 9001 §6.5) */
    qk_sim_link_cfg l = quic_env_link();
    l.rate_bps = 20000000;
    l.limit_bytes = 50000;
    l.reorder_p = 0.01; /* some packets overtake a phase change */
    l.reorder_delay_ns = 3 * MS;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 700 + upload, &l, &l), 0);
    ku_ctx k = {.every_pkts = 1000, .recv_every_pkts = 200, .upload = upload};
    qk_simq_cfg c = {.upload = upload,
                     .size_bytes = 10u << 20,
                     .window_bytes = 4u << 20,
                     .tune = ku_tune,
                     .ctx = &k};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    ku_seen s = {0};
    while (qk_sim_now(e.sim) < 60 * QK_NS_PER_S && !qk_simq_result_get(q)->done) {
        qk_sim_run(e.sim, qk_sim_now(e.sim) + 10 * MS);
        observe(q, &s);
    }
    const qk_simq_result *r = qk_simq_result_get(q);
    fprintf(stderr,
            "%s: done=%d t=%.3fs updates client=%llu (initiated %llu) server=%llu (initiated "
            "%llu), previous-key packets %llu, failed decryptions %llu\n",
            upload ? "upload" : "download", r->done, r->completion_ns / 1e9,
            (unsigned long long)s.cli_updates, (unsigned long long)s.cli_init,
            (unsigned long long)s.srv_updates, (unsigned long long)s.srv_init,
            (unsigned long long)s.prev_pkts, (unsigned long long)s.failures);
    assert_true(r->done);
    assert_false(r->mismatch);
    assert_int_equal(r->read_bytes, 10u << 20);
    assert_int_equal(r->hash_read, r->hash_written);
    /* the data sender sends > 8,700 packets: at least one update per 1,000 of them */
    const qk_conn_stats *snd = upload ? &r->client_stats : &r->server_stats;
    uint64_t snd_init = upload ? s.cli_init : s.srv_init;
    assert_true(snd_init + 1 >= snd->pkts_sent / 1000);
    /* the acknowledging side initiated some too (it sends ~1 packet per 2 received) */
    uint64_t rcv_init = upload ? s.srv_init : s.cli_init;
    assert_true(rcv_init >= 1);
    /* both sides went through the same phases (simultaneous initiations count once) */
    assert_true(s.cli_updates + 1 >= s.srv_updates && s.srv_updates + 1 >= s.cli_updates);
    assert_true(s.cli_updates >= s.cli_init && s.cli_updates >= s.srv_init);
    /* late packets of the old phase were opened with the previous keys, none failed */
    assert_true(s.prev_pkts > 0);
    assert_int_equal(s.failures, 0);
    /* nobody closed with an error before the transfer was complete */
    assert_true(!r->client_closed || r->client_close.reason_err == 0);
    assert_true(!r->server_closed || r->server_close.reason_err == 0);
    quic_env_free(&e);
}

static void test_updates_download(void **st)
{
    (void)st;
    run_updates(false);
}

static void test_updates_upload(void **st)
{
    (void)st;
    run_updates(true);
}

/* Start a long download and run until it is in full flight. */
static qk_simq *start_long(quic_env *e, ku_ctx *k)
{
    qk_sim_link_cfg l = quic_env_link();
    assert_int_equal(quic_env_init(e, 710, &l, &l), 0);
    /* flow-control limited (128 KiB per RTT, half the link): no queue, no loss */
    qk_simq_cfg c = {
        .size_bytes = 50u << 20, .window_bytes = 128u << 10, .tune = ku_tune, .ctx = k};
    qk_simq *q = quic_env_flow(e, 4433, &c);
    assert_non_null(q);
    qk_sim_run(e->sim, 300 * MS);
    assert_non_null(qk_simq_client_conn(q));
    assert_non_null(qk_simq_server_conn(q));
    return q;
}

/* The public API: one update at a time, and the transfer goes on. */
static void test_api_rules(void **st)
{
    (void)st;
    quic_env e;
    ku_ctx k = {0};
    qk_simq *q = start_long(&e, &k);
    qk_conn *srv = qk_simq_server_conn(q), *cli = qk_simq_client_conn(q);
    qk_time now = qk_sim_now(e.sim);
    bool phase = srv->key_phase;
    assert_int_equal(qk_conn_key_update(srv, now), 0);
    assert_true(srv->key_phase != phase);
    /* RFC 9001 §6.1: not again before a packet of this phase was acknowledged */
    assert_int_equal(qk_conn_key_update(srv, now), QK_ERR_STATE);
    qk_simq_kick(q);
    qk_sim_run(e.sim, now + 100 * MS);
    /* the client followed, and acknowledged: a new update is allowed */
    assert_true(cli->key_phase == srv->key_phase);
    assert_int_equal(cli->ku.updates, 1);
    assert_int_equal(qk_conn_key_update(cli, qk_sim_now(e.sim)), 0);
    qk_simq_kick(q);
    qk_sim_run(e.sim, qk_sim_now(e.sim) + 100 * MS);
    assert_true(cli->key_phase == srv->key_phase);
    assert_int_equal(srv->ku.updates, 2);
    assert_int_equal(srv->stats.key_updates, 2);
    assert_int_equal(srv->stats.key_updates_initiated, 1);
    assert_int_equal(cli->stats.key_updates_initiated, 1);
    assert_true(qk_simq_result_get(q)->read_bytes > 0);
    assert_false(qk_simq_result_get(q)->client_closed);
    quic_env_free(&e);
}

/* RFC 9001 §6.2: the server updates, sends one packet, and updates again
 * before the client could acknowledge anything of the new phase. */
typedef struct fast_ctx {
    ku_ctx k;
    int armed; /* 1: the next server 1-RTT datagram is the first of phase k+1 */
    qk_time at;
} fast_ctx;

static void fast_tune(void *ctx, qk_config *cfg, bool server)
{
    ku_tune(&((fast_ctx *)ctx)->k, cfg, server);
    cfg->autotune = false; /* stay flow-control limited: no queue, no loss, no gap */
}

static void fast_send(void *ctx, qk_simq *q, bool server, const qk_datagram *d, qk_time now)
{
    fast_ctx *f = ctx;
    /* A datagram of stream data, not an ACK alone: more of the same flight
     * follows at once, so the client sees the next phase before it has sent
     * an ACK (when the server's credit ran out just then, the next packet
     * came after the client's ACK and the update was legitimate). */
    if (!server || f->armed != 1 || (d->data[0] & 0x80) || d->len < 1000) return;
    /* one packet of the new phase is on its way: update again at once */
    assert_int_equal(qk_conn_key_update_now(qk_simq_server_conn(q), true, now), 0);
    f->armed = 2;
    f->at = now;
}

static void test_too_fast(void **st)
{
    (void)st;
    quic_env e;
    qk_sim_link_cfg l = quic_env_link();
    assert_int_equal(quic_env_init(&e, 710, &l, &l), 0);
    fast_ctx f = {.k = {.ack_threshold = 20}}; /* the client acknowledges rarely */
    /* flow-control limited (128 KiB per RTT, half the link): no queue, no loss */
    qk_simq_cfg c = {.size_bytes = 50u << 20,
                     .window_bytes = 128u << 10,
                     .tune = fast_tune,
                     .on_send = fast_send,
                     .ctx = &f};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    qk_sim_run(e.sim, 300 * MS);
    qk_conn *srv = qk_simq_server_conn(q);
    assert_non_null(srv);
    assert_int_equal(qk_conn_key_update_now(srv, true, qk_sim_now(e.sim)), 0);
    f.armed = 1;
    qk_simq_kick(q);
    qk_sim_run(e.sim, qk_sim_now(e.sim) + 2 * QK_NS_PER_S);
    assert_int_equal(f.armed, 2);
    const qk_simq_result *r = qk_simq_result_get(q);
    assert_true(r->client_closed);
    assert_int_equal(r->client_close.reason_err, QK_ERR_KEY_UPDATE);
    assert_int_equal(r->client_close.error_code, 0x0e); /* KEY_UPDATE_ERROR */
    assert_true(r->server_closed);
    assert_true(r->server_close.remote);
    assert_int_equal(r->server_close.error_code, 0x0e);
    quic_env_free(&e);
}

/* AEAD limits (RFC 9001 §6.6) and the update trigger, as numbers. */
static void test_limits(void **st)
{
    (void)st;
    assert_int_equal(qk_ku_confidentiality_limit(QK_SUITE_AES_128_GCM), 1ull << 23);
    assert_int_equal(qk_ku_confidentiality_limit(QK_SUITE_AES_256_GCM), 1ull << 23);
    assert_int_equal(qk_ku_confidentiality_limit(QK_SUITE_CHACHA20_POLY1305), 1ull << 62);
    assert_int_equal(qk_ku_integrity_limit(QK_SUITE_AES_128_GCM), 1ull << 52);
    assert_int_equal(qk_ku_integrity_limit(QK_SUITE_CHACHA20_POLY1305), 1ull << 36);
    qk_keyupdate ku;
    qk_ku_init(&ku);
    ku.rx_secret_len = ku.tx_secret_len = 32;
    ku.tx_pkts = (1ull << 23) / 4 * 3 - 1;
    assert_false(qk_ku_want_update(&ku, QK_SUITE_AES_128_GCM, 0, 100 * MS, 0));
    ku.tx_pkts++;
    assert_true(qk_ku_want_update(&ku, QK_SUITE_AES_128_GCM, 0, 100 * MS, 0));
    assert_false(qk_ku_want_update(&ku, QK_SUITE_CHACHA20_POLY1305, 0, 100 * MS, 0));
    ku.tx_since_own = 1000;
    assert_true(qk_ku_want_update(&ku, QK_SUITE_CHACHA20_POLY1305, 1000, 100 * MS, 0));
    /* an update in progress blocks the next; 3 PTO after its confirmation it is allowed */
    ku.updates = 1;
    ku.awaiting_ack = true;
    assert_false(qk_ku_want_update(&ku, QK_SUITE_AES_128_GCM, 1000, 100 * MS, 0));
    qk_ku_on_acked(&ku, ku.tx_first_pn, 1000 * MS);
    assert_false(qk_ku_want_update(&ku, QK_SUITE_AES_128_GCM, 1000, 100 * MS, 1299 * MS));
    assert_true(qk_ku_want_update(&ku, QK_SUITE_AES_128_GCM, 1000, 100 * MS, 1300 * MS));
    qk_ku_free(&ku);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits),         cmocka_unit_test(test_api_rules),
        cmocka_unit_test(test_too_fast),       cmocka_unit_test(test_updates_download),
        cmocka_unit_test(test_updates_upload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
