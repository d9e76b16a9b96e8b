/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/prefaddr.c */
/* preferred_address (RFC 9000 §9.6, §18.2) at connection level: what the
 * server advertises (a connection ID of sequence number 1 registered with
 * its reset token; nothing with zero-length CIDs), what the client takes
 * from it (the CID, the address of its own family, TRANSPORT_PARAMETER_ERROR
 * for an empty CID or a server using zero-length CIDs), configuration
 * checks, and a client whose transport parameters carry a preferred address
 * closed by the server with TRANSPORT_PARAMETER_ERROR. The move itself runs
 * end to end in tests/sim/test_quic_prefaddr.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <netinet/in.h>

#include <quack/cert.h>

#include "crypto/tls.h"
#include "qk_pair.h"
#include "qk_stub_env.h"
#include "qk_test.h"
#include "transport/conn/conn.h"

static qk_addr v4(const char *ip, uint16_t port)
{
    qk_addr a = {0};
    struct sockaddr_in *s = (struct sockaddr_in *)&a.ss;
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    assert_int_equal(inet_pton(AF_INET, ip, &s->sin_addr), 1);
    a.len = sizeof *s;
    return a;
}

static qk_addr v6(const char *ip, uint16_t port)
{
    qk_addr a = {0};
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)&a.ss;
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(port);
    assert_int_equal(inet_pton(AF_INET6, ip, &s->sin6_addr), 1);
    a.len = sizeof *s;
    return a;
}

static char *g_cert, *g_key;

static int setup(void **state)
{
    (void)state;
    return qk_cert_generate("quack.test", 0, 36500, &g_cert, &g_key) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_cert);
    free(g_key);
    return 0;
}

static void base_config(qk_config *cfg, bool server)
{
    qk_config_default(cfg);
    cfg->alpn[0] = "test";
    cfg->alpn_count = 1;
    cfg->server = server;
    cfg->insecure = !server;
    cfg->cert_pem = server ? g_cert : NULL;
    cfg->key_pem = server ? g_key : NULL;
    cfg->rng = qk_test_rng;
}

static qk_conn *server_conn(qk_stub_env *s, const qk_config *cfg)
{
    qk_addr ca = v4("10.0.0.1", 40000), sa = v4("10.0.0.2", 443);
    qk_cid dcid = {.len = 8, .b = {1, 2, 3, 4, 5, 6, 7, 8}}, scid = {.len = 4, .b = {9, 9, 9, 9}};
    int err = 0;
    qk_conn_env env = qk_stub_env_init(s, 7); /* copied by qk_conn_new */
    qk_conn *c = qk_conn_new(&env, cfg, true, &sa, &ca, &dcid, &scid, NULL, QK_NS_PER_S, &err);
    assert_non_null(c);
    return c;
}

/* RFC 9000 §5.1.1, §18.2: the server's preferred address carries a fresh
 * CID of sequence number 1, registered for demultiplexing, with the reset
 * token the endpoint derives for it; the next NEW_CONNECTION_ID is seq 2. */
static void test_server_advertises(void **st)
{
    (void)st;
    qk_config cfg;
    base_config(&cfg, true);
    cfg.preferred_addr_v4 = v4("10.0.0.9", 4444);
    cfg.preferred_addr_v6 = v6("2001:db8::9", 4445);
    assert_int_equal(qk_config_check(&cfg, NULL, 0), 0);
    qk_stub_env s;
    qk_conn *c = server_conn(&s, &cfg);
    const qk_tparams *tp = &c->local_tp;
    assert_true(tp->present & QK_TPB_PREFERRED_ADDRESS);
    const qk_preferred_address *pa = &tp->preferred_address;
    const uint8_t ip4[4] = {10, 0, 0, 9};
    assert_memory_equal(pa->ipv4, ip4, 4);
    assert_int_equal(pa->ipv4_port, 4444);
    assert_int_equal(pa->ipv6[0], 0x20);
    assert_int_equal(pa->ipv6[15], 0x09);
    assert_int_equal(pa->ipv6_port, 4445);
    assert_int_equal(pa->cid.len, cfg.cid_bytes);
    assert_true(c->cids.lcid[1].active);
    assert_int_equal(c->cids.lcid[1].seq, 1);
    assert_int_equal(c->cids.lcid_next_seq, 2);
    assert_false(c->cids.lcid[1].send_pending); /* it travels in the parameter */
    assert_memory_equal(pa->cid.id, c->cids.lcid[1].cid.b, pa->cid.len);
    assert_false(!memcmp(pa->cid.id, c->cids.lcid[0].cid.b, pa->cid.len)); /* a new one */
    uint8_t tok[QK_RESET_TOKEN_LEN];
    qk_stub_reset_token(NULL, &c->cids.lcid[1].cid, tok);
    assert_memory_equal(pa->reset_token, tok, QK_RESET_TOKEN_LEN);
    /* registered: own CID, the client's Initial DCID, the preferred one */
    assert_int_equal(s.n_cids, 3);
    bool found = false;
    for (size_t i = 0; i < s.n_cids; i++) found |= !memcmp(s.cids[i].b, pa->cid.id, pa->cid.len);
    assert_true(found);
    /* what a client decodes is what was meant */
    uint8_t buf[512];
    int n = qk_tparams_encode(tp, true, buf, sizeof buf);
    assert_true(n > 0);
    qk_tparams back;
    assert_int_equal(qk_tparams_decode(buf, (size_t)n, true, &back), 0);
    assert_memory_equal(&back.preferred_address, pa, sizeof *pa);
    qk_conn_del(c);
    assert_int_equal(s.n_cids, 0);
}

/* RFC 9000 §18.2: a server using zero-length CIDs must not send it; no
 * preferred address configured: nothing sent, no extra CID. */
static void test_server_zero_length_cid(void **st)
{
    (void)st;
    qk_config cfg;
    base_config(&cfg, true);
    cfg.preferred_addr_v4 = v4("10.0.0.9", 4444);
    cfg.cid_bytes = 0; /* qk_config_check refuses it; the connection must still not send it */
    qk_stub_env s;
    qk_conn *c = server_conn(&s, &cfg);
    assert_false(c->local_tp.present & QK_TPB_PREFERRED_ADDRESS);
    assert_false(c->cids.lcid[1].active);
    qk_conn_del(c);

    base_config(&cfg, true);
    c = server_conn(&s, &cfg);
    assert_false(c->local_tp.present & QK_TPB_PREFERRED_ADDRESS);
    assert_false(c->cids.lcid[1].active);
    assert_int_equal(c->cids.lcid_next_seq, 1);
    qk_conn_del(c);
}

/* A client connection to peer, with the server's parameters set by hand. */
static qk_conn *client_conn(qk_stub_env *s, const qk_config *cfg, const qk_addr *peer)
{
    qk_addr none = {0};
    int err = 0;
    qk_conn_env env = qk_stub_env_init(s, 11); /* copied by qk_conn_new */
    qk_conn *c =
        qk_conn_new(&env, cfg, false, &none, peer, NULL, NULL, "quack.test", QK_NS_PER_S, &err);
    assert_non_null(c);
    c->cids.peer_scid =
        (qk_cid){.len = 8, .b = {0x5e, 1, 2, 3, 4, 5, 6, 7}}; /* the server's SCID */
    c->cids.rcid[0].cid = c->cids.peer_scid;
    qk_tparams_init(&c->peer_tp);
    return c;
}

static void set_pref(qk_tparams *tp, bool with_v4, bool with_v6, uint8_t cid_len)
{
    qk_preferred_address *pa = &tp->preferred_address;
    memset(pa, 0, sizeof *pa);
    tp->present |= QK_TPB_PREFERRED_ADDRESS;
    if (with_v4) {
        const uint8_t ip[4] = {192, 0, 2, 7};
        memcpy(pa->ipv4, ip, 4);
        pa->ipv4_port = 8443;
    }
    if (with_v6) {
        pa->ipv6[0] = 0x20;
        pa->ipv6[1] = 0x01;
        pa->ipv6[15] = 7;
        pa->ipv6_port = 9443;
    }
    pa->cid.len = cid_len;
    memset(pa->cid.id, 0xc1, cid_len);
    memset(pa->reset_token, 0x77, QK_RESET_TOKEN_LEN);
}

/* client_conn with the server's preferred_address already in its view of
 * the server's transport parameters (set_pref). */
static qk_conn *client_offered(qk_stub_env *s, const qk_config *cfg, const qk_addr *peer,
                               bool with_v4, bool with_v6, uint8_t cid_len)
{
    qk_conn *c = client_conn(s, cfg, peer);
    set_pref(&c->peer_tp, with_v4, with_v6, cid_len);
    return c;
}

/* The client takes the CID as sequence number 1 (§5.1.1) with its reset
 * token (§10.3.1), and the address of its own family (§9.6.1). */
static void test_client_takes_cid_and_address(void **st)
{
    (void)st;
    qk_config cfg;
    base_config(&cfg, false);
    qk_stub_env s;
    qk_addr peer = v4("192.0.2.1", 443);
    qk_conn *c = client_offered(&s, &cfg, &peer, true, true, 8);
    assert_int_equal(qk_conn_prefaddr_on_tparams(c), 0);
    size_t seq1 = QK_CONN_MAX_REMOTE_CIDS;
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++)
        if (c->cids.rcid[i].active && c->cids.rcid[i].seq == 1) seq1 = i;
    assert_true(seq1 < QK_CONN_MAX_REMOTE_CIDS);
    assert_int_equal(c->cids.rcid[seq1].cid.len, 8);
    assert_int_equal(c->cids.rcid[seq1].cid.b[0], 0xc1);
    assert_int_equal(c->cids.rcid_cur, 0); /* still on the handshake's CID */
    assert_int_equal(s.n_tokens, 1);
    assert_int_equal(s.tokens[0][0], 0x77);
    assert_true(c->pref.pending);
    qk_addr want = v4("192.0.2.7", 8443);
    assert_true(qk_addr_equal(&c->pref.addr, &want));
    qk_conn_stats stats;
    qk_conn_stats_get(c, &stats);
    assert_int_equal(stats.preferred_address, QK_PREFADDR_OFFERED);
    /* not probed before the handshake is confirmed (§9.6.1) */
    qk_conn_prefaddr_maybe_probe(c, 2 * QK_NS_PER_S);
    assert_false(c->paths.alt_active);
    c->handshake_confirmed = true;
    qk_conn_prefaddr_maybe_probe(c, 2 * QK_NS_PER_S);
    assert_true(c->paths.alt_active);
    assert_true(c->paths.alt.challenge_due);
    assert_true(qk_addr_equal(&c->paths.alt.peer, &want));
    assert_int_equal(c->paths.alt.dcid_idx, seq1); /* §9.5: its own CID on the new path */
    assert_false(c->pref.pending);
    qk_conn_stats_get(c, &stats);
    assert_int_equal(stats.preferred_address, QK_PREFADDR_PROBING);
    qk_conn_del(c);
    assert_int_equal(s.n_tokens, 0);
}

/* §9.6.1: only the client's address family; a v4-mapped peer gets the
 * IPv4 address, mapped. */
static void test_client_family(void **st)
{
    (void)st;
    qk_config cfg;
    base_config(&cfg, false);
    qk_stub_env s;
    /* IPv6 peer, IPv6 given */
    qk_addr peer = v6("2001:db8::1", 443);
    qk_conn *c = client_offered(&s, &cfg, &peer, true, true, 8);
    assert_int_equal(qk_conn_prefaddr_on_tparams(c), 0);
    assert_true(c->pref.pending);
    qk_addr want = v6("2001::7", 9443);
    assert_true(qk_addr_equal(&c->pref.addr, &want));
    qk_conn_del(c);
    /* IPv6 peer, only IPv4 given: the CID is taken, the address is not used */
    c = client_offered(&s, &cfg, &peer, true, false, 8);
    assert_int_equal(qk_conn_prefaddr_on_tparams(c), 0);
    assert_false(c->pref.pending);
    assert_int_equal(s.n_tokens, 1);
    qk_conn_stats stats;
    qk_conn_stats_get(c, &stats);
    assert_int_equal(stats.preferred_address, QK_PREFADDR_NONE);
    qk_conn_del(c);
    /* IPv4 peer, only IPv6 given */
    peer = v4("192.0.2.1", 443);
    c = client_offered(&s, &cfg, &peer, false, true, 8);
    assert_int_equal(qk_conn_prefaddr_on_tparams(c), 0);
    assert_false(c->pref.pending);
    qk_conn_del(c);
    /* v4-mapped peer (a dual-stack socket): the IPv4 one, mapped */
    peer = v6("::ffff:192.0.2.1", 443);
    c = client_offered(&s, &cfg, &peer, true, true, 8);
    assert_int_equal(qk_conn_prefaddr_on_tparams(c), 0);
    want = v6("::ffff:192.0.2.7", 8443);
    assert_true(c->pref.pending);
    assert_true(qk_addr_equal(&c->pref.addr, &want));
    qk_conn_del(c);
}

/* qk_config.disable_preferred_address: the CID is still usable, the address is not. */
static void test_client_disabled(void **st)
{
    (void)st;
    qk_config cfg;
    base_config(&cfg, false);
    cfg.disable_preferred_address = true;
    qk_stub_env s;
    qk_addr peer = v4("192.0.2.1", 443);
    qk_conn *c = client_offered(&s, &cfg, &peer, true, false, 8);
    assert_int_equal(qk_conn_prefaddr_on_tparams(c), 0);
    assert_false(c->pref.pending);
    assert_int_equal(s.n_tokens, 1);
    c->handshake_confirmed = true;
    qk_conn_prefaddr_maybe_probe(c, 2 * QK_NS_PER_S);
    assert_false(c->paths.alt_active);
    qk_conn_del(c);
}

/* RFC 9000 §18.2: a zero-length CID in preferred_address, or one from a
 * server using zero-length CIDs, is TRANSPORT_PARAMETER_ERROR. */
static void test_client_malformed(void **st)
{
    (void)st;
    qk_config cfg;
    base_config(&cfg, false);
    qk_stub_env s;
    qk_addr peer = v4("192.0.2.1", 443);
    qk_conn *c = client_offered(&s, &cfg, &peer, true, false, 0);
    assert_int_equal(qk_conn_prefaddr_on_tparams(c), QK_ERR_TRANSPORT_PARAMETER);
    assert_false(c->pref.pending);
    qk_conn_del(c);
    c = client_conn(&s, &cfg, &peer);
    c->cids.peer_scid.len = 0;
    c->cids.rcid[0].cid.len = 0;
    set_pref(&c->peer_tp, true, false, 8);
    assert_int_equal(qk_conn_prefaddr_on_tparams(c), QK_ERR_TRANSPORT_PARAMETER);
    qk_conn_del(c);
    /* the decoder rejects both before a connection sees them */
    uint8_t buf[128];
    long n = qk_test_hex("0d 29 0a000001 115c 000102030405060708090a0b0c0d0e0f 01bb"
                         "00 00112233445566778899aabbccddeeff",
                         buf, sizeof buf);
    qk_tparams tp;
    assert_int_equal(qk_tparams_decode(buf, (size_t)n, true, &tp), QK_ERR_TRANSPORT_PARAMETER);
}

static void test_config_check(void **st)
{
    (void)st;
    qk_config cfg;
    base_config(&cfg, true);
    cfg.preferred_addr_v4 = v6("2001:db8::9", 4444); /* not IPv4 */
    assert_int_equal(qk_config_check(&cfg, NULL, 0), QK_ERR_CONFIG);
    cfg.preferred_addr_v4 = v6("::ffff:10.0.0.9", 4444); /* v4-mapped is IPv4 */
    assert_int_equal(qk_config_check(&cfg, NULL, 0), 0);
    cfg.preferred_addr_v4 = v4("10.0.0.9", 0); /* no port */
    assert_int_equal(qk_config_check(&cfg, NULL, 0), QK_ERR_CONFIG);
    cfg.preferred_addr_v4 = (qk_addr){0};
    cfg.preferred_addr_v6 = v4("10.0.0.9", 4444); /* not IPv6 */
    char why[200];
    assert_int_equal(qk_config_check(&cfg, why, sizeof why), QK_ERR_CONFIG);
    assert_non_null(strstr(why, "preferred_addr_v6"));
}

/* Replace the client's TLS before its first flight: its transport
 * parameters now carry preferred_address (a server-only parameter). */
static void client_sends_preferred(qk_pair *p)
{
    qk_conn *c = p->cconn;
    qk_tparams tp = c->local_tp;
    set_pref(&tp, true, false, 8);
    uint8_t enc[512];
    int n = qk_tparams_encode(&tp, true, enc, sizeof enc); /* encoded as a server would */
    assert_true(n > 0);
    qk_tls_config tc = {.alpn = {"test"}, .alpn_count = 1, .server_name = "quack.test"};
    tc.verify = QK_TLS_VERIFY_INSECURE;
    int err = 0;
    qk_tls_del(c->tls);
    c->tls = qk_tls_new(&tc, 0, enc, (size_t)n, &err);
    assert_non_null(c->tls);
    qk_space *sp = &c->sp[QK_PN_SPACE_INITIAL];
    qk_sendbuf_free(&sp->crypto_send);
    qk_sendbuf_init(&sp->crypto_send, QK_CONN_CRYPTO_BUF_BYTES);
    assert_true(qk_conn_drive_tls(c, p->now) >= 0);
}

/* RFC 9000 §18.2: a server receiving preferred_address closes with
 * TRANSPORT_PARAMETER_ERROR (0x08). */
static void test_client_preferred_refused(void **st)
{
    (void)st;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 5 * QK_NS_PER_MS), 0);
    p.client = qk_endpoint_new(&p.ccfg);
    p.server = qk_endpoint_new(&p.scfg);
    assert_non_null(p.client);
    assert_non_null(p.server);
    assert_int_equal(qk_connect(p.client, &p.caddr, &p.saddr, "quack.test", p.now, &p.cconn), 0);
    client_sends_preferred(&p);
    qk_pair_flush(&p);
    assert_true(qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + 3 * QK_NS_PER_S));
    const qk_event *ev = qk_pair_client_closed(&p);
    assert_true(ev->remote);
    assert_false(ev->app_error);
    assert_int_equal(ev->error_code, 0x08); /* TRANSPORT_PARAMETER_ERROR */
    qk_pair_free(&p);
}

/* Through two endpoints: the client moves (its view) to the advertised
 * address once the path validates; the pair delivers on fixed addresses,
 * so the upload goes on, byte-exact. */
static void test_pair_moves(void **st)
{
    (void)st;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 5 * QK_NS_PER_MS), 0);
    qk_pair_set_addr(&p.scfg.preferred_addr_v4, 9, 4444);
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 2 * QK_NS_PER_S));
    uint64_t sid;
    assert_int_equal(qk_stream_open(p.cconn, true, &sid), 0);
    const size_t size = 300000;
    size_t written = 0;
    qk_pair_write_pattern(p.cconn, sid, size, &written);
    qk_pair_flush(&p);
    qk_time end = p.now + 5 * QK_NS_PER_S;
    size_t rd = 0;
    bool mismatch = false, fin = false;
    while (p.now < end && !fin && qk_pair_step(&p)) {
        if (written < size) qk_pair_write_pattern(p.cconn, sid, size, &written);
        if (p.sconn) fin = qk_pair_read_pattern(p.sconn, sid, &rd, &mismatch);
    }
    assert_true(fin);
    assert_false(mismatch);
    assert_int_equal(rd, size);
    qk_conn_stats stats;
    qk_conn_stats_get(p.cconn, &stats);
    assert_int_equal(stats.preferred_address, QK_PREFADDR_MOVED);
    assert_int_equal(stats.migrations, 1);
    qk_addr peer;
    qk_conn_path_addrs(p.cconn, NULL, &peer);
    assert_true(qk_addr_equal(&peer, &p.scfg.preferred_addr_v4));
    assert_int_equal(qk_conn_dcid(p.cconn)->seq, 1); /* §5.1.1: the preferred address's CID */
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_server_advertises),
        cmocka_unit_test(test_server_zero_length_cid),
        cmocka_unit_test(test_client_takes_cid_and_address),
        cmocka_unit_test(test_client_family),
        cmocka_unit_test(test_client_disabled),
        cmocka_unit_test(test_client_malformed),
        cmocka_unit_test(test_config_check),
        cmocka_unit_test(test_client_preferred_refused),
        cmocka_unit_test(test_pair_moves),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
