/* SPDX-License-Identifier: MIT */
/* Resumption and 0-RTT (RFC 9001 §4.5-4.6, RFC 9000 §7.4.1; session.c).
 * Not a public header. */
#ifndef QK_TRANSPORT_CONN_SESSION_H
#define QK_TRANSPORT_CONN_SESSION_H

#include <quack/quack.h>

#include "crypto/keys.h"
#include "crypto/packet.h"
#include "wire/tparams.h"

/* The connection's part: qk_conn.zrtt. */
typedef struct qk_conn_zrtt {
    qk_pkt_keys early; /* 0-RTT keys: client write / server read */
    bool has_early;
    bool on_remembered;    /* client: sending on the remembered parameters */
    qk_tparams remembered; /* client: the server's parameters from the session */
    bool have_remembered;
    unsigned tickets_seen; /* client: tickets already announced (QK_EV_SESSION_TICKET) */
} qk_conn_zrtt;

/* Client: split session data into the TLS part (*tls, *tls_len) and decode
 * the remembered transport parameters into c->zrtt.remembered. 0 or QK_ERR_CONFIG. */
int qk_session_parse(qk_conn *c, const uint8_t *data, size_t len, const uint8_t **tls,
                     size_t *tls_len);
/* A 0-RTT secret from TLS: install it (client write / server read). */
int qk_session_install_early(qk_conn *c, int is_write, qk_crypto_suite suite, const uint8_t *secret,
                             size_t len);
/* At handshake completion, after the peer's parameters: 0-RTT accepted
 * (check the parameters did not shrink) or rejected (resend in 1-RTT).
 * Returns 0 or a QK_ERR_* transport error. */
int qk_session_on_handshake(qk_conn *c, qk_time now);
/* After each TLS step: a new ticket raises QK_EV_SESSION_TICKET. */
void qk_session_poll_ticket(qk_conn *c);

#endif
