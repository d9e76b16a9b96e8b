/* SPDX-License-Identifier: MIT */
/* Packets and frames in (conn_recv.c). Not a public header. */
#ifndef QK_TRANSPORT_CONN_RECV_H
#define QK_TRANSPORT_CONN_RECV_H

#include <quack/quack.h>

#define QK_CONN_MAX_HELD_1RTT 4 /* server: 1-RTT packets before its 1-RTT keys */

/* A 1-RTT packet that reached the server before it could open it (the
 * client's Finished still on its way): processed once the handshake
 * completes (RFC 9001 §5.7). */
typedef struct qk_held_pkt {
    uint8_t *data; /* owned copy of the packet */
    size_t len;
    qk_addr local, peer;
    uint8_t ecn;
} qk_held_pkt;

/* The connection's part: qk_conn.held. */
typedef struct qk_conn_held {
    qk_held_pkt *pkts; /* QK_CONN_MAX_HELD_1RTT entries once one is held, else NULL */
    size_t n;
} qk_conn_held;

/* Process one datagram addressed to this connection. The buffer is modified. */
void qk_conn_recv(qk_conn *c, qk_datagram *d, qk_time now);
/* Free the 1-RTT packets held for the handshake's end (qk_conn_del). */
void qk_conn_held_free(qk_conn *c);

#endif
