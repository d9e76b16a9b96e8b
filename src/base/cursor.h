/* SPDX-License-Identifier: MIT */
/* Bounds-checked byte reader and writer (network byte order, QUIC varints).
 *
 * Every accessor checks the remaining length first and returns false without
 * moving the cursor when the input (or output space) is too short, so a caller
 * can map failure to whatever error its layer needs. Header-only, no state
 * beyond the two pointers, no allocation. */
#ifndef QK_BASE_CURSOR_H
#define QK_BASE_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/** Largest value a QUIC variable-length integer can hold (RFC 9000 §16). */
#define QK_VARINT_MAX ((1ull << 62) - 1)

/** A reader over [p, end). */
typedef struct qk_rd {
    const uint8_t *p;
    const uint8_t *end;
} qk_rd;

/** A writer over [p, end); p advances as bytes are written. */
typedef struct qk_wr {
    uint8_t *p;
    uint8_t *end;
} qk_wr;

/* Stand-in for NULL buffers of length 0 (NULL + 0 is undefined behaviour). */
static uint8_t qk_cursor_empty_[1];

static inline qk_rd qk_rd_make(const uint8_t *buf, size_t len)
{
    if (!buf) buf = qk_cursor_empty_, len = 0;
    qk_rd r = {buf, buf + len};
    return r;
}

/** Bytes left to read. */
static inline size_t qk_rd_left(const qk_rd *r)
{
    return (size_t)(r->end - r->p);
}

static inline bool qk_rd_u8(qk_rd *r, uint8_t *v)
{
    if (r->end - r->p < 1) return false;
    *v = *r->p++;
    return true;
}

/** Read an n-byte (1..8) big-endian unsigned integer. */
static inline bool qk_rd_uint(qk_rd *r, size_t n, uint64_t *v)
{
    if ((size_t)(r->end - r->p) < n) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) x = (x << 8) | r->p[i];
    r->p += n;
    *v = x;
    return true;
}

static inline bool qk_rd_u16(qk_rd *r, uint16_t *v)
{
    uint64_t x;
    if (!qk_rd_uint(r, 2, &x)) return false;
    *v = (uint16_t)x;
    return true;
}

static inline bool qk_rd_u24(qk_rd *r, uint32_t *v)
{
    uint64_t x;
    if (!qk_rd_uint(r, 3, &x)) return false;
    *v = (uint32_t)x;
    return true;
}

static inline bool qk_rd_u32(qk_rd *r, uint32_t *v)
{
    uint64_t x;
    if (!qk_rd_uint(r, 4, &x)) return false;
    *v = (uint32_t)x;
    return true;
}

static inline bool qk_rd_u64(qk_rd *r, uint64_t *v)
{
    return qk_rd_uint(r, 8, v);
}

/** Read a QUIC variable-length integer (RFC 9000 §16); non-minimal forms are accepted. */
static inline bool qk_rd_varint(qk_rd *r, uint64_t *v)
{
    if (r->p >= r->end) return false;
    size_t n = (size_t)1 << (r->p[0] >> 6);
    if ((size_t)(r->end - r->p) < n) return false;
    uint64_t x = r->p[0] & 0x3f;
    for (size_t i = 1; i < n; i++) x = (x << 8) | r->p[i];
    r->p += n;
    *v = x;
    return true;
}

/** Take n bytes: *out points into the input. */
static inline bool qk_rd_bytes(qk_rd *r, size_t n, const uint8_t **out)
{
    if ((size_t)(r->end - r->p) < n) return false;
    *out = r->p;
    r->p += n;
    return true;
}

/** Copy n bytes into out. */
static inline bool qk_rd_copy(qk_rd *r, void *out, size_t n)
{
    if ((size_t)(r->end - r->p) < n) return false;
    if (n) memcpy(out, r->p, n);
    r->p += n;
    return true;
}

static inline bool qk_rd_skip(qk_rd *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) return false;
    r->p += n;
    return true;
}

static inline qk_wr qk_wr_make(uint8_t *buf, size_t cap)
{
    if (!buf) buf = qk_cursor_empty_, cap = 0;
    qk_wr w = {buf, buf + cap};
    return w;
}

/** Space left to write. */
static inline size_t qk_wr_left(const qk_wr *w)
{
    return (size_t)(w->end - w->p);
}

/** Write v as an n-byte (1..8) big-endian unsigned integer (high bits dropped). */
static inline bool qk_wr_uint(qk_wr *w, size_t n, uint64_t v)
{
    if ((size_t)(w->end - w->p) < n) return false;
    for (size_t i = n; i-- > 0;) {
        w->p[i] = (uint8_t)v;
        v >>= 8;
    }
    w->p += n;
    return true;
}

static inline bool qk_wr_u8(qk_wr *w, uint8_t v)
{
    return qk_wr_uint(w, 1, v);
}
static inline bool qk_wr_u16(qk_wr *w, uint16_t v)
{
    return qk_wr_uint(w, 2, v);
}
static inline bool qk_wr_u24(qk_wr *w, uint32_t v)
{
    return qk_wr_uint(w, 3, v);
}
static inline bool qk_wr_u32(qk_wr *w, uint32_t v)
{
    return qk_wr_uint(w, 4, v);
}
static inline bool qk_wr_u64(qk_wr *w, uint64_t v)
{
    return qk_wr_uint(w, 8, v);
}

/** Minimal encoded length of a varint (RFC 9000 §16), 0 when v > QK_VARINT_MAX. */
static inline size_t qk_varint_size(uint64_t v)
{
    if (v < (1ull << 6)) return 1;
    if (v < (1ull << 14)) return 2;
    if (v < (1ull << 30)) return 4;
    if (v <= QK_VARINT_MAX) return 8;
    return 0;
}

/** Write v as a varint of exactly n bytes (1, 2, 4 or 8); false if it does not fit. */
static inline bool qk_wr_varint_n(qk_wr *w, uint64_t v, size_t n)
{
    static const uint8_t prefix[9] = {0, 0x00, 0x40, 0, 0x80, 0, 0, 0, 0xc0};
    if (n != 1 && n != 2 && n != 4 && n != 8) return false;
    if (qk_varint_size(v) == 0 || qk_varint_size(v) > n) return false;
    if ((size_t)(w->end - w->p) < n) return false;
    qk_wr_uint(w, n, v);
    w->p[-(ptrdiff_t)n] |= prefix[n];
    return true;
}

/** Write v as a minimal varint; false if v > QK_VARINT_MAX or no space. */
static inline bool qk_wr_varint(qk_wr *w, uint64_t v)
{
    size_t n = qk_varint_size(v);
    return n != 0 && qk_wr_varint_n(w, v, n);
}

static inline bool qk_wr_bytes(qk_wr *w, const void *src, size_t n)
{
    if ((size_t)(w->end - w->p) < n) return false;
    if (n) memcpy(w->p, src, n);
    w->p += n;
    return true;
}

/** Write n copies of byte b. */
static inline bool qk_wr_fill(qk_wr *w, uint8_t b, size_t n)
{
    if ((size_t)(w->end - w->p) < n) return false;
    if (n) memset(w->p, b, n);
    w->p += n;
    return true;
}

#endif
