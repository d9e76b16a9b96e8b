/* SPDX-License-Identifier: MIT */
/* QUIC key schedule on nettle's HMAC (RFC 5869, RFC 8446 §7.1, RFC 9001 §5). */
#include "crypto/keys.h"

#include <string.h>

#include <nettle/hmac.h>

#include <quack/common.h>

/* RFC 9001 §5.2 */
static const uint8_t initial_salt_v1[20] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34,
                                            0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8,
                                            0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};
/* RFC 9369 §3.3.1 */
static const uint8_t initial_salt_v2[20] = {0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6,
                                            0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26,
                                            0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9};

typedef struct quic_labels {
    const char *key, *iv, *hp, *ku;
} quic_labels;

static const quic_labels labels_v1 = {"quic key", "quic iv", "quic hp", "quic ku"};
/* RFC 9369 §3.3.2 */
static const quic_labels labels_v2 = {"quicv2 key", "quicv2 iv", "quicv2 hp", "quicv2 ku"};

static const quic_labels *labels_for(uint32_t version)
{
    if (version == QK_QUIC_V1) return &labels_v1;
    if (version == QK_QUIC_V2) return &labels_v2;
    return NULL;
}

void qk_crypto_wipe(void *p, size_t len)
{
    volatile uint8_t *v = p;
    while (len--) *v++ = 0;
}

size_t qk_hash_len(qk_hash_alg h)
{
    return h == QK_HASH_SHA384 ? 48 : 32;
}

qk_hash_alg qk_suite_hash(qk_crypto_suite s)
{
    return s == QK_SUITE_AES_256_GCM ? QK_HASH_SHA384 : QK_HASH_SHA256;
}

size_t qk_suite_key_len(qk_crypto_suite s)
{
    switch (s) {
    case QK_SUITE_AES_128_GCM:
    case QK_SUITE_AES_128_CCM: return 16;
    case QK_SUITE_AES_256_GCM: return 32;
    case QK_SUITE_CHACHA20_POLY1305: return 32;
    default: return 0;
    }
}

size_t qk_suite_secret_len(qk_crypto_suite s)
{
    return qk_hash_len(qk_suite_hash(s));
}

const char *qk_suite_name(qk_crypto_suite s)
{
    switch (s) {
    case QK_SUITE_AES_128_GCM: return "AES-128-GCM";
    case QK_SUITE_AES_256_GCM: return "AES-256-GCM";
    case QK_SUITE_CHACHA20_POLY1305: return "ChaCha20-Poly1305";
    case QK_SUITE_AES_128_CCM: return "AES-128-CCM";
    case QK_SUITE_NULL: return "NULL";
    default: return "unknown";
    }
}

/* One HMAC over up to three concatenated pieces (HKDF-Expand's T(n-1)|info|n). */
static void hmac3(qk_hash_alg h, const uint8_t *key, size_t key_len, const uint8_t *a, size_t a_len,
                  const uint8_t *b, size_t b_len, const uint8_t *c, size_t c_len, uint8_t *out)
{
    if (h == QK_HASH_SHA384) {
        struct hmac_sha384_ctx ctx;
        hmac_sha384_set_key(&ctx, key_len, key);
        if (a_len) hmac_sha384_update(&ctx, a_len, a);
        if (b_len) hmac_sha384_update(&ctx, b_len, b);
        if (c_len) hmac_sha384_update(&ctx, c_len, c);
        hmac_sha384_digest(&ctx, 48, out);
        qk_crypto_wipe(&ctx, sizeof ctx);
    } else {
        struct hmac_sha256_ctx ctx;
        hmac_sha256_set_key(&ctx, key_len, key);
        if (a_len) hmac_sha256_update(&ctx, a_len, a);
        if (b_len) hmac_sha256_update(&ctx, b_len, b);
        if (c_len) hmac_sha256_update(&ctx, c_len, c);
        hmac_sha256_digest(&ctx, 32, out);
        qk_crypto_wipe(&ctx, sizeof ctx);
    }
}

int qk_hkdf_extract(qk_hash_alg h, const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
                    size_t ikm_len, uint8_t *prk)
{
    static const uint8_t zeros[48];
    if (!prk || (h != QK_HASH_SHA256 && h != QK_HASH_SHA384)) return QK_ERR_INVALID_ARG;
    /* RFC 5869 §2.2: an absent salt is HashLen zeros. */
    if (!salt || salt_len == 0) {
        salt = zeros;
        salt_len = qk_hash_len(h);
    }
    hmac3(h, salt, salt_len, ikm, ikm ? ikm_len : 0, NULL, 0, NULL, 0, prk);
    return 0;
}

int qk_hkdf_expand(qk_hash_alg h, const uint8_t *prk, size_t prk_len, const uint8_t *info,
                   size_t info_len, uint8_t *out, size_t out_len)
{
    uint8_t t[48];
    size_t hl = qk_hash_len(h), t_len = 0, done = 0;
    if (!prk || (!out && out_len) || (h != QK_HASH_SHA256 && h != QK_HASH_SHA384))
        return QK_ERR_INVALID_ARG;
    if (out_len > 255 * hl) return QK_ERR_INVALID_ARG; /* RFC 5869 §2.3 */
    for (uint8_t n = 1; done < out_len; n++) {
        hmac3(h, prk, prk_len, t, t_len, info, info ? info_len : 0, &n, 1, t);
        t_len = hl;
        size_t take = out_len - done < hl ? out_len - done : hl;
        memcpy(out + done, t, take);
        done += take;
    }
    qk_crypto_wipe(t, sizeof t);
    return 0;
}

int qk_hkdf_expand_label(qk_hash_alg h, const uint8_t *secret, size_t secret_len, const char *label,
                         const uint8_t *ctx, size_t ctx_len, uint8_t *out, size_t out_len)
{
    /* RFC 8446 §7.1: struct { uint16 length; opaque label<7..255>; opaque context<0..255>; } */
    static const char prefix[] = "tls13 ";
    uint8_t info[2 + 1 + 255 + 1 + 255];
    size_t label_len = label ? strlen(label) : 0, pl = sizeof prefix - 1, n = 0;
    if (!label || pl + label_len > 255 || ctx_len > 255 || out_len > 0xffff || (ctx_len && !ctx))
        return QK_ERR_INVALID_ARG;
    info[n++] = (uint8_t)(out_len >> 8);
    info[n++] = (uint8_t)out_len;
    info[n++] = (uint8_t)(pl + label_len);
    memcpy(info + n, prefix, pl);
    n += pl;
    memcpy(info + n, label, label_len);
    n += label_len;
    info[n++] = (uint8_t)ctx_len;
    if (ctx_len) memcpy(info + n, ctx, ctx_len);
    n += ctx_len;
    return qk_hkdf_expand(h, secret, secret_len, info, n, out, out_len);
}

int qk_crypto_initial_secrets(uint32_t version, const uint8_t *dcid, size_t dcid_len,
                              uint8_t client_secret[QK_INITIAL_SECRET_BYTES],
                              uint8_t server_secret[QK_INITIAL_SECRET_BYTES])
{
    uint8_t initial[32];
    const uint8_t *salt;
    if (version == QK_QUIC_V1)
        salt = initial_salt_v1;
    else if (version == QK_QUIC_V2)
        salt = initial_salt_v2;
    else
        return QK_ERR_VERSION;
    if ((!dcid && dcid_len) || dcid_len > 255 || !client_secret || !server_secret)
        return QK_ERR_INVALID_ARG;
    /* RFC 9001 §5.2: initial_secret = HKDF-Extract(initial_salt, client_dst_connection_id) */
    qk_hkdf_extract(QK_HASH_SHA256, salt, sizeof initial_salt_v1, dcid, dcid_len, initial);
    int rc =
        qk_hkdf_expand_label(QK_HASH_SHA256, initial, 32, "client in", NULL, 0, client_secret, 32);
    if (rc == 0)
        rc = qk_hkdf_expand_label(QK_HASH_SHA256, initial, 32, "server in", NULL, 0, server_secret,
                                  32);
    qk_crypto_wipe(initial, sizeof initial);
    return rc;
}

int qk_crypto_derive_material(uint32_t version, qk_crypto_suite suite, const uint8_t *secret,
                              size_t secret_len, qk_key_material *out)
{
    const quic_labels *lb = labels_for(version);
    if (!lb) return QK_ERR_VERSION;
    size_t kl = qk_suite_key_len(suite);
    qk_hash_alg h = qk_suite_hash(suite);
    if (!out || !secret || kl == 0 || secret_len != qk_hash_len(h)) return QK_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->key_len = kl;
    /* RFC 9001 §5.1: key, iv and hp from the traffic secret. */
    int rc = qk_hkdf_expand_label(h, secret, secret_len, lb->key, NULL, 0, out->key, kl);
    if (rc == 0)
        rc =
            qk_hkdf_expand_label(h, secret, secret_len, lb->iv, NULL, 0, out->iv, QK_AEAD_IV_BYTES);
    if (rc == 0) rc = qk_hkdf_expand_label(h, secret, secret_len, lb->hp, NULL, 0, out->hp, kl);
    return rc;
}

int qk_crypto_next_secret(uint32_t version, qk_crypto_suite suite, const uint8_t *secret,
                          size_t secret_len, uint8_t *out)
{
    uint8_t tmp[QK_SECRET_MAX_BYTES];
    const quic_labels *lb = labels_for(version);
    if (!lb) return QK_ERR_VERSION;
    qk_hash_alg h = qk_suite_hash(suite);
    if (!secret || !out || qk_suite_key_len(suite) == 0 || secret_len != qk_hash_len(h))
        return QK_ERR_INVALID_ARG;
    /* RFC 9001 §6.1: secret_<n+1> = HKDF-Expand-Label(secret_<n>, "quic ku", "", Hash.length) */
    int rc = qk_hkdf_expand_label(h, secret, secret_len, lb->ku, NULL, 0, tmp, secret_len);
    if (rc == 0) memcpy(out, tmp, secret_len);
    qk_crypto_wipe(tmp, sizeof tmp);
    return rc;
}
