/* SPDX-License-Identifier: MIT */
/* QUIC frames: decode, encode, classification.
 * RFC 9000 §12.4 and §19, RFC 9221 §4, draft-ietf-quic-ack-frequency-12 §4-5. */
#include "wire/frame.h"
#include "base/cursor.h"
#include <quack/common.h>
#include <string.h>

#define RD_V(x)                                                                                    \
    do {                                                                                           \
        if (!qk_rd_varint(r, &(x))) return QK_ERR_FRAME_ENCODING;                                  \
    } while (0)

/* Reads a varint length then that many bytes. */
static int rd_blob(qk_rd *r, const uint8_t **p, size_t *n)
{
    uint64_t len;
    RD_V(len);
    if (len > qk_rd_left(r)) return QK_ERR_FRAME_ENCODING;
    qk_rd_bytes(r, (size_t)len, p);
    *n = (size_t)len;
    return 0;
}

/* Walks the ACK ranges once, checking that no packet number goes below 0
 * (RFC 9000 §19.3.1). O(bytes): each pair needs at least 2 bytes. */
static int dec_ack(qk_rd *r, qk_frame_ack *a, bool ecn)
{
    RD_V(a->largest);
    RD_V(a->ack_delay);
    RD_V(a->range_count);
    RD_V(a->first_range);
    if (a->first_range > a->largest) return QK_ERR_FRAME_ENCODING;
    if (a->range_count > qk_rd_left(r) / 2) return QK_ERR_FRAME_ENCODING;
    uint64_t smallest = a->largest - a->first_range;
    a->ranges = r->p;
    for (uint64_t i = 0; i < a->range_count; i++) {
        uint64_t gap, len;
        RD_V(gap);
        RD_V(len);
        /* RFC 9000 §19.3.1: largest = previous smallest - gap - 2 */
        if (smallest < gap + 2) return QK_ERR_FRAME_ENCODING;
        uint64_t largest = smallest - gap - 2;
        if (largest < len) return QK_ERR_FRAME_ENCODING;
        smallest = largest - len;
    }
    a->ranges_len = (size_t)(r->p - a->ranges);
    a->has_ecn = ecn;
    if (ecn) { /* RFC 9000 §19.3.2 */
        RD_V(a->ect0);
        RD_V(a->ect1);
        RD_V(a->ce);
    }
    return 0;
}

static int dec_stream(qk_rd *r, uint64_t type, qk_frame_stream *s)
{
    RD_V(s->stream_id);
    if (type & QK_STREAM_BIT_OFF) RD_V(s->offset);
    s->fin = (type & QK_STREAM_BIT_FIN) != 0;
    s->has_length = (type & QK_STREAM_BIT_LEN) != 0;
    if (s->has_length) {
        int rc = rd_blob(r, &s->data, &s->len);
        if (rc < 0) return rc;
    } else {
        s->len = qk_rd_left(r);
        qk_rd_bytes(r, s->len, &s->data);
    }
    /* RFC 9000 §19.8: offset + length must not exceed 2^62 - 1. */
    if (s->len > QK_VARINT_MAX - s->offset) return QK_ERR_FRAME_ENCODING;
    return 0;
}

static int dec_new_cid(qk_rd *r, qk_frame_new_cid *c)
{
    uint8_t n;
    RD_V(c->seq);
    RD_V(c->retire_prior_to);
    if (!qk_rd_u8(r, &n)) return QK_ERR_FRAME_ENCODING;
    /* RFC 9000 §19.15: length 1..20, Retire Prior To <= Sequence Number */
    if (n < 1 || n > QK_MAX_CID_LEN) return QK_ERR_FRAME_ENCODING;
    if (c->retire_prior_to > c->seq) return QK_ERR_FRAME_ENCODING;
    c->cid_len = n;
    if (!qk_rd_bytes(r, n, &c->cid)) return QK_ERR_FRAME_ENCODING;
    if (!qk_rd_bytes(r, QK_RESET_TOKEN_LEN, &c->reset_token)) return QK_ERR_FRAME_ENCODING;
    return 0;
}

static int dec_body(qk_rd *r, const uint8_t *buf, qk_frame *f)
{
    uint64_t t = f->type;
    int rc;
    if (qk_frame_is_stream(t)) return dec_stream(r, t, &f->u.stream);
    switch (t) {
    case QK_FT_PADDING: {
        size_t n = 1;
        while (r->p < r->end && *r->p == 0) r->p++, n++;
        f->u.padding.len = n;
        return 0;
    }
    case QK_FT_PING:
    case QK_FT_HANDSHAKE_DONE:
    case QK_FT_IMMEDIATE_ACK: return 0;
    case QK_FT_ACK:
    case QK_FT_ACK_ECN: return dec_ack(r, &f->u.ack, t == QK_FT_ACK_ECN);
    case QK_FT_RESET_STREAM:
        RD_V(f->u.reset_stream.stream_id);
        RD_V(f->u.reset_stream.app_error);
        RD_V(f->u.reset_stream.final_size);
        return 0;
    case QK_FT_STOP_SENDING:
        RD_V(f->u.stop_sending.stream_id);
        RD_V(f->u.stop_sending.app_error);
        return 0;
    case QK_FT_CRYPTO:
        RD_V(f->u.crypto.offset);
        if ((rc = rd_blob(r, &f->u.crypto.data, &f->u.crypto.len)) < 0) return rc;
        /* RFC 9000 §19.6: offset + length must not exceed 2^62 - 1. */
        if (f->u.crypto.len > QK_VARINT_MAX - f->u.crypto.offset) return QK_ERR_FRAME_ENCODING;
        return 0;
    case QK_FT_NEW_TOKEN:
        if ((rc = rd_blob(r, &f->u.new_token.token, &f->u.new_token.len)) < 0) return rc;
        /* RFC 9000 §19.7: an empty token is a FRAME_ENCODING_ERROR. */
        return f->u.new_token.len == 0 ? QK_ERR_FRAME_ENCODING : 0;
    case QK_FT_MAX_DATA:
    case QK_FT_DATA_BLOCKED: RD_V(f->u.max.max); return 0;
    case QK_FT_MAX_STREAMS_BIDI:
    case QK_FT_MAX_STREAMS_UNI:
    case QK_FT_STREAMS_BLOCKED_BIDI:
    case QK_FT_STREAMS_BLOCKED_UNI:
        RD_V(f->u.max.max);
        /* RFC 9000 §19.11, §19.14: at most 2^60 */
        return f->u.max.max > QK_MAX_STREAMS_LIMIT ? QK_ERR_FRAME_ENCODING : 0;
    case QK_FT_MAX_STREAM_DATA:
    case QK_FT_STREAM_DATA_BLOCKED:
        RD_V(f->u.stream_max.stream_id);
        RD_V(f->u.stream_max.max);
        return 0;
    case QK_FT_NEW_CONNECTION_ID: return dec_new_cid(r, &f->u.new_cid);
    case QK_FT_RETIRE_CONNECTION_ID: RD_V(f->u.retire_cid.seq); return 0;
    case QK_FT_PATH_CHALLENGE:
    case QK_FT_PATH_RESPONSE: return qk_rd_copy(r, f->u.path.data, 8) ? 0 : QK_ERR_FRAME_ENCODING;
    case QK_FT_CONNECTION_CLOSE:
    case QK_FT_CONNECTION_CLOSE_APP:
        RD_V(f->u.close.error_code);
        if (t == QK_FT_CONNECTION_CLOSE) RD_V(f->u.close.frame_type);
        return rd_blob(r, &f->u.close.reason, &f->u.close.reason_len);
    case QK_FT_DATAGRAM:
        f->u.datagram.len = qk_rd_left(r);
        qk_rd_bytes(r, f->u.datagram.len, &f->u.datagram.data);
        return 0;
    case QK_FT_DATAGRAM_LEN:
        f->u.datagram.has_length = true;
        return rd_blob(r, &f->u.datagram.data, &f->u.datagram.len);
    case QK_FT_ACK_FREQUENCY:
        RD_V(f->u.ack_frequency.seq);
        RD_V(f->u.ack_frequency.ack_eliciting_threshold);
        RD_V(f->u.ack_frequency.request_max_ack_delay_us);
        RD_V(f->u.ack_frequency.reordering_threshold);
        return 0;
    default: (void)buf; return QK_ERR_FRAME_ENCODING; /* RFC 9000 §12.4: unknown type */
    }
}

int qk_frame_decode(const uint8_t *buf, size_t len, qk_frame *f)
{
    if (len == 0) return QK_ERR_INVALID_ARG;
    memset(f, 0, sizeof(*f));
    qk_rd rd = qk_rd_make(buf, len), *r = &rd;
    uint64_t type;
    RD_V(type);
    /* RFC 9000 §12.4: a non-minimal frame type MAY be a PROTOCOL_VIOLATION. */
    if ((size_t)(rd.p - buf) != qk_varint_size(type)) return QK_ERR_PROTOCOL_VIOLATION;
    f->type = type;
    int rc = dec_body(r, buf, f);
    if (rc < 0) return rc;
    return (int)(rd.p - buf);
}

/* ---- encoding ---- */

typedef struct enc {
    qk_wr w;
    int err;
} enc;

static void put_v(enc *e, uint64_t v)
{
    if (e->err) return;
    if (v > QK_VARINT_MAX)
        e->err = QK_ERR_INVALID_ARG;
    else if (!qk_wr_varint(&e->w, v))
        e->err = QK_ERR_BUFFER_TOO_SMALL;
}

static void put_b(enc *e, const void *p, size_t n)
{
    if (!e->err && !qk_wr_bytes(&e->w, p, n)) e->err = QK_ERR_BUFFER_TOO_SMALL;
}

static void put_blob(enc *e, const void *p, size_t n)
{
    put_v(e, n);
    put_b(e, p, n);
}

static int enc_stream(enc *e, uint64_t type, const qk_frame_stream *s)
{
    if (s->offset > QK_VARINT_MAX || s->len > QK_VARINT_MAX - s->offset) return QK_ERR_INVALID_ARG;
    uint64_t t = QK_FT_STREAM | (s->offset || (type & QK_STREAM_BIT_OFF) ? QK_STREAM_BIT_OFF : 0) |
                 (s->has_length ? QK_STREAM_BIT_LEN : 0) | (s->fin ? QK_STREAM_BIT_FIN : 0);
    put_v(e, t);
    put_v(e, s->stream_id);
    if (t & QK_STREAM_BIT_OFF) put_v(e, s->offset);
    if (s->has_length) put_v(e, s->len);
    put_b(e, s->data, s->len);
    return 0;
}

static int enc_ack_raw(enc *e, const qk_frame_ack *a)
{
    if (a->first_range > a->largest) return QK_ERR_INVALID_ARG;
    put_v(e, a->has_ecn ? QK_FT_ACK_ECN : QK_FT_ACK);
    put_v(e, a->largest);
    put_v(e, a->ack_delay);
    put_v(e, a->range_count);
    put_v(e, a->first_range);
    put_b(e, a->ranges, a->ranges_len);
    if (a->has_ecn) {
        put_v(e, a->ect0);
        put_v(e, a->ect1);
        put_v(e, a->ce);
    }
    return 0;
}

/* RFC 9000 §19.15: NEW_CONNECTION_ID (the type is already written). */
static int enc_new_cid(enc *e, const qk_frame_new_cid *c)
{
    if (c->cid_len < 1 || c->cid_len > QK_MAX_CID_LEN || c->retire_prior_to > c->seq)
        return QK_ERR_INVALID_ARG;
    put_v(e, c->seq);
    put_v(e, c->retire_prior_to);
    uint8_t n = (uint8_t)c->cid_len;
    put_b(e, &n, 1);
    put_b(e, c->cid, c->cid_len);
    put_b(e, c->reset_token, QK_RESET_TOKEN_LEN);
    return 0;
}

static int enc_body(enc *e, const qk_frame *f)
{
    uint64_t t = f->type;
    if (qk_frame_is_stream(t)) return enc_stream(e, t, &f->u.stream);
    if (t == QK_FT_ACK || t == QK_FT_ACK_ECN) return enc_ack_raw(e, &f->u.ack);
    if (t == QK_FT_DATAGRAM || t == QK_FT_DATAGRAM_LEN)
        t = f->u.datagram.has_length ? QK_FT_DATAGRAM_LEN : QK_FT_DATAGRAM;
    if (t == QK_FT_PADDING) {
        size_t n = f->u.padding.len ? f->u.padding.len : 1;
        if (!qk_wr_fill(&e->w, 0, n)) return QK_ERR_BUFFER_TOO_SMALL;
        return 0;
    }
    put_v(e, t);
    switch (t) {
    case QK_FT_PING:
    case QK_FT_HANDSHAKE_DONE:
    case QK_FT_IMMEDIATE_ACK: break;
    case QK_FT_RESET_STREAM:
        put_v(e, f->u.reset_stream.stream_id);
        put_v(e, f->u.reset_stream.app_error);
        put_v(e, f->u.reset_stream.final_size);
        break;
    case QK_FT_STOP_SENDING:
        put_v(e, f->u.stop_sending.stream_id);
        put_v(e, f->u.stop_sending.app_error);
        break;
    case QK_FT_CRYPTO:
        if (f->u.crypto.offset > QK_VARINT_MAX ||
            f->u.crypto.len > QK_VARINT_MAX - f->u.crypto.offset)
            return QK_ERR_INVALID_ARG;
        put_v(e, f->u.crypto.offset);
        put_blob(e, f->u.crypto.data, f->u.crypto.len);
        break;
    case QK_FT_NEW_TOKEN:
        if (f->u.new_token.len == 0) return QK_ERR_INVALID_ARG;
        put_blob(e, f->u.new_token.token, f->u.new_token.len);
        break;
    case QK_FT_MAX_STREAMS_BIDI:
    case QK_FT_MAX_STREAMS_UNI:
    case QK_FT_STREAMS_BLOCKED_BIDI:
    case QK_FT_STREAMS_BLOCKED_UNI:
        if (f->u.max.max > QK_MAX_STREAMS_LIMIT) return QK_ERR_INVALID_ARG;
        /* fall through */
    case QK_FT_MAX_DATA:
    case QK_FT_DATA_BLOCKED: put_v(e, f->u.max.max); break;
    case QK_FT_MAX_STREAM_DATA:
    case QK_FT_STREAM_DATA_BLOCKED:
        put_v(e, f->u.stream_max.stream_id);
        put_v(e, f->u.stream_max.max);
        break;
    case QK_FT_NEW_CONNECTION_ID: return enc_new_cid(e, &f->u.new_cid);
    case QK_FT_RETIRE_CONNECTION_ID: put_v(e, f->u.retire_cid.seq); break;
    case QK_FT_PATH_CHALLENGE:
    case QK_FT_PATH_RESPONSE: put_b(e, f->u.path.data, 8); break;
    case QK_FT_CONNECTION_CLOSE:
    case QK_FT_CONNECTION_CLOSE_APP:
        put_v(e, f->u.close.error_code);
        if (t == QK_FT_CONNECTION_CLOSE) put_v(e, f->u.close.frame_type);
        put_blob(e, f->u.close.reason, f->u.close.reason_len);
        break;
    case QK_FT_DATAGRAM: put_b(e, f->u.datagram.data, f->u.datagram.len); break;
    case QK_FT_DATAGRAM_LEN: put_blob(e, f->u.datagram.data, f->u.datagram.len); break;
    case QK_FT_ACK_FREQUENCY:
        put_v(e, f->u.ack_frequency.seq);
        put_v(e, f->u.ack_frequency.ack_eliciting_threshold);
        put_v(e, f->u.ack_frequency.request_max_ack_delay_us);
        put_v(e, f->u.ack_frequency.reordering_threshold);
        break;
    default: return QK_ERR_INVALID_ARG;
    }
    return 0;
}

int qk_frame_encode(const qk_frame *f, uint8_t *out, size_t cap)
{
    enc e = {qk_wr_make(out, cap), 0};
    int rc = enc_body(&e, f);
    if (rc < 0) return rc;
    if (e.err) return e.err;
    return (int)(e.w.p - out);
}

/* ---- ACK ---- */

void qk_ack_iter_init(qk_ack_iter *it, const qk_frame_ack *ack)
{
    it->ack = ack;
    it->p = ack->ranges;
    it->left = ack->range_count + 1;
    it->smallest = 0;
}

bool qk_ack_iter_next(qk_ack_iter *it, uint64_t *smallest, uint64_t *largest)
{
    if (it->left == 0) return false;
    if (it->p == it->ack->ranges && it->left == it->ack->range_count + 1) {
        *largest = it->ack->largest;
        *smallest = it->ack->largest - it->ack->first_range;
    } else {
        qk_rd r = {it->p, it->ack->ranges + it->ack->ranges_len};
        uint64_t gap, len;
        if (!qk_rd_varint(&r, &gap) || !qk_rd_varint(&r, &len)) return false;
        if (it->smallest < gap + 2 || it->smallest - gap - 2 < len) return false;
        it->p = r.p;
        *largest = it->smallest - gap - 2; /* RFC 9000 §19.3.1 */
        *smallest = *largest - len;
    }
    it->smallest = *smallest;
    it->left--;
    return true;
}

/* Bytes of the (gap, length) pair for ranges[i] below ranges[i+1]; 0 if invalid
 * (then *gap and *len are 0: both are written on every path). */
static size_t ack_pair(const qk_range *ranges, size_t i, uint64_t *gap, uint64_t *len)
{
    const qk_range *lo = &ranges[i], *hi = &ranges[i + 1];
    *gap = *len = 0;
    if (lo->start >= lo->end || lo->end >= hi->start) return 0;
    *gap = hi->start - lo->end - 1; /* previous smallest - this largest - 2 */
    *len = lo->end - 1 - lo->start;
    return qk_varint_size(*gap) + qk_varint_size(*len);
}

int qk_frame_encode_ack(uint8_t *out, size_t cap, const qk_range *ranges, size_t n,
                        uint64_t ack_delay, const uint64_t *ecn, size_t *n_written)
{
    if (n == 0) return QK_ERR_INVALID_ARG;
    const qk_range *top = &ranges[n - 1];
    if (top->start >= top->end || top->end - 1 > QK_VARINT_MAX || ack_delay > QK_VARINT_MAX)
        return QK_ERR_INVALID_ARG;
    uint64_t largest = top->end - 1, first = largest - top->start;
    size_t fixed = 1 + qk_varint_size(largest) + qk_varint_size(ack_delay) + qk_varint_size(first);
    if (ecn) {
        for (int i = 0; i < 3; i++) {
            if (ecn[i] > QK_VARINT_MAX) return QK_ERR_INVALID_ARG;
            fixed += qk_varint_size(ecn[i]);
        }
    }
    if (fixed + 1 > cap) return QK_ERR_BUFFER_TOO_SMALL;
    /* Grow k (extra ranges) while the frame still fits: the predicate is monotone. */
    size_t k = 0, pairs = 0;
    while (k + 1 < n) {
        uint64_t gap, len;
        size_t sz = ack_pair(ranges, n - 2 - k, &gap, &len);
        if (sz == 0) return QK_ERR_INVALID_ARG;
        if (fixed + qk_varint_size(k + 1) + pairs + sz > cap) break;
        pairs += sz;
        k++;
    }
    enc e = {qk_wr_make(out, cap), 0};
    put_v(&e, ecn ? QK_FT_ACK_ECN : QK_FT_ACK);
    put_v(&e, largest);
    put_v(&e, ack_delay);
    put_v(&e, k);
    put_v(&e, first);
    for (size_t j = 0; j < k; j++) {
        uint64_t gap, len;
        (void)ack_pair(ranges, n - 2 - j, &gap, &len); /* validated by the sizing loop */
        put_v(&e, gap);
        put_v(&e, len);
    }
    if (ecn) {
        put_v(&e, ecn[0]);
        put_v(&e, ecn[1]);
        put_v(&e, ecn[2]);
    }
    if (e.err) return e.err;
    if (n_written) *n_written = k + 1;
    return (int)(e.w.p - out);
}

/* ---- sizing ---- */

size_t qk_frame_stream_header_len(uint64_t stream_id, uint64_t offset, size_t data_len,
                                  bool with_length)
{
    return 1 + qk_varint_size(stream_id) + (offset ? qk_varint_size(offset) : 0) +
           (with_length ? qk_varint_size(data_len) : 0);
}

/* Largest d with d + varint_len(d) <= avail (0 if none). */
static size_t fit_with_length(size_t avail)
{
    static const size_t widths[] = {1, 2, 4, 8};
    for (size_t i = 0; i < 4; i++) {
        size_t n = widths[i];
        if (avail <= n) return 0;
        if (qk_varint_size(avail - n) <= n) return avail - n;
    }
    return 0;
}

size_t qk_frame_stream_max_data(uint64_t stream_id, uint64_t offset, size_t space, bool with_length)
{
    size_t base = qk_frame_stream_header_len(stream_id, offset, 0, false);
    if (space <= base || offset > QK_VARINT_MAX) return 0;
    size_t avail = space - base;
    size_t d = with_length ? fit_with_length(avail) : avail;
    if ((uint64_t)d > QK_VARINT_MAX - offset) d = (size_t)(QK_VARINT_MAX - offset);
    return d;
}

size_t qk_frame_crypto_header_len(uint64_t offset, size_t data_len)
{
    return 1 + qk_varint_size(offset) + qk_varint_size(data_len);
}

size_t qk_frame_crypto_max_data(uint64_t offset, size_t space)
{
    size_t base = 1 + qk_varint_size(offset);
    if (space <= base) return 0;
    return fit_with_length(space - base);
}

/* ---- classification ---- */

bool qk_frame_allowed(uint64_t t, qk_pkt_type pkt)
{
    bool ih = pkt == QK_PKT_INITIAL || pkt == QK_PKT_HANDSHAKE;
    bool z = pkt == QK_PKT_0RTT, one = pkt == QK_PKT_1RTT;
    if (!ih && !z && !one) return false;
    if (qk_frame_is_stream(t)) return z || one;
    switch (t) {
    /* RFC 9000 §12.4 Table 3: IH01 */
    case QK_FT_PADDING:
    case QK_FT_PING:
    case QK_FT_CONNECTION_CLOSE: return true;
    /* IH_1 */
    case QK_FT_ACK:
    case QK_FT_ACK_ECN:
    case QK_FT_CRYPTO: return !z;
    /* ___1 */
    case QK_FT_NEW_TOKEN:
    case QK_FT_PATH_RESPONSE:
    case QK_FT_HANDSHAKE_DONE: return one;
    /* ack-frequency-12: IMMEDIATE_ACK not in 0-RTT; we restrict ACK_FREQUENCY too. */
    case QK_FT_IMMEDIATE_ACK:
    case QK_FT_ACK_FREQUENCY: return one;
    /* __01 (RETIRE_CONNECTION_ID per Table 3; §12.5 says a client cannot send it in 0-RTT) */
    case QK_FT_RESET_STREAM:
    case QK_FT_STOP_SENDING:
    case QK_FT_MAX_DATA:
    case QK_FT_MAX_STREAM_DATA:
    case QK_FT_MAX_STREAMS_BIDI:
    case QK_FT_MAX_STREAMS_UNI:
    case QK_FT_DATA_BLOCKED:
    case QK_FT_STREAM_DATA_BLOCKED:
    case QK_FT_STREAMS_BLOCKED_BIDI:
    case QK_FT_STREAMS_BLOCKED_UNI:
    case QK_FT_NEW_CONNECTION_ID:
    case QK_FT_RETIRE_CONNECTION_ID:
    case QK_FT_PATH_CHALLENGE:
    case QK_FT_CONNECTION_CLOSE_APP: /* RFC 9000 §12.5 */
    case QK_FT_DATAGRAM:             /* RFC 9221 §4 */
    case QK_FT_DATAGRAM_LEN: return z || one;
    default: return false;
    }
}

bool qk_frame_is_ack_eliciting(uint64_t t)
{
    /* RFC 9000 §13.2 / RFC 9002 §2 */
    return !(t == QK_FT_PADDING || t == QK_FT_ACK || t == QK_FT_ACK_ECN ||
             t == QK_FT_CONNECTION_CLOSE || t == QK_FT_CONNECTION_CLOSE_APP);
}

bool qk_frame_is_probing(uint64_t t)
{
    /* RFC 9000 §9.1 */
    return t == QK_FT_PATH_CHALLENGE || t == QK_FT_PATH_RESPONSE || t == QK_FT_NEW_CONNECTION_ID ||
           t == QK_FT_PADDING;
}

/* ---- comparison ---- */

static bool same_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

static bool ack_equal(const qk_frame_ack *a, const qk_frame_ack *b)
{
    if (a->largest != b->largest || a->ack_delay != b->ack_delay ||
        a->first_range != b->first_range || a->range_count != b->range_count ||
        a->has_ecn != b->has_ecn || !same_bytes(a->ranges, a->ranges_len, b->ranges, b->ranges_len))
        return false;
    return !a->has_ecn || (a->ect0 == b->ect0 && a->ect1 == b->ect1 && a->ce == b->ce);
}

bool qk_frame_equal(const qk_frame *a, const qk_frame *b)
{
    if (a->type != b->type) return false;
    uint64_t t = a->type;
    const qk_frame_stream *sa = &a->u.stream, *sb = &b->u.stream;
    if (qk_frame_is_stream(t))
        return sa->stream_id == sb->stream_id && sa->offset == sb->offset && sa->fin == sb->fin &&
               sa->has_length == sb->has_length && same_bytes(sa->data, sa->len, sb->data, sb->len);
    switch (t) {
    case QK_FT_PADDING: return a->u.padding.len == b->u.padding.len;
    case QK_FT_ACK:
    case QK_FT_ACK_ECN: return ack_equal(&a->u.ack, &b->u.ack);
    case QK_FT_RESET_STREAM:
        return a->u.reset_stream.stream_id == b->u.reset_stream.stream_id &&
               a->u.reset_stream.app_error == b->u.reset_stream.app_error &&
               a->u.reset_stream.final_size == b->u.reset_stream.final_size;
    case QK_FT_STOP_SENDING:
        return a->u.stop_sending.stream_id == b->u.stop_sending.stream_id &&
               a->u.stop_sending.app_error == b->u.stop_sending.app_error;
    case QK_FT_CRYPTO:
        return a->u.crypto.offset == b->u.crypto.offset &&
               same_bytes(a->u.crypto.data, a->u.crypto.len, b->u.crypto.data, b->u.crypto.len);
    case QK_FT_NEW_TOKEN:
        return same_bytes(a->u.new_token.token, a->u.new_token.len, b->u.new_token.token,
                          b->u.new_token.len);
    case QK_FT_MAX_DATA:
    case QK_FT_DATA_BLOCKED:
    case QK_FT_MAX_STREAMS_BIDI:
    case QK_FT_MAX_STREAMS_UNI:
    case QK_FT_STREAMS_BLOCKED_BIDI:
    case QK_FT_STREAMS_BLOCKED_UNI: return a->u.max.max == b->u.max.max;
    case QK_FT_MAX_STREAM_DATA:
    case QK_FT_STREAM_DATA_BLOCKED:
        return a->u.stream_max.stream_id == b->u.stream_max.stream_id &&
               a->u.stream_max.max == b->u.stream_max.max;
    case QK_FT_NEW_CONNECTION_ID:
        return a->u.new_cid.seq == b->u.new_cid.seq &&
               a->u.new_cid.retire_prior_to == b->u.new_cid.retire_prior_to &&
               same_bytes(a->u.new_cid.cid, a->u.new_cid.cid_len, b->u.new_cid.cid,
                          b->u.new_cid.cid_len) &&
               memcmp(a->u.new_cid.reset_token, b->u.new_cid.reset_token, QK_RESET_TOKEN_LEN) == 0;
    case QK_FT_RETIRE_CONNECTION_ID: return a->u.retire_cid.seq == b->u.retire_cid.seq;
    case QK_FT_PATH_CHALLENGE:
    case QK_FT_PATH_RESPONSE: return memcmp(a->u.path.data, b->u.path.data, 8) == 0;
    case QK_FT_CONNECTION_CLOSE:
    case QK_FT_CONNECTION_CLOSE_APP:
        return a->u.close.error_code == b->u.close.error_code &&
               (t == QK_FT_CONNECTION_CLOSE_APP ||
                a->u.close.frame_type == b->u.close.frame_type) &&
               same_bytes(a->u.close.reason, a->u.close.reason_len, b->u.close.reason,
                          b->u.close.reason_len);
    case QK_FT_DATAGRAM:
    case QK_FT_DATAGRAM_LEN:
        return a->u.datagram.has_length == b->u.datagram.has_length &&
               same_bytes(a->u.datagram.data, a->u.datagram.len, b->u.datagram.data,
                          b->u.datagram.len);
    case QK_FT_ACK_FREQUENCY:
        return a->u.ack_frequency.seq == b->u.ack_frequency.seq &&
               a->u.ack_frequency.ack_eliciting_threshold ==
                   b->u.ack_frequency.ack_eliciting_threshold &&
               a->u.ack_frequency.request_max_ack_delay_us ==
                   b->u.ack_frequency.request_max_ack_delay_us &&
               a->u.ack_frequency.reordering_threshold == b->u.ack_frequency.reordering_threshold;
    default: return true; /* PING, HANDSHAKE_DONE, IMMEDIATE_ACK: no fields */
    }
}
