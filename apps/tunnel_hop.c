/* SPDX-License-Identifier: MIT */
/* `quack tunnel` port hopping: port ranges, the server's sockets, the
 * client's hops and their counters (tunnel_hop.h, docs/tunnel.md "Port
 * hopping"). */
#include "tunnel_hop.h"

#include "cli_options.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <netinet/in.h>
#include <quack/io.h>
#include <quack/sim.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* How often (at most) the client looks at its connection (hop due, hop arrived). */
#define HOP_CHECK_S 0.25
/* Client: nothing received for this long while flows are open: the port
 * may have gone dark, hop now instead of at the next interval. */
#define HOP_SILENCE_NS (1 * QK_NS_PER_S)

/* The run-time state of either side. */
struct tun_hop {
    const tun_hop_opts *o;
    bool server;
    const char *who;
    qk_io_loop *loop;
    tun_hop_conn_fn conn_fn;
    void *conn_ctx;
    /* server: the range's sockets, [0] the one cmd_tunnel.c opened */
    qk_udp **socks;
    size_t n_socks;
    /* client */
    ev_timer timer;
    qk_conn *conn;   /* the connection the fields below are about */
    uint16_t target; /* the port of the hop under way (0: none) */
    qk_time next_at; /* the next hop by the interval */
    qk_time last_hop_at;
    uint64_t last_rx_bytes;
    qk_time last_rx_at;
    bool silence_hopped;               /* one early hop per silence */
    bool refused;                      /* the server disabled active migration: no more hops */
    uint16_t order[TUN_HOP_MAX_PORTS]; /* this round's ports, in a random order */
    size_t n_order, next;              /* ports in order; the next one to use */
    uint64_t hops, hops_done, hop_failures;
};

/* A usage error: "quack tunnel: ..." and the --help hint; exit status 2. */
#define hop_bad(...) cli_usage_error("tunnel", __VA_ARGS__)

int tun_hop_take_range(tun_hop_opts *h, const char *opt, const char *v, char *buf, size_t cap)
{
    uint16_t lo, hi;
    int r = cli_parse_port_range(v, buf, cap, &lo, &hi);
    if (r == QK_ERR_INVALID_ARG)
        return hop_bad("%s %s: a port range is ADDR:P1-P2 with 1 <= P1 < P2 <= 65535", opt, v);
    if (r == QK_ERR_LIMIT) return hop_bad("%s %s: address too long", opt, v);
    if (!r) return 0;
    if ((unsigned)(hi - lo) + 1 > TUN_HOP_MAX_PORTS)
        return hop_bad("%s %s: %u ports; a range has at most %d (one socket each)", opt, v,
                       (unsigned)(hi - lo) + 1, TUN_HOP_MAX_PORTS);
    h->lo = lo;
    h->hi = hi;
    h->range_str = v;
    return 1;
}

int tun_hop_parse_interval(tun_hop_opts *h, const char *v)
{
    if (!strcmp(v, "0") || !strcmp(v, "off")) {
        h->interval_ns = 0;
        return 0;
    }
    if (qk_sim_parse_time(v, &h->interval_ns) || h->interval_ns < 100 * QK_NS_PER_MS)
        return hop_bad("--hop-interval wants a time of at least 100ms such as 30s, or off, not "
                       "'%s'",
                       v);
    return 0;
}

static uint32_t rnd32(void)
{
    uint32_t r;
    cli_rng(NULL, (uint8_t *)&r, sizeof r);
    return r;
}

static void set_port(qk_addr *a, uint16_t port)
{
    if (a->ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&a->ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)&a->ss)->sin6_port = htons(port);
}

int tun_hop_check(tun_hop_opts *h, bool server, bool udp_carrier, qk_addr *addr)
{
    if (server && h->interval_ns)
        return hop_bad("%s", "--hop-interval is the client's (the server listens on a range: "
                             "--listen ADDR:P1-P2)");
    if (h->interval_ns && !h->lo)
        return hop_bad("%s", "--hop-interval needs a port range to hop in: --connect "
                             "HOST:P1-P2 (the server's --listen range)");
    if (h->lo && !udp_carrier)
        return hop_bad("%s: port ranges go with --carrier udp (the default) only", h->range_str);
    if (!server && h->lo) /* RFC 9000 §9: any port of the range reaches the same server */
        set_port(addr, (uint16_t)(h->lo + rnd32() % ((unsigned)(h->hi - h->lo) + 1)));
    return 0;
}

void tun_hop_usage(FILE *f)
{
    fputs("Port hopping (UDP carrier; docs/tunnel.md \"Port hopping\"):\n"
          "  server --listen ADDR:P1-P2   listen on every port P1..P2 (at most 1024, one\n"
          "                         socket each, one endpoint: a connection's packets\n"
          "                         are routed by connection ID whatever port they reach)\n"
          "  client --connect HOST:P1-P2  the server's range; the first port is random\n"
          "  --hop-interval TIME    client: move to another port of the range every TIME\n"
          "                         (default off; e.g. 30s), the range in a random order,\n"
          "                         a new order once every port was used: the new port is\n"
          "                         probed (PATH_CHALLENGE) and used once it answers, no\n"
          "                         new handshake; a port that does not answer is given\n"
          "                         up (hop_failures), and 1 s of silence while flows are\n"
          "                         open hops at once. Refused (a log line, no hops) when\n"
          "                         the server sent disable_active_migration\n"
          "  --stats then adds a \"stats: hop\" line per second: server ports,\n"
          "                         ports_with_datagrams, rx_datagrams, handshakes\n"
          "                         (connections accepted); client hops, hops_done,\n"
          "                         hop_failures and the port in use\n",
          f);
}

/* ------------------------------------------------------------------------ */
/* Server: one socket per port                                              */
/* ------------------------------------------------------------------------ */

/* Room for one descriptor per port: the soft limit raised toward the hard one. */
static void raise_fd_limit(size_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want) return;
    rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
    setrlimit(RLIMIT_NOFILE, &rl);
}

int tun_hop_new(const tun_hop_opts *h, bool server, const char *who, tun_hop **out)
{
    *out = NULL;
    if (!h->lo && !h->interval_ns) return 0;
    tun_hop *hp = calloc(1, sizeof *hp);
    if (!hp) return QK_ERR_NOMEM;
    hp->o = h;
    hp->server = server;
    hp->who = who;
    *out = hp;
    return 0;
}

int tun_hop_open(tun_hop *hp, const qk_addr *addr, qk_udp *first, unsigned flags)
{
    if (!hp || !hp->server) return 0;
    const tun_hop_opts *h = hp->o;
    size_t n = (size_t)(h->hi - h->lo) + 1;
    raise_fd_limit(n + 256);
    hp->socks = calloc(n, sizeof *hp->socks);
    if (!hp->socks) return QK_ERR_NOMEM;
    hp->socks[hp->n_socks++] = first;
    for (uint16_t p = (uint16_t)(h->lo + 1); hp->n_socks < n; p++) {
        qk_addr a = *addr;
        set_port(&a, p);
        int rc = qk_udp_open(&a, flags, &hp->socks[hp->n_socks]);
        if (rc) {
            fprintf(stderr,
                    "%s: cannot open UDP port %u of --listen %s: %m (a port in use? the "
                    "open-files limit?)\n",
                    hp->who, (unsigned)p, h->range_str);
            return rc;
        }
        hp->n_socks++;
    }
    printf("listening on ports %u-%u too (%zu UDP sockets, one endpoint)\n", (unsigned)h->lo,
           (unsigned)h->hi, hp->n_socks);
    fflush(stdout);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Client: the hops                                                         */
/* ------------------------------------------------------------------------ */

/* The next port: the range in a random order (Fisher-Yates), a new order
 * each round, so that every port is used once per round; never cur. */
static uint16_t pick_port(tun_hop *rt, const tun_hop_opts *h, uint16_t cur)
{
    for (int tries = 0; tries < 2; tries++) {
        while (rt->next < rt->n_order)
            if (rt->order[rt->next++] != cur) return rt->order[rt->next - 1];
        rt->n_order = (size_t)(h->hi - h->lo) + 1;
        for (size_t i = 0; i < rt->n_order; i++) rt->order[i] = (uint16_t)(h->lo + i);
        for (size_t i = rt->n_order - 1; i > 0; i--) {
            size_t j = rnd32() % (i + 1);
            uint16_t t = rt->order[i];
            rt->order[i] = rt->order[j];
            rt->order[j] = t;
        }
        rt->next = 0;
    }
    return cur; /* not reached: a range has two ports or more */
}

/* What happened since the last look: the hop under way arrived, bytes came in. */
static void hop_observe(tun_hop *rt, qk_conn *c, qk_time now)
{
    if (c != rt->conn) { /* a new connection (redial): its own first port */
        rt->conn = c;
        rt->target = 0;
        rt->last_hop_at = rt->last_rx_at = now;
        rt->last_rx_bytes = 0;
        rt->silence_hopped = false;
    }
    qk_addr peer;
    qk_conn_path_addrs(c, NULL, &peer);
    if (rt->target && qk_addr_port(&peer) == rt->target) {
        rt->hops_done++;
        rt->target = 0;
    }
    qk_conn_stats st;
    qk_conn_stats_get(c, &st);
    if (st.bytes_received != rt->last_rx_bytes) {
        rt->last_rx_bytes = st.bytes_received;
        rt->last_rx_at = now;
        rt->silence_hopped = false;
    }
}

static void on_hop_timer(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    tun_hop *rt = w->data;
    size_t flows = 0;
    qk_conn *c = rt->conn_fn(rt->conn_ctx, &flows);
    if (!c || rt->refused) return;
    qk_time now = qk_io_now();
    hop_observe(rt, c, now);
    if (!rt->next_at) rt->next_at = now + rt->o->interval_ns;
    bool silent = !rt->silence_hopped && flows > 0 && now - rt->last_rx_at >= HOP_SILENCE_NS &&
                  now - rt->last_hop_at >= HOP_SILENCE_NS;
    if (now < rt->next_at && !silent) return;
    qk_addr peer;
    qk_conn_path_addrs(c, NULL, &peer);
    uint16_t port = pick_port(rt, rt->o, qk_addr_port(&peer));
    int rc = qk_conn_hop(c, port, now);
    if (rc == QK_ERR_UNSUPPORTED) {
        fprintf(stderr,
                "%s: the server disabled active migration (RFC 9000 §18.2): staying on port "
                "%u, no hops\n",
                rt->who, (unsigned)qk_addr_port(&peer));
        rt->refused = true;
        return;
    }
    if (rc) return; /* handshake not confirmed, no spare connection ID yet: the next look */
    if (rt->target) rt->hop_failures++; /* the one under way never got there */
    rt->target = port;
    rt->hops++;
    rt->last_hop_at = now;
    rt->silence_hopped = rt->silence_hopped || silent;
    rt->next_at = now + rt->o->interval_ns;
    qk_io_loop_kick(rt->loop);
}

int tun_hop_start(tun_hop *rt, qk_io_loop *loop, tun_hop_conn_fn conn_fn, void *ctx)
{
    if (!rt) return 0;
    rt->loop = loop;
    rt->conn_fn = conn_fn;
    rt->conn_ctx = ctx;
    for (size_t i = 1; i < rt->n_socks; i++) { /* server: the range's other ports */
        int rc = qk_io_loop_add_udp(loop, rt->socks[i]);
        if (rc) {
            fprintf(stderr, "%s: cannot add port %zu of the range to the loop (error %d)\n",
                    rt->who, i, rc);
            return rc;
        }
    }
    if (rt->server || !rt->o->interval_ns) return 0;
    double every_s = (double)rt->o->interval_ns / 1e9; /* a short --hop-interval: that often */
    if (every_s > HOP_CHECK_S) every_s = HOP_CHECK_S;
    ev_timer_init(&rt->timer, on_hop_timer, every_s, every_s);
    rt->timer.data = rt;
    ev_timer_start(qk_io_loop_ev(loop), &rt->timer);
    return 0;
}

void tun_hop_stop(tun_hop *rt)
{
    if (rt && rt->loop) ev_timer_stop(qk_io_loop_ev(rt->loop), &rt->timer);
}

void tun_hop_del(tun_hop *rt)
{
    if (!rt) return;
    for (size_t i = 1; i < rt->n_socks; i++) qk_udp_close(rt->socks[i]); /* [0]: the caller's */
    free(rt->socks);
    free(rt);
}

void tun_hop_print_stats(const tun_hop *rt, const qk_endpoint *ep, const qk_conn *conn,
                         qk_time t_ns, FILE *f)
{
    if (!rt) return;
    if (rt->server) {
        size_t seen = 0;
        uint64_t dgrams = 0;
        for (size_t i = 0; i < rt->n_socks; i++) {
            qk_udp_stats us;
            qk_udp_get_stats(rt->socks[i], &us);
            seen += us.rx_datagrams > 0;
            dgrams += us.rx_datagrams;
        }
        qk_endpoint_stats es;
        qk_endpoint_stats_get(ep, &es);
        fprintf(f,
                "stats: hop t=%.0fs ports=%zu ports_with_datagrams=%zu rx_datagrams=%llu "
                "handshakes=%llu\n",
                (double)t_ns / 1e9, rt->n_socks, seen, (unsigned long long)dgrams,
                (unsigned long long)(es.initials_accepted + es.initials_validated));
    } else {
        qk_addr peer = {.len = 0};
        if (conn) qk_conn_path_addrs(conn, NULL, &peer);
        fprintf(f, "stats: hop t=%.0fs hops=%llu hops_done=%llu hop_failures=%llu port=%u\n",
                (double)t_ns / 1e9, (unsigned long long)rt->hops, (unsigned long long)rt->hops_done,
                (unsigned long long)rt->hop_failures, (unsigned)(conn ? qk_addr_port(&peer) : 0));
    }
    fflush(f);
}
