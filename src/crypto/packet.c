/* SPDX-License-Identifier: MIT */
/* QUIC packet protection: RFC 9001 §5.3 (AEAD) and §5.4 (header protection). */
#include "crypto/packet.h"

#include <string.h>

#include <quack/common.h>

static int keys_setup(qk_pkt_keys *k, uint32_t version, qk_crypto_suite suite,
                      qk_aead_backend backend, const uint8_t *key, const uint8_t *hp_key,
                      size_t key_len, const uint8_t *iv)
{
    k->suite = suite;
    k->version = version;
    k->backend = backend;
    int rc = qk_aead_init(&k->aead, suite, backend, key, key_len);
    if (rc == 0) rc = qk_hp_init(&k->hp, suite, backend, hp_key, key_len);
    if (rc != 0) {
        qk_pkt_keys_free(k);
        return rc;
    }
    if (iv) memcpy(k->iv, iv, QK_AEAD_IV_BYTES);
    if (hp_key && key_len) memcpy(k->hp_key, hp_key, key_len);
    k->ready = 1;
    return 0;
}

int qk_pkt_keys_init_ex(qk_pkt_keys *k, uint32_t version, qk_crypto_suite suite,
                        qk_aead_backend backend, const uint8_t *secret, size_t secret_len)
{
    qk_key_material m;
    if (!k) return QK_ERR_INVALID_ARG;
    memset(k, 0, sizeof *k);
    if (suite == QK_SUITE_NULL) return keys_setup(k, version, suite, backend, NULL, NULL, 0, NULL);
    int rc = qk_crypto_derive_material(version, suite, secret, secret_len, &m);
    if (rc == 0) rc = keys_setup(k, version, suite, backend, m.key, m.hp, m.key_len, m.iv);
    qk_crypto_wipe(&m, sizeof m);
    return rc;
}

int qk_pkt_keys_init(qk_pkt_keys *k, qk_crypto_suite suite, const uint8_t *secret,
                     size_t secret_len)
{
    return qk_pkt_keys_init_ex(k, QK_QUIC_V1, suite, QK_AEAD_BACKEND_AUTO, secret, secret_len);
}

int qk_pkt_keys_next(qk_pkt_keys *next, const qk_pkt_keys *cur, uint8_t *secret, size_t secret_len)
{
    qk_key_material m;
    if (!next || !cur || next == cur) return QK_ERR_INVALID_ARG;
    if (!cur->ready) return QK_ERR_STATE;
    memset(next, 0, sizeof *next);
    if (cur->suite == QK_SUITE_NULL)
        return keys_setup(next, cur->version, cur->suite, cur->backend, NULL, NULL, 0, NULL);
    /* RFC 9001 §6.1: new secret and packet keys; header protection keys are not updated. */
    int rc = qk_crypto_next_secret(cur->version, cur->suite, secret, secret_len, secret);
    if (rc == 0) rc = qk_crypto_derive_material(cur->version, cur->suite, secret, secret_len, &m);
    if (rc == 0)
        rc = keys_setup(next, cur->version, cur->suite, cur->backend, m.key, cur->hp_key, m.key_len,
                        m.iv);
    qk_crypto_wipe(&m, sizeof m);
    return rc;
}

void qk_pkt_keys_free(qk_pkt_keys *k)
{
    if (!k) return;
    qk_aead_free(&k->aead);
    qk_hp_free(&k->hp);
    qk_crypto_wipe(k->iv, sizeof k->iv);
    qk_crypto_wipe(k->hp_key, sizeof k->hp_key);
    k->ready = 0;
}

void qk_pkt_nonce(const qk_pkt_keys *k, uint64_t pn, uint8_t nonce[QK_AEAD_IV_BYTES])
{
    /* RFC 9001 §5.3: the 62-bit packet number, left-padded to the IV size, XOR IV. */
    memcpy(nonce, k->iv, QK_AEAD_IV_BYTES);
    for (int i = 0; i < 8; i++) nonce[QK_AEAD_IV_BYTES - 1 - i] ^= (uint8_t)(pn >> (8 * i));
}

int qk_pkt_seal(qk_pkt_keys *k, uint64_t pn, const uint8_t *hdr, size_t hdr_len, uint8_t *payload,
                size_t len)
{
    uint8_t nonce[QK_AEAD_IV_BYTES];
    if (!k || !k->ready) return QK_ERR_STATE;
    if (len > (size_t)INT32_MAX - QK_AEAD_TAG_BYTES) return QK_ERR_INVALID_ARG;
    qk_pkt_nonce(k, pn, nonce);
    int rc = qk_aead_seal(&k->aead, nonce, hdr, hdr_len, payload, len, payload + len);
    return rc < 0 ? rc : (int)(len + QK_AEAD_TAG_BYTES);
}

int qk_pkt_seal_gather(qk_pkt_keys *k, uint64_t pn, const uint8_t *hdr, size_t hdr_len,
                       const qk_aead_seg *seg, size_t nseg, size_t len, uint8_t *payload)
{
    uint8_t nonce[QK_AEAD_IV_BYTES];
    if (!k || !k->ready) return QK_ERR_STATE;
    if (len > (size_t)INT32_MAX - QK_AEAD_TAG_BYTES) return QK_ERR_INVALID_ARG;
    qk_pkt_nonce(k, pn, nonce);
    int rc = qk_aead_seal_gather(&k->aead, nonce, hdr, hdr_len, seg, nseg, len, payload);
    return rc < 0 ? rc : (int)(len + QK_AEAD_TAG_BYTES);
}

int qk_pkt_open(qk_pkt_keys *k, uint64_t pn, const uint8_t *hdr, size_t hdr_len, uint8_t *payload,
                size_t len)
{
    uint8_t nonce[QK_AEAD_IV_BYTES];
    if (!k || !k->ready) return QK_ERR_STATE;
    if (len < QK_AEAD_TAG_BYTES || len > (size_t)INT32_MAX) return QK_ERR_DECRYPT;
    size_t clen = len - QK_AEAD_TAG_BYTES;
    qk_pkt_nonce(k, pn, nonce);
    int rc = qk_aead_open(&k->aead, nonce, hdr, hdr_len, payload, clen, payload + clen);
    return rc < 0 ? QK_ERR_DECRYPT : (int)clen;
}

/* The first-byte bits protected by HP: 4 for long headers, 5 for short (§5.4.1). */
static uint8_t first_byte_mask(uint8_t first)
{
    return (first & 0x80) ? 0x0f : 0x1f;
}

int qk_hp_protect(qk_pkt_keys *k, uint8_t *pkt, size_t pkt_len, size_t pn_offset)
{
    uint8_t mask[QK_HP_MASK_BYTES];
    if (!k || !k->ready) return QK_ERR_STATE;
    /* RFC 9001 §5.4.2: sample starts 4 bytes after the start of the packet number. */
    if (pn_offset + 4 + QK_HP_SAMPLE_BYTES > pkt_len || pn_offset == 0) return QK_ERR_TRUNCATED;
    size_t pn_len = (size_t)(pkt[0] & 0x03) + 1;
    int rc = qk_hp_mask(&k->hp, pkt + pn_offset + 4, mask);
    if (rc < 0) return rc;
    pkt[0] ^= mask[0] & first_byte_mask(pkt[0]);
    for (size_t i = 0; i < pn_len; i++) pkt[pn_offset + i] ^= mask[1 + i];
    return 0;
}

int qk_hp_unprotect(qk_pkt_keys *k, uint8_t *pkt, size_t pkt_len, size_t pn_offset, size_t *pn_len)
{
    uint8_t mask[QK_HP_MASK_BYTES];
    if (!k || !k->ready) return QK_ERR_STATE;
    if (pn_offset + 4 + QK_HP_SAMPLE_BYTES > pkt_len || pn_offset == 0) return QK_ERR_TRUNCATED;
    int rc = qk_hp_mask(&k->hp, pkt + pn_offset + 4, mask);
    if (rc < 0) return rc;
    /* RFC 9001 §5.4.1: unmask the first byte, then read the pn length from it. */
    pkt[0] ^= mask[0] & first_byte_mask(pkt[0]);
    size_t n = (size_t)(pkt[0] & 0x03) + 1;
    for (size_t i = 0; i < n; i++) pkt[pn_offset + i] ^= mask[1 + i];
    if (pn_len) *pn_len = n;
    return 0;
}
