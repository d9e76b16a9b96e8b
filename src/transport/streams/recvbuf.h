/* SPDX-License-Identifier: MIT */
/* Stream / CRYPTO receive buffer: reassembles (offset, data, len, fin)
 * segments that arrive out of order, overlapping or duplicated, and hands
 * contiguous bytes to the reader. Only bytes not yet read are retained, and
 * never beyond the caller's limit (the flow-control window for a stream, the
 * crypto buffer size for CRYPTO frames), so the peer cannot grow it past a
 * bound the caller chose. */
#ifndef QK_TRANSPORT_RECVBUF_H
#define QK_TRANSPORT_RECVBUF_H

#include "base/rangeset.h"
#include "transport/streams/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Default bound on reassembly gaps (distinct received ranges). */
#define QK_RECVBUF_DEFAULT_MAX_RANGES 1024u

typedef struct qk_recvbuf {
    qk_blockring ring;   /**< bytes at offsets >= read_off */
    qk_rangeset recvd;   /**< received ranges (the prefix below read_off is trimmed) */
    uint64_t read_off;   /**< next offset the application reads */
    uint64_t limit;      /**< no byte at offset >= limit is accepted */
    uint64_t window;     /**< if non-zero, limit follows read_off + window (CRYPTO) */
    uint64_t max_off;    /**< highest offset + 1 received (or final size once reset) */
    uint64_t final_size; /**< valid when fin_known */
    bool fin_known;      /**< a FIN (or RESET_STREAM) fixed the final size */
    int limit_err;       /**< error returned beyond limit (FLOW_CONTROL or CRYPTO_BUFFER) */
} qk_recvbuf;

/**
 * Initialise a stream receive buffer accepting offsets below limit (the
 * initial MAX_STREAM_DATA we advertise). max_ranges bounds the number of
 * gaps held at once (0 = QK_RECVBUF_DEFAULT_MAX_RANGES). Never fails.
 */
void qk_recvbuf_init(qk_recvbuf *b, uint64_t limit, size_t max_ranges);

/**
 * Raise the gap bound to max_ranges (never lowers it): a window auto-tuned
 * to W bytes admits about W / 1 KiB gaps, as one loss burst in slow start
 * leaves one gap per lost packet. Still bounded by the window. Never fails.
 */
void qk_recvbuf_raise_max_ranges(qk_recvbuf *b, size_t max_ranges);

/**
 * Initialise a CRYPTO receive buffer: no FIN, and at most window_bytes beyond
 * the read offset are accepted (the limit moves with reads), else
 * QK_ERR_CRYPTO_BUFFER (RFC 9000 §7.5). Never fails.
 */
void qk_recvbuf_init_crypto(qk_recvbuf *b, uint64_t window_bytes);

/** Free all memory. */
void qk_recvbuf_free(qk_recvbuf *b);

/**
 * Move the limit (normally only up, when we send MAX_STREAM_DATA). Lowering
 * it below data already received is refused with QK_ERR_INVALID_ARG.
 */
int qk_recvbuf_set_limit(qk_recvbuf *b, uint64_t limit);

/**
 * Insert a segment. Bytes already read or already held are ignored (the
 * first copy wins). Returns 0, or:
 * QK_ERR_FLOW_CONTROL / QK_ERR_CRYPTO_BUFFER when off + len exceeds the limit
 *   (RFC 9000 §4.1, §7.5; also for offsets beyond 2^62-1, §19.8);
 * QK_ERR_FINAL_SIZE when the data passes a known final size, a FIN gives a
 *   different final size, or a FIN is below data already received (§4.5);
 * QK_ERR_PROTOCOL_VIOLATION for a FIN on a CRYPTO buffer;
 * QK_ERR_LIMIT when the segment would create more gaps than max_ranges (the
 *   buffer is unchanged; the caller must not acknowledge the packet);
 * QK_ERR_NOMEM. On error the buffer is unchanged.
 */
int qk_recvbuf_insert(qk_recvbuf *b, uint64_t off, const uint8_t *data, size_t len, bool fin);

/**
 * Record a final size from RESET_STREAM (RFC 9000 §4.5, §19.4): returns
 * QK_ERR_FINAL_SIZE if it differs from a known final size or is below data
 * received, QK_ERR_FLOW_CONTROL if beyond the limit. On success max_off
 * becomes final_size (the flow-control credit the peer consumed) and
 * buffered data is released.
 */
int qk_recvbuf_reset(qk_recvbuf *b, uint64_t final_size);

/** Contiguous bytes ready to read at read_off. */
uint64_t qk_recvbuf_readable(const qk_recvbuf *b);

/** Copy up to cap contiguous bytes into dst and consume them. Returns the count. */
size_t qk_recvbuf_read(qk_recvbuf *b, uint8_t *dst, size_t cap);

/**
 * Zero-copy read: *p points at the next readable bytes; returns how many are
 * contiguous in memory (<= readable; 0 when nothing). Pair with consume().
 */
size_t qk_recvbuf_peek(const qk_recvbuf *b, const uint8_t **p);

/** Consume n readable bytes (n <= readable, else QK_ERR_INVALID_ARG). */
int qk_recvbuf_consume(qk_recvbuf *b, size_t n);

/** True when the final size is known and every byte below it was received. */
bool qk_recvbuf_all_received(const qk_recvbuf *b);

/** True when the final size is known and every byte was read. */
bool qk_recvbuf_fin_read(const qk_recvbuf *b);

/** Bytes of memory held for data (blocks). */
size_t qk_recvbuf_mem_bytes(const qk_recvbuf *b);

#endif
