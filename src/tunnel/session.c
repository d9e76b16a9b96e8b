/* SPDX-License-Identifier: MIT */
/* The tunnel's session layer (docs/tunnel.md "Session layer"): flows that
 * outlive carrier sessions. The client opens a control stream on every new
 * carrier session and says HELLO (a fresh session, or the id and token of
 * the one it has); the server answers WELCOME (resumed, or new: then the
 * client resets the flows it had). Each side tells the other, per flow, how
 * many bytes it has written to its TCP socket (ACK); the sender keeps the
 * rest in the flow's replay buffer. After a resume each flow gets a new
 * stream whose header carries the client's received offset and whose reply
 * the server's: both resend from there. */
#include "tunnel/tunnel_int.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

#define TSESS_NEW_FLOW_RESERVE_DIV 4 /* 1/4 of --session-cap is for new flows only */

static void on_linger(struct ev_loop *ev, ev_timer *w, int revents);

tsess *qk_tsess_new(qk_tunnel *t)
{
    tsess *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->t = t;
    ev_timer_init(&s->linger_w, on_linger, (double)t->cfg.session_linger_ns / 1e9, 0.0);
    s->linger_w.data = s;
    return s;
}

void qk_tsess_free(tsess *s)
{
    if (!s) return;
    ev_timer_stop(s->t->ev, &s->linger_w);
    free(s);
}

static flow *find_flow(const tsess *s, uint64_t fid)
{
    const qk_tunnel *t = s->t;
    for (size_t i = 0; i < t->n_flows; i++)
        if (t->flows[i]->s == s && t->flows[i]->fid == fid && t->flows[i]->counted)
            return t->flows[i];
    return NULL;
}

tsess *qk_tsess_of(qk_tunnel *t, const void *c)
{
    if (t->me) return t->me->c == c && t->me->ready ? t->me : NULL;
    for (size_t i = 0; i < t->n_sess; i++)
        if (t->sess[i]->c == c && t->sess[i]->ready) return t->sess[i];
    return NULL;
}

/* Server: forget session s (its flows are gone or reset). */
static void server_remove(tsess *s)
{
    qk_tunnel *t = s->t;
    for (size_t i = 0; i < t->n_sess; i++)
        if (t->sess[i] == s) {
            t->sess[i] = t->sess[--t->n_sess];
            break;
        }
    qk_tsess_free(s);
}

static void ctl_flush(tsess *s)
{
    if (!s->c || !s->out_len) return;
    long w = s->car->write(s->c, s->ctl_sid, s->out, s->out_len, false);
    if (w <= 0) return; /* QK_ERR_AGAIN: the stream's WRITABLE flushes; errors: it closes */
    memmove(s->out, s->out + w, s->out_len - (size_t)w);
    s->out_len -= (size_t)w;
}

/* Queue one control message. Returns false when there is no room now. */
static bool ctl_send(tsess *s, const qk_tsw_msg *m)
{
    if (!s->c) return false;
    if (s->out_len + QK_TSW_MSG_MAX > sizeof s->out) ctl_flush(s);
    if (s->out_len + QK_TSW_MSG_MAX > sizeof s->out) return false;
    s->out_len += qk_tsw_msg_encode(m, s->out + s->out_len);
    ctl_flush(s);
    return true;
}

void qk_tsess_ack(flow *f, bool now)
{
    tsess *s = f->s;
    (void)now;
    if (!s || !s->ready || !s->c || !f->counted) return;
    if (f->dlv == f->acked_sent && f->fin_ack_sent == f->shut_wr) return;
    qk_tsw_msg m = {.type = QK_TSW_ACK, .flow_id = f->fid, .offset = f->dlv, .fin = f->shut_wr};
    if (!ctl_send(s, &m)) return; /* the control stream's WRITABLE sends it */
    f->acked_sent = f->dlv;
    f->fin_ack_sent = f->shut_wr;
}

/* The control stream has room again: the ACKs that waited, and the flows they finish. */
static void acks_all(tsess *s)
{
    qk_tunnel *t = s->t;
    ctl_flush(s);
    for (size_t i = t->n_flows; i-- > 0;) {
        flow *f = t->flows[i];
        if (f->s != s) continue;
        qk_tsess_ack(f, true);
        qk_tun_flow_maybe_done(f);
    }
}

/* A flow's replay buffer starts at buf_bytes and doubles while it is full,
 * up to flow_buffer_bytes. Growth stops at 3/4 of the session's cap: the
 * last quarter is kept for new flows' first buffers, so flows that grew
 * (bulk downloads on a long or lossy pipe) hold their own TCP reads back
 * instead of getting a newcomer refused (with --session-buffer 16M, four
 * flows took the 64 MiB cap and the tenth of ten was refused). */
bool qk_tsess_ring_room(flow *f)
{
    qk_tunnel *t = f->t;
    if (f->ring.len < f->ring.cap) return true;
    size_t want = f->ring.cap ? 2 * f->ring.cap : t->cfg.buf_bytes;
    if (want > t->cfg.flow_buffer_bytes) want = t->cfg.flow_buffer_bytes;
    if (want <= f->ring.cap) return false;
    size_t grow = want - f->ring.cap;
    size_t cap = t->cfg.session_buffer_bytes;
    if (f->ring.cap) cap -= cap / TSESS_NEW_FLOW_RESERVE_DIV;
    if (f->s && f->s->buf_bytes + grow > cap) return false;
    if (qk_tsw_ring_grow(&f->ring, want)) return false;
    if (f->s) f->s->buf_bytes += grow;
    t->stats.buffer_bytes += grow;
    if (t->stats.buffer_bytes > t->stats.buffer_peak_bytes)
        t->stats.buffer_peak_bytes = t->stats.buffer_bytes;
    return true;
}

void qk_tsess_ring_release(flow *f)
{
    if (!f->counted) return;
    if (f->s) f->s->buf_bytes -= f->ring.cap;
    f->t->stats.buffer_bytes -= f->ring.cap;
}

void qk_tsess_reset_flows(tsess *s, const char *why)
{
    qk_tunnel *t = s->t;
    for (size_t i = t->n_flows; i-- > 0;) /* removal moves the last flow to i: go down */
        if (t->flows[i]->s == s) {
            t->flows[i]->why = why;
            qk_tun_flow_abort(t->flows[i], QK_TUNNEL_ERR_TCP);
        }
}

/* Detach s's flows from the carrier session they were on (gone, or replaced). */
static void flows_detach(tsess *s, bool abort_streams)
{
    qk_tunnel *t = s->t;
    for (size_t i = 0; i < t->n_flows; i++) {
        flow *f = t->flows[i];
        if (f->s != s || !f->c) continue;
        if (abort_streams) f->car->abort(f->c, f->sid, QK_TUNNEL_ERR_TCP, true, true);
        f->c = NULL;
        f->fin_sent = false;
        f->hdr_need = 0;
        f->hdr_len = 0;
        f->await_reply = false;
    }
}

uint64_t qk_tsess_detached_count(const qk_tunnel *t)
{
    uint64_t n = 0;
    for (size_t i = 0; i < t->n_sess; i++) n += t->sess[i]->has_id && !t->sess[i]->c;
    return n;
}

/* Server: over session_max detached sessions, forget the one detached
 * longest ago (the bound on what peers can leave behind). */
static void evict_detached(qk_tunnel *t)
{
    if (qk_tsess_detached_count(t) <= t->cfg.session_max) return;
    tsess *old = NULL;
    for (size_t i = 0; i < t->n_sess; i++) {
        tsess *o = t->sess[i];
        if (o->has_id && !o->c && (!old || o->detached_seq < old->detached_seq)) old = o;
    }
    if (!old) return;
    size_t n = 0;
    for (size_t i = 0; i < t->n_flows; i++) n += t->flows[i]->s == old;
    t->stats.sessions_evicted++;
    qk_tun_log(t,
               "over %zu detached sessions (--session-max): the oldest forgotten, its %zu "
               "flow(s) reset",
               t->cfg.session_max, n);
    qk_tsess_reset_flows(old, "session evicted (--session-max)");
    server_remove(old);
}

void qk_tsess_detach(tsess *s)
{
    qk_tunnel *t = s->t;
    if (!s->c) return;
    flows_detach(s, false);
    s->c = NULL;
    s->ready = false;
    s->in_len = s->out_len = 0;
    if (!s->has_id) { /* server: a control stream that never said HELLO */
        if (!t->me)
            server_remove(s);
        else /* client: flows opened after HELLO, never welcomed: no session to resume them in */
            qk_tsess_reset_flows(s, "the connection died before the server answered HELLO");
        return;
    }
    ev_timer_set(&s->linger_w, (double)t->cfg.session_linger_ns / 1e9, 0.0);
    ev_timer_start(t->ev, &s->linger_w);
    s->detached_seq = ++t->detach_seq;
    if (!t->me) evict_detached(t);
}

static void on_linger(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    tsess *s = w->data;
    qk_tunnel *t = s->t;
    qk_tun_log(t, "session detached for %.0f s: forgotten, its flows reset",
               (double)t->cfg.session_linger_ns / 1e9);
    qk_tsess_reset_flows(s, "session expired (--session-linger)");
    if (t->me)
        s->has_id = false;
    else
        server_remove(s);
}

int qk_tsess_client_attach(tsess *s, const qk_tunnel_carrier *car, void *c)
{
    if (s->c) qk_tsess_detach(s);
    uint64_t sid;
    int rc = car->open(c, &sid);
    if (rc) return rc;
    ev_timer_stop(s->t->ev, &s->linger_w);
    s->car = car;
    s->c = c;
    s->ctl_sid = sid;
    s->ready = false;
    s->in_len = 0;
    s->out[0] = QK_TSW_CTL_PREAMBLE;
    s->out_len = 1;
    qk_tsw_msg m = {.type = QK_TSW_HELLO};
    if (s->has_id) {
        memcpy(m.id, s->id, sizeof m.id);
        memcpy(m.token, s->token, sizeof m.token);
    }
    ctl_send(s, &m);
    /* A fresh session has no offsets to agree on: new flows open right
     * behind HELLO, not one round trip later at WELCOME (the server holds a
     * flow header that overtakes HELLO: qk_tsess_flow_hdr). A resume waits. */
    if (!s->has_id) qk_tun_start_accepting(s->t);
    return 0;
}

/* Client: after WELCOME(resumed), a new stream for every flow. */
static void resume_flows(tsess *s)
{
    qk_tunnel *t = s->t;
    for (size_t i = t->n_flows; i-- > 0;) {
        flow *f = t->flows[i];
        if (f->s != s || f->c) continue;
        uint64_t sid;
        if (s->car->open(s->c, &sid)) {
            f->why = "no stream for its resume (the server's stream limit)";
            qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
            continue;
        }
        uint8_t b[1 + QK_TSW_FLOW_HDR_BYTES] = {QK_TSW_FLOW_PREAMBLE};
        qk_tsw_flow_hdr h = {
            .resume = true, .flow_id = f->fid, .recv_off = f->dlv + (f->down_len - f->down_off)};
        qk_tsw_flow_hdr_encode(&h, b + 1);
        s->car->write(s->c, sid, b, sizeof b, false); /* fits: a fresh stream */
        f->car = s->car;
        f->c = s->c;
        f->sid = sid;
        f->hdr_need = QK_TSW_FLOW_REPLY_BYTES;
        f->hdr_len = 0;
        f->await_reply = true;
        f->acked_sent = 0; /* the next ACK goes out whatever the old one said */
        t->stats.flows_resumed++;
    }
}

static void client_welcome(tsess *s, const qk_tsw_msg *m)
{
    qk_tunnel *t = s->t;
    s->ready = true;
    if (m->status == QK_TSW_WELCOME_NEW && s->has_id) {
        t->stats.sessions_refused++;
        size_t n = 0;
        for (size_t i = 0; i < t->n_flows; i++) n += t->flows[i]->s == s;
        qk_tun_log(t,
                   "the server does not know our session (restarted, or it expired): %zu "
                   "flow(s) reset",
                   n);
        qk_tsess_reset_flows(s, "the server forgot the session");
    } else if (m->status == QK_TSW_WELCOME_RESUMED) {
        t->stats.sessions_resumed++;
        resume_flows(s);
    }
    memcpy(s->id, m->id, sizeof s->id);
    memcpy(s->token, m->token, sizeof s->token);
    s->has_id = true;
    qk_tun_start_accepting(t);
    acks_all(s); /* flows that opened behind HELLO delivered bytes before we could ACK */
}

/* Server: the session named in HELLO, if the token proves it. */
static tsess *server_lookup(qk_tunnel *t, const tsess *self, const qk_tsw_msg *m)
{
    for (size_t i = 0; i < t->n_sess; i++) {
        tsess *o = t->sess[i];
        if (o == self || !o->has_id || memcmp(o->id, m->id, sizeof o->id)) continue;
        uint8_t diff = 0;
        for (size_t k = 0; k < sizeof o->token; k++) diff |= (uint8_t)(o->token[k] ^ m->token[k]);
        return diff ? NULL : o;
    }
    return NULL;
}

/* Server: s said HELLO: the flows whose header came first go on. */
static void unpark(tsess *s)
{
    qk_tunnel *t = s->t;
    for (size_t i = t->n_flows; i-- > 0;) { /* removal moves the last flow to i: go down */
        flow *f = t->flows[i];
        if (!f->parked || f->c != s->c) continue;
        f->parked = false;
        qk_tsw_flow_hdr h;
        if (qk_tsw_flow_hdr_decode(f->hdr, &h)) /* decoded once already: cannot fail */
            qk_tun_flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
        else if (!qk_tsess_flow_hdr(f, &h))
            qk_tun_pump_down(f); /* the bytes behind the header, then TCP */
    }
}

/* Server: HELLO on pending session s. Returns the session the control stream now belongs to. */
static tsess *server_hello(tsess *s, const qk_tsw_msg *m)
{
    qk_tunnel *t = s->t;
    static const uint8_t zero[QK_TSW_ID_BYTES];
    bool asked = memcmp(m->id, zero, sizeof zero) != 0;
    tsess *old = asked ? server_lookup(t, s, m) : NULL;
    qk_tsw_msg w = {.type = QK_TSW_WELCOME, .status = QK_TSW_WELCOME_NEW};
    if (old) {
        if (old->c) { /* the client moved on before this side saw the old carrier die */
            flows_detach(old, true);
            old->car->abort(old->c, old->ctl_sid, QK_TUNNEL_ERR_TCP, true, true);
        }
        ev_timer_stop(t->ev, &old->linger_w);
        old->car = s->car;
        old->c = s->c;
        old->ctl_sid = s->ctl_sid;
        memcpy(old->in, s->in, s->in_len); /* ctl_input goes on in old's buffer */
        old->in_len = s->in_len;
        memcpy(old->out, s->out, s->out_len);
        old->out_len = s->out_len;
        server_remove(s);
        s = old;
        w.status = QK_TSW_WELCOME_RESUMED;
        t->stats.sessions_resumed++;
    } else {
        if (asked) {
            t->stats.sessions_refused++;
            qk_tun_log(t, "a client asked to resume a session this server does not know: a new "
                          "session (the client resets its flows)");
        }
        gnutls_rnd(GNUTLS_RND_NONCE, s->id, sizeof s->id);
        gnutls_rnd(GNUTLS_RND_RANDOM, s->token, sizeof s->token);
        s->has_id = true;
    }
    s->ready = true;
    memcpy(w.id, s->id, sizeof w.id);
    memcpy(w.token, s->token, sizeof w.token);
    ctl_send(s, &w);
    unpark(s);
    return s;
}

static void on_ack(tsess *s, const qk_tsw_msg *m)
{
    flow *f = find_flow(s, m->flow_id);
    if (!f || m->offset < f->ring.base) return; /* finished, or an old ACK */
    uint64_t end = f->ring.base + f->ring.len;
    if (qk_tsw_ring_ack(&f->ring, m->offset)) {
        f->why = "ACK beyond the bytes sent (protocol error)";
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
        return;
    }
    if (m->fin && f->tcp_eof && m->offset == end) f->fin_acked = true;
    bool gone;
    qk_tun_pump_up(f, &gone); /* room again: read TCP; or done */
}

/* One message. Returns the session to go on with, NULL when the carrier is closed. */
static tsess *ctl_msg(tsess *s, const qk_tsw_msg *m)
{
    bool server = !s->t->me;
    if (m->type == QK_TSW_HELLO && server && !s->ready) return server_hello(s, m);
    if (m->type == QK_TSW_WELCOME && !server && !s->ready) {
        client_welcome(s, m);
        return s;
    }
    if (m->type == QK_TSW_ACK && s->ready) {
        on_ack(s, m);
        return s;
    }
    if (m->type != QK_TSW_HELLO && m->type != QK_TSW_WELCOME && m->type != QK_TSW_ACK) return s;
    return NULL; /* out of order */
}

static void ctl_fail(tsess *s, const char *why)
{
    qk_tun_log(s->t, "control stream: %s: closing the connection", why);
    if (s->car->close) s->car->close(s->c, QK_TUNNEL_ERR_PROTOCOL, why);
}

/* Bytes of the control stream. Returns false after a protocol error (the carrier closes). */
static bool ctl_input(tsess *s, const uint8_t *buf, size_t len)
{
    while (len) {
        size_t take = sizeof s->in - s->in_len < len ? sizeof s->in - s->in_len : len;
        memcpy(s->in + s->in_len, buf, take);
        s->in_len += take;
        buf += take;
        len -= take;
        size_t off = 0;
        for (;;) {
            qk_tsw_msg m;
            long n = qk_tsw_msg_decode(s->in + off, s->in_len - off, &m);
            if (n == 0) break;
            tsess *next = n > 0 ? ctl_msg(s, &m) : NULL;
            if (!next) {
                ctl_fail(s, n < 0 ? "malformed message" : "message out of order");
                return false;
            }
            s = next;
            off += (size_t)n;
        }
        memmove(s->in, s->in + off, s->in_len - off);
        s->in_len -= off;
    }
    return true;
}

int qk_tsess_server_ctl(qk_tunnel *t, const qk_tunnel_carrier *car, void *c, uint64_t sid,
                        const uint8_t *buf, size_t len)
{
    if (t->n_sess == t->cap_sess) {
        size_t cap = t->cap_sess ? 2 * t->cap_sess : 8;
        tsess **a = realloc(t->sess, cap * sizeof *a);
        if (!a) return QK_ERR_NOMEM;
        t->sess = a;
        t->cap_sess = cap;
    }
    tsess *s = qk_tsess_new(t);
    if (!s) return QK_ERR_NOMEM;
    s->car = car;
    s->c = c;
    s->ctl_sid = sid;
    t->sess[t->n_sess++] = s;
    ctl_input(s, buf, len);
    return 0;
}

static tsess *ctl_of(qk_tunnel *t, const void *c, uint64_t sid)
{
    if (t->me) return t->me->c == c && t->me->ctl_sid == sid ? t->me : NULL;
    for (size_t i = 0; i < t->n_sess; i++)
        if (t->sess[i]->c == c && t->sess[i]->ctl_sid == sid) return t->sess[i];
    return NULL;
}

bool qk_tsess_on_stream_event(qk_tunnel *t, void *c, uint64_t sid, qk_tunnel_ev type)
{
    tsess *s = ctl_of(t, c, sid);
    if (!s) return false;
    if (type == QK_TUNNEL_EV_WRITABLE) {
        acks_all(s);
    } else if (type == QK_TUNNEL_EV_RESET) {
        ctl_fail(s, "reset by the peer");
    } else if (type == QK_TUNNEL_EV_READABLE) {
        uint8_t buf[4096];
        for (;;) {
            bool fin = false;
            long n = s->car->read(c, sid, buf, sizeof buf, &fin);
            if (n == QK_ERR_AGAIN) break;
            if (n < 0 || fin) {
                ctl_fail(s, "ended by the peer");
                break;
            }
            if (!ctl_input(s, buf, (size_t)n)) break;
            s = ctl_of(t, c, sid); /* a HELLO may have moved it to the resumed session */
            if (!s) break;
        }
    }
    return true;
}

/* Server: count f as a data flow of s. */
static void flow_counted(flow *f, tsess *s, uint64_t fid)
{
    qk_tunnel *t = f->t;
    f->s = s;
    f->fid = fid;
    f->counted = true;
    f->id = ++t->next_id;
    t->stats.flows_opened++;
    qk_tun_log(t, "flow %llu opened on stream %llu", (unsigned long long)f->id,
               (unsigned long long)f->sid);
}

static void reply(flow *f, uint8_t status, uint64_t recv_off, bool fin)
{
    uint8_t b[QK_TSW_FLOW_REPLY_BYTES];
    qk_tsw_flow_reply r = {.status = status, .recv_off = recv_off};
    qk_tsw_flow_reply_encode(&r, b);
    f->car->write(f->c, f->sid, b, sizeof b, fin); /* fits: a fresh stream */
}

/* Server: resume flow g (of f's session) on f's stream; f is freed. */
static int server_resume(flow *f, flow *g, const qk_tsw_flow_hdr *h)
{
    qk_tunnel *t = f->t;
    if (h->recv_off < g->ring.base || qk_tsw_ring_ack(&g->ring, h->recv_off)) {
        f->silent = true;
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
        g->why = "resumed at an offset no longer buffered (protocol error)";
        qk_tun_flow_abort(g, QK_TUNNEL_ERR_PROTOCOL);
        return -1;
    }
    g->car = f->car;
    g->c = f->c;
    g->sid = f->sid;
    g->sent = h->recv_off;
    g->fin_sent = false;
    g->acked_sent = 0;
    f->silent = true;
    f->c = NULL; /* the stream is g's now */
    qk_tun_flow_free(f, false);
    if (g->car->accepted) g->car->accepted(g->c, g->sid);
    reply(g, QK_TSW_FLOW_OK, g->dlv + (g->down_len - g->down_off), false);
    t->stats.flows_resumed++;
    bool gone;
    qk_tun_pump_up(g, &gone);
    if (!gone) qk_tun_pump_down(g);
    return -1;
}

int qk_tsess_flow_hdr(flow *f, const qk_tsw_flow_hdr *h)
{
    qk_tunnel *t = f->t;
    tsess *s = qk_tsess_of(t, f->c);
    flow *g = s ? find_flow(s, h->flow_id) : NULL;
    if (!s) { /* its stream overtook the control stream's HELLO: wait for it (unpark) */
        f->parked = true;
        return 0;
    }
    if (!h->resume && (g || h->recv_off)) {
        f->why = "a new flow with a used id or an offset (protocol error)";
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
        return -1;
    }
    if (h->resume && (!g || g->c)) { /* forgotten (reset, expired), or on a stream already */
        reply(f, QK_TSW_FLOW_UNKNOWN, 0, true);
        f->fin_sent = true;
        f->silent = true;
        qk_tun_flow_free(f, false);
        return -1;
    }
    if (h->resume) return server_resume(f, g, h);
    flow_counted(f, s, h->flow_id);
    if (!qk_tsess_ring_room(f)) {
        t->stats.flows_refused++;
        f->why = "the session's replay buffers are full (--session-cap)";
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
        return -1;
    }
    reply(f, QK_TSW_FLOW_OK, 0, false);
    return 0;
}

/* Client: a flow the server never confirmed (its header may have died with
 * the old connection) and that it does not know: open it again as new. */
static bool reopen(flow *f)
{
    tsess *s = f->s;
    uint64_t sid;
    if (f->replied || f->ring.base || f->dlv || !s->c || s->car->open(s->c, &sid)) return false;
    uint8_t b[1 + QK_TSW_FLOW_HDR_BYTES] = {QK_TSW_FLOW_PREAMBLE};
    qk_tsw_flow_hdr h = {.resume = false, .flow_id = f->fid};
    qk_tsw_flow_hdr_encode(&h, b + 1);
    f->car->abort(f->c, f->sid, QK_TUNNEL_ERR_TCP, true, true);
    s->car->write(s->c, sid, b, sizeof b, false); /* fits: a fresh stream */
    f->sid = sid;
    f->hdr_need = QK_TSW_FLOW_REPLY_BYTES;
    f->hdr_len = 0;
    f->await_reply = false;
    f->sent = 0;
    f->fin_sent = false;
    f->stream_fin = false;
    f->t->stats.flows_resumed--; /* not resumed after all: opened again */
    bool gone;
    qk_tun_pump_up(f, &gone);
    return true;
}

int qk_tsess_flow_reply(flow *f, const qk_tsw_flow_reply *r)
{
    if (r->status == QK_TSW_FLOW_UNKNOWN && reopen(f)) return -1; /* -1: stop reading this stream */
    if (r->status == QK_TSW_FLOW_OK) f->replied = true;
    if (r->status == QK_TSW_FLOW_UNKNOWN) {
        f->why = "the server no longer has this flow";
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
        return -1;
    }
    if (!f->await_reply) {
        if (!r->recv_off) return 0;
        f->why = "a new flow's reply with an offset (protocol error)";
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
        return -1;
    }
    if (r->recv_off < f->ring.base || qk_tsw_ring_ack(&f->ring, r->recv_off)) {
        f->why = "resumed at an offset no longer buffered (protocol error)";
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
        return -1;
    }
    f->sent = r->recv_off;
    f->await_reply = false;
    bool gone;
    qk_tun_pump_up(f, &gone);
    return gone ? -1 : 0;
}
