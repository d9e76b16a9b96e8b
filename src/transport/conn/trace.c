/* SPDX-License-Identifier: MIT */
/* The trace hook (qk_config.trace): decodes the plaintext frames of every
 * packet a connection sends or receives and hands them to a one-way sink,
 * so tests can assert on actual ACK frames and ACK delays (the question of
 * shared/seeds/000). Costs nothing when no sink is configured. */
#include "transport/conn/trace.h"

#include <string.h>

static void fill(qk_trace_frame *o, const qk_frame *f, uint64_t ack_exp)
{
    memset(o, 0, sizeof *o);
    o->type = f->type;
    if (qk_frame_is_stream(f->type)) {
        o->stream_id = f->u.stream.stream_id;
        o->offset = f->u.stream.offset;
        o->len = f->u.stream.len;
        o->fin = f->u.stream.fin;
        return;
    }
    switch (f->type) {
    case QK_FT_PADDING: o->len = f->u.padding.len; break;
    case QK_FT_ACK:
    case QK_FT_ACK_ECN: {
        const qk_frame_ack *a = &f->u.ack;
        o->ack_largest = a->largest;
        /* RFC 9000 §19.3: microseconds scaled by 2^ack_delay_exponent. */
        uint64_t us =
            a->ack_delay < (UINT64_MAX >> 24) ? a->ack_delay << ack_exp : UINT64_MAX >> 24;
        o->ack_delay_ns = us * QK_NS_PER_US;
        o->ack_ranges = 1 + a->range_count;
        o->ack_first_range = a->first_range;
        o->value = a->ce;
        break;
    }
    case QK_FT_CRYPTO:
        o->offset = f->u.crypto.offset;
        o->len = f->u.crypto.len;
        break;
    case QK_FT_RESET_STREAM:
        o->stream_id = f->u.reset_stream.stream_id;
        o->value = f->u.reset_stream.app_error;
        break;
    case QK_FT_STOP_SENDING:
        o->stream_id = f->u.stop_sending.stream_id;
        o->value = f->u.stop_sending.app_error;
        break;
    case QK_FT_MAX_DATA:
    case QK_FT_MAX_STREAMS_BIDI:
    case QK_FT_MAX_STREAMS_UNI:
    case QK_FT_DATA_BLOCKED:
    case QK_FT_STREAMS_BLOCKED_BIDI:
    case QK_FT_STREAMS_BLOCKED_UNI: o->value = f->u.max.max; break;
    case QK_FT_MAX_STREAM_DATA:
    case QK_FT_STREAM_DATA_BLOCKED:
        o->stream_id = f->u.stream_max.stream_id;
        o->value = f->u.stream_max.max;
        break;
    case QK_FT_CONNECTION_CLOSE:
    case QK_FT_CONNECTION_CLOSE_APP: o->value = f->u.close.error_code; break;
    case QK_FT_DATAGRAM:
    case QK_FT_DATAGRAM_LEN: o->len = f->u.datagram.len; break;
    case QK_FT_ACK_FREQUENCY:
        o->af_seq = f->u.ack_frequency.seq;
        o->af_threshold = f->u.ack_frequency.ack_eliciting_threshold;
        o->af_max_delay_ns = f->u.ack_frequency.request_max_ack_delay_us * QK_NS_PER_US;
        o->af_reorder = f->u.ack_frequency.reordering_threshold;
        break;
    default: break;
    }
}

void qk_trace_emit(qk_conn *c, bool sent, qk_pkt_type type, uint64_t pn, size_t len,
                   const uint8_t *payload, size_t payload_len, qk_time now)
{
    if (!c->cfg->trace) return;
    qk_trace_frame frames[QK_TRACE_MAX_FRAMES];
    qk_trace_packet tp = {.conn = c,
                          .server = c->is_server,
                          .sent = sent,
                          .pkt_type = type == QK_PKT_INITIAL     ? QK_TRACE_PKT_INITIAL
                                      : type == QK_PKT_HANDSHAKE ? QK_TRACE_PKT_HANDSHAKE
                                                                 : QK_TRACE_PKT_1RTT,
                          .pn = pn,
                          .time_ns = now,
                          .len_bytes = len,
                          .frames = frames};
    /* RFC 9000 §19.3: Initial/Handshake ACKs use exponent 3; 1-RTT the
     * sender's ack_delay_exponent (ours when we sent it, the peer's else). */
    uint64_t exp = 3;
    if (type == QK_PKT_1RTT)
        exp = sent ? c->cfg->ack_delay_exponent : c->have_peer_tp ? c->peer_ack_delay_exponent : 3;
    size_t off = 0;
    while (off < payload_len) {
        qk_frame f;
        int n = qk_frame_decode(payload + off, payload_len - off, &f);
        if (n <= 0) break; /* malformed: the connection reports it */
        off += (size_t)n;
        if (qk_frame_is_ack_eliciting(f.type)) tp.ack_eliciting = true;
        if (tp.n_frames < QK_TRACE_MAX_FRAMES) fill(&frames[tp.n_frames++], &f, exp);
        tp.n_frames_total++;
    }
    c->cfg->trace(c->cfg->trace_ctx, &tp);
}
