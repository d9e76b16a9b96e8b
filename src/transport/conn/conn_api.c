/* SPDX-License-Identifier: MIT */
/* The public connection API (include/quack/quack.h): streams, DATAGRAM
 * frames, key update, close, stats and accessors. Every call that can
 * create work wakes the connection (qk_conn_env.wake): the endpoint visits
 * it at its next send. */
#include "transport/conn/conn.h"

#include "base/abi.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int qk_stream_open(qk_conn *c, bool bidi, uint64_t *stream_id)
{
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    if (c->state >= QK_CONN_CLOSING) return QK_ERR_CLOSED;
    qk_stream *s;
    int rc = qk_streams_open(&c->streams, !bidi, &s);
    if (rc) return rc;
    qk_sched_node_init(&s->sched, s->id);
    *stream_id = s->id;
    c->stats.streams_opened_local++;
    return 0;
}

/* After the application took n bytes of stream s: connection credit, FIN
 * (the stream is forgotten once both sides are done), QK_ERR_AGAIN for
 * nothing at all. */
static long after_read(qk_conn *c, qk_stream *s, long n, bool *fin)
{
    if (n > 0) {
        /* Connection-level credit follows what the application consumed. */
        qk_flow_rx_on_consumed(&c->flow_rx, (uint64_t)n);
        if (qk_flow_rx_should_update(&c->flow_rx)) c->pend |= QK_PEND_MAX_DATA;
    }
    bool done = qk_stream_read_done(s);
    if (fin) *fin = done;
    if (done) qk_conn_forget_if_closed(c, s);
    if (n == 0 && !done) return QK_ERR_AGAIN;
    return n;
}

static long stream_write(qk_conn *c, uint64_t stream_id, const uint8_t *data, size_t len, bool fin,
                         bool borrow)
{
    if (c->state >= QK_CONN_CLOSING) return QK_ERR_CLOSED;
    qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    long n = 0;
    bool capped = false;
    size_t take = len ? qk_conn_send_room(c, s, &capped) : 0;
    if (take > len) take = len;
    if (take)
        n = borrow ? qk_stream_send_write_ref(s, data, take) : qk_stream_send_write(s, data, take);
    if (n < 0) return n;
    qk_conn_send_account(c, s);
    /* Short write: QK_EV_STREAM_WRITABLE is owed once acknowledgements,
     * credit or the endpoint's budget free room. */
    if ((size_t)n < len) {
        s->write_blocked = true;
        if (capped) c->send_capped = true;
        qk_flow_budget *b = c->env.send_budget;
        if (capped && b && qk_flow_budget_room(b) <= take) b->starved = true;
    }
    if (fin && (size_t)n == len) {
        int rc = qk_stream_finish(s);
        if (rc) return rc;
    }
    qk_conn_schedule_stream(c, s);
    return n;
}

long qk_stream_write(qk_conn *c, uint64_t stream_id, const uint8_t *data, size_t len, bool fin)
{
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    return stream_write(c, stream_id, data, len, fin, false);
}

long qk_stream_write_ref(qk_conn *c, uint64_t stream_id, const uint8_t *data, size_t len, bool fin)
{
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    return stream_write(c, stream_id, data, len, fin, true);
}

long qk_stream_send_room(qk_conn *c, uint64_t stream_id)
{
    if (c->state >= QK_CONN_CLOSING) return QK_ERR_CLOSED;
    qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    if (s->send_state == QK_SEND_NONE || s->send.fin || s->send.discarded) return QK_ERR_STATE;
    size_t room = qk_conn_send_room(c, s, NULL);
    return room > (size_t)LONG_MAX ? LONG_MAX : (long)room;
}

long qk_stream_read(qk_conn *c, uint64_t stream_id, uint8_t *buf, size_t cap, bool *fin)
{
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (fin) *fin = false;
    if (!s) return QK_ERR_NOT_FOUND;
    s->readable_event_pending = false; /* the next arrival raises READABLE again */
    long n = qk_stream_recv_read(s, buf, cap);
    if (n < 0) return n;
    return after_read(c, s, n, fin);
}

long qk_stream_peek(qk_conn *c, uint64_t stream_id, const uint8_t **data, bool *fin)
{
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    *data = NULL;
    if (fin) *fin = false;
    qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    s->readable_event_pending = false; /* the next arrival raises READABLE again */
    size_t n = s->recv_state == QK_RECV_NONE ? 0 : qk_recvbuf_peek(&s->recv, data);
    if (n) return n > (size_t)LONG_MAX ? LONG_MAX : (long)n;
    /* Nothing contiguous: a read of nothing reports FIN, reset or AGAIN. */
    return qk_stream_read(c, stream_id, NULL, 0, fin);
}

long qk_stream_consume(qk_conn *c, uint64_t stream_id, size_t n, bool *fin)
{
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    if (fin) *fin = false;
    qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    if (s->recv_state == QK_RECV_NONE || n > qk_recvbuf_readable(&s->recv))
        return QK_ERR_INVALID_ARG;
    qk_recvbuf_consume(&s->recv, n);
    /* A read of nothing re-grants stream credit and moves the state. */
    long r = qk_stream_recv_read(s, NULL, 0);
    if (r < 0) return r;
    r = after_read(c, s, (long)n, fin);
    return r == QK_ERR_AGAIN ? 0 : r;
}

int qk_stream_reset(qk_conn *c, uint64_t stream_id, uint64_t app_error)
{
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    int rc = qk_stream_send_reset(s, app_error);
    if (!rc) qk_sched_remove(&c->sched, &s->sched);
    qk_conn_send_account(c, s);
    return rc;
}

int qk_stream_stop(qk_conn *c, uint64_t stream_id, uint64_t app_error)
{
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    return qk_stream_recv_stop(s, app_error);
}

int qk_stream_set_priority(qk_conn *c, uint64_t stream_id, uint8_t urgency, bool incremental)
{
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    qk_stream_apply_priority(s, urgency, incremental);
    if (s->sched.queued) qk_sched_set_priority(&c->sched, &s->sched, s->urgency, s->incremental);
    return 0;
}

int qk_stream_set_user(qk_conn *c, uint64_t stream_id, void *user)
{
    qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    s->user = user;
    return 0;
}

void *qk_stream_get_user(const qk_conn *c, uint64_t stream_id)
{
    const qk_stream *s = qk_streams_get(&c->streams, stream_id);
    return s ? s->user : NULL;
}

int qk_stream_notify_acked(qk_conn *c, uint64_t stream_id, bool on)
{
    qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    if (s->send_state == QK_SEND_NONE) return QK_ERR_STATE;
    s->notify_acked = on;
    return 0;
}

int qk_stream_is_0rtt(const qk_conn *c, uint64_t stream_id)
{
    const qk_stream *s = qk_streams_get(&c->streams, stream_id);
    if (!s) return QK_ERR_NOT_FOUND;
    return s->rx_0rtt ? 1 : 0;
}

/* Frame overhead qk_datagram_send reserves: type and a Length varint of up
 * to 8 bytes (RFC 9221 §4), and what a 1-RTT packet needs around it. */
#define DGRAM_FRAME_OVERHEAD_BYTES  (1 + 8)
#define DGRAM_PACKET_OVERHEAD_BYTES 64

long qk_conn_datagram_max_payload(const qk_conn *c)
{
    if (c->state >= QK_CONN_CLOSING) return QK_ERR_CLOSED;
    if (!c->have_peer_tp) return QK_ERR_AGAIN;
    /* RFC 9221 §3: absent or 0, the peer does not take DATAGRAM frames. */
    uint64_t frame = c->peer_tp.max_datagram_frame_size;
    if (!(c->peer_tp.present & QK_TPB_MAX_DATAGRAM_FRAME_SIZE) || frame == 0)
        return QK_ERR_UNSUPPORTED;
    uint64_t pkt = c->max_udp_bytes > DGRAM_PACKET_OVERHEAD_BYTES
                       ? c->max_udp_bytes - DGRAM_PACKET_OVERHEAD_BYTES
                       : 0;
    if (pkt < frame) frame = pkt;
    if (frame > LONG_MAX) frame = LONG_MAX;
    return frame > DGRAM_FRAME_OVERHEAD_BYTES ? (long)(frame - DGRAM_FRAME_OVERHEAD_BYTES) : 0;
}

/* Queue one DATAGRAM frame; id 0 = no ACKED/LOST events for it. */
static int datagram_queue(qk_conn *c, const uint8_t *data, size_t len, uint8_t urgency, uint64_t id)
{
    if (urgency > QK_URGENCY_MAX) return QK_ERR_INVALID_ARG;
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    long max = qk_conn_datagram_max_payload(c);
    if (max < 0) return (int)max;
    /* RFC 9221 §3: the frame (type + length + data) must fit the peer's limit
     * and one packet. */
    if (len > (size_t)max) return QK_ERR_TOO_LARGE;
    if (!c->dgq) {
        c->dgq_cap = c->cfg->max_pending_datagrams ? c->cfg->max_pending_datagrams : 64;
        c->dgq = calloc(c->dgq_cap, sizeof *c->dgq);
        if (!c->dgq) return QK_ERR_NOMEM;
    }
    if (c->dgq_count == c->dgq_cap) return QK_ERR_LIMIT;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) return QK_ERR_NOMEM;
    memcpy(copy, data, len);
    /* RFC 9218 §4.1: lower urgency first; FIFO within one urgency. */
    size_t i = c->dgq_count++;
    while (i > 0) {
        qk_dgram_out *prev = &c->dgq[(c->dgq_head + i - 1) % c->dgq_cap];
        if (prev->urgency <= urgency) break;
        c->dgq[(c->dgq_head + i) % c->dgq_cap] = *prev;
        i--;
    }
    c->dgq[(c->dgq_head + i) % c->dgq_cap] = (qk_dgram_out){copy, len, urgency, id};
    return 0;
}

int qk_datagram_send(qk_conn *c, const uint8_t *data, size_t len, uint8_t urgency)
{
    return datagram_queue(c, data, len, urgency, 0);
}

int qk_datagram_send_ex(qk_conn *c, const uint8_t *data, size_t len, uint8_t urgency, uint64_t *id)
{
    if (!id) return QK_ERR_INVALID_ARG;
    int rc = datagram_queue(c, data, len, urgency, c->dgram_last_id + 1);
    if (rc == 0) *id = ++c->dgram_last_id;
    return rc;
}

int qk_conn_key_update(qk_conn *c, qk_time now)
{
    if (!c) return QK_ERR_INVALID_ARG;
    qk_conn_env_wake(c);
    return qk_conn_key_update_now(c, false, now);
}

int qk_conn_close(qk_conn *c, uint64_t app_error, const char *reason)
{
    qk_conn_env_wake(c); /* the endpoint visits it at its next send */
    if (c->state >= QK_CONN_CLOSING) return QK_ERR_CLOSED;
    c->close.app = true;
    c->close.code = app_error;
    c->close.err = 0;
    snprintf(c->close.reason, sizeof c->close.reason, "%s", reason ? reason : "");
    c->state = QK_CONN_CLOSING;
    c->close.send = true;
    c->timers.close_deadline = QK_TIME_INFINITE; /* set when the close packet goes out */
    return 0;
}

int qk_conn_refuse(qk_conn *c, const char *reason)
{
    qk_conn_env_wake(c); /* the CONNECTION_CLOSE goes out at the next send */
    if (!c->is_server) return QK_ERR_STATE;
    if (c->state >= QK_CONN_CLOSING) return QK_ERR_CLOSED;
    /* RFC 9000 §20.1: CONNECTION_REFUSED, a transport error (frame 0x1c),
     * which Initial and Handshake packets may carry (§10.2.3). */
    c->close.app = false;
    c->close.err = QK_ERR_CONNECTION_REFUSED;
    c->close.code = qk_err_transport_code(QK_ERR_CONNECTION_REFUSED);
    c->close.frame_type = 0;
    c->close.remote = false;
    snprintf(c->close.reason, sizeof c->close.reason, "%s",
             reason ? reason : "connection refused by the server");
    c->state = QK_CONN_CLOSING;
    c->close.send = true;
    c->timers.close_deadline = QK_TIME_INFINITE; /* set when the close packet goes out */
    return 0;
}

static void conn_stats(const qk_conn *c, qk_conn_stats *o)
{
    *o = c->stats;
    o->min_rtt_ns = c->rtt.min_rtt_ns;
    o->smoothed_rtt_ns = c->rtt.smoothed_rtt_ns;
    o->rttvar_ns = c->rtt.rttvar_ns;
    o->latest_rtt_ns = c->rtt.latest_rtt_ns;
    o->cwnd_bytes = c->cc.cwnd_bytes;
    o->ssthresh_bytes = c->cc.ssthresh_bytes;
    o->bytes_in_flight = qk_recovery_bytes_in_flight(&c->rec);
    o->pkts_lost = c->rec.stats.packets_lost;
    o->pkts_spurious = c->rec.stats.spurious_losses;
    o->congestion_events = c->cc.congestion_events;
    o->conn_rx_window_bytes = c->flow_rx.window_bytes;
    o->peak_rx_credit_bytes = c->flow_rx.peak_credit_bytes;
    o->pmtu_probes_sent = c->pmtud.probes_sent;
    o->pmtu_probes_lost = c->pmtud.probes_lost;
    o->pmtu_black_holes = c->pmtud.black_holes;
    o->rx_buffered_bytes = c->flow_rx.received_bytes - c->flow_rx.consumed_bytes;
    o->ecn_ce_events = c->rec.stats.ecn_ce_events;
    o->ecn_ce_reported = 0;
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) o->ecn_ce_reported += c->rec.sp[s].ecn_ce;
    o->ecn_state = c->cfg->ecn ? (uint8_t)(c->rec.ecn_state + 1) : 0;
    o->ack_frames_sent = 0;
    o->ack_frames_sent_immediate = 0;
    for (int s = 0; s < QK_PN_SPACE_COUNT; s++) {
        o->ack_frames_sent += c->sp[s].ack.stats.acks_sent;
        o->ack_frames_sent_immediate += c->sp[s].ack.stats.immediate_acks;
    }
}

void qk_conn_stats_get_sized(const qk_conn *c, qk_conn_stats *out, size_t out_bytes)
{
    qk_conn_stats s;
    conn_stats(c, &s);
    qk_abi_copy_out(out, out_bytes, &s, sizeof s);
}

const char *qk_conn_alpn(const qk_conn *c)
{
    return c->handshake_complete ? qk_tls_alpn(c->tls) : NULL;
}

void qk_conn_peer_addr(const qk_conn *c, qk_addr *out)
{
    *out = c->peer;
}

int qk_conn_peer_spki_sha256(const qk_conn *c, uint8_t out[32])
{
    if (!c || !out) return QK_ERR_INVALID_ARG;
    return c->tls ? qk_tls_peer_spki_sha256(c->tls, out) : QK_ERR_STATE;
}

int qk_conn_export_keying_material(const qk_conn *c, const char *label, const uint8_t *context,
                                   size_t context_len, uint8_t *out, size_t out_len)
{
    if (!c) return QK_ERR_INVALID_ARG;
    if (!c->handshake_complete) return QK_ERR_STATE;
    return qk_tls_export(c->tls, label, context, context_len, out, out_len);
}

bool qk_conn_established(const qk_conn *c)
{
    return c->handshake_complete && c->state == QK_CONN_ESTABLISHED;
}

bool qk_conn_handshake_confirmed(const qk_conn *c)
{
    return c->handshake_confirmed && c->state == QK_CONN_ESTABLISHED;
}

void qk_conn_set_user(qk_conn *c, void *user)
{
    c->user = user;
}

void *qk_conn_user(const qk_conn *c)
{
    return c->user;
}

void qk_conn_cc_probe(const qk_conn *c, qk_cc_probe *cc, qk_recovery_stats *rec,
                      uint64_t *bytes_in_flight)
{
    qk_cc_probe_get(&c->cc, cc);
    *rec = c->rec.stats;
    *bytes_in_flight = qk_recovery_bytes_in_flight(&c->rec);
}
