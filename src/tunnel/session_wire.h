/* SPDX-License-Identifier: MIT */
/* Inside src/tunnel: the session layer's wire format (docs/tunnel.md
 * "Session layer"): the control stream's messages and the header that
 * opens each flow's stream. Pure encode/decode, no state; the decoders are
 * fuzzed (tests/fuzz/fuzz_tunnel_session.c). */
#ifndef QK_TUNNEL_SESSION_WIRE_H
#define QK_TUNNEL_SESSION_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Stream preambles (the first byte of a client stream). */
#define QK_TSW_CTL_PREAMBLE  0x02u /* the connection's control stream */
#define QK_TSW_FLOW_PREAMBLE 0x03u /* a flow: then a qk_tsw_flow_hdr */

#define QK_TSW_ID_BYTES    8u  /* session id */
#define QK_TSW_TOKEN_BYTES 16u /* session secret: proves a RESUME */

/* Control messages: type (1 byte), body length (1 byte), body. Unknown
 * types are skipped (later versions may add some). */
#define QK_TSW_HELLO   1u /* client: id + token (all zero: a new session) */
#define QK_TSW_WELCOME 2u /* server: status, id, token */
#define QK_TSW_ACK     3u /* both: flow id, offset written to TCP, flags */
#define QK_TSW_MSG_MAX (2u + 255u)

#define QK_TSW_WELCOME_NEW     0u /* a fresh session (the old one is unknown) */
#define QK_TSW_WELCOME_RESUMED 1u /* the session named in HELLO goes on */
#define QK_TSW_ACK_FIN         1u /* ACK flags: the FIN was passed on too */

typedef struct qk_tsw_msg {
    uint8_t type;                      /* QK_TSW_*; other values: skipped */
    uint8_t status;                    /* WELCOME */
    uint8_t id[QK_TSW_ID_BYTES];       /* HELLO, WELCOME */
    uint8_t token[QK_TSW_TOKEN_BYTES]; /* HELLO, WELCOME */
    uint64_t flow_id;                  /* ACK */
    uint64_t offset;                   /* ACK: bytes of the flow written to TCP */
    bool fin;                          /* ACK: and its FIN (shutdown(SHUT_WR)) */
} qk_tsw_msg;

/* Encode m into out (at least QK_TSW_MSG_MAX bytes). Returns the length. */
size_t qk_tsw_msg_encode(const qk_tsw_msg *m, uint8_t *out);

/* Decode one message from in: bytes used (> 0), 0 = incomplete, or -1 = malformed
 * (a known type with the wrong body length, an unknown WELCOME status). */
long qk_tsw_msg_decode(const uint8_t *in, size_t len, qk_tsw_msg *m);

/* The client's flow header, after QK_TSW_FLOW_PREAMBLE:
 * flags (1: bit 0 = resume), flow id (8), recv_off (8), big endian.
 * recv_off: bytes of the server's direction the client has received; the
 * server sends from there. */
#define QK_TSW_FLOW_HDR_BYTES 17u
#define QK_TSW_FLOW_RESUME    1u
typedef struct qk_tsw_flow_hdr {
    bool resume;
    uint64_t flow_id;
    uint64_t recv_off;
} qk_tsw_flow_hdr;

/* The server's reply, the first bytes of its direction: status (1), recv_off (8):
 * bytes of the client's direction it has received; the client sends from there. */
#define QK_TSW_FLOW_REPLY_BYTES 9u
#define QK_TSW_FLOW_OK          0u
#define QK_TSW_FLOW_UNKNOWN     1u /* resume of a flow the server does not have */
typedef struct qk_tsw_flow_reply {
    uint8_t status;
    uint64_t recv_off;
} qk_tsw_flow_reply;

void qk_tsw_flow_hdr_encode(const qk_tsw_flow_hdr *h, uint8_t out[QK_TSW_FLOW_HDR_BYTES]);
/* Returns 0 or -1 (unknown flag bits). */
int qk_tsw_flow_hdr_decode(const uint8_t in[QK_TSW_FLOW_HDR_BYTES], qk_tsw_flow_hdr *h);
void qk_tsw_flow_reply_encode(const qk_tsw_flow_reply *r, uint8_t out[QK_TSW_FLOW_REPLY_BYTES]);
/* Returns 0 or -1 (unknown status). */
int qk_tsw_flow_reply_decode(const uint8_t in[QK_TSW_FLOW_REPLY_BYTES], qk_tsw_flow_reply *r);

/* A flow's replay buffer: the bytes read from TCP that the peer has not
 * acknowledged, [base, base + len), in a ring that grows by doubling up to
 * max_cap (its owner accounts the capacity). */
typedef struct qk_tsw_ring {
    uint8_t *buf;
    size_t cap, head, len;
    uint64_t base; /* flow offset of the oldest byte kept */
} qk_tsw_ring;

/* Contiguous free space at the end (after growing to want_cap if larger
 * than cap: 0 or -1 when out of memory). */
int qk_tsw_ring_grow(qk_tsw_ring *r, size_t want_cap);
/* Where the next bytes read go, and how many fit contiguously. */
uint8_t *qk_tsw_ring_tail(qk_tsw_ring *r, size_t *room);
void qk_tsw_ring_commit(qk_tsw_ring *r, size_t n);
/* The bytes from flow offset off on, contiguously (*n of them; 0 at the end). */
const uint8_t *qk_tsw_ring_at(const qk_tsw_ring *r, uint64_t off, size_t *n);
/* Drop the bytes below flow offset off (acknowledged). Returns -1 when off
 * is past what the ring ever held. */
int qk_tsw_ring_ack(qk_tsw_ring *r, uint64_t off);
void qk_tsw_ring_free(qk_tsw_ring *r);

#endif
