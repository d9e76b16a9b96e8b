/* SPDX-License-Identifier: MIT */
/* `quack perf client`: issues perf requests and measures them. */
#include "cli_errors.h"
#include "perf.h"

#include <quack/cert.h>
#include <quack/driver.h>
#include <ev.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_SAMPLES (1u << 20)

typedef struct creq {
    bool active;
    uint64_t sid;
    uint8_t hdr[8];
    unsigned hdr_sent;
    uint64_t up_sent, down_got;
    bool up_fin;
    qk_time t_open, t_up_done, t_first;
    bool got_first;
} creq;

typedef struct cli {
    const perf_opts *o;
    qk_endpoint *ep;
    qk_conn *conn;
    qk_io_loop *loop;
    creq *reqs;
    perf_sample *samples;
    size_t nsamples, cap_samples;
    uint64_t started, completed;
    uint64_t rx_bytes, tx_bytes, rx_mark, tx_mark; /* stream payload */
    uint64_t verified_bytes;
    qk_time t_begin, t_connected, t_stop, last_tick;
    bool connected, stopping, failed, closed;
    ev_timer stop_timer; /* --duration, armed at CONNECTED */
    ev_timer exit_timer; /* fires right after the CONNECTION_CLOSE went out */
    qk_conn_stats final_stats;
    bool have_stats;
} cli;

static void fail(cli *c, const char *msg)
{
    if (!c->failed) fprintf(stderr, "quack perf client: %s\n", msg);
    c->failed = true;
}

static void finish(cli *c)
{
    if (c->stopping) return;
    c->stopping = true;
    c->t_stop = qk_io_now();
    if (c->conn) {
        qk_conn_stats_get(c->conn, &c->final_stats);
        c->have_stats = true;
        qk_conn_close(c->conn, 0, c->failed ? "perf client failed" : "done");
        /* The loop sends the CONNECTION_CLOSE when this callback returns;
         * a zero timer then ends the loop in its next iteration. The client
         * exits without the closing period (RFC 9000 §10.2 keeps it to
         * answer late packets with another close): nothing of the perf
         * protocol is pending, and ngtcp2's client exits the same way, so
         * the wall time of a run is the transfer, not 3 PTO of waiting. A
         * lost close costs the server its idle timeout. */
        ev_timer_set(&c->exit_timer, 0.0, 0.0);
        ev_timer_start(qk_io_loop_ev(c->loop), &c->exit_timer);
    } else {
        qk_io_loop_break(c->loop);
    }
}

static bool want_more(const cli *c)
{
    if (c->stopping || !c->connected) return false;
    if (c->o->duration_s > 0) return true;
    return c->started < c->o->streams;
}

static void record(cli *c, creq *r, qk_time now)
{
    if (c->nsamples == c->cap_samples && c->cap_samples < CLI_MAX_SAMPLES) {
        size_t cap = c->cap_samples ? c->cap_samples * 2 : 256;
        perf_sample *n = realloc(c->samples, cap * sizeof *n);
        if (n) {
            c->samples = n;
            c->cap_samples = cap;
        }
    }
    if (c->nsamples < c->cap_samples) {
        perf_sample *s = &c->samples[c->nsamples++];
        /* The server answers after the whole upload arrived (perf_server.c):
         * upload = open .. first response byte, download = last upload byte
         * accepted by the stack .. last response byte (as quinn's perf
         * client times it: the first byte's latency is part of the
         * download; timing from the first byte gave 0 ns, and absurd
         * throughputs, whenever a whole response arrived in one receive
         * batch), FBL = last upload byte accepted .. first byte. */
        qk_time first = r->got_first ? r->t_first : now;
        qk_time dl_start = r->t_up_done && r->t_up_done <= first ? r->t_up_done : first;
        s->upload_ns = first - r->t_open;
        s->download_ns = now - dl_start;
        s->fbl_ns = r->t_first > r->t_up_done ? r->t_first - r->t_up_done : 0;
        s->upload_bytes = c->o->upload_bytes;
        s->download_bytes = c->o->download_bytes;
    }
}

/* Write header, upload bytes and FIN as far as the stream accepts. */
static bool req_pump(cli *c, creq *r, qk_time now)
{
    bool wrote = false;
    if (r->hdr_sent < 8) {
        long w = qk_stream_write(c->conn, r->sid, r->hdr + r->hdr_sent, 8 - r->hdr_sent,
                                 c->o->upload_bytes == 0);
        if (w < 0) {
            fail(c, "cannot write the request header");
            return false;
        }
        r->hdr_sent += (unsigned)w;
        wrote = w > 0;
        if (r->hdr_sent < 8) return wrote;
        if (c->o->upload_bytes == 0) {
            r->up_fin = true;
            r->t_up_done = now;
            return wrote;
        }
    }
    while (!r->up_fin) {
        uint64_t left = c->o->upload_bytes - r->up_sent;
        size_t n = left < QK_PERF_CHUNK_BYTES ? (size_t)left : QK_PERF_CHUNK_BYTES;
        long w = qk_stream_write(c->conn, r->sid, perf_pattern(r->up_sent), n, n == left);
        if (w < 0) {
            fail(c, "cannot write upload data");
            break;
        }
        r->up_sent += (uint64_t)w;
        c->tx_bytes += (uint64_t)w;
        if (w > 0) wrote = true;
        if ((size_t)w == n && n == left) {
            r->up_fin = true;
            r->t_up_done = now;
        }
        if ((size_t)w < n) break;
    }
    return wrote;
}

static bool req_start(cli *c, qk_time now)
{
    creq *r = NULL;
    for (unsigned i = 0; i < c->o->streams; i++)
        if (!c->reqs[i].active) {
            r = &c->reqs[i];
            break;
        }
    if (!r) return false;
    uint64_t sid;
    int rc = qk_stream_open(c->conn, true, &sid);
    if (rc == QK_ERR_STREAM_LIMIT) return false; /* QK_EV_STREAMS_AVAILABLE resumes */
    if (rc) {
        fail(c, "cannot open a stream");
        return false;
    }
    memset(r, 0, sizeof *r);
    r->active = true;
    r->sid = sid;
    r->t_open = now;
    for (int i = 0; i < 8; i++) r->hdr[i] = (uint8_t)(c->o->download_bytes >> (56 - 8 * i));
    c->started++;
    req_pump(c, r, now);
    return true;
}

static creq *req_find(cli *c, uint64_t sid)
{
    for (unsigned i = 0; i < c->o->streams; i++)
        if (c->reqs[i].active && c->reqs[i].sid == sid) return &c->reqs[i];
    return NULL;
}

/* Read and check download bytes; completes the request at FIN. */
static void req_read(cli *c, creq *r, qk_time now)
{
    for (;;) {
        bool fin = false;
        /* Checked where the connection holds the bytes (before consuming
         * them frees that memory), not copied out. */
        const uint8_t *data;
        long n = qk_stream_peek(c->conn, r->sid, &data, &fin);
        if (n < 0) return;
        if (n > 0 && !r->got_first) {
            r->got_first = true;
            r->t_first = now;
        }
        if (r->down_got + (uint64_t)n > c->o->download_bytes) {
            fail(c, "server sent more bytes than requested");
            finish(c);
            return;
        }
        if (n > 0 && !perf_pattern_check(data, (size_t)n, r->down_got)) {
            char msg[128];
            snprintf(msg, sizeof msg, "download data mismatch on stream %llu near offset %llu",
                     (unsigned long long)r->sid, (unsigned long long)r->down_got);
            fail(c, msg);
            finish(c);
            return;
        }
        if (n > 0 && (n = qk_stream_consume(c->conn, r->sid, (size_t)n, &fin)) < 0) return;
        r->down_got += (uint64_t)n;
        c->rx_bytes += (uint64_t)n;
        c->verified_bytes += (uint64_t)n;
        if (fin) {
            if (r->down_got != c->o->download_bytes) {
                fail(c, "download ended early (FIN before the requested size)");
                finish(c);
                return;
            }
            if (!r->up_fin) {
                fail(c, "the server answered before the upload ended");
                finish(c);
                return;
            }
            record(c, r, now);
            r->active = false;
            c->completed++;
            return;
        }
        if (n == 0) return;
    }
}

static void on_closed(cli *c, const qk_event *ev)
{
    c->conn = NULL;
    c->closed = true;
    if (!c->stopping) {
        char msg[600];
        if (!c->connected) {
            cli_handshake_failed(ev, c->o->pin ? CLI_VERIFY_PIN : CLI_VERIFY_INSECURE, msg,
                                 sizeof msg);
            if (strstr(ev->reason, QK_PERF_ALPN_NOPROT)) /* the ALPN says which side */
                strncat(msg, " - set --no-protection on both sides or neither",
                        sizeof msg - strlen(msg) - 1);
        } else
            snprintf(msg, sizeof msg, "connection closed by %s: %s (error %d)",
                     ev->remote ? "the peer" : "us (idle timeout?)", ev->reason, ev->reason_err);
        fail(c, msg);
        c->stopping = true;
        c->t_stop = qk_io_now();
    }
    qk_io_loop_break(c->loop);
}

static bool cli_app(void *app, qk_endpoint *ep, qk_time now)
{
    cli *c = app;
    qk_event ev;
    bool wrote = false;
    while (qk_endpoint_poll_event(ep, &ev)) {
        creq *r;
        switch (ev.type) {
        case QK_EV_CONNECTED:
            c->connected = true;
            c->t_connected = now;
            if (c->o->duration_s > 0) {
                ev_timer_set(&c->stop_timer, c->o->duration_s, 0.0);
                ev_timer_start(qk_io_loop_ev(c->loop), &c->stop_timer);
            }
            if (!c->o->quiet)
                fprintf(stderr, "connected in %.3f ms (ALPN %s)\n",
                        (double)(now - c->t_begin) / 1e6,
                        c->conn && qk_conn_alpn(c->conn) ? qk_conn_alpn(c->conn) : "?");
            break;
        case QK_EV_STREAM_READABLE:
            if ((r = req_find(c, ev.stream_id))) req_read(c, r, now);
            break;
        case QK_EV_STREAM_WRITABLE:
            if ((r = req_find(c, ev.stream_id))) wrote = req_pump(c, r, now) || wrote;
            break;
        case QK_EV_STREAM_RESET:
        case QK_EV_STREAM_STOP:
            if (req_find(c, ev.stream_id)) {
                fail(c, "the server reset a request stream");
                finish(c);
            }
            break;
        case QK_EV_CLOSED: on_closed(c, &ev); return false;
        default: break;
        }
    }
    if (!c->conn) return false;
    for (unsigned i = 0; i < c->o->streams && !c->stopping; i++)
        if (c->reqs[i].active && !c->reqs[i].up_fin) wrote = req_pump(c, &c->reqs[i], now) || wrote;
    while (want_more(c) && req_start(c, now)) wrote = true;
    if (!c->stopping && c->connected && c->o->duration_s <= 0 && c->completed == c->o->streams)
        finish(c);
    return wrote || c->stopping;
}

static void on_tick(struct ev_loop *evl, ev_timer *w, int revents)
{
    cli *c = w->data;
    qk_time now = qk_io_now();
    double interval = (double)(now - c->last_tick) / 1e9;
    c->last_tick = now;
    if (c->conn && !c->o->quiet) {
        qk_conn_stats st;
        qk_conn_stats_get(c->conn, &st);
        perf_print_progress(stderr, "client", (double)(now - c->t_begin) / 1e9, interval,
                            c->rx_bytes - c->rx_mark, c->tx_bytes - c->tx_mark, &st);
        fflush(stderr);
    }
    c->rx_mark = c->rx_bytes;
    c->tx_mark = c->tx_bytes;
    if (c->stopping && now - c->t_stop > 2 * QK_NS_PER_S) qk_io_loop_break(c->loop);
}

static void on_stop_timer(struct ev_loop *evl, ev_timer *w, int revents)
{
    cli *c = w->data;
    finish(c);
    qk_io_loop_kick(c->loop);
}

static void on_exit_timer(struct ev_loop *evl, ev_timer *w, int revents)
{
    cli *c = w->data;
    qk_io_loop_break(c->loop);
}

static int cli_loop(cli *c, qk_udp *u, size_t dgram_bytes)
{
    qk_io_ep_driver *drv = NULL;
    int rc = qk_io_ep_driver_new(c->ep, dgram_bytes, cli_app, c, &drv);
    if (rc) return rc;
    rc = qk_io_ep_driver_loop_new(drv, u, NULL, &c->loop);
    if (rc) {
        qk_io_ep_driver_del(drv);
        return rc;
    }
    qk_io_loop_stop_on_signal(c->loop, SIGINT);
    qk_io_loop_stop_on_signal(c->loop, SIGTERM);
    ev_timer tick;
    ev_timer_init(&tick, on_tick, 1.0, 1.0);
    ev_init(&c->stop_timer, on_stop_timer);
    c->stop_timer.data = c;
    ev_init(&c->exit_timer, on_exit_timer);
    c->exit_timer.data = c;
    tick.data = c;
    ev_timer_start(qk_io_loop_ev(c->loop), &tick);
    c->last_tick = c->t_begin;
    rc = qk_io_loop_run(c->loop);
    ev_timer_stop(qk_io_loop_ev(c->loop), &tick);
    ev_timer_stop(qk_io_loop_ev(c->loop), &c->stop_timer);
    ev_timer_stop(qk_io_loop_ev(c->loop), &c->exit_timer);
    if (qk_io_loop_stop_signal(c->loop)) fail(c, "interrupted");
    qk_io_loop_del(c->loop);
    qk_io_ep_driver_del(drv);
    return rc;
}

static void report(cli *c)
{
    qk_time end = c->t_stop ? c->t_stop : qk_io_now();
    double secs = c->connected ? (double)(end - c->t_connected) / 1e9 : 0;
    if (secs <= 0) secs = 1e-9;
    printf("\n");
    perf_print_table(stdout, c->samples, c->nsamples);
    printf("\nrequests: %llu completed, %llu started in %.2f s: %.1f requests/s\n",
           (unsigned long long)c->completed, (unsigned long long)c->started, secs,
           (double)c->completed / secs);
    printf("transferred: download %llu bytes (%llu verified), upload %llu bytes; "
           "%.1f Mbit/s down, %.1f Mbit/s up\n",
           (unsigned long long)c->rx_bytes, (unsigned long long)c->verified_bytes,
           (unsigned long long)c->tx_bytes, (double)c->rx_bytes * 8 / 1e6 / secs,
           (double)c->tx_bytes * 8 / 1e6 / secs);
    if (c->o->stats && c->have_stats) cli_print_conn_stats(stdout, &c->final_stats);
    fflush(stdout);
}

static int cli_setup(cli *c, const perf_opts *o, qk_config *cfg, qk_udp **u)
{
    perf_config(cfg, o);
    if (o->pin) {
        if (qk_pin_parse(o->pin, cfg->pin_sha256)) {
            fprintf(stderr, "quack perf client: --pin wants 64 hex digits (SHA-256 of the SPKI)\n");
            return QK_ERR_INVALID_ARG;
        }
        cfg->has_pin = true;
    }
    cfg->insecure = o->insecure;
    qk_addr bind = {0};
    bind.ss.ss_family = o->addr.ss.ss_family;
    bind.len = o->addr.len;
    int rc = qk_udp_open(&bind, QK_UDP_RECVERR, u); /* ICMP: fail fast */
    if (rc) {
        fprintf(stderr, "quack perf client: cannot open a UDP socket: %m\n");
        return rc;
    }
    c->o = o;
    c->reqs = calloc(o->streams, sizeof *c->reqs);
    c->ep = cli_endpoint_new(cfg, "quack perf client");
    if (!c->ep) return QK_ERR_CONFIG;
    if (!c->reqs) return QK_ERR_NOMEM;
    c->t_begin = qk_io_now();
    qk_addr none = {0};
    rc = qk_connect(c->ep, &none, &o->addr, "localhost", c->t_begin, &c->conn);
    if (rc) fprintf(stderr, "quack perf client: cannot start the connection (error %d)\n", rc);
    return rc;
}

int perf_client(const perf_opts *o)
{
    cli *c = calloc(1, sizeof *c);
    if (!c) return QK_ERR_NOMEM;
    qk_config cfg;
    qk_udp *u = NULL;
    int rc = cli_setup(c, o, &cfg, &u);
    if (!rc) rc = cli_loop(c, u, cfg.max_udp_payload_bytes);
    if (!rc) {
        report(c);
        if (c->failed)
            rc = QK_ERR_CLOSED;
        else if (c->completed == 0 && c->rx_bytes == 0 && o->download_bytes > 0) {
            fprintf(stderr, "quack perf client: no data was transferred\n");
            rc = QK_ERR_CLOSED;
        }
    }
    qk_endpoint_del(c->ep);
    qk_udp_close(u);
    free(c->reqs);
    free(c->samples);
    free(c);
    return rc;
}
