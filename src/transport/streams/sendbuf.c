/* SPDX-License-Identifier: MIT */
/* Stream / CRYPTO send buffer (see sendbuf.h). Offsets in the acked and lost
 * sets are "virtual": the FIN is one extra byte at offset write_off. */
#include "transport/streams/sendbuf.h"

#include <quack/common.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define REF_MASK (QK_SENDBUF_MAX_REFS - 1u)
_Static_assert((QK_SENDBUF_MAX_REFS & REF_MASK) == 0, "QK_SENDBUF_MAX_REFS: a power of two");

void qk_sendbuf_init(qk_sendbuf *b, size_t max_buffered_bytes)
{
    memset(b, 0, sizeof *b);
    qk_blockring_init(&b->ring);
    qk_rangeset_init(&b->acked, QK_SENDBUF_MAX_RANGES);
    qk_rangeset_init(&b->lost, QK_SENDBUF_MAX_RANGES);
    b->max_buffered_bytes = max_buffered_bytes;
}

static void refs_free(qk_sendbuf *b)
{
    free(b->refs);
    b->refs = NULL;
    b->ref_head = b->ref_n = 0;
}

static qk_sendbuf_ref *ref_at(const qk_sendbuf *b, uint32_t i)
{
    return &b->refs[(b->ref_head + i) & REF_MASK];
}

/* Drop extents wholly below the acknowledged prefix. */
static void refs_advance(qk_sendbuf *b)
{
    while (b->ref_n && ref_at(b, 0)->off + ref_at(b, 0)->len <= b->acked_off) {
        b->ref_head = (b->ref_head + 1) & REF_MASK;
        b->ref_n--;
    }
}

/* Index of the first extent ending above off (ref_n when none). */
static uint32_t ref_find(const qk_sendbuf *b, uint64_t off)
{
    uint32_t lo = 0, hi = b->ref_n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const qk_sendbuf_ref *r = ref_at(b, mid);
        if (r->off + r->len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void qk_sendbuf_free(qk_sendbuf *b)
{
    refs_free(b);
    qk_blockring_free(&b->ring);
    qk_rangeset_free(&b->acked);
    qk_rangeset_free(&b->lost);
}

/* One past the last virtual offset (the FIN byte included once finished). */
static uint64_t vend(const qk_sendbuf *b)
{
    return b->write_off + (b->fin ? 1 : 0);
}

size_t qk_sendbuf_writable(const qk_sendbuf *b)
{
    if (b->fin || b->discarded) return 0;
    uint64_t held = b->write_off - b->acked_off;
    return held >= b->max_buffered_bytes ? 0 : b->max_buffered_bytes - (size_t)held;
}

/* How many of len bytes a write may take now: buffer room, a long's range
 * and the largest stream offset (RFC 9000 §4.5: 2^62 - 1). */
static size_t write_room(const qk_sendbuf *b, size_t len)
{
    size_t n = qk_sendbuf_writable(b);
    if (n > len) n = len;
    if (n > (size_t)LONG_MAX) n = (size_t)LONG_MAX;
    if (b->write_off + n > QK_STREAM_MAX_OFFSET) n = (size_t)(QK_STREAM_MAX_OFFSET - b->write_off);
    return n;
}

long qk_sendbuf_write(qk_sendbuf *b, const uint8_t *data, size_t len)
{
    if (b->fin || b->discarded) return QK_ERR_STATE;
    size_t n = write_room(b, len);
    if (n == 0) return 0;
    int rc = qk_blockring_write(&b->ring, b->write_off, data, n);
    if (rc) return rc;
    b->write_off += n;
    return (long)n;
}

long qk_sendbuf_write_ref(qk_sendbuf *b, const uint8_t *data, size_t len)
{
    if (b->fin || b->discarded) return QK_ERR_STATE;
    size_t n = write_room(b, len);
    if (n == 0) return 0;
    qk_sendbuf_ref *last = b->ref_n ? ref_at(b, b->ref_n - 1) : NULL;
    if (last && last->off + last->len == b->write_off && last->p + last->len == data) {
        last->len += n; /* the application's memory continues the previous extent */
    } else {
        if (!b->refs && !(b->refs = malloc(QK_SENDBUF_MAX_REFS * sizeof *b->refs)))
            return QK_ERR_NOMEM;
        if (b->ref_n == QK_SENDBUF_MAX_REFS) return qk_sendbuf_write(b, data, n);
        *ref_at(b, b->ref_n++) = (qk_sendbuf_ref){.off = b->write_off, .p = data, .len = n};
    }
    b->write_off += n;
    return (long)n;
}

void qk_sendbuf_finish(qk_sendbuf *b)
{
    b->fin = true;
}

int qk_sendbuf_next_range(const qk_sendbuf *b, size_t max_len, uint64_t max_offset, uint64_t *off,
                          size_t *len, bool *fin)
{
    if (b->discarded) return 0;
    uint64_t s, data_end;
    bool with_fin;
    if (b->lost.n) { /* retransmissions first (RFC 9000 §13.3) */
        s = b->lost.r[0].start;
        uint64_t e = b->lost.r[0].end;
        data_end = e < b->write_off ? e : b->write_off;
        with_fin = b->fin && e == b->write_off + 1;
    } else {
        s = b->sent_off;
        if (s >= vend(b)) return 0;
        data_end = b->write_off < max_offset ? b->write_off : max_offset; /* RFC 9000 §4.1 */
        if (data_end < s) data_end = s;
        with_fin = b->fin && data_end == b->write_off;
    }
    uint64_t dlen = data_end - s;
    if (dlen > max_len) {
        dlen = max_len;
        with_fin = false;
    }
    if (dlen == 0 && !with_fin) return 0;
    *off = s;
    *len = (size_t)dlen;
    *fin = with_fin;
    return 1;
}

/* The contiguous piece at off (off < write_off, max > 0): in a borrowed
 * extent, else in the ring up to the next extent. *p is NULL for ring bytes
 * never stored (cannot happen for offsets below write_off); the return value
 * is then the bytes to the end of that block. */
static size_t piece(const qk_sendbuf *b, uint64_t off, size_t max, const uint8_t **p)
{
    *p = NULL;
    if (max > b->write_off - off) max = (size_t)(b->write_off - off);
    uint32_t i = b->ref_n ? ref_find(b, off) : b->ref_n;
    if (i < b->ref_n) {
        const qk_sendbuf_ref *r = ref_at(b, i);
        if (r->off <= off) {
            size_t in = (size_t)(off - r->off), n = r->len - in;
            *p = r->p + in;
            return n < max ? n : max;
        }
        if (r->off - off < max) max = (size_t)(r->off - off);
    }
    size_t k = qk_blockring_peek(&b->ring, off, max, p);
    if (k) return k;
    size_t to_end = QK_STRBUF_BLOCK_BYTES - (size_t)(off % QK_STRBUF_BLOCK_BYTES);
    return to_end < max ? to_end : max;
}

int qk_sendbuf_copy(const qk_sendbuf *b, uint64_t off, size_t len, uint8_t *dst)
{
    if (len == 0) return 0;
    if (off < b->acked_off || off > b->write_off || len > b->write_off - off)
        return QK_ERR_INVALID_ARG;
    while (len) {
        const uint8_t *p;
        size_t k = piece(b, off, len, &p);
        if (p)
            memcpy(dst, p, k);
        else
            memset(dst, 0, k);
        dst += k;
        off += k;
        len -= k;
    }
    return 0;
}

size_t qk_sendbuf_peek(const qk_sendbuf *b, uint64_t off, size_t max, const uint8_t **p)
{
    *p = NULL;
    if (off < b->acked_off || off >= b->write_off || max == 0) return 0;
    size_t k = piece(b, off, max, p);
    return *p ? k : 0;
}

/* Fragment overflow: forget lost ranges from `from` and resend everything
 * from there as if new. Resending acknowledged bytes is harmless. */
static void go_back(qk_sendbuf *b, uint64_t from)
{
    if (from < b->acked_off) from = b->acked_off;
    if (from < b->sent_off) b->sent_off = from;
    qk_rangeset_remove(&b->lost, b->sent_off, UINT64_MAX); /* never splits */
}

void qk_sendbuf_on_sent(qk_sendbuf *b, uint64_t off, size_t len, bool fin)
{
    uint64_t e = off + len + (fin ? 1 : 0);
    if (qk_rangeset_remove(&b->lost, off, e) < 0) go_back(b, off);
    if (e > b->sent_off) b->sent_off = e;
    if (off + len > b->max_sent_off) b->max_sent_off = off + len;
}

void qk_sendbuf_on_lost(qk_sendbuf *b, uint64_t off, size_t len, bool fin)
{
    if (b->discarded) return;
    uint64_t e = off + len + (fin ? 1 : 0);
    if (e > b->sent_off) e = b->sent_off; /* never sent: nothing to re-queue */
    uint64_t cur = off < b->acked_off ? b->acked_off : off;
    const qk_rangeset *a = &b->acked;
    size_t i = qk_rangeset_lower_bound(a, cur);
    while (cur < e) { /* add only the parts not yet acknowledged */
        if (i < a->n && a->r[i].start <= cur) {
            cur = a->r[i].end;
            i++;
            continue;
        }
        uint64_t gap_end = (i < a->n && a->r[i].start < e) ? a->r[i].start : e;
        if (qk_rangeset_add(&b->lost, cur, gap_end) < 0) {
            go_back(b, cur);
            return;
        }
        cur = gap_end;
    }
}

void qk_sendbuf_on_acked(qk_sendbuf *b, uint64_t off, size_t len, bool fin)
{
    uint64_t e = off + len + (fin ? 1 : 0);
    if (e <= b->acked_off) return;
    uint64_t s = off < b->acked_off ? b->acked_off : off;
    if (qk_rangeset_remove(&b->lost, s, e) < 0) go_back(b, s);
    if (qk_rangeset_add(&b->acked, s, e) < 0) {
        /* Cannot record the ack: treat as lost, it will be resent and acked again. */
        qk_sendbuf_on_lost(b, s, (size_t)(e - s), false);
        return;
    }
    if (b->acked.n && b->acked.r[0].start <= b->acked_off) {
        b->acked_off = b->acked.r[0].end;
        qk_rangeset_remove_below(&b->acked, b->acked_off);
        qk_rangeset_remove_below(&b->lost, b->acked_off);
        if (b->sent_off < b->acked_off) b->sent_off = b->acked_off;
        qk_blockring_advance(&b->ring, b->acked_off < b->write_off ? b->acked_off : b->write_off);
        /* Everything written is acknowledged: an idle stream (HTTP/3 control,
         * crypto after the handshake) keeps no block. */
        if (b->acked_off >= b->write_off) qk_blockring_release(&b->ring);
        refs_advance(b);
    }
}

void qk_sendbuf_discard(qk_sendbuf *b)
{
    b->discarded = true;
    refs_free(b);
    qk_blockring_free(&b->ring);
    qk_rangeset_free(&b->acked);
    qk_rangeset_free(&b->lost);
}

bool qk_sendbuf_has_pending(const qk_sendbuf *b)
{
    return !b->discarded && (b->lost.n || b->sent_off < vend(b));
}

bool qk_sendbuf_all_acked(const qk_sendbuf *b)
{
    return b->fin && b->acked_off == b->write_off + 1;
}

bool qk_sendbuf_all_sent(const qk_sendbuf *b)
{
    return b->fin && b->sent_off == b->write_off + 1 && b->lost.n == 0;
}

size_t qk_sendbuf_mem_bytes(const qk_sendbuf *b)
{
    return qk_blockring_mem_bytes(&b->ring);
}
