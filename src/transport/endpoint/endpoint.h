/* SPDX-License-Identifier: MIT */
/* The endpoint's side of the services a connection gets at creation
 * (qk_conn_env): endpoint.c implements them, qk_endpoint_conn_env() hands
 * them to each connection. Internal to src/ (and tests). */
#ifndef QK_TRANSPORT_ENDPOINT_H
#define QK_TRANSPORT_ENDPOINT_H

#include "transport/conn/conn.h"

/* The services of ep, as a new connection of ep gets them. */
qk_conn_env qk_endpoint_conn_env(qk_endpoint *ep);

void qk_endpoint_push_event(qk_endpoint *ep, const qk_event *ev);
/* Register / unregister a local CID for demultiplexing. 0 or QK_ERR_NOMEM. */
int qk_endpoint_add_cid(qk_endpoint *ep, const qk_cid *cid, qk_conn *c);
void qk_endpoint_remove_cid(qk_endpoint *ep, const qk_cid *cid);
void qk_endpoint_random(qk_endpoint *ep, uint8_t *buf, size_t len);
qk_flow_budget *qk_endpoint_budget(qk_endpoint *ep);
/* RFC 9000 §10.3.2: reset token of one of our CIDs, HMAC(static key, CID). */
void qk_endpoint_reset_token(qk_endpoint *ep, const qk_cid *cid, uint8_t token[QK_RESET_TOKEN_LEN]);
/* Server: seal a NEW_TOKEN token for peer. Returns its length or a QK_ERR_*. */
int qk_endpoint_mint_new_token(qk_endpoint *ep, const qk_addr *peer, qk_time now, uint8_t *out,
                               size_t cap);
/* Client: remember a NEW_TOKEN token for the server at peer. */
void qk_endpoint_store_token(qk_endpoint *ep, const qk_addr *peer, const uint8_t *tok, size_t len,
                             qk_time now);

/* Test only (bench/incast.sh's bug row, through the simulator's quic flow
 * key ecn_ack_bug): connections ep creates from now on reproduce a receiver
 * bug, an ACK sent on a CE state change cancels the delayed ACK owed for the
 * packet that changed it (qk_ack_policy.ecn_ack_bug). Not public API. */
void qk_endpoint_set_ecn_ack_bug(qk_endpoint *ep, bool on);

/* A caller's qk_config of src_bytes (its sizeof) as the library's: the
 * fields an older caller lacks take their defaults. Returns 0,
 * QK_ERR_INVALID_ARG (NULL, or below the first release's size) or
 * QK_ERR_UNSUPPORTED (a newer caller set a field this library lacks). */
int qk_config_import(qk_config *dst, const qk_config *src, size_t src_bytes);

/* Admission limits in effect (qk_config.max_handshakes, _drop; 0 = derived). */
size_t qk_endpoint_max_handshakes(const qk_config *cfg);
size_t qk_endpoint_max_handshakes_drop(const qk_config *cfg);

#endif
