/* SPDX-License-Identifier: MIT */
/* The DNS-carrier QUIC profile (docs/dns.md): qk_config.min_datagram_bytes
 * relaxes RFC 9000 §14's 1200-byte minimum so that a client can send
 * 140-byte datagrams (one DNS query name each), and counts small datagrams
 * as 1200 bytes toward the §8.1 anti-amplification budget so the server's
 * first flight is not stuck behind it. Without the setting nothing changes. */
#include "qk_pair.h"
#include "qk_test.h"
#include <string.h>

#define CLIENT_MAX 140 /* a default --max-qname-len query */
#define SERVER_MAX 900 /* one TXT answer in a 1232-byte EDNS response */

typedef struct sizes {
    size_t max_up, max_down;
    uint64_t n_up;
} sizes;

static bool size_filter(void *ctx, bool to_server, uint64_t idx, uint8_t *data, size_t *len)
{
    sizes *s = ctx;
    (void)idx;
    (void)data;
    if (to_server) {
        if (*len > s->max_up) s->max_up = *len;
        s->n_up++;
    } else if (*len > s->max_down) {
        s->max_down = *len;
    }
    return true;
}

static void profile(qk_pair *p, sizes *s, bool server_profile)
{
    assert_int_equal(qk_pair_init(p, 50 * QK_NS_PER_MS), 0);
    p->ccfg.min_datagram_bytes = 100;
    p->ccfg.max_udp_payload_bytes = CLIENT_MAX;
    if (server_profile) {
        p->scfg.min_datagram_bytes = 100;
        p->scfg.max_udp_payload_bytes = SERVER_MAX;
    }
    memset(s, 0, sizeof *s);
    p->filter = size_filter;
    p->filter_ctx = s;
}

static void test_config_check(void **state)
{
    (void)state;
    qk_config c;
    qk_config_default(&c);
    c.rng = qk_test_rng;
    c.alpn[0] = "x";
    c.alpn_count = 1;
    c.max_udp_payload_bytes = CLIENT_MAX;
    assert_int_equal(qk_config_check(&c, NULL, 0), QK_ERR_CONFIG); /* RFC 9000 §14 */
    assert_int_equal(qk_config_min_datagram_bytes(&c), 1200);
    c.min_datagram_bytes = 100;
    assert_int_equal(qk_config_check(&c, NULL, 0), 0);
    assert_int_equal(qk_config_min_datagram_bytes(&c), 100);
    c.min_datagram_bytes = 20;
    assert_int_equal(qk_config_check(&c, NULL, 0), QK_ERR_CONFIG);
    c.min_datagram_bytes = 1300;
    assert_int_equal(qk_config_check(&c, NULL, 0), QK_ERR_CONFIG);
}

/* Small datagrams both ways; the handshake completes in a few round trips
 * (an amplification stall would wait for the client's PTO, >= 1 s here). */
static void test_handshake_small_datagrams(void **state)
{
    (void)state;
    qk_pair p;
    sizes s;
    profile(&p, &s, true);
    assert_int_equal(qk_pair_start(&p), 0);
    qk_time t0 = p.now;
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    qk_time took = p.now - t0;
    fprintf(stderr, "handshake: %.0f ms, %llu datagrams up, largest %zu up / %zu down\n",
            (double)took / 1e6, (unsigned long long)s.n_up, s.max_up, s.max_down);
    assert_true(took < 600 * QK_NS_PER_MS); /* 100 ms RTT: ~4 RTT at most */
    assert_true(s.max_up <= CLIENT_MAX);
    assert_true(s.max_down <= SERVER_MAX);
    assert_true(s.n_up >= 3); /* the ClientHello needed several datagrams */
    qk_conn_stats st;
    qk_conn_stats_get(p.cconn, &st);
    assert_int_equal(st.pmtu_probes_sent, 0); /* PMTUD off below 1200 */
    qk_pair_free(&p);
}

/* A server without the profile drops the client's 140-byte Initials
 * (RFC 9000 §14.1), so nothing happens. */
static void test_server_without_profile_drops(void **state)
{
    (void)state;
    qk_pair p;
    sizes s;
    profile(&p, &s, false);
    assert_int_equal(qk_pair_start(&p), 0);
    assert_false(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 2 * QK_NS_PER_S));
    assert_null(p.sconn);
    assert_int_equal(s.max_down, 0);
    qk_pair_free(&p);
}

typedef struct xfer {
    size_t total, written, read;
    uint64_t sid;
    bool opened, fin, mismatch;
} xfer;

static bool download_done(qk_pair *p, void *ctx)
{
    xfer *x = ctx;
    if (!p->cconn || !qk_conn_established(p->cconn)) return false;
    if (!x->opened) {
        assert_int_equal(qk_pair_request_download(p, &x->sid), 0);
        x->opened = true;
    }
    if (p->sconn) {
        qk_pair_read_request(p->sconn, x->sid);
        qk_pair_write_pattern(p->sconn, x->sid, x->total, &x->written);
    }
    if (qk_pair_read_pattern(p->cconn, x->sid, &x->read, &x->mismatch)) x->fin = true;
    qk_pair_flush(p);
    return x->fin;
}

static void test_download_small_datagrams(void **state)
{
    (void)state;
    qk_pair p;
    sizes s;
    profile(&p, &s, true);
    xfer x = {.total = 512 << 10};
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, download_done, &x, p.now + 20 * QK_NS_PER_S));
    assert_false(x.mismatch);
    assert_int_equal(x.read, x.total);
    assert_true(s.max_up <= CLIENT_MAX);
    assert_true(s.max_down <= SERVER_MAX);
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_check),
        cmocka_unit_test(test_handshake_small_datagrams),
        cmocka_unit_test(test_server_without_profile_drops),
        cmocka_unit_test(test_download_small_datagrams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
