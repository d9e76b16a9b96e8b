/* SPDX-License-Identifier: MIT */
/** @file
 * quack — sans-I/O QUIC v1 transport (RFC 9000/9001/9002, RFC 9221 DATAGRAM).
 *
 * The application owns sockets and the clock. It feeds received datagrams to
 * qk_endpoint_recv(), pulls datagrams to send with qk_endpoint_send(), arms a
 * timer at qk_endpoint_next_timeout() and calls qk_endpoint_on_timeout() when
 * it fires, and drains events with qk_endpoint_poll_event(). Nothing calls
 * back into the application from inside the stack (except the one-way sinks
 * of qk_config: rng, keylog, the qlog writers, trace).
 *
 * Contracts every function below follows unless its comment says otherwise:
 *
 * - **Return codes.** A function returning int or long returns 0 (or a
 *   non-negative count) on success and a negative QK_ERR_* (quack/common.h)
 *   on failure; each comment lists the codes it can return. A function that
 *   returns a connection or stream object returns 0 and writes it to an
 *   out-parameter; void and bool functions cannot fail. Every function taking
 *   a qk_conn or qk_endpoint requires a valid one (NULL is undefined
 *   behaviour unless QK_ERR_INVALID_ARG is listed).
 * - **Threads.** An endpoint and everything reached through it (its
 *   connections and their streams) is used by one thread at a time: calls on
 *   one endpoint are not thread-safe and take no locks. Different endpoints
 *   may be used from different threads at once. Thread-safe, callable from
 *   any thread: qk_ticket_keys (shared between endpoints), and the pure
 *   functions that touch no endpoint (qk_cc_kind_parse and _name(s),
 *   qk_ackfreq_mode_parse and _name, qk_config_default, qk_config_check,
 *   qk_config_min_datagram_bytes, qk_cid_server_id).
 * - **Time.** Every `now` is nanoseconds on the caller's monotonic clock
 *   (e.g. CLOCK_MONOTONIC, never wall-clock time, which jumps). All calls
 *   into one endpoint take times from the same clock, and they never go
 *   backwards; the origin does not matter. Deadlines the library returns
 *   (qk_endpoint_next_timeout) are on that clock. Functions without a `now`
 *   act at the time of the last call that had one (a write is sent at the
 *   next qk_endpoint_send).
 * - **Pointers.** Pointer arguments are borrowed for the call unless the
 *   comment says they are kept: qk_endpoint_new keeps what the qk_config
 *   points to (strings, callbacks, contexts, ticket_keys) for the endpoint's
 *   life; qk_stream_write_ref keeps the data until QK_EV_STREAM_ACKED or
 *   QK_EV_CLOSED releases it. A qk_conn is owned by its endpoint (lifetime:
 *   @ref qk_conn). Event payloads (qk_event.data) belong to the endpoint and
 *   stay valid until the next qk_endpoint_poll_event call. */
#ifndef QUACK_QUACK_H
#define QUACK_QUACK_H

#include <quack/common.h>
#include <stdbool.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An endpoint: one UDP address's worth of connections, client and/or server
 * (opaque; qk_endpoint_new, qk_endpoint_del). */
typedef struct qk_endpoint qk_endpoint;
/** A connection, owned by its endpoint: valid from qk_connect (client) or
 * its first event (server: QK_EV_NEW_CONN with qk_config.new_conn_events)
 * until it is freed. It is freed by the
 * first qk_endpoint_poll_event call that returns false after its
 * QK_EV_CLOSED event was returned (so it may still be used while handling
 * QK_EV_CLOSED and the events polled after it), or by qk_endpoint_del. */
typedef struct qk_conn qk_conn;

/** Congestion controllers. */
typedef enum qk_cc_kind {
    QK_CONFIG_CC_NEWRENO = 0, /**< NewReno (RFC 9002 §7) */
    QK_CONFIG_CC_CUBIC = 1,   /**< CUBIC (RFC 9438) */
    QK_CONFIG_CC_DCTCP = 2,   /**< DCTCP (RFC 8257; needs ECN marking at the bottleneck) */
    QK_CONFIG_CC_BBR = 3,     /**< BBRv3 (draft-ietf-ccwg-bbr) */
    QK_CONFIG_CC_PRAGUE = 4,  /**< L4S Prague-style (ECT(1)) */
    /** BBRv3 that lets only congestion-classified loss (queueing delay,
     * ECN CE, loss rising with inflight) lower its model: fills randomly
     * lossy paths (docs/cc.md "Loss that is not congestion") */
    QK_CONFIG_CC_BBR_LT = 5
} qk_cc_kind;

/**
 * Parse a controller name, case-insensitive: "newreno" (or "reno"), "cubic",
 * "dctcp", and any controller added since (qk_cc_kind_names()). Returns 0 and
 * sets *out, or QK_ERR_INVALID_ARG (NULL or unknown name).
 */
int qk_cc_kind_parse(const char *name, qk_cc_kind *out);

/** Canonical name of a controller ("newreno", "cubic", ...), "unknown" otherwise. Never fails. */
const char *qk_cc_kind_name(qk_cc_kind kind);

/** The controller names qk_cc_kind_parse accepts, as "newreno, cubic, ..." (a static
 * string). Never fails. */
const char *qk_cc_kind_names(void);

/** What a sender asks its peer with ACK_FREQUENCY frames (ack-frequency-12). */
typedef enum qk_ackfreq_mode {
    QK_ACKFREQ_OFF = 0,            /**< never ask */
    QK_ACKFREQ_FIXED = 1,          /**< ask once for the configured values */
    QK_ACKFREQ_AUTO = 2,           /**< derive from cwnd and RTT (§8.1); ACK points at burst
                                        ends while the path holds no standing queue */
    QK_ACKFREQ_AUTO_THRESHOLD = 3, /**< AUTO without burst-end ACK points (the threshold
                                        and the window-full rule only; for comparison) */
} qk_ackfreq_mode;

/**
 * Parse an ACK-frequency mode name: "off", "fixed", "auto", "auto-threshold".
 * Returns 0 and sets *out, or QK_ERR_INVALID_ARG.
 */
int qk_ackfreq_mode_parse(const char *name, qk_ackfreq_mode *out);

/** Name of a mode ("off", "fixed", "auto", "auto-threshold"), "unknown" otherwise. Never fails. */
const char *qk_ackfreq_mode_name(qk_ackfreq_mode mode);

/** Most ALPN protocols in qk_config.alpn. */
#define QK_MAX_ALPN 8

#ifndef QK_VERSION_1
/** QUIC version 1 (RFC 9000), for qk_config.version. */
#define QK_VERSION_1 0x00000001u
#endif
#ifndef QK_VERSION_2
/** QUIC version 2 (RFC 9369), for qk_config.version. */
#define QK_VERSION_2 0x6b3343cfu
#endif

/** Packet types reported by the trace hook. */
typedef enum qk_trace_pkt_type {
    QK_TRACE_PKT_INITIAL = 0,   /**< Initial packet */
    QK_TRACE_PKT_HANDSHAKE = 1, /**< Handshake packet */
    QK_TRACE_PKT_1RTT = 2,      /**< 1-RTT (short header) packet */
} qk_trace_pkt_type;

/** One decoded plaintext frame of a traced packet. Fields not used by the
 *  frame's type are 0. */
typedef struct qk_trace_frame {
    uint64_t type;            /**< wire frame type (0x02 ACK, 0x1f IMMEDIATE_ACK, 0xaf ...) */
    uint64_t stream_id;       /**< STREAM, RESET_STREAM, STOP_SENDING, MAX_STREAM_DATA */
    uint64_t offset;          /**< STREAM, CRYPTO */
    uint64_t len;             /**< STREAM, CRYPTO, DATAGRAM data bytes; PADDING bytes */
    bool fin;                 /**< STREAM */
    uint64_t ack_largest;     /**< ACK: Largest Acknowledged */
    qk_time ack_delay_ns;     /**< ACK: the ACK Delay field decoded with the sender's exponent */
    uint64_t ack_ranges;      /**< ACK: number of ranges (1 + range count) */
    uint64_t ack_first_range; /**< ACK: First ACK Range */
    uint64_t af_seq;          /**< ACK_FREQUENCY: sequence number */
    uint64_t af_threshold;    /**< ACK_FREQUENCY: ack-eliciting threshold */
    qk_time af_max_delay_ns;  /**< ACK_FREQUENCY: requested max ack delay */
    uint64_t af_reorder;      /**< ACK_FREQUENCY: reordering threshold */
    uint64_t value;           /**< MAX_DATA/MAX_STREAMS/..._BLOCKED value, close error code */
} qk_trace_frame;

/** Frames of one packet a trace record holds at most. */
#define QK_TRACE_MAX_FRAMES 64

/** One packet sent or received, as handed to qk_config.trace. */
typedef struct qk_trace_packet {
    qk_conn *conn;                /**< the connection */
    bool server;                  /**< the tracing endpoint is the server side */
    bool sent;                    /**< sent by us (else received) */
    qk_trace_pkt_type pkt_type;   /**< packet type */
    uint64_t pn;                  /**< packet number */
    qk_time time_ns;              /**< the caller's clock at send/receive */
    size_t len_bytes;             /**< packet size on the wire */
    bool ack_eliciting;           /**< holds a frame other than ACK, PADDING, CONNECTION_CLOSE */
    const qk_trace_frame *frames; /**< valid only during the call */
    size_t n_frames;              /**< at most QK_TRACE_MAX_FRAMES (PADDING runs are one frame) */
    size_t n_frames_total;        /**< frames in the packet (> n_frames when truncated) */
} qk_trace_packet;

/**
 * One-way trace sink (like the qlog writers, the only calls the stack makes
 * into the application): called synchronously for every
 * packet a connection sends (before protection) and receives (after
 * decryption, before its frames are processed). It must not call back into
 * the endpoint.
 */
typedef void (*qk_trace_fn)(void *ctx, const qk_trace_packet *pkt);

/** Session-ticket keys and the 0-RTT anti-replay store of a server
 * (RFC 8446 §4.6.1, §8; RFC 9001 §4.6, §9.2). One object may be shared by
 * every endpoint of a process (thread-safe): a ticket issued by one is
 * accepted by the others and a 0-RTT ClientHello is accepted once by all. */
typedef struct qk_ticket_keys qk_ticket_keys;

/**
 * Create ticket keys: a random master key from which GnuTLS derives a new
 * ticket encryption key every rotation_ns (also the ticket lifetime; 0 = 6 h,
 * at most 7 days), and a single-use store of max_entries 0-RTT ClientHellos
 * (0 = 4096; when it is full of live entries further early data is refused).
 * Returns NULL with *err = QK_ERR_NOMEM or QK_ERR_TLS.
 */
qk_ticket_keys *qk_ticket_keys_new(qk_time rotation_ns, size_t max_entries, int *err);

/** Shortest fleet secret qk_ticket_keys_new_from_secret() and
 * qk_fleet_static_key() take, bytes. */
#define QK_FLEET_SECRET_MIN_BYTES 32

/**
 * qk_ticket_keys_new() with the master key derived from a secret shared by a
 * fleet of servers (HKDF-SHA256, RFC 5869, label "quack session-ticket
 * master"): every server given the same secret (and a clock within the
 * rotation period) seals and opens the same tickets, so a session issued by
 * one resumes on another. The 0-RTT anti-replay store stays per object: a
 * 0-RTT ClientHello replayed to another server is not caught there
 * (docs/deploy.md; leave qk_config.early_data off across a fleet).
 * Returns NULL with *err = QK_ERR_INVALID_ARG (secret NULL or shorter than
 * QK_FLEET_SECRET_MIN_BYTES), QK_ERR_NOMEM or QK_ERR_TLS (since 1.1).
 */
qk_ticket_keys *qk_ticket_keys_new_from_secret(const uint8_t *secret, size_t secret_len,
                                               qk_time rotation_ns, size_t max_entries, int *err);

/**
 * The qk_config.static_key (stateless-reset tokens, Retry and NEW_TOKEN
 * address tokens; RFC 9000 §10.3.2, §8.1) derived from a fleet secret
 * (HKDF-SHA256, label "quack static key"), so any server of the fleet
 * accepts the tokens another issued and resets its connections.
 * Returns 0, QK_ERR_INVALID_ARG (NULL, or secret shorter than
 * QK_FLEET_SECRET_MIN_BYTES) or QK_ERR_TLS (since 1.1).
 */
int qk_fleet_static_key(const uint8_t *secret, size_t secret_len, uint8_t out[32]);

/** Free ticket keys (NULL ok); no endpoint may still use them. */
void qk_ticket_keys_del(qk_ticket_keys *k);

/** When a server answers a new client with Retry (qk_config.retry). */
typedef enum qk_retry_mode {
    QK_RETRY_AUTO = 0,   /**< above qk_config.max_handshakes unvalidated handshakes */
    QK_RETRY_ALWAYS = 1, /**< every new address (what `retry = true` meant) */
    QK_RETRY_NEVER = 2,  /**< never; above the limit Initials are dropped */
} qk_retry_mode;

/**
 * Everything a user tunes. Start from qk_config_default(), which sets every
 * field to the default its documentation gives (the `Default:` lines are the
 * table qk_config_default is generated from), then change what you need:
 * at least alpn, alpn_count and rng, and for a server a certificate.
 * qk_endpoint_new() copies the struct; the strings and callbacks it points
 * to must outlive the endpoint.
 */
typedef struct qk_config {
    /** Accept incoming connections (a server endpoint; a client otherwise).
     * @default{false} */
    bool server;
    /** Server: raise QK_EV_NEW_CONN as each connection's first event, so the
     * application can refuse it (qk_conn_refuse). Off, a server connection's
     * first event is QK_EV_CONNECTED or, with 0-RTT, a stream event, and the
     * client's transport parameters are known at it (streams can be opened),
     * which applications that set up their state at a connection's first
     * event rely on.
     * @default{false} */
    bool new_conn_events;
    /** Application protocols (ALPN, RFC 7301) in preference order; at least
     * one is required (qk_config_check).
     * @default{NULL} */
    const char *alpn[QK_MAX_ALPN];
    /** Entries used in alpn.
     * @default{0} */
    size_t alpn_count;
    /** Server: certificate chain as a PEM file (or use cert_pem).
     * @default{NULL} */
    const char *cert_file;
    /** Server: private key as a PEM file (or use key_pem).
     * @default{NULL} */
    const char *key_file;
    /** Server: certificate chain as an in-memory PEM string.
     * @default{NULL} */
    const char *cert_pem;
    /** Server: private key as an in-memory PEM string.
     * @default{NULL} */
    const char *key_pem;
    /** Client: verify the server by pin_sha256 instead of the system CAs.
     * Client verification is exactly one of system CAs (the default), a
     * pin, or insecure.
     * @default{false} */
    bool has_pin;
    /** Client, with has_pin: SHA-256 of the server's SubjectPublicKeyInfo
     * (qk_cert_pin_pem).
     * @default{0} */
    uint8_t pin_sha256[32];
    /** Client: no verification at all (loud in the CLI).
     * @default{false} */
    bool insecure;
    /** TLS key log (NSS format): called with one line per secret, without
     * the newline; NULL = off. The library opens no file and reads no
     * environment: qk_io_log_files() (quack/io.h) writes SSLKEYLOGFILE.
     * @default{NULL} */
    void (*keylog)(void *ctx, const char *line);
    /** Passed to keylog.
     * @default{NULL} */
    void *keylog_ctx;
    /** Null cipher: both sides must set it (benchmarks only).
     * @default{false} */
    bool no_protection;
    /** TLS 1.3 cipher suites offered/accepted, colon-separated IANA names in
     * preference order (e.g. "TLS_AES_128_CCM_SHA256:TLS_AES_128_GCM_SHA256");
     * NULL = AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305, AES-128-CCM.
     * TLS_AES_128_CCM_8_SHA256 is refused (RFC 9001 §5.3).
     * @default{NULL} */
    const char *ciphers;
    /** Server: issue session tickets for resumption (RFC 9001 §4.5). Off by
     * default, so every client makes a full handshake; `quack serve` turns
     * it on.
     * @default{false} */
    bool session_tickets;
    /** Server: accept 0-RTT; client: send 0-RTT when the session given to
     * qk_connect_ex allows it (RFC 9001 §4.6, RFC 9000 §7.4.1).
     * @default{true} */
    bool early_data;
    /** Server: ticket keys shared between endpoints (qk_ticket_keys_new);
     * NULL = the endpoint makes its own.
     * @default{NULL} */
    qk_ticket_keys *ticket_keys;
    /** Server with its own ticket keys: ticket lifetime and key rotation
     * period; 0 = 6 h.
     * @default{0} */
    qk_time ticket_lifetime_ns;

    /** Congestion controller (docs/cc.md).
     * @default{QK_CONFIG_CC_CUBIC} */
    qk_cc_kind cc;
    /** Pacing gain N in congestion avoidance, in percent: the pacer sends at
     * N/100 x cwnd / smoothed RTT (RFC 9002 §7.7: N small but at least 1, for
     * example 1.25). 0 = 100 (N = 1). Accepted 100..400.
     * Higher values (1.25, Linux's 1.2) release a window-limited flow's
     * packets with its ACKs; docs/perf.md "Two-flow fairness" shows what
     * that does at a drop-tail queue.
     * @default{0} */
    uint32_t pacing_gain_ca_pct;
    /** The pacer's least burst allowance, in datagrams (RFC 9002 §7.7
     * bounds bursts by the initial window). 0 = the controller's default:
     * 2 for DCTCP and Prague (their marks come per packet), 1 for BBR (its
     * send quantum rules), 10 otherwise. Accepted 0..64.
     * @default{0} */
    uint32_t pacing_burst_pkts;
    /** Mark ECT(0) and validate ECN (RFC 9000 §13.4).
     * @default{false} */
    bool ecn;
    /** Largest datagram we send; with pmtud the upper bound of the search,
     * which starts at 1200. The default is what IPv6 carries in a 1500-byte
     * Ethernet frame.
     * @default{1452} */
    size_t max_udp_payload_bytes;
    /** DPLPMTUD (RFC 8899, RFC 9000 §14.3).
     * @default{true} */
    bool pmtud;
    /** Initiate a 1-RTT key update after this many packets; 0 = only at the
     * AEAD limits (RFC 9001 §6.6).
     * @default{0} */
    uint64_t key_update_after_pkts;
    /** Advertise disable_active_migration (RFC 9000 §18.2).
     * @default{false} */
    bool disable_active_migration;
    /** Server: the IPv4 address to advertise in the preferred_address
     * transport parameter (RFC 9000 §9.6, §18.2), AF_INET or a v4-mapped
     * AF_INET6; len 0 = none. The application must receive there too and
     * hand those datagrams to the same endpoint (e.g. a second socket in the
     * same loop, qk_io_loop_add_udp); the endpoint sends from it once a
     * client moved (qk_datagram.local). Clients get a connection ID
     * (sequence number 1) for it, and move after validating the path.
     * @default{0} */
    qk_addr preferred_addr_v4;
    /** Server: the IPv6 address to advertise likewise; len 0 = none.
     * @default{0} */
    qk_addr preferred_addr_v6;
    /** Client: do not move to a server's preferred_address (by default it
     * moves, RFC 9000 §9.6.1, once the handshake is confirmed and the path
     * to the address of our family is validated).
     * @default{false} */
    bool disable_preferred_address;

    /** Connection receive window we start with (RFC 9000 §4, initial_max_data).
     * A small start, auto-tuned up (docs/experiments/flow-control.md):
     * auto-tuning reaches the bandwidth-delay product within a few RTTs.
     * @default{256 * 1024} */
    uint64_t initial_max_data_bytes;
    /** Stream receive window we start with (initial_max_stream_data_*).
     * @default{64 * 1024} */
    uint64_t initial_max_stream_data_bytes;
    /** Bidirectional streams the peer may open (initial_max_streams_bidi).
     * @default{100} */
    uint64_t max_streams_bidi;
    /** Unidirectional streams the peer may open (initial_max_streams_uni).
     * @default{100} */
    uint64_t max_streams_uni;
    /** Per stream: bytes written and not yet acknowledged, at most. What is in
     * flight plus what waits behind a lost packet until its retransmission
     * is acknowledged: 1 MiB held a bulk stream to 0.5-1 BDP of
     * 100 Mbit/s x 50 ms at a loss rate of 0.01; Linux's tcp_wmem maximum is 4 MiB too.
     * @default{4 * 1024 * 1024} */
    uint64_t max_stream_send_buffer_bytes;
    /** Grow receive windows when credit goes fast.
     * @default{true} */
    bool autotune;
    /** Auto-tuning cap per stream.
     * @default{64 * 1024 * 1024} */
    uint64_t max_stream_window_bytes;
    /** Auto-tuning cap per connection.
     * @default{96 * 1024 * 1024} */
    uint64_t max_conn_window_bytes;
    /** Endpoint-wide cap on receive-window growth: the bytes stream windows
     * hold above their initial size, over all connections (a connection
     * window is not charged: the peer can fill at most its streams'
     * credit). 0 = none.
     * @default{0} */
    uint64_t recv_budget_bytes;
    /** Send-side memory, per connection: stream bytes written and not yet
     * acknowledged, summed over its streams; 0 = no bound beyond
     * max_stream_send_buffer_bytes. qk_stream_write and qk_stream_write_ref
     * accept no more than this and send_budget_bytes allow; a short write is
     * answered later by QK_EV_STREAM_WRITABLE, and qk_stream_send_room says
     * how many bytes a stream takes now, so an application can produce (read
     * from a file, generate) exactly that much.
     * @default{0} */
    uint64_t max_conn_send_buffer_bytes;
    /** Send-side memory, per endpoint: the same sum over all its
     * connections; 0 = none.
     * @default{0} */
    uint64_t send_budget_bytes;
    /** When nonzero, a stream accepts bytes only up to what the peer's flow
     * control lets it send (its MAX_STREAM_DATA and the connection's
     * remaining MAX_DATA, RFC 9000 §4.1) plus this many: a peer that stops
     * reading makes the sender hold no more than the credit it granted.
     * 0 = off (writes fill the send buffers whatever the credit).
     * @default{0} */
    uint64_t send_credit_lookahead_bytes;
    /** Window auto-tuning rule (experiments): trigger 0 = the credit lasted
     * less than 2 smoothed RTTs (quiche, yamux), 1 = quic-go's epoch; add 2
     * for plain doubling (else grow to 2.5 x rate x smoothed RTT, at most 2x).
     * @default{0} */
    int autotune_rule;

    /** Idle timeout (RFC 9000 §10.1); 0 = none.
     * @default{30 * QK_NS_PER_S} */
    qk_time idle_timeout_ns;
    /** A connection whose handshake has not completed this long after it
     * started closes silently with QK_ERR_TIMEOUT (0 = only the idle
     * timeout): a client with no server answering gives up, a server drops
     * half-open connections, well before the idle timeout.
     * @default{10 * QK_NS_PER_S} */
    qk_time handshake_timeout_ns;
    /** Keep-alive (RFC 9000 §10.1.2): once the handshake is complete, send a
     * PING when nothing has arrived from the peer and nothing ack-eliciting
     * has been sent for this long. Keeps an idle connection under the idle
     * timeout and lets a client that only receives show the server a new
     * NAT binding. 0 = off.
     * @default{0} */
    qk_time keep_alive_ns;
    /** Advertised max_ack_delay (RFC 9000 §18.2).
     * @default{25 * QK_NS_PER_MS} */
    qk_time max_ack_delay_ns;
    /** Advertised ack_delay_exponent (RFC 9000 §18.2).
     * @default{3} */
    uint8_t ack_delay_exponent;
    /** Local ACK policy: ack-eliciting packets that may arrive without an
     * ACK before one is sent at once (the ack-frequency draft's threshold;
     * 1 = an ACK every second packet, as RFC 9000 §13.2.2 recommends). The
     * peer's ACK_FREQUENCY frames override it.
     * @default{1} */
    uint64_t ack_eliciting_threshold;
    /** Advertise min_ack_delay (ack-frequency): 0 = don't. Our timers honour
     * 1 ms; a peer without the extension sees RFC 9000 behaviour.
     * @default{1 * QK_NS_PER_MS} */
    qk_time min_ack_delay_ns;
    /** What to ask the peer with ACK_FREQUENCY frames (only a peer that
     * advertised min_ack_delay): QK_ACKFREQ_AUTO derives the threshold from
     * cwnd and RTT and asks for IMMEDIATE_ACK at each burst's end while the
     * path has no standing queue (docs/experiments/ack-frequency.md).
     * @default{QK_ACKFREQ_AUTO} */
    qk_ackfreq_mode ack_frequency;
    /** With QK_ACKFREQ_FIXED: the ack-eliciting threshold asked for.
     * @default{0} */
    uint64_t ack_frequency_threshold;
    /** With QK_ACKFREQ_FIXED: the max ack delay asked for.
     * @default{0} */
    qk_time ack_frequency_delay_ns;
    /** With QK_ACKFREQ_FIXED: the reordering threshold asked for (0 = the
     * loss threshold).
     * @default{0} */
    uint64_t ack_frequency_reorder;
    /** Experimental: while the peer acknowledges every T > 1 packets, allow
     * (T - 1) / 2 datagrams (at most cwnd / 8) in flight beyond cwnd for the
     * packets it holds back. This breaks RFC 9002 §7's "MUST NOT exceed the
     * congestion window"; see docs/experiments/ack-frequency.md.
     * @default{false} */
    bool ack_frequency_cwnd_allowance;
    /** Congestion-control bypass for urgent traffic (docs/experiments/media.md):
     * stream and DATAGRAM data whose RFC 9218 urgency is strictly below this
     * limit may be sent when the congestion window or the pacer would block
     * it, through a token bucket of bypass_rate_bps holding at most
     * bypass_bucket_bytes. Never past the anti-amplification limit or flow
     * control. With it on, while ACKs are late (packets outstanding and none
     * for half the min RTT + 1 ms, e.g. a Wi-Fi suspension) data at or above
     * the limit waits in the sender, so the stalled link queues only urgent
     * frames. 0 = off; the rate or bucket 0 also turns it off.
     * @default{0} */
    uint8_t bypass_urgency_limit;
    /** The bypass bucket's refill rate, bytes per second (1 Mbit/s).
     * @default{125000} */
    uint64_t bypass_rate_bps;
    /** The bypass bucket's size, bytes.
     * @default{2560} */
    uint64_t bypass_bucket_bytes;
    /** With the bypass on (bypass_urgency_limit > 0): a path that has had
     * packets outstanding without any acknowledgement for this long is
     * declared failed (QK_EV_PATH_FAILED, the connection closes with reason
     * "path failed"), even while a bypass drip keeps sending. Never below 3x
     * the un-backed-off PTO; 0 = off. Without the bypass the PTO and idle
     * timers decide (a 3 s outage is survived); QK_EV_PATH_DEGRADED is
     * raised either way.
     * @default{1 * QK_NS_PER_S} */
    qk_time path_failed_ns;
    /** Largest DATAGRAM frame we accept (RFC 9221 max_datagram_frame_size);
     * 0 = DATAGRAM not supported (the peer cannot send them, and
     * qk_datagram_send on our side needs the peer's support, not ours).
     * @default{0} */
    uint64_t max_datagram_frame_bytes;
    /** Outgoing DATAGRAM frames queued at most per connection
     * (qk_datagram_send returns QK_ERR_LIMIT beyond).
     * @default{64} */
    size_t max_pending_datagrams;
    /** Length of our connection IDs, 1..20 (0 is refused: quack does not
     * demultiplex by address).
     * @default{8} */
    uint8_t cid_bytes;
    /** Put cid_server_id in every connection ID we issue, in clear (QUIC-LB
     * plaintext CIDs, draft-ietf-quic-load-balancers §5.2): first octet =
     * config rotation 0 and the length self-description (cid_bytes - 1),
     * then the one-byte server ID, then random nonce bytes. Lets a worker
     * thread (or a QUIC-LB load balancer) route a datagram by its DCID alone
     * (qk_cid_server_id). Needs cid_bytes >= 4.
     * @default{false} */
    bool cid_encode_server_id;
    /** The server ID cid_encode_server_id puts in connection IDs.
     * @default{0} */
    uint8_t cid_server_id;
    /** Connection IDs we accept from the peer (active_connection_id_limit,
     * 2..8).
     * @default{4} */
    uint64_t active_cid_limit;
    /** Connections an endpoint holds at once; a server refuses more with
     * CONNECTION_REFUSED, a client's qk_connect returns QK_ERR_LIMIT.
     * @default{1024} */
    size_t max_connections;

    /** Client: the QUIC version to use, QK_VERSION_1 or QK_VERSION_2 (0 =
     * v1). Server: 0 = accept v1 and v2, else only this one (others get
     * Version Negotiation, RFC 9000 §6).
     * @default{0} */
    uint32_t version;
    /** Client: a version to offer first (0 = off), e.g. an unknown
     * 0x?a?a?a?a one; on a Version Negotiation packet listing version the
     * attempt restarts in that version (RFC 9000 §6.2).
     * @default{0} */
    uint32_t offer_version;
    /** Server: when to validate a new client address with a Retry
     * (RFC 9000 §8.1.2): QK_RETRY_AUTO above max_handshakes, QK_RETRY_ALWAYS
     * for every one, QK_RETRY_NEVER (then Initials above max_handshakes are
     * dropped).
     * @default{QK_RETRY_AUTO} */
    qk_retry_mode retry;
    /** Server: unvalidated handshakes in progress above which new clients
     * get a Retry (AUTO) or are dropped (NEVER); 0 = max_connections / 8, at
     * least 16.
     * @default{0} */
    size_t max_handshakes;
    /** Server: handshakes in progress (validated or not) at which new
     * Initials are dropped; 0 = 2 x max_handshakes.
     * @default{0} */
    size_t max_handshakes_drop;
    /** Server: Retry token validity.
     * @default{10 * QK_NS_PER_S} */
    qk_time retry_token_lifetime_ns;
    /** Server: NEW_TOKEN token validity (RFC 9000 §8.1.3); 0 = none sent.
     * @default{24 * 3600 * QK_NS_PER_S} */
    qk_time new_token_lifetime_ns;
    /** Stateless-reset and token key (RFC 9000 §10.3); all zero = random per
     * endpoint (a restarted server needs the same key to reset and to accept
     * its tokens).
     * @default{0} */
    uint8_t static_key[32];
    /** Stateless resets sent per second, at most (RFC 9000 §10.3.3).
     * @default{100} */
    uint32_t max_resets_per_s;

    /** qlog (JSON-SEQ), one trace per connection, through the caller:
     * qlog_open(ctx, name) starts the trace of a connection named
     * "ODCID_client" or "ODCID_server" (ODCID: the original destination
     * connection ID in hex) and returns a handle (NULL: no trace for it).
     * NULL = no qlog. qk_io_log_files() (quack/io.h) writes NAME.sqlog files
     * into a directory.
     * @default{NULL} */
    void *(*qlog_open)(void *ctx, const char *name);
    /** Append len bytes to the trace handle (from qlog_open).
     * @default{NULL} */
    void (*qlog_write)(void *handle, const char *data, size_t len);
    /** End the trace handle.
     * @default{NULL} */
    void (*qlog_close)(void *handle);
    /** Passed to qlog_open.
     * @default{NULL} */
    void *qlog_ctx;
    /** Decoded frames of every packet sent and received, or NULL.
     * @default{NULL} */
    qk_trace_fn trace;
    /** Passed to trace.
     * @default{NULL} */
    void *trace_ctx;
    /** Randomness (required: qk_config_check refuses NULL). Connection IDs,
     * tokens and keys come from it: give a cryptographically secure source
     * (e.g. getrandom).
     * @default{NULL} */
    qk_rng_fn rng;
    /** Passed to rng.
     * @default{NULL} */
    void *rng_ctx;

    /** DNS-carrier profile only (docs/dns.md), 0 everywhere else: RFC 9000
     * §14's 1200-byte minimum relaxed to this many bytes (32..1200). The
     * server accepts client Initials from this size, max_udp_payload_bytes
     * may go down to it (client Initials are padded to min(1200, max)), and a
     * datagram below 1200 bytes counts as 1200 toward the §8.1
     * anti-amplification budget (the carrier answers each query once, so it
     * bounds amplification itself). PMTUD is off below 1200.
     * @default{0} */
    size_t min_datagram_bytes;
    /** The BBR controllers (cc bbr, bbr-lt) never pace above this many bits
     * per second of UDP payload; bbr-lt starts at it in ProbeBW instead of
     * searching in Startup, and still lowers it on loss it classifies as
     * congestion (docs/cc.md "Loss that is not congestion"). 0 = no bound;
     * the other controllers ignore it.
     * @default{0} */
    uint64_t cc_max_rate_bps;
    /** Server: QUIC-LB routable connection IDs (quack/quiclb.h,
     * draft-ietf-quic-load-balancers-21 §5): every connection ID we issue is
     * qk_quiclb_encode_nonce() of this configuration's server ID with random
     * nonce bytes, so a QUIC-LB load balancer sharing the configuration (and
     * any server of the fleet) reads the server ID from a packet's DCID.
     * cid_bytes must equal qk_quiclb_cid_bytes(). With cid_encode_server_id
     * as well, the first nonce byte is cid_server_id (the worker index
     * quack/workers.h steers by, qk_quiclb_decode() recovers it) and the
     * rest stays random. Kept, not copied: it must outlive the endpoint.
     * NULL = off (since 1.1).
     * @default{NULL} */
    const struct qk_quiclb *quiclb;
} qk_config;

/**
 * Fill cfg with the defaults: every field as its `Default:` line says
 * (@ref config_defaults lists them all); cfg_bytes is the caller's
 * sizeof(qk_config), which the macro qk_config_default() passes (see
 * @ref abi "ABI"). A caller built with newer headers gets its fields
 * this library does not know zeroed. Never fails.
 */
void qk_config_default_sized(qk_config *cfg, size_t cfg_bytes);

/** qk_config_default_sized() with the size of the qk_config the caller was
 * compiled with: the way to start a configuration. */
#define qk_config_default(cfg) qk_config_default_sized((cfg), sizeof(qk_config))

/**
 * Check a configuration (cfg_bytes: the caller's sizeof(qk_config); use the
 * macro qk_config_check()) as qk_endpoint_new() does and explain the first
 * problem in why (may be NULL). Returns 0, QK_ERR_CONFIG (e.g. cid_bytes 0:
 * zero-length connection IDs need address-based demultiplexing, which quack
 * does not do) or QK_ERR_VERSION (config.version is not v1 or v2).
 */
int qk_config_check_sized(const qk_config *cfg, size_t cfg_bytes, char *why, size_t why_len);

/** qk_config_check_sized() with the caller's sizeof(qk_config); also returns
 * QK_ERR_UNSUPPORTED when the caller set a field this library is too old
 * to know (built with newer headers). */
#define qk_config_check(cfg, why, why_len)                                                         \
    qk_config_check_sized((cfg), sizeof(qk_config), (why), (why_len))

/** The smallest datagram cfg allows: 1200 (RFC 9000 §14), or min_datagram_bytes when
 * set. Never fails. */
size_t qk_config_min_datagram_bytes(const qk_config *cfg);

/** What qk_endpoint_poll_event reports. */
typedef enum qk_event_type {
    QK_EV_NONE = 0,          /**< no event (never returned by qk_endpoint_poll_event) */
    QK_EV_CONNECTED,         /**< handshake complete (RFC 9001 §4.1.1): 1-RTT keys for both
                                  directions, the peer's transport parameters and ALPN known;
                                  not yet confirmed (see QK_EV_HANDSHAKE_CONFIRMED) */
    QK_EV_CLOSED,            /**< connection fully closed; conn is freed by the next
                                  qk_endpoint_poll_event that returns false (@ref qk_conn) */
    QK_EV_STREAM_OPENED,     /**< peer opened stream_id */
    QK_EV_STREAM_READABLE,   /**< stream_id has data or FIN to read; raised once until the
                                  application calls qk_stream_read (read until QK_ERR_AGAIN) */
    QK_EV_STREAM_WRITABLE,   /**< stream_id accepts more data: after a short write, once ACKs
                                  free a quarter of the send buffer (or its queue drained),
                                  or credit / the send budgets let 16 KiB more in */
    QK_EV_STREAM_RESET,      /**< peer reset stream_id (error_code) */
    QK_EV_STREAM_STOP,       /**< peer asked us to stop sending on stream_id (error_code) */
    QK_EV_DATAGRAM,          /**< a DATAGRAM frame: data/len, a copy owned by the endpoint,
                                  valid until the next qk_endpoint_poll_event() */
    QK_EV_STREAMS_AVAILABLE, /**< the peer raised a stream limit */
    QK_EV_SESSION_TICKET,    /**< client: a session ticket arrived; qk_conn_session_get() */
    QK_EV_PATH_DEGRADED,     /**< packets outstanding and no ACK for about one RTT past when
                                  one was due (lost feedback); raised once per silence */
    QK_EV_PATH_FAILED,       /**< silent past qk_config.path_failed_ns: the connection
                                  closes (QK_EV_CLOSED follows, reason "path failed") */
    /** Server with qk_config.new_conn_events: a client's first Initial
     * packet decrypted and a connection exists for it; always the
     * connection's first event, before any stream or DATAGRAM event. The
     * client's transport parameters are not known yet (streams cannot be
     * opened before QK_EV_CONNECTED). The application may refuse it now
     * (qk_conn_refuse: CONNECTION_REFUSED, RFC 9000 §20.1) on what it knows
     * (qk_conn_peer_addr, its own load); ALPN and SNI are not known yet. */
    QK_EV_NEW_CONN,
    /** The handshake is confirmed (RFC 9001 §4.1.2): the server at completion
     * (right after QK_EV_CONNECTED), the client when HANDSHAKE_DONE arrives
     * or a 1-RTT packet is acknowledged. From then on the peer cannot be
     * rolled back to the handshake: migration and key updates are allowed. */
    QK_EV_HANDSHAKE_CONFIRMED,
    /** The peer acknowledged stream_id's bytes [0, offset) without a gap
     * (RFC 9000 §3.1 "Data Recvd" once fin is true: every byte and the FIN).
     * Raised only for streams that asked (qk_stream_notify_acked), when
     * that offset advances, once per received ACK frame (coalesced). Bytes
     * below offset are never read again: memory given to
     * qk_stream_write_ref for them may be freed or reused. */
    QK_EV_STREAM_ACKED,
    /** A DATAGRAM frame sent with qk_datagram_send_ex was acknowledged;
     * datagram_id is the id that call returned. Each tracked datagram
     * that was sent gets exactly one QK_EV_DATAGRAM_ACKED or
     * QK_EV_DATAGRAM_LOST, unless the connection closes first. */
    QK_EV_DATAGRAM_ACKED,
    /** A DATAGRAM frame sent with qk_datagram_send_ex was declared lost
     * (RFC 9002 §6.1); it is not retransmitted (RFC 9221 §5.2): send it
     * again when it still matters. datagram_id as for
     * QK_EV_DATAGRAM_ACKED. */
    QK_EV_DATAGRAM_LOST,
} qk_event_type;

/** One event (qk_endpoint_poll_event). Fields a type does not use are 0.
 * Later 1.x releases add fields at the end (filled only for callers built
 * with them) and event types (ignore types you do not know). */
typedef struct qk_event {
    qk_event_type type;  /**< what happened */
    qk_conn *conn;       /**< the connection it happened to */
    uint64_t stream_id;  /**< STREAM_*: the stream */
    uint64_t error_code; /**< CLOSED/RESET/STOP: wire code */
    uint64_t frame_type; /**< CLOSED by a transport error: the offending frame type */
    bool app_error;      /**< CLOSED: application (0x1d) vs transport (0x1c) */
    bool remote;         /**< CLOSED: the peer closed (or idle timeout when false) */
    int reason_err;      /**< CLOSED: QK_ERR_* that made us close, 0 for a clean close */
    char reason[256];    /**< CLOSED: reason phrase (what to fix, for handshake failures) */
    const uint8_t *data; /**< DATAGRAM payload */
    size_t len;          /**< DATAGRAM: bytes of data */
    uint64_t offset;     /**< STREAM_ACKED: bytes of the stream acknowledged from offset 0 */
    bool fin;            /**< STREAM_ACKED: the FIN is acknowledged too (the send side is done) */
    /** STREAM_OPENED, STREAM_READABLE: some of the stream's data arrived in
     * 0-RTT packets, which an attacker can replay (RFC 9001 §9.2, RFC 8446
     * §8): act on it only if doing it twice is harmless (qk_stream_is_0rtt) */
    bool zero_rtt;
    uint64_t datagram_id; /**< DATAGRAM_ACKED, DATAGRAM_LOST: the id from qk_datagram_send_ex */
    /** STREAM_* events: the stream's pointer from qk_stream_set_user (its
     * value when the event is polled, or the last one it had when the
     * stream has been forgotten since); NULL when none was set */
    void *stream_user;
} qk_event;

/** Connection statistics (qk_conn_stats_get). Later 1.x releases add
 * counters at the end, filled only for callers built with them. */
typedef struct qk_conn_stats {
    qk_time min_rtt_ns;                     /**< least RTT sample (RFC 9002 §5.2) */
    qk_time smoothed_rtt_ns;                /**< smoothed RTT (RFC 9002 §5.3) */
    qk_time rttvar_ns;                      /**< RTT variation (RFC 9002 §5.3) */
    qk_time latest_rtt_ns;                  /**< last RTT sample */
    uint64_t cwnd_bytes;                    /**< congestion window */
    uint64_t ssthresh_bytes;                /**< slow-start threshold (UINT64_MAX: none yet) */
    uint64_t bytes_in_flight;               /**< bytes sent, not acknowledged nor lost */
    uint64_t pkts_sent;                     /**< packets sent */
    uint64_t pkts_received;                 /**< packets received and decrypted */
    uint64_t pkts_lost;                     /**< packets declared lost */
    uint64_t pkts_spurious;                 /**< of those, acknowledged later */
    uint64_t bytes_sent;                    /**< UDP payload bytes sent */
    uint64_t bytes_received;                /**< UDP payload bytes received */
    uint64_t stream_bytes_sent;             /**< stream data bytes sent (retransmissions too) */
    uint64_t stream_bytes_received;         /**< stream data bytes received */
    uint64_t ack_frames_sent;               /**< ACK frames sent */
    uint64_t ack_frames_received;           /**< ACK frames received */
    uint64_t ack_frequency_frames_sent;     /**< ACK_FREQUENCY frames sent */
    uint64_t ack_frequency_frames_received; /**< ACK_FREQUENCY frames received */
    uint64_t immediate_acks_sent;           /**< IMMEDIATE_ACK frames sent */
    uint64_t immediate_acks_received;       /**< IMMEDIATE_ACK frames received */
    uint64_t ack_frames_sent_immediate;     /**< ACK frames sent at once (threshold, reordering,
                                             *   CE, IMMEDIATE_ACK, handshake) rather than on
                                             *   the max_ack_delay timer */
    uint64_t pto_count;                     /**< probe timeouts (RFC 9002 §6.2) */
    uint64_t congestion_events;             /**< congestion window reductions */
    uint64_t streams_opened_local;          /**< streams we opened */
    uint64_t streams_opened_remote;         /**< streams the peer opened */
    uint64_t datagrams_sent;                /**< DATAGRAM frames sent */
    uint64_t datagrams_received;            /**< DATAGRAM frames received */
    uint64_t ecn_ce_received;               /**< packets received marked CE */
    uint64_t ecn_ect0_received;             /**< packets received marked ECT(0) */
    uint64_t ecn_ect1_received;             /**< packets received marked ECT(1) */
    uint64_t pkts_sent_ect0;                /**< packets we sent marked ECT(0) */
    uint64_t pkts_sent_ect1;             /**< packets we sent marked ECT(1) (the L4S controller) */
    uint64_t keep_alives_sent;           /**< keep-alive PINGs (qk_config.keep_alive_ns) */
    uint64_t handshake_timeouts;         /**< 1 when qk_config.handshake_timeout_ns closed it */
    uint64_t dcid_changes;               /**< moves to a new peer connection ID (RFC 9000 §9.5) */
    uint64_t data_blocked_sent;          /**< DATA_BLOCKED frames (RFC 9000 §19.12) */
    uint64_t pkts_sent_not_cwnd_limited; /**< in-flight packets sent while cwnd was not the limit
                                            (RFC 9002 §7.8: no growth from their ACKs) */
    uint64_t ecn_ce_reported;            /**< CE count the peer reported in ACK_ECN frames */
    uint64_t ecn_ce_events; /**< ACKs whose CE count rose (CC reacts at most once per RTT) */
    uint8_t ecn_state; /**< 0 off, 1 testing, 2 capable (validated), 3 failed (RFC 9000 §13.4.2) */
    uint64_t conn_rx_window_bytes;        /**< current connection receive window */
    uint64_t max_stream_rx_window_bytes;  /**< largest current stream receive window */
    uint64_t peak_rx_buffered_bytes;      /**< most bytes received but not yet read */
    uint64_t peak_stream_rx_window_bytes; /**< largest stream receive window so far */
    uint64_t rx_buffered_bytes;           /**< bytes received but not yet read, now */
    uint64_t peak_rx_credit_bytes;        /**< most connection credit committed (MAX_DATA - read) */
    uint64_t peak_stream_rx_credit_bytes; /**< most one stream's credit (MAX_STREAM_DATA - read) */
    uint64_t key_updates;                 /**< 1-RTT key updates, both initiators (RFC 9001 §6) */
    uint64_t key_updates_initiated;       /**< of which we initiated */
    uint64_t path_challenges_sent;        /**< PATH_CHALLENGE frames sent (RFC 9000 §8.2) */
    uint64_t path_validations;            /**< paths validated (RFC 9000 §8.2) */
    uint64_t migrations;                  /**< peer address changes / our migrations (§9) */
    uint64_t pmtu_bytes;                  /**< current datagram size (DPLPMTUD) */
    uint64_t pmtu_probes_sent;            /**< DPLPMTUD probes sent */
    uint64_t pmtu_probes_lost;            /**< of which lost */
    uint64_t pmtu_black_holes;  /**< black holes detected (back to 1200 bytes, RFC 8899 §4.3) */
    uint64_t zerortt_pkts_sent; /**< client: 0-RTT packets sent */
    uint64_t zerortt_pkts_received; /**< server: 0-RTT packets accepted and processed */
    uint64_t zerortt_pkts_dropped;  /**< server: 0-RTT packets dropped (no 0-RTT keys) */
    uint64_t held_1rtt_pkts; /**< server: 1-RTT packets held until its 1-RTT keys (RFC 9001 §5.7) */
    uint64_t session_fallbacks;    /**< client: 1 when the session given could not be used
                                        locally (e.g. an expired ticket): full handshake */
    uint8_t resumed;               /**< 1: the handshake resumed a session (PSK) */
    uint8_t zerortt;               /**< 0: no 0-RTT, 1: accepted, 2: rejected (the client resent its
                                        0-RTT data in 1-RTT, RFC 9000 §17.2.3) */
    uint64_t bypass_pkts;          /**< packets sent past cwnd/pacer by the urgency bypass */
    uint64_t bypass_bytes;         /**< their bytes */
    uint64_t path_degraded_events; /**< QK_EV_PATH_DEGRADED raised */
    uint64_t path_failed;          /**< 1 when the path was declared failed */
    uint8_t preferred_address;     /**< client: the server's preferred_address (RFC 9000 §9.6):
                                        0 none offered (or not usable: other family, disabled),
                                        1 offered, not probed yet, 2 probing, 3 moved there,
                                        4 validation failed (stayed on the original path) */
} qk_conn_stats;

/** Values of qk_conn_stats.preferred_address. */
enum {
    QK_PREFADDR_NONE = 0,    /**< none offered (or not usable: other family, disabled) */
    QK_PREFADDR_OFFERED = 1, /**< offered, not probed yet */
    QK_PREFADDR_PROBING = 2, /**< the path to it is being validated */
    QK_PREFADDR_MOVED = 3,   /**< the connection moved there */
    QK_PREFADDR_FAILED = 4,  /**< validation failed: stayed on the original path */
};

/**
 * Create an endpoint. The struct is copied; the strings, callbacks, contexts
 * and ticket_keys it points to are kept and must outlive the endpoint.
 * cfg_bytes is the caller's sizeof(qk_config) (use the macro
 * qk_endpoint_new()). Returns the endpoint (free it with qk_endpoint_del),
 * or NULL on an invalid configuration or a failure: qk_endpoint_new_ex says
 * which.
 */
qk_endpoint *qk_endpoint_new_sized(const qk_config *cfg, size_t cfg_bytes);

/** qk_endpoint_new_sized() with the caller's sizeof(qk_config). */
#define qk_endpoint_new(cfg) qk_endpoint_new_sized((cfg), sizeof(qk_config))

/**
 * qk_endpoint_new that says why it failed: on NULL, *err (may be NULL) is
 * QK_ERR_CONFIG or QK_ERR_VERSION (what qk_config_check refuses),
 * QK_ERR_NOMEM, or QK_ERR_TLS (the session-ticket keys could not be made),
 * and why (may be NULL; why_len bytes, 256 is ample) holds a sentence naming
 * the problem and the fix. On success *err is 0 and why "ok". Ownership as
 * qk_endpoint_new.
 */
qk_endpoint *qk_endpoint_new_ex_sized(const qk_config *cfg, size_t cfg_bytes, int *err, char *why,
                                      size_t why_len);

/** qk_endpoint_new_ex_sized() with the caller's sizeof(qk_config). */
#define qk_endpoint_new_ex(cfg, err, why, why_len)                                                 \
    qk_endpoint_new_ex_sized((cfg), sizeof(qk_config), (err), (why), (why_len))

/** Free the endpoint and every connection still open, without events (NULL
 * is a no-op). Every qk_conn of it is invalid afterwards. Never fails. */
void qk_endpoint_del(qk_endpoint *ep);

/**
 * Start a client connection to peer (local may be NULL or unspecified).
 * server_name (may be NULL: no SNI and no name check) is used for SNI and
 * certificate verification, and copied. On success *out is the
 * connection, owned by ep (@ref qk_conn); its first datagrams go out at the
 * next qk_endpoint_send. Returns 0, QK_ERR_INVALID_ARG (ep, peer or out
 * NULL), QK_ERR_LIMIT (max_connections), QK_ERR_NOMEM, QK_ERR_TLS
 * (certificate/config problems), QK_ERR_CONFIG.
 */
int qk_connect(qk_endpoint *ep, const qk_addr *local, const qk_addr *peer, const char *server_name,
               qk_time now, qk_conn **out);

/** Extra inputs of qk_connect_ex (borrowed for the call). Start from `{0}`:
 * later 1.x releases add fields at the end, whose 0 keeps today's behaviour. */
typedef struct qk_connect_opts {
    const uint8_t *session; /**< from qk_conn_session_get() of an earlier connection */
    size_t session_len;     /**< bytes of session */
} qk_connect_opts;

/**
 * qk_connect resuming a session (opts may be NULL; opts_bytes is the caller's
 * sizeof(qk_connect_opts), which the macro qk_connect_ex() passes): with qk_config.early_data
 * and a ticket that allows it, streams written before the handshake completes
 * go out in 0-RTT packets, within the flow-control and stream limits the
 * server announced in the earlier connection (RFC 9000 §7.4.1). Returns what
 * qk_connect returns; QK_ERR_CONFIG for session data that cannot be used.
 */
int qk_connect_ex_sized(qk_endpoint *ep, const qk_addr *local, const qk_addr *peer,
                        const char *server_name, const qk_connect_opts *opts, size_t opts_bytes,
                        qk_time now, qk_conn **out);

/** qk_connect_ex_sized() with the caller's sizeof(qk_connect_opts). */
#define qk_connect_ex(ep, local, peer, server_name, opts, now, out)                                \
    qk_connect_ex_sized((ep), (local), (peer), (server_name), (opts), sizeof(qk_connect_opts),     \
                        (now), (out))

/**
 * Client: true while streams written now go out in 0-RTT packets (a session
 * allowing early data was resumed and the handshake is not complete yet).
 * Always false on a server. Never fails.
 */
bool qk_conn_early_data(const qk_conn *c);

/**
 * Client: the session to resume later (the last ticket plus the server's
 * transport parameters, RFC 9000 §7.4.1), into buf. Returns its length,
 * QK_ERR_AGAIN before a ticket arrived (QK_EV_SESSION_TICKET), or
 * QK_ERR_TOO_LARGE when cap is too small (8 KiB is ample).
 */
long qk_conn_session_get(const qk_conn *c, uint8_t *buf, size_t cap);

/**
 * Process one received UDP datagram (may hold coalesced packets) at now.
 * The data buffer stays the caller's but is decrypted in place (modified);
 * nothing keeps a pointer into it after the call (a DATAGRAM event carries
 * its own copy). Never fails on hostile input: bad packets are dropped or
 * close their connection. Events it causes are queued for
 * qk_endpoint_poll_event. Returns 0 or QK_ERR_INVALID_ARG (ep, d or d->data
 * NULL).
 */
int qk_endpoint_recv(qk_endpoint *ep, qk_datagram *d, qk_time now);

/**
 * Produce up to max datagrams to send at now. Each out[i].data must point to
 * a caller buffer (kept by the caller) whose capacity is out[i].len on input
 * (>= max_udp_payload_bytes); on output len, peer, local and ecn describe
 * the datagram. Call again while it returns max. Returns the number produced
 * (0 when nothing is due: pacing and congestion control decide; see
 * qk_endpoint_next_timeout). Never fails.
 */
size_t qk_endpoint_send(qk_endpoint *ep, qk_datagram *out, size_t max, qk_time now);

/** Earliest time qk_endpoint_on_timeout() must be called, on the caller's
 * clock (QK_TIME_INFINITE: none). It changes after every call into the
 * endpoint: read it again before sleeping. Never fails. */
qk_time qk_endpoint_next_timeout(const qk_endpoint *ep);

/** Run timers that are due at now (loss detection, PTO, ACK delay, idle,
 * drain); call qk_endpoint_send and qk_endpoint_poll_event afterwards.
 * Calling it early is harmless. Never fails. */
void qk_endpoint_on_timeout(qk_endpoint *ep, qk_time now);

/**
 * Pop the next event into ev, filling the ev_bytes the caller's qk_event has
 * (use the macro qk_endpoint_poll_event()). Returns true when one was
 * returned, false when the queue is empty. Its data pointer (DATAGRAM) stays
 * valid until the next call. A call that returns false also frees the
 * connections whose QK_EV_CLOSED was returned earlier (@ref qk_conn): poll
 * until false after every step, or closed connections stay allocated. Never
 * fails.
 */
bool qk_endpoint_poll_event_sized(qk_endpoint *ep, qk_event *ev, size_t ev_bytes);

/** qk_endpoint_poll_event_sized() with the caller's sizeof(qk_event). */
#define qk_endpoint_poll_event(ep, ev) qk_endpoint_poll_event_sized((ep), (ev), sizeof(qk_event))

/**
 * The socket reported that datagrams to peer cannot be delivered (an ICMP
 * port or host unreachable read from its error queue; qk_io_ep_driver does
 * this on sockets opened with QK_UDP_RECVERR). Each client connection to
 * peer whose handshake has not completed closes at once, without a CONNECTION_CLOSE, with
 * reason_err QK_ERR_CONNECTION_REFUSED and reason (e.g. "connection refused: nothing listening on
 * 127.0.0.1:4433 (ICMP port unreachable)") instead of waiting for the handshake timeout.
 * Established connections and servers ignore it: ICMP is unauthenticated (RFC 8085 §5.2; RFC 9000
 * §14.2 treats it as a hint). Returns the number of connections closed (their QK_EV_CLOSED is
 * queued), or QK_ERR_INVALID_ARG.
 */
int qk_endpoint_on_unreachable(qk_endpoint *ep, const qk_addr *peer, const char *reason,
                               qk_time now);

/** Number of live connections (closed ones not yet freed are not counted). Never fails. */
size_t qk_endpoint_conn_count(const qk_endpoint *ep);

/** Stateless packets and token decisions of an endpoint (qk_endpoint_stats_get).
 * Later 1.x releases add counters at the end. */
typedef struct qk_endpoint_stats {
    uint64_t vn_sent;            /**< Version Negotiation packets sent */
    uint64_t retry_sent;         /**< Retry packets sent */
    uint64_t resets_sent;        /**< stateless resets sent */
    uint64_t resets_limited;     /**< resets not sent (rate limit, queue full, too small) */
    uint64_t tokens_accepted;    /**< Initial tokens that validated the address */
    uint64_t tokens_refused;     /**< Retry tokens expired / for another address (INVALID_TOKEN) */
    uint64_t tokens_ignored;     /**< undecryptable or stale NEW_TOKEN tokens (treated as none) */
    uint64_t initials_dropped;   /**< Initials dropped (limits, undecryptable first packet) */
    uint64_t initials_accepted;  /**< Initials that created a connection (unvalidated address) */
    uint64_t initials_validated; /**< Initials that created one with a validated address */
    uint64_t retry_load;         /**< Retries sent because of max_handshakes (part of retry_sent) */
    uint64_t drops_handshakes;   /**< Initials dropped at max_handshakes_drop / NEVER's limit
                                      (part of initials_dropped) */
    uint64_t drops_connections;  /**< Initials refused at max_connections: answered with a
                                      CONNECTION_REFUSED close, no state kept (part of
                                      initials_dropped) */
    uint64_t handshakes_now;     /**< server handshakes in progress now */
    uint64_t handshakes_unvalidated_now; /**< of which from unvalidated addresses */
    uint64_t stateless_dropped;        /**< stateless packets dropped because the queue was full */
    uint64_t send_buffered_bytes;      /**< stream bytes written, not yet acknowledged, now */
    uint64_t send_buffered_peak_bytes; /**< the most ever (bounded by send_budget_bytes) */
} qk_endpoint_stats;

/** Copy the endpoint's statistics: the out_bytes the caller's struct has
 * (use the macro qk_endpoint_stats_get()). Never fails. */
void qk_endpoint_stats_get_sized(const qk_endpoint *ep, qk_endpoint_stats *out, size_t out_bytes);

/** qk_endpoint_stats_get_sized() with the caller's sizeof(qk_endpoint_stats). */
#define qk_endpoint_stats_get(ep, out)                                                             \
    qk_endpoint_stats_get_sized((ep), (out), sizeof(qk_endpoint_stats))

/**
 * Open a local stream. Returns 0 and the id in *stream_id, QK_ERR_STREAM_LIMIT
 * when the peer's limit is reached (wait for QK_EV_STREAMS_AVAILABLE), or
 * QK_ERR_CLOSED (closing) / QK_ERR_STATE (before the handshake is allowed:
 * data waits, or goes in 0-RTT).
 */
int qk_stream_open(qk_conn *c, bool bidi, uint64_t *stream_id);

/** The first this many bytes of every stream are accepted whatever the
 * connection's and the endpoint's send budgets and the credit lookahead
 * (max_conn_send_buffer_bytes, send_budget_bytes,
 * send_credit_lookahead_bytes), as long as the stream's own buffer has
 * room: a request or response header on a new stream (an HTTP/3 HEADERS
 * frame, a tunnel's flow header) is never refused because other streams'
 * bulk data fills the budgets. They still wait for flow-control credit to
 * be sent (RFC 9000 §4.1). What they add is bounded by the open streams. */
#define QK_STREAM_HEAD_BYTES 1024u

/**
 * Queue data (and optionally FIN) on a stream; the bytes accepted are copied
 * (data is borrowed for the call). Returns bytes accepted (may be less than
 * len when the send buffer, the send budgets or the credit lookahead of
 * qk_config are full: see qk_stream_send_room; wait for
 * QK_EV_STREAM_WRITABLE; the FIN goes only with the last byte; a stream's
 * first QK_STREAM_HEAD_BYTES pass the budgets), or QK_ERR_NOT_FOUND,
 * QK_ERR_STATE (stream cannot send), QK_ERR_CLOSED, QK_ERR_NOMEM.
 */
long qk_stream_write(qk_conn *c, uint64_t stream_id, const uint8_t *data, size_t len, bool fin);

/**
 * qk_stream_write without the copy: the stream keeps a pointer to data and
 * packets are sealed straight from it. The bytes must stay valid and
 * unchanged until they are released, because retransmissions read them:
 * bytes [a, b) of the stream are released by a QK_EV_STREAM_ACKED for the
 * stream with offset >= b (turn those on with qk_stream_notify_acked before
 * writing), by qk_stream_reset of the stream returning 0, or by the
 * connection's QK_EV_CLOSED, whichever comes first. Suits data the
 * application holds anyway (a static buffer, an mmap()ed file). Writes of
 * memory contiguous with the previous one share one record; past
 * QK_SENDBUF_MAX_REFS (256) records per stream the bytes are copied.
 * Returns as qk_stream_write: bytes accepted, QK_ERR_NOT_FOUND,
 * QK_ERR_STATE, QK_ERR_CLOSED, or QK_ERR_NOMEM.
 */
long qk_stream_write_ref(qk_conn *c, uint64_t stream_id, const uint8_t *data, size_t len, bool fin);

/**
 * How many bytes qk_stream_write would accept on stream_id now: the least of
 * the stream's send-buffer room, the connection's and the endpoint's send
 * budgets (max_conn_send_buffer_bytes, send_budget_bytes) and, with
 * send_credit_lookahead_bytes, the peer's flow-control credit plus that
 * lookahead; but never less than what is left of the stream's first
 * QK_STREAM_HEAD_BYTES (its own buffer permitting). The pull model: produce
 * this many bytes, write them, and wait for QK_EV_STREAM_WRITABLE (or the
 * next step) when it is 0. Returns the count, QK_ERR_NOT_FOUND (no such
 * stream), QK_ERR_STATE (no send side, or finished or reset), QK_ERR_CLOSED.
 */
long qk_stream_send_room(qk_conn *c, uint64_t stream_id);

/**
 * Read up to cap bytes into buf (the caller's). *fin (may be NULL) is set
 * when the FIN has been read: the stream's receive side is then done and
 * the stream is forgotten once its send side is too. Returns bytes read (0
 * with *fin true at the end), QK_ERR_AGAIN when nothing is readable yet
 * (QK_EV_STREAM_READABLE follows when something is), QK_ERR_CLOSED (the
 * peer reset the stream), QK_ERR_NOT_FOUND (no such stream, or forgotten),
 * QK_ERR_STATE (no receive side).
 */
long qk_stream_read(qk_conn *c, uint64_t stream_id, uint8_t *buf, size_t cap, bool *fin);

/**
 * Zero-copy read, part 1: *data points at the next bytes of the stream held
 * by the connection and the return value is how many follow contiguously
 * (a piece of the receive buffer, at most 4096 bytes; call again after
 * qk_stream_consume for the next). The view stays valid until the next call
 * into this connection. When nothing is readable it returns what
 * qk_stream_read would for an empty buffer: 0 with *fin = true at the end
 * of the stream (the stream is then done), QK_ERR_AGAIN, QK_ERR_CLOSED
 * (peer reset), QK_ERR_STATE; also QK_ERR_NOT_FOUND.
 */
long qk_stream_peek(qk_conn *c, uint64_t stream_id, const uint8_t **data, bool *fin);

/**
 * Zero-copy read, part 2: the application is done with the first n bytes
 * shown by qk_stream_peek (flow-control credit follows, as after
 * qk_stream_read). Returns n, with *fin = true when that was the end of the
 * stream (the stream is then done), or QK_ERR_INVALID_ARG (n more than is
 * readable), QK_ERR_NOT_FOUND.
 */
long qk_stream_consume(qk_conn *c, uint64_t stream_id, size_t n, bool *fin);

/** Abruptly end our sending side (RESET_STREAM, RFC 9000 §3.1 with
 * app_error): unsent and unacknowledged data is dropped, and memory given to
 * qk_stream_write_ref for it is released when this returns 0. Returns 0,
 * QK_ERR_NOT_FOUND, QK_ERR_STATE (no send side, or already done or reset). */
int qk_stream_reset(qk_conn *c, uint64_t stream_id, uint64_t app_error);

/** Ask the peer to stop sending (STOP_SENDING, RFC 9000 §3.5, with
 * app_error). Returns 0, QK_ERR_NOT_FOUND, QK_ERR_STATE (no receive side,
 * or everything already received). */
int qk_stream_stop(qk_conn *c, uint64_t stream_id, uint64_t app_error);

/** Urgency of a stream and of a DATAGRAM frame: 0 (highest) to 7 (RFC 9218 §4.1). */
#define QK_URGENCY_MAX 7
/** The neutral urgency, RFC 9218 §4.1's default (streams start with it). */
#define QK_URGENCY_DEFAULT 3

/** RFC 9218 urgency 0 (highest) .. QK_URGENCY_MAX (larger values are
 * clamped) and incremental flag. Returns 0 or QK_ERR_NOT_FOUND. */
int qk_stream_set_priority(qk_conn *c, uint64_t stream_id, uint8_t urgency, bool incremental);

/**
 * Attach an application pointer to a stream (the stack never reads it); it
 * comes back in qk_event.stream_user of the stream's events and from
 * qk_stream_get_user. Set it on QK_EV_STREAM_OPENED for a peer's stream,
 * after qk_stream_open for one's own. Free what it points to when the
 * stream is done: after reading the FIN or a reset, and QK_EV_STREAM_ACKED
 * with fin (or one's own reset) on the send side, or at QK_EV_CLOSED.
 * Returns 0 or QK_ERR_NOT_FOUND (no such stream, or already forgotten).
 */
int qk_stream_set_user(qk_conn *c, uint64_t stream_id, void *user);

/** The pointer given to qk_stream_set_user; NULL when none was set or the
 * stream does not exist (any more). Never fails. */
void *qk_stream_get_user(const qk_conn *c, uint64_t stream_id);

/**
 * Raise QK_EV_STREAM_ACKED for stream_id (on = true) whenever the
 * acknowledged prefix of what it sent grows, or stop (false). Off by
 * default: bulk senders that do not need it pay nothing. Returns 0,
 * QK_ERR_NOT_FOUND, QK_ERR_STATE (the stream has no send side).
 */
int qk_stream_notify_acked(qk_conn *c, uint64_t stream_id, bool on);

/**
 * Whether any of stream_id's received data (or its FIN or a reset) came in
 * 0-RTT packets (server side, with qk_config.early_data): such data can be
 * replayed by an attacker (RFC 9001 §9.2, RFC 8446 §8), so act on it only
 * when doing it twice is harmless, or wait for QK_EV_CONNECTED. Returns 1,
 * 0, or QK_ERR_NOT_FOUND.
 */
int qk_stream_is_0rtt(const qk_conn *c, uint64_t stream_id);

/**
 * Send an unreliable DATAGRAM frame (RFC 9221) with an urgency from 0 to
 * QK_URGENCY_MAX (QK_URGENCY_DEFAULT is neutral; lower goes first). The
 * payload is copied into the connection's queue (max_pending_datagrams).
 * Returns 0, QK_ERR_AGAIN (the peer's transport parameters have not arrived
 * yet: try again after QK_EV_CONNECTED), QK_ERR_UNSUPPORTED (the peer did
 * not advertise DATAGRAM support: it never will on this connection),
 * QK_ERR_TOO_LARGE (more than qk_conn_datagram_max_payload), QK_ERR_LIMIT
 * (queue full), QK_ERR_INVALID_ARG (urgency), QK_ERR_CLOSED, QK_ERR_NOMEM.
 */
int qk_datagram_send(qk_conn *c, const uint8_t *data, size_t len, uint8_t urgency);

/**
 * qk_datagram_send that tracks the frame: *id (not NULL) gets the
 * datagram's id, unique on the connection (1, 2, ...), and once the packet
 * carrying it is acknowledged or declared lost, QK_EV_DATAGRAM_ACKED or
 * QK_EV_DATAGRAM_LOST reports that id. Returns what qk_datagram_send
 * returns, or QK_ERR_INVALID_ARG for a NULL id (*id is written only on 0).
 */
int qk_datagram_send_ex(qk_conn *c, const uint8_t *data, size_t len, uint8_t urgency, uint64_t *id);

/**
 * The largest payload qk_datagram_send accepts on c now: the peer's
 * max_datagram_frame_size and the current packet size (which DPLPMTUD may
 * raise, or lower on a black hole) less the frame's overhead. Returns it,
 * QK_ERR_AGAIN before the peer's transport parameters arrived (after
 * QK_EV_CONNECTED they have), QK_ERR_UNSUPPORTED (the peer does not accept
 * DATAGRAM frames), QK_ERR_CLOSED.
 */
long qk_conn_datagram_max_payload(const qk_conn *c);

/**
 * Initiate a 1-RTT key update now (RFC 9001 §6.1). Returns 0, QK_ERR_STATE
 * (handshake not confirmed, connection closing, or our previous update not
 * yet acknowledged by the peer) or QK_ERR_INVALID_ARG.
 */
int qk_conn_key_update(qk_conn *c, qk_time now);

/**
 * The server ID a datagram's destination CID carries (QUIC-LB plaintext
 * format of qk_config.cid_encode_server_id, our CIDs being cid_bytes long):
 * for a short header the DCID after the first byte, for a long header the
 * DCID field. Sans-I/O and stateless, for steering datagrams between
 * endpoints. Returns the server ID (0..255), or -1 when the DCID is not in
 * that format (e.g. the random DCID of a client's first Initial) or the
 * packet is too short (never a QK_ERR_*). *short_header (may be NULL) says
 * which form it was.
 */
int qk_cid_server_id(const uint8_t *pkt, size_t len, uint8_t cid_bytes, bool *short_header);

/**
 * Client: migrate the connection to a new local address (RFC 9000 §9.2):
 * probe the path from new_local with PATH_CHALLENGE on a connection ID not
 * used before, and switch to it (congestion state and RTT reset, §9.4,
 * unless only the port changed) when the PATH_RESPONSE arrives; a probe that
 * fails leaves the connection where it was. Nothing changes when it returns
 * an error: keep using the current local address. Returns 0,
 * QK_ERR_INVALID_ARG, QK_ERR_STATE (server, handshake not confirmed, closing,
 * or a migration is in progress: may succeed later), QK_ERR_LIMIT (no spare
 * connection ID from the peer yet: may succeed later) or QK_ERR_UNSUPPORTED
 * (the server sent disable_active_migration, RFC 9000 §18.2: this connection
 * must never move, so do not ask again).
 */
int qk_conn_migrate(qk_conn *c, const qk_addr *new_local, qk_time now);

/**
 * Client: move to another port of the server's address (port hopping, see
 * docs/tunnel.md "Port hopping"): probe server:peer_port from the current
 * local address with a PATH_CHALLENGE on a spare connection ID (RFC 9000
 * §8.2, §9.5), keep using the current path meanwhile, and move once the
 * PATH_RESPONSE arrives (then a PING goes there at once, so the server
 * moves too: §9.3). A hop still being probed is given up for this one (its
 * connection ID retired); a probe that gets no answer is abandoned after 3
 * PTOs (§8.2.4) and the connection stays where it is. The server must
 * accept a validated client's packets on that port as a new path of the
 * same connection (quack's does). Returns 0, QK_ERR_INVALID_ARG (NULL, port
 * 0, or the current port), QK_ERR_STATE (a server, the handshake not yet
 * confirmed, or a qk_conn_migrate / preferred-address probe in progress),
 * QK_ERR_LIMIT (no spare connection ID from the peer yet: may succeed
 * later) or QK_ERR_UNSUPPORTED (the server sent disable_active_migration,
 * RFC 9000 §18.2: do not ask again).
 */
int qk_conn_hop(qk_conn *c, uint16_t peer_port, qk_time now);

/**
 * The addresses of the connection's current path (either may be NULL): the
 * local one (unspecified when the connection was started without one) and
 * the peer's, which changes when the peer migrates (server) or when the
 * client moves to a server's preferred_address (RFC 9000 §9). Never fails.
 */
void qk_conn_path_addrs(const qk_conn *c, qk_addr *local, qk_addr *peer);

/**
 * Close with an application error code and reason (copied; may be NULL): a
 * CONNECTION_CLOSE goes out at the next qk_endpoint_send, and QK_EV_CLOSED
 * follows once the closing period is over (RFC 9000 §10.2). Returns 0 or
 * QK_ERR_CLOSED (already closing).
 */
int qk_conn_close(qk_conn *c, uint64_t app_error, const char *reason);

/**
 * Server: refuse a connection, typically while handling its
 * QK_EV_NEW_CONN (qk_config.new_conn_events), before the handshake
 * flight answering the client's Initial is sent: it closes with the transport error
 * CONNECTION_REFUSED (0x2, RFC 9000 §20.1) and reason (copied; may be NULL), so the client's
 * QK_EV_CLOSED says reason_err QK_ERR_CONNECTION_REFUSED at once instead of
 * a timeout. Nothing more it sent is processed; QK_EV_CLOSED follows as
 * after qk_conn_close. Returns 0, QK_ERR_STATE (a client connection: use
 * qk_conn_close) or QK_ERR_CLOSED (already closing).
 */
int qk_conn_refuse(qk_conn *c, const char *reason);

/** Copy the connection's statistics: the out_bytes the caller's struct has
 * (use the macro qk_conn_stats_get()). Never fails. */
void qk_conn_stats_get_sized(const qk_conn *c, qk_conn_stats *out, size_t out_bytes);

/** qk_conn_stats_get_sized() with the caller's sizeof(qk_conn_stats). */
#define qk_conn_stats_get(c, out) qk_conn_stats_get_sized((c), (out), sizeof(qk_conn_stats))

/** Negotiated ALPN (NULL before the handshake completes); the string is the
 * connection's, valid as long as it is. Never fails. */
const char *qk_conn_alpn(const qk_conn *c);

/** The peer's address on the current path into out (e.g. for a log line). Never fails. */
void qk_conn_peer_addr(const qk_conn *c, qk_addr *out);

/**
 * The SHA-256 of the SubjectPublicKeyInfo of the certificate the peer
 * presented (the value quack's pins take), into out (32 bytes). Available
 * once the peer's Certificate arrived, also when its verification failed
 * (e.g. while handling QK_EV_CLOSED after a pin mismatch), so a tool can show
 * the key it was offered. Returns 0, QK_ERR_STATE (no certificate received;
 * the server side without client certificates) or QK_ERR_INVALID_ARG.
 */
int qk_conn_peer_spki_sha256(const qk_conn *c, uint8_t out[32]);

/**
 * Keying material exported from this connection's TLS handshake (RFC 8446
 * §7.5, RFC 5705 interface; RFC 9001 §4 keeps it the same on both ends):
 * out_len bytes from label (e.g. "EXPORTER-my-protocol") and context (may
 * be empty). Both peers get the same bytes; no other connection does, so a
 * MAC under them cannot be replayed elsewhere. Returns 0, QK_ERR_STATE
 * (handshake not complete), QK_ERR_INVALID_ARG, QK_ERR_TLS.
 */
int qk_conn_export_keying_material(const qk_conn *c, const char *label, const uint8_t *context,
                                   size_t context_len, uint8_t *out, size_t out_len);

/** True once the handshake is complete (QK_EV_CONNECTED) and while the
 * connection is not closing. Never fails. */
bool qk_conn_established(const qk_conn *c);

/** True once the handshake is confirmed (RFC 9001 §4.1.2: the server at
 * completion, the client when HANDSHAKE_DONE arrives); before that an
 * endpoint must not migrate (RFC 9000 §9). */
bool qk_conn_handshake_confirmed(const qk_conn *c);

/** Attach an application pointer to the connection (the stack never reads
 * or frees it; free what it points to at QK_EV_CLOSED). Never fails. */
void qk_conn_set_user(qk_conn *c, void *user);
/** The pointer given to qk_conn_set_user (NULL before). Never fails. */
void *qk_conn_user(const qk_conn *c);

#ifdef __cplusplus
}
#endif
#endif
