/* SPDX-License-Identifier: MIT */
/* Flow control applied to one connection (conn_flow.c): receive-window
 * tuning of its streams and its connection window, and the send side's
 * memory accounting. Not a public header. */
#ifndef QK_TRANSPORT_CONN_FLOW_H
#define QK_TRANSPORT_CONN_FLOW_H

#include <quack/quack.h>

#include "transport/streams/stream.h"

/* Auto-tune a stream's window as its MAX_STREAM_DATA is built; keeps the
 * connection window >= 1.5x the stream window (budget permitting). */
void qk_conn_tune_stream_window(qk_conn *c, qk_stream *s, qk_time now);
/* At most once per srtt: shrink unused stream/connection windows, return budget. */
void qk_conn_flow_tick(qk_conn *c, qk_time now);
/* Re-charge s's send-side memory to the connection and the endpoint budget
 * after its send buffer changed (write, send, ack, reset, free). */
void qk_conn_send_account(qk_conn *c, qk_stream *s);
/* Bytes a write on s may take now (buffer, budgets, credit lookahead);
 * *capped (may be NULL): a connection or endpoint limit was the smallest. */
size_t qk_conn_send_room(const qk_conn *c, const qk_stream *s, bool *capped);
/* After a write was capped: WRITABLE for every waiting stream that has room
 * again (credit arrived, acknowledgements, the endpoint budget freed). */
void qk_conn_wake_writers(qk_conn *c);
/* The connection goes away: return everything it charged to the endpoint. */
void qk_conn_send_release(qk_conn *c);

#endif
