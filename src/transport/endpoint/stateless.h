/* SPDX-License-Identifier: MIT */
/* Endpoint-level packets that belong to no connection (RFC 9000 §6, §8.1,
 * §10.3): Version Negotiation, Retry, stateless reset and the stateless
 * INVALID_TOKEN close; address-validation tokens (minting and checking) and
 * the client's NEW_TOKEN cache. The endpoint owns one qk_stateless; packets
 * wait in a bounded queue until qk_endpoint_send() drains them. Not a public
 * header. */
#ifndef QK_TRANSPORT_STATELESS_H
#define QK_TRANSPORT_STATELESS_H

#include <quack/quack.h>

#include "crypto/token.h"
#include "wire/packet.h"

#define QK_SL_QUEUE          32  /* stateless packets waiting to be sent */
#define QK_SL_PKT_MAX        640 /* VN with two 255-byte CIDs fits */
#define QK_SL_TOKEN_CACHE    8   /* client: servers we keep a NEW_TOKEN for */
#define QK_SL_TOKEN_MAX      256 /* longest token we store or send */
#define QK_SL_RESET_MIN      21  /* RFC 9000 §10.3: 5 unpredictable bytes + 16-byte token */
#define QK_SL_RESET_MAX      64  /* our resets never exceed this */
#define QK_SL_STATIC_KEY_LEN 32

typedef struct qk_sl_pkt {
    qk_addr peer, local;
    size_t len;
    uint8_t data[QK_SL_PKT_MAX];
} qk_sl_pkt;

typedef struct qk_sl_token {
    qk_addr peer;
    size_t len; /* 0 = empty slot */
    qk_time stored;
    uint8_t b[QK_SL_TOKEN_MAX];
} qk_sl_token;

typedef struct qk_stateless {
    uint8_t static_key[QK_SL_STATIC_KEY_LEN];
    qk_addr_token_key tkey;
    bool has_tkey;
    qk_rng_fn rng;
    void *rng_ctx;
    qk_sl_pkt *q; /* ring of QK_SL_QUEUE */
    size_t head, count;
    qk_time reset_interval_ns; /* 1 s / resets per second */
    qk_time reset_tat;         /* GCRA theoretical arrival time */
    qk_sl_token cache[QK_SL_TOKEN_CACHE];
    qk_endpoint_stats stats;
} qk_stateless;

/** What an Initial's token turned out to be (qk_stateless_check_token). */
typedef enum qk_token_verdict {
    QK_TOKEN_NONE = 0,  /* no token, undecryptable, or a stale NEW_TOKEN: as if none */
    QK_TOKEN_RETRY_OK,  /* our Retry token, fresh, same address: validated, odcid set */
    QK_TOKEN_NEW_OK,    /* our NEW_TOKEN token, fresh, same IP: validated */
    QK_TOKEN_RETRY_BAD, /* our Retry token but expired or another address: INVALID_TOKEN */
} qk_token_verdict;

/**
 * Set up with a 32-byte static key (reset tokens; the token AEAD key is
 * derived from it), a reset rate (per second, 0 = 100) and the RNG.
 * Returns 0, QK_ERR_NOMEM or QK_ERR_TLS.
 */
int qk_stateless_init(qk_stateless *s, const uint8_t key[QK_SL_STATIC_KEY_LEN],
                      uint32_t resets_per_s, qk_rng_fn rng, void *rng_ctx);
/** Release the queue and keys. */
void qk_stateless_free(qk_stateless *s);

/** RFC 9000 §10.3.2: the reset token of one of our CIDs, HMAC(static key, CID). */
void qk_stateless_reset_token(const qk_stateless *s, const uint8_t *cid, size_t cid_len,
                              uint8_t token[QK_RESET_TOKEN_LEN]);

/**
 * Queue a Version Negotiation packet answering h (RFC 9000 §17.2.1) listing
 * versions plus a grease version. Never for a VN (the caller checks h).
 */
void qk_stateless_send_vn(qk_stateless *s, const qk_datagram *d, const qk_pkt_hdr *h,
                          const uint32_t *versions, size_t n);

/**
 * Queue a Retry (RFC 9000 §17.2.5) for the client Initial h: a fresh SCID of
 * scid_len bytes and a sealed token carrying the client address, now and the
 * original DCID. Returns 0, QK_ERR_LIMIT (queue full) or a crypto error.
 */
int qk_stateless_send_retry(qk_stateless *s, const qk_datagram *d, const qk_pkt_hdr *h,
                            size_t scid_len, qk_time now);

/**
 * Queue an Initial packet with CONNECTION_CLOSE(code) answering client
 * Initial h without creating state (RFC 9000 §8.1.3 INVALID_TOKEN).
 * Returns 0, QK_ERR_LIMIT or a crypto/encoding error.
 */
int qk_stateless_send_close(qk_stateless *s, const qk_datagram *d, const qk_pkt_hdr *h,
                            uint64_t code, const char *reason);

/**
 * Queue a stateless reset answering a short-header datagram d whose DCID
 * (dcid_len bytes) matches no connection (RFC 9000 §10.3): smaller than d,
 * at least 21 bytes, never for datagrams of 21 bytes or less, rate-limited.
 * Returns true when one was queued.
 */
bool qk_stateless_send_reset(qk_stateless *s, const qk_datagram *d, const uint8_t *dcid,
                             size_t dcid_len, qk_time now);

/** Pop the next queued packet into out (out->len = capacity on input). False when empty. */
bool qk_stateless_pop(qk_stateless *s, qk_datagram *out);

/**
 * Seal an address token of kind QK_ADDR_TOKEN_RETRY (address = IP and port,
 * extra = original DCID) or QK_ADDR_TOKEN_NEW_TOKEN (address = IP only).
 * Returns its length, QK_ERR_INVALID_ARG, QK_ERR_BUFFER_TOO_SMALL or QK_ERR_TLS.
 */
int qk_stateless_mint(qk_stateless *s, int kind, const qk_addr *peer, const uint8_t *extra,
                      size_t extra_len, qk_time now, uint8_t *out, size_t cap);

/**
 * Judge the token of a client Initial from peer (RFC 9000 §8.1.3, §8.1.4).
 * For QK_TOKEN_RETRY_OK *odcid receives the original DCID.
 */
qk_token_verdict qk_stateless_check_token(qk_stateless *s, const uint8_t *tok, size_t len,
                                          const qk_addr *peer, qk_time now,
                                          qk_time retry_lifetime_ns, qk_time new_lifetime_ns,
                                          uint8_t odcid[QK_MAX_CID_LEN], size_t *odcid_len);

/** Client: remember a NEW_TOKEN token from peer (replaces the oldest entry when full). */
void qk_stateless_store_token(qk_stateless *s, const qk_addr *peer, const uint8_t *tok, size_t len,
                              qk_time now);

/**
 * Client: take (and forget: RFC 9000 §8.1.3, one use) the token stored for
 * peer into out. Returns its length, 0 when none.
 */
size_t qk_stateless_take_token(qk_stateless *s, const qk_addr *peer, uint8_t *out, size_t cap);

#endif
