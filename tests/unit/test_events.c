/* SPDX-License-Identifier: MIT */
/* covers: src/transport/conn/conn_api.c */
/* The events and contracts an embedding application relies on
 * (include/quack/quack.h), between two endpoints on the qk_pair path:
 * QK_EV_NEW_CONN and qk_conn_refuse (RFC 9000 §20.1), QK_EV_CONNECTED
 * before QK_EV_HANDSHAKE_CONFIRMED (RFC 9001 §4.1.1, §4.1.2),
 * QK_EV_STREAM_ACKED releasing qk_stream_write_ref memory, DATAGRAM
 * ACKED/LOST events and qk_conn_datagram_max_payload (RFC 9221), stream user
 * pointers, qk_endpoint_new_ex's reasons, and when a closed connection is
 * freed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk_pair.h"
#include "qk_test.h"

#define DELAY_NS (10 * QK_NS_PER_MS)

/* Step the pair until the deadline or done(p, ctx), handing every event of
 * both sides to on_ev (side 0 client, 1 server) at the time it was polled. */
typedef void (*ev_fn)(qk_pair *p, void *ctx, int side, const qk_event *ev);

static bool run_events(qk_pair *p, ev_fn on_ev, bool (*done)(qk_pair *, void *), void *ctx,
                       qk_time deadline)
{
    for (;;) {
        for (size_t i = 0; i < p->ncev; i++) on_ev(p, ctx, 0, &p->cev[i]);
        for (size_t i = 0; i < p->nsev; i++) on_ev(p, ctx, 1, &p->sev[i]);
        p->ncev = p->nsev = 0;
        if (done(p, ctx)) return true;
        /* Nothing in flight and no timer before the deadline: stop there
         * rather than jump to a far timer (the idle timeout). */
        qk_time tc = qk_endpoint_next_timeout(p->client), ts = qk_endpoint_next_timeout(p->server);
        if (!p->nq && (tc < ts ? tc : ts) > deadline) return false;
        if (p->now > deadline || !qk_pair_step(p)) return done(p, ctx);
    }
}

/* Deliver every datagram in flight to the server now, without polling its
 * events (qk_pair_step would). */
static void deliver_to_server(qk_pair *p)
{
    for (size_t i = 0; i < p->nq;) {
        qk_pair_pkt *k = &p->q[i];
        if (!k->to_server) {
            i++;
            continue;
        }
        if (k->at > p->now) p->now = k->at;
        qk_datagram d = {.data = k->data, .len = k->len, .peer = p->caddr, .local = p->saddr};
        assert_int_equal(qk_endpoint_recv(p->server, &d, p->now), 0);
        p->q[i] = p->q[--p->nq];
    }
}

/* ---- QK_EV_NEW_CONN, qk_conn_refuse ---- */

typedef struct accept_log {
    bool refuse;
    int server_first;         /* type of the server's first event */
    qk_conn *new_conn;        /* the connection NEW_CONN named */
    size_t new_conns, closed; /* server events */
    int refuse_rc, refuse_again_rc;
    bool client_closed, client_connected;
    qk_time client_closed_at;
    qk_event client_close;
} accept_log;

static void on_accept_ev(qk_pair *p, void *ctx, int side, const qk_event *ev)
{
    accept_log *a = ctx;
    if (side == 0) {
        assert_int_not_equal(ev->type, QK_EV_NEW_CONN); /* servers only */
        if (ev->type == QK_EV_CONNECTED) a->client_connected = true;
        if (ev->type == QK_EV_CLOSED) {
            a->client_closed = true;
            a->client_closed_at = p->now;
            a->client_close = *ev;
        }
        return;
    }
    if (!a->server_first) a->server_first = ev->type;
    if (ev->type == QK_EV_CLOSED) a->closed++;
    if (ev->type != QK_EV_NEW_CONN) return;
    a->new_conns++;
    a->new_conn = ev->conn;
    if (a->refuse) {
        a->refuse_rc = qk_conn_refuse(ev->conn, "busy");
        a->refuse_again_rc = qk_conn_refuse(ev->conn, "busy");
    }
}

static bool accept_done(qk_pair *p, void *ctx)
{
    accept_log *a = ctx;
    return a->refuse ? a->client_closed : qk_pair_confirmed(p, NULL);
}

static bool accept_server_closed(qk_pair *p, void *ctx)
{
    (void)p;
    return ((accept_log *)ctx)->closed > 0;
}

/* With new_conn_events the server's first event is NEW_CONN; without, as
 * before it existed, CONNECTED (applications set up state at it). */
static void run_first_event(bool on)
{
    qk_pair p;
    accept_log a = {0};
    assert_int_equal(qk_pair_init(&p, DELAY_NS), 0);
    p.scfg.new_conn_events = on;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(run_events(&p, on_accept_ev, accept_done, &a, p.now + 2 * QK_NS_PER_S));
    assert_int_equal(a.server_first, on ? QK_EV_NEW_CONN : QK_EV_CONNECTED);
    assert_int_equal(a.new_conns, on ? 1 : 0);
    if (on) assert_ptr_equal(a.new_conn, p.sconn);
    assert_int_equal(qk_conn_refuse(p.cconn, NULL), QK_ERR_STATE); /* a client cannot */
    qk_pair_free(&p);
}

static void test_new_conn_first_event(void **state)
{
    (void)state;
    run_first_event(true);
    run_first_event(false);
}

static void test_refuse_at_new_conn(void **state)
{
    (void)state;
    qk_pair p;
    accept_log a = {.refuse = true};
    assert_int_equal(qk_pair_init(&p, DELAY_NS), 0);
    p.scfg.new_conn_events = true;
    assert_int_equal(qk_pair_start(&p), 0);
    /* The application's loop: receive, handle the events, then send. */
    deliver_to_server(&p);
    qk_event ev;
    while (qk_endpoint_poll_event(p.server, &ev)) on_accept_ev(&p, &a, 1, &ev);
    assert_int_equal(a.server_first, QK_EV_NEW_CONN);
    assert_true(run_events(&p, on_accept_ev, accept_done, &a, p.now + 2 * QK_NS_PER_S));
    assert_int_equal(a.refuse_rc, 0);
    assert_int_equal(a.refuse_again_rc, QK_ERR_CLOSED);
    /* RFC 9000 §20.1: the client hears CONNECTION_REFUSED (0x2) at once. */
    assert_true(a.client_close.remote);
    assert_false(a.client_close.app_error);
    assert_int_equal(a.client_close.error_code, 0x2);
    assert_int_equal(a.client_close.reason_err, QK_ERR_CONNECTION_REFUSED);
    assert_string_equal(a.client_close.reason, "busy");
    /* At once: after the draining period (RFC 9000 §10.2.2, 3 PTOs), long
     * before the 10 s handshake timeout; the handshake never completed. */
    assert_true(a.client_closed_at < 2 * QK_NS_PER_S);
    assert_false(a.client_connected);
    /* The server's connection ends after its closing period (RFC 9000 §10.2). */
    run_events(&p, on_accept_ev, accept_server_closed, &a, p.now + 10 * QK_NS_PER_S);
    assert_int_equal(a.closed, 1);
    assert_int_equal(qk_endpoint_conn_count(p.server), 0);
    qk_pair_free(&p);
}

/* ---- QK_EV_CONNECTED, then QK_EV_HANDSHAKE_CONFIRMED ---- */

typedef struct hs_log {
    qk_time at[2][2];     /* [side][0 CONNECTED, 1 CONFIRMED] */
    size_t count[2][2];   /* how often each was raised */
    bool confirmed_then;  /* qk_conn_handshake_confirmed at the CONFIRMED event */
    bool early_confirmed; /* ... and at the client's CONNECTED (must be false) */
} hs_log;

static void on_hs_ev(qk_pair *p, void *ctx, int side, const qk_event *ev)
{
    hs_log *h = ctx;
    int k = ev->type == QK_EV_CONNECTED ? 0 : ev->type == QK_EV_HANDSHAKE_CONFIRMED ? 1 : -1;
    if (k < 0) return;
    if (!h->count[side][k]++) h->at[side][k] = p->now;
    if (k == 1) h->confirmed_then = qk_conn_handshake_confirmed(ev->conn);
    if (k == 0 && side == 0 && qk_conn_handshake_confirmed(ev->conn)) h->early_confirmed = true;
}

static bool hs_done(qk_pair *p, void *ctx)
{
    hs_log *h = ctx;
    (void)p;
    return h->count[0][1] && h->count[1][1];
}

static void test_connected_then_confirmed(void **state)
{
    (void)state;
    qk_pair p;
    hs_log h = {0};
    assert_int_equal(qk_pair_init(&p, DELAY_NS), 0);
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(run_events(&p, on_hs_ev, hs_done, &h, p.now + 2 * QK_NS_PER_S));
    /* Keep going: neither event comes twice. */
    run_events(&p, on_hs_ev, qk_pair_client_gone, &h, p.now + QK_NS_PER_S);
    for (int side = 0; side < 2; side++) {
        assert_int_equal(h.count[side][0], 1);
        assert_int_equal(h.count[side][1], 1);
        assert_true(h.at[side][0] <= h.at[side][1]);
    }
    assert_true(h.confirmed_then);
    /* RFC 9001 §4.1.2: the server confirms at completion; the client one
     * round trip later (its Finished out, HANDSHAKE_DONE back). */
    assert_int_equal(h.at[1][0], h.at[1][1]);
    assert_false(h.early_confirmed);
    assert_true(h.at[0][1] >= h.at[0][0] + 2 * DELAY_NS);
    qk_pair_free(&p);
}

/* ---- QK_EV_STREAM_ACKED and qk_stream_write_ref ---- */

#define ACKED_TOTAL (256u << 10)

typedef struct acked_log {
    uint8_t *mem; /* the client's write_ref memory, scribbled on once released */
    uint64_t sid, quiet_sid;
    size_t written, read, events, quiet_events;
    uint64_t last_off;
    bool fin, mismatch, read_fin, order_bad, user_bad, get_user_after;
    int tag;
} acked_log;

static void on_acked_ev(qk_pair *p, void *ctx, int side, const qk_event *ev)
{
    acked_log *x = ctx;
    (void)p;
    if (side != 0 || ev->type != QK_EV_STREAM_ACKED) return;
    if (ev->stream_id == x->quiet_sid) x->quiet_events++;
    if (ev->stream_id != x->sid) return;
    x->events++;
    /* Raised when the prefix advances, never twice for one offset. */
    if (ev->offset <= x->last_off && !(ev->fin && !x->fin)) x->order_bad = true;
    if (ev->offset > x->written || ev->stream_user != &x->tag) x->user_bad = true;
    /* Released: the stack must never read these bytes again. */
    memset(x->mem + x->last_off, 0xee, (size_t)(ev->offset - x->last_off));
    x->last_off = ev->offset;
    if (ev->fin) {
        x->fin = true;
        /* A send-only stream acknowledged in full is forgotten: the event
         * still carried its pointer. */
        x->get_user_after = qk_stream_get_user(ev->conn, x->sid) != NULL;
    }
}

static bool acked_step_done(qk_pair *p, void *ctx)
{
    acked_log *x = ctx;
    if (p->cconn && x->written < ACKED_TOTAL) {
        long w = qk_stream_write_ref(p->cconn, x->sid, x->mem + x->written,
                                     ACKED_TOTAL - x->written, true);
        if (w > 0) x->written += (size_t)w;
        qk_pair_flush(p);
    }
    if (p->sconn && !x->read_fin)
        x->read_fin = qk_pair_read_pattern(p->sconn, x->sid, &x->read, &x->mismatch);
    return x->fin && x->read_fin;
}

static void test_stream_acked_releases_write_ref(void **state)
{
    (void)state;
    qk_pair p;
    uint64_t rng = 7;
    acked_log x = {0};
    x.mem = malloc(ACKED_TOTAL);
    assert_non_null(x.mem);
    for (size_t i = 0; i < ACKED_TOTAL; i++) x.mem[i] = qk_test_pattern(i);
    assert_int_equal(qk_pair_init(&p, DELAY_NS), 0);
    p.filter = qk_pair_loss5_filter; /* retransmissions read the borrowed bytes */
    p.filter_ctx = &rng;
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(qk_stream_open(p.cconn, false, &x.sid), 0);
    assert_int_equal(qk_stream_open(p.cconn, false, &x.quiet_sid), 0);
    assert_int_equal(qk_stream_set_user(p.cconn, x.sid, &x.tag), 0);
    assert_int_equal(qk_stream_notify_acked(p.cconn, x.sid, true), 0);
    assert_int_equal(qk_stream_notify_acked(p.cconn, 1001, true), QK_ERR_NOT_FOUND);
    /* The quiet stream did not ask: its data is acknowledged without events. */
    assert_int_equal(qk_stream_write(p.cconn, x.quiet_sid, x.mem, 5000, true), 5000);
    p.ncev = p.nsev = 0;
    assert_true(run_events(&p, on_acked_ev, acked_step_done, &x, p.now + 30 * QK_NS_PER_S));
    assert_false(x.mismatch); /* nothing released was sent again */
    assert_false(x.order_bad);
    assert_false(x.user_bad);
    assert_int_equal(x.read, ACKED_TOTAL);
    assert_int_equal(x.last_off, ACKED_TOTAL);
    assert_false(x.get_user_after);
    assert_int_equal(x.quiet_events, 0);
    /* Coalesced: at most one event per ACK frame, far fewer than packets. */
    qk_conn_stats st;
    qk_conn_stats_get(p.cconn, &st);
    assert_true(x.events >= 2);
    assert_true(x.events <= st.ack_frames_received);
    qk_pair_free(&p);
    free(x.mem);
}

/* ---- DATAGRAM: ACKED / LOST, max payload, AGAIN vs UNSUPPORTED ---- */

#define N_DGRAMS 40

typedef struct dgram_log {
    int outcome[N_DGRAMS + 1];   /* by id: 1 acked, 2 lost, 3 both or twice */
    bool received[N_DGRAMS + 1]; /* the server got it */
    size_t max;                  /* datagram id i is max - i bytes long */
    bool bad_id;
} dgram_log;

static void on_dgram_ev(qk_pair *p, void *ctx, int side, const qk_event *ev)
{
    dgram_log *d = ctx;
    (void)p;
    /* The id is in the length (the payload is gone once polled). */
    if (side == 1 && ev->type == QK_EV_DATAGRAM && d->max - ev->len <= N_DGRAMS)
        d->received[d->max - ev->len] = true;
    if (side != 0 || (ev->type != QK_EV_DATAGRAM_ACKED && ev->type != QK_EV_DATAGRAM_LOST)) return;
    if (ev->datagram_id == 0 || ev->datagram_id > N_DGRAMS) {
        d->bad_id = true;
        return;
    }
    int *o = &d->outcome[ev->datagram_id];
    *o = *o ? 3 : ev->type == QK_EV_DATAGRAM_ACKED ? 1 : 2;
}

static bool dgram_done(qk_pair *p, void *ctx)
{
    dgram_log *d = ctx;
    (void)p;
    for (int i = 1; i <= N_DGRAMS; i++)
        if (!d->outcome[i]) return false;
    return true;
}

/* Drops every third client datagram once the handshake is done. */
static bool drop_third(void *ctx, bool to_server, uint64_t idx, uint8_t *data, size_t *len)
{
    (void)data;
    (void)len;
    uint64_t *from = ctx;
    return !to_server || idx < *from || (idx - *from) % 3 != 2;
}

static void test_datagram_acked_lost(void **state)
{
    (void)state;
    qk_pair p;
    dgram_log d = {0};
    uint64_t from = UINT64_MAX;
    uint8_t msg[1400] = {0};
    uint64_t id = 0;
    assert_int_equal(qk_pair_init(&p, DELAY_NS), 0);
    p.ccfg.max_datagram_frame_bytes = p.scfg.max_datagram_frame_bytes = 1500;
    p.filter = drop_third;
    p.filter_ctx = &from;
    assert_int_equal(qk_pair_start(&p), 0);
    /* Before the server's transport parameters: not yet, rather than never. */
    assert_int_equal(qk_conn_datagram_max_payload(p.cconn), QK_ERR_AGAIN);
    assert_int_equal(qk_datagram_send(p.cconn, msg, 10, 0), QK_ERR_AGAIN);
    assert_int_equal(qk_datagram_send_ex(p.cconn, msg, 10, 0, &id), QK_ERR_AGAIN);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    long max = qk_conn_datagram_max_payload(p.cconn);
    assert_true(max > 1000 && max < 1452);
    assert_int_equal(qk_datagram_send(p.cconn, msg, (size_t)max + 1, 0), QK_ERR_TOO_LARGE);
    assert_int_equal(qk_datagram_send_ex(p.cconn, msg, 10, 0, NULL), QK_ERR_INVALID_ARG);
    from = p.sent_idx[0];
    d.max = (size_t)max;
    p.ncev = p.nsev = 0;
    for (uint64_t i = 1; i <= N_DGRAMS; i++) {
        /* One full datagram per packet, so every third one is dropped. */
        assert_int_equal(qk_datagram_send_ex(p.cconn, msg, (size_t)max - i, 0, &id), 0);
        assert_int_equal(id, i);
        qk_pair_flush(&p);
    }
    assert_true(run_events(&p, on_dgram_ev, dgram_done, &d, p.now + 5 * QK_NS_PER_S));
    run_events(&p, on_dgram_ev, qk_pair_client_gone, &d, p.now + QK_NS_PER_S); /* no repeats */
    assert_false(d.bad_id);
    size_t acked = 0, lost = 0, missing = 0;
    for (int i = 1; i <= N_DGRAMS; i++) {
        assert_true(d.outcome[i] == 1 || d.outcome[i] == 2); /* exactly one event */
        acked += d.outcome[i] == 1;
        lost += d.outcome[i] == 2;
        missing += !d.received[i];
        /* Acknowledged means it arrived; one that never arrived is lost. A
         * lost one may still have arrived: RFC 9002 §6.1 declares packets
         * lost by thresholds, and these drops make some losses spurious. */
        if (d.outcome[i] == 1) assert_true(d.received[i]);
        if (!d.received[i]) assert_int_equal(d.outcome[i], 2);
    }
    assert_true(missing >= N_DGRAMS / 4); /* the filter did drop them */
    assert_true(acked > N_DGRAMS / 2);
    assert_int_equal(acked + lost, N_DGRAMS);
    qk_pair_free(&p);
}

static void test_datagram_unsupported_peer(void **state)
{
    (void)state;
    qk_pair p;
    uint8_t msg[10] = {0};
    assert_int_equal(qk_pair_init(&p, DELAY_NS), 0);
    p.ccfg.max_datagram_frame_bytes = 1500; /* the server does not take them */
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(qk_conn_datagram_max_payload(p.cconn), QK_ERR_UNSUPPORTED);
    assert_int_equal(qk_datagram_send(p.cconn, msg, sizeof msg, 0), QK_ERR_UNSUPPORTED);
    /* The server's side: the client does take them. */
    assert_true(qk_conn_datagram_max_payload(p.sconn) > 0);
    qk_conn_close(p.cconn, 0, NULL);
    assert_int_equal(qk_conn_datagram_max_payload(p.cconn), QK_ERR_CLOSED);
    qk_pair_free(&p);
}

/* ---- stream user pointers ---- */

static void test_stream_user_pointer(void **state)
{
    (void)state;
    qk_pair p;
    int tag;
    uint64_t sid;
    uint8_t buf[4096] = {0};
    bool fin;
    assert_int_equal(qk_pair_init(&p, DELAY_NS), 0);
    assert_int_equal(qk_pair_start(&p), 0);
    assert_true(qk_pair_run_until(&p, qk_pair_confirmed, NULL, p.now + 5 * QK_NS_PER_S));
    assert_int_equal(qk_stream_open(p.cconn, true, &sid), 0);
    assert_null(qk_stream_get_user(p.cconn, sid));
    assert_int_equal(qk_stream_set_user(p.cconn, 1001, &tag), QK_ERR_NOT_FOUND);
    assert_null(qk_stream_get_user(p.cconn, 1001));
    assert_int_equal(qk_stream_write(p.cconn, sid, buf, 1000, false), 1000);
    qk_pair_flush(&p);
    deliver_to_server(&p);
    /* OPENED and READABLE are both queued; the pointer set while handling
     * OPENED is in READABLE, polled after. */
    qk_event ev;
    size_t readable = 0;
    while (qk_endpoint_poll_event(p.server, &ev)) {
        if (ev.stream_id != sid) continue;
        if (ev.type == QK_EV_STREAM_OPENED) {
            assert_null(ev.stream_user); /* nothing set yet */
            assert_int_equal(qk_stream_set_user(ev.conn, sid, &tag), 0);
            assert_ptr_equal(qk_stream_get_user(ev.conn, sid), &tag);
        } else if (ev.type == QK_EV_STREAM_READABLE) {
            assert_ptr_equal(ev.stream_user, &tag);
            assert_int_equal(qk_stream_read(ev.conn, sid, buf, sizeof buf, &fin), 1000);
            readable++;
        }
    }
    assert_int_equal(readable, 1);
    /* Later events of the stream carry it too, up to the last one. */
    assert_int_equal(qk_stream_write(p.cconn, sid, buf, 1000, true), 1000);
    p.nsev = 0;
    qk_pair_flush(&p);
    bool got_fin = false;
    for (int i = 0; i < 200 && !got_fin && qk_pair_step(&p); i++)
        for (; p.nsev; p.nsev--) {
            const qk_event *e = &p.sev[p.nsev - 1];
            if (e->type != QK_EV_STREAM_READABLE || e->stream_id != sid) continue;
            assert_ptr_equal(e->stream_user, &tag);
            long n;
            while ((n = qk_stream_read(p.sconn, sid, buf, sizeof buf, &fin)) >= 0) {
                got_fin |= fin;
                if (n == 0) break;
            }
        }
    assert_true(got_fin);
    qk_pair_free(&p);
}

/* ---- qk_endpoint_new_ex, closed-connection lifetime ---- */

static void test_endpoint_new_ex_says_why(void **state)
{
    (void)state;
    qk_pair p;
    char why[256];
    int err = 1;
    assert_int_equal(qk_pair_init(&p, DELAY_NS), 0);
    qk_config cfg = p.ccfg;
    cfg.rng = NULL;
    assert_null(qk_endpoint_new_ex(&cfg, &err, why, sizeof why));
    assert_int_equal(err, QK_ERR_CONFIG);
    assert_non_null(strstr(why, "rng"));
    cfg = p.ccfg;
    cfg.version = 0x12345678;
    assert_null(qk_endpoint_new_ex(&cfg, &err, why, sizeof why));
    assert_int_equal(err, QK_ERR_VERSION);
    assert_null(qk_endpoint_new_ex(&cfg, NULL, NULL, 0)); /* both optional */
    qk_endpoint *ep = qk_endpoint_new_ex(&p.ccfg, &err, why, sizeof why);
    assert_non_null(ep);
    assert_int_equal(err, 0);
    assert_string_equal(why, "ok");
    qk_endpoint_del(ep);
    qk_pair_free(&p);
}

/* A closed connection stays valid while its QK_EV_CLOSED is handled and
 * until a poll returns false (under ASan a use after free fails here). */
static void test_closed_conn_valid_until_poll_false(void **state)
{
    (void)state;
    qk_pair p;
    int tag;
    assert_int_equal(qk_pair_init(&p, DELAY_NS), 0);
    qk_endpoint *ep = qk_endpoint_new(&p.ccfg);
    assert_non_null(ep);
    qk_conn *c;
    assert_int_equal(qk_connect(ep, &p.caddr, &p.saddr, "quack.test", p.now, &c), 0);
    qk_conn_set_user(c, &tag);
    assert_int_equal(qk_endpoint_on_unreachable(ep, &p.saddr, "nobody there", p.now), 1);
    qk_event ev;
    assert_true(qk_endpoint_poll_event(ep, &ev));
    assert_int_equal(ev.type, QK_EV_CLOSED);
    assert_ptr_equal(ev.conn, c);
    assert_ptr_equal(qk_conn_user(c), &tag); /* still valid */
    qk_conn_stats st;
    qk_conn_stats_get(c, &st);
    assert_int_equal(qk_endpoint_conn_count(ep), 0);
    assert_false(qk_endpoint_poll_event(ep, &ev)); /* frees it */
    qk_endpoint_del(ep);
    qk_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_conn_first_event),
        cmocka_unit_test(test_refuse_at_new_conn),
        cmocka_unit_test(test_connected_then_confirmed),
        cmocka_unit_test(test_stream_acked_releases_write_ref),
        cmocka_unit_test(test_datagram_acked_lost),
        cmocka_unit_test(test_datagram_unsupported_peer),
        cmocka_unit_test(test_stream_user_pointer),
        cmocka_unit_test(test_endpoint_new_ex_says_why),
        cmocka_unit_test(test_closed_conn_valid_until_poll_false),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
