/* SPDX-License-Identifier: MIT */
/* `quack media server|client`: the three media flows (audio, low- and
 * high-definition video, the shapes of src/sim/flow_media.c) over a real
 * connection, on urgency-tagged streams or DATAGRAM frames; the server
 * prints the per-flow table (frames, average / p99 / max delay). */
#include "commands.h"

#include <quack/cert.h>
#include <quack/driver.h>
#include <quack/io.h>
#include <quack/quack.h>
#include <quack/sim.h>
#include <ev.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#define MEDIA_ALPN    "quack-media"
#define NFLOWS        QK_MEDIA_FLOWS
#define HDR_BYTES     QK_MEDIA_HDR_BYTES /* quack/sim.h: flow, frame number, send time */
#define DG_HDR_BYTES  20 /* flow (1), 0 (1), fragment (2), fragments (2), 0 (2), number, time */
#define DG_FRAG_BYTES 1000
#define CTL_MARK      0xff /* first byte of the control stream: the client's sent counts */
#define MAX_STREAMS   8
#define BYPASS_LIMIT  5 /* audio (2) and LD video (4) may bypass; HD video (6) not */
#define FRAME_MAX     65536
#define END_WAIT_S    10.0 /* client: wait this long for the server's table after the end */

/* The flows (quack/sim.h: the simulator's media flow uses the same). */
#define DEFS (qk_media_defs())

static uint32_t frame_bytes(int flow, uint32_t no)
{
    return qk_media_frame_bytes(&DEFS[flow], no);
}

static uint8_t body_byte(uint32_t no, size_t i)
{
    return (uint8_t)(no * 7u + i);
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

static uint64_t get_be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

typedef struct mopts {
    bool server, datagrams, once, insecure, quiet;
    const char *addr_str, *pin, *cert_file, *key_file, *qlog_dir;
    qk_addr addr;
    double duration_s;
    int bypass; /* 0 off, 1 on (no cap), 2 bucket */
    uint64_t bypass_rate, bypass_bucket;
    qk_cc_kind cc;
} mopts;

static void media_usage(FILE *f)
{
    fprintf(f,
            "usage: quack media server --listen ADDR:PORT [--once] [--cert F --key F]\n"
            "       quack media client --connect ADDR:PORT [options]\n"
            "\n"
            "The media experiment over a real connection (ALPN \"" MEDIA_ALPN "\"). The\n"
            "client sends three flows for --duration seconds:\n"
            "  audio     32 B every 20 ms                                   urgency 2\n"
            "  ld-video  2,048 B at 30 fps, a 32,768 B I-frame every 100th   urgency 4\n"
            "  hd-video  6,144 B at 60 fps, a 65,536 B I-frame every 100th   urgency 6\n"
            "each on its own unidirectional stream (RFC 9218 urgency, not incremental),\n"
            "or with --datagrams as DATAGRAM frames (RFC 9221) of at most %u bytes per\n"
            "fragment, sent with the flow's urgency. Every frame starts with its number\n"
            "and its send time. At the end the client sends its per-flow sent counts on\n"
            "a control stream; the server prints the table (frames received/sent,\n"
            "average, p99 and max delay in ms), checks every body byte, and closes.\n"
            "\n"
            "Delay = send -> frame complete at the server, both times read from\n"
            "CLOCK_MONOTONIC: run both ends on one machine (e.g. through quack netem on\n"
            "loopback, whose --suspend options reproduce Wi-Fi suspensions); across\n"
            "machines the figures are meaningless.\n"
            "\n"
            "server options:\n"
            "  --listen ADDR:PORT   address (port 0 picks one; printed as 'listening on')\n"
            "  --cert F --key F     PEM certificate and key (default: self-signed, printed\n"
            "                       as 'pin: HEX' for the client's --pin)\n"
            "  --once               exit after the first client's table (exit 1 when a\n"
            "                       frame was corrupt or the client vanished)\n"
            "client options:\n"
            "  --connect ADDR:PORT  server address\n"
            "  --pin HEX | --insecure  server key check (one of them is required)\n"
            "  --duration S         seconds of media (default 10)\n"
            "  --datagrams          DATAGRAM frames instead of streams (a lost fragment\n"
            "                       loses its frame; the table shows it)\n"
            "  --bypass off|on|bucket  the congestion-control bypass for urgency < 5\n"
            "                       (audio, LD video): off, on without a cap, or (default)\n"
            "                       through the token bucket; see docs/experiments/media.md\n"
            "  --bypass-rate B/s    the bucket's rate in bytes/s (default 125000)\n"
            "  --bypass-bucket B    the bucket's size in bytes (default 2560)\n"
            "  --cc reno|cubic|bbr  congestion controller (default cubic)\n"
            "  --qlog DIR           a qlog per connection\n"
            "  --quiet              no table from the client\n"
            "  -h, --help           this text\n"
            "Exit status 0 when the server printed its table and closed cleanly.\n",
            DG_FRAG_BYTES);
}

__attribute__((format(printf, 1, 2))) static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "quack media: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'quack media --help' for the options.\n");
    return 2;
}

static void media_rng(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    while (len) {
        ssize_t r = getrandom(buf, len, 0);
        if (r <= 0) abort(); /* no randomness: nothing safe to do */
        buf += r;
        len -= (size_t)r;
    }
}

static void media_config(qk_config *cfg, const mopts *o)
{
    qk_config_default(cfg);
    cfg->server = o->server;
    cfg->alpn[0] = MEDIA_ALPN;
    cfg->alpn_count = 1;
    cfg->cc = o->cc;
    cfg->rng = media_rng;
    cfg->insecure = o->insecure;
    cfg->max_datagram_frame_bytes = DG_FRAG_BYTES + DG_HDR_BYTES + 16;
    cfg->max_pending_datagrams = 4096;
    cfg->max_stream_send_buffer_bytes = 16u << 20; /* the application never blocks */
    cfg->initial_max_data_bytes = 32u << 20;
    cfg->initial_max_stream_data_bytes = 16u << 20;
    cfg->max_streams_uni = 16;
    cfg->idle_timeout_ns = 10 * QK_NS_PER_S;
    qk_io_log_files(cfg, o->qlog_dir, NULL);
    if (o->server || !o->bypass) return;
    cfg->bypass_urgency_limit = BYPASS_LIMIT;
    if (o->bypass == 1) {
        cfg->bypass_rate_bps = 1ull << 40;
        cfg->bypass_bucket_bytes = 1ull << 30;
    }
    if (o->bypass_rate) cfg->bypass_rate_bps = o->bypass_rate;
    if (o->bypass_bucket) cfg->bypass_bucket_bytes = o->bypass_bucket;
}

/* ---- server ---- */

typedef struct rflow {
    uint64_t frames, bytes, sent; /* sent: from the client's control stream */
    double *delay_ms;
    size_t n, cap;
    /* DATAGRAM reassembly: the frame being collected */
    uint32_t dg_no;
    uint16_t dg_got, dg_total;
    qk_time dg_sent;
    bool dg_open;
} rflow;

typedef struct rstream {
    uint64_t sid;
    int flow; /* -1 unknown yet, NFLOWS = control */
    uint8_t hdr[HDR_BYTES];
    size_t hdr_len;
    uint32_t body_left, body_off;
    bool fin;
} rstream;

typedef struct msrv {
    const mopts *o;
    qk_io_loop *loop;
    qk_conn *conn; /* the client being measured (one at a time) */
    rstream st[MAX_STREAMS];
    size_t nst;
    rflow f[NFLOWS];
    bool have_ctl, done, bad_bytes;
    int exit_code;
    uint8_t buf[FRAME_MAX + HDR_BYTES];
} msrv;

static void record(rflow *f, qk_time sent, qk_time now, uint32_t bytes)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 1024;
        double *n = realloc(f->delay_ms, cap * sizeof *n);
        if (!n) return;
        f->delay_ms = n;
        f->cap = cap;
    }
    f->delay_ms[f->n++] = now > sent ? (double)(now - sent) / 1e6 : 0;
    f->frames++;
    f->bytes += bytes;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void print_table(msrv *s)
{
    printf("flow      urgency  frames(recv/sent)  avg_ms   p99_ms   max_ms\n");
    for (int i = 0; i < NFLOWS; i++) {
        rflow *f = &s->f[i];
        double sum = 0, p99 = 0, mx = 0;
        if (f->n) {
            for (size_t k = 0; k < f->n; k++) sum += f->delay_ms[k];
            qsort(f->delay_ms, f->n, sizeof *f->delay_ms, cmp_double);
            p99 = f->delay_ms[(size_t)((double)(f->n - 1) * 0.99)];
            mx = f->delay_ms[f->n - 1];
        }
        printf("%-9s %7u  %8llu/%-8llu  %7.1f  %7.1f  %7.1f\n", DEFS[i].name, DEFS[i].urgency,
               (unsigned long long)f->frames, (unsigned long long)f->sent,
               f->n ? sum / (double)f->n : 0.0, p99, mx);
    }
    if (s->bad_bytes) printf("CORRUPT frames received\n");
    fflush(stdout);
}

/* Bytes [p, p + n) of a media stream: headers, bodies (checked), frames. */
static void stream_bytes(msrv *s, rstream *r, const uint8_t *p, size_t n, qk_time now)
{
    while (n) {
        if (r->hdr_len < HDR_BYTES) {
            size_t k = HDR_BYTES - r->hdr_len < n ? HDR_BYTES - r->hdr_len : n;
            memcpy(r->hdr + r->hdr_len, p, k);
            r->hdr_len += k;
            p += k;
            n -= k;
            if (r->hdr_len < HDR_BYTES) return;
            if (r->flow < 0) r->flow = r->hdr[0] < NFLOWS ? r->hdr[0] : NFLOWS;
            if (r->flow == NFLOWS || r->hdr[0] != r->flow) {
                s->bad_bytes = true;
                r->flow = NFLOWS;
                return;
            }
            r->body_left = frame_bytes(r->flow, qk_media_hdr_read(r->hdr).frame_no) - HDR_BYTES;
            r->body_off = HDR_BYTES;
        }
        qk_media_hdr h = qk_media_hdr_read(r->hdr);
        uint32_t no = h.frame_no;
        size_t k = r->body_left < n ? r->body_left : n;
        for (size_t i = 0; i < k; i++)
            if (p[i] != body_byte(no, r->body_off + i)) s->bad_bytes = true;
        r->body_left -= (uint32_t)k;
        r->body_off += (uint32_t)k;
        p += k;
        n -= k;
        if (r->body_left == 0) {
            record(&s->f[r->flow], h.sent_ns, now, frame_bytes(r->flow, no));
            r->hdr_len = 0;
        }
    }
}

/* The control stream: CTL_MARK, 7 zero bytes, then 3 x 8-byte sent counts. */
static void ctl_bytes(msrv *s, rstream *r, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (r->body_off < 8) {
            r->body_off++;
            continue;
        }
        size_t at = r->body_off - 8;
        if (at < 8 * NFLOWS) s->f[at / 8].sent = s->f[at / 8].sent << 8 | p[i];
        r->body_off++;
    }
}

static rstream *stream_of(msrv *s, uint64_t sid)
{
    for (size_t i = 0; i < s->nst; i++)
        if (s->st[i].sid == sid) return &s->st[i];
    if (s->nst == MAX_STREAMS) return NULL;
    rstream *r = &s->st[s->nst++];
    memset(r, 0, sizeof *r);
    r->sid = sid;
    r->flow = -1;
    return r;
}

static void srv_read(msrv *s, qk_conn *c, uint64_t sid, qk_time now)
{
    rstream *r = stream_of(s, sid);
    if (!r) return;
    for (;;) {
        bool fin = false;
        long n = qk_stream_read(c, sid, s->buf, sizeof s->buf, &fin);
        if (n < 0) return;
        size_t off = 0;
        if (n > 0 && r->flow < 0 && r->hdr_len == 0 && s->buf[0] == CTL_MARK) r->flow = NFLOWS;
        if (r->flow == NFLOWS)
            ctl_bytes(s, r, s->buf + off, (size_t)n);
        else
            stream_bytes(s, r, s->buf + off, (size_t)n, now);
        if (fin) {
            r->fin = true;
            if (r->flow == NFLOWS) s->have_ctl = true;
            return;
        }
        if (n == 0) return;
    }
}

/* One DATAGRAM fragment. */
static void srv_datagram(msrv *s, const uint8_t *p, size_t len, qk_time now)
{
    if (len < DG_HDR_BYTES || p[0] >= NFLOWS) {
        s->bad_bytes = true;
        return;
    }
    rflow *f = &s->f[p[0]];
    uint16_t frag = (uint16_t)get_be(p + 2, 2), total = (uint16_t)get_be(p + 4, 2);
    uint32_t no = (uint32_t)get_be(p + 8, 4);
    for (size_t i = DG_HDR_BYTES; i < len; i++)
        if (p[i] != body_byte(no, (size_t)frag * DG_FRAG_BYTES + HDR_BYTES + i - DG_HDR_BYTES))
            s->bad_bytes = true;
    if (!f->dg_open || f->dg_no != no) { /* a new frame: an unfinished one is lost */
        f->dg_open = true;
        f->dg_no = no;
        f->dg_got = 0;
        f->dg_total = total;
        f->dg_sent = get_be(p + 12, 8);
    }
    if (++f->dg_got == f->dg_total) {
        record(f, f->dg_sent, now, frame_bytes(p[0], no));
        f->dg_open = false;
    }
}

/* The client's counts arrived and every media stream ended (streams) or the
 * count is in (datagrams: nothing more will come): print and close. */
static void srv_maybe_done(msrv *s)
{
    if (!s->conn || !s->have_ctl || s->done) return;
    for (size_t i = 0; i < s->nst; i++)
        if (s->st[i].flow != NFLOWS && !s->st[i].fin) return;
    s->done = true;
    print_table(s);
    qk_conn_close(s->conn, 0, s->bad_bytes ? "corrupt media" : "done");
    if (s->bad_bytes) s->exit_code = 1;
}

static void srv_reset(msrv *s)
{
    for (int i = 0; i < NFLOWS; i++) {
        free(s->f[i].delay_ms);
        memset(&s->f[i], 0, sizeof s->f[i]);
    }
    s->nst = 0;
    s->have_ctl = s->done = s->bad_bytes = false;
    s->conn = NULL;
}

static bool srv_app(void *app, qk_endpoint *ep, qk_time now)
{
    msrv *s = app;
    qk_event ev;
    while (qk_endpoint_poll_event(ep, &ev)) {
        if (ev.type == QK_EV_CONNECTED && !s->conn) s->conn = ev.conn;
        if (ev.conn != s->conn) continue; /* one client at a time */
        switch (ev.type) {
        case QK_EV_STREAM_OPENED:
        case QK_EV_STREAM_READABLE: srv_read(s, ev.conn, ev.stream_id, now); break;
        case QK_EV_DATAGRAM: srv_datagram(s, ev.data, ev.len, now); break;
        case QK_EV_CLOSED:
            if (!s->done) {
                fprintf(stderr, "quack media server: the client went away: %s\n", ev.reason);
                print_table(s);
                s->exit_code = 1;
            }
            srv_reset(s);
            if (s->o->once) qk_io_loop_break(s->loop);
            break;
        default: break;
        }
        srv_maybe_done(s);
    }
    return s->done;
}

static int srv_main(const mopts *o)
{
    qk_config cfg;
    media_config(&cfg, o);
    char *cert_pem = NULL, *key_pem = NULL;
    uint8_t pin[QK_PIN_BYTES];
    char hex[65];
    int rc = 0;
    if (o->cert_file) {
        cfg.cert_file = o->cert_file;
        cfg.key_file = o->key_file;
        rc = qk_cert_pin_file(o->cert_file, pin);
    } else {
        rc = qk_cert_generate("localhost", (int64_t)time(NULL) - 3600, 30, &cert_pem, &key_pem);
        if (!rc) {
            cfg.cert_pem = cert_pem;
            cfg.key_pem = key_pem;
            qk_cert_pin_pem(cert_pem, strlen(cert_pem), pin);
        }
    }
    if (rc) {
        fprintf(stderr, "quack media server: no certificate (error %d)\n", rc);
        return 1;
    }
    qk_pin_to_hex(pin, hex);
    msrv *s = calloc(1, sizeof *s);
    qk_udp *u = NULL;
    qk_endpoint *ep = s ? qk_endpoint_new(&cfg) : NULL;
    if (!ep || qk_udp_open(&o->addr, o->addr.ss.ss_family == AF_INET6 ? QK_UDP_DUALSTACK : 0, &u)) {
        fprintf(stderr, "quack media server: cannot listen on %s\n", o->addr_str);
        rc = 1;
    }
    qk_io_ep_driver *drv = NULL;
    if (!rc && (qk_io_ep_driver_new(ep, cfg.max_udp_payload_bytes, srv_app, s, &drv) ||
                qk_io_ep_driver_loop_new(drv, u, NULL, &s->loop)))
        rc = 1;
    if (!rc) {
        qk_addr la;
        char lbuf[QK_ADDR_STRLEN];
        qk_udp_local_addr(u, &la);
        if (qk_addr_format(&la, lbuf, sizeof lbuf) < 0) snprintf(lbuf, sizeof lbuf, "?");
        printf("pin: %s\nlistening on %s (ALPN %s)\n", hex, lbuf, MEDIA_ALPN);
        fflush(stdout);
        s->o = o;
        qk_io_loop_stop_on_signal(s->loop, SIGINT);
        qk_io_loop_stop_on_signal(s->loop, SIGTERM);
        rc = qk_io_loop_run(s->loop) ? 1 : s->exit_code;
        qk_io_loop_del(s->loop);
        qk_io_ep_driver_del(drv);
    }
    if (s) srv_reset(s);
    qk_endpoint_del(ep);
    qk_udp_close(u);
    free(s);
    free(cert_pem);
    free(key_pem);
    return rc;
}

/* ---- client ---- */

typedef struct mcli {
    const mopts *o;
    qk_io_loop *loop;
    qk_conn *conn;
    uint64_t sid[NFLOWS];
    uint32_t next_no[NFLOWS];
    uint64_t sent[NFLOWS], dropped[NFLOWS];
    qk_time t0, stop_at;
    bool connected, ended, closed, ok;
    qk_conn_stats st; /* at the end, before the close */
    ev_timer clock, guard;
    uint8_t buf[FRAME_MAX + HDR_BYTES];
} mcli;

static void cli_frame_stream(mcli *c, int i, uint32_t no, uint32_t bytes, qk_time now)
{
    qk_media_hdr_write(c->buf, &(qk_media_hdr){(uint8_t)i, no, now});
    for (uint32_t k = HDR_BYTES; k < bytes; k++) c->buf[k] = body_byte(no, k);
    long w = qk_stream_write(c->conn, c->sid[i], c->buf, bytes, false);
    if (w == (long)bytes)
        c->sent[i]++;
    else
        c->dropped[i]++; /* the 16 MiB send buffer is full: cannot happen at these rates */
}

static void cli_frame_dgram(mcli *c, int i, uint32_t no, uint32_t bytes, qk_time now)
{
    uint32_t body = bytes - HDR_BYTES; /* the same body bytes as a stream frame */
    uint16_t total = (uint16_t)((body + DG_FRAG_BYTES - 1) / DG_FRAG_BYTES);
    uint8_t *p = c->buf;
    for (uint16_t f = 0; f < total; f++) {
        uint32_t len = body - (uint32_t)f * DG_FRAG_BYTES;
        if (len > DG_FRAG_BYTES) len = DG_FRAG_BYTES;
        memset(p, 0, DG_HDR_BYTES);
        p[0] = (uint8_t)i;
        put_be(p + 2, f, 2);
        put_be(p + 4, total, 2);
        put_be(p + 8, no, 4);
        put_be(p + 12, now, 8);
        for (uint32_t k = 0; k < len; k++)
            p[DG_HDR_BYTES + k] = body_byte(no, (size_t)f * DG_FRAG_BYTES + HDR_BYTES + k);
        if (qk_datagram_send(c->conn, p, DG_HDR_BYTES + len, DEFS[i].urgency)) {
            c->dropped[i]++; /* queue full: the frame is lost at the sender */
            return;
        }
    }
    c->sent[i]++;
}

/* The end: FIN on the media streams, the counts on the control stream at
 * urgency 7, after every queued frame (DATAGRAMs of one path keep order). */
static void cli_end(mcli *c)
{
    c->ended = true;
    qk_conn_stats_get(c->conn, &c->st);
    uint64_t sid;
    uint8_t m[8 + 8 * NFLOWS] = {CTL_MARK};
    for (int i = 0; i < NFLOWS; i++) {
        put_be(m + 8 + 8 * i, c->sent[i], 8);
        if (!c->o->datagrams) qk_stream_write(c->conn, c->sid[i], NULL, 0, true);
    }
    if (qk_stream_open(c->conn, false, &sid) ||
        qk_stream_write(c->conn, sid, m, sizeof m, true) != (long)sizeof m ||
        qk_stream_set_priority(c->conn, sid, 7, false))
        fprintf(stderr, "quack media client: cannot send the counts\n");
    ev_timer_set(&c->guard, END_WAIT_S, 0.0);
    ev_timer_start(qk_io_loop_ev(c->loop), &c->guard);
}

static void on_clock(struct ev_loop *evl, ev_timer *w, int revents)
{
    (void)evl;
    (void)revents;
    mcli *c = w->data;
    if (!c->conn || c->ended) return;
    qk_time now = qk_io_now();
    for (int i = 0; i < NFLOWS; i++)
        while (c->t0 + (qk_time)c->next_no[i] * DEFS[i].period_ns <= now &&
               c->t0 + (qk_time)c->next_no[i] * DEFS[i].period_ns < c->stop_at) {
            uint32_t no = c->next_no[i]++;
            if (c->o->datagrams)
                cli_frame_dgram(c, i, no, frame_bytes(i, no), now);
            else
                cli_frame_stream(c, i, no, frame_bytes(i, no), now);
        }
    if (now >= c->stop_at) cli_end(c);
    qk_io_loop_kick(c->loop);
}

static void on_guard(struct ev_loop *evl, ev_timer *w, int revents)
{
    (void)evl;
    (void)revents;
    mcli *c = w->data;
    fprintf(stderr, "quack media client: no answer from the server %.0f s after the end\n",
            END_WAIT_S);
    qk_io_loop_break(c->loop);
}

static void cli_connected(mcli *c, qk_time now)
{
    c->connected = true;
    c->t0 = now;
    c->stop_at = now + (qk_time)(c->o->duration_s * 1e9);
    for (int i = 0; i < NFLOWS && !c->o->datagrams; i++)
        if (qk_stream_open(c->conn, false, &c->sid[i]) ||
            qk_stream_set_priority(c->conn, c->sid[i], DEFS[i].urgency, false))
            fprintf(stderr, "quack media client: cannot open the %s stream\n", DEFS[i].name);
    ev_timer_start(qk_io_loop_ev(c->loop), &c->clock);
}

static bool cli_app(void *app, qk_endpoint *ep, qk_time now)
{
    mcli *c = app;
    qk_event ev;
    while (qk_endpoint_poll_event(ep, &ev)) {
        if (ev.type == QK_EV_CONNECTED) cli_connected(c, now);
        if (ev.type == QK_EV_PATH_FAILED) fprintf(stderr, "quack media client: path failed\n");
        if (ev.type != QK_EV_CLOSED) continue;
        c->closed = true;
        c->ok = c->ended && ev.remote && ev.app_error && ev.error_code == 0;
        if (!c->ok)
            fprintf(stderr, "quack media client: connection closed: %s (error %d)\n", ev.reason,
                    ev.reason_err);
        c->conn = NULL;
        qk_io_loop_break(c->loop);
    }
    return false;
}

static void cli_report(const mcli *c)
{
    printf("client: %s, bypass %s: %llu bypass packets (%llu bytes), %llu lost, %llu PTOs\n",
           c->o->datagrams ? "datagrams" : "streams",
           c->o->bypass == 0   ? "off"
           : c->o->bypass == 1 ? "on (no cap)"
                               : "bucket",
           (unsigned long long)c->st.bypass_pkts, (unsigned long long)c->st.bypass_bytes,
           (unsigned long long)c->st.pkts_lost, (unsigned long long)c->st.pto_count);
    for (int i = 0; i < NFLOWS; i++)
        printf("%-9s sent %llu frames (%llu not queued)\n", DEFS[i].name,
               (unsigned long long)c->sent[i], (unsigned long long)c->dropped[i]);
    fflush(stdout);
}

static int cli_main(const mopts *o)
{
    qk_config cfg;
    media_config(&cfg, o);
    if (o->pin) {
        if (qk_pin_parse(o->pin, cfg.pin_sha256)) return bad("--pin wants 64 hex digits");
        cfg.has_pin = true;
    }
    mcli *c = calloc(1, sizeof *c);
    qk_endpoint *ep = c ? qk_endpoint_new(&cfg) : NULL;
    qk_udp *u = NULL;
    qk_addr bind = {0}, none = {0};
    bind.ss.ss_family = o->addr.ss.ss_family;
    bind.len = o->addr.len;
    qk_io_ep_driver *drv = NULL;
    int rc = !ep || qk_udp_open(&bind, 0, &u) ||
             qk_connect(ep, &none, &o->addr, "localhost", qk_io_now(), &c->conn) ||
             qk_io_ep_driver_new(ep, cfg.max_udp_payload_bytes, cli_app, c, &drv);
    if (!rc && qk_io_ep_driver_loop_new(drv, u, NULL, &c->loop)) {
        qk_io_ep_driver_del(drv);
        rc = 1;
    }
    if (rc) fprintf(stderr, "quack media client: cannot start the connection\n");
    if (!rc) {
        c->o = o;
        ev_timer_init(&c->clock, on_clock, 0.001, 0.001);
        c->clock.data = c;
        ev_init(&c->guard, on_guard);
        c->guard.data = c;
        qk_io_loop_stop_on_signal(c->loop, SIGINT);
        qk_io_loop_stop_on_signal(c->loop, SIGTERM);
        qk_io_loop_run(c->loop);
        ev_timer_stop(qk_io_loop_ev(c->loop), &c->clock);
        ev_timer_stop(qk_io_loop_ev(c->loop), &c->guard);
        if (!o->quiet) cli_report(c);
        rc = c->ok ? 0 : 1;
        qk_io_loop_del(c->loop);
        qk_io_ep_driver_del(drv);
    }
    qk_endpoint_del(ep);
    qk_udp_close(u);
    free(c);
    return rc;
}

/* ---- options ---- */

static int parse_bypass(mopts *o, const char *v)
{
    if (!strcasecmp(v, "off"))
        o->bypass = 0;
    else if (!strcasecmp(v, "on"))
        o->bypass = 1;
    else if (!strcasecmp(v, "bucket"))
        o->bypass = 2;
    else
        return bad("--bypass wants off, on or bucket, not '%s'", v);
    return 0;
}

static int parse_opt(mopts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v = NULL;
    static const char *const with_arg[] = {
        "--listen",   "--connect", "--pin", "--cert",        "--key",          "--qlog",
        "--duration", "--bypass",  "--cc",  "--bypass-rate", "--bypass-bucket"};
    for (size_t k = 0; k < sizeof with_arg / sizeof with_arg[0]; k++)
        if (!strcmp(a, with_arg[k])) {
            if (*i + 1 >= argc) return bad("%s needs a value", a);
            v = argv[++*i];
        }
    char *end = NULL;
    if (!strcmp(a, "--listen") || !strcmp(a, "--connect")) {
        if (o->server != !strcmp(a, "--listen")) return bad("%s is for the other side", a);
        o->addr_str = v;
        if (qk_addr_parse(v, &o->addr)) return bad("cannot parse address '%s'", v);
    } else if (!strcmp(a, "--pin")) {
        o->pin = v;
    } else if (!strcmp(a, "--cert")) {
        o->cert_file = v;
    } else if (!strcmp(a, "--key")) {
        o->key_file = v;
    } else if (!strcmp(a, "--qlog")) {
        o->qlog_dir = v;
    } else if (!strcmp(a, "--duration")) {
        o->duration_s = strtod(v, &end);
        if (*end || !(o->duration_s > 0)) return bad("--duration wants seconds > 0");
    } else if (!strcmp(a, "--bypass")) {
        return parse_bypass(o, v);
    } else if (!strcmp(a, "--bypass-rate") || !strcmp(a, "--bypass-bucket")) {
        unsigned long long n = strtoull(v, &end, 10);
        if (*end || !n) return bad("%s wants a positive number of bytes", a);
        *(a[9] == 'r' ? &o->bypass_rate : &o->bypass_bucket) = n;
    } else if (!strcmp(a, "--cc")) {
        if (qk_cc_kind_parse(v, &o->cc)) return bad("--cc: unknown controller '%s'", v);
    } else if (!strcmp(a, "--datagrams") || !strcmp(a, "--once") || !strcmp(a, "--insecure") ||
               !strcmp(a, "--quiet")) {
        bool *b[] = {&o->datagrams, &o->once, &o->insecure, &o->quiet};
        b[a[2] == 'd' ? 0 : a[2] == 'o' ? 1 : a[2] == 'i' ? 2 : 3][0] = true;
    } else if (!v) {
        return bad("unknown option '%s'", a);
    }
    return 0;
}

int qk_cmd_media(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        media_usage(stdout);
        return 0;
    }
    if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")))
        return bad("say 'server' or 'client' first");
    mopts o = {.server = !strcmp(argv[1], "server"),
               .duration_s = 10,
               .bypass = 2,
               .cc = QK_CONFIG_CC_CUBIC};
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            media_usage(stdout);
            return 0;
        }
        int r = parse_opt(&o, argc, argv, &i);
        if (r) return r;
    }
    if (!o.addr_str) return bad(o.server ? "--listen is required" : "--connect is required");
    if (!o.server && !o.pin && !o.insecure) return bad("--pin HEX or --insecure is required");
    if (o.server && !o.cert_file != !o.key_file) return bad("--cert and --key go together");
    return o.server ? srv_main(&o) : cli_main(&o);
}
