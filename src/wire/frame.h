/* SPDX-License-Identifier: MIT */
/* QUIC frames (RFC 9000 §19, RFC 9221 DATAGRAM, draft-ietf-quic-ack-frequency-12).
 *
 * Decoding never allocates: byte payloads (STREAM, CRYPTO, DATAGRAM,
 * NEW_TOKEN, reason phrases, CIDs, reset tokens, ACK ranges) point into the
 * input buffer. Frame types must be minimally encoded: a longer encoding is
 * rejected with QK_ERR_PROTOCOL_VIOLATION, as RFC 9000 §12.4 permits. */
#ifndef QK_WIRE_FRAME_H
#define QK_WIRE_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/rangeset.h"
#include "wire/packet.h"

/* Frame type codepoints. */
enum {
    QK_FT_PADDING = 0x00,
    QK_FT_PING = 0x01,
    QK_FT_ACK = 0x02,
    QK_FT_ACK_ECN = 0x03,
    QK_FT_RESET_STREAM = 0x04,
    QK_FT_STOP_SENDING = 0x05,
    QK_FT_CRYPTO = 0x06,
    QK_FT_NEW_TOKEN = 0x07,
    QK_FT_STREAM = 0x08, /* 0x08..0x0f: | OFF 0x04 | LEN 0x02 | FIN 0x01 */
    QK_FT_STREAM_MAX = 0x0f,
    QK_FT_MAX_DATA = 0x10,
    QK_FT_MAX_STREAM_DATA = 0x11,
    QK_FT_MAX_STREAMS_BIDI = 0x12,
    QK_FT_MAX_STREAMS_UNI = 0x13,
    QK_FT_DATA_BLOCKED = 0x14,
    QK_FT_STREAM_DATA_BLOCKED = 0x15,
    QK_FT_STREAMS_BLOCKED_BIDI = 0x16,
    QK_FT_STREAMS_BLOCKED_UNI = 0x17,
    QK_FT_NEW_CONNECTION_ID = 0x18,
    QK_FT_RETIRE_CONNECTION_ID = 0x19,
    QK_FT_PATH_CHALLENGE = 0x1a,
    QK_FT_PATH_RESPONSE = 0x1b,
    QK_FT_CONNECTION_CLOSE = 0x1c,     /* transport */
    QK_FT_CONNECTION_CLOSE_APP = 0x1d, /* application */
    QK_FT_HANDSHAKE_DONE = 0x1e,
    QK_FT_IMMEDIATE_ACK = 0x1f, /* ack-frequency-12 §5 */
    QK_FT_DATAGRAM = 0x30,      /* RFC 9221 §4, no Length */
    QK_FT_DATAGRAM_LEN = 0x31,  /* with Length */
    QK_FT_ACK_FREQUENCY = 0xaf, /* ack-frequency-12 §4 */
};

#define QK_STREAM_BIT_OFF 0x04
#define QK_STREAM_BIT_LEN 0x02
#define QK_STREAM_BIT_FIN 0x01

/** Maximum stream count in MAX_STREAMS / STREAMS_BLOCKED (RFC 9000 §19.11). */
#define QK_MAX_STREAMS_LIMIT (1ull << 60)

typedef struct qk_frame_ack {
    uint64_t largest;      /**< Largest Acknowledged */
    uint64_t ack_delay;    /**< raw; the caller applies ack_delay_exponent */
    uint64_t first_range;  /**< First ACK Range */
    uint64_t range_count;  /**< number of (Gap, ACK Range Length) pairs */
    const uint8_t *ranges; /**< raw pairs, validated by the decoder */
    size_t ranges_len;     /**< bytes at ranges */
    bool has_ecn;          /**< type 0x03 */
    uint64_t ect0, ect1, ce;
} qk_frame_ack;

typedef struct qk_frame_stream {
    uint64_t stream_id;
    uint64_t offset;
    const uint8_t *data;
    size_t len;
    bool fin;
    bool has_length; /**< LEN bit: decode = present; encode = write it */
} qk_frame_stream;

typedef struct qk_frame_crypto {
    uint64_t offset;
    const uint8_t *data;
    size_t len;
} qk_frame_crypto;

typedef struct qk_frame_close {
    uint64_t error_code;
    uint64_t frame_type; /**< 0x1c only: the frame that caused the error */
    const uint8_t *reason;
    size_t reason_len;
} qk_frame_close;

typedef struct qk_frame_new_cid {
    uint64_t seq;
    uint64_t retire_prior_to;
    const uint8_t *cid;
    size_t cid_len;             /**< 1..20 */
    const uint8_t *reset_token; /**< 16 bytes */
} qk_frame_new_cid;

typedef struct qk_frame_ack_frequency {
    uint64_t seq;
    uint64_t ack_eliciting_threshold;
    uint64_t request_max_ack_delay_us;
    uint64_t reordering_threshold;
} qk_frame_ack_frequency;

/** One decoded frame. `type` is the wire type (e.g. 0x0b for a STREAM variant). */
typedef struct qk_frame {
    uint64_t type;
    union {
        struct {
            size_t len; /**< PADDING: number of consecutive 0x00 bytes */
        } padding;
        qk_frame_ack ack;
        struct {
            uint64_t stream_id, app_error, final_size;
        } reset_stream;
        struct {
            uint64_t stream_id, app_error;
        } stop_sending;
        qk_frame_crypto crypto;
        struct {
            const uint8_t *token;
            size_t len;
        } new_token;
        qk_frame_stream stream;
        struct {
            uint64_t max; /**< MAX_DATA, MAX_STREAMS, DATA_BLOCKED, STREAMS_BLOCKED */
        } max;
        struct {
            uint64_t stream_id, max; /**< MAX_STREAM_DATA, STREAM_DATA_BLOCKED */
        } stream_max;
        qk_frame_new_cid new_cid;
        struct {
            uint64_t seq;
        } retire_cid;
        struct {
            uint8_t data[8];
        } path; /**< PATH_CHALLENGE / PATH_RESPONSE */
        qk_frame_close close;
        struct {
            const uint8_t *data;
            size_t len;
            bool has_length; /**< 0x31 */
        } datagram;
        qk_frame_ack_frequency ack_frequency;
    } u;
} qk_frame;

/**
 * Decode one frame from buf. Returns bytes consumed (> 0) or
 * QK_ERR_FRAME_ENCODING (truncated or invalid field, unknown type),
 * QK_ERR_PROTOCOL_VIOLATION (non-minimal frame type encoding),
 * QK_ERR_INVALID_ARG (len == 0).
 * PADDING runs are coalesced into one frame. STREAM without LEN and
 * DATAGRAM 0x30 consume the rest of buf.
 */
int qk_frame_decode(const uint8_t *buf, size_t len, qk_frame *f);

/**
 * Encode f into out. Returns bytes written, QK_ERR_BUFFER_TOO_SMALL, or
 * QK_ERR_INVALID_ARG (field out of range, unknown type). STREAM: the type is
 * recomputed: OFF when offset != 0 or f->type has OFF, LEN iff has_length,
 * FIN iff fin. DATAGRAM: 0x31 iff has_length. PADDING writes padding.len zeros.
 */
int qk_frame_encode(const qk_frame *f, uint8_t *out, size_t cap);

/**
 * True when two frames carry the same type and field values (byte payloads
 * compared by content, ACK ranges by their raw bytes). For tests and fuzzers.
 */
bool qk_frame_equal(const qk_frame *a, const qk_frame *b);

/* ---- ACK ---- */

/** Iterator over the acknowledged ranges of a decoded ACK, highest first. */
typedef struct qk_ack_iter {
    const qk_frame_ack *ack;
    const uint8_t *p;
    uint64_t left;     /**< ranges not yet yielded (including the first) */
    uint64_t smallest; /**< smallest of the previous range */
} qk_ack_iter;

void qk_ack_iter_init(qk_ack_iter *it, const qk_frame_ack *ack);

/**
 * Next range [*smallest, *largest] (inclusive), descending. Returns false
 * when done. Only valid on an ACK produced by qk_frame_decode().
 */
bool qk_ack_iter_next(qk_ack_iter *it, uint64_t *smallest, uint64_t *largest);

/**
 * Encode an ACK (0x02, or 0x03 when ecn != NULL: ecn[0..2] = ECT0, ECT1, CE)
 * from ranges[0..n) given ASCENDING, half-open, disjoint and non-adjacent as a
 * qk_rangeset stores them. Writes the highest ranges that fit in cap, so it
 * succeeds whenever the highest range fits. *n_written (may be NULL) receives
 * the number of ranges written. ack_delay is raw (already scaled).
 * Returns bytes written, QK_ERR_BUFFER_TOO_SMALL, or QK_ERR_INVALID_ARG
 * (n == 0, empty/unsorted range, values over 2^62).
 */
int qk_frame_encode_ack(uint8_t *out, size_t cap, const qk_range *ranges, size_t n,
                        uint64_t ack_delay, const uint64_t *ecn, size_t *n_written);

/* ---- STREAM / CRYPTO sizing ---- */

/** Bytes of a STREAM frame header (type, id, offset if != 0, Length if with_length). */
size_t qk_frame_stream_header_len(uint64_t stream_id, uint64_t offset, size_t data_len,
                                  bool with_length);

/**
 * Largest data length a STREAM frame for (stream_id, offset) can carry in
 * space bytes, with or without a Length field; 0 if not even one byte fits.
 */
size_t qk_frame_stream_max_data(uint64_t stream_id, uint64_t offset, size_t space,
                                bool with_length);

/** Bytes of a CRYPTO frame header (type, offset, length). */
size_t qk_frame_crypto_header_len(uint64_t offset, size_t data_len);

/** Largest data length a CRYPTO frame at offset can carry in space bytes (0 if none). */
size_t qk_frame_crypto_max_data(uint64_t offset, size_t space);

/* ---- classification (RFC 9000 §12.4, Table 3) ---- */

/** True when a frame of this type may appear in a packet of this type. */
bool qk_frame_allowed(uint64_t frame_type, qk_pkt_type pkt_type);

/** True for every frame type except ACK, PADDING and CONNECTION_CLOSE (RFC 9000 §13.2). */
bool qk_frame_is_ack_eliciting(uint64_t frame_type);

/** PATH_CHALLENGE, PATH_RESPONSE, NEW_CONNECTION_ID, PADDING (RFC 9000 §9.1). */
bool qk_frame_is_probing(uint64_t frame_type);

/** True when the type is a STREAM variant (0x08..0x0f). */
static inline bool qk_frame_is_stream(uint64_t frame_type)
{
    return frame_type >= QK_FT_STREAM && frame_type <= QK_FT_STREAM_MAX;
}

#endif
