/* SPDX-License-Identifier: MIT */
/* The datagram being built (conn_send.c) as the frame writers see it, and
 * the table of control frames (conn_ctrl.c). Internal to src/transport. */
#ifndef QK_TRANSPORT_CONN_TX_H
#define QK_TRANSPORT_CONN_TX_H

#include "transport/conn/conn.h"

#define QK_TX_MAX_PKTS_PER_DGRAM 3
/* Stream-data pieces a packet may leave in the send buffers (each piece is
 * one contiguous run of a buffer block): with the in-place gaps between
 * them they must fit QK_AEAD_MAX_SEGS segments. */
#define QK_TX_MAX_EXT ((QK_AEAD_MAX_SEGS - 1) / 2)

/* Plaintext the packet does not hold: len bytes at absolute datagram offset
 * `at` are read by the AEAD straight from src (a send buffer), so the
 * stream bytes are copied once (into the ciphertext) instead of twice. */
typedef struct qk_tx_ext {
    size_t at;
    size_t len;
    const uint8_t *src;
} qk_tx_ext;

typedef struct qk_tx_pkt {
    qk_pn_space space;
    qk_pkt_type type;
    size_t start;      /* offset of the packet in the datagram */
    size_t length_off; /* long header: offset of the Length field (absolute) */
    size_t pn_off;     /* absolute */
    size_t pn_len;
    size_t payload; /* absolute offset of the first frame */
    size_t end;     /* absolute end of the frames */
    uint64_t pn;
    bool ack_eliciting, in_flight, has_ack;
    bool is_probe; /* DPLPMTUD probe (RFC 9000 §14.4) */
    size_t n_ext;
    qk_sent_frame frames[QK_RECOVERY_MAX_FRAMES_PER_PKT];
    size_t n_frames;
    qk_tx_ext ext[QK_TX_MAX_EXT];
} qk_tx_pkt;

typedef struct qk_tx_ctx {
    qk_conn *c;
    uint8_t *buf;
    size_t cap; /* bytes we may use in this datagram */
    size_t len; /* bytes used */
    qk_tx_pkt pkts[QK_TX_MAX_PKTS_PER_DGRAM];
    size_t n;
    qk_time now;
    bool cc_ok;       /* congestion window and pacer allow new data */
    bool bypass;      /* cc_ok is false, urgent data may go through the bypass bucket */
    bool urgent_only; /* cc_ok, but the pipe limit holds non-urgent data */
    bool pad;         /* datagram must reach the minimum Initial size */
    bool defer;       /* stream bytes may stay in the send buffer until sealing */
    uint8_t ecn;      /* codepoint the datagram will carry */
} qk_tx_ctx;

/** Encode f into p; false when it did not fit (nothing written). */
bool qk_tx_put_frame(qk_tx_ctx *t, qk_tx_pkt *p, const qk_frame *f);

/** Remember what p carried, for recovery (at most QK_RECOVERY_MAX_FRAMES_PER_PKT). */
void qk_tx_record(qk_tx_pkt *p, const qk_sent_frame *f);

/* ---- control frames (conn_ctrl.c) ----
 *
 * Frames are rebuilt, not replayed: a control frame is a "what to send" state, rebuilt
 * with current values at send time. Each kind has one row in a table: when
 * it is owed (a reason to send a packet), how it is written, and what its
 * acknowledgement or loss does. The writer of a kind writes every instance
 * that is owed and fits. */

/** True when some connection-level control frame is owed (a reason to send). */
bool qk_ctrl_conn_pending(const qk_conn *c);

/** Write the owed connection-level control frames that fit, table order. */
void qk_ctrl_write_conn(qk_tx_ctx *t, qk_tx_pkt *p);

/** Write the owed per-stream control frames that fit (MAX_STREAM_DATA,
 * STREAM_DATA_BLOCKED, RESET_STREAM, STOP_SENDING), stream by stream. */
void qk_ctrl_write_streams(qk_tx_ctx *t, qk_tx_pkt *p);

/** A frame of an acknowledged packet of the given space. */
void qk_ctrl_on_acked(qk_conn *c, qk_pn_space space, const qk_sent_frame *f);

/** A frame of a lost packet of the given space: mark it owed again if its
 * content still matters (RFC 9000 §13.3). */
void qk_ctrl_on_lost(qk_conn *c, qk_pn_space space, const qk_sent_frame *f);

#endif
