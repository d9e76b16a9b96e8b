/* SPDX-License-Identifier: MIT */
/* Connection IDs (RFC 9000 §5.1): the CIDs we issue (NEW_CONNECTION_ID with
 * a stateless-reset token derived from the endpoint's static key), the CIDs
 * the peer gives us (limits, retire_prior_to, bounded retirement queue), and
 * stateless-reset detection (§10.3.1). */
#include "transport/conn/conn.h"

#include <string.h>

#include <quack/quiclb.h>

#include "crypto/token.h"

/* How many of our CIDs the peer may hold at once: its active_connection_id_limit
 * (RFC 9000 §18.2, default 2), bounded by our table. */
static size_t local_cid_target(const qk_conn *c)
{
    uint64_t lim = c->have_peer_tp ? c->peer_tp.active_connection_id_limit : 2;
    if (lim < 2) lim = 2;
    return lim < QK_CONN_MAX_LOCAL_CIDS ? (size_t)lim : QK_CONN_MAX_LOCAL_CIDS;
}

int qk_cid_issue(qk_conn *c)
{
    /* RFC 9000 §5.1.1: zero-length CIDs cannot be changed; nothing to issue. */
    if (c->cids.lcid[0].cid.len == 0 || c->state >= QK_CONN_CLOSING) return 0;
    size_t active = 0;
    for (size_t i = 0; i < QK_CONN_MAX_LOCAL_CIDS; i++) active += c->cids.lcid[i].active;
    size_t target = local_cid_target(c);
    for (size_t i = 0; i < QK_CONN_MAX_LOCAL_CIDS && active < target; i++) {
        qk_local_cid *l = &c->cids.lcid[i];
        if (l->active) continue;
        int rc = QK_ERR_STATE;
        for (int tries = 0; tries < 4 && rc; tries++) { /* collisions are astronomically rare */
            l->cid.len = c->cids.lcid[0].cid.len;
            qk_conn_env_random(c, l->cid.b, l->cid.len);
            qk_cid_encode_server_id(c->cfg, &l->cid);
            rc = qk_conn_env_add_cid(c, &l->cid);
        }
        if (rc) return rc;
        qk_conn_env_reset_token(c, &l->cid, l->reset_token);
        l->seq = c->cids.lcid_next_seq++;
        l->active = true;
        l->send_pending = true;
        active++;
    }
    return 0;
}

/* Queue RETIRE_CONNECTION_ID for seq; false when the queue is full. */
static bool retire(qk_conn *c, uint64_t seq)
{
    for (size_t i = 0; i < c->cids.n_retiring; i++)
        if (c->cids.retiring[i].seq == seq) return true;
    if (c->cids.n_retiring == QK_CONN_MAX_RETIRING) return false;
    c->cids.retiring[c->cids.n_retiring++] = (qk_retiring_cid){.seq = seq, .sent = false};
    return true;
}

/* Switch to another active peer CID when ours was retired. */
static void pick_dcid(qk_conn *c)
{
    if (c->cids.rcid[c->cids.rcid_cur].active) return;
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++)
        if (c->cids.rcid[i].active) {
            c->cids.rcid_cur = i;
            return;
        }
}

int qk_cid_on_new(qk_conn *c, const qk_frame_new_cid *f)
{
    /* RFC 9000 §19.15: a peer using a zero-length CID must not send this. */
    if (c->cids.rcid[c->cids.rcid_cur].cid.len == 0) return QK_ERR_PROTOCOL_VIOLATION;
    size_t active = 0, free_slot = QK_CONN_MAX_REMOTE_CIDS;
    bool have_current_after = false;
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++) {
        qk_remote_cid *r = &c->cids.rcid[i];
        if (r->active && r->seq == f->seq) {
            /* §19.15: the same sequence number with another CID or token. */
            if (r->cid.len != f->cid_len || memcmp(r->cid.b, f->cid, f->cid_len) ||
                !qk_crypto_memeq(r->reset_token, f->reset_token, QK_RESET_TOKEN_LEN))
                return QK_ERR_PROTOCOL_VIOLATION;
            return 0; /* a retransmission */
        }
    }
    /* §5.1.2: retire everything below retire_prior_to. */
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++) {
        qk_remote_cid *r = &c->cids.rcid[i];
        if (r->active && r->seq < f->retire_prior_to) {
            /* §5.1.2: too many retirements outstanding. */
            if (!retire(c, r->seq)) return QK_ERR_CONNECTION_ID_LIMIT;
            r->active = false;
        }
        if (r->active) {
            active++;
            have_current_after = true;
        } else if (free_slot == QK_CONN_MAX_REMOTE_CIDS) {
            free_slot = i;
        }
    }
    if (f->seq < f->retire_prior_to) {
        /* §19.15: a CID retired on arrival is retired at once. */
        if (!retire(c, f->seq)) return QK_ERR_CONNECTION_ID_LIMIT;
        pick_dcid(c);
        return have_current_after ? 0 : QK_ERR_PROTOCOL_VIOLATION;
    }
    /* §5.1.1: more than our active_connection_id_limit. */
    uint64_t limit = c->local_tp.active_connection_id_limit;
    if (active >= limit || free_slot == QK_CONN_MAX_REMOTE_CIDS) return QK_ERR_CONNECTION_ID_LIMIT;
    qk_remote_cid *r = &c->cids.rcid[free_slot];
    if (r->has_token) qk_conn_env_remove_reset_token(c, r->reset_token); /* slot reused */
    memset(r, 0, sizeof *r);
    r->cid.len = (uint8_t)f->cid_len;
    memcpy(r->cid.b, f->cid, f->cid_len);
    r->seq = f->seq;
    memcpy(r->reset_token, f->reset_token, QK_RESET_TOKEN_LEN);
    r->has_token = true;
    qk_conn_env_add_reset_token(c, r->reset_token); /* RFC 9000 §10.3.1: found by hash */
    r->active = true;
    pick_dcid(c);
    return 0;
}

void qk_cid_linger_expire(qk_conn *c, qk_time now)
{
    for (size_t i = 0; i < c->cids.n_linger;) {
        if (c->cids.linger[i].expire_at > now) {
            i++;
            continue;
        }
        qk_conn_env_remove_cid(c, &c->cids.linger[i].cid);
        c->cids.linger[i] = c->cids.linger[--c->cids.n_linger];
    }
}

qk_time qk_cid_linger_deadline(const qk_conn *c)
{
    qk_time t = QK_TIME_INFINITE;
    for (size_t i = 0; i < c->cids.n_linger; i++)
        if (c->cids.linger[i].expire_at < t) t = c->cids.linger[i].expire_at;
    return t;
}

/* Keep a retired CID of ours routed to c until expire_at. RFC 9000 §19.16
 * invalidates its reset token, and §10.3 allows a stateless reset only for a
 * packet "it cannot associate with an active connection": a packet that left
 * the peer before its RETIRE_CONNECTION_ID but arrives after it (reordered on
 * the way, or steered between worker threads or sockets) still belongs to
 * c. Answering it with a reset for a CID the peer holds (ngtcp2 keeps the
 * old path's CID until path validation ends) kills a live connection. The
 * table is bounded: when full, the entry closest to expiry is unrouted. */
static void linger(qk_conn *c, const qk_cid *cid, qk_time expire_at)
{
    if (c->cids.n_linger == QK_CONN_MAX_LINGER_CIDS) {
        size_t old = 0;
        for (size_t i = 1; i < c->cids.n_linger; i++)
            if (c->cids.linger[i].expire_at < c->cids.linger[old].expire_at) old = i;
        qk_conn_env_remove_cid(c, &c->cids.linger[old].cid);
        c->cids.linger[old] = c->cids.linger[--c->cids.n_linger];
    }
    c->cids.linger[c->cids.n_linger++] = (qk_linger_cid){.cid = *cid, .expire_at = expire_at};
}

int qk_cid_on_retire(qk_conn *c, const uint8_t *dcid, size_t dcid_len, uint64_t seq, qk_time now)
{
    qk_cid_linger_expire(c, now);
    if (seq >= c->cids.lcid_next_seq) return QK_ERR_PROTOCOL_VIOLATION; /* RFC 9000 §19.16 */
    for (size_t i = 0; i < QK_CONN_MAX_LOCAL_CIDS; i++) {
        qk_local_cid *l = &c->cids.lcid[i];
        if (!l->active || l->seq != seq) continue;
        /* §19.16: the CID this very packet was sent to must not be retired. */
        if (l->cid.len == dcid_len && !memcmp(l->cid.b, dcid, dcid_len))
            return QK_ERR_PROTOCOL_VIOLATION;
        /* RFC 9000 §10.2 waits 3 PTO for delayed and reordered packets before
         * forgetting a connection; a retired CID gets the same time. */
        linger(c, &l->cid, now + 3 * qk_conn_pto_ns(c));
        l->active = false;
        l->send_pending = false;
        /* lcid[0] is also our long-header SCID: keep using an active one there. */
        if (i == 0) {
            for (size_t j = 1; j < QK_CONN_MAX_LOCAL_CIDS; j++)
                if (c->cids.lcid[j].active) {
                    qk_local_cid t = c->cids.lcid[0];
                    c->cids.lcid[0] = c->cids.lcid[j];
                    c->cids.lcid[j] = t;
                    break;
                }
        }
    }
    /* §5.1.1: replace it, keeping the peer at its limit. */
    return qk_cid_issue(c);
}

void qk_cid_on_retire_acked(qk_conn *c, uint64_t seq)
{
    for (size_t i = 0; i < c->cids.n_retiring; i++)
        if (c->cids.retiring[i].seq == seq) {
            c->cids.retiring[i] = c->cids.retiring[--c->cids.n_retiring];
            return;
        }
}

void qk_cid_on_retire_lost(qk_conn *c, uint64_t seq)
{
    for (size_t i = 0; i < c->cids.n_retiring; i++)
        if (c->cids.retiring[i].seq == seq) c->cids.retiring[i].sent = false;
}

bool qk_cid_is_stateless_reset(const qk_conn *c, const uint8_t *dgram, size_t len)
{
    /* RFC 9000 §10.3.1: at least 21 bytes, the last 16 compared with the
     * tokens of the peer's CIDs (constant time, no early exit per token). */
    if (len < 21 || (dgram[0] & QK_HDR_FORM_LONG)) return false;
    const uint8_t *tail = dgram + len - QK_RESET_TOKEN_LEN;
    bool hit = false;
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++) {
        const qk_remote_cid *r = &c->cids.rcid[i];
        if (r->has_token && (r->active || i == c->cids.rcid_cur))
            hit |= qk_crypto_memeq(r->reset_token, tail, QK_RESET_TOKEN_LEN) != 0;
    }
    return hit;
}

/* QUIC-LB plaintext CIDs (draft-ietf-quic-load-balancers §5.2): the first
 * octet carries config rotation 0 (top 3 bits) and the length
 * self-description (CID length - 1, low 5 bits), the server ID follows in
 * clear, the rest stays random (the nonce). */
#define QK_LB_MIN_CID_BYTES 4u

/* draft-ietf-quic-load-balancers-21 §5.4: the server ID and a nonce, in
 * clear or encrypted; the random bytes already in cid are the nonce (§5.4:
 * a random nonce), the first of them the worker index when asked. */
static void encode_quiclb(const qk_config *cfg, qk_cid *cid)
{
#ifdef QK_NO_QUICLB /* the transport-only library: qk_config_check refuses quiclb */
    (void)cfg;
    (void)cid;
#else
    size_t n = qk_quiclb_cid_bytes(cfg->quiclb);
    if (cid->len != n) return; /* qk_config_check refuses this */
    uint8_t nonce[QK_QUICLB_MAX_CID_BYTES];
    size_t nonce_len = qk_quiclb_nonce_bytes(cfg->quiclb);
    memcpy(nonce, cid->b + n - nonce_len, nonce_len);
    if (cfg->cid_encode_server_id) nonce[0] = cfg->cid_server_id;
    uint8_t out[QK_QUICLB_MAX_CID_BYTES];
    if (qk_quiclb_encode_nonce(cfg->quiclb, NULL, nonce, cid->b[0], out, sizeof out) == (int)n)
        memcpy(cid->b, out, n);
#endif
}

void qk_cid_encode_server_id(const qk_config *cfg, qk_cid *cid)
{
    if (cfg->quiclb) {
        encode_quiclb(cfg, cid);
        return;
    }
    if (!cfg->cid_encode_server_id || cid->len < QK_LB_MIN_CID_BYTES) return;
    cid->b[0] = (uint8_t)((cid->len - 1) & 0x1f);
    cid->b[1] = cfg->cid_server_id;
}

int qk_cid_server_id(const uint8_t *pkt, size_t len, uint8_t cid_bytes, bool *short_header)
{
    if (len < 1) return -1;
    bool sh = !(pkt[0] & 0x80); /* RFC 9000 §17.2: header form bit */
    if (short_header) *short_header = sh;
    const uint8_t *d;
    size_t dlen;
    if (sh) {
        d = pkt + 1; /* RFC 9000 §17.3.1: the DCID follows the first byte */
        dlen = cid_bytes;
        if (len < 1 + (size_t)dlen) return -1;
    } else {
        if (len < 6) return -1; /* RFC 9000 §17.2: version, then DCID length */
        dlen = pkt[5];
        d = pkt + 6;
        if (dlen != cid_bytes || len < 6 + dlen) return -1;
    }
    if (dlen < QK_LB_MIN_CID_BYTES || d[0] != (uint8_t)((dlen - 1) & 0x1f)) return -1;
    return d[1];
}
