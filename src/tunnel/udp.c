/* SPDX-License-Identifier: MIT */
/* UDP over QUIC DATAGRAM frames (RFC 9221) for `quack tunnel --udp-listen /
 * --udp-to` (include/quack/tunnel.h, docs/tunnel.md).
 *
 * Each DATAGRAM frame carries one UDP payload behind a 4-byte session id.
 * The client gives every source address that sends to its --udp-listen
 * socket a session id; the server gives every (connection, session id) its
 * own UDP socket connected to --udp-to, so replies find their way back.
 * Sessions unused for idle_ns are freed. Nothing is retransmitted: a frame
 * the connection cannot queue is dropped and counted, as UDP would. */
#include <quack/tunnel.h>

#include "base/abi.h"

#include <errno.h>
#include <ev.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define UDP_MAX_PAYLOAD 65535u

typedef struct usess {
    struct qk_tunnel_udp *u;
    uint32_t sid;
    qk_conn *conn; /* server: the connection the session belongs to */
    qk_addr src;   /* client: the application's address */
    int fd;        /* server: socket connected to --udp-to; -1 on the client */
    ev_io rw;
    ev_tstamp last_used;
} usess;

struct qk_tunnel_udp {
    struct ev_loop *ev;
    qk_tunnel_udp_config cfg;
    int lfd; /* client: the --udp-listen socket */
    ev_io lw;
    ev_timer sweep;
    qk_conn *conn; /* client */
    usess **s;
    size_t n;
    uint32_t next_sid;
    qk_tunnel_udp_stats stats;
    uint8_t buf[QK_TUNNEL_UDP_HEADER_BYTES + UDP_MAX_PAYLOAD];
};

static void ulog(qk_tunnel_udp *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void ulog(qk_tunnel_udp *u, const char *fmt, ...)
{
    if (!u->cfg.log) return;
    char line[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    u->cfg.log(u->cfg.log_ctx, line);
}

static void big_buffers(int fd)
{
    int sz = 4 << 20; /* bursts of many small datagrams (1,000 DNS queries at once) */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof sz))
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof sz))
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
}

static void sess_free(qk_tunnel_udp *u, size_t i)
{
    usess *x = u->s[i];
    if (x->fd >= 0) {
        ev_io_stop(u->ev, &x->rw);
        close(x->fd);
    }
    u->s[i] = u->s[--u->n];
    free(x);
}

/* Queue one payload for session sid on c. Returns true when queued. */
static bool send_frame(qk_tunnel_udp *u, qk_conn *c, uint32_t sid, size_t len)
{
    uint8_t *b = u->buf; /* payload already at b + header */
    b[0] = (uint8_t)(sid >> 24);
    b[1] = (uint8_t)(sid >> 16);
    b[2] = (uint8_t)(sid >> 8);
    b[3] = (uint8_t)sid;
    size_t n = QK_TUNNEL_UDP_HEADER_BYTES + len;
    if (!c || (u->cfg.send ? u->cfg.send(u->cfg.send_ctx, c, b, n, u->cfg.urgency)
                           : qk_datagram_send(c, b, n, u->cfg.urgency))) {
        u->stats.dgrams_dropped++;
        return false;
    }
    return true;
}

static usess *sess_add(qk_tunnel_udp *u, uint32_t sid)
{
    if (u->n == u->cfg.max_sessions) return NULL;
    usess *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->u = u;
    x->sid = sid;
    x->fd = -1;
    x->last_used = ev_now(u->ev);
    u->s[u->n++] = x;
    u->stats.sessions_opened++;
    return x;
}

/* Client: datagrams from applications. */
static void on_listen(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    qk_tunnel_udp *u = w->data;
    bool queued = false;
    for (int k = 0; k < 4096; k++) {
        qk_addr src = {.len = sizeof src.ss};
        ssize_t n = recvfrom(u->lfd, u->buf + QK_TUNNEL_UDP_HEADER_BYTES, UDP_MAX_PAYLOAD, 0,
                             (struct sockaddr *)&src.ss, &src.len);
        if (n < 0) break; /* EAGAIN */
        usess *x = NULL;
        for (size_t i = 0; i < u->n && !x; i++)
            if (qk_addr_equal(&u->s[i]->src, &src)) x = u->s[i];
        if (!x && (x = sess_add(u, u->next_sid++)) != NULL) {
            x->src = src;
            ulog(u, "udp session %u opened", x->sid);
        }
        if (!x) {
            u->stats.dgrams_dropped++;
            continue;
        }
        x->last_used = ev_now(u->ev);
        if (send_frame(u, u->conn, x->sid, (size_t)n)) {
            u->stats.dgrams_up++;
            queued = true;
        }
    }
    if (queued) u->cfg.kick(u->cfg.kick_ctx);
}

/* Server: replies from the destination. */
static void on_reply(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    usess *x = w->data;
    qk_tunnel_udp *u = x->u;
    bool queued = false;
    for (int k = 0; k < 4096; k++) {
        ssize_t n = recv(x->fd, u->buf + QK_TUNNEL_UDP_HEADER_BYTES, UDP_MAX_PAYLOAD, 0);
        if (n < 0) break; /* EAGAIN, or ICMP unreachable reported: nothing to pass on */
        x->last_used = ev_now(u->ev);
        if (send_frame(u, x->conn, x->sid, (size_t)n)) {
            u->stats.dgrams_down++;
            queued = true;
        }
    }
    if (queued) u->cfg.kick(u->cfg.kick_ctx);
}

/* Server: a new session gets its own socket connected to --udp-to. */
static usess *server_sess(qk_tunnel_udp *u, qk_conn *c, uint32_t sid)
{
    for (size_t i = 0; i < u->n; i++)
        if (u->s[i]->conn == c && u->s[i]->sid == sid) return u->s[i];
    int fd = socket(u->cfg.addr.ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return NULL;
    if (connect(fd, (const struct sockaddr *)&u->cfg.addr.ss, u->cfg.addr.len)) {
        close(fd);
        return NULL;
    }
    usess *x = sess_add(u, sid);
    if (!x) {
        close(fd);
        return NULL;
    }
    big_buffers(fd);
    x->conn = c;
    x->fd = fd;
    ev_io_init(&x->rw, on_reply, fd, EV_READ);
    x->rw.data = x;
    ev_io_start(u->ev, &x->rw);
    ulog(u, "udp session %u opened", sid);
    return x;
}

static void on_datagram(qk_tunnel_udp *u, const qk_event *ev)
{
    if (ev->len < QK_TUNNEL_UDP_HEADER_BYTES) {
        u->stats.dgrams_dropped++;
        return;
    }
    const uint8_t *d = ev->data;
    uint32_t sid = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
    const uint8_t *pay = d + QK_TUNNEL_UDP_HEADER_BYTES;
    size_t len = ev->len - QK_TUNNEL_UDP_HEADER_BYTES;
    usess *x = NULL;
    if (u->cfg.server) {
        x = server_sess(u, ev->conn, sid);
    } else {
        for (size_t i = 0; i < u->n && !x; i++)
            if (u->s[i]->sid == sid) x = u->s[i];
    }
    if (!x) {
        u->stats.dgrams_dropped++;
        return;
    }
    x->last_used = ev_now(u->ev);
    ssize_t w = u->cfg.server
                    ? send(x->fd, pay, len, 0)
                    : sendto(u->lfd, pay, len, 0, (const struct sockaddr *)&x->src.ss, x->src.len);
    if (w < 0) {
        u->stats.dgrams_dropped++;
        return;
    }
    if (u->cfg.server)
        u->stats.dgrams_up++;
    else
        u->stats.dgrams_down++;
}

static void on_sweep(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)revents;
    qk_tunnel_udp *u = w->data;
    ev_tstamp idle = (double)u->cfg.idle_ns / 1e9;
    for (size_t i = u->n; i-- > 0;)
        if (ev_now(ev) - u->s[i]->last_used > idle) {
            ulog(u, "udp session %u expired (idle %.1f s)", u->s[i]->sid, idle);
            u->stats.sessions_expired++;
            sess_free(u, i);
        }
}

/* qk_tunnel_udp_config crosses the boundary at the caller's sizeof
 * (base/abi.h): the first release's ends with log_ctx. */
#define UDP_CONFIG_V1_BYTES QK_ABI_END(qk_tunnel_udp_config, log_ctx)
QK_ABI_LAST_FIELD(qk_tunnel_udp_config, send_ctx);

int qk_tunnel_udp_new_sized(struct ev_loop *ev, const qk_tunnel_udp_config *caller,
                            size_t caller_bytes, qk_tunnel_udp **out)
{
    qk_tunnel_udp_config c = {0};
    const qk_tunnel_udp_config *cfg = &c;
    if (!caller) return QK_ERR_INVALID_ARG;
    int abi_rc = qk_abi_copy_in(&c, sizeof c, caller, caller_bytes, UDP_CONFIG_V1_BYTES);
    if (abi_rc) return abi_rc;
    if (!ev || !out || !cfg->kick || !cfg->addr.len) return QK_ERR_INVALID_ARG;
    qk_tunnel_udp *u = calloc(1, sizeof *u);
    if (!u) return QK_ERR_NOMEM;
    u->ev = ev;
    u->cfg = *cfg;
    if (!u->cfg.idle_ns) u->cfg.idle_ns = QK_TUNNEL_UDP_DEFAULT_IDLE_NS;
    if (!u->cfg.max_sessions) u->cfg.max_sessions = QK_TUNNEL_UDP_DEFAULT_MAX_SESSIONS;
    u->s = calloc(u->cfg.max_sessions, sizeof *u->s);
    u->lfd = -1;
    u->next_sid = 1;
    if (!u->s) {
        free(u);
        return QK_ERR_NOMEM;
    }
    if (!cfg->server) {
        u->lfd = socket(cfg->addr.ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (u->lfd < 0 || bind(u->lfd, (const struct sockaddr *)&cfg->addr.ss, cfg->addr.len)) {
            int e = errno;
            if (u->lfd >= 0) close(u->lfd);
            free(u->s);
            free(u);
            errno = e;
            return QK_ERR_IO;
        }
        big_buffers(u->lfd);
        ev_io_init(&u->lw, on_listen, u->lfd, EV_READ);
        u->lw.data = u;
        ev_io_start(ev, &u->lw);
    }
    double period = (double)u->cfg.idle_ns / 4e9;
    if (period > 1.0) period = 1.0;
    ev_timer_init(&u->sweep, on_sweep, period, period);
    u->sweep.data = u;
    ev_timer_start(ev, &u->sweep);
    *out = u;
    return 0;
}

void qk_tunnel_udp_del(qk_tunnel_udp *u)
{
    if (!u) return;
    while (u->n) sess_free(u, u->n - 1);
    if (u->lfd >= 0) {
        ev_io_stop(u->ev, &u->lw);
        close(u->lfd);
    }
    ev_timer_stop(u->ev, &u->sweep);
    free(u->s);
    free(u);
}

void qk_tunnel_udp_set_conn(qk_tunnel_udp *u, qk_conn *c)
{
    if (u) u->conn = c;
}

bool qk_tunnel_udp_on_event(qk_tunnel_udp *u, const qk_event *ev)
{
    if (!u) return false;
    if (ev->type == QK_EV_DATAGRAM) {
        on_datagram(u, ev);
        return false; /* the server queues replies from socket callbacks (kick) */
    }
    if (ev->type == QK_EV_CLOSED) {
        if (u->conn == ev->conn) u->conn = NULL;
        for (size_t i = u->n; i-- > 0;)
            if (u->cfg.server && u->s[i]->conn == ev->conn) sess_free(u, i);
    }
    return false;
}

int qk_tunnel_udp_local_addr(const qk_tunnel_udp *u, qk_addr *out)
{
    if (!u || !out || u->lfd < 0) return QK_ERR_STATE;
    memset(out, 0, sizeof *out);
    out->len = sizeof out->ss;
    if (getsockname(u->lfd, (struct sockaddr *)&out->ss, &out->len)) return QK_ERR_IO;
    return 0;
}

void qk_tunnel_udp_get_stats_sized(const qk_tunnel_udp *u, qk_tunnel_udp_stats *out,
                                   size_t out_bytes, size_t *sessions)
{
    if (!u) return;
    if (out) qk_abi_copy_out(out, out_bytes, &u->stats, sizeof u->stats);
    if (sessions) *sessions = u->n;
}
