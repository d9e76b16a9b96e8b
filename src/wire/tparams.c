/* SPDX-License-Identifier: MIT */
/* QUIC transport parameters (RFC 9000 §18, RFC 9221 §3, ack-frequency-12 §3). */
#include "wire/tparams.h"
#include "base/cursor.h"
#include <quack/common.h>
#include <string.h>

typedef enum { K_INT, K_CID, K_TOKEN, K_FLAG, K_PREF } kind;

typedef struct param_desc {
    uint64_t id;
    uint32_t bit;
    kind k;
    size_t off; /* offsetof the field in qk_tparams */
} param_desc;

#define F(x) offsetof(qk_tparams, x)
static const param_desc PARAMS[] = {
    {QK_TP_ORIGINAL_DCID, QK_TPB_ORIGINAL_DCID, K_CID, F(original_dcid)},
    {QK_TP_MAX_IDLE_TIMEOUT, QK_TPB_MAX_IDLE_TIMEOUT, K_INT, F(max_idle_timeout_ms)},
    {QK_TP_STATELESS_RESET_TOKEN, QK_TPB_STATELESS_RESET_TOKEN, K_TOKEN, F(stateless_reset_token)},
    {QK_TP_MAX_UDP_PAYLOAD_SIZE, QK_TPB_MAX_UDP_PAYLOAD_SIZE, K_INT, F(max_udp_payload_size)},
    {QK_TP_INITIAL_MAX_DATA, QK_TPB_INITIAL_MAX_DATA, K_INT, F(initial_max_data)},
    {QK_TP_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL, QK_TPB_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL, K_INT,
     F(initial_max_stream_data_bidi_local)},
    {QK_TP_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE, QK_TPB_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE, K_INT,
     F(initial_max_stream_data_bidi_remote)},
    {QK_TP_INITIAL_MAX_STREAM_DATA_UNI, QK_TPB_INITIAL_MAX_STREAM_DATA_UNI, K_INT,
     F(initial_max_stream_data_uni)},
    {QK_TP_INITIAL_MAX_STREAMS_BIDI, QK_TPB_INITIAL_MAX_STREAMS_BIDI, K_INT,
     F(initial_max_streams_bidi)},
    {QK_TP_INITIAL_MAX_STREAMS_UNI, QK_TPB_INITIAL_MAX_STREAMS_UNI, K_INT,
     F(initial_max_streams_uni)},
    {QK_TP_ACK_DELAY_EXPONENT, QK_TPB_ACK_DELAY_EXPONENT, K_INT, F(ack_delay_exponent)},
    {QK_TP_MAX_ACK_DELAY, QK_TPB_MAX_ACK_DELAY, K_INT, F(max_ack_delay_ms)},
    {QK_TP_DISABLE_ACTIVE_MIGRATION, QK_TPB_DISABLE_ACTIVE_MIGRATION, K_FLAG,
     F(disable_active_migration)},
    {QK_TP_PREFERRED_ADDRESS, QK_TPB_PREFERRED_ADDRESS, K_PREF, F(preferred_address)},
    {QK_TP_ACTIVE_CONNECTION_ID_LIMIT, QK_TPB_ACTIVE_CONNECTION_ID_LIMIT, K_INT,
     F(active_connection_id_limit)},
    {QK_TP_INITIAL_SCID, QK_TPB_INITIAL_SCID, K_CID, F(initial_scid)},
    {QK_TP_RETRY_SCID, QK_TPB_RETRY_SCID, K_CID, F(retry_scid)},
    {QK_TP_MAX_DATAGRAM_FRAME_SIZE, QK_TPB_MAX_DATAGRAM_FRAME_SIZE, K_INT,
     F(max_datagram_frame_size)},
    {QK_TP_MIN_ACK_DELAY, QK_TPB_MIN_ACK_DELAY, K_INT, F(min_ack_delay_us)},
};
#undef F
#define N_PARAMS (sizeof(PARAMS) / sizeof(PARAMS[0]))

/* RFC 9000 §18.2: sent only by servers. */
#define SERVER_ONLY                                                                                \
    (QK_TPB_ORIGINAL_DCID | QK_TPB_STATELESS_RESET_TOKEN | QK_TPB_PREFERRED_ADDRESS |              \
     QK_TPB_RETRY_SCID)

#define PREF_FIXED_LEN (4 + 2 + 16 + 2 + 1 + QK_RESET_TOKEN_LEN)

void qk_tparams_init(qk_tparams *tp)
{
    memset(tp, 0, sizeof(*tp));
    /* RFC 9000 §18.2 defaults */
    tp->max_udp_payload_size = QK_TP_DEFAULT_MAX_UDP_PAYLOAD_SIZE;
    tp->ack_delay_exponent = QK_TP_DEFAULT_ACK_DELAY_EXPONENT;
    tp->max_ack_delay_ms = QK_TP_DEFAULT_MAX_ACK_DELAY_MS;
    tp->active_connection_id_limit = QK_TP_DEFAULT_ACTIVE_CID_LIMIT;
}

/* Value rules shared by encode and decode; true when valid. */
static bool valid(const qk_tparams *tp, bool sender_is_server)
{
    if (!sender_is_server && (tp->present & SERVER_ONLY)) return false;
    if (tp->max_udp_payload_size < 1200) return false;                       /* §18.2 */
    if (tp->ack_delay_exponent > QK_TP_MAX_ACK_DELAY_EXPONENT) return false; /* §18.2 */
    if (tp->max_ack_delay_ms >= QK_TP_MAX_ACK_DELAY_LIMIT_MS) return false;  /* §18.2 */
    if (tp->active_connection_id_limit < 2) return false;                    /* §18.2 */
    /* §18.2 / §4.6: stream counts above 2^60 */
    if (tp->initial_max_streams_bidi > (1ull << 60)) return false;
    if (tp->initial_max_streams_uni > (1ull << 60)) return false;
    const qk_cid_buf *cids[] = {&tp->original_dcid, &tp->initial_scid, &tp->retry_scid,
                                &tp->preferred_address.cid};
    for (size_t i = 0; i < 4; i++)
        if (cids[i]->len > QK_MAX_CID_LEN) return false;
    /* §18.2: a server using zero-length CIDs must not send a preferred address. */
    if ((tp->present & QK_TPB_PREFERRED_ADDRESS) && tp->preferred_address.cid.len == 0)
        return false;
    /* ack-frequency-12 §3: min_ack_delay (µs) must not exceed max_ack_delay (ms). */
    if ((tp->present & QK_TPB_MIN_ACK_DELAY) && tp->min_ack_delay_us > tp->max_ack_delay_ms * 1000)
        return false;
    return true;
}

static bool put_param(qk_wr *w, const param_desc *d, const qk_tparams *tp)
{
    const uint8_t *field = (const uint8_t *)tp + d->off;
    switch (d->k) {
    case K_INT: {
        uint64_t v;
        memcpy(&v, field, sizeof(v));
        return qk_wr_varint(w, d->id) && qk_wr_varint(w, qk_varint_size(v)) && qk_wr_varint(w, v);
    }
    case K_CID: {
        const qk_cid_buf *c = (const qk_cid_buf *)(const void *)field;
        return qk_wr_varint(w, d->id) && qk_wr_varint(w, c->len) && qk_wr_bytes(w, c->id, c->len);
    }
    case K_TOKEN:
        return qk_wr_varint(w, d->id) && qk_wr_varint(w, QK_RESET_TOKEN_LEN) &&
               qk_wr_bytes(w, field, QK_RESET_TOKEN_LEN);
    case K_FLAG: return qk_wr_varint(w, d->id) && qk_wr_varint(w, 0);
    case K_PREF: {
        const qk_preferred_address *pa = &tp->preferred_address;
        /* RFC 9000 §18.2 Preferred Address */
        return qk_wr_varint(w, d->id) && qk_wr_varint(w, PREF_FIXED_LEN + pa->cid.len) &&
               qk_wr_bytes(w, pa->ipv4, 4) && qk_wr_u16(w, pa->ipv4_port) &&
               qk_wr_bytes(w, pa->ipv6, 16) && qk_wr_u16(w, pa->ipv6_port) &&
               qk_wr_u8(w, pa->cid.len) && qk_wr_bytes(w, pa->cid.id, pa->cid.len) &&
               qk_wr_bytes(w, pa->reset_token, QK_RESET_TOKEN_LEN);
    }
    }
    return false;
}

int qk_tparams_encode(const qk_tparams *tp, bool sender_is_server, uint8_t *out, size_t cap)
{
    if (!valid(tp, sender_is_server)) return QK_ERR_INVALID_ARG;
    for (size_t i = 0; i < N_PARAMS; i++) {
        if (PARAMS[i].k != K_INT || !(tp->present & PARAMS[i].bit)) continue;
        uint64_t v;
        memcpy(&v, (const uint8_t *)tp + PARAMS[i].off, sizeof(v));
        if (v > QK_VARINT_MAX) return QK_ERR_INVALID_ARG;
    }
    qk_wr w = qk_wr_make(out, cap);
    for (size_t i = 0; i < N_PARAMS; i++)
        if ((tp->present & PARAMS[i].bit) && !put_param(&w, &PARAMS[i], tp))
            return QK_ERR_BUFFER_TOO_SMALL;
    return (int)(w.p - out);
}

static bool get_cid(qk_rd *v, qk_cid_buf *c, size_t n)
{
    if (n > QK_MAX_CID_LEN) return false;
    c->len = (uint8_t)n;
    return qk_rd_copy(v, c->id, n);
}

/* Parses one known parameter from its value bytes v (exactly consumed). */
static int get_param(const param_desc *d, qk_rd *v, qk_tparams *tp)
{
    uint8_t *field = (uint8_t *)tp + d->off;
    size_t n = qk_rd_left(v);
    bool ok;
    switch (d->k) {
    case K_INT: {
        uint64_t x;
        ok = qk_rd_varint(v, &x);
        if (ok) memcpy(field, &x, sizeof(x));
        break;
    }
    case K_CID: ok = get_cid(v, (qk_cid_buf *)(void *)field, n); break;
    case K_TOKEN: ok = qk_rd_copy(v, field, QK_RESET_TOKEN_LEN); break;
    case K_FLAG:
        ok = true;
        tp->disable_active_migration = true;
        break;
    case K_PREF: {
        qk_preferred_address *pa = &tp->preferred_address;
        uint8_t cl;
        ok = qk_rd_copy(v, pa->ipv4, 4) && qk_rd_u16(v, &pa->ipv4_port) &&
             qk_rd_copy(v, pa->ipv6, 16) && qk_rd_u16(v, &pa->ipv6_port) && qk_rd_u8(v, &cl) &&
             get_cid(v, &pa->cid, cl) && qk_rd_copy(v, pa->reset_token, QK_RESET_TOKEN_LEN);
        break;
    }
    default: ok = false;
    }
    /* RFC 9000 §18.2: the length must match the value exactly. */
    if (!ok || qk_rd_left(v) != 0) return QK_ERR_TRANSPORT_PARAMETER;
    tp->present |= d->bit;
    return 0;
}

int qk_tparams_decode(const uint8_t *buf, size_t len, bool sender_is_server, qk_tparams *tp)
{
    qk_tparams_init(tp);
    qk_rd r = qk_rd_make(buf, len);
    while (qk_rd_left(&r) > 0) {
        uint64_t id, plen;
        const uint8_t *val;
        if (!qk_rd_varint(&r, &id) || !qk_rd_varint(&r, &plen) || plen > qk_rd_left(&r))
            return QK_ERR_TRANSPORT_PARAMETER;
        qk_rd_bytes(&r, (size_t)plen, &val);
        const param_desc *d = NULL;
        for (size_t i = 0; i < N_PARAMS; i++)
            if (PARAMS[i].id == id) d = &PARAMS[i];
        if (!d) continue; /* RFC 9000 §7.4.2, §18.1: unknown and reserved ids are ignored */
        /* RFC 9000 §7.4: duplicates are a TRANSPORT_PARAMETER_ERROR. */
        if (tp->present & d->bit) return QK_ERR_TRANSPORT_PARAMETER;
        qk_rd v = qk_rd_make(val, (size_t)plen);
        int rc = get_param(d, &v, tp);
        if (rc < 0) return rc;
    }
    if (!valid(tp, sender_is_server)) return QK_ERR_TRANSPORT_PARAMETER;
    return 0;
}
