/* SPDX-License-Identifier: MIT */
/* QUIC transport parameters (RFC 9000 §18.2, RFC 9221 §3,
 * draft-ietf-quic-ack-frequency-12 §3). Decoding copies into the struct (all
 * fields are small and bounded) and never allocates. */
#ifndef QK_WIRE_TPARAMS_H
#define QK_WIRE_TPARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wire/packet.h"

/* Parameter ids. */
enum {
    QK_TP_ORIGINAL_DCID = 0x00,
    QK_TP_MAX_IDLE_TIMEOUT = 0x01,
    QK_TP_STATELESS_RESET_TOKEN = 0x02,
    QK_TP_MAX_UDP_PAYLOAD_SIZE = 0x03,
    QK_TP_INITIAL_MAX_DATA = 0x04,
    QK_TP_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL = 0x05,
    QK_TP_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE = 0x06,
    QK_TP_INITIAL_MAX_STREAM_DATA_UNI = 0x07,
    QK_TP_INITIAL_MAX_STREAMS_BIDI = 0x08,
    QK_TP_INITIAL_MAX_STREAMS_UNI = 0x09,
    QK_TP_ACK_DELAY_EXPONENT = 0x0a,
    QK_TP_MAX_ACK_DELAY = 0x0b,
    QK_TP_DISABLE_ACTIVE_MIGRATION = 0x0c,
    QK_TP_PREFERRED_ADDRESS = 0x0d,
    QK_TP_ACTIVE_CONNECTION_ID_LIMIT = 0x0e,
    QK_TP_INITIAL_SCID = 0x0f,
    QK_TP_RETRY_SCID = 0x10,
    QK_TP_MAX_DATAGRAM_FRAME_SIZE = 0x20, /* RFC 9221 §3 */
};
#define QK_TP_MIN_ACK_DELAY 0xff04de1bull /* ack-frequency-12 §3 */

/* Presence bits (tp.present): bit QK_TPB_x set = parameter sent / received. */
enum {
    QK_TPB_ORIGINAL_DCID = 1u << 0,
    QK_TPB_MAX_IDLE_TIMEOUT = 1u << 1,
    QK_TPB_STATELESS_RESET_TOKEN = 1u << 2,
    QK_TPB_MAX_UDP_PAYLOAD_SIZE = 1u << 3,
    QK_TPB_INITIAL_MAX_DATA = 1u << 4,
    QK_TPB_INITIAL_MAX_STREAM_DATA_BIDI_LOCAL = 1u << 5,
    QK_TPB_INITIAL_MAX_STREAM_DATA_BIDI_REMOTE = 1u << 6,
    QK_TPB_INITIAL_MAX_STREAM_DATA_UNI = 1u << 7,
    QK_TPB_INITIAL_MAX_STREAMS_BIDI = 1u << 8,
    QK_TPB_INITIAL_MAX_STREAMS_UNI = 1u << 9,
    QK_TPB_ACK_DELAY_EXPONENT = 1u << 10,
    QK_TPB_MAX_ACK_DELAY = 1u << 11,
    QK_TPB_DISABLE_ACTIVE_MIGRATION = 1u << 12,
    QK_TPB_PREFERRED_ADDRESS = 1u << 13,
    QK_TPB_ACTIVE_CONNECTION_ID_LIMIT = 1u << 14,
    QK_TPB_INITIAL_SCID = 1u << 15,
    QK_TPB_RETRY_SCID = 1u << 16,
    QK_TPB_MAX_DATAGRAM_FRAME_SIZE = 1u << 17,
    QK_TPB_MIN_ACK_DELAY = 1u << 18,
};

/* Defaults (RFC 9000 §18.2). */
#define QK_TP_DEFAULT_MAX_UDP_PAYLOAD_SIZE 65527
#define QK_TP_DEFAULT_ACK_DELAY_EXPONENT   3
#define QK_TP_DEFAULT_MAX_ACK_DELAY_MS     25
#define QK_TP_DEFAULT_ACTIVE_CID_LIMIT     2
#define QK_TP_MAX_ACK_DELAY_LIMIT_MS       (1u << 14) /* values >= 2^14 are invalid */
#define QK_TP_MAX_ACK_DELAY_EXPONENT       20

typedef struct qk_cid_buf {
    uint8_t len; /**< 0..20 */
    uint8_t id[QK_MAX_CID_LEN];
} qk_cid_buf;

typedef struct qk_preferred_address {
    uint8_t ipv4[4];
    uint16_t ipv4_port;
    uint8_t ipv6[16];
    uint16_t ipv6_port;
    qk_cid_buf cid; /**< 1..20 bytes */
    uint8_t reset_token[QK_RESET_TOKEN_LEN];
} qk_preferred_address;

typedef struct qk_tparams {
    uint32_t present; /**< QK_TPB_* bits: which parameters are encoded / were received */
    qk_cid_buf original_dcid;
    uint64_t max_idle_timeout_ms;
    uint8_t stateless_reset_token[QK_RESET_TOKEN_LEN];
    uint64_t max_udp_payload_size;
    uint64_t initial_max_data;
    uint64_t initial_max_stream_data_bidi_local;
    uint64_t initial_max_stream_data_bidi_remote;
    uint64_t initial_max_stream_data_uni;
    uint64_t initial_max_streams_bidi;
    uint64_t initial_max_streams_uni;
    uint64_t ack_delay_exponent;
    uint64_t max_ack_delay_ms;
    bool disable_active_migration;
    qk_preferred_address preferred_address;
    uint64_t active_connection_id_limit;
    qk_cid_buf initial_scid;
    qk_cid_buf retry_scid;
    uint64_t max_datagram_frame_size; /**< meaningful only when present (RFC 9221) */
    uint64_t min_ack_delay_us;        /**< meaningful only when present */
} qk_tparams;

/** Zero everything, present = 0, and set the RFC defaults of the valued fields. */
void qk_tparams_init(qk_tparams *tp);

/**
 * Encode the parameters whose present bit is set, in id order.
 * sender_is_server: false forbids server-only parameters (original_dcid,
 * stateless_reset_token, preferred_address, retry_scid).
 * Returns bytes written, QK_ERR_BUFFER_TOO_SMALL, or QK_ERR_INVALID_ARG
 * (a present value that decode would reject, server-only parameter from a
 * client).
 */
int qk_tparams_encode(const qk_tparams *tp, bool sender_is_server, uint8_t *out, size_t cap);

/**
 * Decode the peer's transport parameters into *tp (initialised to defaults
 * first). sender_is_server: who sent them. Unknown ids (incl. reserved
 * 31*N+27) are skipped. Returns 0 or QK_ERR_TRANSPORT_PARAMETER for: a
 * truncated or badly sized parameter, a duplicate id, max_udp_payload_size <
 * 1200, ack_delay_exponent > 20, max_ack_delay >= 2^14, active_connection_id_limit
 * < 2, initial_max_streams_* > 2^60, a server-only parameter from a client,
 * a CID over 20 bytes, a zero-length preferred-address CID, or min_ack_delay
 * (µs) > max_ack_delay (ms) * 1000 (RFC 9000 §7.4, §18.2; ack-frequency-12 §3).
 */
int qk_tparams_decode(const uint8_t *buf, size_t len, bool sender_is_server, qk_tparams *tp);

#endif
