/* SPDX-License-Identifier: MIT */
/*
 * AEAD and header-protection primitives behind a backend table.
 *
 * Three backends are compiled in: nettle directly, GnuTLS's AEAD API
 * (gnutls_aead_cipher_encryptv2, which has its own AES-NI/VAES code) and
 * OpenSSL 3 libcrypto EVP. QK_AEAD_BACKEND_AUTO picks, per suite, the one that
 * measured fastest in bench/aead.c (see docs/perf.md, "AEAD backends");
 * header protection has its own table (nettle for every suite).
 * All contexts are keyed once at init; seal/open/mask never allocate.
 */
#ifndef QK_CRYPTO_AEAD_H
#define QK_CRYPTO_AEAD_H

#include <stddef.h>
#include <stdint.h>

#include "crypto/keys.h"

typedef enum qk_aead_backend {
    QK_AEAD_BACKEND_AUTO = 0,
    QK_AEAD_BACKEND_NETTLE = 1,
    QK_AEAD_BACKEND_OPENSSL = 2,
    QK_AEAD_BACKEND_GNUTLS = 3, /* gnutls_aead_cipher_*v2; HP via nettle */
    QK_AEAD_BACKEND_COUNT
} qk_aead_backend;

struct qk_aead_ops;

/** One piece of a gathered plaintext (qk_aead_seal_gather). */
typedef struct qk_aead_seg {
    const uint8_t *p;
    size_t len;
} qk_aead_seg;

/** Most segments qk_aead_seal_gather accepts. */
#define QK_AEAD_MAX_SEGS 32u

/** A keyed AEAD context (one direction or both; seal and open may be mixed). */
typedef struct qk_aead {
    const struct qk_aead_ops *ops;
    qk_crypto_suite suite;
    void *ctx; /* backend state, allocated once at init */
} qk_aead;

/** A keyed header-protection mask generator (RFC 9001 §5.4). */
typedef struct qk_hp {
    const struct qk_aead_ops *ops;
    qk_crypto_suite suite;
    void *ctx;
} qk_hp;

/** Backend QK_AEAD_BACKEND_AUTO resolves to for a suite's AEAD. */
qk_aead_backend qk_aead_default_backend(qk_crypto_suite suite);
/** Backend QK_AEAD_BACKEND_AUTO resolves to for a suite's header protection. */
qk_aead_backend qk_hp_default_backend(qk_crypto_suite suite);
/** Name of a backend ("nettle", "openssl", "gnutls"). Never NULL. */
const char *qk_aead_backend_name(qk_aead_backend b);

/**
 * Key an AEAD. key_len must equal qk_suite_key_len(suite) (ignored for NULL).
 * Returns 0, QK_ERR_INVALID_ARG, QK_ERR_NOMEM or QK_ERR_TLS (library failure).
 */
int qk_aead_init(qk_aead *a, qk_crypto_suite suite, qk_aead_backend backend, const uint8_t *key,
                 size_t key_len);
/** Release an AEAD context (safe on a zeroed or already-freed struct). */
void qk_aead_free(qk_aead *a);

/**
 * Encrypt buf[0..len) in place and write the 16-byte tag to tag (which may be
 * buf + len). nonce is 12 bytes. Returns 0 or QK_ERR_TLS.
 */
int qk_aead_seal(qk_aead *a, const uint8_t nonce[QK_AEAD_IV_BYTES], const uint8_t *aad,
                 size_t aad_len, uint8_t *buf, size_t len, uint8_t tag[QK_AEAD_TAG_BYTES]);

/**
 * Out-of-place seal: encrypt the concatenation of seg[0..nseg) (total bytes
 * len) into dst[0..len) and write the 16-byte tag to dst + len. A segment
 * either does not overlap dst[0..len + 16) or lies exactly at its own
 * position in dst (in place: seg.p == dst + bytes before it), so a
 * plaintext can be partly in the packet buffer and partly elsewhere (a
 * stream's send buffer) without first copying it together. nseg <=
 * QK_AEAD_MAX_SEGS. Returns 0, QK_ERR_INVALID_ARG or QK_ERR_TLS.
 */
int qk_aead_seal_gather(qk_aead *a, const uint8_t nonce[QK_AEAD_IV_BYTES], const uint8_t *aad,
                        size_t aad_len, const qk_aead_seg *seg, size_t nseg, size_t len,
                        uint8_t *dst);

/**
 * Decrypt buf[0..len) in place and check the tag. Returns 0 or QK_ERR_DECRYPT
 * (buf content is then unspecified).
 */
int qk_aead_open(qk_aead *a, const uint8_t nonce[QK_AEAD_IV_BYTES], const uint8_t *aad,
                 size_t aad_len, uint8_t *buf, size_t len, const uint8_t tag[QK_AEAD_TAG_BYTES]);

/**
 * Key a header-protection context: AES-ECB for the GCM suites, raw ChaCha20
 * for ChaCha20-Poly1305, nothing for NULL.
 * Returns 0, QK_ERR_INVALID_ARG, QK_ERR_NOMEM or QK_ERR_TLS.
 */
int qk_hp_init(qk_hp *h, qk_crypto_suite suite, qk_aead_backend backend, const uint8_t *key,
               size_t key_len);
/** Release a header-protection context. */
void qk_hp_free(qk_hp *h);

/**
 * Compute the 5-byte mask from a 16-byte sample (RFC 9001 §5.4.3, §5.4.4).
 * NULL suite gives an all-zero mask. Returns 0 or QK_ERR_TLS.
 */
int qk_hp_mask(qk_hp *h, const uint8_t sample[QK_HP_SAMPLE_BYTES], uint8_t mask[QK_HP_MASK_BYTES]);

#endif
