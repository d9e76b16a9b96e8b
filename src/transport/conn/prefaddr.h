/* SPDX-License-Identifier: MIT */
/* preferred_address (RFC 9000 §9.6, §18.2; prefaddr.c). Not a public header. */
#ifndef QK_TRANSPORT_CONN_PREFADDR_H
#define QK_TRANSPORT_CONN_PREFADDR_H

#include <quack/quack.h>

#include "wire/tparams.h"

/* The connection's part: qk_conn.pref. */
typedef struct qk_conn_prefaddr {
    qk_addr addr; /* client: the server's preferred_address we will probe */
    bool pending; /* client: probe it once the handshake is confirmed (§9.6.1) */
} qk_conn_prefaddr;

/* qk_config's preferred addresses are well-formed (families, ports). */
bool qk_conn_prefaddr_config_ok(const qk_config *cfg);
/* Server: put qk_config's preferred address in tp with a new connection ID
 * (sequence number 1, §5.1.1) registered like the others. */
void qk_conn_prefaddr_advertise(qk_conn *c, qk_tparams *tp);
/* Client: the server's preferred_address arrived in c->peer_tp: take its
 * connection ID, pick the address of our family. 0 or a QK_ERR_* transport error. */
int qk_conn_prefaddr_on_tparams(qk_conn *c);
/* Client: once the handshake is confirmed, probe the preferred address. */
void qk_conn_prefaddr_maybe_probe(qk_conn *c, qk_time now);
/* Client: the probe of the preferred address validated (moved) or failed. */
void qk_conn_prefaddr_done(qk_conn *c, bool moved, qk_time now);

#endif
