/* SPDX-License-Identifier: MIT */
/* `quack get --proxy` (get_proxy.h): one outer HTTP/3 connection to the
 * tunnel server, one CONNECT-UDP session on it, one inner endpoint whose
 * datagrams are that session's HTTP Datagrams. */
#include "get_proxy.h"

#include "cli_errors.h"
#include "cli_options.h"
#include "tunnel_h3.h"

#include <quack/cert.h>
#include <quack/h3.h>

#include <errno.h>
#include <ev.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define PROXY_SECRET_MAX_BYTES 1024u
#define PROXY_SESSION_ID       1u /* the one UDP session (tun_h3_udp_send's 4-byte id) */
/* An HTTP Datagram's prefix at most: Quarter Stream ID (a varint, up to 8
 * bytes) and Context ID 0 (RFC 9297 §2.1, RFC 9298 §5). */
#define PROXY_DG_PREFIX_BYTES 9u
#define PROXY_URGENCY         3u /* RFC 9218 §4.1 default */
#define PROXY_SEND_BATCH      16u
#define PROXY_INNER_BYTES     1200u /* the inner datagrams (RFC 9000 §14's minimum) */
#define PROXY_PMTU_WAIT_NS    (3 * QK_NS_PER_S)

typedef struct proxy {
    const get_proxy_opts *o;
    get_proxy_inner *in;
    char authority[300], host[256];
    uint8_t secret[PROXY_SECRET_MAX_BYTES];
    size_t secret_len;
    qk_endpoint *outer_ep, *inner_ep;
    qk_conn *outer;
    tun_h3 *w;
    qk_io_loop *loop;
    ev_timer timer; /* the inner endpoint's next timeout */
    bool failed;
    qk_time connected_ns; /* the outer handshake completed */
    uint8_t *buf;         /* inner datagrams, in and out */
} proxy;

#define proxy_bad(...) cli_usage_error("get", __VA_ARGS__)

int get_proxy_opt(get_proxy_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char **dst = !strcmp(a, "--proxy")               ? &o->url
                       : !strcmp(a, "--proxy-secret-file") ? &o->secret_file
                       : !strcmp(a, "--proxy-pin")         ? &o->pin
                                                           : NULL;
    if (!strcmp(a, "--proxy-insecure")) {
        o->insecure = true;
        return 0;
    }
    if (!dst) return -1;
    if (*i + 1 >= argc) return proxy_bad("%s needs a value", a);
    *dst = argv[++*i];
    return 0;
}

void get_proxy_usage(FILE *f)
{
    fprintf(f, "  --proxy https://HOST:PORT  fetch through a quack tunnel server: the\n"
               "                 QUIC connection to the URL's server runs inside a\n"
               "                 CONNECT-UDP session (RFC 9298) of an HTTP/3 connection to\n"
               "                 the tunnel server, which sends it to its --udp-to (that\n"
               "                 must be the URL's server)\n"
               "  --proxy-secret-file FILE  the tunnel server's --secret-file (proved in\n"
               "                 proxy-authorization; without it the server refuses)\n"
               "  --proxy-pin HEX     accept only the tunnel server's key with this pin\n"
               "  --proxy-insecure    do not verify the tunnel server's certificate\n");
}

/* The secret as `quack tunnel --secret-file` reads it (cli_read_secret). */
static int read_secret(proxy *p, const char *path)
{
    int r = cli_read_secret(path, p->secret, sizeof p->secret, &p->secret_len);
    if (r == QK_ERR_IO)
        return proxy_bad("cannot read --proxy-secret-file %s: %s", path, strerror(errno));
    if (r)
        return proxy_bad("--proxy-secret-file %s: want 16 to 1024 bytes (the tunnel server's "
                         "--secret-file)",
                         path);
    return 0;
}

/* --proxy https://HOST:PORT: authority, SNI host and address. */
static int proxy_addr(proxy *p, qk_addr *addr)
{
    const char *u = p->o->url;
    if (strncmp(u, "https://", 8) || strlen(u + 8) >= sizeof p->authority)
        return proxy_bad("--proxy %s: want https://HOST:PORT (a quack tunnel server)", u);
    snprintf(p->authority, sizeof p->authority, "%s", u + 8);
    size_t al = strlen(p->authority);
    if (al && p->authority[al - 1] == '/') p->authority[--al] = 0;
    const char *colon = strrchr(p->authority, ':');
    if (!colon || strchr(p->authority, '/') || colon == p->authority)
        return proxy_bad("--proxy %s: want https://HOST:PORT (a quack tunnel server)", u);
    const char *h = p->authority[0] == '[' ? p->authority + 1 : p->authority;
    size_t hl = (size_t)(colon - h) - (p->authority[0] == '[' ? 1 : 0);
    snprintf(p->host, sizeof p->host, "%.*s", (int)hl, h);
    return cli_parse_addr("get", "--proxy", p->authority, addr);
}

static int outer_config(proxy *p, qk_config *cfg)
{
    qk_config_default(cfg);
    cfg->alpn[0] = QK_H3_ALPN;
    cfg->alpn_count = 1;
    cfg->rng = cli_rng;
    cfg->insecure = p->o->insecure;
    cfg->max_udp_payload_bytes = QK_CLI_DATAGRAM_BYTES;
    cfg->idle_timeout_ns = 30 * QK_NS_PER_S;
    cfg->max_datagram_frame_bytes = 1500; /* RFC 9221 §3: the session's datagrams come back */
    cfg->max_pending_datagrams = 4096;
    if (p->o->pin && p->o->insecure)
        return proxy_bad("%s", "--proxy-pin and --proxy-insecure exclude each other");
    if (p->o->pin) {
        if (qk_pin_parse(p->o->pin, cfg->pin_sha256))
            return proxy_bad("--proxy-pin %s: want 64 hex digits (SHA-256 of the SPKI)", p->o->pin);
        cfg->has_pin = true;
    }
    if (p->o->insecure) cli_warn_insecure("quack get --proxy");
    return 0;
}

static void arm_timer(proxy *p, qk_time now)
{
    struct ev_loop *evl = qk_io_loop_ev(p->loop);
    ev_timer_stop(evl, &p->timer);
    qk_time t = qk_endpoint_next_timeout(p->inner_ep);
    if (t == QK_TIME_INFINITE) return;
    ev_timer_set(&p->timer, t > now ? (double)(t - now) / 1e9 : 0.0, 0.0);
    ev_timer_start(evl, &p->timer);
}

/* The inner endpoint's events, then its datagrams out as HTTP Datagrams.
 * Returns true when something was queued on the outer connection. */
static bool inner_pump(proxy *p, qk_time now)
{
    if (!p->inner_ep) return false;
    p->in->app(p->in->ctx, p->inner_ep, now);
    size_t cap = p->in->cfg.max_udp_payload_bytes;
    qk_datagram d[PROXY_SEND_BATCH];
    bool sent = false;
    size_t n;
    do {
        for (size_t i = 0; i < PROXY_SEND_BATCH; i++)
            d[i] = (qk_datagram){.data = p->buf + 4 + i * (cap + 4), .len = cap};
        n = qk_endpoint_send(p->inner_ep, d, PROXY_SEND_BATCH, now);
        for (size_t i = 0; i < n && p->w; i++) {
            uint8_t *f = d[i].data - 4; /* the session id before the payload */
            f[0] = f[1] = f[2] = 0;
            f[3] = PROXY_SESSION_ID;
            int rc = tun_h3_udp_send(p->w, f, d[i].len + 4, PROXY_URGENCY);
            sent |= rc == 0; /* QK_ERR_LIMIT: lost, the inner QUIC recovers */
        }
    } while (n == PROXY_SEND_BATCH);
    arm_timer(p, now);
    return sent;
}

static void on_inner_timer(struct ev_loop *evl, ev_timer *t, int revents)
{
    (void)evl;
    (void)revents;
    proxy *p = t->data;
    qk_time now = qk_io_now();
    qk_endpoint_on_timeout(p->inner_ep, now);
    if (inner_pump(p, now)) qk_io_loop_kick(p->loop);
}

/* An HTTP Datagram of the session (RFC 9297 §2.1: Quarter Stream ID, then
 * RFC 9298 §5: Context ID 0 and the UDP payload) to the inner endpoint as
 * a datagram from the target. */
static void inner_recv(proxy *p, const qk_event *ev, qk_time now)
{
    const uint8_t *b = ev->data;
    if (!p->inner_ep || !ev->len) return;
    size_t ql = (size_t)1 << (b[0] >> 6);
    if (ev->len <= ql || b[ql] != 0) return; /* RFC 9298 §5: unknown contexts dropped */
    size_t len = ev->len - ql - 1;
    if (len > PROXY_INNER_BYTES + 2048) return; /* larger than the buffer: not ours */
    memcpy(p->buf, b + ql + 1, len);
    qk_datagram d = {.data = p->buf, .len = len};
    d.peer = p->in->target; /* the inner connection's peer */
    qk_endpoint_recv(p->inner_ep, &d, now);
}

static void on_refused(void *ctx, tun_h3 *w, unsigned status)
{
    (void)w;
    proxy *p = ctx;
    fprintf(stderr,
            "quack get: --proxy %s: access denied: the tunnel server answered %u to CONNECT-UDP "
            "(%s; give --proxy-secret-file the server's --secret-file)\n",
            p->o->url, status, p->secret_len ? "wrong secret" : "no secret given");
    p->failed = true;
    qk_io_loop_break(p->loop);
}

/* Say why the proxy cannot be used and stop. */
static void proxy_fail(proxy *p, const char *why)
{
    fprintf(stderr, "quack get: --proxy %s: %s\n", p->o->url, why);
    p->failed = true;
    qk_io_loop_break(p->loop);
}

/* The outer connection is up: HTTP/3 on it (the inner endpoint follows
 * once its path carries 1200-byte HTTP Datagrams, inner_start). */
static void outer_connected(proxy *p, qk_conn *c, qk_time now)
{
    tun_h3_config hc = {.server = false,
                        .authority = p->authority,
                        .secret = p->secret_len ? p->secret : NULL,
                        .secret_len = p->secret_len,
                        .refused = on_refused,
                        .ctx = p};
    p->w = tun_h3_new(c, &hc);
    p->connected_ns = now;
    if (!p->w) proxy_fail(p, "cannot start HTTP/3 on it");
}

/* The inner endpoint, once an HTTP Datagram can hold a 1200-byte datagram:
 * RFC 9000 §14 (QUIC needs 1200 bytes) after the outer connection's DPLPMTUD
 * (RFC 8899) raised its packets above the 1200 it starts at. The inner
 * datagrams stay at 1200 bytes: the tunnel server's packets to us may still
 * be smaller than ours. */
static void inner_start(proxy *p, qk_time now)
{
    long room = qk_conn_datagram_max_payload(p->outer);
    if (room == QK_ERR_UNSUPPORTED) {
        proxy_fail(p, "it does not accept HTTP Datagrams (RFC 9221 DATAGRAM frames)");
        return;
    }
    if (room < (long)(PROXY_INNER_BYTES + PROXY_DG_PREFIX_BYTES)) {
        if (now - p->connected_ns > PROXY_PMTU_WAIT_NS)
            proxy_fail(p, "its path carries no 1200-byte HTTP Datagram (QUIC needs 1200 bytes "
                          "per datagram, RFC 9000 §14; check the path MTU to the tunnel server)");
        return;
    }
    p->in->cfg.max_udp_payload_bytes = PROXY_INNER_BYTES;
    p->in->cfg.pmtud = false;
    p->buf = malloc(PROXY_SEND_BATCH * (PROXY_INNER_BYTES + 4) + 4 + 2048);
    p->inner_ep = p->buf ? cli_endpoint_new(&p->in->cfg, "quack get") : NULL;
    if (!p->inner_ep)
        proxy_fail(p, "cannot make the inner endpoint");
    else if (p->in->start(p->in->ctx, p->inner_ep, now))
        proxy_fail(p, "cannot start the connection to the URL's server");
}

static void outer_closed(proxy *p, const qk_event *ev)
{
    char why[600];
    if (!p->w) {
        cli_verify v = p->o->pin        ? CLI_VERIFY_PIN
                       : p->o->insecure ? CLI_VERIFY_INSECURE
                                        : CLI_VERIFY_SYSTEM;
        cli_handshake_failed(ev, v, why, sizeof why);
    } else {
        snprintf(why, sizeof why, "connection closed: %s (code 0x%llx)",
                 ev->reason[0] ? ev->reason : "no reason", (unsigned long long)ev->error_code);
    }
    if (!p->failed) fprintf(stderr, "quack get: --proxy %s: %s\n", p->o->url, why);
    p->failed = true;
    p->outer = NULL;
    qk_io_loop_break(p->loop);
}

static bool outer_app(void *app, qk_endpoint *ep, qk_time now)
{
    proxy *p = app;
    bool wrote = false;
    qk_event ev;
    while (qk_endpoint_poll_event(ep, &ev)) {
        if (ev.type == QK_EV_CONNECTED)
            outer_connected(p, ev.conn, now);
        else if (ev.type == QK_EV_CLOSED)
            outer_closed(p, &ev);
        else if (ev.type == QK_EV_DATAGRAM)
            inner_recv(p, &ev, now);
        else if (p->w)
            wrote |= tun_h3_on_event(p->w, NULL, &ev);
    }
    if (p->w && !p->inner_ep && !p->failed) inner_start(p, now);
    if (p->outer && !p->failed) wrote |= inner_pump(p, now);
    return wrote;
}

static int proxy_loop(proxy *p, const qk_addr *addr, qk_io_loop **loop)
{
    qk_config cfg;
    if (outer_config(p, &cfg)) return 2;
    qk_addr bind = {0}, none = {0};
    bind.ss.ss_family = addr->ss.ss_family;
    bind.len = addr->len;
    qk_udp *udp = NULL;
    if (qk_udp_open(&bind, QK_UDP_RECVERR, &udp)) {
        fprintf(stderr, "quack get: cannot open a UDP socket: %s\n", strerror(errno));
        return 1;
    }
    qk_io_ep_driver *drv = NULL;
    p->outer_ep = cli_endpoint_new(&cfg, "quack get --proxy");
    int rc = p->outer_ep ? 0 : 1;
    if (!rc) rc = qk_connect(p->outer_ep, &none, addr, p->host, qk_io_now(), &p->outer);
    if (!rc) rc = qk_io_ep_driver_new(p->outer_ep, cfg.max_udp_payload_bytes, outer_app, p, &drv);
    if (!rc) rc = qk_io_ep_driver_loop_new(drv, udp, NULL, &p->loop);
    if (!rc) {
        *loop = p->loop;
        qk_io_loop_stop_on_signal(p->loop, SIGINT);
        qk_io_loop_stop_on_signal(p->loop, SIGTERM);
        ev_timer_init(&p->timer, on_inner_timer, 0.0, 0.0);
        p->timer.data = p;
        rc = qk_io_loop_run(p->loop);
        ev_timer_stop(qk_io_loop_ev(p->loop), &p->timer);
        if (qk_io_loop_stop_signal(p->loop)) p->failed = true;
        p->in->finish(p->in->ctx);
        qk_io_loop_del(p->loop);
        *loop = NULL;
    } else {
        fprintf(stderr, "quack get: --proxy %s: cannot start (error %d)\n", p->o->url, rc);
    }
    if (drv) qk_io_ep_driver_del(drv);
    tun_h3_del(p->w);
    qk_endpoint_del(p->inner_ep);
    qk_endpoint_del(p->outer_ep);
    qk_udp_close(udp);
    free(p->buf);
    return rc || p->failed ? 1 : 0;
}

int get_proxy_run(const get_proxy_opts *o, get_proxy_inner *in, qk_io_loop **loop)
{
    proxy *p = calloc(1, sizeof *p);
    if (!p) return 1;
    p->o = o;
    p->in = in;
    qk_addr addr;
    int rc = o->secret_file ? read_secret(p, o->secret_file) : 0;
    if (!rc) rc = proxy_addr(p, &addr);
    if (!rc) rc = proxy_loop(p, &addr, loop);
    free(p);
    return rc;
}
