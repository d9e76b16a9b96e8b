/* SPDX-License-Identifier: MIT */
/* yamux session output (frames within the peer's windows) and timers. */
#include "yamux/yamux_int.h"

#include <string.h>

/* Largest Data frame written at once: streams take turns per frame. */
#define QK_YAMUX_QUANTUM_BYTES (64u << 10)
/* Shrink checks at least this far apart (and at least one srtt). */
#define QK_YAMUX_TICK_MIN_NS (10 * QK_NS_PER_MS)

/* A WindowUpdate is due: less than half the window is left to the peer
 * (flow.c's threshold, the same as hashicorp's delta >= max / 2), or a
 * larger initial window has not been told yet. */
static bool wu_due(const ystream *st)
{
    if (st->fin_received || st->reset || st->in_backlog) return false;
    return qk_flow_rx_should_update(&st->rx) || st->rx.max_data_bytes > st->advertised_bytes;
}

/* The credit to grant now: the flow controller (auto-tuning) sets the new
 * limit; the frame carries the difference (spec.md "Flow Control": the
 * length of a WindowUpdate is a delta). */
static uint32_t take_delta(qk_yamux *s, ystream *st, qk_time now)
{
    st->rx.min_rtt_ns = s->st.min_rtt_ns;
    uint64_t limit = st->rx.max_data_bytes;
    if (qk_flow_rx_should_update(&st->rx)) limit = qk_flow_rx_update(&st->rx, now, s->st.srtt_ns);
    uint64_t delta = limit - st->advertised_bytes;
    st->advertised_bytes = limit;
    return (uint32_t)delta; /* <= max window < 2^31 */
}

static void sent_data(qk_yamux *s, ystream *st, size_t n)
{
    qk_flow_tx_on_sent(&st->tx, n);
    qk_ybuf_take(&st->sbuf, NULL, n);
    if (st->want_writable && 2 * st->sbuf.len <= s->cfg.send_buf_bytes) {
        st->want_writable = false;
        qk_yamux_ev(s, st, YE_WRITABLE);
    }
}

/* One stream's frames: a Data frame (with SYN/ACK riding on it) and/or a
 * WindowUpdate (credit, FIN, or the flags alone). Returns the bytes written.
 * FIN never rides on a Data frame with payload: hashicorp/yamux as Debian
 * ships it (git20190923, stream.go readData) applies a frame's flags before
 * it buffers the payload, so a reader that wakes in between sees EOF and
 * the frame's payload is lost (seen: a 64-stream echo came back 59271 bytes
 * short). hashicorp's own Close sends FIN on a WindowUpdate; so do we. */
static size_t emit_stream(qk_yamux *s, ystream *st, uint8_t *out, size_t room, qk_time now)
{
    if (st->in_backlog || st->reset || room < QK_YAMUX_HEADER_BYTES) return 0;
    uint16_t flags = (st->syn_pending ? YF_SYN : 0) | (st->ack_pending ? YF_ACK : 0);
    uint64_t avail = qk_flow_tx_available(&st->tx);
    size_t n = st->sbuf.len;
    if (n > avail) n = (size_t)avail;
    if (n > room - QK_YAMUX_HEADER_BYTES) n = room - QK_YAMUX_HEADER_BYTES;
    if (n > QK_YAMUX_QUANTUM_BYTES) n = QK_YAMUX_QUANTUM_BYTES;
    size_t used = 0;
    if (n) {
        qk_yamux_header_encode(out, YT_DATA, flags, st->id, (uint32_t)n);
        memcpy(out + QK_YAMUX_HEADER_BYTES, st->sbuf.data + st->sbuf.off, n);
        used = QK_YAMUX_HEADER_BYTES + n;
        sent_data(s, st, n);
        st->syn_pending = st->ack_pending = false;
        flags = 0;
    }
    bool fin = st->fin_requested && !st->fin_sent && !st->sbuf.len;
    bool due = wu_due(st);
    if ((due || flags || fin) && room - used >= QK_YAMUX_HEADER_BYTES) {
        uint32_t delta = due ? take_delta(s, st, now) : 0;
        qk_yamux_header_encode(out + used, YT_WINDOW_UPDATE, flags | (fin ? YF_FIN : 0), st->id,
                               delta);
        used += QK_YAMUX_HEADER_BYTES;
        st->syn_pending = st->ack_pending = false;
        st->fin_sent = st->fin_sent || fin;
    }
    return used;
}

static size_t emit_streams(qk_yamux *s, uint8_t *out, size_t max, qk_time now)
{
    size_t used = 0;
    for (;;) {
        bool progress = false;
        size_t n = s->n_streams;
        for (size_t k = 0; k < n && max - used >= QK_YAMUX_HEADER_BYTES; k++) {
            size_t w = emit_stream(s, s->streams[(s->rr + k) % n], out + used, max - used, now);
            used += w;
            progress = progress || w;
        }
        s->rr++;
        if (!progress || max - used < QK_YAMUX_HEADER_BYTES) break;
    }
    for (size_t i = s->n_streams; i-- > 0;) qk_yamux_maybe_done(s, s->streams[i]);
    return used;
}

size_t qk_yamux_send(qk_yamux *s, uint8_t *out, size_t max, qk_time now)
{
    if (!s || !out) return 0;
    size_t used = 0;
    while (s->ctrl_len && max - used >= QK_YAMUX_HEADER_BYTES) {
        memcpy(out + used, s->ctrl[s->ctrl_head], QK_YAMUX_HEADER_BYTES);
        s->ctrl_head = (s->ctrl_head + 1) % QK_YAMUX_CTRL_MAX;
        s->ctrl_len--;
        used += QK_YAMUX_HEADER_BYTES;
    }
    if (!s->dead && s->n_streams) used += emit_streams(s, out + used, max - used, now);
    s->st.bytes_out += used;
    return used;
}

bool qk_yamux_want_send(const qk_yamux *s)
{
    if (!s) return false;
    if (s->ctrl_len) return true;
    if (s->dead) return false;
    for (size_t i = 0; i < s->n_streams; i++) {
        const ystream *st = s->streams[i];
        if (st->in_backlog || st->reset) continue;
        if (st->syn_pending || st->ack_pending || wu_due(st)) return true;
        if (st->sbuf.len && qk_flow_tx_available(&st->tx)) return true;
        if (st->fin_requested && !st->fin_sent && !st->sbuf.len) return true;
    }
    return false;
}

int qk_yamux_ping(qk_yamux *s, qk_time now)
{
    if (!s) return QK_ERR_INVALID_ARG;
    if (s->dead) return QK_ERR_CLOSED;
    if (s->ping_outstanding) return QK_ERR_AGAIN;
    /* spec.md "Ping": SYN with an opaque value the answer echoes. */
    if (!qk_yamux_ctrl(s, YT_PING, YF_SYN, 0, s->ping_opaque + 1)) return QK_ERR_LIMIT;
    s->ping_opaque++;
    s->ping_outstanding = true;
    s->ping_sent_ns = now;
    s->st.pings_sent++;
    return 0;
}

qk_time qk_yamux_next_timeout(const qk_yamux *s)
{
    if (!s || s->dead) return QK_TIME_INFINITE;
    qk_time t = s->next_ping_ns;
    if (s->ping_outstanding && s->ping_sent_ns + s->cfg.ping_timeout_ns < t)
        t = s->ping_sent_ns + s->cfg.ping_timeout_ns;
    if (!s->cfg.fixed_window && s->n_streams && s->next_tick_ns < t) t = s->next_tick_ns;
    return t;
}

void qk_yamux_on_timeout(qk_yamux *s, qk_time now)
{
    if (!s || s->dead) return;
    if (s->ping_outstanding && now - s->ping_sent_ns >= s->cfg.ping_timeout_ns) {
        qk_yamux_fail(s, QK_ERR_CLOSED); /* the peer stopped answering */
        return;
    }
    if (now >= s->next_ping_ns) {
        qk_yamux_ping(s, now); /* RTT sample and keep-alive */
        s->next_ping_ns = now + s->cfg.ping_interval_ns;
    }
    if (!s->cfg.fixed_window && s->n_streams && now >= s->next_tick_ns) {
        for (size_t i = 0; i < s->n_streams; i++)
            qk_flow_rx_tick(&s->streams[i]->rx, now, s->st.srtt_ns); /* shrink when idle */
        qk_time step = s->st.srtt_ns > QK_YAMUX_TICK_MIN_NS ? s->st.srtt_ns : QK_YAMUX_TICK_MIN_NS;
        s->next_tick_ns = now + step;
    }
}
