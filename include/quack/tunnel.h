/* quack — TCP over QUIC streams (the `quack tunnel` plumbing).
 *
 * One bidirectional QUIC stream per TCP connection. The client side accepts
 * TCP connections on a local address and opens a stream for each on one QUIC
 * connection; the server side connects each stream the peer opens to a fixed
 * TCP target. Bytes are relayed both ways with backpressure (a full stream
 * stops reading the TCP socket; a TCP socket that does not drain stops
 * reading the stream, so QUIC flow control holds the peer back), half-close
 * maps to FIN both ways (TCP EOF -> stream FIN, stream FIN -> shutdown
 * SHUT_WR), and an abort maps to an abort (RESET_STREAM / STOP_SENDING <->
 * TCP RST).
 *
 * Wire format: every client stream starts with one byte, QK_TUNNEL_PREAMBLE
 * (the tunnel protocol version), so that the server learns of a stream (and
 * connects its TCP side) at once, also for protocols where the TCP server
 * speaks first. The rest of the stream is the TCP byte stream.
 *
 * The module runs inside a libev loop (the one qk_io_loop drives the
 * endpoint from: qk_io_loop_ev()). The application feeds it the endpoint's
 * events (qk_tunnel_on_event) and gives it a kick callback for data it
 * queues on streams from TCP callbacks (qk_io_loop_kick). See docs/tunnel.md.
 */
#ifndef QUACK_TUNNEL_H
#define QUACK_TUNNEL_H

#include <quack/quack.h>
#include <quack/yamux.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ev_loop; /* libev */

/** First byte of every tunnel stream (protocol version 0). */
#define QK_TUNNEL_PREAMBLE 0x00u
/** Application error code on RESET_STREAM / STOP_SENDING when the TCP side failed or was refused.
 */
#define QK_TUNNEL_ERR_TCP 0x1u
/** Application error code when the stream broke the tunnel protocol (bad preamble). */
#define QK_TUNNEL_ERR_PROTOCOL 0x2u
/** Default limit on concurrent TCP connections (flows). */
#define QK_TUNNEL_DEFAULT_MAX_FLOWS 1024u
/** Default staging buffer per flow and direction. */
#define QK_TUNNEL_DEFAULT_BUF_BYTES (64u << 10)

/** Default time new TCP connections wait for a session while the client redials. */
#define QK_TUNNEL_DEFAULT_HOLD_NS (10ull * 1000000000ull)

typedef struct qk_tunnel qk_tunnel;

/**
 * A carrier: a session that gives bidirectional streams. The tunnel core
 * talks to QUIC connections and yamux sessions only through this table, so
 * flows, backpressure and stats are written once. sess is the session
 * (qk_conn *, qk_yamux *). Every call returns what the session's own
 * function does (negative QK_ERR_* on failure; QK_ERR_AGAIN = nothing now).
 */
typedef struct qk_tunnel_carrier {
    const char *name;
    int (*open)(void *sess, uint64_t *sid); /**< a new stream: 0 or an error */
    long (*write)(void *sess, uint64_t sid, const uint8_t *buf, size_t len, bool fin);
    long (*read)(void *sess, uint64_t sid, uint8_t *buf, size_t cap, bool *fin);
    /** Abort: reset our sending side and/or ask the peer to stop (yamux: RST). */
    void (*abort)(void *sess, uint64_t sid, uint64_t app_error, bool reset_send, bool stop_recv);
} qk_tunnel_carrier;

/** QUIC over UDP (or any qk_conn): sess is a qk_conn *. */
extern const qk_tunnel_carrier qk_tunnel_carrier_quic;
/** yamux (over TLS/TCP, qk_tunnel_tcp_new): sess is a qk_yamux *. */
extern const qk_tunnel_carrier qk_tunnel_carrier_yamux;

/** Carrier-neutral stream events (qk_tunnel_on_stream_event). */
typedef enum qk_tunnel_ev {
    QK_TUNNEL_EV_OPENED,   /**< the peer opened stream sid (server: connect it) */
    QK_TUNNEL_EV_READABLE, /**< data or FIN to read */
    QK_TUNNEL_EV_WRITABLE, /**< room to write again */
    QK_TUNNEL_EV_RESET,    /**< the peer reset or stopped the stream */
    QK_TUNNEL_EV_CLOSED,   /**< the session is gone (sid unused): its flows are aborted */
} qk_tunnel_ev;

/** Tunnel settings; zero fields take the defaults. */
typedef struct qk_tunnel_config {
    bool server;          /**< true: connect streams the peer opens to target */
    qk_addr target;       /**< server: the TCP address every stream goes to */
    size_t max_flows;     /**< concurrent flows (default QK_TUNNEL_DEFAULT_MAX_FLOWS) */
    size_t buf_bytes;     /**< staging bytes per flow and direction (default 64 KiB) */
    void (*kick)(void *); /**< called after data was queued on a stream from a TCP
                               callback, so the endpoint sends it (qk_io_loop_kick) */
    void *kick_ctx;
    /** Client: while there is no session (qk_tunnel_set_session(t, car, NULL)), new TCP
     * connections wait in the listen backlog this long, then are refused (RST) with a log
     * line until a session is back (default QK_TUNNEL_DEFAULT_HOLD_NS). */
    uint64_t hold_ns;
    /** Optional: one line (no newline) per flow opened/closed and per refusal. */
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
} qk_tunnel_config;

/** Counters since creation. */
typedef struct qk_tunnel_stats {
    uint64_t flows_opened;  /**< TCP connections relayed */
    uint64_t flows_closed;  /**< of those, finished (cleanly or not) */
    uint64_t flows_aborted; /**< finished by an error or reset on either side */
    uint64_t flows_refused; /**< over max_flows, no stream credit, or connect() failed */
    uint64_t tcp_to_quic_bytes;
    uint64_t quic_to_tcp_bytes;
} qk_tunnel_stats;

/**
 * Create a tunnel running in libev loop ev. cfg is copied. Returns 0 and sets
 * *out, or QK_ERR_INVALID_ARG (NULL ev/cfg/out, no kick callback, a server
 * without a target), QK_ERR_NOMEM.
 */
int qk_tunnel_new(struct ev_loop *ev, const qk_tunnel_config *cfg, qk_tunnel **out);

/** Abort every flow (TCP RST; streams reset if the connection still exists) and free t. NULL is a
 * no-op. */
void qk_tunnel_del(qk_tunnel *t);

/**
 * Client side: accept TCP connections on addr (port 0 picks one) and relay
 * each over a new bidirectional stream of connection c. Call once c is
 * established. Returns 0, QK_ERR_STATE (server tunnel, or already
 * listening), QK_ERR_INVALID_ARG, QK_ERR_IO (socket/bind/listen failed; errno
 * preserved).
 */
int qk_tunnel_listen(qk_tunnel *t, const qk_addr *addr, qk_conn *c);

/**
 * Client side, any carrier: as qk_tunnel_listen, streams opened on session
 * sess through car. Same return values.
 */
int qk_tunnel_listen_on(qk_tunnel *t, const qk_addr *addr, const qk_tunnel_carrier *car,
                        void *sess);

/**
 * Client: replace the session new flows are opened on (after a redial), or
 * with sess NULL say there is none (the connection died): new TCP
 * connections then wait up to cfg.hold_ns in the listen backlog and are
 * refused after that, each with a log line. Flows of the old session are
 * not moved (they end with it). Returns 0, QK_ERR_INVALID_ARG (NULL t, or
 * sess without car), QK_ERR_STATE (a server tunnel, or not listening).
 */
int qk_tunnel_set_session(qk_tunnel *t, const qk_tunnel_carrier *car, void *sess);

/** The bound TCP listening address (after qk_tunnel_listen). Returns 0 or QK_ERR_STATE. */
int qk_tunnel_listen_addr(const qk_tunnel *t, qk_addr *out);

/**
 * Feed one endpoint event. Stream events of the tunnel's flows, STREAM_OPENED
 * (server) and CLOSED (every flow of that connection is aborted) are
 * handled; others are ignored. Returns true when stream data or frames were
 * queued (the endpoint has something new to send). Never fails.
 */
bool qk_tunnel_on_event(qk_tunnel *t, const qk_event *ev);

/**
 * Feed one stream event of session sess (reached through car). Returns true
 * when stream data or frames were queued (the session has something new to
 * send). Never fails.
 */
bool qk_tunnel_on_stream_event(qk_tunnel *t, const qk_tunnel_carrier *car, void *sess,
                               qk_tunnel_ev type, uint64_t sid);

/** Flows open now. */
size_t qk_tunnel_flow_count(const qk_tunnel *t);

/** Copy the counters. */
void qk_tunnel_get_stats(const qk_tunnel *t, qk_tunnel_stats *out);

/* ---- yamux over TLS 1.3 over TCP (src/tunnel/tcp_carrier.c) ---- */

typedef struct qk_tunnel_tcp qk_tunnel_tcp;

/** TLS/TCP carrier settings. */
typedef struct qk_tunnel_tcp_config {
    bool server;
    qk_addr addr;                     /**< server: listen here; client: connect here */
    const char *cert_pem, *key_pem;   /**< server: certificate and key in memory, or */
    const char *cert_file, *key_file; /**< server: as files */
    const uint8_t *pin_sha256; /**< client: SHA-256 of the server's public key; NULL = insecure */
    bool fixed_window;         /**< yamux windows stay at 256 KiB (no auto-tuning) */
    size_t max_streams;        /**< yamux streams per session (default 1024) */
    qk_time ping_interval_ns;  /**< yamux PING period (default 1 s) */
    /** Client: the session came up (y set, up true) or ended (y NULL; up = it had been up;
     * why says what happened). */
    void (*on_session)(void *ctx, qk_yamux *y, bool up, const char *why);
    void *ctx;
} qk_tunnel_tcp_config;

/**
 * Start the carrier in loop ev, feeding tunnel t's stream events (t may be
 * NULL until set; the client gets its session by on_session and calls
 * qk_tunnel_listen_on(t, addr, &qk_tunnel_carrier_yamux, y)). Server: listen
 * on cfg->addr, one TLS handshake and yamux session per TCP connection.
 * Client: connect. Returns 0, QK_ERR_INVALID_ARG, QK_ERR_CONFIG (bad
 * certificate/key), QK_ERR_IO (socket/bind/connect; errno kept), QK_ERR_NOMEM.
 */
int qk_tunnel_tcp_new(struct ev_loop *ev, qk_tunnel *t, const qk_tunnel_tcp_config *cfg,
                      qk_tunnel_tcp **out);

/** Send what the sessions have queued (the tunnel's kick callback; ctx is the qk_tunnel_tcp). */
void qk_tunnel_tcp_kick(void *ctx);

/** Set (or with NULL, forget before freeing it) the tunnel fed with stream events. */
void qk_tunnel_tcp_set_tunnel(qk_tunnel_tcp *o, qk_tunnel *t);

/** GoAway(normal) on every session, flushed as far as the sockets take it. */
void qk_tunnel_tcp_go_away(qk_tunnel_tcp *o);

/** Close every connection (their flows are aborted) and free o. NULL is a no-op. */
void qk_tunnel_tcp_del(qk_tunnel_tcp *o);

/** Server: the bound listening address. Returns 0, QK_ERR_STATE, QK_ERR_IO. */
int qk_tunnel_tcp_local_addr(const qk_tunnel_tcp *o, qk_addr *out);

#ifdef __cplusplus
}
#endif

#endif
