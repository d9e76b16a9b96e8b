/* SPDX-License-Identifier: MIT */
/** @file
 * quack — yamux sessions (hashicorp/yamux spec.md), sans-I/O.
 *
 * A yamux session multiplexes streams over one reliable ordered byte pipe
 * (TCP, TLS over TCP). Like a QUIC connection it does no I/O: feed the bytes
 * read from the pipe in (qk_yamux_recv), pull the bytes to write out
 * (qk_yamux_send), drain events (qk_yamux_poll_event), and drive the timer
 * (qk_yamux_next_timeout / qk_yamux_on_timeout). Time is the caller's clock.
 *
 * Frames: a 12-byte header (version 0, type Data / WindowUpdate / Ping /
 * GoAway, flags SYN / ACK / FIN / RST, stream id, length). The client opens
 * odd stream ids, the server even ones. Every stream starts with a 256 KiB
 * receive window; the receiver grants more with WindowUpdate. quack measures
 * the RTT with PINGs and auto-tunes each stream's receive window with the
 * QUIC flow controller's algorithm under a
 * session-wide budget.
 *
 * Bounds: a peer cannot make the session allocate more than the windows it
 * was granted plus the accept backlog and the stream limit; data beyond a
 * window, a send window past 2^32-1, a SYN for a used id, a malformed header
 * or a flood of refused SYNs end the session with GoAway(protocol error).
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: a yamux session is used by one thread
 * at a time.
 */
#ifndef QUACK_YAMUX_H
#define QUACK_YAMUX_H

#include <quack/common.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Size of a frame header. */
#define QK_YAMUX_HEADER_BYTES 12u
/** The spec's initial stream window. */
#define QK_YAMUX_INITIAL_WINDOW_BYTES (256u * 1024u)

/** GoAway codes (spec.md "GoAway"). */
enum {
    QK_YAMUX_GOAWAY_NORMAL = 0,   /**< normal termination */
    QK_YAMUX_GOAWAY_PROTOCOL = 1, /**< protocol error */
    QK_YAMUX_GOAWAY_INTERNAL = 2, /**< internal error */
};

/** A yamux session (opaque; qk_yamux_new, qk_yamux_del). */
typedef struct qk_yamux qk_yamux;

/** Session settings; zero fields take the defaults given. */
typedef struct qk_yamux_config {
    bool server;                   /**< server: even stream ids; client: odd */
    bool fixed_window;             /**< no auto-tuning: every window stays initial */
    bool half_window_updates;      /**< auto-tuned: update at half a window used, not a quarter */
    uint64_t initial_window_bytes; /**< receive window per stream (default and minimum 256 KiB) */
    uint64_t max_window_bytes;     /**< auto-tuning cap per stream (default 16 MiB) */
    uint64_t budget_bytes;         /**< window growth, all streams together (default 64 MiB) */
    size_t send_buf_bytes;         /**< staged unsent bytes per stream (default 256 KiB) */
    uint32_t accept_backlog;  /**< streams opened by the peer, not yet accepted (default 256) */
    uint32_t max_streams;     /**< streams alive at once, both sides (default 1024) */
    qk_time ping_interval_ns; /**< RTT / keep-alive PING period (default 1 s) */
    qk_time ping_timeout_ns;  /**< no PING answer for this long: session dead (default 30 s) */
} qk_yamux_config;

/** What qk_yamux_poll_event reports. */
typedef enum qk_yamux_event_type {
    QK_YAMUX_EV_NONE = 0, /**< no event (never returned by qk_yamux_poll_event) */
    QK_YAMUX_EV_INCOMING, /**< the peer opened streams: qk_yamux_accept them */
    QK_YAMUX_EV_READABLE, /**< stream has data or its FIN to read */
    QK_YAMUX_EV_WRITABLE, /**< a stream whose write was short has room again */
    QK_YAMUX_EV_RESET,    /**< the peer reset the stream (it is gone after this event) */
    QK_YAMUX_EV_GOAWAY,   /**< the peer sent GoAway(code): no new streams from us */
    QK_YAMUX_EV_CLOSED,   /**< the session is dead: code is the GoAway we sent or a QK_ERR_* */
} qk_yamux_event_type;

/** One session event (qk_yamux_poll_event). */
typedef struct qk_yamux_event {
    qk_yamux_event_type type; /**< what happened */
    uint32_t stream_id;       /**< READABLE, WRITABLE, RESET: the stream */
    int64_t code; /**< GOAWAY: the peer's code; CLOSED: our GoAway code (>= 0) or a QK_ERR_* */
} qk_yamux_event;

/** Session counters. */
typedef struct qk_yamux_stats {
    qk_time srtt_ns;            /**< smoothed RTT from PINGs (0 before the first answer) */
    qk_time min_rtt_ns;         /**< least RTT sample */
    qk_time latest_rtt_ns;      /**< last RTT sample */
    uint64_t pings_sent;        /**< PINGs we sent */
    uint64_t pongs_received;    /**< answers to them */
    uint64_t bytes_in;          /**< bytes read from the pipe */
    uint64_t bytes_out;         /**< bytes written to the pipe */
    uint64_t streams_opened;    /**< streams we opened */
    uint64_t streams_accepted;  /**< streams the peer opened that we accepted */
    uint64_t syns_refused;      /**< streams the peer opened that we reset (limits, GoAway) */
    uint64_t budget_used_bytes; /**< receive window growth held now, all streams */
    uint64_t budget_peak_bytes; /**< the most held so far */
    uint32_t streams_alive;     /**< streams open now */
} qk_yamux_stats;

/** One stream's flow-control state (experiments, tests). */
typedef struct qk_yamux_stream_info {
    uint64_t recv_window_bytes;   /**< current receive window (auto-tuned) */
    uint64_t recv_credit_bytes;   /**< granted to the peer and not yet read */
    uint64_t recv_buffered_bytes; /**< received, not yet read */
    uint64_t peak_credit_bytes;   /**< most credit ever outstanding */
    uint64_t send_window_bytes;   /**< the peer's credit left to us */
    uint64_t send_buffered_bytes; /**< staged, not yet framed */
    uint64_t window_grows;        /**< times the tuner grew the receive window */
    uint64_t window_shrinks;      /**< times it shrank it back */
    uint64_t delivery_rtt_bytes;  /**< last delivery measured by the tuner, bytes per sizing RTT */
} qk_yamux_stream_info;

/** Fill cfg (cfg_bytes: the caller's sizeof(qk_yamux_config); fields past
 * what this library knows come back zero) with the defaults. */
void qk_yamux_config_default_sized(qk_yamux_config *cfg, size_t cfg_bytes);

/** qk_yamux_config_default_sized() with the caller's sizeof(qk_yamux_config). */
#define qk_yamux_config_default(cfg) qk_yamux_config_default_sized((cfg), sizeof(qk_yamux_config))

/**
 * Create a session (cfg copied, cfg_bytes of it: the caller's
 * sizeof(qk_yamux_config); NULL = defaults as a client). The first PING is
 * due at once. Returns 0 and sets *out, or QK_ERR_INVALID_ARG (NULL out, a
 * budget below one window, a zero-sized limit, cfg_bytes below the first
 * release's size), QK_ERR_UNSUPPORTED (a field this library does not know is
 * set), QK_ERR_NOMEM.
 */
int qk_yamux_new_sized(const qk_yamux_config *cfg, size_t cfg_bytes, qk_time now, qk_yamux **out);

/** qk_yamux_new_sized() with the caller's sizeof(qk_yamux_config). */
#define qk_yamux_new(cfg, now, out) qk_yamux_new_sized((cfg), sizeof(qk_yamux_config), (now), (out))

/** Free s and every stream. NULL is a no-op. */
void qk_yamux_del(qk_yamux *s);

/**
 * Feed len bytes read from the pipe. Returns len, or on a protocol error
 * QK_ERR_PROTOCOL_VIOLATION (a GoAway(protocol error) is queued: keep
 * calling qk_yamux_send to flush it, then close the pipe), QK_ERR_CLOSED
 * (the session is already dead), QK_ERR_NOMEM, QK_ERR_INVALID_ARG.
 */
long qk_yamux_recv(qk_yamux *s, const uint8_t *buf, size_t len, qk_time now);

/**
 * Write whole frames (control first, then stream data round-robin within
 * the peer's windows) into out, at most max bytes (at least
 * QK_YAMUX_HEADER_BYTES to make progress). Returns the byte count, 0 when
 * nothing is due (or max is too small).
 */
size_t qk_yamux_send(qk_yamux *s, uint8_t *out, size_t max, qk_time now);

/** True when qk_yamux_send has frames to give (ignoring window limits it cannot pass). */
bool qk_yamux_want_send(const qk_yamux *s);

/** When qk_yamux_on_timeout is next due (QK_TIME_INFINITE = never). */
qk_time qk_yamux_next_timeout(const qk_yamux *s);

/** Run the timers due at now: PINGs, the ping timeout, window shrinking. */
void qk_yamux_on_timeout(qk_yamux *s, qk_time now);

/** Pop the next event into ev (ev_bytes: the caller's sizeof(qk_yamux_event);
 * fields it lacks are not written). Returns false when there is none. */
bool qk_yamux_poll_event_sized(qk_yamux *s, qk_yamux_event *ev, size_t ev_bytes);

/** qk_yamux_poll_event_sized() with the caller's sizeof(qk_yamux_event). */
#define qk_yamux_poll_event(s, ev) qk_yamux_poll_event_sized((s), (ev), sizeof(qk_yamux_event))

/**
 * Open a stream (its SYN goes out with the next qk_yamux_send). Returns 0
 * and sets *sid, or QK_ERR_CLOSED (session dead, or GoAway sent/received),
 * QK_ERR_STREAM_LIMIT (max_streams alive, or ids exhausted), QK_ERR_NOMEM,
 * QK_ERR_INVALID_ARG.
 */
int qk_yamux_open(qk_yamux *s, uint32_t *sid);

/**
 * Accept the oldest stream the peer opened (its ACK goes out next). Returns
 * 0 and sets *sid, QK_ERR_AGAIN (backlog empty), QK_ERR_CLOSED, or
 * QK_ERR_INVALID_ARG.
 */
int qk_yamux_accept(qk_yamux *s, uint32_t *sid);

/**
 * Stage up to len bytes on stream sid (what fits in send_buf_bytes), and
 * with fin (only when everything fitted) half-close our side. Returns bytes
 * taken (a short count asks for QK_YAMUX_EV_WRITABLE), or QK_ERR_NOT_FOUND
 * (no such stream), QK_ERR_STATE (already half-closed), QK_ERR_CLOSED
 * (reset, or session dead), QK_ERR_INVALID_ARG.
 */
long qk_yamux_write(qk_yamux *s, uint32_t sid, const uint8_t *buf, size_t len, bool fin);

/**
 * Read up to cap bytes. Returns the count (0 with *fin = true at the
 * peer's FIN), QK_ERR_AGAIN (nothing yet), QK_ERR_NOT_FOUND, QK_ERR_CLOSED
 * (reset, or session dead), QK_ERR_INVALID_ARG. Reading returns window
 * credit to the peer. A stream whose both directions have ended (FIN read
 * and ours sent) is freed; later calls give QK_ERR_NOT_FOUND.
 */
long qk_yamux_read(qk_yamux *s, uint32_t sid, uint8_t *buf, size_t cap, bool *fin);

/** Reset stream sid (RST, both directions) and free it. Returns 0 or QK_ERR_NOT_FOUND. */
int qk_yamux_reset(qk_yamux *s, uint32_t sid);

/**
 * Send GoAway(code): the peer may open no more streams (new SYNs are reset);
 * streams alive continue. Returns 0, QK_ERR_STATE (already sent), QK_ERR_CLOSED.
 */
int qk_yamux_go_away(qk_yamux *s, uint32_t code);

/** Queue a PING now (RTT sample when answered). Returns 0, QK_ERR_AGAIN (one outstanding). */
int qk_yamux_ping(qk_yamux *s, qk_time now);

/** True once the session is dead (protocol error, ping timeout). */
bool qk_yamux_is_closed(const qk_yamux *s);

/** Why the session failed (a static string; "" when it did not). */
const char *qk_yamux_error_reason(const qk_yamux *s);

/** Copy the counters into out (out_bytes: the caller's sizeof(qk_yamux_stats)). */
void qk_yamux_stats_get_sized(const qk_yamux *s, qk_yamux_stats *out, size_t out_bytes);

/** qk_yamux_stats_get_sized() with the caller's sizeof(qk_yamux_stats). */
#define qk_yamux_stats_get(s, out) qk_yamux_stats_get_sized((s), (out), sizeof(qk_yamux_stats))

/** Attach a pointer of the caller's to s (e.g. the TLS connection the session runs on). */
void qk_yamux_set_user(qk_yamux *s, void *user);

/** The pointer given to qk_yamux_set_user (NULL before, or for NULL s). */
void *qk_yamux_user(const qk_yamux *s);

/** A stream's flow-control state into out (out_bytes: the caller's
 * sizeof(qk_yamux_stream_info)). Returns 0 or QK_ERR_NOT_FOUND. */
int qk_yamux_stream_info_get_sized(const qk_yamux *s, uint32_t sid, qk_yamux_stream_info *out,
                                   size_t out_bytes);

/** qk_yamux_stream_info_get_sized() with the caller's sizeof(qk_yamux_stream_info). */
#define qk_yamux_stream_info_get(s, sid, out)                                                      \
    qk_yamux_stream_info_get_sized((s), (sid), (out), sizeof(qk_yamux_stream_info))

/**
 * Decode a frame header (12 bytes). Returns 0 and fills the fields, or
 * QK_ERR_TRUNCATED (len < 12), QK_ERR_PROTOCOL_VIOLATION (version not 0,
 * unknown type).
 */
int qk_yamux_header_decode(const uint8_t *buf, size_t len, uint8_t *type, uint16_t *flags,
                           uint32_t *sid, uint32_t *length);

/** Encode a frame header into out (12 bytes). */
void qk_yamux_header_encode(uint8_t *out, uint8_t type, uint16_t flags, uint32_t sid,
                            uint32_t length);

#ifdef __cplusplus
}
#endif

#endif
