/* SPDX-License-Identifier: MIT */
/* QUIC variable-length integers (RFC 9000 §16). */
#include "wire/varint.h"
#include <quack/common.h>

size_t qk_varint_len(uint64_t v)
{
    return qk_varint_size(v);
}

int qk_varint_encode(uint8_t *buf, size_t cap, uint64_t v)
{
    size_t n = qk_varint_size(v);
    if (n == 0) return QK_ERR_INVALID_ARG; /* RFC 9000 §16: at most 2^62-1 */
    return qk_varint_encode_fixed(buf, cap, v, n);
}

int qk_varint_encode_fixed(uint8_t *buf, size_t cap, uint64_t v, size_t width)
{
    if (width != 1 && width != 2 && width != 4 && width != 8) return QK_ERR_INVALID_ARG;
    size_t need = qk_varint_size(v);
    if (need == 0 || need > width) return QK_ERR_INVALID_ARG;
    if (cap < width) return QK_ERR_BUFFER_TOO_SMALL;
    qk_wr w = qk_wr_make(buf, cap);
    qk_wr_varint_n(&w, v, width);
    return (int)width;
}

int qk_varint_decode(const uint8_t *buf, size_t len, uint64_t *v)
{
    qk_rd r = qk_rd_make(buf, len);
    if (!qk_rd_varint(&r, v)) return QK_ERR_TRUNCATED;
    return (int)(r.p - buf);
}
