/* SPDX-License-Identifier: MIT */
/* yamux session internals (include/quack/yamux.h). */
#ifndef QK_YAMUX_INT_H
#define QK_YAMUX_INT_H

#include <quack/yamux.h>

#include "transport/streams/flow.h"

/* spec.md "Framing": types and flags. */
enum { YT_DATA = 0, YT_WINDOW_UPDATE = 1, YT_PING = 2, YT_GO_AWAY = 3 };
enum { YF_SYN = 1, YF_ACK = 2, YF_FIN = 4, YF_RST = 8 };

/* Pending-event bits of a stream. */
enum { YE_READABLE = 1, YE_WRITABLE = 2, YE_RESET = 4 };

/* A growable byte queue (read at off, len bytes). */
typedef struct ybuf {
    uint8_t *data;
    size_t off, len, cap;
} ybuf;

typedef struct ystream {
    uint32_t id;
    size_t slot;        /* index in s->streams */
    bool in_backlog;    /* peer's SYN, not accepted yet */
    bool syn_pending;   /* our SYN still to send */
    bool ack_pending;   /* our ACK (accept) still to send */
    bool fin_requested; /* we half-closed: FIN after the staged data */
    bool fin_sent;      /* our FIN framed */
    bool fin_received;  /* the peer's FIN arrived */
    bool fin_delivered; /* the application read up to that FIN */
    bool reset;         /* the peer reset it: RESET event, then freed */
    bool want_writable; /* a write was short: WRITABLE when there is room */
    uint8_t ev;         /* YE_* pending */
    struct ystream *ev_next;
    bool ev_queued;
    ybuf sbuf;     /* staged outgoing bytes */
    qk_flow_tx tx; /* the peer's window (max += deltas) */
    ybuf rbuf;     /* received, unread */
    qk_flow_rx rx; /* our window: max_data_bytes = limit told to the peer */
    uint64_t advertised_bytes;
} ystream;

/* A small ring of 12-byte control frames (PING, GoAway, RST for unknown ids). */
#define QK_YAMUX_CTRL_MAX 256

struct qk_yamux {
    qk_yamux_config cfg;
    bool dead;        /* protocol error / timeout: only the GoAway goes out */
    bool goaway_sent; /* GoAway queued: no new peer streams */
    bool goaway_received;
    int64_t close_code;
    const char *why; /* protocol error reason (static) */
    bool closed_event_pending, goaway_event_pending, incoming_pending;
    int64_t goaway_code;
    uint32_t next_id;     /* our next stream id */
    uint32_t max_peer_id; /* highest id the peer opened */
    ystream **streams;    /* alive, packed */
    size_t n_streams;
    size_t rr;         /* round-robin position for data */
    ystream **backlog; /* FIFO of peer streams to accept */
    size_t bl_head, bl_len;
    ystream *ev_head, *ev_tail;
    uint64_t refused_since_accept;
    uint8_t ctrl[QK_YAMUX_CTRL_MAX][QK_YAMUX_HEADER_BYTES];
    size_t ctrl_head, ctrl_len;
    /* receive parser */
    uint8_t hdr[QK_YAMUX_HEADER_BYTES];
    size_t hdr_len;
    uint32_t payload_left; /* Data payload bytes still to come */
    uint32_t payload_sid;  /* stream they go to, 0 = discard */
    uint16_t payload_flags;
    /* PING / RTT (spec.md "Ping") */
    uint32_t ping_opaque;
    bool ping_outstanding;
    qk_time ping_sent_ns, next_ping_ns, next_tick_ns;
    qk_flow_budget budget;
    qk_yamux_stats st;
    void *user; /* qk_yamux_set_user */
};

/* Shared between yamux.c and yamux_send.c. */
void qk_yamux_ev(qk_yamux *s, ystream *st, uint8_t bit);
bool qk_yamux_ctrl(qk_yamux *s, uint8_t type, uint16_t flags, uint32_t sid, uint32_t len);
void qk_yamux_fail(qk_yamux *s, int64_t code);
void qk_yamux_stream_free(qk_yamux *s, ystream *st);
bool qk_yamux_maybe_done(qk_yamux *s, ystream *st);

/* Buffers (yamux_buf.c). */
int qk_ybuf_append(ybuf *b, const uint8_t *p, size_t n);
size_t qk_ybuf_take(ybuf *b, uint8_t *out, size_t n);
void qk_ybuf_free(ybuf *b);

#endif
