/* SPDX-License-Identifier: MIT */
/* Flow control applied to one connection. Receive side: flow.c's window
 * tuning for the connection's streams and its connection window (grow a
 * stream window when its MAX_STREAM_DATA goes out, keep the connection
 * window >= 1.5x the largest stream window (the streams' growth, not the
 * connection's, is charged to the endpoint budget), once per srtt let
 * unused windows shrink back and return their budget). Send side: the
 * memory the streams' send buffers hold, charged to the connection and the
 * endpoint budget, and the writers woken when room returns. */
#include "transport/conn/conn.h"

/* Copy the stream's receive-buffer offsets into its tuner. */
static void sync_stream(qk_stream *s)
{
    qk_flow_rx *fc = &s->fc;
    fc->consumed_bytes = s->recv.read_off;
    if (fc->received_bytes < s->recv.max_off) fc->received_bytes = s->recv.max_off;
    fc->held_bytes = s->recv.max_off - s->recv.read_off - qk_recvbuf_readable(&s->recv);
    if (fc->max_data_bytes < s->recv.limit) fc->max_data_bytes = s->recv.limit;
}

/* The connection window must admit the largest stream window and a half
 * (quic-go's rule, avoids the connection limit starving one fast stream). */
static void keep_conn_above(qk_conn *c, uint64_t stream_window_bytes)
{
    uint64_t want = stream_window_bytes + stream_window_bytes / 2;
    if (c->flow_rx.min_window_bytes < want) c->flow_rx.min_window_bytes = want;
    /* Not charged to the endpoint budget (conn.c init_feedback): the
     * streams' credit it covers is. */
    if (c->flow_rx.window_bytes < want && qk_flow_rx_raise(&c->flow_rx, want))
        c->pend |= QK_PEND_MAX_DATA;
}

void qk_conn_tune_stream_window(qk_conn *c, qk_stream *s, qk_time now)
{
    qk_flow_rx *fc = &s->fc;
    if (!fc->autotune) {
        /* Fixed window: still grant read_off + window as of now, not as of
         * the read that made the update due (RFC 9000 §4.2). */
        uint64_t limit = s->recv.read_off + s->recv_window_bytes;
        if (s->recv_window_bytes && limit > s->recv.limit) qk_recvbuf_set_limit(&s->recv, limit);
        return;
    }
    sync_stream(s);
    /* Windows are sized for the path's base RTT (flow.h, QK_FLOW_RTT_SLACK_NS). */
    fc->min_rtt_ns = c->flow_rx.min_rtt_ns = c->rtt.min_rtt_ns;
    fc->parent = &c->flow_rx;
    uint64_t limit = qk_flow_rx_update(fc, now, c->rtt.smoothed_rtt_ns);
    s->recv_window_bytes = fc->window_bytes;
    if (limit > s->recv.limit) qk_recvbuf_set_limit(&s->recv, limit);
    /* Credit committed to the peer: memory it may make us hold (RFC 9000 §4.1). */
    if (s->recv.limit - s->recv.read_off > c->stats.peak_stream_rx_credit_bytes)
        c->stats.peak_stream_rx_credit_bytes = s->recv.limit - s->recv.read_off;
    /* A larger window sees more gaps after a loss burst (one per lost packet):
     * the reassembly bound grows with it, about one gap per KiB of window. */
    qk_recvbuf_raise_max_ranges(&s->recv, (size_t)(fc->window_bytes >> 10));
    if (fc->window_bytes > c->stats.max_stream_rx_window_bytes)
        c->stats.max_stream_rx_window_bytes = fc->window_bytes;
    if (fc->window_bytes > c->stats.peak_stream_rx_window_bytes)
        c->stats.peak_stream_rx_window_bytes = fc->window_bytes;
    keep_conn_above(c, fc->window_bytes);
}

void qk_conn_flow_tick(qk_conn *c, qk_time now)
{
    qk_time srtt = c->rtt.smoothed_rtt_ns;
    if (!c->flow_rx.autotune || !srtt || now < c->flow_tick_ns) return;
    c->flow_tick_ns = now + srtt;
    c->flow_rx.min_rtt_ns = c->rtt.min_rtt_ns;
    uint64_t largest = 0, stream_credit = 0, held = 0;
    for (qk_stream *s = qk_streams_next(&c->streams, NULL); s;
         s = qk_streams_next(&c->streams, s)) {
        qk_flow_rx *fc = &s->fc;
        if (!fc->autotune) continue;
        sync_stream(s);
        stream_credit += s->recv.limit - s->recv.read_off;
        held += fc->held_bytes;
        /* An unused window stops being re-extended at its old size: the next
         * MAX_STREAM_DATA grants only the smaller window. */
        if (qk_flow_rx_tick(fc, now, srtt)) s->recv_window_bytes = fc->window_bytes;
        if (fc->window_bytes > largest) largest = fc->window_bytes;
    }
    c->stats.max_stream_rx_window_bytes = largest;
    c->flow_rx.held_bytes = held; /* behind gaps, as of this tick */
    c->flow_rx.min_window_bytes = largest + largest / 2;
    /* The streams' credit is already committed (the memory the peer may make
     * us hold is min(connection credit, sum of stream credit)): a connection
     * window below that sum only makes the streams' credit unusable, e.g.
     * 100 streams x 64 KiB behind a 256 KiB connection window. */
    if (c->flow_rx.window_bytes < stream_credit && qk_flow_rx_raise(&c->flow_rx, stream_credit))
        c->pend |= QK_PEND_MAX_DATA;
    qk_flow_rx_tick(&c->flow_rx, now, srtt);
}

/* ---- Send-side memory (buffer what the peer can take) ---- */

#define QK_WAKE_MIN_ROOM_BYTES (16u << 10) /* WRITABLE once this much fits */

static uint64_t held_of(const qk_stream *s)
{
    const qk_sendbuf *b = &s->send;
    if (s->send_state == QK_SEND_NONE || b->discarded || b->acked_off >= b->write_off) return 0;
    return b->write_off - b->acked_off;
}

static uint64_t unsent_of(const qk_stream *s)
{
    const qk_sendbuf *b = &s->send;
    if (s->send_state == QK_SEND_NONE || b->discarded || b->max_sent_off >= b->write_off) return 0;
    return b->write_off - b->max_sent_off;
}

void qk_conn_send_account(qk_conn *c, qk_stream *s)
{
    uint64_t held = held_of(s), unsent = unsent_of(s);
    qk_flow_budget *b = c->env.send_budget;
    c->send_unsent_bytes = c->send_unsent_bytes - s->send_unsent_charged + unsent;
    s->send_unsent_charged = unsent;
    if (held >= s->send_held_charged) {
        uint64_t d = held - s->send_held_charged;
        c->send_held_bytes += d;
        if (b && d) qk_flow_budget_charge(b, d);
    } else {
        uint64_t d = s->send_held_charged - held;
        c->send_held_bytes -= d;
        if (b) qk_flow_budget_release(b, d);
    }
    s->send_held_charged = held;
}

void qk_conn_send_release(qk_conn *c)
{
    if (c->env.send_budget) qk_flow_budget_release(c->env.send_budget, c->send_held_bytes);
    c->send_held_bytes = 0;
}

static uint64_t room_under(uint64_t limit, uint64_t used)
{
    return used >= limit ? 0 : limit - used;
}

size_t qk_conn_send_room(const qk_conn *c, const qk_stream *s, bool *capped)
{
    uint64_t own = qk_sendbuf_writable(&s->send), room = own;
    uint64_t la = c->cfg->send_credit_lookahead_bytes;
    if (la) {
        /* RFC 9000 §4.1: nothing past the peer's MAX_STREAM_DATA / MAX_DATA
         * can be sent; buffer at most that credit plus the lookahead. */
        uint64_t st = room_under(s->send_max_data + la, s->send.write_off);
        uint64_t cn = room_under(c->flow_tx.max_data_bytes + la,
                                 c->flow_tx.sent_bytes + c->send_unsent_bytes);
        if (st < room) room = st;
        if (cn < room) room = cn;
    }
    uint64_t cap = c->cfg->max_conn_send_buffer_bytes;
    if (cap && room_under(cap, c->send_held_bytes) < room)
        room = room_under(cap, c->send_held_bytes);
    if (c->env.send_budget && qk_flow_budget_room(c->env.send_budget) < room)
        room = qk_flow_budget_room(c->env.send_budget);
    /* A stream's first QK_STREAM_HEAD_BYTES pass the budgets (quack.h):
     * with every budget full of other streams' bulk data, the tunnel's
     * HTTP/3 server could not write a new CONNECT's 5-byte response and
     * answered it as a stranger (405), which ended the client (ten 5 MB
     * downloads through bench/tunnel.sh at 5 % loss: 6 of 20 batches). */
    if (s->send.write_off < QK_STREAM_HEAD_BYTES) {
        uint64_t head = QK_STREAM_HEAD_BYTES - s->send.write_off;
        if (head > own) head = own;
        if (head > room) room = head;
    }
    if (capped) *capped = room < own;
    return (size_t)room;
}

void qk_conn_wake_writers(qk_conn *c)
{
    if (!c->send_capped || c->state >= QK_CONN_CLOSING) return;
    bool waiting = false;
    for (qk_stream *s = qk_streams_next(&c->streams, NULL); s;
         s = qk_streams_next(&c->streams, s)) {
        if (!s->write_blocked || s->send_state == QK_SEND_RESET_SENT) continue;
        size_t room = qk_conn_send_room(c, s, NULL);
        size_t want = s->send.max_buffered_bytes / 4;
        if (want > QK_WAKE_MIN_ROOM_BYTES) want = QK_WAKE_MIN_ROOM_BYTES;
        if (room == 0 || room < want) {
            waiting = true;
            continue;
        }
        s->write_blocked = false;
        qk_event ev = {.type = QK_EV_STREAM_WRITABLE, .conn = c, .stream_id = s->id};
        qk_conn_push_event(c, &ev);
    }
    c->send_capped = waiting;
}
