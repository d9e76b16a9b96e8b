/* SPDX-License-Identifier: MIT */
/* The endpoint: connection-ID demultiplexing, accepting connections, the
 * event queue, and the send/timeout fan-out over connections. */
#include "transport/endpoint/endpoint.h"

#include <stdlib.h>
#include <string.h>

#include <quack/quiclb.h>

#include "base/abi.h"
#include "transport/endpoint/sched.h"
#include "transport/endpoint/stateless.h"

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
    size_t cid_cap, cid_used, cid_tombs;
    /* Event ring (grows). */
    qk_event *ev;
    size_t ev_head, ev_count, ev_cap;
    uint8_t *ev_polled_data;    /* payload of the DATAGRAM event polled last (owned) */
    qk_ep_sched sched;          /* timer heap, ready list, reset tokens (sched.c) */
    size_t n_hs, n_hs_unval;    /* server handshakes in progress, of which unvalidated */
    qk_flow_budget budget;      /* receive-window growth across connections */
    qk_flow_budget send_budget; /* stream bytes written, not acknowledged, all connections */
    qk_stateless sl;            /* VN, Retry, stateless reset, tokens (stateless.c) */
    qk_ticket_keys *own_tk;     /* server: ticket keys made for this endpoint */
    qk_tls_creds *tls_creds;    /* server: certificate, key, priority loaded once */
    bool ecn_ack_bug;           /* test only: qk_endpoint_set_ecn_ack_bug */
};

/* qk_config crosses the boundary at the caller's sizeof (base/abi.h): the
 * first release's ends with cc_max_rate_bps, and a field added later must
 * move the assertion to it (no tail padding: a new field grows the size). */
#define CONFIG_V1_BYTES QK_ABI_END(qk_config, cc_max_rate_bps)
QK_ABI_LAST_FIELD(qk_config, quiclb);
/* qk_connect_opts likewise (1.0 ends with session_len). */
#define CONNECT_OPTS_V1_BYTES QK_ABI_END(qk_connect_opts, session_len)
QK_ABI_LAST_FIELD(qk_connect_opts, session_len);

/* Every field's default is the @default{} of its doc comment in
 * include/quack/quack.h (with the reasons); cmake/config_defaults.cmake turns
 * them into the assignments below and the API reference's defaults page. */
static void config_defaults(qk_config *c)
{
    memset(c, 0, sizeof *c);
#include "config_defaults.inc"
}

void qk_config_default_sized(qk_config *cfg, size_t cfg_bytes)
{
    qk_config full;
    config_defaults(&full);
    qk_abi_copy_out(cfg, cfg_bytes, &full, sizeof full);
}

int qk_config_import(qk_config *dst, const qk_config *src, size_t src_bytes)
{
    config_defaults(dst);
    return qk_abi_copy_in(dst, sizeof *dst, src, src_bytes, CONFIG_V1_BYTES);
}

static bool ciphers_ok(const char *ciphers)
{
    char prio[256];
    const char *bad;
    return qk_tls_priority_for_ciphers(ciphers, prio, sizeof prio, &bad) == 0;
}

size_t qk_config_min_datagram_bytes(const qk_config *cfg)
{
    return cfg->min_datagram_bytes ? cfg->min_datagram_bytes : 1200; /* RFC 9000 §14 */
}

static int check_config(const qk_config *cfg, char *why, size_t why_len)
{
    const char *msg = NULL;
    int rc = QK_ERR_CONFIG;
    if (!cfg->rng)
        msg = "rng is required (a function filling buffers with random bytes)";
    else if (!cfg->alpn_count)
        msg = "at least one ALPN protocol is required (alpn[0], alpn_count)";
    else if (cfg->cid_bytes == 0)
        msg = "cid_bytes must be 1..20: zero-length connection IDs need address-based "
              "demultiplexing, which quack does not do";
    else if (cfg->cid_bytes > QK_MAX_CID_LEN)
        msg = "cid_bytes must be 1..20 (RFC 9000 §17.2)";
    else if (cfg->cid_encode_server_id && cfg->cid_bytes < 4)
        msg = "cid_encode_server_id needs cid_bytes >= 4 (first octet, server ID, nonce)";
#ifdef QK_NO_QUICLB
    else if (cfg->quiclb)
        msg = "quiclb: QUIC-LB connection IDs are not in the transport-only library (libquack has "
              "them)";
#else
    else if (cfg->quiclb && cfg->cid_bytes != qk_quiclb_cid_bytes(cfg->quiclb))
        msg = "quiclb: cid_bytes must be the QUIC-LB CID length, 1 + server_id_len + nonce_len "
              "(qk_quiclb_cid_bytes)";
#endif
    else if (cfg->min_datagram_bytes &&
             (cfg->min_datagram_bytes < 32 || cfg->min_datagram_bytes > 1200))
        msg = "min_datagram_bytes must be 0 (RFC 9000 §14: 1200) or 32..1200 (DNS carrier)";
    else if (cfg->max_udp_payload_bytes < qk_config_min_datagram_bytes(cfg))
        msg = "max_udp_payload_bytes must be at least 1200 (RFC 9000 §14; min_datagram_bytes for "
              "the DNS carrier)";
    else if (!qk_conn_prefaddr_config_ok(cfg))
        msg = "preferred_addr_v4 must be an IPv4 (or v4-mapped IPv6) address and "
              "preferred_addr_v6 an IPv6 one, each with a port (RFC 9000 §18.2)";
    else if (cfg->active_cid_limit < 2 || cfg->active_cid_limit > QK_CONN_MAX_REMOTE_CIDS)
        msg = "active_cid_limit must be 2..8 (RFC 9000 §18.2 minimum 2; quack keeps 8)";
    else if (cfg->pacing_gain_ca_pct &&
             (cfg->pacing_gain_ca_pct < 100 || cfg->pacing_gain_ca_pct > 400))
        msg = "pacing_gain_ca_pct must be 0 (default 100) or 100..400 (RFC 9002 §7.7: N >= 1)";
    else if (cfg->pacing_burst_pkts > 64)
        msg = "pacing_burst_pkts must be 0 (the controller's default) or 1..64";
    else if (cfg->ciphers && !ciphers_ok(cfg->ciphers))
        msg = "ciphers: a colon-separated list of TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, "
              "TLS_CHACHA20_POLY1305_SHA256, TLS_AES_128_CCM_SHA256 (CCM_8 is not allowed in "
              "QUIC, RFC 9001 §5.3)";
    else if (cfg->version && !qk_version_supported(cfg->version)) {
        msg = "version must be 0, 0x00000001 (QUIC v1) or 0x6b3343cf (QUIC v2)";
        rc = QK_ERR_VERSION;
    } else
        rc = 0;
    if (why && why_len) snprintf(why, why_len, "%s", msg ? msg : "ok");
    return rc;
}

int qk_config_check_sized(const qk_config *cfg, size_t cfg_bytes, char *why, size_t why_len)
{
    qk_config c;
    const char *msg = NULL;
    int rc = cfg ? qk_config_import(&c, cfg, cfg_bytes) : QK_ERR_CONFIG;
    if (!cfg)
        msg = "no configuration";
    else if (rc == QK_ERR_UNSUPPORTED)
        msg = "the program was built with newer quack headers and sets a qk_config field this "
              "libquack does not know: install the libquack it was built for, or leave the "
              "field at its default";
    else if (rc)
        msg = "cfg_bytes is below the first release's sizeof(qk_config): call qk_config_check, "
              "not qk_config_check_sized";
    if (!msg) return check_config(&c, why, why_len);
    if (why && why_len) snprintf(why, why_len, "%s", msg);
    return rc == QK_ERR_UNSUPPORTED ? rc : QK_ERR_CONFIG;
}

void qk_endpoint_stats_get_sized(const qk_endpoint *ep, qk_endpoint_stats *out, size_t out_bytes)
{
    qk_endpoint_stats s = ep->sl.stats;
    s.handshakes_now = ep->n_hs;
    s.handshakes_unvalidated_now = ep->n_hs_unval;
    s.send_buffered_bytes = ep->send_budget.used_bytes;
    s.send_buffered_peak_bytes = ep->send_budget.peak_used_bytes;
    qk_abi_copy_out(out, out_bytes, &s, sizeof s);
}

void qk_endpoint_reset_token(qk_endpoint *ep, const qk_cid *cid, uint8_t token[QK_RESET_TOKEN_LEN])
{
    qk_stateless_reset_token(&ep->sl, cid->b, cid->len, token);
}

int qk_endpoint_mint_new_token(qk_endpoint *ep, const qk_addr *peer, qk_time now, uint8_t *out,
                               size_t cap)
{
    return qk_stateless_mint(&ep->sl, QK_ADDR_TOKEN_NEW_TOKEN, peer, NULL, 0, now, out, cap);
}

void qk_endpoint_store_token(qk_endpoint *ep, const qk_addr *peer, const uint8_t *tok, size_t len,
                             qk_time now)
{
    qk_stateless_store_token(&ep->sl, peer, tok, len, now);
}

qk_flow_budget *qk_endpoint_budget(qk_endpoint *ep)
{
    return &ep->budget;
}

void qk_endpoint_set_ecn_ack_bug(qk_endpoint *ep, bool on)
{
    ep->ecn_ack_bug = on;
}

void qk_endpoint_random(qk_endpoint *ep, uint8_t *buf, size_t len)
{
    ep->cfg.rng(ep->cfg.rng_ctx, buf, len);
}

/* Server: the certificate, key and priority parsed once for every
 * connection rather than per handshake. NULL (no server, no certificate, or
 * it does not load) leaves each connection to load its own, which then
 * reports what is wrong as before. */
static qk_tls_creds *server_creds(const qk_config *cfg)
{
    if (!cfg->server || !((cfg->cert_pem && cfg->key_pem) || (cfg->cert_file && cfg->key_file)))
        return NULL;
    qk_tls_config tc;
    char prio[256];
    memset(&tc, 0, sizeof tc);
    if (qk_conn_tls_credentials(cfg, &tc, prio, sizeof prio)) return NULL;
    return qk_tls_creds_new(&tc, NULL);
}

/* qk_endpoint_new_ex's failure: *err and why say what and how to fix it. */
static qk_endpoint *new_failed(qk_endpoint *ep, int rc, const char *msg, int *err, char *why,
                               size_t why_len)
{
    free(ep);
    if (err) *err = rc;
    if (why && why_len && msg) snprintf(why, why_len, "%s", msg);
    return NULL;
}

qk_endpoint *qk_endpoint_new_sized(const qk_config *cfg, size_t cfg_bytes)
{
    return qk_endpoint_new_ex_sized(cfg, cfg_bytes, NULL, NULL, 0);
}

qk_endpoint *qk_endpoint_new_ex_sized(const qk_config *caller_cfg, size_t cfg_bytes, int *err,
                                      char *why, size_t why_len)
{
    int rc = qk_config_check_sized(caller_cfg, cfg_bytes, why, why_len); /* writes why */
    if (rc) return new_failed(NULL, rc, NULL, err, NULL, 0);
    qk_config imported;
    qk_config_import(&imported, caller_cfg, cfg_bytes);
    const qk_config *cfg = &imported;
    qk_endpoint *ep = calloc(1, sizeof *ep);
    if (!ep) return new_failed(NULL, QK_ERR_NOMEM, "out of memory", err, why, why_len);
    ep->cfg = *cfg;
    qk_flow_budget_init(&ep->budget, cfg->recv_budget_bytes ? cfg->recv_budget_bytes : UINT64_MAX);
    qk_flow_budget_init(&ep->send_budget,
                        cfg->send_budget_bytes ? cfg->send_budget_bytes : UINT64_MAX);
    /* RFC 9000 §10.3.2: a static key makes resets survive a restart; without
     * one configured, a random key per endpoint. */
    uint8_t key[QK_SL_STATIC_KEY_LEN], zero[QK_SL_STATIC_KEY_LEN] = {0};
    memcpy(key, cfg->static_key, sizeof key);
    if (!memcmp(key, zero, sizeof key)) cfg->rng(cfg->rng_ctx, key, sizeof key);
    rc = qk_stateless_init(&ep->sl, key, cfg->max_resets_per_s, cfg->rng, cfg->rng_ctx);
    memset(key, 0, sizeof key);
    uint64_t seed;
    cfg->rng(cfg->rng_ctx, (uint8_t *)&seed, sizeof seed);
    qk_ep_sched_init(&ep->sched, seed);
    if (rc)
        return new_failed(ep, rc, "out of memory for the stateless-reset and token state", err, why,
                          why_len);
    /* RFC 8446 §4.6.1: tickets sealed with this endpoint's keys unless the
     * application shares keys between endpoints. */
    if (cfg->server && cfg->session_tickets && !cfg->ticket_keys) {
        int tk_err = QK_ERR_TLS;
        ep->own_tk = qk_ticket_keys_new(cfg->ticket_lifetime_ns, 0, &tk_err);
        if (!ep->own_tk) {
            qk_stateless_free(&ep->sl);
            qk_ep_sched_free(&ep->sched);
            return new_failed(ep, tk_err,
                              "session_tickets: the ticket keys could not be made (TLS library or "
                              "memory); pass qk_config.ticket_keys or turn session_tickets off",
                              err, why, why_len);
        }
        ep->cfg.ticket_keys = ep->own_tk;
    }
    ep->tls_creds = server_creds(&ep->cfg);
    if (err) *err = 0;
    if (why && why_len) snprintf(why, why_len, "ok");
    return ep;
}

void qk_endpoint_del(qk_endpoint *ep)
{
    if (!ep) return;
    while (ep->conns) {
        qk_conn *c = ep->conns;
        ep->conns = c->ep.next;
        qk_conn_del(c);
    }
    while (ep->dead) {
        qk_conn *c = ep->dead;
        ep->dead = c->ep.next;
        qk_conn_del(c);
    }
    qk_stateless_free(&ep->sl);
    qk_ticket_keys_del(ep->own_tk);
    qk_tls_creds_del(ep->tls_creds); /* after every session made with them */
    qk_ep_sched_free(&ep->sched);
    free(ep->cids);
    for (size_t i = 0; i < ep->ev_count; i++) {
        qk_event *e = &ep->ev[(ep->ev_head + i) % ep->ev_cap];
        if (e->type == QK_EV_DATAGRAM) free((void *)e->data);
    }
    free(ep->ev_polled_data);
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

/* Rebuild the table: twice as large when it is getting full, the same size
 * when only tombstones (churn, e.g. a spoofed-Initial flood) filled it. */
static int cid_grow(qk_endpoint *ep)
{
    size_t cap = !ep->cid_cap                           ? 64
                 : (ep->cid_used + 1) * 4 > ep->cid_cap ? ep->cid_cap * 2
                                                        : ep->cid_cap;
    cid_entry *n = calloc(cap, sizeof *n), *old = ep->cids;
    if (!n) return QK_ERR_NOMEM;
    size_t oc = ep->cid_cap;
    ep->cids = n;
    ep->cid_cap = cap;
    ep->cid_used = 0;
    ep->cid_tombs = 0;
    for (size_t i = 0; i < oc; i++)
        if (old[i].used) qk_endpoint_add_cid(ep, &old[i].cid, old[i].conn);
    free(old);
    return 0;
}

int qk_endpoint_add_cid(qk_endpoint *ep, const qk_cid *cid, qk_conn *c)
{
    if (cid->len == 0) return 0;
    if ((ep->cid_used + ep->cid_tombs + 1) * 2 > ep->cid_cap) {
        int rc = cid_grow(ep);
        if (rc) return rc;
    }
    if (cid_find(ep, cid->b, cid->len)) return QK_ERR_STATE; /* collision */
    size_t mask = ep->cid_cap - 1;
    for (size_t i = cid_hash(cid->b, cid->len) & mask;; i = (i + 1) & mask) {
        cid_entry *e = &ep->cids[i];
        if (!e->used) {
            if (e->tomb) ep->cid_tombs--;
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
    ep->cid_tombs++;
}

/* ---- events ---- */

/* qk_conn_env trampolines: the connection sees only ctx. */
static void env_push_event(void *ctx, const qk_event *ev)
{
    qk_endpoint_push_event(ctx, ev);
}
static int env_add_cid(void *ctx, const qk_cid *cid, qk_conn *c)
{
    return qk_endpoint_add_cid(ctx, cid, c);
}
static void env_remove_cid(void *ctx, const qk_cid *cid)
{
    qk_endpoint_remove_cid(ctx, cid);
}
static void env_random(void *ctx, uint8_t *buf, size_t len)
{
    qk_endpoint_random(ctx, buf, len);
}
static void env_reset_token(void *ctx, const qk_cid *cid, uint8_t token[QK_RESET_TOKEN_LEN])
{
    qk_endpoint_reset_token(ctx, cid, token);
}
static int env_mint_token(void *ctx, const qk_addr *peer, qk_time now, uint8_t *out, size_t cap)
{
    return qk_endpoint_mint_new_token(ctx, peer, now, out, cap);
}
static void env_store_token(void *ctx, const qk_addr *peer, const uint8_t *tok, size_t len,
                            qk_time now)
{
    qk_endpoint_store_token(ctx, peer, tok, len, now);
}

static void env_wake(void *ctx, qk_conn *c)
{
    qk_endpoint *ep = ctx;
    if (c->ep.linked) qk_ep_ready_push(&ep->sched, c);
}
static void env_add_reset_token(void *ctx, const uint8_t *token, qk_conn *c)
{
    qk_endpoint *ep = ctx;
    (void)qk_ep_rt_add(&ep->sched, token, c); /* out of memory: that reset goes unnoticed */
}
static void env_remove_reset_token(void *ctx, const uint8_t *token, qk_conn *c)
{
    qk_endpoint *ep = ctx;
    qk_ep_rt_remove(&ep->sched, token, c);
}

qk_conn_env qk_endpoint_conn_env(qk_endpoint *ep)
{
    return (qk_conn_env){.ctx = ep,
                         .push_event = env_push_event,
                         .add_cid = env_add_cid,
                         .remove_cid = env_remove_cid,
                         .random = env_random,
                         .reset_token = env_reset_token,
                         .mint_token = env_mint_token,
                         .store_token = env_store_token,
                         .budget = qk_endpoint_budget(ep),
                         .send_budget = &ep->send_budget,
                         .wake = env_wake,
                         .add_reset_token = env_add_reset_token,
                         .remove_reset_token = env_remove_reset_token,
                         .tls_creds = ep->tls_creds,
                         .ecn_ack_bug = ep->ecn_ack_bug};
}

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
    qk_event e = *ev;
    if (e.type == QK_EV_DATAGRAM) {
        /* The frame's bytes live in the caller's receive buffer: the event
         * carries its own copy, valid until the next poll (quack.h). */
        uint8_t *copy = malloc(e.len ? e.len : 1);
        if (!copy) return;
        if (e.len) memcpy(copy, e.data, e.len);
        e.data = copy;
    }
    ep->ev[(ep->ev_head + ep->ev_count++) % ep->ev_cap] = e;
}

static void reap(qk_endpoint *ep)
{
    while (ep->dead) {
        qk_conn *c = ep->dead;
        ep->dead = c->ep.next;
        qk_conn_del(c);
    }
}

bool qk_endpoint_poll_event_sized(qk_endpoint *ep, qk_event *ev, size_t ev_bytes)
{
    free(ep->ev_polled_data);
    ep->ev_polled_data = NULL;
    if (!ep->ev_count) {
        reap(ep);
        return false;
    }
    qk_event e = ep->ev[ep->ev_head];
    ep->ev_head = (ep->ev_head + 1) % ep->ev_cap;
    ep->ev_count--;
    if (qk_event_is_stream(e.type)) {
        /* The stream's pointer now (qk_stream_set_user may have come after
         * the event was queued); a forgotten stream keeps the queued one. */
        const qk_stream *s = qk_streams_get(&e.conn->streams, e.stream_id);
        if (s) e.stream_user = s->user;
    }
    if (e.type == QK_EV_DATAGRAM) ep->ev_polled_data = (uint8_t *)e.data;
    qk_abi_copy_out(ev, ev_bytes, &e, sizeof e);
    return true;
}

size_t qk_endpoint_conn_count(const qk_endpoint *ep)
{
    return ep->n_conns;
}

static void unlink_conn(qk_endpoint *ep, qk_conn *c);

/* Add c to the list, the ready list and the timer heap. */
static void link_conn(qk_endpoint *ep, qk_conn *c)
{
    c->ep.prev = NULL;
    c->ep.next = ep->conns;
    if (ep->conns) ep->conns->ep.prev = c;
    ep->conns = c;
    ep->n_conns++;
    c->ep.linked = true;
    c->ep.heap_idx = SIZE_MAX;
    qk_ep_ready_push(&ep->sched, c);
}

/* Handshake admission accounting (RFC 9000 §8.1): c stops counting once its
 * handshake is over, and as unvalidated once its address is validated. */
static void hs_update(qk_endpoint *ep, qk_conn *c)
{
    bool hs = c->state == QK_CONN_HANDSHAKE && !c->handshake_complete;
    if (c->ep.hs_unval && (!hs || c->address_validated)) {
        c->ep.hs_unval = false;
        ep->n_hs_unval--;
    }
    if (c->ep.hs && !hs) {
        c->ep.hs = false;
        ep->n_hs--;
    }
}

/* After the endpoint or the application worked on c: a closed connection
 * moves to the dead list (freed once its event was polled), a live one gets
 * its timer re-keyed. c must not be used afterwards by the caller when it
 * may have closed. */
static void touch(qk_endpoint *ep, qk_conn *c)
{
    if (!c->ep.linked) return;
    if (c->state == QK_CONN_CLOSED) {
        unlink_conn(ep, c);
        c->ep.next = ep->dead;
        ep->dead = c;
        return;
    }
    hs_update(ep, c);
    if (qk_ep_timer_set(&ep->sched, c, qk_conn_next_timeout(c)))
        qk_ep_ready_push(&ep->sched, c); /* no heap memory: visit it at every send instead */
}

int qk_connect(qk_endpoint *ep, const qk_addr *local, const qk_addr *peer, const char *server_name,
               qk_time now, qk_conn **out)
{
    return qk_connect_ex(ep, local, peer, server_name, NULL, now, out);
}

int qk_connect_ex_sized(qk_endpoint *ep, const qk_addr *local, const qk_addr *peer,
                        const char *server_name, const qk_connect_opts *caller_opts,
                        size_t opts_bytes, qk_time now, qk_conn **out)
{
    if (!ep || !peer || !out) return QK_ERR_INVALID_ARG;
    qk_connect_opts imported = {0};
    const qk_connect_opts *opts = NULL;
    if (caller_opts) {
        int rc = qk_abi_copy_in(&imported, sizeof imported, caller_opts, opts_bytes,
                                CONNECT_OPTS_V1_BYTES);
        if (rc) return rc == QK_ERR_UNSUPPORTED ? QK_ERR_CONFIG : rc;
        opts = &imported;
    }
    if (ep->n_conns >= ep->cfg.max_connections) return QK_ERR_LIMIT;
    int err = 0;
    /* RFC 9000 §8.1.3: a NEW_TOKEN token from this server, used once. */
    uint8_t tok[QK_SL_TOKEN_MAX];
    qk_conn_opts o = {0};
    o.token = tok;
    o.token_len = qk_stateless_take_token(&ep->sl, peer, tok, sizeof tok);
    if (opts) {
        o.session = opts->session;
        o.session_len = opts->session_len;
    }
    qk_conn_env env = qk_endpoint_conn_env(ep);
    qk_conn *c =
        qk_conn_new_ex(&env, &ep->cfg, false, local, peer, NULL, NULL, server_name, &o, now, &err);
    if (!c) return err ? err : QK_ERR_NOMEM;
    link_conn(ep, c);
    *out = c;
    return 0;
}

/* Server: does it accept this version (RFC 9000 §6)? */
static bool server_accepts(const qk_endpoint *ep, uint32_t version)
{
    if (ep->cfg.version) return version == ep->cfg.version;
    return qk_version_supported(version);
}

static void send_vn(qk_endpoint *ep, const qk_datagram *d, const qk_pkt_hdr *h)
{
    uint32_t v[2];
    size_t n = 0;
    if (ep->cfg.version)
        v[n++] = ep->cfg.version;
    else {
        v[n++] = QK_VERSION_1;
        v[n++] = QK_VERSION_2;
    }
    qk_stateless_send_vn(&ep->sl, d, h, v, n);
}

static void unlink_conn(qk_endpoint *ep, qk_conn *c)
{
    if (!c->ep.linked) return;
    if (c->ep.prev)
        c->ep.prev->ep.next = c->ep.next;
    else
        ep->conns = c->ep.next;
    if (c->ep.next) c->ep.next->ep.prev = c->ep.prev;
    c->ep.next = c->ep.prev = NULL;
    ep->n_conns--;
    qk_ep_ready_remove(&ep->sched, c);
    qk_ep_timer_remove(&ep->sched, c);
    if (c->ep.hs) ep->n_hs--;
    if (c->ep.hs_unval) ep->n_hs_unval--;
    c->ep.hs = c->ep.hs_unval = false;
    c->ep.linked = false;
}

size_t qk_endpoint_max_handshakes(const qk_config *cfg)
{
    if (cfg->max_handshakes) return cfg->max_handshakes;
    size_t n = cfg->max_connections / 8; /* 1024 -> 128 */
    return n < 16 ? 16 : n;
}

size_t qk_endpoint_max_handshakes_drop(const qk_config *cfg)
{
    return cfg->max_handshakes_drop ? cfg->max_handshakes_drop
                                    : 2 * qk_endpoint_max_handshakes(cfg);
}

/* RFC 9000 §8.1.2: the admission decision for an Initial that would create
 * state: 0 accept, 1 answer with Retry, -1 drop, -2 refuse (max_connections). */
static int admit(qk_endpoint *ep, bool validated)
{
    qk_endpoint_stats *st = &ep->sl.stats;
    if (ep->n_hs >= qk_endpoint_max_handshakes_drop(&ep->cfg)) {
        st->drops_handshakes++;
        st->initials_dropped++;
        return -1;
    }
    if (!validated) {
        if (ep->cfg.retry == QK_RETRY_ALWAYS) return 1;
        if (ep->n_hs_unval >= qk_endpoint_max_handshakes(&ep->cfg)) {
            if (ep->cfg.retry == QK_RETRY_NEVER) {
                st->drops_handshakes++;
                st->initials_dropped++;
                return -1;
            }
            st->retry_load++; /* spoofed-Initial floods then cost no state */
            return 1;
        }
    }
    if (ep->n_conns >= ep->cfg.max_connections) {
        st->drops_connections++;
        st->initials_dropped++;
        return -2;
    }
    return 0;
}

static void accept_initial(qk_endpoint *ep, qk_datagram *d, qk_time now)
{
    qk_pkt_hdr h;
    int rc = qk_pkt_parse(d->data, d->len, ep->cfg.cid_bytes, &h);
    /* RFC 9000 §6.1, §14.1: VN only for datagrams an Initial could fill, and
     * never in answer to a VN (§6.1: version 0 is not "unknown"). */
    if ((rc == QK_ERR_VERSION ||
         (rc == 0 && h.type != QK_PKT_VN && !server_accepts(ep, h.version))) &&
        d->len >= 1200) {
        send_vn(ep, d, &h);
        return;
    }
    if (rc) return;
    /* RFC 9000 §14.1: a server drops Initial datagrams below 1200 bytes
     * (DNS-carrier profile: below min_datagram_bytes, docs/dns.md). */
    if (h.type != QK_PKT_INITIAL || d->len < qk_config_min_datagram_bytes(&ep->cfg)) return;
    if (h.dcid_len < 8) return; /* RFC 9000 §7.2 */
    qk_cid dcid = {.len = (uint8_t)h.dcid_len}, scid = {.len = (uint8_t)h.scid_len}, odcid = {0};
    memcpy(dcid.b, h.dcid, h.dcid_len);
    memcpy(scid.b, h.scid, h.scid_len);
    qk_conn_opts o = {.version = h.version};
    /* RFC 9000 §8.1.3, §8.1.4: a token may validate the address. */
    size_t olen = 0;
    switch (qk_stateless_check_token(&ep->sl, h.token, h.token_len, &d->peer, now,
                                     ep->cfg.retry_token_lifetime_ns, ep->cfg.new_token_lifetime_ns,
                                     odcid.b, &olen)) {
    case QK_TOKEN_RETRY_OK:
        odcid.len = (uint8_t)olen;
        o.orig_dcid = &odcid;
        o.retry_scid = &dcid;
        o.validated = true;
        break;
    case QK_TOKEN_NEW_OK: o.validated = true; break;
    case QK_TOKEN_RETRY_BAD:
        /* RFC 9000 §8.1.3: close with INVALID_TOKEN, keeping no state. */
        qk_stateless_send_close(&ep->sl, d, &h, 0x0b, "invalid token");
        return;
    case QK_TOKEN_NONE: break;
    }
    int a = admit(ep, o.validated);
    if (a > 0) qk_stateless_send_retry(&ep->sl, d, &h, ep->cfg.cid_bytes, now);
    /* RFC 9000 §20.1 CONNECTION_REFUSED: a client the server has no room
     * for hears so at once instead of waiting for its idle timeout; a small
     * Initial, no state kept (as the INVALID_TOKEN close). */
    if (a == -2) qk_stateless_send_close(&ep->sl, d, &h, 0x02, "server at its connection limit");
    if (a) return;
    qk_conn_env env = qk_endpoint_conn_env(ep);
    qk_conn *c = qk_conn_new_ex(&env, &ep->cfg, true, &d->local, &d->peer, &dcid, &scid, NULL, &o,
                                now, NULL);
    if (!c) return;
    link_conn(ep, c);
    c->ep.hs = true;
    c->ep.hs_unval = !o.validated;
    ep->n_hs++;
    ep->n_hs_unval += !o.validated;
    qk_conn_recv(c, d, now);
    if (!c->stats.pkts_received) {
        /* Nothing decrypted: garbage that merely looked like an Initial. Keep no state. */
        ep->sl.stats.initials_dropped++;
        unlink_conn(ep, c);
        qk_conn_del(c);
        return;
    }
    if (o.validated)
        ep->sl.stats.initials_validated++;
    else
        ep->sl.stats.initials_accepted++;
    touch(ep, c);
}

/* RFC 9000 §10.3.1: a short-header datagram for no known CID may be a
 * stateless reset for one of our connections. */
static bool detect_reset(qk_endpoint *ep, const qk_datagram *d, qk_time now)
{
    qk_conn *c = qk_ep_rt_match(&ep->sched, d->data, d->len); /* by hash, no scan */
    if (!c) return false;
    qk_conn_on_stateless_reset(c, now);
    touch(ep, c);
    return true;
}

/* The send budget refused a write and has room again: WRITABLE for the
 * connections whose writers wait (a scan, only after starvation). */
static void send_budget_wake(qk_endpoint *ep)
{
    qk_flow_budget *b = &ep->send_budget;
    if (!b->starved || qk_flow_budget_room(b) < b->capacity_bytes / 16) return;
    b->starved = false;
    for (qk_conn *c = ep->conns; c; c = c->ep.next)
        if (c->send_capped) qk_conn_wake_writers(c);
}

int qk_endpoint_recv(qk_endpoint *ep, qk_datagram *d, qk_time now)
{
    if (!ep || !d || !d->data) return QK_ERR_INVALID_ARG;
    const uint8_t *dcid;
    size_t dlen;
    if (qk_packet_peek_dcid(d->data, d->len, ep->cfg.cid_bytes, &dcid, &dlen)) return 0;
    cid_entry *e = cid_find(ep, dcid, dlen);
    bool is_long = (d->data[0] & QK_HDR_FORM_LONG) != 0;
    if (e) {
        qk_conn *c = e->conn;
        uint64_t before = c->stats.pkts_received;
        /* Decryption works in place: keep the tail a reset token would be in. */
        uint8_t tail[QK_SL_RESET_MIN];
        size_t tl = d->len < sizeof tail ? d->len : sizeof tail;
        memcpy(tail, d->data + d->len - tl, tl);
        qk_conn_recv(c, d, now);
        /* RFC 9000 §10.3.1: a reset is a short-header datagram that did not decrypt. */
        if (!is_long && tl == sizeof tail && c->stats.pkts_received == before) {
            tail[0] = QK_HDR_FIXED_BIT; /* short header (checked above); the rest is the tail */
            if (qk_cid_is_stateless_reset(c, tail, tl)) qk_conn_on_stateless_reset(c, now);
        }
        if (c->ep.linked) qk_ep_ready_push(&ep->sched, c); /* acknowledgements, answers */
        touch(ep, c);
        send_budget_wake(ep);
    } else if (is_long) {
        if (ep->cfg.server) accept_initial(ep, d, now);
    } else if (!detect_reset(ep, d, now)) {
        /* RFC 9000 §10.3: tell the sender this connection is gone. */
        qk_stateless_send_reset(&ep->sl, d, dcid, dlen, now);
    }
    return 0;
}

size_t qk_endpoint_send(qk_endpoint *ep, qk_datagram *out, size_t max, qk_time now)
{
    size_t n = 0;
    /* Stateless packets first (VN, Retry, resets, INVALID_TOKEN closes). */
    while (n < max && ep->sl.count && qk_stateless_pop(&ep->sl, &out[n])) n++;
    /* Only the connections that may have something to send (woken by a
     * datagram, a timer or the application), one datagram each in turn. */
    qk_conn *c;
    while (n < max && (c = ep->sched.ready_head)) {
        size_t len = qk_conn_send(c, out[n].data, out[n].len, now);
        if (len) {
            out[n].len = len;
            out[n].peer = c->paths.dg_peer; /* the path this datagram is for (RFC 9000 §9) */
            out[n].local = c->paths.dg_local;
            out[n].ecn = qk_conn_tx_ecn(c);
            out[n].segment_bytes = 0;
            n++;
            qk_ep_ready_rotate(&ep->sched, c);
        } else {
            qk_ep_ready_remove(&ep->sched, c);
        }
        touch(ep, c);
    }
    return n;
}

int qk_endpoint_on_unreachable(qk_endpoint *ep, const qk_addr *peer, const char *reason,
                               qk_time now)
{
    if (!ep || !peer) return QK_ERR_INVALID_ARG;
    int n = 0;
    for (qk_conn *c = ep->conns, *nx; c; c = nx) {
        nx = c->ep.next;
        if (!qk_addr_equal(&c->peer, peer) || !qk_conn_on_unreachable(c, reason, now)) continue;
        n++;
        touch(ep, c);
    }
    return n;
}

qk_time qk_endpoint_next_timeout(const qk_endpoint *ep)
{
    qk_conn *top = qk_ep_timer_top(&ep->sched);
    qk_time t = top ? top->ep.heap_t : QK_TIME_INFINITE;
    /* Woken connections may have a new timer the heap does not know yet. */
    for (const qk_conn *c = ep->sched.ready_head; c; c = c->ep.rnext) {
        qk_time x = qk_conn_next_timeout(c);
        if (x < t) t = x;
    }
    return t;
}

/* Re-key the timers of the woken connections. */
static void refresh_ready(qk_endpoint *ep)
{
    for (qk_conn *c = ep->sched.ready_head, *nx; c; c = nx) {
        nx = c->ep.rnext;
        touch(ep, c);
    }
}

void qk_endpoint_on_timeout(qk_endpoint *ep, qk_time now)
{
    refresh_ready(ep);
    qk_conn *c;
    /* Each due connection once: popped now, re-keyed below (a timer the
     * timeout does not clear, e.g. pacing, waits for the send). */
    while ((c = qk_ep_timer_top(&ep->sched)) && c->ep.heap_t <= now) {
        qk_ep_timer_remove(&ep->sched, c);
        qk_conn_on_timeout(c, now);
        qk_ep_ready_push(&ep->sched, c);
    }
    refresh_ready(ep);
    send_budget_wake(ep);
}
