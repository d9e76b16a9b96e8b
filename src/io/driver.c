/* SPDX-License-Identifier: MIT */
/* Endpoint <-> loop glue (see quack/driver.h).
 *
 * Send path: each loop buffer (64 KiB) is filled with consecutive datagrams
 * from qk_endpoint_send() to the same peer, as a UDP GSO batch: every segment
 * has the size of the first, only the last may be shorter. A datagram that
 * cannot join (other peer, larger than the first, ECN differs) is kept in a
 * carry buffer and opens the next entry, so nothing is produced twice or
 * lost. No allocation per packet. */
#include "io/driver_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/abi.h"

struct qk_io_ep_driver {
    qk_endpoint *ep;           /* the endpoint driven (not owned) */
    size_t datagram_max_bytes; /* capacity offered to qk_endpoint_send per datagram */
    qk_io_ep_app_fn app_fn;    /* may be NULL */
    void *app;                 /* passed to app_fn */
    uint8_t *carry;            /* one datagram that ended a batch (datagram_max_bytes) */
    qk_datagram carry_d;       /* the carried datagram's addresses and length */
    bool has_carry;            /* carry holds a datagram */
    qk_io_ep_stats stats;      /* counters */
    qk_io_ep_steer_fn steer;   /* offered each received datagram first, or NULL */
    void *steer_ctx;           /* passed to steer */
};

int qk_io_ep_driver_new(qk_endpoint *ep, size_t datagram_max_bytes, qk_io_ep_app_fn app_fn,
                        void *app, qk_io_ep_driver **out)
{
    if (!out || !ep || datagram_max_bytes < 1200 || datagram_max_bytes > 65527)
        return QK_ERR_INVALID_ARG;
    *out = NULL;
    qk_io_ep_driver *d = calloc(1, sizeof *d);
    if (!d) return QK_ERR_NOMEM;
    d->ep = ep;
    d->datagram_max_bytes = datagram_max_bytes;
    d->app_fn = app_fn;
    d->app = app;
    d->carry = malloc(datagram_max_bytes);
    if (!d->carry) {
        free(d);
        return QK_ERR_NOMEM;
    }
    *out = d;
    return 0;
}

void qk_io_ep_driver_del(qk_io_ep_driver *d)
{
    if (!d) return;
    free(d->carry);
    free(d);
}

void qk_io_ep_driver_set_steer(qk_io_ep_driver *d, qk_io_ep_steer_fn steer, void *steer_ctx)
{
    d->steer = steer;
    d->steer_ctx = steer_ctx;
}

void qk_io_ep_driver_get_stats_sized(const qk_io_ep_driver *d, qk_io_ep_stats *out,
                                     size_t out_bytes)
{
    qk_abi_copy_out(out, out_bytes, &d->stats, sizeof d->stats);
}

static bool run_app(qk_io_ep_driver *d, qk_time now)
{
    return d->app_fn ? d->app_fn(d->app, d->ep, now) : false;
}

static void on_datagrams(void *ctx, qk_datagram *dg, size_t n, qk_time now)
{
    qk_io_ep_driver *d = ctx;
    for (size_t i = 0; i < n; i++)
        if (!d->steer || !d->steer(d->steer_ctx, &dg[i], now)) qk_endpoint_recv(d->ep, &dg[i], now);
    d->stats.rx_datagrams += n;
    run_app(d, now);
}

/* Produce one datagram into buf (capacity cap). Returns its length, 0 when
 * the endpoint has nothing to send. */
static size_t produce(qk_io_ep_driver *d, uint8_t *buf, size_t cap, qk_datagram *meta, qk_time now)
{
    /* qk_endpoint_send sets the addresses, ecn and segment_bytes. */
    meta->data = buf;
    meta->len = cap;
    meta->segment_bytes = 0;
    if (qk_endpoint_send(d->ep, meta, 1, now) != 1) return 0;
    d->stats.tx_datagrams++;
    return meta->len;
}

/* Fill one loop entry with a batch. Returns false when nothing was produced. */
static bool fill_entry(qk_io_ep_driver *d, qk_datagram *out, qk_time now)
{
    size_t cap = out->len, used = 0, seg = 0;
    uint8_t *base = out->data;
    qk_datagram m;
    if (d->has_carry) {
        memcpy(base, d->carry, d->carry_d.len);
        m = d->carry_d;
        d->has_carry = false;
    } else if (!produce(d, base, cap < d->datagram_max_bytes ? cap : d->datagram_max_bytes, &m,
                        now)) {
        return false;
    }
    out->peer = m.peer;
    out->local = m.local;
    out->ecn = m.ecn;
    seg = m.len;
    used = m.len;
    size_t segs = 1;
    while (cap - used >= d->datagram_max_bytes && segs < 64) {
        size_t len = produce(d, base + used, d->datagram_max_bytes, &m, now);
        if (!len) break;
        if (len > seg || m.ecn != out->ecn || !qk_addr_equal(&m.peer, &out->peer)) {
            memcpy(d->carry, base + used, len);
            d->carry_d = m;
            d->carry_d.data = d->carry;
            d->has_carry = true;
            d->stats.tx_carried++;
            break;
        }
        used += len;
        segs++;
        if (len < seg) break; /* the last segment may be shorter */
    }
    out->len = used;
    out->segment_bytes = segs > 1 ? (uint16_t)seg : 0;
    d->stats.tx_batches++;
    return true;
}

static size_t poll_send(void *ctx, qk_datagram *out, size_t max, qk_time now)
{
    qk_io_ep_driver *d = ctx;
    size_t n = 0;
    bool retried = false;
    run_app(d, now);
    while (n < max) {
        if (fill_entry(d, &out[n], now)) {
            n++;
            continue;
        }
        /* Sending may have raised events (e.g. a stream became writable). */
        if (retried || !run_app(d, now)) break;
        retried = true;
    }
    return n;
}

static qk_time next_timeout(void *ctx)
{
    qk_io_ep_driver *d = ctx;
    /* A carried datagram goes out with the next poll_send (after EV_WRITE). */
    return qk_endpoint_next_timeout(d->ep);
}

static void on_timeout(void *ctx, qk_time now)
{
    qk_io_ep_driver *d = ctx;
    qk_endpoint_on_timeout(d->ep, now);
    run_app(d, now);
}

/* RFC 8085 §5.2: an ICMP port unreachable for a server we are connecting
 * to fails the attempt now instead of at the handshake timeout. */
static void on_error(void *ctx, const qk_udp_error *e, qk_time now)
{
    qk_io_ep_driver *d = ctx;
    if (!e->unreachable) return;
    char addr[QK_ADDR_STRLEN], why[160];
    if (qk_addr_format(&e->peer, addr, sizeof addr) < 0) snprintf(addr, sizeof addr, "the server");
    snprintf(why, sizeof why, "connection refused: nothing listening on %s (ICMP port unreachable)",
             addr);
    if (qk_endpoint_on_unreachable(d->ep, &e->peer, why, now) > 0) run_app(d, now);
}

const qk_io_driver_ops qk_io_ep_driver_ops = {
    .on_datagrams = on_datagrams,
    .poll_send = poll_send,
    .next_timeout = next_timeout,
    .on_timeout = on_timeout,
    .on_error = on_error,
};

int qk_io_ep_driver_loop_new_sized(qk_io_ep_driver *d, qk_udp *u, const qk_io_loop_config *cfg,
                                   size_t cfg_bytes, qk_io_loop **out)
{
    if (!d) return QK_ERR_INVALID_ARG;
    return qk_io_loop_new_sized(u, &qk_io_ep_driver_ops, sizeof qk_io_ep_driver_ops, d, cfg,
                                cfg_bytes, out);
}
