/* SPDX-License-Identifier: MIT */
/* `quack get URL…`: an HTTP/3 client (src/h3) that downloads over one
 * connection, all requests concurrently (as many as the server's stream
 * limit allows at a time). */
#include "cli_errors.h"
#include "commands.h"
#include "cli_options.h"
#include "cli_stats.h"
#include "get_proxy.h"

#include <quack/cert.h>
#include <quack/sim.h>
#include <quack/driver.h>
#include <quack/h3.h>

#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define GET_MAX_URLS       10000u
#define GET_SESSION_MAX    (64u << 10) /* a --session-file larger than this is not ours */
#define GET_PROGRESS_BYTES (1u << 20)  /* progress lines once this much arrived */

typedef struct gurl {
    const char *url;
    char path[2048];
    char file[512]; /* output name under --output */
    char tmp[600];  /* name while downloading */
    int fd;
    bool started, done, failed;
    uint64_t sid;
    unsigned status;
    uint64_t got, length; /* length: content-length, 0 when unknown */
    char prio[64];        /* the priority header (RFC 9218 §4), "" for none */
} gurl;

typedef struct getter {
    gurl *u;
    size_t n, next, ndone, nfailed;
    const char *outdir;
    bool discard, quiet;
    char authority[300], host[256];
    qk_endpoint *ep;
    qk_conn *conn;
    qk_h3 *h3;
    qk_io_loop *loop;
    bool connected, closing, closed, failed;
    bool ecn; /* --ecn: report the ECN outcome at the end */
    cli_verify verify;
    qk_time t_start, t_last;
    uint64_t total, last_total;
    int exit_code;
    const char *session_file; /* --session-file: read before, written on each ticket */
    bool early;               /* the requests went out in 0-RTT */
    uint8_t pref_state;       /* qk_conn_stats.preferred_address last reported */
    double stall_s;           /* --stall: read no body, hold the connection this long */
    bool stall_over;          /* ... and it is over: unfinished URLs are not errors */
    double migrate_s;         /* --migrate-every: move to a new local port this often */
    qk_udp *udp;              /* the current socket */
    unsigned udp_flags;
    qk_addr peer;
    unsigned migrations;         /* moves qk_conn_migrate agreed to (each probed) */
    unsigned migrate_deferred;   /* ticks refused for now (probe out, no spare CID) */
    const get_proxy_opts *proxy; /* --proxy: through a quack tunnel server */
} getter;

/* --ecn: one line on how ECN went (RFC 9000 §13.4.2), even with --quiet. */
static void ecn_report(qk_conn *c)
{
    static const char *const states[] = {"off", "testing", "capable", "failed"};
    qk_conn_stats st;
    if (!c) return;
    qk_conn_stats_get(c, &st);
    fprintf(stderr, "ecn: %s, sent ect0 %llu, received ect0 %llu ce %llu, peer reported ce %llu\n",
            states[st.ecn_state < 4 ? st.ecn_state : 0], (unsigned long long)st.pkts_sent_ect0,
            (unsigned long long)st.ecn_ect0_received, (unsigned long long)st.ecn_ce_received,
            (unsigned long long)st.ecn_ce_reported);
}

static void gfail(getter *g, const char *fmt, const char *a)
{
    fprintf(stderr, "quack get: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    g->failed = true;
}

/* Split https://host[:port]/path. Returns 0 or -1. */
static int parse_url(const char *url, char *host, size_t hcap, char *authority, size_t acap,
                     char *path, size_t pcap)
{
    if (strncmp(url, "https://", 8)) return -1;
    const char *a = url + 8, *slash = strchr(a, '/');
    size_t alen = slash ? (size_t)(slash - a) : strlen(a);
    if (alen == 0 || alen >= acap) return -1;
    memcpy(authority, a, alen);
    authority[alen] = 0;
    const char *p = slash ? slash : "/";
    if (strlen(p) >= pcap) return -1;
    strcpy(path, p);
    /* host: [v6] or name, without the port */
    const char *end;
    if (authority[0] == '[') {
        end = strchr(authority, ']');
        if (!end) return -1;
        size_t hl = (size_t)(end - authority - 1);
        if (hl >= hcap) return -1;
        memcpy(host, authority + 1, hl);
        host[hl] = 0;
    } else {
        end = strchr(authority, ':');
        size_t hl = end ? (size_t)(end - authority) : alen;
        if (hl >= hcap || hl == 0) return -1;
        memcpy(host, authority, hl);
        host[hl] = 0;
    }
    return 0;
}

/* The file name of a path: its last segment without the query, or index.html. */
static void file_name(const char *path, char *out, size_t cap)
{
    const char *q = strchr(path, '?');
    size_t len = q ? (size_t)(q - path) : strlen(path);
    const char *seg = path;
    for (size_t i = 0; i < len; i++)
        if (path[i] == '/') seg = path + i + 1;
    size_t sl = (size_t)(path + len - seg);
    if (sl == 0 || (sl == 1 && seg[0] == '.') || (sl == 2 && !strncmp(seg, "..", 2))) {
        snprintf(out, cap, "index.html");
        return;
    }
    if (sl >= cap) sl = cap - 1;
    memcpy(out, seg, sl);
    out[sl] = 0;
}

static void url_finish(getter *g, gurl *u, bool ok, const char *why)
{
    if (u->done) return;
    u->done = true;
    g->ndone++;
    if (u->fd >= 0) {
        if (close(u->fd) && ok) {
            ok = false;
            why = "write error";
        }
        u->fd = -1;
        char final[1100];
        snprintf(final, sizeof final, "%s/%s", g->outdir, u->file);
        if (ok && rename(u->tmp, final)) {
            ok = false;
            why = "cannot rename the downloaded file";
        }
        if (!ok) unlink(u->tmp); /* never leave half-written files */
    }
    if (!ok) {
        u->failed = true;
        g->nfailed++;
        if (!g->stall_over) fprintf(stderr, "quack get: %s: %s\n", u->url, why);
    } else if (!g->quiet) {
        fprintf(stderr, "%s: %u, %llu bytes\n", u->url, u->status, (unsigned long long)u->got);
    }
}

static gurl *url_of(getter *g, uint64_t sid)
{
    for (size_t i = 0; i < g->next; i++)
        if (g->u[i].started && !g->u[i].done && g->u[i].sid == sid) return &g->u[i];
    return NULL;
}

static void on_headers(void *user, qk_h3 *h, uint64_t sid, const qk_h3_header *hd, size_t n,
                       bool fin)
{
    (void)h;
    (void)fin;
    getter *g = user;
    gurl *u = url_of(g, sid);
    if (!u) return;
    for (size_t i = 0; i < n; i++) {
        char v[32];
        size_t vl = hd[i].value_len < sizeof v - 1 ? hd[i].value_len : sizeof v - 1;
        memcpy(v, hd[i].value, vl);
        v[vl] = 0;
        if (hd[i].name_len == 7 && !memcmp(hd[i].name, ":status", 7)) u->status = (unsigned)atoi(v);
        if (hd[i].name_len == 14 && !memcmp(hd[i].name, "content-length", 14))
            u->length = strtoull(v, NULL, 10);
    }
}

static void on_data(void *user, qk_h3 *h, uint64_t sid, const uint8_t *d, size_t len)
{
    (void)h;
    getter *g = user;
    gurl *u = url_of(g, sid);
    if (!u) return;
    u->got += len;
    g->total += len;
    while (u->fd >= 0 && len) {
        ssize_t w = write(u->fd, d, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            url_finish(g, u, false, strerror(errno));
            qk_stream_stop(qk_h3_conn(h), sid, QK_H3_REQUEST_CANCELLED);
            return;
        }
        d += w;
        len -= (size_t)w;
    }
}

static void on_end(void *user, qk_h3 *h, uint64_t sid)
{
    (void)h;
    getter *g = user;
    gurl *u = url_of(g, sid);
    if (!u) return;
    char why[96];
    snprintf(why, sizeof why, "HTTP status %u", u->status);
    if (u->status < 200 || u->status > 299)
        url_finish(g, u, false, why);
    else if (u->length && u->got != u->length)
        url_finish(g, u, false, "body length differs from content-length");
    else
        url_finish(g, u, true, NULL);
}

static void on_reset(void *user, qk_h3 *h, uint64_t sid, uint64_t code)
{
    (void)h;
    (void)code;
    getter *g = user;
    gurl *u = url_of(g, sid);
    if (u) url_finish(g, u, false, "the server reset the request");
}

static void on_goaway(void *user, qk_h3 *h, uint64_t id)
{
    (void)h;
    getter *g = user;
    /* RFC 9114 §5.2: requests at or above id will not be processed. */
    for (size_t i = 0; i < g->next; i++)
        if (g->u[i].started && !g->u[i].done && g->u[i].sid >= id)
            url_finish(g, &g->u[i], false, "refused by GOAWAY");
    if (g->next < g->n) gfail(g, "server sent GOAWAY; %s", "remaining URLs not requested");
    while (g->next < g->n) {
        g->u[g->next].started = true;
        url_finish(g, &g->u[g->next++], false, "not requested (GOAWAY)");
    }
}

static const qk_h3_callbacks get_cb = {on_headers, on_data, on_end, on_reset,
                                       on_goaway,  NULL,    NULL};

static bool start_requests(getter *g)
{
    bool any = false;
    while (g->next < g->n) {
        gurl *u = &g->u[g->next];
        qk_h3_header hd[6] = {
            qk_h3_hdr(":method", "GET"),           qk_h3_hdr(":scheme", "https"),
            qk_h3_hdr(":authority", g->authority), qk_h3_hdr(":path", u->path),
            qk_h3_hdr("user-agent", "quack"),      qk_h3_hdr("priority", u->prio)};
        int rc = qk_h3_request(g->h3, hd, u->prio[0] ? 6 : 5, NULL, 0, NULL, NULL, &u->sid);
        if (rc == QK_ERR_STREAM_LIMIT) return any; /* more once the server raises the limit */
        u->started = true;
        g->next++;
        if (rc) {
            url_finish(g, u, false, "cannot send the request");
            continue;
        }
        any = true;
        if (!g->discard) {
            snprintf(u->tmp, sizeof u->tmp, "%s/.%s.part", g->outdir, u->file);
            u->fd = open(u->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (u->fd < 0) {
                url_finish(g, u, false, "cannot create the output file (check --output)");
                qk_stream_stop(qk_h3_conn(g->h3), u->sid, QK_H3_REQUEST_CANCELLED);
            }
        }
    }
    return any;
}

static void close_conn(getter *g)
{
    if (g->closing || !g->conn) return;
    g->closing = true;
    qk_conn_close(g->conn, QK_H3_NO_ERROR, g->failed ? "failed" : "done");
}

/* HTTP/3 on the connection: at QK_EV_CONNECTED, or at once when the
 * requests can go out in 0-RTT. */
static void start_h3(getter *g, qk_conn *c)
{
    int err = 0;
    g->h3 = qk_h3_new(c, false, &get_cb, g, &err);
    if (!g->h3) {
        gfail(g, "cannot start HTTP/3 (%s)",
              err == QK_ERR_STREAM_LIMIT ? "the server allows too few streams" : "out of memory");
        close_conn(g);
    }
}

/* --session-file: the session (ticket + the server's transport parameters)
 * for the next run, written whole to a temporary file and renamed. */
static void save_session(getter *g, qk_conn *c)
{
    static uint8_t buf[GET_SESSION_MAX];
    long n = qk_conn_session_get(c, buf, sizeof buf);
    if (n <= 0 || !g->session_file) return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", g->session_file);
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(buf, 1, (size_t)n, f) == (size_t)n;
    if (f && fclose(f)) ok = false;
    if (ok && rename(tmp, g->session_file) == 0) return;
    unlink(tmp);
    fprintf(stderr, "quack get: --session-file %s: cannot write it (%s)\n", g->session_file,
            strerror(errno));
}

static void on_connected(getter *g, qk_conn *c, qk_time now)
{
    g->connected = true;
    if (!g->h3) start_h3(g, c);
    if (!g->h3 || g->quiet) return;
    qk_conn_stats st;
    qk_conn_stats_get(c, &st);
    fprintf(stderr, "connected in %.3f ms (ALPN %s)%s%s\n", (double)(now - g->t_start) / 1e6,
            qk_conn_alpn(c) ? qk_conn_alpn(c) : "?", st.resumed ? ", session resumed" : "",
            st.zerortt == 1   ? ", 0-RTT accepted"
            : st.zerortt == 2 ? ", 0-RTT rejected (requests resent in 1-RTT)"
                              : "");
}

/* RFC 9000 §9.6: say when the connection moved to the server's preferred
 * address (or its probe failed). */
static void preferred_report(getter *g)
{
    if (g->pref_state >= QK_PREFADDR_MOVED) return; /* told already */
    qk_conn_stats st;
    qk_conn_stats_get(g->conn, &st);
    if (st.preferred_address == g->pref_state) return;
    g->pref_state = st.preferred_address;
    qk_addr peer;
    char buf[QK_ADDR_STRLEN] = "?";
    qk_conn_path_addrs(g->conn, NULL, &peer);
    qk_addr_format(&peer, buf, sizeof buf);
    if (g->quiet) return;
    if (st.preferred_address == QK_PREFADDR_MOVED)
        fprintf(stderr, "moved to the server's preferred address %s\n", buf);
    else if (st.preferred_address == QK_PREFADDR_FAILED)
        fprintf(stderr, "the server's preferred address did not validate; staying on %s\n", buf);
}

static bool get_app(void *app, qk_endpoint *ep, qk_time now)
{
    getter *g = app;
    bool wrote = false;
    qk_event ev;
    (void)now;
    while (qk_endpoint_poll_event(ep, &ev)) {
        if (ev.type == QK_EV_CONNECTED) {
            on_connected(g, ev.conn, now);
        } else if (ev.type == QK_EV_SESSION_TICKET) {
            save_session(g, ev.conn);
        } else if (ev.type == QK_EV_CLOSED) {
            bool clean = ev.app_error && ev.error_code == QK_H3_NO_ERROR;
            if (g->ecn) ecn_report(ev.conn);
            if (!g->connected) {
                char why[600];
                cli_handshake_failed(&ev, g->verify, why, sizeof why);
                gfail(g, "%s", why);
            } else if (!g->closing || (!clean && ev.remote)) {
                char why[400];
                snprintf(why, sizeof why, "%s (code 0x%llx%s, error %d)",
                         ev.reason[0] ? ev.reason : "no reason", (unsigned long long)ev.error_code,
                         ev.app_error ? " app" : "", ev.reason_err);
                gfail(g, "connection closed: %s", why);
            }
            qk_h3_del(g->h3);
            g->h3 = NULL;
            g->conn = NULL;
            g->closed = true;
            qk_io_loop_break(g->loop);
            return false;
        } else if (g->h3) {
            /* --stall: request streams are never read (their windows stay shut). */
            if (g->stall_s > 0 && !(ev.stream_id & 2) &&
                (ev.type == QK_EV_STREAM_READABLE || ev.type == QK_EV_STREAM_OPENED))
                continue;
            qk_h3_on_event(g->h3, &ev);
        }
    }
    if (g->conn) preferred_report(g);
    /* RFC 9001 §4.6.1: with a resumed session the requests go in 0-RTT. */
    if (!g->h3 && !g->closing && g->conn && qk_conn_early_data(g->conn)) {
        start_h3(g, g->conn);
        g->early = g->h3 != NULL;
    }
    if (g->h3 && !g->closing) {
        wrote = start_requests(g) || wrote;
        int r = qk_h3_flush(g->h3);
        if (r > 0) wrote = true;
        if (g->ndone == g->n || g->failed) close_conn(g);
    }
    return wrote || g->closing;
}

static void on_tick(struct ev_loop *evl, ev_timer *w, int revents)
{
    (void)evl;
    (void)revents;
    getter *g = w->data;
    qk_time now = qk_io_now();
    if (!g->quiet && g->total >= GET_PROGRESS_BYTES && g->ndone < g->n) {
        uint64_t expect = 0;
        for (size_t i = 0; i < g->next; i++) expect += g->u[i].length;
        double dt = (double)(now - g->t_last) / 1e9;
        fprintf(stderr, "[get] %6.1fs  %zu/%zu done  %.1f MiB", (double)(now - g->t_start) / 1e9,
                g->ndone, g->n, (double)g->total / 1048576.0);
        if (expect) fprintf(stderr, " of %.1f MiB", (double)expect / 1048576.0);
        fprintf(stderr, "  %.1f Mbit/s\n",
                dt > 0 ? (double)(g->total - g->last_total) * 8 / 1e6 / dt : 0.0);
    }
    g->t_last = now;
    g->last_total = g->total;
}

static void on_stall_end(struct ev_loop *evl, ev_timer *w, int revents)
{
    (void)evl;
    (void)revents;
    getter *g = w->data;
    if (!g->quiet) fprintf(stderr, "quack get: --stall: %.1f s over\n", g->stall_s);
    qk_io_loop_break(g->loop);
}

/* The local IP the kernel picks to reach peer (a connected UDP socket). */
static int local_ip_for(const qk_addr *peer, qk_addr *out)
{
    int fd = socket(peer->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    socklen_t len = sizeof out->ss;
    int rc = connect(fd, (const struct sockaddr *)&peer->ss, peer->len);
    if (!rc) rc = getsockname(fd, (struct sockaddr *)&out->ss, &len);
    out->len = len;
    close(fd);
    return rc;
}

/* --migrate-every: a new socket (new local port) and the local address the
 * server will see from it. Returns 0 or -1 (nothing left open). */
static int migrate_socket(getter *g, qk_udp **out, qk_addr *na)
{
    qk_addr bind = {0}, port;
    bind.ss.ss_family = g->peer.ss.ss_family;
    bind.len = g->peer.len;
    qk_udp *u = NULL;
    if (qk_udp_open(&bind, g->udp_flags, &u) || local_ip_for(&g->peer, na)) {
        if (u) qk_udp_close(u);
        return -1;
    }
    qk_udp_local_addr(u, &port);
    if (na->ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&na->ss)->sin_port = ((struct sockaddr_in *)&port.ss)->sin_port;
    else
        ((struct sockaddr_in6 *)&na->ss)->sin6_port = ((struct sockaddr_in6 *)&port.ss)->sin6_port;
    *out = u;
    return 0;
}

/* --migrate-every: continue from a new socket (new local port, RFC 9000 §9).
 * The library is asked first: only when qk_conn_migrate starts the probe
 * (PATH_CHALLENGE) does the loop change sockets; the old one is closed, so
 * what the server still sends there is lost and recovered. A refusal keeps
 * the old socket: for good when the server sent disable_active_migration
 * (RFC 9000 §18.2; said once, no further attempts), for this tick while a
 * probe is out or no spare connection ID has arrived. */
static void on_migrate(struct ev_loop *evl, ev_timer *w, int revents)
{
    (void)revents;
    getter *g = w->data;
    if (!g->conn || !g->connected || g->closing || g->ndone == g->n) return;
    /* RFC 9000 §9: not before the handshake is confirmed (qk_conn_migrate
     * refuses too; this saves opening a socket for nothing). */
    if (!qk_conn_handshake_confirmed(g->conn)) return;
    qk_udp *u;
    qk_addr na;
    if (migrate_socket(g, &u, &na)) return;
    int rc = qk_conn_migrate(g->conn, &na, qk_io_now());
    if (!rc && !qk_io_loop_replace_udp(g->loop, u)) {
        qk_udp_close(g->udp);
        g->udp = u;
        g->migrations++;
        qk_io_loop_kick(g->loop);
        return;
    }
    qk_udp_close(u); /* a probe already started fails and changes nothing */
    if (rc == QK_ERR_UNSUPPORTED) {
        qk_addr cur;
        qk_udp_local_addr(g->udp, &cur);
        fprintf(stderr,
                "quack get: --migrate-every: the server disabled active migration "
                "(disable_active_migration, RFC 9000 §18.2); staying on local port %u\n",
                (unsigned)qk_addr_port(&cur));
        ev_timer_stop(evl, w);
    } else if (rc) {
        g->migrate_deferred++;
    }
}

/* --migrate-every: the count at the end ("migrations: N"), and why some
 * ticks did not move. */
static void migrate_report(const getter *g)
{
    fprintf(stderr, "migrations: %u", g->migrations);
    if (g->migrations) fprintf(stderr, " (each probed with PATH_CHALLENGE)");
    if (g->migrate_deferred)
        fprintf(stderr, "; %u deferred (a probe still out or no spare connection ID yet)",
                g->migrate_deferred);
    fputc('\n', stderr);
}

static void get_usage(FILE *f)
{
    fprintf(f, "usage: quack get URL... [--output DIR | --discard] [--pin HEX | --insecure]\n"
               "                 [--qlog DIR] [--keylog FILE] [--cc NAME] [--quiet]\n"
               "                 [--max-data SIZE] [--max-stream-data SIZE]\n"
               "                 [--session-file FILE [--no-early-data]]\n"
               "                 [--urgency N[,i] | --priority VALUE] URL...\n"
               "\n"
               "Downloads https:// URLs over HTTP/3 (ALPN h3), all on one QUIC connection\n"
               "and concurrently (as many at a time as the server's stream limit allows).\n"
               "Every URL must name the same server. Files are written to DIR under the\n"
               "last path segment (index.html for a directory); a failed download leaves\n"
               "no file behind.\n"
               "\n"
               "  --output DIR   where to write the files (default: the current directory)\n"
               "  --discard      read the bodies and throw them away\n"
               "  --pin HEX      accept only the server key with this SHA-256 SPKI pin\n"
               "                 (quack serve prints it)\n"
               "  --insecure     do not verify the server certificate at all\n"
               "                 (default: the system CAs)\n"
               "  --qlog DIR     write a qlog of the connection into DIR\n"
               "  --keylog FILE  append TLS secrets (NSS key log format, for Wireshark)\n"
               "  --cc ALG       congestion controller: reno, cubic (default), dctcp, bbr, prague\n"
               "  --quiet        no per-URL lines and no progress\n"
               "  --max-data SIZE         connection receive window, fixed (no auto-tuning;\n"
               "                 e.g. 1000, 64K, 4M; default 16M growing to 96M)\n"
               "  --max-stream-data SIZE  stream receive window, fixed (default 8M growing\n"
               "                 to 64M)\n"
               "  --session-file FILE  resume the TLS session stored in FILE (if it exists)\n"
               "                 and store the server's new ticket there (with the\n"
               "                 server's transport parameters); when the ticket allows,\n"
               "                 the requests go out in 0-RTT (RFC 9001 §4.6)\n"
               "  --no-early-data  resume without 0-RTT (requests after the handshake)\n"
               "  --handshake-timeout T  give up when the handshake has not completed\n"
               "                 after T (default 10s)\n"
               "  --idle-timeout T  close after T without a packet from the server\n"
               "                 (max_idle_timeout, RFC 9000 §10.1; default 30s)\n"
               "  --no-gso       one datagram per send (packet captures show each packet)\n"
               "  --no-preferred-addr  stay on the address connected to when the server\n"
               "                 offers a preferred_address (default: move there once\n"
               "                 the path validates, RFC 9000 §9.6; reported on stderr)\n"
               "  --ecn          mark ECT(0) and validate ECN (RFC 9000 §13.4; default off)\n"
               "  --key-update[=N]  initiate a 1-RTT key update every N packets sent\n"
               "                 (default 100; RFC 9001 §6), e.g. for interop tests\n"
               "  --ciphers LIST     TLS 1.3 cipher suites to offer, colon-separated IANA\n"
               "                 names (e.g. TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256)\n"
               "  --urgency N[,i]  request priority (RFC 9218): urgency 0 (first) .. 7\n"
               "                 (last), default 3; ',i': the response is useful in\n"
               "                 pieces (incremental). Applies to the URLs after it, or\n"
               "                 when it comes last to all URLs without one; repeat it\n"
               "                 to give URLs different priorities\n"
               "  --priority VALUE  the same as a priority header value, e.g. 'u=0, i'\n"
               "  --migrate-every SECS  (testing) move the connection to a new local\n"
               "                 port this often during the download (RFC 9000 §9),\n"
               "                 each move probed with PATH_CHALLENGE; prints\n"
               "                 'migrations: N' at the end. Against a server that\n"
               "                 sent disable_active_migration (RFC 9000 §18.2) the\n"
               "                 connection stays on its port, said once on stderr\n"
               "  --stall SECS   (testing) request the URLs, read no response body,\n"
               "                 hold the connection SECS seconds, exit 0\n"
               "  --quic-version V   QUIC version to use: v1 (default), v2 or a number\n"
               "  --offer-version V  offer version V first (e.g. 0x1a2a3a4a, unknown to\n"
               "                 the server); on its Version Negotiation, start again\n"
               "                 with --quic-version (RFC 9000 §6.2)\n"
               "\n");
    get_proxy_usage(f);
    fprintf(f, "\n"
               "Progress goes to stderr once per second after 1 MiB arrived. Exit status:\n"
               "0 when every URL answered 2xx with a complete body, 1 when any failed,\n"
               "2 for bad usage.\n");
}

#define get_bad(...) cli_usage_error("get", __VA_ARGS__)

typedef struct get_opts {
    char prio[64];      /* --urgency/--priority in force for the next URLs */
    bool prio_trailing; /* one was given after the last URL */
    const char *out, *pin, *offer, *session;
    cli_h3_opts h3; /* --qlog --keylog --cc --quic-version */
    bool discard, insecure, quiet;
    bool no_preferred;                              /* --no-preferred-addr (RFC 9000 §9.6) */
    qk_time handshake_timeout_ns;                   /* 0: the library default (10 s) */
    qk_time idle_timeout_ns;                        /* --idle-timeout; 0: 30 s */
    uint64_t max_data_bytes, max_stream_data_bytes; /* 0: defaults, auto-tuned */
    get_proxy_opts proxy;                           /* --proxy and its options */
} get_opts;

/* --urgency N[,i] / --priority VALUE at argv[*i]: -1 when a is neither,
 * 0 when taken, 2 on a bad value. */
static int get_prio_opt(get_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    bool urg = !strcmp(a, "--urgency");
    if (!urg && strcmp(a, "--priority")) return -1;
    if (*i + 1 >= argc) return get_bad("%s needs a value", a);
    const char *v = argv[++*i];
    qk_h3_priority p = {QK_H3_DEFAULT_URGENCY, false};
    if (urg) {
        if (v[0] < '0' || v[0] > '7' || (v[1] && strcmp(v + 1, ",i")))
            return get_bad("--urgency %s: want 0..7, optionally followed by ,i", v);
        snprintf(o->prio, sizeof o->prio, "u=%c%s", v[0], v[1] ? ", i" : "");
    } else {
        if (strlen(v) >= sizeof o->prio || qk_h3_priority_parse(v, strlen(v), &p))
            return get_bad("--priority '%s': want a priority field value, e.g. 'u=1, i'", v);
        snprintf(o->prio, sizeof o->prio, "%s", v);
    }
    o->prio_trailing = true;
    return 0;
}

/* A URL takes the --urgency/--priority before it; one given after the last
 * URL applies to the URLs that have none. */
static void get_prio_assign(getter *g, get_opts *o, gurl *u)
{
    if (u) {
        snprintf(u->prio, sizeof u->prio, "%s", o->prio);
        o->prio_trailing = false;
        return;
    }
    for (size_t k = 0; o->prio_trailing && k < g->n; k++)
        if (!g->u[k].prio[0]) snprintf(g->u[k].prio, sizeof g->u[k].prio, "%s", o->prio);
}

/* The testing options' value: seconds > 0 after argv[*i]. Returns 0 or -1. */
static int get_seconds(int argc, char **argv, int *i, double *secs)
{
    char *end = NULL;
    *secs = *i + 1 < argc ? strtod(argv[++*i], &end) : 0;
    return !end || *end || !(*secs > 0) ? -1 : 0;
}

static int get_parse(getter *g, get_opts *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        int flag, pr;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            get_usage(stdout);
            return -1;
        }
        const cli_str_opt tab[] = {{"--output", &o->out},
                                   {"--pin", &o->pin},
                                   {"--offer-version", &o->offer},
                                   {"--session-file", &o->session},
                                   {NULL, NULL}};
        dst = cli_str_opt_find(tab, a);
        if (!dst) dst = cli_h3_opt(&o->h3, a);
        uint64_t *size = NULL;
        if (!strcmp(a, "--max-data")) size = &o->max_data_bytes;
        if (!strcmp(a, "--max-stream-data")) size = &o->max_stream_data_bytes;
        if (size) {
            if (i + 1 >= argc) return get_bad("%s needs a value", a);
            if (cli_parse_size(argv[++i], size) || !*size) {
                char what[96];
                snprintf(what, sizeof what, "%s %.64s", a, argv[i]);
                return get_bad("%s: want a size > 0 (e.g. 1000, 64K, 4M)", what);
            }
        } else if (dst) {
            if (i + 1 >= argc) return get_bad("%s needs a value", a);
            *dst = argv[++i];
        } else if (!strcmp(a, "--discard")) {
            o->discard = true;
        } else if (!strcmp(a, "--insecure")) {
            o->insecure = true;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (!strcmp(a, "--no-preferred-addr")) {
            o->no_preferred = true;
        } else if (!strcmp(a, "--migrate-every") || !strcmp(a, "--stall")) {
            double *secs = a[2] == 'm' ? &g->migrate_s : &g->stall_s;
            if (get_seconds(argc, argv, &i, secs)) return get_bad("%s wants seconds > 0", a);
        } else if (!strcmp(a, "--handshake-timeout") || !strcmp(a, "--idle-timeout")) {
            qk_time *t = a[2] == 'h' ? &o->handshake_timeout_ns : &o->idle_timeout_ns;
            if (i + 1 >= argc || qk_sim_parse_time(argv[++i], t) || !*t)
                return get_bad("%s %s: want a time, e.g. 10s or 500ms", a, i < argc ? argv[i] : "");
        } else if ((flag = cli_h3_flag("get", &o->h3, a))) {
            if (flag == 2) return 2;
        } else if ((pr = get_prio_opt(o, argc, argv, &i)) >= 0 ||
                   (pr = get_proxy_opt(&o->proxy, argc, argv, &i)) >= 0) {
            if (pr) return pr;
        } else if (a[0] == '-') {
            return get_bad("unknown option %s", a);
        } else {
            if (g->n == GET_MAX_URLS) return get_bad("too many URLs (at most %s)", "10000");
            gurl *u = &g->u[g->n++];
            char host[256], auth[300];
            u->url = a;
            u->fd = -1;
            if (parse_url(a, host, sizeof host, auth, sizeof auth, u->path, sizeof u->path))
                return get_bad("'%s' is not an https://host[:port]/path URL", a);
            if (g->n == 1) {
                strcpy(g->host, host);
                strcpy(g->authority, auth);
            } else if (strcmp(auth, g->authority)) {
                return get_bad("'%s': all URLs must name the same server (one connection)", a);
            }
            file_name(u->path, u->file, sizeof u->file);
            get_prio_assign(g, o, u);
        }
    }
    get_prio_assign(g, o, NULL);
    if (g->n == 0) return get_bad("%s", "no URL given");
    if (o->discard && o->out) return get_bad("%s", "--output and --discard exclude each other");
    if (o->pin && o->insecure) return get_bad("%s", "--pin and --insecure exclude each other");
    if (o->proxy.url && (g->migrate_s > 0 || g->stall_s > 0))
        return get_bad("%s", "--proxy does not combine with --migrate-every or --stall");
    if (!o->proxy.url && (o->proxy.secret_file || o->proxy.pin || o->proxy.insecure))
        return get_bad("%s", "--proxy-secret-file, --proxy-pin and --proxy-insecure need --proxy");
    return 0;
}

static int get_config(getter *g, const get_opts *o, qk_config *cfg, qk_addr *peer)
{
    qk_config_default(cfg);
    cfg->alpn[0] = QK_H3_ALPN;
    cfg->alpn_count = 1;
    cfg->rng = cli_rng;
    cfg->insecure = o->insecure;
    cfg->max_udp_payload_bytes = QK_CLI_DATAGRAM_BYTES;
    cfg->initial_max_data_bytes = 16u << 20;
    cfg->initial_max_stream_data_bytes = 8u << 20;
    cfg->idle_timeout_ns = o->idle_timeout_ns ? o->idle_timeout_ns : 30 * QK_NS_PER_S;
    /* RFC 9000 §4.1: fixed windows (a peer must cope with a small one). */
    if (o->max_data_bytes) {
        cfg->initial_max_data_bytes = o->max_data_bytes;
        cfg->max_conn_window_bytes = o->max_data_bytes;
    }
    if (o->max_stream_data_bytes) {
        cfg->initial_max_stream_data_bytes = o->max_stream_data_bytes;
        cfg->max_stream_window_bytes = o->max_stream_data_bytes;
    }
    if (cli_h3_apply("quack get", &o->h3, cfg)) return 2;
    if (o->handshake_timeout_ns) cfg->handshake_timeout_ns = o->handshake_timeout_ns;
    cfg->disable_preferred_address = o->no_preferred;
    g->session_file = o->session;
    /* Checked by qk_endpoint_new (qk_config_check explains a bad one). */
    if (o->offer && (cli_parse_version(o->offer, &cfg->offer_version) || !cfg->offer_version))
        return get_bad("--offer-version %s: want v1, v2 or a nonzero number", o->offer);
    if (o->pin) {
        if (qk_pin_parse(o->pin, cfg->pin_sha256))
            return get_bad("--pin %s: want 64 hex digits (SHA-256 of the SPKI)", o->pin);
        cfg->has_pin = true;
    }
    char hp[sizeof g->authority + 8]; /* authority plus ":443" */
    snprintf(hp, sizeof hp, "%s", g->authority);
    if (!strchr(g->authority[0] == '[' ? strchr(g->authority, ']') : g->authority, ':'))
        snprintf(hp, sizeof hp, "%s:443", g->authority);
    int arc = cli_parse_addr("get", "URL", hp, peer);
    if (arc) return arc;
    g->outdir = o->out ? o->out : ".";
    g->discard = o->discard;
    g->quiet = o->quiet;
    if (!g->discard) {
        struct stat st;
        if (stat(g->outdir, &st) || !S_ISDIR(st.st_mode))
            return get_bad("--output %s: not a directory (create it first)", g->outdir);
    }
    g->verify = o->pin ? CLI_VERIFY_PIN : o->insecure ? CLI_VERIFY_INSECURE : CLI_VERIFY_SYSTEM;
    if (o->insecure) cli_warn_insecure("quack get");
    return 0;
}

/* Read --session-file when it exists; NULL (len 0) otherwise. */
static uint8_t *load_session(const char *path, size_t *len)
{
    *len = 0;
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return NULL;
    uint8_t *buf = malloc(GET_SESSION_MAX);
    size_t n = buf ? fread(buf, 1, GET_SESSION_MAX, f) : 0;
    fclose(f);
    if (!n || n == GET_SESSION_MAX) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static int get_connect(getter *g, const qk_addr *peer)
{
    qk_addr none = {0};
    size_t len;
    uint8_t *sess = load_session(g->session_file, &len);
    qk_connect_opts co = {.session = sess, .session_len = len};
    int rc = qk_connect_ex(g->ep, &none, peer, g->host, &co, g->t_start, &g->conn);
    if (rc == QK_ERR_CONFIG && sess) {
        fprintf(stderr, "quack get: --session-file %s: not a usable session, ignored\n",
                g->session_file);
        rc = qk_connect(g->ep, &none, peer, g->host, g->t_start, &g->conn);
    }
    free(sess);
    if (rc) fprintf(stderr, "quack get: cannot start the connection (error %d)\n", rc);
    return rc;
}

/* The loop ended: URLs not done failed (or were meant to stall). */
static void get_finish(getter *g, bool stalled)
{
    for (size_t i = 0; i < g->n; i++) {
        g->u[i].started = true;
        g->stall_over = stalled;
        url_finish(g, &g->u[i], false,
                   g->closed ? "connection closed before the response" : "not completed");
    }
    qk_h3_del(g->h3);
    g->h3 = NULL;
}

static void proxy_finish(void *ctx)
{
    get_finish(ctx, false);
}

/* --proxy: the inner endpoint is up; connect to the URL's server. */
static int proxy_start(void *ctx, qk_endpoint *ep, qk_time now)
{
    getter *g = ctx;
    g->ep = ep;
    g->t_start = g->t_last = now;
    return get_connect(g, &g->peer);
}

static int get_run_proxy(getter *g, const qk_config *cfg, const qk_addr *peer)
{
    get_proxy_inner in = {.cfg = *cfg,
                          .target = *peer,
                          .start = proxy_start,
                          .app = get_app,
                          .finish = proxy_finish,
                          .ctx = g};
    g->peer = *peer;
    g->t_start = g->t_last = qk_io_now();
    int rc = get_proxy_run(g->proxy, &in, &g->loop);
    g->ep = NULL;
    if (rc == 2) return 2; /* bad usage of the --proxy options */
    return rc || g->failed || g->nfailed ? 1 : 0;
}

static int get_run(getter *g, const qk_config *cfg, const qk_addr *peer, unsigned udp_flags)
{
    qk_addr bind = {0};
    bind.ss.ss_family = peer->ss.ss_family;
    bind.len = peer->len;
    qk_udp *udp = NULL;
    int rc = qk_udp_open(&bind, udp_flags, &udp);
    g->udp = udp;
    g->udp_flags = udp_flags;
    g->peer = *peer;
    if (rc) {
        fprintf(stderr, "quack get: cannot open a UDP socket: %s\n", strerror(errno));
        return 1;
    }
    g->ep = cli_endpoint_new(cfg, "quack get");
    if (!g->ep) { /* qk_config_check's explanation is printed */
        qk_udp_close(udp);
        return 1;
    }
    qk_io_ep_driver *drv = NULL;
    bool drv_ok = false, stalled = false;
    g->t_start = g->t_last = qk_io_now();
    rc = get_connect(g, peer);
    if (!rc) rc = qk_io_ep_driver_new(g->ep, cfg->max_udp_payload_bytes, get_app, g, &drv);
    if (!rc) {
        drv_ok = true;
        rc = qk_io_ep_driver_loop_new(drv, udp, NULL, &g->loop);
    }
    if (!rc) {
        qk_io_loop_stop_on_signal(g->loop, SIGINT);
        qk_io_loop_stop_on_signal(g->loop, SIGTERM);
        ev_timer tick;
        ev_timer_init(&tick, on_tick, 1.0, 1.0);
        tick.data = g;
        ev_timer_start(qk_io_loop_ev(g->loop), &tick);
        ev_timer stall;
        ev_timer_init(&stall, on_stall_end, g->stall_s, 0.0);
        stall.data = g;
        if (g->stall_s > 0) ev_timer_start(qk_io_loop_ev(g->loop), &stall);
        ev_timer mig;
        ev_timer_init(&mig, on_migrate, g->migrate_s, g->migrate_s);
        mig.data = g;
        if (g->migrate_s > 0) ev_timer_start(qk_io_loop_ev(g->loop), &mig);
        rc = qk_io_loop_run(g->loop);
        ev_timer_stop(qk_io_loop_ev(g->loop), &stall);
        ev_timer_stop(qk_io_loop_ev(g->loop), &mig);
        if (g->migrate_s > 0) migrate_report(g);
        ev_timer_stop(qk_io_loop_ev(g->loop), &tick);
        stalled = g->stall_s > 0 && !g->failed && !g->closed;
        if (qk_io_loop_stop_signal(g->loop)) gfail(g, "%s", "interrupted");
        qk_io_loop_del(g->loop);
    }
    get_finish(g, stalled);
    if (drv_ok) qk_io_ep_driver_del(drv);
    qk_endpoint_del(g->ep);
    qk_udp_close(g->udp);
    if (stalled) return 0; /* --stall: nothing was meant to complete */
    return rc || g->failed || g->nfailed ? 1 : 0;
}

int qk_cmd_get(int argc, char **argv)
{
    getter g = {0};
    get_opts o = {0};
    g.u = calloc(argc > 1 ? (size_t)argc : 1, sizeof *g.u);
    if (!g.u) return 1;
    int rc = get_parse(&g, &o, argc, argv);
    if (rc) {
        free(g.u);
        return rc < 0 ? 0 : rc;
    }
    qk_config cfg;
    qk_addr peer;
    rc = get_config(&g, &o, &cfg, &peer);
    g.ecn = o.h3.ecn;
    g.proxy = o.proxy.url ? &o.proxy : NULL;
    if (!rc && g.proxy)
        rc = get_run_proxy(&g, &cfg, &peer);
    else if (!rc)
        rc = get_run(&g, &cfg, &peer, (o.h3.no_gso ? QK_UDP_NO_GSO : 0) | QK_UDP_RECVERR);
    if (!rc && !o.quiet)
        fprintf(stderr, "%zu URLs, %llu bytes\n", g.n, (unsigned long long)g.total);
    free(g.u);
    return rc;
}
