/* SPDX-License-Identifier: MIT */
/* A libev loop driving a sans-I/O driver over one qk_udp socket (or up to
 * QK_IO_LOOP_MAX_SOCKETS, qk_io_loop_add_udp): readable -> recv batch -> on_datagrams; then drain
 * poll_send -> sendmmsg on the socket of each datagram's local address
 * (park the rest and wait for EV_WRITE when the socket would block); one
 * timer re-armed from next_timeout. */
#include "io/loop.h"
#include "io/udp.h"

#include "base/abi.h"

#include <arpa/inet.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One socket of the loop and its watchers. */
typedef struct loop_sock {
    qk_udp *udp;
    ev_io rio, wio;
    struct qk_io_loop *l;
    qk_addr local; /* the bound address */
    bool any;      /* bound to 0.0.0.0 / :: (its datagrams name the address by pktinfo) */
} loop_sock;

struct qk_io_loop {
    struct ev_loop *ev;
    bool own_ev;
    loop_sock **socks; /* [0]: the one given to qk_io_loop_new; each its own allocation */
    size_t n_socks, cap_socks;
    loop_sock *last;    /* the socket sock_for found last (a server's sends go in runs) */
    loop_sock *blocked; /* the socket a parked batch waits for */
    qk_io_driver_ops ops;
    void *ctx;

    ev_timer timer;
    ev_async wake;
    ev_signal sigs[QK_IO_LOOP_MAX_SIGNALS];
    size_t nsigs;
    int stop_signal;

    size_t recv_batch, send_batch, buf_bytes;
    uint8_t *rbuf, *sbuf;
    qk_datagram *rx;          /* recv_batch entries */
    qk_datagram *split;       /* QK_IO_LOOP_SPLIT_MAX entries */
    qk_datagram *tx;          /* send_batch entries */
    size_t tx_head, tx_count; /* parked entries [tx_head, tx_count) */

    qk_time armed_deadline;
    bool running, in_flush;
    atomic_bool stop; /* set by qk_io_loop_break from any thread */
    qk_io_loop_stats stats;
};

qk_time qk_io_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (qk_time)ts.tv_sec * QK_NS_PER_S + (qk_time)ts.tv_nsec;
}

/* ------------------------------------------------------------------------ */
/* Receive path                                                             */
/* ------------------------------------------------------------------------ */

/* Hand datagrams to the driver with GRO batches split into single ones,
 * at most QK_IO_LOOP_SPLIT_MAX per call. */
static void deliver(qk_io_loop *l, size_t n, qk_time now)
{
    size_t k = 0;
    for (size_t i = 0; i < n && !l->stop; i++) {
        const qk_datagram *d = &l->rx[i];
        if (d->len == 0) continue; /* truncated, dropped by qk_udp_recv */
        size_t segs = qk_datagram_segment_count(d);
        for (size_t s = 0; s < segs; s++) {
            qk_datagram_segment(d, s, &l->split[k++]);
            if (k == QK_IO_LOOP_SPLIT_MAX) {
                l->ops.on_datagrams(l->ctx, l->split, k, now);
                l->stats.rx_datagrams += k;
                k = 0;
            }
        }
    }
    if (k) {
        l->ops.on_datagrams(l->ctx, l->split, k, now);
        l->stats.rx_datagrams += k;
    }
}

static void read_socket(qk_io_loop *l, qk_udp *u)
{
    for (int round = 0; round < QK_IO_LOOP_READ_ROUNDS && !l->stop; round++) {
        for (size_t i = 0; i < l->recv_batch; i++) {
            l->rx[i].data = l->rbuf + i * l->buf_bytes;
            l->rx[i].len = l->buf_bytes;
        }
        int r = qk_udp_recv(u, l->rx, l->recv_batch);
        if (r <= 0) break; /* QK_ERR_AGAIN, or an error the next readiness retries */
        deliver(l, (size_t)r, qk_io_now());
        if ((size_t)r < l->recv_batch) break;
    }
}

/* ------------------------------------------------------------------------ */
/* Send path                                                                */
/* ------------------------------------------------------------------------ */

/* The socket a datagram leaves from: the one bound to its local address,
 * else a wildcard one on that port and family, else the first. */
static bool sock_serves(const loop_sock *s, const qk_datagram *d, bool exact)
{
    if (exact) return qk_addr_equal(&d->local, &s->local);
    return s->any && s->local.ss.ss_family == d->local.ss.ss_family &&
           qk_addr_port(&s->local) == qk_addr_port(&d->local);
}

/* The cached socket may be a wildcard one although another is bound to
 * the exact address: only when both share a port (SO_REUSEADDR), which the
 * loop's users do not do. */
static loop_sock *sock_for(qk_io_loop *l, const qk_datagram *d)
{
    if (l->n_socks == 1 || d->local.len == 0) return l->socks[0];
    if (l->last && (sock_serves(l->last, d, true) || sock_serves(l->last, d, false)))
        return l->last;
    for (int exact = 1; exact >= 0; exact--)
        for (size_t i = 0; i < l->n_socks; i++)
            if (sock_serves(l->socks[i], d, exact)) return l->last = l->socks[i];
    return l->socks[0];
}

/* Send parked entries, each run of entries for one socket with one call.
 * Returns false when a socket would block (l->blocked). */
static bool send_parked(qk_io_loop *l)
{
    while (l->tx_head < l->tx_count) {
        loop_sock *s = sock_for(l, &l->tx[l->tx_head]);
        size_t run = 1;
        while (l->tx_head + run < l->tx_count && sock_for(l, &l->tx[l->tx_head + run]) == s) run++;
        int r = qk_udp_send(s->udp, l->tx + l->tx_head, run);
        if (r == QK_ERR_AGAIN) {
            l->stats.send_blocked++;
            l->blocked = s;
            return false;
        }
        if (r < 0) {
            /* UDP is lossy: a datagram the kernel refuses (EMSGSIZE, no route,
             * ENOBUFS) is dropped; QUIC loss recovery repairs it. */
            l->stats.tx_dropped++;
            l->tx_head++;
            continue;
        }
        l->stats.tx_entries += (uint64_t)r;
        l->tx_head += (size_t)r;
    }
    l->tx_head = l->tx_count = 0;
    return true;
}

static void flush(qk_io_loop *l)
{
    if (l->in_flush) return;
    l->in_flush = true;
    while (!l->stop) {
        if (l->tx_count && !send_parked(l)) {
            ev_io_start(l->ev, &l->blocked->wio);
            break;
        }
        qk_time now = qk_io_now();
        for (size_t i = 0; i < l->send_batch; i++) {
            qk_datagram *d = &l->tx[i];
            d->data = l->sbuf + i * l->buf_bytes;
            d->len = l->buf_bytes;
            d->local.len = 0;
            d->peer.len = 0;
            d->ecn = QK_ECN_NOT_ECT;
            d->segment_bytes = 0;
        }
        size_t n = l->ops.poll_send(l->ctx, l->tx, l->send_batch, now);
        if (n == 0) break;
        if (n > l->send_batch) n = l->send_batch;
        l->tx_head = 0;
        l->tx_count = n;
    }
    l->in_flush = false;
}

/* ------------------------------------------------------------------------ */
/* Timer                                                                    */
/* ------------------------------------------------------------------------ */

static void rearm(qk_io_loop *l)
{
    if (l->stop) return;
    qk_time dl = l->ops.next_timeout(l->ctx);
    if (dl == l->armed_deadline && (dl == QK_TIME_INFINITE || ev_is_active(&l->timer))) return;
    ev_timer_stop(l->ev, &l->timer);
    l->armed_deadline = dl;
    if (dl == QK_TIME_INFINITE) return;
    qk_time now = qk_io_now();
    double after = dl > now ? (double)(dl - now) / (double)QK_NS_PER_S : 0.0;
    /* libev measures from its cached ev_now(); refresh it so the timer does
     * not fire early by the time spent in this iteration. */
    ev_now_update(l->ev);
    ev_timer_set(&l->timer, after, 0.0);
    ev_timer_start(l->ev, &l->timer);
}

/* After any event: send what the driver has and re-arm its timer. */
static void settle(qk_io_loop *l)
{
    flush(l);
    rearm(l);
}

/* ------------------------------------------------------------------------ */
/* libev callbacks                                                          */
/* ------------------------------------------------------------------------ */

/* ICMP errors the socket queued (QK_UDP_RECVERR), before the datagrams:
 * the driver may fail a connection attempt at once. */
static void read_errors(qk_io_loop *l, qk_udp *u)
{
    qk_udp_error e;
    for (int i = 0; i < 64 && qk_udp_recv_error(u, &e) == 0; i++)
        if (l->ops.on_error) l->ops.on_error(l->ctx, &e, qk_io_now());
}

static void on_readable(struct ev_loop *ev, ev_io *w, int revents)
{
    loop_sock *s = w->data;
    qk_io_loop *l = s->l;
    l->stats.wakeups++;
    read_errors(l, s->udp);
    read_socket(l, s->udp);
    settle(l);
}

static void on_writable(struct ev_loop *ev, ev_io *w, int revents)
{
    qk_io_loop *l = ((loop_sock *)w->data)->l;
    l->stats.wakeups++;
    ev_io_stop(ev, w);
    settle(l); /* flush() re-starts wio if it still blocks */
}

static void on_timer(struct ev_loop *ev, ev_timer *w, int revents)
{
    qk_io_loop *l = w->data;
    l->stats.wakeups++;
    l->armed_deadline = QK_TIME_INFINITE;
    qk_time now = qk_io_now();
    qk_time dl = l->ops.next_timeout(l->ctx);
    if (dl != QK_TIME_INFINITE && now >= dl) {
        l->stats.timeouts++;
        l->ops.on_timeout(l->ctx, now);
    }
    settle(l);
}

static void on_wake(struct ev_loop *ev, ev_async *w, int revents)
{
    qk_io_loop *l = w->data;
    if (l->stop) ev_break(ev, EVBREAK_ALL);
}

static void on_signal(struct ev_loop *ev, ev_signal *w, int revents)
{
    qk_io_loop *l = w->data;
    l->stop_signal = w->signum;
    l->stop = true;
    ev_break(ev, EVBREAK_ALL);
}

/* ------------------------------------------------------------------------ */
/* Lifecycle                                                                */
/* ------------------------------------------------------------------------ */

/* qk_io_loop_config and qk_io_driver_ops cross the boundary at the caller's
 * sizeof (base/abi.h): the first release's end with ev and on_error. */
#define LOOP_CONFIG_V1_BYTES QK_ABI_END(qk_io_loop_config, ev)
QK_ABI_LAST_FIELD(qk_io_loop_config, ev);
#define DRIVER_OPS_V1_BYTES QK_ABI_END(qk_io_driver_ops, on_error)
QK_ABI_LAST_FIELD(qk_io_driver_ops, on_error);

static int apply_config(qk_io_loop *l, const qk_io_loop_config *cfg, size_t cfg_bytes)
{
    qk_io_loop_config c = {0};
    if (cfg) {
        int rc = qk_abi_copy_in(&c, sizeof c, cfg, cfg_bytes, LOOP_CONFIG_V1_BYTES);
        if (rc) return rc;
    }
    l->recv_batch = c.recv_batch ? c.recv_batch : QK_IO_LOOP_RECV_BATCH;
    l->send_batch = c.send_batch ? c.send_batch : QK_IO_LOOP_SEND_BATCH;
    l->buf_bytes = c.buf_bytes ? c.buf_bytes : QK_IO_LOOP_BUF_BYTES;
    if (l->recv_batch > QK_UDP_BATCH_MAX || l->send_batch > QK_UDP_BATCH_MAX ||
        l->buf_bytes > QK_UDP_MAX_PAYLOAD_BYTES)
        return QK_ERR_INVALID_ARG;
    l->ev = c.ev;
    return 0;
}

static int alloc_buffers(qk_io_loop *l)
{
    l->rbuf = malloc(l->recv_batch * l->buf_bytes);
    l->sbuf = malloc(l->send_batch * l->buf_bytes);
    l->rx = calloc(l->recv_batch, sizeof(*l->rx));
    l->split = calloc(QK_IO_LOOP_SPLIT_MAX, sizeof(*l->split));
    l->tx = calloc(l->send_batch, sizeof(*l->tx));
    return (l->rbuf && l->sbuf && l->rx && l->split && l->tx) ? 0 : QK_ERR_NOMEM;
}

/* Watch socket u as s. */
static void sock_watch(qk_io_loop *l, loop_sock *s, qk_udp *u)
{
    s->udp = u;
    s->l = l;
    qk_udp_local_addr(u, &s->local);
    qk_addr any = s->local;
    if (any.ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&any.ss)->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (any.ss.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&any.ss)->sin6_addr = in6addr_any;
    s->any = qk_addr_equal(&any, &s->local);
    ev_io_init(&s->rio, on_readable, qk_udp_fd(u), EV_READ);
    ev_io_init(&s->wio, on_writable, qk_udp_fd(u), EV_WRITE);
    s->rio.data = s->wio.data = s;
    ev_io_start(l->ev, &s->rio);
}

/* Watch socket u as l->socks[l->n_socks]. Returns 0 or QK_ERR_NOMEM. */
static int sock_add(qk_io_loop *l, qk_udp *u)
{
    if (l->n_socks == l->cap_socks) {
        size_t cap = l->cap_socks ? 2 * l->cap_socks : 4;
        loop_sock **a = realloc(l->socks, cap * sizeof *a);
        if (!a) return QK_ERR_NOMEM;
        l->socks = a;
        l->cap_socks = cap;
    }
    loop_sock *s = calloc(1, sizeof *s);
    if (!s) return QK_ERR_NOMEM;
    l->socks[l->n_socks++] = s;
    sock_watch(l, s, u);
    return 0;
}

int qk_io_loop_new_sized(qk_udp *u, const qk_io_driver_ops *caller_ops, size_t ops_bytes, void *ctx,
                         const qk_io_loop_config *cfg, size_t cfg_bytes, qk_io_loop **out)
{
    qk_io_driver_ops ops = {0};
    if (!u || !caller_ops || !out) return QK_ERR_INVALID_ARG;
    int rc = qk_abi_copy_in(&ops, sizeof ops, caller_ops, ops_bytes, DRIVER_OPS_V1_BYTES);
    if (rc) return rc;
    if (!ops.on_datagrams || !ops.poll_send || !ops.next_timeout || !ops.on_timeout)
        return QK_ERR_INVALID_ARG;
    qk_io_loop *l = calloc(1, sizeof(*l));
    if (!l) return QK_ERR_NOMEM;
    l->ops = ops;
    l->ctx = ctx;
    l->armed_deadline = QK_TIME_INFINITE;
    rc = apply_config(l, cfg, cfg_bytes);
    qk_udp_caps caps;
    qk_udp_get_caps(u, &caps);
    /* A GRO batch larger than the buffer would be truncated and dropped. */
    if (rc == 0 && caps.gro && l->buf_bytes < QK_UDP_MAX_PAYLOAD_BYTES) rc = QK_ERR_INVALID_ARG;
    if (rc == 0) rc = alloc_buffers(l);
    if (rc == 0 && !l->ev) {
        l->ev = ev_loop_new(EVFLAG_AUTO);
        l->own_ev = true;
        if (!l->ev) rc = QK_ERR_NOMEM;
    }
    if (rc < 0) {
        qk_io_loop_del(l);
        return rc;
    }
    ev_timer_init(&l->timer, on_timer, 0.0, 0.0);
    ev_async_init(&l->wake, on_wake);
    l->timer.data = l->wake.data = l;
    /* Watchers live from creation so several loops can share one ev_loop. */
    rc = sock_add(l, u);
    if (rc < 0) {
        qk_io_loop_del(l);
        return rc;
    }
    ev_async_start(l->ev, &l->wake);
    *out = l;
    return 0;
}

void qk_io_loop_del(qk_io_loop *l)
{
    if (!l) return;
    if (l->ev) {
        for (size_t i = 0; i < l->n_socks; i++) {
            ev_io_stop(l->ev, &l->socks[i]->rio);
            ev_io_stop(l->ev, &l->socks[i]->wio);
        }
        ev_timer_stop(l->ev, &l->timer);
        ev_async_stop(l->ev, &l->wake);
        for (size_t i = 0; i < l->nsigs; i++) ev_signal_stop(l->ev, &l->sigs[i]);
        if (l->own_ev) ev_loop_destroy(l->ev);
    }
    free(l->rbuf);
    free(l->sbuf);
    free(l->rx);
    free(l->split);
    free(l->tx);
    for (size_t i = 0; i < l->n_socks; i++) free(l->socks[i]);
    free(l->socks);
    free(l);
}

int qk_io_loop_add_udp(qk_io_loop *l, qk_udp *u)
{
    if (!l || !u) return QK_ERR_INVALID_ARG;
    for (size_t i = 0; i < l->n_socks; i++)
        if (l->socks[i]->udp == u) return QK_ERR_INVALID_ARG;
    if (l->n_socks == QK_IO_LOOP_MAX_SOCKETS) return QK_ERR_LIMIT;
    qk_udp_caps caps;
    qk_udp_get_caps(u, &caps);
    /* A GRO batch larger than the buffer would be truncated and dropped. */
    if (caps.gro && l->buf_bytes < QK_UDP_MAX_PAYLOAD_BYTES) return QK_ERR_INVALID_ARG;
    return sock_add(l, u);
}

int qk_io_loop_run(qk_io_loop *l)
{
    if (!l) return QK_ERR_INVALID_ARG;
    if (l->running) return QK_ERR_STATE;
    l->running = true;
    if (!l->stop) {
        settle(l);
        if (!l->stop) ev_run(l->ev, 0);
    }
    l->running = false;
    l->stop = false;
    return 0;
}

void qk_io_loop_break(qk_io_loop *l)
{
    if (!l) return;
    l->stop = true;
    ev_async_send(l->ev, &l->wake);
}

int qk_io_loop_replace_udp(qk_io_loop *l, qk_udp *u)
{
    if (!l || !u) return QK_ERR_INVALID_ARG;
    qk_udp_caps caps;
    qk_udp_get_caps(u, &caps);
    if (caps.gro && l->buf_bytes < QK_UDP_MAX_PAYLOAD_BYTES) return QK_ERR_INVALID_ARG;
    loop_sock *s = l->socks[0]; /* the one given to qk_io_loop_new */
    bool writing = ev_is_active(&s->wio);
    ev_io_stop(l->ev, &s->rio);
    ev_io_stop(l->ev, &s->wio);
    sock_watch(l, s, u); /* re-initialises socks[0] (address, watchers) and starts reading */
    if (writing) ev_io_start(l->ev, &s->wio);
    return 0;
}

void qk_io_loop_kick(qk_io_loop *l)
{
    if (l && !l->stop) settle(l);
}

int qk_io_loop_stop_on_signal(qk_io_loop *l, int signum)
{
    if (!l || signum <= 0) return QK_ERR_INVALID_ARG;
    if (l->nsigs == QK_IO_LOOP_MAX_SIGNALS) return QK_ERR_LIMIT;
    ev_signal *s = &l->sigs[l->nsigs++];
    ev_signal_init(s, on_signal, signum);
    s->data = l;
    ev_signal_start(l->ev, s);
    return 0;
}

int qk_io_loop_stop_signal(const qk_io_loop *l)
{
    return l->stop_signal;
}

struct ev_loop *qk_io_loop_ev(qk_io_loop *l)
{
    return l->ev;
}

void qk_io_loop_get_stats_sized(const qk_io_loop *l, qk_io_loop_stats *out, size_t out_bytes)
{
    qk_abi_copy_out(out, out_bytes, &l->stats, sizeof l->stats);
}
