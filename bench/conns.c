/* SPDX-License-Identifier: MIT */
/*
 * bench_conns: many concurrent QUIC connections to one server, for
 * tests/cli/threads.sh. Opens CONNS connections (ALPN h3, the
 * server's certificate not verified) spread over SOCKETS client sockets
 * (each its own endpoint and local port, so the server's SO_REUSEPORT hash
 * sees many 4-tuples), all in one libev loop; once every one is up it keeps
 * them open HOLD seconds, then closes them.
 * Usage: bench_conns HOST:PORT [CONNS=1000] [SOCKETS=100] [HOLD=1] [TIMEOUT=60]
 * Prints "conns: connected N of M in T s, failed F" and exits 0 when all
 * connected.
 */
#include <quack/driver.h>
#include <quack/io.h>
#include <quack/quack.h>

#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define MAX_SOCKETS 1024

typedef struct client {
    qk_udp *udp;
    qk_endpoint *ep;
    qk_io_ep_driver *drv;
    qk_io_loop *loop;
} client;

#define IN_FLIGHT 64 /* handshakes under way at once (the server's admission is not the test) */

typedef struct run {
    size_t want, started, connected, failed, closed;
    client *cs;
    size_t ns;
    qk_addr peer;
    bool holding;
    qk_io_loop *main_loop;
    double t0;
} run;

static run R;

static void rng(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    while (len) {
        ssize_t r = getrandom(buf, len, 0);
        if (r <= 0) abort();
        buf += r;
        len -= (size_t)r;
    }
}

/* Keep IN_FLIGHT handshakes going, round-robin over the sockets. */
static bool start_more(qk_time now)
{
    bool any = false;
    qk_addr none = {0};
    while (R.started < R.want && R.started - R.connected - R.failed < IN_FLIGHT) {
        client *c = &R.cs[R.started % R.ns];
        qk_conn *conn;
        R.started++;
        if (qk_connect(c->ep, &none, &R.peer, "localhost", now, &conn)) {
            R.failed++;
            continue;
        }
        if (c->loop) qk_io_loop_kick(c->loop);
        any = true;
    }
    return any;
}

static bool app(void *ctx, qk_endpoint *ep, qk_time now)
{
    (void)ctx;
    qk_event ev;
    while (qk_endpoint_poll_event(ep, &ev)) {
        if (ev.type == QK_EV_CONNECTED) {
            R.connected++;
        } else if (ev.type == QK_EV_CLOSED) {
            R.closed++;
            if (!R.holding) {
                R.failed++;
                fprintf(stderr, "bench_conns: closed: %s (error %d)\n", ev.reason, ev.reason_err);
            }
        }
    }
    bool more = start_more(now);
    if (R.connected + R.failed == R.want && !R.holding) {
        R.holding = true;
        qk_io_loop_break(R.main_loop);
    }
    return more;
}

static void on_timer(struct ev_loop *evl, ev_timer *w, int revents)
{
    (void)evl;
    (void)w;
    (void)revents;
    qk_io_loop_break(R.main_loop);
}

static int open_client(client *c, const qk_config *cfg, const qk_addr *peer, struct ev_loop *evl)
{
    qk_addr bind = {0};
    bind.ss.ss_family = peer->ss.ss_family;
    bind.len = peer->len;
    if (qk_udp_open(&bind, QK_UDP_NO_GRO, &c->udp)) return -1;
    c->ep = qk_endpoint_new(cfg);
    if (!c->ep) return -1;
    if (qk_io_ep_driver_new(c->ep, cfg->max_udp_payload_bytes, app, NULL, &c->drv)) return -1;
    qk_io_loop_config lc = {.ev = evl, .buf_bytes = 2048};
    return qk_io_ep_driver_loop_new(c->drv, c->udp, &lc, &c->loop) ? -1 : 0;
}

/* Run the shared loop until break; TIMEOUT bounds it. */
static void run_loop(client *cs, size_t n, double secs)
{
    struct ev_loop *evl = qk_io_loop_ev(cs[0].loop);
    ev_timer t;
    ev_timer_init(&t, on_timer, secs, 0.0);
    ev_timer_start(evl, &t);
    for (size_t i = 1; i < n; i++) qk_io_loop_kick(cs[i].loop);
    qk_io_loop_run(cs[0].loop);
    ev_timer_stop(evl, &t);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_conns HOST:PORT [CONNS] [SOCKETS] [HOLD] [TIMEOUT]\n");
        return 2;
    }
    qk_addr peer;
    if (qk_addr_parse(argv[1], &peer)) return 2;
    R.want = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
    size_t ns = argc > 3 ? strtoul(argv[3], NULL, 10) : 100;
    double hold = argc > 4 ? atof(argv[4]) : 1.0, timeout = argc > 5 ? atof(argv[5]) : 60.0;
    if (ns < 1 || ns > MAX_SOCKETS || ns > R.want) return 2;
    qk_config cfg;
    qk_config_default(&cfg);
    cfg.alpn[0] = "h3";
    cfg.alpn_count = 1;
    cfg.insecure = true;
    cfg.rng = rng;
    cfg.idle_timeout_ns = (qk_time)((timeout + hold + 10) * 1e9);
    cfg.handshake_timeout_ns = (qk_time)(timeout * 1e9);
    client *cs = calloc(ns, sizeof *cs);
    struct ev_loop *evl = ev_loop_new(EVFLAG_AUTO);
    if (!cs || !evl) return 1;
    for (size_t i = 0; i < ns; i++)
        if (open_client(&cs[i], &cfg, &peer, evl)) {
            fprintf(stderr, "bench_conns: cannot open client socket %zu\n", i);
            return 1;
        }
    R.main_loop = cs[0].loop;
    R.t0 = (double)qk_io_now() / 1e9;
    R.cs = cs;
    R.ns = ns;
    R.peer = peer;
    start_more(qk_io_now());
    run_loop(cs, ns, timeout);
    double t = (double)qk_io_now() / 1e9 - R.t0;
    printf("conns: connected %zu of %zu in %.2f s, failed %zu\n", R.connected, R.want, t, R.failed);
    fflush(stdout);
    if (R.connected == R.want) run_loop(cs, ns, hold); /* all open at once for HOLD s */
    for (size_t i = 0; i < ns; i++) {
        qk_io_loop_del(cs[i].loop);
        qk_io_ep_driver_del(cs[i].drv);
        qk_endpoint_del(cs[i].ep);
        qk_udp_close(cs[i].udp);
    }
    ev_loop_destroy(evl);
    free(cs);
    return R.connected == R.want ? 0 : 1;
}
