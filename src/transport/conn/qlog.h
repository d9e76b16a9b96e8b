/* SPDX-License-Identifier: MIT */
/* qlog (qlog.c): one JSON-SEQ file per connection through the caller's
 * writer; every function is a no-op while the connection has none. Not a
 * public header. */
#ifndef QK_TRANSPORT_CONN_QLOG_H
#define QK_TRANSPORT_CONN_QLOG_H

#include <quack/quack.h>
#include <stdio.h>

#include "wire/packet.h"
#include "wire/tparams.h"

/* The connection's part: qk_conn.qlog. */
typedef struct qk_conn_qlog {
    FILE *file;   /* stdio cookie stream over qk_config.qlog_write */
    void *handle; /* what qk_config.qlog_open returned */
    qk_time start;
    qk_time last; /* time of the last qlog record, or of the loss timer that fired:
                   * events without a clock (packet_lost) are stamped with it */
} qk_conn_qlog;

void qk_qlog_open(qk_conn *c, qk_time now);
void qk_qlog_close(qk_conn *c);
void qk_qlog_packet(qk_conn *c, bool sent, qk_pkt_type type, uint64_t pn, size_t len,
                    const uint8_t *payload, size_t payload_len, qk_time now);
void qk_qlog_metrics(qk_conn *c, qk_time now);
void qk_qlog_event(qk_conn *c, const char *name, const char *data_json, qk_time now);
/* transport:parameters_set for the local or the peer's transport parameters. */
void qk_qlog_params(qk_conn *c, bool local, const qk_tparams *tp, qk_time now);
/* recovery:packet_lost, stamped with qlog.last: the time of the ACK or the loss timer
 * that declared it (the timer sets it before it runs). */
void qk_qlog_lost(qk_conn *c, qk_pn_space space, uint64_t pn);
/* connectivity:connection_closed with who closed, the codes and the reason. */
void qk_qlog_closed(qk_conn *c, qk_time now);

#endif
