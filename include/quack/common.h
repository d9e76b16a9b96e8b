/* SPDX-License-Identifier: MIT */
/** @file
 * quack — common types and error codes shared by every public header:
 * time (qk_time, nanoseconds on the caller's monotonic clock), socket
 * addresses (qk_addr), the datagram that crosses the sans-I/O boundary
 * (qk_datagram), ECN codepoints and the QK_ERR_* error codes.
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: every function is thread-safe (pure;
 * qk_strerror returns static strings).
 */
#ifndef QUACK_COMMON_H
#define QUACK_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Time in nanoseconds on the caller's clock. The stack never reads a clock. */
typedef uint64_t qk_time;

/** "Never": a deadline that does not exist (e.g. no timer armed). */
#define QK_TIME_INFINITE UINT64_MAX
/** Nanoseconds per microsecond. */
#define QK_NS_PER_US 1000ull
/** Nanoseconds per millisecond. */
#define QK_NS_PER_MS 1000000ull
/** Nanoseconds per second. */
#define QK_NS_PER_S 1000000000ull

/** Caller-supplied randomness: fill buf with len random bytes. */
typedef void (*qk_rng_fn)(void *ctx, uint8_t *buf, size_t len);

/** A socket address (IPv4 or IPv6). len == 0 means "unspecified". */
typedef struct qk_addr {
    struct sockaddr_storage ss; /**< the address (sockaddr_in or sockaddr_in6 inside) */
    socklen_t len;              /**< bytes of ss in use; 0 = unspecified */
} qk_addr;

/** True when a and b have the same family, address, port and IPv6 scope
 * (two unspecified addresses are equal). Never fails. */
bool qk_addr_equal(const qk_addr *a, const qk_addr *b);

/** As qk_addr_equal, ignoring the port. Never fails. */
bool qk_addr_same_host(const qk_addr *a, const qk_addr *b);

/** The port of a in host byte order (0 when unspecified). Never fails. */
uint16_t qk_addr_port(const qk_addr *a);

/** *out = a as IPv6: an IPv4 address becomes the v4-mapped address (80 zero
 * bits, 16 one bits, then the IPv4 address: RFC 4291 §2.5.5.2) with the same
 * port, as a dual-stack socket sees it;
 * any other address (IPv6, unspecified) is copied unchanged. out may be a.
 * Pure (no sockets). Never fails. */
void qk_addr_map_v4(const qk_addr *a, qk_addr *out);

/** The IPv4 address in a: true and *out = a as AF_INET (same port) when a
 * is IPv4 or v4-mapped IPv6 (the form qk_addr_map_v4() writes, RFC 4291 §2.5.5.2); false
 * (*out untouched) for any other IPv6 address or an unspecified one. out
 * may be a. Pure (no sockets). Never fails otherwise. */
bool qk_addr_unmap_v4(const qk_addr *a, qk_addr *out);

/** ECN codepoints, as in the low two bits of IP TOS / traffic class. */
enum {
    QK_ECN_NOT_ECT = 0, /**< not ECN-capable transport */
    QK_ECN_ECT1 = 1,    /**< ECN-capable, ECT(1) (L4S, RFC 9331) */
    QK_ECN_ECT0 = 2,    /**< ECN-capable, ECT(0) (classic ECN, RFC 3168) */
    QK_ECN_CE = 3,      /**< congestion experienced (set by a router) */
};

/**
 * One UDP datagram crossing the sans-I/O boundary (sockets, simulator, relay).
 * When segment_bytes is non-zero, data holds a GSO/GRO batch: consecutive
 * datagrams of segment_bytes each, the last possibly shorter.
 */
typedef struct qk_datagram {
    uint8_t *data;          /**< the bytes (owned by whoever filled the struct) */
    size_t len;             /**< bytes in data (on input to a send: data's capacity) */
    qk_addr local;          /**< our address (destination on receive) */
    qk_addr peer;           /**< the remote address */
    uint8_t ecn;            /**< QK_ECN_* */
    uint16_t segment_bytes; /**< GSO segment size, 0 = a single datagram */
} qk_datagram;

/**
 * Error codes. Every fallible function returns 0 (or a non-negative count) on
 * success and one of these negative values on failure.
 *
 * Values in [-0x1000 - 0x1ff, -0x1000] mirror RFC 9000 §20.1 transport error
 * codes: QK_ERR_x == -(0x1000 + code). CRYPTO_ERROR (0x0100 + TLS alert) maps to
 * QK_ERR_CRYPTO_ALERT(alert). qk_err_transport_code() gives the wire code.
 */
enum {
    QK_OK = 0,                    /**< success */
    QK_ERR_INVALID_ARG = -1,      /**< caller passed a bad argument */
    QK_ERR_NOMEM = -2,            /**< allocation failed or a configured bound hit */
    QK_ERR_BUFFER_TOO_SMALL = -3, /**< encode: output buffer too small */
    QK_ERR_TRUNCATED = -4,        /**< decode: input ends early */
    QK_ERR_AGAIN = -5,            /**< nothing to do now (would block) */
    QK_ERR_STATE = -6,            /**< operation invalid in the current state */
    QK_ERR_DECRYPT = -7,          /**< AEAD open failed (packet is dropped) */
    QK_ERR_TLS = -8,              /**< TLS library failure */
    QK_ERR_VERSION = -9,          /**< unsupported QUIC version */
    QK_ERR_LIMIT = -10,           /**< a local limit was reached */
    QK_ERR_CLOSED = -11,          /**< connection or stream is closed */
    QK_ERR_IO = -12,              /**< socket / file error (see errno) */
    QK_ERR_CONFIG = -13,          /**< invalid configuration */
    QK_ERR_NOT_FOUND = -14,       /**< no such object */
    QK_ERR_TOO_LARGE = -15,       /**< value exceeds a negotiated maximum */
    QK_ERR_UNSUPPORTED = -16,     /**< not implemented / not negotiated */
    QK_ERR_IGNORE = -17,          /**< input is valid but must be dropped silently */
    QK_ERR_TIMEOUT = -18,         /**< the handshake did not finish in time */

    QK_ERR_TRANSPORT_BASE = -0x1000,      /**< wire code 0x0 (NO_ERROR); codes below add to it */
    QK_ERR_INTERNAL = -0x1001,            /**< INTERNAL_ERROR */
    QK_ERR_CONNECTION_REFUSED = -0x1002,  /**< CONNECTION_REFUSED */
    QK_ERR_FLOW_CONTROL = -0x1003,        /**< FLOW_CONTROL_ERROR */
    QK_ERR_STREAM_LIMIT = -0x1004,        /**< STREAM_LIMIT_ERROR */
    QK_ERR_STREAM_STATE = -0x1005,        /**< STREAM_STATE_ERROR */
    QK_ERR_FINAL_SIZE = -0x1006,          /**< FINAL_SIZE_ERROR */
    QK_ERR_FRAME_ENCODING = -0x1007,      /**< FRAME_ENCODING_ERROR */
    QK_ERR_TRANSPORT_PARAMETER = -0x1008, /**< TRANSPORT_PARAMETER_ERROR */
    QK_ERR_CONNECTION_ID_LIMIT = -0x1009, /**< CONNECTION_ID_LIMIT_ERROR */
    QK_ERR_PROTOCOL_VIOLATION = -0x100a,  /**< PROTOCOL_VIOLATION */
    QK_ERR_INVALID_TOKEN = -0x100b,       /**< INVALID_TOKEN */
    QK_ERR_APPLICATION = -0x100c,         /**< APPLICATION_ERROR */
    QK_ERR_CRYPTO_BUFFER = -0x100d,       /**< CRYPTO_BUFFER_EXCEEDED */
    QK_ERR_KEY_UPDATE = -0x100e,          /**< KEY_UPDATE_ERROR */
    QK_ERR_AEAD_LIMIT = -0x100f,          /**< AEAD_LIMIT_REACHED */
    QK_ERR_NO_VIABLE_PATH = -0x1010,      /**< NO_VIABLE_PATH */
    QK_ERR_CRYPTO_BASE = -0x1100, /**< CRYPTO_ERROR 0x0100..0x01ff: see QK_ERR_CRYPTO_ALERT */
};

/** CRYPTO_ERROR for a TLS alert (RFC 9001 §4.8). */
#define QK_ERR_CRYPTO_ALERT(alert) (-(0x1100 + (int)((alert)&0xff)))

/** True when err is one of the RFC 9000 transport error codes. */
#define QK_ERR_IS_TRANSPORT(err) ((err) <= -0x1000 && (err) >= -0x11ff)

/**
 * Wire code (RFC 9000 §20.1) to send in CONNECTION_CLOSE for an error.
 * Non-transport errors map to INTERNAL_ERROR (0x1), except QK_ERR_TRUNCATED
 * which maps to FRAME_ENCODING_ERROR (0x7).
 */
uint64_t qk_err_transport_code(int err);

/** Inverse of qk_err_transport_code() for codes 0x0..0x1ff; others give QK_ERR_PROTOCOL_VIOLATION.
 */
int qk_err_from_transport_code(uint64_t code);

/** Short, static, human-readable description of an error code. Never NULL. */
const char *qk_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
