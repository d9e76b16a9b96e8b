/* SPDX-License-Identifier: MIT */
/* One QUIC stream: state machines of RFC 9000 §3 over the send and receive
 * buffers (see stream.h). */
#include "transport/streams/stream.h"

#include <quack/common.h>
#include <limits.h>
#include <string.h>

void qk_stream_init(qk_stream *s, uint64_t id, const qk_stream_params *p)
{
    memset(s, 0, sizeof *s);
    s->id = id;
    s->send_state = p->has_send ? QK_SEND_READY : QK_SEND_NONE;
    s->recv_state = p->has_recv ? QK_RECV_RECV : QK_RECV_NONE;
    qk_recvbuf_init(&s->recv, p->has_recv ? p->recv_max_data : 0, p->recv_max_ranges);
    qk_sendbuf_init(&s->send, p->has_send ? p->send_buffer_bytes : 0);
    s->send_max_data = p->send_max_data;
    s->recv_window_bytes = p->recv_max_data;
    qk_flow_rx_init(&s->fc, p->has_recv ? p->recv_max_data : 0, p->recv_max_window_bytes,
                    p->autotune && p->has_recv, p->budget);
    /* A loss burst leaves one gap per lost packet: admit about one gap per
     * KiB of window (conn_flow.c raises it as the window grows). */
    qk_recvbuf_raise_max_ranges(&s->recv, (size_t)((p->has_recv ? p->recv_max_data : 0) >> 10));
    s->fc.rule = (p->autotune_rule & 1) ? QK_FLOW_RULE_EPOCH : QK_FLOW_RULE_RTT2;
    s->fc.plain_doubling = (p->autotune_rule & 2) != 0;
    /* A stream's window must not lag the sender's slow start either: while
     * its delivery climbs it may reach 2x the sized target (flow.h). */
    s->fc.climb_doubling = true;
    s->urgency = QK_STREAM_DEFAULT_URGENCY;
    s->pend_list = p->pend_list;
}

static bool pend_linked(const qk_stream *s)
{
    return s->pend_list && (s->pend_prev || s->pend_list->head == s);
}

void qk_stream_set_pending(qk_stream *s, uint32_t flags)
{
    s->pending |= flags;
    if (!s->pending || !s->pend_list || pend_linked(s)) return;
    qk_stream_list *l = s->pend_list;
    s->pend_prev = NULL;
    s->pend_next = l->head;
    if (l->head) l->head->pend_prev = s;
    l->head = s;
    l->count++;
}

void qk_stream_clear_pending(qk_stream *s, uint32_t flags)
{
    s->pending &= ~flags;
    if (s->pending || !pend_linked(s)) return;
    qk_stream_list *l = s->pend_list;
    if (s->pend_prev)
        s->pend_prev->pend_next = s->pend_next;
    else
        l->head = s->pend_next;
    if (s->pend_next) s->pend_next->pend_prev = s->pend_prev;
    s->pend_prev = s->pend_next = NULL;
    l->count--;
}

void qk_stream_free(qk_stream *s)
{
    qk_stream_clear_pending(s, ~0u);
    qk_recvbuf_free(&s->recv);
    qk_sendbuf_free(&s->send);
    qk_flow_rx_free(&s->fc); /* returns budget */
}

/* ---- Receive side (RFC 9000 §3.2) ---- */

static bool recv_open(const qk_stream *s)
{
    return s->recv_state == QK_RECV_RECV || s->recv_state == QK_RECV_SIZE_KNOWN;
}

static void recv_update_state(qk_stream *s)
{
    if (s->recv_state == QK_RECV_RECV && s->recv.fin_known) {
        s->recv_state = QK_RECV_SIZE_KNOWN;
        /* RFC 9000 §3.2: no MAX_STREAM_DATA needed once the final size is known. */
        qk_stream_clear_pending(s, QK_STREAM_PEND_MAX_STREAM_DATA);
    }
    if (s->recv_state == QK_RECV_SIZE_KNOWN && qk_recvbuf_all_received(&s->recv)) {
        s->recv_state = QK_RECV_DATA_RECVD;
        qk_stream_clear_pending(s, QK_STREAM_PEND_STOP_SENDING);
    }
    if (s->recv_state == QK_RECV_DATA_RECVD && qk_recvbuf_fin_read(&s->recv)) {
        s->recv_state = QK_RECV_DATA_READ;
        qk_recvbuf_free(&s->recv);
    }
}

/* The peer is about to run out of credit (qk_flow_rx_credit_nearly_used:
 * its highest offset within an eighth of a window of the limit) while the
 * reads may stall behind a gap: let the tuner look now, not when the reads
 * catch up about an RTT later (under random loss that made every window
 * step take two RTTs in slow start). Once per limit; RFC 9000 §4.2 leaves
 * when to send MAX_STREAM_DATA to the receiver. */
static void credit_nearly_used(qk_stream *s)
{
    qk_flow_rx *fc = &s->fc;
    if (!fc->autotune || fc->plain_doubling || s->recv_state != QK_RECV_RECV) return;
    if (fc->hint_limit_bytes == s->recv.limit) return;
    /* fc->window_bytes mirrors s->recv_window_bytes while auto-tuning (conn_flow.c). */
    if (!qk_flow_rx_credit_nearly_used(fc, s->recv.limit, s->recv.max_off)) return;
    fc->hint_limit_bytes = s->recv.limit;
    qk_stream_set_pending(s, QK_STREAM_PEND_MAX_STREAM_DATA);
}

int qk_stream_on_stream(qk_stream *s, uint64_t off, const uint8_t *data, size_t len, bool fin)
{
    if (s->recv_state == QK_RECV_NONE) return QK_ERR_STREAM_STATE; /* RFC 9000 §19.8 */
    if (off > QK_STREAM_MAX_OFFSET || len > QK_STREAM_MAX_OFFSET - off) return QK_ERR_FLOW_CONTROL;
    if (s->recv_state == QK_RECV_RESET_RECVD || s->recv_state == QK_RECV_RESET_READ ||
        s->recv_state == QK_RECV_DATA_READ) {
        /* Data is discarded, but the final size still binds (RFC 9000 §4.5). */
        uint64_t end = off + len;
        if (end > s->recv.final_size || (fin && end != s->recv.final_size))
            return QK_ERR_FINAL_SIZE;
        return 0;
    }
    int rc = qk_recvbuf_insert(&s->recv, off, data, len, fin);
    if (rc) return rc;
    recv_update_state(s);
    credit_nearly_used(s);
    return 0;
}

int qk_stream_on_reset_stream(qk_stream *s, uint64_t app_error, uint64_t final_size)
{
    if (s->recv_state == QK_RECV_NONE) return QK_ERR_STREAM_STATE; /* RFC 9000 §19.4 */
    if (!recv_open(s)) {
        /* Already complete or reset: only the final size is checked (§4.5). */
        return final_size == s->recv.final_size ? 0 : QK_ERR_FINAL_SIZE;
    }
    int rc = qk_recvbuf_reset(&s->recv, final_size);
    if (rc) return rc;
    s->peer_reset_error = app_error;
    s->recv_state = QK_RECV_RESET_RECVD;
    qk_stream_clear_pending(s, QK_STREAM_PEND_MAX_STREAM_DATA | QK_STREAM_PEND_STOP_SENDING);
    return 0;
}

int qk_stream_on_stream_data_blocked(qk_stream *s, uint64_t limit)
{
    if (s->recv_state == QK_RECV_NONE) return QK_ERR_STREAM_STATE; /* RFC 9000 §19.13 */
    /* The peer has not seen our latest MAX_STREAM_DATA (lost): send it again. */
    if (s->recv_state == QK_RECV_RECV && s->recv.limit > limit)
        qk_stream_set_pending(s, QK_STREAM_PEND_MAX_STREAM_DATA);
    return 0;
}

int qk_stream_recv_stop(qk_stream *s, uint64_t app_error)
{
    if (s->recv_state == QK_RECV_NONE) return QK_ERR_STATE;
    if (!recv_open(s)) return 0; /* RFC 9000 §3.5: nothing left to stop */
    s->stop_error = app_error;
    qk_stream_set_pending(s, QK_STREAM_PEND_STOP_SENDING);
    return 0;
}

/* Re-grant stream credit as the application reads (RFC 9000 §4.2): once
 * less than half the window is left, move the limit to read_off + window. */
static void regrant_credit(qk_stream *s)
{
    if (s->recv_state != QK_RECV_RECV || !s->recv_window_bytes) return;
    uint64_t left = s->recv.limit - s->recv.read_off;
    if (left >= s->recv_window_bytes / 2) return;
    if (qk_recvbuf_set_limit(&s->recv, s->recv.read_off + s->recv_window_bytes) == 0)
        qk_stream_set_pending(s, QK_STREAM_PEND_MAX_STREAM_DATA);
}

long qk_stream_recv_read(qk_stream *s, uint8_t *dst, size_t cap)
{
    switch (s->recv_state) {
    case QK_RECV_NONE: return QK_ERR_STATE;
    case QK_RECV_RESET_RECVD: s->recv_state = QK_RECV_RESET_READ; return QK_ERR_CLOSED;
    case QK_RECV_RESET_READ: return QK_ERR_CLOSED;
    case QK_RECV_DATA_READ: return 0;
    default: break;
    }
    if (cap > (size_t)LONG_MAX) cap = (size_t)LONG_MAX;
    size_t n = qk_recvbuf_read(&s->recv, dst, cap);
    regrant_credit(s);
    recv_update_state(s);
    return (long)n;
}

bool qk_stream_read_done(const qk_stream *s)
{
    return s->recv_state == QK_RECV_DATA_READ || s->recv_state == QK_RECV_RESET_READ;
}

/* ---- Send side (RFC 9000 §3.1) ---- */

static bool send_open(const qk_stream *s)
{
    return s->send_state == QK_SEND_READY || s->send_state == QK_SEND_SEND ||
           s->send_state == QK_SEND_DATA_SENT;
}

/* RFC 9000 §3.1: only the Ready and Send states take new data. */
static bool takes_data(const qk_stream *s)
{
    return s->send_state == QK_SEND_READY || s->send_state == QK_SEND_SEND;
}

long qk_stream_send_write(qk_stream *s, const uint8_t *data, size_t len)
{
    if (!takes_data(s)) return QK_ERR_STATE;
    return qk_sendbuf_write(&s->send, data, len);
}

long qk_stream_send_write_ref(qk_stream *s, const uint8_t *data, size_t len)
{
    if (!takes_data(s)) return QK_ERR_STATE;
    return qk_sendbuf_write_ref(&s->send, data, len);
}

int qk_stream_finish(qk_stream *s)
{
    if (s->send_state == QK_SEND_NONE || s->send_state == QK_SEND_RESET_SENT ||
        s->send_state == QK_SEND_RESET_RECVD)
        return QK_ERR_STATE;
    qk_sendbuf_finish(&s->send);
    return 0;
}

int qk_stream_send_reset(qk_stream *s, uint64_t app_error)
{
    if (!send_open(s)) return QK_ERR_STATE;
    s->reset_error = app_error;
    /* RFC 9000 §4.5: the final size is the flow-control credit consumed. */
    s->reset_final_size = s->send.max_sent_off;
    qk_sendbuf_discard(&s->send);
    s->send_state = QK_SEND_RESET_SENT;
    qk_stream_clear_pending(s, QK_STREAM_PEND_STREAM_DATA_BLOCKED);
    qk_stream_set_pending(s, QK_STREAM_PEND_RESET_STREAM);
    return 0;
}

int qk_stream_on_stop_sending(qk_stream *s, uint64_t app_error)
{
    if (s->send_state == QK_SEND_NONE) return QK_ERR_STREAM_STATE; /* RFC 9000 §19.5 */
    s->peer_stopped = true;
    s->peer_stop_error = app_error;
    /* RFC 9000 §3.5: answer with RESET_STREAM (the peer's code) unless done. */
    if (send_open(s)) qk_stream_send_reset(s, app_error);
    return 0;
}

int qk_stream_on_max_stream_data(qk_stream *s, uint64_t max_data)
{
    if (s->send_state == QK_SEND_NONE) return QK_ERR_STREAM_STATE; /* RFC 9000 §19.10 */
    if (max_data > s->send_max_data) { /* §4.1: a smaller value is ignored */
        s->send_max_data = max_data;
        qk_stream_clear_pending(s, QK_STREAM_PEND_STREAM_DATA_BLOCKED);
    }
    return 0;
}

/* RFC 9000 §4.1: say STREAM_DATA_BLOCKED once per limit when data waits on credit. */
static void check_blocked(qk_stream *s)
{
    const qk_sendbuf *b = &s->send;
    if (b->write_off > s->send_max_data && b->sent_off >= s->send_max_data &&
        s->blocked_at != s->send_max_data) {
        s->blocked_at = s->send_max_data;
        qk_stream_set_pending(s, QK_STREAM_PEND_STREAM_DATA_BLOCKED);
    }
}

int qk_stream_next_range(qk_stream *s, size_t max_len, uint64_t *off, size_t *len, bool *fin)
{
    if (!send_open(s)) return 0;
    int rc = qk_sendbuf_next_range(&s->send, max_len, s->send_max_data, off, len, fin);
    if (!rc) check_blocked(s);
    return rc;
}

void qk_stream_on_sent(qk_stream *s, uint64_t off, size_t len, bool fin)
{
    if (!send_open(s)) return;
    qk_sendbuf_on_sent(&s->send, off, len, fin);
    if (s->send_state == QK_SEND_READY) s->send_state = QK_SEND_SEND;
    if (fin && s->send_state == QK_SEND_SEND) s->send_state = QK_SEND_DATA_SENT;
    check_blocked(s);
}

void qk_stream_on_acked(qk_stream *s, uint64_t off, size_t len, bool fin)
{
    if (s->send_state != QK_SEND_SEND && s->send_state != QK_SEND_DATA_SENT) return;
    qk_sendbuf_on_acked(&s->send, off, len, fin);
    if (qk_sendbuf_all_acked(&s->send)) {
        s->send_state = QK_SEND_DATA_RECVD;
        qk_sendbuf_discard(&s->send);
    }
}

void qk_stream_on_lost(qk_stream *s, uint64_t off, size_t len, bool fin)
{
    if (s->send_state != QK_SEND_SEND && s->send_state != QK_SEND_DATA_SENT) return;
    qk_sendbuf_on_lost(&s->send, off, len, fin);
}

void qk_stream_on_reset_acked(qk_stream *s)
{
    if (s->send_state != QK_SEND_RESET_SENT) return;
    s->send_state = QK_SEND_RESET_RECVD;
    qk_stream_clear_pending(s, QK_STREAM_PEND_RESET_STREAM);
}

void qk_stream_on_control_sent(qk_stream *s, uint32_t flag)
{
    qk_stream_clear_pending(s, flag);
}

void qk_stream_on_control_lost(qk_stream *s, uint32_t flag)
{
    bool again = false;
    switch (flag) {
    case QK_STREAM_PEND_MAX_STREAM_DATA: again = s->recv_state == QK_RECV_RECV; break;
    case QK_STREAM_PEND_STOP_SENDING: again = recv_open(s); break;
    case QK_STREAM_PEND_RESET_STREAM: again = s->send_state == QK_SEND_RESET_SENT; break;
    case QK_STREAM_PEND_STREAM_DATA_BLOCKED:
        again = (s->send_state == QK_SEND_READY || s->send_state == QK_SEND_SEND) &&
                s->blocked_at == s->send_max_data && s->send.write_off > s->send_max_data;
        break;
    default: break;
    }
    if (again) qk_stream_set_pending(s, flag);
}

void qk_stream_apply_priority(qk_stream *s, uint8_t urgency, bool incremental)
{
    s->urgency = urgency > 7 ? 7 : urgency; /* RFC 9218 §4.1 */
    s->incremental = incremental;
}

bool qk_stream_is_closed(const qk_stream *s)
{
    bool send_done = s->send_state == QK_SEND_NONE || s->send_state == QK_SEND_DATA_RECVD ||
                     s->send_state == QK_SEND_RESET_RECVD;
    bool recv_done = s->recv_state == QK_RECV_NONE || s->recv_state == QK_RECV_DATA_READ ||
                     s->recv_state == QK_RECV_RESET_READ;
    return send_done && recv_done;
}

const char *qk_send_state_name(qk_send_state st)
{
    static const char *const names[] = {"None",       "Ready",      "Send",       "Data Sent",
                                        "Data Recvd", "Reset Sent", "Reset Recvd"};
    return (unsigned)st < sizeof names / sizeof *names ? names[st] : "?";
}

const char *qk_recv_state_name(qk_recv_state st)
{
    static const char *const names[] = {"None",      "Recv",        "Size Known", "Data Recvd",
                                        "Data Read", "Reset Recvd", "Reset Read"};
    return (unsigned)st < sizeof names / sizeof *names ? names[st] : "?";
}
