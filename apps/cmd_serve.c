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
#include "h3_site.h"
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

typedef struct server {
    h3_site site; /* the files and the requests in progress */
    bool stats;
    qk_endpoint *ep;
    qk_h3 **h3s; /* live HTTP/3 layers, one per connection */
    size_t nh3, cap_h3;
} server;

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
            h3_site_drop_conn(&s->site, h);
            h3_untrack(s, h);
            qk_h3_del(h);
        }
        /* A failed handshake is logged even with --quiet: peer and reason. */
        if (cli_log_failed_handshake(stderr, "quack serve", ev)) return;
        if (!s->site.quiet && !(ev->app_error && ev->error_code == QK_H3_NO_ERROR) &&
            ev->reason_err)
            fprintf(stderr, "connection closed: %s (code 0x%llx, error %d)\n", ev->reason,
                    (unsigned long long)ev->error_code, ev->reason_err);
        return;
    }
    if (!h && ev->conn) {
        int err = 0;
        h = qk_h3_new(ev->conn, true, &h3_site_callbacks, &s->site, &err);
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
    if (h3_site_init(&s->site, "quack serve", o->root)) {
        if (errno == ENOTDIR)
            fprintf(stderr, "quack serve: --root %s is not a directory\n", o->root);
        else
            fprintf(stderr, "quack serve: --root %s: %s\n", o->root, strerror(errno));
        return 2; /* a usage error, like every bad path given to an option */
    }
    s->site.quiet = o->quiet;
    if (cli_check_file("quack serve", "--cert", o->cert) ||
        cli_check_file("quack serve", "--key", o->key))
        return 2;
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
    h3_site_release(&s->site);
}

static void serve_stopped_line(const server *s)
{
    fprintf(stderr,
            "quack serve: stopped; %llu files served, %llu error responses, %llu responses not "
            "finished\n",
            (unsigned long long)s->site.served, (unsigned long long)s->site.errors,
            (unsigned long long)s->site.unfinished);
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
        sum.site.served += ss[i].site.served;
        sum.site.errors += ss[i].site.errors;
        sum.site.unfinished += ss[i].site.unfinished;
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
    printf("listening on %s (ALPN h3), root %s", lbuf, ss[0].site.root_len ? ss[0].site.root : "/");
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
