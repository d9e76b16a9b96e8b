/* SPDX-License-Identifier: MIT */
/* The session layer's wire format and replay ring (session_wire.h). */
#include "tunnel/session_wire.h"

#include <stdlib.h>
#include <string.h>

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

size_t qk_tsw_msg_encode(const qk_tsw_msg *m, uint8_t *out)
{
    uint8_t *b = out + 2;
    switch (m->type) {
    case QK_TSW_WELCOME:
    case QK_TSW_HELLO:
        if (m->type == QK_TSW_WELCOME) *b++ = m->status; /* then id and token */
        memcpy(b, m->id, QK_TSW_ID_BYTES);
        memcpy(b + QK_TSW_ID_BYTES, m->token, QK_TSW_TOKEN_BYTES);
        b += QK_TSW_ID_BYTES + QK_TSW_TOKEN_BYTES;
        break;
    case QK_TSW_ACK:
        put64(b, m->flow_id);
        put64(b + 8, m->offset);
        b[16] = m->fin ? QK_TSW_ACK_FIN : 0;
        b += 17;
        break;
    default: break;
    }
    out[0] = m->type;
    out[1] = (uint8_t)(b - out - 2);
    return (size_t)(b - out);
}

long qk_tsw_msg_decode(const uint8_t *in, size_t len, qk_tsw_msg *m)
{
    if (len < 2 || len < 2u + in[1]) return 0;
    const uint8_t *b = in + 2;
    size_t blen = in[1];
    memset(m, 0, sizeof *m);
    m->type = in[0];
    switch (m->type) {
    case QK_TSW_WELCOME:
        if (blen != 1 + QK_TSW_ID_BYTES + QK_TSW_TOKEN_BYTES || b[0] > QK_TSW_WELCOME_RESUMED)
            return -1;
        m->status = *b++;
        memcpy(m->id, b, QK_TSW_ID_BYTES);
        memcpy(m->token, b + QK_TSW_ID_BYTES, QK_TSW_TOKEN_BYTES);
        break;
    case QK_TSW_HELLO:
        if (blen != QK_TSW_ID_BYTES + QK_TSW_TOKEN_BYTES) return -1;
        memcpy(m->id, b, QK_TSW_ID_BYTES);
        memcpy(m->token, b + QK_TSW_ID_BYTES, QK_TSW_TOKEN_BYTES);
        break;
    case QK_TSW_ACK:
        if (blen != 17 || (b[16] & ~QK_TSW_ACK_FIN)) return -1;
        m->flow_id = get64(b);
        m->offset = get64(b + 8);
        m->fin = b[16] & QK_TSW_ACK_FIN;
        break;
    default: break; /* skipped */
    }
    return (long)(2 + blen);
}

void qk_tsw_flow_hdr_encode(const qk_tsw_flow_hdr *h, uint8_t out[QK_TSW_FLOW_HDR_BYTES])
{
    out[0] = h->resume ? QK_TSW_FLOW_RESUME : 0;
    put64(out + 1, h->flow_id);
    put64(out + 9, h->recv_off);
}

int qk_tsw_flow_hdr_decode(const uint8_t in[QK_TSW_FLOW_HDR_BYTES], qk_tsw_flow_hdr *h)
{
    if (in[0] & ~QK_TSW_FLOW_RESUME) return -1;
    h->resume = in[0] & QK_TSW_FLOW_RESUME;
    h->flow_id = get64(in + 1);
    h->recv_off = get64(in + 9);
    return 0;
}

void qk_tsw_flow_reply_encode(const qk_tsw_flow_reply *r, uint8_t out[QK_TSW_FLOW_REPLY_BYTES])
{
    out[0] = r->status;
    put64(out + 1, r->recv_off);
}

int qk_tsw_flow_reply_decode(const uint8_t in[QK_TSW_FLOW_REPLY_BYTES], qk_tsw_flow_reply *r)
{
    if (in[0] > QK_TSW_FLOW_UNKNOWN) return -1;
    r->status = in[0];
    r->recv_off = get64(in + 1);
    return 0;
}

int qk_tsw_ring_grow(qk_tsw_ring *r, size_t want_cap)
{
    if (want_cap <= r->cap) return 0;
    uint8_t *nb = malloc(want_cap);
    if (!nb) return -1;
    size_t first = r->cap - r->head < r->len ? r->cap - r->head : r->len;
    if (r->len) {
        memcpy(nb, r->buf + r->head, first);
        memcpy(nb + first, r->buf, r->len - first);
    }
    free(r->buf);
    r->buf = nb;
    r->cap = want_cap;
    r->head = 0;
    return 0;
}

uint8_t *qk_tsw_ring_tail(qk_tsw_ring *r, size_t *room)
{
    size_t tail = (r->head + r->len) % (r->cap ? r->cap : 1);
    if (r->len == r->cap)
        *room = 0;
    else
        *room = tail >= r->head ? r->cap - tail : r->head - tail;
    return r->buf + tail;
}

void qk_tsw_ring_commit(qk_tsw_ring *r, size_t n)
{
    r->len += n;
}

const uint8_t *qk_tsw_ring_at(const qk_tsw_ring *r, uint64_t off, size_t *n)
{
    *n = 0;
    if (off < r->base || off >= r->base + r->len) return NULL;
    size_t skip = (size_t)(off - r->base), pos = (r->head + skip) % r->cap;
    size_t left = r->len - skip;
    *n = r->cap - pos < left ? r->cap - pos : left;
    return r->buf + pos;
}

int qk_tsw_ring_ack(qk_tsw_ring *r, uint64_t off)
{
    if (off <= r->base) return 0;
    if (off > r->base + r->len) return -1;
    size_t n = (size_t)(off - r->base);
    r->head = (r->head + n) % r->cap;
    r->len -= n;
    r->base = off;
    if (!r->len) r->head = 0;
    return 0;
}

void qk_tsw_ring_free(qk_tsw_ring *r)
{
    free(r->buf);
    memset(r, 0, sizeof *r);
}
