/* SPDX-License-Identifier: MIT */
/* One QUIC stream: id rules (RFC 9000 §2.1), the send-side and receive-side
 * state machines (§3.1, §3.2), the receive and send buffers, priority fields
 * (RFC 9218) and the "what to send" flags for stream control frames
 * (frames are rebuilt at send time). */
#ifndef QK_TRANSPORT_STREAM_H
#define QK_TRANSPORT_STREAM_H

#include "transport/streams/recvbuf.h"
#include "transport/streams/sendbuf.h"
#include "transport/streams/sched.h"
#include "transport/streams/flow.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Stream ids (RFC 9000 §2.1) ---- */

/** Bit 0: 0 = client-initiated, 1 = server-initiated. */
static inline bool qk_stream_id_is_server(uint64_t id)
{
    return (id & 1) != 0;
}

/** Bit 1: 0 = bidirectional, 1 = unidirectional. */
static inline bool qk_stream_id_is_uni(uint64_t id)
{
    return (id & 2) != 0;
}

/** Sequence number of the stream within its type (id >> 2). */
static inline uint64_t qk_stream_id_index(uint64_t id)
{
    return id >> 2;
}

/** Stream id from an index and type bits. */
static inline uint64_t qk_stream_id_make(uint64_t index, bool server, bool uni)
{
    return (index << 2) | ((uint64_t)uni << 1) | (uint64_t)server;
}

/** True when the stream was initiated by us (is_server = our role). */
static inline bool qk_stream_id_is_local(uint64_t id, bool is_server)
{
    return qk_stream_id_is_server(id) == is_server;
}

/* ---- States (RFC 9000 §3.1, §3.2) ---- */

typedef enum qk_send_state {
    QK_SEND_NONE = 0,    /**< no send side (a uni stream the peer opened) */
    QK_SEND_READY,       /**< created, nothing sent yet */
    QK_SEND_SEND,        /**< sending data */
    QK_SEND_DATA_SENT,   /**< all data and the FIN sent */
    QK_SEND_DATA_RECVD,  /**< all data and the FIN acknowledged (terminal) */
    QK_SEND_RESET_SENT,  /**< RESET_STREAM sent (or to be sent) */
    QK_SEND_RESET_RECVD, /**< RESET_STREAM acknowledged (terminal) */
} qk_send_state;

typedef enum qk_recv_state {
    QK_RECV_NONE = 0,    /**< no receive side (a uni stream we opened) */
    QK_RECV_RECV,        /**< receiving */
    QK_RECV_SIZE_KNOWN,  /**< FIN received, gaps remain */
    QK_RECV_DATA_RECVD,  /**< every byte received, not all read */
    QK_RECV_DATA_READ,   /**< the application read everything (terminal) */
    QK_RECV_RESET_RECVD, /**< RESET_STREAM received */
    QK_RECV_RESET_READ,  /**< the application saw the reset (terminal) */
} qk_recv_state;

/* "What to send" flags for stream-level control frames. The frame is built at
 * send time from current fields:
 *   MAX_STREAM_DATA      (id, recv.limit)
 *   STREAM_DATA_BLOCKED  (id, blocked_at)
 *   RESET_STREAM         (id, reset_error, reset_final_size)
 *   STOP_SENDING         (id, stop_error)
 * After building one, call qk_stream_on_control_sent(); on loss,
 * qk_stream_on_control_lost() re-sets the flag only if still relevant. */
#define QK_STREAM_PEND_MAX_STREAM_DATA     0x01u
#define QK_STREAM_PEND_STREAM_DATA_BLOCKED 0x02u
#define QK_STREAM_PEND_RESET_STREAM        0x04u
#define QK_STREAM_PEND_STOP_SENDING        0x08u

struct qk_stream;

/** Intrusive list of streams with pending control frames (owned by the map). */
typedef struct qk_stream_list {
    struct qk_stream *head;
    size_t count;
} qk_stream_list;

/** Default RFC 9218 urgency. */
#define QK_STREAM_DEFAULT_URGENCY 3

typedef struct qk_stream {
    uint64_t id;
    qk_send_state send_state;
    qk_recv_state recv_state;
    qk_recvbuf recv; /**< recv.limit is our MAX_STREAM_DATA */
    qk_sendbuf send;

    uint64_t send_max_data;     /**< peer's MAX_STREAM_DATA: our send credit */
    uint64_t recv_window_bytes; /**< credit re-granted as the app reads */
    qk_flow_rx fc;        /**< window auto-tuner (flow.c); window_bytes mirrors recv_window_bytes */
    uint64_t blocked_at;  /**< limit reported in STREAM_DATA_BLOCKED */
    uint64_t reset_error; /**< app error code for our RESET_STREAM */
    uint64_t reset_final_size; /**< final size in our RESET_STREAM */
    uint64_t stop_error;       /**< app error code for our STOP_SENDING */
    uint64_t peer_reset_error; /**< from the peer's RESET_STREAM */
    uint64_t peer_stop_error;  /**< from the peer's STOP_SENDING */
    bool peer_stopped;         /**< the peer sent STOP_SENDING */

    uint8_t urgency;  /**< RFC 9218 §4.1: 0 (highest) .. 7, default 3 */
    bool incremental; /**< RFC 9218 §4.2 */
    /* Event coalescing (conn.c, conn_recv.c): a READABLE event is queued and
     * the application has not called qk_stream_read since; a write was
     * short (send buffer full), so WRITABLE is owed when room frees up. */
    bool readable_event_pending;
    bool write_blocked;
    /* qk_stream_notify_acked: raise STREAM_ACKED as the acknowledged
     * prefix grows; the note of the ACK being processed is
     * qk_conn.acked[acked_note - 1] (0 = none). */
    bool notify_acked;
    uint32_t acked_note;
    /* Data, a FIN or a reset of the peer arrived in 0-RTT packets (replayable,
     * RFC 9001 §9.2). */
    bool rx_0rtt;
    /** Send-side memory charged to the connection and endpoint (conn_flow.c):
     * written and unacknowledged, written and never sent. */
    uint64_t send_held_charged, send_unsent_charged;
    /** Scheduler node (sched.c): queued while the stream has data to send. */
    qk_sched_node sched;

    uint32_t pending;          /**< QK_STREAM_PEND_* */
    qk_stream_list *pend_list; /**< where pending streams are linked (may be NULL) */
    struct qk_stream *pend_prev, *pend_next;

    struct qk_stream *hnext; /**< hash-chain link (stream map) */
    void *user;              /**< application context */
} qk_stream;

/** Initial settings for one stream (chosen by the map from transport parameters). */
typedef struct qk_stream_params {
    bool has_send, has_recv;
    uint64_t recv_max_data;         /**< our initial MAX_STREAM_DATA for it */
    uint64_t send_max_data;         /**< the peer's initial MAX_STREAM_DATA for it */
    size_t send_buffer_bytes;       /**< bound on unacknowledged bytes buffered */
    size_t recv_max_ranges;         /**< reassembly gap bound (0 = default) */
    qk_stream_list *pend_list;      /**< list for pending control frames, or NULL */
    bool autotune;                  /**< grow the receive window (flow.c rule) */
    uint64_t recv_max_window_bytes; /**< auto-tuning cap */
    qk_flow_budget *budget;         /**< endpoint receive-memory budget, or NULL */
    int autotune_rule;              /**< qk_flow_rule */
} qk_stream_params;

/** Initialise a stream. Never fails (memory is allocated lazily). */
void qk_stream_init(qk_stream *s, uint64_t id, const qk_stream_params *p);

/** Free buffers and unlink from the pending list. */
void qk_stream_free(qk_stream *s);

/* ---- Frames from the peer ---- */

/**
 * STREAM frame (RFC 9000 §19.8). Connection flow control: the credit the
 * frame consumed is the growth of recv.max_off across the call. Returns 0, QK_ERR_STREAM_STATE on a
 * stream with no receive side (§19.8), QK_ERR_FLOW_CONTROL, QK_ERR_FINAL_SIZE (§4.5; also checked
 * after a reset), QK_ERR_LIMIT (do not ACK the packet), QK_ERR_NOMEM.
 */
int qk_stream_on_stream(qk_stream *s, uint64_t off, const uint8_t *data, size_t len, bool fin);

/**
 * RESET_STREAM (RFC 9000 §19.4). Returns 0, QK_ERR_STREAM_STATE on a
 * send-only stream, QK_ERR_FINAL_SIZE, QK_ERR_FLOW_CONTROL (§4.5).
 * Read recv.max_off before and after to charge connection flow control.
 * In Data Recvd the reset is accepted (final size checked) but the data is
 * still delivered (RFC 9000 §3.2 allows either).
 */
int qk_stream_on_reset_stream(qk_stream *s, uint64_t app_error, uint64_t final_size);

/**
 * STOP_SENDING (RFC 9000 §19.5): returns QK_ERR_STREAM_STATE on a
 * receive-only stream; otherwise schedules RESET_STREAM with the peer's
 * error code when data is still unacknowledged (§3.5) and returns 0.
 */
int qk_stream_on_stop_sending(qk_stream *s, uint64_t app_error);

/**
 * MAX_STREAM_DATA (RFC 9000 §19.10): raises send_max_data (never lowers).
 * Returns QK_ERR_STREAM_STATE on a receive-only stream, else 0.
 */
int qk_stream_on_max_stream_data(qk_stream *s, uint64_t max_data);

/**
 * STREAM_DATA_BLOCKED (RFC 9000 §19.13): returns QK_ERR_STREAM_STATE on a
 * send-only stream; schedules MAX_STREAM_DATA when we have more credit to
 * give than the peer reports. Returns 0.
 */
int qk_stream_on_stream_data_blocked(qk_stream *s, uint64_t limit);

/* ---- The application ---- */

/**
 * Buffer data for sending. Returns bytes accepted (may be 0 when the buffer
 * is full), QK_ERR_STATE without a send side or after finish/reset,
 * QK_ERR_NOMEM.
 */
long qk_stream_send_write(qk_stream *s, const uint8_t *data, size_t len);
/** Like qk_stream_send_write, but the send buffer borrows `data` (it must
 * stay valid until acknowledged; qk_sendbuf_write_ref). Same returns, plus
 * QK_ERR_NOMEM. */
long qk_stream_send_write_ref(qk_stream *s, const uint8_t *data, size_t len);

/** End the send side (FIN). QK_ERR_STATE without a send side or after reset. */
int qk_stream_finish(qk_stream *s);

/**
 * Abort sending with an application error (RFC 9000 §3.1): Ready/Send/Data
 * Sent -> Reset Sent, schedules RESET_STREAM. Returns 0, or QK_ERR_STATE
 * without a send side or when already terminal or reset.
 */
int qk_stream_send_reset(qk_stream *s, uint64_t app_error);

/**
 * Ask the peer to stop sending (RFC 9000 §3.5): schedules STOP_SENDING while
 * the receive side is still in Recv or Size Known. Returns 0 or QK_ERR_STATE.
 */
int qk_stream_recv_stop(qk_stream *s, uint64_t app_error);

/**
 * Read received bytes. Returns the count (0 if nothing yet), QK_ERR_CLOSED
 * after a reset (moves Reset Recvd -> Reset Read), QK_ERR_STATE without a
 * receive side. Moves Data Recvd -> Data Read when the FIN is consumed and
 * re-grants flow-control credit (may set MAX_STREAM_DATA pending).
 */
long qk_stream_recv_read(qk_stream *s, uint8_t *dst, size_t cap);

/** True when the application has read the FIN (or the reset). */
bool qk_stream_read_done(const qk_stream *s);

/** Set RFC 9218 priority (urgency clamped to 0..7). */
void qk_stream_apply_priority(qk_stream *s, uint8_t urgency, bool incremental);

/* ---- The packet builder ---- */

/**
 * Next STREAM frame payload range, within the peer's MAX_STREAM_DATA; see
 * qk_sendbuf_next_range(). Returns 1 or 0 (nothing to send / not sending).
 * When new data is blocked only by flow control, sets
 * STREAM_DATA_BLOCKED pending (once per limit).
 */
int qk_stream_next_range(qk_stream *s, size_t max_len, uint64_t *off, size_t *len, bool *fin);

/** A STREAM frame range was sent (Ready -> Send, -> Data Sent with the FIN). */
void qk_stream_on_sent(qk_stream *s, uint64_t off, size_t len, bool fin);

/** A STREAM range was acknowledged (-> Data Recvd when everything is). */
void qk_stream_on_acked(qk_stream *s, uint64_t off, size_t len, bool fin);

/** A STREAM range was lost (re-queued unless reset). */
void qk_stream_on_lost(qk_stream *s, uint64_t off, size_t len, bool fin);

/** Our RESET_STREAM was acknowledged: Reset Sent -> Reset Recvd. */
void qk_stream_on_reset_acked(qk_stream *s);

/** A control frame (one QK_STREAM_PEND_* flag) was put in a packet: clear the flag. */
void qk_stream_on_control_sent(qk_stream *s, uint32_t flag);

/** A packet with that control frame was lost: set the flag again if still relevant. */
void qk_stream_on_control_lost(qk_stream *s, uint32_t flag);

/** Set pending flags (links the stream into its pending list). */
void qk_stream_set_pending(qk_stream *s, uint32_t flags);

/** Clear pending flags (unlinks when none remain). */
void qk_stream_clear_pending(qk_stream *s, uint32_t flags);

/** Both halves are terminal (or absent): the stream can be forgotten (RFC 9000 §3.3). */
bool qk_stream_is_closed(const qk_stream *s);

/** Human-readable state names (static strings). */
const char *qk_send_state_name(qk_send_state st);
const char *qk_recv_state_name(qk_recv_state st);

#endif
