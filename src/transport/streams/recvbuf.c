/* SPDX-License-Identifier: MIT */
/* Stream / CRYPTO reassembly buffer (see recvbuf.h). */
#include "transport/streams/recvbuf.h"

#include <quack/common.h>
#include <string.h>

void qk_recvbuf_init(qk_recvbuf *b, uint64_t limit, size_t max_ranges)
{
    memset(b, 0, sizeof *b);
    qk_blockring_init(&b->ring);
    qk_rangeset_init(&b->recvd, max_ranges ? max_ranges : QK_RECVBUF_DEFAULT_MAX_RANGES);
    b->limit = limit > QK_STREAM_MAX_OFFSET ? QK_STREAM_MAX_OFFSET : limit;
    b->limit_err = QK_ERR_FLOW_CONTROL;
}

void qk_recvbuf_raise_max_ranges(qk_recvbuf *b, size_t max_ranges)
{
    if (max_ranges > b->recvd.max_ranges) b->recvd.max_ranges = max_ranges;
}

void qk_recvbuf_init_crypto(qk_recvbuf *b, uint64_t window_bytes)
{
    qk_recvbuf_init(b, window_bytes, 0);
    b->window = window_bytes ? window_bytes : 1;
    b->limit_err = QK_ERR_CRYPTO_BUFFER;
}

void qk_recvbuf_free(qk_recvbuf *b)
{
    qk_blockring_free(&b->ring);
    qk_rangeset_free(&b->recvd);
}

int qk_recvbuf_set_limit(qk_recvbuf *b, uint64_t limit)
{
    if (limit < b->max_off) return QK_ERR_INVALID_ARG;
    b->limit = limit > QK_STREAM_MAX_OFFSET ? QK_STREAM_MAX_OFFSET : limit;
    return 0;
}

static uint64_t eff_limit(const qk_recvbuf *b)
{
    return b->window ? b->read_off + b->window : b->limit;
}

/* RFC 9000 §4.5: the final size, once known, cannot change, and no data may
 * lie beyond it; a FIN cannot be below data already received. */
static int check_final(const qk_recvbuf *b, uint64_t end, bool fin)
{
    if (b->fin_known) {
        if (end > b->final_size) return QK_ERR_FINAL_SIZE;
        if (fin && end != b->final_size) return QK_ERR_FINAL_SIZE;
    } else if (fin && end < b->max_off) {
        return QK_ERR_FINAL_SIZE;
    }
    return 0;
}

/* Copy the parts of [start, end) not yet received into the ring. */
static int write_gaps(qk_recvbuf *b, uint64_t start, uint64_t end, const uint8_t *data,
                      uint64_t data_off)
{
    const qk_rangeset *s = &b->recvd;
    size_t i = qk_rangeset_lower_bound(s, start);
    uint64_t cur = start;
    while (cur < end) {
        if (i < s->n && s->r[i].start <= cur) {
            cur = s->r[i].end;
            i++;
            continue;
        }
        uint64_t gap_end = (i < s->n && s->r[i].start < end) ? s->r[i].start : end;
        int rc =
            qk_blockring_write(&b->ring, cur, data + (cur - data_off), (size_t)(gap_end - cur));
        if (rc) return rc;
        cur = gap_end;
    }
    return 0;
}

int qk_recvbuf_insert(qk_recvbuf *b, uint64_t off, const uint8_t *data, size_t len, bool fin)
{
    /* RFC 9000 §19.8: offsets above 2^62-1 are a flow-control error. */
    if (off > QK_STREAM_MAX_OFFSET || len > QK_STREAM_MAX_OFFSET - off) return b->limit_err;
    uint64_t end = off + len;
    if (fin && b->window) return QK_ERR_PROTOCOL_VIOLATION; /* CRYPTO has no FIN */
    int rc = check_final(b, end, fin);
    if (rc) return rc;
    if (end > eff_limit(b)) return b->limit_err; /* RFC 9000 §4.1, §7.5 */
    uint64_t start = off < b->read_off ? b->read_off : off;
    qk_rangeset *got = &b->recvd;
    if (start < end && got->n && got->r[got->n - 1].end == start) {
        /* In order (the common case): the bytes extend the highest range;
         * nothing to search for gaps, qk_rangeset_add takes its O(1) path. */
        rc = qk_blockring_write(&b->ring, start, data + (start - off), (size_t)(end - start));
        if (rc) return rc;
        rc = qk_rangeset_add(got, start, end); /* O(1): extends the last range */
        if (rc < 0) return rc;
    } else if (start < end) {
        if (!qk_rangeset_contains_range(&b->recvd, start, end)) {
            rc = write_gaps(b, start, end, data, off);
            if (rc) return rc;
            rc = qk_rangeset_add(&b->recvd, start, end);
            if (rc < 0) return rc;
        }
    }
    if (end > b->max_off) b->max_off = end;
    if (fin) {
        b->fin_known = true;
        b->final_size = end;
    }
    return 0;
}

int qk_recvbuf_reset(qk_recvbuf *b, uint64_t final_size)
{
    if (b->fin_known && final_size != b->final_size) return QK_ERR_FINAL_SIZE; /* §4.5 */
    if (final_size < b->max_off) return QK_ERR_FINAL_SIZE;
    if (final_size > eff_limit(b)) return b->limit_err; /* §4.5: counts against credit */
    b->fin_known = true;
    b->final_size = final_size;
    b->max_off = final_size;
    qk_blockring_free(&b->ring);
    qk_rangeset_free(&b->recvd);
    return 0;
}

uint64_t qk_recvbuf_readable(const qk_recvbuf *b)
{
    const qk_rangeset *s = &b->recvd;
    if (s->n == 0 || s->r[0].start > b->read_off) return 0;
    return s->r[0].end - b->read_off;
}

size_t qk_recvbuf_peek(const qk_recvbuf *b, const uint8_t **p)
{
    uint64_t r = qk_recvbuf_readable(b);
    *p = NULL;
    if (!r) return 0;
    return qk_blockring_peek(&b->ring, b->read_off, r > SIZE_MAX ? SIZE_MAX : (size_t)r, p);
}

int qk_recvbuf_consume(qk_recvbuf *b, size_t n)
{
    if (n > qk_recvbuf_readable(b)) return QK_ERR_INVALID_ARG;
    if (n == 0) return 0;
    b->read_off += n;
    qk_rangeset_remove_below(&b->recvd, b->read_off);
    qk_blockring_advance(&b->ring, b->read_off);
    if (b->recvd.n == 0) qk_blockring_release(&b->ring); /* all read: keep no block */
    return 0;
}

size_t qk_recvbuf_read(qk_recvbuf *b, uint8_t *dst, size_t cap)
{
    uint64_t r = qk_recvbuf_readable(b);
    size_t n = r < cap ? (size_t)r : cap;
    if (!n) return 0;
    qk_blockring_read(&b->ring, b->read_off, dst, n);
    qk_recvbuf_consume(b, n);
    return n;
}

bool qk_recvbuf_all_received(const qk_recvbuf *b)
{
    if (!b->fin_known) return false;
    if (b->read_off >= b->final_size) return true;
    const qk_rangeset *s = &b->recvd;
    return s->n && s->r[0].start <= b->read_off && s->r[0].end >= b->final_size;
}

bool qk_recvbuf_fin_read(const qk_recvbuf *b)
{
    return b->fin_known && b->read_off >= b->final_size;
}

size_t qk_recvbuf_mem_bytes(const qk_recvbuf *b)
{
    return qk_blockring_mem_bytes(&b->ring);
}
