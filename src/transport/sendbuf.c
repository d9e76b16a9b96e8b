/* Stream / CRYPTO send buffer (see sendbuf.h). Offsets in the acked and lost
 * sets are "virtual": the FIN is one extra byte at offset write_off. */
#include "transport/sendbuf.h"

#include <quack/common.h>
#include <limits.h>
#include <string.h>

void qk_sendbuf_init(qk_sendbuf *b, size_t max_buffered_bytes)
{
    memset(b, 0, sizeof *b);
    qk_blockring_init(&b->ring);
    qk_rangeset_init(&b->acked, QK_SENDBUF_MAX_RANGES);
    qk_rangeset_init(&b->lost, QK_SENDBUF_MAX_RANGES);
    b->max_buffered_bytes = max_buffered_bytes;
}

void qk_sendbuf_free(qk_sendbuf *b)
{
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

long qk_sendbuf_write(qk_sendbuf *b, const uint8_t *data, size_t len)
{
    if (b->fin || b->discarded) return QK_ERR_STATE;
    size_t n = qk_sendbuf_writable(b);
    if (n > len) n = len;
    if (n > (size_t)LONG_MAX) n = (size_t)LONG_MAX;
    if (b->write_off + n > QK_STREAM_MAX_OFFSET) n = (size_t)(QK_STREAM_MAX_OFFSET - b->write_off);
    if (n == 0) return 0;
    int rc = qk_blockring_write(&b->ring, b->write_off, data, n);
    if (rc) return rc;
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

int qk_sendbuf_copy(const qk_sendbuf *b, uint64_t off, size_t len, uint8_t *dst)
{
    if (len == 0) return 0;
    if (off < b->acked_off || off > b->write_off || len > b->write_off - off)
        return QK_ERR_INVALID_ARG;
    qk_blockring_read(&b->ring, off, dst, len);
    return 0;
}

size_t qk_sendbuf_peek(const qk_sendbuf *b, uint64_t off, size_t max, const uint8_t **p)
{
    *p = NULL;
    if (off < b->acked_off || off >= b->write_off) return 0;
    if (max > b->write_off - off) max = (size_t)(b->write_off - off);
    return qk_blockring_peek(&b->ring, off, max, p);
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
    }
}

void qk_sendbuf_discard(qk_sendbuf *b)
{
    b->discarded = true;
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
