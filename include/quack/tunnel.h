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

typedef struct qk_tunnel qk_tunnel;

/** Tunnel settings; zero fields take the defaults. */
typedef struct qk_tunnel_config {
    bool server;          /**< true: connect streams the peer opens to target */
    qk_addr target;       /**< server: the TCP address every stream goes to */
    size_t max_flows;     /**< concurrent flows (default QK_TUNNEL_DEFAULT_MAX_FLOWS) */
    size_t buf_bytes;     /**< staging bytes per flow and direction (default 64 KiB) */
    void (*kick)(void *); /**< called after data was queued on a stream from a TCP
                               callback, so the endpoint sends it (qk_io_loop_kick) */
    void *kick_ctx;
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

/** The bound TCP listening address (after qk_tunnel_listen). Returns 0 or QK_ERR_STATE. */
int qk_tunnel_listen_addr(const qk_tunnel *t, qk_addr *out);

/**
 * Feed one endpoint event. Stream events of the tunnel's flows, STREAM_OPENED
 * (server) and CLOSED (every flow of that connection is aborted) are
 * handled; others are ignored. Returns true when stream data or frames were
 * queued (the endpoint has something new to send). Never fails.
 */
bool qk_tunnel_on_event(qk_tunnel *t, const qk_event *ev);

/** Flows open now. */
size_t qk_tunnel_flow_count(const qk_tunnel *t);

/** Copy the counters. */
void qk_tunnel_get_stats(const qk_tunnel *t, qk_tunnel_stats *out);

#ifdef __cplusplus
}
#endif

#endif
