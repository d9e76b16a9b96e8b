/* SPDX-License-Identifier: MIT */
/* yamux session: lifecycle, the receive path, and the stream API
 * (include/quack/yamux.h; hashicorp/yamux spec.md). Output and timers are in
 * yamux_send.c. */
#include "yamux/yamux_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/abi.h"

/* qk_yamux_config crosses the boundary at the caller's sizeof (base/abi.h):
 * the first release's ends with ping_timeout_ns. */
#define YAMUX_CONFIG_V1_BYTES QK_ABI_END(qk_yamux_config, ping_timeout_ns)
QK_ABI_LAST_FIELD(qk_yamux_config, ping_timeout_ns);

static void config_default(qk_yamux_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->initial_window_bytes = QK_YAMUX_INITIAL_WINDOW_BYTES;
    cfg->max_window_bytes = 16u << 20;
    cfg->budget_bytes = 64u << 20;
    cfg->send_buf_bytes = 256u << 10;
    cfg->accept_backlog = 256;
    cfg->max_streams = 1024;
    cfg->ping_interval_ns = QK_NS_PER_S;
    cfg->ping_timeout_ns = 30 * QK_NS_PER_S;
}

void qk_yamux_config_default_sized(qk_yamux_config *cfg, size_t cfg_bytes)
{
    qk_yamux_config d;
    config_default(&d);
    qk_abi_copy_out(cfg, cfg_bytes, &d, sizeof d);
}

static void fill_defaults(qk_yamux_config *c)
{
    qk_yamux_config d;
    config_default(&d);
    if (!c->initial_window_bytes) c->initial_window_bytes = d.initial_window_bytes;
    if (!c->max_window_bytes) c->max_window_bytes = d.max_window_bytes;
    if (!c->budget_bytes) c->budget_bytes = d.budget_bytes;
    if (!c->send_buf_bytes) c->send_buf_bytes = d.send_buf_bytes;
    if (!c->accept_backlog) c->accept_backlog = d.accept_backlog;
    if (!c->max_streams) c->max_streams = d.max_streams;
    if (!c->ping_interval_ns) c->ping_interval_ns = d.ping_interval_ns;
    if (!c->ping_timeout_ns) c->ping_timeout_ns = d.ping_timeout_ns;
    if (c->max_window_bytes < c->initial_window_bytes)
        c->max_window_bytes = c->initial_window_bytes;
}

int qk_yamux_new_sized(const qk_yamux_config *cfg, size_t cfg_bytes, qk_time now, qk_yamux **out)
{
    if (!out) return QK_ERR_INVALID_ARG;
    qk_yamux_config c = {0};
    if (cfg) {
        int rc = qk_abi_copy_in(&c, sizeof c, cfg, cfg_bytes, YAMUX_CONFIG_V1_BYTES);
        if (rc) return rc;
    }
    fill_defaults(&c);
    /* spec.md: the initial window is 256 KiB; a smaller one cannot be told
     * (WindowUpdate only adds). Deltas are 32-bit. */
    if (c.initial_window_bytes < QK_YAMUX_INITIAL_WINDOW_BYTES ||
        c.max_window_bytes > (UINT32_MAX >> 1) || c.max_streams > (1u << 20))
        return QK_ERR_INVALID_ARG;
    qk_yamux *s = calloc(1, sizeof *s);
    if (!s) return QK_ERR_NOMEM;
    s->cfg = c;
    s->streams = calloc(c.max_streams, sizeof *s->streams);
    s->backlog = calloc(c.accept_backlog, sizeof *s->backlog);
    if (!s->streams || !s->backlog) {
        qk_yamux_del(s);
        return QK_ERR_NOMEM;
    }
    s->next_id = c.server ? 2 : 1; /* spec.md "Stream Identifiers" */
    s->next_ping_ns = now;
    s->next_tick_ns = QK_TIME_INFINITE;
    qk_flow_budget_init(&s->budget, c.budget_bytes);
    *out = s;
    return 0;
}

static void stream_destroy(ystream *st)
{
    qk_flow_rx_free(&st->rx);
    qk_ybuf_free(&st->sbuf);
    qk_ybuf_free(&st->rbuf);
    free(st);
}

void qk_yamux_del(qk_yamux *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n_streams; i++) stream_destroy(s->streams[i]);
    free(s->streams);
    free(s->backlog);
    free(s);
}

static ystream *find(const qk_yamux *s, uint32_t id)
{
    for (size_t i = 0; i < s->n_streams; i++)
        if (s->streams[i]->id == id) return s->streams[i];
    return NULL;
}

static ystream *stream_new(qk_yamux *s, uint32_t id)
{
    if (s->n_streams >= s->cfg.max_streams) return NULL;
    ystream *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    st->id = id;
    qk_flow_rx_init(&st->rx, s->cfg.initial_window_bytes, s->cfg.max_window_bytes,
                    !s->cfg.fixed_window, &s->budget);
    st->rx.early_updates = !s->cfg.fixed_window && !s->cfg.half_window_updates;
    st->advertised_bytes = QK_YAMUX_INITIAL_WINDOW_BYTES; /* spec.md "Flow Control" */
    qk_flow_tx_init(&st->tx, QK_YAMUX_INITIAL_WINDOW_BYTES);
    st->slot = s->n_streams;
    s->streams[s->n_streams++] = st;
    if (s->next_tick_ns == QK_TIME_INFINITE) s->next_tick_ns = 0; /* shrink ticks run */
    return st;
}

void qk_yamux_stream_free(qk_yamux *s, ystream *st)
{
    if (st->ev_queued) { /* unlink from the event FIFO */
        ystream **pp = &s->ev_head, *prev = NULL;
        while (*pp && *pp != st) {
            prev = *pp;
            pp = &(*pp)->ev_next;
        }
        if (*pp) *pp = st->ev_next;
        if (s->ev_tail == st) s->ev_tail = prev;
    }
    if (st->in_backlog) { /* drop from the backlog ring, keeping the order */
        size_t cap = s->cfg.accept_backlog, k = 0;
        for (size_t i = 0; i < s->bl_len; i++) {
            ystream *b = s->backlog[(s->bl_head + i) % cap];
            if (b != st) s->backlog[(s->bl_head + k++) % cap] = b;
        }
        s->bl_len = k;
    }
    ystream *last = s->streams[--s->n_streams];
    s->streams[st->slot] = last;
    last->slot = st->slot;
    stream_destroy(st);
}

void qk_yamux_ev(qk_yamux *s, ystream *st, uint8_t bit)
{
    st->ev |= bit;
    if (st->ev_queued) return;
    st->ev_queued = true;
    st->ev_next = NULL;
    if (s->ev_tail)
        s->ev_tail->ev_next = st;
    else
        s->ev_head = st;
    s->ev_tail = st;
}

bool qk_yamux_ctrl(qk_yamux *s, uint8_t type, uint16_t flags, uint32_t sid, uint32_t len)
{
    if (s->ctrl_len == QK_YAMUX_CTRL_MAX) return false;
    size_t i = (s->ctrl_head + s->ctrl_len++) % QK_YAMUX_CTRL_MAX;
    qk_yamux_header_encode(s->ctrl[i], type, flags, sid, len);
    return true;
}

/* End the session: only GoAway(code) goes out after this (when code >= 0). */
void qk_yamux_fail(qk_yamux *s, int64_t code)
{
    if (s->dead) return;
    s->dead = true;
    s->close_code = code;
    s->closed_event_pending = true;
    s->ctrl_len = 0;
    if (code >= 0) qk_yamux_ctrl(s, YT_GO_AWAY, 0, 0, (uint32_t)code);
}

/* A control frame that must go out; a peer that makes us answer faster
 * than it reads is cut off (the ring is the bound). */
static bool ctrl_or_fail(qk_yamux *s, uint8_t type, uint16_t flags, uint32_t sid, uint32_t len)
{
    if (qk_yamux_ctrl(s, type, flags, sid, len)) return true;
    qk_yamux_fail(s, QK_YAMUX_GOAWAY_INTERNAL);
    return false;
}

static int protocol_error_at(qk_yamux *s, const char *why)
{
    if (!s->dead) s->why = why;
    qk_yamux_fail(s, QK_YAMUX_GOAWAY_PROTOCOL);
    return QK_ERR_PROTOCOL_VIOLATION;
}

static bool peer_parity(const qk_yamux *s, uint32_t id)
{
    return (id & 1) == (s->cfg.server ? 1u : 0u); /* client odd, server even */
}

/* A SYN from the peer: queue the stream for accept, or refuse it with RST
 * (GoAway sent, backlog full, stream limit). Sets *st (NULL = refused). */
static int on_syn(qk_yamux *s, uint32_t id, ystream **st)
{
    *st = NULL;
    /* spec.md "Stream Identifiers": the peer opens ids of its parity; one
     * alive is a duplicate. Ids may arrive out of order (hashicorp opens
     * streams from concurrent goroutines), so older ids are not refused. */
    if (!peer_parity(s, id)) return protocol_error_at(s, "SYN for a stream id of our parity");
    if (find(s, id)) return protocol_error_at(s, "SYN for a stream already open");
    if (id > s->max_peer_id) s->max_peer_id = id;
    if (!s->goaway_sent && s->bl_len < s->cfg.accept_backlog) *st = stream_new(s, id);
    if (!*st) {
        s->st.syns_refused++;
        /* Refused streams cost nothing but the RST; a peer that keeps
         * opening past the limits without us accepting any is flooding. */
        if (++s->refused_since_accept > s->cfg.max_streams)
            return protocol_error_at(s, "SYN flood: too many streams refused");
        return ctrl_or_fail(s, YT_WINDOW_UPDATE, YF_RST, id, 0) ? 0 : QK_ERR_LIMIT;
    }
    (*st)->in_backlog = true;
    s->backlog[(s->bl_head + s->bl_len++) % s->cfg.accept_backlog] = *st;
    s->incoming_pending = true;
    return 0;
}

/* The stream a Data / WindowUpdate frame is for (NULL: closed or refused). */
static int frame_stream(qk_yamux *s, uint32_t id, uint16_t flags, ystream **st)
{
    if (id == 0) return protocol_error_at(s, "stream frame on id 0"); /* the session's id */
    if (flags & YF_SYN) return on_syn(s, id, st);
    *st = find(s, id);
    if (*st) return 0;
    /* Frames for a stream we closed are dropped; for one never opened
     * they are a protocol error. */
    if (peer_parity(s, id) ? id > s->max_peer_id : id >= s->next_id)
        return protocol_error_at(s, "frame for a stream never opened");
    return 0;
}

static int on_window_update(qk_yamux *s, ystream *st, uint16_t flags, uint32_t delta)
{
    if (!st || st->reset) return 0;
    if (flags & YF_RST) {
        st->reset = true;
        qk_yamux_ev(s, st, YE_RESET);
        return 0;
    }
    qk_flow_tx_on_max(&st->tx, st->tx.max_data_bytes + delta);
    /* hashicorp keeps the send window in 32 bits: more is a broken peer. */
    if (qk_flow_tx_available(&st->tx) > UINT32_MAX)
        return protocol_error_at(s, "send window beyond 2^32-1");
    if (flags & YF_FIN) {
        st->fin_received = true;
        qk_yamux_ev(s, st, YE_READABLE);
    }
    return 0;
}

static int on_data_header(qk_yamux *s, ystream *st, uint16_t flags, uint32_t len)
{
    s->payload_left = len;
    s->payload_sid = 0;
    s->payload_flags = flags;
    if (!st || st->reset) return 0; /* drop the payload */
    if (flags & YF_RST) {
        st->reset = true;
        qk_yamux_ev(s, st, YE_RESET);
        return 0;
    }
    /* spec.md "Flow Control": the sender may not exceed the window; after
     * FIN no data may follow. */
    if (len && st->fin_received) return protocol_error_at(s, "data after FIN");
    if (qk_flow_rx_on_data(&st->rx, st->rx.received_bytes + len, NULL))
        return protocol_error_at(s, "data beyond the receive window");
    s->payload_sid = st->id;
    return 0;
}

/* The payload of a Data frame ended (or it had none). */
static void on_data_end(qk_yamux *s)
{
    if (!s->payload_sid || !(s->payload_flags & YF_FIN)) return;
    ystream *st = find(s, s->payload_sid);
    if (!st) return;
    st->fin_received = true;
    qk_yamux_ev(s, st, YE_READABLE);
}

static void on_pong(qk_yamux *s, uint32_t opaque, qk_time now)
{
    if (!s->ping_outstanding || opaque != s->ping_opaque) return; /* stale */
    s->ping_outstanding = false;
    qk_time rtt = now > s->ping_sent_ns ? now - s->ping_sent_ns : 1;
    s->st.pongs_received++;
    s->st.latest_rtt_ns = rtt;
    if (!s->st.min_rtt_ns || rtt < s->st.min_rtt_ns) s->st.min_rtt_ns = rtt;
    /* RFC 9002 §5.3 smoothing (no ACK delay in yamux). */
    s->st.srtt_ns = s->st.srtt_ns ? (7 * s->st.srtt_ns + rtt) / 8 : rtt;
}

static int on_session_frame(qk_yamux *s, uint8_t type, uint16_t flags, uint32_t id, uint32_t len,
                            qk_time now)
{
    if (id != 0) return protocol_error_at(s, "Ping/GoAway on a stream id"); /* spec.md: id 0 */
    if (type == YT_GO_AWAY) {
        if (!s->goaway_received) s->goaway_event_pending = true;
        s->goaway_received = true;
        s->goaway_code = len;
        return 0;
    }
    /* spec.md "Ping": SYN asks, ACK answers with the same opaque value. */
    if (flags & YF_SYN) return ctrl_or_fail(s, YT_PING, YF_ACK, 0, len) ? 0 : QK_ERR_LIMIT;
    if (flags & YF_ACK) {
        on_pong(s, len, now);
        return 0;
    }
    return protocol_error_at(s, "Ping without SYN or ACK");
}

static int on_header(qk_yamux *s, qk_time now)
{
    uint8_t type;
    uint16_t flags;
    uint32_t id, len;
    if (qk_yamux_header_decode(s->hdr, sizeof s->hdr, &type, &flags, &id, &len))
        return protocol_error_at(s, "bad version or frame type");
    if (type == YT_PING || type == YT_GO_AWAY)
        return on_session_frame(s, type, flags, id, len, now);
    ystream *st;
    int rc = frame_stream(s, id, flags, &st);
    if (rc || s->dead) return rc;
    if (type == YT_WINDOW_UPDATE) return on_window_update(s, st, flags, len);
    rc = on_data_header(s, st, flags, len);
    if (!rc && !len) on_data_end(s);
    return rc;
}

long qk_yamux_recv(qk_yamux *s, const uint8_t *buf, size_t len, qk_time now)
{
    if (!s || (!buf && len)) return QK_ERR_INVALID_ARG;
    if (s->dead) return QK_ERR_CLOSED;
    s->st.bytes_in += len;
    size_t off = 0;
    while (off < len) {
        if (s->payload_left) {
            size_t n = len - off < s->payload_left ? len - off : s->payload_left;
            ystream *st = s->payload_sid ? find(s, s->payload_sid) : NULL;
            if (st && !st->reset) {
                if (qk_ybuf_append(&st->rbuf, buf + off, n)) {
                    qk_yamux_fail(s, QK_YAMUX_GOAWAY_INTERNAL);
                    return QK_ERR_NOMEM;
                }
                qk_yamux_ev(s, st, YE_READABLE);
            }
            off += n;
            s->payload_left -= (uint32_t)n;
            if (!s->payload_left) on_data_end(s);
            continue;
        }
        size_t n = QK_YAMUX_HEADER_BYTES - s->hdr_len;
        if (n > len - off) n = len - off;
        memcpy(s->hdr + s->hdr_len, buf + off, n);
        s->hdr_len += n;
        off += n;
        if (s->hdr_len < QK_YAMUX_HEADER_BYTES) break;
        s->hdr_len = 0;
        int rc = on_header(s, now);
        if (rc)
            return s->dead && s->close_code == QK_YAMUX_GOAWAY_PROTOCOL ? QK_ERR_PROTOCOL_VIOLATION
                                                                        : rc;
        if (s->dead) return QK_ERR_CLOSED;
    }
    return (long)len;
}

static bool poll_event(qk_yamux *s, qk_yamux_event *ev)
{
    memset(ev, 0, sizeof *ev);
    if (s->closed_event_pending) {
        s->closed_event_pending = false;
        ev->type = QK_YAMUX_EV_CLOSED;
        ev->code = s->close_code;
        return true;
    }
    if (s->goaway_event_pending) {
        s->goaway_event_pending = false;
        ev->type = QK_YAMUX_EV_GOAWAY;
        ev->code = s->goaway_code;
        return true;
    }
    if (s->incoming_pending) {
        s->incoming_pending = false;
        if (s->bl_len) {
            ev->type = QK_YAMUX_EV_INCOMING;
            return true;
        }
    }
    ystream *st = s->ev_head;
    if (!st) return false;
    ev->stream_id = st->id;
    if (st->ev & YE_RESET) {
        ev->type = QK_YAMUX_EV_RESET;
        qk_yamux_stream_free(s, st); /* the application has been told */
        return true;
    }
    if (st->ev & YE_READABLE) {
        ev->type = QK_YAMUX_EV_READABLE;
        st->ev &= (uint8_t)~YE_READABLE;
    } else {
        ev->type = QK_YAMUX_EV_WRITABLE;
        st->ev &= (uint8_t)~YE_WRITABLE;
    }
    if (!st->ev) {
        s->ev_head = st->ev_next;
        if (!s->ev_head) s->ev_tail = NULL;
        st->ev_queued = false;
    }
    return true;
}

bool qk_yamux_poll_event_sized(qk_yamux *s, qk_yamux_event *ev, size_t ev_bytes)
{
    if (!s || !ev) return false;
    qk_yamux_event e;
    if (!poll_event(s, &e)) return false;
    qk_abi_copy_out(ev, ev_bytes, &e, sizeof e);
    return true;
}

int qk_yamux_open(qk_yamux *s, uint32_t *sid)
{
    if (!s || !sid) return QK_ERR_INVALID_ARG;
    if (s->dead || s->goaway_received) return QK_ERR_CLOSED;
    if (s->next_id > UINT32_MAX - 2) return QK_ERR_STREAM_LIMIT;
    ystream *st = stream_new(s, s->next_id);
    if (!st) return s->n_streams >= s->cfg.max_streams ? QK_ERR_STREAM_LIMIT : QK_ERR_NOMEM;
    s->next_id += 2;
    st->syn_pending = true; /* spec.md "Opening a stream": SYN on the first frame */
    s->st.streams_opened++;
    *sid = st->id;
    return 0;
}

int qk_yamux_accept(qk_yamux *s, uint32_t *sid)
{
    if (!s || !sid) return QK_ERR_INVALID_ARG;
    if (s->dead) return QK_ERR_CLOSED;
    if (!s->bl_len) return QK_ERR_AGAIN;
    ystream *st = s->backlog[s->bl_head];
    s->bl_head = (s->bl_head + 1) % s->cfg.accept_backlog;
    s->bl_len--;
    st->in_backlog = false;
    st->ack_pending = true; /* spec.md: the ACK flag accepts the stream */
    s->refused_since_accept = 0;
    s->st.streams_accepted++;
    *sid = st->id;
    return 0;
}

long qk_yamux_write(qk_yamux *s, uint32_t sid, const uint8_t *buf, size_t len, bool fin)
{
    if (!s || (!buf && len)) return QK_ERR_INVALID_ARG;
    if (s->dead) return QK_ERR_CLOSED;
    ystream *st = find(s, sid);
    if (!st) return QK_ERR_NOT_FOUND;
    if (st->reset) return QK_ERR_CLOSED;
    if (st->fin_requested) return QK_ERR_STATE;
    size_t room = s->cfg.send_buf_bytes > st->sbuf.len ? s->cfg.send_buf_bytes - st->sbuf.len : 0;
    size_t n = len < room ? len : room;
    if (qk_ybuf_append(&st->sbuf, buf, n)) return QK_ERR_NOMEM;
    if (n < len)
        st->want_writable = true;
    else if (fin)
        st->fin_requested = true; /* spec.md "Closing streams": FIN half-closes */
    return (long)n;
}

/* Both directions ended: FIN read by the application and ours framed. */
bool qk_yamux_maybe_done(qk_yamux *s, ystream *st)
{
    if (!st->fin_sent || !st->fin_delivered) return false;
    qk_yamux_stream_free(s, st);
    return true;
}

long qk_yamux_read(qk_yamux *s, uint32_t sid, uint8_t *buf, size_t cap, bool *fin)
{
    if (!s || (!buf && cap) || !fin) return QK_ERR_INVALID_ARG;
    *fin = false;
    if (s->dead) return QK_ERR_CLOSED;
    ystream *st = find(s, sid);
    if (!st) return QK_ERR_NOT_FOUND;
    if (st->reset) return QK_ERR_CLOSED;
    size_t n = qk_ybuf_take(&st->rbuf, buf, cap);
    qk_flow_rx_on_consumed(&st->rx, n);      /* credit returns with the next send */
    if (!st->rbuf.len && st->fin_received) { /* FIN is set once its frame's payload is in */
        *fin = true;
        st->fin_delivered = true;
        qk_yamux_maybe_done(s, st);
    } else if (!n) {
        return QK_ERR_AGAIN;
    }
    return (long)n;
}

int qk_yamux_reset(qk_yamux *s, uint32_t sid)
{
    if (!s) return QK_ERR_INVALID_ARG;
    ystream *st = find(s, sid);
    if (!st) return QK_ERR_NOT_FOUND;
    /* spec.md "Closing streams": RST ends both directions at once. */
    if (!s->dead && !st->reset) ctrl_or_fail(s, YT_WINDOW_UPDATE, YF_RST, sid, 0);
    qk_yamux_stream_free(s, st);
    return 0;
}

int qk_yamux_go_away(qk_yamux *s, uint32_t code)
{
    if (!s) return QK_ERR_INVALID_ARG;
    if (s->dead) return QK_ERR_CLOSED;
    if (s->goaway_sent) return QK_ERR_STATE;
    s->goaway_sent = true;
    ctrl_or_fail(s, YT_GO_AWAY, 0, 0, code); /* spec.md "GoAway" */
    return 0;
}

const char *qk_yamux_error_reason(const qk_yamux *s)
{
    return s && s->why ? s->why : "";
}

bool qk_yamux_is_closed(const qk_yamux *s)
{
    return !s || s->dead;
}

void qk_yamux_set_user(qk_yamux *s, void *user)
{
    if (s) s->user = user;
}

void *qk_yamux_user(const qk_yamux *s)
{
    return s ? s->user : NULL;
}

void qk_yamux_stats_get_sized(const qk_yamux *s, qk_yamux_stats *out, size_t out_bytes)
{
    if (!s || !out) return;
    qk_yamux_stats o = s->st;
    o.budget_used_bytes = s->budget.used_bytes;
    o.budget_peak_bytes = s->budget.peak_used_bytes;
    o.streams_alive = (uint32_t)s->n_streams;
    qk_abi_copy_out(out, out_bytes, &o, sizeof o);
}

int qk_yamux_stream_info_get_sized(const qk_yamux *s, uint32_t sid, qk_yamux_stream_info *caller,
                                   size_t caller_bytes)
{
    if (!s || !caller) return QK_ERR_INVALID_ARG;
    const ystream *st = find(s, sid);
    if (!st) return QK_ERR_NOT_FOUND;
    qk_yamux_stream_info info = {0}, *out = &info;
    out->recv_window_bytes = st->rx.window_bytes;
    out->recv_credit_bytes = st->advertised_bytes - st->rx.consumed_bytes;
    out->recv_buffered_bytes = st->rbuf.len;
    out->peak_credit_bytes = st->rx.peak_credit_bytes;
    out->send_window_bytes = qk_flow_tx_available(&st->tx);
    out->send_buffered_bytes = st->sbuf.len;
    out->window_grows = st->rx.grows;
    out->window_shrinks = st->rx.decays;
    out->delivery_rtt_bytes = (uint64_t)st->rx.last_rate_rtt_bytes;
    qk_abi_copy_out(caller, caller_bytes, &info, sizeof info);
    return 0;
}
