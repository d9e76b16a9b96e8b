/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/cid.c src/transport/conn/retry.c
 * src/transport/endpoint/stateless.c src/transport/path/path.c */
/* Endpoint robustness through an in-memory client/server pair: Retry and
 * address tokens (RFC 9000 §8.1), NEW_TOKEN, Version Negotiation (§6),
 * connection IDs (§5.1), stateless reset (§10.3) and flood bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <netinet/in.h>

#include "crypto/token.h"
#include "qk_inject.h"
#include "qk_pair.h"
#include "qk_test.h"
#include "transport/endpoint/endpoint.h"
#include "wire/packet.h"

#define GREASE_MASK 0x0f0f0f0fu

/* ---- helpers ---- */

typedef struct watch {
    unsigned retries;   /* Retry packets seen toward the client */
    unsigned vns;       /* VN packets toward the client */
    uint8_t token[512]; /* last Retry token */
    size_t token_len;
    uint8_t retry_dcid[QK_MAX_CID_LEN]; /* the Retry's SCID (the client's next DCID) */
    size_t retry_dcid_len;
} watch;

static bool watch_filter(void *ctx, bool to_server, uint64_t idx, uint8_t *d, size_t *len)
{
    (void)idx;
    watch *w = ctx;
    if (to_server || !(d[0] & QK_HDR_FORM_LONG)) return true;
    qk_pkt_hdr h;
    if (qk_pkt_parse(d, *len, 8, &h)) return true;
    if (h.type == QK_PKT_RETRY) {
        w->retries++;
        if (h.token_len <= sizeof w->token) {
            memcpy(w->token, h.token, h.token_len);
            w->token_len = h.token_len;
        }
        memcpy(w->retry_dcid, h.scid, h.scid_len);
        w->retry_dcid_len = h.scid_len;
    }
    if (h.type == QK_PKT_VN) w->vns++;
    return true;
}

static void set_key(qk_config *c, uint8_t seed)
{
    for (int i = 0; i < 32; i++) c->static_key[i] = (uint8_t)(seed + i * 13);
}

static void addr4(qk_addr *a, uint32_t ip, uint16_t port)
{
    memset(a, 0, sizeof *a);
    struct sockaddr_in *s = (struct sockaddr_in *)&a->ss;
    s->sin_family = AF_INET;
    s->sin_port = htons(port);
    s->sin_addr.s_addr = htonl(ip);
    a->len = sizeof *s;
}

/* Drain the server's queued datagrams into out (returns how many). */
static size_t server_out(qk_pair *p, uint8_t bufs[][1500], size_t *lens, size_t max)
{
    qk_datagram d[16];
    if (max > 16) max = 16;
    for (size_t i = 0; i < max; i++) {
        memset(&d[i], 0, sizeof d[i]);
        d[i].data = bufs[i];
        d[i].len = 1500;
    }
    size_t n = qk_endpoint_send(p->server, d, max, p->now);
    for (size_t i = 0; i < n; i++) lens[i] = d[i].len;
    return n;
}

static void deliver_to_server(qk_pair *p, uint8_t *buf, size_t len, const qk_addr *from)
{
    qk_datagram d = {.data = buf, .len = len};
    d.peer = from ? *from : p->caddr;
    d.local = p->saddr;
    qk_endpoint_recv(p->server, &d, p->now);
}

/* The server's counters now. */
static qk_endpoint_stats server_stats(qk_pair *p)
{
    qk_endpoint_stats st;
    qk_endpoint_stats_get(p->server, &st);
    return st;
}

/* Starts an initialised pair and runs it until both sides confirmed the
 * handshake. */
static void start_confirmed(qk_pair *p)
{
    assert_int_equal(qk_pair_start(p), 0);
    assert_true(qk_pair_run_until(p, qk_pair_confirmed, NULL, p->now + 5 * QK_NS_PER_S));
}

/* The client opens a stream and sends "ping" on it (no FIN). */
static void client_sends_ping(qk_pair *p)
{
    uint64_t sid;
    assert_int_equal(qk_stream_open(p->cconn, true, &sid), 0);
    assert_int_equal(qk_stream_write(p->cconn, sid, (const uint8_t *)"ping", 4, false), 4);
    qk_pair_flush(p);
}

/* Starts an initialised pair and forgets the client's first Initial: only
 * what the test delivers reaches the server. */
static void start_server_only(qk_pair *p)
{
    assert_int_equal(qk_pair_start(p), 0);
    p->nq = 0;
}

/* ---- Retry and tokens ---- */

/* A pair whose server always answers with Retry, w watching what reaches the
 * client, run until the handshake is confirmed. */
static void start_retry_pair(qk_pair *p, watch *w)
{
    assert_int_equal(qk_pair_init(p, 10 * QK_NS_PER_MS), 0);
    p->scfg.retry = true;
    p->filter = watch_filter;
    p->filter_ctx = w;
    start_confirmed(p);
}

static void test_retry_forced(void **state)
{
    (void)state;
    qk_pair p;
    watch w = {0};
    start_retry_pair(&p, &w);
    assert_int_equal(w.retries, 1);
    qk_conn *c = p.cconn, *s = p.sconn;
    /* RFC 9000 §7.3: the server names the client's first DCID and the Retry SCID. */
    assert_true(s->restart.retried);
    assert_true(s->local_tp.present & QK_TPB_RETRY_SCID);
    assert_int_equal(s->local_tp.retry_scid.len, w.retry_dcid_len);
    assert_memory_equal(s->local_tp.retry_scid.id, w.retry_dcid, w.retry_dcid_len);
    assert_int_equal(s->local_tp.original_dcid.len, c->cids.odcid.len);
    assert_memory_equal(s->local_tp.original_dcid.id, c->cids.odcid.b, c->cids.odcid.len);
    assert_true(c->restart.retried);
    assert_true(s->address_validated); /* the token proved the address */
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.retry_sent, 1);
    assert_int_equal(st.tokens_accepted, 1);

    /* Data moves after the Retry. */
    uint64_t sid;
    assert_int_equal(qk_stream_open(c, true, &sid), 0);
    assert_int_equal(qk_stream_write(c, sid, (const uint8_t *)"hello", 5, true), 5);
    qk_pair_flush(&p);
    for (int i = 0; i < 200 && s->stats.stream_bytes_received < 5; i++) qk_pair_step(&p);
    assert_int_equal(s->stats.stream_bytes_received, 5);
    qk_pair_free(&p);
}

static void test_retry_token_expired(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.retry = true;
    p.scfg.retry_token_lifetime_ns = 1 * QK_NS_PER_MS; /* shorter than the 20 ms round trip */
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + 5 * QK_NS_PER_S));
    const qk_event *ev = qk_pair_client_closed(&p);
    /* RFC 9000 §8.1.3: INVALID_TOKEN (0x0b), sent by the server without state. */
    assert_int_equal(ev->error_code, 0x0b);
    assert_true(ev->remote);
    assert_int_equal(qk_endpoint_conn_count(p.server), 0);
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.tokens_refused, 1);
    assert_int_equal(st.tokens_accepted, 0);
    qk_pair_free(&p);
}

static void test_token_forged_or_moved(void **state)
{
    (void)state;
    qk_pair p;
    watch w = {0};
    start_retry_pair(&p, &w);
    assert_true(w.token_len > 0);
    size_t conns = qk_endpoint_conn_count(p.server);
    qk_endpoint_stats st0 = server_stats(&p);

    static uint8_t dg[1500], out[16][1500];
    size_t lens[16];
    const uint8_t scid[8] = {9, 9, 9, 9, 9, 9, 9, 9}, ping = 0x01;

    /* A forged token (one bit flipped): undecryptable, so treated as none → Retry. */
    uint8_t forged[512];
    memcpy(forged, w.token, w.token_len);
    forged[w.token_len / 2] ^= 0x01;
    int n =
        qk_inject_client_initial_token(dg, sizeof dg, QK_VERSION_1, w.retry_dcid, w.retry_dcid_len,
                                       scid, 8, forged, w.token_len, &ping, 1, 1200);
    assert_true(n >= 1200);
    deliver_to_server(&p, dg, (size_t)n, NULL);
    size_t k = server_out(&p, out, lens, 16);
    assert_int_equal(k, 1);
    qk_pkt_hdr h;
    assert_int_equal(qk_pkt_parse(out[0], lens[0], 8, &h), 0);
    assert_int_equal(h.type, QK_PKT_RETRY);
    assert_int_equal(qk_endpoint_conn_count(p.server), conns);

    /* The genuine token presented from another address: INVALID_TOKEN, no state. */
    qk_addr other;
    addr4(&other, 0x0a0000ff, 40000);
    n = qk_inject_client_initial_token(dg, sizeof dg, QK_VERSION_1, w.retry_dcid, w.retry_dcid_len,
                                       scid, 8, w.token, w.token_len, &ping, 1, 1200);
    deliver_to_server(&p, dg, (size_t)n, &other);
    k = server_out(&p, out, lens, 16);
    assert_int_equal(k, 1);
    assert_int_equal(qk_pkt_parse(out[0], lens[0], 8, &h), 0);
    assert_int_equal(h.type, QK_PKT_INITIAL); /* carrying CONNECTION_CLOSE(INVALID_TOKEN) */
    assert_true(lens[0] < 200);
    assert_int_equal(qk_endpoint_conn_count(p.server), conns);
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.tokens_ignored, st0.tokens_ignored + 1);
    assert_int_equal(st.tokens_refused, st0.tokens_refused + 1);
    assert_int_equal(st.tokens_accepted, st0.tokens_accepted);
    qk_pair_free(&p);
}

static bool got_new_token(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->sconn && !(p->sconn->pend & QK_PEND_NEW_TOKEN) && p->nq == 0;
}

static void test_new_token_skips_retry(void **state)
{
    (void)state;
    qk_pair p;
    watch w = {0};
    start_retry_pair(&p, &w);
    assert_true(qk_pair_run_until(&p, got_new_token, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(w.retries, 1);
    qk_conn_close(p.cconn, 0, "bye");
    qk_pair_flush(&p);
    assert_true(qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + 5 * QK_NS_PER_S));
    while (qk_pair_step(&p) && qk_endpoint_conn_count(p.server)) {
    }
    assert_int_equal(qk_endpoint_conn_count(p.server), 0);

    /* Second connection to the same server: the NEW_TOKEN token validates it. */
    p.sconn = NULL;
    assert_int_equal(qk_connect(p.client, &p.caddr, &p.saddr, "quack.test", p.now, &p.cconn), 0);
    assert_true(p.cconn->restart.token_len > 0);
    uint8_t tok2[QK_CONN_TOKEN_MAX];
    size_t len2 = p.cconn->restart.token_len;
    memcpy(tok2, p.cconn->restart.token, len2);
    qk_pair_flush(&p);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(w.retries, 1); /* no second Retry */
    assert_false(p.sconn->restart.retried);
    assert_true(p.sconn->address_validated);
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.retry_sent, 1);
    assert_int_equal(st.tokens_accepted, 2);
    /* RFC 9000 §8.1.3: a token is used once; the third attempt carries the
     * fresh one the second connection received. */
    assert_true(qk_pair_run_until(&p, got_new_token, NULL, p.now + 5 * QK_NS_PER_S));
    qk_conn *third;
    assert_int_equal(qk_connect(p.client, &p.caddr, &p.saddr, "quack.test", p.now, &third), 0);
    assert_true(third->restart.token_len > 0);
    assert_false(third->restart.token_len == len2 && !memcmp(third->restart.token, tok2, len2));
    qk_conn *fourth;
    assert_int_equal(qk_connect(p.client, &p.caddr, &p.saddr, "quack.test", p.now, &fourth), 0);
    assert_int_equal(fourth->restart.token_len, 0);
    qk_pair_free(&p);
}

/* ---- Version Negotiation ---- */

static int make_unknown_version(uint8_t *b, size_t len, uint32_t version)
{
    memset(b, 0, len);
    b[0] = 0xc0;
    b[1] = (uint8_t)(version >> 24);
    b[2] = (uint8_t)(version >> 16);
    b[3] = (uint8_t)(version >> 8);
    b[4] = (uint8_t)version;
    b[5] = 8;
    for (int i = 0; i < 8; i++) b[6 + i] = (uint8_t)(0xd0 + i);
    b[14] = 5;
    for (int i = 0; i < 5; i++) b[15 + i] = (uint8_t)(0xe0 + i);
    return (int)len;
}

static void test_vn_for_unknown_version(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.ccfg.server = false;
    start_server_only(&p);
    static uint8_t dg[1500], out[16][1500];
    size_t lens[16];
    make_unknown_version(dg, 1200, 0x1a2a3a4a);
    deliver_to_server(&p, dg, 1200, NULL);
    assert_int_equal(server_out(&p, out, lens, 16), 1);
    qk_pkt_hdr h;
    assert_int_equal(qk_pkt_parse(out[0], lens[0], 8, &h), 0);
    assert_int_equal(h.type, QK_PKT_VN);
    /* RFC 9000 §17.2.1: the CIDs are echoed, swapped. */
    assert_int_equal(h.dcid_len, 5);
    assert_int_equal(h.dcid[0], 0xe0);
    assert_int_equal(h.scid_len, 8);
    assert_int_equal(h.scid[0], 0xd0);
    bool v1 = false, v2 = false, grease = false, offered = false;
    for (size_t i = 0; i < h.n_versions; i++) {
        uint32_t v = qk_pkt_vn_version(&h, i);
        v1 |= v == QK_VERSION_1;
        v2 |= v == QK_VERSION_2;
        grease |= (v & GREASE_MASK) == 0x0a0a0a0au;
        offered |= v == 0x1a2a3a4a;
    }
    assert_true(v1 && v2 && grease);
    assert_false(offered);
    assert_int_equal(qk_endpoint_conn_count(p.server), 0);

    /* RFC 9000 §14.1: not for small datagrams; §6.1: never for a VN. */
    make_unknown_version(dg, 1199, 0x1a2a3a4a);
    deliver_to_server(&p, dg, 1199, NULL);
    assert_int_equal(server_out(&p, out, lens, 16), 0);
    memcpy(dg, out[0], lens[0]); /* (the VN bytes again) */
    make_unknown_version(dg, 1200, 0);
    deliver_to_server(&p, dg, 1200, NULL);
    assert_int_equal(server_out(&p, out, lens, 16), 0);
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.vn_sent, 1);
    qk_pair_free(&p);
}

static void test_client_fails_on_vn(void **state)
{
    (void)state;
    qk_pair p;
    watch w = {0};
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.version = QK_VERSION_1; /* this server speaks v1 only */
    p.ccfg.version = QK_VERSION_2;
    p.filter = watch_filter;
    p.filter_ctx = &w;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + 2 * QK_NS_PER_S));
    const qk_event *ev = qk_pair_client_closed(&p);
    assert_int_equal(w.vns, 1);
    assert_int_equal(ev->reason_err, QK_ERR_VERSION);
    assert_non_null(strstr(ev->reason, "version negotiation: server supports 0x00000001"));
    assert_non_null(strstr(ev->reason, "0x6b3343cf")); /* what we offered */
    assert_int_equal(qk_endpoint_conn_count(p.server), 0);
    /* Done in one round trip, not by a timeout. */
    assert_true(p.now < 1 * QK_NS_PER_S + 100 * QK_NS_PER_MS);
    qk_pair_free(&p);
}

static void test_vn_listing_our_version_ignored(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    assert_int_equal(qk_pair_start(&p), 0);
    qk_conn *c = p.cconn;
    /* A VN echoing the client's CIDs but listing v1: RFC 9000 §6.2 discard. */
    uint32_t list[2] = {0x5a5a5a5a, QK_VERSION_1};
    assert_int_equal(qk_pair_deliver_vn(&p, list, 2), 0);
    assert_int_equal(c->state, QK_CONN_HANDSHAKE);
    /* Without v1 it ends the attempt. */
    list[1] = 0x7a7a7a7a;
    assert_int_equal(qk_pair_deliver_vn(&p, list, 2), 0);
    qk_pair_step(&p);
    const qk_event *ev = qk_pair_client_closed(&p);
    assert_non_null(ev);
    assert_int_equal(ev->reason_err, QK_ERR_VERSION);
    qk_pair_free(&p);
}

/* A VN listing many versions: the close reason is cut in the version list,
 * never in "(we offered ...)" (it once overflowed the 128-byte reason). */
static void test_vn_long_list_reason_whole(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    assert_int_equal(qk_pair_start(&p), 0);
    uint32_t list[20];
    for (size_t i = 0; i < 20; i++) list[i] = 0x1a2a3a00u + (uint32_t)i;
    assert_int_equal(qk_pair_deliver_vn(&p, list, 20), 0);
    qk_pair_step(&p);
    const qk_event *ev = qk_pair_client_closed(&p);
    assert_non_null(ev);
    assert_int_equal(ev->reason_err, QK_ERR_VERSION);
    assert_non_null(strstr(ev->reason, "version negotiation: server supports 0x1a2a3a00, "));
    const char *tail = "(we offered 0x00000001)";
    size_t len = strlen(ev->reason);
    assert_true(len < sizeof ev->reason && len > strlen(tail));
    assert_string_equal(ev->reason + len - strlen(tail), tail);
    qk_pair_free(&p);
}

static void test_quic_v2_handshake(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.ccfg.version = QK_VERSION_2;
    start_confirmed(&p);
    assert_int_equal(p.sconn->version, QK_VERSION_2);
    qk_pair_free(&p);
}

static void test_config_errors(void **state)
{
    (void)state;
    qk_config c;
    uint64_t seed = 1;
    qk_config_default(&c);
    c.alpn[0] = "x";
    c.alpn_count = 1;
    c.rng = qk_test_rng;
    c.rng_ctx = &seed;
    char why[160];
    assert_int_equal(qk_config_check(&c, why, sizeof why), 0);
    c.version = 0x1a2a3a4a; /* a client with only an unsupported version */
    assert_int_equal(qk_config_check(&c, why, sizeof why), QK_ERR_VERSION);
    assert_non_null(strstr(why, "version"));
    assert_null(qk_endpoint_new(&c));
    c.version = 0;
    c.pacing_gain_ca_pct = 99; /* RFC 9002 §7.7: N >= 1 */
    assert_int_equal(qk_config_check(&c, why, sizeof why), QK_ERR_CONFIG);
    assert_non_null(strstr(why, "pacing_gain"));
    c.pacing_gain_ca_pct = 120;
    assert_int_equal(qk_config_check(&c, why, sizeof why), 0);
    c.pacing_gain_ca_pct = 0;
    c.pacing_burst_pkts = 65;
    assert_int_equal(qk_config_check(&c, why, sizeof why), QK_ERR_CONFIG);
    assert_non_null(strstr(why, "pacing_burst_pkts"));
    c.pacing_burst_pkts = 2;
    assert_int_equal(qk_config_check(&c, why, sizeof why), 0);
    c.pacing_burst_pkts = 0;
    c.cid_bytes = 0;
    assert_int_equal(qk_config_check(&c, why, sizeof why), QK_ERR_CONFIG);
    assert_non_null(strstr(why, "zero-length"));
    assert_null(qk_endpoint_new(&c));
    c.cid_bytes = 21;
    assert_int_equal(qk_config_check(&c, why, sizeof why), QK_ERR_CONFIG);
    c.cid_bytes = 20;
    c.active_cid_limit = 9;
    assert_int_equal(qk_config_check(&c, why, sizeof why), QK_ERR_CONFIG);
}

/* ---- connection IDs ---- */

static size_t active_rcids(const qk_conn *c)
{
    size_t n = 0;
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++) n += c->cids.rcid[i].active;
    return n;
}

static bool client_has_seq(qk_pair *p, void *ctx)
{
    uint64_t seq = *(uint64_t *)ctx;
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++)
        if (p->cconn->cids.rcid[i].active && p->cconn->cids.rcid[i].seq == seq) return p->nq == 0;
    return false;
}

static void test_cids_issued_and_replaced(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    set_key(&p.scfg, 7);
    p.ccfg.active_cid_limit = 5;
    p.scfg.cid_bytes = 12;
    start_confirmed(&p);
    uint64_t want = 4;
    assert_true(qk_pair_run_until(&p, client_has_seq, &want, p.now + 2 * QK_NS_PER_S));
    /* RFC 9000 §5.1.1: the client holds as many server CIDs as its limit (5). */
    qk_conn *c = p.cconn, *s = p.sconn;
    assert_int_equal(active_rcids(c), 5);
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++) {
        const qk_remote_cid *r = &c->cids.rcid[i];
        if (!r->active) continue;
        assert_int_equal(r->cid.len, 12);
        /* RFC 9000 §10.3.2: token = HMAC-SHA256(static key, CID)[0..16). */
        uint8_t t[16];
        assert_int_equal(qk_reset_token(p.scfg.static_key, 32, r->cid.b, r->cid.len, t), 0);
        assert_true(r->has_token);
        assert_memory_equal(r->reset_token, t, 16);
    }
    /* The client retires seq 1 (as a migration would): the server issues
     * seq 5 in its place. */
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++)
        if (c->cids.rcid[i].active && c->cids.rcid[i].seq == 1) {
            assert_int_not_equal(i, c->cids.rcid_cur);
            c->cids.rcid[i].active = false;
        }
    c->cids.retiring[c->cids.n_retiring++] = (qk_retiring_cid){.seq = 1};
    qk_conn_env_wake(c); /* poked from outside the API: tell the endpoint */
    qk_pair_flush(&p);
    for (int i = 0; i < 100 && c->cids.n_retiring; i++) qk_pair_step(&p);
    size_t sactive = 0;
    for (size_t i = 0; i < QK_CONN_MAX_LOCAL_CIDS; i++) {
        sactive += s->cids.lcid[i].active;
        assert_false(s->cids.lcid[i].active && s->cids.lcid[i].seq == 1);
    }
    assert_int_equal(sactive, 5);
    want = 5;
    assert_true(qk_pair_run_until(&p, client_has_seq, &want, p.now + 2 * QK_NS_PER_S));
    assert_int_equal(s->state, QK_CONN_ESTABLISHED);
    qk_pair_free(&p);
}

static void test_retire_prior_to(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    start_confirmed(&p);
    uint64_t want = 3;
    assert_true(qk_pair_run_until(&p, client_has_seq, &want, p.now + 2 * QK_NS_PER_S));
    qk_conn *c = p.cconn, *s = p.sconn;
    /* The server owns one more CID, seq 10 (as if it had issued 4..10). */
    qk_local_cid *l = &s->cids.lcid[QK_CONN_MAX_LOCAL_CIDS - 1];
    assert_false(l->active);
    *l = (qk_local_cid){.cid = {.len = 8, .b = {0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8}},
                        .seq = 10,
                        .active = true};
    s->cids.lcid_next_seq = 11;
    assert_int_equal(qk_endpoint_add_cid(p.server, &l->cid, s), 0);
    /* NEW_CONNECTION_ID seq 10, retire_prior_to 9: seqs 0..3 retire (RFC 9000 §5.1.2). */
    const char *hex = "18 0a 09 08 a1a2a3a4a5a6a7a8 000102030405060708090a0b0c0d0e0f";
    uint8_t f[64];
    size_t n = qk_test_hex(hex, f, sizeof f);
    assert_int_equal(qk_pair_inject(&p, false, QK_PKT_1RTT, f, n, 0), 0);
    assert_int_equal(c->state, QK_CONN_ESTABLISHED);
    assert_int_equal(active_rcids(c), 1);
    assert_int_equal(qk_conn_dcid(c)->seq, 10);
    assert_int_equal(c->cids.n_retiring, 4);
    /* The RETIRE_CONNECTION_IDs are acknowledged, then forgotten. */
    for (int i = 0; i < 100 && c->cids.n_retiring; i++) qk_pair_step(&p);
    assert_int_equal(c->cids.n_retiring, 0);
    /* The server replaced the four retired CIDs (seq 11..13 fill the limit of 4). */
    want = 13;
    assert_true(qk_pair_run_until(&p, client_has_seq, &want, p.now + 2 * QK_NS_PER_S));
    assert_int_equal(active_rcids(c), 4);
    assert_int_equal(s->state, QK_CONN_ESTABLISHED);
    assert_int_equal(c->state, QK_CONN_ESTABLISHED);
    qk_pair_free(&p);
}

/* A packet the client sent to a CID just before retiring it arrives after
 * the RETIRE_CONNECTION_ID (reordered: the migration tests' datagram
 * steering between worker threads, or two server sockets). RFC 9000 §10.3:
 * a stateless reset only for a packet the server "cannot associate with an
 * active connection"; the CID stays routed for 3 PTO (cid.c), so the late
 * packet is processed and the connection survives. Afterwards the CID is
 * unrouted and the same packet draws a reset. */
static void test_late_packet_for_retired_cid(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    set_key(&p.scfg, 9);
    start_confirmed(&p);
    uint64_t want = 3;
    assert_true(qk_pair_run_until(&p, client_has_seq, &want, p.now + 2 * QK_NS_PER_S));
    qk_conn *c = p.cconn, *s = p.sconn;
    /* The late packet: a PING to the client's current DCID, held back. */
    static uint8_t late[1500];
    const uint8_t ping[] = {0x01};
    int n = qk_inject_seal(c, QK_PKT_1RTT, ping, sizeof ping, 0, p.now, late, sizeof late);
    assert_true(n > 0);
    /* The client moves to another CID and retires the old one (RFC 9000 §5.1.2). */
    size_t old = c->cids.rcid_cur;
    uint64_t old_seq = c->cids.rcid[old].seq;
    qk_cid old_cid = c->cids.rcid[old].cid; /* its slot is reused by the replacement */
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++)
        if (i != old && c->cids.rcid[i].active) c->cids.rcid_cur = i;
    assert_int_not_equal(c->cids.rcid_cur, old);
    c->cids.rcid[old].active = false;
    c->cids.retiring[c->cids.n_retiring++] = (qk_retiring_cid){.seq = old_seq};
    qk_conn_env_wake(c); /* poked from outside the API: tell the endpoint */
    qk_pair_flush(&p);
    for (int i = 0; i < 100 && c->cids.n_retiring; i++) qk_pair_step(&p);
    assert_int_equal(c->cids.n_retiring, 0); /* the server processed and acknowledged it */
    for (size_t i = 0; i < QK_CONN_MAX_LOCAL_CIDS; i++)
        assert_false(s->cids.lcid[i].active && s->cids.lcid[i].seq == old_seq);
    /* Now the late packet arrives: processed by the connection, no reset. */
    uint64_t rx_before = s->stats.pkts_received;
    qk_datagram d = {.data = late, .len = (size_t)n, .peer = p.caddr, .local = p.saddr};
    qk_endpoint_recv(p.server, &d, p.now);
    qk_pair_flush(&p);
    assert_int_equal(s->stats.pkts_received, rx_before + 1);
    assert_int_equal(server_stats(&p).resets_sent, 0);
    client_sends_ping(&p);
    for (int i = 0; i < 100 && p.nq; i++) qk_pair_step(&p);
    assert_int_equal(s->state, QK_CONN_ESTABLISHED);
    assert_int_equal(c->state, QK_CONN_ESTABLISHED);
    /* 3 PTO later (a timer, well before any idle timeout) the retired CID is
     * forgotten. */
    assert_int_equal(s->cids.n_linger, 1);
    qk_time t_late = p.now, pto3 = 3 * qk_conn_pto_ns(s);
    while (s->cids.n_linger && qk_pair_step(&p)) {
    }
    assert_int_equal(s->cids.n_linger, 0);
    assert_true(p.now - t_late <= pto3);
    assert_int_equal(s->state, QK_CONN_ESTABLISHED);
    /* A packet from the client (its CID rewritten to the retired one: it no
     * longer decrypts, as nothing routes it any more). */
    uint8_t padded[100] = {0x01}; /* PING + PADDING: a reset must be smaller (§10.3.3) */
    n = qk_inject_seal(c, QK_PKT_1RTT, padded, sizeof padded, 0, p.now, late, sizeof late);
    assert_true(n > 0);
    memcpy(late + 1, old_cid.b, old_cid.len);
    d = (qk_datagram){.data = late, .len = (size_t)n, .peer = p.caddr, .local = p.saddr};
    qk_endpoint_recv(p.server, &d, p.now);
    assert_int_equal(server_stats(&p).resets_sent, 1);
    qk_pair_free(&p);
}

/* Holds back the client's first datagram with a Handshake packet (its
 * Finished) while armed. */
typedef struct finished_hold {
    bool armed;
    uint8_t data[1500];
    size_t len;
} finished_hold;

static bool hold_finished_filter(void *ctx, bool to_server, uint64_t idx, uint8_t *d, size_t *len)
{
    (void)idx;
    finished_hold *f = ctx;
    if (!to_server || !f->armed || f->len) return true;
    for (size_t off = 0; off < *len;) {
        qk_pkt_hdr h;
        if (qk_pkt_parse(d + off, *len - off, 8, &h)) break;
        if (h.type == QK_PKT_HANDSHAKE) {
            memcpy(f->data, d, *len);
            f->len = *len;
            return false;
        }
        off += h.packet_len;
    }
    return true;
}

static bool client_complete(qk_pair *p, void *ctx)
{
    (void)ctx;
    return p->cconn && p->cconn->handshake_complete;
}

static bool server_stream0(qk_pair *p, void *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < p->nsev; i++)
        if (p->sev[i].type == QK_EV_STREAM_READABLE && p->sev[i].stream_id == 0) return true;
    return false;
}

/* RFC 9001 §5.7: a client's 1-RTT packet that overtakes its Finished (ngtcp2
 * probes the preferred address right after sending it; another socket or a
 * worker's steering queue delivers the probe first) is held by the server,
 * not dropped, and processed once the handshake completes. */
static void test_1rtt_before_finished_is_held(void **state)
{
    (void)state;
    qk_pair p;
    finished_hold f = {.armed = true};
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.filter = hold_finished_filter;
    p.filter_ctx = &f;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, client_complete, NULL, p.now + 2 * QK_NS_PER_S));
    assert_true(f.len > 0); /* the Finished is ours to deliver */
    /* A 1-RTT packet from the client arrives first: STREAM 0 "hello" + FIN. */
    const uint8_t frames[] = {0x0b, 0x00, 0x05, 'h', 'e', 'l', 'l', 'o'};
    assert_int_equal(qk_pair_inject(&p, true, QK_PKT_1RTT, frames, sizeof frames, 0), 0);
    assert_false(server_stream0(&p, NULL));
    /* Then the Finished: the handshake completes and the held packet is processed. */
    f.armed = false;
    qk_datagram d = {.data = f.data, .len = f.len, .peer = p.caddr, .local = p.saddr};
    qk_endpoint_recv(p.server, &d, p.now);
    qk_pair_flush(&p);
    assert_true(qk_pair_run_until(&p, server_stream0, NULL, p.now + 200 * QK_NS_PER_MS));
    assert_non_null(p.sconn);
    assert_int_equal(p.sconn->stats.held_1rtt_pkts, 1);
    uint8_t buf[16];
    bool fin = false;
    assert_int_equal(qk_stream_read(p.sconn, 0, buf, sizeof buf, &fin), 5);
    assert_memory_equal(buf, "hello", 5);
    assert_true(fin);
    qk_pair_free(&p);
}

/* ---- stateless reset ---- */

/* A confirmed pair whose server has static key seed 42, nothing in flight;
 * then the server restarts: a new endpoint with key seed new_key. */
static void confirmed_then_server_restart(qk_pair *p, uint8_t new_key)
{
    assert_int_equal(qk_pair_init(p, 10 * QK_NS_PER_MS), 0);
    set_key(&p->scfg, 42);
    start_confirmed(p);
    while (p->nq) qk_pair_step(p);
    qk_endpoint_del(p->server);
    set_key(&p->scfg, new_key);
    p->server = qk_endpoint_new(&p->scfg);
    p->sconn = NULL;
    assert_non_null(p->server);
}

static void test_reset_after_server_restart(void **state)
{
    (void)state;
    qk_pair p;
    confirmed_then_server_restart(&p, 42); /* the same static key */
    qk_time t0 = p.now;
    client_sends_ping(&p);
    assert_true(qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + 5 * QK_NS_PER_S));
    const qk_event *ev = qk_pair_client_closed(&p);
    assert_string_equal(ev->reason, "stateless reset");
    assert_true(ev->remote);
    /* One round trip plus the 3-PTO draining period, not an idle timeout. */
    assert_true(p.now - t0 < 2 * QK_NS_PER_S);
    qk_endpoint_stats st = server_stats(&p);
    assert_true(st.resets_sent >= 1);
    assert_int_equal(qk_endpoint_conn_count(p.server), 0);
    qk_pair_free(&p);
}

static void test_reset_needs_same_key(void **state)
{
    (void)state;
    qk_pair p;
    /* Another key: resets carry tokens the client does not know. */
    confirmed_then_server_restart(&p, 43);
    client_sends_ping(&p);
    qk_time end = p.now + 1 * QK_NS_PER_S;
    while (p.now < end && qk_pair_step(&p)) {
    }
    qk_endpoint_stats st = server_stats(&p);
    assert_true(st.resets_sent >= 1);
    assert_null(qk_pair_client_closed(&p));
    assert_int_equal(p.cconn->state, QK_CONN_ESTABLISHED);
    qk_pair_free(&p);
}

/* A reset may carry one of our CIDs in front (RFC 9000 §10.3): it is still
 * recognised when it does not decrypt. */
static void test_reset_to_known_cid(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    start_confirmed(&p);
    while (p.nq) qk_pair_step(&p);
    qk_conn *c = p.cconn;
    uint8_t dg[60];
    memset(dg, 0x33, sizeof dg);
    dg[0] = 0x47;
    memcpy(dg + 1, c->cids.lcid[0].cid.b, c->cids.lcid[0].cid.len);
    /* Not a reset: a wrong token does nothing. */
    qk_datagram d = {.data = dg, .len = sizeof dg, .peer = p.saddr, .local = p.caddr};
    qk_endpoint_recv(p.client, &d, p.now);
    assert_int_equal(c->state, QK_CONN_ESTABLISHED);
    memset(dg + 9, 0x33, sizeof dg - 9);
    memcpy(dg + sizeof dg - 16, qk_conn_dcid(c)->reset_token, 16);
    dg[0] = 0x47;
    memcpy(dg + 1, c->cids.lcid[0].cid.b, c->cids.lcid[0].cid.len);
    qk_endpoint_recv(p.client, &d, p.now);
    assert_int_equal(c->state, QK_CONN_DRAINING);
    assert_true(qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + 5 * QK_NS_PER_S));
    assert_string_equal(qk_pair_client_closed(&p)->reason, "stateless reset");
    qk_pair_free(&p);
}

static void test_reset_size_and_rate(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    set_key(&p.scfg, 5);
    start_server_only(&p);
    static uint8_t dg[1500], out[16][1500];
    size_t lens[16];
    const size_t sizes[] = {21, 22, 30, 43, 44, 100, 1200};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        memset(dg, 0x5c, sizeof dg);
        dg[0] = 0x41; /* short header */
        deliver_to_server(&p, dg, sizes[i], NULL);
        size_t k = server_out(&p, out, lens, 16);
        if (sizes[i] <= 21) {
            /* RFC 9000 §10.3.3: could be a minimal reset itself: no answer. */
            assert_int_equal(k, 0);
            continue;
        }
        assert_int_equal(k, 1);
        assert_true(lens[0] < sizes[i]); /* smaller: no loops */
        assert_true(lens[0] >= 21);
        assert_true(lens[0] <= 64);
        if (sizes[i] > 44) assert_true(lens[0] >= 43);
        assert_int_equal(out[0][0] & 0xc0, 0x40); /* looks like a short header */
        uint8_t t[16];
        assert_int_equal(qk_reset_token(p.scfg.static_key, 32, dg + 1, 8, t), 0);
        assert_memory_equal(out[0] + lens[0] - 16, t, 16);
    }
    /* Rate limit: a burst at one instant gets at most one second's worth (100). */
    unsigned sent = 0;
    for (int i = 0; i < 1000; i++) {
        memset(dg, i & 0xff, 60);
        dg[0] = 0x41;
        deliver_to_server(&p, dg, 60, NULL);
        sent += (unsigned)server_out(&p, out, lens, 16);
    }
    assert_true(sent <= 101);
    assert_true(sent >= 90);
    qk_endpoint_stats st = server_stats(&p);
    assert_true(st.resets_limited >= 899);
    qk_pair_free(&p);
}

/* ---- floods ---- */

static void spoof_flood(qk_pair *p, unsigned count, bool valid, uint64_t *rng)
{
    static uint8_t dg[1500], out[16][1500];
    size_t lens[16];
    const uint8_t ping = 0x01;
    for (unsigned i = 0; i < count; i++) {
        uint8_t dcid[8], scid[8];
        qk_test_rng(rng, dcid, 8);
        qk_test_rng(rng, scid, 8);
        int n = qk_inject_client_initial(dg, sizeof dg, dcid, 8, scid, 8, 0, &ping, 1, 1200);
        assert_true(n >= 1200);
        if (!valid) dg[n - 3] ^= 0xff; /* breaks the AEAD tag */
        uint32_t ip;
        qk_test_rng(rng, (uint8_t *)&ip, 4);
        qk_addr from;
        addr4(&from, ip, (uint16_t)(1024 + i));
        deliver_to_server(p, dg, (size_t)n, &from);
        while (server_out(p, out, lens, 16) == 16) {
        }
    }
}

static void test_spoofed_initial_flood(void **state)
{
    (void)state;
    qk_pair p;
    uint64_t rng = 99;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.max_connections = 32;
    p.scfg.retry = QK_RETRY_NEVER;
    p.scfg.max_handshakes = 10000; /* only max_connections limits here */
    start_server_only(&p);
    /* Undecryptable "Initials" leave no state at all. */
    spoof_flood(&p, 500, false, &rng);
    assert_int_equal(qk_endpoint_conn_count(p.server), 0);
    /* Valid Initials from spoofed addresses: bounded by max_connections. */
    spoof_flood(&p, 2000, true, &rng);
    assert_int_equal(qk_endpoint_conn_count(p.server), 32);
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.initials_dropped, 500 + 2000 - 32);
    assert_int_equal(st.drops_connections, 2000 - 32);
    assert_int_equal(st.initials_accepted, 32);
    qk_pair_free(&p);
}

/* RFC 9000 §20.1: a client the server has no room for is refused with
 * CONNECTION_REFUSED at once, not left to its idle timeout. */
static bool second_closed(qk_pair *p, void *ctx)
{
    qk_conn *c2 = ctx;
    for (size_t i = 0; i < p->ncev; i++)
        if (p->cev[i].type == QK_EV_CLOSED && p->cev[i].conn == c2) return true;
    return false;
}

static void test_refused_at_max_connections(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.max_connections = 1;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + QK_NS_PER_S));
    qk_addr a2;
    qk_pair_set_addr(&a2, 1, 4434);
    qk_conn *c2 = NULL;
    qk_time t0 = p.now;
    assert_int_equal(qk_connect(p.client, &a2, &p.saddr, "quack.test", p.now, &c2), 0);
    qk_pair_flush(&p);
    assert_true(qk_pair_run_until(&p, second_closed, c2, p.now + 5 * QK_NS_PER_S));
    assert_true(p.now - t0 < 100 * QK_NS_PER_MS); /* one round trip, not the idle timeout */
    const qk_event *ev = NULL;
    for (size_t i = 0; i < p.ncev; i++)
        if (p.cev[i].type == QK_EV_CLOSED && p.cev[i].conn == c2) ev = &p.cev[i];
    assert_non_null(ev);
    assert_true(ev->remote);
    assert_false(ev->app_error);
    assert_int_equal(ev->error_code, 0x02); /* CONNECTION_REFUSED */
    assert_non_null(strstr(ev->reason, "connection limit"));
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.drops_connections, 1);
    assert_int_equal(qk_endpoint_conn_count(p.server), 1); /* the first one stays */
    qk_pair_free(&p);
}

static void test_flood_answered_with_retry(void **state)
{
    (void)state;
    qk_pair p;
    uint64_t rng = 7;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.max_connections = 1000;
    p.scfg.max_handshakes = 8;
    start_server_only(&p);
    spoof_flood(&p, 1000, true, &rng);
    /* RFC 9000 §8.1.2: past the handshake limit, Retry keeps no state. */
    assert_int_equal(qk_endpoint_conn_count(p.server), 8);
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.retry_sent, 1000 - 8);
    assert_int_equal(st.retry_load, 1000 - 8);
    assert_int_equal(st.handshakes_unvalidated_now, 8);
    qk_pair_free(&p);
}

/* Default limits: max_connections / 8 unvalidated handshakes, then Retry. */
static void test_flood_default_limits(void **state)
{
    (void)state;
    qk_pair p;
    uint64_t rng = 11;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.max_connections = 400;
    start_server_only(&p);
    assert_int_equal(qk_endpoint_max_handshakes(&p.scfg), 50);
    assert_int_equal(qk_endpoint_max_handshakes_drop(&p.scfg), 100);
    spoof_flood(&p, 300, true, &rng);
    assert_int_equal(qk_endpoint_conn_count(p.server), 50);
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.retry_load, 250);
    assert_int_equal(st.initials_accepted, 50);
    qk_pair_free(&p);
}

/* QK_RETRY_NEVER: past max_handshakes the Initials are dropped, no Retry. */
static void test_flood_retry_never_drops(void **state)
{
    (void)state;
    qk_pair p;
    uint64_t rng = 12;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.max_connections = 1000;
    p.scfg.max_handshakes = 10;
    p.scfg.retry = QK_RETRY_NEVER;
    start_server_only(&p);
    spoof_flood(&p, 50, true, &rng);
    assert_int_equal(qk_endpoint_conn_count(p.server), 10);
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.retry_sent, 0);
    assert_int_equal(st.drops_handshakes, 40);
    qk_pair_free(&p);
}

/* Half-open connections leave at the handshake timeout and free the slots. */
static void test_handshake_timeout_frees_slots(void **state)
{
    (void)state;
    qk_pair p;
    uint64_t rng = 13;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.max_handshakes = 5;
    p.scfg.handshake_timeout_ns = 2 * QK_NS_PER_S;
    start_server_only(&p);
    spoof_flood(&p, 5, true, &rng);
    assert_int_equal(qk_endpoint_conn_count(p.server), 5);
    qk_time t = qk_endpoint_next_timeout(p.server);
    assert_true(t != QK_TIME_INFINITE);
    p.now += 3 * QK_NS_PER_S;
    qk_endpoint_on_timeout(p.server, p.now);
    qk_event ev;
    while (qk_endpoint_poll_event(p.server, &ev)) {
    }
    assert_int_equal(qk_endpoint_conn_count(p.server), 0);
    qk_endpoint_stats st = server_stats(&p);
    assert_int_equal(st.handshakes_now, 0);
    spoof_flood(&p, 5, true, &rng);
    assert_int_equal(qk_endpoint_conn_count(p.server), 5); /* admitted again, no Retry */
    st = server_stats(&p);
    assert_int_equal(st.retry_sent, 0);
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_forced),
        cmocka_unit_test(test_retry_token_expired),
        cmocka_unit_test(test_token_forged_or_moved),
        cmocka_unit_test(test_new_token_skips_retry),
        cmocka_unit_test(test_vn_for_unknown_version),
        cmocka_unit_test(test_client_fails_on_vn),
        cmocka_unit_test(test_vn_listing_our_version_ignored),
        cmocka_unit_test(test_vn_long_list_reason_whole),
        cmocka_unit_test(test_quic_v2_handshake),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_cids_issued_and_replaced),
        cmocka_unit_test(test_retire_prior_to),
        cmocka_unit_test(test_late_packet_for_retired_cid),
        cmocka_unit_test(test_1rtt_before_finished_is_held),
        cmocka_unit_test(test_reset_after_server_restart),
        cmocka_unit_test(test_reset_needs_same_key),
        cmocka_unit_test(test_reset_to_known_cid),
        cmocka_unit_test(test_reset_size_and_rate),
        cmocka_unit_test(test_spoofed_initial_flood),
        cmocka_unit_test(test_flood_answered_with_retry),
        cmocka_unit_test(test_refused_at_max_connections),
        cmocka_unit_test(test_flood_default_limits),
        cmocka_unit_test(test_flood_retry_never_drops),
        cmocka_unit_test(test_handshake_timeout_frees_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
