/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/session.c */
/* Session resumption and 0-RTT (RFC 9001 §4.5-4.6, RFC 9000 §7.4.1) between
 * two quack endpoints on the qk_pair path: a request sent in 0-RTT packets
 * and accepted, a replayed 0-RTT flight refused (single-use tickets), and a
 * rejected 0-RTT attempt that falls back to 1-RTT with the bytes intact. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qk_pair.h"
#include "qk_test.h"
#include "transport/conn/conn.h"

#define REQ_BYTES 20000 /* more than the first flight's window: 0-RTT, then 1-RTT */

/* A connection's counters now. */
static qk_conn_stats stats_of(const qk_conn *c)
{
    qk_conn_stats st;
    qk_conn_stats_get(c, &st);
    return st;
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

/* A first, full handshake; the session to resume goes into sess. */
static long first_connection(qk_pair *p, uint8_t *sess, size_t cap)
{
    p->scfg.session_tickets = true; /* off by default */
    assert_int_equal(qk_pair_start(p), 0);
    assert_true(qk_pair_run_until(p, qk_pair_confirmed, NULL, p->now + 2 * QK_NS_PER_S));
    assert_true(qk_pair_run_until(p, got_ticket, NULL, p->now + 2 * QK_NS_PER_S));
    qk_conn_stats st = stats_of(p->cconn);
    assert_int_equal(st.resumed, 0);
    assert_int_equal(st.zerortt, 0);
    long n = qk_conn_session_get(p->cconn, sess, cap);
    assert_true(n > 0);
    assert_int_equal(qk_conn_session_get(p->cconn, sess, 10), QK_ERR_TOO_LARGE);
    qk_conn_close(p->cconn, 0, "done");
    qk_pair_flush(p);
    assert_true(qk_pair_run_until(p, qk_pair_client_gone, NULL, p->now + 5 * QK_NS_PER_S));
    assert_true(qk_pair_run_until(p, server_gone, NULL, p->now + 5 * QK_NS_PER_S));
    p->ncev = p->nsev = 0;
    return n;
}

/* Second connection: the request is written before any packet leaves (early)
 * or, without 0-RTT, once the handshake is confirmed. */
static uint64_t resume(qk_pair *p, const uint8_t *sess, long len, size_t *written, bool early)
{
    qk_connect_opts o = {.session = sess, .session_len = (size_t)len};
    assert_int_equal(
        qk_connect_ex(p->client, &p->caddr, &p->saddr, "quack.test", &o, p->now, &p->cconn), 0);
    uint64_t sid;
    if (!early) {
        /* No remembered limits apply: no stream before the handshake. */
        assert_int_equal(qk_stream_open(p->cconn, true, &sid), QK_ERR_STREAM_LIMIT);
        qk_pair_flush(p);
        assert_true(qk_pair_run_until(p, qk_pair_confirmed, NULL, p->now + 2 * QK_NS_PER_S));
    }
    assert_int_equal(qk_stream_open(p->cconn, true, &sid), 0);
    *written = 0;
    qk_pair_write_pattern(p->cconn, sid, REQ_BYTES, written);
    qk_pair_flush(p);
    return sid;
}

/* Run until the server has read the whole request; false on a wrong byte. */
static bool read_request(qk_pair *p, uint64_t sid, size_t written)
{
    size_t r = 0;
    bool bad = false, fin = false;
    qk_time end = p->now + 5 * QK_NS_PER_S;
    while (p->now < end && !fin && qk_pair_step(p)) {
        if (p->sconn) fin = qk_pair_read_pattern(p->sconn, sid, &r, &bad);
        if (p->cconn) qk_pair_write_pattern(p->cconn, sid, REQ_BYTES, &written);
    }
    if (getenv("QK_PAIR_DEBUG") && p->sconn) {
        qk_conn_stats ss = stats_of(p->sconn);
        fprintf(stderr, "server: state %d hs %d pkts_rx %llu 0rtt_rx %llu read %zu fin %d bad %d\n",
                (int)p->sconn->state, p->sconn->handshake_complete,
                (unsigned long long)ss.pkts_received, (unsigned long long)ss.zerortt_pkts_received,
                r, fin, bad);
    }
    return fin && !bad && r == REQ_BYTES;
}

/* A pair whose server encrypts tickets with new keys *tk (so that a
 * restarted server can still read them; the caller frees them), after a
 * first connection that stored its session in sess; returns its length.
 * lifetime_ns: the tickets' lifetime (0: the default). */
static long first_connection_with_keys(qk_pair *p, qk_ticket_keys **tk, uint8_t *sess, size_t cap,
                                       qk_time lifetime_ns)
{
    int err;
    *tk = qk_ticket_keys_new(lifetime_ns, 0, &err);
    assert_non_null(*tk);
    assert_int_equal(qk_pair_init(p, 10 * QK_NS_PER_MS), 0);
    p->scfg.ticket_keys = *tk;
    return first_connection(p, sess, cap);
}

/* A new server process with p->scfg (changed by the caller). */
static void restart_server(qk_pair *p)
{
    qk_endpoint_del(p->server);
    p->server = qk_endpoint_new(&p->scfg);
    assert_non_null(p->server);
}

/* Index of the first server event of a type, or SIZE_MAX. */
static size_t server_event(const qk_pair *p, qk_event_type t)
{
    for (size_t i = 0; i < p->nsev; i++)
        if (p->sev[i].type == t) return i;
    return SIZE_MAX;
}

/* Keeps the client's datagrams of the resumed connection (its 0-RTT flight). */
typedef struct capture {
    bool on;
    size_t n;
    size_t len[8];
    uint8_t data[8][1500];
} capture;

static bool capture_filter(void *ctx, bool to_server, uint64_t idx, uint8_t *data, size_t *len)
{
    (void)idx;
    capture *c = ctx;
    if (c->on && to_server && c->n < 8) {
        memcpy(c->data[c->n], data, *len);
        c->len[c->n++] = *len;
    }
    return true;
}

static void test_resume_0rtt_accepted(void **state)
{
    (void)state;
    qk_pair p;
    uint8_t sess[8192];
    capture cap = {0};
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.filter = capture_filter;
    p.filter_ctx = &cap;
    long n = first_connection(&p, sess, sizeof sess);

    cap.on = true;
    size_t w;
    uint64_t sid = resume(&p, sess, n, &w, true);
    cap.on = false;
    qk_conn_stats cs = stats_of(p.cconn);
    assert_true(cs.zerortt_pkts_sent > 0); /* the request left before the handshake */
    assert_true(cap.n > 0);
    assert_true(read_request(&p, sid, w));
    cs = stats_of(p.cconn);
    assert_int_equal(cs.resumed, 1);
    assert_int_equal(cs.zerortt, 1);
    qk_conn_stats ss = stats_of(p.sconn);
    assert_int_equal(ss.resumed, 1);
    assert_int_equal(ss.zerortt, 1);
    assert_true(ss.zerortt_pkts_received > 0);
    /* The server saw the stream before the handshake completed: 0-RTT. */
    assert_true(server_event(&p, QK_EV_STREAM_OPENED) < server_event(&p, QK_EV_CONNECTED));
    /* ... and says so: replayable data (RFC 9001 §9.2). */
    assert_true(p.sev[server_event(&p, QK_EV_STREAM_OPENED)].zero_rtt);
    assert_true(p.sev[server_event(&p, QK_EV_STREAM_READABLE)].zero_rtt);
    assert_int_equal(qk_stream_is_0rtt(p.sconn, sid), 1);
    /* A stream opened after the handshake is not. */
    uint64_t sid2;
    assert_int_equal(qk_stream_open(p.cconn, true, &sid2), 0);
    assert_int_equal(qk_stream_write(p.cconn, sid2, (const uint8_t *)"x", 1, true), 1);
    p.nsev = 0;
    qk_pair_flush(&p);
    for (int i = 0; i < 200 && server_event(&p, QK_EV_STREAM_READABLE) == SIZE_MAX; i++)
        qk_pair_step(&p);
    assert_true(server_event(&p, QK_EV_STREAM_READABLE) != SIZE_MAX);
    assert_false(p.sev[server_event(&p, QK_EV_STREAM_OPENED)].zero_rtt);
    assert_false(p.sev[server_event(&p, QK_EV_STREAM_READABLE)].zero_rtt);
    assert_int_equal(qk_stream_is_0rtt(p.sconn, sid2), 0);
    assert_int_equal(qk_stream_is_0rtt(p.sconn, 1001), QK_ERR_NOT_FOUND);

    /* RFC 9001 §9.2, RFC 8446 §8: the same flight again, from another port,
     * must not be accepted a second time (single-use ticket). */
    size_t before = p.nsev;
    qk_addr other;
    qk_pair_set_addr(&other, 1, 40001);
    for (size_t i = 0; i < cap.n; i++) {
        qk_datagram d = {.data = cap.data[i], .len = cap.len[i], .peer = other, .local = p.saddr};
        assert_int_equal(qk_endpoint_recv(p.server, &d, p.now), 0);
    }
    qk_pair_flush(&p);
    for (int i = 0; i < 20 && qk_pair_step(&p); i++) {
    }
    for (size_t i = before; i < p.nsev; i++) {
        assert_true(p.sev[i].type != QK_EV_STREAM_OPENED);
        assert_true(p.sev[i].type != QK_EV_STREAM_READABLE || p.sev[i].conn == p.sconn);
    }
    qk_pair_free(&p);
}

/* RFC 9001 §4.6.2: a server that resumes the session but refuses early data;
 * everything sent in 0-RTT is sent again in 1-RTT (RFC 9000 §17.2.3). */
static void test_0rtt_rejected_falls_back(void **state)
{
    (void)state;
    qk_ticket_keys *tk;
    qk_pair p;
    uint8_t sess[8192];
    long n = first_connection_with_keys(&p, &tk, sess, sizeof sess, 0);

    /* A new server process sharing the ticket keys, early data off. */
    p.scfg.early_data = false;
    restart_server(&p);
    size_t w;
    uint64_t sid = resume(&p, sess, n, &w, true);
    qk_conn_stats cs = stats_of(p.cconn);
    assert_true(cs.zerortt_pkts_sent > 0);
    assert_true(read_request(&p, sid, w));
    cs = stats_of(p.cconn);
    assert_int_equal(cs.resumed, 1);
    assert_int_equal(cs.zerortt, 2);
    qk_conn_stats ss = stats_of(p.sconn);
    assert_int_equal(ss.zerortt_pkts_received, 0);
    assert_true(ss.zerortt_pkts_dropped > 0);
    assert_true(server_event(&p, QK_EV_STREAM_OPENED) > server_event(&p, QK_EV_CONNECTED));
    /* Refused 0-RTT: everything came in 1-RTT, nothing is replayable. */
    assert_false(p.sev[server_event(&p, QK_EV_STREAM_OPENED)].zero_rtt);
    assert_int_equal(qk_stream_is_0rtt(p.sconn, sid), 0);
    qk_pair_free(&p);
    qk_ticket_keys_del(tk);
}

/* RFC 9000 §7.4.1: 0-RTT stays within the limits the server announced in
 * the connection that issued the ticket (here 3000 bytes of connection
 * credit), the rest goes after the handshake. */
static void test_0rtt_within_remembered_limits(void **state)
{
    (void)state;
    qk_pair p;
    uint8_t sess[8192];
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.scfg.initial_max_data_bytes = 3000;
    long n = first_connection(&p, sess, sizeof sess);
    size_t w;
    uint64_t sid = resume(&p, sess, n, &w, true);
    qk_conn_stats cs = stats_of(p.cconn);
    assert_true(cs.zerortt_pkts_sent > 0);
    assert_true(cs.stream_bytes_sent > 0);
    assert_true(cs.stream_bytes_sent <= 3000);
    assert_true(read_request(&p, sid, w));
    qk_pair_free(&p);
}

/* RFC 9000 §7.4.1: a server that accepts 0-RTT must not reduce the limits
 * it announced before; the client closes with PROTOCOL_VIOLATION. */
static void test_0rtt_reduced_limits_refused(void **state)
{
    (void)state;
    qk_ticket_keys *tk;
    qk_pair p;
    uint8_t sess[8192];
    long n = first_connection_with_keys(&p, &tk, sess, sizeof sess, 0);
    p.scfg.initial_max_data_bytes /= 2; /* same keys, early data on, less credit */
    restart_server(&p);
    size_t w;
    resume(&p, sess, n, &w, true);
    assert_true(qk_pair_run_until(&p, qk_pair_client_gone, NULL, p.now + 5 * QK_NS_PER_S));
    const qk_event *ev = qk_pair_client_closed(&p);
    assert_non_null(ev);
    assert_int_equal(ev->reason_err, QK_ERR_PROTOCOL_VIOLATION);
    qk_pair_free(&p);
    qk_ticket_keys_del(tk);
}

/* A client with early data off resumes in 1-RTT only. */
static void test_resume_without_early_data(void **state)
{
    (void)state;
    qk_pair p;
    uint8_t sess[8192];
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    long n = first_connection(&p, sess, sizeof sess);
    qk_endpoint_del(p.client);
    p.ccfg.early_data = false;
    p.client = qk_endpoint_new(&p.ccfg);
    size_t w;
    uint64_t sid = resume(&p, sess, n, &w, false);
    assert_true(read_request(&p, sid, w));
    qk_conn_stats cs = stats_of(p.cconn);
    assert_int_equal(cs.zerortt_pkts_sent, 0);
    assert_int_equal(cs.resumed, 1);
    assert_int_equal(cs.zerortt, 0);
    qk_pair_free(&p);
}

/* An expired ticket (lifetime 1 s; GnuTLS judges by the wall clock): the
 * client makes a full handshake instead of failing. With early data on,
 * GnuTLS leaves the expired PSK out of its ClientHello and then fails to set
 * early keys; qk_conn_new starts again without the session. This is also
 * what the fuzz/session seed corpus hit once its tickets were 6 h old. */
static void test_expired_ticket_full_handshake(void **state)
{
    (void)state;
    qk_pair p;
    qk_ticket_keys *tk;
    uint8_t sess[8192];
    long n = first_connection_with_keys(&p, &tk, sess, sizeof sess, QK_NS_PER_S);
    struct timespec wait = {.tv_sec = 2, .tv_nsec = 500000000};
    nanosleep(&wait, NULL);
    size_t w;
    uint64_t sid = resume(&p, sess, n, &w, false);
    assert_true(read_request(&p, sid, w));
    qk_conn_stats cs = stats_of(p.cconn);
    assert_int_equal(cs.session_fallbacks, 1);
    assert_int_equal(cs.resumed, 0);
    assert_int_equal(cs.zerortt_pkts_sent, 0);
    qk_pair_free(&p);
    qk_ticket_keys_del(tk);
}

/* Session data that is not ours is refused at qk_connect_ex. */
static void test_bad_session(void **state)
{
    (void)state;
    qk_pair p;
    assert_int_equal(qk_pair_init(&p, 10 * QK_NS_PER_MS), 0);
    p.client = qk_endpoint_new(&p.ccfg);
    uint8_t junk[64] = "QKS1";
    qk_connect_opts o = {.session = junk, .session_len = sizeof junk};
    qk_conn *c;
    assert_int_equal(qk_connect_ex(p.client, &p.caddr, &p.saddr, "quack.test", &o, p.now, &c),
                     QK_ERR_CONFIG);
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_0rtt_accepted),
        cmocka_unit_test(test_0rtt_rejected_falls_back),
        cmocka_unit_test(test_0rtt_within_remembered_limits),
        cmocka_unit_test(test_0rtt_reduced_limits_refused),
        cmocka_unit_test(test_resume_without_early_data),
        cmocka_unit_test(test_bad_session),
        cmocka_unit_test(test_expired_ticket_full_handshake),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
