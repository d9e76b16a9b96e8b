/* SPDX-License-Identifier: MIT */
/* poll_client: a QUIC client that runs its own poll() loop (no libev), on
 * the public quack API, with a stream and DATAGRAM frames (RFC 9221).
 *
 *   poll_client ADDR:PORT PIN [DATAGRAMS [DIR]] < input > output
 *
 * Talks to echo_server (ALPN "echo"): sends standard input on one
 * bidirectional stream and writes the echo to standard output, and sends
 * DATAGRAMS datagrams (default 100) of 16..1000 bytes, each starting with
 * its sequence number, at most 16 unanswered at a time and each sent again
 * after 1 s without an echo (DATAGRAM frames are unreliable: the application
 * decides what a loss means). Every echo is compared with what was sent.
 * With DIR, the datagrams sent and those echoed are written in sequence
 * order to DIR/dgrams_sent.bin and DIR/dgrams_echoed.bin. PIN is the SHA-256
 * of the server's SubjectPublicKeyInfo (64 hex digits). Exits 0 when the
 * stream came back whole and every datagram came back intact.
 *
 * The loop is the whole sans-I/O contract: the endpoint never reads a clock
 * or touches a socket. Each turn reads CLOCK_MONOTONIC once (`now`), feeds
 * received datagrams to qk_endpoint_recv, runs qk_endpoint_on_timeout when
 * qk_endpoint_next_timeout has passed, drains events, lets the application
 * queue data, and sends what qk_endpoint_send produces; poll() sleeps until
 * the socket is readable, standard input has data, or the next timeout. */
#include <quack/cert.h>
#include <quack/io.h>
#include <quack/quack.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define DG_MAX       4096 /* datagrams this client sends at most */
#define DG_WINDOW    16   /* unanswered datagrams at a time */
#define DG_RESEND_NS (1000 * QK_NS_PER_MS)
#define BATCH        16 /* datagrams per recv / send call */

typedef struct dgram {
    uint8_t *sent, *echoed; /* payloads (echoed NULL until it came back) */
    size_t len;
    qk_time sent_at; /* 0 = not sent yet */
} dgram;

typedef struct client {
    qk_conn *conn;
    bool closed;
    uint64_t sid;
    bool stream_open, in_eof, fin_sent, fin_received, input_wanted;
    uint8_t buf[16384]; /* read from stdin, not yet accepted by the stream */
    size_t off, len;
    uint64_t sent_bytes, recv_bytes;
    dgram dg[DG_MAX];
    size_t n_dg, n_echoed, n_resent, n_bad;
} client;

/* The clock the endpoint gets: monotonic nanoseconds (never wall-clock
 * time, which jumps). */
static qk_time now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (qk_time)ts.tv_sec * QK_NS_PER_S + (qk_time)ts.tv_nsec;
}

static void rng(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    while (len) {
        ssize_t r = getrandom(buf, len, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) abort();
        buf += r;
        len -= (size_t)r;
    }
}

/* Stream: move what standard input has (poll() said so) into the stream. */
static void stream_send(client *cl, bool input_ready)
{
    while (cl->stream_open && !cl->fin_sent) {
        if (cl->off == cl->len && !cl->in_eof) {
            if (!input_ready) break;
            ssize_t n = read(STDIN_FILENO, cl->buf, sizeof cl->buf);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                qk_conn_close(cl->conn, 1, "input error");
                return;
            }
            cl->off = 0;
            cl->len = (size_t)n;
            cl->in_eof = n == 0;
            input_ready = false; /* one read per poll() wake-up: it may block next */
        }
        long w =
            qk_stream_write(cl->conn, cl->sid, cl->buf + cl->off, cl->len - cl->off, cl->in_eof);
        if (w < 0) return;
        cl->off += (size_t)w;
        cl->sent_bytes += (uint64_t)w;
        if (cl->off < cl->len) break; /* send buffer full: QK_EV_STREAM_WRITABLE resumes */
        if (cl->in_eof) cl->fin_sent = true;
    }
    /* Watch standard input only when the stream could take more. */
    cl->input_wanted = cl->stream_open && !cl->in_eof && cl->off == cl->len;
}

static void stream_recv(client *cl)
{
    uint8_t buf[16384];
    for (;;) {
        bool fin = false;
        long r = qk_stream_read(cl->conn, cl->sid, buf, sizeof buf, &fin);
        if (r < 0) {
            if (r != QK_ERR_AGAIN) qk_conn_close(cl->conn, 1, "stream reset");
            return;
        }
        if (fwrite(buf, 1, (size_t)r, stdout) != (size_t)r) {
            qk_conn_close(cl->conn, 1, "output error");
            return;
        }
        cl->recv_bytes += (uint64_t)r;
        if (fin) {
            cl->fin_received = true;
            return;
        }
    }
}

/* DATAGRAM: send the next ones within the window, again those unanswered
 * for DG_RESEND_NS. QK_ERR_LIMIT (the queue is full) waits for a later turn. */
static void dgram_send(client *cl, qk_time now)
{
    size_t outstanding = 0;
    for (size_t i = 0; i < cl->n_dg; i++) {
        dgram *d = &cl->dg[i];
        if (d->echoed) continue;
        bool resend = d->sent_at && now - d->sent_at >= DG_RESEND_NS;
        if (d->sent_at && !resend) {
            outstanding++;
            continue;
        }
        if (outstanding >= DG_WINDOW) break;
        if (qk_datagram_send(cl->conn, d->sent, d->len, 0) != 0) break;
        cl->n_resent += resend;
        d->sent_at = now;
        outstanding++;
    }
}

static void dgram_recv(client *cl, const uint8_t *data, size_t len)
{
    uint32_t seq =
        len >= 4 ? (uint32_t)data[0] << 24 | data[1] << 16 | data[2] << 8 | data[3] : UINT32_MAX;
    dgram *d = seq < cl->n_dg ? &cl->dg[seq] : NULL;
    if (!d || d->len != len || memcmp(d->sent, data, len)) {
        cl->n_bad++;
        return;
    }
    if (d->echoed) return; /* a resent one came back twice */
    d->echoed = malloc(len);
    if (!d->echoed) abort();
    memcpy(d->echoed, data, len);
    cl->n_echoed++;
}

static bool done(const client *cl)
{
    return cl->fin_received && cl->n_echoed == cl->n_dg;
}

static void on_events(client *cl, qk_endpoint *ep, qk_time now)
{
    qk_event ev;
    while (qk_endpoint_poll_event(ep, &ev)) {
        switch (ev.type) {
        case QK_EV_CONNECTED:
            cl->stream_open = qk_stream_open(cl->conn, true, &cl->sid) == 0;
            if (!cl->stream_open) qk_conn_close(cl->conn, 1, "no stream");
            cl->input_wanted = cl->stream_open;
            break;
        case QK_EV_STREAM_WRITABLE: stream_send(cl, false); break;
        case QK_EV_STREAM_READABLE: stream_recv(cl); break;
        case QK_EV_DATAGRAM: dgram_recv(cl, ev.data, ev.len); break; /* data: until next poll */
        case QK_EV_CLOSED:                                           /* conn freed after this */
            if (ev.reason_err || ev.error_code)
                fprintf(stderr, "poll_client: connection closed: %s (%s)\n", ev.reason,
                        qk_strerror(ev.reason_err));
            cl->conn = NULL;
            cl->closed = true;
            return;
        default: break;
        }
    }
    if (cl->conn && qk_conn_established(cl->conn)) {
        dgram_send(cl, now);
        if (done(cl)) qk_conn_close(cl->conn, 0, "done");
    }
}

/* Send what the endpoint has; returns false when the socket is full (the
 * rest waits for POLLOUT: qk_udp_send advanced d past what went out). */
static bool flush(qk_endpoint *ep, qk_udp *u, qk_datagram *d, uint8_t (*bufs)[1500], size_t *n,
                  size_t *first, qk_time now)
{
    for (;;) {
        if (*first == *n) {
            for (size_t i = 0; i < BATCH; i++) d[i] = (qk_datagram){.data = bufs[i], .len = 1500};
            *first = 0;
            *n = qk_endpoint_send(ep, d, BATCH, now);
            if (!*n) return true;
        }
        int r = qk_udp_send(u, d + *first, *n - *first);
        if (r == QK_ERR_AGAIN) return false;
        *first = r < 0 ? *first + 1 : *first + (size_t)r; /* an error drops that datagram */
    }
}

static void on_readable(qk_endpoint *ep, qk_udp *u, uint8_t (*bufs)[1500], qk_time now)
{
    qk_datagram d[BATCH], seg;
    for (;;) {
        for (size_t i = 0; i < BATCH; i++) d[i] = (qk_datagram){.data = bufs[i], .len = 1500};
        int n = qk_udp_recv(u, d, BATCH);
        if (n <= 0) return;
        for (int i = 0; i < n; i++)
            for (size_t k = 0; qk_datagram_segment(&d[i], k, &seg) == 0; k++)
                qk_endpoint_recv(ep, &seg, now); /* decrypts in place */
    }
}

static int run(client *cl, qk_endpoint *ep, qk_udp *u)
{
    static uint8_t rx[BATCH][1500], tx[BATCH][1500];
    qk_datagram out[BATCH];
    size_t n_out = 0, first = 0;
    bool writable = true;
    while (!cl->closed) {
        qk_time now = now_ns();
        qk_time next = qk_endpoint_next_timeout(ep);
        int ms = next == QK_TIME_INFINITE ? -1
                 : next <= now            ? 0
                                          : (int)((next - now + QK_NS_PER_MS - 1) / QK_NS_PER_MS);
        if (ms > 100) ms = 100; /* DATAGRAM resends are the application's own timer */
        struct pollfd p[2] = {{qk_udp_fd(u), POLLIN | (writable ? 0 : POLLOUT), 0},
                              {STDIN_FILENO, POLLIN, 0}};
        if (poll(p, cl->input_wanted ? 2 : 1, ms) < 0 && errno != EINTR) return QK_ERR_IO;
        now = now_ns();
        if (p[0].revents & POLLIN) on_readable(ep, u, rx, now);
        if (qk_endpoint_next_timeout(ep) <= now) qk_endpoint_on_timeout(ep, now);
        on_events(cl, ep, now);
        if (cl->input_wanted && p[1].revents) stream_send(cl, true);
        writable = flush(ep, u, out, tx, &n_out, &first, now);
    }
    return 0;
}

static int parse_pin(const char *s, uint8_t pin[QK_PIN_BYTES])
{
    return qk_pin_parse(s, pin) == 0 ? 0 : -1;
}

/* DATAGRAMS payloads: sequence number (4 bytes, big endian), random bytes. */
static void make_datagrams(client *cl, size_t n)
{
    cl->n_dg = n;
    for (size_t i = 0; i < n; i++) {
        dgram *d = &cl->dg[i];
        d->len = 16 + (i * 37) % 985;
        if (!(d->sent = malloc(d->len))) abort();
        rng(NULL, d->sent, d->len);
        for (int k = 0; k < 4; k++) d->sent[k] = (uint8_t)(i >> (24 - 8 * k));
    }
}

static void write_datagrams(const client *cl, const char *dir)
{
    char path[4096];
    for (int which = 0; which < 2; which++) {
        snprintf(path, sizeof path, "%s/%s", dir, which ? "dgrams_echoed.bin" : "dgrams_sent.bin");
        FILE *f = fopen(path, "wb");
        if (!f) {
            perror(path);
            continue;
        }
        for (size_t i = 0; i < cl->n_dg; i++) {
            const uint8_t *p = which ? cl->dg[i].echoed : cl->dg[i].sent;
            if (p) fwrite(p, 1, cl->dg[i].len, f);
        }
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    static client cl;
    qk_addr peer;
    long n_dg = argc > 3 ? strtol(argv[3], NULL, 10) : 100;
    qk_config cfg;
    qk_config_default(&cfg);
    if (argc < 3 || argc > 5 || qk_addr_parse(argv[1], &peer) || n_dg < 0 || n_dg > DG_MAX ||
        parse_pin(argv[2], cfg.pin_sha256)) {
        fprintf(stderr, "usage: poll_client ADDR:PORT PIN [DATAGRAMS (0..%d) [DIR]] < in > out\n",
                DG_MAX);
        return 2;
    }
    cfg.has_pin = true;
    cfg.alpn[0] = "echo";
    cfg.alpn_count = 1;
    cfg.rng = rng;
    cfg.max_datagram_frame_bytes = 1200; /* let the server send us DATAGRAM frames */
    make_datagrams(&cl, (size_t)n_dg);

    qk_addr any = {0}; /* the peer's family, any address, port 0 */
    any.ss.ss_family = peer.ss.ss_family;
    any.len = peer.len;
    qk_udp *u = NULL;
    qk_endpoint *ep = qk_endpoint_new(&cfg);
    /* No GRO: every receive is one datagram, so 1500-byte buffers do. */
    int rc = ep ? qk_udp_open(&any, QK_UDP_NO_GRO, &u) : QK_ERR_CONFIG;
    qk_addr none = {0};
    if (!rc) rc = qk_connect(ep, &none, &peer, "localhost", now_ns(), &cl.conn);
    if (!rc) rc = run(&cl, ep, u);
    if (rc) fprintf(stderr, "poll_client: %s\n", qk_strerror(rc));
    qk_endpoint_del(ep);
    qk_udp_close(u);
    fflush(stdout);
    if (argc == 5) write_datagrams(&cl, argv[4]);
    fprintf(stderr,
            "poll_client: stream %llu bytes sent, %llu back; datagrams %zu sent, %zu echoed "
            "intact, %zu resent, %zu wrong\n",
            (unsigned long long)cl.sent_bytes, (unsigned long long)cl.recv_bytes, cl.n_dg,
            cl.n_echoed, cl.n_resent, cl.n_bad);
    bool ok = !rc && cl.fin_received && cl.recv_bytes == cl.sent_bytes && cl.n_echoed == cl.n_dg &&
              !cl.n_bad;
    for (size_t i = 0; i < cl.n_dg; i++) free(cl.dg[i].sent), free(cl.dg[i].echoed);
    return ok ? 0 : 1;
}
