/* SPDX-License-Identifier: MIT */
/* Inside src/tunnel: the flow and session state tunnel.c (TCP <-> stream
 * plumbing) and session.c (the session layer: control stream, resumption,
 * acknowledgements) share. */
#ifndef QK_TUNNEL_INT_H
#define QK_TUNNEL_INT_H

#include <quack/tunnel.h>

#include <ev.h>

#include "tunnel/session_wire.h"

typedef struct tsess tsess;

typedef struct flow {
    qk_tunnel *t;
    size_t slot;                  /* index in t->flows */
    const qk_tunnel_carrier *car; /* how to reach the stream */
    void *c;                      /* its carrier session, NULL = detached (waits for a resume) */
    uint64_t sid;
    int fd;
    ev_io rw, ww;    /* TCP readable / writable */
    bool connecting; /* server: non-blocking connect() in progress */
    bool preamble;   /* server: the stream's first byte is still to come */
    /* session layer */
    tsess *s;        /* its session (server: NULL until the flow header came) */
    uint64_t fid;    /* flow id in the session */
    size_t hdr_need; /* bytes of the flow header (server) / reply (client) still to come */
    uint8_t hdr[QK_TSW_FLOW_HDR_BYTES];
    size_t hdr_len;
    bool replied;        /* client: the server confirmed the flow once */
    bool await_reply;    /* client: resumed; sends from the server's offset once it is known */
    bool counted;        /* a data flow (in the stats), not an auth/control stream */
    bool silent;         /* freed without a log line (became a control stream / resumed) */
    uint64_t dlv;        /* bytes of the peer's direction passed on (TCP, SOCKS5) */
    uint64_t acked_sent; /* the delivered offset our last ACK carried */
    bool fin_ack_sent;   /* our ACK said the peer's FIN was passed on */
    bool fin_acked;      /* the peer passed our FIN on */
    bool stream_full;    /* the stream took less than offered: read TCP on its WRITABLE */
    /* TCP -> stream: the replay buffer, [acked, read from TCP) */
    qk_tsw_ring ring;
    uint64_t sent;     /* offset written to the current stream */
    uint64_t sent_max; /* highest offset ever written (beyond it: new bytes) */
    bool tcp_eof, fin_sent;
    /* stream -> TCP */
    uint8_t *down;
    size_t down_len, down_off;
    bool stream_fin, shut_wr;
    /* for the close log line */
    uint64_t id, down_bytes;
    ev_tstamp opened_at;
    const char *why;   /* why it was aborted (NULL: both directions ended cleanly) */
    qk_socks5 *socks;  /* server --to socks5: the negotiation, until it connected */
    bool socks_failed; /* refused: the reply and FIN are queued; the rest is dropped */
    bool gate;         /* server with a secret: waits for its preamble and the session's auth */
    bool auth;         /* server: this is the session's authentication stream */
    bool parked;       /* server: its header came before its session's HELLO: waits for it */
} flow;

/* A session: flows that outlive carrier sessions. The client has one; the
 * server one per client, kept session_linger_ns after its carrier is gone. */
struct tsess {
    qk_tunnel *t;
    uint8_t id[QK_TSW_ID_BYTES], token[QK_TSW_TOKEN_BYTES];
    bool has_id;                  /* client: the server gave us id/token */
    bool ready;                   /* HELLO/WELCOME done on the current carrier */
    const qk_tunnel_carrier *car; /* the carrier session and its control stream */
    void *c;                      /* NULL = detached */
    uint64_t ctl_sid;
    uint8_t in[QK_TSW_MSG_MAX]; /* a control message being assembled */
    size_t in_len;
    uint8_t out[4096]; /* control bytes the stream has not taken yet */
    size_t out_len;
    uint64_t next_fid;     /* client */
    size_t buf_bytes;      /* replay buffer capacity of its flows */
    ev_timer linger_w;     /* detached: forgotten when it fires */
    uint64_t detached_seq; /* server, detached: when (qk_tunnel.detach_seq), oldest evicted first */
};

struct qk_tunnel {
    struct ev_loop *ev;
    qk_tunnel_config cfg;
    flow **flows; /* the n_flows open flows, packed (removal moves the last in) */
    size_t n_flows;
    int lfd; /* client: listening socket, -1 = none */
    ev_io accept_w;
    const qk_tunnel_carrier *car; /* client: the session streams are opened on */
    void *conn;                   /* NULL: no session (client: redialling) */
    ev_timer hold_w;              /* client without a session: when to start refusing */
    void **authed;                /* server: sessions that proved the secret */
    size_t n_authed, cap_authed;
    void *auth_sess; /* client: where our authentication stream is */
    uint64_t auth_sid;
    tsess *me;    /* client: its session */
    tsess **sess; /* server: sessions (attached or lingering) */
    size_t n_sess, cap_sess;
    uint64_t detach_seq; /* server: detaches so far (orders detached sessions) */
    uint64_t next_id;    /* flows' numbers in log lines */
    qk_tunnel_stats stats;
};

/* tunnel.c */
void qk_tun_log(qk_tunnel *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void qk_tun_flow_free(flow *f, bool abort_tcp);
void qk_tun_flow_abort(flow *f, uint64_t app_error);
bool qk_tun_pump_up(flow *f, bool *gone);
bool qk_tun_pump_down(flow *f);
bool qk_tun_flow_maybe_done(flow *f);
uint64_t qk_tun_read_off(const flow *f);
void qk_tun_kick(qk_tunnel *t);
void qk_tun_start_accepting(qk_tunnel *t);

/* session.c */
tsess *qk_tsess_new(qk_tunnel *t);
void qk_tsess_free(tsess *s);
/* Client: a carrier session is up: open the control stream, say HELLO. */
int qk_tsess_client_attach(tsess *s, const qk_tunnel_carrier *car, void *c);
/* The carrier session is gone: flows wait (detached); linger starts. */
void qk_tsess_detach(tsess *s);
/* Server: a stream opened with the control preamble; bytes after it in buf. */
int qk_tsess_server_ctl(qk_tunnel *t, const qk_tunnel_carrier *car, void *c, uint64_t sid,
                        const uint8_t *buf, size_t len);
/* Control stream events: true when it was ours (handled). */
bool qk_tsess_on_stream_event(qk_tunnel *t, void *c, uint64_t sid, qk_tunnel_ev type);
/* The session attached to carrier session c (server), NULL if none. */
tsess *qk_tsess_of(qk_tunnel *t, const void *c);
/* Server: the flow header of f came: new flow, resume, or refusal.
 * Returns 0 (go on), -1 (f freed). */
int qk_tsess_flow_hdr(flow *f, const qk_tsw_flow_hdr *h);
/* Client: the server's reply on f's stream. Returns 0 or -1 (f freed). */
int qk_tsess_flow_reply(flow *f, const qk_tsw_flow_reply *r);
/* f delivered bytes (or the FIN) to TCP: queue an ACK when due. */
void qk_tsess_ack(flow *f, bool now);
/* Replay buffer: room for more TCP bytes (growing within the bounds)? */
bool qk_tsess_ring_room(flow *f);
/* Release f's replay buffer from its session's account. */
void qk_tsess_ring_release(flow *f);
/* Server: sessions kept now without a carrier session. */
uint64_t qk_tsess_detached_count(const qk_tunnel *t);
/* Reset every flow of s (TCP RST) and forget its id. */
void qk_tsess_reset_flows(tsess *s, const char *why);

#endif
