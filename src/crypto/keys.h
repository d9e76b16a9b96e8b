/* SPDX-License-Identifier: MIT */
/*
 * QUIC key schedule: HKDF (RFC 5869), HKDF-Expand-Label (RFC 8446 §7.1),
 * Initial secrets (RFC 9001 §5.2, RFC 9369 §3.3), packet key/IV/HP derivation
 * (RFC 9001 §5.1) and the key-update secret (RFC 9001 §6.1).
 */
#ifndef QK_CRYPTO_KEYS_H
#define QK_CRYPTO_KEYS_H

#include <stddef.h>
#include <stdint.h>

#define QK_QUIC_V1 0x00000001u
#define QK_QUIC_V2 0x6b3343cfu /* RFC 9369 §3.1 */

#define QK_SECRET_MAX_BYTES     48 /* SHA-384 */
#define QK_AEAD_KEY_MAX_BYTES   32
#define QK_AEAD_IV_BYTES        12
#define QK_AEAD_TAG_BYTES       16
#define QK_HP_SAMPLE_BYTES      16
#define QK_HP_MASK_BYTES        5
#define QK_INITIAL_SECRET_BYTES 32

/** Packet protection suites. QK_SUITE_NULL is never negotiated by TLS. */
typedef enum qk_crypto_suite {
    QK_SUITE_UNKNOWN = 0,
    QK_SUITE_AES_128_GCM = 1,       /* TLS_AES_128_GCM_SHA256 */
    QK_SUITE_AES_256_GCM = 2,       /* TLS_AES_256_GCM_SHA384 */
    QK_SUITE_CHACHA20_POLY1305 = 3, /* TLS_CHACHA20_POLY1305_SHA256 */
    QK_SUITE_NULL = 4,              /* --no-protection benchmarks only */
    QK_SUITE_AES_128_CCM = 5,       /* TLS_AES_128_CCM_SHA256 (RFC 9001 §5.3) */
    QK_SUITE_COUNT
} qk_crypto_suite;

/** Encryption levels, in handshake order (same order as GnuTLS's levels). */
typedef enum qk_crypto_level {
    QK_LEVEL_INITIAL = 0,
    QK_LEVEL_EARLY = 1, /* 0-RTT */
    QK_LEVEL_HANDSHAKE = 2,
    QK_LEVEL_APPLICATION = 3, /* 1-RTT */
    QK_LEVEL_COUNT = 4
} qk_crypto_level;

typedef enum qk_hash_alg { QK_HASH_SHA256 = 0, QK_HASH_SHA384 = 1 } qk_hash_alg;

/** Digest length of a hash in bytes (32 or 48). */
size_t qk_hash_len(qk_hash_alg h);

/** Hash of a suite's TLS PRF (SHA-256 for NULL). */
qk_hash_alg qk_suite_hash(qk_crypto_suite s);
/** AEAD key length of a suite in bytes (0 for NULL/unknown). */
size_t qk_suite_key_len(qk_crypto_suite s);
/** Traffic-secret length of a suite (= hash length). */
size_t qk_suite_secret_len(qk_crypto_suite s);
/** Short name ("AES-128-GCM", ...). Never NULL. */
const char *qk_suite_name(qk_crypto_suite s);

/**
 * HKDF-Extract (RFC 5869 §2.2): prk = HMAC-Hash(salt, ikm); prk has
 * qk_hash_len(h) bytes. Returns 0 or QK_ERR_INVALID_ARG.
 */
int qk_hkdf_extract(qk_hash_alg h, const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
                    size_t ikm_len, uint8_t *prk);

/**
 * HKDF-Expand (RFC 5869 §2.3). out_len <= 255 * hash length.
 * Returns 0 or QK_ERR_INVALID_ARG.
 */
int qk_hkdf_expand(qk_hash_alg h, const uint8_t *prk, size_t prk_len, const uint8_t *info,
                   size_t info_len, uint8_t *out, size_t out_len);

/**
 * HKDF-Expand-Label (RFC 8446 §7.1) with the "tls13 " prefix; label is the
 * bare label ("quic key"). ctx may be NULL when ctx_len is 0.
 * Returns 0 or QK_ERR_INVALID_ARG (label/context/output too long).
 */
int qk_hkdf_expand_label(qk_hash_alg h, const uint8_t *secret, size_t secret_len, const char *label,
                         const uint8_t *ctx, size_t ctx_len, uint8_t *out, size_t out_len);

/**
 * Initial secrets for a client-chosen Destination Connection ID
 * (RFC 9001 §5.2; RFC 9369 §3.3.1 salt for v2). Each output is 32 bytes
 * (SHA-256, suite AES-128-GCM). Returns 0, QK_ERR_VERSION or QK_ERR_INVALID_ARG.
 */
int qk_crypto_initial_secrets(uint32_t version, const uint8_t *dcid, size_t dcid_len,
                              uint8_t client_secret[QK_INITIAL_SECRET_BYTES],
                              uint8_t server_secret[QK_INITIAL_SECRET_BYTES]);

/**
 * Key material derived from one traffic secret (RFC 9001 §5.1): AEAD key,
 * IV and header-protection key. Returns 0, QK_ERR_VERSION or
 * QK_ERR_INVALID_ARG (unknown suite, secret_len != hash length).
 */
typedef struct qk_key_material {
    uint8_t key[QK_AEAD_KEY_MAX_BYTES];
    uint8_t iv[QK_AEAD_IV_BYTES];
    uint8_t hp[QK_AEAD_KEY_MAX_BYTES];
    size_t key_len; /* = hp key length */
} qk_key_material;

int qk_crypto_derive_material(uint32_t version, qk_crypto_suite suite, const uint8_t *secret,
                              size_t secret_len, qk_key_material *out);

/**
 * Next-generation secret for a key update (RFC 9001 §6.1, label "quic ku";
 * "quicv2 ku" for v2). out has secret_len bytes and may alias secret.
 * Returns 0, QK_ERR_VERSION or QK_ERR_INVALID_ARG.
 */
int qk_crypto_next_secret(uint32_t version, qk_crypto_suite suite, const uint8_t *secret,
                          size_t secret_len, uint8_t *out);

/** Overwrite len bytes with zeros in a way the compiler does not elide. */
void qk_crypto_wipe(void *p, size_t len);

#endif
