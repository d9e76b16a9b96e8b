/* SPDX-License-Identifier: MIT */
/* `quack tunnel --carrier dns`: sockets, resolvers and timers around the
 * sans-I/O DNS carrier (see tunnel_dns.h, docs/dns.md).
 *
 * Client: each datagram the QUIC endpoint produces becomes one query, sent
 * from a socket picked at random from a pool (a fresh source port per query,
 * as resolvers expect of stub clients) to the next healthy resolver (round
 * robin; one that stops answering is skipped for a while); the poll policy
 * (qk_dns_poll, quack/dns.h) adds empty queries. Answers feed the endpoint.
 * Server: queries arrive on one socket; their datagrams go to the endpoint
 * under the client's synthetic address, and the endpoint's datagrams are
 * pulled only while some client has a query waiting for them, so QUIC is
 * clocked by the queries instead of filling a queue. */
#include "tunnel_dns.h"

#include <ev.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/random.h>

#include <quack/dns.h>
#include <quack/sim.h>

#define DOWN_AFTER_UNANSWERED 32
#define DOWN_AFTER_NS         (2 * QK_NS_PER_S)
#define DOWN_FOR_NS           (3 * QK_NS_PER_S)

typedef struct resolver {
    qk_addr addr;
    uint64_t sent, answered, unanswered; /* unanswered: sent since the last answer */
    qk_time last_answer, down_until;
    uint64_t downs;
} resolver;

typedef struct pool_sock {
    qk_udp *u;
    bool owned;
    ev_io w;
    struct tun_dns *d;
} pool_sock;

struct tun_dns {
    bool server;
    qk_endpoint *ep;
    qk_io_ep_app_fn app;
    void *app_ctx;
    qk_io_loop *loop;
    uint64_t rng;
    /* client */
    qk_dns_client *cli;
    size_t max_dgram;
    qk_dns_poll *poll;
    pool_sock pool[TUN_DNS_POOL_SOCKETS];
    size_t n_pool;
    resolver res[TUN_DNS_MAX_RESOLVERS];
    size_t n_res, rr;
    qk_addr server_addr;
    uint64_t queries_sent, data_queries, answers, answers_bad, send_errors;
    /* server */
    qk_dns_server *srv;
    uint64_t pulled;
};

void tun_dns_opts_init(tun_dns_opts *o)
{
    memset(o, 0, sizeof *o);
    o->polls = -1;
    o->ack_as_poll = -1;
}

void tun_dns_usage(FILE *f)
{
    fprintf(f, "DNS carrier (--carrier dns; docs/dns.md): the client's QUIC datagrams travel as\n"
               "DNS queries through recursive resolvers, the server's as TXT answers:\n"
               "  --domain NAME          the tunnel zone (both ends; the server is its\n"
               "                         authoritative name server on --listen)\n"
               "  --resolver ADDR:PORT   client: a resolver to send queries to (repeatable,\n"
               "                         round robin with failover)\n"
               "  --max-qname-len N      client: query names of at most N characters\n"
               "                         (60..253, default 253: 144-byte datagrams; 101: 50)\n"
               "  --polls 0|1|2          client: polls per answer that carried data (default 2)\n"
               "  --ack-as-poll on|off   client: a query carrying a datagram replaces an owed\n"
               "                         poll (default on)\n"
               "  --burst-cap N          client: polls owed at most (default 16)\n"
               "  --patience TIME        server: longest a query waits for data (default 30ms)\n");
}

static int dns_bad(const char *what, const char *v)
{
    fprintf(stderr, "quack tunnel: %s, not '%s'\nRun 'quack tunnel --help' for the options.\n",
            what, v);
    return 2;
}

int tun_dns_parse_opt(tun_dns_opts *o, const char *a, const char *v)
{
    char *end;
    if (!strcmp(a, "--domain")) {
        if (qk_dns_domain_check(v))
            return dns_bad("--domain wants a domain name such as t.example.com", v);
        o->domain = v;
    } else if (!strcmp(a, "--resolver")) {
        if (o->n_resolvers == TUN_DNS_MAX_RESOLVERS) return dns_bad("at most 8 --resolver", v);
        if (qk_addr_parse(v, &o->resolver[o->n_resolvers]))
            return dns_bad("--resolver wants HOST:PORT or [V6]:PORT", v);
        o->resolver_str[o->n_resolvers++] = v;
    } else if (!strcmp(a, "--max-qname-len")) {
        unsigned long n = strtoul(v, &end, 10);
        if (*end || n < QK_DNS_MIN_QNAME_TEXT || n > QK_DNS_MAX_QNAME_TEXT)
            return dns_bad("--max-qname-len wants 60..253", v);
        o->max_qname_len = n;
    } else if (!strcmp(a, "--polls")) {
        if (strcmp(v, "0") && strcmp(v, "1") && strcmp(v, "2"))
            return dns_bad("--polls wants 0, 1 or 2", v);
        o->polls = v[0] - '0';
    } else if (!strcmp(a, "--ack-as-poll")) {
        if (strcmp(v, "on") && strcmp(v, "off")) return dns_bad("--ack-as-poll wants on or off", v);
        o->ack_as_poll = !strcmp(v, "on");
    } else if (!strcmp(a, "--burst-cap")) {
        unsigned long n = strtoul(v, &end, 10);
        if (*end || !n || n > 1024) return dns_bad("--burst-cap wants 1..1024", v);
        o->burst_cap = (unsigned)n;
    } else if (!strcmp(a, "--patience")) {
        if (qk_sim_parse_time(v, &o->patience_ns) || !o->patience_ns ||
            o->patience_ns > 5 * QK_NS_PER_S)
            return dns_bad("--patience wants a time up to 5s such as 30ms", v);
    } else {
        return 1;
    }
    return 0;
}

static int dns_need(const char *what)
{
    fprintf(stderr, "quack tunnel: %s\nRun 'quack tunnel --help' for the options.\n", what);
    return 2;
}

int tun_dns_check(tun_dns_opts *o, bool server)
{
    if (!o->on) {
        if (o->domain || o->n_resolvers)
            return dns_need("--domain and --resolver go with --carrier dns");
        return 0;
    }
    if (!o->domain) return dns_need("--carrier dns needs --domain NAME (the tunnel zone)");
    if (!server && !o->n_resolvers)
        return dns_need("the DNS client needs --resolver ADDR:PORT (repeatable)");
    if (!server && qk_dns_datagram_bytes(o->domain, o->max_qname_len) < 0)
        return dns_bad("--max-qname-len leaves no room for a datagram under --domain", o->domain);
    return 0;
}

void tun_dns_config(const tun_dns_opts *o, bool server, qk_config *cfg)
{
    int dg;
    cfg->alpn[0] = "quack-tunnel"; /* the DNS carrier keeps its own wire (docs/tunnel.md) */
    cfg->alpn_count = 1;
    cfg->min_datagram_bytes = 40; /* docs/dns.md: the profile */
    cfg->cid_bytes = 4;           /* short headers: 4-byte CIDs leave more room per query */
    cfg->pmtud = false;
    if (server) {
        cfg->max_udp_payload_bytes = QK_DNS_SERVER_DGRAM_MAX;
    } else if ((dg = qk_dns_datagram_bytes(o->domain, o->max_qname_len)) > 0) {
        cfg->max_udp_payload_bytes = (size_t)dg;
    }
    /* The client's ACKs are polls: do not ask it to acknowledge less often
     * (ack-frequency), and acknowledge every second packet ourselves. */
    cfg->ack_frequency = 0;
    cfg->min_ack_delay_ns = 0;
    cfg->ack_eliciting_threshold = 1;
}

void tun_dns_server_addr(qk_addr *out)
{
    qk_dns_client_addr(0, out);
}

/* ---- helpers ---- */

static uint64_t rnd(tun_dns *d)
{
    d->rng ^= d->rng << 13; /* xorshift64: IDs, ports, nonces (not secrets) */
    d->rng ^= d->rng >> 7;
    d->rng ^= d->rng << 17;
    return d->rng;
}

static bool run_app(tun_dns *d, qk_time now)
{
    return d->app ? d->app(d->app_ctx, d->ep, now) : false;
}

/* ---- client ---- */

static resolver *pick_resolver(tun_dns *d, qk_time now)
{
    for (size_t k = 0; k < d->n_res; k++) {
        resolver *r = &d->res[d->rr++ % d->n_res];
        if (r->down_until <= now) return r;
    }
    return &d->res[d->rr++ % d->n_res]; /* all down: keep trying them all */
}

static void note_sent(resolver *r, qk_time now)
{
    r->sent++;
    if (!r->unanswered++) r->last_answer = r->last_answer ? r->last_answer : now;
    /* Failover: many queries and a long silence take a resolver out for a while. */
    if (r->unanswered >= DOWN_AFTER_UNANSWERED && now - r->last_answer > DOWN_AFTER_NS &&
        r->down_until <= now) {
        r->down_until = now + DOWN_FOR_NS;
        r->unanswered = 0;
        r->last_answer = now;
        r->downs++;
    }
}

/* Send one query (a datagram, or a poll when len is 0). */
static void send_query(tun_dns *d, const uint8_t *dg, size_t len, qk_time now)
{
    uint8_t q[QK_DNS_MAX_MSG_BYTES];
    uint64_t x = rnd(d);
    uint8_t nonce[4] = {(uint8_t)x, (uint8_t)(x >> 8), (uint8_t)(x >> 16), (uint8_t)(x >> 24)};
    int n = qk_dns_client_query(d->cli, (uint16_t)(x >> 32), dg, len, nonce, q, sizeof q);
    if (n < 0) return;
    resolver *r = pick_resolver(d, now);
    pool_sock *ps = &d->pool[(x >> 48) % d->n_pool];
    qk_datagram m;
    memset(&m, 0, sizeof m);
    m.data = q;
    m.len = (size_t)n;
    m.peer = r->addr;
    if (qk_udp_send(ps->u, &m, 1) != 1) d->send_errors++; /* lossy: QUIC repairs it */
    note_sent(r, now);
    d->queries_sent++;
}

static void client_send(tun_dns *d, qk_time now)
{
    uint8_t buf[QK_DNS_MAX_QNAME_TEXT]; /* a datagram is shorter than its name */
    for (int guard = 0; guard < 4096; guard++) {
        qk_datagram m;
        memset(&m, 0, sizeof m);
        m.data = buf;
        m.len = d->max_dgram;
        if (qk_endpoint_send(d->ep, &m, 1, now) != 1) {
            if (!run_app(d, now)) break;
            continue;
        }
        send_query(d, buf, m.len, now);
        d->data_queries++;
        qk_dns_poll_on_data_sent(d->poll, now);
    }
    while (qk_dns_poll_take(d->poll, now)) send_query(d, NULL, 0, now);
}

typedef struct feed_ctx {
    tun_dns *d;
    qk_time now;
} feed_ctx;

static void feed(void *ctx, const uint8_t *data, size_t len)
{
    feed_ctx *f = ctx;
    qk_datagram m;
    memset(&m, 0, sizeof m);
    m.data = (uint8_t *)data;
    m.len = len;
    m.peer = f->d->server_addr;
    qk_endpoint_recv(f->d->ep, &m, f->now);
}

static void client_answer(tun_dns *d, const qk_datagram *a, qk_time now)
{
    feed_ctx f = {d, now};
    int n = qk_dns_client_response(d->cli, a->data, a->len, feed, &f);
    if (n == QK_ERR_IGNORE) {
        d->answers_bad++;
        return;
    }
    for (size_t i = 0; i < d->n_res; i++)
        if (qk_addr_equal(&d->res[i].addr, &a->peer)) {
            d->res[i].answered++;
            d->res[i].unanswered = 0;
            d->res[i].last_answer = now;
            d->res[i].down_until = 0;
        }
    d->answers++;
    if (n < 0) d->answers_bad++;
    qk_dns_poll_on_response(d->poll, n > 0, now);
}

/* ---- server ---- */

static void server_query(tun_dns *d, const qk_datagram *q, qk_time now)
{
    qk_dns_upstream up;
    if (qk_dns_server_on_query(d->srv, q->data, q->len, &q->peer, now, &up) != 1) return;
    qk_datagram m;
    memset(&m, 0, sizeof m);
    m.data = (uint8_t *)up.data;
    m.len = up.len;
    m.peer = up.client;
    qk_endpoint_recv(d->ep, &m, now);
}

/* Pull the endpoint's datagrams while some client has a query waiting. */
static void server_pull(tun_dns *d, qk_time now)
{
    uint8_t buf[QK_DNS_SERVER_DGRAM_MAX];
    for (int guard = 0; guard < 1024 && qk_dns_server_wants_data(d->srv); guard++) {
        qk_datagram m;
        memset(&m, 0, sizeof m);
        m.data = buf;
        m.len = sizeof buf;
        if (qk_endpoint_send(d->ep, &m, 1, now) != 1) {
            if (!run_app(d, now)) break;
            continue;
        }
        d->pulled++;
        qk_dns_server_push(d->srv, &m.peer, buf, m.len);
    }
}

/* ---- driver ops ---- */

static void on_datagrams(void *ctx, qk_datagram *dg, size_t n, qk_time now)
{
    tun_dns *d = ctx;
    for (size_t i = 0; i < n; i++) {
        if (d->server)
            server_query(d, &dg[i], now);
        else
            client_answer(d, &dg[i], now);
    }
    run_app(d, now);
}

static size_t poll_send(void *ctx, qk_datagram *out, size_t max, qk_time now)
{
    tun_dns *d = ctx;
    run_app(d, now);
    if (!d->server) {
        client_send(d, now);
        return 0; /* sent from the pool sockets */
    }
    server_pull(d, now);
    size_t n = 0;
    while (n < max) {
        size_t len =
            qk_dns_server_next_response(d->srv, now, out[n].data, out[n].len, &out[n].peer);
        if (!len) break;
        out[n].len = len;
        out[n].local.len = 0;
        out[n].segment_bytes = 0;
        n++;
    }
    return n;
}

static qk_time next_timeout(void *ctx)
{
    tun_dns *d = ctx;
    qk_time t = qk_endpoint_next_timeout(d->ep), c;
    if (d->server)
        c = qk_dns_server_next_timeout(d->srv);
    else
        c = qk_dns_poll_next_timeout(d->poll, qk_io_now());
    return c < t ? c : t;
}

static void on_timeout(void *ctx, qk_time now)
{
    tun_dns *d = ctx;
    if (now >= qk_endpoint_next_timeout(d->ep)) qk_endpoint_on_timeout(d->ep, now);
    run_app(d, now);
}

const qk_io_driver_ops tun_dns_ops = {
    .on_datagrams = on_datagrams,
    .poll_send = poll_send,
    .next_timeout = next_timeout,
    .on_timeout = on_timeout,
};

/* ---- setup ---- */

static void on_pool_readable(struct ev_loop *ev, ev_io *w, int revents)
{
    (void)ev;
    (void)revents;
    pool_sock *ps = w->data;
    tun_dns *d = ps->d;
    uint8_t bufs[8][2048];
    qk_datagram dg[8];
    for (int round = 0; round < 16; round++) {
        for (int i = 0; i < 8; i++) {
            memset(&dg[i], 0, sizeof dg[i]);
            dg[i].data = bufs[i];
            dg[i].len = sizeof bufs[i];
        }
        int n = qk_udp_recv(ps->u, dg, 8);
        if (n <= 0) break;
        on_datagrams(d, dg, (size_t)n, qk_io_now());
    }
    qk_io_loop_kick(d->loop);
}

int tun_dns_new(const tun_dns_opts *o, bool server, qk_endpoint *ep, qk_udp *u, qk_io_ep_app_fn app,
                void *app_ctx, tun_dns **out)
{
    if (!o || !ep || !u || !out) return QK_ERR_INVALID_ARG;
    tun_dns *d = calloc(1, sizeof *d);
    if (!d) return QK_ERR_NOMEM;
    d->server = server;
    d->ep = ep;
    d->app = app;
    d->app_ctx = app_ctx;
    if (getrandom(&d->rng, sizeof d->rng, 0) != sizeof d->rng || !d->rng)
        d->rng = 0x9e3779b97f4a7c15ull;
    d->pool[0].u = u;
    d->n_pool = 1;
    int rc = 0;
    if (server) {
        qk_dns_server_config sc = {.domain = o->domain, .patience_ns = o->patience_ns};
        rc = qk_dns_server_new(&sc, &d->srv);
    } else {
        rc = qk_dns_client_new(o->domain, o->max_qname_len, (uint32_t)rnd(d), &d->cli);
        if (!rc) d->max_dgram = qk_dns_client_max_datagram(d->cli);
        qk_dns_poll_config pc;
        qk_dns_poll_config_default(&pc);
        if (o->polls >= 0) pc.polls_per_response = (unsigned)o->polls;
        if (o->ack_as_poll >= 0) pc.ack_as_poll = o->ack_as_poll;
        if (o->burst_cap) pc.burst_cap = o->burst_cap;
        if (!rc) rc = qk_dns_poll_new(&pc, qk_io_now(), &d->poll);
        tun_dns_server_addr(&d->server_addr);
        for (size_t i = 0; i < o->n_resolvers; i++) d->res[i].addr = o->resolver[i];
        d->n_res = o->n_resolvers;
        qk_addr bind;
        qk_udp_local_addr(u, &bind);
        /* same family and address, port 0 each */
        if (bind.ss.ss_family == AF_INET)
            ((struct sockaddr_in *)&bind.ss)->sin_port = 0;
        else
            ((struct sockaddr_in6 *)&bind.ss)->sin6_port = 0;
        while (!rc && d->n_pool < TUN_DNS_POOL_SOCKETS) {
            pool_sock *ps = &d->pool[d->n_pool];
            rc = qk_udp_open(&bind, QK_UDP_NO_GSO | QK_UDP_NO_GRO, &ps->u);
            if (!rc) {
                ps->owned = true;
                d->n_pool++;
            }
        }
    }
    if (rc) {
        tun_dns_del(d);
        return rc;
    }
    *out = d;
    return 0;
}

qk_udp *tun_dns_socket(tun_dns *d)
{
    return d->pool[0].u;
}

void tun_dns_attach(tun_dns *d, qk_io_loop *l)
{
    d->loop = l;
    struct ev_loop *ev = qk_io_loop_ev(l);
    for (size_t i = 1; i < d->n_pool; i++) {
        pool_sock *ps = &d->pool[i];
        ps->d = d;
        ev_io_init(&ps->w, on_pool_readable, qk_udp_fd(ps->u), EV_READ);
        ps->w.data = ps;
        ev_io_start(ev, &ps->w);
    }
}

void tun_dns_del(tun_dns *d)
{
    if (!d) return;
    for (size_t i = 1; i < d->n_pool; i++) {
        if (d->loop && ev_is_active(&d->pool[i].w))
            ev_io_stop(qk_io_loop_ev(d->loop), &d->pool[i].w);
        if (d->pool[i].owned) qk_udp_close(d->pool[i].u);
    }
    qk_dns_server_del(d->srv);
    qk_dns_client_del(d->cli);
    qk_dns_poll_del(d->poll);
    free(d);
}

void tun_dns_print_stats(const tun_dns *d, FILE *f)
{
    if (d->server) {
        qk_dns_server_stats s;
        qk_dns_server_get_stats(d->srv, &s);
        fprintf(f,
                "dns server: %llu queries (%llu data, %llu polls), %llu duplicates (%llu "
                "replayed), answers %llu with data / %llu empty, %llu datagrams down, %llu "
                "pulled, %llu other answers, %llu rate-limited, %llu malformed, %llu dropped\n",
                (unsigned long long)s.queries, (unsigned long long)s.data_queries,
                (unsigned long long)s.polls, (unsigned long long)s.duplicates,
                (unsigned long long)s.replayed, (unsigned long long)s.answers_data,
                (unsigned long long)s.answers_empty, (unsigned long long)s.dgrams_down,
                (unsigned long long)d->pulled, (unsigned long long)s.other,
                (unsigned long long)s.rate_limited, (unsigned long long)s.malformed,
                (unsigned long long)s.dropped_down);
        return;
    }
    qk_dns_poll_stats ps;
    qk_dns_poll_get_stats(d->poll, &ps);
    const qk_dns_poll_stats *p = &ps;
    fprintf(f,
            "dns client: %zu-byte datagrams, %llu queries (%llu data, %llu polls of which %llu "
            "idle), %llu answers (%llu with data, %llu empty, %llu bad), %llu acks as polls, "
            "%llu polls over the cap, %llu owed, idle delay %.1f s, %llu send errors\n",
            d->max_dgram, (unsigned long long)d->queries_sent, (unsigned long long)d->data_queries,
            (unsigned long long)p->polls_sent, (unsigned long long)p->idle_polls,
            (unsigned long long)d->answers, (unsigned long long)p->responses_data,
            (unsigned long long)p->responses_empty, (unsigned long long)d->answers_bad,
            (unsigned long long)p->acks_as_polls, (unsigned long long)p->capped,
            (unsigned long long)p->owed_now, (double)p->idle_delay_ns / 1e9,
            (unsigned long long)d->send_errors);
    for (size_t i = 0; i < d->n_res; i++) {
        char a[QK_ADDR_STRLEN];
        if (qk_addr_format(&d->res[i].addr, a, sizeof a) < 0) snprintf(a, sizeof a, "?");
        fprintf(f, "  resolver %s: %llu sent, %llu answered, taken out %llu times\n", a,
                (unsigned long long)d->res[i].sent, (unsigned long long)d->res[i].answered,
                (unsigned long long)d->res[i].downs);
    }
}
