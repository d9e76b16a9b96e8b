/* SPDX-License-Identifier: MIT */
/* Built-in simulator nodes: CBR source, sink, echo. */
#include "sim/sim_int.h"

#include "base/abi.h"

#include <stdlib.h>
#include <string.h>

/* CBR payload: seq (8, big endian), send time (8), check word (8), zero padding. */
#define CBR_HDR 24

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

static uint64_t check_word(uint64_t seq, uint64_t t)
{
    uint64_t z = seq * 0x9e3779b97f4a7c15ull ^ t;
    z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
    return z ^ (z >> 29);
}

struct qk_sim_cbr {
    qk_sim_cbr_cfg cfg;
    int node;
    uint64_t sent, sent_bytes;
    uint8_t buf[65535];
};

/* Send time of packet k: start + k * size * 8 / rate, exact (no drift). */
static qk_time cbr_time(const qk_sim_cbr *c, uint64_t k)
{
    return c->cfg.start_ns +
           (qk_time)(((unsigned __int128)k * c->cfg.size_bytes * 8 * QK_NS_PER_S) /
                     c->cfg.rate_bps);
}

static qk_time cbr_next(void *ctx)
{
    qk_sim_cbr *c = ctx;
    if (c->cfg.max_pkts && c->sent >= c->cfg.max_pkts) return QK_TIME_INFINITE;
    qk_time t = cbr_time(c, c->sent);
    return t >= c->cfg.stop_ns ? QK_TIME_INFINITE : t;
}

static void cbr_timeout(void *ctx, qk_sim *sim, qk_time now)
{
    qk_sim_cbr *c = ctx;
    while (cbr_next(c) <= now) {
        qk_time t = cbr_time(c, c->sent);
        put64(c->buf, c->sent);
        put64(c->buf + 8, t);
        put64(c->buf + 16, check_word(c->sent, t));
        qk_datagram d = {
            .data = c->buf, .len = c->cfg.size_bytes, .peer = c->cfg.dst, .ecn = c->cfg.ecn};
        qk_sim_send(sim, c->node, &d);
        c->sent++;
        c->sent_bytes += c->cfg.size_bytes;
    }
}

static void cbr_recv(void *ctx, qk_sim *sim, const qk_datagram *d, qk_time now) {}

static const qk_sim_node_ops cbr_ops = {cbr_recv, cbr_next, cbr_timeout};

/* qk_sim_cbr_cfg crosses the boundary at the caller's sizeof (base/abi.h):
 * the first release's ends with dst. */
#define CBR_CFG_V1_BYTES QK_ABI_END(qk_sim_cbr_cfg, dst)
QK_ABI_LAST_FIELD(qk_sim_cbr_cfg, dst);

int qk_sim_cbr_add_sized(qk_sim *sim, int host, uint16_t port, const qk_sim_cbr_cfg *caller,
                         size_t caller_bytes, qk_sim_cbr **out)
{
    qk_sim_cbr_cfg imported = {0}, *cfg = &imported;
    int rc = qk_abi_copy_in(&imported, sizeof imported, caller, caller_bytes, CBR_CFG_V1_BYTES);
    if (rc) return rc;
    if (!cfg->rate_bps || cfg->size_bytes < CBR_HDR || cfg->size_bytes > 65535)
        return QK_ERR_INVALID_ARG;
    qk_sim_cbr *c = calloc(1, sizeof *c);
    if (!c) return QK_ERR_NOMEM;
    c->cfg = *cfg;
    if (!c->cfg.stop_ns) c->cfg.stop_ns = QK_TIME_INFINITE;
    int id = qk_sim_node_add(sim, host, port, &cbr_ops, c);
    if (id < 0) {
        free(c);
        return id;
    }
    c->node = id;
    if (qk_sim_own(sim, c, free)) return QK_ERR_NOMEM;
    if (out) *out = c;
    return id;
}

uint64_t qk_sim_cbr_sent_pkts(const qk_sim_cbr *c)
{
    return c->sent;
}

uint64_t qk_sim_cbr_sent_bytes(const qk_sim_cbr *c)
{
    return c->sent_bytes;
}

/* ---- sink ---- */

#define SEEN_BITS 65536

struct qk_sim_sink {
    qk_sim_sink_stats st;
    qk_hist owd;
    qk_sim_sink_observer obs;
    void *obs_ctx;
    uint64_t max_seq; /**< highest seq + 1 seen */
    uint8_t seen[SEEN_BITS / 8];
};

static void sink_recv(void *ctx, qk_sim *sim, const qk_datagram *d, qk_time now)
{
    qk_sim_sink *s = ctx;
    if (d->len < CBR_HDR) {
        s->st.corrupt_pkts++;
        return;
    }
    uint64_t seq = get64(d->data), t = get64(d->data + 8);
    int ok = get64(d->data + 16) == check_word(seq, t) && t <= now;
    for (size_t i = CBR_HDR; ok && i < d->len; i++) ok = d->data[i] == 0;
    if (!ok) {
        s->st.corrupt_pkts++;
        return;
    }
    if (seq + SEEN_BITS <= s->max_seq) { /* too old to tell: count as reordered */
        s->st.reordered_pkts++;
    } else {
        if (seq + 1 > s->max_seq) {
            for (uint64_t q = s->max_seq; q < seq + 1 && q < s->max_seq + SEEN_BITS; q++)
                s->seen[(q % SEEN_BITS) / 8] &= (uint8_t) ~(1u << (q % 8));
            s->max_seq = seq + 1;
        } else {
            s->st.reordered_pkts++;
        }
        uint8_t *b = &s->seen[(seq % SEEN_BITS) / 8], bit = (uint8_t)(1u << (seq % 8));
        if (*b & bit) {
            s->st.dup_pkts++;
            return;
        }
        *b |= bit;
    }
    if (!s->st.pkts) s->st.first_ns = now;
    s->st.last_ns = now;
    s->st.pkts++;
    s->st.bytes += d->len;
    if (d->ecn == QK_ECN_CE) s->st.ce_pkts++;
    qk_hist_add(&s->owd, now - t);
    if (s->obs) s->obs(s->obs_ctx, seq, t, now, d->ecn, d->len);
}

static const qk_sim_node_ops sink_ops = {sink_recv, NULL, NULL};

static void sink_del(void *p)
{
    qk_sim_sink *s = p;
    qk_hist_free(&s->owd);
    free(s);
}

int qk_sim_sink_add(qk_sim *sim, int host, uint16_t port, qk_sim_sink **out)
{
    if (!out) return QK_ERR_INVALID_ARG;
    qk_sim_sink *s = calloc(1, sizeof *s);
    if (!s) return QK_ERR_NOMEM;
    int id = qk_sim_node_add(sim, host, port, &sink_ops, s);
    if (id < 0) {
        free(s);
        return id;
    }
    if (qk_sim_own(sim, s, sink_del)) return QK_ERR_NOMEM;
    *out = s;
    return id;
}

void qk_sim_sink_observe(qk_sim_sink *s, qk_sim_sink_observer fn, void *ctx)
{
    s->obs = fn;
    s->obs_ctx = ctx;
}

const qk_sim_sink_stats *qk_sim_sink_stats_get(const qk_sim_sink *s)
{
    return &s->st;
}

qk_time qk_sim_sink_owd_pct(const qk_sim_sink *s, double pct)
{
    return qk_hist_pct(&s->owd, pct);
}

/* ---- echo ---- */

typedef struct echo {
    int node;
} echo;

static void echo_recv(void *ctx, qk_sim *sim, const qk_datagram *d, qk_time now)
{
    echo *e = ctx;
    qk_datagram r = {.data = d->data, .len = d->len, .peer = d->peer, .ecn = d->ecn};
    qk_sim_send(sim, e->node, &r);
}

static const qk_sim_node_ops echo_ops = {echo_recv, NULL, NULL};

int qk_sim_echo_add(qk_sim *sim, int host, uint16_t port)
{
    echo *e = calloc(1, sizeof *e);
    if (!e) return QK_ERR_NOMEM;
    int id = qk_sim_node_add(sim, host, port, &echo_ops, e);
    if (id < 0) {
        free(e);
        return id;
    }
    e->node = id;
    if (qk_sim_own(sim, e, free)) return QK_ERR_NOMEM;
    return id;
}
