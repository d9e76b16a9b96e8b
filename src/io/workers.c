/* SPDX-License-Identifier: MIT */
/* N worker threads, one endpoint + loop + SO_REUSEPORT socket each, with
 * datagrams steered to the worker whose index their DCID carries (see
 * include/quack/workers.h). */
#include <quack/workers.h>

#include <errno.h>
#include <ev.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <quack/quiclb.h>

#include "base/abi.h"
#include "io/workers_bpf.h"
#include "transport/endpoint/endpoint.h"
#include "transport/streams/strbuf.h"

#define STEER_QUEUE_MAX 4096 /* datagrams waiting for one owner */
/* qk_workers_app crosses the boundary at the caller's sizeof (base/abi.h). */
#define WORKERS_APP_V1_BYTES QK_ABI_END(qk_workers_app, user)
QK_ABI_LAST_FIELD(qk_workers_app, user);

typedef struct steer_item {
    qk_datagram d; /* d.data points just after the item */
} steer_item;

typedef struct worker {
    struct qk_workers *w;
    unsigned idx;
    qk_config cfg; /* this worker's copy (server ID) */
    qk_udp *udp;
    qk_udp *pref[2]; /* on cfg.preferred_addr_v4 / _v6 (RFC 9000 §9.6), or NULL */
    qk_endpoint *ep;
    qk_io_ep_driver *drv;
    qk_io_loop *loop;
    void *app;
    pthread_t th;
    bool th_started;
    ev_async inbox_wake;
    pthread_mutex_t lock; /* guards inbox */
    steer_item **inbox;
    size_t ninbox;
    qk_workers_stats stats; /* written by this worker's thread only */
} worker;

struct qk_workers {
    unsigned n;
    qk_workers_app app;
    qk_ticket_keys *own_tk;
    qk_addr local;
    uint8_t server_id[QK_QUICLB_MAX_SERVER_ID_BYTES]; /* ours, with cfg->quiclb */
    qk_steer_bpf *bpf[3]; /* kernel steering of the listen and preferred groups */
    int steering;         /* QK_WORKERS_STEER_* */
    const char *steer_why;
    qk_addr pref_local[2];  /* where worker 0's preferred-address sockets are bound */
    unsigned failed_socket; /* QK_WORKERS_SOCKET_* of the bind that failed */
    worker ws[QK_WORKERS_MAX];
};

/* The worker index in a QUIC-LB CID (the first nonce byte, conn/cid.c) of
 * d's DCID, or -1: not ours (another server's ID: the endpoint answers with
 * a stateless reset), too short, or another configuration
 * (draft-ietf-quic-load-balancers-21 §5.5). */
static int quiclb_worker(const worker *me, const qk_datagram *d, bool *sh)
{
    const uint8_t *p = d->data;
    size_t n = me->cfg.cid_bytes, off;
    if (d->len < 1) return -1;
    *sh = !(p[0] & 0x80); /* RFC 9000 §17.2: header form bit */
    if (*sh) {
        off = 1; /* RFC 9000 §17.3.1: the DCID follows the first byte */
    } else {
        if (d->len < 6 || p[5] != n) return -1; /* RFC 9000 §17.2: version, DCID length */
        off = 6;
    }
    if (d->len < off + n) return -1;
    uint8_t sid[QK_QUICLB_MAX_SERVER_ID_BYTES], nonce[QK_QUICLB_MAX_NONCE_BYTES];
    int sid_len = qk_quiclb_decode(me->cfg.quiclb, p + off, n, sid, nonce);
    if (sid_len < 0 || memcmp(sid, me->w->server_id, (size_t)sid_len)) return -1;
    return nonce[0];
}

/* In the receiving worker's thread: hand d to the worker its DCID names. */
static bool steer(void *ctx, const qk_datagram *d, qk_time now)
{
    (void)now;
    worker *me = ctx;
    qk_workers *w = me->w;
    me->stats.rx_datagrams++;
    bool sh = false;
    int id = me->cfg.quiclb ? quiclb_worker(me, d, &sh)
                            : qk_cid_server_id(d->data, d->len, me->cfg.cid_bytes, &sh);
    if (id < 0 || (unsigned)id == me->idx || (unsigned)id >= w->n) return false;
    worker *to = &w->ws[id];
    steer_item *it = malloc(sizeof *it + d->len);
    if (!it) {
        me->stats.steer_dropped++;
        return true;
    }
    it->d = *d;
    it->d.data = (uint8_t *)(it + 1);
    memcpy(it->d.data, d->data, d->len);
    pthread_mutex_lock(&to->lock);
    bool ok = to->ninbox < STEER_QUEUE_MAX;
    if (ok) to->inbox[to->ninbox++] = it;
    pthread_mutex_unlock(&to->lock);
    if (!ok) {
        free(it);
        me->stats.steer_dropped++;
        return true;
    }
    if (sh)
        me->stats.steered_short++;
    else
        me->stats.steered_long++;
    ev_async_send(qk_io_loop_ev(to->loop), &to->inbox_wake);
    return true;
}

/* In the owner's thread: take the steered datagrams, feed them, send. */
static void on_inbox(struct ev_loop *evl, ev_async *a, int revents)
{
    (void)evl;
    (void)revents;
    worker *me = a->data;
    steer_item *batch[256];
    for (;;) {
        size_t n = 0;
        pthread_mutex_lock(&me->lock);
        n = me->ninbox < 256 ? me->ninbox : 256;
        memcpy(batch, me->inbox, n * sizeof *batch);
        memmove(me->inbox, me->inbox + n, (me->ninbox - n) * sizeof *batch);
        me->ninbox -= n;
        pthread_mutex_unlock(&me->lock);
        if (!n) break;
        qk_time now = qk_io_now();
        for (size_t i = 0; i < n; i++) {
            qk_endpoint_recv(me->ep, &batch[i]->d, now);
            free(batch[i]);
        }
        if (me->w->app.step) me->w->app.step(me->app, me->ep, now);
    }
    qk_io_loop_kick(me->loop); /* send what the datagrams asked for, re-arm the timer */
}

/* Where a preferred-address socket binds: a dual-stack (IPv6) listener sees
 * IPv4 clients v4-mapped, so an IPv4 preferred address becomes ::ffff:a.b.c.d. */
static qk_addr pref_bind_addr(const qk_addr *listen, const qk_addr *a)
{
    qk_addr b = *a;
    if (listen->ss.ss_family == AF_INET6) qk_addr_map_v4(&b, &b);
    return b;
}

/* The worker's sockets: the listen address, then each preferred address
 * of k->cfg (RFC 9000 §9.6), all SO_REUSEPORT with several workers. Worker 0
 * binds first (port 0 picks a port); the others bind where it did, and
 * every endpoint advertises the address worker 0 got. */
static int open_sockets(qk_workers *w, worker *k, const qk_addr *bind, unsigned flags)
{
    unsigned rp = w->n > 1 ? QK_UDP_REUSEPORT : 0;
    qk_addr at = k->idx > 0 ? w->local : *bind;
    w->failed_socket = QK_WORKERS_SOCKET_LISTEN;
    int rc = qk_udp_open(&at, flags | rp, &k->udp);
    if (rc) return rc;
    if (k->idx == 0) qk_udp_local_addr(k->udp, &w->local);
    qk_addr *pref[2] = {&k->cfg.preferred_addr_v4, &k->cfg.preferred_addr_v6};
    for (unsigned i = 0; i < 2; i++) {
        if (!pref[i]->len) continue;
        w->failed_socket = QK_WORKERS_SOCKET_PREFERRED_V4 + i;
        at = k->idx > 0 ? w->pref_local[i] : pref_bind_addr(bind, pref[i]);
        unsigned f = (flags & ~(unsigned)QK_UDP_DUALSTACK) |
                     (at.ss.ss_family == AF_INET6 ? QK_UDP_DUALSTACK : 0);
        if ((rc = qk_udp_open(&at, f | rp, &k->pref[i]))) return rc;
        if (k->idx == 0) qk_udp_local_addr(k->pref[i], &w->pref_local[i]);
        *pref[i] = w->pref_local[i]; /* what the transport parameter advertises */
    }
    w->failed_socket = QK_WORKERS_SOCKET_NONE;
    return 0;
}

static int worker_init(qk_workers *w, worker *k, const qk_config *cfg, const qk_addr *bind,
                       unsigned flags)
{
    k->cfg = *cfg;
    k->cfg.cid_encode_server_id = w->n > 1;
    k->cfg.cid_server_id = (uint8_t)k->idx;
    if (pthread_mutex_init(&k->lock, NULL)) return QK_ERR_NOMEM;
    k->inbox = calloc(STEER_QUEUE_MAX, sizeof *k->inbox);
    if (!k->inbox) return QK_ERR_NOMEM;
    int rc = open_sockets(w, k, bind, flags);
    if (rc) return rc;
    k->ep = qk_endpoint_new(&k->cfg);
    if (!k->ep) return qk_config_check(&k->cfg, NULL, 0) ? QK_ERR_CONFIG : QK_ERR_NOMEM;
    k->app = w->app.start ? w->app.start(w->app.user, k->idx, k->ep) : NULL;
    if (w->app.start && !k->app) return QK_ERR_NOMEM;
    rc = qk_io_ep_driver_new(k->ep, k->cfg.max_udp_payload_bytes, w->app.step, k->app, &k->drv);
    if (rc) return rc;
    qk_io_ep_driver_set_steer(k->drv, steer, k);
    rc = qk_io_ep_driver_loop_new(k->drv, k->udp, NULL, &k->loop);
    for (unsigned i = 0; i < 2 && !rc; i++)
        if (k->pref[i]) rc = qk_io_loop_add_udp(k->loop, k->pref[i]);
    if (rc) return rc;
    ev_async_init(&k->inbox_wake, on_inbox);
    k->inbox_wake.data = k;
    ev_async_start(qk_io_loop_ev(k->loop), &k->inbox_wake);
    return 0;
}

/* Shared secrets: one ticket-key set (and anti-replay store), one static key. */
static int share_secrets(qk_workers *w, qk_config *cfg)
{
    uint8_t zero[sizeof cfg->static_key] = {0};
    if (!memcmp(cfg->static_key, zero, sizeof zero) && cfg->rng)
        cfg->rng(cfg->rng_ctx, cfg->static_key, sizeof cfg->static_key);
    if (cfg->server && cfg->session_tickets && !cfg->ticket_keys) {
        int err = 0;
        w->own_tk = qk_ticket_keys_new(cfg->ticket_lifetime_ns, 0, &err);
        if (!w->own_tk) return err ? err : QK_ERR_NOMEM;
        cfg->ticket_keys = w->own_tk;
    }
    return 0;
}

/* Where our DCIDs carry the worker index, for the kernel program: false
 * when it cannot read it (encrypted QUIC-LB CIDs). */
static bool steer_where(const qk_workers *w, const qk_config *cfg, qk_steer_where *out)
{
    *out = (qk_steer_where){.n_workers = w->n, .idx_off = 1, .first_mask = 0xff};
    if (!cfg->quiclb) { /* conn/cid.c: length self-description, then the index */
        out->first_val = (uint8_t)((cfg->cid_bytes - 1) & 0x1f);
        return true;
    }
    /* draft-ietf-quic-load-balancers-21 §5.2: plaintext when a known nonce
     * and the server ID come out in clear. */
    size_t nl = qk_quiclb_nonce_bytes(cfg->quiclb), sl = cfg->cid_bytes - 1 - nl;
    uint8_t nonce[QK_QUICLB_MAX_NONCE_BYTES] = {0}, a[QK_QUICLB_MAX_CID_BYTES];
    uint8_t b[QK_QUICLB_MAX_CID_BYTES];
    if (qk_quiclb_encode_nonce(cfg->quiclb, NULL, nonce, 0x00, a, sizeof a) < 0 ||
        qk_quiclb_encode_nonce(cfg->quiclb, NULL, nonce, 0x1f, b, sizeof b) < 0 ||
        memcmp(a + 1, w->server_id, sl) || memcmp(a + 1 + sl, nonce, nl))
        return false;
    out->idx_off = (uint32_t)(1 + sl);            /* the first nonce byte (conn/cid.c) */
    out->first_mask = a[0] == b[0] ? 0xff : 0xe0; /* §3.3: length, or random bits */
    out->first_val = a[0] & out->first_mask;
    return true;
}

/* SO_ATTACH_REUSEPORT_EBPF on the listen group and each preferred one; on
 * any failure the user-space steering alone (and the reason kept). */
static void attach_bpf(qk_workers *w, const qk_config *cfg, bool off)
{
    qk_steer_where where;
    w->steering = w->n > 1 ? QK_WORKERS_STEER_USER : QK_WORKERS_STEER_NONE;
    if (w->n < 2) return;
    if (off) {
        w->steer_why = "kernel steering turned off";
        return;
    }
    if (!steer_where(w, cfg, &where)) {
        w->steer_why = "encrypted QUIC-LB CIDs cannot be read by the kernel program";
        return;
    }
    for (unsigned g = 0; g < 3; g++) {
        int fds[QK_WORKERS_MAX];
        for (unsigned i = 0; i < w->n; i++) {
            qk_udp *u = g == 0 ? w->ws[i].udp : w->ws[i].pref[g - 1];
            fds[i] = u ? qk_udp_fd(u) : -1;
        }
        if (fds[0] < 0) continue;
        if (qk_steer_bpf_attach(fds, w->n, &where, &w->bpf[g], &w->steer_why)) {
            for (unsigned k = 0; k < g; k++) qk_steer_bpf_free(w->bpf[k]);
            memset(w->bpf, 0, sizeof w->bpf);
            return;
        }
    }
    w->steering = QK_WORKERS_STEER_KERNEL;
    w->steer_why = "SO_ATTACH_REUSEPORT_EBPF";
}

int qk_workers_steering(const qk_workers *w, const char **why)
{
    if (why) *why = w->steer_why ? w->steer_why : "one worker";
    return w->steering;
}

int qk_workers_new_ex_sized(const qk_config *cfg, size_t cfg_bytes, const qk_addr *bind,
                            unsigned udp_flags, unsigned n, const qk_workers_app *app,
                            size_t app_bytes, unsigned *failed_socket, qk_workers **out)
{
    if (failed_socket) *failed_socket = QK_WORKERS_SOCKET_NONE;
    if (!cfg || !bind || !out || n < 1 || n > QK_WORKERS_MAX) return QK_ERR_INVALID_ARG;
    int check = qk_config_check_sized(cfg, cfg_bytes, NULL, 0);
    if (check) return check == QK_ERR_UNSUPPORTED ? check : QK_ERR_CONFIG;
    qk_workers_app a = {0};
    if (app && qk_abi_copy_in(&a, sizeof a, app, app_bytes, WORKERS_APP_V1_BYTES))
        return QK_ERR_INVALID_ARG;
    bool no_bpf = udp_flags & QK_WORKERS_NO_BPF;
    udp_flags &= ~(unsigned)QK_WORKERS_NO_BPF;
    qk_workers *w = calloc(1, sizeof *w);
    if (!w) return QK_ERR_NOMEM;
    w->n = n;
    w->app = a;
    qk_config shared;
    qk_config_import(&shared, cfg, cfg_bytes);
    int rc = share_secrets(w, &shared);
    if (!rc && shared.quiclb) { /* our server ID: what our CIDs decode to */
        uint8_t cid[QK_QUICLB_MAX_CID_BYTES], nonce[QK_QUICLB_MAX_NONCE_BYTES];
        int len =
            qk_quiclb_encode(shared.quiclb, NULL, shared.rng, shared.rng_ctx, cid, sizeof cid);
        if (len < 0 || qk_quiclb_decode(shared.quiclb, cid, (size_t)len, w->server_id, nonce) < 0)
            rc = QK_ERR_CONFIG;
    }
    for (unsigned i = 0; i < n && !rc; i++) {
        w->ws[i].w = w;
        w->ws[i].idx = i;
        rc = worker_init(w, &w->ws[i], &shared, bind, udp_flags);
    }
    if (rc) {
        if (failed_socket) *failed_socket = w->failed_socket;
        qk_workers_del(w);
        return rc;
    }
    attach_bpf(w, &shared, no_bpf);
    *out = w;
    return 0;
}

void qk_workers_local_addr(const qk_workers *w, qk_addr *out)
{
    *out = w->local;
}

bool qk_workers_preferred_addr(const qk_workers *w, unsigned family, qk_addr *out)
{
    if (family > 1 || !w->pref_local[family].len) return false;
    *out = w->pref_local[family];
    return true;
}

static void *worker_main(void *arg)
{
    worker *k = arg;
    qk_io_loop_run(k->loop);
    qk_strbuf_pool_trim(); /* this thread's cache of stream blocks dies with it */
    return NULL;
}

int qk_workers_run(qk_workers *w)
{
    int rc = 0;
    /* Signals go to worker 0 (this thread): the others block them. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (unsigned i = 1; i < w->n; i++) {
        if (pthread_create(&w->ws[i].th, NULL, worker_main, &w->ws[i])) {
            rc = QK_ERR_STATE;
            break;
        }
        w->ws[i].th_started = true;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!rc) {
        qk_io_loop_stop_on_signal(w->ws[0].loop, SIGINT);
        qk_io_loop_stop_on_signal(w->ws[0].loop, SIGTERM);
        rc = qk_io_loop_run(w->ws[0].loop);
    }
    qk_workers_break(w);
    for (unsigned i = 1; i < w->n; i++)
        if (w->ws[i].th_started) {
            pthread_join(w->ws[i].th, NULL);
            w->ws[i].th_started = false;
        }
    for (unsigned i = 0; i < w->n; i++)
        if (w->app.stop && w->ws[i].app) {
            w->app.stop(w->app.user, i, w->ws[i].app);
            w->ws[i].app = NULL;
        }
    return rc;
}

void qk_workers_break(qk_workers *w)
{
    for (unsigned i = 0; i < w->n; i++)
        if (w->ws[i].loop) qk_io_loop_break(w->ws[i].loop);
}

qk_endpoint *qk_workers_endpoint(qk_workers *w, unsigned i)
{
    return i < w->n ? w->ws[i].ep : NULL;
}

qk_io_loop *qk_workers_loop(qk_workers *w, unsigned i)
{
    return i < w->n ? w->ws[i].loop : NULL;
}

unsigned qk_workers_count(const qk_workers *w)
{
    return w->n;
}

void qk_workers_get_stats_sized(const qk_workers *w, unsigned i, qk_workers_stats *out,
                                size_t out_bytes)
{
    qk_workers_stats sum = {0};
    for (unsigned k = 0; k < w->n; k++) {
        if (i != UINT32_MAX && k != i) continue;
        const qk_workers_stats *s = &w->ws[k].stats;
        sum.steered_short += s->steered_short;
        sum.steered_long += s->steered_long;
        sum.steer_dropped += s->steer_dropped;
        sum.rx_datagrams += s->rx_datagrams;
    }
    qk_abi_copy_out(out, out_bytes, &sum, sizeof sum);
}

static void worker_free(worker *k)
{
    if (k->loop) {
        ev_async_stop(qk_io_loop_ev(k->loop), &k->inbox_wake);
        qk_io_loop_del(k->loop);
    }
    qk_io_ep_driver_del(k->drv);
    qk_endpoint_del(k->ep);
    if (k->udp) qk_udp_close(k->udp);
    qk_udp_close(k->pref[0]);
    qk_udp_close(k->pref[1]);
    if (k->inbox) {
        for (size_t i = 0; i < k->ninbox; i++) free(k->inbox[i]);
        free(k->inbox);
        pthread_mutex_destroy(&k->lock);
    }
}

void qk_workers_del(qk_workers *w)
{
    if (!w) return;
    for (unsigned i = 0; i < w->n; i++) {
        worker *k = &w->ws[i];
        if (k->app && w->app.stop) w->app.stop(w->app.user, i, k->app);
        k->app = NULL;
        worker_free(k);
    }
    for (unsigned g = 0; g < 3; g++) qk_steer_bpf_free(w->bpf[g]);
    qk_ticket_keys_del(w->own_tk);
    free(w);
}
