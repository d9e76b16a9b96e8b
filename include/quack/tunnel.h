/* SPDX-License-Identifier: MIT */
/** @file
 * quack — TCP over QUIC streams (the `quack tunnel` plumbing).
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
 * Wire format: every client stream starts with one byte that says what it
 * is: the authentication stream, the session's control stream, or a flow,
 * whose stream then carries a header (flow id, resume offsets; see
 * docs/tunnel.md "Session layer") so that the server learns of a flow (and
 * connects its TCP side) at once, also for protocols where the TCP server
 * speaks first. The rest of the stream is the TCP byte stream. Flows
 * outlive carrier sessions: each side keeps the bytes the other has not
 * written to its TCP socket yet and resends them on a new stream after a
 * reconnect. With a
 * shared secret (qk_tunnel_config.secret) the client's first stream instead
 * starts with QK_TUNNEL_AUTH_PREAMBLE and carries a MAC bound to the
 * connection's TLS exporter (qk_tunnel_auth); with socks5 the TCP byte stream
 * starts with a SOCKS5 negotiation the server answers itself.
 *
 * The module runs inside a libev loop (the one qk_io_loop drives the
 * endpoint from: qk_io_loop_ev()). The application feeds it the endpoint's
 * events (qk_tunnel_on_event) and gives it a kick callback for data it
 * queues on streams from TCP callbacks (qk_io_loop_kick). See docs/tunnel.md.
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: a tunnel and its carriers are used
 * only from the thread that runs their libev loop.
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

/** First byte of a tunnel stream of protocol version 0 (before the session layer; refused now). */
#define QK_TUNNEL_PREAMBLE 0x00u
/** Application error code on RESET_STREAM / STOP_SENDING when the TCP side failed or was refused.
 */
#define QK_TUNNEL_ERR_TCP 0x1u
/** Application error code when the stream broke the tunnel protocol (bad preamble). */
#define QK_TUNNEL_ERR_PROTOCOL 0x2u
/** Application error code on CONNECTION_CLOSE: access denied (wrong or missing secret). */
#define QK_TUNNEL_ERR_AUTH 0x3u
/** First byte of the client's authentication stream (then a 32-byte MAC, FIN). */
#define QK_TUNNEL_AUTH_PREAMBLE 0x01u
/** TLS exporter label the authentication MAC is computed over (RFC 8446 §7.5). */
#define QK_TUNNEL_AUTH_LABEL "EXPORTER-quack-tunnel-auth"
/** Bytes of the authentication MAC: HMAC-SHA256(secret, exporter(label, 32 bytes)). */
#define QK_TUNNEL_AUTH_MAC_BYTES 32u
/** Default limit on concurrent TCP connections (flows). */
#define QK_TUNNEL_DEFAULT_MAX_FLOWS 1024u
/** Default staging buffer per flow and direction. */
#define QK_TUNNEL_DEFAULT_BUF_BYTES (64u << 10)

/** Default replay buffer per flow (qk_tunnel_config.flow_buffer_bytes). */
#define QK_TUNNEL_DEFAULT_FLOW_BUFFER_BYTES (4u << 20)
/** Default replay buffers per session (qk_tunnel_config.session_buffer_bytes). */
#define QK_TUNNEL_DEFAULT_SESSION_BUFFER_BYTES (64u << 20)
/** Default time a detached session is kept (qk_tunnel_config.session_linger_ns). */
#define QK_TUNNEL_DEFAULT_LINGER_NS (300ull * 1000000000ull)
/** Default bound on detached sessions a server keeps (qk_tunnel_config.session_max). */
#define QK_TUNNEL_DEFAULT_SESSION_MAX 1024u

/** Default time new TCP connections wait for a session while the client redials. */
#define QK_TUNNEL_DEFAULT_HOLD_NS (10ull * 1000000000ull)

/** A tunnel: TCP flows relayed over streams (opaque; qk_tunnel_new, qk_tunnel_del). */
typedef struct qk_tunnel qk_tunnel;

/**
 * A carrier: a session that gives bidirectional streams. The tunnel core
 * talks to QUIC connections and yamux sessions only through this table, so
 * flows, backpressure and stats are written once. sess is the session
 * (qk_conn *, qk_yamux *). Every call returns what the session's own
 * function does (negative QK_ERR_* on failure; QK_ERR_AGAIN = nothing now).
 */
typedef struct qk_tunnel_carrier {
    const char *name;                       /**< "quic", "yamux" (log lines) */
    int (*open)(void *sess, uint64_t *sid); /**< a new stream: 0 or an error */
    /** Queue bytes (and FIN): bytes taken or an error, as qk_stream_write.
     * A fresh stream takes its first bytes whole, so the core writes its
     * headers there without a short-write path: QUIC passes a stream's
     * first QK_STREAM_HEAD_BYTES whatever the send budgets hold, yamux
     * stages up to send_buf_bytes (256 KiB by default) per stream. */
    long (*write)(void *sess, uint64_t sid, const uint8_t *buf, size_t len, bool fin);
    /** Read bytes: the count, 0 with *fin at the end, or an error, as qk_stream_read. */
    long (*read)(void *sess, uint64_t sid, uint8_t *buf, size_t cap, bool *fin);
    /** Abort: reset our sending side and/or ask the peer to stop (yamux: RST). */
    void (*abort)(void *sess, uint64_t sid, uint64_t app_error, bool reset_send, bool stop_recv);
    /** Optional: keying material of the session's TLS handshake (RFC 8446 §7.5). */
    int (*export_key)(void *sess, const char *label, uint8_t *out, size_t len);
    /** Optional: close the session with an error code and reason. */
    void (*close)(void *sess, uint64_t app_error, const char *reason);
    /** Optional: the peer opened stream sid; set it up before its first
     * byte is sent (QUIC: the incremental priority `open` gives ours). */
    void (*accepted)(void *sess, uint64_t sid);
} qk_tunnel_carrier;

/** The RFC 9218 priority of the tunnel's QUIC streams, set on both ends:
 * urgency 3 (the default) and incremental, so the flows that have data
 * take turns packet by packet. Non-incremental streams go one at a time in
 * stream-id order (§4), and a small interactive flow would wait behind
 * every byte a bulk flow opened before it keeps buffered. */
#define QK_TUNNEL_STREAM_URGENCY 3

/** QUIC over UDP (or any qk_conn): sess is a qk_conn *. */
extern const qk_tunnel_carrier qk_tunnel_carrier_quic;
/** yamux (over TLS/TCP, qk_tunnel_tcp_new): sess is a qk_yamux *. export_key and close
 * work on sessions qk_tunnel_tcp made (TLS exporter; GoAway with the error code as its
 * code, QK_TUNNEL_ERR_AUTH past the spec's 0..2, then the connection closes). */
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
    bool server;    /**< true: connect streams the peer opens to target */
    qk_addr target; /**< server: the TCP address every stream goes to */
    /** Server: instead of target, serve SOCKS5 CONNECT (RFC 1928) on each stream, to
     * destinations qk_tunnel_allowed(allow, n_allow) admits; with socks_user set, require
     * that username/password (RFC 1929). Names are resolved with getaddrinfo (blocking). */
    bool socks5;
    const struct qk_tunnel_allow *allow; /**< socks5: the allow rules (qk_tunnel_allow_parse) */
    size_t n_allow;                      /**< socks5: number of rules */
    const char *socks_user;              /**< socks5: required username, NULL = none */
    const char *socks_pass;              /**< socks5: its password */
    /** Access control: a shared secret. Server: every session must first send an
     * authentication stream whose MAC (QK_TUNNEL_AUTH_MAC_BYTES) is HMAC-SHA256(secret,
     * TLS exporter of that session), before any flow; otherwise the session is closed
     * with QK_TUNNEL_ERR_AUTH and a reason that says why. Client: see qk_tunnel_auth. */
    const uint8_t *secret;
    size_t secret_len; /**< bytes of secret (0 = no access control) */
    /** Client: the server's answer to qk_tunnel_auth (ok false: the stream was refused). */
    void (*on_auth)(void *ctx, void *sess, bool ok);
    void *auth_ctx;       /**< passed to on_auth */
    size_t max_flows;     /**< concurrent flows (default QK_TUNNEL_DEFAULT_MAX_FLOWS) */
    size_t buf_bytes;     /**< staging bytes per flow and direction (default 64 KiB) */
    void (*kick)(void *); /**< called after data was queued on a stream from a TCP
                               callback, so the endpoint sends it (qk_io_loop_kick) */
    void *kick_ctx;       /**< passed to kick */
    /** Client: while there is no session (qk_tunnel_set_session(t, car, NULL)), new TCP
     * connections wait in the listen backlog this long, then are refused (RST) with a log
     * line until a session is back (default QK_TUNNEL_DEFAULT_HOLD_NS). */
    uint64_t hold_ns;
    /** Optional: one line (no newline) per flow opened/closed and per refusal. */
    void (*log)(void *ctx, const char *line);
    void *log_ctx; /**< passed to log */
    /* Session layer (docs/tunnel.md "Session layer"): flows outlive carrier sessions. */
    /** Replay buffer per flow: bytes read from TCP that the peer has not written to its TCP
     * socket yet, kept to resend after a reconnect; full = TCP reading stops
     * (default QK_TUNNEL_DEFAULT_FLOW_BUFFER_BYTES). */
    size_t flow_buffer_bytes;
    /** Replay buffers of all flows of one session (default QK_TUNNEL_DEFAULT_SESSION_BUFFER_BYTES);
     * a new flow that does not fit is refused. */
    size_t session_buffer_bytes;
    /** How long a session whose carrier is gone is kept for a resume (default 5 min); then its
     * flows are reset (TCP RST). */
    uint64_t session_linger_ns;
    /** Server: detached sessions kept at most (default QK_TUNNEL_DEFAULT_SESSION_MAX); when
     * one more detaches, the one detached longest ago is forgotten at once: its flows are
     * reset (TCP RST) and a log line says so. Bounds the entries peers can leave behind. */
    size_t session_max;
} qk_tunnel_config;

/** Counters since creation. */
typedef struct qk_tunnel_stats {
    uint64_t flows_opened;      /**< TCP connections relayed */
    uint64_t flows_closed;      /**< of those, finished (cleanly or not) */
    uint64_t flows_aborted;     /**< finished by an error or reset on either side */
    uint64_t flows_refused;     /**< over max_flows, no stream credit, or connect() failed */
    uint64_t tcp_to_quic_bytes; /**< bytes read from TCP sockets and written to streams */
    uint64_t quic_to_tcp_bytes; /**< bytes read from streams and written to TCP sockets */
    uint64_t flows_resumed;     /**< flows continued on a new carrier session */
    uint64_t bytes_replayed;    /**< bytes written to streams again after a resume */
    uint64_t sessions_resumed;  /**< carrier sessions that resumed an existing session */
    uint64_t sessions_refused;  /**< client: the server did not know our session (its flows
                                     were reset); server: resumes of sessions it did not know */
    uint64_t buffer_bytes;      /**< replay buffers allocated now, all flows */
    uint64_t buffer_peak_bytes; /**< the most buffer_bytes has been */
    uint64_t sessions_detached; /**< server: sessions kept now without a carrier session */
    uint64_t sessions_evicted;  /**< server: detached sessions forgotten over session_max */
} qk_tunnel_stats;

/**
 * Create a tunnel running in libev loop ev. cfg is copied (cfg_bytes of it:
 * the caller's sizeof(qk_tunnel_config); fields it lacks take their zero
 * defaults). Returns 0 and sets *out, or QK_ERR_INVALID_ARG (NULL ev/cfg/out,
 * no kick callback, a server without a target, cfg_bytes below the first
 * release's size), QK_ERR_UNSUPPORTED (cfg sets a field this library does
 * not know), QK_ERR_NOMEM.
 */
int qk_tunnel_new_sized(struct ev_loop *ev, const qk_tunnel_config *cfg, size_t cfg_bytes,
                        qk_tunnel **out);

/** qk_tunnel_new_sized() with the caller's sizeof(qk_tunnel_config). */
#define qk_tunnel_new(ev, cfg, out)                                                                \
    qk_tunnel_new_sized((ev), (cfg), sizeof(qk_tunnel_config), (out))

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
 * sess through car. Same return values as qk_tunnel_listen (0,
 * QK_ERR_STATE, QK_ERR_INVALID_ARG, QK_ERR_IO).
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

/**
 * Client: prove the secret (cfg.secret) on session sess: open the
 * authentication stream and send the MAC bound to this session's TLS
 * exporter (not replayable on another connection). cfg.on_auth is called
 * with the answer; open flows only after it said ok. Returns 0,
 * QK_ERR_INVALID_ARG, QK_ERR_UNSUPPORTED (the carrier has no exporter),
 * QK_ERR_STATE (a server tunnel, or no secret), or the carrier's error.
 */
int qk_tunnel_auth(qk_tunnel *t, const qk_tunnel_carrier *car, void *sess);

/**
 * The authentication MAC for session sess: HMAC-SHA256(secret, exporter).
 * Returns 0, QK_ERR_UNSUPPORTED (no exporter), QK_ERR_TLS.
 */
int qk_tunnel_auth_mac(const qk_tunnel_carrier *car, void *sess, const uint8_t *secret,
                       size_t secret_len, uint8_t out[QK_TUNNEL_AUTH_MAC_BYTES]);

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

/**
 * Client: the server ended our session on purpose (it stopped: QUIC
 * CONNECTION_CLOSE without error, yamux GoAway): reset every flow now (TCP
 * RST, each with a log line) and start a new session on the next carrier
 * session. Returns 0, QK_ERR_INVALID_ARG, QK_ERR_STATE (a server tunnel).
 */
int qk_tunnel_forget_session(qk_tunnel *t, const char *why);

/** Copy the counters into out (out_bytes: the caller's sizeof(qk_tunnel_stats)). */
void qk_tunnel_get_stats_sized(const qk_tunnel *t, qk_tunnel_stats *out, size_t out_bytes);

/** qk_tunnel_get_stats_sized() with the caller's sizeof(qk_tunnel_stats). */
#define qk_tunnel_get_stats(t, out) qk_tunnel_get_stats_sized((t), (out), sizeof(qk_tunnel_stats))

/* ---- yamux over TLS 1.3 over TCP ---- */

/** The yamux-over-TLS/TCP carrier (opaque; qk_tunnel_tcp_new, qk_tunnel_tcp_del). */
typedef struct qk_tunnel_tcp qk_tunnel_tcp;

/** TLS/TCP carrier settings. */
typedef struct qk_tunnel_tcp_config {
    bool server;               /**< listen (true) or connect (false) */
    qk_addr addr;              /**< server: listen here; client: connect here */
    const char *cert_pem;      /**< server: certificate (PEM) in memory, or NULL */
    const char *key_pem;       /**< server: its private key (PEM) in memory, or NULL */
    const char *cert_file;     /**< server: certificate file, used when cert_pem is NULL */
    const char *key_file;      /**< server: key file, used when key_pem is NULL */
    const uint8_t *pin_sha256; /**< client: SHA-256 of the server's public key; NULL = insecure */
    bool fixed_window;         /**< yamux windows stay at 256 KiB (no auto-tuning) */
    size_t max_streams;        /**< yamux streams per session (default 1024) */
    qk_time ping_interval_ns;  /**< yamux PING period (default 1 s) */
    /** Client: the session came up (y set, up true) or ended (y NULL; up = it had been up;
     * why says what happened). */
    void (*on_session)(void *ctx, qk_yamux *y, bool up, const char *why);
    void *ctx; /**< passed to on_session */
} qk_tunnel_tcp_config;

/**
 * Start the carrier in loop ev, feeding tunnel t's stream events (t may be
 * NULL until set; the client gets its session by on_session and calls
 * qk_tunnel_listen_on(t, addr, &qk_tunnel_carrier_yamux, y)). Server: listen
 * on cfg->addr, one TLS handshake and yamux session per TCP connection.
 * Client: connect. cfg is copied (cfg_bytes of it: the caller's
 * sizeof(qk_tunnel_tcp_config)). Returns 0, QK_ERR_INVALID_ARG,
 * QK_ERR_UNSUPPORTED (cfg sets a field this library does not know),
 * QK_ERR_CONFIG (bad certificate/key), QK_ERR_IO (socket/bind/connect; errno
 * kept), QK_ERR_NOMEM.
 */
int qk_tunnel_tcp_new_sized(struct ev_loop *ev, qk_tunnel *t, const qk_tunnel_tcp_config *cfg,
                            size_t cfg_bytes, qk_tunnel_tcp **out);

/** qk_tunnel_tcp_new_sized() with the caller's sizeof(qk_tunnel_tcp_config). */
#define qk_tunnel_tcp_new(ev, t, cfg, out)                                                         \
    qk_tunnel_tcp_new_sized((ev), (t), (cfg), sizeof(qk_tunnel_tcp_config), (out))

/** Send what the sessions have queued (the tunnel's kick callback; ctx is the qk_tunnel_tcp). */
void qk_tunnel_tcp_kick(void *ctx);

/** Set (or with NULL, forget before freeing it) the tunnel fed with stream events. */
void qk_tunnel_tcp_set_tunnel(qk_tunnel_tcp *o, qk_tunnel *t);

/**
 * Client: connect again (after on_session reported the session gone); the
 * new session arrives by on_session. Returns 0, QK_ERR_STATE (a server),
 * QK_ERR_IO (socket/connect; errno kept), QK_ERR_NOMEM.
 */
int qk_tunnel_tcp_redial(qk_tunnel_tcp *o);

/** GoAway(normal) on every session, then TLS close_notify, flushed as far as the sockets
 * take them; a server also stops listening. A client that gets GoAway ends its session at
 * once (on_session: y NULL). */
void qk_tunnel_tcp_go_away(qk_tunnel_tcp *o);

/** How the client's last session ended (qk_tunnel_tcp_ended). */
typedef enum qk_tunnel_tcp_end {
    QK_TUNNEL_TCP_LOST = 0,    /**< connect failed, the connection broke or went silent */
    QK_TUNNEL_TCP_GOAWAY = 1,  /**< the server sent GoAway: normal (it stops), or
                                    QK_TUNNEL_ERR_AUTH (access denied) */
    QK_TUNNEL_TCP_BAD_KEY = 2, /**< the server's key does not match the pin */
} qk_tunnel_tcp_end;

/** Client, after on_session reported a session gone: how it ended, and with
 * QK_TUNNEL_TCP_GOAWAY the server's GoAway code in *goaway_code (may be NULL). */
qk_tunnel_tcp_end qk_tunnel_tcp_ended(const qk_tunnel_tcp *o, uint32_t *goaway_code);

/** Close every connection (their flows are aborted) and free o. NULL is a no-op. */
void qk_tunnel_tcp_del(qk_tunnel_tcp *o);

/** Server: the bound listening address. Returns 0, QK_ERR_STATE, QK_ERR_IO. */
int qk_tunnel_tcp_local_addr(const qk_tunnel_tcp *o, qk_addr *out);

/* ---- SOCKS5 server side and the destination allow-list ---- */

/** SOCKS5 reply codes (RFC 1928 §6). */
#define QK_SOCKS5_OK               0x00u /**< succeeded */
#define QK_SOCKS5_GENERAL_FAILURE  0x01u /**< general SOCKS server failure */
#define QK_SOCKS5_NOT_ALLOWED      0x02u /**< connection not allowed by ruleset */
#define QK_SOCKS5_HOST_UNREACHABLE 0x04u /**< host unreachable */
#define QK_SOCKS5_CONN_REFUSED     0x05u /**< connection refused */
#define QK_SOCKS5_CMD_UNSUPPORTED  0x07u /**< command not supported */
#define QK_SOCKS5_ATYP_UNSUPPORTED 0x08u /**< address type not supported */
/** Bytes of a reply qk_socks5_reply writes (IPv4 form, RFC 1928 §6). */
#define QK_SOCKS5_REPLY_BYTES 10u

/** qk_socks5_feed results. */
typedef enum qk_socks5_result {
    QK_SOCKS5_MORE = 0,    /**< need more bytes (send *out_len reply bytes first) */
    QK_SOCKS5_REQUEST = 1, /**< a CONNECT request is complete: host/port are set */
    QK_SOCKS5_FAIL = 2,    /**< refused or malformed: send the reply bytes, then close */
} qk_socks5_result;

/** One SOCKS5 server-side negotiation (opaque; qk_socks5_new, qk_socks5_del). */
typedef struct qk_socks5 qk_socks5;

/** Start a negotiation; user/pass (RFC 1929) are kept by pointer; NULL user = no
 * auth. Returns 0 and sets *out, QK_ERR_INVALID_ARG (out NULL), QK_ERR_NOMEM. */
int qk_socks5_new(const char *user, const char *pass, qk_socks5 **out);

/** Free s. NULL is a no-op. */
void qk_socks5_del(qk_socks5 *s);

/** After QK_SOCKS5_REQUEST: the destination, a name or an address literal ("" before). */
const char *qk_socks5_host(const qk_socks5 *s);

/** After QK_SOCKS5_REQUEST: the destination port (0 before). */
uint16_t qk_socks5_port(const qk_socks5 *s);

/**
 * Feed len client bytes. *used says how many were consumed (bytes after a
 * complete request are the flow's payload); out (at least 32 bytes) gets
 * *out_len reply bytes to send back. Returns a qk_socks5_result; never
 * fails otherwise.
 */
qk_socks5_result qk_socks5_feed(qk_socks5 *s, const uint8_t *in, size_t len, size_t *used,
                                uint8_t *out, size_t *out_len);

/** Write the CONNECT reply with code rep (QK_SOCKS5_*) into out (QK_SOCKS5_REPLY_BYTES). */
void qk_socks5_reply(uint8_t rep, uint8_t *out);

/** One --allow rule: a network and a port range. Frozen: rules cross the
 * boundary as arrays (qk_tunnel_config.allow, qk_tunnel_allowed), whose
 * stride is the struct's size. */
typedef struct qk_tunnel_allow {
    qk_addr net;          /**< network address (port unused) */
    unsigned prefix_bits; /**< prefix length (32 / 128 = one host) */
    uint16_t port_lo;     /**< first port allowed */
    uint16_t port_hi;     /**< last port allowed */
} qk_tunnel_allow;

/**
 * Parse "CIDR[:PORTS]" (e.g. 127.0.0.0/8, 10.0.0.0/8:80-443, [::1]/128:22,
 * 0.0.0.0/0). No prefix = the host; no ports = all. Returns 0 or
 * QK_ERR_INVALID_ARG.
 */
int qk_tunnel_allow_parse(const char *str, qk_tunnel_allow *out);

/**
 * May a flow go to dst? Yes when a rule matches; otherwise loopback,
 * private, link-local, CGNAT, unspecified and multicast destinations are
 * denied, and other (public) ones allowed only when there are no rules.
 * Never fails.
 */
bool qk_tunnel_allowed(const qk_tunnel_allow *rules, size_t n_rules, const qk_addr *dst);

/* ---- UDP over QUIC DATAGRAM frames (RFC 9221) ---- */

/** Bytes before the payload in each DATAGRAM frame: the session id (big endian). */
#define QK_TUNNEL_UDP_HEADER_BYTES 4u
/** Default idle time after which a UDP session is forgotten. */
#define QK_TUNNEL_UDP_DEFAULT_IDLE_NS (60ull * 1000000000ull)
/** Default limit on UDP sessions (source ports) at once. */
#define QK_TUNNEL_UDP_DEFAULT_MAX_SESSIONS 4096u

/** UDP forwarding over DATAGRAM frames (opaque; qk_tunnel_udp_new, qk_tunnel_udp_del). */
typedef struct qk_tunnel_udp qk_tunnel_udp;

/** UDP forwarding settings; zero fields take the defaults. */
typedef struct qk_tunnel_udp_config {
    bool server;          /**< false: receive on addr; true: send each session to addr */
    qk_addr addr;         /**< client: --udp-listen; server: --udp-to */
    uint64_t idle_ns;     /**< a session unused this long is freed (default 60 s) */
    size_t max_sessions;  /**< sessions at once (default 4096) */
    uint8_t urgency;      /**< qk_datagram_send urgency (RFC 9218 scale, 0 = most urgent) */
    void (*kick)(void *); /**< called after datagrams were queued from a socket callback */
    void *kick_ctx;       /**< passed to kick */
    void (*log)(void *ctx, const char *line); /**< optional: session opened/expired lines */
    void *log_ctx;                            /**< passed to log */
    /** Optional: send one frame (the 4-byte session id, then the UDP payload)
     * instead of qk_datagram_send(c, frame, len, urgency), e.g. re-framed as
     * an HTTP Datagram; returns 0 or an error (the datagram is then counted
     * dropped). Frames received that way are fed back to
     * qk_tunnel_udp_on_event as QK_EV_DATAGRAM events in this format. */
    int (*send)(void *ctx, qk_conn *c, const uint8_t *frame, size_t len, uint8_t urgency);
    void *send_ctx; /**< passed to send */
} qk_tunnel_udp_config;

/** Counters since creation. */
typedef struct qk_tunnel_udp_stats {
    uint64_t sessions_opened;  /**< UDP sessions (source addresses) created */
    uint64_t sessions_expired; /**< sessions freed after idle_ns */
    uint64_t dgrams_up;        /**< datagrams forwarded client to server */
    uint64_t dgrams_down;      /**< datagrams forwarded server to client */
    uint64_t dgrams_dropped;   /**< no connection, queue full, too large, no session */
} qk_tunnel_udp_stats;

/**
 * Create UDP forwarding in libev loop ev; the client binds cfg->addr now.
 * cfg is copied (cfg_bytes of it: the caller's sizeof(qk_tunnel_udp_config)).
 * Returns 0, QK_ERR_INVALID_ARG, QK_ERR_UNSUPPORTED (cfg sets a field this
 * library does not know), QK_ERR_IO (socket/bind; errno kept), QK_ERR_NOMEM.
 */
int qk_tunnel_udp_new_sized(struct ev_loop *ev, const qk_tunnel_udp_config *cfg, size_t cfg_bytes,
                            qk_tunnel_udp **out);

/** qk_tunnel_udp_new_sized() with the caller's sizeof(qk_tunnel_udp_config). */
#define qk_tunnel_udp_new(ev, cfg, out)                                                            \
    qk_tunnel_udp_new_sized((ev), (cfg), sizeof(qk_tunnel_udp_config), (out))

/** Close every session and free u. NULL is a no-op. */
void qk_tunnel_udp_del(qk_tunnel_udp *u);

/** Client: the connection to send on (NULL: none; datagrams are dropped). */
void qk_tunnel_udp_set_conn(qk_tunnel_udp *u, qk_conn *c);

/**
 * Feed one endpoint event: DATAGRAM (forwarded) and CLOSED (that
 * connection's sessions freed). Returns true when DATAGRAM frames were
 * queued. Never fails.
 */
bool qk_tunnel_udp_on_event(qk_tunnel_udp *u, const qk_event *ev);

/** Client: the bound UDP address. Returns 0, QK_ERR_STATE, QK_ERR_IO. */
int qk_tunnel_udp_local_addr(const qk_tunnel_udp *u, qk_addr *out);

/** Copy the counters into out (out_bytes: the caller's sizeof(qk_tunnel_udp_stats);
 * may be NULL); *sessions gets the number open now (may be NULL). */
void qk_tunnel_udp_get_stats_sized(const qk_tunnel_udp *u, qk_tunnel_udp_stats *out,
                                   size_t out_bytes, size_t *sessions);

/** qk_tunnel_udp_get_stats_sized() with the caller's sizeof(qk_tunnel_udp_stats). */
#define qk_tunnel_udp_get_stats(u, out, sessions)                                                  \
    qk_tunnel_udp_get_stats_sized((u), (out), sizeof(qk_tunnel_udp_stats), (sessions))

#ifdef __cplusplus
}
#endif

#endif
