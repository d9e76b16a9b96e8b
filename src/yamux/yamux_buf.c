/* SPDX-License-Identifier: MIT */
/* Byte queues for yamux streams and the frame header codec. */
#include "yamux/yamux_int.h"
#include "base/bytes.h"

#include <stdlib.h>
#include <string.h>

int qk_ybuf_append(ybuf *b, const uint8_t *p, size_t n)
{
    if (!n) return 0;
    if (b->off + b->len + n > b->cap && b->off) { /* compact first */
        memmove(b->data, b->data + b->off, b->len);
        b->off = 0;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        uint8_t *d = realloc(b->data, cap);
        if (!d) return QK_ERR_NOMEM;
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->off + b->len, p, n);
    b->len += n;
    return 0;
}

size_t qk_ybuf_take(ybuf *b, uint8_t *out, size_t n)
{
    if (n > b->len) n = b->len;
    if (!n) return 0;
    if (out) memcpy(out, b->data + b->off, n);
    b->off += n;
    b->len -= n;
    if (!b->len) b->off = 0;
    /* Give memory back once a large buffer drains (windows shrink). */
    if (!b->len && b->cap > 65536) {
        free(b->data);
        b->data = NULL;
        b->cap = 0;
    }
    return n;
}

void qk_ybuf_free(ybuf *b)
{
    free(b->data);
    *b = (ybuf){0};
}

void qk_yamux_header_encode(uint8_t *out, uint8_t type, uint16_t flags, uint32_t sid,
                            uint32_t length)
{
    /* spec.md "Framing": version, type, flags (16 bit), stream id, length,
     * all big-endian. */
    out[0] = 0;
    out[1] = type;
    out[2] = (uint8_t)(flags >> 8);
    out[3] = (uint8_t)flags;
    qk_put_be32(out + 4, sid);
    qk_put_be32(out + 8, length);
}

int qk_yamux_header_decode(const uint8_t *buf, size_t len, uint8_t *type, uint16_t *flags,
                           uint32_t *sid, uint32_t *length)
{
    if (!buf || len < QK_YAMUX_HEADER_BYTES) return QK_ERR_TRUNCATED;
    /* spec.md "Version field": always 0; "Type field": 0..3. */
    if (buf[0] != 0 || buf[1] > YT_GO_AWAY) return QK_ERR_PROTOCOL_VIOLATION;
    *type = buf[1];
    *flags = (uint16_t)(buf[2] << 8 | buf[3]);
    *sid = qk_get_be32(buf + 4);
    *length = qk_get_be32(buf + 8);
    return 0;
}
