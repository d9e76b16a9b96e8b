/* SPDX-License-Identifier: MIT */
/* The pinned-key check shared by the QUIC TLS driver (tls_gnutls.c) and the
 * tunnel's TLS-over-TCP carrier (tunnel/tcp_carrier.c). */
#ifndef QK_CRYPTO_PIN_GNUTLS_H
#define QK_CRYPTO_PIN_GNUTLS_H

#include <gnutls/gnutls.h>
#include <quack/cert.h>
#include <stdbool.h>

/** True when the SHA-256 of the SubjectPublicKeyInfo of the peer's first
 * certificate equals pin (compared in constant time). Never fails: no or a
 * broken certificate is false. */
bool qk_gnutls_peer_pin_ok(gnutls_session_t s, const uint8_t pin[QK_PIN_BYTES]);

/** The SHA-256 of the SubjectPublicKeyInfo of the peer's first certificate
 * (what a pin is compared with) into out. False when there is none (yet). */
bool qk_gnutls_peer_spki(gnutls_session_t s, uint8_t out[QK_PIN_BYTES]);

#endif
