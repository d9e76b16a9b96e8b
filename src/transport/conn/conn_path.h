/* SPDX-License-Identifier: MIT */
/* A connection's paths (RFC 9000 §8.2, §9; conn_path.c): the current one,
 * one being probed or left, and what the datagram being received says about
 * them. Not a public header. */
#ifndef QK_TRANSPORT_CONN_PATH_H
#define QK_TRANSPORT_CONN_PATH_H

#include <quack/quack.h>

#include "transport/path/path.h"

enum { QK_RXPATH_CUR = 0, QK_RXPATH_ALT = 1, QK_RXPATH_NEW = 2 };

/* The connection's part: qk_conn.paths. */
typedef struct qk_conn_paths {
    qk_path cur; /* current path: validation, amplification budget (path.c) */
    qk_path alt; /* a path being probed, or the previous one after a change */
    bool alt_active;
    bool alt_hop;              /* client: alt probes another port of the server (qk_conn_hop) */
    qk_addr dg_local, dg_peer; /* addresses of the datagram qk_conn_send just built */
    /* What the datagram being received says about paths. */
    struct {
        int which;          /* QK_RXPATH_* */
        bool migrate;       /* a non-probing 1-RTT packet with the largest pn */
        bool has_challenge; /* a PATH_CHALLENGE from a new address */
        uint8_t challenge[8];
    } rx;
} qk_conn_paths;

/* Which path a received datagram belongs to; resets c->paths.rx. */
void qk_conn_path_rx_begin(qk_conn *c, const qk_datagram *d);
/* After the datagram's packets were processed: budgets, migration, probes. */
void qk_conn_path_rx_end(qk_conn *c, const qk_datagram *d, qk_time now);
void qk_conn_path_on_challenge(qk_conn *c, const uint8_t data[8]);
void qk_conn_path_on_response(qk_conn *c, const uint8_t data[8], qk_time now);
qk_time qk_conn_path_next_timeout(const qk_conn *c);
void qk_conn_path_on_timeout(qk_conn *c, qk_time now);
/* A new path: congestion controller, RTT and PMTU start over (RFC 9000 §9.4). */
void qk_conn_path_reset_state(qk_conn *c, qk_time now);

#endif
