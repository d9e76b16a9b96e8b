/* SPDX-License-Identifier: MIT */
/* A client's new attempt on the same connection: Version Negotiation,
 * Retry, the address-validation token it echoes, and a received stateless
 * reset (retry.c). Not a public header. */
#ifndef QK_TRANSPORT_CONN_RETRY_H
#define QK_TRANSPORT_CONN_RETRY_H

#include <quack/quack.h>

#include "transport/conn/cid.h"
#include "wire/packet.h"

#define QK_CONN_TOKEN_MAX 256 /* client: Retry / NEW_TOKEN token we echo */

/* The connection's part: qk_conn.restart. */
typedef struct qk_conn_restart {
    qk_cid retry_scid;      /* SCID of the Retry (client: to check; server: tparam) */
    bool retried;           /* a Retry was processed (client) / validated our Retry (server) */
    bool got_packet;        /* client: a packet from the server was processed (VN/Retry ignored) */
    uint32_t offer_version; /* client: version in our long headers until a VN (0 = c->version) */
    bool vn_restarted;      /* client: a VN restarted the attempt (later VNs are ignored) */
    uint8_t token[QK_CONN_TOKEN_MAX]; /* client: echoed in Initial packets */
    size_t token_len;
} qk_conn_restart;

void qk_conn_on_vn(qk_conn *c, const qk_pkt_hdr *h, qk_time now);
void qk_conn_on_retry(qk_conn *c, const uint8_t *pkt, const qk_pkt_hdr *h, qk_time now);
int qk_conn_on_new_token(qk_conn *c, const uint8_t *tok, size_t len, qk_time now);
void qk_conn_on_stateless_reset(qk_conn *c, qk_time now);

#endif
