/* SPDX-License-Identifier: MIT */
/* Stream / CRYPTO send buffer. The application writes bytes (copied into
 * chunked storage, bounded by max_buffered_bytes) and optionally a FIN; the
 * packet builder asks next_range() for what to send — lost ranges first, then
 * new data — copies the bytes out, and reports on_sent / on_acked / on_lost.
 *
 * The FIN is modelled as one virtual byte at offset final_size, so a range
 * [start, end) in the acked/lost sets with end == final_size + 1 carries it.
 * Memory below the fully-acknowledged prefix is freed at once. */
#ifndef QK_TRANSPORT_SENDBUF_H
#define QK_TRANSPORT_SENDBUF_H

#include "base/rangeset.h"
#include "transport/streams/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Bound on acked/lost fragments; beyond it we fall back to resending (safe). */
#define QK_SENDBUF_MAX_RANGES 512u
/** Borrowed extents held at once (qk_sendbuf_write_ref); beyond, writes copy. */
#define QK_SENDBUF_MAX_REFS 256u

/** Application bytes sent from where they are (not copied): [off, off + len). */
typedef struct qk_sendbuf_ref {
    uint64_t off;
    const uint8_t *p;
    size_t len;
} qk_sendbuf_ref;

typedef struct qk_sendbuf {
    qk_blockring ring;         /**< copied bytes at offsets >= acked_off */
    qk_sendbuf_ref *refs;      /**< borrowed extents, a ring of QK_SENDBUF_MAX_REFS by offset */
    uint32_t ref_head, ref_n;  /**< first extent and count */
    qk_rangeset acked;         /**< acked ranges above acked_off (virtual FIN byte included) */
    qk_rangeset lost;          /**< ranges to retransmit, disjoint from acked */
    uint64_t acked_off;        /**< every byte below is acknowledged */
    uint64_t write_off;        /**< bytes written by the application */
    uint64_t sent_off;         /**< next never-sent offset (virtual FIN byte counts) */
    uint64_t max_sent_off;     /**< highest data offset ever sent (final size on reset) */
    size_t max_buffered_bytes; /**< bound on write_off - acked_off */
    bool fin;                  /**< the application finished writing */
    bool discarded;            /**< reset: nothing more is sent */
} qk_sendbuf;

/** Initialise an empty buffer holding at most max_buffered_bytes unacked bytes. */
void qk_sendbuf_init(qk_sendbuf *b, size_t max_buffered_bytes);

/** Free all memory. */
void qk_sendbuf_free(qk_sendbuf *b);

/**
 * Append up to len bytes. Returns how many were accepted (0 when full), or
 * QK_ERR_STATE after finish(), or QK_ERR_NOMEM.
 */
long qk_sendbuf_write(qk_sendbuf *b, const uint8_t *data, size_t len);

/**
 * Append up to len bytes without copying them: the buffer keeps a pointer,
 * and data must stay valid and unchanged until the buffer is freed or
 * discarded (the caller's contract; nothing here can check it). Contiguous
 * memory extends the previous extent; once QK_SENDBUF_MAX_REFS extents are
 * held the bytes are copied as by write(). Returns what write() returns.
 */
long qk_sendbuf_write_ref(qk_sendbuf *b, const uint8_t *data, size_t len);

/** Mark the end of data (FIN). Idempotent. */
void qk_sendbuf_finish(qk_sendbuf *b);

/** Free space for write(), in bytes. */
size_t qk_sendbuf_writable(const qk_sendbuf *b);

/**
 * Next range to send: the lowest lost range first, else new data. At most
 * max_len data bytes, and new data never past max_offset (the peer's
 * MAX_STREAM_DATA; retransmissions are below it already). Returns 1 with
 * (*off, *len, *fin) set — len may be 0 for a FIN-only frame — or 0 when
 * there is nothing to send. Does not change the buffer; call on_sent().
 */
int qk_sendbuf_next_range(const qk_sendbuf *b, size_t max_len, uint64_t max_offset, uint64_t *off,
                          size_t *len, bool *fin);

/**
 * Copy len buffered bytes at off into dst. off must be >= acked_off and
 * off + len <= write_off; returns QK_ERR_INVALID_ARG otherwise.
 */
int qk_sendbuf_copy(const qk_sendbuf *b, uint64_t off, size_t len, uint8_t *dst);

/**
 * Zero-copy view of buffered bytes: *p points at the byte at off and the
 * return value is how many bytes follow it contiguously (at most max), valid
 * until the buffer is next written, acknowledged or freed. Returns 0 (and
 * *p = NULL) when off is outside [acked_off, write_off) or not stored.
 */
size_t qk_sendbuf_peek(const qk_sendbuf *b, uint64_t off, size_t max, const uint8_t **p);

/** The range was put in a packet. Never fails (fragment overflow degrades to resending). */
void qk_sendbuf_on_sent(qk_sendbuf *b, uint64_t off, size_t len, bool fin);

/** The packet carrying the range was acknowledged; frees the acked prefix. */
void qk_sendbuf_on_acked(qk_sendbuf *b, uint64_t off, size_t len, bool fin);

/** The packet carrying the range was declared lost: re-queue the unacked parts. */
void qk_sendbuf_on_lost(qk_sendbuf *b, uint64_t off, size_t len, bool fin);

/** Drop everything (after RESET_STREAM): no more data to send. */
void qk_sendbuf_discard(qk_sendbuf *b);

/** True when there is something to send (lost data, new data or the FIN), ignoring flow control. */
bool qk_sendbuf_has_pending(const qk_sendbuf *b);

/** True when the FIN and every byte before it are acknowledged ("Data Recvd"). */
bool qk_sendbuf_all_acked(const qk_sendbuf *b);

/** True when every byte and the FIN have been sent at least once ("Data Sent"). */
bool qk_sendbuf_all_sent(const qk_sendbuf *b);

/** Bytes of memory held for data (blocks). */
size_t qk_sendbuf_mem_bytes(const qk_sendbuf *b);

#endif
