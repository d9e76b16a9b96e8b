/* SPDX-License-Identifier: MIT */
/** @file
 * quack HTTP/3 (RFC 9114) on libnghttp3, over quack streams.
 *
 * One qk_h3 per connection. The application keeps driving the endpoint as
 * usual and hands every transport event of that connection to
 * qk_h3_on_event(); after the events of a step it calls qk_h3_flush() to move
 * HTTP/3 output (control and QPACK streams, HEADERS, DATA) into the
 * connection's streams. HTTP/3 happenings are reported through the
 * qk_h3_callbacks given at creation; they run only inside qk_h3_on_event()
 * and may call qk_h3_respond(), qk_h3_request() or qk_h3_shutdown().
 *
 * QPACK: we let the peer use no dynamic table (so no request stream can be
 * blocked and nothing the peer sends is buffered beyond the QUIC windows);
 * our encoder uses the peer's table up to 4 KiB. Response/request bodies are
 * read from memory the caller keeps valid until the release function runs.
 *
 * Contracts, as in quack/quack.h: a function returning int or long returns
 * 0 (or a non-negative count or id) on success and a negative QK_ERR_* on
 * failure, the codes listed in its comment; void and bool functions and
 * plain getters cannot fail; every `now` is nanoseconds on the caller's
 * monotonic clock; pointer arguments are borrowed for the call unless the
 * comment says they are kept. Threads: a qk_h3 is used only from the thread
 * that drives its connection's endpoint.
 */
#ifndef QUACK_H3_H
#define QUACK_H3_H

#include <quack/quack.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ALPN protocol of HTTP/3 (put it in qk_config.alpn). */
#define QK_H3_ALPN "h3"

/** H3_NO_ERROR (RFC 9114 §8.1). */
#define QK_H3_NO_ERROR 0x100
/** H3_INTERNAL_ERROR (RFC 9114 §8.1). */
#define QK_H3_INTERNAL_ERROR 0x102
/** H3_REQUEST_CANCELLED (RFC 9114 §8.1). */
#define QK_H3_REQUEST_CANCELLED 0x10c

/** The HTTP/3 layer of one connection (opaque; qk_h3_new, qk_h3_del). */
typedef struct qk_h3 qk_h3;

/** One header field (not NUL-terminated in general; lengths given). */
typedef struct qk_h3_header {
    const char *name;  /**< field name (lower case) */
    const char *value; /**< field value */
    size_t name_len;   /**< bytes of name */
    size_t value_len;  /**< bytes of value */
} qk_h3_header;

/** Releases a body once the stack no longer needs it (may be NULL). */
typedef void (*qk_h3_release_fn)(void *ctx);

/**
 * Produces body bytes on demand (qk_h3_respond_pull): copy up to len bytes
 * of the body starting at offset into buf (e.g. pread from a file). Called
 * only inside qk_h3_flush, in order, with len no more than the stream
 * accepts now (qk_stream_send_room). Returns the bytes copied (1..len); 0 or
 * a negative value ends the response with a reset (H3_INTERNAL_ERROR).
 */
typedef long (*qk_h3_read_fn)(void *ctx, uint64_t offset, uint8_t *buf, size_t len);

/** What the layer reports; every callback runs inside qk_h3_on_event(). */
typedef struct qk_h3_callbacks {
    /** A complete header section: a request (server) or a final response
     * (client). fin: the stream ends with it (no body). */
    void (*on_headers)(void *user, qk_h3 *h, uint64_t stream_id, const qk_h3_header *hdrs, size_t n,
                       bool fin);
    /** Body bytes (valid during the call only). */
    void (*on_data)(void *user, qk_h3 *h, uint64_t stream_id, const uint8_t *data, size_t len);
    /** The peer finished the message on stream_id (all body delivered). */
    void (*on_end)(void *user, qk_h3 *h, uint64_t stream_id);
    /** The stream was reset or stopped by the peer, or refused (app_error). */
    void (*on_reset)(void *user, qk_h3 *h, uint64_t stream_id, uint64_t app_error);
    /** The peer sent GOAWAY with this stream (client) or push (server) id. */
    void (*on_goaway)(void *user, qk_h3 *h, uint64_t id);
    /** Server (optional): the response submitted on stream_id is over.
     * complete: all of it, FIN included, was handed to the QUIC stream (QUIC
     * delivers it unless the connection fails); false: the stream was reset
     * or stopped, or the layer was freed (connection closed) first. */
    void (*on_response_done)(void *user, qk_h3 *h, uint64_t stream_id, bool complete);
    /** Server (optional): the header section of a CONNECT request (RFC 9114
     * §4.4; extended CONNECT, RFC 9220, carries :protocol), before
     * on_headers. Return true to take the stream: the layer forgets it and
     * everything after its HEADERS frame, both directions, is the caller's
     * to read and write on the QUIC stream (the response included); false:
     * the request goes on to on_headers like any other. With this callback
     * set, request streams are read frame by frame until their header
     * section came. Servers advertise SETTINGS_ENABLE_CONNECT_PROTOCOL; a
     * server with this callback also advertises SETTINGS_H3_DATAGRAM = 1
     * (RFC 9297 §2.1.1), so its connection must accept DATAGRAM frames
     * (qk_config.max_datagram_frame_bytes > 0). */
    bool (*on_connect)(void *user, qk_h3 *h, uint64_t stream_id, const qk_h3_header *hdrs,
                       size_t n);
} qk_h3_callbacks;

/**
 * Create the HTTP/3 layer for connection c (client or server, as the
 * connection is) and open our control and QPACK streams. cb is copied
 * (cb_bytes of it: the caller's sizeof(qk_h3_callbacks); callbacks a smaller
 * struct lacks are NULL); user is passed to the callbacks. Returns NULL on
 * QK_ERR_NOMEM, or when the peer's unidirectional stream limit leaves no room
 * for 3 streams (the connection is then closed with H3_INTERNAL_ERROR), or
 * when cb sets a callback this library does not know; when err is given
 * *err receives QK_ERR_NOMEM, QK_ERR_STREAM_LIMIT, QK_ERR_CLOSED,
 * QK_ERR_UNSUPPORTED (the unknown callback) or QK_ERR_INVALID_ARG (cb_bytes
 * below the first release's size).
 */
qk_h3 *qk_h3_new_sized(qk_conn *c, bool server, const qk_h3_callbacks *cb, size_t cb_bytes,
                       void *user, int *err);

/** qk_h3_new_sized() with the caller's sizeof(qk_h3_callbacks). */
#define qk_h3_new(c, server, cb, user, err)                                                        \
    qk_h3_new_sized((c), (server), (cb), sizeof(qk_h3_callbacks), (user), (err))

/** Free the layer (releases pending bodies). The connection is not closed. */
void qk_h3_del(qk_h3 *h);

/** The connection this layer runs on. */
qk_conn *qk_h3_conn(const qk_h3 *h);

/**
 * Feed one transport event of this connection (STREAM_OPENED/READABLE/
 * RESET/STOP/WRITABLE; others are ignored). Protocol errors close the
 * connection with the HTTP/3 code nghttp3 infers. Returns 0, or QK_ERR_APPLICATION
 * (the connection is being closed).
 */
int qk_h3_on_event(qk_h3 *h, const qk_event *ev);

/**
 * Move pending HTTP/3 output into the connection's streams as far as their
 * send buffers accept; streams left blocked are retried on the next call.
 * Returns 1 when something was written, 0 when not, QK_ERR_APPLICATION on a
 * fatal nghttp3 error (the connection is being closed).
 */
int qk_h3_flush(qk_h3 *h);

/**
 * Client: send a request on a new bidirectional stream. hdrs must hold the
 * pseudo-headers (:method, :scheme, :authority, :path) first. body may be
 * NULL (no body; release is not called); otherwise body[0..body_len) stays
 * valid until release(release_ctx). Returns 0 and *stream_id,
 * QK_ERR_STREAM_LIMIT (retry after QK_EV_STREAMS_AVAILABLE or later),
 * QK_ERR_STATE (server side, or after GOAWAY), QK_ERR_CLOSED, QK_ERR_NOMEM.
 */
int qk_h3_request(qk_h3 *h, const qk_h3_header *hdrs, size_t n, const uint8_t *body,
                  uint64_t body_len, qk_h3_release_fn release, void *release_ctx,
                  uint64_t *stream_id);

/**
 * Server: answer the request on stream_id with status and extra headers,
 * and a body as in qk_h3_request (NULL: none). Returns 0, QK_ERR_NOT_FOUND
 * (no such request), QK_ERR_STATE (already answered, or client side),
 * QK_ERR_NOMEM.
 */
int qk_h3_respond(qk_h3 *h, uint64_t stream_id, unsigned status, const qk_h3_header *hdrs, size_t n,
                  const uint8_t *body, uint64_t body_len, qk_h3_release_fn release,
                  void *release_ctx);

/**
 * Server: like qk_h3_respond, but the body (body_len bytes) is pulled: read
 * is called as the connection has room for more (flow control, congestion
 * and the send budgets of qk_config), so the layer holds at most one chunk
 * (64 KiB) per stream and nothing the peer cannot take yet. release(ctx)
 * runs once the body is no longer needed (done, reset or freed; may be
 * NULL). Returns 0, QK_ERR_INVALID_ARG (read NULL), QK_ERR_NOT_FOUND,
 * QK_ERR_STATE, QK_ERR_NOMEM (ctx stays the caller's on failure).
 */
int qk_h3_respond_pull(qk_h3 *h, uint64_t stream_id, unsigned status, const qk_h3_header *hdrs,
                       size_t n, uint64_t body_len, qk_h3_read_fn read, qk_h3_release_fn release,
                       void *ctx);

/**
 * Begin a graceful shutdown: send GOAWAY (RFC 9114 §5.2); the server stops
 * accepting new requests, requests in progress complete. Returns 0 or
 * QK_ERR_STATE.
 */
int qk_h3_shutdown(qk_h3 *h);

/** Requests (client) or requests in progress (server) not finished yet. */
size_t qk_h3_active(const qk_h3 *h);

/** RFC 9218 priority of a request: urgency 0 (highest) .. 7, incremental. */
typedef struct qk_h3_priority {
    uint8_t urgency;  /**< 0 (highest) .. 7 */
    bool incremental; /**< the response may be interleaved with others of its urgency */
} qk_h3_priority;

/** Urgency of a request without a priority header (RFC 9218 §4.1). */
#define QK_H3_DEFAULT_URGENCY 3

/**
 * Parse a Priority Field Value (the `priority` header, RFC 9218 §4, or a
 * PRIORITY_UPDATE payload, §7): an RFC 8941 Dictionary whose `u` (Integer
 * 0..7) and `i` (Boolean; a bare `i` is true) overwrite p's fields. Unknown
 * keys and `u`/`i` of the wrong type or out of range are ignored (§4.1,
 * §4.2), leaving that field of p as it was. Returns 0, or QK_ERR_INVALID_ARG
 * when value is not a Dictionary (the whole field is then ignored, RFC 8941
 * §4.2; p is unchanged).
 */
int qk_h3_priority_parse(const char *value, size_t len, qk_h3_priority *p);

/**
 * Server: the priority applied to the response on stream_id, from the
 * request's `priority` header or a later PRIORITY_UPDATE (RFC 9218 §7.1;
 * default u=3, not incremental). The layer sets the stream's transport
 * urgency from it (qk_stream_set_priority) by itself. Returns 0,
 * QK_ERR_NOT_FOUND (no such request) or QK_ERR_STATE (client side).
 */
int qk_h3_stream_priority(const qk_h3 *h, uint64_t stream_id, qk_h3_priority *p);

/**
 * Change the priority of the request on stream_id. Client: send a
 * PRIORITY_UPDATE frame on the control stream (RFC 9218 §7.1) with the
 * complete value. Server: override what the client asked for (§8) and set the
 * transport urgency. Returns 0, QK_ERR_INVALID_ARG (urgency above 7),
 * QK_ERR_NOT_FOUND (no such request), QK_ERR_NOMEM.
 */
int qk_h3_set_priority(qk_h3 *h, uint64_t stream_id, qk_h3_priority p);

/** Convenience: a header from a NUL-terminated name and value. */
qk_h3_header qk_h3_hdr(const char *name, const char *value);

#ifdef __cplusplus
}
#endif
#endif
