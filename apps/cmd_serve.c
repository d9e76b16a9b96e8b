/* SPDX-License-Identifier: MIT */
/* `quack serve --root DIR`: a static-file HTTP/3 server (src/h3). Bodies are
 * pulled (qk_h3_respond_pull): read from the open file with pread as the
 * connection has room for them, so a client that stops reading makes the
 * server hold no more than the credit it granted; paths are resolved with
 * realpath() and must stay under the root. */
#include "cli_errors.h"
#include "commands.h"
#include "cli_options.h"
#include "cli_stats.h"
#include "serve_fleet.h"

#include <quack/cert.h>
#include <quack/driver.h>
#include <quack/h3.h>
#include <quack/workers.h>

#include <errno.h>
#include <ev.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SERVE_MAX_PATH_BYTES 2048u

typedef struct sreq {
    struct sreq *next;
    qk_h3 *h3;
    uint64_t sid;
    char method[8];
    char path[SERVE_MAX_PATH_BYTES];
    bool bad; /* path too long or missing pseudo-headers */
} sreq;

typedef struct server {
    const char *root_arg;
    char root[PATH_MAX];
    size_t root_len;
    bool quiet, stats;
    qk_endpoint *ep;
    sreq *reqs;    /* requests whose headers arrived, not yet answered */
    sreq *sending; /* file responses submitted, not yet handed to QUIC in full */
    qk_h3 **h3s;   /* live HTTP/3 layers, one per connection */
    size_t nh3, cap_h3;
    uint64_t served, errors, unfinished; /* served: responses sent in full */
} server;

/* An open file being served: read at the offsets the HTTP/3 layer asks for. */
typedef struct body_file {
    int fd;
} body_file;

static long file_read(void *ctx, uint64_t off, uint8_t *buf, size_t len)
{
    body_file *f = ctx;
    for (;;) {
        ssize_t r = pread(f->fd, buf, len, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        return r; /* 0 (the file shrank) or -1: the response is reset */
    }
}

static void file_close(void *ctx)
{
    body_file *f = ctx;
    close(f->fd);
    free(f);
}

static sreq *req_find(server *s, qk_h3 *h, uint64_t sid, bool unlink_it)
{
    for (sreq **pp = &s->reqs; *pp; pp = &(*pp)->next)
        if ((*pp)->h3 == h && (*pp)->sid == sid) {
            sreq *r = *pp;
            if (unlink_it) *pp = r->next;
            return r;
        }
    return NULL;
}

static void req_drop_conn(server *s, qk_h3 *h)
{
    for (sreq **pp = &s->reqs; *pp;) {
        if ((*pp)->h3 == h) {
            sreq *r = *pp;
            *pp = r->next;
            free(r);
        } else {
            pp = &(*pp)->next;
        }
    }
}

static void s_headers(void *user, qk_h3 *h, uint64_t sid, const qk_h3_header *hd, size_t n,
                      bool fin)
{
    (void)fin;
    server *s = user;
    sreq *r = req_find(s, h, sid, false);
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return; /* answered 500 at the end of the request */
        r->h3 = h;
        r->sid = sid;
        r->next = s->reqs;
        s->reqs = r;
    }
    bool have_path = false;
    for (size_t i = 0; i < n; i++) {
        if (hd[i].name_len == 7 && !memcmp(hd[i].name, ":method", 7)) {
            size_t l =
                hd[i].value_len < sizeof r->method - 1 ? hd[i].value_len : sizeof r->method - 1;
            memcpy(r->method, hd[i].value, l);
            r->method[l] = 0;
        } else if (hd[i].name_len == 5 && !memcmp(hd[i].name, ":path", 5)) {
            if (hd[i].value_len >= sizeof r->path) {
                r->bad = true;
                continue;
            }
            memcpy(r->path, hd[i].value, hd[i].value_len);
            r->path[hd[i].value_len] = 0;
            have_path = true;
        }
    }
    if (!have_path) r->bad = true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decode the path (query dropped). Returns false for a NUL byte, a
 * bad escape, a path not starting with '/', or a ".." segment. */
static bool decode_path(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    if (in[0] != '/') return false;
    for (size_t i = 0; in[i] && in[i] != '?' && in[i] != '#'; i++) {
        char c = in[i];
        if (c == '%') {
            int hi = hexval(in[i + 1]), lo = hi < 0 ? -1 : hexval(in[i + 2]);
            if (lo < 0) return false;
            c = (char)(hi * 16 + lo);
            i += 2;
            if (c == 0) return false;
        }
        if (o + 1 >= cap) return false;
        out[o++] = c;
    }
    out[o] = 0;
    /* Refuse any ".." segment outright (realpath below also confines symlinks). */
    for (const char *p = out; (p = strstr(p, "..")); p += 2)
        if ((p == out || p[-1] == '/') && (p[2] == 0 || p[2] == '/')) return false;
    return true;
}

/* Content-Type by file extension (RFC 9110 §8.3). Browsers sniff images, but
 * refuse a script or stylesheet of another type under "nosniff" (Fetch
 * §3.5), and a module script of any non-JavaScript type. */
static const struct {
    const char *ext, *type;
} mime_tab[] = {
    {".html", "text/html; charset=utf-8"},
    {".htm", "text/html; charset=utf-8"},
    {".txt", "text/plain; charset=utf-8"},
    {".css", "text/css"},
    {".js", "text/javascript"},
    {".mjs", "text/javascript"},
    {".json", "application/json"},
    {".xml", "application/xml"},
    {".wasm", "application/wasm"},
    {".png", "image/png"},
    {".gif", "image/gif"},
    {".jpg", "image/jpeg"},
    {".jpeg", "image/jpeg"},
    {".webp", "image/webp"},
    {".avif", "image/avif"},
    {".svg", "image/svg+xml"},
    {".ico", "image/x-icon"},
    {".woff", "font/woff"},
    {".woff2", "font/woff2"},
    {".mp4", "video/mp4"},
    {".webm", "video/webm"},
    {".mp3", "audio/mpeg"},
    {".pdf", "application/pdf"},
};

static const char *mime_type(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot && !strchr(dot, '/'))
        for (size_t i = 0; i < sizeof mime_tab / sizeof mime_tab[0]; i++)
            if (!strcasecmp(dot, mime_tab[i].ext)) return mime_tab[i].type;
    return "application/octet-stream";
}

static void respond_error(server *s, qk_h3 *h, uint64_t sid, unsigned status, const char *body)
{
    qk_h3_header ct = qk_h3_hdr("content-type", "text/plain");
    char len[24];
    snprintf(len, sizeof len, "%zu", strlen(body));
    qk_h3_header hd[3] = {ct, qk_h3_hdr("content-length", len), qk_h3_hdr("server", "quack")};
    qk_h3_respond(h, sid, status, hd, 3, (const uint8_t *)body, strlen(body), NULL, NULL);
    s->errors++;
}

/* Resolve the request to a regular file under the root and open it.
 * Returns the fd, or -status (403, 404) when refused. */
static int open_under_root(server *s, const char *decoded, char *full, size_t cap)
{
    char want[PATH_MAX + SERVE_MAX_PATH_BYTES];
    snprintf(want, sizeof want, "%s%s", s->root, decoded);
    char real[PATH_MAX];
    if (!realpath(want, real)) return errno == EACCES ? -403 : -404;
    /* The resolved path must be the root or below it (symlinks included). */
    if (strncmp(real, s->root, s->root_len) || (real[s->root_len] != '/' && real[s->root_len] != 0))
        return -403;
    struct stat st;
    if (stat(real, &st)) return -404;
    if (S_ISDIR(st.st_mode)) {
        strncat(real, "/index.html", sizeof real - strlen(real) - 1);
        if (stat(real, &st) || !S_ISREG(st.st_mode)) return -404;
    }
    if (!S_ISREG(st.st_mode)) return -404;
    snprintf(full, cap, "%s", real);
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    return fd >= 0 ? fd : (errno == EACCES ? -403 : -404);
}

/* Returns true when a file response was submitted (r then waits in
 * s->sending until on_response_done says how it ended). */
static bool serve_file(server *s, qk_h3 *h, sreq *r)
{
    bool head = !strcmp(r->method, "HEAD");
    if (strcmp(r->method, "GET") && !head) {
        respond_error(s, h, r->sid, 405, "405 Method Not Allowed\n");
        return false;
    }
    char decoded[SERVE_MAX_PATH_BYTES], full[PATH_MAX];
    if (r->bad || !decode_path(r->path, decoded, sizeof decoded)) {
        respond_error(s, h, r->sid, 403, "403 Forbidden\n");
        return false;
    }
    int fd = open_under_root(s, decoded, full, sizeof full);
    if (fd < 0) {
        respond_error(s, h, r->sid, (unsigned)-fd,
                      fd == -403 ? "403 Forbidden\n" : "404 Not Found\n");
        return false;
    }
    struct stat st;
    body_file *f = calloc(1, sizeof *f);
    if (!f || fstat(fd, &st)) {
        close(fd);
        free(f);
        respond_error(s, h, r->sid, 500, "500 Internal Server Error\n");
        return false;
    }
    f->fd = fd;
    char len[24];
    snprintf(len, sizeof len, "%llu", (unsigned long long)st.st_size);
    qk_h3_header hd[3] = {qk_h3_hdr("content-type", mime_type(full)),
                          qk_h3_hdr("content-length", len), qk_h3_hdr("server", "quack")};
    int rc = head ? qk_h3_respond(h, r->sid, 200, hd, 3, NULL, 0, NULL, NULL)
                  : qk_h3_respond_pull(h, r->sid, 200, hd, 3, (uint64_t)st.st_size, file_read,
                                       file_close, f);
    if (rc || head) file_close(f);
    return rc == 0;
}

/* One line per request, with the priority the response is sent at (the
 * HTTP/3 layer sets the stream's urgency from the request's `priority`
 * header and PRIORITY_UPDATE frames, RFC 9218). */
static void serve_log(qk_h3 *h, const sreq *r)
{
    qk_h3_priority p = {QK_H3_DEFAULT_URGENCY, false};
    qk_h3_stream_priority(h, r->sid, &p);
    fprintf(stderr, "%s %s stream %llu u=%u%s\n", r->method, r->path, (unsigned long long)r->sid,
            p.urgency, p.incremental ? ",i" : "");
}

static void s_end(void *user, qk_h3 *h, uint64_t sid)
{
    server *s = user;
    sreq *r = req_find(s, h, sid, true);
    if (!r) {
        respond_error(s, h, sid, 500, "500 Internal Server Error\n");
        return;
    }
    bool sending = serve_file(s, h, r);
    if (!s->quiet) serve_log(h, r);
    if (!sending) {
        free(r);
        return;
    }
    r->next = s->sending;
    s->sending = r;
}

/* A file response ended: served only when all of it reached QUIC. */
static void s_done(void *user, qk_h3 *h, uint64_t sid, bool complete)
{
    server *s = user;
    for (sreq **pp = &s->sending; *pp; pp = &(*pp)->next) {
        sreq *r = *pp;
        if (r->h3 != h || r->sid != sid) continue;
        *pp = r->next;
        if (complete) {
            s->served++;
        } else {
            s->unfinished++;
            fprintf(stderr,
                    "quack serve: %s %s stream %llu: response not finished (stream reset or "
                    "connection closed first)\n",
                    r->method, r->path, (unsigned long long)sid);
        }
        free(r);
        return;
    }
}

static void s_reset(void *user, qk_h3 *h, uint64_t sid, uint64_t code)
{
    (void)code;
    server *s = user;
    free(req_find(s, h, sid, true));
}

static const qk_h3_callbacks serve_cb = {s_headers, NULL, s_end, s_reset, NULL, s_done};

static int h3_track(server *s, qk_h3 *h)
{
    if (s->nh3 == s->cap_h3) {
        size_t cap = s->cap_h3 ? s->cap_h3 * 2 : 16;
        qk_h3 **n = realloc(s->h3s, cap * sizeof *n);
        if (!n) return QK_ERR_NOMEM;
        s->h3s = n;
        s->cap_h3 = cap;
    }
    s->h3s[s->nh3++] = h;
    return 0;
}

static void h3_untrack(server *s, qk_h3 *h)
{
    for (size_t i = 0; i < s->nh3; i++)
        if (s->h3s[i] == h) {
            s->h3s[i] = s->h3s[--s->nh3];
            return;
        }
}

static void on_event(server *s, const qk_event *ev)
{
    qk_h3 *h = ev->conn ? qk_conn_user(ev->conn) : NULL;
    if (ev->type == QK_EV_CLOSED) {
        if (h) {
            req_drop_conn(s, h);
            h3_untrack(s, h);
            qk_h3_del(h);
        }
        /* A failed handshake is logged even with --quiet: peer and reason. */
        if (cli_log_failed_handshake(stderr, "quack serve", ev)) return;
        if (!s->quiet && !(ev->app_error && ev->error_code == QK_H3_NO_ERROR) && ev->reason_err)
            fprintf(stderr, "connection closed: %s (code 0x%llx, error %d)\n", ev->reason,
                    (unsigned long long)ev->error_code, ev->reason_err);
        return;
    }
    if (!h && ev->conn) {
        int err = 0;
        h = qk_h3_new(ev->conn, true, &serve_cb, s, &err);
        if (h && h3_track(s, h)) {
            qk_h3_del(h);
            h = NULL;
            err = QK_ERR_NOMEM;
        }
        if (!h) {
            fprintf(stderr, "quack serve: cannot start HTTP/3 on a connection (error %d)\n", err);
            qk_conn_close(ev->conn, QK_H3_INTERNAL_ERROR, "no HTTP/3");
            return;
        }
        qk_conn_set_user(ev->conn, h);
    }
    if (h) qk_h3_on_event(h, ev);
}

/* Called by the driver after input, timers, and before each send batch:
 * drain events, then move every connection's HTTP/3 output into its streams
 * (streams left full are retried on the next call). */
static bool serve_app(void *app, qk_endpoint *ep, qk_time now)
{
    server *s = app;
    (void)now;
    qk_event ev;
    while (qk_endpoint_poll_event(ep, &ev)) on_event(s, &ev);
    bool wrote = false;
    for (size_t i = 0; i < s->nh3; i++)
        if (qk_h3_flush(s->h3s[i]) > 0) wrote = true;
    return wrote;
}

static void serve_usage(FILE *f)
{
    fprintf(
        f,
        "usage: quack serve --root DIR --listen ADDR:PORT [--cert FILE --key FILE]\n"
        "                   [--qlog DIR] [--keylog FILE] [--cc ALG] [--quiet]\n"
        "\n"
        "Serves the files under DIR over HTTP/3 (ALPN h3) until SIGINT/SIGTERM.\n"
        "GET and HEAD; a directory serves its index.html; missing files give 404;\n"
        "paths that leave DIR (\"..\", symlinks pointing outside) give 403.\n"
        "Responses are sent in the order of the requests' priority (RFC 9218:\n"
        "the priority header and PRIORITY_UPDATE frames; urgency 0 first).\n"
        "\n"
        "  --root DIR             document root (required)\n"
        "  --listen ADDR:PORT     e.g. 127.0.0.1:4433 or [::1]:4433 (port 0: any free\n"
        "                         port, printed as 'listening on')\n"
        "  --cert FILE --key FILE certificate and key (PEM); without them a\n"
        "                         self-signed P-256 certificate for 'localhost' is\n"
        "                         generated in memory. Either way the server prints\n"
        "                         'pin: HEX' for quack get --pin.\n"
        "  --qlog DIR             one qlog per connection into DIR\n"
        "  --keylog FILE          append TLS secrets (NSS key log format)\n"
        "  --cc ALG               congestion controller: reno, cubic (default), dctcp, bbr,\n"
        "                         prague\n"
        "  --quiet                no line per request\n"
        "  --no-gso               one datagram per send (packet captures show each packet)\n"
        "  --ecn                  mark ECT(0), validate ECN (RFC 9000 §13.4)\n" CLI_ADMISSION_HELP
        "  --stats                print the endpoint's admission counters at exit\n"
        "  --threads N            worker threads, each with its own endpoint and\n"
        "                         SO_REUSEPORT socket (default 1); datagrams reach the\n"
        "                         worker named in their connection ID (migration)\n"
        "  --send-budget SIZE     stream data held for all clients at most (default\n"
        "                         128M; per connection 16M and the client's credit)\n"
        "  --key-update[=N]       initiate a 1-RTT key update every N packets sent\n"
        "                         (default 100; RFC 9001 §6)\n"
        "  --ciphers LIST         TLS 1.3 cipher suites to accept, colon-separated IANA\n"
        "                         names (default: AES-GCM, ChaCha20-Poly1305, AES-128-CCM)\n"
        "  --quic-version V       accept only QUIC version V (v1, v2 or a number);\n"
        "                         default v1 and v2. Others get Version Negotiation.\n"
        "  --no-early-data        resume sessions but refuse 0-RTT (RFC 9001 §4.6.2)\n"
        "  --no-tickets           issue no session tickets (every handshake is full)\n"
        "  --disable-active-migration  tell clients not to move the connection to a\n"
        "                         new address (the disable_active_migration transport\n"
        "                         parameter, RFC 9000 §18.2); a NAT rebinding, or a\n"
        "                         client that moves anyway, is still followed, with\n"
        "                         path validation (§9.3)\n"
        "  --ticket-lifetime SECS session ticket lifetime and ticket-key rotation\n"
        "                         period (default 21600; at most 604800)\n" CLI_PREFERRED_HELP
            SERVE_FLEET_HELP);
}

#define serve_bad(...) cli_usage_error("serve", __VA_ARGS__)

typedef struct serve_opts {
    const char *root, *listen, *cert, *key, *ticket_life, *send_budget, *threads;
    const char *preferred[2]; /* --preferred-addr, once per family */
    size_t n_preferred;
    cli_h3_opts h3; /* --qlog --keylog --cc --quic-version */
    bool quiet, stats, no_tickets;
    bool no_migration;          /* --disable-active-migration */
    uint64_t send_budget_bytes; /* 0: 128 MB */
    unsigned threads_n;         /* --threads N, 0: 1 */
    cli_admission admission;
    serve_fleet fleet; /* --lb-config --fleet-keys --fleet-early-data */
} serve_opts;

static int serve_parse(serve_opts *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        int flag;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            serve_usage(stdout);
            return -1;
        }
        const cli_str_opt tab[] = {{"--root", &o->root},
                                   {"--listen", &o->listen},
                                   {"--cert", &o->cert},
                                   {"--key", &o->key},
                                   {"--ticket-lifetime", &o->ticket_life},
                                   {"--send-budget", &o->send_budget},
                                   {"--threads", &o->threads},
                                   {NULL, NULL}};
        dst = cli_str_opt_find(tab, a);
        if (!dst) dst = cli_h3_opt(&o->h3, a);
        int adm = cli_parse_admission(&o->admission, argc, argv, &i, "quack serve");
        if (adm < 0) return 2;
        if (adm) continue;
        int fl = serve_fleet_opt(&o->fleet, argc, argv, &i);
        if (fl == 2) return 2;
        if (fl) continue;
        if (dst) {
            if (i + 1 >= argc) return serve_bad("%s needs a value", a);
            *dst = argv[++i];
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = true;
        } else if (!strcmp(a, "--stats")) {
            o->stats = true;
        } else if (!strcmp(a, "--no-tickets")) {
            o->no_tickets = true;
        } else if (!strcmp(a, "--disable-active-migration")) {
            o->no_migration = true;
        } else if (!strcmp(a, "--preferred-addr")) {
            if (i + 1 >= argc) return serve_bad("%s needs a value", a);
            if (o->n_preferred == 2)
                return serve_bad("%s", "--preferred-addr: at most one IPv4 and one IPv6 address");
            o->preferred[o->n_preferred++] = argv[++i];
        } else if ((flag = cli_h3_flag("serve", &o->h3, a))) {
            if (flag == 2) return 2;
        } else {
            return serve_bad("unknown argument %s", a);
        }
    }
    if (!o->root) return serve_bad("%s", "--root DIR is required");
    if (!o->listen) return serve_bad("%s", "--listen ADDR:PORT is required");
    if (!o->cert != !o->key) return serve_bad("%s", "--cert and --key go together");
    if (o->send_budget && (cli_parse_size(o->send_budget, &o->send_budget_bytes) ||
                           o->send_budget_bytes < (1u << 20)))
        return serve_bad("--send-budget %s: want a size of at least 1M", o->send_budget);
    if (o->threads) {
        char *end;
        unsigned long t = strtoul(o->threads, &end, 10);
        if (*end || t < 1 || t > QK_WORKERS_MAX || o->threads[0] == '-')
            return serve_bad("--threads %s: want 1..%d", o->threads, QK_WORKERS_MAX);
        o->threads = NULL;
        o->threads_n = (unsigned)t;
    }
    return 0;
}

/* Certificate: the given files, or a fresh self-signed one; prints the pin. */
static int serve_config(serve_opts *o, server *s, qk_config *cfg, qk_addr *addr)
{
    if (!realpath(o->root, s->root)) {
        fprintf(stderr, "quack serve: --root %s: %s\n", o->root, strerror(errno));
        return 2; /* a usage error, like every bad path given to an option */
    }
    if (cli_check_file("quack serve", "--cert", o->cert) ||
        cli_check_file("quack serve", "--key", o->key))
        return 2;
    struct stat st;
    if (stat(s->root, &st) || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "quack serve: --root %s is not a directory\n", o->root);
        return 2;
    }
    s->root_len = strlen(s->root);
    if (s->root_len == 1) s->root_len = 0; /* "/": every path is below it */
    s->quiet = o->quiet;
    s->stats = o->stats;
    int arc = cli_parse_addr("serve", "--listen", o->listen, addr);
    if (arc) return arc;
    qk_config_default(cfg);
    cfg->server = true;
    cfg->alpn[0] = QK_H3_ALPN;
    cfg->alpn_count = 1;
    cfg->rng = cli_rng;
    cfg->max_udp_payload_bytes = QK_CLI_DATAGRAM_BYTES;
    cfg->initial_max_data_bytes = 16u << 20;
    cfg->initial_max_stream_data_bytes = 1u << 20;
    cfg->max_stream_send_buffer_bytes = 4u << 20;
    /* Buffer what the peer's credit allows (plus 64 KiB), at most
     * 16 MB per connection and the --send-budget over all of them. */
    cfg->send_credit_lookahead_bytes = 64u << 10;
    cfg->max_conn_send_buffer_bytes = 16u << 20;
    cfg->send_budget_bytes = o->send_budget_bytes ? o->send_budget_bytes : 128u << 20;
    cfg->max_streams_bidi = 256;
    cfg->idle_timeout_ns = 30 * QK_NS_PER_S;
    cli_admission_apply(&o->admission, cfg); /* RFC 9000 §8.1.2 */
    cfg->session_tickets = !o->no_tickets;
    cfg->disable_active_migration = o->no_migration; /* RFC 9000 §18.2 */
    if (o->ticket_life) {
        char *end;
        unsigned long long secs = strtoull(o->ticket_life, &end, 10);
        /* RFC 8446 §4.6.1: at most seven days. */
        if (*end || !secs || secs > 604800 || o->ticket_life[0] == '-')
            return serve_bad("--ticket-lifetime %s: want 1..604800 seconds", o->ticket_life);
        cfg->ticket_lifetime_ns = (qk_time)secs * QK_NS_PER_S;
    }
    if (cli_h3_apply("quack serve", &o->h3, cfg)) return 2;
    int frc = serve_fleet_apply(&o->fleet, cfg);
    if (frc) return frc;
    for (size_t i = 0; i < o->n_preferred; i++) /* RFC 9000 §9.6 */
        if (cli_parse_preferred(o->preferred[i], &cfg->preferred_addr_v4, &cfg->preferred_addr_v6))
            return serve_bad("--preferred-addr %s: want ADDR:PORT, at most one per address family",
                             o->preferred[i]);
    return 0;
}

/* Free the HTTP/3 sessions (s_done counts the responses they cut short) and
 * the requests left. */
static void serve_release(server *s)
{
    for (size_t i = 0; i < s->nh3; i++) qk_h3_del(s->h3s[i]);
    s->nh3 = 0;
    for (sreq **l = &s->reqs; l; l = l == &s->reqs ? &s->sending : NULL)
        while (*l) {
            sreq *r = *l;
            *l = r->next;
            free(r);
        }
}

static void serve_stopped_line(const server *s)
{
    fprintf(stderr,
            "quack serve: stopped; %llu files served, %llu error responses, %llu responses not "
            "finished\n",
            (unsigned long long)s->served, (unsigned long long)s->errors,
            (unsigned long long)s->unfinished);
}

/* One open file per response in progress: allow as many as we may. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Worker hooks (quack/workers.h): one server state per worker thread. */
static void *serve_worker_start(void *user, unsigned index, qk_endpoint *ep)
{
    server *ss = user;
    ss[index].ep = ep;
    return &ss[index];
}

static void serve_worker_stop(void *user, unsigned index, void *app)
{
    (void)user;
    (void)index;
    serve_release((server *)app);
}

static void serve_report(server *ss, qk_workers *w)
{
    unsigned n = qk_workers_count(w);
    server sum = {0};
    for (unsigned i = 0; i < n; i++) {
        sum.served += ss[i].served;
        sum.errors += ss[i].errors;
        sum.unfinished += ss[i].unfinished;
    }
    serve_stopped_line(&sum);
    if (ss[0].stats) cli_print_workers_stats(stderr, w);
}

/* The one run path: threads workers (quack/workers.h; one is the plain
 * server), each with the listen socket and the preferred-address sockets
 * (RFC 9000 §9.6). */
static int serve_run(server *ss, unsigned threads, const qk_config *cfg, const qk_addr *addr,
                     const char *addr_str, unsigned flags)
{
    for (unsigned i = 1; i < threads; i++) ss[i] = ss[0]; /* root, options; no state yet */
    qk_workers_app app = {serve_worker_start, serve_app, serve_worker_stop, ss};
    qk_workers *w = NULL;
    flags |= addr->ss.ss_family == AF_INET6 ? QK_UDP_DUALSTACK : 0;
    unsigned which = QK_WORKERS_SOCKET_NONE;
    int rc = qk_workers_new_ex(cfg, addr, flags, threads, &app, &which, &w);
    if (rc) {
        cli_listen_error("quack serve", cfg, addr_str, rc, which);
        return 1;
    }
    char lbuf[QK_ADDR_STRLEN];
    cli_workers_addrs(w, lbuf, sizeof lbuf);
    printf("listening on %s (ALPN h3), root %s", lbuf, ss[0].root_len ? ss[0].root : "/");
    if (threads > 1) printf(", %u threads", threads);
    printf("\n");
    const char *why = NULL;
    int steer = qk_workers_steering(w, &why);
    if (steer != QK_WORKERS_STEER_NONE)
        printf("steering: %s (%s)\n", steer == QK_WORKERS_STEER_KERNEL ? "kernel" : "user space",
               why);
    fflush(stdout);
    rc = qk_workers_run(w);
    serve_report(ss, w);
    qk_workers_del(w);
    return rc ? 1 : 0;
}

int qk_cmd_serve(int argc, char **argv)
{
    serve_opts o = {0};
    int rc = serve_parse(&o, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    unsigned threads = o.threads_n ? o.threads_n : 1;
    server *ss = calloc(threads, sizeof *ss);
    if (!ss) return 1;
    qk_config cfg;
    qk_addr addr;
    char *cert_pem = NULL, *key_pem = NULL;
    rc = serve_config(&o, &ss[0], &cfg, &addr);
    if (!rc) rc = cli_load_cert("quack serve", o.cert, o.key, &cfg, &cert_pem, &key_pem) ? 1 : 0;
    unsigned flags = (o.h3.no_gso ? QK_UDP_NO_GSO : 0) | (o.fleet.no_bpf ? QK_WORKERS_NO_BPF : 0);
    raise_nofile();
    if (!rc && o.fleet.summary[0]) printf("fleet: %s\n", o.fleet.summary);
    if (!rc) rc = serve_run(ss, threads, &cfg, &addr, o.listen, flags);
    serve_fleet_free(&o.fleet);
    for (unsigned i = 0; i < threads; i++) free(ss[i].h3s);
    free(ss);
    free(cert_pem);
    free(key_pem);
    return rc;
}
