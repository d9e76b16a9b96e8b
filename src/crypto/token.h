/* SPDX-License-Identifier: MIT */
/*
 * Stateless crypto helpers for the endpoint: Retry integrity tag
 * (RFC 9001 §5.8), stateless reset tokens (RFC 9000 §10.3.2) and
 * address-validation tokens (RFC 9000 §8.1.3, §8.1.4).
 */
#ifndef QK_CRYPTO_TOKEN_H
#define QK_CRYPTO_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include <quack/common.h>

#include "crypto/aead.h"

#define QK_RETRY_TAG_BYTES      16
#define QK_RESET_TOKEN_BYTES    16
#define QK_ADDR_TOKEN_KEY_BYTES 32
#define QK_ADDR_TOKEN_EXTRA_MAX 32 /* e.g. an original DCID (<= 20 bytes) */
#define QK_ADDR_TOKEN_ADDR_MAX  32 /* IPv6 address + port fits */
/* nonce(12) + kind(1) + time(8) + addr_len(1) + addr + extra_len(1) + extra + tag(16) */
#define QK_ADDR_TOKEN_MAX_BYTES                                                                    \
    (12 + 1 + 8 + 1 + QK_ADDR_TOKEN_ADDR_MAX + 1 + QK_ADDR_TOKEN_EXTRA_MAX + 16)

/**
 * Retry integrity tag over a Retry pseudo-packet (RFC 9001 §5.8): pseudo is
 * ODCID length (1 byte) + ODCID + the Retry packet without its tag.
 * version selects the v1 or v2 (RFC 9369 §3.3.3) key and nonce.
 * Returns 0, QK_ERR_VERSION or QK_ERR_TLS.
 */
int qk_retry_tag_compute(uint32_t version, const uint8_t *pseudo, size_t pseudo_len,
                         uint8_t tag[QK_RETRY_TAG_BYTES]);

/**
 * Check a received Retry's tag against the pseudo-packet (constant time).
 * Returns 0, QK_ERR_DECRYPT (mismatch), QK_ERR_VERSION or QK_ERR_TLS.
 */
int qk_retry_tag_verify(uint32_t version, const uint8_t *pseudo, size_t pseudo_len,
                        const uint8_t tag[QK_RETRY_TAG_BYTES]);

/**
 * Stateless reset token for a connection ID: the first 16 bytes of
 * HMAC-SHA256(static_key, cid) (RFC 9000 §10.3.2). Returns 0 or
 * QK_ERR_INVALID_ARG.
 */
int qk_reset_token(const uint8_t *static_key, size_t key_len, const uint8_t *cid, size_t cid_len,
                   uint8_t token[QK_RESET_TOKEN_BYTES]);

/** Constant-time comparison of n bytes; 1 when equal. */
int qk_crypto_memeq(const void *a, const void *b, size_t n);

/** Kinds of address-validation token (authenticated, so not interchangeable). */
enum { QK_ADDR_TOKEN_RETRY = 1, QK_ADDR_TOKEN_NEW_TOKEN = 2 };

/** A server's address-token sealer: AES-256-GCM under a server secret key. */
typedef struct qk_addr_token_key {
    qk_aead aead;
} qk_addr_token_key;

/**
 * Key a token sealer with a 32-byte server secret.
 * Returns 0, QK_ERR_INVALID_ARG, QK_ERR_NOMEM or QK_ERR_TLS.
 */
int qk_addr_token_key_init(qk_addr_token_key *k, const uint8_t key[QK_ADDR_TOKEN_KEY_BYTES]);
/** Release the sealer. */
void qk_addr_token_key_free(qk_addr_token_key *k);

/** Fields carried (authenticated and encrypted) in an address token. */
typedef struct qk_addr_token {
    uint8_t kind;      /* QK_ADDR_TOKEN_* */
    qk_time issued_ns; /* issue time on the server's clock */
    uint8_t addr[QK_ADDR_TOKEN_ADDR_MAX];
    size_t addr_len; /* client address bytes (e.g. IP + port) */
    uint8_t extra[QK_ADDR_TOKEN_EXTRA_MAX];
    size_t extra_len; /* e.g. the original DCID for Retry tokens */
} qk_addr_token;

/**
 * Seal a token into out (cap >= qk_addr_token_size(t)). nonce is 12 fresh
 * random bytes from the caller's RNG (never reuse under one key).
 * Returns the token length, QK_ERR_INVALID_ARG (fields too long),
 * QK_ERR_BUFFER_TOO_SMALL or QK_ERR_TLS.
 */
int qk_addr_token_seal(qk_addr_token_key *k, const qk_addr_token *t,
                       const uint8_t nonce[QK_AEAD_IV_BYTES], uint8_t *out, size_t cap);

/** Sealed size of a token with these field lengths. */
size_t qk_addr_token_size(const qk_addr_token *t);

/**
 * Open a received token into *t. Returns 0, or QK_ERR_INVALID_TOKEN
 * (malformed, forged or sealed under another key). The caller checks kind,
 * age and address.
 */
int qk_addr_token_open(qk_addr_token_key *k, const uint8_t *tok, size_t len, qk_addr_token *t);

#endif
