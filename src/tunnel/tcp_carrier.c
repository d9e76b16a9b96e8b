/* SPDX-License-Identifier: MIT */
/* yamux over TLS 1.3 over TCP: the tunnel's carrier where UDP is blocked
 * (include/quack/tunnel.h, docs/tunnel.md). Each TCP connection runs a
 * GnuTLS session (the server's key pinned by SHA-256 of its
 * SubjectPublicKeyInfo, as for QUIC) and a qk_yamux session on top; yamux
 * streams are the tunnel's flows (qk_tunnel_carrier_yamux). */
#include <quack/tunnel.h>
#include <quack/yamux.h>

#include "crypto/pin_gnutls.h"
#include "tunnel/tcp_carrier.h"

#include "base/abi.h"

#include <errno.h>
#include <ev.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define TC_BUF_BYTES (64u << 10)
/* Server bounds: TCP connections at once, and time to finish the TLS
 * handshake (a peer that connects and stalls must not hold memory). */
#define TC_MAX_CONNS         256
#define TC_HANDSHAKE_TIMEOUT 10.0
/* tconn.magic: qk_yamux_user of a session points to one of ours. */
#define TC_MAGIC 0x7463636fu

typedef struct tconn {
    uint32_t magic;
    qk_tunnel_tcp *o;
    struct tconn *next;
    int fd;
    gnutls_session_t tls;
    qk_yamux *y;
    bool connecting, up, dead;
    int connect_err; /* client: connect() failed at once (reported from the loop) */
    const char *why;
    qk_tunnel_tcp_end end; /* why it ended (client: qk_tunnel_tcp_ended) */
    uint32_t goaway_code;
    ev_io rw, ww;
    ev_timer timer;
    size_t out_len, out_off;
    uint8_t out[TC_BUF_BYTES], in[TC_BUF_BYTES];
} tconn;

struct qk_tunnel_tcp {
    struct ev_loop *ev;
    qk_tunnel *t;
    qk_tunnel_tcp_config cfg;
    gnutls_certificate_credentials_t cred;
    uint8_t pin[32];
    bool has_pin;
    int lfd;
    ev_io accept_w;
    tconn *conns;
    size_t n_conns;
    char why[160];
    qk_tunnel_tcp_end end; /* client: how the last session ended */
    uint32_t end_code;
};

static qk_time now_ns(struct ev_loop *ev)
{
    return (qk_time)(ev_now(ev) * 1e9);
}

static void tc_pump(tconn *c);

static void tc_free(tconn *c)
{
    qk_tunnel_tcp *o = c->o;
    for (tconn **pp = &o->conns; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            o->n_conns--;
            break;
        }
    ev_io_stop(o->ev, &c->rw);
    ev_io_stop(o->ev, &c->ww);
    ev_timer_stop(o->ev, &c->timer);
    if (c->y && o->t)
        qk_tunnel_on_stream_event(o->t, &qk_tunnel_carrier_yamux, c->y, QK_TUNNEL_EV_CLOSED, 0);
    bool was_up = c->up;
    o->end = c->end;
    o->end_code = c->goaway_code;
    c->magic = 0;
    if (c->tls) gnutls_deinit(c->tls);
    close(c->fd);
    qk_yamux_del(c->y);
    const char *why = c->why ? c->why : "closed";
    free(c);
    if (!o->cfg.server && o->cfg.on_session) o->cfg.on_session(o->cfg.ctx, NULL, was_up, why);
}

static ssize_t push(gnutls_transport_ptr_t p, const void *buf, size_t len)
{
    return send((int)(intptr_t)p, buf, len, MSG_NOSIGNAL); /* no SIGPIPE */
}

/* Client: the server's key must hash to the pin (same scheme as QUIC). */
static int verify_pin(gnutls_session_t s)
{
    qk_tunnel_tcp *o = gnutls_session_get_ptr(s);
    return qk_gnutls_peer_pin_ok(s, o->pin) ? 0 : -1;
}

static void tc_fail(tconn *c, const char *why)
{
    if (!c->dead) c->why = why;
    c->dead = true;
}

static void on_io(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    tc_pump(w->data);
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)revents;
    tconn *c = w->data;
    if (!c->up) { /* the handshake timer */
        tc_fail(c, "TLS handshake timed out");
        tc_free(c);
        return;
    }
    qk_yamux_on_timeout(c->y, now_ns(ev));
    tc_pump(c);
}

static tconn *tc_new(qk_tunnel_tcp *o, int fd)
{
    tconn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->magic = TC_MAGIC;
    c->o = o;
    c->fd = fd;
    unsigned flags = (o->cfg.server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_NONBLOCK;
    if (gnutls_init(&c->tls, flags) < 0 ||
        gnutls_priority_set_direct(c->tls, "NORMAL:-VERS-ALL:+VERS-TLS1.3", NULL) < 0 ||
        gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, o->cred) < 0) {
        if (c->tls) gnutls_deinit(c->tls);
        free(c);
        return NULL;
    }
    gnutls_session_set_ptr(c->tls, o);
    if (!o->cfg.server && o->has_pin) gnutls_session_set_verify_function(c->tls, verify_pin);
    gnutls_transport_set_ptr(c->tls, (gnutls_transport_ptr_t)(intptr_t)fd);
    gnutls_transport_set_push_function(c->tls, push);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ev_io_init(&c->rw, on_io, fd, EV_READ);
    ev_io_init(&c->ww, on_io, fd, EV_WRITE);
    ev_timer_init(&c->timer, on_timer, 0, 0);
    c->rw.data = c->ww.data = c->timer.data = c;
    c->next = o->conns;
    o->conns = c;
    o->n_conns++;
    ev_io_start(o->ev, &c->rw);
    ev_timer_set(&c->timer, TC_HANDSHAKE_TIMEOUT, 0);
    ev_timer_start(o->ev, &c->timer);
    return c;
}

/* TLS handshake; then the yamux session starts. Returns true when up. */
static bool tc_handshake(tconn *c)
{
    qk_tunnel_tcp *o = c->o;
    if (c->connecting) {
        int err = c->connect_err;
        socklen_t len = sizeof err;
        if (!err) getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            snprintf(o->why, sizeof o->why, "TCP connect failed: %s", strerror(err));
            tc_fail(c, o->why);
            return false;
        }
        c->connecting = false;
    }
    int rc = gnutls_handshake(c->tls);
    if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED) {
        if (gnutls_record_get_direction(c->tls))
            ev_io_start(o->ev, &c->ww);
        else
            ev_io_stop(o->ev, &c->ww);
        return false;
    }
    if (rc < 0) {
        bool bad_key =
            rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR || rc == GNUTLS_E_CERTIFICATE_ERROR;
        snprintf(o->why, sizeof o->why, "TLS handshake failed: %s%s", gnutls_strerror(rc),
                 bad_key ? " (server key does not match the pinned SHA-256)" : "");
        tc_fail(c, o->why);
        if (bad_key) c->end = QK_TUNNEL_TCP_BAD_KEY;
        return false;
    }
    qk_yamux_config yc;
    qk_yamux_config_default(&yc);
    yc.server = o->cfg.server;
    yc.fixed_window = o->cfg.fixed_window;
    if (o->cfg.max_streams) yc.max_streams = (uint32_t)o->cfg.max_streams;
    if (o->cfg.ping_interval_ns) yc.ping_interval_ns = o->cfg.ping_interval_ns;
    if (qk_yamux_new(&yc, now_ns(o->ev), &c->y)) {
        tc_fail(c, "out of memory");
        return false;
    }
    qk_yamux_set_user(c->y, c); /* qk_tunnel_tcp_export_key, qk_tunnel_tcp_close_session */
    c->up = true;
    ev_timer_stop(o->ev, &c->timer); /* from now on the yamux timer */
    ev_io_stop(o->ev, &c->ww);
    if (!o->cfg.server && o->cfg.on_session) o->cfg.on_session(o->cfg.ctx, c->y, true, NULL);
    return true;
}

/* Client: the server sent GoAway (it stops, or refused us): end the session
 * now, so its flows are reset and the client can redial at once, instead of
 * waiting for the server to close the TCP connection. */
static void on_goaway(tconn *c, uint32_t code)
{
    qk_tunnel_tcp *o = c->o;
    if (o->cfg.server) return; /* a client that stops: its TCP connection ends next */
    snprintf(o->why, sizeof o->why, "the server sent GoAway (%s)",
             code == QK_YAMUX_GOAWAY_NORMAL     ? "normal: the server is going away"
             : code == QK_TUNNEL_ERR_AUTH       ? "access denied"
             : code == QK_YAMUX_GOAWAY_PROTOCOL ? "protocol error"
                                                : "internal error");
    tc_fail(c, o->why);
    c->end = QK_TUNNEL_TCP_GOAWAY;
    c->goaway_code = code;
}

/* yamux events -> tunnel events. */
static void tc_events(tconn *c)
{
    qk_tunnel *t = c->o->t;
    const qk_tunnel_carrier *y = &qk_tunnel_carrier_yamux;
    qk_yamux_event ev;
    while (qk_yamux_poll_event(c->y, &ev)) {
        uint32_t sid;
        switch (ev.type) {
        case QK_YAMUX_EV_INCOMING:
            while (qk_yamux_accept(c->y, &sid) == 0)
                if (t) qk_tunnel_on_stream_event(t, y, c->y, QK_TUNNEL_EV_OPENED, sid);
            break;
        case QK_YAMUX_EV_READABLE:
            if (t) qk_tunnel_on_stream_event(t, y, c->y, QK_TUNNEL_EV_READABLE, ev.stream_id);
            break;
        case QK_YAMUX_EV_WRITABLE:
            if (t) qk_tunnel_on_stream_event(t, y, c->y, QK_TUNNEL_EV_WRITABLE, ev.stream_id);
            break;
        case QK_YAMUX_EV_RESET:
            if (t) qk_tunnel_on_stream_event(t, y, c->y, QK_TUNNEL_EV_RESET, ev.stream_id);
            break;
        case QK_YAMUX_EV_GOAWAY: on_goaway(c, (uint32_t)ev.code); break;
        case QK_YAMUX_EV_CLOSED: tc_fail(c, qk_yamux_error_reason(c->y)); break;
        default: break;
        }
    }
}

static void tc_read(tconn *c)
{
    for (;;) {
        ssize_t r = gnutls_record_recv(c->tls, c->in, sizeof c->in);
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) return;
        if (r <= 0) {
            tc_fail(c, r == 0 ? "the peer closed the connection" : gnutls_strerror((int)r));
            return;
        }
        if (qk_yamux_recv(c->y, c->in, (size_t)r, now_ns(c->o->ev)) < 0) {
            tc_fail(c, qk_yamux_error_reason(c->y)); /* GoAway queued: flushed below */
            return;
        }
        tc_events(c);
        if (c->dead) return;
    }
}

static void tc_write(tconn *c)
{
    for (;;) {
        if (c->out_off == c->out_len) {
            c->out_off = 0;
            c->out_len = qk_yamux_send(c->y, c->out, sizeof c->out, now_ns(c->o->ev));
            if (!c->out_len) break;
        }
        ssize_t w = gnutls_record_send(c->tls, c->out + c->out_off, c->out_len - c->out_off);
        if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED) {
            ev_io_start(c->o->ev, &c->ww); /* retried with the same bytes */
            return;
        }
        if (w < 0) {
            tc_fail(c, gnutls_strerror((int)w));
            return;
        }
        c->out_off += (size_t)w;
    }
    ev_io_stop(c->o->ev, &c->ww);
}

static void tc_pump(tconn *c)
{
    if (!c->up && !c->dead && !tc_handshake(c)) {
        if (c->dead) tc_free(c);
        return;
    }
    if (!c->dead) tc_read(c);
    if (!c->dead) tc_events(c);
    tc_write(c); /* also flushes a GoAway after an error */
    if (c->dead) {
        tc_free(c);
        return;
    }
    ev_timer_stop(c->o->ev, &c->timer);
    qk_time due = qk_yamux_next_timeout(c->y), now = now_ns(c->o->ev);
    if (due != QK_TIME_INFINITE) {
        ev_timer_set(&c->timer, due > now ? (double)(due - now) / 1e9 : 0, 0);
        ev_timer_start(c->o->ev, &c->timer);
    }
}

void qk_tunnel_tcp_kick(void *ctx)
{
    qk_tunnel_tcp *o = ctx;
    for (tconn *c = o->conns, *next; c; c = next) {
        next = c->next;
        if (c->up) tc_pump(c);
    }
}

static void on_accept(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    qk_tunnel_tcp *o = w->data;
    for (;;) {
        int fd = accept4(o->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        tconn *c = o->n_conns < TC_MAX_CONNS ? tc_new(o, fd) : NULL;
        if (!c) {
            close(fd);
            continue;
        }
        tc_pump(c);
    }
}

static int creds(qk_tunnel_tcp *o)
{
    if (gnutls_certificate_allocate_credentials(&o->cred) < 0) return QK_ERR_NOMEM;
    if (!o->cfg.server) return 0;
    int rc;
    if (o->cfg.cert_pem) {
        gnutls_datum_t cert = {(unsigned char *)o->cfg.cert_pem, (unsigned)strlen(o->cfg.cert_pem)};
        gnutls_datum_t key = {(unsigned char *)o->cfg.key_pem, (unsigned)strlen(o->cfg.key_pem)};
        rc = gnutls_certificate_set_x509_key_mem(o->cred, &cert, &key, GNUTLS_X509_FMT_PEM);
    } else {
        rc = gnutls_certificate_set_x509_key_file(o->cred, o->cfg.cert_file, o->cfg.key_file,
                                                  GNUTLS_X509_FMT_PEM);
    }
    return rc < 0 ? QK_ERR_CONFIG : 0;
}

static int start(qk_tunnel_tcp *o)
{
    const qk_addr *a = &o->cfg.addr;
    int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return QK_ERR_IO;
    if (o->cfg.server) {
        int one = 1, zero = 0;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (a->ss.ss_family == AF_INET6) /* [::]: IPv4 too, whatever net.ipv6.bindv6only says */
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        if (bind(fd, (const struct sockaddr *)&a->ss, a->len) || listen(fd, 128)) {
            int e = errno;
            close(fd);
            errno = e;
            return QK_ERR_IO;
        }
        o->lfd = fd;
        ev_io_init(&o->accept_w, on_accept, fd, EV_READ);
        o->accept_w.data = o;
        ev_io_start(o->ev, &o->accept_w);
        return 0;
    }
    int err =
        connect(fd, (const struct sockaddr *)&a->ss, a->len) && errno != EINPROGRESS ? errno : 0;
    tconn *c = tc_new(o, fd);
    if (!c) {
        close(fd);
        return QK_ERR_NOMEM;
    }
    c->connecting = true;
    c->connect_err = err;       /* refused at once (loopback): on_session says so from the loop */
    ev_io_start(o->ev, &c->ww); /* writable = connected (or failed) */
    if (err) ev_feed_event(o->ev, &c->ww, EV_WRITE);
    return 0;
}

/* qk_tunnel_tcp_config crosses the boundary at the caller's sizeof
 * (base/abi.h): the first release's ends with ctx. */
#define TCP_CONFIG_V1_BYTES QK_ABI_END(qk_tunnel_tcp_config, ctx)
QK_ABI_LAST_FIELD(qk_tunnel_tcp_config, ctx);

int qk_tunnel_tcp_new_sized(struct ev_loop *ev, qk_tunnel *t, const qk_tunnel_tcp_config *caller,
                            size_t caller_bytes, qk_tunnel_tcp **out)
{
    qk_tunnel_tcp_config c = {0};
    const qk_tunnel_tcp_config *cfg = &c;
    if (!caller) return QK_ERR_INVALID_ARG;
    int abi_rc = qk_abi_copy_in(&c, sizeof c, caller, caller_bytes, TCP_CONFIG_V1_BYTES);
    if (abi_rc) return abi_rc;
    if (!ev || !out || !cfg->addr.len) return QK_ERR_INVALID_ARG;
    if (cfg->server && !cfg->cert_pem && !cfg->cert_file) return QK_ERR_INVALID_ARG;
    qk_tunnel_tcp *o = calloc(1, sizeof *o);
    if (!o) return QK_ERR_NOMEM;
    o->ev = ev;
    o->t = t;
    o->cfg = *cfg;
    o->lfd = -1;
    if (cfg->pin_sha256) {
        memcpy(o->pin, cfg->pin_sha256, sizeof o->pin);
        o->has_pin = true;
    }
    int rc = creds(o);
    if (!rc) rc = start(o);
    if (rc) {
        int e = errno;
        qk_tunnel_tcp_del(o);
        errno = e;
        return rc;
    }
    *out = o;
    return 0;
}

int qk_tunnel_tcp_redial(qk_tunnel_tcp *o)
{
    if (!o || o->cfg.server) return QK_ERR_STATE;
    return start(o);
}

void qk_tunnel_tcp_set_tunnel(qk_tunnel_tcp *o, qk_tunnel *t)
{
    if (o) o->t = t;
}

void qk_tunnel_tcp_go_away(qk_tunnel_tcp *o)
{
    if (!o) return;
    if (o->lfd >= 0) { /* a server going away takes no one new: redials are refused at once */
        ev_io_stop(o->ev, &o->accept_w);
        close(o->lfd);
        o->lfd = -1;
    }
    for (tconn *c = o->conns, *next; c; c = next) {
        next = c->next;
        if (!c->up) continue;
        qk_yamux_go_away(c->y, QK_YAMUX_GOAWAY_NORMAL);
        tc_write(c);
        /* RFC 8446 §6.1: close_notify after the GoAway, once it is all out. */
        if (!c->dead && c->out_off == c->out_len) gnutls_bye(c->tls, GNUTLS_SHUT_WR);
    }
}

qk_tunnel_tcp_end qk_tunnel_tcp_ended(const qk_tunnel_tcp *o, uint32_t *goaway_code)
{
    if (!o) return QK_TUNNEL_TCP_LOST;
    if (goaway_code) *goaway_code = o->end_code;
    return o->end;
}

/* The connection a session runs on (NULL: not one of ours). */
static tconn *tc_of(void *sess)
{
    tconn *c = qk_yamux_user(sess);
    return c && c->magic == TC_MAGIC ? c : NULL;
}

int qk_tunnel_tcp_export_key(void *sess, const char *label, uint8_t *out, size_t len)
{
    tconn *c = tc_of(sess);
    if (!c) return QK_ERR_UNSUPPORTED;
    /* RFC 8446 §7.5 (no context), as QUIC's qk_conn_export_keying_material. */
    return gnutls_prf_rfc5705(c->tls, strlen(label), label, 0, NULL, len, (char *)out) < 0
               ? QK_ERR_TLS
               : 0;
}

void qk_tunnel_tcp_close_session(void *sess, uint64_t code, const char *reason)
{
    (void)reason; /* yamux carries no text: the code says it */
    tconn *c = tc_of(sess);
    if (!c) return;
    qk_yamux_go_away(c->y, (uint32_t)code);
    tc_fail(c, reason);
    ev_feed_event(c->o->ev, &c->ww, EV_WRITE); /* flushed and freed from the loop */
}

void qk_tunnel_tcp_del(qk_tunnel_tcp *o)
{
    if (!o) return;
    o->cfg.on_session = NULL;
    o->t = NULL;
    while (o->conns) tc_free(o->conns);
    if (o->lfd >= 0) {
        ev_io_stop(o->ev, &o->accept_w);
        close(o->lfd);
    }
    if (o->cred) gnutls_certificate_free_credentials(o->cred);
    free(o);
}

int qk_tunnel_tcp_local_addr(const qk_tunnel_tcp *o, qk_addr *out)
{
    if (!o || !out || o->lfd < 0) return QK_ERR_STATE;
    memset(out, 0, sizeof *out);
    out->len = sizeof out->ss;
    if (getsockname(o->lfd, (struct sockaddr *)&out->ss, &out->len)) return QK_ERR_IO;
    return 0;
}
