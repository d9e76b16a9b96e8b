/* SPDX-License-Identifier: MIT */
/* QUIC variable-length integers (RFC 9000 §16). */
#ifndef QK_WIRE_VARINT_H
#define QK_WIRE_VARINT_H

#include <stddef.h>
#include <stdint.h>
#include "base/cursor.h"

/** Minimal encoded length of v: 1, 2, 4 or 8; 0 when v > QK_VARINT_MAX. */
size_t qk_varint_len(uint64_t v);

/**
 * Encode v minimally into buf.
 * Returns the byte count, QK_ERR_INVALID_ARG when v > QK_VARINT_MAX,
 * QK_ERR_BUFFER_TOO_SMALL when cap is too small.
 */
int qk_varint_encode(uint8_t *buf, size_t cap, uint64_t v);

/**
 * Encode v using exactly width bytes (1, 2, 4 or 8), e.g. for a Length field
 * that is patched once the payload size is known (RFC 9000 §16 allows
 * non-minimal encodings).
 * Returns width, QK_ERR_INVALID_ARG for a bad width or a v that does not fit
 * in it, QK_ERR_BUFFER_TOO_SMALL when cap < width.
 */
int qk_varint_encode_fixed(uint8_t *buf, size_t cap, uint64_t v, size_t width);

/**
 * Decode a varint from buf (any encoding length is accepted).
 * Returns the byte count (1, 2, 4 or 8) or QK_ERR_TRUNCATED.
 */
int qk_varint_decode(const uint8_t *buf, size_t len, uint64_t *v);

#endif
