/* SPDX-License-Identifier: MIT */
/* TCP <-> QUIC stream plumbing (include/quack/tunnel.h, docs/tunnel.md).
 *
 * A flow is one TCP socket and one bidirectional stream. Each direction has
 * one staging buffer: "up" holds bytes read from TCP that the stream has not
 * accepted yet, "down" bytes read from the stream that TCP has not taken.
 * A direction reads its source only while its buffer is empty, so each side's
 * own backpressure (stream send buffer / QUIC flow control, TCP send buffer)
 * stops the other. */
#include <quack/tunnel.h>

#include "base/abi.h"

#include <errno.h>
#include <ev.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct flow {
    qk_tunnel *t;
    size_t slot;                  /* index in t->flows */
    const qk_tunnel_carrier *car; /* how to reach the stream */
    void *c;                      /* its session (qk_conn *, qk_yamux *), NULL = gone */
    uint64_t sid;
    int fd;
    ev_io rw, ww;    /* TCP readable / writable */
    bool connecting; /* server: non-blocking connect() in progress */
    bool preamble;   /* server: the stream's first byte is still to come */
    /* TCP -> stream */
    uint8_t *up;
    size_t up_len, up_off;
    bool tcp_eof, fin_sent;
    /* stream -> TCP */
    uint8_t *down;
    size_t down_len, down_off;
    bool stream_fin, shut_wr;
    /* for the close log line */
    uint64_t id, up_bytes, down_bytes;
    ev_tstamp opened_at;
    const char *why;   /* why it was aborted (NULL: both directions ended cleanly) */
    qk_socks5 *socks;  /* server --to socks5: the negotiation, until it connected */
    bool socks_failed; /* refused: the reply and FIN are queued; the rest is dropped */
    bool gate;         /* server with a secret: waits for its preamble and the session's auth */
    bool auth;         /* server: this is the session's authentication stream */
} flow;

struct qk_tunnel {
    struct ev_loop *ev;
    qk_tunnel_config cfg;
    flow **flows; /* the n_flows open flows, packed (removal moves the last in) */
    size_t n_flows;
    int lfd; /* client: listening socket, -1 = none */
    ev_io accept_w;
    const qk_tunnel_carrier *car; /* client: the session streams are opened on */
    void *conn;                   /* NULL: no session (client: redialling) */
    ev_timer hold_w;              /* client without a session: when to start refusing */
    void **authed;                /* server: sessions that proved the secret */
    size_t n_authed, cap_authed;
    void *auth_sess; /* client: where our authentication stream is */
    uint64_t auth_sid;
    qk_tunnel_stats stats;
};

static void tlog(qk_tunnel *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void tlog(qk_tunnel *t, const char *fmt, ...)
{
    if (!t->cfg.log) return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    t->cfg.log(t->cfg.log_ctx, line);
}

static flow *find(qk_tunnel *t, const void *c, uint64_t sid)
{
    for (size_t i = 0; i < t->n_flows; i++) {
        flow *f = t->flows[i];
        if (f->c == c && f->sid == sid) return f;
    }
    return NULL;
}

static void flow_free(flow *f, bool abort_tcp)
{
    qk_tunnel *t = f->t;
    ev_io_stop(t->ev, &f->rw);
    ev_io_stop(t->ev, &f->ww);
    if (f->fd >= 0) {
        if (abort_tcp) { /* RST instead of FIN: the other side must see the failure */
            struct linger l = {.l_onoff = 1, .l_linger = 0};
            setsockopt(f->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        }
        close(f->fd);
    }
    tlog(t, "flow %llu closed: %s; tcp->tunnel %llu bytes, tunnel->tcp %llu bytes, %.3f s",
         (unsigned long long)f->id, f->why ? f->why : "done", (unsigned long long)f->up_bytes,
         (unsigned long long)f->down_bytes, ev_now(t->ev) - f->opened_at);
    flow *last = t->flows[--t->n_flows];
    t->flows[f->slot] = last;
    last->slot = f->slot;
    t->stats.flows_closed++;
    if (abort_tcp) t->stats.flows_aborted++;
    qk_socks5_del(f->socks);
    free(f->up);
    free(f->down);
    free(f);
}

/* Either side failed: reset what is still open of the stream, RST the TCP side. */
static void flow_abort(flow *f, uint64_t app_error)
{
    if (!f->why) f->why = app_error == QK_TUNNEL_ERR_PROTOCOL ? "protocol error" : "aborted";
    if (f->c && (!f->fin_sent || !f->stream_fin))
        f->car->abort(f->c, f->sid, app_error, !f->fin_sent, !f->stream_fin);
    flow_free(f, true);
}

/* Both directions ended cleanly: our FIN is queued and TCP got the peer's. */
static bool flow_maybe_done(flow *f)
{
    if (!f->fin_sent || !f->shut_wr) return false;
    flow_free(f, false);
    return true;
}

static void tcp_opts(int fd);

/* SOCKS5: answer rep (a QK_SOCKS5_* code, or the reply bytes in out) and
 * end our side; the client's remaining bytes are dropped until its FIN. */
static void socks_refuse(flow *f, const uint8_t *out, size_t out_len, const char *why)
{
    qk_tunnel *t = f->t;
    f->car->write(f->c, f->sid, out, out_len, true); /* fits: a fresh stream */
    f->fin_sent = true;
    f->socks_failed = true;
    f->why = why;
    t->stats.flows_refused++;
    if (f->fd >= 0) {
        ev_io_stop(t->ev, &f->rw);
        ev_io_stop(t->ev, &f->ww);
        close(f->fd);
        f->fd = -1;
    }
    f->connecting = false;
    tlog(t, "flow %llu: SOCKS5 CONNECT %s:%u refused (reply %u): %s", (unsigned long long)f->id,
         qk_socks5_host(f->socks)[0] ? qk_socks5_host(f->socks) : "?", qk_socks5_port(f->socks),
         out_len > 1 ? out[1] : 0, why);
}

static void socks_refuse_code(flow *f, uint8_t rep, const char *why)
{
    uint8_t out[QK_SOCKS5_REPLY_BYTES];
    qk_socks5_reply(rep, out);
    socks_refuse(f, out, sizeof out, why);
}

/* SOCKS5: resolve, check the allow-list, start connecting. */
static void socks_connect(flow *f)
{
    qk_tunnel *t = f->t;
    char port[8];
    snprintf(port, sizeof port, "%u", qk_socks5_port(f->socks));
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
    if (getaddrinfo(qk_socks5_host(f->socks), port, &hints, &res)) {
        socks_refuse_code(f, QK_SOCKS5_HOST_UNREACHABLE, "the name does not resolve");
        return;
    }
    qk_addr dst = {.len = 0};
    for (struct addrinfo *ai = res; ai && !dst.len; ai = ai->ai_next) {
        qk_addr a = {.len = ai->ai_addrlen};
        memcpy(&a.ss, ai->ai_addr, ai->ai_addrlen);
        if (qk_tunnel_allowed(t->cfg.allow, t->cfg.n_allow, &a)) dst = a;
    }
    freeaddrinfo(res);
    if (!dst.len) {
        socks_refuse_code(f, QK_SOCKS5_NOT_ALLOWED, "destination not in the allow-list");
        return;
    }
    int fd = socket(dst.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (const struct sockaddr *)&dst.ss, dst.len) && errno != EINPROGRESS) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        socks_refuse_code(f, QK_SOCKS5_CONN_REFUSED, "connect to the destination failed");
        return;
    }
    tcp_opts(fd);
    f->fd = fd;
    ev_io_set(&f->rw, fd, EV_READ);
    ev_io_set(&f->ww, fd, EV_WRITE);
    f->connecting = true;
    ev_io_start(t->ev, &f->ww); /* writable = connected (or failed) */
    tlog(t, "flow %llu: SOCKS5 CONNECT %s:%u", (unsigned long long)f->id, qk_socks5_host(f->socks),
         qk_socks5_port(f->socks));
}

/* SOCKS5 before (or instead of) the TCP side: negotiate on the staged
 * stream bytes. Returns 0 to read more, 1 to wait (connecting), -1 when the
 * flow was freed. */
static int socks_step(flow *f)
{
    if (f->down_off < f->down_len && !f->socks_failed) {
        uint8_t out[32];
        size_t used, out_len;
        qk_socks5_result r = qk_socks5_feed(f->socks, f->down + f->down_off,
                                            f->down_len - f->down_off, &used, out, &out_len);
        f->down_off += used;
        if (r == QK_SOCKS5_FAIL) {
            socks_refuse(f, out, out_len, "SOCKS5 negotiation refused or malformed");
        } else {
            if (out_len) f->car->write(f->c, f->sid, out, out_len, false);
            if (r == QK_SOCKS5_REQUEST) {
                socks_connect(f);
                if (f->connecting) return 1;
            }
        }
    }
    if (f->socks_failed) f->down_off = f->down_len; /* dropped */
    if (!f->stream_fin) return 0;
    if (!f->socks_failed) { /* ended before its request */
        flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
        return -1;
    }
    flow_free(f, false);
    return -1;
}

static bool session_authed(const qk_tunnel *t, const void *sess)
{
    for (size_t i = 0; i < t->n_authed; i++)
        if (t->authed[i] == sess) return true;
    return false;
}

/* Free every flow of sess without frames (the session is gone or going). */
static void drop_session_flows(qk_tunnel *t, const void *sess, const char *why)
{
    for (size_t i = t->n_flows; i-- > 0;) /* removal moves the last flow to i: go down */
        if (t->flows[i]->c == sess) {
            t->flows[i]->c = NULL;
            t->flows[i]->why = why;
            flow_free(t->flows[i], true);
        }
}

/* Access denied: close the session with a reason that says why; nothing was forwarded. */
static void deny(qk_tunnel *t, const qk_tunnel_carrier *car, void *sess, const char *why)
{
    tlog(t, "%s", why);
    if (car->close) car->close(sess, QK_TUNNEL_ERR_AUTH, why);
    drop_session_flows(t, sess, why);
}

int qk_tunnel_auth_mac(const qk_tunnel_carrier *car, void *sess, const uint8_t *secret,
                       size_t secret_len, uint8_t out[QK_TUNNEL_AUTH_MAC_BYTES])
{
    uint8_t ekm[32];
    if (!car || !car->export_key) return QK_ERR_UNSUPPORTED;
    int rc = car->export_key(sess, QK_TUNNEL_AUTH_LABEL, ekm, sizeof ekm);
    if (rc) return rc;
    rc = gnutls_hmac_fast(GNUTLS_MAC_SHA256, secret, secret_len, ekm, sizeof ekm, out);
    return rc < 0 ? QK_ERR_TLS : 0;
}

/* Server: collect the authentication stream's MAC (up to its FIN) and check it. */
static int auth_step(flow *f)
{
    qk_tunnel *t = f->t;
    while (f->down_off < f->down_len && f->up_len <= QK_TUNNEL_AUTH_MAC_BYTES)
        f->up[f->up_len++] = f->down[f->down_off++];
    f->down_off = f->down_len;
    if (!f->stream_fin) return 0;
    uint8_t want[QK_TUNNEL_AUTH_MAC_BYTES];
    uint8_t diff = f->up_len != QK_TUNNEL_AUTH_MAC_BYTES;
    if (qk_tunnel_auth_mac(f->car, f->c, t->cfg.secret, t->cfg.secret_len, want)) diff = 1;
    for (size_t i = 0; i < QK_TUNNEL_AUTH_MAC_BYTES; i++) diff |= (uint8_t)(want[i] ^ f->up[i]);
    if (t->cfg.secret_len && diff) { /* constant time above */
        deny(t, f->car, f->c, "access denied: wrong secret");
        return -1;
    }
    if (t->n_authed == t->cap_authed) {
        size_t cap = t->cap_authed ? 2 * t->cap_authed : 8;
        void **a = realloc(t->authed, cap * sizeof *a);
        if (!a) {
            deny(t, f->car, f->c, "access denied: out of memory");
            return -1;
        }
        t->authed = a;
        t->cap_authed = cap;
    }
    t->authed[t->n_authed++] = f->c;
    static const uint8_t okb = 0;
    f->car->write(f->c, f->sid, &okb, 1, true); /* the client may open flows now */
    f->fin_sent = true;
    f->why = "authenticated";
    tlog(t, "flow %llu: the client proved the secret", (unsigned long long)f->id);
    flow_free(f, false);
    return -1;
}

static int connect_target(flow *f);
static int socks_step(flow *f);

/* Server, before any TCP side: the authentication stream, the gate, SOCKS5.
 * Returns 0 to read more, 1 to wait (connecting), -1 when the flow was freed. */
static int pre_tcp_step(flow *f)
{
    if (f->preamble) return 0;
    if (f->auth) return auth_step(f);
    if (f->gate) {
        if (!session_authed(f->t, f->c)) {
            deny(f->t, f->car, f->c,
                 "access denied: a flow before authentication (missing --secret-file?)");
            return -1;
        }
        f->gate = false;
        if (!f->socks) return connect_target(f);
    }
    return socks_step(f);
}

/* Stream -> TCP. Returns false when the flow was freed. */
static bool pump_down(flow *f)
{
    qk_tunnel *t = f->t;
    if (f->connecting) return true;
    for (;;) {
        if (f->fd < 0) {
            int r = pre_tcp_step(f);
            if (r) return r > 0;
        } else if (f->down_off < f->down_len) {
            ssize_t w = send(f->fd, f->down + f->down_off, f->down_len - f->down_off, MSG_NOSIGNAL);
            if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                ev_io_start(t->ev, &f->ww);
                return true;
            }
            if (w < 0) {
                f->why = "TCP send failed (reset by the TCP peer)";
                flow_abort(f, QK_TUNNEL_ERR_TCP);
                return false;
            }
            f->down_off += (size_t)w;
            f->down_bytes += (uint64_t)w;
            t->stats.quic_to_tcp_bytes += (uint64_t)w;
            continue;
        } else {
            ev_io_stop(t->ev, &f->ww);
        }
        if (f->stream_fin && f->fd >= 0) {
            if (!f->shut_wr) {
                shutdown(f->fd, SHUT_WR); /* the peer's FIN, passed on */
                f->shut_wr = true;
            }
            return !flow_maybe_done(f);
        }
        bool fin = false;
        long n = f->car->read(f->c, f->sid, f->down, t->cfg.buf_bytes, &fin);
        if (n == QK_ERR_AGAIN) return true;
        if (n < 0) { /* reset by the peer, or gone */
            f->why = "stream reset by the tunnel peer";
            flow_abort(f, QK_TUNNEL_ERR_TCP);
            return false;
        }
        f->down_off = 0;
        f->down_len = (size_t)n;
        if (f->preamble && n > 0) {
            f->auth = f->gate && f->down[0] == QK_TUNNEL_AUTH_PREAMBLE;
            if (f->down[0] != QK_TUNNEL_PREAMBLE && !f->auth) {
                flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
                return false;
            }
            f->preamble = false;
            f->down_off = 1;
        }
        if (fin) {
            if (f->preamble) { /* ended before its first byte */
                flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
                return false;
            }
            f->stream_fin = true;
        }
    }
}

/* TCP -> stream. Returns true when something was queued on the stream; sets
 * *gone when the flow was freed. */
static bool pump_up(flow *f, bool *gone)
{
    qk_tunnel *t = f->t;
    bool queued = false;
    *gone = false;
    if (f->connecting || f->fd < 0) return false;
    for (;;) {
        if (f->up_off < f->up_len) {
            long w = f->car->write(f->c, f->sid, f->up + f->up_off, f->up_len - f->up_off, false);
            if (w < 0) {
                flow_abort(f, QK_TUNNEL_ERR_TCP);
                *gone = true;
                return queued;
            }
            f->up_off += (size_t)w;
            f->up_bytes += (uint64_t)w;
            t->stats.tcp_to_quic_bytes += (uint64_t)w;
            queued = queued || w > 0;
            if (f->up_off < f->up_len) { /* stream full: QK_EV_STREAM_WRITABLE resumes */
                ev_io_stop(t->ev, &f->rw);
                return queued;
            }
            continue;
        }
        if (f->tcp_eof) {
            if (!f->fin_sent) {
                long w = f->car->write(f->c, f->sid, NULL, 0, true);
                if (w < 0) {
                    flow_abort(f, QK_TUNNEL_ERR_TCP);
                    *gone = true;
                    return queued;
                }
                f->fin_sent = true;
                queued = true;
            }
            *gone = flow_maybe_done(f);
            return queued;
        }
        ssize_t n = recv(f->fd, f->up, t->cfg.buf_bytes, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            ev_io_start(t->ev, &f->rw);
            return queued;
        }
        if (n < 0) {
            f->why = "TCP recv failed (reset by the TCP peer)";
            flow_abort(f, QK_TUNNEL_ERR_TCP);
            *gone = true;
            return queued;
        }
        f->up_off = 0;
        f->up_len = (size_t)n;
        if (n == 0) {
            f->tcp_eof = true;
            ev_io_stop(t->ev, &f->rw);
        }
    }
}

static void kick(qk_tunnel *t)
{
    t->cfg.kick(t->cfg.kick_ctx);
}

static void on_tcp_readable(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    flow *f = w->data;
    qk_tunnel *t = f->t;
    bool gone;
    if (pump_up(f, &gone) || gone) kick(t); /* data, FIN, or an abort's RESET_STREAM */
}

static void on_tcp_writable(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    flow *f = w->data;
    qk_tunnel *t = f->t;
    if (f->connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
            if (f->socks) {
                socks_refuse_code(f, QK_SOCKS5_CONN_REFUSED, "connect to the destination failed");
                kick(t);
                return;
            }
            t->stats.flows_refused++;
            f->why = "connect to the target failed";
            flow_abort(f, QK_TUNNEL_ERR_TCP);
            kick(t);
            return;
        }
        f->connecting = false;
        ev_io_stop(t->ev, &f->ww);
        if (f->socks) { /* RFC 1928 §6: succeeded */
            uint8_t out[QK_SOCKS5_REPLY_BYTES];
            qk_socks5_reply(QK_SOCKS5_OK, out);
            f->car->write(f->c, f->sid, out, sizeof out, false);
            qk_socks5_del(f->socks);
            f->socks = NULL;
        }
    }
    /* Draining TCP's buffer lets us read (and credit) more of the stream. */
    if (pump_down(f)) {
        bool gone;
        pump_up(f, &gone);
    }
    kick(t);
}

static flow *flow_new(qk_tunnel *t, const qk_tunnel_carrier *car, void *c, uint64_t sid, int fd)
{
    if (t->n_flows >= t->cfg.max_flows) return NULL;
    flow *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->up = malloc(t->cfg.buf_bytes);
    f->down = malloc(t->cfg.buf_bytes);
    if (!f->up || !f->down) {
        free(f->up);
        free(f->down);
        free(f);
        return NULL;
    }
    f->t = t;
    f->car = car;
    f->c = c;
    f->sid = sid;
    f->fd = fd;
    ev_io_init(&f->rw, on_tcp_readable, fd, EV_READ);
    ev_io_init(&f->ww, on_tcp_writable, fd, EV_WRITE);
    f->rw.data = f->ww.data = f;
    f->slot = t->n_flows;
    t->flows[t->n_flows++] = f;
    t->stats.flows_opened++;
    f->id = t->stats.flows_opened;
    f->opened_at = ev_now(t->ev);
    tlog(t, "flow %llu opened on stream %llu", (unsigned long long)f->id, (unsigned long long)sid);
    return f;
}

static void tcp_opts(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* QUIC packs; TCP must not wait */
}

/* Server: the peer opened a stream; connect its TCP side to the target. */
static bool on_stream_opened(qk_tunnel *t, const qk_tunnel_carrier *car, void *c, uint64_t sid)
{
    /* The TCP side waits for the preamble (a secret) or the SOCKS5 request. */
    bool defer = t->cfg.socks5 || t->cfg.secret_len;
    flow *f = flow_new(t, car, c, sid, -1);
    qk_socks5 *sk = NULL;
    if (f && t->cfg.socks5) qk_socks5_new(t->cfg.socks_user, t->cfg.socks_pass, &sk);
    if (!f || (t->cfg.socks5 && !sk)) {
        if (f) flow_free(f, false);
        t->stats.flows_refused++;
        car->abort(c, sid, QK_TUNNEL_ERR_TCP, true, true);
        return true;
    }
    f->preamble = true;
    f->socks = sk;
    f->gate = t->cfg.secret_len > 0;
    if (defer) return false;
    return connect_target(f) < 0; /* connect at once: the target may speak first */
}

/* Server: connect the flow's TCP side to the fixed target. Returns 1
 * (connecting) or -1 (failed; the flow was freed). */
static int connect_target(flow *f)
{
    qk_tunnel *t = f->t;
    int fd = socket(t->cfg.target.ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (const struct sockaddr *)&t->cfg.target.ss, t->cfg.target.len) &&
        errno != EINPROGRESS) {
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        t->stats.flows_refused++;
        f->why = "connect to the target failed";
        flow_abort(f, QK_TUNNEL_ERR_TCP);
        return -1;
    }
    tcp_opts(fd);
    f->fd = fd;
    ev_io_set(&f->rw, fd, EV_READ);
    ev_io_set(&f->ww, fd, EV_WRITE);
    f->connecting = true;
    ev_io_start(t->ev, &f->ww); /* writable = connected (or failed) */
    return 1;
}

/* Client: a TCP connection arrived; give it a stream. */
static void on_accept(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    qk_tunnel *t = w->data;
    bool queued = false;
    for (;;) {
        int fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break; /* EAGAIN, or a transient error: the watcher fires again */
        uint64_t sid;
        flow *f = NULL;
        if (t->conn && t->n_flows < t->cfg.max_flows && !t->car->open(t->conn, &sid))
            f = flow_new(t, t->car, t->conn, sid, fd);
        if (!f) { /* at the flow limit or the peer's stream limit: refuse now */
            t->stats.flows_refused++;
            tlog(t, "refused a TCP connection: %s",
                 !t->conn ? "no connection to the tunnel server (redialling)"
                          : "at the flow limit or the server's stream limit");
            struct linger l = {.l_onoff = 1, .l_linger = 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
            close(fd);
            continue;
        }
        tcp_opts(fd);
        static const uint8_t pre = QK_TUNNEL_PREAMBLE;
        t->car->write(t->conn, sid, &pre, 1, false); /* fits: the stream is empty */
        queued = true;
        bool gone;
        pump_up(f, &gone);
        if (!gone) ev_io_start(t->ev, &f->rw);
    }
    if (queued) kick(t);
}

/* qk_tunnel_config crosses the boundary at the caller's sizeof (base/abi.h):
 * the first release's ends with log_ctx. */
#define TUNNEL_CONFIG_V1_BYTES QK_ABI_END(qk_tunnel_config, log_ctx)
QK_ABI_LAST_FIELD(qk_tunnel_config, log_ctx);

int qk_tunnel_new_sized(struct ev_loop *ev, const qk_tunnel_config *caller, size_t caller_bytes,
                        qk_tunnel **out)
{
    qk_tunnel_config c = {0};
    const qk_tunnel_config *cfg = &c;
    if (!caller) return QK_ERR_INVALID_ARG;
    int abi_rc = qk_abi_copy_in(&c, sizeof c, caller, caller_bytes, TUNNEL_CONFIG_V1_BYTES);
    if (abi_rc) return abi_rc;
    if (!ev || !out || !cfg->kick) return QK_ERR_INVALID_ARG;
    if (cfg->server && !cfg->socks5 && !cfg->target.len) return QK_ERR_INVALID_ARG;
    qk_tunnel *t = calloc(1, sizeof *t);
    if (!t) return QK_ERR_NOMEM;
    t->ev = ev;
    t->cfg = *cfg;
    if (!t->cfg.max_flows) t->cfg.max_flows = QK_TUNNEL_DEFAULT_MAX_FLOWS;
    if (!t->cfg.buf_bytes) t->cfg.buf_bytes = QK_TUNNEL_DEFAULT_BUF_BYTES;
    t->flows = calloc(t->cfg.max_flows, sizeof *t->flows);
    if (!t->flows) {
        free(t);
        return QK_ERR_NOMEM;
    }
    if (!t->cfg.hold_ns) t->cfg.hold_ns = QK_TUNNEL_DEFAULT_HOLD_NS;
    t->lfd = -1;
    *out = t;
    return 0;
}

void qk_tunnel_del(qk_tunnel *t)
{
    if (!t) return;
    while (t->n_flows) {
        t->flows[t->n_flows - 1]->why = "tunnel stopped";
        flow_abort(t->flows[t->n_flows - 1], QK_TUNNEL_ERR_TCP);
    }
    if (t->lfd >= 0) {
        ev_io_stop(t->ev, &t->accept_w);
        close(t->lfd);
    }
    ev_timer_stop(t->ev, &t->hold_w);
    free(t->authed);
    free(t->flows);
    free(t);
}

int qk_tunnel_listen_on(qk_tunnel *t, const qk_addr *addr, const qk_tunnel_carrier *car, void *sess)
{
    if (!t || !addr || !car || !sess || !addr->len) return QK_ERR_INVALID_ARG;
    if (t->cfg.server || t->lfd >= 0) return QK_ERR_STATE;
    int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return QK_ERR_IO;
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (addr->ss.ss_family == AF_INET6) /* [::]: IPv4 too, whatever net.ipv6.bindv6only says */
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) || listen(fd, 128)) {
        int e = errno;
        close(fd);
        errno = e;
        return QK_ERR_IO;
    }
    t->lfd = fd;
    t->car = car;
    t->conn = sess;
    ev_io_init(&t->accept_w, on_accept, fd, EV_READ);
    t->accept_w.data = t;
    ev_io_start(t->ev, &t->accept_w);
    return 0;
}

/* No session for hold_ns: accept again, refusing (on_accept sees no conn). */
static void on_hold(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    qk_tunnel *t = w->data;
    tlog(t, "no connection to the tunnel server for %.1f s: refusing new TCP connections",
         (double)t->cfg.hold_ns / 1e9);
    ev_io_start(t->ev, &t->accept_w);
}

/* The client's session is gone: new TCP connections wait in the backlog. */
static void session_down(qk_tunnel *t)
{
    t->conn = NULL;
    if (t->lfd < 0) return;
    ev_io_stop(t->ev, &t->accept_w);
    if (ev_is_active(&t->hold_w)) return;
    ev_timer_init(&t->hold_w, on_hold, (double)t->cfg.hold_ns / 1e9, 0.0);
    t->hold_w.data = t;
    ev_timer_start(t->ev, &t->hold_w);
}

int qk_tunnel_set_session(qk_tunnel *t, const qk_tunnel_carrier *car, void *sess)
{
    if (!t || (sess && !car)) return QK_ERR_INVALID_ARG;
    if (t->cfg.server || t->lfd < 0) return QK_ERR_STATE;
    if (!sess) {
        session_down(t);
        return 0;
    }
    t->car = car;
    t->conn = sess;
    ev_timer_stop(t->ev, &t->hold_w);
    ev_io_start(t->ev, &t->accept_w); /* the backlog's connections get streams now */
    return 0;
}

int qk_tunnel_listen(qk_tunnel *t, const qk_addr *addr, qk_conn *c)
{
    return qk_tunnel_listen_on(t, addr, &qk_tunnel_carrier_quic, c);
}

int qk_tunnel_listen_addr(const qk_tunnel *t, qk_addr *out)
{
    if (!t || !out || t->lfd < 0) return QK_ERR_STATE;
    memset(out, 0, sizeof *out);
    out->len = sizeof out->ss;
    if (getsockname(t->lfd, (struct sockaddr *)&out->ss, &out->len)) return QK_ERR_IO;
    return 0;
}

/* Client: the server answered our authentication stream (0x00, FIN = ok). */
static bool auth_answer(qk_tunnel *t, const qk_tunnel_carrier *car, bool reset)
{
    void *sess = t->auth_sess;
    uint8_t b[8];
    bool fin = false;
    long n = reset ? -1 : car->read(sess, t->auth_sid, b, sizeof b, &fin);
    if (n == QK_ERR_AGAIN) return false;
    t->auth_sess = NULL;
    bool ok = n == 1 && b[0] == 0;
    if (t->cfg.on_auth) t->cfg.on_auth(t->cfg.auth_ctx, sess, ok);
    return true;
}

int qk_tunnel_auth(qk_tunnel *t, const qk_tunnel_carrier *car, void *sess)
{
    if (!t || !car || !sess) return QK_ERR_INVALID_ARG;
    if (t->cfg.server || !t->cfg.secret_len) return QK_ERR_STATE;
    uint8_t msg[1 + QK_TUNNEL_AUTH_MAC_BYTES] = {QK_TUNNEL_AUTH_PREAMBLE};
    int rc = qk_tunnel_auth_mac(car, sess, t->cfg.secret, t->cfg.secret_len, msg + 1);
    uint64_t sid;
    if (!rc) rc = car->open(sess, &sid);
    if (rc) return rc;
    long w = car->write(sess, sid, msg, sizeof msg, true); /* fits: a fresh stream */
    if (w < 0) return (int)w;
    t->auth_sess = sess;
    t->auth_sid = sid;
    kick(t);
    return 0;
}

bool qk_tunnel_on_stream_event(qk_tunnel *t, const qk_tunnel_carrier *car, void *sess,
                               qk_tunnel_ev type, uint64_t sid)
{
    flow *f;
    bool gone;
    switch (type) {
    case QK_TUNNEL_EV_OPENED:
        if (!t->cfg.server) { /* streams are the client's to open */
            car->abort(sess, sid, QK_TUNNEL_ERR_PROTOCOL, true, true);
            return true;
        }
        if (find(t, sess, sid)) return false;
        if (car->accepted) car->accepted(sess, sid);
        return on_stream_opened(t, car, sess, sid);
    case QK_TUNNEL_EV_READABLE:
        if (sess == t->auth_sess && sid == t->auth_sid) return auth_answer(t, car, false);
        f = find(t, sess, sid);
        if (f) pump_down(f);
        return true; /* reading returns flow-control credit */
    case QK_TUNNEL_EV_WRITABLE:
        f = find(t, sess, sid);
        if (!f) return false;
        return pump_up(f, &gone);
    case QK_TUNNEL_EV_RESET: /* the peer gave up on its side: RST the TCP side */
        if (sess == t->auth_sess && sid == t->auth_sid) return auth_answer(t, car, true);
        f = find(t, sess, sid);
        if (!f) return false;
        f->why = "stream reset by the tunnel peer";
        flow_abort(f, QK_TUNNEL_ERR_TCP);
        return true;
    case QK_TUNNEL_EV_CLOSED:
        drop_session_flows(t, sess, "tunnel connection closed"); /* freed: no frames */
        for (size_t i = 0; i < t->n_authed; i++)
            if (t->authed[i] == sess) t->authed[i--] = t->authed[--t->n_authed];
        if (t->auth_sess == sess) t->auth_sess = NULL;
        if (t->conn == sess) session_down(t);
        return false;
    }
    return false;
}

bool qk_tunnel_on_event(qk_tunnel *t, const qk_event *ev)
{
    const qk_tunnel_carrier *q = &qk_tunnel_carrier_quic;
    switch (ev->type) {
    case QK_EV_STREAM_OPENED:
        if (ev->stream_id & 2) { /* RFC 9000 §2.1: unidirectional; not ours */
            qk_stream_stop(ev->conn, ev->stream_id, QK_TUNNEL_ERR_PROTOCOL);
            return true;
        }
        return qk_tunnel_on_stream_event(t, q, ev->conn, QK_TUNNEL_EV_OPENED, ev->stream_id);
    case QK_EV_STREAM_READABLE:
        return qk_tunnel_on_stream_event(t, q, ev->conn, QK_TUNNEL_EV_READABLE, ev->stream_id);
    case QK_EV_STREAM_WRITABLE:
        return qk_tunnel_on_stream_event(t, q, ev->conn, QK_TUNNEL_EV_WRITABLE, ev->stream_id);
    case QK_EV_STREAM_RESET:
    case QK_EV_STREAM_STOP:
        return qk_tunnel_on_stream_event(t, q, ev->conn, QK_TUNNEL_EV_RESET, ev->stream_id);
    case QK_EV_CLOSED: return qk_tunnel_on_stream_event(t, q, ev->conn, QK_TUNNEL_EV_CLOSED, 0);
    default: return false;
    }
}

size_t qk_tunnel_flow_count(const qk_tunnel *t)
{
    return t ? t->n_flows : 0;
}

void qk_tunnel_get_stats_sized(const qk_tunnel *t, qk_tunnel_stats *out, size_t out_bytes)
{
    if (t && out) qk_abi_copy_out(out, out_bytes, &t->stats, sizeof t->stats);
}
