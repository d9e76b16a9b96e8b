/* SPDX-License-Identifier: MIT */
/* A connection's deadlines (absolute, QK_TIME_INFINITE when off). Not a
 * public header. */
#ifndef QK_TRANSPORT_CONN_TIMERS_H
#define QK_TRANSPORT_CONN_TIMERS_H

#include <quack/quack.h>

/* The connection's part: qk_conn.timers. */
typedef struct qk_conn_timers {
    qk_time idle_timeout_ns;
    qk_time handshake_deadline; /* QK_TIME_INFINITE once the handshake completed */
    qk_time idle_deadline;
    qk_time close_deadline; /* end of closing/draining */
    qk_time last_ack_eliciting_sent;
    qk_time last_rx_ns;    /* last packet from the peer (keep-alive) */
    qk_time keep_alive_ns; /* qk_config.keep_alive_ns, 0 = off */
} qk_conn_timers;

/* The table in timers.c: the earliest armed deadline (0: closed, reap it) /
 * fire every due timer in table order. */
qk_time qk_conn_next_timeout(const qk_conn *c);
void qk_conn_on_timeout(qk_conn *c, qk_time now);
/* RFC 9002 §6.2.1: the PTO with the peer's max_ack_delay (the default before
 * its transport parameters). */
qk_time qk_conn_pto_ns(const qk_conn *c);
/* A packet from the peer: restart the idle timer (RFC 9000 §10.1). */
void qk_conn_touch_idle(qk_conn *c, qk_time now);
/* Lost-feedback detection: an ACK arrived (path/feedback.h). */
void qk_conn_feedback_on_ack(qk_conn *c, qk_time now);
/* Simulator only (src/sim/flow_media.c, key oracle): fn(ctx, now) decides,
 * with a bypass configured, whether feedback counts as late (conn_send.c
 * feedback_late) instead of the ACK silence: an experiment's bound on what
 * any detector could do. NULL fn restores the rule. */
void qk_conn_set_feedback_oracle(qk_conn *c, bool (*fn)(void *ctx, qk_time now), void *ctx);

#endif
