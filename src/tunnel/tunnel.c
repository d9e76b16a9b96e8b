/* SPDX-License-Identifier: MIT */
/* TCP <-> stream plumbing (include/quack/tunnel.h, docs/tunnel.md).
 *
 * A flow is one TCP socket and, while a carrier session is up, one
 * bidirectional stream. TCP -> stream: bytes read from TCP go into the
 * flow's replay buffer (session_wire.h's ring) and stay there until the
 * peer acknowledges it has written them to its TCP socket (session.c), so
 * that a new stream on a new carrier session can resend them; a full buffer
 * stops reading TCP. Stream -> TCP: a staging buffer ("down") read only
 * while it is empty, so a TCP socket that does not drain holds the stream
 * (and QUIC flow control the peer) back. */
#include "tunnel/tunnel_int.h"

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

#define TUN_PUMP_READ_BUDGET_BYTES (64u << 10) /* TCP bytes one pump call reads */

void qk_tun_log(qk_tunnel *t, const char *fmt, ...)
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

void qk_tun_flow_free(flow *f, bool abort_tcp)
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
    if (!f->silent)
        qk_tun_log(
            t, "flow %llu closed: %s; tcp->tunnel %llu bytes, tunnel->tcp %llu bytes, %.3f s",
            (unsigned long long)f->id, f->why ? f->why : "done", (unsigned long long)f->sent_max,
            (unsigned long long)f->down_bytes, ev_now(t->ev) - f->opened_at);
    flow *last = t->flows[--t->n_flows];
    t->flows[f->slot] = last;
    last->slot = f->slot;
    if (f->counted) {
        t->stats.flows_closed++;
        if (abort_tcp) t->stats.flows_aborted++;
    }
    qk_tsess_ring_release(f);
    qk_tsw_ring_free(&f->ring);
    qk_socks5_del(f->socks);
    free(f->down);
    free(f);
}

/* Either side failed: reset what is still open of the stream, RST the TCP side. */
void qk_tun_flow_abort(flow *f, uint64_t app_error)
{
    if (!f->why) f->why = app_error == QK_TUNNEL_ERR_PROTOCOL ? "protocol error" : "aborted";
    if (f->c && (!f->fin_sent || !f->stream_fin))
        f->car->abort(f->c, f->sid, app_error, !f->fin_sent, !f->stream_fin);
    qk_tun_flow_free(f, true);
}

/* Both directions ended cleanly and the peer has everything: nothing to resend. */
bool qk_tun_flow_maybe_done(flow *f)
{
    /* Our FIN passed on by the peer, the peer's passed on here and acknowledged. */
    if (!f->fin_acked || !f->shut_wr || !f->fin_ack_sent) return false;
    qk_tun_flow_free(f, false);
    return true;
}

static void tcp_opts(int fd);
static void emit(flow *f, const uint8_t *b, size_t n);

/* SOCKS5: answer rep (a QK_SOCKS5_* code, or the reply bytes in out) and
 * end our side; the client's remaining bytes are dropped until its FIN. */
static void socks_refuse(flow *f, const uint8_t *out, size_t out_len, const char *why)
{
    qk_tunnel *t = f->t;
    f->tcp_eof = true; /* the reply, then FIN */
    emit(f, out, out_len);
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
    qk_tun_log(t, "flow %llu: SOCKS5 CONNECT %s:%u refused (reply %u): %s",
               (unsigned long long)f->id,
               qk_socks5_host(f->socks)[0] ? qk_socks5_host(f->socks) : "?",
               qk_socks5_port(f->socks), out_len > 1 ? out[1] : 0, why);
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
    qk_tun_log(t, "flow %llu: SOCKS5 CONNECT %s:%u", (unsigned long long)f->id,
               qk_socks5_host(f->socks), qk_socks5_port(f->socks));
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
        f->dlv += used;
        if (r == QK_SOCKS5_FAIL) {
            socks_refuse(f, out, out_len, "SOCKS5 negotiation refused or malformed");
        } else {
            if (out_len) emit(f, out, out_len);
            if (r == QK_SOCKS5_REQUEST) {
                socks_connect(f);
                if (f->connecting) return 1;
            }
        }
    }
    if (f->socks_failed) { /* dropped */
        f->dlv += f->down_len - f->down_off;
        f->down_off = f->down_len;
    }
    if (!f->stream_fin) return 0;
    if (!f->socks_failed) { /* ended before its request */
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
        return -1;
    }
    qk_tun_flow_free(f, false);
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
            qk_tun_flow_free(t->flows[i], true);
        }
}

/* Access denied: close the session with a reason that says why; nothing was forwarded. */
static void deny(qk_tunnel *t, const qk_tunnel_carrier *car, void *sess, const char *why)
{
    qk_tun_log(t, "%s", why);
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
    /* The MAC collects in the ring's buffer (an auth stream sends nothing back). */
    if (qk_tsw_ring_grow(&f->ring, QK_TUNNEL_AUTH_MAC_BYTES + 1)) f->down_off = f->down_len;
    while (f->down_off < f->down_len && f->ring.len <= QK_TUNNEL_AUTH_MAC_BYTES)
        f->ring.buf[f->ring.len++] = f->down[f->down_off++];
    f->down_off = f->down_len;
    if (!f->stream_fin) return 0;
    uint8_t want[QK_TUNNEL_AUTH_MAC_BYTES];
    uint8_t diff = f->ring.len != QK_TUNNEL_AUTH_MAC_BYTES;
    if (qk_tunnel_auth_mac(f->car, f->c, t->cfg.secret, t->cfg.secret_len, want)) diff = 1;
    for (size_t i = 0; i < QK_TUNNEL_AUTH_MAC_BYTES && f->ring.len == QK_TUNNEL_AUTH_MAC_BYTES; i++)
        diff |= (uint8_t)(want[i] ^ f->ring.buf[i]);
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
    qk_tun_log(t, "flow %llu: the client proved the secret", (unsigned long long)f->id);
    qk_tun_flow_free(f, false);
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
    }
    if (!f->socks) return connect_target(f);
    return socks_step(f);
}

/* Stream -> TCP. Returns false when the flow was freed. */
uint64_t qk_tun_read_off(const flow *f)
{
    return f->ring.base + f->ring.len;
}

/* The flow header (server) or its reply (client) from the staged bytes.
 * Returns 0 to go on, -1 when the flow was freed. */
static int hdr_step(flow *f)
{
    size_t take = f->down_len - f->down_off;
    if (take > f->hdr_need) take = f->hdr_need;
    memcpy(f->hdr + f->hdr_len, f->down + f->down_off, take);
    f->hdr_len += take;
    f->down_off += take;
    f->hdr_need -= take;
    if (f->hdr_need) return 0;
    if (f->t->cfg.server) {
        qk_tsw_flow_hdr h;
        if (!qk_tsw_flow_hdr_decode(f->hdr, &h)) return qk_tsess_flow_hdr(f, &h);
    } else {
        qk_tsw_flow_reply r;
        if (!qk_tsw_flow_reply_decode(f->hdr, &r)) return qk_tsess_flow_reply(f, &r);
    }
    qk_tun_flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
    return -1;
}

/* Server: the stream's first byte says what it is. Returns 0 to go on, -1 when f was freed. */
static int preamble_step(flow *f)
{
    qk_tunnel *t = f->t;
    uint8_t b = f->down[f->down_off++];
    f->preamble = false;
    f->auth = f->gate && b == QK_TUNNEL_AUTH_PREAMBLE;
    if (b == QK_TSW_FLOW_PREAMBLE) {
        f->hdr_need = QK_TSW_FLOW_HDR_BYTES;
        return 0;
    }
    if (b == QK_TSW_CTL_PREAMBLE) {
        if (f->gate && !session_authed(t, f->c)) {
            deny(t, f->car, f->c,
                 "access denied: a flow before authentication (missing --secret-file?)");
            return -1;
        }
        int rc = qk_tsess_server_ctl(t, f->car, f->c, f->sid, f->down + f->down_off,
                                     f->down_len - f->down_off);
        f->silent = true;
        if (rc) {
            qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
            return -1;
        }
        f->c = NULL; /* the stream is the session's now */
        qk_tun_flow_free(f, false);
        return -1;
    }
    if (f->auth) return 0;
    qk_tun_flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
    return -1;
}

/* Staged bytes -> TCP. Returns 1 to go on, 0 to wait (TCP full), -1 when f was freed. */
static int send_down(flow *f)
{
    qk_tunnel *t = f->t;
    ssize_t w = send(f->fd, f->down + f->down_off, f->down_len - f->down_off, MSG_NOSIGNAL);
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        ev_io_start(t->ev, &f->ww);
        return 0;
    }
    if (w < 0) {
        f->why = "TCP send failed (reset by the TCP peer)";
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
        return -1;
    }
    f->down_off += (size_t)w;
    f->down_bytes += (uint64_t)w;
    f->dlv += (uint64_t)w;
    t->stats.quic_to_tcp_bytes += (uint64_t)w;
    return 1;
}

/* Stream -> TCP. Returns false when the flow was freed. */
bool qk_tun_pump_down(flow *f)
{
    qk_tunnel *t = f->t;
    if (f->connecting) return true;
    for (;;) {
        if (f->parked) return true; /* until its session's HELLO (qk_tsess_flow_hdr) */
        if (f->preamble && f->down_off < f->down_len) {
            if (preamble_step(f)) return false;
            continue;
        }
        if (f->hdr_need && f->down_off < f->down_len) {
            if (hdr_step(f)) return false;
            continue;
        }
        if (f->preamble || f->hdr_need) {
            /* read more */
        } else if (f->fd < 0) {
            int r = pre_tcp_step(f);
            if (r) return r > 0;
        } else if (f->down_off < f->down_len) {
            int r = send_down(f);
            if (r <= 0) return r == 0;
            continue;
        } else {
            ev_io_stop(t->ev, &f->ww);
            qk_tsess_ack(f, false); /* drained: the peer may drop what we wrote */
        }
        if (f->stream_fin && f->fd >= 0 && !f->hdr_need) {
            if (!f->shut_wr) {
                shutdown(f->fd, SHUT_WR); /* the peer's FIN, passed on */
                f->shut_wr = true;
                qk_tsess_ack(f, true);
            }
            return !qk_tun_flow_maybe_done(f);
        }
        if (!f->c) return true; /* detached: the rest comes on the resumed stream */
        bool fin = false;
        long n = f->car->read(f->c, f->sid, f->down, t->cfg.buf_bytes, &fin);
        if (n == QK_ERR_AGAIN) return true;
        if (n < 0) { /* reset by the peer, or gone */
            f->why = "stream reset by the tunnel peer";
            qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
            return false;
        }
        f->down_off = 0;
        f->down_len = (size_t)n;
        if (fin) {
            if ((f->preamble && !n) || f->hdr_need > (size_t)n) { /* ended inside its header */
                qk_tun_flow_abort(f, QK_TUNNEL_ERR_PROTOCOL);
                return false;
            }
            f->stream_fin = true;
        }
    }
}

/* TCP -> stream. Returns true when something was queued on the stream; sets
 * *gone when the flow was freed. */
/* Count w bytes written from offset f->sent: new, or sent again after a resume. */
static void sent_bytes(flow *f, long w)
{
    qk_tunnel *t = f->t;
    uint64_t to = f->sent + (uint64_t)w;
    uint64_t fresh = to > f->sent_max ? to - (f->sent > f->sent_max ? f->sent : f->sent_max) : 0;
    t->stats.tcp_to_quic_bytes += fresh;
    t->stats.bytes_replayed += (uint64_t)w - fresh;
    if (to > f->sent_max) f->sent_max = to;
    f->sent = to;
}

/* Replay buffer -> the current stream, then the FIN. Returns -1 when f was
 * freed, else 0; *queued when something went on the stream. */
static int send_ring(flow *f, bool *queued)
{
    if (!f->c || f->await_reply || f->preamble || (f->t->cfg.server && f->hdr_need)) return 0;
    while (f->sent < qk_tun_read_off(f)) {
        size_t n;
        const uint8_t *p = qk_tsw_ring_at(&f->ring, f->sent, &n);
        long w = f->car->write(f->c, f->sid, p, n, false);
        if (w < 0) {
            qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
            return -1;
        }
        if (w > 0) *queued = true;
        sent_bytes(f, w);
        f->stream_full = (size_t)w < n;
        if (f->stream_full) return 0; /* its WRITABLE resumes */
    }
    if (f->tcp_eof && !f->fin_sent) {
        if (f->car->write(f->c, f->sid, NULL, 0, true) < 0) {
            qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
            return -1;
        }
        f->fin_sent = true;
        *queued = true;
    }
    return 0;
}

/* Bytes the flow itself answers with (SOCKS5 replies): into the replay
 * buffer like bytes read from TCP, so that they are resent too. */
static void emit(flow *f, const uint8_t *b, size_t n)
{
    while (n) {
        size_t room;
        if (f->ring.len == f->ring.cap &&
            qk_tsw_ring_grow(&f->ring, f->ring.cap ? 2 * f->ring.cap : 4096))
            return;
        uint8_t *p = qk_tsw_ring_tail(&f->ring, &room);
        if (room > n) room = n;
        memcpy(p, b, room);
        qk_tsw_ring_commit(&f->ring, room);
        b += room;
        n -= room;
    }
    bool queued;
    send_ring(f, &queued);
}

/* TCP -> replay buffer -> stream. Returns true when something was queued on
 * the stream; sets *gone when the flow was freed. One call reads at most
 * TUN_PUMP_READ_BUDGET_BYTES, then the loop sends before reading on (the
 * watcher stays on; libev's are level-triggered): with --session-buffer
 * 16M a fresh download's first call read up to 16 MiB from a fast source
 * before the first packet left, and its time to first byte went from
 * 76-190 ms to 275-490 ms (bench/tunnel.sh, 25 and 40 ms each way). The
 * budget also caps each recv(): the carrier's socket (its ACKs) is read
 * once per loop turn, after every ready flow has been pumped, so a turn
 * must stay short whatever the flow count. At 256 KiB per call, uncapped
 * (one recv() filled up to 1 MiB of ring), ten fresh downloads from a
 * fast source made turns of 50-100 ms while the replay buffers filled:
 * ACKs waited that long in the socket, the sender's RTT samples read
 * 91-104 ms on a 52 ms path, and bbr-lt's Startup took that for a
 * standing queue (qk_bbr_lt_startup_queued) and left at ~11 Mbit/s.
 * At 64 KiB a turn with ten flows reads at most 640 KiB. */
bool qk_tun_pump_up(flow *f, bool *gone)
{
    qk_tunnel *t = f->t;
    bool queued = false;
    size_t read_bytes = 0;
    *gone = false;
    if (f->connecting) return false;
    for (;;) {
        if (send_ring(f, &queued) < 0) {
            *gone = true;
            return queued;
        }
        if (f->fd < 0 || f->tcp_eof) break;
        /* Backpressure. The stream holds what it can send soon (its buffer
         * is bounded by the peer's credit plus a lookahead, cmd_tunnel.c):
         * bytes read past that would only wait in the replay buffer (and
         * grow it), work the loop does while ACKs wait in the socket; its
         * WRITABLE resumes. A full replay buffer: an ACK makes room. */
        if (f->stream_full || !qk_tsess_ring_room(f)) {
            ev_io_stop(t->ev, &f->rw);
            break;
        }
        if (read_bytes >= TUN_PUMP_READ_BUDGET_BYTES) { /* more on the next loop turn */
            ev_io_start(t->ev, &f->rw);
            break;
        }
        size_t room;
        uint8_t *p = qk_tsw_ring_tail(&f->ring, &room);
        if (room > TUN_PUMP_READ_BUDGET_BYTES - read_bytes)
            room = TUN_PUMP_READ_BUDGET_BYTES - read_bytes;
        ssize_t n = recv(f->fd, p, room, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            ev_io_start(t->ev, &f->rw);
            break;
        }
        if (n < 0) {
            f->why = "TCP recv failed (reset by the TCP peer)";
            qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
            *gone = true;
            return queued;
        }
        qk_tsw_ring_commit(&f->ring, (size_t)n);
        read_bytes += (size_t)n;
        if (n == 0) {
            f->tcp_eof = true;
            ev_io_stop(t->ev, &f->rw);
        }
    }
    if (f->tcp_eof) *gone = qk_tun_flow_maybe_done(f);
    return queued;
}

void qk_tun_kick(qk_tunnel *t)
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
    if (qk_tun_pump_up(f, &gone) || gone)
        qk_tun_kick(t); /* data, FIN, or an abort's RESET_STREAM */
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
                qk_tun_kick(t);
                return;
            }
            t->stats.flows_refused++;
            f->why = "connect to the target failed";
            qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
            qk_tun_kick(t);
            return;
        }
        f->connecting = false;
        ev_io_stop(t->ev, &f->ww);
        if (f->socks) { /* RFC 1928 §6: succeeded */
            uint8_t out[QK_SOCKS5_REPLY_BYTES];
            qk_socks5_reply(QK_SOCKS5_OK, out);
            emit(f, out, sizeof out);
            qk_socks5_del(f->socks);
            f->socks = NULL;
        }
    }
    /* Draining TCP's buffer lets us read (and credit) more of the stream. */
    if (qk_tun_pump_down(f)) {
        bool gone;
        qk_tun_pump_up(f, &gone);
    }
    qk_tun_kick(t);
}

/* A flow (client: counted at once; server: once its header says it is one). */
static flow *flow_new(qk_tunnel *t, const qk_tunnel_carrier *car, void *c, uint64_t sid, int fd)
{
    if (t->n_flows >= t->cfg.max_flows) return NULL;
    flow *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->down = malloc(t->cfg.buf_bytes);
    if (!f->down) {
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
    f->id = t->next_id + 1; /* taken when it is counted as a flow */
    f->opened_at = ev_now(t->ev);
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
    /* The TCP side waits for the preamble and the flow header (a new flow,
     * or the resume of one), and then for the SOCKS5 request. */
    flow *f = flow_new(t, car, c, sid, -1);
    qk_socks5 *sk = NULL;
    if (f && t->cfg.socks5) qk_socks5_new(t->cfg.socks_user, t->cfg.socks_pass, &sk);
    if (!f || (t->cfg.socks5 && !sk)) {
        if (f) {
            f->silent = true;
            qk_tun_flow_free(f, false);
        }
        t->stats.flows_refused++;
        car->abort(c, sid, QK_TUNNEL_ERR_TCP, true, true);
        return true;
    }
    f->preamble = true;
    f->socks = sk;
    f->gate = t->cfg.secret_len > 0;
    return false;
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
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
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

/* Client: a new flow of our session on its fresh stream: the header, then
 * its bytes. Returns true when something was queued. */
static bool client_flow_start(qk_tunnel *t, flow *f)
{
    tsess *s = t->me;
    f->s = s;
    f->fid = s->next_fid++;
    f->counted = true;
    f->id = ++t->next_id;
    t->stats.flows_opened++;
    qk_tun_log(t, "flow %llu opened on stream %llu", (unsigned long long)f->id,
               (unsigned long long)f->sid);
    if (!qk_tsess_ring_room(f)) {
        t->stats.flows_refused++;
        f->why = "the session's replay buffers are full (--session-cap)";
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
        return true;
    }
    uint8_t b[1 + QK_TSW_FLOW_HDR_BYTES] = {QK_TSW_FLOW_PREAMBLE};
    qk_tsw_flow_hdr h = {.resume = false, .flow_id = f->fid, .recv_off = 0};
    qk_tsw_flow_hdr_encode(&h, b + 1);
    t->car->write(t->conn, f->sid, b, sizeof b, false); /* fits: the stream is empty */
    f->hdr_need = QK_TSW_FLOW_REPLY_BYTES;
    bool gone;
    qk_tun_pump_up(f, &gone);
    if (!gone) ev_io_start(t->ev, &f->rw);
    return true;
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
            qk_tun_log(t, "refused a TCP connection: %s",
                       !t->conn ? "no connection to the tunnel server (redialling)"
                                : "at the flow limit or the server's stream limit");
            struct linger l = {.l_onoff = 1, .l_linger = 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
            close(fd);
            continue;
        }
        tcp_opts(fd);
        if (client_flow_start(t, f)) queued = true;
    }
    if (queued) qk_tun_kick(t);
}

/* qk_tunnel_config crosses the boundary at the caller's sizeof (base/abi.h):
 * the first release's ends with session_linger_ns. */
#define TUNNEL_CONFIG_V1_BYTES QK_ABI_END(qk_tunnel_config, session_linger_ns)
QK_ABI_LAST_FIELD(qk_tunnel_config, session_max);

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
    if (!t->cfg.flow_buffer_bytes) t->cfg.flow_buffer_bytes = QK_TUNNEL_DEFAULT_FLOW_BUFFER_BYTES;
    if (!t->cfg.session_buffer_bytes)
        t->cfg.session_buffer_bytes = QK_TUNNEL_DEFAULT_SESSION_BUFFER_BYTES;
    if (t->cfg.flow_buffer_bytes < t->cfg.buf_bytes) t->cfg.flow_buffer_bytes = t->cfg.buf_bytes;
    if (!t->cfg.session_linger_ns) t->cfg.session_linger_ns = QK_TUNNEL_DEFAULT_LINGER_NS;
    if (!t->cfg.session_max) t->cfg.session_max = QK_TUNNEL_DEFAULT_SESSION_MAX;
    t->lfd = -1;
    if (!cfg->server && !(t->me = qk_tsess_new(t))) {
        free(t->flows);
        free(t);
        return QK_ERR_NOMEM;
    }
    *out = t;
    return 0;
}

void qk_tunnel_del(qk_tunnel *t)
{
    if (!t) return;
    while (t->n_flows) {
        t->flows[t->n_flows - 1]->why = "tunnel stopped";
        qk_tun_flow_abort(t->flows[t->n_flows - 1], QK_TUNNEL_ERR_TCP);
    }
    if (t->lfd >= 0) {
        ev_io_stop(t->ev, &t->accept_w);
        close(t->lfd);
    }
    ev_timer_stop(t->ev, &t->hold_w);
    qk_tsess_free(t->me);
    for (size_t i = 0; i < t->n_sess; i++) qk_tsess_free(t->sess[i]);
    free(t->sess);
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
    int rc = qk_tsess_client_attach(t->me, car, sess); /* accepting: after HELLO or WELCOME */
    if (rc) {
        close(fd);
        return rc;
    }
    t->lfd = fd;
    ev_io_init(&t->accept_w, on_accept, fd, EV_READ);
    t->accept_w.data = t;
    if (t->conn) ev_io_start(t->ev, &t->accept_w); /* a fresh session: flows may open now */
    qk_tun_kick(t);
    return 0;
}

/* Client: the session is ready on t->me's carrier: new flows go there. */
void qk_tun_start_accepting(qk_tunnel *t)
{
    t->car = t->me->car;
    t->conn = t->me->c;
    ev_timer_stop(t->ev, &t->hold_w);
    if (t->lfd >= 0) ev_io_start(t->ev, &t->accept_w); /* the backlog gets streams now */
}

/* No session for hold_ns: accept again, refusing (on_accept sees no conn). */
static void on_hold(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    qk_tunnel *t = w->data;
    qk_tun_log(t, "no connection to the tunnel server for %.1f s: refusing new TCP connections",
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
        qk_tsess_detach(t->me);
        session_down(t);
        return 0;
    }
    session_down(t); /* until HELLO is sent (a fresh session) or WELCOME (a resume) */
    int rc = qk_tsess_client_attach(t->me, car, sess);
    if (!rc) qk_tun_kick(t);
    return rc;
}

int qk_tunnel_forget_session(qk_tunnel *t, const char *why)
{
    if (!t) return QK_ERR_INVALID_ARG;
    if (t->cfg.server) return QK_ERR_STATE;
    qk_tsess_reset_flows(t->me, why ? why : "the server ended the session");
    t->me->has_id = false;
    ev_timer_stop(t->ev, &t->me->linger_w);
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
    qk_tun_kick(t);
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
        if (qk_tsess_on_stream_event(t, sess, sid, type)) return true;
        f = find(t, sess, sid);
        if (f) qk_tun_pump_down(f);
        return true; /* reading returns flow-control credit */
    case QK_TUNNEL_EV_WRITABLE:
        if (qk_tsess_on_stream_event(t, sess, sid, type)) return true;
        f = find(t, sess, sid);
        if (!f) return false;
        return qk_tun_pump_up(f, &gone);
    case QK_TUNNEL_EV_RESET: /* the peer gave up on its side: RST the TCP side */
        if (sess == t->auth_sess && sid == t->auth_sid) return auth_answer(t, car, true);
        if (qk_tsess_on_stream_event(t, sess, sid, type)) return true;
        f = find(t, sess, sid);
        if (!f) return false;
        f->why = "stream reset by the tunnel peer";
        qk_tun_flow_abort(f, QK_TUNNEL_ERR_TCP);
        return true;
    case QK_TUNNEL_EV_CLOSED: /* the session's flows wait for a resume; others end */
        if (t->me && t->me->c == sess) qk_tsess_detach(t->me);
        for (size_t i = t->n_sess; i-- > 0;)
            if (t->sess[i]->c == sess) qk_tsess_detach(t->sess[i]);
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
    if (!t || !out) return;
    qk_tunnel_stats st = t->stats;
    st.sessions_detached = qk_tsess_detached_count(t);
    qk_abi_copy_out(out, out_bytes, &st, sizeof st);
}
