/* SPDX-License-Identifier: MIT */
/* Packets and frames in: header protection, decryption, frame dispatch. */
#include "transport/conn/conn.h"

#include <stdlib.h>
#include <string.h>

#include "transport/conn/trace.h"
#include "wire/pn.h"
#include "wire/varint.h"

typedef struct rx_ctx {
    qk_pn_space space;
    qk_pkt_type pkt_type;
    uint64_t pn;
    bool ack_eliciting;
    bool non_probing; /* RFC 9000 §9.1: a frame other than PATH_*, NEW_CONNECTION_ID, PADDING */
    qk_time now;
    uint8_t ecn;
    const uint8_t *dcid; /* the packet's Destination Connection ID */
    size_t dcid_len;
} rx_ctx;

static void push_stream_event(qk_conn *c, qk_event_type type, uint64_t id, uint64_t code)
{
    qk_event ev = {.type = type, .conn = c, .stream_id = id, .error_code = code};
    qk_conn_push_event(c, &ev);
}

static void report_new_streams(qk_conn *c)
{
    qk_stream *s;
    while ((s = qk_streams_poll_new_remote(&c->streams))) {
        qk_sched_node_init(&s->sched, s->id);
        c->stats.streams_opened_remote++;
        push_stream_event(c, QK_EV_STREAM_OPENED, s->id, 0);
    }
}

static int on_ack(qk_conn *c, const rx_ctx *rx, const qk_frame_ack *a)
{
    qk_ack_range ranges[QK_CONN_MAX_ACK_RANGES_IN];
    size_t n = 0;
    qk_ack_iter it;
    qk_ack_iter_init(&it, a);
    uint64_t lo, hi;
    /* Ranges past our bound are ignored: those packets stay unacknowledged
     * for now and are acknowledged again by a later ACK. */
    while (n < QK_CONN_MAX_ACK_RANGES_IN && qk_ack_iter_next(&it, &lo, &hi))
        ranges[n++] = (qk_ack_range){lo, hi};
    /* RFC 9000 §19.3: ACK Delay is scaled by 2^ack_delay_exponent µs; Initial and
     * Handshake use the default exponent... and the value is ignored there. */
    uint64_t exp = rx->space == QK_PN_SPACE_APP && c->have_peer_tp ? c->peer_ack_delay_exponent : 3;
    uint64_t delay_us = a->ack_delay < (UINT64_MAX >> 24) ? a->ack_delay << exp : UINT64_MAX >> 24;
    qk_ack_received ar = {.ranges = ranges,
                          .n_ranges = n,
                          .ack_delay_ns = delay_us * QK_NS_PER_US,
                          .has_ecn = a->has_ecn,
                          .ect0 = a->ect0,
                          .ect1 = a->ect1,
                          .ce = a->ce};
    c->stats.ack_frames_received++;
    if (rx->space == QK_PN_SPACE_APP) qk_ackfreq_on_ack_received(&c->af, rx->now);
    uint64_t lost0 = c->rec.stats.packets_lost;
    int rc = qk_recovery_on_ack_received(&c->rec, rx->space, &ar, rx->now);
    qk_conn_apply_deferred(c, rx->now); /* what the sink recorded inside the ACK loop */
    /* qlog: a reduction is logged when it happens, also when nothing can be sent. */
    if (c->rec.stats.packets_lost != lost0) qk_qlog_metrics(c, rx->now);
    qk_conn_feedback_on_ack(c, rx->now);
    if (rc < 0) return rc;
    if (rx->space == QK_PN_SPACE_APP && n) qk_ku_on_acked(&c->ku, ranges[0].largest, rx->now);
    /* RFC 8899 §4.3: decide on a black hole once acks and losses are all in. */
    if (rx->space == QK_PN_SPACE_APP && qk_pmtud_check(&c->pmtud, rx->now))
        qk_conn_set_mtu(c, c->pmtud.cur_bytes);
    /* RFC 9001 §4.9.1-ish: a client whose Handshake packet was acked knows the
     * server validated its address. */
    if (!c->is_server && rx->space == QK_PN_SPACE_HANDSHAKE)
        qk_recovery_set_peer_address_validated(&c->rec, rx->now);
    return 0;
}

static int on_crypto(qk_conn *c, const rx_ctx *rx, const qk_frame_crypto *f)
{
    qk_space *sp = &c->sp[rx->space];
    int rc = qk_recvbuf_insert(&sp->crypto_recv, f->offset, f->data, f->len, false);
    if (rc) return rc == QK_ERR_LIMIT ? QK_ERR_CRYPTO_BUFFER : rc;
    qk_crypto_level level = qk_level_of_space(rx->space);
    const uint8_t *p;
    size_t n;
    bool fed = false;
    while ((n = qk_recvbuf_peek(&sp->crypto_recv, &p)) > 0) {
        if ((rc = qk_tls_provide(c->tls, level, p, n))) return rc;
        qk_recvbuf_consume(&sp->crypto_recv, n);
        fed = true;
    }
    return fed ? qk_conn_drive_tls(c, rx->now) : 0;
}

/* The stream a frame is about, opening peer streams it implies (RFC 9000
 * §3.2, §19.8): *s NULL for a stream already closed (the frame is ignored).
 * zero_rtt: the frame brings data or a reset in a 0-RTT packet (replayable,
 * RFC 9001 §9.2), which the stream's events then say.
 * Returns 0 or the frame's error (STREAM_STATE / STREAM_LIMIT). */
static int frame_stream(qk_conn *c, uint64_t id, qk_stream_frame_dir dir, bool zero_rtt,
                        qk_stream **s)
{
    int rc = qk_streams_get_for_frame(&c->streams, id, dir, s);
    if (rc) return rc;
    if (*s && zero_rtt) (*s)->rx_0rtt = true;
    report_new_streams(c);
    return 0;
}

static int on_stream(qk_conn *c, const rx_ctx *rx, const qk_frame_stream *f)
{
    qk_stream *s;
    int rc = frame_stream(c, f->stream_id, QK_FRAME_TO_RECV, rx->pkt_type == QK_PKT_0RTT, &s);
    if (rc || !s) return rc; /* a closed stream: ignore */
    /* RFC 9000 §4.1: connection-level credit counts the highest offset per stream. */
    uint64_t end = f->offset + f->len, before = s->recv.max_off;
    if (end > before) {
        if ((rc = qk_flow_rx_add(&c->flow_rx, end - before))) return rc;
    }
    uint64_t readable = qk_recvbuf_readable(&s->recv);
    bool was_done = qk_recvbuf_all_received(&s->recv);
    if ((rc = qk_stream_on_stream(s, f->offset, f->data, f->len, f->fin))) return rc;
    uint64_t buffered = c->flow_rx.received_bytes - c->flow_rx.consumed_bytes;
    if (buffered > c->stats.peak_rx_buffered_bytes) c->stats.peak_rx_buffered_bytes = buffered;
    c->stats.stream_bytes_received += f->len;
    /* One READABLE per stream until the application reads (not one per frame). */
    if ((qk_recvbuf_readable(&s->recv) > readable ||
         (!was_done && qk_recvbuf_all_received(&s->recv))) &&
        !s->readable_event_pending) {
        s->readable_event_pending = true;
        push_stream_event(c, QK_EV_STREAM_READABLE, s->id, 0);
    }
    return 0;
}

static int on_reset_stream(qk_conn *c, const rx_ctx *rx, uint64_t id, uint64_t code,
                           uint64_t final_size)
{
    qk_stream *s;
    int rc = frame_stream(c, id, QK_FRAME_TO_RECV, rx->pkt_type == QK_PKT_0RTT, &s);
    if (rc || !s) return rc;
    uint64_t before = s->recv.max_off;
    if ((rc = qk_stream_on_reset_stream(s, code, final_size))) return rc;
    if (final_size > before && (rc = qk_flow_rx_add(&c->flow_rx, final_size - before))) return rc;
    push_stream_event(c, QK_EV_STREAM_RESET, id, code);
    return 0;
}

static int on_stop_sending(qk_conn *c, uint64_t id, uint64_t code)
{
    qk_stream *s;
    int rc = frame_stream(c, id, QK_FRAME_TO_SEND, false, &s);
    if (rc || !s) return rc;
    if ((rc = qk_stream_on_stop_sending(s, code))) return rc;
    qk_sched_remove(&c->sched, &s->sched);
    qk_conn_send_account(c, s);
    push_stream_event(c, QK_EV_STREAM_STOP, id, code);
    return 0;
}

static int on_max_stream_data(qk_conn *c, uint64_t id, uint64_t max)
{
    qk_stream *s;
    int rc = frame_stream(c, id, QK_FRAME_TO_SEND, false, &s);
    if (rc || !s) return rc;
    if ((rc = qk_stream_on_max_stream_data(s, max))) return rc;
    qk_conn_schedule_stream(c, s);
    return 0;
}

static int on_close(qk_conn *c, const rx_ctx *rx, const qk_frame *f)
{
    c->close.app = f->type == QK_FT_CONNECTION_CLOSE_APP;
    c->close.code = f->u.close.error_code;
    c->close.remote = true;
    c->close.err = c->close.app ? QK_ERR_APPLICATION : qk_err_from_transport_code(c->close.code);
    size_t n = f->u.close.reason_len < sizeof c->close.reason - 1 ? f->u.close.reason_len
                                                                  : sizeof c->close.reason - 1;
    for (size_t i = 0; i < n; i++) {
        uint8_t ch = f->u.close.reason[i];
        c->close.reason[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    c->close.reason[n] = 0;
    /* RFC 9001 §4.8: a TLS alert ended the handshake; without a reason
     * phrase, say what it likely means. */
    if (!c->close.app && c->close.code >= 0x100 && c->close.code <= 0x1ff && c->tls &&
        !c->handshake_complete) {
        char why[sizeof c->close.reason];
        qk_tls_explain_peer_alert(c->tls, (int)(c->close.code - 0x100), c->close.reason, why,
                                  sizeof why);
        memcpy(c->close.reason, why, sizeof why);
    }
    /* RFC 9000 §10.2.2: draining, no more packets. */
    c->state = QK_CONN_DRAINING;
    c->close.send = false;
    c->timers.close_deadline = rx->now + 3 * qk_conn_pto_ns(c);
    /* RFC 9000 §10.2 (the 3 PTOs are a SHOULD, for late packets): a client
     * the server refused during the handshake reports it at once. */
    if (!c->is_server && !c->handshake_complete) c->timers.close_deadline = rx->now;
    return 0;
}

static int on_datagram(qk_conn *c, const qk_frame *f)
{
    /* RFC 9221 §3: not advertised, or larger than advertised: PROTOCOL_VIOLATION. */
    if (!c->cfg->max_datagram_frame_bytes) return QK_ERR_PROTOCOL_VIOLATION;
    if (f->u.datagram.len + 1 > c->cfg->max_datagram_frame_bytes) return QK_ERR_PROTOCOL_VIOLATION;
    c->stats.datagrams_received++;
    qk_event ev = {
        .type = QK_EV_DATAGRAM, .conn = c, .data = f->u.datagram.data, .len = f->u.datagram.len};
    qk_conn_push_event(c, &ev);
    return 0;
}

static int on_handshake_done(qk_conn *c, const rx_ctx *rx)
{
    if (c->is_server) return QK_ERR_PROTOCOL_VIOLATION; /* RFC 9000 §19.20 */
    if (!c->handshake_confirmed) {
        c->handshake_confirmed = true;
        qk_recovery_set_handshake_confirmed(&c->rec, rx->now);
        qk_conn_discard_space(c, QK_PN_SPACE_HANDSHAKE, rx->now); /* RFC 9001 §4.9.2 */
        qk_conn_confirmed_event(c);
    }
    return 0;
}

/* ack-frequency-12 §4: the peer tells us how often to acknowledge. */
static int on_ack_frequency(qk_conn *c, const qk_frame_ack_frequency *f)
{
    /* §4: frames with a sequence number not above the largest seen are ignored. */
    if (c->ackfreq_seen && f->seq <= c->ackfreq_seq) return 0;
    uint64_t delay_us = f->request_max_ack_delay_us;
    /* §4: below our min_ack_delay, or at least 2^14 ms: PROTOCOL_VIOLATION. */
    if (delay_us < c->local_tp.min_ack_delay_us || delay_us >= (1ull << 14) * 1000)
        return QK_ERR_PROTOCOL_VIOLATION;
    c->ackfreq_seen = true;
    c->ackfreq_seq = f->seq;
    c->stats.ack_frequency_frames_received++;
    qk_ack_policy pol = c->sp[QK_PN_SPACE_APP].ack.policy;
    pol.ack_eliciting_threshold = f->ack_eliciting_threshold;
    pol.max_ack_delay_ns = delay_us * QK_NS_PER_US;
    pol.reordering_threshold = f->reordering_threshold;
    qk_ack_tracker_set_policy(&c->sp[QK_PN_SPACE_APP].ack, &pol);
    return 0;
}

static int dispatch(qk_conn *c, const rx_ctx *rx, const qk_frame *f)
{
    uint64_t t = f->type;
    if (qk_frame_is_stream(t)) return on_stream(c, rx, &f->u.stream);
    switch (t) {
    case QK_FT_PADDING:
    case QK_FT_PING: return 0;
    case QK_FT_ACK:
    case QK_FT_ACK_ECN: return on_ack(c, rx, &f->u.ack);
    case QK_FT_CRYPTO: return on_crypto(c, rx, &f->u.crypto);
    case QK_FT_RESET_STREAM:
        return on_reset_stream(c, rx, f->u.reset_stream.stream_id, f->u.reset_stream.app_error,
                               f->u.reset_stream.final_size);
    case QK_FT_STOP_SENDING:
        return on_stop_sending(c, f->u.stop_sending.stream_id, f->u.stop_sending.app_error);
    case QK_FT_NEW_TOKEN: /* RFC 9000 §19.7: only servers send NEW_TOKEN */
        if (c->is_server) return QK_ERR_PROTOCOL_VIOLATION;
        return qk_conn_on_new_token(c, f->u.new_token.token, f->u.new_token.len, rx->now);
    case QK_FT_MAX_DATA:
        if (qk_flow_tx_on_max(&c->flow_tx, f->u.max.max)) /* the streams waiting for it */
            for (qk_sched_node *n; (n = qk_sched_unblock(&c->sched));)
                qk_conn_schedule_stream(c, QK_CONTAINER_OF(n, qk_stream, sched));
        return 0;
    case QK_FT_MAX_STREAM_DATA:
        return on_max_stream_data(c, f->u.stream_max.stream_id, f->u.stream_max.max);
    case QK_FT_MAX_STREAMS_BIDI:
    case QK_FT_MAX_STREAMS_UNI: {
        bool uni = t == QK_FT_MAX_STREAMS_UNI;
        uint64_t before = c->streams.local_limit[uni];
        int rc = qk_streams_on_max_streams(&c->streams, uni, f->u.max.max);
        if (!rc && c->streams.local_limit[uni] > before) {
            qk_event ev = {.type = QK_EV_STREAMS_AVAILABLE, .conn = c};
            qk_conn_push_event(c, &ev);
        }
        return rc;
    }
    case QK_FT_DATA_BLOCKED: return 0;
    case QK_FT_STREAM_DATA_BLOCKED: {
        qk_stream *s;
        int rc = frame_stream(c, f->u.stream_max.stream_id, QK_FRAME_TO_RECV, false, &s);
        return rc || !s ? rc : qk_stream_on_stream_data_blocked(s, f->u.stream_max.max);
    }
    case QK_FT_STREAMS_BLOCKED_BIDI:
    case QK_FT_STREAMS_BLOCKED_UNI:
        return qk_streams_on_streams_blocked(&c->streams, t == QK_FT_STREAMS_BLOCKED_UNI,
                                             f->u.max.max);
    case QK_FT_NEW_CONNECTION_ID: return qk_cid_on_new(c, &f->u.new_cid);
    case QK_FT_RETIRE_CONNECTION_ID:
        return qk_cid_on_retire(c, rx->dcid, rx->dcid_len, f->u.retire_cid.seq, rx->now);
    case QK_FT_PATH_CHALLENGE: qk_conn_path_on_challenge(c, f->u.path.data); return 0;
    case QK_FT_PATH_RESPONSE: qk_conn_path_on_response(c, f->u.path.data, rx->now); return 0;
    case QK_FT_CONNECTION_CLOSE:
    case QK_FT_CONNECTION_CLOSE_APP: return on_close(c, rx, f);
    case QK_FT_HANDSHAKE_DONE: return on_handshake_done(c, rx);
    case QK_FT_DATAGRAM:
    case QK_FT_DATAGRAM_LEN: return on_datagram(c, f);
    case QK_FT_IMMEDIATE_ACK:
    case QK_FT_ACK_FREQUENCY:
        /* ack-frequency-12 §3: only if we advertised min_ack_delay. */
        if (!(c->local_tp.present & QK_TPB_MIN_ACK_DELAY)) return QK_ERR_PROTOCOL_VIOLATION;
        if (t == QK_FT_IMMEDIATE_ACK) {
            c->stats.immediate_acks_received++;
            qk_ack_on_immediate_ack_frame(&c->sp[rx->space].ack, rx->now);
            return 0;
        }
        return on_ack_frequency(c, &f->u.ack_frequency);
    default: return QK_ERR_FRAME_ENCODING;
    }
}

static int process_frames(qk_conn *c, rx_ctx *rx, const uint8_t *p, size_t len)
{
    if (len == 0) {
        /* RFC 9000 §12.4: a packet containing no frames is a PROTOCOL_VIOLATION. */
        qk_conn_error(c, QK_ERR_PROTOCOL_VIOLATION, 0, "packet without frames", rx->now);
        return QK_ERR_PROTOCOL_VIOLATION;
    }
    while (len > 0) {
        qk_frame f;
        int n = qk_frame_decode(p, len, &f);
        if (n < 0) {
            /* RFC 9000 §19.19: name the frame type, a varint that may span bytes. */
            uint64_t ft = p[0];
            if (qk_varint_decode(p, len, &ft) < 0) ft = p[0];
            qk_conn_error(c, n, ft, "malformed frame", rx->now);
            return n;
        }
        if (!qk_frame_allowed(f.type, rx->pkt_type)) {
            qk_conn_error(c, QK_ERR_PROTOCOL_VIOLATION, f.type, "frame not allowed in packet type",
                          rx->now);
            return QK_ERR_PROTOCOL_VIOLATION;
        }
        if (qk_frame_is_ack_eliciting(f.type)) rx->ack_eliciting = true;
        if (f.type != QK_FT_PADDING && f.type != QK_FT_PATH_CHALLENGE &&
            f.type != QK_FT_PATH_RESPONSE && f.type != QK_FT_NEW_CONNECTION_ID)
            rx->non_probing = true;
        int rc = dispatch(c, rx, &f);
        if (rc < 0) {
            qk_conn_error(c, rc, f.type, NULL, rx->now);
            return rc;
        }
        if (c->state >= QK_CONN_DRAINING) return 0;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Remove protection in place. Returns the payload length, or negative to drop.
 * *which tells which 1-RTT keys opened it (RFC 9001 §6.5). */
static int unprotect(qk_conn *c, qk_space *sp, qk_pkt_keys *lk, uint8_t *pkt, const qk_pkt_hdr *h,
                     uint64_t *pn, size_t *payload_off, qk_ku_keys *which, qk_time now)
{
    size_t pn_len;
    int rc = qk_hp_unprotect(lk, pkt, h->packet_len, h->pn_offset, &pn_len);
    if (rc) return rc;
    uint64_t trunc = 0;
    for (size_t i = 0; i < pn_len; i++) trunc = trunc << 8 | pkt[h->pn_offset + i];
    *pn = qk_pn_decode(sp->ack.has_largest ? sp->ack.largest_pn : QK_PN_NONE, trunc, pn_len);
    size_t hdr_len = h->pn_offset + pn_len;
    size_t end = h->is_long ? h->pn_offset + h->length : h->packet_len;
    if (end < hdr_len + QK_AEAD_TAG_BYTES) return QK_ERR_TRUNCATED;
    qk_pkt_keys *k = lk;
    *which = QK_KU_CURRENT;
    if (!h->is_long) {
        /* RFC 9001 §6.3: the Key Phase bit picks current, previous or next keys. */
        k = qk_ku_rx_select(&c->ku, &sp->rx, c->key_phase, qk_pkt_key_phase(pkt[0]), *pn, which,
                            now);
        if (!k) return QK_ERR_DECRYPT;
    }
    rc = qk_pkt_open(k, *pn, pkt, hdr_len, pkt + hdr_len, end - hdr_len);
    if (rc < 0) {
        /* RFC 9001 §6.6: count forgeries against the integrity limit. */
        if (!h->is_long && ++c->ku.rx_failures >= qk_ku_integrity_limit(sp->rx.suite))
            qk_conn_error(c, QK_ERR_AEAD_LIMIT, 0, "AEAD integrity limit reached", now);
        return rc;
    }
    /* RFC 9000 §17.2: reserved bits checked after successful decryption. */
    if (qk_pkt_check_reserved(pkt[0])) return QK_ERR_PROTOCOL_VIOLATION;
    *payload_off = hdr_len;
    return rc;
}

static bool client_first_server_packet(qk_conn *c, const qk_pkt_hdr *h)
{
    /* RFC 9000 §7.2: the client switches to the server's SCID. */
    if (c->is_server || c->cids.have_server_scid || !h->is_long) return true;
    if (h->scid_len > QK_MAX_CID_LEN) return false;
    c->cids.rcid[0].cid.len = (uint8_t)h->scid_len;
    memcpy(c->cids.rcid[0].cid.b, h->scid, h->scid_len);
    c->cids.peer_scid = c->cids.rcid[0].cid;
    c->cids.have_server_scid = true;
    return true;
}

/* A packet whose protection came off (open_packet): its number space, number
 * and payload (pkt + off, len bytes), and the keys that opened it. */
typedef struct opened_pkt {
    qk_pn_space space;
    bool zrtt;
    uint64_t pn;
    size_t off;
    int len;
    qk_ku_keys which;
} opened_pkt;

/* Removes the packet's protection with the keys of its space. False: dropped
 * (no keys, undecryptable) or the connection was closed (reserved bits). */
static bool open_packet(qk_conn *c, uint8_t *pkt, const qk_pkt_hdr *h, opened_pkt *o, qk_time now)
{
    o->zrtt = h->type == QK_PKT_0RTT;
    /* RFC 9001 §4.6.1: only a server that accepted early data has 0-RTT keys;
     * without them (rejected, replayed) the packets are dropped. */
    if (o->zrtt && (!c->is_server || !c->zrtt.has_early)) {
        if (c->is_server) c->stats.zerortt_pkts_dropped++;
        return false;
    }
    o->space = qk_space_of_pkt(h->type);
    qk_space *sp = &c->sp[o->space];
    if (sp->discarded || (!o->zrtt && !sp->has_rx)) return false; /* keys gone or not yet: drop */
    o->pn = 0;
    o->off = 0; /* both set by unprotect() when it succeeds; gcc -O2 cannot tell */
    o->which = QK_KU_CURRENT;
    o->len = unprotect(c, sp, o->zrtt ? &c->zrtt.early : &sp->rx, pkt, h, &o->pn, &o->off,
                       &o->which, now);
    if (o->len == QK_ERR_PROTOCOL_VIOLATION) {
        qk_conn_error(c, o->len, 0, "reserved bits set", now);
        return false;
    }
    return o->len >= 0; /* undecryptable: drop silently (RFC 9001 §9.3) */
}

/* Whether an opened packet is processed: not a duplicate, not refused by the
 * client's first-server-packet check, and its key phase accepted (which may
 * close the connection). */
static bool accept_packet(qk_conn *c, const qk_pkt_hdr *h, const opened_pkt *o, qk_time now)
{
    qk_space *sp = &c->sp[o->space];
    if (!client_first_server_packet(c, h)) return false;
    if (qk_ack_is_duplicate(&sp->ack, o->pn)) return false; /* RFC 9000 §12.3 */
    if (h->is_long) return true;
    /* RFC 9001 §6.2: answer a peer's key update before acknowledging it. */
    int rc = qk_ku_on_opened(&c->ku, o->which, o->pn, &sp->rx, &sp->tx, &c->key_phase, sp->next_pn,
                             qk_conn_pto_ns(c), now);
    if (rc) {
        qk_conn_error(c, rc, 0, rc == QK_ERR_KEY_UPDATE ? "consecutive key updates" : NULL, now);
        return false;
    }
    if (o->which == QK_KU_NEXT) {
        c->stats.key_updates++;
        qk_qlog_event(c, "security:key_updated", "{\"trigger\":\"remote_update\"}", now);
    }
    return true;
}

/* Counts an accepted packet and applies what its arrival alone implies
 * (address validation, Initial keys discarded). */
static void note_packet_received(qk_conn *c, const opened_pkt *o, qk_time now)
{
    c->stats.pkts_received++;
    if (o->zrtt) c->stats.zerortt_pkts_received++;
    c->restart.got_packet = true;
    /* RFC 9000 §8.1: a Handshake packet from the client validates its address. */
    if (c->is_server && o->space == QK_PN_SPACE_HANDSHAKE && !c->address_validated) {
        c->address_validated = true;
        qk_recovery_set_peer_address_validated(&c->rec, now);
    }
    /* RFC 9001 §4.9.1: the server discards Initial keys on its first Handshake packet. */
    if (c->is_server && o->space == QK_PN_SPACE_HANDSHAKE)
        qk_conn_discard_space(c, QK_PN_SPACE_INITIAL, now);
}

/* After the frames: the peer's address, the ACK to send, ECN counts, the idle
 * timer. largest: the packet had the largest number yet seen in its space. */
static void finish_packet(qk_conn *c, const rx_ctx *rx, bool largest, const qk_datagram *d,
                          qk_time now)
{
    qk_pn_space space = rx->space;
    /* RFC 9000 §9.3: only the packet with the largest pn moves the peer's address. */
    if (space == QK_PN_SPACE_APP && rx->non_probing && largest) c->paths.rx.migrate = true;
    /* ack-frequency-12 §6: the long-idle rule, once the peer tuned our ACKs. */
    if (space == QK_PN_SPACE_APP && c->ackfreq_seen)
        qk_ack_tracker_set_idle(&c->sp[space].ack, c->rtt.smoothed_rtt_ns);
    if (!c->sp[space].discarded)
        qk_ack_on_packet_received(&c->sp[space].ack, rx->pn, rx->ack_eliciting, d->ecn, now);
    if (d->ecn == QK_ECN_CE) c->stats.ecn_ce_received++;
    if (d->ecn == QK_ECN_ECT0) c->stats.ecn_ect0_received++;
    if (d->ecn == QK_ECN_ECT1) c->stats.ecn_ect1_received++;
    qk_conn_touch_idle(c, now);
}

/* RFC 9001 §5.7: a server must not process 1-RTT packets before the
 * handshake is complete and may buffer them. A client that probes our
 * preferred address right after its Finished (ngtcp2 does) can have the
 * probe arrive first: the other socket, or a worker thread's steering queue,
 * overtakes the Finished. Dropped, the PATH_CHALLENGE goes unanswered and
 * the client gives up the preferred address; held (a few, copied), it is
 * processed once the 1-RTT keys are in. True when the packet was taken. */
static bool hold_1rtt(qk_conn *c, const uint8_t *pkt, size_t len, const qk_datagram *d)
{
    if (!c->is_server || c->state != QK_CONN_HANDSHAKE || c->sp[QK_PN_SPACE_APP].has_rx ||
        c->sp[QK_PN_SPACE_APP].discarded)
        return false;
    if (c->held.n == QK_CONN_MAX_HELD_1RTT) return true; /* no keys either: dropped */
    if (!c->held.pkts && !(c->held.pkts = calloc(QK_CONN_MAX_HELD_1RTT, sizeof *c->held.pkts)))
        return true;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) return true;
    memcpy(copy, pkt, len);
    c->held.pkts[c->held.n++] =
        (qk_held_pkt){.data = copy, .len = len, .local = d->local, .peer = d->peer, .ecn = d->ecn};
    c->stats.held_1rtt_pkts++;
    return true;
}

static void process_packet(qk_conn *c, uint8_t *pkt, const qk_pkt_hdr *h, qk_datagram *d,
                           qk_time now)
{
    /* RFC 9000 §6.2, §17.2.5.2: the client reacts to VN and Retry. */
    if (h->type == QK_PKT_VN) {
        qk_conn_on_vn(c, h, now);
        return;
    }
    if (h->type == QK_PKT_RETRY) {
        qk_conn_on_retry(c, pkt, h, now);
        return;
    }
    if (h->type == QK_PKT_1RTT && hold_1rtt(c, pkt, h->packet_len, d)) return;
    opened_pkt o = {0};
    if (!open_packet(c, pkt, h, &o, now) || !accept_packet(c, h, &o, now)) return;
    note_packet_received(c, &o, now);
    if (c->is_server && c->cfg->new_conn_events && !c->new_conn_event) {
        /* The first packet that decrypted: the application may refuse the
         * connection (qk_conn_refuse) before any of its frames' events. */
        c->new_conn_event = true;
        qk_conn_push_event(c, &(qk_event){.type = QK_EV_NEW_CONN, .conn = c});
    }
    rx_ctx rx = {.space = o.space,
                 .pkt_type = h->type,
                 .pn = o.pn,
                 .now = now,
                 .ecn = d->ecn,
                 .dcid = h->dcid,
                 .dcid_len = h->dcid_len};
    qk_qlog_packet(c, false, h->type, o.pn, h->packet_len, pkt + o.off, (size_t)o.len, now);
    qk_trace_emit(c, false, h->type, o.pn, h->packet_len, pkt + o.off, (size_t)o.len, now);
    qk_ack_tracker *ack = &c->sp[o.space].ack;
    bool largest = !ack->has_largest || o.pn > ack->largest_pn;
    if (process_frames(c, &rx, pkt + o.off, (size_t)o.len) < 0) return;
    finish_packet(c, &rx, largest, d, now);
}

/* The packets of one datagram, with what they say about paths. */
static void recv_packets(qk_conn *c, qk_datagram *d, qk_time now)
{
    qk_conn_path_rx_begin(c, d);
    size_t off = 0;
    /* RFC 9000 §10.2.1: once closing, later packets of the datagram are not processed. */
    while (off < d->len && c->state < QK_CONN_CLOSING) {
        qk_pkt_hdr h;
        if (qk_pkt_parse(d->data + off, d->len - off, c->cids.lcid[0].cid.len, &h)) break;
        /* RFC 9000 §12.2: coalesced packets must share the DCID; ignore others. */
        process_packet(c, d->data + off, &h, d, now);
        off += h.packet_len;
    }
    qk_conn_path_rx_end(c, d, now);
}

/* The 1-RTT keys are in: the held packets, in arrival order, each as the
 * datagram it came in (its addresses tell its path). */
static void release_held(qk_conn *c, qk_time now)
{
    qk_held_pkt *h = c->held.pkts;
    size_t n = c->held.n;
    c->held.pkts = NULL;
    c->held.n = 0;
    for (size_t i = 0; i < n; i++) {
        qk_datagram d = {.data = h[i].data,
                         .len = h[i].len,
                         .local = h[i].local,
                         .peer = h[i].peer,
                         .ecn = h[i].ecn};
        if (c->state < QK_CONN_CLOSING) recv_packets(c, &d, now);
        free(h[i].data);
    }
    free(h);
}

void qk_conn_held_free(qk_conn *c)
{
    for (size_t i = 0; i < c->held.n; i++) free(c->held.pkts[i].data);
    free(c->held.pkts);
    c->held.pkts = NULL;
    c->held.n = 0;
}

void qk_conn_recv(qk_conn *c, qk_datagram *d, qk_time now)
{
    if (c->state >= QK_CONN_DRAINING) return;
    c->stats.bytes_received += d->len;
    /* RFC 9000 §8.1; DNS-carrier profile (docs/dns.md): a datagram below
     * 1200 bytes counts as 1200, since each query gets one bounded answer. */
    if (!c->address_validated)
        c->unvalidated_rx_bytes += c->cfg->min_datagram_bytes && d->len < 1200 ? 1200 : d->len;
    if (c->state == QK_CONN_CLOSING) {
        c->close.send = true; /* RFC 9000 §10.2.1: answer with CONNECTION_CLOSE again */
        return;
    }
    recv_packets(c, d, now);
    if (c->held.n && c->sp[QK_PN_SPACE_APP].has_rx) release_held(c, now);
    qk_conn_wake_writers(c); /* credit or acknowledgements may have made room */
    qk_recovery_set_amplification_blocked(
        &c->rec, !c->address_validated && c->unvalidated_tx_bytes >= 3 * c->unvalidated_rx_bytes,
        now);
}
