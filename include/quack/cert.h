/* SPDX-License-Identifier: MIT */
/** @file
 * quack — certificates and public-key pins, for applications that serve
 * QUIC with a self-signed certificate and clients that pin its key
 * (qk_config.pin_sha256). GnuTLS does the work; no I/O except the *_file
 * functions.
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: every function is thread-safe (no
 * shared state).
 */
#ifndef QUACK_CERT_H
#define QUACK_CERT_H

#include <quack/common.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of a pin: SHA-256 of a certificate's SubjectPublicKeyInfo. */
#define QK_PIN_BYTES 32

/**
 * Generate a self-signed ECDSA P-256 certificate for `name` (CN and DNS SAN)
 * valid from not_before_s for valid_days (seconds since the epoch; the caller
 * reads the clock). *cert_pem and *key_pem are malloc'd NUL-terminated PEM
 * strings the caller frees. Returns 0, QK_ERR_INVALID_ARG, QK_ERR_NOMEM or
 * QK_ERR_TLS.
 */
int qk_cert_generate(const char *name, int64_t not_before_s, unsigned valid_days, char **cert_pem,
                     char **key_pem);

/**
 * As qk_cert_generate, writing the PEMs to files (key with mode 0600). Files
 * are written to a temporary name and renamed, so no half-written file is
 * left. Returns 0, QK_ERR_IO, QK_ERR_NOMEM or QK_ERR_TLS.
 */
int qk_cert_generate_files(const char *name, int64_t not_before_s, unsigned valid_days,
                           const char *cert_path, const char *key_path);

/**
 * SHA-256 of the SubjectPublicKeyInfo of the first certificate in a PEM
 * buffer. Returns 0, QK_ERR_CONFIG (not a certificate) or QK_ERR_TLS.
 */
int qk_cert_pin_pem(const char *cert_pem, size_t len, uint8_t pin[QK_PIN_BYTES]);

/** As qk_cert_pin_pem for a PEM file. Returns 0, QK_ERR_IO, QK_ERR_CONFIG. */
int qk_cert_pin_file(const char *path, uint8_t pin[QK_PIN_BYTES]);

/** Lower-case hex of a pin into out (65 bytes incl. NUL). */
void qk_pin_to_hex(const uint8_t pin[QK_PIN_BYTES], char out[65]);

/** Standard base64 (with padding) of a pin into out (45 bytes incl. NUL). */
void qk_pin_to_base64(const uint8_t pin[QK_PIN_BYTES], char out[45]);

/**
 * Parse a pin given as 64 hex digits or 44-char base64 (optionally prefixed
 * "sha256/" or "sha256:"). Returns 0 or QK_ERR_INVALID_ARG.
 */
int qk_pin_parse(const char *s, uint8_t pin[QK_PIN_BYTES]);

#ifdef __cplusplus
}
#endif

#endif
