/* SPDX-License-Identifier: MIT */
/* covers: src/dns/server.c src/dns/carrier.c */
/* The DNS carrier (src/dns/carrier.c, server.c): base32, datagram sizes,
 * query -> server -> answer -> client round trips, mixed-case names,
 * patience, duplicates (resolver retransmits), other query types, rate
 * limit, packing. */
#include "dns/carrier.h"
#include "qk_test.h"
#include <ctype.h>
#include <netinet/in.h>
#include <string.h>

#define DOMAIN "t.example.com"
#define MS     QK_NS_PER_MS

static void test_base32(void **state)
{
    (void)state;
    const uint8_t in[] = "foobar";
    char enc[16];
    uint8_t out[16];
    qk_base32_encode(in, 6, enc);
    assert_int_equal(qk_base32_len(6), 10);
    assert_memory_equal(enc, "mzxw6ytboi", 10); /* RFC 4648 §10, lower case, no padding */
    assert_int_equal(qk_base32_decode("MZXW6ytBOI", 10, out, sizeof out), 6);
    assert_memory_equal(out, in, 6);
    assert_int_equal(qk_base32_decode("mzxw6yt!oi", 10, out, sizeof out),
                     QK_ERR_PROTOCOL_VIOLATION);
    assert_int_equal(qk_base32_decode("mzxw6ytboj", 10, out, sizeof out),
                     QK_ERR_PROTOCOL_VIOLATION); /* stray low bits */
    assert_int_equal(qk_base32_decode("mzxw6ytboi", 10, out, 5), QK_ERR_BUFFER_TOO_SMALL);
    uint64_t rng = 7;
    for (size_t n = 0; n < 150; n++) {
        uint8_t b[150], back[150];
        char t[250];
        for (size_t i = 0; i < n; i++) b[i] = (uint8_t)qk_test_rand64(&rng);
        qk_base32_encode(b, n, t);
        assert_int_equal(qk_base32_decode(t, qk_base32_len(n), back, sizeof back), n);
        assert_memory_equal(back, b, n);
    }
}

static void test_sizes(void **state)
{
    (void)state;
    qk_dns_client c;
    assert_int_equal(qk_dns_client_init(&c, DOMAIN, 0, 1), 0);
    assert_int_equal(c.max_dgram, 144);
    assert_int_equal(qk_dns_client_init(&c, DOMAIN, 101, 1), 0);
    assert_int_equal(c.max_dgram, 50);
    assert_int_equal(qk_dns_client_init(&c, DOMAIN, 20, 1), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_dns_client_init(&c, "a..b", 0, 1), QK_ERR_INVALID_ARG);
    /* every size up to the maximum makes a name of at most the limit */
    for (size_t lim = 60; lim <= 253; lim++) {
        if (qk_dns_client_init(&c, DOMAIN, lim, 0xdeadbeef)) continue;
        uint8_t dg[200] = {0}, q[600];
        int n = qk_dns_client_query(&c, 1, dg, c.max_dgram, NULL, q, sizeof q);
        assert_true(n > 0);
        qk_dns_msg m;
        assert_int_equal(qk_dns_decode(q, (size_t)n, &m), 0);
        assert_true(m.qname.len - 2 <= lim);
        assert_int_equal(qk_dns_client_query(&c, 1, dg, c.max_dgram + 1, NULL, q, sizeof q),
                         QK_ERR_TOO_LARGE);
    }
}

/* The public API (quack/dns.h): heap client, sizes and domain checks. */
static void test_public_api(void **state)
{
    (void)state;
    assert_int_equal(qk_dns_domain_check(DOMAIN), 0);
    assert_int_equal(qk_dns_domain_check("a..b"), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_dns_domain_check(""), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_dns_domain_check(NULL), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_dns_datagram_bytes(DOMAIN, 0), 144);
    assert_int_equal(qk_dns_datagram_bytes(DOMAIN, 101), 50);
    assert_int_equal(qk_dns_datagram_bytes(DOMAIN, 59), QK_ERR_INVALID_ARG);
    assert_int_equal(qk_dns_datagram_bytes(DOMAIN, 254), QK_ERR_INVALID_ARG);
    qk_dns_client *c = NULL;
    assert_int_equal(qk_dns_client_new("a..b", 0, 1, &c), QK_ERR_INVALID_ARG);
    assert_null(c);
    assert_int_equal(qk_dns_client_new(DOMAIN, 101, 1, &c), 0);
    assert_int_equal(qk_dns_client_max_datagram(c), 50);
    uint8_t dg[51] = {0}, q[600];
    assert_true(qk_dns_client_query(c, 1, dg, 50, NULL, q, sizeof q) > 0);
    assert_int_equal(qk_dns_client_query(c, 1, dg, 51, NULL, q, sizeof q), QK_ERR_TOO_LARGE);
    qk_dns_client_del(c);
    qk_dns_client_del(NULL);
    qk_addr a;
    uint32_t id = 0;
    qk_dns_client_addr(0x01020304, &a);
    assert_int_equal(qk_dns_addr_client(&a, &id), 0);
    assert_int_equal(id, 0x01020304);
}

typedef struct got {
    uint8_t data[8][1000];
    size_t len[8];
    int n;
} got;

static void on_dgram(void *ctx, const uint8_t *d, size_t len)
{
    got *g = ctx;
    if (g->n < 8) {
        memcpy(g->data[g->n], d, len);
        g->len[g->n] = len;
    }
    g->n++;
}

typedef struct rig {
    qk_dns_client c;
    qk_dns_server *s;
    qk_addr resolver;
} rig;

static void rig_init(rig *r, const qk_dns_server_config *cfg)
{
    qk_dns_server_config d = {.domain = DOMAIN, .patience_ns = 200 * MS};
    assert_int_equal(qk_dns_client_init(&r->c, DOMAIN, 0, 0x0304), 0);
    assert_int_equal(qk_dns_server_new(cfg ? cfg : &d, &r->s), 0);
    memset(&r->resolver, 0, sizeof r->resolver);
    r->resolver.ss.ss_family = AF_INET;
    r->resolver.len = sizeof(struct sockaddr_in);
}

/* Randomise the case of the name in a query (what 0x20 resolvers do). */
static void mix_case(uint8_t *q, size_t len)
{
    for (size_t i = 12; i < len; i++)
        if (isalpha(q[i]) && (i & 1)) q[i] = (uint8_t)toupper(q[i]);
}

static void test_round_trip(void **state)
{
    (void)state;
    rig r;
    rig_init(&r, NULL);
    uint8_t dg[144], q[600], resp[1500];
    for (size_t i = 0; i < sizeof dg; i++) dg[i] = (uint8_t)(i * 3 + 1);
    int n = qk_dns_client_query(&r.c, 0x4242, dg, sizeof dg, NULL, q, sizeof q);
    assert_true(n > 0);
    mix_case(q, (size_t)n);
    qk_dns_upstream up;
    assert_int_equal(qk_dns_server_on_query(r.s, q, (size_t)n, &r.resolver, 0, &up), 1);
    assert_int_equal(up.len, sizeof dg);
    assert_memory_equal(up.data, dg, sizeof dg);
    uint32_t id;
    assert_int_equal(qk_dns_addr_client(&up.client, &id), 0);
    assert_int_equal(id, 0x0304);
    /* held: nothing to send until data or patience */
    qk_addr to;
    assert_int_equal(qk_dns_server_next_response(r.s, 1 * MS, resp, sizeof resp, &to), 0);
    assert_int_equal(qk_dns_server_next_timeout(r.s), 200 * MS);
    assert_true(qk_dns_server_wants_data(r.s));
    /* 900 + 900 + 10: the first answer holds one, the second the other two */
    uint8_t big[900], small[10];
    memset(big, 0xaa, sizeof big);
    memset(small, 0x55, sizeof small);
    assert_int_equal(qk_dns_server_push(r.s, &up.client, big, sizeof big), 0);
    assert_int_equal(qk_dns_server_push(r.s, &up.client, big, sizeof big), 0);
    assert_int_equal(qk_dns_server_push(r.s, &up.client, small, sizeof small), 0);
    assert_int_equal(qk_dns_server_push(r.s, &up.client, big, 901), QK_ERR_TOO_LARGE);
    size_t rl = qk_dns_server_next_response(r.s, 2 * MS, resp, sizeof resp, &to);
    assert_true(rl > 0 && rl <= QK_DNS_EDNS_BYTES);
    assert_int_equal(resp[0], 0x42); /* the query's ID */
    got g = {0};
    assert_int_equal(qk_dns_client_response(&r.c, resp, rl, on_dgram, &g), 1);
    assert_int_equal(g.len[0], 900);
    assert_memory_equal(g.data[0], big, 900);
    /* a poll takes the other 900 and the 10 in one answer */
    uint8_t nonce[4] = {1, 2, 3, 4};
    n = qk_dns_client_query(&r.c, 7, NULL, 0, nonce, q, sizeof q);
    assert_int_equal(qk_dns_server_on_query(r.s, q, (size_t)n, &r.resolver, 3 * MS, &up), 0);
    rl = qk_dns_server_next_response(r.s, 3 * MS, resp, sizeof resp, &to);
    memset(&g, 0, sizeof g);
    assert_int_equal(qk_dns_client_response(&r.c, resp, rl, on_dgram, &g), 2);
    /* a poll with nothing queued waits out its patience, then gets an empty answer */
    nonce[0] = 9;
    n = qk_dns_client_query(&r.c, 8, NULL, 0, nonce, q, sizeof q);
    qk_dns_server_on_query(r.s, q, (size_t)n, &r.resolver, 10 * MS, &up);
    assert_int_equal(qk_dns_server_next_response(r.s, 209 * MS, resp, sizeof resp, &to), 0);
    rl = qk_dns_server_next_response(r.s, 210 * MS, resp, sizeof resp, &to);
    assert_true(rl > 0);
    assert_int_equal(qk_dns_client_response(&r.c, resp, rl, on_dgram, NULL), 0);
    qk_dns_server_stats st;
    qk_dns_server_get_stats(r.s, &st);
    assert_int_equal(st.answers_data, 2);
    assert_int_equal(st.answers_empty, 1);
    assert_int_equal(st.dgrams_down, 3);
    /* another client's answer is not ours */
    qk_dns_client other;
    qk_dns_client_init(&other, DOMAIN, 0, 99);
    assert_int_equal(qk_dns_client_response(&other, resp, rl, on_dgram, NULL), QK_ERR_IGNORE);
    qk_dns_server_del(r.s);
}

/* Only a client with queries held asks for data: a known client with none
 * (gone, or idle) must not, or the caller pulls datagrams that overflow the
 * queue of whichever client the endpoint serves next. */
static void test_wants_data(void **state)
{
    (void)state;
    rig r;
    rig_init(&r, NULL);
    uint8_t dg[100] = {0}, q[600], resp[1500];
    qk_dns_upstream up;
    qk_addr to;
    int n = qk_dns_client_query(&r.c, 1, dg, sizeof dg, NULL, q, sizeof q);
    assert_int_equal(qk_dns_server_on_query(r.s, q, (size_t)n, &r.resolver, 0, &up), 1);
    assert_true(qk_dns_server_wants_data(r.s));
    /* three datagrams queued for one held query: enough (one, plus two to pack) */
    for (int i = 0; i < 3; i++) {
        assert_true(qk_dns_server_wants_data(r.s));
        assert_int_equal(qk_dns_server_push(r.s, &up.client, dg, sizeof dg), 0);
    }
    assert_false(qk_dns_server_wants_data(r.s));
    /* answered: no query held, so no want, even with the queue empty */
    assert_true(qk_dns_server_next_response(r.s, 1 * MS, resp, sizeof resp, &to) > 0);
    assert_int_equal(qk_dns_server_next_response(r.s, 1 * MS, resp, sizeof resp, &to), 0);
    assert_false(qk_dns_server_wants_data(r.s));
    qk_dns_server_del(r.s);
}

static void test_duplicates(void **state)
{
    (void)state;
    rig r;
    rig_init(&r, NULL);
    uint8_t dg[50] = {1}, q[600], q2[600], resp[1500];
    int n = qk_dns_client_query(&r.c, 0x1111, dg, sizeof dg, NULL, q, sizeof q);
    memcpy(q2, q, (size_t)n);
    q2[0] = 0x22; /* retransmitted with a new ID (and port) */
    mix_case(q2, (size_t)n);
    qk_dns_upstream up;
    assert_int_equal(qk_dns_server_on_query(r.s, q, (size_t)n, &r.resolver, 0, &up), 1);
    qk_addr client = up.client;
    assert_int_equal(qk_dns_server_on_query(r.s, q2, (size_t)n, &r.resolver, 1 * MS, &up), 0);
    uint8_t data[300];
    memset(data, 7, sizeof data);
    qk_dns_server_push(r.s, &client, data, sizeof data);
    qk_addr to;
    size_t rl = qk_dns_server_next_response(r.s, 2 * MS, resp, sizeof resp, &to);
    assert_int_equal(resp[0], 0x22); /* the newest copy is answered */
    assert_int_equal(qk_dns_server_next_response(r.s, 300 * MS, resp, sizeof resp, &to), 0);
    /* a third copy after the answer: the same data again (the answer may be lost) */
    q2[0] = 0x33;
    assert_int_equal(qk_dns_server_on_query(r.s, q2, (size_t)n, &r.resolver, 3 * MS, &up), 0);
    uint8_t resp2[1500];
    size_t rl2 = qk_dns_server_next_response(r.s, 3 * MS, resp2, sizeof resp2, &to);
    assert_int_equal(rl2, rl);
    assert_int_equal(resp2[0], 0x33);
    got g = {0};
    assert_int_equal(qk_dns_client_response(&r.c, resp2, rl2, on_dgram, &g), 1);
    assert_memory_equal(g.data[0], data, sizeof data);
    qk_dns_server_stats st;
    qk_dns_server_get_stats(r.s, &st);
    assert_int_equal(st.duplicates, 2);
    assert_int_equal(st.replayed, 1);
    assert_int_equal(st.data_queries, 1); /* delivered upstream once */
    qk_dns_server_del(r.s);
}

/* A retransmission arriving after 1500 other queries (a quarter second at
 * full speed) still gets the data of the answer it repeats. */
static void test_duplicate_late(void **state)
{
    (void)state;
    qk_dns_server_config cfg = {.domain = DOMAIN, .patience_ns = 1, .rate_qps = 1000000};
    rig r;
    rig_init(&r, &cfg);
    uint8_t dg[50] = {1}, q[600], first[600], resp[1500], want[1500];
    qk_dns_upstream up;
    qk_addr to;
    int fn = qk_dns_client_query(&r.c, 0x1111, dg, sizeof dg, NULL, first, sizeof first);
    assert_int_equal(qk_dns_server_on_query(r.s, first, (size_t)fn, &r.resolver, 0, &up), 1);
    uint8_t data[300];
    memset(data, 9, sizeof data);
    assert_int_equal(qk_dns_server_push(r.s, &up.client, data, sizeof data), 0);
    size_t wl = qk_dns_server_next_response(r.s, 0, want, sizeof want, &to);
    assert_true(wl > 0);
    for (uint32_t i = 0; i < 1500; i++) { /* polls, answered empty */
        uint8_t nonce[4] = {(uint8_t)i, (uint8_t)(i >> 8), 1, 2};
        int n = qk_dns_client_query(&r.c, 1, NULL, 0, nonce, q, sizeof q);
        qk_dns_server_on_query(r.s, q, (size_t)n, &r.resolver, 0, &up);
        while (qk_dns_server_next_response(r.s, 1, resp, sizeof resp, &to)) {
        }
    }
    assert_int_equal(qk_dns_server_on_query(r.s, first, (size_t)fn, &r.resolver, 2, &up), 0);
    assert_int_equal(qk_dns_server_next_response(r.s, 2, resp, sizeof resp, &to), wl);
    assert_memory_equal(resp, want, wl);
    qk_dns_server_stats st;
    qk_dns_server_get_stats(r.s, &st);
    assert_int_equal(st.replayed, 1);
    qk_dns_server_del(r.s);
}

/* A query for name/type; returns the answer's rcode and answer count. */
static void ask(rig *r, const char *name, uint16_t type, int *rcode, int *an, int *ns)
{
    qk_dns_name nm;
    assert_int_equal(qk_dns_name_from_text(name, &nm), 0);
    uint8_t q[600], resp[1500];
    qk_wr w = qk_wr_make(q, sizeof q);
    qk_dns_put_header(&w, 5, QK_DNS_FLAG_RD, 1, 0, 0, 1);
    qk_dns_put_question(&w, &nm, type, QK_DNS_CLASS_IN);
    qk_dns_put_opt(&w, 1232);
    qk_dns_upstream up;
    assert_int_equal(qk_dns_server_on_query(r->s, q, (size_t)(w.p - q), &r->resolver, 0, &up), 0);
    qk_addr to;
    size_t rl = qk_dns_server_next_response(r->s, 0, resp, sizeof resp, &to);
    assert_true(rl > 0);
    qk_dns_msg m;
    assert_int_equal(qk_dns_decode(resp, rl, &m), 0);
    assert_true(m.flags & QK_DNS_FLAG_AA);
    *rcode = QK_DNS_RCODE(m.flags);
    *an = (int)m.ancount;
    *ns = (int)m.nscount;
}

static void test_other_queries(void **state)
{
    (void)state;
    rig r;
    rig_init(&r, NULL);
    int rc, an, ns;
    ask(&r, "T.Example.Com", QK_DNS_TYPE_SOA, &rc, &an, &ns);
    assert_true(rc == 0 && an == 1 && ns == 0);
    ask(&r, "t.example.com", QK_DNS_TYPE_NS, &rc, &an, &ns);
    assert_true(rc == 0 && an == 1);
    ask(&r, "t.example.com", QK_DNS_TYPE_A, &rc, &an, &ns); /* NODATA + SOA */
    assert_true(rc == 0 && an == 0 && ns == 1);
    ask(&r, "abc.t.example.com", QK_DNS_TYPE_A, &rc, &an, &ns);
    assert_true(rc == 0 && an == 0 && ns == 1); /* never NXDOMAIN under the zone (RFC 8020) */
    ask(&r, "x!y.t.example.com", QK_DNS_TYPE_TXT, &rc, &an, &ns);
    assert_true(rc == 0 && an == 0);
    ask(&r, "example.org", QK_DNS_TYPE_TXT, &rc, &an, &ns);
    assert_int_equal(rc, QK_DNS_RCODE_REFUSED);
    /* a malformed query gets FORMERR; a short one is dropped */
    uint8_t bad[20] = {0, 9, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 63, 'a'};
    qk_dns_upstream up;
    uint8_t resp[600];
    qk_addr to;
    assert_int_equal(qk_dns_server_on_query(r.s, bad, sizeof bad, &r.resolver, 0, &up), 0);
    size_t rl = qk_dns_server_next_response(r.s, 0, resp, sizeof resp, &to);
    assert_true(rl >= 12 && QK_DNS_RCODE(resp[3]) == QK_DNS_RCODE_FORMERR);
    assert_int_equal(qk_dns_server_on_query(r.s, bad, 5, &r.resolver, 0, &up), 0);
    assert_int_equal(qk_dns_server_next_response(r.s, 0, resp, sizeof resp, &to), 0);
    qk_dns_server_del(r.s);
}

static void test_rate_limit(void **state)
{
    (void)state;
    qk_dns_server_config cfg = {.domain = DOMAIN, .rate_qps = 10, .rate_burst = 5};
    rig r;
    rig_init(&r, &cfg);
    uint8_t q[600], nonce[4] = {0};
    qk_dns_upstream up;
    for (int i = 0; i < 8; i++) {
        nonce[0] = (uint8_t)i;
        int n = qk_dns_client_query(&r.c, 1, NULL, 0, nonce, q, sizeof q);
        qk_dns_server_on_query(r.s, q, (size_t)n, &r.resolver, 0, &up);
    }
    qk_dns_server_stats st;
    qk_dns_server_get_stats(r.s, &st);
    assert_int_equal(st.polls, 5);
    assert_int_equal(st.rate_limited, 3);
    nonce[0] = 100; /* 100 ms later one more token */
    int n = qk_dns_client_query(&r.c, 1, NULL, 0, nonce, q, sizeof q);
    qk_dns_server_on_query(r.s, q, (size_t)n, &r.resolver, 100 * MS, &up);
    qk_dns_server_get_stats(r.s, &st);
    assert_int_equal(st.polls, 6);
    qk_dns_server_del(r.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base32),         cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_public_api),     cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_wants_data),     cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_duplicate_late), cmocka_unit_test(test_other_queries),
        cmocka_unit_test(test_rate_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
