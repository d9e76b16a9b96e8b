/* SPDX-License-Identifier: MIT */
/* Control frames, one row each: when the frame is owed, how it is written,
 * and what its acknowledgement or loss does (quinn's `Retransmits`,
 * msquic's send flags). Frames are rebuilt, not replayed: a lost control frame is not
 * replayed; its row marks it owed again and the writer rebuilds it with the
 * values current at send time.
 *
 * The data-carrying kinds (STREAM, CRYPTO, ACK, DATAGRAM) are written by
 * conn_send.c; their rows hold only the acked/lost handlers. */
#include <string.h>

#include "crypto/token.h"
#include "transport/conn/conn_tx.h"

typedef struct ctrl_row {
    /* Connection-level kinds: owed now (a reason to send a 1-RTT packet).
     * NULL: never a reason on its own. */
    bool (*owed)(const qk_conn *c);
    /* Connection-level kinds: write every owed instance that fits. */
    void (*write)(qk_tx_ctx *t, qk_tx_pkt *p);
    /* Per-stream kinds: write s's frame if owed; false when it did not fit. */
    bool (*write_stream)(qk_tx_ctx *t, qk_tx_pkt *p, qk_stream *s);
    void (*on_acked)(qk_conn *c, qk_pn_space space, const qk_sent_frame *f);
    void (*on_lost)(qk_conn *c, qk_pn_space space, const qk_sent_frame *f);
} ctrl_row;

/* Writes f and records r; false (nothing recorded) when f did not fit. */
static bool put(qk_tx_ctx *t, qk_tx_pkt *p, const qk_frame *f, const qk_sent_frame *r)
{
    if (!qk_tx_put_frame(t, p, f)) return false;
    if (r) qk_tx_record(p, r);
    return true;
}

/* ---- PING (keep-alive, RFC 9000 §10.1.2), HANDSHAKE_DONE (§19.20) ---- */

static bool ping_owed(const qk_conn *c)
{
    return c->pend & QK_PEND_PING;
}

static void ping_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    if (!ping_owed(c)) return;
    if (!put(t, p, &(qk_frame){.type = QK_FT_PING}, &(qk_sent_frame){.kind = QK_SF_PING})) return;
    c->pend &= ~QK_PEND_PING;
    c->stats.keep_alives_sent++;
}

static bool hsdone_owed(const qk_conn *c)
{
    return c->pend & QK_PEND_HANDSHAKE_DONE;
}

static void hsdone_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    if (!hsdone_owed(t->c)) return;
    if (put(t, p, &(qk_frame){.type = QK_FT_HANDSHAKE_DONE},
            &(qk_sent_frame){.kind = QK_SF_HANDSHAKE_DONE}))
        t->c->pend &= ~QK_PEND_HANDSHAKE_DONE;
}

static void hsdone_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    c->pend |= QK_PEND_HANDSHAKE_DONE;
}

/* ---- PATH_RESPONSE / PATH_CHALLENGE on the current path (RFC 9000 §8.2) ---- */

static bool presp_owed(const qk_conn *c)
{
    return c->paths.cur.response_due;
}

static void presp_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    if (!c->paths.cur.response_due) return;
    qk_frame f = {.type = QK_FT_PATH_RESPONSE};
    memcpy(f.u.path.data, c->paths.cur.response, 8);
    /* §8.2.2: never retransmitted, so not recorded. */
    if (put(t, p, &f, NULL)) c->paths.cur.response_due = false;
}

static bool pchal_owed(const qk_conn *c)
{
    return c->paths.cur.challenge_due;
}

static void pchal_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    if (!c->paths.cur.challenge_due) return;
    qk_frame f = {.type = QK_FT_PATH_CHALLENGE};
    memcpy(f.u.path.data, c->paths.cur.challenge, 8);
    if (!put(t, p, &f, &(qk_sent_frame){.kind = QK_SF_PATH_CHALLENGE})) return;
    qk_path_on_challenge_sent(&c->paths.cur, qk_conn_pto_ns(c), t->now);
    c->stats.path_challenges_sent++;
}

/* ---- MAX_DATA (RFC 9000 §19.9): connection credit ---- */

static bool maxdata_owed(const qk_conn *c)
{
    return (c->pend & QK_PEND_MAX_DATA) || qk_flow_rx_should_update(&c->flow_rx);
}

static void maxdata_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    if (!maxdata_owed(c)) return;
    uint64_t max = qk_flow_rx_update(&c->flow_rx, t->now, c->rtt.smoothed_rtt_ns);
    qk_frame f = {.type = QK_FT_MAX_DATA};
    f.u.max.max = max;
    if (put(t, p, &f, &(qk_sent_frame){.kind = QK_SF_MAX_DATA, .extra = max}))
        c->pend &= ~QK_PEND_MAX_DATA;
}

static void maxdata_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    c->pend |= QK_PEND_MAX_DATA;
}

/* ---- MAX_STREAMS / STREAMS_BLOCKED (RFC 9000 §19.11, §19.14) ---- */

static bool maxstreams_owed(const qk_conn *c, bool uni)
{
    uint64_t v;
    return qk_streams_want_max_streams(&c->streams, uni, &v);
}

static void maxstreams_write(qk_tx_ctx *t, qk_tx_pkt *p, bool uni)
{
    qk_conn *c = t->c;
    uint64_t v;
    if (!qk_streams_want_max_streams(&c->streams, uni, &v)) return;
    qk_frame f = {.type = uni ? QK_FT_MAX_STREAMS_UNI : QK_FT_MAX_STREAMS_BIDI};
    f.u.max.max = v;
    qk_sent_frame r = {.kind = uni ? QK_SF_MAX_STREAMS_UNI : QK_SF_MAX_STREAMS_BIDI, .extra = v};
    if (put(t, p, &f, &r)) qk_streams_on_max_streams_sent(&c->streams, uni);
}

static bool sblocked_owed(const qk_conn *c, bool uni)
{
    uint64_t v;
    return qk_streams_want_streams_blocked(&c->streams, uni, &v);
}

static void sblocked_write(qk_tx_ctx *t, qk_tx_pkt *p, bool uni)
{
    qk_conn *c = t->c;
    uint64_t v;
    if (!qk_streams_want_streams_blocked(&c->streams, uni, &v)) return;
    qk_frame f = {.type = uni ? QK_FT_STREAMS_BLOCKED_UNI : QK_FT_STREAMS_BLOCKED_BIDI};
    f.u.max.max = v;
    qk_sent_frame r = {.kind = uni ? QK_SF_STREAMS_BLOCKED_UNI : QK_SF_STREAMS_BLOCKED_BIDI,
                       .extra = v};
    if (put(t, p, &f, &r)) qk_streams_on_streams_blocked_sent(&c->streams, uni);
}

static bool maxsb_owed(const qk_conn *c)
{
    return maxstreams_owed(c, false);
}
static bool maxsu_owed(const qk_conn *c)
{
    return maxstreams_owed(c, true);
}
static bool sbb_owed(const qk_conn *c)
{
    return sblocked_owed(c, false);
}
static bool sbu_owed(const qk_conn *c)
{
    return sblocked_owed(c, true);
}
static void maxsb_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    maxstreams_write(t, p, false);
}
static void maxsu_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    maxstreams_write(t, p, true);
}
static void sbb_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    sblocked_write(t, p, false);
}
static void sbu_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    sblocked_write(t, p, true);
}
static void maxsb_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_streams_on_max_streams_lost(&c->streams, false, f->extra);
}
static void maxsu_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_streams_on_max_streams_lost(&c->streams, true, f->extra);
}
static void sbb_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_streams_on_streams_blocked_lost(&c->streams, false, f->extra);
}
static void sbu_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_streams_on_streams_blocked_lost(&c->streams, true, f->extra);
}

/* ---- ACK_FREQUENCY (ack-frequency-12 §4): ask the peer to ACK less often ---- */

static void pto_delay_changed(qk_conn *c)
{
    /* §7: PTO uses the largest delay that may be in effect; applied after the
     * ACK loop when acked (recovery.h: the sink does not call back). */
    c->defer_max_ack_delay = true;
}

static void ackfreq_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    qk_ackfreq_set_min_rtt(&c->af, c->rtt.min_rtt_ns);
    qk_ackfreq_on_congestion(&c->af, c->cc.congestion_events, c->rtt.smoothed_rtt_ns);
    qk_ackfreq_update(&c->af, c->cc.cwnd_bytes, c->max_udp_bytes, c->rtt.smoothed_rtt_ns,
                      c->cc.state == QK_CC_SLOW_START, QK_RECOVERY_PACKET_THRESHOLD, t->now);
    qk_ackfreq_req r;
    if (!qk_ackfreq_poll(&c->af, &r)) return;
    qk_frame f = {.type = QK_FT_ACK_FREQUENCY};
    f.u.ack_frequency.seq = r.seq;
    f.u.ack_frequency.ack_eliciting_threshold = r.threshold;
    f.u.ack_frequency.request_max_ack_delay_us = r.max_delay_ns / QK_NS_PER_US;
    f.u.ack_frequency.reordering_threshold = r.reordering_threshold;
    if (!put(t, p, &f, &(qk_sent_frame){.kind = QK_SF_ACK_FREQUENCY, .id = r.seq})) return;
    qk_ackfreq_on_sent(&c->af, &r, t->now);
    c->stats.ack_frequency_frames_sent++;
    qk_recovery_set_max_ack_delay(
        &c->rec, qk_ackfreq_pto_delay(&c->af, c->peer_tp.max_ack_delay_ms * QK_NS_PER_MS), t->now);
}

static void ackfreq_acked(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_ackfreq_on_acked(&c->af, f->id);
    pto_delay_changed(c);
}

static void ackfreq_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_ackfreq_on_lost(&c->af, f->id);
}

/* ---- DATA_BLOCKED (RFC 9000 §4.1, §19.12): data waits for connection credit ---- */

/* Data waits for connection credit: a scheduled stream, or one in the
 * scheduler's credit-blocked set (it returns with MAX_DATA; with pulled
 * bodies nothing else re-queues it meanwhile). */
static bool data_waiting(const qk_conn *c)
{
    return !qk_sched_empty(&c->sched) || qk_sched_credit_blocked(&c->sched);
}

static bool dblocked_owed(const qk_conn *c)
{
    return qk_flow_tx_blocked_pending(&c->flow_tx, data_waiting(c), NULL);
}

static void dblocked_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    uint64_t limit;
    if (!qk_flow_tx_blocked_pending(&c->flow_tx, data_waiting(c), &limit)) return;
    qk_frame f = {.type = QK_FT_DATA_BLOCKED};
    f.u.max.max = limit;
    if (put(t, p, &f, &(qk_sent_frame){.kind = QK_SF_DATA_BLOCKED, .extra = limit})) {
        qk_flow_tx_on_blocked_sent(&c->flow_tx, limit);
        c->stats.data_blocked_sent++;
    }
}

static void dblocked_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_flow_tx_on_blocked_lost(&c->flow_tx, f->extra);
}

/* ---- NEW_CONNECTION_ID / RETIRE_CONNECTION_ID (RFC 9000 §5.1) ---- */

static bool newcid_owed(const qk_conn *c)
{
    for (size_t i = 0; i < QK_CONN_MAX_LOCAL_CIDS; i++)
        if (c->cids.lcid[i].active && c->cids.lcid[i].send_pending) return true;
    return false;
}

static void newcid_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    /* §5.1.1: up to the peer's active_connection_id_limit (cid.c issues them). */
    for (size_t i = 0; i < QK_CONN_MAX_LOCAL_CIDS; i++) {
        qk_local_cid *l = &c->cids.lcid[i];
        if (!l->active || !l->send_pending) continue;
        qk_frame f = {.type = QK_FT_NEW_CONNECTION_ID};
        f.u.new_cid.seq = l->seq;
        f.u.new_cid.cid = l->cid.b;
        f.u.new_cid.cid_len = l->cid.len;
        f.u.new_cid.reset_token = l->reset_token;
        if (!put(t, p, &f, &(qk_sent_frame){.kind = QK_SF_NEW_CONNECTION_ID, .id = l->seq})) return;
        l->send_pending = false;
    }
}

static void newcid_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    for (size_t j = 0; j < QK_CONN_MAX_LOCAL_CIDS; j++)
        if (c->cids.lcid[j].active && c->cids.lcid[j].seq == f->id)
            c->cids.lcid[j].send_pending = true;
}

static bool retire_owed(const qk_conn *c)
{
    for (size_t i = 0; i < c->cids.n_retiring; i++)
        if (!c->cids.retiring[i].sent) return true;
    return false;
}

static void retire_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    for (size_t i = 0; i < c->cids.n_retiring; i++) {
        qk_retiring_cid *r = &c->cids.retiring[i];
        if (r->sent) continue;
        qk_frame f = {.type = QK_FT_RETIRE_CONNECTION_ID};
        f.u.retire_cid.seq = r->seq;
        if (!put(t, p, &f, &(qk_sent_frame){.kind = QK_SF_RETIRE_CONNECTION_ID, .id = r->seq}))
            return;
        r->sent = true; /* forgotten once acknowledged (§5.1.2) */
    }
}

static void retire_acked(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_cid_on_retire_acked(c, f->id);
}

static void retire_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_cid_on_retire_lost(c, f->id);
}

/* ---- NEW_TOKEN (RFC 9000 §8.1.3): the server's token for the next connection ---- */

static bool token_owed(const qk_conn *c)
{
    return c->is_server && (c->pend & QK_PEND_NEW_TOKEN);
}

static void token_write(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_conn *c = t->c;
    if (!token_owed(c)) return;
    uint8_t tok[QK_ADDR_TOKEN_MAX_BYTES];
    int n = qk_conn_env_mint_token(c, &c->peer, t->now, tok, sizeof tok);
    if (n <= 0) {
        c->pend &= ~QK_PEND_NEW_TOKEN;
        return;
    }
    qk_frame f = {.type = QK_FT_NEW_TOKEN};
    f.u.new_token.token = tok;
    f.u.new_token.len = (size_t)n;
    if (put(t, p, &f, &(qk_sent_frame){.kind = QK_SF_NEW_TOKEN})) c->pend &= ~QK_PEND_NEW_TOKEN;
}

static void token_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    c->pend |= QK_PEND_NEW_TOKEN;
}

/* ---- per-stream control frames (RFC 9000 §19.4, §19.5, §19.10, §19.13) ---- */

static bool put_stream_ctrl(qk_tx_ctx *t, qk_tx_pkt *p, qk_stream *s, unsigned bit,
                            const qk_frame *f, const qk_sent_frame *r)
{
    if (!(s->pending & bit)) return true;
    if (!put(t, p, f, r)) return false;
    qk_stream_on_control_sent(s, bit);
    return true;
}

static bool msd_write(qk_tx_ctx *t, qk_tx_pkt *p, qk_stream *s)
{
    if (!(s->pending & QK_STREAM_PEND_MAX_STREAM_DATA)) return true;
    qk_conn_tune_stream_window(t->c, s, t->now);
    qk_frame f = {.type = QK_FT_MAX_STREAM_DATA};
    f.u.stream_max.stream_id = s->id;
    f.u.stream_max.max = s->recv.limit;
    qk_sent_frame r = {.kind = QK_SF_MAX_STREAM_DATA, .id = s->id, .extra = s->recv.limit};
    return put_stream_ctrl(t, p, s, QK_STREAM_PEND_MAX_STREAM_DATA, &f, &r);
}

static bool sdb_write(qk_tx_ctx *t, qk_tx_pkt *p, qk_stream *s)
{
    qk_frame f = {.type = QK_FT_STREAM_DATA_BLOCKED};
    f.u.stream_max.stream_id = s->id;
    f.u.stream_max.max = s->send_max_data;
    qk_sent_frame r = {.kind = QK_SF_STREAM_DATA_BLOCKED, .id = s->id, .extra = s->send_max_data};
    return put_stream_ctrl(t, p, s, QK_STREAM_PEND_STREAM_DATA_BLOCKED, &f, &r);
}

static bool reset_write(qk_tx_ctx *t, qk_tx_pkt *p, qk_stream *s)
{
    qk_frame f = {.type = QK_FT_RESET_STREAM};
    f.u.reset_stream.stream_id = s->id;
    f.u.reset_stream.app_error = s->reset_error;
    f.u.reset_stream.final_size = s->reset_final_size;
    qk_sent_frame r = {.kind = QK_SF_RESET_STREAM, .id = s->id};
    return put_stream_ctrl(t, p, s, QK_STREAM_PEND_RESET_STREAM, &f, &r);
}

static bool stop_write(qk_tx_ctx *t, qk_tx_pkt *p, qk_stream *s)
{
    qk_frame f = {.type = QK_FT_STOP_SENDING};
    f.u.stop_sending.stream_id = s->id;
    f.u.stop_sending.app_error = s->stop_error;
    qk_sent_frame r = {.kind = QK_SF_STOP_SENDING, .id = s->id};
    return put_stream_ctrl(t, p, s, QK_STREAM_PEND_STOP_SENDING, &f, &r);
}

static void stream_ctrl_lost(qk_conn *c, const qk_sent_frame *f, unsigned bit)
{
    qk_stream *s = qk_streams_get(&c->streams, f->id);
    if (s) qk_stream_on_control_lost(s, bit);
}

static void msd_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    stream_ctrl_lost(c, f, QK_STREAM_PEND_MAX_STREAM_DATA);
}
static void sdb_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    stream_ctrl_lost(c, f, QK_STREAM_PEND_STREAM_DATA_BLOCKED);
}
static void reset_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    stream_ctrl_lost(c, f, QK_STREAM_PEND_RESET_STREAM);
}
static void stop_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    stream_ctrl_lost(c, f, QK_STREAM_PEND_STOP_SENDING);
}

static void reset_acked(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_stream *s = qk_streams_get(&c->streams, f->id);
    if (!s) return;
    qk_stream_on_reset_acked(s);
    qk_conn_forget_if_closed(c, s);
}

/* ---- data-carrying kinds (written in conn_send.c) ---- */

static void stream_acked(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_stream *s = qk_streams_get(&c->streams, f->id);
    if (!s) return;
    uint64_t acked_before = s->send.acked_off;
    qk_stream_on_acked(s, f->offset, f->length, f->fin);
    if (s->notify_acked && s->send.acked_off > acked_before) qk_conn_note_acked(c, s);
    qk_conn_send_account(c, s);
    qk_conn_notify_writable(c, s);
    qk_conn_forget_if_closed(c, s);
}

static void stream_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_stream *s = qk_streams_get(&c->streams, f->id);
    if (!s) return;
    qk_stream_on_lost(s, f->offset, f->length, f->fin);
    qk_conn_schedule_stream(c, s);
}

static void crypto_acked(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_sendbuf_on_acked(&c->sp[space].crypto_send, f->offset, f->length, false);
}

static void crypto_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    if (!c->sp[space].discarded)
        qk_sendbuf_on_lost(&c->sp[space].crypto_send, f->offset, f->length, false);
}

static void ack_acked(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    qk_ack_on_ack_frame_acked(&c->sp[space].ack, f->extra); /* RFC 9000 §13.2.4 */
}

/* A DATAGRAM frame of qk_datagram_send_ex (id != 0) was acknowledged or
 * lost: the application hears which. RFC 9221 §5.2: never retransmitted. */
static void datagram_event(qk_conn *c, const qk_sent_frame *f, qk_event_type type)
{
    if (!f->id) return;
    qk_conn_push_event(c, &(qk_event){.type = type, .conn = c, .datagram_id = f->id});
}

static void datagram_acked(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    (void)space;
    datagram_event(c, f, QK_EV_DATAGRAM_ACKED);
}

static void datagram_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    (void)space;
    datagram_event(c, f, QK_EV_DATAGRAM_LOST);
}

/* Kinds whose row has no on_lost (PATH_CHALLENGE, PATH_RESPONSE, PING) and
 * kinds without a row (IMMEDIATE_ACK, CONNECTION_CLOSE) are never
 * retransmitted, nor is DATAGRAM (its loss is only reported): RFC 9000
 * §13.3 (a new PATH_CHALLENGE is path.c's retry), RFC 9221 §5.2,
 * ack-frequency-12 §5. */
static const ctrl_row rows[QK_SF_OTHER + 1] = {
    [QK_SF_STREAM] = {.on_acked = stream_acked, .on_lost = stream_lost},
    [QK_SF_CRYPTO] = {.on_acked = crypto_acked, .on_lost = crypto_lost},
    [QK_SF_ACK] = {.on_acked = ack_acked},
    [QK_SF_RESET_STREAM] = {.write_stream = reset_write,
                            .on_acked = reset_acked,
                            .on_lost = reset_lost},
    [QK_SF_STOP_SENDING] = {.write_stream = stop_write, .on_lost = stop_lost},
    [QK_SF_MAX_DATA] = {.owed = maxdata_owed, .write = maxdata_write, .on_lost = maxdata_lost},
    [QK_SF_MAX_STREAM_DATA] = {.write_stream = msd_write, .on_lost = msd_lost},
    [QK_SF_MAX_STREAMS_BIDI] = {.owed = maxsb_owed, .write = maxsb_write, .on_lost = maxsb_lost},
    [QK_SF_MAX_STREAMS_UNI] = {.owed = maxsu_owed, .write = maxsu_write, .on_lost = maxsu_lost},
    [QK_SF_DATA_BLOCKED] = {.owed = dblocked_owed,
                            .write = dblocked_write,
                            .on_lost = dblocked_lost},
    [QK_SF_STREAM_DATA_BLOCKED] = {.write_stream = sdb_write, .on_lost = sdb_lost},
    [QK_SF_STREAMS_BLOCKED_BIDI] = {.owed = sbb_owed, .write = sbb_write, .on_lost = sbb_lost},
    [QK_SF_STREAMS_BLOCKED_UNI] = {.owed = sbu_owed, .write = sbu_write, .on_lost = sbu_lost},
    [QK_SF_NEW_CONNECTION_ID] = {.owed = newcid_owed,
                                 .write = newcid_write,
                                 .on_lost = newcid_lost},
    [QK_SF_RETIRE_CONNECTION_ID] = {.owed = retire_owed,
                                    .write = retire_write,
                                    .on_acked = retire_acked,
                                    .on_lost = retire_lost},
    [QK_SF_NEW_TOKEN] = {.owed = token_owed, .write = token_write, .on_lost = token_lost},
    [QK_SF_PATH_CHALLENGE] = {.owed = pchal_owed, .write = pchal_write},
    [QK_SF_PATH_RESPONSE] = {.owed = presp_owed, .write = presp_write},
    [QK_SF_HANDSHAKE_DONE] = {.owed = hsdone_owed, .write = hsdone_write, .on_lost = hsdone_lost},
    [QK_SF_PING] = {.owed = ping_owed, .write = ping_write},
    [QK_SF_DATAGRAM] = {.on_acked = datagram_acked, .on_lost = datagram_lost},
    [QK_SF_ACK_FREQUENCY] = {.write = ackfreq_write,
                             .on_acked = ackfreq_acked,
                             .on_lost = ackfreq_lost},
};

/* The order connection-level frames go into a packet. */
static const uint8_t conn_order[] = {
    QK_SF_PING,
    QK_SF_HANDSHAKE_DONE,
    QK_SF_PATH_RESPONSE,
    QK_SF_PATH_CHALLENGE,
    QK_SF_MAX_DATA,
    QK_SF_MAX_STREAMS_BIDI,
    QK_SF_STREAMS_BLOCKED_BIDI,
    QK_SF_MAX_STREAMS_UNI,
    QK_SF_STREAMS_BLOCKED_UNI,
    QK_SF_ACK_FREQUENCY,
    QK_SF_DATA_BLOCKED,
    QK_SF_NEW_CONNECTION_ID,
    QK_SF_RETIRE_CONNECTION_ID,
    QK_SF_NEW_TOKEN,
};

static const uint8_t stream_order[] = {QK_SF_MAX_STREAM_DATA, QK_SF_STREAM_DATA_BLOCKED,
                                       QK_SF_RESET_STREAM, QK_SF_STOP_SENDING};

bool qk_ctrl_conn_pending(const qk_conn *c)
{
    for (size_t i = 0; i < sizeof conn_order; i++) {
        const ctrl_row *r = &rows[conn_order[i]];
        if (r->owed && r->owed(c)) return true;
    }
    return false;
}

void qk_ctrl_write_conn(qk_tx_ctx *t, qk_tx_pkt *p)
{
    for (size_t i = 0; i < sizeof conn_order; i++) rows[conn_order[i]].write(t, p);
}

void qk_ctrl_write_streams(qk_tx_ctx *t, qk_tx_pkt *p)
{
    qk_stream *s = qk_streams_pending_head(&t->c->streams);
    while (s) {
        qk_stream *next = s->pend_next;
        for (size_t i = 0; i < sizeof stream_order; i++)
            if (!rows[stream_order[i]].write_stream(t, p, s)) return;
        s = next;
    }
}

void qk_ctrl_on_acked(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    if (f->kind <= QK_SF_OTHER && rows[f->kind].on_acked) rows[f->kind].on_acked(c, space, f);
}

void qk_ctrl_on_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f)
{
    if (f->kind <= QK_SF_OTHER && rows[f->kind].on_lost) rows[f->kind].on_lost(c, space, f);
}
