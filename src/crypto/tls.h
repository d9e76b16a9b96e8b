/* SPDX-License-Identifier: MIT */
/*
 * TLS 1.3 handshake driver for QUIC (RFC 9001 §4) on GnuTLS's QUIC hooks.
 *
 * No callbacks reach user code: received CRYPTO bytes go in with
 * qk_tls_provide(), qk_tls_handshake() advances the state machine, outgoing
 * handshake bytes wait in per-level buffers (qk_tls_out / qk_tls_consume),
 * and newly installed traffic secrets wait in a queue (qk_tls_poll_secret).
 */
#ifndef QK_CRYPTO_TLS_H
#define QK_CRYPTO_TLS_H

#include <quack/cert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <quack/common.h>

#include "crypto/keys.h"

typedef enum qk_tls_verify {
    QK_TLS_VERIFY_SYSTEM = 0, /* system CA store + hostname (server_name) */
    QK_TLS_VERIFY_PIN = 1,    /* SHA-256 of the leaf's SubjectPublicKeyInfo */
    QK_TLS_VERIFY_INSECURE = 2
} qk_tls_verify;

#define QK_TLS_PIN_BYTES         QK_PIN_BYTES
#define QK_TLS_ERR_BYTES         256 /* qk_tls_last_error() text, NUL included */
#define QK_TLS_ALPN_MAX          8
#define QK_TLS_OUT_MAX_BYTES     (64 * 1024) /* per level, bounded */
#define QK_TLS_PEER_TP_MAX_BYTES 4096

/* TLS alerts used by the stack (RFC 8446 §6). */
enum {
    QK_TLS_ALERT_HANDSHAKE_FAILURE = 40,
    QK_TLS_ALERT_BAD_CERTIFICATE = 42,
    QK_TLS_ALERT_CERTIFICATE_UNKNOWN = 46,
    QK_TLS_ALERT_INTERNAL_ERROR = 80,
    QK_TLS_ALERT_MISSING_EXTENSION = 109,
    QK_TLS_ALERT_NO_APPLICATION_PROTOCOL = 120,
};

/* Server ticket keys and anti-replay state (include/quack/quack.h). */
typedef struct qk_ticket_keys qk_ticket_keys;

/** Handshake configuration. Strings are copied by qk_tls_new. */
/* Server credentials (certificate chain, key) and the parsed priority
 * string, loaded once and shared by every session of an endpoint instead of
 * per handshake (qk_tls_creds_new). */
typedef struct qk_tls_creds qk_tls_creds;

typedef struct qk_tls_config {
    const char *alpn[QK_TLS_ALPN_MAX]; /* preference order, NULL-terminated or alpn_count */
    size_t alpn_count;
    /* server: a certificate chain and key, as files or in-memory PEM */
    const char *cert_file, *key_file;
    const char *cert_pem, *key_pem;
    /* client */
    const char *server_name; /* SNI and hostname check; NULL = no SNI */
    qk_tls_verify verify;
    uint8_t pin_sha256[QK_TLS_PIN_BYTES]; /* for QK_TLS_VERIFY_PIN */
    /* NSS key log: one line per secret (no newline), NULL = off. The library
     * opens no file and reads no environment: see qk_io_log_files(). */
    void (*keylog)(void *ctx, const char *line);
    void *keylog_ctx;
    /* optional GnuTLS priority string; default = TLS 1.3 only, no compat mode,
     * AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305 */
    const char *priority;
    /* Resumption and 0-RTT (RFC 9001 §4.5-4.6). Server: tickets are issued
     * when `tickets` is set; early data is accepted when early_data is also
     * set. Client: `session` (GnuTLS session data of an earlier connection,
     * qk_tls_ticket()) resumes it; early_data lets it send 0-RTT. */
    qk_ticket_keys *tickets;
    /* server: shared credentials (cert, key and priority above are then not
     * loaded again, unless priority differs from the one creds parsed);
     * NULL = this session loads its own */
    const qk_tls_creds *creds;
    int early_data;
    const uint8_t *session;
    size_t session_len;
} qk_tls_config;

/** 0-RTT outcome as TLS sees it (qk_tls_early_status). */
enum { QK_TLS_EARLY_NONE = 0, QK_TLS_EARLY_ACCEPTED = 1, QK_TLS_EARLY_REJECTED = 2 };

typedef struct qk_tls qk_tls;

/**
 * Create a handshake context. local_tparams (encoded transport parameters,
 * copied) go in the quic_transport_parameters extension (0x39).
 * Returns NULL on allocation failure or invalid configuration; *err (if not
 * NULL) receives QK_ERR_NOMEM, QK_ERR_CONFIG (bad cert/key/priority/ALPN) or
 * QK_ERR_TLS.
 */
qk_tls *qk_tls_new(const qk_tls_config *cfg, int is_server, const uint8_t *local_tparams,
                   size_t tparams_len, int *err);

/**
 * Server credentials for many sessions: cfg's certificate chain and key
 * (cert_pem/key_pem or cert_file/key_file) and its priority string (NULL =
 * the default), loaded and parsed once; put the result in
 * qk_tls_config.creds. Immutable once made: sessions only read it. Returns
 * NULL with *err (if not NULL) QK_ERR_INVALID_ARG (cfg NULL), QK_ERR_CONFIG
 * (no or unusable certificate/key, bad priority) or QK_ERR_NOMEM.
 */
qk_tls_creds *qk_tls_creds_new(const qk_tls_config *cfg, int *err);

/** Free credentials (NULL ok) once no session made with them remains. */
void qk_tls_creds_del(qk_tls_creds *creds);

/** Free a handshake context (NULL ok). */
void qk_tls_del(qk_tls *tls);

/**
 * Advance the handshake. Returns 0 when the handshake is complete (also on
 * later calls), QK_ERR_AGAIN when more peer data is needed (drain qk_tls_out
 * and qk_tls_poll_secret first), or QK_ERR_CRYPTO_ALERT(alert) on failure
 * (the alert to send in CONNECTION_CLOSE, RFC 9001 §4.8), or QK_ERR_NOMEM.
 */
int qk_tls_handshake(qk_tls *tls);

/**
 * Feed CRYPTO-frame bytes received at a level, in order. After the handshake
 * completes, post-handshake messages (e.g. NewSessionTicket) are processed
 * here directly. Returns 0, QK_ERR_INVALID_ARG, or QK_ERR_CRYPTO_ALERT(alert).
 */
int qk_tls_provide(qk_tls *tls, qk_crypto_level level, const uint8_t *data, size_t len);

/**
 * Outgoing handshake bytes pending at a level. *ptr stays valid until the
 * next call into tls. Returns 0 (and *len may be 0) or QK_ERR_INVALID_ARG.
 */
int qk_tls_out(qk_tls *tls, qk_crypto_level level, const uint8_t **ptr, size_t *len);

/** Mark n pending bytes at a level as sent (taken by the connection). */
void qk_tls_consume(qk_tls *tls, qk_crypto_level level, size_t n);

/**
 * Pop the oldest newly installed secret. secret must have
 * QK_SECRET_MAX_BYTES of room. Returns 0 (one popped) or QK_ERR_AGAIN
 * (queue empty).
 */
int qk_tls_poll_secret(qk_tls *tls, qk_crypto_level *level, int *is_write, qk_crypto_suite *suite,
                       uint8_t *secret, size_t *len);

/** Peer's transport parameters (NULL, 0 until received). */
const uint8_t *qk_tls_peer_tparams(const qk_tls *tls, size_t *len);

/** Negotiated ALPN protocol (NUL-terminated) or NULL. */
const char *qk_tls_alpn(const qk_tls *tls);

/**
 * RFC 8446 §7.5 exporter (RFC 5705 interface): out_len bytes keyed by label
 * and context, once the handshake has completed. Returns 0, QK_ERR_STATE
 * (not complete), QK_ERR_INVALID_ARG, QK_ERR_TLS.
 */
int qk_tls_export(const qk_tls *tls, const char *label, const uint8_t *context, size_t context_len,
                  uint8_t *out, size_t out_len);

/** 1 once the handshake has completed. */
int qk_tls_complete(const qk_tls *tls);

/** Last alert sent or received (0 if none). */
int qk_tls_alert(const qk_tls *tls);

/** Negotiated packet-protection suite (QK_SUITE_UNKNOWN before ServerHello). */
qk_crypto_suite qk_tls_cipher_suite(const qk_tls *tls);

/**
 * The SHA-256 of the SubjectPublicKeyInfo of the certificate the peer
 * presented (what a pin is), also after its verification failed. Returns 0,
 * QK_ERR_STATE (no certificate received) or QK_ERR_INVALID_ARG.
 */
int qk_tls_peer_spki_sha256(const qk_tls *tls, uint8_t out[QK_TLS_PIN_BYTES]);

/**
 * The text for a handshake the peer ended with TLS alert (a CRYPTO_ERROR
 * CONNECTION_CLOSE, RFC 9001 §4.8): peer_reason when it has one, otherwise
 * what the alert likely means with what we offered (handshake_failure: our
 * cipher suites; no_application_protocol: our ALPN list). Writes out.
 */
void qk_tls_explain_peer_alert(const qk_tls *tls, int alert, const char *peer_reason, char *out,
                               size_t cap);

/** Human-readable description of the last GnuTLS failure (never NULL). */
const char *qk_tls_last_error(const qk_tls *tls);

/**
 * The GnuTLS priority string for a colon-separated list of TLS 1.3 cipher
 * suite names (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384,
 * TLS_CHACHA20_POLY1305_SHA256, TLS_AES_128_CCM_SHA256), in preference
 * order, into out. Returns 0, or QK_ERR_CONFIG for an empty list, a name not
 * in that list (*bad points at it; TLS_AES_128_CCM_8_SHA256 is refused, RFC
 * 9001 §5.3) or too small a buffer.
 */
int qk_tls_priority_for_ciphers(const char *ciphers, char *out, size_t cap, const char **bad);

/**
 * Client: the GnuTLS session data of the last NewSessionTicket received
 * (NULL, *len 0 before one arrived); valid until the next call into tls.
 * qk_tls_ticket_count() counts tickets received.
 */
const uint8_t *qk_tls_ticket(const qk_tls *tls, size_t *len);
unsigned qk_tls_ticket_count(const qk_tls *tls);

/** 1 once the handshake completed as a resumption (PSK), else 0. */
int qk_tls_resumed(const qk_tls *tls);

/**
 * After the handshake: QK_TLS_EARLY_ACCEPTED when early data was offered
 * (client) / received (server) and accepted, QK_TLS_EARLY_REJECTED when the
 * client offered it and the server refused, else QK_TLS_EARLY_NONE.
 */
int qk_tls_early_status(const qk_tls *tls);

/* Certificates and pins: include/quack/cert.h. */

#endif
