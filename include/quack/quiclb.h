/* SPDX-License-Identifier: MIT */
/** @file
 * quack — QUIC-LB routable connection IDs (draft-ietf-quic-load-balancers-21).
 *
 * A server writes its server ID into every connection ID it issues; a load
 * balancer that shares the configuration reads it back from the Destination
 * Connection ID of any packet, whatever the client's address. The CID is
 *
 *   first octet (config rotation (3) | length self-description or random (5))
 *   server ID (server_id_len bytes) | nonce (nonce_len bytes)
 *
 * in clear without a key, or with the server ID and nonce encrypted under a
 * 16-byte AES-128 key: one AES-ECB block when they sum to 16 bytes, a
 * four-round Feistel network otherwise (§5.4.1, §5.4.2). The module is pure:
 * no I/O, no clock; randomness comes from the caller's qk_rng_fn.
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: a qk_quiclb is read-only after
 * qk_quiclb_new, so several threads may encode and decode with it at once;
 * qk_quiclb_del only when none does.
 */
#ifndef QUACK_QUICLB_H
#define QUACK_QUICLB_H

#include <quack/common.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QK_QUICLB_KEY_BYTES           16 /**< AES-128 key (§5.3) */
#define QK_QUICLB_MAX_CONFIG_ID       6  /**< 0..6; 0b111 is reserved (§3.1) */
#define QK_QUICLB_UNROUTABLE_ID       7  /**< the config rotation of unroutable CIDs (§3.2) */
#define QK_QUICLB_MIN_SERVER_ID_BYTES 1  /**< §5.3 */
#define QK_QUICLB_MAX_SERVER_ID_BYTES 15 /**< App. A (YANG server-id-length) */
#define QK_QUICLB_MIN_NONCE_BYTES     4  /**< §5.3 */
#define QK_QUICLB_MAX_NONCE_BYTES     18 /**< App. A (YANG nonce-length) */
#define QK_QUICLB_MAX_PLAINTEXT_BYTES 19 /**< server ID + nonce (§5.3: QUIC v1 CIDs <= 20) */
#define QK_QUICLB_MAX_CID_BYTES       20 /**< first octet + 19 */
#define QK_QUICLB_MIN_UNROUTABLE_CID  8  /**< §3.2: "SHOULD be of at least length 8" */

/** One QUIC-LB configuration: what the configuration agent hands to the load
 * balancer and to each server (§5.3). Start from qk_quiclb_config_default(). */
typedef struct qk_quiclb_config {
    uint8_t config_id;     /**< config rotation codepoint, 0..6 (§3.1) */
    uint8_t server_id_len; /**< bytes, 1..15 */
    uint8_t nonce_len;     /**< bytes, 4..18; server_id_len + nonce_len <= 19 */
    bool encode_len;       /**< the first octet's low 5 bits carry the CID length - 1 (§3.3);
                                false: they are random */
    bool has_key;          /**< false: plaintext CIDs (the server ID is readable by anyone) */
    uint8_t key[QK_QUICLB_KEY_BYTES]; /**< the AES-128 key (when has_key) */
    /** This server's own ID (server_id_len bytes), what qk_quiclb_encode()
     * writes when given no server ID. A load balancer leaves it zero. */
    uint8_t server_id[QK_QUICLB_MAX_SERVER_ID_BYTES];
} qk_quiclb_config;

/** Defaults: config ID 0, no server ID or nonce length (both must be set),
 * length self-description on, no key; cfg_bytes is the caller's
 * sizeof(qk_quiclb_config) (fields this library does not know come back
 * zero). Never fails. */
void qk_quiclb_config_default_sized(qk_quiclb_config *cfg, size_t cfg_bytes);

/** qk_quiclb_config_default_sized() with the caller's sizeof(qk_quiclb_config). */
#define qk_quiclb_config_default(cfg)                                                              \
    qk_quiclb_config_default_sized((cfg), sizeof(qk_quiclb_config))

/**
 * Check cfg against the draft's limits. On failure, writes a sentence naming
 * the problem and its fix into err (err_cap bytes, always NUL-terminated when
 * err_cap > 0; err may be NULL).
 * @return 0; QK_ERR_INVALID_ARG when cfg is NULL; QK_ERR_CONFIG when config_id
 *         is over 6, server_id_len is not 1..15, nonce_len is not 4..18, or
 *         their sum is over 19.
 */
int qk_quiclb_config_check_sized(const qk_quiclb_config *cfg, size_t cfg_bytes, char *err,
                                 size_t err_cap);

/** qk_quiclb_config_check_sized() with the caller's sizeof(qk_quiclb_config);
 * also QK_ERR_UNSUPPORTED when a newer caller sets a field this library does
 * not know, QK_ERR_INVALID_ARG when cfg_bytes is below the first release's. */
#define qk_quiclb_config_check(cfg, err, err_cap)                                                  \
    qk_quiclb_config_check_sized((cfg), sizeof(qk_quiclb_config), (err), (err_cap))

/**
 * Read a QUIC-LB configuration from INI text (the format `--lb-config FILE`
 * takes; docs/deploy.md):
 *
 *   [quic-lb]
 *   config_id = 0                          ; 0..6
 *   server_id = 0a1b2c                     ; hex, 1..15 bytes (server_id_len)
 *   nonce_len = 8                          ; 4..18, server ID + nonce <= 19
 *   key = 8f95f09245765f80256934e50c66207f ; optional: 16 bytes in hex
 *   encode_length = yes                    ; optional (default yes)
 *
 * server_id_len = N may stand instead of server_id (a load balancer's file)
 * or beside it (then they must agree). Hex may be separated by ':'.
 * name is used in messages only ("FILE:LINE: ..."). On failure err holds the
 * first problem found and its fix (unknown section or key, a key given
 * twice, a value out of range, bad hex, a missing key, bad lengths).
 * @return 0 and *cfg filled; QK_ERR_INVALID_ARG for NULL text or cfg;
 *         QK_ERR_CONFIG for any problem in the text (cfg then unspecified);
 *         QK_ERR_NOMEM when inih cannot allocate.
 */
int qk_quiclb_config_parse_sized(const char *text, size_t len, const char *name,
                                 qk_quiclb_config *cfg, size_t cfg_bytes, char *err,
                                 size_t err_cap);

/** qk_quiclb_config_parse_sized() with the caller's sizeof(qk_quiclb_config):
 * *cfg is filled up to the caller's size. */
#define qk_quiclb_config_parse(text, len, name, cfg, err, err_cap)                                 \
    qk_quiclb_config_parse_sized((text), (len), (name), (cfg), sizeof(qk_quiclb_config), (err),    \
                                 (err_cap))

/**
 * qk_quiclb_config_parse() on the contents of the file at path.
 * @return as qk_quiclb_config_parse(), plus QK_ERR_IO when the file cannot be
 *         read (err says why) and QK_ERR_TOO_LARGE above 64 KiB.
 */
int qk_quiclb_config_load_sized(const char *path, qk_quiclb_config *cfg, size_t cfg_bytes,
                                char *err, size_t err_cap);

/** qk_quiclb_config_load_sized() with the caller's sizeof(qk_quiclb_config). */
#define qk_quiclb_config_load(path, cfg, err, err_cap)                                             \
    qk_quiclb_config_load_sized((path), (cfg), sizeof(qk_quiclb_config), (err), (err_cap))

/** A configuration ready to encode and decode (opaque; qk_quiclb_new,
 * qk_quiclb_del). */
typedef struct qk_quiclb qk_quiclb;

/**
 * Make a qk_quiclb for cfg (copied, cfg_bytes of it: the caller's
 * sizeof(qk_quiclb_config); the AES key schedule is expanded once here).
 * @return 0 and *out set; QK_ERR_INVALID_ARG for NULL arguments or cfg_bytes
 *         below the first release's size; QK_ERR_CONFIG when
 *         qk_quiclb_config_check() refuses cfg (or it sets a field this
 *         library does not know); QK_ERR_NOMEM.
 */
int qk_quiclb_new_sized(const qk_quiclb_config *cfg, size_t cfg_bytes, qk_quiclb **out);

/** qk_quiclb_new_sized() with the caller's sizeof(qk_quiclb_config). */
#define qk_quiclb_new(cfg, out) qk_quiclb_new_sized((cfg), sizeof(qk_quiclb_config), (out))

/** Wipe lb's key material and free it. lb may be NULL. Never fails. */
void qk_quiclb_del(qk_quiclb *lb);

/** Length of the CIDs lb (initialized, not NULL) generates: 1 + server_id_len +
 * nonce_len. Never fails. */
size_t qk_quiclb_cid_bytes(const qk_quiclb *lb);

/** Nonce length of lb's CIDs (initialized, not NULL): nonce_len, what
 * qk_quiclb_decode() writes into its nonce argument. Never fails (since 1.1). */
size_t qk_quiclb_nonce_bytes(const qk_quiclb *lb);

/**
 * Build the CID for server_id (server_id_len bytes; NULL = the configured
 * cfg.server_id) and nonce (nonce_len bytes) into out (§5.4). Deterministic:
 * the first octet's low bits, when not the length, are taken from first_bits.
 * The server MUST NOT reuse a nonce under one key (§9.6):
 * qk_quiclb_encode() draws fresh ones.
 * @return the CID length (qk_quiclb_cid_bytes); QK_ERR_INVALID_ARG for NULL
 *         lb, nonce or out; QK_ERR_BUFFER_TOO_SMALL when out_cap is below the
 *         CID length.
 */
int qk_quiclb_encode_nonce(const qk_quiclb *lb, const uint8_t *server_id, const uint8_t *nonce,
                           uint8_t first_bits, uint8_t *out, size_t out_cap);

/**
 * Generate a CID for server_id (NULL = cfg.server_id) with a random nonce
 * (and random first-octet bits when the length is not encoded) from rng.
 * @return the CID length; QK_ERR_INVALID_ARG for NULL lb, rng or out;
 *         QK_ERR_BUFFER_TOO_SMALL when out_cap is below the CID length.
 */
int qk_quiclb_encode(const qk_quiclb *lb, const uint8_t *server_id, qk_rng_fn rng, void *rng_ctx,
                     uint8_t *out, size_t out_cap);

/**
 * Extract the server ID from a CID (a packet's DCID: cid_len may exceed the
 * CID, only the first qk_quiclb_cid_bytes() bytes are read) (§5.5). When
 * nonce is not NULL it receives the nonce too (a fourth pass when the server
 * ID does not need one).
 * @return server_id_len and server_id filled; QK_ERR_INVALID_ARG for NULL lb,
 *         cid or server_id; QK_ERR_TRUNCATED when cid_len is below the CID
 *         length (§4.1: unroutable); QK_ERR_NOT_FOUND when the config rotation
 *         bits are not lb's config ID (another or no configuration, or the
 *         reserved 0b111: §4.1, unroutable).
 */
int qk_quiclb_decode(const qk_quiclb *lb, const uint8_t *cid, size_t cid_len, uint8_t *server_id,
                     uint8_t *nonce);

/**
 * The config rotation codepoint of a CID (its first three bits, §3.1), so a
 * load balancer holding several configurations picks the one to decode with.
 * @return 0..7 (7: unroutable, §3.2); QK_ERR_TRUNCATED when cid_len is 0;
 *         QK_ERR_INVALID_ARG when cid is NULL.
 */
int qk_quiclb_config_id_of(const uint8_t *cid, size_t cid_len);

/**
 * An unroutable CID for a server without an active configuration (§3.2):
 * config rotation 0b111, the length self-description, random bytes.
 * @return len; QK_ERR_INVALID_ARG for NULL rng or out, or len outside 8..20
 *         (§3.2 asks for at least 8 bytes; RFC 9000 §17.2 allows 20).
 */
int qk_quiclb_encode_unroutable(qk_rng_fn rng, void *rng_ctx, uint8_t *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif
