/* The endpoint: connection-ID demultiplexing, accepting connections, the
 * event queue, and the send/timeout fan-out over connections. */
#include "transport/conn.h"

#include <stdlib.h>
#include <string.h>

typedef struct cid_entry {
    qk_cid cid;
    qk_conn *conn;
    bool used, tomb;
} cid_entry;

struct qk_endpoint {
    qk_config cfg;
    qk_conn *conns;
    size_t n_conns;
    qk_conn *dead; /* closed connections freed at the next poll */
    /* CID hash table (open addressing, linear probing). */
    cid_entry *cids;
    size_t cid_cap, cid_used;
    /* Event ring (grows). */
    qk_event *ev;
    size_t ev_head, ev_count, ev_cap;
    qk_conn *rr;           /* round-robin cursor for sending */
    qk_flow_budget budget; /* receive-window growth across connections */
};

void qk_config_default(qk_config *c)
{
    memset(c, 0, sizeof *c);
    c->cc = QK_CONFIG_CC_CUBIC;
    c->max_udp_payload_bytes = 1200;
    /* Small start, auto-tuned up (docs/experiments/flow-control.md): 64 KiB
     * per stream, 256 KiB per connection, as quic-go starts (512 KiB/768 KiB)
     * scaled to the seed; auto-tuning reaches the BDP within a few RTTs. */
    c->initial_max_data_bytes = 256u << 10;
    c->initial_max_stream_data_bytes = 64u << 10;
    c->max_streams_bidi = 100;
    c->max_streams_uni = 100;
    c->max_stream_send_buffer_bytes = 1u << 20;
    c->autotune = true;
    c->max_stream_window_bytes = 64u << 20;
    c->max_conn_window_bytes = 96u << 20;
    c->idle_timeout_ns = 30 * QK_NS_PER_S;
    c->max_ack_delay_ns = 25 * QK_NS_PER_MS;
    c->ack_delay_exponent = 3;
    c->ack_eliciting_threshold = 1;
    /* ack-frequency-12: advertise min_ack_delay (1 ms: our timers honour it)
     * and tune a supporting peer's ACK rate automatically (ackfreq.c). A peer
     * without the extension (ngtcp2, most stacks) sees RFC 9000 behaviour. */
    c->min_ack_delay_ns = 1 * QK_NS_PER_MS;
    c->ack_frequency = 2;
    c->max_pending_datagrams = 64;
    c->cid_bytes = 8;
    c->active_cid_limit = 4;
    c->max_connections = 1024;
}

qk_flow_budget *qk_endpoint_budget(qk_endpoint *ep)
{
    return &ep->budget;
}

void qk_endpoint_random(qk_endpoint *ep, uint8_t *buf, size_t len)
{
    ep->cfg.rng(ep->cfg.rng_ctx, buf, len);
}

qk_endpoint *qk_endpoint_new(const qk_config *cfg)
{
    if (!cfg || !cfg->rng || !cfg->alpn_count || cfg->cid_bytes < 1 ||
        cfg->cid_bytes > QK_MAX_CID_LEN || cfg->max_udp_payload_bytes < 1200 ||
        cfg->active_cid_limit < 2)
        return NULL;
    qk_endpoint *ep = calloc(1, sizeof *ep);
    if (!ep) return NULL;
    ep->cfg = *cfg;
    qk_flow_budget_init(&ep->budget, cfg->recv_budget_bytes ? cfg->recv_budget_bytes : UINT64_MAX);
    return ep;
}

void qk_endpoint_del(qk_endpoint *ep)
{
    if (!ep) return;
    while (ep->conns) {
        qk_conn *c = ep->conns;
        ep->conns = c->next;
        qk_conn_del(c);
    }
    while (ep->dead) {
        qk_conn *c = ep->dead;
        ep->dead = c->next;
        qk_conn_del(c);
    }
    free(ep->cids);
    free(ep->ev);
    free(ep);
}

/* ---- CID table ---- */

static uint64_t cid_hash(const uint8_t *b, size_t len)
{
    uint64_t h = 1469598103934665603ull ^ len;
    for (size_t i = 0; i < len; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static cid_entry *cid_find(const qk_endpoint *ep, const uint8_t *b, size_t len)
{
    if (!ep->cid_cap) return NULL;
    size_t mask = ep->cid_cap - 1;
    for (size_t i = cid_hash(b, len) & mask, n = 0; n < ep->cid_cap; i = (i + 1) & mask, n++) {
        cid_entry *e = &ep->cids[i];
        if (!e->used && !e->tomb) return NULL;
        if (e->used && e->cid.len == len && !memcmp(e->cid.b, b, len)) return e;
    }
    return NULL;
}

static int cid_grow(qk_endpoint *ep)
{
    size_t cap = ep->cid_cap ? ep->cid_cap * 2 : 64;
    cid_entry *n = calloc(cap, sizeof *n), *old = ep->cids;
    if (!n) return QK_ERR_NOMEM;
    size_t oc = ep->cid_cap;
    ep->cids = n;
    ep->cid_cap = cap;
    ep->cid_used = 0;
    for (size_t i = 0; i < oc; i++)
        if (old[i].used) qk_endpoint_add_cid(ep, &old[i].cid, old[i].conn);
    free(old);
    return 0;
}

int qk_endpoint_add_cid(qk_endpoint *ep, const qk_cid *cid, qk_conn *c)
{
    if (cid->len == 0) return 0;
    if ((ep->cid_used + 1) * 2 > ep->cid_cap) {
        int rc = cid_grow(ep);
        if (rc) return rc;
    }
    if (cid_find(ep, cid->b, cid->len)) return QK_ERR_STATE; /* collision */
    size_t mask = ep->cid_cap - 1;
    for (size_t i = cid_hash(cid->b, cid->len) & mask;; i = (i + 1) & mask) {
        cid_entry *e = &ep->cids[i];
        if (!e->used) {
            *e = (cid_entry){.cid = *cid, .conn = c, .used = true};
            ep->cid_used++;
            return 0;
        }
    }
}

void qk_endpoint_remove_cid(qk_endpoint *ep, const qk_cid *cid)
{
    cid_entry *e = cid_find(ep, cid->b, cid->len);
    if (!e) return;
    e->used = false;
    e->tomb = true;
    ep->cid_used--;
}

/* ---- events ---- */

void qk_endpoint_push_event(qk_endpoint *ep, const qk_event *ev)
{
    if (ep->ev_count == ep->ev_cap) {
        size_t cap = ep->ev_cap ? ep->ev_cap * 2 : 64;
        qk_event *n = malloc(cap * sizeof *n);
        if (!n) return; /* events are lost only when memory is gone */
        for (size_t i = 0; i < ep->ev_count; i++) n[i] = ep->ev[(ep->ev_head + i) % ep->ev_cap];
        free(ep->ev);
        ep->ev = n;
        ep->ev_cap = cap;
        ep->ev_head = 0;
    }
    ep->ev[(ep->ev_head + ep->ev_count++) % ep->ev_cap] = *ev;
}

static void reap(qk_endpoint *ep)
{
    while (ep->dead) {
        qk_conn *c = ep->dead;
        ep->dead = c->next;
        qk_conn_del(c);
    }
}

bool qk_endpoint_poll_event(qk_endpoint *ep, qk_event *ev)
{
    if (!ep->ev_count) {
        reap(ep);
        return false;
    }
    *ev = ep->ev[ep->ev_head];
    ep->ev_head = (ep->ev_head + 1) % ep->ev_cap;
    ep->ev_count--;
    return true;
}

size_t qk_endpoint_conn_count(const qk_endpoint *ep)
{
    return ep->n_conns;
}

static void link_conn(qk_endpoint *ep, qk_conn *c)
{
    c->next = ep->conns;
    ep->conns = c;
    ep->n_conns++;
}

/* Move closed connections to the dead list (freed once their event was polled). */
static void collect_closed(qk_endpoint *ep)
{
    qk_conn **pp = &ep->conns;
    while (*pp) {
        qk_conn *c = *pp;
        if (c->state == QK_CONN_CLOSED) {
            *pp = c->next;
            ep->n_conns--;
            if (ep->rr == c) ep->rr = NULL;
            c->next = ep->dead;
            ep->dead = c;
        } else {
            pp = &c->next;
        }
    }
}

int qk_connect(qk_endpoint *ep, const qk_addr *local, const qk_addr *peer, const char *server_name,
               qk_time now, qk_conn **out)
{
    if (!ep || !peer || !out) return QK_ERR_INVALID_ARG;
    if (ep->n_conns >= ep->cfg.max_connections) return QK_ERR_LIMIT;
    int err = 0;
    qk_conn *c = qk_conn_new(ep, &ep->cfg, false, local, peer, NULL, NULL, server_name, now, &err);
    if (!c) return err ? err : QK_ERR_NOMEM;
    link_conn(ep, c);
    *out = c;
    return 0;
}

static void accept_initial(qk_endpoint *ep, qk_datagram *d, qk_time now)
{
    qk_pkt_hdr h;
    if (qk_pkt_parse(d->data, d->len, ep->cfg.cid_bytes, &h)) return;
    /* RFC 9000 §14.1: a server drops Initial datagrams below 1200 bytes. */
    if (h.type != QK_PKT_INITIAL || d->len < 1200) return;
    if (h.dcid_len < 8) return; /* RFC 9000 §7.2 */
    if (ep->n_conns >= ep->cfg.max_connections) return;
    qk_cid dcid = {.len = (uint8_t)h.dcid_len}, scid = {.len = (uint8_t)h.scid_len};
    memcpy(dcid.b, h.dcid, h.dcid_len);
    memcpy(scid.b, h.scid, h.scid_len);
    qk_conn *c =
        qk_conn_new(ep, &ep->cfg, true, &d->local, &d->peer, &dcid, &scid, NULL, now, NULL);
    if (!c) return;
    link_conn(ep, c);
    qk_conn_recv(c, d, now);
}

int qk_endpoint_recv(qk_endpoint *ep, qk_datagram *d, qk_time now)
{
    if (!ep || !d || !d->data) return QK_ERR_INVALID_ARG;
    const uint8_t *dcid;
    size_t dlen;
    if (qk_packet_peek_dcid(d->data, d->len, ep->cfg.cid_bytes, &dcid, &dlen)) return 0;
    cid_entry *e = cid_find(ep, dcid, dlen);
    if (e) {
        qk_conn_recv(e->conn, d, now);
    } else if (ep->cfg.server && (d->data[0] & QK_HDR_FORM_LONG)) {
        accept_initial(ep, d, now);
    }
    /* Otherwise: unknown short-header packet (stateless reset comes with issue 6). */
    collect_closed(ep);
    return 0;
}

size_t qk_endpoint_send(qk_endpoint *ep, qk_datagram *out, size_t max, qk_time now)
{
    size_t n = 0;
    if (!ep->conns) return 0;
    qk_conn *start = ep->rr ? ep->rr : ep->conns;
    qk_conn *c = start;
    size_t idle_rounds = 0;
    while (n < max && idle_rounds < ep->n_conns) {
        size_t len = qk_conn_send(c, out[n].data, out[n].len, now);
        if (len) {
            out[n].len = len;
            out[n].peer = c->peer;
            out[n].local = c->local;
            out[n].ecn = qk_conn_tx_ecn(c);
            out[n].segment_bytes = 0;
            n++;
            idle_rounds = 0;
        } else {
            idle_rounds++;
            c = c->next ? c->next : ep->conns;
        }
    }
    ep->rr = c;
    collect_closed(ep);
    return n;
}

qk_time qk_endpoint_next_timeout(const qk_endpoint *ep)
{
    qk_time t = QK_TIME_INFINITE;
    for (const qk_conn *c = ep->conns; c; c = c->next) {
        qk_time x = qk_conn_next_timeout(c);
        if (x < t) t = x;
    }
    return t;
}

void qk_endpoint_on_timeout(qk_endpoint *ep, qk_time now)
{
    for (qk_conn *c = ep->conns; c; c = c->next)
        if (qk_conn_next_timeout(c) <= now) qk_conn_on_timeout(c, now);
    collect_closed(ep);
}
