/* SPDX-License-Identifier: MIT */
/* The quack side of the yamux interop test and of bench/yamux.sh: a small
 * poll() loop around a qk_yamux session on a TCP socket.
 *
 *   ydrive server ADDR [--fixed]         echo server (streams copied back, FIN -> FIN)
 *   ydrive client ADDR STREAMS BYTES     streams of about BYTES each, half-closed, echo
 *                                        checked by SHA-256; a PING; GoAway
 *   ydrive sink ADDR CSV [--fixed]       accept one session, read one stream, log
 *                                        throughput and the receive window every 100 ms
 *   ydrive send ADDR SECONDS             one stream, write as fast as allowed
 *   ydrive tcpsink ADDR CSV | tcpsend ADDR SECONDS   the same over plain TCP
 * Prints "listening on ADDR" (servers) and one "ok ..." line, or "FAIL ...". */
#include <quack/yamux.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IOBUF (256u << 10)

static qk_time now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (qk_time)ts.tv_sec * QK_NS_PER_S + (qk_time)ts.tv_nsec;
}

static void die(const char *what)
{
    printf("FAIL %s\n", what);
    fflush(stdout);
    exit(1);
}

static int parse_addr(const char *s, struct sockaddr_in *a)
{
    char host[64];
    const char *c = strrchr(s, ':');
    if (!c || (size_t)(c - s) >= sizeof host) return -1;
    memcpy(host, s, (size_t)(c - s));
    host[c - s] = 0;
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)atoi(c + 1));
    return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

static int tcp_listen(const char *addr)
{
    struct sockaddr_in a;
    if (parse_addr(addr, &a)) die("bad address");
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 16)) die("listen");
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    char buf[32];
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
    printf("listening on %s:%u\n", buf, ntohs(a.sin_port));
    fflush(stdout);
    return fd;
}

static int tcp_connect(const char *addr)
{
    struct sockaddr_in a;
    if (parse_addr(addr, &a)) die("bad address");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&a, sizeof a)) die("connect");
    return fd;
}

static void nonblock(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

typedef struct conn {
    int fd;
    qk_yamux *y;
    uint8_t out[IOBUF], in[IOBUF];
    size_t out_len, out_off;
    bool eof;
} conn;

static conn *conn_new(int fd, bool server, bool fixed)
{
    conn *c = calloc(1, sizeof *c);
    qk_yamux_config cfg;
    qk_yamux_config_default(&cfg);
    cfg.server = server;
    cfg.fixed_window = fixed;
    if (!c || qk_yamux_new(&cfg, now_ns(), &c->y)) die("session");
    c->fd = fd;
    nonblock(fd);
    return c;
}

static void conn_del(conn *c)
{
    qk_yamux_del(c->y);
    close(c->fd);
    free(c);
}

/* One round of I/O: write what the session has, read what arrived, run
 * timers. Waits at most wait_ms. */
static void pump(conn *c, int wait_ms)
{
    qk_time now = now_ns();
    if (c->out_off == c->out_len) {
        c->out_off = 0;
        c->out_len = qk_yamux_send(c->y, c->out, sizeof c->out, now);
    }
    qk_time due = qk_yamux_next_timeout(c->y);
    if (due != QK_TIME_INFINITE) {
        long ms = due > now ? (long)((due - now) / QK_NS_PER_MS) : 0;
        if (ms < wait_ms) wait_ms = (int)ms;
    }
    struct pollfd p = {.fd = c->fd, .events = c->eof ? 0 : POLLIN};
    if (c->out_off < c->out_len) p.events |= POLLOUT;
    if (poll(&p, 1, wait_ms) < 0) return;
    if (p.revents & POLLOUT) {
        ssize_t w = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (w > 0) c->out_off += (size_t)w;
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t r = read(c->fd, c->in, sizeof c->in);
        if (r > 0) {
            long rc = qk_yamux_recv(c->y, c->in, (size_t)r, now_ns());
            if (rc < 0) {
                fprintf(stderr, "ydrive: yamux error %ld (%s: %s)\n", rc, qk_strerror((int)rc),
                        qk_yamux_error_reason(c->y));
                c->eof = true;
            }
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            if (r < 0) fprintf(stderr, "ydrive: read: %s\n", strerror(errno));
            c->eof = true;
        }
    }
    now = now_ns();
    if (qk_yamux_next_timeout(c->y) <= now) qk_yamux_on_timeout(c->y, now);
}

/* Flush what is pending (GoAway, last FINs) for up to 1 s. */
static void flush(conn *c)
{
    for (int i = 0; i < 1000 && !c->eof; i++) {
        pump(c, 1);
        if (c->out_off == c->out_len && !qk_yamux_want_send(c->y)) break;
    }
}

static uint8_t next_byte(uint32_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return (uint8_t)*x;
}

/* ---- echo server ---- */
typedef struct echo {
    uint32_t sid;
    uint8_t buf[65536];
    size_t len, off;
    bool fin_in, fin_out;
} echo;

static bool echo_step(conn *c, echo *e)
{
    for (;;) {
        if (e->off < e->len) {
            long w = qk_yamux_write(c->y, e->sid, e->buf + e->off, e->len - e->off, false);
            if (w < 0) return false;
            e->off += (size_t)w;
            if (e->off < e->len) return true;
        }
        if (e->fin_in) {
            if (!e->fin_out) qk_yamux_write(c->y, e->sid, NULL, 0, true);
            e->fin_out = true;
            return false; /* done on our side; the session frees it */
        }
        bool fin = false;
        long n = qk_yamux_read(c->y, e->sid, e->buf, sizeof e->buf, &fin);
        if (n == QK_ERR_AGAIN) return true;
        if (n < 0) return false;
        e->len = (size_t)n;
        e->off = 0;
        e->fin_in = fin;
    }
}

static void serve_echo(conn *c)
{
    echo **es = NULL;
    size_t n = 0, streams = 0;
    long long goaway = -1;
    while (!c->eof && !qk_yamux_is_closed(c->y)) {
        pump(c, 20);
        uint32_t sid;
        while (qk_yamux_accept(c->y, &sid) == 0) {
            es = realloc(es, (n + 1) * sizeof *es);
            es[n] = calloc(1, sizeof(echo));
            es[n++]->sid = sid;
            streams++;
        }
        qk_yamux_event ev;
        while (qk_yamux_poll_event(c->y, &ev))
            if (ev.type == QK_YAMUX_EV_GOAWAY) goaway = ev.code;
        for (size_t i = n; i-- > 0;)
            if (!echo_step(c, es[i])) {
                free(es[i]);
                es[i] = es[--n];
            }
    }
    flush(c);
    qk_yamux_stats st;
    qk_yamux_stats_get(c->y, &st);
    fprintf(stderr, "ydrive server: session ended after %zu streams, %llu bytes in, goaway=%lld\n",
            streams, (unsigned long long)st.bytes_in, goaway);
    for (size_t i = 0; i < n; i++) free(es[i]);
    free(es);
}

/* ---- client: STREAMS streams, SHA-256 of what went vs what came back ---- */
typedef struct cstream {
    uint32_t sid;
    size_t size, sent, got;
    uint32_t x;
    bool fin_out, fin_in;
    struct sha256_ctx out, in;
} cstream;

static void client_step(conn *c, cstream *s)
{
    uint8_t buf[16384];
    while (!s->fin_out) {
        size_t n = s->size - s->sent < sizeof buf ? s->size - s->sent : sizeof buf;
        uint32_t x = s->x;
        for (size_t i = 0; i < n; i++) buf[i] = next_byte(&x);
        long w = qk_yamux_write(c->y, s->sid, buf, n, s->sent + n == s->size);
        if (w <= 0 && n) break;
        for (long i = 0; i < w; i++) next_byte(&s->x);
        sha256_update(&s->out, (size_t)w, buf);
        s->sent += (size_t)w;
        if (s->sent == s->size) s->fin_out = true;
        if ((size_t)w < n) break;
    }
    while (!s->fin_in) {
        bool fin = false;
        long n = qk_yamux_read(c->y, s->sid, buf, sizeof buf, &fin);
        if (n < 0) {
            if (n != QK_ERR_AGAIN) die("stream read failed (reset?)");
            break;
        }
        sha256_update(&s->in, (size_t)n, buf);
        s->got += (size_t)n;
        s->fin_in = fin;
    }
}

static int run_client(const char *addr, int streams, size_t size)
{
    conn *c = conn_new(tcp_connect(addr), false, false);
    cstream *ss = calloc((size_t)streams, sizeof *ss);
    size_t total = 0;
    for (int i = 0; i < streams; i++) {
        if (qk_yamux_open(c->y, &ss[i].sid)) die("open");
        ss[i].size = size * (size_t)(i + 1) / (size_t)streams + (size_t)i;
        ss[i].x = (uint32_t)i * 2654435761u + 1;
        sha256_init(&ss[i].out);
        sha256_init(&ss[i].in);
        total += ss[i].size;
    }
    int done = 0;
    while (done < streams) {
        if (c->eof || qk_yamux_is_closed(c->y)) die("session ended early");
        pump(c, 20);
        qk_yamux_event ev;
        while (qk_yamux_poll_event(c->y, &ev))
            if (ev.type == QK_YAMUX_EV_RESET) die("a stream was reset");
        done = 0;
        for (int i = 0; i < streams; i++) {
            if (!ss[i].fin_in) client_step(c, &ss[i]);
            done += ss[i].fin_in;
        }
    }
    for (int i = 0; i < streams; i++) {
        uint8_t a[32], b[32];
        sha256_digest(&ss[i].out, 32, a);
        sha256_digest(&ss[i].in, 32, b);
        if (memcmp(a, b, 32) || ss[i].got != ss[i].size) {
            char what[160];
            snprintf(
                what, sizeof what,
                "echo differs (SHA-256): stream %d (id %u) sent %zu of %zu bytes, %zu came back", i,
                ss[i].sid, ss[i].sent, ss[i].size, ss[i].got);
            die(what);
        }
    }
    qk_yamux_stats st;
    qk_yamux_stats_get(c->y, &st);
    uint64_t pongs = st.pongs_received;
    qk_yamux_ping(c->y, now_ns());
    for (int i = 0; i < 500 && st.pongs_received == pongs; i++) {
        pump(c, 10);
        qk_yamux_stats_get(c->y, &st);
    }
    if (st.pongs_received == pongs) die("no PING answer");
    qk_yamux_go_away(c->y, QK_YAMUX_GOAWAY_NORMAL);
    flush(c);
    printf("ok streams=%d bytes=%zu sha256-equal ping=%.3fms\n", streams, total,
           (double)st.latest_rtt_ns / 1e6);
    free(ss);
    conn_del(c);
    return 0;
}

/* ---- bench: one stream, sender and logging sink ---- */
static int run_send(const char *addr, double seconds)
{
    conn *c = conn_new(tcp_connect(addr), false, false);
    static uint8_t buf[65536];
    uint32_t sid;
    /* A session that has been up a moment: its PINGs measured the idle
     * path before the transfer starts (as a long-lived session has). */
    for (qk_time warm = now_ns() + 300 * QK_NS_PER_MS; now_ns() < warm;) pump(c, 10);
    if (qk_yamux_open(c->y, &sid)) die("open");
    qk_time end = now_ns() + (qk_time)(seconds * 1e9);
    uint64_t sent = 0;
    while (now_ns() < end && !c->eof) {
        long w;
        while ((w = qk_yamux_write(c->y, sid, buf, sizeof buf, false)) > 0) sent += (uint64_t)w;
        pump(c, 5);
        qk_yamux_event ev;
        while (qk_yamux_poll_event(c->y, &ev)) {
        }
    }
    qk_yamux_write(c->y, sid, NULL, 0, true);
    flush(c);
    printf("ok sent=%llu\n", (unsigned long long)sent);
    conn_del(c);
    return 0;
}

static int run_sink(const char *addr, const char *csv, bool fixed, bool plain)
{
    int lfd = tcp_listen(addr), fd = accept(lfd, NULL, NULL);
    if (fd < 0) die("accept");
    FILE *f = fopen(csv, "w");
    if (!f) die("csv");
    fprintf(f, "t_s,mbps,window_bytes,credit_bytes,srtt_ms,min_rtt_ms,delivery_rtt_bytes\n");
    conn *c = plain ? NULL : conn_new(fd, true, fixed);
    if (plain) nonblock(fd);
    static uint8_t buf[IOBUF];
    uint32_t sid = 0;
    qk_time start = now_ns(), mark = start;
    uint64_t got = 0, got_mark = 0, peak_credit = 0;
    for (bool end = false; !end;) {
        if (plain) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            poll(&p, 1, 20);
            ssize_t r = read(fd, buf, sizeof buf);
            if (r > 0) got += (uint64_t)r;
            end = r == 0;
        } else {
            pump(c, 20);
            if (!sid) qk_yamux_accept(c->y, &sid);
            qk_yamux_event ev;
            while (qk_yamux_poll_event(c->y, &ev)) {
            }
            bool fin = false;
            long n;
            while (sid && (n = qk_yamux_read(c->y, sid, buf, sizeof buf, &fin)) > 0)
                got += (uint64_t)n;
            end = fin || c->eof;
        }
        qk_time now = now_ns();
        if (now - mark >= 100 * QK_NS_PER_MS || end) {
            qk_yamux_stream_info si = {0};
            qk_yamux_stats st = {0};
            if (!plain && sid) qk_yamux_stream_info_get(c->y, sid, &si);
            if (!plain) qk_yamux_stats_get(c->y, &st);
            if (si.peak_credit_bytes > peak_credit) peak_credit = si.peak_credit_bytes;
            fprintf(f, "%.2f,%.2f,%llu,%llu,%.2f,%.2f,%llu\n", (double)(now - start) / 1e9,
                    (double)(got - got_mark) * 8 / ((double)(now - mark) / 1e9) / 1e6,
                    (unsigned long long)si.recv_window_bytes,
                    (unsigned long long)si.recv_credit_bytes, (double)st.srtt_ns / 1e6,
                    (double)st.min_rtt_ns / 1e6, (unsigned long long)si.delivery_rtt_bytes);
            mark = now;
            got_mark = got;
        }
    }
    fclose(f);
    printf("ok received=%llu seconds=%.2f peak_credit=%llu\n", (unsigned long long)got,
           (double)(now_ns() - start) / 1e9, (unsigned long long)peak_credit);
    if (c)
        conn_del(c);
    else
        close(fd);
    close(lfd);
    return 0;
}

static int run_tcpsend(const char *addr, double seconds)
{
    int fd = tcp_connect(addr);
    static uint8_t buf[65536];
    qk_time end = now_ns() + (qk_time)(seconds * 1e9);
    uint64_t sent = 0;
    while (now_ns() < end) {
        ssize_t w = write(fd, buf, sizeof buf);
        if (w <= 0) die("write");
        sent += (uint64_t)w;
    }
    close(fd);
    printf("ok sent=%llu\n", (unsigned long long)sent);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3) die("usage: see the comment at the top of ydrive.c");
    bool fixed = false;
    for (int i = 1; i < argc; i++) /* --fixed anywhere */
        if (!strcmp(argv[i], "--fixed")) {
            fixed = true;
            memmove(argv + i, argv + i + 1, (size_t)(argc - i) * sizeof *argv);
            argc--;
            break;
        }
    const char *m = argv[1];
    if (!strcmp(m, "server")) {
        int lfd = tcp_listen(argv[2]);
        for (;;) {
            int fd = accept(lfd, NULL, NULL);
            if (fd < 0) die("accept");
            conn *c = conn_new(fd, true, fixed);
            serve_echo(c);
            qk_yamux_del(c->y);
            close(fd);
            free(c);
        }
    }
    if (!strcmp(m, "client") && argc >= 5)
        return run_client(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 10));
    if (!strcmp(m, "send") && argc >= 4) return run_send(argv[2], atof(argv[3]));
    if (!strcmp(m, "sink") && argc >= 4) return run_sink(argv[2], argv[3], fixed, false);
    if (!strcmp(m, "tcpsink") && argc >= 4) return run_sink(argv[2], argv[3], false, true);
    if (!strcmp(m, "tcpsend") && argc >= 4) return run_tcpsend(argv[2], atof(argv[3]));
    die("unknown mode");
}
