/* SPDX-License-Identifier: MIT */
/* Endpoint-level stateless packets and address tokens (see stateless.h). */
#include "transport/endpoint/stateless.h"

#include <netinet/in.h>
#include <quack/common.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/keys.h"
#include "crypto/packet.h"
#include "wire/frame.h"

/* Labels longer than any CID (20 bytes), so HMAC(static key, label) can never
 * equal the reset token of one of our CIDs. */
static const char LABEL_TOKEN_KEY_1[] = "quack address-token key, part 1";
static const char LABEL_TOKEN_KEY_2[] = "quack address-token key, part 2";

int qk_stateless_init(qk_stateless *s, const uint8_t key[QK_SL_STATIC_KEY_LEN],
                      uint32_t resets_per_s, qk_rng_fn rng, void *rng_ctx)
{
    memset(s, 0, sizeof *s);
    memcpy(s->static_key, key, QK_SL_STATIC_KEY_LEN);
    s->rng = rng;
    s->rng_ctx = rng_ctx;
    s->reset_interval_ns = QK_NS_PER_S / (resets_per_s ? resets_per_s : 100);
    s->q = calloc(QK_SL_QUEUE, sizeof *s->q);
    if (!s->q) return QK_ERR_NOMEM;
    uint8_t tk[QK_ADDR_TOKEN_KEY_BYTES];
    qk_reset_token(key, QK_SL_STATIC_KEY_LEN, (const uint8_t *)LABEL_TOKEN_KEY_1,
                   sizeof LABEL_TOKEN_KEY_1 - 1, tk);
    qk_reset_token(key, QK_SL_STATIC_KEY_LEN, (const uint8_t *)LABEL_TOKEN_KEY_2,
                   sizeof LABEL_TOKEN_KEY_2 - 1, tk + 16);
    int rc = qk_addr_token_key_init(&s->tkey, tk);
    qk_crypto_wipe(tk, sizeof tk);
    if (rc) {
        free(s->q);
        s->q = NULL;
        return rc;
    }
    s->has_tkey = true;
    return 0;
}

void qk_stateless_free(qk_stateless *s)
{
    if (s->has_tkey) qk_addr_token_key_free(&s->tkey);
    s->has_tkey = false;
    free(s->q);
    s->q = NULL;
    qk_crypto_wipe(s->static_key, sizeof s->static_key);
}

void qk_stateless_reset_token(const qk_stateless *s, const uint8_t *cid, size_t cid_len,
                              uint8_t token[QK_RESET_TOKEN_LEN])
{
    qk_reset_token(s->static_key, QK_SL_STATIC_KEY_LEN, cid, cid_len, token);
}

/* A queue slot addressed back to d's sender, or NULL when the queue is full. */
static qk_sl_pkt *slot_for(qk_stateless *s, const qk_datagram *d)
{
    if (!s->q || s->count == QK_SL_QUEUE) {
        s->stats.stateless_dropped++;
        return NULL;
    }
    qk_sl_pkt *p = &s->q[(s->head + s->count) % QK_SL_QUEUE];
    p->peer = d->peer;
    p->local = d->local;
    p->len = 0;
    return p;
}

static void commit(qk_stateless *s, qk_sl_pkt *p, size_t len)
{
    p->len = len;
    s->count++;
}

bool qk_stateless_pop(qk_stateless *s, qk_datagram *out)
{
    while (s->count) {
        qk_sl_pkt *p = &s->q[s->head];
        s->head = (s->head + 1) % QK_SL_QUEUE;
        s->count--;
        if (p->len > out->len) continue; /* caller buffer too small: drop */
        memcpy(out->data, p->data, p->len);
        out->len = p->len;
        out->peer = p->peer;
        out->local = p->local;
        out->ecn = QK_ECN_NOT_ECT;
        out->segment_bytes = 0;
        return true;
    }
    return false;
}

void qk_stateless_send_vn(qk_stateless *s, const qk_datagram *d, const qk_pkt_hdr *h,
                          const uint32_t *versions, size_t n)
{
    uint32_t list[8];
    size_t k = 0;
    for (size_t i = 0; i < n && k < 7; i++) list[k++] = versions[i];
    uint8_t r[5];
    s->rng(s->rng_ctx, r, sizeof r);
    /* RFC 9000 §6.3 / RFC 8999 §6: a reserved 0x?a?a?a?a version keeps clients honest. */
    uint32_t g = (uint32_t)r[1] << 24 | (uint32_t)r[2] << 16 | (uint32_t)r[3] << 8 | r[4];
    list[k++] = (g & 0xf0f0f0f0u) | 0x0a0a0a0au;
    qk_sl_pkt *p = slot_for(s, d);
    if (!p) return;
    /* RFC 9000 §17.2.1: DCID/SCID echo the client's SCID/DCID. */
    int len = qk_pkt_encode_vn(p->data, sizeof p->data, r[0], h->scid, h->scid_len, h->dcid,
                               h->dcid_len, list, k);
    if (len <= 0) return;
    commit(s, p, (size_t)len);
    s->stats.vn_sent++;
}

/* Address bytes bound into a token: IP (+ port). Returns the length. */
static size_t addr_bytes(const qk_addr *a, bool with_port, uint8_t out[QK_ADDR_TOKEN_ADDR_MAX])
{
    if (a->len && a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)&a->ss;
        memcpy(out, &x->sin_addr, 4);
        memcpy(out + 4, &x->sin_port, 2);
        return with_port ? 6 : 4;
    }
    if (a->len && a->ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)&a->ss;
        memcpy(out, &x->sin6_addr, 16);
        memcpy(out + 16, &x->sin6_port, 2);
        return with_port ? 18 : 16;
    }
    return 0;
}

int qk_stateless_mint(qk_stateless *s, int kind, const qk_addr *peer, const uint8_t *extra,
                      size_t extra_len, qk_time now, uint8_t *out, size_t cap)
{
    if (!s->has_tkey || extra_len > QK_ADDR_TOKEN_EXTRA_MAX) return QK_ERR_INVALID_ARG;
    qk_addr_token t;
    memset(&t, 0, sizeof t);
    t.kind = (uint8_t)kind;
    t.issued_ns = now;
    /* RFC 9000 §8.1.3: a NEW_TOKEN token survives a port change (NAT). */
    t.addr_len = addr_bytes(peer, kind == QK_ADDR_TOKEN_RETRY, t.addr);
    if (extra_len) memcpy(t.extra, extra, extra_len);
    t.extra_len = extra_len;
    uint8_t nonce[QK_AEAD_IV_BYTES];
    s->rng(s->rng_ctx, nonce, sizeof nonce);
    return qk_addr_token_seal(&s->tkey, &t, nonce, out, cap);
}

qk_token_verdict qk_stateless_check_token(qk_stateless *s, const uint8_t *tok, size_t len,
                                          const qk_addr *peer, qk_time now,
                                          qk_time retry_lifetime_ns, qk_time new_lifetime_ns,
                                          uint8_t odcid[QK_MAX_CID_LEN], size_t *odcid_len)
{
    qk_addr_token t;
    if (!len || !s->has_tkey || qk_addr_token_open(&s->tkey, tok, len, &t)) {
        if (len) s->stats.tokens_ignored++;
        return QK_TOKEN_NONE; /* forged, another server's, or garbage: as if none */
    }
    uint8_t a[QK_ADDR_TOKEN_ADDR_MAX];
    size_t alen = addr_bytes(peer, t.kind == QK_ADDR_TOKEN_RETRY, a);
    bool addr_ok = alen == t.addr_len && !memcmp(a, t.addr, alen);
    /* Tokens from the future (clock moved back) are treated as expired. */
    qk_time age = now >= t.issued_ns ? now - t.issued_ns : QK_TIME_INFINITE;
    if (t.kind == QK_ADDR_TOKEN_RETRY) {
        /* RFC 9000 §8.1.3: an invalid Retry token closes with INVALID_TOKEN. */
        if (!addr_ok || age > retry_lifetime_ns || t.extra_len > QK_MAX_CID_LEN) {
            s->stats.tokens_refused++;
            return QK_TOKEN_RETRY_BAD;
        }
        memcpy(odcid, t.extra, t.extra_len);
        *odcid_len = t.extra_len;
        s->stats.tokens_accepted++;
        return QK_TOKEN_RETRY_OK;
    }
    if (t.kind == QK_ADDR_TOKEN_NEW_TOKEN && addr_ok && age <= new_lifetime_ns) {
        s->stats.tokens_accepted++;
        return QK_TOKEN_NEW_OK;
    }
    /* RFC 9000 §8.1.3: a stale NEW_TOKEN token is treated as no token. */
    s->stats.tokens_ignored++;
    return QK_TOKEN_NONE;
}

int qk_stateless_send_retry(qk_stateless *s, const qk_datagram *d, const qk_pkt_hdr *h,
                            size_t scid_len, qk_time now)
{
    uint8_t token[QK_ADDR_TOKEN_MAX_BYTES];
    int tlen = qk_stateless_mint(s, QK_ADDR_TOKEN_RETRY, &d->peer, h->dcid, h->dcid_len, now, token,
                                 sizeof token);
    if (tlen < 0) return tlen;
    qk_sl_pkt *p = slot_for(s, d);
    if (!p) return QK_ERR_LIMIT;
    uint8_t scid[QK_MAX_CID_LEN], rb;
    s->rng(s->rng_ctx, scid, scid_len);
    s->rng(s->rng_ctx, &rb, 1);
    /* RFC 9000 §17.2.5: DCID = the client's SCID; a new SCID of our choosing. */
    int n = qk_pkt_encode_retry(p->data, sizeof p->data - QK_RETRY_TAG_LEN, h->version, rb, h->scid,
                                h->scid_len, scid, scid_len, token, (size_t)tlen);
    if (n < 0) return n;
    uint8_t pseudo[QK_SL_PKT_MAX + 32];
    int pl = qk_pkt_retry_pseudo(pseudo, sizeof pseudo, h->dcid, h->dcid_len, p->data, (size_t)n);
    if (pl < 0) return pl;
    /* RFC 9001 §5.8: the integrity tag over the pseudo-packet. */
    int rc = qk_retry_tag_compute(h->version, pseudo, (size_t)pl, p->data + n);
    if (rc) return rc;
    commit(s, p, (size_t)n + QK_RETRY_TAG_LEN);
    s->stats.retry_sent++;
    return 0;
}

int qk_stateless_send_close(qk_stateless *s, const qk_datagram *d, const qk_pkt_hdr *h,
                            uint64_t code, const char *reason)
{
    uint8_t cs[QK_INITIAL_SECRET_BYTES], ss[QK_INITIAL_SECRET_BYTES];
    int rc = qk_crypto_initial_secrets(h->version, h->dcid, h->dcid_len, cs, ss);
    if (rc) return rc;
    qk_pkt_keys k;
    memset(&k, 0, sizeof k);
    rc = qk_pkt_keys_init_ex(&k, h->version, QK_SUITE_AES_128_GCM, QK_AEAD_BACKEND_AUTO, ss,
                             sizeof ss);
    qk_crypto_wipe(cs, sizeof cs);
    qk_crypto_wipe(ss, sizeof ss);
    if (rc) return rc;
    qk_sl_pkt *p = slot_for(s, d);
    if (!p) {
        qk_pkt_keys_free(&k);
        return QK_ERR_LIMIT;
    }
    /* RFC 9000 §17.2.2: an Initial from the server; our SCID echoes the DCID. */
    qk_long_hdr_params hp = {.type = QK_PKT_INITIAL,
                             .version = h->version,
                             .dcid = h->scid,
                             .dcid_len = h->scid_len,
                             .scid = h->dcid,
                             .scid_len = h->dcid_len,
                             .pn = 0,
                             .pn_len = 2};
    size_t lo = 0, po = 0;
    int hl = qk_pkt_encode_long(p->data, sizeof p->data, &hp, &lo, &po);
    qk_frame f = {.type = QK_FT_CONNECTION_CLOSE};
    f.u.close.error_code = code;
    f.u.close.reason = (const uint8_t *)reason;
    f.u.close.reason_len = strlen(reason);
    int fl =
        hl < 0 ? hl
               : qk_frame_encode(&f, p->data + hl, sizeof p->data - (size_t)hl - QK_AEAD_TAG_BYTES);
    if (fl >= 0 && fl < 4) { /* header-protection sample needs 4 bytes after the pn (§5.4.2) */
        memset(p->data + hl + fl, 0, (size_t)(4 - fl));
        fl = 4;
    }
    if (hl >= 0 && fl >= 0) {
        qk_pkt_patch_length(p->data, lo, hp.pn_len + (size_t)fl + QK_AEAD_TAG_BYTES);
        rc = qk_pkt_seal(&k, 0, p->data, (size_t)hl, p->data + hl, (size_t)fl);
        size_t total = (size_t)hl + (size_t)fl + QK_AEAD_TAG_BYTES;
        if (rc >= 0) rc = qk_hp_protect(&k, p->data, total, po);
        if (rc >= 0) {
            commit(s, p, total);
            rc = 0;
        }
    } else {
        rc = hl < 0 ? hl : fl;
    }
    qk_pkt_keys_free(&k);
    return rc;
}

bool qk_stateless_send_reset(qk_stateless *s, const qk_datagram *d, const uint8_t *dcid,
                             size_t dcid_len, qk_time now)
{
    /* RFC 9000 §10.3.3: never answer a packet that could itself be a minimal
     * reset, and always answer with something smaller, so two endpoints can
     * never loop. */
    if (d->len <= QK_SL_RESET_MIN) {
        s->stats.resets_limited++;
        return false;
    }
    /* Rate limit (GCRA, one second of burst). */
    if (s->reset_tat < now) s->reset_tat = now;
    if (s->reset_tat - now > QK_NS_PER_S) {
        s->stats.resets_limited++;
        return false;
    }
    qk_sl_pkt *p = slot_for(s, d);
    if (!p) return false;
    s->reset_tat += s->reset_interval_ns;
    uint8_t r;
    s->rng(s->rng_ctx, &r, 1);
    /* RFC 9000 §10.3: look like a short-header packet; 43 bytes or fewer in
     * answer to small packets (one byte shorter), else a random size. */
    size_t len = d->len - 1;
    if (len > 43) len = 43 + r % (QK_SL_RESET_MAX - 43 + 1);
    if (len >= d->len) len = d->len - 1;
    s->rng(s->rng_ctx, p->data, len - QK_RESET_TOKEN_LEN);
    p->data[0] = (uint8_t)((p->data[0] & 0x3f) | QK_HDR_FIXED_BIT); /* 01xxxxxx */
    qk_stateless_reset_token(s, dcid, dcid_len, p->data + len - QK_RESET_TOKEN_LEN);
    commit(s, p, len);
    s->stats.resets_sent++;
    return true;
}

void qk_stateless_store_token(qk_stateless *s, const qk_addr *peer, const uint8_t *tok, size_t len,
                              qk_time now)
{
    if (!len || len > QK_SL_TOKEN_MAX) return; /* too long to keep: ignore */
    qk_sl_token *e = NULL;
    for (size_t i = 0; i < QK_SL_TOKEN_CACHE && !e; i++)
        if (s->cache[i].len && qk_addr_equal(&s->cache[i].peer, peer)) e = &s->cache[i];
    for (size_t i = 0; i < QK_SL_TOKEN_CACHE && !e; i++)
        if (!s->cache[i].len) e = &s->cache[i];
    if (!e) {
        e = &s->cache[0];
        for (size_t i = 1; i < QK_SL_TOKEN_CACHE; i++)
            if (s->cache[i].stored < e->stored) e = &s->cache[i];
    }
    e->peer = *peer;
    e->stored = now;
    e->len = len;
    memcpy(e->b, tok, len);
}

size_t qk_stateless_take_token(qk_stateless *s, const qk_addr *peer, uint8_t *out, size_t cap)
{
    for (size_t i = 0; i < QK_SL_TOKEN_CACHE; i++) {
        qk_sl_token *e = &s->cache[i];
        if (!e->len || !qk_addr_equal(&e->peer, peer) || e->len > cap) continue;
        size_t n = e->len;
        memcpy(out, e->b, n);
        e->len = 0;
        return n;
    }
    return 0;
}
