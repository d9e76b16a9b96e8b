/* SPDX-License-Identifier: MIT */
/*
 * QUIC packet protection (RFC 9001 §5.3, §5.4): per-direction packet keys
 * with pre-keyed AEAD and header-protection contexts, in-place seal/open and
 * header protection over a packet buffer.
 */
#ifndef QK_CRYPTO_PACKET_H
#define QK_CRYPTO_PACKET_H

#include <stddef.h>
#include <stdint.h>

#include "crypto/aead.h"
#include "crypto/keys.h"

/** Keys protecting packets in one direction at one level / key phase. */
typedef struct qk_pkt_keys {
    qk_crypto_suite suite;
    qk_aead aead;
    qk_hp hp;
    uint8_t iv[QK_AEAD_IV_BYTES];
    uint8_t hp_key[QK_AEAD_KEY_MAX_BYTES]; /* kept for key updates */
    uint32_t version;
    qk_aead_backend backend;
    int ready; /* 1 after a successful init */
} qk_pkt_keys;

/**
 * Derive key/IV/HP key from a traffic secret (QUIC v1 labels) and key the
 * contexts with the default backend. For QK_SUITE_NULL, secret may be NULL.
 * Returns 0, QK_ERR_INVALID_ARG, QK_ERR_NOMEM or QK_ERR_TLS.
 */
int qk_pkt_keys_init(qk_pkt_keys *k, qk_crypto_suite suite, const uint8_t *secret,
                     size_t secret_len);

/**
 * As qk_pkt_keys_init with an explicit QUIC version (v1 or v2 labels) and
 * AEAD backend. Returns 0, QK_ERR_VERSION, QK_ERR_INVALID_ARG, QK_ERR_NOMEM or
 * QK_ERR_TLS.
 */
int qk_pkt_keys_init_ex(qk_pkt_keys *k, uint32_t version, qk_crypto_suite suite,
                        qk_aead_backend backend, const uint8_t *secret, size_t secret_len);

/**
 * Key update (RFC 9001 §6): replace secret[0..secret_len) in place with the
 * next-generation secret ("quic ku") and key `next` from it, keeping cur's
 * header-protection key (HP keys never change, §6.1). next must not be cur.
 * Returns as qk_pkt_keys_init_ex, or QK_ERR_STATE if cur is not ready.
 */
int qk_pkt_keys_next(qk_pkt_keys *next, const qk_pkt_keys *cur, uint8_t *secret, size_t secret_len);

/** Release contexts and wipe the IV (safe on a zeroed or freed struct). */
void qk_pkt_keys_free(qk_pkt_keys *k);

/** AEAD nonce for a packet number: IV XOR left-padded pn (RFC 9001 §5.3). */
void qk_pkt_nonce(const qk_pkt_keys *k, uint64_t pn, uint8_t nonce[QK_AEAD_IV_BYTES]);

/**
 * Encrypt payload[0..len) in place with AAD = hdr[0..hdr_len) (the header
 * with the packet number unmasked) and write the 16-byte tag after it:
 * payload must have len + 16 bytes of room. Returns len + 16, or
 * QK_ERR_STATE (keys not ready) / QK_ERR_TLS.
 */
int qk_pkt_seal(qk_pkt_keys *k, uint64_t pn, const uint8_t *hdr, size_t hdr_len, uint8_t *payload,
                size_t len);

/**
 * As qk_pkt_seal, but the plaintext is gathered from seg[0..nseg) (total
 * len bytes; see qk_aead_seal_gather for how segments may overlap payload)
 * and the ciphertext + tag are written to payload[0..len + 16). Returns
 * len + 16, or QK_ERR_STATE / QK_ERR_INVALID_ARG / QK_ERR_TLS.
 */
int qk_pkt_seal_gather(qk_pkt_keys *k, uint64_t pn, const uint8_t *hdr, size_t hdr_len,
                       const qk_aead_seg *seg, size_t nseg, size_t len, uint8_t *payload);

/**
 * Decrypt payload[0..len) (ciphertext + 16-byte tag) in place.
 * Returns the plaintext length (len - 16), QK_ERR_DECRYPT (authentication
 * failed or len < 16) or QK_ERR_STATE.
 */
int qk_pkt_open(qk_pkt_keys *k, uint64_t pn, const uint8_t *hdr, size_t hdr_len, uint8_t *payload,
                size_t len);

/**
 * Apply header protection (RFC 9001 §5.4.1) to pkt[0..pkt_len) whose packet
 * number starts at pn_offset; the packet-number length is read from the
 * unprotected first byte. The sample starts at pn_offset + 4 (§5.4.2).
 * Returns 0, QK_ERR_TRUNCATED (sample does not fit) or QK_ERR_STATE/QK_ERR_TLS.
 */
int qk_hp_protect(qk_pkt_keys *k, uint8_t *pkt, size_t pkt_len, size_t pn_offset);

/**
 * Remove header protection in place; *pn_len receives the packet-number
 * length (1..4) read from the unmasked first byte. Returns 0,
 * QK_ERR_TRUNCATED (sample or packet number does not fit), QK_ERR_STATE or
 * QK_ERR_TLS.
 */
int qk_hp_unprotect(qk_pkt_keys *k, uint8_t *pkt, size_t pkt_len, size_t pn_offset, size_t *pn_len);

#endif
