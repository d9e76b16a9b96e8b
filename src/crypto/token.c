/* SPDX-License-Identifier: MIT */
/* Retry integrity tags, stateless reset tokens and address-validation tokens. */
#include "crypto/token.h"

#include <string.h>

#include <nettle/hkdf.h>
#include <nettle/hmac.h>

#include <quack/quack.h>

/* RFC 9001 §5.8 */
static const uint8_t retry_key_v1[16] = {0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a,
                                         0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e};
static const uint8_t retry_nonce_v1[12] = {0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63,
                                           0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb};
/* RFC 9369 §3.3.3 */
static const uint8_t retry_key_v2[16] = {0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2,
                                         0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc, 0x92};
static const uint8_t retry_nonce_v2[12] = {0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c,
                                           0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a};

int qk_crypto_memeq(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    uint8_t d = 0;
    for (size_t i = 0; i < n; i++) d |= (uint8_t)(x[i] ^ y[i]);
    return d == 0;
}

int qk_retry_tag_compute(uint32_t version, const uint8_t *pseudo, size_t pseudo_len,
                         uint8_t tag[QK_RETRY_TAG_BYTES])
{
    const uint8_t *key, *nonce;
    qk_aead a;
    if (version == QK_QUIC_V1)
        key = retry_key_v1, nonce = retry_nonce_v1;
    else if (version == QK_QUIC_V2)
        key = retry_key_v2, nonce = retry_nonce_v2;
    else
        return QK_ERR_VERSION;
    /* RFC 9001 §5.8: AEAD_AES_128_GCM, empty plaintext, AAD = Retry pseudo-packet. */
    int rc = qk_aead_init(&a, QK_SUITE_AES_128_GCM, QK_AEAD_BACKEND_AUTO, key, sizeof retry_key_v1);
    if (rc < 0) return rc;
    rc = qk_aead_seal(&a, nonce, pseudo, pseudo_len, NULL, 0, tag);
    qk_aead_free(&a);
    return rc;
}

int qk_retry_tag_verify(uint32_t version, const uint8_t *pseudo, size_t pseudo_len,
                        const uint8_t tag[QK_RETRY_TAG_BYTES])
{
    uint8_t want[QK_RETRY_TAG_BYTES];
    int rc = qk_retry_tag_compute(version, pseudo, pseudo_len, want);
    if (rc < 0) return rc;
    return qk_crypto_memeq(want, tag, QK_RETRY_TAG_BYTES) ? 0 : QK_ERR_DECRYPT;
}

int qk_reset_token(const uint8_t *static_key, size_t key_len, const uint8_t *cid, size_t cid_len,
                   uint8_t token[QK_RESET_TOKEN_BYTES])
{
    struct hmac_sha256_ctx ctx;
    if (!static_key || key_len == 0 || (!cid && cid_len) || !token) return QK_ERR_INVALID_ARG;
    /* RFC 9000 §10.3.2: a token derived from a static key and the CID. */
    hmac_sha256_set_key(&ctx, key_len, static_key);
    hmac_sha256_update(&ctx, cid_len, cid);
    hmac_sha256_digest(&ctx, QK_RESET_TOKEN_BYTES, token);
    qk_crypto_wipe(&ctx, sizeof ctx);
    return 0;
}

int qk_fleet_static_key(const uint8_t *secret, size_t secret_len, uint8_t out[32])
{
    static const char salt[] = "quack fleet v1", label[] = "quack static key";
    if (!secret || secret_len < QK_FLEET_SECRET_MIN_BYTES || !out) return QK_ERR_INVALID_ARG;
    /* RFC 5869 §2.2, §2.3: HKDF-SHA256 extract, then expand with the label. */
    struct hmac_sha256_ctx ctx;
    uint8_t prk[SHA256_DIGEST_SIZE];
    hmac_sha256_set_key(&ctx, sizeof salt - 1, (const uint8_t *)salt);
    hkdf_extract(&ctx, (nettle_hash_update_func *)hmac_sha256_update,
                 (nettle_hash_digest_func *)hmac_sha256_digest, SHA256_DIGEST_SIZE, secret_len,
                 secret, prk);
    hmac_sha256_set_key(&ctx, sizeof prk, prk);
    hkdf_expand(&ctx, (nettle_hash_update_func *)hmac_sha256_update,
                (nettle_hash_digest_func *)hmac_sha256_digest, SHA256_DIGEST_SIZE, sizeof label - 1,
                (const uint8_t *)label, 32, out);
    qk_crypto_wipe(&ctx, sizeof ctx);
    qk_crypto_wipe(prk, sizeof prk);
    return 0;
}

int qk_addr_token_key_init(qk_addr_token_key *k, const uint8_t key[QK_ADDR_TOKEN_KEY_BYTES])
{
    if (!k || !key) return QK_ERR_INVALID_ARG;
    return qk_aead_init(&k->aead, QK_SUITE_AES_256_GCM, QK_AEAD_BACKEND_AUTO, key,
                        QK_ADDR_TOKEN_KEY_BYTES);
}

void qk_addr_token_key_free(qk_addr_token_key *k)
{
    if (k) qk_aead_free(&k->aead);
}

size_t qk_addr_token_size(const qk_addr_token *t)
{
    return QK_AEAD_IV_BYTES + 1 + 8 + 1 + t->addr_len + 1 + t->extra_len + QK_AEAD_TAG_BYTES;
}

/*
 * Layout: nonce(12) | enc{ time(8, BE) | addr_len(1) | addr | extra_len(1) | extra } | tag(16).
 * The kind byte sits after the nonce in clear and is authenticated as AAD.
 */
int qk_addr_token_seal(qk_addr_token_key *k, const qk_addr_token *t,
                       const uint8_t nonce[QK_AEAD_IV_BYTES], uint8_t *out, size_t cap)
{
    if (!k || !t || !nonce || !out || t->addr_len > QK_ADDR_TOKEN_ADDR_MAX ||
        t->extra_len > QK_ADDR_TOKEN_EXTRA_MAX)
        return QK_ERR_INVALID_ARG;
    size_t need = qk_addr_token_size(t);
    if (cap < need) return QK_ERR_BUFFER_TOO_SMALL;
    size_t n = 0;
    memcpy(out, nonce, QK_AEAD_IV_BYTES);
    n += QK_AEAD_IV_BYTES;
    out[n++] = t->kind;
    size_t body = n;
    for (int i = 7; i >= 0; i--) out[n++] = (uint8_t)(t->issued_ns >> (8 * i));
    out[n++] = (uint8_t)t->addr_len;
    memcpy(out + n, t->addr, t->addr_len);
    n += t->addr_len;
    out[n++] = (uint8_t)t->extra_len;
    memcpy(out + n, t->extra, t->extra_len);
    n += t->extra_len;
    int rc = qk_aead_seal(&k->aead, out, out, body, out + body, n - body, out + n);
    if (rc < 0) return rc;
    return (int)need;
}

int qk_addr_token_open(qk_addr_token_key *k, const uint8_t *tok, size_t len, qk_addr_token *t)
{
    uint8_t buf[QK_ADDR_TOKEN_MAX_BYTES];
    const size_t hdr = QK_AEAD_IV_BYTES + 1, min = hdr + 8 + 1 + 1 + QK_AEAD_TAG_BYTES;
    if (!k || !tok || !t || len < min || len > sizeof buf) return QK_ERR_INVALID_TOKEN;
    memcpy(buf, tok, len);
    size_t clen = len - hdr - QK_AEAD_TAG_BYTES;
    if (qk_aead_open(&k->aead, buf, buf, hdr, buf + hdr, clen, buf + hdr + clen) < 0)
        return QK_ERR_INVALID_TOKEN;
    const uint8_t *p = buf + hdr, *end = buf + hdr + clen;
    memset(t, 0, sizeof *t);
    t->kind = buf[QK_AEAD_IV_BYTES];
    for (int i = 0; i < 8; i++) t->issued_ns = (t->issued_ns << 8) | *p++;
    t->addr_len = *p++;
    if (t->addr_len > QK_ADDR_TOKEN_ADDR_MAX || (size_t)(end - p) < t->addr_len + 1)
        return QK_ERR_INVALID_TOKEN;
    memcpy(t->addr, p, t->addr_len);
    p += t->addr_len;
    t->extra_len = *p++;
    if (t->extra_len > QK_ADDR_TOKEN_EXTRA_MAX || (size_t)(end - p) != t->extra_len)
        return QK_ERR_INVALID_TOKEN;
    memcpy(t->extra, p, t->extra_len);
    return 0;
}
