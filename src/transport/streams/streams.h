/* SPDX-License-Identifier: MIT */
/* The stream map of one connection: lookup by id (hash table, O(1)), local
 * opening within the peer's MAX_STREAMS, peer-initiated creation with implicit
 * opening of lower ids (RFC 9000 §3.2), our stream limits and MAX_STREAMS
 * credit as peer streams close, STREAMS_BLOCKED, and the list of streams with
 * pending control frames. */
#ifndef QK_TRANSPORT_STREAMS_H
#define QK_TRANSPORT_STREAMS_H

#include "transport/streams/stream.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Largest MAX_STREAMS / STREAMS_BLOCKED value: 2^60 (RFC 9000 §4.6, §19.11). */
#ifndef QK_MAX_STREAMS_LIMIT
#define QK_MAX_STREAMS_LIMIT (1ull << 60)
#endif

/** Index into per-type arrays. */
enum { QK_STREAMS_BIDI = 0, QK_STREAMS_UNI = 1 };

/** Our side's settings (mirrors our transport parameters, RFC 9000 §18.2). */
typedef struct qk_streams_config {
    bool is_server;
    uint64_t max_streams_bidi;            /**< initial_max_streams_bidi we advertise */
    uint64_t max_streams_uni;             /**< initial_max_streams_uni we advertise */
    uint64_t max_stream_data_bidi_local;  /**< our recv window, bidi streams we open */
    uint64_t max_stream_data_bidi_remote; /**< our recv window, bidi streams the peer opens */
    uint64_t max_stream_data_uni;         /**< our recv window, uni streams the peer opens */
    size_t send_buffer_bytes;             /**< per-stream send buffer bound */
    size_t recv_max_ranges;               /**< per-stream reassembly gap bound (0 = default) */
    bool autotune;                        /**< auto-tune stream receive windows */
    uint64_t max_stream_window_bytes;     /**< auto-tuning cap per stream */
    qk_flow_budget *budget;               /**< endpoint receive-memory budget (or NULL) */
    int autotune_rule;                    /**< qk_flow_rule for stream windows */
} qk_streams_config;

/** The peer's transport parameters that concern streams. */
typedef struct qk_streams_peer_params {
    uint64_t max_streams_bidi;
    uint64_t max_streams_uni;
    uint64_t max_stream_data_bidi_local;  /**< peer's recv window for bidi streams it opens */
    uint64_t max_stream_data_bidi_remote; /**< peer's recv window for bidi streams we open */
    uint64_t max_stream_data_uni;         /**< peer's recv window for uni streams we open */
} qk_streams_peer_params;

/** Which half of a stream a frame from the peer addresses. */
typedef enum qk_stream_frame_dir {
    QK_FRAME_TO_RECV = 0, /**< STREAM, RESET_STREAM, STREAM_DATA_BLOCKED */
    QK_FRAME_TO_SEND = 1, /**< MAX_STREAM_DATA, STOP_SENDING */
} qk_stream_frame_dir;

typedef struct qk_streams {
    qk_streams_config cfg;
    qk_streams_peer_params peer;
    qk_stream **table; /**< hash buckets (chains through hnext) */
    size_t nbuckets;   /**< power of two */
    size_t count;      /**< streams in the map */

    uint64_t local_opened[2]; /**< streams we opened (next local index) */
    uint64_t local_limit[2];  /**< peer's MAX_STREAMS for us */
    bool blocked_pending[2];  /**< send STREAMS_BLOCKED(local_limit) */
    bool blocked_reported[2]; /**< STREAMS_BLOCKED already sent for local_limit */

    uint64_t remote_opened[2];   /**< peer streams that exist or existed (next index) */
    uint64_t remote_closed[2];   /**< peer streams removed (credit to return) */
    uint64_t remote_limit[2];    /**< MAX_STREAMS we advertised */
    bool max_streams_pending[2]; /**< send MAX_STREAMS(remote_limit) */
    uint64_t remote_reported[2]; /**< peer streams handed out by poll_new_remote */

    qk_stream_list pending; /**< streams with QK_STREAM_PEND_* flags */
} qk_streams;

/**
 * Initialise the map. Until qk_streams_set_peer_params() the peer's limits
 * are zero (we cannot open streams). Returns 0 or QK_ERR_NOMEM.
 */
int qk_streams_init(qk_streams *m, const qk_streams_config *cfg);

/** Free every stream and the table. */
void qk_streams_free(qk_streams *m);

/**
 * Apply the peer's transport parameters: stream limits, and the send credit
 * of existing streams is raised to the new initial values. Returns 0 or
 * QK_ERR_TRANSPORT_PARAMETER for max_streams above 2^60 (RFC 9000 §4.6).
 */
int qk_streams_set_peer_params(qk_streams *m, const qk_streams_peer_params *p);

/**
 * Open a local stream (RFC 9000 §4.6). Returns 0 with *out, or
 * QK_ERR_STREAM_LIMIT when the peer's MAX_STREAMS is used up (STREAMS_BLOCKED
 * becomes pending), or QK_ERR_NOMEM.
 */
int qk_streams_open(qk_streams *m, bool uni, qk_stream **out);

/** Look a stream up by id; NULL when it does not (or no longer) exist. */
qk_stream *qk_streams_get(const qk_streams *m, uint64_t id);

/**
 * Find the stream a peer frame refers to, creating peer-initiated streams
 * (and every lower id of the same type, RFC 9000 §3.2) on first reference.
 * Returns 0 with *out (NULL when the stream existed but is closed and
 * removed: ignore the frame), or:
 * QK_ERR_STREAM_STATE for a locally-initiated id we have not opened (§19.8,
 *   §19.5, §19.10) or a frame addressing the absent half of a uni stream;
 * QK_ERR_STREAM_LIMIT for a peer id beyond our MAX_STREAMS (§4.6);
 * QK_ERR_NOMEM.
 */
int qk_streams_get_for_frame(qk_streams *m, uint64_t id, qk_stream_frame_dir dir, qk_stream **out);

/**
 * MAX_STREAMS from the peer (RFC 9000 §19.11): raises the limit, never lowers
 * it. Returns 0 or QK_ERR_FRAME_ENCODING above 2^60.
 */
int qk_streams_on_max_streams(qk_streams *m, bool uni, uint64_t max_streams);

/**
 * STREAMS_BLOCKED from the peer (RFC 9000 §19.14): returns 0 or
 * QK_ERR_FRAME_ENCODING above 2^60; when we advertised more than the peer
 * says it saw, MAX_STREAMS is made pending again (a lost frame).
 */
int qk_streams_on_streams_blocked(qk_streams *m, bool uni, uint64_t limit);

/**
 * Remove a stream if it is fully closed (qk_stream_is_closed); a closed peer
 * stream returns one credit and MAX_STREAMS becomes pending once half of the
 * configured window is to be returned. Returns 1 if removed (s is freed), 0
 * if still open.
 */
int qk_streams_gc(qk_streams *m, qk_stream *s);

/** Next peer-opened stream not yet reported to the application, or NULL. */
qk_stream *qk_streams_poll_new_remote(qk_streams *m);

/**
 * Iterate all streams: qk_streams_next(m, NULL) is the first, then pass the
 * previous one; NULL at the end. Do not gc the current stream while iterating
 * (fetch the next one first).
 */
qk_stream *qk_streams_next(const qk_streams *m, const qk_stream *prev);

/** First stream with pending control frames (follow s->pend_next), or NULL. */
static inline qk_stream *qk_streams_pending_head(const qk_streams *m)
{
    return m->pending.head;
}

/* Connection-level control frames (rebuilt at send time). */

/** A MAX_STREAMS frame for the type should be sent with value *max. Returns true if so. */
bool qk_streams_want_max_streams(const qk_streams *m, bool uni, uint64_t *max);

/** A STREAMS_BLOCKED frame for the type should be sent with value *limit. */
bool qk_streams_want_streams_blocked(const qk_streams *m, bool uni, uint64_t *limit);

/** MAX_STREAMS was put in a packet / lost (re-pends if still the current value). */
void qk_streams_on_max_streams_sent(qk_streams *m, bool uni);
void qk_streams_on_max_streams_lost(qk_streams *m, bool uni, uint64_t value);

/** STREAMS_BLOCKED was put in a packet / lost (re-pends if still blocked at that value). */
void qk_streams_on_streams_blocked_sent(qk_streams *m, bool uni);
void qk_streams_on_streams_blocked_lost(qk_streams *m, bool uni, uint64_t value);

#endif
