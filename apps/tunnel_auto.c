/* SPDX-License-Identifier: MIT */
/* `quack tunnel --carrier LIST|auto`: the carrier list and, at run
 * time (the state in tunnel_app.h), the client's fallback down the list, its
 * probes of the better carriers (udp from tcp; udp then tcp from dns), and
 * the DNS carrier of a list. */
#include "tunnel_app.h"

#include <string.h>

/* Per carrier, by tun_carrier: its --carrier name, what the listening line
 * says it carries flows over, and the progress line's label. */
const tun_carrier_info tun_carriers[3] = {
    {"udp", "QUIC", "quic"},
    {"tcp", "yamux/TLS/TCP", "yamux"},
    {"dns", "QUIC", "dns"},
};

static int add_name(tun_auto *a, const char *name, size_t len, const char *const *names,
                    size_t n_names)
{
    for (unsigned c = 0; c < n_names; c++) {
        if (strlen(names[c]) != len || memcmp(names[c], name, len)) continue;
        if (tun_auto_has(a, c) || a->n == TUN_AUTO_MAX) return -1; /* a repeat */
        a->order[a->n++] = c;
        return 0;
    }
    return -1;
}

int tun_auto_parse(tun_auto *a, const char *v, const char *const *names, size_t n_names)
{
    a->n = 0;
    a->cur = 0;
    a->is_auto = !strcmp(v, "auto");
    if (a->is_auto) v = "udp,tcp"; /* dns joins when its options are given (tun_auto_add) */
    for (const char *p = v;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (add_name(a, p, len, names, n_names)) return -1;
        if (!comma) return 0;
        p = comma + 1;
    }
}

void tun_auto_add(tun_auto *a, unsigned c)
{
    if (!tun_auto_has(a, c) && a->n < TUN_AUTO_MAX) a->order[a->n++] = c;
}

bool tun_auto_has(const tun_auto *a, unsigned c)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->order[i] == c) return true;
    return false;
}

unsigned tun_auto_current(const tun_auto *a)
{
    return a->n ? a->order[a->cur] : 0;
}

void tun_auto_usage(FILE *f)
{
    fputs("Carrier lists (docs/tunnel.md \"Carrier fallback\"):\n"
          "  --carrier udp,tcp,dns  several carriers, best first (udp first); auto =\n"
          "                         udp,tcp, and dns too when --domain is given.\n"
          "                         server: one process, one key, one session table:\n"
          "                         QUIC on --listen (UDP), yamux/TLS on the same port\n"
          "                         (TCP), DNS on --dns-listen; a client's flows resume\n"
          "                         over whichever carrier it comes back on.\n"
          "                         client: dials udp (--handshake-timeout, default 2s\n"
          "                         with a list), on failure or loss the next one at\n"
          "                         once (tcp: connect refused or TLS failed; dns:\n"
          "                         --resolver, --domain), after the last from the top\n"
          "                         with --reconnect-max backoff. On tcp or dns it\n"
          "                         tries a QUIC handshake over udp every\n"
          "                         --probe-interval and moves its flows back when one\n"
          "                         completes; on dns, when that fails, a TLS/TCP\n"
          "                         connection (tcp) next. Each change: a \"carrier\n"
          "                         A -> B (switch N)\" log line; --stats adds\n"
          "                         carrier=, carrier_switches=, carrier_probes=,\n"
          "                         carrier_probes_failed=\n"
          "  --dns-listen ADDR:PORT server: the DNS carrier's UDP port in a list\n"
          "  --probe-interval TIME  client with a list: how often to try udp again\n"
          "                         (default 5s)\n",
          f);
}

/* dns in a carrier list: an endpoint with the DNS profile, its socket
 * (server: --dns-listen; client: any port, the resolvers' family) and a
 * qk_io_loop in the same libev loop. Returns 0 or a QK_ERR_*. */
int tun_auto_start_dns(tun *s)
{
    const tun_opts *o = s->o;
    qk_config dc = *s->cfg;
    tun_dns_config(&o->dns, o->server, &dc);
    s->dns_ep = cli_endpoint_new(&dc, s->who);
    if (!s->dns_ep) return QK_ERR_CONFIG;
    qk_addr bind;
    memset(&bind, 0, sizeof bind);
    if (o->server)
        bind = o->dns_listen;
    else
        bind.ss.ss_family = o->dns.resolver[0].ss.ss_family;
    bind.len = o->server ? o->dns_listen.len : o->dns.resolver[0].len;
    int rc = qk_udp_open(&bind, 0, &s->dns_u);
    if (rc) {
        fprintf(stderr, "%s: cannot open the DNS carrier's UDP socket%s%s: %m\n", s->who,
                o->server ? " on " : "", o->server ? o->dns_listen_str : "");
        return rc;
    }
    rc = tun_dns_new(&o->dns, o->server, s->dns_ep, s->dns_u, s->hooks->app, s, &s->dns2);
    qk_io_loop_config lc = {.ev = s->evl};
    if (!rc) rc = qk_io_loop_new(s->dns_u, &tun_dns_ops, s->dns2, &lc, &s->dns_loop);
    if (rc) return rc;
    tun_dns_attach(s->dns2, s->dns_loop);
    qk_io_loop_kick(s->dns_loop);
    if (o->server) {
        printf("listening on %s (DNS, zone %s) -> %s (TCP)\n", o->dns_listen_str, o->dns.domain,
               o->tcp_str);
        fflush(stdout);
    }
    return 0;
}

/* dns in a carrier list, client: dial the server through the resolvers. */
static int dial_dns(tun *s)
{
    if (!s->dns_ep && tun_auto_start_dns(s)) return QK_ERR_IO;
    qk_addr none, peer;
    memset(&none, 0, sizeof none);
    tun_dns_server_addr(&peer);
    int rc = qk_connect(s->dns_ep, &none, &peer, s->o->sni, qk_io_now(), &s->conn);
    if (rc) return rc;
    qk_io_loop_kick(s->dns_loop);
    return 0;
}

/* End of the dns carrier of a list (after the loop ran). */
void tun_auto_stop_dns(tun *s)
{
    tun_dns_del(s->dns2); /* before its loop: it stops its watchers in it */
    s->dns2 = NULL;
    qk_io_loop_del(s->dns_loop);
    s->dns_loop = NULL;
    qk_endpoint_del(s->dns_ep);
    s->dns_ep = NULL;
    qk_udp_close(s->dns_u);
    s->dns_u = NULL;
}

/* --carrier LIST, client: dial the carrier at s->cars.cur. Returns 0 or an error. */
int tun_auto_dial(tun *s)
{
    if (tun_auto_current(&s->cars) == TUN_CARRIER_UDP) {
        int rc = s->hooks->dial(s);
        if (!rc) qk_io_loop_kick(s->loop);
        return rc;
    }
    if (tun_auto_current(&s->cars) == TUN_CARRIER_DNS) return dial_dns(s);
    return s->tcp ? qk_tunnel_tcp_redial(s->tcp)
                  : s->hooks->start_tcp(s); /* session: tcp_on_session */
}

/* --carrier LIST, client: the carrier at s->cars.cur did not come up or was
 * lost (why): try the next one of the list at once. Returns false at the
 * end of the list (then the caller redials from the top with backoff). */
bool tun_auto_next(tun *s, const char *why)
{
    while (s->cars.n > 1 && s->cars.cur + 1 < s->cars.n && !s->stopping) {
        unsigned from = tun_auto_current(&s->cars);
        s->cars.cur++;
        fprintf(stderr, "%s: carrier %s: %s; trying %s\n", s->who, tun_carriers[from].name, why,
                tun_carriers[tun_auto_current(&s->cars)].name);
        if (!tun_auto_dial(s)) return true;
        why = "cannot start";
    }
    return false;
}

/* Index of carrier c in the list (c is listed). */
static size_t order_of(const tun_auto *a, unsigned c)
{
    size_t i = 0;
    while (i + 1 < a->n && a->order[i] != c) i++;
    return i;
}

/* On dns, after the udp probe failed: a TLS/TCP connection to the server
 * (tcp is better than dns); tun_auto_tcp_probe moves the session to it. */
static void probe_tcp(tun *s)
{
    if (s->stopping || tun_auto_current(&s->cars) != TUN_CARRIER_DNS ||
        !tun_auto_has(&s->cars, TUN_CARRIER_TCP))
        return;
    s->tcp_probe = true;
    s->cars.probes++;
    if (s->tcp ? qk_tunnel_tcp_redial(s->tcp) : s->hooks->start_tcp(s)) {
        s->tcp_probe = false;
        s->cars.probes_failed++;
    }
}

bool tun_auto_tcp_probe(tun *s, qk_yamux *y)
{
    if (!s->tcp_probe) return false;
    s->tcp_probe = false;
    if (!y || s->stopping) { /* refused, TLS failed: try again at the next interval */
        s->cars.probes_failed++;
        return true;
    }
    s->cars.cur = order_of(&s->cars, TUN_CARRIER_TCP);
    if (s->conn) s->left = s->conn; /* the dns connection: closed once the session moved */
    s->conn = NULL;
    fprintf(stderr, "%s: carrier tcp: probe %llu came up; moving the session to it\n", s->who,
            (unsigned long long)s->cars.probes);
    s->hooks->session_up(s, &qk_tunnel_carrier_yamux, y); /* resumes the flows over it */
    return true;
}

/* Every --probe-interval on a worse carrier: a QUIC handshake over UDP (the
 * best carrier); auto_probe_event moves the session to it once it is up. On
 * dns, when that fails, tcp is tried next (probe_tcp). */
static void on_probe(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    tun *s = w->data;
    if (s->stopping || s->probe || s->tcp_probe || tun_auto_current(&s->cars) == TUN_CARRIER_UDP)
        return;
    qk_addr none;
    memset(&none, 0, sizeof none);
    if (qk_connect(s->ep, &none, &s->o->udp, s->o->sni, qk_io_now(), &s->probe)) {
        s->probe = NULL;
        return;
    }
    s->cars.probes++;
    qk_io_loop_kick(s->loop);
}

/* The probe connection came up (switch to it) or failed (try again later). */
void tun_auto_probe_event(tun *s, const qk_event *ev)
{
    if (ev->type == QK_EV_CLOSED) {
        s->probe = NULL;
        s->cars.probes_failed++;
        probe_tcp(s); /* on dns: the next better carrier */
        return;
    }
    if (ev->type != QK_EV_CONNECTED) return;
    qk_conn *c = s->probe;
    s->probe = NULL;
    s->cars.cur = 0;                /* udp */
    if (s->conn) s->left = s->conn; /* closed once the session moved (tun_auto_up) */
    s->conn = c;
    fprintf(stderr, "%s: carrier udp: probe %llu came up; moving the session to it\n", s->who,
            (unsigned long long)s->cars.probes);
    s->hooks->session_up(s, &qk_tunnel_carrier_quic, c); /* resumes the flows over it */
}

/* Client: a session is up on the carrier at s->cars.cur: count and log a
 * change of carrier, close the one we left, probe the better ones. */
void tun_auto_up(tun *s)
{
    if (s->cars.n < 2) return;
    unsigned c = tun_auto_current(&s->cars);
    if (s->up_carrier >= 0 && (unsigned)s->up_carrier != c) {
        s->cars.switches++;
        fprintf(stderr, "%s: carrier %s -> %s (switch %llu)\n", s->who,
                tun_carriers[s->up_carrier].name, tun_carriers[c].name,
                (unsigned long long)s->cars.switches);
        if (s->up_carrier == TUN_CARRIER_TCP) qk_tunnel_tcp_go_away(s->tcp);
        if (s->left) qk_conn_close(s->left, 0, "moved to a better carrier"); /* RFC 9000 §10.2 */
        s->left = NULL;
        if (s->dns_loop) qk_io_loop_kick(s->dns_loop);
    } else if (s->up_carrier < 0) {
        fprintf(stderr, "%s: carrier %s\n", s->who, tun_carriers[c].name);
    }
    s->up_carrier = (int)c;
    ev_timer_stop(s->evl, &s->probe_w);
    if (s->cars.cur == 0) return;
    double every = (double)s->cars.probe_ns / 1e9;
    ev_timer_init(&s->probe_w, on_probe, every, every);
    s->probe_w.data = s;
    ev_timer_start(s->evl, &s->probe_w);
}
