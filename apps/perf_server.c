/* SPDX-License-Identifier: MIT */
/* `quack perf server`: answers perf requests on every connection. */
#include "cli_errors.h"
#include "perf.h"

#include <quack/cert.h>
#include <quack/workers.h>
#include <ev.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define SRV_SLOTS 4096u /* open requests over all connections (power of two) */
#define SRV_CONNS 64u   /* connections tracked for progress lines */

typedef struct sreq {
    qk_conn *c; /* NULL: free slot */
    uint64_t sid;
    uint8_t hdr[8];
    unsigned hdr_got;
    uint64_t up_got;     /* upload bytes after the header */
    uint64_t send_total; /* requested download size */
    uint64_t sent;
    bool recv_fin, send_fin;
} sreq;

typedef struct sconn {
    qk_conn *c;
    qk_conn_stats last; /* refreshed every second and at the end of each request */
} sconn;

typedef struct srv {
    const perf_opts *o;
    qk_endpoint *ep;
    sreq *slots;
    sconn conns[SRV_CONNS];
    uint64_t rx_bytes, tx_bytes, rx_mark, tx_mark; /* stream payload */
    uint64_t requests, errors;
    qk_time start, last_tick;
    uint8_t buf[QK_PERF_CHUNK_BYTES];
} srv;

static size_t slot_hash(const qk_conn *c, uint64_t sid)
{
    return (size_t)(((uintptr_t)c >> 4) * 31u + (sid >> 2)) & (SRV_SLOTS - 1);
}

/* Find the request of (c, sid); create it when create is set. NULL when full. */
static sreq *slot_get(srv *s, qk_conn *c, uint64_t sid, bool create)
{
    size_t h = slot_hash(c, sid);
    sreq *free_slot = NULL;
    for (size_t i = 0; i < SRV_SLOTS; i++) {
        sreq *r = &s->slots[(h + i) & (SRV_SLOTS - 1)];
        if (r->c == c && r->sid == sid) return r;
        if (!r->c) {
            free_slot = r;
            break; /* deletion uses backward-shift, so a hole ends the probe */
        }
    }
    if (!create || !free_slot) return NULL;
    memset(free_slot, 0, sizeof *free_slot);
    free_slot->c = c;
    free_slot->sid = sid;
    return free_slot;
}

/* Remove r keeping linear-probing chains intact (backward-shift deletion). */
static void slot_del(srv *s, sreq *r)
{
    size_t i = (size_t)(r - s->slots);
    s->slots[i].c = NULL;
    for (size_t j = (i + 1) & (SRV_SLOTS - 1); s->slots[j].c; j = (j + 1) & (SRV_SLOTS - 1)) {
        size_t h = slot_hash(s->slots[j].c, s->slots[j].sid);
        /* Move j into the hole i when its home h is not in (i, j]. */
        bool in_range = i <= j ? (h > i && h <= j) : (h > i || h <= j);
        if (!in_range) {
            s->slots[i] = s->slots[j];
            s->slots[j].c = NULL;
            i = j;
        }
    }
}

static sconn *conn_track(srv *s, qk_conn *c, bool add)
{
    for (size_t i = 0; i < SRV_CONNS; i++)
        if (s->conns[i].c == c) return &s->conns[i];
    if (!add) return NULL;
    for (size_t i = 0; i < SRV_CONNS; i++)
        if (!s->conns[i].c) {
            s->conns[i].c = c;
            memset(&s->conns[i].last, 0, sizeof s->conns[i].last);
            return &s->conns[i];
        }
    return NULL;
}

static void req_maybe_done(srv *s, sreq *r)
{
    if (!r->recv_fin || !r->send_fin) return;
    s->requests++;
    sconn *t = conn_track(s, r->c, false);
    if (t) qk_conn_stats_get(r->c, &t->last);
    slot_del(s, r);
}

static bool req_pump(srv *s, sreq *r)
{
    bool wrote = false;
    while (r->hdr_got == 8 && r->recv_fin && !r->send_fin) {
        uint64_t left = r->send_total - r->sent;
        size_t n = left < QK_PERF_CHUNK_BYTES ? (size_t)left : QK_PERF_CHUNK_BYTES;
        /* The pattern is static: packets are sealed straight from it. */
        long w = qk_stream_write_ref(r->c, r->sid, perf_pattern(r->sent), n, n == left);
        if (w < 0) {
            r->send_fin = true; /* the stream is gone (reset/stopped/closed) */
            if (w == QK_ERR_CLOSED) break;
            fprintf(stderr, "quack perf server: write on stream %llu failed (error %ld)\n",
                    (unsigned long long)r->sid, w);
            s->errors++;
            r->send_fin = true; /* the stream is gone (reset/stopped/closed) */
            break;
        }
        r->sent += (uint64_t)w;
        s->tx_bytes += (uint64_t)w;
        wrote = true;
        if ((size_t)w == n && n == left) r->send_fin = true;
        if ((size_t)w < n) break; /* full: QK_EV_STREAM_WRITABLE follows when ACKs free room */
    }
    return wrote;
}

/* Drain the stream: 8-byte size, then upload bytes checked against the pattern. */
static bool req_read(srv *s, sreq *r)
{
    bool wrote = false;
    for (;;) {
        bool fin = false;
        long n = qk_stream_read(r->c, r->sid, s->buf, sizeof s->buf, &fin);
        if (n < 0) break;
        size_t off = 0;
        while (r->hdr_got < 8 && off < (size_t)n) r->hdr[r->hdr_got++] = s->buf[off++];
        if (r->hdr_got == 8 && off > 0)
            for (int i = 0; i < 8; i++) r->send_total = (r->send_total << 8) | r->hdr[i];
        size_t up = (size_t)n - off;
        if (up && !perf_pattern_check(s->buf + off, up, r->up_got)) {
            fprintf(stderr,
                    "quack perf server: upload data mismatch on stream %llu near offset %llu\n",
                    (unsigned long long)r->sid, (unsigned long long)r->up_got);
            s->errors++;
            qk_conn_close(r->c, 1, "upload data mismatch");
            slot_del(s, r);
            return wrote;
        }
        r->up_got += up;
        s->rx_bytes += (uint64_t)n;
        if (fin) {
            r->recv_fin = true;
            /* The answer starts once the whole upload arrived, so the client's
             * time to the first response byte measures the upload. */
            if (r->hdr_got == 8 && r->send_total == 0) {
                qk_stream_write(r->c, r->sid, s->buf, 0, true);
                r->send_fin = true;
            }
            if (r->hdr_got == 8) wrote = req_pump(s, r) || wrote;
            if (r->hdr_got < 8) { /* a request without a size: answer nothing */
                fprintf(stderr, "quack perf server: stream %llu ended without a size\n",
                        (unsigned long long)r->sid);
                s->errors++;
                qk_stream_reset(r->c, r->sid, 1);
                r->send_fin = true;
            }
            break;
        }
        if (n == 0) break;
    }
    req_maybe_done(s, r);
    return wrote;
}

static void conn_closed(srv *s, const qk_event *ev)
{
    sconn *t = conn_track(s, ev->conn, false);
    bool clean = !ev->reason_err || (ev->app_error && ev->error_code == 0);
    if (cli_log_failed_handshake(stderr, "quack perf server", ev))
        clean = true; /* one line: peer and reason */
    if (!clean)
        fprintf(stderr, "quack perf server: connection closed: error %d (%s)\n", ev->reason_err,
                ev->reason);
    if (t) {
        if (s->o->stats) cli_print_conn_stats(stderr, &t->last);
        t->c = NULL;
    }
    for (size_t i = 0; i < SRV_SLOTS;) { /* drop its requests */
        if (s->slots[i].c == ev->conn) {
            slot_del(s, &s->slots[i]);
            continue; /* a shifted entry may now sit at i */
        }
        i++;
    }
}

static bool srv_app(void *app, qk_endpoint *ep, qk_time now)
{
    srv *s = app;
    bool wrote = false;
    qk_event ev;
    while (qk_endpoint_poll_event(ep, &ev)) {
        sreq *r;
        switch (ev.type) {
        case QK_EV_CONNECTED: conn_track(s, ev.conn, true); break;
        case QK_EV_STREAM_OPENED:
        case QK_EV_STREAM_READABLE:
            /* Only OPENED creates: late READABLE events of a finished request are stale. */
            r = slot_get(s, ev.conn, ev.stream_id, ev.type == QK_EV_STREAM_OPENED);
            if (!r && ev.type == QK_EV_STREAM_OPENED) {
                qk_stream_stop(ev.conn, ev.stream_id, 2); /* too many open requests */
                qk_stream_reset(ev.conn, ev.stream_id, 2);
                break;
            }
            if (!r) break;
            wrote = req_read(s, r) || wrote;
            break;
        case QK_EV_STREAM_WRITABLE:
            r = slot_get(s, ev.conn, ev.stream_id, false);
            if (r) {
                wrote = req_pump(s, r) || wrote;
                req_maybe_done(s, r);
            }
            break;
        case QK_EV_STREAM_RESET:
        case QK_EV_STREAM_STOP:
            r = slot_get(s, ev.conn, ev.stream_id, false);
            if (r) slot_del(s, r);
            break;
        case QK_EV_CLOSED: conn_closed(s, &ev); break;
        default: break;
        }
    }
    (void)now;
    return wrote;
}

static void on_tick(struct ev_loop *evl, ev_timer *w, int revents)
{
    srv *s = w->data;
    qk_time now = qk_io_now();
    double interval = (double)(now - s->last_tick) / 1e9;
    s->last_tick = now;
    qk_conn_stats st = {0};
    bool any = false;
    for (size_t i = 0; i < SRV_CONNS; i++)
        if (s->conns[i].c) {
            qk_conn_stats_get(s->conns[i].c, &s->conns[i].last);
            if (!any) st = s->conns[i].last;
            any = true;
        }
    if (any && !s->o->quiet)
        perf_print_progress(stderr, "server", (double)(now - s->start) / 1e9, interval,
                            s->rx_bytes - s->rx_mark, s->tx_bytes - s->tx_mark, &st);
    s->rx_mark = s->rx_bytes;
    s->tx_mark = s->tx_bytes;
    fflush(stderr);
}

/* Worker hooks (quack/workers.h): one srv per worker thread. */
static void *srv_start(void *user, unsigned index, qk_endpoint *ep)
{
    srv *ss = user;
    ss[index].ep = ep;
    ss[index].start = ss[index].last_tick = qk_io_now();
    return &ss[index];
}

static void srv_report(const srv *ss, qk_workers *w)
{
    uint64_t req = 0, err = 0;
    for (unsigned i = 0; i < qk_workers_count(w); i++) {
        req += ss[i].requests;
        err += ss[i].errors;
    }
    fprintf(stderr, "quack perf server: stopped (%s); %llu requests served, %llu errors\n",
            qk_io_loop_stop_signal(qk_workers_loop(w, 0)) ? "signal" : "loop ended",
            (unsigned long long)req, (unsigned long long)err);
    if (ss[0].o->stats) cli_print_workers_stats(stderr, w);
}

/* The one run path, as quack serve's: n workers (quack/workers.h; one is
 * the plain server), each with the listen socket and the preferred-address
 * sockets (RFC 9000 §9.6). Progress lines with one worker (the others'
 * connections live in other threads). */
static int srv_run(srv *ss, unsigned n, const perf_opts *o, const qk_config *cfg)
{
    qk_workers_app app = {srv_start, srv_app, NULL, ss};
    qk_workers *w = NULL;
    unsigned which = QK_WORKERS_SOCKET_NONE;
    unsigned flags = o->addr.ss.ss_family == AF_INET6 ? QK_UDP_DUALSTACK : 0;
    int rc = qk_workers_new_ex(cfg, &o->addr, flags, n, &app, &which, &w);
    if (rc) {
        cli_listen_error("quack perf server", cfg, o->addr_str, rc, which);
        return rc;
    }
    char lbuf[QK_ADDR_STRLEN];
    cli_workers_addrs(w, lbuf, sizeof lbuf);
    printf("listening on %s (ALPN %s)", lbuf, cfg->alpn[0]);
    if (n > 1) printf(", %u threads", n);
    printf("\n");
    fflush(stdout);
    struct ev_loop *evl = qk_io_loop_ev(qk_workers_loop(w, 0));
    ev_timer tick;
    ev_timer_init(&tick, on_tick, 1.0, 1.0);
    tick.data = &ss[0];
    if (n == 1) ev_timer_start(evl, &tick);
    ss[0].start = ss[0].last_tick = qk_io_now();
    rc = qk_workers_run(w);
    ev_timer_stop(evl, &tick);
    srv_report(ss, w);
    qk_workers_del(w);
    return rc;
}

int perf_server(const perf_opts *o)
{
    qk_config cfg;
    perf_config(&cfg, o);
    char *cert_pem = NULL, *key_pem = NULL;
    unsigned n = o->threads ? o->threads : 1;
    srv *ss = calloc(n, sizeof *ss);
    int rc = ss ? 0 : QK_ERR_NOMEM;
    for (unsigned i = 0; !rc && i < n; i++) {
        ss[i].o = o;
        ss[i].slots = calloc(SRV_SLOTS, sizeof *ss[i].slots);
        if (!ss[i].slots) rc = QK_ERR_NOMEM;
    }
    if (!rc)
        rc = cli_load_cert("quack perf server", o->cert_file, o->key_file, &cfg, &cert_pem,
                           &key_pem);
    if (!rc) rc = srv_run(ss, n, o, &cfg);
    for (unsigned i = 0; ss && i < n; i++) free(ss[i].slots);
    free(ss);
    free(cert_pem);
    free(key_pem);
    return rc;
}
