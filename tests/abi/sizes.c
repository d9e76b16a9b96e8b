/* SPDX-License-Identifier: MIT */
/* Built by tests/cli/abi.sh against a released version's headers
 * (tests/abi/v1.0/include) and run against the library just built: the
 * size-tagged structs cross the boundary as a program of that release and
 * as programs of older and newer releases (simulated with smaller and larger
 * sizes) see them. Prints one "ok"/"FAIL" line per check; exits 1 on any
 * failure. */
#include <quack/cert.h>
#include <quack/dns.h>
#include <quack/quack.h>
#include <quack/sim.h>
#include <quack/yamux.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static int fails;
static void check(const char *what, int cond)
{
    printf("%s - %s\n", cond ? "ok  " : "FAIL", what);
    if (!cond) fails++;
}

static void rng(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    if (getrandom(buf, len, 0) != (ssize_t)len) abort();
}

static const unsigned char canary = 0xa5;

/* Every byte of buf[from, to) is the canary. */
static int untouched(const void *buf, size_t from, size_t to)
{
    const unsigned char *b = buf;
    for (size_t i = from; i < to; i++)
        if (b[i] != canary) return 0;
    return 1;
}

static void config_checks(void)
{
    /* A program of this release: the macro passes sizeof(qk_config). */
    qk_config c;
    qk_config_default(&c);
    check("qk_config_default: documented defaults (cc CUBIC, cid_bytes 8, 1452-byte datagrams)",
          c.cc == QK_CONFIG_CC_CUBIC && c.cid_bytes == 8 && c.max_udp_payload_bytes == 1452);
    /* A newer program: its qk_config is larger; the fields this library does
     * not know come back zero, and setting one is refused. */
    size_t big = sizeof(qk_config) + 64;
    unsigned char *newer = malloc(big);
    memset(newer, canary, big);
    qk_config_default_sized((qk_config *)newer, big);
    check("qk_config_default_sized for a larger (newer) struct zeroes the unknown tail",
          memcmp(newer, &c, sizeof c) == 0 && newer[sizeof c] == 0 && newer[big - 1] == 0);
    qk_config *n = (qk_config *)newer;
    n->rng = rng;
    n->alpn[0] = "abi";
    n->alpn_count = 1;
    char why[256];
    check("qk_config_check_sized accepts the newer struct with its tail zero",
          qk_config_check_sized(n, big, why, sizeof why) == 0);
    newer[big - 8] = 1;
    int rc = qk_config_check_sized(n, big, why, sizeof why);
    printf("     (%s)\n", why);
    check("qk_config_check_sized refuses a field this library does not know: QK_ERR_UNSUPPORTED",
          rc == QK_ERR_UNSUPPORTED);
    check("qk_endpoint_new_sized refuses it too", qk_endpoint_new_sized(n, big) == NULL);
    free(newer);
    check("qk_endpoint_new_sized refuses a size below the first release's",
          qk_endpoint_new_sized(&c, offsetof(qk_config, cc)) == NULL);
}

static qk_addr ipv4(const char *ip, uint16_t port)
{
    qk_addr a = {0};
    struct sockaddr_in *sin = (struct sockaddr_in *)&a.ss;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    inet_pton(AF_INET, ip, &sin->sin_addr);
    a.len = sizeof *sin;
    return a;
}

/* Client and server endpoints; the pair moves datagrams until the client's
 * QK_EV_CONNECTED, which is returned in *connected. */
static int handshake(qk_endpoint *cli, qk_endpoint *srv, qk_conn **conn, qk_event *connected)
{
    static uint8_t bufs[8][1500];
    qk_time now = 1000000;
    qk_endpoint *from[2] = {cli, srv}, *to[2] = {srv, cli};
    qk_addr addr[2] = {ipv4("192.0.2.2", 5000), ipv4("192.0.2.1", 4433)};
    for (int round = 0; round < 200; round++, now += 1000000) {
        for (int k = 0; k < 2; k++) {
            qk_datagram d[8];
            for (int i = 0; i < 8; i++) d[i] = (qk_datagram){.data = bufs[i], .len = 1500};
            size_t m = qk_endpoint_send(from[k], d, 8, now);
            for (size_t i = 0; i < m; i++) {
                d[i].local = addr[1 - k];
                d[i].peer = addr[k];
                qk_endpoint_recv(to[k], &d[i], now);
            }
        }
        qk_event ev;
        while (qk_endpoint_poll_event(srv, &ev)) {
        }
        while (qk_endpoint_poll_event(cli, &ev))
            if (ev.type == QK_EV_CONNECTED) {
                *connected = ev;
                return ev.conn == *conn ? 0 : -1;
            }
    }
    return -1;
}

static void pair_checks(void)
{
    char *cert = NULL, *key = NULL;
    if (qk_cert_generate("abi.test", 0, 1, &cert, &key)) {
        check("qk_cert_generate", 0);
        return;
    }
    uint8_t pin[QK_PIN_BYTES];
    qk_cert_pin_pem(cert, strlen(cert), pin);
    qk_config sc, cc;
    qk_config_default(&sc);
    sc.server = true, sc.cert_pem = cert, sc.key_pem = key, sc.rng = rng;
    sc.alpn[0] = "abi", sc.alpn_count = 1;
    qk_config_default(&cc);
    cc.has_pin = true, cc.rng = rng, cc.alpn[0] = "abi", cc.alpn_count = 1;
    memcpy(cc.pin_sha256, pin, sizeof pin);
    qk_endpoint *srv = qk_endpoint_new(&sc), *cli = qk_endpoint_new(&cc);
    qk_addr a = ipv4("192.0.2.1", 4433), local = ipv4("192.0.2.2", 5000);
    qk_conn *conn = NULL;
    qk_connect_opts opts = {0};
    int rc = srv && cli ? qk_connect_ex(cli, &local, &a, "abi.test", &opts, 1000000, &conn) : -1;
    qk_event ev;
    check("connect (qk_connect_ex with {0} options) and handshake to QK_EV_CONNECTED",
          rc == 0 && handshake(cli, srv, &conn, &ev) == 0);

    /* An older program whose qk_conn_stats ends before bytes_sent: the
     * library fills what it has and not a byte more. */
    union {
        qk_conn_stats s;
        unsigned char b[sizeof(qk_conn_stats) + 16];
    } st;
    memset(&st, canary, sizeof st);
    size_t old = offsetof(qk_conn_stats, bytes_sent);
    qk_conn_stats_get_sized(conn, &st.s, old);
    check("qk_conn_stats_get_sized fills an older (smaller) struct and stops at its end",
          st.s.pkts_sent > 0 && st.s.pkts_received > 0 && untouched(st.b, old, sizeof st.b));
    qk_conn_stats full;
    qk_conn_stats_get(conn, &full);
    check("qk_conn_stats_get (this release's size) fills bytes_sent",
          full.bytes_sent > 0 && full.pkts_sent == st.s.pkts_sent);
    qk_endpoint_stats es;
    memset(&es, canary, sizeof es);
    qk_endpoint_stats_get(srv, &es);
    check("qk_endpoint_stats_get fills every field", es.initials_accepted == 1);

    /* Events to an older program whose qk_event ends before reason. */
    qk_conn_close(conn, 7, "bye");
    union {
        qk_event e;
        unsigned char b[sizeof(qk_event) + 16];
    } ev_old;
    size_t ev_bytes = offsetof(qk_event, reason);
    int closed = 0;
    static uint8_t buf[1500];
    for (int round = 0; round < 100 && !closed; round++) {
        qk_time now = 500000000ull + (qk_time)round * 100000000ull;
        qk_datagram d = {.data = buf, .len = sizeof buf};
        qk_endpoint_send(cli, &d, 1, now); /* the CONNECTION_CLOSE, dropped */
        qk_endpoint_on_timeout(cli, now);
        memset(&ev_old, canary, sizeof ev_old);
        while (!closed && qk_endpoint_poll_event_sized(cli, &ev_old.e, ev_bytes))
            closed = ev_old.e.type == QK_EV_CLOSED;
    }
    check("qk_endpoint_poll_event_sized: QK_EV_CLOSED (app error 7) to an older, smaller qk_event, "
          "nothing written past it",
          closed && ev_old.e.app_error && ev_old.e.error_code == 7 &&
              untouched(ev_old.b, ev_bytes, sizeof ev_old.b));
    qk_endpoint_del(cli);
    qk_endpoint_del(srv);
    free(cert);
    free(key);
}

/* The same rules in the other headers: an input struct (qk_yamux_config),
 * an output struct (qk_dns_poll_stats) and a struct the library edits in
 * place (qk_sim_link_cfg via qk_sim_link_cfg_set). */
static void module_checks(void)
{
    size_t big = sizeof(qk_yamux_config) + 32;
    unsigned char *newer = calloc(1, big);
    qk_yamux_config_default_sized((qk_yamux_config *)newer, big);
    qk_yamux *y = NULL;
    check("qk_yamux_new_sized accepts a newer qk_yamux_config with its tail zero",
          qk_yamux_new_sized((qk_yamux_config *)newer, big, 0, &y) == 0 && y);
    qk_yamux_del(y);
    newer[big - 1] = 1;
    check("qk_yamux_new_sized refuses a field it does not know: QK_ERR_UNSUPPORTED",
          qk_yamux_new_sized((qk_yamux_config *)newer, big, 0, &y) == QK_ERR_UNSUPPORTED);
    free(newer);

    qk_dns_poll_config pc;
    qk_dns_poll_config_default(&pc);
    qk_dns_poll *p = NULL;
    check("qk_dns_poll_new with this release's qk_dns_poll_config",
          qk_dns_poll_new(&pc, 0, &p) == 0);
    check("an idle poll is due after 500 ms", qk_dns_poll_take(p, 500 * QK_NS_PER_MS));
    unsigned char st[sizeof(qk_dns_poll_stats) + 16];
    memset(st, canary, sizeof st);
    size_t old = offsetof(qk_dns_poll_stats, idle_polls);
    qk_dns_poll_get_stats_sized(p, (qk_dns_poll_stats *)st, old);
    check("qk_dns_poll_get_stats_sized for an older, smaller struct writes nothing past it",
          ((qk_dns_poll_stats *)st)->polls_sent == 1 && untouched(st, old, sizeof st));
    qk_dns_poll_get_stats_sized(p, (qk_dns_poll_stats *)st, sizeof st);
    check("... and zeroes a newer struct's unknown tail",
          ((qk_dns_poll_stats *)st)->idle_polls == 1 && st[sizeof st - 1] == 0);
    qk_dns_poll_del(p);

    qk_sim_link_cfg *lc = calloc(1, sizeof *lc);
    check("qk_sim_link_cfg_set sets a field of this release",
          qk_sim_link_cfg_set(lc, "delay", "30ms", NULL) == 0 && lc->delay_ns == 30 * QK_NS_PER_MS);
    free(lc);
    big = sizeof(qk_sim_link_cfg) + 64;
    newer = calloc(1, big);
    lc = (qk_sim_link_cfg *)newer;
    check("qk_sim_link_cfg_set_sized edits a newer, larger struct and leaves its tail zero",
          qk_sim_link_cfg_set_sized(lc, big, "blackhole", "1s-2s", NULL) == 0 &&
              lc->blackhole_end_ns == 2 * QK_NS_PER_S && newer[big - 1] == 0);
    check("... and refuses a struct below this release's size",
          qk_sim_link_cfg_set_sized(lc, sizeof *lc - 8, "delay", "1ms", NULL) ==
              QK_ERR_INVALID_ARG);
    newer[big - 1] = 1;
    check("... and one that sets a field this library does not know",
          qk_sim_link_cfg_set_sized(lc, big, "delay", "1ms", NULL) == QK_ERR_CONFIG);
    free(lc);
}

int main(void)
{
    config_checks();
    pair_checks();
    module_checks();
    printf("%d failure(s)\n", fails);
    return fails ? 1 : 0;
}
